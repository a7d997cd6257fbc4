//! The server's 2026-07-28 request validation against every vector of
//! `vectors/server-request-validation.json` (headers against body, `_meta`, method
//! lookup, `Mcp-Name` and `Mcp-Param-*` decoding and numeric comparison), plus the
//! exactness cases the vectors leave out, and the same checks as a standalone gateway
//! validator.

use mcp_proto::Instant;
use mcp_proto::model::Implementation;
use mcp_proto::server::http::{HttpEndpoint, HttpReply, HttpRequest};
use mcp_proto::server::{Resource, Server, ServerConfig, Tool, ToolCall, ToolOutcome};
use mcp_proto::version::{ProtocolVersion, VersionPolicy};
use serde_json::{Value, json};

/// A modern-only server with the vector's tool (if any), a resource at the URI the
/// read vector names, and no prompts.
fn server_for(tool: Option<&Value>) -> Server {
    let mut config = ServerConfig::new(Implementation::new("vectors", "1"));
    config.versions = VersionPolicy {
        accepted: vec![ProtocolVersion::V2026_07_28],
    };
    let tools = tool
        .cloned()
        .into_iter()
        .chain([json!({"name": "get_weather", "inputSchema": {"type": "object"}})])
        .chain([json!({"name": "café_tool", "inputSchema": {"type": "object"}})]);
    for t in tools {
        let name = t["name"].as_str().unwrap().to_owned();
        if config.tools.iter().any(|x| x.name == name) {
            continue;
        }
        config.tools.push(Tool::new(
            name,
            "a vector tool",
            t["inputSchema"].clone(),
            |_: &ToolCall<'_>| ToolOutcome::text("ok"),
        ));
    }
    config.resources.push(Resource::text(
        "file:///projects/myapp/config.json",
        "config",
        "application/json",
        "{}",
    ));
    Server::new(config)
}

fn request_of(vector: &Value) -> HttpRequest {
    let method = vector["http_method"].as_str().unwrap();
    let mut request = HttpRequest::new(method, "/mcp").with_header("Host", "127.0.0.1");
    for (name, value) in vector["headers"].as_object().unwrap() {
        request = request.with_header(name.as_str(), value.as_str().unwrap());
    }
    if let Some(body) = vector.get("body") {
        request = request.with_body(serde_json::to_vec(body).unwrap());
    }
    request
}

/// Status and JSON-RPC error code of the answer.
fn answer(endpoint: &mut HttpEndpoint, request: &HttpRequest) -> (u16, Option<i64>) {
    match endpoint.handle_request(Instant::ZERO, request) {
        HttpReply::Complete(r) => {
            let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
            (r.status, body["error"]["code"].as_i64())
        }
        _ => (200, None),
    }
}

