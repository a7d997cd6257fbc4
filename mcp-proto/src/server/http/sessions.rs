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
//! Neither choice walks the table: the table keeps the sessions that may be evicted in
//! that order, and those held only by their tasks per principal with each principal's
//! count. A session that changed (used, held, swapped into the machine and put back) is
//! put in its place once at the start of the endpoint's next step or before room is
//! made ([`Sessions::settle`]); the endpoint tells the table when a task scope's
//! results-due state changes (as the machine's task store logs it).
//!
//! A session's tasks are reachable through it only: the task scope of every session
//! that goes (ended, expired, evicted) is kept until the endpoint takes it
//! ([`Sessions::take_ended_scopes`]) to drop those tasks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crate::Instant;
use crate::auth::crypto::Drbg;

use super::super::legacy::LegacyState;

/// A session id as the table's indexes hold it: shared by the entry and every index it
/// is in, so that moving a session in an index copies no text.
type Id = Arc<str>;

/// A session's state and when it was last used.
#[derive(Debug)]
struct Entry {
    /// Its id (the table's key).
    id: Id,
    /// `None` while swapped into the machine.
    state: Option<LegacyState>,
    last_used: Instant,
    /// When this endpoint last told the session store the session is in use (saved its
    /// record or touched it); without a store, when it was created or adopted.
    stored: Instant,
    /// A request named the session's id since its `initialize` (or another process
    /// served it): its client came back.
    returned: bool,
    /// Of the state, as of when it was last held here: its principal, its task scope,
    /// whether a call of it is parked waiting for its client.
    principal: Option<String>,
    scope: Option<u64>,
    parked_calls: bool,
    /// Whether its task scope has a task running or with an end its client was not told
    /// (as the endpoint last said: [`Sessions::results_due_changed`]).
    due: bool,
    /// Where it counts among the sessions that may be evicted and in the shares (as of
    /// the last [`Sessions::settle`]), and whether it may have moved since.
    shared: Option<Share>,
    unsettled: bool,
}

impl Entry {
    fn new(id: Id, state: LegacyState, now: Instant, returned: bool, due: bool) -> Self {
        let mut entry = Entry {
            id,
            state: None,
            last_used: now,
            stored: now,
            returned,
            principal: None,
            scope: None,
            parked_calls: false,
            due,
            shared: None,
            unsettled: false,
        };
        entry.hold_state(state);
        entry
    }

    /// Holds `state` here, and what of it decides eviction.
    fn hold_state(&mut self, state: LegacyState) {
        self.note_state(&state);
        self.state = Some(state);
    }

    /// Takes what of `state` decides eviction.
    fn note_state(&mut self, state: &LegacyState) {
        if self.principal.as_deref() != state.principal() {
            self.principal = state.principal().map(str::to_owned);
        }
        self.scope = state.task_scope();
        self.parked_calls = !state.no_parked_calls();
    }

    /// Whether it may be evicted for room or counts in its principal's share, not
    /// being busy: its state held here, no call of it parked.
    fn shares(&self) -> bool {
        self.state.is_some() && !self.parked_calls
    }
}

