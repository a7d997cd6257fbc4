//! The legacy era (2025-06-18, 2025-11-25): `initialize`, `ping`, and tool calls whose
//! input travels as server→client requests.
//!
//! `initialize` echoes the client's version when it is a served legacy version and
//! otherwise counter-offers the newest served legacy version; with none served it is
//! refused with `-32602` and `data: {supported, requested}` (what a modern-only server
//! should say). A second `initialize` is `-32600`.
//!
//! A call that needs input is parked in [`PendingCall`] with the ids of the requests sent
//! for it. Each answer is stored under its key; when the last one arrives the handler runs
//! again with one more round counted. Answers to unknown ids (late, after cancellation)
//! are ignored.

use serde_json::{Map, Value, json};

use crate::client::{LogLevel, RELATED_TASK_KEY};
use crate::jsonrpc::{ErrorObject, RequestId, Response, codes};
use crate::version::{Era, ProtocolVersion};

use super::calls::{self, Target, error_result, invalid};
use super::deferred::{Deferral, Kind};
use super::registry::{InputRequestSpec, ToolOutcome, text_result};
use super::{Params, Server};
use crate::held::{held_bytes, json_size};

/// The most bytes of client capabilities a legacy session keeps, as JSON and as held in
/// memory (estimated from above: a parsed value takes many times its text); an
/// `initialize` with more is refused. A session record,
/// capabilities included, must fit a session store's
/// [`MAX_SESSION_RECORD_BYTES`](super::http::MAX_SESSION_RECORD_BYTES).
pub const MAX_CLIENT_CAPABILITIES_BYTES: usize = 64 * 1024;

/// The bytes of memory client capabilities that `keeper` (a session, a task) is to keep
/// for later hold ([`held_bytes`]); `-32602` naming it when they pass
/// [`MAX_CLIENT_CAPABILITIES_BYTES`] as JSON or in memory.
pub(crate) fn capabilities_kept(caps: &Value, keeper: &str) -> Result<usize, ErrorObject> {
    let size = json_size(caps);
    let held = held_bytes(caps);
    if size.max(held) > MAX_CLIENT_CAPABILITIES_BYTES {
        return Err(invalid(format!(
            "`capabilities` is {size} bytes ({held} held in memory), over the \
             {MAX_CLIENT_CAPABILITIES_BYTES} {keeper} keeps"
        )));
    }
    Ok(held)
}

/// The longest URI a session may subscribe to: with
/// [`ServerLimits::max_subscriptions`](super::ServerLimits::max_subscriptions), it bounds
/// what a session's subscriptions hold (a template resource may accept any URI).
const MAX_SUBSCRIBED_URI_BYTES: usize = 8 * 1024;

/// The most bytes a session's subscribed URIs take together, as the JSON array a
/// [`SessionRecord`](super::http::SessionRecord) keeps them in: with the client's
/// capabilities and a principal, the record stays within
/// [`MAX_SESSION_RECORD_BYTES`](super::http::MAX_SESSION_RECORD_BYTES), so that every
/// endpoint sharing a session store can read it back.
const MAX_SUBSCRIPTIONS_JSON_BYTES: usize = 128 * 1024;

// A record: the capabilities, the subscriptions, a principal of at most 8 KiB (6 bytes of
// JSON per byte at worst), and a few short members.
const _: () = assert!(
    MAX_CLIENT_CAPABILITIES_BYTES + MAX_SUBSCRIPTIONS_JSON_BYTES + 6 * 8 * 1024 + 1024
        <= super::http::MAX_SESSION_RECORD_BYTES
);

/// What `initialize` established.
#[derive(Debug)]
pub(super) struct Session {
    pub version: ProtocolVersion,
    /// The client's capabilities object, verbatim.
    pub client_caps: Value,
    /// `notifications/initialized` arrived.
    pub initialized: bool,
    /// The level set by `logging/setLevel`; `None`: every level is sent.
    pub log_level: Option<LogLevel>,
    /// The resource URIs subscribed to, at most [`ServerLimits::max_subscriptions`](super::ServerLimits::max_subscriptions).
    pub subscriptions: Vec<String>,
    /// What scopes this session's tasks: a number no other session of the machine has.
    pub task_scope: u64,
    /// The principal its `initialize` was served as: over HTTP, the only one whose
    /// requests the session serves.
    pub principal: Option<String>,
}

