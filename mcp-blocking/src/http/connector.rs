//! Opening connections to the endpoint: the [`Connector`] and [`Stream`] traits, plain TCP
//! ([`TcpConnector`]), and [`TransportError`], the typed failure below HTTP. TLS is in
//! the `tls` module.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

#[cfg(feature = "tls")]
use mcp_host::http::tls_error;
use mcp_proto::client::{TransportFailure, TransportFailureKind};
use mcp_proto::http::EndpointUrl;

/// A connection to the endpoint, ready for HTTP/1.1 bytes. The client reads it on one
/// thread while writing it from another, so it is used through its [`Halves`].
pub trait Stream: Send {
    /// Splits the connection into a read half, a write half and a shutdown handle, each
    /// usable from its own thread.
    ///
    /// # Errors
    /// When the connection cannot be split (a socket that cannot be duplicated, say).
    fn split(self: Box<Self>) -> io::Result<Halves>;
}

/// A [`Stream`] split for two threads: one blocks reading [`Halves::reader`] while
/// another writes [`Halves::writer`] at any time, and a third may cut both with
/// [`Halves::shutdown`].
#[non_exhaustive]
pub struct Halves {
    /// Reads the server's bytes; end of file when the connection ends.
    pub reader: Box<dyn Read + Send>,
    /// Writes requests, in order.
    pub writer: Box<dyn Write + Send>,
    /// Makes a blocked read return and later writes fail.
    pub shutdown: ShutdownHandle,
}

impl Halves {
    /// The halves of a connection.
    #[must_use]
    pub fn new(
        reader: Box<dyn Read + Send>,
        writer: Box<dyn Write + Send>,
        shutdown: ShutdownHandle,
    ) -> Self {
        Halves {
            reader,
            writer,
            shutdown,
        }
    }

    /// The halves of a TCP socket: two handles to it, and a third to shut it down.
    ///
    /// # Errors
    /// When the socket cannot be duplicated.
    pub fn tcp(socket: TcpStream) -> io::Result<Self> {
        let shutdown = ShutdownHandle::for_tcp(&socket)?;
        Ok(Halves::new(
            Box::new(socket.try_clone()?),
            Box::new(socket),
            shutdown,
        ))
    }
}

impl fmt::Debug for Halves {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Halves")
    }
}

/// Cuts a [`Stream`] from another thread: a read blocked on it must return (end of file
/// or an error) soon after [`ShutdownHandle::shutdown`], and later writes must fail.
pub struct ShutdownHandle(Box<dyn Fn() + Send + Sync>);

impl ShutdownHandle {
    /// A handle running `f` to shut the stream down. `f` may run more than once.
    pub fn new(f: impl Fn() + Send + Sync + 'static) -> Self {
        ShutdownHandle(Box::new(f))
    }

    /// A handle that shuts down both directions of `socket` (and of every handle to the
    /// same socket, TLS over it included).
    ///
    /// # Errors
    /// When the socket cannot be duplicated.
    pub fn for_tcp(socket: &TcpStream) -> io::Result<Self> {
        let clone = socket.try_clone()?;
        Ok(ShutdownHandle::new(move || {
            let _ = clone.shutdown(Shutdown::Both);
        }))
    }

    /// Shuts the stream down.
    pub fn shutdown(&self) {
        (self.0)();
    }
}

impl fmt::Debug for ShutdownHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ShutdownHandle")
    }
}

impl Stream for TcpStream {
    fn split(self: Box<Self>) -> io::Result<Halves> {
        Halves::tcp(*self)
    }
}

/// Opens connections to an endpoint. The client calls it on a thread of its own, one call
/// per new connection; the stream then carries keep-alive exchanges until it is closed.
///
/// [`TcpConnector`] and `TlsConnector` (with the `tls` feature) are the built-in ones;
/// write your own to go through a proxy, a Unix socket, a test double, or another TLS
/// stack (a connector of your own serves `https://` even without the `tls` feature).
pub trait Connector: Send + Sync {
    /// A connection to `url`'s host and port, ready for HTTP/1.1 bytes (TLS already
    /// negotiated for `https`). `timeout` bounds the connection set-up.
    ///
    /// # Errors
    /// Any failure; the client reports it as a [`TransportError`]. With the `tls`
    /// feature, a failure whose source is a `rustls::Error` counts as a TLS failure.
    fn connect(&self, url: &EndpointUrl, timeout: Duration) -> io::Result<Box<dyn Stream>>;
}

/// Plain TCP (`http://`). Resolves the host with the system resolver, tries each address
/// in turn within `timeout`, and turns Nagle's algorithm off.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpConnector;

impl TcpConnector {
    /// A TCP connection to `url`'s host and port (no TLS, whatever the scheme).
    ///
    /// # Errors
    /// Resolution failures (wrapped so they report as such) and the last connect error.
    pub fn connect_tcp(url: &EndpointUrl, timeout: Duration) -> io::Result<TcpStream> {
        let addrs: Vec<SocketAddr> = match url.ip() {
            Some(ip) => vec![SocketAddr::new(ip, url.port())],
            None => (url.host(), url.port())
                .to_socket_addrs()
                .map_err(|e| io::Error::new(e.kind(), ResolveError(e.to_string())))?
                .collect(),
        };
        let mut last = io::Error::new(
            io::ErrorKind::NotFound,
            ResolveError(format!("{} has no address", url.host())),
        );
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(socket) => {
                    socket.set_nodelay(true)?;
                    // A server that stops reading must not hold a writer forever.
                    socket.set_write_timeout(Some(timeout.max(Duration::from_secs(1))))?;
                    return Ok(socket);
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

impl Connector for TcpConnector {
    fn connect(&self, url: &EndpointUrl, timeout: Duration) -> io::Result<Box<dyn Stream>> {
        Ok(Box::new(Self::connect_tcp(url, timeout)?))
    }
}

/// A name-resolution failure, so that [`TransportError::stage`] can tell it apart.
#[derive(Debug)]
struct ResolveError(String);

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ResolveError {}

/// Where below HTTP an exchange failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportStage {
    /// Resolving the host name.
    Resolve,
    /// Opening the TCP connection (refused, unreachable, timed out, …).
    Connect,
    /// The TLS handshake (certificate not trusted, name mismatch, protocol error, …).
    Tls,
    /// Writing the request.
    Write,
    /// Reading the response.
    Read,
}

impl fmt::Display for TransportStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportStage::Resolve => "resolving",
            TransportStage::Connect => "connecting to",
            TransportStage::Tls => "TLS handshake with",
            TransportStage::Write => "writing to",
            TransportStage::Read => "reading from",
        })
    }
}

