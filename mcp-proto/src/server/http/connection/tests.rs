//! The connection machine on a fake clock: each decision, one test.

use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::server::example;
use crate::server::http::HttpHost;

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

fn endpoint() -> HttpEndpoint {
    HttpEndpoint::new(example::server())
}

fn conn(now: Instant) -> HttpConnection {
    HttpConnection::new(now, HttpConnectionConfig::default())
}

/// A POST of `body` to `/mcp` with `extra` header lines (each ending in CRLF).
fn post(body: &str, extra: &str) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n{extra}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn ping_body(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string()
}

/// A legacy `ping`, answered before any `initialize`.
fn ping(id: i64) -> Vec<u8> {
    post(&ping_body(id), "")
}

/// A modern `tools/call` of `hang`, which never answers: an open stream.
fn hang(id: i64) -> Vec<u8> {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let params = json!({"name": "hang", "_meta": meta});
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    post(
        &body.to_string(),
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: hang\r\n",
    )
}

fn legacy(body: &Value) -> Vec<u8> {
    post(&body.to_string(), "MCP-Protocol-Version: 2025-06-18\r\n")
}

/// What one drain of `poll_transmit` handed out.
#[derive(Debug, Default)]
struct Drained {
    bytes: Vec<u8>,
    shutdown: bool,
    closed: Option<HttpCloseReason>,
}

impl Drained {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// How many responses (final or interim) start in it.
    fn responses(&self) -> usize {
        self.text().matches("HTTP/1.1 ").count()
    }
}

fn drain(c: &mut HttpConnection, ep: &mut HttpEndpoint, now: Instant) -> Drained {
    let mut d = Drained::default();
    let mut buf = Vec::new();
    while let Some(t) = c.poll_transmit(now, ep, &mut buf) {
        match t {
            HttpTransmit::Write { len } => {
                assert_eq!(len, buf.len());
                d.bytes.append(&mut buf);
            }
            HttpTransmit::Shutdown => {
                assert!(!d.shutdown, "one Shutdown");
                d.shutdown = true;
            }
            HttpTransmit::Close { reason } => {
                d.closed = Some(reason);
                assert!(c.is_closed());
                assert_eq!(c.poll_transmit(now, ep, &mut buf), None);
                break;
            }
        }
    }
    d
}

