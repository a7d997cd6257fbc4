//! Streamable HTTP for the server machine: reading requests from connection bytes and
//! serving each one against a [`Server`], with or without legacy sessions, and the
//! resumable SSE streams of those sessions.
//!
//! * [`HttpRequestReader`] turns connection bytes into [`HttpRequest`]s (HTTP/1.1 on
//!   httparse, `Content-Length` bodies, keep-alive, pipelining, bounded buffers).
//! * [`HttpEndpoint`] owns one [`Server`] and turns each request into an [`HttpReply`]:
//!   a complete [`HttpResponse`], or an [`HttpStream`] (an SSE response whose end is not
//!   known yet) that the adapter keeps polling with [`HttpEndpoint::poll_stream`]. A
//!   legacy session's `GET` stream and a resumed stream are [`HttpStream`]s too, so an
//!   adapter serves them without knowing.
//! * [`EventStore`] keeps the events of those sessions' streams for `Last-Event-ID`
//!   ([`MemoryEventStore`]: bounded, in memory).
//! * [`HttpConnection`] makes the decisions of one connection over a shared endpoint:
//!   what to write, when to read, the deadlines of a request (head, body rate, idle),
//!   `100 Continue`, keep-alive or close, SSE comments on open streams, the graceful
//!   close. [`HttpHost`] decides which connections are served and answers the rest with
//!   503. An adapter built on these two only accepts, reads, writes, waits and wakes.
//!
//! # Theory of operation
//!
//! **Checks before the machine**, in this order: `Host` (when
//! [`HttpEndpointConfig::allowed_hosts`] is set, a name outside it: 403) → `Origin` (present and neither loopback
//! nor listed in [`HttpEndpointConfig::allowed_origins`]: 403) → a CORS preflight
//! (`OPTIONS` with `Origin` and `Access-Control-Request-Method`: 204, on any path; every
//! other response to a request with an accepted `Origin` names it, see the `cors` module)
//! → the application's [`RequestGate`], when one is set (it may answer the request itself: a `401` for a missing
//! bearer token, a metadata document) → path (not
//! [`HttpEndpointConfig::path`]: 404) → method (`DELETE` and `GET` with sessions, see
//! below; anything else but `POST`: 405 with `Allow: POST`, or `GET, POST, DELETE` with
//! sessions) →
//! `Content-Type` (present
//! and not `application/json`: 415) → nesting depth (deeper than
//! [`ServerLimits::max_nesting_depth`](super::ServerLimits::max_nesting_depth): `-32600`,
//! 400, with the id when it can be read) → JSON (`-32700`, id `null`, 400) → JSON-RPC
//! envelope (`-32600`, 400). `Accept` is not enforced.
//!
//! **Era per request.** A request is modern when the machine would serve it as modern
//! (`server/discover`, or `_meta` carrying the protocol version or client capabilities),
//! or when its `MCP-Protocol-Version` header names a modern version (so a modern request
//! that lost its `_meta` gets `-32602` rather than legacy treatment); `initialize` is
//! modern only by its `_meta` (it then gets `-32601` and 404: the method was removed),
//! and with no modern version served nothing is. A modern request then passes the
//! header checks of spec section 5.5 (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`
//! decoded with [`decode_header_bytes`](crate::http::headers::decode_header_bytes),
//! `Mcp-Param-*` for tools with `x-mcp-header` annotations): a failure is 400 with
//! `-32020` and the body's id. A legacy request other than `initialize` (a POSTed
//! request, notification or response, a `GET`, a `DELETE`) that carries an
//! `MCP-Protocol-Version` header must name a served legacy version, else 400 with
//! `-32600` and `data: {supported, requested}`.
//!
//! **Status codes of answers.** Params the endpoint cannot read (a number out of range, a
//! lone surrogate) are `-32602` with 400 in both eras. Modern: `-32020`, `-32021`,
//! `-32022`, `-32600` and `-32700` are 400, and so is the `-32602` for a request without
//! its `_meta` members; `-32601` is 404 (spec 4.5); every other answer is 200, a `-32602`
//! from the machine (an unknown tool, bad arguments) included, as SDKs answer it. Legacy:
//! `-32600`/`-32700` and any error to `initialize` are 400, the rest 200. Notifications
//! and JSON-RPC responses are 202 with an empty body.
//!
//! **JSON or SSE.** Each HTTP request carries exactly one message. When the machine's
//! only output for it is the response, the answer is `application/json`. When requests
//! or notifications for it came first, it is `text/event-stream` (`X-Accel-Buffering: no`,
//! `event: message` per message), the response last. Its events carry ids only in a
//! legacy session (see *Resumable streams*); elsewhere nothing is resumable.
//!
//! **Routing and ids.** One machine serves every connection, so the client's request
//! ids (which may clash between clients) are replaced by endpoint-unique integers before
//! the machine sees them and put back on the way out. Output is routed by that id;
//! server→client requests and notifications go to the exchange whose input caused them
//! (the request being handled, or the call whose input request a posted response answered).
//! Output nobody is waiting for is dropped.
//!
//! **Requests that are not answered at once.** A tool that never answers (the example's
//! `hang`) or a legacy call waiting for the client's input (`confirm`'s
//! `elicitation/create`) yields [`HttpReply::Stream`]: a 200 SSE response that stays open
//! with what is known so far. The adapter polls it; when the client POSTs its JSON-RPC
//! response to the input request (202), the machine resumes the call and the result ends
//! the stream. When the client disconnects, the adapter calls
//! [`HttpEndpoint::cancel_stream`], which the machine sees as `notifications/cancelled`
//! (except for a session's stream, which is only detached: see below).
//! A posted `notifications/cancelled` cancels an open exchange only when exactly one open
//! exchange of the poster's session and principal has that request id (two clients may
//! use the same one); without a session or a principal it is ignored, since nothing
//! ties an anonymous poster to any exchange: closing the stream cancels.
//! At most [`HttpEndpointConfig::max_open_streams`] exchanges stay open, a quarter of them
//! per legacy session and per authenticated principal. When they are all open, one is
//! ended to make room, with a JSON-RPC error that tells its client why. First the oldest
//! stream whose client went away (a session's detached stream whose client does not
//! poll, or is late for its next poll): one of the newcomer's own principal, or, for an
//! authenticated newcomer, one of the anonymous clients or of a principal holding at
//! least as many streams. Else, for an authenticated newcomer, the oldest stream of the
//! anonymous clients, when they hold more than one beyond what its principal holds.
//! Anonymous clients count as one principal: nothing tells them apart (sessions are free
//! to make), so together they may fill what no principal uses but cannot keep one out,
//! nor end a principal's stream. With no stream to end, one more is cancelled and
//! answered 503 with `-32603`, as is one past its session's or principal's share, unless
//! one of that session's or principal's own streams whose client went away can make room
//! (it is ended the same way). `GET` streams give way the same way (decisions 123, 124
//! and 128 in `docs/decisions.md`).
//!
//! **Legacy sessions.** An endpoint made with [`HttpEndpoint::with_sessions`] (the
//! adapters' serve functions make theirs so, with the operating system's randomness)
//! gives each successful legacy `initialize` an `Mcp-Session-Id` (128 random bits) and
//! its own legacy state: handshake, parked calls, request counter. Every other legacy
//! request must carry a live session id (none: 400; unknown, ended or idle past
//! [`HttpEndpointConfig::session_idle_timeout`]: 404, and the client initializes again),
//! and is served with that session's state swapped into the machine. A session serves
//! only the principal its `initialize` was served as ([`HttpEndpoint::handle_request_as`];
//! no principal for an unauthenticated client): for any other, its id is unknown (404)
//! whatever the request (`POST`, a posted response, `GET`, `Last-Event-ID`, `DELETE`),
//! so a leaked session id is not a credential. `DELETE` with the
//! id ends the session, cancels its open exchanges and ends its `GET` stream. At most
//! [`HttpEndpointConfig::max_sessions`] live at once: when they are all there, an
//! `initialize` evicts a session not in use, one whose client never came back first,
//! then the one unused longest; with every session in use it gets 503.
//! Server→client requests go out under fresh unguessable ids, and a client's response
//! reaches the machine only when it names such an id sent to its own session; anything
//! else (another session's id, the machine's counter, no id) is dropped with 202. A
//! posted `notifications/cancelled` only reaches exchanges of its own session. Modern
//! requests ignore `Mcp-Session-Id` and never see legacy state.
//!
//! **Several processes** (decisions 69–72 in `docs/decisions.md`). With a
//! [`SessionStore`] ([`HttpEndpoint::set_session_store`]) the shared part of each session
//! ([`SessionRecord`]) lives there too: every request naming a session asks the store
//! first (unknown there: ended elsewhere, 404; last used, by the record, longer ago than
//! the idle timeout: ended, removed from the store, 404; known there but not here:
//! adopted; the store not answering: a session held here is served from this copy, any
//! other gets 503), and the record is saved back after it, stamped with its use. Parked calls, streams and tasks stay with the endpoint
//! that has them. With a shared [`EventStore`] as well, a stream begun on one endpoint is
//! resumed on another: stream numbers start at a random base so their event ids do not
//! collide, and in polling mode a replay of a stream running elsewhere ends with `retry:`.
//! A session one endpoint drops for idleness or for room may live on elsewhere: its
//! stored events are forgotten only when it ends for good (`DELETE`, or the store no
//! longer knowing it).
//!
//! **Resumable streams** (legacy sessions only; decisions 63–68 in `docs/decisions.md`).
//! Every SSE stream of a session (an SSE answer to a POST, the `GET` stream) gets a
//! number unique across the endpoint, and each of its events the id `<stream>-<seq>`,
//! stored in the [`EventStore`] as it is routed. A 2025-11-25 stream opens with a
//! priming event (an id, empty `data`, SEP-1699); a 2025-06-18 one has ids only.
//!
//! * `GET` (with `Accept: text/event-stream`, else 406; a live `Mcp-Session-Id`, else
//!   400/404; not naming 2026-07-28, else 405) opens the session's standalone stream.
//!   What the machine says for the session outside any request (server→client requests
//!   and notifications with no request in hand, [`HttpEndpoint::notify_listeners`],
//!   [`HttpEndpoint::resource_updated`]) goes there, never a response; with none open it
//!   is dropped. One is served per session at a time: another `GET` gets 409.
//! * `GET` with `Last-Event-ID` replays what that stream sent after the id, from the
//!   store, and nothing of any other stream; an id that is malformed, unknown, evicted or
//!   of another session's stream gets 400. A stream still going (its request not
//!   answered, or the `GET` stream) goes on over the new connection, and the connection
//!   that served it before is ended; a finished one ends after the replay.
//! * A client leaving a session's stream ([`HttpEndpoint::cancel_stream`]) detaches it:
//!   the request goes on and its events are stored for a resumption. Detached requests
//!   count against `max_open_streams`, and against the session's share of it (a quarter),
//!   and go with their session.
//! * Polling ([`HttpEndpointConfig::sse_polling`], 2025-11-25 sessions): an SSE answer to
//!   a POST is only the priming event with `retry:`
//!   ([`HttpEndpointConfig::sse_retry`]) and ends; the client resumes with `GET` and
//!   `Last-Event-ID`, and each such `GET` of an unfinished request gets what is new,
//!   `retry:`, and its end, until the response. Between two polls the request is
//!   detached but its client is not gone: it is not ended for room until the client is
//!   late for its next poll (`sse_retry` and ten seconds after the last one).
//!
//! **Listens and changes.** A 2026-07-28 `subscriptions/listen` is a request the machine
//! never answers at once: its reply is an [`HttpStream`] whose first event is the
//! acknowledgement. Notifications the machine tags with a listen's id (the endpoint's id
//! of it) go to that listen's stream whatever request is being handled, their
//! `subscriptionId` put back to the client's id; its `complete` result
//! ([`Server::end_subscriptions`]) ends the stream. The client closing the stream (or
//! posting `notifications/cancelled` for it) ends the listen in the machine: a listen is
//! not resumable, and a client that lost its stream listens again (decision 76). The
//! application changes the catalog through [`HttpEndpoint::update_server`], which also
//! tells every legacy session with a `GET` stream of each change, as the machine tells
//! its one session over stdio.
//!
//! **Waking the driver.** The endpoint tells its driver when it has work, so no driver
//! polls it. After every change (a request handled, a stream polled or cancelled, an
//! application's [`HttpEndpoint::update_server`]), [`HttpEndpoint::take_ready`] says
//! whether some open stream got output (wake the threads or futures waiting on streams),
//! and [`HttpEndpoint::take_timer_moved`] whether the endpoint's next deadline
//! ([`HttpEndpoint::poll_timeout`]: a task outcome falling due, a held `tasks/result`
//! expiring) is now earlier than the one the driver's timer was set for
//! ([`HttpEndpoint::arm_timer`]; wake the timer so that it is set again). The timer,
//! when it fires, hands the endpoint the time ([`HttpEndpoint::handle_due`]), and is set
//! again; with no deadline it sleeps until woken.
//!
//! **Without sessions** ([`HttpEndpoint::new`], [`HttpEndpoint::with_config`]: no
//! entropy), legacy state is process-wide: each `initialize` replaces the handshake (two
//! interleaving legacy clients see the later one's capabilities), and the machine's
//! bounds on calls waiting for input
//! ([`max_pending_inputs`](super::ServerLimits::max_pending_inputs), `max_input_bytes`)
//! are shared by all. The ids of the server's requests are the machine's counter, so an
//! answer is taken from the principal the request went to only, and any anonymous client
//! may answer an anonymous one's. That mode is for tests and single-client pipes.
//!
//! **Bounds.** Bodies, heads and pipelining are bounded by [`HttpRequestLimits`]; open
//! exchanges (detached ones included) by `max_open_streams`; `GET` streams by sessions
//! (one each) and, attached, by `max_get_streams` (a quarter of them per principal);
//! stored events by the store ([`EventStoreLimits`]); the machine's own limits bound
//! parked calls. What an open stream has waiting for its connection (a client reading
//! more slowly than notifications come) is bounded by
//! [`HttpEndpointConfig::max_stream_backlog`]: past it a listen ends with an error, and a
//! session's stream is detached (resumable from the store). A `Last-Event-ID` is parsed
//! only up to [`MAX_EVENT_ID_BYTES`].

