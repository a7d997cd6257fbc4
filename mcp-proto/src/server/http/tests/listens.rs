//! 2026-07-28 `subscriptions/listen` over Streamable HTTP (an SSE response that stays
//! open), and the application's changes reaching legacy sessions' `GET` streams.

use super::streams::{dechunk, get, messages};
use super::*;
use crate::server::ListKind;

const SUB: &str = "io.modelcontextprotocol/subscriptionId";

fn changing() -> Server {
    example::server_with(|c| {
        c.list_changed = true;
        c.resource_subscriptions = true;
    })
}

fn listen(id: &str, filter: Value) -> HttpRequest {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"_meta": meta(), "notifications": filter}});
    post(
        &body,
        &[
            ("MCP-Protocol-Version", V),
            ("Mcp-Method", "subscriptions/listen"),
        ],
    )
}

fn tool(name: &str) -> Tool {
    Tool::new(name, "", json!({"type": "object"}), |_: &ToolCall<'_>| {
        ToolOutcome::text("ok")
    })
}

/// What an open stream has now.
fn drain(ep: &mut HttpEndpoint, s: &HttpStream) -> (Vec<Value>, StreamStatus) {
    let mut out = Vec::new();
    let status = ep.poll_stream(s, &mut out);
    (messages(&dechunk(&out)), status)
}

#[test]
fn a_listen_is_an_open_stream_that_carries_its_notifications_under_the_clients_id() {
    let mut ep = HttpEndpoint::new(changing());
    let a = stream(ep.handle_request(
        now(),
        &listen(
            "L1",
            json!({"toolsListChanged": true, "resourceSubscriptions": ["example://readme"]}),
        ),
    ));
    let b = stream(ep.handle_request(now(), &listen("L2", json!({"promptsListChanged": true}))));
    let first = sse_messages(&a.response().body);
    assert_eq!(
        first,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {SUB: "L1"}, "notifications":
                {"toolsListChanged": true, "resourceSubscriptions": ["example://readme"]}}})
        ]
    );
    assert_eq!(
        sse_messages(&b.response().body)[0]["params"]["_meta"][SUB],
        "L2"
    );
    assert_eq!(ep.server().subscriptions(), 2);

    ep.update_server(now(), |s| s.add_tool(tool("extra")));
    assert!(ep.stream_ready(&a));
    assert!(!ep.stream_ready(&b), "L2 did not ask for tools");
    let (got, status) = drain(&mut ep, &a);
    assert_eq!(status, StreamStatus::Open);
    assert_eq!(
        got,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUB: "L1"}}})
        ]
    );
    assert_eq!(ep.resource_updated(now(), "example://readme"), 1);
    let (got, _) = drain(&mut ep, &a);
    assert_eq!(
        got[0]["params"],
        json!({"_meta": {SUB: "L1"}, "uri": "example://readme"})
    );
    ep.update_server(now(), |s| s.list_changed(ListKind::Prompts));
    let (got, _) = drain(&mut ep, &b);
    assert_eq!(got[0]["method"], "notifications/prompts/list_changed");

    // A request in between is answered on its own, as JSON.
    let r = complete(ep.handle_request(now(), &modern(5, "tools/list", json!({}), None)));
    assert_eq!(r.status, 200);
    assert!(body_json(&r)["result"]["tools"].is_array());

    // The client of L1 goes away: its listen ends in the machine.
    ep.cancel_stream(now(), &a);
    assert_eq!(ep.server().subscriptions(), 1);
    ep.update_server(now(), |s| s.add_tool(tool("more")));
    assert_eq!(ep.open_streams(), 1);

    // The application ends the rest: the result, under the client's id, ends the stream.
    assert_eq!(ep.update_server(now(), Server::end_subscriptions), 1);
    let (got, status) = drain(&mut ep, &b);
    assert_eq!(status, StreamStatus::Finished);
    assert_eq!(got[0]["id"], "L2");
    assert_eq!(got[0]["result"]["resultType"], "complete");
    assert_eq!(got[0]["result"]["_meta"][SUB], "L2");
    assert_eq!(ep.open_streams(), 0);
}

