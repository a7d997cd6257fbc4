//! A child's stdin and stdout without helper threads (Unix).
//!
//! # Theory of operation
//!
//! A thread hand-off costs more than a small round trip itself, so on Unix the driver's
//! waiting thread (the leader, see the `driver` module) moves the bytes of the server's
//! pipes itself, both set non-blocking:
//!
//! * **Writing.** Whoever executes a `Transmit::Write` (under the driver's lock) writes
//!   it to stdin at once, as far as the pipe takes it. What the pipe does not take waits
//!   in the outbox, and the leader is rung: from then on it polls stdin for room and
//!   writes the rest. A write never blocks, so a server that stops reading never holds
//!   a caller past its deadline, and it never deadlocks against a server blocked on a
//!   full stdout. Bytes that reach the pipe are counted for the machine
//!   (`handle_written`), which bounds the outbox.
//! * **Reading.** The leader polls stdout, stdin while the outbox holds bytes, and the
//!   bell's socket (a [`Bell`] rung by another thread: a call with an earlier deadline, a
//!   cancellation, output waiting, a new process after a restart), until the machine's
//!   deadline. It reads at most one chunk per wait, so a flooding server is read no
//!   faster than the machine takes it.
//!
//! Reports carry the generation of the process whose pipes they come from, as the
//! threads' reports do: after a restart anything about the old pipes is dropped. Stderr
//! keeps its collector thread: it is off the hot path.

use std::io;
use std::mem;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::{ChildStdin, ChildStdout};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcp_io::TransportErrorKind;
use mcp_io::drive::MAX_KEPT_BUFFER;
use mcp_proto::client::ConnId;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;

use crate::carrier::{Bell, Inlet, IoEvent, READ_CHUNK, REPORT_QUEUE, Report};

/// The longest single poll: some systems refuse timeouts past `c_int::MAX` milliseconds.
const LONGEST_POLL: Duration = Duration::from_secs(24 * 3600);

/// The pipes of the current process, shared by the carrier (writes, under the driver's
/// lock) and the leader (polls and reads, unlocked).
#[derive(Debug)]
pub(crate) struct Pipes {
    state: Mutex<State>,
    bell: Bell,
}

#[derive(Debug, Default)]
struct State {
    generation: u64,
    stdout: Option<Arc<OwnedFd>>,
    stdin: Option<Arc<OwnedFd>>,
    /// What stdin has not taken yet.
    outbox: Vec<u8>,
    /// Bytes that reached stdin since the machine was last told.
    written: usize,
    /// A write failed: reported by the leader's next wait.
    failed: Option<io::Error>,
}

/// The leader's side: it polls the pipes and the bell's socket.
#[derive(Debug)]
pub(crate) struct Polled {
    pipes: Arc<Pipes>,
    hear: UnixStream,
    buf: Vec<u8>,
}

