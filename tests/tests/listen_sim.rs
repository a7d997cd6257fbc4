//! Simulations on the fake clock for change notifications and subscriptions: the
//! legacy `resources/subscribe` / `resources/unsubscribe` and unsolicited
//! `notifications/*/list_changed`, and the 2026-07-28 `subscriptions/listen`.

use mcp_proto::client::{CallError, CallRequest, Change, ClientConfig, Event};
use mcp_proto::version::{EraMode, ProtocolVersion};
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("listen-sim", "1.0").era_mode(mode)
}

fn answer(m: &Value, result: Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":result}).to_string()
}

/// Handshake answers for either era: `server/discover` (2026) or `initialize` (2025).
fn handshake(m: &Value) -> Option<Vec<String>> {
    match m["method"].as_str()? {
        "server/discover" => Some(vec![answer(
            m,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                "capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},
                    "resources":{"subscribe":true,"listChanged":true}}}),
        )]),
        "initialize" => Some(vec![answer(
            m,
            json!({"protocolVersion":"2025-11-25",
                "capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true}},
                "serverInfo":{"name":"s","version":"1"}}),
        )]),
        "notifications/initialized" => Some(Vec::new()),
        _ => None,
    }
}

fn changes(sim: &Sim) -> Vec<Change> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::Notification(n) => Change::from_notification(n),
            _ => None,
        })
        .collect()
}

// ----- legacy: resources/subscribe and unsolicited list_changed -------------------------

#[test]
fn legacy_subscribe_delivers_updates_and_list_changes_until_unsubscribed() {
    let peer = Scripted::new(|m: &Value| {
        handshake(m).unwrap_or_else(|| match m["method"].as_str() {
            Some("resources/subscribe") => vec![
                answer(m, json!({})),
                json!({"jsonrpc":"2.0","method":"notifications/resources/updated",
                    "params":{"uri":m["params"]["uri"]}})
                .to_string(),
                json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}).to_string(),
                json!({"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}).to_string(),
                json!({"jsonrpc":"2.0","method":"notifications/resources/list_changed"})
                    .to_string(),
            ],
            Some("resources/unsubscribe") => vec![answer(m, json!({}))],
            _ => Vec::new(),
        })
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    sim.call(CallRequest::subscribe_resource("file:///a"))
        .unwrap();
    let sent = sim.sent_with_method("resources/subscribe");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["params"], json!({"uri":"file:///a"}));
    sim.run_until(|s| changes(s).len() == 4);
    assert_eq!(
        changes(&sim),
        vec![
            Change::ResourceUpdated {
                uri: "file:///a".into()
            },
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
        ]
    );
    sim.call(CallRequest::unsubscribe_resource("file:///a"))
        .unwrap();
    assert_eq!(
        sim.sent_with_method("resources/unsubscribe")[0]["params"],
        json!({"uri":"file:///a"})
    );
}

#[test]
fn resources_subscribe_is_refused_locally_in_2026() {
    let peer = Scripted::new(|m: &Value| handshake(m).unwrap_or_default());
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    for (request, method) in [
        (
            CallRequest::subscribe_resource("file:///a"),
            "resources/subscribe",
        ),
        (
            CallRequest::unsubscribe_resource("file:///a"),
            "resources/unsubscribe",
        ),
    ] {
        assert_eq!(
            sim.call(request).unwrap_err(),
            CallError::NotInVersion {
                method: method.into(),
                version: ProtocolVersion::V2026_07_28
            }
        );
        assert!(sim.sent_with_method(method).is_empty());
    }
}
