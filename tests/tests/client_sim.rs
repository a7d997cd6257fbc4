//! Deterministic simulations: the client machine against the bundled server machine and
//! against scripted servers, on a fake clock.

use std::time::Duration;

use mcp_proto::client::{
    AcceptDefaults, CallError, CallId, CallRequest, ClientConfig, CloseReason, ConnId,
    ConnectionState, EXIT_DRAIN, Event, InputAnswer, LineProblem, MAX_QUOTED_LINE_BYTES, PeerError,
    STOPPED_READING_DRAIN, Transmit, TransportFailure, TransportFailureKind,
};
use mcp_proto::jsonrpc::{DecodeError, Message};
use mcp_proto::limits::Limits;
use mcp_proto::model::ClientCapabilities;
use mcp_proto::server::example;
use mcp_proto::version::{Era, EraMode, ProtocolVersion};
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("sim", "1.0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation())
}

fn ready(sim: &Sim) -> (Era, ProtocolVersion) {
    match sim.client.state() {
        ConnectionState::Ready(e, v) => (e, v),
        other => panic!("not ready: {other:?}; events {:?}", sim.events),
    }
}

fn closed_reason(sim: &Sim) -> Option<CloseReason> {
    sim.events.iter().find_map(|e| match e {
        Event::Closed { reason } => Some(reason.clone()),
        _ => None,
    })
}

/// A client connected to the example server, with a `hang` call started (not yet sent).
fn hanging_call() -> (Sim, CallId) {
    let mut sim = Sim::new(config(EraMode::Auto), example::server());
    sim.connect();
    let hang = CallRequest::call_tool("hang", json!({}));
    let id = sim.client.call(sim.now, hang).unwrap();
    (sim, id)
}

/// The answer of a legacy server to `initialize`: 2025-11-25, no capabilities.
fn legacy_init(m: &Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"protocolVersion":"2025-11-25",
        "capabilities":{},"serverInfo":{"name":"s","version":"1"}}})
    .to_string()
}

/// The answer of a modern server to `server/discover`.
fn discover_ok(m: &Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"complete",
        "supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}})
    .to_string()
}

fn text_of(out: &mcp_proto::client::CallOutput) -> String {
    out.tool_result().expect("tool result").text()
}

// ----- negotiation --------------------------------------------------------------------

#[test]
fn auto_reaches_modern_with_a_dual_era_server() {
    let mut sim = Sim::new(config(EraMode::Auto), example::server());
    sim.connect();
    assert_eq!(ready(&sim), (Era::Modern, ProtocolVersion::V2026_07_28));
    assert_eq!(sim.sent[0]["method"], "server/discover");
    assert!(sim.sent_with_method("initialize").is_empty());
    let details = sim.client.server().unwrap();
    assert_eq!(details.server_info.as_ref().unwrap().name, "mcp-example");
    // Every modern request carries the per-request _meta.
    let out = sim
        .call(CallRequest::call_tool("add", json!({"a": 2, "b": 3})))
        .unwrap();
    assert_eq!(text_of(&out), "5");
    let call = sim.sent_with_method("tools/call")[0].clone();
    let meta = &call["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "sim");
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
}

#[test]
fn legacy_mode_never_probes() {
    let mut sim = Sim::new(config(EraMode::Legacy), example::server());
    sim.connect();
    assert_eq!(ready(&sim), (Era::Legacy, ProtocolVersion::V2025_11_25));
    assert_eq!(sim.sent[0]["method"], "initialize");
    assert_eq!(sim.sent[1]["method"], "notifications/initialized");
    assert!(sim.sent_with_method("server/discover").is_empty());
    let out = sim
        .call(CallRequest::call_tool("add", json!({"a": 2, "b": 3})))
        .unwrap();
    assert_eq!(text_of(&out), "5");
    let call = sim.sent_with_method("tools/call")[0].clone();
    assert!(
        call["params"].get("_meta").is_none(),
        "no _meta in legacy: {call}"
    );
}

#[test]
fn auto_falls_back_to_initialize_with_a_legacy_only_server() {
    let mut sim = Sim::new(config(EraMode::Auto), example::legacy_only());
    sim.connect();
    assert_eq!(ready(&sim), (Era::Legacy, ProtocolVersion::V2025_11_25));
    let methods: Vec<_> = sim.sent.iter().map(|m| m["method"].clone()).collect();
    assert_eq!(
        methods,
        [
            json!("server/discover"),
            json!("initialize"),
            json!("notifications/initialized")
        ]
    );
}

#[test]
fn modern_mode_fails_clearly_on_a_legacy_server() {
    let mut sim = Sim::new(config(EraMode::Modern), example::legacy_only());
    sim.connect();
    assert_eq!(closed_reason(&sim), Some(CloseReason::LegacyServer));
    assert!(sim.sent_with_method("initialize").is_empty());
}

/// A server that counter-offers `offer` in `initialize`.
fn counter_offering(offer: &'static str) -> impl mcp_tests::Peer {
    Scripted::new(move |m: &Value| {
        match m["method"].as_str() {
        Some("server/discover") => vec![
            json!({"jsonrpc":"2.0","id":m["id"],"error":{"code":-32601,"message":"nope"}})
                .to_string(),
        ],
        Some("initialize") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{
            "protocolVersion": offer, "capabilities": {}, "serverInfo": {"name":"old","version":"1"}}})
        .to_string()],
        _ => Vec::new(),
    }
    })
}

#[test]
fn counter_offers_are_checked() {
    let mut sim = Sim::new(config(EraMode::Auto), counter_offering("2025-06-18"));
    sim.connect();
    assert_eq!(ready(&sim), (Era::Legacy, ProtocolVersion::V2025_06_18));

    let mut sim = Sim::new(config(EraMode::Auto), counter_offering("2025-03-26"));
    sim.connect();
    assert!(
        matches!(closed_reason(&sim), Some(CloseReason::Negotiation(m)) if m.contains("2025-03-26")),
        "{:?}",
        sim.events
    );

    let opted_in = config(EraMode::Auto).accept_pre_2025_06_versions();
    let mut sim = Sim::new(opted_in, counter_offering("2025-03-26"));
    sim.connect();
    assert_eq!(ready(&sim), (Era::Legacy, ProtocolVersion::V2025_03_26));

    let mut sim = Sim::new(config(EraMode::Auto), counter_offering("2026-07-28"));
    sim.connect();
    assert!(matches!(
        closed_reason(&sim),
        Some(CloseReason::Negotiation(_))
    ));
}

