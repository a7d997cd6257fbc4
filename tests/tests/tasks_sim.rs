//! Simulations on the fake clock for tasks: the 2025-11-25 core feature
//! (task-augmented `tools/call`, `tasks/get`, `tasks/result`, `tasks/list`,
//! `tasks/cancel`, `notifications/tasks/status`) and the 2026-07-28
//! `io.modelcontextprotocol/tasks` extension (`resultType: "task"`, `tasks/get` with the
//! payload inlined, `tasks/update`, `tasks/cancel`, `notifications/tasks`). Every wait is
//! a deadline of the machine: the clock jumps, nothing sleeps.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::Limits;
use mcp_proto::client::{
    AcceptDefaults, CallError, CallId, CallRequest, ClientConfig, Event, MAX_POLL_INTERVAL, Task,
    TaskProblem, TaskStatus,
};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::{Era, EraMode};
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

const EXT: &str = "io.modelcontextprotocol/tasks";

fn answer(m: &Value, result: Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":result}).to_string()
}

fn error(m: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"error":{"code":code,"message":message}}).to_string()
}

fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc":"2.0","method":method,"params":params}).to_string()
}

/// Handshake answers: `initialize` with `legacy_caps`, or `server/discover` advertising
/// the extension.
fn handshake(m: &Value, legacy_caps: &Value) -> Option<Vec<String>> {
    match m["method"].as_str()? {
        "server/discover" => Some(vec![answer(
            m,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                "capabilities":{"tools":{},"extensions":{EXT:{}}}}),
        )]),
        "initialize" => Some(vec![answer(
            m,
            json!({"protocolVersion":"2025-11-25","capabilities":legacy_caps,
                "serverInfo":{"name":"s","version":"1"}}),
        )]),
        "notifications/initialized" => Some(Vec::new()),
        _ => None,
    }
}

fn legacy_caps() -> Value {
    json!({"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}})
}

/// A legacy task record.
fn legacy_task(id: &str, status: &str, poll: u64) -> Value {
    json!({"taskId":id,"status":status,"createdAt":"2025-12-01T09:00:00Z",
        "lastUpdatedAt":"2025-12-01T09:00:00Z","ttl":60000,"pollInterval":poll})
}

/// A 2026 task record (without `resultType`).
fn modern_task(id: &str, status: &str, poll: Option<u64>) -> Value {
    let mut t = json!({"taskId":id,"status":status,"createdAt":"2026-08-01T12:00:00Z",
        "lastUpdatedAt":"2026-08-01T12:00:00Z","ttlMs":600000});
    if let Some(p) = poll {
        t["pollIntervalMs"] = json!(p);
    }
    t
}

fn with(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

type Script = Box<dyn FnMut(&Value) -> Vec<String>>;

/// A server: the handshake, then `script` for everything else.
fn sim(
    config: ClientConfig,
    caps: Value,
    mut script: impl FnMut(&Value) -> Vec<String> + 'static,
) -> Sim {
    let script: Script = Box::new(move |m: &Value| {
        if let Some(out) = handshake(m, &caps) {
            return out;
        }
        script(m)
    });
    let mut sim = Sim::new(config, Scripted::new(script));
    sim.connect();
    sim
}

fn legacy() -> ClientConfig {
    ClientConfig::new("tasks-sim", "1.0").era_mode(EraMode::Legacy)
}

fn modern(caps: ClientCapabilities) -> ClientConfig {
    ClientConfig::new("tasks-sim", "1.0")
        .era_mode(EraMode::Modern)
        .capabilities(caps)
}

fn start(sim: &mut Sim, request: CallRequest) -> CallId {
    sim.client.call(sim.now, request).expect("call")
}

fn finish(sim: &mut Sim, id: CallId) -> Result<mcp_proto::client::CallOutput, CallError> {
    sim.run_until(|s| s.completion(id).is_some());
    sim.completion(id).unwrap()
}

/// The times at which the client sent `method`.
fn times(sim: &Sim, method: &str) -> Vec<Instant> {
    sim.sent
        .iter()
        .zip(&sim.sent_at)
        .filter(|(m, _)| m["method"] == method)
        .map(|(_, t)| *t)
        .collect()
}

fn spacing(at: &[Instant]) -> Vec<Duration> {
    at.windows(2)
        .map(|w| w[1].saturating_duration_since(w[0]))
        .collect()
}

fn statuses(sim: &Sim) -> Vec<(Option<CallId>, TaskStatus)> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::TaskStatus { call, task } => Some((*call, task.status)),
            _ => None,
        })
        .collect()
}

fn created(sim: &Sim) -> Vec<Task> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::TaskCreated { task, .. } => Some(task.clone()),
            _ => None,
        })
        .collect()
}

fn declares_ext(m: &Value) -> bool {
    m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
        .get(EXT)
        .is_some()
}

// ----- 2025-11-25 -----------------------------------------------------------------------

#[test]
fn legacy_task_is_polled_at_the_server_interval_then_its_result_fetched() {
    let polls = Rc::new(RefCell::new(0));
    let p = polls.clone();
    let mut sim = sim(legacy(), legacy_caps(), move |m| {
        match m["method"].as_str() {
            Some("tools/call") => vec![answer(
                m,
                json!({"task": legacy_task("t1", "working", 2500)}),
            )],
            Some("tasks/get") => {
                *p.borrow_mut() += 1;
                let status = if *p.borrow() < 3 {
                    "working"
                } else {
                    "completed"
                };
                vec![answer(m, legacy_task("t1", status, 2500))]
            }
            Some("tasks/result") => vec![answer(
                m,
                json!({"content":[{"type":"text","text":"done"}],"isError":false,
                "_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}),
            )],
            _ => Vec::new(),
        }
    });
    let id = start(
        &mut sim,
        CallRequest::call_tool("slow", json!({})).as_task(Some(Duration::from_secs(60))),
    );
    let out = finish(&mut sim, id).expect("the task's result");
    assert_eq!(out.tool_result().unwrap().text(), "done");
    let call = sim.sent_with_method("tools/call")[0];
    assert_eq!(call["params"]["task"], json!({"ttl": 60000}));
    let gets = times(&sim, "tasks/get");
    assert_eq!(gets.len(), 3);
    let first = times(&sim, "tools/call")[0];
    assert_eq!(
        gets[0].saturating_duration_since(first),
        Duration::from_millis(2500)
    );
    assert_eq!(spacing(&gets), vec![Duration::from_millis(2500); 2]);
    assert_eq!(sim.sent_with_method("tasks/result").len(), 1);
    assert_eq!(
        sim.sent_with_method("tasks/get")[0]["params"],
        json!({"taskId":"t1"})
    );
    assert_eq!(created(&sim)[0].task_id, "t1");
    assert_eq!(statuses(&sim), vec![(Some(id), TaskStatus::Completed)]);
}

#[test]
fn legacy_input_required_opens_tasks_result_where_the_elicitation_comes() {
    let mut caps = ClientCapabilities::with_elicitation();
    caps.elicitation_url = false;
    let config = legacy().capabilities(caps);
    let mut sim = sim(config, legacy_caps(), move |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            json!({"task": legacy_task("t2", "working", 1000)}),
        )],
        Some("tasks/get") => vec![answer(m, legacy_task("t2", "input_required", 1000))],
        Some("tasks/result") => {
            let id = m["id"].clone();
            let elicit = json!({"jsonrpc":"2.0","id":"s-41","method":"elicitation/create",
                "params":{"mode":"form","message":"Deploy?","requestedSchema":{"type":"object",
                    "properties":{"approve":{"type":"boolean","default":true}}},
                "_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t2"}}}});
            // The final answer follows once the client answered (see below).
            RESULT_ID.with(|r| *r.borrow_mut() = Some(id));
            vec![elicit.to_string()]
        }
        None if m["id"] == "s-41" => {
            let id = RESULT_ID.with(|r| r.borrow_mut().take()).unwrap();
            let status = notification(
                "notifications/tasks/status",
                legacy_task("t2", "working", 1000),
            );
            vec![
                status,
                json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"deployed"}]}})
                    .to_string(),
            ]
        }
        _ => Vec::new(),
    });
    sim.handler = Some(Box::new(AcceptDefaults));
    let id = start(
        &mut sim,
        CallRequest::call_tool("deploy", json!({})).as_task(None),
    );
    let out = finish(&mut sim, id).expect("result");
    assert_eq!(out.tool_result().unwrap().text(), "deployed");
    let asked = sim.events.iter().find_map(|e| match e {
        Event::InputRequested { call, .. } => Some(*call),
        _ => None,
    });
    assert_eq!(asked, Some(Some(id)), "the elicitation is tied to the call");
    let reply = sim.sent.iter().find(|m| m["id"] == "s-41").unwrap();
    assert_eq!(reply["result"]["action"], "accept");
    assert_eq!(
        reply["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        "t2"
    );
    assert_eq!(
        sim.sent_with_method("tasks/result").len(),
        1,
        "one open at a time"
    );
    assert!(statuses(&sim).contains(&(Some(id), TaskStatus::InputRequired)));
}

