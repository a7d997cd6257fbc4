//! The modern era (2026-07-28): stateless requests validated by their `_meta`,
//! `server/discover`, and tool input by MRTR (`input_required` + retry).
//!
//! Validation order (the spec fixes none; this is the stdio subset of the order the
//! conformance suite pins): `_meta` with both required members (else `-32602`) →
//! version served (else `-32022` with `data: {supported, requested}`) → method known
//! (else `-32601`) → params → client capability for the inputs a tool asks for (else
//! `-32021` with `data.requiredCapabilities`).
//!
//! Every result carries `resultType` and `_meta["io.modelcontextprotocol/serverInfo"]`;
//! discover, list and read results also carry `ttlMs` and `cacheScope`.

use serde_json::{Map, Value, json};

use crate::Instant;
use crate::json_write::{map_size_hint, write_str, write_value};
use crate::jsonrpc::{ErrorObject, RequestId, codes, write_result_head};
use crate::version::{Era, ProtocolVersion};

use std::borrow::Cow;

use super::calls::{self, Answer, Target, invalid};
use super::deferred::{Deferral, Kind};
use super::legacy::method_not_found;
use super::registry::{InputRequestSpec, ToolOutcome, write_text_result};
use super::seal::MAX_SEALED_STATE_BYTES;
use super::state::{RequestState, StateContext, StateRefusal};
use super::{Params, Server};
use crate::held::{held_bytes, json_size_within};

const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// Methods whose complete results carry caching hints.
const CACHEABLE: [&str; 8] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "skills/list",
    "skills/get",
];

impl Server {
    /// Whether this request is served by the modern leg (see the module docs of
    /// `server` for the rule).
    pub(super) fn is_modern(&self, method: &str, params: &Params) -> bool {
        let policy = &self.config.versions;
        if policy.newest(Era::Modern).is_none() {
            return false;
        }
        let meta = params.get("_meta").and_then(Value::as_object);
        if method == "initialize" {
            // A legacy client never puts the modern protocol version in `_meta`; a
            // 2026-07-28 client that does is told the method is gone (-32601).
            return meta.is_some_and(|m| m.contains_key(PROTOCOL_VERSION));
        }
        if policy.newest(Era::Legacy).is_none() || method == "server/discover" {
            return true;
        }
        meta.is_some_and(|m| {
            m.contains_key(PROTOCOL_VERSION) || m.contains_key(CLIENT_CAPABILITIES)
        })
    }

    pub(super) fn modern_request(
        &mut self,
        now: Instant,
        id: &RequestId,
        method: &str,
        params: &mut Params,
    ) {
        // A call's arguments are taken out, not copied: the handler gets them, and the
        // request state's binding reads them there.
        let arguments = if method == "tools/call" {
            params.remove("arguments")
        } else {
            None
        };
        let params: &Params = params;
        let (version, caps) = match self.validate_meta(params) {
            Ok(v) => v,
            Err(e) => return self.send_error(Some(id), &e),
        };
        let reply = match method {
            "server/discover" => Ok(self.discover()),
            "tools/call" if !self.config.tools.is_empty() => {
                let declared = super::tasks::declares_tasks(Some(caps));
                let mode =
                    (params.get("name").and_then(Value::as_str)).and_then(|n| self.task_mode(n));
                match mode {
                    Some(m) if m.required && !declared => {
                        Err(super::tasks::tasks_capability_required())
                    }
                    Some(m)
                        if declared
                            && !m.input_before_task
                            && params.get("requestState").is_none() =>
                    {
                        calls::target_with(params, &self.config.tools, arguments).and_then(
                            |target| {
                                let task = self.create_task(target, Era::Modern, caps)?;
                                Ok(as_created(task))
                            },
                        )
                    }
                    _ => {
                        let as_task = declared && mode.is_some_and(|m| m.input_before_task);
                        let call = (params, arguments);
                        match self.modern_call(now, id, call, version, caps, as_task) {
                            Some(Ok(answer)) => return self.send_modern_answer(id, answer),
                            Some(Err(e)) => Err(e),
                            None => return,
                        }
                    }
                }
            }
            "subscriptions/listen" => match self.listen(id, params, caps) {
                // Open: acknowledged, answered when it ends.
                Ok(()) => return,
                Err(e) => Err(e),
            },
            "prompts/get" if !self.config.prompts.is_empty() => {
                self.modern_prompt(now, params, version, caps)
            }
            _ => self
                .task_request(method, params, Era::Modern, Some(caps))
                .or_else(|| self.catalog(method, params, Era::Modern))
                .unwrap_or_else(|| Err(method_not_found(method))),
        };
        match reply {
            Ok(result) => self.send_modern_result(id, &result, CACHEABLE.contains(&method)),
            Err(e) => self.send_error(Some(id), &e),
        }
    }

