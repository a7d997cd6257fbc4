//! A stdio server that exits after connecting, on the fake clock: restarted under the
//! policy (bounded, with a doubling wait), calls in flight failed once and never sent
//! again, calls made meanwhile carried to the fresh process, the era kept.

use std::time::Duration;

use mcp_proto::client::{
    CallError, CallId, CallRequest, ClientConfig, CloseReason, ConnId, ConnectionState, Event,
    RestartPolicy, Transmit,
};
use mcp_proto::server::example;
use mcp_proto::version::{Era, EraMode};
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

fn config(policy: RestartPolicy) -> ClientConfig {
    ClientConfig::new("sim", "1.0")
        .era_mode(EraMode::Auto)
        .restart(policy)
}

fn era(sim: &Sim) -> Era {
    match sim.client.state() {
        ConnectionState::Ready(e, _) => e,
        other => panic!("not ready: {other:?}; events {:?}", sim.events),
    }
}

fn restarting(sim: &Sim) -> Vec<(u32, Duration)> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::ServerRestarting { attempt, delay } => Some((*attempt, *delay)),
            _ => None,
        })
        .collect()
}

fn connected_count(sim: &Sim) -> usize {
    sim.events
        .iter()
        .filter(|e| matches!(e, Event::Connected(_)))
        .count()
}

fn echo(text: &str) -> CallRequest {
    CallRequest::call_tool("echo", json!({ "text": text }))
}

fn echoes_sent(sim: &Sim, text: &str) -> usize {
    sim.sent_with_method("tools/call")
        .iter()
        .filter(|m| m["params"]["arguments"]["text"] == text)
        .count()
}

/// Starts `request` and lets the "process" exit before it answers.
fn call_then_exit(sim: &mut Sim, request: CallRequest) -> CallId {
    let id = sim.client.call(sim.now, request).unwrap();
    let mut wire = Vec::new();
    while let Some(t) = sim.client.poll_transmit(sim.now, &mut wire) {
        if let Transmit::Write { conn, len } = t {
            sim.client.handle_written(sim.now, conn, len);
        }
    }
    for line in wire.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        sim.sent.push(serde_json::from_slice(line).unwrap());
    }
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.drain();
    id
}

#[test]
fn a_modern_server_that_exits_is_restarted_and_the_call_in_flight_fails_once() {
    let mut sim = Sim::new(config(RestartPolicy::up_to(3)), example::server());
    sim.connect();
    assert_eq!(era(&sim), Era::Modern);
    let lost = call_then_exit(&mut sim, echo("lost"));
    assert!(matches!(
        sim.completion(lost),
        Some(Err(CallError::ServerExited))
    ));
    assert_eq!(restarting(&sim), vec![(1, Duration::from_millis(500))]);
    assert_eq!(sim.client.state(), ConnectionState::AwaitingRestart);

    // Nothing is asked of the adapter before the wait is over.
    let mut wire = Vec::new();
    assert!(sim.client.poll_transmit(sim.now, &mut wire).is_none());
    assert_eq!(
        sim.client.poll_timeout(),
        Some(sim.now + Duration::from_millis(500))
    );

    // A call made meanwhile waits for the fresh process.
    let waiting = sim.client.call(sim.now, echo("later")).unwrap();
    sim.restarts.push(Box::new(example::server()));
    sim.run_until(|s| s.completion(waiting).is_some());
    assert_eq!(sim.respawns, 1);
    assert_eq!(connected_count(&sim), 2);
    assert_eq!(era(&sim), Era::Modern);
    let out = sim.completion(waiting).unwrap().unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "later");
    // The fresh process was asked what it is; the lost call never went to it.
    assert_eq!(sim.sent_with_method("server/discover").len(), 2);
    assert_eq!(echoes_sent(&sim, "lost"), 1);
    assert!(sim.sent_with_method("initialize").is_empty());
}

