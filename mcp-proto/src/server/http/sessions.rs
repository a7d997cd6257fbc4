//! Legacy sessions of an [`HttpEndpoint`](super::HttpEndpoint): `Mcp-Session-Id`s drawn
//! from a caller-seeded generator, each holding one client's legacy state while the
//! machine serves another, bounded in number, expired when idle.
//!
//! When the table is full, an `initialize` still gets a session: sessions idle past
//! the timeout go first, then one that is not in use (no request of it being handled,
//! no stream a client holds, no parked call, no task running or with an end its client
//! was not told) is evicted, preferring one whose id no
//! request has named since its `initialize` (what a flood of `initialize`s leaves),
//! then the one unused longest. A client whose session was evicted gets 404 and
//! initializes again.
//!
//! When every session is in use, one held only by its tasks (none of its requests
//! handled, no stream, no parked call) still gives way to a principal that holds fewer:
//! the one unused longest of the principal holding the most such sessions goes, if that
//! principal holds more than one beyond what the newcomer's holds. So tasks whose results
//! nobody fetches cannot keep a principal out of the table: principals end up holding
//! it in equal shares, and only when every principal holds as many as the newcomer's
//! (or one more) is the `initialize` refused. The session that goes takes its tasks with
//! it (their results are lost to a principal holding more than anyone else).
//!
//! A session's tasks are reachable through it only: the task scope of every session
//! that goes (ended, expired, evicted) is kept until the endpoint takes it
//! ([`Sessions::take_ended_scopes`]) to drop those tasks.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::Instant;
use crate::auth::crypto::Drbg;

use super::super::legacy::LegacyState;

/// A session's state and when it was last used.
#[derive(Debug)]
struct Entry {
    /// `None` while swapped into the machine.
    state: Option<LegacyState>,
    last_used: Instant,
    /// When this endpoint last told the session store the session is in use (saved its
    /// record or touched it); without a store, when it was created or adopted.
    stored: Instant,
    /// A request named the session's id since its `initialize` (or another process
    /// served it): its client came back.
    returned: bool,
}

/// The session table.
#[derive(Debug)]
pub(super) struct Sessions {
    rng: Drbg,
    table: BTreeMap<String, Entry>,
    max: usize,
    idle: Duration,
    /// The task scopes of the sessions gone since the endpoint last took them.
    ended_scopes: Vec<u64>,
    /// Per session id, how many of its requests the endpoint is handling and of its
    /// streams a client holds: the session is busy while it has any
    /// ([`Sessions::hold`]). An id may be counted without an entry (the stream of an
    /// ended session, until its client is told).
    holds: BTreeMap<String, usize>,
    /// Each busy session with an entry, by when the session store last heard it is in
    /// use (`Entry::stored`): the next one due to be touched first.
    by_stored: BTreeSet<(Instant, String)>,
    /// The sessions whose state, held here, holds a 2025 `tasks/result` parked on its
    /// task's input requests: the ids of those tasks (as of when the state was last put
    /// back; none while the state is swapped into the machine).
    parked: BTreeMap<String, Vec<String>>,
    /// The session of each task of [`Sessions::parked`].
    parked_by_task: BTreeMap<String, String>,
    /// Every session by when it was last used: the idle ones first.
    by_use: BTreeSet<(Instant, String)>,
    /// Every session in the order one is evicted for room when none is idle: those no
    /// request named since their `initialize` first, then by last use (then id).
    by_eviction: BTreeSet<(bool, Instant, String)>,
    /// Sessions looked at to make room, for the tests of its cost.
    #[cfg(test)]
    pub(super) looked_at: std::cell::Cell<usize>,
}

/// What keeps a session from being evicted to make room for another.
pub(super) struct InUse<'a, R> {
    /// The principal of the session that needs the room.
    pub(super) newcomer: Option<&'a str>,
    /// Whether the tasks of this task scope include one still running or with an end
    /// its client was not told.
    pub(super) results_due: R,
}

/// Why no session could be created.
#[derive(Debug)]
pub(super) struct Full;

