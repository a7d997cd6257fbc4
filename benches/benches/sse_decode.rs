//! `sse_decode`: throughput of `mcp_proto::sse::SseDecoder`, the `text/event-stream`
//! decoder every SSE answer of a Streamable HTTP server goes through.
//!
//! One operation decodes one whole stream the way a client does for one response: a
//! fresh decoder, the bytes pushed in reads of a given size (`16KiB reads`, what a socket
//! read typically hands over) or all at once (`whole`), every event drained after each
//! push, then `finish`. The fixtures:
//!
//! * `small events` — 2,400 JSON-RPC notifications of about 100 B each
//!   (`event: message` + one `data:` line, as the example server frames them), 256 KiB
//!   in all, so many events per push;
//! * `64KiB event` / `1MiB event` — one event whose data is that large, either on one
//!   `data:` line (`single line`: a JSON-RPC message, which is how servers send them) or split
//!   into `data:` lines of 1 KiB or 64 B (`1KiB lines`, `64B lines`: the decoder joins
//!   them with LF).
//!
//! Reference points in the same run (`reference …`), over the 1 MiB single-line stream: a
//! plain copy of the stream into a fresh `Vec` (memory bandwidth), a byte-at-a-time search
//! for CR or LF (the decoder's line scan, which is `iter().position`), the same search
//! with `memchr::memchr2` (already in the graph through `serde_json`), and
//! `std::str::from_utf8` (the validation `String::from_utf8_lossy` does).
//!
//! MB/s counts stream bytes (10^6 per MB), field names and line ends included. The target
//! ("Targets" in `benches/README.md`) is ≥ 1 GB/s (1,000 MB/s) for large events.
//!
//! ```text
//! cargo bench -p mcp-benches --bench sse_decode [-- FILTER…]
//! bash benches/callgrind.sh sse_decode "1MiB single 16KiB" 20
//! ```

use std::hint::black_box;

use mcp_benches::{Settings, payload};
use mcp_proto::sse::{SseDecoder, SseLimits};

/// Bytes one socket read hands over in the `16KiB reads` cases.
const READ: usize = 16 * 1024;

/// A stream fixture and what decoding it must produce.
struct Fixture {
    name: String,
    stream: Vec<u8>,
    events: usize,
    data_bytes: usize,
}

/// `count` progress notifications of about 100 B of JSON each, framed as the example
/// server frames messages (`event: message`, one `data:` line).
fn small_events(count: usize) -> Fixture {
    let mut stream = Vec::new();
    let mut data_bytes = 0;
    for i in 0..count {
        let json = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"call-{:04}","progress":{},"total":{count}}}}}"#,
            i % 10_000,
            i % 1000,
        );
        data_bytes += json.len();
        stream.extend_from_slice(b"event: message\ndata: ");
        stream.extend_from_slice(json.as_bytes());
        stream.extend_from_slice(b"\n\n");
    }
    Fixture {
        name: format!("small events ({count} x ~100 B)"),
        stream,
        events: count,
        data_bytes,
    }
}

/// One event with `data_len` bytes of data: a JSON-RPC result on one line when `line` is
/// `None`, else the data split into `data:` lines of `line` bytes.
fn large_event(label: &str, data_len: usize, line: Option<usize>) -> Fixture {
    let mut stream = b"event: message\n".to_vec();
    let (shape, data_bytes) = match line {
        None => {
            let head = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""#;
            let tail = r#""}]}}"#;
            let text = payload(data_len - head.len() - tail.len());
            stream.extend_from_slice(b"data: ");
            stream.extend_from_slice(head.as_bytes());
            stream.extend_from_slice(text.as_bytes());
            stream.extend_from_slice(tail.as_bytes());
            stream.push(b'\n');
            ("single line".to_owned(), data_len)
        }
        Some(width) => {
            let text = payload(data_len);
            let mut lines = 0;
            for piece in text.as_bytes().chunks(width) {
                stream.extend_from_slice(b"data: ");
                stream.extend_from_slice(piece);
                stream.push(b'\n');
                lines += 1;
            }
            let label = if width >= 1024 {
                format!("{}KiB lines", width / 1024)
            } else {
                format!("{width}B lines")
            };
            // The joining LFs are part of the data.
            (label, data_len + lines - 1)
        }
    };
    stream.push(b'\n');
    Fixture {
        name: format!("{label} event {shape}"),
        stream,
        events: 1,
        data_bytes,
    }
}

