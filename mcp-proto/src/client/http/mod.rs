//! Streamable HTTP under the client machine, still without IO.
//!
//! # Theory of operation
//!
//! `HttpLink` puts the protocol session on HTTP exchanges. Every message the session
//! sends becomes one POST; the [`pool`] decides which connection carries it (an idle
//! keep-alive one, a fresh one, or later) and tells the driver through
//! [`super::Transmit`]. Bytes read on a connection go to the response reader of the
//! exchange riding on it; the exchange layer (`exchange.rs`) parses the response once and
//! decides what its end means.
//!
//! A response is a JSON body, an SSE stream (every `data` is one JSON-RPC message), or a
//! `202` for notifications and responses. Anything else — a 4xx/5xx, an unexpected
//! content type, a redirect, a body over the limits — ends in a typed error on the call
//! the exchange carried ([`CallError::Http`](super::CallError::Http) keeps the status, the JSON-RPC code and
//! `data`); during the `server/discover` probe it is classified as era evidence instead
//! (`400/404/405` with a non-modern body mean legacy; `401`, `403`, `5xx` and network
//! errors are no evidence at all).
//! A server too busy for a request (`503` or `429` with `Retry-After` in seconds) has
//! not handled it: it is sent again after the wait, a bounded number of times and only
//! within its deadline (`busy.rs`).
//!
//! Per era:
//! * **2025-06-18 / 2025-11-25**: `MCP-Session-Id` is captured from the `initialize`
//!   response and sent on every later request, with `MCP-Protocol-Version`. A `404` on a
//!   request that carried the session means the session expired: a fresh `initialize`
//!   starts a new one, the requests that never ran (that `404`, reads, requests whose
//!   own answer then says so) are sent on it once, and calls whose fate cannot be known
//!   fail with [`CallError::SessionExpired`](super::CallError::SessionExpired). A call
//!   still waiting on a replaced session is cancelled by giving its exchange up, with no
//!   `notifications/cancelled` (the new session never saw its id). After
//!   the handshake a GET opens the server's own stream (a `405` means it has none). An SSE
//!   stream that ends before the response it owes is resumed with a GET carrying
//!   `Last-Event-ID`, after the server's `retry` delay (or an exponential backoff), a
//!   bounded number of times; a resumed stream that delivers nothing counts as a failed
//!   attempt, so it cannot loop. [`super::Client::close`] sends `DELETE` for the session.
//! * **2026-07-28**: POST only, with `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, and
//!   `Mcp-Param-*` mirrored from the `x-mcp-header` annotations of the tool's latest
//!   `inputSchema`. Tools whose annotations are invalid are removed from every
//!   `tools/list` page and reported as [`Event::ToolExcluded`]. A stream lost before its
//!   response fails the call with [`CallError::Http`](super::CallError::Http) (no resumption in this era, and no
//!   silent re-issue). Cancelling aborts the exchange: its connection is closed.
//! * **2024-11-05 HTTP+SSE** (the deprecated transport, only with
//!   [`ClientConfig::accept_pre_2025_06_versions`](super::ClientConfig::accept_pre_2025_06_versions)):
//!   when `initialize` draws a 400, 404 or 405, a GET on the URL opens the server's
//!   stream, its `endpoint` event names where every message is POSTed, and every answer
//!   comes on that stream. See `sse2024.rs` and [`HttpSseError`].

mod authorize;
mod busy;
mod exchange;
mod learn;
mod nonce;
mod outgoing;
pub mod pool;
mod side;
pub(crate) mod sse2024;
mod tools;

pub use busy::BUSY_BACKOFF;
pub use sse2024::{HttpSseError, MAX_ENDPOINT_BYTES};

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use crate::Instant;

use super::event_queue::EventQueue;
use super::session::{Outgoing, Session, Transport};
use super::transmit::{ConnId, Origin, Transmit, TransportFailure};
use super::{
    ApiMisuse, CallId, CallRequest, ClientConfig, ConnectionState, Event, IdMap, InputAnswer,
    InputId,
};
use crate::auth::{AuthConfig, Authorizer};
use crate::http::xmcp::ParamHeader;
use crate::http::{EndpointUrl, HttpLimits, secret};
use crate::sse::SseLimits;
use crate::version::Era;

