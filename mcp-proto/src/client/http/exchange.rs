//! One HTTP exchange: reading its response (JSON, SSE or an error body) and deciding
//! what its end means for the calls it carried.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::Instant;

use super::{GetStream, HttpLink};
use crate::auth::AuthError;
use crate::auth::challenge::bearer_challenge;
use crate::client::PeerError;
use crate::client::session::request::repeatable_method;
use crate::client::transmit::{TransportFailure, TransportFailureKind};
use crate::client::{BodyHint, CallError, CloseReason, Event, HttpFailure, UnreadableBody};
use crate::http::headers::{MAX_SESSION_ID_BYTES, MCP_SESSION_ID};
use crate::http::{ResponseError, ResponseEvent, ResponseHead, ResponseReader};
use crate::jsonrpc::{DecodeError, Message, RequestId, Response};
use crate::sse::{SseDecoder, SseError};
use crate::version::{Era, ProtocolVersion};

/// The shortest wait before a lost event stream is resumed, whatever its `retry` says.
const MIN_RESUME_DELAY: Duration = Duration::from_millis(100);

/// How long an event stream that owes nothing more may take to end before its
/// connection is given up (see [`Exchange::settled`]).
pub(super) const SETTLED_LINGER: Duration = Duration::from_secs(1);

/// Legacy sessions in a row that the server refused with `404` before any request on
/// them succeeded, at which the connection ends instead of making another.
const MAX_FRESH_SESSIONS_LOST: u8 = 2;

/// Identifies one HTTP exchange (one request and its response).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ExchangeId(pub(crate) u64);

/// Why an exchange ended without the answer it owed, below the status line.
#[derive(Debug)]
pub(super) enum Failure {
    /// Described for people (a malformed response, a body over its limit, …).
    Text(String),
    /// The connection failed under it.
    Transport(TransportFailure),
}

impl Failure {
    fn detail(&self) -> String {
        match self {
            Failure::Text(t) => t.clone(),
            Failure::Transport(f) => f.to_string(),
        }
    }

    fn into_parts(self) -> (String, Option<TransportFailure>) {
        match self {
            Failure::Text(t) => (t, None),
            Failure::Transport(f) => (f.to_string(), Some(f)),
        }
    }
}

impl fmt::Display for ExchangeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "exchange#{}", self.0)
    }
}

/// Why an exchange exists.
#[derive(Debug, Clone)]
pub(super) enum Purpose {
    /// A POSTed request; its response (or an SSE stream carrying it) is owed.
    Request { method: RequestMethod },
    /// A POSTed notification or response: `202` expected.
    Notify,
    /// The legacy `notifications/initialized`: later messages wait for its answer.
    Initialized,
    /// A GET: the server's own stream (`owed` empty) or the resumption of a stream that
    /// still owes the responses to `owed`.
    Get { owed: Vec<i64>, attempt: u32 },
    /// `DELETE` of the session, with the version its head names.
    Delete { version: Option<ProtocolVersion> },
    /// The GET stream of the 2024-11-05 HTTP+SSE transport (`sse2024.rs`).
    SseStream,
}

/// What the exchange of a request needs to know of its method, read once when it is
/// sent (the method itself is the machine's, not copied per request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RequestMethod {
    /// Sending it a second time is harmless ([`repeatable_method`]).
    pub(super) repeatable: bool,
    /// `initialize`: its answer may carry the session id.
    pub(super) initialize: bool,
    /// A 2026 subscription (`subscriptions/listen`), open as long as the server keeps it.
    pub(super) listen: bool,
}

impl RequestMethod {
    pub(super) fn of(method: &str) -> Self {
        RequestMethod {
            repeatable: repeatable_method(method),
            initialize: method == "initialize",
            listen: method == crate::client::session::request::LISTEN,
        }
    }
}

impl Purpose {
    /// Whether its request is a message's `POST` (kept for a resend in `replay`).
    pub(super) fn is_message(&self) -> bool {
        matches!(
            self,
            Purpose::Request { .. } | Purpose::Notify | Purpose::Initialized
        )
    }

    /// The HTTP method of its request.
    pub(super) fn http_method(&self) -> &'static str {
        match self {
            Purpose::Request { .. } | Purpose::Notify | Purpose::Initialized => "POST",
            Purpose::Get { .. } | Purpose::SseStream => "GET",
            Purpose::Delete { .. } => "DELETE",
        }
    }

    /// Whether sending the request a second time is harmless, should the first one have
    /// reached the server after all: everything but a request that may change something
    /// (`tools/call`, and any method this client does not know to be a read).
    pub(super) fn is_repeatable(&self) -> bool {
        match self {
            Purpose::Request { method } => method.repeatable,
            // Notifications and responses are idempotent to the server (a response to
            // an id already answered is ignored); GETs and DELETEs too.
            Purpose::Notify
            | Purpose::Initialized
            | Purpose::Get { .. }
            | Purpose::Delete { .. }
            | Purpose::SseStream => true,
        }
    }
}

impl Body {
    /// Bytes held for the body.
    pub(super) fn retained_bytes(&self) -> usize {
        match self {
            Body::Json(b) | Body::Failure(b) => b.capacity(),
            Body::Sse(d) => d.retained_bytes(),
            Body::Unknown | Body::Ignore => 0,
        }
    }
}

#[derive(Debug)]
pub(super) enum Body {
    /// Before the head.
    Unknown,
    /// A JSON body, bounded by `Limits::max_message_bytes`.
    Json(Vec<u8>),
    /// An event stream.
    Sse(Box<SseDecoder>),
    /// A failure status: the body is kept (bounded) for the report.
    Failure(Vec<u8>),
    /// A body nobody needs (202, DELETE).
    Ignore,
}

