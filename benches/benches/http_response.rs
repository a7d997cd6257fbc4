//! `http_response`: `mcp_proto::http::ResponseReader`, the HTTP/1.1 response parser every
//! Streamable HTTP exchange of both clients goes through.
//!
//! One operation reads one whole response the way a client does: a fresh reader (the
//! client machine makes one per exchange), the bytes given in reads of a given size
//! (`16KiB reads`, what a socket read typically hands over; `256B reads`, a head that
//! trickles in) or all at once (`whole`), every event polled after each read, down to
//! `End`. The fixtures:
//!
//! * `json echo 64B` — the example server's answer to a modern `tools/call echo` with a
//!   64 B text, as `serve_http` writes it (`Content-Type: application/json`,
//!   `Content-Length`), about 330 B in all: responses/s is the figure;
//! * `chunked 1MiB` — a 1 MiB `text/event-stream` body with `Transfer-Encoding: chunked`,
//!   in 16 KiB chunks (a server that buffers) or in one chunk per ~120 B event (a server
//!   that flushes every event, as SSE servers do): MB/s is the figure;
//! * `length 1MiB` — the same body with `Content-Length`, the reference for the chunked
//!   cases;
//! * `head-heavy {30,90} headers` — a small JSON answer behind a CDN or gateway, with 30
//!   (about 2 KB) or 90 (about 6 KB) header fields (the default limit is 100):
//!   responses/s, and MB/s of the whole response.
//!
//! MB/s counts response bytes as received (head, framing and body; 10^6 per MB).
//!
//! ```text
//! cargo bench -p mcp-benches --bench http_response [-- FILTER…]
//! bash benches/callgrind.sh http_response "head-heavy 90 whole" 20000
//! ```

use mcp_proto::Instant;
use std::hint::black_box;

use mcp_benches::{Settings, payload};
use mcp_proto::http::{HttpLimits, ResponseEvent, ResponseReader};
use mcp_proto::server::example;
use mcp_proto::server::http::HttpResponse;

const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-benches","version":"0.1.0"}}"#;

/// A response and what reading it must produce.
struct Fixture {
    name: String,
    bytes: Vec<u8>,
    headers: usize,
    body: usize,
    /// Timed operations by default.
    n: usize,
    /// Operations timed together as one sample (small fixtures: the clock read would
    /// weigh).
    batch: usize,
    /// Feeds to run it with: (label, read size).
    feeds: &'static [(&'static str, usize)],
}

const WHOLE: (&str, usize) = ("whole", usize::MAX);
const READS_16K: (&str, usize) = ("16KiB reads", 16 * 1024);
const READS_256: (&str, usize) = ("256B reads", 256);

/// The example server's answer to a modern `tools/call echo` of `text` (the JSON-RPC
/// message the machine writes, without its newline).
fn modern_echo_reply(text: &str) -> Vec<u8> {
    let mut server = example::server();
    let request = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{MODERN_META},"name":"echo","arguments":{}}}}}"#,
        serde_json::json!({ "text": text })
    );
    server.handle_input(Instant::ZERO, format!("{request}\n").as_bytes());
    let mut out = Vec::new();
    while server.poll_transmit(Instant::ZERO, &mut out).is_some() {}
    assert!(out.ends_with(b"\n"), "the server answered");
    out.pop();
    out
}

fn json_echo() -> Fixture {
    let body = modern_echo_reply(&payload(64));
    let mut bytes = Vec::new();
    HttpResponse::new(200)
        .with_body("application/json", body.clone())
        .write(&mut bytes);
    Fixture {
        name: "json echo 64B (Content-Length)".to_owned(),
        headers: 2,
        body: body.len(),
        bytes,
        n: 400_000,
        batch: 64,
        feeds: &[WHOLE],
    }
}

/// About 1 MiB of SSE events of ~120 B each; returns the events.
fn sse_events() -> Vec<Vec<u8>> {
    let mut events = Vec::new();
    let mut total = 0;
    let mut i = 0;
    while total < 1024 * 1024 {
        let event = format!(
            "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"call-7\",\"progress\":{i}}}}}\n\n"
        );
        total += event.len();
        events.push(event.into_bytes());
        i += 1;
    }
    events
}

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\n";

/// The events as a chunked body: one chunk per event, or chunks of `chunk` bytes.
fn chunked(events: &[Vec<u8>], chunk: Option<usize>) -> Fixture {
    let body: Vec<u8> = events.concat();
    let chunks: Vec<&[u8]> = match chunk {
        Some(size) => body.chunks(size).collect(),
        None => events.iter().map(Vec::as_slice).collect(),
    };
    let mut bytes = format!("{SSE_HEAD}Transfer-Encoding: chunked\r\n\r\n").into_bytes();
    for c in &chunks {
        bytes.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        bytes.extend_from_slice(c);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"0\r\n\r\n");
    let label = match chunk {
        Some(size) => format!("{}KiB chunks", size / 1024),
        None => format!("1 chunk per event, {} chunks", chunks.len()),
    };
    Fixture {
        name: format!("chunked 1MiB SSE body ({label})"),
        headers: 4,
        body: body.len(),
        bytes,
        n: 600,
        batch: 1,
        feeds: &[READS_16K, WHOLE],
    }
}

