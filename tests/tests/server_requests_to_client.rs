//! A client facing a server that sends its own requests and notifications: requests
//! the client cannot read, request ids used twice, and task status notifications that
//! arrive faster than the poll interval. Scripted servers on a fake clock.

use std::time::Duration;

use mcp_proto::Limits;
use mcp_proto::client::{CallRequest, ClientConfig, ConnId, Event, InputAnswer, PeerError};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::EraMode;
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

fn legacy_init(m: &Value, caps: Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"protocolVersion":"2025-11-25",
        "capabilities":caps,"serverInfo":{"name":"s","version":"1"}}})
    .to_string()
}

fn legacy_config(limits: Limits) -> ClientConfig {
    let mut caps = ClientCapabilities::with_elicitation();
    caps.sampling = true;
    ClientConfig::new("srvreq", "1")
        .era_mode(EraMode::Legacy)
        .capabilities(caps)
        .limits(limits)
}

/// A legacy server that only answers the handshake; the test writes the rest.
fn legacy_sim(limits: Limits) -> Sim {
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m, json!({"tools":{}}))],
        _ => Vec::new(),
    });
    let mut sim = Sim::new(legacy_config(limits), peer);
    sim.connect();
    sim
}

fn feed(sim: &mut Sim, line: &str) {
    sim.client
        .handle_read(sim.now, ConnId::STDIO, format!("{line}\n").as_bytes());
    sim.step();
}

/// What the client wrote back for the server's request `id`.
fn answers_to<'a>(sim: &'a Sim, id: &Value) -> Vec<&'a Value> {
    sim.sent
        .iter()
        .filter(|m| m.get("method").is_none() && m["id"] == *id)
        .collect()
}

// ----- requests the client cannot read --------------------------------------------------

/// JSON-RPC 2.0: a request gets a response, an invalid one an error response with its
/// id. The server machine of this crate answers such a request from its client so;
/// a server whose request is too deeply nested for the client must hear it too, not
/// wait for an answer that never comes.
#[test]
fn a_server_request_too_deep_to_read_is_answered_with_an_error() {
    let mut sim = legacy_sim(Limits::default());
    let depth = Limits::DEFAULT_MAX_NESTING_DEPTH + 10;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":"deep-1","method":"sampling/createMessage","params":{{"messages":{deep},"maxTokens":5}}}}"#
    );
    feed(&mut sim, &line);
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::PeerError(PeerError::Malformed { .. }))),
        "reported: {:?}",
        sim.events
    );
    let answers = answers_to(&sim, &json!("deep-1"));
    assert_eq!(
        answers.len(),
        1,
        "the server's request was left unanswered: sent {:?}",
        sim.sent
    );
    assert!(answers[0].get("error").is_some(), "{:?}", answers[0]);
}

/// Same for a request whose params would take too much memory once parsed.
#[test]
fn a_server_request_too_large_once_parsed_is_answered_with_an_error() {
    let mut limits = Limits::default();
    limits.max_parsed_bytes = 64 * 1024;
    let mut sim = legacy_sim(limits);
    let items = "[],".repeat(40_000);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{{"message":"m","requestedSchema":{{"type":"object","properties":{{}}}},"x":[{items}0]}}}}"#
    );
    feed(&mut sim, &line);
    let answers = answers_to(&sim, &json!(7));
    assert_eq!(
        answers.len(),
        1,
        "the server's request was left unanswered; events {:?}",
        sim.events
    );
    assert!(answers[0].get("error").is_some(), "{:?}", answers[0]);
}

/// Same for a request longer than `Limits::max_message_bytes`, whose id comes before
/// its params: the server machine of this crate answers such a line with `-32600` and
/// the id it read.
#[test]
fn an_oversized_server_request_is_answered_with_an_error() {
    let mut limits = Limits::default();
    limits.max_message_bytes = 16 * 1024;
    let mut sim = legacy_sim(limits);
    let text = "x".repeat(40 * 1024);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":"big-1","method":"sampling/createMessage","params":{{"messages":[{{"role":"user","content":{{"type":"text","text":"{text}"}}}}],"maxTokens":5}}}}"#
    );
    feed(&mut sim, &line);
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::PeerError(PeerError::Oversized { .. }))),
        "reported: {:?}",
        sim.events
    );
    let answers = answers_to(&sim, &json!("big-1"));
    assert_eq!(answers.len(), 1, "the server's request was left unanswered");
    assert!(answers[0].get("error").is_some(), "{:?}", answers[0]);
}

// ----- request ids used twice -------------------------------------------------------------

fn elicit(id: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"elicitation/create",
        "params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}})
    .to_string()
}

