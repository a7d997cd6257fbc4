//! The server's Streamable HTTP endpoint driven by arbitrary client bytes.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::Instant;
use crate::http::headers::encode_header_value;
use crate::http::xmcp::{extract_param_values, tool_param_headers};
use crate::http::{HttpLimits, ResponseEvent, ResponseReader};
use crate::jsonrpc::{Message, RequestId};
use crate::server::http::{
    HttpEndpoint, HttpEndpointConfig, HttpReply, HttpRequest, HttpRequestLimits, HttpRequestReader,
    HttpResponse, HttpStream, StreamId, StreamStatus,
};
use crate::sse::{SseDecoder, SseLimits};

use super::server::{MAX_LINE, fuzz_server, max_reply};

/// Open streams the fuzzed endpoint allows (small, so that the 503 path is reached).
const MAX_OPEN: usize = 3;

/// Request bounds of the fuzzed connection.
pub(super) fn request_limits() -> HttpRequestLimits {
    HttpRequestLimits {
        max_head_bytes: 2048,
        max_headers: 16,
        max_body_bytes: MAX_LINE,
        max_queued_requests: 4,
    }
}

/// A stream handed out and not finished yet.
struct Open {
    stream: HttpStream,
    /// Everything written for it so far, head first.
    wire: Vec<u8>,
    /// The client's request id.
    id: Option<RequestId>,
    /// The size of the request, for the bound on what is written.
    request_len: usize,
}

/// The endpoint, the streams it handed out, and what `poll_ready` reported.
struct Harness {
    endpoint: HttpEndpoint,
    open: Vec<Open>,
    /// Streams reported by `poll_ready` and not polled since.
    reported: BTreeSet<StreamId>,
    /// The endpoint has legacy sessions, whose streams outlive their clients (detached,
    /// to be resumed), so it may count more open exchanges than streams handed out.
    resumable: bool,
    /// The last `Mcp-Session-Id` issued: it replaces a `$session` header value.
    session: Option<Vec<u8>>,
    /// The last SSE event id written: it replaces a `$last` header value.
    last_event: Option<Vec<u8>>,
}

/// The SSE `id:` values in `bytes`.
fn event_ids(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| line.strip_prefix(b"id: "))
}

/// The Streamable HTTP endpoint (with the server of [`fuzz_server`]) on arbitrary client
/// bytes, read by an [`HttpRequestReader`]; every request read is served, and every
/// stream handed out is polled whenever it has output, then cancelled at the end.
///
/// The first byte picks the server configuration (low two bits), raw input (bit 2: the
/// rest is connection bytes as they are; else it is requests to build, see
/// [`build_requests`]) and the piece size the bytes are fed in (the other five bits).
///
/// Invariants: every response serialises to HTTP that the crate's own response reader
/// reads back with the same status, body and connection reuse; no response is longer
/// than [`max_reply`] of its request; a JSON body is one JSON-RPC response and an SSE
/// body is JSON-RPC messages, the response last; an answer carries the client's own
/// request id (never the endpoint's internal one); at most `MAX_OPEN` streams are open;
/// a stream with output to send has been reported by `poll_ready`; a stream that has
/// nothing to send writes nothing; and every stream ends once cancelled.
pub fn http_endpoint(data: &[u8]) {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let variant = control & 3;
    let raw = control & 4 != 0;
    let chunk = 1 + usize::from(control >> 3);
    let config = HttpEndpointConfig {
        max_open_streams: MAX_OPEN,
        allowed_origins: vec!["https://app.example".to_owned()],
        // Polling mode (2025-11-25 sessions' POST streams end after priming) with one
        // of the servers.
        sse_polling: variant == 1,
        ..HttpEndpointConfig::default()
    };
    let mut h = Harness {
        // Sessions, as the adapters serve: legacy requests need their session's id.
        endpoint: if variant == 3 {
            HttpEndpoint::with_config(fuzz_server(variant), config)
        } else {
            HttpEndpoint::with_sessions(fuzz_server(variant), config, &[9; 32])
        },
        open: Vec::new(),
        reported: BTreeSet::new(),
        resumable: variant != 3,
        session: None,
        last_event: None,
    };
    let (bytes, cancels) = if raw {
        (input.to_vec(), Vec::new())
    } else {
        build_requests(input)
    };
    let mut reader = HttpRequestReader::new(request_limits());
    let mut served = 0;
    let mut pump = |h: &mut Harness, reader: &mut HttpRequestReader| {
        let _ = reader.take_expect_continue();
        while let Some(request) = reader.poll_request() {
            match request {
                Ok(request) => {
                    h.serve(&request);
                    if cancels.contains(&served) {
                        h.cancel_oldest();
                    }
                    served += 1;
                }
                Err(e) => {
                    let response = HttpResponse::for_request_error(&e);
                    assert!(
                        response.closes_connection(),
                        "a read error keeps the connection"
                    );
                    check_complete(&response, "POST", None, 0);
                }
            }
        }
    };
    for piece in bytes.chunks(chunk) {
        reader.handle_input(piece);
        pump(&mut h, &mut reader);
    }
    reader.handle_eof();
    pump(&mut h, &mut reader);
    while !h.open.is_empty() {
        h.cancel_oldest();
    }
    if !h.resumable {
        assert_eq!(h.endpoint.open_streams(), 0, "streams left open");
    }
}

