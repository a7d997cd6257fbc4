//! Which legacy sessions have results due: a session with a task still running, or
//! whose end its client was not told yet, must not be evicted for another's room
//! ([`TaskStore::has_results_due`], read from the per-scope tally). A table of
//! sessions held outside the machine (an HTTP endpoint's) asks the store to log the
//! scopes where that answer changes ([`TaskStore::log_results_due`]), so that it learns
//! of them without asking for each session; [`TaskStore::update`], `insert` and
//! `remove` note the change around each change to a task.

use super::TaskStore;

impl TaskStore {
    /// Whether the legacy session whose task scope is `scope` has a task still running
    /// or whose end its client was not told yet: such a session must not be evicted for
    /// another's room.
    pub(in crate::server) fn has_results_due(&self, scope: u64) -> bool {
        (self.index.scopes.get(&scope)).is_some_and(|t| t.all.len() > t.may_go.len())
    }

    /// From now on, keeps the legacy scopes whose [`TaskStore::has_results_due`]
    /// changes until [`TaskStore::take_results_due_changes`] takes them: for a table of
    /// sessions held outside the machine that must know which of them have results due
    /// without asking for each.
    pub(in crate::server) fn log_results_due(&mut self) {
        self.due_log.get_or_insert_default();
    }

    /// The legacy scopes whose [`TaskStore::has_results_due`] changed since the last
    /// call (as far as logged: see [`TaskStore::log_results_due`]), in order; each may
    /// have changed back since.
    pub(in crate::server) fn take_results_due_changes(&mut self) -> Vec<u64> {
        match &mut self.due_log {
            Some(log) if !log.is_empty() => std::mem::take(log).into_iter().collect(),
            _ => Vec::new(),
        }
    }

    /// Whether scope `scope` has a change of [`TaskStore::has_results_due`] not taken
    /// yet.
    #[cfg(any(test, feature = "index-checks"))]
    pub(in crate::server) fn results_due_pending(&self, scope: u64) -> bool {
        self.due_log
            .as_ref()
            .is_some_and(|log| log.contains(&scope))
    }

    /// Before a task of scope `scope` changes, when changes are logged: the scope and
    /// whether it has results due.
    pub(super) fn results_due_before(&self, scope: Option<u64>) -> Option<(u64, bool)> {
        self.due_log.as_ref()?;
        scope.map(|s| (s, self.has_results_due(s)))
    }

    /// After that change: logs the scope if whether it has results due changed.
    pub(super) fn note_results_due(&mut self, before: Option<(u64, bool)>) {
        let Some((scope, due)) = before else {
            return;
        };
        if self.has_results_due(scope) != due
            && let Some(log) = &mut self.due_log
        {
            log.insert(scope);
        }
    }
}
