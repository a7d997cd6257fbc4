//! One task's life ([`ServerTask`]): the handler outcome it takes in and holds until
//! due ([`Held`]: after the tool's polls and the outcome's delay), what it then shows
//! (`completed`, `failed`, `input_required`), its end and its cancellation, and what it
//! reads as: a 2025 record or `tasks/result` answer, a 2026 `DetailedTask`. A task in
//! the store changes only inside [`TaskStore::update`], which keeps the store's indexes
//! in step.

use serde_json::{Map, Value, json};

use crate::Instant;
use crate::client::RELATED_TASK_KEY;
use crate::jsonrpc::{ErrorObject, codes};
use crate::version::Era;

use super::super::calls;
use super::super::registry::InputRequestSpec;
use super::super::{ServerLimits, ToolOutcome};
use super::{POLL_INTERVAL_MS, ServerTask, TTL_MS, TaskStore};

/// What a task will show once due.
#[derive(Debug)]
pub(super) enum Held {
    /// The end.
    Outcome(Result<Value, ErrorObject>),
    /// Input requests (rendered, by key).
    Input(Map<String, Value>),
    /// 2025: input requests, sent once a `tasks/result` waits for them.
    LegacyInput(Vec<(String, InputRequestSpec)>),
    /// Nothing, ever.
    Never,
}

impl ServerTask {
    pub(in crate::server) fn id(&self) -> &str {
        &self.id
    }

    /// Its place in creation order.
    pub(in crate::server) fn seq(&self) -> u64 {
        self.seq
    }

    /// Whether its status or input round moved on since it was last told of.
    pub(in crate::server) fn changed_since_announced(&self) -> bool {
        self.announced != (self.status, self.round)
    }

    pub(in crate::server) fn era(&self) -> Era {
        self.era
    }

    pub(in crate::server) fn scope(&self) -> Option<u64> {
        self.owner.scope
    }

    /// Whether it is a 2025 task whose input requests wait for a `tasks/result` to go
    /// out on.
    pub(in crate::server) fn asks_legacy_input(&self) -> bool {
        self.status == "input_required" && !self.legacy_asks.is_empty()
    }

    pub(in crate::server) fn principal(&self) -> Option<&str> {
        self.owner.principal.as_deref()
    }

    pub(in crate::server) fn created_at(&self) -> Instant {
        self.created
    }

    /// When a held outcome falls due by time alone (its polls used up).
    pub(in crate::server) fn due_at(&self) -> Option<Instant> {
        let timed = matches!(
            self.held,
            Some(Held::Outcome(_) | Held::Input(_) | Held::LegacyInput(_))
        );
        (self.status == "working" && self.polls_left == 0 && timed).then_some(self.due)
    }

    pub(in crate::server) fn terminal(&self) -> bool {
        matches!(self.status, "completed" | "failed" | "cancelled")
    }

    /// Whether it may go to make room: its end reached its owner.
    pub(super) fn may_go(&self) -> bool {
        self.terminal() && self.delivered
    }

    /// The bytes counted against `ServerLimits::max_task_bytes`: what its client sent and
    /// what its outcome holds.
    pub(super) fn kept_bytes(&self) -> usize {
        self.client_bytes + self.outcome_bytes
    }

