//! What both adapters do the same way for Streamable HTTP: [`HttpOptions`] and the
//! preparation of a connection from them ([`HttpOptions::prepare`]), the defaults, and
//! TLS (rustls with the `ring` provider, Mozilla's roots from `webpki-roots`, ALPN
//! `http/1.1`).
//!
//! The TLS items (`default_tls_config`, `http1_tls_config`, `tls_error`,
//! `HttpOptions::tls`) exist with the `tls` cargo feature only (on by default). Without
//! it, [`TlsUnavailable`] is what the adapters report for an `https://` endpoint they
//! have no TLS for.

use std::fmt;
#[cfg(feature = "tls")]
use std::io;
use std::sync::Arc;
#[cfg(feature = "tls")]
use std::sync::OnceLock;
use std::time::Duration;

use mcp_proto::auth::AuthConfig;
use mcp_proto::client::ClientConfig;
use mcp_proto::client::http::HttpConfig;
use mcp_proto::http::EndpointUrl;

use crate::{EraCache, Error, Inbox};

/// Default bound on the time to open a connection (TCP and TLS together): 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How much later than the machine's deadline the adapter's connector gives up on a
/// connection ([`HttpStart::connect_timeout`]). The machine's deadline is the one
/// reported, so that a connection that takes too long fails with the same words in both
/// adapters, naming [`HttpOptions::connect_timeout`] (or, while connecting, the
/// `Limits` that ran out); the connector's own bound only ends its work.
pub const CONNECT_BACKSTOP: Duration = Duration::from_millis(250);

/// The longest the machine waits for its last exchanges after close (a legacy
/// `DELETE`), whatever the grace period: 2 s.
pub const MAX_CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Default bound on connections to the endpoint at once: 16.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// Default age at which an idle keep-alive connection is closed rather than reused: 30 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The only ALPN protocol offered: HTTP/1.1 is all the machine speaks.
#[cfg(feature = "tls")]
const ALPN_HTTP1: &[u8] = b"http/1.1";

/// How a client reaches a Streamable HTTP endpoint: the same options in both adapters,
/// `C` being the adapter's connector trait (`mcp_blocking::HttpOptions` is
/// `HttpOptions<dyn mcp_blocking::http::Connector>`, `mcp_smol::HttpOptions` is
/// `HttpOptions<dyn mcp_smol::Connector>`).
///
/// The client machine decides everything about the connections within these bounds: how
/// many to open, which exchange rides on which, when an idle one is reused or expired,
/// and when a request that met a keep-alive connection the server had just closed is
/// sent again, once, on a fresh one (only when not one byte of its response came back; a
/// server that crashed while handling that very request would see it twice, as with any
/// HTTP client that retries on stale keep-alive connections). Plain `http://` is accepted for loopback hosts only, unless
/// [`allow_insecure_remote`](Self::allow_insecure_remote) says otherwise.
///
/// ```
/// use std::time::Duration;
/// use mcp_io::EraCache;
/// use mcp_io::http::HttpOptions;
///
/// let cache = EraCache::new();
/// let http = HttpOptions::<()>::new()
///     .bearer_token("s3cr3t")
///     .connect_timeout(Duration::from_secs(3))
///     .max_connections(4)
///     .era_cache(cache.clone());
/// assert_eq!(http.authorization.as_deref(), Some("Bearer s3cr3t"));
/// assert!(!format!("{http:?}").contains("s3cr3t"));
/// ```
#[non_exhaustive]
pub struct HttpOptions<C: ?Sized> {
    /// The rustls configuration for `https` endpoints. Default: [`default_tls_config`].
    /// ALPN is always `http/1.1` alone (on a copy, when this configuration says
    /// otherwise). With the `tls` feature only.
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Opens the connections instead of the adapter's plain TCP (a proxy, a Unix socket,
    /// a test double, another TLS stack). Default none.
    pub connector: Option<Arc<C>>,
    /// The `Authorization` header value sent with every request (`Bearer …`). Never
    /// written to the wire log, never shown by `Debug`. With [`HttpOptions::auth`] too,
    /// the flow's tokens win: this value goes out only while the flow holds none.
    pub authorization: Option<String>,
    /// More headers for every request to the MCP server, never to an authorization
    /// server ([`HttpConfig::headers`], which says which names are the client's own).
    /// `Debug` shows their names only; the wire log hides a value only under a name its
    /// redaction knows (add one with [`Options::redact_header`](crate::Options::redact_header)).
    /// Default none.
    pub headers: Vec<(String, String)>,
    /// Permit plain `http` to hosts that are not loopback. Default false: only
    /// `localhost`, 127.0.0.0/8 and `::1` may be reached without TLS.
    pub allow_insecure_remote: bool,
    /// Bound on opening one connection: resolving the name, TCP to each address and the
    /// TLS handshake together. Default [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Duration,
    /// Connections carrying requests at once (idle keep-alive ones included); requests
    /// beyond it wait for one. Long-lived event streams (a legacy server's GET stream,
    /// resumptions) are bounded separately by the same number, so they never starve
    /// calls. Default [`DEFAULT_MAX_CONNECTIONS`]; 0 is taken as 1.
    pub max_connections: usize,
    /// Idle keep-alive connections older than this are closed rather than reused.
    /// Default [`DEFAULT_IDLE_TIMEOUT`].
    pub idle_timeout: Duration,
    /// Remembers each origin's era, so that a legacy server is not probed again; see
    /// [`EraCache`]. Default none.
    pub era_cache: Option<EraCache>,
    /// OAuth authorization: a `401` starts the [flow](mcp_proto::auth) instead of
    /// failing. The adapter mixes fresh entropy into its seed and gives it the Unix
    /// time; a person's approval goes through the
    /// [`authorization_handler`](crate::Options::authorization_handler). Default none.
    pub auth: Option<AuthConfig>,
}

