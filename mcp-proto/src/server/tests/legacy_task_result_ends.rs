//! A 2025 `tasks/result` whose task asked for input (the input requests went out on it)
//! is a call in flight like any other: it is answered when its task ends, however the
//! task ends (its next round, a `tasks/cancel`, its expiry), and the task never shows
//! `input_required` while it needs nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::Peer;
use crate::model::Implementation;
use crate::server::tasks::TTL_MS;
use crate::server::{InputRequestSpec, Server, ServerConfig, Tool, ToolCall, ToolOutcome};

fn name_form() -> InputRequestSpec {
    InputRequestSpec::form(
        "Name?",
        json!({"type": "object", "properties": {"name": {"type": "string"}}}),
    )
}

/// One input, then a greeting.
fn ask(call: &ToolCall<'_>) -> ToolOutcome {
    match call.inputs.get("who") {
        Some(_) => ToolOutcome::text("hello"),
        None => ToolOutcome::NeedInput(vec![("who".into(), name_form())]),
    }
}

/// One input, then a round that never answers (a tool waiting on something that never
/// comes).
fn ask_then_wait(call: &ToolCall<'_>) -> ToolOutcome {
    match call.inputs.get("who") {
        Some(_) => ToolOutcome::NoAnswer,
        None => ToolOutcome::NeedInput(vec![("who".into(), name_form())]),
    }
}

fn server() -> Server {
    let no_args = json!({"type": "object"});
    let config = ServerConfig::new(Implementation::new("t", "0"))
        .with_tool(Tool::new("ask", "", no_args.clone(), ask).as_task(0))
        .with_tool(Tool::new("ask_then_wait", "", no_args, ask_then_wait).as_task(0));
    Server::new(config)
}

/// A server whose `ask` counts the rounds its handler ran.
fn counting_server(rounds: Arc<AtomicUsize>) -> Server {
    let counted = move |call: &ToolCall<'_>| {
        rounds.fetch_add(1, Ordering::SeqCst);
        ask(call)
    };
    let config = ServerConfig::new(Implementation::new("t", "0"))
        .with_tool(Tool::new("ask", "", json!({"type": "object"}), counted).as_task(0));
    Server::new(config)
}

/// A 2025-11-25 session with a task of `tool` whose `tasks/result` (id 3) carries the
/// task's elicitation: the task id and the elicitation's id.
fn task_asking_on_its_result(tool: &str) -> (Peer, Value, Value) {
    let mut p = Peer::new(server());
    p.initialize("2025-11-25", json!({"elicitation": {}}));
    let r = p.call(json!(1), "tools/call", json!({"name": tool, "task": {}}));
    let id = r["result"]["task"]["taskId"].clone();
    let sent = p.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result",
        "params": {"taskId": id}}));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["method"], "elicitation/create");
    let ask = sent[0]["id"].clone();
    (p, id, ask)
}

fn answer_to(out: &[Value], id: i64) -> Option<&Value> {
    out.iter()
        .find(|m| m["id"] == id && m.get("method").is_none())
}

#[test]
fn cancelling_a_2025_task_answers_its_tasks_result_waiting_on_input() {
    let (mut p, id, ask) = task_asking_on_its_result("ask");
    let out = p.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/cancel",
        "params": {"taskId": id}}));
    assert_eq!(answer_to(&out, 9).unwrap()["result"]["status"], "cancelled");
    // The task is terminal: its tasks/result is answered now, not when (if ever) the
    // client answers an elicitation nobody needs any more.
    let held = answer_to(&out, 3);
    assert!(
        held.is_some_and(|m| m["error"]["code"] == -32602),
        "the tasks/result of a cancelled task is still open: {out:?}"
    );
    // And the client is told its elicitation is moot.
    assert!(
        out.iter()
            .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == ask),
        "the cancelled task's elicitation is still outstanding: {out:?}"
    );
}

#[test]
fn a_2025_task_expiring_while_its_tasks_result_waits_on_input_answers_it() {
    let (mut p, _id, _ask) = task_asking_on_its_result("ask");
    let ttl = Duration::from_millis(TTL_MS);
    // The held request has a deadline: its task's expiry.
    assert_eq!(
        p.server.poll_timeout(),
        Some(p.now + ttl),
        "nothing wakes the machine for the held tasks/result"
    );
    p.server.handle_timeout(p.now + ttl);
    let out = p.raw(b"");
    let held = answer_to(&out, 3);
    assert!(
        held.is_some_and(|m| m["error"]["code"] == -32602),
        "the tasks/result of an expired task is never answered: {out:?}"
    );
}

#[test]
fn a_2025_task_whose_next_round_never_answers_shows_working() {
    let (mut p, id, ask) = task_asking_on_its_result("ask_then_wait");
    let out = p.send(json!({"jsonrpc": "2.0", "id": ask, "result":
        {"action": "accept", "content": {"name": "Ada"}}}));
    assert!(out.iter().all(|m| m["id"] != 3), "{out:?}");
    // The answer is in and the tool needs nothing more: the task works on.
    let r = p.call(json!(4), "tasks/get", json!({"taskId": id}));
    assert_eq!(
        r["result"]["status"], "working",
        "the task still asks for input it no longer needs: {r}"
    );
}

#[test]
fn a_2025_task_whose_next_round_never_answers_keeps_its_tasks_result_held() {
    let (mut p, id, ask) = task_asking_on_its_result("ask_then_wait");
    let out = p.send(json!({"jsonrpc": "2.0", "id": ask, "result":
        {"action": "accept", "content": {"name": "Ada"}}}));
    assert!(out.iter().all(|m| m["id"] != 3), "{out:?}");
    assert_eq!(
        p.server.waiting_results(),
        1,
        "the tasks/result is neither parked nor held: it was dropped"
    );
    // Ending the task answers it.
    let out = p.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/cancel",
        "params": {"taskId": id}}));
    assert!(
        answer_to(&out, 3).is_some_and(|m| m["error"]["code"] == -32602),
        "the tasks/result of the cancelled task was never answered: {out:?}"
    );
}

#[test]
fn a_cancelled_2025_task_does_not_run_its_next_round() {
    let rounds = Arc::new(AtomicUsize::new(0));
    let mut p = Peer::new(counting_server(rounds.clone()));
    p.initialize("2025-11-25", json!({"elicitation": {}}));
    let r = p.call(json!(1), "tools/call", json!({"name": "ask", "task": {}}));
    let id = r["result"]["task"]["taskId"].clone();
    let sent = p.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result",
        "params": {"taskId": id}}));
    let ask = sent[0]["id"].clone();
    assert_eq!(rounds.load(Ordering::SeqCst), 1);
    p.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/cancel",
        "params": {"taskId": id}}));
    // A late answer to the cancelled task's elicitation starts no work.
    p.send(json!({"jsonrpc": "2.0", "id": ask, "result":
        {"action": "accept", "content": {"name": "Ada"}}}));
    assert_eq!(
        rounds.load(Ordering::SeqCst),
        1,
        "the tool ran another round for a task already cancelled"
    );
}
