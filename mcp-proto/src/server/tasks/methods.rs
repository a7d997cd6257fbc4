//! The task methods: 2025-11-25 `tasks/get`, `tasks/result` (on a task that ended),
//! `tasks/list` and `tasks/cancel`; 2026-07-28 `tasks/get`, `tasks/update` and
//! `tasks/cancel`, refused unless the request declares the tasks extension. Each
//! reaches only the requestor's own tasks (its principal and, in the legacy era, its
//! session's scope): another's task is "not found". Also the capability (2025) or
//! extension (2026) that announces the methods, and the errors they answer with.

use serde_json::{Map, Value, json};

use crate::client::TASKS_EXTENSION;
use crate::jsonrpc::{ErrorObject, RequestId, codes};
use crate::version::Era;

use super::super::calls;
use super::super::deferred::{Deferral, Kind};
use super::super::{Params, Server, ToolOutcome};
use super::room::{outcome_room, too_much_principal_data, too_much_task_data};
use super::{LIST_PAGE, Owner, ServerTask, looked};

pub(in crate::server) fn not_found(id: &str) -> ErrorObject {
    let id: String = id.chars().take(64).collect();
    ErrorObject::new(codes::INVALID_PARAMS, format!("Task not found: {id}"))
}

/// The `-32021` for a 2026 request that must declare the tasks extension.
pub(in crate::server) fn tasks_capability_required() -> ErrorObject {
    let data = json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}});
    ErrorObject::new(
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("Missing required client capability: extensions.{TASKS_EXTENSION}"),
    )
    .with_data(data)
}

impl Server {
    /// Who the request being handled in `era` comes from.
    pub(super) fn task_owner(&self, era: Era) -> Owner {
        Owner {
            principal: self.principal.clone(),
            scope: match era {
                Era::Legacy => self.session.as_ref().map(|s| s.task_scope),
                Era::Modern => None,
            },
        }
    }

    /// Of `ids`, those naming a 2026 task of the current principal (the others are left
    /// out of a listen's acknowledgement: another's task is "not found").
    pub(in crate::server) fn own_modern_tasks(&mut self, ids: Vec<String>) -> Vec<String> {
        let owner = self.task_owner(Era::Modern);
        self.tasks.expire(self.now);
        ids.into_iter()
            .filter(|id| {
                (self.tasks.get(id)).is_some_and(|t| t.era == Era::Modern && t.owner == owner)
            })
            .collect()
    }

