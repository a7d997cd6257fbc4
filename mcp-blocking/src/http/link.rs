//! The HTTP side of the driver: the [`HttpClient`] machine and its connections.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use mcp_host::clock;
use mcp_proto::Instant;

use mcp_proto::client::http::{ExchangeId, HttpClient};
use mcp_proto::client::{
    self as proto, ApiMisuse, CallId, CallRequest, ClientConfig, Event, InputAnswer, InputId,
};
use mcp_proto::http::EndpointUrl;

use mcp_host::wire_log::HttpLog;
use mcp_host::{Direction, WireLog};

use super::connector::TransportError;
use super::pool::{Input, Pool, PoolConfig, Waited};

/// The machine and the connections.
pub(crate) struct HttpLink {
    pub(crate) machine: HttpClient,
    pool: Pool,
    /// Wire-log state per exchange's response.
    log: HashMap<ExchangeId, HttpLog>,
    /// The newest transport failure, kept whole for a typed connect error.
    pub(crate) last_transport_error: Option<TransportError>,
}

impl fmt::Debug for HttpLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpLink")
            .field("url", &self.machine.http_config().url.as_str())
            .field("state", &self.machine.client().state())
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl HttpLink {
    pub(crate) fn new(
        config: ClientConfig,
        url: EndpointUrl,
        authorization: Option<String>,
        pool: PoolConfig,
    ) -> Self {
        let http = mcp_host::http::machine_config(
            url.clone(),
            authorization,
            concat!("mcp-blocking/", env!("CARGO_PKG_VERSION")),
        );
        let pool = PoolConfig {
            limits: http.limits.clone(),
            ..pool
        };
        HttpLink {
            machine: HttpClient::new(config, http, clock::now()),
            pool: Pool::new(url, pool),
            log: HashMap::new(),
            last_transport_error: None,
        }
    }

    pub(crate) fn url(&self) -> &EndpointUrl {
        &self.machine.http_config().url
    }

    pub(crate) fn machine(&self) -> &proto::Client {
        self.machine.client()
    }

    pub(crate) fn connections_opened(&self) -> u64 {
        self.pool.opened()
    }

    pub(crate) fn retries(&self) -> u64 {
        self.pool.retries()
    }

    pub(crate) fn call(&mut self, request: CallRequest) -> Result<CallId, ApiMisuse> {
        self.machine.call(clock::now(), request)
    }

    pub(crate) fn respond(&mut self, input: InputId, answer: InputAnswer) -> Result<(), ApiMisuse> {
        self.machine.respond(clock::now(), input, answer)
    }

    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        self.machine.poll_event()
    }

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.machine.poll_timeout()
    }

    /// Acts on everything the machine asked for: aborts, finished exchanges, requests.
    pub(crate) fn flush(&mut self, wire_log: &mut Option<WireLog>) {
        let now = clock::now();
        while let Some(x) = self.machine.poll_abort() {
            self.log.remove(&x);
            self.pool.abort(now, x);
        }
        while let Some(f) = self.machine.poll_finished() {
            self.log_flush(f.exchange, wire_log);
            self.pool.finished(now, f);
        }
        while let Some(t) = self.machine.poll_transmit() {
            if wire_log.is_some() {
                HttpLog::whole(wire_log, Direction::Sent, &t.bytes);
                self.log.insert(t.exchange, HttpLog::new());
            }
            self.pool.send(now, t);
        }
        // Exchanges the machine dropped without a word (closing, say) keep no log state.
        if self.log.len() > 64 {
            let pool = &self.pool;
            self.log.retain(|x, _| pool.carries(*x));
        }
    }

    /// Waits for one input until `timeout` and feeds it to the machine. False when
    /// nothing can ever arrive (no exchange in flight and no timer).
    pub(crate) fn wait(
        &mut self,
        timeout: Option<Duration>,
        wire_log: &mut Option<WireLog>,
    ) -> bool {
        let waited = if timeout == Some(Duration::ZERO) {
            Waited::Timeout
        } else {
            self.pool.wait(clock::now(), timeout)
        };
        let now = clock::now();
        match waited {
            Waited::Input(Input::Data(x, bytes, complete)) => {
                if wire_log.is_some() {
                    let log = self.log.entry(x).or_default();
                    log.feed(wire_log, Direction::Received, &bytes);
                }
                if complete {
                    self.log_flush(x, wire_log);
                }
                self.machine.handle_response_data(now, x, &bytes);
            }
            Waited::Input(Input::Eof(x)) => {
                self.log_flush(x, wire_log);
                self.machine.handle_response_eof(now, x);
            }
            Waited::Input(Input::Failed(x, error)) => {
                self.log_flush(x, wire_log);
                let detail = error.to_string();
                if let Some(log) = wire_log {
                    log(Direction::Received, format!("({detail})").as_bytes());
                }
                self.last_transport_error = Some(error);
                self.machine.handle_exchange_error(now, x, &detail);
            }
            Waited::Internal => {}
            Waited::Timeout => self.machine.handle_timeout(now),
            Waited::Idle => return false,
        }
        true
    }

    /// The typed failure behind a connect that ended with a network error.
    pub(crate) fn take_connect_failure(&mut self) -> Option<TransportError> {
        self.last_transport_error.take()
    }

    /// Closes the machine; a legacy session's `DELETE` is queued.
    pub(crate) fn close_machine(&mut self) {
        self.machine.close(clock::now());
    }

    /// Sends what the machine still has (a legacy session's `DELETE`), waits up to
    /// `grace` (at most 2 s) for the exchanges in flight, then closes every connection.
    pub(crate) fn release(&mut self, grace: Duration, wire_log: &mut Option<WireLog>) {
        self.flush(wire_log);
        let deadline = clock::now() + grace.min(Duration::from_secs(2));
        // Wait for responses rather than for the machine's verdicts: a machine that has
        // closed may no longer track the exchange it just asked to send.
        while self.pool.awaiting_responses() {
            let left = deadline.saturating_duration_since(clock::now());
            if left.is_zero() || !self.wait(Some(left), wire_log) {
                break;
            }
            self.flush(wire_log);
        }
        self.pool.close_all();
    }

    fn log_flush(&mut self, x: ExchangeId, wire_log: &mut Option<WireLog>) {
        if let Some(mut log) = self.log.remove(&x) {
            log.finish(wire_log, Direction::Received);
        }
    }
}
