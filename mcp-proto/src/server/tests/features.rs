//! Logging, progress, subscriptions, binary and template resources, prompts that ask for
//! input, and the MRTR edge cases the official server scenarios probe.

use serde_json::{Map, Value, json};

use super::{Peer, meta, modern, ok};
use crate::client::LogLevel;
use crate::model::Implementation;
use crate::server::{
    InputRequestSpec, Prompt, PromptCall, Resource, Server, ServerConfig, Tool, ToolCall, ToolNote,
    ToolOutcome,
};

/// A tool sending a debug, an info and an error log, then progress 1 of 2 and 2 of 2.
fn noisy(_: &ToolCall<'_>) -> ToolOutcome {
    ToolOutcome::DoneWithNotes {
        notes: vec![
            ToolNote::log(LogLevel::Debug, "d"),
            ToolNote::log(LogLevel::Info, "i"),
            ToolNote::log(LogLevel::Error, "e"),
            ToolNote::progress(1.0, Some(2.0)),
            ToolNote::progress(2.0, Some(2.0)),
        ],
        result: json!({"content": []}),
    }
}

/// A tool asking for an elicitation and a sampling, each only when the client can answer.
fn polite(call: &ToolCall<'_>) -> ToolOutcome {
    let mut asks = Vec::new();
    if call.client_capabilities.get("elicitation").is_some() && call.inputs.get("e").is_none() {
        asks.push((
            "e".to_owned(),
            InputRequestSpec::form("?", json!({"type": "object"})),
        ));
    }
    if call.client_capabilities.get("sampling").is_some() && call.inputs.get("s").is_none() {
        asks.push((
            "s".to_owned(),
            InputRequestSpec::Sampling(json!({"messages": []})),
        ));
    }
    if asks.is_empty() {
        let keys: Vec<&String> = call.inputs.keys().collect();
        ToolOutcome::text(format!("{keys:?}"))
    } else {
        ToolOutcome::NeedInput(asks)
    }
}

/// A prompt asking for `topic` (modern era only).
fn topic_prompt(call: &PromptCall<'_>) -> ToolOutcome {
    match call.inputs.get("topic") {
        Some(a) => ToolOutcome::Done(json!({"messages": [{"role": "user",
            "content": {"type": "text", "text": format!("about {}", a["content"]["t"])}}]})),
        None => ToolOutcome::NeedInput(vec![(
            "topic".to_owned(),
            InputRequestSpec::form("topic?", json!({"type": "object"})),
        )]),
    }
}

fn config() -> ServerConfig {
    ServerConfig::new(Implementation::new("t", "0"))
        .with_tool(Tool::new("noisy", "", json!({"type": "object"}), noisy))
        .with_tool(Tool::new("polite", "", json!({"type": "object"}), polite))
        .with_tool(
            Tool::new(
                "once",
                "",
                json!({"type": "object"}),
                |c: &ToolCall<'_>| match c.inputs.get("k") {
                    Some(_) => ToolOutcome::text("done"),
                    None => ToolOutcome::NeedInput(vec![(
                        "k".to_owned(),
                        InputRequestSpec::form("?", json!({"type": "object"})),
                    )]),
                },
            )
            .single_use_state(),
        )
        .with_resource(Resource::text("test://a", "a", "text/plain", "A"))
        .with_resource(Resource::blob("test://b", "b", "image/png", "AAEC"))
        .with_resource_template(json!({"uriTemplate": "test://t/{id}", "name": "t"}))
        .with_resource_reader(Box::new(|uri: &str| match uri.strip_prefix("test://t/") {
            Some("empty") => Some(json!({"contents": []})),
            Some(id) => Some(json!({"contents": [{"uri": uri, "text": id}]})),
            None => None,
        }))
        .with_prompt(Prompt::with_input("topic", None, vec![], topic_prompt))
        .with_prompt(Prompt::new(
            "plain",
            None,
            vec![],
            |_: &Map<String, Value>| Ok(json!({"messages": []})),
        ))
}

fn peer(tweak: impl FnOnce(ServerConfig) -> ServerConfig) -> Peer {
    Peer::new(Server::new(tweak(config())))
}

