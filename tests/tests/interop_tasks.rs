//! Tasks (2025-11-25) against `@modelcontextprotocol/server-everything` over stdio: its
//! `simulate-research-query` tool is `taskSupport: "required"`, moves through four
//! stages a second apart with a status message each, asks for a clarification through
//! `elicitation/create` tied to the task when the topic is ambiguous, and serves
//! `tasks/list` and `tasks/cancel`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_blocking::{Client, Options};
use mcp_proto::client::{
    CallRequest, ClientConfig, Event, InputAnswer, InputHandler, InputRequest, TaskStatus,
};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::{Era, EraMode};
use mcp_tests::interop::{Fixture, fixture};
use serde_json::{Map, Value, json};

/// Accepts a form by picking the first `oneOf` option of each property, remembering
/// the messages shown.
struct Pick(Arc<Mutex<Vec<String>>>);

impl InputHandler for Pick {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        let InputRequest::Elicitation(p) = request else {
            return InputAnswer::decline();
        };
        self.0.lock().unwrap().push(p.message.clone());
        let schema: Value = p
            .requested_schema
            .as_deref()
            .and_then(|s| serde_json::from_str(s.get()).ok())
            .unwrap_or(Value::Null);
        let mut content = Map::new();
        for (key, prop) in schema["properties"].as_object().into_iter().flatten() {
            if let Some(first) = prop["oneOf"][0]["const"].as_str() {
                content.insert(key.clone(), Value::String(first.to_owned()));
            }
        }
        InputAnswer::accept(content)
    }
}

/// Follows the started task `call` to its end, collecting its task events.
fn follow(
    client: &mut Client,
    call: mcp_proto::client::CallId,
) -> (Vec<Event>, mcp_proto::client::CallOutput) {
    let mut events = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(outcome) = client.poll_task_result(call) {
            return (events, outcome.expect("the task's result"));
        }
        assert!(std::time::Instant::now() < deadline, "{events:?}");
        if let Some(e) = client.next_task_event(Some(call), Duration::from_millis(200)) {
            events.push(e);
        }
    }
}

#[test]
fn server_everything_research_tasks_hidden_explicit_listed_and_cancelled() {
    let Some(cmd) = fixture(Fixture::Everything) else {
        return;
    };
    let config = ClientConfig::new("interop-test", "1.0")
        .era_mode(EraMode::Auto)
        .capabilities(ClientCapabilities::with_elicitation());
    let shown = Arc::new(Mutex::new(Vec::new()));
    let options = Options::new().input_handler(Pick(Arc::clone(&shown)));
    let mut client = Client::connect_stdio_with(cmd, config, options).expect("connect");
    assert_eq!(client.era(), Era::Legacy);

    // Hidden: the tool requires a task, which the plain call follows behind one result.
    let tools = client.list_tools().expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "simulate-research-query"));
    let report = client
        .call_tool("simulate-research-query", json!({"topic": "rust"}))
        .expect("the research report");
    assert!(
        report.text().contains("Research Report: rust"),
        "{}",
        report.text()
    );

    // Explicit, with a clarification asked through the open tasks/result.
    let call = client
        .start_task(
            CallRequest::call_tool(
                "simulate-research-query",
                json!({"topic": "python", "ambiguous": true}),
            )
            .as_task(Some(Duration::from_secs(120))),
        )
        .expect("start");
    let (events, out) = follow(&mut client, call);
    let task_id = match &events[0] {
        Event::TaskCreated { task, .. } => task.task_id.clone(),
        other => panic!("{other:?}"),
    };
    let messages: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::TaskStatus { task, .. } => task.status_message.clone(),
            _ => None,
        })
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("...")),
        "stage messages seen while polling: {messages:?}"
    );
    let text = out.tool_result().unwrap().text();
    assert!(text.contains("Research Report: python"), "{text}");
    let asked = shown.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("python"), "{asked:?}");
    assert!(
        messages
            .iter()
            .any(|m| m.contains("Requesting clarification")),
        "{messages:?}"
    );
    assert!(
        text.contains("programming"),
        "the picked interpretation: {text}"
    );

    // Cancelled: tasks/cancel reaches the server, as tasks/list then shows.
    let call = client
        .start_task(
            CallRequest::call_tool("simulate-research-query", json!({"topic": "go"})).as_task(None),
        )
        .expect("start");
    let created = client.next_task_event(Some(call), Duration::from_secs(10));
    let cancelled_id = match created {
        Some(Event::TaskCreated { task, .. }) => task.task_id,
        other => panic!("{other:?}"),
    };
    client.cancel_task(call).expect("cancel");
    assert!(client.task_result(call).is_err());
    let listed = client.list_tasks().expect("tasks/list");
    let status_of = |id: &str| listed.iter().find(|t| t.task_id == id).map(|t| t.status);
    assert_eq!(
        status_of(&task_id),
        Some(TaskStatus::Completed),
        "{listed:?}"
    );
    // The list is read right after the cancel was sent: the server may not have
    // applied it yet, but it never finished the work in that time.
    assert!(
        matches!(
            status_of(&cancelled_id),
            Some(TaskStatus::Cancelled | TaskStatus::Working)
        ),
        "{listed:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    let listed = client.list_tasks().expect("tasks/list");
    assert_eq!(
        listed
            .iter()
            .find(|t| t.task_id == cancelled_id)
            .map(|t| t.status),
        Some(TaskStatus::Cancelled),
        "{listed:?}"
    );
    client.close();
}
