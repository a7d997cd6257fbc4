//! Tasks: outcomes due later, input inside a task, required tasks, MRTR before a task,
//! cancellation, TTL, `tasks/list` pages, ids and times, and who may see a task.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Peer, meta};
use crate::Instant;
use crate::client::TASKS_EXTENSION;
use crate::model::Implementation;
use crate::server::legacy::LegacyState;
use crate::server::{InputRequestSpec, Server, ServerConfig, Tool, ToolCall, ToolOutcome};

fn name_form() -> InputRequestSpec {
    InputRequestSpec::form(
        "Name?",
        json!({"type": "object", "properties": {"name": {"type": "string"}}}),
    )
}

/// The name in an elicitation answer.
fn answered(call: &ToolCall<'_>, key: &str) -> Option<String> {
    let a = call.inputs.get(key)?;
    Some(a["content"]["name"].as_str().unwrap_or("?").to_owned())
}

/// `slow` (2 s), `fail` (a JSON-RPC error), `ask` (one input in the task), `two` (two
/// inputs at once), `must` (only as a task), `mrtr` (input before its task), `plain`.
fn server() -> Server {
    Server::new(server_config())
}

fn server_config() -> ServerConfig {
    let no_args = json!({"type": "object"});
    ServerConfig::new(Implementation::new("t", "0"))
        .with_tool(
            Tool::new("slow", "", no_args.clone(), |_: &ToolCall<'_>| {
                ToolOutcome::after(Duration::from_secs(2), ToolOutcome::text("slow done"))
            })
            .as_task(0),
        )
        .with_tool(
            Tool::new("fail", "", no_args.clone(), |_: &ToolCall<'_>| {
                ToolOutcome::Error(crate::jsonrpc::ErrorObject::new(-32603, "crashed"))
            })
            .as_task(0),
        )
        .with_tool(
            Tool::new(
                "ask",
                "",
                no_args.clone(),
                |call: &ToolCall<'_>| match answered(call, "who") {
                    Some(name) => ToolOutcome::text(format!("hello {name}")),
                    None => ToolOutcome::NeedInput(vec![("who".into(), name_form())]),
                },
            )
            .as_task(0),
        )
        .with_tool(
            Tool::new("two", "", no_args.clone(), |call: &ToolCall<'_>| {
                match (answered(call, "a"), answered(call, "b")) {
                    (Some(a), Some(b)) => ToolOutcome::text(format!("{a}+{b}")),
                    _ => ToolOutcome::NeedInput(vec![
                        ("a".into(), name_form()),
                        ("b".into(), name_form()),
                    ]),
                }
            })
            .as_task(0),
        )
        .with_tool(
            Tool::new("must", "", no_args.clone(), |_: &ToolCall<'_>| {
                ToolOutcome::error_text("tool failure")
            })
            .task_required(),
        )
        .with_tool(
            Tool::new(
                "mrtr",
                "",
                no_args.clone(),
                |call: &ToolCall<'_>| match answered(call, "user_name") {
                    Some(name) => ToolOutcome::after(
                        Duration::from_millis(500),
                        ToolOutcome::text(format!("task for {name}")),
                    ),
                    None => ToolOutcome::NeedInput(vec![("user_name".into(), name_form())]),
                },
            )
            .task_required()
            .input_before_task(),
        )
        .with_tool(Tool::new("plain", "", no_args, |_: &ToolCall<'_>| {
            ToolOutcome::text("plain")
        }))
}

fn declared() -> Value {
    meta(json!({"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}))
}

/// A 2026 request declaring the extension: its result (or the whole reply on error).
fn req(p: &mut Peer, method: &str, mut params: Value) -> Value {
    params["_meta"] = declared();
    let reply = p.call(json!(1), method, params);
    reply.get("result").cloned().unwrap_or(reply)
}

fn get(p: &mut Peer, id: &Value) -> Value {
    req(p, "tasks/get", json!({"taskId": id}))
}

fn at(p: &mut Peer, ms: u64) {
    p.now = Instant::from_millis(ms);
}

#[test]
fn a_delayed_outcome_shows_once_due_and_lands_inlined() {
    let mut p = Peer::new(server());
    let created = req(&mut p, "tools/call", json!({"name": "slow"}));
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    assert_eq!(created["ttlMs"], 600_000);
    assert!(created.get("requestState").is_none() && created.get("ttl").is_none());
    let id = created["taskId"].clone();
    at(&mut p, 1_999);
    let r = get(&mut p, &id);
    assert_eq!(r["status"], "working");
    assert!(r.get("result").is_none(), "{r}");
    at(&mut p, 2_000);
    let r = get(&mut p, &id);
    assert_eq!(r["status"], "completed");
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["result"]["content"][0]["text"], "slow done");
    assert!(
        r["result"].get("_meta").is_none(),
        "no related-task meta: {r}"
    );
    // The same tool outside a task answers at once.
    let r = p.call(
        json!(2),
        "tools/call",
        json!({"name": "slow", "_meta": meta(json!({}))}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "slow done");
}

#[test]
fn a_protocol_error_fails_the_task_with_the_error_inlined() {
    let mut p = Peer::new(server());
    let id = req(&mut p, "tools/call", json!({"name": "fail"}))["taskId"].clone();
    let r = get(&mut p, &id);
    assert_eq!(r["status"], "failed");
    assert_eq!(r["error"]["code"], -32603);
    assert!(r.get("result").is_none());
}

#[test]
fn cancelling_a_running_task_ends_it_and_acks_idempotently() {
    let mut p = Peer::new(server());
    let id = req(&mut p, "tools/call", json!({"name": "slow"}))["taskId"].clone();
    let ack = req(&mut p, "tasks/cancel", json!({"taskId": id}));
    assert_eq!(ack["resultType"], "complete");
    for field in ["taskId", "status", "result", "error", "inputRequests"] {
        assert!(ack.get(field).is_none(), "{ack}");
    }
    at(&mut p, 5_000);
    let r = get(&mut p, &id);
    assert_eq!(r["status"], "cancelled", "the outcome due later is dropped");
    assert!(r.get("result").is_none());
    let again = req(&mut p, "tasks/cancel", json!({"taskId": id}));
    assert_eq!(again["resultType"], "complete");
    let unknown = req(&mut p, "tasks/cancel", json!({"taskId": "nope"}));
    assert_eq!(unknown["error"]["code"], -32602);
}

#[test]
fn input_inside_a_task_goes_through_tasks_get_and_tasks_update() {
    let mut p = Peer::new(server());
    let id = req(&mut p, "tools/call", json!({"name": "ask"}))["taskId"].clone();
    let r = get(&mut p, &id);
    assert_eq!(r["status"], "input_required");
    assert_eq!(r["inputRequests"]["who"]["method"], "elicitation/create");
    assert!(r.get("requestState").is_none());
    // Keys not outstanding are ignored; the ack is empty.
    let ack = req(
        &mut p,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"other": {"action": "accept"}}}),
    );
    assert_eq!(ack["resultType"], "complete");
    assert!(ack.get("status").is_none());
    assert_eq!(get(&mut p, &id)["status"], "input_required");
    let bad = req(
        &mut p,
        "tasks/update",
        json!({"taskId": id, "inputResponses": 7}),
    );
    assert_eq!(bad["error"]["code"], -32602);
    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    req(
        &mut p,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"who": answer}}),
    );
    let r = get(&mut p, &id);
    assert_eq!(r["status"], "completed");
    assert_eq!(r["result"]["content"][0]["text"], "hello Ada");
}

