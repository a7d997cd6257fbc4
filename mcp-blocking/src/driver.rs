//! The run loop: one `mcp_proto` client machine, driven on the caller's thread, over a
//! child process's stdio or Streamable HTTP connections.
//!
//! The machine decides everything (what to send where, when to open, reuse, retry or
//! close a connection, when to restart the server, every deadline); this loop carries it
//! out through a [`Carrier`]. Every turn it waits on the one channel of IO reports (see
//! the `carrier` module) until the machine's next deadline, feeds what came (bytes, end
//! of input, a failure, a connection opened, or the timer), then settles: executes
//! every [`Transmit`] and drains every event, until neither is left. Progress and input
//! requests are handled by [`Options::handle_event`] (the input handler answers on the
//! spot); the rest is kept in the [`Inbox`] for the blocking methods.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender};

use mcp_io::transcript::Recording;
use mcp_io::{Direction, Error, Flavour, Options, Shared, Shutdown, clock};
use mcp_proto::client::{
    self as proto, CallError, CallId, CallOutput, CallRequest, CloseReason, ConnId, Event,
    Transmit, TransportFailure,
};
use mcp_proto::model::ServerDetails;

use crate::carrier::{Carrier, IoEvent, Report};

/// The machine, its carrier, and what came out of them; `F` is the flavour of the
/// options' handlers.
pub(crate) struct Driver<F: Flavour> {
    pub(crate) machine: proto::Client,
    tx: SyncSender<Report>,
    rx: Receiver<Report>,
    buf: Vec<u8>,
    pub(crate) options: Options<F>,
    /// What the events say about the connection, and the server process.
    pub(crate) shared: Arc<Shared>,
    /// Outcomes of calls, until their method picks them up.
    completed: HashMap<CallId, Result<CallOutput, CallError>>,
    /// `close` ran: whatever the machine still waits for is cut off.
    released: bool,
    pub(crate) carrier: Box<dyn Carrier<F>>,
    /// The machine records, for the options' transcript sink.
    recording: Option<Recording>,
}

impl<F: Flavour> fmt::Debug for Driver<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("state", &self.machine.state())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<F: Flavour> Driver<F> {
    /// A driver for `machine` over `carrier`, whose threads report on `tx`; nothing is
    /// exchanged yet.
    pub(crate) fn new(
        mut machine: proto::Client,
        carrier: Box<dyn Carrier<F>>,
        (tx, rx): (SyncSender<Report>, Receiver<Report>),
        options: Options<F>,
        shared: Arc<Shared>,
    ) -> Driver<F> {
        let recording = Recording::start(&mut machine, &options);
        Driver {
            machine,
            tx,
            rx,
            buf: Vec::new(),
            options,
            shared,
            completed: HashMap::new(),
            released: false,
            carrier,
            recording,
        }
    }

    /// Runs until the machine reports `Connected`, or fails and releases the transport.
    pub(crate) fn connect(&mut self) -> Result<ServerDetails, Error> {
        self.settle();
        loop {
            let (server, closed) = {
                let state = self.shared.lock();
                (state.inbox.server.clone(), state.inbox.closed.clone())
            };
            if let Some(details) = server {
                return Ok(details);
            }
            if let Some(reason) = closed {
                self.close();
                let stderr = self.shared.lock().stderr.text();
                return Err(Error::not_connected(reason, self.endpoint(), stderr));
            }
            self.turn();
        }
    }

    /// Starts a call and runs until it completes.
    pub(crate) fn request(&mut self, request: CallRequest) -> Result<CallOutput, Error> {
        // What arrived while nobody was calling (a server closing an idle connection)
        // first, so the machine places the call knowing it.
        while let Ok(report) = self.rx.try_recv() {
            self.feed(report);
        }
        let now = clock::now();
        if self.machine.poll_timeout().is_some_and(|at| at <= now) {
            self.machine.handle_timeout(now);
        }
        self.settle();
        if let Some(reason) = self.closed() {
            return Err(Error::closed(reason, self.endpoint()));
        }
        let call = self.machine.call(clock::now(), request)?;
        self.settle();
        loop {
            if let Some(outcome) = self.completed.remove(&call) {
                return outcome.map_err(|e| Error::call(e, self.endpoint()));
            }
            if let Some(reason) = self.closed() {
                return Err(Error::closed(reason, self.endpoint()));
            }
            self.turn();
        }
    }

    /// Closes the connection and releases the transport: the machine bounds its last
    /// exchanges (a legacy session's `DELETE`, `HttpConfig::close_timeout`) and says when
    /// it is released; a server process then gets the grace period. Idempotent.
    pub(crate) fn close(&mut self) -> Shutdown {
        if !self.released {
            self.released = true;
            let now = clock::now();
            self.machine.close(now);
            self.settle();
            while !self.machine.is_released() {
                self.turn();
            }
            let mut state = self.shared.lock();
            state.inbox.closed.get_or_insert(CloseReason::Local);
        }
        let grace = self.options.grace_now(&self.machine, clock::now());
        self.carrier.release(grace, &mut self.options.wire_log)
    }

