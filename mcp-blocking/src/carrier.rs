//! What carries the machine's bytes ([`Carrier`]: a child process, or HTTP
//! connections), the helper threads that move them, and the one channel they report on.
//!
//! Every byte channel the machine knows (the stdio server's stdin and stdout, each HTTP
//! connection) has a reader thread that reads until end of input and a writer thread that
//! writes what the driver hands it, in order. They report to the driver's thread over one
//! bounded channel ([`REPORT_QUEUE`] reports of at most [`READ_CHUNK`] bytes): a server
//! that floods us blocks on its own socket or pipe instead of growing our memory.
//!
//! Each report names its channel ([`ConnId`]) and a generation: a stdio server restarted
//! after the era probe is a new generation of [`ConnId::STDIO`], so that anything the old
//! process's threads still say is told apart and dropped.
//!
//! On Unix a child's stdio has no helper threads for its stdin and stdout: the waiting
//! thread polls the pipes itself (see the `poll_set` module), and the [`Inlet`] it waits on
//! hides which of the two it is. The [`Bell`] wakes that thread either way.

use std::io::{self, Read, Write};
#[cfg(unix)]
use std::sync::Arc;
#[cfg(not(unix))]
use std::sync::mpsc;
use std::sync::mpsc::{Receiver, SyncSender};
use std::thread;
use std::time::Duration;

use mcp_io::wire_log::ChannelLog;
use mcp_io::{Flavour, Shutdown, TransportErrorKind, WireLog};
use mcp_proto::client::{ConnId, Origin, TransportFailure};

/// Bytes read in one go.
pub(crate) const READ_CHUNK: usize = 64 * 1024;
/// Reports waiting for the driver, all channels together, before the threads block.
pub(crate) const REPORT_QUEUE: usize = 64;

/// What carries the machine's bytes: a child process ([`crate::process::Stdio`]) or
/// HTTP connections ([`crate::http::HttpConns`]). Each does what a
/// [`Transmit`](mcp_proto::client::Transmit) says, and its threads report on the
/// driver's channel. `F` is the flavour of the wire log it writes to.
pub(crate) trait Carrier<F: Flavour>: Send {
    /// Writes `bytes` on `conn`, after what was written before.
    fn write(&mut self, conn: ConnId, bytes: Vec<u8>, log: &mut Option<WireLog<F>>);
    /// Closes `conn`; for stdio, stops the server within `grace`.
    fn close(&mut self, conn: ConnId, grace: Duration, log: &mut Option<WireLog<F>>);
    /// Whether a report comes from a channel that is still open (and current).
    fn is_current(&self, conn: ConnId, generation: u64) -> bool;
    /// Whether no channel is open.
    fn is_idle(&self) -> bool;
    /// The wire log of `conn`, while it is open.
    fn channel_log(&mut self, conn: ConnId) -> Option<&mut ChannelLog>;
    /// A failure one of the threads saw at `step`, as the machine takes it, with the
    /// error behind it as its `source`.
    fn failure(&self, step: TransportErrorKind, error: io::Error) -> TransportFailure;
    /// Closes everything still open; how the server process ended, for stdio.
    fn release(&mut self, grace: Duration, log: &mut Option<WireLog<F>>) -> Shutdown;

    /// Opens `conn` (HTTP).
    fn connect(&mut self, _: ConnId, _: &Origin, _: &Bell) -> Result<(), TransportFailure> {
        Ok(())
    }
    /// Bytes written since last asked, of what [`Carrier::write`] was handed, and the
    /// channel they were written on; `None` when nothing was (stdio on Unix writes with
    /// no thread, so its writes are not reported on the channel).
    fn take_written(&mut self) -> Option<(ConnId, usize)> {
        None
    }
    /// Starts the server again (stdio).
    fn respawn(&mut self, _: &Bell) -> Result<(), TransportFailure> {
        Ok(())
    }
    /// The polled channels, when [`Carrier::write`] queued bytes there that the thread
    /// holding the driver's lock writes once it lets go of it
    /// ([`PollSet::write_due`](crate::poll_set::PollSet::write_due)).
    #[cfg(unix)]
    fn due_writes(&self) -> Option<&Arc<crate::poll_set::PollSet>> {
        None
    }
}

/// A channel for the threads' reports: the [`Bell`] (and the senders the threads get
/// from it) and the [`Inlet`] the driver waits on. On Unix the poll set makes them.
#[cfg(not(unix))]
pub(crate) fn channel() -> (Bell, Inlet) {
    let (tx, rx) = mpsc::sync_channel(REPORT_QUEUE);
    let bell = Bell {
        tx,
        #[cfg(unix)]
        ring: None,
    };
    let inlet = Inlet {
        rx,
        #[cfg(unix)]
        polled: None,
    };
    (bell, inlet)
}

/// What wakes the thread waiting on the [`Inlet`]: the reports' sending end, and on Unix,
/// when that thread polls pipes, a socket it listens to as well.
#[derive(Debug, Clone)]
pub(crate) struct Bell {
    pub(crate) tx: SyncSender<Report>,
    #[cfg(unix)]
    pub(crate) ring: Option<std::sync::Arc<std::os::unix::net::UnixStream>>,
}

