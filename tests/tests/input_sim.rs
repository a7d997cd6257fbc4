//! Input requests (elicitation in form and URL mode, sampling, roots), logging and
//! caller `_meta`, in both eras, against scripted servers on a fake clock.

use mcp_proto::client::{
    ApiMisuse, CallError, CallRequest, ClientConfig, ConnId, Event, InputAnswer, InputHandler,
    InputId, InputRequest, LogLevel, PeerError, Root, SamplingResult,
};
use mcp_proto::limits::Limits;
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::{EraMode, ProtocolVersion};
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

fn legacy_init(m: &Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"protocolVersion":"2025-11-25",
        "capabilities":{"logging":{}},"serverInfo":{"name":"s","version":"1"}}})
    .to_string()
}

fn discover_ok(m: &Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"complete",
        "supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"logging":{}},"ttlMs":0,"cacheScope":"public"}})
    .to_string()
}

fn done(m: &Value, text: &str) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"content":[{"type":"text","text":text}]}})
        .to_string()
}

fn all_caps() -> ClientCapabilities {
    let mut caps = ClientCapabilities::with_elicitation();
    caps.elicitation_url = true;
    caps.sampling = true;
    caps.roots = true;
    caps
}

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("sim", "1")
        .era_mode(mode)
        .capabilities(all_caps())
}

/// A legacy server that sends `request` (a server→client request with id "q") when a
/// tool is called, and completes the call once the answer came back, echoing it.
fn legacy_asking(request: Value) -> impl mcp_tests::Peer {
    let mut call_id = Value::Null;
    Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        Some("tools/call") => {
            call_id = m["id"].clone();
            let mut r = request.clone();
            r["jsonrpc"] = json!("2.0");
            r["id"] = json!("q");
            vec![r.to_string()]
        }
        None if m["id"] == "q" => {
            let echo = m
                .get("result")
                .or(m.get("error"))
                .cloned()
                .unwrap_or(Value::Null);
            vec![done(&json!({"id": call_id}), &echo.to_string())]
        }
        _ => Vec::new(),
    })
}

/// A modern server that asks `inputs` (key → input request) in one round, then
/// completes echoing the `inputResponses` it got.
fn modern_asking(inputs: Value) -> impl mcp_tests::Peer {
    Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        Some("tools/call") if m["params"].get("inputResponses").is_none() => {
            vec![
                json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"input_required",
                "inputRequests": inputs, "requestState": "s1"}})
                .to_string(),
            ]
        }
        Some("tools/call") => vec![done(m, &m["params"]["inputResponses"].to_string())],
        _ => Vec::new(),
    })
}

fn asked(sim: &Sim) -> Vec<(InputId, InputRequest)> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::InputRequested { input, request, .. } => Some((*input, request.clone())),
            _ => None,
        })
        .collect()
}

fn text(out: &mcp_proto::client::CallOutput) -> Value {
    serde_json::from_str(&out.tool_result().unwrap().text()).unwrap()
}

/// Starts a tool call and runs until an input request (or the completion) arrives.
fn call_until_asked(sim: &mut Sim) -> mcp_proto::client::CallId {
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("t", json!({})))
        .unwrap();
    sim.run_until(|s| !asked(s).is_empty() || s.completion(id).is_some());
    id
}

fn schema() -> Value {
    json!({"type":"object","properties":{
        "name":{"type":"string","minLength":2},
        "n":{"type":"integer","default":7}},"required":["name"]})
}

// ----- deadlines while the server waits for input ----------------------------------------

/// A legacy server that asks for a form when a tool is called, and asks again each time
/// it gets an answer, never completing the call.
fn legacy_asking_forever() -> impl mcp_tests::Peer {
    let mut asked = 0;
    Scripted::new(move |m: &Value| {
        let ask = match m["method"].as_str() {
            Some("initialize") => return vec![legacy_init(m)],
            Some("tools/call") => true,
            None => m["id"].as_str().is_some_and(|id| id.starts_with('q')),
            _ => false,
        };
        if !ask {
            return Vec::new();
        }
        asked += 1;
        vec![
            json!({"jsonrpc":"2.0","id":format!("q{asked}"),"method":"elicitation/create",
            "params":{"message":"again?","requestedSchema":{"type":"object","properties":{}}}})
            .to_string(),
        ]
    })
}

fn one_second_calls(rounds: u32) -> ClientConfig {
    let mut limits = Limits::default();
    limits.request_timeout = std::time::Duration::from_secs(1);
    limits.max_input_rounds = rounds;
    config(EraMode::Legacy).limits(limits)
}