use exchange::{Body, Exchange, ExchangeId, Failure};
use pool::{Pool, PoolConfig, PoolStats};

/// How the HTTP side behaves.
///
/// Its `Debug` hides the secrets it may hold: the `authorization` value, the values of
/// `headers` (their names are shown) and of the URL's query parameters.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The MCP endpoint.
    pub url: EndpointUrl,
    /// Limits on each response.
    pub limits: HttpLimits,
    /// Limits on SSE lines and events.
    pub sse_limits: SseLimits,
    /// Bytes of a non-2xx response body kept for the error report. Default 64 KiB.
    pub max_error_body: usize,
    /// Attempts to resume a broken SSE stream (legacy era) before the calls it owed
    /// fail. Default 5.
    pub max_resume_attempts: u32,
    /// First backoff when the server gave no `retry`; doubled per attempt. Default 500 ms.
    pub resume_backoff: Duration,
    /// Longest wait between attempts, whatever the server asks. Default 30 s.
    pub max_resume_delay: Duration,
    /// Times one request turned away by a busy server (`503` or `429` with a
    /// `Retry-After` in seconds) is sent again after the wait, before the call fails
    /// with that status. The waits grow (see [`BUSY_BACKOFF`]) and must end before the
    /// request's deadline, which usually bounds the tries first. Default 8; 0 never
    /// sends again.
    pub max_busy_retries: u8,
    /// The longest `Retry-After` waited out; a longer one (or one past the request's
    /// deadline) fails the call at once. The growing wait between tries stops here too.
    /// Default 10 s.
    pub max_retry_after: Duration,
    /// Open the legacy GET stream for server-initiated messages. Default true.
    pub open_get_stream: bool,
    /// `Authorization` header value, if any (e.g. `Bearer …`). Never logged. With
    /// [`HttpConfig::auth`] as well, the flow's tokens win: this value is sent only
    /// while the flow holds none (neither stored nor obtained), and never again once it
    /// has held one, even when that token expires or is refused.
    pub authorization: Option<String>,
    /// `User-Agent`. Default `mcp-proto/<version>`.
    pub user_agent: String,
    /// More headers for every request to the MCP server (an API key some servers want
    /// in `X-Api-Key`, a tenant, a routing hint), written after the client's own;
    /// never sent to an authorization server. A name the client writes itself
    /// (`Accept`, `Authorization`, `Content-Type`, `Last-Event-ID`, `Mcp-Session-Id`,
    /// `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`, `User-Agent`,
    /// `Connection`, `Host`, `Content-Length`, `Transfer-Encoding`), a name that is not a
    /// token or a value with control bytes fails each request that would carry it,
    /// with [`RequestError`](crate::http::RequestError) naming the header. A credential
    /// among them is hidden from wire logs only under a name their redaction knows.
    /// Default none.
    pub headers: Vec<(String, String)>,
    /// How connections are opened, bounded and kept.
    pub pool: PoolConfig,
    /// After [`super::Client::close`], how long the last exchanges (a legacy session's
    /// `DELETE`) may take before every connection is closed regardless. Default 2 s.
    pub close_timeout: Duration,
    /// OAuth authorization: with it, a `401` (or a `403` asking for more scope) starts
    /// the [flow](crate::auth) and the refused request waits for its end instead of
    /// failing; without it (the default) a `401` fails with
    /// [`CloseReason::AuthRequired`](super::CloseReason::AuthRequired).
    pub auth: Option<AuthConfig>,
    /// The Unix time, in seconds, at the `now` the client is created with: token
    /// expiry and signed assertions need the wall clock, which the machine never reads.
    pub unix_time: u64,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &UrlShown(&self.url))
            .field("limits", &self.limits)
            .field("sse_limits", &self.sse_limits)
            .field("max_error_body", &self.max_error_body)
            .field("max_resume_attempts", &self.max_resume_attempts)
            .field("resume_backoff", &self.resume_backoff)
            .field("max_resume_delay", &self.max_resume_delay)
            .field("max_busy_retries", &self.max_busy_retries)
            .field("max_retry_after", &self.max_retry_after)
            .field("open_get_stream", &self.open_get_stream)
            .field("authorization", &secret::redacted(&self.authorization))
            .field("user_agent", &self.user_agent)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("pool", &self.pool)
            .field("close_timeout", &self.close_timeout)
            .field("auth", &self.auth)
            .field("unix_time", &self.unix_time)
            .finish()
    }
}

