//! Tasks on the server, opt-in per tool ([`Tool::as_task`](super::Tool::as_task)): a
//! small, deterministic model for examples and tests, in both eras.
//!
//! A task tool's handler runs once, at once, when a call asks for a task (2025-11-25:
//! `params.task` on a `tools/call`; 2026-07-28: a `tools/call` that declares the
//! `io.modelcontextprotocol/tasks` extension). Its outcome is held behind a task that
//! shows `working` for the tool's number of `tasks/get` polls, then its end: `completed`
//! (2025: `failed` for an `isError` result or an error, as the 2025 text says; 2026:
//! `completed` with the result inlined, `failed` with the error). A 2025 `tasks/result`
//! ends the task at once and answers with its result. `tasks/cancel` cancels a task still
//! running (2025: `-32602` for a finished one). At most [`MAX_TASKS`] are kept, the oldest
//! dropped first; an unknown id is `-32602`.
//!
//! The machine has neither a clock nor entropy: task ids are sequential (`task-1`, …),
//! which the spec allows only where requestors are trusted or bound to an authorization
//! context, and `createdAt` / `lastUpdatedAt` read [`TIMESTAMP`]. A tool that asks for
//! input cannot run as a task here: its task fails.

use std::collections::VecDeque;

use serde_json::{Map, Value, json};

use crate::client::{RELATED_TASK_KEY, TASKS_EXTENSION};
use crate::jsonrpc::{ErrorObject, codes};
use crate::version::Era;

use super::calls::{self, Target};
use super::{Params, Server, ToolOutcome};

/// Tasks kept at most; the oldest goes first.
pub const MAX_TASKS: usize = 64;

/// The poll interval the server asks for, in milliseconds.
pub const POLL_INTERVAL_MS: u64 = 100;

/// The task lifetime the server reports, in milliseconds.
pub const TTL_MS: u64 = 600_000;

/// `createdAt` and `lastUpdatedAt` of every task (the machine has no wall clock).
pub const TIMESTAMP: &str = "1970-01-01T00:00:00Z";

/// One task.
#[derive(Debug)]
pub(super) struct ServerTask {
    id: String,
    status: &'static str,
    polls_left: u32,
    outcome: Result<Value, ErrorObject>,
}

/// The tasks of a server.
#[derive(Debug, Default)]
pub(super) struct TaskStore {
    tasks: VecDeque<ServerTask>,
    next: u64,
}

fn not_found(id: &str) -> ErrorObject {
    let id: String = id.chars().take(64).collect();
    ErrorObject::new(codes::INVALID_PARAMS, format!("Task not found: {id}"))
}

impl ServerTask {
    fn terminal(&self) -> bool {
        matches!(self.status, "completed" | "failed" | "cancelled")
    }

    /// Ends the work: the status its outcome gives in `era`.
    fn finish(&mut self, era: Era) {
        if self.terminal() {
            return;
        }
        self.polls_left = 0;
        self.status = match (&self.outcome, era) {
            (Err(_), _) => "failed",
            (Ok(r), Era::Legacy) if r.get("isError") == Some(&Value::Bool(true)) => "failed",
            (Ok(_), _) => "completed",
        };
    }

    fn record(&self, era: Era) -> Value {
        let mut r = json!({
            "taskId": self.id,
            "status": self.status,
            "createdAt": TIMESTAMP,
            "lastUpdatedAt": TIMESTAMP,
        });
        if let Some(o) = r.as_object_mut() {
            let (ttl, poll) = match era {
                Era::Legacy => ("ttl", "pollInterval"),
                Era::Modern => ("ttlMs", "pollIntervalMs"),
            };
            o.insert(ttl.into(), json!(TTL_MS));
            o.insert(poll.into(), json!(POLL_INTERVAL_MS));
        }
        r
    }
}

impl Server {
    /// Whether any tool can run as a task.
    pub(super) fn offers_tasks(&self) -> bool {
        self.config.tools.iter().any(|t| t.task_polls.is_some())
    }

    /// Whether tool `name` runs as a task.
    pub(super) fn is_task_tool(&self, name: &str) -> bool {
        self.config
            .tools
            .iter()
            .any(|t| t.name == name && t.task_polls.is_some())
    }

