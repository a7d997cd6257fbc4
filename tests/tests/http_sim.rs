//! Deterministic simulations of the client over Streamable HTTP against scripted
//! servers: era detection, headers, sessions, SSE resumption, stream loss.

use std::time::Duration;

use mcp_proto::client::http::HttpConfig;
use mcp_proto::client::{
    CallError, CallId, CallRequest, ClientConfig, CloseReason, ConnId, ConnectionState, Event,
    PeerError,
};
use mcp_proto::http::EndpointUrl;
use mcp_proto::http::xmcp::InvalidAnnotation;
use mcp_proto::jsonrpc::DecodeError;
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::{Era, EraMode, ProtocolVersion};
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use mcp_tests::load_vectors;
use serde_json::{Value, json};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("http-sim", "1.0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation())
}

fn result(req: &SeenRequest, result: Value) -> Value {
    json!({"jsonrpc":"2.0","id":req.body["id"],"result":result})
}

/// A complete `tools/list` answer with no tools: what a fresh client's first
/// `tools/call` learns the header declarations from.
fn no_tools(req: &SeenRequest) -> Reply {
    Reply::json(
        200,
        &result(req, json!({"resultType":"complete","ttlMs":0,"tools":[]})),
    )
}

fn discover_ok(req: &SeenRequest) -> Reply {
    Reply::json(
        200,
        &result(
            req,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                "capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}),
        ),
    )
}

/// A modern-only server with one annotated tool and one invalid one.
fn modern_server(req: &SeenRequest) -> Reply {
    match req.rpc_method() {
        "server/discover" => discover_ok(req),
        "tools/list" => Reply::json(
            200,
            &result(
                req,
                json!({"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[
                    {"name":"route","inputSchema":{"type":"object","properties":{
                        "region":{"type":"string","x-mcp-header":"Region"},
                        "n":{"type":"integer","x-mcp-header":"N"},
                        "nested":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}}}}},
                    {"name":"bad","inputSchema":{"type":"object","properties":{
                        "x":{"type":"number","x-mcp-header":"X"}}}}
                ]}),
            ),
        ),
        "tools/call" => Reply::json(
            200,
            &result(
                req,
                json!({"resultType":"complete","content":[{"type":"text","text":"ok"}]}),
            ),
        ),
        _ => Reply::json(
            404,
            &json!({"jsonrpc":"2.0","id":req.body["id"],"error":{"code":-32601,"message":"nope"}}),
        ),
    }
}

fn legacy_init(req: &SeenRequest, session: &str) -> Reply {
    Reply::with_body(
        200,
        &[
            ("Content-Type", "application/json"),
            ("Mcp-Session-Id", session),
        ],
        &result(
            req,
            json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                "serverInfo":{"name":"legacy","version":"1"}}),
        )
        .to_string(),
    )
}

#[test]
fn modern_requests_carry_the_2026_header_set() {
    let mut sim = HttpSim::new(config(EraMode::Auto), modern_server);
    sim.connect();
    assert_eq!(
        sim.client.state(),
        ConnectionState::Ready(Era::Modern, ProtocolVersion::V2026_07_28)
    );
    let probe = &sim.requests[0];
    assert_eq!(probe.method, "POST");
    assert_eq!(probe.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(probe.header("mcp-method"), Some("server/discover"));
    assert_eq!(
        probe.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(probe.header("content-type"), Some("application/json"));
    assert_eq!(probe.header("host"), Some("127.0.0.1:9"));

    let out = sim.call(CallRequest::list_tools()).unwrap();
    let tools = out.tools().unwrap();
    assert_eq!(tools.len(), 1, "the invalid tool is excluded");
    assert!(sim.events.iter().any(|e| matches!(e, Event::ToolExcluded { tool, reason: InvalidAnnotation::NumberType { .. } } if tool == "bad")), "{:?}", sim.events);
    // No header set can satisfy a server for an excluded tool: the call fails locally.
    let err = sim
        .call(CallRequest::call_tool("bad", json!({"x": 1})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::ToolExcluded { tool, reason: InvalidAnnotation::NumberType { .. } } if tool == "bad"),
        "{err:?}"
    );
    assert!(sim.with_method("tools/call").is_empty());

    sim.call(CallRequest::call_tool(
        "route",
        json!({"region":"Hello, 世界","n":42,"nested":{"flag":true}}),
    ))
    .unwrap();
    let call = sim.with_method("tools/call")[0].clone();
    assert_eq!(call.header("mcp-name"), Some("route"));
    assert_eq!(
        call.header("mcp-param-region"),
        Some("=?base64?SGVsbG8sIOS4lueVjA==?=")
    );
    assert_eq!(call.header("mcp-param-n"), Some("42"));
    assert_eq!(call.header("mcp-param-flag"), Some("true"));

    // Null and absent arguments send no header.
    sim.call(CallRequest::call_tool("route", json!({"region":null})))
        .unwrap();
    let call = sim.with_method("tools/call")[1].clone();
    assert_eq!(call.header("mcp-param-region"), None);
    assert_eq!(call.header("mcp-param-n"), None);

    // An integer that cannot be sent fails the call locally.
    let err = sim
        .call(CallRequest::call_tool(
            "route",
            json!({"n": 9007199254740993_i64}),
        ))
        .unwrap_err();
    assert!(matches!(err, CallError::HeaderValue(_)), "{err:?}");
    assert_eq!(sim.with_method("tools/call").len(), 2, "never sent");
}

#[test]
fn legacy_sessions_headers_and_delete() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "sess-1"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::with_body(405, &[("Allow", "POST")], ""),
            ("POST", "tools/list") => Reply::json(200, &result(req, json!({"tools":[]}))),
            ("DELETE", _) => Reply::with_body(200, &[], ""),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    // A call made at once must not overtake notifications/initialized.
    let early = sim.client.call(sim.now, CallRequest::list_tools()).unwrap();
    sim.run_until(|s| s.completion(early).is_some());
    let order: Vec<_> = sim
        .requests
        .iter()
        .map(|r| (r.method.clone(), r.rpc_method().to_owned()))
        .collect();
    let pos = |m: &str| order.iter().position(|(_, rpc)| rpc == m).unwrap();
    assert!(
        pos("notifications/initialized") < pos("tools/list"),
        "{order:?}"
    );
    let init = &sim.requests[0];
    assert_eq!(init.rpc_method(), "initialize");
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None);
    for r in &sim.requests[1..] {
        assert_eq!(r.header("mcp-session-id"), Some("sess-1"), "{r:?}");
        assert_eq!(
            r.header("mcp-protocol-version"),
            Some("2025-11-25"),
            "{r:?}"
        );
        assert_eq!(r.header("mcp-method"), None, "no 2026 headers in legacy");
    }
    assert!(
        sim.requests.iter().any(|r| r.method == "GET"),
        "GET stream attempted"
    );
    sim.client.close(sim.now);
    sim.step();
    let last = sim.requests.last().unwrap();
    assert_eq!(last.method, "DELETE");
    assert_eq!(last.header("mcp-session-id"), Some("sess-1"));
    assert_eq!(last.header("mcp-protocol-version"), Some("2025-11-25"));
}

