//! What every transport's driver shares: the commands from the [`Client`](crate::Client)
//! handles, the protocol machine's events, input requests, progress, notifications, the
//! protocol timer, and failing whatever still waits when the connection ends.
//!
//! # Theory of operation
//!
//! A transport (stdio in [`crate::stdio`], Streamable HTTP in [`crate::http`]) owns its
//! IO and its sans-IO machine and implements [`Transport`]: `poll_input` moves whatever
//! its sources have into the machine, `poll_output` moves what the machine produced onto
//! the wire. [`Core::poll_step`] is the one main loop for both: commands, input, due
//! timeouts, events, output, the next deadline; repeated until nothing progresses, so
//! every source has registered the waker before the step returns `Pending`. No read is
//! ever half-done and lost, and a peer that stops reading can never stop us reading.
//!
//! Events are handled here once for every transport ([`Core::on_event`]): calls complete
//! through their reply channels, input requests are answered on the spot by the
//! [`InputHandler`](mcp_proto::client::InputHandler) and progress goes to the callback
//! (both by [`Options::handle_event`], shared with `mcp-blocking`), notifications to the
//! bounded queue. A step ends (`Ready`) only when the machine asks
//! for something a poll cannot do: restarting the stdio server, starting the HTTP
//! machine over after a stale era verdict, or shutting down.
//!
//! With an [`EraPlan`] whose attempt is tentative (an origin cached as legacy, connected
//! in `Legacy` without a probe), calls made before the connection is up are held here
//! rather than given to the machine: if the server moved on, that machine closes (failing
//! every call it holds) and the transport starts a fresh one in the configured mode
//! ([`Step::Reprobe`]), which then gets the held calls. Once connected, the plan records
//! the verdict and the held calls go to the machine.

use mcp_host::clock;
use mcp_proto::Instant;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_channel::{Receiver, Sender, TrySendError};
use async_io::Timer;
use futures_lite::Stream;
use mcp_host::{Cause, EraPlan, Flavour, Options, Sendable};
use mcp_proto::client::http::HttpClient;
use mcp_proto::client::{
    ApiMisuse, CallError, CallId, CallOutput, CallRequest, Client as StdioMachine, CloseReason,
    ConnectionState, Event, HttpFailure, InputAnswer, InputId,
};
use mcp_proto::jsonrpc::Notification;
use mcp_proto::model::ServerDetails;

use crate::Error;
use crate::client::{Command, Configure, Shared};
use crate::error::TransportError;

/// Poll-step rounds before the driver yields to its executor even if there is more to do.
pub(crate) const BUDGET: usize = 64;
/// Transport failures remembered to type the errors they cause.
const MAX_TRANSPORT_FAILURES: usize = 16;

/// The commands and outputs both client machines (stdio's `Client`, `HttpClient`) have.
pub(crate) trait Machine {
    fn call(&mut self, now: Instant, request: CallRequest) -> Result<CallId, ApiMisuse>;
    fn respond(
        &mut self,
        now: Instant,
        input: InputId,
        answer: InputAnswer,
    ) -> Result<(), ApiMisuse>;
    fn cancel(&mut self, now: Instant, call: CallId) -> Result<(), ApiMisuse>;
    fn close(&mut self, now: Instant);
    fn state(&self) -> ConnectionState;
    fn server(&self) -> Option<&ServerDetails>;
    fn poll_event(&mut self) -> Option<Event>;
    fn poll_timeout(&self) -> Option<Instant>;
    fn handle_timeout(&mut self, now: Instant);
}

