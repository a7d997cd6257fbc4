//! The run loop: one `mcp_proto` client machine, driven on the caller's thread, over a
//! child process's stdio or Streamable HTTP connections.
//!
//! The machine decides everything (what to send where, when to open, reuse, retry or
//! close a connection, when to restart the server, every deadline); this loop carries it
//! out through a [`Carrier`]. Every turn it waits on the one channel of IO reports (see
//! the `carrier` module) until the machine's next deadline, feeds what came (bytes, end
//! of input, a failure, a connection opened, or the timer), then settles
//! ([`Core::settle`]): executes every transmit and drains every event, until neither is
//! left. Progress and input requests are handled by the options (the input handler
//! answers on the spot); the rest is kept in the inbox of the [`Shared`] state for the
//! blocking methods.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Duration;

use mcp_io::drive::{Core, Execute};
use mcp_io::wire_log::ChannelLog;
use mcp_io::{Error, Flavour, Inbox, Options, Shared, Shutdown, WireLog, clock};
use mcp_proto::client::{
    self as proto, CallError, CallId, CallOutput, CallRequest, CloseReason, ConnId, Event, Origin,
    TransportFailure,
};
use mcp_proto::model::ServerDetails;

use crate::carrier::{Carrier, IoEvent, Report};

/// The machine and its options, its carrier, and what came out of them; `F` is the
/// flavour of the options' handlers.
pub(crate) struct Driver<F: Flavour> {
    pub(crate) core: Core<F>,
    rx: Receiver<Report>,
    pub(crate) io: Io<F>,
    /// `close` ran: whatever the machine still waits for is cut off.
    released: bool,
    /// Set by a [`Canceller`](crate::Canceller): the wait in progress ends.
    cancel: Arc<AtomicBool>,
}

/// What carries out the machine's transmits and keeps its events.
pub(crate) struct Io<F: Flavour> {
    carrier: Box<dyn Carrier<F>>,
    tx: SyncSender<Report>,
    /// What the events say about the connection, and the server process.
    pub(crate) shared: Arc<Shared>,
    /// Outcomes of calls, until their method picks them up.
    completed: HashMap<CallId, Result<CallOutput, CallError>>,
}

impl<F: Flavour> Execute<F> for Io<F> {
    fn connect(&mut self, conn: ConnId, origin: &Origin) -> Result<(), TransportFailure> {
        self.carrier.connect(conn, origin, &self.tx)
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
        self.carrier.respawn(&self.tx).map(|()| true)
    }

    fn channel_log(&mut self, conn: ConnId) -> Option<&mut ChannelLog> {
        self.carrier.channel_log(conn)
    }

    /// Notifications stay in the inbox; an `InputCancelled` needs nothing, as the
    /// handler answers on the spot.
    fn event(&mut self, event: Event) {
        if let Some(Event::CallCompleted { call, outcome }) = self.shared.lock().inbox.keep(event) {
            self.completed.insert(call, outcome);
        }
    }
}

impl<F: Flavour> fmt::Debug for Driver<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("state", &self.core.machine.state())
            .field("options", &self.core.options)
            .finish_non_exhaustive()
    }
}