/// The configured headers go with every request to the server (the `initialize`, the
/// GET stream, calls, the `DELETE` at the end), after the client's own; a header the
/// client writes itself fails the request that would carry it (here the first, so the
/// connection closes), naming the header, instead of being sent twice or overriding the
/// client's.
#[test]
fn configured_headers_go_with_every_request_and_may_not_replace_the_clients() {
    let url = EndpointUrl::parse("http://127.0.0.1:9/mcp", false).unwrap();
    let mut http = HttpConfig::new(url.clone());
    http.headers = vec![
        ("X-Api-Key".into(), "k-123".into()),
        ("X-Tenant".into(), "acme".into()),
    ];
    let mut sim = HttpSim::with_http(config(EraMode::Legacy), http, |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "sess-1"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::with_body(405, &[("Allow", "POST")], ""),
            ("POST", "tools/list") => Reply::json(200, &result(req, json!({"tools":[]}))),
            ("DELETE", _) => Reply::with_body(200, &[], ""),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    sim.client.close(sim.now);
    sim.step();
    let methods: Vec<_> = sim.requests.iter().map(|r| r.method.as_str()).collect();
    assert!(
        methods.contains(&"GET") && methods.contains(&"DELETE"),
        "{methods:?}"
    );
    for r in &sim.requests {
        assert_eq!(r.header("x-api-key"), Some("k-123"), "{r:?}");
        assert_eq!(r.header("x-tenant"), Some("acme"), "{r:?}");
    }

    for reserved in [
        "mcp-session-id",
        "Authorization",
        "Mcp-Param-Region",
        "Accept",
        "Host",
    ] {
        let mut http = HttpConfig::new(url.clone());
        http.headers = vec![(reserved.into(), "mine".into())];
        let mut sim = HttpSim::with_http(config(EraMode::Modern), http, modern_server);
        while sim.step() {}
        match &sim.events[..] {
            [Event::Closed { reason }] => {
                let why = reason.to_string();
                assert!(why.contains(reserved), "{reserved}: {why}");
            }
            other => panic!("{reserved}: {other:?}"),
        }
        assert!(sim.requests.is_empty(), "{reserved}: nothing is sent");
    }
}

/// A legacy server that forgets sessions: `initialize` hands out `s1`, `s2`, …; a
/// `tools/call` on a session it forgot is a 404, and `hang` calls never get an answer.
fn forgetful_server(forgotten: fn(&str) -> bool) -> impl FnMut(&SeenRequest) -> Reply {
    let mut inits = 0;
    move |req| match (req.method.as_str(), req.rpc_method()) {
        ("POST", "initialize") => {
            inits += 1;
            legacy_init(req, &format!("s{inits}"))
        }
        ("POST", "notifications/initialized") => Reply::accepted(),
        ("GET", _) => Reply::with_body(405, &[], ""),
        ("POST", "tools/call") if req.body["params"]["name"] == "hang" => Reply::Silence,
        ("POST", "tools/call") if forgotten(req.header("mcp-session-id").unwrap_or("")) => {
            Reply::with_body(404, &[], "session gone")
        }
        ("POST", "tools/call") => Reply::json(
            200,
            &result(req, json!({"content":[{"type":"text","text":"fresh"}]})),
        ),
        _ => Reply::with_body(400, &[], "?"),
    }
}

#[test]
fn a_call_that_meets_an_expired_session_is_sent_once_on_a_new_one() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), forgetful_server(|s| s == "s1"));
    sim.connect();
    // Another call is in flight on the old session when it expires.
    let other = sim.start(CallRequest::call_tool("hang", json!({})));
    sim.step();
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "fresh");
    let calls = sim.with_method("tools/call");
    let sessions: Vec<_> = calls.iter().map(|c| c.header("mcp-session-id")).collect();
    assert_eq!(
        sessions,
        [Some("s1"), Some("s1"), Some("s2")],
        "hang, t, t again"
    );
    assert_eq!(sim.with_method("initialize").len(), 2);
    assert_eq!(
        sim.with_method("initialize")[1].header("mcp-session-id"),
        None
    );
    // The other call's request was sent on the old session and its answer has not
    // begun: it waits for that answer (or its deadline), never sent again meanwhile.
    assert!(sim.completion(other).is_none(), "still in flight");
    sim.run_until(|s| s.completion(other).is_some());
    assert!(
        matches!(sim.completion(other), Some(Err(CallError::Timeout(_)))),
        "{:?}",
        sim.completion(other)
    );
    assert_eq!(sim.with_method("tools/call").len(), 3, "hang sent once");
}

/// Two tool calls in flight when the server forgets the session: each draws a 404 of
/// its own, which says it never ran, so each is sent again on the new session (once),
/// not only the one whose 404 came first; the session is replaced once.
#[test]
fn every_call_refused_for_an_expired_session_is_sent_again_on_the_new_one() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), forgetful_server(|s| s == "s1"));
    sim.connect();
    let first = sim.start(CallRequest::call_tool("t", json!({"n": 1})));
    let second = sim.start(CallRequest::call_tool("t", json!({"n": 2})));
    sim.run_until(|s| s.completion(first).is_some() && s.completion(second).is_some());
    for call in [first, second] {
        let out = sim.completion(call).unwrap().unwrap();
        assert_eq!(out.tool_result().unwrap().text(), "fresh");
    }
    let mut sent: Vec<_> = sim
        .with_method("tools/call")
        .iter()
        .map(|c| {
            (
                c.body["params"]["arguments"]["n"].clone(),
                c.header("mcp-session-id"),
            )
        })
        .collect();
    sent.sort_by_key(|(n, s)| (n.as_i64(), s.map(str::to_owned)));
    assert_eq!(
        sent,
        [
            (json!(1), Some("s1")),
            (json!(1), Some("s2")),
            (json!(2), Some("s1")),
            (json!(2), Some("s2"))
        ]
    );
    assert_eq!(sim.with_method("initialize").len(), 2, "one new session");
}