use crate::Instant;
use std::collections::{BTreeMap, BTreeSet};

use crate::jsonrpc::RequestId;

use super::Server;

mod answers;
mod changes;
mod connection;
mod cors;
mod deadlines;
mod events;
mod exchange;
mod gate;
pub mod gateway;
mod host;
#[cfg(any(test, feature = "index-checks"))]
mod index_checks;
mod intake;
mod reader;
mod response;
mod room;
mod routing;
mod session_life;
mod session_store;
mod sessions;
mod streams;
#[cfg(test)]
mod tests;
mod validate;

pub use connection::{
    HttpCloseReason, HttpConnection, HttpConnectionConfig, HttpTransmit, SEND_SLICES, WriteProgress,
};
pub use events::{
    EventStore, EventStoreError, EventStoreLimits, EventStream, MAX_EVENT_ID_BYTES,
    MemoryEventStore, Replay, StoredEvent, event_id, parse_event_id,
};
pub use gate::{GateVerdict, RequestGate};
pub use host::{DEFAULT_MAX_BUFFERED_BYTES, EVICTABLE_AFTER, HttpHost, HttpServeOptions};
pub use reader::{HttpRequest, HttpRequestError, HttpRequestLimits, HttpRequestReader};
pub use response::{HttpResponse, HttpStream};
pub use session_store::{
    LastUse, MAX_RECORD_SUBSCRIPTIONS, MAX_SESSION_RECORD_BYTES, MemorySessionStore, SessionRecord,
    SessionStore, SessionStoreError,
};

