//! `serve_http`: the example server over Streamable HTTP, exercised with raw HTTP/1.1 on
//! loopback sockets (responses read with `mcp_proto::http::ResponseReader`).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcp_blocking::mcp_proto::http::{HttpLimits, ResponseEvent, ResponseHead, ResponseReader};
use mcp_blocking::mcp_proto::server::example;
use mcp_blocking::{HttpServeOptions, HttpServerHandle, serve_http, serve_http_with};
use serde_json::{Value, json};

const V: &str = "2026-07-28";

fn start() -> HttpServerHandle {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    serve_http(listener, example::server()).unwrap()
}

/// One raw connection.
struct Conn {
    stream: TcpStream,
    reader: Option<ResponseReader>,
}

/// A response read whole.
#[derive(Debug)]
struct Resp {
    head: ResponseHead,
    body: Vec<u8>,
    keep_alive: bool,
}

impl Resp {
    fn status(&self) -> u16 {
        self.head.status
    }

    fn json(&self) -> Value {
        assert_eq!(
            self.head.header("content-type"),
            Some("application/json"),
            "{self:?}"
        );
        serde_json::from_slice(&self.body).unwrap()
    }

    fn error_code(&self) -> i64 {
        self.json()["error"]["code"].as_i64().unwrap()
    }
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Conn {
            stream,
            reader: None,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// The next event of the current response, reading the socket as needed.
    fn event(&mut self) -> ResponseEvent {
        let reader = self
            .reader
            .get_or_insert_with(|| ResponseReader::new(HttpLimits::streaming(), "POST"));
        loop {
            if let Some(event) = reader.poll_event() {
                return event;
            }
            let mut buf = [0u8; 4096];
            match self.stream.read(&mut buf) {
                Ok(0) => reader.handle_eof(),
                Ok(n) => reader.handle_input(&buf[..n]),
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    fn head(&mut self) -> ResponseHead {
        match self.event() {
            ResponseEvent::Head(head) => head,
            other => panic!("expected a head, got {other:?}"),
        }
    }

    /// Body events until the body holds `n` SSE messages (or the response ends).
    fn sse_until(&mut self, body: &mut Vec<u8>, n: usize) -> bool {
        while sse(body).len() < n {
            match self.event() {
                ResponseEvent::Body(b) => body.extend_from_slice(&b),
                ResponseEvent::End { .. } => return true,
                other => panic!("{other:?}"),
            }
        }
        false
    }

    /// The rest of the current response; prepares for the next one.
    fn finish(&mut self, head: ResponseHead, mut body: Vec<u8>) -> Resp {
        loop {
            match self.event() {
                ResponseEvent::Body(b) => body.extend_from_slice(&b),
                ResponseEvent::End { keep_alive } => {
                    if let Some(reader) = &mut self.reader {
                        if keep_alive {
                            reader.reset_for_next("POST").unwrap();
                        } else {
                            self.reader = None;
                        }
                    }
                    return Resp {
                        head,
                        body,
                        keep_alive,
                    };
                }
                other => panic!("{other:?}"),
            }
        }
    }

    fn response(&mut self) -> Resp {
        let head = self.head();
        self.finish(head, Vec::new())
    }

    fn roundtrip(&mut self, request: &[u8]) -> Resp {
        self.send(request);
        self.response()
    }

    /// Whether the server closed the connection (EOF within a second).
    fn closed_by_server(&mut self) -> bool {
        self.stream
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        let mut buf = [0u8; 64];
        matches!(self.stream.read(&mut buf), Ok(0) | Err(_))
    }
}

fn request(method: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    request_to(method, "/mcp", headers, body)
}

fn request_to(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    if !body.is_empty() {
        out.push_str("Content-Type: application/json\r\n");
        out.push_str("Accept: application/json, text/event-stream\r\n");
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn meta_params(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    });
    params
}

/// A modern POST with the standard headers plus `extra`.
fn modern(id: i64, method: &str, params: Value, extra: &[(&str, &str)]) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": meta_params(params)});
    let mut headers = vec![("MCP-Protocol-Version", V), ("Mcp-Method", method)];
    headers.extend_from_slice(extra);
    request("POST", &headers, body.to_string().as_bytes())
}

/// A legacy POST in session `session`.
fn legacy_in(session: &str, body: &Value) -> Vec<u8> {
    request(
        "POST",
        &[
            ("MCP-Protocol-Version", "2025-06-18"),
            ("Mcp-Session-Id", session),
        ],
        body.to_string().as_bytes(),
    )
}

fn legacy(body: &Value) -> Vec<u8> {
    request(
        "POST",
        &[("MCP-Protocol-Version", "2025-06-18")],
        body.to_string().as_bytes(),
    )
}

fn initialize(caps: Value) -> Vec<u8> {
    request(
        "POST",
        &[],
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": caps,
            "clientInfo": {"name": "raw", "version": "1"}}})
        .to_string()
        .as_bytes(),
    )
}