/// Reads in flight when the session expires are harmless to repeat: they are sent again
/// on the new session (once) instead of failing with the tool call's expiry. A listing
/// and a resource read hang on the old session; a tool call meets the 404.
#[test]
fn reads_in_flight_when_a_session_expires_are_sent_again_on_the_new_one() {
    let mut forgetful = forgetful_server(|s| s == "s1");
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        let on_s1 = req.header("mcp-session-id") == Some("s1");
        match req.rpc_method() {
            "tools/list" | "resources/read" if on_s1 => Reply::Silence,
            "tools/list" => Reply::json(200, &result(req, json!({"tools": []}))),
            "resources/read" => Reply::json(200, &result(req, json!({"contents": []}))),
            _ => forgetful(req),
        }
    });
    sim.connect();
    let list = sim.start(CallRequest::list_tools());
    let read = sim.start(CallRequest::read_resource("x://y"));
    let hang = sim.start(CallRequest::call_tool("hang", json!({})));
    sim.step();
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "fresh");
    sim.run_until(|s| s.completion(list).is_some() && s.completion(read).is_some());
    assert!(sim.completion(list).unwrap().is_ok(), "the listing");
    assert!(sim.completion(read).unwrap().is_ok(), "the read");
    for method in ["tools/list", "resources/read"] {
        let sessions: Vec<_> = sim
            .with_method(method)
            .iter()
            .map(|r| r.header("mcp-session-id"))
            .collect();
        assert_eq!(sessions, [Some("s1"), Some("s2")], "{method}");
    }
    // A tool call whose answer has not begun waits for it, and is not repeated.
    assert!(sim.completion(hang).is_none());
    assert_eq!(sim.with_method("tools/call").len(), 3, "hang once, t twice");
}

#[test]
fn a_session_that_keeps_expiring_fails_the_call_after_one_resend() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), forgetful_server(|_| true));
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert_eq!(err, CallError::SessionExpired);
    assert_eq!(
        sim.with_method("tools/call").len(),
        2,
        "sent twice, never more"
    );
}

/// The requests that resumed a stream (those with a `Last-Event-ID`).
fn resumptions(sim: &HttpSim<impl FnMut(&SeenRequest) -> Reply>) -> usize {
    sim.requests
        .iter()
        .filter(|r| r.header("last-event-id").is_some())
        .count()
}

#[test]
fn a_dropped_sse_stream_is_resumed_with_last_event_id_after_retry() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => Reply::sse_then_drop(
                Some(500),
                &[
                    (Some("ev-1"), ""),
                    (
                        Some("ev-2"),
                        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}"#,
                    ),
                ],
            ),
            ("GET", _) => {
                assert_eq!(req.header("last-event-id"), Some("ev-2"));
                Reply::sse(
                    &[],
                    &[(
                        Some("ev-3"),
                        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"resumed"}]}}"#,
                    )],
                )
            }
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("slow", json!({})))
        .unwrap();
    let start = sim.now;
    sim.run_until(|s| s.completion(id).is_some());
    let out = sim.completion(id).unwrap().unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "resumed");
    assert_eq!(
        sim.now - start,
        Duration::from_millis(500),
        "retry honoured"
    );
    let resumes: Vec<_> = sim
        .requests
        .iter()
        .filter(|r| r.method == "GET" && r.header("last-event-id").is_some())
        .collect();
    assert_eq!(resumes.len(), 1);
}

#[test]
fn a_resumed_stream_that_delivers_nothing_does_not_loop() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => Reply::sse_then_drop(None, &[(Some("e1"), "")]),
            ("GET", _) => Reply::sse_then_drop(None, &[]),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Http(h) if h.detail.contains("gave up")),
        "{err:?}"
    );
    let resumes = resumptions(&sim);
    assert_eq!(resumes, 5, "bounded attempts");
}

/// A legacy server whose streams each bring one new event and close at once with
/// `retry: 0` is resumed no faster than every 100 ms (it was resumed as fast as it closed
/// streams: 12,000 reconnections in 5 s against a real process).
#[test]
fn a_stream_closed_at_once_with_retry_zero_is_not_resumed_in_a_loop() {
    let note = |n: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":"{n}"}}}}"#
        )
    };
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => match req.header("last-event-id") {
                None => Reply::with_body(405, &[], ""),
                Some(last) => {
                    let next = last.parse::<u64>().unwrap() + 1;
                    Reply::sse_then_drop(Some(0), &[(Some(&next.to_string()), &note(next))])
                }
            },
            ("POST", "tools/call") => Reply::sse_then_drop(Some(0), &[(Some("0"), &note(0))]),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("t", json!({})).timeout(Duration::from_secs(3)),
        )
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some() || s.requests.len() > 1000);
    let resumes = resumptions(&sim);
    assert!(resumes <= 30, "{resumes} resumptions in 3 s");
    assert!(
        matches!(sim.completion(id), Some(Err(CallError::Timeout(_)))),
        "{:?}",
        sim.completion(id)
    );
}

/// A stream that only replays the event it was asked to resume after brings nothing new:
/// resuming it counts against `max_resume_attempts`, with a growing backoff, however
/// small its `retry`.
#[test]
fn a_stream_replaying_its_resumption_point_is_given_up() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), |req| {
        let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"again"}}"#;
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => match req.header("last-event-id") {
                None => Reply::with_body(405, &[], ""),
                Some(last) => Reply::sse_then_drop(Some(0), &[(Some(last), note)]),
            },
            ("POST", "tools/call") => Reply::sse_then_drop(Some(0), &[(Some("e1"), note)]),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("t", json!({})))
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some() || s.requests.len() > 1000);
    let resumes = resumptions(&sim);
    // One after the call's own stream (which brought something), then the five attempts
    // of streams that brought nothing new.
    assert_eq!(resumes, 6, "bounded attempts");
    assert!(
        matches!(sim.completion(id), Some(Err(CallError::Http(h))) if h.detail.contains("gave up")),
        "{:?}",
        sim.completion(id)
    );
}

/// A JSON body that is not a JSON-RPC message fails the call saying why, with what most
/// often explains it (a compressed body, a byte order mark), not only that it did not
/// answer.
#[test]
fn an_unreadable_json_response_says_why() {
    use mcp_proto::client::{BodyHint, UnreadableBody};
    let gzip = Some(BodyHint::ContentEncoding("gzip".into()));
    for (headers, body, expected, hint) in [
        (vec![], "<html>", "not a JSON-RPC message", None),
        (
            vec![("Content-Encoding", "gzip")],
            "\u{1f}\u{8b}",
            "Content-Encoding gzip is not supported",
            gzip,
        ),
        (
            vec![],
            "\u{feff}{}",
            "byte order mark",
            Some(BodyHint::ByteOrderMark),
        ),
        (
            vec![],
            r#"{"jsonrpc":"2.0","id":999,"result":{}}"#,
            "did not answer the request",
            None,
        ),
    ] {
        let mut sim = HttpSim::new(config(EraMode::Auto), move |req| match req.rpc_method() {
            "server/discover" => discover_ok(req),
            _ => {
                let mut hs = vec![("Content-Type", "application/json")];
                hs.extend(headers.iter().copied());
                Reply::with_body(200, &hs, body)
            }
        });
        sim.connect();
        let err = sim.call(CallRequest::list_tools()).unwrap_err();
        assert!(
            matches!(&err, CallError::Http(h) if h.detail.contains(expected)),
            "{expected}: {err:?}"
        );
        // The cause is typed too, so that no one has to read the text.
        let CallError::Http(failure) = err else {
            unreachable!()
        };
        match failure.body.as_deref() {
            Some(UnreadableBody::NotAMessage { hint: got, .. }) => assert_eq!(got, &hint),
            Some(UnreadableBody::NotTheAnswer) => assert!(expected.contains("did not answer")),
            other => panic!("{expected}: {other:?}"),
        }
    }
}