/// The session table.
#[derive(Debug)]
pub(super) struct Sessions {
    rng: Drbg,
    table: BTreeMap<Id, Entry>,
    max: usize,
    idle: Duration,
    /// The task scopes of the sessions gone since the endpoint last took them.
    ended_scopes: Vec<u64>,
    /// Per session id, how many of its requests the endpoint is handling and of its
    /// streams a client holds: the session is busy while it has any
    /// ([`Sessions::hold`]). An id may be counted without an entry (the stream of an
    /// ended session, until its client is told).
    holds: BTreeMap<Id, usize>,
    /// Each busy session with an entry, by when the session store last heard it is in
    /// use (`Entry::stored`): the next one due to be touched first.
    by_stored: BTreeSet<(Instant, Id)>,
    /// The sessions whose state, held here, holds a 2025 `tasks/result` parked on its
    /// task's input requests: the ids of those tasks (as of when the state was last put
    /// back; none while the state is swapped into the machine).
    parked: BTreeMap<Id, Vec<String>>,
    /// The session of each task of [`Sessions::parked`].
    parked_by_task: BTreeMap<String, Id>,
    /// Every session that is not busy by when it was last used: the idle ones first. A
    /// busy session never expires, so it is left out (and put back when let go): a
    /// client holding many streams open does not make each sweep pass over them.
    by_use: BTreeSet<(Instant, Id)>,
    /// Every session in the order one is evicted for room when none is idle: those no
    /// request named since their `initialize` first, then by last use (then id).
    by_eviction: BTreeSet<(bool, Instant, Id)>,
    /// The sessions not in use (not busy, state held here, no parked call, no result
    /// due), in the order of eviction: the first goes for room.
    evictable: BTreeSet<(bool, Instant, Id)>,
    /// Per principal, its sessions not busy, with their state held here and no parked
    /// call (in use by their tasks alone, or not at all), by last use (then id).
    shares: BTreeMap<Option<String>, BTreeSet<(Instant, Id)>>,
    /// The principals of [`Sessions::shares`] by how many sessions they hold there
    /// (then principal): the last holds the most.
    share_counts: BTreeSet<(usize, Option<String>)>,
    /// The session of each task scope.
    by_scope: BTreeMap<u64, Id>,
    /// The sessions that may have moved among those that may be evicted and in the
    /// shares since the last [`Sessions::settle`].
    unsettled: Vec<Id>,
    /// Sessions looked at to make room, for the tests of its cost.
    #[cfg(test)]
    pub(super) looked_at: std::cell::Cell<usize>,
}

/// Who needs room, and what keeps the new session from being evicted for another.
pub(super) struct InUse<'a, R> {
    /// The principal of the session that needs the room.
    pub(super) newcomer: Option<&'a str>,
    /// Whether the tasks of this task scope include one still running or with an end
    /// its client was not told (asked of the new session's scope).
    pub(super) results_due: R,
}