fn length_delimited(events: &[Vec<u8>]) -> Fixture {
    let body: Vec<u8> = events.concat();
    let mut bytes = format!("{SSE_HEAD}Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    bytes.extend_from_slice(&body);
    Fixture {
        name: "length 1MiB SSE body (Content-Length, reference)".to_owned(),
        headers: 4,
        body: body.len(),
        bytes,
        n: 600,
        batch: 1,
        feeds: &[READS_16K, WHOLE],
    }
}

/// Header fields a response picks up behind a CDN, a gateway and a framework.
const GATEWAY_HEADERS: [(&str, &str); 28] = [
    ("Date", "Mon, 30 Nov 2026 14:03:27 GMT"),
    ("Content-Type", "application/json; charset=utf-8"),
    ("Connection", "keep-alive"),
    ("Server", "cloudflare"),
    ("CF-Ray", "8f3a1c2b9d7e4f60-FRA"),
    ("CF-Cache-Status", "DYNAMIC"),
    (
        "Cache-Control",
        "no-store, no-cache, must-revalidate, private",
    ),
    ("Vary", "Accept-Encoding, Origin, Authorization"),
    (
        "Strict-Transport-Security",
        "max-age=31536000; includeSubDomains; preload",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "strict-origin-when-cross-origin"),
    (
        "Content-Security-Policy",
        "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; upgrade-insecure-requests",
    ),
    (
        "Permissions-Policy",
        "accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), microphone=(), payment=(), usb=()",
    ),
    ("Access-Control-Allow-Origin", "*"),
    (
        "Access-Control-Expose-Headers",
        "Mcp-Session-Id, MCP-Protocol-Version, X-Request-Id, WWW-Authenticate",
    ),
    ("Mcp-Session-Id", "4f2c9e1a-7b3d-4c8e-9f10-2a6b5c4d3e21"),
    ("X-Request-Id", "req_01JD8ZK4W7X9Q2M5N3P6R8T0V1"),
    (
        "traceparent",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    ),
    ("X-RateLimit-Limit", "1000"),
    ("X-RateLimit-Remaining", "997"),
    ("X-RateLimit-Reset", "1795960000"),
    ("Via", "1.1 google, 1.1 varnish"),
    ("Alt-Svc", "h3=\":443\"; ma=86400"),
    (
        "Set-Cookie",
        "__cf_bm=Qx7y2V9wK3mN8pL4rT6sU1vW5xY0zA2bC4dE6fG8hI0-1795956207-1.0.1.1-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789; path=/; expires=Mon, 30-Nov-26 14:33:27 GMT; domain=.example.com; HttpOnly; Secure; SameSite=None",
    ),
    (
        "Set-Cookie",
        "session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U; Path=/; HttpOnly; Secure; SameSite=Lax",
    ),
    (
        "Report-To",
        "{\"endpoints\":[{\"url\":\"https://a.nel.cloudflare.com/report/v4?s=abc123\"}],\"group\":\"cf-nel\",\"max_age\":604800}",
    ),
    (
        "NEL",
        "{\"success_fraction\":0,\"report_to\":\"cf-nel\",\"max_age\":604800}",
    ),
];

/// A small JSON answer with `count` header fields (the gateway set, then filler fields
/// of the `x-envoy-…`/`x-amz-…` kind), `Content-Length` among them.
fn head_heavy(count: usize) -> Fixture {
    let body = modern_echo_reply(&payload(64));
    let mut bytes = b"HTTP/1.1 200 OK\r\n".to_vec();
    let mut fields = 0;
    for (name, value) in GATEWAY_HEADERS.iter().take(count - 1) {
        bytes.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        fields += 1;
    }
    while fields < count - 1 {
        let i = fields;
        let name = if i % 2 == 0 {
            format!("x-envoy-upstream-{i:02}")
        } else {
            format!("x-amz-cf-meta-{i:02}")
        };
        bytes.extend_from_slice(format!("{name}: {}\r\n", payload(40 + i % 24)).as_bytes());
        fields += 1;
    }
    bytes.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    bytes.extend_from_slice(&body);
    Fixture {
        name: format!("head-heavy {count} headers (small JSON body)"),
        headers: count,
        body: body.len(),
        bytes,
        n: 100_000,
        batch: 16,
        feeds: &[WHOLE, READS_256],
    }
}

/// Reads `bytes` as one response to a POST, `read` bytes at a time; returns (header
/// fields, body bytes).
fn read_response(bytes: &[u8], read: usize) -> (usize, usize) {
    let mut reader = ResponseReader::new(HttpLimits::streaming(), "POST");
    let mut headers = 0;
    let mut body = 0;
    for piece in bytes.chunks(read) {
        reader.handle_input(piece);
        while let Some(event) = reader.poll_event() {
            match event {
                ResponseEvent::Head(head) => headers = head.headers().len(),
                ResponseEvent::Body(bytes) => body += black_box(bytes).len(),
                ResponseEvent::End { keep_alive } => {
                    assert!(keep_alive);
                    return (headers, body);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    panic!("the response did not end")
}

fn main() {
    let settings = Settings::from_env();
    settings.title(
        "http_response",
        "ResponseReader on whole responses, in socket-sized reads or whole",
    );
    let events = sse_events();
    let fixtures = [
        json_echo(),
        chunked(&events, Some(16 * 1024)),
        chunked(&events, None),
        length_delimited(&events),
        head_heavy(30),
        head_heavy(90),
    ];
    for fixture in &fixtures {
        let size = fixture.bytes.len();
        let n = settings.iters(fixture.n);
        for &(feed, read) in fixture.feeds {
            let case = format!("{} {feed} ({size} B)", fixture.name);
            if !settings.selected(&case) {
                continue;
            }
            assert_eq!(
                read_response(&fixture.bytes, read),
                (fixture.headers, fixture.body),
                "{case}: what the reader produced"
            );
            settings.measure(&case, "responses", n, fixture.batch, Some(size), || {
                black_box(read_response(black_box(&fixture.bytes), read));
            });
        }
    }
    settings.note(
        "one op = one response read by a fresh reader down to End; MB/s is response bytes \
         as received (head, framing, body; 10^6) per second",
    );
}
