//! What both adapters' error types say about the protocol-level causes they share: the
//! stable kind names, the server's JSON-RPC error object, the HTTP status.

use mcp_proto::ErrorObject;
use mcp_proto::client::{CallError, CloseReason, InvalidParams, PeerError};
use mcp_proto::jsonrpc::DecodeError;

/// The protocol-level cause of an adapter's error, as both adapters' `Error` types have
/// it (each maps its own variants to this view; transport failures below HTTP and the
/// adapter's own variants are named by the adapter).
///
/// ```
/// use mcp_host::Cause;
/// use mcp_proto::ErrorObject;
/// use mcp_proto::client::{CallError, CloseReason};
///
/// let e = CallError::Server(ErrorObject::new(-32602, "bad"));
/// assert_eq!(Cause::Call(&e).kind(), "server-error");
/// assert_eq!(Cause::Call(&e).error_object().map(|o| o.code), Some(-32602));
/// assert_eq!(Cause::Connect(&CloseReason::LegacyServer).kind(), "legacy-server");
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Cause<'a> {
    /// The server process could not be started.
    Spawn,
    /// The connection was never established, for this reason.
    Connect(&'a CloseReason),
    /// The connection is over, for this reason.
    Closed(&'a CloseReason),
    /// A call failed.
    Call(&'a CallError),
    /// The caller broke an API rule.
    Misuse,
    /// The endpoint URL was refused.
    InvalidUrl,
    /// The endpoint is `https://` and TLS support was compiled out
    /// ([`TlsUnavailable`](crate::http::TlsUnavailable)).
    TlsUnavailable,
}

impl<'a> Cause<'a> {
    /// A short, stable name for the kind of failure, for scripts: `spawn`, `connect`,
    /// `legacy-server`, `negotiation`, `auth-required`, `http`, `closed`,
    /// `server-error`, `unknown-name` and `invalid-arguments` (a `-32602` that says which),
    /// `timeout`, `invalid-response`, `input`, `limit`, `cancelled`,
    /// `session-expired`, `call`, `misuse`, `invalid-url`, `tls-unavailable`.
    #[must_use]
    pub fn kind(self) -> &'static str {
        match self {
            Cause::Spawn => "spawn",
            Cause::Connect(reason) => match reason {
                CloseReason::LegacyServer => "legacy-server",
                CloseReason::Negotiation(_) => "negotiation",
                CloseReason::Refused(_) => "server-error",
                CloseReason::HandshakeTimeout(_) => "timeout",
                CloseReason::AuthRequired { .. } => "auth-required",
                CloseReason::Http(_) => "http",
                _ => "connect",
            },
            Cause::Closed(_) => "closed",
            Cause::Call(e) => match e {
                CallError::Server(_) => match e.invalid_params() {
                    Some(InvalidParams::UnknownName) => "unknown-name",
                    Some(InvalidParams::InvalidArguments) => "invalid-arguments",
                    _ => "server-error",
                },
                CallError::Timeout(_) => "timeout",
                CallError::Cancelled => "cancelled",
                CallError::InvalidResponse(_) => "invalid-response",
                CallError::TooManyRounds(_) | CallError::ListTooLong(_) => "limit",
                CallError::InvalidInputRequest(_) | CallError::InputRefused(_) => "input",
                CallError::Http(_) => "http",
                CallError::SessionExpired => "session-expired",
                CallError::Peer(
                    PeerError::Oversized { .. }
                    | PeerError::Malformed {
                        error: DecodeError::TooDeep { .. },
                    },
                ) => "limit",
                CallError::Peer(_) => "invalid-response",
                _ => "call",
            },
            Cause::Misuse => "misuse",
            Cause::InvalidUrl => "invalid-url",
            Cause::TlsUnavailable => "tls-unavailable",
        }
    }

    /// The JSON-RPC error object the server sent, when the failure is one: a server
    /// error, a refused handshake, or the error carried in the body of a failed HTTP
    /// exchange.
    #[must_use]
    pub fn error_object(self) -> Option<&'a ErrorObject> {
        match self {
            Cause::Call(CallError::Server(e))
            | Cause::Connect(CloseReason::Refused(e))
            | Cause::Closed(CloseReason::Refused(e)) => Some(e),
            Cause::Call(CallError::Http(h))
            | Cause::Connect(CloseReason::Http(h))
            | Cause::Closed(CloseReason::Http(h)) => h.error.as_ref(),
            _ => None,
        }
    }

    /// The HTTP status of a failed HTTP exchange (never set for stdio servers).
    #[must_use]
    pub fn http_status(self) -> Option<u16> {
        match self {
            Cause::Call(e) => e.http_status(),
            Cause::Connect(CloseReason::Http(h)) | Cause::Closed(CloseReason::Http(h)) => h.status,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unusable_answers_have_kinds() {
        let kind = |p: PeerError| Cause::Call(&CallError::Peer(p)).kind();
        assert_eq!(kind(PeerError::Oversized { seen: 9, limit: 8 }), "limit");
        let deep = DecodeError::TooDeep { limit: 64 };
        assert_eq!(kind(PeerError::Malformed { error: deep }), "limit");
        let error = DecodeError::ResultAndError;
        assert_eq!(kind(PeerError::Malformed { error }), "invalid-response");
    }
}
