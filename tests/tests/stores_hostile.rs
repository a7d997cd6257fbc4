//! The event stores and the `mcp-redis` client against what they must not allow: ids of
//! resumable SSE streams after their stream was forgotten, and bounds that a Redis
//! server (a peer like any other) must not get past.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use mcp_proto::server::http::{EventStore, EventStoreLimits, EventStream, MemoryEventStore};
use mcp_redis::{Redis, RedisClient, RedisEventLimits, RedisOptions, ReplyLimits};
use mcp_tests::redis::RedisServer;

fn stream(session: &str, number: u64) -> EventStream {
    EventStream {
        session: session.to_owned(),
        number,
    }
}

/// `EventStore::append`: "returns its event id, which must be unique across every stream
/// the store ever held", and the trait: "a replay that would need [forgotten events] must
/// fail with `Evicted` rather than skip them"; decision 66: "An evicted id is refused
/// rather than replayed with a gap: the client would otherwise take a stream with holes
/// for a whole one."
///
/// A session's detached POST stream (its client read the priming event and lost its
/// connection) is pushed out of the store by other sessions' streams (`max_streams`, the
/// one appended to least recently goes). When the call then answers, the store starts
/// the stream again from sequence 0 and hands the response the priming event's id. The
/// client, resuming after the priming event, gets an empty replay, never its response:
/// another client's traffic silently lost this client's answer.
#[test]
fn memory_store_never_reissues_an_id_of_a_stream_it_evicted() {
    let mut limits = EventStoreLimits::default();
    limits.max_streams = 2;
    let mut store = MemoryEventStore::new(limits);
    let victim = stream("victim", 10);
    let priming = store.append(&victim, b"").unwrap();
    // Another session's streams take the room.
    store.append(&stream("other", 11), b"").unwrap();
    store.append(&stream("other", 12), b"").unwrap();
    // The victim's call answers.
    let response = br#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
    let answer_id = store.append(&victim, response).unwrap();
    assert_ne!(
        answer_id, priming,
        "an event id was issued twice by the store (the response got the priming event's id)"
    );
    // Whatever the store does, a resumption after the priming event must not succeed
    // without the response.
    if let Ok(replay) = store.replay_after(&priming) {
        assert!(
            replay.events.iter().any(|e| e.message == response),
            "resuming after {priming} succeeded but skipped the response: {replay:?}"
        );
    }
}

/// The same promise for the Redis store: its keys expire after `ttl` without an append
/// (a call waiting on its client, a quiet `GET` stream), and the next append starts the
/// stream again at 0, reusing ids the client already holds; a client resuming with an
/// id from before the expiry is then replayed the new incarnation's tail as if nothing
/// were missing.
#[test]
fn redis_store_never_reissues_an_id_after_its_stream_expired() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let redis = Redis::connect(&server.url(), RedisOptions::default())
        .unwrap()
        .with_prefix("pc1:");
    let mut limits = RedisEventLimits::default();
    limits.ttl = Duration::from_millis(200);
    let mut store = redis.event_store(limits);
    let s = stream("sess-victim", 77);
    let old: Vec<String> = (0..3)
        .map(|i| {
            store
                .append(&s, format!("{{\"old\":{i}}}").as_bytes())
                .unwrap()
        })
        .collect();
    // The client holds "77-0" (it read the first event) and is away for longer than ttl.
    thread::sleep(Duration::from_millis(600));
    let new: Vec<String> = (0..3)
        .map(|i| {
            store
                .append(&s, format!("{{\"new\":{i}}}").as_bytes())
                .unwrap()
        })
        .collect();
    for id in &new {
        assert!(
            !old.contains(id),
            "event id {id} issued twice (before the stream expired: {old:?}, after: {new:?})"
        );
    }
    // Resuming with the old id must not replay with a hole ("77-1", "77-2" of the old
    // stream and the new stream's first events are missing).
    if let Ok(replay) = store.replay_after(&old[0]) {
        panic!("a resumption from before the expiry replayed with a gap: {replay:?}");
    }
}