thread_local! {
    static RESULT_ID: RefCell<Option<Value>> = const { RefCell::new(None) };
}

#[test]
fn legacy_failed_task_reports_the_error_of_tasks_result() {
    let mut sim = sim(legacy(), legacy_caps(), |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            json!({"task": legacy_task("t3", "working", 500)}),
        )],
        Some("tasks/get") => vec![answer(
            m,
            with(
                legacy_task("t3", "failed", 500),
                json!({"statusMessage":"boom"}),
            ),
        )],
        Some("tasks/result") => vec![error(m, -32603, "the tool crashed")],
        _ => Vec::new(),
    });
    let id = start(
        &mut sim,
        CallRequest::call_tool("x", json!({})).as_task(None),
    );
    let err = finish(&mut sim, id).unwrap_err();
    assert_eq!(err.code(), Some(-32603));
    sim.step();
    assert!(
        sim.sent_with_method("tasks/cancel").is_empty(),
        "the task failed: nothing to cancel"
    );
    let seen = sim.events.iter().find_map(|e| match e {
        Event::TaskStatus { task, .. } => task.status_message.clone(),
        _ => None,
    });
    assert_eq!(seen.as_deref(), Some("boom"));
}

#[test]
fn legacy_status_notification_moves_the_task_without_waiting_for_a_poll() {
    let mut sim = sim(legacy(), legacy_caps(), |m| match m["method"].as_str() {
        Some("tools/call") => vec![
            answer(m, json!({"task": legacy_task("t4", "working", 60_000)})),
            notification(
                "notifications/tasks/status",
                legacy_task("zzz", "working", 10),
            ),
            notification(
                "notifications/tasks/status",
                legacy_task("t4", "completed", 60_000),
            ),
            notification(
                "notifications/tasks/status",
                json!({"taskId":"t4","status":"queued"}),
            ),
        ],
        Some("tasks/result") => vec![answer(m, json!({"content":[]}))],
        _ => Vec::new(),
    });
    let id = start(
        &mut sim,
        CallRequest::call_tool("x", json!({})).as_task(None),
    );
    finish(&mut sim, id).expect("result");
    assert!(
        sim.sent_with_method("tasks/get").is_empty(),
        "no poll was needed"
    );
    assert_eq!(times(&sim, "tasks/result"), times(&sim, "tools/call"));
    let st = statuses(&sim);
    assert!(
        st.contains(&(None, TaskStatus::Working)),
        "an untracked task: {st:?}"
    );
    assert!(st.contains(&(Some(id), TaskStatus::Completed)));
    assert!(sim.events.iter().any(|e| matches!(e,
        Event::PeerError(mcp_proto::client::PeerError::MalformedNotification { method, .. })
            if method == "notifications/tasks/status")));
}

#[test]
fn legacy_cancel_sends_tasks_cancel_and_stops_polling() {
    let mut sim = sim(legacy(), legacy_caps(), |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            json!({"task": legacy_task("t5", "working", 1000)}),
        )],
        Some("tasks/get") => vec![answer(m, legacy_task("t5", "working", 1000))],
        Some("tasks/cancel") => vec![answer(m, legacy_task("t5", "cancelled", 1000))],
        _ => Vec::new(),
    });
    let id = start(
        &mut sim,
        CallRequest::call_tool("x", json!({})).as_task(None),
    );
    sim.run_until(|s| !s.sent_with_method("tasks/get").is_empty());
    sim.step();
    sim.client.cancel(sim.now, id).unwrap();
    sim.step();
    assert!(matches!(
        sim.completion(id),
        Some(Err(CallError::Cancelled))
    ));
    let cancel = sim.sent_with_method("tasks/cancel");
    assert_eq!(cancel.len(), 1);
    assert_eq!(cancel[0]["params"]["taskId"], "t5");
    // The in-flight poll may be cancelled; the task itself never by notification.
    assert!(
        sim.sent_with_method("notifications/cancelled")
            .iter()
            .all(|n| n["params"]["requestId"] != cancel[0]["id"])
    );
    let polls = sim.sent_with_method("tasks/get").len();
    sim.advance(Duration::from_secs(10));
    sim.step();
    assert_eq!(sim.sent_with_method("tasks/get").len(), polls);
    assert!(
        !sim.events.iter().any(|e| matches!(e, Event::PeerError(_))),
        "the answer to tasks/cancel is dropped quietly: {:?}",
        sim.events
    );
}

#[test]
fn legacy_task_cancelled_by_the_server_ends_the_call() {
    let mut sim = sim(legacy(), legacy_caps(), |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            json!({"task": legacy_task("t6", "working", 1000)}),
        )],
        Some("tasks/get") => vec![answer(m, legacy_task("t6", "cancelled", 1000))],
        _ => Vec::new(),
    });
    let id = start(
        &mut sim,
        CallRequest::call_tool("x", json!({})).as_task(None),
    );
    let err = finish(&mut sim, id).unwrap_err();
    assert_eq!(
        err,
        CallError::TaskCancelled {
            task_id: "t6".into()
        }
    );
    assert!(sim.sent_with_method("tasks/result").is_empty());
}

#[test]
fn legacy_tasks_list_and_one_off_requests() {
    let mut sim = sim(legacy(), legacy_caps(), |m| match m["method"].as_str() {
        Some("tasks/list") if m["params"].get("cursor").is_none() => vec![answer(
            m,
            json!({"tasks":[legacy_task("a", "working", 1)],"nextCursor":"p2"}),
        )],
        Some("tasks/list") => vec![answer(
            m,
            json!({"tasks":[legacy_task("b", "completed", 1)]}),
        )],
        Some("tasks/get") if m["params"]["taskId"] == "a" => {
            vec![answer(m, legacy_task("a", "working", 1))]
        }
        Some("tasks/get" | "tasks/result" | "tasks/cancel") => {
            vec![error(m, -32602, "Failed to retrieve task: Task not found")]
        }
        _ => Vec::new(),
    });
    let out = sim.call(CallRequest::list_tasks()).unwrap();
    let tasks = out.tasks().unwrap();
    assert_eq!(out.pages, 2);
    let ids: Vec<_> = tasks
        .iter()
        .map(|t| (t.task_id.as_str(), t.status))
        .collect();
    assert_eq!(
        ids,
        [("a", TaskStatus::Working), ("b", TaskStatus::Completed)]
    );
    let a = sim.call(CallRequest::task_status("a")).unwrap();
    assert_eq!(a.task(Era::Legacy).unwrap().status, TaskStatus::Working);
    for request in [
        CallRequest::task_status("nope"),
        CallRequest::task_result("nope"),
        CallRequest::cancel_task("nope"),
    ] {
        assert_eq!(sim.call(request).unwrap_err().code(), Some(-32602));
    }
    let update = sim.call(CallRequest::new("tasks/update", json!({"taskId":"a"})));
    assert!(matches!(update, Err(CallError::NotInVersion { .. })));
}

#[test]
fn legacy_plain_call_to_a_task_required_tool_is_augmented() {
    let mut sim = sim(legacy(), legacy_caps(), |m| match m["method"].as_str() {
        Some("tools/list") => vec![answer(
            m,
            json!({"tools":[
                {"name":"must","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},
                {"name":"may","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}},
                {"name":"never","inputSchema":{"type":"object"}}]}),
        )],
        Some("tools/call") if m["params"].get("task").is_some() => {
            vec![answer(
                m,
                json!({"task": legacy_task("t7", "completed", 100)}),
            )]
        }
        Some("tools/call") => vec![answer(
            m,
            json!({"content":[{"type":"text","text":"plain"}]}),
        )],
        Some("tasks/result") => vec![answer(
            m,
            json!({"content":[{"type":"text","text":"tasked"}]}),
        )],
        _ => Vec::new(),
    });
    sim.call(CallRequest::list_tools()).unwrap();
    let out = sim.call(CallRequest::call_tool("must", json!({}))).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "tasked");
    let out = sim.call(CallRequest::call_tool("may", json!({}))).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "plain");
    let asked = CallRequest::call_tool("may", json!({})).as_task(None);
    assert_eq!(
        sim.call(asked).unwrap().tool_result().unwrap().text(),
        "tasked"
    );
    // A tool listed without taskSupport forbids tasks: never augmented, even when asked.
    let asked = CallRequest::call_tool("never", json!({})).as_task(None);
    assert_eq!(
        sim.call(asked).unwrap().tool_result().unwrap().text(),
        "plain"
    );
}

