//! Tasks on the server, opt-in per tool ([`Tool::as_task`](super::Tool::as_task),
//! [`Tool::task_required`](super::Tool::task_required),
//! [`Tool::input_before_task`](super::Tool::input_before_task)), in both eras.
//!
//! **When a call becomes a task.** 2025-11-25: a `tools/call` with `params.task` on a
//! task tool (a tool that requires a task and gets a call without it: `-32601`).
//! 2026-07-28: a `tools/call` to a task tool whose request declares the
//! `io.modelcontextprotocol/tasks` extension (the server decides; a legacy `task` param
//! is ignored); a tool that requires a task and gets a call that does not declare it:
//! `-32021` with `data.requiredCapabilities`. A tool made with
//! [`Tool::input_before_task`](super::Tool::input_before_task) first runs its MRTR
//! rounds on the `tools/call`, and the task is created with the first other outcome.
//!
//! **How a task runs.** The handler runs when the task is created, and again each time
//! the input it asked for is complete. Each outcome is held behind the task until it is
//! due: after the tool's number of `tasks/get` polls (the `polls` of
//! [`Tool::as_task`](super::Tool::as_task), a deterministic model for tests) and after
//! its delay ([`ToolOutcome::After`]: the
//! machine has no clock, so "due" is judged against the `now` of the inputs handed in).
//! Then the task shows it: `completed` with the result (2025: `failed` for an `isError`
//! result), `failed` with the JSON-RPC error, or, when the handler asked for input,
//! `input_required` with `inputRequests` (2026; `tasks/update` answers them, partly or
//! wholly, and once every outstanding key is answered the task goes back to `working`
//! and the handler runs again). A handler that never answers
//! ([`ToolOutcome::NoAnswer`]) leaves its task `working` until it is cancelled or
//! expires. Notes ([`ToolOutcome::DoneWithNotes`]) are dropped: tasks carry no progress
//! or log messages. A 2025 task that asks for input shows `input_required`; its requests
//! go out as server→client requests tagged with the task (`_meta`
//! `io.modelcontextprotocol/related-task`) once a `tasks/result` for it arrives, which
//! then waits, parked like a tool call, until the answers are in and the task ends.
//!
//! **Methods.** 2025-11-25: `tasks/get`, `tasks/result` (on a task not yet ended it
//! counts as the tool's polls, then holds its response until the task ends: after the
//! outcome's delay, [`Server::handle_timeout`](super::Server::handle_timeout), a
//! `tasks/cancel`, or its expiry; one waiting for input waits as said above), `tasks/list`
//! (pages of [`LIST_PAGE`], opaque `nextCursor`; a bad cursor is `-32602`) and
//! `tasks/cancel` (`-32602` for a task already ended). 2026-07-28: `tasks/get` (the
//! `DetailedTask`: `result`, `error` or `inputRequests` inlined), `tasks/update` and
//! `tasks/cancel` (both acknowledged with an empty result, idempotently), all three
//! refused with `-32021` when the request does not declare the extension; `tasks/result`
//! and `tasks/list` are `-32601`. An unknown id is `-32602`.
//!
//! **Who sees a task.** Each task belongs to the requestor that created it: the
//! principal ([`Server::set_principal`](super::Server::set_principal)) and, in the
//! legacy era, the legacy session (each `initialize` opens a scope of its own; over
//! HTTP each `Mcp-Session-Id` is one). Another requestor's task is "not found" to every
//! method, and never listed. A 2026 task is reachable by 2026 requests only, a 2025 one
//! by its session only.
//!
//! **Ids, time, bounds.** With [`Server::seed_tasks`](super::Server::seed_tasks) (32
//! bytes of real entropy; the adapters call it), task ids are 128-bit values keyed by
//! the seed that nobody can guess or enumerate, and `createdAt` / `lastUpdatedAt` are
//! real UTC times. Without it, ids are sequential (`task-1`, …), which the spec allows
//! only where requestors are trusted or bound to an authorization context, and every
//! timestamp reads [`TIMESTAMP`]. A task expires [`TTL_MS`] after its creation (it is then
//! "not found"); a legacy session's tasks go with the session (over HTTP: ended, expired
//! or evicted, or replaced by the next `initialize` on an endpoint without sessions).
//! Each requestor keeps at most [`MAX_TASKS`], each principal over all its sessions
//! [`MAX_TASKS_PER_PRINCIPAL`], the whole server [`MAX_STORED_TASKS`]: to make room the
//! oldest ended task that may go goes, and when none may a new task is refused. A task
//! may go once its end reached its owner: a running task, or one whose result was not
//! fetched yet, is never dropped, not for another's task (decision 107) nor for its own
//! requestor's next (decision 121).
//! Status notifications and the timer are in `task_events.rs`: a 2025 task's owner session
//! gets `notifications/tasks/status` when its status changes, a 2026 task's principal
//! `notifications/tasks` on a listen naming it, and a 2025 `tasks/result` on a task
//! not ended is held until it ends.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::Instant;
use crate::jsonrpc::ErrorObject;
use crate::version::{Era, ProtocolVersion};