/// The input requests not yet answered.
fn unanswered(sim: &Sim, answered: usize) -> Vec<InputId> {
    asked(sim)
        .into_iter()
        .skip(answered)
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn a_person_answering_slowly_does_not_time_the_call_out() {
    let mut sim = Sim::new(
        one_second_calls(3),
        legacy_asking(json!({"method":"elicitation/create",
            "params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}})),
    );
    sim.connect();
    let id = call_until_asked(&mut sim);
    // Ten times the call's timeout passes while the user thinks.
    for _ in 0..10 {
        sim.advance(std::time::Duration::from_secs(1));
        sim.step();
    }
    assert!(sim.completion(id).is_none(), "the deadline is paused");
    let input = unanswered(&sim, 0)[0];
    let answer = InputAnswer::Result(json!({"action":"accept","content":{}}));
    sim.client.respond(sim.now, input, answer).unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    assert!(sim.completion(id).unwrap().is_ok());
}

#[test]
fn a_server_that_keeps_asking_cannot_hold_a_call_past_its_timeout() {
    use std::time::Duration;
    // Answered automatically, each answer taking 300 ms: the first three requests pause
    // the one-second deadline, from the fourth on it runs.
    let mut sim = Sim::new(one_second_calls(3), legacy_asking_forever());
    sim.connect();
    let start = sim.now;
    let id = call_until_asked(&mut sim);
    let mut answered = 0;
    while sim.completion(id).is_none() {
        assert!(
            answered < 100,
            "the server held the call through {answered} requests"
        );
        for input in unanswered(&sim, answered) {
            sim.advance(Duration::from_millis(300));
            answered += 1;
            // The call may have ended meanwhile, its inputs with it.
            let answer = InputAnswer::Result(json!({"action":"accept","content":{}}));
            let _ = sim.client.respond(sim.now, input, answer);
        }
        sim.step();
    }
    assert_eq!(
        sim.completion(id).unwrap().unwrap_err(),
        CallError::Timeout(Duration::from_secs(1))
    );
    // 1 s of its own plus the 0.9 s the first three answers took, give or take the
    // answer in progress when it fell due.
    let took = sim.now.saturating_duration_since(start);
    assert!(
        took >= Duration::from_millis(1900) && took <= Duration::from_millis(2200),
        "{took:?}"
    );
    assert!((6..=8).contains(&answered), "{answered} requests answered");
}

// ----- form elicitation ---------------------------------------------------------------

#[test]
fn a_form_answer_that_fails_its_schema_is_refused_and_defaults_are_applied() {
    let elicit = json!({"method":"elicitation/create","params":{"message":"who?","requestedSchema":schema()}});
    for mode in [EraMode::Legacy, EraMode::Auto] {
        let mut sim = if mode == EraMode::Legacy {
            Sim::new(config(mode), legacy_asking(elicit.clone()))
        } else {
            Sim::new(config(mode), modern_asking(json!({"f": elicit.clone()})))
        };
        sim.connect();
        let id = call_until_asked(&mut sim);
        let (input, _) = asked(&sim)[0].clone();
        let sent_before = sim.sent.len();
        for bad in [
            json!({"name":"a"}),
            json!({"n": 1}),
            json!({"name":"ada","n":"seven"}),
            json!({"name":"ada","extra":true}),
        ] {
            let bad = InputAnswer::accept(bad.as_object().unwrap().clone());
            let err = sim.client.respond(sim.now, input, bad).unwrap_err();
            assert!(
                matches!(err, ApiMisuse::InvalidAnswer(_)),
                "{mode:?}: {err:?}"
            );
        }
        sim.step();
        assert_eq!(sim.sent.len(), sent_before, "nothing sent for a bad answer");
        let good = InputAnswer::accept(json!({"name":"ada"}).as_object().unwrap().clone());
        sim.client.respond(sim.now, input, good).unwrap();
        sim.run_until(|s| s.completion(id).is_some());
        let out = sim.completion(id).unwrap().unwrap();
        let echoed = text(&out);
        let answer = if mode == EraMode::Legacy {
            echoed
        } else {
            echoed["f"].clone()
        };
        assert_eq!(
            answer,
            json!({"action":"accept","content":{"name":"ada","n":7}}),
            "{mode:?}"
        );
    }
}

/// `elicit` is refused without asking anyone, for a reason `why` recognises: with
/// -32602 to a legacy server, and declined (reported as `RequestRefused`) in a 2026 round,
/// where no per-entry error exists.
fn refused_in_both_eras(elicit: &Value, why: impl Fn(&str) -> bool) {
    let mut sim = Sim::new(config(EraMode::Legacy), legacy_asking(elicit.clone()));
    sim.connect();
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(text(&out)["code"], -32602);
    let message = text(&out)["message"].as_str().map(str::to_owned);
    assert!(message.as_deref().is_some_and(&why), "{message:?}");
    assert!(asked(&sim).is_empty());
    let mut sim = Sim::new(config(EraMode::Auto), modern_asking(json!({"f": elicit})));
    sim.connect();
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(text(&out), json!({"f":{"action":"decline"}}));
    assert!(asked(&sim).is_empty());
    assert!(sim.events.iter().any(|e| matches!(
        e,
        Event::PeerError(PeerError::RequestRefused { reason, .. }) if why(reason)
    )));
}

#[test]
fn an_unsupported_form_schema_is_refused_without_asking() {
    let elicit = json!({"method":"elicitation/create","params":{"message":"?",
        "requestedSchema":{"type":"object","properties":{"p":{"type":"string","pattern":"^a"}}}}});
    refused_in_both_eras(&elicit, |m| m.contains("pattern"));
}

#[test]
fn an_oversized_form_schema_is_refused_unread() {
    let choices: Vec<String> = (0..40_000).map(|i| format!("c{i}")).collect();
    let elicit = json!({"method":"elicitation/create","params":{"message":"?",
        "requestedSchema":{"type":"object","properties":{"p":{"type":"string","enum":choices}}}}});
    refused_in_both_eras(&elicit, |m| {
        m.contains("the requested schema is") && m.contains("(at most 262144)")
    });
}

// ----- sampling -----------------------------------------------------------------------

struct Sampler;

impl InputHandler for Sampler {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        match request {
            InputRequest::Sampling(p) => {
                assert_eq!(p.max_tokens, 64);
                assert_eq!(p.extra["temperature"], 0.5);
                InputAnswer::sampled(SamplingResult::text("test-model", "hello"))
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn sampling_is_answered_through_the_handler_in_both_eras() {
    let sample = json!({"method":"sampling/createMessage","params":{
        "messages":[{"role":"user","content":{"type":"text","text":"Say hello."}}],
        "maxTokens":64,"temperature":0.5}});
    for mode in [EraMode::Legacy, EraMode::Auto] {
        let mut sim = if mode == EraMode::Legacy {
            Sim::new(config(mode), legacy_asking(sample.clone()))
        } else {
            Sim::new(
                config(mode),
                modern_asking(json!({"sample": sample.clone()})),
            )
        };
        sim.handler = Some(Box::new(Sampler));
        sim.connect();
        let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
        let echoed = text(&out);
        let answer = if mode == EraMode::Legacy {
            echoed
        } else {
            echoed["sample"].clone()
        };
        assert_eq!(answer["model"], "test-model", "{mode:?}");
        assert_eq!(answer["content"]["text"], "hello");
        assert_eq!(answer["role"], "assistant");
        assert!(answer.get("resultType").is_none());
    }
}

#[test]
fn a_sampling_answer_must_be_a_create_message_result_and_bad_params_are_refused() {
    let sample = json!({"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}});
    let mut sim = Sim::new(config(EraMode::Legacy), legacy_asking(sample));
    sim.connect();
    let id = call_until_asked(&mut sim);
    let (input, _) = asked(&sim)[0].clone();
    let err = sim
        .client
        .respond(sim.now, input, InputAnswer::Result(json!({"content":"x"})))
        .unwrap_err();
    assert!(matches!(err, ApiMisuse::InvalidAnswer(_)));
    sim.client
        .respond(
            sim.now,
            input,
            InputAnswer::sampled(SamplingResult::text("m", "ok")),
        )
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());

    // Params without maxTokens: -32602, nobody asked.
    let bad = json!({"method":"sampling/createMessage","params":{"messages":[]}});
    let mut sim = Sim::new(config(EraMode::Legacy), legacy_asking(bad));
    sim.connect();
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(text(&out)["code"], -32602);
    assert!(asked(&sim).is_empty());
}

#[test]
fn sampling_with_tools_or_context_needs_the_sub_capability() {
    let with_tools = json!({"method":"sampling/createMessage","params":{"messages":[],
        "maxTokens":1,"tools":[{"name":"t","inputSchema":{"type":"object"}}]}});
    let with_context = json!({"method":"sampling/createMessage","params":{"messages":[],
        "maxTokens":1,"includeContext":"thisServer"}});
    for request in [with_tools.clone(), with_context.clone()] {
        // Not declared: -32602 to the server, nobody asked.
        let mut sim = Sim::new(config(EraMode::Legacy), legacy_asking(request.clone()));
        sim.connect();
        let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
        assert_eq!(text(&out)["code"], -32602, "{request}");
        assert!(
            text(&out)["message"]
                .as_str()
                .unwrap()
                .contains("did not declare sampling.")
        );
        assert!(asked(&sim).is_empty());

        // Declared: asked.
        let mut caps = all_caps();
        caps.sampling_tools = true;
        caps.sampling_context = true;
        let config = config(EraMode::Legacy).capabilities(caps);
        let mut sim = Sim::new(config, legacy_asking(request.clone()));
        sim.connect();
        let _ = call_until_asked(&mut sim);
        assert_eq!(asked(&sim).len(), 1, "{request}");
        let init = sim.sent_with_method("initialize")[0];
        assert_eq!(
            init["params"]["capabilities"]["sampling"],
            json!({"tools":{},"context":{}})
        );
    }
    // A 2026 input round is held to the same rule.
    let mut sim = Sim::new(
        config(EraMode::Auto),
        modern_asking(json!({ "s": with_tools })),
    );
    sim.connect();
    let id = call_until_asked(&mut sim);
    sim.run_until(|s| s.completion(id).is_some());
    assert!(asked(&sim).is_empty());
    assert!(sim.completion(id).unwrap().is_err());
}

#[test]
fn sampling_sub_capabilities_are_spelled_per_version() {
    let mut caps = ClientCapabilities::none();
    caps.sampling = true;
    caps.sampling_tools = true;
    caps.sampling_context = true;
    assert_eq!(
        caps.to_json(ProtocolVersion::V2025_06_18)["sampling"],
        json!({})
    );
    assert_eq!(
        caps.to_json(ProtocolVersion::V2025_11_25)["sampling"],
        json!({"tools":{},"context":{}})
    );
}

// ----- roots --------------------------------------------------------------------------

#[test]
fn configured_roots_are_answered_by_the_machine_in_both_eras() {
    let roots = vec![
        Root::new("file:///home/u/project").named("project"),
        Root::new("file:///tmp"),
    ];
    let expected =
        json!({"roots":[{"uri":"file:///home/u/project","name":"project"},{"uri":"file:///tmp"}]});
    let list = json!({"method":"roots/list"});
    for mode in [EraMode::Legacy, EraMode::Auto] {
        let cfg = ClientConfig::new("sim", "1")
            .era_mode(mode)
            .roots(roots.clone());
        let mut sim = if mode == EraMode::Legacy {
            Sim::new(cfg, legacy_asking(list.clone()))
        } else {
            Sim::new(cfg, modern_asking(json!({"roots": list.clone()})))
        };
        sim.connect();
        let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
        let echoed = text(&out);
        if mode == EraMode::Legacy {
            assert_eq!(echoed, expected);
            let init = sim.sent_with_method("initialize")[0];
            assert_eq!(
                init["params"]["capabilities"]["roots"],
                json!({"listChanged": true})
            );
        } else {
            assert_eq!(echoed["roots"], expected);
            let call = sim.sent_with_method("tools/call")[0];
            assert_eq!(
                call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["roots"],
                json!({}),
                "no listChanged in 2026"
            );
        }
        assert!(asked(&sim).is_empty(), "nobody asked: {mode:?}");
    }
}

#[test]
fn declared_roots_without_a_list_are_asked_and_checked() {
    let mut sim = Sim::new(
        config(EraMode::Legacy),
        legacy_asking(json!({"method":"roots/list"})),
    );
    sim.connect();
    let id = call_until_asked(&mut sim);
    let (input, request) = asked(&sim)[0].clone();
    assert!(matches!(request, InputRequest::Roots));
    let not_file = InputAnswer::roots(&[Root::new("https://example.com/")]);
    assert!(matches!(
        sim.client.respond(sim.now, input, not_file),
        Err(ApiMisuse::InvalidAnswer(_))
    ));
    let ok = InputAnswer::roots(&[Root::new("file:///srv")]);
    sim.client.respond(sim.now, input, ok).unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    let out = sim.completion(id).unwrap().unwrap();
    assert_eq!(text(&out), json!({"roots":[{"uri":"file:///srv"}]}));
}

#[test]
fn changing_roots_notifies_a_legacy_server_that_was_promised_it() {
    const CHANGED: &str = "notifications/roots/list_changed";
    let quiet = || {
        Scripted::new(|m: &Value| match m["method"].as_str() {
            Some("initialize") => vec![legacy_init(m)],
            Some("server/discover") => vec![discover_ok(m)],
            _ => Vec::new(),
        })
    };
    let roots = vec![Root::new("file:///a")];
    // Legacy with listChanged: one notification per change, none for the same list.
    let mut sim = Sim::new(
        ClientConfig::new("sim", "1")
            .era_mode(EraMode::Legacy)
            .roots(roots.clone()),
        quiet(),
    );
    sim.connect();
    sim.client.set_roots(sim.now, roots.clone()).unwrap();
    sim.step();
    assert!(sim.sent_with_method(CHANGED).is_empty(), "unchanged");
    sim.client
        .set_roots(sim.now, vec![Root::new("file:///b")])
        .unwrap();
    sim.step();
    assert_eq!(sim.sent_with_method(CHANGED).len(), 1);
    assert!(sim.sent_with_method(CHANGED)[0].get("id").is_none());

    // Modern: no such notification.
    let mut sim = Sim::new(
        ClientConfig::new("sim", "1")
            .era_mode(EraMode::Auto)
            .roots(roots.clone()),
        quiet(),
    );
    sim.connect();
    sim.client
        .set_roots(sim.now, vec![Root::new("file:///b")])
        .unwrap();
    sim.step();
    assert!(sim.sent_with_method(CHANGED).is_empty());

    // Legacy without listChanged declared: none either; without roots: refused.
    let mut caps = ClientCapabilities::none();
    caps.roots = true;
    let mut sim = Sim::new(
        ClientConfig::new("sim", "1")
            .era_mode(EraMode::Legacy)
            .capabilities(caps),
        quiet(),
    );
    sim.connect();
    sim.client
        .set_roots(sim.now, vec![Root::new("file:///b")])
        .unwrap();
    sim.step();
    assert!(sim.sent_with_method(CHANGED).is_empty());
    let mut sim = Sim::new(
        ClientConfig::new("sim", "1").era_mode(EraMode::Legacy),
        quiet(),
    );
    sim.connect();
    assert_eq!(
        sim.client.set_roots(sim.now, roots),
        Err(ApiMisuse::Undeclared("roots"))
    );
}

// ----- URL mode -----------------------------------------------------------------------

fn url_elicit(url: &str, id: Option<&str>) -> Value {
    let mut params = json!({"mode":"url","message":"Sign in","url":url});
    if let Some(id) = id {
        params["elicitationId"] = json!(id);
    }
    json!({"method":"elicitation/create","params":params})
}

#[test]
fn url_elicitations_pass_the_url_policy_before_anyone_sees_them() {
    // Shown: https, and http to loopback.
    for url in ["https://example.com/auth?x=1", "http://127.0.0.1:9999/form"] {
        let mut sim = Sim::new(
            config(EraMode::Legacy),
            legacy_asking(url_elicit(url, Some("e1"))),
        );
        sim.connect();
        call_until_asked(&mut sim);
        let shown = asked(&sim);
        let InputRequest::Elicitation(p) = &shown[0].1 else {
            panic!("{shown:?}")
        };
        assert_eq!(p.url.as_deref(), Some(url));
        assert_eq!(p.elicitation_id(), Some("e1"));
    }
    // Refused with -32602 in the legacy era.
    for (url, id) in [
        ("http://example.com/form", Some("e1")),
        ("https://user:pw@example.com/", Some("e1")),
        ("javascript:alert(1)", Some("e1")),
        ("https://example.com/", None),
    ] {
        let mut sim = Sim::new(config(EraMode::Legacy), legacy_asking(url_elicit(url, id)));
        sim.connect();
        let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
        assert_eq!(text(&out)["code"], -32602, "{url}");
        assert!(asked(&sim).is_empty(), "{url}");
    }
    // Declined without asking in 2026 (where URL mode has no elicitationId).
    let mut sim = Sim::new(
        config(EraMode::Auto),
        modern_asking(json!({"u": url_elicit("http://example.com/", None)})),
    );
    sim.connect();
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(text(&out), json!({"u":{"action":"decline"}}));
    assert!(asked(&sim).is_empty());
    // An accepted URL elicitation carries no content.
    let mut sim = Sim::new(
        config(EraMode::Auto),
        modern_asking(json!({"u": url_elicit("https://example.com/", None)})),
    );
    sim.connect();
    let id = call_until_asked(&mut sim);
    let (input, _) = asked(&sim)[0].clone();
    let consent = InputAnswer::Result(json!({"action":"accept","content":{"x":1}}));
    sim.client.respond(sim.now, input, consent).unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    assert_eq!(
        text(&sim.completion(id).unwrap().unwrap()),
        json!({"u":{"action":"accept"}})
    );
}

#[test]
fn url_elicitation_required_is_presented_then_fails_the_call_and_completion_is_reported() {
    let mut attempts = 0;
    let peer = Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        Some("tools/call") => {
            attempts += 1;
            if attempts == 1 {
                vec![json!({"jsonrpc":"2.0","id":m["id"],"error":{"code":-32042,
                    "message":"This request requires more information.",
                    "data":{"elicitations":[
                        {"mode":"url","elicitationId":"e1","url":"https://example.com/connect","message":"Authorize"},
                        {"mode":"url","elicitationId":"e2","url":"http://evil.example.com/","message":"bad"}
                    ]}}})
                .to_string()]
            } else {
                vec![done(m, "\"connected\"")]
            }
        }
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("t", json!({})))
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    // Presented first (only the one that passes the URL policy), with its call.
    let position = |s: &Sim, f: &dyn Fn(&Event) -> bool| s.events.iter().position(f);
    let shown = position(
        &sim,
        &|e| matches!(e, Event::InputRequested { call: Some(c), .. } if *c == id),
    )
    .expect("presented");
    let completed = position(&sim, &|e| matches!(e, Event::CallCompleted { .. })).unwrap();
    assert!(shown < completed);
    assert_eq!(asked(&sim).len(), 1);
    let err = sim.completion(id).unwrap().unwrap_err();
    let CallError::UrlElicitationRequired {
        error,
        elicitations,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(error.code, -32042);
    assert_eq!(elicitations, &["e1".to_owned()]);
    assert_eq!(err.code(), Some(-32042));
    // Answering it sends nothing (there is no request to answer).
    let (input, _) = asked(&sim)[0].clone();
    let before = sim.sent.len();
    sim.client
        .respond(
            sim.now,
            input,
            InputAnswer::Result(json!({"action":"accept"})),
        )
        .unwrap();
    sim.step();
    assert_eq!(sim.sent.len(), before);
    // The completion notice, reported once; strangers are ignored.
    for id in ["e1", "e1", "zz"] {
        let line = format!(
            "{}\n",
            json!({"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":id}})
        );
        sim.client
            .handle_read(sim.now, ConnId::STDIO, line.as_bytes());
        sim.drain();
    }
    let completions: Vec<_> = sim
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ElicitationCompleted { elicitation_id } => Some(elicitation_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(completions, ["e1"]);
    // The retry succeeds.
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(text(&out), json!("connected"));
}

#[test]
fn legacy_url_elicitations_are_matched_with_their_completion() {
    let mut sim = Sim::new(
        config(EraMode::Legacy),
        legacy_asking(url_elicit("https://example.com/f", Some("form-1"))),
    );
    sim.handler = Some(Box::new(FnHandler(Box::new(|_: &InputRequest| {
        InputAnswer::Result(json!({"action":"accept"}))
    }))));
    sim.connect();
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(text(&out), json!({"action":"accept"}));
    let line = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/elicitation/complete\",\"params\":{\"elicitationId\":\"form-1\"}}\n";
    sim.client
        .handle_read(sim.now, ConnId::STDIO, line.as_bytes());
    sim.drain();
    assert!(sim.events.iter().any(|e| matches!(
        e,
        Event::ElicitationCompleted { elicitation_id } if elicitation_id == "form-1"
    )));
    // A malformed one is a peer error.
    let bad =
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/elicitation/complete\",\"params\":{}}\n";
    sim.client
        .handle_read(sim.now, ConnId::STDIO, bad.as_bytes());
    sim.drain();
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::PeerError(PeerError::MalformedNotification { .. })))
    );
}

struct FnHandler(Box<dyn Fn(&InputRequest) -> InputAnswer>);

impl InputHandler for FnHandler {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        (self.0)(request)
    }
}

// ----- MRTR bounds --------------------------------------------------------------------

fn form(n: usize) -> Value {
    let mut inputs = serde_json::Map::new();
    for i in 0..n {
        inputs.insert(
            format!("k{i}"),
            json!({"method":"elicitation/create","params":{"message":"?",
                "requestedSchema":{"type":"object","properties":{}}}}),
        );
    }
    Value::Object(inputs)
}

fn with_limits(limits: Limits) -> ClientConfig {
    config(EraMode::Auto).limits(limits)
}

#[test]
fn every_mrtr_bound_fails_the_call_with_a_typed_error() {
    // Inputs per round: at the limit it works, one more fails.
    let mut limits = Limits::default();
    limits.max_inputs_per_round = 3;
    let mut sim = Sim::new(with_limits(limits.clone()), modern_asking(form(3)));
    sim.handler = Some(Box::new(mcp_proto::client::AcceptDefaults));
    sim.connect();
    assert!(sim.call(CallRequest::call_tool("t", json!({}))).is_ok());
    let mut sim = Sim::new(with_limits(limits), modern_asking(form(4)));
    sim.handler = Some(Box::new(mcp_proto::client::AcceptDefaults));
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidInputRequest(m) if m.contains("4 input requests")));
    assert!(asked(&sim).is_empty(), "nobody asked");

    // Bytes of input requests per call.
    let mut limits = Limits::default();
    limits.max_input_bytes_per_call = 200;
    let mut sim = Sim::new(with_limits(limits), modern_asking(form(3)));
    sim.handler = Some(Box::new(mcp_proto::client::AcceptDefaults));
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidInputRequest(m) if m.contains("bytes")));

    // Rounds: a server that never stops asking.
    let mut limits = Limits::default();
    limits.max_input_rounds = 2;
    let endless = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        Some("tools/call") => vec![
            json!({"jsonrpc":"2.0","id":m["id"],"result":{
            "resultType":"input_required","inputRequests":form(1),"requestState":"again"}})
            .to_string(),
        ],
        _ => Vec::new(),
    });
    let mut sim = Sim::new(with_limits(limits), endless);
    sim.handler = Some(Box::new(mcp_proto::client::AcceptDefaults));
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert_eq!(err, CallError::TooManyRounds(2));
    assert_eq!(sim.sent_with_method("tools/call").len(), 3);
}

