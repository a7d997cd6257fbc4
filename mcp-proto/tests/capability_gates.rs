//! What a client asks of a server that did not declare the utility capability behind
//! it: once the server's capabilities are known (its `initialize` result, or its
//! `server/discover` in 2026-07-28), a request for `completions`, `logging`,
//! `resources.subscribe` or (2025-11-25) `tasks.list` / `tasks.cancel` that the server
//! lacks fails locally with [`CallError::NotDeclared`] naming the capability, and
//! nothing is sent. A capability declared as `{}` is supported. The primitives (tools,
//! prompts, resources) are not gated.

use mcp_proto::client::{CallError, CallRequest, ClientConfig, LogLevel};
use mcp_proto::version::EraMode;
use serde_json::{Value, json};

mod common;

use common::{Script, Stdio, outcome};

/// A legacy server (2025-11-25) with these capabilities, answering every request with
/// an empty result of the right shape.
fn legacy(capabilities: Value) -> Script {
    Box::new(move |m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{
            "protocolVersion":"2025-11-25","capabilities":capabilities,
            "serverInfo":{"name":"s","version":"1"}}})],
        Some(method) if m.get("id").is_some() => vec![answer(m, method)],
        _ => Vec::new(),
    })
}

/// A 2026-07-28 server with these capabilities in its `server/discover`.
fn modern(capabilities: Value) -> Script {
    Box::new(move |m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{
            "resultType":"complete","supportedVersions":["2026-07-28"],
            "capabilities":capabilities,"ttlMs":0,"cacheScope":"public"}})],
        Some(method) if m.get("id").is_some() => vec![answer(m, method)],
        _ => Vec::new(),
    })
}

fn answer(m: &Value, method: &str) -> Value {
    let result = match method {
        "tools/list" => json!({"resultType":"complete","tools":[]}),
        "prompts/list" => json!({"resultType":"complete","prompts":[]}),
        "resources/list" => json!({"resultType":"complete","resources":[]}),
        "resources/templates/list" => json!({"resultType":"complete","resourceTemplates":[]}),
        "tasks/list" => json!({"tasks":[]}),
        "tools/call" => json!({"resultType":"complete","content":[]}),
        "completion/complete" => {
            json!({"resultType":"complete","completion":{"values":[]}})
        }
        _ => json!({"resultType":"complete"}),
    };
    json!({"jsonrpc":"2.0","id":m["id"],"result":result})
}

