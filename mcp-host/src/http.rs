//! What both adapters do the same way for Streamable HTTP: the defaults, the machine's
//! configuration, and TLS (rustls with the `ring` provider, Mozilla's roots from
//! `webpki-roots`, ALPN `http/1.1`).
//!
//! The TLS items (`default_tls_config`, `http1_tls_config`, `tls_error`) exist with
//! the `tls` cargo feature only (on by default). Without it, [`TlsUnavailable`] is what
//! the adapters report for an `https://` endpoint they have no TLS for.

use std::fmt;
#[cfg(feature = "tls")]
use std::io;
#[cfg(feature = "tls")]
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_proto::client::http::HttpConfig;
use mcp_proto::http::EndpointUrl;
#[cfg(feature = "tls")]
use rustls::ClientConfig;

/// Default bound on the time to open a connection (TCP and TLS together): 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Default bound on connections to the endpoint at once: 16.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// The only ALPN protocol offered: HTTP/1.1 is all the machine speaks.
#[cfg(feature = "tls")]
const ALPN_HTTP1: &[u8] = b"http/1.1";

/// The HTTP machine's configuration for `url`: the `Authorization` value to send with
/// every request (never logged) and the `User-Agent` (`<adapter>/<version>`).
#[must_use]
pub fn machine_config(
    url: EndpointUrl,
    authorization: Option<String>,
    user_agent: &str,
) -> HttpConfig {
    let mut config = HttpConfig::new(url);
    config.authorization = authorization;
    user_agent.clone_into(&mut config.user_agent);
    config
}

/// The default TLS client configuration: the `ring` provider, its safe default
/// protocol versions (TLS 1.2 and 1.3), the Mozilla roots of `webpki-roots`, no client
/// certificate, ALPN `http/1.1`. Built once per process.
#[cfg(feature = "tls")]
#[must_use]
pub fn default_tls_config() -> Arc<ClientConfig> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    Arc::clone(CONFIG.get_or_init(|| {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
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
/// use mcp_host::http::{default_tls_config, http1_tls_config};
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
pub fn http1_tls_config(config: Option<&Arc<ClientConfig>>) -> Arc<ClientConfig> {
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
/// Both adapters return it before anything connects; its [kind](crate::Cause::kind) is
/// `tls-unavailable`.
///
/// ```
/// use mcp_host::http::TlsUnavailable;
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
    fn the_machine_config_carries_the_authorization_and_agent() {
        let url = EndpointUrl::parse("http://127.0.0.1:1/mcp", false).unwrap();
        let config = machine_config(url, Some("Bearer x".into()), "agent/1");
        assert_eq!(config.authorization.as_deref(), Some("Bearer x"));
        assert_eq!(config.user_agent, "agent/1");
    }
}