/// Where a session counts among the sessions of [`Sessions`] that may be evicted and in
/// the shares.
#[derive(Clone, Debug, PartialEq)]
struct Share {
    returned: bool,
    used: Instant,
    principal: Option<String>,
    /// Whether its task scope has results due (else it may be evicted).
    due: bool,
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
            evictable: BTreeSet::new(),
            shares: BTreeMap::new(),
            share_counts: BTreeSet::new(),
            by_scope: BTreeMap::new(),
            unsettled: Vec::new(),
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
        let id = &entry.id;
        if self.holds.contains_key(id) {
            self.by_stored.remove(&(entry.stored, id.clone()));
        }
        let (returned, used) = (entry.returned, entry.last_used);
        mark(&mut self.by_use, (used, id.clone()), false);
        mark(&mut self.by_eviction, (returned, used, id.clone()), false);
        self.count_scope(id, entry.scope, false);
        self.count_share(id, entry.shared.as_ref(), false);
        self.note_parked(id, Vec::new());
        self.ended(entry.state.as_ref());
        true
    }

    /// Puts a new entry in the table.
    fn insert(&mut self, entry: Entry) {
        let id = entry.id.clone();
        let busy = self.holds.contains_key(&id);
        if busy {
            self.by_stored.insert((entry.stored, id.clone()));
        }
        let tasks = parked_tasks(entry.state.as_ref());
        let (returned, used) = (entry.returned, entry.last_used);
        mark(&mut self.by_use, (used, id.clone()), !busy);
        mark(&mut self.by_eviction, (returned, used, id.clone()), true);
        self.count_scope(&id, entry.scope, true);
        self.table.insert(id.clone(), entry);
        self.note_parked(&id, tasks);
        self.unsettle(&id);
    }

    /// Where session `id` belongs among the sessions that may be evicted and in the
    /// shares: `None` when it is busy, its state is in the machine, a call of it is
    /// parked, or it is not here.
    fn share_of(&self, id: &str) -> Option<Share> {
        let e = self.table.get(id)?;
        (!self.holds.contains_key(id) && e.shares()).then(|| Share {
            returned: e.returned,
            used: e.last_used,
            principal: e.principal.clone(),
            due: e.due,
        })
    }

    /// Session `id` may have moved among the sessions that may be evicted and in the
    /// shares: it is put in its place at the next [`Sessions::settle`].
    fn unsettle(&mut self, id: &str) {
        if let Some(e) = self.table.get_mut(id)
            && !e.unsettled
        {
            e.unsettled = true;
            self.unsettled.push(e.id.clone());
        }
    }

    /// Puts every session that may have moved since the last call in its place among
    /// the sessions that may be evicted and in the shares: once each, however often it
    /// changed (a request takes its session's state into the machine and holds the
    /// session, then puts it back and lets go).
    pub(super) fn settle(&mut self) {
        let mut unsettled = std::mem::take(&mut self.unsettled);
        for id in unsettled.drain(..) {
            let share = self.share_of(&id);
            let Some(e) = self.table.get_mut(&id) else {
                continue;
            };
            e.unsettled = false;
            if e.shared == share {
                continue;
            }
            let was = std::mem::replace(&mut e.shared, share.clone());
            self.move_share(&id, was, share);
        }
        self.unsettled = unsettled;
    }

    /// Counts session `id` as that of task scope `scope` (`add`), or not.
    fn count_scope(&mut self, id: &Id, scope: Option<u64>, add: bool) {
        let Some(scope) = scope else {
            return;
        };
        if add {
            self.by_scope.insert(scope, id.clone());
        } else if self.by_scope.get(&scope).is_some_and(|s| s == id) {
            self.by_scope.remove(&scope);
        }
    }

    /// Moves session `id` from `was` to `share` among those that may be evicted and in
    /// the shares.
    fn move_share(&mut self, id: &Id, was: Option<Share>, share: Option<Share>) {
        let (Some(was), Some(share)) = (&was, &share) else {
            self.count_share(id, was.as_ref(), false);
            self.count_share(id, share.as_ref(), true);
            return;
        };
        if was.principal != share.principal {
            self.count_share(id, Some(was), false);
            self.count_share(id, Some(share), true);
            return;
        }
        // Within its principal's share, whose count stays.
        if !was.due {
            mark(
                &mut self.evictable,
                (was.returned, was.used, id.clone()),
                false,
            );
        }
        if !share.due {
            mark(
                &mut self.evictable,
                (share.returned, share.used, id.clone()),
                true,
            );
        }
        if was.used != share.used
            && let Some(set) = self.shares.get_mut(&share.principal)
        {
            set.remove(&(was.used, id.clone()));
            set.insert((share.used, id.clone()));
        }
    }

    /// Counts session `id` at `share` among those that may be evicted and in its
    /// principal's share (`add`), or out (`None`: it counts in neither).
    fn count_share(&mut self, id: &Id, share: Option<&Share>, add: bool) {
        let Some(share) = share else {
            return;
        };
        let (returned, used, principal) = (share.returned, share.used, &share.principal);
        if !share.due {
            mark(&mut self.evictable, (returned, used, id.clone()), add);
        }
        let held = self.shares.get(principal).map_or(0, BTreeSet::len);
        if held > 0 {
            self.share_counts.remove(&(held, principal.clone()));
        }
        if add {
            (self.shares.entry(principal.clone()).or_default()).insert((used, id.clone()));
        } else if let Some(set) = self.shares.get_mut(principal) {
            set.remove(&(used, id.clone()));
            if set.is_empty() {
                self.shares.remove(principal);
            }
        }
        let held = self.shares.get(principal).map_or(0, BTreeSet::len);
        if held > 0 {
            self.share_counts.insert((held, principal.clone()));
        }
    }

    /// Changes the entry of `id` with `change`, keeping the orders by use and of
    /// eviction and the sessions by task scope up to date, and leaving the session to
    /// [`Sessions::settle`] among those that may be evicted and in the shares; `None`
    /// when there is no such entry.
    fn update<R>(&mut self, id: &str, change: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        let e = self.table.get_mut(id)?;
        let (returned, used, scope) = (e.returned, e.last_used, e.scope);
        let r = change(e);
        let (now_returned, now_used, now_scope) = (e.returned, e.last_used, e.scope);
        let key = e.id.clone();
        if !e.unsettled {
            e.unsettled = true;
            self.unsettled.push(key.clone());
        }
        if (returned, used) != (now_returned, now_used) {
            if !self.holds.contains_key(id) {
                mark(&mut self.by_use, (used, key.clone()), false);
                mark(&mut self.by_use, (now_used, key.clone()), true);
            }
            let was = (returned, used, key.clone());
            mark(&mut self.by_eviction, was, false);
            let is = (now_returned, now_used, key.clone());
            mark(&mut self.by_eviction, is, true);
        }
        if scope != now_scope {
            self.count_scope(&key, scope, false);
            self.count_scope(&key, now_scope, true);
        }
        Some(r)
    }

    /// Session `id` was named by a request: its client came back.
    fn returned(&mut self, id: &str) {
        if self.table.get(id).is_some_and(|e| !e.returned) {
            self.update(id, |e| e.returned = true);
        }
    }

    /// The task scope `scope` has a task running or with an end its client was not
    /// told (`due`), or no longer: its session's place among those that may be
    /// evicted.
    pub(super) fn results_due_changed(&mut self, scope: u64, due: bool) {
        let Some(id) = self.by_scope.get(&scope) else {
            return;
        };
        if self.table.get(id).is_some_and(|e| e.due != due) {
            let id = id.clone();
            self.update(&id, |e| e.due = due);
        }
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
        let id = (self.table.get(id)).map_or_else(|| Id::from(id), |e| e.id.clone());
        for task in &tasks {
            self.parked_by_task.insert(task.clone(), id.clone());
        }
        self.parked.insert(id, tasks);
    }

    /// The session held here (its state not in the machine) whose state has a 2025
    /// `tasks/result` parked on the input requests of task `task`.
    pub(super) fn parked_session_of(&self, task: &str) -> Option<&str> {
        self.parked_by_task.get(task).map(|id| &**id)
    }

    /// One more request of session `id` is being handled, or one more of its streams
    /// held by a client: the session is busy (see [`Sessions::is_busy`]).
    pub(super) fn hold(&mut self, id: &str) {
        if let Some(n) = self.holds.get_mut(id) {
            *n += 1;
            return;
        }
        let Some(entry) = self.table.get(id) else {
            // The stream of a session that ended, until its client is told.
            self.holds.insert(Id::from(id), 1);
            return;
        };
        let key = entry.id.clone();
        self.by_stored.insert((entry.stored, key.clone()));
        self.by_use.remove(&(entry.last_used, key.clone()));
        self.holds.insert(key, 1);
        self.unsettle(id);
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
            let key = entry.id.clone();
            self.by_stored.remove(&(entry.stored, key.clone()));
            self.by_use.insert((entry.last_used, key));
            self.unsettle(id);
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
    /// the sessions with parked tasks against their states, and the orders of eviction
    /// and the shares against the states and `due` (whether a task scope has results
    /// due; `None` while a change of it is not told yet).
    #[cfg(any(test, feature = "index-checks"))]
    pub(super) fn check_indexes(
        &self,
        counts: &[(&str, usize)],
        due: impl Fn(u64) -> Option<bool>,
    ) {
        let held: Vec<(&str, usize)> = (self.holds.iter()).map(|(id, n)| (&**id, *n)).collect();
        assert_eq!(held, counts, "what keeps each session busy");
        let by_stored: BTreeSet<(Instant, Id)> = (self.holds.keys())
            .filter_map(|id| Some((self.table.get(id)?.stored, id.clone())))
            .collect();
        assert_eq!(
            self.by_stored, by_stored,
            "busy sessions by their last store write"
        );
        let mut parked: BTreeMap<Id, Vec<String>> = BTreeMap::new();
        for (id, entry) in &self.table {
            let tasks = parked_tasks(entry.state.as_ref());
            if !tasks.is_empty() {
                parked.insert(id.clone(), tasks);
            }
        }
        assert_eq!(self.parked, parked, "sessions with parked tasks");
        let by_task: BTreeMap<String, Id> = (parked.iter())
            .flat_map(|(id, tasks)| tasks.iter().map(|t| (t.clone(), id.clone())))
            .collect();
        assert_eq!(self.parked_by_task, by_task, "sessions by parked task");
        let by_use: BTreeSet<(Instant, Id)> = (self.table.iter())
            .filter(|(id, _)| !self.holds.contains_key(*id))
            .map(|(id, e)| (e.last_used, id.clone()))
            .collect();
        assert_eq!(self.by_use, by_use, "sessions not busy by last use");
        let by_eviction: BTreeSet<(bool, Instant, Id)> = (self.table.iter())
            .map(|(id, e)| (e.returned, e.last_used, id.clone()))
            .collect();
        assert_eq!(
            self.by_eviction, by_eviction,
            "sessions in the order of eviction"
        );
        self.check_eviction_indexes(due);
    }

    /// Checks the sessions that may be evicted, the shares and the sessions by task
    /// scope against a walk of the table (each session where it was last settled, and
    /// there if settled since it last changed).
    #[cfg(any(test, feature = "index-checks"))]
    fn check_eviction_indexes(&self, due: impl Fn(u64) -> Option<bool>) {
        let mut evictable = BTreeSet::new();
        let mut shares: BTreeMap<Option<String>, BTreeSet<(Instant, Id)>> = BTreeMap::new();
        let mut by_scope = BTreeMap::new();
        for (id, e) in &self.table {
            if let Some(state) = &e.state {
                let principal = e.principal.as_deref();
                assert_eq!(principal, state.principal(), "principal of {id}");
                assert_eq!(e.scope, state.task_scope(), "task scope of {id}");
                let parked = !state.no_parked_calls();
                assert_eq!(e.parked_calls, parked, "parked calls of {id}");
            }
            if let Some(told) = e.scope.and_then(&due) {
                assert_eq!(e.due, told, "results due of {id}");
            }
            assert!(e.scope.is_some() || !e.due, "results due of {id}, no tasks");
            if let Some(scope) = e.scope {
                let other = by_scope.insert(scope, id.clone());
                assert_eq!(other, None, "task scope {scope} of two sessions");
            }
            if e.unsettled {
                assert!(self.unsettled.contains(id), "{id} left unsettled");
            } else {
                assert_eq!(e.shared, self.share_of(id), "where {id} counts");
            }
            let Some(share) = &e.shared else {
                continue;
            };
            if !share.due {
                evictable.insert((share.returned, share.used, id.clone()));
            }
            let principal = share.principal.clone();
            (shares.entry(principal).or_default()).insert((share.used, id.clone()));
        }
        assert_eq!(self.evictable, evictable, "sessions that may be evicted");
        let what = "sessions held by tasks alone, per principal";
        assert_eq!(self.shares, shares, "{what}");
        let counts: BTreeSet<(usize, Option<String>)> = (shares.iter())
            .map(|(p, set)| (set.len(), p.clone()))
            .collect();
        assert_eq!(self.share_counts, counts, "principals by their shares");
        assert_eq!(self.by_scope, by_scope, "sessions by task scope");
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
            .map(|(_, id)| id.to_string())
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
        self.make_room(now, in_use.newcomer, expired)?;
        let (state, id) = (LegacyState::default(), self.token());
        let due = state.task_scope().is_some_and(in_use.results_due);
        self.insert(Entry::new(Id::from(id.as_str()), state, now, false, due));
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
        self.make_room(now, in_use.newcomer, expired)?;
        let due = state.task_scope().is_some_and(in_use.results_due);
        self.insert(Entry::new(Id::from(id), state, now, true, due));
        Ok(())
    }

    /// Room for one more session (see the module's documentation) for a session of
    /// `newcomer`'s: the ids of the sessions dropped for it are added to `expired`. No
    /// walk: the first of the sessions not in use, else the first of those of the
    /// principal holding the most.
    fn make_room(
        &mut self,
        now: Instant,
        newcomer: Option<&str>,
        expired: &mut Vec<String>,
    ) -> Result<(), Full> {
        if self.table.len() < self.max {
            return Ok(());
        }
        expired.extend(self.sweep(now));
        if self.table.len() < self.max {
            return Ok(());
        }
        self.settle();
        self.looked();
        let victim = (self.evictable.first()).map(|(_, _, id)| id.clone());
        let victim = victim
            .or_else(|| self.fair_share_victim(newcomer))
            .ok_or(Full)?;
        self.drop_entry(&victim);
        expired.push(victim.to_string());
        Ok(())
    }

    /// With every session in use: the one unused longest among those held only by their
    /// tasks, of the principal holding the most of them (of those tied, the last by
    /// principal), if that is more than one beyond what `newcomer`'s principal holds
    /// (see the module's documentation).
    fn fair_share_victim(&self, newcomer: Option<&str>) -> Option<Id> {
        self.looked();
        let (count, principal) = self.share_counts.last()?;
        let mine = (self.shares.get(&newcomer.map(str::to_owned))).map_or(0, BTreeSet::len);
        if *count <= mine + 1 {
            return None;
        }
        self.looked();
        let (_, oldest) = self.shares.get(principal)?.first()?;
        Some(oldest.clone())
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
        let tasks = self.update(id, |entry| {
            (entry.last_used, entry.returned) = (now, true);
            let state = entry.state.as_mut()?;
            f(state);
            let tasks = parked_tasks(Some(state));
            if let Some(state) = entry.state.take() {
                entry.hold_state(state);
            }
            Some(tasks)
        });
        let Some(tasks) = tasks else {
            return false;
        };
        if let Some(tasks) = tasks {
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
        // From the one unused longest, as long as they are idle (busy sessions are not
        // there).
        self.looked();
        let expired: Vec<Id> = (self.by_use.iter())
            .take_while(|(used, _)| now.saturating_duration_since(*used) >= idle)
            .map(|(_, id)| id.clone())
            .collect();
        for id in &expired {
            self.drop_entry(id);
        }
        expired.iter().map(|id| id.to_string()).collect()
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
        self.returned(id);
        true
    }

    /// This endpoint told the session store at `now` that `id` is in use.
    pub(super) fn mark_stored(&mut self, id: &str, now: Instant) {
        let Some(entry) = self.table.get_mut(id) else {
            return;
        };
        if self.holds.contains_key(id) && entry.stored != now {
            self.by_stored.remove(&(entry.stored, entry.id.clone()));
            self.by_stored.insert((now, entry.id.clone()));
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
        let state = self.update(id, |e| {
            e.last_used = now;
            e.state.take()
        })?;
        self.note_parked(id, Vec::new());
        state
    }

    /// The state of `id`, unless it is swapped into the machine.
    pub(super) fn state(&self, id: &str) -> Option<&LegacyState> {
        self.table.get(id)?.state.as_ref()
    }

    /// The session whose task scope is `scope`.
    pub(super) fn of_scope(&self, scope: u64) -> Option<&str> {
        self.by_scope.get(&scope).map(|id| &**id)
    }

    /// Whether session `id` is here (its state may be swapped into the machine).
    pub(super) fn holds(&self, id: &str) -> bool {
        self.table.contains_key(id)
    }

    /// Puts the state of `id` back; `due`: whether its task scope has a task running
    /// or with an end its client was not told.
    pub(super) fn put_back(&mut self, id: &str, state: LegacyState, due: bool) {
        if !self.table.contains_key(id) {
            // The session went while its state was in the machine.
            self.ended(Some(&state));
            return;
        }
        self.note_parked(id, parked_tasks(Some(&state)));
        self.update(id, |entry| {
            entry.hold_state(state);
            entry.due = due;
        });
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

/// Puts `item` in `set` (`add`) or takes it out.
fn mark<T: Ord>(set: &mut BTreeSet<T>, item: T, add: bool) {
    if add {
        set.insert(item);
    } else {
        set.remove(&item);
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
