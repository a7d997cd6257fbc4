//! The gateway validator against arbitrary requests, and against the server it stands
//! in front of.

use serde_json::{Value, json};

use crate::Instant;
use crate::server::example;
use crate::server::http::gateway::{GatewayVerdict, check_request};
use crate::server::http::{HttpEndpoint, HttpReply, HttpRequest};
use crate::server::{Tool, ToolCall, ToolOutcome};

/// The tool whose headers are checked.
fn schema() -> Value {
    json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "shard": {"type": "integer", "x-mcp-header": "Shard"},
        "on": {"type": "boolean", "x-mcp-header": "On"}}})
}

/// The input is split on `\n`: the first line is the body, each further line a header
/// `Name: value` (the method is POST, the path `/mcp`). The validator must not panic;
/// a request it validates must pass the server's own header checks (no `-32020`), and
/// one it rejects must not be answered as a success by the server either.
pub fn gateway(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let body = lines.next().unwrap_or_default().to_owned();
    let mut request = HttpRequest::new("POST", "/mcp").with_header("Host", "127.0.0.1");
    for line in lines.take(16) {
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim();
            if !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic()) {
                request = request.with_header(name, value.trim());
            }
        }
    }
    let request = request.with_body(body.into_bytes());
    let schema = schema();
    let verdict = check_request(&request, |name| (name == "route").then_some(&schema));
    let server = example::server_with(|c| {
        c.tools.push(Tool::new(
            "route",
            "echoes",
            schema.clone(),
            |_: &ToolCall<'_>| ToolOutcome::text("ok"),
        ));
    });
    let mut endpoint = HttpEndpoint::new(server);
    let answer = match endpoint.handle_request(Instant::ZERO, &request) {
        HttpReply::Complete(r) => Some((
            r.status,
            serde_json::from_slice::<Value>(&r.body).unwrap_or(Value::Null)["error"]["code"]
                .as_i64(),
        )),
        _ => None,
    };
    match (&verdict, answer) {
        (GatewayVerdict::Validated(_), Some((_, Some(code)))) => {
            assert_ne!(
                code, -32020,
                "validated by the gateway, refused by the server"
            );
        }
        (GatewayVerdict::Rejected(r), Some((status, None))) => {
            assert!(
                status >= 400 || r.status == 405,
                "rejected by the gateway ({r:?}), served by the server ({status})"
            );
        }
        _ => {}
    }
}
