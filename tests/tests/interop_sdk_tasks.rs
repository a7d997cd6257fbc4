//! Tasks against servers built with the TypeScript SDK v2 (`srv.mjs --tasks`,
//! @modelcontextprotocol/server 2.4.0) and the Python SDK 2.3 (`srv.py --tasks`,
//! mcp 2.3.0), in both eras, over stdio and Streamable HTTP.
//!
//! What the SDKs offer (read in the installed sources):
//!
//! * Neither SDK has a task runtime: no task store, no `execution.taskSupport` handling,
//!   no `tasks/*` handlers of its own, no `capabilities.tasks`.
//!   - TypeScript: `mcp-BCJHyo7l.d.mts` says "Task methods are 2025-11-25 wire
//!     vocabulary with no SDK runtime" (`TaskRequestMethod` is excluded from the typed
//!     `setRequestHandler`); the 2026 codec deletes `execution.taskSupport` and
//!     `capabilities.tasks` (`encodeResult`, `enforceDeletedFields`).
//!   - Python: `mcp_types/methods.py` lists the 2025-11-25 methods with "tasks/*
//!     deliberately absent", and `ServerRunner._serialize` (`mcp/server/runner.py`) sieves
//!     every legacy result through the spec surface, so a `tools/call` cannot answer
//!     `{"task": …}` in 2025-11-25.
//! * Both let a server implement the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`)
//!   itself, and the fixtures do, with a process-wide store (on instances built for
//!   2026-07-28 only; a legacy instance gets the tools alone):
//!   - TypeScript: `Protocol._onrequest` admits `tasks/get` and `tasks/cancel` on a
//!     2026-07-28 instance when registered with explicit schemas
//!     (`isExtensionReusedRequestMethod`, `_customSchemaRequestMethods`), `tasks/update` is an
//!     extension method, and `stampResultType` lets `tools/call` return another `resultType`
//!     (`EXTENDED_RESULT_TYPE_METHODS`). The SDK adds `content: []` to the task result
//!     (`normalizeContentlessToolResult`) and lifts `inputResponses` out of `tasks/update`
//!     into `ctx.mcpReq.inputResponses`.
//!   - Python: the `Extension` interface (`mcp/server/extension.py`): `MethodBinding`s for
//!     `tasks/get|update|cancel` restricted to 2026-07-28, and `intercept_tool_call`
//!     returning a `resultType: "task"` mapping, which `_serialize` leaves to the
//!     extension ("a claimed extension `resultType` shape is the extension's to own").
//!
//! So in 2026-07-28 our client runs `slow_task` (working for a few polls, then completed)
//! hidden behind `call_tool`, explicitly with `start_task` and its status events, asks for
//! input inside `ask_task` (`input_required` answered with `tasks/update`) and cancels
//! one; `tasks/list` does not exist there and fails locally. In 2025-11-25 the tests assert
//! what is observable instead: no `tasks` capability, no `execution.taskSupport`, and both
//! `call_tool` and an `as_task` call run the tool as a plain call (no `params.task` is
//! sent to a server that did not declare tasks, decision 41); `tasks/list` is not served.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_blocking::{Client, Error, HttpOptions, Options, StdioCommand};
use mcp_proto::client::{
    CallError, CallId, CallOutput, CallRequest, ClientConfig, Event, InputAnswer, InputHandler,
    InputRequest, TaskStatus,
};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::{Era, EraMode};
use mcp_tests::interop::{Fixture, fixture, fixture_installed, http_fixture};
use serde_json::{Map, Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// Accepts every form with `ok: true`, remembering the messages shown.
#[derive(Clone, Default)]
struct Confirm(Arc<Mutex<Vec<String>>>);

impl InputHandler for Confirm {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        let InputRequest::Elicitation(p) = request else {
            return InputAnswer::decline();
        };
        self.0.lock().unwrap().push(p.message.clone());
        let mut content = Map::new();
        content.insert("ok".to_owned(), Value::Bool(true));
        InputAnswer::accept(content)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Stdio,
    Http,
}

/// The stdio command for `f` with its task tools, or `None` (skip).
fn stdio_command(f: Fixture) -> Option<StdioCommand> {
    fixture(f).map(|c| c.arg("--tasks"))
}

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("interop-sdk-tasks", "1.0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation().with_tasks())
}

/// Runs `body` with our blocking client connected to `f` in `mode` over `transport`.
fn with_client(
    f: Fixture,
    mode: EraMode,
    transport: Transport,
    body: impl FnOnce(&mut Client, &Confirm, &str),
) {
    let shown = Confirm::default();
    let options = Options::new().input_handler(shown.clone());
    let server;
    let mut client = match transport {
        Transport::Stdio => {
            let Some(cmd) = stdio_command(f) else {
                return;
            };
            Client::connect_stdio_with(cmd, config(mode), options).expect("connect")
        }
        Transport::Http => {
            let Some(s) = http_fixture(f, &["--tasks"]) else {
                return;
            };
            server = s;
            Client::connect_http_with(&server.url, config(mode), options, HttpOptions::new())
                .unwrap_or_else(|e| panic!("connect: {e:?}\n{}", server.output()))
        }
    };
    let what = format!("{f:?} {mode:?} {transport:?}");
    body(&mut client, &shown, &what);
    client.close();
}

/// Follows the started task `call` to its end (bounded), collecting its task events.
fn follow(client: &mut Client, call: CallId, what: &str) -> (Vec<Event>, CallOutput) {
    let mut events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(outcome) = client.poll_task_result(call) {
            let out = outcome.unwrap_or_else(|e| panic!("{what}: {e:?} after {events:?}"));
            return (events, out);
        }
        assert!(Instant::now() < deadline, "{what}: {events:?}");
        if let Some(e) = client.next_task_event(Some(call), Duration::from_millis(200)) {
            events.push(e);
        }
    }
}