#[test]
fn partial_answers_keep_the_task_waiting_for_the_rest() {
    let mut p = Peer::new(server());
    let id = req(&mut p, "tools/call", json!({"name": "two"}))["taskId"].clone();
    let r = get(&mut p, &id);
    assert_eq!(r["inputRequests"].as_object().unwrap().len(), 2);
    let a = json!({"action": "accept", "content": {"name": "x"}});
    req(
        &mut p,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"a": a}}),
    );
    let r = get(&mut p, &id);
    assert_eq!(r["status"], "input_required");
    let keys: Vec<&String> = r["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["b"]);
    let b = json!({"action": "accept", "content": {"name": "y"}});
    req(
        &mut p,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"b": b}}),
    );
    let r = get(&mut p, &id);
    assert_eq!(r["result"]["content"][0]["text"], "x+y");
}

#[test]
fn a_task_that_needs_an_input_the_client_cannot_give_fails() {
    let mut p = Peer::new(server());
    let mut params = json!({"name": "ask"});
    params["_meta"] = meta(json!({"extensions": {TASKS_EXTENSION: {}}}));
    let created = p.call(json!(1), "tools/call", params);
    let id = created["result"]["taskId"].clone();
    let mut params = json!({"taskId": id});
    params["_meta"] = meta(json!({"extensions": {TASKS_EXTENSION: {}}}));
    let r = p.call(json!(2), "tasks/get", params);
    assert_eq!(r["result"]["status"], "failed");
    assert_eq!(r["result"]["error"]["code"], -32021);
}

#[test]
fn a_required_task_is_refused_to_clients_that_cannot_take_one() {
    let mut p = Peer::new(server());
    let r = p.call(
        json!(1),
        "tools/call",
        json!({"name": "must", "_meta": meta(json!({}))}),
    );
    assert_eq!(r["error"]["code"], -32021);
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"]["extensions"][TASKS_EXTENSION],
        json!({})
    );
    // Declared: a task, completed with the tool's isError result (not failed).
    let id = req(&mut p, "tools/call", json!({"name": "must"}))["taskId"].clone();
    let r = get(&mut p, &id);
    assert_eq!(r["status"], "completed");
    assert_eq!(r["result"]["isError"], true);
    // A legacy `task` param on a tool that never runs as a task is ignored.
    let r = req(
        &mut p,
        "tools/call",
        json!({"name": "plain", "task": {"ttl": 1000}}),
    );
    assert_eq!(r["resultType"], "complete");
    assert!(r.get("taskId").is_none());

    let mut p = Peer::new(server());
    p.initialize("2025-11-25", json!({}));
    let list = p.call(json!(1), "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let must = tools.iter().find(|t| t["name"] == "must").unwrap();
    assert_eq!(must["execution"]["taskSupport"], "required");
    let r = p.call(json!(2), "tools/call", json!({"name": "must"}));
    assert_eq!(r["error"]["code"], -32601);
    let r = p.call(json!(3), "tools/call", json!({"name": "must", "task": {}}));
    let id = r["result"]["task"]["taskId"].clone();
    let r = p.call(json!(4), "tasks/get", json!({"taskId": id}));
    assert_eq!(
        r["result"]["status"], "failed",
        "2025: isError fails the task"
    );
}

