//! The server's child process: spawning it with an isolated environment, the threads that
//! move its bytes, and a shutdown that is bounded in time.
//!
//! # Threads
//!
//! On Unix the driver's waiting thread moves the bytes of stdin and stdout itself (see
//! the `pipes` module); elsewhere each child gets a **reader** that reads the child's
//! stdout in chunks and reports them on the driver's one bounded channel (see the
//! `carrier` module), followed by the end of file, and a **writer** that writes what
//! the driver hands it to the child's stdin. In both cases a server that floods stdout
//! blocks on its own pipe instead of growing our memory, and no write by the driver's
//! thread can block: a blocking write to a child that is itself blocked writing stdout
//! would deadlock both sides.
//!
//! Every child also gets a **stderr collector** thread that keeps the last bytes of the
//! child's stderr in the bounded buffer of the connection's [`Shared`] state. Stderr is
//! never mixed into the protocol.
//!
//! On Unix a **waiter** thread owns the [`Child`] and blocks in its `wait`: it keeps the
//! exit status for the shutdown and reports the exit to the driver
//! ([`IoEvent::Exited`]), so that the machine learns of it even while a process the
//! server started holds its stdout open (the machine then ends the channel after its
//! drain). Elsewhere the exit is looked at once stdout has ended.
//!
//! # Shutdown
//!
//! Closing closes the child's stdin once pending bytes are written; the child then has
//! the grace period to exit (on a thread of its own, `mcp-stdio-close`: the thread that
//! drives hands the end of the connection out at once, and releasing the transport, as
//! `Client::close` does, waits for it), and the steps of [`mcp_io::ending::Escalation`] are taken
//! while it does not: `SIGTERM` to its process group half-way through, `SIGKILL` to the
//! group and [`Child::kill`] at the end. It is always reaped, and its group is then sent
//! `SIGKILL` once more, for what it started and that outlived it. The threads are then
//! joined for a short while only: a grandchild that escaped the group can keep the pipes
//! open for as long as it lives, and we never hang on it (such a thread is detached and
//! ends when the pipe closes).

use std::io::{self, Read};
use std::mem;
#[cfg(unix)]
use std::os::fd::OwnedFd;
use std::process::{Child, ExitStatus};
use std::sync::Arc;
#[cfg(not(unix))]
use std::sync::mpsc::{self, Sender};
#[cfg(unix)]
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use mcp_io::ending::{self, Escalation, Signal, Step};
use mcp_io::wire_log::ChannelLog;
use mcp_io::{Error, Flavour, Shared, Shutdown, StdioCommand, TransportErrorKind, WireLog, clock};
use mcp_proto::client::{ConnId, TransportFailure, TransportFailureKind};

use crate::carrier::{self, Bell, Carrier, Inlet, Reporter};
#[cfg(not(unix))]
use crate::carrier::{read_loop, write_loop};
#[cfg(unix)]
use crate::poll_set::PollSet;

/// How long shutdown waits for the IO threads after the child is reaped.
const THREAD_JOIN_WAIT: Duration = Duration::from_millis(250);
/// How long shutdown waits for the waiter to see the child die after `SIGKILL` to its
/// group (Unix).
#[cfg(unix)]
const KILL_WAIT: Duration = Duration::from_secs(2);

/// The stdio side of a driver: the command, the running process (a new one after a
/// restart), and what outlives each process.
#[derive(Debug)]
pub(crate) struct Stdio {
    command: StdioCommand,
    process: Option<Process>,
    /// Where each process's stdin and stdout go.
    wiring: Wiring,
    /// Where the pid, the restarts and the stderr go.
    shared: Arc<Shared>,
    /// Which process reports are current: one more per restart.
    generation: u64,
    /// How the last process ended.
    shutdown: Option<Shutdown>,
    /// The thread stopping the process the machine closed (within the grace period),
    /// joined on release: the close the machine decides (the server ended its output)
    /// holds no caller, whose call learns at once that the connection ended.
    ending: Option<JoinHandle<Shutdown>>,
    /// The lines received, for the wire log.
    log: ChannelLog,
    /// Where a process's exit is reported.
    bell: Bell,
}

/// Where a process's stdin and stdout go.
#[derive(Debug, Clone)]
enum Wiring {
    /// To the pipes the driver's waiting thread polls.
    #[cfg(unix)]
    Polled(Arc<PollSet>),
    /// To helper threads that report on the channel.
    #[cfg(not(unix))]
    Threads(Bell),
}

