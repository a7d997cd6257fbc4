//! Idle HTTP servers sleep. With an idle keep-alive connection, an open `GET` stream with
//! nothing to send, a blocked accept and no deadline, no thread of `mcp_blocking::serve_http` or `mcp_smol::serve_http` wakes up
//! (each wake-up from sleep is a voluntary context switch, counted per thread in Linux's
//! `/proc`; the former polling loops woke about 100 times a second). The timer that
//! sleeps with no deadline is woken by the request that makes one (a task's outcome
//! falling due answers a held `tasks/result`), and `stop` returns at once (as does a
//! blocking server whose handed-out stop flag is set).
#![cfg(target_os = "linux")]

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use async_io::Async;
use mcp_proto::model::Implementation;
use mcp_proto::server::{Server, ServerConfig, Tool, ToolCall, ToolOutcome};
use mcp_smol::HttpServeOptions;
use mcp_tests::raw_http::{messages, open_get_stream, post, read_until, send, session_id};
use serde_json::json;

/// The measurements count wake-ups of whole groups of threads: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());
/// How long an idle server is watched.
const QUIET: Duration = Duration::from_secs(1);
/// The most wake-ups allowed in [`QUIET`]: none are expected (an open stream that
/// looked at its socket every 250 ms would take four).
const MOST: u64 = 2;
const DELAY: Duration = Duration::from_millis(300);
const V: &str = "2025-11-25";

fn server() -> Server {
    Server::new(
        ServerConfig::new(Implementation::new("idle", "1")).with_tool(
            Tool::new("slow", "", json!({"type": "object"}), |_: &ToolCall<'_>| {
                ToolOutcome::after(DELAY, ToolOutcome::text("slow done"))
            })
            // Due by time alone: only the server's timer can end it.
            .as_task(0),
        ),
    )
}

/// Voluntary context switches of this process's threads whose name starts with one of
/// `names`, by thread id.
fn switches(names: &[&str]) -> HashMap<String, u64> {
    let mut found = HashMap::new();
    for entry in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = entry.unwrap().path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        if !names.iter().any(|n| comm.trim().starts_with(n)) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(dir.join("status")) else {
            continue;
        };
        let count = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap();
        let tid = dir.file_name().unwrap().to_string_lossy().into_owned();
        found.insert(tid, count);
    }
    found
}

/// Wake-ups of the `names` threads during [`QUIET`], and how many threads were watched.
fn wakeups_while_idle(names: &[&str]) -> (u64, usize) {
    let before = switches(names);
    thread::sleep(QUIET);
    let after = switches(names);
    let woke = before
        .iter()
        .filter_map(|(tid, n)| after.get(tid).map(|m| m - n))
        .sum();
    (woke, before.len())
}

/// Whether `text` holds a whole response with a `Content-Length` body.
fn whole(text: &str) -> bool {
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    body.len() >= length
}

/// The scenario, for either adapter serving [`server`] at `addr` on threads named
/// `names`; `stop` stops it and returns once it has.
fn idle_then_a_task_then_stop(addr: SocketAddr, names: &[&str], stop: impl FnOnce()) {
    // A session, initialized on a connection that then stays open and idle.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let mut idle = send(addr, "POST", &[], &init.to_string());
    let mut text = String::new();
    read_until(&mut idle, &mut text, whole);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let session = session_id(&text);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(post(addr, Some(&session), V, &initialized).starts_with("HTTP/1.1 202"));
    // The session's standalone stream, open with nothing to send.
    let (mut listen, mut listened) = open_get_stream(addr, &session, V);
    // Let the connection that closed finish, and the stream settle.
    thread::sleep(Duration::from_millis(200));

    let (woke, watched) = wakeups_while_idle(names);
    assert!(
        watched >= 2,
        "the server's threads were not found: {watched}"
    );
    assert!(
        woke <= MOST,
        "an idle server woke {woke} times in {QUIET:?} ({watched} threads)"
    );

    // No deadline so far: the timer sleeps until the call that makes one wakes it.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}, "task": {}}});
    let created = messages(&post(addr, Some(&session), V, &call));
    let task = created[0]["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created:?}"))
        .to_owned();
    let started = Instant::now();
    let result = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
        "params": {"taskId": task}});
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", V),
    ];
    let mut waiting = send(addr, "POST", &headers, &result.to_string());
    let mut got = String::new();
    read_until(&mut waiting, &mut got, |t| {
        messages(t).iter().any(|m| m["id"] == 2)
    });
    let waited = started.elapsed();
    let answer = messages(&got).into_iter().find(|m| m["id"] == 2).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "slow done", "{got}");
    assert!(waited >= DELAY - Duration::from_millis(50), "{waited:?}");
    drop(waiting);
    // The session's stream hears of it, at once too.
    read_until(&mut listen, &mut listened, |t| {
        t.contains("notifications/tasks/status")
    });

    // Stop, with the idle keep-alive connection still open and the accept blocked.
    let started = Instant::now();
    stop();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "stop took {took:?}");
    let mut rest = String::new();
    read_until(&mut idle, &mut rest, |_| false);
    assert!(rest.is_empty(), "{rest}");
}

#[test]
fn an_idle_blocking_server_sleeps_until_a_deadline_or_stop() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let handle = mcp_blocking::serve_http_on("127.0.0.1:0", server()).unwrap();
    let addr = handle.local_addr();
    idle_then_a_task_then_stop(addr, &["mcp-http-"], || handle.stop());
}

#[test]
fn an_idle_smol_server_sleeps_until_a_deadline_or_stop() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = Async::new(listener).unwrap();
    let (stop, stopped) = async_channel::bounded::<()>(1);
    let served = thread::Builder::new()
        .name("idle-smol-serve".to_owned())
        .spawn(move || {
            let stop = async move {
                let _ = stopped.recv().await;
            };
            let options = HttpServeOptions::default();
            let served = mcp_smol::serve_http(listener, server(), options, |_| {}, stop);
            futures_lite::future::block_on(served)
        })
        .unwrap();
    // Its own thread, and async-io's reactor thread, which runs its timers.
    idle_then_a_task_then_stop(addr, &["idle-smol-serve", "async-io"], || {
        drop(stop);
        served.join().unwrap().unwrap();
    });
}

#[test]
fn setting_the_stop_flag_stops_the_blocking_server() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let handle = mcp_blocking::serve_http_on("127.0.0.1:0", server()).unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let mut idle = send(handle.local_addr(), "POST", &[], &init.to_string());
    let mut text = String::new();
    read_until(&mut idle, &mut text, whole);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    // A bare flag notifies no one: the server looks at it (every 250 ms) once handed out.
    let flag = handle.stop_flag();
    flag.store(true, std::sync::atomic::Ordering::SeqCst);
    let started = Instant::now();
    handle.wait();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "stopping took {took:?}");
    let mut rest = String::new();
    read_until(&mut idle, &mut rest, |_| false);
    assert!(rest.is_empty(), "{rest}");
}
