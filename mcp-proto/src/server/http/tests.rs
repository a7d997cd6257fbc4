use crate::Instant;

use serde_json::{Value, json};

use super::validate::origin_allowed;
use super::*;
use crate::server::example;
use crate::server::{Tool, ToolCall, ToolOutcome};

mod cors;
mod deferred;
mod eviction;
mod hostile_requests;
mod listens;
mod room;
mod secrets;
mod shared;
mod streams;
mod task_results;
mod version_headers;

// ----- the request reader -------------------------------------------------------------

type Outcome = Vec<Result<HttpRequest, HttpRequestError>>;

/// Feeds `pieces` (then EOF when `eof`) and collects every request and error.
fn read(limits: &HttpRequestLimits, pieces: &[&[u8]], eof: bool) -> Outcome {
    let mut reader = HttpRequestReader::new(limits.clone());
    let mut out = Vec::new();
    for piece in pieces {
        reader.handle_input(piece);
        while let Some(r) = reader.poll_request() {
            out.push(r);
        }
    }
    if eof {
        reader.handle_eof();
    }
    while let Some(r) = reader.poll_request() {
        out.push(r);
    }
    out
}

/// Whole, byte by byte, and split at every point: the same outcome every time.
fn invariant(limits: &HttpRequestLimits, input: &[u8], eof: bool) -> Outcome {
    let whole = read(limits, &[input], eof);
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(read(limits, &bytes, eof), whole, "byte by byte");
    for i in 0..=input.len() {
        let (a, b) = input.split_at(i);
        assert_eq!(read(limits, &[a, b], eof), whole, "split at {i}");
    }
    whole
}

/// As [`read`], every request given back to the reader once taken (as the connection
/// does, so that its buffers hold the next one), and each request's `Expect: 100-continue`
/// signal recorded after every piece.
fn read_recycling(limits: &HttpRequestLimits, pieces: &[&[u8]]) -> (Outcome, usize) {
    let mut reader = HttpRequestReader::new(limits.clone());
    let (mut out, mut continues) = (Vec::new(), 0);
    for piece in pieces {
        reader.handle_input(piece);
        continues += usize::from(reader.take_expect_continue());
        while let Some(r) = reader.poll_request() {
            out.push(r.clone());
            if let Ok(r) = r {
                reader.recycle(r);
            }
            continues += usize::from(reader.take_expect_continue());
        }
    }
    reader.handle_eof();
    while let Some(r) = reader.poll_request() {
        out.push(r.clone());
        if let Ok(r) = r {
            reader.recycle(r);
        }
    }
    (out, continues)
}

#[test]
fn reader_reads_every_request_alike_into_the_buffers_of_the_last() {
    // Requests one after the other on one connection, every one given back once taken:
    // each is read as a reader of its own reads it (the requests, the error that ends
    // the connection), at every split point, whatever the request before it held.
    let limits = HttpRequestLimits {
        max_head_bytes: 24 * 1024,
        max_body_bytes: 24 * 1024,
        ..HttpRequestLimits::default()
    };
    let big = "v".repeat(12 * 1024);
    let many: String = (0..60).map(|i| format!("X-{i}: {i}\r\n")).collect();
    let requests: Vec<Vec<u8>> = vec![
        format!("POST /a HTTP/1.1\r\nHost: h\r\nX-Big: {big}\r\nContent-Length: 10000\r\n\r\n{}", "b".repeat(10_000)).into_bytes(),
        b"GET /b HTTP/1.1\r\nHost: h\r\n\r\n".to_vec(),
        format!("POST /c HTTP/1.1\r\nHost: h\r\n{many}Content-Length: 3\r\nExpect: 100-continue\r\n\r\nabc").into_bytes(),
        b"POST /d HTTP/1.1\r\nhost: h\r\ncontent-length: 1\r\n\r\nz".to_vec(),
        b"GET /e HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".to_vec(),
        format!("POST /f HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer {big}\r\nContent-Length: 0\r\n\r\n").into_bytes(),
        b"GET /g HTTP/1.1\r\nHost: h\r\nX: \r\n\r\n".to_vec(),
    ];
    let endings: [&[u8]; 5] = [
        b"",
        b"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
        b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        b"GET /x HTTP/1.1\r\n\r\n",
        b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\n\r\nabc",
    ];
    // Each request (and ending) read by a reader of its own.
    let alone = |input: &[u8]| read(&limits, &[input], true);
    let mut r = 0x2545_f491_4f6c_dd1d_u64;
    for round in 0..60 {
        let mut input = Vec::new();
        let mut want = Vec::new();
        let mut continues = 0;
        for _ in 0..1 + xorshift(&mut r) % 6 {
            let request = &requests[(xorshift(&mut r) as usize) % requests.len()];
            input.extend_from_slice(request);
            want.extend(alone(request));
            continues += usize::from(request.windows(12).any(|w| w == b"100-continue"));
        }
        let ending = endings[(xorshift(&mut r) as usize) % endings.len()];
        input.extend_from_slice(ending);
        want.extend(alone(ending));
        let (whole, _) = read_recycling(&limits, &[&input]);
        assert_eq!(whole, want, "round {round}, whole");
        // Byte by byte every body arrives after its head: every 100-continue is asked.
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(
            read_recycling(&limits, &bytes),
            (want.clone(), continues),
            "round {round}"
        );
        for _ in 0..8 {
            let mut cuts: Vec<usize> = (0..1 + xorshift(&mut r) % 5)
                .map(|_| (xorshift(&mut r) as usize) % (input.len() + 1))
                .collect();
            cuts.push(input.len());
            cuts.sort_unstable();
            let mut from = 0;
            let pieces: Vec<&[u8]> = cuts
                .iter()
                .map(|&to| {
                    let piece = &input[from..to];
                    from = to;
                    piece
                })
                .collect();
            assert_eq!(
                read_recycling(&limits, &pieces).0,
                want,
                "round {round}, {cuts:?}"
            );
        }
    }
}

const PIPELINE: &[u8] = b"\r\nPOST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\
    Mcp-Name:  =?base64?SGk=?= \r\n\r\nhello\
    GET /mcp?q=1 HTTP/1.1\nHost: x\n\n\
    POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\nConnection: close\r\n\r\n{}\
    POST /ignored HTTP/1.1\r\nHost: x\r\n\r\n";

#[test]
fn reader_chunking_invariance() {
    let limits = HttpRequestLimits::default();
    let got = invariant(&limits, PIPELINE, true);
    assert_eq!(got.len(), 3, "{got:?}");
    let r0 = got[0].as_ref().unwrap();
    assert_eq!((r0.method(), r0.path()), ("POST", "/mcp"));
    assert_eq!(r0.body, b"hello");
    assert_eq!(r0.header_bytes("mcp-name"), Some(&b"=?base64?SGk=?="[..]));
    assert!(r0.keep_alive());
    let r1 = got[1].as_ref().unwrap();
    assert_eq!((r1.method(), r1.target()), ("GET", "/mcp?q=1"));
    assert_eq!(r1.path(), "/mcp");
    let r2 = got[2].as_ref().unwrap();
    assert_eq!(r2.body, b"{}");
    assert!(!r2.keep_alive());
    // Without EOF, the same (the closing request ends the connection anyway).
    assert_eq!(invariant(&limits, PIPELINE, false), got);
    // With trailing garbage after a keep-alive request: one request, then nothing until
    // EOF, which makes the rest a truncated request.
    let input = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nxPOST /m";
    let got = invariant(&limits, input, true);
    assert_eq!(got.len(), 2);
    assert_eq!(got[1], Err(HttpRequestError::Truncated));
    assert_eq!(invariant(&limits, input, false).len(), 1);
}

