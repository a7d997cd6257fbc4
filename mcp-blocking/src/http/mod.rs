//! Streamable HTTP (and HTTPS) for [`crate::Client`].
//!
//! The machine, [`mcp_proto::client::Client`] over HTTP, decides everything about the
//! connections: how many to open (at most [`HttpOptions::max_connections`] carrying
//! requests, and as many for long-lived streams), which exchange rides on which, when an
//! idle keep-alive connection is reused or expired ([`HttpOptions::idle_timeout`]), how
//! long opening one may take ([`HttpOptions::connect_timeout`]), and when a request that
//! met a keep-alive connection the server had just closed is sent again, once, on a
//! fresh one (only when not one byte of its response came back; a server that crashed
//! while handling that very request would see it twice, as with any HTTP client that
//! retries on stale keep-alive connections: [`crate::Client::http_retries`] counts them).
//! This module only carries out what it asks: each connection is opened on a thread of
//! its own, then read continuously by one thread and written by another, all of them
//! reporting to the caller's thread over one bounded channel (the stdio pattern).
//!
//! Connections come from a [`Connector`]: [`TcpConnector`] for `http://`,
//! `TlsConnector` (rustls with the ring provider; Mozilla roots from `webpki-roots`
//! unless you pass your own `rustls::ClientConfig`) for `https://`, or your own.
//! Failures below HTTP are typed ([`TransportError`], with the [`TransportStage`] that
//! failed); when they stop the connection from being set up at all, `connect_http`
//! returns them as [`crate::Error::Transport`].
//!
//! `TlsConnector`, `HttpOptions::tls` and the `rustls` re-export come with the `tls`
//! cargo feature (on by default). Without it, an `https://` URL is refused before
//! anything connects, with [`crate::Error::TlsUnavailable`], unless
//! [`HttpOptions::connector`] gives a connector that does TLS itself.
//!
//! Plain `http://` is accepted for loopback hosts only, unless
//! [`HttpOptions::allow_insecure_remote`] says otherwise.
//!
//! ```no_run
//! use mcp_blocking::{Client, HttpOptions, Options};
//! use mcp_blocking::mcp_proto::client::ClientConfig;
//!
//! # fn main() -> Result<(), mcp_blocking::Error> {
//! let config = ClientConfig::new("my-app", "1.0");
//! let http = HttpOptions::new().bearer_token("s3cr3t");
//! let mut client =
//!     Client::connect_http_with("https://mcp.example.com/mcp", config, Options::new(), http)?;
//! for tool in client.list_tools()? {
//!     println!("{}", tool.name);
//! }
//! for (tool, why) in client.excluded_tools() {
//!     println!("left out: {tool} ({why})");
//! }
//! client.close();
//! # Ok(())
//! # }
//! ```

mod connector;
mod conns;
#[cfg(feature = "tls")]
mod tls;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_host::http::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_CONNECTIONS};
use mcp_host::wire_log::redacted;

pub use connector::{
    Connector, Halves, ShutdownHandle, Stream, TcpConnector, TransportError, TransportStage,
};
pub(crate) use conns::HttpConns;
/// The era verdict per origin: one type shared with `mcp-smol` (a cache can serve both).
pub use mcp_host::EraCache;
pub use mcp_host::http::TlsUnavailable;
#[cfg(feature = "tls")]
pub use mcp_host::http::default_tls_config;
use mcp_proto::client::http::HttpConfig;
use mcp_proto::client::http::pool::PoolConfig;
use mcp_proto::http::EndpointUrl;
/// The TLS library, re-exported so a custom [`rustls::ClientConfig`] needs no second
/// dependency (and cannot be of another version). With the `tls` feature only.
#[cfg(feature = "tls")]
pub use rustls;
#[cfg(feature = "tls")]
pub use tls::TlsConnector;