#[test]
fn input_requests_over_the_byte_limit_are_refused_before_they_are_parsed() {
    // 200,000 numbers where the requests were expected: refused by its size, not by
    // what parsing it would have found (and cost).
    let numbers = vec![0; 200_000];
    let flood = Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        Some("tools/call") => vec![
            json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"input_required",
                "inputRequests":numbers,"requestState":"s"}})
            .to_string(),
        ],
        _ => Vec::new(),
    });
    let mut limits = Limits::default();
    limits.max_input_bytes_per_call = 100_000;
    let mut sim = Sim::new(with_limits(limits), flood);
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::InvalidInputRequest(m) if m.contains("bytes over this call's rounds, over the limit of") && m.contains("max_input_bytes_per_call")),
        "{err:?}"
    );
}

/// Input requests within the byte bound but too large once parsed (one-member objects,
/// seven bytes of text each, over 700 bytes each as values) are refused before they
/// are parsed.
#[test]
fn input_requests_too_large_once_parsed_are_refused_before_they_are_parsed() {
    let flood = Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        Some("tools/call") => {
            let padding = vec![json!({"": 0}); 100_000];
            let mut requests = form(1);
            requests["k0"]["params"]["padding"] = json!(padding);
            vec![
                json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"input_required",
                    "inputRequests":requests,"requestState":"s"}})
                .to_string(),
            ]
        }
        _ => Vec::new(),
    });
    let mut limits = Limits::default();
    limits.max_parsed_bytes = 4 * 1024 * 1024;
    let mut sim = Sim::new(with_limits(limits), flood);
    sim.handler = Some(Box::new(mcp_proto::client::AcceptDefaults));
    sim.connect();
    let err = sim
        .call(CallRequest::call_tool("t", json!({})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::InvalidInputRequest(m) if m.contains("4194304 bytes of memory once parsed (max_parsed_bytes)")),
        "{err:?}"
    );
    assert!(asked(&sim).is_empty(), "nobody asked");
}