#[test]
fn reader_bodies_are_whole_and_sized_to_their_length() {
    // Bodies larger and smaller than what is allocated ahead, in reads of every size, with
    // the next request in the same read: each body is intact and its buffer never
    // outgrows its declared length.
    for len in [10, 70_000, 300_000] {
        let body: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        let mut input =
            format!("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\n\r\n").into_bytes();
        input.extend_from_slice(&body);
        input.extend_from_slice(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        for chunk in [1, 7, 16 * 1024, 64 * 1024, input.len()] {
            if len > 10 && chunk < 7 {
                continue; // one byte at a time over 70 KB is slow, and covered small
            }
            let mut reader = HttpRequestReader::default();
            for piece in input.chunks(chunk) {
                reader.handle_input(piece);
            }
            let got: Vec<_> = std::iter::from_fn(|| reader.poll_request()).collect();
            assert_eq!(got.len(), 2, "len {len}, chunk {chunk}");
            let first = got[0].as_ref().unwrap();
            assert!(first.body == body, "len {len}, chunk {chunk}");
            assert!(first.body.capacity() <= len.max(128 * 1024), "len {len}");
            assert_eq!(got[1].as_ref().unwrap().method(), "GET");
        }
    }
}

#[test]
fn reader_gives_back_a_pipelined_burst() {
    // Sixteen requests fill the queue, so the large one behind them waits in the
    // reader's buffer; once everything was taken, the small requests that follow must
    // not leave the connection holding that buffer's high-water mark for its life.
    let mut burst = Vec::new();
    for _ in 0..16 {
        burst.extend_from_slice(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    let len = 4 * 1024 * 1024;
    burst.extend_from_slice(
        format!("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\n\r\n").as_bytes(),
    );
    burst.resize(burst.len() + len, b'x');
    let mut reader = HttpRequestReader::default();
    reader.handle_input(&burst);
    let taken = std::iter::from_fn(|| reader.poll_request()).count();
    assert_eq!(taken, 17);
    for _ in 0..4 {
        reader.handle_input(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\nGET /mc");
        reader.handle_input(b"p HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(std::iter::from_fn(|| reader.poll_request()).count(), 2);
    }
    assert!(
        reader.held_bytes() <= 256 * 1024,
        "an idle connection holds {} bytes",
        reader.held_bytes()
    );
}

#[test]
fn reader_errors_and_limits() {
    let limits = HttpRequestLimits {
        max_head_bytes: 200,
        max_headers: 4,
        max_body_bytes: 10,
        ..HttpRequestLimits::default()
    };
    let first_err = |input: &[u8]| {
        let got = invariant(&limits, input, true);
        got.into_iter().find_map(Result::err)
    };
    let big = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nX: {}\r\n\r\n",
        "a".repeat(300)
    );
    let cases: Vec<(Vec<u8>, HttpRequestError, u16)> = vec![
        (
            big.into_bytes(),
            HttpRequestError::HeadTooLarge { limit: 200 },
            431,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\n\r\n".to_vec(),
            HttpRequestError::TooManyHeaders { limit: 4 },
            431,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(),
            HttpRequestError::ChunkedBody,
            411,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n".to_vec(),
            HttpRequestError::UnsupportedTransferEncoding,
            501,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
                .to_vec(),
            HttpRequestError::ConflictingFraming,
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n".to_vec(),
            HttpRequestError::BodyTooLarge { limit: 10 },
            413,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
                .to_vec(),
            HttpRequestError::ConflictingContentLength,
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n".to_vec(),
            HttpRequestError::InvalidContentLength,
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n".to_vec(),
            HttpRequestError::InvalidHead {
                reason: "missing Host header",
            },
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n".to_vec(),
            HttpRequestError::InvalidHead {
                reason: "more than one Host header",
            },
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nMcp-Session-Id: a\r\nmcp-session-id: b\r\n\r\n"
                .to_vec(),
            HttpRequestError::InvalidHead {
                reason: "more than one Mcp-Session-Id header",
            },
            400,
        ),
        (
            b"POST /mcp#frag HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".to_vec(),
            HttpRequestError::InvalidHead {
                reason: "a fragment (#) in the request target",
            },
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nOrigin: http://127.0.0.1\r\n\
              origin: http://evil.example\r\n\r\n"
                .to_vec(),
            HttpRequestError::InvalidHead {
                reason: "more than one Origin header",
            },
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab".to_vec(),
            HttpRequestError::Truncated,
            400,
        ),
        (
            b"POST / HTTP/2.0\r\nHost: x\r\n\r\n".to_vec(),
            HttpRequestError::InvalidHead {
                reason: "invalid HTTP version",
            },
            400,
        ),
    ];
    for (input, want, status) in cases {
        let got = first_err(&input);
        assert_eq!(
            got.as_ref(),
            Some(&want),
            "{}",
            String::from_utf8_lossy(&input)
        );
        assert_eq!(want.status(), status);
        let response = HttpResponse::for_request_error(&want);
        assert_eq!(response.status, status);
        assert!(response.closes_connection());
    }
    // An HTTP/1.0 request closes unless it asks for keep-alive.
    let got = invariant(
        &limits,
        b"POST / HTTP/1.0\r\n\r\nPOST / HTTP/1.0\r\n\r\n",
        true,
    );
    assert_eq!(got.len(), 1);
    let got = invariant(
        &limits,
        b"POST / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nPOST / HTTP/1.0\r\n\r\n",
        true,
    );
    assert_eq!(got.len(), 2);
}

#[test]
fn reader_many_header_fields() {
    // Up to the limit (beyond what is parsed on the stack) every field is kept, in order;
    // one more is 431.
    let limits = HttpRequestLimits::default();
    let head = |fields: usize| {
        let mut head = String::from("POST /mcp HTTP/1.1\r\nHost: x\r\n");
        for i in 1..fields {
            head.push_str(&format!("X-{i}: v{i}\r\n"));
        }
        head.push_str("\r\n");
        head.into_bytes()
    };
    let got = read(&limits, &[&head(100)], true);
    let request = got[0].as_ref().unwrap();
    assert_eq!(request.headers().len(), 100);
    let last = request.headers().last().unwrap();
    assert_eq!(last, ("X-99", &b"v99"[..]));
    assert_eq!(request.header("x-50"), Some("v50"));
    assert_eq!(
        read(&limits, &[&head(101)], true),
        vec![Err(HttpRequestError::TooManyHeaders { limit: 100 })]
    );
}

#[test]
fn reader_pipelining_is_bounded() {
    let limits = HttpRequestLimits {
        max_head_bytes: 64,
        max_body_bytes: 16,
        max_queued_requests: 2,
        ..HttpRequestLimits::default()
    };
    let one = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut reader = HttpRequestReader::new(limits);
    reader.handle_input(&one.repeat(2));
    assert!(!reader.wants_input(), "two requests wait: parsing pauses");
    // 80 bytes are held; more than 64 + 16 fails after the queued requests.
    reader.handle_input(&one.repeat(3)[..80]);
    reader.handle_input(b"x");
    let got: Vec<_> = std::iter::from_fn(|| reader.poll_request()).collect();
    assert_eq!(got.len(), 3);
    assert!(got[0].is_ok() && got[1].is_ok());
    assert_eq!(
        got[2],
        Err(HttpRequestError::PipelineOverflow { limit: 80 })
    );
    assert!(reader.is_finished());

    // Polling resumes parsing of what was held.
    let mut reader = HttpRequestReader::new(HttpRequestLimits {
        max_queued_requests: 1,
        ..HttpRequestLimits::default()
    });
    reader.handle_input(&one.repeat(3));
    reader.handle_eof();
    assert_eq!(std::iter::from_fn(|| reader.poll_request()).count(), 3);
    assert!(reader.is_finished());
}

/// Pipelined requests taken one at a time cost their own size each, not that of all the
/// input held behind them: 50,000 small requests given in one piece with a 32 MiB body
/// after them (as a driver reading in large pieces may) are read in well under a second.
/// When each request taken moved everything held behind it, they took minutes (about
/// 1.7 × 10^12 bytes moved).
#[test]
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn reader_pipelined_requests_cost_linear_time() {
    let limits = HttpRequestLimits {
        max_head_bytes: 2 << 20,
        max_body_bytes: 32 << 20,
        ..HttpRequestLimits::default()
    };
    let count = 50_000;
    let mut input = b"GET / HTTP/1.1\nHost:a\n\n".repeat(count);
    input.extend_from_slice(
        format!("POST / HTTP/1.1\nHost:a\nContent-Length:{}\n\n", 32 << 20).as_bytes(),
    );
    input.resize(input.len() + (32 << 20), b'x');
    let mut reader = HttpRequestReader::new(limits);
    let started = std::time::Instant::now();
    reader.handle_input(&input);
    let mut read = 0;
    while let Some(request) = reader.poll_request() {
        let request = request.expect("a request");
        read += 1;
        if read <= count {
            assert_eq!(request.method(), "GET");
        } else {
            assert_eq!(request.body.len(), 32 << 20);
        }
    }
    let took = started.elapsed();
    assert_eq!(read, count + 1);
    assert!(reader.wants_input() && !reader.is_finished());
    // Linear reading takes about half a second in a debug build: the bound leaves a wide margin.
    assert!(
        took < std::time::Duration::from_secs(30),
        "{read} requests took {took:?}"
    );
}

#[test]
fn reader_expect_continue_and_clean_eof() {
    let mut reader = HttpRequestReader::default();
    reader.handle_input(
        b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
    );
    assert!(reader.take_expect_continue());
    assert!(!reader.take_expect_continue());
    assert!(reader.poll_request().is_none());
    reader.handle_input(b"{}");
    assert_eq!(reader.poll_request().unwrap().unwrap().body, b"{}");
    reader.handle_input(b"\r\n");
    reader.handle_eof();
    assert!(
        reader.poll_request().is_none(),
        "EOF between requests is clean"
    );
    assert!(reader.is_finished());
}

// ----- the endpoint -------------------------------------------------------------------

const V: &str = "2026-07-28";

/// Any instant: the machine only passes `now` along.
#[allow(clippy::disallowed_methods)]
fn now() -> Instant {
    Instant::ZERO
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn post(body: &Value, headers: &[(&str, &str)]) -> HttpRequest {
    let mut r = HttpRequest::new("POST", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Content-Type", "application/json")
        .with_body(serde_json::to_vec(body).unwrap());
    for (n, v) in headers {
        r = r.with_header(*n, v);
    }
    r
}

/// A modern request with the right headers (`name`: the `Mcp-Name` value).
fn modern(id: i64, method: &str, mut params: Value, name: Option<&str>) -> HttpRequest {
    params["_meta"] = meta();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut headers = vec![("MCP-Protocol-Version", V), ("Mcp-Method", method)];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    post(&body, &headers)
}

fn complete(reply: HttpReply) -> HttpResponse {
    match reply {
        HttpReply::Complete(r) => r,
        HttpReply::Stream(s) => panic!("expected a complete response, got a stream {s:?}"),
    }
}

fn stream(reply: HttpReply) -> HttpStream {
    match reply {
        HttpReply::Stream(s) => s,
        HttpReply::Complete(r) => panic!("expected a stream, got {r:?}"),
    }
}

fn body_json(r: &HttpResponse) -> Value {
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
    serde_json::from_slice(&r.body).unwrap()
}

fn error_code(r: &HttpResponse) -> i64 {
    body_json(r)["error"]["code"].as_i64().unwrap()
}

/// The `data:` payloads of an SSE body.
fn sse_messages(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn endpoint() -> HttpEndpoint {
    HttpEndpoint::new(example::server())
}

#[test]
fn modern_requests_and_header_validation() {
    let mut ep = endpoint();
    let r = complete(ep.handle_request(now(), &modern(1, "server/discover", json!({}), None)));
    assert_eq!(r.status, 200);
    let v = body_json(&r);
    assert_eq!(v["id"], 1);
    assert_eq!(v["result"]["resultType"], "complete");
    assert!(r.header("mcp-session-id").is_none());

    let call = json!({"name": "add", "arguments": {"a": 2, "b": 3}});
    let r = complete(ep.handle_request(now(), &modern(2, "tools/call", call.clone(), Some("add"))));
    assert_eq!(body_json(&r)["result"]["content"][0]["text"], "5");
    // Mcp-Name compared after decoding: the Base64 form of "add" is fine.
    let r = complete(ep.handle_request(
        now(),
        &modern(3, "tools/call", call.clone(), Some("=?base64?YWRk?=")),
    ));
    assert_eq!(r.status, 200);
    // A mismatch echoes at most 64 bytes of each value (a 60 KB header was echoed whole).
    let long = "n".repeat(60_000);
    let r = complete(ep.handle_request(now(), &modern(4, "tools/call", call.clone(), Some(&long))));
    let message = body_json(&r)["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains(&long[..64]), "{message}");
    assert!(message.len() < 200, "{} bytes", message.len());

    let cases: Vec<(HttpRequest, u16, i64)> = vec![
        // Missing MCP-Protocol-Version.
        (
            post(
                &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta()}}),
                &[("Mcp-Method", "tools/list")],
            ),
            400,
            -32020,
        ),
        // Mcp-Name differs from the body.
        (
            modern(7, "tools/call", call.clone(), Some("echo")),
            400,
            -32020,
        ),
        // Mcp-Name missing, or not decodable.
        (modern(7, "tools/call", call.clone(), None), 400, -32020),
        (
            modern(7, "tools/call", call.clone(), Some("=?base64?YWR?=")),
            400,
            -32020,
        ),
        // Mcp-Method differs (values are case-sensitive).
        (
            post(
                &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta()}}),
                &[("MCP-Protocol-Version", V), ("Mcp-Method", "TOOLS/LIST")],
            ),
            400,
            -32020,
        ),
        // Header and body both unsupported: -32022.
        (
            post(
                &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {
                    "io.modelcontextprotocol/protocolVersion": "v999.0.0",
                    "io.modelcontextprotocol/clientCapabilities": {}}}}),
                &[
                    ("MCP-Protocol-Version", "v999.0.0"),
                    ("Mcp-Method", "tools/list"),
                ],
            ),
            400,
            -32022,
        ),
        // Header valid, body unsupported: -32020, not -32022.
        (
            post(
                &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {
                    "io.modelcontextprotocol/protocolVersion": "v999.0.0",
                    "io.modelcontextprotocol/clientCapabilities": {}}}}),
                &[("MCP-Protocol-Version", V), ("Mcp-Method", "tools/list")],
            ),
            400,
            -32020,
        ),
        // Header valid, no _meta: -32602.
        (
            post(
                &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
                &[("MCP-Protocol-Version", V), ("Mcp-Method", "tools/list")],
            ),
            400,
            -32602,
        ),
        // Unknown method: 404.
        (modern(7, "nope/nothing", json!({}), None), 404, -32601),
        // Missing client capability for confirm's form: -32021.
        (
            modern(7, "tools/call", json!({"name": "confirm"}), Some("confirm")),
            400,
            -32021,
        ),
    ];
    for (request, status, code) in cases {
        let r = complete(ep.handle_request(now(), &request));
        assert_eq!(r.status, status, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(error_code(&r), code, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(body_json(&r)["id"], 7);
    }
    let mut confirm = modern(8, "tools/call", json!({"name": "confirm"}), Some("confirm"));
    let mut body: Value = serde_json::from_slice(&confirm.body).unwrap();
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {}});
    confirm.body = serde_json::to_vec(&body).unwrap();
    let r = complete(ep.handle_request(now(), &confirm));
    assert_eq!(body_json(&r)["result"]["resultType"], "input_required");
}