#[test]
fn legacy_server_without_the_capability_gets_a_plain_call() {
    let mut sim = sim(legacy(), json!({"tools":{}}), |m| {
        match m["method"].as_str() {
            Some("tools/call") => vec![answer(m, json!({"content":[],"task":{"taskId":"x"}}))],
            _ => Vec::new(),
        }
    });
    let out = sim
        .call(CallRequest::call_tool("x", json!({})).as_task(None))
        .unwrap();
    assert!(out.result.get().contains("content"));
    assert!(
        sim.sent_with_method("tools/call")[0]["params"]
            .get("task")
            .is_none()
    );
    assert!(created(&sim).is_empty());
}

// ----- 2026-07-28 extension -------------------------------------------------------------

/// A task's result as a server wrote it (keys out of order, spaces).
const VERBATIM: &str = r#"{"isError": false, "content": [{"type":"text","text":"passed"}], "_meta": {"z": 1, "a": 2}}"#;

#[test]
fn modern_plain_call_hides_a_task_polled_at_its_interval() {
    let polls = Rc::new(RefCell::new(0));
    let p = polls.clone();
    let config = modern(ClientCapabilities::none().with_tasks());
    let mut sim = sim(config, Value::Null, move |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            with(
                json!({"resultType":"task"}),
                modern_task("T", "working", Some(3000)),
            ),
        )],
        Some("tasks/get") => {
            *p.borrow_mut() += 1;
            let n = *p.borrow();
            let t = match n {
                1 => modern_task("T", "working", Some(3000)),
                2 => with(
                    modern_task("T", "working", Some(3000)),
                    json!({"statusMessage":"compiling"}),
                ),
                _ => {
                    // Written out: the result is passed on as written, its key order and
                    // spacing kept.
                    let head = with(
                        json!({"resultType":"complete"}),
                        modern_task("T", "completed", Some(3000)),
                    );
                    let head = head.to_string();
                    let record = format!("{},\"result\":{VERBATIM}}}", &head[..head.len() - 1]);
                    return vec![format!(
                        r#"{{"jsonrpc":"2.0","id":{},"result":{record}}}"#,
                        m["id"]
                    )];
                }
            };
            vec![answer(m, with(json!({"resultType":"complete"}), t))]
        }
        _ => Vec::new(),
    });
    let out = sim
        .call(CallRequest::call_tool("run_pipeline", json!({})))
        .unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "passed");
    assert_eq!(out.result.get(), VERBATIM);
    let gets = times(&sim, "tasks/get");
    assert_eq!(gets.len(), 3);
    assert_eq!(
        gets[0].saturating_duration_since(times(&sim, "tools/call")[0]),
        Duration::from_millis(3000)
    );
    assert_eq!(spacing(&gets), vec![Duration::from_millis(3000); 2]);
    for m in sim
        .sent_with_method("tools/call")
        .into_iter()
        .chain(sim.sent_with_method("tasks/get"))
    {
        assert!(declares_ext(m), "extension declared on {m}");
    }
    assert_eq!(
        statuses(&sim),
        vec![
            (Some(CallId::from_raw(0)), TaskStatus::Working),
            (Some(CallId::from_raw(0)), TaskStatus::Completed)
        ],
        "the message change, then the end"
    );
    assert!(sim.sent_with_method("tasks/result").is_empty());
}

#[test]
fn modern_without_a_poll_interval_the_client_backs_off() {
    let config = modern(ClientCapabilities::none());
    let polls = Rc::new(RefCell::new(0));
    let p = polls.clone();
    let mut sim = sim(config, Value::Null, move |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            with(
                json!({"resultType":"task"}),
                modern_task("B", "working", None),
            ),
        )],
        Some("tasks/get") => {
            *p.borrow_mut() += 1;
            let t = if *p.borrow() < 4 {
                modern_task("B", "working", None)
            } else {
                with(
                    modern_task("B", "completed", None),
                    json!({"result":{"content":[]}}),
                )
            };
            vec![answer(m, with(json!({"resultType":"complete"}), t))]
        }
        _ => Vec::new(),
    });
    // Asked per request: the config does not declare the extension.
    let id = start(
        &mut sim,
        CallRequest::call_tool("x", json!({})).as_task(None),
    );
    finish(&mut sim, id).unwrap();
    assert!(declares_ext(sim.sent_with_method("tools/call")[0]));
    let gets = times(&sim, "tasks/get");
    let secs: Vec<u64> = spacing(&gets).iter().map(Duration::as_secs).collect();
    assert_eq!(secs, [2, 4, 8], "1 s, then doubling while nothing changes");
}

#[test]
fn modern_task_without_declaring_the_extension_fails_the_call() {
    let mut sim = sim(
        modern(ClientCapabilities::none()),
        Value::Null,
        |m| match m["method"].as_str() {
            Some("tools/call" | "prompts/get") => vec![answer(
                m,
                with(
                    json!({"resultType":"task"}),
                    modern_task("T", "working", Some(10)),
                ),
            )],
            _ => Vec::new(),
        },
    );
    let err = sim
        .call(CallRequest::call_tool("x", json!({})))
        .unwrap_err();
    assert_eq!(
        err,
        CallError::Task(TaskProblem::NotOffered("tools/call".into()))
    );
    assert!(!declares_ext(sim.sent_with_method("tools/call")[0]));
    // Declared, but on a method that cannot become a task.
    let err = sim
        .call(CallRequest::get_prompt("p", serde_json::Map::new()).as_task(None))
        .unwrap_err();
    assert_eq!(
        err,
        CallError::Task(TaskProblem::NotOffered("prompts/get".into()))
    );
    assert!(sim.sent_with_method("tasks/get").is_empty());
}

#[test]
fn modern_input_is_answered_with_tasks_update_once_per_key() {
    let mut caps = ClientCapabilities::with_elicitation().with_tasks();
    caps.elicitation_url = false;
    let polls = Rc::new(RefCell::new(0));
    let p = polls.clone();
    let ask = json!({"approve":{"method":"elicitation/create","params":{"mode":"form",
        "message":"Deploy?","requestedSchema":{"type":"object",
        "properties":{"ok":{"type":"boolean","default":true}}}}}});
    let mut sim = sim(modern(caps), Value::Null, move |m| {
        match m["method"].as_str() {
            Some("tools/call") => vec![answer(
                m,
                with(
                    json!({"resultType":"task"}),
                    modern_task("U", "working", Some(1000)),
                ),
            )],
            Some("tasks/get") => {
                *p.borrow_mut() += 1;
                let t = match *p.borrow() {
                    // The first snapshot asks; the second is stale (before the update applied).
                    1 | 2 => with(
                        modern_task("U", "input_required", Some(1000)),
                        json!({"inputRequests": ask}),
                    ),
                    _ => with(
                        modern_task("U", "completed", Some(1000)),
                        json!({"result":{"content":[{"type":"text","text":"ok"}]}}),
                    ),
                };
                vec![answer(m, with(json!({"resultType":"complete"}), t))]
            }
            Some("tasks/update") => vec![answer(m, json!({"resultType":"complete"}))],
            _ => Vec::new(),
        }
    });
    sim.handler = Some(Box::new(AcceptDefaults));
    let id = start(&mut sim, CallRequest::call_tool("deploy", json!({})));
    let out = finish(&mut sim, id).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "ok");
    let asked = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::InputRequested { call: Some(c), .. } if *c == id))
        .count();
    assert_eq!(asked, 1, "a key is presented once");
    let updates = sim.sent_with_method("tasks/update");
    assert_eq!(updates.len(), 1, "a key is answered once");
    assert_eq!(updates[0]["params"]["taskId"], "U");
    assert_eq!(
        updates[0]["params"]["inputResponses"]["approve"]["action"],
        "accept"
    );
    assert_eq!(
        updates[0]["params"]["inputResponses"]["approve"]["content"]["ok"],
        true
    );
    assert!(declares_ext(updates[0]));
    // The update went out as soon as the answer was there, not at the next poll.
    assert_eq!(times(&sim, "tasks/update")[0], times(&sim, "tasks/get")[0]);
}

