//! TLS with rustls: [`TlsConnector`], and how a TLS connection is split between the
//! thread that reads it and the thread that writes it.
//!
//! The session ([`TlsSession`], shared with mcp-smol) is one state machine for both
//! directions, so it cannot be owned by two threads. It lives behind a mutex, next to the
//! socket (duplicated):
//!
//! * the **read half** blocks in `read` on its own handle to the socket *without* the
//!   lock, then takes it to hand the ciphertext to the session and take the plaintext
//!   out, sending whatever the session wants to say back (an alert, a key update) on the
//!   way;
//! * the **write half** takes the lock, gives the session the plaintext and takes the
//!   records out.
//!
//! Records go to the socket under a second mutex, taken before the connection's lock is
//! released, so they leave in the order rustls made them; a slow write never keeps the
//! reader from the connection state (the lock order is always connection, then socket).

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use mcp_io::http::http1_tls_config;
use mcp_io::tls::TlsSession;
use mcp_proto::client::Origin;
use mcp_proto::http::EndpointUrl;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use super::connector::{Connector, Halves, ShutdownHandle, Stream, TcpConnector, timed_out};
use crate::carrier::READ_CHUNK;

/// TLS with rustls over [`TcpConnector`] (`https://`). The handshake runs inside
/// [`Connector::connect`], so certificate problems surface as connect failures. With the
/// `tls` feature only.
#[derive(Clone)]
pub struct TlsConnector {
    config: Arc<ClientConfig>,
}

impl TlsConnector {
    /// TLS with this rustls configuration (your roots, client certificates, …). ALPN
    /// is set to `http/1.1` alone, on a copy when `config` says otherwise: HTTP/1.1 is
    /// all the client speaks, and a server picking `h2` would break every exchange.
    #[must_use]
    pub fn new(config: Arc<ClientConfig>) -> Self {
        TlsConnector {
            config: http1_tls_config(Some(&config)),
        }
    }

    /// TLS trusting the Mozilla roots of `webpki-roots`, with the ring provider, TLS 1.2
    /// and 1.3, and ALPN `http/1.1` ([`super::default_tls_config`]).
    #[must_use]
    pub fn webpki_roots() -> Self {
        TlsConnector {
            config: http1_tls_config(None),
        }
    }

    /// The rustls configuration in use.
    #[must_use]
    pub fn config(&self) -> &Arc<ClientConfig> {
        &self.config
    }
}

impl fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConnector")
            .field("alpn", &self.config.alpn_protocols)
            .finish_non_exhaustive()
    }
}

impl Connector for TlsConnector {
    /// TCP, then the TLS handshake, within `timeout` in all: a server that drips the
    /// handshake a byte at a time (or a plain-HTTP port that waits for a request) fails
    /// as a TLS handshake that timed out.
    fn connect(&self, url: &EndpointUrl, timeout: Duration) -> io::Result<Box<dyn Stream>> {
        self.connect_origin(&Origin::of(url), url, timeout)
    }

    /// As [`TlsConnector::connect`] for the machine's `origin`: only to public addresses
    /// when it says so, and plain TCP for an `http` origin (the authorization flow may
    /// reach one on loopback while the MCP endpoint is `https`, or the reverse).
    fn connect_origin(
        &self,
        origin: &Origin,
        url: &EndpointUrl,
        timeout: Duration,
    ) -> io::Result<Box<dyn Stream>> {
        let deadline = mcp_io::clock::std_after(timeout);
        let mut socket = TcpConnector::connect_tcp_for(origin, url, timeout)?;
        if !url.is_tls() {
            return Ok(Box::new(socket));
        }
        let mut tls = TlsSession::new(Arc::clone(&self.config), url.host())?;
        let (mut records, mut plain, mut raw) = (Vec::new(), Vec::new(), vec![0; READ_CHUNK]);
        // Read by read rather than until the handshake is over: the deadline is checked
        // before every step, however slowly the bytes trickle in.
        let late = |e: io::Error| match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                timed_out("TLS handshake", timeout)
            }
            _ => e,
        };
        let mut failed = None;
        loop {
            tls.take_records(&mut records);
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(failed.unwrap_or_else(|| late(io::ErrorKind::TimedOut.into())));
            }
            socket.set_read_timeout(Some(left))?;
            socket.set_write_timeout(Some(left))?;
            let sent = socket.write_all(&records).map_err(late);
            records.clear();
            // An alert about what went wrong goes out before the error is told.
            if let Some(e) = failed {
                return Err(e);
            }
            sent?;
            if !tls.is_handshaking() {
                break;
            }
            failed = match socket.read(&mut raw) {
                Ok(0) => tls
                    .receive_eof()
                    .and(Err(io::ErrorKind::UnexpectedEof.into())),
                Ok(n) => tls.receive(&raw[..n], &mut plain).map(drop),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
                Err(e) => Err(late(e)),
            }
            .err();
        }
        socket.set_write_timeout(Some(timeout.max(Duration::from_secs(1))))?;
        socket.set_read_timeout(None)?;
        Ok(Box::new(TlsStream { tls, socket, plain }))
    }
}

