//! The indexes the task store keeps up to date as its tasks change ([`Index`]): per
//! principal, per requestor and per legacy scope (a [`Tally`] of their tasks, those that
//! may go to make room and the bytes they keep), and the sets a request or a timer event
//! reads instead of walking every task (the tasks that may go, the outcomes due by time,
//! the tasks whose status changed since told, those with a held `tasks/result`, those
//! parked on elsewhere). [`TaskStore::update`] counts a task out before it changes and
//! back in after; [`TaskStore::check_indexes`] rebuilds them from a walk of every task
//! to check that they did not drift.

use std::collections::{BTreeMap, BTreeSet};

use crate::Instant;
#[cfg(any(test, feature = "index-checks"))]
use crate::jsonrpc::RequestId;
use crate::version::Era;

use super::{Owner, ServerTask, TaskStore};

/// What the store keeps up to date as its tasks change (see [`TaskStore`]).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Index {
    /// The bytes all tasks keep.
    pub(super) bytes: usize,
    /// Per principal.
    pub(super) principals: BTreeMap<Option<String>, Tally>,
    /// Per requestor.
    pub(super) owners: BTreeMap<Owner, Tally>,
    /// Per legacy scope.
    pub(super) scopes: BTreeMap<u64, Tally>,
    /// The tasks that may go to make room, oldest first.
    pub(super) may_go: BTreeSet<u64>,
    /// The tasks whose held outcome falls due by time, by that instant.
    pub(super) due: BTreeSet<(Instant, u64)>,
    /// The 2026 tasks whose status moved on since told.
    pub(super) changed_modern: BTreeSet<u64>,
    /// The 2025 tasks whose status moved on since told, by legacy scope.
    pub(super) changed_legacy: BTreeMap<Option<u64>, BTreeSet<u64>>,
    /// The tasks with a held `tasks/result`.
    pub(super) waited: BTreeSet<u64>,
    /// The tasks with a held `tasks/result` that ended.
    pub(super) ended_waited: BTreeSet<u64>,
    /// The tasks with a held `tasks/result` whose input requests wait for it to go out
    /// on, by legacy scope.
    pub(super) asking_waited: BTreeMap<Option<u64>, BTreeSet<u64>>,
    /// The tasks parked on in a session held outside the machine and still running: the
    /// first expires first.
    pub(super) parked_running: BTreeSet<u64>,
    /// The tasks parked on in a session held outside the machine that ended.
    pub(super) parked_ended: BTreeSet<u64>,
}

/// The tasks of one principal, requestor or scope.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Tally {
    /// All of them, by `seq`.
    pub(super) all: BTreeSet<u64>,
    /// Those that may go to make room.
    pub(super) may_go: BTreeSet<u64>,
    /// The bytes they keep.
    pub(super) bytes: usize,
}

impl Tally {
    /// Counts task `seq` in (`add`) or out.
    fn count(&mut self, seq: u64, may_go: bool, bytes: usize, add: bool) {
        if add {
            self.all.insert(seq);
            if may_go {
                self.may_go.insert(seq);
            }
            self.bytes += bytes;
        } else {
            self.all.remove(&seq);
            self.may_go.remove(&seq);
            // Kept in step by `TaskStore::update` (the index check says so); never wraps.
            self.bytes = self.bytes.saturating_sub(bytes);
        }
    }
}

/// Counts task `seq` in or out of the tally of `key` in `map`; a tally left empty goes.
fn tally<K: Ord + Clone>(
    map: &mut BTreeMap<K, Tally>,
    key: &K,
    (seq, may_go, bytes): (u64, bool, usize),
    add: bool,
) {
    if add && !map.contains_key(key) {
        map.insert(key.clone(), Tally::default());
    }
    let Some(t) = map.get_mut(key) else {
        return;
    };
    t.count(seq, may_go, bytes, add);
    if t.all.is_empty() {
        map.remove(key);
    }
}

/// Puts `item` in `set` (`add`) or takes it out.
fn mark<T: Ord>(set: &mut BTreeSet<T>, item: T, add: bool) {
    if add {
        set.insert(item);
    } else {
        set.remove(&item);
    }
}

