//! Where the followers of a [`Link`](crate::driver::Link) sleep, and how they are woken.
//!
//! # Theory of operation
//!
//! A follower waits on a [`Berth`] of its own (a small mutex and condition variable), not
//! on the driver's lock. Whoever settles the machine under that lock decides whom it
//! concerns: a follower whose call completed is *delivered* its outcome in its berth and
//! taken off the list of waiters at once, so it returns to its caller without touching
//! the driver again; any other follower concerned is only told to look (it locks the
//! driver and checks, as before).
//!
//! Berths are rung after the driver's lock is released, never under it ([`Locked`]'s
//! `Drop`): a follower woken while the lock is still held would only block on it.
//! The bytes queued under the lock for a polled channel are written there too (see the
//! `poll_set` module).
//! With several threads in flight this is what keeps the driver's lock from being
//! handed from thread to thread on every call.

use std::mem;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcp_io::{Error, Flavour};
use mcp_proto::client::{CallId, CallOutput, IdMap};

use crate::driver::Driver;

/// Where one follower sleeps, and what the thread that woke it left there.
#[derive(Default)]
pub(crate) struct Berth {
    state: Mutex<Mooring>,
    cv: Condvar,
}

/// A berth's contents.
#[derive(Default)]
struct Mooring {
    /// Look again: something happened that may concern the follower.
    woken: bool,
    /// The outcome of the call the follower waits for, delivered.
    outcome: Option<Result<CallOutput, Error>>,
}

impl Berth {
    fn moor(&self) -> MutexGuard<'_, Mooring> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Leaves `outcome` for the follower, who is rung once the driver's lock is released.
    fn deliver(&self, outcome: Result<CallOutput, Error>) {
        self.moor().outcome = Some(outcome);
    }

    fn ring(&self) {
        self.moor().woken = true;
        self.cv.notify_one();
    }

    /// Sleeps until rung or `wait` passed; the outcome, when one was delivered.
    fn sleep(&self, wait: Duration) -> Option<Result<CallOutput, Error>> {
        let mut m = self.moor();
        if !m.woken && m.outcome.is_none() {
            m = (self.cv.wait_timeout(m, wait))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        m.woken = false;
        m.outcome.take()
    }
}

/// A follower: the call it waits for (`None`: anything in the inbox, or the machine's
/// release), and its berth.
struct Waiter {
    call: Option<CallId>,
    berth: Arc<Berth>,
}

/// The followers of one driver.
#[derive(Default)]
pub(crate) struct Followers {
    waiters: Vec<Waiter>,
    /// Berths of followers that left, for the next ones.
    spare: Vec<Arc<Berth>>,
    /// Berths to ring once the driver's lock is released.
    to_ring: Vec<Arc<Berth>>,
    /// The follower last rung to lead, until someone leads.
    handed: Option<Arc<Berth>>,
}

/// What a settle found for the followers.
pub(crate) struct Concerns<'a> {
    /// Outcomes of completed calls, until their method picks them up.
    pub(crate) completed: &'a mut IdMap<CallId, Result<CallOutput, mcp_proto::client::CallError>>,
    /// Calls completed since the followers were last woken.
    pub(crate) fresh: &'a [CallId],
    /// Something else reached the inbox.
    pub(crate) news: bool,
    /// Every follower must look.
    pub(crate) everyone: bool,
    /// The endpoint, for the errors delivered.
    pub(crate) endpoint: Option<&'a str>,
}

impl Followers {
    pub(crate) fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    /// Delivers their outcome to the followers whose call completed, and marks for
    /// waking those the rest concerns.
    pub(crate) fn settle(&mut self, c: Concerns<'_>) {
        let anything = c.news || !c.fresh.is_empty();
        let mut i = 0;
        while let Some(w) = self.waiters.get(i) {
            if let Some(call) = w.call
                && c.fresh.contains(&call)
                && let Some(outcome) = c.completed.remove(&call)
            {
                let w = self.waiters.remove(i);
                w.berth
                    .deliver(outcome.map_err(|e| Error::call(e, c.endpoint)));
                // Rung to lead, it will return with its outcome instead: the next one
                // leads.
                if self
                    .handed
                    .as_ref()
                    .is_some_and(|h| Arc::ptr_eq(h, &w.berth))
                {
                    self.handed = None;
                    self.hand_over();
                }
                self.to_ring.push(w.berth);
                continue;
            }
            if c.everyone || (w.call.is_none() && anything) {
                self.to_ring.push(Arc::clone(&w.berth));
            }
            i += 1;
        }
    }