impl Harness {
    fn serve(&mut self, request: &HttpRequest) {
        let now = Instant::ZERO;
        let mut with =
            HttpRequest::new(request.method(), request.target()).with_body(request.body.clone());
        with.version = request.version;
        for (name, value) in request.headers() {
            let value = match value {
                b"$session" => self.session.as_deref(),
                b"$last" => self.last_event.as_deref(),
                _ => None,
            }
            .unwrap_or(value);
            with = with.with_header(name, value);
        }
        let request = with;
        let request = &request;
        let id = client_id(&request.body);
        let request_len = request_len(request);
        match self.endpoint.handle_request(now, request) {
            HttpReply::Complete(response) => {
                check_complete(&response, request.method(), id.as_ref(), request_len);
                if let Some(s) = response.header("mcp-session-id") {
                    self.session = Some(s.as_bytes().to_vec());
                }
                if let Some(last) = event_ids(&response.body).last() {
                    self.last_event = Some(last.to_vec());
                }
            }
            HttpReply::Stream(stream) => {
                let head = stream.response();
                assert_eq!(head.status, 200, "a stream that is not 200");
                assert_eq!(head.header("content-type"), Some("text/event-stream"));
                // An `initialize` answered over a stream opens its session too.
                if let Some(s) = head.header("mcp-session-id") {
                    self.session = Some(s.as_bytes().to_vec());
                }
                let mut wire = Vec::new();
                stream.write_head(&mut wire);
                if let Some(last) = event_ids(&wire).last() {
                    self.last_event = Some(last.to_vec());
                }
                self.open.push(Open {
                    stream,
                    wire,
                    id,
                    request_len,
                });
            }
        }
        self.after_input();
    }

    /// The client of the oldest open stream goes away.
    fn cancel_oldest(&mut self) {
        if self.open.is_empty() {
            return;
        }
        let open = self.open.remove(0);
        self.endpoint.cancel_stream(Instant::ZERO, &open.stream);
        let mut wire = open.wire;
        let status = self.endpoint.poll_stream(&open.stream, &mut wire);
        assert_eq!(status, StreamStatus::Finished, "a cancelled stream goes on");
        self.reported.remove(&open.stream.id());
        check_stream(&open.stream, &wire, None, Answers::None, open.request_len);
        self.after_input();
    }

