//! Tool work that finishes later, elsewhere: a handler that would block (a database
//! query, a call to another service, a model) hands its work to a thread or a task of
//! the application's and returns at once, and the call is answered when the work is.
//!
//! # Theory of operation
//!
//! A handler calls [`ToolCall::defer`](super::ToolCall::defer), which gives it a
//! [`Completer`] (`Send`, `'static`), moves the completer to wherever the work runs, and
//! returns [`ToolOutcome::Deferred`]. The machine then parks the call as it parks one
//! waiting for the client's input: a legacy call stays in its session's parked calls, a
//! 2026 call keeps what answering it needs (its `requestState` binding, its round, the
//! client's capabilities), a task shows `working`. Nothing is answered and nothing
//! blocks: the machine serves other requests meanwhile.
//!
//! [`Completer::complete`] puts the outcome in a queue the machine shares with every
//! completer (a mutex, no IO) and wakes the [`Waker`] the driver registered
//! ([`Server::set_deferred_waker`](super::Server::set_deferred_waker)). The driver then
//! calls [`Server::handle_deferred`](super::Server::handle_deferred) (or
//! [`HttpEndpoint::handle_deferred`](super::http::HttpEndpoint::handle_deferred), which
//! first puts the call's legacy session back in the machine), and the call goes on
//! exactly as if its handler had returned that outcome then: answered, asking the client
//! for input (the next round runs the handler again, which may defer again), or its task
//! ending. Completed work is also due at once ([`Server::poll_timeout`](super::Server::poll_timeout)),
//! and [`Server::handle_timeout`](super::Server::handle_timeout) goes on with it, so a
//! driver that wakes for its deadlines needs nothing else. A handler may ask for more
//! than one completer (they share the work); when the last one is dropped without an
//! outcome, the call completes with an error, so no call waits for work that is gone.
//!
//! A call that ends first (its client cancelled it, closed its stream or the input, its
//! session or task ended, the server was dropped) is forgotten: [`Completer::is_cancelled`] turns true for the work to stop
//! early, and its outcome, when it comes, is dropped. At most
//! [`ServerLimits::max_deferred_calls`](super::ServerLimits::max_deferred_calls) calls
//! wait at once, holding at most
//! [`ServerLimits::max_deferred_bytes`](super::ServerLimits::max_deferred_bytes), of which
//! one principal's calls hold at most
//! [`ServerLimits::max_deferred_bytes_per_principal`](super::ServerLimits::max_deferred_bytes_per_principal);
//! one more is answered with an error at once and its completer is cancelled.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Waker;

use super::Server;
use super::modern::ModernCall;
use super::registry::ToolOutcome;
use crate::Instant;
use crate::jsonrpc::{ErrorObject, RequestId, codes};

/// What the machine and every completer share: the outcomes that came in, and the waker
/// of the driver.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    inner: Mutex<QueueInner>,
}

#[derive(Debug, Default)]
struct QueueInner {
    done: VecDeque<(u64, ToolOutcome)>,
    waker: Option<Waker>,
}

impl Queue {
    fn push(&self, work: u64, outcome: ToolOutcome) {
        let waker = {
            let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            inner.done.push_back((work, outcome));
            inner.waker.clone()
        };
        // Woken outside the lock: a driver's waker may take locks of its own.
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    pub(crate) fn pop(&self) -> Option<(u64, ToolOutcome)> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.done.pop_front()
    }

    pub(crate) fn set_waker(&self, waker: Waker) {
        let wake_now = {
            let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            inner.waker = Some(waker.clone());
            !inner.done.is_empty()
        };
        if wake_now {
            waker.wake();
        }
    }

    pub(crate) fn has_done(&self) -> bool {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        !inner.done.is_empty()
    }
}

/// The deferral a handler may take during one invocation: the work's number, chosen
/// before the handler runs, and the work's shared state once a completer was taken.
#[derive(Debug)]
pub(crate) struct Slot<'q> {
    pub(crate) work: u64,
    pub(crate) queue: &'q Arc<Queue>,
    pub(crate) taken: RefCell<Option<Arc<WorkState>>>,
}

