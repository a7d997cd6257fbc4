//! The client against Streamable HTTP servers that misbehave in ways that once held it:
//! streams that never end after their answer, resumptions and GET streams answered
//! without a stream, and 404s on a new session's first messages.

use std::time::Duration;

use mcp_proto::client::{CallError, CallRequest, ClientConfig, Event, PeerError};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::EraMode;
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use serde_json::{Value, json};

fn config(mode: EraMode) -> ClientConfig {
    let mut c = ClientConfig::new("probe", "1.0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation());
    c.limits.request_timeout = Duration::from_secs(10);
    c
}

fn result(req: &SeenRequest, result: Value) -> Value {
    json!({"jsonrpc":"2.0","id":req.body["id"],"result":result})
}

fn legacy_init(req: &SeenRequest) -> Reply {
    Reply::with_body(
        200,
        &[
            ("Content-Type", "application/json"),
            ("Mcp-Session-Id", "s"),
        ],
        &result(
            req,
            json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                "serverInfo":{"name":"legacy","version":"1"}}),
        )
        .to_string(),
    )
}

/// An SSE response (chunked) that carries `events` and is then never ended: no last
/// chunk, the connection stays open (keep-alive comments would do the same).
fn sse_never_ending(events: &str) -> Reply {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{events}\r\n",
        events.len()
    );
    Reply::Raw(head.into_bytes())
}

// ---------------------------------------------------------------------------------
// A POST's event stream that delivered its response but never ends lingers a second at
// most, and not at all while a request waits for a connection: more such calls than
// the pool's 16 connections all complete at once.

/// Twenty calls in a row on a client of 16 connections, each answered that way: every
/// one completes without the clock moving.
fn twenty_calls_complete_at_once(mut sim: HttpSim<impl FnMut(&SeenRequest) -> Reply>) {
    sim.connect();
    for i in 0..20 {
        let start = sim.now;
        let out = sim.call(CallRequest::list_tools());
        assert!(
            out.is_ok() && sim.now == start,
            "call {i}: {out:?} after {:?}",
            sim.now - start
        );
    }
}

#[test]
fn legacy_streams_that_never_end_after_their_answer_do_not_hold_the_pool() {
    twenty_calls_complete_at_once(HttpSim::new(config(EraMode::Legacy), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::with_body(405, &[], ""),
            ("POST", "tools/list") => {
                let r = result(req, json!({"tools":[]}));
                sse_never_ending(&format!("id: e{}\ndata: {r}\n\n", req.body["id"]))
            }
            _ => Reply::with_body(400, &[], "?"),
        }
    }));
}

#[test]
fn modern_streams_that_never_end_after_their_answer_do_not_hold_the_pool() {
    twenty_calls_complete_at_once(HttpSim::new(config(EraMode::Auto), |req| {
        match req.rpc_method() {
            "server/discover" => Reply::json(
                200,
                &result(
                    req,
                    json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                        "capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}),
                ),
            ),
            "tools/list" => {
                let r = result(req, json!({"resultType":"complete","ttlMs":0,"tools":[]}));
                sse_never_ending(&format!("data: {r}\n\n"))
            }
            _ => Reply::with_body(400, &[], "?"),
        }
    }));
}

// ---------------------------------------------------------------------------------
// A resumption (`Last-Event-ID`) answered 202 or 204 brings nothing of what it owed:
// its call fails at once, saying so, rather than at its deadline as a timeout.

fn resume_answered_with(status: u16) {
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("GET", _) => Reply::with_body(status, &[], ""),
            ("POST", "tools/call") => Reply::sse_then_drop(Some(100), &[(Some("e1"), "")]),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let start = sim.now;
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("t", json!({})))
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    let took = sim.now - start;
    assert!(
        took < Duration::from_secs(5),
        "HTTP {status} to the resumption: the call waited {took:?} and ended {:?}",
        sim.completion(id)
    );
    let error = sim.completion(id).unwrap().unwrap_err().to_string();
    assert!(
        error.contains("carried no event stream"),
        "{status}: {error}"
    );
}

#[test]
fn a_resumption_answered_204_fails_its_call_at_once() {
    resume_answered_with(204);
}

#[test]
fn a_resumption_answered_202_fails_its_call_at_once() {
    resume_answered_with(202);
}

// ---------------------------------------------------------------------------------
// The session's GET stream answered 204: there is none, and `hears_server()` says so
// (true only while the stream is open or being reopened).