#[test]
fn transport_level_answers() {
    let mut ep = endpoint();
    let r = complete(ep.handle_request(
        now(),
        &HttpRequest::new("GET", "/mcp").with_header("Host", "x"),
    ));
    assert_eq!((r.status, r.header("allow")), (405, Some("POST")));
    let r = complete(ep.handle_request(
        now(),
        &HttpRequest::new("DELETE", "/mcp").with_header("Host", "x"),
    ));
    assert_eq!(r.status, 405);
    let r = complete(ep.handle_request(
        now(),
        &HttpRequest::new("HEAD", "/mcp").with_header("Host", "x"),
    ));
    assert_eq!((r.status, r.body.len()), (405, 0));
    // A refusal with a body: `Content-Length` is the length a GET's answer would have
    // had (RFC 9110 §8.6), not 0.
    let refused = |method| {
        HttpRequest::new(method, "/mcp")
            .with_header("Host", "x")
            .with_header("Origin", "http://evil.example")
    };
    let get = complete(ep.handle_request(now(), &refused("GET")));
    let r = complete(ep.handle_request(now(), &refused("HEAD")));
    assert_eq!((r.status, r.body.len()), (get.status, 0));
    let mut wire = Vec::new();
    r.write(&mut wire);
    let wire = String::from_utf8(wire).unwrap();
    assert!(!get.body.is_empty());
    assert!(
        wire.contains(&format!("Content-Length: {}\r\n", get.body.len())),
        "{wire}"
    );
    assert!(wire.ends_with("\r\n\r\n"), "{wire}");
    let r = complete(ep.handle_request(
        now(),
        &HttpRequest::new("POST", "/other").with_header("Host", "x"),
    ));
    assert_eq!(r.status, 404);

    let discover = modern(1, "server/discover", json!({}), None);
    let evil = discover
        .clone()
        .with_header("Origin", "http://evil.example");
    let r = complete(ep.handle_request(now(), &evil));
    assert_eq!(r.status, 403);
    let local = discover
        .clone()
        .with_header("Origin", "http://localhost:5173");
    assert_eq!(complete(ep.handle_request(now(), &local)).status, 200);

    let bad = post(&json!(null), &[]).with_body(b"{not json".to_vec());
    let r = complete(ep.handle_request(now(), &bad));
    assert_eq!((r.status, error_code(&r)), (400, -32700));
    assert_eq!(body_json(&r)["id"], Value::Null);
    let bad = post(&json!({"jsonrpc": "1.0", "id": 4, "method": "x"}), &[]);
    let r = complete(ep.handle_request(now(), &bad));
    assert_eq!((r.status, error_code(&r)), (400, -32600));
    assert_eq!(body_json(&r)["id"], 4);
    // Nesting past the limit: refused before the body is parsed, with the id.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"a":{}{}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let bad = post(&json!(null), &[]).with_body(deep.into_bytes());
    let r = complete(ep.handle_request(now(), &bad));
    assert_eq!((r.status, error_code(&r)), (400, -32600));
    assert_eq!(body_json(&r)["id"], 5);
    // 700 KB that would take over 64 MiB once parsed: refused before it is, with the id.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"echo",
           "arguments":{{"text":"x","p":[{}]}}}}}}"#,
        vec![r#"{"":0}"#; 100_000].join(",")
    );
    let r = complete(ep.handle_request(now(), &post(&json!(null), &[]).with_body(big)));
    assert_eq!((r.status, error_code(&r)), (400, -32600));
    assert_eq!(body_json(&r)["id"], 8);
    let message = body_json(&r)["error"]["message"].to_string();
    assert!(message.contains("(max_parsed_bytes)"), "{message}");
    // Params that are JSON but cannot be read (a number out of range, a lone surrogate)
    // are named as such, not taken for params without `_meta`.
    for (value, why) in [
        ("1e400", "number out of range"),
        (r#""\ud800""#, "hex escape"),
    ] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"echo",
               "arguments":{{"text":{value}}},"_meta":{{}}}}}}"#
        );
        let bad = post(&json!(null), &[]).with_body(body.into_bytes());
        let r = complete(ep.handle_request(now(), &bad));
        assert_eq!((r.status, error_code(&r)), (400, -32602));
        let message = body_json(&r)["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            message.starts_with("`params`: ") && message.contains(why),
            "{message}"
        );
    }
    let text = discover
        .clone()
        .without_header("Content-Type")
        .with_header("Content-Type", "text/plain");
    assert_eq!(complete(ep.handle_request(now(), &text)).status, 415);

    let note = post(
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        &[],
    );
    let r = complete(ep.handle_request(now(), &note));
    assert_eq!((r.status, r.body.len()), (202, 0));

    let closing = discover.with_header("Connection", "close");
    assert!(complete(ep.handle_request(now(), &closing)).closes_connection());
}