    /// Runs `target` now and keeps its outcome behind a new task; the task's record.
    pub(super) fn create_task(&mut self, target: &Target, era: Era) -> Value {
        let polls = self
            .config
            .tools
            .iter()
            .find(|t| t.name == target.name)
            .and_then(|t| t.task_polls)
            .unwrap_or(0);
        let tools = &mut self.config.tools;
        // A task's notes have no stream to go on: its result is what it leaves.
        let outcome = match calls::invoke(tools, target, &Map::new(), (era, 0), &Value::Null, None)
        {
            ToolOutcome::Done(v) | ToolOutcome::DoneWithNotes { result: v, .. } => {
                calls::done(&target.name, v)
            }
            ToolOutcome::Error(e) => Err(e),
            _ => Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("tool `{}` cannot ask for input as a task", target.name),
            )),
        };
        let store = &mut self.tasks;
        store.next += 1;
        let mut task = ServerTask {
            id: format!("task-{}", store.next),
            status: "working",
            polls_left: polls,
            outcome,
        };
        if polls == 0 {
            task.finish(era);
        }
        let record = task.record(era);
        if store.tasks.len() >= MAX_TASKS {
            store.tasks.pop_front();
        }
        store.tasks.push_back(task);
        record
    }

    fn task_mut(&mut self, params: &Params) -> Result<&mut ServerTask, ErrorObject> {
        let id = params.get("taskId").and_then(Value::as_str).unwrap_or("");
        self.tasks
            .tasks
            .iter_mut()
            .find(|t| t.id == id)
            .ok_or_else(|| not_found(id))
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` (2025-11-25) and
    /// `tasks/get`, `tasks/update`, `tasks/cancel` (2026-07-28); `None` for any other
    /// method, or when no tool runs as a task. `caps`: a 2026 request's client
    /// capabilities, which must declare the extension.
    pub(super) fn task_request(
        &mut self,
        method: &str,
        params: &Params,
        era: Era,
        caps: Option<&Value>,
    ) -> Option<Result<Value, ErrorObject>> {
        if !self.offers_tasks() {
            return None;
        }
        let served: &[&str] = match era {
            Era::Legacy => &["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"],
            Era::Modern => &["tasks/get", "tasks/update", "tasks/cancel"],
        };
        if !served.contains(&method) {
            return None;
        }
        if era == Era::Modern && !declares_tasks(caps) {
            let data = json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}});
            return Some(Err(ErrorObject::new(
                codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("Missing required client capability: extensions.{TASKS_EXTENSION}"),
            )
            .with_data(data)));
        }
        if method == "tasks/list" {
            let tasks: Vec<Value> = self.tasks.tasks.iter().map(|t| t.record(era)).collect();
            return Some(Ok(json!({ "tasks": tasks })));
        }
        let task = match self.task_mut(params) {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        Some(match (method, era) {
            ("tasks/get", _) => {
                if !task.terminal() {
                    task.polls_left = task.polls_left.saturating_sub(1);
                    if task.polls_left == 0 {
                        task.finish(era);
                    }
                }
                let mut r = task.record(era);
                if era == Era::Modern
                    && let Some(o) = r.as_object_mut()
                {
                    match (task.status, &task.outcome) {
                        ("completed", Ok(v)) => {
                            o.insert("result".into(), v.clone());
                        }
                        ("failed", Err(e)) => {
                            o.insert("error".into(), serde_json::to_value(e).unwrap_or_default());
                        }
                        _ => {}
                    }
                }
                Ok(r)
            }
            ("tasks/result", _) => {
                task.finish(era);
                let related = json!({ RELATED_TASK_KEY: {"taskId": task.id} });
                match (&task.outcome, task.status) {
                    (_, "cancelled") => Err(ErrorObject::new(
                        codes::INVALID_PARAMS,
                        format!("Task {} was cancelled", task.id),
                    )),
                    (Ok(v), _) => {
                        let mut v = v.clone();
                        if let Some(o) = v.as_object_mut() {
                            o.insert("_meta".into(), related);
                        }
                        Ok(v)
                    }
                    (Err(e), _) => Err(e.clone()),
                }
            }
            ("tasks/cancel", Era::Legacy) if task.terminal() => Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!(
                    "Cannot cancel task: already in terminal status '{}'",
                    task.status
                ),
            )),
            ("tasks/cancel", _) => {
                if !task.terminal() {
                    task.status = "cancelled";
                }
                Ok(match era {
                    Era::Legacy => task.record(era),
                    Era::Modern => json!({}),
                })
            }
            // tasks/update: nothing is ever asked, so every key is ignored.
            _ => Ok(json!({})),
        })
    }

    /// The 2025 `tasks` capability, or the 2026 extension, added to `capabilities`
    /// when a tool runs as a task.
    pub(super) fn add_task_capability(&self, capabilities: &mut Value, era: Era) {
        if !self.offers_tasks() {
            return;
        }
        let Some(caps) = capabilities.as_object_mut() else {
            return;
        };
        match era {
            Era::Legacy => {
                caps.insert(
                    "tasks".into(),
                    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
                );
            }
            Era::Modern => {
                let ext = caps
                    .entry("extensions")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(ext) = ext.as_object_mut() {
                    ext.insert(TASKS_EXTENSION.into(), json!({}));
                }
            }
        }
    }
}

/// Whether a 2026 request's client capabilities declare the tasks extension.
pub(super) fn declares_tasks(caps: Option<&Value>) -> bool {
    caps.and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}
