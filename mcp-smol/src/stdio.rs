//! The stdio server process: starting it, capturing its stderr, restarting it when the
//! machine asks (`Transmit::Respawn`), and ending it (`Transmit::Close`): stdin closed,
//! then the steps of [`mcp_io::ending::Escalation`] within the grace period (`SIGTERM`
//! to its process group half-way, `SIGKILL` at the end), reaping, and a last `SIGKILL`
//! to the group for what the server started. The group is signalled by
//! [`mcp_io::ending::signal_group`] (it waits for `/bin/sh`) on the `blocking` pool.
//!
//! Its stdin and stdout are the machine's channel ([`Wire::Pipes`](crate::conn::Wire));
//! what is here is the rest of the process's life, as futures the driver polls. Its exit
//! is one of them ([`Change::Exited`]): the machine is told, and ends a stdout that a
//! process the server started keeps open.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_io::Timer;
use async_process::{Child, ChildStderr, ChildStdout, Command, Stdio as Pipe};
use futures_lite::{AsyncRead, future};
use mcp_io::ending::{self, Escalation, Signal, Step};
use mcp_io::{Shutdown, StdioCommand, clock};

use crate::Error;
use crate::conn::Wire;
use mcp_io::Shared;

/// After the server exited: how long to keep reading what it left in its pipes.
const FINAL_DRAIN: Duration = Duration::from_millis(200);
/// Reads of stderr in one go before the driver moves on.
const BUDGET: usize = 64;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A server just started, and its stdout, read by the driver.
pub(crate) type Spawned = (Child, Stdout);

/// The server process, as far as the driver is concerned.
// One per driver; on Windows, larger process handles make `Running` outgrow the others.
#[cfg_attr(windows, allow(clippy::large_enum_variant))]
pub(crate) enum Process {
    /// None: an HTTP driver, or the process is over.
    None,
    Running {
        child: Child,
        group: Group,
        stderr: Option<ChildStderr>,
        /// Resolves when the process exits (its stdout may outlive it); `None` once it
        /// did.
        exit: Option<BoxFuture<()>>,
    },
    /// The old process is being reaped and a new one started.
    Restarting(BoxFuture<Result<Spawned, Error>>),
    /// Stdin is closed; the process gets its grace period (`SIGTERM` half-way), then is
    /// killed, and reaped.
    Ending(BoxFuture<Shutdown>),
}

/// What changed in a poll of the process.
pub(crate) enum Change {
    Nothing,
    Progress,
    /// A fresh process runs (its pipes are the new channel), or could not be started.
    Restarted(Result<Wire, Error>),
    /// The process was reaped.
    Ended,
    /// The process exited, and the machine is to be told (its stdout may still be open,
    /// held by a process it started).
    Exited,
}

impl Process {
    /// The process that was just started, and its channel.
    pub(crate) fn start((mut child, stdout): Spawned, shared: &Shared) -> (Process, Wire) {
        let wire = Wire::Pipes {
            stdin: child.stdin.take(),
            stdout,
        };
        shared.lock().pid = Some(child.id());
        let stderr = child.stderr.take();
        let group = Group(Some(child.id()));
        let status = child.status();
        let exit: BoxFuture<()> = Box::pin(async move {
            let _ = status.await;
        });
        (
            Process::Running {
                child,
                group,
                stderr,
                exit: Some(exit),
            },
            wire,
        )
    }

    /// Whether nothing of a process is left.
    pub(crate) fn is_over(&self) -> bool {
        matches!(self, Process::None)
    }