#[test]
fn origins() {
    for ok in [
        "http://localhost",
        "http://localhost:3000",
        "https://LOCALHOST:1",
        "http://127.0.0.1:65535",
        "http://[::1]:8080",
        "https://app.example",
    ] {
        assert!(
            origin_allowed(ok.as_bytes(), &["https://app.example".into()]),
            "{ok}"
        );
    }
    for bad in [
        "null",
        "http://localhost.evil.com",
        "http://127.0.0.1.nip.io",
        "http://localhost:",
        "http://localhost:123456",
        "http://localhost/",
        "ftp://localhost",
        "http://[::1]x",
        "http://app.example",
    ] {
        assert!(
            !origin_allowed(bad.as_bytes(), &["https://app.example".into()]),
            "{bad}"
        );
    }
}

fn legacy(id: i64, method: &str, params: Value) -> HttpRequest {
    post(
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        &[("MCP-Protocol-Version", "2025-06-18")],
    )
}

fn initialize(ep: &mut HttpEndpoint, caps: Value) {
    let init = post(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": caps,
            "clientInfo": {"name": "t", "version": "1"}}}),
        &[],
    );
    let r = complete(ep.handle_request(now(), &init));
    assert_eq!(r.status, 200);
    assert_eq!(body_json(&r)["result"]["protocolVersion"], "2025-06-18");
    assert!(r.header("mcp-session-id").is_none());
}

