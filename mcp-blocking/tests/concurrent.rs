//! Several threads on one blocking client ([`Client::handle`]): calls in flight at once,
//! pipelined on stdio (the bundled example server as a child process) and spread over
//! several connections on HTTP (the example server on loopback); each call with its own
//! timeout; closing while calls wait; the input handler and the progress callback
//! serving any of them.
//!
//! The overlap is shown with the example server's `hang` tool, which never answers: a
//! handful of `hang` calls with a timeout each, started together, all end after about
//! one timeout, where calls made one at a time would take the sum of them.

// `Error` is large on purpose (see mcp-io); the threads return it as it is.
#![allow(clippy::result_large_err)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use mcp_blocking::mcp_proto::client::{AcceptDefaults, CallRequest, ClientConfig};
use mcp_blocking::mcp_proto::model::ClientCapabilities;
use mcp_blocking::mcp_proto::server::example;
use mcp_blocking::{Client, ClientHandle, EraMode, Error, HttpOptions, Options, StdioCommand};
use serde_json::json;

const THREADS: usize = 8;
const CALLS: usize = 40;

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("mcp-blocking-concurrent", "0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation())
}

fn options() -> Options {
    Options::new().input_handler(AcceptDefaults)
}

fn stdio(mode: EraMode) -> Client {
    let server = StdioCommand::new(common::example("example-server")).args(["--era", "both"]);
    Client::connect_stdio_with(server, config(mode), options()).expect("connect")
}

fn http(url: &str, mode: EraMode) -> Client {
    Client::connect_http_with(url, config(mode), options(), HttpOptions::new()).expect("connect")
}

/// `THREADS` threads × `CALLS` calls of `add` (each thread its own numbers) and, on
/// every fourth call, `confirm` (answered by the input handler): every answer is the
/// right one.
fn many_threads_get_their_own_answers(handle: &ClientHandle) {
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (handle, start) = (handle.clone(), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                for i in 0..CALLS {
                    let (a, b) = (t * 1000, i);
                    let sum = handle.call_tool("add", json!({"a": a, "b": b}));
                    assert_eq!(sum.expect("add").text(), (a + b).to_string());
                    if i % 4 == 0 {
                        let confirmed = handle.call_tool("confirm", json!({})).expect("confirm");
                        assert_eq!(confirmed.text(), "accepted: proceed=true name=friend");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a calling thread failed");
    }
}

/// `n` `hang` calls with a `timeout` each, from `n` threads at once: all time out,
/// together. Returns how long they took.
fn hang_together(handle: &ClientHandle, n: usize, timeout: Duration) -> Duration {
    let start = Arc::new(Barrier::new(n + 1));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (handle, start) = (handle.clone(), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                let hang = CallRequest::call_tool("hang", json!({})).timeout(timeout);
                handle.request(hang).expect_err("hang never answers")
            })
        })
        .collect();
    start.wait();
    let started = Instant::now();
    for t in threads {
        let err = t.join().expect("a hanging thread failed");
        assert_eq!(err.kind(), "timeout", "{err}");
    }
    started.elapsed()
}

#[test]
fn eight_threads_share_one_stdio_connection_in_both_eras() {
    for mode in [EraMode::Modern, EraMode::Legacy] {
        let client = stdio(mode);
        many_threads_get_their_own_answers(&client.handle());
        let shutdown = client.close();
        assert!(!shutdown.killed, "{mode:?}: the server exits on stdin EOF");
    }
}

#[test]
fn stdio_calls_are_in_flight_together() {
    let client = stdio(EraMode::Auto);
    let timeout = Duration::from_millis(600);
    let took = hang_together(&client.handle(), THREADS, timeout);
    // One at a time, eight of them would take 4.8 s.
    assert!(took < timeout * 3, "8 hangs of {timeout:?} took {took:?}");
    // The connection is fine afterwards, for the client itself too.
    let mut client = client;
    assert_eq!(
        client
            .call_tool("echo", json!({"text": "ok"}))
            .unwrap()
            .text(),
        "ok"
    );
}

#[test]
fn a_timeout_fires_while_the_other_calls_go_on() {
    let client = stdio(EraMode::Auto);
    let handle = client.handle();
    let done_after_timeout = Arc::new(AtomicUsize::new(0));
    let timed_out_at = Arc::new(std::sync::OnceLock::<Instant>::new());
    let stop = Instant::now() + Duration::from_millis(900);
    let workers: Vec<_> = (0..THREADS - 1)
        .map(|t| {
            let handle = handle.clone();
            let (after, at) = (Arc::clone(&done_after_timeout), Arc::clone(&timed_out_at));
            thread::spawn(move || {
                let mut n = 0;
                while Instant::now() < stop {
                    let text = format!("{t}-{n}");
                    let echo = handle
                        .call_tool("echo", json!({"text": text}))
                        .expect("echo");
                    assert_eq!(echo.text(), text);
                    if at.get().is_some() {
                        after.fetch_add(1, Ordering::Relaxed);
                    }
                    n += 1;
                }
            })
        })
        .collect();
    let hang = CallRequest::call_tool("hang", json!({})).timeout(Duration::from_millis(200));
    let started = Instant::now();
    let err = handle.request(hang).expect_err("hang never answers");
    let _ = timed_out_at.set(Instant::now());
    assert_eq!(err.kind(), "timeout", "{err}");
    // Its own deadline, not the others' progress, ended it.
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert!(took < Duration::from_millis(700), "{took:?}");
    for w in workers {
        w.join().expect("an echoing thread failed");
    }
    assert!(
        done_after_timeout.load(Ordering::Relaxed) > 0,
        "calls completed after the timeout fired"
    );
}

