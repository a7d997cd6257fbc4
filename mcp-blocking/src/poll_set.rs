//! Byte channels without helper threads (Unix): a stdio server's pipes and plain TCP
//! connections, polled by the thread that waits for the machine.
//!
//! # Theory of operation
//!
//! A thread hand-off costs more than a small round trip itself, so on Unix the driver's
//! waiting thread (the leader, see the `driver` module) moves the bytes of its channels
//! itself, all of them non-blocking:
//!
//! * **Writing.** Whoever executes a `Transmit::Write` (under the driver's lock) writes
//!   it at once, as far as the pipe or socket takes it. What it does not take waits in
//!   the channel's outbox, and the leader is rung: from then on it polls that channel for
//!   room and writes the rest. A write never blocks, so a peer that stops reading never
//!   holds a caller past its deadline, and it never deadlocks against a stdio server
//!   blocked on a full stdout. Bytes that reach a stdio server's stdin are counted for
//!   the machine (`handle_written`), which bounds the outbox.
//! * **Reading.** The leader polls every channel's input, the output of those with bytes
//!   waiting, and the bell's socket (a [`Bell`] rung by another thread: a call with an
//!   earlier deadline, a cancellation, output waiting, a channel added or removed, a
//!   helper thread's report), until the machine's deadline. It reads at most one chunk
//!   per wait, so a flooding peer is read no faster than the machine takes it, and it
//!   starts its scan of ready channels one further each time, so that none starves.
//!
//! Reports carry the channel and a generation, as the threads' reports do: after a
//! restart anything about the old pipes is dropped. Channels that need more than bytes
//! moved (TLS, a connector's own stream, a stdio server's stderr) keep their threads.

use std::io;
use std::mem;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
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
/// Descriptors polled without allocating: the bell and two channels in both directions.
const INLINE_FDS: usize = 5;

/// The polled channels, shared by the carrier (writes, under the driver's lock), the
/// threads that open connections, and the leader (polls and reads, unlocked).
#[derive(Debug)]
pub(crate) struct PollSet {
    state: Mutex<Vec<Chan>>,
    bell: Bell,
}

/// One polled channel.
#[derive(Debug)]
struct Chan {
    conn: ConnId,
    generation: u64,
    /// Where its bytes come from, until their end.
    input: Option<Arc<OwnedFd>>,
    /// Where its bytes go, until closed or failed.
    output: Option<Arc<OwnedFd>>,
    /// What the output has not taken yet.
    outbox: Vec<u8>,
    /// Bytes that reached the output since the machine was last told.
    written: usize,
    /// A write failed: reported by the leader's next wait.
    failed: Option<io::Error>,
}

/// The leader's side: it polls the channels and the bell's socket.
#[derive(Debug)]
pub(crate) struct Polled {
    set: Arc<PollSet>,
    hear: UnixStream,
    buf: Vec<u8>,
    /// Where the next scan of ready channels starts.
    turn: usize,
    /// What each wait found, and which polled descriptors were ready (kept for reuse).
    ready: Vec<Ready>,
    flags: Vec<bool>,
}

/// What a wait found ready on one channel.
#[derive(Debug)]
struct Ready {
    conn: ConnId,
    generation: u64,
    input: Option<Arc<OwnedFd>>,
    output: Option<Arc<OwnedFd>>,
    readable: bool,
    writable: bool,
}

