//! What a client driver does the same way whatever its runtime: [`Core`], the machine
//! with its options, run until it has nothing more to say ([`Core::settle`]), and fed
//! what the adapter's IO saw ([`Core::received`], [`Core::ended`], [`Core::failed`]).
//! The adapter only does what it is asked ([`Execute`]): open, write and close channels,
//! start the server again, and keep the events the handles wait for.

use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::client::{Client, ConnId, Event, Origin, Transmit, TransportFailure};

use crate::transcript::Recording;
use crate::wire_log::ChannelLog;
use crate::{Direction, Flavour, Options, WireLog, clock};

/// The most capacity an output buffer keeps once a message has gone out ([`Core`]'s
/// transmit buffer, the adapters' write buffers): a large message does not pin its size.
pub const MAX_KEPT_BUFFER: usize = 256 * 1024;

/// The machine of one connection and its options, with the machine's bytes of the
/// current transmit and its transcript recording.
#[derive(Debug)]
pub struct Core<F: Flavour> {
    /// The protocol machine, which decides everything.
    pub machine: Client,
    /// The connection's options (handlers, wire log, grace period, transcript sink).
    pub options: Options<F>,
    buf: Vec<u8>,
    recording: Option<Recording>,
}

/// What an adapter does for the machine, called by [`Core::settle`].
pub trait Execute<F: Flavour> {
    /// Opens `conn` to `origin` (HTTP); a failure is handed to the machine.
    ///
    /// # Errors
    /// When the connection cannot even be started.
    fn connect(&mut self, conn: ConnId, origin: &Origin) -> Result<(), TransportFailure>;
    /// Writes `bytes` on `conn`, after what was written before, logging them.
    fn write(&mut self, conn: ConnId, bytes: &[u8], log: &mut Option<WireLog<F>>);
    /// [`Execute::write`] of a buffer the adapter may keep (it then need not copy it).
    fn write_owned(&mut self, conn: ConnId, bytes: Vec<u8>, log: &mut Option<WireLog<F>>) {
        self.write(conn, &bytes, log);
    }
    /// Closes `conn`; for stdio, the server gets `grace` to exit.
    fn close(&mut self, conn: ConnId, grace: Duration, log: &mut Option<WireLog<F>>);
    /// Starts the stdio server again: `Ok(true)` when it runs already, `Ok(false)` when
    /// the adapter tells the machine later (`handle_connected` or a failure).
    ///
    /// # Errors
    /// When it cannot be started.
    fn respawn(&mut self, log: &mut Option<WireLog<F>>) -> Result<bool, TransportFailure>;
    /// The wire log of `conn`, while it is open.
    fn channel_log(&mut self, conn: ConnId) -> Option<&mut ChannelLog>;
    /// An event the options did not take: `Connected`, `Closed`, a call's outcome, a
    /// notification, …
    fn event(&mut self, event: Event);
}

impl<F: Flavour> Core<F> {
    /// The core of a driver of `machine`, recording its transcript when the options
    /// have a sink.
    pub fn new(mut machine: Client, options: Options<F>) -> Self {
        let recording = Recording::start(&mut machine, &options);
        Core {
            machine,
            options,
            buf: Vec::new(),
            recording,
        }
    }

    /// Executes every transmit of the machine through `io` and hands every event on
    /// (progress and input requests to the options, the rest to `io`), until neither is
    /// left; then hands on the transcript lines of all that. The clock is read at every
    /// step: an input handler may take its time (a person answering a prompt).
    pub fn settle(&mut self, io: &mut impl Execute<F>) {
        loop {
            let mut more = false;
            self.buf.clear();
            // One reading of the clock per pass: executing a transmit hands bytes over
            // and never waits. Handlers (below) may wait, so each answer reads it anew.
            let now = clock::now();
            while let Some(transmit) = self.machine.poll_transmit(now, &mut self.buf) {
                self.execute(now, transmit, io);
                self.buf.clear();
                more = true;
            }
            while let Some(event) = self.machine.poll_event() {
                let machine = &mut self.machine;
                let event = self
                    .options
                    .handle_event(event, |reply| reply.apply(machine, clock::now()));
                if let Some(event) = event {
                    io.event(event);
                }
                more = true;
            }
            if !more {
                break;
            }
        }
        // A large message does not pin its size.
        if self.buf.capacity() > MAX_KEPT_BUFFER {
            self.buf = Vec::new();
        }
        let sink = &mut self.options.transcript;
        Recording::drain_into(&mut self.recording, &mut self.machine, sink);
    }