/// The `data:` payloads of an SSE body.
fn sse(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .collect();
            (!data.is_empty()).then(|| serde_json::from_str(&data.join("\n")).unwrap())
        })
        .collect()
}

#[test]
fn modern_discover_and_header_validation() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    let r = c.roundtrip(&modern(1, "server/discover", json!({}), &[]));
    assert_eq!(r.status(), 200);
    let v = r.json();
    assert_eq!(v["id"], 1);
    assert_eq!(v["result"]["resultType"], "complete");
    assert!(v["result"]["supportedVersions"].is_array());
    assert!(r.head.header("mcp-session-id").is_none());

    // Missing MCP-Protocol-Version: 400 -32020.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": meta_params(json!({}))});
    let r = c.roundtrip(&request(
        "POST",
        &[("Mcp-Method", "tools/list")],
        body.to_string().as_bytes(),
    ));
    assert_eq!((r.status(), r.error_code()), (400, -32020));
    assert_eq!(r.json()["id"], 2);

    // Mcp-Name does not match params.name: 400 -32020.
    let call = json!({"name": "echo", "arguments": {"text": "hi"}});
    let r = c.roundtrip(&modern(
        3,
        "tools/call",
        call.clone(),
        &[("Mcp-Name", "add")],
    ));
    assert_eq!((r.status(), r.error_code()), (400, -32020));
    let r = c.roundtrip(&modern(4, "tools/call", call, &[("Mcp-Name", "echo")]));
    assert_eq!(r.status(), 200);
    assert_eq!(r.json()["result"]["content"][0]["text"], "hi");

    // An unsupported version in header and body: 400 -32022 with data.supported.
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let r = c.roundtrip(&request(
        "POST",
        &[
            ("MCP-Protocol-Version", "2099-01-01"),
            ("Mcp-Method", "tools/list"),
        ],
        body.to_string().as_bytes(),
    ));
    assert_eq!((r.status(), r.error_code()), (400, -32022));
    assert!(
        r.json()["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!(V))
    );

    // Unknown method: 404 -32601.
    let r = c.roundtrip(&modern(6, "nothing/here", json!({}), &[]));
    assert_eq!((r.status(), r.error_code()), (404, -32601));
    server.stop();
}

#[test]
fn legacy_sessions_keep_clients_apart() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    let r = c.roundtrip(&initialize(json!({})));
    assert_eq!(r.status(), 200);
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-06-18");
    let session = r
        .head
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    assert!(session.len() >= 22, "{session}");
    let r = c.roundtrip(&legacy_in(
        &session,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ));
    assert_eq!((r.status(), r.body.len()), (202, 0));
    // Another client gets another session.
    let mut other = Conn::open(server.local_addr());
    let r = other.roundtrip(&initialize(json!({})));
    let second = r.head.header("mcp-session-id").unwrap().to_owned();
    assert_ne!(session, second);
    // No session id: 400; an unknown one: 404.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let r = other.roundtrip(&legacy(&list));
    assert_eq!((r.status(), r.error_code()), (400, -32600));
    let r = other.roundtrip(&legacy_in("not-a-session", &list));
    assert_eq!(r.status(), 404);
    // The session is served from any connection.
    let mut c = Conn::open(server.local_addr());
    let r = c.roundtrip(&legacy_in(&session, &list));
    assert_eq!(r.status(), 200);
    let listed = r.json();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"echo") && names.contains(&"hang"),
        "{names:?}"
    );
    // DELETE ends it.
    let r = c.roundtrip(&request("DELETE", &[("Mcp-Session-Id", &session)], b""));
    assert_eq!(r.status(), 200);
    let r = c.roundtrip(&legacy_in(&session, &list));
    assert_eq!(r.status(), 404);
    server.stop();
}

