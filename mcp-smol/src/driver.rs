//! The `Driver`: the one future that owns a connection and all of its IO.
//!
//! # Theory of operation
//!
//! One driver serves both transports, because one machine does:
//! [`mcp_proto::client::Client`] decides everything (the era, the calls, how many HTTP
//! connections, which one carries what, keep-alive reuse and expiry, the one retry after
//! a stale connection, connect deadlines, restarting a stdio server that exited on the
//! probe, ending a legacy session). The driver executes, in one `poll`:
//!
//! * it feeds the machine: commands from the [`Client`](crate::Client) handles (through
//!   [`Facade`]), bytes and end of input from every open channel (each HTTP connection,
//!   the stdio server's stdout), connections that opened or failed, the stdio process
//!   restarted, and the time once the machine's deadline has passed;
//! * after every one of those it drains the machine: each `Transmit` is obeyed
//!   (`Connect` starts the [`Connector`](crate::Connector) future and TLS, `Write` queues
//!   bytes on the channel's output buffer, `Close` drops a connection or ends the stdio
//!   process, `Respawn` restarts it) and each event goes to the facade;
//! * it writes what is queued with `poll_write` (a peer that stops reading never stops
//!   the reads), reads open channels until `Pending` (or, after a read that did not fill
//!   the buffer, until the stream says it is not readable: the stdio pipe and plain TCP
//!   can, which spares the read that would only find nothing), and arms one
//!   `async_io::Timer` at the machine's next deadline.
//!
//! Each channel (and the stdio process, its stderr included, and the handles' command
//! channel) is polled with a waker of its own ([`crate::wake`]): a poll of the driver
//! tries only what was woken or stopped short of `Pending`, and writes a channel that was
//! not woken only when bytes were queued on it. Every read or write tried is a system
//! call; trying every channel whatever woke the driver cost several per call.
//!
//! Once the machine has closed and released its transport (and the stdio process is
//! reaped), the facade fails whatever still waits and the driver resolves. The grace
//! period ([`Options::grace_period`](crate::Options::grace_period)) bounds that end: the
//! stdio process is killed when it runs out, and the machine gives HTTP connections
//! still open (a legacy session's `DELETE` unanswered) as long, at most 2 s.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_io::Timer;
use futures_lite::AsyncRead;
use mcp_io::drive::{Core, Execute};
use mcp_io::tls::Layer;
use mcp_io::wire_log::ChannelLog;
use mcp_io::{Flavour, Options, Sendable, StdioCommand, TransportErrorKind, WireLog, clock};
use mcp_proto::Instant;
use mcp_proto::client::http::HttpConfig;
use mcp_proto::client::{
    Client as Machine, ClientConfig, ConnId, ConnectionState, Event, Origin, TransportFailure,
    TransportFailureKind,
};

use crate::Error;
use crate::conn::{Conn, Open, Wire};
use crate::facade::Facade;
use crate::http::Opener;
use crate::stdio::{Change, Process, Spawned};
use crate::wake::{Readiness, TaskWaker};

/// Rounds of one poll before the driver yields to its executor even with more to do.
const BUDGET: usize = 64;
/// Bytes read from a channel at a time: what a Linux pipe holds, as mcp-blocking reads.
/// A 64 KiB answer then takes one or two reads; in 16 KiB pieces, each piece went through
/// the machine on its own (6 % more instructions per 64 KiB call over HTTP).
const READ_CHUNK: usize = 64 * 1024;

