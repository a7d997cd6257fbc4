//! Streamable HTTP (and HTTPS): [`connect_http`](crate::connect_http) and its options.
//!
//! # Theory of operation
//!
//! [`mcp_proto::client::http::HttpClient`] decides everything about HTTP: which requests
//! to send, what their heads say, how each response is read, which exchanges end, and
//! whether a connection can carry another one. The driver ([`Http`], in `transport.rs`)
//! only moves bytes, and owns every connection itself (no task is spawned):
//!
//! * Every [`Transmit`](mcp_proto::client::http::Transmit) becomes a **job**: it takes
//!   an idle keep-alive connection when there is one (the most recently used first), or
//!   opens a new one while fewer than [`HttpOptions::max_connections`] are open (default
//!   [`DEFAULT_MAX_CONNECTIONS`]), or waits in a FIFO queue. HTTP/1.1 carries one exchange
//!   at a time per connection, so calls in flight at once use that many connections.
//! * Opening a connection is the [`Connector`]'s future (plain TCP by default, an
//!   `async_io::Async<std::net::TcpStream>`, `TCP_NODELAY` on) followed, for `https`, by
//!   the TLS handshake (rustls through `futures-rustls`), both together bounded by
//!   [`HttpOptions::connect_timeout`] (an `async_io::Timer`; default
//!   [`DEFAULT_CONNECT_TIMEOUT`]). A failure is reported to the machine for that
//!   exchange and kept, typed, as a [`TransportError`](crate::TransportError).
//! * The request bytes are written whole and flushed; response bytes are fed to the
//!   machine as they arrive (read while writing, too, so a server that answers early is
//!   never blocked). `poll_finished` with `reusable` puts the connection in the idle
//!   pool, otherwise it is closed; `poll_abort` closes it at once (a queued job is
//!   dropped). Idle connections are polled for reading too: a server closing one (or
//!   sending anything unasked) removes it from the pool.
//! * **Retry once**: a job written on a *reused* connection that fails to write, ends,
//!   or breaks before the first response byte is sent again, once, on a fresh
//!   connection: a keep-alive connection the server closed just as it was reused is the
//!   usual reason, and then the server never saw the request. (A server that instead
//!   died while working on a request on a reused connection gets it twice, as with any
//!   HTTP/1.1 client that retries stale connections.) A fresh connection failing is
//!   reported as is.
//! * After the machine closed, the remaining exchanges (a legacy session's `DELETE`)
//!   are driven for at most [`Options::grace_period`](crate::Options::grace_period), then
//!   every connection is dropped.
//!
//! The wire log sees the HTTP/1.1 text of every exchange, line by line: the request head
//! and body as sent (the `Authorization` value replaced by `[redacted]`) and the response
//! as received (head, then the body, with chunked framing and SSE fields as they are on
//! the wire), before TLS encryption or after decryption.
//!
//! # TLS
//!
//! With the `tls` cargo feature (on by default): rustls with its `ring` provider, trusting
//! the Mozilla roots of `webpki-roots` unless `HttpOptions::tls` supplies a configuration.
//! Whatever the configuration, ALPN is set to `http/1.1` alone (a copy is changed, not the
//! caller's), because HTTP/1.1 is all the machine speaks. The server name is the URL's
//! host (a DNS name or an IP address). `futures-rustls` adapts rustls to the `futures-io`
//! traits; it depends on nothing but rustls and futures-io.
//!
//! Without the feature, an `https` URL is refused by `connect_http` with
//! [`Error::TlsUnavailable`](crate::Error::TlsUnavailable), before anything connects,
//! unless the [`Connector`] says it [handles TLS](Connector::handles_tls) itself.
//!
//! # Name resolution
//!
//! IP literals are connected to directly. A DNS name is resolved by the OS resolver, run
//! on the `blocking` crate's thread pool (`blocking::unblock`, as `async-net` and
//! `smol::net` do), and its addresses are tried in turn: that pool is a helper of the
//! runtime crates, like async-io's reactor thread, not a task of ours. A [`Connector`]
//! replaces all of this.

mod connect;
mod transport;

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_lite::{AsyncRead, AsyncWrite};
/// The era verdict per origin: one type shared with `mcp-blocking` (a cache can serve
/// both).
pub use mcp_host::EraCache;
pub use mcp_host::http::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_CONNECTIONS, TlsUnavailable};
use mcp_host::wire_log::redacted;
use mcp_proto::client::http::HttpConfig;
use mcp_proto::http::EndpointUrl;

pub(crate) use transport::Http;

