//! Failures below HTTP, typed the same way by both adapters: [`TransportError`] with its
//! [`TransportErrorKind`], one message format, one set of kind names (`unreachable`,
//! `tls`, `transport`).
//!
//! An adapter tells the machine about such a failure with [`TransportError::failure`]: a
//! [`TransportFailure`] that carries the `TransportError` itself as its `source`. The
//! machine hands the failure back untouched on what it caused (a close reason, a failed
//! call), and [`TransportError::of_failure`] takes the very error out again by
//! downcasting, never by reading text.

use std::fmt;
use std::io;
use std::sync::Arc;

use mcp_proto::client::{TransportFailure, TransportFailureKind};

#[cfg(feature = "tls")]
use crate::http::tls_error;

/// Which step below HTTP failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The host name did not resolve.
    Resolve,
    /// Opening the connection failed (refused, no route, or the connector failed).
    Connect,
    /// Opening the connection (TCP and TLS handshake together) took longer than the
    /// `HttpOptions::connect_timeout`.
    ConnectTimeout,
    /// The TLS handshake or a TLS record failed: an untrusted or mismatched
    /// certificate, no common protocol version, an alert from the server.
    Tls,
    /// Writing a request on an open connection failed.
    Write,
    /// Reading a response on an open connection failed, or it ended mid-response.
    Read,
}

impl TransportErrorKind {
    /// The stable name scripts see (`Error::kind`): `unreachable` for
    /// [`Resolve`](Self::Resolve), [`Connect`](Self::Connect) and
    /// [`ConnectTimeout`](Self::ConnectTimeout), `tls` for [`Tls`](Self::Tls), `transport`
    /// for a connection that broke once open.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Resolve | Self::Connect | Self::ConnectTimeout => "unreachable",
            Self::Tls => "tls",
            Self::Write | Self::Read => "transport",
        }
    }
}

impl fmt::Display for TransportErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Resolve => "cannot resolve the host of",
            Self::Connect => "cannot connect to",
            Self::ConnectTimeout => "timed out connecting to",
            Self::Tls => "TLS failed with",
            Self::Write => "i/o error writing to",
            Self::Read => "i/o error reading from",
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
/// use mcp_io::{TransportError, TransportErrorKind};
///
/// let refused = io::Error::new(io::ErrorKind::ConnectionRefused, "connection refused");
/// let e = TransportError::new(TransportErrorKind::Connect, "http://127.0.0.1:9", refused);
/// assert_eq!(e.to_string(), "cannot connect to http://127.0.0.1:9: connection refused");
/// assert_eq!(e.kind().name(), "unreachable");
///
/// // Through the machine and back: the same error, not a copy made from its text.
/// let failure = e.failure();
/// let back = TransportError::of_failure(&failure, "http://127.0.0.1:9");
/// assert!(std::ptr::eq(back.io_error(), e.io_error()));
/// ```
#[derive(Debug, Clone)]
pub struct TransportError {
    kind: TransportErrorKind,
    endpoint: String,
    source: Arc<io::Error>,
}

impl TransportError {
    /// A failure at step `kind` talking to `endpoint` (the endpoint's origin,
    /// `scheme://host:port`). The step is refined from the error: a `rustls::Error`
    /// inside means [`Tls`](TransportErrorKind::Tls) (with the `tls` feature), a
    /// [`ResolveError`] inside [`Resolve`](TransportErrorKind::Resolve), and a connect
    /// that timed out [`ConnectTimeout`](TransportErrorKind::ConnectTimeout).
    #[must_use]
    pub fn new(kind: TransportErrorKind, endpoint: impl Into<String>, source: io::Error) -> Self {
        #[cfg(feature = "tls")]
        let tls = tls_error(&source).is_some();
        #[cfg(not(feature = "tls"))]
        let tls = false;
        let inner = source.get_ref();
        let kind = if tls {
            TransportErrorKind::Tls
        } else if inner.is_some_and(|e| e.is::<ResolveError>()) {
            TransportErrorKind::Resolve
        } else if kind == TransportErrorKind::Connect && source.kind() == io::ErrorKind::TimedOut {
            TransportErrorKind::ConnectTimeout
        } else {
            kind
        };
        TransportError {
            kind,
            endpoint: endpoint.into(),
            source: Arc::new(source),
        }
    }

    /// The failure as the machine takes it: its kind, the error in words, and this
    /// error as its `source`.
    #[must_use]
    pub fn failure(&self) -> TransportFailure {
        let kind = match self.kind {
            TransportErrorKind::Resolve => TransportFailureKind::Dns,
            TransportErrorKind::Tls => TransportFailureKind::Tls,
            TransportErrorKind::ConnectTimeout => TransportFailureKind::Timeout,
            _ => TransportFailureKind::of_io(self.source.kind()),
        };
        TransportFailure::new(kind, Described(&self.source).to_string())
            .with_source(Arc::new(self.clone()))
    }