impl Stdio {
    /// Starts the server, its stderr going to `shared`; with the bell and the inlet the
    /// driver waits on.
    pub(crate) fn start(
        command: StdioCommand,
        shared: Arc<Shared>,
    ) -> Result<(Stdio, Bell, Inlet), Error> {
        #[cfg(unix)]
        let (wiring, bell, inlet) = {
            let (pipes, bell, inlet) =
                PollSet::channel().map_err(|e| Error::spawn(command.program(), e))?;
            (Wiring::Polled(pipes), bell, inlet)
        };
        #[cfg(not(unix))]
        let (wiring, bell, inlet) = {
            let (bell, inlet) = carrier::channel();
            (Wiring::Threads(bell.clone()), bell, inlet)
        };
        let process = Process::spawn(&command, &shared, &wiring, (&bell, 1))?;
        let stdio = Stdio {
            command,
            process: Some(process),
            wiring,
            shared,
            generation: 1,
            shutdown: None,
            ending: None,
            log: ChannelLog::lines(),
            bell: bell.clone(),
        };
        Ok((stdio, bell, inlet))
    }
}

impl<F: Flavour> Carrier<F> for Stdio {
    fn write(&mut self, _: ConnId, bytes: Vec<u8>, log: &mut Option<WireLog<F>>) {
        self.log.sent(log, &bytes);
        if let Some(p) = &self.process {
            p.send(bytes);
        }
    }

    /// Stops the server (bounded by `grace`) on a thread of its own, so that the thread
    /// that drives hands out the end of the connection at once; [`Carrier::release`]
    /// waits for it. Without a thread, here.
    fn close(&mut self, _: ConnId, grace: Duration, log: &mut Option<WireLog<F>>) {
        self.log.finish(log);
        let Some(mut p) = self.process.take() else {
            return;
        };
        self.shared.lock().pid = None;
        let shared = Arc::clone(&self.shared);
        let (tx, rx) = std::sync::mpsc::channel();
        let ending = thread::Builder::new()
            .name("mcp-stdio-close".into())
            .spawn(move || {
                // The process arrives on the channel, so that a thread that cannot start
                // gives it back.
                let Ok(mut p) = rx.recv() else {
                    return Shutdown::default();
                };
                let shutdown = Process::shutdown(&mut p, grace);
                shared.lock().shutdown = Some(shutdown);
                shutdown
            });
        match ending {
            Ok(thread) => {
                // The thread holds the receiver until it has the process.
                let _ = tx.send(p);
                self.ending = Some(thread);
            }
            Err(_) => {
                let shutdown = p.shutdown(grace);
                self.shutdown = Some(shutdown);
                self.shared.lock().shutdown = Some(shutdown);
            }
        }
    }

    fn is_current(&self, conn: ConnId, generation: u64) -> bool {
        conn == ConnId::STDIO && generation == self.generation && self.process.is_some()
    }

    fn is_idle(&self) -> bool {
        self.process.is_none()
    }

    fn channel_log(&mut self, _: ConnId) -> Option<&mut ChannelLog> {
        Some(&mut self.log)
    }

    fn failure(&self, _: TransportErrorKind, error: io::Error) -> TransportFailure {
        TransportFailure::from_io(&error).with_source(Arc::new(error))
    }

    fn release(&mut self, grace: Duration, log: &mut Option<WireLog<F>>) -> Shutdown {
        Carrier::<F>::close(self, ConnId::STDIO, grace, log);
        if let Some(ending) = self.ending.take() {
            self.shutdown = Some(ending.join().unwrap_or_default());
        }
        self.shutdown.unwrap_or_default()
    }

    #[cfg(unix)]
    fn due_writes(&self) -> Option<&Arc<PollSet>> {
        let Wiring::Polled(pipes) = &self.wiring;
        pipes.is_due().then_some(pipes)
    }

    fn take_written(&mut self) -> Option<(ConnId, usize)> {
        let written = match &self.wiring {
            #[cfg(unix)]
            Wiring::Polled(pipes) => pipes.take_written(ConnId::STDIO),
            // The writer thread reports what it wrote on the channel.
            #[cfg(not(unix))]
            Wiring::Threads(_) => 0,
        };
        (written > 0).then_some((ConnId::STDIO, written))
    }

    /// Reaps the server that exited on the probe and starts the command again.
    fn respawn(&mut self, _: &Bell) -> Result<(), TransportFailure> {
        if let Some(mut old) = self.process.take() {
            // Its stdout has ended already: that is what asked for the restart.
            let shutdown = old.shutdown(Duration::ZERO);
            self.shutdown = Some(shutdown);
            self.shared.lock().restarting(shutdown);
        }
        self.generation += 1;
        self.log = ChannelLog::lines();
        let reports = (&self.bell, self.generation);
        match Process::spawn(&self.command, &self.shared, &self.wiring, reports) {
            Ok(p) => {
                self.process = Some(p);
                self.shared.lock().restarts += 1;
                Ok(())
            }
            Err(e) => {
                let failure = TransportFailure::new(TransportFailureKind::Spawn, e.to_string());
                Err(failure.with_source(Arc::new(e)))
            }
        }
    }
}

