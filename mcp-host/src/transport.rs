//! Failures below HTTP, typed the same way by both adapters: [`TransportError`] with its
//! [`TransportErrorKind`], one message format, and the kind names of
//! [`Cause::kind`](crate::Cause::kind) (`unreachable`, `tls`, `transport`).

use std::fmt;
use std::io;
use std::sync::Arc;

use mcp_proto::http::EndpointUrl;

#[cfg(feature = "tls")]
use crate::http::tls_error;

/// Which step below HTTP failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The host name did not resolve.
    Resolve,
    /// Opening the connection failed (refused, no route, reset, or the connector failed).
    Connect,
    /// Opening the connection (TCP and TLS handshake together) took longer than the
    /// adapter's `HttpOptions::connect_timeout`.
    ConnectTimeout,
    /// The TLS handshake failed: an untrusted or mismatched certificate, no common
    /// protocol version, an alert from the server.
    Tls,
    /// Writing a request on an open connection failed.
    Write,
    /// Reading a response on an open connection failed.
    Read,
    /// Reading or writing an open connection failed (either way).
    Io,
}

impl TransportErrorKind {
    /// The stable name scripts see: `unreachable` for [`Resolve`](Self::Resolve),
    /// [`Connect`](Self::Connect) and [`ConnectTimeout`](Self::ConnectTimeout) (the
    /// endpoint could not be reached), `tls` for [`Tls`](Self::Tls), `transport` for a
    /// connection that broke once open.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            TransportErrorKind::Resolve
            | TransportErrorKind::Connect
            | TransportErrorKind::ConnectTimeout => "unreachable",
            TransportErrorKind::Tls => "tls",
            TransportErrorKind::Write | TransportErrorKind::Read | TransportErrorKind::Io => {
                "transport"
            }
        }
    }
}

impl fmt::Display for TransportErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportErrorKind::Resolve => "cannot resolve the host of",
            TransportErrorKind::Connect => "cannot connect to",
            TransportErrorKind::ConnectTimeout => "timed out connecting to",
            TransportErrorKind::Tls => "TLS handshake failed with",
            TransportErrorKind::Write => "i/o error writing to",
            TransportErrorKind::Read => "i/o error reading from",
            TransportErrorKind::Io => "i/o error talking to",
        })
    }
}

/// A failure below HTTP on a connection to an endpoint: the host did not resolve, the
/// connection was refused or timed out, the TLS handshake failed, or an open connection
/// broke. The same type in both adapters (`mcp_blocking::TransportError`,
/// `mcp_smol::TransportError`), so the same failure reads the same in both:
///
/// ```
/// use std::io;
/// use mcp_host::{Cause, TransportError, TransportErrorKind};
///
/// let refused = io::Error::new(io::ErrorKind::ConnectionRefused, "connection refused");
/// let e = TransportError::new(TransportErrorKind::Connect, "http://127.0.0.1:9", refused);
/// assert_eq!(e.to_string(), "cannot connect to http://127.0.0.1:9: connection refused");
/// assert_eq!(Cause::Transport(&e).kind(), "unreachable");
/// ```
#[derive(Debug, Clone)]
pub struct TransportError {
    kind: TransportErrorKind,
    endpoint: String,
    source: Arc<io::Error>,
}

impl TransportError {
    /// A failure at step `kind` talking to `endpoint` (the endpoint's origin,
    /// `scheme://host:port`).
    #[must_use]
    pub fn new(kind: TransportErrorKind, endpoint: impl Into<String>, source: io::Error) -> Self {
        TransportError {
            kind,
            endpoint: endpoint.into(),
            source: Arc::new(source),
        }
    }

    /// A failure to open a connection to `url`, its kind read from the error: a
    /// `rustls::Error` inside means [`Tls`](TransportErrorKind::Tls) (with the `tls`
    /// feature), a [`ResolveError`] inside means [`Resolve`](TransportErrorKind::Resolve),
    /// [`io::ErrorKind::TimedOut`] means [`ConnectTimeout`](TransportErrorKind::ConnectTimeout),
    /// anything else [`Connect`](TransportErrorKind::Connect).
    #[must_use]
    pub fn from_connect(url: &EndpointUrl, source: io::Error) -> Self {
        #[cfg(feature = "tls")]
        let is_tls = tls_error(&source).is_some();
        #[cfg(not(feature = "tls"))]
        let is_tls = false;
        let kind = if is_tls {
            TransportErrorKind::Tls
        } else if source
            .get_ref()
            .is_some_and(|e| e.downcast_ref::<ResolveError>().is_some())
        {
            TransportErrorKind::Resolve
        } else if source.kind() == io::ErrorKind::TimedOut {
            TransportErrorKind::ConnectTimeout
        } else {
            TransportErrorKind::Connect
        };
        TransportError::new(kind, url.origin(), source)
    }