#[test]
fn unsupported_version_error_means_retry_not_fallback() {
    let mut probes = 0;
    let peer = Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("server/discover") => {
            probes += 1;
            if probes == 1 {
                // Claims not to serve what we asked, and lists it: ask again once.
                vec![json!({"jsonrpc":"2.0","id":m["id"],"error":{"code":-32022,"message":"unsupported",
                    "data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}).to_string()]
            } else {
                vec![discover_ok(m)]
            }
        }
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    assert_eq!(ready(&sim), (Era::Modern, ProtocolVersion::V2026_07_28));
    assert_eq!(sim.sent_with_method("server/discover").len(), 2);
    assert!(sim.sent_with_method("initialize").is_empty());
    // New id for the second probe.
    let ids: Vec<_> = sim.sent.iter().map(|m| m["id"].clone()).collect();
    assert_ne!(ids[0], ids[1]);
}

#[test]
fn unsupported_version_listing_only_legacy_initializes_with_it() {
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![
            json!({"jsonrpc":"2.0","id":m["id"],"error":{"code":-32022,
            "message":"unsupported","data":{"supported":["2025-06-18"],"requested":"2026-07-28"}}})
            .to_string(),
        ],
        Some("initialize") => {
            assert_eq!(m["params"]["protocolVersion"], "2025-06-18");
            vec![
                json!({"jsonrpc":"2.0","id":m["id"],"result":{"protocolVersion":"2025-06-18",
                "capabilities":{},"serverInfo":{"name":"s","version":"1"}}})
                .to_string(),
            ]
        }
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    assert_eq!(ready(&sim), (Era::Legacy, ProtocolVersion::V2025_06_18));
}

#[test]
fn header_mismatch_on_the_probe_is_not_a_fallback() {
    let peer = Scripted::new(|m: &Value| {
        vec![
            json!({"jsonrpc":"2.0","id":m["id"],"error":{"code":-32021,"message":"need sampling",
            "data":{"requiredCapabilities":{"sampling":{}}}}})
            .to_string(),
        ]
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    let Some(CloseReason::Refused(e)) = closed_reason(&sim) else {
        panic!("{:?}", sim.events)
    };
    assert_eq!(e.code, -32021);
    assert_eq!(
        e.data.unwrap()["requiredCapabilities"],
        json!({"sampling":{}})
    );
    assert!(sim.sent_with_method("initialize").is_empty());
}

#[test]
fn a_silent_probe_falls_back_after_the_probe_timeout() {
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    let start = sim.now;
    sim.connect();
    assert_eq!(ready(&sim).0, Era::Legacy);
    assert_eq!(sim.now - start, Limits::default().probe_timeout);
}

/// A connect budget as short as the probe window (`mcp --timeout 2`): the probe takes
/// at most half of it, so the `initialize` fallback is still sent and answered.
#[test]
fn a_short_connect_budget_leaves_the_fallback_its_time() {
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        _ => Vec::new(),
    });
    let mut limits = Limits::default();
    limits.connect_timeout = Duration::from_secs(2);
    limits.initialize_timeout = Duration::from_secs(2);
    let mut sim = Sim::new(config(EraMode::Auto).limits(limits), peer);
    let start = sim.now;
    sim.connect();
    assert_eq!(ready(&sim).0, Era::Legacy);
    assert_eq!(
        sim.now - start,
        Duration::from_secs(1),
        "half of the budget"
    );
}

/// A modern-only server whose first `server/discover` goes unanswered (slow to start,
/// answering only `answered_probes` of them) and which refuses `initialize` with -32022.
fn slow_modern_server(answer_from_probe: usize) -> impl mcp_tests::Peer {
    let mut probes = 0;
    Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("server/discover") => {
            probes += 1;
            if probes >= answer_from_probe {
                vec![discover_ok(m)]
            } else {
                Vec::new()
            }
        }
        Some("initialize") => vec![
            json!({"jsonrpc":"2.0","id":m["id"],"error":{"code":-32022,
            "message":"serving 2026-07-28 only",
            "data":{"requested":"2025-11-25","supported":["2026-07-28"]}}})
            .to_string(),
        ],
        _ => Vec::new(),
    })
}

#[test]
fn a_modern_server_slow_to_answer_the_probe_is_probed_again_after_refusing_initialize() {
    let mut sim = Sim::new(config(EraMode::Auto), slow_modern_server(2));
    sim.connect();
    assert_eq!(ready(&sim).0, Era::Modern);
    assert_eq!(sim.sent_with_method("server/discover").len(), 2);
    assert_eq!(sim.sent_with_method("initialize").len(), 1);
}

#[test]
fn a_server_that_never_answers_a_probe_is_probed_again_only_once() {
    let mut sim = Sim::new(config(EraMode::Auto), slow_modern_server(usize::MAX));
    sim.connect();
    assert!(matches!(closed_reason(&sim), Some(CloseReason::Refused(e)) if e.code == -32022));
    assert_eq!(sim.sent_with_method("server/discover").len(), 2);
    assert_eq!(sim.sent_with_method("initialize").len(), 2);
}

#[test]
fn a_process_exit_during_the_probe_restarts_and_initializes() {
    // The first "process" dies on the probe; the second is a legacy-only server.
    let dying = Scripted::new(|_: &Value| Vec::new());
    let mut sim = Sim::new(config(EraMode::Auto), dying);
    sim.restarts.push(Box::new(example::legacy_only()));
    sim.step();
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.connect();
    assert_eq!(ready(&sim).0, Era::Legacy);
    assert_eq!(sim.respawns, 1);
    let out = sim
        .call(CallRequest::call_tool("add", json!({"a": 1, "b": 1})))
        .unwrap();
    assert_eq!(text_of(&out), "2");
}

// ----- calls --------------------------------------------------------------------------

#[test]
fn calls_made_while_connecting_are_queued_not_lost() {
    let mut sim = Sim::new(config(EraMode::Auto), example::server());
    let a = sim.client.call(sim.now, CallRequest::list_tools()).unwrap();
    let b = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("echo", json!({"text": "hi"})),
        )
        .unwrap();
    sim.run_until(|s| s.completion(a).is_some() && s.completion(b).is_some());
    assert!(sim.completion(a).unwrap().unwrap().tools().unwrap().len() >= 4);
    assert_eq!(text_of(&sim.completion(b).unwrap().unwrap()), "hi");
}

#[test]
fn timeouts_fail_the_call_and_cancel_it_on_the_wire() {
    for mode in [EraMode::Auto, EraMode::Legacy] {
        let mut sim = Sim::new(config(mode), example::server());
        sim.connect();
        let start = sim.now;
        let req = CallRequest::call_tool("hang", json!({})).timeout(Duration::from_secs(5));
        let err = sim.call(req).unwrap_err();
        assert_eq!(err, CallError::Timeout(Duration::from_secs(5)));
        assert_eq!(sim.now - start, Duration::from_secs(5));
        sim.step();
        let cancel = sim.sent_with_method("notifications/cancelled");
        let call = sim.sent_with_method("tools/call")[0].clone();
        assert_eq!(cancel.len(), 1);
        assert_eq!(cancel[0]["params"]["requestId"], call["id"]);
        // The connection is still fine.
        let out = sim
            .call(CallRequest::call_tool("echo", json!({"text": "x"})))
            .unwrap();
        assert_eq!(text_of(&out), "x");
    }
}

/// The calls a test makes, and what it gives each: an `echo` whose text is its index.
fn numbered_calls(sim: &mut Sim, count: usize, timeout: Duration) -> Vec<CallId> {
    (0..count)
        .map(|i| {
            let req = CallRequest::call_tool("echo", json!({"text": i.to_string()}));
            sim.client.call(sim.now, req.timeout(timeout)).unwrap()
        })
        .collect()
}

/// The calls in the order their `CallCompleted` events came.
fn completion_order(sim: &Sim) -> Vec<CallId> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::CallCompleted { call, .. } => Some(*call),
            _ => None,
        })
        .collect()
}

#[test]
fn many_calls_go_out_time_out_and_end_in_the_order_they_were_made() {
    // The machine keeps its calls in a hash map: whatever it does to all of them (write
    // those queued before the handshake, expire them, fail them on close) must still
    // follow the calls' order, or the events would depend on the hashing.
    let silent = |m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        _ => vec![],
    };
    let mut sim = Sim::new(config(EraMode::Legacy), Scripted::new(silent));
    let queued = numbered_calls(&mut sim, 40, Duration::from_secs(5));
    sim.connect();
    let texts: Vec<String> = sim
        .sent_with_method("tools/call")
        .iter()
        .map(|m| {
            m["params"]["arguments"]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let expected: Vec<String> = (0..40).map(|i: usize| i.to_string()).collect();
    assert_eq!(texts, expected, "queued calls written out of order");

    sim.advance(Duration::from_secs(5));
    assert_eq!(
        completion_order(&sim),
        queued,
        "timeouts reported out of order"
    );
    for call in &queued {
        let outcome = sim.completion(*call).unwrap();
        assert_eq!(
            outcome.unwrap_err(),
            CallError::Timeout(Duration::from_secs(5))
        );
    }

    sim.events.clear();
    let open = numbered_calls(&mut sim, 40, Duration::from_secs(60));
    sim.step();
    sim.client.close(sim.now);
    sim.drain();
    assert_eq!(
        completion_order(&sim),
        open,
        "closed calls reported out of order"
    );
}

#[test]
fn cancel_completes_once_and_tells_the_server() {
    let (mut sim, id) = hanging_call();
    sim.step();
    sim.client.cancel(sim.now, id).unwrap();
    assert!(
        sim.client.cancel(sim.now, id).is_err(),
        "second cancel is misuse"
    );
    sim.step();
    assert!(matches!(
        sim.completion(id),
        Some(Err(CallError::Cancelled))
    ));
    let completions = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::CallCompleted { call, .. } if *call == id))
        .count();
    assert_eq!(completions, 1);
    assert_eq!(sim.sent_with_method("notifications/cancelled").len(), 1);
}