/// 2025-06-18 has no tasks: a session that negotiated it is offered none (no `tasks`
/// capability), a call's `task` member is ignored and `tasks/*` are unknown methods (the
/// call got a `CreateTaskResult`, which is not a 2025-06-18 `CallToolResult`).
#[test]
fn a_2025_06_18_session_has_no_tasks() {
    let mut p = Peer::new(server());
    let init = p.initialize("2025-06-18", json!({}));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert!(
        init["result"]["capabilities"].get("tasks").is_none(),
        "{init}"
    );
    let r = p.call(json!(1), "tools/call", json!({"name": "plain", "task": {}}));
    assert!(r["result"].get("task").is_none(), "{r}");
    assert!(r["result"]["content"].is_array(), "{r}");
    let r = p.call(json!(2), "tools/call", json!({"name": "must", "task": {}}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    for method in ["tasks/list", "tasks/get", "tasks/result", "tasks/cancel"] {
        let r = p.call(json!(3), method, json!({"taskId": "x"}));
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }
    // 2025-11-25 has them.
    let mut p = Peer::new(server());
    let init = p.initialize("2025-11-25", json!({}));
    assert!(
        init["result"]["capabilities"]["tasks"].is_object(),
        "{init}"
    );
}

/// A 2025-06-18 tool listing says nothing of tasks: `execution` came with 2025-11-25 (the
/// 2025-06-18 schema's `Tool` has `_meta`, `annotations`, `description`, `inputSchema`,
/// `name`, `outputSchema` and `title`), and a `required` tool, which cannot run there
/// (`-32601`), is not listed. 2025-11-25 and 2026-07-28 list it.
#[test]
fn a_2025_06_18_tool_listing_has_no_task_support() {
    const TOOL_2025_06_18: [&str; 7] = [
        "_meta",
        "annotations",
        "description",
        "inputSchema",
        "name",
        "outputSchema",
        "title",
    ];
    let mut p = Peer::new(server());
    p.initialize("2025-06-18", json!({}));
    let list = p.call(json!(1), "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    assert!(!tools.iter().any(|t| t["name"] == "must"), "{list}");
    assert!(tools.iter().any(|t| t["name"] == "plain"), "{list}");
    for tool in tools {
        for key in tool.as_object().unwrap().keys() {
            assert!(TOOL_2025_06_18.contains(&key.as_str()), "{key}: {tool}");
        }
    }
    let listed = |p: &mut Peer| {
        let list = p.call(json!(2), "tools/list", json!({}));
        (list["result"]["tools"].as_array().unwrap().iter())
            .find(|t| t["name"] == "must")
            .map(|t| t["execution"]["taskSupport"].clone())
    };
    let mut p = Peer::new(server());
    p.initialize("2025-11-25", json!({}));
    assert_eq!(listed(&mut p), Some(json!("required")));
    let mut p = Peer::new(server());
    let list = req(&mut p, "tools/list", json!({}));
    let must = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "must");
    assert_eq!(must.unwrap()["execution"]["taskSupport"], "required");
}

/// Pages of a 2025-06-18 listing are counted over the tools it shows: with a page of 2,
/// every tool but the task-only ones is listed once, and the last page has no cursor.
#[test]
fn a_2025_06_18_listing_pages_over_the_tools_it_shows() {
    let mut config = server_config();
    config.page_size = Some(2);
    let mut p = Peer::new(Server::new(config));
    p.initialize("2025-06-18", json!({}));
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    for round in 0.. {
        assert!(round < 20, "no end: {seen:?}");
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let list = p.call(json!(round), "tools/list", params);
        for t in list["result"]["tools"].as_array().unwrap() {
            seen.push(t["name"].as_str().unwrap().to_owned());
        }
        cursor = list["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    let config = server_config();
    let expected: Vec<&str> = (config.tools.iter())
        .filter(|t| !t.task_required)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(seen, expected);
    assert!(expected.len() > 2 && expected.len() < config.tools.len());
}

#[test]
fn mrtr_rounds_come_before_the_task_they_lead_to() {
    let mut p = Peer::new(server());
    let round1 = req(&mut p, "tools/call", json!({"name": "mrtr"}));
    assert_eq!(round1["resultType"], "input_required");
    assert!(round1.get("taskId").is_none());
    let answer = json!({"action": "accept", "content": {"name": "Alice"}});
    let round2 = req(
        &mut p,
        "tools/call",
        json!({"name": "mrtr", "inputResponses": {"user_name": answer},
               "requestState": round1["requestState"]}),
    );
    assert_eq!(round2["resultType"], "task", "{round2}");
    assert!(round2.get("requestState").is_none() && round2.get("inputRequests").is_none());
    let id = round2["taskId"].clone();
    assert_eq!(get(&mut p, &id)["status"], "working");
    at(&mut p, 500);
    let r = get(&mut p, &id);
    assert_eq!(r["result"]["content"][0]["text"], "task for Alice");
}

#[test]
fn tasks_expire_after_their_ttl() {
    let mut p = Peer::new(server());
    let id = req(&mut p, "tools/call", json!({"name": "slow"}))["taskId"].clone();
    at(&mut p, crate::server::tasks::TTL_MS - 1);
    assert_eq!(get(&mut p, &id)["status"], "completed");
    at(&mut p, crate::server::tasks::TTL_MS);
    assert_eq!(get(&mut p, &id)["error"]["code"], -32602);
}

#[test]
fn removed_methods_and_undeclared_requests_are_refused() {
    let mut p = Peer::new(server());
    for method in ["tasks/result", "tasks/list"] {
        assert_eq!(
            req(&mut p, method, json!({"taskId": "x"}))["error"]["code"],
            -32601
        );
    }
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let r = p.call(
            json!(1),
            method,
            json!({"taskId": "x", "_meta": meta(json!({}))}),
        );
        assert_eq!(r["error"]["code"], -32021, "{method}");
    }
}

#[test]
fn seeded_ids_are_unguessable_and_times_are_real() {
    let mut p = Peer::new(server());
    p.server.seed_tasks([7; 32], 1_764_633_600_000);
    at(&mut p, 1_500);
    let a = req(&mut p, "tools/call", json!({"name": "slow"}));
    let b = req(&mut p, "tools/call", json!({"name": "slow"}));
    let id = a["taskId"].as_str().unwrap();
    assert_eq!(id.len(), 32, "{id}");
    assert!(id.bytes().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a["taskId"], b["taskId"]);
    assert_eq!(a["createdAt"], "2025-12-02T00:00:01.500Z");
    let mut other = Peer::new(server());
    other.server.seed_tasks([8; 32], 0);
    let c = req(&mut other, "tools/call", json!({"name": "slow"}));
    assert_ne!(c["taskId"], a["taskId"], "another seed, other ids");
    // Unseeded: sequential, fixed time.
    let mut plain = Peer::new(server());
    let d = req(&mut plain, "tools/call", json!({"name": "slow"}));
    assert_eq!(d["taskId"], "task-1");
    assert_eq!(d["createdAt"], crate::server::tasks::TIMESTAMP);
}

#[test]
fn another_principal_can_neither_see_nor_touch_a_task() {
    let mut p = Peer::new(server());
    p.server.set_principal(Some("alice".into()));
    let id = req(&mut p, "tools/call", json!({"name": "ask"}))["taskId"].clone();
    p.server.set_principal(Some("mallory".into()));
    let answer = json!({"who": {"action": "accept", "content": {"name": "M"}}});
    for (method, params) in [
        ("tasks/get", json!({"taskId": id})),
        (
            "tasks/update",
            json!({"taskId": id, "inputResponses": answer}),
        ),
        ("tasks/cancel", json!({"taskId": id})),
    ] {
        let r = req(&mut p, method, params);
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
    }
    p.server.set_principal(None);
    assert_eq!(get(&mut p, &id)["error"]["code"], -32602, "nor can nobody");
    p.server.set_principal(Some("alice".into()));
    let r = get(&mut p, &id);
    assert_eq!(r["status"], "input_required", "untouched: {r}");
}

#[test]
fn legacy_sessions_see_and_list_only_their_own_tasks() {
    let mut p = Peer::new(server());
    p.initialize("2025-11-25", json!({}));
    let mut ids = Vec::new();
    for n in 0..60 {
        let r = p.call(json!(n), "tools/call", json!({"name": "slow", "task": {}}));
        ids.push(r["result"]["task"]["taskId"].clone());
    }
    let page = p.call(json!(100), "tasks/list", json!({}));
    let tasks = page["result"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), crate::server::tasks::LIST_PAGE);
    assert_eq!(tasks[0]["taskId"], ids[0]);
    let cursor = page["result"]["nextCursor"].clone();
    let rest = p.call(json!(101), "tasks/list", json!({"cursor": cursor}));
    let rest_tasks = rest["result"]["tasks"].as_array().unwrap();
    assert_eq!(rest_tasks.len(), 10);
    assert_eq!(rest_tasks[9]["taskId"], ids[59]);
    assert!(rest["result"].get("nextCursor").is_none());
    let bad = p.call(json!(102), "tasks/list", json!({"cursor": "zzz"}));
    assert_eq!(bad["error"]["code"], -32602);

    // Another legacy session (as the HTTP endpoint swaps one in per Mcp-Session-Id).
    let mut first = LegacyState::default();
    p.server.swap_legacy(&mut first);
    p.initialize("2025-11-25", json!({}));
    let page = p.call(json!(1), "tasks/list", json!({}));
    assert_eq!(page["result"]["tasks"], json!([]));
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let r = p.call(json!(2), method, json!({"taskId": ids[0]}));
        assert_eq!(r["error"]["code"], -32602, "{method}");
    }
    // Nor does a 2026 request reach a 2025 task.
    assert_eq!(get(&mut p, &ids[0])["error"]["code"], -32602);
    // Back to the first session: its tasks are there.
    p.server.swap_legacy(&mut first);
    // Its tasks/result is held until the outcome is due (2 s), then answered, and the
    // session hears of the new status.
    let held = p.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result",
        "params": {"taskId": ids[0]}}));
    assert!(held.is_empty(), "{held:?}");
    assert_eq!(p.server.waiting_results(), 1);
    assert_eq!(
        p.server.poll_timeout(),
        Some(p.now + Duration::from_secs(2))
    );
    p.server.handle_timeout(p.now + Duration::from_millis(1999));
    assert!(p.raw(b"").is_empty());
    p.server.handle_timeout(p.now + Duration::from_secs(2));
    let out = p.raw(b"");
    assert_eq!(out[0]["id"], 3);
    assert_eq!(
        out[0]["result"]["content"][0]["text"], "slow done",
        "{out:?}"
    );
    // Every task of the session fell due at once: each status is told, once.
    assert_eq!(out.len(), 61);
    assert!(out[1..].iter().all(
        |m| m["method"] == "notifications/tasks/status" && m["params"]["status"] == "completed"
    ));
    assert_eq!(out[1]["params"]["taskId"], ids[0]);
    assert_eq!(out[60]["params"]["taskId"], ids[59]);
    p.server.handle_timeout(p.now + Duration::from_secs(3));
    assert!(p.raw(b"").is_empty());
    assert_eq!(p.server.waiting_results(), 0);
}

