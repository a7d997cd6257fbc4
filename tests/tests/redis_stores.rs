//! The `mcp-redis` stores against a real `redis-server` (started here, loopback, stopped
//! by pid): what each promises holds across two independent connections (two server
//! processes, in effect), and what Redis hands back is checked, not trusted.
//!
//! Skips when `redis-server` is not installed, except under `CI`.

use std::time::{Duration, Instant};

use mcp_proto::server::http::{
    EventStore, EventStoreError, EventStream, LastUse, SessionRecord, SessionStore,
    SessionStoreError,
};
use mcp_proto::server::{ConsumeRefusal, ConsumptionStore};
use mcp_redis::{Redis, RedisClient, RedisEventLimits, RedisOptions, Reply};
use mcp_tests::redis::RedisServer;

fn two(redis: &RedisServer, prefix: &str) -> (Redis, Redis) {
    let one = || {
        Redis::connect(&redis.url(), RedisOptions::default())
            .unwrap()
            .with_prefix(prefix)
    };
    (one(), one())
}

fn stream(session: &str, number: u64) -> EventStream {
    EventStream {
        session: session.to_owned(),
        number,
    }
}

#[test]
fn nonces_are_consumed_once_across_connections_and_expire() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two(&server, "t1:");
    let (mut a, mut b) = (a.consumption_store(), b.consumption_store());
    assert_eq!(a.consume(None, b"nonce-1", 1_000_300, 1_000_000), Ok(()));
    assert_eq!(
        b.consume(None, b"nonce-1", 1_000_300, 1_000_000),
        Err(ConsumeRefusal::Consumed),
        "seen by the other"
    );
    assert_eq!(
        a.consume(None, b"nonce-1", 1_000_300, 1_000_000),
        Err(ConsumeRefusal::Consumed)
    );
    assert_eq!(b.consume(None, b"nonce-2", 1_000_300, 1_000_000), Ok(()));
    assert!(a.consume(None, b"", 1, 0).is_err(), "empty nonce refused");
    assert!(
        a.consume(None, &[7; 65], 1, 0).is_err(),
        "oversized nonce refused"
    );
    // It is kept until its state expires (300 ms here), then forgotten.
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.consume(None, b"nonce-1", 2_000_000, 1_000_000).is_err() {
        assert!(Instant::now() < deadline, "never expired");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Redis gone: refused (at most once wins over availability), and said so: not
    // "already used".
    drop(server);
    assert_eq!(
        a.consume(None, b"nonce-3", 2_000_000, 1_000_000),
        Err(ConsumeRefusal::Unavailable)
    );
}

#[test]
fn events_replay_across_connections_within_their_bounds() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two(&server, "t2:");
    let mut limits = RedisEventLimits::default();
    limits.max_events_per_stream = 3;
    limits.max_message_bytes = 100;
    let mut a = a.event_store(limits.clone());
    let mut b = b.event_store(limits);
    let s = stream("sess-a", 41);
    let ids: Vec<String> = (0..5)
        .map(|i| a.append(&s, format!("m{i}").as_bytes()).unwrap())
        .collect();
    assert_eq!(ids, ["41-0", "41-1", "41-2", "41-3", "41-4"]);
    let replay = b.replay_after("41-2").unwrap();
    assert_eq!(replay.stream, s);
    let got: Vec<(&str, &[u8])> = replay
        .events
        .iter()
        .map(|e| (e.id.as_str(), e.message.as_slice()))
        .collect();
    assert_eq!(got, [("41-3", &b"m3"[..]), ("41-4", &b"m4"[..])]);
    assert_eq!(b.replay_after("41-0"), Err(EventStoreError::Evicted));
    assert!(b.replay_after("41-1").is_ok(), "41-2 onwards is kept");
    assert_eq!(b.replay_after("41-5"), Err(EventStoreError::Unknown));
    assert_eq!(b.replay_after("42-0"), Err(EventStoreError::Unknown));
    assert_eq!(b.replay_after("x"), Err(EventStoreError::Malformed));
    assert!(matches!(
        a.append(&s, &[b'x'; 101]),
        Err(EventStoreError::TooLarge { .. })
    ));
    // Another session cannot append to the stream.
    assert_eq!(
        b.append(&stream("sess-b", 41), b"x"),
        Err(EventStoreError::Unknown)
    );
    b.forget_session("sess-a");
    assert_eq!(a.replay_after("41-3"), Err(EventStoreError::Unknown));
}

