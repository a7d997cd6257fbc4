//! Tool handlers that panic: the call is answered with an error, the other calls (and
//! the other clients' sessions) go on as if nothing happened.

use std::panic::{AssertUnwindSafe, catch_unwind};

use mcp_proto::Instant;
use mcp_proto::server::http::{HttpEndpoint, HttpEndpointConfig, HttpReply, HttpRequest};
use mcp_proto::server::{Server, Tool, ToolOutcome, example};
use serde_json::{Value, json};

/// The example server with `boom` (panics) and `caps` (answers the client's
/// capabilities as it sees them).
fn server() -> Server {
    example::server_with(|c| {
        c.tools.push(Tool::new(
            "boom",
            "Panics",
            json!({"type": "object"}),
            |_| panic!("the boom tool failed"),
        ));
        c.tools.push(Tool::new(
            "caps",
            "The caller's capabilities",
            json!({"type": "object"}),
            |call| {
                ToolOutcome::Done(json!({"content": [
                    {"type": "text", "text": call.client_capabilities.to_string()}
                ]}))
            },
        ));
    })
}

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

struct Answer {
    status: u16,
    session: Option<String>,
    body: Value,
}

/// The endpoint's answer, or `None` when handling the request panicked (as a
/// connection's thread of `serve_http` does, the endpoint then used by the others).
fn send(e: &mut HttpEndpoint, request: &HttpRequest) -> Option<Answer> {
    let reply = catch_unwind(AssertUnwindSafe(|| {
        e.handle_request(Instant::ZERO, request)
    }));
    match reply.ok()? {
        HttpReply::Complete(r) => Some(Answer {
            status: r.status,
            session: r.header("mcp-session-id").map(str::to_owned),
            body: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
        }),
        _ => Some(Answer {
            status: 200,
            session: None,
            body: json!("stream"),
        }),
    }
}

fn initialize(e: &mut HttpEndpoint, caps: Value) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps,
        "clientInfo": {"name": "t", "version": "1"}}});
    let answer = send(e, &post(None, &body)).expect("initialize answered");
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.session.expect("a session id")
}

fn call(name: &str, id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": {}}})
}

#[test]
fn a_tool_handler_that_panics_gets_its_call_answered_with_an_error() {
    let mut e = HttpEndpoint::with_sessions(server(), HttpEndpointConfig::default(), &[7; 32]);
    let a = initialize(&mut e, json!({}));
    let answer = send(&mut e, &post(Some(&a), &call("boom", 1)))
        .expect("the request was answered, not unwound through the endpoint");
    let text = answer.body.to_string();
    assert!(
        answer.body["error"].is_object() || answer.body["result"]["isError"] == true,
        "{text}"
    );
    assert!(text.contains("boom"), "the answer names the tool: {text}");
}

#[test]
fn a_panicking_tool_never_lets_one_session_run_in_another_sessions_state() {
    let mut e = HttpEndpoint::with_sessions(server(), HttpEndpointConfig::default(), &[7; 32]);
    let a = initialize(&mut e, json!({"roots": {}}));
    let b = initialize(&mut e, json!({"elicitation": {}}));
    // Each client makes its `boom` call; whatever became of them, the sessions are
    // still each their own.
    let _ = send(&mut e, &post(Some(&a), &call("boom", 1)));
    let _ = send(&mut e, &post(Some(&b), &call("boom", 1)));
    let seen = send(&mut e, &post(Some(&a), &call("caps", 2))).expect("caps answered");
    let text = seen.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        text.contains("roots") && !text.contains("elicitation"),
        "session A ran with the capabilities {text} (B declared elicitation): {}",
        seen.body
    );
}

#[test]
fn a_tool_handler_that_panics_on_stdio_leaves_the_other_calls_answered() {
    let mut server = server();
    let mut input = Vec::new();
    for (id, name) in [(1, "boom"), (2, "echo")] {
        let mut request = call(name, id);
        request["params"]["arguments"] = json!({"text": "still here"});
        input.extend_from_slice(request.to_string().as_bytes());
        input.push(b'\n');
    }
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let mut all = format!("{init}\n{initialized}\n").into_bytes();
    all.extend_from_slice(&input);
    let mut output = Vec::new();
    let served = catch_unwind(AssertUnwindSafe(|| {
        mcp_blocking::serve(&mut server, &all[..], &mut output)
    }));
    let text = String::from_utf8_lossy(&output).into_owned();
    assert!(served.is_ok(), "serve unwound; it had written: {text}");
    let answers: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let by_id = |id: u64| answers.iter().find(|a| a["id"] == id);
    assert!(by_id(1).is_some(), "the boom call went unanswered: {text}");
    let echo = by_id(2).expect("the echo call answered");
    assert!(echo.to_string().contains("still here"), "{echo}");
}

/// `mcp-smol`'s `serve_http` drives every connection in one future: one client's call
/// to a tool that panics must not end the server for the others.
#[test]
fn smol_serve_http_goes_on_serving_other_clients_after_a_tool_panics() {
    use mcp_blocking::mcp_proto::client::{CallRequest, ClientConfig};
    use std::net::TcpListener;
    use std::time::Duration;

    let listener = async_io::Async::<TcpListener>::bind(([127, 0, 0, 1], 0)).unwrap();
    let url = format!("http://{}/mcp", listener.get_ref().local_addr().unwrap());
    let (stop, stopped) = async_channel::bounded::<()>(1);
    let serving = std::thread::spawn(move || {
        let stop = async move {
            let _ = stopped.recv().await;
        };
        let options = mcp_smol::HttpServeOptions::default();
        futures_lite::future::block_on(mcp_smol::serve_http(
            listener,
            server(),
            options,
            |_| {},
            stop,
        ))
    });
    let config = || ClientConfig::new("panics", "1");
    let mut a = mcp_blocking::Client::connect_http(&url, config()).expect("A connects");
    let boom = CallRequest::call_tool("boom", json!({})).timeout(Duration::from_secs(5));
    let _ = a.request(boom);
    let call = CallRequest::call_tool("echo", json!({"text": "B"})).timeout(Duration::from_secs(5));
    let echoed = match mcp_blocking::Client::connect_http(&url, config()) {
        Ok(mut b) => b.request(call),
        Err(e) => Err(e),
    };
    drop(stop);
    let ended = serving.join();
    assert!(echoed.is_ok(), "B after A's panic: {echoed:?}");
    assert!(ended.is_ok(), "serve_http unwound");
}