    fn execute(&mut self, now: Instant, transmit: Transmit, io: &mut impl Execute<F>) {
        let log = &mut self.options.wire_log;
        let failed = match transmit {
            Transmit::Connect { conn, origin } => {
                io.connect(conn, &origin).err().map(|f| (conn, f))
            }
            // The whole buffer is the message (the machine hands its message over as the
            // buffer itself when it can): it goes to the adapter without a copy.
            Transmit::Write { conn, len } if len == self.buf.len() => {
                io.write_owned(conn, std::mem::take(&mut self.buf), log);
                None
            }
            Transmit::Write { conn, len } => {
                io.write(conn, &self.buf[self.buf.len().saturating_sub(len)..], log);
                None
            }
            Transmit::Close { conn } => {
                let grace = self.options.grace_now(&self.machine, now);
                io.close(conn, grace, &mut self.options.wire_log);
                None
            }
            Transmit::Respawn => match io.respawn(log) {
                Ok(true) => {
                    self.machine.handle_connected(now, ConnId::STDIO);
                    None
                }
                Ok(false) => None,
                Err(failure) => Some((ConnId::STDIO, failure)),
            },
            _ => None,
        };
        if let Some((conn, failure)) = failed {
            self.failed(now, conn, failure, io.channel_log(conn));
        }
    }

    /// Bytes read on `conn`, logged in `log`; once the machine has the whole response,
    /// its log ends (a body without a final newline would show late otherwise).
    pub fn received(
        &mut self,
        now: Instant,
        conn: ConnId,
        data: &[u8],
        log: Option<&mut ChannelLog>,
    ) {
        let wire_log = &mut self.options.wire_log;
        let mut log = log;
        if let Some(log) = log.as_deref_mut() {
            log.received(wire_log, data);
        }
        self.machine.handle_read(now, conn, data);
        if let Some(log) = log.filter(|_| self.machine.is_idle(conn)) {
            log.finish(wire_log);
        }
    }

    /// The end of what `conn` received.
    pub fn ended(&mut self, now: Instant, conn: ConnId, log: Option<&mut ChannelLog>) {
        if let Some(log) = log {
            log.finish(&mut self.options.wire_log);
        }
        self.machine.handle_eof(now, conn);
    }

    /// `conn` failed: its log ends with the failure, and the machine decides what becomes
    /// of it.
    pub fn failed(
        &mut self,
        now: Instant,
        conn: ConnId,
        failure: TransportFailure,
        log: Option<&mut ChannelLog>,
    ) {
        let wire_log = &mut self.options.wire_log;
        if let Some(log) = log {
            log.finish(wire_log);
        }
        if let Some(wire_log) = wire_log {
            wire_log(Direction::Received, format!("({failure})").as_bytes());
        }
        self.machine.handle_transport_error(now, conn, failure);
    }

    /// Runs the machine's timers when its deadline has come. True when it had.
    pub fn run_timers(&mut self, now: Instant) -> bool {
        let due = self.machine.poll_timeout().is_some_and(|at| at <= now);
        if due {
            self.machine.handle_timeout(now);
        }
        due
    }

    /// The grace period left for a server process, as of `now`.
    #[must_use]
    pub fn grace(&self, now: Instant) -> Duration {
        self.options.grace_now(&self.machine, now)
    }

    /// The HTTP endpoint's origin, which names the failures below HTTP.
    #[must_use]
    pub fn endpoint(&self) -> Option<&str> {
        self.machine.http_config().map(|c| c.url.origin())
    }
}