fn methods(out: &[Value]) -> Vec<&str> {
    out.iter()
        .map(|m| m["method"].as_str().unwrap_or("(response)"))
        .collect()
}

fn call(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn logging_follows_set_level_and_needs_the_capability() {
    let mut p = peer(ServerConfig::with_logging);
    let init = p.initialize("2025-11-25", json!({}));
    assert_eq!(init["result"]["capabilities"]["logging"], json!({}));
    // Before logging/setLevel every level goes out; progress needs a token.
    let out = p.send(call(1, "tools/call", json!({"name": "noisy"})));
    assert_eq!(
        methods(&out),
        [
            "notifications/message",
            "notifications/message",
            "notifications/message",
            "(response)"
        ]
    );
    assert_eq!(out[0]["params"], json!({"level": "debug", "data": "d"}));
    assert_eq!(
        p.call(json!(2), "logging/setLevel", json!({"level": "error"})),
        ok(json!(2), json!({}))
    );
    let out = p.send(call(
        3,
        "tools/call",
        json!({"name": "noisy", "_meta": {"progressToken": "p"}}),
    ));
    assert_eq!(
        methods(&out),
        [
            "notifications/message",
            "notifications/progress",
            "notifications/progress",
            "(response)"
        ]
    );
    assert_eq!(out[0]["params"]["level"], "error");
    assert_eq!(
        out[2]["params"],
        json!({"progressToken": "p", "progress": 2.0, "total": 2.0})
    );
    let bad = p.call(json!(4), "logging/setLevel", json!({"level": "loud"}));
    assert_eq!(bad["error"]["code"], -32602);

    // Without the capability: no logs at all, and logging/setLevel is unknown.
    let mut p = peer(|c| c);
    let init = p.initialize("2025-11-25", json!({}));
    assert!(init["result"]["capabilities"].get("logging").is_none());
    let out = p.send(call(
        1,
        "tools/call",
        json!({"name": "noisy", "_meta": {"progressToken": 7}}),
    ));
    assert_eq!(
        methods(&out),
        [
            "notifications/progress",
            "notifications/progress",
            "(response)"
        ]
    );
    assert_eq!(out[0]["params"]["progressToken"], 7);
    let reply = p.call(json!(2), "logging/setLevel", json!({"level": "info"}));
    assert_eq!(reply["error"]["code"], -32601);
}

#[test]
fn modern_logs_only_with_a_log_level() {
    let mut p = peer(ServerConfig::with_logging);
    let out = p.send(call(
        1,
        "tools/call",
        modern(json!({"name": "noisy"}), json!({})),
    ));
    assert_eq!(methods(&out), ["(response)"]);
    let mut params = modern(json!({"name": "noisy"}), json!({}));
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    params["_meta"]["progressToken"] = json!("t");
    let out = p.send(call(2, "tools/call", params));
    assert_eq!(
        methods(&out),
        [
            "notifications/message",
            "notifications/message",
            "notifications/progress",
            "notifications/progress",
            "(response)"
        ]
    );
    assert_eq!(out[0]["params"]["level"], "info");
    assert_eq!(out[4]["result"]["resultType"], "complete");
}

/// Progress MUST increase with every notification, and is a number: a handler's notes
/// that go back, stand still or are not finite are not sent as they are.
#[test]
fn progress_sent_only_increases_and_is_a_number() {
    let muddled = |_: &ToolCall<'_>| ToolOutcome::DoneWithNotes {
        notes: vec![
            ToolNote::progress(1.0, Some(4.0)),
            ToolNote::progress(1.0, Some(4.0)),
            ToolNote::progress(0.5, Some(4.0)),
            ToolNote::progress(f64::NAN, None),
            ToolNote::progress(2.0, Some(f64::INFINITY)),
            ToolNote::progress(f64::INFINITY, None),
            ToolNote::progress(3.0, None),
        ],
        result: json!({"content": []}),
    };
    let mut p = peer(|c| c.with_tool(Tool::new("muddled", "", json!({"type": "object"}), muddled)));
    let mut params = modern(json!({"name": "muddled"}), json!({}));
    params["_meta"]["progressToken"] = json!("t");
    let out = p.send(call(1, "tools/call", params));
    let sent: Vec<&Value> = out
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| &m["params"])
        .collect();
    assert_eq!(
        sent,
        [
            &json!({"progressToken": "t", "progress": 1.0, "total": 4.0}),
            &json!({"progressToken": "t", "progress": 2.0}),
            &json!({"progressToken": "t", "progress": 3.0}),
        ]
    );
}

