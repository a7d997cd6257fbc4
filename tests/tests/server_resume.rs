//! Resumable SSE streams over real sockets: `mcp_blocking::serve_http` serving the
//! example server, driven by a raw HTTP/1.1 client on `std::net::TcpStream`. A legacy
//! call that finishes later (`confirm`, which asks the client first) is cut off after its
//! priming event; the client resumes with `GET` and `Last-Event-ID`, receives what it
//! missed and, once it answers, the result. The standalone `GET` stream is refused a
//! second time (409), carries nothing of the call, and carries what the application
//! sends outside any request (`HttpServerHandle::with_endpoint`). Last, our own client
//! (`mcp_blocking`) completes elicitation calls against the endpoint in polling mode, which
//! it can only do by resuming.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use mcp_proto::server::example;
use mcp_tests::raw_http::{read_until, send};
use serde_json::{Value, json};

const V: &str = "2025-11-25";

fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    let head = response.split("\r\n\r\n").next()?;
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The SSE events in `text` (chunk-size lines are not `id:`/`data:` lines, so they
/// drop out): (id, data) pairs.
fn events(text: &str) -> Vec<(Option<String>, String)> {
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let mut out = Vec::new();
    let (mut id, mut data) = (None, None);
    for line in body.lines() {
        if let Some(v) = line.strip_prefix("id: ") {
            id = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("data: ") {
            data = Some(v.to_owned());
        } else if line.is_empty() && (id.is_some() || data.is_some()) {
            out.push((id.take(), data.take().unwrap_or_default()));
        }
    }
    out
}

fn messages(text: &str) -> Vec<Value> {
    events(text)
        .into_iter()
        .filter(|(_, d)| !d.is_empty())
        .map(|(_, d)| serde_json::from_str(&d).unwrap())
        .collect()
}

#[test]
fn a_cut_post_stream_is_resumed_with_get_and_last_event_id() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let handle = mcp_blocking::serve_http(listener, example::server()).unwrap();
    let addr = handle.local_addr();

    // A 2025-11-25 session that can answer elicitations.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": V, "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let mut c = send(addr, "POST", &[("Connection", "close")], &init.to_string());
    let mut text = String::new();
    read_until(&mut c, &mut text, |_| false);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let session = header(&text, "mcp-session-id").unwrap().to_owned();
    let sid = session.as_str();
    let ours = [("Mcp-Session-Id", sid), ("MCP-Protocol-Version", V)];

    // The standalone GET stream: primed, and a second one is refused.
    let get_headers = [
        ("Mcp-Session-Id", sid),
        ("MCP-Protocol-Version", V),
        ("Accept", "text/event-stream"),
    ];
    let mut listen = send(addr, "GET", &get_headers, "");
    let mut listened = String::new();
    read_until(&mut listen, &mut listened, |t| events(t).len() == 1);
    assert!(listened.starts_with("HTTP/1.1 200"), "{listened}");
    assert_eq!(events(&listened)[0].1, "", "a priming event");
    let mut second = send(addr, "GET", &get_headers, "");
    let mut refused = String::new();
    read_until(&mut second, &mut refused, |t| t.contains("\r\n\r\n"));
    assert!(refused.starts_with("HTTP/1.1 409"), "{refused}");

    // The call: the POST stream opens with its priming event; the client reads only
    // that, and the connection is cut.
    let confirm = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "confirm", "arguments": {}}});
    let mut post = send(addr, "POST", &ours, &confirm.to_string());
    let mut seen = String::new();
    read_until(&mut post, &mut seen, |t| !events(t).is_empty());
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert_eq!(header(&seen, "content-type"), Some("text/event-stream"));
    let (priming, data) = events(&seen).remove(0);
    assert_eq!(data, "");
    let priming = priming.expect("the priming event has an id");
    drop(post);
    std::thread::sleep(Duration::from_millis(100));

    // Resumed after the priming event: the elicitation it missed, under its id.
    let mut resume_headers = get_headers.to_vec();
    resume_headers.push(("Last-Event-ID", priming.as_str()));
    let mut resumed = send(addr, "GET", &resume_headers, "");
    let mut got = String::new();
    read_until(&mut resumed, &mut got, |t| !messages(t).is_empty());
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    let ask = messages(&got).remove(0);
    assert_eq!(ask["method"], "elicitation/create", "{got}");

    // The answer goes in a POST of its own (202); the result arrives on the resumed
    // stream, with the client's id, and the stream ends.
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "action": "accept", "content": {"proceed": true, "name": "Ada"}}});
    let mut a = send(addr, "POST", &ours, &answer.to_string());
    let mut accepted = String::new();
    read_until(&mut a, &mut accepted, |t| t.contains("\r\n\r\n"));
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");
    read_until(&mut resumed, &mut got, |t| messages(t).len() == 2);
    let result = &messages(&got)[1];
    assert_eq!(result["id"], 7);
    assert_eq!(
        result["result"]["content"][0]["text"],
        "accepted: proceed=true name=Ada"
    );
    let ids: Vec<String> = events(&got).into_iter().filter_map(|(id, _)| id).collect();
    assert_eq!(ids.len(), 2, "every event has an id: {got}");
    read_until(&mut resumed, &mut got, |t| t.ends_with("0\r\n\r\n"));

    // An id of this stream replays nothing of other streams; one made up is refused.
    let mut bad_headers = get_headers.to_vec();
    bad_headers.push(("Last-Event-ID", "4242-0"));
    let mut bad = send(addr, "GET", &bad_headers, "");
    let mut refused = String::new();
    read_until(&mut bad, &mut refused, |t| t.contains("\r\n\r\n"));
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");

    // The GET stream carried nothing of the call; a notification outside any request
    // reaches it, with an id.
    read_until(&mut listen, &mut listened, |_| true);
    assert!(messages(&listened).is_empty(), "{listened}");
    let told =
        handle.with_endpoint(|e| e.notify_listeners("notifications/tools/list_changed", None));
    assert_eq!(told, 1);
    read_until(&mut listen, &mut listened, |t| !messages(t).is_empty());
    assert_eq!(
        messages(&listened)[0]["method"],
        "notifications/tools/list_changed"
    );
    assert!(events(&listened).iter().all(|(id, _)| id.is_some()));
    handle.stop();
}

