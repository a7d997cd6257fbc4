//! Resumable streams of legacy sessions: event ids, priming, the `GET` stream,
//! `Last-Event-ID` resumption, polling.

use super::*;
use crate::server::ToolNote;

/// The example server plus `steps`: progress, then the result, all at once.
fn steps_server() -> Server {
    let tool = Tool::new(
        "steps",
        "progress, then a result",
        json!({"type": "object"}),
        |_: &ToolCall<'_>| ToolOutcome::DoneWithNotes {
            notes: vec![ToolNote::progress(1.0, Some(2.0))],
            result: json!({"content": [{"type": "text", "text": "stepped"}]}),
        },
    );
    example::server_with(|c| c.tools.push(tool))
}

pub(super) fn with_sessions(config: HttpEndpointConfig) -> HttpEndpoint {
    with_sessions_seeded(config, &[7; 32])
}

pub(super) fn with_sessions_seeded(config: HttpEndpointConfig, seed: &[u8]) -> HttpEndpoint {
    HttpEndpoint::with_sessions(steps_server(), config, seed)
}

/// A legacy session at `version`; its id.
pub(super) fn open_session(ep: &mut HttpEndpoint, version: &str) -> String {
    let init = post(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}}),
        &[],
    );
    let r = complete(ep.handle_request(now(), &init));
    assert_eq!(r.status, 200, "{r:?}");
    r.header("mcp-session-id").unwrap().to_owned()
}

pub(super) fn call(session: &str, version: &str, id: i64, tool: &str) -> HttpRequest {
    post(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": {}, "_meta": {"progressToken": "p"}}}),
        &[
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", version),
        ],
    )
}

pub(super) fn get(session: Option<&str>, last: Option<&str>) -> HttpRequest {
    let mut r = HttpRequest::new("GET", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Accept", "text/event-stream");
    if let Some(s) = session {
        r = r.with_header("Mcp-Session-Id", s);
    }
    if let Some(id) = last {
        r = r.with_header("Last-Event-ID", id);
    }
    r
}

/// The events of an SSE body: (id, retry, data) per blank-line-terminated block.
pub(super) fn events(body: &[u8]) -> Vec<(Option<String>, Option<String>, String)> {
    let text = String::from_utf8_lossy(body).into_owned();
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(name).map(str::to_owned))
            };
            let data = field("data: ").unwrap_or_default();
            (field("id: "), field("retry: "), data)
        })
        .collect()
}

/// The JSON messages of events.
pub(super) fn messages(body: &[u8]) -> Vec<Value> {
    events(body)
        .into_iter()
        .filter(|(_, _, d)| !d.is_empty())
        .map(|(_, _, d)| serde_json::from_str(&d).unwrap())
        .collect()
}

/// Strips chunked framing off stream output (enough for these tests).
pub(super) fn dechunk(wire: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(wire).into_owned();
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    out.into_bytes()
}