    /// Which step failed.
    #[must_use]
    pub fn kind(&self) -> TransportErrorKind {
        self.kind
    }

    /// The endpoint's origin (`https://host:port`).
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The I/O error (its [`kind`](io::Error::kind) tells `ConnectionRefused`,
    /// `TimedOut`, …).
    #[must_use]
    pub fn io_error(&self) -> &io::Error {
        &self.source
    }

    /// The rustls error behind a TLS failure (`InvalidCertificate(UnknownIssuer)`, …).
    /// With the `tls` feature only.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls_error(&self) -> Option<&rustls::Error> {
        tls_error(&self.source)
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: ", self.kind, self.endpoint)?;
        describe(&self.source, f)
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// The I/O error for people: certificate problems in words, everything else as it is.
#[cfg(not(feature = "tls"))]
fn describe(e: &io::Error, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "{e}")
}

/// The I/O error for people: certificate problems in words, everything else as it is.
#[cfg(feature = "tls")]
fn describe(e: &io::Error, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match tls_error(e) {
        Some(rustls::Error::InvalidCertificate(cert)) => {
            use rustls::CertificateError as C;
            let why = match cert {
                C::UnknownIssuer => "is not signed by a trusted root",
                C::NotValidForName | C::NotValidForNameContext { .. } => {
                    "is not valid for this host name"
                }
                C::Expired | C::ExpiredContext { .. } => "has expired",
                C::NotValidYet | C::NotValidYetContext { .. } => "is not valid yet",
                C::Revoked => "is revoked",
                _ => "was rejected",
            };
            write!(f, "the server's certificate {why} ({cert:?})")
        }
        Some(tls) => write!(f, "{tls}"),
        None => write!(f, "{e}"),
    }
}

/// Marks an I/O error as a failure to resolve the host name, so that
/// [`TransportError::from_connect`] reports it as
/// [`Resolve`](TransportErrorKind::Resolve). The built-in connectors of both adapters use
/// it; a connector of your own can too.
///
/// ```
/// use std::io;
/// use mcp_host::{ResolveError, TransportError, TransportErrorKind};
/// use mcp_proto::http::EndpointUrl;
///
/// let url = EndpointUrl::parse("http://localhost:9/mcp", false).unwrap();
/// let e = ResolveError::io(io::ErrorKind::NotFound, "no such host");
/// assert_eq!(TransportError::from_connect(&url, e).kind(), TransportErrorKind::Resolve);
/// ```
#[derive(Debug)]
pub struct ResolveError(String);

impl ResolveError {
    /// An I/O error of `kind` saying `message`, marked as a resolution failure.
    #[must_use]
    pub fn io(kind: io::ErrorKind, message: impl Into<String>) -> io::Error {
        io::Error::new(kind, ResolveError(message.into()))
    }
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ResolveError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn url() -> EndpointUrl {
        EndpointUrl::parse("http://127.0.0.1:9/mcp", false).unwrap()
    }

    #[test]
    fn connect_failures_are_typed_by_what_is_inside() {
        let refused = io::Error::new(io::ErrorKind::ConnectionRefused, "refused");
        let e = TransportError::from_connect(&url(), refused);
        assert_eq!(e.kind(), TransportErrorKind::Connect);
        assert_eq!(e.endpoint(), "http://127.0.0.1:9");
        assert_eq!(
            e.to_string(),
            "cannot connect to http://127.0.0.1:9: refused"
        );
        let slow = io::Error::new(io::ErrorKind::TimedOut, "slow");
        let e = TransportError::from_connect(&url(), slow);
        assert_eq!(e.kind(), TransportErrorKind::ConnectTimeout);
        assert_eq!(e.kind().name(), "unreachable");
        let unknown = ResolveError::io(io::ErrorKind::NotFound, "no such host");
        let e = TransportError::from_connect(&url(), unknown);
        assert_eq!(e.kind(), TransportErrorKind::Resolve);
        assert!(e.to_string().ends_with(": no such host"), "{e}");
    }

    #[cfg(feature = "tls")]
    #[test]
    fn certificate_failures_are_said_in_words() {
        let bad = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        let e = TransportError::from_connect(&url(), bad);
        assert_eq!(e.kind(), TransportErrorKind::Tls);
        assert_eq!(e.kind().name(), "tls");
        assert!(e.tls_error().is_some());
        assert!(
            e.to_string().contains("is not signed by a trusted root"),
            "{e}"
        );
    }
}
