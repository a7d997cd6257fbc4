//! Streamable HTTP (and HTTPS): [`connect_http`](crate::connect_http), its options, and
//! opening one connection.
//!
//! # Theory of operation
//!
//! The client machine decides everything about HTTP: which requests go out, on which
//! connection, how many connections are open ([`HttpOptions::max_connections`]), when a
//! keep-alive connection is reused or expires ([`HttpOptions::idle_timeout`]), when a
//! request is sent again after a stale keep-alive connection, how long opening a
//! connection may take ([`HttpOptions::connect_timeout`]), which streams stay open, and
//! when a legacy session is ended with `DELETE`. The [`Driver`](crate::Driver) obeys:
//! for every `Transmit::Connect` it runs the [`Connector`] (plain TCP by default, an
//! `async_io::Async<std::net::TcpStream>` with `TCP_NODELAY`) and, for an `https` origin,
//! the TLS handshake; it writes the bytes it is given, reads every open connection, and
//! closes a connection when told. What fails below HTTP is reported to the machine as a
//! typed `TransportFailure`, and to the caller as [`Error::Transport`](crate::Error::Transport).
//!
//! The wire log sees the HTTP/1.1 text of every exchange, line by line: the request as
//! sent (the `Authorization` value replaced by `[redacted]`) and the response as received,
//! before TLS encryption or after decryption.
//!
//! # TLS
//!
//! With the `tls` cargo feature (on by default): rustls with its `ring` provider, trusting
//! the Mozilla roots of `webpki-roots` unless `HttpOptions::tls` supplies a configuration.
//! Whatever the configuration, ALPN is set to `http/1.1` alone (on a copy), because
//! HTTP/1.1 is all the machine speaks. The server name is the origin's host (a DNS name or
//! an IP address). `futures-rustls` adapts rustls to the `futures-io` traits.
//!
//! Without the feature, an `https` URL is refused by `connect_http` with
//! [`Error::TlsUnavailable`](crate::Error::TlsUnavailable), before anything connects,
//! unless the [`Connector`] says it [handles TLS](Connector::handles_tls) itself.
//!
//! # Name resolution
//!
//! IP literals are connected to directly. A DNS name is resolved by the OS resolver on the
//! `blocking` crate's thread pool (`blocking::unblock`, as `async-net` does), and its
//! addresses are tried in turn. A [`Connector`] replaces all of this.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_io::Async;
use futures_lite::{AsyncRead, AsyncWrite};
/// The era verdict per origin: one type shared with `mcp-blocking` (a cache can serve
/// both).
pub use mcp_host::EraCache;
pub use mcp_host::http::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_CONNECTIONS, TlsUnavailable};
use mcp_host::wire_log::redacted;
use mcp_proto::client::http::HttpConfig;
use mcp_proto::client::{Origin, TransportFailureKind};
use mcp_proto::http::EndpointUrl;

use crate::error::TransportError;

/// A byte stream HTTP/1.1 can be spoken on: what a [`Connector`] returns.
///
/// Implemented for every `AsyncRead + AsyncWrite + Send + Unpin` type (`TcpStream`,
/// `UnixStream`, a TLS stream, a pipe in a test).
pub trait AsyncStream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + ?Sized> AsyncStream for T {}

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
        let (host, port) = (origin.host().to_owned(), origin.port());
        Box::pin(async move {
            let stream = match host.parse::<IpAddr>() {
                Ok(ip) => Async::<TcpStream>::connect(SocketAddr::new(ip, port)).await?,
                Err(_) => connect_by_name(host, port).await?,
            };
            // Requests are written whole; waiting for more to coalesce only adds latency.
            stream.get_ref().set_nodelay(true)?;
            Ok(Box::new(stream) as Box<dyn AsyncStream>)
        })
    }
}

/// A host name that did not resolve: told apart from other connect failures.
#[derive(Debug)]
struct Unresolved(String);

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unresolved {}

