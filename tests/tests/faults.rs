//! Fault injection on the simulations: a server killed mid-message, an event stream cut
//! mid-event (both eras), a server gone between two rounds of an `input_required`
//! exchange, a connection reset after the request was written, and a session that
//! expires between `initialize` and the first call. For each: a typed error or a correct
//! resume, and the server's own record shows every tool call run exactly once or not
//! at all: none lost without an error, none run twice.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use mcp_proto::client::{
    CallError, CallRequest, ClientConfig, CloseReason, ConnId, Event, InputAnswer,
};
use mcp_proto::version::EraMode;
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("faults", "1.0")
        .era_mode(mode)
        .capabilities(mcp_proto::model::ClientCapabilities::with_elicitation())
}

fn result(req: &SeenRequest, result: Value) -> Reply {
    Reply::json(
        200,
        &json!({"jsonrpc":"2.0","id":req.body["id"],"result":result}),
    )
}

fn legacy_init(req: &SeenRequest, session: &str) -> Reply {
    Reply::with_body(
        200,
        &[
            ("Content-Type", "application/json"),
            ("Mcp-Session-Id", session),
        ],
        &json!({"jsonrpc":"2.0","id":req.body["id"],"result":{"protocolVersion":"2025-11-25",
            "capabilities":{"tools":{}},"serverInfo":{"name":"faulty","version":"1"}}})
        .to_string(),
    )
}

fn discover(req: &SeenRequest) -> Reply {
    result(
        req,
        json!({"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}),
    )
}

/// A tool result as an SSE `data` payload.
fn answer(id: &Value, text: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":text}]}}).to_string()
}

/// Raw response bytes: an event stream that ends (connection closed) in the middle of
/// its second event.
fn sse_cut_mid_event(first_id: &str, id: &Value) -> Reply {
    let body = format!(
        "id: {first_id}\ndata: \n\nid: x\ndata: {}",
        &answer(id, "lost")[..20]
    );
    Reply::RawThenClose(
        format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n{body}").into_bytes(),
    )
}

#[test]
fn a_stdio_server_killed_mid_message_fails_the_call_once() {
    let runs = Rc::new(Cell::new(0));
    let seen = Rc::clone(&runs);
    let peer = Scripted::new(move |m: &Value| {
        match m["method"].as_str() {
        Some("initialize") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{
            "protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}})
        .to_string()],
        Some("tools/call") => {
            seen.set(seen.get() + 1);
            Vec::new()
        }
        _ => Vec::new(),
    }
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("t", json!({})))
        .unwrap();
    sim.step();
    // Half an answer, then the process is gone.
    let half = answer(&json!(1), "done");
    sim.client
        .handle_read(sim.now, ConnId::STDIO, &half.as_bytes()[..30]);
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.drain();
    assert!(matches!(
        sim.completion(id),
        Some(Err(CallError::Closed(CloseReason::ServerExited {
            truncated: 30
        })))
    ));
    assert_eq!(runs.get(), 1);
    assert_eq!(sim.respawns, 0, "never restarted to run it again");
}

#[test]
fn a_legacy_stream_cut_mid_event_resumes_and_the_tool_runs_once() {
    let mut runs = 0;
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => legacy_init(req, "s"),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) if req.header("last-event-id").is_none() => Reply::with_body(405, &[], ""),
            ("POST", "tools/call") => {
                runs += 1;
                assert_eq!(runs, 1, "the tool ran twice");
                sse_cut_mid_event("e1", &req.body["id"])
            }
            ("GET", _) => {
                // The resumption starts after the last complete event.
                assert_eq!(req.header("last-event-id"), Some("e1"));
                Reply::sse(&[], &[(Some("e2"), &answer(&json!(1), "resumed"))])
            }
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "resumed");
    assert_eq!(sim.with_method("tools/call").len(), 1);
}

#[test]
fn a_modern_stream_cut_mid_event_fails_the_call_and_never_resends_it() {
    let mut sim = HttpSim::new(config(EraMode::Auto), |req| match req.rpc_method() {
        "server/discover" => discover(req),
        "tools/list" => result(req, json!({"resultType":"complete","tools":[]})),
        "tools/call" => sse_cut_mid_event("e1", &req.body["id"]),
        _ => Reply::with_body(404, &[], ""),
    });
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(matches!(err, CallError::Http(_)), "{err:?}");
    assert_eq!(sim.with_method("tools/call").len(), 1);
}

#[test]
fn a_connection_reset_after_the_request_was_written_fails_the_call_once() {
    let mut sim = HttpSim::new(config(EraMode::Auto), |req| match req.rpc_method() {
        "server/discover" => discover(req),
        "tools/list" => result(req, json!({"resultType":"complete","tools":[]})),
        "tools/call" => Reply::NetworkError,
        _ => Reply::with_body(404, &[], ""),
    });
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Http(h) if h.transport.is_some()),
        "{err:?}"
    );
    assert_eq!(sim.with_method("tools/call").len(), 1, "not sent again");
}

#[test]
fn a_server_gone_between_two_input_rounds_fails_the_call_without_a_third_run() {
    // Round one asks for input; the answer round meets a reset connection.
    let mut rounds = 0;
    let mut sim = HttpSim::new(config(EraMode::Auto), move |req| match req.rpc_method() {
        "server/discover" => discover(req),
        "tools/list" => result(req, json!({"resultType":"complete","tools":[]})),
        "tools/call" => {
            rounds += 1;
            if rounds == 1 {
                result(
                    req,
                    json!({"resultType":"input_required","requestState":"st",
                        "inputRequests":{"k":{"method":"elicitation/create","params":{
                            "message":"?","requestedSchema":{"type":"object","properties":{}}}}}}),
                )
            } else {
                assert_eq!(req.body["params"]["requestState"], "st");
                Reply::NetworkError
            }
        }
        _ => Reply::with_body(404, &[], ""),
    });
    sim.connect();
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("confirm", json!({})))
        .unwrap();
    sim.run_until(|s| {
        s.events
            .iter()
            .any(|e| matches!(e, Event::InputRequested { .. }))
    });
    let input = sim
        .events
        .iter()
        .find_map(|e| match e {
            Event::InputRequested { input, .. } => Some(*input),
            _ => None,
        })
        .unwrap();
    sim.client
        .respond(sim.now, input, InputAnswer::accept(serde_json::Map::new()))
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    assert!(matches!(sim.completion(id), Some(Err(CallError::Http(_)))));
    assert_eq!(
        sim.with_method("tools/call").len(),
        2,
        "two rounds, no third"
    );
}

#[test]
fn a_session_that_expires_before_the_first_call_runs_the_call_once_on_a_new_one() {
    let mut inits = 0;
    let mut runs = 0;
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => {
                inits += 1;
                legacy_init(req, &format!("s{inits}"))
            }
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::with_body(405, &[], ""),
            // The server restarted right after the handshake: s1 is unknown.
            ("POST", "tools/call") if req.header("mcp-session-id") == Some("s1") => {
                Reply::with_body(404, &[], "no such session")
            }
            ("POST", "tools/call") => {
                runs += 1;
                assert_eq!(runs, 1, "the tool ran twice");
                result(req, json!({"content":[{"type":"text","text":"ran"}]}))
            }
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    sim.advance(Duration::from_millis(10));
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "ran");
    let sessions: Vec<_> = sim
        .with_method("tools/call")
        .iter()
        .map(|r| r.header("mcp-session-id"))
        .collect();
    assert_eq!(sessions, [Some("s1"), Some("s2")]);
}
