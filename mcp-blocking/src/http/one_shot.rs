//! A lone authorization request, outside any MCP connection: revocation when a person
//! logs out, say. The machine ([`mcp_proto::auth::Exchange`]) writes the request and
//! reads the response; this only connects, writes and reads.

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use mcp_io::{Error, TransportError, TransportErrorKind};
use mcp_proto::auth::{AuthRequest, AuthResponse, Exchange};

use super::{Connector, HttpOptions};

/// How long the response to a lone request may take once connected.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends `request` on a connection of its own (through `http`'s connector, TLS for
/// `https`, only to public addresses when the request says so) and returns the response,
/// its body capped at 64 KiB. No redirect is followed. Connecting may take
/// `http.connect_timeout`, the response 30 s more; [`send_auth_request_within`] bounds
/// the whole.
///
/// # Errors
///
/// [`Error::Transport`] when the server cannot be reached or the response cannot be
/// read in time.
pub fn send_auth_request(request: AuthRequest, http: &HttpOptions) -> Result<AuthResponse, Error> {
    let timeout = http.connect_timeout.saturating_add(RESPONSE_TIMEOUT);
    send(request, http, timeout, "HttpOptions::connect_timeout + 30s")
}

/// [`send_auth_request`] within `timeout` in all: connecting (at most
/// `http.connect_timeout` of it) and the response together.
///
/// # Errors
///
/// [`Error::Transport`] when the server cannot be reached, or the response cannot be
/// read within `timeout` (a read error naming the timeout).
pub fn send_auth_request_within(
    request: AuthRequest,
    http: &HttpOptions,
    timeout: Duration,
) -> Result<AuthResponse, Error> {
    send(request, http, timeout, "the timeout given")
}

/// [`send_auth_request_within`], a timeout's failure naming the limit as `limit`.
fn send(
    request: AuthRequest,
    http: &HttpOptions,
    timeout: Duration,
    limit: &str,
) -> Result<AuthResponse, Error> {
    let deadline = mcp_io::clock::std_after(timeout);
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
    let connect = http.connect_timeout.min(timeout);
    let stream = connector
        .connect_origin(exchange.origin(), &url, connect)
        .and_then(|s| s.split())
        .map_err(|e| {
            // In the words of a connection the client's machine gave up on.
            let e = if e.kind() == std::io::ErrorKind::TimedOut {
                let named = if connect < timeout {
                    "HttpOptions::connect_timeout"
                } else {
                    limit
                };
                let said = format!("not connected within {connect:?} ({named})");
                std::io::Error::new(std::io::ErrorKind::TimedOut, said)
            } else {
                e
            };
            failed(TransportErrorKind::Connect, e)
        })?;
    let (mut reader, mut writer) = (stream.reader, stream.writer);
    writer
        .write_all(&bytes)
        .and_then(|()| writer.flush())
        .map_err(|e| failed(TransportErrorKind::Write, e))?;
    // A server that never answers must not hold the caller: the connection is cut when
    // the response has not come in time (the sender dropped first means it came).
    let shutdown = stream.shutdown;
    let (answered, waiting) = mpsc::channel::<()>();
    let timed_out = Arc::new(AtomicBool::new(false));
    let timer_fired = Arc::clone(&timed_out);
    let left = deadline.saturating_duration_since(Instant::now());
    std::thread::spawn(move || {
        if waiting.recv_timeout(left) == Err(RecvTimeoutError::Timeout) {
            timer_fired.store(true, Ordering::SeqCst);
            shutdown.shutdown();
        }
    });
    let late = || {
        let e = std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no response within {timeout:?} ({limit})"),
        );
        failed(TransportErrorKind::Read, e)
    };
    let mut buf = vec![0u8; 16 * 1024];
    let outcome = loop {
        let done = match reader.read(&mut buf) {
            Ok(0) => exchange.handle_eof(),
            Ok(n) => exchange.handle_input(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => None,
            Err(_) if timed_out.load(Ordering::SeqCst) => break Err(late()),
            Err(e) => break Err(failed(TransportErrorKind::Read, e)),
        };
        if let Some(done) = done {
            break done.map(|(_, response)| response).map_err(|e| {
                if timed_out.load(Ordering::SeqCst) {
                    late()
                } else {
                    failed(TransportErrorKind::Read, std::io::Error::other(e))
                }
            });
        }
    };
    drop(answered);
    outcome
}