#[test]
fn a_get_stream_answered_204_is_not_heard_from() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::with_body(204, &[], ""),
            ("POST", "tools/list") => Reply::json(200, &result(req, json!({"tools":[]}))),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    sim.advance(Duration::from_secs(120));
    let gets = sim.requests.iter().filter(|r| r.method == "GET").count();
    assert!(
        !sim.client.hears_server() || gets > 1,
        "hears_server() is true, but the only GET ({gets}) was answered 204 and nothing reopens it"
    );
}

// ---------------------------------------------------------------------------------
// A 404 on the session's GET (a route that serves only POST: "Cannot GET /mcp") means
// no GET stream, not an expired session. A server that refuses (404) every session it
// has just made, here at `notifications/initialized`, gets one more `initialize`, then
// the client closes: it once made sessions as fast as they were refused, without end.

fn post_only_server(get_404: bool) -> impl FnMut(&SeenRequest) -> Reply {
    move |req| match (req.method.as_str(), req.rpc_method()) {
        ("POST", "initialize") => legacy_init(req),
        ("POST", "notifications/initialized") if !get_404 => {
            Reply::with_body(404, &[], "no such session")
        }
        ("POST", "notifications/initialized") => Reply::accepted(),
        ("GET", _) if get_404 => {
            Reply::with_body(404, &[("Content-Type", "text/plain")], "Cannot GET /mcp")
        }
        ("GET", _) => Reply::with_body(405, &[], ""),
        ("POST", "tools/list") => Reply::json(200, &result(req, json!({"tools":[]}))),
        _ => Reply::with_body(400, &[], "?"),
    }
}

fn sessions_without_the_clock(get_404: bool) -> (usize, usize) {
    let mut sim = HttpSim::new(config(EraMode::Legacy), post_only_server(get_404));
    let mut steps = 0;
    while sim.step() && steps < 3000 {
        steps += 1;
    }
    let expired = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::PeerError(PeerError::SessionExpired)))
        .count();
    (sim.with_method("initialize").len(), expired)
}

#[test]
fn a_404_on_the_get_stream_does_not_end_the_session() {
    let (inits, expired) = sessions_without_the_clock(true);
    assert_eq!(
        (inits, expired),
        (1, 0),
        "initialize requests and SessionExpired events at t=0"
    );
    let mut sim = HttpSim::new(config(EraMode::Legacy), post_only_server(true));
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    assert!(!sim.client.hears_server());
    assert_eq!(sim.with_method("initialize").len(), 1);
}

#[test]
fn a_server_refusing_every_new_session_is_not_asked_without_end() {
    let (inits, expired) = sessions_without_the_clock(false);
    assert_eq!(
        (inits, expired),
        (2, 1),
        "initialize requests and SessionExpired events at t=0"
    );
}

/// The same over ten minutes of fake time, with a call waiting: it fails with the
/// reason, never sent.
#[test]
fn a_server_refusing_every_new_session_closes_the_client_with_its_call() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), post_only_server(false));
    sim.connect();
    let call = sim.client.call(sim.now, CallRequest::list_tools()).unwrap();
    for _ in 0..6000 {
        sim.advance(Duration::from_millis(100));
    }
    assert_eq!(sim.with_method("initialize").len(), 2, "in 600 s");
    match sim.completion(call) {
        Some(Err(CallError::Closed(reason))) => {
            let why = reason.to_string();
            assert!(
                why.contains("did not know the session it had just made"),
                "{why}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        sim.with_method("tools/list").is_empty(),
        "the call never ran"
    );
}

/// A `200` to `notifications/initialized` whose body never ends: the calls that waited
/// for it go once the bytes at hand do not end it, and its connection is not held.
#[test]
fn an_accepted_initialized_whose_body_never_ends_holds_nothing_up() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req),
            ("POST", "notifications/initialized") => sse_never_ending("data: {}\n\n"),
            ("GET", _) => Reply::with_body(405, &[], ""),
            ("POST", "tools/list") => Reply::json(200, &result(req, json!({"tools":[]}))),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let start = sim.now;
    let out = sim.call(CallRequest::list_tools());
    assert!(
        out.is_ok() && sim.now - start < Duration::from_secs(2),
        "{out:?} after {:?}",
        sim.now - start
    );
}

/// A request answered `202` with a body that never ends carried no response: its call
/// fails once the bytes at hand do not end the body, not at its deadline.
#[test]
fn a_request_accepted_without_a_response_fails_without_waiting_for_its_body() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => Reply::Raw(
                b"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n \r\n".to_vec(),
            ),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let start = sim.now;
    let error = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err()
        .to_string();
    assert_eq!(sim.now, start, "{error}");
    assert!(error.contains("HTTP 202 carried no response"), "{error}");
}
