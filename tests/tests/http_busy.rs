//! A server too busy for a request (`503` or `429` with `Retry-After`), on the fake
//! clock: the request is sent again, unchanged, once the wait is over, within the
//! call's deadline and a bounded number of times; otherwise the call fails at once
//! with the status.

use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::client::{CallError, CallRequest, ClientConfig, Event};
use mcp_proto::version::EraMode;
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use serde_json::{Value, json};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("http-busy", "1.0").era_mode(mode)
}

fn result(req: &SeenRequest, result: Value) -> Reply {
    let body = json!({"jsonrpc":"2.0","id":req.body["id"],"result":result});
    Reply::json(200, &body)
}

fn discover(req: &SeenRequest) -> Reply {
    result(
        req,
        json!({"resultType":"complete","supportedVersions":["2026-07-28"],
            "capabilities":{"tools":{}},"ttlMs":0}),
    )
}

fn tool_result(req: &SeenRequest) -> Reply {
    let text = req.body["params"]["arguments"]["text"].clone();
    result(
        req,
        json!({"resultType":"complete","content":[{"type":"text","text":text}]}),
    )
}

fn no_tools(req: &SeenRequest) -> Reply {
    result(req, json!({"resultType":"complete","ttlMs":0,"tools":[]}))
}

/// `status` with `Retry-After: retry_after` (when given) and a JSON-RPC error body, as
/// this crate's server writes it.
fn busy(req: &SeenRequest, status: u16, retry_after: Option<&str>) -> Reply {
    let body = json!({"jsonrpc":"2.0","id":req.body["id"],
        "error":{"code":-32603,"message":"the server is busy"}})
    .to_string();
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(r) = retry_after {
        headers.push(("Retry-After", r));
    }
    Reply::with_body(status, &headers, &body)
}

/// A modern server whose first `turned_away` tool calls get `status` with
/// `retry_after`, and the rest their result.
fn modern_busy(
    turned_away: usize,
    status: u16,
    retry_after: Option<&'static str>,
) -> impl FnMut(&SeenRequest) -> Reply {
    let mut calls = 0;
    move |req| match req.rpc_method() {
        "server/discover" => discover(req),
        "tools/list" => no_tools(req),
        "tools/call" => {
            calls += 1;
            if calls <= turned_away {
                busy(req, status, retry_after)
            } else {
                tool_result(req)
            }
        }
        _ => Reply::with_body(400, &[], "?"),
    }
}

