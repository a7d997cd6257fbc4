//! The server machine: one MCP server over stdio (or any message transport), serving the
//! legacy era (2025-06-18, 2025-11-25) and the modern era (2026-07-28) in one process.
//!
//! # Theory of operation
//!
//! Input is bytes ([`Server::handle_input`]), whole JSON texts ([`Server::handle_json`])
//! or decoded messages ([`Server::handle_message`]); end of input is an input too
//! ([`Server::handle_eof`]). Everything the server says is queued as complete JSON
//! messages and drained with [`Server::poll_transmit`] (framed lines) or
//! [`Server::poll_message`] (one message at a time). Tool handlers are synchronous, so
//! every reply they can produce is queued before the input call returns, except for a
//! call whose handler deferred its work ([`ToolOutcome::Deferred`]): it is answered once
//! its [`Completer`] completes and the driver calls [`Server::handle_deferred`] (woken by
//! [`Server::set_deferred_waker`]). Time matters only to tasks and deferred work:
//! [`Server::poll_timeout`] says when [`Server::handle_timeout`] is next due (a task
//! outcome held behind a delay, a held `tasks/result` expiring, completed deferred work
//! at once).
//!
//! **Framing.** Lines come out of a bounded [`LineDecoder`]. A line that is not JSON gets
//! `-32700` with id `null`; one that is JSON but not JSON-RPC, one nested deeper than
//! [`ServerLimits::max_nesting_depth`] (checked before decoding) and an oversized one get
//! `-32600`, with the id when it can be read (for an oversized line, from its first or
//! last bytes). (The TypeScript and Python SDK servers drop such lines silently; JSON-RPC
//! 2.0 asks for the error.) When such a message is the client's answer to one of our
//! requests, the tool call waiting for it fails instead.
//!
//! **Era, per message.** As a dual-era server does, the era is decided for each request:
//!
//! * `initialize` is legacy, unless its `_meta` carries
//!   `io.modelcontextprotocol/protocolVersion`: then it is a modern request for a method
//!   2026-07-28 removed, and gets `-32601`;
//! * `server/discover`, and any request whose `params._meta` carries
//!   `io.modelcontextprotocol/protocolVersion` or `…/clientCapabilities`, is modern and is
//!   served statelessly at any time, before or after `initialize` (`modern.rs`);
//! * anything else is legacy: before `initialize` only `ping` is answered, the rest gets
//!   `-32600` "Server not initialized" (`legacy.rs`).
//!
//! When the configuration serves no modern version the modern leg is off (every request is
//! legacy); when it serves no legacy version every request but `initialize` is modern.
//!
//! **State.** The only connection state is the legacy session (negotiated version, the
//! client's capabilities, set once by `initialize`, its log level and subscriptions) and the legacy tool calls waiting for
//! answers to server→client requests. Modern requests never read or write it: what a
//! modern tool call needs across rounds travels in `requestState` ([`RequestStateCodec`]).
//!
//! **Results.** A handler answers with [`ToolOutcome::Done`] and the `CallToolResult`
//! JSON, or, for the common result of one text block, [`ToolOutcome::text`] /
//! [`ToolOutcome::error_text`] ([`ToolOutcome::DoneText`]): the same result on the wire,
//! its text written straight into the reply instead of built as a JSON value first.
//!
//! **Tool input.** A handler that needs the user returns [`ToolOutcome::NeedInput`]. In
//! the legacy era the machine sends one `elicitation/create` (or `sampling/createMessage`,
//! `roots/list`) request per key with its own integer ids (from 0), parks the call, and
//! calls the handler again once every answer is in; an error answer fails the call with
//! an `isError` result, and a missing client capability does the same (as the TypeScript
//! SDK's `McpServer` does). In the modern era the answer is an `input_required` result
//! and the client's retry (new id, `inputResponses`, `requestState`) resumes the call;
//! a missing capability is `-32021`. `notifications/cancelled` drops a parked call
//! (and cancels the server's own outstanding requests for it); nothing is sent for it
//! afterwards.
//!
//! **Notifications from tools.** A handler may return log messages and progress with its
//! result ([`ToolOutcome::DoneWithNotes`]); they are queued before the result, so over
//! HTTP they share the request's SSE stream. Log messages need [`ServerConfig::logging`]
//! and the client's consent: legacy, every level until `logging/setLevel`, then those at
//! or above it; modern, only with `_meta` `io.modelcontextprotocol/logLevel`. Progress
//! needs the request's `_meta.progressToken`. Handlers see the client's capabilities
//! ([`ToolCall::client_capabilities`]) and ask only for what it can give.
//!
//! **Prompts that ask.** A prompt made with [`Prompt::with_input`] asks for input in the
//! modern era exactly as a tool does (`input_required`, then a retry with `requestState`
//! bound to the prompt and its arguments). A legacy `prompts/get` is answered at once.
//!
//! **Changes and subscriptions** (`notify.rs`). The application changes the catalog
//! ([`Server::add_tool`], …) or reports a change ([`Server::list_changed`],
//! [`Server::resource_updated`]); the legacy session hears of list changes with
//! [`ServerConfig::list_changed`], and of resources it subscribed to with
//! [`ServerConfig::resource_subscriptions`] (at most [`ServerLimits::max_subscriptions`]).
//! A 2026-07-28 `subscriptions/listen` stays open and carries what it asked for, each
//! notification tagged with its id, until the client cancels it or
//! [`Server::end_subscriptions`].
//!
//! **Bounds.** Input memory is one partial line ([`ServerLimits::max_line_bytes`]); parked
//! calls are bounded by [`ServerLimits::max_pending_inputs`], rounds by
//! [`ServerLimits::max_input_rounds`]. The output queue holds only what answers input
//! already handed in, deferred work completed and the application's own changes, so it
//! is bounded by what the caller feeds between drains.