impl Slot<'_> {
    /// A completer for this invocation's work (all of them share one state: the same
    /// cancellation flag, and the call fails for want of an outcome only when the last
    /// one is dropped without one).
    pub(crate) fn completer(&self) -> Completer {
        let state = Arc::clone(self.taken.borrow_mut().get_or_insert_with(|| {
            // The slot holds the work too while the handler runs: a completer it
            // takes only to look at and drops before taking the one it keeps is not
            // the last.
            Arc::new(WorkState {
                completers: AtomicUsize::new(1),
                ..WorkState::default()
            })
        }));
        state.completers.fetch_add(1, Ordering::AcqRel);
        Completer {
            work: self.work,
            queue: Arc::clone(self.queue),
            state,
            done: false,
        }
    }
}

impl Slot<'_> {
    /// The handler returned: the slot lets go of the work (failing the call when no
    /// completer is left to give it an outcome). The work's state, when one was taken.
    pub(crate) fn release(self) -> Option<Arc<WorkState>> {
        let state = self.taken.into_inner()?;
        state.let_go(self.queue, self.work, false);
        Some(state)
    }
}

/// What the machine and the completers of one work share.
#[derive(Debug, Default)]
pub(crate) struct WorkState {
    /// The call ended before its work: the completers are told.
    cancelled: AtomicBool,
    /// Completers alive.
    completers: AtomicUsize,
    /// One of them completed.
    completed: AtomicBool,
}

impl WorkState {
    /// A holder of the work lets go (`done`: having given it its outcome); the last one
    /// to let go with no outcome given fails the call.
    fn let_go(&self, queue: &Queue, work: u64, done: bool) {
        let last = self.completers.fetch_sub(1, Ordering::AcqRel) == 1;
        if !done && last && !self.completed.load(Ordering::Acquire) {
            let error = ErrorObject::new(
                codes::INTERNAL_ERROR,
                "the tool's deferred work ended without an outcome",
            );
            queue.push(work, ToolOutcome::Error(error));
        }
    }
}

/// A deferred call the machine parked: the work's number and the state its completers
/// read.
#[derive(Debug, Clone)]
pub(crate) struct Deferral {
    pub(crate) work: u64,
    pub(crate) state: Arc<WorkState>,
}

impl Deferral {
    /// The call ended before its work: the completer is told.
    pub(crate) fn cancel(&self) {
        self.state.cancelled.store(true, Ordering::Release);
    }

    /// Whether the call ended (its entry waits only for the work to let go).
    fn is_cancelled(&self) -> bool {
        self.state.cancelled.load(Ordering::Acquire)
    }
}

/// Finishes a deferred tool call from anywhere (see the [module docs](self)). Made by
/// [`ToolCall::defer`](super::ToolCall::defer); `Send` and `'static`, so it can move to
/// another thread or task.
///
/// ```
/// use mcp_proto::Instant;
/// use mcp_proto::model::Implementation;
/// use mcp_proto::server::{Server, ServerConfig, Tool, ToolCall, ToolOutcome};
/// use serde_json::json;
///
/// let mut config = ServerConfig::new(Implementation::new("slow", "1"));
/// config.tools.push(Tool::new("slow", "Answers later", json!({"type": "object"}),
///     |call: &ToolCall<'_>| {
///         let completer = call.defer();
///         std::thread::spawn(move || completer.complete(ToolOutcome::text("done")));
///         ToolOutcome::Deferred
///     }));
/// let mut server = Server::new(config);
/// let t0 = Instant::ZERO;
/// server.handle_input(t0, br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
/// {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}
/// "#);
/// let mut out = Vec::new();
/// while let Some(line) = server.poll_message() { out.push(line) }
/// assert_eq!(out.len(), 1, "only initialize is answered at once");
/// // A driver waits for its waker (`Server::set_deferred_waker`); here, for the queue.
/// while !server.has_deferred_done() { std::thread::yield_now() }
/// server.handle_deferred(t0);
/// let answer = server.poll_message().unwrap();
/// assert!(String::from_utf8(answer).unwrap().contains(r#""text":"done""#));
/// ```
#[must_use = "a completer dropped without an outcome fails its call"]
pub struct Completer {
    work: u64,
    queue: Arc<Queue>,
    state: Arc<WorkState>,
    done: bool,
}