    /// After input (and what fell due): what `poll_ready` says agrees with `stream_ready`,
    /// and every stream with output is polled (the others, now and then, to see that they write nothing).
    fn after_input(&mut self) {
        // What is due (the `defer` tool's completed work, at once) goes on first.
        self.endpoint.handle_due(Instant::ZERO);
        while let Some(id) = self.endpoint.poll_ready() {
            self.reported.insert(id);
        }
        assert!(
            self.endpoint.open_streams() <= MAX_OPEN,
            "{} streams open",
            self.endpoint.open_streams()
        );
        let mut i = 0;
        while i < self.open.len() {
            let open = &mut self.open[i];
            let ready = self.endpoint.stream_ready(&open.stream);
            let id = open.stream.id();
            assert!(
                !ready || self.reported.contains(&id),
                "stream {id:?} has output that poll_ready did not report"
            );
            let before = open.wire.len();
            let status = self.endpoint.poll_stream(&open.stream, &mut open.wire);
            self.reported.remove(&id);
            if !ready {
                assert_eq!(status, StreamStatus::Open, "a stream ended unreported");
                assert_eq!(open.wire.len(), before, "a stream wrote unreported output");
            }
            if status == StreamStatus::Finished {
                let open = self.open.remove(i);
                let (id, len) = (open.id.as_ref(), open.request_len);
                check_stream(&open.stream, &open.wire, id, Answers::AtMostOne, len);
            } else {
                i += 1;
            }
        }
        if !self.resumable {
            assert_eq!(
                self.endpoint.open_streams(),
                self.open.len(),
                "the endpoint counts other streams than were handed out"
            );
        }
    }
}

/// The id a client's request body carries, as the endpoint reads it.
fn client_id(body: &[u8]) -> Option<RequestId> {
    match Message::decode(body) {
        Ok(Message::Request(r)) => Some(r.id),
        _ => None,
    }
}

/// The bytes of a request as the client sent them, about.
fn request_len(request: &HttpRequest) -> usize {
    let headers: usize = request.headers().map(|(n, v)| n.len() + v.len() + 4).sum();
    request.method().len() + request.target().len() + headers + request.body.len() + 16
}

/// Reads `wire` back with the crate's response reader: the head, the body and whether
/// the connection may be reused (`None` when the body ran to the end of the input).
fn read_back(
    wire: &[u8],
    method: &str,
    eof: bool,
) -> (crate::http::ResponseHead, Vec<u8>, Option<bool>) {
    let mut reader = ResponseReader::new(HttpLimits::default(), method);
    reader.handle_input(wire);
    if eof {
        reader.handle_eof();
    }
    let mut head = None;
    let mut body = Vec::new();
    let mut end = None;
    while let Some(event) = reader.poll_event() {
        match event {
            ResponseEvent::Head(h) => head = Some(h),
            ResponseEvent::Body(b) => body.extend(b),
            ResponseEvent::End { keep_alive } => end = Some(keep_alive),
            ResponseEvent::Error(e) => panic!(
                "the endpoint wrote a response its own reader refuses ({e}): {}",
                String::from_utf8_lossy(wire)
            ),
        }
    }
    let head = head.expect("no response head");
    assert!(end.is_some(), "the response does not end");
    assert!(reader.leftover().is_empty(), "bytes after the response");
    (head, body, end.filter(|_| !eof))
}

/// A complete response: reads back as written, bounded, and its body is what its
/// `Content-Type` says, answering `id` when it is a JSON-RPC response with an id.
fn check_complete(response: &HttpResponse, method: &str, id: Option<&RequestId>, len: usize) {
    assert!(
        matches!(
            response.status,
            200 | 202 | 400 | 403 | 404 | 405 | 406 | 409 | 411 | 413 | 415 | 431 | 501 | 503
        ),
        "unexpected status {}",
        response.status
    );
    let mut wire = Vec::new();
    response.write(&mut wire);
    assert!(
        wire.len() <= max_reply(len),
        "a response of {} bytes to a request of {len}",
        wire.len()
    );
    let (head, body, reuse) = read_back(&wire, method, false);
    assert_eq!(head.status, response.status, "status changed on the wire");
    assert_eq!(
        reuse,
        Some(!response.closes_connection()),
        "connection reuse changed on the wire"
    );
    if method == "HEAD" {
        assert!(body.is_empty(), "a body in answer to HEAD");
        return;
    }
    assert_eq!(body, response.body, "body changed on the wire");
    match response.header("content-type") {
        Some("application/json") => {
            let answer = match Message::decode(&body) {
                Ok(Message::Response(r)) => r,
                other => panic!("a JSON body that is not a response: {other:?}"),
            };
            if let (Some(got), Some(sent)) = (&answer.id, id) {
                assert_eq!(got, sent, "answered another id");
            }
            if answer.id.is_some() && id.is_none() {
                // Only a body that did not decode as a request: the id was read from it.
                assert!(
                    response.status == 400,
                    "an answer with an id to something that is not a request"
                );
            }
        }
        Some("text/event-stream") => {
            assert_eq!(response.status, 200);
            // A resumption replays what is left of a stream (maybe not its response); in
            // polling mode a POST gets only the priming event.
            let polled = body
                .split(|b| *b == b'\n')
                .any(|l| l.starts_with(b"retry: "));
            let answers = if method == "GET" || polled {
                Answers::AtMostOne
            } else {
                Answers::One
            };
            check_events(&body, id, answers);
        }
        None => assert!(body.is_empty(), "a body without a type"),
        Some(other) => panic!("unexpected Content-Type {other}"),
    }
}