use crate::Instant;
use std::collections::VecDeque;

use serde_json::{Map, Value, json};

use crate::client::{ConnId, Transmit};
use crate::jsonrpc::{
    self, DecodeError, ErrorObject, Message, Notification, Request, RequestId, Response, codes,
};
use crate::stdio::{Line, LineDecoder, frame};
use crate::version::ProtocolVersion;

mod calls;
mod catalog;
mod config;
pub mod deferred;
pub mod example;
pub mod http;
mod legacy;
mod meta_cache;
mod modern;
mod notify;
mod registry;
mod seal;
mod skills;
mod state;
mod task_events;
pub mod tasks;
#[cfg(test)]
mod tests;

pub use config::{CacheScope, CompletionHandler, ResourceReader, ServerConfig, ServerLimits};
pub use deferred::Completer;
pub use legacy::MAX_CLIENT_CAPABILITIES_BYTES;
pub use notify::ListKind;
pub use registry::{
    InputRequestSpec, Prompt, PromptArgument, PromptCall, PromptHandler, Resource, Tool, ToolCall,
    ToolHandler, ToolNote, ToolOutcome,
};
pub use seal::{
    ConsumeRefusal, ConsumptionStore, DEFAULT_STATE_TTL, InvalidKeyId, KeyRing, MAX_KEY_ID_BYTES,
    MAX_SEALED_STATE_BYTES, MemoryConsumptionStore, SealedStateCodec,
};
pub use skills::ServedSkill;
pub use state::{PlainStateCodec, RequestState, RequestStateCodec, StateContext, StateRefusal};

/// Request params as an object (absent params are an empty object).
type Params = Map<String, Value>;

/// A request's params read once: absent ones as an empty object, `None` when they are
/// JSON but no object (each caller refuses that its own way), and an error naming why
/// for JSON this reading refuses (a number out of range, a lone surrogate), which is
/// neither absent nor the wrong shape.
pub(crate) fn read_params(
    raw: Option<&serde_json::value::RawValue>,
) -> Result<Option<Params>, ErrorObject> {
    match raw.map(|p| serde_json::from_str(p.get())) {
        None => Ok(Some(Map::new())),
        Some(Ok(Value::Object(map))) => Ok(Some(map)),
        Some(Ok(_)) => Ok(None),
        Some(Err(why)) => Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("`params`: {why}"),
        )),
    }
}

