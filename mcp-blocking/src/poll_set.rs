//! Byte channels without helper threads (Unix): a stdio server's pipes and plain TCP
//! connections, polled by the thread that waits for the machine.
//!
//! # Theory of operation
//!
//! A thread hand-off costs more than a small round trip itself, so on Unix the driver's
//! waiting thread (the leader, see the `driver` module) moves the bytes of its channels
//! itself, all of them non-blocking:
//!
//! * **Writing.** Whoever executes a `Transmit::Write` (under the driver's lock) puts
//!   its bytes in the channel's outbox, and writes them once it has released that lock
//!   ([`PollSet::write_due`], from the lock guard's drop): several threads with calls in
//!   flight never queue on the driver's lock behind a system call. One thread writes at
//!   a time (the writer lock, taken with `try_lock`); one that finds it taken leaves its
//!   bytes to the thread holding it, which looks at the outboxes again after letting go,
//!   so bytes written by several threads leave in one write and in the order they were
//!   queued. A write goes as far as the pipe or socket takes it; when it does not take
//!   everything, the channel is *stalled* and the leader is rung: from then on it polls
//!   that channel for room and writes the rest. A write never blocks, so a peer that
//!   stops reading never holds a caller past its deadline, and it never deadlocks against
//!   a stdio server blocked on a full stdout. Bytes that reach a stdio server's stdin are
//!   counted for the machine (`handle_written`), which bounds the outbox.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Duration;

use mcp_io::TransportErrorKind;
use mcp_proto::client::ConnId;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;

use crate::carrier::{Bell, Inlet, IoEvent, READ_CHUNK, REPORT_QUEUE, Report};

/// The longest single poll: some systems refuse timeouts past `c_int::MAX` milliseconds.
const LONGEST_POLL: Duration = Duration::from_secs(24 * 3600);
/// Descriptors polled without allocating: the bell and two channels in both directions.
const INLINE_FDS: usize = 5;

/// The polled channels, shared by the carrier (queues writes under the driver's lock, then
/// writes them without it), the threads that open connections, and the leader (polls,
/// reads and writes to stalled channels, unlocked).
#[derive(Debug)]
pub(crate) struct PollSet {
    state: Mutex<Vec<Chan>>,
    /// Held by the one thread writing outboxes (outside `state`'s lock); taken before
    /// `state` by whoever takes both.
    writer: Mutex<()>,
    /// Bytes were queued in an outbox that is not stalled since a writer last looked.
    due: AtomicBool,
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
    /// The output did not take everything: the leader polls it for room.
    stalled: bool,
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
            writer: Mutex::default(),
            due: AtomicBool::new(false),
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
            stalled: false,
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

    /// Queues `bytes` for `conn` after what waits already; [`PollSet::write_due`] (or
    /// the leader, while the channel is stalled) writes them.
    pub(crate) fn send(&self, conn: ConnId, bytes: Vec<u8>) {
        let mut chans = self.lock();
        let Some(chan) = chans.iter_mut().find(|c| c.conn == conn) else {
            return;
        };
        if chan.output.is_none() {
            return;
        }
        if chan.outbox.is_empty() {
            chan.outbox = bytes;
        } else {
            chan.outbox.extend_from_slice(&bytes);
        }
        if !chan.stalled {
            self.due.store(true, Ordering::Release);
        }
    }

    /// Whether bytes wait for [`PollSet::write_due`].
    pub(crate) fn is_due(&self) -> bool {
        self.due.load(Ordering::Acquire)
    }

    /// Writes what waits in the outboxes that are not stalled, unless another thread is
    /// writing (it then writes these bytes too). Called with no other lock held.
    pub(crate) fn write_due(&self) {
        while self.is_due() {
            let _writer = match self.writer.try_lock() {
                Ok(w) => w,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                // Its holder looks at `due` again after letting go.
                Err(TryLockError::WouldBlock) => return,
            };
            self.due.store(false, Ordering::Release);
            let mut ring = false;
            loop {
                let job = {
                    let mut chans = self.lock();
                    chans.iter_mut().find_map(|c| {
                        let output = c.output.clone().filter(|_| !c.stalled)?;
                        (!c.outbox.is_empty())
                            .then(|| (c.conn, c.generation, output, mem::take(&mut c.outbox)))
                    })
                };
                let Some((conn, generation, output, bytes)) = job else {
                    break;
                };
                ring |= self.write_out(conn, generation, &output, bytes);
            }
            if ring {
                self.bell.ring(IoEvent::Nudge);
            }
        }
    }

