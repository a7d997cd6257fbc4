//! The run loop: one `mcp_proto` client machine, driven on the caller's thread against a
//! child process or Streamable HTTP connections.
//!
//! Every turn: write what the machine wants to send, wait on the reader channel until
//! the machine's next deadline, feed what arrived (bytes, end of file, or the timer), and
//! drain every event. Input requests are answered on the spot by the [`InputHandler`];
//! a [`Event::RestartTransport`] replaces the child with a fresh one. The transport is a
//! [`Link`]: it moves bytes and owns the machine; the event handling is shared.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use mcp_proto::client::{
    self as proto, CallError, CallId, CallOutput, CallRequest, ClientConfig, CloseReason, Event,
    HttpFailure, InputHandler, PeerError,
};
use mcp_proto::jsonrpc::Notification;
use mcp_proto::model::ServerDetails;

use crate::error::Error;
use crate::http::HttpLink;
use crate::process::{Process, Received, Shutdown, StderrTail, StdioCommand};

/// Notifications kept for [`crate::Client::poll_notification`] before the oldest are dropped.
pub(crate) const MAX_NOTIFICATIONS: usize = 1024;
/// Peer errors kept for [`crate::Client::recent_peer_errors`].
pub(crate) const MAX_PEER_ERRORS: usize = 32;
/// Longest received line shown whole in the wire log; longer lines are shown in pieces.
const MAX_LOG_LINE: usize = 64 * 1024;

/// Called with every `notifications/progress` of a call that asked for progress.
pub type ProgressHandler = Box<dyn FnMut(&Progress) + Send>;

/// Called with every line written to or read from the server, without its line end. Over
/// HTTP these are the lines of requests and responses as sent and received, with the
/// values of `Authorization`, `Cookie` and `Set-Cookie` replaced by `[redacted]`.
pub type WireLog = Box<dyn FnMut(Direction, &[u8]) + Send>;

/// Progress of a call (`notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The call.
    pub call: CallId,
    /// Progress so far.
    pub progress: f64,
    /// Total, when known.
    pub total: Option<f64>,
    /// A message for people.
    pub message: Option<String>,
}

/// Which way a logged line went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Direction {
    /// Written to the server (its stdin, or an HTTP request).
    Sent,
    /// Read from the server (its stdout, or an HTTP response).
    Received,
}

/// How the blocking client behaves around the protocol machine.
///
/// ```
/// use std::time::Duration;
/// use mcp_blocking::Options;
/// use mcp_blocking::mcp_proto::client::AcceptDefaults;
///
/// let options = Options::new()
///     .grace_period(Duration::from_millis(500))
///     .input_handler(AcceptDefaults)
///     .wire_log(|dir, line| eprintln!("{dir:?} {}", String::from_utf8_lossy(line)));
/// # let _ = options;
/// ```
#[non_exhaustive]
pub struct Options {
    /// How long [`crate::Client::close`] (and drop) lets the server exit after its stdin
    /// is closed before killing it. Default 2 s. Over HTTP: how long closing waits for
    /// the exchanges in flight (a legacy session's `DELETE`), at most 2 s.
    pub grace_period: Duration,
    /// Answers every request for input. Default [`proto::DeclineAll`]. Only requests the
    /// [`ClientConfig`] declared capabilities for reach it: declare elicitation to see forms.
    pub input_handler: Box<dyn InputHandler>,
    /// Called on progress notifications (ask for them with
    /// [`CallRequest::with_progress`]).
    pub progress: Option<ProgressHandler>,
    /// Sees every line on the wire, from the first probe on.
    pub wire_log: Option<WireLog>,
}

impl Options {
    /// The defaults: 2 s grace period, [`proto::DeclineAll`], no progress handler, no log.
    #[must_use]
    pub fn new() -> Self {
        Options {
            grace_period: Duration::from_secs(2),
            input_handler: Box::new(proto::DeclineAll),
            progress: None,
            wire_log: None,
        }
    }

