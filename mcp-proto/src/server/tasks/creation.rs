//! How a call becomes a task: which tools run as tasks ([`TaskMode`]), the room a new
//! task needs (checked before a handler that asks for input first runs its rounds), and
//! the task's creation, which runs the handler (or takes the outcome of the round that
//! led to it) and holds the outcome until due. A handler that defers its work leaves the
//! task `working` until the work completes ([`Server::task_work_done`]).

use serde_json::{Map, Value};

use crate::Instant;
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::version::{Era, ProtocolVersion};

use super::super::calls::{self, Target};
use super::super::deferred::{Deferral, Kind};
use super::super::{Server, ToolOutcome};
use super::ServerTask;
use super::room::outcome_room;

/// How a `tools/call` to a tool relates to tasks.
#[derive(Debug, Clone, Copy)]
pub(in crate::server) struct TaskMode {
    pub required: bool,
    pub input_before_task: bool,
}

impl Server {
    /// Whether any tool can run as a task.
    pub(in crate::server) fn offers_tasks(&self) -> bool {
        self.config.tools.iter().any(|t| t.task_polls.is_some())
    }

    /// Whether tool `name` runs as a task.
    pub(in crate::server) fn is_task_tool(&self, name: &str) -> bool {
        self.task_mode(name).is_some()
    }

    /// Whether tool `name` runs only as a task.
    pub(in crate::server) fn requires_task(&self, name: &str) -> bool {
        self.task_mode(name).is_some_and(|m| m.required)
    }

    /// How tool `name` runs as a task; `None` when it does not.
    pub(in crate::server) fn task_mode(&self, name: &str) -> Option<TaskMode> {
        (self.config.tools.iter())
            .find(|t| t.name == name && t.task_polls.is_some())
            .map(|t| TaskMode {
                required: t.task_required,
                input_before_task: t.input_before_task,
            })
    }

    /// Makes room for a task of the current requestor in `era` for a call to `target`
    /// with client capabilities `caps`, as `start_task` would (dropping ended
    /// tasks whose end reached their owners): the error it would be refused with, when
    /// none can be made. For a call whose handler runs before its task is made (input
    /// first), so that the round leading to a task that cannot be made does not run.
    /// The answers of the call's input rounds are not counted: `start_task` counts them.
    pub(in crate::server) fn room_for_task(
        &mut self,
        target: &Target,
        era: Era,
        caps: &Value,
    ) -> Result<(), ErrorObject> {
        // Capabilities a task cannot keep are refused by `start_task`, with its message.
        let size = super::super::legacy::capabilities_kept(caps, "a task").unwrap_or(0);
        let client_bytes = size + crate::held::held_bytes(&target.arguments);
        let owner = self.task_owner(era);
        self.tasks.refresh_all(self.now);
        self.tasks
            .make_room(&owner, client_bytes, &self.config.limits)
    }

    /// Creates a task for `target` and runs its handler; the task's record.
    pub(in crate::server) fn create_task(
        &mut self,
        target: Target,
        era: Era,
        caps: &Value,
    ) -> Result<Value, ErrorObject> {
        self.start_task(target, era, caps, None, None)
    }