/// Resolves `host` off the executor, then connects to each address in turn; the last
/// error when none accepts.
async fn connect_by_name(host: String, port: u16) -> io::Result<Async<TcpStream>> {
    let name = host.clone();
    let unresolved = move |kind, why: String| {
        io::Error::new(kind, Unresolved(format!("cannot resolve {name}: {why}")))
    };
    let addrs = blocking::unblock(move || {
        (host.as_str(), port)
            .to_socket_addrs()
            .map(Iterator::collect::<Vec<_>>)
    })
    .await
    .map_err(|e| unresolved(e.kind(), e.to_string()))?;
    let mut last = unresolved(io::ErrorKind::NotFound, "no address".into());
    for addr in addrs {
        match Async::<TcpStream>::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// How the driver reaches a Streamable HTTP endpoint.
///
/// ```
/// use std::time::Duration;
/// use mcp_smol::{EraCache, HttpOptions};
///
/// let cache = EraCache::new();
/// let options = HttpOptions::new()
///     .authorization("Bearer s3cr3t")
///     .connect_timeout(Duration::from_secs(3))
///     .idle_timeout(Duration::from_secs(5))
///     .max_connections(4)
///     .era_cache(cache.clone());
/// assert!(!format!("{options:?}").contains("s3cr3t"));
/// ```
#[non_exhaustive]
pub struct HttpOptions {
    /// The TLS configuration for `https` endpoints. Default: rustls with the `ring`
    /// provider, safe default protocol versions, the `webpki-roots` trust anchors, no
    /// client certificate. ALPN is always forced to `http/1.1` (on a copy). With the
    /// `tls` feature only.
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Opens connections instead of plain TCP. Default [`TcpConnector`].
    pub connector: Option<Arc<dyn Connector>>,
    /// The `Authorization` header value sent with every request (`Bearer …`). Never
    /// written to the wire log.
    pub authorization: Option<String>,
    /// Permit plain `http` to hosts that are not loopback. Default false: only
    /// `localhost`, 127.0.0.0/8 and `::1` may be reached without TLS.
    pub allow_insecure_remote: bool,
    /// Bound on opening one connection, TCP and TLS handshake together. Default
    /// [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Duration,
    /// Connections carrying requests at once (idle keep-alive ones included); requests
    /// beyond it wait for one. Long-lived event streams (a legacy server's GET stream,
    /// resumptions) are bounded separately by the same number. Default
    /// [`DEFAULT_MAX_CONNECTIONS`]; 0 is taken as 1.
    pub max_connections: usize,
    /// Idle keep-alive connections older than this are closed rather than reused.
    /// Default 30 s.
    pub idle_timeout: Duration,
    /// Remembers each origin's era, so that a legacy server is not probed again; see
    /// [`EraCache`] and [`connect_http_with`](crate::connect_http_with). Default none.
    pub era_cache: Option<EraCache>,
}

impl HttpOptions {
    /// The defaults: webpki roots, plain TCP, no authorization, loopback-only plain
    /// `http`, 10 s connect timeout, 16 connections, 30 s idle timeout, no era cache.
    #[must_use]
    pub fn new() -> Self {
        HttpOptions {
            #[cfg(feature = "tls")]
            tls: None,
            connector: None,
            authorization: None,
            allow_insecure_remote: false,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: Duration::from_secs(30),
            era_cache: None,
        }
    }

    /// The same options with this TLS configuration (a private CA, client certificates,
    /// a pinned key…). With the `tls` feature only.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// The same options with this connector.
    #[must_use]
    pub fn connector(mut self, connector: impl Connector + 'static) -> Self {
        self.connector = Some(Arc::new(connector));
        self
    }

    /// The same options with an `Authorization` header value.
    #[must_use]
    pub fn authorization(mut self, value: impl Into<String>) -> Self {
        self.authorization = Some(value.into());
        self
    }

    /// The same options, permitting (or not) plain `http` to remote hosts.
    #[must_use]
    pub fn allow_insecure_remote(mut self, allow: bool) -> Self {
        self.allow_insecure_remote = allow;
        self
    }

    /// The same options with another connect timeout.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The same options with another bound on connections (at least 1).
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// The same options with another idle timeout.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The same options with an era cache (clones share their verdicts, with other
    /// connections and with `mcp-blocking` clients alike).
    #[must_use]
    pub fn era_cache(mut self, cache: EraCache) -> Self {
        self.era_cache = Some(cache);
        self
    }

    /// The machine's configuration and the driver's part.
    ///
    /// # Errors
    /// [`TlsUnavailable`] for an `https` URL without the `tls` feature, unless the
    /// connector handles TLS itself.
    pub(crate) fn into_parts(
        self,
        url: EndpointUrl,
    ) -> Result<(HttpConfig, Opener), TlsUnavailable> {
        let connector = self.connector.unwrap_or_else(|| Arc::new(TcpConnector));
        let needs_tls = url.is_tls() && !connector.handles_tls();
        #[cfg(feature = "tls")]
        let tls = needs_tls.then(|| {
            futures_rustls::TlsConnector::from(mcp_host::http::http1_tls_config(self.tls.as_ref()))
        });
        #[cfg(not(feature = "tls"))]
        if needs_tls {
            return Err(TlsUnavailable::new("mcp-smol", url.as_str()));
        }
        let endpoint = url.origin().to_owned();
        let mut config = mcp_host::http::machine_config(
            url,
            self.authorization,
            concat!("mcp-smol/", env!("CARGO_PKG_VERSION")),
        );
        config.pool.max_connections = self.max_connections.max(1);
        config.pool.idle_timeout = self.idle_timeout;
        config.pool.connect_timeout = self.connect_timeout;
        let opener = Opener {
            connector,
            #[cfg(feature = "tls")]
            tls,
            endpoint,
        };
        Ok((config, opener))
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut f = f.debug_struct("HttpOptions");
        #[cfg(feature = "tls")]
        f.field("tls", &self.tls.is_some());
        f.field("connector", &self.connector.is_some())
            .field("authorization", &redacted(&self.authorization))
            .field("allow_insecure_remote", &self.allow_insecure_remote)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_connections", &self.max_connections)
            .field("idle_timeout", &self.idle_timeout)
            .field("era_cache", &self.era_cache)
            .finish()
    }
}

/// A connection being opened: the stream, or what failed, typed.
pub(crate) type Opening =
    Pin<Box<dyn Future<Output = Result<Box<dyn AsyncStream>, TransportError>> + Send>>;

/// How the driver opens a connection: the connector, then TLS when needed.
pub(crate) struct Opener {
    connector: Arc<dyn Connector>,
    /// For `https` when the connector does not do TLS itself.
    #[cfg(feature = "tls")]
    tls: Option<futures_rustls::TlsConnector>,
    /// The endpoint's origin, as errors name it.
    pub(crate) endpoint: String,
}

impl Opener {
    /// Opens one connection to `origin`. The machine bounds the time it takes.
    pub(crate) fn open(&self, origin: &Origin) -> Opening {
        let connecting = self.connector.connect(origin);
        let endpoint = self.endpoint.clone();
        let failed = move |kind, e| TransportError::new(kind, true, &endpoint, e);
        #[cfg(feature = "tls")]
        let tls = self.tls.clone().filter(|_| origin.is_tls());
        #[cfg(feature = "tls")]
        let host = origin.host().to_owned();
        Box::pin(async move {
            let stream = connecting.await.map_err(|e| failed(classify(&e), e))?;
            #[cfg(feature = "tls")]
            if let Some(tls) = tls {
                let name = rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| {
                    let why = format!("{host:?} is not a valid TLS server name: {e}");
                    failed(
                        TransportFailureKind::Tls,
                        io::Error::new(io::ErrorKind::InvalidInput, why),
                    )
                })?;
                let stream = tls
                    .connect(name, stream)
                    .await
                    .map_err(|e| failed(TransportFailureKind::Tls, e))?;
                return Ok(Box::new(stream) as Box<dyn AsyncStream>);
            }
            Ok(stream)
        })
    }
}

/// What kind of failure a connector's error is.
fn classify(e: &io::Error) -> TransportFailureKind {
    // A connector doing TLS itself may fail in the handshake.
    #[cfg(feature = "tls")]
    if mcp_host::http::tls_error(e).is_some() {
        return TransportFailureKind::Tls;
    }
    if e.get_ref().is_some_and(|inner| inner.is::<Unresolved>()) {
        return TransportFailureKind::Dns;
    }
    TransportFailureKind::of_io(e.kind())
}
