//! The HTTP side of the driver: the [`HttpClient`] machine and its connections.

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

use mcp_proto::client::http::{ExchangeId, HttpClient, HttpConfig};
use mcp_proto::client::{
    self as proto, ApiMisuse, CallId, CallRequest, ClientConfig, Event, InputAnswer, InputId,
};
use mcp_proto::http::EndpointUrl;

use super::connector::TransportError;
use super::pool::{Input, Pool, PoolConfig, Waited};
use crate::driver::{Direction, WireLog};

/// Header names whose values never reach the wire log.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
];
/// Longest received line shown whole in the wire log.
const MAX_LOG_LINE: usize = 64 * 1024;

/// The machine and the connections.
pub(crate) struct HttpLink {
    pub(crate) machine: HttpClient,
    pool: Pool,
    /// Wire-log state per exchange: the partial line, and whether the head is done.
    log: HashMap<ExchangeId, LogState>,
    /// The newest transport failure, kept whole for a typed connect error.
    pub(crate) last_transport_error: Option<TransportError>,
}

#[derive(Default)]
struct LogState {
    line: Vec<u8>,
    in_body: bool,
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
        let mut http = HttpConfig::new(url.clone());
        http.authorization = authorization;
        http.user_agent = concat!("mcp-blocking/", env!("CARGO_PKG_VERSION")).to_owned();
        let pool = PoolConfig {
            limits: http.limits.clone(),
            ..pool
        };
        HttpLink {
            machine: HttpClient::new(config, http, Instant::now()),
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
        self.machine.call(Instant::now(), request)
    }

    pub(crate) fn respond(&mut self, input: InputId, answer: InputAnswer) -> Result<(), ApiMisuse> {
        self.machine.respond(Instant::now(), input, answer)
    }

    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        self.machine.poll_event()
    }

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.machine.poll_timeout()
    }

    /// Acts on everything the machine asked for: aborts, finished exchanges, requests.
    pub(crate) fn flush(&mut self, wire_log: &mut Option<WireLog>) {
        let now = Instant::now();
        while let Some(x) = self.machine.poll_abort() {
            self.log.remove(&x);
            self.pool.abort(now, x);
        }
        while let Some(f) = self.machine.poll_finished() {
            self.log_flush(f.exchange, wire_log);
            self.pool.finished(now, f);
        }
        while let Some(t) = self.machine.poll_transmit() {
            if let Some(log) = wire_log {
                log_request(&t.bytes, log);
                self.log.insert(t.exchange, LogState::default());
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
            self.pool.wait(Instant::now(), timeout)
        };
        let now = Instant::now();
        match waited {
            Waited::Input(Input::Data(x, bytes, complete)) => {
                if let Some(log) = wire_log {
                    self.log_response(x, &bytes, log);
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
        self.machine.close(Instant::now());
    }

    /// Sends what the machine still has (a legacy session's `DELETE`), waits up to
    /// `grace` (at most 2 s) for the exchanges in flight, then closes every connection.
    pub(crate) fn release(&mut self, grace: Duration, wire_log: &mut Option<WireLog>) {
        self.flush(wire_log);
        let deadline = Instant::now() + grace.min(Duration::from_secs(2));
        // Wait for responses rather than for the machine's verdicts: a machine that has
        // closed may no longer track the exchange it just asked to send.
        while self.pool.awaiting_responses() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !self.wait(Some(left), wire_log) {
                break;
            }
            self.flush(wire_log);
        }
        self.pool.close_all();
    }

    fn log_response(&mut self, x: ExchangeId, bytes: &[u8], log: &mut WireLog) {
        let state = self.log.entry(x).or_default();
        let mut rest = bytes;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            state.line.extend_from_slice(&rest[..i]);
            let line = state.line.strip_suffix(b"\r").unwrap_or(&state.line);
            if line.is_empty() {
                state.in_body = true;
            } else if state.in_body {
                log(Direction::Received, line);
            } else {
                log(Direction::Received, &redact(line));
            }
            state.line.clear();
            rest = &rest[i + 1..];
        }
        state.line.extend_from_slice(rest);
        if state.line.len() > MAX_LOG_LINE {
            log(Direction::Received, &state.line);
            state.line.clear();
        }
    }

    fn log_flush(&mut self, x: ExchangeId, wire_log: &mut Option<WireLog>) {
        if let Some(state) = self.log.remove(&x)
            && let Some(log) = wire_log
            && !state.line.is_empty()
        {
            log(Direction::Received, &state.line);
        }
    }
}

/// Logs a request: head lines (secrets redacted), then the body's lines.
fn log_request(bytes: &[u8], log: &mut WireLog) {
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(bytes.len(), |i| i + 4);
    let (head, body) = bytes.split_at(split);
    for line in head.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !line.is_empty() {
            log(Direction::Sent, &redact(line));
        }
    }
    for line in body.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        log(Direction::Sent, line);
    }
}

/// A header line with its value hidden when the header is a secret.
fn redact(line: &[u8]) -> Vec<u8> {
    if let Some(colon) = line.iter().position(|b| *b == b':') {
        let name = String::from_utf8_lossy(&line[..colon])
            .trim()
            .to_ascii_lowercase();
        if SECRET_HEADERS.contains(&name.as_str()) {
            let mut out = line[..=colon].to_vec();
            out.extend_from_slice(b" [redacted]");
            return out;
        }
    }
    line.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_stay_out_of_the_log() {
        assert_eq!(
            redact(b"Authorization: Bearer abc"),
            b"Authorization: [redacted]"
        );
        assert_eq!(redact(b"set-cookie: a=b"), b"set-cookie: [redacted]");
        assert_eq!(redact(b"Content-Type: x"), b"Content-Type: x");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&seen);
        let mut log: WireLog = Box::new(move |_, l| sink.lock().unwrap().push(l.to_vec()));
        log_request(
            b"POST /mcp HTTP/1.1\r\nAuthorization: Bearer secret\r\n\r\n{\"a\":1}",
            &mut log,
        );
        let seen = seen.lock().unwrap();
        assert_eq!(
            *seen,
            [
                b"POST /mcp HTTP/1.1".to_vec(),
                b"Authorization: [redacted]".to_vec(),
                b"{\"a\":1}".to_vec(),
            ]
        );
    }
}
