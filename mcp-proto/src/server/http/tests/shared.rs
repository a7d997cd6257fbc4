//! Two endpoints (two processes, in effect) sharing a session store and an event store:
//! one session, served by either.

use std::sync::{Arc, Mutex};

use super::streams::{call, events, get, messages, with_sessions_seeded};
use super::*;

/// A [`MemoryEventStore`] both endpoints append to and replay from.
#[derive(Debug, Clone)]
struct SharedEvents(Arc<Mutex<MemoryEventStore>>);

impl EventStore for SharedEvents {
    fn append(&mut self, stream: &EventStream, message: &[u8]) -> Result<String, EventStoreError> {
        self.0.lock().unwrap().append(stream, message)
    }
    fn replay_after(&self, event_id: &str) -> Result<Replay, EventStoreError> {
        self.0.lock().unwrap().replay_after(event_id)
    }
    fn forget_session(&mut self, session: &str) {
        self.0.lock().unwrap().forget_session(session);
    }
}

fn pair(share: bool) -> (HttpEndpoint, HttpEndpoint) {
    let config = HttpEndpointConfig {
        sse_polling: true,
        sse_retry: std::time::Duration::from_millis(250),
        ..HttpEndpointConfig::default()
    };
    pair_with(&config, share)
}

/// Two endpoints with `config`, sharing stores when `share`.
fn pair_with(config: &HttpEndpointConfig, share: bool) -> (HttpEndpoint, HttpEndpoint) {
    let mut a = with_sessions_seeded(config.clone(), &[1; 32]);
    let mut b = with_sessions_seeded(config.clone(), &[2; 32]);
    if share {
        let sessions = MemorySessionStore::default();
        let events = SharedEvents(Arc::new(Mutex::new(MemoryEventStore::new(
            EventStoreLimits::default(),
        ))));
        for ep in [&mut a, &mut b] {
            ep.set_session_store(Box::new(sessions.clone()));
            ep.set_event_store(Box::new(events.clone()));
        }
    }
    (a, b)
}

fn open(ep: &mut HttpEndpoint) -> String {
    let init = post(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}}),
        &[],
    );
    let r = complete(ep.handle_request(now(), &init));
    assert_eq!(r.status, 200, "{r:?}");
    r.header("mcp-session-id").unwrap().to_owned()
}

