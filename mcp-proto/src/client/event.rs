//! What the client machine reports: events, call outcomes and errors.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;
use serde_json::value::RawValue;

use super::input::{LogMessage, Root, SamplingRequest, SamplingResult};

use crate::http::RequestError;
use crate::jsonrpc::{DecodeError, ErrorObject, Notification, RequestId};
use crate::model::{ElicitAction, ElicitResult, ElicitationParams, ServerDetails};
use crate::sse::SseError;
use crate::version::{Era, ProtocolVersion};

/// Identifies one call for its whole life, however many JSON-RPC ids (MRTR rounds,
/// version retries) it goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallId(pub(crate) u64);

impl CallId {
    /// The call numbered `n` (calls are numbered from 0 in the order they are made): for
    /// tests and records. A number the machine never gave out names no call.
    #[must_use]
    pub const fn from_raw(n: u64) -> Self {
        CallId(n)
    }

    /// Its number.
    #[must_use]
    pub const fn raw(self) -> u64 {
        self.0
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call#{}", self.0)
    }
}

/// Identifies one request for input from the server (legacy server→client request or
/// one entry of a 2026 `input_required` round). Answer it with
/// [`crate::client::Client::respond`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InputId(pub(crate) u64);

impl fmt::Display for InputId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "input#{}", self.0)
    }
}