/// The legacy handshake of a server whose `initialize` opens session `session`: the
/// answer to the handshake's requests and to the `GET` (no stream), else `None`.
fn legacy_handshake(req: &SeenRequest, session: &str) -> Option<Reply> {
    Some(match (req.method.as_str(), req.rpc_method()) {
        ("POST", "initialize") => {
            let body = json!({"jsonrpc":"2.0","id":req.body["id"],"result":{
                "protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                "serverInfo":{"name":"legacy","version":"1"}}});
            let headers = [
                ("Content-Type", "application/json"),
                ("Mcp-Session-Id", session),
            ];
            Reply::with_body(200, &headers, &body.to_string())
        }
        ("POST", "notifications/initialized") => Reply::accepted(),
        ("GET", _) => Reply::with_body(405, &[], ""),
        _ => return None,
    })
}

fn echo(text: &str) -> CallRequest {
    CallRequest::call_tool("echo", json!({ "text": text }))
}

/// When each request of `method` was written.
fn times<F: FnMut(&SeenRequest) -> Reply>(sim: &HttpSim<F>, method: &str) -> Vec<Instant> {
    sim.requests
        .iter()
        .zip(&sim.request_times)
        .filter(|(r, _)| r.rpc_method() == method)
        .map(|(_, t)| *t)
        .collect()
}

fn http_status(outcome: Option<Result<mcp_proto::client::CallOutput, CallError>>) -> Option<u16> {
    match outcome {
        Some(Err(CallError::Http(f))) => f.status,
        other => panic!("expected an HTTP failure, got {other:?}"),
    }
}

#[test]
fn a_call_turned_away_with_retry_after_is_sent_again_unchanged_after_the_wait() {
    let mut sim = HttpSim::new(config(EraMode::Auto), modern_busy(1, 503, Some("2")));
    sim.connect();
    let out = sim.call(echo("hi")).expect("the second try's result");
    assert_eq!(out.tool_result().unwrap().text(), "hi");
    let calls = sim.with_method("tools/call");
    assert_eq!(calls.len(), 2);
    // The same request: the first never ran.
    assert_eq!(calls[0].body, calls[1].body);
    assert_eq!(calls[0].header("mcp-method"), calls[1].header("mcp-method"));
    let at = times(&sim, "tools/call");
    assert_eq!(
        at[1].saturating_duration_since(at[0]),
        Duration::from_secs(2)
    );
}

#[test]
fn a_429_is_waited_out_like_a_503_on_a_legacy_session() {
    let mut calls = 0;
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        if let Some(reply) = legacy_handshake(req, "s1") {
            return reply;
        }
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "tools/call") => {
                calls += 1;
                if calls == 1 {
                    busy(req, 429, Some("1"))
                } else {
                    tool_result(req)
                }
            }
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let out = sim.call(echo("legacy")).expect("the second try's result");
    assert_eq!(out.tool_result().unwrap().text(), "legacy");
    let calls = sim.with_method("tools/call");
    assert_eq!(calls.len(), 2);
    assert!(
        calls
            .iter()
            .all(|c| c.header("mcp-session-id") == Some("s1"))
    );
}

#[test]
fn without_a_usable_retry_after_the_call_fails_at_once_with_the_status() {
    // None, an HTTP date (no wall clock here), and a wait past `max_retry_after`.
    for retry_after in [None, Some("Wed, 21 Oct 2026 07:28:00 GMT"), Some("11")] {
        let mut sim = HttpSim::new(config(EraMode::Auto), modern_busy(1, 503, retry_after));
        sim.connect();
        let started = sim.now;
        let call = sim.start(echo("x"));
        sim.run_until(|s| s.completion(call).is_some());
        assert_eq!(
            http_status(sim.completion(call)),
            Some(503),
            "{retry_after:?}"
        );
        assert_eq!(sim.now, started, "no wait for {retry_after:?}");
        assert_eq!(sim.with_method("tools/call").len(), 1);
    }
}

#[test]
fn a_wait_past_the_calls_deadline_fails_the_call_at_once() {
    let mut sim = HttpSim::new(config(EraMode::Auto), modern_busy(1, 503, Some("5")));
    sim.connect();
    let started = sim.now;
    let call = sim.start(echo("x").timeout(Duration::from_secs(3)));
    sim.run_until(|s| s.completion(call).is_some());
    assert_eq!(http_status(sim.completion(call)), Some(503));
    assert_eq!(sim.now, started);
    assert_eq!(sim.with_method("tools/call").len(), 1);
}

/// The waits grow (the server's `Retry-After`, never less than a backoff doubling from
/// 500 ms, up to `max_retry_after`), at most `max_busy_retries` (8) times; then the call
/// fails with the status.
#[test]
fn a_server_that_stays_busy_is_asked_again_with_growing_waits_then_the_call_fails() {
    let mut sim = HttpSim::new(
        config(EraMode::Auto),
        modern_busy(usize::MAX, 503, Some("1")),
    );
    sim.connect();
    let call = sim.start(echo("x").timeout(Duration::from_secs(120)));
    sim.run_until(|s| s.completion(call).is_some());
    assert_eq!(http_status(sim.completion(call)), Some(503));
    let at = times(&sim, "tools/call");
    let gaps: Vec<u64> = at
        .windows(2)
        .map(|w| w[1].saturating_duration_since(w[0]).as_secs())
        .collect();
    assert_eq!(
        gaps,
        [1, 1, 2, 4, 8, 10, 10, 10],
        "the first try and eight more"
    );
}

/// The call's deadline bounds the tries before their count does.
#[test]
fn the_calls_deadline_ends_the_tries_first() {
    let mut sim = HttpSim::new(
        config(EraMode::Auto),
        modern_busy(usize::MAX, 503, Some("1")),
    );
    sim.connect();
    let started = sim.now;
    let call = sim.start(echo("x").timeout(Duration::from_secs(10)));
    sim.run_until(|s| s.completion(call).is_some());
    assert_eq!(http_status(sim.completion(call)), Some(503));
    // Tries at 0, 1, 2, 4 and 8 s; the next would be at 16 s, past the deadline.
    assert_eq!(times(&sim, "tools/call").len(), 5);
    assert_eq!(
        sim.now.saturating_duration_since(started),
        Duration::from_secs(8)
    );
}

#[test]
fn a_call_cancelled_while_it_waits_is_not_sent_again() {
    let mut sim = HttpSim::new(config(EraMode::Auto), modern_busy(1, 503, Some("2")));
    sim.connect();
    let call = sim.start(echo("x"));
    sim.run_until(|s| !s.with_method("tools/call").is_empty());
    sim.step();
    assert!(sim.completion(call).is_none(), "waiting out the server");
    sim.client.cancel(sim.now, call).unwrap();
    sim.step();
    assert!(matches!(
        sim.completion(call),
        Some(Err(CallError::Cancelled))
    ));
    sim.advance(Duration::from_secs(3));
    assert_eq!(sim.with_method("tools/call").len(), 1);
}

#[test]
fn a_busy_server_turning_away_the_probe_is_asked_again_and_connects() {
    let mut discovers = 0;
    let mut sim = HttpSim::new(config(EraMode::Auto), move |req| match req.rpc_method() {
        "server/discover" => {
            discovers += 1;
            if discovers == 1 {
                busy(req, 503, Some("1"))
            } else {
                discover(req)
            }
        }
        "tools/list" => no_tools(req),
        _ => tool_result(req),
    });
    sim.connect();
    assert!(
        sim.events.iter().any(|e| matches!(e, Event::Connected(_))),
        "{:?}",
        sim.events
    );
    let at = times(&sim, "server/discover");
    assert_eq!(at.len(), 2);
    assert_eq!(
        at[1].saturating_duration_since(at[0]),
        Duration::from_secs(1)
    );
}

/// Not only a call's first request: the second page of a listing, turned away, is
/// sent again with its cursor.
#[test]
fn a_later_page_of_a_listing_turned_away_is_sent_again_with_its_cursor() {
    let mut pages = 0;
    let mut sim = HttpSim::new(config(EraMode::Auto), move |req| match req.rpc_method() {
        "server/discover" => discover(req),
        "tools/list" if req.body["params"]["cursor"].is_null() => result(
            req,
            json!({"resultType":"complete","ttlMs":0,"nextCursor":"p2",
                    "tools":[{"name":"a","inputSchema":{"type":"object"}}]}),
        ),
        "tools/list" => {
            pages += 1;
            if pages == 1 {
                busy(req, 503, Some("1"))
            } else {
                result(
                    req,
                    json!({"resultType":"complete","ttlMs":0,
                            "tools":[{"name":"b","inputSchema":{"type":"object"}}]}),
                )
            }
        }
        _ => Reply::with_body(400, &[], "?"),
    });
    sim.connect();
    let out = sim.call(CallRequest::list_tools()).expect("both pages");
    assert_eq!(out.items.len(), 2);
    let lists = sim.with_method("tools/list");
    assert_eq!(lists.len(), 3);
    assert_eq!(lists[1].body, lists[2].body);
    assert_eq!(lists[2].body["params"]["cursor"], "p2");
}

/// A tool call waiting out a `Retry-After` when the legacy session expires (another
/// call draws the 404) never ran: it is sent on the new session, once, and succeeds.
#[test]
fn a_call_waiting_out_a_busy_server_when_the_session_expires_goes_to_the_new_session() {
    let mut inits = 0;
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        let session = req.header("mcp-session-id").map(str::to_owned);
        inits += usize::from(req.rpc_method() == "initialize");
        if let Some(reply) = legacy_handshake(req, &format!("s{inits}")) {
            return reply;
        }
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "tools/call") if session.as_deref() == Some("s2") => tool_result(req),
            ("POST", "tools/call") if req.body["params"]["arguments"]["text"] == "busy" => {
                busy(req, 503, Some("5"))
            }
            _ => Reply::with_body(404, &[], "session gone"),
        }
    });
    sim.connect();
    let waiting = sim.start(echo("busy"));
    sim.run_until(|s| !s.with_method("tools/call").is_empty());
    sim.step();
    assert!(sim.completion(waiting).is_none(), "waiting out the server");
    let expires = sim.call(echo("expires")).expect("sent on the new session");
    assert_eq!(expires.tool_result().unwrap().text(), "expires");
    sim.run_until(|s| s.completion(waiting).is_some());
    let out = sim
        .completion(waiting)
        .unwrap()
        .expect("sent on the new session");
    assert_eq!(out.tool_result().unwrap().text(), "busy");
    let busy_sent: Vec<_> = sim
        .with_method("tools/call")
        .into_iter()
        .filter(|c| c.body["params"]["arguments"]["text"] == "busy")
        .map(|c| c.header("mcp-session-id"))
        .collect();
    assert_eq!(busy_sent, [Some("s1"), Some("s2")]);
    assert_eq!(sim.with_method("initialize").len(), 2);
}