/// A finished stream: reads back as an SSE response carrying JSON-RPC messages, with
/// `answers` responses (to `id`).
fn check_stream(
    stream: &HttpStream,
    wire: &[u8],
    id: Option<&RequestId>,
    answers: Answers,
    len: usize,
) {
    let until_close = !String::from_utf8_lossy(wire)
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    assert!(
        wire.len() <= max_reply(len) * 8,
        "a stream of {} bytes for a request of {len}",
        wire.len()
    );
    let (head, body, reuse) = read_back(wire, "POST", until_close);
    assert_eq!(head.status, 200);
    if let Some(reuse) = reuse {
        assert_eq!(reuse, !stream.closes_connection(), "connection reuse");
    }
    check_events(&body, id, answers);
}

/// How many responses an SSE body carries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Answers {
    /// None: the stream was cancelled by its own client.
    None,
    /// One: a complete response.
    One,
    /// One, or none when a posted `notifications/cancelled` ended it.
    AtMostOne,
}

/// An SSE body: every event is a `message` with one JSON-RPC message; a response is the
/// last one, to `id` when that is known, and `answers` says how many there may be.
fn check_events(body: &[u8], id: Option<&RequestId>, answers: Answers) {
    let mut decoder = SseDecoder::new(SseLimits::new(1 << 20, 1 << 22));
    decoder.handle_input(body);
    let end = decoder.handle_eof();
    assert!(!end.incomplete_event, "an SSE event cut short");
    let mut messages = Vec::new();
    for event in decoder.events() {
        let event = event.expect("an SSE event over the limits");
        if event.data.is_empty() {
            // A priming event (2025-11-25): an id and no message.
            assert!(event.id.is_some(), "an empty event without an id");
            continue;
        }
        assert_eq!(event.event_type, "message");
        let m = Message::decode(event.data.as_bytes())
            .unwrap_or_else(|e| panic!("an SSE event that is not JSON-RPC ({e}): {}", event.data));
        messages.push(m);
    }
    let responses = messages
        .iter()
        .filter(|m| matches!(m, Message::Response(_)))
        .count();
    match answers {
        Answers::None => assert_eq!(responses, 0, "a response in a cancelled stream"),
        Answers::One => assert_eq!(responses, 1, "{responses} responses in one stream"),
        Answers::AtMostOne => assert!(responses <= 1, "{responses} responses in one stream"),
    }
    if responses == 1 {
        match messages.last() {
            Some(Message::Response(r)) => {
                if let Some(id) = id {
                    assert_eq!(r.id.as_ref(), Some(id), "answered another id");
                }
            }
            other => panic!("the stream does not end with the response: {other:?}"),
        }
    }
}

