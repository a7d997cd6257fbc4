//! What a client can make the server keep, measured in memory, not in the JSON text it
//! sent: a parsed value costs many times its text, so a bound counted in text lets a
//! client hold ten times and more of it.

use mcp_proto::Instant;
use mcp_proto::jsonrpc::Message;
use mcp_proto::model::Implementation;
use mcp_proto::server::http::HttpRequest;
use mcp_proto::server::http::gateway::{GatewayVerdict, check_request};
use mcp_proto::server::{Server, ServerConfig, Tool, ToolCall, ToolOutcome, example};
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

/// A 2026 `tools/call` of the example server's `echo` with `n` one-member objects
/// beside its text: seven bytes of JSON each, a map node of over 700 bytes once parsed.
fn echo_of_objects(n: usize) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "x", "p": vec![json!({"": 0}); n]},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
    )
    .unwrap()
}

/// A message is refused on what it would take once parsed, estimated from its text
/// before anything of it is parsed: the example server took about 730 MB, per
/// connection, to parse one 8 MiB `tools/call` of one-member objects.
#[test]
fn a_message_too_large_once_parsed_is_refused_before_parsing() {
    const BOUND: usize = 4 * 1024 * 1024;
    let mut server = example::server_with(|c| c.limits.max_parsed_bytes = BOUND);
    // 28 KB of text, long enough to be scanned, about 3.2 MB once parsed: served.
    let within = echo_of_objects(4_000);
    server.handle_json(Instant::ZERO, &within);
    let reply: Value = serde_json::from_slice(&server.poll_message().unwrap()).unwrap();
    assert_eq!(reply["result"]["content"][0]["text"], "x", "{reply}");
    // 700 KB of text, about 80 MB once parsed.
    let past = echo_of_objects(100_000);
    let ((), peak) = peak_during(|| server.handle_json(Instant::ZERO, &past));
    let reply: Value = serde_json::from_slice(&server.poll_message().unwrap()).unwrap();
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("more than {BOUND} bytes"))
            && message.contains("max_parsed_bytes"),
        "{reply}"
    );
    assert!(peak < 64 * 1024, "refusing took {peak} bytes at its peak");
    // Decoded by the caller (params kept as text), the same.
    let decoded = Message::decode(&past).unwrap();
    let ((), peak) = peak_during(|| server.handle_message(Instant::ZERO, decoded));
    let reply: Value = serde_json::from_slice(&server.poll_message().unwrap()).unwrap();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert!(peak < 64 * 1024, "refusing took {peak} bytes at its peak");
}

/// A member named `$serde_json::private::RawValue` (plainly or with escapes, at any
/// depth) makes the parser read its string as JSON: text inside a string, which the
/// checks of size and depth made on the text never saw (a 7.8 MB body took 604 MB, and
/// a 19 KB one nested 1,300 levels deep overflowed a connection thread's stack). Any
/// such name is refused before parsing, however short the message.
#[test]
fn a_member_name_the_parser_reserves_is_refused_before_parsing() {
    let inner = one_member_objects(50_000);
    let mut server = example::server();
    for name in [
        "$serde_json::private::RawValue",
        r"\u0024serde_json::private::RawValue",
        r"$serde_json::private::Raw\u0056alue",
    ] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo",
               "arguments":{{"text":"x","p":{{"{name}":{}}}}},
               "_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
               "io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#,
            serde_json::to_string(&inner).unwrap()
        );
        let ((), peak) = peak_during(|| server.handle_json(Instant::ZERO, body.as_bytes()));
        let reply: Value = serde_json::from_slice(&server.poll_message().unwrap()).unwrap();
        assert_eq!(reply["error"]["code"], -32600, "{name}: {reply}");
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("a name the JSON parser reserves"),
            "{reply}"
        );
        assert!(
            peak < 64 * 1024,
            "{name}: refusing took {peak} bytes at its peak"
        );
    }
    // Short, nested: refused too (no text is too short to be scanned for it).
    let nested = r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"a":{"$serde_json::private::RawValue":"[[1]]"}}}"#;
    server.handle_json(Instant::ZERO, nested.as_bytes());
    let reply: Value = serde_json::from_slice(&server.poll_message().unwrap()).unwrap();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    // A `$` elsewhere (a JSON Schema's `$schema`, a price) is no such name.
    let fine = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo",
        "arguments":{"text":"$5 \u0024serde_json::","$schema":"x"},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    server.handle_json(Instant::ZERO, fine.as_bytes());
    let reply: Value = serde_json::from_slice(&server.poll_message().unwrap()).unwrap();
    assert_eq!(
        reply["result"]["content"][0]["text"], "$5 $serde_json::",
        "{reply}"
    );
}

