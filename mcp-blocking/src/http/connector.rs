//! Opening connections to the endpoint: the [`Connector`] and [`Stream`] traits, plain TCP
//! ([`TcpConnector`]), TLS with rustls (`TlsConnector`, with the `tls` feature). The typed
//! failure below HTTP, [`TransportError`], is `mcp-host`'s, shared with `mcp-smol`.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
#[cfg(feature = "tls")]
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "tls")]
use mcp_host::http::http1_tls_config;
pub use mcp_host::{ResolveError, TransportError, TransportErrorKind};
use mcp_proto::http::EndpointUrl;
#[cfg(feature = "tls")]
use rustls::pki_types::ServerName;
#[cfg(feature = "tls")]
use rustls::{ClientConfig, ClientConnection, StreamOwned};

/// A connection to the endpoint: bytes both ways, used by one thread at a time, plus a
/// way to cut it from another thread.
pub trait Stream: Read + Write + Send {
    /// A handle that shuts the connection down from another thread: a read blocked on
    /// this stream must return (end of file or an error) soon after
    /// [`ShutdownHandle::shutdown`], and later writes must fail.
    ///
    /// # Errors
    /// When no such handle can be made (the stream is then closed by dropping it only,
    /// and an aborted exchange keeps its reader thread until the server closes).
    fn shutdown_handle(&self) -> io::Result<ShutdownHandle>;
}

/// Cuts a [`Stream`] from another thread; see [`Stream::shutdown_handle`].
pub struct ShutdownHandle(Box<dyn Fn() + Send + Sync>);

impl ShutdownHandle {
    /// A handle running `f` to shut the stream down. `f` may run more than once.
    pub fn new(f: impl Fn() + Send + Sync + 'static) -> Self {
        ShutdownHandle(Box::new(f))
    }

    /// A handle that shuts down both directions of `socket` (and of every handle to the
    /// same socket, TLS streams over it included).
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
    fn shutdown_handle(&self) -> io::Result<ShutdownHandle> {
        ShutdownHandle::for_tcp(self)
    }
}

#[cfg(feature = "tls")]
impl Stream for StreamOwned<ClientConnection, TcpStream> {
    fn shutdown_handle(&self) -> io::Result<ShutdownHandle> {
        ShutdownHandle::for_tcp(&self.sock)
    }
}

/// Opens connections to an endpoint. The client calls it from its connection threads, one
/// call per new connection; the stream is then used for keep-alive exchanges until it is
/// closed.
///
/// [`TcpConnector`] and `TlsConnector` (with the `tls` feature) are the built-in ones;
/// write your own to go through a proxy, a Unix socket, a test double, or another TLS
/// stack (a connector of your own serves `https://` even without the `tls` feature).
pub trait Connector: Send + Sync {
    /// A connection to `url`'s host and port, ready for HTTP/1.1 bytes (TLS already
    /// negotiated for `https`). `timeout` bounds the connection set-up.
    ///
    /// # Errors
    /// Any failure; the client reports it as a [`TransportError`], its kind read by
    /// [`TransportError::from_connect`]: with the `tls` feature, a failure whose source
    /// is a `rustls::Error` counts as a TLS failure; one made with [`ResolveError::io`]
    /// as a name that did not resolve; [`io::ErrorKind::TimedOut`] as a connect timeout.
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
                .map_err(|e| ResolveError::io(e.kind(), e.to_string()))?
                .collect(),
        };
        let mut last = ResolveError::io(
            io::ErrorKind::NotFound,
            format!("{} has no address", url.host()),
        );
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(socket) => {
                    socket.set_nodelay(true)?;
                    // A server that stops reading must not hang a writer forever.
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

/// TLS with rustls over [`TcpConnector`] (`https://`). The handshake runs inside
/// [`Connector::connect`], so certificate problems surface as connect failures. With the
/// `tls` feature only.
#[cfg(feature = "tls")]
#[derive(Clone)]
pub struct TlsConnector {
    config: Arc<ClientConfig>,
}

#[cfg(feature = "tls")]
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

#[cfg(feature = "tls")]
impl fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConnector")
            .field("alpn", &self.config.alpn_protocols)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "tls")]
impl Connector for TlsConnector {
    fn connect(&self, url: &EndpointUrl, timeout: Duration) -> io::Result<Box<dyn Stream>> {
        let mut socket = TcpConnector::connect_tcp(url, timeout)?;
        let name = match url.ip() {
            Some(ip) => ServerName::IpAddress(ip.into()),
            None => ServerName::try_from(url.host().to_owned())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
        };
        let mut conn = ClientConnection::new(Arc::clone(&self.config), name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        socket.set_read_timeout(Some(timeout))?;
        while conn.is_handshaking() {
            if let Err(e) = conn.complete_io(&mut socket) {
                return Err(match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("TLS handshake timed out after {timeout:?}"),
                    ),
                    _ => e,
                });
            }
        }
        socket.set_read_timeout(None)?;
        Ok(Box::new(StreamOwned::new(conn, socket)))
    }
}

/// The step that failed, by the name the transport code uses.
pub(crate) type TransportStage = TransportErrorKind;

/// The endpoint's origin (`scheme://host:port`), as transport errors name it.
pub(crate) fn target_of(url: &EndpointUrl) -> String {
    url.origin().to_owned()
}
