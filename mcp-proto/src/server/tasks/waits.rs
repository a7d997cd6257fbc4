//! The 2025 `tasks/result` requests held until their task ends ([`Waits`]): kept by
//! arrival, indexed by task id and by request id, with the arrivals whose task went
//! (expired or dropped), which are answered "not found". Each task counts the requests
//! held for it, so that the store's indexes know the tasks waited on without a walk;
//! the server settles the held requests (`task_events.rs`) once their task ends, asks
//! for input or goes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::Instant;
use crate::jsonrpc::RequestId;

use super::{TTL_MS, TaskStore, looked};

/// The 2025 `tasks/result` requests held until their task ends, by arrival.
#[derive(Debug, Default)]
pub(super) struct Waits {
    pub(super) next: u64,
    /// By arrival.
    pub(super) list: BTreeMap<u64, Waiting>,
    /// Arrivals by task id.
    pub(super) by_task: BTreeMap<String, BTreeSet<u64>>,
    /// Arrivals by request id.
    pub(super) by_request: BTreeMap<RequestId, BTreeSet<u64>>,
    /// The arrivals whose task is gone (expired or dropped): to be answered "not found".
    pub(super) orphans: BTreeSet<u64>,
}

/// A 2025 `tasks/result` held until its task ends.
#[derive(Debug)]
pub(in crate::server) struct Waiting {
    /// The request.
    pub request: RequestId,
    /// The task.
    pub task: String,
}

impl TaskStore {
    /// The held `tasks/result` requests.
    pub(in crate::server) fn waiting(&self) -> usize {
        self.waits.list.len()
    }

    /// Holds `wait` until its task ends.
    pub(in crate::server) fn hold(&mut self, wait: Waiting) {
        self.waits.next += 1;
        let arrival = self.waits.next;
        (self.waits.by_task.entry(wait.task.clone()).or_default()).insert(arrival);
        (self
            .waits
            .by_request
            .entry(wait.request.clone())
            .or_default())
        .insert(arrival);
        match self.seq_of(&wait.task) {
            Some(seq) => {
                self.update(seq, |t, _| t.waits += 1);
            }
            None => {
                self.waits.orphans.insert(arrival);
            }
        }
        self.waits.list.insert(arrival, wait);
    }

    /// Stops holding the request that arrived `arrival`: the request, unless there is
    /// none.
    pub(in crate::server) fn unhold(&mut self, arrival: u64) -> Option<Waiting> {
        let wait = self.waits.list.remove(&arrival)?;
        self.waits.orphans.remove(&arrival);
        if let Some(set) = self.waits.by_task.get_mut(&wait.task) {
            set.remove(&arrival);
            if set.is_empty() {
                self.waits.by_task.remove(&wait.task);
            }
        }
        if let Some(set) = self.waits.by_request.get_mut(&wait.request) {
            set.remove(&arrival);
            if set.is_empty() {
                self.waits.by_request.remove(&wait.request);
            }
        }
        if let Some(seq) = self.seq_of(&wait.task) {
            self.update(seq, |t, _| t.waits = t.waits.saturating_sub(1));
        }
        Some(wait)
    }

    /// Stops holding every request with id `request`.
    pub(in crate::server) fn unhold_request(&mut self, request: &RequestId) {
        let arrivals = self
            .waits
            .by_request
            .get(request)
            .cloned()
            .unwrap_or_default();
        for arrival in arrivals {
            self.unhold(arrival);
        }
    }

    /// Stops holding every request.
    pub(in crate::server) fn unhold_all(&mut self) {
        let waited: Vec<u64> = self.index.waited.iter().copied().collect();
        for seq in waited {
            self.update(seq, |t, _| t.waits = 0);
        }
        self.waits = Waits {
            next: self.waits.next,
            ..Waits::default()
        };
    }

    /// The held requests that may be settled now, in the order they came: those whose
    /// task ended or is gone, and those whose task's input requests wait for a
    /// `tasks/result` to go out on, of legacy scope `scope`.
    pub(in crate::server) fn waits_to_settle(&self, scope: Option<u64>) -> Vec<(u64, &Waiting)> {
        let asking = scope.and_then(|s| self.index.asking_waited.get(&Some(s)));
        self.arrivals_of(
            self.index
                .ended_waited
                .iter()
                .chain(asking.into_iter().flatten()),
        )
        .chain(self.waits.orphans.iter().copied())
        .collect::<BTreeSet<u64>>()
        .into_iter()
        .filter_map(|a| self.waits.list.get(&a).map(|w| (a, w)))
        .collect()
    }

    /// The held requests whose task's input requests wait for a `tasks/result` to go
    /// out on, in the order they came.
    pub(in crate::server) fn waits_asking(&self) -> Vec<&Waiting> {
        self.arrivals_of(self.index.asking_waited.values().flatten())
            .collect::<BTreeSet<u64>>()
            .into_iter()
            .filter_map(|a| self.waits.list.get(&a))
            .collect()
    }

    /// The arrivals of the requests held for the tasks `seqs`.
    fn arrivals_of<'a>(&'a self, seqs: impl Iterator<Item = &'a u64>) -> impl Iterator<Item = u64> {
        (seqs.filter_map(|seq| self.tasks.get(seq)))
            .inspect(|_| looked(1))
            .filter_map(|t| self.waits.by_task.get(&t.id))
            .flatten()
            .copied()
    }

    /// When the task of the oldest held request's task expires (the held requests of a
    /// task gone are answered at the next input).
    pub(in crate::server) fn waits_expiry(&self) -> Option<Instant> {
        let ttl = Duration::from_millis(TTL_MS);
        let seq = self.index.waited.first()?;
        self.tasks.get(seq).map(|t| t.created.saturating_add(ttl))
    }
}