/// A sans-IO MCP server serving both eras. See the [module docs](self).
#[derive(Debug)]
pub struct Server {
    config: ServerConfig,
    decoder: LineDecoder,
    outbound: VecDeque<Vec<u8>>,
    /// The legacy session, once `initialize` succeeded.
    session: Option<legacy::Session>,
    /// Legacy tool calls waiting for the client's answers.
    pending: Vec<legacy::PendingCall>,
    /// The next id of a server→client request.
    next_out_id: i64,
    /// The authenticated principal of the input being handled ([`Server::set_principal`]).
    principal: Option<String>,
    eof: bool,
    /// The end of the channel was handed out.
    close_reported: bool,
    /// Tasks of the tools that run as tasks.
    tasks: tasks::TaskStore,
    /// The `now` of the input being handled (tasks are due, and expire, against it).
    now: Instant,
    /// Open 2026 `subscriptions/listen` requests.
    listens: Vec<notify::Listen>,
    /// The changes reported while a change log is open (the HTTP endpoint's).
    changes: Option<Vec<notify::Change>>,
    /// `config.info` as JSON text, for the `_meta` of every 2026 result.
    info_json: Vec<u8>,
    /// The `_meta` of the last request read by [`Server::handle_json`].
    meta: Option<meta_cache::MetaCache>,
    /// Where completers put the outcomes of deferred work.
    deferred_queue: std::sync::Arc<deferred::Queue>,
    /// The entries of `config.skills`, in order, as `skills/list` carries them.
    skill_entries: Vec<Value>,
    /// The number of the next invocation's work.
    next_work: u64,
    /// Calls waiting for deferred work, by its number.
    deferred: deferred::ParkedCalls,
}

/// Bytes reserved for an encoded result before it is written: a small answer (an echo,
/// a short text) fits without the buffer growing on the way.
const RESULT_PREALLOC: usize = 256;

impl Server {
    /// A server with this configuration.
    #[must_use]
    pub fn new(config: ServerConfig) -> Server {
        Server {
            decoder: LineDecoder::new(config.limits.max_line_bytes),
            // Serializing plain strings cannot fail; `{}` keeps the JSON whole regardless.
            info_json: serde_json::to_vec(&config.info).unwrap_or_else(|_| b"{}".to_vec()),
            skill_entries: config.skills.iter().map(ServedSkill::entry).collect(),
            config,
            outbound: VecDeque::new(),
            session: None,
            pending: Vec::new(),
            next_out_id: 0,
            principal: None,
            eof: false,
            close_reported: false,
            tasks: tasks::TaskStore::default(),
            now: Instant::ZERO,
            listens: Vec::new(),
            changes: None,
            meta: None,
            deferred_queue: std::sync::Arc::default(),
            next_work: 0,
            deferred: deferred::ParkedCalls::default(),
        }
    }

    /// Sets the authenticated principal of the requests handed in from now on (as the
    /// embedding application established it: a verified token's subject, the local
    /// user of a stdio pipe, …; never anything the client merely claims). A sealed
    /// `requestState` is bound to it: a state issued to one principal does not open for
    /// another.
    pub fn set_principal(&mut self, principal: Option<String>) {
        self.principal = principal;
    }

    /// Makes sure `requestState` is sealed: when the configured codec does not protect
    /// what it seals (the default [`PlainStateCodec`]), it is replaced with a
    /// [`SealedStateCodec`] under a key drawn from `seed` (32 bytes from a real entropy
    /// source), with expiries placed on the Unix clock by `epoch_unix_ms` (the Unix time
    /// in milliseconds at `Instant::ZERO`). A codec of the caller's own, such as a
    /// [`SealedStateCodec`] with a key ring shared by several instances, is kept. The
    /// adapters' serve functions call it.
    pub fn seal_request_states(&mut self, seed: [u8; 32], epoch_unix_ms: u64) {
        if self.config.state_codec.protects() {
            return;
        }
        let secret = crate::auth::crypto::hmac_sha256(&seed, &[b"requestState key"]);
        let Ok(ring) = KeyRing::new("k0", secret) else {
            return;
        };
        self.config.state_codec = Box::new(SealedStateCodec::new(ring, &seed, epoch_unix_ms));
    }