    /// The machine asked for a fresh process: the old one is reaped (its last stderr
    /// kept) and `command` started again.
    pub(crate) fn restart(&mut self, command: &StdioCommand, shared: &Arc<Shared>) {
        if let Process::Running {
            child,
            group,
            mut stderr,
            ..
        } = std::mem::replace(self, Process::None)
        {
            let (command, shared) = (command.clone(), shared.clone());
            *self = Process::Restarting(Box::pin(async move {
                let mut stdout = None;
                future::or(drain(&mut stdout, &mut stderr, &shared), pause(FINAL_DRAIN)).await;
                // Its stdout has ended already: no grace period.
                let ended = escalate(
                    child,
                    group,
                    Duration::ZERO,
                    &mut stdout,
                    &mut stderr,
                    &shared,
                )
                .await;
                shared.lock().restarting(ended);
                let spawned = spawn(&command)?;
                shared.lock().restarts += 1;
                Ok(spawned)
            }));
        }
    }

    /// The machine is done with the channel: stdin is closed (dropped with `wire`),
    /// stdout and stderr are drained while the server has `grace` to exit.
    pub(crate) fn end(&mut self, wire: Option<Wire>, grace: Duration, shared: &Arc<Shared>) {
        let Process::Running {
            child,
            group,
            mut stderr,
            ..
        } = std::mem::replace(self, Process::None)
        else {
            return;
        };
        let mut stdout = match wire {
            Some(Wire::Pipes { stdout, .. }) => Some(stdout),
            _ => None,
        };
        let shared = shared.clone();
        *self = Process::Ending(Box::pin(async move {
            let shutdown = escalate(child, group, grace, &mut stdout, &mut stderr, &shared).await;
            // What the server wrote last is often the most useful part of its stderr.
            future::or(drain(&mut stdout, &mut stderr, &shared), pause(FINAL_DRAIN)).await;
            shutdown
        }));
    }

    pub(crate) fn poll(
        &mut self,
        shared: &Arc<Shared>,
        buf: &mut [u8],
        cx: &mut Context<'_>,
    ) -> Change {
        match self {
            Process::None => Change::Nothing,
            Process::Running { stderr, exit, .. } => {
                if let Some(exited) = exit
                    && exited.as_mut().poll(cx).is_ready()
                {
                    *exit = None;
                    return Change::Exited;
                }
                match poll_stderr(stderr, buf, shared, cx) {
                    true => Change::Progress,
                    false => Change::Nothing,
                }
            }
            Process::Restarting(restart) => match restart.as_mut().poll(cx) {
                Poll::Pending => Change::Nothing,
                Poll::Ready(Ok(spawned)) => {
                    let (process, wire) = Process::start(spawned, shared);
                    *self = process;
                    Change::Restarted(Ok(wire))
                }
                Poll::Ready(Err(e)) => {
                    *self = Process::None;
                    Change::Restarted(Err(e))
                }
            },
            Process::Ending(end) => match end.as_mut().poll(cx) {
                Poll::Pending => Change::Nothing,
                Poll::Ready(shutdown) => {
                    let mut shared = shared.lock();
                    shared.shutdown = Some(shutdown);
                    shared.pid = None;
                    *self = Process::None;
                    Change::Ended
                }
            },
        }
    }
}

/// Ends a server whose stdin is closed: the [`Escalation`]'s steps until it exits
/// (within `grace`), its pipes drained meanwhile, then reaping and the last `SIGKILL` to
/// its group.
async fn escalate(
    mut child: Child,
    group: Group,
    grace: Duration,
    stdout: &mut Option<Stdout>,
    stderr: &mut Option<ChildStderr>,
    shared: &Shared,
) -> Shutdown {
    let pid = child.id();
    let mut status = pin!(child.status());
    let mut end = Escalation::new(clock::now(), grace);
    // Whether it has exited already is looked at first, as the blocking adapter does.
    let mut until = clock::now();
    let status = loop {
        let exited = future::or(async { Some(status.as_mut().await.ok()) }, async {
            drain(stdout, stderr, shared).await;
            future::pending().await
        });
        let exited = future::or(exited, async {
            Timer::at(clock::to_std(until)).await;
            None
        });
        if let Some(status) = exited.await {
            break status;
        }
        match end.step(clock::now()) {
            Step::Wait(next) => until = next,
            Step::Terminate => signal_group(pid, Signal::Term).await,
            Step::Kill => {
                signal_group(pid, Signal::Kill).await;
                let _ = child.kill();
                break status.as_mut().await.ok();
            }
        }
    };
    group.kill().await;
    end.finish(status)
}

