//! Response reader: transcripts checked for chunking invariance (h11 style).

use crate::fuzzing::http::{read_pieces, read_responses};
use crate::http::{HttpLimits, ResponseError, ResponseEvent, ResponseReader, ReuseError};

/// One line per event, for readable transcripts.
fn summary(events: &[ResponseEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            ResponseEvent::Head(h) => format!("head {} {:?}", h.status, h.version),
            ResponseEvent::Body(b) => format!("body {}", String::from_utf8_lossy(b)),
            ResponseEvent::End { keep_alive: true } => "end keep-alive".to_owned(),
            ResponseEvent::End { keep_alive: false } => "end close".to_owned(),
            ResponseEvent::Error(e) => format!("error {e:?}"),
        })
        .collect()
}

/// Reads `input` whole, a byte at a time and split at every point, requires the same
/// events and leftover each time, and returns the transcript and leftover.
fn invariant(
    input: &[u8],
    limits: &HttpLimits,
    methods: &[&str],
    eof: bool,
) -> (Vec<String>, Vec<u8>) {
    let whole = read_responses(input, 0, limits, methods, eof);
    assert_eq!(
        read_responses(input, 1, limits, methods, eof),
        whole,
        "byte at a time"
    );
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        assert_eq!(
            read_pieces([a, b], limits, methods, eof),
            whole,
            "split at {cut}"
        );
    }
    (summary(&whole.0), whole.1)
}

/// Checks a transcript under all splits, and again with another response's bytes
/// following (which must not change the events, and must be left over).
fn check(input: &str, methods: &[&str], eof: bool, expected: &[&str]) {
    check_with(input, &HttpLimits::default(), methods, eof, expected);
}

fn check_with(input: &str, limits: &HttpLimits, methods: &[&str], eof: bool, expected: &[&str]) {
    let (events, leftover) = invariant(input.as_bytes(), limits, methods, eof);
    assert_eq!(events, expected, "transcript of {input:?}");
    let ended = matches!(expected.last(), Some(l) if l.starts_with("end"));
    if ended && !eof {
        assert!(leftover.is_empty());
        let next = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext";
        let trailing = format!("{input}{next}");
        let (events, leftover) = invariant(trailing.as_bytes(), limits, &methods[..1], false);
        assert_eq!(events, expected, "with trailing data: {input:?}");
        assert_eq!(leftover, next.as_bytes());
    }
}

#[test]
fn content_length() {
    let r =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}";
    check(
        r,
        &["POST"],
        false,
        &["head 200 Http11", "body {\"a\":1}", "end keep-alive"],
    );
    let r = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
    check(r, &["POST"], false, &["head 202 Http11", "end keep-alive"]);
    let r = "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\ncontent-length:2\r\n\r\nok";
    check(
        r,
        &["POST"],
        false,
        &["head 200 Http11", "body ok", "end keep-alive"],
    );
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let r = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
             5;name=value\r\nhello\r\n6 ; x ; y=\"z\"\r\n world\r\nA\r\n 012345678\r\n\
             0\r\nX-Checksum: abc\r\nX-Other: d\r\n\r\n";
    let expected = [
        "head 200 Http11",
        "body hello world 012345678",
        "end keep-alive",
    ];
    check(r, &["POST"], false, &expected);
    let r = "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
    check(
        r,
        &["POST"],
        false,
        &["head 200 Http11", "body ok", "end keep-alive"],
    );
}

#[test]
fn close_delimited() {
    let r = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: 1\n\ndata: 2\n\n";
    check(
        r,
        &["POST"],
        true,
        &[
            "head 200 Http11",
            "body data: 1\n\ndata: 2\n\n",
            "end close",
        ],
    );
    // Without EOF the body is delivered as it comes, and the response is not over.
    check(
        r,
        &["POST"],
        false,
        &["head 200 Http11", "body data: 1\n\ndata: 2\n\n"],
    );
}

#[test]
fn interim_responses_are_skipped() {
    let r = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n\
             HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    check(
        r,
        &["POST"],
        false,
        &["head 200 Http11", "body ok", "end keep-alive"],
    );
}

#[test]
fn bodiless_responses() {
    check(
        "HTTP/1.1 204 No Content\r\n\r\n",
        &["POST"],
        false,
        &["head 204 Http11", "end keep-alive"],
    );
    let r = "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n";
    check(r, &["GET"], false, &["head 304 Http11", "end keep-alive"]);
    let r = "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n";
    check(r, &["HEAD"], false, &["head 200 Http11", "end keep-alive"]);
}