/// A task that asks for fresh input on every snapshot is held to
/// `Limits::max_input_rounds` rounds, as a call's own `input_required` rounds are (it was
/// bounded only by the count of input requests, 160 by default, or its polls).
#[test]
fn modern_task_input_rounds_are_bounded() {
    let mut caps = ClientCapabilities::with_elicitation().with_tasks();
    caps.elicitation_url = false;
    let polls = Rc::new(RefCell::new(0));
    let p = polls.clone();
    let mut sim = sim(modern(caps), Value::Null, move |m| {
        match m["method"].as_str() {
            Some("tools/call") => vec![answer(
                m,
                with(
                    json!({"resultType":"task"}),
                    modern_task("L", "working", Some(100)),
                ),
            )],
            Some("tasks/get") => {
                *p.borrow_mut() += 1;
                let key = format!("q{}", *p.borrow());
                let ask = json!({key: {"method":"elicitation/create","params":{"mode":"form",
                    "message":"Again?","requestedSchema":{"type":"object",
                    "properties":{"ok":{"type":"boolean","default":true}}}}}});
                let t = with(
                    modern_task("L", "input_required", Some(100)),
                    json!({"inputRequests": ask}),
                );
                vec![answer(m, with(json!({"resultType":"complete"}), t))]
            }
            Some("tasks/update") => vec![answer(m, json!({"resultType":"complete"}))],
            Some("tasks/cancel") => vec![answer(
                m,
                with(
                    json!({"resultType":"complete"}),
                    modern_task("L", "cancelled", None),
                ),
            )],
            _ => Vec::new(),
        }
    });
    sim.handler = Some(Box::new(AcceptDefaults));
    let id = start(&mut sim, CallRequest::call_tool("loop", json!({})));
    let err = finish(&mut sim, id).unwrap_err();
    let rounds = Limits::default().max_input_rounds;
    assert_eq!(err, CallError::TooManyRounds(rounds));
    assert_eq!(
        sim.sent_with_method("tasks/update").len(),
        rounds as usize,
        "every allowed round answered, none after"
    );
}

#[test]
fn modern_refused_task_input_cancels_the_task() {
    let mut caps = ClientCapabilities::none().with_tasks();
    caps.sampling = true;
    let mut sim = sim(modern(caps), Value::Null, |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            with(
                json!({"resultType":"task"}),
                modern_task("R", "working", Some(100)),
            ),
        )],
        Some("tasks/get") => vec![answer(
            m,
            with(
                with(
                    json!({"resultType":"complete"}),
                    modern_task("R", "input_required", Some(100)),
                ),
                json!({"inputRequests":{"s":{"method":"sampling/createMessage","params":{
                    "messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}}}),
            ),
        )],
        Some("tasks/cancel") => vec![answer(m, json!({"resultType":"complete"}))],
        _ => Vec::new(),
    });
    sim.handler = Some(Box::new(AcceptDefaults)); // refuses sampling
    let id = start(&mut sim, CallRequest::call_tool("x", json!({})));
    let err = finish(&mut sim, id).unwrap_err();
    assert!(matches!(err, CallError::InputRefused(_)), "{err:?}");
    sim.step();
    assert_eq!(sim.sent_with_method("tasks/cancel").len(), 1);
}

#[test]
fn modern_failed_and_cancelled_tasks() {
    let mut sim = sim(
        modern(ClientCapabilities::none().with_tasks()),
        Value::Null,
        |m| {
            let name = m["params"]["name"].as_str().unwrap_or("").to_owned();
            match m["method"].as_str() {
                Some("tools/call") => vec![answer(
                    m,
                    with(
                        json!({"resultType":"task"}),
                        modern_task(&name, "working", Some(100)),
                    ),
                )],
                Some("tasks/get") => {
                    let id = m["params"]["taskId"].as_str().unwrap();
                    let t = match id {
                        "fail" => with(
                            modern_task(id, "failed", None),
                            json!({"error":{"code":-32000,"message":"disk full"}}),
                        ),
                        "stop" => modern_task(id, "cancelled", None),
                        _ => with(
                            modern_task(id, "completed", None),
                            json!({"result":{"content":[],"isError":true}}),
                        ),
                    };
                    vec![answer(m, with(json!({"resultType":"complete"}), t))]
                }
                _ => Vec::new(),
            }
        },
    );
    let err = sim
        .call(CallRequest::call_tool("fail", json!({})))
        .unwrap_err();
    assert_eq!(err.code(), Some(-32000));
    let err = sim
        .call(CallRequest::call_tool("stop", json!({})))
        .unwrap_err();
    assert_eq!(
        err,
        CallError::TaskCancelled {
            task_id: "stop".into()
        }
    );
    // isError:true is a completed task in the extension.
    let out = sim
        .call(CallRequest::call_tool("iserror", json!({})))
        .unwrap();
    assert_eq!(out.tool_result().unwrap().is_error, Some(true));
}

#[test]
fn modern_cancel_sends_tasks_cancel_with_the_extension_declared() {
    let mut sim = sim(
        modern(ClientCapabilities::none().with_tasks()),
        Value::Null,
        |m| match m["method"].as_str() {
            Some("tools/call") => vec![answer(
                m,
                with(
                    json!({"resultType":"task"}),
                    modern_task("C", "working", Some(5000)),
                ),
            )],
            Some("tasks/cancel") => vec![answer(m, json!({"resultType":"complete"}))],
            _ => Vec::new(),
        },
    );
    let id = start(&mut sim, CallRequest::call_tool("x", json!({})));
    sim.run_until(|s| !created(s).is_empty());
    assert_eq!(sim.client.task(id).map(|t| t.task_id.as_str()), Some("C"));
    sim.client.cancel(sim.now, id).unwrap();
    sim.step();
    sim.step();
    assert!(matches!(
        sim.completion(id),
        Some(Err(CallError::Cancelled))
    ));
    let cancel = sim.sent_with_method("tasks/cancel");
    assert_eq!(cancel.len(), 1);
    assert_eq!(cancel[0]["params"]["taskId"], "C");
    assert!(declares_ext(cancel[0]));
    assert!(sim.sent_with_method("notifications/cancelled").is_empty());
    assert!(sim.client.task(id).is_none());
    assert!(!sim.events.iter().any(|e| matches!(e, Event::PeerError(_))));
}

#[test]
fn modern_pushed_terminal_state_ends_the_call_without_a_poll() {
    let mut sim = sim(
        modern(ClientCapabilities::none().with_tasks()),
        Value::Null,
        |m| match m["method"].as_str() {
            Some("tools/call") => vec![
                answer(
                    m,
                    with(
                        json!({"resultType":"task"}),
                        modern_task("P", "working", Some(60_000)),
                    ),
                ),
                notification(
                    "notifications/tasks",
                    with(
                        modern_task("P", "completed", Some(60_000)),
                        json!({"result":{"content":[{"type":"text","text":"pushed"}]}}),
                    ),
                ),
            ],
            _ => Vec::new(),
        },
    );
    let out = sim.call(CallRequest::call_tool("x", json!({}))).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "pushed");
    assert!(sim.sent_with_method("tasks/get").is_empty());
}

#[test]
fn modern_hostile_task_records_fail_the_call_by_name() {
    let long = "x".repeat(300);
    let l = long.clone();
    let mut sim = sim(
        modern(ClientCapabilities::none().with_tasks()),
        Value::Null,
        move |m| {
            let name = m["params"]["name"].as_str().unwrap_or("").to_owned();
            let id = m["params"]["taskId"].as_str().unwrap_or("").to_owned();
            let created = |task: &str| {
                vec![answer(
                    m,
                    with(
                        json!({"resultType":"task"}),
                        modern_task(task, "working", Some(100)),
                    ),
                )]
            };
            let polled = |t: Value| vec![answer(m, with(json!({"resultType":"complete"}), t))];
            match (m["method"].as_str(), name.as_str(), id.as_str()) {
                (Some("tools/call"), "long", _) => created(&l),
                (Some("tools/call"), "nostatus", _) => {
                    vec![answer(m, json!({"resultType":"task","taskId":"n"}))]
                }
                (Some("tools/call"), other, _) => created(other),
                (Some("tasks/get"), _, "queued") => polled(modern_task("queued", "queued", None)),
                (Some("tasks/get"), _, "other") => {
                    polled(modern_task("someone-else", "working", None))
                }
                (Some("tasks/get"), _, "empty") => polled(modern_task("empty", "completed", None)),
                (Some("tasks/get"), _, "weird") => vec![answer(
                    m,
                    json!({"resultType":"odd","taskId":"weird","status":"working"}),
                )],
                (Some("tasks/get"), _, "gone") => vec![error(m, -32602, "Task not found")],
                (Some("tasks/cancel"), _, _) => vec![answer(m, json!({"resultType":"complete"}))],
                _ => Vec::new(),
            }
        },
    );
    let call = |sim: &mut Sim, name: &str| {
        sim.call(CallRequest::call_tool(name, json!({})))
            .unwrap_err()
    };
    assert_eq!(
        call(&mut sim, "long"),
        CallError::Task(TaskProblem::IdTooLong {
            len: 300,
            limit: 256
        })
    );
    assert_eq!(
        call(&mut sim, "nostatus"),
        CallError::Task(TaskProblem::Missing("status"))
    );
    assert_eq!(
        call(&mut sim, "queued"),
        CallError::Task(TaskProblem::UnknownStatus("queued".into()))
    );
    assert!(matches!(
        call(&mut sim, "other"),
        CallError::Task(TaskProblem::WrongTask { .. })
    ));
    assert_eq!(
        call(&mut sim, "empty"),
        CallError::Task(TaskProblem::MissingPayload {
            status: TaskStatus::Completed,
            member: "result"
        })
    );
    assert!(matches!(
        call(&mut sim, "weird"),
        CallError::Task(TaskProblem::Malformed(_))
    ));
    assert_eq!(
        call(&mut sim, "gone").code(),
        Some(-32602),
        "an unknown task id"
    );
    sim.step();
    // Every task that may still run when it became unusable was cancelled (one created
    // without a status too); a task the server does not know, or whose id is too long
    // to keep, is not.
    let cancelled: Vec<&str> = sim
        .sent_with_method("tasks/cancel")
        .iter()
        .map(|m| m["params"]["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(cancelled, ["n", "queued", "other", "weird"]);
    // Methods the extension does not have never reach the wire.
    for request in [CallRequest::list_tasks(), CallRequest::task_result("a")] {
        assert!(matches!(
            sim.call(request),
            Err(CallError::NotInVersion { .. })
        ));
    }
    assert!(sim.sent_with_method("tasks/list").is_empty());
    assert!(sim.sent_with_method("tasks/result").is_empty());
}

#[test]
fn a_task_that_never_ends_is_given_up_after_max_task_polls() {
    let mut limits = Limits::default();
    limits.max_task_polls = 3;
    let config = modern(ClientCapabilities::none().with_tasks()).limits(limits);
    let mut sim = sim(config, Value::Null, |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            with(
                json!({"resultType":"task"}),
                modern_task("F", "working", Some(0)),
            ),
        )],
        Some("tasks/get") => vec![answer(
            m,
            with(
                json!({"resultType":"complete"}),
                modern_task("F", "working", Some(0)),
            ),
        )],
        _ => Vec::new(),
    });
    let err = sim
        .call(CallRequest::call_tool("x", json!({})))
        .unwrap_err();
    assert_eq!(err, CallError::Task(TaskProblem::TooManyPolls(3)));
    sim.step();
    let gets = times(&sim, "tasks/get");
    assert_eq!(gets.len(), 3);
    assert_eq!(
        spacing(&gets),
        vec![mcp_proto::client::MIN_POLL_INTERVAL; 2],
        "a 0 ms interval is floored"
    );
    assert_eq!(sim.sent_with_method("tasks/cancel").len(), 1);
}