    /// The same options with another grace period.
    #[must_use]
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace_period = grace;
        self
    }

    /// The same options with another input handler.
    #[must_use]
    pub fn input_handler(mut self, handler: impl InputHandler + 'static) -> Self {
        self.input_handler = Box::new(handler);
        self
    }

    /// The same options with a progress callback.
    #[must_use]
    pub fn on_progress(mut self, f: impl FnMut(&Progress) + Send + 'static) -> Self {
        self.progress = Some(Box::new(f));
        self
    }

    /// The same options with a wire log.
    #[must_use]
    pub fn wire_log(mut self, f: impl FnMut(Direction, &[u8]) + Send + 'static) -> Self {
        self.wire_log = Some(Box::new(f));
        self
    }
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("grace_period", &self.grace_period)
            .field("progress", &self.progress.is_some())
            .field("wire_log", &self.wire_log.is_some())
            .finish_non_exhaustive()
    }
}

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
#[derive(Debug)]
pub(crate) struct Driver {
    pub(crate) link: Link,
    pub(crate) options: Options,
    pub(crate) details: Option<ServerDetails>,
    completed: HashMap<CallId, Result<CallOutput, CallError>>,
    pub(crate) notifications: VecDeque<Notification>,
    pub(crate) dropped_notifications: u64,
    pub(crate) peer_errors: VecDeque<PeerError>,
    /// Tools left out of `tools/list` over HTTP, with the reason (latest per tool).
    pub(crate) excluded_tools: Vec<(String, String)>,
    pub(crate) closed: Option<CloseReason>,
}

impl Driver {
    /// Spawns the server and creates the machine; nothing is exchanged yet.
    pub(crate) fn start(
        command: StdioCommand,
        config: ClientConfig,
        options: Options,
    ) -> Result<Driver, Error> {
        let link = StdioLink::start(command, config)?;
        Ok(Self::with_link(Link::Stdio(Box::new(link)), options))
    }