    /// The request's version and client capabilities, or the error to answer.
    fn validate_meta<'p>(
        &self,
        params: &'p Params,
    ) -> Result<(ProtocolVersion, &'p Value), ErrorObject> {
        let Some(meta) = params.get("_meta").and_then(Value::as_object) else {
            return Err(invalid(format!(
                "Missing `_meta`: a 2026-07-28 request must carry `{PROTOCOL_VERSION}` and `{CLIENT_CAPABILITIES}`"
            )));
        };
        let Some(requested) = meta.get(PROTOCOL_VERSION).and_then(Value::as_str) else {
            return Err(invalid(format!(
                "`_meta` must carry `{PROTOCOL_VERSION}` (a string)"
            )));
        };
        let caps = match meta.get(CLIENT_CAPABILITIES) {
            Some(v @ Value::Object(_)) => v,
            _ => {
                return Err(invalid(format!(
                    "`_meta` must carry `{CLIENT_CAPABILITIES}` (an object)"
                )));
            }
        };
        if let Some(level) = meta.get(LOG_LEVEL)
            && level
                .as_str()
                .and_then(crate::client::LogLevel::parse)
                .is_none()
        {
            return Err(invalid(format!(
                "`{LOG_LEVEL}` must be one of debug, info, notice, warning, error, critical, \
                 alert, emergency"
            )));
        }
        match ProtocolVersion::parse(requested) {
            Some(v) if v.era() == Era::Modern && self.config.versions.accepts(v) => Ok((v, caps)),
            _ => Err(ErrorObject::new(
                codes::UNSUPPORTED_PROTOCOL_VERSION,
                format!(
                    "Unsupported protocol version: {}",
                    calls::clipped(requested)
                ),
            )
            .with_data(json!({
                "supported": self.supported_versions(),
                "requested": calls::clipped(requested),
            }))),
        }
    }

    fn discover(&self) -> Value {
        let mut capabilities = self.capabilities(Era::Modern);
        self.add_task_capability(&mut capabilities, Era::Modern);
        let mut result = json!({
            "supportedVersions": self.supported_versions(),
            "capabilities": capabilities,
        });
        if let (Some(text), Some(obj)) = (&self.config.instructions, result.as_object_mut()) {
            obj.insert("instructions".to_owned(), json!(text));
        }
        result
    }

    /// Sends a 2026 result with what every one carries: `resultType` (`complete` when
    /// the result has none), the server's info in `_meta`, and the caching hints on
    /// complete results of cacheable methods. The additions are written into the
    /// message as it is encoded (after the result's own members), not inserted into
    /// `result`. A result that is not an object is sent as it is.
    pub(super) fn send_modern_result(&mut self, id: &RequestId, result: &Value, cacheable: bool) {
        let Value::Object(obj) = result else {
            return self.send_result(id, result);
        };
        let kind = obj.get("resultType");
        let hints = cacheable && kind.is_none_or(|k| k == "complete");
        let mut out = Vec::with_capacity(map_size_hint(obj) + self.info_json.len() + 160);
        write_result_head(&mut out, Some(id));
        let mut members = Members::open(&mut out);
        for (key, value) in obj {
            let replaced = key == "_meta" || (hints && (key == "ttlMs" || key == "cacheScope"));
            if !replaced {
                members.value(key, value);
            }
        }
        if kind.is_none() {
            members.raw("resultType", b"\"complete\"");
        }
        if hints {
            members.raw("ttlMs", self.config.ttl_ms.to_string().as_bytes());
            members.value("cacheScope", &Value::from(self.config.cache_scope.as_str()));
        }
        match obj.get("_meta") {
            Some(Value::Object(meta)) => {
                let mut inner = Members::open(members.key("_meta"));
                for (key, value) in meta.iter().filter(|(k, _)| *k != SERVER_INFO) {
                    inner.value(key, value);
                }
                inner.raw(SERVER_INFO, &self.info_json);
                inner.close();
            }
            // Not an object: left as it is.
            Some(other) => members.value("_meta", other),
            None => members.server_meta(&self.info_json),
        }
        members.close();
        out.push(b'}');
        self.outbound.push_back(out);
    }

    /// Sends the answer to a 2026 `tools/call` (not cacheable) as
    /// [`Server::send_modern_result`] does, a text result written straight into the
    /// message.
    pub(super) fn send_modern_answer(&mut self, id: &RequestId, answer: Answer) {
        let (text, is_error) = match answer {
            Answer::Value(result) => return self.send_modern_result(id, &result, false),
            Answer::Text { text, is_error } => (text, is_error),
        };
        let mut out = Vec::with_capacity(text.len() + self.info_json.len() + 160);
        write_result_head(&mut out, Some(id));
        write_text_result(&mut out, &text, is_error);
        let mut members = Members {
            out: &mut out,
            first: false,
        };
        members.raw("resultType", b"\"complete\"");
        members.server_meta(&self.info_json);
        members.close();
        out.push(b'}');
        self.outbound.push_back(out);
    }

    /// A modern `tools/call` (request `id`), first try or MRTR retry. `None`: not
    /// answered now (never, or when its deferred work completes). `as_task`: the first
    /// outcome that is not a request for input becomes a task.
    fn modern_call(
        &mut self,
        now: Instant,
        id: &RequestId,
        (params, arguments): (&Params, Option<Value>),
        version: ProtocolVersion,
        caps: &Value,
        as_task: bool,
    ) -> Option<Result<Answer, ErrorObject>> {
        // `[name, arguments]` is sealed with `null` for absent or null arguments alike.
        let bound_arguments = arguments.as_ref().is_some_and(Value::is_object);
        let target = match calls::target_with(params, &self.config.tools, arguments) {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        // A call that becomes a task with its handler's next outcome is refused before
        // that round runs (and before its state is opened) when no task can be made: a
        // refused task never runs its handler.
        if as_task && let Err(e) = self.room_for_task(&target, Era::Modern, caps) {
            return Some(Err(e));
        }
        let single_use =
            (self.config.tools.iter()).any(|t| t.name == target.name && t.single_use_state);
        let principal = self.principal.clone();
        let binding = Binding {
            now,
            principal: principal.as_deref(),
            method: "tools/call",
            name: &target.name,
            arguments: bound_arguments.then_some(&target.arguments),
            single_use,
        };
        let (round, inputs) = match self.resume(&binding, params) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let progress = super::legacy::progress_token(params);
        let work = self.new_work();
        let (outcome, deferral) = calls::invoke(
            &mut self.config.tools,
            &target,
            &inputs,
            (Era::Modern, round),
            caps,
            (progress.as_ref(), &self.deferred_queue, work),
        );
        let log_level = if self.config.logging {
            params
                .get("_meta")
                .and_then(|m| m.get(LOG_LEVEL))
                .and_then(Value::as_str)
                .and_then(crate::client::LogLevel::parse)
        } else {
            None
        };
        let call = ModernCall {
            request: id.clone(),
            target,
            inputs,
            round,
            version,
            caps: Cow::Borrowed(caps),
            progress,
            log_level,
            principal,
            single_use,
            bound_arguments,
            as_task,
        };
        self.modern_act(now, call, outcome, deferral)
    }

    /// Acts on the outcome of a modern call's handler (now, or when its deferred work
    /// completed): answers it, asks for input with an `input_required` result, makes
    /// it a task, or parks it until its work completes (`None`, as for no answer).
    pub(super) fn modern_act(
        &mut self,
        now: Instant,
        call: ModernCall<'_>,
        outcome: ToolOutcome,
        deferral: Option<Deferral>,
    ) -> Option<Result<Answer, ErrorObject>> {
        let outcome = match outcome {
            ToolOutcome::Deferred if call.as_task && deferral.is_some() => {
                // The task is made now and shows `working` until the work completes.
                let first = Some((ToolOutcome::Deferred, call.inputs, call.round));
                let task = self.start_task(call.target, Era::Modern, &call.caps, first, deferral);
                return Some(task.map(|t| Answer::Value(as_created(t))));
            }
            ToolOutcome::Deferred => {
                let Some(deferral) = deferral else {
                    let e = "the tool call cannot be deferred here";
                    return Some(Err(ErrorObject::new(codes::INTERNAL_ERROR, e)));
                };
                // All it keeps counts: arguments, answers, the client's capabilities (no
                // more of them than a session keeps), its id and progress token.
                let caps = match super::legacy::capabilities_kept(&call.caps, "a deferred call") {
                    Ok(size) => size,
                    Err(e) => {
                        deferral.cancel();
                        return Some(Err(e));
                    }
                };
                let id = match &call.request {
                    RequestId::String(s) => s.len(),
                    RequestId::Number(_) => 8,
                };
                let bytes = held_bytes(&call.target.arguments)
                    + (call.inputs.iter())
                        .map(|(k, v)| k.len() + held_bytes(v))
                        .sum::<usize>()
                    + caps
                    + id
                    + call.progress.as_ref().map_or(0, held_bytes);
                let request = call.request.clone();
                let parked = Kind::Modern(Box::new(call.into_owned()));
                return match self.park_deferred(deferral, request, bytes, parked) {
                    Ok(()) => None,
                    Err(e) => Some(Err(e)),
                };
            }
            ToolOutcome::NeedInput(asks) => ToolOutcome::NeedInput(asks),
            other if call.as_task => {
                let first = Some((other, call.inputs, call.round));
                let task = self.start_task(call.target, Era::Modern, &call.caps, first, None);
                return Some(task.map(|t| Answer::Value(as_created(t))));
            }
            other => other.now(),
        };
        let asks = match outcome {
            ToolOutcome::NeedInput(asks) => asks,
            ToolOutcome::Done(v) => {
                return Some(calls::done(&call.target.name, v).map(Answer::Value));
            }
            ToolOutcome::DoneText { text, is_error } => {
                return Some(Ok(Answer::Text { text, is_error }));
            }
            ToolOutcome::DoneWithNotes { notes, result } => {
                self.send_notes(&notes, call.log_level, call.progress.as_ref());
                return Some(calls::done(&call.target.name, result).map(Answer::Value));
            }
            ToolOutcome::Error(e) => return Some(Err(e)),
            // `now()` left no delay; a deferral was taken above.
            ToolOutcome::NoAnswer | ToolOutcome::After { .. } | ToolOutcome::Deferred => {
                return None;
            }
        };
        let binding = Binding {
            now,
            principal: call.principal.as_deref(),
            method: "tools/call",
            name: &call.target.name,
            arguments: call.bound_arguments.then_some(&call.target.arguments),
            single_use: call.single_use,
        };
        let round = Round {
            name: &call.target.name,
            round: call.round,
            inputs: call.inputs,
        };
        Some(
            self.ask(&binding, round, &asks, &call.caps, call.version)
                .map(Answer::Value),
        )
    }

    /// A modern `prompts/get`, first try or MRTR retry: the prompt's handler may ask for
    /// input as a tool's does, and the state is bound to the prompt and its arguments.
    fn modern_prompt(
        &mut self,
        now: Instant,
        params: &Params,
        version: ProtocolVersion,
        caps: &Value,
    ) -> Result<Value, ErrorObject> {
        let (name, arguments) = self.prompt_target(params)?;
        // Prompt arguments are a few short strings: a copy as a `Value` costs nothing.
        let bound_arguments = Value::Object(arguments.clone());
        let principal = self.principal.clone();
        let binding = Binding {
            now,
            principal: principal.as_deref(),
            method: "prompts/get",
            name: &name,
            arguments: Some(&bound_arguments),
            single_use: false,
        };
        let (round, inputs) = self.resume(&binding, params)?;
        let asks = match self.invoke_prompt(&name, &arguments, &inputs, (Era::Modern, round), caps)
        {
            ToolOutcome::NeedInput(asks) => asks,
            other => return self.prompt_answer(&name, other),
        };
        let round = Round {
            name: &name,
            round,
            inputs,
        };
        self.ask(&binding, round, &asks, caps, version)
    }

    /// The rounds so far of a request that may ask for input: its `requestState` opened
    /// against its `binding` (it must be a state of the same method and name), with the
    /// `inputResponses` of the last round added. Every `inputResponses` value must be an
    /// object.
    fn resume(
        &mut self,
        binding: &Binding<'_>,
        params: &Params,
    ) -> Result<(u32, Map<String, Value>), ErrorObject> {
        let bad_state = |why: StateRefusal| invalid(format!("Invalid requestState: {why}"));
        // The answers are checked before the state is opened: opening a single-use state
        // consumes it, and a retry refused for its answers must leave it usable.
        let answers = match params.get("inputResponses") {
            None => None,
            Some(Value::Object(answers)) => {
                if let Some((key, _)) = answers.iter().find(|(_, a)| !a.is_object()) {
                    return Err(invalid(format!(
                        "`inputResponses.{}` must be an object (an ElicitResult, \
                         CreateMessageResult or ListRootsResult)",
                        calls::clipped(key)
                    )));
                }
                Some(answers)
            }
            Some(_) => return Err(invalid("`inputResponses` must be an object")),
        };
        // With a state, only keys asked in its last round count. Without one (a first
        // try carrying answers, as for an ephemeral request), every key goes to the
        // handler, which takes the keys it knows: the client claims no more than it
        // could by answering the rounds one by one. Not for a single-use tool, whose
        // answers must come with a state opened once (else a first try with answers
        // would replay its effect at will).
        let stateless = params.get("requestState").is_none() && !binding.single_use;
        let most = (self.config.limits.max_inputs_per_round)
            .saturating_mul(self.config.limits.max_input_rounds as usize);
        if let Some(answers) = answers
            && stateless
            && answers.len() > most
        {
            return Err(invalid(format!(
                "`inputResponses` carries {} answers; a call is asked for at most \
                 {most} ({} per round, {} rounds)",
                answers.len(),
                self.config.limits.max_inputs_per_round,
                self.config.limits.max_input_rounds
            )));
        }
        let (round, asked, mut inputs) = match params.get("requestState") {
            None => (0, Vec::new(), Map::new()),
            Some(Value::String(token)) => {
                match self.config.state_codec.open(&binding.context(), token) {
                    Ok(s) if s.method == binding.method && s.name == binding.name => {
                        (s.round, s.asked, s.inputs)
                    }
                    Ok(_) => return Err(bad_state(StateRefusal::OtherRequest)),
                    // The server's trouble, not the client's: an internal error it may
                    // retry, not "invalid".
                    Err(why @ StateRefusal::Unrecorded(_)) => {
                        return Err(ErrorObject::new(
                            codes::INTERNAL_ERROR,
                            format!("requestState refused: {why}; retry later"),
                        ));
                    }
                    Err(why) => return Err(bad_state(why)),
                }
            }
            Some(_) => return Err(bad_state(StateRefusal::Malformed)),
        };
        for (key, answer) in answers.into_iter().flatten() {
            if stateless || asked.contains(key) {
                inputs.insert(key.clone(), answer.clone());
            }
        }
        Ok((round, inputs))
    }

    /// The `input_required` result for `asks`, with the state of the next round sealed
    /// for its `binding`; or the error to answer instead (a limit broken, a capability the
    /// client lacks: `-32021`).
    fn ask(
        &mut self,
        binding: &Binding<'_>,
        done: Round<'_>,
        asks: &[(String, InputRequestSpec)],
        caps: &Value,
        version: ProtocolVersion,
    ) -> Result<Value, ErrorObject> {
        if let Some(reply) = calls::refuse(done.name, asks, done.round, &self.config.limits) {
            return reply;
        }
        if let Some(missing) = calls::missing_capabilities(caps, asks, version) {
            let names = calls::missing_names(&missing);
            return Err(ErrorObject::new(
                codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("Missing required client capability: {}", names.join(", ")),
            )
            .with_data(json!({"requiredCapabilities": missing})));
        }
        if json_size_within(&done.inputs, MAX_SEALED_STATE_BYTES).is_none() {
            // Too long for a state whatever the codec: refused before sealing, which
            // would cost time in proportion to all of it.
            return Err(state_too_long(format!(
                "more than {MAX_SEALED_STATE_BYTES} bytes as JSON"
            )));
        }
        let mut requests = Map::new();
        for (key, spec) in asks {
            let (method, p) = calls::render(spec, version);
            let mut request = json!({"method": method});
            if let (Some(p), Some(obj)) = (p, request.as_object_mut()) {
                obj.insert("params".to_owned(), p);
            }
            requests.insert(key.clone(), request);
        }
        let asked = asks.iter().map(|(k, _)| k.clone()).collect();
        let state = RequestState::new(
            binding.method,
            done.name,
            done.round.saturating_add(1),
            asked,
            done.inputs,
        );
        let token = self.config.state_codec.seal(&binding.context(), &state);
        if token.len() > MAX_SEALED_STATE_BYTES {
            // Issued, it would be refused when it comes back: the call could never go on.
            let size = token.len();
            return Err(state_too_long(format!("{size} bytes as `requestState`")));
        }
        Ok(json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": token,
        }))
    }
}