    /// Waits for one report until the machine's deadline, feeds it, and settles.
    fn turn(&mut self) {
        let now = clock::now();
        let report = match self.machine.poll_timeout() {
            Some(at) if at <= now => None,
            Some(at) => self.rx.recv_timeout(at.saturating_duration_since(now)).ok(),
            None if self.carrier.is_idle() => {
                // No channel open and no deadline: nothing can ever arrive.
                self.machine.close(now);
                None
            }
            None => self.rx.recv().ok(),
        };
        match report {
            Some(report) => self.feed(report),
            None => self.machine.handle_timeout(clock::now()),
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
        if !self.carrier.is_current(conn, generation) {
            return;
        }
        let (now, log) = (clock::now(), &mut self.options.wire_log);
        match event {
            IoEvent::Connected => self.machine.handle_connected(now, conn),
            IoEvent::Data(data) => {
                self.carrier.log_read(conn, Some(&data), log);
                self.machine.handle_read(now, conn, &data);
                // A response is complete: end its log now rather than at the next
                // request (a body without a final newline would show late).
                if self.machine.is_idle(conn) {
                    self.carrier.log_read(conn, None, log);
                }
            }
            IoEvent::Written(bytes) => self.machine.handle_written(now, conn, bytes),
            IoEvent::Eof => {
                self.carrier.log_read(conn, None, log);
                self.machine.handle_eof(now, conn);
            }
            IoEvent::Failed(step, error) => {
                let failure = self.carrier.failure(step, error);
                self.fail(conn, failure);
            }
        }
    }

    /// Tells the machine that `conn` failed.
    fn fail(&mut self, conn: ConnId, failure: TransportFailure) {
        let log = &mut self.options.wire_log;
        self.carrier.log_read(conn, None, log);
        if let Some(log) = log {
            log(Direction::Received, format!("({failure})").as_bytes());
        }
        self.machine
            .handle_transport_error(clock::now(), conn, failure);
    }

    /// Executes every transmit and drains every event, until neither is left; then
    /// hands on the transcript lines of all that.
    fn settle(&mut self) {
        loop {
            while let Some(transmit) = self.machine.poll_transmit(clock::now(), &mut self.buf) {
                self.execute(transmit);
                self.buf.clear();
            }
            let mut drained = false;
            while let Some(event) = self.machine.poll_event() {
                drained = true;
                let machine = &mut self.machine;
                let event = self.options.handle_event(event, |input, answer| {
                    // Refused only for an input already voided: nothing to do.
                    let _ = machine.respond(clock::now(), input, answer);
                });
                // Notifications stay in the inbox; an InputCancelled needs nothing, as the
                // handler answers on the spot.
                if let Some(Event::CallCompleted { call, outcome }) =
                    event.and_then(|e| self.shared.lock().inbox.keep(e))
                {
                    self.completed.insert(call, outcome);
                }
            }
            if !drained {
                break;
            }
        }
        let (machine, sink) = (&mut self.machine, &mut self.options.transcript);
        Recording::drain_into(&mut self.recording, machine, sink);
    }

    /// Does what the machine asked.
    fn execute(&mut self, transmit: Transmit) {
        let grace = self.options.grace_now(&self.machine, clock::now());
        let log = &mut self.options.wire_log;
        let done = match transmit {
            Transmit::Connect { conn, origin } => self
                .carrier
                .connect(conn, &origin, &self.tx)
                .map_err(|f| (conn, f)),
            Transmit::Write { conn, len } => {
                let bytes = self.buf.split_off(self.buf.len() - len);
                self.carrier.write(conn, bytes, log);
                Ok(())
            }
            Transmit::Close { conn } => {
                self.carrier.close(conn, grace, log);
                Ok(())
            }
            Transmit::Respawn => match self.carrier.respawn(&self.tx) {
                Ok(()) => {
                    self.machine.handle_connected(clock::now(), ConnId::STDIO);
                    Ok(())
                }
                Err(f) => Err((ConnId::STDIO, f)),
            },
            _ => Ok(()),
        };
        if let Err((conn, failure)) = done {
            self.fail(conn, failure);
        }
    }

    /// Why the connection ended, once it has.
    pub(crate) fn closed(&self) -> Option<CloseReason> {
        self.shared.lock().inbox.closed.clone()
    }

    /// The HTTP endpoint's origin, which names the failures below HTTP.
    fn endpoint(&self) -> Option<&str> {
        self.machine.http_config().map(|c| c.url.origin())
    }
}

impl<F: Flavour> Drop for Driver<F> {
    fn drop(&mut self) {
        self.close();
    }
}