fn created_id(events: &[Event], what: &str) -> String {
    match events.first() {
        Some(Event::TaskCreated { task, .. }) => task.task_id.clone(),
        other => panic!("{what}: {other:?}"),
    }
}

fn status_messages(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TaskStatus { task, .. } => task.status_message.clone(),
            _ => None,
        })
        .collect()
}

/// 2026-07-28: the extension advertised, a task hidden behind `call_tool`, one followed
/// explicitly, one asking for input, one cancelled; no `tasks/list`.
fn modern(client: &mut Client, shown: &Confirm, what: &str) {
    assert_eq!(client.era(), Era::Modern, "{what}");
    let caps = &client.server().capabilities;
    assert!(
        caps["extensions"].get(TASKS).is_some(),
        "{what}: the tasks extension in server/discover: {caps}"
    );
    assert!(caps.get("tasks").is_none(), "{what}: {caps}");

    // Hidden: the server answers with a task; the call follows it to the one result.
    let out = client
        .call_tool("slow_task", json!({"steps": 2}))
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
    assert_eq!(out.text(), "done after 2 steps", "{what}");

    // Explicit: creation, a status per poll, then the result.
    let call = client
        .start_task(CallRequest::call_tool("slow_task", json!({"steps": 3})).as_task(None))
        .expect("start");
    let (events, out) = follow(client, call, what);
    let id = created_id(&events, what);
    assert!(!id.is_empty(), "{what}");
    let messages = status_messages(&events);
    for step in ["step 1/3", "step 2/3", "step 3/3"] {
        assert!(
            messages.iter().any(|m| m == step),
            "{what}: {step} in {messages:?}"
        );
    }
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::TaskStatus { task, .. } if task.status == TaskStatus::Completed
        )),
        "{what}: {events:?}"
    );
    assert_eq!(
        out.tool_result().expect("a tool result").text(),
        "done after 3 steps",
        "{what}"
    );

    // Input inside the task: input_required, answered with tasks/update.
    let call = client
        .start_task(CallRequest::call_tool("ask_task", json!({})).as_task(None))
        .expect("start");
    let (events, out) = follow(client, call, what);
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::TaskStatus { task, .. } if task.status == TaskStatus::InputRequired
        )),
        "{what}: {events:?}"
    );
    let text = out.tool_result().expect("a tool result").text();
    assert_eq!(text.to_lowercase(), "ok=true", "{what}");
    assert_eq!(
        shown.0.lock().unwrap().as_slice(),
        ["Proceed with the task?"],
        "{what}: asked once"
    );

    // Hidden with input: the same, behind one call_tool.
    let out = client
        .call_tool("ask_task", json!({}))
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
    assert_eq!(out.text().to_lowercase(), "ok=true", "{what}");
    assert_eq!(shown.0.lock().unwrap().len(), 2, "{what}");

    // Cancelled: the call ends at once; the server's record shows it cancelled.
    let call = client
        .start_task(CallRequest::call_tool("slow_task", json!({"steps": 1000})).as_task(None))
        .expect("start");
    let id = match client.next_task_event(Some(call), Duration::from_secs(10)) {
        Some(Event::TaskCreated { task, .. }) => task.task_id,
        other => panic!("{what}: {other:?}"),
    };
    client.cancel_task(call).expect("cancel");
    match client.task_result(call) {
        Err(Error::Call(CallError::Cancelled)) => {}
        other => panic!("{what}: {other:?}"),
    }
    // tasks/cancel is acknowledged without being awaited: ask until the record shows it
    // (at once over stdio; a separate POST over HTTP).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = client
            .request(CallRequest::task_status(&id))
            .unwrap_or_else(|e| panic!("{what}: tasks/get: {e:?}"));
        let task = out.task(Era::Modern).expect("a task");
        if task.status == TaskStatus::Cancelled {
            break;
        }
        assert_eq!(task.status, TaskStatus::Working, "{what}: {task:?}");
        assert!(Instant::now() < deadline, "{what}: never cancelled");
        std::thread::sleep(Duration::from_millis(50));
    }

    // No listing in the extension: refused before anything is sent.
    match client.list_tasks() {
        Err(Error::Call(CallError::NotInVersion { .. })) => {}
        other => panic!("{what}: {other:?}"),
    }
}