#[test]
fn transport_answers() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    // A GET stream needs a session; other methods are not served.
    let r = c.roundtrip(&request("GET", &[("Accept", "text/event-stream")], b""));
    assert_eq!(r.status(), 400);
    let r = c.roundtrip(&request("PUT", &[], b""));
    assert_eq!(
        (r.status(), r.head.header("allow")),
        (405, Some("GET, POST, DELETE"))
    );
    // DELETE needs a session id.
    let r = c.roundtrip(&request("DELETE", &[], b""));
    assert_eq!(r.status(), 400);
    let r = c.roundtrip(&request_to("POST", "/other", &[], b"{}"));
    assert_eq!(r.status(), 404);
    // A notification: 202, empty body.
    let r = c.roundtrip(&modern_notification());
    assert_eq!((r.status(), r.body.len()), (202, 0));
    // Bad Origin: 403; a loopback one is fine.
    let r = c.roundtrip(&modern(
        1,
        "server/discover",
        json!({}),
        &[("Origin", "https://evil.example")],
    ));
    assert_eq!(r.status(), 403);
    let r = c.roundtrip(&modern(
        1,
        "server/discover",
        json!({}),
        &[("Origin", "http://localhost:6274")],
    ));
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.head.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    // That page's CORS preflight: 204, then the connection goes on.
    let r = c.roundtrip(&request(
        "OPTIONS",
        &[
            ("Origin", "http://localhost:6274"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "content-type, mcp-method"),
        ],
        b"",
    ));
    assert_eq!(r.status(), 204);
    assert_eq!(
        r.head.header("access-control-allow-headers"),
        Some("content-type, mcp-method")
    );
    assert!(r.keep_alive);
    // Invalid JSON: 400 -32700 with id null.
    let r = c.roundtrip(&request("POST", &[], b"{nope"));
    assert_eq!((r.status(), r.error_code()), (400, -32700));
    assert_eq!(r.json()["id"], Value::Null);
    assert!(r.keep_alive, "a bad body does not end the connection");
    // A chunked body is refused with 411, and the connection ends.
    c.send(
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    );
    let r = c.response();
    assert_eq!(r.status(), 411);
    assert!(!r.keep_alive);
    assert!(c.closed_by_server());
    server.stop();
}

fn modern_notification() -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "method": "notifications/x-example", "params": meta_params(json!({}))});
    request(
        "POST",
        &[
            ("MCP-Protocol-Version", V),
            ("Mcp-Method", "notifications/x-example"),
        ],
        body.to_string().as_bytes(),
    )
}

#[test]
fn keep_alive_and_pipelining() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    // Two requests, one after the other, on one connection.
    let r = c.roundtrip(&modern(1, "tools/list", json!({}), &[]));
    assert!(r.keep_alive);
    assert_eq!(r.json()["id"], 1);
    let r = c.roundtrip(&modern(2, "prompts/list", json!({}), &[]));
    assert_eq!(r.json()["result"]["prompts"][0]["name"], "greet");

    // Three pipelined in one write, the last one asking to close: answered in order.
    let mut batch = Vec::new();
    for id in 10..13 {
        let text = json!({"name": "echo", "arguments": {"text": format!("m{id}")}});
        let mut extra = vec![("Mcp-Name", "echo")];
        if id == 12 {
            extra.push(("Connection", "close"));
        }
        batch.extend(modern(id, "tools/call", text, &extra));
    }
    c.send(&batch);
    for id in 10..13 {
        let r = c.response();
        let v = r.json();
        assert_eq!(v["id"], id);
        assert_eq!(v["result"]["content"][0]["text"], format!("m{id}"));
        assert_eq!(r.keep_alive, id != 12);
    }
    assert!(c.closed_by_server());

    // A request trickling in byte by byte is the same request.
    let mut c = Conn::open(server.local_addr());
    for b in modern(20, "server/discover", json!({}), &[]) {
        c.send(&[b]);
    }
    assert_eq!(c.response().json()["id"], 20);
    server.stop();
}

