//! The run loop: one `mcp_proto` client machine, driven on the caller's thread against a
//! child process or Streamable HTTP connections.
//!
//! Every turn: write what the machine wants to send, wait on the reader channel until
//! the machine's next deadline, feed what arrived (bytes, end of file, or the timer), and
//! drain every event. Progress and input requests are handled by
//! [`Options::handle_event`] (the input handler answers on the spot, as in `mcp-smol`);
//! a [`Event::RestartTransport`] replaces the child with a fresh one. The transport is a
//! [`Link`]: it moves bytes and owns the machine; the event handling is shared.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use mcp_host::clock;

use mcp_host::wire_log::LineLog;
use mcp_host::{
    Direction, Flavour, MAX_NOTIFICATIONS, MAX_PEER_ERRORS, Options, Sendable, Shutdown,
    StderrTail, StdioCommand, push_newest,
};
use mcp_proto::client::{
    self as proto, CallError, CallId, CallOutput, CallRequest, ClientConfig, CloseReason, Event,
    HttpFailure, PeerError,
};
use mcp_proto::jsonrpc::Notification;
use mcp_proto::model::ServerDetails;

use crate::error::Error;
use crate::http::HttpLink;
use crate::process::{Process, Received};

/// The transport under the machine: a child process (stdio) or HTTP connections.
#[derive(Debug)]
pub(crate) enum Link {
    /// A child process's stdin and stdout.
    Stdio(Box<StdioLink>),
    /// Streamable HTTP.
    Http(Box<HttpLink>),
}

/// The machine, its transport, and what came out of them that nobody has picked up yet.
///
/// One event-handling loop serves both transports: the [`Link`] only moves bytes (and
/// owns the machine, which differs per transport); everything the machine reports is
/// handled here, the same way for stdio and HTTP.
///
/// `F` is the flavour of the handlers in the options: with [`mcp_host::Local`] the
/// driver (and the client around it) is not `Send`. The HTTP link is written for
/// `Send` wire logs; a local one is served through
/// [`Flavour::with_sendable_log`].
#[derive(Debug)]
pub(crate) struct Driver<F: Flavour = Sendable> {
    pub(crate) link: Link,
    pub(crate) options: Options<F>,
    pub(crate) details: Option<ServerDetails>,
    completed: HashMap<CallId, Result<CallOutput, CallError>>,
    pub(crate) notifications: VecDeque<Notification>,
    pub(crate) dropped_notifications: u64,
    pub(crate) peer_errors: VecDeque<PeerError>,
    /// Tools left out of `tools/list` over HTTP, with the reason (latest per tool).
    pub(crate) excluded_tools: Vec<(String, String)>,
    pub(crate) closed: Option<CloseReason>,
}

impl<F: Flavour> Driver<F> {
    /// Spawns the server and creates the machine; nothing is exchanged yet.
    pub(crate) fn start(
        command: StdioCommand,
        config: ClientConfig,
        options: Options<F>,
    ) -> Result<Driver<F>, Error> {
        let link = StdioLink::start(command, config)?;
        Ok(Self::with_link(Link::Stdio(Box::new(link)), options))
    }

    /// A driver over `link`; nothing is exchanged yet.
    pub(crate) fn with_link(link: Link, options: Options<F>) -> Driver<F> {
        Driver {
            link,
            options,
            details: None,
            completed: HashMap::new(),
            notifications: VecDeque::new(),
            dropped_notifications: 0,
            peer_errors: VecDeque::new(),
            excluded_tools: Vec::new(),
            closed: None,
        }
    }

    /// The protocol machine.
    pub(crate) fn machine(&self) -> &proto::Client {
        match &self.link {
            Link::Stdio(l) => &l.machine,
            Link::Http(l) => l.machine(),
        }
    }

    /// Runs until the machine reports `Connected`.
    pub(crate) fn connect(&mut self) -> Result<ServerDetails, Error> {
        loop {
            if let Some(details) = &self.details {
                return Ok(details.clone());
            }
            if let Some(reason) = self.closed.clone() {
                self.release();
                let stderr = self.stderr_tail();
                if let Link::Http(l) = &mut self.link
                    && matches!(&reason, CloseReason::Http(h) if h.status.is_none())
                    && let Some(e) = l.take_connect_failure()
                {
                    return Err(Error::Transport(e));
                }
                return Err(Error::Connect { reason, stderr });
            }
            self.turn()?;
        }
    }