fn complete() -> CallRequest {
    CallRequest::new(
        "completion/complete",
        json!({"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"x"}}),
    )
}

/// `request` fails locally, naming `feature`, and nothing of its method is sent.
fn refused(sim: &mut Stdio, request: CallRequest, feature: &str) {
    let method = request.method().to_owned();
    let err = sim.call(request).unwrap_err();
    assert!(
        matches!(&err, CallError::NotDeclared { method: m, feature: f }
            if *m == method && *f == feature),
        "{method}: {err:?}"
    );
    assert!(
        err.to_string().contains(feature),
        "{method}: the message names {feature}: {err}"
    );
    assert!(
        sim.sent_with_method(&method).is_empty(),
        "{method} was sent"
    );
}

/// A legacy server declaring only `tools: {}`: its tools are used, and every utility it
/// did not declare fails locally with its name. The primitives it did not declare are
/// still asked for (the server answers for itself).
#[test]
fn a_legacy_server_is_asked_only_for_what_it_declared() {
    let mut sim = Stdio::new(
        ClientConfig::new("gates", "1").era_mode(EraMode::Legacy),
        legacy(json!({"tools":{}})),
    );
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    sim.call(CallRequest::list_prompts()).unwrap();
    sim.call(CallRequest::read_resource("file:///a")).unwrap();
    refused(
        &mut sim,
        CallRequest::subscribe_resource("file:///a"),
        "resources.subscribe",
    );
    refused(
        &mut sim,
        CallRequest::unsubscribe_resource("file:///a"),
        "resources.subscribe",
    );
    refused(&mut sim, complete(), "completions");
    refused(
        &mut sim,
        CallRequest::set_log_level(LogLevel::Debug),
        "logging",
    );
    refused(&mut sim, CallRequest::list_tasks(), "tasks.list");
    refused(&mut sim, CallRequest::cancel_task("t1"), "tasks.cancel");
    // `ping` needs no capability.
    sim.call(CallRequest::ping()).unwrap();
}

/// `resources: {}` serves resources but not subscriptions; `subscribe: true` does.
#[test]
fn a_legacy_subscription_needs_resources_subscribe() {
    let mut sim = Stdio::new(
        ClientConfig::new("gates", "1").era_mode(EraMode::Legacy),
        legacy(json!({"resources":{}})),
    );
    sim.connect();
    sim.call(CallRequest::list_resources()).unwrap();
    sim.call(CallRequest::read_resource("file:///a")).unwrap();
    refused(
        &mut sim,
        CallRequest::subscribe_resource("file:///a"),
        "resources.subscribe",
    );

    let mut sim = Stdio::new(
        ClientConfig::new("gates", "1").era_mode(EraMode::Legacy),
        legacy(
            json!({"resources":{"subscribe":true},"completions":{},"logging":{},
            "prompts":{},"tasks":{"list":{},"cancel":{}}}),
        ),
    );
    sim.connect();
    sim.call(CallRequest::subscribe_resource("file:///a"))
        .unwrap();
    sim.call(CallRequest::unsubscribe_resource("file:///a"))
        .unwrap();
    sim.call(complete()).unwrap();
    sim.call(CallRequest::set_log_level(LogLevel::Debug))
        .unwrap();
    sim.call(CallRequest::list_prompts()).unwrap();
    sim.call(CallRequest::list_tasks()).unwrap();
    sim.call(CallRequest::cancel_task("t1")).unwrap();
}

/// 2026-07-28: the capabilities of `server/discover` gate the same way.
#[test]
fn a_2026_server_is_asked_only_for_what_it_declared() {
    let mut sim = Stdio::new(ClientConfig::new("gates", "1"), modern(json!({"tools":{}})));
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    refused(&mut sim, complete(), "completions");
    // Not sent in 2026 in any case: the level would go with later requests, to a
    // server that said it emits no logs.
    refused(
        &mut sim,
        CallRequest::set_log_level(LogLevel::Debug),
        "logging",
    );

    let mut sim = Stdio::new(
        ClientConfig::new("gates", "1"),
        modern(json!({"completions":{},"logging":{}})),
    );
    sim.connect();
    sim.call(complete()).unwrap();
    sim.call(CallRequest::set_log_level(LogLevel::Debug))
        .unwrap();
}

/// A call made before the server is known waits for its capabilities: one the server
/// lacks fails once they are known, one it has is sent.
#[test]
fn calls_made_while_connecting_are_gated_once_the_server_is_known() {
    let mut sim = Stdio::new(
        ClientConfig::new("gates", "1").era_mode(EraMode::Legacy),
        legacy(json!({"tools":{}})),
    );
    let completion = sim.client.call(sim.now, complete()).unwrap();
    let tools = sim.client.call(sim.now, CallRequest::list_tools()).unwrap();
    assert!(
        outcome(&sim.events, completion).is_none(),
        "refused before the server was known"
    );
    let err = sim.wait(completion).unwrap_err();
    assert!(
        matches!(
            &err,
            CallError::NotDeclared {
                feature: "completions",
                ..
            }
        ),
        "{err:?}"
    );
    sim.wait(tools).unwrap();
    assert!(sim.sent_with_method("completion/complete").is_empty());
}

/// A server whose `initialize` result has no capabilities object says nothing either
/// way: nothing is refused on its account.
#[test]
fn unknown_capabilities_refuse_nothing() {
    let server: Script = Box::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{
            "protocolVersion":"2025-11-25","serverInfo":{"name":"s","version":"1"}}})],
        Some(method) if m.get("id").is_some() => vec![answer(m, method)],
        _ => Vec::new(),
    });
    let mut sim = Stdio::new(
        ClientConfig::new("gates", "1").era_mode(EraMode::Legacy),
        server,
    );
    sim.connect();
    sim.call(complete()).unwrap();
    sim.call(CallRequest::set_log_level(LogLevel::Debug))
        .unwrap();
}
