//! Version and era negotiation against servers whose answers disagree with what they
//! said before, or that speak out of turn while the era is still being settled.

use std::time::Duration;

use mcp_proto::client::{CallError, CallRequest, ClientConfig, Event};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::{Era, EraMode, ProtocolVersion};
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

/// A legacy server that echoes whichever of 2025-06-18 and 2025-11-25 it is offered.
fn echoing_legacy_server(req: &SeenRequest) -> Reply {
    match req.rpc_method() {
        "initialize" => {
            let asked = req.body["params"]["protocolVersion"].clone();
            Reply::json(
                200,
                &json!({"jsonrpc":"2.0","id":req.body["id"],"result":{
                    "protocolVersion": asked,"capabilities":{},
                    "serverInfo":{"name":"s","version":"1"}}}),
            )
        }
        "" => Reply::accepted(),
        _ => Reply::with_body(404, &[], ""),
    }
}

/// The era cache keeps the version a connection settled on. Once an origin counter-
/// offered 2025-06-18 (an older deployment, a proxy in front of it, a server that lied
/// once), every later connection through the cache opens with `initialize` offering
/// 2025-06-18 instead of the newest version the client speaks, and a server that echoes
/// the client's offer (as every SDK server does) keeps the client on the old version for
/// good: the downgrade is recorded again on each connection. The lifecycle says the
/// version a client offers in `initialize` SHOULD be the latest it supports; what the
/// cache is for is skipping the probe (the era), not pinning the version.
#[test]
fn a_cached_legacy_verdict_still_offers_the_newest_legacy_version() {
    let known = Some((Era::Legacy, ProtocolVersion::V2025_06_18));
    let config = ClientConfig::new("era-cache-test", "1.0")
        .era_mode(EraMode::Auto)
        .known_era(known);
    let mut sim = HttpSim::new(config, echoing_legacy_server);
    sim.connect();
    let init = sim.with_method("initialize");
    assert_eq!(init.len(), 1, "one initialize, no probe");
    assert_eq!(
        init[0].body["params"]["protocolVersion"], "2025-11-25",
        "the initialize that follows a cached legacy verdict offers {}",
        init[0].body["params"]["protocolVersion"]
    );
    let version = sim.events.iter().find_map(|e| match e {
        Event::Connected(d) => Some(d.protocol_version),
        _ => None,
    });
    assert_eq!(version, Some(ProtocolVersion::V2025_11_25));
}

/// A stdio server answering `server/discover` with a request of its own first (an
/// `elicitation/create`), then with a modern discover result. Before the era is
/// settled no server may ask the user anything: a 2026-07-28 server never sends
/// requests, and a legacy one has not even been initialized. The request is refused
/// like any other a modern server sends.
fn asks_before_answering_the_probe() -> Scripted<impl FnMut(&Value) -> Vec<String>> {
    Scripted::new(|msg: &Value| match msg["method"].as_str() {
        Some("server/discover") => vec![
            json!({"jsonrpc":"2.0","id":"ask-1","method":"elicitation/create","params":{
                "message":"Your password, please","requestedSchema":{"type":"object",
                "properties":{"password":{"type":"string"}}}}})
            .to_string(),
            json!({"jsonrpc":"2.0","id":msg["id"],"result":{"resultType":"complete",
                "supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},
                "ttlMs":0,"cacheScope":"public"}})
            .to_string(),
        ],
        // Every call hangs: only the client's own deadline can end it.
        _ => Vec::new(),
    })
}

#[test]
fn a_server_request_before_the_era_is_settled_is_refused() {
    let config =
        ClientConfig::new("era-test", "1.0").capabilities(ClientCapabilities::with_elicitation());
    let mut sim = Sim::new(config, asks_before_answering_the_probe());
    sim.connect();
    sim.step();
    assert!(
        sim.events.iter().any(|e| matches!(e, Event::Connected(_))),
        "connected: {:?}",
        sim.events
    );
    let asked: Vec<_> = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::InputRequested { .. }))
        .collect();
    assert!(
        asked.is_empty(),
        "a request that came before the era was settled reached the user: {asked:?}"
    );
    let answer = sim.sent.iter().find(|m| m["id"] == "ask-1");
    assert!(
        answer.is_some_and(|a| a.get("error").is_some()),
        "the request is refused with an error, got {answer:?}"
    );
}

/// The same server, and a client that leaves the surfaced input unanswered (nobody is
/// there to answer, or the application ignores input from servers it cannot place):
/// the input hold meant for a legacy server waiting on its user freezes every call's
/// deadline, so a call to the modern server, which never answers, never ends.
#[test]
fn a_request_before_the_era_is_settled_does_not_hold_call_deadlines() {
    let config =
        ClientConfig::new("era-test", "1.0").capabilities(ClientCapabilities::with_elicitation());
    let mut sim = Sim::new(config, asks_before_answering_the_probe());
    sim.connect();
    sim.step();
    let call = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("echo", json!({"text":"hi"})).timeout(Duration::from_secs(5)),
        )
        .expect("call");
    let start = sim.now;
    for _ in 0..20 {
        sim.step();
        if sim.completion(call).is_some() {
            break;
        }
        sim.advance(Duration::from_secs(1));
    }
    let outcome = sim.completion(call);
    assert!(
        matches!(outcome, Some(Err(CallError::Timeout(_)))),
        "after {:?} the call with a 5 s timeout is {outcome:?}",
        sim.now.saturating_duration_since(start)
    );
}
