//! Opening one connection: the connector's stream, then TLS for `https`.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use futures_rustls::TlsConnector;
use mcp_proto::http::EndpointUrl;
use rustls::pki_types::ServerName;

use super::{AsyncStream, ConnectFuture, HttpSetup};
use crate::error::{TransportError, TransportErrorKind};

/// A connection being opened: the stream, or what failed, typed.
pub(crate) type Opening =
    Pin<Box<dyn Future<Output = Result<Box<dyn AsyncStream>, TransportError>> + Send>>;

/// Plain TCP to the URL's host and port.
pub(super) fn tcp(url: &EndpointUrl) -> ConnectFuture {
    let ip = url.ip();
    let host = url.host().to_owned();
    let port = url.port();
    Box::pin(async move {
        let stream = match ip {
            Some(ip) => smol::net::TcpStream::connect(SocketAddr::new(ip, port)).await?,
            None => smol::net::TcpStream::connect((host.as_str(), port)).await?,
        };
        // Requests are written whole; waiting for more to coalesce only adds latency.
        stream.set_nodelay(true)?;
        Ok(Box::new(stream) as Box<dyn AsyncStream>)
    })
}

/// The TLS connector for `config`, or for the default configuration; ALPN `http/1.1`.
pub(super) fn tls_connector(config: Option<&rustls::ClientConfig>) -> TlsConnector {
    TlsConnector::from(tls_config(config))
}

fn tls_config(config: Option<&rustls::ClientConfig>) -> Arc<rustls::ClientConfig> {
    let mut config = match config {
        Some(c) => c.clone(),
        None => (*default_tls()).clone(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// rustls with the ring provider, its safe default versions, and the webpki roots.
/// Built once per process.
fn default_tls() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("the ring provider supports the default protocol versions")
                .with_root_certificates(roots)
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

/// Opens one connection with `setup`: the connector, then TLS when needed. The timeout
/// is the caller's.
pub(super) fn open(setup: &HttpSetup) -> Opening {
    let connector = setup.connector.clone();
    let tls = setup.tls.clone();
    let url = setup.url.clone();
    Box::pin(async move {
        let origin = url.origin();
        let stream = connector.connect(&url).await.map_err(|e| {
            // A connector doing TLS itself may fail in the handshake.
            let kind = if is_tls_error(&e) {
                TransportErrorKind::Tls
            } else {
                TransportErrorKind::Connect
            };
            TransportError::new(kind, origin, e)
        })?;
        let Some(tls) = tls else {
            return Ok(stream);
        };
        let tls_failure = |e| TransportError::new(TransportErrorKind::Tls, origin, e);
        let name = ServerName::try_from(url.host().to_owned()).map_err(|e| {
            tls_failure(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{:?} is not a valid TLS server name: {e}", url.host()),
            ))
        })?;
        let stream = tls.connect(name, stream).await.map_err(tls_failure)?;
        Ok(Box::new(stream) as Box<dyn AsyncStream>)
    })
}

fn is_tls_error(e: &io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_tls_config_speaks_http1_only() {
        assert_eq!(tls_config(None).alpn_protocols, [b"http/1.1".to_vec()]);
        let mut theirs = (*default_tls()).clone();
        theirs.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        assert_eq!(
            tls_config(Some(&theirs)).alpn_protocols,
            [b"http/1.1".to_vec()]
        );
        assert_eq!(
            theirs.alpn_protocols.len(),
            2,
            "the caller's config is not changed"
        );
    }

    #[test]
    fn rustls_errors_are_recognised_inside_io_errors() {
        let e = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        assert!(is_tls_error(&e));
        assert!(!is_tls_error(&io::Error::other("x")));
    }
}