#[test]
fn a_2025_task_asks_for_input_on_its_tasks_result() {
    let mut p = Peer::new(server());
    p.initialize("2025-11-25", json!({"elicitation": {}}));
    let r = p.call(json!(1), "tools/call", json!({"name": "ask", "task": {}}));
    let id = r["result"]["task"]["taskId"].clone();
    let r = p.call(json!(2), "tasks/get", json!({"taskId": id}));
    assert_eq!(r["result"]["status"], "input_required");
    // tasks/result: the elicitation goes out, tagged with the task; no answer yet.
    let sent = p.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result",
        "params": {"taskId": id}}));
    assert_eq!(sent.len(), 1, "{sent:?}");
    let ask = &sent[0];
    assert_eq!(ask["method"], "elicitation/create");
    let related = crate::client::RELATED_TASK_KEY;
    assert_eq!(ask["params"]["_meta"][related]["taskId"], id);
    // A second tasks/result meanwhile is held until the task ends.
    assert!(
        p.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/result",
        "params": {"taskId": id}}))
            .is_empty()
    );
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result":
        {"action": "accept", "content": {"name": "Ada"}}});
    let out = p.send(answer);
    assert_eq!(out.len(), 3, "{out:?}");
    assert_eq!(out[0]["id"], 3);
    assert_eq!(out[0]["result"]["content"][0]["text"], "hello Ada");
    assert_eq!(out[0]["result"]["_meta"][related]["taskId"], id);
    assert_eq!(out[1]["id"], 4);
    assert_eq!(out[1]["result"], out[0]["result"]);
    assert_eq!(out[2]["method"], "notifications/tasks/status");
    assert_eq!(out[2]["params"]["status"], "completed");
    let r = p.call(json!(5), "tasks/get", json!({"taskId": id}));
    assert_eq!(r["result"]["status"], "completed");
    let r = p.call(json!(6), "tasks/result", json!({"taskId": id}));
    assert_eq!(r["result"]["content"][0]["text"], "hello Ada");

    // Cancelled while its tasks/result waits: the elicitation is called off, the
    // tasks/result answered at once, and the task stays cancelled.
    let r = p.call(json!(7), "tools/call", json!({"name": "ask", "task": {}}));
    let id = r["result"]["task"]["taskId"].clone();
    let sent = p.send(json!({"jsonrpc": "2.0", "id": 8, "method": "tasks/result",
        "params": {"taskId": id}}));
    let ask_id = sent[0]["id"].clone();
    let out = p.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/cancel",
        "params": {"taskId": id}}));
    assert_eq!(out.len(), 4, "{out:?}");
    assert_eq!(out[0]["result"]["status"], "cancelled");
    assert_eq!(out[1]["method"], "notifications/cancelled");
    assert_eq!(out[1]["params"]["requestId"], ask_id);
    assert_eq!(out[2]["id"], 8);
    assert_eq!(out[2]["error"]["code"], -32602);
    assert_eq!(out[3]["method"], "notifications/tasks/status");
    assert_eq!(out[3]["params"]["status"], "cancelled");
    let out = p.send(json!({"jsonrpc": "2.0", "id": ask_id, "result":
        {"action": "accept", "content": {"name": "Bo"}}}));
    assert!(out.is_empty(), "{out:?}");
    let r = p.call(json!(10), "tasks/get", json!({"taskId": id}));
    assert_eq!(r["result"]["status"], "cancelled");
}

#[test]
fn each_requestor_and_the_server_keep_a_bounded_number_of_tasks() {
    use crate::server::tasks::{MAX_STORED_TASKS, MAX_TASKS};
    let mut p = Peer::new(server());
    let start = |p: &mut Peer, who: &str| {
        p.server.set_principal(Some(who.into()));
        req(p, "tools/call", json!({"name": "slow"}))
    };
    let create = |p: &mut Peer, who: &str| start(p, who)["taskId"].clone();
    let refused = |p: &mut Peer, who: &str, limit: usize| {
        let r = start(p, who);
        let message = r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        message.contains(&format!("Too many tasks running ({limit} at most"))
    };
    let alice = create(&mut p, "alice");
    // One requestor's flood is refused past MAX_TASKS: no running task goes for it,
    // neither its own nor another's.
    let flood: Vec<Value> = (0..MAX_TASKS).map(|_| create(&mut p, "mallory")).collect();
    assert!(refused(&mut p, "mallory", MAX_TASKS));
    assert_eq!(get(&mut p, &flood[0])["status"], "working");
    p.server.set_principal(Some("alice".into()));
    assert_eq!(
        get(&mut p, &alice)["status"],
        "working",
        "dropped for another"
    );
    // Past the server's bound, new tasks are refused; nobody's running task goes.
    let mut stored = 1 + MAX_TASKS;
    let mut who = 0;
    while stored < MAX_STORED_TASKS {
        for _ in 0..MAX_TASKS.min(MAX_STORED_TASKS - stored) {
            create(&mut p, &format!("user-{who}"));
            stored += 1;
        }
        who += 1;
    }
    assert!(refused(&mut p, "newcomer", MAX_STORED_TASKS));
    p.server.set_principal(Some("alice".into()));
    assert_eq!(get(&mut p, &alice)["status"], "working");
    // An ended task makes room: alice's, once done.
    at(&mut p, 2000);
    p.server.set_principal(Some("alice".into()));
    assert_eq!(get(&mut p, &alice)["status"], "completed");
    let newcomer = create(&mut p, "newcomer");
    assert_eq!(get(&mut p, &newcomer)["status"], "working");
}