    /// Replaces the `requestState` codec, for a server that is already serving: how a
    /// key ring is rotated (a [`SealedStateCodec`] over a ring that still holds the
    /// previous keys keeps opening the states they sealed). The record of single-use
    /// states already used goes over to the new codec
    /// ([`RequestStateCodec::take_over_used_states`]), unless it was given a
    /// [`ConsumptionStore`] of its own (one shared by every process sees them anyway):
    /// a state used before the swap is refused after it. Nothing else changes.
    pub fn set_state_codec(&mut self, mut codec: Box<dyn RequestStateCodec>) {
        if let Some(used) = self.config.state_codec.hand_over_used_states() {
            codec.take_over_used_states(used);
        }
        self.config.state_codec = codec;
    }

    /// Makes task ids unguessable and task times real: ids become 128-bit values keyed
    /// by `seed` (32 bytes from a real entropy source) instead of `task-1`, `task-2`, …,
    /// and `createdAt` / `lastUpdatedAt` are placed on the Unix clock by `epoch_unix_ms`
    /// (the Unix time in milliseconds at `Instant::ZERO`). The adapters' serve functions
    /// call it. See the [`tasks`] module.
    pub fn seed_tasks(&mut self, seed: [u8; 32], epoch_unix_ms: u64) {
        self.tasks.seed(&seed, epoch_unix_ms);
    }

