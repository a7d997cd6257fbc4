//! Deferred tool work against clients that end, cancel and race it: 2026 answers
//! whole, end of input and a dropped server telling the work, 2025 tasks whose rounds
//! defer (asking on a held `tasks/result`, `working` while the work runs, cancelled
//! with the task, not with a dropped wait), a refused task telling its work, and a
//! second completer of the same work.

use serde_json::{Value, json};

use super::deferred::{Outbox, deferred_output, name_form, take};
use super::{Peer, meta};
use crate::client::TASKS_EXTENSION;
use crate::model::Implementation;
use crate::server::{Server, ServerConfig, Tool, ToolCall, ToolOutcome};

/// `later` defers every round; `task_later` (a task tool) defers its first round, and
/// answers its second; `task_ask_then_later` (a task tool) asks for a name at once, then
/// defers the round that has it.
fn server(outbox: &Outbox) -> Server {
    let no_args = json!({"type": "object"});
    let (a, b, c) = (outbox.clone(), outbox.clone(), outbox.clone());
    let config = ServerConfig::new(Implementation::new("t", "0"))
        .with_tool(Tool::new(
            "later",
            "",
            no_args.clone(),
            move |call: &ToolCall<'_>| {
                a.lock().unwrap().push(call.defer());
                ToolOutcome::Deferred
            },
        ))
        .with_tool(
            Tool::new(
                "task_later",
                "",
                no_args.clone(),
                move |call: &ToolCall<'_>| match call.inputs.get("name") {
                    Some(answer) => {
                        ToolOutcome::text(format!("hello {}", answer["content"]["name"]))
                    }
                    None => {
                        b.lock().unwrap().push(call.defer());
                        ToolOutcome::Deferred
                    }
                },
            )
            .as_task(0),
        )
        .with_tool(
            Tool::new(
                "task_ask_then_later",
                "",
                no_args,
                move |call: &ToolCall<'_>| {
                    if call.inputs.contains_key("name") {
                        c.lock().unwrap().push(call.defer());
                        ToolOutcome::Deferred
                    } else {
                        name_form()
                    }
                },
            )
            .as_task(0),
        );
    Server::new(config)
}

/// A 2025-11-25 session (declaring elicitation) that made `tool` a task (request 1): its
/// id.
fn legacy_task(peer: &mut Peer, tool: &str) -> Value {
    peer.initialize("2025-11-25", json!({"elicitation": {}}));
    let call = json!({"name": tool, "task": {}});
    peer.call(json!(1), "tools/call", call)["result"]["task"]["taskId"].clone()
}

/// A 2025-11-25 session whose `task_ask_then_later` task asked for a name on its
/// `tasks/result` (request 2), was answered, and deferred the round that has it: the
/// task's id, what answering said, and the round's completer.
fn answered_round(
    peer: &mut Peer,
    outbox: &Outbox,
) -> (Value, Vec<Value>, crate::server::Completer) {
    let id = legacy_task(peer, "task_ask_then_later");
    let sent = peer.send(json!({"jsonrpc":"2.0","id":2,"method":"tasks/result",
        "params":{"taskId": id}}));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["method"], "elicitation/create");
    let answer = json!({"jsonrpc":"2.0","id":sent[0]["id"],"result":
        {"action":"accept","content":{"name":"Ada"}}});
    let told = peer.send(answer);
    (id, told, take(outbox))
}

/// A 2026 result MUST carry `resultType` and SHOULD carry the server's info in
/// `_meta`: a call answered by its completer carries both, as one answered at once.
#[test]
fn a_modern_deferred_result_carries_result_type_and_server_info() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    let params = json!({"name": "later", "_meta": meta(json!({}))});
    assert!(
        peer.send(json!({"jsonrpc":"2.0","id":"m1","method":"tools/call","params":params}))
            .is_empty()
    );
    take(&outbox).complete(ToolOutcome::text("done"));
    let out = deferred_output(&mut peer);
    assert_eq!(out.len(), 1, "{out:?}");
    let result = &out[0]["result"];
    assert_eq!(result["content"][0]["text"], "done");
    assert_eq!(
        result["resultType"], "complete",
        "missing resultType: {result}"
    );
    assert!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"].is_object(),
        "missing serverInfo: {result}"
    );
}

/// End of input closes the stream every call came on: a 2026 deferred call's work is
/// told (`Completer::is_cancelled`), and nothing it completes with is written after
/// `Transmit::Close`.
#[test]
fn end_of_input_tells_modern_work_and_nothing_follows_close() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    let params = json!({"name": "later", "_meta": meta(json!({}))});
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params}));
    let completer = take(&outbox);
    peer.server.handle_eof(peer.now);
    let mut out = Vec::new();
    let mut closed = false;
    while let Some(t) = peer.server.poll_transmit(peer.now, &mut out) {
        closed |= matches!(t, crate::client::Transmit::Close { .. });
    }
    assert!(closed && peer.server.is_closed());
    let cancelled = completer.is_cancelled();
    completer.complete(ToolOutcome::text("after eof"));
    peer.server.handle_deferred(peer.now);
    let after_close = peer
        .server
        .poll_message()
        .map(|m| String::from_utf8(m).unwrap());
    assert!(
        cancelled && after_close.is_none() && !peer.server.has_deferred_calls(),
        "is_cancelled after eof: {cancelled}; written after Close: {after_close:?}; \
         has_deferred_calls: {}",
        peer.server.has_deferred_calls()
    );
}

