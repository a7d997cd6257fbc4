//! What a hostile 2026-07-28 server can make the client put on the wire through
//! `x-mcp-header` declarations (SEP-2243) in its `tools/list`.
//!
//! The rule these tests hold the client to: every server input is bounded, and the
//! client never sends what the user did not ask for because a server said so; bad input
//! gets a clear, typed error naming what was wrong (decision 18, "What a server can make
//! the client hold is bounded"; the `mcp_proto::http::xmcp` module docs: an invalid
//! declaration excludes the tool with an `InvalidAnnotation`).

use mcp_proto::client::{CallError, CallRequest, ClientConfig, Event};
use mcp_proto::version::EraMode;
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use serde_json::{Value, json};

fn config() -> ClientConfig {
    ClientConfig::new("hostile-server-test", "1.0").era_mode(EraMode::Auto)
}

fn result(req: &SeenRequest, result: Value) -> Value {
    json!({"jsonrpc":"2.0","id":req.body["id"],"result":result})
}

/// A modern server listing one tool, `route`, whose `region` property has `schema`.
fn server(region: Value) -> impl FnMut(&SeenRequest) -> Reply {
    move |req| match req.rpc_method() {
        "server/discover" => Reply::json(
            200,
            &result(
                req,
                json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                    "capabilities":{"tools":{}},"ttlMs":0}),
            ),
        ),
        "tools/list" => Reply::json(
            200,
            &result(
                req,
                json!({"resultType":"complete","ttlMs":0,"tools":[
                    {"name":"route","inputSchema":{"type":"object",
                        "properties":{"region":region.clone()}}}]}),
            ),
        ),
        "tools/call" => Reply::json(
            200,
            &result(
                req,
                json!({"resultType":"complete","content":[{"type":"text","text":"ok"}]}),
            ),
        ),
        _ => Reply::with_body(404, &[], ""),
    }
}

/// Bytes of a request head as written (`name: value\r\n` per field).
fn head_bytes(req: &SeenRequest) -> usize {
    req.headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum()
}

/// The project's own server refuses a request head past 64 KiB
/// (`ServerHttpLimits::max_head_bytes`), and common servers stop at 8–16 KiB.
const HEAD_LIMIT: usize = 64 * 1024;

/// A server declares `x-mcp-header` with a 1 MiB name. The name is a valid token, so
/// the declaration is accepted as it is, and every call of the tool then carries a
/// header *name* of a megabyte: what the server can make the client write is not
/// bounded. Expected: an annotation past a sane length is an invalid declaration (the
/// tool is excluded with an `InvalidAnnotation`, as for every other bad annotation), or
/// the call fails locally with a typed error; either way no such head is written.
#[test]
fn a_server_cannot_make_the_client_send_a_megabyte_header_name() {
    let name = "A".repeat(1 << 20);
    let mut sim = HttpSim::new(
        config(),
        server(json!({"type":"string","x-mcp-header": name})),
    );
    sim.connect();
    let out = sim.call(CallRequest::call_tool("route", json!({"region": "eu"})));
    let biggest = sim
        .with_method("tools/call")
        .iter()
        .map(|r| head_bytes(r))
        .max()
        .unwrap_or(0);
    assert!(
        biggest <= HEAD_LIMIT,
        "a server-chosen header name put a {biggest}-byte head on the wire (outcome {:?})",
        out.as_ref().map(|_| "ok").map_err(|e| e.to_string())
    );
    let excluded = sim
        .events
        .iter()
        .any(|e| matches!(e, Event::ToolExcluded { tool, .. } if tool == "route"));
    assert!(
        excluded || matches!(out, Err(CallError::ToolExcluded { .. })),
        "the tool with an oversized declaration should be excluded: {out:?}"
    );
}
