//! The one error type of this crate.

use std::io;
use std::sync::Arc;

use mcp_proto::client::{ApiMisuse, CallError, CloseReason};

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
    /// The [`Driver`](crate::Driver) was dropped before the connection ended, so nothing
    /// can answer this request.
    #[error("the mcp-smol Driver is not running (it was dropped before the connection closed)")]
    DriverGone,
}

impl Error {
    /// The JSON-RPC error code, when the server answered with an error.
    #[must_use]
    pub fn code(&self) -> Option<i64> {
        match self {
            Error::Call(e) => e.code(),
            Error::Closed(CloseReason::Refused(e)) => Some(e.code),
            _ => None,
        }
    }

    /// Why the connection closed, when this error says it did.
    #[must_use]
    pub fn close_reason(&self) -> Option<&CloseReason> {
        match self {
            Error::Closed(r) => Some(r),
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

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(Arc::new(e))
    }
}
