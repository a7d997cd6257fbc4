//! A hostile client against the sealed 2026-07-28 `requestState` of a single-use tool
//! (decision 33 in `docs/decisions.md`: "single use is per tool (`Tool::single_use_state`)
//! through a `ConsumptionStore` whose in-memory implementation refuses rather than forgets
//! when full (at most once wins over availability)").

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::server::{
    InputRequestSpec, KeyRing, SealedStateCodec, Server, ServerConfig, Tool, ToolCall, ToolOutcome,
    example,
};
use serde_json::{Value, json};

/// A single-use tool that asks one question, then counts its completed runs (its effect).
fn deploy(runs: Arc<AtomicU32>) -> Tool {
    Tool::new(
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
    )
    .single_use_state()
}

fn codec(ring: KeyRing) -> SealedStateCodec {
    SealedStateCodec::new(ring, &[9; 32], 1_800_000_000_000).ttl(Duration::from_secs(60))
}

fn server(runs: &Arc<AtomicU32>) -> Server {
    let runs = Arc::clone(runs);
    example::server_with(move |c: &mut ServerConfig| {
        c.tools.push(deploy(runs));
        c.state_codec = Box::new(codec(KeyRing::new("k1", [1; 32]).unwrap()));
    })
}

/// [`server`], its used single-use states recorded in a memory store of `capacity`.
fn server_with_store(runs: &Arc<AtomicU32>, capacity: usize) -> Server {
    use mcp_proto::server::MemoryConsumptionStore;
    let runs = Arc::clone(runs);
    example::server_with(move |c: &mut ServerConfig| {
        c.tools.push(deploy(runs));
        c.state_codec = Box::new(
            codec(KeyRing::new("k1", [1; 32]).unwrap())
                .consumption_store(Box::new(MemoryConsumptionStore::new(capacity))),
        );
    })
}

/// Sends one modern `tools/call` and returns the response.
fn call(server: &mut Server, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let now = Instant::ZERO;
    server.handle_json(now, &serde_json::to_vec(&request).unwrap());
    let mut out = Vec::new();
    while server.poll_transmit(now, &mut out).is_some() {}
    let line = out.split(|b| *b == b'\n').next().unwrap();
    serde_json::from_slice(line).unwrap()
}

fn first_round(server: &mut Server) -> String {
    let reply = call(server, json!({"name": "deploy", "arguments": {}}));
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    reply["result"]["requestState"].as_str().unwrap().to_owned()
}

fn retry(server: &mut Server, state: &str, answers: Value) -> Value {
    call(
        server,
        json!({"name": "deploy", "arguments": {}, "requestState": state,
               "inputResponses": answers}),
    )
}

fn accept() -> Value {
    json!({"ok": {"action": "accept", "content": {"yes": true}}})
}

/// A retry whose `inputResponses` is refused (`-32602`, naming the bad answer: decision 54)
/// never ran the handler, so nothing was used: the same state, sent again with a valid
/// answer, must resume the call. Today the state is opened (and its nonce consumed)
/// before the answers are checked, so a client's typo burns the state for good and the
/// corrected retry is refused "already used": the user must be asked again from the start.
#[test]
fn a_refused_input_response_does_not_burn_a_single_use_state() {
    let runs = Arc::new(AtomicU32::new(0));
    let mut s = server(&runs);
    let state = first_round(&mut s);
    let bad = retry(&mut s, &state, json!({"ok": "yes"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("inputResponses.ok"),
        "{bad}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let good = retry(&mut s, &state, accept());
    assert_eq!(
        good["result"]["content"][0]["text"], "deployed",
        "a retry refused for its answers consumed the single-use state: {good}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// `Server::set_state_codec` is documented as "how a key ring is rotated (a
/// `SealedStateCodec` over a ring that still holds the previous keys keeps opening the
/// states they sealed). Nothing else changes." Decision 83 rotates keys exactly so. But
/// the new codec starts with an empty consumption store: a single-use state used before
/// the rotation, still sealed under a key the new ring opens, is accepted again and the
/// tool's effect repeats (at most once is decision 33's promise).
#[test]
fn rotating_keys_through_set_state_codec_keeps_single_use() {
    let runs = Arc::new(AtomicU32::new(0));
    let mut s = server(&runs);
    let state = first_round(&mut s);
    let first = retry(&mut s, &state, accept());
    assert_eq!(first["result"]["content"][0]["text"], "deployed", "{first}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // The documented two-step rotation: k2 opens first, k1 keeps opening.
    let mut ring = KeyRing::new("k1", [1; 32]).unwrap();
    ring.add_opening("k2", [2; 32]).unwrap();
    s.set_state_codec(Box::new(codec(ring)));

    let replay = retry(&mut s, &state, accept());
    assert_eq!(
        replay["error"]["message"], "Invalid requestState: already used",
        "a used single-use state opened again after the key ring was swapped in: {replay}"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the tool's effect ran twice"
    );
}

/// A single-use state the store of used states cannot record (here: full) is refused,
/// at most once winning over availability, but the client is told the server's trouble
/// (`-32603`, naming the store, "retry later"), not that its state was "already used":
/// it did nothing wrong, and its state was never consumed.
#[test]
fn a_full_store_of_used_states_is_the_servers_trouble_not_a_replay() {
    let runs = Arc::new(AtomicU32::new(0));
    let mut s = server_with_store(&runs, 0);
    let state = first_round(&mut s);
    let refused = retry(&mut s, &state, accept());
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("full") && !message.contains("already used"),
        "{refused}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// The store of used states is shared by every client of the server. One principal
/// that uses single-use states as fast as it can fills its own share of the store and
/// is then refused (`-32603`, "retry later") until its states expire; another
/// principal's single-use state is still recorded and its call runs. It used to fill the
/// whole store, and every single-use tool refused every client for the states' lifetime.
#[test]
fn one_principal_filling_the_store_of_used_states_refuses_only_itself() {
    let runs = Arc::new(AtomicU32::new(0));
    let mut s = server_with_store(&runs, 8);
    s.set_principal(Some("mallory".to_owned()));
    let mut refused = None;
    for _ in 0..8 {
        let state = first_round(&mut s);
        let reply = retry(&mut s, &state, accept());
        if reply.get("error").is_some() {
            refused = Some(reply);
            break;
        }
    }
    s.set_principal(Some("alice".to_owned()));
    let state = first_round(&mut s);
    let alice = retry(&mut s, &state, accept());
    assert_eq!(
        alice["result"]["content"][0]["text"], "deployed",
        "another principal filled the store of used states: {alice}"
    );
    let refused = refused.expect("mallory is refused once its share is full");
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("share") && message.contains("retry later"),
        "{refused}"
    );
}