    /// A driver over `link`; nothing is exchanged yet.
    pub(crate) fn with_link(link: Link, options: Options) -> Driver {
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
            Link::Stdio(l) => l.machine.call(Instant::now(), request)?,
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
        let now = Instant::now();
        let deadline = match &self.link {
            Link::Stdio(l) => l.machine.poll_timeout(),
            Link::Http(l) => l.poll_timeout(),
        };
        let timeout = deadline.map(|t| t.saturating_duration_since(now));
        let log = &mut self.options.wire_log;
        let alive = match &mut self.link {
            Link::Stdio(l) => l.wait(timeout, log),
            Link::Http(l) => l.wait(timeout, log),
        };
        if !alive {
            // Nothing can happen any more: no transport and no timer.
            let reason = match &mut self.link {
                Link::Stdio(l) => {
                    l.machine.close(Instant::now());
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
            Link::Http(l) => l.flush(log),
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
                Event::Progress {
                    call,
                    progress,
                    total,
                    message,
                } => {
                    if let Some(f) = &mut self.options.progress {
                        f(&Progress {
                            call,
                            progress,
                            total,
                            message,
                        });
                    }
                }
                Event::InputRequested { input, request, .. } => {
                    let answer = self.options.input_handler.answer(&request);
                    // The only refusal is for an input already voided: nothing to do.
                    let _ = match &mut self.link {
                        Link::Stdio(l) => l.machine.respond(Instant::now(), input, answer),
                        Link::Http(l) => l.respond(input, answer),
                    };
                    self.flush();
                }
                Event::Notification(n) => {
                    if self.notifications.len() >= MAX_NOTIFICATIONS {
                        self.notifications.pop_front();
                        self.dropped_notifications += 1;
                    }
                    self.notifications.push_back(n);
                }
                Event::NotificationsDropped { count } => self.dropped_notifications += count,
                Event::PeerError(e) => {
                    if self.peer_errors.len() >= MAX_PEER_ERRORS {
                        self.peer_errors.pop_front();
                    }
                    self.peer_errors.push_back(e);
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
            Link::Stdio(l) => l.tail.text(),
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
                l.release(grace, &mut self.options.wire_log);
                Shutdown {
                    status: None,
                    killed: false,
                }
            }
        }
    }

    /// Closes the connection and the transport. Idempotent; never hangs past the grace
    /// period plus a short wait for the IO threads.
    pub(crate) fn close(&mut self) -> Shutdown {
        if self.closed.is_none() {
            match &mut self.link {
                Link::Stdio(l) => l.machine.close(Instant::now()),
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

impl Drop for Driver {
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
    tail: Arc<StderrTail>,
    /// Stdout of the current process has ended.
    eof: bool,
    out: Vec<u8>,
    /// A partial received line, for the wire log only.
    log_line: Vec<u8>,
    restarts: u32,
    shutdown: Option<Shutdown>,
}

impl StdioLink {
    fn start(command: StdioCommand, config: ClientConfig) -> Result<StdioLink, Error> {
        let tail = Arc::new(StderrTail::new(command.stderr_bytes()));
        let process = Process::spawn(&command, &tail)?;
        Ok(StdioLink {
            machine: proto::Client::new(config, Instant::now()),
            command,
            process: Some(process),
            tail,
            eof: false,
            out: Vec::new(),
            log_line: Vec::new(),
            restarts: 0,
            shutdown: None,
        })
    }

    /// Hands everything the machine wants to send to the writer thread.
    fn flush(&mut self, wire_log: &mut Option<WireLog>) {
        self.out.clear();
        if self.machine.poll_transmit(Instant::now(), &mut self.out) == 0 {
            return;
        }
        if let Some(log) = wire_log {
            for line in self.out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                log(Direction::Sent, line);
            }
        }
        if let Some(p) = &self.process {
            p.send(std::mem::take(&mut self.out));
        }
    }

    /// Waits for one thing until `timeout` and feeds it to the machine. False when
    /// nothing can arrive any more (stdout ended and no timer).
    fn wait(&mut self, timeout: Option<Duration>, wire_log: &mut Option<WireLog>) -> bool {
        let received = match (&self.process, timeout) {
            (_, Some(Duration::ZERO)) => Received::Timeout,
            (Some(p), _) if !self.eof => p.recv(timeout),
            (_, Some(t)) => {
                thread::sleep(t);
                Received::Timeout
            }
            (_, None) => return false,
        };
        let now = Instant::now();
        match received {
            Received::Data(data) => {
                self.log_received(&data, wire_log);
                self.machine.handle_input(now, &data);
            }
            Received::Eof => {
                self.eof = true;
                self.flush_log_line(wire_log);
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
                self.machine.close(Instant::now());
                closed.get_or_insert(CloseReason::Local);
                return Err(e);
            }
        };
        self.process = Some(process);
        self.eof = false;
        self.log_line.clear();
        self.restarts += 1;
        self.machine.handle_transport_restarted(Instant::now())?;
        Ok(())
    }

    fn log_received(&mut self, data: &[u8], wire_log: &mut Option<WireLog>) {
        let Some(log) = wire_log else {
            return;
        };
        let mut rest = data;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            self.log_line.extend_from_slice(&rest[..i]);
            let line = self.log_line.strip_suffix(b"\r").unwrap_or(&self.log_line);
            if !line.is_empty() {
                log(Direction::Received, line);
            }
            self.log_line.clear();
            rest = &rest[i + 1..];
        }
        self.log_line.extend_from_slice(rest);
        if self.log_line.len() > MAX_LOG_LINE {
            log(Direction::Received, &self.log_line);
            self.log_line.clear();
        }
    }

    fn flush_log_line(&mut self, wire_log: &mut Option<WireLog>) {
        if let Some(log) = wire_log
            && !self.log_line.is_empty()
        {
            log(Direction::Received, &self.log_line);
        }
        self.log_line.clear();
    }

    /// Stops the server process (bounded by the grace period) and remembers how it ended.
    fn release_process(&mut self, grace: Duration) -> Shutdown {
        if let Some(mut p) = self.process.take() {
            self.shutdown = Some(p.shutdown(grace));
        }
        self.shutdown.unwrap_or(Shutdown {
            status: None,
            killed: false,
        })
    }
}