/// Something happened. Drain with [`crate::client::Client::poll_event`] after every input.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// The era and version are settled; calls flow from now on.
    Connected(Box<ServerDetails>),
    /// A call finished, one way or the other. Exactly one per call.
    CallCompleted {
        /// The call.
        call: CallId,
        /// The result or the reason it failed.
        outcome: Result<CallOutput, CallError>,
    },
    /// `notifications/progress` for a call that asked for progress.
    Progress {
        /// The call.
        call: CallId,
        /// Progress so far.
        progress: f64,
        /// Total, when known.
        total: Option<f64>,
        /// A message for people.
        message: Option<String>,
    },
    /// The server needs an answer from the user (elicitation, sampling, roots).
    InputRequested {
        /// Answer with this id.
        input: InputId,
        /// The call it belongs to, when known (always known in the modern era).
        call: Option<CallId>,
        /// What is asked.
        request: InputRequest,
    },
    /// An input request is void (the server cancelled it or its call ended).
    InputCancelled {
        /// The input request.
        input: InputId,
    },
    /// A log message from the server (`notifications/message`). `call` names the call
    /// it belongs to when that is known: over Streamable HTTP, a message that came on
    /// the response stream of a call's request.
    Log {
        /// The call it belongs to, when known.
        call: Option<CallId>,
        /// The message.
        message: LogMessage,
    },
    /// 2025-11-25: the server says the out-of-band step of a URL-mode elicitation
    /// finished (`notifications/elicitation/complete`). Only ids the client was shown
    /// (in an `elicitation/create` or a `-32042` error) are reported, each once; a call
    /// that failed with [`CallError::UrlElicitationRequired`] can be retried now.
    ElicitationCompleted {
        /// The `elicitationId`.
        elicitation_id: String,
    },
    /// 2026-07-28: the server acknowledged the subscription started by the call
    /// `subscription` (a [`CallRequest::listen`](super::CallRequest::listen)).
    SubscriptionAcknowledged {
        /// The listen call.
        subscription: CallId,
        /// What the server agreed to send.
        acknowledged: super::ListenFilter,
        /// What was asked for and left out (empty when everything was granted).
        refused: super::ListenFilter,
    },
    /// 2026-07-28: a notification of the subscription `subscription` (routed by its
    /// `subscriptionId` on stdio, by its response stream over HTTP).
    SubscriptionNotification {
        /// The listen call.
        subscription: CallId,
        /// Its typed reading, for the change notifications.
        change: Option<super::Change>,
        /// The notification as received.
        notification: Notification,
    },
    /// The server asked for input of a kind the client did not declare (a legacy server
    /// request, refused on the spot; a 2026 input round, which fails its call): `kind`
    /// is `"elicitation"`, `"elicitation (form)"`, `"elicitation (url)"`, `"sampling"`
    /// or `"roots"`. For an application that runs without a person, to say which
    /// capability the server wanted.
    InputUndeclared {
        /// What was asked for.
        kind: &'static str,
    },
    /// The stdio server exited after connecting and is started again after `delay`
    /// ([`RestartPolicy`](super::RestartPolicy)); [`Event::Connected`] follows once the
    /// fresh process is connected. Calls in flight failed with
    /// [`CallError::ServerExited`] just before.
    ServerRestarting {
        /// Which restart in a row this is, from 1.
        attempt: u32,
        /// The wait before the process is started again.
        delay: std::time::Duration,
    },
    /// 2026-07-28: the stream of the subscription `subscription` closed without its
    /// end (HTTP); it listens again after `delay` (doubling from 1 s up to 30 s; after 5
    /// attempts in a row without a stream that lasted 30 s after its acknowledgement it
    /// ends instead).
    SubscriptionReconnecting {
        /// The listen call.
        subscription: CallId,
        /// Which attempt in a row this is, from 1.
        attempt: u32,
        /// The wait before it.
        delay: std::time::Duration,
    },
    /// 2026-07-28: the subscription `subscription` is over. It is the listen call's one
    /// completion: no [`Event::CallCompleted`] follows for it.
    SubscriptionEnded {
        /// The listen call.
        subscription: CallId,
        /// How it ended.
        end: super::ListenEnd,
    },
    /// A task-augmented call (2025-11-25) or a `tools/call` the server chose to run as
    /// a task (2026-07-28 extension) now has a task behind it. The call stays open: the
    /// machine polls the task (honouring its poll interval) and completes the call with
    /// its final result, error or cancellation. Its status changes follow as
    /// [`Event::TaskStatus`].
    TaskCreated {
        /// The call.
        call: CallId,
        /// The task as created.
        task: super::Task,
    },
    /// A task's status (or status message) changed, as a poll, a 2025-11-25
    /// `notifications/tasks/status` or a 2026-07-28 `notifications/tasks` showed it.
    /// `call` is `None` for a status notification about a task no call of this client
    /// runs (a task started by an earlier connection, say). Like notifications, these
    /// are dropped (and counted in [`Event::NotificationsDropped`]) while too many wait
    /// to be polled; the call itself still completes.
    TaskStatus {
        /// The call the task runs behind, when there is one.
        call: Option<CallId>,
        /// The task now.
        task: super::Task,
    },
    /// A notification from the server not consumed by the machine (list changes,
    /// log messages, resource updates, …; read the change notifications with
    /// [`Change::from_notification`](super::Change::from_notification)). Those of a 2026
    /// subscription are [`Event::SubscriptionNotification`]s instead.
    Notification(Notification),
    /// Notifications were dropped because too many were waiting to be polled.
    NotificationsDropped {
        /// How many.
        count: u64,
    },
    /// The server did something wrong that harmed no call (or the harm is reported on the
    /// call as well).
    PeerError(PeerError),
    /// Over Streamable HTTP, a tool from `tools/list` was left out because its
    /// `x-mcp-header` annotations are invalid; the other tools stay usable.
    ToolExcluded {
        /// The tool name.
        tool: String,
        /// What is wrong with its annotations.
        reason: crate::http::xmcp::InvalidAnnotation,
    },
    /// Authorization needs a person: open `url` in a browser (or show it), then hand
    /// the URL the browser comes back to to
    /// [`Client::handle_authorization_callback`](crate::client::Client::handle_authorization_callback).
    /// Requests wait meanwhile, their deadlines held.
    AuthorizationRequested {
        /// The authorization server's URL, with the request in its query.
        url: String,
    },
    /// The authorization produced new credentials (tokens, a client registration):
    /// keep them for the next run. They hold secrets: store them privately, never print
    /// them.
    CredentialsChanged(Box<crate::auth::Credentials>),
    /// The connection is over. No more events follow.
    Closed {
        /// Why.
        reason: CloseReason,
    },
}