#[test]
fn a_poll_that_is_not_answered_times_out_the_call() {
    let config = modern(ClientCapabilities::none().with_tasks());
    let mut sim = sim(config, Value::Null, |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            with(
                json!({"resultType":"task"}),
                modern_task("S", "working", Some(1000)),
            ),
        )],
        _ => Vec::new(),
    });
    let request = CallRequest::call_tool("x", json!({})).timeout(Duration::from_secs(5));
    let err = sim.call(request).unwrap_err();
    assert_eq!(err, CallError::Timeout(Duration::from_secs(5)));
    sim.step();
    let get = times(&sim, "tasks/get")[0];
    let cancel = sim.sent_with_method("tasks/cancel");
    assert_eq!(cancel.len(), 1, "the task is cancelled too");
    assert_eq!(
        sim.now.saturating_duration_since(get),
        Duration::from_secs(5)
    );
}

// ----- over Streamable HTTP ---------------------------------------------------------------

#[test]
fn over_http_task_requests_carry_the_task_id_in_mcp_name() {
    use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
    let id = "tâche 1";
    let polls = Rc::new(RefCell::new(0));
    let p = polls.clone();
    let result = |req: &SeenRequest, result: Value| {
        Reply::json(
            200,
            &json!({"jsonrpc":"2.0","id":req.body["id"],"result":result}),
        )
    };
    let script = move |req: &SeenRequest| match req.rpc_method() {
        "server/discover" => result(
            req,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                "capabilities":{"tools":{},"extensions":{EXT:{}}}}),
        ),
        "tools/call" if req.body["params"]["name"] == "stop" => result(
            req,
            with(
                json!({"resultType":"task"}),
                modern_task("stop-1", "working", Some(60_000)),
            ),
        ),
        "tools/call" => result(
            req,
            with(
                json!({"resultType":"task"}),
                modern_task(id, "working", Some(500)),
            ),
        ),
        "tasks/get" => {
            *p.borrow_mut() += 1;
            let t = if *p.borrow() < 2 {
                modern_task(id, "working", Some(500))
            } else {
                with(
                    modern_task(id, "completed", None),
                    json!({"result":{"content":[]}}),
                )
            };
            result(req, with(json!({"resultType":"complete"}), t))
        }
        "tasks/cancel" => result(req, json!({"resultType":"complete"})),
        "tools/list" => result(req, json!({"resultType":"complete","tools":[]})),
        other => panic!("unexpected {other}"),
    };
    let config = modern(ClientCapabilities::none().with_tasks());
    let mut sim = HttpSim::new(config, script);
    sim.connect();
    sim.call(CallRequest::call_tool("x", json!({}))).unwrap();
    let gets = sim.with_method("tasks/get");
    assert_eq!(gets.len(), 2);
    for get in &gets {
        assert_eq!(get.header("mcp-method"), Some("tasks/get"));
        let name = get.header("mcp-name").unwrap();
        assert!(
            name.starts_with("=?base64?"),
            "not header-safe, so wrapped: {name}"
        );
        assert_eq!(get.body["params"]["taskId"], id);
        assert!(declares_ext(&get.body));
    }
    let call = sim
        .client
        .call(sim.now, CallRequest::call_tool("stop", json!({})))
        .unwrap();
    sim.run_until(|s| {
        s.events
            .iter()
            .any(|e| matches!(e, Event::TaskCreated { call: c, .. } if *c == call))
    });
    sim.client.cancel(sim.now, call).unwrap();
    sim.run_until(|s| !s.with_method("tasks/cancel").is_empty());
    let cancel = sim.with_method("tasks/cancel")[0];
    assert_eq!(cancel.header("mcp-name"), Some("stop-1"));
    assert!(declares_ext(&cancel.body));
}

#[test]
fn over_http_a_failed_poll_is_tried_again_with_backoff() {
    use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
    let polls = Rc::new(RefCell::new(0));
    let p = polls.clone();
    let result = |req: &SeenRequest, result: Value| {
        Reply::json(
            200,
            &json!({"jsonrpc":"2.0","id":req.body["id"],"result":result}),
        )
    };
    let script = move |req: &SeenRequest| match req.rpc_method() {
        "server/discover" => result(
            req,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                "capabilities":{"tools":{},"extensions":{EXT:{}}}}),
        ),
        "tools/list" => result(req, json!({"resultType":"complete","tools":[]})),
        "tools/call" => result(
            req,
            with(
                json!({"resultType":"task"}),
                modern_task("N", "working", Some(500)),
            ),
        ),
        "tasks/get" => {
            *p.borrow_mut() += 1;
            match *p.borrow() {
                1 => Reply::NetworkError,
                2 | 3 => Reply::json(503, &json!({"error":"busy"})),
                _ => result(
                    req,
                    with(
                        json!({"resultType":"complete"}),
                        with(
                            modern_task("N", "completed", None),
                            json!({"result":{"content":[]}}),
                        ),
                    ),
                ),
            }
        }
        other => panic!("unexpected {other}"),
    };
    let mut sim = HttpSim::new(modern(ClientCapabilities::none().with_tasks()), script);
    sim.connect();
    let start = sim.now;
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("x", json!({})))
        .unwrap();
    sim.run_until(|s| s.completion(id).is_some());
    assert_eq!(
        sim.with_method("tasks/get").len(),
        4,
        "three failures, then the answer"
    );
    assert!(sim.completion(id).unwrap().is_ok());
    // The server's 500 ms; the network error is retried at once on a fresh connection
    // (a poll is a read the pool may repeat); the 503s wait 1 s, then 2 s.
    assert_eq!(
        sim.now.saturating_duration_since(start),
        Duration::from_millis(3500)
    );
    assert!(sim.with_method("tasks/cancel").is_empty());
}

