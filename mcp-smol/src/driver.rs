//! The `Driver`: the one future that owns the server process and all of its IO.
//!
//! # Theory of operation
//!
//! The driver runs the `mcp_proto` client machine the way `mcp_proto`'s crate docs
//! describe: after every input (bytes from stdout, end of stdout, a timer, a command from
//! a [`Client`](crate::Client) handle) it drains the machine's events and outgoing bytes.
//! Its main phase is one hand-written `poll` step ([`Run::poll_step`]) that polls every
//! source until each is `Pending` (so each has registered the waker), instead of racing
//! read futures against each other: no read is ever half-done and lost, and a child that
//! stops reading its stdin can never stop us reading its stdout.
//!
//! Two phases need real `async` waiting and run between poll steps: restarting the
//! server after the era probe cost the process ([`Event::RestartTransport`]), and
//! shutting down (close stdin, wait up to the grace period while still draining stdout
//! and stderr, then kill and reap).

use std::collections::HashMap;
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_io::Timer;
use futures_lite::{AsyncRead, AsyncWrite, Stream, future};
use mcp_proto::client::{
    CallId, CallOutput, Client as Machine, ClientConfig, CloseReason, ConnectionState, Event,
};
use mcp_proto::jsonrpc::Notification;
use mcp_proto::model::ServerDetails;
use mcp_proto::stdio;
use smol::channel::{Receiver, Sender, TrySendError};
use smol::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use crate::client::{Command, Shared};
use crate::options::{Direction, Options, Progress, Shutdown, WireLog};
use crate::{Error, StdioCommand};

/// Poll-step rounds before the driver yields to its executor even if there is more to do.
const BUDGET: usize = 64;
/// Bytes read from stdout or stderr at a time.
const READ_CHUNK: usize = 16 * 1024;
/// After the server exited: how long to keep reading what it left in its pipes.
const FINAL_DRAIN: Duration = Duration::from_millis(200);
/// Longest received line shown whole in the wire log; longer lines are shown in pieces.
const MAX_LOG_LINE: usize = 64 * 1024;

/// The future that does all the IO of one connection: reads the server's stdout and
/// stderr, writes its stdin, runs the protocol timers, serves the [`Client`](crate::Client)
/// handles and answers input requests.
///
/// Run it on any executor (`smol::spawn`, an `Executor`, a `LocalExecutor`, another
/// runtime's spawn) or join it with your own future (`futures_lite::future::zip`). The
/// library never spawns a task or a thread of its own (async-io and async-process keep
/// their usual helper threads: the fallback reactor driver and the child reaper).
///
/// It resolves when the connection is over and the server process has exited (or was
/// killed after the grace period) and been reaped: `Ok(())` when the client closed it
/// (every handle dropped, or [`Client::close`](crate::Client::close)), `Err` with the
/// reason otherwise (the server exited, negotiation failed, a restart could not spawn).
/// Dropping it early kills the server at once.
#[must_use = "the Driver does all the IO: run it on an executor or await it alongside your code"]
pub struct Driver {
    inner: Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>,
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver").finish_non_exhaustive()
    }
}

impl Future for Driver {
    type Output = Result<(), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl Driver {
    pub(crate) fn new(
        command: StdioCommand,
        config: ClientConfig,
        options: Options,
        child: Child,
        channels: Channels,
        shared: Arc<Shared>,
    ) -> Driver {
        let inner = async move {
            // The machine is created on first poll so that the probe timeout does not run
            // while the driver waits to be spawned.
            let run = Run::new(command, config, options, child, channels, shared);
            run.run().await
        };
        Driver {
            inner: Box::pin(inner),
        }
    }
}

/// The channels between the handles and the driver.
pub(crate) struct Channels {
    pub(crate) commands: Receiver<Command>,
    /// The sender, and a receiver to drop the oldest notification when the queue is full.
    pub(crate) notifications: (Sender<Notification>, Receiver<Notification>),
    /// Dropped when the driver finishes.
    pub(crate) done: Sender<()>,
}

/// The server process and its pipes; `None` once closed or at end of stream.
struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
}

