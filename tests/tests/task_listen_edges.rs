//! Servers that once got the better of the client's tasks, input pauses and listens:
//! a terminal task status undone by a stale poll or overridden by a second one, a 2025
//! `tasks/result` held with no deadline at all, a call made during an input pause
//! credited with the pause from before it existed, and listen acknowledgements repeated
//! or counted without their filters (decision 132).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use mcp_proto::Limits;
use mcp_proto::client::{
    CallError, CallId, CallRequest, ClientConfig, ConnId, Event, ListenFilter, TaskStatus,
};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::EraMode;
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

const EXT: &str = "io.modelcontextprotocol/tasks";

fn answer(m: &Value, result: Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":result}).to_string()
}

fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc":"2.0","method":method,"params":params}).to_string()
}

fn handshake(m: &Value, legacy_caps: &Value) -> Option<Vec<String>> {
    match m["method"].as_str()? {
        "server/discover" => Some(vec![answer(
            m,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                "capabilities":{"tools":{},"resources":{"subscribe":true,"listChanged":true},
                    "extensions":{EXT:{}}}}),
        )]),
        "initialize" => Some(vec![answer(
            m,
            json!({"protocolVersion":"2025-11-25","capabilities":legacy_caps,
                "serverInfo":{"name":"s","version":"1"}}),
        )]),
        "notifications/initialized" => Some(Vec::new()),
        _ => None,
    }
}

fn legacy_caps() -> Value {
    json!({"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}})
}

fn legacy_task(id: &str, status: &str, poll: u64) -> Value {
    json!({"taskId":id,"status":status,"createdAt":"2025-12-01T09:00:00Z",
        "lastUpdatedAt":"2025-12-01T09:00:00Z","ttl":60000,"pollInterval":poll})
}

fn modern_task(id: &str, status: &str) -> Value {
    json!({"taskId":id,"status":status,"createdAt":"2026-08-01T12:00:00Z",
        "lastUpdatedAt":"2026-08-01T12:00:00Z","ttlMs":600000,"pollIntervalMs":1000})
}

fn sim_with(
    config: ClientConfig,
    caps: Value,
    mut script: impl FnMut(&Value) -> Vec<String> + 'static,
) -> Sim {
    let script = move |m: &Value| {
        if let Some(out) = handshake(m, &caps) {
            return out;
        }
        script(m)
    };
    let mut sim = Sim::new(config, Scripted::new(script));
    sim.connect();
    sim
}

fn legacy() -> ClientConfig {
    ClientConfig::new("probe", "1.0").era_mode(EraMode::Legacy)
}

fn modern() -> ClientConfig {
    ClientConfig::new("probe", "1.0").era_mode(EraMode::Modern)
}

fn statuses(sim: &Sim, id: CallId) -> Vec<TaskStatus> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::TaskCreated { call, task } if *call == id => Some(task.status),
            Event::TaskStatus { call, task } if *call == Some(id) => Some(task.status),
            _ => None,
        })
        .collect()
}

fn feed(sim: &mut Sim, line: &str) {
    let mut bytes = line.as_bytes().to_vec();
    bytes.push(b'\n');
    sim.client.handle_read(sim.now, ConnId::STDIO, &bytes);
}

/// Runs the sim until `done` or until the clock passed `until`; returns whether `done`.
fn run_for(sim: &mut Sim, until: Duration, mut done: impl FnMut(&Sim) -> bool) -> bool {
    let end = sim.now + until;
    let mut jumps = 0;
    while !done(sim) {
        if sim.step() {
            continue;
        }
        match sim.client.poll_timeout() {
            Some(t) if t <= end => {
                if t > sim.now {
                    sim.now = t;
                }
                sim.client.handle_timeout(sim.now);
                sim.drain();
                jumps += 1;
                if jumps > 100_000 {
                    return false;
                }
            }
            _ => return done(sim),
        }
    }
    true
}

// ---------------------------------------------------------------------------------------
// 1. Legacy: a terminal status seen in a notification is undone by a stale poll.

