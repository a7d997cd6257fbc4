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
    send_at(e, Instant::ZERO, r, who)
}

/// [`send`] at `now`.
fn send_at(
    e: &mut HttpEndpoint,
    now: Instant,
    r: &HttpRequest,
    who: Option<&str>,
) -> (u16, Option<String>, Value) {
    match e.handle_request_as(now, r, who) {
        HttpReply::Complete(r) => (
            r.status,
            r.header("mcp-session-id").map(str::to_owned),
            serde_json::from_slice(&r.body).unwrap_or(Value::Null),
        ),
        _ => panic!("a task request answered with a stream"),
    }
}

fn initialize(e: &mut HttpEndpoint) -> String {
    initialize_as(e, Instant::ZERO, None)
}

/// A new legacy session of principal `who`, opened at `now`.
fn initialize_as(e: &mut HttpEndpoint, now: Instant, who: Option<&str>) -> String {
    try_initialize(e, now, who).1.unwrap()
}

/// An `initialize` of principal `who` at `now`: its status, session and body.
fn try_initialize(
    e: &mut HttpEndpoint,
    now: Instant,
    who: Option<&str>,
) -> (u16, Option<String>, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    send_at(e, now, &legacy(None, &body), who)
}

/// Asks session `session` (of `who`) at `now` for a `slow` task, which keeps running
/// (it ends only after polls): its id, or the error answered.
fn start_slow_task(
    e: &mut HttpEndpoint,
    now: Instant,
    session: &str,
    who: Option<&str>,
) -> Result<String, Value> {
    let create = call(
        1,
        "tools/call",
        json!({"name": "slow", "arguments": {"text": "x"}, "task": {}}),
    );
    let (_, _, r) = send_at(e, now, &legacy(Some(session), &create), who);
    match r["result"]["task"]["taskId"].as_str() {
        Some(id) => Ok(id.to_owned()),
        None => Err(r),
    }
}

/// Starts `slow` tasks on `session` until one is refused: how many started, and the
/// refusal.
fn fill_session(
    e: &mut HttpEndpoint,
    now: Instant,
    session: &str,
    who: Option<&str>,
) -> (usize, Value) {
    for started in 0..1000 {
        if let Err(refusal) = start_slow_task(e, now, session, who) {
            return (started, refusal);
        }
    }
    panic!("a session started 1000 tasks");
}