// ----- logging ------------------------------------------------------------------------

fn logs(sim: &Sim) -> Vec<(Option<mcp_proto::client::CallId>, LogLevel, String)> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::Log { call, message } => {
                Some((*call, message.level, message.data.get().to_owned()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn legacy_set_level_is_a_request_and_messages_are_events() {
    let peer = Scripted::new(|m: &Value| {
        match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        Some("logging/setLevel") => vec![
            json!({"jsonrpc":"2.0","id":m["id"],"result":{}}).to_string(),
            json!({"jsonrpc":"2.0","method":"notifications/message",
                "params":{"level":"warning","logger":"srv","data":{"message":"careful"}}})
            .to_string(),
            json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"loud","data":1}})
                .to_string(),
        ],
        _ => Vec::new(),
    }
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    sim.call(CallRequest::set_log_level(LogLevel::Warning))
        .unwrap();
    sim.step();
    let sent = sim.sent_with_method("logging/setLevel");
    assert_eq!(sent[0]["params"], json!({"level":"warning"}));
    assert_eq!(
        logs(&sim),
        [(
            None,
            LogLevel::Warning,
            r#"{"message":"careful"}"#.to_owned()
        )]
    );
    assert!(sim.events.iter().any(|e| matches!(
        e,
        Event::PeerError(PeerError::MalformedNotification { method, .. }) if method == "notifications/message"
    )));
    // The level is not put in legacy requests' _meta.
    let _ = sim.client.call(
        sim.now,
        CallRequest::call_tool("t", json!({})).log_level(LogLevel::Debug),
    );
    sim.step();
    assert!(
        sim.sent_with_method("tools/call")[0]["params"]
            .get("_meta")
            .is_none()
    );
}

#[test]
fn modern_log_levels_go_in_each_request_meta_and_default_off() {
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        Some("tools/call") => vec![done(m, "1")],
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    const KEY: &str = "io.modelcontextprotocol/logLevel";
    sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    sim.call(CallRequest::call_tool("t", json!({})).log_level(LogLevel::Info))
        .unwrap();
    // setLevel is not sent in 2026: it sets the default of later requests.
    let out = sim
        .call(CallRequest::set_log_level(LogLevel::Error))
        .unwrap();
    assert_eq!(out.result.get(), "{}");
    assert!(sim.sent_with_method("logging/setLevel").is_empty());
    sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    sim.call(CallRequest::call_tool("t", json!({})).log_level(LogLevel::Debug))
        .unwrap();
    let levels: Vec<Value> = sim
        .sent_with_method("tools/call")
        .iter()
        .map(|m| {
            m["params"]["_meta"]
                .get(KEY)
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect();
    assert_eq!(
        levels,
        [Value::Null, json!("info"), json!("error"), json!("debug")]
    );
}

// ----- caller _meta -------------------------------------------------------------------

#[test]
fn caller_meta_passes_through_except_the_keys_the_machine_owns() {
    let meta = json!({
        "io.modelcontextprotocol/related-task": {"taskId": "t1"},
        "com.example/trace": "abc",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "progressToken": "theirs",
        "io.modelcontextprotocol/protocolVersion": "1999-01-01",
        "io.modelcontextprotocol/clientInfo": {"name":"spoof","version":"0"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "debug",
    });
    for mode in [EraMode::Legacy, EraMode::Auto] {
        let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
            Some("initialize") => vec![legacy_init(m)],
            Some("server/discover") => vec![discover_ok(m)],
            Some("tools/call") => vec![done(m, "1")],
            _ => Vec::new(),
        });
        let mut sim = Sim::new(config(mode), peer);
        sim.connect();
        let request = CallRequest::new(
            "tools/call",
            json!({"name":"t","arguments":{},"_meta": meta.clone()}),
        )
        .with_progress();
        sim.call(request).unwrap();
        let sent = &sim.sent_with_method("tools/call")[0]["params"]["_meta"];
        assert_eq!(
            sent["io.modelcontextprotocol/related-task"],
            json!({"taskId":"t1"})
        );
        assert_eq!(sent["com.example/trace"], "abc");
        assert_eq!(sent["traceparent"], meta["traceparent"]);
        assert_ne!(sent["progressToken"], "theirs", "{mode:?}");
        assert!(sent["progressToken"].is_u64());
        assert!(sent.get("io.modelcontextprotocol/logLevel").is_none());
        if mode == EraMode::Legacy {
            assert!(
                sent.get("io.modelcontextprotocol/protocolVersion")
                    .is_none()
            );
            assert!(sent.get("io.modelcontextprotocol/clientInfo").is_none());
        } else {
            assert_eq!(
                sent["io.modelcontextprotocol/protocolVersion"],
                "2026-07-28"
            );
            assert_eq!(sent["io.modelcontextprotocol/clientInfo"]["name"], "sim");
        }
    }
}

#[test]
fn over_http_a_log_on_a_calls_own_stream_belongs_to_that_call() {
    use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
    let answer = |req: &SeenRequest, result: Value| {
        Reply::json(
            200,
            &json!({"jsonrpc":"2.0","id":req.body["id"],"result":result}),
        )
    };
    let mut sim = HttpSim::new(config(EraMode::Auto), move |req| match req.rpc_method() {
        "server/discover" => answer(
            req,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                "capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}),
        ),
        "tools/list" => answer(req, json!({"resultType":"complete","ttlMs":0,"tools":[]})),
        "tools/call" => {
            assert_eq!(
                req.body["params"]["_meta"]["io.modelcontextprotocol/logLevel"],
                "warning"
            );
            let log = json!({"jsonrpc":"2.0","method":"notifications/message",
                "params":{"level":"error","data":"disk full"}})
            .to_string();
            let done =
                json!({"jsonrpc":"2.0","id":req.body["id"],"result":{"content":[]}}).to_string();
            Reply::sse(&[], &[(None, &log), (None, &done)])
        }
        _ => Reply::with_body(400, &[], "?"),
    });
    sim.connect();
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("t", json!({})).log_level(LogLevel::Warning),
        )
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    assert!(sim.completion(id).unwrap().is_ok());
    let logged: Vec<_> = sim
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Log { call, message } => Some((*call, message.level)),
            _ => None,
        })
        .collect();
    assert_eq!(logged, [(Some(id), LogLevel::Error)]);
}

