//! The 2026-07-28 request path against what clients (and handlers) may do wrong: a task
//! asking again for a key already answered, a listen told of a task's next input round,
//! the bytes a parked call keeps (capabilities, id) counted, a tool-using sampling
//! request checked against `sampling.tools`.

use serde_json::{Value, json};

use super::{Peer, meta};
use crate::client::TASKS_EXTENSION;
use crate::model::Implementation;
use crate::server::{InputRequestSpec, Server, ServerConfig, Tool, ToolCall, ToolOutcome};

fn form() -> InputRequestSpec {
    InputRequestSpec::form("?", json!({"type": "object"}))
}

fn accepted(call: &ToolCall<'_>, key: &str) -> bool {
    call.inputs
        .get(key)
        .is_some_and(|a| a["action"] == "accept")
}

/// `nag`: a task asking `k` until it is accepted (a decline asks again, as a
/// handler re-prompting does). `steps`: a task asking `a`, then `b`, then done.
fn server() -> Server {
    let cfg = ServerConfig::new(Implementation::new("t", "0"))
        .with_tool(
            Tool::new("nag", "", json!({"type": "object"}), |c: &ToolCall<'_>| {
                if accepted(c, "k") {
                    ToolOutcome::text("ok")
                } else {
                    ToolOutcome::NeedInput(vec![("k".into(), form())])
                }
            })
            .as_task(0),
        )
        .with_tool(
            Tool::new(
                "steps",
                "",
                json!({"type": "object"}),
                |c: &ToolCall<'_>| {
                    if !accepted(c, "a") {
                        ToolOutcome::NeedInput(vec![("a".into(), form())])
                    } else if !accepted(c, "b") {
                        ToolOutcome::NeedInput(vec![("b".into(), form())])
                    } else {
                        ToolOutcome::text("done")
                    }
                },
            )
            .as_task(0),
        );
    Server::new(cfg)
}

fn declared() -> Value {
    meta(json!({"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}))
}

fn req(p: &mut Peer, id: i64, method: &str, mut params: Value) -> Vec<Value> {
    params["_meta"] = declared();
    p.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

fn result(out: &[Value], id: i64) -> Value {
    out.iter().find(|m| m["id"] == id).expect("answered")["result"].clone()
}

/// Tasks extension: "(S) MUST keep each key unique for the task's whole life. It must not
/// reuse a key once that key has been answered". A handler that asks again under the
/// same key (a re-prompt after a decline) fails its task, naming the key: a client
/// deduplicating keys would never answer it, and an answer would overwrite the first.
#[test]
fn a_task_asking_again_for_an_answered_key_fails() {
    let mut p = Peer::new(server());
    let out = req(&mut p, 1, "tools/call", json!({"name": "nag"}));
    let id = result(&out, 1)["taskId"].clone();
    let got = result(&req(&mut p, 2, "tasks/get", json!({"taskId": id})), 2);
    assert_eq!(got["status"], "input_required");
    assert!(got["inputRequests"].get("k").is_some());
    // The user declines: key `k` is answered.
    req(
        &mut p,
        3,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"k": {"action": "decline"}}}),
    );
    let got = result(&req(&mut p, 4, "tasks/get", json!({"taskId": id})), 4);
    assert_eq!(got["status"], "failed", "{got}");
    assert!(
        got.to_string().contains("asked again for input `k`"),
        "{got}"
    );
}

/// A client that relies on push (`subscriptions/listen` with `taskIds`) is told when its
/// `tasks/update` completes one input round and the handler asks the next one at once
/// (`input_required` → `working` → `input_required`, with new `inputRequests`), though the
/// status reads the same: the notification is what `tasks/get` shows then.
#[test]
fn a_listen_is_told_of_a_tasks_next_input_round() {
    let mut p = Peer::new(server());
    let out = req(&mut p, 1, "tools/call", json!({"name": "steps"}));
    let id = result(&out, 1)["taskId"].clone();
    let ack = p.send(
        json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
        "params": {"_meta": declared(), "notifications": {"taskIds": [id]}}}),
    );
    assert_eq!(ack[0]["params"]["notifications"]["taskIds"], json!([id]));
    let out = req(
        &mut p,
        2,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"a": {"action": "accept"}}}),
    );
    // What a poll would show now: the next round, key `b`.
    let polled = result(&req(&mut p, 3, "tasks/get", json!({"taskId": id})), 3);
    assert_eq!(polled["status"], "input_required");
    assert!(polled["inputRequests"].get("b").is_some(), "{polled}");
    let told: Vec<&Value> = out
        .iter()
        .filter(|m| m["method"] == "notifications/tasks")
        .collect();
    assert!(
        told.iter()
            .any(|n| n["params"]["inputRequests"].get("b").is_some()),
        "the listen never hears of the round asking `b` (got {out:?})"
    );
}

