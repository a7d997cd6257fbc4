//! Opening connections to the endpoint: the [`Connector`] and [`Stream`] traits, and
//! plain TCP ([`TcpConnector`]). TLS is in the `tls` module.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use mcp_io::ResolveError;
use mcp_io::http::admitted_addresses;
use mcp_proto::client::Origin;
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

    /// The plain TCP socket this stream is, when it is one (no bytes transformed on the
    /// way, as TLS would): on Unix the client then moves its bytes from the thread that
    /// waits for them, with no reader or writer thread. The default says it is not one.
    fn tcp_socket(&self) -> Option<&TcpStream> {
        None
    }
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

    fn tcp_socket(&self) -> Option<&TcpStream> {
        Some(self)
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
    /// negotiated for `https`). `timeout` bounds the connection set-up. For a client's
    /// connection it is `HttpOptions::connect_timeout` and
    /// [`CONNECT_BACKSTOP`](mcp_io::http::CONNECT_BACKSTOP) more: the client gives up
    /// at `HttpOptions::connect_timeout` itself and reports that, naming it, so the
    /// connector's own bound only ends the thread it runs on.
    ///
    /// # Errors
    /// Any failure; the client reports it as a [`TransportError`](crate::TransportError):
    /// one whose source is a `rustls::Error` counts as a TLS failure (with the `tls`
    /// feature), one made by [`ResolveError::io`] as a name that did not resolve.
    fn connect(&self, url: &EndpointUrl, timeout: Duration) -> io::Result<Box<dyn Stream>>;

    /// A connection for the machine's `origin` (at `url`): the built-in connectors
    /// reach only public addresses when [`Origin::public_only`] says so. The default
    /// calls [`Connector::connect`]: a connector that resolves names elsewhere (a proxy)
    /// cannot check them.
    ///
    /// # Errors
    /// As [`Connector::connect`].
    fn connect_origin(
        &self,
        origin: &Origin,
        url: &EndpointUrl,
        timeout: Duration,
    ) -> io::Result<Box<dyn Stream>> {
        let _ = origin;
        self.connect(url, timeout)
    }
}

/// Plain TCP (`http://`). Resolves the host with the system resolver, tries each address
/// in turn, and turns Nagle's algorithm off; `timeout` bounds all of it together.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpConnector;

impl TcpConnector {
    /// A TCP connection to `url`'s host and port (no TLS, whatever the scheme), within
    /// `timeout` in all: resolving the name, then each address with the time left.
    ///
    /// # Errors
    /// Resolution failures (wrapped so they report as such), the last connect error, or
    /// [`io::ErrorKind::TimedOut`] once the time is spent.
    pub fn connect_tcp(url: &EndpointUrl, timeout: Duration) -> io::Result<TcpStream> {
        Self::connect_tcp_for(&Origin::of(url), url, timeout)
    }

    /// [`TcpConnector::connect_tcp`] for the machine's `origin`: only to the addresses
    /// [`admitted_addresses`] keeps.
    ///
    /// # Errors
    /// As [`TcpConnector::connect_tcp`], and a refusal when a public-only origin has no
    /// public address.
    pub fn connect_tcp_for(
        origin: &Origin,
        url: &EndpointUrl,
        timeout: Duration,
    ) -> io::Result<TcpStream> {
        let deadline = mcp_io::clock::std_after(timeout);
        let addrs: Vec<SocketAddr> = match url.ip() {
            Some(ip) => vec![SocketAddr::new(ip, url.port())],
            None => resolve(url.host(), url.port(), timeout)?,
        };
        let addrs = admitted_addresses(origin, addrs)?;
        let mut last = ResolveError::io(
            io::ErrorKind::NotFound,
            format!("{} has no address", url.host()),
        );
        for addr in addrs {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out("connecting", timeout));
            }
            match TcpStream::connect_timeout(&addr, left) {
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

/// `host`'s addresses, from the system resolver, which has no timeout of its own: it runs
/// on a thread of its own, given up on (and left to finish) after `timeout`.
fn resolve(host: &str, port: u16, timeout: Duration) -> io::Result<Vec<SocketAddr>> {
    let (tx, rx) = mpsc::channel();
    let name = host.to_owned();
    thread::Builder::new()
        .name("mcp-resolve".to_owned())
        .spawn(move || {
            let _ = tx.send((name.as_str(), port).to_socket_addrs().map(Vec::from_iter));
        })?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(addrs)) => Ok(addrs),
        Ok(Err(e)) => Err(ResolveError::io(e.kind(), e.to_string())),
        Err(_) => Err(ResolveError::io(
            io::ErrorKind::TimedOut,
            format!("resolving {host} took more than {timeout:?}"),
        )),
    }
}

/// The error of a connection set-up that ran out of time in `step`.
pub(crate) fn timed_out(step: &str, timeout: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("{step} timed out after {timeout:?}"),
    )
}

impl Connector for TcpConnector {
    fn connect(&self, url: &EndpointUrl, timeout: Duration) -> io::Result<Box<dyn Stream>> {
        Ok(Box::new(Self::connect_tcp(url, timeout)?))
    }

    fn connect_origin(
        &self,
        origin: &Origin,
        url: &EndpointUrl,
        timeout: Duration,
    ) -> io::Result<Box<dyn Stream>> {
        Ok(Box::new(Self::connect_tcp_for(origin, url, timeout)?))
    }
}