#[test]
fn what_redis_holds_is_checked_before_use() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, _) = two(&server, "t3:");
    let mut raw = RedisClient::connect(&server.url(), RedisOptions::default()).unwrap();
    let mut set = |k: &str, v: &[u8]| {
        raw.command(&[b"SET", k.as_bytes(), v]).unwrap();
    };
    // A session record that is not one.
    set(
        "t3:session:bad",
        b"{\"v\":\"2026-07-28\",\"c\":{},\"i\":true}",
    );
    let mut sessions = a.session_store(Duration::from_secs(60));
    assert_eq!(sessions.load("bad"), Err(SessionStoreError::Corrupt));
    assert_eq!(sessions.load("absent"), Ok(None));
    assert_eq!(sessions.load("not a valid id"), Ok(None));
    // A stream whose list holds garbage, or sequence numbers past what was issued.
    set("t3:evown:7", b"sess");
    set("t3:evseq:7", b"2");
    let mut raw2 = RedisClient::connect(&server.url(), RedisOptions::default()).unwrap();
    raw2.command(&[b"RPUSH", b"t3:ev:7", b"0:", b"garbage"])
        .unwrap();
    let events = a.event_store(RedisEventLimits::default());
    assert_eq!(
        events.replay_after("7-0"),
        Err(EventStoreError::Unavailable)
    );
    raw2.command(&[b"DEL", b"t3:ev:7"]).unwrap();
    raw2.command(&[b"RPUSH", b"t3:ev:7", b"0:", b"9:{}"])
        .unwrap();
    assert_eq!(
        events.replay_after("7-0"),
        Err(EventStoreError::Unavailable)
    );
    assert_eq!(
        raw2.command(&[b"GET", b"t3:evseq:7"]).unwrap(),
        Reply::Bulk(Some(b"2".to_vec()))
    );
}

/// A touch (an endpoint holding a stream of the session) restarts the key's expiry
/// without writing the record: a session listened to on one process for longer than
/// the TTL used to expire for every process. A session removed or expired is not
/// brought back by a touch.
#[test]
fn a_touch_keeps_a_session_without_rewriting_it() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two(&server, "t9:");
    let ttl = Duration::from_millis(600);
    let mut a = a.session_store(ttl);
    let mut b = b.session_store(ttl);
    let record = SessionRecord::decode(br#"{"v":"2025-11-25","c":{},"i":false}"#).unwrap();
    let use_ = LastUse::new(mcp_proto::Instant::ZERO, ttl);
    a.save("kept", &record).unwrap();
    let changed = SessionRecord::decode(br#"{"v":"2025-11-25","c":{},"i":true}"#).unwrap();
    b.save("kept", &changed).unwrap();
    let started = Instant::now();
    while started.elapsed() < 3 * ttl {
        assert_eq!(a.touch("kept", use_), Ok(true));
        std::thread::sleep(ttl / 4);
    }
    assert_eq!(
        b.load("kept").unwrap(),
        Some(changed),
        "kept, and not rewritten"
    );
    a.remove("kept").unwrap();
    assert_eq!(b.touch("kept", use_), Ok(false));
    assert_eq!(a.load("kept").unwrap(), None);
    assert_eq!(a.touch("never", use_), Ok(false));
    assert_eq!(a.load("never").unwrap(), None);
    assert_eq!(a.touch("bad id!", use_), Ok(false));
}

#[test]
fn sessions_are_shared_and_expire_when_idle() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two(&server, "t4:");
    let mut a = a.session_store(Duration::from_millis(300));
    let mut b = b.session_store(Duration::from_millis(300));
    // A record made by an endpoint: open one on an endpoint with this store.
    let record = {
        use mcp_proto::server::example;
        use mcp_proto::server::http::{HttpEndpoint, HttpEndpointConfig, HttpRequest};
        let mut ep =
            HttpEndpoint::with_sessions(example::server(), HttpEndpointConfig::default(), &[3; 32]);
        ep.set_session_store(Box::new(
            Redis::connect(&server.url(), RedisOptions::default())
                .unwrap()
                .with_prefix("t4:")
                .session_store(Duration::from_millis(300)),
        ));
        let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let request = HttpRequest::new("POST", "/mcp")
            .with_header("Host", "127.0.0.1")
            .with_header("Content-Type", "application/json")
            .with_body(init.to_vec());
        let reply = ep.handle_request(mcp_proto::Instant::ZERO, &request);
        let mcp_proto::server::http::HttpReply::Complete(r) = reply else {
            panic!("a complete reply");
        };
        let id = r.header("mcp-session-id").unwrap().to_owned();
        let record = b.load(&id).unwrap().expect("saved at initialize");
        (id, record)
    };
    let (id, record) = record;
    a.save("other", &record).unwrap();
    assert_eq!(b.load("other").unwrap(), Some(record.clone()));
    b.remove("other").unwrap();
    assert_eq!(a.load("other").unwrap(), None);
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.load(&id).unwrap().is_some() {
        assert!(Instant::now() < deadline, "never expired");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_session_ended_on_one_process_is_not_brought_back_by_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = two(&server, "t5:");
    let mut a = a.session_store(Duration::from_secs(60));
    let mut b = b.session_store(Duration::from_secs(60));
    let record =
        mcp_proto::server::http::SessionRecord::decode(br#"{"v":"2025-06-18","c":{},"i":true}"#)
            .unwrap();
    a.save("s1", &record).unwrap();
    // B serves a request of the session: it loads the record, and while the request
    // runs, A serves the client's `DELETE`. B saves the record back when its request
    // ends: the session must stay ended (404 everywhere), not live again.
    assert_eq!(b.load("s1").unwrap(), Some(record.clone()));
    a.remove("s1").unwrap();
    let _ = b.save("s1", &record);
    assert_eq!(a.load("s1").unwrap(), None, "the ended session came back");
    assert_eq!(b.load("s1").unwrap(), None);
    // Other sessions are saved as before, a new one included.
    b.save("s2", &record).unwrap();
    assert_eq!(a.load("s2").unwrap(), Some(record.clone()));
    b.save("s2", &record).unwrap();
    assert_eq!(a.load("s2").unwrap(), Some(record));
}
