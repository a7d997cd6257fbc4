//! Legacy sessions of the HTTP endpoint machine on the fake clock: one handshake per
//! client, answers and cancellations only from the session a request went to, bounded
//! count, idle expiry, `DELETE`.

use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::server::example;
use mcp_proto::server::http::{HttpEndpoint, HttpEndpointConfig, HttpReply, HttpRequest};
use serde_json::{Value, json};

fn endpoint(config: HttpEndpointConfig) -> HttpEndpoint {
    HttpEndpoint::with_sessions(example::server(), config, &[3; 32])
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

fn send(e: &mut HttpEndpoint, now: Instant, request: &HttpRequest) -> Answer {
    match e.handle_request(now, request) {
        HttpReply::Complete(r) => Answer {
            status: r.status,
            session: r.header("mcp-session-id").map(str::to_owned),
            body: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
        },
        _ => Answer {
            status: 200,
            session: None,
            body: json!("stream"),
        },
    }
}

fn initialize(e: &mut HttpEndpoint, now: Instant, caps: Value) -> Answer {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps,
        "clientInfo": {"name": "t", "version": "1"}}});
    send(e, now, &post(None, &body))
}

#[test]
fn each_session_has_its_own_handshake() {
    let mut e = endpoint(HttpEndpointConfig::default());
    let t0 = Instant::ZERO;
    let a = initialize(&mut e, t0, json!({"elicitation": {}}));
    let b = initialize(&mut e, t0, json!({}));
    let (a, b) = (a.session.unwrap(), b.session.unwrap());
    assert_ne!(a, b);
    assert_eq!(e.sessions(), 2);
    // `confirm` asks A for input (it declared elicitation) on a stream; B, which did not
    // declare it, gets an error result at once: B's handshake did not replace A's.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "confirm"}});
    assert_eq!(
        send(&mut e, t0, &post(Some(&a), &call)).body,
        json!("stream")
    );
    let refused = send(&mut e, t0, &post(Some(&b), &call));
    assert_eq!(refused.body["result"]["isError"], true, "{}", refused.body);
}

#[test]
fn sessions_are_bounded_and_expire_when_idle() {
    let mut config = HttpEndpointConfig::default();
    config.max_sessions = 2;
    config.session_idle_timeout = Duration::from_secs(60);
    let mut e = endpoint(config);
    let t0 = Instant::ZERO;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let a = initialize(&mut e, t0, json!({})).session.unwrap();
    let t1 = t0.saturating_add(Duration::from_secs(50));
    assert_eq!(send(&mut e, t1, &post(Some(&a), &list)).status, 200);
    // B idles out, making room for C without evicting anyone.
    let b = initialize(&mut e, t0, json!({})).session.unwrap();
    let t2 = t0.saturating_add(Duration::from_secs(61));
    let c = initialize(&mut e, t2, json!({}));
    assert_eq!(c.status, 200);
    assert_eq!(e.sessions(), 2);
    assert_eq!(send(&mut e, t2, &post(Some(&b), &list)).status, 404);
    assert_eq!(send(&mut e, t2, &post(Some(&a), &list)).status, 200);
    // A session idle past the timeout is gone even when nobody needed the room.
    let t3 = t2.saturating_add(Duration::from_secs(61));
    assert_eq!(send(&mut e, t3, &post(Some(&a), &list)).status, 404);
}