/// A server whose `later` tool defers its work (the completers are kept, never
/// completed), with `max_deferred_bytes` at 25 000 as in `deferred.rs`.
fn deferring() -> (
    Peer,
    std::sync::Arc<std::sync::Mutex<Vec<crate::server::Completer>>>,
) {
    let outbox = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = outbox.clone();
    let cfg = ServerConfig::new(Implementation::new("t", "0")).with_tool(Tool::new(
        "later",
        "",
        json!({"type": "object"}),
        move |call: &ToolCall<'_>| {
            kept.lock().unwrap().push(call.defer());
            ToolOutcome::Deferred
        },
    ));
    let mut server = Server::new(cfg);
    server.config.limits.max_deferred_bytes = 25_000;
    (Peer::new(server), outbox)
}

/// `ServerLimits::max_deferred_bytes` bounds what the calls waiting for deferred work
/// hold together: a 2026 call keeps its request's `clientCapabilities` while it waits,
/// and they count as its arguments do.
#[test]
fn a_parked_calls_capabilities_count_against_the_deferred_byte_bound() {
    let (mut p, _outbox) = deferring();
    let caps = json!({"experimental": {"blob": "x".repeat(10_000)}});
    let mut refused = false;
    for id in 1..=10 {
        let out = p.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "later", "arguments": {}, "_meta": meta(caps.clone())}}));
        refused |= out.iter().any(|m| m["error"]["code"] == -32603);
    }
    assert!(
        refused,
        "ten parked calls each holding 10 KB of capabilities, past a 25 000-byte bound: \
         none refused"
    );
}

/// The same for the request id a parked 2026 call keeps to answer under (a string id
/// may be as long as a line).
#[test]
fn a_parked_calls_request_id_counts_against_the_deferred_byte_bound() {
    let (mut p, _outbox) = deferring();
    let mut refused = false;
    for n in 0..10 {
        let id = format!("{n}{}", "i".repeat(10_000));
        let out = p.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "later", "arguments": {}, "_meta": meta(json!({}))}}));
        refused |= out.iter().any(|m| m["error"]["code"] == -32603);
    }
    assert!(
        refused,
        "ten parked calls each keeping a 10 KB id, past a 25 000-byte bound: none refused"
    );
}

/// 2026-07-28 MRTR: the server "MUST NOT include a kind of input request the client did
/// not declare in this request's clientCapabilities"; a `sampling/createMessage` with
/// `tools` (or `toolChoice`) needs `sampling.tools` (the client must refuse it
/// otherwise, which an `inputResponses` entry cannot do): `-32021` naming it.
#[test]
fn sampling_with_tools_needs_sampling_tools() {
    let cfg = ServerConfig::new(Implementation::new("t", "0")).with_tool(Tool::new(
        "agent",
        "",
        json!({"type": "object"}),
        |c: &ToolCall<'_>| {
            if c.inputs.contains_key("s") {
                return ToolOutcome::text("ok");
            }
            ToolOutcome::NeedInput(vec![(
                "s".into(),
                InputRequestSpec::Sampling(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                    "maxTokens": 64,
                    "tools": [{"name": "lookup", "inputSchema": {"type": "object"}}],
                    "toolChoice": {"mode": "required"}
                })),
            )])
        },
    ));
    let mut p = Peer::new(Server::new(cfg));
    let r = p.call(
        json!(1),
        "tools/call",
        json!({"name": "agent", "_meta": meta(json!({"sampling": {}}))}),
    );
    assert_eq!(
        r["error"]["code"], -32021,
        "a tool-using sampling request went to a client without sampling.tools: {r}"
    );
    assert!(
        r["error"]["data"]["requiredCapabilities"]["sampling"]["tools"].is_object(),
        "{r}"
    );
    let with_tools = json!({"sampling": {"tools": {}}});
    let r = p.call(
        json!(2),
        "tools/call",
        json!({"name": "agent", "_meta": meta(with_tools)}),
    );
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
}