#[test]
fn open_streams_legacy_input_and_cancellation() {
    let server = start();
    let addr = server.local_addr();
    let mut c = Conn::open(addr);
    let r = c.roundtrip(&initialize(json!({"elicitation": {}})));
    assert_eq!(r.status(), 200);
    let session = r.head.header("mcp-session-id").unwrap().to_owned();

    // confirm asks through elicitation/create on an SSE stream that stays open.
    c.send(&legacy_in(
        &session,
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "confirm"}}),
    ));
    let head = c.head();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    assert_eq!(head.header("x-accel-buffering"), Some("no"));
    let mut body = Vec::new();
    assert!(!c.sse_until(&mut body, 1));
    let ask = sse(&body).remove(0);
    assert_eq!(ask["method"], "elicitation/create");
    // Its id cannot be guessed: not the machine's counter.
    assert!(ask["id"].as_str().is_some_and(|id| id.len() >= 22), "{ask}");

    // Another client cannot answer it: neither without a session, nor from its own,
    // nor with the machine's own id in this session.
    let mut m = Conn::open(addr);
    let mallory = m
        .roundtrip(&initialize(json!({"elicitation": {}})))
        .head
        .header("mcp-session-id")
        .unwrap()
        .to_owned();
    let forged = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept",
        "content": {"proceed": true, "name": "mallory"}}});
    assert_eq!(m.roundtrip(&legacy(&forged)).status(), 202);
    assert_eq!(m.roundtrip(&legacy_in(&mallory, &forged)).status(), 202);
    let guessed = json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept"}});
    assert_eq!(m.roundtrip(&legacy_in(&session, &guessed)).status(), 202);
    // Nor cancel it.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7}});
    assert_eq!(m.roundtrip(&legacy_in(&mallory, &cancel)).status(), 202);

    // The answer comes on another connection in the session: 202; the result ends the
    // first stream.
    let mut d = Conn::open(addr);
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}});
    assert_eq!(d.roundtrip(&legacy_in(&session, &answer)).status(), 202);
    let r = c.finish(head, body);
    let messages = sse(&r.body);
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[1]["id"], 7);
    assert_eq!(messages[1]["result"]["content"][0]["text"], "declined");
    assert!(r.keep_alive);
    // The connection is still usable after the stream.
    assert_eq!(
        c.roundtrip(&modern(8, "tools/list", json!({}), &[]))
            .status(),
        200
    );

    // hang: the stream opens and stays open; the client leaves; the server goes on.
    let mut h = Conn::open(addr);
    h.send(&modern(
        9,
        "tools/call",
        json!({"name": "hang"}),
        &[("Mcp-Name", "hang")],
    ));
    let head = h.head();
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    drop(h);
    assert_eq!(
        c.roundtrip(&modern(10, "tools/list", json!({}), &[]))
            .status(),
        200
    );

    // Stopping with a stream open returns promptly.
    let mut h = Conn::open(addr);
    h.send(&modern(
        11,
        "tools/call",
        json!({"name": "hang"}),
        &[("Mcp-Name", "hang")],
    ));
    let _ = h.head();
    let started = Instant::now();
    server.stop();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(h.closed_by_server());
}

#[test]
fn connection_limit() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut options = HttpServeOptions::default();
    options.max_connections = 1;
    let server = serve_http_with(listener, example::server(), options).unwrap();
    // A connection with a stream open is in use: never evicted for a newcomer.
    let mut a = Conn::open(server.local_addr());
    a.send(&modern(
        1,
        "tools/call",
        json!({"name": "hang"}),
        &[("Mcp-Name", "hang")],
    ));
    assert_eq!(a.head().status, 200);
    let mut b = Conn::open(server.local_addr());
    let r = b.roundtrip(&modern(1, "tools/list", json!({}), &[]));
    assert_eq!(r.status(), 503);
    drop(a);
    // Once the first connection is gone, a new one is served again.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut c = Conn::open(server.local_addr());
        if c.roundtrip(&modern(1, "tools/list", json!({}), &[]))
            .status()
            == 200
        {
            break;
        }
        assert!(Instant::now() < deadline, "the slot was never freed");
        std::thread::sleep(Duration::from_millis(50));
    }
    server.stop();
}