#[test]
fn a_legacy_terminal_status_is_final_over_a_stale_poll() {
    let gets = Rc::new(RefCell::new(0u32));
    let g = gets.clone();
    let mut sim = sim_with(legacy(), legacy_caps(), move |m| {
        match m["method"].as_str() {
            Some("tools/call") => vec![answer(
                m,
                json!({"task": legacy_task("t1", "working", 1000)}),
            )],
            Some("tasks/get") => {
                *g.borrow_mut() += 1;
                if *g.borrow() == 1 {
                    // The server pushes "completed", then the (stale) poll answer says working.
                    vec![
                        notification(
                            "notifications/tasks/status",
                            legacy_task("t1", "completed", 1000),
                        ),
                        answer(m, legacy_task("t1", "working", 1000)),
                    ]
                } else {
                    vec![answer(m, legacy_task("t1", "completed", 1000))]
                }
            }
            Some("tasks/result") => vec![answer(
                m,
                json!({"content":[{"type":"text","text":"done"}]}),
            )],
            _ => Vec::new(),
        }
    });
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("x", json!({})).as_task(None),
        )
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    let seen = statuses(&sim, id);
    // Expected (tasks.md 2.1, decision 38): the first terminal status is final; the
    // client asks tasks/result right after `completed` and never reports the task
    // working again.
    let first_terminal = seen.iter().position(|s| s.is_terminal()).unwrap();
    assert!(
        seen[first_terminal..].iter().all(|s| s.is_terminal()),
        "the task went back from terminal: {seen:?}"
    );
    assert_eq!(
        *gets.borrow(),
        1,
        "polled again after the task was completed"
    );
}

// ---------------------------------------------------------------------------------------
// 2. Legacy: while tasks/result is open (task input_required), the ttl is never applied.

#[test]
fn an_open_legacy_tasks_result_ends_with_the_task_lifetime() {
    let mut sim = sim_with(legacy(), legacy_caps(), move |m| {
        match m["method"].as_str() {
            Some("tools/call") => vec![answer(
                m,
                json!({"task": legacy_task("t1", "working", 1000)}),
            )],
            Some("tasks/get") => vec![answer(m, legacy_task("t1", "input_required", 1000))],
            // tasks/result: never answered, and the server never asks anything either.
            _ => Vec::new(),
        }
    });
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("x", json!({}))
                .as_task(None)
                .timeout(Duration::from_secs(5)),
        )
        .unwrap();
    // The task's ttl is 60 s (legacy_task). Give it an hour.
    let done = run_for(&mut sim, Duration::from_secs(3600), |s| {
        s.completion(id).is_some()
    });
    assert!(
        done,
        "an hour later the call (timeout 5 s, task ttl 60 s) has not completed and the \
         machine has no deadline at all"
    );
}

// 2b. Legacy: tasks/result open, then the server says the task is completed (no person is
// answering anything) and never answers tasks/result: still no deadline.

#[test]
fn an_open_legacy_tasks_result_is_due_once_the_task_ended() {
    let mut sim = sim_with(legacy(), legacy_caps(), move |m| {
        match m["method"].as_str() {
            Some("tools/call") => vec![answer(
                m,
                json!({"task": legacy_task("t1", "working", 1000)}),
            )],
            Some("tasks/get") => vec![answer(m, legacy_task("t1", "input_required", 1000))],
            Some("tasks/result") => vec![notification(
                "notifications/tasks/status",
                legacy_task("t1", "completed", 1000),
            )],
            _ => Vec::new(),
        }
    });
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("x", json!({}))
                .as_task(None)
                .timeout(Duration::from_secs(5)),
        )
        .unwrap();
    let done = run_for(&mut sim, Duration::from_secs(3600), |s| {
        s.completion(id).is_some()
    });
    assert!(
        statuses(&sim, id).contains(&TaskStatus::Completed),
        "the client saw the task completed"
    );
    assert!(
        done,
        "the task is completed (the server must answer tasks/result at once), yet an hour \
         later the call with a 5 s timeout is still waiting with no deadline"
    );
}

// ---------------------------------------------------------------------------------------
// 3. Modern: a terminal seed (failed) then a tasks/get with another terminal status.

