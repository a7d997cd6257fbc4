//! What tasks say without being asked: status notifications to their owner, the held
//! 2025 `tasks/result` answered when its task ends, and the timer that makes outcomes
//! due while nobody polls.
//!
//! # Theory of operation
//!
//! Each task remembers the status last told to its owner. After every input handed to
//! the machine, and at [`Server::handle_timeout`], the tasks whose status moved on since
//! are told of (`announce_tasks`):
//!
//! * a 2025 task to its legacy session, when that session is the one in the machine and
//!   speaks 2025-11-25: `notifications/tasks/status` with the task (over HTTP the endpoint
//!   routes it to the session's `GET` stream; a session's task that changed while another
//!   session was in the machine is told at its own session's next turn);
//! * a 2026 task to every open listen of the same principal that named it in `taskIds`:
//!   `notifications/tasks` with the `DetailedTask` (what `tasks/get` would show) tagged
//!   with the listen's id. A 2026 change with no such listen is not kept for later: a
//!   listen that opens is shown each task it covers as it is then, after its
//!   acknowledgement.
//!
//! Then the held `tasks/result` requests whose task ended (or expired) are answered
//! (`settle_results`), as a `tasks/result` of an ended task is. A cancelled request
//! (`notifications/cancelled` with its id) is dropped without an answer.
//!
//! **Time.** A task's outcome held behind a delay ([`ToolOutcome::After`](super::ToolOutcome::After))
//! becomes due at a known instant once its polls are used up; [`Server::poll_timeout`]
//! says the earliest such instant (and, for a held `tasks/result`, its task's expiry), and
//! [`Server::handle_timeout`] shows every due outcome, so an adapter that calls it on time
//! makes tasks finish, notify and answer without anyone polling.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::Instant;
use crate::jsonrpc::RequestId;
use crate::version::{Era, ProtocolVersion};

use super::Server;