#[test]
fn a_posted_cancel_ends_a_listen_and_refusals_are_answered_at_once() {
    let mut ep = HttpEndpoint::new(changing());
    let l = listen("L", json!({"toolsListChanged": true}));
    let a = stream(ep.handle_request_as(now(), &l, Some("alice")));
    let cancel = post(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": "L"}}),
        &[("MCP-Protocol-Version", V)],
    );
    // Another principal's cancel, or an anonymous one, does not reach alice's listen.
    assert_eq!(
        complete(ep.handle_request_as(now(), &cancel, Some("bob"))).status,
        202
    );
    assert_eq!(complete(ep.handle_request(now(), &cancel)).status, 202);
    assert_eq!(ep.server().subscriptions(), 1);
    assert_eq!(
        complete(ep.handle_request_as(now(), &cancel, Some("alice"))).status,
        202
    );
    assert_eq!(ep.server().subscriptions(), 0);
    let (_, status) = drain(&mut ep, &a);
    assert_eq!(status, StreamStatus::Finished);
    // taskIds without the extension: -32021, 400.
    let r = complete(ep.handle_request(now(), &listen("T", json!({"taskIds": ["x"]}))));
    assert_eq!(r.status, 400);
    assert_eq!(error_code(&r), -32021);
    // A bad filter: -32602, 400.
    let r = complete(ep.handle_request(now(), &listen("B", json!({"toolsListChanged": 1}))));
    assert_eq!(error_code(&r), -32602);
}

#[test]
fn a_listen_past_the_open_stream_bound_is_refused_with_503() {
    let config = HttpEndpointConfig {
        max_open_streams: 1,
        ..HttpEndpointConfig::default()
    };
    let mut ep = HttpEndpoint::with_config(changing(), config);
    let _a = stream(ep.handle_request(now(), &listen("1", json!({}))));
    let r = complete(ep.handle_request(now(), &listen("2", json!({}))));
    assert_eq!(r.status, 503);
    assert_eq!(
        ep.server().subscriptions(),
        1,
        "the refused one is gone from the machine"
    );
}

#[test]
fn catalog_changes_reach_legacy_sessions_on_their_get_streams() {
    let mut ep = HttpEndpoint::with_sessions(changing(), HttpEndpointConfig::default(), &[3; 32]);
    let with_get = super::streams::open_session(&mut ep, "2025-11-25");
    let without = super::streams::open_session(&mut ep, "2025-11-25");
    for s in [&with_get, &without] {
        let initialized = post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            &[
                ("Mcp-Session-Id", s),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
        );
        assert_eq!(complete(ep.handle_request(now(), &initialized)).status, 202);
    }
    let g = stream(ep.handle_request(now(), &get(Some(&with_get), None)));
    let l = stream(ep.handle_request(now(), &listen("L", json!({"toolsListChanged": true}))));
    assert!(ep.update_server(now(), |s| s.remove_tool("echo")));
    let (got, _) = drain(&mut ep, &g);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["method"], "notifications/tools/list_changed");
    assert!(got[0]["params"].get("_meta").is_none());
    let (got, _) = drain(&mut ep, &l);
    assert_eq!(got[0]["params"]["_meta"][SUB], "L");
    // The listen never sees the legacy session's notifications and vice versa.
    assert!(!ep.stream_ready(&g) && !ep.stream_ready(&l));
}

/// The bytes of events the endpoint holds for its open streams, not yet taken by them.
fn backlog(ep: &HttpEndpoint) -> usize {
    let exchanges = ep.exchanges.values().map(|e| e.events.bytes);
    exchanges
        .chain(ep.listeners.values().map(|l| l.events.bytes))
        .sum()
}