#[test]
fn a_modern_task_said_failed_then_completed_fails_its_call() {
    let caps = ClientCapabilities::default();
    let mut sim = sim_with(
        modern().capabilities(caps),
        json!({}),
        move |m| match m["method"].as_str() {
            Some("tools/call") => vec![answer(
                m,
                json!({"resultType":"task","taskId":"t1","status":"failed",
                    "createdAt":"x","lastUpdatedAt":"x","ttlMs":600000}),
            )],
            Some("tasks/get") => vec![answer(
                m,
                json!({"resultType":"complete","taskId":"t1","status":"completed",
                    "createdAt":"x","lastUpdatedAt":"x","ttlMs":600000,
                    "result":{"content":[{"type":"text","text":"success?"}]}}),
            )],
            _ => Vec::new(),
        },
    );
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("x", json!({})).as_task(None),
        )
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    let outcome = sim.completion(id).unwrap();
    assert!(
        outcome.is_err(),
        "the task was first reported failed; it must not then complete successfully"
    );
}

#[test]
fn a_modern_completed_task_is_not_moved_back_by_working_polls() {
    let gets = Rc::new(RefCell::new(0u32));
    let g = gets.clone();
    let mut sim = sim_with(modern(), json!({}), move |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            json!({"resultType":"task","taskId":"t1","status":"completed",
                "createdAt":"x","lastUpdatedAt":"x","ttlMs":600000}),
        )],
        Some("tasks/get") => {
            *g.borrow_mut() += 1;
            if *g.borrow() < 4 {
                vec![answer(m, with_rt(modern_task("t1", "working")))]
            } else {
                vec![answer(
                    m,
                    with_rt(json!({"taskId":"t1","status":"completed","createdAt":"x",
                            "lastUpdatedAt":"x","ttlMs":600000,
                            "result":{"content":[{"type":"text","text":"ok"}]}})),
                )]
            }
        }
        _ => Vec::new(),
    });
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("x", json!({})).as_task(None),
        )
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    let seen = statuses(&sim, id);
    let first_terminal = seen.iter().position(|s| s.is_terminal()).unwrap();
    assert!(
        seen[first_terminal..].iter().all(|s| s.is_terminal()),
        "the task went back from terminal: {seen:?}"
    );
}

fn with_rt(mut v: Value) -> Value {
    v["resultType"] = json!("complete");
    v
}

// ---------------------------------------------------------------------------------------
// 4. Listen: repeated acknowledgements are kept without bound (not droppable).

#[test]
fn a_repeated_listen_acknowledgement_is_not_kept() {
    let mut limits = Limits::default();
    limits.max_queued_event_bytes = 256 * 1024;
    let mut sim = sim_with(modern().limits(limits), json!({}), |_| Vec::new());
    let mut filter = ListenFilter::new();
    let uris: Vec<String> = (0..1000).map(|i| format!("file:///{i:04}")).collect();
    for u in &uris {
        filter = filter.resource(u.clone());
    }
    let id = sim
        .client
        .call(sim.now, CallRequest::listen(&filter))
        .unwrap();
    sim.step();
    let listen = sim.sent_with_method("subscriptions/listen")[0].clone();
    let rpc = listen["id"].clone();
    sim.events.clear();
    while sim.client.poll_event().is_some() {}
    let before = sim.client.retained_bytes();
    // Each ack grants 1000 URIs of ~1 KiB (about 1 MiB per message).
    let big: Vec<String> = (0..1000)
        .map(|i| format!("file:///{i:04}{}", "x".repeat(1000)))
        .collect();
    let ack = notification(
        "notifications/subscriptions/acknowledged",
        json!({"_meta":{"io.modelcontextprotocol/subscriptionId":rpc},
            "notifications":{"resourceSubscriptions":big}}),
    );
    for _ in 0..64 {
        feed(&mut sim, &ack);
    }
    let held = sim.client.retained_bytes() - before;
    let _ = id;
    assert!(
        held <= 2 * 1024 * 1024,
        "a server repeating its acknowledgement made the client hold {held} bytes \
         (max_queued_event_bytes is 256 KiB)"
    );
}

