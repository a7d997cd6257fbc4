//! The run loop: one `mcp_proto` client machine, driven by the threads that wait on it,
//! over a child process's stdio or Streamable HTTP connections.
//!
//! The machine decides everything (what to send where, when to open, reuse, retry or
//! close a connection, when to restart the server, every deadline); this loop carries it
//! out through a [`Carrier`]. Every turn it waits on the one inlet of IO reports (see
//! the `carrier` module) until the machine's next deadline, feeds what came (bytes, end
//! of input, a failure, a connection opened, or the timer), then settles
//! ([`Core::settle`]): executes every transmit and drains every event, until neither is
//! left. Progress and input requests are handled by the options (the input handler
//! answers on the spot); the rest is kept in the inbox of the [`Shared`] state for the
//! blocking methods.
//!
//! # Several threads (leader and followers)
//!
//! A [`Link`] is shared by the [`Client`](crate::Client) and its
//! [`ClientHandle`](crate::ClientHandle)s: the [`Driver`] (machine, carrier, outcomes)
//! sits behind one mutex, and there is no driver thread. A thread that starts a call
//! executes its transmits itself, under the lock (bytes for a polled channel are only
//! queued there, and written once the lock is released). Then, to wait, it becomes the
//! *leader* when nobody else is: it takes the [`Inlet`] out of the driver (the report
//! channel; for a stdio server on Unix, also the server's pipes, which it polls and reads
//! itself), unlocks, waits on it until the machine's next deadline, locks again, feeds
//! the report and settles. The other waiting threads are *followers*: each
//! sleeps on a condition variable of its own, registered with the call it waits for,
//! and is woken when that call completes, when the connection closes, when a
//! [`Canceller`](crate::Canceller) fires, or when the leader leaves (one follower then
//! takes over). A lone caller is always the leader: the sequential path has no thread
//! hand-off, only an uncontended lock per turn.
//!
//! A thread that changes the machine while another leads (a new call with an earlier
//! deadline than the one the leader sleeps until, a cancellation, `close`) wakes the
//! leader through the channel, so that every call keeps its own deadline.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_io::drive::{Core, Execute};
use mcp_io::wire_log::ChannelLog;
use mcp_io::{Error, Flavour, Inbox, Options, Shared, Shutdown, WireLog, clock};
use mcp_proto::Instant;
use mcp_proto::client::{
    self as proto, CallError, CallId, CallOutput, CallRequest, CloseReason, ConnId, Event, IdMap,
    Origin, TransportFailure,
};
use mcp_proto::model::ServerDetails;

use crate::carrier::{Bell, Carrier, Inlet, IoEvent, Report};
use crate::followers::{Concerns, Followers, Locked, Woken, follow};

/// One connection, shared by a client and its handles: the [`Driver`] behind its lock,
/// and the state the handles read without it.
pub(crate) struct Link<F: Flavour> {
    driver: Mutex<Driver<F>>,
    /// What the events say about the connection, and the server process.
    pub(crate) shared: Arc<Shared>,
    /// What wakes the leader, for [`Canceller`](crate::Canceller)s.
    bell: Bell,
}

/// A cancellation scope: a [`Canceller`](crate::Canceller) bumps the count, and a call
/// (or wait) started before the bump is cancelled. Calls started later are not.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope(Arc<AtomicU64>);