#[test]
fn keep_alive_verdicts() {
    let r = "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok";
    check(
        r,
        &["GET"],
        false,
        &["head 200 Http10", "body ok", "end close"],
    );
    let r = "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok";
    check(
        r,
        &["GET"],
        false,
        &["head 200 Http10", "body ok", "end keep-alive"],
    );
    let r = "HTTP/1.1 200 OK\r\nConnection: foo, close\r\nContent-Length: 2\r\n\r\nok";
    check(
        r,
        &["GET"],
        false,
        &["head 200 Http11", "body ok", "end close"],
    );
}

#[test]
fn lenient_line_ends_and_leading_blank_lines() {
    let r = "\r\n\nHTTP/1.1 200 OK\nContent-Length: 2\n\nok";
    check(
        r,
        &["GET"],
        false,
        &["head 200 Http11", "body ok", "end keep-alive"],
    );
}

#[test]
fn pipelined_responses() {
    let r = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none\
             HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n\
             HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n\
             HTTP/1.1 200 OK\r\n\r\nthree";
    let expected = [
        "head 200 Http11",
        "body one",
        "end keep-alive",
        "head 200 Http11",
        "body two",
        "end keep-alive",
        "head 200 Http11",
        "end keep-alive",
        "head 200 Http11",
        "body three",
        "end close",
    ];
    check(r, &["POST", "POST", "HEAD", "GET"], true, &expected);
}

#[test]
fn head_limits() {
    let exact = "HTTP/1.1 200 OK\r\nX: 0123456789\r\nContent-Length: 0\r\n\r\n";
    let mut limits = HttpLimits {
        max_head_bytes: exact.len(),
        ..HttpLimits::default()
    };
    check_with(
        exact,
        &limits,
        &["GET"],
        false,
        &["head 200 Http11", "end keep-alive"],
    );
    limits.max_head_bytes = exact.len() - 1;
    let e = format!(
        "error {:?}",
        ResponseError::HeadTooLarge {
            limit: exact.len() - 1
        }
    );
    check_with(exact, &limits, &["GET"], false, &[&e]);

    let limits = HttpLimits {
        max_headers: 2,
        ..HttpLimits::default()
    };
    let r = "HTTP/1.1 200 OK\r\nA: 1\r\nContent-Length: 0\r\n\r\n";
    check_with(
        r,
        &limits,
        &["GET"],
        false,
        &["head 200 Http11", "end keep-alive"],
    );
    let r = "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nContent-Length: 0\r\n\r\n";
    check_with(
        r,
        &limits,
        &["GET"],
        false,
        &["error TooManyHeaders { limit: 2 }"],
    );
}

#[test]
fn malformed_heads() {
    let cases = [
        (
            "HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n",
            "error InvalidHead { reason: \"invalid header value\" }",
        ),
        (
            "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
            "error InvalidHead { reason: \"invalid header name\" }",
        ),
        (
            "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
            "error InvalidHead { reason: \"invalid header value\" }",
        ),
        (
            "HTTP/2.0 200 OK\r\n\r\n",
            "error InvalidHead { reason: \"invalid HTTP version\" }",
        ),
        (
            "HTTP/1.1 2000 OK\r\n\r\n",
            "error InvalidHead { reason: \"invalid status line\" }",
        ),
        (
            "HTTP/1.1 099 Odd\r\n\r\n",
            "error InvalidStatus { status: 99 }",
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
            "error SwitchingProtocols",
        ),
    ];
    for (input, error) in cases {
        check(input, &["GET"], true, &[error]);
    }
}

#[test]
fn framing_errors() {
    let head = |fields: &str| format!("HTTP/1.1 200 OK\r\n{fields}\r\n\r\nhello");
    let cases = [
        (
            "Content-Length: 5\r\nContent-Length: 6",
            "error ConflictingContentLength",
        ),
        ("Content-Length: 5, 6", "error ConflictingContentLength"),
        ("Content-Length: -1", "error InvalidContentLength"),
        (
            "Content-Length: 99999999999999999999999",
            "error InvalidContentLength",
        ),
        ("Content-Length:", "error InvalidContentLength"),
        (
            "Transfer-Encoding: chunked\r\nContent-Length: 5",
            "error ConflictingFraming",
        ),
        (
            "Transfer-Encoding: gzip, chunked",
            "error UnsupportedTransferEncoding",
        ),
        (
            "Transfer-Encoding: identity",
            "error UnsupportedTransferEncoding",
        ),
    ];
    for (fields, error) in cases {
        check(&head(fields), &["GET"], true, &[error]);
    }
    let r = "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
    check(r, &["GET"], true, &["error ConflictingFraming"]);
}

