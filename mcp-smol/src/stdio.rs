//! The stdio transport: a server child process, its stdin, stdout and stderr.
//!
//! # Theory of operation
//!
//! The main phase is [`Core::poll_step`] with this transport's input (stdout into the
//! machine, stderr into the bounded tail) and output (the machine's messages, framed, to
//! stdin). Two phases need real `async` waiting and run between poll steps: restarting
//! the server after the era probe cost the process ([`Step::Restart`]), and shutting down
//! (close stdin, wait up to the grace period while still draining stdout and stderr, then
//! kill and reap).

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use mcp_host::clock;
use mcp_proto::Instant;

use async_io::Timer;
use async_process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio as Pipe};
use futures_lite::{AsyncRead, AsyncWrite, future};
use mcp_host::wire_log::LineLog;
use mcp_host::{Direction, Flavour, Shutdown, StdioCommand};
use mcp_proto::client::{Client as Machine, ClientConfig, CloseReason};
use mcp_proto::stdio;

use crate::Error;
use crate::client::Shared;
use crate::core::{BUDGET, Core, Step, Transport};

/// Bytes read from stdout or stderr at a time.
const READ_CHUNK: usize = 16 * 1024;
/// After the server exited: how long to keep reading what it left in its pipes.
const FINAL_DRAIN: Duration = Duration::from_millis(200);

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

/// The stdio side of a driver.
pub(crate) struct Stdio {
    machine: Machine,
    command: StdioCommand,
    process: Process,
    /// Framed bytes for stdin; `out[written..]` is still to write.
    out: Vec<u8>,
    written: usize,
    buf: Vec<u8>,
    /// The received lines, for the wire log.
    log: LineLog,
}

impl<F: Flavour> Transport<F> for Stdio {
    type Machine = Machine;

    fn machine(&mut self) -> &mut Machine {
        &mut self.machine
    }

    fn poll_input(&mut self, core: &mut Core<F>, now: Instant, cx: &mut Context<'_>) -> bool {
        let mut progress = false;
        // The server's stdout.
        if let Some(stdout) = &mut self.process.stdout {
            match Pin::new(stdout).poll_read(cx, &mut self.buf) {
                Poll::Ready(Ok(n)) if n > 0 => {
                    let data = &self.buf[..n];
                    self.log
                        .feed(&mut core.options.wire_log, Direction::Received, data);
                    self.machine.handle_input(now, data);
                    progress = true;
                }
                // End of output, or a broken pipe: the same thing to the protocol.
                Poll::Ready(_) => {
                    self.process.stdout = None;
                    self.log
                        .finish(&mut core.options.wire_log, Direction::Received);
                    self.machine.handle_eof(now);
                    progress = true;
                }
                Poll::Pending => {}
            }
        }
        // The server's stderr, kept for the user, never parsed.
        if poll_stderr(&mut self.process.stderr, &mut self.buf, &core.shared, cx) {
            progress = true;
        }
        progress
    }

    /// Moves the machine's output to stdin as far as the pipe takes it.
    fn poll_output(&mut self, core: &mut Core<F>, _now: Instant, cx: &mut Context<'_>) -> bool {
        if self.written == self.out.len() {
            self.out.clear();
            self.written = 0;
        }
        while let Some(message) = self.machine.poll_message() {
            LineLog::whole(&mut core.options.wire_log, Direction::Sent, &message);
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
}

impl Stdio {
    /// The machine is created here, on the driver's first poll, so that the probe
    /// timeout does not run while the driver waits to be spawned.
    pub(crate) fn new(command: StdioCommand, config: ClientConfig, child: Child) -> Stdio {
        Stdio {
            machine: Machine::new(config, clock::now()),
            command,
            process: Process::new(child),
            out: Vec::new(),
            written: 0,
            buf: vec![0; READ_CHUNK],
            log: LineLog::new(),
        }
    }

    /// The whole life of the connection.
    pub(crate) async fn run<F: Flavour>(mut self, mut core: Core<F>) -> Result<(), Error> {
        let outcome = loop {
            match poll_fn(|cx| core.poll_step(&mut self, cx)).await {
                Step::Restart => {
                    if let Err(e) = self.restart(&core.shared).await {
                        break Err(e);
                    }
                }
                // Only the HTTP driver follows an era plan.
                Step::Reprobe => {}
                Step::Closed(CloseReason::Local) => break Ok(()),
                Step::Closed(reason) => break Err(Error::Closed(reason)),
            }
        };
        let ended = match &outcome {
            Ok(()) => Error::Closed(CloseReason::Local),
            Err(e) => e.clone(),
        };
        self.shutdown(&mut core, ended).await;
        outcome
    }

    /// The server exited during the era probe: start a fresh one for `initialize`.
    async fn restart(&mut self, shared: &Shared) -> Result<(), Error> {
        self.out.clear();
        self.written = 0;
        self.log.clear();
        self.process.stdin = None;
        self.process.stdout = None;
        // Keep what the old process said on its way out.
        {
            let process = &mut self.process;
            let mut none = None;
            let drain = drain(&mut none, &mut process.stderr, &mut self.buf, shared);
            future::or(drain, async {
                Timer::after(FINAL_DRAIN).await;
            })
            .await;
        }
        self.process.stderr = None;
        let _ = self.process.child.kill();
        let _ = self.process.child.status().await;
        let child = spawn(&self.command)?;
        {
            let mut shared = shared.lock();
            shared.pid = Some(child.id());
            shared.restarts += 1;
        }
        self.process = Process::new(child);
        let _ = self.machine.handle_transport_restarted(clock::now());
        Ok(())
    }

    /// Ends everything: closes stdin, gives the server the grace period, kills it if
    /// needed, reaps it, and fails whatever still waits with `ended`.
    async fn shutdown<F: Flavour>(&mut self, core: &mut Core<F>, ended: Error) {
        core.shared
            .lock()
            .ended
            .get_or_insert_with(|| ended.clone());
        core.stop_commands();

        // EOF on the server's stdin asks it to exit.
        self.process.stdin = None;
        let grace = core.options.grace_period;
        let shared = &*core.shared;
        let status = self.process.child.status();
        let exited = {
            let process = &mut self.process;
            let drain = async {
                drain(
                    &mut process.stdout,
                    &mut process.stderr,
                    &mut self.buf,
                    shared,
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
            Some(status) => Shutdown::new(Some(status), false),
            None => {
                let _ = self.process.child.kill();
                Shutdown::new(self.process.child.status().await.ok(), true)
            }
        };
        // What the server wrote last is often the most useful part of its stderr.
        {
            let process = &mut self.process;
            let drain = drain(
                &mut process.stdout,
                &mut process.stderr,
                &mut self.buf,
                shared,
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
            let mut shared = core.shared.lock();
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
        core.finish(&ended, &connect_error);
    }
}

/// Starts the server: `command`'s [`std::process::Command`] (the resolved program, the
/// isolated environment) as an async-process child, with stdin, stdout and stderr piped
/// (set again: the conversion resets them), killed if its handle is dropped (the driver
/// normally closes stdin and waits first).
pub(crate) fn spawn(command: &StdioCommand) -> Result<Child, Error> {
    let spawn_error = |source: io::Error| Error::Spawn {
        program: command.program().to_string_lossy().into_owned(),
        source: Arc::new(source),
    };
    let mut child = Command::from(command.to_command().map_err(spawn_error)?);
    child
        .stdin(Pipe::piped())
        .stdout(Pipe::piped())
        .stderr(Pipe::piped())
        .kill_on_drop(true);
    child.spawn().map_err(spawn_error)
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
