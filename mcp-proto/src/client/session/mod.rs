//! The protocol session under the client machine: era negotiation, calls in flight,
//! server requests, input rounds, pagination, deadlines. It speaks JSON-RPC messages and
//! knows nothing of connections; [`super::Client`] puts it on stdio or Streamable HTTP.
//!
//! # Theory of operation
//!
//! A session starts in `Connecting`: in [`EraMode::Auto`](crate::EraMode::Auto) it writes a `server/discover`
//! probe and waits for the answer (or the probe timeout, or the process exiting), hands
//! the outcome to [`crate::version::classify_probe`], and either settles on 2026-07-28 or
//! falls back to `initialize` + `notifications/initialized`. [`EraMode::Legacy`](crate::EraMode::Legacy) skips the
//! probe; [`EraMode::Modern`](crate::EraMode::Modern) probes but treats legacy evidence as a fatal error. Calls made
//! while connecting are queued and written the moment the session is `Ready`.
//!
//! Every call gets a stable [`CallId`]. On the wire it is a JSON-RPC request with a fresh
//! integer id; a 2026 call answered with `input_required` is re-sent under a new id each
//! round (with `inputResponses` and the byte-exact `requestState`), and a paginated
//! listing sends one request per page, all under the same `CallId`. Each call ends with
//! exactly one [`Event::CallCompleted`]: a result, a server error, a timeout (after
//! which `notifications/cancelled` is written and any late answer ignored), a
//! cancellation, or the connection closing.
//!
//! Requests for input (legacy `elicitation/create`, `sampling/createMessage` and
//! `roots/list` requests, and the entries of a 2026 `input_required` round) all surface
//! as [`Event::InputRequested`]. Requests for a capability the client did not declare are
//! refused on the spot with the right error. So are form elicitations whose schema is
//! outside the supported subset and URL-mode elicitations whose URL fails the URL policy
//! (legacy: a `-32602` answer; 2026: the entry is declined, since an input round has no
//! per-entry error). Roots configured in the [`ClientConfig`] are answered without asking
//! anyone. Answers are checked (a form answer against its schema, defaults applied)
//! before anything is sent. While a legacy server waits for the user, call deadlines are
//! paused, for at most [`Limits::max_input_rounds`](crate::Limits::max_input_rounds)
//! requests per call: from the next one on, that call's deadline runs again (credited
//! with the time it was paused so far), so a server that asks again and again, answered
//! by a handler with no person behind it, cannot hold a call past its timeout forever.
//!
//! A 2025-11-25 `-32042` (URL elicitation required) presents its elicitations as
//! input requests answered to nobody, then fails the call with
//! [`CallError::UrlElicitationRequired`]; `notifications/elicitation/complete` for an id
//! the client was shown becomes [`Event::ElicitationCompleted`]. `notifications/message`
//! becomes [`Event::Log`], with the call whose HTTP response stream it came on.
//!
//! In the 2026 era a listing whose pages carry `ttlMs` and `cacheScope` is kept in a
//! bounded list cache (`cache.rs`): a call for the same listing while it is fresh
//! completes at once, sending nothing; `notifications/*/list_changed` and a change of
//! authorization drop what they make stale. `ping` does not exist in that era and fails
//! locally with [`CallError::NotInVersion`], as do `resources/subscribe` and
//! `resources/unsubscribe`.
//!
//! Once the server's capabilities are known (its `initialize` result or its
//! `server/discover`), a request for a utility it did not declare is not sent: it fails
//! locally with [`CallError::NotDeclared`] naming the capability (`completions`,
//! `logging`, `resources.subscribe`, 2025-11-25 `tasks.list` and `tasks.cancel`). A call
//! made before then waits for them.
//!
//! A 2026 `subscriptions/listen` ([`CallRequest::listen`]) is a call without an end to
//! wait for (at most [`MAX_SUBSCRIPTIONS`] at once): only its acknowledgement is owed
//! within the call's timeout; a listen not acknowledged in time ends with
//! [`CallError::Timeout`]. Notifications whose
//! `_meta["io.modelcontextprotocol/subscriptionId"]` names its JSON-RPC id (or, over
//! HTTP, that arrive on its response stream) are its own: the acknowledgement becomes
//! [`Event::SubscriptionAcknowledged`] (with what was refused), the rest
//! [`Event::SubscriptionNotification`]. Its one completion is
//! [`Event::SubscriptionEnded`]: the `complete` result, a server `notifications/cancelled`
//! for its id, the client's cancel, or a failure. A stream that closes without the end
//! (HTTP) is not a failure: the listen is sent again after a backoff
//! ([`Event::SubscriptionReconnecting`]), at most [`MAX_LISTEN_RECONNECTS`] times in a row
//! without a stream that lasted [`LISTEN_STEADY`] after its acknowledgement. In the legacy
//! era a listen ends at once with [`CallError::NotInVersion`].
//!
//! A `tools/call` may come back as a task: a 2025-11-25 `CreateTaskResult` to a request
//! that carried `params.task`, or a 2026-07-28 `resultType: "task"` to one that declared
//! the `io.modelcontextprotocol/tasks` extension (anything else answered with a task
//! fails with [`crate::client::TaskProblem::NotOffered`]). The call then follows the task
//! to its end under the same [`CallId`] (`tasks.rs`): [`Event::TaskCreated`], an
//! [`Event::TaskStatus`] per change, polls at the server's interval, 2026 input requests
//! answered with `tasks/update`, the 2025 result fetched with `tasks/result`, and one
//! [`Event::CallCompleted`] with the task's result, error or cancellation. A call that
//! fails while its task may still run sends `tasks/cancel` (to a 2025-11-25 server only
//! when it declared `tasks.cancel`).

mod answer;
#[cfg(test)]
mod approval_deadlines;
pub(crate) mod cache;
mod handshake;
mod inbound;
pub(crate) mod request;
#[cfg(test)]
mod spare_buffer;
mod tasks;
mod transport;

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::Instant;

use serde_json::Value;
use serde_json::value::RawValue;

pub(crate) use super::event::{
    ApiMisuse, CallError, CallId, CallOutput, CloseReason, ConnectionState, Event, HttpFailure,
    InputAnswer, InputId, InputRequest, PeerError,
};
use super::event_queue::EventQueue;
use super::input::{LogLevel, Root};
use super::unreadable::UnreadableLine;
use super::{ClientConfig, IdMap, ListenEnd, ListenFilter};
use answer::AnswerCheck;
pub(crate) use request::CallRequest;

use crate::jsonrpc::{self, Message, RequestId};
use crate::model::ServerDetails;
use crate::stdio::{self, Line, LineDecoder};
use crate::version::{Era, ProtocolVersion};