/// A requestor at its task bound whose ended task has not had its result fetched (a
/// 2025 client polls the status, then asks for the result): its next task is refused,
/// the ended one is kept, and its result is still there to fetch. Dropping it made the
/// client's call fail with "Task not found" after its tool had run.
#[test]
fn a_requestors_own_unfetched_result_is_not_dropped_for_its_next_task() {
    use crate::server::tasks::MAX_TASKS;
    let mut p = Peer::new(server());
    p.initialize("2025-11-25", json!({}));
    // The answer to a request (status notifications of the tasks that ended come after
    // it, once).
    let ask = |p: &mut Peer, id: usize, method: &str, params: Value| {
        let out = p.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        out.into_iter().next().expect("an answer")
    };
    let slow = json!({"name": "slow", "task": {}});
    let first = ask(&mut p, 1, "tools/call", slow.clone())["result"]["task"]["taskId"].clone();
    for n in 1..MAX_TASKS {
        let r = ask(&mut p, 1 + n, "tools/call", slow.clone());
        assert!(r["result"]["task"]["taskId"].is_string(), "{r}");
    }
    // Every task ends; the first one's status is seen, its result not yet fetched.
    at(&mut p, 3000);
    let r = ask(&mut p, 500, "tasks/get", json!({"taskId": first}));
    assert_eq!(r["result"]["status"], "completed", "{r}");
    let r = ask(&mut p, 501, "tools/call", slow.clone());
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let r = ask(&mut p, 502, "tasks/result", json!({"taskId": first}));
    assert_eq!(r["result"]["content"][0]["text"], "slow done", "{r}");
    // Fetched, it may go: the next task takes its place.
    let r = ask(&mut p, 503, "tools/call", slow);
    assert!(r["result"]["task"]["taskId"].is_string(), "{r}");
    let r = ask(&mut p, 504, "tasks/get", json!({"taskId": first}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

/// A server with one task tool, `name`, and a task budget of 20,000 bytes.
fn budgeted(name: &str, tool: impl Fn(&ToolCall<'_>) -> ToolOutcome + Send + 'static) -> Peer {
    budgeted_per_principal(name, tool, 20_000)
}

/// [`budgeted`], each principal's tasks keeping at most `share` bytes of it.
fn budgeted_per_principal(
    name: &str,
    tool: impl Fn(&ToolCall<'_>) -> ToolOutcome + Send + 'static,
    share: usize,
) -> Peer {
    let no_args = json!({"type": "object"});
    let mut config = ServerConfig::new(Implementation::new("t", "0"))
        .with_tool(Tool::new(name, "", no_args, tool).as_task(0));
    config.limits.max_task_bytes = 20_000;
    config.limits.max_task_bytes_per_principal = share;
    Peer::new(Server::new(config))
}

/// Asserts that `reply` refuses a task for the budget of [`budgeted`].
fn refused_for_bytes(reply: &Value) {
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Too much task data held (20000 bytes"),
        "{reply}"
    );
}

/// What tasks keep is bounded in bytes over all tasks: what clients sent (2 MB tasks had
/// taken the example server to 4 GB for 2 GB sent) and what their handlers gave (a tool
/// may return more than it was sent: see the next test). Past `max_task_bytes` ended
/// tasks make room, and with only running ones left a new task is refused.
#[test]
fn the_bytes_tasks_keep_are_bounded() {
    let after = |outcome| ToolOutcome::after(Duration::from_secs(2), outcome);
    let sent = "x".repeat(5000);
    let cases = [(
        budgeted("slow", move |_: &ToolCall<'_>| {
            after(ToolOutcome::text("done"))
        }),
        json!({"name": "slow", "arguments": {"text": sent}}),
    )];
    for (mut p, call) in cases {
        let mut ids = Vec::new();
        for _ in 0..2 {
            let created = req(&mut p, "tools/call", call.clone());
            assert_eq!(created["resultType"], "task");
            ids.push(created["taskId"].clone());
        }
        refused_for_bytes(&req(&mut p, "tools/call", call.clone()));
        // Once they ended and their results were fetched, they make room.
        at(&mut p, 2000);
        for id in &ids {
            assert_eq!(get(&mut p, id)["status"], "completed");
        }
        assert_eq!(req(&mut p, "tools/call", call)["resultType"], "task");
    }
}

/// A tool may give back more than it was sent, and the bounds were checked on what was
/// sent: an outcome past what they leave is kept as an error naming its size, never
/// past them (outcomes were counted after the fact: each principal held half again its
/// share, and the server's bound was passed by as much as a tool returned).
#[test]
fn an_outcome_past_the_task_byte_bound_is_kept_as_an_error() {
    let given = "y".repeat(12_000);
    let mut p = budgeted("bloat", move |_: &ToolCall<'_>| {
        ToolOutcome::after(Duration::from_secs(2), ToolOutcome::text(&given))
    });
    let first = req(&mut p, "tools/call", json!({"name": "bloat"}))["taskId"].clone();
    let second = req(&mut p, "tools/call", json!({"name": "bloat"}))["taskId"].clone();
    at(&mut p, 2000);
    let done = get(&mut p, &first);
    assert_eq!(
        done["result"]["content"][0]["text"].as_str().map(str::len),
        Some(12_000)
    );
    let failed = get(&mut p, &second);
    assert_eq!(failed["status"], "failed", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Too much task data held: the task's outcome takes"),
        "{failed}"
    );
}

/// A [`budgeted`] server whose task tool `slow` ends with "done" 2 s after it starts,
/// and a call of it sending 5,000 bytes (two fit the budget with their outcomes, not
/// three).
fn done_in_two_seconds() -> (Peer, Value) {
    let p = budgeted("slow", |_: &ToolCall<'_>| {
        ToolOutcome::after(Duration::from_secs(2), ToolOutcome::text("done"))
    });
    let sent = "x".repeat(5000);
    (p, json!({"name": "slow", "arguments": {"text": sent}}))
}

/// Room under `max_task_bytes` is never made from another's ended task whose result
/// its owner has not fetched: the newcomer is refused until it has been.
#[test]
fn an_unfetched_result_is_not_dropped_for_anothers_bytes() {
    let (mut p, call) = done_in_two_seconds();
    let start = |p: &mut Peer, who: &str| {
        p.server.set_principal(Some(who.into()));
        req(p, "tools/call", call.clone())
    };
    let alice = start(&mut p, "alice")["taskId"].clone();
    at(&mut p, 2000);
    assert_eq!(start(&mut p, "mallory")["resultType"], "task");
    refused_for_bytes(&start(&mut p, "mallory"));
    p.server.set_principal(Some("alice".into()));
    let done = get(&mut p, &alice);
    assert_eq!(done["result"]["content"][0]["text"], "done", "{done}");
    assert_eq!(start(&mut p, "mallory")["resultType"], "task");
}

/// A result told on a listen (`notifications/tasks`, with the result inlined) reached
/// its owner: the task may then go for another's, as after a `tasks/get`.
#[test]
fn a_result_told_on_a_listen_counts_as_fetched() {
    let (mut p, call) = done_in_two_seconds();
    p.server.set_principal(Some("alice".into()));
    let alice = req(&mut p, "tools/call", call.clone())["taskId"].clone();
    listen_tasks(&mut p, "A", json!([alice]));
    p.server.handle_timeout(p.now + Duration::from_secs(2));
    let told = p.raw(b"");
    assert_eq!(
        told[0]["params"]["result"]["content"][0]["text"], "done",
        "{told:?}"
    );
    at(&mut p, 2000);
    p.server.set_principal(Some("mallory".into()));
    for _ in 0..2 {
        assert_eq!(
            req(&mut p, "tools/call", call.clone())["resultType"],
            "task"
        );
    }
}

/// Every unauthenticated 2026 client is one requestor: a task of its is not "its own"
/// to any of them. One that starts tasks never drops another's unfetched result.
#[test]
fn an_anonymous_clients_unfetched_result_is_not_dropped_for_another_anonymous_one() {
    let (mut p, call) = done_in_two_seconds();
    let first = req(&mut p, "tools/call", call.clone())["taskId"].clone();
    at(&mut p, 2000);
    assert_eq!(
        req(&mut p, "tools/call", call.clone())["resultType"],
        "task"
    );
    refused_for_bytes(&req(&mut p, "tools/call", call.clone()));
    let done = get(&mut p, &first);
    assert_eq!(done["result"]["content"][0]["text"], "done", "{done}");
    assert_eq!(req(&mut p, "tools/call", call)["resultType"], "task");
}

/// A [`budgeted`] server whose task tool `ask` asks for `who` (then ends 2 s later), and
/// the id of a task of it, waiting for that input.
fn asking_within_budget() -> (Peer, Value) {
    asking_within_share(20_000)
}

/// [`asking_within_budget`], each principal keeping at most `share` bytes.
fn asking_within_share(share: usize) -> (Peer, Value) {
    let ask = |call: &ToolCall<'_>| match answered(call, "who") {
        Some(_) => ToolOutcome::after(Duration::from_secs(2), ToolOutcome::text("ok")),
        None => ToolOutcome::NeedInput(vec![("who".into(), name_form())]),
    };
    let mut p = budgeted_per_principal("ask", ask, share);
    let id = req(&mut p, "tools/call", json!({"name": "ask"}))["taskId"].clone();
    assert_eq!(get(&mut p, &id)["status"], "input_required");
    (p, id)
}

/// Answers a client gives in later rounds (`tasks/update`) count against
/// `max_task_bytes` as its first-round ones do.
#[test]
fn the_answers_tasks_keep_count_against_the_bound() {
    let (mut p, id) = asking_within_budget();
    let answer = json!({"action": "accept", "content": {"name": "z".repeat(15_000)}});
    let ack = req(
        &mut p,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"who": answer}}),
    );
    assert_eq!(ack["resultType"], "complete", "{ack}");
    assert_eq!(get(&mut p, &id)["status"], "working");
    refused_for_bytes(&req(&mut p, "tools/call", json!({"name": "ask"})));
}

