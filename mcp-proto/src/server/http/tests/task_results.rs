//! A 2025 `tasks/result` parked on its task's input requests in a legacy session is held
//! in that session's state, not the machine's, while other sessions are served: it is
//! still answered when its task expires, as over stdio.

use std::time::Duration;

use super::streams::open_session;
use super::*;
use crate::server::InputRequestSpec;
use crate::server::tasks::TTL_MS;

const V: &str = "2025-11-25";

/// Sessions over a server whose `ask` task asks one question, then greets.
fn endpoint() -> HttpEndpoint {
    endpoint_with(HttpEndpointConfig::default())
}

/// [`endpoint`] with `config`.
pub(super) fn endpoint_with(config: HttpEndpointConfig) -> HttpEndpoint {
    let tool = Tool::new(
        "ask",
        "",
        json!({"type": "object"}),
        |c: &ToolCall<'_>| match c.inputs.get("who") {
            Some(_) => ToolOutcome::text("hello"),
            None => ToolOutcome::NeedInput(vec![(
                "who".into(),
                InputRequestSpec::form("Name?", json!({"type": "object"})),
            )]),
        },
    )
    .as_task(0);
    let server = example::server_with(|c| c.tools.push(tool));
    HttpEndpoint::with_sessions(server, config, &[7; 32])
}

pub(super) fn in_session(session: &str, body: &Value) -> HttpRequest {
    post(
        body,
        &[("Mcp-Session-Id", session), ("MCP-Protocol-Version", V)],
    )
}

/// Session `a` makes an `ask` task and waits on its `tasks/result` (id 2), which
/// carries the task's question; then session `b` is served. The stream of the
/// `tasks/result`.
fn parked_result(ep: &mut HttpEndpoint, a: &str, b: &str) -> HttpStream {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask", "arguments": {}, "task": {}}});
    let created = complete(ep.handle_request(now(), &in_session(a, &call)));
    let task = body_json(&created)["result"]["task"]["taskId"].clone();
    let result = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
        "params": {"taskId": task}});
    let wait = stream(ep.handle_request(now(), &in_session(a, &result)));
    let asked = messages(&wait.response().body);
    assert!(
        asked.iter().any(|m| m["method"] == "elicitation/create"),
        "{asked:?}"
    );
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let _ = ep.handle_request(now(), &in_session(b, &ping));
    wait
}

fn answer_of(ep: &mut HttpEndpoint, wait: &HttpStream) -> Option<Value> {
    let mut out = Vec::new();
    ep.poll_stream(wait, &mut out);
    messages(&dechunk(&out))
        .into_iter()
        .find(|m| m["id"] == 2 && m.get("method").is_none())
}

use super::streams::{dechunk, messages};

#[test]
fn a_tasks_result_parked_in_a_session_is_answered_when_its_task_expires() {
    let mut ep = endpoint();
    let (a, b) = (open_session(&mut ep, V), open_session(&mut ep, V));
    let wait = parked_result(&mut ep, &a, &b);
    let expiry = now().saturating_add(Duration::from_millis(TTL_MS));
    assert_eq!(
        ep.poll_timeout(),
        Some(expiry),
        "nothing wakes the endpoint for the held tasks/result"
    );
    assert_answered_not_found(&mut ep, &wait, expiry, "an expired task");
}

/// Another session's request after the expiry drops the task from the store before the
/// driver's timer fires: the parked `tasks/result` is then due at once.
#[test]
fn a_tasks_result_parked_in_a_session_is_answered_when_its_task_is_gone() {
    let mut ep = endpoint();
    let (a, b) = (open_session(&mut ep, V), open_session(&mut ep, V));
    let wait = parked_result(&mut ep, &a, &b);
    let late = now().saturating_add(Duration::from_millis(TTL_MS + 1));
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/list"});
    let _ = ep.handle_request(late, &in_session(&b, &list));
    assert!(
        ep.poll_timeout().is_some_and(|t| t <= late),
        "{:?}",
        ep.poll_timeout()
    );
    assert_answered_not_found(&mut ep, &wait, late, "a task gone");
}

