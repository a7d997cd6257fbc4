//! Who gives way when every open stream or `GET` stream is taken: anonymous clients,
//! who count as one principal, to authenticated ones (decision 123).

use super::streams::{call, events, get, messages, with_sessions};
use super::*;

fn hang(id: i64) -> HttpRequest {
    modern(id, "tools/call", json!({"name": "hang"}), Some("hang"))
}

/// A legacy session at 2025-11-25 initialized as `principal`; its id.
fn session_of(ep: &mut HttpEndpoint, principal: Option<&str>) -> String {
    let init = post(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        &[],
    );
    let r = complete(ep.handle_request_as(now(), &init, principal));
    assert_eq!(r.status, 200, "{r:?}");
    r.header("mcp-session-id").unwrap().to_owned()
}

/// An endpoint with sessions that serves `max` attached `GET` streams.
fn with_get_streams(max: usize) -> HttpEndpoint {
    with_sessions(HttpEndpointConfig {
        max_get_streams: max,
        ..HttpEndpointConfig::default()
    })
}

/// A new session of `principal`'s, and its `GET` stream.
fn listen(ep: &mut HttpEndpoint, principal: Option<&str>) -> HttpReply {
    let session = session_of(ep, principal);
    ep.handle_request_as(now(), &get(Some(&session), None), principal)
}

/// What an open stream says at its next poll, and whether it finished.
fn poll(ep: &mut HttpEndpoint, s: &HttpStream) -> (Vec<Value>, StreamStatus) {
    let mut out = Vec::new();
    let status = ep.poll_stream(s, &mut out);
    (messages(&super::streams::dechunk(&out)), status)
}

#[test]
fn anonymous_streams_give_way_to_authenticated_clients_down_to_a_fair_share() {
    let config = HttpEndpointConfig {
        max_open_streams: 4,
        ..HttpEndpointConfig::default()
    };
    let mut ep = HttpEndpoint::with_config(example::server(), config);
    let anonymous: Vec<HttpStream> = (0..4)
        .map(|id| stream(ep.handle_request(now(), &hang(id))))
        .collect();
    // Anonymous clients may fill every stream, but not take one from each other.
    let r = complete(ep.handle_request(now(), &hang(9)));
    assert_eq!((r.status, error_code(&r)), (503, -32603));
    // Alice's call takes the place of the oldest anonymous one, which is told why.
    let _alice = stream(ep.handle_request_as(now(), &hang(1), Some("alice")));
    let (got, status) = poll(&mut ep, &anonymous[0]);
    assert_eq!((status, ep.open_streams()), (StreamStatus::Finished, 4));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (got[0]["id"].clone(), got[0]["error"]["code"].clone()),
        (json!(0), json!(-32603))
    );
    let why = got[0]["error"]["message"].as_str().unwrap();
    assert!(why.contains("an authenticated client needed one"), "{why}");
    assert_eq!(poll(&mut ep, &anonymous[1]).1, StreamStatus::Open);
    // The anonymous clients keep their place once they hold no more than one beyond a
    // principal's: bob and carol get theirs, dave does not.
    let _bob = stream(ep.handle_request_as(now(), &hang(1), Some("bob")));
    let _carol = stream(ep.handle_request_as(now(), &hang(1), Some("carol")));
    let r = complete(ep.handle_request_as(now(), &hang(1), Some("dave")));
    assert_eq!(r.status, 503);
    assert_eq!(poll(&mut ep, &anonymous[1]).1, StreamStatus::Finished);
    assert_eq!(poll(&mut ep, &anonymous[2]).1, StreamStatus::Finished);
    assert_eq!(poll(&mut ep, &anonymous[3]).1, StreamStatus::Open);
    assert_eq!(ep.open_streams(), 4);
    // An anonymous client never ends a principal's stream.
    let r = complete(ep.handle_request(now(), &hang(9)));
    assert_eq!(r.status, 503);
    assert_eq!(ep.open_streams(), 4);
}

