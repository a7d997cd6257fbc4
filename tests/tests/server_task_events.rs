//! Task events over real sockets (`mcp_blocking::serve_http` on 127.0.0.1), driven by a
//! raw HTTP/1.1 client: a 2025-11-25 `tasks/result` on a running task is an SSE response
//! that waits for the task's delayed outcome (handed to the endpoint by the server's
//! timer, nobody polling), and the session's `GET` stream carries
//! `notifications/tasks/status` when the task completes.

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use mcp_proto::model::Implementation;
use mcp_proto::server::{Server, ServerConfig, Tool, ToolCall, ToolOutcome};
use mcp_tests::raw_http::{messages, open_get_stream, post, read_until, send, session_id};
use serde_json::{Value, json};

const V: &str = "2025-11-25";
const DELAY: Duration = Duration::from_millis(300);

fn server() -> Server {
    Server::new(
        ServerConfig::new(Implementation::new("events", "1")).with_tool(
            Tool::new("slow", "", json!({"type": "object"}), |_: &ToolCall<'_>| {
                ToolOutcome::after(DELAY, ToolOutcome::text("slow done"))
            })
            // Polls a tasks/result stands for: it must not need anyone to poll.
            .as_task(3),
        ),
    )
}

#[test]
fn a_tasks_result_waits_for_the_delayed_outcome_and_the_get_stream_hears_the_status() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let handle = mcp_blocking::serve_http(listener, server()).unwrap();
    let addr = handle.local_addr();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let session = session_id(&post(addr, None, V, &init));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(post(addr, Some(&session), V, &initialized).starts_with("HTTP/1.1 202"));
    let (mut listen, mut listened) = open_get_stream(addr, &session, V);

    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}, "task": {}}});
    let created = messages(&post(addr, Some(&session), V, &call));
    let task = created[0]["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(created[0]["result"]["task"]["status"], "working");

    let started = Instant::now();
    let result = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
        "params": {"taskId": task}});
    let mut waiting = send(
        addr,
        "POST",
        &[("Mcp-Session-Id", &session), ("MCP-Protocol-Version", V)],
        &result.to_string(),
    );
    let mut got = String::new();
    read_until(&mut waiting, &mut got, |t| {
        messages(t).iter().any(|m| m.get("id").is_some())
    });
    let waited = started.elapsed();
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(
        got.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{got}"
    );
    let answer = messages(&got).into_iter().find(|m| m["id"] == 2).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "slow done", "{got}");
    assert!(
        waited >= DELAY - Duration::from_millis(50),
        "answered after {waited:?}"
    );
    assert!(
        messages(&got).iter().all(|m| m.get("method").is_none()),
        "the status is the session's news, not the request's: {got}"
    );

    read_until(&mut listen, &mut listened, |t| !messages(t).is_empty());
    let status = &messages(&listened)[0];
    assert_eq!(status["method"], "notifications/tasks/status");
    assert_eq!(status["params"]["taskId"], task.as_str());
    assert_eq!(status["params"]["status"], "completed");
    handle.stop();
}

/// Lines, then a pause, then the end of input; records the thread of every read.
struct SlowInput {
    lines: Option<Vec<u8>>,
    pause: Duration,
    readers: std::sync::Arc<std::sync::Mutex<Vec<std::thread::ThreadId>>>,
}

impl Read for SlowInput {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.readers
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        if let Some(lines) = self.lines.take() {
            buf[..lines.len()].copy_from_slice(&lines);
            return Ok(lines.len());
        }
        std::thread::sleep(self.pause);
        Ok(0)
    }
}

#[test]
fn over_stdio_the_server_answers_a_held_tasks_result_on_its_own_timer() {
    let mut input = Vec::new();
    for m in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "slow", "arguments": {}, "task": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
            "params": {"taskId": "task-1"}}),
    ] {
        input.extend_from_slice(m.to_string().as_bytes());
        input.push(b'\n');
    }
    let mut server = server();
    let mut output = Vec::new();
    let readers = std::sync::Arc::default();
    let slow = SlowInput {
        lines: Some(input),
        pause: DELAY * 3,
        readers: std::sync::Arc::clone(&readers),
    };
    mcp_blocking::serve(&mut server, slow, &mut output).unwrap();
    // With no deadline, the caller read the lines itself (no hand-off between threads);
    // with the task's outcome due, the next read went to a helper so the timer could fire.
    let readers = readers.lock().unwrap().clone();
    assert_eq!(readers.len(), 2, "{readers:?}");
    assert_eq!(readers[0], std::thread::current().id());
    assert_ne!(readers[1], std::thread::current().id());
    let out: Vec<Value> = output
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    // The end of input drops a held request: the answer came from the timer, before.
    let answer = out
        .iter()
        .find(|m| m["id"] == 2)
        .expect("tasks/result answered");
    assert_eq!(answer["result"]["content"][0]["text"], "slow done");
    let status = out
        .iter()
        .find(|m| m["method"] == "notifications/tasks/status")
        .expect("a status notification");
    assert_eq!(status["params"]["status"], "completed");
}
