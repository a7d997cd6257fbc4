//! A lone authorization request, outside any MCP connection: revocation when a person
//! logs out, say. The machine ([`mcp_proto::auth::Exchange`]) writes the request and
//! reads the response; this only connects, writes and reads.

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use mcp_io::{Error, TransportError, TransportErrorKind};
use mcp_proto::auth::{AuthRequest, AuthResponse, Exchange};

use super::{Connector, HttpOptions};

/// How long the response to a lone request may take once connected.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends `request` on a connection of its own (through `http`'s connector, TLS for
/// `https`, only to public addresses when the request says so) and returns the response,
/// its body capped at 64 KiB. No redirect is followed.
///
/// # Errors
///
/// [`Error::Transport`] when the server cannot be reached or the response cannot be
/// read within 30 s.
pub fn send_auth_request(request: AuthRequest, http: &HttpOptions) -> Result<AuthResponse, Error> {
    let endpoint = request.url.origin().to_owned();
    let url = request.url.clone();
    let failed = |kind, e| Error::Transport(TransportError::new(kind, &endpoint, e));
    let user_agent = concat!("mcp-blocking/", env!("CARGO_PKG_VERSION"));
    let (mut exchange, bytes) = Exchange::start(request, user_agent, 64 * 1024)
        .map_err(|e| failed(TransportErrorKind::Connect, std::io::Error::other(e)))?;
    let connector: Arc<dyn Connector> = match &http.connector {
        Some(c) => Arc::clone(c),
        #[cfg(feature = "tls")]
        None => Arc::new(super::TlsConnector::new(mcp_io::http::http1_tls_config(
            http.tls.as_ref(),
        ))),
        #[cfg(not(feature = "tls"))]
        None => Arc::new(super::TcpConnector),
    };
    let stream = connector
        .connect_origin(exchange.origin(), &url, http.connect_timeout)
        .and_then(|s| s.split())
        .map_err(|e| failed(TransportErrorKind::Connect, e))?;
    let (mut reader, mut writer) = (stream.reader, stream.writer);
    writer
        .write_all(&bytes)
        .and_then(|()| writer.flush())
        .map_err(|e| failed(TransportErrorKind::Write, e))?;
    // A server that never answers must not hold the caller: the connection is cut when
    // the response has not come in time (the sender dropped first means it came).
    let shutdown = stream.shutdown;
    let (answered, waiting) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        if waiting.recv_timeout(RESPONSE_TIMEOUT) == Err(RecvTimeoutError::Timeout) {
            shutdown.shutdown();
        }
    });
    let mut buf = vec![0u8; 16 * 1024];
    let outcome = loop {
        let done = match reader.read(&mut buf) {
            Ok(0) => exchange.handle_eof(),
            Ok(n) => exchange.handle_input(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => None,
            Err(e) => break Err(failed(TransportErrorKind::Read, e)),
        };
        if let Some(done) = done {
            break done
                .map(|(_, response)| response)
                .map_err(|e| failed(TransportErrorKind::Read, std::io::Error::other(e)));
        }
    };
    drop(answered);
    outcome
}