impl Sessions {
    pub(super) fn new(seed: &[u8], max: usize, idle: Duration) -> Self {
        Sessions {
            rng: Drbg::new(seed),
            table: BTreeMap::new(),
            max,
            idle,
            ended_scopes: Vec::new(),
            holds: BTreeMap::new(),
            by_stored: BTreeSet::new(),
            parked: BTreeMap::new(),
            parked_by_task: BTreeMap::new(),
            by_use: BTreeSet::new(),
            by_eviction: BTreeSet::new(),
            #[cfg(test)]
            looked_at: std::cell::Cell::default(),
        }
    }

    /// Keeps the task scope of a session's state that goes.
    fn ended(&mut self, state: Option<&LegacyState>) {
        if let Some(scope) = state.and_then(LegacyState::task_scope) {
            self.ended_scopes.push(scope);
        }
    }

    /// Drops the entry of `id`, keeping its task scope; whether it was there.
    fn drop_entry(&mut self, id: &str) -> bool {
        let Some(entry) = self.table.remove(id) else {
            return false;
        };
        if self.holds.contains_key(id) {
            self.by_stored.remove(&(entry.stored, id.to_owned()));
        }
        self.note_parked(id, Vec::new());
        self.by_use.remove(&(entry.last_used, id.to_owned()));
        (self.by_eviction).remove(&(entry.returned, entry.last_used, id.to_owned()));
        self.ended(entry.state.as_ref());
        true
    }

    /// Puts a new entry in the table.
    fn insert(&mut self, id: String, entry: Entry) {
        if self.holds.contains_key(&id) {
            self.by_stored.insert((entry.stored, id.clone()));
        }
        self.note_parked(&id, parked_tasks(entry.state.as_ref()));
        self.by_use.insert((entry.last_used, id.clone()));
        (self.by_eviction).insert((entry.returned, entry.last_used, id.clone()));
        self.table.insert(id, entry);
    }

    /// Session `id` was used at `now` (`None`: its last use stays), and named by a
    /// request if `returned`: its entry and its place in the orders of eviction.
    fn used(&mut self, id: &str, now: Option<Instant>, returned: bool) {
        let Some(entry) = self.table.get_mut(id) else {
            return;
        };
        let (was_used, was_returned) = (entry.last_used, entry.returned);
        let (last_used, returned) = (now.unwrap_or(was_used), was_returned || returned);
        if (last_used, returned) == (was_used, was_returned) {
            return;
        }
        (entry.last_used, entry.returned) = (last_used, returned);
        let id = id.to_owned();
        if last_used != was_used {
            self.by_use.remove(&(was_used, id.clone()));
            self.by_use.insert((last_used, id.clone()));
        }
        (self.by_eviction).remove(&(was_returned, was_used, id.clone()));
        (self.by_eviction).insert((returned, last_used, id));
    }

    /// Keeps [`Sessions::parked_session_of`] in step with the state of `id` held here,
    /// whose calls are parked on the input requests of `tasks` ([`parked_tasks`]; none
    /// while no state is held, as while it is swapped into the machine or once the
    /// session went).
    fn note_parked(&mut self, id: &str, tasks: Vec<String>) {
        if self.parked.get(id).map_or(&[][..], Vec::as_slice) == tasks.as_slice() {
            return;
        }
        for task in self.parked.remove(id).into_iter().flatten() {
            self.parked_by_task.remove(&task);
        }
        if tasks.is_empty() {
            return;
        }
        for task in &tasks {
            self.parked_by_task.insert(task.clone(), id.to_owned());
        }
        self.parked.insert(id.to_owned(), tasks);
    }

    /// The session held here (its state not in the machine) whose state has a 2025
    /// `tasks/result` parked on the input requests of task `task`.
    pub(super) fn parked_session_of(&self, task: &str) -> Option<&str> {
        self.parked_by_task.get(task).map(String::as_str)
    }

    /// One more request of session `id` is being handled, or one more of its streams
    /// held by a client: the session is busy (see [`Sessions::is_busy`]).
    pub(super) fn hold(&mut self, id: &str) {
        if let Some(n) = self.holds.get_mut(id) {
            *n += 1;
            return;
        }
        self.holds.insert(id.to_owned(), 1);
        if let Some(entry) = self.table.get(id) {
            self.by_stored.insert((entry.stored, id.to_owned()));
        }
    }