    /// Creates a task for `target` holding `first` (the outcome of the handler's round
    /// `round`, with the answers `inputs`), or running the handler now when `first` is
    /// `None`; the task's record.
    pub(in crate::server) fn start_task(
        &mut self,
        target: Target,
        era: Era,
        caps: &Value,
        first: Option<(ToolOutcome, Map<String, Value>, u32)>,
        first_deferral: Option<Deferral>,
    ) -> Result<Value, ErrorObject> {
        // A task refused tells the work its tool deferred before it could be made.
        let refused = |e: ErrorObject| {
            if let Some(deferral) = &first_deferral {
                deferral.cancel();
            }
            e
        };
        let now = self.now;
        // Room first: a task refused without a first round never runs its handler.
        // It keeps the client's capabilities for its later rounds: no more of them than
        // a legacy session keeps.
        let size = super::super::legacy::capabilities_kept(caps, "a task").map_err(refused)?;
        let client_bytes = size + crate::held::held_bytes(&target.arguments);
        let client_bytes = client_bytes
            + first.as_ref().map_or(0, |(_, inputs, _)| {
                (inputs.iter())
                    .map(|(k, v)| k.len() + crate::held::held_bytes(v))
                    .sum::<usize>()
            });
        let owner = self.task_owner(era);
        // Outcomes due by now show, so that tasks that ended can make room.
        self.tasks.refresh_all(now);
        self.tasks
            .make_room(&owner, client_bytes, &self.config.limits)
            .map_err(refused)?;
        let polls = (self.config.tools.iter())
            .find(|t| t.name == target.name)
            .and_then(|t| t.task_polls)
            .unwrap_or(0);
        let version = match era {
            Era::Legacy => self.session.as_ref().map(|s| s.version),
            Era::Modern => self.config.versions.newest(Era::Modern),
        }
        .unwrap_or(ProtocolVersion::V2026_07_28);
        let ((outcome, inputs, round), deferral) = match first {
            Some(first) => (first, first_deferral),
            None => {
                let work = self.new_work();
                let (outcome, deferral) = calls::invoke(
                    &mut self.config.tools,
                    &target,
                    &Map::new(),
                    (era, 0),
                    caps,
                    (None, &self.deferred_queue, work),
                );
                ((outcome, Map::new(), 0), deferral)
            }
        };
        let store = &mut self.tasks;
        let (seq, id) = store.mint_id();
        let mut task = ServerTask {
            id,
            seq,
            owner,
            era,
            status: "working",
            created: now,
            updated: now,
            polls_left: polls,
            due: now,
            held: None,
            outcome: None,
            input_requests: Map::new(),
            legacy_asks: Vec::new(),
            target,
            caps: caps.clone(),
            version,
            inputs,
            round,
            announced: ("working", 0),
            client_bytes,
            outcome_bytes: 0,
            waits: 0,
            delivered: false,
            parked_elsewhere: false,
        };
        let limits = &self.config.limits;
        let room = outcome_room(
            limits,
            store.held_bytes() + client_bytes,
            store.principal_bytes(task.owner.principal.as_deref()) + client_bytes,
        );
        task.take(outcome, now, limits, room);
        task.announced = (task.status, task.round);
        let record = task.record(store);
        let id = task.id.clone();
        store.insert(task);
        if let Some(deferral) = deferral {
            // Its work goes on elsewhere: the task shows `working` until it completes
            // (the bytes it keeps count against the task bounds already).
            let request = RequestId::String(id.clone());
            if let Err(e) = self.park_deferred(deferral, request, 0, Kind::Task(id.clone())) {
                self.task_work_done(now, &id, ToolOutcome::Error(e));
            }
        }
        Ok(record)
    }

    /// The deferred work of task `id` completed with `outcome`: held until due (and
    /// shown) as a handler's outcome is. A task that ended meanwhile drops it.
    pub(in crate::server) fn task_work_done(
        &mut self,
        now: Instant,
        id: &str,
        outcome: ToolOutcome,
    ) {
        let limits = &self.config.limits;
        let store = &mut self.tasks;
        let Some(seq) = store.seq_of(id) else {
            return;
        };
        store.update(seq, |task, store| {
            if task.terminal() {
                return;
            }
            // The task is out of the store meanwhile: its bytes are added back.
            let held = store.held_bytes() + task.kept_bytes();
            let theirs = store.principal_bytes(task.owner.principal.as_deref()) + task.kept_bytes();
            let room = outcome_room(
                limits,
                held - task.outcome_bytes,
                theirs - task.outcome_bytes,
            );
            task.updated = now;
            task.take(outcome, now, limits, room);
        });
    }
}