/// An endpoint URL for `Debug` output: its query parameters' values (an API key, a
/// token some servers take there) replaced by `<redacted>`, their names kept.
pub(crate) struct UrlShown<'a>(pub(crate) &'a EndpointUrl);

impl std::fmt::Debug for UrlShown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = self.0;
        write!(f, "\"{}{}", url.origin(), url.path())?;
        if let Some(query) = url.query() {
            secret::write_hidden_query(f, query, secret::REDACTED)?;
        }
        f.write_str("\"")
    }
}

impl HttpConfig {
    /// Defaults for `url`.
    #[must_use]
    pub fn new(url: EndpointUrl) -> Self {
        HttpConfig {
            url,
            limits: HttpLimits::streaming(),
            sse_limits: SseLimits::default(),
            max_error_body: 64 * 1024,
            max_resume_attempts: 5,
            resume_backoff: Duration::from_millis(500),
            max_resume_delay: Duration::from_secs(30),
            max_busy_retries: 8,
            max_retry_after: Duration::from_secs(10),
            open_get_stream: true,
            authorization: None,
            user_agent: concat!("mcp-proto/", env!("CARGO_PKG_VERSION")).to_owned(),
            headers: Vec::new(),
            pool: PoolConfig::default(),
            close_timeout: Duration::from_secs(2),
            auth: None,
            unix_time: 0,
        }
    }
}