#[test]
fn a_flood_of_status_notifications_is_bounded_like_notifications() {
    let mut limits = Limits::default();
    limits.max_queued_notifications = 2;
    let mut sim = sim(
        legacy().limits(limits),
        legacy_caps(),
        |m| match m["method"].as_str() {
            Some("tools/call") => {
                let mut out: Vec<String> = (0..6)
                    .map(|i| {
                        notification(
                            "notifications/tasks/status",
                            legacy_task(&format!("stranger-{i}"), "working", 1),
                        )
                    })
                    .collect();
                out.push(answer(m, json!({"content":[]})));
                out
            }
            _ => Vec::new(),
        },
    );
    sim.call(CallRequest::call_tool("x", json!({}))).unwrap();
    let kept = statuses(&sim).len();
    assert_eq!(kept, 2);
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, Event::NotificationsDropped { count: 4 }))
    );
}

#[test]
fn modern_listen_for_a_task_id_declares_the_extension_and_its_push_moves_the_call() {
    use mcp_proto::client::ListenFilter;
    let mut sim = sim(
        modern(ClientCapabilities::none()),
        Value::Null,
        |m| match m["method"].as_str() {
            Some("tools/call") => vec![answer(
                m,
                with(
                    json!({"resultType":"task"}),
                    modern_task("L", "working", Some(60_000)),
                ),
            )],
            Some("subscriptions/listen") => {
                let meta = json!({"io.modelcontextprotocol/subscriptionId": m["id"]});
                vec![
                    notification(
                        "notifications/subscriptions/acknowledged",
                        json!({"_meta": meta, "notifications": m["params"]["notifications"]}),
                    ),
                    notification(
                        "notifications/tasks",
                        with(
                            with(
                                modern_task("L", "completed", None),
                                json!({"result":{"content":[{"type":"text","text":"pushed"}]}}),
                            ),
                            json!({"_meta": meta}),
                        ),
                    ),
                ]
            }
            _ => Vec::new(),
        },
    );
    let call = start(
        &mut sim,
        CallRequest::call_tool("x", json!({})).as_task(None),
    );
    sim.run_until(|s| !created(s).is_empty());
    let listen = start(
        &mut sim,
        CallRequest::listen(&ListenFilter::new().task("L")),
    );
    let out = finish(&mut sim, call).unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "pushed");
    let sent = sim.sent_with_method("subscriptions/listen")[0];
    assert!(declares_ext(sent));
    assert_eq!(sent["params"]["notifications"]["taskIds"], json!(["L"]));
    assert!(sim.sent_with_method("tasks/get").is_empty());
    // The push is the subscription's notification too.
    assert!(sim.events.iter().any(|e| matches!(e,
        Event::SubscriptionNotification { subscription, notification, .. }
            if *subscription == listen && notification.method == "notifications/tasks")));
}

/// What the machine makes of each 2026 `tasks/get` vector (`kind: "poll"`), read as the
/// answer to the first poll of a task with the vector's id; later polls complete it.
/// Where the vector is invalid but names a tolerant reading, decision 38 takes it.
#[test]
fn extension_poll_vectors() {
    let vectors = mcp_tests::load_vectors("tasks-extension.json");
    let mut seen = 0;
    for v in vectors["vectors"].as_array().unwrap() {
        let id = v["id"].as_str().unwrap();
        if v["kind"] != "poll" || !id.starts_with("ext-") {
            continue;
        }
        seen += 1;
        let first = v["response"]["result"].clone();
        let task_id = first["taskId"].as_str().unwrap().to_owned();
        let polls = Rc::new(RefCell::new(0));
        let p = polls.clone();
        let mut caps = ClientCapabilities::with_elicitation().with_tasks();
        caps.elicitation_url = false;
        let script = move |m: &Value| match m["method"].as_str() {
            Some("tools/call") => vec![answer(
                m,
                with(
                    json!({"resultType":"task"}),
                    modern_task(&task_id, "working", Some(1000)),
                ),
            )],
            Some("tasks/get") => {
                *p.borrow_mut() += 1;
                if *p.borrow() == 1 {
                    vec![answer(m, first.clone())]
                } else {
                    let done = with(
                        modern_task(&task_id, "completed", None),
                        json!({"result":{"content":[{"type":"text","text":"later"}]}}),
                    );
                    vec![answer(m, with(json!({"resultType":"complete"}), done))]
                }
            }
            Some("tasks/update" | "tasks/cancel") => {
                vec![answer(m, json!({"resultType":"complete"}))]
            }
            _ => Vec::new(),
        };
        let mut sim = sim(modern(caps), Value::Null, script);
        sim.handler = Some(Box::new(mcp_proto::client::DeclineAll));
        let outcome = sim.call(CallRequest::call_tool("t", json!({})));
        let text = |o: &Result<mcp_proto::client::CallOutput, CallError>| {
            o.as_ref().ok().map(|out| out.tool_result().unwrap().text())
        };
        match id {
            // Working, or input the handler declined: polled on to the later end.
            "ext-tasks-get-working"
            | "ext-tasks-get-input-required"
            | "ext-tasks-get-input-required-repeat"
            | "ext-input-required-without-inputrequests" => {
                assert_eq!(text(&outcome).as_deref(), Some("later"), "{id}");
            }
            "ext-tasks-get-completed" => {
                assert_eq!(text(&outcome).as_deref(), Some("Hello, Luca!"), "{id}");
            }
            "ext-tasks-get-completed-iserror" => {
                let out = outcome.expect(id);
                assert_eq!(out.tool_result().unwrap().is_error, Some(true), "{id}");
            }
            // The erratum is read as `complete`: a failed task with its error.
            "ext-tasks-get-failed" | "ext-tasks-get-resulttype-task-erratum" => {
                assert_eq!(outcome.unwrap_err().code(), Some(-32603), "{id}");
            }
            "ext-tasks-get-cancelled" => {
                assert!(
                    matches!(outcome, Err(CallError::TaskCancelled { .. })),
                    "{id}"
                );
            }
            "ext-completed-without-result" | "ext-failed-without-error" => {
                assert!(
                    matches!(
                        outcome,
                        Err(CallError::Task(TaskProblem::MissingPayload { .. }))
                    ),
                    "{id}: {outcome:?}"
                );
            }
            "ext-unknown-status" => {
                assert!(
                    matches!(outcome, Err(CallError::Task(TaskProblem::UnknownStatus(_)))),
                    "{id}: {outcome:?}"
                );
            }
            other => panic!("a poll vector without a reading here: {other}"),
        }
        if id.contains("input-required") && id != "ext-input-required-without-inputrequests" {
            let updates = sim.sent_with_method("tasks/update");
            assert_eq!(updates.len(), 1, "{id}: one answer per key");
            assert_eq!(
                updates[0]["params"]["inputResponses"]["name"]["action"],
                "decline"
            );
        }
    }
    assert_eq!(seen, 12);
}

#[test]
fn a_task_past_its_ttl_is_given_up_and_cancelled() {
    let config = modern(ClientCapabilities::none().with_tasks());
    let record = || {
        let mut t = modern_task("E", "working", Some(1000));
        t["ttlMs"] = json!(2500);
        t
    };
    let mut sim = sim(config, Value::Null, move |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(m, with(json!({"resultType":"task"}), record()))],
        Some("tasks/get") => vec![answer(m, with(json!({"resultType":"complete"}), record()))],
        _ => Vec::new(),
    });
    let start = sim.now;
    let err = sim
        .call(CallRequest::call_tool("x", json!({})))
        .unwrap_err();
    assert_eq!(
        err,
        CallError::Task(TaskProblem::Expired(Duration::from_millis(2500)))
    );
    // Polls at 1 s and 2 s, the last look when the lifetime ends (2.5 s), then given up.
    assert_eq!(
        sim.now.saturating_duration_since(start),
        Duration::from_millis(2500)
    );
    assert_eq!(sim.sent_with_method("tasks/get").len(), 3);
    sim.step();
    assert_eq!(sim.sent_with_method("tasks/cancel").len(), 1);
}