/// The `-32602` for answers that take `size`, more than a `requestState` may hold.
fn state_too_long(size: String) -> ErrorObject {
    invalid(format!(
        "the answers this call carries take {size}, over the {MAX_SEALED_STATE_BYTES} \
         bytes a `requestState` may hold"
    ))
}

/// A 2026 tool call between its handler's runs: what answering it, asking for more
/// input or making it a task needs. Borrowed from the request while it is handled;
/// owned while it waits for deferred work.
#[derive(Debug)]
pub(crate) struct ModernCall<'a> {
    pub(crate) request: RequestId,
    target: Target,
    inputs: Map<String, Value>,
    round: u32,
    version: ProtocolVersion,
    caps: Cow<'a, Value>,
    progress: Option<Value>,
    log_level: Option<crate::client::LogLevel>,
    principal: Option<String>,
    single_use: bool,
    bound_arguments: bool,
    as_task: bool,
}

impl ModernCall<'_> {
    /// The same call, owning what it borrowed.
    fn into_owned(self) -> ModernCall<'static> {
        ModernCall {
            caps: Cow::Owned(self.caps.into_owned()),
            request: self.request,
            target: self.target,
            inputs: self.inputs,
            round: self.round,
            version: self.version,
            progress: self.progress,
            log_level: self.log_level,
            principal: self.principal,
            single_use: self.single_use,
            bound_arguments: self.bound_arguments,
            as_task: self.as_task,
        }
    }
}