impl Process {
    fn new(mut child: Child) -> Process {
        Process {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            child,
        }
    }
}

enum Step {
    Restart,
    Closed(CloseReason),
}

struct PendingCall {
    key: u64,
    reply: Sender<Result<CallOutput, Error>>,
}

struct Run {
    machine: Machine,
    command: StdioCommand,
    options: Options,
    /// Boxed: a `Receiver` is not `Unpin`.
    commands: Pin<Box<Receiver<Command>>>,
    /// Every handle is gone (the channel reported its end).
    released: bool,
    notifications: (Sender<Notification>, Receiver<Notification>),
    _done: Sender<()>,
    shared: Arc<Shared>,
    process: Process,
    timer: Timer,
    timer_at: Option<Instant>,
    /// Framed bytes for stdin; `out[written..]` is still to write.
    out: Vec<u8>,
    written: usize,
    buf: Vec<u8>,
    /// The received line being assembled for the wire log.
    log_line: Vec<u8>,
    calls: HashMap<CallId, PendingCall>,
    keys: HashMap<u64, CallId>,
    connect_waiters: Vec<Sender<Result<ServerDetails, Error>>>,
}

impl Run {
    fn new(
        command: StdioCommand,
        config: ClientConfig,
        options: Options,
        child: Child,
        channels: Channels,
        shared: Arc<Shared>,
    ) -> Run {
        Run {
            machine: Machine::new(config, Instant::now()),
            command,
            options,
            commands: Box::pin(channels.commands),
            released: false,
            notifications: channels.notifications,
            _done: channels.done,
            shared,
            process: Process::new(child),
            timer: Timer::never(),
            timer_at: None,
            out: Vec::new(),
            written: 0,
            buf: vec![0; READ_CHUNK],
            log_line: Vec::new(),
            calls: HashMap::new(),
            keys: HashMap::new(),
            connect_waiters: Vec::new(),
        }
    }

    async fn run(mut self) -> Result<(), Error> {
        let outcome = loop {
            match poll_fn(|cx| self.poll_step(cx)).await {
                Step::Restart => {
                    if let Err(e) = self.restart().await {
                        break Err(e);
                    }
                }
                Step::Closed(CloseReason::Local) => break Ok(()),
                Step::Closed(reason) => break Err(Error::Closed(reason)),
            }
        };
        let ended = match &outcome {
            Ok(()) => Error::Closed(CloseReason::Local),
            Err(e) => e.clone(),
        };
        self.shutdown(ended).await;
        outcome
    }