#[test]
fn every_server_validation_vector() {
    let vectors = mcp_tests::load_vectors("server-request-validation.json");
    let all = vectors["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .chain(vectors["http_level"].as_array().unwrap());
    let mut checked = 0;
    for v in all {
        let id = v["id"].as_str().unwrap();
        let mut endpoint = HttpEndpoint::new(server_for(v.get("tool_definition")));
        let (status, code) = answer(&mut endpoint, &request_of(v));
        let expected = &v["expected"];
        match expected["outcome"].as_str() {
            Some("unspecified") => continue,
            Some("accept-header-check") => {
                assert_ne!(code, Some(-32020), "{id}: the header check failed");
            }
            Some("accept") => {
                assert_eq!((status, code), (200, None), "{id}");
            }
            _ => {
                if let Some(s) = expected["http_status"].as_u64() {
                    assert_eq!(u64::from(status), s, "{id}: status");
                }
                if let Some(c) = expected["jsonrpc_error_code"].as_i64() {
                    assert_eq!(code, Some(c), "{id}: JSON-RPC code");
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 38, "only {checked} vectors checked");
}

fn execute_sql() -> Value {
    json!({"name": "execute_sql", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "shard": {"type": "integer", "x-mcp-header": "Shard"},
        "query": {"type": "string"}}}})
}

/// A `tools/call` of `execute_sql` whose body carries `arguments` as raw JSON text (so
/// that numbers keep every digit they were written with) and these extra headers.
fn call(arguments_json: &str, headers: &[(&str, &str)]) -> HttpRequest {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"execute_sql","arguments":{arguments_json},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    let mut request = HttpRequest::new("POST", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Content-Type", "application/json")
        .with_header("Accept", "application/json, text/event-stream")
        .with_header("MCP-Protocol-Version", "2026-07-28")
        .with_header("Mcp-Method", "tools/call")
        .with_header("Mcp-Name", "execute_sql");
    for (n, v) in headers {
        request = request.with_header(*n, *v);
    }
    request.with_body(body)
}

#[test]
fn integers_are_compared_exactly() {
    let cases: &[(&str, &str, bool)] = &[
        // (body shard, header, accepted)
        ("42", "42", true),
        ("42", "42.0", true),
        ("42", "042", true),
        ("-7", "-7.000", true),
        ("0", "-0", true),
        ("42.0", "42", true),
        ("4.2e1", "42", true),
        ("9007199254740993", "9007199254740993", true),
        ("9007199254740993", "9007199254740993.0", true),
        // Beyond 2^53 a float comparison would call these equal.
        ("9007199254740993", "9007199254740992", false),
        ("9007199254740993.0", "9007199254740992", false),
        ("1", "1.0000000000000001", false),
        ("1.0000000000000001", "1", false),
        ("42", "43", false),
        ("42", "0x2a", false),
        ("42", "4.2e1", false),
        ("42", "+42", false),
        ("42", "42.", false),
        ("42", ".5", false),
        ("42", "", false),
    ];
    for (body, header, accepted) in cases {
        let mut endpoint = HttpEndpoint::new(server_for(Some(&execute_sql())));
        let args = format!(r#"{{"region":"eu","shard":{body},"query":"q"}}"#);
        let request = call(
            &args,
            &[("Mcp-Param-Region", "eu"), ("Mcp-Param-Shard", header)],
        );
        let (status, code) = answer(&mut endpoint, &request);
        if *accepted {
            assert_eq!((status, code), (200, None), "{body} vs {header}");
        } else {
            assert_eq!((status, code), (400, Some(-32020)), "{body} vs {header}");
        }
    }
}

#[test]
fn a_header_for_an_absent_or_null_argument_is_a_mismatch() {
    for args in [r#"{"query":"q"}"#, r#"{"region":null,"query":"q"}"#] {
        let mut endpoint = HttpEndpoint::new(server_for(Some(&execute_sql())));
        let request = call(args, &[("Mcp-Param-Region", "eu")]);
        assert_eq!(
            answer(&mut endpoint, &request),
            (400, Some(-32020)),
            "{args}"
        );
        // Without the header the call goes through.
        let mut endpoint = HttpEndpoint::new(server_for(Some(&execute_sql())));
        assert_eq!(
            answer(&mut endpoint, &call(args, &[])),
            (200, None),
            "{args}"
        );
    }
}

// ----- the gateway validator ------------------------------------------------------------

use mcp_proto::server::http::gateway::{GatewayVerdict, check_request};

#[test]
fn the_gateway_validator_agrees_with_the_server_on_every_vector() {
    let vectors = mcp_tests::load_vectors("server-request-validation.json");
    for v in vectors["vectors"].as_array().unwrap() {
        let id = v["id"].as_str().unwrap();
        let schema = v.get("tool_definition").map(|t| t["inputSchema"].clone());
        let verdict = check_request(&request_of(v), |_| schema.as_ref());
        let expected = &v["expected"];
        match (
            expected["outcome"].as_str(),
            expected["jsonrpc_error_code"].as_i64(),
        ) {
            (Some("accept"), _) => {
                assert!(
                    matches!(verdict, GatewayVerdict::Validated(_)),
                    "{id}: {verdict:?}"
                );
            }
            (Some("reject"), Some(-32020)) => {
                assert!(
                    !matches!(verdict, GatewayVerdict::Validated(_)),
                    "{id}: {verdict:?}"
                );
                if let GatewayVerdict::Rejected(r) = &verdict {
                    let response = r.response();
                    assert_eq!(response.status, 400, "{id}");
                    assert!(!response.body.starts_with(b"{"), "{id}: a JSON body");
                }
            }
            _ => {}
        }
    }
}

#[test]
fn the_gateway_trusts_no_header_of_an_older_version_and_reports_what_it_validated() {
    let legacy = HttpRequest::new("POST", "/mcp")
        .with_header("MCP-Protocol-Version", "2025-11-25")
        .with_header("Mcp-Method", "tools/call")
        .with_header("Mcp-Name", "admin_tool")
        .with_body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"other"}}"#);
    assert_eq!(check_request(&legacy, |_| None), GatewayVerdict::Untrusted);
    let bare = HttpRequest::new("POST", "/mcp").with_body("{}");
    assert_eq!(check_request(&bare, |_| None), GatewayVerdict::Untrusted);

    let schema = execute_sql()["inputSchema"].clone();
    let args = r#"{"region":"r\u00e9gion-1","shard":7,"query":"q"}"#;
    let request = call(
        args,
        &[
            ("Mcp-Param-Region", "=?base64?csOpZ2lvbi0x?="),
            ("Mcp-Param-Shard", "7.0"),
        ],
    );
    match check_request(&request, |name| (name == "execute_sql").then_some(&schema)) {
        GatewayVerdict::Validated(route) => {
            assert_eq!(route.method, "tools/call");
            assert_eq!(route.name.as_deref(), Some("execute_sql"));
            assert_eq!(
                route.params,
                [
                    ("Mcp-Param-Region".to_owned(), "région-1".to_owned()),
                    ("Mcp-Param-Shard".to_owned(), "7.0".to_owned())
                ]
            );
        }
        other => panic!("{other:?}"),
    }
    // The exactness the server applies, the gateway applies too.
    let request = call(
        r#"{"region":"eu","shard":9007199254740993,"query":"q"}"#,
        &[
            ("Mcp-Param-Region", "eu"),
            ("Mcp-Param-Shard", "9007199254740992"),
        ],
    );
    let verdict = check_request(&request, |_| Some(&schema));
    assert!(
        matches!(verdict, GatewayVerdict::Rejected(_)),
        "{verdict:?}"
    );
    let get = HttpRequest::new("GET", "/mcp").with_header("MCP-Protocol-Version", "2026-07-28");
    match check_request(&get, |_| None) {
        GatewayVerdict::Rejected(r) => assert_eq!(r.response().status, 405),
        other => panic!("{other:?}"),
    }
}

/// The gateway fuzz target's own invariants hold on its seed and on a few mutations.
#[test]
fn the_gateway_fuzz_target_holds_on_its_seeds() {
    let seed = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fuzz/corpus/gateway/seed-valid"
    ))
    .unwrap();
    mcp_proto::fuzzing::gateway::gateway(&seed);
    let text = String::from_utf8(seed).unwrap();
    for variant in [
        text.replace("Shard: 7.0", "Shard: 8"),
        text.replace("2026-07-28\nMcp", "2025-11-25\nMcp"),
        text.replace("Mcp-Name: route", "Mcp-Name: other"),
        text.replace("\"shard\":7", "\"shard\":7.0"),
        String::new(),
    ] {
        mcp_proto::fuzzing::gateway::gateway(variant.as_bytes());
    }
    // A notification whose version header appears twice with different values: the
    // server checks no header on a notification, so the gateway passes it through.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/regressions/gateway");
    for entry in std::fs::read_dir(dir).unwrap() {
        mcp_proto::fuzzing::gateway::gateway(&std::fs::read(entry.unwrap().path()).unwrap());
    }
}