    /// Starts a call and runs until it completes.
    pub(crate) fn request(&mut self, request: CallRequest) -> Result<CallOutput, Error> {
        if let Some(reason) = &self.closed {
            return Err(Error::Closed(reason.clone()));
        }
        let id = match &mut self.link {
            Link::Stdio(l) => l.machine.call(clock::now(), request)?,
            Link::Http(l) => l.call(request)?,
        };
        loop {
            if let Some(outcome) = self.completed.remove(&id) {
                return outcome.map_err(Error::from);
            }
            if let Some(reason) = &self.closed {
                return Err(Error::Closed(reason.clone()));
            }
            self.turn()?;
        }
    }

    /// One turn of the loop: flush, wait for one thing, feed it, drain events.
    fn turn(&mut self) -> Result<(), Error> {
        self.flush();
        let now = clock::now();
        let deadline = match &self.link {
            Link::Stdio(l) => l.machine.poll_timeout(),
            Link::Http(l) => l.poll_timeout(),
        };
        let timeout = deadline.map(|t| t.saturating_duration_since(now));
        let log = &mut self.options.wire_log;
        let alive = match &mut self.link {
            Link::Stdio(l) => l.wait(timeout, log),
            Link::Http(l) => F::with_sendable_log(log, |log| l.wait(timeout, log)),
        };
        if !alive {
            // Nothing can happen any more: no transport and no timer.
            let reason = match &mut self.link {
                Link::Stdio(l) => {
                    l.machine.close(clock::now());
                    CloseReason::ServerExited { truncated: 0 }
                }
                Link::Http(l) => {
                    l.close_machine();
                    CloseReason::Http(HttpFailure::new(
                        None,
                        None,
                        "no exchange in flight and nothing to wait for",
                    ))
                }
            };
            self.closed.get_or_insert(reason);
            return Ok(());
        }
        self.drain_events()?;
        if self.closed.is_some() && self.details.is_some() {
            // The connection is over: release the transport now rather than at close.
            self.release();
        }
        Ok(())
    }

    /// Hands everything the machine wants to send to the transport.
    fn flush(&mut self) {
        let log = &mut self.options.wire_log;
        match &mut self.link {
            Link::Stdio(l) => l.flush(log),
            Link::Http(l) => F::with_sendable_log(log, |log| l.flush(log)),
        }
    }

    fn poll_event(&mut self) -> Option<Event> {
        match &mut self.link {
            Link::Stdio(l) => l.machine.poll_event(),
            Link::Http(l) => l.poll_event(),
        }
    }

    fn drain_events(&mut self) -> Result<(), Error> {
        while let Some(event) = self.poll_event() {
            let mut answered = false;
            let link = &mut self.link;
            let event = self.options.handle_event(event, |input, answer| {
                answered = true;
                // The only refusal is for an input already voided: nothing to do.
                let _ = match link {
                    Link::Stdio(l) => l.machine.respond(clock::now(), input, answer),
                    Link::Http(l) => l.respond(input, answer),
                };
            });
            if answered {
                self.flush();
            }
            let Some(event) = event else {
                continue;
            };
            match event {
                Event::Connected(details) => self.details = Some(*details),
                Event::RestartTransport => {
                    if let Link::Stdio(l) = &mut self.link {
                        l.restart(&mut self.closed)?;
                    }
                }
                Event::CallCompleted { call, outcome } => {
                    self.completed.insert(call, outcome);
                }
                Event::Notification(n) => {
                    let dropped = push_newest(&mut self.notifications, n, MAX_NOTIFICATIONS);
                    self.dropped_notifications += u64::from(dropped);
                }
                Event::NotificationsDropped { count } => self.dropped_notifications += count,
                Event::PeerError(e) => {
                    push_newest(&mut self.peer_errors, e, MAX_PEER_ERRORS);
                }
                Event::ToolExcluded { tool, reason } => {
                    match self.excluded_tools.iter_mut().find(|(t, _)| *t == tool) {
                        Some(entry) => entry.1 = reason,
                        None => self.excluded_tools.push((tool, reason)),
                    }
                }
                Event::Closed { reason } => self.closed = Some(reason),
                // InputCancelled: the handler answers synchronously, nothing is waiting.
                _ => {}
            }
        }
        Ok(())
    }

    pub(crate) fn stderr_tail(&self) -> String {
        match &self.link {
            Link::Stdio(l) => l.tail.lock().unwrap_or_else(PoisonError::into_inner).text(),
            Link::Http(_) => String::new(),
        }
    }

    pub(crate) fn process_id(&self) -> Option<u32> {
        match &self.link {
            Link::Stdio(l) => l.process.as_ref().map(Process::id),
            Link::Http(_) => None,
        }
    }

    pub(crate) fn restarts(&self) -> u32 {
        match &self.link {
            Link::Stdio(l) => l.restarts,
            Link::Http(_) => 0,
        }
    }