/// Everything one legacy client's connection holds in the machine: its handshake, its
/// parked calls, the next id of a request to it. Over Streamable HTTP with sessions, the
/// endpoint keeps one per `Mcp-Session-Id` and swaps it into the machine while that
/// session's input is handled ([`Server::swap_legacy`]).
#[derive(Debug, Default)]
pub(super) struct LegacyState {
    session: Option<Session>,
    pending: Vec<PendingCall>,
    next_out_id: i64,
}

/// A legacy tool call waiting for the client's answers.
#[derive(Debug)]
pub(super) struct PendingCall {
    client_id: RequestId,
    target: Target,
    inputs: Map<String, Value>,
    /// Outstanding server→client requests: (our id, input key).
    waiting: Vec<(RequestId, String)>,
    /// Input rounds completed.
    round: u32,
    /// The request's `_meta.progressToken`.
    progress_token: Option<Value>,
    /// The task whose input this is (a 2025 `tasks/result` waiting for it): its
    /// requests carry the related-task `_meta`, and its end ends the task.
    task: Option<String>,
    /// What its arguments and the answers in `inputs` hold in memory (estimated),
    /// counted against `ServerLimits::max_input_bytes` while it waits.
    input_bytes: usize,
    /// The deferred work it waits for instead of answers; cancelled when the call is
    /// dropped first (cancelled, its session gone).
    deferral: Option<Deferral>,
    /// For a task's round, what it asked: given back to the task when the
    /// `tasks/result` it went out on is cancelled before the answers came.
    asked: Vec<(String, InputRequestSpec)>,
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if let Some(deferral) = self.deferral.take() {
            deferral.cancel();
        }
    }
}

impl PendingCall {
    /// A 2025 `tasks/result` (request `client_id`) of task `task`, which needs input for
    /// `target` after `round` rounds with the answers `inputs`.
    pub(super) fn for_task(
        client_id: RequestId,
        target: Target,
        (inputs, round): (Map<String, Value>, u32),
        task: String,
    ) -> Self {
        let answers: usize = (inputs.iter()).map(|(k, v)| k.len() + held_bytes(v)).sum();
        let input_bytes = answers + held_bytes(&target.arguments);
        PendingCall {
            client_id,
            target,
            inputs,
            waiting: Vec::new(),
            round,
            progress_token: None,
            task: Some(task),
            input_bytes,
            deferral: None,
            asked: Vec::new(),
        }
    }

    /// The number of the deferred work it waits for, if any.
    pub(super) fn deferred_work(&self) -> Option<u64> {
        self.deferral.as_ref().map(|d| d.work)
    }

    /// Its work completed: nothing is left to cancel.
    pub(super) fn take_deferral(&mut self) {
        self.deferral = None;
    }
}

impl LegacyState {
    /// The tasks whose 2025 `tasks/result` is parked in this state on their input
    /// requests.
    pub(super) fn parked_tasks(&self) -> impl Iterator<Item = &str> {
        self.pending.iter().filter_map(|c| c.task.as_deref())
    }

    /// Whether requests from `principal` may be served in this state's session: the one
    /// its `initialize` was served as (any, before a handshake).
    pub(super) fn serves(&self, principal: Option<&str>) -> bool {
        self.session
            .as_ref()
            .is_none_or(|s| s.principal.as_deref() == principal)
    }

    /// The principal its `initialize` was served as (`None`: unauthenticated, or no
    /// handshake yet).
    pub(super) fn principal(&self) -> Option<&str> {
        self.session.as_ref().and_then(|s| s.principal.as_deref())
    }