#[test]
fn closing_ends_the_calls_other_threads_wait_for() {
    let server = mcp_blocking::serve_http_on("127.0.0.1:0", example::server()).expect("serve");
    let clients = [
        ("stdio", stdio(EraMode::Auto)),
        ("http", http(&server.url(), EraMode::Auto)),
    ];
    for (name, client) in clients {
        let handle = client.handle();
        let waiting: Vec<_> = (0..4)
            .map(|_| {
                let handle = handle.clone();
                thread::spawn(move || handle.call_tool("hang", json!({})))
            })
            .collect();
        thread::sleep(Duration::from_millis(200));
        let closing = Instant::now();
        let _ = client.close();
        for w in waiting {
            let err = w.join().expect("a waiting thread failed").unwrap_err();
            assert!(matches!(err, Error::Closed(_)), "{name}: {err:?}");
        }
        assert!(closing.elapsed() < Duration::from_secs(5), "{name}");
        assert!(handle.is_closed(), "{name}");
        let later = handle.call_tool("echo", json!({"text": "x"})).unwrap_err();
        assert_eq!(later.kind(), "closed", "{name}: {later}");
    }
}

#[test]
fn a_handles_canceller_ends_its_calls_only() {
    let client = stdio(EraMode::Auto);
    let (hanging, echoing) = (client.handle(), client.handle());
    let canceller = hanging.canceller();
    let waiting: Vec<_> = (0..3)
        .map(|_| {
            let handle = hanging.clone();
            thread::spawn(move || handle.call_tool("hang", json!({})))
        })
        .collect();
    let echoes = thread::spawn(move || {
        for i in 0..200 {
            let text = i.to_string();
            assert_eq!(
                echoing
                    .call_tool("echo", json!({"text": text}))
                    .unwrap()
                    .text(),
                text
            );
        }
    });
    thread::sleep(Duration::from_millis(200));
    canceller.cancel();
    for w in waiting {
        let err = w.join().expect("a waiting thread failed").unwrap_err();
        assert_eq!(err.kind(), "cancelled", "{err}");
    }
    echoes.join().expect("the other handle's calls go on");
    // Void once nobody waits: a later call is not cancelled.
    canceller.cancel();
    assert_eq!(
        hanging
            .call_tool("echo", json!({"text": "y"}))
            .unwrap()
            .text(),
        "y"
    );
}

#[test]
fn eight_threads_over_http_use_several_connections() {
    let server = mcp_blocking::serve_http_on("127.0.0.1:0", example::server()).expect("serve");
    for mode in [EraMode::Modern, EraMode::Legacy] {
        let client = http(&server.url(), mode);
        let handle = client.handle();
        many_threads_get_their_own_answers(&handle);
        let timeout = Duration::from_millis(600);
        let took = hang_together(&handle, THREADS, timeout);
        assert!(
            took < timeout * 3,
            "{mode:?}: 8 hangs of {timeout:?} took {took:?}"
        );
        let opened = client.http_connections_opened();
        assert!(opened >= THREADS as u64, "{mode:?}: {opened} connections");
        assert_eq!(handle.http_connections_opened(), opened);
        client.close();
    }
}

#[test]
fn progress_reaches_the_handler_for_every_concurrent_call() {
    use mcp_blocking::mcp_proto::server::{Tool, ToolCall, ToolNote, ToolOutcome};
    use std::collections::HashMap;
    use std::sync::Mutex;

    let server = example::server_with(|c| {
        c.tools.push(Tool::new(
            "steps",
            "Two progress notes, then done",
            json!({"type": "object"}),
            |_: &ToolCall<'_>| ToolOutcome::DoneWithNotes {
                notes: vec![
                    ToolNote::progress(1.0, Some(2.0)),
                    ToolNote::progress(2.0, Some(2.0)),
                ],
                result: json!({"content": [{"type": "text", "text": "done"}]}),
            },
        ));
    });
    let server = mcp_blocking::serve_http_on("127.0.0.1:0", server).expect("serve");
    let seen = Arc::new(Mutex::new(HashMap::new()));
    let counted = Arc::clone(&seen);
    let options = Options::new().on_progress(move |p| {
        *counted.lock().unwrap().entry(p.call).or_insert(0) += 1;
    });
    let client = Client::connect_http_with(
        &server.url(),
        config(EraMode::Auto),
        options,
        HttpOptions::new(),
    )
    .expect("connect");
    let handle = client.handle();
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let handle = handle.clone();
            thread::spawn(move || {
                for _ in 0..10 {
                    let steps = CallRequest::call_tool("steps", json!({})).with_progress();
                    assert_eq!(
                        handle.request(steps).unwrap().tool_result().unwrap().text(),
                        "done"
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a calling thread failed");
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), THREADS * 10, "every call had its progress");
    assert!(seen.values().all(|&n| n == 2), "{seen:?}");
    client.close();
}
