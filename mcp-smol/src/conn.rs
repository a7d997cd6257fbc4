//! One byte channel of the driver: an HTTP connection (being opened, or open) or the
//! stdio server's stdin and stdout; the bytes still to write on it, its TLS session when
//! the driver encrypts, its wire log, and its [`Readiness`].

use std::any::Any;
use std::borrow::Cow;
use std::io;
use std::net::TcpStream;
use std::pin::Pin;
use std::task::{Context, Poll};

use async_io::Async;
use async_process::ChildStdin;
use futures_lite::{AsyncRead, AsyncWrite};
use mcp_io::tls::{Layer, Received};
use mcp_io::wire_log::{ChannelLog, Sink};

use crate::http::{AsyncStream, Opening};
use crate::stdio::Stdout;
use crate::wake::Readiness;

/// A channel: being opened (with the TLS session to run over it, and the readiness it
/// keeps once open), or open.
// One per connection; on Windows, larger stream handles make the variants' sizes differ more.
#[cfg_attr(windows, allow(clippy::large_enum_variant))]
pub(crate) enum Conn {
    Opening(Opening, Layer, Readiness),
    Open(Open),
}

impl Conn {
    /// Whether a poll of the channel may do something: it was woken (or stopped short of
    /// `Pending`), or bytes are queued on it.
    pub(crate) fn may_progress(&self) -> bool {
        match self {
            Conn::Opening(_, _, ready) => ready.is_set(),
            Conn::Open(open) => open.wants_write || open.ready.is_set(),
        }
    }

    /// The channel is gone: its wire log is finished, and an open one's wire handed back.
    pub(crate) fn close<L: ?Sized + Sink>(self, wire_log: &mut Option<Box<L>>) -> Option<Wire> {
        match self {
            Conn::Open(mut open) => {
                open.log.finish(wire_log);
                Some(open.wire)
            }
            Conn::Opening(..) => None,
        }
    }
}

/// The bytes of an open channel.
pub(crate) enum Wire {
    /// A connection to the HTTP endpoint (TCP, TLS, or the connector's own stream).
    Net(Box<dyn AsyncStream>),
    /// The stdio server: its stdin is written, its stdout read.
    Pipes {
        stdin: Option<ChildStdin>,
        stdout: Stdout,
    },
}

impl AsyncRead for Wire {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Wire::Net(s) => Pin::new(s).poll_read(cx, buf),
            Wire::Pipes { stdout, .. } => Pin::new(stdout).poll_read(cx, buf),
        }
    }
}

impl Wire {
    /// After a read that did not fill its buffer: `Pending` when the channel is known to
    /// have nothing more now (`cx` is woken when it has), `Ready` when reading again may
    /// find bytes. Where it cannot tell (a stream of a connector's own, a pipe off Unix),
    /// `Ready`: the driver reads on until `Pending`.
    pub(crate) fn poll_more(&self, cx: &mut Context<'_>) -> Poll<()> {
        match self {
            #[cfg(unix)]
            Wire::Pipes { stdout, .. } => poll_readable_anew(stdout, cx),
            #[cfg(not(unix))]
            Wire::Pipes { .. } => Poll::Ready(()),
            // Only a plain async-io TCP stream can tell.
            Wire::Net(stream) => match (&**stream as &dyn Any).downcast_ref::<Async<TcpStream>>() {
                Some(tcp) => poll_readable_anew(tcp, cx),
                None => Poll::Ready(()),
            },
        }
    }

    fn writer(&mut self) -> io::Result<Pin<&mut (dyn AsyncWrite + Send + Unpin)>> {
        match self {
            Wire::Net(s) => Ok(Pin::new(s)),
            Wire::Pipes { stdin: Some(s), .. } => Ok(Pin::new(s)),
            Wire::Pipes { stdin: None, .. } => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }
}

/// After a read of `source` that did not fill its buffer: `Pending` when no readiness
/// event came since the one that led to the read (`cx` is then woken by the next), else
/// `Ready`. async-io answers the first poll after an event as ready again, as it cannot
/// know that the read which followed took everything: a second `Ready` is a newer event.
/// An error is left for the next read to report.
pub(crate) fn poll_readable_anew<T>(source: &Async<T>, cx: &mut Context<'_>) -> Poll<()> {
    for _ in 0..2 {
        if source.poll_readable(cx).is_pending() {
            return Poll::Pending;
        }
    }
    Poll::Ready(())
}

/// The most capacity a channel's write buffer keeps once everything in it is written:
/// small messages (and TLS records) reuse it.
const KEPT_OUT: usize = 16 * 1024;

/// An open channel.
pub(crate) struct Open {
    pub(crate) wire: Wire,
    /// Whether a wake-up came for the channel, and the waker to poll it with.
    pub(crate) ready: Readiness,
    /// Bytes were queued since the last write attempt: the channel is written even if
    /// nothing woke it.
    pub(crate) wants_write: bool,
    /// TLS over `wire`, when the driver does it: what is sent is encrypted into `out`,
    /// and the driver decrypts what it reads.
    pub(crate) tls: Layer,
    /// Bytes to write; `out[written..]` is not written yet.
    out: Vec<u8>,
    written: usize,
    /// Bytes written since [`Open::take_written`] last asked.
    newly_written: usize,
    flushed: bool,
    /// A write failed: nothing more is written.
    write_failed: bool,
    /// What it sent and received, for the wire log.
    pub(crate) log: ChannelLog,
}

impl Open {
    /// A channel over `wire` (TLS over it when `tls` has a session: its handshake
    /// starts), its wire log hiding `redact_headers` (over HTTP) besides the built-in
    /// secrets. It is marked `ready`: nothing has been read from it yet.
    pub(crate) fn new(
        wire: Wire,
        mut tls: Layer,
        redact_headers: &[String],
        ready: Readiness,
    ) -> Open {
        let log = match wire {
            Wire::Net(_) => ChannelLog::http_redacting(redact_headers),
            Wire::Pipes { .. } => ChannelLog::lines(),
        };
        let mut out = Vec::new();
        tls.take_records(&mut out);
        ready.set();
        Open {
            wire,
            ready,
            wants_write: !out.is_empty(),
            tls,
            flushed: out.is_empty(),
            out,
            written: 0,
            newly_written: 0,
            write_failed: false,
            log,
        }
    }