/// A principal's polling client keeps its call: an anonymous request never ends it, and
/// an authenticated one only once the client is late for its next poll.
#[test]
fn a_polling_principals_call_is_not_ended_for_an_anonymous_one() {
    let config = HttpEndpointConfig {
        max_open_streams: 2,
        sse_polling: true,
        ..HttpEndpointConfig::default()
    };
    let mut ep = with_sessions(config);
    let alice = session_of(&mut ep, Some("alice"));
    let call = super::streams::call(&alice, "2025-11-25", 7, "hang");
    let r = complete(ep.handle_request_as(now(), &call, Some("alice")));
    let priming = events(&r.body)[0].0.clone().unwrap();
    let _anonymous = stream(ep.handle_request(now(), &hang(1)));
    assert_eq!(ep.open_streams(), 2);
    let r = complete(ep.handle_request(now(), &hang(2)));
    assert_eq!(r.status, 503);
    // Alice's next poll finds her call still running; it is due within `retry:` (1 s)
    // and ten seconds of each poll.
    let poll = get(Some(&alice), Some(&priming));
    let at = |s| now() + std::time::Duration::from_secs(s);
    let r = complete(ep.handle_request_as(at(5), &poll, Some("alice")));
    assert_eq!((r.status, messages(&r.body)), (200, vec![]));
    assert_eq!(ep.open_streams(), 2);
    let r = complete(ep.handle_request_as(at(15), &hang(3), Some("bob")));
    assert_eq!(r.status, 503);
    // Once she is late, an authenticated newcomer may end it, as it may any principal's
    // holding as many streams as its own.
    let _bob = stream(ep.handle_request_as(at(16), &hang(3), Some("bob")));
    let r = complete(ep.handle_request_as(at(16), &poll, Some("alice")));
    let why = messages(&r.body)[0]["error"]["message"].clone();
    assert!(why.as_str().unwrap().contains("needed the room"), "{why}");
}

#[test]
fn anonymous_get_streams_give_way_to_authenticated_clients_down_to_a_fair_share() {
    let mut ep = with_get_streams(3);
    let anonymous: Vec<HttpStream> = (0..3).map(|_| stream(listen(&mut ep, None))).collect();
    assert_eq!(complete(listen(&mut ep, None)).status, 503);
    let _alice = stream(listen(&mut ep, Some("alice")));
    assert_eq!(poll(&mut ep, &anonymous[0]).1, StreamStatus::Finished);
    assert_eq!(poll(&mut ep, &anonymous[1]).1, StreamStatus::Open);
    let _bob = stream(listen(&mut ep, Some("bob")));
    assert_eq!(complete(listen(&mut ep, Some("carol"))).status, 503);
    assert_eq!(complete(listen(&mut ep, None)).status, 503);
    assert_eq!(poll(&mut ep, &anonymous[2]).1, StreamStatus::Open);
}

/// A session's stream whose answer arrived and whose client left before reading it is
/// forgotten (its answer is stored for a resumption), where it used to stay until its
/// session ended.
#[test]
fn a_stream_answered_and_left_before_its_poll_is_forgotten() {
    let mut ep = with_sessions(HttpEndpointConfig::default());
    let s = super::streams::open_session(&mut ep, "2025-11-25");
    let call = super::streams::call(&s, "2025-11-25", 4, "confirm");
    let open = stream(ep.handle_request(now(), &call));
    let head = events(&open.response().body);
    let ask: Value = serde_json::from_str(&head[1].2).unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}});
    let r = complete(ep.handle_request(now(), &post(&answer, &[("Mcp-Session-Id", &s)])));
    assert_eq!(r.status, 202);
    ep.cancel_stream(now(), &open);
    assert_eq!(ep.open_streams(), 0);
    assert!(ep.exchanges.is_empty(), "{:?}", ep.exchanges);
    // A resumption still gets the answer, from the store.
    let last = head[1].0.clone().unwrap();
    let r = complete(ep.handle_request(now(), &get(Some(&s), Some(&last))));
    assert_eq!(messages(&r.body)[0]["id"], 4);
}