#[test]
fn a_modern_stream_lost_before_its_response_fails_the_call() {
    let mut sim = HttpSim::new(config(EraMode::Auto), |req| match req.rpc_method() {
        "server/discover" => discover_ok(req),
        "tools/call" => Reply::sse_then_drop(
            None,
            &[(
                None,
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":0,"progress":1}}"#,
            )],
        ),
        _ => Reply::with_body(404, &[], ""),
    });
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Http(h) if h.detail.contains("cannot be resumed")),
        "{err:?}"
    );
    assert_eq!(sim.with_method("tools/call").len(), 1, "no silent re-issue");
    assert!(sim.requests.iter().all(|r| r.method == "POST"));
}

#[test]
fn cancelling_a_modern_call_aborts_its_exchange() {
    let mut sim = HttpSim::new(config(EraMode::Auto), |req| match req.rpc_method() {
        "server/discover" => discover_ok(req),
        "tools/list" => no_tools(req),
        _ => Reply::Silence,
    });
    sim.connect();
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("t", json!({})))
        .unwrap();
    sim.run_until(|s| !s.hung.is_empty());
    sim.client.cancel(sim.now, id).unwrap();
    sim.step();
    assert_eq!(sim.closed, [sim.hung[0]], "the call's connection is closed");
    assert!(sim.with_method("notifications/cancelled").is_empty());
}

#[test]
fn errors_keep_status_code_and_data() {
    let mut sim = HttpSim::new(config(EraMode::Auto), |req| match req.rpc_method() {
        "server/discover" => discover_ok(req),
        _ => Reply::json(
            400,
            &json!({"jsonrpc":"2.0","id":req.body["id"],"error":{"code":-32020,
            "message":"Header mismatch","data":{"header":"Mcp-Name"}}}),
        ),
    });
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert_eq!(err.http_status(), Some(400));
    assert_eq!(err.code(), Some(-32020));
    let CallError::Http(h) = err else { panic!() };
    assert_eq!(h.error.unwrap().data.unwrap()["header"], "Mcp-Name");
}

#[test]
fn oversized_bodies_and_redirects_are_typed_errors() {
    let mut cfg = config(EraMode::Auto);
    let mut limits = mcp_proto::Limits::default();
    limits.max_message_bytes = 1000;
    cfg = cfg.limits(limits);
    let mut sim = HttpSim::new(cfg, |req| match req.rpc_method() {
        "server/discover" => discover_ok(req),
        "tools/list" => Reply::with_body(302, &[("Location", "http://127.0.0.1:10/mcp")], ""),
        // A body announced far larger than a message may be, of which little comes.
        _ if req.body["params"]["name"] == "announced" => Reply::Raw(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
              Content-Length: 1000000000000000\r\n\r\n{\"jsonrpc\""
                .to_vec(),
        ),
        _ => Reply::json(
            200,
            &result(
                req,
                json!({"content":[{"type":"text","text":"x".repeat(5000)}]}),
            ),
        ),
    });
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Http(h) if h.detail.contains("over 1000")),
        "{err:?}"
    );
    let err = sim.call(CallRequest::list_tools()).unwrap_err();
    assert_eq!(err.http_status(), Some(302));
    assert!(
        err.to_string()
            .contains("redirect to http://127.0.0.1:10/mcp not followed"),
        "{err}"
    );
    assert_eq!(
        sim.closed,
        [sim.request_conns[1]],
        "the oversized exchange's connection was closed, and no other"
    );
    // Refused from its head: nothing more of it is waited for.
    let start = sim.now;
    let err = sim
        .call(CallRequest::call_tool("announced", json!({})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Http(h) if h.detail.contains("of 1000000000000000 bytes over 1000")),
        "{err:?}"
    );
    assert_eq!(sim.now, start, "failed at once, not at a timeout");
}

/// Every HTTP row of the era-detection vectors, through the machine: what it sends next
/// (or how it closes) after the probe's answer.
#[test]
fn era_detection_vectors_over_http() {
    let doc = load_vectors("era-detection.json");
    for row in doc["vectors"].as_array().unwrap() {
        if row["transport"] != "streamable-http" {
            continue;
        }
        let id = row["id"].as_str().unwrap().to_owned();
        if row["client_probe_version"] != "2026-07-28" {
            continue; // rows probing a version this client does not speak
        }
        let out = row["probe_outcome"].clone();
        let mut sim = HttpSim::new(config(EraMode::Auto), move |req| {
            if req.rpc_method() != "server/discover" {
                return Reply::Silence;
            }
            if out.get("timeout").is_some() {
                return Reply::Silence;
            }
            if out.get("network_error").is_some() {
                return Reply::NetworkError;
            }
            let status = out["http_status"].as_u64().unwrap() as u16;
            let mut headers: Vec<(String, String)> = out
                .get("headers")
                .and_then(Value::as_object)
                .map(|h| {
                    h.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                        .collect()
                })
                .unwrap_or_default();
            let body = if let Some(sse) = out.get("sse").and_then(Value::as_str) {
                headers.push(("Content-Type".into(), "text/event-stream".into()));
                sse.replace("\"discover-1\"", &req.body["id"].to_string())
            } else {
                match out.get("body") {
                    Some(Value::String(s)) => {
                        headers.push(("Content-Type".into(), "text/plain".into()));
                        s.clone()
                    }
                    Some(v) => {
                        headers.push(("Content-Type".into(), "application/json".into()));
                        let mut v = v.clone();
                        if v["id"] == "discover-1" {
                            v["id"] = req.body["id"].clone();
                        }
                        v.to_string()
                    }
                    None => String::new(),
                }
            };
            let hs: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            Reply::with_body(status, &hs, &body)
        });
        // Run until the machine decides.
        for _ in 0..4 {
            sim.step();
        }
        if out_is_timeout(row) {
            let t = sim.client.poll_timeout().unwrap();
            sim.now = t;
            sim.client.handle_timeout(t);
            sim.step();
        }
        let next = sim.requests.get(1).map(|r| r.rpc_method().to_owned());
        let closed = sim.closed_reason();
        let connected = sim.events.iter().any(|e| matches!(e, Event::Connected(_)));
        let verdict = row["expected"]["verdict"].as_str().unwrap();
        match verdict {
            "modern" => assert!(connected, "row {id}: {:?}", sim.events),
            "legacy" | "legacy-or-error" => {
                assert_eq!(
                    next.as_deref(),
                    Some("initialize"),
                    "row {id}: {:?}",
                    sim.events
                )
            }
            "modern-request-error" => assert!(
                matches!(closed, Some(CloseReason::Refused(_))),
                "row {id}: {closed:?}"
            ),
            "auth-required" => assert!(
                matches!(&closed, Some(CloseReason::AuthRequired { challenge: Some(c) }) if c.contains("resource_metadata")),
                "row {id}: {closed:?}"
            ),
            "error" => assert!(
                matches!(closed, Some(CloseReason::Http(_))),
                "row {id}: {closed:?}"
            ),
            other => panic!("row {id}: verdict {other}"),
        }
        if verdict != "legacy" && verdict != "legacy-or-error" {
            assert!(
                sim.with_method("initialize").is_empty(),
                "row {id}: no fallback"
            );
        }
    }
}