#[derive(Debug)]
pub(super) struct Exchange {
    pub(super) purpose: Purpose,
    pub(super) rpc_id: Option<i64>,
    pub(super) reader: ResponseReader,
    pub(super) head: Option<ResponseHead>,
    pub(super) body: Body,
    /// The request carried the session id.
    pub(super) had_session: bool,
    /// The legacy session it was sent on (see `HttpLink::session_epoch`).
    pub(super) session_epoch: u32,
    /// SSE: messages delivered on this stream.
    pub(super) delivered: u32,
    /// GET: the `Last-Event-ID` it resumes from.
    pub(super) resume_from: Option<String>,
    /// GET: the digest of the data of the event at `resume_from`, when one was
    /// dispatched there. Only that event sent again is a replay; a server that gives
    /// several events the same id sends new ones under it too.
    pub(super) resume_digest: Option<u64>,
    /// Legacy SSE: the id and the data digest of the last event dispatched with an id of
    /// its own, for the resumption point when the stream is lost.
    pub(super) last_own: Option<(String, u64)>,
    /// When the exchange is given up if its response has not started (the head of a
    /// GET stream, the `202` to a notification or a response): exchanges not tied to a
    /// call have a deadline of their own. Requests have their call's.
    pub(super) deadline: Option<Instant>,
    /// A request's message, kept to send again should the server refuse it for want
    /// of authorization or turn it away for being busy; dropped once the response's
    /// head says neither.
    pub(super) replay: Option<super::authorize::Replay>,
    /// An event stream that brought every answer it owed but has not ended: its
    /// connection is given up at `deadline` ([`SETTLED_LINGER`] after), or at once when
    /// a request waits for a connection, so that a server that never ends its streams
    /// cannot hold the pool.
    pub(super) settled: bool,
    /// A settled success without a stream was acted on before its end
    /// (`accepted_without_stream`).
    pub(super) decided: bool,
    /// The link's `auth_generation` when it was written: which `Authorization` it
    /// carried (for a `GET`; a message's is in its `replay`).
    pub(super) generation: u64,
    /// GET: sent again after a refusal for want of authorization, and after the flow
    /// it started: refused again, it starts no other.
    pub(super) after_refusal: bool,
    /// Sent again, with the token it carries, for the DPoP nonce the MCP server asked
    /// for: asked once more, it fails (see [`super::nonce`]).
    pub(super) nonce_resent: bool,
}

impl Exchange {
    /// The `WWW-Authenticate` challenges of a refusal that authorization may answer: a
    /// `401`, or a `403` whose Bearer challenge asks for more scope; `None` for any other
    /// `403`.
    pub(super) fn answerable_challenges(&self, status: u16) -> Option<Vec<&str>> {
        let challenges: Vec<&str> = (self.head.as_ref())
            .map(|h| h.header_all("www-authenticate").collect())
            .unwrap_or_default();
        let more_scope = || {
            bearer_challenge(challenges.iter().copied()).is_some_and(|c| c.is_insufficient_scope())
        };
        (status != 403 || more_scope()).then_some(challenges)
    }
}

/// A resumption waiting for its delay.
#[derive(Debug, Clone)]
pub(super) struct PendingResume {
    pub(super) due: Instant,
    pub(super) last_event_id: Option<String>,
    /// The digest of the data of the event at `last_event_id`, when known.
    pub(super) digest: Option<u64>,
    pub(super) owed: Vec<i64>,
    pub(super) attempt: u32,
    /// Waits (or waited) for the flow a `401` to this `GET` started; see
    /// [`Exchange::after_refusal`].
    pub(super) after_refusal: bool,
    /// The token it was opened again with for a DPoP nonce, if any; see
    /// [`NonceResent`](super::nonce::NonceResent).
    pub(super) nonce_resent: super::nonce::NonceResent,
}

/// The digest of an event's data, to tell an event sent again from a new one under the
/// same id. Fixed keys: the same data gives the same digest in every process.
fn data_digest(data: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    data.hash(&mut h);
    h.finish()
}

impl HttpLink {
    /// Reads what the reader of `id` has, acting on the head, the body and the end.
    pub(super) fn drive_exchange(&mut self, now: Instant, id: ExchangeId) {
        loop {
            let Some(x) = self.exchanges.get_mut(&id) else {
                return;
            };
            let Some(ev) = x.reader.poll_event() else {
                // A success with nothing to read whose body did not end with the bytes
                // at hand may never end: decide without it.
                if x.settled && !x.decided && matches!(x.body, Body::Ignore) {
                    x.decided = true;
                    let status = x.head.as_ref().map_or(0, |h| h.status);
                    let (purpose, rpc) = (x.purpose.clone(), x.rpc_id);
                    self.accepted_without_stream(now, &purpose, rpc, status);
                }
                return;
            };
            match ev {
                ResponseEvent::Head(head) => self.on_head(now, id, head),
                ResponseEvent::Body(bytes) => self.on_body(now, id, bytes),
                ResponseEvent::End { keep_alive } => {
                    let Some(x) = self.exchanges.remove(&id) else {
                        return;
                    };
                    let reusable = keep_alive && x.reader.leftover().is_empty();
                    self.pool.finished(now, id, reusable);
                    self.on_end(now, x);
                    return;
                }
                ResponseEvent::Error(e) => {
                    let Some(x) = self.exchanges.remove(&id) else {
                        return;
                    };
                    self.pool.abort(now, id);
                    // The server closing the connection early is a closed connection,
                    // reported as one (with where the response stopped); anything else
                    // is a response that could not be read.
                    let closed = match e {
                        ResponseError::ConnectionClosed => {
                            Some("the connection closed before a response began")
                        }
                        ResponseError::Truncated => {
                            Some("the connection closed in the middle of the response")
                        }
                        _ => None,
                    };
                    let failure = match closed {
                        Some(at) => Failure::Transport(TransportFailure::new(
                            TransportFailureKind::Closed,
                            at,
                        )),
                        None => Failure::Text(format!("malformed HTTP response: {e}")),
                    };
                    self.exchange_failed(now, x, None, None, failure);
                    return;
                }
            }
        }
    }