#[test]
fn roots_log_levels_and_refused_answers_are_recorded_and_replay() {
    use mcp_io::transcript::{Recording, replay};
    let elicit = json!({"method":"elicitation/create","params":{"message":"who?","requestedSchema":schema()}});
    for mode in [EraMode::Legacy, EraMode::Auto] {
        let cfg = config(mode).roots(vec![Root::new("file:///a")]);
        let mut sim = if mode == EraMode::Legacy {
            Sim::new(cfg, legacy_asking(elicit.clone()))
        } else {
            Sim::new(cfg, modern_asking(json!({"f": elicit.clone()})))
        };
        sim.client.start_recording();
        sim.connect();
        sim.client
            .set_roots(sim.now, vec![Root::new("file:///b")])
            .unwrap();
        let id = sim
            .client
            .call(
                sim.now,
                CallRequest::call_tool("t", json!({})).log_level(LogLevel::Notice),
            )
            .unwrap();
        sim.run_until(|s| !asked(s).is_empty());
        let (input, _) = asked(&sim)[0].clone();
        let bad = InputAnswer::accept(serde_json::Map::new());
        assert!(sim.client.respond(sim.now, input, bad).is_err());
        let good = InputAnswer::accept(json!({"name":"ada"}).as_object().unwrap().clone());
        sim.client.respond(sim.now, input, good).unwrap();
        sim.run_until(|s| s.completion(id).is_some());
        let mut recording = Recording::new(&[]);
        let mut text = String::new();
        recording.drain(&mut sim.client, &mut |line: &str| {
            text.push_str(line);
            text.push('\n');
        });
        assert!(text.contains("set_roots"), "{mode:?}");
        let summary = replay(&text).unwrap_or_else(|e| panic!("{mode:?}: {e}\n{text}"));
        assert_eq!(summary.transcripts, 1);
    }
}

