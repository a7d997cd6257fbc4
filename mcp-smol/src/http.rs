//! Streamable HTTP (and HTTPS): opening the connections the machine asks for.
//!
//! The client machine decides everything about HTTP within the bounds of the
//! [`HttpOptions`] (see [`mcp_io::http::HttpOptions`]). The [`Driver`](crate::Driver)
//! obeys: for every `Transmit::Connect` it runs the [`Connector`] (plain TCP by default,
//! an `async_io::Async<std::net::TcpStream>` with `TCP_NODELAY`) and, for an `https`
//! origin, the TLS handshake (`mcp_io::tls::TlsSession`, the session mcp-blocking
//! runs too, the server name being the origin's host: the driver moves its records like
//! any other bytes); it writes the bytes it is given, reads every open connection, and
//! closes a connection when told. What fails below HTTP is reported to the machine as a `TransportFailure`
//! carrying the typed [`TransportError`] as its source, and comes back to the caller as
//! [`Error::Transport`](crate::Error::Transport).
//!
//! IP literals are connected to directly. A DNS name is resolved by the OS resolver on the
//! `blocking` crate's thread pool (`blocking::unblock`, as `async-net` does), and its
//! addresses are tried in turn. A [`Connector`] replaces all of this.

use std::any::Any;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::pin::Pin;
use std::sync::Arc;

use async_io::Async;
use futures_lite::{AsyncRead, AsyncWrite};
use mcp_io::http::{HttpStart, admitted_addresses};
use mcp_io::tls::Layer;
use mcp_io::{ResolveError, TransportError, TransportErrorKind};
use mcp_proto::client::{Origin, TransportFailure};

/// A byte stream HTTP/1.1 can be spoken on: what a [`Connector`] returns.
///
/// Implemented for every `AsyncRead + AsyncWrite + Send + Unpin + 'static` type
/// (`TcpStream`, `UnixStream`, a TLS stream, a pipe in a test). When the stream is an
/// `async_io::Async<std::net::TcpStream>` (what [`TcpConnector`] returns), the driver
/// waits for it to be readable after a short read instead of reading it again.
pub trait AsyncStream: AsyncRead + AsyncWrite + Send + Unpin + Any {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + Any + ?Sized> AsyncStream for T {}

/// The future a [`Connector`] returns.
pub type ConnectFuture = Pin<Box<dyn Future<Output = io::Result<Box<dyn AsyncStream>>> + Send>>;

/// Opens the connections the machine asks for, instead of plain TCP: through a proxy,
/// over a Unix socket, in memory for a test, with another TLS stack.
///
/// The driver calls it for every new connection, with the [`Origin`] the machine named
/// (scheme, host, port), and polls the future itself; the machine bounds the wait
/// ([`HttpOptions::connect_timeout`]). For an `https` origin the driver runs the TLS
/// handshake on the returned stream, unless [`Connector::handles_tls`] says the stream is
/// already the TLS session.
///
/// A stream that answers `Pending` is tried again only once the waker it was given has
/// been woken (or, for writing, when there are new bytes to write): the usual contract
/// of `AsyncRead` and `AsyncWrite`, which the driver relies on rather than retrying every
/// connection whenever anything wakes it.
///
/// ```
/// use mcp_smol::{ConnectFuture, Connector, HttpOptions, Origin};
///
/// /// Every connection goes to one fixed address, whatever the origin's host says.
/// struct Fixed(std::net::SocketAddr);
///
/// impl Connector for Fixed {
///     fn connect(&self, _origin: &Origin) -> ConnectFuture {
///         let addr = self.0;
///         Box::pin(async move {
///             let tcp = smol::net::TcpStream::connect(addr).await?;
///             Ok(Box::new(tcp) as Box<dyn mcp_smol::AsyncStream>)
///         })
///     }
/// }
///
/// let options = HttpOptions::new().connector(Fixed(([127, 0, 0, 1], 8080).into()));
/// # let _ = options;
/// ```
pub trait Connector: Send + Sync {
    /// Opens one connection to `origin`.
    fn connect(&self, origin: &Origin) -> ConnectFuture;