/// The protocol session. See the module docs.
#[derive(Debug)]
pub(crate) struct Session {
    config: ClientConfig,
    decoder: LineDecoder,
    /// The oversized line the decoder is skipping was handled when it crossed the
    /// limit; its report at its end is to be ignored.
    oversize_handled: bool,
    state: State,
    handshake: Option<Handshake>,
    next_rpc_id: i64,
    next_call: u64,
    next_input: u64,
    calls: IdMap<CallId, Call>,
    by_rpc: IdMap<i64, CallId>,
    /// Ids whose answers are no longer wanted (timed out, cancelled, abandoned probes).
    ignored_ids: VecDeque<i64>,
    /// Ids answered recently, to tell duplicates from strangers.
    answered_ids: VecDeque<i64>,
    /// Ids of the legacy server's requests for input answered recently, in this session
    /// (or process): a server that replays a resumed stream from before the resumption
    /// point sends them again, and the user is not asked twice (ids are never reused
    /// within a legacy session; elsewhere than on a resumed stream a reused id is served,
    /// as a sloppy server that numbers every request alike expects).
    answered_server_ids: VecDeque<RequestId>,
    inputs: IdMap<InputId, PendingInput>,
    outgoing: VecDeque<Outgoing>,
    /// An emptied buffer to write the next request into (stdio: the caller's buffer that
    /// [`Session::poll_transmit`] took a message's place of). Kept only up to
    /// [`SPARE_MAX`] bytes of capacity, so a large message does not pin its size.
    spare: Vec<u8>,
    /// The size of the requests written lately, decaying by a sixteenth a request: a
    /// buffer more than twice as large is let go (see [`Session::keep_spare`]).
    spare_want: usize,
    pub(crate) events: EventQueue,
    /// The 2026 `_meta` members, serialised once.
    envelope: String,
    /// The same, declaring the tasks extension (for requests that may create a task
    /// and for `tasks/*`).
    task_envelope: String,
    /// Requests sent for a call already over (`tasks/cancel`): their method and params,
    /// for the HTTP headers; their answers are ignored.
    detached: VecDeque<(i64, &'static str, serde_json::Map<String, Value>)>,
    /// `tools/call` requests that could be answered with a task, given up (cancelled,
    /// timed out) before their answer came: a task such a late answer names is cancelled.
    given_up_task_calls: VecDeque<i64>,
    /// 2025-11-25: the `execution.taskSupport` of each tool of the latest `tools/list`.
    task_support: BTreeMap<String, tasks::ToolTasks>,
    server: Option<ServerDetails>,
    /// Since when legacy server requests have been waiting for the user.
    paused_since: Option<Instant>,
    transport: Transport,
    close_reason: Option<CloseReason>,
    /// JSON-RPC ids whose HTTP exchange must be aborted (2026 cancellation over HTTP).
    aborts: VecDeque<i64>,
    /// The probe cost the stdio server process: a fresh one is wanted.
    pub(crate) restart_wanted: bool,
    /// `initialize` went first on the strength of a cached legacy verdict: a 2026
    /// refusal of it means probing after all (once).
    tentative_legacy: bool,
    /// The server was probed again after refusing such an `initialize`: never twice.
    reprobed: bool,
    /// When connecting as a whole gives up (`Limits::connect_timeout`).
    connect_deadline: Instant,
    /// Since when every deadline is held: a person is approving an authorization.
    approval_since: Option<Instant>,
    /// Bytes handed to the transport and not yet reported written (stdio).
    unwritten: usize,
    /// Bytes of `outgoing`.
    queued_bytes: usize,
    /// Listings kept under the 2026 caching hints.
    cache: cache::ListCache,
    /// 2026-07-28: the log level of requests that name none (set by
    /// `logging/setLevel`, which is not sent in that era).
    log_level: Option<LogLevel>,
    /// The `elicitationId`s of URL-mode elicitations shown and not yet reported
    /// complete, newest last (at most `Limits::max_pending_server_requests`, each at most
    /// `MAX_ELICITATION_ID_BYTES`).
    url_elicitations: VecDeque<String>,
    /// Over Streamable HTTP: the JSON-RPC id whose response stream the message being
    /// dispatched came on.
    pub(crate) stream_origin: Option<i64>,
    /// Over Streamable HTTP: the message being dispatched came on a stream resumed with
    /// `Last-Event-ID`, where a server may replay what it sent before.
    pub(crate) on_resumed_stream: bool,
    /// The era and version the session last settled on: a stdio server that exits
    /// after that may be restarted (`ClientConfig::restart`).
    settled: Option<(Era, ProtocolVersion)>,
    /// Restarts in a row, with no call answered since.
    restarts_in_row: u32,
    /// stdio: the first line of the server's stdout that could not be used (one line,
    /// clipped), to explain a connection that fails afterwards.
    unreadable: Option<Box<UnreadableLine>>,
    /// When the exited server is to be started again.
    restart_at: Option<Instant>,
}

/// A message waiting to be written, with what a message-oriented transport needs to
/// know about it without parsing it again.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) json: Vec<u8>,
    pub(crate) kind: OutKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutKind {
    /// A request with this JSON-RPC id (see [`Session::request_info`]).
    Request(i64),
    /// A notification with this method.
    Notification(&'static str),
    /// `notifications/cancelled` for the request with this JSON-RPC id.
    Cancel(i64),
    /// A response to a server request.
    Response,
}

/// The kind of transport under the machine: it changes how calls are cancelled and what
/// counts as era evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    Stdio,
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Connecting,
    AwaitingRestart,
    Ready(Era, ProtocolVersion),
    Closed,
}

#[derive(Debug)]
struct Handshake {
    rpc_id: i64,
    deadline: Instant,
    phase: Phase,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Probe {
        version: ProtocolVersion,
        retried: bool,
    },
    Initialize {
        version: ProtocolVersion,
    },
}

#[derive(Debug)]
struct Call {
    request: CallRequest,
    /// The JSON-RPC id in flight; `None` while queued or waiting for the user.
    rpc_id: Option<i64>,
    deadline: Option<Instant>,
    timeout: Duration,
    /// When its deadline was last set (at first, when it was made): a pause of the
    /// deadlines that began before counts from then.
    armed: Instant,
    /// What is left of `timeout` for the next request of the same call (the next page of
    /// a listing, the next input round): the server's time counts over all of them.
    left: Option<Duration>,
    rounds: u32,
    /// Legacy: the server's input requests that paused this call's deadline. Past
    /// `max_input_rounds` of them the call no longer pauses.
    input_pauses: u32,
    input_bytes: usize,
    /// Current MRTR round: key, input id, answer.
    pending: Vec<(String, InputId, Option<Value>)>,
    /// The latest round's `requestState`, the JSON string as the server wrote it.
    request_state: Option<Box<RawValue>>,
    cursor: Option<Value>,
    pages: u32,
    items: Vec<Box<RawValue>>,
    /// Bytes of `items`, as received.
    item_bytes: usize,
    progress_token: Option<u64>,
    /// Sent again once already on a new legacy session after the old one expired.
    resent_on_new_session: bool,
    /// A subscription: reconnections in a row without a steady stream (see
    /// [`LISTEN_STEADY`]).
    reconnects: u32,
    /// A subscription: when the current listen was acknowledged.
    acknowledged_at: Option<Instant>,
    /// For a cacheable listing: the caching hints of its pages so far.
    cache: Option<cache::Pending>,
    /// The task behind the call, once the server made one.
    task: Option<Box<tasks::TaskTrack>>,
    /// 2025-11-25: its current request went out task-augmented (`params.task`).
    augmented: bool,
}

#[derive(Debug)]
enum PendingInput {
    /// `bytes`: the request's parameters, as received.
    Legacy {
        server_id: RequestId,
        bytes: usize,
        check: AnswerCheck,
        /// 2025-11-25: the task it belongs to (`related-task`), echoed in the answer.
        related: Option<String>,
    },
    Modern {
        call: CallId,
        check: AnswerCheck,
    },
    /// 2026: an input request of the task behind `call`, under `key`.
    Task {
        call: CallId,
        check: AnswerCheck,
    },
    /// An elicitation of a `-32042` error: shown to the user, answered to nobody.
    Notice {
        bytes: usize,
        check: AnswerCheck,
    },
}

impl PendingInput {
    fn check(&self) -> &AnswerCheck {
        match self {
            PendingInput::Legacy { check, .. }
            | PendingInput::Modern { check, .. }
            | PendingInput::Task { check, .. }
            | PendingInput::Notice { check, .. } => check,
        }
    }

    /// Bytes a peer made the client hold for it.
    fn bytes(&self) -> usize {
        match self {
            PendingInput::Legacy { bytes, .. } | PendingInput::Notice { bytes, .. } => *bytes,
            PendingInput::Modern { .. } | PendingInput::Task { .. } => 0,
        }
    }
}

const RECENT_IDS: usize = 256;

/// What a tool's task support costs beside its name: the map's node share and the
/// name's `String`, estimated.
const TOOL_ENTRY_BYTES: usize = 48;

/// The largest buffer kept for writing the next request: a 64 KiB argument keeps reusing
/// its buffer, a 10 MiB one gives its memory back.
const SPARE_MAX: usize = 256 * 1024;

/// The request size a spare buffer is always allowed for, whatever the requests written
/// lately: with the factor of two in [`Session::keep_spare`], a buffer of up to 8 KiB is
/// always kept.
const SPARE_MIN: usize = 4 * 1024;

/// The most 2026 subscriptions open at once (each is also a call in flight).
pub(crate) const MAX_SUBSCRIPTIONS: usize = 16;

/// The first wait before a subscription whose stream closed listens again.
pub(crate) const LISTEN_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait before a subscription listens again.
pub(crate) const MAX_LISTEN_DELAY: Duration = Duration::from_secs(30);
/// Reconnections of a subscription in a row without a steady stream before it fails.
pub(crate) const MAX_LISTEN_RECONNECTS: u32 = 5;
/// How long a subscription's stream must have lasted since its acknowledgement for its
/// loss to start the backoff afresh: a server that acknowledges and drops the stream at
/// once is not listened to again every second forever.
pub(crate) const LISTEN_STEADY: Duration = MAX_LISTEN_DELAY;

impl Session {
    /// A new connection; the first bytes (probe or `initialize`) are ready to transmit.
    #[must_use]
    pub fn new(config: ClientConfig, now: Instant) -> Session {
        Session::over(config, now, Transport::Stdio)
    }