#[test]
fn pagination_collects_every_page_and_is_bounded() {
    let mut sim = Sim::new(config(EraMode::Auto), example::paged(1));
    sim.connect();
    let out = sim.call(CallRequest::list_tools()).unwrap();
    let tools = out.tools().unwrap();
    assert!(tools.len() >= 4);
    assert_eq!(out.pages as usize, tools.len());
    assert_eq!(sim.sent_with_method("tools/list").len(), tools.len());

    let mut limits = Limits::default();
    limits.max_list_pages = 2;
    let mut sim = Sim::new(config(EraMode::Legacy).limits(limits), example::paged(1));
    sim.connect();
    let err = sim.call(CallRequest::list_tools()).unwrap_err();
    assert_eq!(err, CallError::ListTooLong("max_list_pages"));
}

#[test]
fn a_cursor_that_repeats_is_an_error_not_a_loop() {
    let peer = Scripted::new(|m: &Value| {
        match m["method"].as_str() {
        Some("initialize") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{
            "protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}})
        .to_string()],
        Some("tools/list") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{
            "tools":[], "nextCursor":"same"}})
        .to_string()],
        _ => Vec::new(),
    }
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    let err = sim.call(CallRequest::list_tools()).unwrap_err();
    assert!(matches!(err, CallError::InvalidResponse(m) if m.contains("same cursor")));
}

#[test]
fn progress_is_reported_for_calls_that_ask() {
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        Some("tools/call") => {
            let token = m["params"]["_meta"]["progressToken"].clone();
            assert!(!token.is_null(), "progress token sent");
            vec![
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":token,"progress":1,"total":2,"message":"half"}}).to_string(),
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":999,"progress":1}}).to_string(),
                json!({"jsonrpc":"2.0","id":m["id"],"result":{"content":[]}}).to_string(),
            ]
        }
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    let req = CallRequest::call_tool("slow", json!({})).with_progress();
    sim.call(req).unwrap();
    let progress: Vec<_> = sim
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Progress {
                progress,
                total,
                message,
                ..
            } => Some((*progress, *total, message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(progress, [(1.0, Some(2.0), Some("half".to_owned()))]);
}

// ----- input: legacy elicitation and modern MRTR --------------------------------------

#[test]
fn confirm_is_answered_through_the_same_api_in_both_eras() {
    for mode in [EraMode::Auto, EraMode::Legacy] {
        let mut sim = Sim::new(config(mode), example::server());
        sim.handler = Some(Box::new(AcceptDefaults));
        sim.connect();
        let out = sim
            .call(CallRequest::call_tool("confirm", json!({})))
            .unwrap();
        assert_eq!(
            text_of(&out),
            "accepted: proceed=true name=friend",
            "{mode:?}"
        );
        let asked = sim
            .events
            .iter()
            .filter(|e| matches!(e, Event::InputRequested { .. }))
            .count();
        assert_eq!(asked, 1, "{mode:?}");
        if mode == EraMode::Auto {
            assert_eq!(out.rounds, 1);
            let calls = sim.sent_with_method("tools/call");
            assert_eq!(calls.len(), 2);
            assert_ne!(calls[0]["id"], calls[1]["id"], "each round has a new id");
            assert!(calls[0]["params"].get("requestState").is_none());
            assert_eq!(calls[1]["params"]["name"], "confirm");
            assert!(calls[1]["params"]["inputResponses"].is_object());
        }
    }
}

#[test]
fn declining_reaches_the_tool() {
    let mut sim = Sim::new(config(EraMode::Auto), example::server());
    sim.connect();
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("confirm", json!({})))
        .unwrap();
    sim.run_until(|s| {
        s.events
            .iter()
            .any(|e| matches!(e, Event::InputRequested { .. }))
    });
    let input = sim
        .events
        .iter()
        .find_map(|e| match e {
            Event::InputRequested { input, call, .. } => {
                assert_eq!(*call, Some(id));
                Some(*input)
            }
            _ => None,
        })
        .unwrap();
    sim.client
        .respond(sim.now, input, InputAnswer::decline())
        .unwrap();
    assert!(
        sim.client
            .respond(sim.now, input, InputAnswer::decline())
            .is_err()
    );
    sim.run_until(|s| s.completion(id).is_some());
    assert_eq!(text_of(&sim.completion(id).unwrap().unwrap()), "declined");
}

/// A modern server that asks for input `rounds` times with an awkward requestState.
fn mrtr_server(rounds: usize) -> impl mcp_tests::Peer {
    let state = "opaque \"state\" with \\ escapes, ü and \u{1F600}".to_owned();
    let mut seen = 0;
    Scripted::new(move |m: &Value| {
        match m["method"].as_str() {
        Some("server/discover") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"complete",
            "supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}})
        .to_string()],
        Some("tools/call") => {
            if seen > 0 {
                assert_eq!(m["params"]["requestState"], json!(state), "verbatim");
                assert_eq!(m["params"]["inputResponses"]["k"]["action"], "accept");
            }
            seen += 1;
            if seen <= rounds {
                vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"input_required",
                    "inputRequests":{"k":{"method":"elicitation/create","params":{"message":"?",
                    "requestedSchema":{"type":"object","properties":{}}}}},
                    "requestState": state}})
                .to_string()]
            } else {
                vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"complete",
                    "content":[{"type":"text","text":format!("after {}", seen - 1)}]}})
                .to_string()]
            }
        }
        _ => Vec::new(),
    }
    })
}

#[test]
fn request_state_is_echoed_verbatim_over_several_rounds() {
    let mut sim = Sim::new(config(EraMode::Auto), mrtr_server(3));
    sim.handler = Some(Box::new(AcceptDefaults));
    sim.connect();
    let out = sim
        .call(CallRequest::call_tool("t", json!({"x": 1})))
        .unwrap();
    assert_eq!(text_of(&out), "after 3");
    assert_eq!(out.rounds, 3);
    let ids: Vec<_> = sim
        .sent_with_method("tools/call")
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids.len(), 4);
    assert_eq!(unique.len(), 4);
    for m in sim.sent_with_method("tools/call") {
        assert_eq!(
            m["params"]["arguments"],
            json!({"x": 1}),
            "original params kept"
        );
    }
}

#[test]
fn rounds_are_capped() {
    let mut sim = Sim::new(config(EraMode::Auto), mrtr_server(100));
    sim.handler = Some(Box::new(AcceptDefaults));
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert_eq!(err, CallError::TooManyRounds(10));
    // The first request and ten retries; the eleventh input_required ends it.
    assert_eq!(sim.sent_with_method("tools/call").len(), 11);
}

#[test]
fn undeclared_capabilities_are_refused() {
    // Legacy: a server that sends elicitation/create and sampling/createMessage although
    // the client declared neither gets the right error from the client itself, and the
    // user is never asked.
    let peer = Scripted::new(|m: &Value| {
        match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        Some("tools/call") => vec![
            json!({"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"?",
                "requestedSchema":{"type":"object","properties":{}}}}).to_string(),
            json!({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}).to_string(),
            json!({"jsonrpc":"2.0","id":"p1","method":"ping"}).to_string(),
            json!({"jsonrpc":"2.0","id":m["id"],"result":{"content":[]}}).to_string(),
        ],
        _ => Vec::new(),
    }
    });
    let no_caps = ClientConfig::new("sim", "1").era_mode(EraMode::Legacy);
    let mut sim = Sim::new(no_caps, peer);
    sim.connect();
    sim.call(CallRequest::call_tool("x", json!({}))).unwrap();
    sim.step();
    assert!(
        !sim.events
            .iter()
            .any(|e| matches!(e, Event::InputRequested { .. }))
    );
    let answer = |id: &str| {
        sim.sent
            .iter()
            .find(|m| m["id"] == id && m.get("method").is_none())
            .cloned()
            .unwrap_or_else(|| panic!("no answer to {id}: {:#?}", sim.sent))
    };
    assert_eq!(answer("e1")["error"]["code"], -32601);
    assert_eq!(answer("s1")["error"]["code"], -32601);
    assert_eq!(answer("p1")["result"], json!({}));

    // A form elicitation when only URL mode was declared: -32602 (2025-11-25 rule).
    let mut caps = ClientCapabilities::none();
    caps.elicitation_url = true;
    let peer = Scripted::new(|m: &Value| {
        match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        Some("tools/call") => vec![
            json!({"jsonrpc":"2.0","id":"f1","method":"elicitation/create","params":{"mode":"form","message":"?",
                "requestedSchema":{"type":"object","properties":{}}}}).to_string(),
            json!({"jsonrpc":"2.0","id":m["id"],"result":{"content":[]}}).to_string(),
        ],
        _ => Vec::new(),
    }
    });
    let mut sim = Sim::new(
        ClientConfig::new("sim", "1")
            .era_mode(EraMode::Legacy)
            .capabilities(caps),
        peer,
    );
    sim.connect();
    sim.call(CallRequest::call_tool("x", json!({}))).unwrap();
    sim.step();
    let refused = sim.sent.iter().find(|m| m["id"] == "f1").expect("answered");
    assert_eq!(refused["error"]["code"], -32602);

    // Modern: the server itself answers -32021, surfaced on the call.
    let no_caps = ClientConfig::new("sim", "1").era_mode(EraMode::Auto);
    let mut sim = Sim::new(no_caps, example::server());
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("confirm", json!({})))
        .unwrap_err();
    assert_eq!(err.code(), Some(-32021));
}