/// The `data:` payloads of SSE text.
fn sse(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn head_deadline_is_not_moved_by_dripping() {
    let mut ep = endpoint();
    let mut c = conn(at(0));
    let limit = Duration::from_secs(10);
    // The first request's head: due 10 s after the connection opened, whatever arrives.
    assert_eq!(c.poll_timeout(), Some(at(10_000)));
    for (i, b) in ping(1)[..12].iter().enumerate() {
        let now = at(800 * (i as u64 + 1));
        c.handle_input(now, &[*b]);
        assert!(drain(&mut c, &mut ep, now).bytes.is_empty());
        assert_eq!(c.poll_timeout(), Some(at(10_000)));
        assert!(c.wants_input());
    }
    c.handle_timeout(at(9_999));
    assert_eq!(c.close_reason(), None);
    c.handle_timeout(at(10_000));
    let d = drain(&mut c, &mut ep, at(10_000));
    assert!(
        d.text().starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{d:?}"
    );
    assert!(d.text().contains("Connection: close\r\n"));
    assert!(d.shutdown);
    assert_eq!(
        c.close_reason(),
        Some(&HttpCloseReason::HeadTimeout { limit })
    );
    // Lingering: input is read and dropped until the linger is over.
    assert!(c.wants_input());
    assert_eq!(c.poll_timeout(), Some(at(10_500)));
    c.handle_input(at(10_100), b"more");
    c.handle_timeout(at(10_500));
    let d = drain(&mut c, &mut ep, at(10_500));
    assert_eq!(d.closed, Some(HttpCloseReason::HeadTimeout { limit }));

    // On a kept-alive connection the head's deadline runs from its first byte.
    let mut c = conn(at(0));
    c.handle_input(at(100), &ping(1));
    assert_eq!(drain(&mut c, &mut ep, at(100)).responses(), 1);
    c.handle_input(at(5_000), b"PO");
    assert_eq!(c.poll_timeout(), Some(at(15_000)));
    c.handle_input(at(14_000), b"ST /mcp");
    assert_eq!(c.poll_timeout(), Some(at(15_000)));
    // So does a drip of empty lines between requests.
    let mut c = conn(at(0));
    c.handle_input(at(100), &ping(1));
    drain(&mut c, &mut ep, at(100));
    c.handle_input(at(1_000), b"\r\n");
    c.handle_input(at(9_000), b"\r\n");
    assert_eq!(c.poll_timeout(), Some(at(11_000)));
}

#[test]
fn a_silent_connection_closes_without_a_word() {
    let mut ep = endpoint();
    // Nothing at all: closed at the head deadline, nothing written, no linger.
    let mut c = conn(at(0));
    c.handle_timeout(at(10_000));
    let d = drain(&mut c, &mut ep, at(10_000));
    assert!(d.bytes.is_empty() && !d.shutdown);
    let limit = Duration::from_secs(10);
    assert_eq!(d.closed, Some(HttpCloseReason::HeadTimeout { limit }));

    // Idle after an exchange: idle_timeout later, whatever came before.
    let mut c = conn(at(0));
    c.handle_input(at(9_000), &ping(1));
    drain(&mut c, &mut ep, at(9_000));
    assert_eq!(c.poll_timeout(), Some(at(39_000)));
    c.handle_timeout(at(38_999));
    assert!(drain(&mut c, &mut ep, at(38_999)).closed.is_none());
    c.handle_timeout(at(39_000));
    let d = drain(&mut c, &mut ep, at(39_000));
    assert!(d.bytes.is_empty() && !d.shutdown);
    let limit = Duration::from_secs(30);
    assert_eq!(d.closed, Some(HttpCloseReason::IdleTimeout { limit }));
}

#[test]
fn a_slow_body_is_cut() {
    let mut ep = endpoint();
    let body = ping_body(1);
    let request = post(&body, "");
    let head = &request[..request.len() - body.len()];
    let slow = HttpCloseReason::SlowBody {
        min_bytes_per_sec: 240,
        grace: Duration::from_secs(5),
    };

    // A byte every 800 ms: 1/240 s earned per byte, 800 ms spent. Out after the grace.
    let mut c = conn(at(0));
    c.handle_input(at(0), head);
    assert_eq!(c.poll_timeout(), Some(at(5_000)));
    for (i, b) in body.as_bytes()[..6].iter().enumerate() {
        c.handle_input(at(800 * (i as u64 + 1)), &[*b]);
    }
    let due = c.poll_timeout().unwrap();
    assert!(due > at(5_000) && due < at(5_030), "{due:?}");
    c.handle_timeout(due);
    let d = drain(&mut c, &mut ep, due);
    assert!(d.text().starts_with("HTTP/1.1 408 "), "{d:?}");
    assert!(d.shutdown);
    assert_eq!(c.close_reason(), Some(&slow));

    // A body at the rate is read.
    let mut c = conn(at(0));
    c.handle_input(at(0), head);
    let (a, b) = body.as_bytes().split_at(20);
    c.handle_input(at(4_000), a);
    c.handle_input(at(5_050), b);
    let d = drain(&mut c, &mut ep, at(5_050));
    assert!(d.text().starts_with("HTTP/1.1 200 OK\r\n"), "{d:?}");

    // A burst earns no more than the grace: a stall after it is cut all the same.
    let padded = format!("{body}{}", " ".repeat(4_000));
    let request = post(&padded, "");
    let (head, rest) = request.split_at(request.len() - padded.len());
    let mut c = conn(at(0));
    c.handle_input(at(0), head);
    c.handle_input(at(1_000), &rest[..3_000]);
    assert_eq!(c.poll_timeout(), Some(at(6_000)));
    c.handle_timeout(at(6_000));
    assert_eq!(drain(&mut c, &mut ep, at(6_000)).closed, None);
    assert_eq!(c.close_reason(), Some(&slow));

    // Rate 0: no rate, but no stall longer than the grace either.
    let config = HttpConnectionConfig {
        min_body_bytes_per_sec: 0,
        ..HttpConnectionConfig::default()
    };
    let mut c = HttpConnection::new(at(0), config);
    c.handle_input(at(0), head);
    c.handle_input(at(4_000), &a[..1]);
    assert_eq!(c.poll_timeout(), Some(at(9_000)));
}

#[test]
fn keep_alive_or_close() {
    let mut ep = endpoint();
    let mut c = conn(at(0));
    for id in 1..3 {
        c.handle_input(at(10), &ping(id));
        let d = drain(&mut c, &mut ep, at(10));
        assert!(d.text().starts_with("HTTP/1.1 200 OK\r\n"), "{d:?}");
        assert!(!d.shutdown && d.closed.is_none());
        assert!(c.wants_input());
    }
    // Pipelined, the second asking to close: two answers in order, then the graceful
    // close; the third request is never read.
    let mut batch = ping(3);
    batch.extend(post(&ping_body(4), "Connection: close\r\n"));
    batch.extend(ping(5));
    c.handle_input(at(20), &batch);
    let d = drain(&mut c, &mut ep, at(20));
    assert_eq!(d.responses(), 2);
    let answers = d.text();
    assert!(answers.find("\"id\":3").unwrap() < answers.find("\"id\":4").unwrap());
    assert!(!answers.contains("\"id\":5"));
    assert!(d.shutdown);
    assert_eq!(c.close_reason(), Some(&HttpCloseReason::RequestedClose));
    c.handle_eof(at(30));
    let d = drain(&mut c, &mut ep, at(30));
    assert_eq!(d.closed, Some(HttpCloseReason::RequestedClose));

    // HTTP/1.0 without keep-alive closes too.
    let mut c = conn(at(0));
    let body = ping_body(1);
    let request = format!(
        "POST /mcp HTTP/1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    c.handle_input(at(0), request.as_bytes());
    let d = drain(&mut c, &mut ep, at(0));
    assert!(d.text().contains("Connection: close\r\n") && d.shutdown);

    // A request that cannot be read: its error, then the close.
    let mut c = conn(at(0));
    c.handle_input(at(0), b"NOT HTTP\r\n\r\n");
    let d = drain(&mut c, &mut ep, at(0));
    assert!(
        d.text().starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{d:?}"
    );
    assert!(d.shutdown);
    assert!(matches!(
        c.close_reason(),
        Some(HttpCloseReason::BadRequest(
            HttpRequestError::InvalidHead { .. }
        ))
    ));
}

#[test]
fn a_half_closed_client_gets_its_answers() {
    let mut ep = endpoint();
    let mut c = conn(at(0));
    let mut batch = ping(1);
    batch.extend(ping(2));
    c.handle_input(at(0), &batch);
    c.handle_eof(at(0));
    let d = drain(&mut c, &mut ep, at(0));
    assert_eq!(d.responses(), 2);
    // End of input seen: nothing to linger for.
    assert!(!d.shutdown);
    assert_eq!(d.closed, Some(HttpCloseReason::ClientClosed));

    // Cut in the middle of a request: 400, then the close.
    let mut c = conn(at(0));
    c.handle_input(at(0), &ping(1)[..20]);
    c.handle_eof(at(0));
    let d = drain(&mut c, &mut ep, at(0));
    assert!(d.text().starts_with("HTTP/1.1 400 "), "{d:?}");
    assert_eq!(
        d.closed,
        Some(HttpCloseReason::BadRequest(HttpRequestError::Truncated))
    );
}

#[test]
fn continue_is_sent_when_the_body_is_awaited_and_the_request_is_next() {
    let mut ep = endpoint();
    let body = ping_body(2);
    let expecting = post(&body, "Expect: 100-continue\r\n");
    let head = &expecting[..expecting.len() - body.len()];

    let mut c = conn(at(0));
    c.handle_input(at(0), head);
    let d = drain(&mut c, &mut ep, at(0));
    assert_eq!(d.text(), "HTTP/1.1 100 Continue\r\n\r\n");
    c.handle_input(at(10), body.as_bytes());
    let d = drain(&mut c, &mut ep, at(10));
    assert!(d.text().starts_with("HTTP/1.1 200 OK\r\n"), "{d:?}");

    // The body came with the head: no 100.
    c.handle_input(at(20), &expecting);
    let d = drain(&mut c, &mut ep, at(20));
    assert_eq!(d.responses(), 1);
    assert!(d.text().starts_with("HTTP/1.1 200 OK\r\n"));

    // Behind a pipelined request: after that request's answer, never before.
    let mut batch = ping(1);
    batch.extend_from_slice(head);
    c.handle_input(at(30), &batch);
    let d = drain(&mut c, &mut ep, at(30));
    assert_eq!(d.responses(), 2);
    assert!(d.text().starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(d.text().ends_with("HTTP/1.1 100 Continue\r\n\r\n"));
    c.handle_input(at(40), body.as_bytes());
    assert_eq!(drain(&mut c, &mut ep, at(40)).responses(), 1);

    // Behind an open stream: not while it is open.
    let mut c = conn(at(0));
    let mut batch = hang(1);
    batch.extend_from_slice(head);
    c.handle_input(at(0), &batch);
    let d = drain(&mut c, &mut ep, at(0));
    assert!(d.text().contains("text/event-stream"));
    assert!(!d.text().contains("100 Continue"));
}

#[test]
fn an_open_stream_wants_no_input_and_holds_pipelined_requests() {
    let mut ep = endpoint();
    let mut c = conn(at(0));
    let initialize = legacy(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}}));
    c.handle_input(at(0), &initialize);
    assert_eq!(drain(&mut c, &mut ep, at(0)).responses(), 1);

    // confirm asks through elicitation/create on an open stream; a ping is pipelined.
    let mut batch = legacy(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "confirm"}}),
    );
    batch.extend(ping(8));
    c.handle_input(at(10), &batch);
    let d = drain(&mut c, &mut ep, at(10));
    assert_eq!(d.responses(), 1, "the ping waits: {d:?}");
    let ask = sse(&d.text()).remove(0);
    assert_eq!(ask["method"], "elicitation/create");
    assert!(c.stream().is_some());
    assert!(!c.wants_input());
    assert_eq!(c.poll_timeout(), Some(at(15_010)));
    // Nothing to say yet.
    assert!(drain(&mut c, &mut ep, at(20)).bytes.is_empty());

    // The answer comes on another connection; the endpoint names the stream.
    let mut other = conn(at(30));
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}});
    other.handle_input(at(30), &legacy(&answer));
    assert!(
        drain(&mut other, &mut ep, at(30))
            .text()
            .starts_with("HTTP/1.1 202 ")
    );
    assert_eq!(ep.poll_ready(), c.stream());

    // The result ends the stream; then the pipelined ping is answered.
    let d = drain(&mut c, &mut ep, at(40));
    let text = d.text();
    let end = text.find("0\r\n\r\n").unwrap();
    assert!(text[..end].contains("declined"), "{text}");
    assert!(text[end..].contains("HTTP/1.1 200 OK\r\n") && text.contains("\"id\":8"));
    assert!(c.stream().is_none() && c.wants_input());
    assert_eq!(c.poll_timeout(), Some(at(30_040)));
}