impl<C: ?Sized> HttpOptions<C> {
    /// The defaults: webpki roots, the adapter's TCP, no authorization, loopback-only
    /// plain `http`, 10 s connect timeout, 16 connections, 30 s idle timeout, no era
    /// cache.
    #[must_use]
    pub fn new() -> Self {
        HttpOptions {
            #[cfg(feature = "tls")]
            tls: None,
            connector: None,
            authorization: None,
            headers: Vec::new(),
            allow_insecure_remote: false,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            era_cache: None,
            auth: None,
        }
    }

    /// The same options with this TLS configuration (a private CA, client certificates,
    /// a pinned key…). With the `tls` feature only.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use mcp_io::http::HttpOptions;
    ///
    /// // Trust a private CA instead of the webpki roots.
    /// let ca_der = std::fs::read("private-ca.der").expect("the CA certificate");
    /// let mut roots = rustls::RootCertStore::empty();
    /// roots.add(ca_der.into()).expect("a valid CA certificate");
    /// let provider = Arc::new(rustls::crypto::ring::default_provider());
    /// let tls = rustls::ClientConfig::builder_with_provider(provider)
    ///     .with_safe_default_protocol_versions()
    ///     .expect("ring supports the defaults")
    ///     .with_root_certificates(roots)
    ///     .with_no_client_auth();
    /// let http = HttpOptions::<()>::new().tls(Arc::new(tls));
    /// # let _ = http;
    /// ```
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// The same options with this connector (anything the adapter's connector trait is
    /// implemented for).
    #[must_use]
    pub fn connector(mut self, connector: impl Into<Box<C>>) -> Self {
        self.connector = Some(Arc::from(connector.into()));
        self
    }

    /// The same options with this `Authorization` header value.
    #[must_use]
    pub fn authorization(mut self, value: impl Into<String>) -> Self {
        self.authorization = Some(value.into());
        self
    }

    /// The same options with one more header for every request to the MCP server (see
    /// [`HttpOptions::headers`]).
    ///
    /// ```
    /// use mcp_io::http::HttpOptions;
    ///
    /// let http = HttpOptions::<()>::new().header("X-Api-Key", "k3y");
    /// assert_eq!(http.headers, [("X-Api-Key".to_owned(), "k3y".to_owned())]);
    /// assert!(!format!("{http:?}").contains("k3y"));
    /// ```
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The same options with `Authorization: Bearer <token>`.
    #[must_use]
    pub fn bearer_token(self, token: &str) -> Self {
        self.authorization(format!("Bearer {token}"))
    }

    /// The same options, permitting (or not) plain `http` to hosts that are not loopback.
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

    /// The same options with an era cache (clones share their verdicts, across
    /// connections and both adapters).
    #[must_use]
    pub fn era_cache(mut self, cache: EraCache) -> Self {
        self.era_cache = Some(cache);
        self
    }