#[test]
fn the_rounds_of_a_call_share_its_timeout() {
    // Each round takes the server 2 s and asks for nothing but another round: a 5 s call
    // ends at its timeout, not after ten rounds of 2 s.
    use std::time::Duration;
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    let run = sim.answer_each_after(
        CallRequest::call_tool("t", json!({})).timeout(Duration::from_secs(5)),
        "tools/call",
        Duration::from_secs(2),
        10,
        |id, n| {
            json!({"jsonrpc":"2.0","id":id,"result":{
            "resultType":"input_required","requestState":format!("r{n}")}})
        },
    );
    assert_eq!(
        run.outcome.unwrap_err(),
        CallError::Timeout(Duration::from_secs(5))
    );
    assert_eq!(run.answered, 2, "rounds");
    assert_eq!(run.took, Duration::from_secs(6));
}

/// A peer that keeps every line the client wrote, as written.
struct RawLines<P> {
    inner: P,
    lines: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
}

impl<P: mcp_tests::Peer> mcp_tests::Peer for RawLines<P> {
    fn handle(&mut self, now: mcp_proto::Instant, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let mut lines = self.lines.borrow_mut();
        lines.extend(text.lines().filter(|l| !l.is_empty()).map(str::to_owned));
        drop(lines);
        self.inner.handle(now, bytes);
    }
    fn transmit(&mut self, out: &mut Vec<u8>) {
        self.inner.transmit(out);
    }
}