#[test]
fn event_ids_and_priming_per_version() {
    let mut ep = with_sessions(HttpEndpointConfig::default());
    let new = open_session(&mut ep, "2025-11-25");
    let r = complete(ep.handle_request(now(), &call(&new, "2025-11-25", 3, "steps")));
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let got = events(&r.body);
    assert_eq!(got.len(), 3, "{got:?}");
    // Priming first: an id and empty data, no retry (not polling).
    assert!(got[0].0.is_some());
    assert_eq!((got[0].1.as_deref(), got[0].2.as_str()), (None, ""));
    let ids: Vec<String> = got.iter().map(|e| e.0.clone().unwrap()).collect();
    let (stream, _) = parse_event_id(&ids[0]).unwrap();
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(
            parse_event_id(id),
            Some((stream, i as u64)),
            "ids encode the stream"
        );
    }
    assert_eq!(
        messages(&r.body)[1]["result"]["content"][0]["text"],
        "stepped"
    );
    // A second stream of the session: other ids.
    let r = complete(ep.handle_request(now(), &call(&new, "2025-11-25", 4, "steps")));
    let again: Vec<String> = events(&r.body).into_iter().map(|e| e.0.unwrap()).collect();
    assert!(
        again.iter().all(|id| !ids.contains(id)),
        "{again:?} {ids:?}"
    );

    // 2025-06-18: ids, no priming.
    let old = open_session(&mut ep, "2025-06-18");
    let r = complete(ep.handle_request(now(), &call(&old, "2025-06-18", 3, "steps")));
    let got = events(&r.body);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got.iter().all(|e| e.0.is_some() && !e.2.is_empty()));
    // A plain answer stays JSON, and the endpoint without sessions has no ids.
    let r = complete(ep.handle_request(now(), &call(&old, "2025-06-18", 5, "echo")));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let mut plain = HttpEndpoint::new(steps_server());
    initialize(&mut plain, json!({}));
    let r = complete(plain.handle_request(
        now(),
        &legacy(
            1,
            "tools/call",
            json!({
        "name": "steps", "_meta": {"progressToken": 1}}),
        ),
    ));
    assert!(events(&r.body).iter().all(|e| e.0.is_none()));
    assert_eq!(events(&r.body).len(), 2);
}