#[test]
fn an_input_request_of_an_undeclared_kind_fails_the_call() {
    let peer = Scripted::new(|m: &Value| {
        match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        Some("tools/call") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"input_required",
            "inputRequests":{"s":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}}}})
        .to_string()],
        _ => Vec::new(),
    }
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidInputRequest(m) if m.contains("sampling")));
}

#[test]
fn unknown_result_types_are_errors() {
    let peer = Scripted::new(|m: &Value| {
        match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        Some("tools/call") if m["params"]["name"] == "t" => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"task"}}).to_string()],
        Some("tools/call") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"bogus"}}).to_string()],
        Some("tools/list") => vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"input_required","requestState":"x"}}).to_string()],
        _ => Vec::new(),
    }
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    // A task for a request that did not declare the tasks extension.
    assert!(matches!(
        err,
        CallError::Task(mcp_proto::client::TaskProblem::NotOffered(m)) if m == "tools/call"
    ));
    let err = sim
        .call(CallRequest::call_tool("u", json!({})))
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidResponse(m) if m.contains("bogus")));
    let err = sim.call(CallRequest::list_tools()).unwrap_err();
    assert!(matches!(err, CallError::InvalidResponse(m) if m.contains("input_required")));
}

// ----- hostile servers ----------------------------------------------------------------

/// A legacy server that answers each tools/call with `lines` (with `ID` replaced by the
/// request id) followed by a proper result.
fn noisy_server(noise: &'static [&'static str]) -> impl mcp_tests::Peer {
    Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        Some("tools/call") => {
            let id = m["id"].to_string();
            let mut out: Vec<String> = noise.iter().map(|l| l.replace("ID", &id)).collect();
            out.push(
                json!({"jsonrpc":"2.0","id":m["id"],"result":{"content":[{"type":"text","text":"ok"}]}})
                    .to_string(),
            );
            out
        }
        _ => Vec::new(),
    })
}

#[test]
fn garbage_and_strangers_do_not_harm_calls() {
    let noise: &'static [&'static str] = &[
        "this is not json",
        "[1,2,3]",
        r#"{"jsonrpc":"1.0","id":9999,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":424242,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":"str","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}"#,
    ];
    let mut sim = Sim::new(config(EraMode::Legacy), noisy_server(noise));
    sim.connect();
    let out = sim.call(CallRequest::call_tool("x", json!({}))).unwrap();
    assert_eq!(text_of(&out), "ok");
    let peer_errors = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::PeerError(_)))
        .count();
    assert_eq!(peer_errors, 6, "{:#?}", sim.events);
    assert!(sim.events.iter().any(
        |e| matches!(e, Event::Log { call: None, message } if message.data.get() == "\"hi\"")
    ));
}

#[test]
fn a_duplicate_response_is_reported_and_ignored() {
    let mut first = true;
    let peer = Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        Some("tools/call") if first => {
            first = false;
            let r = json!({"jsonrpc":"2.0","id":m["id"],"result":{"content":[]}}).to_string();
            vec![r.clone(), r]
        }
        Some("tools/call") => {
            vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{"content":[]}}).to_string()]
        }
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    sim.call(CallRequest::call_tool("x", json!({}))).unwrap();
    sim.call(CallRequest::call_tool("x", json!({}))).unwrap();
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::PeerError(PeerError::DuplicateResponse(_))))
    );
}

#[test]
fn a_malformed_response_fails_only_its_call() {
    let noise: &'static [&'static str] =
        &[r#"{"jsonrpc":"2.0","id":ID,"result":{},"error":{"code":1,"message":"both"}}"#];
    let mut sim = Sim::new(config(EraMode::Legacy), noisy_server(noise));
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("x", json!({})))
        .unwrap_err();
    assert_eq!(
        err,
        CallError::Peer(PeerError::Malformed {
            error: DecodeError::ResultAndError
        })
    );
    // The real answer that follows is then a stranger, reported and otherwise ignored.
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::PeerError(PeerError::UnknownResponse(_)))),
        "{:#?}",
        sim.events
    );
    assert_eq!(
        sim.client.state(),
        ConnectionState::Ready(Era::Legacy, ProtocolVersion::V2025_11_25)
    );
}

#[test]
fn an_oversized_line_is_dropped_with_a_clear_error() {
    let mut limits = Limits::default();
    limits.max_message_bytes = 1024;
    let big: &'static str = Box::leak(
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{}"}}}}"#,
            "x".repeat(5000)
        )
        .into_boxed_str(),
    );
    let noise: &'static [&'static str] = Box::leak(vec![big].into_boxed_slice());
    let mut sim = Sim::new(config(EraMode::Legacy).limits(limits), noisy_server(noise));
    sim.connect();
    let out = sim.call(CallRequest::call_tool("x", json!({}))).unwrap();
    assert_eq!(text_of(&out), "ok");
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::PeerError(PeerError::Oversized { seen, limit: 1024 }) if *seen > 1024))
    );
}

#[test]
fn a_server_exiting_mid_call_fails_the_call_and_closes() {
    let (mut sim, id) = hanging_call();
    sim.step();
    sim.client
        .handle_read(sim.now, ConnId::STDIO, b"{\"jsonrpc\":\"2.0\",\"id\":");
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.drain();
    let reason = CloseReason::ServerExited { truncated: 22 };
    assert!(matches!(sim.completion(id), Some(Err(CallError::Closed(r))) if r == reason));
    assert_eq!(closed_reason(&sim), Some(reason));
    assert!(
        matches!(sim.events.last(), Some(Event::Closed { .. })),
        "Closed is last"
    );
    assert!(sim.client.call(sim.now, CallRequest::list_tools()).is_err());
}

/// A server that exits while a process it started keeps its stdout open: what it wrote
/// before is still read during [`EXIT_DRAIN`], then the stdout counts as ended and the
/// call in flight fails with the exit instead of waiting for its deadline (the 30 s of a
/// handshake, or a call's timeout).
#[test]
fn a_server_whose_exit_leaves_its_stdout_open_ends_after_the_drain() {
    let (mut sim, hang) = hanging_call();
    let listed = sim.client.call(sim.now, CallRequest::list_tools()).unwrap();
    // Both requests reach the server; its answer to tools/list is still in the pipe
    // when the exit is reported.
    let mut wire = Vec::new();
    while let Some(t) = sim.client.poll_transmit(sim.now, &mut wire) {
        if let Transmit::Write { conn, len } = t {
            sim.client.handle_written(sim.now, conn, len);
        }
    }
    sim.peer.handle(sim.now, &wire);
    let mut answer = Vec::new();
    sim.peer.transmit(&mut answer);
    assert!(!answer.is_empty(), "the server answered tools/list");
    sim.client.handle_process_exited(sim.now);
    let exited = sim.now;
    assert_eq!(sim.client.poll_timeout(), Some(exited + EXIT_DRAIN));
    sim.now = exited + EXIT_DRAIN / 2;
    sim.client.handle_read(sim.now, ConnId::STDIO, &answer);
    sim.client.handle_timeout(sim.now);
    sim.drain();
    assert!(
        matches!(sim.completion(listed), Some(Ok(_))),
        "{:?}",
        sim.events
    );
    assert!(
        sim.completion(hang).is_none(),
        "not ended before the drain is over"
    );
    assert_eq!(closed_reason(&sim), None);

    sim.now = exited + EXIT_DRAIN;
    sim.client.handle_timeout(sim.now);
    sim.step();
    let reason = CloseReason::ServerExited { truncated: 0 };
    assert!(
        matches!(sim.completion(hang), Some(Err(CallError::Closed(r))) if r == reason),
        "{:?}",
        sim.events
    );
    assert_eq!(closed_reason(&sim), Some(reason));
    assert!(sim.channel_closed, "the process is released");
}

