//! `MCP-Protocol-Version` values a client may send after `initialize`, and what the
//! refusal of one it should not have sent echoes back.

use super::streams::{open_session, with_sessions};
use super::*;

/// A legacy request, notification and `GET` naming a version nobody serves are refused
/// with 400; the refusal names the version, clipped as every other echo of a client's
/// value is (`calls::clipped`: 64 bytes), not the whole header twice over (once in the
/// message, once in `data.requested`), which a head of up to 64 KiB allows.
#[test]
fn an_unsupported_legacy_version_header_is_echoed_clipped() {
    let mut ep = with_sessions(HttpEndpointConfig::default());
    let s = open_session(&mut ep, "2025-11-25");
    let long = "9".repeat(16 * 1024);
    let requests = [
        post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            &[("Mcp-Session-Id", &s), ("MCP-Protocol-Version", &long)],
        ),
        post(
            &json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}),
            &[("Mcp-Session-Id", &s), ("MCP-Protocol-Version", &long)],
        ),
        HttpRequest::new("GET", "/mcp")
            .with_header("Host", "127.0.0.1")
            .with_header("Accept", "text/event-stream")
            .with_header("Mcp-Session-Id", &s)
            .with_header("MCP-Protocol-Version", &long),
    ];
    for (i, request) in requests.iter().enumerate() {
        let r = complete(ep.handle_request(now(), request));
        assert_eq!(r.status, 400, "request {i}: {r:?}");
        assert!(
            r.body.len() < 1024,
            "request {i}: a {} byte version header drew a {} byte refusal",
            long.len(),
            r.body.len()
        );
    }
}
