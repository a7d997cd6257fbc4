//! The server's child process: spawning it with an isolated environment, the threads that
//! move its bytes, and a shutdown that is bounded in time.
//!
//! # Threads
//!
//! Each child gets three small threads:
//!
//! * a **reader** that reads the child's stdout in chunks and sends them over a bounded
//!   channel ([`READ_QUEUE_CHUNKS`] chunks of at most [`READ_CHUNK`] bytes), followed by one
//!   end-of-file message. A server that floods stdout blocks on its own pipe instead of
//!   growing our memory;
//! * a **writer** that writes what the caller's thread hands it to the child's stdin.
//!   The design guide has the caller's thread write stdin itself; we do not, because a
//!   blocking write to a child that is itself blocked writing stdout (our read queue being
//!   full while the caller is busy) would deadlock both sides. The writer only ever holds
//!   our own requests, so its queue is bounded by what the caller sends;
//! * a **stderr collector** that keeps the last bytes of the child's stderr in a bounded
//!   buffer ([`StderrTail`]). Stderr is never mixed into the protocol.
//!
//! # Shutdown
//!
//! Closing drops the writer's queue, so the child's stdin is closed once pending bytes are
//! written; the child then has a grace period to exit before it is killed. It is always
//! reaped. The threads are then joined for a short while only: a grandchild that inherited
//! the pipes can keep them open for as long as it lives, and we never hang on it (such a
//! thread is detached and ends when the pipe closes).
//!
//! The 2026 stdio text asks for SIGTERM between closing stdin and SIGKILL. The standard
//! library can only send SIGKILL ([`Child::kill`]) and this crate forbids `unsafe`, so the
//! escalation goes straight from the stdin EOF plus grace period to a kill.

use std::io::{self, Read, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use mcp_host::clock;

use mcp_host::{Shutdown, StderrTail, StdioCommand};

use crate::error::Error;

/// Bytes read from the child's stdout in one go.
pub(crate) const READ_CHUNK: usize = 64 * 1024;
/// Chunks of stdout waiting for the caller's thread before the reader blocks.
pub(crate) const READ_QUEUE_CHUNKS: usize = 64;
/// How long shutdown waits for the IO threads after the child is reaped.
const THREAD_JOIN_WAIT: Duration = Duration::from_millis(250);

/// What the reader thread reports.
#[derive(Debug)]
pub(crate) enum FromChild {
    /// Bytes from stdout.
    Data(Vec<u8>),
    /// Stdout ended (the child exited or closed it, or reading failed).
    Eof,
}

/// A running server process and its IO threads.
#[derive(Debug)]
pub(crate) struct Process {
    child: Child,
    to_child: Option<Sender<Vec<u8>>>,
    from_child: Option<Receiver<FromChild>>,
    threads: Vec<JoinHandle<()>>,
    shutdown: Option<Shutdown>,
}

impl Process {
    /// Starts the child with exactly the environment `cmd` names.
    pub(crate) fn spawn(
        cmd: &StdioCommand,
        tail: &Arc<Mutex<StderrTail>>,
    ) -> Result<Process, Error> {
        let spawn_error = |source| Error::Spawn {
            program: cmd.program().to_string_lossy().into_owned(),
            source: Arc::new(source),
        };
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
        let (reader_tx, from_child) = mpsc::sync_channel::<FromChild>(READ_QUEUE_CHUNKS);
        let mut threads = Vec::with_capacity(3);
        let spawned = [
            thread::Builder::new()
                .name("mcp-stdio-writer".into())
                .spawn(move || write_loop(stdin, &writer_rx)),
            thread::Builder::new()
                .name("mcp-stdio-reader".into())
                .spawn(move || read_loop(stdout, &reader_tx)),
            {
                let tail = Arc::clone(tail);
                thread::Builder::new()
                    .name("mcp-stdio-stderr".into())
                    .spawn(move || stderr_loop(stderr, &tail))
            },
        ];
        let mut failure = None;
        for t in spawned {
            match t {
                Ok(handle) => threads.push(handle),
                Err(e) => failure = Some(e),
            }
        }
        let mut process = Process {
            child,
            to_child: Some(to_child),
            from_child: Some(from_child),
            threads,
            shutdown: None,
        };
        if let Some(e) = failure {
            process.shutdown(Duration::ZERO);
            return Err(spawn_error(e));
        }
        Ok(process)
    }

    /// The OS process id.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// Hands bytes to the writer thread. Silently dropped once stdin is closed (the
    /// reader's end of file reports the exit).
    pub(crate) fn send(&self, bytes: Vec<u8>) {
        if let Some(tx) = &self.to_child {
            let _ = tx.send(bytes);
        }
    }

    /// Waits up to `timeout` (forever for `None`) for the reader thread.
    pub(crate) fn recv(&self, timeout: Option<Duration>) -> Received {
        let Some(rx) = &self.from_child else {
            return Received::Eof;
        };
        let got = match timeout {
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            Some(t) => rx.recv_timeout(t),
        };
        match got {
            Ok(FromChild::Data(d)) => Received::Data(d),
            Ok(FromChild::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => Received::Eof,
            Err(mpsc::RecvTimeoutError::Timeout) => Received::Timeout,
        }
    }

    /// Closes stdin, waits up to `grace` for the child to exit, kills it otherwise, reaps
    /// it, and joins the IO threads for a bounded time. Idempotent.
    pub(crate) fn shutdown(&mut self, grace: Duration) -> Shutdown {
        if let Some(done) = self.shutdown {
            return done;
        }
        drop(self.to_child.take());
        let deadline = clock::now() + grace;
        let mut status = None;
        let mut pause = Duration::from_millis(1);
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => {
                    status = Some(s);
                    break;
                }
                Ok(None) => {}
                Err(_) => break,
            }
            let now = clock::now();
            if now >= deadline {
                break;
            }
            thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
        let killed = status.is_none();
        if killed {
            let _ = self.child.kill();
            status = self.child.wait().ok();
        }
        // Unblocks a reader waiting on a full queue.
        drop(self.from_child.take());
        join_bounded(std::mem::take(&mut self.threads), THREAD_JOIN_WAIT);
        let done = Shutdown::new(status, killed);
        self.shutdown = Some(done);
        done
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.shutdown(Duration::ZERO);
    }
}

/// One wait on the reader.
#[derive(Debug)]
pub(crate) enum Received {
    Data(Vec<u8>),
    Eof,
    Timeout,
}

fn write_loop(mut stdin: ChildStdin, rx: &Receiver<Vec<u8>>) {
    for chunk in rx {
        if stdin
            .write_all(&chunk)
            .and_then(|()| stdin.flush())
            .is_err()
        {
            break;
        }
    }
}

fn read_loop(mut stdout: impl Read, tx: &SyncSender<FromChild>) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match stdout.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if tx.send(FromChild::Data(buf[..n].to_vec())).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = tx.send(FromChild::Eof);
}

fn stderr_loop(mut stderr: impl Read, tail: &Mutex<StderrTail>) {
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => tail
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&buf[..n]),
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