/// Answers the `PING` of `RedisClient::connect`, then hands the connection to `then`.
fn fake_redis(then: impl FnOnce(TcpStream) + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let mut ping = [0u8; 14]; // *1\r\n$4\r\nPING\r\n
        if s.read_exact(&mut ping).is_err() || s.write_all(b"+PONG\r\n").is_err() {
            return;
        }
        then(s);
    });
    format!("redis://{addr}")
}

/// `RedisOptions::command_timeout`: "How long one command may take, from sending it to
/// its complete reply"; decision 72: "a slow Redis slows that process by at most the
/// command timeout per call" (the stores run under the endpoint's lock, so every request
/// of the process waits meanwhile). A Redis that reads a large command slowly (64 KiB
/// every 100 ms: each write makes progress within the timeout) holds the caller for as
/// long as it likes: the timeout is applied to each `write` call, not to the command.
#[test]
fn redis_command_timeout_bounds_sending_to_a_slow_reader() {
    let url = fake_redis(|mut s| {
        let mut buf = vec![0u8; 64 * 1024];
        let start = Instant::now();
        // Reads at most 640 KiB/s for up to 60 s, never answering.
        while start.elapsed() < Duration::from_secs(60) {
            thread::sleep(Duration::from_millis(100));
            if matches!(s.read(&mut buf), Ok(0) | Err(_)) {
                return;
            }
        }
    });
    let mut options = RedisOptions::default();
    options.command_timeout = Duration::from_millis(300);
    let mut client = RedisClient::connect(&url, options).unwrap();
    // 16 MiB: the value of a `SET`, far beyond what loopback socket buffers hold.
    let value = vec![b'x'; 16 << 20];
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let started = Instant::now();
        let result = client.command(&[b"SET", b"k", &value]);
        let _ = tx.send((started.elapsed(), result.is_err()));
    });
    match rx.recv_timeout(Duration::from_secs(5)) {
        Ok((took, failed)) => {
            assert!(failed, "a command nobody answered succeeded");
            assert!(took < Duration::from_secs(3), "the command took {took:?}");
        }
        Err(_) => panic!(
            "a command with a 300 ms command_timeout was still sending after 5 s \
             (the Redis reads slowly; the timeout bounds each write, not the command)"
        ),
    }
}

/// `ReplyLimits::max_reply_bytes`: "The most bytes one reply (or one pipeline's replies)
/// may take." A pipeline's replies are drained one by one as they parse, and only the
/// bytes not parsed yet are compared with the bound: each reply of a pipeline may take
/// the whole bound (the event store's append pipelines seven commands: seven times the
/// bound in memory, from a hostile or compromised Redis).
#[test]
fn redis_reply_bytes_bound_covers_a_whole_pipeline() {
    let url = fake_redis(|mut s| {
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
        let bulk = format!("$700\r\n{}\r\n", "y".repeat(700));
        let _ = s.write_all(format!("{bulk}{bulk}{bulk}").as_bytes());
        thread::sleep(Duration::from_secs(2));
    });
    let mut limits = ReplyLimits::default();
    limits.max_bulk_bytes = 800;
    limits.max_reply_bytes = 1000;
    let mut options = RedisOptions::default();
    options.command_timeout = Duration::from_millis(500);
    options.limits = limits;
    let mut client = RedisClient::connect(&url, options).unwrap();
    let result = client.pipeline(&[&[b"GET", b"a"], &[b"GET", b"b"], &[b"GET", b"c"]]);
    let total = result
        .as_ref()
        .map(|r| format!("{} replies", r.len()))
        .unwrap_or_default();
    assert!(
        result.is_err(),
        "a pipeline's replies of 2,100+ bytes were accepted under max_reply_bytes = 1000 ({total})"
    );
}