/// An answer that would take what tasks keep past `max_task_bytes` is refused, and the
/// request stays outstanding: answers were taken whatever their size (one task could
/// hold an 8 MiB answer, and one such in each later round, past any bound).
#[test]
fn an_answer_past_the_bound_is_refused_and_stays_asked() {
    let (mut p, id) = asking_within_budget();
    let update = |name: String| {
        let answer = json!({"action": "accept", "content": {"name": name}});
        json!({"taskId": id, "inputResponses": {"who": answer}})
    };
    refused_for_bytes(&req(&mut p, "tasks/update", update("z".repeat(40_000))));
    assert_eq!(get(&mut p, &id)["status"], "input_required");
    let ack = req(&mut p, "tasks/update", update("zoe".into()));
    assert_eq!(ack["resultType"], "complete", "{ack}");
    assert_eq!(get(&mut p, &id)["status"], "working");
}

/// An answer counts against its principal's share of `max_task_bytes` as a new task
/// does: refused past it, the request staying outstanding.
#[test]
fn an_answer_past_the_principals_share_is_refused() {
    let (mut p, id) = asking_within_share(8_000);
    let update = |name: String| {
        let answer = json!({"action": "accept", "content": {"name": name}});
        json!({"taskId": id, "inputResponses": {"who": answer}})
    };
    let r = req(&mut p, "tasks/update", update("z".repeat(10_000)));
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("8000 bytes at most per principal"), "{r}");
    assert_eq!(get(&mut p, &id)["status"], "input_required");
    let ack = req(&mut p, "tasks/update", update("zoe".into()));
    assert_eq!(ack["resultType"], "complete", "{ack}");
}

/// A task keeps its client's capabilities for its later rounds: no more of them than a
/// legacy session keeps.
#[test]
fn a_task_refuses_to_keep_oversized_capabilities() {
    let mut p = Peer::new(server());
    let big = "x".repeat(crate::server::MAX_CLIENT_CAPABILITIES_BYTES);
    let params = json!({"name": "slow", "_meta": meta(json!({
        "extensions": {TASKS_EXTENSION: {}}, "experimental": {"x": big}}))});
    let r = p.call(json!(1), "tools/call", params);
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("a task keeps"), "{message}");
    assert_eq!(
        req(&mut p, "tools/call", json!({"name": "slow"}))["resultType"],
        "task"
    );
}

/// Opens a 2026 listen `id` for `task_ids` (declaring the extension); the
/// acknowledgement's `notifications`, and the `(taskId, status)` of each task it was
/// then shown (each tagged with the listen's id).
fn listen_tasks(p: &mut Peer, id: &str, task_ids: Value) -> (Value, Vec<(Value, Value)>) {
    let out = p.send(
        json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"_meta": declared(), "notifications": {"taskIds": task_ids}}}),
    );
    assert_eq!(out[0]["method"], "notifications/subscriptions/acknowledged");
    let shown = out[1..]
        .iter()
        .map(|n| {
            assert_eq!(n["method"], "notifications/tasks", "{out:?}");
            assert_eq!(
                n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                id
            );
            (n["params"]["taskId"].clone(), n["params"]["status"].clone())
        })
        .collect();
    (out[0]["params"]["notifications"].clone(), shown)
}