    /// Makes task ids unguessable with `seed` unless [`Server::seed_tasks`] did: what an
    /// endpoint given entropy does for a server that was not seeded.
    pub(crate) fn key_task_ids(&mut self, seed: &[u8]) {
        self.tasks.key_ids(seed);
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The version negotiated by a legacy `initialize`, if one succeeded.
    #[must_use]
    pub fn legacy_version(&self) -> Option<ProtocolVersion> {
        self.session.as_ref().map(|s| s.version)
    }

    /// Feeds bytes read from the transport (newline-delimited JSON, any chunking).
    /// Drain [`Server::poll_transmit`] afterwards. Ignored after end of input.
    pub fn handle_input(&mut self, now: Instant, bytes: &[u8]) {
        if self.eof {
            return;
        }
        self.decoder.handle_input(bytes);
        loop {
            let line = match self.decoder.poll_line() {
                None => break,
                Some(Line::Message(m)) => m.to_vec(),
                Some(Line::Oversized { head, tail, .. }) => {
                    let mut sniffed = jsonrpc::sniff(head);
                    // A `method` written last makes it a request, whatever its id says
                    // (never the answer to one of the server's requests).
                    sniffed.has_method |= jsonrpc::sniff_trailing_method(tail);
                    if sniffed.id.is_none() {
                        sniffed.id = jsonrpc::sniff_trailing_id(tail);
                    }
                    let limit = self.config.limits.max_line_bytes;
                    let e = ErrorObject::new(
                        codes::INVALID_REQUEST,
                        format!("Invalid request: message longer than {limit} bytes"),
                    );
                    self.refuse(&sniffed, e);
                    continue;
                }
            };
            self.handle_json(now, &line);
        }
    }

    /// The transport reached end of input. A truncated last line is dropped, parked
    /// calls are abandoned (deferred work is told: [`Completer::is_cancelled`]), and
    /// later input is ignored. Queued output stays drainable.
    pub fn handle_eof(&mut self, _now: Instant) {
        self.eof = true;
        self.deferred.cancel_all();
        self.pending.clear();
        self.listens.clear();
        self.tasks.unhold_all();
    }

    /// Feeds one whole JSON-RPC message (for transports with their own framing). It is
    /// checked against [`ServerLimits::max_nesting_depth`] before it is decoded.
    pub fn handle_json(&mut self, now: Instant, json: &[u8]) {
        if let Err(e) = self.admit(json) {
            self.refuse(&jsonrpc::sniff(json), e);
            return;
        }
        // A request with object params (nearly every message a server gets) is read in
        // one pass, its params straight into the map the handling works on; anything
        // else, or anything wrong, takes the general path, which names the error.
        if let Some((request, split)) = self.split_request(json) {
            let serve =
                |s: &mut Server, params: &mut Params| s.serve_parsed(now, request, params, None);
            if meta_cache::with_lent_meta(self, |s| s, split, serve).is_some() {
                return;
            }
        }
        match Message::decode(json) {
            Ok(message) => self.dispatch(now, message),
            Err(DecodeError::Json(_)) => {
                self.send_error(None, &ErrorObject::new(codes::PARSE_ERROR, "Parse error"));
            }
            Err(e) => {
                let e = ErrorObject::new(codes::INVALID_REQUEST, format!("Invalid request: {e}"));
                self.refuse(&jsonrpc::sniff(json), e);
            }
        }
    }

    /// Whether a message's text may be parsed: nested no deeper than
    /// [`ServerLimits::max_nesting_depth`] and taking no more than
    /// [`ServerLimits::max_parsed_bytes`] once parsed, both checked in linear passes over
    /// the text. The error is the `-32600` to answer it with.
    pub(crate) fn admit(&self, json: &[u8]) -> Result<(), ErrorObject> {
        let limits = &self.config.limits;
        jsonrpc::check_untrusted_json(json, limits.max_nesting_depth, limits.max_parsed_bytes)
            .map_err(|e| ErrorObject::new(codes::INVALID_REQUEST, format!("Invalid request: {e}")))
    }

    /// Feeds one decoded message. Ignored after end of input. A message nested deeper
    /// than [`ServerLimits::max_nesting_depth`], or whose params or result would take
    /// more than [`ServerLimits::max_parsed_bytes`] once parsed, is refused like an
    /// undecodable one.
    pub fn handle_message(&mut self, now: Instant, message: Message) {
        if self.eof {
            return;
        }
        let limits = &self.config.limits;
        let verbatim = match &message {
            Message::Request(r) => r.params.as_deref(),
            Message::Notification(n) => n.params.as_deref(),
            Message::Response(r) => r.outcome.as_deref().ok(),
        };
        // Nesting on the whole message (an error's data was decoded already), size and
        // names on the text the server will parse.
        let checked = message
            .check_nesting(limits.max_nesting_depth)
            .and_then(|()| {
                let max = limits.max_parsed_bytes;
                let text = verbatim.map_or(&b""[..], |raw| raw.get().as_bytes());
                crate::held::check_parse(text, max)
                    .map_err(|why| jsonrpc::DecodeError::unparsable(why, max))
            });
        if let Err(e) = checked {
            let e = ErrorObject::new(codes::INVALID_REQUEST, format!("Invalid request: {e}"));
            match message {
                Message::Request(r) => self.send_error(Some(&r.id), &e),
                Message::Response(r) => {
                    let sniffed = jsonrpc::Sniffed {
                        id: r.id,
                        has_method: false,
                        whole: true,
                    };
                    self.refuse(&sniffed, e);
                }
                // Nobody waits for an answer to a notification.
                _ => {}
            }
            return;
        }
        self.dispatch(now, message);
    }

    /// A decoded message within the limits.
    fn dispatch(&mut self, now: Instant, message: Message) {
        if self.eof {
            return;
        }
        self.now = self.now.max(now);
        match message {
            Message::Request(r) => self.on_request(now, r),
            Message::Notification(n) => self.on_notification(&n),
            Message::Response(r) => self.legacy_response(r),
        }
        self.after_input();
    }

    /// A message that cannot be served. An answer to one of our requests fails the
    /// tool call waiting for it; anything else gets `error`, with the message's id when
    /// it could be read.
    fn refuse(&mut self, sniffed: &jsonrpc::Sniffed, error: ErrorObject) {
        if !sniffed.has_method
            && let Some(id) = &sniffed.id
            && self.is_awaited(id)
        {
            let outcome = Err(error);
            self.legacy_response(Response {
                id: Some(id.clone()),
                outcome,
            });
            return;
        }
        if sniffed.whole && !sniffed.has_method && sniffed.id.is_some() {
            // A response, malformed, to nothing this server asked: an error carrying its
            // id would read, to the client, as the answer to its own request of that id.
            let error = ErrorObject::new(
                error.code,
                format!(
                    "{} (in a response to no request of the server)",
                    error.message
                ),
            );
            self.send_error(None, &error);
            return;
        }
        self.send_error(sniffed.id.as_ref(), &error);
    }

    /// What to do with the stdio channel next, as the client machine says it: every
    /// queued message appended to `out` as newline-terminated lines
    /// ([`Transmit::Write`] with their length), then, once end of input was handled and
    /// everything was written, [`Transmit::Close`] (stop serving). Call until `None`.
    pub fn poll_transmit(&mut self, _now: Instant, out: &mut Vec<u8>) -> Option<Transmit> {
        let before = out.len();
        while let Some(message) = self.outbound.pop_front() {
            frame(out, &message);
        }
        if out.len() > before {
            return Some(Transmit::Write {
                conn: ConnId::STDIO,
                len: out.len() - before,
            });
        }
        if self.eof && !self.close_reported {
            self.close_reported = true;
            return Some(Transmit::Close {
                conn: ConnId::STDIO,
            });
        }
        None
    }

    /// The next queued message as compact JSON without a line end.
    #[must_use]
    pub fn poll_message(&mut self) -> Option<Vec<u8>> {
        self.outbound.pop_front()
    }

    /// True once end of input was handled and all output drained: the adapter may stop.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.eof && self.outbound.is_empty()
    }

