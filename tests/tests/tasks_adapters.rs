//! Tasks through both adapters, against a scripted stdio server process (Python) in
//! each era: a task started explicitly and followed to its result, a plain `call_tool`
//! hiding a task, a task cancelled, and `tasks/list`. The polls run on the adapters'
//! real clocks at the server's 50 ms interval.
#![cfg(unix)]

use std::time::Duration;

use futures_lite::future;
use mcp_proto::client::{CallError, CallRequest, ClientConfig, Event, TaskStatus};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::EraMode;
use serde_json::json;

/// Tasks of both models. A tool named `forever` never finishes; any other finishes on
/// its second poll with the text `done <name>`. Every task request is answered as its
/// era says (the 2026 ones only when the request declared the extension).
const SERVER: &str = r#"
import json, sys
EXT = "io.modelcontextprotocol/tasks"
tasks = {}
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
def record(tid, modern):
    t = tasks[tid]
    r = {"taskId": tid, "status": t["status"], "createdAt": "2026-01-01T00:00:00Z",
         "lastUpdatedAt": "2026-01-01T00:00:00Z"}
    if modern:
        r.update({"ttlMs": 60000, "pollIntervalMs": 50})
    else:
        r.update({"ttl": 60000, "pollInterval": 50})
    return r
def declared(m):
    caps = m.get("params", {}).get("_meta", {}).get("io.modelcontextprotocol/clientCapabilities", {})
    return EXT in caps.get("extensions", {})
for line in sys.stdin:
    m = json.loads(line)
    method, mid, p = m.get("method"), m.get("id"), m.get("params", {})
    modern = "io.modelcontextprotocol/protocolVersion" in p.get("_meta", {})
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"],
              "capabilities": {"tools": {}, "extensions": {EXT: {}}}}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
                               "requests": {"tools": {"call": {}}}}},
              "serverInfo": {"name": "tasks", "version": "1"}}})
    elif method == "tools/call":
        name = p["name"]
        if (modern and declared(m)) or (not modern and "task" in p):
            tid = "%s-%d" % (name, len(tasks))
            tasks[tid] = {"status": "working", "polls": 0, "name": name}
            if modern:
                send({"jsonrpc": "2.0", "id": mid, "result": dict(record(tid, True), resultType="task")})
            else:
                send({"jsonrpc": "2.0", "id": mid, "result": {"task": record(tid, False)}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "plain"}]}})
    elif method in ("tasks/get", "tasks/result", "tasks/cancel"):
        tid = p["taskId"]
        t = tasks.get(tid)
        if t is None:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "Task not found"}})
            continue
        result = {"content": [{"type": "text", "text": "done " + t["name"]}]}
        if method == "tasks/cancel":
            t["status"] = "cancelled"
            send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete"} if modern else record(tid, False)})
        elif method == "tasks/result":
            send({"jsonrpc": "2.0", "id": mid, "result": result})
        else:
            t["polls"] += 1
            if t["polls"] >= 2 and t["name"] != "forever" and t["status"] == "working":
                t["status"] = "completed"
            r = record(tid, modern)
            if modern:
                r["resultType"] = "complete"
                if t["status"] == "completed":
                    r["result"] = result
            send({"jsonrpc": "2.0", "id": mid, "result": r})
    elif method == "tasks/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tasks": [record(t, False) for t in tasks]}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

use mcp_tests::python;

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("tasks-adapters", "1.0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::none().with_tasks())
}

fn text(out: &mcp_proto::client::CallOutput) -> String {
    out.tool_result().unwrap().text()
}

#[test]
fn blocking_follows_tasks_in_both_eras() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    let command = || mcp_blocking::StdioCommand::new(python).args(["-c", SERVER]);
    let wait = Duration::from_secs(10);
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let mut client =
            mcp_blocking::Client::connect_stdio(command(), config(mode)).expect("connect");
        let call = client
            .start_task(CallRequest::call_tool("build", json!({})).as_task(None))
            .expect("start");
        match client.next_task_event(Some(call), wait) {
            Some(Event::TaskCreated { task, .. }) => {
                assert!(task.task_id.starts_with("build-"), "{mode:?}: {task:?}");
                assert_eq!(task.status, TaskStatus::Working);
            }
            other => panic!("{mode:?}: {other:?}"),
        }
        let out = client.task_result(call).expect("the task's result");
        assert_eq!(text(&out), "done build", "{mode:?}");

        // A task the caller never sees: the plain call waits for its end.
        if mode == EraMode::Modern {
            let hidden = client.call_tool("hidden", json!({})).expect("hidden task");
            assert_eq!(hidden.text(), "done hidden");
        }

        let call = client
            .start_task(CallRequest::call_tool("forever", json!({})).as_task(None))
            .expect("start");
        assert!(matches!(
            client.next_task_event(Some(call), wait),
            Some(Event::TaskCreated { .. })
        ));
        assert_eq!(
            client.task(call).map(|t| t.status),
            Some(TaskStatus::Working)
        );
        client.cancel_task(call).expect("cancel");
        let err = client.task_result(call).unwrap_err();
        assert!(
            matches!(&err, mcp_blocking::Error::Call(CallError::Cancelled)),
            "{err:?}"
        );
        if mode == EraMode::Legacy {
            let listed = client.list_tasks().expect("tasks/list");
            assert_eq!(listed.len(), 2);
            // The cancel reached the server.
            let forever = listed
                .iter()
                .find(|t| t.task_id.starts_with("forever"))
                .unwrap();
            assert_eq!(forever.status, TaskStatus::Cancelled);
        } else {
            assert!(
                client.list_tasks().is_err(),
                "no tasks/list in the extension"
            );
        }
        client.close();
    }
}