#[test]
fn chunked_errors() {
    let chunked =
        |body: &str| format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{body}");
    let cases = [
        ("ffffffffffffffffff\r\n", vec!["error ChunkSizeOverflow"]),
        (
            "zz\r\n",
            vec!["error InvalidChunk { reason: \"chunk size is not hexadecimal\" }"],
        ),
        (
            "5\0\r\nhello\r\n",
            vec!["error InvalidChunk { reason: \"invalid bytes after chunk size\" }"],
        ),
        (
            "5;a\rb\r\nhello\r\n",
            vec!["error InvalidChunk { reason: \"invalid bytes after chunk size\" }"],
        ),
        (
            "5\r\nhelloX\r\n",
            vec![
                "body hello",
                "error InvalidChunk { reason: \"chunk data not followed by a line end\" }",
            ],
        ),
        (
            "0\r\nbad trailer\r\n\r\n",
            vec!["error InvalidTrailer { reason: \"invalid header name\" }"],
        ),
        ("5\r\nhel", vec!["body hel", "error Truncated"]),
        ("5\r\nhello\r\n", vec!["body hello", "error Truncated"]),
        ("0\r\nX: y\r\n", vec!["error Truncated"]),
    ];
    for (body, tail) in cases {
        let mut expected = vec!["head 200 Http11"];
        expected.extend(tail);
        check(&chunked(body), &["GET"], true, &expected);
    }
    // u64::MAX fits; with no body limit it is only truncated.
    let r = chunked("ffffffffffffffff\r\nabc");
    let limits = HttpLimits::streaming();
    check_with(
        &r,
        &limits,
        &["GET"],
        true,
        &["head 200 Http11", "body abc", "error Truncated"],
    );
}

#[test]
fn chunked_limits() {
    let chunked =
        |body: &str| format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{body}");
    let limits = HttpLimits {
        max_chunk_size_line: 8,
        ..HttpLimits::default()
    };
    let r = chunked("5;abcd\r\nhello\r\n0\r\n\r\n");
    check_with(
        &r,
        &limits,
        &["GET"],
        false,
        &["head 200 Http11", "body hello", "end keep-alive"],
    );
    let r = chunked("5;abcde\r\nhello\r\n0\r\n\r\n");
    let expected = ["head 200 Http11", "error ChunkLineTooLong { limit: 8 }"];
    check_with(&r, &limits, &["GET"], false, &expected);

    let limits = HttpLimits {
        max_trailer_bytes: 8,
        ..HttpLimits::default()
    };
    let r = chunked("0\r\nA: 1\r\n\r\n");
    check_with(
        &r,
        &limits,
        &["GET"],
        false,
        &["head 200 Http11", "end keep-alive"],
    );
    let r = chunked("0\r\nA: 12\r\n\r\n");
    let expected = ["head 200 Http11", "error TrailersTooLarge { limit: 8 }"];
    check_with(&r, &limits, &["GET"], false, &expected);
}

#[test]
fn body_limits() {
    let limits = HttpLimits {
        max_body_bytes: Some(5),
        ..HttpLimits::default()
    };
    let ok = ["head 200 Http11", "body hello", "end keep-alive"];
    let r = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    check_with(r, &limits, &["GET"], false, &ok);
    let r = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello!";
    let too_large = "error BodyTooLarge { limit: 5 }";
    check_with(r, &limits, &["GET"], false, &["head 200 Http11", too_large]);
    let r = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n";
    check_with(r, &limits, &["GET"], false, &ok);
    let r =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n3\r\nlo!\r\n0\r\n\r\n";
    check_with(
        r,
        &limits,
        &["GET"],
        false,
        &["head 200 Http11", "body hel", too_large],
    );
    let r = "HTTP/1.1 200 OK\r\n\r\nhello";
    check_with(
        r,
        &limits,
        &["GET"],
        true,
        &["head 200 Http11", "body hello", "end close"],
    );
    let r = "HTTP/1.1 200 OK\r\n\r\nhello, world";
    check_with(
        r,
        &limits,
        &["GET"],
        true,
        &["head 200 Http11", "body hello", too_large],
    );
}

#[test]
fn end_of_input() {
    check("", &["GET"], true, &["error ConnectionClosed"]);
    check("HTTP/1.1 200 O", &["GET"], true, &["error Truncated"]);
    check("\r\n", &["GET"], true, &["error Truncated"]);
    let r = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel";
    check(
        r,
        &["GET"],
        true,
        &["head 200 Http11", "body hel", "error Truncated"],
    );
    // EOF right after a complete response is carried over to the next one.
    let r = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let expected = [
        "head 200 Http11",
        "body ok",
        "end keep-alive",
        "error ConnectionClosed",
    ];
    check(r, &["GET", "GET"], true, &expected);
}