/// A principal may hold a quarter of the `GET` streams, as of the open streams: one
/// principal's many sessions cannot keep another's out.
#[test]
fn a_principal_holds_a_quarter_of_the_get_streams() {
    let mut ep = with_get_streams(8);
    let _alice: Vec<HttpStream> = (0..2)
        .map(|_| stream(listen(&mut ep, Some("alice"))))
        .collect();
    let r = complete(listen(&mut ep, Some("alice")));
    assert_eq!(r.status, 503);
    let why = body_json(&r)["error"]["message"].clone();
    assert!(why.as_str().unwrap().contains("of this client"), "{why}");
    let _bob = stream(listen(&mut ep, Some("bob")));
    // Anonymous clients, as one, are bounded by the total only.
    for _ in 0..5 {
        stream(listen(&mut ep, None));
    }
    assert_eq!(complete(listen(&mut ep, None)).status, 503);
}

/// A principal whose clients went away while two of its calls waited (its share of open
/// streams) is not locked out: its next call takes the place of the oldest it left, whose
/// client, should it resume, is told. It used to get `503` for as long as the calls it
/// left waited (with sessions, until the session went). Its share still holds while its
/// clients are there.
#[test]
fn a_principals_own_gone_streams_make_room_within_its_share() {
    let mut ep = with_sessions(HttpEndpointConfig {
        max_open_streams: 8,
        ..HttpEndpointConfig::default()
    });
    let alice = Some("alice");
    let left = session_of(&mut ep, alice);
    let hang_in = |session: &str, id| call(session, "2025-11-25", id, "hang");
    let gone: Vec<HttpStream> = (1..=2)
        .map(|id| stream(ep.handle_request_as(now(), &hang_in(&left, id), alice)))
        .collect();
    let primed = events(&gone[0].response().body)[0].0.clone().unwrap();
    for s in &gone {
        ep.cancel_stream(now(), s);
    }
    assert_eq!(ep.open_streams(), 2, "detached, not cancelled");
    let again = session_of(&mut ep, alice);
    let third = stream(ep.handle_request_as(now(), &hang_in(&again, 3), alice));
    assert_eq!(ep.open_streams(), 2);
    // The oldest call left behind ended, and says why when its client resumes.
    let resumed = complete(ep.handle_request_as(now(), &get(Some(&left), Some(&primed)), alice));
    let got = messages(&resumed.body);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["id"], 1);
    let why = got[0]["error"]["message"].as_str().unwrap();
    assert!(why.contains("no client was attached"), "{why}");
    // With its clients attached, its share holds.
    let fourth = stream(ep.handle_request_as(now(), &hang_in(&again, 4), alice));
    let r = complete(ep.handle_request_as(now(), &hang_in(&again, 5), alice));
    assert_eq!((r.status, error_code(&r)), (503, -32603));
    for s in [&third, &fourth] {
        assert_eq!(poll(&mut ep, s).1, StreamStatus::Open);
    }
}

/// A client that `initialize`s in a loop against a full session table costs a few steps
/// per session, not a walk of the table: making room looked at every session (for the
/// idle ones, then for the one to evict) for each new one. The one evicted is still the
/// one no request named since its `initialize`, the least recently used first.
#[test]
fn initializing_into_a_full_table_does_not_walk_every_session() {
    let max = 200;
    let mut ep = with_sessions(HttpEndpointConfig {
        max_sessions: max,
        ..HttpEndpointConfig::default()
    });
    let ping = |s: &str| {
        post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            &[
                ("Mcp-Session-Id", s),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
        )
    };
    let first: Vec<String> = (0..max).map(|_| session_of(&mut ep, None)).collect();
    // Half of them came back.
    for s in first.iter().step_by(2) {
        assert_eq!(complete(ep.handle_request(now(), &ping(s))).status, 200);
    }
    let looked_at = |ep: &HttpEndpoint| ep.sessions.as_ref().unwrap().looked_at.get();
    let before = looked_at(&ep);
    let flood = 100;
    let later = now() + std::time::Duration::from_secs(1);
    let init = post(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        &[],
    );
    let flooded: Vec<String> = (0..flood)
        .map(|_| {
            let r = complete(ep.handle_request(later, &init));
            r.header("mcp-session-id").unwrap().to_owned()
        })
        .collect();
    let looked = looked_at(&ep) - before;
    assert!(
        looked <= 4 * flood,
        "{looked} sessions looked at for {flood} initializes into a full table of {max}"
    );
    for s in first.iter().step_by(2).chain(&flooded) {
        assert_eq!(complete(ep.handle_request(later, &ping(s))).status, 200);
    }
    assert_eq!(ep.sessions(), max);
}