#[test]
fn a_legacy_server_is_initialized_again_with_the_negotiated_version() {
    let mut sim = Sim::new(
        config(RestartPolicy::up_to(1)).era_mode(EraMode::Legacy),
        example::legacy_only(),
    );
    sim.connect();
    assert_eq!(era(&sim), Era::Legacy);
    let first_version = sim.sent_with_method("initialize")[0]["params"]["protocolVersion"].clone();
    let _ = call_then_exit(&mut sim, echo("gone"));
    sim.restarts.push(Box::new(example::legacy_only()));
    let out = sim.call(echo("again")).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "again");
    let inits = sim.sent_with_method("initialize");
    assert_eq!(inits.len(), 2);
    assert_eq!(inits[1]["params"]["protocolVersion"], first_version);
    assert_eq!(sim.sent_with_method("notifications/initialized").len(), 2);
    assert!(sim.sent_with_method("server/discover").is_empty());
}

#[test]
fn restarts_in_a_row_are_bounded_and_the_wait_doubles() {
    let policy =
        RestartPolicy::up_to(2).delays(Duration::from_millis(100), Duration::from_millis(150));
    let mut sim = Sim::new(config(policy), example::server());
    sim.connect();
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.drain();
    // The fresh process dies before answering anything.
    sim.restarts
        .push(Box::new(Scripted::new(|_: &Value| Vec::new())));
    let started = sim.now;
    sim.run_until(|s| s.respawns == 1);
    assert_eq!(sim.now - started, Duration::from_millis(100));
    sim.step();
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.drain();
    assert_eq!(
        restarting(&sim),
        vec![
            (1, Duration::from_millis(100)),
            // Doubled, then capped by the policy's longest wait.
            (2, Duration::from_millis(150)),
        ]
    );
    sim.restarts
        .push(Box::new(Scripted::new(|_: &Value| Vec::new())));
    sim.run_until(|s| s.respawns == 2);
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.drain();
    // A third exit in a row closes the connection.
    assert!(sim.events.iter().any(|e| matches!(
        e,
        Event::Closed {
            reason: CloseReason::ServerExited { .. }
        }
    )));
    assert_eq!(restarting(&sim).len(), 2);
    assert_eq!(sim.client.state(), ConnectionState::Closed);
}

#[test]
fn an_answered_call_starts_a_new_run_of_restarts() {
    let mut sim = Sim::new(config(RestartPolicy::up_to(1)), example::server());
    sim.connect();
    for round in 0..3 {
        sim.client.handle_eof(sim.now, ConnId::STDIO);
        sim.drain();
        sim.restarts.push(Box::new(example::server()));
        let text = format!("round {round}");
        let out = sim.call(echo(&text)).unwrap();
        assert_eq!(out.tool_result().unwrap().text(), text);
    }
    // Each exit was the first in its run: three restarts, each after the first wait.
    assert_eq!(restarting(&sim), vec![(1, Duration::from_millis(500)); 3]);
    assert_eq!(sim.respawns, 3);
}

#[test]
fn without_a_policy_an_exit_closes_the_connection() {
    let mut sim = Sim::new(config(RestartPolicy::never()), example::server());
    sim.connect();
    let lost = call_then_exit(&mut sim, echo("x"));
    assert!(matches!(
        sim.completion(lost),
        Some(Err(CallError::Closed(CloseReason::ServerExited { .. })))
    ));
    assert!(restarting(&sim).is_empty());
    assert_eq!(sim.client.state(), ConnectionState::Closed);
}

#[test]
fn a_server_that_exits_on_its_first_probe_is_not_a_restart() {
    // The era probe killing a legacy process is negotiation, not a crash: it is
    // restarted at once, whatever the policy, and does not count as a restart.
    let mut sim = Sim::new(
        config(RestartPolicy::never()),
        Scripted::new(|_: &Value| Vec::new()),
    );
    sim.restarts.push(Box::new(example::legacy_only()));
    sim.step();
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.connect();
    assert_eq!(era(&sim), Era::Legacy);
    assert!(restarting(&sim).is_empty());
}

#[test]
fn the_calls_in_flight_when_the_server_exits_fail_in_the_order_they_were_made() {
    // They sit in a hash map; their failures must not come out in its order.
    let mut sim = Sim::new(config(RestartPolicy::up_to(3)), example::server());
    sim.connect();
    sim.events.clear();
    let calls: Vec<CallId> = (0..40)
        .map(|i| {
            let hang = CallRequest::call_tool("hang", json!({ "n": i }));
            sim.client.call(sim.now, hang).unwrap()
        })
        .collect();
    sim.step();
    assert_eq!(sim.sent_with_method("tools/call").len(), 40);
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.drain();
    let failed: Vec<CallId> = sim
        .events
        .iter()
        .filter_map(|e| match e {
            Event::CallCompleted { call, outcome } => {
                assert_eq!(outcome.clone().unwrap_err(), CallError::ServerExited);
                Some(*call)
            }
            _ => None,
        })
        .collect();
    assert_eq!(failed, calls);
}