#[test]
fn subscriptions_are_legacy_bounded_and_notify() {
    let mut p = peer(|mut c| {
        c.limits.max_subscriptions = 1;
        c.with_resource_subscriptions()
    });
    let discover = p.call(
        json!(0),
        "server/discover",
        json!({"_meta": meta(json!({}))}),
    );
    // 2026-07-28: `subscribe` means the `resourceSubscriptions` of `subscriptions/listen`.
    assert_eq!(
        discover["result"]["capabilities"]["resources"],
        json!({"subscribe": true})
    );
    let init = p.initialize("2025-06-18", json!({}));
    assert_eq!(
        init["result"]["capabilities"]["resources"],
        json!({"subscribe": true})
    );
    assert!(!p.server.resource_updated("test://a"));
    assert_eq!(
        p.call(json!(1), "resources/subscribe", json!({"uri": "test://a"})),
        ok(json!(1), json!({}))
    );
    // Again: no-op. Another one: over the bound. An unknown one: -32002.
    assert_eq!(
        p.call(json!(2), "resources/subscribe", json!({"uri": "test://a"})),
        ok(json!(2), json!({}))
    );
    let over = p.call(
        json!(3),
        "resources/subscribe",
        json!({"uri": "test://t/9"}),
    );
    assert_eq!(over["error"]["code"], -32603);
    let unknown = p.call(
        json!(4),
        "resources/subscribe",
        json!({"uri": "test://zzz"}),
    );
    assert_eq!(unknown["error"]["code"], -32002);
    assert_eq!(unknown["error"]["data"], json!({"uri": "test://zzz"}));
    let long = format!("test://t/{}", "x".repeat(8 * 1024));
    let reply = p.call(json!(7), "resources/subscribe", json!({"uri": long}));
    assert_eq!(reply["error"]["code"], -32602);
    assert!(p.server.resource_updated("test://a"));
    assert_eq!(
        p.send(json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}))[0]["method"],
        "notifications/resources/updated"
    );
    assert_eq!(
        p.call(
            json!(6),
            "resources/unsubscribe",
            json!({"uri": "test://a"})
        ),
        ok(json!(6), json!({}))
    );
    assert!(!p.server.resource_updated("test://a"));
    // Without the option the methods are unknown.
    let mut p = peer(|c| c);
    p.initialize("2025-06-18", json!({}));
    let reply = p.call(json!(1), "resources/subscribe", json!({"uri": "test://a"}));
    assert_eq!(reply["error"]["code"], -32601);
}

#[test]
fn binary_and_template_resources() {
    let mut p = peer(|c| c);
    p.initialize("2025-06-18", json!({}));
    let blob = p.call(json!(1), "resources/read", json!({"uri": "test://b"}));
    assert_eq!(
        blob["result"],
        json!({"contents": [{"uri": "test://b", "blob": "AAEC", "mimeType": "image/png"}]})
    );
    let t = p.call(json!(2), "resources/read", json!({"uri": "test://t/42"}));
    assert_eq!(t["result"]["contents"][0]["text"], "42");
    // A reader answering with no contents is the server's fault, not a missing resource.
    let empty = p.call(json!(3), "resources/read", json!({"uri": "test://t/empty"}));
    assert_eq!(empty["error"]["code"], -32603);
    let missing = p.call(json!(4), "resources/read", json!({"uri": "test://nope"}));
    assert_eq!(missing["error"]["code"], -32002);
    let missing = p.call(
        json!(5),
        "resources/read",
        modern(json!({"uri": "test://nope"}), json!({})),
    );
    assert_eq!(missing["error"]["code"], -32602);
    assert_eq!(missing["error"]["data"], json!({"uri": "test://nope"}));
}

