//! Deferred tool work: a handler hands its work off and the call is answered when a
//! completer is, in both eras, through input rounds and tasks; cancellation reaches the
//! work; a completer dropped, a `Deferred` without one, and the bound.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{Peer, meta};
use crate::client::TASKS_EXTENSION;
use crate::model::Implementation;
use crate::server::{
    Completer, InputRequestSpec, Server, ServerConfig, Tool, ToolCall, ToolOutcome,
};

/// The completers the `later` tool handed out, in order.
pub(super) type Outbox = Arc<Mutex<Vec<Completer>>>;

/// `later` (defers; the test completes it), `ask_later` (defers its first round, whose
/// outcome asks for a name; the second round answers with it), `lazy` (returns
/// `Deferred` without a completer), and `later_task` (as `later`, run as a task).
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
        .with_tool(Tool::new(
            "ask_later",
            "",
            no_args.clone(),
            move |call: &ToolCall<'_>| match call.inputs.get("name") {
                Some(answer) => ToolOutcome::text(format!("hello {}", answer["content"]["name"])),
                None => {
                    b.lock().unwrap().push(call.defer());
                    ToolOutcome::Deferred
                }
            },
        ))
        .with_tool(Tool::new(
            "lazy",
            "",
            no_args.clone(),
            |_: &ToolCall<'_>| ToolOutcome::Deferred,
        ))
        .with_tool(
            Tool::new("later_task", "", no_args, move |call: &ToolCall<'_>| {
                c.lock().unwrap().push(call.defer());
                ToolOutcome::Deferred
            })
            .as_task(0),
        );
    Server::new(config)
}

pub(super) fn name_form() -> ToolOutcome {
    ToolOutcome::NeedInput(vec![(
        "name".to_owned(),
        InputRequestSpec::form(
            "Name?",
            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        ),
    )])
}

pub(super) fn take(outbox: &Outbox) -> Completer {
    outbox.lock().unwrap().remove(0)
}

/// What the machine wrote after its deferred work was handled.
pub(super) fn deferred_output(peer: &mut Peer) -> Vec<Value> {
    peer.server.handle_deferred(peer.now);
    peer.raw(b"")
}

#[test]
fn a_legacy_call_is_answered_when_its_work_completes_and_others_are_served_meanwhile() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    peer.initialize("2025-11-25", json!({}));
    let call = json!({"name": "later", "arguments": {}});
    assert!(
        peer.send(json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":call}))
            .is_empty()
    );
    // The machine is not held: another request is answered at once.
    let ping = peer.call(json!(8), "ping", json!({}));
    assert_eq!(ping["id"], 8);
    assert!(
        deferred_output(&mut peer).is_empty(),
        "nothing completed yet"
    );
    take(&outbox).complete(ToolOutcome::text("done"));
    assert!(peer.server.has_deferred_done());
    let out = deferred_output(&mut peer);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["id"], 7);
    assert_eq!(out[0]["result"]["content"][0]["text"], "done");
    assert!(!peer.server.has_deferred_done());
}

/// Completed work is due at once: a driver that only hands the machine its deadlines
/// ([`Server::poll_timeout`], [`Server::handle_timeout`]) goes on with it too.
#[test]
fn completed_work_is_due_at_once_and_handled_as_time_passing() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    peer.initialize("2025-11-25", json!({}));
    let call = json!({"name": "later", "arguments": {}});
    let request = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":call});
    assert!(peer.send(request).is_empty());
    assert_eq!(
        peer.server.poll_timeout(),
        None,
        "nothing is due while work runs"
    );
    take(&outbox).complete(ToolOutcome::text("done"));
    let due = peer.server.poll_timeout().expect("completed work is due");
    assert!(due <= peer.now);
    peer.server.handle_timeout(peer.now);
    let out = peer.raw(b"");
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["result"]["content"][0]["text"], "done");
    assert_eq!(peer.server.poll_timeout(), None);
}