#[test]
fn the_get_stream_one_per_session() {
    let mut ep = with_sessions(HttpEndpointConfig::default());
    let s = open_session(&mut ep, "2025-11-25");
    // Refusals: no session, unknown session, no SSE in Accept, a modern GET.
    let r = complete(ep.handle_request(now(), &get(None, None)));
    assert_eq!(r.status, 400);
    let r = complete(ep.handle_request(now(), &get(Some("nope"), None)));
    assert_eq!(r.status, 404);
    let json_only = HttpRequest::new("GET", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Accept", "application/json")
        .with_header("Mcp-Session-Id", s.as_str());
    assert_eq!(complete(ep.handle_request(now(), &json_only)).status, 406);
    let modern_get = get(Some(&s), None).with_header("MCP-Protocol-Version", "2026-07-28");
    assert_eq!(complete(ep.handle_request(now(), &modern_get)).status, 405);

    let g = stream(ep.handle_request(now(), &get(Some(&s), None)));
    let primed = events(&g.response().body);
    assert_eq!(primed.len(), 1);
    assert_eq!(primed[0].2, "", "a priming event");
    assert_eq!(ep.listeners(), 1);
    let r = complete(ep.handle_request(now(), &get(Some(&s), None)));
    assert_eq!(r.status, 409);

    // Notifications outside any request reach it, with ids; a session without a GET
    // stream does not hear of them, and nothing leaks into request streams.
    let other = open_session(&mut ep, "2025-11-25");
    assert_eq!(
        ep.notify_listeners("notifications/tools/list_changed", None),
        1
    );
    assert_eq!(ep.poll_ready(), Some(g.id()));
    let mut out = Vec::new();
    assert_eq!(ep.poll_stream(&g, &mut out), StreamStatus::Open);
    let got = events(&dechunk(&out));
    assert_eq!(got.len(), 1);
    assert!(got[0].0.is_some());
    assert!(got[0].2.contains("list_changed"));
    let r = complete(ep.handle_request(now(), &call(&other, "2025-11-25", 1, "steps")));
    assert!(!String::from_utf8_lossy(&r.body).contains("list_changed"));

    // The client leaves: a new GET is served (no 409); DELETE ends it.
    ep.cancel_stream(now(), &g);
    let g2 = stream(ep.handle_request(now(), &get(Some(&s), None)));
    assert_eq!(ep.listeners(), 1);
    let delete = HttpRequest::new("DELETE", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Mcp-Session-Id", s.as_str());
    assert_eq!(complete(ep.handle_request(now(), &delete)).status, 200);
    assert_eq!(ep.poll_ready(), Some(g2.id()));
    assert_eq!(ep.poll_stream(&g2, &mut Vec::new()), StreamStatus::Finished);
    assert_eq!(ep.listeners(), 0);

    // Without sessions there is no GET stream.
    let mut plain = HttpEndpoint::new(steps_server());
    let r = complete(plain.handle_request(now(), &get(None, None)));
    assert_eq!((r.status, r.header("allow")), (405, Some("POST")));
}

#[test]
fn a_dropped_post_stream_is_resumed_with_its_remaining_events_and_result() {
    let mut ep = with_sessions(HttpEndpointConfig::default());
    let s = open_session(&mut ep, "2025-11-25");
    let post_stream = stream(ep.handle_request(now(), &call(&s, "2025-11-25", 9, "confirm")));
    let head = events(&post_stream.response().body);
    assert_eq!(head.len(), 2, "priming, elicitation: {head:?}");
    let priming = head[0].0.clone().unwrap();
    let ask: Value = serde_json::from_str(&head[1].2).unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    // The client goes away: not a cancellation, the call waits.
    ep.cancel_stream(now(), &post_stream);
    assert_eq!(ep.open_streams(), 1);
    // It resumes after the priming event: the elicitation again, then the result
    // once it answers.
    let resumed = stream(ep.handle_request(now(), &get(Some(&s), Some(&priming))));
    let replayed = events(&resumed.response().body);
    assert_eq!(replayed.len(), 1);
    assert_eq!(replayed[0].0, head[1].0, "the same event, the same id");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "action": "accept", "content": {"proceed": true, "name": "Ada"}}});
    let r = complete(ep.handle_request(now(), &post(&answer, &[("Mcp-Session-Id", &s)])));
    assert_eq!(r.status, 202);
    let mut out = Vec::new();
    assert_eq!(ep.poll_stream(&resumed, &mut out), StreamStatus::Finished);
    let result = messages(&dechunk(&out));
    assert_eq!(result.len(), 1);
    assert_eq!(result[0]["id"], 9, "the client's id");
    assert!(
        result[0]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Ada")
    );
    // The old connection's stream only ends.
    assert_eq!(
        ep.poll_stream(&post_stream, &mut Vec::new()),
        StreamStatus::Finished
    );
    assert_eq!(ep.open_streams(), 0);

    // Answered while nobody listened: a resumption gets the rest and the stream ends.
    let post_stream = stream(ep.handle_request(now(), &call(&s, "2025-11-25", 10, "confirm")));
    let head = events(&post_stream.response().body);
    ep.cancel_stream(now(), &post_stream);
    let ask: Value = serde_json::from_str(&head[1].2).unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}});
    ep.handle_request(now(), &post(&answer, &[("Mcp-Session-Id", &s)]));
    assert_eq!(ep.open_streams(), 0);
    let last = head[1].0.clone().unwrap();
    let r = complete(ep.handle_request(now(), &get(Some(&s), Some(&last))));
    assert_eq!(r.status, 200);
    let rest = messages(&r.body);
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["id"], 10);
}