/// The usual exit: stdout ends with the process, whichever is reported first; the exit
/// adds no deadline and no event of its own.
#[test]
fn an_exit_reported_with_the_end_of_stdout_changes_nothing() {
    for exit_first in [true, false] {
        let (mut sim, hang) = hanging_call();
        sim.step();
        if exit_first {
            sim.client.handle_process_exited(sim.now);
        }
        sim.client.handle_eof(sim.now, ConnId::STDIO);
        if !exit_first {
            sim.client.handle_process_exited(sim.now);
        }
        sim.step();
        let reason = CloseReason::ServerExited { truncated: 0 };
        assert!(matches!(sim.completion(hang), Some(Err(CallError::Closed(r))) if r == reason));
        let closes = sim
            .events
            .iter()
            .filter(|e| matches!(e, Event::Closed { .. }))
            .count();
        assert_eq!(closes, 1, "exit first: {exit_first}");
        assert_eq!(sim.client.poll_timeout(), None, "exit first: {exit_first}");
    }
}

/// A server that exits on the era probe and leaves its stdout open is restarted as one
/// that closed it would be; the fresh process inherits no drain of the old one's.
#[test]
fn an_exit_on_the_probe_with_stdout_held_open_restarts_the_server() {
    let mut sim = Sim::new(config(EraMode::Auto), Scripted::new(|_: &Value| Vec::new()));
    sim.restarts.push(Box::new(example::server()));
    sim.step();
    assert!(!sim.sent.is_empty(), "the probe was sent");
    sim.client.handle_process_exited(sim.now);
    sim.now += EXIT_DRAIN;
    sim.client.handle_timeout(sim.now);
    sim.connect();
    assert_eq!(sim.respawns, 1);
    assert_eq!(ready(&sim).0, Era::Legacy);
    let out = sim
        .call(CallRequest::call_tool("echo", json!({"text": "again"})))
        .unwrap();
    assert_eq!(text_of(&out), "again");
}

#[test]
fn too_many_unpolled_notifications_are_dropped_and_counted() {
    let mut limits = Limits::default();
    limits.max_queued_notifications = 3;
    let mut sim = Sim::new(config(EraMode::Legacy).limits(limits), example::server());
    sim.connect();
    let note = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n";
    for _ in 0..10 {
        sim.client.handle_read(sim.now, ConnId::STDIO, note);
    }
    sim.drain();
    let kept = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::Notification(_)))
        .count();
    assert_eq!(kept, 3);
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::NotificationsDropped { count: 7 }))
    );
}

// ----- chunking invariance ------------------------------------------------------------

/// The same server bytes, delivered whole, byte by byte and split at every point, give
/// the same events.
#[test]
fn events_do_not_depend_on_chunking() {
    use mcp_proto::client::Client;
    let transcript = concat!(
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#,
        "\r\n\n",
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{}}}}"#,
        "\ngarbage\n",
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}}"#,
        "\n"
    )
    .as_bytes();
    let run = |chunks: &[&[u8]]| -> Vec<String> {
        let now = mcp_proto::Instant::ZERO;
        let mut c = Client::stdio(config(EraMode::Legacy), now);
        c.call(now, CallRequest::call_tool("x", json!({}))).unwrap();
        let mut out = Vec::new();
        for chunk in chunks {
            c.handle_read(now, ConnId::STDIO, chunk);
        }
        while let Some(e) = c.poll_event() {
            out.push(format!("{e:?}"));
        }
        let mut wire = Vec::new();
        while c.poll_transmit(now, &mut wire).is_some() {}
        out.push(String::from_utf8(wire).unwrap());
        out
    };
    let whole = run(&[transcript]);
    assert!(
        whole.iter().any(|e| e.contains("CallCompleted")),
        "{whole:?}"
    );
    let bytes: Vec<&[u8]> = transcript.chunks(1).collect();
    assert_eq!(run(&bytes), whole);
    for i in 0..=transcript.len() {
        let (a, b) = transcript.split_at(i);
        assert_eq!(run(&[a, b]), whole, "split at {i}");
    }
}

/// Listing items reach the caller as the server wrote them: key order, spacing inside
/// the item and unknown fields intact, however many pages.
#[test]
fn listing_items_are_kept_verbatim() {
    const FIRST: &str = r#"{"name":"zeta","inputSchema":{"type":"object"},"x-vendor":{"b":1,"a":2},"description":"last key"}"#;
    const SECOND: &str = r#"{ "title" : "T", "name":"alpha", "inputSchema":{"type":"object"} }"#;
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        Some("tools/list") if m["params"].get("cursor").is_none() => vec![format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"complete","tools":[{FIRST}],"nextCursor":"p2"}}}}"#,
            m["id"]
        )],
        Some("tools/list") => vec![format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"complete","tools":[{SECOND}]}}}}"#,
            m["id"]
        )],
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    let out = sim.call(CallRequest::list_tools()).unwrap();
    let items: Vec<&str> = out.items.iter().map(|i| i.get()).collect();
    assert_eq!(items, [FIRST, SECOND]);
    let names: Vec<String> = out.tools().unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["zeta", "alpha"]);
}

// ----- unusable answers: too deep, too large ------------------------------------------

/// A legacy server whose `tools/call` answers are written by `answer` from the tool name
/// and the request id (as JSON text); `None` leaves the call unanswered.
fn answering(answer: fn(&str, &str) -> Option<String>) -> impl mcp_tests::Peer {
    Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        Some("tools/call") => {
            let name = m["params"]["name"].as_str().unwrap_or_default();
            answer(name, &m["id"].to_string()).into_iter().collect()
        }
        _ => Vec::new(),
    })
}

fn ok_answer(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok"}}]}}}}"#
    )
}

/// `[[…[]…]]`, `levels` deep.
fn nested(levels: usize) -> String {
    format!("{}{}", "[".repeat(levels), "]".repeat(levels))
}

fn too_deep(limit: usize) -> CallError {
    CallError::Peer(PeerError::Malformed {
        error: DecodeError::TooDeep { limit },
    })
}

/// The outcomes of two calls started together, in order.
fn two_calls(
    sim: &mut Sim,
    a: CallRequest,
    b: CallRequest,
) -> (
    Result<mcp_proto::client::CallOutput, CallError>,
    Result<mcp_proto::client::CallOutput, CallError>,
) {
    let a = sim.client.call(sim.now, a).unwrap();
    let b = sim.client.call(sim.now, b).unwrap();
    sim.run_until(|s| s.completion(a).is_some() && s.completion(b).is_some());
    (sim.completion(a).unwrap(), sim.completion(b).unwrap())
}

#[test]
fn a_response_nested_past_the_depth_limit_fails_its_call_at_once() {
    // 100 000 levels, with the id before the result and (as the TypeScript SDK writes
    // it) after.
    let peer = answering(|name, id| {
        let deep = nested(100_000);
        Some(match name {
            "id-first" => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"x":{deep}}}}}"#),
            "id-last" => format!(r#"{{"result":{{"x":{deep}}},"jsonrpc":"2.0","id":{id}}}"#),
            _ => ok_answer(id),
        })
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    let start = sim.now;
    for name in ["id-first", "id-last"] {
        let (deep, other) = two_calls(
            &mut sim,
            CallRequest::call_tool(name, json!({})),
            CallRequest::call_tool("fine", json!({})),
        );
        assert_eq!(deep.unwrap_err(), too_deep(64), "{name}");
        assert_eq!(text_of(&other.unwrap()), "ok");
    }
    assert_eq!(sim.now, start, "failed at once, not at a timeout");
    let reported = sim
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::PeerError(PeerError::Malformed {
                    error: DecodeError::TooDeep { limit: 64 }
                })
            )
        })
        .count();
    assert_eq!(reported, 2);
    assert_eq!(
        too_deep(64).to_string(),
        "unusable message from the server: malformed message: nesting deeper than 64 levels (max_nesting_depth)"
    );
}