/// At `due`, the endpoint answers the parked `tasks/result` of `wait` with `-32602` (the
/// task of `what` is not found), and then waits for nothing.
fn assert_answered_not_found(ep: &mut HttpEndpoint, wait: &HttpStream, due: Instant, what: &str) {
    assert!(ep.handle_due(due));
    let answer = answer_of(ep, wait);
    assert!(
        answer
            .as_ref()
            .is_some_and(|m| m["error"]["code"] == -32602),
        "the tasks/result of {what} is never answered: {answer:?}"
    );
    assert_eq!(ep.poll_timeout(), None);
}

/// An endpoint given entropy keys the task ids of a server nobody seeded: no `task-1`
/// for a client to guess another's by.
#[test]
fn an_endpoint_with_sessions_keys_the_task_ids_of_an_unseeded_server() {
    let mut ep = endpoint();
    let session = open_session(&mut ep, V);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask", "arguments": {}, "task": {}}});
    let created = complete(ep.handle_request(now(), &in_session(&session, &call)));
    let id = body_json(&created)["result"]["task"]["taskId"].clone();
    let id = id.as_str().expect("a task id");
    assert!(!id.starts_with("task-"), "{id}");
    assert_eq!(id.len(), 32, "{id}");
}

/// A session opened at `at` as `principal`, whose `ask` task's `tasks/result` (id 2) is
/// parked on its question: the session and the stream of the `tasks/result`.
pub(super) fn park_as(ep: &mut HttpEndpoint, at: Instant, principal: &str) -> (String, HttpStream) {
    let init = post(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": V, "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}}),
        &[],
    );
    let opened = complete(ep.handle_request_as(at, &init, Some(principal)));
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask", "arguments": {}, "task": {}}});
    let created = complete(ep.handle_request_as(at, &in_session(&session, &call), Some(principal)));
    let task = body_json(&created)["result"]["task"]["taskId"].clone();
    let result = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
        "params": {"taskId": task}});
    let wait = ep.handle_request_as(at, &in_session(&session, &result), Some(principal));
    (session, stream(wait))
}

/// With hundreds of sessions each holding a parked `tasks/result`, the endpoint's next
/// deadline is found without looking at their tasks one by one: a driver asks for it
/// after every event.
#[test]
fn the_next_deadline_looks_at_no_task_per_session_with_a_parked_tasks_result() {
    let config = HttpEndpointConfig {
        max_open_streams: 4096,
        ..HttpEndpointConfig::default()
    };
    let mut ep = endpoint_with(config);
    let n = 256;
    // Several principals, to stay within the tasks one principal may keep.
    for i in 0..n {
        park_as(&mut ep, now(), &format!("p{}", i % 8));
    }
    assert_eq!(ep.server().tasks.parked_elsewhere_ids().len(), n);
    let before = crate::server::tasks::looked_at();
    let due = ep.poll_timeout();
    let looked = crate::server::tasks::looked_at() - before;
    assert_eq!(
        due,
        Some(now().saturating_add(Duration::from_millis(TTL_MS)))
    );
    assert!(
        looked <= 2,
        "{looked} tasks looked at for the next deadline of {n} parked sessions"
    );
}

/// Parked `tasks/result` requests of sessions whose tasks were made at different times
/// are answered one by one as each task expires, the oldest first; the endpoint's next
/// deadline is the next one's expiry each time.
#[test]
fn parked_tasks_results_are_answered_in_the_order_their_tasks_expire() {
    let mut ep = endpoint();
    let ttl = Duration::from_millis(TTL_MS);
    let at = |s: u64| now().saturating_add(Duration::from_secs(s));
    // Each a second apart (the order of their sessions' ids is random).
    let parked: Vec<(u64, HttpStream)> = (0..3)
        .map(|s| (s, park_as(&mut ep, at(s), "p").1))
        .collect();
    for s in 0..3 {
        let expiry = at(s).saturating_add(ttl);
        assert_eq!(ep.poll_timeout(), Some(expiry), "the deadline of task {s}");
        assert!(!ep.handle_due(expiry - Duration::from_millis(1)));
        assert!(ep.handle_due(expiry));
        for (made, wait) in &parked {
            let answer = answer_of(&mut ep, wait);
            assert_eq!(
                answer.is_some(),
                *made == s,
                "at the expiry of task {s}, the tasks/result of task {made}: {answer:?}"
            );
        }
    }
    assert_eq!(ep.poll_timeout(), None);
}