/// The future that does all the IO of one connection: for stdio it reads the server's
/// stdout and stderr and writes its stdin; over HTTP it opens the connections the
/// machine asks for and reads and writes them. In both cases it runs the protocol timer,
/// serves the [`Client`](crate::Client) handles and answers input requests.
///
/// Run it on any executor (`smol::spawn`, an `Executor`, a `LocalExecutor`, another
/// runtime's spawn) or join it with your own future (`futures_lite::future::zip`). The
/// library never spawns a task or a thread of its own (async-io, async-process and
/// blocking keep their usual helper threads: the fallback reactor driver, the child
/// reaper, and the pool that resolves host names).
///
/// It resolves when the connection is over: `Ok(())` when the client closed it (every
/// handle dropped, or [`Client::close`](crate::Client::close)), `Err` with the reason
/// otherwise (the server exited, negotiation failed, a restart could not spawn, the HTTP
/// endpoint could not be reached). For stdio that is once the server process has exited
/// (or was killed after the grace period) and been reaped; over HTTP once the last
/// exchange is over (or the grace period ran out) and every connection is closed.
/// Dropping it early kills the server process and its group, or closes every connection,
/// at once, and every call still waiting fails with [`Error::DriverGone`].
///
/// `F` is the [flavour](Flavour) of the handlers in its [`Options`]: a
/// `Driver` (that is, `Driver<Sendable>`) is `Send` and runs on any executor; a
/// `Driver<Local>`, from [`Options::local`](crate::Options::local), takes handlers that
/// are not `Send`: run it on a `LocalExecutor`, or join it with your own future on one
/// thread.
#[must_use = "the Driver does all the IO: run it on an executor or await it alongside your code"]
pub struct Driver<F: Flavour = Sendable> {
    state: State<F>,
}

enum State<F: Flavour> {
    /// Not polled yet: no clock runs before the first poll.
    New(Box<Setup<F>>),
    Running(Box<Io<F>>),
    Done,
}

/// What a driver is made of before it first runs.
pub(crate) struct Setup<F: Flavour> {
    pub(crate) config: ClientConfig,
    pub(crate) transport: Transport,
    pub(crate) facade: Facade,
    pub(crate) options: Options<F>,
}

// Built once per driver; on Windows, larger process handles make the stdio variant outgrow HTTP.
#[cfg_attr(windows, allow(clippy::large_enum_variant))]
pub(crate) enum Transport {
    /// The command (for restarts) and the process already started.
    Stdio(StdioCommand, Spawned),
    Http(Box<HttpConfig>, Opener),
}

impl<F: Flavour> fmt::Debug for Driver<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver").finish_non_exhaustive()
    }
}

impl<F: Flavour> Driver<F> {
    pub(crate) fn new(setup: Setup<F>) -> Driver<F> {
        Driver {
            state: State::New(Box::new(setup)),
        }
    }
}

impl<F: Flavour> Future for Driver<F> {
    type Output = Result<(), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let State::New(_) = this.state
            && let State::New(setup) = std::mem::replace(&mut this.state, State::Done)
        {
            this.state = State::Running(Box::new(Io::start(*setup, clock::now())));
        }
        let State::Running(io) = &mut this.state else {
            panic!("the mcp-smol Driver was polled after it completed");
        };
        let outcome = std::task::ready!(io.poll(cx));
        // Dropping the IO closes what is left and tells the handles the driver is done.
        this.state = State::Done;
        Poll::Ready(outcome)
    }
}

/// The running driver.
struct Io<F: Flavour> {
    /// The machine and the options.
    core: Core<F>,
    chans: Chans,
    chunk: Box<[u8]>,
    timer: Timer,
    timer_at: Option<Instant>,
    /// Wake-ups of the command channel.
    commands_ready: Readiness,
    /// The ids of the channels to try this round, copied each round.
    ids: Vec<ConnId>,
}

/// What carries out the machine's transmits, and the handles' side.
struct Chans {
    conns: BTreeMap<ConnId, Conn>,
    process: Process,
    /// Wake-ups of the stdio process: its stderr, its restart, its end.
    process_ready: Readiness,
    /// The driver task's waker, which every channel's waker wakes.
    task: Arc<TaskWaker>,
    /// Stdio: what to start again on `Transmit::Respawn`.
    command: Option<StdioCommand>,
    /// HTTP: how connections are opened.
    opener: Option<Opener>,
    facade: Facade,
}

impl<F: Flavour> Execute<F> for Chans {
    fn connect(&mut self, conn: ConnId, origin: &Origin) -> Result<(), TransportFailure> {
        if let Some(opener) = &self.opener {
            let (opening, tls) = opener.open(origin).map_err(|e| e.failure())?;
            let ready = Readiness::new(&self.task);
            self.conns.insert(conn, Conn::Opening(opening, tls, ready));
        }
        Ok(())
    }

    fn write(&mut self, conn: ConnId, bytes: &[u8], log: &mut Option<WireLog<F>>) {
        if let Some(Conn::Open(open)) = self.conns.get_mut(&conn) {
            open.send(log, Cow::Borrowed(bytes));
        }
    }