macro_rules! forward_machine {
    ($ty:ty, |$m:ident| $state:expr, $server:expr) => {
        impl Machine for $ty {
            fn call(&mut self, now: Instant, request: CallRequest) -> Result<CallId, ApiMisuse> {
                <$ty>::call(self, now, request)
            }
            fn respond(
                &mut self,
                now: Instant,
                input: InputId,
                answer: InputAnswer,
            ) -> Result<(), ApiMisuse> {
                <$ty>::respond(self, now, input, answer)
            }
            fn cancel(&mut self, now: Instant, call: CallId) -> Result<(), ApiMisuse> {
                <$ty>::cancel(self, now, call)
            }
            fn close(&mut self, now: Instant) {
                <$ty>::close(self, now);
            }
            fn state(&self) -> ConnectionState {
                let $m = self;
                $state
            }
            fn server(&self) -> Option<&ServerDetails> {
                let $m = self;
                $server
            }
            fn poll_event(&mut self) -> Option<Event> {
                <$ty>::poll_event(self)
            }
            fn poll_timeout(&self) -> Option<Instant> {
                <$ty>::poll_timeout(self)
            }
            fn handle_timeout(&mut self, now: Instant) {
                <$ty>::handle_timeout(self, now);
            }
        }
    };
}

forward_machine!(StdioMachine, |m| m.state(), m.server());
forward_machine!(HttpClient, |m| m.client().state(), m.client().server());

/// A transport's IO around its machine, for a core whose handlers are of flavour `F`.
pub(crate) trait Transport<F: Flavour = Sendable> {
    type Machine: Machine;

    fn machine(&mut self) -> &mut Self::Machine;

