//! A 2025 `tasks/result` on a task that has not ended: it counts as the tool's polls,
//! then waits. When the task asks for input, its input requests go out on that request
//! as on the tool call it stands for (tagged with the task), and the request waits,
//! parked as a tool call is, for the answers and the task's end
//! ([`Server::task_answered`]); otherwise the store holds it until the task ends
//! (`waits.rs`). An input round run for it that defers its work, or never answers, is
//! taken back by the task, which shows `working` again.

use serde_json::{Map, Value, json};

use crate::client::RELATED_TASK_KEY;
use crate::jsonrpc::{ErrorObject, RequestId, codes};
use crate::version::Era;

use super::super::deferred::{Deferral, Kind};
use super::super::legacy::PendingCall;
use super::super::{Params, Server, ToolOutcome};
use super::MAX_STORED_TASKS;
use super::methods::not_found;
use super::task::Held;
use super::waits::Waiting;

impl Server {
    /// A 2025 task's input round, run for its `tasks/result` (`request`), deferred its
    /// work: the task takes the round back (its answers and number), shows `working`
    /// and waits for the work as for a first round that deferred, and the
    /// `tasks/result` is held until the task ends or asks again. A client that drops
    /// that wait (cancels the request) leaves the task and its work running.
    pub(in crate::server) fn task_round_deferred(
        &mut self,
        request: RequestId,
        id: &str,
        round: (Map<String, Value>, u32),
        deferral: Deferral,
    ) {
        if self.take_round_back(id, round, None) {
            // Parked under its `tasks/result`, whose session the work goes on in.
            let kind = Kind::Task(id.to_owned());
            if let Err(e) = self.park_deferred(deferral, request.clone(), 0, kind) {
                self.task_work_done(self.now, id, ToolOutcome::Error(e));
            }
        } else {
            deferral.cancel();
        }
        self.tasks.hold(Waiting {
            request,
            task: id.to_owned(),
        });
    }

    /// A 2025 task's input round, run for its `tasks/result` (`request`), never answers:
    /// the task takes the round back, shows `working` until it is cancelled or
    /// expires, and the `tasks/result` is held until then.
    pub(in crate::server) fn task_round_unanswered(
        &mut self,
        request: RequestId,
        id: &str,
        round: (Map<String, Value>, u32),
    ) {
        self.take_round_back(id, round, Some(Held::Never));
        self.tasks.hold(Waiting {
            request,
            task: id.to_owned(),
        });
    }

    /// The running task `id` takes back an input round run for its `tasks/result`: its
    /// answers and number, `working` again, held as `held` says. False when no such task
    /// runs (it ended, or is gone).
    fn take_round_back(
        &mut self,
        id: &str,
        (inputs, round): (Map<String, Value>, u32),
        held: Option<Held>,
    ) -> bool {
        let size = |m: &Map<String, Value>| -> usize {
            (m.iter())
                .map(|(k, v)| k.len() + crate::held::held_bytes(v))
                .sum()
        };
        let now = self.now;
        let Some(seq) = self.tasks.seq_of(id) else {
            return false;
        };
        let taken = self.tasks.update(seq, |task, _| {
            if task.terminal() {
                return false;
            }
            task.client_bytes = (task.client_bytes.saturating_sub(size(&task.inputs)))
                .saturating_add(size(&inputs));
            task.inputs = inputs;
            task.round = round;
            task.status = "working";
            task.held = held;
            task.updated = now;
            true
        });
        taken == Some(true)
    }

    /// Sends a 2025 task's input requests on its `tasks/result` (`request`), as the
    /// tool call it stands for: the request then waits for the end of the task.
    pub(in crate::server) fn ask_for_task(&mut self, request: &RequestId, id: &str) {
        let Some(seq) = self.tasks.seq_of(id) else {
            return;
        };
        let taken = self.tasks.update(seq, |task, _| {
            let asks = std::mem::take(&mut task.legacy_asks);
            let inputs = (task.inputs.clone(), task.round);
            let call = PendingCall::for_task(
                request.clone(),
                task.target.clone(),
                inputs,
                task.id.clone(),
            );
            (call, asks)
        });
        if let Some((call, asks)) = taken {
            self.legacy_act(call, ToolOutcome::NeedInput(asks));
        }
    }

    /// A 2025 `tasks/result` (request `id`) for a task that has not ended: it counts as
    /// the polls the tool asked for; then, when the task needs input, the task's input
    /// requests go out (tagged with the task) and the request waits for the end of the
    /// task, parked as a tool call is; otherwise it is held until the task ends
    /// ([`Server::settle_results`]). `false` (nothing done) for a task that ended or is
    /// not found: the caller answers at once.
    pub(in crate::server) fn park_task_result(&mut self, id: &RequestId, params: &Params) -> bool {
        let Ok(at) = self.task_index(params, Era::Legacy) else {
            return false;
        };
        let now = self.now;
        let running = self.tasks.update(at, |task, _| {
            if task.terminal() {
                return None;
            }
            task.polls_left = 0;
            task.refresh(now);
            (!task.terminal()).then(|| (task.id.clone(), task.asks_legacy_input()))
        });
        let Some(Some((task, asks))) = running else {
            return false;
        };
        if asks {
            self.ask_for_task(id, &task);
            return true;
        }
        if self.tasks.waiting() >= MAX_STORED_TASKS {
            let e = ErrorObject::new(
                codes::INTERNAL_ERROR,
                "Too many tasks/result requests are waiting; try again later",
            );
            self.send_error(Some(id), &e);
            return true;
        }
        self.tasks.hold(Waiting {
            request: id.clone(),
            task,
        });
        true
    }

    /// The end of the 2025 task `id` whose `tasks/result` waited for input: the task
    /// ends with `reply` (unless cancelled meanwhile), and the `tasks/result` gets it,
    /// tagged with the task.
    pub(in crate::server) fn task_answered(
        &mut self,
        id: &str,
        reply: Result<Value, ErrorObject>,
    ) -> Result<Value, ErrorObject> {
        let now = self.now;
        let Some(seq) = self.tasks.seq_of(id) else {
            return Err(not_found(id));
        };
        let cancelled = self.tasks.update(seq, |task, _| {
            if task.status == "cancelled" {
                return true;
            }
            task.finish(reply.clone(), now);
            task.delivered = true;
            false
        });
        if cancelled == Some(true) {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!("Task {id} was cancelled"),
            ));
        }
        let mut reply = reply?;
        if let Some(o) = reply.as_object_mut() {
            o.insert("_meta".into(), json!({ RELATED_TASK_KEY: {"taskId": id} }));
        }
        Ok(reply)
    }
}