/// The server's process group (its id is the server's pid). [`Group::kill`] sends it the
/// last `SIGKILL` once the server is reaped; dropped before that (the driver dropped
/// while the server runs, is restarted or is ending), it sends `SIGKILL` itself, since
/// the child's `kill_on_drop` reaches the server alone. That signal is fired on the
/// `blocking` pool and not waited for.
pub(crate) struct Group(Option<u32>);

impl Group {
    /// The last `SIGKILL`, after the server was reaped, for what it started and that
    /// outlived it (safe although the pid is free again: see `mcp_io::ending`).
    async fn kill(mut self) {
        if let Some(pgid) = self.0.take() {
            signal_group(pgid, Signal::Kill).await;
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.take() {
            blocking::unblock(move || ending::signal_group(pgid, Signal::Kill)).detach();
        }
    }
}

/// [`ending::signal_group`] off the executor (it waits for a shell).
async fn signal_group(pgid: u32, signal: Signal) {
    let _ = blocking::unblock(move || ending::signal_group(pgid, signal)).await;
}

/// Starts the server: `command`'s [`std::process::Command`] (the resolved program, the
/// isolated environment) as an async-process child, with stdin, stdout and stderr piped
/// (set again: the conversion resets them), killed if its handle is dropped (the driver
/// normally closes stdin and waits first). On Unix it leads its own process group (set
/// by [`StdioCommand::to_command`], kept by the conversion).
pub(crate) fn spawn(command: &StdioCommand) -> Result<Spawned, Error> {
    let spawn_error = |source| Error::spawn(command.program(), source);
    let mut child = Command::from(command.to_command().map_err(spawn_error)?);
    child
        .stdin(Pipe::piped())
        .stdout(Pipe::piped())
        .stderr(Pipe::piped())
        .kill_on_drop(true);
    let mut child = child.spawn().map_err(spawn_error)?;
    let stdout = child.stdout.take().expect("stdout is piped");
    // Dropping `child` on failure kills it.
    let stdout = own_stdout(stdout).map_err(spawn_error)?;
    Ok((child, stdout))
}

/// The server's stdout. On Unix the pipe is registered with async-io directly rather than
/// through async-process's wrapper, so that the driver can ask whether it is readable:
/// after a read that did not fill its buffer, waiting for readiness costs no system call
/// where reading on until `WouldBlock` costs two ([`crate::conn::poll_readable_anew`]).
#[cfg(unix)]
pub(crate) type Stdout = async_io::Async<std::fs::File>;
/// The server's stdout.
#[cfg(not(unix))]
pub(crate) type Stdout = ChildStdout;

#[cfg(unix)]
fn own_stdout(pipe: ChildStdout) -> std::io::Result<Stdout> {
    async_io::Async::new(std::os::fd::OwnedFd::try_from(pipe)?.into())
}

#[cfg(not(unix))]
fn own_stdout(pipe: ChildStdout) -> std::io::Result<Stdout> {
    Ok(pipe)
}

/// Reads stderr into the shared tail until `Pending`. True on progress.
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
            Poll::Ready(Ok(n)) if n > 0 => shared.lock().stderr.push(&buf[..n]),
            Poll::Ready(_) => *stderr = None,
            Poll::Pending => break,
        }
        progress = true;
    }
    progress
}

async fn pause(time: Duration) {
    Timer::after(time).await;
}

/// Reads (and discards) stdout and captures stderr until both end.
async fn drain(stdout: &mut Option<Stdout>, stderr: &mut Option<ChildStderr>, shared: &Shared) {
    let mut buf = vec![0; 4096];
    poll_fn(|cx| {
        for _ in 0..BUDGET {
            let mut progress = poll_stderr(stderr, &mut buf, shared, cx);
            if let Some(pipe) = stdout {
                match Pin::new(pipe).poll_read(cx, &mut buf) {
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