    /// One pass of the main phase: every source polled until `Pending`, every output
    /// drained. Ready when the async phases (restart, shutdown) must take over.
    fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<Step> {
        for _ in 0..BUDGET {
            let now = Instant::now();
            let mut progress = false;

            // Commands from the handles.
            for _ in 0..BUDGET {
                match self.commands.as_mut().poll_next(cx) {
                    Poll::Ready(Some(command)) => {
                        self.on_command(now, command);
                        progress = true;
                    }
                    Poll::Ready(None) => {
                        if !self.released {
                            self.released = true;
                            self.machine.close(now);
                            progress = true;
                        }
                        break;
                    }
                    Poll::Pending => break,
                }
            }

            // The server's stdout.
            if let Some(stdout) = &mut self.process.stdout {
                match Pin::new(stdout).poll_read(cx, &mut self.buf) {
                    Poll::Ready(Ok(n)) if n > 0 => {
                        if let Some(log) = &mut self.options.wire_log {
                            log_received(log, &mut self.log_line, &self.buf[..n]);
                        }
                        self.machine.handle_input(now, &self.buf[..n]);
                        progress = true;
                    }
                    // End of output, or a broken pipe: the same thing to the protocol.
                    Poll::Ready(_) => {
                        self.process.stdout = None;
                        if let Some(log) = &mut self.options.wire_log
                            && !self.log_line.is_empty()
                        {
                            log(Direction::Received, &self.log_line);
                            self.log_line.clear();
                        }
                        self.machine.handle_eof(now);
                        progress = true;
                    }
                    Poll::Pending => {}
                }
            }

            // The server's stderr, kept for the user, never parsed.
            if poll_stderr(&mut self.process.stderr, &mut self.buf, &self.shared, cx) {
                progress = true;
            }

            // Deadlines.
            if self.machine.poll_timeout().is_some_and(|d| d <= now) {
                self.machine.handle_timeout(now);
                progress = true;
            }

            // Events.
            while let Some(event) = self.machine.poll_event() {
                progress = true;
                if let Some(step) = self.on_event(now, event) {
                    return Poll::Ready(step);
                }
            }

            // Bytes for the server's stdin.
            if self.poll_write(cx) {
                progress = true;
            }

            // The next deadline.
            match self.machine.poll_timeout() {
                Some(deadline) if deadline > now => {
                    if self.timer_at != Some(deadline) {
                        self.timer.set_at(deadline);
                        self.timer_at = Some(deadline);
                    }
                    if Pin::new(&mut self.timer).poll(cx).is_ready() {
                        self.timer_at = None;
                        progress = true;
                    }
                }
                Some(_) => progress = true,
                None => {}
            }

            if !progress {
                return Poll::Pending;
            }
        }
        // Plenty done in one go: let other tasks run, and come back at once.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Moves the machine's output to stdin as far as the pipe takes it. True on progress.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> bool {
        if self.written == self.out.len() {
            self.out.clear();
            self.written = 0;
        }
        while let Some(message) = self.machine.poll_message() {
            if let Some(log) = &mut self.options.wire_log {
                log(Direction::Sent, &message);
            }
            stdio::frame(&mut self.out, &message);
        }
        let Some(stdin) = &mut self.process.stdin else {
            // Nobody to write to: the end of stdout will close the connection.
            self.out.clear();
            self.written = 0;
            return false;
        };
        let mut progress = false;
        while self.written < self.out.len() {
            match Pin::new(&mut *stdin).poll_write(cx, &self.out[self.written..]) {
                Poll::Ready(Ok(n)) if n > 0 => {
                    self.written += n;
                    progress = true;
                }
                Poll::Ready(_) => {
                    // The server closed its stdin (usually: it exited). Stop writing; its
                    // stdout ends soon and the machine learns it from there.
                    self.process.stdin = None;
                    self.out.clear();
                    self.written = 0;
                    return true;
                }
                Poll::Pending => break,
            }
        }
        progress
    }

    fn on_command(&mut self, now: Instant, command: Command) {
        match command {
            Command::Call {
                key,
                request,
                reply,
            } => match self.machine.call(now, request) {
                Ok(call) => {
                    self.calls.insert(call, PendingCall { key, reply });
                    self.keys.insert(key, call);
                }
                Err(e) => {
                    let _ = reply.try_send(Err(Error::from(e)));
                }
            },
            Command::Cancel { key } => {
                if let Some(call) = self.keys.remove(&key) {
                    let _ = self.machine.cancel(now, call);
                }
            }
            Command::Connected(reply) => match self.machine.state() {
                ConnectionState::Ready(..) => {
                    let details = self.machine.server().cloned();
                    let _ = reply.try_send(details.ok_or(Error::DriverGone));
                }
                _ => self.connect_waiters.push(reply),
            },
            Command::Configure(change) => change(&mut self.options),
            Command::Close => self.machine.close(now),
        }
    }