/// A byte stream HTTP/1.1 can be spoken on: what a [`Connector`] returns.
///
/// Implemented for every `AsyncRead + AsyncWrite + Send + Unpin` type (`TcpStream`,
/// `UnixStream`, a TLS stream, a pipe in a test).
pub trait AsyncStream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + ?Sized> AsyncStream for T {}

/// The future a [`Connector`] returns.
pub type ConnectFuture = Pin<Box<dyn Future<Output = io::Result<Box<dyn AsyncStream>>> + Send>>;

/// Opens the connections to the endpoint, instead of plain TCP: through a proxy, over a
/// Unix socket, in memory for a test, with another TLS stack.
///
/// The driver calls it for every new connection and polls the future itself, bounded by
/// [`HttpOptions::connect_timeout`]. For an `https` endpoint the driver runs the TLS
/// handshake on the returned stream, unless [`Connector::handles_tls`] says the stream
/// is already the TLS session.
///
/// ```
/// use std::sync::Arc;
/// use mcp_smol::{ConnectFuture, Connector, EndpointUrl, HttpOptions};
///
/// /// Every connection goes to one fixed address, whatever the URL's host says.
/// struct Fixed(std::net::SocketAddr);
///
/// impl Connector for Fixed {
///     fn connect(&self, _url: &EndpointUrl) -> ConnectFuture {
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
    /// Opens one connection for `url`.
    fn connect(&self, url: &EndpointUrl) -> ConnectFuture;

    /// True when the streams this connector returns are already TLS sessions for
    /// `https` endpoints (the driver then does no handshake of its own). Default false.
    /// Without the `tls` feature, only such a connector can serve `https` endpoints.
    fn handles_tls(&self) -> bool {
        false
    }
}

/// The default [`Connector`]: plain TCP to the URL's host and port (IP literals
/// directly, names through the OS resolver), with `TCP_NODELAY`. Public so that a custom
/// connector can wrap it.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpConnector;

impl Connector for TcpConnector {
    fn connect(&self, url: &EndpointUrl) -> ConnectFuture {
        connect::tcp(url)
    }
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
    /// Bound on connections open at once; requests beyond it wait for one to be free.
    /// Default [`DEFAULT_MAX_CONNECTIONS`]; 0 is taken as 1. A legacy server's own
    /// stream (the GET the machine opens after `initialize`, and any stream resumption)
    /// holds a connection for as long as it is open, so keep the bound at 2 or more.
    pub max_connections: usize,
    /// Remembers each origin's era, so that a legacy server is not probed again; see
    /// [`EraCache`] and [`connect_http_with`](crate::connect_http_with). Default none.
    pub era_cache: Option<EraCache>,
}

impl HttpOptions {
    /// The defaults: webpki roots, plain TCP, no authorization, loopback-only plain
    /// `http`, 10 s connect timeout, 16 connections, no era cache.
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

    /// The same options with `Authorization: Bearer <token>`.
    #[must_use]
    pub fn bearer_token(self, token: &str) -> Self {
        self.authorization(format!("Bearer {token}"))
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

    /// The same options with another bound on open connections (at least 1).
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
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
    ) -> Result<(HttpConfig, HttpSetup), TlsUnavailable> {
        let connector = self.connector.unwrap_or_else(|| Arc::new(TcpConnector));
        let needs_tls = url.is_tls() && !connector.handles_tls();
        #[cfg(feature = "tls")]
        let tls = needs_tls.then(|| connect::tls_connector(self.tls.as_ref()));
        #[cfg(not(feature = "tls"))]
        if needs_tls {
            return Err(TlsUnavailable::new("mcp-smol", url.as_str()));
        }
        let config = mcp_host::http::machine_config(
            url.clone(),
            self.authorization,
            concat!("mcp-smol/", env!("CARGO_PKG_VERSION")),
        );
        let setup = HttpSetup {
            url,
            connector,
            #[cfg(feature = "tls")]
            tls,
            connect_timeout: self.connect_timeout,
            max_connections: self.max_connections.max(1),
        };
        Ok((config, setup))
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
            .field("era_cache", &self.era_cache)
            .finish()
    }
}

/// What the driver needs besides the machine.
pub(crate) struct HttpSetup {
    pub(crate) url: EndpointUrl,
    pub(crate) connector: Arc<dyn Connector>,
    /// For `https` when the connector does not do TLS itself.
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<futures_rustls::TlsConnector>,
    pub(crate) connect_timeout: Duration,
    pub(crate) max_connections: usize,
}
