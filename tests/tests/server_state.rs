//! The 2026-07-28 `requestState` attack list against the server machine with the sealing
//! codec: a tampered state, a state from another principal, with other arguments, for
//! another tool, expired, replayed where the tool asked for single use, and sealed under
//! a retired key. Each is refused with `-32602` and the handler never runs again.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::server::{
    InputRequestSpec, KeyRing, SealedStateCodec, Server, ServerConfig, Tool, ToolCall, ToolOutcome,
    example,
};
use serde_json::{Value, json};

/// A tool that asks one question, then counts its completed runs.
fn deploy(runs: Arc<AtomicU32>, single_use: bool) -> Tool {
    let tool = Tool::new(
        "deploy",
        "Asks for confirmation, then deploys",
        json!({"type": "object", "properties": {"env": {"type": "string"}}}),
        move |call: &ToolCall<'_>| {
            if call.inputs.get("ok").is_none() {
                let schema = json!({"type": "object", "properties": {"yes": {"type": "boolean"}}});
                return ToolOutcome::NeedInput(vec![(
                    "ok".into(),
                    InputRequestSpec::form("Deploy?", schema),
                )]);
            }
            runs.fetch_add(1, Ordering::SeqCst);
            ToolOutcome::text("deployed")
        },
    );
    if single_use {
        tool.single_use_state()
    } else {
        tool
    }
}

fn server(runs: &Arc<AtomicU32>, single_use: bool, ring: KeyRing) -> Server {
    let runs = Arc::clone(runs);
    example::server_with(move |c: &mut ServerConfig| {
        c.tools.push(deploy(runs, single_use));
        c.state_codec = Box::new(
            SealedStateCodec::new(ring, &[9; 32], 1_800_000_000_000).ttl(Duration::from_secs(60)),
        );
    })
}

fn ring() -> KeyRing {
    KeyRing::new("k1", [1; 32]).unwrap()
}

/// Sends one modern `tools/call` and returns the response.
fn call(server: &mut Server, now: Instant, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    server.handle_json(now, &serde_json::to_vec(&request).unwrap());
    let mut out = Vec::new();
    while server.poll_transmit(now, &mut out).is_some() {}
    let line = out.split(|b| *b == b'\n').next().unwrap();
    serde_json::from_slice(line).unwrap()
}

/// The first round: the state to retry with.
fn first_round(server: &mut Server, args: Value) -> String {
    let reply = call(
        server,
        Instant::ZERO,
        json!({"name": "deploy", "arguments": args}),
    );
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    reply["result"]["requestState"].as_str().unwrap().to_owned()
}

fn retry(server: &mut Server, now: Instant, args: Value, state: &str) -> Value {
    call(
        server,
        now,
        json!({"name": "deploy", "arguments": args, "requestState": state,
               "inputResponses": {"ok": {"action": "accept", "content": {"yes": true}}}}),
    )
}

fn refused(reply: &Value, why: &str) {
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert_eq!(
        reply["error"]["message"],
        format!("Invalid requestState: {why}"),
        "{reply}"
    );
}