use exchange::{Exchange, KeyMap, Listener, ServerRequest};
use sessions::Sessions;

// What the tests name through this module besides what it uses itself.
#[cfg(test)]
use {
    super::notify,
    crate::version::Era,
    answers::answer,
    exchange::{Backlog, Event},
    index_checks::WALKED,
};

/// The endpoint path the bundled adapters and the CLI serve: `/mcp`.
pub const DEFAULT_PATH: &str = "/mcp";

/// How an [`HttpEndpoint`] is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpEndpointConfig {
    /// The path of the MCP endpoint; other paths get 404. Default [`DEFAULT_PATH`].
    pub path: String,
    /// Origins accepted besides the loopback ones (exact strings such as
    /// `https://app.example`). Default none.
    pub allowed_origins: Vec<String>,
    /// Exchanges that may stay open (unanswered tools, legacy calls waiting for input)
    /// at once; one legacy session, and one authenticated principal, may hold a quarter
    /// of them (at least one), detached ones included (a newcomer past that share ends
    /// the oldest of its own whose client went away, if any). When all are open, the
    /// oldest one whose client went away (a polling client: once it is late for its next poll) is
    /// cancelled for a new one, and a JSON-RPC error in its stream tells its client,
    /// should it resume: one of the newcomer's own principal, or for an authenticated
    /// newcomer one of an anonymous client or of a principal holding at least as many.
    /// An authenticated newcomer also takes the place of the oldest anonymous client's
    /// stream when anonymous clients hold more than one beyond what its principal holds
    /// (the module docs say more). Default 64. Each open stream holds a connection while
    /// its client is attached: keep this below the server's `max_connections` (128 by
    /// default), or streams can take every connection.
    pub max_open_streams: usize,
    /// Legacy `GET` streams a client is attached to at once, over all sessions (one per
    /// session at most, a quarter of them per authenticated principal); one more, opened
    /// or resumed, gets `503`, unless it is an authenticated client's and anonymous
    /// clients hold more than one beyond what its principal holds: their oldest then ends
    /// for it. Default 32. Each holds
    /// a connection: unbounded, one anonymous client opening 128 sessions and a stream on
    /// each took every connection of the server (128 by default) for as long as it read
    /// them. Keep `max_open_streams` plus this below the server's `max_connections`.
    pub max_get_streams: usize,
    /// Legacy sessions held at once (with [`HttpEndpoint::with_sessions`]). An
    /// `initialize` beyond them evicts a session that is not in use (no request being
    /// handled, no stream a client holds, no call waiting for input, no task running or
    /// with a result its client has not fetched): first one whose id
    /// no request named since its `initialize`, else the one unused longest; its client
    /// gets 404 and initializes again. With every session in use, one held only by its
    /// tasks gives way to a principal holding at least two fewer such sessions than the
    /// principal holding the most (which loses its session unused longest); otherwise
    /// the `initialize` gets 503. Default 1024.
    pub max_sessions: usize,
    /// How long a legacy session may go unused before it is dropped (a session with an
    /// open exchange is never idle). Default 30 minutes.
    pub session_idle_timeout: std::time::Duration,
    /// The host names (or IP literals, IPv6 in brackets) a request's `Host` may name,
    /// compared without the port and without regard to case; another `Host`, or none,
    /// gets 403. `None` accepts any (behind a proxy that checks it, or on a public
    /// address). Default `None`; [`HttpEndpointConfig::restrict_hosts_for`] narrows it to
    /// the loopback names and the bound address for a server bound to a loopback
    /// address, which defeats DNS rebinding (a page whose name resolves to 127.0.0.1
    /// still sends its own name).
    pub allowed_hosts: Option<Vec<String>>,
    /// The SSE `retry:` (reconnection delay) sent before the server closes a resumable
    /// stream's connection itself (polling). Default 1 s.
    pub sse_retry: std::time::Duration,
    /// Polling mode (SEP-1699, 2025-11-25 sessions only): an SSE answer to a `POST` is
    /// its priming event with `retry:` and nothing more; the client fetches the rest with
    /// `GET` and `Last-Event-ID`, and every such `GET` of an unfinished request ends
    /// after what is known so far. Default off: streams stay open until the response.
    pub sse_polling: bool,
    /// The bounds of the [`MemoryEventStore`] an endpoint with sessions keeps the events
    /// of its resumable streams in (see [`HttpEndpoint::set_event_store`]).
    pub event_store: EventStoreLimits,
    /// The most bytes of messages an open stream may have waiting for its connection to
    /// take them ([`HttpEndpoint::poll_stream`]), as when its client reads more slowly
    /// than notifications come. What one request, change or tick brings at once is not
    /// held against it (its client had no chance to read it yet); when more than this
    /// was left unread from before and one more message comes, the stream ends: a 2026 listen (or
    /// any stream that cannot be resumed) with a JSON-RPC error after what was waiting,
    /// its request cancelled in the machine, so that its client knows it missed
    /// messages and listens again; a legacy session's stream (a `GET` stream, a `POST`
    /// answer) is detached as if its client had gone away, what it missed kept in the
    /// event store for a `Last-Event-ID`. Default 256 KiB.
    pub max_stream_backlog: usize,
}

