//! Opening one connection: the connector's stream, then TLS for `https`.

use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::pin::Pin;
#[cfg(feature = "tls")]
use std::sync::Arc;

use async_io::Async;
#[cfg(feature = "tls")]
use futures_rustls::TlsConnector;
use mcp_host::ResolveError;
#[cfg(feature = "tls")]
use mcp_host::http::http1_tls_config;
use mcp_proto::http::EndpointUrl;
#[cfg(feature = "tls")]
use rustls::pki_types::ServerName;

use super::{AsyncStream, ConnectFuture, HttpSetup};
use crate::error::TransportError;
#[cfg(feature = "tls")]
use crate::error::TransportErrorKind;

/// A connection being opened: the stream, or what failed, typed.
pub(crate) type Opening =
    Pin<Box<dyn Future<Output = Result<Box<dyn AsyncStream>, TransportError>> + Send>>;

/// Plain TCP to the URL's host and port: an IP literal directly, a name through the OS
/// resolver (on the `blocking` pool, as async-net does), each address in turn.
pub(super) fn tcp(url: &EndpointUrl) -> ConnectFuture {
    let ip = url.ip();
    let host = url.host().to_owned();
    let port = url.port();
    Box::pin(async move {
        let stream = match ip {
            Some(ip) => Async::<TcpStream>::connect(SocketAddr::new(ip, port)).await?,
            None => connect_by_name(host, port).await?,
        };
        // Requests are written whole; waiting for more to coalesce only adds latency.
        stream.get_ref().set_nodelay(true)?;
        Ok(Box::new(stream) as Box<dyn AsyncStream>)
    })
}

/// Resolves `host` off the executor, then connects to each address in turn; the last
/// error when none accepts.
async fn connect_by_name(host: String, port: u16) -> io::Result<Async<TcpStream>> {
    let addrs = blocking::unblock(move || {
        (host.as_str(), port)
            .to_socket_addrs()
            .map(Iterator::collect::<Vec<_>>)
            .map_err(|e| ResolveError::io(e.kind(), e.to_string()))
    })
    .await?;
    let mut last = ResolveError::io(
        io::ErrorKind::NotFound,
        "the host name resolved to no address",
    );
    for addr in addrs {
        match Async::<TcpStream>::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The TLS connector for `config`, or for the default configuration; ALPN `http/1.1`
/// alone either way ([`http1_tls_config`]).
#[cfg(feature = "tls")]
pub(super) fn tls_connector(config: Option<&Arc<rustls::ClientConfig>>) -> TlsConnector {
    TlsConnector::from(http1_tls_config(config))
}

/// Opens one connection with `setup`: the connector, then TLS when needed. The timeout
/// is the caller's.
pub(super) fn open(setup: &HttpSetup) -> Opening {
    let connector = setup.connector.clone();
    #[cfg(feature = "tls")]
    let tls = setup.tls.clone();
    let url = setup.url.clone();
    Box::pin(async move {
        // A connector doing TLS itself may fail in the handshake, and a name may not
        // resolve: `from_connect` tells them apart.
        let stream = connector
            .connect(&url)
            .await
            .map_err(|e| TransportError::from_connect(&url, e))?;
        #[cfg(feature = "tls")]
        if let Some(tls) = tls {
            let tls_failure = |e| TransportError::new(TransportErrorKind::Tls, url.origin(), e);
            let name = ServerName::try_from(url.host().to_owned()).map_err(|e| {
                tls_failure(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{:?} is not a valid TLS server name: {e}", url.host()),
                ))
            })?;
            let stream = tls.connect(name, stream).await.map_err(tls_failure)?;
            return Ok(Box::new(stream) as Box<dyn AsyncStream>);
        }
        Ok(stream)
    })
}