/// Builds connection bytes from fuzz input: requests separated by two NUL bytes, each
/// two flag bytes and a body. Also returns after which requests (by number) the oldest
/// open stream is cancelled.
///
/// First flag byte: bits 0–1 the method (POST, POST, GET, DELETE or HEAD), bit 2 another
/// path, bits 3–4 the `Content-Type` (JSON, JSON with a charset, none, text) or, for GET,
/// the stream asked for (the last session's; resumed after the last event id written;
/// resumed after the body as `Last-Event-ID`; no session), bits 5–6 the `Origin` (none,
/// loopback, foreign, allowed), bit 7 HTTP/1.0. `$session` and `$last` header values
/// are replaced when served by the last session id and event id the endpoint issued.
///
/// Second: bits 0–1 `MCP-Protocol-Version` (none, 2026-07-28, 2025-11-25 with the last
/// session's id, bogus),
/// bit 2 `Mcp-Method` and `Mcp-Name` from the body, bit 3 the `Mcp-Param-*` headers of
/// the fuzz tool from the body, bit 4 `Connection: close`, bit 5 `Expect:
/// 100-continue`, bit 6 cancel the oldest stream afterwards, bit 7 the 2026-07-28
/// `_meta` put into the body's params.
pub fn build_requests(input: &[u8]) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::new();
    let mut cancels = Vec::new();
    for (n, segment) in split_on(input, b"\0\0").enumerate() {
        let [a, b, body @ ..] = segment else {
            continue;
        };
        let (a, b) = (*a, *b);
        if b & 0x40 != 0 {
            cancels.push(n);
        }
        let mut body = body.to_vec();
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        if b & 0x80 != 0
            && let Some(mut v) = parsed.clone()
            && let Some(obj) = v.as_object_mut()
        {
            let params = obj.entry("params").or_insert_with(|| json!({}));
            if let Some(p) = params.as_object_mut() {
                p.insert(
                    "_meta".to_owned(),
                    json!({
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities":
                            {"elicitation": {}, "sampling": {}, "roots": {}},
                    }),
                );
            }
            body = serde_json::to_vec(&v).unwrap_or(body);
        }
        let method = match a & 3 {
            0 | 1 => "POST",
            2 => "GET",
            _ if a & 0x80 != 0 => "HEAD",
            _ => "DELETE",
        };
        let path = if a & 4 == 0 { "/mcp" } else { "/mcp/x?y=1" };
        let version = if a & 0x80 == 0 { "1.1" } else { "1.0" };
        let mut head = format!("{method} {path} HTTP/{version}\r\nHost: 127.0.0.1\r\n");
        let mut header = |name: &str, value: &str| {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        };
        if method == "GET" {
            // A GET stream of the last session: opened, resumed after the last event id
            // written, resumed after an id the input names (the body), or without a
            // session.
            let named = String::from_utf8_lossy(&body).replace(['\r', '\n'], "");
            header("Accept", "text/event-stream");
            match (a >> 3) & 3 {
                0 => header("Mcp-Session-Id", "$session"),
                1 => {
                    header("Mcp-Session-Id", "$session");
                    header("Last-Event-ID", "$last");
                }
                2 => {
                    header("Mcp-Session-Id", "$session");
                    header("Last-Event-ID", &named);
                }
                _ => {}
            }
        } else {
            match (a >> 3) & 3 {
                0 => header("Content-Type", "application/json"),
                1 => header("Content-Type", "Application/JSON; charset=utf-8"),
                2 => {}
                _ => header("Content-Type", "text/plain"),
            }
        }
        match (a >> 5) & 3 {
            0 => {}
            1 => header("Origin", "http://localhost:8080"),
            2 => header("Origin", "https://evil.example"),
            _ => header("Origin", "https://app.example"),
        }
        match b & 3 {
            0 => {}
            1 => header("MCP-Protocol-Version", "2026-07-28"),
            2 => {
                header("MCP-Protocol-Version", "2025-11-25");
                // A legacy request of the last session (GET names its own).
                if method != "GET" {
                    header("Mcp-Session-Id", "$session");
                }
            }
            _ => header("MCP-Protocol-Version", "1999-01-01"),
        }
        let sent: Option<Value> = serde_json::from_slice(&body).ok();
        let params = sent.as_ref().and_then(|v| v.get("params"));
        if b & 4 != 0 {
            if let Some(m) = sent.as_ref().and_then(|v| v.get("method")?.as_str()) {
                header("Mcp-Method", &encode_header_value(m));
            }
            if let Some(name) = params.and_then(|p| p.get("name").or(p.get("uri"))?.as_str()) {
                header("Mcp-Name", &encode_header_value(name));
            }
        }
        if b & 8 != 0
            && let Some(args) = params.and_then(|p| p.get("arguments"))
            && let Ok(declared) = tool_param_headers(&ask_schema())
            && let Ok(values) = extract_param_values(&declared, args)
        {
            for (name, value) in values {
                header(&name, &value);
            }
        }
        if b & 0x10 != 0 {
            header("Connection", "close");
        } else if a & 0x80 != 0 {
            header("Connection", "keep-alive");
        }
        if b & 0x20 != 0 {
            header("Expect", "100-continue");
        }
        header("Content-Length", &body.len().to_string());
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&body);
    }
    (out, cancels)
}