impl Server {
    /// The earliest instant at which [`Server::handle_timeout`] has something to do: a
    /// task's held outcome falls due, or a held `tasks/result`'s task expires. `None`
    /// when nothing waits for time. Deferred tool work that completed is due at once
    /// (an instant already past): a driver that wakes for completions
    /// ([`Server::set_deferred_waker`]) and for this deadline needs nothing else.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        #[cfg(any(test, feature = "index-checks"))]
        self.tasks.check_indexes();
        if self.has_deferred_done() {
            return Some(self.now);
        }
        let due = self.tasks.next_due();
        // A task whose tasks/result waits on its input requests: its expiry answers it.
        let due = match (due, self.parked_task_expiry()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // Called after every input: the store keeps the oldest task with a held request.
        let expiry = self.tasks.waits_expiry();
        match (due, expiry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Time passed: the calls whose deferred work completed go on
    /// ([`Server::handle_deferred`]), every task outcome due by `now` is shown, and what
    /// that changes is told and answered. Drain the output afterwards.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.resume_completed(now);
        self.time_passed(now);
    }

    /// [`Server::handle_timeout`] but for deferred work (which the HTTP endpoint resumes
    /// itself, each call in its own session).
    pub(crate) fn time_passed(&mut self, now: Instant) {
        self.now = self.now.max(now);
        let now = self.now;
        self.tasks.refresh_all(now);
        self.after_input();
    }

    /// What follows every input: status notifications and held `tasks/result` answers.
    pub(super) fn after_input(&mut self) {
        #[cfg(any(test, feature = "index-checks"))]
        self.tasks.check_indexes();
        // Before the early return: the last task may have just gone.
        if !self.deferred.is_empty() {
            self.forget_ended_task_work();
        }
        self.end_calls_of_ended_tasks();
        if self.tasks.is_empty() {
            return;
        }
        self.settle_results();
        self.announce_tasks();
    }

    /// Tells the owners of the tasks whose status changed (see the module docs).
    pub(super) fn announce_tasks(&mut self) {
        let scope = self
            .session
            .as_ref()
            .filter(|s| s.version >= ProtocolVersion::V2025_11_25)
            .map(|s| s.task_scope);
        let mut legacy: Vec<Value> = Vec::new();
        let mut modern: Vec<(RequestId, Map<String, Value>)> = Vec::new();
        let listens = &self.listens;
        let store = &self.tasks;
        let mut told: Vec<u64> = Vec::new();
        let mut delivered = BTreeSet::new();
        // Only the tasks that changed (the store keeps them), oldest first.
        for (at, task) in store.changed(scope) {
            match task.era() {
                Era::Legacy => {
                    if scope.is_none() || task.scope() != scope {
                        continue;
                    }
                    legacy.push(task.record(store));
                }
                Era::Modern => {
                    for l in listens {
                        if l.principal.as_deref() == task.principal()
                            && l.task_ids.iter().any(|id| id == task.id())
                            && let Value::Object(detailed) = task.detailed(store)
                        {
                            modern.push((l.id.clone(), detailed));
                            // The notification carries its result or error.
                            if task.terminal() {
                                delivered.insert(task.id().to_owned());
                            }
                        }
                    }
                }
            }
            told.push(at);
        }
        for at in told {
            self.tasks.mark_announced(at);
        }
        self.tasks.mark_delivered(&delivered);
        for record in legacy {
            self.send_notification("notifications/tasks/status", &record);
        }
        for (id, params) in modern {
            self.send_to_listen(&id, "notifications/tasks", params);
        }
    }

    /// Answers the held `tasks/result` requests whose task ended or is gone; a 2025
    /// task of the session in the machine that now needs input asks on its held
    /// `tasks/result` (as on one that came while it needed input).
    fn settle_results(&mut self) {
        if self.tasks.waiting() == 0 {
            return;
        }
        self.tasks.expire(self.now);
        let scope = self.session.as_ref().map(|s| s.task_scope);
        let mut settled = Vec::new();
        let mut replies = Vec::new();
        let mut asks = Vec::new();
        let mut delivered = BTreeSet::new();
        {
            // Called after every input: only the held requests whose task ended, is gone
            // or asks (the store keeps them), in the order they came.
            let tasks = &self.tasks;
            for (arrival, w) in tasks.waits_to_settle(scope) {
                let reply = match tasks.get(&w.task) {
                    Some(t) if t.terminal() => {
                        delivered.insert(w.task.clone());
                        t.result()
                    }
                    Some(t) if scope.is_some() && t.scope() == scope && t.asks_legacy_input() => {
                        settled.push(arrival);
                        asks.push((w.request.clone(), w.task.clone()));
                        continue;
                    }
                    Some(_) => continue,
                    None => Err(super::tasks::not_found(&w.task)),
                };
                settled.push(arrival);
                replies.push((w.request.clone(), reply));
            }
        }
        for arrival in settled {
            self.tasks.unhold(arrival);
        }
        self.tasks.mark_delivered(&delivered);
        for (request, reply) in replies {
            self.reply(&request, reply);
        }
        for (request, task) in asks {
            self.ask_for_task(&request, &task);
        }
    }

    /// The held 2025 `tasks/result` requests whose task now asks for input: each asks
    /// once its task's session is the one in the machine (over HTTP, the endpoint puts
    /// it there).
    pub(crate) fn results_to_ask_on(&self) -> Vec<RequestId> {
        (self.tasks.waits_asking().into_iter())
            .map(|w| w.request.clone())
            .collect()
    }

    /// `notifications/cancelled` for a held `tasks/result`: it is dropped.
    pub(super) fn cancel_waiting(&mut self, id: &RequestId) {
        self.tasks.unhold_request(id);
    }

    /// Held `tasks/result` requests.
    #[must_use]
    pub fn waiting_results(&self) -> usize {
        self.tasks.waiting()
    }
}
