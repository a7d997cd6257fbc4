//! The blocking client on Linux: the thread that waits for the server moves the bytes of a
//! stdio server's pipes and of plain HTTP connections itself (poll on non-blocking
//! descriptors), with no reader or writer thread and no hand-off in between; messages
//! larger than a pipe or a socket buffer go out in parts, from several threads at once,
//! and come back whole. Against `mcp serve-example` over stdio, and an echo server on
//! `mcp_blocking::serve_http` in this process.
#![cfg(target_os = "linux")]

use std::net::TcpListener;
use std::thread;

use mcp_blocking::{Client, ClientConfig, ClientHandle, StdioCommand};
use mcp_proto::model::Implementation;
use mcp_proto::server::{Server, ServerConfig, Tool, ToolCall, ToolOutcome};
use serde_json::json;

fn example_server() -> StdioCommand {
    StdioCommand::new(mcp_tests::example_bin("mcp-blocking", "mcp")).arg("serve-example")
}

/// The names of this process's threads.
fn thread_names() -> Vec<String> {
    let mut names = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let comm = task.expect("task").path().join("comm");
        if let Ok(name) = std::fs::read_to_string(comm) {
            names.push(name.trim().to_owned());
        }
    }
    names
}

/// `threads` threads echo at once, thread `i` a text of `len(i)` times the letter
/// `first + i`, and each must get its own text back whole.
fn echo_from_threads(handle: &ClientHandle, first: u8, threads: u8, len: impl Fn(u8) -> usize) {
    let workers: Vec<_> = (0..threads)
        .map(|i| {
            let handle = handle.clone();
            let text: String = std::iter::repeat_n(char::from(first + i), len(i)).collect();
            thread::spawn(move || {
                let echoed = handle
                    .call_tool("echo", json!({ "text": text }))
                    .expect("echo");
                assert_eq!(echoed.text(), text, "worker {i}");
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
}

#[test]
fn a_stdio_server_s_pipes_move_their_bytes_without_reader_or_writer_threads() {
    let mut client =
        Client::connect_stdio(example_server(), ClientConfig::new("pipes", "1")).expect("connect");
    let echoed = client
        .call_tool("echo", json!({"text": "through the pipes"}))
        .expect("echo");
    assert_eq!(echoed.text(), "through the pipes");
    let names = thread_names();
    // The stderr collector is the one thread a child gets (off the hot path): seeing it
    // shows that the names are the ones the client gives.
    assert!(names.iter().any(|n| n == "mcp-stdio-stder"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("mcp-stdio-read") || n.starts_with("mcp-stdio-writ")),
        "{names:?}"
    );
    client.close();
}

#[test]
fn messages_larger_than_the_pipe_go_out_in_parts_and_come_back_whole() {
    let client =
        Client::connect_stdio(example_server(), ClientConfig::new("pipes", "1")).expect("connect");
    // Far more than a pipe holds (64 KiB on Linux): most of each message waits in the
    // outbox until the server makes room, while other threads queue theirs behind it.
    let handle = client.handle();
    echo_from_threads(&handle, b'a', 4, |i| 300_000 + usize::from(i));
    let text = "z".repeat(1 << 20);
    let echoed = handle
        .call_tool("echo", json!({ "text": text }))
        .expect("echo 1 MiB");
    assert_eq!(echoed.text().len(), text.len());
    assert_eq!(echoed.text(), text);
}

/// An HTTP server in this process with one tool, `echo`, answering its `text`.
fn echo_over_http() -> (mcp_blocking::HttpServerHandle, String) {
    let echo = Tool::new(
        "echo",
        "",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        |call: &ToolCall<'_>| {
            let text = call.arguments.get("text").and_then(|t| t.as_str());
            ToolOutcome::text(text.unwrap_or_default())
        },
    );
    let server = Server::new(ServerConfig::new(Implementation::new("echo", "1")).with_tool(echo));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let handle = mcp_blocking::serve_http(listener, server).expect("serve");
    (handle, url)
}

#[test]
fn plain_http_connections_move_their_bytes_without_reader_or_writer_threads() {
    let (server, url) = echo_over_http();
    let client = Client::connect_http(&url, ClientConfig::new("polled", "1")).expect("connect");
    let handle = client.handle();
    // Several connections at once, each with messages larger than a socket buffer.
    echo_from_threads(&handle, b'k', 3, |_| 2_000_000);
    let names = thread_names();
    // The server's threads in this process show that the names are visible.
    assert!(names.iter().any(|n| n == "mcp-http-timer"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("mcp-http-read")),
        "{names:?}"
    );
    drop(handle);
    drop(client);
    server.stop();
}