impl Completer {
    /// Hands the call its outcome, as the handler would have returned it: `Done`,
    /// `Error`, `NeedInput` (the client is asked, and the handler runs again with the
    /// answers), `After`, … (`Deferred` and `NoAnswer` end the call with an error).
    /// Dropped when the call ended first, or when another completer of the same work
    /// ([`ToolCall::defer`](super::ToolCall::defer) asked twice) completed first.
    pub fn complete(mut self, outcome: ToolOutcome) {
        self.done = true;
        self.state.completed.store(true, Ordering::Release);
        self.queue.push(self.work, outcome);
    }

    /// Whether the call ended before its work (cancelled by its client, its stream or
    /// session gone, refused for too many deferred calls): the work may stop, since its
    /// outcome will be dropped.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.state.cancelled.load(Ordering::Acquire)
    }
}

impl Drop for Completer {
    /// The last completer of a work dropped with no outcome given fails its call.
    fn drop(&mut self) {
        self.state.let_go(&self.queue, self.work, self.done);
    }
}

impl fmt::Debug for Completer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completer")
            .field("work", &self.work)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// A call waiting for its deferred work.
#[derive(Debug)]
pub(crate) struct Parked {
    pub(crate) deferral: Deferral,
    /// The request it answers (over HTTP, the endpoint's number for it).
    pub(crate) request: RequestId,
    /// What it holds in memory (arguments, answers so far), estimated.
    pub(crate) bytes: usize,
    pub(crate) kind: Kind,
    /// The principal whose request it answers (counted against its share of the bytes).
    pub(crate) principal: Option<String>,
}

/// The calls waiting for deferred work, by its number, with running totals so that
/// parking one never walks the others.
#[derive(Debug, Default)]
pub(crate) struct ParkedCalls {
    calls: BTreeMap<u64, Parked>,
    /// The sum of their [`Parked::bytes`].
    bytes: usize,
    /// How many are a task's work.
    tasks: usize,
    /// The sum of their [`Parked::bytes`] per principal (those holding any).
    by_principal: BTreeMap<Option<String>, usize>,
}