/// A call following its task, between two polls, when the process exits: the task was
/// the old process's, so the call fails with the exit. Its `tools/call` already ran and
/// made the task: the fresh process never gets it (that would run the tool again).
#[test]
fn a_task_being_polled_when_the_server_exits_is_not_made_again_on_the_fresh_one() {
    use mcp_proto::server::{Tool, ToolCall, ToolOutcome};
    let server = || {
        example::server_with(|c| {
            let slow = Tool::new(
                "slow",
                "A task",
                json!({"type": "object"}),
                |_: &ToolCall<'_>| ToolOutcome::text("done"),
            );
            c.tools.push(slow.as_task(5));
        })
    };
    let mut sim = Sim::new(config(RestartPolicy::up_to(1)), server());
    sim.connect();
    let request = CallRequest::call_tool("slow", json!({})).as_task(None);
    let task = sim.client.call(sim.now, request).unwrap();
    sim.run_until(|s| {
        s.events
            .iter()
            .any(|e| matches!(e, Event::TaskCreated { .. }))
    });
    assert!(sim.completion(task).is_none(), "the task is being polled");
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.drain();
    sim.restarts.push(Box::new(server()));
    sim.run_until(|s| s.completion(task).is_some());
    assert!(
        matches!(sim.completion(task), Some(Err(CallError::ServerExited))),
        "{:?}",
        sim.completion(task)
    );
    // The fresh process connects; the tool never reaches it.
    let out = sim.call(echo("after")).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "after");
    assert_eq!(sim.respawns, 1);
    let slow: Vec<_> = sim.sent_with_method("tools/call");
    let slow = slow
        .iter()
        .filter(|m| m["params"]["name"] == "slow")
        .count();
    assert_eq!(slow, 1, "the tool ran once");
}

/// A server whose process exited while something it started keeps its stdout open:
/// after the drain its stdout counts as ended, calls in flight failed and a restart is
/// due. What the old pipe brings after that is the gone process's: a request in it is
/// not shown to the user, nothing is written back, and the fresh process is not
/// answered a request it never made.
#[test]
fn what_a_gone_process_writes_after_its_drain_is_not_read() {
    use mcp_proto::client::{AcceptDefaults, EXIT_DRAIN};
    let mut sim = Sim::new(
        config(RestartPolicy::up_to(1))
            .era_mode(EraMode::Legacy)
            .capabilities(mcp_proto::model::ClientCapabilities::with_elicitation()),
        example::legacy_only(),
    );
    sim.handler = Some(Box::new(AcceptDefaults));
    sim.connect();
    sim.client.handle_process_exited(sim.now);
    sim.advance(EXIT_DRAIN);
    assert_eq!(restarting(&sim).len(), 1, "{:?}", sim.events);
    let late = json!({"jsonrpc":"2.0","id":77,"method":"elicitation/create","params":{
        "message":"still there?","requestedSchema":{"type":"object","properties":{}}}});
    let mut line = late.to_string().into_bytes();
    line.push(b'\n');
    sim.client.handle_read(sim.now, ConnId::STDIO, &line);
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.drain();
    assert!(
        !sim.events
            .iter()
            .any(|e| matches!(e, Event::InputRequested { .. })),
        "{:?}",
        sim.events
    );
    let mut wire = Vec::new();
    while let Some(t) = sim.client.poll_transmit(sim.now, &mut wire) {
        assert!(!matches!(t, Transmit::Write { .. }), "wrote {t:?}");
    }
    // The fresh process connects and is never answered request 77.
    sim.restarts.push(Box::new(example::legacy_only()));
    let out = sim.call(echo("fresh")).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "fresh");
    assert!(sim.sent.iter().all(|m| m["id"] != 77), "{:?}", sim.sent);
}