    /// What `connect_http_with` does before anything connects, the same in both
    /// adapters: `url` checked (plain `http` only to loopback unless allowed); for an
    /// `https` endpoint whose connector does not do TLS (`connector_does_tls`), the TLS
    /// configuration to handshake with, or without the `tls` feature
    /// [`Error::TlsUnavailable`]; what the [era cache](Self::era_cache) knows about the
    /// origin handed to the machine ([`ClientConfig::known_era`]: with `EraMode::Auto` a
    /// legacy origin gets `initialize` first, no probe, and is probed after all, once,
    /// if the server has moved on); and the machine's HTTP configuration with these
    /// options' `Authorization`, bounds and timeouts, the user agent
    /// `<adapter>/<version>`, and `grace` (at most [`MAX_CLOSE_WAIT`]) as the time the
    /// machine gives its last exchanges after close.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`] and [`Error::TlsUnavailable`].
    pub fn prepare(
        &self,
        adapter: &'static str,
        url: &str,
        config: ClientConfig,
        connector_does_tls: bool,
        grace: Duration,
    ) -> Result<HttpStart, Error> {
        let endpoint = EndpointUrl::parse(url, self.allow_insecure_remote).map_err(|source| {
            Error::InvalidUrl {
                url: url.to_owned(),
                source,
            }
        })?;
        let needs_tls = endpoint.is_tls() && !connector_does_tls;
        #[cfg(not(feature = "tls"))]
        if needs_tls {
            return Err(TlsUnavailable::new(adapter, endpoint.as_str()).into());
        }
        let hint = self
            .era_cache
            .as_ref()
            .and_then(|c| c.hint(endpoint.origin()));
        let config = if hint.is_some() {
            config.known_era(hint)
        } else {
            config
        };
        let mut http = HttpConfig::new(endpoint.clone());
        http.authorization.clone_from(&self.authorization);
        http.headers.clone_from(&self.headers);
        http.user_agent = format!("{adapter}/{}", env!("CARGO_PKG_VERSION"));
        http.pool.max_connections = self.max_connections.max(1);
        http.pool.idle_timeout = self.idle_timeout;
        http.pool.connect_timeout = self.connect_timeout;
        let connect_timeout = self.connect_timeout.saturating_add(CONNECT_BACKSTOP);
        http.close_timeout = grace.min(MAX_CLOSE_WAIT);
        if let Some(auth) = &self.auth {
            let (mut auth, unix) =
                crate::auth::prepare_auth(auth.clone()).map_err(Error::Entropy)?;
            auth.allow_insecure |= self.allow_insecure_remote;
            http.auth = Some(auth);
            http.unix_time = unix;
        }
        Ok(HttpStart {
            #[cfg(feature = "tls")]
            // The authorization flow may reach an `https` authorization server from an
            // `http` (loopback) endpoint: TLS is ready whenever it may be needed.
            tls: (needs_tls || (self.auth.is_some() && !connector_does_tls))
                .then(|| http1_tls_config(self.tls.as_ref())),
            inbox: Inbox::for_client(&config)
                .recording_era(self.era_cache.clone(), endpoint.origin()),
            connect_timeout,
            url: endpoint,
            config,
            http,
        })
    }
}

impl<C: ?Sized> Clone for HttpOptions<C> {
    fn clone(&self) -> Self {
        HttpOptions {
            #[cfg(feature = "tls")]
            tls: self.tls.clone(),
            connector: self.connector.clone(),
            authorization: self.authorization.clone(),
            headers: self.headers.clone(),
            era_cache: self.era_cache.clone(),
            auth: self.auth.clone(),
            ..*self
        }
    }
}

impl<C: ?Sized> Default for HttpOptions<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: ?Sized> fmt::Debug for HttpOptions<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut f = f.debug_struct("HttpOptions");
        #[cfg(feature = "tls")]
        f.field("tls", &self.tls.is_some());
        f.field("connector", &self.connector.is_some())
            .field(
                "authorization",
                &crate::wire_log::redacted(&self.authorization),
            )
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("allow_insecure_remote", &self.allow_insecure_remote)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_connections", &self.max_connections)
            .field("idle_timeout", &self.idle_timeout)
            .field("era_cache", &self.era_cache)
            .field("auth", &self.auth)
            .finish()
    }
}