/// The session over Streamable HTTP. See the module docs.
#[derive(Debug)]
pub(crate) struct HttpLink {
    client: Session,
    config: HttpConfig,
    /// The latest instant an input or command brought.
    now: Instant,
    next_exchange: u64,
    exchanges: IdMap<ExchangeId, Exchange>,
    pool: Pool,
    events: EventQueue,
    session_id: Option<String>,
    /// Legacy sessions replaced so far: an exchange sent on an older one is told apart
    /// when its answer comes after the session was replaced.
    session_epoch: u32,
    /// Legacy sessions in a row that expired (`404`) before the server answered any
    /// request on them with success: a server that forgets every session it makes is
    /// not asked for another one without end.
    fresh_sessions_lost: u8,
    /// `x-mcp-header` declarations by tool name, from the latest `tools/list`.
    tool_headers: BTreeMap<String, Vec<ParamHeader>>,
    /// Tools left out of `tools/list` for invalid annotations, with the reason: a call
    /// to one fails locally, since no header set could satisfy the server.
    excluded_tools: BTreeMap<String, crate::http::xmcp::InvalidAnnotation>,
    /// The tools named by each listing in progress (its pages so far): at its end, the
    /// declarations of every tool that neither it nor another listing in progress named
    /// are forgotten.
    listed_names: BTreeMap<Option<CallId>, std::collections::BTreeSet<String>>,
    /// At most this many names are learned (`Limits::max_list_items`: one listing).
    max_learned_tools: usize,
    /// Names were let go during the listing in progress (past `max_learned_tools`).
    names_let_go: bool,
    /// Resumptions waiting for their delay: (when, last event id, ids owed, attempt).
    resumes: Vec<exchange::PendingResume>,
    /// Requests waiting out a busy server's `Retry-After`.
    retries: Vec<busy::PendingRetry>,
    /// Requests whose exchange on a replaced legacy session was just given up (the
    /// `pump`'s current turn): their `notifications/cancelled` is not sent, since it
    /// would go on the new session, which never saw them (the old one ended, and its
    /// requests with it).
    stale_cancels: Vec<i64>,
    get_stream: GetStream,
    closing: bool,
    /// After close: when whatever is still in flight is given up.
    close_deadline: Option<Instant>,
    /// Legacy: messages held until the server accepted `notifications/initialized`, so
    /// no request can overtake it on another connection.
    held: Option<VecDeque<Outgoing>>,
    /// `tools/call` requests waiting for the tools' header declarations.
    learning: learn::Learning,
    /// The authorization flow, when configured.
    auth: Option<Authorizer>,
    /// Whether `config.authorization` goes out when the flow gives no header: always
    /// without a flow; with one, only the caller's own value, until the flow holds
    /// tokens. From then on the flow's token wins, and a token it no longer holds
    /// (expired, refused) is never sent from this copy, nor replaced by the caller's.
    static_authorization: bool,
    /// Largest body of an authorization response.
    auth_max_body: usize,
    /// Messages waiting for the flow to end.
    parked: VecDeque<authorize::Parked>,
    /// `GET`s (the session's stream, resumptions) waiting for the flow to end.
    waiting_gets: Vec<exchange::PendingResume>,
    /// The `DELETE` of [`HttpLink::close`] (its protocol version), waiting for the
    /// refresh it started to end.
    waiting_delete: Option<Option<crate::version::ProtocolVersion>>,
    /// Counts the changes of the `Authorization` value sent, and each token a flow
    /// obtains even when its value is the one held: a refusal of a request that carried
    /// an older one is answered by the new one, not by another flow, and a request's
    /// DPoP nonce resend counts only with the one it went with (`nonce::NonceResent`).
    auth_generation: u64,
    /// The flow's one-shot connections.
    side: side::Side,
    /// The 2024-11-05 HTTP+SSE transport, once detected (see `sse2024.rs`).
    sse: Option<sse2024::HttpSse>,
    /// The start of a message's `POST` head, kept for the next message.
    post_start: outgoing::PostStart,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GetStream {
    /// Not opened (modern era, or not yet initialized).
    Idle,
    /// Open, or waiting to reopen.
    Active,
    /// The server has none (405), or it failed for good.
    Unavailable,
}

impl HttpLink {
    /// A new connection; the first request (probe or `initialize`) is ready to transmit.
    pub(crate) fn new(config: ClientConfig, http: HttpConfig, now: Instant) -> Self {
        let events = EventQueue::new(&config.limits);
        let max_learned_tools = config.limits.max_list_items;
        // HTTP semantics: 2026 cancellation aborts the exchange instead of writing
        // `notifications/cancelled`, and silence during the probe is an outage rather
        // than legacy evidence.
        let client = Session::over(config, now, Transport::Http);
        let pool = Pool::new(Origin::of(&http.url), http.pool.clone());
        let auth_max_body = http.auth.as_ref().map_or(0, |a| a.max_body_bytes);
        let auth = http
            .auth
            .clone()
            .map(|a| Authorizer::new(a, &http.url, now, http.unix_time));
        let mut http = http;
        // The flow's tokens win over a configured header; that header is sent only
        // while the flow holds none.
        let flow_holds = auth.as_ref().is_some_and(|a| {
            let c = a.credentials();
            c.access_token.is_some() || c.refresh_token.is_some()
        });
        if flow_holds || http.authorization.is_none() {
            http.authorization = auth.as_ref().and_then(Authorizer::authorization);
        }
        let mut this = HttpLink {
            client,
            config: http,
            now,
            next_exchange: 0,
            exchanges: IdMap::default(),
            pool,
            events,
            session_id: None,
            session_epoch: 0,
            fresh_sessions_lost: 0,
            tool_headers: BTreeMap::new(),
            excluded_tools: BTreeMap::new(),
            listed_names: BTreeMap::new(),
            max_learned_tools,
            names_let_go: false,
            resumes: Vec::new(),
            retries: Vec::new(),
            stale_cancels: Vec::new(),
            get_stream: GetStream::Idle,
            closing: false,
            close_deadline: None,
            held: None,
            learning: learn::Learning::default(),
            auth,
            static_authorization: !flow_holds,
            auth_max_body,
            parked: VecDeque::new(),
            waiting_gets: Vec::new(),
            waiting_delete: None,
            auth_generation: 0,
            side: side::Side::default(),
            sse: None,
            post_start: outgoing::PostStart::default(),
        };
        this.pump(now);
        this
    }

    pub(crate) fn session(&self) -> &Session {
        &self.client
    }

    pub(crate) fn http_config(&self) -> &HttpConfig {
        &self.config
    }

    pub(crate) fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    pub(crate) fn is_idle(&self, conn: ConnId) -> bool {
        self.pool.is_idle(conn)
    }

    pub(crate) fn pool_stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// Another `Authorization` value is another authorization context: the private
    /// entries of the list cache are not served under it.
    pub(crate) fn set_authorization(&mut self, value: Option<String>) {
        if self.config.authorization != value {
            self.client.authorization_changed();
            self.auth_generation = self.auth_generation.wrapping_add(1);
        }
        self.config.authorization = value;
    }

