//! The client over Streamable HTTP, still without IO.
//!
//! # Theory of operation
//!
//! [`HttpClient`] wraps the protocol machine ([`Client`]) and maps its messages onto HTTP
//! exchanges. Every message the client sends becomes one POST ([`Transmit`]): the caller
//! writes its bytes on a connection to the endpoint (a fresh one, or an idle one left
//! reusable by an earlier exchange) and feeds the response bytes back with
//! [`HttpClient::handle_response_data`] and [`HttpClient::handle_response_eof`], or
//! reports a transport failure with [`HttpClient::handle_exchange_error`].
//!
//! A response is a JSON body, an SSE stream (every `data` is one JSON-RPC message), or a
//! `202` for notifications and responses. Anything else — a 4xx/5xx, an unexpected
//! content type, a redirect, a body over the limits — ends in a typed error on the call
//! the exchange carried ([`CallError::Http`](super::CallError::Http) keeps the status, the JSON-RPC code and
//! `data`); during the `server/discover` probe it is classified as era evidence instead
//! (`400/404/405` with a non-modern body mean legacy; `401`, `403`, `5xx` and network
//! errors are no evidence at all).
//!
//! Per era:
//! * **2025-06-18 / 2025-11-25**: `MCP-Session-Id` is captured from the `initialize`
//!   response and sent on every later request, with `MCP-Protocol-Version`. A `404` on a
//!   request that carried the session means the session expired: calls in flight fail
//!   with [`CallError::SessionExpired`](super::CallError::SessionExpired) and a fresh `initialize` starts a new one. After
//!   the handshake a GET opens the server's own stream (a `405` means it has none). An SSE
//!   stream that ends before the response it owes is resumed with a GET carrying
//!   `Last-Event-ID`, after the server's `retry` delay (or an exponential backoff), a
//!   bounded number of times; a resumed stream that delivers nothing counts as a failed
//!   attempt, so it cannot loop. [`HttpClient::close`] sends `DELETE` for the session.
//! * **2026-07-28**: POST only, with `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, and
//!   `Mcp-Param-*` mirrored from the `x-mcp-header` annotations of the tool's latest
//!   `inputSchema`. Tools whose annotations are invalid are removed from every
//!   `tools/list` page and reported as [`Event::ToolExcluded`]. A stream lost before its
//!   response fails the call with [`CallError::Http`](super::CallError::Http) (no resumption in this era, and no
//!   silent re-issue). Cancelling aborts the exchange ([`HttpClient::poll_abort`]).

mod exchange;
mod outgoing;
mod tools;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;

use crate::Instant;

use super::{
    ApiMisuse, CallId, CallRequest, Client, ClientConfig, ConnectionState, Event, InputAnswer,
    InputId, Outgoing,
};
use crate::http::xmcp::ParamHeader;
use crate::http::{EndpointUrl, HttpLimits};
use crate::sse::SseLimits;
use crate::version::Era;

use exchange::Exchange;
pub use exchange::ExchangeId;

/// How the HTTP side behaves.
#[derive(Debug, Clone)]
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
    /// Open the legacy GET stream for server-initiated messages. Default true.
    pub open_get_stream: bool,
    /// `Authorization` header value, if any (e.g. `Bearer …`). Never logged.
    pub authorization: Option<String>,
    /// `User-Agent`. Default `mcp-proto/<version>`.
    pub user_agent: String,
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
            open_get_stream: true,
            authorization: None,
            user_agent: concat!("mcp-proto/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

/// One HTTP request to send: open (or reuse) a connection to the endpoint and write
/// `bytes`, then feed back what the server answers under `exchange`.
#[derive(Debug, Clone)]
pub struct Transmit {
    /// The exchange.
    pub exchange: ExchangeId,
    /// The whole request: head and body.
    pub bytes: Vec<u8>,
    /// A GET stream that may stay open indefinitely (the legacy server stream or a
    /// resumption): a bounded connection pool should not let these starve calls.
    pub long_lived: bool,
}

/// An exchange is over; the caller may reuse its connection when `reusable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    /// The exchange.
    pub exchange: ExchangeId,
    /// The connection may carry another exchange (keep-alive, nothing left over).
    pub reusable: bool,
}