#[test]
fn stateless_legacy() {
    let mut ep = endpoint();
    // Before any initialize: the machine's "Server not initialized", 400.
    let r = complete(ep.handle_request(now(), &legacy(1, "tools/list", json!({}))));
    assert_eq!((r.status, error_code(&r)), (400, -32600));
    initialize(&mut ep, json!({}));
    let r = complete(ep.handle_request(now(), &legacy(1, "tools/list", json!({}))));
    assert_eq!(r.status, 200);
    assert_eq!(body_json(&r)["result"]["tools"][0]["name"], "echo");
    // A second client's initialize works too (the handshake state is replaced).
    initialize(&mut ep, json!({}));
    // Unsupported legacy header version: 400.
    let r = complete(ep.handle_request(
        now(),
        &post(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            &[("MCP-Protocol-Version", "2024-11-05")],
        ),
    ));
    assert_eq!((r.status, error_code(&r)), (400, -32600));
    // confirm without the elicitation capability: an isError result, no waiting.
    let r =
        complete(ep.handle_request(now(), &legacy(3, "tools/call", json!({"name": "confirm"}))));
    assert_eq!(body_json(&r)["result"]["isError"], true);
}

#[test]
fn legacy_input_over_an_open_stream() {
    let mut ep = endpoint();
    initialize(&mut ep, json!({"elicitation": {}}));
    let s = stream(ep.handle_request(now(), &legacy(5, "tools/call", json!({"name": "confirm"}))));
    assert_eq!(s.response().header("x-accel-buffering"), Some("no"));
    let first = sse_messages(&s.response().body);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0]["method"], "elicitation/create");
    let mut wire = Vec::new();
    s.write_head(&mut wire);
    let text = String::from_utf8_lossy(&wire).into_owned();
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("Transfer-Encoding: chunked\r\n"), "{text}");
    assert!(
        text.contains("Content-Type: text/event-stream\r\n"),
        "{text}"
    );
    assert!(!text.contains("Content-Length"), "{text}");
    let mut out = Vec::new();
    assert_eq!(ep.poll_stream(&s, &mut out), StreamStatus::Open);
    assert!(out.is_empty());
    assert!(!ep.stream_ready(&s), "nothing to send yet");
    assert_eq!(ep.poll_ready(), None);

    // The client answers the elicitation with a separate POST: 202, and the result
    // arrives on the open stream, which the endpoint names as ready: its driver is
    // woken, never left to poll.
    let answer = json!({"jsonrpc": "2.0", "id": first[0]["id"], "result": {
        "action": "accept", "content": {"proceed": true, "name": "Ada"}}});
    let r = complete(ep.handle_request(now(), &post(&answer, &[])));
    assert_eq!(r.status, 202);
    assert_eq!(ep.poll_ready(), Some(s.id()));
    assert_eq!(ep.poll_ready(), None, "reported once");
    assert!(ep.stream_ready(&s));
    assert_eq!(ep.poll_stream(&s, &mut out), StreamStatus::Finished);
    let text = String::from_utf8_lossy(&out).into_owned();
    assert!(text.ends_with("\r\n0\r\n\r\n"), "{text}");
    let messages = sse_messages(&out);
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["id"], 5, "the client's id is restored");
    assert_eq!(
        messages[0]["result"]["content"][0]["text"],
        "accepted: proceed=true name=Ada"
    );
    assert_eq!(ep.open_streams(), 0);
}

/// A malformed answer to the server's request (both `result` and `error`, neither,
/// nested too deep, too large once parsed) is refused with `400` and id null, and is the answer the call was
/// waiting for, as over stdio: the call ended only at its timeout, if ever.
#[test]
fn a_malformed_answer_over_http_ends_the_call_waiting_for_it() {
    let too_deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    // Over 64 MiB once parsed.
    let too_large = vec![r#"{"":0}"#; 100_000].join(",");
    let malformed = [
        r#"{"jsonrpc":"2.0","id":ID,"result":{"action":"decline"},"error":{"code":1,"message":"x"}}"#
            .to_owned(),
        r#"{"jsonrpc":"2.0","id":ID}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":ID,"result":{{"action":"decline","x":{too_deep}}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":ID,"result":{{"action":"decline","x":[{too_large}]}}}}"#),
    ];
    for body in malformed {
        let mut ep = endpoint();
        initialize(&mut ep, json!({"elicitation": {}}));
        let s =
            stream(ep.handle_request(now(), &legacy(5, "tools/call", json!({"name": "confirm"}))));
        let asked = sse_messages(&s.response().body)[0]["id"].to_string();
        let post = HttpRequest::new("POST", "/mcp")
            .with_header("Host", "127.0.0.1")
            .with_header("Content-Type", "application/json")
            .with_header("Accept", "application/json, text/event-stream")
            .with_body(body.replace("ID", &asked));
        let r = complete(ep.handle_request(now(), &post));
        assert_eq!((r.status, error_code(&r)), (400, -32600), "{body}");
        assert_eq!(body_json(&r)["id"], Value::Null, "{body}");
        assert_eq!(ep.poll_ready(), Some(s.id()), "{body}");
        let mut out = Vec::new();
        assert_eq!(ep.poll_stream(&s, &mut out), StreamStatus::Finished);
        let answer = &sse_messages(&out)[0];
        assert_eq!(answer["id"], 5, "{answer}");
        assert!(answer.to_string().contains("Invalid request"), "{answer}");
    }
}

#[test]
fn a_posted_cancel_reports_the_stream_it_ends() {
    let mut ep = endpoint();
    let hang = modern(7, "tools/call", json!({"name": "hang"}), Some("hang"));
    let s = stream(ep.handle_request_as(now(), &hang, Some("alice")));
    assert_eq!(ep.poll_ready(), None);
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}});
    assert_eq!(
        complete(ep.handle_request_as(now(), &post(&cancel, &[]), Some("alice"))).status,
        202
    );
    // The end of the stream is output: whoever serves it is told, without polling.
    assert!(ep.stream_ready(&s));
    assert_eq!(ep.poll_ready(), Some(s.id()));
    assert_eq!(ep.poll_ready(), None);
    let mut out = Vec::new();
    assert_eq!(ep.poll_stream(&s, &mut out), StreamStatus::Finished);
    assert_eq!(out, b"0\r\n\r\n");
    assert_eq!(ep.open_streams(), 0);
    // Polled before it was reported: not reported afterwards.
    let s = stream(ep.handle_request_as(now(), &hang, Some("alice")));
    ep.handle_request_as(now(), &post(&cancel, &[]), Some("alice"));
    assert_eq!(ep.poll_stream(&s, &mut Vec::new()), StreamStatus::Finished);
    assert_eq!(ep.poll_ready(), None);
}