/// A successful call.
#[derive(Debug, Clone)]
pub struct CallOutput {
    /// The result object, verbatim (for a paginated listing: the last page).
    pub result: Box<RawValue>,
    /// For paginated listings: the items of every page, in order.
    pub items: Vec<Box<RawValue>>,
    /// Pages fetched (1 for plain calls).
    pub pages: u32,
    /// MRTR rounds it took (0 when the first answer was final).
    pub rounds: u32,
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    #[error("server error: {0}")]
    Server(ErrorObject),
    /// No answer within the call's timeout (`notifications/cancelled` was sent): the
    /// call's own timeout, else `Limits::request_timeout`. The message names that limit.
    #[error(
        "no answer within {0:?} (the call's timeout: CallRequest::timeout, else Limits::request_timeout)"
    )]
    Timeout(std::time::Duration),
    /// Cancelled by the caller.
    #[error("cancelled")]
    Cancelled,
    /// The connection closed before the answer.
    #[error("connection closed: {0}")]
    Closed(CloseReason),
    /// The answer is not what the method returns.
    #[error("invalid response from server: {0}")]
    InvalidResponse(String),
    /// The server refused the request for want of authorization, and authorizing
    /// failed.
    #[error("authorization failed: {0}")]
    Authorization(crate::auth::AuthError),
    /// The server asked for input more times than `Limits::max_input_rounds`.
    #[error("the server asked for input more than {0} times")]
    TooManyRounds(u32),
    /// A listing went past `Limits::max_list_pages`, `max_list_items` or
    /// `max_list_bytes` (the name of the limit).
    #[error("listing exceeded its limit ({0})")]
    ListTooLong(&'static str),
    /// The server asked for input the client did not declare or that breaks the limits.
    #[error("invalid input request: {0}")]
    InvalidInputRequest(String),
    /// The user (or handler) refused to answer an input request.
    #[error("input refused: {0}")]
    InputRefused(ErrorObject),
    /// 2025-11-25: the server needs URL-mode elicitations completed first (`-32042`,
    /// URLElicitationRequiredError). Its elicitations were presented as
    /// [`Event::InputRequested`] before this error; retry the call once the user has
    /// completed them ([`Event::ElicitationCompleted`] names each one the server
    /// reports finished).
    #[error("the server needs URL elicitations completed first: {}", .error.message)]
    UrlElicitationRequired {
        /// The error as the server sent it (code `-32042`, `data` kept).
        error: ErrorObject,
        /// The `elicitationId` of each elicitation presented.
        elicitations: Vec<String>,
    },
    /// The HTTP exchange failed: a status other than success (with the JSON-RPC error of
    /// the body, when there was one), or no response at all.
    #[error("{0}")]
    Http(HttpFailure),
    /// The stdio server exited while the call was in flight and is being started again
    /// ([`RestartPolicy`](super::RestartPolicy)). Whether the call ran cannot be known;
    /// it was not sent again.
    #[error(
        "the server exited while the call was in flight (it is being restarted; the call was not sent again)"
    )]
    ServerExited,
    /// The legacy session expired (HTTP 404) while the call was in flight, and whether
    /// it ran cannot be known (its answer had begun on the old session), or it met an
    /// expired session a second time; a new session is being set up. The call was not
    /// replayed.
    #[error("the session expired while the call was in flight")]
    SessionExpired,
    /// The request could not be written (a header name or value that cannot go on the
    /// wire, say); it never left the client.
    #[error("the request cannot be sent: {0}")]
    Unsendable(String),
    /// Over 2026-07-28 HTTP: the arguments cannot be mirrored into the `Mcp-Param-*`
    /// headers the tool declares (an integer beyond ±(2^53−1), …); never sent.
    #[error("the request cannot be sent: {0}")]
    HeaderValue(crate::http::headers::HeaderError),
    /// Over 2026-07-28 HTTP: the tool was left out of `tools/list` because its
    /// `x-mcp-header` annotations are invalid, so no header set could satisfy the server;
    /// never sent.
    #[error("tool {tool:?} was excluded from tools/list: {reason}")]
    ToolExcluded {
        /// The tool.
        tool: String,
        /// What is wrong with its annotations.
        reason: crate::http::xmcp::InvalidAnnotation,
    },
    /// The method does not exist in the negotiated protocol version (`ping` in
    /// 2026-07-28); nothing was sent.
    #[error("{method} does not exist in protocol version {version}")]
    NotInVersion {
        /// The method.
        method: String,
        /// The negotiated version.
        version: ProtocolVersion,
    },
    /// The task behind the call cannot be followed: the server's task record is
    /// unusable (an unknown status, an id over `Limits::max_task_id_bytes`, a missing
    /// payload, another task's id, …) or the task did not finish within
    /// `Limits::max_task_polls` polls. A task still running was sent `tasks/cancel`
    /// (unless a 2025-11-25 server did not declare `tasks.cancel`).
    #[error("task: {0}")]
    Task(super::TaskProblem),
    /// The task behind the call was cancelled (by the server, or by a cancel the
    /// client sent before the call completed).
    #[error("task {task_id} was cancelled")]
    TaskCancelled {
        /// The task.
        task_id: String,
    },
    /// The method needs a capability or an extension feature the server did not
    /// declare: a server capability of a utility, named as the server would declare it
    /// (`resources.subscribe`, `completions`, `logging`, and in 2025-11-25 `tasks.list`
    /// and `tasks.cancel`; not the primitives `tools`, `prompts`, `resources`), checked
    /// once the server's capabilities are known (a call made before waits for them);
    /// `skills/*` without `io.modelcontextprotocol/skills`; `resources/directory/read`
    /// without its `directoryRead: true`. Nothing was sent.
    #[error("{method} needs {feature}, which the server did not declare")]
    NotDeclared {
        /// The method.
        method: String,
        /// What the server would have had to declare.
        feature: &'static str,
    },
    /// The server sent something in place of the answer that could not be used: a
    /// message that does not decode ([`PeerError::Malformed`], including one nested
    /// deeper than `Limits::max_nesting_depth`), or one longer than
    /// `Limits::max_message_bytes` ([`PeerError::Oversized`]). An oversized stdio line
    /// whose id cannot be read fails every call whose request was written, since any of
    /// them may have been the one it answered.
    #[error("unusable message from the server: {0}")]
    Peer(PeerError),
}

