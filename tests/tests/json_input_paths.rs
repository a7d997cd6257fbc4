//! JSON read from a peer on paths beside the main message decoder: every reader must
//! agree with the others on what the text says, and every bound of `Limits` must hold
//! whichever path the text takes.

use mcp_proto::Limits;
use mcp_proto::client::{CallError, CallRequest, ClientConfig};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::EraMode;
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use serde_json::{Value, json};

fn config() -> ClientConfig {
    ClientConfig::new("json-paths", "1.0")
        .era_mode(EraMode::Auto)
        .capabilities(ClientCapabilities::with_elicitation())
}

fn result(req: &SeenRequest, result: Value) -> Value {
    json!({"jsonrpc":"2.0","id":req.body["id"],"result":result})
}

fn discover_ok(req: &SeenRequest) -> Reply {
    Reply::json(
        200,
        &result(
            req,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                "capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}),
        ),
    )
}

/// How deep `value` nests arrays and objects (a scalar is 0).
fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, d)) = stack.pop() {
        let children: Vec<&Value> = match v {
            Value::Array(items) => items.iter().collect(),
            Value::Object(members) => members.values().collect(),
            _ => continue,
        };
        deepest = deepest.max(d + 1);
        stack.extend(children.into_iter().map(|c| (c, d + 1)));
    }
    deepest
}

/// A tool entry whose `name` is not a string names no tool: the client must not take it
/// for the tool named inside that value (the typed view of the listing does not), so it
/// must not replace what the client learned of the real tool's `x-mcp-header`
/// declarations.
#[test]
fn a_tool_whose_name_is_not_a_string_does_not_replace_the_declarations_of_another() {
    let mut sim = HttpSim::new(config(), |req| match req.rpc_method() {
        "server/discover" => discover_ok(req),
        "tools/list" => Reply::json(
            200,
            &result(
                req,
                json!({"resultType":"complete","ttlMs":0,"tools":[
                    {"name":"route","inputSchema":{"type":"object","properties":{
                        "region":{"type":"string","x-mcp-header":"Region"}}}},
                    {"name":{"name":"route"},"inputSchema":{"type":"object"}}
                ]}),
            ),
        ),
        "tools/call" => Reply::json(
            200,
            &result(
                req,
                json!({"resultType":"complete","content":[{"type":"text","text":"ok"}]}),
            ),
        ),
        _ => Reply::json(404, &json!({})),
    });
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    sim.call(CallRequest::call_tool("route", json!({"region": "eu"})))
        .unwrap();
    let call = sim.with_method("tools/call")[0].clone();
    assert_eq!(
        call.header("mcp-param-region"),
        Some("eu"),
        "the declarations of `route` were replaced by an entry with no string name"
    );
}

/// The JSON-RPC error in the body of a failure status (4xx/5xx) is a message from the
/// server like any other: `max_nesting_depth` holds for it.
#[test]
fn an_error_in_a_failure_body_is_held_to_the_nesting_limit() {
    let mut data = json!(1);
    for _ in 0..100 {
        data = json!([data]);
    }
    let mut sim = HttpSim::new(config(), move |req| match req.rpc_method() {
        "server/discover" => discover_ok(req),
        _ => Reply::with_body(
            500,
            &[("Content-Type", "application/json")],
            &json!({"jsonrpc":"2.0","id":req.body["id"],
                "error":{"code":-32603,"message":"deep","data":data}})
            .to_string(),
        ),
    });
    sim.connect();
    let err = sim.call(CallRequest::list_tools()).unwrap_err();
    let CallError::Http(failure) = err else {
        panic!("{err:?}")
    };
    let limit = Limits::default().max_nesting_depth;
    let nested = failure
        .error
        .as_ref()
        .and_then(|e| e.data.as_ref())
        .map_or(0, depth);
    // The message is level 1, `error` level 2: its data may nest `limit - 2` levels.
    assert!(
        nested <= limit - 2,
        "an error whose data nests {nested} levels was handed over (max_nesting_depth {limit})"
    );
}

/// Same for `max_parsed_bytes`: the error of a failure body is parsed into values, so
/// the memory it would take is bounded like that of any message.
#[test]
fn an_error_in_a_failure_body_is_held_to_the_parsed_bytes_limit() {
    let mut limits = Limits::default();
    limits.max_parsed_bytes = 256 * 1024;
    // 60 KiB of one-member objects: several megabytes once parsed.
    let data = Value::Array(vec![json!({"a": 0}); 7_000]);
    let mut sim = HttpSim::new(config().limits(limits), move |req| match req.rpc_method() {
        "server/discover" => discover_ok(req),
        _ => Reply::with_body(
            500,
            &[("Content-Type", "application/json")],
            &json!({"jsonrpc":"2.0","id":req.body["id"],
                "error":{"code":-32603,"message":"wide","data":data}})
            .to_string(),
        ),
    });
    sim.connect();
    let err = sim.call(CallRequest::list_tools()).unwrap_err();
    let CallError::Http(failure) = err else {
        panic!("{err:?}")
    };
    let items = failure
        .error
        .as_ref()
        .and_then(|e| e.data.as_ref())
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    assert_eq!(
        items, 0,
        "an error that takes megabytes once parsed was parsed past max_parsed_bytes (256 KiB)"
    );
}