#[test]
fn unanswered_calls_stay_open_until_cancelled() {
    let mut ep = HttpEndpoint::with_config(
        example::server(),
        HttpEndpointConfig {
            max_open_streams: 8,
            ..HttpEndpointConfig::default()
        },
    );
    let hang = |id| modern(id, "tools/call", json!({"name": "hang"}), Some("hang"));
    // Two clients of one principal may use the same id.
    let a = stream(ep.handle_request_as(now(), &hang(1), Some("alice")));
    let b = stream(ep.handle_request_as(now(), &hang(1), Some("alice")));
    assert!(a.response().body.is_empty());
    assert_eq!(ep.open_streams(), 2);
    // A principal holds a quarter of the open streams at most.
    let r = complete(ep.handle_request_as(now(), &hang(2), Some("alice")));
    assert_eq!((r.status, error_code(&r)), (503, -32603));
    let message = body_json(&r)["error"]["message"].clone();
    assert!(
        message.as_str().unwrap().contains("this client"),
        "{message}"
    );
    assert_eq!(ep.open_streams(), 2);
    // A posted cancel naming an id two exchanges share is ignored.
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let cancel = post(&cancel, &[]);
    assert_eq!(
        complete(ep.handle_request_as(now(), &cancel, Some("alice"))).status,
        202
    );
    assert_eq!(ep.open_streams(), 2);
    ep.cancel_stream(now(), &a);
    let mut out = Vec::new();
    assert_eq!(ep.poll_stream(&a, &mut out), StreamStatus::Finished);
    assert_eq!(out, b"0\r\n\r\n");
    // Now the id is unique, but neither an anonymous client nor another principal
    // reaches it: nothing ties them to alice's call.
    for who in [None, Some("mallory")] {
        assert_eq!(
            complete(ep.handle_request_as(now(), &cancel, who)).status,
            202
        );
        assert_eq!(ep.open_streams(), 1, "{who:?} cancelled alice's call");
    }
    // Alice's own cancel ends it.
    assert_eq!(
        complete(ep.handle_request_as(now(), &cancel, Some("alice"))).status,
        202
    );
    assert_eq!(ep.poll_stream(&b, &mut Vec::new()), StreamStatus::Finished);
    assert_eq!(ep.open_streams(), 0);
    // Anonymous calls are cancelled by closing their stream only: a posted cancel from
    // anyone (the caller included, since nothing tells them apart) is ignored.
    let anon = stream(ep.handle_request(now(), &hang(1)));
    assert_eq!(complete(ep.handle_request(now(), &cancel)).status, 202);
    assert_eq!(ep.open_streams(), 1);
    ep.cancel_stream(now(), &anon);
    assert_eq!(
        ep.poll_stream(&anon, &mut Vec::new()),
        StreamStatus::Finished
    );
    assert_eq!(ep.open_streams(), 0);
    // HTTP/1.0: the stream is delimited by closing the connection.
    let mut old = hang(3);
    old.version = crate::http::HttpVersion::Http10;
    let s = stream(ep.handle_request(now(), &old));
    assert!(s.closes_connection());
    let mut wire = Vec::new();
    s.write_head(&mut wire);
    assert!(String::from_utf8_lossy(&wire).contains("Connection: close\r\n"));
}

#[test]
fn param_headers_are_checked() {
    let tool = Tool::new(
        "region",
        "mirrors its region",
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"}}}),
        |c: &ToolCall<'_>| ToolOutcome::text(c.arguments.to_string()),
    );
    let mut ep = HttpEndpoint::new(example::server_with(|c| c.tools.push(tool)));
    let mut call = |args: Value, extra: &[(&str, &str)]| {
        let mut r = modern(
            1,
            "tools/call",
            json!({"name": "region", "arguments": args}),
            Some("region"),
        );
        for (n, v) in extra {
            r = r.with_header(*n, v);
        }
        complete(ep.handle_request(now(), &r))
    };
    let ok = call(
        json!({"region": "eu", "count": 42}),
        &[("Mcp-Param-Region", "eu"), ("Mcp-Param-Count", "42.0")],
    );
    assert_eq!(ok.status, 200, "{}", String::from_utf8_lossy(&ok.body));
    let ok = call(json!({"region": null}), &[]);
    assert_eq!(ok.status, 200);
    for (args, headers) in [
        (json!({"region": "eu"}), vec![]),
        (json!({"region": "eu"}), vec![("Mcp-Param-Region", "us")]),
        (json!({"count": 42}), vec![("Mcp-Param-Count", "0x2a")]),
        (
            json!({"region": "é"}),
            vec![("Mcp-Param-Region", "=?base64?w6k?=")],
        ),
    ] {
        let r = call(args, &headers);
        assert_eq!((r.status, error_code(&r)), (400, -32020));
    }
    let ok = call(
        json!({"region": "é"}),
        &[("mcp-param-region", "=?base64?w6k=?=")],
    );
    assert_eq!(ok.status, 200);
}

/// The declarations are remembered between calls, but never past a change of the tool's
/// schema: the headers a call needs follow the schema it has now.
#[test]
fn param_headers_follow_a_changed_schema() {
    let region = |header: &str| {
        Tool::new(
            "region",
            "mirrors its region",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": header}}}),
            |c: &ToolCall<'_>| ToolOutcome::text(c.arguments.to_string()),
        )
    };
    let mut ep = HttpEndpoint::new(example::server_with(|c| c.tools.push(region("Region"))));
    let call = |ep: &mut HttpEndpoint, header: (&str, &str)| {
        let r = modern(
            1,
            "tools/call",
            json!({"name": "region", "arguments": {"region": "eu"}}),
            Some("region"),
        )
        .with_header(header.0, header.1);
        let r = complete(ep.handle_request(now(), &r));
        (r.status, body_json(&r)["error"]["code"].as_i64())
    };
    for _ in 0..2 {
        assert_eq!(call(&mut ep, ("Mcp-Param-Region", "eu")).0, 200);
        assert_eq!(call(&mut ep, ("Mcp-Param-Zone", "eu")), (400, Some(-32020)));
    }
    ep.update_server(now(), |s| {
        assert!(s.remove_tool("region"));
        s.add_tool(region("Zone"));
    });
    assert_eq!(call(&mut ep, ("Mcp-Param-Zone", "eu")).0, 200);
    assert_eq!(
        call(&mut ep, ("Mcp-Param-Region", "eu")),
        (400, Some(-32020))
    );
    // Replaced in place (same name), and with the whole server.
    ep.update_server(now(), |s| s.add_tool(region("Region")));
    assert_eq!(call(&mut ep, ("Mcp-Param-Region", "eu")).0, 200);
    assert_eq!(call(&mut ep, ("Mcp-Param-Zone", "eu")), (400, Some(-32020)));
    ep.update_server(now(), |s| {
        *s = example::server_with(|c| c.tools.push(region("Zone")));
    });
    assert_eq!(call(&mut ep, ("Mcp-Param-Zone", "eu")).0, 200);
    assert_eq!(
        call(&mut ep, ("Mcp-Param-Region", "eu")),
        (400, Some(-32020))
    );
}

#[test]
fn sse_when_output_precedes_the_answer() {
    // A legacy call asking for two inputs; the first answer is an error, so the machine
    // cancels the second request and fails the call: notification, then result.
    let tool = Tool::new(
        "two",
        "asks twice",
        json!({"type": "object"}),
        |c: &ToolCall<'_>| {
            if c.inputs.is_empty() {
                let form = || crate::server::InputRequestSpec::form("?", json!({"type": "object"}));
                ToolOutcome::NeedInput(vec![("a".into(), form()), ("b".into(), form())])
            } else {
                ToolOutcome::text("done")
            }
        },
    );
    let mut ep = HttpEndpoint::new(example::server_with(|c| c.tools.push(tool)));
    initialize(&mut ep, json!({"elicitation": {}}));
    let s = stream(ep.handle_request(now(), &legacy(9, "tools/call", json!({"name": "two"}))));
    let asks = sse_messages(&s.response().body);
    assert_eq!(asks.len(), 2);
    let refuse =
        json!({"jsonrpc": "2.0", "id": asks[0]["id"], "error": {"code": -1, "message": "no"}});
    assert_eq!(
        complete(ep.handle_request(now(), &post(&refuse, &[]))).status,
        202
    );
    let mut out = Vec::new();
    assert_eq!(ep.poll_stream(&s, &mut out), StreamStatus::Finished);
    let messages = sse_messages(&out);
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["method"], "notifications/cancelled");
    assert_eq!(messages[1]["id"], 9);
    assert_eq!(messages[1]["result"]["isError"], true);
}