use super::calls::Target;
use super::registry::InputRequestSpec;
#[cfg(doc)]
use super::{Server, ToolOutcome};

mod creation;
mod ids_and_times;
mod index;
mod legacy_result;
mod methods;
mod parked;
mod results_due;
mod room;
mod task;
mod waits;

use index::Index;
pub(super) use methods::{declares_tasks, not_found, tasks_capability_required};
use task::Held;
use waits::Waits;

/// Tasks kept at most per requestor; the oldest ended one goes first, and with none
/// ended a new one is refused.
pub const MAX_TASKS: usize = 64;

/// Tasks kept at most per principal, over all its legacy sessions and both eras (all
/// unauthenticated clients are one principal here): a quarter of the server's, so that
/// a principal opening session after session cannot take every slot. The oldest ended
/// one of the principal goes first, and with none ended a new one is refused.
pub const MAX_TASKS_PER_PRINCIPAL: usize = 256;

/// Tasks kept at most by the whole server; the oldest ended one goes first, and with
/// none ended a new one is refused.
pub const MAX_STORED_TASKS: usize = 1024;

/// Tasks per 2025 `tasks/list` page.
pub const LIST_PAGE: usize = 50;

/// The poll interval the server asks for, in milliseconds.
pub const POLL_INTERVAL_MS: u64 = 100;

/// The task lifetime, in milliseconds: a task is dropped this long after its creation.
pub const TTL_MS: u64 = 600_000;

/// `createdAt` and `lastUpdatedAt` of every task when the server has no epoch
/// ([`Server::seed_tasks`](super::Server::seed_tasks)).
pub const TIMESTAMP: &str = "1970-01-01T00:00:00Z";

/// Who a task belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Owner {
    principal: Option<String>,
    /// The legacy session's scope; `None` for the modern era.
    scope: Option<u64>,
}