    pub(crate) fn credentials(&self) -> Option<&crate::auth::Credentials> {
        self.auth.as_ref().map(Authorizer::credentials)
    }

    // ----- commands -----------------------------------------------------------------

    pub(crate) fn call(&mut self, now: Instant, request: CallRequest) -> Result<CallId, ApiMisuse> {
        self.now = now;
        let id = self.client.call(now, request)?;
        self.pump(now);
        Ok(id)
    }

    pub(crate) fn respond(
        &mut self,
        now: Instant,
        input: InputId,
        answer: InputAnswer,
    ) -> Result<(), ApiMisuse> {
        self.now = now;
        self.client.respond(now, input, answer)?;
        self.pump(now);
        Ok(())
    }

    pub(crate) fn set_roots(
        &mut self,
        now: Instant,
        roots: Vec<crate::client::Root>,
    ) -> Result<(), ApiMisuse> {
        self.now = now;
        self.client.set_roots(now, roots)?;
        self.pump(now);
        Ok(())
    }

    pub(crate) fn cancel(&mut self, now: Instant, call: CallId) -> Result<(), ApiMisuse> {
        self.now = now;
        self.client.cancel(now, call)?;
        self.pump(now);
        Ok(())
    }

    /// Ends the connection: calls fail, every exchange is aborted, and a legacy session
    /// is ended with `DELETE` (one last exchange); every connection closes once that is
    /// answered.
    pub(crate) fn close(&mut self, now: Instant) {
        if self.closing {
            return;
        }
        self.now = now;
        self.closing = true;
        self.close_deadline = Some(now + self.config.close_timeout);
        let version = self.client.header_version();
        self.client.close(now);
        self.abort_all();
        self.resumes.clear();
        self.retries.clear();
        self.parked.clear();
        self.waiting_gets.clear();
        // A refresh already in flight (not a person's approval) is what the `DELETE`
        // needs: it waits for its token, within the close's time, rather than going
        // with the expired one the flow is replacing.
        let refreshing = (self.auth.as_ref()).is_some_and(|a| a.is_busy() && !a.awaits_approval());
        if self.session_id.is_some() && refreshing {
            if let Some(auth) = &self.auth {
                self.side.retain(|id| auth.wants_response(id));
            }
            self.waiting_delete = Some(version);
            self.drive_auth(now);
        } else {
            self.side.retain(|_| false);
            if self.session_id.is_some() {
                self.send_delete(version);
            }
        }
        self.pump(now);
        self.release_if_done();
    }

    /// After close: once nothing is in flight (the `DELETE` answered), every connection
    /// closes.
    fn release_if_done(&mut self) {
        if self.closing
            && self.exchanges.is_empty()
            && self.retries.is_empty()
            && self.waiting_delete.is_none()
        {
            self.pool.close_all();
        }
    }

    /// Whether the link has nothing left to do: closed, and every connection released.
    pub(crate) fn is_released(&self) -> bool {
        self.closing
            && self.exchanges.is_empty()
            && self.retries.is_empty()
            && self.waiting_delete.is_none()
            && self.pool.is_empty()
            && self.side.is_empty()
    }

    // ----- inputs -------------------------------------------------------------------

    pub(crate) fn handle_connected(&mut self, now: Instant, conn: ConnId) {
        self.now = now;
        if self.side.owns(conn) {
            return self.side.connected(conn);
        }
        self.pool.connected(conn);
    }

    pub(crate) fn handle_read(&mut self, now: Instant, conn: ConnId, data: &[u8]) {
        self.now = now;
        if data.is_empty() {
            // Nothing arrived: no response has started (an empty read must not mark the
            // request answered, which would drop its bytes before they were written).
            return;
        }
        if self.side.owns(conn) {
            if let Some(outcome) = self.side.read(conn, data) {
                self.side_outcome(now, outcome);
                self.pump(now);
            }
            return;
        }
        match self.pool.read(now, conn) {
            pool::Outcome::Deliver(exchange) => {
                if let Some(x) = self.exchanges.get_mut(&exchange) {
                    x.reader.handle_input(data);
                    self.drive_exchange(now, exchange);
                }
            }
            failed @ pool::Outcome::Failed(..) => return self.on_outcome(now, failed),
            pool::Outcome::None => {}
        }
        self.pump(now);
        self.release_if_done();
    }