#[test]
fn smol_follows_tasks_in_both_eras() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let command = mcp_smol::StdioCommand::new(python).args(["-c", SERVER]);
        let (client, driver) = mcp_smol::connect_stdio(command, config(mode)).unwrap();
        let work = async move {
            let call = client
                .start_task(CallRequest::call_tool("build", json!({})).as_task(None))
                .await
                .expect("start");
            match client.next_task_event(Some(call)).await {
                Some(Event::TaskCreated { task, .. }) => {
                    assert!(task.task_id.starts_with("build-"), "{mode:?}: {task:?}");
                }
                other => panic!("{mode:?}: {other:?}"),
            }
            let out = client.task_result(call).await.expect("the task's result");
            assert_eq!(text(&out), "done build", "{mode:?}");
            if mode == EraMode::Modern {
                let hidden = client.call_tool("hidden", json!({})).await.expect("hidden");
                assert_eq!(hidden.text(), "done hidden");
            }
            let call = client
                .start_task(CallRequest::call_tool("forever", json!({})).as_task(None))
                .await
                .expect("start");
            assert!(matches!(
                client.next_task_event(Some(call)).await,
                Some(Event::TaskCreated { .. })
            ));
            assert_eq!(
                client.task(call).await.map(|t| t.status),
                Some(TaskStatus::Working)
            );
            client.cancel_task(call).expect("cancel");
            let err = client.task_result(call).await.unwrap_err();
            assert!(
                matches!(&err, mcp_smol::Error::Call(CallError::Cancelled)),
                "{err:?}"
            );
            if mode == EraMode::Legacy {
                let listed = client.list_tasks().await.expect("tasks/list");
                assert_eq!(listed.len(), 2);
            }
            client.close().await;
        };
        let (driven, ()) = future::block_on(future::zip(driver, work));
        driven.expect("closed locally");
    }
}

/// Both adapters over Streamable HTTP against the bundled example server with its task
/// tool (`example::with_tasks`), in each era: the task followed to its result, a plain
/// call of the same tool answered at once, a cancelled task.
#[test]
fn both_adapters_follow_the_example_servers_task_over_http() {
    use mcp_proto::server::example;
    let server = mcp_blocking::serve_http_on("127.0.0.1:0", example::with_tasks()).expect("serve");
    let url = server.url();
    for mode in [EraMode::Legacy, EraMode::Modern] {
        let config = || ClientConfig::new("tasks-http", "1.0").era_mode(mode);
        let mut client = mcp_blocking::Client::connect_http(&url, config()).expect("connect");
        let call = client
            .start_task(CallRequest::call_tool("slow", json!({"text": "over http"})).as_task(None))
            .expect("start");
        let out = client.task_result(call).expect("the task's result");
        assert_eq!(text(&out), "over http", "{mode:?}");
        assert!(matches!(
            client.next_task_event(Some(call), Duration::from_secs(1)),
            Some(Event::TaskCreated { .. })
        ));
        assert_eq!(
            client
                .call_tool("slow", json!({"text": "now"}))
                .unwrap()
                .text(),
            "now"
        );
        let call = client
            .start_task(CallRequest::call_tool("slow", json!({"text": "x"})).as_task(None))
            .expect("start");
        client.cancel_task(call).expect("cancel");
        assert!(client.task_result(call).is_err());
        client.close();

        let (client, driver) = mcp_smol::connect_http(&url, config()).expect("connect");
        let work = async move {
            let call = client
                .start_task(CallRequest::call_tool("slow", json!({"text": "smol"})).as_task(None))
                .await
                .expect("start");
            let out = client.task_result(call).await.expect("the task's result");
            assert_eq!(text(&out), "smol", "{mode:?}");
            let mut statuses = Vec::new();
            while let Some(e) = client.next_task_event(Some(call)).await {
                match e {
                    Event::TaskCreated { task, .. } | Event::TaskStatus { task, .. } => {
                        statuses.push(task.status);
                        if task.status == TaskStatus::Completed {
                            break;
                        }
                    }
                    _ => {}
                }
            }
            assert_eq!(
                statuses,
                [TaskStatus::Working, TaskStatus::Completed],
                "{mode:?}"
            );
            client.close().await;
        };
        let (driven, ()) = future::block_on(future::zip(driver, work));
        driven.expect("closed locally");
    }
}