    /// Releases the transport: stops the server process (bounded by the grace period),
    /// or ends a legacy HTTP session and closes the connections.
    fn release(&mut self) -> Shutdown {
        let grace = self.options.grace_period;
        match &mut self.link {
            Link::Stdio(l) => l.release_process(grace),
            Link::Http(l) => {
                F::with_sendable_log(&mut self.options.wire_log, |log| l.release(grace, log));
                Shutdown::default()
            }
        }
    }

    /// Closes the connection and the transport. Idempotent; never hangs past the grace
    /// period plus a short wait for the IO threads.
    pub(crate) fn close(&mut self) -> Shutdown {
        if self.closed.is_none() {
            match &mut self.link {
                Link::Stdio(l) => l.machine.close(clock::now()),
                Link::Http(l) => l.close_machine(),
            }
            while let Some(event) = self.poll_event() {
                if let Event::Closed { reason } = event {
                    self.closed = Some(reason);
                }
            }
            self.closed.get_or_insert(CloseReason::Local);
        }
        self.release()
    }
}

impl<F: Flavour> Drop for Driver<F> {
    fn drop(&mut self) {
        self.close();
    }
}

/// A child process's stdio under the machine.
#[derive(Debug)]
pub(crate) struct StdioLink {
    pub(crate) machine: proto::Client,
    command: StdioCommand,
    process: Option<Process>,
    tail: Arc<Mutex<StderrTail>>,
    /// Stdout of the current process has ended.
    eof: bool,
    out: Vec<u8>,
    /// The received lines, for the wire log.
    log: LineLog,
    restarts: u32,
    shutdown: Option<Shutdown>,
}

impl StdioLink {
    fn start(command: StdioCommand, config: ClientConfig) -> Result<StdioLink, Error> {
        let tail = Arc::new(Mutex::new(StderrTail::new(command.get_stderr_limit())));
        let process = Process::spawn(&command, &tail)?;
        Ok(StdioLink {
            machine: proto::Client::new(config, clock::now()),
            command,
            process: Some(process),
            tail,
            eof: false,
            out: Vec::new(),
            log: LineLog::new(),
            restarts: 0,
            shutdown: None,
        })
    }

    /// Hands everything the machine wants to send to the writer thread.
    fn flush<L: ?Sized + FnMut(Direction, &[u8])>(&mut self, wire_log: &mut Option<Box<L>>) {
        self.out.clear();
        if self.machine.poll_transmit(clock::now(), &mut self.out) == 0 {
            return;
        }
        LineLog::whole(wire_log, Direction::Sent, &self.out);
        if let Some(p) = &self.process {
            p.send(std::mem::take(&mut self.out));
        }
    }

    /// Waits for one thing until `timeout` and feeds it to the machine. False when
    /// nothing can arrive any more (stdout ended and no timer).
    fn wait<L: ?Sized + FnMut(Direction, &[u8])>(
        &mut self,
        timeout: Option<Duration>,
        wire_log: &mut Option<Box<L>>,
    ) -> bool {
        let received = match (&self.process, timeout) {
            (_, Some(Duration::ZERO)) => Received::Timeout,
            (Some(p), _) if !self.eof => p.recv(timeout),
            (_, Some(t)) => {
                thread::sleep(t);
                Received::Timeout
            }
            (_, None) => return false,
        };
        let now = clock::now();
        match received {
            Received::Data(data) => {
                self.log.feed(wire_log, Direction::Received, &data);
                self.machine.handle_input(now, &data);
            }
            Received::Eof => {
                self.eof = true;
                self.log.finish(wire_log, Direction::Received);
                self.machine.handle_eof(now);
            }
            Received::Timeout => self.machine.handle_timeout(now),
        }
        true
    }

    /// The probe cost the server process: replace it with a fresh one.
    fn restart(&mut self, closed: &mut Option<CloseReason>) -> Result<(), Error> {
        if let Some(mut old) = self.process.take() {
            // It already closed stdout (that is what triggered the restart).
            old.shutdown(Duration::ZERO);
        }
        let process = match Process::spawn(&self.command, &self.tail) {
            Ok(p) => p,
            Err(e) => {
                self.machine.close(clock::now());
                closed.get_or_insert(CloseReason::Local);
                return Err(e);
            }
        };
        self.process = Some(process);
        self.eof = false;
        self.log.clear();
        self.restarts += 1;
        self.machine.handle_transport_restarted(clock::now())?;
        Ok(())
    }

    /// Stops the server process (bounded by the grace period) and remembers how it ended.
    fn release_process(&mut self, grace: Duration) -> Shutdown {
        if let Some(mut p) = self.process.take() {
            self.shutdown = Some(p.shutdown(grace));
        }
        self.shutdown.unwrap_or_default()
    }
}