/// `[{"":0},…]`, `n` one-member objects: seven bytes of text each, a map node of over
/// 700 bytes each once parsed.
fn one_member_objects(n: usize) -> String {
    format!("[{}]", vec![r#"{"":0}"#; n].join(","))
}

/// What the client reads into values is bounded as memory, estimated from the text
/// before decoding: an error whose `data` is 700 KB of one-member objects (about 80 MB
/// once parsed; the client decoded it whole) fails its call at once, naming the limit.
/// A result as large, kept verbatim, is delivered.
#[test]
fn an_error_too_large_once_parsed_fails_its_call_unparsed() {
    let peer = answering(|name, id| {
        let padding = one_member_objects(100_000);
        Some(match name {
            "error" => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-1,"message":"x","data":{padding}}}}}"#
            ),
            "result" => {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[],"x":{padding}}}}}"#)
            }
            _ => ok_answer(id),
        })
    });
    let mut limits = Limits::default();
    limits.max_parsed_bytes = 4 * 1024 * 1024;
    let mut sim = Sim::new(config(EraMode::Legacy).limits(limits), peer);
    sim.connect();
    let start = sim.now;
    let (error, other) = two_calls(
        &mut sim,
        CallRequest::call_tool("error", json!({})),
        CallRequest::call_tool("fine", json!({})),
    );
    let limit = 4 * 1024 * 1024;
    let expected = CallError::Peer(PeerError::Malformed {
        error: DecodeError::TooLargeOnceParsed { limit },
    });
    assert_eq!(error.unwrap_err(), expected);
    assert_eq!(text_of(&other.unwrap()), "ok");
    assert_eq!(sim.now, start, "failed at once, not at a timeout");
    assert!(
        expected.to_string().contains("(max_parsed_bytes)"),
        "{expected}"
    );
    let out = sim
        .call(CallRequest::call_tool("result", json!({})))
        .unwrap();
    assert!(out.result.get().len() > 700_000, "kept verbatim");
}

/// A result naming a member `$serde_json::private::RawValue` would be read, by whoever
/// parses it into values, as its string parsed as JSON: nesting and size past every
/// check made on the text. It fails its call; a `$` elsewhere does not.
#[test]
fn a_result_naming_a_member_as_the_parser_reserves_fails_its_call() {
    let peer = answering(|name, id| {
        Some(match name {
            "reserved" => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[],"x":{{"\u0024serde_json::private::RawValue":"[[[1]]]"}}}}}}"#
            ),
            _ => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"$5"}}],"$schema":"x"}}}}"#
            ),
        })
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("reserved", json!({})))
        .unwrap_err();
    let expected = CallError::Peer(PeerError::Malformed {
        error: DecodeError::ReservedName,
    });
    assert_eq!(err, expected);
    let out = sim.call(CallRequest::call_tool("fine", json!({}))).unwrap();
    assert_eq!(text_of(&out), "$5");
}

#[test]
fn a_response_exactly_at_the_depth_limit_is_accepted() {
    // The message object is level 1, `result` level 2: a result of 63 levels makes a
    // message of 64, the default limit; one more level is refused.
    let peer = answering(|name, id| {
        let levels = if name == "at-limit" { 63 } else { 64 };
        let result = nested(levels);
        Some(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
        ))
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    let out = sim
        .call(CallRequest::call_tool("at-limit", json!({})))
        .unwrap();
    assert_eq!(out.result.get(), nested(63), "kept verbatim");
    let err = sim
        .call(CallRequest::call_tool("over", json!({})))
        .unwrap_err();
    assert_eq!(err, too_deep(64));

    // The limit is configurable.
    let mut limits = Limits::default();
    limits.max_nesting_depth = 3;
    let peer = answering(|name, id| {
        let result = if name == "at-limit" { "[[]]" } else { "[[[]]]" };
        Some(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
        ))
    });
    let mut sim = Sim::new(config(EraMode::Legacy).limits(limits), peer);
    sim.connect();
    assert!(
        sim.call(CallRequest::call_tool("at-limit", json!({})))
            .is_ok()
    );
    let err = sim
        .call(CallRequest::call_tool("over", json!({})))
        .unwrap_err();
    assert_eq!(err, too_deep(3));
}

#[test]
fn the_depth_is_checked_where_decoding_alone_would_accept() {
    // A transport with its own framing decodes with `Message::decode`, which keeps
    // `result` verbatim at any depth; the machine checks before using it.
    let peer = answering(|_, _| None);
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    let start = sim.now;
    let call = sim
        .client
        .call(sim.now, CallRequest::call_tool("x", json!({})))
        .unwrap();
    sim.step();
    let id = sim.sent_with_method("tools/call")[0]["id"].clone();
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#,
        nested(100_000)
    );
    // Decoding alone does not bound depth (`result` is kept verbatim)…
    assert!(Message::decode(text.as_bytes()).is_ok());
    // …the machine checks before it decodes.
    sim.client
        .handle_read(sim.now, ConnId::STDIO, format!("{text}\n").as_bytes());
    sim.drain();
    assert_eq!(sim.completion(call).unwrap().unwrap_err(), too_deep(64));
    assert_eq!(sim.now, start);
    // `decode_with_max_depth` refuses the same text before decoding it.
    assert_eq!(
        Message::decode_with_max_depth(text.as_bytes(), 64).unwrap_err(),
        DecodeError::TooDeep { limit: 64 }
    );
}

fn small_messages() -> Limits {
    let mut limits = Limits::default();
    limits.max_message_bytes = 1024;
    limits
}

/// The size of an oversized line that failed a call with the 1024-byte limit.
fn oversized_size(outcome: Result<mcp_proto::client::CallOutput, CallError>) -> usize {
    match outcome {
        Err(CallError::Peer(PeerError::Oversized { seen, limit: 1024 })) if seen > 5000 => seen,
        other => panic!("not failed as oversized: {other:?}"),
    }
}

#[test]
fn an_oversized_answer_with_a_readable_id_fails_its_call_at_once() {
    // The id is read from the first bytes of the line, or from its last ones when the
    // server writes `result` first.
    let peer = answering(|name, id| {
        let big = "x".repeat(5000);
        Some(match name {
            "id-first" => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"text":"{big}"}}}}"#),
            "id-last" => format!(r#"{{"result":{{"text":"{big}"}},"jsonrpc":"2.0","id":{id}}}"#),
            _ => ok_answer(id),
        })
    });
    let mut sim = Sim::new(config(EraMode::Legacy).limits(small_messages()), peer);
    sim.connect();
    let start = sim.now;
    for name in ["id-first", "id-last"] {
        let (big, other) = two_calls(
            &mut sim,
            CallRequest::call_tool(name, json!({})),
            CallRequest::call_tool("fine", json!({})),
        );
        oversized_size(big);
        assert_eq!(text_of(&other.unwrap()), "ok", "{name}");
    }
    assert_eq!(sim.now, start, "failed at once, not at a timeout");
    let error = CallError::Peer(PeerError::Oversized {
        seen: 5045,
        limit: 1024,
    });
    assert_eq!(
        error.to_string(),
        "unusable message from the server: message of 5045 bytes exceeds the limit of 1024 bytes (max_message_bytes)"
    );
    let out = sim.call(CallRequest::call_tool("fine", json!({}))).unwrap();
    assert_eq!(text_of(&out), "ok");
}

#[test]
fn an_oversized_answer_that_names_its_call_fails_it_before_the_line_ends() {
    // The server starts an answer and never finishes the line: the call fails as soon as
    // the line crosses the limit, not at its timeout (the line might never end).
    let peer = answering(|name, id| (name != "endless").then(|| ok_answer(id)));
    let mut sim = Sim::new(config(EraMode::Legacy).limits(small_messages()), peer);
    sim.connect();
    let start = sim.now;
    let call = sim
        .client
        .call(sim.now, CallRequest::call_tool("endless", json!({})))
        .unwrap();
    sim.step();
    let id = sim.sent_with_method("tools/call")[0]["id"].clone();
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"text":""#);
    sim.client
        .handle_read(sim.now, ConnId::STDIO, head.as_bytes());
    for _ in 0..3 {
        sim.client
            .handle_read(sim.now, ConnId::STDIO, "x".repeat(1000).as_bytes());
    }
    sim.drain();
    match sim.completion(call) {
        Some(Err(CallError::Peer(PeerError::Oversized { seen, limit: 1024 }))) => {
            assert!(seen > 1024 && seen < 4000, "{seen}");
        }
        other => panic!("not failed as oversized while the line arrives: {other:?}"),
    }
    assert_eq!(sim.now, start, "failed at once, not at a timeout");
    // When the line does end, it is not reported a second time, and the next answer is read.
    sim.client
        .handle_read(sim.now, ConnId::STDIO, "x".repeat(50_000).as_bytes());
    sim.client.handle_read(sim.now, ConnId::STDIO, b"\"}}\n");
    let out = sim.call(CallRequest::call_tool("fine", json!({}))).unwrap();
    assert_eq!(text_of(&out), "ok");
    let reports = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::PeerError(PeerError::Oversized { .. })))
        .count();
    assert_eq!(reports, 1);
}