#[test]
fn initialize_with_modern_meta_is_a_removed_method() {
    let mut p = peer(|c| c);
    let reply = p.call(json!(1), "initialize", json!({"_meta": meta(json!({}))}));
    assert_eq!(reply["error"]["code"], -32601);
    // A legacy initialize is still served afterwards.
    let init = p.initialize("2025-11-25", json!({}));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn handlers_see_the_client_capabilities() {
    let mut p = peer(|c| c);
    // Modern: only sampling declared, so only sampling is asked.
    let first = p.call(
        json!(1),
        "tools/call",
        modern(json!({"name": "polite"}), json!({"sampling": {}})),
    );
    let asked: Vec<&String> = first["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(asked, ["s"]);
    // Legacy: from initialize.
    p.initialize("2025-11-25", json!({"elicitation": {}}));
    let out = p.send(call(2, "tools/call", json!({"name": "polite"})));
    assert_eq!(methods(&out), ["elicitation/create"]);
}

#[test]
fn input_responses_must_be_objects_and_first_answers_count() {
    let mut p = peer(|c| c);
    let caps = json!({"elicitation": {}, "sampling": {}});
    for bad in [json!({"e": 12345}), json!(null), json!([1])] {
        let params = modern(
            json!({"name": "polite", "inputResponses": bad}),
            caps.clone(),
        );
        let reply = p.call(json!(1), "tools/call", params);
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
    }
    // Answers on a first try reach the handler; unknown extra keys are its business.
    let answers = json!({"e": {"action": "accept"}, "s": {"role": "assistant"}, "x": {}});
    let params = modern(
        json!({"name": "polite", "inputResponses": answers}),
        caps.clone(),
    );
    let reply = p.call(json!(2), "tools/call", params);
    assert_eq!(reply["result"]["content"][0]["text"], r#"["e", "s", "x"]"#);
    // Not for a single-use tool: its answers must come with the state.
    let params = modern(
        json!({"name": "once", "inputResponses": {"k": {}}}),
        caps.clone(),
    );
    assert_eq!(
        p.call(json!(3), "tools/call", params)["result"]["resultType"],
        "input_required"
    );
}

#[test]
fn prompts_ask_for_input_in_the_modern_era_only() {
    let mut p = peer(|c| c);
    let caps = json!({"elicitation": {}});
    let first = p.call(
        json!(1),
        "prompts/get",
        modern(json!({"name": "topic"}), caps.clone()),
    );
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["topic"]["method"],
        "elicitation/create"
    );
    let state = result["requestState"].clone();
    let retry = modern(
        json!({"name": "topic", "requestState": state,
               "inputResponses": {"topic": {"action": "accept", "content": {"t": "rust"}}}}),
        caps.clone(),
    );
    let done = p.call(json!(2), "prompts/get", retry);
    assert_eq!(
        done["result"]["messages"][0]["content"]["text"],
        "about \"rust\""
    );
    assert_eq!(done["result"]["resultType"], "complete");
    // The prompt's state does not open a tool call, nor does a tool's state a prompt.
    let foreign = modern(
        json!({"name": "polite", "requestState": state}),
        caps.clone(),
    );
    assert_eq!(
        p.call(json!(3), "tools/call", foreign)["error"]["code"],
        -32602
    );
    // Without the capability: -32021. A plain prompt answers at once.
    let reply = p.call(
        json!(4),
        "prompts/get",
        modern(json!({"name": "topic"}), json!({})),
    );
    assert_eq!(reply["error"]["code"], -32021);
    let plain = p.call(
        json!(5),
        "prompts/get",
        modern(json!({"name": "plain"}), json!({})),
    );
    assert_eq!(plain["result"]["messages"], json!([]));
    // Legacy prompts/get cannot be parked.
    p.initialize("2025-11-25", json!({"elicitation": {}}));
    let reply = p.call(json!(6), "prompts/get", json!({"name": "topic"}));
    assert_eq!(reply["error"]["code"], -32603);
    assert_eq!(
        p.call(json!(7), "prompts/get", json!({"name": "plain"})),
        ok(json!(7), json!({"messages": []}))
    );
}