/// A principal opening session after session could take every task slot of the server
/// (64 running tasks per session, 1,024 in all: 17 sessions did it), and nobody else
/// could start a task until they expired. Its sessions together hold at most a quarter.
#[test]
fn one_principal_cannot_take_every_task_slot_by_opening_sessions() {
    let mut e = endpoint();
    let mut started = 0;
    let mut last_refusal = Value::Null;
    for _ in 0..17 {
        let session = initialize_as(&mut e, Instant::ZERO, Some("mallory"));
        let (n, refusal) = fill_session(&mut e, Instant::ZERO, &session, Some("mallory"));
        started += n;
        last_refusal = refusal;
    }
    assert_eq!(started, mcp_proto::server::tasks::MAX_TASKS_PER_PRINCIPAL);
    let message = last_refusal["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("per principal"), "{last_refusal}");
    let alice = initialize_as(&mut e, Instant::ZERO, Some("alice"));
    let started = start_slow_task(&mut e, Instant::ZERO, &alice, Some("alice"));
    assert!(started.is_ok(), "{started:?}");
}

/// The tasks of a legacy session that ended (`DELETE`) or expired are reachable by
/// nobody: they go with it, freeing their slots (they held them until their own expiry,
/// ten minutes on).
#[test]
fn a_sessions_tasks_go_with_the_session() {
    let mut config = HttpEndpointConfig::default();
    config.session_idle_timeout = std::time::Duration::from_secs(60);
    let mut e = HttpEndpoint::with_sessions(example::with_tasks(), config, &[3; 32]);
    let per_principal = mcp_proto::server::tasks::MAX_TASKS_PER_PRINCIPAL;
    let per_session = mcp_proto::server::tasks::MAX_TASKS;
    let sessions: Vec<String> = (0..per_principal / per_session)
        .map(|_| initialize(&mut e))
        .collect();
    for s in &sessions {
        assert_eq!(fill_session(&mut e, Instant::ZERO, s, None).0, per_session);
    }
    let late = initialize(&mut e);
    assert!(start_slow_task(&mut e, Instant::ZERO, &late, None).is_err());
    let delete = HttpRequest::new("DELETE", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Mcp-Session-Id", &sessions[0])
        .with_header("MCP-Protocol-Version", "2025-11-25");
    assert_eq!(send(&mut e, &delete, None).0, 200);
    assert_eq!(
        fill_session(&mut e, Instant::ZERO, &late, None).0,
        per_session
    );
    // The others idle out; the late one stays in use. A request naming an expired one
    // finds it gone (404), its tasks with it.
    let later = Instant::ZERO + std::time::Duration::from_secs(50);
    let list = legacy(Some(&late), &call(2, "tasks/list", json!({})));
    assert_eq!(send_at(&mut e, later, &list, None).0, 200);
    let expired = Instant::ZERO + std::time::Duration::from_secs(61);
    let list = legacy(Some(&sessions[1]), &call(3, "tasks/list", json!({})));
    assert_eq!(send_at(&mut e, expired, &list, None).0, 404);
    let fresh = initialize_as(&mut e, expired, None);
    assert_eq!(fill_session(&mut e, expired, &fresh, None).0, per_session);
}

/// Without sessions, each `initialize` replaces the one before, whose tasks nobody can
/// reach any more: they go with it (they held their slots until they expired, and after
/// four handshakes no task could start for ten minutes).
#[test]
fn a_replaced_stateless_sessions_tasks_go_with_it() {
    let mut e = HttpEndpoint::new(example::with_tasks());
    let per_principal = mcp_proto::server::tasks::MAX_TASKS_PER_PRINCIPAL;
    let per_session = mcp_proto::server::tasks::MAX_TASKS;
    let initialize = |e: &mut HttpEndpoint| {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
        assert_eq!(send(e, &legacy(None, &body), None).0, 200);
    };
    for _ in 0..=per_principal / per_session {
        initialize(&mut e);
        let mut started = 0;
        while started <= per_session {
            let create = call(
                1,
                "tools/call",
                json!({"name": "slow", "arguments": {"text": "x"}, "task": {}}),
            );
            let r = legacy(None, &create).with_header("MCP-Protocol-Version", "2025-11-25");
            if send(&mut e, &r, None).2["result"]["task"]["taskId"].is_null() {
                break;
            }
            started += 1;
        }
        assert_eq!(started, per_session);
    }
}

/// Anonymous legacy sessions share one principal: making room among its tasks dropped
/// the oldest ended one of any of them, so one client starting tasks in sessions of its
/// own erased another's finished result before it was fetched. Now only a task whose
/// end reached its owner (or the requestor's own) goes; until then the new task waits.
#[test]
fn another_sessions_unfetched_result_is_never_dropped_to_make_room() {
    let mut e = endpoint();
    let victim = initialize(&mut e);
    let id = start_slow_task(&mut e, Instant::ZERO, &victim, None).unwrap();
    let get = legacy(Some(&victim), &call(2, "tasks/get", json!({"taskId": id})));
    for _ in 0..example::SLOW_POLLS {
        send(&mut e, &get, None);
    }
    assert_eq!(send(&mut e, &get, None).2["result"]["status"], "completed");
    // Another client fills the anonymous principal's slots, session after session.
    let mut started = 0;
    let mut refusal = Value::Null;
    while refusal.is_null() {
        let session = initialize(&mut e);
        let (n, r) = fill_session(&mut e, Instant::ZERO, &session, None);
        (started, refusal) = (started + n, if n == 0 { r } else { Value::Null });
    }
    let per_principal = mcp_proto::server::tasks::MAX_TASKS_PER_PRINCIPAL;
    assert_eq!(started, per_principal - 1, "{refusal}");
    let result = legacy(
        Some(&victim),
        &call(3, "tasks/result", json!({"taskId": id})),
    );
    let (_, _, r) = send(&mut e, &result, None);
    assert_eq!(r["result"]["content"][0]["text"], "x", "{r}");
    // Fetched, it may go for another's task.
    let late = initialize(&mut e);
    let started = start_slow_task(&mut e, Instant::ZERO, &late, None);
    assert!(started.is_ok(), "{started:?}");
    let (_, _, r) = send(&mut e, &result, None);
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

/// A full session table evicts an idle session to make room for a new one, but never
/// one with a task still running or whose result its client has not fetched: the task
/// would go with it. A flood of `initialize`s erased another client's finished result.
#[test]
fn a_session_with_a_result_due_is_not_evicted_for_room() {
    let mut config = HttpEndpointConfig::default();
    config.max_sessions = 3;
    let mut server = example::with_tasks();
    server.seed_tasks([9; 32], 1_764_633_600_000);
    let mut e = HttpEndpoint::with_sessions(server, config, &[3; 32]);
    // The victim's task ends; its client has not fetched the result.
    let finished = initialize(&mut e);
    let id = start_slow_task(&mut e, Instant::ZERO, &finished, None).unwrap();
    let get = legacy(
        Some(&finished),
        &call(2, "tasks/get", json!({"taskId": id})),
    );
    for _ in 0..example::SLOW_POLLS {
        send(&mut e, &get, None);
    }
    assert_eq!(send(&mut e, &get, None).2["result"]["status"], "completed");
    // Another's task still runs.
    let running = initialize(&mut e);
    let other = start_slow_task(&mut e, Instant::ZERO, &running, None).unwrap();
    // A flood of handshakes, each session then used (so not evicted first as one
    // nobody came back to): each evicts the one before it, never the two above, though
    // they are the ones unused longest.
    let later = Instant::ZERO + std::time::Duration::from_secs(1);
    for _ in 0..10 {
        let flood = initialize_as(&mut e, later, None);
        let list = legacy(Some(&flood), &call(5, "tools/list", json!({})));
        assert_eq!(send_at(&mut e, later, &list, None).0, 200);
    }
    let result = legacy(
        Some(&finished),
        &call(3, "tasks/result", json!({"taskId": id})),
    );
    let (status, _, r) = send(&mut e, &result, None);
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "x", "{r}");
    let get = legacy(
        Some(&running),
        &call(4, "tasks/get", json!({"taskId": other})),
    );
    let (status, _, r) = send(&mut e, &get, None);
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["result"]["status"], "working", "{r}");
    // Fetched, the result no longer holds its session: once it is the session unused
    // longest, a handshake evicts it.
    for s in [&running, &initialize_as(&mut e, later, None)] {
        let list = legacy(Some(s), &call(5, "tools/list", json!({})));
        assert_eq!(send_at(&mut e, later, &list, None).0, 200);
    }
    initialize_as(&mut e, later, None);
    let (status, _, r) = send_at(&mut e, later, &result, None);
    assert_eq!(status, 404, "{r}");
}

/// Sessions held only by their tasks (running, or with a result nobody fetched) give way
/// to a principal holding fewer: the principal holding the most loses its session unused
/// longest, while it holds more than one beyond the newcomer's principal. Four
/// principals pinning the table with tasks kept everyone else's `initialize` at 503 for
/// the tasks' lifetime; now the table is shared out, and a principal at its share is
/// never evicted for another.
#[test]
fn sessions_held_by_tasks_are_shared_out_between_principals() {
    let mut config = HttpEndpointConfig::default();
    config.max_sessions = 4;
    let mut server = example::with_tasks();
    server.seed_tasks([9; 32], 1_764_633_600_000);
    let mut e = HttpEndpoint::with_sessions(server, config, &[3; 32]);
    let pinned = |e: &mut HttpEndpoint, secs: u64, who: &str| {
        let now = Instant::ZERO + std::time::Duration::from_secs(secs);
        let session = initialize_as(e, now, Some(who));
        let task = start_slow_task(e, now, &session, Some(who)).unwrap();
        (session, task)
    };
    let tries = |e: &mut HttpEndpoint, who: &str| {
        let later = Instant::ZERO + std::time::Duration::from_secs(99);
        try_initialize(e, later, Some(who)).0
    };
    let mallory: Vec<_> = (0..3).map(|i| pinned(&mut e, i, "mallory")).collect();
    let alice = pinned(&mut e, 3, "alice");
    // Full, and every session in use: mallory holds three, bob none.
    let bob = pinned(&mut e, 4, "bob");
    // Mallory's session unused longest went, with its task.
    let get = |(session, task): &(String, String)| {
        legacy(
            Some(session),
            &call(2, "tasks/get", json!({"taskId": task})),
        )
    };
    let who = Some("mallory");
    assert_eq!(send(&mut e, &get(&mallory[0]), who).0, 404);
    assert_eq!(send(&mut e, &get(&mallory[1]), who).0, 200);
    // Mallory holds two, carol none: one more of mallory's goes.
    let carol = pinned(&mut e, 5, "carol");
    assert_eq!(send(&mut e, &get(&mallory[1]), who).0, 404);
    // Everyone holds one: nobody gives way, to a new principal or to mallory.
    assert_eq!(tries(&mut e, "dave"), 503);
    assert_eq!(tries(&mut e, "mallory"), 503);
    for (held, who) in [
        (&mallory[2], "mallory"),
        (&alice, "alice"),
        (&bob, "bob"),
        (&carol, "carol"),
    ] {
        let (status, _, r) = send(&mut e, &get(held), Some(who));
        assert_eq!(status, 200, "{who}: {r}");
        assert_eq!(r["result"]["status"], "working", "{who}: {r}");
    }
}

/// One principal may hold only its share of `max_task_bytes`: tasks it never ends no
/// longer keep every other principal from starting one for the tasks' lifetime.
#[test]
fn one_principal_cannot_take_every_task_byte() {
    const BOUND: usize = 1024 * 1024;
    let server = example::server_with(|c| {
        example::add_task_tool(c);
        c.limits.max_task_bytes = BOUND;
        c.limits.max_task_bytes_per_principal = BOUND / 4;
    });
    let mut e = HttpEndpoint::new(server);
    // About 128 KiB held each, counted as parsed.
    let padded = json!({"name": "slow", "arguments": {"text": "x", "pad": vec![0; 4_000]}});
    let call = modern("tools/call", padded, Some("slow"));
    let mut started = 0;
    let refusal = loop {
        let (_, _, r) = send(&mut e, &call, Some("mallory"));
        if r["result"]["resultType"] != "task" {
            break r;
        }
        started += 1;
    };
    let message = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("{} bytes at most per principal", BOUND / 4)),
        "{refusal}"
    );
    assert!((1..4).contains(&started), "{started} tasks: {refusal}");
    for who in ["alice", "bob", "carol"] {
        let (_, _, r) = send(&mut e, &call, Some(who));
        assert_eq!(r["result"]["resultType"], "task", "{who}: {r}");
    }
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