/// A connection to an endpoint, ready to start: what [`HttpOptions::prepare`] makes.
#[derive(Debug)]
#[non_exhaustive]
pub struct HttpStart {
    /// The endpoint.
    pub url: EndpointUrl,
    /// The client's configuration, with the era cache's verdict for the origin.
    pub config: ClientConfig,
    /// The machine's HTTP configuration.
    pub http: HttpConfig,
    /// The TLS configuration for the handshakes the adapter does itself (an `https`
    /// endpoint whose connector does not do TLS), ALPN `http/1.1` alone. With the `tls`
    /// feature only.
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Where the connection's events are kept; it records the era verdict in the
    /// [era cache](HttpOptions::era_cache).
    pub inbox: Inbox,
    /// What the adapter's connector is given to open one connection:
    /// [`HttpOptions::connect_timeout`] and [`CONNECT_BACKSTOP`] more, so that the
    /// machine's deadline, the same in both adapters, is the one reported, and the
    /// connector still ends soon after.
    pub connect_timeout: Duration,
}

/// The default TLS client configuration: the `ring` provider, its safe default
/// protocol versions (TLS 1.2 and 1.3), the Mozilla roots of `webpki-roots`, no client
/// certificate, ALPN `http/1.1`. Built once per process.
#[cfg(feature = "tls")]
#[must_use]
pub fn default_tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    Arc::clone(CONFIG.get_or_init(|| {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("the ring provider supports the default protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
        Arc::new(config)
    }))
}

/// The TLS configuration to connect with: `config`, or the [default](default_tls_config)
/// one, with ALPN offering `http/1.1` alone. A caller's configuration that offers
/// anything else is copied and the copy changed (the caller's is left alone): a server
/// picking `h2` would otherwise answer in a protocol the machine cannot read.
///
/// ```
/// use std::sync::Arc;
/// use mcp_io::http::{default_tls_config, http1_tls_config};
///
/// assert_eq!(http1_tls_config(None).alpn_protocols, [b"http/1.1".to_vec()]);
/// let mut theirs = (*default_tls_config()).clone();
/// theirs.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
/// let theirs = Arc::new(theirs);
/// assert_eq!(http1_tls_config(Some(&theirs)).alpn_protocols, [b"http/1.1".to_vec()]);
/// assert_eq!(theirs.alpn_protocols.len(), 2);
/// ```
#[cfg(feature = "tls")]
#[must_use]
pub fn http1_tls_config(config: Option<&Arc<rustls::ClientConfig>>) -> Arc<rustls::ClientConfig> {
    let Some(config) = config else {
        return default_tls_config();
    };
    if config.alpn_protocols == [ALPN_HTTP1] {
        return Arc::clone(config);
    }
    let mut copy = (**config).clone();
    copy.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    Arc::new(copy)
}

/// The rustls error inside an IO error, when there is one: what tells a TLS failure
/// (an untrusted certificate, say) from other connection failures.
#[cfg(feature = "tls")]
#[must_use]
pub fn tls_error(error: &io::Error) -> Option<&rustls::Error> {
    error.get_ref()?.downcast_ref::<rustls::Error>()
}

/// An `https://` endpoint, but TLS support was compiled out: the adapter was built
/// without its `tls` cargo feature, and no connector that does TLS itself was given.
/// Both adapters return it before anything connects; its [kind](crate::Error::kind) is
/// `tls-unavailable`.
///
/// ```
/// use mcp_io::http::TlsUnavailable;
///
/// let e = TlsUnavailable::new("mcp-smol", "https://mcp.example.com/mcp");
/// assert_eq!(e.url(), "https://mcp.example.com/mcp");
/// assert!(e.to_string().contains("TLS support was compiled out of mcp-smol"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsUnavailable {
    adapter: &'static str,
    url: String,
}

impl TlsUnavailable {
    /// `adapter` (the crate name, for the message) has no TLS for `url`.
    #[must_use]
    pub fn new(adapter: &'static str, url: impl Into<String>) -> Self {
        TlsUnavailable {
            adapter,
            url: url.into(),
        }
    }

    /// The endpoint URL as given.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl fmt::Display for TlsUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot connect to {}: TLS support was compiled out of {} (its `tls` cargo \
             feature is off); build it with that feature, or give a connector that does TLS",
            self.url, self.adapter
        )
    }
}

impl std::error::Error for TlsUnavailable {}