/// The names a loopback server answers to.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl HttpEndpointConfig {
    /// For a server bound to `bound`: when that is a loopback address and no host list
    /// was chosen, only the loopback names ([`LOOPBACK_HOSTS`]) and `bound` itself (say
    /// `127.0.0.2`, the address its clients connect to) are accepted in `Host`. An
    /// IPv4-mapped IPv6 loopback address (`::ffff:127.0.0.1`) is a loopback address.
    pub fn restrict_hosts_for(&mut self, bound: std::net::IpAddr) {
        if self.allowed_hosts.is_none() && bound.to_canonical().is_loopback() {
            let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
            let own = match bound {
                std::net::IpAddr::V4(v4) => v4.to_string(),
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            };
            if !hosts.contains(&own) {
                hosts.push(own);
            }
            self.allowed_hosts = Some(hosts);
        }
    }

    /// Whether a `Host` header value is acceptable.
    fn host_allowed(&self, host: Option<&[u8]>) -> bool {
        let Some(allowed) = &self.allowed_hosts else {
            return true;
        };
        let Some(host) = host.and_then(|h| std::str::from_utf8(h).ok()) else {
            return false;
        };
        // Optional white space is spaces and tabs (RFC 9110 §5.6.3), nothing else.
        let host = host.trim_matches([' ', '\t']);
        // Without the port: `[v6]:port`, `name:port`, or a bare name.
        let name = if host.starts_with('[') {
            // Only a port may follow the bracket (`[::1]evil.example` names no host).
            match host.split_once(']') {
                Some((h, "")) => &host[..=h.len()],
                // `port = *DIGIT`: an empty one too, as for a name.
                Some((h, port))
                    if port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()) =>
                {
                    &host[..=h.len()]
                }
                _ => return false,
            }
        } else {
            host.rsplit_once(':')
                .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
                .map_or(host, |(h, _)| h)
        };
        allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
    }
}

