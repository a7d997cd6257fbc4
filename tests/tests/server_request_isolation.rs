//! Request ids, cancellation, log levels and subscriptions of several clients of one
//! server: what one client sends never reaches another's work, on the fake clock.

use mcp_proto::Instant;
use mcp_proto::client::LogLevel;
use mcp_proto::server::http::{
    HttpEndpoint, HttpEndpointConfig, HttpReply, HttpRequest, HttpStream,
};
use std::sync::{Arc, Mutex};

use mcp_proto::server::{Completer, Server, Tool, ToolCall, ToolNote, ToolOutcome, example};
use serde_json::{Value, json};

fn post(session: Option<&str>, body: &Value) -> HttpRequest {
    let mut r = HttpRequest::new("POST", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Content-Type", "application/json")
        .with_header("Accept", "application/json, text/event-stream");
    if let Some(s) = session {
        r = r
            .with_header("Mcp-Session-Id", s)
            .with_header("MCP-Protocol-Version", "2025-11-25");
    }
    r.with_body(body.to_string())
}

fn get(session: &str) -> HttpRequest {
    HttpRequest::new("GET", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Accept", "text/event-stream")
        .with_header("Mcp-Session-Id", session)
        .with_header("MCP-Protocol-Version", "2025-11-25")
}

/// The JSON messages of an SSE body or a JSON body.
fn messages(body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(body);
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        return vec![v];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

fn complete(reply: HttpReply) -> (u16, Option<String>, Vec<Value>) {
    match reply {
        HttpReply::Complete(r) => (
            r.status,
            r.header("mcp-session-id").map(str::to_owned),
            messages(&r.body),
        ),
        _ => panic!("a stream where a complete answer was expected"),
    }
}

/// The stream of a reply and the messages its head already carries.
fn opened(reply: HttpReply) -> (HttpStream, Vec<Value>) {
    let s = stream(reply);
    let head = messages(&s.response().body);
    (s, head)
}

fn stream(reply: HttpReply) -> HttpStream {
    match reply {
        HttpReply::Stream(s) => s,
        HttpReply::Complete(r) => panic!(
            "a complete answer {} where a stream was expected: {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        ),
        _ => panic!("an unknown reply"),
    }
}

fn drain(e: &mut HttpEndpoint, s: &HttpStream) -> Vec<Value> {
    let mut out = Vec::new();
    e.poll_stream(s, &mut out);
    messages(&out)
}

fn initialize(e: &mut HttpEndpoint, caps: Value) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps,
        "clientInfo": {"name": "t", "version": "1"}}});
    let (status, session, _) = complete(e.handle_request(Instant::ZERO, &post(None, &body)));
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    complete(e.handle_request(Instant::ZERO, &post(Some(&session), &done)));
    session
}

fn noisy_server() -> Server {
    let config = example::config()
        .with_logging()
        .with_resource_subscriptions()
        .with_tool(Tool::new(
            "noisy",
            "Logs at debug and at error, then answers",
            json!({"type": "object"}),
            |_: &ToolCall<'_>| ToolOutcome::DoneWithNotes {
                notes: vec![
                    ToolNote::log(LogLevel::Debug, "debug detail"),
                    ToolNote::log(LogLevel::Error, "an error"),
                ],
                result: json!({"content": [{"type": "text", "text": "ok"}]}),
            },
        ));
    Server::new(config)
}

#[test]
fn a_cancellation_from_one_session_leaves_another_sessions_call_of_the_same_id_running() {
    let mut e =
        HttpEndpoint::with_sessions(example::server(), HttpEndpointConfig::default(), &[5; 32]);
    let a = initialize(&mut e, json!({"elicitation": {}}));
    let b = initialize(&mut e, json!({"elicitation": {}}));
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "confirm"}});
    let (sa, mut asked) = opened(e.handle_request(Instant::ZERO, &post(Some(&a), &call)));
    asked.extend(drain(&mut e, &sa));
    let ask = asked
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .expect("asked");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1}});
    let (status, _, _) = complete(e.handle_request(Instant::ZERO, &post(Some(&b), &cancel)));
    assert_eq!(status, 202);
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"proceed": true}}});
    complete(e.handle_request(Instant::ZERO, &post(Some(&a), &answer)));
    let rest = drain(&mut e, &sa);
    assert!(
        rest.iter()
            .any(|m| m["id"] == 1 && m.get("result").is_some()),
        "A's call was answered: {rest:?}"
    );
}