    /// The level its client set with `logging/setLevel`, if any.
    pub(super) fn log_level(&self) -> Option<LogLevel> {
        self.session.as_ref().and_then(|s| s.log_level)
    }

    /// The scope of this session's tasks, once `initialize` succeeded.
    pub(super) fn task_scope(&self) -> Option<u64> {
        self.session.as_ref().map(|s| s.task_scope)
    }

    /// Whether no call of this session is parked waiting for its client's input.
    pub(super) fn no_parked_calls(&self) -> bool {
        self.pending.is_empty()
    }

    /// The shareable part of this state's session, once `initialize` succeeded.
    pub(super) fn record(&self) -> Option<super::http::SessionRecord> {
        let s = self.session.as_ref()?;
        Some(super::http::SessionRecord {
            version: s.version,
            client_capabilities: s.client_caps.clone(),
            initialized: s.initialized,
            log_level: s.log_level,
            subscriptions: s.subscriptions.clone(),
            principal: s.principal.clone(),
            last_use: None,
        })
    }

    /// The state of a session another process initialized: its shared part from
    /// `record`, nothing parked, and `task_scope` (tasks are process-local). At most
    /// `max_subscriptions` subscriptions are kept.
    pub(super) fn adopted(
        record: super::http::SessionRecord,
        task_scope: u64,
        max_subscriptions: usize,
    ) -> LegacyState {
        let mut subscriptions = record.subscriptions;
        subscriptions.retain(|u| u.len() <= MAX_SUBSCRIBED_URI_BYTES);
        subscriptions.truncate(max_subscriptions);
        LegacyState {
            session: Some(Session {
                version: record.version,
                client_caps: record.client_capabilities,
                initialized: record.initialized,
                log_level: record.log_level,
                subscriptions,
                task_scope,
                principal: record.principal,
            }),
            pending: Vec::new(),
            next_out_id: 0,
        }
    }

    /// Takes the shared part of `record` (changed by another process) and keeps the
    /// process-local part: parked calls, request counter, task scope.
    pub(super) fn refresh(&mut self, record: super::http::SessionRecord, max_subscriptions: usize) {
        let scope = self.session.as_ref().map(|s| s.task_scope);
        let fresh = LegacyState::adopted(record, 0, max_subscriptions);
        if let (Some(mut session), Some(scope)) = (fresh.session, scope) {
            session.task_scope = scope;
            self.session = Some(session);
        }
    }
}

impl Server {
    /// Exchanges the machine's legacy state with `other`.
    pub(super) fn swap_legacy(&mut self, other: &mut LegacyState) {
        std::mem::swap(&mut self.session, &mut other.session);
        std::mem::swap(&mut self.pending, &mut other.pending);
        std::mem::swap(&mut self.next_out_id, &mut other.next_out_id);
    }