/// The session's `DELETE` at close, turned away by a busy server, is sent again within
/// the close's deadline: the server would otherwise keep the session.
#[test]
fn a_delete_turned_away_at_close_is_sent_again_within_the_close_deadline() {
    let mut deletes = 0;
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        if let Some(reply) = legacy_handshake(req, "s1") {
            return reply;
        }
        match (req.method.as_str(), req.rpc_method()) {
            ("DELETE", _) => {
                deletes += 1;
                if deletes == 1 {
                    Reply::with_body(503, &[("Retry-After", "1")], "")
                } else {
                    Reply::with_body(200, &[], "")
                }
            }
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let closed_at = sim.now;
    sim.client.close(sim.now);
    sim.run_until(|s| s.client.is_released());
    let deletes: Vec<_> = sim
        .requests
        .iter()
        .zip(&sim.request_times)
        .filter(|(r, _)| r.method == "DELETE")
        .map(|(r, t)| {
            (
                r.header("mcp-session-id"),
                t.saturating_duration_since(closed_at),
            )
        })
        .collect();
    assert_eq!(
        deletes,
        [
            (Some("s1"), Duration::ZERO),
            (Some("s1"), Duration::from_secs(1))
        ]
    );
}

/// Past the close's deadline (2 s), a `DELETE` turned away is not waited for.
#[test]
fn a_delete_turned_away_for_longer_than_the_close_allows_is_left() {
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        if let Some(reply) = legacy_handshake(req, "s1") {
            return reply;
        }
        match (req.method.as_str(), req.rpc_method()) {
            ("DELETE", _) => Reply::with_body(503, &[("Retry-After", "5")], ""),
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    let closed_at = sim.now;
    sim.client.close(sim.now);
    sim.run_until(|s| s.client.is_released());
    assert_eq!(sim.now, closed_at, "released at once");
    let deletes = sim.requests.iter().filter(|r| r.method == "DELETE").count();
    assert_eq!(deletes, 1);
}

/// A call turned away on a legacy session that was replaced meanwhile (its `503` came
/// after another call's `404`): when its wait is over, the new session may still be in
/// the making (here its `initialize` waits out a `503` of its own). The call is not sent
/// without a session; it goes to the new one once that is ready, as a request that
/// never ran.
#[test]
fn a_call_turned_away_on_a_replaced_session_waits_for_the_new_one() {
    let mut inits = 0;
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        let session = req.header("mcp-session-id").map(str::to_owned);
        let text = req.body["params"]["arguments"]["text"]
            .as_str()
            .unwrap_or("");
        if req.rpc_method() == "initialize" {
            inits += 1;
            if inits == 2 {
                return busy(req, 503, Some("1"));
            }
        }
        if let Some(reply) = legacy_handshake(req, if inits == 1 { "s1" } else { "s2" }) {
            return reply;
        }
        match (session.as_deref(), text) {
            (Some("s2"), _) => tool_result(req),
            (Some("s1"), "busy") => Reply::Silence,
            (Some("s1"), _) => Reply::with_body(404, &[], "session gone"),
            _ => Reply::with_body(400, &[], "no session"),
        }
    });
    sim.connect();
    let busy_call = sim.start(echo("busy"));
    sim.step();
    let gone = sim.start(echo("expires"));
    sim.run_until(|s| s.with_method("initialize").len() == 2);
    sim.step();
    let at = sim
        .requests
        .iter()
        .position(|r| r.body["params"]["arguments"]["text"] == "busy")
        .unwrap();
    // The old session's answer to `busy` comes now: the server is busy. Its wait ends
    // with the new session's `initialize` waiting out its own.
    sim.server_sends(
        sim.request_conns[at],
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
    );
    sim.run_until(|s| s.completion(busy_call).is_some() && s.completion(gone).is_some());
    let sent = sim.with_method("tools/call");
    assert!(
        sent.iter().all(|c| c.header("mcp-session-id").is_some()),
        "a call went out without a session"
    );
    let out = sim
        .completion(busy_call)
        .unwrap()
        .expect("sent on the new session");
    assert_eq!(out.tool_result().unwrap().text(), "busy");
    let busy_sent: Vec<_> = sent
        .into_iter()
        .filter(|c| c.body["params"]["arguments"]["text"] == "busy")
        .map(|c| c.header("mcp-session-id"))
        .collect();
    assert_eq!(busy_sent, [Some("s1"), Some("s2")]);
}