/// The addresses a connection to `origin` may use, of those its host resolved to: all of
/// them, or for an origin to be reached only at public addresses
/// ([`Origin::public_only`](mcp_proto::client::Origin::public_only)) the public ones,
/// and an error naming the host when none is. Both adapters' built-in connectors
/// connect only to what this returns, so the address checked is the address used.
///
/// # Errors
///
/// [`std::io::ErrorKind::PermissionDenied`] when a public-only origin has no public
/// address.
///
/// ```
/// use mcp_io::http::admitted_addresses;
/// use mcp_proto::client::Origin;
/// use mcp_proto::http::EndpointUrl;
///
/// let origin = Origin::of(&EndpointUrl::parse("http://127.0.0.1:9000/", false).unwrap());
/// let local = vec!["127.0.0.1:9000".parse().unwrap()];
/// assert_eq!(admitted_addresses(&origin, local.clone()).unwrap(), local);
/// ```
pub fn admitted_addresses(
    origin: &mcp_proto::client::Origin,
    addrs: Vec<std::net::SocketAddr>,
) -> std::io::Result<Vec<std::net::SocketAddr>> {
    if !origin.public_only() {
        return Ok(addrs);
    }
    let all = addrs.len();
    let public: Vec<_> = addrs
        .into_iter()
        .filter(|a| mcp_proto::auth::is_public(a.ip()))
        .collect();
    if public.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} resolves to no public address ({all} local or private): an authorization \
                 server named by a public MCP server must be public",
                origin.host()
            ),
        ));
    }
    Ok(public)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "tls")]
    #[test]
    fn the_default_config_is_built_once_and_speaks_http1() {
        let a = default_tls_config();
        assert!(Arc::ptr_eq(&a, &default_tls_config()));
        assert_eq!(a.alpn_protocols, [ALPN_HTTP1.to_vec()]);
        assert!(
            Arc::ptr_eq(&http1_tls_config(Some(&a)), &a),
            "no needless copy"
        );
    }

    #[cfg(feature = "tls")]
    #[test]
    fn rustls_errors_are_recognised_inside_io_errors() {
        let e = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        assert!(tls_error(&e).is_some());
        assert!(tls_error(&io::Error::other("x")).is_none());
    }

    #[test]
    fn prepare_hands_the_options_and_the_cached_era_to_the_machine() {
        use mcp_proto::{Era, ProtocolVersion};

        let cache = EraCache::new();
        cache.record("http://127.0.0.1:1", ProtocolVersion::V2025_11_25);
        let http = HttpOptions::<()>::new()
            .bearer_token("x")
            .header("X-Api-Key", "k")
            .max_connections(0)
            .era_cache(cache);
        let config = ClientConfig::new("a", "1");
        let start = http
            .prepare(
                "agent",
                "http://127.0.0.1:1/mcp",
                config.clone(),
                false,
                Duration::from_secs(5),
            )
            .expect("loopback");
        assert_eq!(start.http.authorization.as_deref(), Some("Bearer x"));
        assert_eq!(start.http.headers, [("X-Api-Key".into(), "k".into())]);
        assert!(start.http.user_agent.starts_with("agent/"));
        assert_eq!(start.http.pool.max_connections, 1);
        assert_eq!(
            start.http.close_timeout, MAX_CLOSE_WAIT,
            "5 s of grace, capped"
        );
        assert_eq!(
            start.config.known_era.map(|(era, _)| era),
            Some(Era::Legacy)
        );
        let refused = http.prepare(
            "agent",
            "http://example.com/mcp",
            config,
            false,
            Duration::ZERO,
        );
        assert_eq!(refused.expect_err("remote").kind(), "invalid-url");
    }

    /// The machine's deadline is the one reported: the connector is given
    /// `HttpOptions::connect_timeout` and the backstop more, whatever the `Limits` for
    /// connecting as a whole (the machine bounds those itself).
    #[test]
    fn the_connector_gets_the_connect_timeout_and_the_backstop_more() {
        let mut config = ClientConfig::new("a", "1");
        config.limits.connect_timeout = Duration::from_millis(200);
        let start = HttpOptions::<()>::new()
            .connect_timeout(Duration::from_millis(700))
            .prepare(
                "agent",
                "http://127.0.0.1:1/mcp",
                config,
                false,
                Duration::ZERO,
            )
            .expect("loopback");
        assert_eq!(start.http.pool.connect_timeout, Duration::from_millis(700));
        assert_eq!(
            start.connect_timeout,
            Duration::from_millis(700) + CONNECT_BACKSTOP
        );
        assert!(CONNECT_BACKSTOP > Duration::ZERO);
        let start = HttpOptions::<()>::new()
            .connect_timeout(Duration::MAX)
            .prepare(
                "agent",
                "http://127.0.0.1:1/mcp",
                ClientConfig::new("a", "1"),
                false,
                Duration::ZERO,
            )
            .expect("loopback");
        assert_eq!(start.connect_timeout, Duration::MAX, "no overflow");
    }
}
