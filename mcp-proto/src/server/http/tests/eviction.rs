//! Which session an `initialize` into a full session table evicts (see
//! [`super::super::sessions`]): one not in use, one no request named since its
//! `initialize` first, then the one unused longest; with every session in use, the
//! one unused longest of the principal holding the most sessions held only by their
//! tasks, while it holds more than one beyond the newcomer's principal.

use std::time::Duration;

use super::streams::get;
use super::task_results::{endpoint_with, in_session};
use super::*;

const V: &str = "2025-11-25";

fn at(secs: u64) -> Instant {
    now().saturating_add(Duration::from_secs(secs))
}

/// An endpoint with sessions, at most `max` of them.
fn full_at(max: usize) -> HttpEndpoint {
    endpoint_with(HttpEndpointConfig {
        max_sessions: max,
        max_open_streams: 4096,
        max_get_streams: 4096,
        ..HttpEndpointConfig::default()
    })
}

/// A session `principal` initialized at `secs`, or the status of the refusal.
fn try_open(ep: &mut HttpEndpoint, secs: u64, principal: Option<&str>) -> Result<String, u16> {
    let init = post(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": V, "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}}),
        &[],
    );
    let r = complete(ep.handle_request_as(at(secs), &init, principal));
    match r.header("mcp-session-id") {
        Some(id) if r.status == 200 => Ok(id.to_owned()),
        _ => Err(r.status),
    }
}

fn open(ep: &mut HttpEndpoint, secs: u64, principal: Option<&str>) -> String {
    try_open(ep, secs, principal).expect("a session")
}

/// `session` named by a request at `secs`.
fn ping(ep: &mut HttpEndpoint, secs: u64, session: &str, principal: Option<&str>) {
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let r = complete(ep.handle_request_as(at(secs), &in_session(session, &ping), principal));
    assert_eq!(r.status, 200, "{r:?}");
}

/// A session opened at `secs` whose `ask` task waits for input (its result is due):
/// the session and the task.
fn with_task(ep: &mut HttpEndpoint, secs: u64, principal: Option<&str>) -> (String, Value) {
    let session = open(ep, secs, principal);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask", "arguments": {}, "task": {}}});
    let r = ep.handle_request_as(at(secs), &in_session(&session, &call), principal);
    let created = complete(r);
    let task = body_json(&created)["result"]["task"]["taskId"].clone();
    assert!(task.is_string(), "{created:?}");
    (session, task)
}

/// A session opened at `secs` whose `tasks/result` is parked on its task's question.
fn parked(ep: &mut HttpEndpoint, secs: u64, principal: Option<&str>) -> (String, HttpStream) {
    let (session, task) = with_task(ep, secs, principal);
    let result = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
        "params": {"taskId": task}});
    let wait = ep.handle_request_as(at(secs), &in_session(&session, &result), principal);
    (session, stream(wait))
}

/// A session opened at `secs` with a `GET` stream its client holds.
fn listening(ep: &mut HttpEndpoint, secs: u64, principal: Option<&str>) -> (String, HttpStream) {
    let session = open(ep, secs, principal);
    let s = stream(ep.handle_request_as(at(secs), &get(Some(&session), None), principal));
    (session, s)
}

/// The name of the session of `named` an `initialize` of `principal` at `secs`
/// evicted (`None`: none of them), or the status it was refused with; the newcomer's
/// session, with a task whose result is due if `tasked`, is named `name` from then on.
fn evicts<'a>(
    ep: &mut HttpEndpoint,
    named: &mut Vec<(&'a str, String)>,
    (secs, principal, tasked): (u64, Option<&str>, bool),
    name: &'a str,
) -> Result<Option<&'a str>, u16> {
    let session = try_open(ep, secs, principal)?;
    if tasked {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ask", "arguments": {}, "task": {}}});
        let r = ep.handle_request_as(at(secs), &in_session(&session, &call), principal);
        assert_eq!(complete(r).status, 200);
    }
    let table = ep.sessions.as_ref().expect("sessions");
    let gone: Vec<usize> = (0..named.len())
        .filter(|i| !table.holds(&named[*i].1))
        .collect();
    assert!(gone.len() <= 1, "{gone:?}");
    let evicted = gone.first().map(|i| named.remove(*i).0);
    named.push((name, session));
    Ok(evicted)
}