impl Scope {
    fn seen(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    pub(crate) fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// The machine and its options, its carrier, and what came out of them; `F` is the
/// flavour of the options' handlers.
pub(crate) struct Driver<F: Flavour> {
    pub(crate) core: Core<F>,
    /// `None` while a thread (the leader) waits on it, unlocked.
    rx: Option<Inlet>,
    pub(crate) io: Io<F>,
    /// `close` ran: whatever the machine still waits for is cut off.
    released: bool,
    /// Until when the leader sleeps on the channel (`None`: no limit), while it does.
    leader_until: Option<Instant>,
    /// When a leader's wait last ended with a report: until [`RECENT`] after it, a call
    /// starts without polling for what arrived meanwhile.
    heard_at: Option<Instant>,
    /// The threads sleeping until something happens for them.
    pub(crate) followers: Followers,
}

/// What carries out the machine's transmits and keeps its events.
pub(crate) struct Io<F: Flavour> {
    carrier: Box<dyn Carrier<F>>,
    bell: Bell,
    /// What the events say about the connection, and the server process.
    pub(crate) shared: Arc<Shared>,
    /// Outcomes of calls, until their method picks them up.
    completed: IdMap<CallId, Result<CallOutput, CallError>>,
    /// Calls completed since the followers were last woken.
    fresh: Vec<CallId>,
    /// Something else reached the inbox since then.
    news: bool,
    /// Every follower must look (the connection closed, a cancellation).
    everyone: bool,
}

impl<F: Flavour> Execute<F> for Io<F> {
    fn connect(&mut self, conn: ConnId, origin: &Origin) -> Result<(), TransportFailure> {
        self.carrier.connect(conn, origin, &self.bell)
    }

    fn write(&mut self, conn: ConnId, bytes: &[u8], log: &mut Option<WireLog<F>>) {
        self.carrier.write(conn, bytes.to_vec(), log);
    }

    fn write_owned(&mut self, conn: ConnId, bytes: Vec<u8>, log: &mut Option<WireLog<F>>) {
        self.carrier.write(conn, bytes, log);
    }

    fn close(&mut self, conn: ConnId, grace: Duration, log: &mut Option<WireLog<F>>) {
        self.carrier.close(conn, grace, log);
    }

    fn respawn(&mut self, _: &mut Option<WireLog<F>>) -> Result<bool, TransportFailure> {
        self.carrier.respawn(&self.bell).map(|()| true)
    }

    fn channel_log(&mut self, conn: ConnId) -> Option<&mut ChannelLog> {
        self.carrier.channel_log(conn)
    }

    /// Notifications stay in the inbox; an `InputCancelled` needs nothing, as the
    /// handler answers on the spot.
    fn event(&mut self, event: Event) {
        if matches!(event, Event::Closed { .. }) {
            self.everyone = true;
        }
        match self.shared.lock().inbox.keep(event) {
            Some(Event::CallCompleted { call, outcome }) => {
                self.completed.insert(call, outcome);
                self.fresh.push(call);
            }
            _ => self.news = true,
        }
    }
}

impl<F: Flavour> Io<F> {
    /// The poll set whose queued bytes the thread releasing the driver's lock writes.
    #[cfg(unix)]
    pub(crate) fn due_writes(&self) -> Option<Arc<crate::poll_set::PollSet>> {
        self.carrier.due_writes().cloned()
    }
}

impl<F: Flavour> fmt::Debug for Link<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.driver.try_lock() {
            Ok(d) => f
                .debug_struct("Driver")
                .field("state", &d.core.machine.state())
                .field("options", &d.core.options)
                .finish_non_exhaustive(),
            Err(_) => f.debug_struct("Driver").finish_non_exhaustive(),
        }
    }
}

impl<F: Flavour> Link<F> {
    /// A driver for `machine` over `carrier`, which reports through `bell` to `rx`;
    /// nothing is exchanged yet.
    pub(crate) fn new(
        machine: proto::Client,
        carrier: Box<dyn Carrier<F>>,
        (bell, rx): (Bell, Inlet),
        mut options: Options<F>,
        shared: Arc<Shared>,
    ) -> Link<F> {
        // Nothing here takes queued requests for input (that is `mcp-smol`'s
        // `next_input_request`): the input handler answers them, on the calling thread,
        // instead of each call waiting for an answer that would never come.
        options.queue_input = false;
        let driver = Driver {
            core: Core::new(machine, options),
            rx: Some(rx),
            io: Io {
                carrier,
                bell: bell.clone(),
                shared: Arc::clone(&shared),
                completed: IdMap::default(),
                fresh: Vec::new(),
                news: false,
                everyone: false,
            },
            released: false,
            leader_until: None,
            heard_at: None,
            followers: Followers::default(),
        };
        Link {
            driver: Mutex::new(driver),
            shared,
            bell,
        }
    }

