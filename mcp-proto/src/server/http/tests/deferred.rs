//! Deferred tool work over HTTP with legacy sessions: the call's output reaches its own
//! stream, in its own session, though another session's call has the same request id.

use std::sync::{Arc, Mutex};

use super::streams::{call, open_session};
use super::*;
use crate::server::{Completer, InputRequestSpec};

type Outbox = Arc<Mutex<Vec<Completer>>>;

/// Sessions over a server whose `later` tool defers, its completers kept in `outbox`.
fn endpoint_with(outbox: &Outbox) -> HttpEndpoint {
    let kept = outbox.clone();
    let tool = Tool::new(
        "later",
        "",
        json!({"type": "object"}),
        move |c: &ToolCall<'_>| {
            kept.lock().unwrap().push(c.defer());
            ToolOutcome::Deferred
        },
    );
    let server = example::server_with(|c| {
        c.tools.push(tool);
    });
    HttpEndpoint::with_sessions(server, HttpEndpointConfig::default(), &[7; 32])
}

#[test]
fn a_completed_call_answers_on_its_own_sessions_stream() {
    let outbox = Outbox::default();
    let mut ep = endpoint_with(&outbox);
    let v = "2025-11-25";
    let (a, b) = (open_session(&mut ep, v), open_session(&mut ep, v));
    // The same request id in both sessions.
    let stream_a = stream(ep.handle_request(now(), &call(&a, v, 5, "later")));
    let stream_b = stream(ep.handle_request(now(), &call(&b, v, 5, "later")));
    let (first, second) = {
        let mut o = outbox.lock().unwrap();
        (o.remove(0), o.remove(0))
    };
    let drain = |ep: &mut HttpEndpoint, s: &HttpStream| {
        let mut out = Vec::new();
        ep.poll_stream(s, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    second.complete(ToolOutcome::text("for b"));
    ep.handle_deferred(now());
    let ready: Vec<StreamId> = std::iter::from_fn(|| ep.poll_ready()).collect();
    assert_eq!(ready, [stream_b.id()]);
    let text = drain(&mut ep, &stream_b);
    assert!(
        text.contains("for b") && text.contains("\"id\":5"),
        "{text}"
    );
    assert!(!drain(&mut ep, &stream_a).contains("for"));
    // Completed work is due at once: a driver that only hands the endpoint its
    // deadlines goes on with it, in its own session, as well.
    first.complete(ToolOutcome::text("for a"));
    assert!(ep.poll_timeout().is_some_and(|t| t <= now()));
    assert!(ep.handle_due(now()));
    let text = drain(&mut ep, &stream_a);
    assert!(text.contains("for a"), "{text}");
}

/// A 2026 call answered by its completer carries what every 2026 result carries
/// (`resultType`, the server's info), as when answered at once.
#[test]
fn a_modern_deferred_answer_is_a_whole_2026_result() {
    let outbox = Outbox::default();
    let mut ep = endpoint_with(&outbox);
    let request = modern(3, "tools/call", json!({"name": "later"}), Some("later"));
    let s = stream(ep.handle_request(now(), &request));
    outbox
        .lock()
        .unwrap()
        .remove(0)
        .complete(ToolOutcome::text("late"));
    assert!(ep.handle_due(now()));
    let mut out = Vec::new();
    ep.poll_stream(&s, &mut out);
    let msgs = sse_messages(&out);
    let answer = msgs.iter().find(|m| m["id"] == 3).expect("answered");
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    let meta = &answer["result"]["_meta"];
    assert!(
        meta["io.modelcontextprotocol/serverInfo"].is_object(),
        "{answer}"
    );
}

/// A 2025 task whose deferred work asks for input while its owner's `tasks/result`
/// waits (another session in the machine meanwhile): the question goes out in the
/// task's session, on that `tasks/result`'s stream, and the answer ends the task there.
#[test]
fn a_task_whose_work_asks_asks_on_its_held_tasks_result_stream() {
    let outbox = Outbox::default();
    let kept = outbox.clone();
    let tool = Tool::new(
        "later_task",
        "",
        json!({"type": "object"}),
        move |c: &ToolCall<'_>| match c.inputs.get("name") {
            Some(a) => ToolOutcome::text(format!("hello {}", a["content"]["name"])),
            None => {
                kept.lock().unwrap().push(c.defer());
                ToolOutcome::Deferred
            }
        },
    )
    .as_task(0);
    let server = example::server_with(|c| c.tools.push(tool));
    let mut ep = HttpEndpoint::with_sessions(server, HttpEndpointConfig::default(), &[7; 32]);
    let v = "2025-11-25";
    let (a, b) = (open_session(&mut ep, v), open_session(&mut ep, v));
    let in_a = |body: Value| {
        post(
            &body,
            &[("Mcp-Session-Id", &a), ("MCP-Protocol-Version", v)],
        )
    };
    let created = complete(ep.handle_request(
        now(),
        &in_a(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "later_task", "arguments": {}, "task": {}}})),
    ));
    let task = body_json(&created)["result"]["task"]["taskId"].clone();
    let wait = stream(ep.handle_request(
        now(),
        &in_a(json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
            "params": {"taskId": task}})),
    ));
    // Another session's request puts that session in the machine.
    let _ = ep.handle_request(now(), &call(&b, v, 1, "echo"));
    outbox
        .lock()
        .unwrap()
        .remove(0)
        .complete(ToolOutcome::NeedInput(vec![(
            "name".to_owned(),
            InputRequestSpec::form(
                "Name?",
                json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            ),
        )]));
    assert!(ep.handle_due(now()));
    let mut out = Vec::new();
    ep.poll_stream(&wait, &mut out);
    let asked = sse_messages(&out);
    let ask = asked
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .unwrap_or_else(|| panic!("asked on the held tasks/result: {asked:?}"));
    let answer = in_a(json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"name": "Ada"}}}));
    assert_eq!(complete(ep.handle_request(now(), &answer)).status, 202);
    let mut out = Vec::new();
    ep.poll_stream(&wait, &mut out);
    let done = sse_messages(&out);
    let reply = done
        .iter()
        .find(|m| m["id"] == 2)
        .expect("the task's end answers");
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Ada")),
        "{reply}"
    );
}