/// Sessions not in use go first: those no request named since their `initialize`, the
/// one unused longest first, then those named, by last use; sessions with a task
/// whose result is due, a parked `tasks/result`, a `GET` stream or a request being
/// handled are passed over, however long unused.
#[test]
fn a_full_table_evicts_the_idle_session_nobody_came_back_to_unused_longest() {
    let mut ep = full_at(9);
    let p = Some("p");
    let task = with_task(&mut ep, 0, p).0;
    let (listens, _get) = listening(&mut ep, 1, p);
    let (parks, _wait) = parked(&mut ep, 2, p);
    let mut named: Vec<(&str, String)> =
        vec![("task", task), ("listens", listens), ("parks", parks)];
    for (secs, name, who) in [
        (3, "fresh_3", p),
        (4, "back_4", p),
        (5, "fresh_5", p),
        (6, "back_6", p),
        (7, "fresh_7", None),
        (8, "back_8", None),
    ] {
        named.push((name, open(&mut ep, secs, who)));
    }
    let id =
        |named: &[(&str, String)], n: &str| named.iter().find(|(m, _)| *m == n).unwrap().1.clone();
    // Named again: the later one first, the earlier one last.
    for (secs, name, who) in [(10, "back_6", p), (11, "back_8", None), (12, "back_4", p)] {
        let session = id(&named, name);
        ping(&mut ep, secs, &session, who);
    }
    let mut order = Vec::new();
    let names = ["n20", "n21", "n22", "n23", "n24", "n25", "n26", "n27"];
    for (secs, name) in (20..).zip(names) {
        order.push(evicts(&mut ep, &mut named, (secs, Some("q"), false), name).unwrap());
        // Its client comes back at once.
        let session = id(&named, name);
        ping(&mut ep, secs, &session, Some("q"));
    }
    assert_eq!(
        order,
        [
            Some("fresh_3"),
            Some("fresh_5"),
            Some("fresh_7"),
            Some("back_6"),
            Some("back_8"),
            Some("back_4"),
            Some("n20"),
            Some("n21"),
        ]
    );
    let left: Vec<&str> = named.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        left,
        [
            "task", "listens", "parks", "n22", "n23", "n24", "n25", "n26", "n27"
        ]
    );
    assert_eq!(ep.sessions(), 9);
}

/// With every session in use, those held only by their tasks are shared out: the
/// principal holding the most (the last by name of those tied; the anonymous ones count
/// as one principal, first by name) loses its session unused longest (the first by id
/// of those tied), while it holds more than one beyond the newcomer's principal.
/// Sessions with a stream or a parked call never count, nor go.
#[test]
fn with_every_session_in_use_the_principal_holding_the_most_gives_way() {
    let mut ep = full_at(8);
    let mut named: Vec<(&str, String)> = Vec::new();
    for (secs, name, who) in [
        (0, "a0", Some("a")),
        (1, "a1", Some("a")),
        (2, "a2", Some("a")),
        (3, "b3", Some("b")),
        (4, "b4", Some("b")),
        (5, "anon5", None),
    ] {
        named.push((name, with_task(&mut ep, secs, who).0));
    }
    let (listens, _get) = listening(&mut ep, 6, Some("c"));
    let (parks, _wait) = parked(&mut ep, 7, Some("d"));
    named.push(("c_listens", listens));
    named.push(("d_parks", parks));
    let a0 = named[0].1.clone();
    ping(&mut ep, 8, &a0, Some("a"));
    let mut order = Vec::new();
    for (secs, who, name) in [
        (10, Some("e"), "e10"),
        (11, Some("f"), "f11"),
        (12, Some("g"), "g12"),
        (13, Some("h"), "h13"),
        (14, Some("a"), "a14"),
        (15, None, "anon15"),
        (16, Some("g"), "g16"),
    ] {
        order.push(evicts(&mut ep, &mut named, (secs, who, true), name));
    }
    assert_eq!(
        order,
        [
            Ok(Some("a1")),
            Ok(Some("b3")),
            Ok(Some("a2")),
            Err(503),
            Err(503),
            Err(503),
            Err(503),
        ]
    );
    let left: Vec<&str> = named.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        left,
        [
            "a0",
            "b4",
            "anon5",
            "c_listens",
            "d_parks",
            "e10",
            "f11",
            "g12"
        ]
    );
}