/// An exchange failed below HTTP: the host did not resolve, the connection was refused
/// or timed out, the TLS handshake failed, or the connection broke.
#[derive(Debug, thiserror::Error)]
#[error("{stage} {target}: {}", describe(source))]
pub struct TransportError {
    stage: TransportStage,
    target: String,
    #[source]
    source: io::Error,
}

impl TransportError {
    /// A failure at `stage` talking to `target` (`host:port`).
    #[must_use]
    pub fn new(stage: TransportStage, target: impl Into<String>, source: io::Error) -> Self {
        TransportError {
            stage,
            target: target.into(),
            source,
        }
    }

    /// A failure of [`Connector::connect`], its stage read from the error: a
    /// `rustls::Error` inside means TLS (with the `tls` feature), a resolver failure
    /// means resolve, anything else connect.
    #[must_use]
    pub fn from_connect(url: &EndpointUrl, source: io::Error) -> Self {
        Self::at(TransportStage::Connect, target_of(url), source)
    }

    /// A failure at `stage`, refined from the error: TLS when a `rustls::Error` is
    /// inside, resolve for a resolver failure.
    pub(crate) fn at(stage: TransportStage, target: String, source: io::Error) -> Self {
        #[cfg(feature = "tls")]
        let is_tls = tls_error(&source).is_some();
        #[cfg(not(feature = "tls"))]
        let is_tls = false;
        let stage = if is_tls {
            TransportStage::Tls
        } else if source
            .get_ref()
            .is_some_and(|e| e.downcast_ref::<ResolveError>().is_some())
        {
            TransportStage::Resolve
        } else {
            stage
        };
        TransportError::new(stage, target, source)
    }

    /// A failure the client machine reported on its own (the connect deadline passed),
    /// or one whose typed source is no longer at hand.
    pub(crate) fn from_failure(failure: &TransportFailure, target: String) -> Self {
        use io::ErrorKind as K;
        let (stage, kind) = match failure.kind {
            TransportFailureKind::Dns => (TransportStage::Resolve, K::NotFound),
            TransportFailureKind::Tls => (TransportStage::Tls, K::InvalidData),
            TransportFailureKind::Refused => (TransportStage::Connect, K::ConnectionRefused),
            TransportFailureKind::Unreachable => (TransportStage::Connect, K::HostUnreachable),
            TransportFailureKind::Timeout => (TransportStage::Connect, K::TimedOut),
            TransportFailureKind::Reset => (TransportStage::Read, K::ConnectionReset),
            TransportFailureKind::Closed => (TransportStage::Read, K::UnexpectedEof),
            _ => (TransportStage::Read, K::Other),
        };
        TransportError::new(stage, target, io::Error::new(kind, failure.detail.clone()))
    }

    /// The failure as the client machine takes it: the kind, and this error's text.
    #[must_use]
    pub fn failure(&self) -> TransportFailure {
        let kind = match self.stage {
            TransportStage::Tls => TransportFailureKind::Tls,
            TransportStage::Resolve => TransportFailureKind::Dns,
            _ => TransportFailureKind::of_io(self.source.kind()),
        };
        TransportFailure::new(kind, self.to_string())
    }

    /// Where it failed.
    #[must_use]
    pub fn stage(&self) -> TransportStage {
        self.stage
    }

    /// `host:port`.
    #[must_use]
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The I/O error.
    #[must_use]
    pub fn io_error(&self) -> &io::Error {
        &self.source
    }

    /// The rustls error, for TLS failures. With the `tls` feature only.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls_error(&self) -> Option<&rustls::Error> {
        tls_error(&self.source)
    }
}

#[cfg(not(feature = "tls"))]
fn describe(e: &io::Error) -> String {
    e.to_string()
}

#[cfg(feature = "tls")]
fn describe(e: &io::Error) -> String {
    match tls_error(e) {
        Some(rustls::Error::InvalidCertificate(cert)) => {
            use rustls::CertificateError as C;
            let why = match cert {
                C::UnknownIssuer => "is not signed by a trusted root",
                C::NotValidForName | C::NotValidForNameContext { .. } => {
                    "is not valid for this host name"
                }
                C::Expired | C::ExpiredContext { .. } => "has expired",
                C::NotValidYet | C::NotValidYetContext { .. } => "is not valid yet",
                C::Revoked => "is revoked",
                _ => "was rejected",
            };
            format!("the server's certificate {why} ({cert:?})")
        }
        Some(tls) => tls.to_string(),
        None => e.to_string(),
    }
}

/// `host:port` (brackets around IPv6).
pub(crate) fn target_of(url: &EndpointUrl) -> String {
    match url.ip() {
        Some(std::net::IpAddr::V6(ip)) => format!("[{ip}]:{}", url.port()),
        _ => format!("{}:{}", url.host(), url.port()),
    }
}