    pub(super) fn legacy_request(&mut self, id: RequestId, method: &str, params: &mut Params) {
        match method {
            "initialize" => {
                let reply = self.initialize(params);
                self.reply(&id, reply);
            }
            "ping" => self.send_result(&id, &json!({})),
            _ if self.session.is_none() => {
                let e = ErrorObject::new(codes::INVALID_REQUEST, "Server not initialized");
                self.send_error(Some(&id), &e);
            }
            "tools/call" if !self.config.tools.is_empty() => {
                match calls::take_target(params, &self.config.tools) {
                    Ok(target)
                        if params.get("task").is_some_and(Value::is_object)
                            && self.session_has_tasks()
                            && self.is_task_tool(&target.name) =>
                    {
                        let caps = self.session.as_ref().map(|s| s.client_caps.clone());
                        match self.create_task(target, Era::Legacy, &caps.unwrap_or_default()) {
                            Ok(task) => self.send_result(&id, &json!({ "task": task })),
                            Err(e) => self.send_error(Some(&id), &e),
                        }
                    }
                    Ok(target) if self.requires_task(&target.name) => {
                        let e = ErrorObject::new(
                            codes::METHOD_NOT_FOUND,
                            format!(
                                "Tool `{}` runs only as a task: add `task` to the params",
                                target.name
                            ),
                        );
                        self.send_error(Some(&id), &e);
                    }
                    Ok(target) => self.legacy_run(PendingCall {
                        client_id: id,
                        input_bytes: held_bytes(&target.arguments),
                        target,
                        inputs: Map::new(),
                        waiting: Vec::new(),
                        round: 0,
                        progress_token: progress_token(params),
                        task: None,
                        deferral: None,
                        asked: Vec::new(),
                    }),
                    Err(e) => self.send_error(Some(&id), &e),
                }
            }
            "logging/setLevel" if self.config.logging => {
                let reply = self.set_level(params);
                self.reply(&id, reply);
            }
            "resources/subscribe" | "resources/unsubscribe"
                if self.config.resource_subscriptions =>
            {
                let reply = self.subscribe(params, method == "resources/subscribe");
                self.reply(&id, reply);
            }
            "tasks/result" if self.session_has_tasks() && self.park_task_result(&id, params) => {}
            _ => {
                let tasks = self.session_has_tasks();
                let reply = (tasks.then(|| self.task_request(method, params, Era::Legacy, None)))
                    .flatten()
                    .or_else(|| self.catalog(method, params, Era::Legacy))
                    .unwrap_or_else(|| Err(method_not_found(method)));
                self.reply(&id, reply);
            }
        }
    }

    /// Whether the legacy session negotiated a version with tasks: 2025-11-25, not
    /// 2025-06-18, whose schema has no `tasks` capability, no task-augmented `tools/call`
    /// and no `tasks/*` methods (the `task` member of a call is then ignored).
    pub(super) fn session_has_tasks(&self) -> bool {
        self.session
            .as_ref()
            .is_some_and(|s| s.version != ProtocolVersion::V2025_06_18)
    }

