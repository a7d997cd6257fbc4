//! The blocking client over stdio on Linux: the thread that waits for the server moves the
//! bytes of its stdin and stdout itself (poll on non-blocking pipes), with no helper
//! thread and no hand-off in between; messages larger than the pipe go out in parts,
//! from several threads at once, and come back whole. Against `mcp serve-example`.
#![cfg(target_os = "linux")]

use std::thread;

use mcp_blocking::{Client, ClientConfig, StdioCommand};
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

#[test]
fn a_stdio_connection_moves_its_bytes_without_reader_or_writer_threads() {
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
    let workers: Vec<_> = (0..4u8)
        .map(|i| {
            let handle = handle.clone();
            thread::spawn(move || {
                let text: String =
                    std::iter::repeat_n(char::from(b'a' + i), 300_000 + usize::from(i)).collect();
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
    let text = "z".repeat(1 << 20);
    let echoed = handle
        .call_tool("echo", json!({ "text": text }))
        .expect("echo 1 MiB");
    assert_eq!(echoed.text().len(), text.len());
    assert_eq!(echoed.text(), text);
}