/// Our own client against our own server in polling mode (2025-11-25: polling is for
/// that version's sessions): every POST whose answer is an SSE stream gets only its
/// priming event and `retry:`, so `confirm` completes only if the client resumes with
/// `GET` and `Last-Event-ID` (for the elicitation, then for the result).
#[test]
fn our_client_resumes_polled_streams() {
    use mcp_blocking::{Client, ClientCapabilities, ClientConfig, EraMode, HttpOptions, Options};
    use mcp_proto::client::AcceptDefaults;
    use mcp_proto::server::http::HttpServeOptions;

    let mut options = HttpServeOptions::default();
    options.endpoint.sse_polling = true;
    options.endpoint.sse_retry = Duration::from_millis(50);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = mcp_blocking::serve_http_with(listener, example::server(), options).unwrap();
    let config = ClientConfig::new("resume-test", "0")
        .era_mode(EraMode::Legacy)
        .capabilities(ClientCapabilities::with_elicitation());
    let mut client = Client::connect_http_with(
        &server.url(),
        config,
        Options::new().input_handler(AcceptDefaults),
        HttpOptions::new(),
    )
    .expect("connect");
    assert_eq!(client.protocol_version().to_string(), V);
    for _ in 0..3 {
        let started = Instant::now();
        let out = client.call_tool("confirm", json!({})).expect("confirm");
        assert_eq!(out.text(), "accepted: proceed=true name=friend");
        // Two polls, each after the server's `retry:`: the answer came through
        // resumption, not on the POST's own stream.
        assert!(
            started.elapsed() >= Duration::from_millis(100),
            "not polled"
        );
    }
    let out = client.call_tool("echo", json!({"text": "plain"})).unwrap();
    assert_eq!(out.text(), "plain");
    client.close();
    server.stop();
}