#[test]
fn a_listen_whose_client_does_not_read_ends_rather_than_piling_up_notifications() {
    let mut ep = HttpEndpoint::new(changing());
    let slow = stream(ep.handle_request(now(), &listen("S", json!({"toolsListChanged": true}))));
    let reader = stream(ep.handle_request(now(), &listen("R", json!({"toolsListChanged": true}))));
    // The client of S stops reading (its connection is still writing what it took last,
    // so its stream is never polled); R reads everything.
    let mut peak = 0;
    let mut told = 0;
    for _ in 0..20_000 {
        ep.update_server(now(), |s| s.list_changed(ListKind::Tools));
        peak = peak.max(backlog(&ep));
        told += drain(&mut ep, &reader).0.len();
    }
    assert_eq!(told, 20_000, "the reading client heard of every change");
    let bound = HttpEndpointConfig::default().max_stream_backlog;
    assert!(
        peak <= bound + 1024,
        "{peak} bytes held for a client that does not read"
    );
    // The slow client gets what was queued, then an error that ends its listen: it
    // knows it missed notifications, and listens again.
    let (got, status) = drain(&mut ep, &slow);
    assert_eq!(status, StreamStatus::Finished);
    let last = got.last().unwrap();
    assert_eq!(last["id"], "S");
    assert_eq!(last["error"]["code"], -32603);
    assert!(got.len() < 20_000);
    assert_eq!(ep.server().subscriptions(), 1, "only R's listen is left");
    assert_eq!(ep.open_streams(), 1);
}

#[test]
fn a_get_stream_whose_client_does_not_read_is_detached_and_resumable() {
    let mut ep = HttpEndpoint::with_sessions(changing(), HttpEndpointConfig::default(), &[5; 32]);
    let session = super::streams::open_session(&mut ep, "2025-11-25");
    let initialized = post(
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
    );
    assert_eq!(complete(ep.handle_request(now(), &initialized)).status, 202);
    let g = stream(ep.handle_request(now(), &get(Some(&session), None)));
    let mut peak = 0;
    for _ in 0..20_000 {
        ep.update_server(now(), |s| s.list_changed(ListKind::Tools));
        peak = peak.max(backlog(&ep));
    }
    let bound = HttpEndpointConfig::default().max_stream_backlog;
    assert!(
        peak <= bound + 1024,
        "{peak} bytes held for a client that does not read"
    );
    // Its connection ends; what it missed is in the store, for a `Last-Event-ID`.
    let (_, status) = drain(&mut ep, &g);
    assert_eq!(status, StreamStatus::Finished);
    assert_eq!(ep.listeners(), 1, "detached, not ended");
}

/// Many changes made in one `update_server` (a catalog loaded at once) are one
/// notification per list, for listens as for sessions: not one per change, which also
/// put a listen past its backlog before its client could read any of them.
#[test]
fn changes_made_at_once_are_told_once() {
    let mut ep = HttpEndpoint::new(changing());
    let l = stream(ep.handle_request(
        now(),
        &listen(
            "L",
            json!({"toolsListChanged": true, "resourceSubscriptions": ["example://readme"]}),
        ),
    ));
    ep.update_server(now(), |s| {
        for i in 0..3000 {
            s.add_tool(tool(&format!("t{i}")));
            s.resource_updated("example://readme");
        }
    });
    let (got, status) = drain(&mut ep, &l);
    assert_eq!(status, StreamStatus::Open);
    let methods: Vec<&str> = got.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        [
            "notifications/tools/list_changed",
            "notifications/resources/updated"
        ]
    );
}

/// What one change brings at once may pass the backlog bound: the client has not had a
/// chance to read it yet. Only what it left unread from before counts.
#[test]
fn a_burst_larger_than_the_backlog_bound_reaches_a_reading_client() {
    // A listen names at most 128 KiB of URIs: a burst of one update each passes a
    // 64 KiB bound.
    let config = HttpEndpointConfig {
        max_stream_backlog: 64 * 1024,
        ..HttpEndpointConfig::default()
    };
    let mut ep = HttpEndpoint::with_config(changing(), config);
    let uris: Vec<String> = (0..100).map(|i| format!("example://r/{i:01200}")).collect();
    let l = stream(ep.handle_request(now(), &listen("L", json!({"resourceSubscriptions": uris}))));
    ep.update_server(now(), |s| {
        for uri in &uris {
            s.resource_updated(uri);
        }
    });
    assert!(backlog(&ep) > 2 * 64 * 1024);
    let (got, status) = drain(&mut ep, &l);
    assert_eq!(status, StreamStatus::Open);
    assert_eq!(got.len(), 100);
    assert!(
        got.iter()
            .all(|m| m["method"] == "notifications/resources/updated")
    );
    assert_eq!(ep.server().subscriptions(), 1);
}
