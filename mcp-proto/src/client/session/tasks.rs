//! The task behind a call: both task models, driven from one place.
//!
//! # Theory of operation
//!
//! A call becomes task-backed when its `tools/call` is answered with a task: a
//! 2025-11-25 `CreateTaskResult` (`{"task": …}`) to a request that carried
//! `params.task`, or a 2026-07-28 `{"resultType": "task", …}` to a request that declared
//! the `io.modelcontextprotocol/tasks` extension. From then on the call's one request in
//! flight is a task request (`tasks/get`, `tasks/result`, `tasks/update`), written under
//! the call with a fresh JSON-RPC id, so everything that already holds for calls holds
//! for it: one request at a time, its own timeout, `by_rpc` routing, HTTP failures
//! failing the call, exactly one [`Event::CallCompleted`] at the end.
//!
//! Between requests the call's deadline is the next poll: the server's poll interval
//! (never under [`MIN_POLL_INTERVAL`]), or without one [`DEFAULT_POLL_INTERVAL`]
//! doubling up to [`MAX_DEFAULT_POLL_INTERVAL`] while nothing changes. After each answer
//! [`Session::task_next`] decides what comes next, in this order: answers waiting to be
//! sent (2026 `tasks/update`), the final payload (2025: `tasks/result` once the task is
//! terminal or asks for input, since that open request is where the server sends its
//! `elicitation/create`; 2026: a `tasks/get` when the payload is not known yet), the end
//! (a terminal status completes the call), or the next poll.
//!
//! 2026 input requests of a task are presented once per key (the keys shown are
//! remembered, so a stale snapshot after a `tasks/update` does not prompt again), vetted
//! as strictly as those of an `input_required` round, and answered with `tasks/update`
//! carrying only the keys just answered. A refused answer cannot be told to the server,
//! so the task is cancelled and the call fails with [`CallError::InputRefused`].
//!
//! The first terminal status seen is final: the call completes then. Cancelling the
//! call sends `tasks/cancel` (never `notifications/cancelled`, which the tasks protocol
//! forbids for tasks; nothing to a 2025-11-25 server that did not declare
//! `tasks.cancel`) and completes it at once with [`CallError::Cancelled`]; such
//! detached requests are remembered only to route their HTTP exchange and to drop their
//! answer.

use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::request::{TASKS_CANCEL, TASKS_GET, TASKS_RESULT, TASKS_UPDATE};
use super::{
    CallError, CallId, CallOutput, Event, InputId, OutKind, PeerError, PendingInput, Session,
    remember,
};
use crate::Instant;
use crate::client::task::{
    DEFAULT_POLL_INTERVAL, MAX_DEFAULT_POLL_INTERVAL, MAX_POLL_INTERVAL, MIN_POLL_INTERVAL,
    RecordMembers, Task, TaskProblem, TaskStatus,
};
use crate::jsonrpc::{self, ErrorObject, RequestId};
use crate::version::Era;

/// `tasks/get` polls in a row that may fail below JSON-RPC before the call fails.
pub(crate) const MAX_FAILED_POLLS: u32 = 5;

/// 2025-11-25: a tool's `execution.taskSupport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolTasks {
    Forbidden,
    Optional,
    Required,
}

impl ToolTasks {
    /// The value listed (absent or unknown: `forbidden`).
    pub(super) fn of(listed: Option<&str>) -> ToolTasks {
        match listed {
            Some("optional") => ToolTasks::Optional,
            Some("required") => ToolTasks::Required,
            _ => ToolTasks::Forbidden,
        }
    }
}

/// The task request a task-backed call has in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sub {
    Get,
    Result,
    Update,
}

impl Sub {
    fn method(self) -> &'static str {
        match self {
            Sub::Get => TASKS_GET,
            Sub::Result => TASKS_RESULT,
            Sub::Update => TASKS_UPDATE,
        }
    }
}