/// A request whose id is still waiting for the user's answer is a reused id, reported
/// and left unanswered below the limit of waiting requests. At the limit it must be
/// the same: an error answer carrying that id reads, to the server, as the answer to
/// the first request, which is then answered a second time when the user replies.
#[test]
fn a_reused_request_id_is_never_answered_twice_even_at_the_limit() {
    for max in [2, 1] {
        let mut limits = Limits::default();
        limits.max_pending_server_requests = max;
        let mut sim = legacy_sim(limits);
        feed(&mut sim, &elicit("dup"));
        let input = sim
            .events
            .iter()
            .find_map(|e| match e {
                Event::InputRequested { input, .. } => Some(*input),
                _ => None,
            })
            .expect("asked");
        feed(&mut sim, &elicit("dup"));
        assert!(
            sim.events
                .iter()
                .any(|e| matches!(e, Event::PeerError(PeerError::ReusedRequestId { .. }))),
            "limit {max}: the reuse is not reported: {:?}",
            sim.events
        );
        sim.client
            .respond(
                sim.now,
                input,
                InputAnswer::Result(json!({"action":"decline"})),
            )
            .unwrap();
        sim.step();
        let answers = answers_to(&sim, &json!("dup"));
        assert_eq!(
            answers.len(),
            1,
            "limit {max}: request \"dup\" answered {} times: {answers:?}",
            answers.len()
        );
        assert_eq!(answers[0]["result"]["action"], "decline");
    }
}

/// A server that asks more than the client keeps waiting for the user is refused with an
/// error that names the limit it ran into, both in the answer the server gets and in the
/// report the application gets.
#[test]
fn requests_past_the_waiting_limits_are_refused_naming_the_limit() {
    let cases = [
        ("max_pending_server_requests", {
            let mut l = Limits::default();
            l.max_pending_server_requests = 1;
            l
        }),
        ("max_pending_input_bytes", {
            let mut l = Limits::default();
            l.max_pending_input_bytes = 100;
            l
        }),
    ];
    for (limit, limits) in cases {
        let mut sim = legacy_sim(limits);
        feed(&mut sim, &elicit("a"));
        feed(&mut sim, &elicit("b"));
        let answers = answers_to(&sim, &json!("b"));
        assert_eq!(answers.len(), 1, "{limit}: {answers:?}");
        let message = answers[0]["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(limit), "{limit}: {}", answers[0]);
        let reported = sim.events.iter().any(|e| {
            matches!(e, Event::PeerError(PeerError::RequestRefused { reason, .. })
                if reason.contains(limit))
        });
        assert!(reported, "{limit}: {:?}", sim.events);
    }
}

// ----- task status notifications and polling -------------------------------------------

fn legacy_task(status: &str) -> Value {
    json!({"taskId":"t1","status":status,"createdAt":"2025-12-01T09:00:00Z",
        "lastUpdatedAt":"2025-12-01T09:00:00Z","ttl":null,"pollInterval":1000})
}

/// 2025-11-25 (tasks.md 3.8): a requestor must not depend on
/// `notifications/tasks/status` and should keep polling. A server that repeats
/// "working" more often than its own poll interval must not stop the polls (and with
/// them `Limits::max_task_polls`, the bound on a task that never ends).
#[test]
fn status_notifications_do_not_stop_the_polling_of_a_task() {
    let caps = json!({"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}});
    let peer = Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m, caps.clone())],
        Some("tools/call") => vec![
            json!({"jsonrpc":"2.0","id":m["id"],"result":{"task":legacy_task("working")}})
                .to_string(),
        ],
        Some("tasks/get") => {
            vec![json!({"jsonrpc":"2.0","id":m["id"],"result":legacy_task("working")}).to_string()]
        }
        _ => Vec::new(),
    });
    let mut limits = Limits::default();
    limits.max_task_polls = 5;
    let mut sim = Sim::new(legacy_config(limits), peer);
    sim.connect();
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("slow", json!({})).as_task(None),
        )
        .unwrap();
    sim.run_until(|s| {
        s.events
            .iter()
            .any(|e| matches!(e, Event::TaskCreated { .. }))
    });
    let status = json!({"jsonrpc":"2.0","method":"notifications/tasks/status",
        "params":legacy_task("working")})
    .to_string();
    // A minute at a 1 s poll interval, a notification every half second.
    for _ in 0..120 {
        sim.advance(Duration::from_millis(500));
        feed(&mut sim, &status);
        if sim.completion(id).is_some() {
            break;
        }
    }
    let polls = sim.sent_with_method("tasks/get").len();
    assert!(
        polls >= 5 || sim.completion(id).is_some(),
        "{polls} polls in 60 s at a 1 s interval, and the call is still open"
    );
}