/// What a request's `requestState` is bound to: the principal, the method, the name (tool
/// or prompt) and its arguments. The digest of the arguments is taken only when a state is
/// opened or sealed: a request that never asks for input (most of them) does not pay for
/// serialising and hashing its arguments.
struct Binding<'a> {
    now: Instant,
    principal: Option<&'a str>,
    method: &'static str,
    name: &'a str,
    arguments: Option<&'a Value>,
    single_use: bool,
}

impl Binding<'_> {
    /// The context a codec seals and opens against. The important parameters serialise
    /// as the JSON array `[name, arguments]` (`null` when there are none).
    fn context(&self) -> StateContext<'_> {
        let important = serde_json::to_vec(&(self.name, self.arguments)).unwrap_or_default();
        StateContext::new(self.now, self.principal, self.method, &important)
            .single_use(self.single_use)
    }
}

/// A task's record as a 2026 `CreateTaskResult`.
fn as_created(mut task: Value) -> Value {
    if let Some(o) = task.as_object_mut() {
        o.insert("resultType".into(), json!("task"));
    }
    task
}

/// Where a request that asks for input stands: its name (tool or prompt), the rounds
/// completed and the answers gathered.
struct Round<'a> {
    name: &'a str,
    round: u32,
    inputs: Map<String, Value>,
}

/// The members of a JSON object being written: a comma before each but the first.
struct Members<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Members<'a> {
    fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Members { out, first: true }
    }

    /// Writes `"key":` (after a comma if needed) and returns the buffer for the value.
    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !std::mem::take(&mut self.first) {
            self.out.push(b',');
        }
        write_str(self.out, key);
        self.out.push(b':');
        self.out
    }

    fn value(&mut self, key: &str, value: &Value) {
        write_value(self.key(key), value);
    }

    /// A member whose value is JSON text already.
    fn raw(&mut self, key: &str, json: &[u8]) {
        self.key(key).extend_from_slice(json);
    }

    /// A `_meta` member holding only the server's `serverInfo` (`info`, its JSON).
    fn server_meta(&mut self, info: &[u8]) {
        let mut inner = Members::open(self.key("_meta"));
        inner.raw(SERVER_INFO, info);
        inner.close();
    }

    fn close(self) {
        self.out.push(b'}');
    }
}