/// One call whose request carries the caller's own `requestState` and `inputResponses`
/// (a gateway relaying a retry), against a 2026 server that answers it with
/// `input_required` and `round`'s members (one of them `requestState: "s1"`) and
/// completes the retry carrying `s1`; defaults answer any form. The `tools/call` lines
/// the client wrote, as written.
fn relayed_call_lines(round: Value) -> Vec<String> {
    let lines = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let peer = RawLines {
        inner: Scripted::new(move |m: &Value| match m["method"].as_str() {
            Some("server/discover") => vec![discover_ok(m)],
            Some("tools/call") if m["params"]["requestState"] != "s1" => {
                let mut result = round.clone();
                result["resultType"] = json!("input_required");
                vec![json!({"jsonrpc":"2.0","id":m["id"],"result":result}).to_string()]
            }
            Some("tools/call") => vec![done(m, "ok")],
            _ => Vec::new(),
        }),
        lines: lines.clone(),
    };
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.handler = Some(Box::new(mcp_proto::client::AcceptDefaults));
    sim.connect();
    let request = CallRequest::new(
        "tools/call",
        json!({"name":"t","arguments":{},"requestState":"relayed",
            "inputResponses":{"old":{"action":"decline"}}}),
    );
    sim.call(request).unwrap();
    lines
        .borrow()
        .iter()
        .filter(|l| l.contains(r#""method":"tools/call""#))
        .cloned()
        .collect()
}

/// A request built by the caller with its own `requestState` and `inputResponses` (a
/// gateway relaying a retry, say) goes out as given; once the server answers
/// `input_required`, the rounds are the client's: each retry carries the server's state
/// and the latest round's answers once, never the caller's beside them (a member twice
/// in one object, which parsers read differently, or stale answers).
#[test]
fn a_retry_carries_the_rounds_own_state_and_answers_only() {
    let calls = relayed_call_lines(json!({"inputRequests": form(1), "requestState": "s1"}));
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[0].contains(r#""requestState":"relayed""#),
        "{}",
        calls[0]
    );
    let retry = &calls[1];
    assert_eq!(retry.matches(r#""requestState""#).count(), 1, "{retry}");
    assert_eq!(retry.matches(r#""inputResponses""#).count(), 1, "{retry}");
    let sent: Value = serde_json::from_str(retry).unwrap();
    assert_eq!(sent["params"]["requestState"], "s1");
    assert!(
        sent["params"]["inputResponses"].get("old").is_none(),
        "{retry}"
    );
    assert!(
        sent["params"]["inputResponses"].get("k0").is_some(),
        "{retry}"
    );
}

/// A round that brings a `requestState` but asks nothing (no `inputRequests`): its
/// retry carries that state and no `inputResponses` at all, not the caller's stale ones
/// (there are no answers of the round's own to write over them).
#[test]
fn a_retry_of_a_round_asking_nothing_carries_no_stale_answers() {
    let calls = relayed_call_lines(json!({"requestState": "s1"}));
    let retry = calls.last().unwrap();
    let sent: Value = serde_json::from_str(retry).unwrap();
    assert_eq!(sent["params"]["requestState"], "s1", "{retry}");
    assert!(sent["params"].get("inputResponses").is_none(), "{retry}");
}

/// `requestState` goes back exactly as the server wrote it, escapes included, and a
/// string that no Rust `String` can hold (a lone surrogate escape, which a JavaScript
/// server writes for a state with one) is no reason to fail the call.
#[test]
fn request_state_is_sent_back_as_written() {
    const STATE: &str = r#""st\/\u00e9\ud800""#;
    let lines = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let script = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        Some("tools/call") if m["params"].get("requestState").is_none() => vec![format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"input_required","requestState":{STATE}}}}}"#,
            m["id"]
        )],
        Some("tools/call") => vec![done(m, "ok")],
        _ => Vec::new(),
    });
    /// Lets the scripted server (whose `Value`s cannot hold a lone surrogate) read
    /// the client's lines.
    struct Tolerant<P>(P);
    impl<P: mcp_tests::Peer> mcp_tests::Peer for Tolerant<P> {
        fn handle(&mut self, now: mcp_proto::Instant, bytes: &[u8]) {
            let text = String::from_utf8_lossy(bytes).replace(r"\ud800", "?");
            self.0.handle(now, text.as_bytes());
        }
        fn transmit(&mut self, out: &mut Vec<u8>) {
            self.0.transmit(out);
        }
    }
    let peer = RawLines {
        inner: Tolerant(script),
        lines: lines.clone(),
    };
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert_eq!(out.rounds, 1);
    let lines = lines.borrow();
    let retry = lines
        .iter()
        .rfind(|l| l.contains(r#""method":"tools/call""#))
        .unwrap();
    assert!(
        retry.contains(&format!(r#""requestState":{STATE}"#)),
        "{retry}"
    );
}

/// A legacy server that numbers every request for input alike (ids must not be reused
/// within a session, but some servers do) still gets each answered: only on a resumed
/// HTTP stream is a request under an id already answered taken for a replay.
#[test]
fn a_legacy_server_reusing_an_answered_id_over_stdio_is_still_answered() {
    let ask = json!({"method":"elicitation/create","params":{"message":"again?",
        "requestedSchema":{"type":"object","properties":{}}}});
    let mut sim = Sim::new(config(EraMode::Legacy), legacy_asking(ask));
    sim.handler = Some(Box::new(mcp_proto::client::AcceptDefaults));
    sim.connect();
    for _ in 0..2 {
        sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    }
    assert_eq!(asked(&sim).len(), 2);
}
