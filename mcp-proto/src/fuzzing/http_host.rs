//! Several connections of one HTTP server, admitted by an [`HttpHost`] and driven the way
//! the adapters drive them, on a fake clock, by arbitrary client events.
//!
//! The `http_endpoint` target reads requests itself and hands them to the endpoint; this
//! one goes through what the adapters run: [`HttpHost::accept`] (served, refused, or a
//! place taken from an idle connection), each [`HttpConnection`] fed bytes only when it
//! wants input (the rest waits "in the socket"), told of end of input when it reads or
//! watches an open stream, polled for output after every event, its deadlines handled
//! when due.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Wake, Waker};
use std::time::Duration;

use std::collections::VecDeque;

use crate::Instant;
use crate::http::{HttpLimits, ResponseEvent, ResponseReader};
use crate::server::http::{
    HttpConnection, HttpConnectionConfig, HttpEndpoint, HttpEndpointConfig, HttpHost,
    HttpRequestReader, HttpTransmit,
};

use super::http_endpoint::{build_requests, request_limits};
use super::server::fuzz_server;

/// Connections served at once (small, so that refusals and evictions are reached).
const MAX_CONNECTIONS: usize = 2;

/// Connections the harness holds at most (served, refused, evicted, lingering).
const MAX_HELD: usize = 8;

/// Bytes a client may have "in the socket" for a connection that reads nothing.
const MAX_UNREAD: usize = 64 * 1024;

/// Turns of the drive loop after which the connections must have settled.
const MAX_TURNS: usize = 256;

/// An eviction waker: remembers that it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// One client connection.
struct Conn {
    machine: HttpConnection,
    /// The eviction waker's flag.
    woken: Arc<Flag>,
    /// Bytes the client sent that the machine has not read.
    unread: Vec<u8>,
    /// The client ended its input (after `unread`).
    eof: bool,
    /// The machine was told of that end.
    eof_told: bool,
    /// The client closed its socket altogether: what is written to it fails.
    gone: bool,
    /// The requests as the client's bytes read (the same reader as the machine's): the
    /// methods of those not answered yet, for reading their responses.
    requests: HttpRequestReader,
    methods: VecDeque<String>,
    /// What the machine wrote, read back as responses (from its first write).
    responses: Option<ResponseReader>,
    /// A response ended that does not keep the connection: nothing may follow.
    last_written: bool,
    /// The last response read back ended, and the next has not begun.
    between: bool,
}

impl Conn {
    /// The client sent `bytes` and the machine reads them.
    fn deliver(&mut self, now: Instant, bytes: &[u8]) {
        self.machine.handle_input(now, bytes);
        self.requests.handle_input(bytes);
        while let Some(request) = self.requests.poll_request() {
            if let Ok(request) = request {
                self.methods.push_back(request.method().to_owned());
            }
        }
    }

    /// The method of the request the next response answers (one that answers no request
    /// read in full, a 408 or a 503, reads as a POST's).
    fn next_method(&mut self) -> String {
        self.methods
            .pop_front()
            .unwrap_or_else(|| "POST".to_owned())
    }

    /// The machine wrote `bytes`: they continue a well-formed sequence of responses.
    /// Returns the `Mcp-Session-Id` of a response head among them.
    fn written(&mut self, bytes: &[u8]) -> Option<Vec<u8>> {
        let mut session = None;
        assert!(
            !self.last_written,
            "bytes written after a response that closes the connection: {:?}",
            String::from_utf8_lossy(bytes)
        );
        // The method of a response is known once its first byte is written (its request
        // was read by then, if it answers one).
        let mut reader = match self.responses.take() {
            None => ResponseReader::new(HttpLimits::default(), &self.next_method()),
            Some(mut reader) if std::mem::take(&mut self.between) => {
                let method = self.next_method();
                reader.reset_for_next(&method).expect("a kept connection");
                reader
            }
            Some(reader) => reader,
        };
        reader.handle_input(bytes);
        while let Some(event) = reader.poll_event() {
            match event {
                ResponseEvent::End { keep_alive: true } if reader.leftover().is_empty() => {
                    self.between = true;
                }
                ResponseEvent::End { keep_alive: true } => {
                    let method = self.next_method();
                    reader.reset_for_next(&method).expect("a kept connection");
                }
                ResponseEvent::End { keep_alive: false } => {
                    assert!(
                        reader.leftover().is_empty(),
                        "bytes after a response that closes the connection"
                    );
                    self.last_written = true;
                }
                ResponseEvent::Error(e) => panic!(
                    "the machine wrote a malformed response ({e}): {:?}",
                    String::from_utf8_lossy(bytes)
                ),
                ResponseEvent::Head(head) => {
                    if let Some(id) = head.header("mcp-session-id") {
                        session = Some(id.as_bytes().to_vec());
                    }
                }
                _ => {}
            }
        }
        self.responses = Some(reader);
        session
    }
}

