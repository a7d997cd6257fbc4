//! The one error type of this crate.

use std::io;
use std::sync::Arc;

use mcp_host::Cause;
use mcp_host::http::TlsUnavailable;
pub use mcp_host::{TransportError, TransportErrorKind};
use mcp_proto::ErrorObject;
use mcp_proto::client::{ApiMisuse, CallError, CloseReason};
use mcp_proto::http::UrlError;

/// Everything that can go wrong with a connection or a call.
///
/// `Error` is `Clone` (io errors are shared behind an [`Arc`]) so that one failure can be
/// handed to every call it ends.
///
/// The variants, their messages and their [kinds](Error::kind) are those of
/// `mcp-blocking`'s `Error` for the same failures; [`Error::Io`] and
/// [`Error::DriverGone`] are this crate's own (its driver's).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server process could not be started (program not found on `PATH`, not
    /// executable, …).
    #[error("could not start the server `{program}`: {source}")]
    Spawn {
        /// The program as the caller named it.
        program: String,
        /// What the operating system said.
        #[source]
        source: Arc<io::Error>,
    },
    /// The server was started (or the endpoint answered) but the connection was never
    /// established (returned by [`Client::connected`](crate::Client::connected)).
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
    /// The caller broke an API rule (too many calls in flight, arguments that are not a
    /// JSON object, …).
    #[error("invalid use of the client: {0}")]
    Misuse(ApiMisuse),
    /// The HTTP endpoint URL was refused by [`connect_http`](crate::connect_http): not
    /// `http`/`https`, malformed, or plain `http` to a host that is not loopback
    /// without [`HttpOptions::allow_insecure_remote`](crate::HttpOptions::allow_insecure_remote).
    #[error("invalid endpoint URL {url:?}: {source}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        #[source]
        source: UrlError,
    },
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
    /// Reading from or writing to the server process, or waiting for it, failed.
    #[error("i/o error talking to the server process: {0}")]
    Io(Arc<io::Error>),
    /// The [`Driver`](crate::Driver) was dropped before the connection ended, so nothing
    /// can answer this request.
    #[error("the mcp-smol Driver is not running (it was dropped before the connection closed)")]
    DriverGone,
}

impl Error {
    /// The cause, in the view both adapters share; `None` for the failures of this
    /// crate's own driver (`Io`, `DriverGone`).
    fn cause(&self) -> Option<Cause<'_>> {
        Some(match self {
            Error::Spawn { .. } => Cause::Spawn,
            Error::Connect { reason, .. } => Cause::Connect(reason),
            Error::Closed(reason) => Cause::Closed(reason),
            Error::Call(e) => Cause::Call(e),
            Error::Misuse(_) => Cause::Misuse,
            Error::InvalidUrl { .. } => Cause::InvalidUrl,
            Error::TlsUnavailable(_) => Cause::TlsUnavailable,
            Error::Transport(e) => Cause::Transport(e),
            Error::Io(_) | Error::DriverGone => return None,
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

    /// A short, stable name for the kind of failure, for scripts: `spawn`, `connect`,
    /// `legacy-server`, `negotiation`, `auth-required`, `http`, `closed`, `server-error`,
    /// `unknown-name`, `invalid-arguments`, `timeout`, `invalid-response`, `input`,
    /// `limit`, `cancelled`, `session-expired`, `call`, `misuse`, `invalid-url`,
    /// `tls-unavailable`, and below HTTP `unreachable` (resolve, connect, connect
    /// timeout), `tls`, `transport` (an open connection broke): [`Cause::kind`], the
    /// same names as `mcp-blocking` for the same failures. Plus this crate's own: `io`
    /// ([`Error::Io`]) and `driver-gone` ([`Error::DriverGone`]).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Io(_) => "io",
            Error::DriverGone => "driver-gone",
            other => other.cause().map_or("io", Cause::kind),
        }
    }

    /// Why the connection closed, when this error says it did.
    #[must_use]
    pub fn close_reason(&self) -> Option<&CloseReason> {
        match self {
            Error::Closed(r) | Error::Connect { reason: r, .. } => Some(r),
            _ => None,
        }
    }

    /// The failure below HTTP, when the endpoint could not be reached or the connection
    /// broke.
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