/// Puts `seq` in the set of `key` in `map` (`add`) or takes it out; a set left empty
/// goes.
fn mark_in<K: Ord + Copy>(map: &mut BTreeMap<K, BTreeSet<u64>>, key: K, seq: u64, add: bool) {
    if add {
        map.entry(key).or_default().insert(seq);
    } else if let Some(set) = map.get_mut(&key) {
        set.remove(&seq);
        if set.is_empty() {
            map.remove(&key);
        }
    }
}

impl Index {
    /// Counts task `t` in (`add`) or out, as it is now.
    pub(super) fn count(&mut self, t: &ServerTask, add: bool) {
        let seq = t.seq;
        let may_go = t.may_go();
        let bytes = t.kept_bytes();
        if add {
            self.bytes += bytes;
        } else {
            self.bytes = self.bytes.saturating_sub(bytes);
        }
        let entry = (seq, may_go, bytes);
        tally(&mut self.principals, &t.owner.principal, entry, add);
        tally(&mut self.owners, &t.owner, entry, add);
        if let Some(scope) = t.owner.scope {
            tally(&mut self.scopes, &scope, entry, add);
        }
        if may_go {
            mark(&mut self.may_go, seq, add);
        }
        if let Some(due) = t.due_at() {
            mark(&mut self.due, (due, seq), add);
        }
        if t.changed_since_announced() {
            match t.era {
                Era::Modern => mark(&mut self.changed_modern, seq, add),
                Era::Legacy => mark_in(&mut self.changed_legacy, t.owner.scope, seq, add),
            }
        }
        if t.waits > 0 {
            mark(&mut self.waited, seq, add);
            if t.terminal() {
                mark(&mut self.ended_waited, seq, add);
            }
            if t.asks_legacy_input() {
                mark_in(&mut self.asking_waited, t.owner.scope, seq, add);
            }
        }
        if t.parked_elsewhere {
            let set = if t.terminal() {
                &mut self.parked_ended
            } else {
                &mut self.parked_running
            };
            mark(set, seq, add);
        }
    }
}

impl TaskStore {
    /// Checks the indexes against a walk of every task (not counted as walked), and that
    /// creation order is `seq` order; panics on a difference.
    #[cfg(any(test, feature = "index-checks"))]
    pub(in crate::server) fn check_indexes(&self) {
        let mut walked = Index::default();
        let mut created = None;
        for (seq, t) in &self.tasks {
            assert_eq!(*seq, t.seq, "task {} filed under {seq}", t.id);
            assert_eq!(self.by_id.get(&t.id), Some(seq), "task {} by id", t.id);
            assert!(
                created <= Some(t.created),
                "task {} created out of order",
                t.id
            );
            created = Some(t.created);
            walked.count(t, true);
        }
        assert_eq!(self.by_id.len(), self.tasks.len(), "ids of tasks gone");
        assert_eq!(walked, self.index, "task indexes drifted from the tasks");
        let waits = &self.waits;
        let mut by_task: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
        let mut by_request: BTreeMap<RequestId, BTreeSet<u64>> = BTreeMap::new();
        for (arrival, w) in &waits.list {
            (by_task.entry(w.task.clone()).or_default()).insert(*arrival);
            (by_request.entry(w.request.clone()).or_default()).insert(*arrival);
            let orphan = waits.orphans.contains(arrival);
            let gone = !self.by_id.contains_key(&w.task);
            assert_eq!(orphan, gone, "held request {arrival}");
        }
        assert_eq!(by_task, waits.by_task, "held requests by task");
        assert_eq!(by_request, waits.by_request, "held requests by request");
        assert!(waits.orphans.iter().all(|a| waits.list.contains_key(a)));
        assert!(
            (self.parked_gone.keys()).all(|id| !self.by_id.contains_key(id)),
            "tasks parked on elsewhere marked gone while here"
        );
        for t in self.tasks.values() {
            let held = by_task.get(&t.id).map_or(0, BTreeSet::len);
            assert_eq!(t.waits, held, "held requests of task {}", t.id);
        }
    }
}