impl CallError {
    /// The JSON-RPC error code, for errors the server sent.
    #[must_use]
    pub fn code(&self) -> Option<i64> {
        match self {
            CallError::Server(e) | CallError::UrlElicitationRequired { error: e, .. } => {
                Some(e.code)
            }
            CallError::Http(h) => h.error.as_ref().map(|e| e.code),
            _ => None,
        }
    }

    /// For a `-32602` (invalid params) from the server: whether it names an unknown tool
    /// or prompt, or arguments it rejected, as far as the server says which.
    #[must_use]
    pub fn invalid_params(&self) -> Option<InvalidParams> {
        let error = match self {
            CallError::Server(e) => e,
            CallError::Http(h) => h.error.as_ref()?,
            _ => return None,
        };
        (error.code == crate::jsonrpc::codes::INVALID_PARAMS).then(|| InvalidParams::of(error))
    }

    /// The HTTP status, for failed HTTP exchanges.
    #[must_use]
    pub fn http_status(&self) -> Option<u16> {
        match self {
            CallError::Http(h) => h.status,
            _ => None,
        }
    }
}

/// What a `-32602` is about. Servers use the one code for an unknown tool (or prompt,
/// or resource) and for arguments they refuse; this reads which one from `data` (a
/// `reason` member) or, failing that, from the message wording common SDKs use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidParams {
    /// The named tool, prompt or resource does not exist.
    UnknownName,
    /// The arguments were rejected.
    InvalidArguments,
    /// The server did not say which.
    Unspecified,
}

impl InvalidParams {
    fn of(error: &ErrorObject) -> InvalidParams {
        let reason = error
            .data
            .as_ref()
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let text = format!("{reason} {}", error.message).to_ascii_lowercase();
        let unknown = [
            "unknown tool",
            "unknown prompt",
            "not found",
            "no such",
            "unknown_tool",
        ];
        let invalid = ["argument", "validation", "invalid input", "schema"];
        if unknown.iter().any(|k| text.contains(k)) {
            InvalidParams::UnknownName
        } else if invalid.iter().any(|k| text.contains(k)) {
            InvalidParams::InvalidArguments
        } else {
            InvalidParams::Unspecified
        }
    }
}

/// An HTTP exchange that did not produce a JSON-RPC answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HttpFailure {
    /// The status, when a response arrived.
    pub status: Option<u16>,
    /// The JSON-RPC error in the body, when there was one (code and `data` kept).
    pub error: Option<ErrorObject>,
    /// What went wrong, for people.
    pub detail: String,
    /// The failure below HTTP, when the exchange never got a response (refused, reset,
    /// TLS, timeout, …), as the driver reported it.
    pub transport: Option<Box<super::TransportFailure>>,
    /// Why a successful JSON response was not the answer, when that was the failure.
    pub body: Option<Box<UnreadableBody>>,
}

/// Why a successful (2xx) JSON response did not answer its request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnreadableBody {
    /// A JSON-RPC message, but not the answer (another id, a notification, a request).
    #[error("the JSON response did not answer the request")]
    NotTheAnswer,
    /// Not a JSON-RPC message.
    #[error("the JSON response is not a JSON-RPC message: {error}{}", hint.as_ref().map_or(String::new(), |h| format!(" ({h})")))]
    NotAMessage {
        /// Why it could not be decoded.
        error: crate::jsonrpc::DecodeError,
        /// What most likely explains it, when something does.
        hint: Option<BodyHint>,
    },
}

/// What most often explains a JSON response that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BodyHint {
    /// The server compressed it (this `Content-Encoding`, at most 40 characters of it);
    /// the client asks for no encoding and reads none.
    #[error("Content-Encoding {0} is not supported")]
    ContentEncoding(String),
    /// It starts with a UTF-8 byte order mark, which a JSON text sent over a network
    /// must not have.
    #[error("it starts with a byte order mark")]
    ByteOrderMark,
}

