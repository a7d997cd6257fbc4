//! What a client on a 2025-06-18 session sends and acts on: the features 2025-11-25
//! added (tasks, URL-mode elicitation and its `-32042`, tool use in sampling) do not
//! exist there, whatever a server declares or sends. The client offers 2025-11-25 and
//! the scripted stdio server counter-offers 2025-06-18.

use mcp_proto::client::{CallError, CallRequest, ClientConfig, Event};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::{EraMode, ProtocolVersion};
use serde_json::{Value, json};

mod common;

use common::{Script, Stdio, outcome};

/// The client of these tests: it would use every 2025-11-25 feature it could.
fn config() -> ClientConfig {
    let mut caps = ClientCapabilities::with_elicitation();
    caps.elicitation_url = true;
    caps.sampling = true;
    caps.sampling_tools = true;
    ClientConfig::new("gates", "1")
        .era_mode(EraMode::Legacy)
        .capabilities(caps)
}

/// The answer to `initialize` of a server that settles on 2025-06-18 and still declares
/// the 2025-11-25 `tasks` capability (which that version does not have).
fn init_2025_06_18(m: &Value) -> Value {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"protocolVersion":"2025-06-18",
        "capabilities":{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},
        "serverInfo":{"name":"old","version":"1"}}})
}

fn text_result(m: &Value, text: &str) -> Value {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"content":[{"type":"text","text":text}]}})
}

/// A 2025-06-18 session has no task-augmented `tools/call`: the `task` member is not
/// sent even when the server declares `tasks.requests.tools.call`, lists the tool as
/// `taskSupport: "required"`, and the call asks to run as a task; the answer is a plain
/// result.
#[test]
fn a_2025_06_18_session_sends_no_task_augmented_call() {
    let server: Script = Box::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![init_2025_06_18(m)],
        Some("tools/list") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{"tools":[
            {"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}})],
        Some("tools/call") => vec![text_result(m, "done")],
        _ => Vec::new(),
    });
    let mut sim = Stdio::new(config(), server);
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    sim.call(CallRequest::call_tool("slow", json!({}))).unwrap();
    sim.call(CallRequest::call_tool("slow", json!({})).as_task(None))
        .unwrap();
    let calls = sim.sent_with_method("tools/call");
    assert_eq!(calls.len(), 2);
    for call in calls {
        assert!(call["params"].get("task").is_none(), "{call}");
    }
}

/// `tasks/*` do not exist in 2025-06-18: they fail locally, nothing is sent.
#[test]
fn a_2025_06_18_session_sends_no_tasks_methods() {
    let server: Script = Box::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![init_2025_06_18(m)],
        Some(_) if m.get("id").is_some() => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{}})],
        _ => Vec::new(),
    });
    let mut sim = Stdio::new(config(), server);
    sim.connect();
    for request in [
        CallRequest::task_status("t1"),
        CallRequest::task_result("t1"),
        CallRequest::list_tasks(),
        CallRequest::cancel_task("t1"),
    ] {
        let method = request.method().to_owned();
        let err = sim.call(request).unwrap_err();
        assert!(
            matches!(&err, CallError::NotInVersion { method: m, version }
                if *m == method && *version == ProtocolVersion::V2025_06_18),
            "{method}: {err:?}"
        );
        assert!(
            sim.sent_with_method(&method).is_empty(),
            "{method} was sent"
        );
    }
}

/// A 2025-06-18 server's `notifications/tasks/status` is no task news: it is passed on as
/// any notification the version does not define, not read as a task's status.
#[test]
fn a_2025_06_18_task_status_notification_is_not_read_as_task_news() {
    let server: Script = Box::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![init_2025_06_18(m)],
        Some("tools/call") => vec![
            json!({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{
                "taskId":"t1","status":"completed","createdAt":"2025-01-01T00:00:00Z",
                "lastUpdatedAt":"2025-01-01T00:00:00Z","ttl":null}}),
            text_result(m, "done"),
        ],
        _ => Vec::new(),
    });
    let mut sim = Stdio::new(config(), server);
    sim.connect();
    sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    let task_news = (sim.events.iter()).any(|e| matches!(e, Event::TaskStatus { .. }));
    assert!(!task_news, "{:?}", sim.events);
    let passed_on = (sim.events.iter())
        .any(|e| matches!(e, Event::Notification(n) if n.method == "notifications/tasks/status"));
    assert!(passed_on, "{:?}", sim.events);
}

/// `-32042` is a 2025-11-25 code: from a 2025-06-18 server it is an error like any
/// other, and the URLs its data names are not shown to the user.
#[test]
fn a_2025_06_18_url_elicitation_required_error_is_a_plain_error() {
    let server: Script = Box::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![init_2025_06_18(m)],
        Some("tools/call") => vec![json!({"jsonrpc":"2.0","id":m["id"],"error":{"code":-32042,
            "message":"go there","data":{"elicitations":[{"mode":"url","elicitationId":"e1",
            "url":"https://example.com/consent","message":"Open this"}]}}})],
        _ => Vec::new(),
    });
    let mut sim = Stdio::new(config(), server);
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Server(e) if e.code == -32042),
        "{err:?}"
    );
    let shown = (sim.events.iter()).any(|e| matches!(e, Event::InputRequested { .. }));
    assert!(!shown, "{:?}", sim.events);
}