/// A flood of `initialize`s that never come back neither locks new clients out nor
/// evicts a client that uses its session: each new session evicts the flood's oldest.
#[test]
fn a_full_session_table_evicts_sessions_nobody_came_back_to_first() {
    let mut config = HttpEndpointConfig::default();
    config.max_sessions = 4;
    let mut e = endpoint(config);
    let at = |s: u64| Instant::ZERO.saturating_add(Duration::from_secs(s));
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let a = initialize(&mut e, at(0), json!({})).session.unwrap();
    assert_eq!(send(&mut e, at(1), &post(Some(&a), &list)).status, 200);
    let flood: Vec<String> = (0..100)
        .map(|i| {
            let answer = initialize(&mut e, at(2 + i), json!({}));
            assert_eq!(answer.status, 200, "initialize {i}: {}", answer.body);
            answer.session.unwrap()
        })
        .collect();
    assert_eq!(e.sessions(), 4);
    // A was used longest ago, but its client came back: it stays.
    assert_eq!(send(&mut e, at(200), &post(Some(&a), &list)).status, 200);
    for (i, s) in (0..).zip(&flood) {
        let expected = if i >= 97 { 200 } else { 404 };
        assert_eq!(
            send(&mut e, at(201 + i), &post(Some(s), &list)).status,
            expected,
            "{i}"
        );
    }
    // Now every session came back: the one unused longest goes (flood[97], used at 298,
    // before the others and A), and the newcomer gets its place.
    assert_eq!(send(&mut e, at(400), &post(Some(&a), &list)).status, 200);
    let late = initialize(&mut e, at(401), json!({}));
    assert_eq!(late.status, 200);
    assert_eq!(
        send(&mut e, at(402), &post(Some(&flood[97]), &list)).status,
        404
    );
    for s in [&a, &flood[98], &flood[99], &late.session.unwrap()] {
        assert_eq!(send(&mut e, at(403), &post(Some(s), &list)).status, 200);
    }
}

/// A session in use (an open stream its client holds, a call parked for its client's
/// input) is never evicted; with every session in use an `initialize` gets 503.
#[test]
fn sessions_in_use_are_not_evicted() {
    let mut config = HttpEndpointConfig::default();
    config.max_sessions = 2;
    let mut e = endpoint(config);
    let t0 = Instant::ZERO;
    let stream = |e: &mut HttpEndpoint, session: &str, tool: &str| {
        let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": tool}});
        match e.handle_request(t0, &post(Some(session), &call)) {
            HttpReply::Stream(s) => s,
            _ => panic!("{tool} answered"),
        }
    };
    let a = initialize(&mut e, t0, json!({})).session.unwrap();
    let b = initialize(&mut e, t0, json!({"elicitation": {}}))
        .session
        .unwrap();
    let hang = stream(&mut e, &a, "hang");
    // B's client leaves the stream of a call waiting for its input: the call is parked.
    let confirm = stream(&mut e, &b, "confirm");
    e.cancel_stream(t0, &confirm);
    let full = initialize(&mut e, t0, json!({}));
    assert_eq!((full.status, full.session), (503, None), "{}", full.body);
    // A's client leaves its stream: `hang` goes on detached, parked for nobody's input,
    // and A is no longer in use.
    e.cancel_stream(t0, &hang);
    let c = initialize(&mut e, t0, json!({}));
    assert_eq!(c.status, 200, "{}", c.body);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(send(&mut e, t0, &post(Some(&a), &list)).status, 404);
    assert_eq!(send(&mut e, t0, &post(Some(&b), &list)).status, 200);
}