impl BodyHint {
    /// What explains `body`, received with `content_encoding`, when something does.
    pub(crate) fn of(body: &[u8], content_encoding: Option<&str>) -> Option<BodyHint> {
        match content_encoding.map(str::trim) {
            Some(e) if !e.eq_ignore_ascii_case("identity") => {
                Some(BodyHint::ContentEncoding(e.chars().take(40).collect()))
            }
            _ if body.starts_with(b"\xEF\xBB\xBF") => Some(BodyHint::ByteOrderMark),
            _ => None,
        }
    }
}

impl HttpFailure {
    /// A failure with these parts.
    #[must_use]
    pub fn new(status: Option<u16>, error: Option<ErrorObject>, detail: impl Into<String>) -> Self {
        HttpFailure {
            status,
            error,
            detail: detail.into(),
            transport: None,
            body: None,
        }
    }

    /// A successful JSON response (`status`) that was not the answer.
    #[must_use]
    pub fn unreadable(status: u16, why: UnreadableBody) -> Self {
        HttpFailure {
            status: Some(status),
            error: None,
            detail: why.to_string(),
            transport: None,
            body: Some(Box::new(why)),
        }
    }

    /// A failure below HTTP: no response arrived.
    #[must_use]
    pub fn from_transport(failure: super::TransportFailure) -> Self {
        HttpFailure {
            status: None,
            error: None,
            detail: failure.to_string(),
            transport: Some(Box::new(failure)),
            body: None,
        }
    }
}

impl fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(s) => write!(f, "HTTP {s}")?,
            None => f.write_str("HTTP exchange failed")?,
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        if let Some(e) = &self.error {
            write!(f, " ({e})")?;
        }
        Ok(())
    }
}

/// Why the connection closed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CloseReason {
    /// [`crate::client::Client::close`] was called.
    #[error("closed by the client")]
    Local,
    /// The server closed its output (or exited).
    #[error("the server closed the connection{}", if *.truncated > 0 { format!(" mid-message ({} bytes unread)", .truncated) } else { String::new() })]
    ServerExited {
        /// Bytes of an unfinished message at the end.
        truncated: usize,
    },
    /// Version negotiation failed.
    #[error("version negotiation failed: {0}")]
    Negotiation(String),
    /// The server sent requests while not reading what the client wrote: answering
    /// one more would have taken the bytes waiting past
    /// `Limits::max_queued_output_bytes`.
    #[error(
        "the server does not read its input: {waiting} bytes wait to be written (max_queued_output_bytes)"
    )]
    PeerNotReading {
        /// Bytes waiting to be written when the connection was closed.
        waiting: usize,
    },
    /// stdio: the server stopped reading its input (a write failed as closed) and its
    /// output did not end within
    /// [`STOPPED_READING_DRAIN`](crate::client::STOPPED_READING_DRAIN): it runs on
    /// without reading what it is sent.
    #[error(
        "the server stopped reading its input ({detail}) and did not end its output within {:?}",
        crate::client::STOPPED_READING_DRAIN
    )]
    StoppedReading {
        /// The failed write, as the driver reported it.
        detail: String,
    },
    /// Streamable HTTP: the `Mcp-Session-Id` the server issued cannot be sent back (too
    /// long, or not visible ASCII).
    #[error("unusable session id: {0}")]
    InvalidSessionId(String),
    /// `EraMode::Modern` and the server is legacy.
    #[error("the server only speaks the legacy era (2025 handshake); era mode is modern")]
    LegacyServer,
    /// The server answered `initialize` or `server/discover` with an error.
    #[error("the server refused to start: {0}")]
    Refused(ErrorObject),
    /// `initialize`, or over stdio the `server/discover` of a client pinned to the
    /// modern era, was not answered within `Limits::initialize_timeout` (the duration).
    #[error("the server did not answer the handshake within {0:?} (Limits::initialize_timeout)")]
    HandshakeTimeout(std::time::Duration),
    /// Connecting as a whole (starting or reaching the server, the era probe, the
    /// handshake, any authorization on the way) did not finish within
    /// `Limits::connect_timeout` (the duration), whatever step it was at.
    #[error("connecting did not finish within {0:?} (Limits::connect_timeout)")]
    ConnectTimeout(std::time::Duration),
    /// The server answered the handshake over HTTP with a failure that says nothing
    /// about its era (403, 5xx, a network error, a timeout).
    #[error("{0}")]
    Http(HttpFailure),
    /// The transport failed for good (the stdio server could not be started again).
    #[error("{0}")]
    Transport(super::TransportFailure),
    /// The server wants authorization (HTTP 401).
    #[error("the server requires authorization (HTTP 401)")]
    AuthRequired {
        /// The `WWW-Authenticate` challenge, when present.
        challenge: Option<String>,
    },
    /// The server wants authorization and the authorization flow failed.
    #[error("authorization failed: {0}")]
    Authorization(crate::auth::AuthError),
    /// The 2024-11-05 HTTP+SSE transport failed: its stream did not open, named no
    /// usable endpoint, or was lost.
    #[error("{0}")]
    HttpSse(super::http::HttpSseError),
}