/// A server naming a poll interval of an hour (or of `u64::MAX` milliseconds) does not
/// put the call to sleep for that long: the wait is capped at `MAX_POLL_INTERVAL`, and
/// never runs past the task's `ttl`, which still ends it when due.
#[test]
fn a_huge_poll_interval_is_capped_and_the_ttl_still_ends_the_task() {
    for (era, interval) in [
        (Era::Legacy, json!(3_600_000)),
        (Era::Legacy, json!(u64::MAX)),
        (Era::Modern, json!(3_600_000)),
        (Era::Modern, json!(u64::MAX)),
    ] {
        for ttl in [Some(2000), None] {
            let record = {
                let interval = interval.clone();
                move || {
                    let mut t = match era {
                        Era::Legacy => legacy_task("H", "working", 0),
                        _ => modern_task("H", "working", None),
                    };
                    let (ttl_key, poll_key) = match era {
                        Era::Legacy => ("ttl", "pollInterval"),
                        _ => ("ttlMs", "pollIntervalMs"),
                    };
                    t[poll_key] = interval.clone();
                    t[ttl_key] = ttl.map_or(Value::Null, |ms| json!(ms));
                    t
                }
            };
            let (config, caps) = match era {
                Era::Legacy => (legacy(), legacy_caps()),
                _ => (modern(ClientCapabilities::none().with_tasks()), Value::Null),
            };
            let created = record.clone();
            let mut sim = sim(config, caps, move |m| match (m["method"].as_str(), era) {
                (Some("tools/call"), Era::Legacy) => vec![answer(m, json!({"task": created()}))],
                (Some("tools/call"), _) => {
                    vec![answer(m, with(json!({"resultType":"task"}), created()))]
                }
                (Some("tasks/get"), Era::Legacy) => vec![answer(m, record())],
                (Some("tasks/get"), _) => {
                    vec![answer(m, with(json!({"resultType":"complete"}), record()))]
                }
                _ => Vec::new(),
            });
            let began = sim.now;
            let request = CallRequest::call_tool("x", json!({}));
            let request = if era == Era::Legacy {
                request.as_task(None)
            } else {
                request
            };
            let id = start(&mut sim, request);
            match ttl {
                Some(ms) => {
                    let err = finish(&mut sim, id).unwrap_err();
                    assert_eq!(
                        err,
                        CallError::Task(TaskProblem::Expired(Duration::from_millis(ms))),
                        "{era:?} {interval}"
                    );
                    assert_eq!(
                        sim.now.saturating_duration_since(began),
                        Duration::from_millis(ms),
                        "{era:?} {interval}: given up when its ttl ended"
                    );
                }
                None => {
                    // No lifetime: polled every minute, not every hour.
                    sim.run_until(|s| s.sent_with_method("tasks/get").len() >= 3);
                    let gets = times(&sim, "tasks/get");
                    assert_eq!(
                        spacing(&gets),
                        vec![MAX_POLL_INTERVAL; 2],
                        "{era:?} {interval}"
                    );
                    assert!(sim.completion(id).is_none());
                }
            }
        }
    }
}

#[test]
fn task_runs_of_both_eras_are_recorded_and_replay() {
    use mcp_io::transcript::{Recording, replay};
    for era in [Era::Legacy, Era::Modern] {
        let polls = Rc::new(RefCell::new(0));
        let p = polls.clone();
        let script = move |m: &Value| {
            let legacy = era == Era::Legacy;
            match m["method"].as_str() {
                Some("tools/call") if legacy => {
                    vec![answer(
                        m,
                        json!({"task": legacy_task("R1", "working", 700)}),
                    )]
                }
                Some("tools/call") => vec![answer(
                    m,
                    with(
                        json!({"resultType":"task"}),
                        modern_task("R1", "working", Some(700)),
                    ),
                )],
                Some("tasks/get") => {
                    *p.borrow_mut() += 1;
                    let done = *p.borrow() > 1;
                    if legacy {
                        let s = if done { "completed" } else { "working" };
                        vec![answer(m, legacy_task("R1", s, 700))]
                    } else if done {
                        let t = with(
                            modern_task("R1", "completed", None),
                            json!({"result":{"content":[]}}),
                        );
                        vec![answer(m, with(json!({"resultType":"complete"}), t))]
                    } else {
                        vec![answer(
                            m,
                            with(
                                json!({"resultType":"complete"}),
                                modern_task("R1", "working", Some(700)),
                            ),
                        )]
                    }
                }
                Some("tasks/result") => vec![answer(m, json!({"content":[]}))],
                _ => Vec::new(),
            }
        };
        let config = if era == Era::Legacy {
            legacy()
        } else {
            modern(ClientCapabilities::none())
        };
        let caps = legacy_caps();
        let script: Script =
            Box::new(move |m: &Value| handshake(m, &caps).unwrap_or_else(|| script(m)));
        let mut sim = Sim::new(config, Scripted::new(script));
        sim.client.start_recording();
        sim.connect();
        let request = CallRequest::call_tool("t", json!({})).as_task(Some(Duration::from_secs(9)));
        let id = start(&mut sim, request);
        finish(&mut sim, id).expect("result");
        let mut recording = Recording::new(&[]);
        let mut text = String::new();
        recording.drain(&mut sim.client, &mut |line: &str| {
            text.push_str(line);
            text.push('\n');
        });
        assert!(
            text.contains("\"task\":{\"ttl\""),
            "{era:?}: the ask is recorded"
        );
        let summary = replay(&text).unwrap_or_else(|e| panic!("{era:?}: {e}\n{text}"));
        assert_eq!(summary.transcripts, 1);
    }
}

// ----- against the bundled example server ---------------------------------------------------

#[test]
fn the_example_server_runs_slow_as_a_task_in_both_eras() {
    use mcp_proto::server::example;
    for era in [Era::Legacy, Era::Modern] {
        let config = match era {
            Era::Legacy => legacy(),
            _ => modern(ClientCapabilities::none()),
        };
        let mut sim = Sim::new(config, example::with_tasks());
        sim.connect();
        let request = CallRequest::call_tool("slow", json!({"text": "hi"})).as_task(None);
        let id = start(&mut sim, request);
        let out = finish(&mut sim, id).expect("the task's result");
        assert_eq!(out.tool_result().unwrap().text(), "hi", "{era:?}");
        let task = &created(&sim)[0];
        assert_eq!(task.poll_interval, Some(Duration::from_millis(100)));
        let gets = times(&sim, "tasks/get");
        assert_eq!(gets.len() as u32, example::SLOW_POLLS, "{era:?}");
        assert_eq!(spacing(&gets), vec![Duration::from_millis(100)], "{era:?}");
        // Without asking, the same tool answers at once.
        let plain = sim
            .call(CallRequest::call_tool("slow", json!({"text": "now"})))
            .unwrap();
        assert_eq!(plain.tool_result().unwrap().text(), "now");
        assert_eq!(created(&sim).len(), 1, "{era:?}");
        // Cancelled: the server sees it.
        let id = start(
            &mut sim,
            CallRequest::call_tool("slow", json!({"text": "x"})).as_task(None),
        );
        sim.run_until(|s| created(s).len() == 2);
        let task_id = created(&sim)[1].task_id.clone();
        sim.client.cancel(sim.now, id).unwrap();
        sim.step();
        sim.step();
        match era {
            Era::Legacy => {
                let listed = sim
                    .call(CallRequest::list_tasks())
                    .unwrap()
                    .tasks()
                    .unwrap();
                let status = listed
                    .iter()
                    .find(|t| t.task_id == task_id)
                    .map(|t| t.status);
                assert_eq!(status, Some(TaskStatus::Cancelled));
                assert_eq!(listed.len(), 2);
            }
            _ => {
                let out = sim.call(CallRequest::task_status(&task_id)).unwrap();
                assert_eq!(out.task(Era::Modern).unwrap().status, TaskStatus::Cancelled);
                assert!(declares_ext(
                    sim.sent_with_method("tasks/get").last().unwrap()
                ));
            }
        }
        let err = sim.call(CallRequest::task_status("task-999")).unwrap_err();
        assert_eq!(err.code(), Some(-32602), "{era:?}");
        assert!(
            !sim.events.iter().any(|e| matches!(e, Event::PeerError(_))),
            "{era:?}"
        );
    }
}

