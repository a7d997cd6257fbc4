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
    /// left; then hands on the transcript lines of all that.
    ///
    /// `now` is the instant the caller read last: executing a transmit or handing an
    /// event to `io` hands things over and never waits, so it holds for the whole
    /// settling. Handlers are another matter (a person answering a prompt may take
    /// minutes): an answer is given at the time it comes, and a pass that ran a handler
    /// reads the clock anew for the next one. Returns the instant the settling ended
    /// with: `now`, or the later reading when a handler ran.
    pub fn settle(&mut self, now: Instant, io: &mut impl Execute<F>) -> Instant {
        let mut now = now;
        loop {
            let mut more = false;
            let mut handled = false;
            self.buf.clear();
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
                match event {
                    Some(event) => io.event(event),
                    None => handled = true,
                }
                more = true;
            }
            if !more {
                break;
            }
            if handled {
                now = clock::now();
            }
        }
        // A large message does not pin its size.
        if self.buf.capacity() > MAX_KEPT_BUFFER {
            self.buf = Vec::new();
        }
        let sink = &mut self.options.transcript;
        Recording::drain_into(&mut self.recording, &mut self.machine, sink);
        now
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use mcp_proto::EraMode;
    use mcp_proto::client::{CallRequest, ClientConfig};
    use serde_json::{Value, json};

    use super::*;
    use crate::Sendable;

    /// Keeps what the core hands over: the lines written and the events.
    #[derive(Default)]
    struct Recorder {
        written: Vec<u8>,
        events: Vec<Event>,
    }

    impl Recorder {
        /// The messages written since the last look, parsed.
        fn messages(&mut self) -> Vec<Value> {
            let text = String::from_utf8(std::mem::take(&mut self.written)).unwrap();
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        }
    }

    impl Execute<Sendable> for Recorder {
        fn connect(&mut self, _: ConnId, _: &Origin) -> Result<(), TransportFailure> {
            unreachable!("a stdio client opens no connection")
        }
        fn write(&mut self, _: ConnId, bytes: &[u8], _: &mut Option<WireLog<Sendable>>) {
            self.written.extend_from_slice(bytes);
        }
        fn close(&mut self, _: ConnId, _: Duration, _: &mut Option<WireLog<Sendable>>) {}
        fn respawn(&mut self, _: &mut Option<WireLog<Sendable>>) -> Result<bool, TransportFailure> {
            Ok(true)
        }
        fn channel_log(&mut self, _: ConnId) -> Option<&mut ChannelLog> {
            None
        }
        fn event(&mut self, event: Event) {
            self.events.push(event);
        }
    }

    fn line(message: &Value) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(message).unwrap();
        bytes.push(b'\n');
        bytes
    }

    /// Settling hands things over without waiting, so it keeps the instant it was given
    /// (no clock reading per pass); once a handler ran, it goes on with a fresh reading,
    /// and returns it.
    #[test]
    fn settling_keeps_the_callers_instant_until_a_handler_runs() {
        let start = Instant::ZERO;
        // The clock has moved past the origin: a fresh reading differs from `start`.
        while clock::now() == start {}
        let progress_seen = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&progress_seen);
        let options = Options::new().on_progress(move |_| {
            seen.fetch_add(1, Ordering::Relaxed);
        });
        let config = ClientConfig::new("test", "1").era_mode(EraMode::Legacy);
        let mut core = Core::new(Client::stdio(config, start), options);
        let mut io = Recorder::default();

        // The handshake: `initialize`, its answer, `notifications/initialized`.
        assert_eq!(core.settle(start, &mut io), start);
        let init = io.messages().remove(0);
        assert_eq!(init["method"], "initialize");
        let answer = json!({"jsonrpc": "2.0", "id": init["id"], "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "server", "version": "1"},
        }});
        core.received(start, ConnId::STDIO, &line(&answer), None);
        assert_eq!(core.settle(start, &mut io), start);
        assert_eq!(io.messages()[0]["method"], "notifications/initialized");

        // A call asking for progress, and a progress notification for it: the handler
        // takes it, and the settling ends with a later reading of the clock.
        let request = CallRequest::call_tool("slow", json!({})).with_progress();
        core.machine.call(start, request).unwrap();
        assert_eq!(core.settle(start, &mut io), start);
        let call = io.messages().remove(0);
        let token = call["params"]["_meta"]["progressToken"].clone();
        assert!(!token.is_null(), "{call}");
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1}});
        core.received(start, ConnId::STDIO, &line(&progress), None);
        let ended = core.settle(start, &mut io);
        assert_eq!(progress_seen.load(Ordering::Relaxed), 1);
        assert!(ended > start, "a handler ran: the clock is read again");
    }
}
