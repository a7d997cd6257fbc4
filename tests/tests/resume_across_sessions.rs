//! Resumable SSE at the endpoint, on the fake clock: what
//! one session's traffic does to another session's resumption.

use mcp_proto::Instant;
use mcp_proto::server::example;
use mcp_proto::server::http::{HttpEndpoint, HttpEndpointConfig, HttpReply, HttpRequest};
use serde_json::{Value, json};

const V: &str = "2025-11-25";

fn request(method: &str, session: Option<&str>) -> HttpRequest {
    let mut r = HttpRequest::new(method, "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Content-Type", "application/json")
        .with_header("Accept", "application/json, text/event-stream");
    if let Some(s) = session {
        r = r
            .with_header("Mcp-Session-Id", s)
            .with_header("MCP-Protocol-Version", V);
    }
    r
}

fn session(e: &mut HttpEndpoint) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": V, "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let HttpReply::Complete(r) = e.handle_request(
        Instant::ZERO,
        &request("POST", None).with_body(init.to_string()),
    ) else {
        panic!("initialize answers at once");
    };
    let id = r.header("mcp-session-id").unwrap().to_owned();
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = e.handle_request(
        Instant::ZERO,
        &request("POST", Some(&id)).with_body(done.to_string()),
    );
    id
}

/// The `id:` of every SSE event in `body`, with its `data`.
fn events(body: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    let (mut id, mut data) = (String::new(), String::new());
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("id: ") {
            id = v.to_owned();
        } else if let Some(v) = line.strip_prefix("data: ") {
            data = v.to_owned();
        } else if line.is_empty() && !id.is_empty() {
            out.push((std::mem::take(&mut id), std::mem::take(&mut data)));
        }
    }
    out
}

/// Decision 66: an id that cannot be resumed is refused (400) "rather than replayed with
/// a gap: the client would otherwise take a stream with holes for a whole one"; decision
/// 67: a client leaving a session's stream detaches it, "its events are stored, and a GET
/// with Last-Event-ID attaches a new connection"; `EventStore::append`: ids are "unique
/// across every stream the store ever held".
///
/// Session V listens on its `GET` stream, reads the priming event and loses its
/// connection. Another session's calls open streams of their own until the event store's
/// stream bound pushes V's stream out (`max_streams`, 2 here; 4096 by default, within
/// reach of a few sessions' worth of requests). Then the server notifies its listeners:
/// V's notification is stored as the first event of a stream the store starts again,
/// under the priming event's id. V resumes after its priming event: 200, an empty
/// replay, and the notification is gone without a word.
#[test]
fn another_sessions_streams_cannot_silently_drop_a_detached_listeners_events() {
    let mut config = HttpEndpointConfig::default();
    config.event_store.max_streams = 2;
    let mut e = HttpEndpoint::with_sessions(example::server(), config, &[5; 32]);
    let victim = session(&mut e);
    let listen = request("GET", Some(&victim));
    let HttpReply::Stream(stream) = e.handle_request(Instant::ZERO, &listen) else {
        panic!("a GET stream");
    };
    let primed = events(&stream.response().body);
    let (priming, _) = primed.first().expect("a priming event").clone();
    e.cancel_stream(Instant::ZERO, &stream);

    // Another client's calls, each answered on a stream of its own (`hang` never
    // answers; the client left).
    let other = session(&mut e);
    for id in 1..=2 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "hang", "arguments": {}}});
        let post = request("POST", Some(&other)).with_body(call.to_string());
        let HttpReply::Stream(s) = e.handle_request(Instant::ZERO, &post) else {
            panic!("a primed stream");
        };
        e.cancel_stream(Instant::ZERO, &s);
    }

    let told = e.notify_listeners("notifications/tools/list_changed", None);
    assert!(told >= 1, "the victim's detached stream is a listener");

    let resume = listen.with_header("Last-Event-ID", priming.as_str());
    match e.handle_request(Instant::ZERO, &resume) {
        HttpReply::Complete(r) => assert_eq!(r.status, 400, "refused, not a gap"),
        HttpReply::Stream(s) => {
            let mut body = s.response().body.clone();
            let mut more = Vec::new();
            let _ = e.poll_stream(&s, &mut more);
            body.extend_from_slice(&more);
            let got: Vec<Value> = events(&body)
                .into_iter()
                .filter(|(_, d)| !d.is_empty())
                .filter_map(|(_, d)| serde_json::from_str(&d).ok())
                .collect();
            assert!(
                got.iter()
                    .any(|m| m["method"] == "notifications/tools/list_changed"),
                "resumed after {priming} with 200 but the notification stored for the \
                 stream is missing (another session's streams evicted it, and the store \
                 gave the notification the id {priming} again): {}",
                String::from_utf8_lossy(&body)
            );
        }
        _ => panic!("unexpected reply"),
    }
}