/// Attached `GET` streams are bounded over all sessions: each holds a connection, and
/// one client opening a session and a stream after another took every connection of
/// the server. One more gets 503; once a client leaves its stream, another may open one.
#[test]
fn get_streams_are_bounded_over_all_sessions() {
    let mut config = HttpEndpointConfig::default();
    config.max_get_streams = 2;
    let mut e = endpoint(config);
    let t0 = Instant::ZERO;
    let get = |session: &str| {
        HttpRequest::new("GET", "/mcp")
            .with_header("Host", "127.0.0.1")
            .with_header("Accept", "text/event-stream")
            .with_header("Mcp-Session-Id", session)
            .with_header("MCP-Protocol-Version", "2025-11-25")
    };
    let sessions: Vec<String> = (0..3)
        .map(|_| initialize(&mut e, t0, json!({})).session.unwrap())
        .collect();
    let mut streams = Vec::new();
    for s in &sessions[..2] {
        match e.handle_request(t0, &get(s)) {
            HttpReply::Stream(stream) => streams.push(stream),
            _ => panic!("no GET stream"),
        }
    }
    let refused = send(&mut e, t0, &get(&sessions[2]));
    assert_eq!(refused.status, 503, "{}", refused.body);
    let message = refused.body["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("Too many GET streams"), "{}", refused.body);
    e.cancel_stream(t0, &streams[0]);
    assert!(matches!(
        e.handle_request(t0, &get(&sessions[2])),
        HttpReply::Stream(_)
    ));
}

#[test]
fn delete_ends_a_session_and_cancels_its_open_exchanges() {
    let mut e = endpoint(HttpEndpointConfig::default());
    let t0 = Instant::ZERO;
    let a = initialize(&mut e, t0, json!({})).session.unwrap();
    let hang = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "hang"}});
    let stream = match e.handle_request(t0, &post(Some(&a), &hang)) {
        HttpReply::Stream(s) => s,
        _ => panic!("hang answered"),
    };
    assert_eq!(e.open_streams(), 1);
    let delete = HttpRequest::new("DELETE", "/mcp").with_header("Mcp-Session-Id", a.as_str());
    assert_eq!(send(&mut e, t0, &delete).status, 200);
    assert_eq!(e.open_streams(), 0);
    assert_eq!(e.poll_ready().map(|id| id == stream.id()), Some(true));
    assert_eq!(send(&mut e, t0, &delete).status, 404);
    assert_eq!(e.sessions(), 0);
}

/// DNS rebinding: a server bound to loopback answers only to loopback names in `Host`.
#[test]
fn a_loopback_server_answers_only_to_loopback_host_names() {
    let mut config = HttpEndpointConfig::default();
    config.restrict_hosts_for("127.0.0.1".parse().unwrap());
    let mut e = endpoint(config);
    let discover_at = |target: &str, host: Option<&str>| {
        let mut r = HttpRequest::new("POST", target)
            .with_header("Content-Type", "application/json")
            .with_header("MCP-Protocol-Version", "2026-07-28")
            .with_header("Mcp-Method", "server/discover");
        if let Some(h) = host {
            r = r.with_header("Host", h);
        }
        r.with_body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}})
            .to_string(),
        )
    };
    let discover = |host: Option<&str>| discover_at("/mcp", host);
    for ok in [
        "127.0.0.1:8080",
        "localhost",
        "LOCALHOST:1",
        "[::1]:9",
        "[::1]",
        // `port = *DIGIT` (RFC 3986): empty too, as after a name (decision 134).
        "[::1]:",
    ] {
        assert_eq!(
            send(&mut e, Instant::ZERO, &discover(Some(ok))).status,
            200,
            "{ok}"
        );
    }
    for bad in [
        Some("evil.example"),
        Some("evil.example:8080"),
        Some("127.0.0.2"),
        // Only a port may follow a bracketed address.
        Some("[::1]evil.example"),
        Some("[::1].evil.example:80"),
        Some("[::1]:80x"),
        None,
    ] {
        assert_eq!(
            send(&mut e, Instant::ZERO, &discover(bad)).status,
            403,
            "{bad:?}"
        );
    }
    // An absolute-form target names the host, and `Host` is ignored (RFC 9112, 3.2.2):
    // `http://evil.example/mcp` with a loopback `Host` was served.
    for (target, host, status) in [
        ("http://evil.example/mcp", Some("127.0.0.1"), 403),
        ("HTTP://evil.example:80/mcp?x", Some("localhost"), 403),
        ("http://127.0.0.1:8080/mcp", Some("evil.example"), 200),
        ("http://localhost/mcp", None, 200),
    ] {
        let reply = send(&mut e, Instant::ZERO, &discover_at(target, host));
        assert_eq!(reply.status, status, "{target} {host:?}");
    }
    // Bound elsewhere (or told otherwise), any Host is served.
    let mut open = HttpEndpointConfig::default();
    open.restrict_hosts_for("192.0.2.7".parse().unwrap());
    let mut e = endpoint(open);
    assert_eq!(
        send(&mut e, Instant::ZERO, &discover(Some("mcp.example.com"))).status,
        200
    );
}

