//! `jsonrpc_decode`: throughput of `mcp_proto::jsonrpc::Message::decode` on typical
//! responses, as the example server machine writes them:
//!
//! * `echo 64B` — a small `tools/call` result (legacy 2025-11-25 and modern 2026-07-28
//!   shapes; the modern one carries `resultType` and the serverInfo `_meta`);
//! * `echo 64KiB` — a `tools/call` result with a 64 KiB text;
//! * `tools/list 50` — a `tools/list` result with 50 tools (the example's 5 plus 45 with
//!   three-property schemas), modern shape.
//!
//! Each fixture is also decoded with `Message::decode_with_max_depth` (what the machines
//! do with what they receive: one more pass over the bytes for the nesting depth), and
//! parsed two other ways in the same run, as reference points:
//! `serde_json::from_slice::<&RawValue>` (validation only, no allocation: the floor) and
//! `serde_json::from_slice::<Value>` (a full untyped parse).
//!
//! Last, the estimate of the memory a body takes once parsed (scanned from its text
//! before a server parses it, `max_parsed_bytes`) beside that parse, on 1 MiB of text, of
//! zeros and of one-member objects.
//!
//! ```text
//! cargo bench -p mcp-benches --bench jsonrpc_decode [-- FILTER…]
//! MCP_BENCH_ITERS=10000 MCP_BENCH_QUIET=1 valgrind --tool=callgrind "$BIN" decode 64KiB
//! ```

use mcp_proto::Instant;
use std::hint::black_box;

use mcp_benches::{Settings, payload};
use mcp_proto::jsonrpc::{Message, Response};
use mcp_proto::server::{Server, Tool, ToolOutcome, example};
use serde_json::value::RawValue;
use serde_json::{Value, json};

const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-benches","version":"0.1.0"}}"#;

/// Feeds `lines` to `server` and returns the last line it wrote (without the newline).
fn last_reply(server: &mut Server, lines: &[String]) -> Vec<u8> {
    let now = Instant::ZERO;
    let mut input = Vec::new();
    for line in lines {
        input.extend_from_slice(line.as_bytes());
        input.push(b'\n');
    }
    server.handle_input(now, &input);
    let mut out = Vec::new();
    while server.poll_transmit(now, &mut out).is_some() {}
    let text = out.strip_suffix(b"\n").expect("the server answered");
    let start = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    text[start..].to_vec()
}

fn echo_request(id: u32, text: &str, modern: bool) -> String {
    let meta = if modern { MODERN_META } else { "" };
    let sep = if modern { "," } else { "" };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{{meta}{sep}"name":"echo","arguments":{}}}}}"#,
        json!({ "text": text })
    )
}

fn legacy_echo(text: &str) -> Vec<u8> {
    let mut server = example::server();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-benches","version":"0.1.0"}}}"#;
    let lines = [
        init.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        echo_request(1, text, false),
    ];
    last_reply(&mut server, &lines)
}

fn modern_echo(text: &str) -> Vec<u8> {
    last_reply(&mut example::server(), &[echo_request(1, text, true)])
}

fn tools_list_50() -> Vec<u8> {
    let mut server = example::server_with(|config| {
        for i in config.tools.len()..50 {
            let schema = json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path of the file to work on, relative to the workspace root"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "At most this many results"},
                    "mode": {"type": "string", "enum": ["fast", "thorough", "dry-run"], "default": "fast"}
                },
                "required": ["path"]
            });
            config.tools.push(Tool::new(
                format!("workspace_tool_{i:02}"),
                format!("Tool number {i}: searches, reads or rewrites files in the workspace and reports what it did."),
                schema,
                |_| ToolOutcome::text("ok"),
            ));
        }
    });
    let request =
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{{{MODERN_META}}}}}"#);
    let reply = last_reply(&mut server, &[request]);
    let value: Value = serde_json::from_slice(&reply).expect("JSON");
    let tools = value["result"]["tools"].as_array().map_or(0, Vec::len);
    assert_eq!(tools, 50, "one page of 50 tools");
    reply
}

/// One way of parsing a fixture.
type Decoder = fn(&[u8]);

fn check(bytes: &[u8]) {
    match Message::decode(bytes) {
        Ok(Message::Response(Response { outcome: Ok(_), .. })) => {}
        other => panic!("fixture is not a result: {other:?}"),
    }
}

fn main() {
    let settings = Settings::from_env();
    settings.title(
        "jsonrpc_decode",
        "Message::decode (unbounded and depth-checked) of server responses, with serde_json references",
    );
    let small = payload(64);
    let big = payload(64 * 1024);
    // (name, bytes, default iterations, batch)
    let fixtures = [
        ("echo 64B legacy", legacy_echo(&small), 400_000, 64),
        ("echo 64B modern", modern_echo(&small), 400_000, 64),
        ("echo 64KiB legacy", legacy_echo(&big), 10_000, 1),
        ("echo 64KiB modern", modern_echo(&big), 10_000, 1),
        ("tools/list 50 modern", tools_list_50(), 10_000, 1),
    ];
    for (name, bytes, default_n, batch) in &fixtures {
        check(bytes);
        let n = settings.iters(*default_n);
        let size = bytes.len();
        let decoders: [(&str, Decoder); 4] = [
            ("decode", |b| {
                black_box(Message::decode(b).ok());
            }),
            ("decode_with_max_depth", |b| {
                black_box(Message::decode_with_max_depth(b, 64).ok());
            }),
            ("serde_json RawValue (floor)", |b| {
                black_box(serde_json::from_slice::<&RawValue>(b).ok());
            }),
            ("serde_json Value", |b| {
                black_box(serde_json::from_slice::<Value>(b).ok());
            }),
        ];
        for (how, decode) in decoders {
            let case = format!("{how} {name} ({size} B)");
            if !settings.selected(&case) {
                continue;
            }
            settings.measure(&case, "msgs", n, *batch, Some(size), || {
                decode(black_box(bytes));
            });
        }
    }
    // The estimate of what a message takes once parsed, scanned from its text before
    // a server (or a client, for what it reads) parses it: its cost beside the parse it
    // guards, on 1 MiB bodies of three shapes.
    let mib = 1024 * 1024;
    let bodies = [
        (
            "1MiB text",
            serde_json::to_vec(&json!({"text": payload(mib)})).expect("JSON"),
        ),
        (
            "1MiB zeros",
            serde_json::to_vec(&vec![0u8; mib / 2]).expect("JSON"),
        ),
        (
            "1MiB one-member objects",
            serde_json::to_vec(&vec![json!({"a": 0}); mib / 8]).expect("JSON"),
        ),
    ];
    for (name, bytes) in &bodies {
        let size = bytes.len();
        let scans: [(&str, Decoder); 2] = [
            ("parse estimate", |b| {
                black_box(mcp_proto::fuzzing::server::parsed_bytes(b));
            }),
            ("serde_json Value", |b| {
                black_box(serde_json::from_slice::<Value>(b).ok());
            }),
        ];
        for (how, scan) in scans {
            let case = format!("{how} {name} ({size} B)");
            if !settings.selected(&case) {
                continue;
            }
            settings.measure(&case, "msgs", settings.iters(200), 1, Some(size), || {
                scan(black_box(bytes));
            });
        }
    }
    settings.note("MB/s counts the whole message (10^6 bytes); p50/p99 are per message");
}
