//! A text result ([`ToolOutcome::text`], [`ToolOutcome::error_text`]) is written straight
//! into the reply: the bytes must be those of the same result given as a value.

use serde_json::{Value, json};

use super::{ALL_CAPS, meta, some_instant};
use crate::server::example;
use crate::server::{Tool, ToolCall, ToolOutcome};

/// Both tools read `text` and `error` from their arguments.
fn as_text(call: &ToolCall<'_>) -> ToolOutcome {
    let text = call.arguments["text"].as_str().unwrap_or_default();
    if call.arguments["error"] == true {
        ToolOutcome::error_text(text)
    } else {
        ToolOutcome::text(text)
    }
}

fn as_value(call: &ToolCall<'_>) -> ToolOutcome {
    let text = call.arguments["text"].as_str().unwrap_or_default();
    let mut result = json!({"content": [{"type": "text", "text": text}]});
    if call.arguments["error"] == true {
        result["isError"] = json!(true);
    }
    ToolOutcome::Done(result)
}

/// The bytes the server writes for `message`.
fn written(server: &mut crate::server::Server, message: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).unwrap();
    line.push(b'\n');
    server.handle_input(some_instant(), &line);
    let mut out = Vec::new();
    while server.poll_transmit(some_instant(), &mut out).is_some() {}
    out
}

#[test]
fn text_results_are_written_as_their_values_are() {
    let mut server = example::server_with(|c| {
        c.tools
            .push(Tool::new("as_text", "", json!({"type": "object"}), as_text));
        c.tools.push(Tool::new(
            "as_value",
            "",
            json!({"type": "object"}),
            as_value,
        ));
    });
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    assert!(!written(&mut server, &init).is_empty());
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(written(&mut server, &initialized).is_empty());
    let caps: Value = serde_json::from_str(ALL_CAPS).unwrap();
    let texts = [
        String::new(),
        "plain".to_owned(),
        "q\"uote\\ \n\t\u{1} é ✓ 𝄞".to_owned(),
        "x".repeat(64 * 1024),
    ];
    let mut calls = 0;
    for text in &texts {
        for error in [false, true] {
            for modern in [false, true] {
                let mut params = json!({"arguments": {"text": text, "error": error}});
                if modern {
                    params["_meta"] = meta(caps.clone());
                }
                let mut replies = ["as_text", "as_value"].map(|name| {
                    params["name"] = json!(name);
                    let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                        "params": params});
                    written(&mut server, &request)
                });
                let [by_text, by_value] = &mut replies;
                assert_eq!(
                    String::from_utf8_lossy(by_text),
                    String::from_utf8_lossy(by_value),
                    "text {:.40?}, error {error}, modern {modern}",
                    text
                );
                let reply: Value = serde_json::from_slice(by_text).unwrap();
                assert_eq!(reply["result"]["content"][0]["text"], json!(text));
                assert_eq!(reply["result"]["isError"].as_bool().unwrap_or(false), error);
                calls += 1;
            }
        }
    }
    assert_eq!(calls, 16);
}