/// A session serves only the principal its `initialize` was served as: with another
/// principal's token (or none), its id is unknown, whatever the request, and the session
/// is left as it was. Another principal could list tools in it, answer its client's
/// input requests, resume its streams and end it.
#[test]
fn a_session_serves_only_the_principal_that_opened_it() {
    let mut e = endpoint(HttpEndpointConfig::default());
    let t0 = Instant::ZERO;
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "1"}}});
    let status = |e: &mut HttpEndpoint, who: Option<&str>, request: &HttpRequest| match e
        .handle_request_as(t0, request, who)
    {
        HttpReply::Complete(r) => r.status,
        _ => 200,
    };
    let opened = match e.handle_request_as(t0, &post(None, &body), Some("alice")) {
        HttpReply::Complete(r) => r.header("mcp-session-id").map(str::to_owned),
        _ => None,
    };
    let a = opened.expect("a session");
    let list = post(
        Some(&a),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let answer = post(
        Some(&a),
        &json!({"jsonrpc": "2.0", "id": "x", "result": {"action": "accept"}}),
    );
    let listen = HttpRequest::new("GET", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Accept", "text/event-stream")
        .with_header("Mcp-Session-Id", a.as_str())
        .with_header("MCP-Protocol-Version", "2025-11-25");
    let delete = HttpRequest::new("DELETE", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Mcp-Session-Id", a.as_str());
    for who in [Some("bob"), None] {
        for request in [&list, &answer, &listen, &delete] {
            assert_eq!(
                status(&mut e, who, request),
                404,
                "{who:?} {}",
                request.method()
            );
        }
    }
    assert_eq!(e.sessions(), 1);
    assert_eq!(status(&mut e, Some("alice"), &list), 200);
    assert_eq!(status(&mut e, Some("alice"), &delete), 200);
    assert_eq!(e.sessions(), 0);
}

/// Streams whose client went away make room for a client that is there: four sessions
/// that each start their share of streams and close the connections used to keep every
/// other client's streamed calls at 503 for as long as the sessions lived (30 minutes
/// idle). Streams a client is attached to are never cut for another.
#[test]
fn detached_streams_make_room_for_attached_ones() {
    let mut config = HttpEndpointConfig::default();
    config.max_open_streams = 8;
    let mut e = endpoint(config);
    let t0 = Instant::ZERO;
    let hang = |id: u32| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "hang"}})
    };
    let open = |e: &mut HttpEndpoint, session: &str, id: u32| match e
        .handle_request(t0, &post(Some(session), &hang(id)))
    {
        HttpReply::Stream(s) => Ok(s),
        HttpReply::Complete(r) => Err(r.status),
        _ => Err(0),
    };
    let mut left = Vec::new();
    for _ in 0..4 {
        let s = initialize(&mut e, t0, json!({})).session.unwrap();
        for id in 0..2 {
            left.push(open(&mut e, &s, id).expect("a stream"));
        }
        // Its share is taken.
        assert_eq!(open(&mut e, &s, 9).err(), Some(503));
    }
    assert_eq!(e.open_streams(), 8);
    for s in &left {
        e.cancel_stream(t0, s);
    }
    assert_eq!(e.open_streams(), 8, "detached, not cancelled");
    // A newcomer is served: the oldest detached stream goes.
    let newcomer = initialize(&mut e, t0, json!({})).session.unwrap();
    let held = vec![
        open(&mut e, &newcomer, 1).expect("room made"),
        open(&mut e, &newcomer, 2).expect("room made"),
    ];
    assert_eq!(e.open_streams(), 8);
    // Streams with their client there are not cut: with only those left, 503.
    let mut attached = held;
    for _ in 0..3 {
        let s = initialize(&mut e, t0, json!({})).session.unwrap();
        for id in 0..2 {
            attached.push(open(&mut e, &s, id).expect("room made"));
        }
    }
    let late = initialize(&mut e, t0, json!({})).session.unwrap();
    assert_eq!(open(&mut e, &late, 1).err(), Some(503));
    assert_eq!(attached.len(), 8);
}