/// A legacy call parked on deferred work is abandoned at end of input: its work is
/// told and it no longer counts as waiting (nor holds a `max_deferred_calls` place).
#[test]
fn end_of_input_forgets_legacy_deferred_calls() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    peer.initialize("2025-11-25", json!({}));
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"later"}}));
    let completer = take(&outbox);
    peer.server.handle_eof(peer.now);
    assert!(completer.is_cancelled(), "legacy work is told");
    assert!(
        !peer.server.has_deferred_calls(),
        "an abandoned call still counts as waiting for deferred work"
    );
    drop(completer);
}

/// Dropping the server (the serve loop returned) tells 2026 and task work, as legacy
/// work: no call can be answered any more. Completing afterwards is harmless.
#[test]
fn a_dropped_server_tells_modern_and_task_work() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    let params = json!({"name": "later", "_meta": meta(json!({}))});
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params}));
    let caps = json!({"extensions": {TASKS_EXTENSION: {}}});
    let params = json!({"name": "task_later", "_meta": meta(caps)});
    peer.call(json!(2), "tools/call", params);
    let (modern, task) = (take(&outbox), take(&outbox));
    drop(peer);
    assert!(
        modern.is_cancelled() && task.is_cancelled(),
        "after the server is gone: modern is_cancelled {}, task is_cancelled {}",
        modern.is_cancelled(),
        task.is_cancelled()
    );
    // Completing into the orphaned queue must not panic.
    modern.complete(ToolOutcome::text("x"));
    task.complete(ToolOutcome::text("y"));
}

/// A 2025 task whose input round (run for its `tasks/result`) defers: `tasks/cancel`
/// ends the task and tells its work.
#[test]
fn a_cancelled_legacy_task_tells_its_deferred_input_round() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    let (id, told, completer) = answered_round(&mut peer, &outbox);
    assert!(
        told.iter()
            .all(|m| m["method"] == "notifications/tasks/status"),
        "the next round defers: {told:?}"
    );
    let out = peer.send(json!({"jsonrpc":"2.0","id":3,"method":"tasks/cancel",
        "params":{"taskId": id}}));
    assert_eq!(out[0]["result"]["status"], "cancelled", "{out:?}");
    assert!(
        completer.is_cancelled(),
        "the task was cancelled, but its deferred work was not told"
    );
}

/// A 2025 task whose first round defers: the client opens `tasks/result` while it is
/// `working`. The work completes asking for input: the task turns `input_required`
/// and the held `tasks/result` is where the `elicitation/create` goes out (tasks.md
/// 3.7), as when the handler returns the same outcome at once.
#[test]
fn a_legacy_task_whose_work_needs_input_asks_on_the_held_tasks_result() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    let id = legacy_task(&mut peer, "task_later");
    assert!(
        peer.send(json!({"jsonrpc":"2.0","id":2,"method":"tasks/result",
            "params":{"taskId": id}}))
            .is_empty(),
        "held while working"
    );
    take(&outbox).complete(name_form());
    let out = deferred_output(&mut peer);
    let status = peer.call(json!(3), "tasks/get", json!({"taskId": id}));
    assert_eq!(status["result"]["status"], "input_required", "{status}");
    assert!(
        out.iter().any(|m| m["method"] == "elicitation/create"),
        "the task needs input but its held tasks/result never asks: {out:?}"
    );
}

/// A 2025 task: once its `tasks/result` answered the input round and that round
/// deferred, the task shows `working` (tasks.md 3.7: once it has what it needs it
/// SHOULD leave `input_required`), and its owner is told so.
#[test]
fn a_legacy_task_shows_working_while_its_answered_round_is_deferred() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    let (id, told, _completer) = answered_round(&mut peer, &outbox);
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["method"], "notifications/tasks/status");
    assert_eq!(told[0]["params"]["status"], "working", "{told:?}");
    let status = peer.call(json!(3), "tasks/get", json!({"taskId": id}));
    assert_eq!(status["result"]["status"], "working", "{status}");
}

/// `before_task` gathers its input before the task exists and defers its first round.
fn before_task_server(outbox: &Outbox) -> Server {
    let kept = outbox.clone();
    let config = ServerConfig::new(Implementation::new("t", "0")).with_tool(
        Tool::new(
            "before_task",
            "",
            json!({"type": "object"}),
            move |call: &ToolCall<'_>| {
                kept.lock().unwrap().push(call.defer());
                ToolOutcome::Deferred
            },
        )
        .input_before_task(),
    );
    Server::new(config)
}