/// A TLS connection: the session, its socket, and any plaintext the handshake brought.
struct TlsStream {
    tls: TlsSession,
    socket: TcpStream,
    plain: Vec<u8>,
}

impl Stream for TlsStream {
    fn split(self: Box<Self>) -> io::Result<Halves> {
        let TlsStream { tls, socket, plain } = *self;
        let shutdown = ShutdownHandle::for_tcp(&socket)?;
        let shared = Arc::new(Shared {
            tls: Mutex::new(tls),
            socket: Mutex::new(socket.try_clone()?),
        });
        let reader = ReadHalf {
            shared: Arc::clone(&shared),
            socket,
            raw: vec![0; READ_CHUNK],
            plain,
            at: 0,
            closed: false,
        };
        Ok(Halves::new(
            Box::new(reader),
            Box::new(WriteHalf(shared)),
            shutdown,
        ))
    }
}

/// A TLS stream made elsewhere, split the same way.
impl Stream for StreamOwned<ClientConnection, TcpStream> {
    fn split(self: Box<Self>) -> io::Result<Halves> {
        let (conn, socket) = self.into_parts();
        let plain = Vec::new();
        Box::new(TlsStream {
            tls: conn.into(),
            socket,
            plain,
        })
        .split()
    }
}

/// What both halves share.
struct Shared {
    tls: Mutex<TlsSession>,
    /// The handle records are written on.
    socket: Mutex<TcpStream>,
}

impl Shared {
    fn tls(&self) -> MutexGuard<'_, TlsSession> {
        self.tls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes the records the session has ready, then lets go of it.
    fn send_records(&self, mut tls: MutexGuard<'_, TlsSession>) -> io::Result<()> {
        let mut records = Vec::new();
        tls.take_records(&mut records);
        if records.is_empty() {
            return Ok(());
        }
        let mut socket = self.socket.lock().unwrap_or_else(PoisonError::into_inner);
        drop(tls);
        socket.write_all(&records)?;
        socket.flush()
    }
}

struct ReadHalf {
    shared: Arc<Shared>,
    socket: TcpStream,
    /// Ciphertext read from the socket.
    raw: Vec<u8>,
    /// Plaintext out of the session; `plain[at..]` is not read yet.
    plain: Vec<u8>,
    at: usize,
    /// The server said `close_notify`.
    closed: bool,
}

impl Read for ReadHalf {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.plain.len() {
            if self.closed {
                return Ok(0);
            }
            self.at = 0;
            self.plain.clear();
            let n = self.socket.read(&mut self.raw)?;
            let mut tls = self.shared.tls();
            let got = match n {
                // An end without `close_notify` is an error.
                0 => tls.receive_eof().map(|()| true),
                n => tls.receive(&self.raw[..n], &mut self.plain),
            };
            // An alert for a failure goes out too.
            self.shared.send_records(tls)?;
            self.closed = got?;
        }
        let n = buf.len().min(self.plain.len() - self.at);
        buf[..n].copy_from_slice(&self.plain[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

struct WriteHalf(Arc<Shared>);

impl Write for WriteHalf {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut tls = self.0.tls();
        tls.send(buf)?;
        self.0.send_records(tls)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