/// The sans-IO client over Streamable HTTP. See the module docs.
#[derive(Debug)]
pub struct HttpClient {
    client: Client,
    config: HttpConfig,
    next_exchange: u64,
    exchanges: BTreeMap<ExchangeId, Exchange>,
    transmits: VecDeque<Transmit>,
    aborts: VecDeque<ExchangeId>,
    finished: VecDeque<Finished>,
    events: VecDeque<Event>,
    session_id: Option<String>,
    /// `x-mcp-header` declarations by tool name, from the latest `tools/list`.
    tool_headers: HashMap<String, Vec<ParamHeader>>,
    /// Tools left out of `tools/list` for invalid annotations, with the reason: a call
    /// to one fails locally, since no header set could satisfy the server.
    excluded_tools: HashMap<String, String>,
    /// Resumptions waiting for their delay: (when, last event id, ids owed, attempt).
    resumes: Vec<exchange::PendingResume>,
    get_stream: GetStream,
    closing: bool,
    /// Legacy: messages held until the server accepted `notifications/initialized`, so
    /// no request can overtake it on another connection.
    held: Option<VecDeque<Outgoing>>,
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

impl HttpClient {
    /// A new connection; the first request (probe or `initialize`) is ready to transmit.
    #[must_use]
    pub fn new(config: ClientConfig, http: HttpConfig, now: Instant) -> Self {
        let mut client = Client::new(config, now);
        client.use_http_transport();
        let mut this = HttpClient {
            client,
            config: http,
            next_exchange: 0,
            exchanges: BTreeMap::new(),
            transmits: VecDeque::new(),
            aborts: VecDeque::new(),
            finished: VecDeque::new(),
            events: VecDeque::new(),
            session_id: None,
            tool_headers: HashMap::new(),
            excluded_tools: HashMap::new(),
            resumes: Vec::new(),
            get_stream: GetStream::Idle,
            closing: false,
            held: None,
        };
        this.pump(now);
        this
    }

    /// The protocol machine inside.
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The HTTP configuration.
    #[must_use]
    pub fn http_config(&self) -> &HttpConfig {
        &self.config
    }

    /// The legacy session id, once the server issued one.
    #[must_use]
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Replaces the `Authorization` header value for the requests that follow.
    pub fn set_authorization(&mut self, value: Option<String>) {
        self.config.authorization = value;
    }

    // ----- commands -----------------------------------------------------------------

    /// Starts a call (see [`Client::call`]).
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn call(&mut self, now: Instant, request: CallRequest) -> Result<CallId, ApiMisuse> {
        let id = self.client.call(now, request)?;
        self.pump(now);
        Ok(id)
    }

    /// Answers an input request (see [`Client::respond`]).
    ///
    /// # Errors
    /// As [`Client::respond`].
    pub fn respond(
        &mut self,
        now: Instant,
        input: InputId,
        answer: InputAnswer,
    ) -> Result<(), ApiMisuse> {
        self.client.respond(now, input, answer)?;
        self.pump(now);
        Ok(())
    }

    /// Cancels a call (see [`Client::cancel`]); in the 2026 era its exchange is aborted.
    ///
    /// # Errors
    /// As [`Client::cancel`].
    pub fn cancel(&mut self, now: Instant, call: CallId) -> Result<(), ApiMisuse> {
        self.client.cancel(now, call)?;
        self.pump(now);
        Ok(())
    }

    /// Ends the connection: calls fail, every exchange is aborted, and a legacy session
    /// is ended with `DELETE` (one last [`Transmit`]).
    pub fn close(&mut self, now: Instant) {
        if self.closing {
            return;
        }
        self.closing = true;
        let version = self.client.header_version();
        self.client.close(now);
        self.abort_all();
        self.resumes.clear();
        if self.session_id.is_some() {
            self.send_delete(version);
        }
        self.pump(now);
    }

    // ----- inputs -------------------------------------------------------------------

    /// Response bytes for `exchange`.
    pub fn handle_response_data(&mut self, now: Instant, exchange: ExchangeId, data: &[u8]) {
        if let Some(x) = self.exchanges.get_mut(&exchange) {
            x.reader.handle_input(data);
            self.drive_exchange(now, exchange);
        }
        self.pump(now);
    }