impl Default for HttpEndpointConfig {
    fn default() -> Self {
        HttpEndpointConfig {
            path: DEFAULT_PATH.to_owned(),
            allowed_origins: Vec::new(),
            max_open_streams: 64,
            max_get_streams: 32,
            max_sessions: 1024,
            session_idle_timeout: std::time::Duration::from_secs(30 * 60),
            allowed_hosts: None,
            sse_retry: std::time::Duration::from_secs(1),
            sse_polling: false,
            event_store: EventStoreLimits::default(),
            max_stream_backlog: 256 * 1024,
        }
    }
}

/// What to send for one request.
#[derive(Debug)]
#[non_exhaustive]
pub enum HttpReply {
    /// A complete response: write it; close the connection afterwards when
    /// [`HttpResponse::closes_connection`].
    Complete(HttpResponse),
    /// An SSE response that stays open: see [`HttpStream`].
    Stream(HttpStream),
}

/// Names an open stream, to match [`HttpEndpoint::poll_ready`] with the stream a driver
/// serves ([`HttpStream::id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub(super) i64);

/// Whether an open stream goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamStatus {
    /// Still waiting for the answer: poll again later.
    Open,
    /// The stream ended (answered, or cancelled by the client); its end was written.
    Finished,
}

/// Serves Streamable HTTP requests against one [`Server`]; see the module docs.
///
/// Its `Debug` is a summary that names no session: a session id is its client's
/// credential, not for an operator's log.
pub struct HttpEndpoint {
    server: Server,
    config: HttpEndpointConfig,
    /// The next endpoint-unique request id.
    next_key: i64,
    /// Requests being answered, by endpoint id.
    exchanges: KeyMap<Exchange>,
    /// Server→client requests awaiting the client's response, by session and the id the
    /// client saw.
    server_requests: BTreeMap<(Option<String>, RequestId), ServerRequest>,
    /// Legacy sessions, when the endpoint has entropy for their ids.
    sessions: Option<Sessions>,
    /// Open streams that got output since their driver was last told.
    ready: BTreeSet<i64>,
    /// Where the events of the sessions' streams are kept, with sessions.
    store: Option<Box<dyn EventStore>>,
    /// Where the shared part of the sessions is kept, when several processes serve them.
    session_store: Option<Box<dyn SessionStore>>,
    /// Standalone `GET` streams, by key (the same key space as exchanges).
    listeners: KeyMap<Listener>,
    /// The next resumable stream number.
    next_stream: u64,
    /// The next attachment number.
    next_attach: u64,
    /// The session whose legacy state is in the machine now.
    current_session: Option<String>,
    /// The buffer of the last `current_session`, kept for the next one.
    spare_session: String,
    /// The application's check in front of the endpoint.
    gate: Option<Box<dyn RequestGate>>,
    /// The deadline the driver's timer was last set for ([`HttpEndpoint::arm_timer`]).
    timer: Option<Instant>,
    /// Counts the endpoint's turns (a request handled, an application's change, time
    /// passed, a stream cancelled): what one turn queues for a stream comes at once, and
    /// only what a client leaves unread across turns counts against
    /// [`HttpEndpointConfig::max_stream_backlog`].
    turn: u64,
}