impl Pipes {
    /// Pipes with no process yet, with the bell that wakes their leader and the inlet
    /// it waits on.
    pub(crate) fn channel() -> io::Result<(Arc<Pipes>, Bell, Inlet)> {
        let (tx, rx) = mpsc::sync_channel(REPORT_QUEUE);
        let (ring, hear) = UnixStream::pair()?;
        ring.set_nonblocking(true)?;
        hear.set_nonblocking(true)?;
        let bell = Bell {
            tx,
            ring: Some(Arc::new(ring)),
        };
        let pipes = Arc::new(Pipes {
            state: Mutex::default(),
            bell: bell.clone(),
        });
        let polled = Polled {
            pipes: Arc::clone(&pipes),
            hear,
            buf: vec![0; READ_CHUNK],
        };
        let inlet = Inlet {
            rx,
            polled: Some(polled),
        };
        Ok((pipes, bell, inlet))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the pipes of a new process, generation `generation`, in place of any
    /// before.
    pub(crate) fn attach(
        &self,
        generation: u64,
        stdin: ChildStdin,
        stdout: ChildStdout,
    ) -> io::Result<()> {
        let (stdin, stdout) = (OwnedFd::from(stdin), OwnedFd::from(stdout));
        rustix::io::ioctl_fionbio(&stdin, true)?;
        rustix::io::ioctl_fionbio(&stdout, true)?;
        *self.lock() = State {
            generation,
            stdout: Some(Arc::new(stdout)),
            stdin: Some(Arc::new(stdin)),
            ..State::default()
        };
        // A leader polling the old pipes looks at the new ones.
        self.bell.ring(IoEvent::Nudge);
        Ok(())
    }

    /// Writes `bytes` after what waits already, as far as stdin takes them now; the
    /// leader writes the rest.
    pub(crate) fn send(&self, bytes: Vec<u8>) {
        let mut state = self.lock();
        let Some(stdin) = state.stdin.clone() else {
            return;
        };
        if !state.outbox.is_empty() {
            // The leader polls for room already (it was rung when the outbox filled).
            state.outbox.extend_from_slice(&bytes);
            return;
        }
        state.outbox = bytes;
        state.flush(&stdin);
        if !state.outbox.is_empty() || state.failed.is_some() {
            drop(state);
            self.bell.ring(IoEvent::Nudge);
        }
    }

    /// Bytes that reached stdin since last asked.
    pub(crate) fn take_written(&self) -> usize {
        mem::take(&mut self.lock().written)
    }

    /// Lets go of the pipes of generation `generation` (not of a newer process): stdin
    /// and what still waits for it (the caller finishes writing it, or drops it, which
    /// closes stdin).
    pub(crate) fn detach(&self, generation: u64) -> Option<(Arc<OwnedFd>, Vec<u8>)> {
        let mut state = self.lock();
        if state.generation != generation {
            return None;
        }
        state.stdout = None;
        let stdin = state.stdin.take();
        let rest = mem::take(&mut state.outbox);
        drop(state);
        // The leader drops its copies of the descriptors, so stdin closes now.
        self.bell.ring(IoEvent::Nudge);
        stdin.map(|fd| (fd, rest))
    }
}

impl State {
    /// Writes from the outbox until it is empty or the pipe is full.
    fn flush(&mut self, stdin: &OwnedFd) {
        let mut at = 0;
        while at < self.outbox.len() {
            match rustix::io::write(stdin, &self.outbox[at..]) {
                Ok(n) => at += n,
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => break,
                Err(e) => {
                    self.failed = Some(e.into());
                    self.stdin = None;
                    self.outbox = Vec::new();
                    return;
                }
            }
        }
        self.written += at;
        if at == self.outbox.len() {
            self.outbox.clear();
            if self.outbox.capacity() > MAX_KEPT_BUFFER {
                self.outbox = Vec::new();
            }
        } else {
            self.outbox.drain(..at);
        }
    }
}

impl Polled {
    /// The next report: a report on the channel (a wake-up), a write that failed, bytes
    /// or the end of stdout, room on stdin (as bytes written); `None` once `wait` ran
    /// out, or when woken with nothing to report.
    pub(crate) fn recv(&mut self, rx: &Receiver<Report>, wait: Option<Duration>) -> Option<Report> {
        if let Ok(report) = rx.try_recv() {
            return Some(report);
        }
        let (generation, stdout, stdin) = {
            let mut state = self.pipes.lock();
            let generation = state.generation;
            if let Some(e) = state.failed.take() {
                return Some(report(
                    generation,
                    IoEvent::Failed(TransportErrorKind::Write, e),
                ));
            }
            let stdin = if state.outbox.is_empty() {
                None
            } else {
                state.stdin.clone()
            };
            (generation, state.stdout.clone(), stdin)
        };
        let mut fds = Vec::with_capacity(3);
        fds.push(PollFd::new(&self.hear, PollFlags::IN));
        if let Some(fd) = &stdout {
            fds.push(PollFd::new(&**fd, PollFlags::IN));
        }
        if let Some(fd) = &stdin {
            fds.push(PollFd::new(&**fd, PollFlags::OUT));
        }
        let timeout = wait.map(|w| {
            let w = w.min(LONGEST_POLL);
            Timespec {
                tv_sec: w.as_secs().try_into().unwrap_or(i64::MAX),
                tv_nsec: w.subsec_nanos().into(),
            }
        });
        match poll(&mut fds, timeout.as_ref()) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        let mut ready = [false; 3];
        for (ready, fd) in ready.iter_mut().zip(&fds) {
            *ready = !fd.revents().is_empty();
        }
        drop(fds);
        let mut next = 1;
        if let Some(fd) = stdout {
            if ready[next] {
                return self.read(generation, &fd);
            }
            next += 1;
        }
        if let Some(fd) = stdin
            && ready[next]
        {
            let mut state = self.pipes.lock();
            if state.generation == generation {
                state.flush(&fd);
                let written = mem::take(&mut state.written);
                if let Some(e) = state.failed.take() {
                    return Some(report(
                        generation,
                        IoEvent::Failed(TransportErrorKind::Write, e),
                    ));
                }
                return Some(report(generation, IoEvent::Written(written)));
            }
        }
        if ready[0] {
            let mut drain = [0u8; 64];
            while matches!(io::Read::read(&mut self.hear, &mut drain), Ok(n) if n > 0) {}
            return rx.try_recv().ok();
        }
        None
    }

    /// One read of stdout; its end (or failure) is reported once.
    fn read(&mut self, generation: u64, stdout: &OwnedFd) -> Option<Report> {
        let event = match rustix::io::read(stdout, &mut self.buf) {
            Ok(0) => IoEvent::Eof,
            Ok(n) => return Some(report(generation, IoEvent::Data(self.buf[..n].to_vec()))),
            Err(Errno::AGAIN | Errno::INTR) => return None,
            Err(e) => IoEvent::Failed(TransportErrorKind::Read, e.into()),
        };
        let mut state = self.pipes.lock();
        if state.generation == generation {
            state.stdout = None;
        }
        Some(report(generation, event))
    }
}

fn report(generation: u64, event: IoEvent) -> Report {
    Report {
        conn: ConnId::STDIO,
        generation,
        event,
    }
}

/// Writes `rest` to `stdin` blocking, then lets go of it (closing stdin once the leader
/// dropped its copy): what a closing connection still owed the server. Errors end it.
pub(crate) fn finish_writing(stdin: &OwnedFd, rest: &[u8]) {
    if rustix::io::ioctl_fionbio(stdin, false).is_err() {
        return;
    }
    let mut at = 0;
    while at < rest.len() {
        match rustix::io::write(stdin, &rest[at..]) {
            Ok(n) => at += n,
            Err(Errno::INTR) => {}
            Err(_) => return,
        }
    }
}