    fn initialize(&mut self, params: &Params) -> Result<Value, ErrorObject> {
        if self.session.is_some() {
            return Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                "Server already initialized",
            ));
        }
        let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
            return Err(invalid("`protocolVersion` must be a string"));
        };
        let policy = &self.config.versions;
        let echoed = ProtocolVersion::parse(requested)
            .filter(|v| v.era() == Era::Legacy && policy.accepts(*v));
        let Some(version) = echoed.or_else(|| policy.newest(Era::Legacy)) else {
            return Err(invalid("Unsupported protocol version").with_data(
                json!({"supported": self.supported_versions(), "requested": calls::clipped(requested)}),
            ));
        };
        let client_caps = match params.get("capabilities") {
            Some(v @ Value::Object(_)) => v.clone(),
            _ => json!({}),
        };
        // Kept for the session's life (and handed to every request): a client cannot make
        // the server hold megabytes per session with it.
        capabilities_kept(&client_caps, "a session")?;
        self.session = Some(Session {
            version,
            client_caps,
            initialized: false,
            log_level: None,
            subscriptions: Vec::new(),
            task_scope: self.tasks.new_scope(),
            principal: self.principal.clone(),
        });
        let mut capabilities = self.capabilities(Era::Legacy);
        if self.session_has_tasks() {
            self.add_task_capability(&mut capabilities, Era::Legacy);
        }
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": self.config.info,
        });
        if let (Some(text), Some(obj)) = (&self.config.instructions, result.as_object_mut()) {
            obj.insert("instructions".to_owned(), json!(text));
        }
        Ok(result)
    }

    /// `logging/setLevel`: the session's log threshold from now on.
    fn set_level(&mut self, params: &Params) -> Result<Value, ErrorObject> {
        let level = params.get("level").and_then(Value::as_str);
        let Some(level) = level.and_then(LogLevel::parse) else {
            return Err(invalid(
                "`level` must be one of debug, info, notice, warning, error, critical, alert, \
                 emergency",
            ));
        };
        if let Some(session) = &mut self.session {
            session.log_level = Some(level);
        }
        Ok(json!({}))
    }

    /// `resources/subscribe` (`on`) or `resources/unsubscribe`. Subscribing needs a
    /// resource that exists (else `-32002`, as a read of it would say); unsubscribing
    /// from something not subscribed is a no-op.
    fn subscribe(&mut self, params: &Params, on: bool) -> Result<Value, ErrorObject> {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return Err(invalid("`uri` must be a string"));
        };
        if uri.len() > MAX_SUBSCRIBED_URI_BYTES {
            return Err(invalid(format!(
                "`uri` longer than {MAX_SUBSCRIBED_URI_BYTES} bytes"
            )));
        }
        if on && !self.resource_exists(uri) {
            return Err(
                ErrorObject::new(codes::RESOURCE_NOT_FOUND, "Resource not found")
                    .with_data(json!({"uri": calls::clipped(uri)})),
            );
        }
        let max = self.config.limits.max_subscriptions;
        let Some(session) = &mut self.session else {
            return Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                "Server not initialized",
            ));
        };
        let known = session.subscriptions.iter().position(|s| s == uri);
        match (on, known) {
            (true, None) if session.subscriptions.len() >= max => {
                return Err(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("Too many subscriptions (at most {max} per session)"),
                ));
            }
            (true, None)
                if json_size(&session.subscriptions) + json_size(&uri) + 1
                    > MAX_SUBSCRIPTIONS_JSON_BYTES =>
            {
                return Err(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!(
                        "Too many subscriptions (their URIs may take at most \
                         {MAX_SUBSCRIPTIONS_JSON_BYTES} bytes per session)"
                    ),
                ));
            }
            (true, None) => session.subscriptions.push(uri.to_owned()),
            (false, Some(i)) => {
                session.subscriptions.remove(i);
            }
            _ => {}
        }
        Ok(json!({}))
    }

    /// Tells the legacy session in the machine that `uri` changed
    /// (`notifications/resources/updated`), when it subscribed to it. Returns whether a
    /// notification was queued.
    pub(super) fn legacy_resource_updated(&mut self, uri: &str) -> bool {
        let subscribed = self
            .session
            .as_ref()
            .is_some_and(|s| s.subscriptions.iter().any(|u| u == uri));
        if subscribed {
            self.send_notification("notifications/resources/updated", &json!({"uri": uri}));
        }
        subscribed
    }

    /// Runs the handler of a (new or resumed) call and acts on its outcome: a deferred
    /// call is parked until its work completes
    /// ([`Server::resume_deferred`](super::Server::resume_deferred)).
    fn legacy_run(&mut self, mut call: PendingCall) {
        let caps = self.session.as_ref().map(|s| s.client_caps.clone());
        let work = self.new_work();
        let (outcome, deferral) = calls::invoke(
            &mut self.config.tools,
            &call.target,
            &call.inputs,
            (Era::Legacy, call.round),
            caps.as_ref().unwrap_or(&Value::Null),
            (call.progress_token.as_ref(), &self.deferred_queue, work),
        );
        if let Some(deferral) = deferral {
            if let Some(task) = call.task.clone() {
                // A task's round: the task waits for the work, as for its first round.
                let round = (std::mem::take(&mut call.inputs), call.round);
                return self.task_round_deferred(call.client_id.clone(), &task, round, deferral);
            }
            let parked = self.park_deferred(
                deferral.clone(),
                call.client_id.clone(),
                call.input_bytes,
                Kind::Legacy,
            );
            match parked {
                Ok(()) => {
                    call.deferral = Some(deferral);
                    self.pending.push(call);
                }
                Err(e) => self.answer_call(&call, Err(e)),
            }
            return;
        }
        self.legacy_act(call, outcome.now());
    }

    /// The answer to the request a call serves: to a `tools/call`, `reply`; to a task's
    /// `tasks/result`, what the task ends with.
    fn answer_call(&mut self, call: &PendingCall, reply: Result<Value, ErrorObject>) {
        let reply = match &call.task {
            Some(task) => self.task_answered(task, reply),
            None => reply,
        };
        self.reply(&call.client_id, reply);
    }

    /// Acts on the outcome of a call's handler: answers, or asks the client for input
    /// and parks the call.
    pub(super) fn legacy_act(&mut self, mut call: PendingCall, outcome: ToolOutcome) {
        let asks = match outcome {
            ToolOutcome::NeedInput(asks) => asks,
            ToolOutcome::Done(v) => {
                let reply = calls::done(&call.target.name, v);
                return self.answer_call(&call, reply);
            }
            ToolOutcome::DoneText { text, is_error } => {
                if call.task.is_some() {
                    let reply = Ok(text_result(text, is_error));
                    return self.answer_call(&call, reply);
                }
                return self.send_text_result(&call.client_id, &text, is_error);
            }
            ToolOutcome::DoneWithNotes { notes, result } => {
                let level = match &self.session {
                    Some(s) if self.config.logging => Some(s.log_level.unwrap_or(LogLevel::Debug)),
                    _ => None,
                };
                self.send_notes(&notes, level, call.progress_token.as_ref());
                let reply = calls::done(&call.target.name, result);
                return self.answer_call(&call, reply);
            }
            ToolOutcome::Error(e) => return self.answer_call(&call, Err(e)),
            // `now()` left no delay. A task's round that never answers leaves its task
            // working, its `tasks/result` held until the task ends.
            ToolOutcome::NoAnswer | ToolOutcome::After { .. } => {
                if let Some(task) = call.task.clone() {
                    let round = (std::mem::take(&mut call.inputs), call.round);
                    self.task_round_unanswered(call.client_id.clone(), &task, round);
                }
                return;
            }
            // Parked by `legacy_run`, which alone can take a deferral.
            ToolOutcome::Deferred => {
                let e = ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    "the tool call cannot be deferred here",
                );
                return self.answer_call(&call, Err(e));
            }
        };
        let name = &call.target.name;
        if let Some(reply) = calls::refuse(name, &asks, call.round, &self.config.limits) {
            return self.answer_call(&call, reply);
        }
        let (version, caps) = match &self.session {
            Some(s) => (s.version, &s.client_caps),
            None => return,
        };
        if let Some(missing) = calls::missing_capabilities(caps, &asks, version) {
            // `sampling.tools`, not just `sampling`, when only a member is lacking.
            let names = calls::missing_names(&missing);
            let mut text = format!(
                "tool `{name}` needs input, but the client did not declare the {} capability",
                names.join(", ")
            );
            if version < ProtocolVersion::V2025_11_25 && names.iter().any(|n| n == "sampling.tools")
            {
                text.push_str(" (tool use in sampling came with 2025-11-25)");
            }
            return self.answer_call(&call, Ok(error_result(text)));
        }
        let in_flight: usize = self.pending.iter().map(|c| c.waiting.len()).sum();
        if in_flight.saturating_add(asks.len()) > self.config.limits.max_pending_inputs {
            let e = ErrorObject::new(
                codes::INTERNAL_ERROR,
                "Too many input requests awaiting the client's answers",
            );
            return self.answer_call(&call, Err(e));
        }
        // Parked, it keeps its arguments and answers until the client answers.
        let held: usize = self.pending.iter().map(|c| c.input_bytes).sum();
        let max_bytes = self.config.limits.max_input_bytes;
        if held.saturating_add(call.input_bytes) > max_bytes {
            let text = format!(
                "tool `{name}` needs input, but waiting for it would hold its arguments and \
                 answers past {max_bytes} bytes (max_input_bytes)"
            );
            return self.answer_call(&call, Ok(error_result(text)));
        }
        if call.task.is_some() {
            call.asked.clone_from(&asks);
        }
        for (key, spec) in &asks {
            let (method, mut params) = calls::render(spec, version);
            if let Some(task) = &call.task {
                let meta = json!({ RELATED_TASK_KEY: {"taskId": task} });
                let p = params.get_or_insert_with(|| json!({}));
                if let Some(o) = p.as_object_mut() {
                    o.insert("_meta".into(), meta);
                }
            }
            let out_id = self.send_request(method, params.as_ref());
            call.waiting.push((out_id, key.clone()));
        }
        self.pending.push(call);
    }

    /// Whether `id` is one of our requests still waiting for the client's answer.
    pub(super) fn is_awaited(&self, id: &RequestId) -> bool {
        self.call_asking(id).is_some()
    }

    /// The client request (a `tools/call`, a task's `tasks/result`) whose call asked
    /// with our request `id`, still unanswered.
    pub(crate) fn call_asking(&self, id: &RequestId) -> Option<&RequestId> {
        (self.pending.iter())
            .find(|c| c.waiting.iter().any(|(w, _)| w == id))
            .map(|c| &c.client_id)
    }

    /// A response from the client: the answer to one of our input requests.
    pub(super) fn legacy_response(&mut self, response: Response) {
        let Some(id) = response.id else { return };
        let found = self.pending.iter().enumerate().find_map(|(ci, c)| {
            let wi = c.waiting.iter().position(|(w, _)| *w == id)?;
            Some((ci, wi))
        });
        let Some((ci, wi)) = found else { return };
        let held: usize = self.pending.iter().map(|c| c.input_bytes).sum();
        let max_bytes = self.config.limits.max_input_bytes;
        let call = &mut self.pending[ci];
        let (_, key) = call.waiting.remove(wi);
        match response.outcome {
            Ok(raw) => {
                let answer: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                let size = key.len() + held_bytes(&answer);
                if held + size > max_bytes {
                    let call = self.pending.remove(ci);
                    self.cancel_outstanding(&call, "the tool call failed");
                    let text = format!(
                        "the answers to the input requests of tool `{}` would hold more than \
                         {max_bytes} bytes (max_input_bytes)",
                        call.target.name
                    );
                    self.answer_call(&call, Ok(error_result(text)));
                    return;
                }
                call.input_bytes += size;
                call.inputs.insert(key, answer);
                if call.waiting.is_empty() {
                    let mut call = self.pending.remove(ci);
                    call.round = call.round.saturating_add(1);
                    self.legacy_run(call);
                }
            }
            Err(e) => {
                let call = self.pending.remove(ci);
                self.cancel_outstanding(&call, "the tool call failed");
                let text = format!(
                    "input request `{key}` failed: {} (code {})",
                    // A client's error message, echoed to that client: a sentence's worth.
                    calls::clipped_to(&e.message, 256),
                    e.code
                );
                self.answer_call(&call, Ok(error_result(text)));
            }
        }
    }

    /// `notifications/cancelled` for a client request: drop its parked call, if any
    /// (deferred work is told, as the call drops).
    pub(super) fn cancel_pending(&mut self, id: &RequestId) {
        while let Some(i) = self.pending.iter().position(|c| c.client_id == *id) {
            let mut call = self.pending.remove(i);
            if let Some(work) = call.deferred_work() {
                self.deferred.remove(&work);
            }
            self.cancel_outstanding(&call, "the tool call was cancelled");
            if let Some(task) = &call.task
                && !call.waiting.is_empty()
            {
                // Only the wait ended, not the task: the next `tasks/result` asks again.
                self.tasks.ask_again(task, std::mem::take(&mut call.asked));
            }
        }
    }

    /// The parked calls that stand for a 2025 task's `tasks/result` (its input requests
    /// out) whose task ended meanwhile (cancelled) or is gone (expired): the client is
    /// told the requests are moot, the handler never runs for them again, and the
    /// `tasks/result` gets what one for that task gets now.
    pub(super) fn end_calls_of_ended_tasks(&mut self) {
        if !self.pending.iter().any(|c| c.task.is_some()) {
            return;
        }
        self.tasks.expire(self.now);
        let ended: Vec<usize> = (self.pending.iter().enumerate())
            .filter(|(_, c)| (c.task.as_deref()).is_some_and(|t| !self.tasks.is_running(t)))
            .map(|(at, _)| at)
            .collect();
        for at in ended.into_iter().rev() {
            let call = self.pending.remove(at);
            if let Some(work) = call.deferred_work() {
                self.deferred.remove(&work);
            }
            self.cancel_outstanding(&call, "the task ended");
            let id = call.task.as_deref().unwrap_or_default();
            let reply = (self.tasks.get(id))
                .map_or_else(|| Err(super::tasks::not_found(id)), |t| t.result());
            self.reply(&call.client_id, reply);
        }
    }

    /// When the earliest task whose `tasks/result` is parked on its input requests
    /// expires.
    pub(super) fn parked_task_expiry(&self) -> Option<crate::Instant> {
        self.expiry_of_parked(self.pending.iter().filter_map(|c| c.task.as_deref()))
    }

    /// When the earliest of the tasks `parked` (whose `tasks/result` is parked on their
    /// input requests, in the machine's legacy state or in a session's held elsewhere)
    /// expires; the machine's present time for one that ended or is gone already (the
    /// call parked for it is due to be ended).
    pub(super) fn expiry_of_parked<'a>(
        &self,
        parked: impl Iterator<Item = &'a str>,
    ) -> Option<crate::Instant> {
        let ids: std::collections::BTreeSet<&str> = parked.collect();
        if ids.is_empty() {
            return None;
        }
        let ttl = std::time::Duration::from_millis(super::tasks::TTL_MS);
        (ids.into_iter())
            .map(|id| match self.tasks.get(id) {
                Some(t) if !t.terminal() => t.created_at().saturating_add(ttl),
                _ => self.now,
            })
            .min()
    }

    /// When the first call parked on a task's input requests in a session's state held
    /// outside the machine is due to end: its task's expiry, or the machine's present
    /// time for one whose task ended or is gone ([`Server::mark_parked_elsewhere`]
    /// says which tasks those are). No walk of the sessions.
    pub(super) fn parked_elsewhere_expiry(&self) -> Option<crate::Instant> {
        self.tasks.parked_elsewhere_expiry(self.now)
    }

    /// The tasks of [`Server::parked_elsewhere_expiry`] whose calls are due by `now`.
    pub(super) fn parked_elsewhere_due(&self, now: crate::Instant) -> Vec<String> {
        self.tasks.parked_elsewhere_due(self.now, now)
    }

    /// Marks the tasks on whose input requests `state` parks a 2025 `tasks/result` as
    /// parked on in a state held outside the machine (`on`: the state was put back
    /// there) or no longer (it is taken into the machine, whose own parked calls
    /// [`Server::parked_task_expiry`] covers).
    pub(super) fn mark_parked_elsewhere(&mut self, state: &LegacyState, on: bool) {
        let scope = state.task_scope();
        for id in state.parked_tasks() {
            self.tasks.mark_parked_elsewhere(id, scope, on);
        }
    }

    /// Tells the client to stop working on our requests for `call`.
    fn cancel_outstanding(&mut self, call: &PendingCall, reason: &str) {
        for (out_id, _) in &call.waiting {
            self.send_cancelled(out_id, reason);
        }
    }

    /// Every served version, newest first.
    pub(super) fn supported_versions(&self) -> Vec<&'static str> {
        let mut versions = self.config.versions.accepted.clone();
        versions.sort_unstable_by(|a, b| b.cmp(a));
        versions.dedup();
        versions.into_iter().map(ProtocolVersion::as_str).collect()
    }
}

/// The request's `_meta.progressToken`, when it is a string or an integer.
pub(super) fn progress_token(params: &Params) -> Option<Value> {
    let token = params.get("_meta")?.get("progressToken")?;
    (token.is_string() || token.is_i64() || token.is_u64()).then(|| token.clone())
}

/// `-32601` for `method`.
pub(super) fn method_not_found(method: &str) -> ErrorObject {
    ErrorObject::new(
        codes::METHOD_NOT_FOUND,
        format!("Method not found: {}", calls::clipped(method)),
    )
}