    pub(crate) fn handle_eof(&mut self, now: Instant, conn: ConnId) {
        self.now = now;
        if self.side.owns(conn) {
            if let Some(outcome) = self.side.eof(conn) {
                self.side_outcome(now, outcome);
                self.pump(now);
            }
            return;
        }
        let outcome = self.pool.eof(now, conn);
        self.on_outcome(now, outcome);
    }

    pub(crate) fn handle_transport_error(
        &mut self,
        now: Instant,
        conn: ConnId,
        failure: TransportFailure,
    ) {
        self.now = now;
        if self.side.owns(conn) {
            if let Some(outcome) = self.side.failed(conn, &failure) {
                self.side_outcome(now, outcome);
                self.pump(now);
            }
            return;
        }
        let outcome = self.pool.failed(now, conn, failure);
        self.on_outcome(now, outcome);
    }

    fn on_outcome(&mut self, now: Instant, outcome: pool::Outcome) {
        match outcome {
            pool::Outcome::None => {}
            pool::Outcome::Deliver(exchange) => {
                if let Some(x) = self.exchanges.get_mut(&exchange) {
                    x.reader.handle_eof();
                    self.drive_exchange(now, exchange);
                }
            }
            pool::Outcome::Failed(exchange, failure) => {
                if let Some(x) = self.exchanges.remove(&exchange) {
                    self.exchange_failed(now, x, None, None, Failure::Transport(failure));
                }
            }
        }
        self.pump(now);
        self.release_if_done();
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        if self.close_deadline.is_some_and(|d| d <= now) {
            // The last exchanges took too long: give them up, with the `DELETE` that
            // waits out a busy server (sent now, it would have no deadline left).
            self.close_deadline = None;
            self.abort_all();
            self.retries.clear();
            // A refresh the `DELETE` waited for: both given up, the flow too, so that it
            // is not left busy with its exchanges gone.
            self.waiting_delete = None;
            if let Some(auth) = &mut self.auth {
                auth.abandon(now, "the connection closed");
            }
            self.side.retain(|_| false);
            self.pool.close_all();
        }
        for (exchange, failure) in self.pool.handle_timeout(now) {
            if let Some(x) = self.exchanges.remove(&exchange) {
                self.exchange_failed(now, x, None, None, Failure::Transport(failure));
            }
        }
        self.expire_exchanges(now);
        self.auth_timeout(now);
        // Before the session's own handshake deadline, which it shares: the typed
        // reason wins.
        self.sse_timeout(now);
        self.client.handle_timeout(now);
        self.start_due_resumes(now);
        self.start_due_retries(now);
        self.pump(now);
        self.release_if_done();
    }

    // ----- outputs ------------------------------------------------------------------

    pub(crate) fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> Option<Transmit> {
        self.pool
            .poll_transmit(buf)
            .or_else(|| self.side.poll_transmit(buf))
    }