impl<F: Flavour> Driver<F> {
    /// A driver for `machine` over `carrier`, whose threads report on `tx`; nothing is
    /// exchanged yet.
    pub(crate) fn new(
        machine: proto::Client,
        carrier: Box<dyn Carrier<F>>,
        (tx, rx): (SyncSender<Report>, Receiver<Report>),
        options: Options<F>,
        shared: Arc<Shared>,
    ) -> Driver<F> {
        let completed = HashMap::new();
        Driver {
            core: Core::new(machine, options),
            rx,
            io: Io {
                carrier,
                tx,
                shared,
                completed,
            },
            released: false,
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }

    /// What a [`Canceller`](crate::Canceller) needs: the flag, and the channel to wake
    /// the driver on.
    pub(crate) fn cancel_handle(&self) -> (Arc<AtomicBool>, SyncSender<Report>) {
        (Arc::clone(&self.cancel), self.io.tx.clone())
    }

    /// Whether a cancellation came from another thread (and consumes it).
    fn cancelled(&self) -> bool {
        self.cancel.swap(false, Ordering::AcqRel)
    }

    /// Runs until the machine reports `Connected`, or fails and releases the transport.
    pub(crate) fn connect(&mut self) -> Result<ServerDetails, Error> {
        self.settle();
        loop {
            let (server, closed) = {
                let state = self.io.shared.lock();
                (state.inbox.server.clone(), state.inbox.closed.clone())
            };
            if let Some(details) = server {
                return Ok(details);
            }
            if let Some(reason) = closed {
                let exited = matches!(reason, CloseReason::ServerExited { .. });
                let shutdown = self.close();
                // Only a process that ended on its own has an exit status worth telling.
                let status = shutdown.status.filter(|_| exited && !shutdown.killed);
                let stderr = self.io.shared.lock().stderr.text();
                let endpoint = self.core.endpoint();
                return Err(Error::not_connected_with(reason, endpoint, stderr, status));
            }
            self.turn();
        }
    }

    /// Starts a call and runs until it completes.
    pub(crate) fn request(&mut self, request: CallRequest) -> Result<CallOutput, Error> {
        let call = self.start(request)?;
        self.finish(call)
    }

    /// The outcome of the call `call`, if it completed already (without driving).
    pub(crate) fn poll_outcome(&mut self, call: CallId) -> Option<Result<CallOutput, Error>> {
        let outcome = self.io.completed.remove(&call)?;
        Some(outcome.map_err(|e| Error::call(e, self.core.endpoint())))
    }

    /// Runs until the call `call` (started with [`Driver::start`]) completes.
    pub(crate) fn finish(&mut self, call: CallId) -> Result<CallOutput, Error> {
        loop {
            if let Some(outcome) = self.io.completed.remove(&call) {
                return outcome.map_err(|e| Error::call(e, self.core.endpoint()));
            }
            if let Some(reason) = self.closed() {
                return Err(Error::closed(reason, self.core.endpoint()));
            }
            if self.cancelled() {
                // The machine tells the server and completes the call as cancelled (a
                // call that completed meanwhile keeps its outcome).
                let _ = self.core.machine.cancel(clock::now(), call);
                self.settle();
                continue;
            }
            self.turn();
        }
    }

    /// Starts a call and returns at once (a 2026 subscription ends with
    /// `Event::SubscriptionEnded`, not with a completion a `request` waits for). What
    /// arrived while nobody was calling (a server closing an idle connection) is fed
    /// first, so the machine places the call knowing it.
    pub(crate) fn start(&mut self, request: CallRequest) -> Result<CallId, Error> {
        // A cancellation only ever ends the wait that was in progress.
        self.cancel.store(false, Ordering::Release);
        while let Ok(report) = self.rx.try_recv() {
            self.feed(report);
        }
        self.core.run_timers(clock::now());
        self.settle();
        if let Some(reason) = self.closed() {
            return Err(Error::closed(reason, self.core.endpoint()));
        }
        let call = self.core.machine.call(clock::now(), request)?;
        self.settle();
        Ok(call)
    }

    /// Replaces the roots offered to the server.
    pub(crate) fn set_roots(&mut self, roots: Vec<proto::Root>) -> Result<(), Error> {
        if let Some(reason) = self.closed() {
            return Err(Error::closed(reason, self.core.endpoint()));
        }
        self.core.machine.set_roots(clock::now(), roots)?;
        self.settle();
        Ok(())
    }

    /// Cancels a call (ends a subscription).
    pub(crate) fn cancel(&mut self, call: CallId) -> Result<(), Error> {
        self.core.machine.cancel(clock::now(), call)?;
        self.settle();
        Ok(())
    }

    /// Runs the connection until `pick` finds something in the inbox, the connection is
    /// over, or `timeout` passed.
    pub(crate) fn wait_for<T>(
        &mut self,
        timeout: Duration,
        mut pick: impl FnMut(&mut Inbox) -> Option<T>,
    ) -> Option<T> {
        let until = std::time::Instant::now() + timeout;
        self.cancel.store(false, Ordering::Release);
        loop {
            if let Some(found) = pick(&mut self.io.shared.lock().inbox) {
                return Some(found);
            }
            let now = std::time::Instant::now();
            if self.closed().is_some() || now >= until || self.cancelled() {
                return None;
            }
            self.turn_until(Some(clock::from_std(until)));
        }
    }

    /// Closes the connection and releases the transport: the machine bounds its last
    /// exchanges (a legacy session's `DELETE`, `HttpConfig::close_timeout`) and says when
    /// it is released; a server process then gets the grace period. Idempotent.
    pub(crate) fn close(&mut self) -> Shutdown {
        if !self.released {
            self.released = true;
            self.core.machine.close(clock::now());
            self.settle();
            while !self.core.machine.is_released() {
                self.turn();
            }
            let mut state = self.io.shared.lock();
            state.inbox.closed.get_or_insert(CloseReason::Local);
        }
        let grace = self.core.grace(clock::now());
        (self.io.carrier).release(grace, &mut self.core.options.wire_log)
    }

    /// Waits for one report until the machine's deadline, feeds it, and settles.
    fn turn(&mut self) {
        self.turn_until(None);
    }

    /// As `turn`, waiting no later than `limit` when there is one.
    fn turn_until(&mut self, limit: Option<mcp_proto::Instant>) {
        let now = clock::now();
        let deadline = match (self.core.machine.poll_timeout(), limit) {
            (Some(at), Some(limit)) => Some(at.min(limit)),
            (None, _) if self.io.carrier.is_idle() => {
                // No channel open and no deadline: nothing can ever arrive.
                self.core.machine.close(now);
                Some(now)
            }
            (at, limit) => at.or(limit),
        };
        let report = match deadline {
            Some(at) if at <= now => None,
            Some(at) => self.rx.recv_timeout(at.saturating_duration_since(now)).ok(),
            None => self.rx.recv().ok(),
        };
        match report {
            Some(report) => self.feed(report),
            None => self.core.machine.handle_timeout(clock::now()),
        }
        self.settle();
    }

    /// Hands one report to the machine, unless its channel is closed or replaced.
    fn feed(&mut self, report: Report) {
        let Report {
            conn,
            generation,
            event,
        } = report;
        let (core, carrier) = (&mut self.core, &mut self.io.carrier);
        if matches!(event, IoEvent::Wake) || !carrier.is_current(conn, generation) {
            return;
        }
        let now = clock::now();
        match event {
            IoEvent::Connected => core.machine.handle_connected(now, conn),
            IoEvent::Data(data) => core.received(now, conn, &data, carrier.channel_log(conn)),
            IoEvent::Written(bytes) => core.machine.handle_written(now, conn, bytes),
            IoEvent::Eof => core.ended(now, conn, carrier.channel_log(conn)),
            IoEvent::Failed(step, error) => {
                let failure = carrier.failure(step, error);
                core.failed(now, conn, failure, carrier.channel_log(conn));
            }
            IoEvent::Wake => {}
        }
    }

    /// Executes every transmit and drains every event, until neither is left.
    fn settle(&mut self) {
        self.core.settle(&mut self.io);
    }

    /// Why the connection ended, once it has.
    pub(crate) fn closed(&self) -> Option<CloseReason> {
        self.io.shared.lock().inbox.closed.clone()
    }
}

impl<F: Flavour> Drop for Driver<F> {
    fn drop(&mut self) {
        self.close();
    }
}