/// 2025-11-25: neither SDK serves tasks. The observable facts: no `tasks` capability, no
/// `execution.taskSupport`, a plain result for `call_tool` and for a call asking for a
/// task, and no `tasks/list` (refused before anything is sent: `tasks.list` was not
/// declared).
fn legacy(client: &mut Client, what: &str) {
    assert_eq!(client.era(), Era::Legacy, "{what}");
    let caps = client.server().capabilities.clone();
    assert!(caps.get("tasks").is_none(), "{what}: {caps}");
    assert!(caps.get("extensions").is_none(), "{what}: {caps}");
    let tools = client.list_tools().expect("tools/list");
    let slow = tools
        .iter()
        .find(|t| t.name == "slow_task")
        .unwrap_or_else(|| panic!("{what}: {tools:?}"));
    assert!(slow.extra.get("execution").is_none(), "{what}: {slow:?}");

    let out = client
        .call_tool("slow_task", json!({"steps": 2}))
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
    assert_eq!(out.text(), "done after 2 steps", "{what}");

    let call = client
        .start_task(CallRequest::call_tool("slow_task", json!({"steps": 4})).as_task(None))
        .expect("start");
    let (events, out) = follow(client, call, what);
    assert!(events.is_empty(), "{what}: no task was made: {events:?}");
    assert_eq!(
        out.tool_result().expect("a tool result").text(),
        "done after 4 steps",
        "{what}"
    );

    match client.list_tasks() {
        Err(Error::Call(CallError::NotDeclared { feature, .. })) => {
            assert_eq!(feature, "tasks.list", "{what}");
        }
        other => panic!("{what}: {other:?}"),
    }
}