/// Ties: anonymous sessions (one principal, first by name) against a named principal
/// holding as many; sessions of one principal last used at the same instant go in the
/// order of their ids.
#[test]
fn ties_between_principals_and_between_sessions_are_broken_alike() {
    let mut ep = full_at(6);
    let mut named: Vec<(&str, String)> = Vec::new();
    for (secs, name, who) in [
        (0, "anon_a", None),
        (0, "anon_b", None),
        (1, "x_a", Some("x")),
        (1, "x_b", Some("x")),
        (2, "y", Some("y")),
    ] {
        named.push((name, with_task(&mut ep, secs, who).0));
    }
    let (listens, _get) = listening(&mut ep, 3, Some("z"));
    named.push(("z_listens", listens));
    let first = |named: &[(&'static str, String)], a: usize, b: usize| -> &'static str {
        if named[a].1 < named[b].1 {
            named[a].0
        } else {
            named[b].0
        }
    };
    let x_first = first(&named, 2, 3);
    let anon_first = first(&named, 0, 1);
    let mut order = Vec::new();
    for (secs, who, name) in [
        (5, Some("w"), "w"),
        (6, Some("v"), "v"),
        (7, Some("u"), "u"),
        (8, None, "anon"),
    ] {
        order.push(evicts(&mut ep, &mut named, (secs, who, true), name));
    }
    assert_eq!(
        order,
        [Ok(Some(x_first)), Ok(Some(anon_first)), Err(503), Err(503)]
    );
}

/// An idle session (no task due) of a principal is preferred to any session held by
/// tasks, however the principals share the table; once its task's result is fetched a
/// session is no longer in use.
#[test]
fn an_idle_session_goes_before_any_fair_share() {
    let mut ep = full_at(4);
    let mut named: Vec<(&str, String)> = Vec::new();
    for (secs, name) in [(0, "a0"), (1, "a1"), (2, "a2")] {
        named.push((name, with_task(&mut ep, secs, Some("a")).0));
    }
    named.push(("b_idle", open(&mut ep, 3, Some("b"))));
    let b = named[3].1.clone();
    ping(&mut ep, 4, &b, Some("b"));
    let got = evicts(&mut ep, &mut named, (5, Some("c"), true), "c5");
    assert_eq!(got, Ok(Some("b_idle")));
    let got = evicts(&mut ep, &mut named, (6, Some("d"), true), "d6");
    assert_eq!(got, Ok(Some("a0")));
}

/// With hundreds of sessions in use (parked calls, tasks whose results are due), an
/// `initialize` into the full table finds the session to evict, or that there is none,
/// without looking at them one by one: any client may send one.
#[test]
fn initializing_into_a_table_full_of_sessions_in_use_looks_at_few_of_them() {
    let n = 256;
    let mut ep = full_at(n);
    let mut named: Vec<(&str, String)> = Vec::new();
    // Several principals, to stay within the tasks one principal may keep.
    let principals = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"];
    for i in 0..n {
        let who = Some(principals[i % 8]);
        let session = if i % 2 == 0 {
            with_task(&mut ep, 0, who).0
        } else {
            parked(&mut ep, 0, who).0
        };
        named.push(("old", session));
    }
    let looked_at = |ep: &HttpEndpoint| ep.sessions.as_ref().unwrap().looked_at.get();
    let mut looks = Vec::new();
    let mut got = Vec::new();
    for (secs, who) in [(1, Some("new")), (2, Some("p0")), (3, Some("new"))] {
        let before = looked_at(&ep);
        got.push(evicts(&mut ep, &mut named, (secs, who, true), "new").map(|e| e.is_some()));
        looks.push(looked_at(&ep) - before);
    }
    // Only the sessions held by their tasks alone count: 32 for each of p0, p2, p4 and
    // p6. A newcomer takes one of them; p0, holding as many as the most, is refused.
    assert_eq!(got, [Ok(true), Err(503), Ok(true)]);
    assert!(
        looks.iter().all(|l| *l <= 4),
        "{looks:?} sessions looked at to make room among {n} in use"
    );
}

/// Sessions whose clients hold their `GET` streams stay, however long idle, and an
/// `initialize` into a table full of them finds that without passing over each one:
/// a client that opens many streams and leaves them does not make every later
/// `initialize` walk them.
#[test]
fn initializing_into_a_table_full_of_idle_listening_sessions_looks_at_few_of_them() {
    let n = 256;
    let mut ep = full_at(n);
    let principals: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    let mut streams = Vec::new();
    for who in &principals {
        streams.push(listening(&mut ep, 0, Some(who)));
    }
    // Long past the idle timeout (30 minutes) of every one of them.
    let later = 4 * 3600;
    let looked_at = |ep: &HttpEndpoint| ep.sessions.as_ref().unwrap().looked_at.get();
    let mut looks = Vec::new();
    for i in 0..3 {
        let before = looked_at(&ep);
        assert_eq!(try_open(&mut ep, later + i, Some("new")), Err(503));
        looks.push(looked_at(&ep) - before);
    }
    assert!(
        (streams.iter()).all(|(s, _)| ep.sessions.as_ref().unwrap().holds(s)),
        "a listening session was dropped"
    );
    assert!(
        looks.iter().all(|l| *l <= 4),
        "{looks:?} sessions looked at to make room among {n} listening"
    );
    // Once its client lets go of its stream, an idle session expires as before.
    let (gone, stream) = streams.remove(0);
    ep.cancel_stream(at(later), &stream);
    assert!(try_open(&mut ep, later + 10, Some("new")).is_ok());
    assert!(!ep.sessions.as_ref().unwrap().holds(&gone));
}

/// A session whose task expired while no request of it came is no longer in use: the
/// task store's change reaches the table without a request of that session.
#[test]
fn a_session_whose_task_expired_unseen_may_be_evicted() {
    let mut ep = full_at(3);
    let mut named: Vec<(&str, String)> = Vec::new();
    for (secs, name, who) in [(0, "a0", "a"), (300, "b300", "b"), (301, "c301", "c")] {
        named.push((name, with_task(&mut ep, secs, Some(who)).0));
    }
    let ttl = Duration::from_millis(crate::server::tasks::TTL_MS).as_secs();
    // The driver's timer: the first task expires.
    ep.handle_timeout(at(ttl + 1));
    let got = evicts(&mut ep, &mut named, (ttl + 2, Some("d"), true), "d");
    assert_eq!(got, Ok(Some("a0")));
    // Every session left is in use, one a principal's.
    let got = evicts(&mut ep, &mut named, (ttl + 3, Some("e"), true), "e");
    assert_eq!(got, Err(503));
}
