//! The client's deadlines and learned state against servers that stretch them: a call
//! made during a legacy input pause, a page asked for during one, a listing sent again
//! on a new legacy session, a 2025 task that says it needs input and asks nothing (and
//! one that does ask, whose person takes long), and `x-mcp-header` declarations over
//! listings of ever new tools.

use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::client::{
    CallError, CallRequest, ClientConfig, Event, InputAnswer, InputId, TaskStatus,
};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::EraMode;
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("edges", "1")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation())
}

fn legacy_init(m: &Value, capabilities: Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"protocolVersion":"2025-11-25",
        "capabilities":capabilities,"serverInfo":{"name":"s","version":"1"}}})
    .to_string()
}

fn elicit(id: &str, task: Option<&str>) -> String {
    let mut params = json!({"message":"?","requestedSchema":{"type":"object","properties":{}}});
    if let Some(task) = task {
        params["_meta"] = json!({"io.modelcontextprotocol/related-task": {"taskId": task}});
    }
    json!({"jsonrpc":"2.0","id":id,"method":"elicitation/create","params":params}).to_string()
}

fn inputs_asked(sim: &Sim) -> Vec<InputId> {
    (sim.events.iter())
        .filter_map(|e| match e {
            Event::InputRequested { input, .. } => Some(*input),
            _ => None,
        })
        .collect()
}

/// A call made while a legacy server already waits for a person is held only from when
/// it was made: once more requests for input push it past `max_input_rounds` pauses,
/// its deadline runs again, credited with the time it was held (none), not with the
/// whole pause that began a thousand seconds before it existed.
#[test]
fn a_call_made_during_a_pause_is_credited_from_when_it_was_made() {
    let script = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m, json!({"tools": {}}))],
        Some("tools/call") if m["params"]["name"] == "a" => vec![elicit("q0", None)],
        Some("tools/call") => (1..=11).map(|i| elicit(&format!("q{i}"), None)).collect(),
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Legacy), script);
    sim.connect();
    let a = CallRequest::call_tool("a", json!({}));
    sim.client.call(sim.now, a).unwrap();
    while sim.step() {}
    sim.advance(Duration::from_secs(1000));
    let made = sim.now;
    let b = CallRequest::call_tool("b", json!({})).timeout(Duration::from_secs(60));
    let b = sim.client.call(sim.now, b).unwrap();
    sim.run_until(|s| s.completion(b).is_some());
    assert!(
        matches!(sim.completion(b), Some(Err(CallError::Timeout(_)))),
        "{:?}",
        sim.completion(b)
    );
    let took = sim.now.saturating_duration_since(made);
    assert!(
        took <= Duration::from_secs(61),
        "timed out {took:?} after it was made (timeout 60 s)"
    );
}

/// A listing whose next page is asked for while a legacy server waits for a person:
/// the whole wait was the person's, so after it ends the listing still has its 60 s,
/// and no more (the page's deadline is not moved by the pause a second time).
#[test]
fn a_page_asked_for_during_a_pause_keeps_the_listings_time() {
    let script = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m, json!({"tools": {}}))],
        Some("tools/call") => vec![elicit("q0", None)],
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Legacy), script);
    sim.connect();
    let a = CallRequest::call_tool("a", json!({}));
    sim.client.call(sim.now, a).unwrap();
    while sim.step() {}
    let list = CallRequest::list_tools().timeout(Duration::from_secs(60));
    let list = sim.client.call(sim.now, list).unwrap();
    while sim.step() {}
    let first = sim.sent_with_method("tools/list")[0]["id"].clone();
    // The server takes 900 s over the first page: the pause holds the deadline.
    sim.advance(Duration::from_secs(900));
    let page = json!({"jsonrpc":"2.0","id":first,"result":{"tools":[],"nextCursor":"c1"}});
    sim.client.handle_read(
        sim.now,
        mcp_proto::client::ConnId::STDIO,
        format!("{page}\n").as_bytes(),
    );
    while sim.step() {}
    assert_eq!(sim.sent_with_method("tools/list").len(), 2, "page 2 asked");
    sim.advance(Duration::from_secs(100));
    let q0 = inputs_asked(&sim)[0];
    let decline = InputAnswer::Result(json!({"action": "decline"}));
    sim.client.respond(sim.now, q0, decline).unwrap();
    let resumed = sim.now;
    sim.run_until(|s| s.completion(list).is_some());
    assert!(
        matches!(sim.completion(list), Some(Err(CallError::Timeout(_)))),
        "{:?}",
        sim.completion(list)
    );
    let after = sim.now.saturating_duration_since(resumed);
    assert!(
        (Duration::from_secs(59)..=Duration::from_secs(61)).contains(&after),
        "timed out {after:?} after the pause ended (60 s were left)"
    );
}