/// Misbehaviour of the server that did not end the connection, or trouble on the way to
/// it that harmed no call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// A message that is not a JSON-RPC message, is nested deeper than
    /// `Limits::max_nesting_depth` ([`DecodeError::TooDeep`]), or would take more than
    /// `Limits::max_parsed_bytes` once parsed ([`DecodeError::TooLargeOnceParsed`]).
    #[error("malformed message: {error}")]
    Malformed {
        /// What is wrong.
        error: DecodeError,
    },
    /// A line longer than `Limits::max_message_bytes` (discarded).
    #[error("message of {seen} bytes exceeds the limit of {limit} bytes (max_message_bytes)")]
    Oversized {
        /// Its size.
        seen: usize,
        /// The limit in force (`Limits::max_message_bytes`).
        limit: usize,
    },
    /// A response to an id the client never used.
    #[error("response to unknown request id {0}")]
    UnknownResponse(String),
    /// A second response to a request already answered.
    #[error("duplicate response to request id {0}")]
    DuplicateResponse(String),
    /// An error response without an id.
    #[error("error response without an id: {0}")]
    UnattributedError(ErrorObject),
    /// A successful response without an id: it answers nothing the client can name.
    #[error("result without an id")]
    ResultWithoutId,
    /// A request the client does not serve or cannot accept now (already answered with
    /// an error).
    #[error("request {method} refused: {reason}")]
    RequestRefused {
        /// The method.
        method: String,
        /// Why.
        reason: String,
    },
    /// A request from the server reused the id of one of its requests still waiting for
    /// the user's answer, or of one already answered in this session (a stream replayed
    /// from before where it was resumed); ignored either way.
    #[error("request id {id} reused while still pending or after it was answered")]
    ReusedRequestId {
        /// The id.
        id: RequestId,
    },
    /// A notification the client acts on whose params do not have the required shape
    /// (ignored).
    #[error("malformed {method} notification: {detail}")]
    MalformedNotification {
        /// The notification's method.
        method: String,
        /// What is wrong, for people.
        detail: String,
    },
    /// 2026-07-28: a notification of a subscription came before its
    /// `notifications/subscriptions/acknowledged` (delivered all the same).
    #[error("{method} came before the subscription was acknowledged")]
    BeforeAcknowledgement {
        /// The notification's method.
        method: String,
    },
    /// Streamable HTTP: the event stream of a response could not be decoded (the event
    /// was dropped).
    #[error("event stream: {0}")]
    Sse(SseError),
    /// Streamable HTTP: the server did not accept `notifications/initialized`; calls go
    /// ahead regardless.
    #[error("notifications/initialized was not accepted ({}): {detail}", status_text(*.status))]
    InitializedRefused {
        /// The status, or `None` when no response arrived.
        status: Option<u16>,
        /// What went wrong, for people.
        detail: String,
    },
    /// Streamable HTTP: a request the client sends of its own accord (a notification or
    /// a response to a server request, the session's `GET` stream, the `DELETE` that
    /// ends the session) was refused for want of authorization the client cannot give:
    /// why (such as [`AuthError::DpopNonceRefused`](crate::auth::AuthError)).
    #[error("authorization failed: {0}")]
    Authorization(crate::auth::AuthError),
    /// Streamable HTTP: a notification or a response to a server request was refused
    /// (`status` set) or could not be delivered (`None`).
    #[error("{}", refused_text(*.status, .detail))]
    MessageRefused {
        /// The status, or `None` when no response arrived.
        status: Option<u16>,
        /// What went wrong, for people.
        detail: String,
    },
    /// Streamable HTTP: the legacy session expired (HTTP 404); a new one is being set
    /// up. Calls in flight that never ran (reads, and requests refused with a 404 of
    /// their own) are sent on it once; those whose answers had begun fail with
    /// [`CallError::SessionExpired`].
    #[error("the session expired (HTTP 404); starting a new one")]
    SessionExpired,
    /// Streamable HTTP: a notification or a response to a server request could not be
    /// written (a header value that cannot be sent); it never left the client.
    #[error("could not write a message: {0}")]
    MessageUnsendable(RequestError),
}