    fn on_event(&mut self, now: Instant, event: Event) -> Option<Step> {
        match event {
            Event::Connected(details) => {
                self.shared.lock().server = Some((*details).clone());
                for waiter in self.connect_waiters.drain(..) {
                    let _ = waiter.try_send(Ok((*details).clone()));
                }
            }
            Event::RestartTransport => return Some(Step::Restart),
            Event::CallCompleted { call, outcome } => {
                if let Some(pending) = self.calls.remove(&call) {
                    self.keys.remove(&pending.key);
                    // A dropped receiver means the caller stopped waiting: nothing to do.
                    let _ = pending.reply.try_send(outcome.map_err(Error::from));
                }
            }
            Event::Progress {
                call,
                progress,
                total,
                message,
            } => {
                if let Some(handler) = &mut self.options.progress {
                    handler(&Progress {
                        call,
                        progress,
                        total,
                        message,
                    });
                }
            }
            Event::InputRequested { input, request, .. } => {
                let answer = self.options.input_handler.answer(&request);
                // Fails only if the input was voided meanwhile, which cannot happen
                // between two lines of this function.
                let _ = self.machine.respond(now, input, answer);
            }
            Event::Notification(n) => self.push_notification(n),
            Event::NotificationsDropped { count } => {
                self.shared.lock().dropped_notifications += count;
            }
            Event::PeerError(e) => self.shared.lock().push_peer_error(e),
            Event::Closed { reason } => {
                let mut shared = self.shared.lock();
                shared.close_reason = Some(reason.clone());
                shared.ended = Some(Error::Closed(reason.clone()));
                return Some(Step::Closed(reason));
            }
            // Answered on the spot above, so nothing is ever waiting to be voided.
            _ => {}
        }
        None
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

    /// The server exited during the era probe: start a fresh one for `initialize`.
    async fn restart(&mut self) -> Result<(), Error> {
        self.out.clear();
        self.written = 0;
        self.log_line.clear();
        self.process.stdin = None;
        self.process.stdout = None;
        // Keep what the old process said on its way out.
        {
            let process = &mut self.process;
            let mut none = None;
            let drain = drain(&mut none, &mut process.stderr, &mut self.buf, &self.shared);
            future::or(drain, async {
                Timer::after(FINAL_DRAIN).await;
            })
            .await;
        }
        self.process.stderr = None;
        let _ = self.process.child.kill();
        let _ = self.process.child.status().await;
        let child = self.command.spawn()?;
        {
            let mut shared = self.shared.lock();
            shared.pid = Some(child.id());
            shared.restarts += 1;
        }
        self.process = Process::new(child);
        let _ = self.machine.handle_transport_restarted(Instant::now());
        Ok(())
    }

    /// Ends everything: closes stdin, gives the server the grace period, kills it if
    /// needed, reaps it, and fails whatever still waits with `ended`.
    async fn shutdown(&mut self, ended: Error) {
        self.shared
            .lock()
            .ended
            .get_or_insert_with(|| ended.clone());
        // No new commands; the ones already queued get the final error below.
        self.commands.close();

        // EOF on the server's stdin asks it to exit.
        self.process.stdin = None;
        let grace = self.options.grace_period;
        let status = self.process.child.status();
        let exited = {
            let process = &mut self.process;
            let drain = async {
                drain(
                    &mut process.stdout,
                    &mut process.stderr,
                    &mut self.buf,
                    &self.shared,
                )
                .await;
                future::pending().await
            };
            let wait = future::or(async { status.await.ok() }, drain);
            future::or(wait, async {
                Timer::after(grace).await;
                None
            })
            .await
        };
        let shutdown = match exited {
            Some(status) => Shutdown {
                status: Some(status),
                killed: false,
            },
            None => {
                let _ = self.process.child.kill();
                Shutdown {
                    status: self.process.child.status().await.ok(),
                    killed: true,
                }
            }
        };
        // What the server wrote last is often the most useful part of its stderr.
        {
            let process = &mut self.process;
            let drain = drain(
                &mut process.stdout,
                &mut process.stderr,
                &mut self.buf,
                &self.shared,
            );
            future::or(drain, async {
                Timer::after(FINAL_DRAIN).await;
            })
            .await;
        }
        self.process.stdout = None;
        self.process.stderr = None;

        // Whatever still waits learns the end now, with the stderr tail complete.
        let connect_error = {
            let mut shared = self.shared.lock();
            shared.pid = None;
            shared.shutdown = Some(shutdown);
            match (&shared.server, &ended) {
                (None, Error::Closed(reason)) if *reason != CloseReason::Local => Error::Connect {
                    reason: reason.clone(),
                    stderr: shared.stderr.text(),
                },
                _ => ended.clone(),
            }
        };
        if matches!(connect_error, Error::Connect { .. }) {
            self.shared.lock().ended = Some(connect_error.clone());
        }
        while let Ok(command) = self.commands.try_recv() {
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
        self.keys.clear();
        for waiter in self.connect_waiters.drain(..) {
            let _ = waiter.try_send(Err(connect_error.clone()));
        }
    }
}

/// Feeds received bytes to the wire log, one line at a time (long lines in pieces).
fn log_received(log: &mut WireLog, line: &mut Vec<u8>, mut data: &[u8]) {
    while !data.is_empty() {
        let (chunk, rest, end) = match data.iter().position(|&b| b == b'\n') {
            Some(i) => (&data[..i], &data[i + 1..], true),
            None => (data, &[][..], false),
        };
        data = rest;
        let room = MAX_LOG_LINE.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let mut tail = &chunk[chunk.len().min(room)..];
        while line.len() >= MAX_LOG_LINE {
            log(Direction::Received, line);
            line.clear();
            let take = tail.len().min(MAX_LOG_LINE);
            line.extend_from_slice(&tail[..take]);
            tail = &tail[take..];
        }
        if end {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            log(Direction::Received, line);
            line.clear();
        }
    }
}

/// Reads stderr into the shared buffer until `Pending`. True on progress.
fn poll_stderr(
    stderr: &mut Option<ChildStderr>,
    buf: &mut [u8],
    shared: &Shared,
    cx: &mut Context<'_>,
) -> bool {
    let mut progress = false;
    for _ in 0..BUDGET {
        let Some(pipe) = stderr else {
            break;
        };
        match Pin::new(pipe).poll_read(cx, buf) {
            Poll::Ready(Ok(n)) if n > 0 => {
                shared.lock().stderr.push(&buf[..n]);
                progress = true;
            }
            Poll::Ready(_) => {
                *stderr = None;
                progress = true;
            }
            Poll::Pending => break,
        }
    }
    progress
}

/// Reads (and discards) stdout and captures stderr until both end.
async fn drain(
    stdout: &mut Option<ChildStdout>,
    stderr: &mut Option<ChildStderr>,
    buf: &mut [u8],
    shared: &Shared,
) {
    poll_fn(|cx| {
        for _ in 0..BUDGET {
            let mut progress = poll_stderr(stderr, buf, shared, cx);
            if let Some(pipe) = stdout {
                match Pin::new(pipe).poll_read(cx, buf) {
                    Poll::Ready(Ok(n)) if n > 0 => progress = true,
                    Poll::Ready(_) => {
                        *stdout = None;
                        progress = true;
                    }
                    Poll::Pending => {}
                }
            }
            if stdout.is_none() && stderr.is_none() {
                return Poll::Ready(());
            }
            if !progress {
                return Poll::Pending;
            }
        }
        // A server that floods its pipes must not keep the grace timer from running.
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn the_driver_is_send() {
        fn send<T: Send + 'static>() {}
        send::<Driver>();
    }

    #[test]
    fn wire_log_splits_lines_across_chunks() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let mut log: WireLog = Box::new(move |dir, line| {
            assert_eq!(dir, Direction::Received);
            sink.lock()
                .unwrap()
                .push(String::from_utf8_lossy(line).into_owned());
        });
        let mut line = Vec::new();
        log_received(&mut log, &mut line, b"{\"a\":1}\n{\"b\"");
        log_received(&mut log, &mut line, b":2}\r\n");
        log_received(&mut log, &mut line, b"\n");
        assert_eq!(*seen.lock().unwrap(), ["{\"a\":1}", "{\"b\":2}", ""]);
        let long = vec![b'x'; MAX_LOG_LINE * 2 + 5];
        log_received(&mut log, &mut line, &long);
        assert_eq!(seen.lock().unwrap().len(), 5);
        assert_eq!(line.len(), 5);
    }
}