/// How [`crate::Client::connect_http_with`] reaches the endpoint.
///
/// ```
/// use std::time::Duration;
/// use mcp_blocking::{EraCache, HttpOptions};
///
/// let cache = EraCache::new();
/// let http = HttpOptions::new()
///     .authorization("Bearer abc")
///     .connect_timeout(Duration::from_secs(3))
///     .era_cache(cache.clone());
/// assert!(!format!("{http:?}").contains("abc"));
/// ```
#[non_exhaustive]
#[derive(Clone)]
pub struct HttpOptions {
    /// The rustls configuration for `https://` (ignored when a [`HttpOptions::connector`]
    /// is set). Default: [`default_tls_config`]. ALPN is always `http/1.1` alone (on a
    /// copy, when this configuration says otherwise): HTTP/1.1 is all the client speaks.
    /// With the `tls` feature only.
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Opens the connections, replacing the built-in TCP and TLS connectors.
    pub connector: Option<Arc<dyn Connector>>,
    /// The `Authorization` header value sent with every request (`Bearer …`). Never
    /// logged, never shown by `Debug`.
    pub authorization: Option<String>,
    /// Allow plain `http://` to hosts that are not loopback. Default false.
    pub allow_insecure_remote: bool,
    /// Bound on setting up one connection (TCP connect, TLS handshake). Default 10 s
    /// ([`mcp_host::http::DEFAULT_CONNECT_TIMEOUT`]).
    pub connect_timeout: Duration,
    /// Connections carrying requests at once (idle keep-alive ones included); requests
    /// beyond wait for one. Long-lived event streams (a legacy server's GET stream,
    /// resumptions) are bounded separately by the same number, so they never starve
    /// calls. Default 16 ([`mcp_host::http::DEFAULT_MAX_CONNECTIONS`]); at least 1.
    pub max_connections: usize,
    /// Idle keep-alive connections older than this are closed rather than reused.
    /// Default 30 s.
    pub idle_timeout: Duration,
    /// Remembers each origin's era; see [`EraCache`]. Default none.
    pub era_cache: Option<EraCache>,
}

impl HttpOptions {
    /// The defaults.
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

    /// The same options with this rustls configuration for `https://`. With the `tls`
    /// feature only.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls_config(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// The same options with a connector of your own.
    #[must_use]
    pub fn connector(mut self, connector: impl Connector + 'static) -> Self {
        self.connector = Some(Arc::new(connector));
        self
    }

    /// The same options with this `Authorization` header value.
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

    /// The same options, allowing plain `http://` to hosts that are not loopback.
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

    /// The same options with an era cache.
    #[must_use]
    pub fn era_cache(mut self, cache: EraCache) -> Self {
        self.era_cache = Some(cache);
        self
    }

    /// The connector to use for `url`.
    ///
    /// # Errors
    /// [`TlsUnavailable`] for `https://` without the `tls` feature and without a
    /// connector of the caller's.
    pub(crate) fn connector_for(
        &self,
        url: &EndpointUrl,
    ) -> Result<Arc<dyn Connector>, TlsUnavailable> {
        Ok(match (&self.connector, url.is_tls()) {
            (Some(c), _) => Arc::clone(c),
            (None, false) => Arc::new(TcpConnector),
            #[cfg(feature = "tls")]
            (None, true) => Arc::new(match &self.tls {
                Some(config) => TlsConnector::new(Arc::clone(config)),
                None => TlsConnector::webpki_roots(),
            }),
            #[cfg(not(feature = "tls"))]
            (None, true) => return Err(TlsUnavailable::new("mcp-blocking", url.as_str())),
        })
    }

    /// The machine's HTTP configuration for `url`: these options' `Authorization`,
    /// connection bound, idle timeout and connect timeout.
    pub(crate) fn machine_config(&self, url: EndpointUrl) -> HttpConfig {
        let agent = concat!("mcp-blocking/", env!("CARGO_PKG_VERSION"));
        let mut config = mcp_host::http::machine_config(url, self.authorization.clone(), agent);
        let mut pool = PoolConfig::default();
        pool.max_connections = self.max_connections.max(1);
        pool.idle_timeout = self.idle_timeout;
        pool.connect_timeout = self.connect_timeout;
        config.pool = pool;
        config
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
