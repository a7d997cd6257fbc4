//! The server's child process: spawning it with an isolated environment, the threads that
//! move its bytes, and a shutdown that is bounded in time.
//!
//! # Threads
//!
//! Each child gets three small threads:
//!
//! * a **reader** that reads the child's stdout in chunks and reports them on the
//!   driver's one bounded channel (see the `carrier` module), followed by the end of
//!   file. A server that floods stdout blocks on its own pipe instead of growing our
//!   memory;
//! * a **writer** that writes what the driver hands it to the child's stdin. The
//!   driver's thread does not write stdin itself: a blocking write to a child that is
//!   itself blocked writing stdout (the channel being full while the caller is busy)
//!   would deadlock both sides. The writer only ever holds our own requests;
//! * a **stderr collector** that keeps the last bytes of the child's stderr in the
//!   bounded buffer of the connection's [`Shared`] state. Stderr is never mixed into the protocol.
//!
//! # Shutdown
//!
//! Closing drops the writer's queue, so the child's stdin is closed once pending bytes are
//! written; the child then has the grace period to exit, and the steps of
//! [`mcp_io::ending::Escalation`] are taken while it does not: `SIGTERM` to its process
//! group half-way through, `SIGKILL` to the group and [`Child::kill`] at the end. It is
//! always reaped, and its group is then sent `SIGKILL` once more, for what it started
//! and that outlived it. The threads are then joined for a short while only: a
//! grandchild that escaped the group can keep the pipes open for as long as it lives,
//! and we never hang on it (such a thread is detached and ends when the pipe closes).

use std::io::{self, Read};
use std::process::Child;
use std::sync::Arc;
use std::sync::mpsc::{self, Sender, SyncSender};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use mcp_io::ending::{self, Escalation, Signal, Step};
use mcp_io::wire_log::ChannelLog;
use mcp_io::{Error, Flavour, Shared, Shutdown, StdioCommand, TransportErrorKind, WireLog, clock};
use mcp_proto::client::{ConnId, TransportFailure, TransportFailureKind};

use crate::carrier::{self, Carrier, Report, Reporter, read_loop, write_loop};

/// How long shutdown waits for the IO threads after the child is reaped.
const THREAD_JOIN_WAIT: Duration = Duration::from_millis(250);

/// The stdio side of a driver: the command, the running process (a new one after a
/// restart), and what outlives each process.
#[derive(Debug)]
pub(crate) struct Stdio {
    command: StdioCommand,
    process: Option<Process>,
    /// Where the pid, the restarts and the stderr go.
    shared: Arc<Shared>,
    /// Which process reports are current: one more per restart.
    generation: u64,
    /// How the last process ended.
    shutdown: Option<Shutdown>,
    /// The lines received, for the wire log.
    log: ChannelLog,
}

impl Stdio {
    /// Starts the server; its threads report on `tx`, its stderr goes to `shared`.
    pub(crate) fn start(
        command: StdioCommand,
        tx: &SyncSender<Report>,
        shared: Arc<Shared>,
    ) -> Result<Stdio, Error> {
        let reporter = Reporter::new(tx, ConnId::STDIO, 1);
        let process = Process::spawn(&command, &shared, reporter)?;
        Ok(Stdio {
            command,
            process: Some(process),
            shared,
            generation: 1,
            shutdown: None,
            log: ChannelLog::lines(),
        })
    }
}

impl<F: Flavour> Carrier<F> for Stdio {
    fn write(&mut self, _: ConnId, bytes: Vec<u8>, log: &mut Option<WireLog<F>>) {
        self.log.sent(log, &bytes);
        if let Some(p) = &self.process {
            p.send(bytes);
        }
    }

    /// Stops the server (bounded by `grace`) and remembers how it ended.
    fn close(&mut self, _: ConnId, grace: Duration, log: &mut Option<WireLog<F>>) {
        self.log.finish(log);
        if let Some(mut p) = self.process.take() {
            self.shutdown = Some(p.shutdown(grace));
            self.shared.lock().pid = None;
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
        self.shutdown.unwrap_or_default()
    }

    /// Reaps the server that exited on the probe and starts the command again.
    fn respawn(&mut self, tx: &SyncSender<Report>) -> Result<(), TransportFailure> {
        if let Some(mut old) = self.process.take() {
            // Its stdout has ended already: that is what asked for the restart.
            self.shutdown = Some(old.shutdown(Duration::ZERO));
            self.shared.lock().pid = None;
        }
        self.generation += 1;
        self.log = ChannelLog::lines();
        let reporter = Reporter::new(tx, ConnId::STDIO, self.generation);
        match Process::spawn(&self.command, &self.shared, reporter) {
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
    child: Child,
    to_child: Option<Sender<Vec<u8>>>,
    threads: Vec<JoinHandle<()>>,
}

impl Process {
    /// Starts the child with exactly the environment `cmd` names.
    /// Its pid and stderr go to `shared`.
    fn spawn(
        cmd: &StdioCommand,
        shared: &Arc<Shared>,
        reporter: Reporter,
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
        let (to_child, writer_rx) = mpsc::channel::<Vec<u8>>();
        let writer = reporter.clone();
        let tail = Arc::clone(shared);
        let spawned = [
            carrier::spawn("mcp-stdio-writer", move || {
                write_loop(stdin, &writer_rx, &writer);
            }),
            carrier::spawn("mcp-stdio-reader", move || read_loop(stdout, &reporter)),
            carrier::spawn("mcp-stdio-stderr", move || stderr_loop(stderr, &tail)),
        ];
        let mut process = Process {
            child,
            to_child: Some(to_child),
            threads: Vec::with_capacity(3),
        };
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

    /// Hands bytes to the writer thread.
    fn send(&self, bytes: Vec<u8>) {
        if let Some(tx) = &self.to_child {
            // Gone only once stdin is closed: the end of stdout reports the exit.
            let _ = tx.send(bytes);
        }
    }

    /// Closes stdin, takes the [`Escalation`]'s steps until the child exits (within
    /// `grace`), reaps it, sends its process group a last `SIGKILL`, and joins the IO
    /// threads for a bounded time.
    fn shutdown(&mut self, grace: Duration) -> Shutdown {
        drop(self.to_child.take());
        let pid = self.child.id();
        let mut end = Escalation::new(clock::now(), grace);
        let mut pause = Duration::from_millis(1);
        let status = loop {
            // Not exited, or not known (an error): the escalation ends either.
            if let Ok(Some(status)) = self.child.try_wait() {
                break Some(status);
            }
            let now = clock::now();
            match end.step(now) {
                Step::Wait(until) => {
                    thread::sleep(pause.min(until.saturating_duration_since(now)));
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Step::Terminate => {
                    let _ = ending::signal_group(pid, Signal::Term);
                }
                Step::Kill => {
                    let _ = ending::signal_group(pid, Signal::Kill);
                    let _ = self.child.kill();
                    break self.child.wait().ok();
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
        if !self.threads.is_empty() || self.to_child.is_some() {
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