/// One task.
#[derive(Debug)]
pub(super) struct ServerTask {
    id: String,
    /// Creation order, for `tasks/list` cursors.
    seq: u64,
    owner: Owner,
    era: Era,
    status: &'static str,
    created: Instant,
    updated: Instant,
    polls_left: u32,
    /// The held outcome is due from then on.
    due: Instant,
    held: Option<Held>,
    /// The end, once terminal (`None` for `cancelled`).
    outcome: Option<Result<Value, ErrorObject>>,
    /// Outstanding input requests (2026), by key.
    input_requests: Map<String, Value>,
    /// Input requests of a 2025 task not yet sent (none while a `tasks/result` waits
    /// for their answers).
    legacy_asks: Vec<(String, InputRequestSpec)>,
    target: Target,
    caps: Value,
    version: ProtocolVersion,
    inputs: Map<String, Value>,
    round: u32,
    /// The status last told to its owner, and in which input round (status
    /// notifications are sent for changes: a new round asking for input again is one,
    /// though the status reads the same).
    announced: (&'static str, u32),
    /// What clients sent that it keeps (arguments, capabilities, answers), as bytes held
    /// in memory (estimated): counted against `ServerLimits::max_task_bytes`.
    client_bytes: usize,
    /// What its outcome holds in memory, once the handler gave one: counted too (a
    /// tool may return what it was sent, or more).
    outcome_bytes: usize,
    /// The 2025 `tasks/result` requests held for it.
    waits: usize,
    /// Its end reached its owner (a 2025 `tasks/result` answered, a 2026 `tasks/get` or
    /// `notifications/tasks` showing the result or error, or a cancellation): from then on it may go to make
    /// room for another requestor's task.
    delivered: bool,
    /// A 2025 `tasks/result` for it is parked on its input requests in the legacy state
    /// of a session held outside the machine (see [`TaskStore::mark_parked_elsewhere`]).
    parked_elsewhere: bool,
}

/// The tasks of a server.
///
/// Kept in creation order (by `seq`) with indexes kept up to date as tasks change, so
/// that no request and no timer event walks every task: by id; per principal, per
/// requestor and per legacy scope (their tasks, those that may go to make room, the
/// bytes they keep); the tasks that may go; the outcomes due by time; the tasks whose
/// status changed since told. Every change to a task goes through
/// [`TaskStore::update`], which takes the task out of the indexes and puts it back. Its
/// `Debug` hides the key: with it, anyone could make the ids of other principals' tasks.
#[derive(Default)]
pub(super) struct TaskStore {
    /// The tasks by `seq`: the oldest first. As `seq` and `created` grow together (the
    /// machine's time never goes back), the first ones are the first to expire.
    tasks: BTreeMap<u64, ServerTask>,
    /// Each task's `seq`, by id.
    by_id: BTreeMap<String, u64>,
    index: Index,
    next: u64,
    /// The last scope handed to a legacy session.
    scopes: u64,
    /// The key task ids are made with, when seeded.
    key: Option<[u8; 32]>,
    /// The Unix time in milliseconds at `Instant::ZERO`, when known.
    epoch_unix_ms: Option<u64>,
    /// 2025 `tasks/result` requests held until their task ends.
    waits: Waits,
    /// The tasks marked parked on elsewhere that went (expired or dropped for room),
    /// with their legacy scope: the calls parked on them are due to end.
    parked_gone: BTreeMap<String, Option<u64>>,
    /// Once asked for ([`TaskStore::log_results_due`]): the legacy scopes whose
    /// [`TaskStore::has_results_due`] changed since last taken
    /// ([`TaskStore::take_results_due_changes`]).
    due_log: Option<BTreeSet<u64>>,
}

#[cfg(test)]
thread_local! {
    /// Tasks looked at (found by id, changed, listed, or walked over), for the tests of
    /// what a request or an event costs.
    static LOOKED_AT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The tasks looked at so far on this thread.
#[cfg(test)]
pub(super) fn looked_at() -> usize {
    LOOKED_AT.with(std::cell::Cell::get)
}

/// Counts `n` tasks looked at.
fn looked(n: usize) {
    #[cfg(test)]
    LOOKED_AT.with(|w| w.set(w.get() + n));
    let _ = n;
}

impl std::fmt::Debug for TaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskStore")
            .field("tasks", &self.tasks)
            .field("next", &self.next)
            .field("scopes", &self.scopes)
            .field("key", &crate::http::secret::redacted(&self.key))
            .field("epoch_unix_ms", &self.epoch_unix_ms)
            .field("waits", &self.waits)
            .finish()
    }
}

impl TaskStore {
    /// A scope for a new legacy session.
    pub(super) fn new_scope(&mut self) -> u64 {
        self.scopes = self.scopes.wrapping_add(1);
        self.scopes
    }

    /// Task `id`.
    pub(super) fn get(&self, id: &str) -> Option<&ServerTask> {
        looked(1);
        self.by_id.get(id).and_then(|seq| self.tasks.get(seq))
    }

    /// The `seq` of task `id`.
    fn seq_of(&self, id: &str) -> Option<u64> {
        self.by_id.get(id).copied()
    }

    /// Changes task `seq` with `change`, which also sees the rest of the store (the task
    /// is out of it meanwhile), and keeps the indexes up to date; `None` when there is no
    /// such task.
    fn update<R>(
        &mut self,
        seq: u64,
        change: impl FnOnce(&mut ServerTask, &TaskStore) -> R,
    ) -> Option<R> {
        looked(1);
        let mut task = self.tasks.remove(&seq)?;
        let due = self.results_due_before(task.owner.scope);
        self.index.count(&task, false);
        let r = change(&mut task, self);
        self.index.count(&task, true);
        self.note_results_due(due);
        self.tasks.insert(seq, task);
        Some(r)
    }

    /// Adds `task`, the newest.
    fn insert(&mut self, task: ServerTask) {
        let due = self.results_due_before(task.owner.scope);
        self.index.count(&task, true);
        self.note_results_due(due);
        self.by_id.insert(task.id.clone(), task.seq);
        self.tasks.insert(task.seq, task);
    }

    /// Drops task `seq`: the bytes it kept, or `None` when there is no such task.
    fn remove(&mut self, seq: u64) -> Option<usize> {
        let task = self.tasks.remove(&seq)?;
        let due = self.results_due_before(task.owner.scope);
        self.index.count(&task, false);
        self.note_results_due(due);
        self.by_id.remove(&task.id);
        if task.parked_elsewhere {
            self.parked_gone.insert(task.id.clone(), task.owner.scope);
        }
        if task.waits > 0
            && let Some(arrivals) = self.waits.by_task.get(&task.id)
        {
            // Its held `tasks/result` requests are answered "not found".
            self.waits.orphans.extend(arrivals.iter().copied());
        }
        Some(task.kept_bytes())
    }