    /// The driver, locked.
    pub(crate) fn lock(&self) -> Locked<'_, F> {
        // A handler that panicked mid-settle leaves the machine as it was between two
        // of its inputs: still consistent.
        Locked::new(self.driver.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// What a [`Canceller`](crate::Canceller) wakes the leader with.
    pub(crate) fn waker(&self) -> Bell {
        self.bell.clone()
    }

    /// Runs until the machine reports `Connected`, or fails and releases the transport.
    pub(crate) fn connect(&self) -> Result<ServerDetails, Error> {
        let mut d = self.lock();
        d.settle(clock::now());
        let (d, outcome) = self
            .wait(d, None, None, |d| {
                let state = d.io.shared.lock();
                if let Some(details) = &state.inbox.server {
                    return Some(Ok(details.clone()));
                }
                state.inbox.closed.clone().map(Err)
            })
            .answered();
        drop(d);
        match outcome {
            Ok(details) => Ok(details),
            Err(reason) => {
                let shutdown = self.close();
                let stderr = self.shared.lock().stderr.current_text();
                let d = self.lock();
                let endpoint = d.core.endpoint();
                let line = d.core.machine.unreadable_line();
                let e = Error::not_connected_after(reason, endpoint, stderr, Some(shutdown));
                Err(e.with_unreadable_line(line))
            }
        }
    }

    /// Starts a call and runs until it completes (or `scope` cancels it).
    pub(crate) fn request(&self, request: CallRequest, scope: &Scope) -> Result<CallOutput, Error> {
        let seen = scope.seen();
        let mut d = self.lock();
        let call = d.start(request)?;
        self.finish_locked(d, call, scope, seen)
    }

    /// The outcome of the call `call`, if it completed already (without driving).
    pub(crate) fn poll_outcome(&self, call: CallId) -> Option<Result<CallOutput, Error>> {
        self.lock().take_outcome(call)
    }

    /// Runs until the call `call` (started with [`Link::start`]) completes.
    pub(crate) fn finish(&self, call: CallId, scope: &Scope) -> Result<CallOutput, Error> {
        let seen = scope.seen();
        self.finish_locked(self.lock(), call, scope, seen)
    }

    fn finish_locked(
        &self,
        d: Locked<'_, F>,
        call: CallId,
        scope: &Scope,
        mut seen: u64,
    ) -> Result<CallOutput, Error> {
        let waited = self.wait(d, Some(call), None, |d| {
            if let Some(outcome) = d.take_outcome(call) {
                return Some(outcome);
            }
            if let Some(reason) = d.closed() {
                return Some(Err(Error::closed(reason, d.core.endpoint())));
            }
            let now_seen = scope.seen();
            if now_seen != seen {
                seen = now_seen;
                // The machine tells the server and completes the call as cancelled (a
                // call that completed meanwhile keeps its outcome).
                let now = clock::now();
                let _ = d.core.machine.cancel(now, call);
                d.settle(now);
                d.nudge();
                if let Some(outcome) = d.take_outcome(call) {
                    return Some(outcome);
                }
            }
            None
        });
        match waited {
            Waited::Answer(_, outcome) | Waited::Delivered(outcome) => outcome,
            Waited::Expired => unreachable!("a wait without a limit ends with its answer"),
        }
    }

    /// Starts a call and returns at once (a 2026 subscription ends with
    /// `Event::SubscriptionEnded`, not with a completion a `request` waits for).
    pub(crate) fn start(&self, request: CallRequest) -> Result<CallId, Error> {
        self.lock().start(request)
    }

    /// Replaces the roots offered to the server.
    pub(crate) fn set_roots(&self, roots: Vec<proto::Root>) -> Result<(), Error> {
        let mut d = self.lock();
        if let Some(reason) = d.closed() {
            return Err(Error::closed(reason, d.core.endpoint()));
        }
        let now = clock::now();
        d.core.machine.set_roots(now, roots)?;
        d.settle(now);
        d.nudge();
        Ok(())
    }

    /// Cancels a call (ends a subscription). One that is over already is left as it is
    /// (its outcome or end stays there to be taken), as `mcp-smol` does: a call can
    /// complete just before it is cancelled, and the caller cannot tell.
    pub(crate) fn cancel(&self, call: CallId) -> Result<(), Error> {
        let mut d = self.lock();
        if let Some(reason) = d.closed() {
            return Err(Error::closed(reason, d.core.endpoint()));
        }
        let now = clock::now();
        match d.core.machine.cancel(now, call) {
            Ok(()) | Err(proto::ApiMisuse::UnknownCall(_)) => {}
            Err(e) => return Err(e.into()),
        }
        d.settle(now);
        d.nudge();
        Ok(())
    }

    /// Runs the connection until `pick` finds something in the inbox, the connection is
    /// over, `timeout` passed, or `scope` cancels the wait.
    pub(crate) fn wait_for<T>(
        &self,
        timeout: Duration,
        scope: &Scope,
        mut pick: impl FnMut(&mut Inbox) -> Option<T>,
    ) -> Option<T> {
        let until = clock::from_std(clock::std_after(timeout));
        let seen = scope.seen();
        let waited = self.wait(self.lock(), None, Some(until), |d| {
            if let Some(found) = pick(&mut d.io.shared.lock().inbox) {
                return Some(Some(found));
            }
            (d.closed().is_some() || scope.seen() != seen).then_some(None)
        });
        match waited {
            Waited::Answer(_, found) => found,
            Waited::Expired | Waited::Delivered(_) => None,
        }
    }

    /// Closes the connection and releases the transport: the machine bounds its last
    /// exchanges (a legacy session's `DELETE`, `HttpConfig::close_timeout`) and says when
    /// it is released; a server process then gets the grace period. Calls in flight on
    /// other threads end with [`Error::Closed`]. Idempotent.
    pub(crate) fn close(&self) -> Shutdown {
        let mut d = self.lock();
        if !d.released {
            d.released = true;
            let now = clock::now();
            d.core.machine.close(now);
            d.settle(now);
            d.nudge();
            let (again, ()) = self
                .wait(d, None, None, |d| {
                    d.core.machine.is_released().then_some(())
                })
                .answered();
            d = again;
            d.io.shared
                .lock()
                .inbox
                .closed
                .get_or_insert(CloseReason::Local);
            d.io.everyone = true;
            d.wake();
        }
        let grace = d.core.grace(clock::now());
        let d = &mut *d;
        d.io.carrier.release(grace, &mut d.core.options.wire_log)
    }

    /// Why the connection ended, once it has.
    pub(crate) fn closed(&self) -> Option<CloseReason> {
        self.shared.lock().inbox.closed.clone()
    }

    /// Drives the connection (as the leader) or sleeps (as a follower waiting for
    /// `call`, or for anything with `None`) until `step` returns an answer or `until`
    /// passes. `step` runs under the lock, first at once and then after every change
    /// that may concern it. A follower waiting for `call` may instead be delivered the
    /// call's outcome, without locking the driver again.
    fn wait<'a, T>(
        &'a self,
        mut d: Locked<'a, F>,
        call: Option<CallId>,
        until: Option<Instant>,
        mut step: impl FnMut(&mut Driver<F>) -> Option<T>,
    ) -> Waited<'a, F, T> {
        loop {
            if let Some(answer) = step(&mut d) {
                d.hand_over();
                return Waited::Answer(d, answer);
            }
            let now = clock::now();
            if until.is_some_and(|at| at <= now) {
                d.hand_over();
                return Waited::Expired;
            }
            let Some(mut rx) = d.rx.take() else {
                // At most `RECHECK` at a time: a leader whose handler panicked never
                // wakes anyone.
                let wait =
                    until.map_or(RECHECK, |at| at.saturating_duration_since(now).min(RECHECK));
                match follow(d, call, wait, || self.lock()) {
                    Woken::Delivered(outcome) => return Waited::Delivered(outcome),
                    Woken::Look(again) => d = again,
                }
                continue;
            };
            // The leader.
            d.followers.led();
            let Some(deadline) = d.deadline(until, now) else {
                d.leader_until = None;
                drop(d);
                let report = rx.recv(None);
                d = self.lock();
                d.rx = Some(rx);
                d.take(report);
                continue;
            };
            if deadline <= now {
                d.rx = Some(rx);
                d.take(None);
                continue;
            }
            d.leader_until = Some(deadline);
            drop(d);
            let wait = deadline.saturating_duration_since(now);
            let report = rx.recv(Some(wait));
            d = self.lock();
            d.rx = Some(rx);
            d.take(report);
        }
    }
}