    /// When nobody leads: one follower to wake, to lead.
    pub(crate) fn hand_over(&mut self) {
        if let Some(w) = self.waiters.first() {
            self.to_ring.push(Arc::clone(&w.berth));
            self.handed = Some(Arc::clone(&w.berth));
        }
    }

    /// Someone leads (again).
    pub(crate) fn led(&mut self) {
        self.handed = None;
    }

    /// Registers a follower waiting for `call`; its berth.
    fn join(&mut self, call: Option<CallId>) -> Arc<Berth> {
        let berth = self.spare.pop().unwrap_or_default();
        self.waiters.push(Waiter {
            call,
            berth: Arc::clone(&berth),
        });
        berth
    }

    /// Unregisters the follower of `berth` (if the settle did not already) and keeps the
    /// berth; what was delivered to it meanwhile.
    fn leave(&mut self, berth: Arc<Berth>) -> Option<Result<CallOutput, Error>> {
        self.waiters.retain(|w| !Arc::ptr_eq(&w.berth, &berth));
        let late = {
            let mut m = berth.moor();
            m.woken = false;
            m.outcome.take()
        };
        self.spare.push(berth);
        late
    }
}

/// The driver, locked; the berths marked while it was are rung once it is released.
pub(crate) struct Locked<'a, F: Flavour>(Option<MutexGuard<'a, Driver<F>>>);

impl<'a, F: Flavour> Locked<'a, F> {
    pub(crate) fn new(guard: MutexGuard<'a, Driver<F>>) -> Self {
        Locked(Some(guard))
    }
}

impl<F: Flavour> Deref for Locked<'_, F> {
    type Target = Driver<F>;

    fn deref(&self) -> &Driver<F> {
        self.0.as_deref().expect("held until dropped")
    }
}

impl<F: Flavour> DerefMut for Locked<'_, F> {
    fn deref_mut(&mut self) -> &mut Driver<F> {
        self.0.as_deref_mut().expect("held until dropped")
    }
}

impl<F: Flavour> Drop for Locked<'_, F> {
    fn drop(&mut self) {
        let Some(mut guard) = self.0.take() else {
            return;
        };
        #[cfg(unix)]
        let writes = guard.io.due_writes();
        if guard.followers.to_ring.is_empty() {
            drop(guard);
        } else {
            let berths = mem::take(&mut guard.followers.to_ring);
            drop(guard);
            for berth in &berths {
                berth.ring();
            }
        }
        #[cfg(unix)]
        if let Some(set) = writes {
            set.write_due();
        }
    }
}

/// How a follower's sleep ended.
pub(crate) enum Woken<'a, F: Flavour> {
    /// The outcome of its call was delivered: it no longer needs the driver.
    Delivered(Result<CallOutput, Error>),
    /// It must look: the driver, locked again.
    Look(Locked<'a, F>),
}