fn http_result(req: &SeenRequest, result: Value) -> Value {
    json!({"jsonrpc":"2.0","id":req.body["id"],"result":result})
}

/// A legacy listing whose second page meets a `404` (the session expired) is sent again
/// on the new session (decision 14), from its first page: cursors are not kept across
/// sessions (2025 pagination), and the old session's items are not mixed in.
#[test]
fn a_listing_sent_again_on_a_new_session_starts_over() {
    let mut inits = 0;
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req: &SeenRequest| {
        let session = req.header("mcp-session-id").map(str::to_owned);
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => {
                inits += 1;
                let id = if inits == 1 { "s1" } else { "s2" };
                let result = json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                    "serverInfo":{"name":"legacy","version":"1"}});
                let body = http_result(req, result).to_string();
                let headers = [("Content-Type", "application/json"), ("Mcp-Session-Id", id)];
                Reply::with_body(200, &headers, &body)
            }
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::with_body(405, &[], ""),
            ("POST", "tools/list") => {
                let cursor = req.body["params"]["cursor"].as_str().map(str::to_owned);
                let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
                match (session.as_deref(), cursor.as_deref()) {
                    (Some("s1"), None) => Reply::json(
                        200,
                        &http_result(
                            req,
                            json!({"tools": [tool("old-1")], "nextCursor": "s1-page-2"}),
                        ),
                    ),
                    (Some("s1"), Some(_)) => Reply::with_body(404, &[], "session gone"),
                    (Some("s2"), Some(c)) => Reply::json(
                        200,
                        &json!({"jsonrpc":"2.0","id":req.body["id"],"error":{"code":-32602,
                            "message":format!("Invalid cursor {c}")}}),
                    ),
                    (Some("s2"), None) => {
                        Reply::json(200, &http_result(req, json!({"tools": [tool("new-1")]})))
                    }
                    _ => Reply::with_body(400, &[], "no session"),
                }
            }
            _ => Reply::with_body(404, &[], ""),
        }
    });
    sim.connect();
    let out = sim.call(CallRequest::list_tools());
    let on_new: Vec<Value> = (sim.with_method("tools/list").iter())
        .filter(|r| r.header("mcp-session-id") == Some("s2"))
        .map(|r| r.body["params"]["cursor"].clone())
        .collect();
    assert_eq!(
        on_new,
        [Value::Null],
        "one listing, from its start: {out:?}"
    );
    let names: Vec<String> = (out.expect("listing").items.iter())
        .map(|i| serde_json::from_str::<Value>(i.get()).unwrap()["name"].to_string())
        .collect();
    assert_eq!(names, ["\"new-1\""], "only the new session's tools");
}

fn task_caps() -> Value {
    json!({"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}})
}

fn legacy_task(status: &str) -> Value {
    json!({"taskId":"t1","status":status,"createdAt":"2025-01-01T00:00:00Z",
        "lastUpdatedAt":"2025-01-01T00:00:00Z","ttl":null})
}

/// A legacy server whose `tools/call` makes a task that says `input_required` at once
/// (no lifetime), and answers anything else with `rest`; a call of it as a task (60 s
/// timeout), made and its first requests written.
fn task_needing_input(
    mut rest: impl FnMut(&Value) -> Vec<String> + 'static,
) -> (Sim, mcp_proto::client::CallId) {
    let script = Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m, task_caps())],
        Some("tools/call") => vec![
            json!({"jsonrpc":"2.0","id":m["id"],"result":{"task":legacy_task("input_required")}})
                .to_string(),
        ],
        _ => rest(m),
    });
    let mut sim = Sim::new(config(EraMode::Legacy), script);
    sim.connect();
    let call = CallRequest::call_tool("t", json!({}))
        .as_task(None)
        .timeout(Duration::from_secs(60));
    let call = sim.client.call(sim.now, call).unwrap();
    while sim.step() {}
    (sim, call)
}

