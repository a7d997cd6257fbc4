//! The one error type of the blocking client.

use std::io;
use std::sync::Arc;

use mcp_host::Cause;
use mcp_proto::ErrorObject;
use mcp_proto::client::{ApiMisuse, CallError, CloseReason};
use mcp_proto::http::UrlError;

use crate::http::{TlsUnavailable, TransportError};

/// Why an operation of [`crate::Client`] failed.
///
/// The protocol-level causes are kept as they came from `mcp-proto`
/// ([`CallError`], [`CloseReason`]), so the server's JSON-RPC code and `data` stay
/// reachable: see [`Error::code`] and [`Error::error_object`].
///
/// The variants, their messages and their [kinds](Error::kind) are those of `mcp-smol`'s
/// `Error` for the same failures (which adds `Io` and `DriverGone`, the failures of its
/// own driver). `Error` is `Clone` (io errors are shared behind an [`Arc`]).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server process could not be started (program not found on `PATH`, not
    /// executable, …).
    #[error("could not start the server `{program}`: {source}")]
    Spawn {
        /// The program as configured.
        program: String,
        /// The OS error.
        #[source]
        source: Arc<io::Error>,
    },
    /// The server was started (or the endpoint answered) but the connection was never
    /// established.
    #[error("could not connect: {reason}")]
    Connect {
        /// Why the handshake ended.
        reason: CloseReason,
        /// The newest bytes the server wrote to stderr (often the real explanation).
        /// Not part of the message: it is the server's text and may be long.
        stderr: String,
    },
    /// The call failed: a JSON-RPC error from the server, a timeout, an invalid answer, …
    #[error(transparent)]
    Call(CallError),
    /// The connection is over (the server exited, or it was closed locally).
    #[error("connection closed: {0}")]
    Closed(CloseReason),
    /// The caller broke an API rule (too many calls in flight, arguments that are not a
    /// JSON object, …).
    #[error("invalid use of the client: {0}")]
    Misuse(ApiMisuse),
    /// The endpoint URL is not acceptable (not http or https, userinfo, a fragment, plain
    /// `http` to a host that is not loopback, …).
    #[error("invalid endpoint URL {url:?}: {source}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        #[source]
        source: UrlError,
    },
    /// The endpoint is `https://`, but this build has no TLS: the crate's `tls` cargo
    /// feature is off (and [`crate::HttpOptions::connector`] gave no connector of your
    /// own). Returned before anything connects; never with the `tls` feature on.
    #[error(transparent)]
    TlsUnavailable(TlsUnavailable),
    /// The HTTP server could not be reached to set up the connection: the name did not
    /// resolve, the connection was refused or timed out, or TLS failed (an untrusted
    /// certificate, say). Failures of this kind on a call after connecting are
    /// [`CallError::Http`] without a status.
    #[error(transparent)]
    Transport(TransportError),
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

impl Error {
    /// The cause, in the view both adapters share.
    pub(crate) fn cause(&self) -> Cause<'_> {
        match self {
            Error::Spawn { .. } => Cause::Spawn,
            Error::Connect { reason, .. } => Cause::Connect(reason),
            Error::Closed(reason) => Cause::Closed(reason),
            Error::Call(e) => Cause::Call(e),
            Error::Misuse(_) => Cause::Misuse,
            Error::InvalidUrl { .. } => Cause::InvalidUrl,
            Error::TlsUnavailable(_) => Cause::TlsUnavailable,
            Error::Transport(e) => Cause::Transport(e),
        }
    }

    /// The JSON-RPC error object the server sent, when the failure is one (also the
    /// error carried in the body of a failed HTTP exchange).
    #[must_use]
    pub fn error_object(&self) -> Option<&ErrorObject> {
        self.cause().error_object()
    }

    /// The server's JSON-RPC error code, when the failure is a server error.
    #[must_use]
    pub fn code(&self) -> Option<i64> {
        self.error_object().map(|e| e.code)
    }

    /// The HTTP status of a failed HTTP exchange (never set for stdio servers).
    #[must_use]
    pub fn http_status(&self) -> Option<u16> {
        self.cause().http_status()
    }

    /// A short, stable name for the kind of failure, for scripts: `spawn`, `connect`,
    /// `legacy-server`, `negotiation`, `auth-required`, `http`, `closed`, `server-error`,
    /// `unknown-name`, `invalid-arguments`, `timeout`, `invalid-response`, `input`,
    /// `limit`, `cancelled`, `session-expired`, `call`, `misuse`, `invalid-url`,
    /// `tls-unavailable`, and below HTTP `unreachable` (resolve, connect, connect
    /// timeout), `tls`, `transport` (an open connection broke): [`Cause::kind`], the
    /// same names as `mcp-smol` for the same failures.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        self.cause().kind()
    }

    /// Why the connection closed, when this error says it did.
    #[must_use]
    pub fn close_reason(&self) -> Option<&CloseReason> {
        match self {
            Error::Closed(r) | Error::Connect { reason: r, .. } => Some(r),
            _ => None,
        }
    }

    /// The failure below HTTP, when the endpoint could not be reached.
    #[must_use]
    pub fn transport_error(&self) -> Option<&TransportError> {
        match self {
            Error::Transport(e) => Some(e),
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
        let closed: Error = ApiMisuse::Closed.into();
        assert_eq!(closed.kind(), "closed");
    }
}