/// What a call knows about the task behind it.
#[derive(Debug)]
pub(crate) struct TaskTrack {
    pub(super) task: Task,
    era: Era,
    /// The task request in flight and its params (for the HTTP headers).
    pub(super) wire: Option<(Sub, Map<String, Value>)>,
    polls: u32,
    /// The wait the client chose when the server names none.
    backoff: Duration,
    /// 2026: the input-request keys presented so far.
    presented: Vec<String>,
    /// 2026: snapshots that brought input requests not presented before (rounds), at
    /// most `Limits::max_input_rounds`, as for a call's own `input_required` rounds.
    input_rounds: u32,
    /// 2026: the keys presented and not yet answered, with their input ids.
    pub(super) open: Vec<(String, InputId)>,
    /// 2026: answers not yet sent.
    answers: Vec<(String, Value)>,
    /// `tasks/get` polls in a row that failed below JSON-RPC (HTTP).
    failed_polls: u32,
    /// When the client learned of the task: its `ttl` counts from here.
    since: Instant,
    /// Views that came after a terminal one and said otherwise (ignored: the first
    /// terminal status is final); the payload is then fetched after a wait, not at once.
    stale_views: u32,
}

impl TaskTrack {
    /// The method and params of the task request in flight.
    pub(crate) fn wire(&self) -> Option<(&str, &Map<String, Value>)> {
        self.wire.as_ref().map(|(sub, p)| (sub.method(), p))
    }
}

fn task_params(task_id: &str) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("taskId".into(), Value::String(task_id.to_owned()));
    params
}

/// The `taskId` of a `_meta["io.modelcontextprotocol/related-task"]` in `params`. Only
/// that path is read: the rest is skipped, not built (the params of a server's request
/// may be megabytes of messages).
pub(super) fn related_task(params: Option<&RawValue>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<Meta<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "io.modelcontextprotocol/related-task", borrow)]
        related: Option<Related<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Related<'a> {
        #[serde(rename = "taskId", borrow)]
        task_id: Option<std::borrow::Cow<'a, str>>,
    }
    let p: Params<'_> = serde_json::from_str(params?.get()).ok()?;
    Some(p.meta?.related?.task_id?.into_owned())
}

/// A task record (a `tasks/get` result, a status notification's params): the members the
/// session reads, as values, but `result` verbatim, as the call's result is passed on
/// (never rebuilt from a value, which would reorder its keys; and never read into values,
/// which cost many times its size). Members nobody reads are not kept.
fn task_record(text: &str) -> Result<(Map<String, Value>, Option<&RawValue>), String> {
    let members = RecordMembers::read(text).map_err(|e| e.to_string())?;
    let object = members.object().map_err(|e| e.to_string())?;
    Ok((object, members.result))
}

impl Session {
    /// Whether the task extension is declared on `request` (2026): asked for, a
    /// `tasks/*` request, a listen for task ids, or declared by the whole config.
    pub(super) fn declares_tasks(&self, request: &super::CallRequest) -> bool {
        let listens_to_tasks = request.method == super::request::LISTEN
            && request
                .params
                .get("notifications")
                .and_then(|n| n.get("taskIds"))
                .and_then(Value::as_array)
                .is_some_and(|ids| !ids.is_empty());
        request.task.is_some()
            || request.method.starts_with("tasks/")
            || listens_to_tasks
            || self.config.capabilities.declares_tasks()
    }