/// Requests that stay open (a tool that never answers) cannot take every connection:
/// with the defaults, once `max_open_streams` of them are open the next one is refused
/// with a JSON-RPC error, and a prompt request on a new connection is still served.
/// (With `max_connections` equal to `max_open_streams`, the 65th client was turned away
/// at the door, whatever it asked.)
#[test]
fn open_streams_leave_connections_for_prompt_requests() {
    let options = HttpServeOptions::default();
    let streams = options.endpoint.max_open_streams;
    let server = start();
    let addr = server.local_addr();
    let hang = |id| {
        modern(
            id,
            "tools/call",
            json!({"name": "hang"}),
            &[("Mcp-Name", "hang")],
        )
    };
    let held: Vec<Conn> = (0..streams)
        .map(|i| {
            let mut c = Conn::open(addr);
            c.send(&hang(i64::try_from(i).unwrap()));
            assert_eq!(c.head().header("content-type"), Some("text/event-stream"));
            c
        })
        .collect();
    let mut one_more = Conn::open(addr);
    let refused = one_more.roundtrip(&hang(1000));
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.error_code(), -32603, "{:?}", refused.json());
    let mut prompt = Conn::open(addr);
    let listed = prompt.roundtrip(&modern(1001, "tools/list", json!({}), &[]));
    assert_eq!(listed.status(), 200, "{listed:?}");
    drop(held);
    server.stop();
}

/// Clients that hold every place without finishing a request (a head begun and never
/// ended) do not keep a newcomer out once they have held it a second: the one waiting
/// longest is evicted and answered 503, the newcomer served. (It was refused with 503
/// until the head deadline; a body dripped within its rate held a place for hours.)
#[test]
fn a_newcomer_takes_the_place_of_a_connection_that_only_holds_it() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut options = HttpServeOptions::default();
    options.max_connections = 2;
    let server = serve_http_with(listener, example::server(), options).unwrap();
    let addr = server.local_addr();
    let holders: Vec<Conn> = (0..2)
        .map(|_| {
            let mut c = Conn::open(addr);
            c.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{");
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1200));
    let mut newcomer = Conn::open(addr);
    let r = newcomer.roundtrip(&modern(1, "tools/list", json!({}), &[]));
    assert_eq!(r.status(), 200, "{r:?}");
    // The one waiting longest is told at once, not at its body deadline (5 s).
    let mut holders = holders.into_iter();
    let mut evicted = holders.next().unwrap();
    let told = Instant::now();
    let mut answer = Vec::new();
    let _ = evicted.stream.read_to_end(&mut answer);
    assert!(
        told.elapsed() < Duration::from_millis(1500),
        "{:?}",
        told.elapsed()
    );
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    drop(holders);
    server.stop();
}

/// A connection that never sent a byte is evicted for a newcomer once it has waited a
/// second, and closed at once: it used to stay until its head deadline (10 s), holding
/// its place among those being evicted, so that a client opening 20 idle connections a
/// second kept every other client refused.
#[test]
fn an_evicted_idle_connection_is_closed_at_once() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut options = HttpServeOptions::default();
    options.max_connections = 1;
    let server = serve_http_with(listener, example::server(), options).unwrap();
    let addr = server.local_addr();
    let mut idle = Conn::open(addr);
    std::thread::sleep(Duration::from_millis(1200));
    let mut newcomer = Conn::open(addr);
    let r = newcomer.roundtrip(&modern(1, "tools/list", json!({}), &[]));
    assert_eq!(r.status(), 200, "{r:?}");
    let told = Instant::now();
    let mut rest = Vec::new();
    let read = idle.stream.read_to_end(&mut rest);
    assert!(read.is_ok() && rest.is_empty(), "{read:?} {rest:?}");
    assert!(
        told.elapsed() < Duration::from_millis(1500),
        "{:?}",
        told.elapsed()
    );
    server.stop();
}

