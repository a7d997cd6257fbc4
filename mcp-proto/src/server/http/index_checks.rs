//! Checks for tests and fuzzing (feature `index-checks`): what the session table keeps
//! up to date as exchanges and streams change (which sessions are busy, which park on
//! tasks) is compared after every request and at every deadline with a walk of
//! everything the endpoint holds, and the walks over all exchanges and streams are
//! counted, so that a test can tell that a request costs no walk.

use std::collections::{BTreeMap, BTreeSet};

use super::HttpEndpoint;
use super::exchange::{Exchange, KeyMap, Listener, holds_session};
#[cfg(doc)]
use super::sessions::Sessions;

impl HttpEndpoint {
    /// Checks what the session table keeps up to date as exchanges and streams change
    /// (which sessions are busy, how many times, ordered by their last store write; which
    /// have parked tasks) against a walk of everything. Not counted as walked.
    pub(super) fn check_session_indexes(&self) {
        let Some(table) = &self.sessions else {
            return;
        };
        let before = WALKED.with(std::cell::Cell::get);
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for s in busy_session_ids(&self.exchanges, &self.listeners) {
            *counts.entry(s).or_default() += 1;
        }
        WALKED.with(|w| w.set(before));
        let tasks = &self.server.tasks;
        let due = |scope| (!tasks.results_due_pending(scope)).then(|| tasks.has_results_due(scope));
        table.check_indexes(&counts.into_iter().collect::<Vec<_>>(), due);
        // The tasks the machine has marked parked on elsewhere are those the states held
        // in the table park on (and those of sessions gone whose tasks it still holds).
        let ended = table.ended_scopes();
        let marked: BTreeSet<&str> = (self.server.tasks.parked_elsewhere_ids().into_iter())
            .filter(|(_, scope)| scope.is_none_or(|s| !ended.contains(&s)))
            .map(|(id, _)| id)
            .collect();
        let held: BTreeSet<&str> = table.parked_task_ids().collect();
        assert_eq!(marked, held, "tasks parked on in the sessions held");
    }
}

/// The sessions with a request being handled, or a client attached to one of their
/// streams (such a session does not idle out): each once per exchange or stream. A walk
/// of everything the endpoint holds: the endpoint keeps these counts as they change
/// ([`Sessions::hold`]); this is what the tests check them against.
fn busy_session_ids<'a>(
    exchanges: &'a KeyMap<Exchange>,
    listeners: &'a KeyMap<Listener>,
) -> impl Iterator<Item = &'a str> {
    let held = (exchanges.values())
        .inspect(|_| walked())
        .filter(|e| holds_session(e))
        .filter_map(|e| e.session.as_deref());
    let listening = (listeners.values())
        .inspect(|_| walked())
        .filter(|l| l.attach.is_some())
        .map(|l| l.session.as_str());
    held.chain(listening)
}

thread_local! {
    /// Exchanges and `GET` streams looked at by walks over all of them, for the tests of
    /// what a request or an event costs.
    pub(super) static WALKED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts one exchange or stream looked at by a walk over all of them.
fn walked() {
    WALKED.with(|w| w.set(w.get() + 1));
}