    /// What [`Sessions::hold`] counted for `id` ended (answered, cancelled, or its
    /// client let go of the stream).
    pub(super) fn release(&mut self, id: &str) {
        let Some(n) = self.holds.get_mut(id) else {
            return;
        };
        *n -= 1;
        if *n > 0 {
            return;
        }
        self.holds.remove(id);
        if let Some(entry) = self.table.get(id) {
            self.by_stored.remove(&(entry.stored, id.to_owned()));
        }
    }

    /// Counts one session looked at to make room.
    fn looked(&self) {
        #[cfg(test)]
        self.looked_at.set(self.looked_at.get() + 1);
    }

    /// Whether session `id` has a request being handled or a stream a client holds.
    pub(super) fn is_busy(&self, id: &str) -> bool {
        self.holds.contains_key(id)
    }

    /// Checks the counts of what keeps each session busy against `counts` (found by a
    /// walk, in id order), the order of the busy sessions by their last store write,
    /// and the sessions with parked tasks against their states.
    #[cfg(any(test, feature = "index-checks"))]
    pub(super) fn check_indexes(&self, counts: &[(&str, usize)]) {
        let held: Vec<(&str, usize)> = (self.holds.iter())
            .map(|(id, n)| (id.as_str(), *n))
            .collect();
        assert_eq!(held, counts, "what keeps each session busy");
        let by_stored: BTreeSet<(Instant, String)> = (self.holds.keys())
            .filter_map(|id| Some((self.table.get(id)?.stored, id.clone())))
            .collect();
        assert_eq!(
            self.by_stored, by_stored,
            "busy sessions by their last store write"
        );
        let mut parked: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (id, entry) in &self.table {
            let tasks = parked_tasks(entry.state.as_ref());
            if !tasks.is_empty() {
                parked.insert(id.clone(), tasks);
            }
        }
        assert_eq!(self.parked, parked, "sessions with parked tasks");
        let by_task: BTreeMap<String, String> = (parked.iter())
            .flat_map(|(id, tasks)| tasks.iter().map(|t| (t.clone(), id.clone())))
            .collect();
        assert_eq!(self.parked_by_task, by_task, "sessions by parked task");
        let by_use: BTreeSet<(Instant, String)> = (self.table.iter())
            .map(|(id, e)| (e.last_used, id.clone()))
            .collect();
        assert_eq!(self.by_use, by_use, "sessions by last use");
        let by_eviction: BTreeSet<(bool, Instant, String)> = (self.table.iter())
            .map(|(id, e)| (e.returned, e.last_used, id.clone()))
            .collect();
        assert_eq!(
            self.by_eviction, by_eviction,
            "sessions in the order of eviction"
        );
    }

    /// When the session store last heard that a busy session held here is in use, for
    /// the one that heard it longest ago.
    pub(super) fn first_busy_stored(&self) -> Option<Instant> {
        self.by_stored.first().map(|(at, _)| *at)
    }

    /// The busy sessions held here whose store last heard they are in use at an
    /// instant that is `due` (a test that holds up to some instant), that one first.
    pub(super) fn busy_stored_due(&self, due: impl Fn(Instant) -> bool) -> Vec<String> {
        (self.by_stored.iter())
            .take_while(|(stored, _)| due(*stored))
            .map(|(_, id)| id.clone())
            .collect()
    }