/// The most bytes of peer-supplied text (a method name, an id, a reason) kept in a
/// [`PeerError`] or echoed back to the peer; longer text is cut at a character boundary
/// and ends with `…`.
pub const MAX_ECHO_BYTES: usize = 256;

/// Cuts `text` to [`MAX_ECHO_BYTES`].
pub(crate) fn clip(text: &mut String) {
    if let Cow::Owned(cut) = clipped(text) {
        *text = cut;
    }
}

/// `text` cut to [`MAX_ECHO_BYTES`].
pub(crate) fn clipped(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_ECHO_BYTES {
        return Cow::Borrowed(text);
    }
    let mut end = MAX_ECHO_BYTES - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &text[..end]))
}

impl PeerError {
    /// The same error with every piece of peer-supplied text cut to [`MAX_ECHO_BYTES`].
    pub(crate) fn clipped(mut self) -> PeerError {
        match &mut self {
            PeerError::UnknownResponse(id) | PeerError::DuplicateResponse(id) => clip(id),
            PeerError::RequestRefused { method, reason }
            | PeerError::MalformedNotification {
                method,
                detail: reason,
            } => {
                clip(method);
                clip(reason);
            }
            PeerError::BeforeAcknowledgement { method } => clip(method),
            PeerError::InitializedRefused { detail, .. }
            | PeerError::MessageRefused { detail, .. } => clip(detail),
            PeerError::UnattributedError(e) => clip(&mut e.message),
            PeerError::ReusedRequestId {
                id: RequestId::String(id),
            } => clip(id),
            _ => {}
        }
        self
    }
}

fn status_text(status: Option<u16>) -> String {
    status.map_or_else(|| "no response".to_owned(), |s| format!("HTTP {s}"))
}

fn refused_text(status: Option<u16>, detail: &str) -> String {
    match status {
        Some(s) => format!("a notification or response was refused with HTTP {s}: {detail}"),
        None => format!("a notification or response could not be sent: {detail}"),
    }
}

/// A request for input from the server, the same for both eras.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum InputRequest {
    /// `elicitation/create`: ask the user to fill a form or visit a URL.
    Elicitation(ElicitationParams),
    /// `sampling/createMessage`. Answer with [`InputAnswer::sampled`], or refuse with
    /// [`InputAnswer::Error`].
    Sampling(Box<SamplingRequest>),
    /// `roots/list`, when the client declared roots without configuring a list
    /// ([`ClientConfig::roots()`](super::ClientConfig::roots())); with a list, the machine
    /// answers on its own. Answer with [`InputAnswer::roots`].
    Roots,
}

/// The answer to an [`InputRequest`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputAnswer {
    /// The result object (`ElicitResult`, `CreateMessageResult`, `ListRootsResult`).
    Result(Value),
    /// Refuse: legacy servers get this error as the response; in the modern era the call
    /// fails with [`CallError::InputRefused`].
    Error(ErrorObject),
}

impl InputAnswer {
    /// A sampling answer.
    #[must_use]
    pub fn sampled(result: SamplingResult) -> Self {
        InputAnswer::Result(serde_json::to_value(result).unwrap_or(Value::Null))
    }

    /// A `roots/list` answer.
    #[must_use]
    pub fn roots(roots: &[Root]) -> Self {
        InputAnswer::Result(super::input::roots_result(roots))
    }

    /// An elicitation answer.
    #[must_use]
    pub fn elicit(result: ElicitResult) -> Self {
        InputAnswer::Result(serde_json::to_value(result).unwrap_or(Value::Null))
    }

    /// Accept a form with these values.
    #[must_use]
    pub fn accept(content: serde_json::Map<String, Value>) -> Self {
        Self::elicit(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        })
    }

    /// Decline the elicitation.
    #[must_use]
    pub fn decline() -> Self {
        Self::elicit(ElicitResult {
            action: ElicitAction::Decline,
            content: None,
        })
    }

    /// Dismiss the elicitation.
    #[must_use]
    pub fn cancel() -> Self {
        Self::elicit(ElicitResult {
            action: ElicitAction::Cancel,
            content: None,
        })
    }
}