#[test]
fn response_writing() {
    let r = HttpResponse::new(200)
        .with_header("X-Ok", "yes")
        .with_header("X-Bad", "a\r\nInjected: 1")
        .with_header("Bad Name", "v")
        .with_header("Content-Length", "999")
        .with_body("application/json", b"{}".to_vec());
    let mut out = Vec::new();
    r.write(&mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "HTTP/1.1 200 OK\r\nX-Ok: yes\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    );
    let mut out = Vec::new();
    HttpResponse::new(202).write(&mut out);
    assert_eq!(out, b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
}

#[test]
fn answer_is_sse_when_messages_precede_the_response() {
    let exchange = Exchange {
        original: RequestId::Number(4),
        events: {
            let mut events = Backlog::default();
            for data in [
                br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#
                    .to_vec(),
                br#"{"jsonrpc":"2.0","id":4,"result":{}}"#.to_vec(),
            ] {
                events.push_in(1, Event { id: None, data });
            }
            events
        },
        answered: true,
        error_code: None,
        streaming: false,
        session: None,
        principal: None,
        stream: None,
        attach: None,
        poll_due: None,
        listen: false,
    };
    let r = answer(exchange, Era::Modern, false);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("x-accel-buffering"), Some("no"));
    assert_eq!(
        String::from_utf8(r.body).unwrap(),
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n\
         event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n\n"
    );
}

/// A small deterministic generator (xorshift) for the no-panic sweep.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn no_panics_on_mangled_input() {
    let mut ep = endpoint();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let base = [PIPELINE.to_vec(), {
        let mut wire = b"POST /mcp HTTP/1.1\r\nHost: x\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: 150\r\n\r\n".to_vec();
        wire.extend_from_slice(
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
            );
        wire
    }];
    for round in 0..3000 {
        let mut input = base[round % base.len()].clone();
        for _ in 0..(xorshift(&mut seed) % 6) {
            let at = usize::try_from(xorshift(&mut seed) % input.len() as u64).unwrap();
            match xorshift(&mut seed) % 3 {
                0 => input[at] = xorshift(&mut seed) as u8,
                1 => {
                    input.remove(at);
                }
                _ => input.insert(at, b"\r\n:{}\"\x80 /?"[at % 10]),
            }
        }
        let split = usize::try_from(xorshift(&mut seed) % (input.len() as u64 + 1)).unwrap();
        let mut reader = HttpRequestReader::default();
        reader.handle_input(&input[..split]);
        reader.handle_input(&input[split..]);
        reader.handle_eof();
        while let Some(next) = reader.poll_request() {
            match next {
                Ok(request) => match ep.handle_request(now(), &request) {
                    HttpReply::Complete(r) => r.write(&mut Vec::new()),
                    HttpReply::Stream(s) => {
                        let mut out = Vec::new();
                        s.write_head(&mut out);
                        ep.cancel_stream(now(), &s);
                    }
                },
                Err(e) => HttpResponse::for_request_error(&e).write(&mut Vec::new()),
            }
        }
    }
    assert_eq!(ep.open_streams(), 0);
}

#[test]
fn initialize_with_modern_meta_is_404() {
    let mut ep = endpoint();
    let r = complete(ep.handle_request(now(), &modern(1, "initialize", json!({}), None)));
    assert_eq!((r.status, error_code(&r)), (404, -32601));
    // A legacy initialize (no `_meta`, no header) is still served.
    let r = complete(ep.handle_request(
        now(),
        &legacy(
            2,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}),
        ),
    ));
    assert_eq!(r.status, 200);
    assert_eq!(body_json(&r)["result"]["protocolVersion"], "2025-11-25");
}

// ----- the request gate ---------------------------------------------------------------

/// Lets `/mcp` through with `Bearer good`, answers `/meta` itself, refuses the rest of
/// `/mcp` with 401; counts what it saw.
#[derive(Debug)]
struct BearerGate {
    seen: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl RequestGate for BearerGate {
    fn check(&mut self, _now: Instant, request: &HttpRequest) -> GateVerdict {
        self.seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        match request.path() {
            "/meta" => GateVerdict::Answer(
                HttpResponse::new(200).with_body("application/json", b"{}".to_vec()),
            ),
            "/mcp" if request.header("authorization") == Some("Bearer good") => GateVerdict::Pass {
                principal: Some("alice".into()),
            },
            "/mcp" => GateVerdict::Answer(
                HttpResponse::new(401).with_header("WWW-Authenticate", "Bearer"),
            ),
            _ => GateVerdict::Pass { principal: None },
        }
    }
}

#[test]
fn the_gate_answers_or_passes_every_request_after_host_and_origin() {
    let seen = std::sync::Arc::default();
    let mut config = HttpEndpointConfig::default();
    config.restrict_hosts_for(std::net::Ipv4Addr::LOCALHOST.into());
    let mut ep = HttpEndpoint::with_config(example::server(), config);
    ep.set_gate(Box::new(BearerGate {
        seen: std::sync::Arc::clone(&seen),
    }));
    let count = || seen.load(std::sync::atomic::Ordering::SeqCst);
    let discover = modern(1, "server/discover", json!({}), None);

    let r = complete(ep.handle_request(now(), &discover));
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let authorized = discover.clone().with_header("Authorization", "Bearer good");
    let r = complete(ep.handle_request(now(), &authorized));
    assert_eq!((r.status, body_json(&r)["id"].clone()), (200, json!(1)));
    let meta = HttpRequest::new("GET", "/meta").with_header("Host", "127.0.0.1");
    assert_eq!(complete(ep.handle_request(now(), &meta)).body, b"{}");
    let other = HttpRequest::new("GET", "/other").with_header("Host", "127.0.0.1");
    assert_eq!(complete(ep.handle_request(now(), &other)).status, 404);
    assert_eq!(count(), 4);

    // A foreign Host or Origin is refused before the gate sees anything.
    let foreign = authorized
        .clone()
        .without_header("host")
        .with_header("Host", "evil.example");
    assert_eq!(complete(ep.handle_request(now(), &foreign)).status, 403);
    let origin = authorized.with_header("Origin", "https://evil.example");
    assert_eq!(complete(ep.handle_request(now(), &origin)).status, 403);
    assert_eq!(count(), 4);
}

/// A stateless endpoint whose `wait` tool runs as a task and is done `ms` milliseconds
/// after the call.
fn waiting_endpoint() -> HttpEndpoint {
    let tool = Tool::new(
        "wait",
        "done after `ms` milliseconds",
        json!({"type": "object"}),
        |call: &ToolCall<'_>| {
            let ms = call
                .arguments
                .get("ms")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            ToolOutcome::after(
                std::time::Duration::from_millis(ms),
                ToolOutcome::text("waited"),
            )
        },
    )
    // No polls stand for the delay: the outcome falls due by time alone.
    .as_task(0);
    let mut ep = HttpEndpoint::new(example::server_with(|c| c.tools.push(tool)));
    let init = post(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        &[],
    );
    assert_eq!(complete(ep.handle_request(now(), &init)).status, 200);
    ep
}