// 4b. Legacy: repeated requests for an undeclared kind of input.
#[test]
fn repeated_undeclared_input_requests_stay_within_the_event_budget() {
    let mut limits = Limits::default();
    limits.max_queued_notifications = 16;
    limits.max_queued_event_bytes = 16 * 1024;
    let mut sim = sim_with(legacy().limits(limits), json!({}), |_| Vec::new());
    while sim.client.poll_event().is_some() {}
    let before = sim.client.retained_bytes();
    for i in 0..20_000u64 {
        let req = json!({"jsonrpc":"2.0","id":i,"method":"sampling/createMessage",
            "params":{"messages":[],"maxTokens":1}});
        feed(&mut sim, &req.to_string());
        // The driver writes what the machine hands out (the refusals).
        let mut out = Vec::new();
        while let Some(t) = sim.client.poll_transmit(sim.now, &mut out) {
            if let mcp_proto::client::Transmit::Write { conn, len } = t {
                sim.client.handle_written(sim.now, conn, len);
            }
        }
    }
    let held = sim.client.retained_bytes() - before;
    let mut undeclared = 0;
    while let Some(e) = sim.client.poll_event() {
        if matches!(e, Event::InputUndeclared { .. }) {
            undeclared += 1;
        }
    }
    assert!(
        held <= 64 * 1024,
        "20 000 refused requests left {held} bytes of events ({undeclared} InputUndeclared)"
    );
}

// ---------------------------------------------------------------------------------------
// 5. Legacy input pause: a call made during the pause is credited with time before it
// existed.

#[test]
fn a_call_made_during_a_legacy_input_pause_is_held_only_from_then() {
    let mut sim = sim_with(
        legacy().capabilities(ClientCapabilities::with_elicitation()),
        json!({}),
        |_| Vec::new(),
    );
    // The server asks for input; nobody answers for a while.
    let elicit = json!({"jsonrpc":"2.0","id":"e1","method":"elicitation/create",
        "params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}});
    feed(&mut sim, &elicit.to_string());
    sim.drain();
    let input = sim
        .events
        .iter()
        .find_map(|e| match e {
            Event::InputRequested { input, .. } => Some(*input),
            _ => None,
        })
        .unwrap();
    sim.advance(Duration::from_secs(100));
    // A new call, 30 s timeout, to a server that never answers it.
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("x", json!({})).timeout(Duration::from_secs(30)),
        )
        .unwrap();
    sim.step();
    sim.advance(Duration::from_secs(100)); // user answers 100 s after the call started
    sim.client
        .respond(
            sim.now,
            input,
            mcp_proto::client::InputAnswer::Result(json!({"action":"decline"})),
        )
        .unwrap();
    sim.step();
    let answered_at = sim.now;
    sim.run_until(|s| s.completion(id).is_some());
    let after_answer = sim.now.saturating_duration_since(answered_at);
    assert!(matches!(
        sim.completion(id),
        Some(Err(CallError::Timeout(_)))
    ));
    assert!(
        after_answer <= Duration::from_secs(30),
        "after the pause ended the call still waited {after_answer:?} (its timeout is 30 s): \
         it was credited with the 100 s of pause before it was made"
    );
}

// 4c. The adapters' inbox counts an acknowledgement as the size of the enum only.
#[test]
fn the_inbox_counts_an_acknowledgement_with_its_filters() {
    let mut sim = sim_with(modern(), json!({}), |_| Vec::new());
    let sub = sim
        .client
        .call(
            sim.now,
            CallRequest::listen(&ListenFilter::new().resources()),
        )
        .unwrap();
    let mut inbox = mcp_io::Inbox::default();
    let mut granted = ListenFilter::new();
    for i in 0..1000 {
        granted = granted.resource(format!("file:///{i:04}{}", "x".repeat(1000)));
    }
    for _ in 0..100 {
        let e = Event::SubscriptionAcknowledged {
            subscription: sub,
            acknowledged: granted.clone(),
            refused: ListenFilter::new(),
        };
        assert!(inbox.keep(e).is_none());
    }
    // Counted with their filters (about 1 MB each), and so kept within the inbox's
    // budget: the oldest go.
    let counted = inbox.notification_bytes();
    let budget = mcp_proto::Limits::default().max_queued_event_bytes;
    assert!(
        counted <= budget,
        "{counted} bytes counted against a {budget} byte budget"
    );
    assert!(
        counted >= 1_000_000,
        "the filters were not counted: {counted} bytes"
    );
}

// ---------------------------------------------------------------------------------------
// Cases the client already handled.

#[test]
fn a_zero_poll_interval_is_clamped_and_a_wrong_task_id_fails_with_a_cancel() {
    let gets = Rc::new(RefCell::new(0u32));
    let g = gets.clone();
    let mut sim = sim_with(modern(), json!({}), move |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            json!({"resultType":"task","taskId":"t1","status":"working","createdAt":"x",
                "lastUpdatedAt":"x","ttlMs":null,"pollIntervalMs":0}),
        )],
        Some("tasks/get") => {
            *g.borrow_mut() += 1;
            let id = if *g.borrow() < 5 { "t1" } else { "other" };
            vec![answer(
                m,
                json!({"resultType":"complete","taskId":id,"status":"working","createdAt":"x",
                    "lastUpdatedAt":"x","ttlMs":null,"pollIntervalMs":0}),
            )]
        }
        _ => Vec::new(),
    });
    let t0 = sim.now;
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("x", json!({})).as_task(None),
        )
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    let e = sim.completion(id).unwrap().unwrap_err();
    sim.step();
    assert!(sim.now.saturating_duration_since(t0) >= Duration::from_millis(400));
    assert!(matches!(
        e,
        CallError::Task(mcp_proto::client::TaskProblem::WrongTask { .. })
    ));
    assert_eq!(sim.sent_with_method("tasks/cancel").len(), 1);
}