impl PollSet {
    /// An empty set, with the bell that wakes its leader and the inlet it waits on.
    pub(crate) fn channel() -> io::Result<(Arc<PollSet>, Bell, Inlet)> {
        let (tx, rx) = mpsc::sync_channel(REPORT_QUEUE);
        let (ring, hear) = UnixStream::pair()?;
        ring.set_nonblocking(true)?;
        hear.set_nonblocking(true)?;
        let bell = Bell {
            tx,
            ring: Some(Arc::new(ring)),
        };
        let set = Arc::new(PollSet {
            state: Mutex::default(),
            bell: bell.clone(),
        });
        let polled = Polled {
            set: Arc::clone(&set),
            hear,
            buf: vec![0; READ_CHUNK],
            turn: 0,
            ready: Vec::new(),
            flags: Vec::new(),
        };
        let inlet = Inlet {
            rx,
            polled: Some(polled),
        };
        Ok((set, bell, inlet))
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Chan>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Polls `input` and `output` (non-blocking from now on; the same descriptor for a
    /// socket) as channel `conn`, generation `generation`, in place of any before.
    pub(crate) fn attach(
        &self,
        conn: ConnId,
        generation: u64,
        input: OwnedFd,
        output: Option<OwnedFd>,
    ) -> io::Result<()> {
        rustix::io::ioctl_fionbio(&input, true)?;
        if let Some(output) = &output {
            rustix::io::ioctl_fionbio(output, true)?;
        }
        let input = Arc::new(input);
        let output = output.map_or_else(|| Arc::clone(&input), Arc::new);
        let chan = Chan {
            conn,
            generation,
            input: Some(input),
            output: Some(output),
            outbox: Vec::new(),
            written: 0,
            failed: None,
        };
        let mut chans = self.lock();
        chans.retain(|c| c.conn != conn);
        chans.push(chan);
        drop(chans);
        // The leader polls the new channel from its next wait on.
        self.bell.ring(IoEvent::Nudge);
        Ok(())
    }

    /// Writes `bytes` on `conn` after what waits already, as far as the output takes them
    /// now; the leader writes the rest.
    pub(crate) fn send(&self, conn: ConnId, bytes: Vec<u8>) {
        let mut chans = self.lock();
        let Some(chan) = chans.iter_mut().find(|c| c.conn == conn) else {
            return;
        };
        let Some(output) = chan.output.clone() else {
            return;
        };
        if !chan.outbox.is_empty() {
            // The leader polls for room already (it was rung when the outbox filled).
            chan.outbox.extend_from_slice(&bytes);
            return;
        }
        chan.outbox = bytes;
        chan.flush(&output);
        if !chan.outbox.is_empty() || chan.failed.is_some() {
            drop(chans);
            self.bell.ring(IoEvent::Nudge);
        }
    }

    /// Bytes that reached `conn`'s output since last asked.
    pub(crate) fn take_written(&self, conn: ConnId) -> usize {
        let mut chans = self.lock();
        chans
            .iter_mut()
            .find(|c| c.conn == conn)
            .map_or(0, |c| mem::take(&mut c.written))
    }

    /// Stops polling `conn` if it is generation `generation` (not a newer one): its
    /// output and what still waits for it (the caller finishes writing it, or drops it).
    pub(crate) fn detach(&self, conn: ConnId, generation: u64) -> Option<(Arc<OwnedFd>, Vec<u8>)> {
        let mut chans = self.lock();
        let at = chans
            .iter()
            .position(|c| c.conn == conn && c.generation == generation)?;
        let chan = chans.swap_remove(at);
        drop(chans);
        // The leader drops its copies of the descriptors, so they close now.
        self.bell.ring(IoEvent::Nudge);
        chan.output.map(|fd| (fd, chan.outbox))
    }
}

impl Chan {
    /// Writes from the outbox until it is empty or the output is full.
    fn flush(&mut self, output: &OwnedFd) {
        let mut at = 0;
        while at < self.outbox.len() {
            match rustix::io::write(output, &self.outbox[at..]) {
                Ok(n) => at += n,
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => break,
                Err(e) => {
                    self.failed = Some(e.into());
                    self.output = None;
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
    /// The next report: a report on the channel (a helper thread's, a wake-up), a write
    /// that failed, bytes or the end of a channel's input, room on an output (as bytes
    /// written); `None` once `wait` ran out, or when woken with nothing to report.
    pub(crate) fn recv(&mut self, rx: &Receiver<Report>, wait: Option<Duration>) -> Option<Report> {
        if let Ok(report) = rx.try_recv() {
            return Some(report);
        }
        // Kept between waits (no allocation per wait), emptied after each: its copies of
        // the descriptors must not outlive the wait.
        let mut ready = mem::take(&mut self.ready);
        let report = self.wait(rx, wait, &mut ready);
        ready.clear();
        self.ready = ready;
        report
    }

    fn wait(
        &mut self,
        rx: &Receiver<Report>,
        wait: Option<Duration>,
        ready: &mut Vec<Ready>,
    ) -> Option<Report> {
        {
            let mut chans = self.set.lock();
            for chan in chans.iter_mut() {
                if let Some(e) = chan.failed.take() {
                    let event = IoEvent::Failed(TransportErrorKind::Write, e);
                    return Some(report(chan.conn, chan.generation, event));
                }
                ready.push(Ready {
                    conn: chan.conn,
                    generation: chan.generation,
                    input: chan.input.clone(),
                    output: (!chan.outbox.is_empty())
                        .then(|| chan.output.clone())
                        .flatten(),
                    readable: false,
                    writable: false,
                });
            }
        }
        match self.poll(ready, wait) {
            Ok(true) => {}
            Ok(false) => return None,
            // A poll that fails (not interrupted) would fail again at once: rather than
            // the leader spinning on it, a channel fails with its error, one per wait.
            Err(e) => {
                let r = ready.first()?;
                let event = IoEvent::Failed(TransportErrorKind::Read, e);
                return Some(report(r.conn, r.generation, event));
            }
        }
        let count = ready.len();
        self.turn = self.turn.wrapping_add(1);
        for i in 0..count {
            let r = &ready[(self.turn + i) % count];
            if r.readable
                && let Some(input) = &r.input
            {
                let input = Arc::clone(input);
                return self.read(r.conn, r.generation, &input);
            }
            if r.writable
                && let Some(output) = &r.output
            {
                return self.set.flush(r.conn, r.generation, output);
            }
        }
        // The bell, or nothing ready any more.
        let mut drain = [0u8; 64];
        while matches!(io::Read::read(&mut self.hear, &mut drain), Ok(n) if n > 0) {}
        rx.try_recv().ok()
    }

    /// Polls the bell and `ready`'s descriptors for at most `wait`, marking what is
    /// ready; false when nothing is (the time ran out, or the poll was interrupted).
    ///
    /// # Errors
    /// When `poll` itself fails.
    fn poll(&mut self, ready: &mut [Ready], wait: Option<Duration>) -> io::Result<bool> {
        let timeout = wait.map(|w| {
            let w = w.min(LONGEST_POLL);
            Timespec {
                tv_sec: w.as_secs().try_into().unwrap_or(i64::MAX),
                tv_nsec: w.subsec_nanos().into(),
            }
        });
        let needed = 1 + ready
            .iter()
            .map(|r| usize::from(r.input.is_some()) + usize::from(r.output.is_some()))
            .sum::<usize>();
        self.flags.clear();
        // A few descriptors (the usual case) need no allocation: the array's spare
        // entries repeat the bell and are not polled.
        if needed <= INLINE_FDS {
            let mut fds: [PollFd<'_>; INLINE_FDS] =
                std::array::from_fn(|_| PollFd::new(&self.hear, PollFlags::IN));
            fill(&mut fds[1..], ready);
            if !poll_into(&mut fds[..needed], timeout.as_ref(), &mut self.flags)? {
                return Ok(false);
            }
        } else {
            let mut fds = vec![PollFd::new(&self.hear, PollFlags::IN); needed];
            fill(&mut fds[1..], ready);
            if !poll_into(&mut fds, timeout.as_ref(), &mut self.flags)? {
                return Ok(false);
            }
        }
        let mut seen = self.flags.iter().copied();
        for r in ready.iter_mut() {
            if r.input.is_some() {
                r.readable = seen.next().unwrap_or(false);
            }
            if r.output.is_some() {
                r.writable = seen.next().unwrap_or(false);
            }
        }
        Ok(true)
    }

    /// One read of `conn`'s input; its end (or failure) is reported once.
    fn read(&mut self, conn: ConnId, generation: u64, input: &OwnedFd) -> Option<Report> {
        let event = match rustix::io::read(input, &mut self.buf) {
            Ok(0) => IoEvent::Eof,
            Ok(n) => {
                return Some(report(
                    conn,
                    generation,
                    IoEvent::Data(self.buf[..n].to_vec()),
                ));
            }
            Err(Errno::AGAIN | Errno::INTR) => return None,
            Err(e) => IoEvent::Failed(TransportErrorKind::Read, e.into()),
        };
        let mut chans = self.set.lock();
        if let Some(chan) = chans
            .iter_mut()
            .find(|c| c.conn == conn && c.generation == generation)
        {
            chan.input = None;
        }
        Some(report(conn, generation, event))
    }
}

impl PollSet {
    /// The leader found room on `conn`'s output: writes what waits, and reports it.
    fn flush(&self, conn: ConnId, generation: u64, output: &OwnedFd) -> Option<Report> {
        let mut chans = self.lock();
        let chan = chans
            .iter_mut()
            .find(|c| c.conn == conn && c.generation == generation)?;
        chan.flush(output);
        if let Some(e) = chan.failed.take() {
            let event = IoEvent::Failed(TransportErrorKind::Write, e);
            return Some(report(conn, generation, event));
        }
        let written = mem::take(&mut chan.written);
        Some(report(conn, generation, IoEvent::Written(written)))
    }
}

/// Points `fds` (from the second entry of the poll on) at `ready`'s descriptors, in order.
fn fill<'a>(fds: &mut [PollFd<'a>], ready: &'a [Ready]) {
    let mut slots = fds.iter_mut();
    for r in ready {
        for (fd, flags) in [(&r.input, PollFlags::IN), (&r.output, PollFlags::OUT)] {
            // A slot only for a descriptor that is there, in the order `poll` reads back.
            if let Some(fd) = fd
                && let Some(slot) = slots.next()
            {
                *slot = PollFd::new(&**fd, flags);
            }
        }
    }
}

/// Polls `fds` and records which of them, past the first (the bell), are ready; false
/// when none is.
fn poll_into(
    fds: &mut [PollFd<'_>],
    timeout: Option<&Timespec>,
    flags: &mut Vec<bool>,
) -> io::Result<bool> {
    match poll(fds, timeout) {
        Ok(0) | Err(Errno::INTR) => Ok(false),
        Ok(_) => {
            flags.extend(fds.iter().skip(1).map(|fd| !fd.revents().is_empty()));
            Ok(true)
        }
        Err(e) => Err(e.into()),
    }
}

fn report(conn: ConnId, generation: u64, event: IoEvent) -> Report {
    Report {
        conn,
        generation,
        event,
    }
}

/// Writes `rest` to `output` blocking, then lets go of it (closing it once the leader
/// dropped its copy): what a closing stdio connection still owed the server. Errors end
/// it.
pub(crate) fn finish_writing(output: &OwnedFd, rest: &[u8]) {
    if rustix::io::ioctl_fionbio(output, false).is_err() {
        return;
    }
    let mut at = 0;
    while at < rest.len() {
        match rustix::io::write(output, &rest[at..]) {
            Ok(n) => at += n,
            Err(Errno::INTR) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// `n` channels over socket pairs, only the last one with bytes to read and only the
    /// middle one with output waiting: every descriptor present is polled, in order,
    /// whether the array or the allocated list holds them.
    fn poll_sees_the_last_of(n: usize) {
        let pairs: Vec<(UnixStream, UnixStream)> =
            (0..n).map(|_| UnixStream::pair().expect("pair")).collect();
        let fd = |s: &UnixStream| Some(Arc::new(OwnedFd::from(s.try_clone().expect("clone"))));
        let mut ready: Vec<Ready> = pairs
            .iter()
            .enumerate()
            .map(|(i, (ours, _))| Ready {
                conn: ConnId::STDIO,
                generation: 0,
                input: fd(ours),
                output: if i == n / 2 { fd(ours) } else { None },
                readable: false,
                writable: false,
            })
            .collect();
        (&pairs[n - 1].1).write_all(b"x").expect("write");
        let (_set, _bell, mut inlet) = PollSet::channel().expect("poll set");
        let polled = inlet.polled.as_mut().expect("polled");
        assert!(
            polled
                .poll(&mut ready, Some(Duration::from_secs(5)))
                .expect("poll")
        );
        let readable: Vec<bool> = ready.iter().map(|r| r.readable).collect();
        let writable: Vec<bool> = ready.iter().map(|r| r.writable).collect();
        let mut expect_readable = vec![false; n];
        expect_readable[n - 1] = true;
        let mut expect_writable = vec![false; n];
        expect_writable[n / 2] = true;
        assert_eq!(readable, expect_readable, "{n} channels");
        assert_eq!(writable, expect_writable, "{n} channels");
    }

    #[test]
    fn every_descriptor_present_is_polled_in_order() {
        // Three channels fit the array; six need the list.
        poll_sees_the_last_of(3);
        poll_sees_the_last_of(6);
    }
}