fn out_is_timeout(row: &Value) -> bool {
    row["probe_outcome"].get("timeout").is_some()
}

#[test]
fn a_server_that_drips_is_cut_off_by_the_call_timeout() {
    let mut sim = HttpSim::new(config(EraMode::Auto), |req| match req.rpc_method() {
        "server/discover" => discover_ok(req),
        "tools/list" => no_tools(req),
        // One byte of a response, then nothing.
        _ => Reply::Raw(b"H".to_vec()),
    });
    sim.connect();
    let start = sim.now;
    let req = CallRequest::call_tool("t", json!({})).timeout(Duration::from_secs(7));
    let err = sim.call(req).unwrap_err();
    assert_eq!(err, CallError::Timeout(Duration::from_secs(7)));
    assert_eq!(sim.now - start, Duration::from_secs(7));
    assert_eq!(
        sim.closed,
        [*sim.request_conns.last().unwrap()],
        "its connection is closed"
    );
}

#[test]
fn an_event_that_never_ends_is_bounded() {
    let mut sim = HttpSim::new(config(EraMode::Auto), |req| match req.rpc_method() {
        "server/discover" => discover_ok(req),
        "tools/list" => no_tools(req),
        _ => {
            let junk = "x".repeat(64 * 1024);
            let mut body = String::from("data: ");
            for _ in 0..200 {
                body.push_str(&junk);
            }
            Reply::Raw(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n",
                    body.len()
                )
                .into_bytes(),
            )
        }
    });
    sim.connect();
    let start = sim.now;
    let req = CallRequest::call_tool("t", json!({})).timeout(Duration::from_secs(3));
    let err = sim.call(req).unwrap_err();
    // The call fails at once, naming the limit, instead of waiting for its timeout.
    assert_eq!(sim.now, start, "failed promptly");
    assert!(
        matches!(&err, CallError::Http(h) if h.detail.contains("longer than")),
        "{err:?}"
    );
    assert_eq!(
        sim.closed,
        [*sim.request_conns.last().unwrap()],
        "the stream was cut"
    );
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::PeerError(p) if p.to_string().contains("longer than"))),
        "{:?}",
        sim.events
    );
}

/// Until the server accepted `notifications/initialized`, nothing else is handed out:
/// an adapter with several connections could otherwise let a call overtake it.
#[test]
fn nothing_overtakes_notifications_initialized() {
    let mut initialized = None;
    let mut sim = HttpSim::new(config(EraMode::Legacy), |req| match req.rpc_method() {
        "initialize" => legacy_init(req, "s"),
        "notifications/initialized" => Reply::Silence,
        _ => Reply::with_body(405, &[], ""),
    });
    let early = sim.client.call(sim.now, CallRequest::list_tools()).unwrap();
    for _ in 0..5 {
        sim.step();
    }
    let methods: Vec<_> = sim
        .requests
        .iter()
        .map(|r| r.rpc_method().to_owned())
        .collect();
    assert_eq!(methods, ["initialize", "notifications/initialized"]);
    if let Some(x) = sim.hung.first() {
        initialized = Some(*x);
    }
    let x = initialized.expect("the notification's exchange");
    let accepted = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
    sim.client.handle_read(sim.now, x, accepted);
    sim.step();
    let methods: Vec<_> = sim
        .requests
        .iter()
        .map(|r| format!("{} {}", r.method, r.rpc_method()))
        .collect();
    assert!(
        methods.contains(&"POST tools/list".to_owned()),
        "{methods:?}"
    );
    assert!(methods.contains(&"GET ".to_owned()), "{methods:?}");
    let _ = early;
}

/// A modern server whose tool `route` declares `Mcp-Param-Region`, and that refuses a
/// call without that header the way the SDK servers do (400, `-32020`). `schemas`
/// counts listings: the first `unannotated_listings` ones show the tool without its
/// annotation (a schema that changed since).
fn strict_server(unannotated_listings: usize) -> impl FnMut(&SeenRequest) -> Reply {
    let mut listings = 0;
    move |req| match req.rpc_method() {
        "server/discover" => discover_ok(req),
        "tools/list" => {
            listings += 1;
            let region = if listings <= unannotated_listings {
                json!({"type":"string"})
            } else {
                json!({"type":"string","x-mcp-header":"Region"})
            };
            Reply::json(
                200,
                &result(
                    req,
                    json!({"resultType":"complete","ttlMs":0,"tools":[
                        {"name":"route","inputSchema":{"type":"object","properties":{"region":region}}}
                    ]}),
                ),
            )
        }
        "tools/call" if req.header("mcp-param-region").is_none() => Reply::json(
            400,
            &json!({"jsonrpc":"2.0","id":req.body["id"],
                "error":{"code":-32020,"message":"Header mismatch: missing Mcp-Param-Region"}}),
        ),
        "tools/call" => Reply::json(
            200,
            &result(
                req,
                json!({"resultType":"complete","content":[{"type":"text","text":"routed"}]}),
            ),
        ),
        _ => Reply::with_body(404, &[], ""),
    }
}

#[test]
fn a_fresh_client_learns_the_header_declarations_before_its_first_call() {
    let mut sim = HttpSim::new(config(EraMode::Auto), strict_server(0));
    sim.connect();
    let out = sim
        .call(CallRequest::call_tool("route", json!({"region": "eu"})))
        .unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "routed");
    let methods: Vec<_> = sim.requests.iter().map(|r| r.rpc_method()).collect();
    assert_eq!(methods, ["server/discover", "tools/list", "tools/call"]);
    assert_eq!(
        sim.with_method("tools/call")[0].header("mcp-param-region"),
        Some("eu")
    );
    // The internal listing is nobody's call: one completion only, the caller's.
    let completions = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::CallCompleted { .. }))
        .count();
    assert_eq!(completions, 1);
    // Known now: the next call goes straight out.
    sim.call(CallRequest::call_tool("route", json!({"region": "us"})))
        .unwrap();
    assert_eq!(sim.with_method("tools/list").len(), 1);
}

