//! Interop over stdio with servers nobody here wrote: the TypeScript SDK v2 and the
//! Python SDK 2.3 in both eras (Auto must reach 2026-07-28 with them), and
//! `@modelcontextprotocol/server-everything` (Auto must fall back to the legacy era).

use mcp_blocking::Client;
use mcp_proto::client::ClientConfig;
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::{Era, EraMode, ProtocolVersion};
use mcp_tests::interop::{FillForms, Fixture, fixture};
use serde_json::json;

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("interop-test", "1.0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation())
}

fn connect(f: Fixture, mode: EraMode) -> Option<Client> {
    let cmd = fixture(f)?;
    let mut client = Client::connect_stdio(cmd, config(mode))
        .unwrap_or_else(|e| panic!("{f:?} {mode:?}: connect failed: {e}"));
    client.set_input_handler(Box::new(FillForms::default()));
    Some(client)
}

/// add(2, 3) and the confirm tool that asks the user.
fn exercise_add_and_confirm(mut client: Client, expect_ok: &str) {
    let tools = client.list_tools().expect("tools/list");
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"add") && names.contains(&"confirm"),
        "{names:?}"
    );
    let sum = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .expect("add");
    assert_eq!(sum.text(), "5");
    let confirmed = client.call_tool("confirm", json!({})).expect("confirm");
    assert_ne!(confirmed.is_error, Some(true), "{}", confirmed.text());
    assert_eq!(confirmed.text(), expect_ok);
    let shutdown = client.close();
    assert!(!shutdown.killed, "the server exits on stdin EOF");
}

#[test]
fn typescript_sdk_auto_reaches_2026() {
    let Some(client) = connect(Fixture::TypeScript, EraMode::Auto) else {
        return;
    };
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    exercise_add_and_confirm(client, "ok=true");
}

#[test]
fn typescript_sdk_legacy() {
    let Some(client) = connect(Fixture::TypeScript, EraMode::Legacy) else {
        return;
    };
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    exercise_add_and_confirm(client, "ok=true");
}

#[test]
fn python_sdk_auto_reaches_2026() {
    let Some(client) = connect(Fixture::Python, EraMode::Auto) else {
        return;
    };
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    exercise_add_and_confirm(client, "ok=True");
}

#[test]
fn python_sdk_legacy() {
    let Some(client) = connect(Fixture::Python, EraMode::Legacy) else {
        return;
    };
    assert_eq!(client.era(), Era::Legacy);
    exercise_add_and_confirm(client, "ok=True");
}

#[test]
fn server_everything_auto_falls_back_to_legacy() {
    let Some(mut client) = connect(Fixture::Everything, EraMode::Auto) else {
        return;
    };
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(
        client.restarts(),
        0,
        "it answers the probe instead of exiting"
    );
    let tools = client.list_tools().expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let echoed = client
        .call_tool("echo", json!({"message": "hello"}))
        .expect("echo");
    assert!(echoed.text().contains("hello"), "{}", echoed.text());
    let elicited = client
        .call_tool("trigger-elicitation-request", json!({}))
        .expect("elicitation");
    assert_ne!(elicited.is_error, Some(true), "{}", elicited.text());
    client.close();
}

#[test]
fn modern_mode_fails_clearly_against_server_everything() {
    let Some(cmd) = fixture(Fixture::Everything) else {
        return;
    };
    let Err(err) = Client::connect_stdio(cmd, config(EraMode::Modern)) else {
        panic!("must not connect");
    };
    assert!(err.to_string().contains("legacy"), "{err}");
}
