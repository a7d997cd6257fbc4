//! The one error type of this crate.

use std::fmt;
use std::io;
use std::sync::Arc;

use mcp_host::Cause;
use mcp_host::http::TlsUnavailable;
use mcp_proto::ErrorObject;
use mcp_proto::client::{
    ApiMisuse, CallError, CloseReason, TransportFailure, TransportFailureKind,
};
use mcp_proto::http::UrlError;

/// Everything that can go wrong with a connection or a call.
///
/// `Error` is `Clone` (io errors are shared behind an [`Arc`]) so that one failure can be
/// handed to every call it ends.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server process could not be started (program not found on `PATH`, not
    /// executable, …).
    #[error("cannot start the server `{program}`: {source}")]
    Spawn {
        /// The program as the caller named it.
        program: String,
        /// What the operating system said.
        #[source]
        source: Arc<io::Error>,
    },
    /// The server was started but the connection was never established (returned by
    /// [`Client::connected`](crate::Client::connected)).
    #[error("could not connect: {reason}")]
    Connect {
        /// Why the handshake ended.
        reason: CloseReason,
        /// The newest bytes the server wrote to stderr (often the real explanation).
        /// Not part of the message: it is the server's text and may be long.
        stderr: String,
    },
    /// The call reached the server (or was about to) and failed: a JSON-RPC error, a
    /// timeout, a cancellation, an invalid answer, a refused input request, ….
    #[error(transparent)]
    Call(CallError),
    /// The connection is over, and why. Calls that were in flight when it closed fail
    /// with this too (never with `Call(CallError::Closed(_))`).
    #[error("connection closed: {0}")]
    Closed(CloseReason),
    /// The caller broke an API rule (too many calls in flight, params not an object, …).
    #[error("invalid use of the client: {0}")]
    Misuse(ApiMisuse),
    /// Reading from or writing to the server process, or waiting for it, failed.
    #[error("i/o error talking to the server process: {0}")]
    Io(Arc<io::Error>),
    /// The HTTP endpoint URL was refused by [`connect_http`](crate::connect_http): not
    /// `http`/`https`, malformed, or plain `http` to a host that is not loopback
    /// without [`HttpOptions::allow_insecure_remote`](crate::HttpOptions::allow_insecure_remote).
    #[error("invalid endpoint URL: {0}")]
    InvalidUrl(UrlError),
    /// The HTTP endpoint is `https`, but this build has no TLS: the crate's `tls` cargo
    /// feature is off, and the [`Connector`](crate::Connector) (if any) does not
    /// [handle TLS](crate::Connector::handles_tls) itself. Returned by
    /// [`connect_http`](crate::connect_http) before anything connects; never with the
    /// `tls` feature on.
    #[error(transparent)]
    TlsUnavailable(TlsUnavailable),
    /// The HTTP endpoint could not be reached, or the connection broke below HTTP, so the
    /// connection could not be established or had to close: connection refused, no route,
    /// a connect timeout, a TLS handshake failure (an untrusted certificate, say).
    ///
    /// A call whose own exchange broke this way fails with it too; over HTTP that ends
    /// only the call: the next one opens a fresh connection.
    #[error(transparent)]
    Transport(TransportError),
    /// The [`Driver`](crate::Driver) was dropped before the connection ended, so nothing
    /// can answer this request.
    #[error("the mcp-smol Driver is not running (it was dropped before the connection closed)")]
    DriverGone,
}

impl Error {
    /// The protocol-level cause, in the view both adapters share; `None` for the
    /// failures of this crate's own (`Io`, `Transport`, `DriverGone`).
    fn cause(&self) -> Option<Cause<'_>> {
        Some(match self {
            Error::Spawn { .. } => Cause::Spawn,
            Error::Connect { reason, .. } => Cause::Connect(reason),
            Error::Closed(reason) => Cause::Closed(reason),
            Error::Call(e) => Cause::Call(e),
            Error::Misuse(_) => Cause::Misuse,
            Error::InvalidUrl(_) => Cause::InvalidUrl,
            Error::TlsUnavailable(_) => Cause::TlsUnavailable,
            Error::Io(_) | Error::Transport(_) | Error::DriverGone => return None,
        })
    }

    /// The JSON-RPC error object the server sent, when the failure is one (also the
    /// error carried in the body of a failed HTTP exchange).
    #[must_use]
    pub fn error_object(&self) -> Option<&ErrorObject> {
        self.cause()?.error_object()
    }

    /// The server's JSON-RPC error code, when the failure is a server error.
    #[must_use]
    pub fn code(&self) -> Option<i64> {
        self.error_object().map(|e| e.code)
    }

    /// The HTTP status of a failed HTTP exchange (never set for stdio servers).
    #[must_use]
    pub fn http_status(&self) -> Option<u16> {
        self.cause()?.http_status()
    }

    /// Why the connection closed, when this error says it did.
    #[must_use]
    pub fn close_reason(&self) -> Option<&CloseReason> {
        match self {
            Error::Closed(r) | Error::Connect { reason: r, .. } => Some(r),
            _ => None,
        }
    }

    /// The server's stderr tail captured when connecting failed.
    #[must_use]
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            Error::Connect { stderr, .. } => Some(stderr),
            _ => None,
        }
    }

    /// A short, stable name for the kind of failure, for scripts, the same names as
    /// `mcp-blocking` uses for the same causes ([`Cause::kind`]): `spawn`, `connect`,
    /// `legacy-server`, `negotiation`, `auth-required`, `http`, `closed`,
    /// `server-error`, `timeout`, `invalid-response`, `input`, `limit`, `cancelled`,
    /// `session-expired`, `call`, `misuse`, `invalid-url`, `tls-unavailable`; plus `io`,
    /// `driver-gone` and `tls` for this crate (an unreachable HTTP endpoint is `connect`,
    /// a connect timeout `timeout`).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Io(_) => "io",
            Error::Transport(t) => match t.kind() {
                TransportErrorKind::Connect => "connect",
                TransportErrorKind::ConnectTimeout => "timeout",
                TransportErrorKind::Tls => "tls",
                TransportErrorKind::Io => "io",
            },
            Error::DriverGone => "driver-gone",
            other => other.cause().map_or("io", Cause::kind),
        }
    }
}