impl ParkedCalls {
    pub(crate) fn len(&self) -> usize {
        self.calls.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// What the calls of `principal` hold.
    fn held_by(&self, principal: Option<&String>) -> usize {
        self.by_principal
            .get(&principal.cloned())
            .copied()
            .unwrap_or(0)
    }

    fn insert(&mut self, work: u64, parked: Parked) {
        self.bytes = self.bytes.saturating_add(parked.bytes);
        if parked.bytes > 0 {
            let theirs = self
                .by_principal
                .entry(parked.principal.clone())
                .or_default();
            *theirs = theirs.saturating_add(parked.bytes);
        }
        self.tasks += usize::from(matches!(parked.kind, Kind::Task(_)));
        if let Some(old) = self.calls.insert(work, parked) {
            self.forget(&old);
        }
    }

    pub(crate) fn remove(&mut self, work: &u64) -> Option<Parked> {
        let parked = self.calls.remove(work)?;
        self.forget(&parked);
        Some(parked)
    }

    fn forget(&mut self, parked: &Parked) {
        self.bytes = self.bytes.saturating_sub(parked.bytes);
        if parked.bytes > 0
            && let Some(theirs) = self.by_principal.get_mut(&parked.principal)
        {
            *theirs = theirs.saturating_sub(parked.bytes);
            if *theirs == 0 {
                self.by_principal.remove(&parked.principal);
            }
        }
        self.tasks -= usize::from(matches!(parked.kind, Kind::Task(_)));
    }

    fn get(&self, work: &u64) -> Option<&Parked> {
        self.calls.get(work)
    }

    fn iter(&self) -> impl Iterator<Item = (&u64, &Parked)> {
        self.calls.iter()
    }

    /// Forgets the calls that ended while their work runs on (a legacy call dropped
    /// with its session): their slots are free again.
    fn sweep_cancelled(&mut self) {
        let ended: Vec<u64> = (self.calls.iter())
            .filter(|(_, p)| p.deferral.is_cancelled())
            .map(|(w, _)| *w)
            .collect();
        for work in ended {
            self.remove(&work);
        }
    }

    /// Every call ends: its work is told.
    pub(crate) fn cancel_all(&mut self) {
        for parked in std::mem::take(&mut self.calls).into_values() {
            parked.deferral.cancel();
        }
        (self.bytes, self.tasks) = (0, 0);
        self.by_principal.clear();
    }
}

impl Drop for ParkedCalls {
    /// The machine went away: no call can be answered, and the work is told.
    fn drop(&mut self) {
        self.cancel_all();
    }
}

/// Where a deferred call waits.
#[derive(Debug)]
pub(crate) enum Kind {
    /// A legacy call, parked with its session's calls (which hold its [`Deferral`] too,
    /// and cancel it when they drop it).
    Legacy,
    /// A 2026 call, with what answering it needs.
    Modern(Box<ModernCall<'static>>),
    /// A task's work: the task shows `working` until it comes.
    Task(String),
}

impl Server {
    /// Registers the waker to wake when deferred work completes (each completion wakes
    /// it; one that came before is woken for at once). The driver then calls
    /// [`Server::handle_deferred`], or [`Server::handle_timeout`], which does the same
    /// and more: completed work makes [`Server::poll_timeout`] due at once.
    pub fn set_deferred_waker(&mut self, waker: Waker) {
        self.deferred_queue.set_waker(waker);
    }