#[test]
fn keep_alive_comments_on_a_silent_stream() {
    let mut ep = endpoint();
    let mut c = conn(at(0));
    c.handle_input(at(0), &hang(1));
    drain(&mut c, &mut ep, at(0));
    assert_eq!(c.poll_timeout(), Some(at(15_000)));
    c.handle_timeout(at(14_999));
    assert!(drain(&mut c, &mut ep, at(14_999)).bytes.is_empty());
    c.handle_timeout(at(15_000));
    let d = drain(&mut c, &mut ep, at(15_000));
    assert_eq!(d.text(), "e\r\n: keep-alive\n\n\r\n");
    assert_eq!(c.poll_timeout(), Some(at(30_000)));

    // Zero turns them off.
    let config = HttpConnectionConfig {
        sse_keepalive: Duration::ZERO,
        ..HttpConnectionConfig::default()
    };
    let mut c = HttpConnection::new(at(0), config);
    c.handle_input(at(0), &hang(2));
    drain(&mut c, &mut ep, at(0));
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn leaving_an_open_stream_cancels_it() {
    type Leave = fn(&mut HttpConnection);
    let cases: [(Leave, HttpCloseReason); 3] = [
        (|c| c.handle_eof(at(5)), HttpCloseReason::StreamAbandoned),
        (
            |c| c.handle_transport_error(at(5)),
            HttpCloseReason::TransportError,
        ),
        (|c| c.close(at(5)), HttpCloseReason::Stopped),
    ];
    for (leave, reason) in cases {
        let mut ep = endpoint();
        let mut c = conn(at(0));
        c.handle_input(at(0), &hang(1));
        drain(&mut c, &mut ep, at(0));
        assert_eq!(ep.open_streams(), 1);
        leave(&mut c);
        assert!(!c.wants_input());
        let d = drain(&mut c, &mut ep, at(5));
        assert!(d.bytes.is_empty() && !d.shutdown, "{d:?}");
        assert_eq!(d.closed, Some(reason));
        assert_eq!(ep.open_streams(), 0);
    }

    // Stopping an idle connection closes it at once; a lingering one stops lingering.
    let mut ep = endpoint();
    let mut c = conn(at(0));
    c.close(at(1));
    assert_eq!(
        drain(&mut c, &mut ep, at(1)).closed,
        Some(HttpCloseReason::Stopped)
    );
    let mut c = conn(at(0));
    c.handle_input(at(0), &post(&ping_body(1), "Connection: close\r\n"));
    assert!(drain(&mut c, &mut ep, at(0)).shutdown);
    c.close(at(1));
    assert_eq!(
        drain(&mut c, &mut ep, at(1)).closed,
        Some(HttpCloseReason::RequestedClose)
    );
}

#[test]
fn the_host_refuses_over_the_bound() {
    let mut ep = endpoint();
    let host = HttpHost::new(2, HttpConnectionConfig::default());
    let a = host.accept(at(0)).unwrap();
    let mut b = host.accept(at(0)).unwrap();
    let mut c = host.accept(at(0)).unwrap();
    assert!(!a.is_refusal() && !b.is_refusal() && c.is_refusal());
    assert_eq!((host.connections(), host.closing()), (2, 1));
    let d = drain(&mut c, &mut ep, at(0));
    let text = d.text();
    assert!(
        text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{text}"
    );
    assert!(text.contains("Retry-After: 1\r\n") && text.contains("Connection: close\r\n"));
    assert!(d.shutdown);
    assert_eq!(c.close_reason(), Some(&HttpCloseReason::Refused));
    drop(c);
    assert_eq!(host.closing(), 0);

    // A connection that starts closing frees its place at once; dropping frees the rest.
    b.handle_input(at(1), &post(&ping_body(1), "Connection: close\r\n"));
    assert!(drain(&mut b, &mut ep, at(1)).shutdown);
    assert_eq!((host.connections(), host.closing()), (1, 1));
    let d = host.accept(at(2)).unwrap();
    assert!(!d.is_refusal());
    drop((a, b, d));
    assert_eq!((host.connections(), host.closing()), (0, 0));

    // Refusals are bounded too (max_connections, at least 16): past that, None.
    let host = HttpHost::new(1, HttpConnectionConfig::default());
    let served = host.accept(at(0)).unwrap();
    let refused: Vec<_> = (0..16).map(|_| host.accept(at(0)).unwrap()).collect();
    assert!(refused.iter().all(HttpConnection::is_refusal));
    assert!(host.accept(at(0)).is_none());
    drop(refused);
    assert!(host.accept(at(0)).unwrap().is_refusal());
    drop(served);
    assert!(!host.accept(at(0)).unwrap().is_refusal());
}

/// With every place taken, a newcomer takes the place of the connection that has waited
/// longest (at least `EVICTABLE_AFTER`) for a request: one dripping a request gets 503,
/// an idle one closes without a word, one whose request came in full is answered with
/// `Connection: close`. Connections answering or streaming are never evicted.
#[test]
fn the_host_makes_room_by_evicting_the_connection_waiting_longest() {
    let mut ep = endpoint();
    let host = HttpHost::new(2, HttpConnectionConfig::default());
    let mut dripping = host.accept(at(0)).unwrap();
    dripping.handle_input(at(100), b"POST /mcp HTTP/1.1\r\nHo");
    assert!(drain(&mut dripping, &mut ep, at(100)).bytes.is_empty());
    let mut idle = host.accept(at(500)).unwrap();
    // Nobody has waited a second yet: refused, as before.
    assert!(host.accept(at(900)).unwrap().is_refusal());
    let newcomer = host.accept(at(1000)).unwrap();
    assert!(!newcomer.is_refusal());
    assert_eq!(
        host.connections(),
        3,
        "the evicted one counts until it goes"
    );
    let d = drain(&mut dripping, &mut ep, at(1000));
    assert!(d.text().starts_with("HTTP/1.1 503 "), "{}", d.text());
    assert!(d.text().contains("Retry-After: 1\r\n"));
    assert_eq!(dripping.close_reason(), Some(&HttpCloseReason::Evicted));
    drop(dripping);
    assert_eq!(host.connections(), 2);
    // Next the idle one (waiting since 500), not the newcomer (since 1000).
    let second = host.accept(at(1600)).unwrap();
    assert!(!second.is_refusal());
    let d = drain(&mut idle, &mut ep, at(1600));
    assert!(d.bytes.is_empty());
    assert_eq!(d.closed, Some(HttpCloseReason::Evicted));
    drop((idle, newcomer, second));
    assert_eq!(host.connections(), 0);

    // A request read in full before the evicted connection's turn is answered.
    let host = HttpHost::new(1, HttpConnectionConfig::default());
    let mut first = host.accept(at(0)).unwrap();
    let _taker = host.accept(at(1000)).unwrap();
    first.handle_input(at(1000), &ping(1));
    let d = drain(&mut first, &mut ep, at(1000));
    assert!(d.text().starts_with("HTTP/1.1 200 OK\r\n"), "{}", d.text());
    assert!(d.text().contains("Connection: close\r\n"));
    assert_eq!(first.close_reason(), Some(&HttpCloseReason::Evicted));

    // One whose answer is not written yet (a client reading slowly holds it) is not
    // waiting either; once the adapter comes back for more, it is.
    let host = HttpHost::new(1, HttpConnectionConfig::default());
    let mut writing = host.accept(at(0)).unwrap();
    writing.handle_input(at(0), &ping(1));
    let mut buf = Vec::new();
    let handed = writing.poll_transmit(at(0), &mut ep, &mut buf);
    assert!(matches!(handed, Some(HttpTransmit::Write { .. })));
    assert!(host.accept(at(5000)).unwrap().is_refusal());
    assert_eq!(writing.poll_transmit(at(5000), &mut ep, &mut buf), None);
    assert!(!host.accept(at(5000)).unwrap().is_refusal());
    assert_eq!(
        drain(&mut writing, &mut ep, at(5000)).closed,
        Some(HttpCloseReason::Evicted)
    );

    // A connection with a stream open is not waiting: it stays, the newcomer is refused.
    let host = HttpHost::new(1, HttpConnectionConfig::default());
    let mut streaming = host.accept(at(0)).unwrap();
    streaming.handle_input(at(0), &hang(1));
    drain(&mut streaming, &mut ep, at(0));
    assert!(streaming.stream().is_some());
    assert!(host.accept(at(5000)).unwrap().is_refusal());
    assert!(streaming.close_reason().is_none());
}

/// A wake-up counter, for the eviction waker.
struct Wakes(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Wakes {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

fn wakes() -> (std::sync::Arc<Wakes>, std::task::Waker) {
    let count = std::sync::Arc::new(Wakes(0.into()));
    let waker = std::task::Waker::from(std::sync::Arc::clone(&count));
    (count, waker)
}

/// An evicted connection is told at once: its adapter's waker is woken and its deadline
/// is due, so the adapter comes back and it closes then, not at its own deadline (10 s
/// for a fresh connection, during which it held a place among those being evicted).
#[test]
fn an_evicted_connection_is_woken_and_due_at_once() {
    let mut ep = endpoint();
    let host = HttpHost::new(1, HttpConnectionConfig::default());
    let mut idle = host.accept(at(0)).unwrap();
    let (count, waker) = wakes();
    idle.set_eviction_waker(waker);
    assert_eq!(idle.poll_timeout(), Some(at(10_000)), "its head deadline");
    assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 0);
    let _newcomer = host.accept(at(1000)).unwrap();
    assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(idle.poll_timeout().is_some_and(|t| t <= at(1000)));
    assert!(idle.handle_due(at(1000)));
    assert_eq!(
        drain(&mut idle, &mut ep, at(1000)).closed,
        Some(HttpCloseReason::Evicted)
    );
    // An adapter that ends the socket's reading to wake it: the end of input is the
    // eviction's, and what came of a request is answered 503, not as a request cut short.
    let host = HttpHost::new(1, HttpConnectionConfig::default());
    let mut partial = host.accept(at(0)).unwrap();
    partial.handle_input(
        at(10),
        b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\n{",
    );
    let _newcomer = host.accept(at(1000)).unwrap();
    partial.handle_eof(at(1000));
    let d = drain(&mut partial, &mut ep, at(1000));
    assert!(d.text().starts_with("HTTP/1.1 503 "), "{}", d.text());
    assert_eq!(d.closed, Some(HttpCloseReason::Evicted));
    // A waker registered after the eviction is woken at once.
    let host = HttpHost::new(1, HttpConnectionConfig::default());
    let mut late = host.accept(at(0)).unwrap();
    let _newcomer = host.accept(at(1000)).unwrap();
    let (count, waker) = wakes();
    late.set_eviction_waker(waker);
    assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    // One that is not evicted is never woken.
    let host = HttpHost::new(2, HttpConnectionConfig::default());
    let mut kept = host.accept(at(0)).unwrap();
    let (count, waker) = wakes();
    kept.set_eviction_waker(waker);
    let _other = host.accept(at(5000)).unwrap();
    assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(kept.poll_timeout(), Some(at(10_000)));
}

/// Accepts, drops and inputs in a pseudo-random order (a fixed seed): a connection's
/// waker is woken exactly when it is evicted, at most once; an evicted connection is due
/// at once and closes at its next turn; the served connections never exceed twice the
/// bound; and once every machine is dropped the host holds nothing.
#[test]
fn eviction_wakes_exactly_the_evicted_connections() {
    use std::sync::atomic::Ordering::SeqCst;
    let mut ep = endpoint();
    let host = HttpHost::new(4, HttpConnectionConfig::default());
    let mut live: Vec<(HttpConnection, std::sync::Arc<Wakes>)> = Vec::new();
    let mut told = 0;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        seed >> 33
    };
    for step in 0..2_000u64 {
        let now = at(step * 300);
        match next() % 4 {
            0 | 1 => {
                if let Some(mut conn) = host.accept(now) {
                    let (count, waker) = wakes();
                    conn.set_eviction_waker(waker);
                    live.push((conn, count));
                }
            }
            2 if !live.is_empty() => {
                let i = (next() as usize) % live.len();
                live.swap_remove(i);
            }
            _ if !live.is_empty() => {
                // A request answered: the connection waits for the next one from now.
                let i = (next() as usize) % live.len();
                let (conn, _) = &mut live[i];
                if conn.close_reason().is_none() && !conn.is_refusal() {
                    conn.handle_input(now, &ping(1));
                    drain(conn, &mut ep, now);
                }
            }
            _ => {}
        }
        assert!(host.connections() <= 8, "{}", host.connections());
        for (conn, count) in &mut live {
            let woken = count.0.load(SeqCst);
            assert!(woken <= 1, "woken {woken} times");
            if woken == 1 && conn.close_reason().is_none() {
                assert!(conn.poll_timeout().is_some_and(|t| t <= now));
                drain(conn, &mut ep, now);
                assert_eq!(conn.close_reason(), Some(&HttpCloseReason::Evicted));
                told += 1;
            }
        }
    }
    assert!(
        told > 50,
        "only {told} evictions: the run does not exercise them"
    );
    // Whoever was evicted was woken: every connection closed as evicted was told.
    for (conn, count) in &live {
        if conn.close_reason() == Some(&HttpCloseReason::Evicted) {
            assert_eq!(count.0.load(SeqCst), 1);
        }
    }
    drop(live);
    assert_eq!((host.connections(), host.closing()), (0, 0));
}

/// What all connections hold of requests being read and answers not yet written is
/// bounded together: past `max_buffered_bytes`, a connection reading a request is
/// answered 503 and closes, and what it held is given back; requests read in full are
/// still answered, and what an answer holds is counted until the adapter comes back.
#[test]
fn the_bytes_connections_hold_are_bounded_together() {
    let mut ep = endpoint();
    let host = HttpHost::new(4, HttpConnectionConfig::default()).with_max_buffered_bytes(20_000);
    let head = |len: usize| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
        )
    };
    let mut a = host.accept(at(0)).unwrap();
    a.handle_input(at(0), head(12_000).as_bytes());
    a.handle_input(at(0), &[b' '; 11_000]);
    assert!(a.close_reason().is_none());
    assert!(host.buffered_bytes() >= 12_000, "{}", host.buffered_bytes());
    let mut b = host.accept(at(0)).unwrap();
    b.handle_input(at(0), head(12_000).as_bytes());
    assert_eq!(b.close_reason(), Some(&HttpCloseReason::Overloaded));
    let d = drain(&mut b, &mut ep, at(0));
    assert!(d.text().starts_with("HTTP/1.1 503 "), "{}", d.text());
    assert!(d.text().contains("Retry-After: 1\r\n"));
    drop(b);
    assert!(host.buffered_bytes() < 20_000, "{}", host.buffered_bytes());
    drop(a);
    assert_eq!(host.buffered_bytes(), 0);

    // An answer counts until the adapter comes back for more.
    let mut c = host.accept(at(0)).unwrap();
    let text = "x".repeat(15_000);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}, "_meta": meta}});
    c.handle_input(
        at(0),
        &post(
            &body.to_string(),
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n",
        ),
    );
    assert!(
        c.close_reason().is_none(),
        "a request read in full is answered"
    );
    let mut buf = Vec::new();
    let handed = c.poll_transmit(at(0), &mut ep, &mut buf);
    assert!(matches!(handed, Some(HttpTransmit::Write { len }) if len > 15_000));
    assert!(host.buffered_bytes() >= 15_000, "{}", host.buffered_bytes());
    let held = host.buffered_bytes();
    let mut d = host.accept(at(0)).unwrap();
    d.handle_input(at(0), head(20_000 - held + 100).as_bytes());
    assert_eq!(d.close_reason(), Some(&HttpCloseReason::Overloaded));
    drop(d);
    buf.clear();
    assert_eq!(c.poll_transmit(at(0), &mut ep, &mut buf), None);
    assert!(
        host.buffered_bytes() < held - 15_000,
        "{} of {held}",
        host.buffered_bytes()
    );
}