/// Sleeps as a follower waiting for `call` (`None`: anything) for at most `wait`, then
/// returns what it was delivered, or the driver locked again through `relock`.
pub(crate) fn follow<'a, F: Flavour>(
    mut d: Locked<'a, F>,
    call: Option<CallId>,
    wait: Duration,
    relock: impl FnOnce() -> Locked<'a, F>,
) -> Woken<'a, F> {
    let berth = d.followers.join(call);
    drop(d);
    if let Some(outcome) = berth.sleep(wait) {
        // Taken off the waiters by whoever delivered it; the berth is not reused.
        return Woken::Delivered(outcome);
    }
    let mut d = relock();
    match d.followers.leave(berth) {
        Some(outcome) => Woken::Delivered(outcome),
        None => Woken::Look(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_proto::client::CallError;

    fn rung(f: &Followers, berth: &Arc<Berth>) -> bool {
        f.to_ring.iter().any(|b| Arc::ptr_eq(b, berth))
    }

    fn concerns<'a>(
        completed: &'a mut IdMap<CallId, Result<CallOutput, CallError>>,
        fresh: &'a [CallId],
        news: bool,
        everyone: bool,
    ) -> Concerns<'a> {
        Concerns {
            completed,
            fresh,
            news,
            everyone,
            endpoint: None,
        }
    }

    /// `call` completed (cancelled): the settle that says so.
    fn complete(f: &mut Followers, call: CallId) {
        let mut completed = IdMap::from_iter([(call, Err(CallError::Cancelled))]);
        f.settle(concerns(&mut completed, &[call], false, false));
        assert!(completed.is_empty(), "the outcome moved to the berth");
    }

    #[test]
    fn a_completed_call_is_delivered_and_its_follower_leaves_the_waiters() {
        let mut f = Followers::default();
        let (one, two) = (CallId::from_raw(1), CallId::from_raw(2));
        let a = f.join(Some(one));
        let b = f.join(Some(two));
        let anyone = f.join(None);
        complete(&mut f, one);
        // Delivered and taken from the list; the waiter for anything is told to look
        // (a call completed); the other call's follower sleeps on.
        assert!(rung(&f, &a) && rung(&f, &anyone) && !rung(&f, &b));
        assert_eq!(f.waiters.len(), 2);
        assert!(matches!(
            a.sleep(Duration::ZERO),
            Some(Err(Error::Call(CallError::Cancelled)))
        ));
        // One to lead next is never one that already left.
        f.to_ring.clear();
        f.hand_over();
        assert!(rung(&f, &b) && !rung(&f, &a));
    }

    #[test]
    fn the_one_rung_to_lead_hands_over_again_when_its_outcome_comes_first() {
        let mut f = Followers::default();
        let (one, two) = (CallId::from_raw(1), CallId::from_raw(2));
        let a = f.join(Some(one));
        let b = f.join(Some(two));
        f.hand_over();
        assert!(rung(&f, &a) && !rung(&f, &b));
        // Before `a` woke to lead, a thread that started a call fed its outcome.
        complete(&mut f, one);
        assert!(rung(&f, &b), "the next follower is rung to lead");
        // Once someone leads, a later delivery hands nothing over.
        f.to_ring.clear();
        f.led();
        let c = f.join(Some(CallId::from_raw(3)));
        complete(&mut f, two);
        assert!(rung(&f, &b) && !rung(&f, &c));
    }

    #[test]
    fn everyone_looks_when_told_and_nobody_when_nothing_happened() {
        let mut f = Followers::default();
        let a = f.join(Some(CallId::from_raw(1)));
        let anyone = f.join(None);
        let mut completed = IdMap::default();
        f.settle(concerns(&mut completed, &[], false, false));
        assert!(f.to_ring.is_empty());
        f.settle(concerns(&mut completed, &[], true, false));
        assert!(rung(&f, &anyone) && !rung(&f, &a));
        f.to_ring.clear();
        f.settle(concerns(&mut completed, &[], false, true));
        assert!(rung(&f, &anyone) && rung(&f, &a));
        // Told to look, a follower finds nothing delivered and stays registered until
        // it leaves.
        assert!(a.sleep(Duration::ZERO).is_none());
        assert!(f.leave(a).is_none());
        assert_eq!(f.waiters.len(), 1);
    }

    #[test]
    fn an_outcome_delivered_after_the_sleep_ended_is_found_on_leaving() {
        let mut f = Followers::default();
        let one = CallId::from_raw(1);
        let a = f.join(Some(one));
        // The sleep timed out; before the follower locked again, its call completed.
        assert!(a.sleep(Duration::ZERO).is_none());
        complete(&mut f, one);
        assert!(matches!(f.leave(a), Some(Err(_))));
        assert!(f.is_empty());
        // The berth is kept for the next follower, empty.
        let next = f.join(None);
        assert!(next.sleep(Duration::ZERO).is_none());
    }
}
