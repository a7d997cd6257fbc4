//! What a client can make the server keep, measured in memory, not in the JSON text it
//! sent: a parsed value costs many times its text, so a bound counted in text lets a
//! client hold ten times and more of it.

use mcp_proto::Instant;
use mcp_proto::model::Implementation;
use mcp_proto::server::{Server, ServerConfig, Tool, ToolCall, ToolOutcome};
use mcp_tests::heap::{CountingAlloc, live_after, peak_during};
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

/// What the server counts a value as holding is never below what it holds: checked
/// against the allocator for the shapes a client can pick, each many times over (a
/// one-member object takes a B-tree node of about 630 bytes; counted at 128, such
/// values held five times their share).
#[test]
fn the_held_estimate_is_never_below_the_heap() {
    let nest = |open: &str, inner: &str, close: &str, depth: usize| {
        format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
    };
    let many = |item: &str, n: usize| format!("[{}]", vec![item; n].join(","));
    let members = |n: usize, key_len: usize| {
        let items: Vec<String> = (0..n).map(|i| format!("\"{i:0key_len$}\":0")).collect();
        format!("{{{}}}", items.join(","))
    };
    let shapes = [
        ("zeros", many("0", 20_000)),
        ("one-member objects", many(r#"{"a":0}"#, 2_000)),
        (
            "six-member objects",
            many(r#"{"a":0,"b":0,"c":0,"d":0,"e":0,"f":0}"#, 500),
        ),
        ("twelve-member objects", many(&members(12, 2), 500)),
        ("empty objects", many("{}", 5_000)),
        ("empty arrays", many("[]", 5_000)),
        ("one-element arrays", many("[0]", 5_000)),
        ("short strings", many(r#""x""#, 5_000)),
        ("floats", many("1.5e300", 5_000)),
        ("a large map", members(20_000, 6)),
        ("long keys", members(200, 4_000)),
        ("nested one-member objects", nest(r#"{"a":"#, "0", "}", 100)),
        ("nested arrays", nest("[", "0", "]", 100)),
        ("objects of arrays", many(r#"{"a":[[],[0],{}]}"#, 1_000)),
    ];
    for (name, text) in shapes {
        let (value, live) = live_after(|| serde_json::from_str::<Value>(&text).unwrap());
        let estimate = mcp_proto::fuzzing::server::held_bytes(&value);
        let live = usize::try_from(live).unwrap_or(0);
        assert!(
            estimate >= live,
            "{name}: estimated {estimate} bytes, holds {live}"
        );
    }
}