/// The `Mcp-Param-*` checks (spec 5.5) see the argument the tool gets, however the body
/// spells it: a member name written with a JSON escape, or `arguments` given twice (the
/// machine keeps the last). Either once made the check find no argument, so a call
/// without its header ran with the mirrored value, and the gateway validator reported it
/// valid with no value.
mod mirrored_arguments_are_seen_however_they_are_spelled {
    use mcp_proto::Instant;
    use mcp_proto::model::Implementation;
    use mcp_proto::server::http::gateway::{GatewayVerdict, check_request};
    use mcp_proto::server::http::{HttpEndpoint, HttpReply, HttpRequest};
    use mcp_proto::server::{Server, ServerConfig, Tool, ToolCall, ToolOutcome};
    use mcp_proto::version::{ProtocolVersion, VersionPolicy};
    use serde_json::{Value, json};

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "target": {"type": "object", "properties": {
                "zone": {"type": "string", "x-mcp-header": "Zone"}}},
            "query": {"type": "string"}}})
    }

    fn endpoint() -> HttpEndpoint {
        let mut config = ServerConfig::new(Implementation::new("t", "1"));
        config.versions = VersionPolicy {
            accepted: vec![ProtocolVersion::V2026_07_28],
        };
        config.tools.push(Tool::new(
            "execute_sql",
            "runs SQL in a region",
            schema(),
            |call: &ToolCall<'_>| ToolOutcome::text(format!("ran in {}", call.arguments["region"])),
        ));
        HttpEndpoint::new(Server::new(config))
    }

    /// A `tools/call` of `execute_sql` whose params hold `params_members` (raw JSON),
    /// without any `Mcp-Param-*` header.
    fn call(params_members: &str) -> HttpRequest {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"execute_sql",{params_members},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
        );
        HttpRequest::new("POST", "/mcp")
            .with_header("Host", "127.0.0.1")
            .with_header("Content-Type", "application/json")
            .with_header("Accept", "application/json, text/event-stream")
            .with_header("MCP-Protocol-Version", "2026-07-28")
            .with_header("Mcp-Method", "tools/call")
            .with_header("Mcp-Name", "execute_sql")
            .with_body(body)
    }

    fn answer(request: &HttpRequest) -> (u16, Value) {
        match endpoint().handle_request(Instant::ZERO, request) {
            HttpReply::Complete(r) => (r.status, serde_json::from_slice(&r.body).unwrap()),
            _ => panic!("a stream"),
        }
    }

    const HIDDEN: [&str; 6] = [
        r#""arguments":{"region":"eu","qu\u0065ry":"q"}"#,
        r#""arguments":{"regi\u006fn":"eu"}"#,
        r#""arguments":{},"arguments":{"region":"eu"}"#,
        r#""argum\u0065nts":{"region":"eu"}"#,
        r#""arguments":{"target":{"z\u006fne":"a"}}"#,
        r#""arguments":{"target":{"zone":"b"},"t\u0061rget":{"zone":"a"}}"#,
    ];

    #[test]
    fn the_plain_body_is_refused_without_its_header() {
        let (status, body) = answer(&call(r#""arguments":{"region":"eu","query":"q"}"#));
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (400, Some(-32020)),
            "{body}"
        );
    }

    #[test]
    fn an_escaped_or_repeated_member_does_not_hide_the_argument() {
        for members in HIDDEN {
            let (status, body) = answer(&call(members));
            assert_eq!(
                (status, body["error"]["code"].as_i64()),
                (400, Some(-32020)),
                "{members}: {body}"
            );
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("missing Mcp-Param-"),
                "{members}: {body}"
            );
        }
        // With the header, the escaped spelling is served, with the value it names.
        let request =
            call(r#""arguments":{"regi\u006fn":"eu"}"#).with_header("Mcp-Param-Region", "eu");
        let (status, body) = answer(&request);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["content"][0]["text"], "ran in \"eu\"");
    }

    #[test]
    fn the_gateway_refuses_them_too() {
        let s = schema();
        for members in HIDDEN {
            let verdict = check_request(&call(members), |n| (n == "execute_sql").then_some(&s));
            assert!(
                matches!(verdict, GatewayVerdict::Rejected(_)),
                "{members}: {verdict:?}"
            );
        }
    }
}