/// A running server process and its IO threads.
#[derive(Debug)]
struct Process {
    child: Reaper,
    out: Outlet,
    threads: Vec<JoinHandle<()>>,
}

/// How the server's exit is learnt.
#[derive(Debug)]
enum Reaper {
    /// The waiter thread owns the child; its exit status comes on `exit` (`None`: it
    /// could not be had), kept in `status` once it came.
    #[cfg(unix)]
    Waiter {
        pid: u32,
        exit: Receiver<Option<ExitStatus>>,
        status: Option<Option<ExitStatus>>,
    },
    /// The child, looked at by shutdown.
    #[cfg(not(unix))]
    Child(Child),
}

impl Reaper {
    /// Hands the child to a waiter thread that reports its exit as generation
    /// `generation` (Unix); elsewhere keeps it. Should the thread not start, the child
    /// is killed and the error returned.
    fn new(
        child: Child,
        bell: &Bell,
        generation: u64,
    ) -> io::Result<(Reaper, Option<JoinHandle<()>>)> {
        #[cfg(unix)]
        {
            let pid = child.id();
            let (tx, exit) = std::sync::mpsc::sync_channel(1);
            let reporter = Reporter::new(bell, ConnId::STDIO, generation);
            let mut child = child;
            let waiter = carrier::spawn("mcp-stdio-wait", move || {
                let _ = tx.send(child.wait().ok());
                reporter.send(carrier::IoEvent::Exited);
            });
            match waiter {
                Ok(thread) => {
                    let status = None;
                    Ok((Reaper::Waiter { pid, exit, status }, Some(thread)))
                }
                Err(e) => {
                    // The child went with the closure: its group is all that reaches it.
                    let _ = ending::signal_group(pid, Signal::Kill);
                    Err(e)
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = (bell, generation);
            Ok((Reaper::Child(child), None))
        }
    }

    fn id(&self) -> u32 {
        match self {
            #[cfg(unix)]
            Reaper::Waiter { pid, .. } => *pid,
            #[cfg(not(unix))]
            Reaper::Child(child) => child.id(),
        }
    }

    /// Whether the child has exited, waiting for it at most `wait`; with its status
    /// when known.
    fn exited(&mut self, wait: Duration) -> Option<Option<ExitStatus>> {
        match self {
            #[cfg(unix)]
            Reaper::Waiter { exit, status, .. } => {
                if status.is_none() {
                    let came = match wait.is_zero() {
                        true => exit.try_recv().map_err(|e| e == TryRecvError::Disconnected),
                        false => exit
                            .recv_timeout(wait)
                            .map_err(|e| e == RecvTimeoutError::Disconnected),
                    };
                    *status = match came {
                        Ok(exited) => Some(exited),
                        // The waiter is gone without a word: nothing more will come.
                        Err(true) => Some(None),
                        Err(false) => None,
                    };
                }
                *status
            }
            #[cfg(not(unix))]
            Reaper::Child(child) => {
                if let Ok(Some(status)) = child.try_wait() {
                    return Some(Some(status));
                }
                thread::sleep(wait);
                None
            }
        }
    }

    /// After `SIGKILL` to its group: the child's status once it is reaped.
    fn killed(&mut self) -> Option<ExitStatus> {
        match self {
            #[cfg(unix)]
            Reaper::Waiter { .. } => self.exited(KILL_WAIT).flatten(),
            #[cfg(not(unix))]
            Reaper::Child(child) => {
                let _ = child.kill();
                child.wait().ok()
            }
        }
    }
}

/// Where [`Process::send`] puts bytes for the child's stdin.
#[derive(Debug)]
enum Outlet {
    /// The poll set the pipes are attached to, under this generation.
    #[cfg(unix)]
    Pipes(Arc<PollSet>, u64),
    #[cfg(not(unix))]
    Writer(Sender<Vec<u8>>),
    /// Stdin is closed.
    Closed,
}

impl Process {
    /// Starts the child with exactly the environment `cmd` names, as generation
    /// `generation`. Its pid and stderr go to `shared`.
    fn spawn(
        cmd: &StdioCommand,
        shared: &Arc<Shared>,
        wiring: &Wiring,
        (bell, generation): (&Bell, u64),
    ) -> Result<Process, Error> {
        let spawn_error = |source| Error::spawn(cmd.program(), source);
        let mut command = cmd.to_command().map_err(spawn_error)?;
        let mut child = command.spawn().map_err(spawn_error)?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(spawn_error(io::Error::other("child pipes missing")));
        };
        let (child, waiter) = Reaper::new(child, bell, generation).map_err(spawn_error)?;
        let mut process = Process {
            child,
            out: Outlet::Closed,
            threads: Vec::with_capacity(4),
        };
        process.threads.extend(waiter);
        let tail = Arc::clone(shared);
        let mut spawned = vec![carrier::spawn("mcp-stdio-stderr", move || {
            stderr_loop(stderr, &tail);
        })];
        match wiring {
            #[cfg(unix)]
            Wiring::Polled(pipes) => {
                let (input, output) = (OwnedFd::from(stdout), OwnedFd::from(stdin));
                if let Err(e) = pipes.attach(ConnId::STDIO, generation, input, Some(output)) {
                    spawned.push(Err(e));
                }
                process.out = Outlet::Pipes(Arc::clone(pipes), generation);
            }
            #[cfg(not(unix))]
            Wiring::Threads(bell) => {
                let reporter = Reporter::new(bell, ConnId::STDIO, generation);
                let (to_child, writer_rx) = mpsc::channel::<Vec<u8>>();
                let writer = reporter.clone();
                spawned.push(carrier::spawn("mcp-stdio-writer", move || {
                    write_loop(stdin, &writer_rx, &writer);
                }));
                spawned.push(carrier::spawn("mcp-stdio-reader", move || {
                    read_loop(stdout, &reporter);
                }));
                process.out = Outlet::Writer(to_child);
            }
        }
        let mut failure = None;
        for t in spawned {
            match t {
                Ok(handle) => process.threads.push(handle),
                Err(e) => failure = Some(e),
            }
        }
        if let Some(e) = failure {
            process.shutdown(Duration::ZERO);
            return Err(spawn_error(e));
        }
        shared.lock().pid = Some(process.child.id());
        Ok(process)
    }

    /// Hands `bytes` to the child's stdin, after what was sent before.
    fn send(&self, bytes: Vec<u8>) {
        match &self.out {
            #[cfg(unix)]
            Outlet::Pipes(pipes, _) => pipes.send(ConnId::STDIO, bytes),
            // Gone only once stdin is closed: the end of stdout reports the exit.
            #[cfg(not(unix))]
            Outlet::Writer(tx) => drop(tx.send(bytes)),
            Outlet::Closed => {}
        }
    }

    /// Closes stdin once what waits for it is written (on a thread of its own when the
    /// pipe is full, so that the escalation below still runs on time).
    fn close_stdin(&mut self) {
        match mem::replace(&mut self.out, Outlet::Closed) {
            #[cfg(unix)]
            Outlet::Pipes(pipes, generation) => {
                if let Some((stdin, rest)) = pipes.detach(ConnId::STDIO, generation)
                    && !rest.is_empty()
                {
                    let writer = carrier::spawn("mcp-stdio-flush", move || {
                        crate::poll_set::finish_writing(&stdin, &rest);
                    });
                    self.threads.extend(writer);
                }
            }
            #[cfg(not(unix))]
            Outlet::Writer(tx) => drop(tx),
            Outlet::Closed => {}
        }
    }

    /// Closes stdin, lets the child exit within `grace` (then terminates, then kills
    /// its process group), reaps it, and joins the threads for a short while.
    fn shutdown(&mut self, grace: Duration) -> Shutdown {
        self.close_stdin();
        let pid = self.child.id();
        let mut end = Escalation::new(clock::now(), grace);
        let mut pause = Duration::ZERO;
        let status = loop {
            if let Some(status) = self.child.exited(pause) {
                break status;
            }
            let now = clock::now();
            match end.step(now) {
                Step::Wait(until) => {
                    pause = until
                        .saturating_duration_since(now)
                        .min(Duration::from_millis(20));
                }
                Step::Terminate => {
                    pause = Duration::ZERO;
                    let _ = ending::signal_group(pid, Signal::Term);
                }
                Step::Kill => {
                    let _ = ending::signal_group(pid, Signal::Kill);
                    break self.child.killed();
                }
            }
        };
        // What it left in its group (safe although it is reaped: see `mcp_io::ending`).
        let _ = ending::signal_group(pid, Signal::Kill);
        join_bounded(std::mem::take(&mut self.threads), THREAD_JOIN_WAIT);
        end.finish(status)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if !self.threads.is_empty() || !matches!(self.out, Outlet::Closed) {
            self.shutdown(Duration::ZERO);
        }
    }
}

fn stderr_loop(mut stderr: impl Read, shared: &Shared) {
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => shared.lock().stderr.push(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Joins the threads that finish within `wait`; the rest are detached.
fn join_bounded(threads: Vec<JoinHandle<()>>, wait: Duration) {
    let deadline = clock::now() + wait;
    let mut pending = threads;
    loop {
        let (done, rest): (Vec<_>, Vec<_>) = pending.into_iter().partition(JoinHandle::is_finished);
        for t in done {
            let _ = t.join();
        }
        pending = rest;
        if pending.is_empty() || clock::now() >= deadline {
            return;
        }
        thread::sleep(Duration::from_millis(2));
    }
}
