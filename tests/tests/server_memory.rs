//! What a client can make the server keep, measured in memory, not in the JSON text it
//! sent: a parsed value costs many times its text, so a bound counted in text lets a
//! client hold ten times and more of it.

use mcp_proto::Instant;
use mcp_proto::model::Implementation;
use mcp_proto::server::{Server, ServerConfig, Tool, ToolCall, ToolOutcome};
use mcp_tests::heap::{CountingAlloc, peak_during};
use serde_json::{Value, json};

#[global_allocator]
static HEAP: CountingAlloc = CountingAlloc;

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A 2026 `tools/call` of `keep` declaring the tasks extension, its arguments padded
/// with `pad`.
fn padded_call(id: usize, pad: &Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "keep", "arguments": {"pad": pad},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
        }}}),
    )
    .unwrap()
}

/// Tasks keep what their clients sent; `max_task_bytes` bounds it in memory. Counted as
/// JSON text, tasks padded with zeros held 16 times the bound (eight tasks of 600,000
/// tiny members took the example server to 698 MB for a 64 MiB bound).
#[test]
fn the_task_byte_bound_counts_memory_not_text() {
    // Two bytes of text each, 32 bytes and more each once parsed.
    assert_task_bytes_bounded(&json!(vec![0u8; 20_000]));
}

/// An object of one member takes a whole B-tree node (about 630 bytes) for 7 bytes of
/// text: counted at 128 bytes a member, 22 such tasks under a 64 MiB bound raised the
/// example server's resident memory by 288 MB.
#[test]
fn the_task_byte_bound_counts_a_maps_node_whole() {
    assert_task_bytes_bounded(&json!(vec![json!({"a": 0}); 2_000]));
}

/// Starts tasks padded with `pad` under a 4 MiB `max_task_bytes` until one is refused,
/// and checks what they held at the peak.
fn assert_task_bytes_bounded(pad: &Value) {
    const BOUND: usize = 4 * 1024 * 1024;
    let keep = |_: &ToolCall<'_>| ToolOutcome::NoAnswer;
    let mut config = ServerConfig::new(Implementation::new("t", "0"))
        .with_tool(Tool::new("keep", "", json!({"type": "object"}), keep).as_task(0));
    config.limits.max_task_bytes = BOUND;
    let requests: Vec<Vec<u8>> = (0..200).map(|i| padded_call(i, pad)).collect();
    let ((started, refusal, server), peak) = peak_during(move || {
        let mut server = Server::new(config);
        let mut started = 0;
        for request in &requests {
            server.handle_json(Instant::ZERO, request);
            let reply: Value = serde_json::from_slice(&server.poll_message().unwrap()).unwrap();
            if reply["result"]["resultType"] != "task" {
                return (started, reply, server);
            }
            started += 1;
        }
        (started, Value::Null, server)
    });
    drop(server);
    // The requests themselves were allocated before.
    assert!(
        peak < BOUND + BOUND / 2,
        "{started} tasks held {peak} bytes for a bound of {BOUND}"
    );
    assert!(started >= 1, "no task started: {refusal}");
    let message = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Too much task data held"), "{refusal}");
}