/// A modern `tools/call` of `echo` with `text`.
fn echo(id: i64, text: &str) -> Vec<u8> {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}, "_meta": meta}});
    post(
        &body.to_string(),
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n",
    )
}

#[test]
fn a_large_answer_leaves_no_large_buffer_behind() {
    // One answer of 4 MiB, written; then small exchanges, as an adapter runs them (one
    // output buffer, cleared before each turn). Neither the machine's buffer nor the
    // adapter's, which the machine swaps with its own, may keep the 4 MiB between them
    // for the rest of the connection: nothing counts them once the answer is written.
    let mut ep = endpoint();
    let mut c = conn(at(0));
    let mut buf = Vec::new();
    let mut turn = |c: &mut HttpConnection, ep: &mut HttpEndpoint, input: &[u8]| {
        c.handle_input(at(0), input);
        let mut written = 0;
        loop {
            buf.clear();
            match c.poll_transmit(at(0), ep, &mut buf) {
                Some(HttpTransmit::Write { len }) => written += len,
                None => break,
                Some(other) => panic!("{other:?}"),
            }
        }
        written
    };
    assert!(turn(&mut c, &mut ep, &echo(1, &"x".repeat(4 << 20))) > 4 << 20);
    for id in 2..5 {
        assert!(turn(&mut c, &mut ep, &echo(id, "hi")) < 4096);
    }
    let kept = buf.capacity() + c.pending.capacity();
    assert!(kept <= 256 * 1024, "the idle connection keeps {kept} bytes");
}