impl From<UrlError> for Error {
    fn from(e: UrlError) -> Self {
        Error::InvalidUrl(e)
    }
}

impl From<TlsUnavailable> for Error {
    fn from(e: TlsUnavailable) -> Self {
        Error::TlsUnavailable(e)
    }
}

impl From<TransportError> for Error {
    fn from(e: TransportError) -> Self {
        Error::Transport(e)
    }
}

/// Which step below HTTP failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// Opening the connection failed (refused, unreachable, name not resolved, or the
    /// [`Connector`](crate::Connector) failed).
    Connect,
    /// Opening the connection (TCP and TLS handshake together) took longer than
    /// [`HttpOptions::connect_timeout`](crate::HttpOptions::connect_timeout).
    ConnectTimeout,
    /// The TLS handshake failed: an untrusted or mismatched certificate, no common
    /// protocol version, an alert from the server. `TransportError::tls_error` (with the
    /// `tls` feature) has the rustls error.
    Tls,
    /// Reading or writing an open connection failed.
    Io,
}

impl fmt::Display for TransportErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportErrorKind::Connect => "cannot connect to",
            TransportErrorKind::ConnectTimeout => "timed out connecting to",
            TransportErrorKind::Tls => "TLS handshake failed with",
            TransportErrorKind::Io => "i/o error talking to",
        })
    }
}

/// A failure below HTTP on a connection to the endpoint: the machine's
/// [`TransportFailure`] with the endpoint and the IO error behind it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{kind} {endpoint}: {source}")]
pub struct TransportError {
    kind: TransportErrorKind,
    failure: TransportFailureKind,
    endpoint: String,
    #[source]
    source: Arc<io::Error>,
}

impl TransportError {
    /// `source`, met while opening a connection (`connecting`) or on an open one.
    pub(crate) fn new(
        failure: TransportFailureKind,
        connecting: bool,
        endpoint: &str,
        source: io::Error,
    ) -> Self {
        use TransportFailureKind as F;
        let kind = match failure {
            F::Timeout if connecting => TransportErrorKind::ConnectTimeout,
            F::Tls => TransportErrorKind::Tls,
            _ if connecting => TransportErrorKind::Connect,
            _ => TransportErrorKind::Io,
        };
        TransportError {
            kind,
            failure,
            endpoint: endpoint.to_owned(),
            source: Arc::new(source),
        }
    }

    /// The error for a failure the machine reports with no IO error behind it (a
    /// connect timeout, a connection the server closed mid-response).
    pub(crate) fn of_failure(endpoint: &str, failure: &TransportFailure) -> Self {
        use TransportFailureKind as F;
        use io::ErrorKind as K;
        let (io_kind, connecting) = match failure.kind {
            F::Dns => (K::NotFound, true),
            F::Refused => (K::ConnectionRefused, true),
            F::Unreachable => (K::HostUnreachable, true),
            F::Timeout => (K::TimedOut, true),
            F::Tls => (K::InvalidData, true),
            F::Reset => (K::ConnectionReset, false),
            F::Closed => (K::UnexpectedEof, false),
            _ => (K::Other, false),
        };
        let source = io::Error::new(io_kind, failure.detail.clone());
        TransportError::new(failure.kind, connecting, endpoint, source)
    }

    /// What the machine is told.
    pub(crate) fn failure(&self) -> TransportFailure {
        TransportFailure::new(self.failure, self.source.to_string())
    }

    /// Which step failed.
    #[must_use]
    pub fn kind(&self) -> TransportErrorKind {
        self.kind
    }

    /// The failure as the machine classifies it (refused, reset, TLS, timeout, …).
    #[must_use]
    pub fn failure_kind(&self) -> TransportFailureKind {
        self.failure
    }

    /// The endpoint's origin (`https://host:port`).
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The IO error (its [`kind`](io::Error::kind) tells `ConnectionRefused`,
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
        self.source.get_ref()?.downcast_ref::<rustls::Error>()
    }
}

impl From<CallError> for Error {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Closed(reason) => Error::Closed(reason),
            other => Error::Call(other),
        }
    }
}

impl From<CloseReason> for Error {
    fn from(reason: CloseReason) -> Self {
        Error::Closed(reason)
    }
}

impl From<ApiMisuse> for Error {
    fn from(e: ApiMisuse) -> Self {
        match e {
            ApiMisuse::Closed => Error::Closed(CloseReason::Local),
            other => Error::Misuse(other),
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(Arc::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_codes_stay_reachable() {
        let e: Error = CallError::Server(ErrorObject::new(-32602, "bad")).into();
        assert_eq!(e.code(), Some(-32602));
        assert_eq!(e.kind(), "server-error");
        let closed: Error = CallError::Closed(CloseReason::Local).into();
        assert!(matches!(closed, Error::Closed(CloseReason::Local)));
        assert_eq!(closed.code(), None);
        assert_eq!(closed.close_reason(), Some(&CloseReason::Local));
        let misuse: Error = ApiMisuse::TooManyCalls.into();
        assert_eq!(misuse.kind(), "misuse");
        let io: Error = std::io::Error::other("boom").into();
        assert!(io.to_string().contains("boom"), "{io}");
    }
}