#[test]
fn a_listen_naming_its_tasks_gets_each_change_as_the_detailed_task() {
    let mut p = Peer::new(server());
    p.server.set_principal(Some("alice".into()));
    let slow = req(&mut p, "tools/call", json!({"name": "slow"}))["taskId"].clone();
    let ask = req(&mut p, "tools/call", json!({"name": "ask"}))["taskId"].clone();
    p.server.set_principal(Some("bob".into()));
    let bobs = req(&mut p, "tools/call", json!({"name": "slow"}))["taskId"].clone();
    // Bob cannot listen to Alice's tasks: they are left out of his acknowledgement,
    // and he is shown only his own task as it is now.
    let (acked, shown) = listen_tasks(&mut p, "B", json!([slow, bobs, "nope"]));
    assert_eq!(acked, json!({"taskIds": [bobs]}));
    assert_eq!(shown, [(bobs.clone(), json!("working"))]);
    p.server.set_principal(Some("alice".into()));
    let (acked, shown) = listen_tasks(&mut p, "A", json!([slow, ask]));
    assert_eq!(acked, json!({"taskIds": [slow, ask]}));
    assert_eq!(
        shown,
        [
            (slow.clone(), json!("working")),
            (ask.clone(), json!("input_required"))
        ]
    );
    // Answering `ask` completes it: told, with the result inlined.
    let out = p.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/update",
        "params": {"_meta": declared(), "taskId": ask,
                   "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}}}}));
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0]["id"], 5);
    let n = &out[1];
    assert_eq!(n["method"], "notifications/tasks");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "A"
    );
    assert_eq!(n["params"]["taskId"], ask);
    assert_eq!(n["params"]["status"], "completed");
    assert_eq!(n["params"]["result"]["content"][0]["text"], "hello Ada");
    // Time makes both slow tasks due: each listen hears of its own principal's only.
    assert_eq!(
        p.server.poll_timeout(),
        Some(p.now + Duration::from_secs(2))
    );
    p.server.handle_timeout(p.now + Duration::from_secs(2));
    let out = p.raw(b"");
    assert_eq!(out.len(), 2, "{out:?}");
    let to = |sub: &str| {
        out.iter()
            .find(|m| m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == sub)
            .unwrap()["params"]["taskId"]
            .clone()
    };
    assert_eq!(to("A"), slow);
    assert_eq!(to("B"), bobs);
    assert_eq!(p.server.poll_timeout(), None);
}

/// A task that ended (or came to need input) while no listen named it is not lost to a
/// client that opens one afterwards to wait for it: the listen is shown it as it is,
/// result inlined, after the acknowledgement, and it may then be forgotten as any
/// delivered task.
#[test]
fn a_listen_opened_after_its_task_ended_is_shown_the_outcome() {
    let mut p = Peer::new(server());
    let slow = req(&mut p, "tools/call", json!({"name": "slow"}))["taskId"].clone();
    let ask = req(&mut p, "tools/call", json!({"name": "ask"}))["taskId"].clone();
    p.server.handle_timeout(p.now + Duration::from_secs(2));
    assert!(p.raw(b"").is_empty(), "nobody listens yet");
    let out = p.send(
        json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
        "params": {"_meta": declared(), "notifications": {"taskIds": [ask, slow]}}}),
    );
    assert_eq!(out.len(), 3, "{out:?}");
    assert_eq!(out[0]["method"], "notifications/subscriptions/acknowledged");
    let by_id = |id: &Value| {
        (out[1..].iter())
            .find(|n| n["params"]["taskId"] == *id)
            .unwrap_or_else(|| panic!("{id} not shown: {out:?}"))["params"]
            .clone()
    };
    let done = by_id(&slow);
    assert_eq!(done["status"], "completed");
    assert!(done["result"]["content"].is_array(), "{done}");
    assert_eq!(done["_meta"]["io.modelcontextprotocol/subscriptionId"], "L");
    let asking = by_id(&ask);
    assert_eq!(asking["status"], "input_required");
    assert!(asking["inputRequests"].get("who").is_some(), "{asking}");
    // Nothing is told twice: the next input has nothing new for the listen.
    assert!(p.raw(b"").is_empty());
}

#[test]
fn a_held_tasks_result_ends_with_its_task_or_its_request() {
    let mut p = Peer::new(server());
    p.initialize("2025-11-25", json!({}));
    let create = |p: &mut Peer| {
        let r = p.call(json!(0), "tools/call", json!({"name": "slow", "task": {}}));
        r["result"]["task"]["taskId"].clone()
    };
    let result = |p: &mut Peer, id: i64, task: &Value| {
        p.send(json!({"jsonrpc": "2.0", "id": id, "method": "tasks/result",
            "params": {"taskId": task}}))
    };
    // Cancelled by its requestor: dropped, never answered.
    let a = create(&mut p);
    assert!(result(&mut p, 1, &a).is_empty());
    assert!(
        p.send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1}})
        )
        .is_empty()
    );
    assert_eq!(p.server.waiting_results(), 0);
    // The task cancelled: the held request gets the error a tasks/result of a
    // cancelled task gets, after the cancel's own answer.
    let b = create(&mut p);
    assert!(result(&mut p, 2, &b).is_empty());
    let out = p.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel",
        "params": {"taskId": b}}));
    assert_eq!(out[0]["id"], 3);
    assert_eq!(out[1]["id"], 2);
    assert_eq!(out[1]["error"]["code"], -32602);
    assert_eq!(out[2]["method"], "notifications/tasks/status");
    // A task that never answers: held until it expires, then "not found".
    let mut p = Peer::new(Server::new(
        ServerConfig::new(Implementation::new("t", "0")).with_tool(
            Tool::new(
                "never",
                "",
                json!({"type": "object"}),
                |_: &ToolCall<'_>| ToolOutcome::NoAnswer,
            )
            .as_task(0),
        ),
    ));
    p.initialize("2025-11-25", json!({}));
    let r = p.call(json!(0), "tools/call", json!({"name": "never", "task": {}}));
    let c = r["result"]["task"]["taskId"].clone();
    assert!(result(&mut p, 4, &c).is_empty());
    let ttl = Duration::from_millis(crate::server::tasks::TTL_MS);
    assert_eq!(p.server.poll_timeout(), Some(p.now + ttl));
    p.server.handle_timeout(p.now + ttl);
    let out = p.raw(b"");
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["id"], 4);
    assert_eq!(out[0]["error"]["code"], -32602);
    // The end of input drops what is still held.
    let d = {
        let r = p.call(json!(0), "tools/call", json!({"name": "never", "task": {}}));
        r["result"]["task"]["taskId"].clone()
    };
    assert!(result(&mut p, 5, &d).is_empty());
    p.server.handle_eof(p.now);
    assert_eq!(p.server.waiting_results(), 0);
}