    /// A request whose `params` the caller already read into `params` (an object; empty
    /// when absent) from a message it checked against this server's nesting limit, as
    /// [`Server::handle_message`] does: the same handling without reading the params a
    /// second time. `req.params` is not looked at; what the handling leaves in `params`
    /// (a lent `_meta`) stays with the caller. `modern`: whether the request is served by
    /// the modern leg, when the caller already knows ([`Server::is_modern`] of the same
    /// method and params); `None` to have it found.
    pub(crate) fn serve_parsed(
        &mut self,
        now: Instant,
        req: Request,
        params: &mut Params,
        modern: Option<bool>,
    ) {
        if self.eof {
            return;
        }
        self.now = self.now.max(now);
        let modern = modern.unwrap_or_else(|| self.is_modern(&req.method, params));
        debug_assert_eq!(modern, self.is_modern(&req.method, params));
        self.on_parsed_request(now, req, params, modern);
        self.after_input();
    }

    fn on_request(&mut self, now: Instant, req: Request) {
        let mut params = match read_params(req.params.as_deref()) {
            Ok(Some(params)) => params,
            Ok(None) => {
                let e = ErrorObject::new(codes::INVALID_PARAMS, "`params` must be an object");
                return self.send_error(Some(&req.id), &e);
            }
            Err(e) => return self.send_error(Some(&req.id), &e),
        };
        let modern = self.is_modern(&req.method, &params);
        self.on_parsed_request(now, req, &mut params, modern);
    }

    fn on_parsed_request(&mut self, now: Instant, req: Request, params: &mut Params, modern: bool) {
        if modern {
            self.modern_request(now, &req.id, &req.method, params);
        } else {
            self.legacy_request(req.id, &req.method, params);
        }
    }