/// A 2025 task that says `input_required`, has no lifetime, and then asks nobody
/// anything: the `tasks/result` the client opens keeps the call's timeout (only a
/// person's time, once a request for input is out, holds it).
#[test]
fn a_task_that_needs_input_but_asks_nothing_keeps_the_calls_timeout() {
    let (mut sim, call) = task_needing_input(|_| Vec::new());
    assert_eq!(sim.sent_with_method("tasks/result").len(), 1);
    assert!(sim.client.poll_timeout().is_some(), "a deadline is armed");
    sim.run_until(|s| s.completion(call).is_some());
    assert!(
        matches!(sim.completion(call), Some(Err(CallError::Timeout(_)))),
        "{:?}",
        sim.completion(call)
    );
    assert!(
        sim.now <= Instant::ZERO + Duration::from_secs(61),
        "{:?}",
        sim.now
    );
}

/// A 2025 task whose `tasks/result` draws a request for input: the person takes ten
/// times the call's timeout, which is theirs, not the server's; the task's answer that
/// follows completes the call.
#[test]
fn a_task_whose_person_takes_long_is_not_timed_out() {
    let (mut sim, call) = task_needing_input(|m| match m["method"].as_str() {
        Some("tasks/result") => vec![elicit("q-task", Some("t1"))],
        None if m["id"] == "q-task" => vec![
            json!({"jsonrpc":"2.0","method":"notifications/tasks/status",
                "params":legacy_task("completed")})
            .to_string(),
        ],
        _ => Vec::new(),
    });
    let asked = inputs_asked(&sim);
    assert_eq!(asked.len(), 1, "{:?}", sim.events);
    sim.advance(Duration::from_secs(600));
    assert!(sim.completion(call).is_none(), "{:?}", sim.completion(call));
    let accept = InputAnswer::Result(json!({"action": "accept", "content": {}}));
    sim.client.respond(sim.now, asked[0], accept).unwrap();
    while sim.step() {}
    // The server's answer to tasks/result, once the task ended.
    let rpc = sim.sent_with_method("tasks/result")[0]["id"].clone();
    let done = json!({"jsonrpc":"2.0","id":rpc,"result":{"content":[{"type":"text","text":"ok"}],
        "_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}});
    sim.client.handle_read(
        sim.now,
        mcp_proto::client::ConnId::STDIO,
        format!("{done}\n").as_bytes(),
    );
    sim.run_until(|s| s.completion(call).is_some());
    let out = sim.completion(call).expect("completed");
    assert!(out.is_ok(), "{out:?}");
    let statuses: Vec<TaskStatus> = (sim.events.iter())
        .filter_map(|e| match e {
            Event::TaskStatus { task, .. } => Some(task.status),
            _ => None,
        })
        .collect();
    assert!(statuses.contains(&TaskStatus::Completed), "{statuses:?}");
}

/// Over 2026-07-28 HTTP the client learns each listed tool's `x-mcp-header`
/// declarations. A server whose every listing names new tools (after `list_changed`,
/// say) makes it keep one listing's worth, not the union of all, and
/// `Client::retained_bytes` counts what it keeps.
#[test]
fn learned_tool_declarations_are_one_listings_worth_and_counted() {
    let mut round = 0u32;
    let config = ClientConfig::new("edges", "1").era_mode(EraMode::Modern);
    let mut sim = HttpSim::new(config, move |req: &SeenRequest| match req.rpc_method() {
        "server/discover" => Reply::json(
            200,
            &http_result(
                req,
                json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                    "capabilities":{"tools":{"listChanged":true}}}),
            ),
        ),
        "tools/list" => {
            round += 1;
            let tools: Vec<Value> = (0..2000)
                .map(|i| {
                    json!({"name": format!("tool-{round}-{i}-{}", "x".repeat(200)),
                        "inputSchema": {"type": "object", "properties": {
                            "region": {"type": "string", "x-mcp-header": "Region"}}}})
                })
                .collect();
            let result = json!({"resultType": "complete", "tools": tools});
            Reply::json(200, &http_result(req, result))
        }
        _ => Reply::with_body(404, &[], ""),
    });
    sim.connect();
    let mut retained = Vec::new();
    for _ in 0..6 {
        let out = sim.call(CallRequest::list_tools());
        assert!(out.is_ok(), "{out:?}");
        drop(out);
        sim.events.clear();
        retained.push(sim.client.retained_bytes());
    }
    // 2000 names of about 215 bytes, and their header paths, are counted.
    assert!(retained[0] > 2000 * 215, "{retained:?}");
    assert!(
        retained[5] < retained[0] + retained[0] / 4,
        "grew with every listing: {retained:?}"
    );
}