    fn on_head(&mut self, now: Instant, id: ExchangeId, head: ResponseHead) {
        // The server's next DPoP nonce, given on any response (RFC 9449 §8-9): every
        // request goes to the server URL's origin.
        if let Some(auth) = &mut self.auth
            && let Some(nonce) = head.header("dpop-nonce")
        {
            auth.handle_resource_nonce(&self.config.url, nonce.trim());
        }
        let max_error = self.config.max_error_body;
        let sse_limits = self.config.sse_limits.clone();
        let Some(x) = self.exchanges.get_mut(&id) else {
            return;
        };
        let status = head.status;
        if !matches!(status, 401 | 403 | 429 | 503) {
            // Sent again only after a refusal or a busy server's: the copy can go, its
            // buffer to the machine for a later request when nothing else holds it.
            if let Some(replay) = x.replay.take()
                && let Ok(json) = Arc::try_unwrap(replay.json)
            {
                self.client.keep_buffer(json);
            }
        }
        if (200..300).contains(&status) && x.had_session && x.session_epoch == self.session_epoch {
            // The server knows the session: a later 404 is an expiry, not a refusal of
            // every new session.
            self.fresh_sessions_lost = 0;
        }
        if (200..300).contains(&status)
            && matches!(x.purpose, Purpose::Request { .. })
            && let Some(auth) = &mut self.auth
        {
            // A request went through with the current token: step-ups count afresh.
            auth.handle_success();
        }
        // The media type, lowercased: copied only when it has capitals.
        let content_type = match head.header("content-type") {
            Some(c) => {
                let media = c.split(';').next().unwrap_or("").trim();
                if media.bytes().any(|b| b.is_ascii_uppercase()) {
                    Cow::Owned(media.to_ascii_lowercase())
                } else {
                    Cow::Borrowed(media)
                }
            }
            None => Cow::Borrowed(""),
        };
        if (200..300).contains(&status)
            && matches!(&x.purpose, Purpose::Request { method } if method.initialize)
            && let Some(sid) = head.header(MCP_SESSION_ID)
        {
            let why = if sid.len() > MAX_SESSION_ID_BYTES {
                Some(format!("is longer than {MAX_SESSION_ID_BYTES} bytes"))
            } else if sid.is_empty() || !sid.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
                Some("is not visible ASCII (0x21-0x7E)".to_owned())
            } else {
                None
            };
            match why {
                None => self.session_id = Some(sid.to_owned()),
                // Every later request would have to carry it: the session cannot be used.
                Some(why) => {
                    let reason = format!("the server's {MCP_SESSION_ID} {why}");
                    self.client
                        .close_with(CloseReason::InvalidSessionId(reason));
                    return;
                }
            }
        }
        let old_transport = self.sse.is_some();
        x.body = match (&x.purpose, status) {
            (Purpose::Delete { .. }, _) => Body::Ignore,
            // HTTP+SSE: a POST's success carries no answer; the stream does.
            (Purpose::Request { .. }, 200..=299) if old_transport => Body::Ignore,
            (_, 200..=299) if status == 202 || status == 204 => Body::Ignore,
            (Purpose::Notify | Purpose::Initialized, 200..=299) => Body::Ignore,
            (_, 200..=299) if content_type == "text/event-stream" => {
                let decoder = match &x.resume_from {
                    Some(last) => SseDecoder::resuming(sse_limits, last),
                    None => SseDecoder::new(sse_limits),
                };
                Body::Sse(Box::new(decoder))
            }
            (Purpose::Request { .. }, 200..=299) if content_type == "application/json" => {
                // A body announced larger than a message may be is refused before any
                // of it is read.
                let max_message = self.client.config().limits.max_message_bytes;
                let declared = head.header("content-length").map(str::trim);
                if let Some(n) = declared.and_then(|n| n.parse::<u64>().ok())
                    && n > max_message as u64
                {
                    let detail = format!("JSON body of {n} bytes over {max_message} bytes");
                    x.head = Some(head);
                    if let Some(x) = self.exchanges.remove(&id) {
                        self.pool.abort(now, id);
                        self.exchange_failed(now, x, None, None, Failure::Text(detail));
                    }
                    return;
                }
                Body::Json(Vec::new())
            }
            (_, 200..=299) => {
                let detail = format!("unexpected content type {content_type:?} for a success");
                x.head = Some(head);
                if let Some(x) = self.exchanges.remove(&id) {
                    self.pool.abort(now, id);
                    self.exchange_failed(now, x, Some(status), None, Failure::Text(detail));
                }
                return;
            }
            _ => Body::Failure(Vec::with_capacity(max_error.min(4096))),
        };
        x.head = Some(head);
        if (200..300).contains(&status)
            && matches!(x.body, Body::Ignore)
            && !matches!(x.purpose, Purpose::Delete { .. } | Purpose::SseStream)
        {
            // Its connection goes after a while should the body never end.
            x.settled = true;
            x.deadline = Some(now + SETTLED_LINGER);
        }
    }

    /// A success whose body carries nothing to read (`202`, `204`, the answer to a
    /// notification, a POST of the 2024-11-05 transport), decided at its end, or as soon
    /// as the bytes at hand did not end it: the head says all, so a body that never ends
    /// holds nothing up, and its connection only for a while ([`Exchange::settled`]).
    /// What waited for `notifications/initialized` goes; a request, or a resumption,
    /// that this leaves without its answer fails; the session has no `GET` stream.
    fn accepted_without_stream(
        &mut self,
        now: Instant,
        purpose: &Purpose,
        rpc_id: Option<i64>,
        status: u16,
    ) {
        match purpose {
            Purpose::Initialized => self.release_held(now),
            Purpose::Request { .. } if !self.on_http_sse() => {
                if let Some(rpc) = rpc_id.filter(|r| self.client.is_awaiting(*r)) {
                    let detail = format!("HTTP {status} carried no response");
                    self.fail_unanswered(now, rpc, status, detail);
                }
            }
            Purpose::Get { owed, .. } if owed.is_empty() => {
                self.get_stream = GetStream::Unavailable;
            }
            Purpose::Get { owed, .. } => {
                let detail = format!(
                    "resuming the event stream failed: HTTP {status} carried no event stream"
                );
                self.fail_owed(now, owed, Some(status), &detail);
            }
            _ => {}
        }
    }

    fn on_body(&mut self, now: Instant, id: ExchangeId, bytes: Vec<u8>) {
        let max_message = self.client.config().limits.max_message_bytes;
        let max_error = self.config.max_error_body;
        // Only a legacy stream is ever resumed.
        let legacy = self.era() == Some(Era::Legacy);
        let Some(x) = self.exchanges.get_mut(&id) else {
            return;
        };
        let mut messages: Vec<crate::sse::SseEvent> = Vec::new();
        let mut overflow = None;
        let mut broken = None;
        match &mut x.body {
            Body::Json(buf) => {
                if buf.len() + bytes.len() > max_message {
                    overflow = Some(format!("JSON body over {max_message} bytes"));
                } else if buf.is_empty() {
                    // The first piece is kept as it came (a whole body is never copied
                    // here); room for the rest the head announced is made once.
                    let declared = x.head.as_ref().and_then(|h| h.header("content-length"));
                    let declared = declared.and_then(|n| n.trim().parse::<usize>().ok());
                    *buf = bytes;
                    if let Some(more) = declared.and_then(|n| n.checked_sub(buf.len()))
                        && buf.len() + more <= max_message
                    {
                        buf.reserve_exact(more);
                    }
                } else {
                    buf.extend_from_slice(&bytes);
                }
            }
            Body::Failure(buf) => {
                let room = max_error.saturating_sub(buf.len());
                buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            Body::Sse(decoder) => {
                decoder.handle_input(&bytes);
                while let Some(item) = decoder.poll_event() {
                    let own = legacy && decoder.last_event_had_own_id();
                    let digest = match &item {
                        Ok(ev) if own => Some(data_digest(&ev.data)),
                        _ => None,
                    };
                    if let (Ok(ev), Some(d)) = (&item, digest) {
                        x.last_own = ev.id.clone().map(|id| (id, d));
                    }
                    match item {
                        Ok(ev) if ev.data.is_empty() && ev.event_type != "endpoint" => {}
                        // The event the stream was resumed after, sent again (its own
                        // id and its data): the client has it already. Another event
                        // under that id (a server that repeats ids) is new.
                        Ok(ev)
                            if x.resume_from.is_some()
                                && ev.id == x.resume_from
                                && digest.is_some()
                                && digest == x.resume_digest => {}
                        Ok(ev) => messages.push(ev),
                        // A stream that crossed a limit is not trusted further: the
                        // messages before the bad event still count.
                        Err(e) => {
                            broken = Some(e);
                            break;
                        }
                    }
                }
            }
            Body::Unknown | Body::Ignore => {}
        }
        if let Some(detail) = overflow
            && let Some(x) = self.exchanges.remove(&id)
        {
            self.pool.abort(now, id);
            self.exchange_failed(now, x, None, None, Failure::Text(detail));
            return;
        }
        // A resumption carries the stream of the one request it owes.
        let origin = self.exchanges.get(&id).and_then(|x| match &x.purpose {
            Purpose::Get { owed, .. } if owed.len() == 1 => Some(owed[0]),
            _ => x.rpc_id,
        });
        let old_stream = self
            .exchanges
            .get(&id)
            .is_some_and(|x| matches!(x.purpose, Purpose::SseStream));
        let resumed = self
            .exchanges
            .get(&id)
            .is_some_and(|x| x.resume_from.is_some());
        for ev in messages {
            if let Some(x) = self.exchanges.get_mut(&id) {
                x.delivered += 1;
            }
            if old_stream {
                self.sse_event(now, ev);
                continue;
            }
            let data = ev.data;
            let limits = &self.client.config().limits;
            let (depth, parsed) = (limits.max_nesting_depth, limits.max_parsed_bytes);
            let decoded = Message::decode_within(data.as_bytes(), depth, parsed);
            // The answer to another request in flight than this stream's own: that
            // request's exchange owes nothing more once it is taken.
            let elsewhere = match &decoded {
                Ok(Message::Response(r)) => match &r.id {
                    Some(RequestId::Number(n))
                        if Some(*n) != origin && self.client.is_awaiting(*n) =>
                    {
                        Some(*n)
                    }
                    _ => None,
                },
                _ => None,
            };
            // What comes on a request's own stream belongs to that request (its log
            // messages, say).
            self.client.stream_origin = origin;
            self.client.on_resumed_stream = resumed;
            let _ = self.deliver_decoded(now, data.as_bytes(), decoded);
            self.client.stream_origin = None;
            self.client.on_resumed_stream = false;
            if let Some(rpc) = elsewhere.filter(|r| !self.client.is_awaiting(*r)) {
                self.answered_elsewhere(now, rpc);
            }
        }
        if let Some(error) = broken {
            self.stream_broken(now, id, error);
            return;
        }
        self.settle_if_answered(now, id);
    }

    /// Request `rpc` was answered on another exchange than its own (legacy servers may
    /// put any message on any of the session's streams): its own owes nothing more. Its
    /// event stream is [`Exchange::settled`], as one that brought its answer is; any
    /// other response of it is given up, so that it does not keep its connection for
    /// as long as the server keeps it open. Once per call (it was awaited until now).
    fn answered_elsewhere(&mut self, now: Instant, rpc: i64) {
        let own = self
            .exchanges
            .iter()
            .find(|(_, x)| x.rpc_id == Some(rpc) && matches!(x.purpose, Purpose::Request { .. }))
            .map(|(id, _)| *id);
        let Some(id) = own else {
            return;
        };
        let Some(x) = self.exchanges.get_mut(&id) else {
            return;
        };
        match x.body {
            Body::Sse(_) => {
                if !x.settled {
                    x.settled = true;
                    x.deadline = Some(now + SETTLED_LINGER);
                }
            }
            _ => self.abort_exchange(id),
        }
    }

    /// Marks a request's stream, or a resumption, [`Exchange::settled`] once none of
    /// the answers it owed is awaited any more.
    fn settle_if_answered(&mut self, now: Instant, id: ExchangeId) {
        let Some(x) = self.exchanges.get(&id) else {
            return;
        };
        if x.settled || !matches!(x.body, Body::Sse(_)) {
            return;
        }
        let answered = match &x.purpose {
            Purpose::Request { .. } => x.rpc_id.is_none_or(|r| !self.client.is_awaiting(r)),
            Purpose::Get { owed, .. } if !owed.is_empty() => {
                owed.iter().all(|r| !self.client.is_awaiting(*r))
            }
            _ => false,
        };
        if answered && let Some(x) = self.exchanges.get_mut(&id) {
            x.settled = true;
            x.deadline = Some(now + SETTLED_LINGER);
        }
    }

    /// An event stream crossed a limit (an endless line or event): it is cut, and what it
    /// still owed fails now with the limit named. Never resumed: the server would only
    /// send the same event again.
    fn stream_broken(&mut self, now: Instant, id: ExchangeId, error: SseError) {
        let Some(x) = self.exchanges.remove(&id) else {
            return;
        };
        self.pool.abort(now, id);
        if matches!(x.purpose, Purpose::SseStream) {
            self.sse_lost(format!("event stream cut: {error}"));
            return;
        }
        self.events
            .push_back(Event::PeerError(PeerError::Sse(error.clone())));
        let owed: Vec<i64> = match &x.purpose {
            Purpose::Request { .. } => x.rpc_id.into_iter().collect(),
            Purpose::Get { owed, .. } if owed.is_empty() => {
                self.get_stream = GetStream::Unavailable;
                Vec::new()
            }
            Purpose::Get { owed, .. } => owed.clone(),
            _ => Vec::new(),
        };
        let owed: Vec<i64> = owed
            .into_iter()
            .filter(|r| self.client.is_awaiting(*r))
            .collect();
        // A handshake answered on a stream that crossed a limit got no answer at all:
        // that says nothing about the server's era, so it fails as a lost connection
        // does (a success status without a message would read as a legacy server).
        let status = x.head.as_ref().map(|h| h.status);
        let status = status.filter(|_| !owed.iter().any(|r| self.client.is_handshake(*r)));
        self.fail_owed(now, &owed, status, &format!("event stream cut: {error}"));
    }

    /// One JSON-RPC message from the server, to the protocol machine. When it cannot be
    /// decoded, why (also reported to the machine).
    pub(super) fn deliver(&mut self, now: Instant, json: &[u8]) -> Option<DecodeError> {
        let limits = &self.client.config().limits;
        let decoded =
            Message::decode_within(json, limits.max_nesting_depth, limits.max_parsed_bytes);
        self.deliver_decoded(now, json, decoded)
    }

    /// [`HttpLink::deliver`] for a message already decoded.
    fn deliver_decoded(
        &mut self,
        now: Instant,
        json: &[u8],
        decoded: Result<Message, DecodeError>,
    ) -> Option<DecodeError> {
        match decoded {
            Ok(Message::Response(r)) => {
                let r = self.inspect_response(r);
                self.client.dispatch_message(now, Message::Response(r));
            }
            Ok(m) => self.client.dispatch_message(now, m),
            Err(error) => {
                self.client.handle_undecodable(now, json, error.clone());
                return Some(error);
            }
        }
        None
    }

    fn on_end(&mut self, now: Instant, mut x: Exchange) {
        let status = x.head.as_ref().map_or(0, |h| h.status);
        if let Purpose::Delete { version } = x.purpose {
            if status == 401 && self.answer_nonce_refusal(now, &mut x) {
                return;
            }
            self.retry_delete_when_turned_away(now, x.head.as_ref(), version);
            return;
        }
        if matches!(x.purpose, Purpose::Initialized) && (200..300).contains(&status) {
            self.release_held(now);
            return;
        }
        match x.body {
            Body::Json(ref buf) => {
                let before = x.rpc_id.filter(|r| self.client.is_awaiting(*r));
                let limits = &self.client.config().limits;
                let (depth, parsed) = (limits.max_nesting_depth, limits.max_parsed_bytes);
                let decoded = Message::decode_within(buf, depth, parsed);
                // The one JSON object of a POST's response answers the request it
                // carried: a response naming another request in flight is not taken as
                // that request's answer (it was not sent for it), and this request
                // fails as not answered.
                let other = matches!(
                    (&decoded, x.rpc_id),
                    (Ok(Message::Response(r)), Some(own))
                        if r.id.as_ref().is_some_and(|id| *id != RequestId::Number(own))
                );
                let undecodable = if other {
                    None
                } else {
                    self.deliver_decoded(now, buf, decoded)
                };
                if let Some(rpc) = before.filter(|r| self.client.is_awaiting(*r)) {
                    // The body was not the answer: another id, or not a message (then say
                    // why, with what most often explains it).
                    let why = match undecodable {
                        None => UnreadableBody::NotTheAnswer,
                        Some(error) => {
                            let encoding =
                                x.head.as_ref().and_then(|h| h.header("content-encoding"));
                            let hint = BodyHint::of(buf, encoding);
                            UnreadableBody::NotAMessage { error, hint }
                        }
                    };
                    let failure = HttpFailure::unreadable(status, why);
                    self.client
                        .handle_http_failure(now, rpc, failure, None, None);
                }
            }
            Body::Sse(_) => self.stream_ended(now, x, "the event stream ended", true),
            Body::Failure(ref buf) => {
                // A message from the server like any other: held to the same bounds.
                let limits = &self.client.config().limits;
                let (depth, parsed) = (limits.max_nesting_depth, limits.max_parsed_bytes);
                let response = match Message::decode_within(buf, depth, parsed) {
                    Ok(Message::Response(r)) => Some(r),
                    _ => None,
                };
                // A JSON-RPC error speaks for itself; a redirect says where it pointed;
                // otherwise show the start of the body.
                let location = x.head.as_ref().and_then(|h| h.header("location"));
                let detail = if response.is_some() {
                    String::new()
                } else if let Some(to) = location.filter(|_| (300..400).contains(&status)) {
                    let to: String = to.chars().take(200).collect();
                    format!("redirect to {to} not followed (use the URL it points to)")
                } else {
                    String::from_utf8_lossy(&buf[..buf.len().min(200)]).into_owned()
                };
                self.exchange_failed(now, x, Some(status), response, Failure::Text(detail));
            }
            Body::Ignore | Body::Unknown if matches!(x.purpose, Purpose::SseStream) => {
                self.sse_refused(Some(status), "no event stream in the response".into());
            }
            Body::Ignore if x.settled => {
                if !x.decided {
                    self.accepted_without_stream(now, &x.purpose, x.rpc_id, status);
                }
            }
            Body::Ignore | Body::Unknown => {
                // HTTP+SSE: the answer comes on the stream.
                if let Purpose::Request { .. } = x.purpose
                    && !self.on_http_sse()
                    && let Some(rpc) = x.rpc_id.filter(|r| self.client.is_awaiting(*r))
                {
                    let detail = format!("HTTP {status} carried no response");
                    self.fail_unanswered(now, rpc, status, detail);
                }
            }
        }
    }

    /// A response ended with `status` but without the answer to request `rpc`.
    fn fail_unanswered(&mut self, now: Instant, rpc: i64, status: u16, detail: String) {
        let failure = HttpFailure::new(Some(status), None, detail);
        self.client
            .handle_http_failure(now, rpc, failure, None, None);
    }

    /// An exchange ended without the answer it owed: a failure status, a transport
    /// error, or a body that could not be read.
    pub(super) fn exchange_failed(
        &mut self,
        now: Instant,
        mut x: Exchange,
        status: Option<u16>,
        response: Option<Response>,
        failure: Failure,
    ) {
        if matches!(x.body, Body::Sse(_)) {
            // A stream that broke after it started: resumable in the legacy era.
            self.stream_ended(now, x, &failure.detail(), false);
            return;
        }
        if status == Some(401) && self.answer_nonce_refusal(now, &mut x) {
            return;
        }
        let (detail, transport) = failure.into_parts();
        if matches!(x.purpose, Purpose::SseStream) {
            if let Some(code @ (401 | 403)) = status {
                if self.sse_stream_refused(now, &x, code) {
                    return;
                }
                if x.after_refusal {
                    let detail = format!("refused again after authorizing: {detail}");
                    self.sse_refused(status, detail);
                    return;
                }
            }
            self.sse_refused(status, detail);
            return;
        }
        if status == Some(404) && x.had_session && x.session_epoch != self.session_epoch {
            // A request of a session replaced meanwhile (another request drew its 404,
            // and the new one may not be ready yet): it never ran either.
            if let Some(rpc) = x.rpc_id {
                self.client.handle_refused_on_replaced_session(now, rpc);
            }
            return;
        }
        if status == Some(404) && matches!(&x.purpose, Purpose::Get { owed, .. } if owed.is_empty())
        {
            // The server's own stream is optional: a 404 there (a route that serves only
            // POST) says nothing about the session, which the next POST tells.
            self.get_stream = GetStream::Unavailable;
            return;
        }
        if status == Some(404) && x.had_session && self.era() == Some(Era::Legacy) {
            // The server did not know the session: this request never ran.
            let never_ran = match x.purpose {
                Purpose::Request { .. } => x.rpc_id,
                _ => None,
            };
            self.session_expired(now, never_ran);
            return;
        }
        if self.retry_when_turned_away(now, &mut x, status) {
            return;
        }
        if let Some(code @ (401 | 403)) = status
            && self.intercept_refusal(now, &mut x, code)
        {
            return;
        }
        if let Some(code @ (401 | 403)) = status
            && self.get_refused(now, &x, code)
        {
            return;
        }
        let challenge = x
            .head
            .as_ref()
            .and_then(|h| h.header("www-authenticate"))
            .map(str::to_owned);
        match x.purpose {
            Purpose::Request { .. } => {
                if let Some(rpc) = x.rpc_id {
                    let code = response
                        .as_ref()
                        .and_then(|r| r.outcome.as_ref().err())
                        .map(|e| e.code);
                    if self.retry_after_header_mismatch(now, rpc, status, code) {
                        return;
                    }
                    let mut failure = HttpFailure::new(status, None, detail);
                    if self.try_http_sse(now, rpc, status, response.as_ref(), &mut failure) {
                        return;
                    }
                    failure.transport = transport.map(Box::new);
                    self.client
                        .handle_http_failure(now, rpc, failure, challenge, response);
                }
            }
            Purpose::Initialized => {
                self.events
                    .push_back(Event::PeerError(PeerError::InitializedRefused {
                        status,
                        detail,
                    }));
                self.release_held(now);
            }
            Purpose::Notify => {
                self.events
                    .push_back(Event::PeerError(PeerError::MessageRefused {
                        status,
                        detail,
                    }));
            }
            Purpose::Get { owed, attempt } => {
                if owed.is_empty() {
                    // The server's own stream: 405 means it has none; a 401 (or 403)
                    // to the token a flow obtained for it, that it takes none.
                    let refused = matches!(status, Some(401 | 403)) && x.after_refusal;
                    if status == Some(405)
                        || refused
                        || attempt + 1 >= self.config.max_resume_attempts
                    {
                        self.get_stream = GetStream::Unavailable;
                    } else {
                        // Still after the last event it brought: what the server sent
                        // meanwhile is replayed, not lost.
                        let from = x.resume_from.clone();
                        let digest = x.resume_digest;
                        self.schedule_resume(now, (from, digest), owed, attempt + 1, None);
                    }
                } else if status.is_none() && attempt + 1 < self.config.max_resume_attempts {
                    let from = x.resume_from.clone();
                    let digest = x.resume_digest;
                    self.schedule_resume(now, (from, digest), owed, attempt + 1, None);
                } else {
                    let detail = format!("resuming the event stream failed: {detail}");
                    self.fail_owed(now, &owed, status, &detail);
                }
            }
            Purpose::Delete { .. } | Purpose::SseStream => {}
        }
    }

    /// An SSE stream ended (`clean`: its response ended as HTTP frames it, or not).
    /// Whatever it still owed is resumed (legacy, with an event id to resume from) or
    /// failed.
    fn stream_ended(&mut self, now: Instant, x: Exchange, why: &str, clean: bool) {
        if matches!(x.purpose, Purpose::SseStream) {
            self.sse_lost(why.to_owned());
            return;
        }
        let (owed, attempt) = match &x.purpose {
            Purpose::Request { .. } => (x.rpc_id.into_iter().collect::<Vec<_>>(), 0),
            Purpose::Get { owed, attempt } => (owed.clone(), *attempt),
            _ => return,
        };
        let owed: Vec<i64> = owed
            .into_iter()
            .filter(|r| self.client.is_awaiting(*r))
            .collect();
        let standalone = matches!(&x.purpose, Purpose::Get { owed, .. } if owed.is_empty());
        let (last_id, retry) = match &x.body {
            Body::Sse(d) => (
                d.last_event_id()
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .or_else(|| x.resume_from.clone()),
                d.retry_ms(),
            ),
            _ => (None, None),
        };
        // The digest of the event at the resumption point: this stream's last event with
        // an id of its own, or, when it moved nothing, the one it was resumed at.
        let digest = match &x.last_own {
            Some((own, d)) if last_id.as_ref() == Some(own) => Some(*d),
            _ if last_id == x.resume_from => x.resume_digest,
            _ => None,
        };
        // Attempts count streams that brought nothing new; one that delivered and moved
        // the resumption point starts afresh. A stream that replays the very event it
        // was asked to resume after, again and again, makes no progress.
        let progressed = x.delivered > 0 && last_id != x.resume_from;
        // SSE polling (2025-11-25, SEP-1699): a stream the server ended on purpose, with
        // nothing new yet, after saying when to come back (`retry`), is a poll and not a
        // failure: it is followed at the server's pace (never faster than
        // MIN_RESUME_DELAY) until the response, or the call's deadline.
        let polled = clean && x.delivered == 0 && retry.is_some() && last_id.is_some();
        let attempt = if progressed || polled { 0 } else { attempt + 1 };
        let legacy = self.era() == Some(Era::Legacy);
        if owed.is_empty() && !standalone {
            return;
        }
        if standalone {
            if self.get_stream == GetStream::Active
                && legacy
                && attempt < self.config.max_resume_attempts
            {
                self.schedule_resume(now, (last_id, digest), Vec::new(), attempt, retry);
            } else {
                self.get_stream = GetStream::Unavailable;
            }
            return;
        }
        if legacy && last_id.is_some() && attempt <= self.config.max_resume_attempts {
            self.schedule_resume(now, (last_id, digest), owed, attempt, retry);
            return;
        }
        let detail = if legacy && last_id.is_none() {
            format!("{why} before the response, with no event id to resume from")
        } else if legacy {
            format!(
                "{why} before the response; gave up after {} attempts to resume",
                attempt.saturating_sub(1)
            )
        } else {
            format!("{why} before the response (2026-07-28 streams cannot be resumed)")
        };
        self.fail_owed(now, &owed, None, &detail);
    }

    pub(super) fn fail_owed(
        &mut self,
        now: Instant,
        owed: &[i64],
        status: Option<u16>,
        detail: &str,
    ) {
        for rpc in owed {
            self.client.handle_http_failure(
                now,
                *rpc,
                HttpFailure::new(status, None, detail),
                None,
                None,
            );
        }
    }

    fn schedule_resume(
        &mut self,
        now: Instant,
        (last_event_id, digest): (Option<String>, Option<u64>),
        owed: Vec<i64>,
        attempt: u32,
        retry_ms: Option<u64>,
    ) {
        let backoff = self
            .config
            .resume_backoff
            .saturating_mul(1u32 << attempt.min(16));
        // The server's `retry` is honoured, but never below MIN_RESUME_DELAY (`retry: 0`
        // made a reconnection loop as fast as the server closed streams), and once
        // streams keep bringing nothing new the growing backoff wins over it.
        let delay = match retry_ms.map(Duration::from_millis) {
            Some(retry) if attempt > 1 => retry.max(backoff),
            Some(retry) => retry,
            None => backoff,
        };
        let delay = delay
            .max(MIN_RESUME_DELAY)
            .min(self.config.max_resume_delay);
        self.resumes.push(PendingResume {
            due: now + delay,
            last_event_id,
            digest,
            owed,
            attempt,
            after_refusal: false,
            nonce_resent: super::nonce::NonceResent::NO,
        });
    }

    pub(super) fn start_due_resumes(&mut self, now: Instant) {
        let (due, later): (Vec<_>, Vec<_>) = self.resumes.drain(..).partition(|r| r.due <= now);
        self.resumes = later;
        for r in due {
            self.reopen(now, r);
        }
    }

    /// Opens the `GET` that `r` waited to open, unless nothing wants it any more: the
    /// session's stream no longer listened to, or a resumption whose calls all ended.
    pub(super) fn reopen(&mut self, now: Instant, r: PendingResume) {
        let standalone = r.owed.is_empty();
        if standalone && self.get_stream != GetStream::Active {
            return;
        }
        let owed: Vec<i64> = r
            .owed
            .into_iter()
            .filter(|id| self.client.is_awaiting(*id))
            .collect();
        if owed.is_empty() && !standalone {
            return;
        }
        self.open_get(now, PendingResume { owed, ..r });
    }

    /// A `GET` (the session's stream, a resumption) refused with `401`, or with `403`
    /// asking for more scope (`insufficient_scope`): it waits for the flow its refusal
    /// starts (a refresh or an authorization, a step-up; or joins the one running; none
    /// for a refusal of an older token than the one now held), then opens again, as a
    /// refused message is sent again. False, and the refusal stands, without
    /// authorization, for another `403`, for a `GET` already sent again after a flow
    /// (the server takes nothing it obtains: no loop), or out of attempts.
    fn get_refused(&mut self, now: Instant, x: &Exchange, status: u16) -> bool {
        let Purpose::Get { owed, attempt } = &x.purpose else {
            return false;
        };
        let Some(auth) = &mut self.auth else {
            return false;
        };
        if x.after_refusal || attempt + 1 >= self.config.max_resume_attempts {
            return false;
        }
        let Some(challenges) = x.answerable_challenges(status) else {
            return false;
        };
        let pending = PendingResume {
            due: now,
            last_event_id: x.resume_from.clone(),
            digest: x.resume_digest,
            owed: owed.clone(),
            attempt: attempt + 1,
            after_refusal: true,
            nonce_resent: super::nonce::NonceResent::of(x),
        };
        if x.generation != self.auth_generation {
            // Sent with a token replaced since: the new one answers the refusal.
            self.reopen(now, pending);
            return true;
        }
        if status == 401 {
            auth.handle_unauthorized(now, challenges);
        } else if !auth.handle_insufficient_scope(now, challenges) {
            return false;
        }
        self.waiting_gets.push(pending);
        self.drive_auth(now);
        true
    }

    /// A `GET` that waited for an authorization flow that failed. One that only waited,
    /// with a token still usable, opens all the same. Otherwise (no token left, or it was
    /// refused for want of scope and the step-up failed) a resumption fails its calls
    /// with the flow's error; the session's own stream is given up when the token it
    /// was refused stays, and otherwise tried again later, as after a failed attempt (a
    /// bounded number of times).
    pub(super) fn get_after_failed_auth(
        &mut self,
        now: Instant,
        r: PendingResume,
        usable: bool,
        error: &AuthError,
    ) {
        if usable && !r.after_refusal {
            return self.reopen(now, r);
        }
        if !r.owed.is_empty() {
            for rpc in r.owed {
                if self.client.is_awaiting(rpc) {
                    self.client
                        .fail_request(rpc, CallError::Authorization(error.clone()));
                }
            }
            return;
        }
        if self.get_stream != GetStream::Active {
            return;
        }
        if usable {
            // Refused for scope with the token still held: a step-up that failed
            // (declined, or a scope the server cannot grant) would fail again.
            self.get_stream = GetStream::Unavailable;
            return;
        }
        let attempt = r.attempt + 1;
        if attempt < self.config.max_resume_attempts {
            let from = (r.last_event_id, r.digest);
            self.schedule_resume(now, from, Vec::new(), attempt, None);
        } else {
            self.get_stream = GetStream::Unavailable;
        }
    }

    /// The legacy session is gone. Every exchange of it ends, but the requests that
    /// must not be sent twice and whose answers have not begun: their own answer (a
    /// `404` too, most likely, which says they never ran) decides whether they are sent
    /// again on the new session.
    fn session_expired(&mut self, now: Instant, never_ran: Option<i64>) {
        // A session the server never once knew: counted, and the second in a row ends
        // the connection rather than making sessions as fast as they are refused.
        self.fresh_sessions_lost = self.fresh_sessions_lost.saturating_add(1);
        if self.fresh_sessions_lost >= MAX_FRESH_SESSIONS_LOST {
            let detail = format!(
                "the server did not know the session it had just made ({} new sessions \
                 in a row refused with 404 before any request on them succeeded)",
                self.fresh_sessions_lost
            );
            self.abort_all_but(&[]);
            self.client
                .close_with(CloseReason::Http(HttpFailure::new(Some(404), None, detail)));
            return;
        }
        self.session_id = None;
        self.session_epoch = self.session_epoch.wrapping_add(1);
        self.held = None;
        self.resumes.clear();
        self.waiting_gets.clear();
        self.get_stream = GetStream::Idle;
        // Requests waiting out a busy server's `Retry-After` never ran either.
        let mut never_ran: Vec<i64> = never_ran.into_iter().collect();
        never_ran.extend(self.take_retries());
        let waiting: Vec<i64> = self
            .exchanges
            .values()
            .filter(|x| {
                x.head.is_none()
                    && matches!(x.purpose, Purpose::Request { .. })
                    && !x.purpose.is_repeatable()
            })
            .filter_map(|x| x.rpc_id)
            .collect();
        self.abort_all_but(&waiting);
        self.events
            .push_back(Event::PeerError(PeerError::SessionExpired));
        self.client
            .handle_session_expired(now, &never_ran, &waiting);
    }
}