#[test]
fn a_modern_call_is_answered_when_its_work_completes() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    let params = json!({"name": "later", "_meta": meta(json!({}))});
    assert!(
        peer.send(json!({"jsonrpc":"2.0","id":"m1","method":"tools/call","params":params}))
            .is_empty()
    );
    take(&outbox).complete(ToolOutcome::Error(crate::jsonrpc::ErrorObject::new(
        -32001,
        "upstream down",
    )));
    let out = deferred_output(&mut peer);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["id"], "m1");
    assert_eq!(out[0]["error"]["message"], "upstream down");
}

/// A completed outcome that asks for input goes on as a handler's would: the legacy
/// client is asked, and the next round answers; in 2026 the call gets `input_required`,
/// whose retry runs the handler again.
#[test]
fn a_completed_outcome_may_ask_for_input_in_both_eras() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    peer.initialize("2025-11-25", json!({"elicitation": {}}));
    let call = json!({"name": "ask_later"});
    assert!(
        peer.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":call}))
            .is_empty()
    );
    take(&outbox).complete(name_form());
    let out = deferred_output(&mut peer);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["method"], "elicitation/create");
    let asked = out[0]["id"].clone();
    let answer = json!({"action": "accept", "content": {"name": "ada"}});
    let out = peer.send(json!({"jsonrpc":"2.0","id":asked,"result":answer}));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["result"]["content"][0]["text"], "hello \"ada\"");

    let mut peer = Peer::new(server(&outbox));
    let caps = json!({"elicitation": {"form": {}}});
    let params = json!({"name": "ask_later", "_meta": meta(caps.clone())});
    assert!(
        peer.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":params}))
            .is_empty()
    );
    take(&outbox).complete(name_form());
    let out = deferred_output(&mut peer);
    assert_eq!(out.len(), 1, "{out:?}");
    let result = &out[0]["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    let state = result["requestState"].clone();
    let retry = json!({"name": "ask_later", "_meta": meta(caps), "requestState": state,
        "inputResponses": {"name": {"action": "accept", "content": {"name": "bob"}}}});
    let reply = peer.call(json!(3), "tools/call", retry);
    assert_eq!(
        reply["result"]["content"][0]["text"], "hello \"bob\"",
        "{reply}"
    );
}

/// A call cancelled while its work runs: the completer says so, and the outcome that
/// comes anyway is dropped.
#[test]
fn cancellation_reaches_the_work_and_its_outcome_is_dropped() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    peer.initialize("2025-11-25", json!({}));
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"later"}}));
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
    assert!(peer.send(cancel).is_empty());
    let completer = take(&outbox);
    assert!(completer.is_cancelled());
    completer.complete(ToolOutcome::text("too late"));
    assert!(deferred_output(&mut peer).is_empty());

    let mut peer = Peer::new(server(&outbox));
    let params = json!({"name": "later", "_meta": meta(json!({}))});
    peer.send(json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":params}));
    let completer = take(&outbox);
    assert!(!completer.is_cancelled());
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}});
    peer.send(cancel);
    assert!(completer.is_cancelled());
    completer.complete(ToolOutcome::text("too late"));
    assert!(deferred_output(&mut peer).is_empty());
}

/// No call waits for work that is gone or was never handed off.
#[test]
fn a_dropped_completer_or_a_deferral_without_one_fails_the_call() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    peer.initialize("2025-11-25", json!({}));
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"later"}}));
    drop(take(&outbox));
    let out = deferred_output(&mut peer);
    assert_eq!(out[0]["id"], 1);
    assert_eq!(out[0]["error"]["code"], -32603);
    let text = out[0]["error"]["message"].as_str().unwrap();
    assert!(text.contains("ended without an outcome"), "{text}");

    let reply = peer.call(json!(2), "tools/call", json!({"name": "lazy"}));
    assert_eq!(reply["error"]["code"], -32603);
    let text = reply["error"]["message"].as_str().unwrap();
    assert!(text.contains("without taking a completer"), "{text}");
}