#[test]
fn no_replay_across_streams_sessions_or_evictions() {
    let config = HttpEndpointConfig {
        event_store: EventStoreLimits {
            max_events_per_stream: 1,
            ..EventStoreLimits::default()
        },
        ..HttpEndpointConfig::default()
    };
    let mut ep = with_sessions(config);
    let a = open_session(&mut ep, "2025-11-25");
    let b = open_session(&mut ep, "2025-11-25");
    let first = complete(ep.handle_request(now(), &call(&a, "2025-11-25", 1, "steps")));
    let second = complete(ep.handle_request(now(), &call(&a, "2025-11-25", 2, "steps")));
    let first_ids: Vec<String> = events(&first.body)
        .into_iter()
        .map(|e| e.0.unwrap())
        .collect();
    let second_ids: Vec<String> = events(&second.body)
        .into_iter()
        .map(|e| e.0.unwrap())
        .collect();
    // Another session's id: refused, nothing replayed.
    let r = complete(ep.handle_request(now(), &get(Some(&b), Some(&first_ids[1]))));
    assert_eq!(r.status, 400);
    assert!(!String::from_utf8_lossy(&r.body).contains("stepped"));
    // Its own id replays its own stream only.
    let r = complete(ep.handle_request(now(), &get(Some(&a), Some(&second_ids[1]))));
    assert_eq!(r.status, 200);
    assert_eq!(messages(&r.body)[0]["id"], 2);
    assert_eq!(events(&r.body).len(), 1);
    // Evicted (one event kept per stream: the progress after the priming one went):
    // refused.
    let r = complete(ep.handle_request(now(), &get(Some(&a), Some(&first_ids[0]))));
    assert_eq!(r.status, 400);
    // Made-up, malformed and oversized ids: refused.
    for bad in [
        "999-0",
        "x",
        "1-",
        &"1".repeat(100),
        "1-99999999999999999999999",
    ] {
        let r = complete(ep.handle_request(now(), &get(Some(&a), Some(bad))));
        assert_eq!(r.status, 400, "{bad}");
    }
    // After DELETE the session's events are gone with it.
    let delete = HttpRequest::new("DELETE", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Mcp-Session-Id", a.as_str());
    ep.handle_request(now(), &delete);
    let r = complete(ep.handle_request(now(), &get(Some(&a), Some(&second_ids[1]))));
    assert_eq!(r.status, 404);
}

#[test]
fn polling_closes_after_priming_with_retry() {
    let config = HttpEndpointConfig {
        sse_polling: true,
        sse_retry: std::time::Duration::from_millis(250),
        ..HttpEndpointConfig::default()
    };
    let mut ep = with_sessions(config);
    let s = open_session(&mut ep, "2025-11-25");
    // Answered at once with a note first: only the priming event, with retry.
    let r = complete(ep.handle_request(now(), &call(&s, "2025-11-25", 1, "steps")));
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let got = events(&r.body);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].1.as_deref(), got[0].2.as_str()), (Some("250"), ""));
    let priming = got[0].0.clone().unwrap();
    let r = complete(ep.handle_request(now(), &get(Some(&s), Some(&priming))));
    let rest = messages(&r.body);
    assert_eq!(rest.len(), 2);
    assert_eq!(rest[0]["method"], "notifications/progress");
    assert_eq!(rest[1]["result"]["content"][0]["text"], "stepped");

    // Not answered at once: each poll gets what is new, then retry and the end.
    let r = complete(ep.handle_request(now(), &call(&s, "2025-11-25", 2, "confirm")));
    let priming = events(&r.body)[0].0.clone().unwrap();
    assert_eq!(ep.open_streams(), 1);
    let r = complete(ep.handle_request(now(), &get(Some(&s), Some(&priming))));
    let got = events(&r.body);
    assert_eq!(got.len(), 2, "the request, then a retry: {got:?}");
    assert_eq!(got[1].1.as_deref(), Some("250"));
    let ask: Value = serde_json::from_str(&got[0].2).unwrap();
    let seen = got[0].0.clone().unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}});
    ep.handle_request(now(), &post(&answer, &[("Mcp-Session-Id", &s)]));
    let r = complete(ep.handle_request(now(), &get(Some(&s), Some(&seen))));
    let rest = messages(&r.body);
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["id"], 2);
    assert_eq!(ep.open_streams(), 0);

    // A 2025-06-18 session is never polled, and gets no priming.
    let old = open_session(&mut ep, "2025-06-18");
    let r = complete(ep.handle_request(now(), &call(&old, "2025-06-18", 1, "steps")));
    assert_eq!(messages(&r.body).len(), 2);
}