/// The server's connections, the endpoint they share, the clock.
struct Harness {
    host: HttpHost,
    endpoint: HttpEndpoint,
    conns: Vec<Conn>,
    now: Instant,
    stopping: bool,
    /// The last `Mcp-Session-Id` written: it replaces `$session` in built requests.
    session: Option<Vec<u8>>,
}

/// The operations, one byte each (low three bits; the other five are the operand):
/// accept a connection; send a connection built requests (see [`build_requests`]), raw
/// bytes, or the start of built requests (a length-prefixed segment of the input follows
/// each); end a connection's input; fail its transport; let time pass (2^operand ms);
/// stop the server. The first byte picks the server (low two bits, as `http_endpoint`
/// does), a small bound on the bytes all connections hold (bit 2), and how the run
/// ends (bit 3: every client closes its socket, else the server stops).
///
/// Invariants: nothing panics; after every event the connections settle in a bounded
/// number of turns, and none is left with a deadline already past (its adapter would
/// spin); no more than twice `MAX_CONNECTIONS` are served (those being evicted
/// included); what each connection writes reads back as well-formed responses, nothing
/// after one that closes the connection; a connection whose eviction waker was woken is, after that turn, closing
/// or gone unless it is answering a request it had read in full; when the clients leave
/// or the server stops, every connection closes within a few hours of fake time; and
/// once every machine is dropped the host holds no place and no byte.
pub fn http_host(data: &[u8]) {
    let Some((&control, mut input)) = data.split_first() else {
        return;
    };
    let variant = control & 3;
    let endpoint_config = HttpEndpointConfig {
        max_open_streams: 3,
        allowed_origins: vec!["https://app.example".to_owned()],
        sse_polling: variant == 1,
        ..HttpEndpointConfig::default()
    };
    let endpoint = if variant == 3 {
        HttpEndpoint::with_config(fuzz_server(variant), endpoint_config)
    } else {
        HttpEndpoint::with_sessions(fuzz_server(variant), endpoint_config, &[9; 32])
    };
    let config = HttpConnectionConfig {
        limits: request_limits(),
        ..HttpConnectionConfig::default()
    };
    let mut host = HttpHost::new(MAX_CONNECTIONS, config);
    if control & 4 != 0 {
        host = host.with_max_buffered_bytes(4096);
    }
    let mut h = Harness {
        host,
        endpoint,
        conns: Vec::new(),
        now: Instant::ZERO,
        stopping: false,
        session: None,
    };
    while let Some((&op, rest)) = input.split_first() {
        input = rest;
        let operand = op >> 3;
        match op & 7 {
            0 => h.accept(),
            kind @ (1..=3) => {
                let (&len, rest) = input.split_first().unwrap_or((&0, &[]));
                let (segment, rest) = rest.split_at(usize::from(len).min(rest.len()));
                input = rest;
                let bytes = match kind {
                    1 => h.built(segment),
                    2 => segment.to_vec(),
                    _ => {
                        let mut bytes = h.built(segment);
                        bytes.truncate(usize::from(operand) * 8);
                        bytes
                    }
                };
                h.send(operand, &bytes);
            }
            4 => {
                if let Some(c) = h.pick(operand) {
                    c.eof = true;
                }
            }
            5 => {
                let now = h.now;
                if let Some(c) = h.pick(operand) {
                    c.machine.handle_transport_error(now);
                }
            }
            6 => h.now += Duration::from_millis(1 << operand.min(22)),
            _ => h.stopping = true,
        }
        h.drive();
    }
    if control & 8 != 0 {
        for c in &mut h.conns {
            c.eof = true;
            c.gone = true;
        }
    } else {
        h.stopping = true;
    }
    for _ in 0..4 {
        h.drive();
        h.now += Duration::from_secs(3600);
    }
    h.drive();
    assert!(
        h.conns.is_empty(),
        "connections left open: {:?}",
        h.conns
            .iter()
            .map(|c| (
                c.machine.close_reason().cloned(),
                c.machine.stream(),
                c.eof_told,
                c.unread.len()
            ))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        h.host.connections(),
        0,
        "places held with every machine gone"
    );
    assert_eq!(h.host.closing(), 0, "closing places held");
    assert_eq!(
        h.host.buffered_bytes(),
        0,
        "bytes counted with every machine gone"
    );
}

impl Harness {
    fn accept(&mut self) {
        if self.conns.len() >= MAX_HELD {
            return;
        }
        let Some(mut machine) = self.host.accept(self.now) else {
            return;
        };
        let woken = Arc::new(Flag::default());
        machine.set_eviction_waker(Waker::from(Arc::clone(&woken)));
        self.conns.push(Conn {
            machine,
            woken,
            unread: Vec::new(),
            eof: false,
            eof_told: false,
            gone: false,
            requests: HttpRequestReader::new(request_limits()),
            methods: VecDeque::new(),
            responses: None,
            last_written: false,
            between: false,
        });
    }