impl Bell {
    /// Wakes the waiting thread with a report that belongs to no channel
    /// ([`IoEvent::Wake`], [`IoEvent::Nudge`]). A full queue wakes it anyway, and so does
    /// a full socket.
    pub(crate) fn ring(&self, event: IoEvent) {
        let _ = self.tx.try_send(Report {
            conn: ConnId::STDIO,
            generation: 0,
            event,
        });
        self.knock();
    }

    /// Wakes a waiting thread that polls (one that waits on the channel alone is woken
    /// by the report sent before).
    pub(crate) fn knock(&self) {
        #[cfg(unix)]
        if let Some(ring) = &self.ring {
            let _ = (&**ring).write(&[1]);
        }
    }
}

/// Where the driver's waiting thread learns what happened: the reports of the helper
/// threads, and on Unix the child's pipes it polls itself.
#[derive(Debug)]
pub(crate) struct Inlet {
    pub(crate) rx: Receiver<Report>,
    #[cfg(unix)]
    pub(crate) polled: Option<crate::poll_set::Polled>,
}

impl Inlet {
    /// The next report, waiting at most `wait` (`None`: as long as it takes); `None` when
    /// the time ran out (or the wait was interrupted: the caller looks again).
    pub(crate) fn recv(&mut self, wait: Option<Duration>) -> Option<Report> {
        #[cfg(unix)]
        if let Some(polled) = &mut self.polled {
            return polled.recv(&self.rx, wait);
        }
        match wait {
            None => self.rx.recv().ok(),
            Some(wait) => self.rx.recv_timeout(wait).ok(),
        }
    }

    /// The bytes an [`IoEvent::Polled`] names: read into the inlet's own buffer, which
    /// the next wait reads into again. Empty when there is no such buffer.
    #[cfg(unix)]
    pub(crate) fn polled_bytes(&self, n: usize) -> &[u8] {
        self.polled
            .as_ref()
            .and_then(|p| p.read_bytes(n))
            .unwrap_or_default()
    }
}

/// What a helper thread saw.
#[derive(Debug)]
pub(crate) enum IoEvent {
    /// The connection is open (HTTP).
    Connected,
    /// Bytes read.
    Data(Vec<u8>),
    /// The first `n` bytes of the inlet's read buffer: a polled channel's read, made by
    /// the waiting thread itself, fed from where it was read (see [`Inlet::polled_bytes`]).
    #[cfg(unix)]
    Polled(usize),
    /// Bytes the peer took, of what the driver handed the writer.
    Written(usize),
    /// End of input.
    Eof,
    /// The stdio server's process exited (its stdout may still be open). Unix only:
    /// elsewhere its exit is looked at once its stdout ended.
    #[cfg_attr(not(unix), allow(dead_code))]
    Exited,
    /// Connecting, reading or writing failed.
    Failed(TransportErrorKind, io::Error),
    /// Nothing from a channel: a [`Canceller`](crate::Canceller) wakes the driver.
    Wake,
    /// Nothing from a channel: a thread changed the machine's deadline while another
    /// one waited on the channel.
    Nudge,
}

/// One report on the channel.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) conn: ConnId,
    pub(crate) generation: u64,
    pub(crate) event: IoEvent,
}

/// The sending end of the channel, for one byte channel.
#[derive(Debug, Clone)]
pub(crate) struct Reporter {
    bell: Bell,
    conn: ConnId,
    generation: u64,
}

impl Reporter {
    pub(crate) fn new(bell: &Bell, conn: ConnId, generation: u64) -> Self {
        Reporter {
            bell: bell.clone(),
            conn,
            generation,
        }
    }

    /// False once the driver is gone.
    pub(crate) fn send(&self, event: IoEvent) -> bool {
        let report = Report {
            conn: self.conn,
            generation: self.generation,
            event,
        };
        let sent = self.bell.tx.send(report).is_ok();
        self.bell.knock();
        sent
    }
}

/// Starts a named thread.
pub(crate) fn spawn(
    name: &str,
    f: impl FnOnce() + Send + 'static,
) -> io::Result<thread::JoinHandle<()>> {
    thread::Builder::new().name(name.into()).spawn(f)
}

/// Reads `input` to its end, reporting every chunk, then the end or the failure.
pub(crate) fn read_loop(mut input: impl Read, report: &Reporter) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let event = match input.read(&mut buf) {
            Ok(0) => IoEvent::Eof,
            Ok(n) => IoEvent::Data(buf[..n].to_vec()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => IoEvent::Failed(TransportErrorKind::Read, e),
        };
        let last = !matches!(event, IoEvent::Data(_));
        if !report.send(event) || last {
            return;
        }
    }
}

/// Writes every buffer from `rx` to `output`, in order, until the driver drops the
/// sending end; a failure is reported and ends the loop. Dropping `output` at the end
/// closes it (a child's stdin reaches end of file that way).
pub(crate) fn write_loop(mut output: impl Write, rx: &Receiver<Vec<u8>>, report: &Reporter) {
    for bytes in rx {
        if let Err(e) = output.write_all(&bytes).and_then(|()| output.flush()) {
            report.send(IoEvent::Failed(TransportErrorKind::Write, e));
            return;
        }
        if !report.send(IoEvent::Written(bytes.len())) {
            return;
        }
    }
}