/// A request whose client is not attached (here a polling client's, late for its next
/// poll) that is ended to make room for another's leaves an error answer in its stream:
/// the client's next poll learns why, where it used to find the stream silent at every
/// poll, for ever. Before its poll is due, the polling client is not gone (it used to be
/// ended between any two polls).
#[test]
fn a_request_ended_for_room_answers_its_polling_client_with_an_error() {
    let config = HttpEndpointConfig {
        max_open_streams: 1,
        sse_polling: true,
        ..HttpEndpointConfig::default()
    };
    let mut ep = with_sessions(config);
    let polled = open_session(&mut ep, "2025-11-25");
    let r = complete(ep.handle_request(now(), &call(&polled, "2025-11-25", 7, "hang")));
    let priming = events(&r.body)[0].0.clone().unwrap();
    assert_eq!(ep.open_streams(), 1);
    // Another client's call needs the only place: it waits until the polling client is
    // late for its next poll (`retry:` and ten seconds).
    let other = open_session(&mut ep, "2025-11-25");
    let hang = call(&other, "2025-11-25", 1, "hang");
    let late = now() + std::time::Duration::from_secs(11);
    let r = complete(ep.handle_request(late - std::time::Duration::from_millis(1), &hang));
    assert_eq!(r.status, 503);
    let r = complete(ep.handle_request(late, &hang));
    assert_eq!(r.status, 200);
    assert_eq!(ep.open_streams(), 1);
    let r = complete(ep.handle_request(late, &get(Some(&polled), Some(&priming))));
    let got = messages(&r.body);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["id"], 7);
    let why = got[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(why.contains("another request needed the room"), "{why}");
}

#[test]
fn detached_streams_are_bounded_and_end_with_the_session() {
    let config = HttpEndpointConfig {
        max_open_streams: 8,
        ..HttpEndpointConfig::default()
    };
    let mut ep = with_sessions(config);
    let s = open_session(&mut ep, "2025-11-25");
    for id in 0..2 {
        let st = stream(ep.handle_request(now(), &call(&s, "2025-11-25", id, "hang")));
        ep.cancel_stream(now(), &st);
    }
    // Detached streams still count against the session's share (a quarter of all): each
    // more call of its takes the place of its oldest detached one (decision 128)…
    let _held: Vec<HttpStream> = (5..7)
        .map(|id| stream(ep.handle_request(now(), &call(&s, "2025-11-25", id, "hang"))))
        .collect();
    assert_eq!(ep.open_streams(), 2);
    // …and with its client attached to all it holds, one more is refused…
    let r = complete(ep.handle_request(now(), &call(&s, "2025-11-25", 7, "hang")));
    assert_eq!(r.status, 503);
    let message = body_json(&r)["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("of this session"), "{message}");
    // …so that one session cannot keep the others from being served.
    let other = open_session(&mut ep, "2025-11-25");
    let _open = stream(ep.handle_request(now(), &call(&other, "2025-11-25", 1, "hang")));
    assert_eq!(ep.open_streams(), 3);
    let delete = HttpRequest::new("DELETE", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Mcp-Session-Id", s.as_str());
    ep.handle_request(now(), &delete);
    assert_eq!(ep.open_streams(), 1);
}

#[test]
fn detached_requests_of_an_idle_session_make_room() {
    let config = HttpEndpointConfig {
        max_open_streams: 1,
        session_idle_timeout: std::time::Duration::from_secs(60),
        ..HttpEndpointConfig::default()
    };
    let mut ep = with_sessions(config);
    let gone = open_session(&mut ep, "2025-11-25");
    let st = stream(ep.handle_request(now(), &call(&gone, "2025-11-25", 1, "hang")));
    ep.cancel_stream(now(), &st);
    assert_eq!(ep.open_streams(), 1);
    let later = now() + std::time::Duration::from_secs(61);
    let init = post(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        &[],
    );
    let r = complete(ep.handle_request(later, &init));
    let s = r.header("mcp-session-id").unwrap().to_owned();
    // The detached request of the idle session is dropped to serve this one.
    let _open = stream(ep.handle_request(later, &call(&s, "2025-11-25", 1, "hang")));
    assert_eq!(ep.open_streams(), 1);
    assert_eq!(ep.sessions(), 1);
    // And the idle session's id is gone with its events.
    let r = complete(ep.handle_request(later, &get(Some(&gone), None)));
    assert_eq!(r.status, 404);
}

#[test]
fn resource_updates_reach_subscribed_sessions_on_their_get_stream() {
    let server = example::server_with(|c| c.resource_subscriptions = true);
    let mut ep = HttpEndpoint::with_sessions(server, HttpEndpointConfig::default(), &[5; 32]);
    let subscribed = open_session(&mut ep, "2025-11-25");
    let other = open_session(&mut ep, "2025-11-25");
    let subscribe = post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
                "params": {"uri": "example://readme"}}),
        &[
            ("Mcp-Session-Id", &subscribed),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
    );
    assert_eq!(complete(ep.handle_request(now(), &subscribe)).status, 200);
    let a = stream(ep.handle_request(now(), &get(Some(&subscribed), None)));
    let b = stream(ep.handle_request(now(), &get(Some(&other), None)));
    assert_eq!(ep.resource_updated(now(), "example://readme"), 1);
    let mut out = Vec::new();
    assert_eq!(ep.poll_stream(&a, &mut out), StreamStatus::Open);
    let got = messages(&dechunk(&out));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["method"], "notifications/resources/updated");
    assert_eq!(got[0]["params"]["uri"], "example://readme");
    assert!(!ep.stream_ready(&b), "the other session did not subscribe");
    // The client of the GET stream drops it and resumes: the update is replayed.
    let primed = events(&a.response().body)[0].0.clone().unwrap();
    ep.cancel_stream(now(), &a);
    let resumed = stream(ep.handle_request(now(), &get(Some(&subscribed), Some(&primed))));
    let replayed = messages(&resumed.response().body);
    assert_eq!(replayed.len(), 1);
    assert_eq!(replayed[0]["method"], "notifications/resources/updated");
}