    /// The task `params.taskId` of the current requestor in `era`: its `seq`.
    pub(super) fn task_index(&mut self, params: &Params, era: Era) -> Result<u64, ErrorObject> {
        let id = params.get("taskId").and_then(Value::as_str).unwrap_or("");
        let owner = self.task_owner(era);
        self.tasks.expire(self.now);
        (self.tasks.get(id))
            .filter(|t| t.era == era && t.owner == owner)
            .map(|t| t.seq)
            .ok_or_else(|| not_found(id))
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` (2025-11-25) and
    /// `tasks/get`, `tasks/update`, `tasks/cancel` (2026-07-28); `None` for any other
    /// method, or when no tool runs as a task. `caps`: a 2026 request's client
    /// capabilities, which must declare the extension.
    pub(in crate::server) fn task_request(
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
            return Some(Err(tasks_capability_required()));
        }
        if method == "tasks/list" {
            return Some(self.list_tasks(params));
        }
        let at = match self.task_index(params, era) {
            Ok(at) => at,
            Err(e) => return Some(Err(e)),
        };
        let now = self.now;
        let work = self.new_work();
        let mut deferred: Option<(Deferral, String)> = None;
        let queue = &self.deferred_queue;
        let limits = &self.config.limits;
        let tools = &mut self.config.tools;
        let reply = self.tasks.update(at, |task, store| {
            // The task is out of the store meanwhile: its bytes are added back.
            let held = store.held_bytes() + task.kept_bytes();
            let theirs = store.principal_bytes(task.owner.principal.as_deref()) + task.kept_bytes();
            match (method, era) {
                ("tasks/get", _) => {
                    if task.status == "working" {
                        task.polls_left = task.polls_left.saturating_sub(1);
                    }
                    task.refresh(now);
                    // A 2026 task's record carries its result or error.
                    task.delivered |= era == Era::Modern && task.terminal();
                    Ok(match era {
                        Era::Legacy => task.record(store),
                        Era::Modern => task.detailed(store),
                    })
                }
                // Only a task that has ended gets here (see `park_task_result`).
                ("tasks/result", _) => {
                    task.delivered = true;
                    task.result()
                }
                ("tasks/cancel", Era::Legacy) if task.terminal() => Err(ErrorObject::new(
                    codes::INVALID_PARAMS,
                    format!(
                        "Cannot cancel task: already in terminal status '{}'",
                        task.status
                    ),
                )),
                ("tasks/cancel", _) => {
                    task.cancel(now);
                    Ok(match era {
                        Era::Legacy => task.record(store),
                        Era::Modern => json!({}),
                    })
                }
                // tasks/update
                _ => {
                    // Read in place: only the answers taken are copied, once they fit.
                    let empty = Map::new();
                    let answers = match params.get("inputResponses") {
                        None => &empty,
                        Some(Value::Object(a)) => a,
                        Some(_) => {
                            return Err(calls::invalid("`inputResponses` must be an object"));
                        }
                    };
                    // An answer that is not an object is refused by name, as on an MRTR
                    // retry (decision 54): acknowledged, it left the task waiting for an
                    // answer its client believes it gave.
                    if let Some((key, _)) = answers.iter().find(|(_, a)| !a.is_object()) {
                        return Err(calls::invalid(format!(
                            "`inputResponses.{}` must be an object (an ElicitResult, \
                         CreateMessageResult or ListRootsResult)",
                            calls::clipped(key)
                        )));
                    }
                    if task.status == "input_required" {
                        // Keys not outstanding are ignored.
                        let taken: Vec<(&String, &Value)> = (answers.iter())
                            .filter(|(k, _)| task.input_requests.contains_key(*k))
                            .collect();
                        let size: usize = (taken.iter())
                            .map(|(k, a)| k.len() + crate::held::held_bytes(a))
                            .sum();
                        // None is taken past a bound: the requests stay outstanding.
                        let share = limits.max_task_bytes_per_principal;
                        if theirs + size > share {
                            return Err(too_much_principal_data(share));
                        }
                        let max_bytes = limits.max_task_bytes;
                        if held + size > max_bytes {
                            return Err(too_much_task_data(max_bytes));
                        }
                        for (key, answer) in taken {
                            task.input_requests.remove(key);
                            task.inputs.insert(key.clone(), answer.clone());
                        }
                        task.client_bytes += size;
                        let room = outcome_room(
                            limits,
                            held + size - task.outcome_bytes,
                            theirs + size - task.outcome_bytes,
                        );
                        if task.input_requests.is_empty() {
                            task.status = "working";
                            task.updated = now;
                            task.round = task.round.saturating_add(1);
                            let (outcome, deferral) = calls::invoke(
                                tools,
                                &task.target,
                                &task.inputs,
                                (Era::Modern, task.round),
                                &task.caps,
                                (None, queue, work),
                            );
                            task.take(outcome, now, limits, room);
                            deferred = deferral.map(|d| (d, task.id.clone()));
                        }
                    }
                    Ok(json!({}))
                }
            }
        });
        // Found by `task_index` just now.
        let reply = reply.unwrap_or_else(|| Err(calls::invalid("Task not found")));
        if let Some((deferral, id)) = deferred {
            let request = RequestId::String(id.clone());
            if let Err(e) = self.park_deferred(deferral, request, 0, Kind::Task(id.clone())) {
                self.task_work_done(now, &id, ToolOutcome::Error(e));
            }
        }
        Some(reply)
    }

    /// A 2025 `tasks/list` page of the requestor's tasks.
    fn list_tasks(&mut self, params: &Params) -> Result<Value, ErrorObject> {
        let from = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => c
                .strip_prefix('c')
                .and_then(|n| n.parse::<u64>().ok())
                .ok_or_else(|| calls::invalid("Invalid cursor"))?,
            Some(_) => return Err(calls::invalid("Invalid cursor")),
        };
        let owner = self.task_owner(Era::Legacy);
        let now = self.now;
        let store = &mut self.tasks;
        store.expire(now);
        // The requestor's tasks only (at most `MAX_TASKS`), from the cursor on.
        let mine: Vec<&ServerTask> = (store.index.owners.get(&owner))
            .into_iter()
            .flat_map(|t| t.all.range(from..))
            .filter_map(|seq| store.tasks.get(seq))
            .filter(|t| t.era == Era::Legacy)
            .take(LIST_PAGE + 1)
            .collect();
        looked(mine.len());
        let tasks: Vec<Value> = mine
            .iter()
            .take(LIST_PAGE)
            .map(|t| t.record(store))
            .collect();
        let mut result = json!({ "tasks": tasks });
        if let (Some(next), Some(o)) = (mine.get(LIST_PAGE), result.as_object_mut()) {
            o.insert("nextCursor".into(), json!(format!("c{}", next.seq)));
        }
        Ok(result)
    }

    /// The 2025 `tasks` capability, or the 2026 extension, added to `capabilities`
    /// when a tool runs as a task.
    pub(in crate::server) fn add_task_capability(&self, capabilities: &mut Value, era: Era) {
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
pub(in crate::server) fn declares_tasks(caps: Option<&Value>) -> bool {
    caps.and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}