/// The caller broke the API contract. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApiMisuse {
    /// The connection is closed.
    #[error("the connection is closed")]
    Closed,
    /// `Limits::max_calls_in_flight` calls are already in flight.
    #[error("too many calls in flight (Limits::max_calls_in_flight): wait for one to complete")]
    TooManyCalls,
    /// 16 subscriptions (`subscriptions/listen` calls) are already open.
    #[error(
        "{} subscriptions are open, the most a client keeps: end one first",
        crate::client::session::MAX_SUBSCRIPTIONS
    )]
    TooManySubscriptions,
    /// No such call (or it already completed).
    #[error("unknown or completed call {0}")]
    UnknownCall(CallId),
    /// No such input request (or it was already answered or voided).
    #[error("unknown or answered input request {0}")]
    UnknownInput(InputId),
    /// The params are not a JSON object.
    #[error("request params must be a JSON object")]
    ParamsNotObject,
    /// The arguments of a tool call or a prompt are neither a JSON object nor null.
    #[error("arguments must be a JSON object (or null for none), not {0}")]
    ArgumentsNotObject(&'static str),
    /// The answer does not fit the input request (a form answer that fails its schema,
    /// a sampling result without a model, …). Nothing was sent: the request still
    /// waits for an answer.
    #[error("the answer does not fit the request: {0}")]
    InvalidAnswer(String),
    /// The command needs a capability the client did not declare (the name).
    #[error("the client did not declare the {0} capability")]
    Undeclared(&'static str),
}

/// Where the connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionState {
    /// Probing or handshaking.
    Connecting,
    /// Waiting for the caller to restart the transport.
    AwaitingRestart,
    /// Ready in this era and version.
    Ready(Era, ProtocolVersion),
    /// Closed.
    Closed,
}

pub(crate) fn id_text(id: &RequestId) -> String {
    id.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::codes;

    #[test]
    fn timeouts_name_the_limit_that_ran_out() {
        let call = CallError::Timeout(std::time::Duration::from_secs(30));
        assert_eq!(
            call.to_string(),
            "no answer within 30s (the call's timeout: CallRequest::timeout, else Limits::request_timeout)"
        );
        let handshake = CloseReason::HandshakeTimeout(std::time::Duration::from_secs(5));
        assert_eq!(
            handshake.to_string(),
            "the server did not answer the handshake within 5s (Limits::initialize_timeout)"
        );
        let connecting = CloseReason::ConnectTimeout(std::time::Duration::from_secs(60));
        assert_eq!(
            connecting.to_string(),
            "connecting did not finish within 60s (Limits::connect_timeout)"
        );
    }

    fn server(code: i64, message: &str, data: Option<Value>) -> CallError {
        let mut e = ErrorObject::new(code, message);
        e.data = data;
        CallError::Server(e)
    }

    #[test]
    fn invalid_params_says_which_when_the_server_does() {
        let cases = [
            ("Unknown tool: frobnicate", None, InvalidParams::UnknownName),
            (
                "MCP error -32602: Tool frobnicate not found",
                None,
                InvalidParams::UnknownName,
            ),
            (
                "Invalid arguments for tool add: a must be a number",
                None,
                InvalidParams::InvalidArguments,
            ),
            (
                "Input validation error",
                None,
                InvalidParams::InvalidArguments,
            ),
            (
                "bad",
                Some(serde_json::json!({"reason": "unknown_tool"})),
                InvalidParams::UnknownName,
            ),
            ("Invalid params", None, InvalidParams::Unspecified),
        ];
        for (message, data, expected) in cases {
            let e = server(codes::INVALID_PARAMS, message, data);
            assert_eq!(e.invalid_params(), Some(expected), "{message}");
        }
        assert_eq!(
            server(codes::METHOD_NOT_FOUND, "Unknown tool", None).invalid_params(),
            None
        );
        let http = CallError::Http(HttpFailure::new(
            Some(400),
            Some(ErrorObject::new(codes::INVALID_PARAMS, "Unknown tool: x")),
            "",
        ));
        assert_eq!(http.invalid_params(), Some(InvalidParams::UnknownName));
    }

    /// A refusal at a limit says which limit, so the caller knows what to raise or wait
    /// for.
    #[test]
    fn refusals_at_a_limit_name_it() {
        let calls = ApiMisuse::TooManyCalls.to_string();
        assert!(calls.contains("Limits::max_calls_in_flight"), "{calls}");
        let subscriptions = ApiMisuse::TooManySubscriptions.to_string();
        assert!(subscriptions.contains("16"), "{subscriptions}");
    }
}