#[test]
fn a_header_mismatch_refreshes_the_listing_and_retries_once() {
    // The first listing is stale (no annotation): the call goes without the header,
    // draws -32020, the listing is fetched again and the call succeeds.
    let mut sim = HttpSim::new(config(EraMode::Auto), strict_server(1));
    sim.connect();
    let out = sim
        .call(CallRequest::call_tool("route", json!({"region": "eu"})))
        .unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "routed");
    let methods: Vec<_> = sim.requests.iter().map(|r| r.rpc_method()).collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "tools/list",
            "tools/call",
            "tools/list",
            "tools/call"
        ]
    );
    let ids: Vec<_> = sim
        .with_method("tools/call")
        .iter()
        .map(|r| r.body["id"].clone())
        .collect();
    assert_ne!(ids[0], ids[1], "sent again under a new id");
}

#[test]
fn a_second_header_mismatch_fails_the_call() {
    // The annotation never shows up: one retry, then the -32020 is the caller's.
    let mut sim = HttpSim::new(config(EraMode::Auto), strict_server(usize::MAX));
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("route", json!({"region": "eu"})))
        .unwrap_err();
    assert_eq!(err.code(), Some(-32020));
    assert_eq!(err.http_status(), Some(400));
    assert_eq!(sim.with_method("tools/call").len(), 2, "never a loop");
}

#[test]
fn a_cached_legacy_verdict_skips_the_probe() {
    let legacy = |req: &SeenRequest| match (req.method.as_str(), req.rpc_method()) {
        ("POST", "initialize") => legacy_init(req, "s"),
        ("POST", "notifications/initialized") => Reply::accepted(),
        ("GET", _) => Reply::with_body(405, &[], ""),
        _ => Reply::with_body(400, &[], "?"),
    };
    let known = Some((Era::Legacy, ProtocolVersion::V2025_11_25));
    let mut sim = HttpSim::new(config(EraMode::Auto).known_era(known), legacy);
    sim.connect();
    assert_eq!(
        sim.client.state(),
        ConnectionState::Ready(Era::Legacy, ProtocolVersion::V2025_11_25)
    );
    assert!(sim.with_method("server/discover").is_empty(), "no probe");
}

#[test]
fn a_stale_legacy_verdict_is_probed_again_once() {
    // The server moved on to 2026: it refuses `initialize` with -32022.
    let moved_on = |req: &SeenRequest| match req.rpc_method() {
        "initialize" => Reply::json(
            400,
            &json!({"jsonrpc":"2.0","id":req.body["id"],"error":{"code":-32022,
                "message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}}),
        ),
        _ => modern_server(req),
    };
    let known = Some((Era::Legacy, ProtocolVersion::V2025_11_25));
    let mut sim = HttpSim::new(config(EraMode::Auto).known_era(known), moved_on);
    sim.connect();
    assert_eq!(
        sim.client.state(),
        ConnectionState::Ready(Era::Modern, ProtocolVersion::V2026_07_28)
    );
    let methods: Vec<_> = sim.requests.iter().map(|r| r.rpc_method()).collect();
    assert_eq!(methods, ["initialize", "server/discover"]);
}

#[test]
fn a_legacy_refusal_of_a_cached_verdict_is_not_probed_again() {
    // A 400 without a 2026 code says nothing about the era: the connection fails.
    let refuses =
        |req: &SeenRequest| Reply::with_body(400, &[], &format!("no {}", req.rpc_method()));
    let known = Some((Era::Legacy, ProtocolVersion::V2025_11_25));
    let mut sim = HttpSim::new(config(EraMode::Auto).known_era(known), refuses);
    sim.connect();
    assert!(sim.client.close_reason().is_some());
    assert_eq!(sim.requests.len(), 1, "initialize only");
}

#[test]
fn a_too_deep_answer_on_an_event_stream_fails_its_call_at_once() {
    let mut sim = HttpSim::new(config(EraMode::Auto), |req| match req.rpc_method() {
        "server/discover" => discover_ok(req),
        "tools/list" => no_tools(req),
        _ => {
            let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
            let answer = format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":{deep}}}}}"#,
                req.body["id"]
            );
            Reply::sse(&[], &[(None, &answer)])
        }
    });
    sim.connect();
    let start = sim.now;
    let err = sim
        .call(CallRequest::call_tool("t", json!({})).timeout(Duration::from_secs(30)))
        .unwrap_err();
    assert_eq!(sim.now, start, "at once, not at the timeout");
    assert!(
        matches!(
            &err,
            CallError::Peer(PeerError::Malformed {
                error: DecodeError::TooDeep { limit: 64 }
            })
        ),
        "{err:?}"
    );
}

// ----- byte budgets -------------------------------------------------------------------

#[test]
fn a_session_id_is_accepted_up_to_its_cap_and_refused_past_it() {
    use mcp_proto::http::headers::MAX_SESSION_ID_BYTES;
    for (len, ok) in [
        (MAX_SESSION_ID_BYTES, true),
        (MAX_SESSION_ID_BYTES + 1, false),
    ] {
        let session = "s".repeat(len);
        let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
            match (req.method.as_str(), req.rpc_method()) {
                ("POST", "initialize") => legacy_init(req, &session),
                ("POST", "notifications/initialized") => Reply::accepted(),
                ("GET", _) => Reply::with_body(405, &[], ""),
                _ => no_tools(req),
            }
        });
        sim.connect();
        let closed = sim.closed_reason();
        if ok {
            assert!(closed.is_none(), "{closed:?}");
            assert_eq!(sim.client.session_id().map(str::len), Some(len));
        } else {
            assert!(
                matches!(&closed, Some(CloseReason::InvalidSessionId(m)) if m.contains("4096")),
                "{closed:?}"
            );
        }
    }
}

#[test]
fn a_resumption_that_cannot_be_written_fails_the_call_at_once() {
    // An event id that is no header value (non-ASCII): `Last-Event-ID` cannot carry it.
    let mut sim = HttpSim::new(config(EraMode::Legacy), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => Reply::sse_then_drop(Some(10), &[(Some("é-1"), "")]),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let start = sim.now;
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(err.to_string().contains("cannot be resumed"), "{err}");
    assert!(sim.now - start < Duration::from_secs(1), "failed at once");
    assert!(
        sim.requests
            .iter()
            .all(|r| r.header("last-event-id").is_none())
    );
}

#[test]
fn an_event_id_past_its_cap_breaks_the_stream_naming_the_limit() {
    let long = "i".repeat(2000);
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => Reply::sse(&[], &[(Some(long.as_str()), "")]),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(err.to_string().contains("max_event_id_bytes"), "{err}");
}

// ----- deadlines on exchanges not tied to a call ----------------------------------------

fn short_timeouts(mode: EraMode) -> ClientConfig {
    let mut config = config(mode);
    config.limits.request_timeout = Duration::from_secs(5);
    config
}

#[test]
fn an_unanswered_initialized_notification_holds_later_calls_only_until_its_deadline() {
    let mut sim = HttpSim::new(short_timeouts(EraMode::Legacy), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::Silence,
            ("GET", _) => Reply::with_body(405, &[], ""),
            _ => no_tools(req),
        }
    });
    sim.connect();
    let start = sim.now;
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::list_tools().timeout(Duration::from_secs(60)),
        )
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    assert!(sim.completion(id).unwrap().is_ok());
    assert_eq!(
        sim.now - start,
        Duration::from_secs(5),
        "released at the deadline"
    );
    assert!(sim.events.iter().any(|e| matches!(
        e,
        Event::PeerError(PeerError::InitializedRefused { status: None, detail }) if detail.contains("no response")
    )));
}