impl std::fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEndpoint")
            .field("server", &self.server)
            .field("config", &self.config)
            .field("sessions", &self.sessions.as_ref().map(Sessions::len))
            .field("exchanges", &self.exchanges.len())
            .field("listeners", &self.listeners.len())
            .field("server_requests", &self.server_requests.len())
            .field("event_store", &self.store.is_some())
            .field("session_store", &self.session_store.is_some())
            .field("gate", &self.gate.is_some())
            .field("timer", &self.timer)
            .finish_non_exhaustive()
    }
}

impl HttpEndpoint {
    /// An endpoint serving `server` with the default configuration.
    #[must_use]
    pub fn new(server: Server) -> Self {
        HttpEndpoint::with_config(server, HttpEndpointConfig::default())
    }

    /// An endpoint serving `server` with `config`.
    #[must_use]
    pub fn with_config(server: Server, config: HttpEndpointConfig) -> Self {
        HttpEndpoint {
            server,
            config,
            next_key: 0,
            exchanges: KeyMap::default(),
            server_requests: BTreeMap::new(),
            sessions: None,
            ready: BTreeSet::new(),
            store: None,
            session_store: None,
            listeners: KeyMap::default(),
            next_stream: 1,
            next_attach: 1,
            current_session: None,
            spare_session: String::new(),
            gate: None,
            timer: None,
            turn: 1,
        }
    }