    /// True when the streams this connector returns are already TLS sessions for
    /// `https` origins (the driver then does no handshake of its own). Default false.
    /// Without the `tls` feature, only such a connector can serve `https` endpoints.
    fn handles_tls(&self) -> bool {
        false
    }
}

/// The default [`Connector`]: plain TCP to the origin's host and port (IP literals
/// directly, names through the OS resolver), with `TCP_NODELAY`. Public so that a custom
/// connector can wrap it.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpConnector;

impl Connector for TcpConnector {
    fn connect(&self, origin: &Origin) -> ConnectFuture {
        let origin = origin.clone();
        Box::pin(async move {
            let (host, port) = (origin.host().to_owned(), origin.port());
            let stream = match host.parse::<IpAddr>() {
                Ok(ip) => {
                    let addrs = admitted_addresses(&origin, vec![SocketAddr::new(ip, port)])?;
                    Async::<TcpStream>::connect(addrs[0]).await?
                }
                Err(_) => connect_by_name(&origin).await?,
            };
            // Requests are written whole; waiting for more to coalesce only adds latency.
            stream.get_ref().set_nodelay(true)?;
            Ok(Box::new(stream) as Box<dyn AsyncStream>)
        })
    }
}

/// Resolves `host` off the executor, then connects to each address in turn; the last
/// error when none accepts.
/// Only the addresses [`admitted_addresses`] keeps are tried.
async fn connect_by_name(origin: &Origin) -> io::Result<Async<TcpStream>> {
    let (host, port) = (origin.host().to_owned(), origin.port());
    let name = host.clone();
    let unresolved = move |kind, why: String| ResolveError::io(kind, format!("{name}: {why}"));
    let addrs = blocking::unblock(move || {
        (host.as_str(), port)
            .to_socket_addrs()
            .map(Iterator::collect::<Vec<_>>)
    })
    .await
    .map_err(|e| unresolved(e.kind(), e.to_string()))?;
    let addrs = admitted_addresses(origin, addrs)?;
    let mut last = unresolved(io::ErrorKind::NotFound, "no address".into());
    for addr in addrs {
        match Async::<TcpStream>::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// How the driver reaches a Streamable HTTP endpoint: the options both adapters share,
/// with this crate's [`Connector`] (see [`mcp_io::http::HttpOptions`]).
///
/// ```
/// use std::time::Duration;
/// use mcp_smol::{EraCache, HttpOptions};
///
/// let options = HttpOptions::new()
///     .authorization("Bearer s3cr3t")
///     .idle_timeout(Duration::from_secs(5))
///     .era_cache(EraCache::new());
/// assert!(!format!("{options:?}").contains("s3cr3t"));
/// ```
pub type HttpOptions = mcp_io::http::HttpOptions<dyn Connector>;

impl<C: Connector + 'static> From<C> for Box<dyn Connector> {
    fn from(connector: C) -> Self {
        Box::new(connector)
    }
}

/// A connection being opened: the stream, or what failed, typed.
pub(crate) type Opening =
    Pin<Box<dyn Future<Output = Result<Box<dyn AsyncStream>, TransportError>> + Send>>;

/// How the driver opens a connection: the connector, and the TLS session when needed.
pub(crate) struct Opener {
    connector: Arc<dyn Connector>,
    /// For `https` when the connector does not do TLS itself.
    #[cfg(feature = "tls")]
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The endpoint's origin, as errors name it.
    endpoint: String,
}

impl Opener {
    /// How `start` is connected to, with `connector` or plain TCP.
    pub(crate) fn new(connector: Option<Arc<dyn Connector>>, start: &HttpStart) -> Opener {
        Opener {
            connector: connector.unwrap_or_else(|| Arc::new(TcpConnector)),
            #[cfg(feature = "tls")]
            tls: start.tls.clone(),
            endpoint: start.url.origin().to_owned(),
        }
    }

    /// Opens one connection to `origin`, with the TLS session the driver runs over it
    /// for an `https` origin (the server name being the origin's host). The machine
    /// bounds the time it takes, the handshake included.
    pub(crate) fn open(&self, origin: &Origin) -> Result<(Opening, Layer), TransportError> {
        #[cfg(feature = "tls")]
        let tls = match self.tls.clone().filter(|_| origin.is_tls()) {
            Some(config) => Some(mcp_io::tls::TlsSession::new(config, origin.host()).map_err(
                |e| TransportError::new(TransportErrorKind::Tls, self.endpoint.as_str(), e),
            )?),
            None => None,
        };
        #[cfg(feature = "tls")]
        let tls = Layer::new(tls);
        #[cfg(not(feature = "tls"))]
        let tls = Layer::default();
        let connecting = self.connector.connect(origin);
        let endpoint = self.endpoint.clone();
        let opening = async move {
            let e = |e| TransportError::new(TransportErrorKind::Connect, endpoint.as_str(), e);
            connecting.await.map_err(e)
        };
        Ok((Box::pin(opening), tls))
    }

    /// A failure on a connection at `step`, as the machine takes it.
    pub(crate) fn failure(&self, step: TransportErrorKind, e: io::Error) -> TransportFailure {
        TransportError::new(step, self.endpoint.as_str(), e).failure()
    }
}