#[test]
fn a_hung_call_lets_its_connection_go_and_does_not_hold_the_next_one() {
    let mut http = HttpConfig::new(EndpointUrl::parse("http://127.0.0.1:9/mcp", false).unwrap());
    http.pool.max_connections = 1;
    let mut sim = HttpSim::with_http(config(EraMode::Legacy), http, |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized" | "notifications/cancelled") => Reply::accepted(),
            ("GET", _) => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => Reply::Silence,
            _ => no_tools(req),
        }
    });
    sim.connect();
    let hung = CallRequest::call_tool("hang", json!({})).timeout(Duration::from_secs(3));
    assert_eq!(
        sim.call(hung).unwrap_err(),
        CallError::Timeout(Duration::from_secs(3))
    );
    let start = sim.now;
    let next = CallRequest::list_tools().timeout(Duration::from_secs(30));
    assert!(sim.call(next).is_ok(), "the next call is not held");
    assert_eq!(sim.now, start, "at once");
    assert_eq!(sim.with_method("notifications/cancelled").len(), 1);
    // The connection the hung call was written on is let go, not kept forever.
    let hung = sim.hung[0];
    assert!(sim.closed.contains(&hung), "{hung:?} still open");
}

#[test]
fn closing_with_many_exchanges_open_fails_and_closes_them_in_order() {
    // Calls and exchanges sit in hash maps; what a close does to all of them must follow
    // their order, not the maps'.
    let mut sim = HttpSim::new(config(EraMode::Legacy), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("POST", "tools/call") => Reply::Silence,
            ("GET", _) => Reply::with_body(405, &[], ""),
            _ => Reply::accepted(),
        }
    });
    sim.connect();
    sim.events.clear();
    let calls: Vec<CallId> = (0..12)
        .map(|i| {
            let hang = CallRequest::call_tool("hang", json!({ "n": i }));
            sim.client.call(sim.now, hang).unwrap()
        })
        .collect();
    while sim.step() {}
    assert_eq!(sim.hung.len(), 12);
    let hung = sim.hung.clone();
    sim.closed.clear();
    sim.client.close(sim.now);
    while sim.step() {}
    let failed: Vec<CallId> = sim
        .events
        .iter()
        .filter_map(|e| match e {
            Event::CallCompleted { call, .. } => Some(*call),
            _ => None,
        })
        .collect();
    assert_eq!(failed, calls);
    let closed: Vec<ConnId> = sim
        .closed
        .iter()
        .copied()
        .filter(|c| hung.contains(c))
        .collect();
    assert_eq!(closed, hung, "hung connections closed out of order");
}

/// A legacy server that answers a call with an event stream of `pings` pings and keeps it
/// open, over one connection: each answer is a POST, and none can leave. `budget` is the
/// client's `max_queued_output_bytes`.
fn pinging_server(pings: usize, budget: usize) -> HttpSim<impl FnMut(&SeenRequest) -> Reply> {
    let mut http = HttpConfig::new(EndpointUrl::parse("http://127.0.0.1:9/mcp", false).unwrap());
    http.pool.max_connections = 1;
    let mut limits = mcp_proto::Limits::default();
    limits.max_queued_output_bytes = budget;
    let mut sim = HttpSim::with_http(
        config(EraMode::Legacy).limits(limits),
        http,
        move |req| match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "tools/call") => {
                let pings: String = (0..pings)
                    .map(|i| {
                        format!("data: {{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"ping\"}}\n\n")
                    })
                    .collect();
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                            Transfer-Encoding: chunked\r\n\r\n";
                Reply::Raw(format!("{head}{:x}\r\n{pings}\r\n", pings.len()).into_bytes())
            }
            ("GET", _) => Reply::with_body(405, &[], ""),
            _ => Reply::accepted(),
        },
    );
    sim.connect();
    sim
}

#[test]
fn a_server_asking_faster_than_it_takes_the_answers_is_cut_off() {
    // 2,000 pings whose answers cannot leave: the answers waiting for a connection are
    // bounded as over stdio.
    let mut sim = pinging_server(2000, 20_000);
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    let closed = sim.closed_reason();
    assert!(
        matches!(closed, Some(CloseReason::PeerNotReading { waiting }) if waiting > 20_000),
        "{closed:?} ({err:?})"
    );
}

/// What a waiting answer costs the machine is more than its text: its request head, the
/// queued job and the record of its exchange. All of it counts against
/// `max_queued_output_bytes`, so a flood of tiny requests whose answers cannot leave is
/// cut off before it costs much more than the budget (60,000 pings took this simulation
/// to 175 MiB under the default 16 MiB budget when only the answers' text counted; 37 MiB
/// since).
#[test]
fn the_queue_budget_counts_each_waiting_answers_records_not_only_its_text() {
    const BUDGET: usize = 1 << 20;
    let mut sim = pinging_server(1500, BUDGET);
    let mut peak = 0;
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("t", json!({})));
    sim.run_until(|s| {
        peak = peak.max(s.client.retained_bytes());
        s.events.iter().any(|e| matches!(e, Event::Closed { .. }))
    });
    let closed = sim.closed_reason();
    // The answers' text alone (1,500 pongs with their heads, about 450 KB) is within
    // the budget; with their records it is not.
    assert!(
        matches!(closed, Some(CloseReason::PeerNotReading { waiting }) if waiting > BUDGET),
        "{closed:?} (call {id:?})"
    );
    assert!(peak <= 2 * BUDGET, "retained {peak} bytes at the peak");
}