    /// See [`super::Client::retained_bytes`].
    pub(crate) fn retained_bytes(&self) -> usize {
        let exchanges: usize = self
            .exchanges
            .values()
            .map(|x| x.reader.retained_bytes() + x.body.retained_bytes())
            .sum();
        let held: usize = self.held.iter().flatten().map(|m| m.json.len()).sum();
        let parked: usize = self.parked.iter().map(|p| p.msg.json.len()).sum();
        let retries: usize = self.retries.iter().map(|r| r.retained_bytes()).sum();
        self.client.retained_bytes()
            + self.events.bytes()
            + self.pool.waiting_bytes()
            + exchanges
            + held
            + parked
            + retries
            + self.side.retained_bytes()
            + self.sse_retained_bytes()
            + self.learned_bytes()
    }

    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        if self.is_released() {
            return None;
        }
        let resume = self.resumes.iter().map(|r| r.due);
        let resume = resume.chain(self.retries.iter().map(|r| r.due)).min();
        let exchanges = self
            .exchanges
            .values()
            .filter(|x| x.head.is_none() || x.settled || matches!(x.body, Body::Failure(_)))
            .filter_map(|x| x.deadline)
            .min();
        [
            self.client.poll_timeout(),
            resume,
            self.pool.poll_timeout(),
            exchanges,
            self.close_deadline,
            self.auth.as_ref().and_then(Authorizer::poll_timeout),
            self.sse_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    // ----- the pump -----------------------------------------------------------------

    /// Moves everything the protocol machine produced onto HTTP.
    fn pump(&mut self, now: Instant) {
        loop {
            let mut progressed = false;
            while let Some(rpc) = self.client.poll_abort() {
                progressed = true;
                // The request's own exchange, and a resumption of its stream that owes
                // nothing else still awaited.
                let client = &self.client;
                let resumes_only = |x: &Exchange| {
                    matches!(&x.purpose, exchange::Purpose::Get { owed, .. }
                        if owed.contains(&rpc)
                            && owed.iter().all(|r| *r == rpc || !client.is_awaiting(*r)))
                };
                let mut hit: Vec<ExchangeId> = self
                    .exchanges
                    .iter()
                    .filter(|(_, x)| x.rpc_id == Some(rpc) || resumes_only(x))
                    .map(|(id, _)| *id)
                    .collect();
                hit.sort_unstable();
                for id in hit {
                    let stale = self
                        .exchanges
                        .get(&id)
                        .is_some_and(|x| x.had_session && x.session_epoch != self.session_epoch);
                    if stale && !self.stale_cancels.contains(&rpc) {
                        self.stale_cancels.push(rpc);
                    }
                    self.abort_exchange(id);
                }
            }
            while let Some(msg) = self.client.poll_outgoing() {
                progressed = true;
                self.send_message(now, msg);
            }
            while let Some(ev) = self.client.poll_event() {
                progressed = true;
                if !self.learning_event(now, &ev) {
                    continue;
                }
                if let Event::CallCompleted { call, .. } = &ev {
                    self.forget_call(*call);
                }
                self.observe_event(now, &ev);
                self.events.push_back(ev);
            }
            if !progressed {
                break;
            }
        }
        if self.pool.has_waiting_requests() && self.exchanges.values().any(|x| x.settled) {
            self.release_settled(now);
        }
        self.stale_cancels.clear();
    }

    fn observe_event(&mut self, _now: Instant, ev: &Event) {
        match ev {
            Event::Connected(details)
                if details.protocol_version.era() == Era::Legacy
                    && self.config.open_get_stream
                    && self.sse.is_none()
                    && self.get_stream == GetStream::Idle =>
            {
                // Opened once `notifications/initialized` is accepted (see `release_held`).
                self.get_stream = GetStream::Active;
            }
            Event::Notification(n) if n.method == "notifications/tools/list_changed" => {
                self.learning.listed = false;
            }
            // After `close`, the exchanges are already gone and only the DELETE remains.
            // The session ended on its own (a failed handshake, say): nothing more will
            // be sent, so every connection goes.
            Event::Closed { .. } if !self.closing => {
                self.closing = true;
                self.abort_all();
                self.resumes.clear();
                self.waiting_gets.clear();
                self.retries.clear();
                self.pool.close_all();
            }
            _ => {}
        }
    }

    /// Whether a legacy server can reach the client outside its requests: on the
    /// 2024-11-05 transport always (its stream carries everything); on Streamable HTTP
    /// while the session's `GET` stream is open or being reopened.
    pub(crate) fn hears_server(&self) -> bool {
        if self.sse.is_some() {
            return !self.closing;
        }
        self.era() == Some(Era::Legacy)
            && self.get_stream == GetStream::Active
            && self.session_id.is_some()
    }

    /// `notifications/initialized` was accepted (or refused): send what waited for it.
    pub(super) fn release_held(&mut self, now: Instant) {
        let Some(held) = self.held.take() else {
            return;
        };
        self.open_session_stream(now);
        for msg in held {
            self.send_message(now, msg);
        }
    }

    /// Opens the legacy session's `GET` stream, once `notifications/initialized` is
    /// accepted or refused, when the server may have one.
    pub(super) fn open_session_stream(&mut self, now: Instant) {
        // Without a session the server has nothing to route to a GET stream.
        if self.get_stream == GetStream::Active && self.session_id.is_some() {
            let stream = exchange::PendingResume {
                due: now,
                last_event_id: None,
                digest: None,
                owed: Vec::new(),
                attempt: 0,
                after_refusal: false,
                nonce_resent: nonce::NonceResent::NO,
            };
            self.open_get(now, stream);
        }
    }

    fn alloc_exchange(&mut self) -> ExchangeId {
        let id = ExchangeId(self.next_exchange);
        self.next_exchange += 1;
        id
    }

    fn era(&self) -> Option<Era> {
        match self.client.state() {
            ConnectionState::Ready(era, _) => Some(era),
            _ => None,
        }
    }

    /// Opens exchange `id` with the request `bytes` (head and body, apart).
    fn insert_exchange(&mut self, id: ExchangeId, x: Exchange, bytes: (Vec<u8>, Arc<Vec<u8>>)) {
        // A GET stream or a 2026 subscription: open for as long as the server keeps it,
        // so it does not take one of the request connections.
        let long_lived = match &x.purpose {
            exchange::Purpose::Get { .. } | exchange::Purpose::SseStream => true,
            exchange::Purpose::Request { method } => method.listen,
            _ => false,
        };
        let repeatable = x.purpose.is_repeatable();
        self.exchanges.insert(id, x);
        self.pool
            .submit(self.now, id, bytes, long_lived, repeatable);
    }

    /// Gives up the exchanges whose response did not start by their deadline: a server
    /// that never answers a notification (`notifications/initialized` included, which
    /// holds the requests after it) or a GET holds nothing for longer than
    /// `Limits::request_timeout`.
    /// Gives up the connections of [`settled`](Exchange::settled) streams: those past
    /// their linger, and all of them while a request waits for a connection.
    fn release_settled(&mut self, now: Instant) {
        let pressed = self.pool.has_waiting_requests();
        let mut done: Vec<ExchangeId> = self
            .exchanges
            .iter()
            .filter(|(_, x)| x.settled && (pressed || x.deadline.is_some_and(|d| d <= now)))
            .map(|(id, _)| *id)
            .collect();
        if done.is_empty() {
            return;
        }
        done.sort_unstable();
        for id in &done {
            self.exchanges.remove(id);
        }
        self.pool.abort_many(now, &done);
    }

    fn expire_exchanges(&mut self, now: Instant) {
        self.release_settled(now);
        // A failure status is final at its head, but its body may never end: the
        // exchange keeps its deadline until it does, or it would hold its connection
        // (and, for `notifications/initialized`, every message behind it) for good.
        let mut expired: Vec<ExchangeId> = self
            .exchanges
            .iter()
            .filter(|(_, x)| x.head.is_none() || matches!(x.body, Body::Failure(_)))
            .filter(|(_, x)| x.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        if expired.is_empty() {
            return;
        }
        expired.sort_unstable();
        self.pool.abort_many(now, &expired);
        let timeout = self.client.config().limits.request_timeout;
        for id in expired {
            if let Some(x) = self.exchanges.remove(&id) {
                let status = x.head.as_ref().map(|h| h.status);
                let detail = match status {
                    Some(status) => {
                        format!(
                            "the body of the HTTP {status} response did not end within {timeout:?}"
                        )
                    }
                    None => format!("no response within {timeout:?}"),
                };
                self.exchange_failed(now, x, status, None, Failure::Text(detail));
            }
        }
    }

    /// Forgets an exchange: a request still waiting for a connection is dropped; one
    /// already sent has its connection closed.
    pub(super) fn abort_exchange(&mut self, id: ExchangeId) {
        self.exchanges.remove(&id);
        self.pool.abort(self.now, id);
    }

    pub(super) fn abort_all(&mut self) {
        self.abort_all_but(&[]);
    }

    /// Forgets every exchange but the requests of `spared` (JSON-RPC ids).
    pub(super) fn abort_all_but(&mut self, spared: &[i64]) {
        let spare = |x: &Exchange| x.rpc_id.is_some_and(|r| spared.contains(&r));
        let mut open: Vec<ExchangeId> = self
            .exchanges
            .iter()
            .filter(|(_, x)| !spare(x))
            .map(|(id, _)| *id)
            .collect();
        open.sort_unstable();
        for id in &open {
            self.exchanges.remove(id);
        }
        self.pool.abort_many(self.now, &open);
    }
}