/// `[{"":0},…]`, `n` one-member objects.
fn one_member_objects(n: usize) -> String {
    format!("[{}]", vec![r#"{"":0}"#; n].join(","))
}

/// A gateway checks the mirrored headers on what it reads of the body, borrowed: parsing
/// the body whole took a hundred times its text for a routing decision. A repeated
/// member counts with its last value, as the server reads it.
#[test]
fn the_gateway_routes_without_parsing_the_body() {
    let objects = vec![r#"{"":0}"#; 100_000].join(",");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"decoy",
           "arguments":{{"p":[{objects}]}},"name":"route",
           "_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}}}}"#
    );
    let request = |name: &str| {
        HttpRequest::new("POST", "/mcp")
            .with_header("MCP-Protocol-Version", "2026-07-28")
            .with_header("Mcp-Method", "tools/call")
            .with_header("Mcp-Name", name)
            .with_body(body.clone())
    };
    let routed = request("route");
    let (verdict, peak) = peak_during(|| check_request(&routed, |_| None));
    match verdict {
        GatewayVerdict::Validated(route) => assert_eq!(route.name.as_deref(), Some("route")),
        other => panic!("{other:?}"),
    }
    assert!(peak < 64 * 1024, "checking took {peak} bytes at its peak");
    let decoy = request("decoy");
    assert!(matches!(
        check_request(&decoy, |_| None),
        GatewayVerdict::Rejected(_)
    ));
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
    for (name, text) in shapes() {
        let (value, live) = live_after(|| serde_json::from_str::<Value>(&text).unwrap());
        let estimate = mcp_proto::fuzzing::server::held_bytes(&value);
        let live = usize::try_from(live).unwrap_or(0);
        assert!(
            estimate >= live,
            "{name}: estimated {estimate} bytes, holds {live}"
        );
    }
}

/// What the server estimates a message takes once parsed, from its text before parsing
/// it, is never below what parsing takes at its peak nor what the parsed value is
/// counted as holding, and not far above the latter (a message is refused on it).
#[test]
fn the_estimate_from_text_is_never_below_the_parse() {
    for (name, text) in shapes() {
        let estimate = mcp_proto::fuzzing::server::parsed_bytes(text.as_bytes());
        let (value, peak) = peak_during(|| serde_json::from_str::<Value>(&text).unwrap());
        let held = mcp_proto::fuzzing::server::held_bytes(&value);
        assert!(
            estimate >= peak && estimate >= held,
            "{name}: estimated {estimate} bytes from the text, parsing peaked at {peak}, \
             the value is counted as {held}"
        );
        // Members repeated in one object are counted each time (the parser builds each
        // before dropping the last): the shapes here repeat none.
        assert!(
            estimate <= 2 * held,
            "{name}: estimated {estimate} bytes from the text, the value is counted as {held}"
        );
    }
}

/// JSON texts of the shapes a client can pick to make a parsed value large, each many
/// times over.
fn shapes() -> Vec<(&'static str, String)> {
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
        ("escaped strings", many(r#""\u0041\n\"x""#, 2_000)),
        ("spaced members", {
            let items: Vec<String> = (0..50)
                .map(|i| format!(" \"{i}\" : [ 1 , \"v\" ] "))
                .collect();
            format!("{{ {} }}", items.join(","))
        }),
    ];
    shapes.into_iter().collect()
}