    /// An endpoint serving `server` with `config` and legacy sessions: each legacy
    /// client gets an `Mcp-Session-Id` at `initialize` and its own handshake state, and
    /// its server→client requests get unguessable ids only it can answer. `seed` (at
    /// least 32 bytes from a real entropy source) seeds the generator of those ids, and
    /// keys the server's task ids unless [`Server::seed_tasks`] did (sequential ids
    /// would let every client of one principal, and all anonymous clients are one,
    /// name the others' tasks).
    #[must_use]
    pub fn with_sessions(mut server: Server, config: HttpEndpointConfig, seed: &[u8]) -> Self {
        server.key_task_ids(&crate::auth::crypto::hmac_sha256(
            seed,
            &[b"endpoint tasks"],
        ));
        let mut sessions = Sessions::new(seed, config.max_sessions, config.session_idle_timeout);
        // The table keeps which sessions have results due as the machine's tasks change.
        server.tasks.log_results_due();
        let store = MemoryEventStore::new(config.event_store.clone());
        let mut endpoint = HttpEndpoint::with_config(server, config);
        // Stream numbers start somewhere random: several processes sharing an event store
        // must not hand out the same event ids.
        endpoint.next_stream = sessions.stream_base();
        endpoint.sessions = Some(sessions);
        endpoint.store = Some(Box::new(store));
        endpoint
    }