    /// Takes in a handler outcome at `now`: held until due, shown at once if due. An
    /// outcome that would take more than `room` bytes (what the bounds on task data
    /// leave it, [`ServerLimits::max_task_bytes`] and its principal's share) is kept as
    /// an error naming its size instead: the bounds were checked on what the client
    /// sent, and a tool may give back more.
    pub(super) fn take(
        &mut self,
        outcome: ToolOutcome,
        now: Instant,
        limits: &ServerLimits,
        room: usize,
    ) {
        let mut outcome = outcome;
        self.due = now;
        while let ToolOutcome::After {
            delay,
            outcome: inner,
        } = outcome
        {
            self.due = self.due.saturating_add(delay);
            outcome = *inner;
        }
        let name = &self.target.name;
        let held = match outcome {
            ToolOutcome::Done(v) | ToolOutcome::DoneWithNotes { result: v, .. } => {
                Held::Outcome(calls::done(name, v))
            }
            ToolOutcome::DoneText { text, is_error } => {
                Held::Outcome(Ok(super::super::registry::text_result(text, is_error)))
            }
            ToolOutcome::Error(e) => Held::Outcome(Err(e)),
            ToolOutcome::NeedInput(asks) => self.hold_input(&asks, limits),
            _ => Held::Never,
        };
        let size = |held: &Held| match held {
            Held::Outcome(Ok(v)) => crate::held::held_bytes(v),
            Held::Outcome(Err(e)) => crate::held::error_held_bytes(e),
            _ => 0,
        };
        let mut held = held;
        let bytes = size(&held);
        if bytes > room {
            held = Held::Outcome(Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "Too much task data held: the task's outcome takes {bytes} bytes, more \
                     than the {room} the server may still keep for its client"
                ),
            )));
        }
        self.outcome_bytes = size(&held);
        self.held = Some(held);
        self.refresh(now);
    }

    pub(super) fn hold_input(
        &self,
        asks: &[(String, InputRequestSpec)],
        limits: &ServerLimits,
    ) -> Held {
        let name = &self.target.name;
        if let Some(reply) = calls::refuse(name, asks, self.round, limits) {
            return Held::Outcome(reply);
        }
        if self.era == Era::Legacy {
            // Sent (or refused for a missing capability) when a tasks/result waits.
            return Held::LegacyInput(asks.to_vec());
        }
        // A key is unique for the task's whole life (tasks extension): a client answers
        // each once, so one asked again would never be answered.
        if let Some((key, _)) = asks.iter().find(|(k, _)| self.inputs.contains_key(k)) {
            return Held::Outcome(Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "tool `{name}` asked again for input `{}`, already answered in this task",
                    calls::clipped(key)
                ),
            )));
        }
        if let Some(missing) = calls::missing_capabilities(&self.caps, asks, self.version) {
            return Held::Outcome(Err(ErrorObject::new(
                codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("tool `{name}` needs input the client cannot give"),
            )
            .with_data(json!({"requiredCapabilities": missing}))));
        }
        let mut requests = Map::new();
        for (key, spec) in asks {
            let (method, params) = calls::render(spec, self.version);
            let mut request = json!({ "method": method });
            if let (Some(p), Some(o)) = (params, request.as_object_mut()) {
                o.insert("params".into(), p);
            }
            requests.insert(key.clone(), request);
        }
        Held::Input(requests)
    }

    /// Shows the held outcome when it is due at `now`.
    pub(in crate::server) fn refresh(&mut self, now: Instant) {
        if self.status != "working" || self.polls_left > 0 || now < self.due {
            return;
        }
        match self.held.take() {
            Some(Held::Outcome(o)) => self.finish(o, now),
            Some(Held::Input(requests)) => {
                self.status = "input_required";
                self.input_requests = requests;
                self.updated = now;
            }
            Some(Held::LegacyInput(asks)) => {
                self.status = "input_required";
                self.legacy_asks = asks;
                self.updated = now;
            }
            other => self.held = other,
        }
    }

    /// Ends the task with `outcome`.
    pub(super) fn finish(&mut self, outcome: Result<Value, ErrorObject>, now: Instant) {
        self.status = match (&outcome, self.era) {
            (Err(_), _) => "failed",
            (Ok(r), Era::Legacy) if r.get("isError") == Some(&Value::Bool(true)) => "failed",
            (Ok(_), _) => "completed",
        };
        // What it shows from now on is what it holds (a 2025 task's end after its
        // input was never held before).
        self.outcome_bytes = match &outcome {
            Ok(v) => crate::held::held_bytes(v),
            Err(e) => crate::held::error_held_bytes(e),
        };
        self.outcome = Some(outcome);
        self.held = None;
        self.input_requests.clear();
        self.updated = now;
    }

    /// What a 2025 `tasks/result` answers for this task once it ended: the result of the
    /// call, tagged with the task, or its error.
    pub(in crate::server) fn result(&self) -> Result<Value, ErrorObject> {
        let related = json!({ RELATED_TASK_KEY: {"taskId": self.id} });
        match (&self.outcome, self.status) {
            (_, "cancelled") => Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!("Task {} was cancelled", self.id),
            )),
            (Some(Ok(v)), _) => {
                let mut v = v.clone();
                if let Some(o) = v.as_object_mut() {
                    o.insert("_meta".into(), related);
                }
                Ok(v)
            }
            (Some(Err(e)), _) => Err(e.clone()),
            (None, _) => Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("Task {} has not ended", self.id),
            )),
        }
    }

    pub(super) fn cancel(&mut self, now: Instant) {
        self.delivered = true;
        if !self.terminal() {
            self.status = "cancelled";
            self.held = None;
            self.outcome_bytes = 0;
            self.input_requests.clear();
            self.updated = now;
        }
    }

    pub(in crate::server) fn record(&self, store: &TaskStore) -> Value {
        let mut r = json!({
            "taskId": self.id,
            "status": self.status,
            "createdAt": store.timestamp(self.created),
            "lastUpdatedAt": store.timestamp(self.updated),
        });
        if let Some(o) = r.as_object_mut() {
            let (ttl, poll) = match self.era {
                Era::Legacy => ("ttl", "pollInterval"),
                Era::Modern => ("ttlMs", "pollIntervalMs"),
            };
            o.insert(ttl.into(), json!(TTL_MS));
            o.insert(poll.into(), json!(POLL_INTERVAL_MS));
        }
        r
    }

    /// The 2026 `DetailedTask`: the record with `result`, `error` or `inputRequests`.
    pub(in crate::server) fn detailed(&self, store: &TaskStore) -> Value {
        let mut r = self.record(store);
        if let Some(o) = r.as_object_mut() {
            match (self.status, &self.outcome) {
                ("completed", Some(Ok(v))) => {
                    o.insert("result".into(), v.clone());
                }
                ("failed", Some(Err(e))) => {
                    o.insert("error".into(), serde_json::to_value(e).unwrap_or_default());
                }
                ("input_required", _) => {
                    o.insert(
                        "inputRequests".into(),
                        Value::Object(self.input_requests.clone()),
                    );
                }
                _ => {}
            }
        }
        r
    }
}