    /// The connection of `exchange` reached end of input.
    pub fn handle_response_eof(&mut self, now: Instant, exchange: ExchangeId) {
        if let Some(x) = self.exchanges.get_mut(&exchange) {
            x.reader.handle_eof();
            self.drive_exchange(now, exchange);
        }
        self.pump(now);
    }

    /// `exchange` failed below HTTP (connect refused, reset, TLS failure, the caller's
    /// own IO timeout). `detail` says what, for people.
    pub fn handle_exchange_error(&mut self, now: Instant, exchange: ExchangeId, detail: &str) {
        if let Some(x) = self.exchanges.remove(&exchange) {
            self.exchange_failed(now, x, None, None, detail.to_owned());
        }
        self.pump(now);
    }

    /// Time passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.client.handle_timeout(now);
        self.start_due_resumes(now);
        self.pump(now);
    }

    // ----- outputs ------------------------------------------------------------------

    /// The next request to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next exchange whose connection must be closed at once (cancelled or given up).
    pub fn poll_abort(&mut self) -> Option<ExchangeId> {
        self.aborts.pop_front()
    }

    /// The next exchange that is over, and whether its connection can be reused.
    pub fn poll_finished(&mut self) -> Option<Finished> {
        self.finished.pop_front()
    }

    /// The next event: the protocol machine's, plus [`Event::ToolExcluded`].
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`HttpClient::handle_timeout`] should be called next.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let resume = self.resumes.iter().map(|r| r.due).min();
        match (self.client.poll_timeout(), resume) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ----- the pump -----------------------------------------------------------------

    /// Moves everything the protocol machine produced onto HTTP.
    fn pump(&mut self, now: Instant) {
        loop {
            let mut progressed = false;
            while let Some(rpc) = self.client.poll_abort() {
                progressed = true;
                let hit: Vec<ExchangeId> = self
                    .exchanges
                    .iter()
                    .filter(|(_, x)| x.rpc_id == Some(rpc))
                    .map(|(id, _)| *id)
                    .collect();
                for id in hit {
                    self.abort_exchange(id);
                }
            }
            while let Some(msg) = self.client.poll_outgoing() {
                progressed = true;
                self.send_message(now, msg);
            }
            while let Some(ev) = self.client.poll_event() {
                progressed = true;
                self.observe_event(now, &ev);
                self.events.push_back(ev);
            }
            if !progressed {
                break;
            }
        }
    }

    fn observe_event(&mut self, _now: Instant, ev: &Event) {
        match ev {
            Event::Connected(details)
                if details.protocol_version.era() == Era::Legacy
                    && self.config.open_get_stream
                    && self.get_stream == GetStream::Idle =>
            {
                // Opened once `notifications/initialized` is accepted (see `release_held`).
                self.get_stream = GetStream::Active;
            }
            // After `close`, the exchanges are already gone and only the DELETE remains.
            Event::Closed { .. } if !self.closing => {
                self.abort_all();
                self.resumes.clear();
            }
            _ => {}
        }
    }

    /// `notifications/initialized` was accepted (or refused): send what waited for it.
    pub(super) fn release_held(&mut self, now: Instant) {
        let Some(held) = self.held.take() else {
            return;
        };
        // Without a session the server has nothing to route to a GET stream.
        if self.get_stream == GetStream::Active && self.session_id.is_some() {
            self.open_get(None, Vec::new(), 0);
        }
        for msg in held {
            self.send_message(now, msg);
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

    fn insert_exchange(&mut self, id: ExchangeId, x: Exchange, bytes: Vec<u8>) {
        let long_lived = matches!(x.purpose, exchange::Purpose::Get { .. });
        self.exchanges.insert(id, x);
        self.transmits.push_back(Transmit {
            exchange: id,
            bytes,
            long_lived,
        });
    }

    /// Forgets an exchange: a request not yet handed out is simply dropped; one already
    /// sent is reported through [`HttpClient::poll_abort`].
    pub(super) fn abort_exchange(&mut self, id: ExchangeId) {
        self.exchanges.remove(&id);
        let queued = self.transmits.len();
        self.transmits.retain(|t| t.exchange != id);
        if self.transmits.len() == queued {
            self.aborts.push_back(id);
        }
    }

    pub(super) fn abort_all(&mut self) {
        let open: Vec<ExchangeId> = self.exchanges.keys().copied().collect();
        for id in open {
            self.abort_exchange(id);
        }
    }
}