    /// Puts `gate` in front of the endpoint: every request that passed the `Host` and
    /// `Origin` checks goes to it first, and is served only when it says so, as the
    /// principal it names (which replaces the one given to
    /// [`handle_request_as`](Self::handle_request_as)). Replaces any gate set before.
    pub fn set_gate(&mut self, gate: Box<dyn RequestGate>) {
        self.gate = Some(gate);
    }

    /// Keeps the events of resumable streams in `store` instead of the bounded
    /// [`MemoryEventStore`] made from [`HttpEndpointConfig::event_store`]. Only an
    /// endpoint with sessions has resumable streams; without, this does nothing.
    pub fn set_event_store(&mut self, store: Box<dyn EventStore>) {
        if self.sessions.is_some() {
            self.store = Some(store);
        }
    }

    /// Keeps the shared part of the legacy sessions ([`SessionRecord`]) in `store` too,
    /// so that every endpoint (every process) using the same store serves the same
    /// sessions: a session initialized by one is known to the others, and a `DELETE`
    /// on one ends it for all. What stays with this endpoint (parked calls, streams,
    /// tasks) is listed in the docs of [`SessionStore`]. Only an endpoint with sessions
    /// has legacy sessions; without, this does nothing.
    pub fn set_session_store(&mut self, store: Box<dyn SessionStore>) {
        if self.sessions.is_some() {
            self.session_store = Some(store);
        }
    }

    /// Legacy sessions held (0 without sessions).
    #[must_use]
    pub fn sessions(&self) -> usize {
        self.sessions.as_ref().map_or(0, Sessions::len)
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &HttpEndpointConfig {
        &self.config
    }

    /// The server machine.
    #[must_use]
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Exchanges handed out as open streams and not finished or cancelled yet (with
    /// resumable streams, also those whose client went away and may resume).
    #[must_use]
    pub fn open_streams(&self) -> usize {
        self.exchanges.values().filter(|e| e.streaming).count()
    }

    /// Standalone `GET` streams held (served or waiting for their client to resume).
    #[must_use]
    pub fn listeners(&self) -> usize {
        self.listeners.len()
    }

    /// A new turn begins ([`Backlog::behind`](exchange::Backlog::behind)).
    fn next_turn(&mut self) {
        self.turn = self.turn.checked_add(1).unwrap_or(1);
        self.settle_sessions();
    }

    fn fresh_key(&mut self) -> i64 {
        loop {
            let key = self.next_key;
            self.next_key = self.next_key.checked_add(1).unwrap_or(0);
            if !self.exchanges.contains_key(&key) && !self.listeners.contains_key(&key) {
                return key;
            }
        }
    }
}