    /// The task scopes of the sessions gone since the last call (a state swapped into
    /// the machine when its session went counts once it is put back).
    pub(super) fn take_ended_scopes(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.ended_scopes)
    }

    /// A fresh unguessable token (128 bits, base64url): session ids and the public ids
    /// of server→client requests.
    pub(super) fn token(&mut self) -> String {
        self.rng.token(16)
    }

    /// A new session with an empty legacy state, made room for when the table is full
    /// (the ids of the sessions dropped for it are added to `expired`); `Full` when
    /// every session is in use: `busy`, holding a parked call, or with a task scope
    /// that `results_due`.
    pub(super) fn create(
        &mut self,
        now: Instant,
        in_use: InUse<'_, impl Fn(u64) -> bool>,
        expired: &mut Vec<String>,
    ) -> Result<String, Full> {
        self.make_room(now, in_use, expired)?;
        let id = self.token();
        self.insert(
            id.clone(),
            Entry {
                state: Some(LegacyState::default()),
                last_used: now,
                stored: now,
                returned: false,
            },
        );
        Ok(id)
    }

    /// Takes in session `id`, initialized by another process, with `state`: as
    /// [`Sessions::create`] for room, under the id it already has.
    pub(super) fn adopt(
        &mut self,
        id: &str,
        state: LegacyState,
        now: Instant,
        in_use: InUse<'_, impl Fn(u64) -> bool>,
        expired: &mut Vec<String>,
    ) -> Result<(), Full> {
        self.make_room(now, in_use, expired)?;
        self.insert(
            id.to_owned(),
            Entry {
                state: Some(state),
                last_used: now,
                stored: now,
                returned: true,
            },
        );
        Ok(())
    }

    /// Room for one more session (see the module's documentation): the ids of the
    /// sessions dropped for it are added to `expired`.
    fn make_room(
        &mut self,
        now: Instant,
        in_use: InUse<'_, impl Fn(u64) -> bool>,
        expired: &mut Vec<String>,
    ) -> Result<(), Full> {
        if self.table.len() < self.max {
            return Ok(());
        }
        let InUse {
            newcomer,
            results_due,
        } = in_use;
        expired.extend(self.sweep(now));
        if self.table.len() < self.max {
            return Ok(());
        }
        let idle = |state: &LegacyState| {
            state.no_parked_calls() && !state.task_scope().is_some_and(&results_due)
        };
        // The first in the order of eviction not in use: those in use are passed over,
        // and they are few (each holds a request, a stream, a parked call or a task).
        let victim = (self.by_eviction.iter())
            .inspect(|_| self.looked())
            .find(|(_, _, id)| {
                !self.is_busy(id)
                    && (self.table.get(id.as_str()))
                        .and_then(|e| e.state.as_ref())
                        .is_some_and(idle)
            })
            .map(|(_, _, id)| id.clone());
        let victim = victim
            .or_else(|| self.fair_share_victim(newcomer))
            .ok_or(Full)?;
        self.drop_entry(&victim);
        expired.push(victim);
        Ok(())
    }

    /// With every session in use: the one unused longest among those held only by their
    /// tasks, of the principal holding the most of them, if that is more than one beyond
    /// what `newcomer`'s principal holds (see the module's documentation). One pass.
    fn fair_share_victim(&self, newcomer: Option<&str>) -> Option<String> {
        // Per principal: how many it holds, and its one unused longest.
        let mut held: BTreeMap<Option<&str>, (usize, Instant, &str)> = BTreeMap::new();
        for (id, entry) in &self.table {
            let Some(state) = &entry.state else {
                continue;
            };
            if self.is_busy(id) || !state.no_parked_calls() {
                continue;
            }
            let principal = state.principal();
            let slot = held
                .entry(principal)
                .or_insert((0, entry.last_used, id.as_str()));
            slot.0 += 1;
            if entry.last_used < slot.1 {
                (slot.1, slot.2) = (entry.last_used, id.as_str());
            }
        }
        let mine = held.get(&newcomer).map_or(0, |h| h.0);
        let (count, _, oldest) = held.values().max_by_key(|h| h.0)?;
        (*count > mine + 1).then(|| (*oldest).to_owned())
    }

    /// Runs `f` on the state of `id` when it is here and not swapped into the machine,
    /// and counts the session as used now (the shared store says it lives); whether it
    /// was here.
    pub(super) fn refresh(
        &mut self,
        id: &str,
        now: Instant,
        f: impl FnOnce(&mut LegacyState),
    ) -> bool {
        self.used(id, Some(now), true);
        let Some(entry) = self.table.get_mut(id) else {
            return false;
        };
        if let Some(state) = &mut entry.state {
            f(state);
            let tasks = parked_tasks(Some(state));
            self.note_parked(id, tasks);
        }
        true
    }

    /// A random first stream number, so that the streams of several processes sharing
    /// an event store do not collide: below 2^52, leaving room to count up.
    pub(super) fn stream_base(&mut self) -> u64 {
        let mut bytes = [0u8; 8];
        self.rng.fill(&mut bytes);
        (u64::from_be_bytes(bytes) >> 12).max(1)
    }

    /// Drops the sessions idle longer than the idle timeout (and not busy); their ids.
    pub(super) fn sweep(&mut self, now: Instant) -> Vec<String> {
        let idle = self.idle;
        // From the one unused longest, as long as they are idle; those in use are
        // passed over (they are few).
        let expired: Vec<String> = (self.by_use.iter())
            .inspect(|_| self.looked())
            .take_while(|(used, _)| now.saturating_duration_since(*used) >= idle)
            .filter(|(_, id)| !self.is_busy(id))
            .map(|(_, id)| id.clone())
            .collect();
        for id in &expired {
            self.drop_entry(id);
        }
        expired
    }

    /// Whether `id`, named by a request, is a live session (not idle past its timeout
    /// unless busy): its client came back. An expired one is dropped.
    pub(super) fn knows(&mut self, id: &str, now: Instant) -> bool {
        let busy = self.is_busy(id);
        let Some(entry) = self.table.get_mut(id) else {
            return false;
        };
        if !busy && now.saturating_duration_since(entry.last_used) >= self.idle {
            self.drop_entry(id);
            return false;
        }
        self.used(id, None, true);
        true
    }

    /// This endpoint told the session store at `now` that `id` is in use.
    pub(super) fn mark_stored(&mut self, id: &str, now: Instant) {
        let Some(entry) = self.table.get_mut(id) else {
            return;
        };
        if self.holds.contains_key(id) && entry.stored != now {
            self.by_stored.remove(&(entry.stored, id.to_owned()));
            self.by_stored.insert((now, id.to_owned()));
        }
        entry.stored = now;
    }

    /// The tasks the states held here park on (see [`Sessions::parked_session_of`]).
    #[cfg(any(test, feature = "index-checks"))]
    pub(super) fn parked_task_ids(&self) -> impl Iterator<Item = &str> {
        self.parked_by_task.keys().map(String::as_str)
    }

    /// The task scopes of the sessions gone since [`Sessions::take_ended_scopes`] last
    /// took them (their tasks are still in the machine).
    #[cfg(any(test, feature = "index-checks"))]
    pub(super) fn ended_scopes(&self) -> &[u64] {
        &self.ended_scopes
    }

    /// Takes the state of `id` out to swap it into the machine.
    pub(super) fn take(&mut self, id: &str, now: Instant) -> Option<LegacyState> {
        self.used(id, Some(now), false);
        let state = self.table.get_mut(id)?.state.take();
        self.note_parked(id, Vec::new());
        state
    }

    /// The state of `id`, unless it is swapped into the machine.
    pub(super) fn state(&self, id: &str) -> Option<&LegacyState> {
        self.table.get(id)?.state.as_ref()
    }

    /// Whether session `id` is here (its state may be swapped into the machine).
    pub(super) fn holds(&self, id: &str) -> bool {
        self.table.contains_key(id)
    }

    /// Puts the state of `id` back.
    pub(super) fn put_back(&mut self, id: &str, state: LegacyState) {
        if !self.table.contains_key(id) {
            // The session went while its state was in the machine.
            self.ended(Some(&state));
            return;
        }
        self.note_parked(id, parked_tasks(Some(&state)));
        if let Some(entry) = self.table.get_mut(id) {
            entry.state = Some(state);
        }
    }

    /// Ends session `id`; whether it existed.
    pub(super) fn remove(&mut self, id: &str) -> bool {
        self.drop_entry(id)
    }

    /// Sessions held.
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }
}

/// The tasks on whose input requests a 2025 `tasks/result` of `state` is parked, each
/// once, in order.
pub(super) fn parked_tasks(state: Option<&LegacyState>) -> Vec<String> {
    let tasks: BTreeSet<&str> = state
        .into_iter()
        .flat_map(LegacyState::parked_tasks)
        .collect();
    tasks.into_iter().map(str::to_owned).collect()
}
