//! Opening one connection: the connector's stream, then TLS for `https`.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use futures_rustls::TlsConnector;
use mcp_host::http::{http1_tls_config, tls_error};
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

/// The TLS connector for `config`, or for the default configuration; ALPN `http/1.1`
/// alone either way ([`http1_tls_config`]).
pub(super) fn tls_connector(config: Option<&Arc<rustls::ClientConfig>>) -> TlsConnector {
    TlsConnector::from(http1_tls_config(config))
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
            let kind = if tls_error(&e).is_some() {
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