/// How [`Link::wait`] ended.
enum Waited<'a, F: Flavour, T> {
    /// `step` answered; the driver, still locked.
    Answer(Locked<'a, F>, T),
    /// The wait's limit passed first.
    Expired,
    /// The awaited call's outcome was delivered to this follower.
    Delivered(Result<CallOutput, Error>),
}

impl<'a, F: Flavour, T> Waited<'a, F, T> {
    /// The answer of a wait that has no limit and waits for no call.
    fn answered(self) -> (Locked<'a, F>, T) {
        match self {
            Waited::Answer(d, answer) => (d, answer),
            _ => unreachable!("a wait without a limit or a call ends with its answer"),
        }
    }
}

impl<F: Flavour> Driver<F> {
    /// Starts a call. What arrived while nobody was waiting (a server closing an idle
    /// connection) is fed first, so the machine places the call knowing it.
    fn start(&mut self, request: CallRequest) -> Result<CallId, Error> {
        let mut now = clock::now();
        let recent = self
            .heard_at
            .is_some_and(|at| now.saturating_duration_since(at) < RECENT);
        if self.rx.is_some() && !recent {
            while let Some(report) = self
                .rx
                .as_mut()
                .and_then(|rx| rx.recv(Some(Duration::ZERO)))
            {
                self.feed(report, now);
            }
            self.core.run_timers(now);
            now = self.settle(now);
        }
        if let Some(reason) = self.closed() {
            return Err(Error::closed(reason, self.core.endpoint()));
        }
        let call = self.core.machine.call(now, request)?;
        self.settle(now);
        self.nudge();
        Ok(call)
    }