    /// A new connection over `transport` (see [`Session::new`]).
    pub(crate) fn over(config: ClientConfig, now: Instant, transport: Transport) -> Session {
        let decoder = LineDecoder::new(config.limits.max_message_bytes);
        let connect_deadline = now + config.limits.connect_timeout;
        let events = EventQueue::new(&config.limits);
        let mut client = Session {
            config,
            decoder,
            oversize_handled: false,
            state: State::Connecting,
            handshake: None,
            next_rpc_id: 0,
            next_call: 0,
            next_input: 0,
            calls: IdMap::default(),
            by_rpc: IdMap::default(),
            ignored_ids: VecDeque::new(),
            answered_ids: VecDeque::new(),
            answered_server_ids: VecDeque::new(),
            inputs: IdMap::default(),
            outgoing: VecDeque::new(),
            spare: Vec::new(),
            spare_want: 0,
            events,
            envelope: String::new(),
            task_envelope: String::new(),
            detached: VecDeque::new(),
            given_up_task_calls: VecDeque::new(),
            task_support: BTreeMap::new(),
            server: None,
            paused_since: None,
            transport,
            close_reason: None,
            aborts: VecDeque::new(),
            restart_wanted: false,
            tentative_legacy: false,
            reprobed: false,
            connect_deadline,
            approval_since: None,
            unwritten: 0,
            queued_bytes: 0,
            cache: cache::ListCache::default(),
            log_level: None,
            url_elicitations: VecDeque::new(),
            stream_origin: None,
            on_resumed_stream: false,
            settled: None,
            restarts_in_row: 0,
            unreadable: None,
            restart_at: None,
        };
        client.start(now);
        client
    }

    /// Where the connection stands.
    #[must_use]
    pub fn state(&self) -> ConnectionState {
        match self.state {
            State::Connecting => ConnectionState::Connecting,
            State::AwaitingRestart => ConnectionState::AwaitingRestart,
            State::Ready(e, v) => ConnectionState::Ready(e, v),
            State::Closed => ConnectionState::Closed,
        }
    }

    /// Why the connection closed, once it has.
    #[must_use]
    pub fn close_reason(&self) -> Option<&CloseReason> {
        self.close_reason.as_ref()
    }

    /// What the server said about itself, once connected.
    #[must_use]
    pub fn server(&self) -> Option<&ServerDetails> {
        self.server.as_ref()
    }

    /// stdio: the first line of the server's stdout that could not be used.
    pub(crate) fn unreadable_line(&self) -> Option<&UnreadableLine> {
        self.unreadable.as_deref()
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    // ----- inputs -------------------------------------------------------------------

    /// Bytes from the server's stdout, in any chunks.
    ///
    /// Each line is checked against `Limits::max_message_bytes` and
    /// `Limits::max_nesting_depth` before it is decoded. A line that cannot be used fails
    /// the call it answers at once, when its `id` can be read (for an oversized line:
    /// from its first or last bytes); an oversized line whose `id` cannot be read fails
    /// every call whose request was written, since it may have answered any of them.
    /// An oversized line whose first bytes name the call fails it as soon as the line
    /// crosses the limit, not when (if ever) it ends.
    pub fn handle_input(&mut self, now: Instant, data: &[u8]) {
        if self.state == State::Closed {
            return;
        }
        let max_depth = self.config.limits.max_nesting_depth;
        let max_parsed = self.config.limits.max_parsed_bytes;
        let limit = self.config.limits.max_message_bytes;
        self.decoder.handle_input(data);
        loop {
            let item = match self.decoder.poll_line() {
                None => break,
                Some(Line::Oversized { .. }) if self.oversize_handled => {
                    // Handled when it crossed the limit.
                    self.oversize_handled = false;
                    continue;
                }
                Some(Line::Oversized { seen, head, tail }) => {
                    if self.unreadable.is_none() {
                        let error = PeerError::Oversized { seen, limit };
                        self.unreadable = Some(Box::new(UnreadableLine::of(head, Some(&error))));
                    }
                    let mut sniffed = jsonrpc::sniff(head);
                    // A `method` written last makes it the server's request, never the
                    // answer to a call of the same id.
                    sniffed.has_method |= jsonrpc::sniff_trailing_method(tail);
                    if sniffed.id.is_none() {
                        sniffed.id = jsonrpc::sniff_trailing_id(tail);
                    }
                    Err((PeerError::Oversized { seen, limit }, sniffed))
                }
                Some(Line::Message(line)) => Message::decode_within(line, max_depth, max_parsed)
                    .map_err(|error| {
                        let error = PeerError::Malformed { error };
                        if self.unreadable.is_none() {
                            let quoted = UnreadableLine::of(line, Some(&error));
                            self.unreadable = Some(Box::new(quoted));
                        }
                        (error, jsonrpc::sniff(line))
                    }),
            };
            match item {
                Ok(m) => self.dispatch_message(now, m),
                Err((error, sniffed)) => {
                    let oversized = matches!(error, PeerError::Oversized { .. });
                    self.handle_unusable(now, error, &sniffed, oversized);
                }
            }
            if self.state == State::Closed {
                break;
            }
        }
        self.handle_oversize_in_progress(now, limit);
    }

    /// An oversized line still arriving whose first bytes say which call it answers
    /// fails that call now: the line may never end.
    fn handle_oversize_in_progress(&mut self, now: Instant, limit: usize) {
        if self.oversize_handled || self.state == State::Closed {
            return;
        }
        let Some((seen, head)) = self.decoder.oversized_in_progress() else {
            return;
        };
        let sniffed = jsonrpc::sniff(head);
        if sniffed.has_method || sniffed.id.is_none() {
            return; // the end of the line may name it: wait for the report
        }
        self.oversize_handled = true;
        let error = PeerError::Oversized { seen, limit };
        if self.unreadable.is_none() {
            self.unreadable = Some(Box::new(UnreadableLine::of(head, Some(&error))));
        }
        self.handle_unusable(now, error, &sniffed, true);
    }

    /// A message that did not decode (too deep, not JSON-RPC), for transports that frame
    /// messages themselves: the call it answers, when its `id` can be read, fails at once
    /// with the reason, as for a stdio line.
    pub(crate) fn handle_undecodable(
        &mut self,
        now: Instant,
        bytes: &[u8],
        error: jsonrpc::DecodeError,
    ) {
        let sniffed = jsonrpc::sniff(bytes);
        self.handle_unusable(now, PeerError::Malformed { error }, &sniffed, false);
    }

    /// A message decoded within the limits (by `Message::decode_with_max_depth`).
    pub(crate) fn dispatch_message(&mut self, now: Instant, message: Message) {
        match message {
            Message::Response(r) => self.handle_response(now, r),
            Message::Request(r) => self.handle_server_request(now, r),
            Message::Notification(n) => self.handle_notification(now, n),
        }
    }

    /// The server's output ended (its process exited or closed stdout).
    pub fn handle_eof(&mut self, now: Instant) {
        let truncated = self.decoder.partial_len();
        self.handle_eof_with(now, CloseReason::ServerExited { truncated });
    }

    /// [`Session::handle_eof`], closing with `reason` when the session ends here (no
    /// restart, no fallback from the probe).
    pub(crate) fn handle_eof_with(&mut self, now: Instant, reason: CloseReason) {
        match (self.state, &self.handshake) {
            (State::Closed | State::AwaitingRestart, _) => {}
            (State::Connecting, Some(h))
                if matches!(h.phase, Phase::Probe { .. }) && self.restarts_in_row == 0 =>
            {
                self.handle_probe_exit(now);
            }
            _ if self.may_restart() => self.schedule_restart(now),
            _ => self.close_with(reason),
        }
    }

    /// Whether the server that just exited is to be started again: it is a stdio server
    /// that was connected once (and exited since, or while reconnecting), and the
    /// restarts in a row are within the policy.
    fn may_restart(&self) -> bool {
        self.transport == Transport::Stdio
            && self.settled.is_some()
            && self.restarts_in_row < self.config.restart.max_attempts
    }

    /// The stdio server exited after connecting: every call in flight fails once (none
    /// is re-sent, since whether it ran cannot be known), every pending input is void,
    /// what was waiting to be written to the old process is dropped, and a fresh
    /// process is asked for after the policy's wait. Calls not yet written wait for it.
    fn schedule_restart(&mut self, now: Instant) {
        self.fail_in_flight(&CallError::ServerExited);
        // A new process numbers its requests afresh.
        self.answered_server_ids.clear();
        self.handshake = None;
        // No request for input is left: the calls still waiting keep the time held.
        self.resume_deadlines(now);
        self.server = None;
        self.cache.clear();
        self.outgoing.clear();
        self.queued_bytes = 0;
        self.unwritten = 0;
        self.restarts_in_row += 1;
        let delay = self.config.restart.delay(self.restarts_in_row);
        let at = now + delay;
        self.restart_at = Some(at);
        // Reconnecting is a connecting operation of its own, once the wait is over.
        self.connect_deadline = at + self.config.limits.connect_timeout;
        self.state = State::AwaitingRestart;
        self.events.push_back(Event::ServerRestarting {
            attempt: self.restarts_in_row,
            delay,
        });
    }

    /// The caller started a fresh transport after [`Session::restart_wanted`] was set.
    ///
    /// # Errors
    /// [`ApiMisuse::Closed`] when no restart was requested.
    pub fn handle_transport_restarted(&mut self, now: Instant) -> Result<(), ApiMisuse> {
        if self.state != State::AwaitingRestart {
            return Err(ApiMisuse::Closed);
        }
        self.restart_wanted = false;
        self.decoder = LineDecoder::new(self.config.limits.max_message_bytes);
        self.oversize_handled = false;
        self.outgoing.clear();
        self.queued_bytes = 0;
        self.unwritten = 0;
        self.state = State::Connecting;
        match self.settled.filter(|_| self.restarts_in_row > 0) {
            // A restart after connecting: the era is known; a 2026 server is asked
            // `server/discover` again for what it is now.
            Some((Era::Modern, version)) => self.send_probe(now, version, false),
            Some((Era::Legacy, version)) => self.send_initialize(now, version),
            // The server exited on the era probe: it speaks the legacy era.
            None => self.send_initialize(now, self.newest_legacy()),
        }
        Ok(())
    }

    /// Time passed: fire every deadline at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.approval_since.is_some() {
            return;
        }
        if self.restart_at.is_some_and(|at| at <= now) {
            self.restart_at = None;
            self.restart_wanted = true;
        }
        if let Some(h) = &self.handshake
            && h.deadline <= now
        {
            self.handle_handshake_timeout(now);
        }
        let mut expired: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| !self.held(c) && c.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        expired.sort_unstable();
        for id in expired {
            let Some(call) = self.calls.get(&id) else {
                continue;
            };
            if call.request.method == request::LISTEN && call.rpc_id.is_none() {
                // The backoff before a reconnection is over: listen again.
                self.send_call(now, id);
                continue;
            }
            if call.task.is_some() && call.rpc_id.is_none() {
                // Time for the next poll of the task.
                self.task_poll(now, id);
                continue;
            }
            let timeout = call.timeout;
            self.send_cancel_for(id, "timeout");
            self.complete(id, Err(CallError::Timeout(timeout)));
        }
    }