/// A tool asking for sampling with `sample` params, answered "ok" once it has its answer.
fn sampling_server(sample: Value) -> Server {
    let cfg = ServerConfig::new(Implementation::new("t", "0")).with_tool(Tool::new(
        "agent",
        "",
        json!({"type": "object"}),
        move |c: &ToolCall<'_>| {
            if c.inputs.contains_key("s") {
                return ToolOutcome::text("ok");
            }
            ToolOutcome::NeedInput(vec![(
                "s".into(),
                InputRequestSpec::Sampling(sample.clone()),
            )])
        },
    ));
    Server::new(cfg)
}

/// From 2025-11-25 on, an `includeContext` other than `none` is for clients that declared
/// `sampling.context` (which the client machine enforces): asked of one that did not, the
/// call is refused up front (2026: `-32021` naming it; 2025-11-25: a failed result),
/// rather than sent to be refused. 2025-06-18 has no `sampling.context`: it is sent.
#[test]
fn sampling_with_context_needs_sampling_context() {
    let sample = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 64,
        "includeContext": "thisServer"
    });
    let mut p = Peer::new(sampling_server(sample.clone()));
    let r = p.call(
        json!(1),
        "tools/call",
        json!({"name": "agent", "_meta": meta(json!({"sampling": {}}))}),
    );
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert!(
        r["error"]["data"]["requiredCapabilities"]["sampling"]["context"].is_object(),
        "{r}"
    );
    let with_context = json!({"sampling": {"context": {}}});
    let r = p.call(
        json!(2),
        "tools/call",
        json!({"name": "agent", "_meta": meta(with_context)}),
    );
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");

    let mut p = Peer::new(sampling_server(sample.clone()));
    p.initialize("2025-11-25", json!({"sampling": {}}));
    let r = p.call(json!(1), "tools/call", json!({"name": "agent"}));
    assert_eq!(r["result"]["isError"], true, "{r}");

    let mut p = Peer::new(sampling_server(sample));
    p.initialize("2025-06-18", json!({"sampling": {}}));
    let r = p.call(json!(1), "tools/call", json!({"name": "agent"}));
    assert_eq!(r["method"], "sampling/createMessage", "{r}");
}

/// Tool use in sampling came with 2025-11-25: a 2025-06-18 session is never sent a
/// sampling request with `tools`, even from a client whose capabilities say
/// `sampling.tools` (a member its version does not have).
#[test]
fn sampling_with_tools_is_not_sent_at_2025_06_18() {
    let sample = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 64,
        "tools": [{"name": "lookup", "inputSchema": {"type": "object"}}]
    });
    let mut p = Peer::new(sampling_server(sample.clone()));
    p.initialize("2025-06-18", json!({"sampling": {"tools": {}}}));
    let r = p.call(json!(1), "tools/call", json!({"name": "agent"}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("sampling.tools") && text.contains("2025-11-25"),
        "{r}"
    );
    let mut p = Peer::new(sampling_server(sample));
    p.initialize("2025-11-25", json!({"sampling": {"tools": {}}}));
    let r = p.call(json!(1), "tools/call", json!({"name": "agent"}));
    assert_eq!(r["method"], "sampling/createMessage", "{r}");
}