/// Past the close's deadline nothing more is sent: a `DELETE` whose wait would end just
/// before it, seen only after it (the driver woke late), is given up with the rest,
/// and the client is released. Sent then, it would have had no deadline left to end it.
#[test]
fn a_delete_retry_seen_after_the_close_deadline_is_given_up() {
    let mut deletes = 0;
    let mut sim = HttpSim::new(config(EraMode::Legacy), move |req| {
        if let Some(reply) = legacy_handshake(req, "s1") {
            return reply;
        }
        match req.method.as_str() {
            "DELETE" => {
                deletes += 1;
                if deletes == 1 {
                    Reply::with_body(503, &[("Retry-After", "1")], "")
                } else {
                    Reply::Silence
                }
            }
            _ => Reply::with_body(400, &[], "?"),
        }
    });
    sim.connect();
    sim.client.close(sim.now);
    sim.step();
    assert!(!sim.client.is_released(), "the DELETE waits out the server");
    // One wake-up, past both the wait (1 s) and the close's deadline (2 s).
    sim.now += Duration::from_secs(3);
    sim.client.handle_timeout(sim.now);
    sim.step();
    assert!(sim.client.is_released());
    assert_eq!(sim.client.poll_timeout(), None);
    let deletes = sim.requests.iter().filter(|r| r.method == "DELETE").count();
    assert_eq!(deletes, 1);
}