#[test]
fn a_write_stalls_only_after_a_send_timeout_without_progress() {
    let mut config = HttpConnectionConfig {
        send_timeout: Duration::from_secs(4),
        ..HttpConnectionConfig::default()
    };
    assert_eq!(config.send_slice(), Duration::from_secs(1));
    config.send_timeout = Duration::ZERO;
    assert_eq!(config.send_slice(), Duration::from_millis(1));
    config.send_timeout = Duration::from_secs(4);
    let mut w = WriteProgress::new(at(0), &config);
    assert!(!w.stalled(at(3_000)));
    // Progress at 3 s: a slow but steady reader is given another whole send timeout.
    w.handle_progress(at(3_000));
    assert!(!w.stalled(at(6_000)));
    assert!(w.stalled(at(7_000)));
}

/// A small deterministic generator (xorshift) for the keep-alive sweep.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// One request of the keep-alive sweep, chosen by `r`: requests of every size (heads
/// and bodies below and above the room a handled request leaves to the next), with and
/// without `Expect: 100-continue`, many fields, `Content-Length` repeated, an `Mcp-Name`
/// plain, padded, Base64-wrapped or wrong, HTTP/1.0 kept alive, methods without a body.
fn sweep_request(r: &mut u64, id: i64) -> Vec<u8> {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let size = match next(r) % 4 {
        0 => 0,
        1 => (next(r) % 64) as usize,
        2 => 8 * 1024 - 200 + (next(r) % 400) as usize,
        _ => (next(r) % 40_000) as usize,
    };
    let text: String = (0..size)
        .map(|i| ['a', '"', '\\', 'é', '\n'][(i + id as usize) % 5])
        .collect();
    let call = |name: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}, "_meta": meta}})
        .to_string()
            + &" ".repeat(usize::from(name.is_empty()))
    };
    let modern = |name: &str| {
        format!(
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n"
        )
    };
    let mut extra = String::new();
    if next(r).is_multiple_of(4) {
        extra.push_str("Expect: 100-continue\r\n");
    }
    if next(r).is_multiple_of(4) {
        // Many fields, some with names as long as the framing ones.
        for i in 0..(next(r) % 45) {
            extra.push_str(&format!("X-Content-Lengt{}: {i}\r\nX-F{i}: v\r\n", i % 10));
        }
    }
    if next(r).is_multiple_of(5) {
        // A head far above the room kept for the next one.
        extra.push_str(&format!(
            "X-Big: {}\r\n",
            "b".repeat(9_000 + (next(r) % 9_000) as usize)
        ));
    }
    match next(r) % 9 {
        0 => post(&ping_body(id), &extra),
        1 => post(&call(""), &(modern("echo") + &extra)),
        2 => post(&call(""), &(modern("  echo\t") + &extra)),
        3 => post(&call(""), &(modern("=?base64?ZWNobw==?=") + &extra)),
        4 => post(&call(""), &(modern("Echo") + &extra)),
        5 => post(&call(""), &(modern("=?base64?RWNobw==?=") + &extra)),
        6 => {
            let body = call("");
            format!(
                "POST /mcp HTTP/1.0\r\nConnection: keep-alive\r\nContent-Type: application/json\r\n\
                 Content-Length: {n}\r\nContent-Length: {n}\r\n{}{extra}\r\n{body}",
                modern("echo"),
                n = body.len()
            )
            .into_bytes()
        }
        7 => format!("GET /other HTTP/1.1\r\nHost: x\r\n{extra}\r\n").into_bytes(),
        _ => format!("DELETE /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n{extra}\r\n")
            .into_bytes(),
    }
}