#[test]
fn legacy_failed_task_with_an_error_result_delivers_that_result() {
    let mut sim = sim(legacy(), legacy_caps(), |m| match m["method"].as_str() {
        Some("tools/call") => vec![answer(
            m,
            json!({"task": legacy_task("F1", "working", 100)}),
        )],
        Some("tasks/get") => vec![answer(m, legacy_task("F1", "failed", 100))],
        Some("tasks/result") => vec![answer(
            m,
            json!({"content":[{"type":"text","text":"bad input"}],"isError":true}),
        )],
        _ => Vec::new(),
    });
    let out = sim
        .call(CallRequest::call_tool("x", json!({})).as_task(None))
        .expect("the CallToolResult of a failed 2025 task");
    let result = out.tool_result().unwrap();
    assert_eq!(
        (result.is_error, result.text().as_str()),
        (Some(true), "bad input")
    );
}

#[test]
fn modern_mrtr_rounds_then_a_task_whose_keys_are_a_new_namespace() {
    let mut caps = ClientCapabilities::with_elicitation().with_tasks();
    caps.elicitation_url = false;
    let ask = json!({"confirm":{"method":"elicitation/create","params":{"mode":"form",
        "message":"Sure?","requestedSchema":{"type":"object",
        "properties":{"ok":{"type":"boolean","default":true}}}}}});
    let polls = Rc::new(RefCell::new(0));
    let p = polls.clone();
    let a = ask.clone();
    let mut sim = sim(modern(caps), Value::Null, move |m| {
        match m["method"].as_str() {
            Some("tools/call") if m["params"].get("requestState").is_none() => vec![answer(
                m,
                json!({"resultType":"input_required","inputRequests": a,"requestState":"rs1"}),
            )],
            Some("tools/call") => {
                assert_eq!(m["params"]["inputResponses"]["confirm"]["action"], "accept");
                vec![answer(
                    m,
                    with(
                        json!({"resultType":"task"}),
                        modern_task("M", "working", Some(100)),
                    ),
                )]
            }
            Some("tasks/get") => {
                *p.borrow_mut() += 1;
                let t = if *p.borrow() == 1 {
                    with(
                        modern_task("M", "input_required", Some(100)),
                        json!({"inputRequests": a}),
                    )
                } else {
                    with(
                        modern_task("M", "completed", None),
                        json!({"result":{"content":[]}}),
                    )
                };
                vec![answer(m, with(json!({"resultType":"complete"}), t))]
            }
            Some("tasks/update") => vec![answer(m, json!({"resultType":"complete"}))],
            _ => Vec::new(),
        }
    });
    sim.handler = Some(Box::new(AcceptDefaults));
    let out = sim
        .call(CallRequest::call_tool("deploy", json!({})))
        .unwrap();
    assert_eq!(out.rounds, 1, "one MRTR round before the task");
    let asked = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::InputRequested { .. }))
        .count();
    assert_eq!(
        asked, 2,
        "the task's `confirm` is a new request, presented again"
    );
    assert_eq!(sim.sent_with_method("tasks/update").len(), 1);
}

/// A task whose creation record cannot be followed (an unknown status, none, or one of
/// the wrong type) was made by the server and may run: the call fails naming the problem
/// and the task is cancelled, as for an unusable poll. A record without a usable id
/// names nothing to cancel.
#[test]
fn a_task_created_with_an_unusable_record_is_cancelled() {
    let mut legacy_sim = sim(legacy(), legacy_caps(), |m| {
        let name = m["params"]["name"].as_str().unwrap_or("").to_owned();
        match (m["method"].as_str(), name.as_str()) {
            (Some("tools/call"), "queued") => vec![answer(
                m,
                json!({"task": legacy_task("q1", "queued", 1000)}),
            )],
            (Some("tools/call"), "empty") => {
                vec![answer(m, json!({"task": legacy_task("", "working", 1000)}))]
            }
            (Some("tasks/cancel"), _) => vec![answer(m, legacy_task("q1", "cancelled", 1000))],
            _ => Vec::new(),
        }
    });
    let err = legacy_sim
        .call(CallRequest::call_tool("queued", json!({})).as_task(None))
        .unwrap_err();
    assert_eq!(
        err,
        CallError::Task(TaskProblem::UnknownStatus("queued".into()))
    );
    let err = legacy_sim
        .call(CallRequest::call_tool("empty", json!({})).as_task(None))
        .unwrap_err();
    assert_eq!(err, CallError::Task(TaskProblem::EmptyId));
    legacy_sim.step();
    let cancelled: Vec<&str> = legacy_sim
        .sent_with_method("tasks/cancel")
        .iter()
        .map(|m| m["params"]["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(cancelled, ["q1"]);

    let mut modern_sim = sim(
        modern(ClientCapabilities::none().with_tasks()),
        Value::Null,
        |m| {
            let name = m["params"]["name"].as_str().unwrap_or("").to_owned();
            match (m["method"].as_str(), name.as_str()) {
                (Some("tools/call"), "nostatus") => {
                    vec![answer(m, json!({"resultType":"task","taskId":"n1"}))]
                }
                (Some("tools/call"), "numeric") => vec![answer(
                    m,
                    json!({"resultType":"task","taskId":"n2","status":3}),
                )],
                (Some("tools/call"), "noid") => {
                    vec![answer(
                        m,
                        json!({"resultType":"task","taskId":7,"status":"working"}),
                    )]
                }
                (Some("tasks/cancel"), _) => vec![answer(m, json!({"resultType":"complete"}))],
                _ => Vec::new(),
            }
        },
    );
    for (name, problem) in [
        ("nostatus", CallError::Task(TaskProblem::Missing("status"))),
        (
            "numeric",
            CallError::Task(TaskProblem::Malformed("status is not a string".into())),
        ),
        (
            "noid",
            CallError::Task(TaskProblem::Malformed("taskId is not a string".into())),
        ),
    ] {
        let err = modern_sim
            .call(CallRequest::call_tool(name, json!({})))
            .unwrap_err();
        assert_eq!(err, problem, "{name}");
    }
    modern_sim.step();
    let cancelled: Vec<&str> = modern_sim
        .sent_with_method("tasks/cancel")
        .iter()
        .map(|m| m["params"]["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(cancelled, ["n1", "n2"]);
    assert!(
        modern_sim
            .sent_with_method("tasks/cancel")
            .iter()
            .all(|m| declares_ext(m)),
        "a 2026 tasks/cancel declares the extension"
    );
}

/// A task call cancelled (or timed out) before its `CreateTaskResult` arrived: the
/// server made the task all the same (its answer crossed the `notifications/cancelled`,
/// which cannot stop a task). The late answer is dropped as the call is over, and the
/// task it names is cancelled once (even when the answer comes twice), rather than left
/// to run for its ttl; in both eras.
#[test]
fn a_task_made_after_its_call_was_cancelled_is_cancelled() {
    for era in [Era::Legacy, Era::Modern] {
        let held = Rc::new(RefCell::new(None::<Value>));
        let h = held.clone();
        let (config, caps) = match era {
            Era::Legacy => (legacy(), legacy_caps()),
            _ => (modern(ClientCapabilities::none().with_tasks()), Value::Null),
        };
        let mut sim = sim(config, caps, move |m| match m["method"].as_str() {
            Some("tools/call") => {
                *h.borrow_mut() = Some(m.clone());
                Vec::new()
            }
            // The task was made before the server read the cancellation.
            Some("notifications/cancelled") => {
                let Some(call) = h.borrow_mut().take() else {
                    return Vec::new();
                };
                let record = match era {
                    Era::Legacy => json!({"task": legacy_task("late", "working", 1000)}),
                    _ => with(
                        json!({"resultType":"task"}),
                        modern_task("late", "working", Some(1000)),
                    ),
                };
                // Sent twice (a server that repeats itself): still one cancellation.
                vec![answer(&call, record.clone()), answer(&call, record)]
            }
            Some("tasks/cancel") => vec![answer(m, json!({}))],
            _ => Vec::new(),
        });
        let id = start(
            &mut sim,
            CallRequest::call_tool("x", json!({})).as_task(None),
        );
        sim.run_until(|s| !s.sent_with_method("tools/call").is_empty());
        sim.client.cancel(sim.now, id).unwrap();
        sim.run_until(|_| held.borrow().is_none());
        for _ in 0..3 {
            sim.step();
        }
        assert!(matches!(
            sim.completion(id),
            Some(Err(CallError::Cancelled))
        ));
        let cancels: Vec<&Value> = sim.sent_with_method("tasks/cancel");
        assert_eq!(cancels.len(), 1, "{era:?}");
        assert_eq!(cancels[0]["params"]["taskId"], "late");
        assert!(sim.sent_with_method("tasks/get").is_empty());
        assert!(
            !sim.events.iter().any(|e| matches!(e, Event::PeerError(_))),
            "{:?}",
            sim.events
        );
    }
}