#[test]
fn an_oversized_answer_without_a_readable_id_fails_every_written_call_at_once() {
    // The id sits between the result and another member: neither end of the line shows
    // it, so any call in flight may have been the one answered.
    let peer = answering(|name, id| match name {
        "big" => Some(format!(
            r#"{{"jsonrpc":"2.0","result":{{"text":"{}"}},"id":{id},"extra":1}}"#,
            "x".repeat(5000)
        )),
        "silent" => None,
        _ => Some(ok_answer(id)),
    });
    let mut sim = Sim::new(config(EraMode::Legacy).limits(small_messages()), peer);
    sim.connect();
    let start = sim.now;
    let (big, silent) = two_calls(
        &mut sim,
        CallRequest::call_tool("silent", json!({})),
        CallRequest::call_tool("big", json!({})),
    );
    assert_eq!(oversized_size(big), oversized_size(silent));
    assert_eq!(sim.now, start, "failed at once, not at a timeout");
    // Calls that did not fail because of their own answer are cancelled on the wire.
    sim.step();
    assert_eq!(sim.sent_with_method("notifications/cancelled").len(), 2);
    // Later calls work.
    let out = sim.call(CallRequest::call_tool("fine", json!({}))).unwrap();
    assert_eq!(text_of(&out), "ok");
    assert_eq!(
        sim.client.state(),
        ConnectionState::Ready(Era::Legacy, ProtocolVersion::V2025_11_25)
    );
}

#[test]
fn calls_failed_by_an_unreadable_oversized_answer_fail_in_the_order_they_were_made() {
    let peer = answering(|name, id| match name {
        "big" => Some(format!(
            r#"{{"jsonrpc":"2.0","result":{{"text":"{}"}},"id":{id},"extra":1}}"#,
            "x".repeat(5000)
        )),
        _ => None,
    });
    let mut sim = Sim::new(config(EraMode::Legacy).limits(small_messages()), peer);
    sim.connect();
    sim.events.clear();
    let mut calls: Vec<CallId> = (0..30)
        .map(|_| {
            let silent = CallRequest::call_tool("silent", json!({}));
            sim.client.call(sim.now, silent).unwrap()
        })
        .collect();
    calls.push(
        sim.client
            .call(sim.now, CallRequest::call_tool("big", json!({})))
            .unwrap(),
    );
    sim.run_until(|s| calls.iter().all(|c| s.completion(*c).is_some()));
    assert_eq!(completion_order(&sim), calls);
}

#[test]
fn an_oversized_line_keeps_calls_not_yet_written() {
    // A call queued behind the oversized line's arrival (its request not yet polled for
    // writing) cannot have been answered by it.
    let peer = answering(|name, id| match name {
        "big" => Some(format!(
            r#"{{"jsonrpc":"2.0","result":{{"text":"{}"}},"id":{id},"extra":1}}"#,
            "x".repeat(5000)
        )),
        _ => Some(ok_answer(id)),
    });
    let mut sim = Sim::new(config(EraMode::Legacy).limits(small_messages()), peer);
    sim.connect();
    let big = sim
        .client
        .call(sim.now, CallRequest::call_tool("big", json!({})))
        .unwrap();
    // The request is written and answered with the oversized line, which is not read yet.
    let mut wire = Vec::new();
    sim.client.poll_transmit(sim.now, &mut wire);
    sim.peer.handle(sim.now, &wire);
    let later = sim
        .client
        .call(sim.now, CallRequest::call_tool("fine", json!({})))
        .unwrap();
    let mut answer = Vec::new();
    sim.peer.transmit(&mut answer);
    sim.client.handle_read(sim.now, ConnId::STDIO, &answer);
    sim.drain();
    oversized_size(sim.completion(big).unwrap());
    assert!(
        sim.completion(later).is_none(),
        "not written, so not failed"
    );
    sim.run_until(|s| s.completion(later).is_some());
    assert_eq!(text_of(&sim.completion(later).unwrap().unwrap()), "ok");
}

// ----- typed peer errors --------------------------------------------------------------

#[test]
fn protocol_breaches_are_typed_peer_errors() {
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        Some("tools/call") => vec![
            // The same server request twice while the first waits for the user.
            json!({"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"?",
                "requestedSchema":{"type":"object","properties":{}}}})
            .to_string(),
            json!({"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"?",
                "requestedSchema":{"type":"object","properties":{}}}})
            .to_string(),
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":"half"}})
                .to_string(),
            json!({"jsonrpc":"2.0","method":"notifications/progress"}).to_string(),
            json!({"jsonrpc":"2.0","id":m["id"],"result":{"content":[]}}).to_string(),
        ],
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    sim.call(CallRequest::call_tool("x", json!({}))).unwrap();
    sim.drain();
    let errors: Vec<&PeerError> = sim
        .events
        .iter()
        .filter_map(|e| match e {
            Event::PeerError(p) => Some(p),
            _ => None,
        })
        .collect();
    assert!(
        matches!(
            errors.as_slice(),
            [
                PeerError::ReusedRequestId { id },
                PeerError::MalformedNotification { method: m1, .. },
                PeerError::MalformedNotification { method: m2, detail },
            ] if *id == mcp_proto::RequestId::from("e1")
                && m1 == "notifications/progress"
                && m2 == "notifications/progress"
                && detail == "no params"
        ),
        "{errors:#?}"
    );
}

#[test]
fn http_peer_errors_read_as_before() {
    // The variants the Streamable HTTP transport reports keep the wording it used.
    use mcp_proto::sse::SseError;
    let cases = [
        (
            PeerError::Sse(SseError::LineTooLong { limit: 8 }),
            "event stream: event-stream line longer than 8 bytes (max_line_bytes); the line and its event were dropped",
        ),
        (
            PeerError::InitializedRefused {
                status: Some(500),
                detail: "boom".into(),
            },
            "notifications/initialized was not accepted (HTTP 500): boom",
        ),
        (
            PeerError::InitializedRefused {
                status: None,
                detail: "reset".into(),
            },
            "notifications/initialized was not accepted (no response): reset",
        ),
        (
            PeerError::MessageRefused {
                status: Some(400),
                detail: "bad".into(),
            },
            "a notification or response was refused with HTTP 400: bad",
        ),
        (
            PeerError::MessageRefused {
                status: None,
                detail: "reset".into(),
            },
            "a notification or response could not be sent: reset",
        ),
        (
            PeerError::SessionExpired,
            "the session expired (HTTP 404); starting a new one",
        ),
    ];
    for (error, text) in cases {
        assert_eq!(error.to_string(), text);
    }
}

// ----- the stdio channel: release and respawn ------------------------------------------

#[test]
fn the_stdio_channel_is_released_after_close_and_after_the_server_exits() {
    let mut sim = Sim::new(config(EraMode::Auto), example::server());
    sim.connect();
    sim.client.close(sim.now);
    sim.step();
    assert!(sim.channel_closed, "Transmit::Close after close()");
    assert!(sim.client.is_released());

    let mut sim = Sim::new(config(EraMode::Auto), example::server());
    sim.connect();
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.step();
    assert!(sim.channel_closed, "Transmit::Close once the server exited");
    assert!(matches!(
        closed_reason(&sim),
        Some(CloseReason::ServerExited { .. })
    ));
}