/// A probe answered on an event stream that crosses a limit got no answer: that is no
/// evidence that the server is legacy, so the client does not fall back to `initialize`
/// but fails, naming the limit.
#[test]
fn a_probe_answered_on_a_stream_that_crosses_a_limit_is_not_taken_for_legacy() {
    let long_id = "i".repeat(2000);
    let mut sim = HttpSim::new(config(EraMode::Auto), move |req| match req.rpc_method() {
        "server/discover" => {
            let Reply::Raw(ok) = discover_ok(req) else {
                unreachable!()
            };
            let ok = String::from_utf8(ok).unwrap();
            let body = ok.split("\r\n\r\n").nth(1).unwrap().to_owned();
            Reply::sse(&[], &[(Some(long_id.as_str()), body.as_str())])
        }
        "initialize" => legacy_init(req, "s"),
        _ => no_tools(req),
    });
    sim.connect();
    assert!(sim.with_method("initialize").is_empty(), "no fallback");
    let reason = sim.events.iter().find_map(|e| match e {
        Event::Closed { reason } => Some(reason.clone()),
        _ => None,
    });
    let Some(reason @ CloseReason::Http(_)) = reason else {
        panic!("{reason:?} {:?}", sim.client.state());
    };
    assert!(
        reason.to_string().contains("event id"),
        "the limit is named: {reason}"
    );
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::PeerError(PeerError::Sse(_)))),
        "{:?}",
        sim.events
    );
}

/// A 2025-11-25 server's answer to `initialize` declaring task-augmented `tools/call`,
/// in session `session`.
fn task_server_init(req: &SeenRequest, session: &str) -> Reply {
    let caps = json!({"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}});
    let body = result(
        req,
        json!({"protocolVersion":"2025-11-25","capabilities":caps,
            "serverInfo":{"name":"legacy","version":"1"}}),
    );
    let headers = [
        ("Content-Type", "application/json"),
        ("Mcp-Session-Id", session),
    ];
    Reply::with_body(200, &headers, &body.to_string())
}

/// A task-augmented call between two polls of its task when the session expires (a
/// listing draws the 404): its task belongs to the old session, so the call fails with
/// the expiry. Its `tools/call` already ran and made the task: it is never sent again,
/// which would run the tool a second time.
#[test]
fn a_task_being_polled_when_the_session_expires_is_not_made_again() {
    let mut inits = 0;
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        let on_s1 = req.header("mcp-session-id") == Some("s1");
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => {
                inits += 1;
                task_server_init(req, &format!("s{inits}"))
            }
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") if on_s1 => {
                let task = json!({"taskId":"t1","status":"working","pollInterval":5000,
                    "createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z"});
                Reply::json(200, &result(req, json!({ "task": task })))
            }
            _ => Reply::with_body(404, &[], "session gone"),
        }
    });
    sim.connect();
    let task = sim.start(CallRequest::call_tool("slow", json!({})).as_task(None));
    sim.run_until(|s| {
        s.events
            .iter()
            .any(|e| matches!(e, Event::TaskCreated { .. }))
    });
    // Before the first poll, a listing meets the expired session.
    let list = sim.start(CallRequest::list_tools());
    sim.run_until(|s| s.completion(task).is_some());
    assert!(
        matches!(sim.completion(task), Some(Err(CallError::SessionExpired))),
        "{:?}",
        sim.completion(task)
    );
    sim.run_until(|s| s.completion(list).is_some());
    assert_eq!(sim.with_method("tools/call").len(), 1, "the tool ran once");
    assert!(sim.with_method("tasks/get").is_empty());
}

/// A task-augmented `tools/call` whose answer (a `CreateTaskResult`) arrives while the
/// client is making a new session, after another request met the expired one: the
/// tool ran and made its task on the old session, so the call fails with the expiry,
/// as one between two polls does. It is not taken for a tool result, nor sent again.
#[test]
fn a_task_made_on_a_session_being_replaced_fails_with_the_expiry() {
    let mut inits = 0;
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        let on_s1 = req.header("mcp-session-id") == Some("s1");
        match (req.method.as_str(), req.rpc_method()) {
            // The second session's initialize is answered by the test.
            ("POST", "initialize") if inits == 1 => {
                inits += 1;
                Reply::Silence
            }
            ("POST", "initialize") => {
                inits += 1;
                task_server_init(req, "s1")
            }
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::with_body(405, &[], ""),
            // The tool call's answer is held, to come while the new session is made.
            ("POST", "tools/call") if on_s1 => Reply::Silence,
            _ => Reply::with_body(404, &[], "session gone"),
        }
    });
    sim.connect();
    let task = sim.start(CallRequest::call_tool("slow", json!({})).as_task(None));
    sim.step();
    let call_at = sim
        .requests
        .iter()
        .position(|r| r.rpc_method() == "tools/call")
        .unwrap();
    let (call_conn, call_id) = (
        sim.request_conns[call_at],
        sim.requests[call_at].body["id"].clone(),
    );
    // A listing meets the expired session: a new one is being made.
    sim.start(CallRequest::list_tools());
    sim.run_until(|s| s.with_method("initialize").len() == 2);
    let task_record = json!({"taskId":"t1","status":"working","pollInterval":5000,"ttl":null,
        "createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z"});
    let body = json!({"jsonrpc":"2.0","id":call_id,"result":{"task":task_record}});
    let Reply::Raw(bytes) = Reply::json(200, &body) else {
        unreachable!()
    };
    sim.server_sends(call_conn, &bytes);
    assert!(
        matches!(sim.completion(task), Some(Err(CallError::SessionExpired))),
        "{:?}",
        sim.completion(task)
    );
    assert_eq!(sim.with_method("tools/call").len(), 1, "the tool ran once");
    assert!(sim.with_method("tasks/get").is_empty());
}

/// A call waiting for its own answer on a session replaced meanwhile can be cancelled:
/// it completes once, as cancelled, and its old exchange is given up without a
/// `notifications/cancelled` (it went out on the new session, naming an id that session
/// never saw).
#[test]
fn a_call_waiting_on_a_replaced_session_can_be_cancelled() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), forgetful_server(|s| s == "s1"));
    sim.connect();
    let hang = sim.start(CallRequest::call_tool("hang", json!({})));
    sim.step();
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "fresh");
    assert!(
        sim.completion(hang).is_none(),
        "still waiting on the old session"
    );
    let hang_conn = sim.request_conns[sim
        .requests
        .iter()
        .position(|r| r.body["params"]["name"] == "hang")
        .unwrap()];
    sim.client.cancel(sim.now, hang).unwrap();
    sim.step();
    assert!(matches!(
        sim.completion(hang),
        Some(Err(CallError::Cancelled))
    ));
    assert!(sim.closed.contains(&hang_conn), "its exchange is given up");
    // Its session is gone, and its call with it: nothing to tell the new one, which
    // never saw its id.
    let cancels = sim.with_method("notifications/cancelled");
    assert!(cancels.is_empty(), "{cancels:?}");
    sim.advance(Duration::from_secs(120));
    let completions = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::CallCompleted { call, .. } if *call == hang))
        .count();
    assert_eq!(completions, 1);
    assert_eq!(sim.with_method("tools/call").len(), 3, "hang, t, t again");
}
