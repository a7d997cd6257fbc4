//! The one error type of the blocking client.

use std::io;

use mcp_host::Cause;
use mcp_proto::ErrorObject;
use mcp_proto::client::{ApiMisuse, CallError, CloseReason};
use mcp_proto::http::UrlError;

use crate::http::{TlsUnavailable, TransportError, TransportStage};

/// Why an operation of [`crate::Client`] failed.
///
/// The protocol-level causes are kept as they came from `mcp-proto`
/// ([`CallError`], [`CloseReason`]), so the server's JSON-RPC code and `data` stay
/// reachable: see [`Error::code`] and [`Error::error_object`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server process could not be started (program not found, not executable, …).
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program as configured.
        program: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The server was started but the connection was never established.
    #[error("could not connect: {reason}")]
    Connect {
        /// Why the handshake ended.
        reason: CloseReason,
        /// The newest bytes the server wrote to stderr (often the real explanation).
        /// Not part of the message: it is the server's text and may be long.
        stderr: String,
    },
    /// The connection is over (the server exited, or it was closed locally).
    #[error("connection closed: {0}")]
    Closed(CloseReason),
    /// The call failed: a JSON-RPC error from the server, a timeout, an invalid answer, …
    #[error("{0}")]
    Call(CallError),
    /// The caller broke the API contract (for example, too many calls at once).
    #[error("{0}")]
    Misuse(#[from] ApiMisuse),
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
    /// The HTTP server could not be reached to set up the connection: the name did not
    /// resolve, the connection was refused or timed out, or TLS failed (an untrusted
    /// certificate, say). Failures of this kind on a call after connecting are
    /// [`CallError::Http`] without a status.
    #[error("could not connect: {0}")]
    Transport(TransportError),
    /// The endpoint is `https://`, but this build has no TLS: the crate's `tls` cargo
    /// feature is off (and [`crate::HttpOptions::connector`] gave no connector of your
    /// own). Returned before anything connects; never with the `tls` feature on.
    #[error(transparent)]
    TlsUnavailable(#[from] TlsUnavailable),
}

impl From<CallError> for Error {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Closed(reason) => Error::Closed(reason),
            other => Error::Call(other),
        }
    }
}

impl Error {
    /// The protocol-level cause, in the view both adapters share; `None` for failures
    /// below HTTP.
    pub(crate) fn cause(&self) -> Option<Cause<'_>> {
        Some(match self {
            Error::Spawn { .. } => Cause::Spawn,
            Error::Connect { reason, .. } => Cause::Connect(reason),
            Error::Closed(reason) => Cause::Closed(reason),
            Error::Call(e) => Cause::Call(e),
            Error::Misuse(_) => Cause::Misuse,
            Error::InvalidUrl { .. } => Cause::InvalidUrl,
            Error::TlsUnavailable(_) => Cause::TlsUnavailable,
            Error::Transport(_) => return None,
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
    /// `timeout`, `invalid-response`, `input`, `limit`, `cancelled`, `session-expired`,
    /// `call`, `misuse`, `invalid-url`, `tls-unavailable` (the same names as `mcp-smol`;
    /// see [`Cause::kind`]), `unreachable` (resolve, connect, connection timeout), `tls`,
    /// `transport` (other IO below HTTP).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Transport(e) => match e.stage() {
                TransportStage::Tls => "tls",
                TransportStage::Resolve | TransportStage::Connect => "unreachable",
                _ => "transport",
            },
            other => other.cause().map_or("transport", Cause::kind),
        }
    }

    /// The failure below HTTP, when connecting could not reach the server.
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
    }
}