/// A log message the application sends to every `GET` stream reaches only the sessions
/// whose `logging/setLevel` threshold admits its level.
#[test]
fn broadcast_log_messages_respect_each_sessions_level() {
    let mut ep = HttpEndpoint::with_sessions(
        example::server_with(|c| c.logging = true),
        HttpEndpointConfig::default(),
        &[9; 32],
    );
    let quiet = open_session(&mut ep, "2025-11-25");
    let chatty = open_session(&mut ep, "2025-11-25");
    let set_level = json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
        "params": {"level": "error"}});
    let headers = [
        ("Mcp-Session-Id", quiet.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let r = complete(ep.handle_request(now(), &post(&set_level, &headers)));
    assert_eq!(body_json(&r)["result"], json!({}));
    let q = stream(ep.handle_request(now(), &get(Some(&quiet), None)));
    let c = stream(ep.handle_request(now(), &get(Some(&chatty), None)));
    let debug = json!({"level": "debug", "data": "details"});
    assert_eq!(
        ep.notify_listeners("notifications/message", Some(&debug)),
        1,
        "only the session without a threshold hears a debug message"
    );
    let alert = json!({"level": "alert", "data": "trouble"});
    assert_eq!(
        ep.notify_listeners("notifications/message", Some(&alert)),
        2
    );
    let heard = |ep: &mut HttpEndpoint, s: &HttpStream| {
        let mut out = Vec::new();
        ep.poll_stream(s, &mut out);
        messages(&dechunk(&out))
            .iter()
            .map(|m| m["params"]["level"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(heard(&mut ep, &q), ["alert"]);
    assert_eq!(heard(&mut ep, &c), ["debug", "alert"]);
}