/// An `input_before_task` tool defers; the task cannot be made (here: the client's
/// capabilities are more than a task keeps, `-32602`). The call is answered with the
/// error and the work is told, as for a call refused at the deferred-call bound.
#[test]
fn a_refused_task_tells_the_work_its_tool_deferred() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(before_task_server(&outbox));
    let pad = "x".repeat(70 * 1024);
    let caps = json!({"extensions": {TASKS_EXTENSION: {}}, "experimental": {"pad": pad}});
    let params = json!({"name": "before_task", "_meta": meta(caps)});
    let reply = peer.call(json!(1), "tools/call", params);
    assert!(reply["error"].is_object(), "{}", &reply.to_string()[..200]);
    let completer = take(&outbox);
    assert!(
        completer.is_cancelled(),
        "refused with {} but the completer is not cancelled",
        reply["error"]["code"]
    );
}

/// A 2025 task's input round deferred; the client drops its `tasks/result` (a
/// `notifications/cancelled` for that request: tasks.md 3.6, the client MAY drop the
/// wait at any time, and it is not `tasks/cancel`). The task and its work go on: the
/// work is not told, its outcome ends the task, and a new `tasks/result` gets it.
#[test]
fn dropping_a_tasks_result_wait_does_not_end_the_tasks_work() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    let (id, told, completer) = answered_round(&mut peer, &outbox);
    assert!(
        told.iter()
            .all(|m| m["method"] == "notifications/tasks/status"),
        "{told:?}"
    );
    let out = peer.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId":2}}));
    assert!(out.is_empty(), "{out:?}");
    assert!(!completer.is_cancelled(), "only the wait was dropped");
    completer.complete(ToolOutcome::text("the task's result"));
    let out = deferred_output(&mut peer);
    assert!(
        out.iter().all(|m| m["id"] != 2),
        "the dropped wait is not answered: {out:?}"
    );
    let status = peer.call(json!(3), "tasks/get", json!({"taskId": id}));
    assert_eq!(status["result"]["status"], "completed", "{status}");
    let result = peer.call(json!(4), "tasks/result", json!({"taskId": id}));
    assert_eq!(
        result["result"]["content"][0]["text"], "the task's result",
        "{result}"
    );
}

/// The client drops a 2025 task's `tasks/result` while the task's input requests on it
/// are still unanswered: the task still needs that input, so the next `tasks/result`
/// asks again (not a wait until the task expires).
#[test]
fn a_dropped_tasks_result_wait_leaves_its_questions_to_the_next() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    let id = legacy_task(&mut peer, "task_ask_then_later");
    let first = peer.send(json!({"jsonrpc":"2.0","id":2,"method":"tasks/result",
        "params":{"taskId": id}}));
    assert_eq!(first[0]["method"], "elicitation/create", "{first:?}");
    let out = peer.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId":2}}));
    assert!(
        out.iter().all(|m| m["method"] == "notifications/cancelled"),
        "the question is withdrawn: {out:?}"
    );
    let again = peer.send(json!({"jsonrpc":"2.0","id":3,"method":"tasks/result",
        "params":{"taskId": id}}));
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0]["method"], "elicitation/create", "{again:?}");
    assert_ne!(again[0]["id"], first[0]["id"]);
    let answer = json!({"jsonrpc":"2.0","id":again[0]["id"],"result":
        {"action":"accept","content":{"name":"Ada"}}});
    peer.send(answer);
    take(&outbox).complete(ToolOutcome::text("done"));
    let out = deferred_output(&mut peer);
    let reply = out
        .iter()
        .find(|m| m["id"] == 3)
        .expect("the second wait is answered");
    assert_eq!(reply["result"]["content"][0]["text"], "done", "{out:?}");
}

/// A handler that takes a completer only to look at it (`is_cancelled`) and drops it,
/// then takes the one it keeps: the dropped one does not fail the call (only the last
/// completer of a work dropped without an outcome does), and the kept one answers.
#[test]
fn a_second_completer_dropped_leaves_the_call_to_the_first() {
    let outbox = Outbox::default();
    let kept = outbox.clone();
    let config = ServerConfig::new(Implementation::new("t", "0")).with_tool(Tool::new(
        "peek",
        "",
        json!({"type": "object"}),
        move |call: &ToolCall<'_>| {
            let peek = call.defer();
            let _ = peek.is_cancelled();
            drop(peek);
            kept.lock().unwrap().push(call.defer());
            ToolOutcome::Deferred
        },
    ));
    let mut peer = Peer::new(Server::new(config));
    peer.initialize("2025-11-25", json!({}));
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek"}}));
    let completer = take(&outbox);
    let out = deferred_output(&mut peer);
    assert!(out.is_empty(), "failed while its completer lives: {out:?}");
    completer.complete(ToolOutcome::text("ok"));
    assert_eq!(deferred_output(&mut peer).len(), 1);
}