    fn on_notification(&mut self, n: &Notification) {
        let params: Option<Value> = n
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str(p.get()).ok());
        match n.method.as_str() {
            "notifications/initialized" => {
                if let Some(s) = &mut self.session {
                    s.initialized = true;
                }
            }
            "notifications/cancelled" => {
                if let Some(id) = params.as_ref().and_then(|p| id_of(p.get("requestId")?)) {
                    self.cancel_request(&id);
                }
            }
            _ => {}
        }
    }

    /// The client's request `id` is cancelled: what waits for it (a call parked for
    /// input or deferred work, a listen, a held `tasks/result`) is dropped.
    pub(crate) fn cancel_request(&mut self, id: &RequestId) {
        self.cancel_pending(id);
        self.cancel_deferred(id);
        self.cancel_listen(id);
        self.cancel_waiting(id);
    }

    fn reply(&mut self, id: &RequestId, reply: Result<Value, ErrorObject>) {
        match reply {
            Ok(v) => self.send_result(id, &v),
            Err(e) => self.send_error(Some(id), &e),
        }
    }

    fn send_result(&mut self, id: &RequestId, result: &Value) {
        // Room for a small answer at once, rather than growing from nothing through the
        // envelope, the id and the result.
        let mut buf = Vec::with_capacity(RESULT_PREALLOC);
        jsonrpc::encode_result_value(&mut buf, Some(id), result);
        self.outbound.push_back(buf);
    }

    /// Sends a [`ToolOutcome::DoneText`] result, its text written straight into the
    /// message.
    fn send_text_result(&mut self, id: &RequestId, text: &str, is_error: bool) {
        let mut buf = Vec::with_capacity(RESULT_PREALLOC + text.len());
        jsonrpc::write_result_head(&mut buf, Some(id));
        registry::write_text_result(&mut buf, text, is_error);
        buf.extend_from_slice(b"}}");
        self.outbound.push_back(buf);
    }

    fn send_error(&mut self, id: Option<&RequestId>, error: &ErrorObject) {
        let mut buf = Vec::new();
        jsonrpc::encode_error(&mut buf, id, error);
        self.outbound.push_back(buf);
    }

    /// Sends a server→client request and returns its id.
    fn send_request(&mut self, method: &str, params: Option<&Value>) -> RequestId {
        let id = RequestId::Number(self.next_out_id);
        self.next_out_id = self.next_out_id.wrapping_add(1);
        let params = params.map(jsonrpc::to_raw);
        let mut buf = Vec::new();
        jsonrpc::encode_request(&mut buf, &id, method, params.as_deref());
        self.outbound.push_back(buf);
        id
    }

    fn send_notification(&mut self, method: &str, params: &Value) {
        let mut buf = Vec::new();
        jsonrpc::encode_notification_value(&mut buf, method, params);
        self.outbound.push_back(buf);
    }

    /// Sends a tool's notes ahead of its result: log messages at or above `log_level`
    /// (none when `None`), progress only under a `progress_token`.
    fn send_notes(
        &mut self,
        notes: &[ToolNote],
        log_level: Option<crate::client::LogLevel>,
        progress_token: Option<&Value>,
    ) {
        // Progress MUST increase with every notification (and is a number): a note that
        // goes back, stands still or is not finite is not sent; a total that is not
        // finite is left out (JSON has no such number: it would go out as `null`).
        let mut last_progress: Option<f64> = None;
        for note in notes {
            match note {
                ToolNote::Log {
                    level,
                    logger,
                    data,
                } if log_level.is_some_and(|min| *level >= min) => {
                    let mut p = json!({"level": level.as_str(), "data": data});
                    if let (Some(l), Some(obj)) = (logger, p.as_object_mut()) {
                        obj.insert("logger".to_owned(), json!(l));
                    }
                    self.send_notification("notifications/message", &p);
                }
                ToolNote::Progress {
                    progress,
                    total,
                    message,
                } => {
                    let Some(token) = progress_token else {
                        continue;
                    };
                    if !progress.is_finite() || last_progress.is_some_and(|l| *progress <= l) {
                        continue;
                    }
                    last_progress = Some(*progress);
                    let mut p = json!({"progressToken": token, "progress": progress});
                    if let Some(obj) = p.as_object_mut() {
                        if let Some(t) = total.filter(|t| t.is_finite()) {
                            obj.insert("total".to_owned(), json!(t));
                        }
                        if let Some(m) = message {
                            obj.insert("message".to_owned(), json!(m));
                        }
                    }
                    self.send_notification("notifications/progress", &p);
                }
                ToolNote::Log { .. } => {}
            }
        }
    }

    fn send_cancelled(&mut self, id: &RequestId, reason: &str) {
        let params = jsonrpc::to_raw(&json!({"requestId": id, "reason": reason}));
        let mut buf = Vec::new();
        jsonrpc::encode_notification(&mut buf, "notifications/cancelled", Some(&params));
        self.outbound.push_back(buf);
    }
}

/// A request id from a JSON value: a string or an integer.
pub(crate) fn id_of(v: &Value) -> Option<RequestId> {
    match v {
        Value::String(s) => Some(RequestId::String(s.clone())),
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    }
}
