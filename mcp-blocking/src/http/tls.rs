//! TLS with rustls: [`TlsConnector`], and how a TLS connection is split between the
//! thread that reads it and the thread that writes it.
//!
//! A rustls [`ClientConnection`] is one state machine for both directions, so it cannot be
//! owned by two threads. It lives behind a mutex, next to the socket (duplicated):
//!
//! * the **read half** blocks in `read` on its own handle to the socket *without* the
//!   lock, then takes it to hand the ciphertext to rustls (`read_tls`,
//!   `process_new_packets`) and take the plaintext out, sending whatever rustls wants to
//!   say back (an alert, a key update) on the way;
//! * the **write half** takes the lock, gives rustls the plaintext and takes the
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
use mcp_proto::client::Origin;
use mcp_proto::http::EndpointUrl;
use rustls::pki_types::ServerName;
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
        let deadline = Instant::now() + timeout;
        let mut socket = TcpConnector::connect_tcp_for(origin, url, timeout)?;
        if !url.is_tls() {
            return Ok(Box::new(socket));
        }
        let name = match url.ip() {
            Some(ip) => ServerName::IpAddress(ip.into()),
            None => ServerName::try_from(url.host().to_owned())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
        };
        let mut conn = ClientConnection::new(Arc::clone(&self.config), name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        // Step by step rather than `complete_io`, which keeps reading for as long as
        // bytes trickle in: the deadline is checked before every read.
        while conn.is_handshaking() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out("TLS handshake", timeout));
            }
            socket.set_read_timeout(Some(left))?;
            socket.set_write_timeout(Some(left))?;
            let step = if conn.wants_write() {
                conn.write_tls(&mut socket).map(drop)
            } else {
                match conn.read_tls(&mut socket) {
                    Ok(0) => Err(io::ErrorKind::UnexpectedEof.into()),
                    Ok(_) => conn
                        .process_new_packets()
                        .map(drop)
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
                    Err(e) => Err(e),
                }
            };
            match step {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(timed_out("TLS handshake", timeout));
                }
                Err(e) => {
                    // An alert rustls wants to send about what went wrong goes out first.
                    let _ = conn.write_tls(&mut socket);
                    return Err(e);
                }
            }
        }
        socket.set_write_timeout(Some(timeout.max(Duration::from_secs(1))))?;
        socket.set_read_timeout(None)?;
        Ok(Box::new(StreamOwned::new(conn, socket)))
    }
}

impl Stream for StreamOwned<ClientConnection, TcpStream> {
    fn split(self: Box<Self>) -> io::Result<Halves> {
        let (conn, socket) = self.into_parts();
        let shutdown = ShutdownHandle::for_tcp(&socket)?;
        let shared = Arc::new(Shared {
            conn: Mutex::new(conn),
            socket: Mutex::new(socket.try_clone()?),
        });
        let reader = ReadHalf {
            shared: Arc::clone(&shared),
            socket,
            raw: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            eof: false,
        };
        Ok(Halves::new(
            Box::new(reader),
            Box::new(WriteHalf(shared)),
            shutdown,
        ))
    }
}

/// What both halves share.
struct Shared {
    conn: Mutex<ClientConnection>,
    /// The handle records are written on.
    socket: Mutex<TcpStream>,
}

impl Shared {
    fn conn(&self) -> MutexGuard<'_, ClientConnection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes the records rustls has ready, then lets go of the connection.
    fn send_records(&self, mut conn: MutexGuard<'_, ClientConnection>) -> io::Result<()> {
        if !conn.wants_write() {
            return Ok(());
        }
        let mut records = Vec::new();
        while conn.wants_write() {
            conn.write_tls(&mut records)?;
        }
        let mut socket = self.socket.lock().unwrap_or_else(PoisonError::into_inner);
        drop(conn);
        socket.write_all(&records)?;
        socket.flush()
    }
}

/// A TLS error as an IO error that [`mcp_io::http::tls_error`] recognises.
fn tls_io(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

struct ReadHalf {
    shared: Arc<Shared>,
    socket: TcpStream,
    /// Ciphertext read from the socket; `start..end` is not yet with rustls.
    raw: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
}

impl Read for ReadHalf {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut conn = self.shared.conn();
            match conn.reader().read(buf) {
                // Zero: the server said `close_notify`.
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // An end without `close_notify`, say.
                Err(e) => return Err(e),
            }
            if self.start < self.end {
                let mut rest = &self.raw[self.start..self.end];
                let fed = conn.read_tls(&mut rest)?;
                self.start += fed;
                let processed = conn.process_new_packets();
                // An alert for a failure goes out too.
                self.shared.send_records(conn)?;
                processed.map_err(tls_io)?;
                continue;
            }
            if self.eof {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            drop(conn);
            let n = self.socket.read(&mut self.raw)?;
            if n == 0 {
                self.eof = true;
                let mut conn = self.shared.conn();
                conn.read_tls(&mut &[][..])?;
                conn.process_new_packets().map_err(tls_io)?;
            }
            (self.start, self.end) = (0, n);
        }
    }
}

struct WriteHalf(Arc<Shared>);

impl Write for WriteHalf {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut conn = self.0.conn();
        let n = conn.writer().write(buf)?;
        self.0.send_records(conn)?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
