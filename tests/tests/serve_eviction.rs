//! An eviction that lands while the evicted connection's request waits for the endpoint,
//! against both HTTP hosting adapters. Raw TCP clients on loopback; every server is
//! stopped by its test.
//!
//! Expected (`mcp-proto/src/server/http/connection.rs`, "Over the bound"): "When the host
//! gave its place to a newcomer, it closes at its next turn ...: a request read in full
//! is answered with `Connection: close`, one partly read gets `503`". A request read in
//! full whose answer is a stream (a `tools/call` that has not finished) is accepted with
//! its SSE head; it must then be answered, or stay open until it is, not be cancelled
//! because the adapter ended the socket's reading to wake the evicted connection
//! (`mcp-blocking` does that with `shutdown(Read)`, which its stream's peek then takes
//! for the client leaving: decision 85's "a client that went away cancels the
//! request"). The client did not leave; its call is dropped without an answer, after
//! the server said 200. (`mcp-smol`, which wakes the evicted connection's task instead,
//! keeps the stream.)

mod serve_attack;

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::thread;
use std::time::Duration;

use mcp_proto::server::{Server, Tool, ToolCall, ToolOutcome, example};
use mcp_smol::HttpServeOptions;
use serde_json::json;
use serve_attack::{BOTH, call, fresh_roundtrip, list, read_for, start_with, status};

/// The example server with `block`, a tool whose synchronous handler takes 1.5 s: it
/// holds the endpoint (as a session store doing network IO does, `serve_http_setup`'s
/// docs) while other requests wait for it.
fn server() -> Server {
    example::server_with(|config| {
        config.tools.push(Tool::new(
            "block",
            "Takes 1.5 s",
            json!({"type": "object"}),
            |_: &ToolCall<'_>| {
                thread::sleep(Duration::from_millis(1500));
                ToolOutcome::text("unblocked")
            },
        ));
    })
}

/// With room for two connections: connection A waits over a second (so it may be
/// evicted), a second client calls `block`, A sends a `hang` call (read in full, it waits
/// for the endpoint), and a newcomer arrives, taking A's place. A's call gets its stream
/// (200, `text/event-stream`); the stream must not then end without a word while A is
/// still there.
#[test]
fn a_stream_accepted_on_an_evicted_connection_is_not_cancelled() {
    let mut failures = Vec::new();
    for adapter in BOTH {
        let (running, mut a, blocker, newcomer) = hang_on_an_evicted_connection(adapter);
        let (got, closed) = read_for(&mut a, Duration::from_secs(4), |_| false);
        let text = String::from_utf8_lossy(&got).into_owned();
        let streamed = text.starts_with("HTTP/1.1 200") && text.contains("text/event-stream");
        let answered = text.contains("\"result\"") || text.contains("\"error\"");
        if streamed && closed && !answered {
            failures.push(format!(
                "{adapter:?}: the hang call's stream was accepted, then the connection \
                 closed without an answer: {text:?}"
            ));
        }
        assert_eq!(status(&newcomer.join().unwrap()), Some(200), "{adapter:?}");
        assert_eq!(status(&blocker.join().unwrap()), Some(200), "{adapter:?}");
        drop(a);
        running.stop_within(Duration::from_secs(30));
    }
    assert!(failures.is_empty(), "{failures:?}");
}

type Roundtrip = thread::JoinHandle<Vec<u8>>;

/// With room for two connections: connection A waits over a second (so it may be
/// evicted), a second client calls `block` (the blocker), A sends a `hang` call (read in
/// full, it waits for the endpoint), and a newcomer arrives to take A's place.
fn hang_on_an_evicted_connection(
    adapter: serve_attack::Adapter,
) -> (serve_attack::Running, TcpStream, Roundtrip, Roundtrip) {
    let mut options = HttpServeOptions::default();
    options.max_connections = 2;
    let running = start_with(adapter, options, server);
    let addr = running.addr;
    let mut a = TcpStream::connect(addr).unwrap();
    // Evictable after a second of waiting for a request.
    thread::sleep(Duration::from_millis(1200));
    let blocker = thread::spawn(move || {
        fresh_roundtrip(addr, &call(9, "block", json!({})), Duration::from_secs(10))
    });
    thread::sleep(Duration::from_millis(300));
    a.write_all(&call(1, "hang", json!({}))).unwrap();
    thread::sleep(Duration::from_millis(200));
    let newcomer = thread::spawn(move || fresh_roundtrip(addr, &list(2), Duration::from_secs(10)));
    (running, a, blocker, newcomer)
}

/// CPU time this process has used (user and system), in clock ticks (100 a second).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command's name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are the 14th and 15th fields, 12th and 13th after the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// As above, A's `hang` call gets its stream on a connection that gave its place away;
/// then A ends its sending (`shutdown(Write)`) and goes on reading. The stream stays
/// open (the machine does not take the end of input on an evicted connection for a
/// client that left), and the socket reads as ended for good: the server must not keep
/// looking at it. `mcp-smol` waited for the socket to become readable (at once, for
/// good) and peeked again, in a loop: a core busy for as long as the stream stayed open.
/// Allowed: a quarter of the 2 s watched, where a spinning server takes nearly all of it.
#[test]
fn an_evicted_stream_whose_client_stopped_sending_costs_no_cpu() {
    let mut failures = Vec::new();
    for adapter in BOTH {
        let (running, mut a, blocker, newcomer) = hang_on_an_evicted_connection(adapter);
        let (got, _) = read_for(&mut a, Duration::from_secs(3), |seen| {
            String::from_utf8_lossy(seen).contains("text/event-stream")
        });
        assert_eq!(status(&newcomer.join().unwrap()), Some(200), "{adapter:?}");
        assert_eq!(status(&blocker.join().unwrap()), Some(200), "{adapter:?}");
        if !String::from_utf8_lossy(&got).contains("text/event-stream") {
            // Not this interleaving (the call was not streamed on the evicted
            // connection): nothing to watch.
            eprintln!(
                "{adapter:?}: no stream: {:?}",
                String::from_utf8_lossy(&got)
            );
            drop(a);
            running.stop_within(Duration::from_secs(30));
            continue;
        }
        a.shutdown(Shutdown::Write).unwrap();
        thread::sleep(Duration::from_millis(300));
        let before = cpu_ticks();
        let (_, closed) = read_for(&mut a, Duration::from_secs(2), |_| false);
        let used = cpu_ticks() - before;
        if used > 50 {
            failures.push(format!(
                "{adapter:?}: {used} ticks of CPU in 2 s with the stream open \
                 (connection closed: {closed})"
            ));
        }
        drop(a);
        running.stop_within(Duration::from_secs(30));
    }
    assert!(failures.is_empty(), "{failures:?}");
}