/// What a connection wrote for `input`, given in `pieces` (offsets into it); interim
/// `100 Continue` responses left out (whether one is due depends on how the body came).
fn written(c: &mut HttpConnection, ep: &mut HttpEndpoint, input: &[u8], cuts: &[usize]) -> String {
    let mut out = Vec::new();
    let mut from = 0;
    for &to in cuts.iter().chain([&input.len()]) {
        c.handle_input(at(0), &input[from..to]);
        from = to;
        out.append(&mut drain(c, ep, at(0)).bytes);
    }
    String::from_utf8_lossy(&out).replace("HTTP/1.1 100 Continue\r\n\r\n", "")
}

#[test]
fn every_request_of_a_kept_alive_connection_is_answered_as_on_a_fresh_one() {
    // Requests of every size and shape, one after the other on one connection (one at a
    // time, or pipelined in one input), cut at random places: each is answered exactly
    // as on a connection of its own. Nothing of one request (a field, a body's tail,
    // its framing, its `Expect`) may show in the next one's reading.
    let mut r = 0x9e37_79b9_7f4a_7c15_u64;
    for round in 0..40 {
        let (mut ep, mut fresh_ep) = (endpoint(), endpoint());
        let mut c = conn(at(0));
        let mut id = 0;
        for _ in 0..12 {
            let mut batch = Vec::new();
            let mut expected = String::new();
            for _ in 0..1 + next(&mut r) % 3 {
                id += 1;
                let request = sweep_request(&mut r, id);
                let mut fresh = conn(at(0));
                expected += &written(&mut fresh, &mut fresh_ep, &request, &[]);
                batch.extend_from_slice(&request);
            }
            let mut cuts: Vec<usize> = (0..next(&mut r) % 4)
                .map(|_| (next(&mut r) as usize) % (batch.len() + 1))
                .collect();
            cuts.sort_unstable();
            let got = written(&mut c, &mut ep, &batch, &cuts);
            assert_eq!(got, expected, "round {round}, request {id}");
            assert!(c.close_reason().is_none(), "round {round}");
        }
    }
}