/// The input schema of the fuzz tool `ask` (for its `Mcp-Param-*` headers).
fn ask_schema() -> Value {
    json!({"type": "object", "properties": {"tag": {"type": "string", "x-mcp-header": "Tag"}}})
}

/// `input` cut at every `sep`.
fn split_on<'a>(input: &'a [u8], sep: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut rest = Some(input);
    std::iter::from_fn(move || {
        let r = rest?;
        match memchr::memmem::find(r, sep) {
            Some(i) => {
                rest = Some(&r[i + sep.len()..]);
                Some(&r[..i])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoke() {
        let body = br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"hang"}}"#;
        let mut input = vec![0u8];
        for b in [0x80u8, 0x84 | 0x40, 0x04] {
            input.extend_from_slice(&[0, b]);
            input.extend_from_slice(body);
            input.extend_from_slice(b"\0\0");
        }
        http_endpoint(&input);
    }

    /// The `defer` tool's every outcome, in a 2025-11-25 session (one as a task) and in
    /// 2026-07-28: each deferred call is gone on with once due, on its own stream.
    #[test]
    fn smoke_deferred_work() {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "f", "version": "1"}}});
        // (Flags never both zero: two NULs part requests.)
        let mut segments = vec![
            (0x08, 0u8, init),
            (
                0,
                2,
                json!({"jsonrpc": "2.0",
            "method": "notifications/initialized"}),
            ),
        ];
        for (i, then) in ["text", "ask", "error", "none", "drop", "lazy"]
            .iter()
            .enumerate()
        {
            let call = |id: usize| {
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "defer", "arguments": {"then": then}}})
            };
            segments.push((0, 2, call(10 + i)));
            segments.push((0, 0x85, call(30 + i)));
        }
        segments.push((
            0,
            2,
            json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
            "params": {"name": "defer", "arguments": {"then": "ask"}, "task": {}}}),
        ));
        let mut input = vec![0xf8u8];
        for (a, b, body) in segments {
            input.extend_from_slice(&[a, b]);
            input.extend_from_slice(body.to_string().as_bytes());
            input.extend_from_slice(b"\0\0");
        }
        http_endpoint(&input);
    }

    /// A 2025-11-25 session: a call waiting for input, its stream resumed after the last
    /// event id, the GET stream opened twice (409), a made-up id; with and without
    /// polling.
    #[test]
    fn smoke_resumable_streams() {
        let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"f","version":"0"}}}"#;
        let ask = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{"keys":["e1"]}}}"#;
        let requests: [(u8, u8, &[u8]); 6] = [
            (1, 0, init),
            (0, 2, ask),
            (2 | 1 << 3, 2, b""),
            (2, 2, b""),
            (2, 2, b""),
            (2 | 2 << 3, 2, b"77-0"),
        ];
        for control in [0u8, 1] {
            let mut input = vec![control];
            for (a, b, body) in requests {
                input.extend_from_slice(&[a, b]);
                input.extend_from_slice(body);
                input.extend_from_slice(b"\0\0");
            }
            http_endpoint(&input);
        }
    }
}