    /// The `tasks/result` that 2025 task `id`'s input requests went out on was
    /// cancelled before they were answered: the next one asks them again.
    pub(super) fn ask_again(&mut self, id: &str, asks: Vec<(String, InputRequestSpec)>) {
        let Some(seq) = self.seq_of(id) else {
            return;
        };
        self.update(seq, |task, _| {
            if task.status == "input_required" && task.legacy_asks.is_empty() {
                task.legacy_asks = asks;
            }
        });
    }

    /// Every task, oldest first: a walk over all of them, which no request or event
    /// makes (for the tests, which count the tasks it yields).
    #[cfg(test)]
    pub(super) fn walk(&self) -> impl Iterator<Item = &ServerTask> {
        looked(self.tasks.len());
        self.tasks.values()
    }

    /// Whether there is no task and no held `tasks/result`.
    pub(super) fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.waits.list.is_empty()
    }

    /// Notes that the ends of the tasks `ids` reached their owners.
    pub(super) fn mark_delivered(&mut self, ids: &BTreeSet<String>) {
        for id in ids {
            if let Some(seq) = self.seq_of(id) {
                self.update(seq, |t, _| t.delivered = true);
            }
        }
    }

    /// Notes that task `seq`'s status was told to its owner.
    pub(super) fn mark_announced(&mut self, seq: u64) {
        self.update(seq, |t, _| t.announced = (t.status, t.round));
    }

    /// The tasks whose status moved on since told that [`Server::announce_tasks`] tells
    /// of: the 2026 ones, and the 2025 ones of legacy scope `scope`; oldest first.
    pub(super) fn changed(&self, scope: Option<u64>) -> Vec<(u64, &ServerTask)> {
        let legacy = scope.and_then(|s| self.index.changed_legacy.get(&Some(s)));
        let seqs: BTreeSet<u64> = (self.index.changed_modern.iter())
            .chain(legacy.into_iter().flatten())
            .copied()
            .collect();
        looked(seqs.len());
        (seqs.into_iter())
            .filter_map(|seq| self.tasks.get(&seq).map(|t| (seq, t)))
            .collect()
    }

    /// The legacy task scopes with a task whose change [`Server::announce_tasks`] has
    /// not told yet, in order: the sessions time passing has news for.
    pub(in crate::server) fn scopes_with_news(&self) -> impl Iterator<Item = u64> + '_ {
        self.index.changed_legacy.keys().filter_map(|scope| *scope)
    }

    /// The earliest instant a held outcome falls due by time.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.index.due.first().map(|(at, _)| *at)
    }

    /// Shows every outcome due by `now`.
    pub(super) fn refresh_all(&mut self, now: Instant) {
        self.expire(now);
        while let Some(&(due, seq)) = self.index.due.first()
            && due <= now
        {
            self.update(seq, |t, _| t.refresh(now));
            if self.index.due.first() == Some(&(due, seq)) {
                // Not shown (cannot happen: a task due by `now` shows its outcome).
                break;
            }
        }
    }

    /// Drops the tasks of the legacy sessions whose task scopes are `scopes` (sessions
    /// that ended: nobody can reach their tasks), with the `tasks/result` requests
    /// waiting on them.
    pub(super) fn drop_scopes(&mut self, scopes: &[u64]) {
        for scope in scopes {
            let seqs: Vec<u64> = (self.index.scopes.get(scope))
                .map(|t| t.all.iter().copied().collect())
                .unwrap_or_default();
            for seq in seqs {
                let Some(id) = self.tasks.get(&seq).map(|t| t.id.clone()) else {
                    continue;
                };
                let arrivals = self.waits.by_task.get(&id).cloned().unwrap_or_default();
                self.remove(seq);
                for arrival in arrivals {
                    self.unhold(arrival);
                }
            }
        }
        // Their sessions went: nothing is parked on them any more.
        if !self.parked_gone.is_empty() {
            (self.parked_gone).retain(|_, scope| scope.is_none_or(|s| !scopes.contains(&s)));
        }
    }

    /// Drops the tasks whose lifetime is over: the oldest ones.
    pub(super) fn expire(&mut self, now: Instant) {
        let ttl = Duration::from_millis(TTL_MS);
        while let Some((&seq, t)) = self.tasks.first_key_value()
            && now.saturating_duration_since(t.created) >= ttl
        {
            self.remove(seq);
        }
    }

    /// Whether task `id` is there and has not ended.
    pub(super) fn is_running(&self, id: &str) -> bool {
        self.get(id).is_some_and(|t| !t.terminal())
    }
}