/// Two clients dripping a request head, a byte every 800 ms, hold both places of a
/// server with `max_connections = 2` only until the head deadline: a third client, told
/// 503 meanwhile, is served within `head_timeout` + 1 s (now after about a second, when
/// it takes the place of one of them). (Before the head deadline, every byte restarted a
/// 30 s idle timer, and such clients held the server indefinitely.)
#[test]
fn dripping_clients_cannot_hold_the_server() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut options = HttpServeOptions::default();
    options.max_connections = 2;
    options.head_timeout = Duration::from_secs(2);
    let server = serve_http_with(listener, example::server(), options).unwrap();
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let connected = Instant::now();
    let drippers: Vec<_> = (0..2)
        .map(|_| {
            let stop = Arc::clone(&stop);
            let mut stream = TcpStream::connect(addr).unwrap();
            std::thread::spawn(move || {
                for b in modern(1, "tools/list", json!({}), &[]) {
                    if stop.load(Ordering::SeqCst) || stream.write_all(&[b]).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(800));
                }
            })
        })
        .collect();
    // Both are accepted, and hold the two places, before the third client comes.
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let limit = Duration::from_secs(3);
    let mut refused = 0;
    loop {
        let mut c = Conn::open(addr);
        let r = c.roundtrip(&modern(2, "tools/list", json!({}), &[]));
        if r.status() == 200 {
            break;
        }
        assert_eq!(r.status(), 503);
        assert_eq!(r.head.header("retry-after"), Some("1"));
        refused += 1;
        assert!(
            started.elapsed() < limit,
            "still refused after {:?}",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(started.elapsed() < limit, "{:?}", started.elapsed());
    // A dripper is evicted once it has held its place a second: only a first try well
    // inside that second must have been refused (a machine stalled past it lets the
    // newcomer in at once, which is right too).
    if started.saturating_duration_since(connected) < Duration::from_millis(800) {
        assert!(refused > 0, "the dripping clients never held the server");
    }
    stop.store(true, Ordering::SeqCst);
    for dripper in drippers {
        dripper.join().unwrap();
    }
    server.stop();
}

/// The CLI binary, rebuilt first: `cargo test --test serve_http` alone does not build
/// examples, and `common::example` only builds a missing one.
fn fresh_mcp() -> std::path::PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", "mcp-blocking", "--example", "mcp"])
        .status()
        .expect("run cargo build");
    assert!(status.success(), "building the mcp example failed");
    common::example("mcp")
}

#[test]
fn cli_serve_example_http() {
    let mcp = fresh_mcp();
    let mut child = Command::new(&mcp)
        .args(["serve-example", "--http", "127.0.0.1:0", "--era", "modern"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim();
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("not an endpoint URL: {line:?}"));
    let mut c = Conn::open(addr.parse().unwrap());
    let r = c.roundtrip(&modern(1, "server/discover", json!({}), &[]));
    assert_eq!(r.json()["result"]["supportedVersions"], json!([V]));
    // Modern only: initialize is refused.
    assert_eq!(c.roundtrip(&initialize(json!({}))).status(), 400);
    child.kill().unwrap();
    child.wait().unwrap();

    // Non-loopback addresses are refused (usage error).
    let out = Command::new(&mcp)
        .args(["serve-example", "--http", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `serve_http` seals `requestState` under a fresh key: the state of an input round is
/// a signed token, and a forged plain state is refused.
#[test]
fn request_states_are_sealed_by_default() {
    let server = start();
    let mut c = Conn::open(server.local_addr());
    let caps = |mut p: Value| {
        p["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
        p
    };
    let first = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": caps(meta_params(json!({"name": "confirm", "arguments": {}})))});
    let headers = [
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "confirm"),
    ];
    let r = c.roundtrip(&request("POST", &headers, first.to_string().as_bytes()));
    let v = r.json();
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    let state = v["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(state.starts_with("v1.k0."), "{state}");
    let answer = json!({"confirm": {"action": "accept", "content": {"proceed": true}}});
    let forged = r#"plain1:{"method":"tools/call","name":"confirm","round":1,"asked":["confirm"],"inputs":{}}"#;
    for (token, ok) in [(forged, false), (state.as_str(), true)] {
        let retry = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": caps(meta_params(json!({"name": "confirm", "arguments": {},
                "requestState": token, "inputResponses": answer})))});
        let r = c.roundtrip(&request("POST", &headers, retry.to_string().as_bytes()));
        let v = r.json();
        if ok {
            assert_eq!(
                v["result"]["content"][0]["text"], "accepted: proceed=true name=friend",
                "{v}"
            );
        } else {
            assert_eq!(v["error"]["code"], -32602, "{v}");
        }
    }
}