#[test]
fn reuse_rules() {
    let mut reader = ResponseReader::new(HttpLimits::default(), "GET");
    reader.handle_input(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe");
    assert!(reader.wants_input());
    assert_eq!(reader.reset_for_next("GET"), Err(ReuseError::NotFinished));
    reader.handle_input(b"llo");
    assert!(!reader.wants_input());
    assert_eq!(reader.reset_for_next("GET"), Ok(()));
    assert!(reader.wants_input());

    let mut reader = ResponseReader::new(HttpLimits::default(), "GET");
    reader.handle_input(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(reader.reset_for_next("GET"), Err(ReuseError::NotKeepAlive));

    let mut reader = ResponseReader::new(reader_limits(4), "GET");
    reader.handle_input(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTT");
    reader.handle_input(b"P");
    assert_eq!(reader.leftover(), b"HTTP");
    assert_eq!(reader.reset_for_next("GET"), Ok(()));
    let mut reader = ResponseReader::new(reader_limits(4), "GET");
    reader.handle_input(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP");
    reader.handle_input(b"/");
    let err = reader.reset_for_next("GET");
    assert_eq!(err, Err(ReuseError::LeftoverOverflow { limit: 4 }));
    assert_eq!(reader.into_leftover(), b"HTTP");
}

fn reader_limits(leftover: usize) -> HttpLimits {
    HttpLimits {
        max_leftover_bytes: leftover,
        ..HttpLimits::default()
    }
}

#[test]
fn body_is_delivered_incrementally() {
    let mut reader = ResponseReader::new(HttpLimits::streaming(), "POST");
    reader.handle_input(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n");
    assert_eq!(reader.poll_event(), None);
    reader.handle_input(b"Transfer-Encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n4\r\ndata");
    let Some(ResponseEvent::Head(head)) = reader.poll_event() else {
        panic!("expected the head");
    };
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    assert_eq!(head.header("CONTENT-TYPE"), head.header("Content-Type"));
    assert_eq!(
        reader.poll_event(),
        Some(ResponseEvent::Body(b"data: 1\n\ndata".to_vec()))
    );
    assert_eq!(reader.poll_event(), None);
    // A large body given at once comes out as one event, copied once: the reader keeps
    // none of it besides the event.
    let big = vec![b'x'; 200_000];
    reader.handle_input(format!("\r\n{:x}\r\n", big.len()).as_bytes());
    reader.handle_input(&big);
    assert!(reader.retained_bytes() < big.len() + 1024);
    let mut events = Vec::new();
    while let Some(event) = reader.poll_event() {
        let ResponseEvent::Body(b) = event else {
            panic!("expected body");
        };
        events.push(b.len());
    }
    assert_eq!(events, [big.len()]);
    // Given in small pieces, the pieces are grouped into events of bounded growth.
    let mut reader = ResponseReader::new(HttpLimits::default(), "GET");
    reader.handle_input(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
    assert!(matches!(reader.poll_event(), Some(ResponseEvent::Head(_))));
    for piece in vec![b'y'; 100_000].chunks(1000) {
        reader.handle_input(piece);
    }
    let mut total = 0;
    while let Some(event) = reader.poll_event() {
        match event {
            ResponseEvent::Body(b) => {
                assert!(b.len() <= 32 * 1024, "a body event of {} bytes", b.len());
                total += b.len();
            }
            ResponseEvent::End { keep_alive } => assert!(keep_alive),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(total, 100_000);
}

#[test]
fn header_lookup() {
    let r = b"HTTP/1.1 200 OK\r\nVary: a\r\nvary: b , c\r\nX-Empty:\r\nX-Latin: caf\xe9\r\nX-Padded: \t caf\xe9 \t\r\nX-After: ok\r\n\r\n";
    let mut reader = ResponseReader::new(HttpLimits::default(), "HEAD");
    reader.handle_input(r);
    let Some(ResponseEvent::Head(head)) = reader.poll_event() else {
        panic!("expected the head");
    };
    assert_eq!(head.header("VARY"), Some("a"));
    assert_eq!(head.header_all("vary").collect::<Vec<_>>(), ["a", "b , c"]);
    assert_eq!(
        head.header_tokens("Vary").collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    assert_eq!(head.header("x-empty"), Some(""));
    assert_eq!(head.header("x-latin"), Some("caf\u{fffd}"));
    assert_eq!(head.header("X-PADDED"), Some("caf\u{fffd}"));
    // The fields after a value read lossily are where they were.
    assert_eq!(head.header("x-after"), Some("ok"));
    let names: Vec<&str> = head.headers().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["Vary", "vary", "X-Empty", "X-Latin", "X-Padded", "X-After"]
    );
    assert_eq!(head.header("missing"), None);
    assert!(head.is_success());
    assert_eq!(
        reader.poll_event(),
        Some(ResponseEvent::End { keep_alive: true })
    );
}

#[test]
fn slow_heads_cost_linear_time() {
    let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
    while head.len() < 60 * 1024 {
        head.extend_from_slice(b"X-Filler: 0123456789abcdef\r\n");
    }
    head.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    let limits = HttpLimits {
        max_headers: 10_000,
        ..HttpLimits::default()
    };
    let mut reader = ResponseReader::new(limits, "GET");
    for b in &head {
        reader.handle_input(std::slice::from_ref(b));
    }
    assert!(matches!(reader.poll_event(), Some(ResponseEvent::Head(_))));
    assert_eq!(
        reader.poll_event(),
        Some(ResponseEvent::End { keep_alive: true })
    );
}

/// A chunk-size line that trickles in a byte at a time is searched for its end once, not
/// once per byte: 512 KiB of extensions (under a limit raised to 1 MiB) take about half a
/// second in a debug build, where searching the whole line again for every byte took
/// minutes (about 1.4 × 10^11 bytes looked at). Under the default 4 KiB limit that
/// search cost some 2,000 bytes looked at per byte received.
#[test]
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn slow_chunk_lines_cost_linear_time() {
    let mut input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;a=".to_vec();
    input.resize(input.len() + 512 * 1024, b'b');
    input.extend_from_slice(b"\r\nabc\r\n0\r\n\r\n");
    let limits = HttpLimits {
        max_chunk_size_line: 1 << 20,
        ..HttpLimits::default()
    };
    let mut reader = ResponseReader::new(limits, "GET");
    let started = std::time::Instant::now();
    let mut events = Vec::new();
    for b in &input {
        reader.handle_input(std::slice::from_ref(b));
        events.extend(std::iter::from_fn(|| reader.poll_event()));
    }
    let took = started.elapsed();
    let body: Vec<u8> = (events.iter())
        .filter_map(|e| match e {
            ResponseEvent::Body(b) => Some(b.as_slice()),
            _ => None,
        })
        .flatten()
        .copied()
        .collect();
    assert_eq!(body, b"abc");
    assert!(matches!(events[0], ResponseEvent::Head(_)));
    assert_eq!(
        events.last(),
        Some(&ResponseEvent::End { keep_alive: true })
    );
    // Linear reading takes about half a second: the bound leaves a wide margin.
    assert!(took < std::time::Duration::from_secs(25), "took {took:?}");
}

#[test]
fn fuzz_entry_point_on_the_transcripts() {
    let inputs: &[&[u8]] = &[
        b"\x05HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 204 No\r\n\r\n",
        b"\xc3HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x\r\nok\r\n0\r\nA: b\r\n\r\n",
        b"\x81HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nbody",
    ];
    for input in inputs {
        crate::fuzzing::http::http_response(input);
    }
}

/// Past the slots kept on the stack, a head is parsed again with slots on the heap: the
/// limit and the order of the fields are the same on both sides of that boundary.
#[test]
fn many_fields_keep_their_order_and_limit() {
    for (fields, limit) in [(23, 30), (24, 30), (25, 30), (29, 30), (30, 30), (31, 30)] {
        let mut head = String::from("HTTP/1.1 200 OK\r\n");
        for i in 0..fields - 1 {
            head.push_str(&format!("X-{i}: {i}\r\n"));
        }
        head.push_str("Content-Length: 0\r\n\r\n");
        let limits = HttpLimits {
            max_headers: limit,
            ..HttpLimits::default()
        };
        let mut reader = ResponseReader::new(limits, "GET");
        reader.handle_input(head.as_bytes());
        match reader.poll_event() {
            Some(ResponseEvent::Head(h)) if fields <= limit => {
                assert_eq!(h.headers().len(), fields);
                for (i, (name, value)) in h.headers().take(fields - 1).enumerate() {
                    assert_eq!((name, value), (&*format!("X-{i}"), &*i.to_string()));
                }
                assert_eq!(h.header("content-length"), Some("0"));
            }
            Some(ResponseEvent::Error(ResponseError::TooManyHeaders { limit: l })) => {
                assert!(fields > limit, "{fields} fields refused");
                assert_eq!(l, limit);
            }
            other => panic!("{fields} fields, limit {limit}: {other:?}"),
        }
    }
}