#[test]
fn each_session_keeps_its_own_log_level() {
    let mut e =
        HttpEndpoint::with_sessions(noisy_server(), HttpEndpointConfig::default(), &[6; 32]);
    let a = initialize(&mut e, json!({}));
    let b = initialize(&mut e, json!({}));
    let set = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
        "params": {"level": "error"}});
    let (status, _, _) = complete(e.handle_request(Instant::ZERO, &post(Some(&a), &set)));
    assert_eq!(status, 200);
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "noisy"}});
    let (_, _, got_a) = complete(e.handle_request(Instant::ZERO, &post(Some(&a), &call)));
    let (_, _, got_b) = complete(e.handle_request(Instant::ZERO, &post(Some(&b), &call)));
    let logs = |ms: &[Value]| {
        ms.iter()
            .filter(|m| m["method"] == "notifications/message")
            .map(|m| m["params"]["level"].as_str().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(logs(&got_a), ["error"], "{got_a:?}");
    assert_eq!(logs(&got_b), ["debug", "error"], "{got_b:?}");
}

#[test]
fn a_resource_update_reaches_only_the_sessions_subscribed_to_it() {
    let mut e =
        HttpEndpoint::with_sessions(noisy_server(), HttpEndpointConfig::default(), &[7; 32]);
    let a = initialize(&mut e, json!({}));
    let b = initialize(&mut e, json!({}));
    let sub = json!({"jsonrpc": "2.0", "id": 4, "method": "resources/subscribe",
        "params": {"uri": "example://readme"}});
    let (status, _, body) = complete(e.handle_request(Instant::ZERO, &post(Some(&a), &sub)));
    assert_eq!(status, 200, "{body:?}");
    let ga = stream(e.handle_request(Instant::ZERO, &get(&a)));
    let gb = stream(e.handle_request(Instant::ZERO, &get(&b)));
    drain(&mut e, &ga);
    drain(&mut e, &gb);
    e.resource_updated(Instant::ZERO, "example://readme");
    let to_a = drain(&mut e, &ga);
    let to_b = drain(&mut e, &gb);
    let updated = |ms: &[Value]| {
        ms.iter()
            .filter(|m| m["method"] == "notifications/resources/updated")
            .count()
    };
    assert_eq!(updated(&to_a), 1, "{to_a:?}");
    assert_eq!(updated(&to_b), 0, "{to_b:?}");
}

/// A 2026-07-28 `tools/call` of `name` with `arguments`, as a stateless client posts it.
fn modern_call(id: i64, name: &str, arguments: &Value) -> HttpRequest {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
    "name": name, "arguments": arguments,
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    HttpRequest::new("POST", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Content-Type", "application/json")
        .with_header("Accept", "application/json, text/event-stream")
        .with_header("MCP-Protocol-Version", "2026-07-28")
        .with_header("Mcp-Method", "tools/call")
        .with_header("Mcp-Name", name)
        .with_body(body.to_string())
}

type Outbox = Arc<Mutex<Vec<Completer>>>;

/// The example server with a `later` tool whose work is deferred, its completers kept
/// in `outbox` (so that the calls wait).
fn deferring_server(outbox: &Outbox) -> Server {
    let kept = outbox.clone();
    let tool = Tool::new(
        "later",
        "Answers when the work done elsewhere completes",
        json!({"type": "object"}),
        move |c: &ToolCall<'_>| {
            kept.lock().unwrap().push(c.defer());
            ToolOutcome::Deferred
        },
    );
    example::server_with(|c| c.tools.push(tool))
}

/// Arguments holding `n` numbers: about 2 bytes each on the wire, far more once parsed.
fn numbers(n: usize) -> Value {
    json!({"numbers": vec![0; n]})
}

#[test]
fn one_principal_cannot_take_every_clients_room_for_deferred_work() {
    let outbox = Outbox::default();
    let mut e = HttpEndpoint::new(deferring_server(&outbox));
    let t0 = Instant::ZERO;
    // Mallory parks calls with large (but admissible: at most about 1 MB of text each)
    // arguments, then smaller ones, until the server refuses her even a small one: all
    // within her share of the open streams (a quarter of 64).
    let mut parked = Vec::new();
    let mut id = 0;
    for n in [500_000, 100_000, 20_000] {
        let args = numbers(n);
        loop {
            id += 1;
            match e.handle_request_as(t0, &modern_call(id, "later", &args), Some("mallory")) {
                HttpReply::Stream(s) => parked.push(s),
                HttpReply::Complete(_) => break,
                _ => panic!("an unknown reply"),
            }
        }
    }
    assert!(!parked.is_empty());
    // Alice, another principal, then parks one call with a tenth of those arguments.
    let small = numbers(50_000);
    let reply = e.handle_request_as(t0, &modern_call(1, "later", &small), Some("alice"));
    match reply {
        HttpReply::Stream(_) => {}
        HttpReply::Complete(r) => panic!(
            "alice's call was refused after mallory parked {} calls: {} {}",
            parked.len(),
            r.status,
            String::from_utf8_lossy(&r.body)
        ),
        _ => panic!("an unknown reply"),
    }
}