    /// Queues `bytes` to be written, after what is queued already. A buffer the driver
    /// gives up (`Cow::Owned`) becomes the write buffer when nothing else waits (and
    /// there is no TLS), instead of being copied into it.
    pub(crate) fn send<L: ?Sized + Sink>(
        &mut self,
        wire_log: &mut Option<Box<L>>,
        bytes: Cow<'_, [u8]>,
    ) {
        self.log.sent(wire_log, &bytes);
        if !self.write_failed {
            self.compact();
            match bytes {
                Cow::Borrowed(bytes) => self.tls.send(bytes, &mut self.out),
                Cow::Owned(bytes) => self.tls.send_owned(bytes, &mut self.out),
            }
            self.flushed = false;
            self.wants_write = true;
        }
    }

    /// Drops what was written already from the front of the write buffer. Without it,
    /// a buffer that never drains completely (calls keep coming while the last ones are
    /// being written: several large calls in flight) grew by every message sent, to tens
    /// of MiB.
    fn compact(&mut self) {
        if self.written > 0 {
            self.out.drain(..self.written);
            self.written = 0;
        }
    }

    /// What `read`, bytes read on the wire, carried ([`Layer::receive`]; what TLS
    /// answers is queued to be written), with the wire log to log it in.
    pub(crate) fn receive<'a>(
        &'a mut self,
        read: &'a [u8],
    ) -> io::Result<(Received<'a>, &'a mut ChannelLog)> {
        self.compact();
        let queued = self.out.len();
        let received = self.tls.receive(read, &mut self.out)?;
        if self.out.len() > queued {
            self.flushed = false;
            self.wants_write = true;
        }
        Ok((received, &mut self.log))
    }

    /// Writes (and then flushes) what is queued, as far as the channel takes it now;
    /// when it takes no more, the channel's waker is woken once it may. True on
    /// progress. After an error nothing more is written (a stdio server's stdin is
    /// closed), and reading goes on.
    pub(crate) fn poll_write(&mut self) -> io::Result<bool> {
        self.wants_write = false;
        if self.write_failed {
            return Ok(false);
        }
        let written = self.write();
        if written.is_err() {
            self.write_failed = true;
            self.out = Vec::new();
            self.written = 0;
            if let Wire::Pipes { stdin, .. } = &mut self.wire {
                *stdin = None;
            }
        }
        written
    }

    /// Bytes written since the last call, for [`Client::handle_written`](mcp_proto::client::Client::handle_written).
    pub(crate) fn take_written(&mut self) -> usize {
        std::mem::take(&mut self.newly_written)
    }

    fn write(&mut self) -> io::Result<bool> {
        let cx = &mut self.ready.context();
        let mut progress = false;
        while self.written < self.out.len() {
            match self
                .wire
                .writer()?
                .poll_write(cx, &self.out[self.written..])
            {
                Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => {
                    self.written += n;
                    self.newly_written += n;
                    progress = true;
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => return Ok(progress),
            }
        }
        self.out.clear();
        // A large message does not stay once written: the next one mostly comes in a
        // buffer of its own (`send_owned`), so a connection waiting for its answer, or
        // idle, holds no copy of what it sent.
        if self.out.capacity() > KEPT_OUT {
            self.out = Vec::new();
        }
        self.written = 0;
        if !self.flushed {
            match self.wire.writer()?.poll_flush(cx) {
                Poll::Ready(Ok(())) => {
                    self.flushed = true;
                    progress = true;
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => {}
            }
        }
        Ok(progress)
    }
}