#[test]
fn endless_mrtr_unknown_result_types_and_huge_request_states_are_bounded() {
    let caps = ClientCapabilities::with_elicitation();
    let mut sim = sim_with(modern().capabilities(caps), json!({}), move |m| {
        match (m["method"].as_str(), m["params"]["name"].as_str()) {
            (Some("tools/call"), Some("forever")) => vec![answer(
                m,
                json!({"resultType":"input_required","requestState":"s"}),
            )],
            (Some("tools/call"), Some("odd")) => {
                vec![answer(m, json!({"resultType":"partial","content":[]}))]
            }
            (Some("tools/call"), Some("big")) => vec![answer(
                m,
                json!({"resultType":"input_required","requestState":"x".repeat(2 * 1024 * 1024)}),
            )],
            _ => Vec::new(),
        }
    });
    let e = sim
        .call(CallRequest::call_tool("forever", json!({})))
        .unwrap_err();
    assert!(matches!(e, CallError::TooManyRounds(10)), "{e:?}");
    let e = sim
        .call(CallRequest::call_tool("odd", json!({})))
        .unwrap_err();
    assert!(matches!(e, CallError::InvalidResponse(_)), "{e:?}");
    let e = sim
        .call(CallRequest::call_tool("big", json!({})))
        .unwrap_err();
    assert!(matches!(e, CallError::InvalidInputRequest(_)), "{e:?}");
}

#[test]
fn a_listen_complete_at_once_and_foreign_subscription_ids_are_handled() {
    let mut sim = sim_with(modern(), json!({}), move |m| match m["method"].as_str() {
        Some("subscriptions/listen") => vec![
            notification(
                "notifications/resources/updated",
                json!({"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":9999}}),
            ),
            answer(m, json!({"resultType":"complete"})),
        ],
        _ => Vec::new(),
    });
    let id = sim
        .client
        .call(
            sim.now,
            CallRequest::listen(&ListenFilter::new().resources()),
        )
        .unwrap();
    sim.run_until(|s| {
        s.events.iter().any(
            |e| matches!(e, Event::SubscriptionEnded { subscription, .. } if *subscription == id),
        )
    });
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::Notification(_)))
    );
    assert!(
        !sim.events
            .iter()
            .any(|e| matches!(e, Event::SubscriptionNotification { .. }))
    );
}