    /// The leader's next deadline: the machine's, or `until` if sooner. With no channel
    /// open and no deadline at all nothing can ever arrive, and the wait would never end:
    /// the machine is closed. A wait with an end just waits: an HTTP client with no
    /// connection open is idle, not gone (its next request opens one).
    fn deadline(&mut self, until: Option<Instant>, now: Instant) -> Option<Instant> {
        match (self.core.machine.poll_timeout(), until) {
            (Some(at), Some(limit)) => Some(at.min(limit)),
            (None, None) if self.io.carrier.is_idle() => {
                self.core.machine.close(now);
                Some(now)
            }
            (at, limit) => at.or(limit),
        }
    }

    /// The leader's turn after its wait: feeds `report`, or runs the timers when none
    /// came, settles and wakes whom it concerns.
    fn take(&mut self, report: Option<Report>) {
        self.leader_until = None;
        let now = clock::now();
        match report {
            Some(report) => {
                self.heard_at = Some(now);
                self.feed(report, now);
            }
            None => self.core.machine.handle_timeout(now),
        }
        self.settle(now);
    }

    /// When nobody leads and followers sleep, wakes one of them to lead.
    fn hand_over(&mut self) {
        if self.rx.is_some() {
            self.followers.hand_over();
        }
    }

    /// After a change by a thread that does not lead: wakes the leader if the machine's
    /// deadline is now sooner than the one it sleeps until.
    fn nudge(&self) {
        if self.rx.is_some() {
            return;
        }
        let sooner = match (self.core.machine.poll_timeout(), self.leader_until) {
            (Some(at), Some(until)) => at < until,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if sooner || self.released {
            self.io.bell.ring(IoEvent::Nudge);
        }
    }

    /// Hands one report to the machine, unless its channel is closed or replaced.
    fn feed(&mut self, report: Report, now: Instant) {
        let Report {
            conn,
            generation,
            event,
        } = report;
        match event {
            IoEvent::Wake => {
                self.io.everyone = true;
                return;
            }
            IoEvent::Nudge => return,
            _ => {}
        }
        let (core, carrier) = (&mut self.core, &mut self.io.carrier);
        if !carrier.is_current(conn, generation) {
            return;
        }
        match event {
            IoEvent::Connected => core.machine.handle_connected(now, conn),
            IoEvent::Data(data) => core.received(now, conn, &data, carrier.channel_log(conn)),
            #[cfg(unix)]
            IoEvent::Polled(n) => {
                let data = self.rx.as_ref().map_or(&[][..], |rx| rx.polled_bytes(n));
                core.received(now, conn, data, carrier.channel_log(conn));
            }
            IoEvent::Written(bytes) => core.machine.handle_written(now, conn, bytes),
            IoEvent::Eof => core.ended(now, conn, carrier.channel_log(conn)),
            IoEvent::Exited => core.machine.handle_process_exited(now),
            IoEvent::Failed(step, error) => {
                let failure = carrier.failure(step, error);
                core.failed(now, conn, failure, carrier.channel_log(conn));
            }
            IoEvent::Wake | IoEvent::Nudge => {}
        }
    }

    /// Executes every transmit and drains every event, until neither is left; then
    /// wakes the followers that it concerns. `now` is the instant last read; the one
    /// the settling ended with is returned (later when a handler ran).
    fn settle(&mut self, now: Instant) -> Instant {
        let mut now = self.core.settle(now, &mut self.io);
        // Bytes the carrier wrote on the spot (stdio on Unix) are counted at once, on the
        // channel the carrier names.
        while let Some((conn, written)) = self.io.carrier.take_written() {
            self.core.machine.handle_written(now, conn, written);
            now = self.core.settle(now, &mut self.io);
        }
        self.wake();
        now
    }

    /// Delivers their outcome to the followers whose call completed, and wakes those
    /// waiting for anything when something happened, and all of them when the
    /// connection closes, a cancellation came or the client is closing (once the lock
    /// is released).
    fn wake(&mut self) {
        let io = &mut self.io;
        if !self.followers.is_empty() {
            self.followers.settle(Concerns {
                completed: &mut io.completed,
                fresh: &io.fresh,
                news: io.news,
                everyone: io.everyone || self.released,
                endpoint: self.core.endpoint(),
            });
        }
        io.fresh.clear();
        io.news = false;
        io.everyone = false;
    }

    /// The outcome of `call`, once it completed, taken for its caller.
    fn take_outcome(&mut self, call: CallId) -> Option<Result<CallOutput, Error>> {
        let outcome = self.io.completed.remove(&call)?;
        Some(outcome.map_err(|e| Error::call(e, self.core.endpoint())))
    }

    /// Why the connection ended, once it has.
    fn closed(&self) -> Option<CloseReason> {
        self.io.shared.lock().inbox.closed.clone()
    }
}

/// The longest a follower sleeps before it looks again by itself.
const RECHECK: Duration = Duration::from_secs(1);

/// How long after a leader's wait ended with a report a call starts without first polling
/// for what arrived since. Sequential calls follow each other within microseconds, and
/// that poll (one syscall per call) would find nothing; what did arrive is fed at the next
/// wait, right after the call is sent, and a call sent on a connection that turns out
/// closed fails or is retried by the machine as any call in flight would be.
const RECENT: Duration = Duration::from_millis(1);