/// A 2025-06-18 `elicitation/create` has no URL mode (its params need a
/// `requestedSchema`), nor does its `sampling/createMessage` carry tools: such requests
/// are refused, not shown to the user.
#[test]
fn a_2025_06_18_server_cannot_ask_for_a_url_or_for_sampling_with_tools() {
    let server: Script = Box::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![init_2025_06_18(m)],
        Some("tools/call") => vec![
            json!({"jsonrpc":"2.0","id":"u1","method":"elicitation/create","params":{
                "mode":"url","elicitationId":"e1","url":"https://example.com/consent",
                "message":"Open this"}}),
            json!({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{
                "messages":[{"role":"user","content":{"type":"text","text":"hi"}}],
                "maxTokens":10,"tools":[{"name":"x","inputSchema":{"type":"object"}}]}}),
            text_result(m, "done"),
        ],
        _ => Vec::new(),
    });
    let mut sim = Stdio::new(config(), server);
    sim.connect();
    sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    sim.step();
    let shown = (sim.events.iter()).any(|e| matches!(e, Event::InputRequested { .. }));
    assert!(!shown, "{:?}", sim.events);
    for id in ["u1", "s1"] {
        let answer = (sim.sent.iter()).find(|m| m["id"] == id && m.get("method").is_none());
        let answer = answer.unwrap_or_else(|| panic!("{id} unanswered: {:?}", sim.sent));
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
}

/// The `related-task` `_meta` key is a 2025-11-25 one: an answer to a 2025-06-18 server's
/// request that carries it does not echo it (there are no tasks to relate to).
#[test]
fn a_2025_06_18_answer_carries_no_related_task() {
    let server: Script = Box::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![init_2025_06_18(m)],
        Some("tools/call") => vec![
            json!({"jsonrpc":"2.0","id":"f1","method":"elicitation/create","params":{
                "message":"Name?","requestedSchema":{"type":"object","properties":{
                "name":{"type":"string"}}},
                "_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}}),
            text_result(m, "done"),
        ],
        _ => Vec::new(),
    });
    let mut sim = Stdio::new(config(), server);
    sim.connect();
    sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    let input = (sim.events.iter())
        .find_map(|e| match e {
            Event::InputRequested { input, .. } => Some(*input),
            _ => None,
        })
        .expect("asked");
    let answer = json!({"action": "accept", "content": {"name": "Ann"}});
    (sim.client)
        .respond(
            sim.now,
            input,
            mcp_proto::client::InputAnswer::Result(answer),
        )
        .unwrap();
    sim.step();
    let sent = (sim.sent.iter())
        .find(|m| m["id"] == "f1")
        .expect("answered");
    assert_eq!(sent["result"]["action"], "accept", "{sent}");
    assert!(sent["result"].get("_meta").is_none(), "{sent}");
}

/// 2025-06-18 elicitation is forms only (`elicitation: {}` says the client fills forms):
/// a client that does only URL-mode elicitation declares none there, and from 2025-11-25
/// on declares `url` alone.
#[test]
fn a_url_only_client_declares_no_2025_06_18_elicitation() {
    let mut caps = ClientCapabilities::none();
    caps.elicitation_url = true;
    let old = caps.to_json(ProtocolVersion::V2025_06_18);
    assert!(old.get("elicitation").is_none(), "{old}");
    for version in [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28] {
        assert_eq!(
            caps.to_json(version)["elicitation"],
            json!({"url": {}}),
            "{version}"
        );
    }
    let forms = ClientCapabilities::with_elicitation();
    assert_eq!(
        forms.to_json(ProtocolVersion::V2025_06_18)["elicitation"],
        json!({})
    );
}

/// `tasks/cancel` is served by a 2025-11-25 server that declared `tasks.cancel`: a task
/// call cancelled on a server that did not is ended locally, with no `tasks/cancel` sent
/// (nor `notifications/cancelled`, which a task must not get).
#[test]
fn no_tasks_cancel_to_a_server_without_tasks_cancel() {
    let server: Script = Box::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{
            "protocolVersion":"2025-11-25",
            "capabilities":{"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}},
            "serverInfo":{"name":"s","version":"1"}}})],
        Some("tools/call") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{"task":{
            "taskId":"t1","status":"working","createdAt":"2025-01-01T00:00:00Z",
            "lastUpdatedAt":"2025-01-01T00:00:00Z","ttl":60000,"pollInterval":60000}}})],
        Some(_) if m.get("id").is_some() => vec![json!({"jsonrpc":"2.0","id":m["id"],
            "error":{"code":-32601,"message":"Method not found"}})],
        _ => Vec::new(),
    });
    let mut sim = Stdio::new(config(), server);
    sim.connect();
    let request = CallRequest::call_tool("slow", json!({})).as_task(None);
    let id = sim.client.call(sim.now, request).unwrap();
    sim.run_until(|s| {
        (s.events.iter()).any(|e| matches!(e, Event::TaskCreated { call, .. } if *call == id))
    });
    sim.client.cancel(sim.now, id).unwrap();
    sim.run_until(|s| outcome(&s.events, id).is_some());
    sim.step();
    assert!(
        matches!(outcome(&sim.events, id), Some(Err(CallError::Cancelled))),
        "{:?}",
        sim.events
    );
    assert!(
        sim.sent_with_method("tasks/cancel").is_empty(),
        "{:?}",
        sim.sent
    );
    assert!(
        sim.sent_with_method("notifications/cancelled").is_empty(),
        "{:?}",
        sim.sent
    );
}