    // ----- outputs ------------------------------------------------------------------

    /// Appends every pending outgoing message to `out`, newline-framed for stdio. Returns
    /// the number of bytes appended.
    pub fn poll_transmit(&mut self, _now: Instant, out: &mut Vec<u8>) -> usize {
        let before = out.len();
        if out.is_empty()
            && let Some(mut msg) = self.outgoing.pop_front()
        {
            // The message becomes the caller's buffer instead of being copied into it;
            // the caller's (empty) buffer is kept for the next request.
            msg.json.push(b'\n');
            let emptied = std::mem::replace(out, msg.json);
            self.keep_spare(emptied);
        }
        while let Some(msg) = self.outgoing.pop_front() {
            stdio::frame(out, &msg.json);
            self.keep_spare(msg.json);
        }
        self.queued_bytes = 0;
        let len = out.len() - before;
        self.unwritten += len;
        len
    }

    /// `bytes` of what [`Session::poll_transmit`] handed out were written (stdio).
    pub(crate) fn handle_written(&mut self, bytes: usize) {
        self.unwritten = self.unwritten.saturating_sub(bytes);
    }

    /// The next outgoing message with its kind, for the HTTP transport.
    pub(crate) fn poll_outgoing(&mut self) -> Option<Outgoing> {
        let msg = self.outgoing.pop_front()?;
        self.queued_bytes -= msg.json.len();
        Some(msg)
    }

    /// A message buffer the transport is done with (an HTTP request answered): kept as
    /// [`Session::keep_spare`] does.
    pub(crate) fn keep_buffer(&mut self, buf: Vec<u8>) {
        self.keep_spare(buf);
    }

    /// Keeps `buf` (emptied) to write the next request into, when it is larger than the
    /// spare held, not over [`SPARE_MAX`], and not over twice the size of the requests
    /// written lately ([`Session::spare_want`], at least [`SPARE_MIN`]): a buffer grown
    /// by one large request is given back once a few dozen small ones followed it, while
    /// a run of large requests keeps reusing theirs.
    fn keep_spare(&mut self, mut buf: Vec<u8>) {
        let room = 2 * self.spare_want.max(SPARE_MIN);
        if buf.capacity() > self.spare.capacity() && buf.capacity() <= SPARE_MAX.min(room) {
            buf.clear();
            self.spare = buf;
        }
    }