    /// Whether calls wait for deferred work: a driver that blocks on its input must
    /// then be able to wake for a completion too.
    #[must_use]
    pub fn has_deferred_calls(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// Whether completed deferred work waits for [`Server::handle_deferred`].
    #[must_use]
    pub fn has_deferred_done(&self) -> bool {
        self.deferred_queue.has_done()
    }

    /// Goes on with every call whose deferred work completed, as if its handler had
    /// returned that outcome now (see the [`deferred`](self) module). Drain the output
    /// afterwards. Over HTTP, use [`HttpEndpoint::handle_deferred`](super::http::HttpEndpoint::handle_deferred)
    /// instead, which puts each call's session back first.
    pub fn handle_deferred(&mut self, now: Instant) {
        self.resume_completed(now);
        self.after_input();
    }

    /// Resumes every call whose work completed.
    pub(super) fn resume_completed(&mut self, now: Instant) {
        while let Some((work, outcome, _)) = self.poll_deferred() {
            self.resume_deferred(now, work, outcome);
        }
    }

    /// The number for the next invocation's work.
    pub(super) fn new_work(&mut self) -> u64 {
        self.next_work = self.next_work.wrapping_add(1);
        self.next_work
    }

    /// Parks a deferred call, within
    /// [`ServerLimits::max_deferred_calls`](super::ServerLimits::max_deferred_calls):
    /// past it, the completer is cancelled and the error to answer with is returned.
    pub(super) fn park_deferred(
        &mut self,
        deferral: Deferral,
        request: RequestId,
        bytes: usize,
        kind: Kind,
    ) -> Result<(), ErrorObject> {
        let limits = &self.config.limits;
        let (max, max_bytes) = (limits.max_deferred_calls, limits.max_deferred_bytes);
        let share = limits.max_deferred_bytes_per_principal;
        let principal = self.principal.clone();
        let over = |d: &ParkedCalls| {
            d.len() >= max
                || d.bytes.saturating_add(bytes) > max_bytes
                || d.held_by(principal.as_ref()).saturating_add(bytes) > share
        };
        if over(&self.deferred) {
            // Only at the bound: calls that ended may still hold a place.
            self.deferred.sweep_cancelled();
        }
        let held = self.deferred.bytes;
        let theirs = self.deferred.held_by(principal.as_ref());
        let refusal = if self.deferred.len() >= max {
            Some(format!(
                "Too many tool calls wait for deferred work (max_deferred_calls {max})"
            ))
        } else if held.saturating_add(bytes) > max_bytes {
            Some(format!(
                "The tool calls waiting for deferred work would hold more than {max_bytes} \
                 bytes (max_deferred_bytes)"
            ))
        } else if theirs.saturating_add(bytes) > share {
            Some(format!(
                "This client's tool calls waiting for deferred work would hold more than \
                 {share} bytes (max_deferred_bytes_per_principal)"
            ))
        } else {
            None
        };
        if let Some(message) = refusal {
            deferral.cancel();
            return Err(ErrorObject::new(codes::INTERNAL_ERROR, message));
        }
        let work = deferral.work;
        self.deferred.insert(
            work,
            Parked {
                deferral,
                request,
                bytes,
                kind,
                principal,
            },
        );
        Ok(())
    }

    /// The next completed work whose call still waits: its number, its outcome and the
    /// request its call answers. Outcomes of calls that ended first are dropped.
    pub(crate) fn poll_deferred(&mut self) -> Option<(u64, ToolOutcome, RequestId)> {
        loop {
            let (work, outcome) = self.deferred_queue.pop()?;
            if let Some(parked) = self.deferred.get(&work) {
                return Some((work, outcome, parked.request.clone()));
            }
        }
    }

    /// Goes on with the call of `work` (its legacy session in the machine) with
    /// `outcome`.
    pub(crate) fn resume_deferred(&mut self, now: Instant, work: u64, outcome: ToolOutcome) {
        self.now = self.now.max(now);
        let Some(parked) = self.deferred.remove(&work) else {
            return;
        };
        let outcome = match outcome.now() {
            ToolOutcome::Deferred | ToolOutcome::NoAnswer => ToolOutcome::Error(ErrorObject::new(
                codes::INTERNAL_ERROR,
                "a deferred tool call was completed without an outcome",
            )),
            outcome => outcome,
        };
        match parked.kind {
            Kind::Legacy => {
                let at = self
                    .pending
                    .iter()
                    .position(|c| c.deferred_work() == Some(work));
                if let Some(at) = at {
                    let mut call = self.pending.remove(at);
                    call.take_deferral();
                    self.legacy_act(call, outcome);
                }
            }
            Kind::Modern(call) => {
                let request = call.request.clone();
                match self.modern_act(now, *call, outcome, None) {
                    // What every 2026 result carries, as for a call answered at once.
                    Some(Ok(answer)) => self.send_modern_answer(&request, answer),
                    Some(Err(e)) => self.reply(&request, Err(e)),
                    None => {}
                }
            }
            Kind::Task(task) => self.task_work_done(now, &task, outcome),
        }
    }

    /// `notifications/cancelled` for `request`: its 2026 deferred call ends (legacy
    /// ones end with their parked call).
    pub(super) fn cancel_deferred(&mut self, request: &RequestId) {
        let ended: Vec<u64> = (self.deferred.iter())
            .filter(|(_, p)| matches!(p.kind, Kind::Modern(_)) && p.request == *request)
            .map(|(w, _)| *w)
            .collect();
        for work in ended {
            if let Some(p) = self.deferred.remove(&work) {
                p.deferral.cancel();
            }
        }
    }

    /// Tasks that ended (cancelled, expired, dropped) while their work was deferred:
    /// the work is told.
    ///
    /// Runs after every input while work waits: one pass over the tasks and one over
    /// the parked calls, never one over the tasks per parked call.
    pub(super) fn forget_ended_task_work(&mut self) {
        if self.deferred.tasks == 0 {
            return;
        }
        let tasks = &self.tasks;
        let ended: Vec<u64> = (self.deferred.iter())
            .filter(|(_, p)| match &p.kind {
                Kind::Task(id) => !tasks.is_running(id),
                _ => false,
            })
            .map(|(w, _)| *w)
            .collect();
        for work in ended {
            if let Some(p) = self.deferred.remove(&work) {
                p.deferral.cancel();
            }
        }
    }
}