fn echo(session: &str) -> HttpRequest {
    post(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"}}}),
        &[
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
    )
}

#[test]
fn a_session_opened_on_one_endpoint_is_served_and_ended_by_the_other() {
    let (mut a, mut b) = pair(true);
    let s = open(&mut a);
    let r = complete(b.handle_request(now(), &echo(&s)));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(body_json(&r)["result"]["content"][0]["text"], "hi");
    assert_eq!(b.sessions(), 1, "adopted");

    // A stream begun on A (polling: only its priming event) is replayed by B, with a
    // retry since B cannot know whether the request is still running elsewhere.
    let r = complete(a.handle_request(now(), &call(&s, "2025-11-25", 1, "steps")));
    let priming = events(&r.body)[0].0.clone().unwrap();
    let r = complete(b.handle_request(now(), &get(Some(&s), Some(&priming))));
    let rest = messages(&r.body);
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert_eq!(rest[1]["result"]["content"][0]["text"], "stepped");
    assert_eq!(events(&r.body).last().unwrap().1.as_deref(), Some("250"));

    // Event ids of the two endpoints do not collide.
    let r = complete(b.handle_request(now(), &call(&s, "2025-11-25", 2, "steps")));
    let from_b = events(&r.body)[0].0.clone().unwrap();
    assert_ne!(from_b.split('-').next(), priming.split('-').next());

    // DELETE on B ends the session for A.
    let delete = HttpRequest::new("DELETE", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Mcp-Session-Id", s.as_str());
    assert_eq!(complete(b.handle_request(now(), &delete)).status, 200);
    assert_eq!(complete(a.handle_request(now(), &echo(&s))).status, 404);
    assert_eq!(a.sessions(), 0, "A dropped its copy");
}

#[test]
fn without_a_shared_store_the_other_endpoint_knows_nothing() {
    let (mut a, mut b) = pair(false);
    let s = open(&mut a);
    assert_eq!(complete(b.handle_request(now(), &echo(&s))).status, 404);
    let r = complete(a.handle_request(now(), &call(&s, "2025-11-25", 1, "steps")));
    let priming = events(&r.body)[0].0.clone().unwrap();
    let r = complete(a.handle_request(now(), &get(Some(&s), Some(&priming))));
    assert_eq!(messages(&r.body).len(), 2, "A itself resumes");
}

#[test]
fn shared_state_changes_reach_the_other_endpoint() {
    let (mut a, mut b) = pair(true);
    let s = open(&mut a);
    let headers = [
        ("Mcp-Session-Id", s.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        complete(b.handle_request(now(), &post(&initialized, &headers))).status,
        202
    );
    // A sees the flag B recorded (the record A loads is B's).
    let record = a.session_store.as_mut().unwrap().load(&s).unwrap().unwrap();
    assert!(record.initialized);
    assert_eq!(complete(a.handle_request(now(), &echo(&s))).status, 200);
    let local = a
        .sessions
        .as_ref()
        .unwrap()
        .state(&s)
        .unwrap()
        .record()
        .unwrap();
    assert!(local.initialized, "A refreshed its copy from the store");
}

/// A session idle on one endpoint but in use on the other is dropped by the first one's
/// sweep (when it needs room) from its own table only: its events stay in the shared
/// store, and the other endpoint resumes its stream (it used to answer 400).
#[test]
fn a_sweep_for_room_leaves_a_session_in_use_elsewhere() {
    let (mut a, mut b) = pair(true);
    let s = open(&mut a);
    let minutes = |m: u64| now() + std::time::Duration::from_secs(60 * m);
    let r = complete(b.handle_request(minutes(29), &call(&s, "2025-11-25", 1, "confirm")));
    let priming = events(&r.body)[0].0.clone().unwrap();
    // A needs room for a stream at minute 31: it sweeps its idle sessions.
    let hang = modern(1, "tools/call", json!({"name": "hang"}), Some("hang"));
    let mut held = Vec::new();
    for _ in 0..64 {
        held.push(stream(a.handle_request(minutes(31), &hang)));
    }
    let _ = a.handle_request(minutes(31), &hang);
    let r = complete(b.handle_request(minutes(31), &get(Some(&s), Some(&priming))));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let got = messages(&r.body);
    assert_eq!(got[0]["method"], "elicitation/create", "{got:?}");
}

/// Subscriptions a session may hold (`max_subscriptions` URIs, each up to 8 KiB) used to
/// add up to more than a session record may hold: the record was saved, but no endpoint
/// could read it back, and the session was unknown (404) everywhere but where it began.
#[test]
fn subscriptions_keep_a_session_record_that_the_other_endpoint_can_read() {
    let server = || {
        example::server_with(|c| {
            c.resource_subscriptions = true;
            c.resource_reader = Some(Box::new(|uri: &str| {
                uri.starts_with("example://greeting/")
                    .then(|| json!({"contents": []}))
            }));
        })
    };
    let mut a = HttpEndpoint::with_sessions(server(), HttpEndpointConfig::default(), &[1; 32]);
    let mut b = HttpEndpoint::with_sessions(server(), HttpEndpointConfig::default(), &[2; 32]);
    let sessions = MemorySessionStore::default();
    a.set_session_store(Box::new(sessions.clone()));
    b.set_session_store(Box::new(sessions.clone()));
    let s = open(&mut a);
    let headers = [
        ("Mcp-Session-Id", s.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let mut refused = 0;
    for i in 0..64 {
        let uri = format!("example://greeting/{i:08000}");
        let subscribe = json!({"jsonrpc": "2.0", "id": i, "method": "resources/subscribe",
            "params": {"uri": uri}});
        let r = complete(a.handle_request(now(), &post(&subscribe, &headers)));
        assert_eq!(r.status, 200, "{r:?}");
        if body_json(&r).get("error").is_some() {
            assert_eq!(error_code(&r), -32603, "{r:?}");
            refused += 1;
        }
    }
    let stored = sessions.clone().load(&s);
    assert!(
        matches!(stored, Ok(Some(_))),
        "the stored record reads back: {stored:?}"
    );
    let r = complete(b.handle_request(now(), &echo(&s)));
    assert_eq!(r.status, 200, "{r:?}");
    assert!(refused > 0, "some subscriptions were refused");
}

/// A [`MemorySessionStore`] that can be made unreachable, as a Redis that is down.
#[derive(Debug, Clone)]
struct Flaky {
    store: MemorySessionStore,
    down: Arc<std::sync::atomic::AtomicBool>,
}

impl Flaky {
    fn check(&self) -> Result<(), SessionStoreError> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(SessionStoreError::Unavailable("connection refused".into()));
        }
        Ok(())
    }
}

impl SessionStore for Flaky {
    fn save(&mut self, id: &str, record: &SessionRecord) -> Result<(), SessionStoreError> {
        self.check()?;
        self.store.save(id, record)
    }
    fn load(&mut self, id: &str) -> Result<Option<SessionRecord>, SessionStoreError> {
        self.check()?;
        self.store.load(id)
    }
    fn remove(&mut self, id: &str) -> Result<(), SessionStoreError> {
        self.check()?;
        self.store.remove(id)
    }
}

/// A store that cannot be reached does not know that a session ended: a session this
/// endpoint does not hold gets 503 (try again), not the 404 that tells the client its
/// session is over and makes it start another (which the store, down, refuses too).
#[test]
fn a_session_store_that_is_down_is_not_a_session_that_ended() {
    let (mut a, mut b) = pair(false);
    let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let store = Flaky {
        store: MemorySessionStore::default(),
        down: down.clone(),
    };
    a.set_session_store(Box::new(store.clone()));
    b.set_session_store(Box::new(store));
    let s = open(&mut a);
    down.store(true, std::sync::atomic::Ordering::SeqCst);
    let r = complete(b.handle_request(now(), &echo(&s)));
    assert_eq!(r.status, 503, "{r:?}");
    // A, which holds the session, serves it from its own copy meanwhile.
    assert_eq!(complete(a.handle_request(now(), &echo(&s))).status, 200);
    // Back: B adopts it.
    down.store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(complete(b.handle_request(now(), &echo(&s))).status, 200);
    // An id no store ever knew is still 404 when the store answers.
    assert_eq!(complete(b.handle_request(now(), &echo("nope"))).status, 404);
}

/// An endpoint with no room to take in a session another endpoint serves answers 404
/// (the client may initialize again, perhaps elsewhere) and leaves the session as it is
/// everywhere else: its events stay in the shared store, and the endpoint serving it
/// still resumes its streams.
#[test]
fn no_room_for_a_session_leaves_its_events_to_the_endpoint_serving_it() {
    let config = HttpEndpointConfig {
        sse_polling: true,
        sse_retry: std::time::Duration::from_millis(250),
        ..HttpEndpointConfig::default()
    };
    let mut a = with_sessions_seeded(config.clone(), &[1; 32]);
    let mut b = with_sessions_seeded(
        HttpEndpointConfig {
            max_sessions: 1,
            ..config
        },
        &[2; 32],
    );
    let sessions = MemorySessionStore::default();
    let shared = SharedEvents(Arc::new(Mutex::new(MemoryEventStore::new(
        EventStoreLimits::default(),
    ))));
    for ep in [&mut a, &mut b] {
        ep.set_session_store(Box::new(sessions.clone()));
        ep.set_event_store(Box::new(shared.clone()));
    }
    let s1 = open(&mut a);
    let r = complete(a.handle_request(now(), &call(&s1, "2025-11-25", 1, "steps")));
    let priming = events(&r.body)[0].0.clone().unwrap();
    // B's one place is taken by a session with a call waiting for its client.
    let s2 = open(&mut b);
    let _ = b.handle_request(now(), &call(&s2, "2025-11-25", 1, "confirm"));
    assert_eq!(complete(b.handle_request(now(), &echo(&s1))).status, 404);
    let r = complete(a.handle_request(now(), &get(Some(&s1), Some(&priming))));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        messages(&r.body).len(),
        2,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
}

/// A [`MemorySessionStore`] on which another endpoint's `DELETE` of `ends` lands right
/// after this endpoint has loaded it, as it may while this endpoint handles a request.
#[derive(Debug)]
struct EndedMeanwhile {
    store: MemorySessionStore,
    ends: Option<String>,
}

impl SessionStore for EndedMeanwhile {
    fn save(&mut self, id: &str, record: &SessionRecord) -> Result<(), SessionStoreError> {
        self.store.save(id, record)
    }
    fn load(&mut self, id: &str) -> Result<Option<SessionRecord>, SessionStoreError> {
        let loaded = self.store.load(id);
        if self.ends.as_deref() == Some(id) {
            self.ends = None;
            self.store.clone().remove(id)?;
        }
        loaded
    }
    fn remove(&mut self, id: &str) -> Result<(), SessionStoreError> {
        self.store.remove(id)
    }
}

/// A session ended on one endpoint while the other handled one of its requests stays
/// ended: the other's save at the end of that request used to put it back in the shared
/// store, and every endpoint served it again.
#[test]
fn a_session_ended_while_another_endpoint_serves_it_stays_ended() {
    let (mut a, mut b) = pair(false);
    let sessions = MemorySessionStore::default();
    a.set_session_store(Box::new(sessions.clone()));
    let s = open(&mut a);
    b.set_session_store(Box::new(EndedMeanwhile {
        store: sessions.clone(),
        ends: Some(s.clone()),
    }));
    // B serves the request from the record it loaded; the session ends meanwhile.
    let _ = b.handle_request(now(), &echo(&s));
    assert_eq!(
        sessions.clone().load(&s),
        Ok(None),
        "the ended session was saved back"
    );
    assert_eq!(complete(a.handle_request(now(), &echo(&s))).status, 404);
    assert_eq!(complete(b.handle_request(now(), &echo(&s))).status, 404);
}

/// A session nobody used for longer than `session_idle_timeout` is over, with a shared
/// [`MemorySessionStore`] as without one: each request naming it used to count it as
/// used now (the store knowing it), and the memory store has no clock of its own, so the
/// session never expired.
#[test]
fn an_idle_session_expires_with_a_shared_memory_store() {
    let hours = |h: u64| now() + std::time::Duration::from_secs(3600 * h);
    let (mut a, mut b) = pair(true);
    let s = open(&mut a);
    assert_eq!(complete(a.handle_request(hours(3), &echo(&s))).status, 404);
    assert_eq!(complete(b.handle_request(hours(3), &echo(&s))).status, 404);
    assert_eq!(a.sessions(), 0, "A dropped its copy");

    // Used on B within the timeout, it lives on for A although A did not see it.
    let (mut a, mut b) = pair(true);
    let s = open(&mut a);
    let minutes = |m: u64| now() + std::time::Duration::from_secs(60 * m);
    assert_eq!(
        complete(b.handle_request(minutes(20), &echo(&s))).status,
        200
    );
    assert_eq!(
        complete(a.handle_request(minutes(40), &echo(&s))).status,
        200
    );
    // Idle on both since minute 40.
    assert_eq!(
        complete(b.handle_request(minutes(71), &echo(&s))).status,
        404
    );
    assert_eq!(
        complete(a.handle_request(minutes(71), &echo(&s))).status,
        404
    );

    // One whose request is still being handled here is in use, however old its record.
    let mut c = with_sessions_seeded(HttpEndpointConfig::default(), &[3; 32]);
    c.set_session_store(Box::new(MemorySessionStore::default()));
    let s = open(&mut c);
    let _open = stream(c.handle_request(now(), &call(&s, "2025-11-25", 1, "hang")));
    assert_eq!(complete(c.handle_request(hours(3), &echo(&s))).status, 200);
}

/// A flood of `initialize`s filling a shared [`MemorySessionStore`] does not push out a
/// session whose client uses it: the store used to evict the record saved least
/// recently, whatever the endpoint's own table would have done, and the client got 404.
#[test]
fn a_flood_of_initializes_does_not_evict_a_session_in_use_from_the_store() {
    let (mut a, mut b) = pair(false);
    let sessions = MemorySessionStore::new(4);
    a.set_session_store(Box::new(sessions.clone()));
    b.set_session_store(Box::new(sessions.clone()));
    let s = open(&mut a);
    assert_eq!(complete(a.handle_request(now(), &echo(&s))).status, 200);
    let flood: Vec<String> = (0..8).map(|_| open(&mut b)).collect();
    assert_eq!(complete(a.handle_request(now(), &echo(&s))).status, 200);
    assert_eq!(sessions.len(), 4);
    // The newest of the flood are the ones kept (whose clients may still come back).
    assert_eq!(
        complete(b.handle_request(now(), &echo(&flood[7]))).status,
        200
    );
    assert_eq!(
        complete(b.handle_request(now(), &echo(&flood[0]))).status,
        404
    );
}

/// A session is over once it has been idle for exactly its timeout, with a shared
/// [`MemorySessionStore`] as in an endpoint's own table (which expires it at that
/// instant, not after it); and the endpoint that finds it so removes it from the store,
/// which would otherwise hold the ended record until a flood pushed it out.
#[test]
fn a_session_idle_for_exactly_its_timeout_is_over_and_leaves_the_store() {
    let (mut a, mut b) = pair(false);
    let sessions = MemorySessionStore::new(4);
    a.set_session_store(Box::new(sessions.clone()));
    b.set_session_store(Box::new(sessions.clone()));
    let s = open(&mut a);
    let idle = HttpEndpointConfig::default().session_idle_timeout;
    let just_before = now() + (idle - std::time::Duration::from_millis(1));
    // B has never held it: only the store's record tells how long it was idle.
    assert_eq!(
        complete(b.handle_request(just_before, &echo(&s))).status,
        200
    );
    assert_eq!(sessions.len(), 1);
    let (mut a, mut b) = pair(false);
    let sessions = MemorySessionStore::new(4);
    a.set_session_store(Box::new(sessions.clone()));
    b.set_session_store(Box::new(sessions.clone()));
    let s = open(&mut a);
    assert_eq!(
        complete(b.handle_request(now() + idle, &echo(&s))).status,
        404
    );
    assert_eq!(sessions.len(), 0, "the ended session left the store");
}

/// Hands `ep` each deadline it asks for ([`HttpEndpoint::poll_timeout`]) up to `until`,
/// as an adapter's timer does.
fn run_timer(ep: &mut HttpEndpoint, until: Instant) {
    for _ in 0..10_000 {
        match ep.poll_timeout() {
            Some(due) if due <= until => ep.handle_timeout(due),
            _ => return,
        }
    }
    panic!("the endpoint's deadlines never got past {until:?}");
}

/// A [`MemorySessionStore`] counting what is asked of it.
#[derive(Debug, Clone)]
struct Counting {
    store: MemorySessionStore,
    writes: Arc<std::sync::atomic::AtomicUsize>,
}

impl Counting {
    fn new() -> Self {
        Counting {
            store: MemorySessionStore::default(),
            writes: Arc::default(),
        }
    }
    fn writes(&self) -> usize {
        self.writes.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn wrote(&self) {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl SessionStore for Counting {
    fn save(&mut self, id: &str, record: &SessionRecord) -> Result<(), SessionStoreError> {
        self.wrote();
        self.store.save(id, record)
    }
    fn load(&mut self, id: &str) -> Result<Option<SessionRecord>, SessionStoreError> {
        self.store.load(id)
    }
    fn remove(&mut self, id: &str) -> Result<(), SessionStoreError> {
        self.store.remove(id)
    }
    fn touch(&mut self, id: &str, last_use: LastUse) -> Result<bool, SessionStoreError> {
        self.wrote();
        self.store.touch(id, last_use)
    }
}

/// A client that only listens on its `GET` stream on one endpoint, for longer than the
/// idle timeout, still has its session when its next request lands on the other: the
/// stored record kept the time of the last request, so the other endpoint found it idle,
/// answered 404 and removed it everywhere, although the first still served its stream.
/// The endpoint holding the stream now tells the store the session is in use, once per
/// half idle timeout (not per event); once the client leaves, the session idles out.
#[test]
fn a_session_listening_on_one_endpoint_is_not_idle_for_the_other() {
    let hours = |h: u64| now() + std::time::Duration::from_secs(3600 * h);
    let (mut a, mut b) = pair(false);
    let sessions = Counting::new();
    a.set_session_store(Box::new(sessions.clone()));
    b.set_session_store(Box::new(sessions.clone()));
    let s = open(&mut a);
    let g = stream(a.handle_request(now(), &get(Some(&s), None)));
    let before = sessions.writes();
    for minute in (1..=180).step_by(7) {
        let at = now() + std::time::Duration::from_secs(60 * minute);
        assert!(a.notify_listeners("notifications/tools/list_changed", None) <= 1);
        run_timer(&mut a, at);
    }
    run_timer(&mut a, hours(3));
    let touches = sessions.writes() - before;
    let r = complete(b.handle_request(hours(3), &echo(&s)));
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        (1..=12).contains(&touches),
        "{touches} store writes in 3 hours"
    );
    assert_eq!(complete(a.handle_request(hours(3), &echo(&s))).status, 200);
    assert_ne!(a.poll_stream(&g, &mut Vec::new()), StreamStatus::Finished);

    // The client leaves: nothing keeps the session alive any more.
    a.cancel_stream(hours(3), &g);
    let later = hours(3) + HttpEndpointConfig::default().session_idle_timeout;
    run_timer(&mut a, later);
    assert_eq!(complete(b.handle_request(later, &echo(&s))).status, 404);
    assert_eq!(complete(a.handle_request(later, &echo(&s))).status, 404);

    // A session ended elsewhere (`DELETE`) ends its stream here at the next touch.
    let s = open(&mut a);
    let g = stream(a.handle_request(now(), &get(Some(&s), None)));
    let delete = HttpRequest::new("DELETE", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Mcp-Session-Id", s.as_str());
    assert_eq!(complete(b.handle_request(now(), &delete)).status, 200);
    run_timer(&mut a, hours(1));
    assert_eq!(a.poll_stream(&g, &mut Vec::new()), StreamStatus::Finished);
    assert_eq!(a.sessions(), 0);
    assert_eq!(a.poll_timeout(), None, "nothing left to touch");
}

/// The same for a call whose stream stays open on one endpoint for longer than the idle
/// timeout: a request of its session on the other endpoint is served, and the call
/// goes on.
#[test]
fn a_long_call_on_one_endpoint_keeps_its_session_for_the_other() {
    let hours = |h: u64| now() + std::time::Duration::from_secs(3600 * h);
    let (mut a, mut b) = pair_with(&HttpEndpointConfig::default(), true);
    let s = open(&mut a);
    let call = stream(a.handle_request(now(), &call(&s, "2025-11-25", 1, "hang")));
    run_timer(&mut a, hours(3));
    let r = complete(b.handle_request(hours(3), &echo(&s)));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(complete(a.handle_request(hours(3), &echo(&s))).status, 200);
    assert_ne!(
        a.poll_stream(&call, &mut Vec::new()),
        StreamStatus::Finished
    );
}

/// The endpoint's deadline (`poll_timeout`, which adapters ask after every event) and a
/// request naming a session cost the same with hundreds of sessions listening as with
/// one: they used to walk every exchange and `GET` stream (and look each session up)
/// to find the next touch, the sessions with parked tasks, and whether the session
/// named was busy, so a burst of N events over N streams cost N². The touches still
/// come every half idle timeout, for every session, whenever each was last written.
#[test]
fn deadlines_and_requests_do_not_walk_every_stream() {
    let minutes = |m: u64| now() + std::time::Duration::from_secs(60 * m);
    let config = HttpEndpointConfig {
        max_get_streams: 1000,
        ..HttpEndpointConfig::default()
    };
    let (mut a, mut b) = pair_with(&config, true);
    let n = 300;
    let mut sessions = Vec::new();
    let mut streams = Vec::new();
    for i in 0..n {
        let s = open(&mut a);
        // Their records are written at different times, so each is due on its own.
        let at = minutes(u64::try_from(i % 7).unwrap());
        assert_eq!(complete(a.handle_request(at, &echo(&s))).status, 200);
        streams.push(stream(a.handle_request(at, &get(Some(&s), None))));
        sessions.push(s);
    }
    super::WALKED.with(|w| w.set(0));
    let rounds = 100;
    for (i, s) in sessions.iter().take(rounds).enumerate() {
        let at = minutes(7) + std::time::Duration::from_millis(u64::try_from(i).unwrap());
        assert_eq!(complete(a.handle_request(at, &echo(s))).status, 200);
        let _ = a.take_timer_moved();
        let _ = a.poll_timeout();
    }
    let walked = super::WALKED.with(std::cell::Cell::get);
    assert!(
        walked <= rounds,
        "{walked} exchanges and streams looked at for {rounds} requests with {n} streams"
    );
    // Three hours of listening: every session is still alive for the other endpoint.
    run_timer(&mut a, minutes(180));
    for s in &sessions {
        assert_eq!(
            complete(b.handle_request(minutes(180), &echo(s))).status,
            200
        );
    }
    for g in &streams {
        assert_ne!(a.poll_stream(g, &mut Vec::new()), StreamStatus::Finished);
    }
}

/// Time passing visits only the sessions it has news for: each legacy session with a
/// `GET` stream was swapped into the machine (and its record written to the session
/// store) at every deadline, whether or not any of its tasks had changed, so with many
/// listening sessions every timer tick cost a store write per session. Now a session is
/// visited when a task of its own changed, and its stream still hears of it at once.
#[test]
fn time_passing_visits_only_the_sessions_whose_tasks_changed() {
    let secs = |s: u64| now() + std::time::Duration::from_secs(s);
    let later = Tool::new(
        "later",
        "",
        json!({"type": "object"}),
        |_: &ToolCall<'_>| ToolOutcome::After {
            delay: std::time::Duration::from_secs(5),
            outcome: Box::new(ToolOutcome::text("later done")),
        },
    )
    .as_task(0);
    let server = example::server_with(|c| c.tools.push(later));
    let mut ep = HttpEndpoint::with_sessions(server, HttpEndpointConfig::default(), &[3; 32]);
    let store = Counting::new();
    ep.set_session_store(Box::new(store.clone()));
    let n = 32;
    let mut listening = Vec::new();
    for _ in 0..n {
        let s = open(&mut ep);
        let g = stream(ep.handle_request(now(), &get(Some(&s), None)));
        listening.push((s, g));
    }
    let (tasked, _) = &listening[7];
    let call = post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "later", "arguments": {}, "task": {}}}),
        &[
            ("Mcp-Session-Id", tasked.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
    );
    let created = complete(ep.handle_request(now(), &call));
    assert!(body_json(&created)["result"]["task"]["taskId"].is_string());
    for (_, g) in &listening {
        let _ = ep.poll_stream(g, &mut Vec::new());
    }

    // A tick with no news: no session is visited, none written.
    let before = store.writes();
    ep.handle_timeout(secs(1));
    assert_eq!(
        store.writes() - before,
        0,
        "store writes at a tick with no news"
    );

    // The task's outcome falls due: its session alone is visited, and its stream hears.
    assert_eq!(ep.poll_timeout(), Some(secs(5)));
    let before = store.writes();
    ep.handle_timeout(secs(5));
    assert!(
        store.writes() - before <= 1,
        "{} writes",
        store.writes() - before
    );
    for (i, (_, g)) in listening.iter().enumerate() {
        let mut out = Vec::new();
        let _ = ep.poll_stream(g, &mut out);
        let statuses = messages(&out)
            .iter()
            .filter(|m| m["method"] == "notifications/tasks/status")
            .count();
        assert_eq!(statuses, usize::from(i == 7), "stream {i}");
    }
}
