//! Server tasks over the HTTP endpoint machine: a task belongs to the legacy session or
//! the principal that created it, `Mcp-Name` must name the task on the 2026 task
//! methods, a seeded server's task ids are not sequential, and the client answers a
//! task's input in both eras (2025: requests on `tasks/result`; 2026: `tasks/update`).

use mcp_proto::Instant;
use mcp_proto::server::example;
use mcp_proto::server::http::{HttpEndpoint, HttpEndpointConfig, HttpReply, HttpRequest};
use serde_json::{Value, json};

const EXT: &str = "io.modelcontextprotocol/tasks";

fn endpoint() -> HttpEndpoint {
    let mut server = example::with_tasks();
    server.seed_tasks([9; 32], 1_764_633_600_000);
    HttpEndpoint::with_sessions(server, HttpEndpointConfig::default(), &[3; 32])
}

fn request() -> HttpRequest {
    HttpRequest::new("POST", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Content-Type", "application/json")
        .with_header("Accept", "application/json, text/event-stream")
}

fn legacy(session: Option<&str>, body: &Value) -> HttpRequest {
    let mut r = request();
    if let Some(s) = session {
        r = r
            .with_header("Mcp-Session-Id", s)
            .with_header("MCP-Protocol-Version", "2025-11-25");
    }
    r.with_body(body.to_string())
}

/// A 2026 request declaring the tasks extension, with the routing headers; `name`: the
/// `Mcp-Name` to send (`None`: none).
fn modern(method: &str, mut params: Value, name: Option<&str>) -> HttpRequest {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut r = request()
        .with_header("MCP-Protocol-Version", "2026-07-28")
        .with_header("Mcp-Method", method);
    if let Some(name) = name {
        r = r.with_header("Mcp-Name", name);
    }
    r.with_body(body.to_string())
}

/// The status, the session id and the JSON body of a complete reply.
fn send(e: &mut HttpEndpoint, r: &HttpRequest, who: Option<&str>) -> (u16, Option<String>, Value) {
    match e.handle_request_as(Instant::ZERO, r, who) {
        HttpReply::Complete(r) => (
            r.status,
            r.header("mcp-session-id").map(str::to_owned),
            serde_json::from_slice(&r.body).unwrap_or(Value::Null),
        ),
        _ => panic!("a task request answered with a stream"),
    }
}

fn initialize(e: &mut HttpEndpoint) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    send(e, &legacy(None, &body), None).1.unwrap()
}

fn call(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn a_legacy_session_never_sees_another_sessions_tasks() {
    let mut e = endpoint();
    let a = initialize(&mut e);
    let b = initialize(&mut e);
    let create = call(
        1,
        "tools/call",
        json!({"name": "slow", "arguments": {"text": "x"}, "task": {}}),
    );
    let (_, _, created) = send(&mut e, &legacy(Some(&a), &create), None);
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!id.starts_with("task-"), "seeded ids: {id}");
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let (_, _, r) = send(
            &mut e,
            &legacy(Some(&b), &call(2, method, json!({"taskId": id}))),
            None,
        );
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
    }
    let (_, _, listed) = send(
        &mut e,
        &legacy(Some(&b), &call(3, "tasks/list", json!({}))),
        None,
    );
    assert_eq!(listed["result"]["tasks"], json!([]));
    let (_, _, listed) = send(
        &mut e,
        &legacy(Some(&a), &call(4, "tasks/list", json!({}))),
        None,
    );
    assert_eq!(listed["result"]["tasks"][0]["taskId"], id.as_str());
    let (_, _, r) = send(
        &mut e,
        &legacy(Some(&a), &call(5, "tasks/result", json!({"taskId": id}))),
        None,
    );
    assert_eq!(r["result"]["content"][0]["text"], "x", "{r}");
}

#[test]
fn a_principal_never_reaches_another_principals_task() {
    let mut e = endpoint();
    let create = modern(
        "tools/call",
        json!({"name": "slow", "arguments": {"text": "y"}}),
        Some("slow"),
    );
    let (status, _, created) = send(&mut e, &create, Some("alice"));
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["result"]["resultType"], "task");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32);
    let get = modern("tasks/get", json!({"taskId": id}), Some(&id));
    for who in [Some("bob"), None] {
        let (_, _, r) = send(&mut e, &get, who);
        assert_eq!(r["error"]["code"], -32602, "{who:?}: {r}");
        let cancel = modern("tasks/cancel", json!({"taskId": id}), Some(&id));
        let (_, _, r) = send(&mut e, &cancel, who);
        assert_eq!(r["error"]["code"], -32602, "{who:?}: {r}");
    }
    let (status, _, r) = send(&mut e, &get, Some("alice"));
    assert_eq!(
        (status, r["result"]["status"].as_str()),
        (200, Some("working")),
        "{r}"
    );
}

#[test]
fn mcp_name_must_name_the_task() {
    let mut e = endpoint();
    let create = modern(
        "tools/call",
        json!({"name": "slow", "arguments": {"text": "z"}}),
        Some("slow"),
    );
    let (_, _, created) = send(&mut e, &create, None);
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        for name in [None, Some("another-task")] {
            let r = modern(method, json!({"taskId": id, "inputResponses": {}}), name);
            let (status, _, body) = send(&mut e, &r, None);
            assert_eq!(
                (status, &body["error"]["code"]),
                (400, &json!(-32020)),
                "{method} {name:?}"
            );
        }
    }
    let (status, _, body) = send(
        &mut e,
        &modern("tasks/get", json!({"taskId": id}), Some(&id)),
        None,
    );
    assert_eq!(status, 200, "{body}");
}

/// A server whose task tool `ask` asks for a name inside its task.
fn asking_server() -> mcp_proto::server::Server {
    use mcp_proto::model::Implementation;
    use mcp_proto::server::{InputRequestSpec, Server, ServerConfig, Tool, ToolCall, ToolOutcome};
    let tool = Tool::new(
        "ask",
        "",
        json!({"type": "object"}),
        |call: &ToolCall<'_>| match call.inputs.get("who") {
            Some(a) => ToolOutcome::text(format!("hello {}", a["action"].as_str().unwrap_or("?"))),
            None => ToolOutcome::NeedInput(vec![(
                "who".into(),
                InputRequestSpec::form(
                    "Name?",
                    json!({"type": "object",
                    "properties": {"name": {"type": "string", "default": "Ada"}}}),
                ),
            )]),
        },
    )
    .as_task(0);
    Server::new(ServerConfig::new(Implementation::new("t", "0")).with_tool(tool))
}

#[test]
fn the_client_answers_a_tasks_input_over_http_in_both_eras() {
    use mcp_proto::client::{CallRequest, ClientConfig};
    use mcp_proto::model::ClientCapabilities;
    use mcp_proto::version::EraMode;
    let server = mcp_blocking::serve_http_on("127.0.0.1:0", asking_server()).expect("serve");
    let url = server.url();
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let caps = ClientCapabilities::with_elicitation().with_tasks();
        let config = ClientConfig::new("tasks-input", "1.0")
            .era_mode(mode)
            .capabilities(caps);
        let mut client = mcp_blocking::Client::connect_http(&url, config).expect("connect");
        let call = client
            .start_task(CallRequest::call_tool("ask", json!({})).as_task(None))
            .expect("start");
        let out = client.task_result(call).expect("the task's result");
        let text = out.tool_result().unwrap().text();
        // Whatever the client's default handler answered, it reached the task.
        assert!(text.starts_with("hello "), "{mode:?}: {text}");
        client.close();
    }
}