/// Decodes `stream` as a client does for one response, pushing `read` bytes at a time;
/// returns (events, data bytes).
fn decode(stream: &[u8], read: usize) -> (usize, usize) {
    let mut decoder = SseDecoder::new(SseLimits::default());
    let mut events = 0;
    let mut bytes = 0;
    for chunk in stream.chunks(read) {
        decoder.handle_input(chunk);
        while let Some(event) = decoder.poll_event() {
            let event = event.expect("within the limits");
            events += 1;
            bytes += event.data.len();
            black_box(&event);
        }
    }
    let end = decoder.handle_eof();
    assert!(!end.incomplete_event);
    (events, bytes)
}

/// A reference operation over a whole stream.
type Reference = fn(&[u8]);

/// Line ends in `stream`, found one after another with `find` (as the decoder does).
fn line_ends(stream: &[u8], find: impl Fn(&[u8]) -> Option<usize>) -> usize {
    let mut pos = 0;
    let mut count = 0;
    while let Some(i) = find(&stream[pos..]) {
        pos += i + 1;
        count += 1;
    }
    count
}

fn main() {
    let settings = Settings::from_env();
    settings.title(
        "sse_decode",
        "SseDecoder on SSE streams, pushed in socket-sized reads or whole",
    );
    let fixtures = [
        small_events(2_400),
        large_event("64KiB", 64 * 1024, None),
        large_event("64KiB", 64 * 1024, Some(1024)),
        large_event("64KiB", 64 * 1024, Some(64)),
        large_event("1MiB", 1024 * 1024, None),
        large_event("1MiB", 1024 * 1024, Some(1024)),
        large_event("1MiB", 1024 * 1024, Some(64)),
    ];
    for fixture in &fixtures {
        let size = fixture.stream.len();
        // About 250 MB of stream per case by default.
        let n = settings.iters((250_000_000 / size).max(20));
        for (feed, read) in [("16KiB reads", READ), ("whole", usize::MAX)] {
            let case = format!("{} {feed} ({size} B)", fixture.name);
            if !settings.selected(&case) {
                continue;
            }
            assert_eq!(
                decode(&fixture.stream, read),
                (fixture.events, fixture.data_bytes),
                "{case}: what the decoder produced"
            );
            settings.measure(&case, "streams", n, 1, Some(size), || {
                black_box(decode(black_box(&fixture.stream), read));
            });
        }
    }

    let big = &fixtures[4].stream;
    let size = big.len();
    let n = settings.iters(150_000_000 / size);
    let references: [(&str, Reference); 4] = [
        ("reference copy into a fresh Vec", |s| {
            black_box(s.to_vec());
        }),
        ("reference byte-wise CR/LF search", |s| {
            black_box(line_ends(s, |rest| {
                rest.iter().position(|b| *b == b'\n' || *b == b'\r')
            }));
        }),
        ("reference memchr2 CR/LF search", |s| {
            black_box(line_ends(s, |rest| memchr::memchr2(b'\n', b'\r', rest)));
        }),
        ("reference str::from_utf8", |s| {
            black_box(std::str::from_utf8(s).is_ok());
        }),
    ];
    for (name, op) in references {
        let case = format!("{name} 1MiB event single line ({size} B)");
        if settings.selected(&case) {
            settings.measure(&case, "streams", n, 1, Some(size), || op(black_box(big)));
        }
    }
    settings.note(
        "one op = one stream decoded by a fresh decoder (push, drain, finish); MB/s is stream \
         bytes (10^6) per second; target for large events: >= 1,000 MB/s",
    );
}