    fn push_out(&mut self, json: Vec<u8>, kind: OutKind) {
        // The bytes it will take on the wire: a stdio line has its newline.
        let size = json.len() + usize::from(self.transport == Transport::Stdio);
        if kind == OutKind::Response && self.transport == Transport::Stdio {
            // An answer to the server's own request: it must not grow a queue the server
            // does not drain.
            let waiting = self.unwritten + self.queued_bytes + size;
            if waiting > self.config.limits.max_queued_output_bytes {
                self.close_with(CloseReason::PeerNotReading { waiting });
                return;
            }
        }
        self.queued_bytes += size;
        self.outgoing.push_back(Outgoing { json, kind });
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The connect deadline, while the session never got connected.
    pub(crate) fn unmet_connect_deadline(&self) -> Option<Instant> {
        self.server.is_none().then_some(self.connect_deadline)
    }

    /// Bytes a peer can make this session hold: events waiting to be polled, the line
    /// being read, messages waiting to be written, listing items gathered, requests for
    /// input waiting for the user. What the caller itself passed in (its requests) is not
    /// counted.
    pub(crate) fn retained_bytes(&self) -> usize {
        let calls: usize = self
            .calls
            .values()
            .map(|c| c.item_bytes + c.input_bytes)
            .sum();
        let inputs: usize = self.inputs.values().map(PendingInput::bytes).sum();
        // URL-mode elicitation ids kept for their completion notice.
        let shown: usize = (self.url_elicitations.iter())
            .map(|id| id.len() + std::mem::size_of::<String>())
            .sum();
        // The ids of the server's requests answered, kept to recognise a replay.
        let answered: usize = (self.answered_server_ids.iter())
            .map(|id| match id {
                RequestId::String(s) => s.len() + std::mem::size_of::<RequestId>(),
                RequestId::Number(_) => std::mem::size_of::<RequestId>(),
            })
            .sum();
        // The tools' task support, kept from the latest listing.
        let tools: usize = (self.task_support.keys())
            .map(|name| name.len() + TOOL_ENTRY_BYTES)
            .sum();
        self.events.bytes()
            + shown
            + answered
            + tools
            + self.decoder.retained_bytes()
            + self.unreadable.as_ref().map_or(0, |u| u.retained_bytes())
            + self.queued_bytes
            + calls
            + inputs
            + self.cache.bytes()
    }

    /// When [`Session::handle_timeout`] should be called next.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.approval_since.is_some() {
            return None;
        }
        let handshake = self.handshake.as_ref().map(|h| h.deadline);
        let own = handshake.into_iter().chain(self.restart_at).min();
        self.calls
            .values()
            .filter(|c| !self.held(c))
            .filter_map(|c| c.deadline)
            .chain(own)
            .min()
    }

    // ----- commands -----------------------------------------------------------------

    /// Starts a call. It is written at once when connected, or queued until then.
    ///
    /// # Errors
    /// [`ApiMisuse::Closed`] after close, [`ApiMisuse::TooManyCalls`] at the limit.
    pub fn call(&mut self, now: Instant, request: CallRequest) -> Result<CallId, ApiMisuse> {
        if self.state == State::Closed {
            return Err(ApiMisuse::Closed);
        }
        if self.calls.len() >= self.config.limits.max_calls_in_flight {
            return Err(ApiMisuse::TooManyCalls);
        }
        let listen = request.method == request::LISTEN;
        if listen
            && self
                .calls
                .values()
                .filter(|c| c.request.method == request::LISTEN)
                .count()
                >= MAX_SUBSCRIPTIONS
        {
            return Err(ApiMisuse::TooManySubscriptions);
        }
        let id = CallId(self.next_call);
        self.next_call += 1;
        let cacheable = cache::cacheable(&request.method);
        if cacheable.is_some()
            && self.era() == Some(Era::Modern)
            && let Some(output) = self
                .cache
                .lookup(now, &cache::key(&request.method, &request.params))
        {
            // Fresh in the cache: answered without a word to the server.
            self.events.push_back(Event::CallCompleted {
                call: id,
                outcome: Ok(output),
            });
            return Ok(id);
        }
        let pending = cacheable.map(|_| cache::Pending {
            fresh_until: None,
            generation: self.cache.generation,
            spoiled: false,
        });
        let timeout = request
            .timeout
            .unwrap_or(self.config.limits.request_timeout);
        let progress_token = request.progress.then_some(id.0);
        self.calls.insert(
            id,
            Call {
                request,
                rpc_id: None,
                // A subscription's deadline starts when it is sent: what it owes in
                // time is its acknowledgement (`send_call`).
                deadline: (!listen).then(|| now + timeout),
                timeout,
                armed: now,
                left: None,
                rounds: 0,
                input_pauses: 0,
                input_bytes: 0,
                pending: Vec::new(),
                request_state: None,
                cursor: None,
                pages: 0,
                items: Vec::new(),
                item_bytes: 0,
                progress_token,
                resent_on_new_session: false,
                reconnects: 0,
                acknowledged_at: None,
                cache: pending,
                task: None,
                augmented: false,
            },
        );
        if matches!(self.state, State::Ready(..)) {
            self.send_call(now, id);
        }
        Ok(id)
    }

    /// Answers an [`Event::InputRequested`]. The answer is checked first (a form
    /// answer against its schema, with defaults applied; see [`AnswerCheck`]).
    ///
    /// # Errors
    /// [`ApiMisuse::UnknownInput`] when the request was already answered or voided;
    /// [`ApiMisuse::InvalidAnswer`] when the answer does not fit (nothing is sent, and
    /// the request still waits).
    pub fn respond(
        &mut self,
        now: Instant,
        input: InputId,
        answer: InputAnswer,
    ) -> Result<(), ApiMisuse> {
        let pending = self
            .inputs
            .get(&input)
            .ok_or(ApiMisuse::UnknownInput(input))?;
        let answer = answer::check_answer(pending.check(), answer).map_err(|mut why| {
            super::event::clip(&mut why);
            ApiMisuse::InvalidAnswer(why)
        })?;
        let Some(pending) = self.inputs.remove(&input) else {
            return Err(ApiMisuse::UnknownInput(input));
        };
        match pending {
            PendingInput::Notice { .. } => {}
            PendingInput::Legacy {
                server_id, related, ..
            } => {
                let mut out = Vec::new();
                remember(&mut self.answered_server_ids, server_id.clone());
                match answer {
                    InputAnswer::Result(mut v) => {
                        // 2025-11-25: an answer for a task carries its related-task.
                        if let (Some(task_id), Value::Object(o)) = (related, &mut v) {
                            let meta = o
                                .entry("_meta")
                                .or_insert_with(|| Value::Object(serde_json::Map::new()));
                            if let Value::Object(meta) = meta {
                                meta.insert(
                                    crate::client::RELATED_TASK_KEY.to_owned(),
                                    serde_json::json!({ "taskId": task_id }),
                                );
                            }
                        }
                        jsonrpc::encode_result(&mut out, Some(&server_id), &jsonrpc::to_raw(&v));
                    }
                    InputAnswer::Error(e) => jsonrpc::encode_error(&mut out, Some(&server_id), &e),
                }
                self.push_out(out, OutKind::Response);
                self.resume_deadlines(now);
            }
            PendingInput::Modern { call, .. } => self.answer_round(now, call, input, answer),
            PendingInput::Task { call, .. } => self.answer_task_input(now, call, input, answer),
        }
        Ok(())
    }

    /// Replaces the roots offered to the server. When they differ from the ones before,
    /// a legacy session whose client declared `roots.listChanged` is told
    /// (`notifications/roots/list_changed`); the 2026 era has no such notification (the
    /// next `roots/list` input request gets the new list).
    ///
    /// # Errors
    /// [`ApiMisuse::Undeclared`] when the client did not declare roots;
    /// [`ApiMisuse::Closed`] after close.
    pub fn set_roots(&mut self, _now: Instant, roots: Vec<Root>) -> Result<(), ApiMisuse> {
        if self.state == State::Closed {
            return Err(ApiMisuse::Closed);
        }
        if !self.config.capabilities.roots {
            return Err(ApiMisuse::Undeclared("roots"));
        }
        let changed = self.config.roots.as_ref() != Some(&roots);
        self.config.roots = Some(roots);
        if changed && self.config.capabilities.roots_list_changed && self.era() == Some(Era::Legacy)
        {
            const METHOD: &str = "notifications/roots/list_changed";
            let mut out = Vec::new();
            jsonrpc::encode_notification(&mut out, METHOD, None);
            self.push_out(out, OutKind::Notification(METHOD));
        }
        Ok(())
    }

    /// Cancels a call: it completes with [`CallError::Cancelled`] and the server is told.
    ///
    /// # Errors
    /// [`ApiMisuse::UnknownCall`] when the call already completed.
    pub fn cancel(&mut self, _now: Instant, call: CallId) -> Result<(), ApiMisuse> {
        if !self.calls.contains_key(&call) {
            return Err(ApiMisuse::UnknownCall(call));
        }
        self.send_cancel_for(call, "cancelled by the client");
        self.complete(call, Err(CallError::Cancelled));
        Ok(())
    }

    /// Ends the connection: every call fails with [`CloseReason::Local`]. The caller then
    /// closes the transport (for stdio: closes the server's stdin).
    pub fn close(&mut self, _now: Instant) {
        self.close_with(CloseReason::Local);
    }

    // ----- internals shared by the submodules ---------------------------------------

    fn alloc_rpc_id(&mut self) -> i64 {
        let id = self.next_rpc_id;
        self.next_rpc_id += 1;
        id
    }

    fn alloc_input(&mut self) -> InputId {
        let id = InputId(self.next_input);
        self.next_input += 1;
        id
    }

    fn era(&self) -> Option<Era> {
        match self.state {
            State::Ready(era, _) => Some(era),
            _ => None,
        }
    }

    /// Whether the negotiated version is 2025-11-25 or later: the versions with tasks,
    /// URL-mode elicitation (and `-32042`), tool use in sampling and the `related-task`
    /// `_meta` key. A 2025-06-18 session has none of them, whatever the server declares
    /// or sends.
    fn since_2025_11_25(&self) -> bool {
        matches!(self.state, State::Ready(_, v) if v >= ProtocolVersion::V2025_11_25)
    }

    /// Writes the current request of `call` under a new JSON-RPC id.
    fn send_call(&mut self, now: Instant, id: CallId) {
        if let State::Ready(era, version) = self.state
            && let Some(call) = self.calls.get_mut(&id)
        {
            if era == Era::Modern
                && matches!(
                    call.request.method.as_str(),
                    "ping" | "resources/subscribe" | "resources/unsubscribe"
                )
            {
                let method = call.request.method.clone();
                self.complete(id, Err(CallError::NotInVersion { method, version }));
                return;
            }
            if let Some(feature) = undeclared(&call.request.method, self.server.as_ref()) {
                let method = call.request.method.clone();
                self.complete(id, Err(CallError::NotDeclared { method, feature }));
                return;
            }
            // 2025-06-18 has no tasks at all (nor does the client follow any there).
            let not_here: &[&str] = match era {
                Era::Modern => &[request::TASKS_RESULT, request::TASKS_LIST],
                Era::Legacy if version < ProtocolVersion::V2025_11_25 => &[
                    request::LISTEN,
                    request::TASKS_UPDATE,
                    request::TASKS_GET,
                    request::TASKS_RESULT,
                    request::TASKS_LIST,
                    request::TASKS_CANCEL,
                ],
                Era::Legacy => &[request::LISTEN, request::TASKS_UPDATE],
            };
            if not_here.contains(&call.request.method.as_str()) {
                let method = call.request.method.clone();
                self.complete(id, Err(CallError::NotInVersion { method, version }));
                return;
            }
            let lacking = (self.server.as_ref())
                .and_then(|s| lacking_capability(&call.request.method, era, &s.capabilities));
            if let Some(feature) = lacking {
                let method = call.request.method.clone();
                self.complete(id, Err(CallError::NotDeclared { method, feature }));
                return;
            }
            if version < ProtocolVersion::V2025_06_18
                && call.request.method == "completion/complete"
            {
                call.request.params.remove("context");
            }
        }
        let modern = self.era() == Some(Era::Modern);
        if modern && self.set_level_locally(id) {
            return;
        }
        let rpc_id = self.alloc_rpc_id();
        let augment = self
            .calls
            .get(&id)
            .is_some_and(|c| self.augments(&c.request));
        let declared = self
            .calls
            .get(&id)
            .is_some_and(|c| self.declares_tasks(&c.request));
        let envelope = match (modern, declared) {
            (false, _) => "",
            (true, true) => self.task_envelope.as_str(),
            (true, false) => self.envelope.as_str(),
        };
        // A call written after waiting (for the connection, a restarted server, a new
        // legacy session) is the same operation: it keeps what is left of its timeout.
        // A listen owes only its acknowledgement, in a whole timeout each time.
        let remaining = self
            .calls
            .get(&id)
            .filter(|c| c.request.method != request::LISTEN && c.left.is_none())
            .and_then(|c| self.time_left(c, now));
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        let mut extra: Vec<(&str, request::Member<'_>)> = Vec::new();
        call.augmented = augment;
        let task_meta;
        if augment {
            let mut t = serde_json::Map::new();
            if let Some(ttl) = call.request.task.and_then(|a| a.ttl) {
                let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
                t.insert("ttl".into(), Value::from(ms));
            }
            task_meta = Value::Object(t);
            extra.push(("task", request::Member::Value(&task_meta)));
        }
        let log_level = if modern {
            call.request.log_level.or(self.log_level)
        } else {
            None
        };
        let responses;
        if !call.pending.is_empty() {
            let mut map = serde_json::Map::new();
            for (key, _, answer) in &call.pending {
                map.insert(key.clone(), answer.clone().unwrap_or(Value::Null));
            }
            responses = Value::Object(map);
            extra.push(("inputResponses", request::Member::Value(&responses)));
        }
        if let Some(s) = &call.request_state {
            extra.push(("requestState", request::Member::Raw(s)));
        }
        if let Some(c) = &call.cursor {
            extra.push(("cursor", request::Member::Value(c)));
        }
        // The request is written in one pass, params straight into the message: they are
        // our own serialisation, so there is nothing to re-validate.
        // Sized for the params up front (a large text is then written once, not copied
        // again by every doubling), in the spare buffer when there is one.
        let size = envelope.len()
            + 160
            + crate::json_write::map_size_hint(&call.request.params)
            + extra.len() * 64;
        let mut out = std::mem::take(&mut self.spare);
        out.clear();
        out.reserve(size);
        jsonrpc::write_request_head(&mut out, &RequestId::Number(rpc_id), &call.request.method);
        out.extend_from_slice(b",\"params\":");
        request::write_params(
            &mut out,
            envelope,
            log_level,
            call.progress_token,
            &call.request.params,
            &extra,
        );
        out.push(b'}');
        self.spare_want = out.len().max(self.spare_want - self.spare_want / 16);
        call.pending.clear();
        call.rpc_id = Some(rpc_id);
        let budget = call.left.take().or(remaining).unwrap_or(call.timeout);
        // A listen has no end to wait for, but its acknowledgement is owed in time.
        call.arm(now, budget);
        call.acknowledged_at = None;
        self.push_out(out, OutKind::Request(rpc_id));
        self.by_rpc.insert(rpc_id, id);
    }

    /// 2025-11-25: remembers the `execution.taskSupport` of every tool a `tools/list`
    /// lists (see [`Session::augments`]). Only what can change a call is kept (counted
    /// in [`Session::retained_bytes`]): nothing when the server takes no task-augmented
    /// calls, and no `optional` tool, which goes as an unlisted one does.
    fn learn_task_tools(&mut self, output: &CallOutput) {
        #[derive(serde::Deserialize)]
        struct Execution<'a> {
            #[serde(rename = "taskSupport", borrow, default)]
            task_support: Option<std::borrow::Cow<'a, str>>,
        }
        #[derive(serde::Deserialize)]
        struct ToolHead<'a> {
            #[serde(borrow)]
            name: std::borrow::Cow<'a, str>,
            #[serde(borrow, default)]
            execution: Option<Execution<'a>>,
        }
        if !self.server_takes_tool_tasks() {
            self.task_support.clear();
            return;
        }
        self.task_support = output
            .items
            .iter()
            .filter_map(|raw| serde_json::from_str::<ToolHead<'_>>(raw.get()).ok())
            .map(|t| {
                let support = t.execution.as_ref().and_then(|e| e.task_support.as_deref());
                (t.name.into_owned(), tasks::ToolTasks::of(support))
            })
            .filter(|(_, support)| *support != tasks::ToolTasks::Optional)
            .collect();
    }

    /// 2026-07-28 has no `logging/setLevel`: the level becomes the default of later
    /// requests and the call completes with `{}`. True when `id` was such a call.
    fn set_level_locally(&mut self, id: CallId) -> bool {
        let Some(call) = self.calls.get(&id) else {
            return false;
        };
        if call.request.method != "logging/setLevel" {
            return false;
        }
        let level = call
            .request
            .params
            .get("level")
            .and_then(Value::as_str)
            .and_then(LogLevel::parse);
        let outcome = match level {
            Some(level) => {
                self.log_level = Some(level);
                Ok(CallOutput {
                    result: jsonrpc::to_raw(&serde_json::json!({})),
                    items: Vec::new(),
                    pages: 1,
                    rounds: 0,
                })
            }
            None => Err(CallError::InvalidResponse(
                "logging/setLevel needs a valid `level`".to_owned(),
            )),
        };
        self.complete(id, outcome);
        true
    }

    fn send_cancel_for(&mut self, id: CallId, reason: &str) {
        let Some(call) = self.calls.get(&id) else {
            return;
        };
        let Some(rpc_id) = call.rpc_id else {
            return;
        };
        remember(&mut self.ignored_ids, rpc_id);
        // A task the server makes all the same (its answer crossing this cancellation,
        // which cannot stop a task) is cancelled when that answer comes.
        let may_make_task = call.task.is_none()
            && call.request.method == "tools/call"
            && match self.era() {
                Some(Era::Legacy) => call.augmented,
                Some(Era::Modern) => self.declares_tasks(&call.request),
                None => false,
            };
        if may_make_task {
            remember(&mut self.given_up_task_calls, rpc_id);
        }
        if self.transport == Transport::Http && self.era() == Some(Era::Modern) {
            // 2026 over HTTP: closing the response stream is the cancellation.
            self.aborts.push_back(rpc_id);
            return;
        }
        let params = jsonrpc::to_raw(&serde_json::json!({"requestId": rpc_id, "reason": reason}));
        let mut out = Vec::new();
        jsonrpc::encode_notification(&mut out, "notifications/cancelled", Some(&params));
        self.push_out(out, OutKind::Cancel(rpc_id));
        if self.transport == Transport::Http {
            // Legacy over HTTP: the notification is the cancellation, and the exchange
            // that was waiting for the answer is let go too, so that a server that never
            // answers does not keep its connection.
            self.aborts.push_back(rpc_id);
        }
    }

    /// Ends a call with its one `CallCompleted` event and voids its pending inputs.
    fn complete(&mut self, id: CallId, outcome: Result<CallOutput, CallError>) {
        let Some(call) = self.calls.remove(&id) else {
            return;
        };
        if let Some(rpc) = call.rpc_id {
            self.by_rpc.remove(&rpc);
            if call.task.is_some() {
                // A task request still in flight (the task ended by a notification).
                remember(&mut self.ignored_ids, rpc);
            }
        }
        if let Some(track) = &call.task {
            // A call that fails while its task may still run (cancelled, timed out, an
            // unusable record, a transport failure) leaves no task behind.
            if outcome.is_err() && !track.task.status.is_terminal() && self.state != State::Closed {
                self.send_task_cancel(&track.task.task_id);
            }
            for (_, input) in &track.open {
                if self.inputs.remove(input).is_some() {
                    self.events
                        .push_back(Event::InputCancelled { input: *input });
                }
            }
        }
        if call.request.method == "tools/list"
            && self.era() == Some(Era::Legacy)
            && let Ok(output) = &outcome
        {
            self.learn_task_tools(output);
        }
        if outcome.is_ok() {
            // The server did work: a later exit starts a new run of restarts.
            self.restarts_in_row = 0;
        }
        if let (Ok(output), Some(pending), Some(Era::Modern)) = (&outcome, call.cache, self.era())
            && let Some(method) = cache::cacheable(&call.request.method)
        {
            let limits = &self.config.limits;
            let key = cache::key(method, &call.request.params);
            let (entries, bytes) = (limits.max_cache_entries, limits.max_cache_bytes);
            self.cache
                .store(method, key, pending, output, entries, bytes);
        }
        for (_, input, _) in call.pending {
            if self.inputs.remove(&input).is_some() {
                self.events.push_back(Event::InputCancelled { input });
            }
        }
        if call.request.method == request::LISTEN {
            let end = match outcome {
                Ok(_) => ListenEnd::Complete,
                Err(CallError::Cancelled) => ListenEnd::EndedByClient,
                Err(e) => ListenEnd::Failed(e),
            };
            self.events.push_back(Event::SubscriptionEnded {
                subscription: id,
                end,
            });
            return;
        }
        self.events
            .push_back(Event::CallCompleted { call: id, outcome });
    }

    /// The listen call a 2026 notification belongs to: the one its `subscriptionId`
    /// names, or, over HTTP, the one whose response stream it came on.
    fn subscription_of(&self, n: &jsonrpc::Notification) -> Option<CallId> {
        if self.era() != Some(Era::Modern) {
            return None;
        }
        let rpc = match super::subscription_id(n) {
            Some(RequestId::Number(rpc)) => Some(rpc),
            Some(RequestId::String(_)) => None,
            None => self.stream_origin,
        }?;
        let id = *self.by_rpc.get(&rpc)?;
        let call = self.calls.get(&id)?;
        (call.request.method == request::LISTEN).then_some(id)
    }

    /// A 2026 notification for the subscription `id`: its acknowledgement, or one of
    /// the notifications it asked for.
    fn subscription_notification(&mut self, now: Instant, id: CallId, n: jsonrpc::Notification) {
        if n.method == "notifications/subscriptions/acknowledged" {
            let Some(call) = self.calls.get(&id) else {
                return;
            };
            if call.acknowledged_at.is_some() {
                // Answers nothing the caller asked: not kept (a server repeating it
                // could otherwise fill the queue with filters).
                self.peer_error(PeerError::MalformedNotification {
                    method: n.method,
                    detail: "a second acknowledgement of the same listen (ignored)".to_owned(),
                });
                return;
            }
            let asked = call
                .request
                .params
                .get("notifications")
                .map(ListenFilter::from_json)
                .unwrap_or_default();
            // Only `notifications` is read; the rest of the params is skipped.
            #[derive(serde::Deserialize)]
            struct Ack {
                notifications: Option<Value>,
            }
            let granted = n
                .params
                .as_deref()
                .and_then(|p| serde_json::from_str::<Ack>(p.get()).ok())
                .and_then(|a| a.notifications)
                .map(|v| ListenFilter::from_json(&v))
                .unwrap_or_default()
                .within(&asked);
            let refused = asked.missing_from(&granted);
            if let Some(call) = self.calls.get_mut(&id) {
                call.acknowledged_at = Some(now);
                call.deadline = None;
            }
            self.events.push_back(Event::SubscriptionAcknowledged {
                subscription: id,
                acknowledged: granted,
                refused,
            });
            return;
        }
        if self
            .calls
            .get(&id)
            .is_some_and(|c| c.acknowledged_at.is_none())
        {
            self.peer_error(PeerError::BeforeAcknowledgement {
                method: n.method.clone(),
            });
        }
        for method in cache::invalidated_by(&n.method) {
            self.cache.invalidate(method);
        }
        let change = super::Change::from_notification(&n);
        self.events.push_back(Event::SubscriptionNotification {
            subscription: id,
            change,
            notification: n,
        });
    }

    /// The stream of the subscription `id` closed without its end (HTTP): listen again
    /// after a backoff that doubles from [`LISTEN_BACKOFF`] up to [`MAX_LISTEN_DELAY`],
    /// at most [`MAX_LISTEN_RECONNECTS`] times in a row without a steady stream (one
    /// acknowledged at least [`LISTEN_STEADY`] before it closed). False when it is over
    /// instead.
    fn reconnect_subscription(&mut self, now: Instant, id: CallId) -> bool {
        let Some(call) = self.calls.get_mut(&id) else {
            return false;
        };
        if call
            .acknowledged_at
            .is_some_and(|at| now.saturating_duration_since(at) >= LISTEN_STEADY)
        {
            call.reconnects = 0;
        }
        if call.reconnects >= MAX_LISTEN_RECONNECTS || self.state == State::Closed {
            return false;
        }
        let delay = LISTEN_BACKOFF
            .saturating_mul(1u32 << call.reconnects.min(16))
            .min(MAX_LISTEN_DELAY);
        call.reconnects += 1;
        call.rpc_id = None;
        call.arm(now, delay);
        let attempt = call.reconnects;
        self.events.push_back(Event::SubscriptionReconnecting {
            subscription: id,
            attempt,
            delay,
        });
        true
    }

    /// The server tore the subscription `id` down (`notifications/cancelled`).
    fn subscription_cancelled(&mut self, id: CallId) {
        let Some(call) = self.calls.remove(&id) else {
            return;
        };
        if let Some(rpc) = call.rpc_id {
            self.by_rpc.remove(&rpc);
            remember(&mut self.ignored_ids, rpc);
        }
        self.events.push_back(Event::SubscriptionEnded {
            subscription: id,
            end: ListenEnd::CancelledByServer,
        });
    }

    fn peer_error(&mut self, error: PeerError) {
        self.events.push_back(Event::PeerError(error));
    }

    fn push_notification(&mut self, n: jsonrpc::Notification) {
        for method in cache::invalidated_by(&n.method) {
            self.cache.invalidate(method);
        }
        self.events.push_back(Event::Notification(n));
    }

    pub(crate) fn close_with(&mut self, reason: CloseReason) {
        if self.state == State::Closed {
            return;
        }
        self.state = State::Closed;
        self.handshake = None;
        self.restart_at = None;
        let mut ids: Vec<CallId> = self.calls.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.complete(id, Err(CallError::Closed(reason.clone())));
        }
        let mut inputs: Vec<InputId> = self.inputs.drain().map(|(k, _)| k).collect();
        inputs.sort();
        for input in inputs {
            self.events.push_back(Event::InputCancelled { input });
        }
        self.outgoing.clear();
        self.queued_bytes = 0;
        self.close_reason = Some(reason.clone());
        self.events.push_back(Event::Closed { reason });
    }

    /// The peer the calls in flight were sent to is gone (a new session, a new
    /// process): each such call fails with `error` (never re-sent: whether it ran
    /// cannot be known; a call whose task that peer holds, between two polls, too),
    /// and every pending input is void, in id order (the events must
    /// not depend on the map's hashing, or a transcript replayed in another process
    /// would see them in another order). Calls not yet written stay queued.
    pub(crate) fn fail_in_flight(&mut self, error: &CallError) {
        self.fail_in_flight_but(error, &[]);
    }

    /// [`Session::fail_in_flight`], but the calls whose requests (JSON-RPC ids) are
    /// `spared` stay in flight.
    pub(crate) fn fail_in_flight_but(&mut self, error: &CallError, spared: &[i64]) {
        let mut in_flight: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| !c.rpc_id.is_some_and(|r| spared.contains(&r)))
            // A call following its task is in flight between polls too: the task is
            // the old peer's, and sending the call's request again would make another.
            .filter(|(_, c)| c.rpc_id.is_some() || !c.pending.is_empty() || c.task.is_some())
            .map(|(id, _)| *id)
            .collect();
        in_flight.sort_unstable();
        for id in in_flight {
            self.complete(id, Err(error.clone()));
        }
        let mut stale: Vec<_> = self.inputs.drain().map(|(k, _)| k).collect();
        stale.sort();
        for input in stale {
            self.events.push_back(Event::InputCancelled { input });
        }
    }

    /// Holds every deadline (the handshake's, the connection's, the calls') while a
    /// person approves an authorization in a browser: that takes as long as it takes,
    /// and the authorization flow has its own bound.
    pub(crate) fn pause_for_approval(&mut self, now: Instant) {
        if self.approval_since.is_none() {
            self.approval_since = Some(now);
        }
    }

    /// Whether the deadlines are held for a person's approval.
    pub(crate) fn paused_for_approval(&self) -> bool {
        self.approval_since.is_some()
    }

    /// The approval ended: every deadline moves by the time it took.
    pub(crate) fn resume_after_approval(&mut self, now: Instant) {
        let Some(since) = self.approval_since.take() else {
            return;
        };
        let held = now.saturating_duration_since(since);
        self.connect_deadline += held;
        if let Some(h) = &mut self.handshake {
            h.deadline += held;
        }
        for call in self.calls.values_mut() {
            if let Some(d) = &mut call.deadline {
                // A deadline set during the approval (a call made, a poll armed) was
                // held only since it was set.
                *d += now.saturating_duration_since(since.max(call.armed));
            }
        }
    }

    /// Pauses call deadlines while a legacy server waits for the user; called once per
    /// request for input. A call paused by more than `max_input_rounds` requests is
    /// credited with the time paused so far and from then on keeps its deadline.
    fn pause_deadlines(&mut self, now: Instant) {
        let since = *self.paused_since.get_or_insert(now);
        let most = self.config.limits.max_input_rounds;
        for call in self.calls.values_mut() {
            if call.input_pauses > most {
                continue;
            }
            call.input_pauses += 1;
            if call.input_pauses > most
                && let Some(d) = &mut call.deadline
            {
                // Held only since its deadline was set, if that was during the pause.
                *d += now.saturating_duration_since(since.max(call.armed));
            }
        }
    }

    /// Whether `call`'s deadline is held now (a legacy server waits for the user).
    fn held(&self, call: &Call) -> bool {
        self.paused_since.is_some() && call.input_pauses <= self.config.limits.max_input_rounds
    }

    /// What is left of `call`'s time at `now`: while its deadline is held, what was left
    /// when the hold began for it (the person's time is not the server's).
    fn time_left(&self, call: &Call, now: Instant) -> Option<Duration> {
        let clock = match self.paused_since {
            Some(since) if self.held(call) => since.max(call.armed).min(now),
            _ => now,
        };
        call.deadline.map(|d| d.saturating_duration_since(clock))
    }

    fn resume_deadlines(&mut self, now: Instant) {
        let waiting = self
            .inputs
            .values()
            .any(|p| matches!(p, PendingInput::Legacy { .. }));
        if waiting {
            return;
        }
        if let Some(since) = self.paused_since.take() {
            let most = self.config.limits.max_input_rounds;
            for call in self.calls.values_mut() {
                if call.input_pauses <= most
                    && let Some(d) = &mut call.deadline
                {
                    // A deadline set during the pause (a call made, a page asked
                    // for) was held only since it was set.
                    *d += now.saturating_duration_since(since.max(call.armed));
                }
            }
        }
    }
}