/// Thread ids of this process's threads that serve connections.
#[cfg(target_os = "linux")]
fn connection_threads() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|entry| {
            let dir = entry.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            (comm.trim() == "mcp-http-conn")
                .then(|| dir.file_name().unwrap().to_string_lossy().into_owned())
        })
        .collect()
}

/// How many threads of this process are blocked in `accept4` (std's accept on Linux) on
/// descriptor `fd`, as `/proc` says: a thread's `syscall` file starts with the call's
/// number and its first argument.
#[cfg(target_os = "linux")]
fn threads_accepting_on(fd: std::os::fd::RawFd) -> usize {
    // `accept4`'s number; the generic table (arm64, riscv64, loongarch64) has it at 242.
    let accept4 = if cfg!(target_arch = "x86_64") {
        288
    } else if cfg!(target_arch = "x86") {
        364
    } else if cfg!(target_arch = "arm") {
        366
    } else {
        242
    };
    let call = format!("{accept4} {fd:#x} ");
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path().join("syscall")).ok())
        .filter(|s| s.starts_with(&call))
        .count()
}

/// One `tools/call echo` on a connection of its own, kept open.
#[cfg(target_os = "linux")]
fn echo_on_a_new_connection(server: &HttpServerHandle, id: i64) -> Conn {
    let mut c = Conn::open(server.local_addr());
    let text = json!({"name": "echo", "arguments": {"text": format!("n{id}")}});
    let r = c.roundtrip(&modern(id, "tools/call", text, &[("Mcp-Name", "echo")]));
    assert_eq!(r.json()["result"]["content"][0]["text"], format!("n{id}"));
    c
}

/// A client that opens a connection per request (as rmcp's does) is served by the threads
/// that served the connections before, not by a thread started for each one; a thread
/// whose connection is over waits for the next one in `accept` itself (it is not handed
/// connections by another thread); and `stop` wakes every thread waiting there.
#[cfg(target_os = "linux")]
#[test]
fn connection_threads_serve_one_connection_after_another() {
    use std::os::fd::AsRawFd;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let fd = listener.as_raw_fd();
    let server = serve_http(listener, example::server()).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for id in 0..20 {
        let c = echo_on_a_new_connection(&server, id);
        // The thread serving this connection is alive now, waiting for its next request.
        seen.extend(connection_threads());
        drop(c);
    }
    // A connection accepted before the thread of the one just closed is back waiting
    // gets a thread of its own; twenty would be one per connection.
    assert!(seen.len() <= 4, "{} threads for 20 connections", seen.len());
    // Three connections at once: three threads serve them while a fourth accepts.
    let held: Vec<Conn> = (20..23)
        .map(|id| echo_on_a_new_connection(&server, id))
        .collect();
    drop(held);

    // Each of the four threads has seen its client leave and waits in `accept` itself.
    let deadline = Instant::now() + Duration::from_secs(5);
    while threads_accepting_on(fd) < 4 {
        assert!(
            Instant::now() < deadline,
            "{} threads wait in accept, not 4",
            threads_accepting_on(fd)
        );
        std::thread::yield_now();
    }
    // `stop` wakes each of them, and joins them.
    let started = Instant::now();
    let (stopped, stop) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        server.stop();
        let _ = stopped.send(());
    });
    assert!(
        stop.recv_timeout(Duration::from_secs(5)).is_ok(),
        "stop did not return"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "stop took {:?}",
        started.elapsed()
    );
}