/// A tool whose input comes before its task (`Tool::input_before_task`) has its handler's
/// last round run only when the task it leads to can be made: other clients' running
/// tasks filling the server's bound refuse the call before that round, not after it
/// (its effect done, its outcome dropped with "try again later", and a retry running it
/// again). As for a task made at once, a refused task never runs its handler.
#[test]
fn a_task_that_cannot_be_made_does_not_run_the_round_leading_to_it() {
    use crate::server::tasks::{MAX_STORED_TASKS, MAX_TASKS};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let config = server_config().with_tool(
        Tool::new(
            "deploy",
            "",
            json!({"type": "object"}),
            move |call: &ToolCall<'_>| match answered(call, "ok") {
                Some(_) => {
                    counted.fetch_add(1, Ordering::SeqCst);
                    ToolOutcome::text("deployed")
                }
                None => ToolOutcome::NeedInput(vec![("ok".into(), name_form())]),
            },
        )
        .as_task(0)
        .input_before_task(),
    );
    let mut p = Peer::new(Server::new(config));
    p.server.set_principal(Some("alice".into()));
    let round1 = req(&mut p, "tools/call", json!({"name": "deploy"}));
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    // Others fill the server with running tasks.
    let mut stored = 0;
    let mut who = 0;
    while stored < MAX_STORED_TASKS {
        p.server.set_principal(Some(format!("user-{who}")));
        for _ in 0..MAX_TASKS.min(MAX_STORED_TASKS - stored) {
            let r = req(&mut p, "tools/call", json!({"name": "slow"}));
            assert_eq!(r["resultType"], "task", "{r}");
            stored += 1;
        }
        who += 1;
    }
    p.server.set_principal(Some("alice".into()));
    let answer = json!({"action": "accept", "content": {"name": "yes"}});
    let retry = json!({"name": "deploy", "inputResponses": {"ok": answer},
        "requestState": round1["requestState"]});
    let refused = req(&mut p, "tools/call", retry.clone());
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Too many tasks running")),
        "{refused}"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the round leading to a task that was refused ran (its outcome is lost)"
    );
    // Room again: the oldest of the others' tasks ends and its owner fetches it.
    at(&mut p, 2000);
    let (oldest, owner) = (p.server.tasks.walk())
        .map(|t| (t.id().to_owned(), t.principal().map(str::to_owned)))
        .next()
        .unwrap();
    p.server.set_principal(owner);
    assert_eq!(get(&mut p, &json!(oldest))["status"], "completed");
    p.server.set_principal(Some("alice".into()));
    let made = req(&mut p, "tools/call", retry);
    assert_eq!(made["resultType"], "task", "{made}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A full task store (`MAX_STORED_TASKS` tasks of a 2025 session and fifteen 2026
/// principals): each task request (`tasks/get`, `tasks/list`, a `tools/call` making a
/// task and room for it, a 2026 listen naming tasks) and each timer event
/// (`poll_timeout`, `handle_timeout`, the expiry of a parked `tasks/result`) looks at a
/// few tasks, not the whole store. A client creating, polling or listing in a loop made
/// the server walk every task dozens of times per round (2,128,230 tasks for 60 rounds).
#[test]
fn task_requests_and_timers_do_not_walk_every_task() {
    use crate::server::tasks::{MAX_STORED_TASKS, MAX_TASKS, looked_at};
    let mut p = Peer::new(server());
    p.initialize("2025-11-25", json!({}));
    // The answer to a request, past the notifications that may come with it.
    let answer = |p: &mut Peer, method: &str, params: Value| -> Value {
        let out = p.send(json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}));
        let reply = out.into_iter().find(|m| m["id"] == 7).expect("an answer");
        reply.get("result").cloned().unwrap_or(reply)
    };
    let modern = |p: &mut Peer, method: &str, mut params: Value| -> Value {
        params["_meta"] = declared();
        answer(p, method, params)
    };
    let legacy = 40;
    for _ in 0..legacy {
        let r = answer(&mut p, "tools/call", json!({"name": "slow", "task": {}}));
        assert!(r["task"]["taskId"].is_string(), "{r}");
    }
    let principals = (MAX_STORED_TASKS - legacy) / MAX_TASKS;
    let mut ids: Vec<Vec<Value>> = Vec::new();
    for who in 0..principals {
        p.server.set_principal(Some(format!("user-{who}")));
        let mine = (0..MAX_TASKS)
            .map(|_| modern(&mut p, "tools/call", json!({"name": "slow"}))["taskId"].clone())
            .collect();
        ids.push(mine);
    }
    // Every task ends at 2 s.
    at(&mut p, 2000);
    p.server.handle_timeout(p.now);
    p.raw(b"");
    let before = looked_at();
    let rounds = 60;
    for n in 0..rounds {
        let who = n % principals;
        p.server.set_principal(Some(format!("user-{who}")));
        // The result fetched: it may go for this principal's next task.
        let id = ids[who].remove(0);
        assert_eq!(
            modern(&mut p, "tasks/get", json!({"taskId": id}))["status"],
            "completed"
        );
        let made = modern(&mut p, "tools/call", json!({"name": "slow"}));
        assert_eq!(made["status"], "working", "{made}");
        ids[who].push(made["taskId"].clone());
        assert_eq!(
            modern(&mut p, "tasks/get", json!({"taskId": id}))["error"]["code"],
            -32602
        );
        let (_, shown) = listen_tasks(&mut p, "L", json!([ids[who][0], "nope"]));
        assert_eq!(shown, vec![(ids[who][0].clone(), json!("completed"))]);
        p.send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": "L"}}),
        );
        p.server.set_principal(None);
        let page = answer(&mut p, "tasks/list", json!({}));
        assert_eq!(page["tasks"].as_array().map(Vec::len), Some(legacy));
        assert!(p.server.poll_timeout().is_some());
        assert_eq!(p.server.expiry_of_parked(["nope"].into_iter()), Some(p.now));
        p.server.handle_timeout(p.now);
        p.raw(b"");
    }
    // Each round finds a few tasks by id and lists a page of 40.
    let looked = looked_at() - before;
    assert!(
        looked <= 100 * rounds,
        "{looked} tasks looked at in a store of {MAX_STORED_TASKS} for {rounds} rounds"
    );
}

/// Many 2025 `tasks/result` requests held on a running task: each later input and each
/// `poll_timeout` looks at a few of them, not all (every input answered the held ones
/// whose task ended by looking at each, and `poll_timeout` looked at each for its
/// task's expiry). They are still answered, in the order they came, once the task ends.
#[test]
fn held_task_results_are_not_walked_at_every_input() {
    use crate::server::tasks::looked_at;
    let mut p = Peer::new(server());
    p.initialize("2025-11-25", json!({}));
    let r = p.call(json!(0), "tools/call", json!({"name": "slow", "task": {}}));
    let task = r["result"]["task"]["taskId"].clone();
    let held = 1000;
    for n in 0..held {
        let out = p.send(
            json!({"jsonrpc": "2.0", "id": 10 + n, "method": "tasks/result",
            "params": {"taskId": task}}),
        );
        assert!(out.is_empty(), "{out:?}");
    }
    assert_eq!(p.server.waiting_results(), held);
    let before = looked_at();
    let rounds = 50;
    for n in 0..rounds {
        let r = p.call(json!(5000 + n), "ping", json!({}));
        assert_eq!(r["result"], json!({}));
        assert_eq!(
            p.server.poll_timeout(),
            Some(p.now + Duration::from_secs(2))
        );
    }
    let looked = looked_at() - before;
    assert!(
        looked <= 10 * rounds,
        "{looked} tasks looked at for {rounds} inputs with {held} held tasks/result"
    );
    at(&mut p, 2000);
    p.server.handle_timeout(p.now);
    let out = p.raw(b"");
    assert_eq!(
        out.len(),
        held + 1,
        "each held request answered, and one status"
    );
    for (n, m) in out[..held].iter().enumerate() {
        assert_eq!(m["id"], 10 + n, "in the order they came");
        assert_eq!(m["result"]["content"][0]["text"], "slow done");
    }
    assert_eq!(out[held]["method"], "notifications/tasks/status");
    assert_eq!(p.server.waiting_results(), 0);
}
