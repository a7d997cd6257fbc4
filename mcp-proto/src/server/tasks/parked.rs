//! The tasks a 2025 `tasks/result` is parked on (waiting for the answers to the task's
//! input requests) in the legacy state of a session held outside the machine (an HTTP
//! endpoint's session table): the endpoint marks them as it takes states in and puts
//! them back, and the store keeps them ordered so that when the first of those calls is
//! due to end (its task expiring, ending or gone) is known without a walk of the
//! sessions.

use std::time::Duration;

use crate::Instant;

use super::{TTL_MS, TaskStore};

impl TaskStore {
    /// Marks task `id` as parked on (`on`) or no longer parked on in the state of a
    /// session held outside the machine, whose legacy task scope is `scope`. A task gone
    /// already is remembered as such (the call parked on it is due to end at once).
    pub(in crate::server) fn mark_parked_elsewhere(
        &mut self,
        id: &str,
        scope: Option<u64>,
        on: bool,
    ) {
        match self.seq_of(id) {
            Some(seq) => {
                if self
                    .tasks
                    .get(&seq)
                    .is_some_and(|t| t.parked_elsewhere != on)
                {
                    self.update(seq, |t, _| t.parked_elsewhere = on);
                }
            }
            None if on => {
                self.parked_gone.insert(id.to_owned(), scope);
            }
            None => {
                self.parked_gone.remove(id);
            }
        }
    }

    /// When the first call parked elsewhere is due to end: `now` when a task parked on
    /// ended or went, else the expiry of the oldest one parked on. No walk.
    pub(in crate::server) fn parked_elsewhere_expiry(&self, now: Instant) -> Option<Instant> {
        if !self.index.parked_ended.is_empty() || !self.parked_gone.is_empty() {
            return Some(now);
        }
        let seq = self.index.parked_running.first()?;
        let ttl = Duration::from_millis(TTL_MS);
        self.tasks.get(seq).map(|t| t.created.saturating_add(ttl))
    }

    /// The tasks parked on elsewhere whose calls are due by `by` (as
    /// [`TaskStore::parked_elsewhere_expiry`] says, with `now` the present time): those
    /// that ended or went, and those expiring by then. Only those.
    pub(in crate::server) fn parked_elsewhere_due(&self, now: Instant, by: Instant) -> Vec<String> {
        let ttl = Duration::from_millis(TTL_MS);
        let mut due: Vec<String> = Vec::new();
        if now <= by {
            let ended = (self.index.parked_ended.iter()).filter_map(|s| self.tasks.get(s));
            due.extend(ended.map(|t| t.id.clone()));
            due.extend(self.parked_gone.keys().cloned());
        }
        let expiring = (self.index.parked_running.iter())
            .filter_map(|s| self.tasks.get(s))
            .take_while(|t| t.created.saturating_add(ttl) <= by);
        due.extend(expiring.map(|t| t.id.clone()));
        due
    }

    /// The tasks marked parked on elsewhere (also those gone since), for the checks of
    /// the endpoint's session table against them.
    #[cfg(any(test, feature = "index-checks"))]
    pub(in crate::server) fn parked_elsewhere_ids(&self) -> Vec<(&str, Option<u64>)> {
        let marked = (self.tasks.values()).filter(|t| t.parked_elsewhere);
        let marked = marked.map(|t| (t.id.as_str(), t.owner.scope));
        let gone = (self.parked_gone.iter()).map(|(id, scope)| (id.as_str(), *scope));
        marked.chain(gone).collect()
    }
}