    /// Moves everything its sources have into the machine, until each is `Pending`.
    /// True on progress.
    fn poll_input(&mut self, core: &mut Core<F>, now: Instant, cx: &mut Context<'_>) -> bool;

    /// Moves the machine's output onto the wire as far as it goes. True on progress.
    fn poll_output(&mut self, core: &mut Core<F>, now: Instant, cx: &mut Context<'_>) -> bool;
}

/// Why a poll step ended.
pub(crate) enum Step {
    /// The stdio server must be restarted (it exited on the era probe).
    Restart,
    /// The HTTP connection attempt made on a cached legacy verdict failed because the
    /// server moved on: the transport starts a fresh machine in [`EraPlan::mode`] and
    /// hands it the held calls ([`Core::release_held`]).
    Reprobe,
    /// The machine closed.
    Closed(CloseReason),
}

/// The channels between the handles and the driver.
pub(crate) struct Channels {
    pub(crate) commands: Commands,
    /// The sender, and a receiver to drop the oldest notification when the queue is full.
    pub(crate) notifications: (Sender<Notification>, Receiver<Notification>),
    /// Dropped when the driver finishes.
    pub(crate) done: Sender<()>,
}

/// The driver's end of the command channel. Dropping it (the driver finished, or was
/// dropped at any point, even before its first poll) closes the channel and drops every
/// command still queued: the reply channels they carry close, so the calls and
/// `connected()` waiters behind them end at once with the driver's final error, or
/// [`Error::DriverGone`]. (A closed channel keeps its queue while any sender lives, and
/// every handle holds one: without this, a call queued before the driver went would
/// wait forever.) Later commands fail to send, and their callers get the same error.
pub(crate) struct Commands(Pin<Box<Receiver<Command>>>);

impl Commands {
    pub(crate) fn new(rx: Receiver<Command>) -> Commands {
        // Boxed: a `Receiver` is not `Unpin`.
        Commands(Box::pin(rx))
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Command>> {
        self.0.as_mut().poll_next(cx)
    }

    fn try_recv(&self) -> Option<Command> {
        self.0.try_recv().ok()
    }

    fn close(&self) {
        self.0.close();
    }
}

impl Drop for Commands {
    fn drop(&mut self) {
        self.close();
        while let Some(command) = self.try_recv() {
            drop(command);
        }
    }
}

struct PendingCall {
    key: u64,
    reply: Sender<Result<CallOutput, Error>>,
}

/// A call kept back from a machine whose connection attempt may be retried.
struct HeldCall {
    key: u64,
    request: CallRequest,
    reply: Sender<Result<CallOutput, Error>>,
}

/// The transport-independent half of a driver; `F` is the flavour of the handlers in
/// its options (with [`mcp_host::Local`] the core, and the driver, are not `Send`).
pub(crate) struct Core<F: Flavour = Sendable> {
    pub(crate) options: Options<F>,
    commands: Commands,
    /// Every handle is gone (the channel reported its end).
    released: bool,
    notifications: (Sender<Notification>, Receiver<Notification>),
    _done: Sender<()>,
    pub(crate) shared: Arc<Shared>,
    calls: HashMap<CallId, PendingCall>,
    keys: HashMap<u64, CallId>,
    connect_waiters: Vec<Sender<Result<ServerDetails, Error>>>,
    /// The era cache's plan for this connection (HTTP with an era cache only).
    era: Option<EraPlan>,
    /// Calls made while the attempt is tentative, oldest first.
    held: VecDeque<HeldCall>,
    timer: Timer,
    timer_at: Option<Instant>,
    /// The newest failures below HTTP. The machine learns of them as text only; a call
    /// or a close whose HTTP failure carries that very text is reported as the typed
    /// failure instead ([`Error::Transport`]).
    transport_failures: VecDeque<TransportError>,
}

impl<F: Flavour> Core<F> {
    pub(crate) fn new(options: Options<F>, channels: Channels, shared: Arc<Shared>) -> Core<F> {
        Core {
            options,
            commands: channels.commands,
            released: false,
            notifications: channels.notifications,
            _done: channels.done,
            shared,
            calls: HashMap::new(),
            keys: HashMap::new(),
            connect_waiters: Vec::new(),
            era: None,
            held: VecDeque::new(),
            timer: Timer::never(),
            timer_at: None,
            transport_failures: VecDeque::new(),
        }
    }

    /// Follows `plan` for this connection: holds calls while its attempt is tentative,
    /// asks it whether a failed attempt is retried, records the verdict.
    pub(crate) fn set_era_plan(&mut self, plan: EraPlan) {
        self.era = Some(plan);
    }

    /// Whether the current connection attempt may yet be retried (calls are held).
    fn tentative(&self) -> bool {
        self.era.as_ref().is_some_and(EraPlan::is_tentative)
    }

    /// Hands the held calls to `machine`, oldest first.
    pub(crate) fn release_held(&mut self, machine: &mut impl Machine, now: Instant) {
        while let Some(HeldCall {
            key,
            request,
            reply,
        }) = self.held.pop_front()
        {
            self.submit(machine, now, key, request, reply);
        }
    }

    /// Gives a call to the machine.
    fn submit(
        &mut self,
        machine: &mut impl Machine,
        now: Instant,
        key: u64,
        request: CallRequest,
        reply: Sender<Result<CallOutput, Error>>,
    ) {
        match machine.call(now, request) {
            Ok(call) => {
                self.calls.insert(call, PendingCall { key, reply });
                self.keys.insert(key, call);
            }
            Err(e) => {
                let _ = reply.try_send(Err(Error::from(e)));
            }
        }
    }

    /// One pass of the main phase: every source polled until `Pending`, every output
    /// drained. Ready when an async phase (restart, shutdown) must take over.
    pub(crate) fn poll_step<T: Transport<F>>(
        &mut self,
        t: &mut T,
        cx: &mut Context<'_>,
    ) -> Poll<Step> {
        for _ in 0..BUDGET {
            let now = clock::now();
            let mut progress = self.poll_commands(t.machine(), now, cx);

            if t.poll_input(self, now, cx) {
                progress = true;
            }

            // Deadlines.
            let machine = t.machine();
            if machine.poll_timeout().is_some_and(|d| d <= now) {
                machine.handle_timeout(now);
                progress = true;
            }

            // Events.
            while let Some(event) = machine.poll_event() {
                progress = true;
                if let Some(step) = self.on_event(machine, now, event) {
                    return Poll::Ready(step);
                }
            }

            if t.poll_output(self, now, cx) {
                progress = true;
            }

            // The next deadline.
            if self.poll_timer(t.machine().poll_timeout(), now, cx) {
                progress = true;
            }

            if !progress {
                return Poll::Pending;
            }
        }
        // Plenty done in one go: let other tasks run, and come back at once.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Arms the timer for `deadline`. True when it is due already.
    fn poll_timer(
        &mut self,
        deadline: Option<Instant>,
        now: Instant,
        cx: &mut Context<'_>,
    ) -> bool {
        match deadline {
            Some(deadline) if deadline > now => {
                // Re-arm only to fire earlier. A timer left armed for a later instant (a
                // call that has since completed) just fires once for nothing; re-arming
                // on every change would wake the reactor thread on every call.
                let rearm = self.timer_at.is_none_or(|at| deadline < at);
                if rearm {
                    self.timer.set_at(clock::to_std(deadline));
                    self.timer_at = Some(deadline);
                }
                if Pin::new(&mut self.timer).poll(cx).is_ready() {
                    self.timer_at = None;
                    return true;
                }
                false
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Commands from the handles. True on progress.
    fn poll_commands(
        &mut self,
        machine: &mut impl Machine,
        now: Instant,
        cx: &mut Context<'_>,
    ) -> bool {
        let mut progress = false;
        for _ in 0..BUDGET {
            match self.commands.poll_next(cx) {
                Poll::Ready(Some(command)) => {
                    self.on_command(machine, now, command);
                    progress = true;
                }
                Poll::Ready(None) => {
                    if !self.released {
                        self.released = true;
                        machine.close(now);
                        progress = true;
                    }
                    break;
                }
                Poll::Pending => break,
            }
        }
        progress
    }

    fn on_command(&mut self, machine: &mut impl Machine, now: Instant, command: Command) {
        match command {
            Command::Call {
                key,
                request,
                reply,
            } => {
                if self.tentative() {
                    self.held.push_back(HeldCall {
                        key,
                        request,
                        reply,
                    });
                } else {
                    self.submit(machine, now, key, request, reply);
                }
            }
            Command::Cancel { key } => {
                if let Some(call) = self.keys.remove(&key) {
                    let _ = machine.cancel(now, call);
                } else {
                    // Never sent: forgetting it is the whole cancellation.
                    self.held.retain(|h| h.key != key);
                }
            }
            Command::Connected(reply) => match machine.state() {
                ConnectionState::Ready(..) => {
                    let details = machine.server().cloned();
                    let _ = reply.try_send(details.ok_or(Error::DriverGone));
                }
                _ => self.connect_waiters.push(reply),
            },
            Command::Configure(change) => self.configure(change),
            Command::Close => machine.close(now),
        }
    }

    /// Applies a change of options from a handle. The handles are `Send`, so what they
    /// bring is too, and fits either flavour.
    fn configure(&mut self, change: Configure) {
        let options = &mut self.options;
        match change {
            Configure::InputHandler(h) => options.input_handler = F::input_handler(h),
            Configure::Progress(p) => options.progress = p.map(F::progress),
            Configure::WireLog(l) => options.wire_log = l.map(F::wire_log),
            Configure::GracePeriod(grace) => options.grace_period = grace,
        }
    }

    /// Handles one event of the machine; `Some` when the main phase must stop.
    pub(crate) fn on_event(
        &mut self,
        machine: &mut impl Machine,
        now: Instant,
        event: Event,
    ) -> Option<Step> {
        // Progress and input requests: the options decide. An answer fails only if the
        // input was voided meanwhile, which cannot happen between two lines of this
        // function.
        let event = self.options.handle_event(event, |input, answer| {
            let _ = machine.respond(now, input, answer);
        })?;
        match event {
            Event::Connected(details) => {
                if let Some(plan) = &mut self.era {
                    plan.connected(details.protocol_version);
                }
                self.release_held(machine, now);
                self.shared.lock().server = Some((*details).clone());
                for waiter in self.connect_waiters.drain(..) {
                    let _ = waiter.try_send(Ok((*details).clone()));
                }
            }
            Event::RestartTransport => return Some(Step::Restart),
            Event::CallCompleted { call, outcome } => {
                if let Some(pending) = self.calls.remove(&call) {
                    self.keys.remove(&pending.key);
                    let outcome = outcome.map_err(|e| match e {
                        CallError::Closed(reason) => self.closed_error(reason),
                        CallError::Http(failure) => match self.transport_failure(&failure) {
                            Some(t) => Error::Transport(t.clone()),
                            None => Error::Call(CallError::Http(failure)),
                        },
                        other => Error::Call(other),
                    });
                    // A dropped receiver means the caller stopped waiting: nothing to do.
                    let _ = pending.reply.try_send(outcome);
                }
            }
            Event::Notification(n) => self.push_notification(n),
            Event::NotificationsDropped { count } => {
                self.shared.lock().dropped_notifications += count;
            }
            Event::PeerError(e) => self.shared.lock().push_peer_error(e),
            Event::ToolExcluded { tool, reason } => self.shared.lock().exclude_tool(tool, reason),
            Event::Closed { reason } => {
                if let Some(plan) = &mut self.era
                    && plan.retry(Cause::Connect(&reason))
                {
                    // The machine held no call (they are held here), and the handles
                    // see nothing of the failed attempt.
                    return Some(Step::Reprobe);
                }
                let ended = self.closed_error(reason.clone());
                let mut shared = self.shared.lock();
                shared.close_reason = Some(reason.clone());
                shared.ended = Some(ended);
                return Some(Step::Closed(reason));
            }
            // Input requests are answered on the spot above, so nothing is ever waiting
            // to be voided.
            _ => {}
        }
        None
    }

    /// The error for a connection that closed for `reason`: a close that only says "the
    /// HTTP exchange failed" is the transport failure behind it, when there is one.
    pub(crate) fn closed_error(&self, reason: CloseReason) -> Error {
        if let CloseReason::Http(failure) = &reason
            && let Some(t) = self.transport_failure(failure)
        {
            return Error::Transport(t.clone());
        }
        Error::Closed(reason)
    }

    /// Remembers a failure below HTTP that is being reported to the machine.
    pub(crate) fn record_transport_failure(&mut self, failure: TransportError) {
        if self.transport_failures.len() >= MAX_TRANSPORT_FAILURES {
            self.transport_failures.pop_front();
        }
        self.transport_failures.push_back(failure);
    }

    /// The transport failure an HTTP failure reports, if it is one.
    fn transport_failure(&self, failure: &HttpFailure) -> Option<&TransportError> {
        if failure.status.is_some() || failure.error.is_some() {
            return None;
        }
        self.transport_failures
            .iter()
            .rev()
            .find(|t| t.to_string() == failure.detail)
    }

    /// Queues a notification for the handles, dropping the oldest when full.
    fn push_notification(&mut self, n: Notification) {
        let (tx, rx) = &self.notifications;
        if let Err(TrySendError::Full(n)) = tx.try_send(n) {
            let _ = rx.try_recv();
            self.shared.lock().dropped_notifications += 1;
            let _ = tx.try_send(n);
        }
    }

    /// No new commands from now on; the ones already queued get the final error in
    /// [`Core::finish`].
    pub(crate) fn stop_commands(&mut self) {
        self.commands.close();
    }

    /// Publishes the end and fails whatever still waits: queued commands and calls with
    /// `ended`, [`Client::connected`](crate::Client::connected) waiters with
    /// `connect_error`.
    pub(crate) fn finish(&mut self, ended: &Error, connect_error: &Error) {
        self.commands.close();
        if matches!(connect_error, Error::Connect { .. }) {
            self.shared.lock().ended = Some(connect_error.clone());
        }
        while let Some(command) = self.commands.try_recv() {
            match command {
                Command::Call { reply, .. } => {
                    let _ = reply.try_send(Err(ended.clone()));
                }
                Command::Connected(reply) => self.connect_waiters.push(reply),
                Command::Cancel { .. } | Command::Configure(_) | Command::Close => {}
            }
        }
        for (_, pending) in self.calls.drain() {
            let _ = pending.reply.try_send(Err(ended.clone()));
        }
        for held in self.held.drain(..) {
            let _ = held.reply.try_send(Err(ended.clone()));
        }
        self.keys.clear();
        for waiter in self.connect_waiters.drain(..) {
            let _ = waiter.try_send(Err(connect_error.clone()));
        }
    }
}