    fn pick(&mut self, operand: u8) -> Option<&mut Conn> {
        let n = self.conns.len();
        (n > 0).then(|| &mut self.conns[usize::from(operand) % n])
    }

    /// Requests built from `segment`, with the last session id in place of `$session`.
    fn built(&self, segment: &[u8]) -> Vec<u8> {
        let (bytes, _) = build_requests(segment);
        let session = self.session.as_deref().unwrap_or(b"none");
        let mut out = Vec::with_capacity(bytes.len());
        let mut rest = &bytes[..];
        while let Some(i) = memchr::memmem::find(rest, b"$session") {
            out.extend_from_slice(&rest[..i]);
            out.extend_from_slice(session);
            rest = &rest[i + b"$session".len()..];
        }
        out.extend_from_slice(rest);
        out
    }

    fn send(&mut self, operand: u8, bytes: &[u8]) {
        if let Some(c) = self.pick(operand)
            && !c.eof
        {
            let room = MAX_UNREAD.saturating_sub(c.unread.len());
            c.unread.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }

    /// Every connection's turns, as its adapter takes them, until none has anything left
    /// to do; then the checks that hold between events.
    fn drive(&mut self) {
        let now = self.now;
        let mut buf = Vec::new();
        let mut turns = 0;
        loop {
            turns += 1;
            assert!(turns <= MAX_TURNS, "the connections never settle");
            let mut progressed = self.endpoint.handle_due(now);
            let mut i = 0;
            while i < self.conns.len() {
                let c = &mut self.conns[i];
                if self.stopping {
                    c.machine.close(now);
                }
                progressed |= c.machine.handle_due(now);
                if c.machine.wants_input() && !c.unread.is_empty() {
                    let unread = std::mem::take(&mut c.unread);
                    c.deliver(now, &unread);
                    progressed = true;
                } else if c.eof
                    && !c.eof_told
                    && c.unread.is_empty()
                    && (c.machine.wants_input() || c.machine.stream().is_some())
                {
                    c.machine.handle_eof(now);
                    c.eof_told = true;
                    progressed = true;
                }
                let mut closed = false;
                loop {
                    buf.clear();
                    match c.machine.poll_transmit(now, &mut self.endpoint, &mut buf) {
                        Some(HttpTransmit::Write { len }) => {
                            assert_eq!(len, buf.len(), "a write names the bytes it appended");
                            if let Some(id) = c.written(&buf) {
                                self.session = Some(id);
                            }
                            if c.gone {
                                // A peek sees the requests still unread, not the end:
                                // the client's absence shows when a write fails.
                                c.machine.handle_transport_error(now);
                            }
                            progressed = true;
                        }
                        Some(HttpTransmit::Close { .. }) => {
                            closed = true;
                            progressed = true;
                            break;
                        }
                        Some(_) => progressed = true,
                        None => break,
                    }
                }
                if closed {
                    self.conns.swap_remove(i);
                } else {
                    i += 1;
                }
            }
            while self.endpoint.poll_ready().is_some() {}
            if !progressed {
                break;
            }
        }
        for c in &self.conns {
            let due = c.machine.poll_timeout();
            assert!(
                due.is_none_or(|t| t > now),
                "a deadline already past after a turn ({due:?} at {now:?}): the adapter would spin"
            );
            if c.woken.0.load(Ordering::SeqCst) {
                assert!(
                    c.machine.close_reason().is_some()
                        || c.machine.stream().is_some()
                        || due.is_none(),
                    "an evicted connection goes on waiting for requests"
                );
            }
        }
        assert!(
            self.host.connections() <= 2 * MAX_CONNECTIONS,
            "{} connections served",
            self.host.connections()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two idle connections hold both places; a third takes the place of the older once
    /// it has waited long enough; a stream is open when the server stops; a client
    /// dripping a head; and one with a transport failure.
    #[test]
    fn smoke() {
        let call = br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"hang"}}"#;
        let mut request = vec![0u8, 0x80 | 0x04];
        request.extend_from_slice(call);
        let mut input = vec![0u8];
        for control in [0u8, 8, 4 | 8, 3] {
            input[0] = control;
            input.truncate(1);
            input.extend_from_slice(&[0, 0, 6 | (11 << 3), 0]);
            input.push(1);
            input.push(u8::try_from(request.len()).unwrap());
            input.extend_from_slice(&request);
            input.extend_from_slice(&[3 | (2 << 3), u8::try_from(request.len()).unwrap()]);
            input.extend_from_slice(&request);
            input.extend_from_slice(&[6 | (10 << 3), 0, 5 | (1 << 3), 2 | (3 << 3), 3]);
            input.extend_from_slice(b"GET");
            input.push(6 | (20 << 3));
            http_host(&input);
        }
    }
}