    fn write_owned(&mut self, conn: ConnId, bytes: Vec<u8>, log: &mut Option<WireLog<F>>) {
        if let Some(Conn::Open(open)) = self.conns.get_mut(&conn) {
            open.send(log, Cow::Owned(bytes));
        }
    }

    fn close(&mut self, conn: ConnId, grace: Duration, log: &mut Option<WireLog<F>>) {
        let wire = self.conns.remove(&conn).and_then(|c| c.close(log));
        if conn == ConnId::STDIO {
            self.process.end(wire, grace, &self.facade.shared);
            self.process_ready.set();
        }
    }

    /// The new process is reported by `poll_process` once it runs.
    fn respawn(&mut self, log: &mut Option<WireLog<F>>) -> Result<bool, TransportFailure> {
        if let Some(conn) = self.conns.remove(&ConnId::STDIO) {
            conn.close(log);
        }
        if let Some(command) = &self.command {
            self.process.restart(command, &self.facade.shared);
            self.process_ready.set();
        }
        Ok(false)
    }

    fn channel_log(&mut self, conn: ConnId) -> Option<&mut ChannelLog> {
        match self.conns.get_mut(&conn) {
            Some(Conn::Open(open)) => Some(&mut open.log),
            _ => None,
        }
    }

    fn event(&mut self, event: Event) {
        self.facade.on_event(event);
    }
}

impl Chans {
    /// A failure at `step` on a channel, the error behind it as its source.
    fn failure(&self, step: TransportErrorKind, e: io::Error) -> TransportFailure {
        match &self.opener {
            Some(opener) => opener.failure(step, e),
            None => TransportFailure::from_io(&e).with_source(Arc::new(e)),
        }
    }
}