/// Starts a `wait` task of `ms` at `at`; its task id.
fn start_wait(ep: &mut HttpEndpoint, at: Instant, id: i64, ms: u64) -> String {
    let call = post(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "wait", "arguments": {"ms": ms}, "task": {}}}),
        &[("MCP-Protocol-Version", "2025-11-25")],
    );
    let r = complete(ep.handle_request(at, &call));
    let task = &body_json(&r)["result"]["task"];
    assert_eq!(task["status"], "working", "{r:?}");
    task["taskId"].as_str().unwrap().to_owned()
}

#[test]
fn the_driver_timer_is_woken_only_when_a_deadline_moves_earlier() {
    let mut ep = waiting_endpoint();
    let ms = std::time::Duration::from_millis;
    let t0 = now();
    // Nothing due: the timer sleeps until woken, and nothing moved.
    assert_eq!(ep.arm_timer(), None);
    assert!(!ep.take_timer_moved());
    let list = post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        &[("MCP-Protocol-Version", "2025-11-25")],
    );
    assert_eq!(complete(ep.handle_request(t0, &list)).status, 200);
    assert!(!ep.take_timer_moved(), "a request that sets no deadline");

    // A task due in 5 s: the sleeping timer must be woken, once.
    start_wait(&mut ep, t0, 2, 5_000);
    assert!(ep.take_timer_moved());
    assert!(!ep.take_timer_moved(), "the same move is reported once");
    assert_eq!(ep.arm_timer(), Some(t0 + ms(5_000)));
    // A later deadline does not move the timer; an earlier one does.
    start_wait(&mut ep, t0, 3, 9_000);
    assert!(!ep.take_timer_moved());
    start_wait(&mut ep, t0 + ms(100), 4, 1_000);
    assert!(ep.take_timer_moved());
    assert_eq!(ep.arm_timer(), Some(t0 + ms(1_100)));

    // The timer fires: early, nothing happens; when due, the outcome is handed over and
    // the timer is set for the next one.
    assert!(!ep.handle_due(t0 + ms(1_099)));
    assert!(ep.handle_due(t0 + ms(1_100)));
    assert!(!ep.take_timer_moved(), "the next deadline is later");
    assert_eq!(ep.arm_timer(), Some(t0 + ms(5_000)));
    assert!(ep.handle_due(t0 + ms(9_000)));
    assert_eq!(ep.arm_timer(), None);
    assert!(!ep.take_timer_moved());
}

#[test]
fn a_listen_ends_under_the_clients_id_and_other_results_are_left_as_they_are() {
    let mut ep = endpoint();
    // The endpoint's own id for this request differs from the client's 41.
    let listen = stream(ep.handle_request(
        now(),
        &modern(
            41,
            "subscriptions/listen",
            json!({"notifications": {}}),
            None,
        ),
    ));
    ep.update_server(now(), Server::end_subscriptions);
    let mut out = Vec::new();
    for _ in 0..10 {
        if ep.poll_stream(&listen, &mut out) == StreamStatus::Finished {
            break;
        }
    }
    let messages = sse_messages(&out);
    let end = messages.iter().find(|m| m.get("result").is_some()).unwrap();
    assert_eq!(end["id"], 41, "{messages:?}");
    assert_eq!(
        end["result"]["_meta"][notify::SUBSCRIPTION_ID],
        41,
        "{messages:?}"
    );
    // A tool's result that happens to carry the key is the tool's business.
    let text = json!({"_meta": {(notify::SUBSCRIPTION_ID): 5}}).to_string();
    let r = complete(ep.handle_request(
        now(),
        &modern(
            42,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": text}}),
            Some("echo"),
        ),
    ));
    let body = body_json(&r);
    assert_eq!(body["id"], 42);
    assert_eq!(body["result"]["content"][0]["text"], text);
    assert!(
        body["result"]["_meta"]
            .get(notify::SUBSCRIPTION_ID)
            .is_none(),
        "{body}"
    );
}

#[test]
fn a_kept_meta_serves_only_posts_whose_meta_has_the_same_text() {
    let mut ep = endpoint();
    let text = serde_json::to_string(&meta()).unwrap();
    let call = json!({"name": "add", "arguments": {"a": 2, "b": 3}});
    let good = modern(1, "tools/call", call.clone(), Some("add"));
    // The body names another version than the header: refused, whatever was kept.
    let mut params = call.clone();
    params["_meta"] = meta();
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params});
    let headers = [
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "add"),
    ];
    let retired = post(&body, &headers);
    for round in 0..3 {
        let r = complete(ep.handle_request(now(), &good));
        assert_eq!(
            body_json(&r)["result"]["content"][0]["text"],
            "5",
            "{round}"
        );
        assert!(
            ep.server.keeps_meta(&text),
            "{round}: the POST's _meta is kept"
        );
        let r = complete(ep.handle_request(now(), &retired));
        assert_eq!(r.status, 400, "{round}: {}", body_json(&r));
        assert!(!ep.server.keeps_meta(&text), "{round}");
    }
}

/// Without sessions the ids of the server's requests are the machine's counter (the
/// first is 0): another principal's answer under that id, well-formed or not, or an
/// anonymous one, must not reach an authenticated client's call (it did: the call went
/// on with the attacker's answer). The call waits for its own client's answer.
#[test]
fn without_sessions_only_its_principal_answers_a_servers_request() {
    let mut ep = endpoint();
    initialize(&mut ep, json!({"elicitation": {}}));
    let call = legacy(5, "tools/call", json!({"name": "confirm"}));
    let s = stream(ep.handle_request_as(now(), &call, Some("alice")));
    let first = sse_messages(&s.response().body);
    assert_eq!(first[0]["method"], "elicitation/create");
    let answer = |name: &str| {
        post(
            &json!({"jsonrpc": "2.0", "id": first[0]["id"], "result": {
                "action": "accept", "content": {"proceed": true, "name": name}}}),
            &[],
        )
    };
    let malformed = post(
        &json!({"jsonrpc": "2.0", "id": first[0]["id"], "result": {}, "error": {}}),
        &[],
    );
    for who in [Some("mallory"), None] {
        let r = complete(ep.handle_request_as(now(), &answer("Mallory"), who));
        assert_eq!(r.status, 202);
        let r = complete(ep.handle_request_as(now(), &malformed, who));
        assert_eq!(r.status, 400);
        let mut out = Vec::new();
        assert_eq!(ep.poll_stream(&s, &mut out), StreamStatus::Open, "{who:?}");
        assert!(out.is_empty(), "{who:?}: {}", String::from_utf8_lossy(&out));
    }
    let r = complete(ep.handle_request_as(now(), &answer("Ada"), Some("alice")));
    assert_eq!(r.status, 202);
    let mut out = Vec::new();
    assert_eq!(ep.poll_stream(&s, &mut out), StreamStatus::Finished);
    let messages = sse_messages(&out);
    assert_eq!(
        messages[0]["result"]["content"][0]["text"],
        "accepted: proceed=true name=Ada"
    );
}
