//! Hostile readers against both HTTP hosting adapters (`mcp_blocking::serve_http_with`
//! and `mcp_smol::serve_http`): a client that stops reading its answer, and one that reads
//! a large answer slowly but steadily. Raw TCP clients on loopback; every server is
//! stopped by its test.
//!
//! What is expected, from the docs:
//!
//! * `HttpConnectionConfig::send_timeout`: "How long a write may make **no progress** (a
//!   client that stopped reading) before the adapter gives up"; the machine's run loop
//!   (`mcp-proto/src/server/http/connection.rs`): "Give every write `send_timeout` to make
//!   progress, else report a transport error"; `HttpServeOptions::idle_timeout` (which is
//!   the adapters' `send_timeout`): "so is one whose client stops reading for this long".
//!   A reader that keeps taking bytes is making progress, however long the answer takes.
//! * Stopping: `HttpServerHandle::stop` "makes every thread finish within well under a
//!   second" (`mcp-blocking/src/serve_http.rs`); `mcp_smol::serve_http` "returns once
//!   `stop` has resolved and each connection has closed" (docs/decisions.md, 84), and
//!   stopping "ends every connection" (decision 85: "To stop, `mcp-blocking` wakes every
//!   thread itself ... `mcp-smol` races its `stop` future"). A client that does not read
//!   cannot be allowed to hold a process's shutdown for a send timeout or two.

mod serve_attack;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use mcp_smol::HttpServeOptions;
use serde_json::json;
use serve_attack::{BOTH, call, fresh_roundtrip, list, start, status, whole_response};

/// An `echo` whose answer is larger than loopback's socket buffers take without the
/// client reading (the server's write must wait for the client).
fn big_echo() -> Vec<u8> {
    call(1, "echo", json!({"text": "x".repeat(7 * 1024 * 1024)}))
}

/// A client sends a call with a large answer and never reads it; the server's write to
/// it blocks. Stopping the server must still return promptly (it did after the send
/// timeout: 30 s on `mcp-smol`, about 60 s on `mcp-blocking`, two blocked writes of 30 s
/// each), and close that connection.
#[test]
fn stop_returns_promptly_while_a_client_does_not_read_its_answer() {
    let mut failures = Vec::new();
    for adapter in BOTH {
        let server = start(adapter, HttpServeOptions::default());
        let mut client = TcpStream::connect(server.addr).unwrap();
        client.write_all(&big_echo()).unwrap();
        // The answer is being written, and the write is blocked on the client.
        thread::sleep(Duration::from_secs(2));
        match server.stop_within(Duration::from_secs(10)) {
            Some(took) if took < Duration::from_secs(5) => {}
            Some(took) => failures.push(format!("{adapter:?}: stop took {took:?}")),
            None => failures.push(format!("{adapter:?}: stop had not returned after 10 s")),
        }
        drop(client);
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// With a send timeout of 1 s, a client reads a 7 MiB answer 32 KiB at a time, pausing
/// 20 ms between reads: it never stops reading for anything near the send timeout, but the
/// whole answer takes several seconds. It must get the whole answer. (`mcp-smol` gave
/// the whole write `send_timeout` in all and cut the answer off after a second.)
#[test]
fn a_slow_but_steady_reader_gets_its_whole_answer() {
    let mut failures = Vec::new();
    for adapter in BOTH {
        let mut options = HttpServeOptions::default();
        options.idle_timeout = Duration::from_secs(1);
        let server = start(adapter, options);
        let mut client = TcpStream::connect(server.addr).unwrap();
        client.write_all(&big_echo()).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let started = Instant::now();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 32 * 1024];
        let ended = loop {
            match client.read(&mut buf) {
                Ok(0) => break "the connection ended".to_owned(),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => break format!("read failed: {e}"),
            }
            if whole_response(&got) {
                break String::new();
            }
            if started.elapsed() > Duration::from_secs(60) {
                break "the answer took over a minute".to_owned();
            }
            thread::sleep(Duration::from_millis(20));
        };
        if !ended.is_empty() {
            failures.push(format!(
                "{adapter:?}: {ended} after {} bytes in {:?}",
                got.len(),
                started.elapsed()
            ));
        }
        drop(client);
        server.stop_within(Duration::from_secs(60));
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// With a send timeout of 4 s and room for one connection, a client that sends a call
/// with a large answer, reads its first byte and then stops reading holds its place only
/// about that long: the server gives up on the write once it made no progress for
/// `send_timeout`, and the next client is served. Allowed from the first byte: one and a
/// half send timeouts and half a second. (The kernel takes a few hundred KiB more just
/// after the client's last read, as the socket buffer grows, and says nothing of it: an
/// adapter finds that room only by trying again, which it may do a fraction of the send
/// timeout later; and the newcomers try every 100 ms.) `mcp-blocking` gave up only after
/// three blocked writes of `send_timeout` each (with 30 s, 90 s; 12 s here); `mcp-smol`,
/// once it counted time without progress, after two (it found the room at the timeout).
#[test]
fn a_client_that_stops_reading_is_let_go_after_the_send_timeout() {
    let send_timeout = Duration::from_secs(4);
    let mut failures = Vec::new();
    for adapter in BOTH {
        let mut options = HttpServeOptions::default();
        options.idle_timeout = send_timeout;
        options.max_connections = 1;
        let server = start(adapter, options);
        let mut client = TcpStream::connect(server.addr).unwrap();
        client.write_all(&big_echo()).unwrap();
        // The answer's first byte: the server is writing it from now on.
        client
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        client.read_exact(&mut [0u8; 1]).unwrap();
        let started = Instant::now();
        let freed = loop {
            let answer = fresh_roundtrip(server.addr, &list(2), Duration::from_secs(5));
            if status(&answer) == Some(200) {
                break Some(started.elapsed());
            }
            if started.elapsed() > Duration::from_secs(30) {
                break None;
            }
            thread::sleep(Duration::from_millis(100));
        };
        match freed {
            Some(after) if after <= send_timeout * 3 / 2 + Duration::from_millis(500) => {}
            Some(after) => {
                failures.push(format!("{adapter:?}: the place was freed after {after:?}"))
            }
            None => failures.push(format!("{adapter:?}: the place was never freed")),
        }
        drop(client);
        server.stop_within(Duration::from_secs(60));
    }
    assert!(failures.is_empty(), "{failures:?}");
}