    /// Writes `bytes` (taken from the outbox of `conn`, generation `generation`) to
    /// `output` as far as it takes them, under the writer lock; what it did not take goes
    /// back in front of the outbox, which is then stalled. True when the leader must
    /// look (the channel stalled or failed).
    fn write_out(
        &self,
        conn: ConnId,
        generation: u64,
        output: &OwnedFd,
        mut bytes: Vec<u8>,
    ) -> bool {
        let (at, failed) = write_some(output, &bytes);
        let mut chans = self.lock();
        // Detaching takes the writer lock: the channel is still there.
        let Some(chan) = chans
            .iter_mut()
            .find(|c| c.conn == conn && c.generation == generation)
        else {
            return false;
        };
        chan.written += at;
        if let Some(e) = failed {
            chan.failed = Some(e);
            chan.output = None;
            chan.outbox = Vec::new();
            return true;
        }
        if at < bytes.len() {
            bytes.drain(..at);
            bytes.extend_from_slice(&chan.outbox);
            chan.outbox = bytes;
            chan.stalled = true;
            return true;
        }
        false
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
        // A write in progress puts back what the output did not take first.
        let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
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

/// Writes `bytes` to `output` until it takes no more: how many it took, and the error
/// that ended it, when one did.
fn write_some(output: &OwnedFd, bytes: &[u8]) -> (usize, Option<io::Error>) {
    let mut at = 0;
    while at < bytes.len() {
        match rustix::io::write(output, &bytes[at..]) {
            Ok(n) => at += n,
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => break,
            Err(e) => return (at, Some(e.into())),
        }
    }
    (at, None)
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
                    output: chan.stalled.then(|| chan.output.clone()).flatten(),
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
            if r.writable && r.output.is_some() {
                return self.set.flush(r.conn, r.generation);
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

    /// The first `n` bytes of the read buffer, which the last [`IoEvent::Polled`]
    /// report named.
    pub(crate) fn read_bytes(&self, n: usize) -> Option<&[u8]> {
        self.buf.get(..n)
    }

    /// One read of `conn`'s input; its end (or failure) is reported once.
    fn read(&mut self, conn: ConnId, generation: u64, input: &OwnedFd) -> Option<Report> {
        let event = match rustix::io::read(input, &mut self.buf) {
            Ok(0) => IoEvent::Eof,
            // Fed from here by the driver before the next wait reads again: the bytes
            // are neither copied nor allocated per read, on whichever thread leads.
            Ok(n) => return Some(report(conn, generation, IoEvent::Polled(n))),
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
    ///
    /// The channel stops being stalled and its outbox becomes due, so that it is written
    /// the way callers' bytes are ([`PollSet::write_due`]); should another thread hold the
    /// writer lock just then, that thread writes it.
    fn flush(&self, conn: ConnId, generation: u64) -> Option<Report> {
        {
            let mut chans = self.lock();
            let chan = chans
                .iter_mut()
                .find(|c| c.conn == conn && c.generation == generation)?;
            chan.stalled = false;
            self.due.store(true, Ordering::Release);
        }
        self.write_due();
        let mut chans = self.lock();
        let chan = chans
            .iter_mut()
            .find(|c| c.conn == conn && c.generation == generation)?;
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

    /// A poll set with one channel over a socket pair: the set, its inlet, and the
    /// server's end (blocking).
    fn one_channel() -> (Arc<PollSet>, Inlet, UnixStream) {
        let (ours, theirs) = UnixStream::pair().expect("pair");
        let (set, _bell, inlet) = PollSet::channel().expect("poll set");
        let fd = OwnedFd::from(ours);
        set.attach(ConnId::STDIO, 0, fd, None).expect("attach");
        (set, inlet, theirs)
    }

    /// A read of a polled channel is fed from the inlet's own buffer: the report names
    /// how many bytes it holds (no copy of them is allocated per read, on whichever thread
    /// leads), and the next read reuses the buffer.
    #[test]
    fn a_polled_read_reports_the_bytes_left_in_the_inlets_buffer() {
        let (_set, mut inlet, mut theirs) = one_channel();
        for sent in [&b"first answer\n"[..], b"second\n"] {
            io::Write::write_all(&mut theirs, sent).expect("write");
            // The attach rang the bell first (the leader polls the new channel).
            let report = std::iter::from_fn(|| inlet.recv(Some(Duration::from_secs(5))))
                .find(|r| !matches!(r.event, IoEvent::Nudge))
                .expect("a report");
            let IoEvent::Polled(n) = report.event else {
                panic!("{:?}", report.event);
            };
            assert_eq!((report.conn, report.generation), (ConnId::STDIO, 0));
            assert_eq!(inlet.polled_bytes(n), sent);
        }
        // Past what was read: nothing.
        assert!(inlet.polled_bytes(READ_CHUNK + 1).is_empty());
    }

    fn read_exactly(from: &mut UnixStream, n: usize) -> Vec<u8> {
        let mut got = vec![0; n];
        io::Read::read_exact(from, &mut got).expect("read");
        got
    }

    fn nothing_to_read(from: &UnixStream) -> bool {
        from.set_nonblocking(true).expect("nonblocking");
        let mut probe = [0u8; 1];
        let empty = matches!(
            io::Read::read(&mut &*from, &mut probe),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock
        );
        from.set_nonblocking(false).expect("blocking");
        empty
    }

    #[test]
    fn queued_bytes_are_written_by_write_due_not_by_send() {
        let (set, _inlet, mut theirs) = one_channel();
        set.send(ConnId::STDIO, b"one\n".to_vec());
        set.send(ConnId::STDIO, b"two\n".to_vec());
        assert!(nothing_to_read(&theirs), "send only queues");
        assert!(set.is_due());
        set.write_due();
        assert!(!set.is_due());
        assert_eq!(read_exactly(&mut theirs, 8), b"one\ntwo\n");
        assert_eq!(set.take_written(ConnId::STDIO), 8);
    }

    #[test]
    fn bytes_queued_while_another_thread_writes_are_left_to_it() {
        let (set, _inlet, mut theirs) = one_channel();
        let holder = set.writer.lock().expect("writer");
        set.send(ConnId::STDIO, b"first\n".to_vec());
        set.write_due();
        assert!(
            nothing_to_read(&theirs),
            "the writer lock's holder writes them"
        );
        assert!(set.is_due(), "still due for the holder");
        drop(holder);
        // What the holder does after letting go: it looks again.
        set.write_due();
        assert_eq!(read_exactly(&mut theirs, 6), b"first\n");
    }

    #[test]
    fn a_full_output_stalls_the_channel_for_the_leader_and_keeps_the_order() {
        let (set, mut inlet, mut theirs) = one_channel();
        let big: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
        set.send(ConnId::STDIO, big.clone());
        set.write_due();
        let stalled = {
            let chans = set.lock();
            (chans[0].stalled, chans[0].outbox.len())
        };
        assert!(
            stalled.0 && stalled.1 > 0,
            "the socket took only part of 4 MiB"
        );
        // Queued while stalled: not due, the leader writes it once there is room.
        set.send(ConnId::STDIO, b"tail".to_vec());
        assert!(!set.is_due());
        let reader = std::thread::spawn(move || read_exactly(&mut theirs, (4 << 20) + 4));
        let polled = inlet.polled.as_mut().expect("polled");
        let mut written = set.take_written(ConnId::STDIO);
        // The leader's waits: a wait that finds nothing ready ends after 50 ms.
        for _ in 0..10_000 {
            if written == (4 << 20) + 4 {
                break;
            }
            if let Some(Report {
                event: IoEvent::Written(n),
                ..
            }) = polled.recv(&inlet.rx, Some(Duration::from_millis(50)))
            {
                written += n;
            }
        }
        assert_eq!(written, (4 << 20) + 4, "everything reached the output");
        let got = reader.join().expect("reader");
        assert_eq!(&got[..4 << 20], &big[..]);
        assert_eq!(&got[4 << 20..], b"tail");
        assert!(!set.lock()[0].stalled);
    }

    #[test]
    fn the_leader_writes_a_stalled_channel_with_what_was_queued_behind_it() {
        let (set, _inlet, mut theirs) = one_channel();
        {
            let mut chans = set.lock();
            chans[0].stalled = true;
            chans[0].outbox = b"head".to_vec();
        }
        set.send(ConnId::STDIO, b"tail".to_vec());
        assert!(!set.is_due(), "queued behind a stalled channel");
        set.write_due();
        assert!(
            nothing_to_read(&theirs),
            "a stalled channel waits for the leader"
        );
        // The leader found room.
        let report = set.flush(ConnId::STDIO, 0).expect("a report");
        assert!(
            matches!(report.event, IoEvent::Written(8)),
            "{:?}",
            report.event
        );
        assert_eq!(read_exactly(&mut theirs, 8), b"headtail");
        assert!(!set.lock()[0].stalled);
    }

    /// Four threads queue lines as callers do (under a lock standing for the driver's,
    /// recording the order) and write them after letting go of it, while a leader thread
    /// writes to the stalled channel and the peer reads slowly: the peer gets every line
    /// once, whole, in the order they were queued.
    #[test]
    fn callers_and_the_leader_writing_at_once_keep_every_line_whole_and_in_order() {
        use std::sync::atomic::AtomicBool;
        const THREADS: usize = 4;
        const LINES: usize = 1500;
        let (set, mut inlet, mut theirs) = one_channel();
        let queued = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let leader = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let polled = inlet.polled.as_mut().expect("polled");
                while !stop.load(Ordering::SeqCst) {
                    let _ = polled.recv(&inlet.rx, Some(Duration::from_millis(5)));
                }
            })
        };
        let line = |t: usize, i: usize| {
            let mut line = format!("{t} {i} ").into_bytes();
            line.resize(line.len() + 50 + (i * 37 + t * 11) % 900, b'a' + t as u8);
            line.push(b'\n');
            line
        };
        let total: usize = (0..THREADS)
            .flat_map(|t| (0..LINES).map(move |i| line(t, i).len()))
            .sum();
        let callers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (set, queued) = (Arc::clone(&set), Arc::clone(&queued));
                std::thread::spawn(move || {
                    for i in 0..LINES {
                        {
                            let mut order = queued.lock().expect("order");
                            set.send(ConnId::STDIO, line(t, i));
                            order.push(line(t, i));
                        }
                        set.write_due();
                    }
                })
            })
            .collect();
        theirs
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut got = Vec::with_capacity(total);
        let mut buf = [0u8; 4096];
        while got.len() < total {
            let n = io::Read::read(&mut theirs, &mut buf).expect("every byte in time");
            assert!(n > 0, "the channel ended early");
            got.extend_from_slice(&buf[..n]);
        }
        for caller in callers {
            caller.join().expect("caller");
        }
        stop.store(true, Ordering::SeqCst);
        leader.join().expect("leader");
        let expected: Vec<u8> = queued.lock().expect("order").concat();
        assert_eq!(got.len(), expected.len());
        assert!(
            got == expected,
            "the bytes differ from the lines in the order queued"
        );
    }

    #[test]
    fn detaching_returns_what_was_not_written_in_order() {
        let (set, _inlet, _theirs) = one_channel();
        set.send(ConnId::STDIO, b"a".to_vec());
        set.send(ConnId::STDIO, b"b".to_vec());
        let (_, rest) = set.detach(ConnId::STDIO, 0).expect("attached");
        assert_eq!(rest, b"ab");
    }

    #[test]
    fn every_descriptor_present_is_polled_in_order() {
        // Three channels fit the array; six need the list.
        poll_sees_the_last_of(3);
        poll_sees_the_last_of(6);
    }
}