fn exercise(f: Fixture, mode: EraMode, transport: Transport) {
    with_client(f, mode, transport, |client, shown, what| match mode {
        EraMode::Legacy => legacy(client, what),
        _ => modern(client, shown, what),
    });
}

#[test]
fn typescript_modern_stdio() {
    exercise(Fixture::TypeScript, EraMode::Modern, Transport::Stdio);
}

#[test]
fn typescript_modern_http() {
    exercise(Fixture::TypeScript, EraMode::Modern, Transport::Http);
}

#[test]
fn typescript_legacy_stdio() {
    exercise(Fixture::TypeScript, EraMode::Legacy, Transport::Stdio);
}

#[test]
fn typescript_legacy_http() {
    exercise(Fixture::TypeScript, EraMode::Legacy, Transport::Http);
}

#[test]
fn python_modern_stdio() {
    exercise(Fixture::Python, EraMode::Modern, Transport::Stdio);
}

#[test]
fn python_modern_http() {
    exercise(Fixture::Python, EraMode::Modern, Transport::Http);
}

#[test]
fn python_legacy_stdio() {
    exercise(Fixture::Python, EraMode::Legacy, Transport::Stdio);
}

#[test]
fn python_legacy_http() {
    exercise(Fixture::Python, EraMode::Legacy, Transport::Http);
}

/// The smol adapter: a Python task hidden behind `call_tool` over HTTP, and a
/// TypeScript one followed explicitly over stdio.
#[test]
fn smol_hidden_and_explicit_tasks() {
    use futures_lite::future;

    if !fixture_installed(Fixture::Python) || !fixture_installed(Fixture::TypeScript) {
        return;
    }
    let Some(server) = http_fixture(Fixture::Python, &["--tasks"]) else {
        return;
    };
    let (client, driver) = mcp_smol::connect_http_with(
        &server.url,
        config(EraMode::Modern),
        Options::new().input_handler(Confirm::default()),
        mcp_smol::HttpOptions::new(),
    )
    .expect("the URL is acceptable");
    let work = async {
        let details = client.connected().await.expect("connected");
        assert_eq!(details.protocol_version.era(), Era::Modern);
        let out = client
            .call_tool("slow_task", json!({"steps": 2}))
            .await
            .expect("slow_task");
        assert_eq!(out.text(), "done after 2 steps");
        let out = client
            .call_tool("ask_task", json!({}))
            .await
            .expect("ask_task");
        assert_eq!(out.text(), "ok=True");
        client.close().await;
    };
    let (driven, ()) = future::block_on(future::zip(driver, work));
    driven.expect("the driver ends cleanly after close");

    let cmd = stdio_command(Fixture::TypeScript).expect("installed");
    let (client, driver) = mcp_smol::connect_stdio_with(
        cmd,
        config(EraMode::Modern),
        Options::new().input_handler(Confirm::default()),
    )
    .expect("connect");
    let work = async {
        client.connected().await.expect("connected");
        let call = client
            .start_task(CallRequest::call_tool("slow_task", json!({"steps": 2})).as_task(None))
            .await
            .expect("start");
        let mut statuses = Vec::new();
        while let Some(e) = client.next_task_event(Some(call)).await {
            match e {
                Event::TaskCreated { .. } => statuses.push(TaskStatus::Working),
                Event::TaskStatus { task, .. } => {
                    let done = task.status == TaskStatus::Completed;
                    statuses.push(task.status);
                    if done {
                        break;
                    }
                }
                _ => {}
            }
        }
        let out = client.task_result(call).await.expect("the result");
        assert_eq!(out.tool_result().unwrap().text(), "done after 2 steps");
        assert_eq!(
            statuses.last(),
            Some(&TaskStatus::Completed),
            "{statuses:?}"
        );
        client.close().await;
    };
    let (driven, ()) = future::block_on(future::zip(driver, work));
    driven.expect("the driver ends cleanly after close");
}