impl Call {
    /// Sets its deadline `wait` from `now`.
    fn arm(&mut self, now: Instant, wait: Duration) {
        self.deadline = Some(now + wait);
        self.armed = now;
    }
}

fn remember<T>(ring: &mut VecDeque<T>, id: T) {
    if ring.len() >= RECENT_IDS {
        ring.pop_front();
    }
    ring.push_back(id);
}

/// The server capability `method` needs (`completions`, `resources.subscribe`, …) when
/// the server's `capabilities` (its `initialize` result, or 2026-07-28 `server/discover`)
/// do not declare it: both sides use only negotiated capabilities. A capability declared
/// as any value but `null` is there (`{}` means supported), but `resources.subscribe`
/// and the 2025-11-25 `tasks.list` and `tasks.cancel` are members that must be declared
/// in their own right (`subscribe: true`). Capabilities that are not an object say
/// nothing either way, and nothing is refused on their account; nor is any method not
/// listed here (`ping`, extensions, methods of the caller's own making). The primitives
/// (`tools/*`, `prompts/*`, `resources/list`, `resources/read`, …) are not checked: a
/// server that serves them without declaring them is still used, and one that does not
/// serve them answers `-32601` itself.
fn lacking_capability(method: &str, era: Era, capabilities: &Value) -> Option<&'static str> {
    let caps = capabilities.as_object()?;
    let needed = match method {
        "resources/subscribe" | "resources/unsubscribe" => "resources.subscribe",
        "completion/complete" => "completions",
        "logging/setLevel" => "logging",
        // The 2026 tasks extension has its own declaration (and no listing).
        request::TASKS_LIST if era == Era::Legacy => "tasks.list",
        request::TASKS_CANCEL if era == Era::Legacy => "tasks.cancel",
        _ => return None,
    };
    let present = |v: Option<&Value>| v.is_some_and(|v| !v.is_null());
    let declared = match needed.split_once('.') {
        None => present(caps.get(needed)),
        Some(("resources", member)) => {
            caps.get("resources").and_then(|r| r.get(member)) == Some(&Value::Bool(true))
        }
        Some((capability, member)) => present(caps.get(capability).and_then(|c| c.get(member))),
    };
    (!declared).then_some(needed)
}

/// For a method of the Skills extension, what the server must have declared for it and
/// did not.
fn undeclared(method: &str, server: Option<&ServerDetails>) -> Option<&'static str> {
    // The declaration is looked up only for the methods it governs, not on every call.
    let support = || server.and_then(crate::skills::SkillsSupport::of);
    if method == "resources/directory/read" {
        return (!support().is_some_and(|s| s.directory_read))
            .then_some("io.modelcontextprotocol/skills with directoryRead: true");
    }
    (method.starts_with("skills/") && support().is_none()).then_some(crate::skills::EXTENSION)
}
