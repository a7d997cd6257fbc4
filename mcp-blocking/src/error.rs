//! The one error type of the blocking client.

use std::io;

use mcp_proto::ErrorObject;
use mcp_proto::client::{ApiMisuse, CallError, CloseReason};
use mcp_proto::http::UrlError;

use crate::http::{TransportError, TransportStage};

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
    /// The JSON-RPC error object the server sent, when the failure is one (also the
    /// error carried in the body of a failed HTTP exchange).
    #[must_use]
    pub fn error_object(&self) -> Option<&ErrorObject> {
        match self {
            Error::Call(CallError::Server(e))
            | Error::Connect {
                reason: CloseReason::Refused(e),
                ..
            }
            | Error::Closed(CloseReason::Refused(e)) => Some(e),
            Error::Call(CallError::Http(h))
            | Error::Connect {
                reason: CloseReason::Http(h),
                ..
            }
            | Error::Closed(CloseReason::Http(h)) => h.error.as_ref(),
            _ => None,
        }
    }

    /// The server's JSON-RPC error code, when the failure is a server error.
    #[must_use]
    pub fn code(&self) -> Option<i64> {
        self.error_object().map(|e| e.code)
    }

    /// The HTTP status of a failed HTTP exchange (never set for stdio servers).
    #[must_use]
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Error::Call(e) => e.http_status(),
            Error::Connect {
                reason: CloseReason::Http(h),
                ..
            }
            | Error::Closed(CloseReason::Http(h)) => h.status,
            _ => None,
        }
    }

    /// A short, stable name for the kind of failure, for scripts: `spawn`, `connect`,
    /// `legacy-server`, `negotiation`, `auth-required`, `http`, `closed`, `server-error`,
    /// `timeout`, `invalid-response`, `input`, `limit`, `cancelled`, `session-expired`,
    /// `call`, `misuse`, `invalid-url`, `unreachable` (resolve, connect, connection
    /// timeout), `tls`, `transport` (other IO below HTTP).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Spawn { .. } => "spawn",
            Error::Connect { reason, .. } => match reason {
                CloseReason::LegacyServer => "legacy-server",
                CloseReason::Negotiation(_) => "negotiation",
                CloseReason::Refused(_) => "server-error",
                CloseReason::HandshakeTimeout(_) => "timeout",
                CloseReason::AuthRequired { .. } => "auth-required",
                CloseReason::Http(_) => "http",
                _ => "connect",
            },
            Error::Closed(_) => "closed",
            Error::Call(e) => match e {
                CallError::Server(_) => "server-error",
                CallError::Timeout(_) => "timeout",
                CallError::Cancelled => "cancelled",
                CallError::InvalidResponse(_) => "invalid-response",
                CallError::TooManyRounds(_) | CallError::ListTooLong(_) => "limit",
                CallError::InvalidInputRequest(_) | CallError::InputRefused(_) => "input",
                CallError::Http(_) => "http",
                CallError::SessionExpired => "session-expired",
                _ => "call",
            },
            Error::Misuse(_) => "misuse",
            Error::InvalidUrl { .. } => "invalid-url",
            Error::Transport(e) => match e.stage() {
                TransportStage::Tls => "tls",
                TransportStage::Resolve | TransportStage::Connect => "unreachable",
                _ => "transport",
            },
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