    /// 2025-11-25: whether `request` goes out task-augmented (`params.task`): a
    /// `tools/call` to a server that declared `tasks.requests.tools.call`, for a tool the
    /// latest `tools/list` marked `required`, or that the caller asked to run as a task
    /// ([`CallRequest::as_task`](crate::client::CallRequest::as_task)) unless that listing
    /// forbade it (an absent `taskSupport` is `forbidden`).
    pub(super) fn augments(&self, request: &super::CallRequest) -> bool {
        if self.era() != Some(Era::Legacy)
            || request.method != "tools/call"
            || !self.server_takes_tool_tasks()
        {
            return false;
        }
        let listed = request
            .params
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| self.task_support.get(name));
        match listed {
            Some(ToolTasks::Required) => true,
            Some(ToolTasks::Forbidden) => false,
            Some(ToolTasks::Optional) | None => request.task.is_some(),
        }
    }

    /// 2025-11-25: whether the server declared `tasks.cancel` (it serves `tasks/cancel`).
    fn server_cancels_tasks(&self) -> bool {
        (self.server.as_ref())
            .and_then(|s| s.capabilities.get("tasks")?.get("cancel"))
            .is_some()
    }

    /// 2025-11-25: whether the server accepts task-augmented `tools/call`. Never on a
    /// 2025-06-18 session, whose version has no tasks even when the server declares them.
    pub(super) fn server_takes_tool_tasks(&self) -> bool {
        if !self.since_2025_11_25() {
            return false;
        }
        self.server.as_ref().is_some_and(|s| {
            // Member by member: `Value::pointer` would allocate for each token.
            (s.capabilities.get("tasks"))
                .and_then(|t| t.get("requests")?.get("tools")?.get("call"))
                .is_some()
        })
    }

    /// A `tools/call` was answered with a task: the call follows it from now on.
    pub(super) fn task_created(&mut self, now: Instant, id: CallId, raw: &RawValue) {
        let Some(era) = self.era() else { return };
        let limit = self.config.limits.max_task_id_bytes;
        let task = match Task::from_result(raw, era, limit) {
            Ok(t) => t,
            Err(p) => {
                // The server made a task that cannot be followed; when its id can be
                // told, it is cancelled rather than left to run (as for a bad poll).
                if let Some(task_id) = Task::id_of_result(raw, era, limit) {
                    self.send_task_cancel(&task_id);
                }
                return self.complete(id, Err(CallError::Task(p)));
            }
        };
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        call.task = Some(Box::new(TaskTrack {
            task: task.clone(),
            era,
            wire: None,
            polls: 0,
            backoff: DEFAULT_POLL_INTERVAL,
            presented: Vec::new(),
            input_rounds: 0,
            open: Vec::new(),
            answers: Vec::new(),
            failed_polls: 0,
            since: now,
            stale_views: 0,
        }));
        // The progress of a 2026 task ends with its creation; a 2025 token stays valid.
        if era == Era::Modern {
            call.progress_token = None;
        }
        self.events.push_back(Event::TaskCreated { call: id, task });
        // A terminal or input_required seed carries no payload (2026): fetch it now.
        let fetch = era == Era::Modern
            && self
                .calls
                .get(&id)
                .and_then(|c| c.task.as_ref())
                .is_some_and(|t| t.task.status != TaskStatus::Working);
        if fetch {
            self.send_task_request(now, id, Sub::Get);
        } else {
            self.task_next(now, id);
        }
    }

    /// The answer to the task request of call `id`.
    pub(super) fn task_response(&mut self, now: Instant, id: CallId, raw: Box<RawValue>) {
        let Some(track) = self.calls.get_mut(&id).and_then(|c| c.task.as_mut()) else {
            return;
        };
        let Some((sub, _)) = track.wire.take() else {
            return;
        };
        match (sub, track.era) {
            (Sub::Result, _) => {
                // 2025-11-25: exactly what the tools/call would have returned.
                let rounds = self.calls.get(&id).map_or(0, |c| c.rounds);
                self.complete(
                    id,
                    Ok(CallOutput {
                        result: raw,
                        items: Vec::new(),
                        pages: 1,
                        rounds,
                    }),
                );
            }
            (Sub::Update, _) => self.task_next(now, id),
            (Sub::Get, era) => {
                track.polls += 1;
                track.failed_polls = 0;
                let polls = track.polls;
                let limit = self.config.limits.max_task_polls;
                let (object, result) = match task_record(raw.get()) {
                    Ok(parts) => parts,
                    Err(e) => {
                        let p = TaskProblem::Malformed(format!("tasks/get result: {e}"));
                        return self.task_fail(id, p);
                    }
                };
                if era == Era::Modern {
                    // `"task"` is the spec's erratum (section 7.1): read as `"complete"`.
                    match object.get("resultType").and_then(Value::as_str) {
                        None | Some("complete" | "task") => {}
                        Some(other) => {
                            let p = TaskProblem::Malformed(format!(
                                "tasks/get resultType {:?}",
                                super::super::event::clipped(other)
                            ));
                            return self.task_fail(id, p);
                        }
                    }
                }
                if !self.task_view(id, &object, result) {
                    return;
                }
                if polls >= limit && self.calls.contains_key(&id) {
                    return self.task_fail(id, TaskProblem::TooManyPolls(limit));
                }
                self.task_next(now, id);
            }
        }
    }

    /// Applies a task record (a poll, or a status notification) to the call `id`.
    /// False when the call is over (completed here or before).
    /// `result` is the record's `result` member, verbatim (kept out of `object`).
    pub(super) fn task_view(
        &mut self,
        id: CallId,
        object: &Map<String, Value>,
        result: Option<&RawValue>,
    ) -> bool {
        let limit = self.config.limits.max_task_id_bytes;
        let Some(track) = self.calls.get(&id).and_then(|c| c.task.as_ref()) else {
            return false;
        };
        let era = track.era;
        let task = match Task::from_object(object, era, limit) {
            Ok(t) => t,
            Err(p) => {
                self.task_fail(id, p);
                return false;
            }
        };
        if task.task_id != track.task.task_id {
            let p = TaskProblem::WrongTask {
                expected: track.task.task_id.clone(),
                got: task.task_id,
            };
            self.task_fail(id, p);
            return false;
        }
        let known = track.task.status;
        if known.is_terminal() && task.status != known {
            if task.status.is_terminal() {
                // Two different ends: which one the task had cannot be known.
                let p = TaskProblem::Malformed(format!(
                    "the task was {} and is now said to be {}",
                    known.as_str(),
                    task.status.as_str()
                ));
                self.complete(id, Err(CallError::Task(p)));
                return false;
            }
            // A view older than the end already seen (a poll answered before a status
            // notification it crossed): the first terminal status is final.
            if let Some(track) = self.calls.get_mut(&id).and_then(|c| c.task.as_mut()) {
                track.stale_views += 1;
                track.backoff = (track.backoff * 2).min(MAX_DEFAULT_POLL_INTERVAL);
            }
            return true;
        }
        let changed = !task.same_view(&track.task);
        if let Some(track) = self.calls.get_mut(&id).and_then(|c| c.task.as_mut()) {
            if changed {
                track.backoff = DEFAULT_POLL_INTERVAL;
            } else {
                track.backoff = (track.backoff * 2).min(MAX_DEFAULT_POLL_INTERVAL);
            }
            track.task = task.clone();
        }
        if changed {
            self.events.push_back(Event::TaskStatus {
                call: Some(id),
                task: task.clone(),
            });
        }
        let task_id = task.task_id.clone();
        match (task.status, era) {
            (TaskStatus::Cancelled, _) => {
                self.complete(id, Err(CallError::TaskCancelled { task_id }));
                false
            }
            (TaskStatus::Completed, Era::Modern) => {
                let result = result.filter(|r| r.get().starts_with('{'));
                let Some(result) = result else {
                    let p = TaskProblem::MissingPayload {
                        status: task.status,
                        member: "result",
                    };
                    self.complete(id, Err(CallError::Task(p)));
                    return false;
                };
                let rounds = self.calls.get(&id).map_or(0, |c| c.rounds);
                self.complete(
                    id,
                    Ok(CallOutput {
                        result: result.to_owned(),
                        items: Vec::new(),
                        pages: 1,
                        rounds,
                    }),
                );
                false
            }
            (TaskStatus::Failed, Era::Modern) => {
                let error = object
                    .get("error")
                    .and_then(|e| serde_json::from_value::<ErrorObject>(e.clone()).ok());
                let outcome = match error {
                    Some(e) => CallError::Server(e),
                    None => CallError::Task(TaskProblem::MissingPayload {
                        status: task.status,
                        member: "error",
                    }),
                };
                self.complete(id, Err(outcome));
                false
            }
            (TaskStatus::InputRequired, Era::Modern) => {
                // Without inputRequests the snapshot is read as `working` (lenient).
                if let Some(Value::Object(requests)) = object.get("inputRequests") {
                    return self.task_inputs(id, requests);
                }
                true
            }
            _ => true,
        }
    }

    /// 2026: presents the input requests of a snapshot that were not presented before.
    /// False when the call is over.
    fn task_inputs(&mut self, id: CallId, requests: &Map<String, Value>) -> bool {
        let limits = &self.config.limits;
        let (per_round, max_rounds, max_total, max_bytes) = (
            limits.max_inputs_per_round,
            limits.max_input_rounds,
            limits.max_inputs_per_round * limits.max_input_rounds as usize,
            limits.max_input_bytes_per_call,
        );
        let Some(call) = self.calls.get(&id) else {
            return false;
        };
        let Some(track) = call.task.as_ref() else {
            return false;
        };
        if requests.len() > per_round {
            let msg = format!("{} input requests in one task snapshot", requests.len());
            self.task_cancel_and_fail(id, CallError::InvalidInputRequest(msg));
            return false;
        }
        if requests.keys().all(|k| track.presented.contains(k)) {
            return true;
        }
        // A round too many is refused before anything of it is copied or measured.
        if track.input_rounds >= max_rounds {
            self.task_cancel_and_fail(id, CallError::TooManyRounds(max_rounds));
            return false;
        }
        let fresh: Vec<(String, Value)> = requests
            .iter()
            .filter(|(k, _)| !track.presented.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let bytes = call.input_bytes
            + fresh
                .iter()
                .map(|(k, v)| k.len() + v.to_string().len())
                .sum::<usize>();
        if track.presented.len() + fresh.len() > max_total || bytes > max_bytes {
            let msg = "the task asked for more input than the limits allow".to_owned();
            self.task_cancel_and_fail(id, CallError::InvalidInputRequest(msg));
            return false;
        }
        let mut asks = Vec::new();
        let mut answered = Vec::new();
        for (key, value) in fresh {
            match self.embedded_input(value) {
                Ok(super::inbound::Vetted::Ask(req, check)) => asks.push((key, req, check)),
                Ok(super::inbound::Vetted::Answered(v)) => answered.push((key, v)),
                Err(r) if r.declinable => {
                    self.peer_error(PeerError::RequestRefused {
                        method: "elicitation/create".to_owned(),
                        reason: format!("declined without asking: {}", r.error.message),
                    });
                    answered.push((key, super::inbound::decline_value()));
                }
                Err(r) => {
                    self.task_cancel_and_fail(id, CallError::InvalidInputRequest(r.error.message));
                    return false;
                }
            }
        }
        let ids: Vec<InputId> = asks.iter().map(|_| self.alloc_input()).collect();
        let Some(call) = self.calls.get_mut(&id) else {
            return false;
        };
        call.input_bytes = bytes;
        let Some(track) = call.task.as_mut() else {
            return false;
        };
        track.input_rounds += 1;
        for (key, _) in &answered {
            track.presented.push(key.clone());
        }
        track.answers.extend(answered);
        for ((key, request, check), input) in asks.into_iter().zip(ids) {
            track.presented.push(key.clone());
            track.open.push((key.clone(), input));
            self.inputs
                .insert(input, PendingInput::Task { call: id, check });
            self.events.push_back(Event::InputRequested {
                input,
                call: Some(id),
                request,
            });
        }
        true
    }

    /// 2026: the user answered the task input `input` of call `id`.
    pub(super) fn answer_task_input(
        &mut self,
        now: Instant,
        id: CallId,
        input: InputId,
        answer: super::InputAnswer,
    ) {
        let value = match answer {
            super::InputAnswer::Result(v) => v,
            super::InputAnswer::Error(e) => {
                // A task input cannot be refused with an error: cancel the task.
                return self.task_cancel_and_fail(id, CallError::InputRefused(e));
            }
        };
        let Some(track) = self.calls.get_mut(&id).and_then(|c| c.task.as_mut()) else {
            return;
        };
        if let Some(at) = track.open.iter().position(|(_, i)| *i == input) {
            let (key, _) = track.open.remove(at);
            track.answers.push((key, value));
        }
        let idle = self.calls.get(&id).is_some_and(|c| c.rpc_id.is_none());
        if idle {
            self.task_next(now, id);
        }
    }

    /// The one place that decides what a task-backed call with nothing in flight does
    /// next (see the module docs).
    pub(super) fn task_next(&mut self, now: Instant, id: CallId) {
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        if call.rpc_id.is_some() {
            return;
        }
        let Some(track) = call.task.as_mut() else {
            return;
        };
        if !track.answers.is_empty() {
            return self.send_task_request(now, id, Sub::Update);
        }
        let status = track.task.status;
        match (status, track.era) {
            (TaskStatus::Cancelled, _) => {
                let task_id = track.task.task_id.clone();
                self.complete(id, Err(CallError::TaskCancelled { task_id }));
            }
            (
                TaskStatus::Completed | TaskStatus::Failed | TaskStatus::InputRequired,
                Era::Legacy,
            ) => {
                self.send_task_request(now, id, Sub::Result);
            }
            (TaskStatus::Completed | TaskStatus::Failed, Era::Modern) if track.stale_views == 0 => {
                // Terminal without its payload in hand: fetch it.
                self.send_task_request(now, id, Sub::Get);
            }
            (TaskStatus::Completed | TaskStatus::Failed, Era::Modern) => {
                // Its payload was asked for and a stale view came instead: again, after
                // a wait (the poll timer fetches it), within the call's poll bound.
                let backoff = track.backoff;
                call.arm(now, backoff);
            }
            _ => {
                let mut wait = track
                    .task
                    .poll_interval
                    .unwrap_or(track.backoff)
                    .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL);
                if let Some(ttl) = track.task.ttl {
                    let left = ttl.saturating_sub(now.saturating_duration_since(track.since));
                    if left.is_zero() {
                        // Past its lifetime and still not over: give up (tasks.md 4.4 MAY).
                        return self.task_fail(id, TaskProblem::Expired(ttl));
                    }
                    // The last look is when the lifetime ends, however long the server
                    // asked the client to wait.
                    wait = wait.min(left);
                }
                call.arm(now, wait);
            }
        }
    }

    /// Over HTTP, the `tasks/get` `rpc_id` of call `id` got no answer (a network error
    /// or a 5xx): a poll is a pure read, so it is tried again after a wait that doubles
    /// from [`DEFAULT_POLL_INTERVAL`] up to [`MAX_DEFAULT_POLL_INTERVAL`], at most
    /// [`MAX_FAILED_POLLS`] times in a row. False when the call should fail instead.
    pub(super) fn retry_task_poll(&mut self, now: Instant, id: CallId, rpc_id: i64) -> bool {
        let Some(call) = self.calls.get_mut(&id) else {
            return false;
        };
        let Some(track) = call.task.as_mut() else {
            return false;
        };
        if !matches!(track.wire, Some((Sub::Get, _))) || track.failed_polls >= MAX_FAILED_POLLS {
            return false;
        }
        let wait = DEFAULT_POLL_INTERVAL
            .saturating_mul(1 << track.failed_polls.min(16))
            .min(MAX_DEFAULT_POLL_INTERVAL);
        track.failed_polls += 1;
        track.wire = None;
        call.rpc_id = None;
        call.arm(now, wait);
        remember(&mut self.ignored_ids, rpc_id);
        true
    }

    /// An error answered the task request of call `id`: a 2025 `tasks/result` error is
    /// the task's own (it failed), and a `-32602` to a poll means the task is unknown or
    /// gone. Either way the task no longer runs, so no `tasks/cancel` follows.
    pub(super) fn task_error_answer(&mut self, id: CallId, error: &ErrorObject) {
        let Some(track) = self.calls.get_mut(&id).and_then(|c| c.task.as_mut()) else {
            return;
        };
        let over = match track.wire.take() {
            Some((Sub::Result, _)) => true,
            Some((Sub::Get, _)) => error.code == crate::jsonrpc::codes::INVALID_PARAMS,
            _ => false,
        };
        if over && !track.task.status.is_terminal() {
            track.task.status = TaskStatus::Failed;
        }
    }

    /// The poll timer of call `id` fired.
    pub(super) fn task_poll(&mut self, now: Instant, id: CallId) {
        self.send_task_request(now, id, Sub::Get);
    }

    /// Writes the task request `sub` as the call's request in flight.
    fn send_task_request(&mut self, now: Instant, id: CallId, sub: Sub) {
        let rpc_id = self.alloc_rpc_id();
        let Some(track) = self.calls.get_mut(&id).and_then(|c| c.task.as_mut()) else {
            return;
        };
        let mut params = task_params(&track.task.task_id);
        if sub == Sub::Update {
            let answers: Map<String, Value> = track.answers.drain(..).collect();
            params.insert("inputResponses".into(), Value::Object(answers));
        }
        // A 2025 tasks/result is held by the server until the task ends, which takes as
        // long as the person answering its requests takes: that time holds the call's
        // deadline as any legacy input request does (`pause_deadlines`), from when the
        // server asks; a task that says it needs input and asks nothing gets none.
        let out = self.write_task_request(rpc_id, sub.method(), &params);
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        if let Some(track) = call.task.as_mut() {
            track.wire = Some((sub, params));
        }
        call.rpc_id = Some(rpc_id);
        let timeout = call.timeout;
        call.arm(now, timeout);
        self.push_out(out, OutKind::Request(rpc_id));
        self.by_rpc.insert(rpc_id, id);
    }

    /// A task request on the wire: no `_meta` in 2025 (the `taskId` param is
    /// authoritative), the envelope declaring the extension in 2026.
    fn write_task_request(
        &self,
        rpc_id: i64,
        method: &str,
        params: &Map<String, Value>,
    ) -> Vec<u8> {
        let envelope = if self.era() == Some(Era::Modern) {
            self.task_envelope.as_str()
        } else {
            ""
        };
        let mut out = Vec::with_capacity(envelope.len() + 96);
        jsonrpc::write_request_head(&mut out, &RequestId::Number(rpc_id), method);
        out.extend_from_slice(b",\"params\":");
        super::request::write_params(&mut out, envelope, None, None, params, &[]);
        out.push(b'}');
        out
    }

    /// Sends `tasks/cancel` for `task_id` as a request whose answer nobody waits for
    /// (the call it belonged to is over). Not to a 2025-11-25 server that did not
    /// declare `tasks.cancel`: it serves no `tasks/cancel`, and a task must not get
    /// `notifications/cancelled` either, so nothing can be sent.
    pub(super) fn send_task_cancel(&mut self, task_id: &str) {
        if self.era() == Some(Era::Legacy) && !self.server_cancels_tasks() {
            return;
        }
        let params = task_params(task_id);
        let rpc_id = self.alloc_rpc_id();
        let out = self.write_task_request(rpc_id, TASKS_CANCEL, &params);
        remember(&mut self.ignored_ids, rpc_id);
        if self.detached.len() >= super::RECENT_IDS {
            self.detached.pop_front();
        }
        self.detached.push_back((rpc_id, TASKS_CANCEL, params));
        self.push_out(out, OutKind::Request(rpc_id));
    }

    /// Fails call `id` for a bad task record, cancelling the task when it may still run.
    fn task_fail(&mut self, id: CallId, problem: TaskProblem) {
        self.task_cancel_and_fail(id, CallError::Task(problem));
    }

    fn task_cancel_and_fail(&mut self, id: CallId, error: CallError) {
        self.send_cancel_for(id, "the task cannot be followed");
        self.complete(id, Err(error));
    }

    /// 2025-11-25 `notifications/tasks/status` or 2026-07-28 `notifications/tasks`:
    /// applied to the call whose task it names (when it has nothing in flight, the next
    /// step follows), else reported on its own. False when it cannot be read.
    pub(super) fn task_notification(
        &mut self,
        now: Instant,
        params: Option<&RawValue>,
    ) -> Result<(), String> {
        let Some(era) = self.era() else {
            return Ok(());
        };
        let params = params.ok_or_else(|| "no params".to_owned())?;
        let (object, result) = task_record(params.get())?;
        let task = Task::from_object(&object, era, self.config.limits.max_task_id_bytes)
            .map_err(|p| p.to_string())?;
        let call = self
            .calls
            .iter()
            .find(|(_, c)| {
                c.task
                    .as_ref()
                    .is_some_and(|t| t.task.task_id == task.task_id)
            })
            .map(|(id, _)| *id);
        let Some(id) = call else {
            self.events
                .push_back(Event::TaskStatus { call: None, task });
            return Ok(());
        };
        // The poll already due stays due: a server that repeats its status faster than
        // its poll interval must not put the polls off for ever (a requestor does not
        // depend on status notifications, and `max_task_polls` counts polls).
        let due = self
            .calls
            .get(&id)
            .filter(|c| c.rpc_id.is_none())
            .and_then(|c| c.deadline.map(|d| (d, c.armed)));
        if self.task_view(id, &object, result) {
            self.task_next(now, id);
        }
        if let Some((due, armed)) = due
            && let Some(call) = self.calls.get_mut(&id)
            && call.rpc_id.is_none()
            && call.deadline.is_some_and(|d| d > due)
        {
            call.deadline = Some(due);
            call.armed = armed;
        }
        // The task ended while its `tasks/result` waited without a deadline of its own
        // (the person's time): its answer is due now, within the call's timeout.
        if let Some(call) = self.calls.get_mut(&id)
            && let Some(track) = &call.task
            && track.task.status.is_terminal()
            && matches!(track.wire, Some((Sub::Result, _)))
        {
            let due = now + call.timeout;
            if call.deadline.is_none_or(|d| due < d) {
                let timeout = call.timeout;
                call.arm(now, timeout);
            }
        }
        Ok(())
    }

    /// The call whose task is `task_id`.
    pub(super) fn call_of_task(&self, task_id: &str) -> Option<CallId> {
        self.calls
            .iter()
            .find(|(_, c)| c.task.as_ref().is_some_and(|t| t.task.task_id == task_id))
            .map(|(id, _)| *id)
    }

    /// The latest view of the task behind call `id`.
    pub(crate) fn task_of(&self, id: CallId) -> Option<&Task> {
        self.calls.get(&id)?.task.as_ref().map(|t| &t.task)
    }
}

#[cfg(test)]
mod tests {
    use super::related_task;
    use crate::client::task::RELATED_TASK_KEY;
    use serde_json::json;

    fn of(params: serde_json::Value) -> Option<String> {
        related_task(Some(&crate::jsonrpc::to_raw(&params)))
    }

    #[test]
    fn the_related_task_is_read_from_meta_alone() {
        let messages = vec![json!({"role": "user", "content": {}}); 1000];
        let params = json!({"messages": messages, "_meta": {RELATED_TASK_KEY: {"taskId": "t-1"}}});
        assert_eq!(of(params).as_deref(), Some("t-1"));
        assert_eq!(
            of(json!({"_meta": {RELATED_TASK_KEY: {"taskId": 7}}})),
            None
        );
        assert_eq!(of(json!({"_meta": {RELATED_TASK_KEY: "t-1"}})), None);
        assert_eq!(of(json!({"_meta": [1]})), None);
        assert_eq!(of(json!({"taskId": "t-1"})), None);
        assert_eq!(related_task(None), None);
    }
}