impl<F: Flavour> Io<F> {
    fn start(setup: Setup<F>, now: Instant) -> Io<F> {
        let Setup {
            config,
            transport,
            facade,
            options,
        } = setup;
        let mut conns = BTreeMap::new();
        let task = Arc::new(TaskWaker::default());
        let (machine, process, command, opener) = match transport {
            Transport::Stdio(command, spawned) => {
                let (process, wire) = Process::start(spawned, &facade.shared);
                let ready = Readiness::new(&task);
                let open = Open::new(wire, Layer::default(), &options.redact_headers, ready);
                conns.insert(ConnId::STDIO, Conn::Open(open));
                (Machine::stdio(config, now), process, Some(command), None)
            }
            Transport::Http(http, opener) => {
                let machine = Machine::http(config, *http, now);
                (machine, Process::None, None, Some(opener))
            }
        };
        let commands_ready = Readiness::new(&task);
        let chans = Chans {
            conns,
            process,
            process_ready: Readiness::new(&task),
            task,
            command,
            opener,
            facade,
        };
        let mut io = Io {
            core: Core::new(machine, options),
            chans,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            timer: Timer::never(),
            timer_at: None,
            commands_ready,
            ids: Vec::new(),
        };
        io.drain(now);
        io
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.chans.task.register(cx.waker());
        for round in 0..BUDGET {
            let now = clock::now();
            let mut progress = self.poll_commands(now);
            progress |= self.poll_process(now);
            // A copy of the keys of the channels that may progress (polling a channel may
            // open or close others), in a buffer kept from round to round. A wake-up after
            // the look is not lost: it wakes the task too.
            self.ids.clear();
            let due = self
                .chans
                .conns
                .iter()
                .filter(|(_, conn)| conn.may_progress());
            self.ids.extend(due.map(|(id, _)| *id));
            for i in 0..self.ids.len() {
                progress |= self.poll_conn(now, self.ids[i]);
            }
            // The deadline takes a walk over every exchange and call. It is looked at in
            // every round but a first one that progressed: that round is followed by
            // another, which looks at it with a newer `now` (a poll woken by one channel
            // then walks once, in the round that finds nothing more to do and arms the
            // timer). Input that never pauses has it looked at every round from the second.
            let mut deadline = None;
            if !progress || round > 0 {
                deadline = self.core.machine.poll_timeout();
                if deadline.is_some_and(|at| at <= now) {
                    self.core.machine.handle_timeout(now);
                    self.drain(now);
                    progress = true;
                }
            }
            // The machine bounds its own end (`HttpConfig::close_timeout`); a process has
            // its grace period in `Process::end`.
            if self.core.machine.is_released() && self.chans.process.is_over() {
                self.drain(now);
                let reason = self.core.machine.close_reason();
                let line = self.core.machine.unreadable_line();
                return Poll::Ready(self.chans.facade.finish(reason, line));
            }
            if !progress && !self.poll_timer(deadline, cx) {
                return Poll::Pending;
            }
        }
        // Plenty done in one go: let other tasks run, and come back at once.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Obeys the machine and hands its events to the facade, until it has nothing more.
    fn drain(&mut self, now: Instant) {
        self.core.settle(now, &mut self.chans);
    }

    /// The handles' commands, when one may have come: polling an empty mailbox takes
    /// its lock and leaves the waker there each time.
    fn poll_commands(&mut self, now: Instant) -> bool {
        if !self.commands_ready.take() {
            return false;
        }
        let cx = &mut self.commands_ready.context();
        let mut progress = false;
        let mut pending = false;
        for _ in 0..BUDGET {
            // Once closed, commands wait for the end, which answers them all.
            if self.core.machine.state() == ConnectionState::Closed {
                break;
            }
            match self.chans.facade.commands.poll_next(cx) {
                Poll::Ready(Some(command)) => self.chans.facade.apply(&mut self.core, now, command),
                // Every handle is gone.
                Poll::Ready(None) => self.core.machine.close(now),
                Poll::Pending => {
                    pending = true;
                    break;
                }
            }
            // `drain`, with `cx` borrowing `commands_ready`.
            self.core.settle(now, &mut self.chans);
            progress = true;
        }
        if !pending {
            self.commands_ready.set();
        }
        progress
    }

    /// The stdio process, when something woke it.
    fn poll_process(&mut self, now: Instant) -> bool {
        let chans = &mut self.chans;
        if !chans.process_ready.take() {
            return false;
        }
        let cx = &mut chans.process_ready.context();
        match chans
            .process
            .poll(&chans.facade.shared, &mut self.chunk, cx)
        {
            Change::Nothing => return false,
            Change::Ended => return true,
            Change::Progress => {
                // Its stderr may hold more than one poll reads: tried again next round.
                chans.process_ready.set();
                return true;
            }
            Change::Exited => {
                // Its stderr is read next round.
                chans.process_ready.set();
                self.core.machine.handle_process_exited(now);
            }
            Change::Restarted(Ok(wire)) => {
                // Its stderr has not been read yet.
                chans.process_ready.set();
                let ready = Readiness::new(&chans.task);
                let redact = &self.core.options.redact_headers;
                let open = Open::new(wire, Layer::default(), redact, ready);
                let open = Conn::Open(open);
                chans.conns.insert(ConnId::STDIO, open);
                self.core.machine.handle_connected(now, ConnId::STDIO);
            }
            Change::Restarted(Err(e)) => {
                let failure = TransportFailure::new(TransportFailureKind::Spawn, e.to_string());
                let failure = failure.with_source(Arc::new(e));
                self.core.failed(now, ConnId::STDIO, failure, None);
            }
        }
        self.drain(now);
        true
    }

    /// A channel: opening it, writing what is queued, reading until `Pending`; only
    /// what may have progressed since the last time is tried.
    fn poll_conn(&mut self, now: Instant, id: ConnId) -> bool {
        let open = match self.chans.conns.get_mut(&id) {
            None => return false,
            Some(Conn::Opening(opening, tls, ready)) => {
                if !ready.take() {
                    return false;
                }
                match opening.as_mut().poll(&mut ready.context()) {
                    Poll::Pending => return false,
                    Poll::Ready(Ok(stream)) => {
                        let redact = &self.core.options.redact_headers;
                        let tls = std::mem::take(tls);
                        let open = Open::new(Wire::Net(stream), tls, redact, ready.clone());
                        let handshaking = open.tls.handshaking();
                        self.chans.conns.insert(id, Conn::Open(open));
                        if !handshaking {
                            self.core.machine.handle_connected(now, id);
                        }
                    }
                    Poll::Ready(Err(e)) => {
                        self.chans.conns.remove(&id);
                        self.core.failed(now, id, e.failure(), None);
                    }
                }
                self.drain(now);
                return true;
            }
            Some(Conn::Open(open)) => open,
        };
        // A wake-up may be for either direction; bytes queued need only a write. The mark
        // is cleared before the channel is tried, so a wake-up meanwhile is kept.
        let woken = open.ready.take();
        if !woken && !open.wants_write {
            return false;
        }
        // A failed write ends the writing only: what the peer sent is still read (an
        // exited stdio server's last words and end of output, an early HTTP answer).
        let written = open.poll_write();
        let step = open.tls.step(TransportErrorKind::Write);
        // Ignored over HTTP (and counted in TLS records there): stdio's stdin counts.
        let newly = open.take_written();
        if newly > 0 {
            self.core.machine.handle_written(now, id, newly);
        }
        let mut progress = written.unwrap_or_else(|e| {
            let failure = self.chans.failure(step, e);
            let log = Execute::<F>::channel_log(&mut self.chans, id);
            self.core.failed(now, id, failure, log);
            self.drain(now);
            true
        });
        if !woken {
            return progress;
        }
        let mut pending = false;
        for _ in 0..BUDGET {
            let Some(Conn::Open(open)) = self.chans.conns.get_mut(&id) else {
                return progress;
            };
            let cx = &mut open.ready.context();
            let n = match Pin::new(&mut open.wire).poll_read(cx, &mut self.chunk) {
                Poll::Pending => {
                    pending = true;
                    break;
                }
                Poll::Ready(Ok(0)) => return self.lost(now, id, None),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return self.lost(now, id, Some(e)),
            };
            // A short read found the channel empty; where the channel can say so, wait
            // for it to be readable instead of reading again to learn it.
            let emptied = n < self.chunk.len() && open.wire.poll_more(cx).is_pending();
            let (got, log) = match open.receive(&self.chunk[..n]) {
                Ok(got) => got,
                Err(e) => return self.lost(now, id, Some(e)),
            };
            if got.opened {
                self.core.machine.handle_connected(now, id);
            }
            if !got.plaintext.is_empty() {
                self.core.received(now, id, got.plaintext, Some(log));
            }
            if got.closed {
                return self.lost(now, id, None);
            }
            self.drain(now);
            progress = true;
            if emptied {
                pending = true;
                break;
            }
        }
        // Stopped short of `Pending`: no wake-up will come for what is left.
        if let Some(Conn::Open(open)) = self.chans.conns.get_mut(&id)
            && !pending
        {
            open.ready.set();
        }
        progress
    }

    /// A channel's input ended (`error: None`; over TLS, an error without `close_notify`)
    /// or failed: it is dropped, the machine told. Before its TLS handshake is over,
    /// either is a failure to connect.
    fn lost(&mut self, now: Instant, id: ConnId, error: Option<io::Error>) -> bool {
        let mut conn = self.chans.conns.remove(&id);
        let (log, step, error) = match &mut conn {
            Some(Conn::Open(open)) if open.tls.handshaking() => {
                let error = error.unwrap_or_else(|| io::ErrorKind::UnexpectedEof.into());
                (
                    Some(&mut open.log),
                    TransportErrorKind::Connect,
                    Some(error),
                )
            }
            Some(Conn::Open(open)) => {
                let error = error.or_else(|| open.tls.receive_eof().err());
                (Some(&mut open.log), TransportErrorKind::Read, error)
            }
            _ => (None, TransportErrorKind::Read, error),
        };
        match error {
            None => self.core.ended(now, id, log),
            Some(e) => {
                let failure = self.chans.failure(step, e);
                self.core.failed(now, id, failure, log);
            }
        }
        self.drain(now);
        true
    }

    /// Arms the timer for the machine's next deadline (still to come). True when the
    /// timer fired.
    fn poll_timer(&mut self, deadline: Option<Instant>, cx: &mut Context<'_>) -> bool {
        let Some(deadline) = deadline else {
            return false;
        };
        // Re-arm only to fire earlier: a timer armed for a deadline that has gone (a call
        // completed) fires once for nothing, cheaper than re-arming on every change.
        if self.timer_at.is_none_or(|at| deadline < at) {
            self.timer.set_at(clock::to_std(deadline));
            self.timer_at = Some(deadline);
        }
        if Pin::new(&mut self.timer).poll(cx).is_ready() {
            self.timer_at = None;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_is_send() {
        fn send<T: Send + 'static>() {}
        send::<Driver>();
    }
}