#[test]
fn deferred_calls_are_bounded() {
    let outbox = Outbox::default();
    let mut config_server = server(&outbox);
    config_server.config.limits.max_deferred_calls = 2;
    let mut peer = Peer::new(config_server);
    let params = json!({"name": "later", "_meta": meta(json!({}))});
    for id in 1..=2 {
        let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params});
        assert!(peer.send(call).is_empty());
    }
    let reply = peer.call(json!(3), "tools/call", params.clone());
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert!(outbox.lock().unwrap()[2].is_cancelled());
    // One completes: room for one more.
    take(&outbox).complete(ToolOutcome::text("one"));
    assert_eq!(deferred_output(&mut peer).len(), 1);
    let call = json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":params});
    assert!(peer.send(call).is_empty());
}

/// The bytes parked calls hold are bounded too, and a call that completes gives its
/// bytes back: after it, a call as large fits again, and after the refusal too.
#[test]
fn deferred_bytes_are_bounded_and_given_back() {
    let outbox = Outbox::default();
    let mut config_server = server(&outbox);
    config_server.config.limits.max_deferred_bytes = 25_000;
    let mut peer = Peer::new(config_server);
    let params = json!({
        "name": "later",
        "arguments": {"blob": "x".repeat(10_000)},
        "_meta": meta(json!({})),
    });
    let send = |peer: &mut Peer, id: u32| {
        let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params});
        peer.send(call)
    };
    for id in 1..=2 {
        assert!(send(&mut peer, id).is_empty());
    }
    let reply = send(&mut peer, 3);
    assert_eq!(reply.len(), 1, "{reply:?}");
    assert!(
        reply[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_deferred_bytes")),
        "{reply:?}"
    );
    assert!(outbox.lock().unwrap().remove(2).is_cancelled());
    for round in 0..3 {
        take(&outbox).complete(ToolOutcome::text("one"));
        assert_eq!(deferred_output(&mut peer).len(), 1, "round {round}");
        assert!(send(&mut peer, 10 + round).is_empty(), "round {round}");
    }
    assert!(!send(&mut peer, 20).is_empty(), "still bounded");
}

/// A task tool that defers: the task is made at once and shows `working` until the work
/// completes, then its result; a cancelled task tells its work.
#[test]
fn a_task_shows_working_until_its_work_completes() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    let caps = json!({"extensions": {TASKS_EXTENSION: {}}});
    let params = json!({"name": "later_task", "_meta": meta(caps.clone())});
    let created = peer.call(json!(1), "tools/call", params.clone());
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let get = json!({"taskId": task, "_meta": meta(caps.clone())});
    let status = |peer: &mut Peer| {
        let r = peer.call(json!(2), "tasks/get", get.clone());
        r["result"].clone()
    };
    assert_eq!(status(&mut peer)["status"], "working");
    take(&outbox).complete(ToolOutcome::text("task done"));
    deferred_output(&mut peer);
    let shown = status(&mut peer);
    assert_eq!(shown["status"], "completed", "{shown}");
    assert_eq!(shown["result"]["content"][0]["text"], "task done");

    let created = peer.call(json!(3), "tools/call", params);
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let cancel = json!({"taskId": task, "_meta": meta(caps)});
    peer.call(json!(4), "tasks/cancel", cancel);
    assert!(take(&outbox).is_cancelled());
}

/// A task whose work is deferred and that expires (the last task gone): its work is
/// told.
#[test]
fn an_expired_task_cancels_its_work() {
    let outbox = Outbox::default();
    let mut peer = Peer::new(server(&outbox));
    let caps = json!({"extensions": {TASKS_EXTENSION: {}}});
    let params = json!({"name": "later_task", "_meta": meta(caps.clone())});
    let created = peer.call(json!(1), "tools/call", params);
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let completer = take(&outbox);
    let ttl = std::time::Duration::from_millis(crate::server::tasks::TTL_MS);
    peer.now = peer.now + ttl + std::time::Duration::from_secs(1);
    let get = json!({"taskId": task, "_meta": meta(caps)});
    let reply = peer.call(json!(2), "tasks/get", get);
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(completer.is_cancelled());
}