#[test]
fn a_sealed_state_resumes_its_own_call() {
    let runs = Arc::new(AtomicU32::new(0));
    let mut s = server(&runs, false, ring());
    s.set_principal(Some("alice".into()));
    let state = first_round(&mut s, json!({"env": "prod"}));
    assert!(state.starts_with("v1.k1."), "{state}");
    let reply = retry(&mut s, Instant::ZERO, json!({"env": "prod"}), &state);
    assert_eq!(reply["result"]["content"][0]["text"], "deployed", "{reply}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn tampered_foreign_and_expired_states_are_refused_without_running_the_handler() {
    let runs = Arc::new(AtomicU32::new(0));
    let mut s = server(&runs, false, ring());
    s.set_principal(Some("alice".into()));
    let state = first_round(&mut s, json!({"env": "prod"}));
    let t0 = Instant::ZERO;

    // Tampered: a byte of the payload changed.
    let at = state.len() / 2;
    let flipped = if state.as_bytes()[at] == b'A' {
        "B"
    } else {
        "A"
    };
    let tampered = format!("{}{flipped}{}", &state[..at], &state[at + 1..]);
    refused(
        &retry(&mut s, t0, json!({"env": "prod"}), &tampered),
        "tampered with",
    );

    // Other arguments than the ones the state was issued for.
    refused(
        &retry(&mut s, t0, json!({"env": "staging"}), &state),
        "issued for another request",
    );

    // Another principal.
    s.set_principal(Some("mallory".into()));
    refused(
        &retry(&mut s, t0, json!({"env": "prod"}), &state),
        "issued to another principal",
    );
    s.set_principal(None);
    refused(
        &retry(&mut s, t0, json!({"env": "prod"}), &state),
        "issued to another principal",
    );
    s.set_principal(Some("alice".into()));

    // Expired.
    let late = t0.saturating_add(Duration::from_secs(61));
    refused(
        &retry(&mut s, late, json!({"env": "prod"}), &state),
        "expired",
    );

    // A state the plain codec would take.
    refused(
        &retry(
            &mut s,
            t0,
            json!({"env": "prod"}),
            r#"plain1:{"method":"tools/call","name":"deploy","round":1,"asked":["ok"],"inputs":{}}"#,
        ),
        "malformed",
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler ran");

    // And the genuine state still works.
    let reply = retry(&mut s, t0, json!({"env": "prod"}), &state);
    assert_eq!(reply["result"]["content"][0]["text"], "deployed", "{reply}");
}

#[test]
fn a_single_use_state_is_refused_the_second_time() {
    let runs = Arc::new(AtomicU32::new(0));
    let mut s = server(&runs, true, ring());
    let state = first_round(&mut s, json!({}));
    let first = retry(&mut s, Instant::ZERO, json!({}), &state);
    assert_eq!(first["result"]["content"][0]["text"], "deployed", "{first}");
    refused(
        &retry(&mut s, Instant::ZERO, json!({}), &state),
        "already used",
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "run twice");
}

#[test]
fn a_state_sealed_by_one_instance_opens_on_another_with_the_same_ring() {
    let runs = Arc::new(AtomicU32::new(0));
    let mut a = server(&runs, false, ring());
    let state = first_round(&mut a, json!({}));
    let mut rotated = ring();
    rotated.rotate("k2", [2; 32]).unwrap();
    let mut b = server(&runs, false, rotated.clone());
    let reply = retry(&mut b, Instant::ZERO, json!({}), &state);
    assert_eq!(reply["result"]["content"][0]["text"], "deployed", "{reply}");
    // Once k1 is retired, its states are over.
    rotated.retire("k1");
    let mut c = server(&runs, false, rotated);
    refused(
        &retry(&mut c, Instant::ZERO, json!({}), &state),
        "unknown key",
    );
    // A server with another secret under the same id cannot open it either.
    let mut d = server(&runs, false, KeyRing::new("k1", [7; 32]).unwrap());
    refused(
        &retry(&mut d, Instant::ZERO, json!({}), &state),
        "tampered with",
    );
}

/// Over HTTP the principal is what the embedding application authenticated, per request.
#[test]
fn over_http_a_state_is_bound_to_the_authenticated_principal() {
    use mcp_proto::server::http::{HttpEndpoint, HttpReply, HttpRequest};
    let runs = Arc::new(AtomicU32::new(0));
    let mut endpoint = HttpEndpoint::new(server(&runs, false, ring()));
    let post = |params: Value| {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        HttpRequest::new("POST", "/mcp")
            .with_header("Host", "127.0.0.1")
            .with_header("Content-Type", "application/json")
            .with_header("Accept", "application/json, text/event-stream")
            .with_header("MCP-Protocol-Version", "2026-07-28")
            .with_header("Mcp-Method", "tools/call")
            .with_header("Mcp-Name", "deploy")
            .with_body(serde_json::to_vec(&body).unwrap())
    };
    let mut answer = |request: &HttpRequest, who: Option<&str>| -> Value {
        match endpoint.handle_request_as(Instant::ZERO, request, who) {
            HttpReply::Complete(r) => serde_json::from_slice(&r.body)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&r.body))),
            _ => panic!("not a complete answer"),
        }
    };
    let first = answer(
        &post(json!({"name": "deploy", "arguments": {}})),
        Some("alice"),
    );
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = post(
        json!({"name": "deploy", "arguments": {}, "requestState": state,
        "inputResponses": {"ok": {"action": "accept", "content": {"yes": true}}}}),
    );
    refused(&answer(&retry, Some("bob")), "issued to another principal");
    refused(&answer(&retry, None), "issued to another principal");
    let done = answer(&retry, Some("alice"));
    assert_eq!(done["result"]["content"][0]["text"], "deployed", "{done}");
}