#[test]
fn a_server_that_cannot_be_started_again_closes_with_the_spawn_failure() {
    let mut client =
        mcp_proto::client::Client::stdio(config(EraMode::Auto), mcp_proto::Instant::ZERO);
    let now = mcp_proto::Instant::ZERO;
    let mut buf = Vec::new();
    while client.poll_transmit(now, &mut buf).is_some() {}
    // The server exits on the probe: the machine wants a fresh process…
    client.handle_eof(now, ConnId::STDIO);
    assert_eq!(
        client.poll_transmit(now, &mut buf),
        Some(mcp_proto::client::Transmit::Respawn)
    );
    // …which cannot be started.
    let failure = mcp_proto::client::TransportFailure::new(
        mcp_proto::client::TransportFailureKind::Spawn,
        "no such file",
    );
    client.handle_transport_error(now, ConnId::STDIO, failure.clone());
    assert_eq!(
        client.close_reason(),
        Some(&CloseReason::Transport(failure))
    );
    assert_eq!(
        client.poll_transmit(now, &mut buf),
        Some(mcp_proto::client::Transmit::Close {
            conn: ConnId::STDIO
        })
    );
    assert!(client.is_released());
}

/// A stdio server that stops reading its input (a write fails as closed) but runs on
/// with its stdout open: once its output has not ended within `STOPPED_READING_DRAIN`,
/// the session closes saying that the server stopped reading, with what the failed write
/// said, not that the server exited (it did not).
#[test]
fn a_server_that_stops_reading_closes_the_session_saying_so() {
    let (mut sim, id) = hanging_call();
    sim.step();
    let broken = "writing to the server's stdin: Broken pipe (os error 32)";
    let failure = TransportFailure::new(TransportFailureKind::Closed, broken);
    sim.client
        .handle_transport_error(sim.now, ConnId::STDIO, failure);
    sim.advance(STOPPED_READING_DRAIN - Duration::from_millis(1));
    assert!(
        sim.completion(id).is_none(),
        "the server may still end its output"
    );
    sim.advance(Duration::from_millis(1));
    let reason = CloseReason::StoppedReading {
        detail: broken.to_owned(),
    };
    match sim.completion(id) {
        Some(Err(CallError::Closed(r))) => assert_eq!(r, reason),
        other => panic!("{other:?}"),
    }
    assert_eq!(closed_reason(&sim), Some(reason.clone()));
    let text = reason.to_string();
    assert!(
        text.contains("stopped reading its input") && text.contains("Broken pipe"),
        "{text}"
    );
    sim.step();
    assert!(sim.channel_closed);

    // A server whose output ends within the window exited: it is said so.
    let (mut sim, id) = hanging_call();
    sim.step();
    let failure = TransportFailure::new(TransportFailureKind::Closed, broken);
    sim.client
        .handle_transport_error(sim.now, ConnId::STDIO, failure);
    sim.advance(Duration::from_millis(10));
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.drain();
    assert!(matches!(
        sim.completion(id),
        Some(Err(CallError::Closed(CloseReason::ServerExited { .. })))
    ));
}

#[test]
fn connecting_has_one_deadline_however_many_steps_it_takes() {
    // A server that never answers: the probe times out (legacy evidence), then
    // `initialize` waits. Each step alone would fit; together they get the total.
    let silent = Scripted::new(|_: &Value| Vec::new());
    let mut limits = Limits::default();
    limits.probe_timeout = Duration::from_secs(3);
    limits.initialize_timeout = Duration::from_secs(30);
    limits.connect_timeout = Duration::from_secs(5);
    let mut sim = Sim::new(config(EraMode::Auto).limits(limits), silent);
    let start = sim.now;
    sim.connect();
    assert_eq!(
        sim.now - start,
        Duration::from_secs(5),
        "the total, not 3 + 30"
    );
    assert_eq!(
        closed_reason(&sim),
        Some(CloseReason::ConnectTimeout(Duration::from_secs(5)))
    );
    assert_eq!(
        sim.sent_with_method("initialize").len(),
        1,
        "it did fall back"
    );
}

/// A server that prints its log lines to stdout (the commonest mistake of a stdio
/// server) never connects; the machine keeps the first such line, clipped and escaped,
/// so that the failure can say why.
#[test]
fn the_first_log_line_on_stdout_is_kept_to_explain_a_failed_connect() {
    let mut n = 0;
    let logging = Scripted::new(move |_: &Value| {
        n += 1;
        vec![format!(
            "Server v1.2 starting on stdio... \u{1b}]0;pwned\u{7} run {n}"
        )]
    });
    let mut limits = Limits::default();
    limits.connect_timeout = Duration::from_secs(5);
    let mut sim = Sim::new(config(EraMode::Auto).limits(limits), logging);
    sim.connect();
    assert_eq!(
        closed_reason(&sim),
        Some(CloseReason::ConnectTimeout(Duration::from_secs(5)))
    );
    assert!(
        sim.sent_with_method("initialize").len() == 1,
        "two lines seen"
    );
    let line = sim.client.unreadable_line().expect("the line is kept");
    assert_eq!(line.problem, LineProblem::NotJson);
    // The first one, with the escape sequence made harmless.
    assert_eq!(
        line.start,
        r"Server v1.2 starting on stdio... \u{1b}]0;pwned\u{7} run 1"
    );
    let text = line.to_string();
    assert!(
        text.contains("not JSON") && text.contains("stderr"),
        "{text}"
    );
    assert!(!text.chars().any(char::is_control), "{text}");
}

/// The kept line names what is wrong with it: not UTF-8, JSON that is not JSON-RPC, over
/// `max_message_bytes`; only the first is kept, at most `MAX_QUOTED_LINE_BYTES` of it.
#[test]
fn an_unreadable_stdout_line_is_named_and_clipped() {
    let first_of = |limits: Limits, bytes: &[u8]| {
        let silent = Scripted::new(|_: &Value| Vec::new());
        let mut sim = Sim::new(config(EraMode::Legacy).limits(limits), silent);
        sim.step();
        assert!(sim.client.unreadable_line().is_none());
        sim.client.handle_read(sim.now, ConnId::STDIO, bytes);
        sim.drain();
        sim.client.unreadable_line().cloned().expect("kept")
    };
    let line = first_of(Limits::default(), b"\xff\xfeoops\nsecond line\n");
    assert_eq!(line.problem, LineProblem::NotUtf8);
    assert_eq!(line.start, r"\xff\xfeoops");
    assert!(line.to_string().contains("not UTF-8"), "{line}");

    let line = first_of(Limits::default(), b"{\"level\":\"info\",\"msg\":\"up\"}\n");
    assert_eq!(line.problem, LineProblem::NotJsonRpc(DecodeError::Version));
    assert_eq!(line.start, r#"{"level":"info","msg":"up"}"#);
    assert!(
        line.to_string().contains("not a JSON-RPC message"),
        "{line}"
    );

    let mut small = Limits::default();
    small.max_message_bytes = 1024;
    let long = format!("{}\n", "x".repeat(5000));
    let line = first_of(small, long.as_bytes());
    assert!(
        matches!(
            line.problem,
            LineProblem::OverLimit(PeerError::Oversized {
                seen: 5000,
                limit: 1024
            })
        ),
        "{line:?}"
    );
    assert_eq!(
        line.start,
        format!("{}…", "x".repeat(MAX_QUOTED_LINE_BYTES))
    );
    assert!(line.to_string().contains("max_message_bytes"), "{line}");
}

#[test]
fn the_pages_of_a_listing_share_its_timeout() {
    // Each page takes the server 2 s and names another: a 5 s listing ends at 5 s, not
    // after 64 pages of 2 s each.
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    let run = sim.answer_each_after(
        CallRequest::list_tools().timeout(Duration::from_secs(5)),
        "tools/list",
        Duration::from_secs(2),
        10,
        |id, n| json!({"jsonrpc":"2.0","id":id,"result":{"tools":[],"nextCursor":format!("c{n}")}}),
    );
    assert_eq!(
        run.outcome.unwrap_err(),
        CallError::Timeout(Duration::from_secs(5))
    );
    assert_eq!(run.answered, 2, "pages");
    assert_eq!(run.took, Duration::from_secs(6));
}

#[test]
fn a_cursor_that_is_not_a_string_fails_the_listing() {
    let peer = Scripted::new(|m: &Value| {
        match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        Some("tools/list") => vec![
            json!({"jsonrpc":"2.0","id":m["id"],"result":{"tools":[],"nextCursor":[0, 1, {"a": 2}]}})
                .to_string(),
        ],
        _ => Vec::new(),
    }
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    let err = sim.call(CallRequest::list_tools()).unwrap_err();
    assert_eq!(
        err,
        CallError::InvalidResponse("nextCursor must be a string".into())
    );
    assert_eq!(sim.sent_with_method("tools/list").len(), 1);
}