    /// The error behind `failure`, as handed back by the machine: the one
    /// [`failure`](Self::failure) put there, or, for a failure the machine saw on its own
    /// (the connect deadline, a connection that ended mid-response), one made from its
    /// kind and detail, naming `endpoint`.
    #[must_use]
    pub fn of_failure(failure: &TransportFailure, endpoint: &str) -> Self {
        if let Some(e) = failure
            .source
            .as_deref()
            .and_then(|s| s.downcast_ref::<Self>())
        {
            return e.clone();
        }
        use TransportErrorKind as T;
        use TransportFailureKind as F;
        use io::ErrorKind as K;
        let (kind, io_kind) = match failure.kind {
            F::Dns => (T::Resolve, K::NotFound),
            F::Tls => (T::Tls, K::InvalidData),
            F::Refused => (T::Connect, K::ConnectionRefused),
            F::Unreachable => (T::Connect, K::HostUnreachable),
            F::Timeout => (T::ConnectTimeout, K::TimedOut),
            F::Reset => (T::Read, K::ConnectionReset),
            F::Closed => (T::Read, K::UnexpectedEof),
            _ => (T::Read, K::Other),
        };
        TransportError {
            kind,
            endpoint: endpoint.to_owned(),
            source: Arc::new(io::Error::new(io_kind, failure.detail.clone())),
        }
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
        write!(
            f,
            "{} {}: {}",
            self.kind,
            self.endpoint,
            Described(&self.source)
        )
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// An I/O error for people: certificate problems in words, everything else as it is.
struct Described<'a>(&'a io::Error);

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        #[cfg(feature = "tls")]
        match tls_error(self.0) {
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
                return write!(f, "the server's certificate {why} ({cert:?})");
            }
            Some(tls) => return write!(f, "{tls}"),
            None => {}
        }
        write!(f, "{}", self.0)
    }
}

/// Marks an I/O error as a failure to resolve the host name, so that
/// [`TransportError::new`] reports it as [`Resolve`](TransportErrorKind::Resolve). The
/// built-in connectors of both adapters use it; a connector of your own can too.
///
/// ```
/// use std::io;
/// use mcp_io::{ResolveError, TransportError, TransportErrorKind};
///
/// let e = ResolveError::io(io::ErrorKind::NotFound, "no such host");
/// let e = TransportError::new(TransportErrorKind::Connect, "http://localhost:9", e);
/// assert_eq!(e.kind(), TransportErrorKind::Resolve);
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

    const AT: &str = "http://127.0.0.1:9";

    #[test]
    fn connect_failures_are_typed_by_what_is_inside() {
        let connect = |e| TransportError::new(TransportErrorKind::Connect, AT, e);
        let e = connect(io::Error::new(io::ErrorKind::ConnectionRefused, "refused"));
        assert_eq!(e.kind(), TransportErrorKind::Connect);
        assert_eq!(
            e.to_string(),
            "cannot connect to http://127.0.0.1:9: refused"
        );
        assert_eq!(e.failure().kind, TransportFailureKind::Refused);
        let e = connect(io::Error::new(io::ErrorKind::TimedOut, "slow"));
        assert_eq!(e.kind(), TransportErrorKind::ConnectTimeout);
        assert_eq!(e.kind().name(), "unreachable");
        let e = connect(ResolveError::io(io::ErrorKind::NotFound, "no such host"));
        assert_eq!(e.kind(), TransportErrorKind::Resolve);
        assert_eq!(e.failure().kind, TransportFailureKind::Dns);
        let e = TransportError::new(TransportErrorKind::Read, AT, io::ErrorKind::TimedOut.into());
        assert_eq!(
            e.kind(),
            TransportErrorKind::Read,
            "only a connect times out"
        );
    }

    #[test]
    fn failures_the_machine_saw_alone_are_typed_by_their_kind() {
        let deadline = TransportFailure::new(TransportFailureKind::Timeout, "after 10s");
        let e = TransportError::of_failure(&deadline, AT);
        assert_eq!(e.kind(), TransportErrorKind::ConnectTimeout);
        assert_eq!(e.io_error().kind(), io::ErrorKind::TimedOut);
        assert_eq!(e.endpoint(), AT);
        let cut = TransportFailure::new(TransportFailureKind::Closed, "mid-response");
        assert_eq!(
            TransportError::of_failure(&cut, AT).kind().name(),
            "transport"
        );
    }

    #[cfg(feature = "tls")]
    #[test]
    fn certificate_failures_are_said_in_words() {
        let bad = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        let e = TransportError::new(TransportErrorKind::Connect, AT, bad);
        assert_eq!(e.kind(), TransportErrorKind::Tls);
        assert_eq!(e.kind().name(), "tls");
        let back = TransportError::of_failure(&e.failure(), "elsewhere");
        assert!(back.tls_error().is_some());
        assert!(
            back.to_string().contains("is not signed by a trusted root"),
            "{back}"
        );
    }
}
