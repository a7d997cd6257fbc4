//! [`Error`], the one error type of both adapters (`mcp_blocking::Error` and
//! `mcp_smol::Error` are this type), and how an adapter makes one from what the machine
//! reports.

use std::ffi::OsStr;
use std::io;
use std::sync::Arc;

use mcp_proto::ErrorObject;
use mcp_proto::client::{
    ApiMisuse, CallError, CloseReason, InvalidParams, PeerError, TaskProblem, UnreadableLine,
};
use mcp_proto::http::UrlError;
use mcp_proto::jsonrpc::DecodeError;
use mcp_proto::skills::SkillError;

use crate::TransportError;
use crate::http::TlsUnavailable;

/// Everything that can go wrong with a connection or a call, in either adapter.
///
/// The protocol-level causes are kept as they came from `mcp-proto` ([`CallError`],
/// [`CloseReason`]), so the server's JSON-RPC code and `data` stay reachable: see
/// [`Error::code`] and [`Error::error_object`]. `Error` is `Clone` (I/O errors are shared
/// behind an [`Arc`]), so that one failure can be handed to every call it ends.
///
/// ```
/// use mcp_io::Error;
/// use mcp_proto::ErrorObject;
/// use mcp_proto::client::{CallError, CloseReason};
///
/// let e: Error = CallError::Server(ErrorObject::new(-32602, "bad")).into();
/// assert_eq!((e.kind(), e.code()), ("server-error", Some(-32602)));
/// let e: Error = CallError::Closed(CloseReason::LegacyServer).into();
/// assert!(matches!(e, Error::Closed(CloseReason::LegacyServer)));
/// ```
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
    /// established. The message says how the server process ended, when that is known
    /// (`… (it exited with status 3)`, `… (it was killed by signal 9)`).
    ///
    /// When the stdio server wrote a line to its stdout that is not a JSON-RPC message
    /// (a log line, most often: the commonest mistake of a stdio server), the message
    /// ends with the first such line, quoted (`…; the server wrote a line to stdout that
    /// is not JSON (…): "Server v1.2 starting..."`): see `stdout`.
    #[error("could not connect: {reason}{}{}", ExitWords(*.exit_status), StdoutWords(.stdout.as_deref()))]
    Connect {
        /// Why the handshake ended.
        reason: CloseReason,
        /// The newest bytes the server wrote to stderr (often the real explanation):
        /// those of the last process started, when the server was started again (after
        /// it exited on the era probe, say), so that one run is told once.
        /// Not part of the message: it is the server's text and may be long.
        stderr: String,
        /// How a stdio server process ended, when it had exited by the time the
        /// connection was given up (`None` over HTTP, or when it had to be stopped).
        exit_status: Option<std::process::ExitStatus>,
        /// The first line the stdio server wrote to its stdout that could not be used as
        /// a JSON-RPC message, clipped and escaped ([`UnreadableLine`]); part of the
        /// message. `None` over HTTP, or when every line was JSON-RPC.
        stdout: Option<Box<UnreadableLine>>,
    },
    /// The call failed: a JSON-RPC error from the server, a timeout, a cancellation, an
    /// invalid answer, a refused input request, …
    #[error(transparent)]
    Call(CallError),
    /// The connection is over, and why. Calls in flight when it closed fail with this
    /// too (never with `Call(CallError::Closed(_))`).
    #[error("connection closed: {0}")]
    Closed(CloseReason),
    /// The caller broke an API rule (too many calls in flight, arguments that are not a
    /// JSON object, …).
    #[error("invalid use of the client: {0}")]
    Misuse(ApiMisuse),
    /// The endpoint URL is not acceptable (not `http` or `https`, userinfo, a fragment,
    /// plain `http` to a host that is not loopback without
    /// [`HttpOptions::allow_insecure_remote`](crate::http::HttpOptions::allow_insecure_remote), …).
    #[error("invalid endpoint URL {url:?}: {source}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        #[source]
        source: UrlError,
    },
    /// The endpoint is `https`, but the adapter was built without TLS and the connector
    /// (if any) does not do TLS itself. Returned before anything connects.
    #[error(transparent)]
    TlsUnavailable(TlsUnavailable),
    /// The HTTP endpoint could not be reached, or a connection to it broke below HTTP:
    /// connection refused, no route, a connect timeout, a TLS failure (an untrusted
    /// certificate, say). On a call this ends only the call: the next one opens a fresh
    /// connection.
    #[error(transparent)]
    Transport(TransportError),
    /// The operating system had no random numbers for the authorization flow.
    #[error("no entropy for authorization: {0}")]
    Entropy(String),
    /// `mcp-smol` only: the `Driver` was dropped before the connection ended, so nothing
    /// can answer this request.
    #[error("the mcp-smol Driver is not running (it was dropped before the connection closed)")]
    DriverGone,
    /// A skill (Skills extension) failed a check: an invalid entry, a file whose size,
    /// digest or frontmatter differs from the entry, a file the entry does not list, …
    /// The unverified content was not returned.
    #[error(transparent)]
    Skill(SkillError),
}

/// How a stdio server process ended, in words for [`Error::Connect`]'s message: empty
/// when unknown.
struct ExitWords(Option<std::process::ExitStatus>);

impl std::fmt::Display for ExitWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(status) = self.0 else {
            return Ok(());
        };
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(signal) = status.signal() {
                return write!(f, " (it was killed by signal {signal})");
            }
        }
        match status.code() {
            Some(code) => write!(f, " (it exited with status {code})"),
            None => write!(f, " (it exited: {status})"),
        }
    }
}

/// The first unusable line of a stdio server's stdout, in words for [`Error::Connect`]'s
/// message: empty when there was none.
struct StdoutWords<'a>(Option<&'a UnreadableLine>);

impl std::fmt::Display for StdoutWords<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(line) => write!(f, "; {line}"),
            None => Ok(()),
        }
    }
}

impl Error {
    /// A short, stable name for the kind of failure, for scripts: `spawn`, `connect`,
    /// `legacy-server`, `negotiation`, `auth-required`, `auth-failed`, `http`, `closed`, `server-error`,
    /// `unknown-name` and `invalid-arguments` (a `-32602` that says which), `timeout`,
    /// `invalid-response`, `input`, `url-elicitation-required`, `limit`, `cancelled` (a call
    /// or its task), `session-expired`,
    /// `server-exited`, `call`,
    /// `misuse`, `invalid-url`, `tls-unavailable`, `driver-gone`, `not-declared` (an
    /// extension method the server did not declare), `skill-verification`,
    /// `skill-not-listed`, `skill-dynamic`, `skill-invalid`; below HTTP
    /// `unreachable`, `tls` and `transport` ([`TransportErrorKind::name`](crate::TransportErrorKind::name)).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Spawn { .. } => "spawn",
            Error::Connect { reason, .. } => match reason {
                CloseReason::LegacyServer => "legacy-server",
                CloseReason::Negotiation(_) => "negotiation",
                CloseReason::Refused(_) => "server-error",
                CloseReason::HandshakeTimeout(_) | CloseReason::ConnectTimeout(_) => "timeout",
                CloseReason::AuthRequired { .. } => "auth-required",
                CloseReason::Authorization(_) => "auth-failed",
                CloseReason::Http(_) => "http",
                _ => "connect",
            },
            Error::Closed(_) => "closed",
            Error::Call(e) => match e {
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
                CallError::UrlElicitationRequired { .. } => "url-elicitation-required",
                CallError::Http(_) => "http",
                CallError::SessionExpired => "session-expired",
                CallError::ServerExited => "server-exited",
                CallError::Authorization(_) => "auth-failed",
                CallError::Peer(
                    PeerError::Oversized { .. }
                    | PeerError::Malformed {
                        error: DecodeError::TooDeep { .. } | DecodeError::TooLargeOnceParsed { .. },
                    },
                ) => "limit",
                CallError::Peer(_) => "invalid-response",
                CallError::NotDeclared { .. } => "not-declared",
                CallError::TaskCancelled { .. } => "cancelled",
                CallError::Task(TaskProblem::Expired(_)) => "timeout",
                CallError::Task(TaskProblem::TooManyPolls(_) | TaskProblem::IdTooLong { .. }) => {
                    "limit"
                }
                CallError::Task(_) => "invalid-response",
                _ => "call",
            },
            Error::Misuse(_) => "misuse",
            Error::InvalidUrl { .. } => "invalid-url",
            Error::TlsUnavailable(_) => "tls-unavailable",
            Error::Transport(e) => e.kind().name(),
            Error::Entropy(_) => "entropy",
            Error::DriverGone => "driver-gone",
            Error::Skill(e) => match e {
                SkillError::SizeMismatch { .. }
                | SkillError::DigestMismatch { .. }
                | SkillError::Frontmatter { .. }
                | SkillError::FrontmatterMismatch { .. } => "skill-verification",
                SkillError::NotListed { .. } | SkillError::OutsideSkill { .. } => {
                    "skill-not-listed"
                }
                SkillError::Dynamic { .. } => "skill-dynamic",
                SkillError::Call { .. } => "call",
                _ => "skill-invalid",
            },
        }
    }

    /// The JSON-RPC error object the server sent, when the failure is one: a server
    /// error, a refused handshake, or the error carried in the body of a failed HTTP
    /// exchange.
    #[must_use]
    pub fn error_object(&self) -> Option<&ErrorObject> {
        match self {
            Error::Call(
                CallError::Server(e) | CallError::UrlElicitationRequired { error: e, .. },
            ) => Some(e),
            Error::Call(CallError::Http(h)) => h.error.as_ref(),
            Error::Connect { reason, .. } | Error::Closed(reason) => match reason {
                CloseReason::Refused(e) => Some(e),
                CloseReason::Http(h) => h.error.as_ref(),
                _ => None,
            },
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
            Error::Connect { reason, .. } | Error::Closed(reason) => match reason {
                CloseReason::Http(h) => h.status,
                // The GET of the 2024-11-05 HTTP+SSE transport drew a failure status.
                CloseReason::HttpSse(mcp_proto::client::http::HttpSseError::StreamRefused {
                    status,
                    ..
                }) => *status,
                _ => None,
            },
            _ => None,
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

    /// The failure below HTTP, when the endpoint could not be reached or a connection
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

    /// How the stdio server process ended, for [`Error::Connect`] when it had exited.
    #[must_use]
    pub fn exit_status(&self) -> Option<std::process::ExitStatus> {
        match self {
            Error::Connect { exit_status, .. } => *exit_status,
            _ => None,
        }
    }

    /// The first line the stdio server wrote to its stdout that could not be used as a
    /// JSON-RPC message, for [`Error::Connect`] when there was one.
    #[must_use]
    pub fn unreadable_line(&self) -> Option<&UnreadableLine> {
        match self {
            Error::Connect { stdout, .. } => stdout.as_deref(),
            _ => None,
        }
    }

    /// For adapters: the same error, telling in an [`Error::Connect`] the first line of
    /// the stdio server's stdout that could not be used (the machine's
    /// [`Client::unreadable_line`](mcp_proto::client::Client::unreadable_line)), when
    /// there was one: a connection that failed after the server wrote such lines (log
    /// lines, most often) says so. Any other error is returned as it is.
    #[must_use]
    pub fn with_unreadable_line(self, line: Option<&UnreadableLine>) -> Self {
        match (self, line) {
            (
                Error::Connect {
                    reason,
                    stderr,
                    exit_status,
                    ..
                },
                Some(line),
            ) => Error::Connect {
                reason,
                stderr,
                exit_status,
                stdout: Some(Box::new(line.clone())),
            },
            (other, _) => other,
        }
    }

    /// For adapters: starting `program` failed with `source`.
    #[must_use]
    pub fn spawn(program: &OsStr, source: io::Error) -> Self {
        Error::Spawn {
            program: program.to_string_lossy().into_owned(),
            source: Arc::new(source),
        }
    }

    /// For adapters: the error for a connection that closed for `reason`. A close caused
    /// by a failure below the protocol is that failure, typed: the adapter's own error
    /// carried as the failure's `source` (a [`TransportError`], or an `Error` such as a
    /// server that could not be started again), or over HTTP (`endpoint` is the
    /// endpoint's origin) a [`TransportError`] made from the machine's own failure.
    #[must_use]
    pub fn closed(reason: CloseReason, endpoint: Option<&str>) -> Self {
        let failure = match &reason {
            CloseReason::Http(h) if h.status.is_none() => h.transport.as_deref(),
            CloseReason::Transport(f) => Some(f),
            _ => None,
        };
        let Some(failure) = failure else {
            return Error::Closed(reason);
        };
        let source = failure.source.as_deref();
        if let Some(e) = source.and_then(|s| s.downcast_ref::<Error>()) {
            return e.clone();
        }
        if source.is_some_and(|s| s.is::<TransportError>()) || endpoint.is_some() {
            let endpoint = endpoint.unwrap_or_default();
            return Error::Transport(TransportError::of_failure(failure, endpoint));
        }
        Error::Closed(reason)
    }

    /// For adapters: the error for a failed call. A call whose exchange broke below
    /// HTTP fails with that failure (see [`Error::closed`]).
    #[must_use]
    pub fn call(error: CallError, endpoint: Option<&str>) -> Self {
        match error {
            CallError::Closed(reason) => Self::closed(reason, endpoint),
            CallError::Http(h) if h.status.is_none() => {
                match Self::closed(CloseReason::Http(h), endpoint) {
                    Error::Closed(CloseReason::Http(h)) => Error::Call(CallError::Http(h)),
                    typed => typed,
                }
            }
            other => Error::Call(other),
        }
    }

    /// For adapters: the error for a connection that closed for `reason` before it was
    /// established: [`Error::closed`], where a close that is not a failure below the
    /// protocol (nor the caller's own) becomes [`Error::Connect`] with the server's
    /// `stderr`.
    #[must_use]
    pub fn not_connected(reason: CloseReason, endpoint: Option<&str>, stderr: String) -> Self {
        Self::not_connected_with(reason, endpoint, stderr, None)
    }

    /// [`Error::not_connected`] for a stdio server that ended with `exit_status` (when
    /// known).
    #[must_use]
    pub fn not_connected_with(
        reason: CloseReason,
        endpoint: Option<&str>,
        stderr: String,
        exit_status: Option<std::process::ExitStatus>,
    ) -> Self {
        match Self::not_connected_inner(reason, endpoint, stderr) {
            Error::Connect {
                reason,
                stderr,
                stdout,
                ..
            } => Error::Connect {
                reason,
                stderr,
                exit_status,
                stdout,
            },
            other => other,
        }
    }

    /// [`Error::not_connected_with`] for a stdio server process that ended as
    /// `shutdown` (`None` when it was not reaped): its exit status is told only when the
    /// server ended on its own ([`CloseReason::ServerExited`], not killed), so that both
    /// adapters report the same status for the same end.
    #[must_use]
    pub fn not_connected_after(
        reason: CloseReason,
        endpoint: Option<&str>,
        stderr: String,
        shutdown: Option<crate::Shutdown>,
    ) -> Self {
        let exited = matches!(reason, CloseReason::ServerExited { .. });
        let status = shutdown
            .filter(|s| exited && !s.killed)
            .and_then(|s| s.status);
        Self::not_connected_with(reason, endpoint, stderr, status)
    }

    fn not_connected_inner(reason: CloseReason, endpoint: Option<&str>, stderr: String) -> Self {
        match Self::closed(reason, endpoint) {
            Error::Closed(reason) if reason != CloseReason::Local => Error::Connect {
                reason,
                stderr,
                exit_status: None,
                stdout: None,
            },
            other => other,
        }
    }
}

impl From<CallError> for Error {
    fn from(e: CallError) -> Self {
        Self::call(e, None)
    }
}

impl From<SkillError> for Error {
    fn from(e: SkillError) -> Self {
        match e {
            SkillError::Call { source, .. } => (*source).into(),
            e => Error::Skill(e),
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mcp_proto::client::{HttpFailure, TransportFailure, TransportFailureKind};

    use super::*;
    use crate::TransportErrorKind;

    #[test]
    fn unusable_answers_have_kinds() {
        let kind = |p: PeerError| Error::Call(CallError::Peer(p)).kind();
        assert_eq!(kind(PeerError::Oversized { seen: 9, limit: 8 }), "limit");
        let deep = DecodeError::TooDeep { limit: 64 };
        assert_eq!(kind(PeerError::Malformed { error: deep }), "limit");
        let error = DecodeError::ResultAndError;
        assert_eq!(kind(PeerError::Malformed { error }), "invalid-response");
        let misuse: Error = ApiMisuse::TooManyCalls.into();
        assert_eq!(misuse.kind(), "misuse");
        let closed: Error = ApiMisuse::Closed.into();
        assert_eq!(closed.kind(), "closed");
    }

    /// Connecting given up at either limit is a `timeout`, as a call's is: scripts tell
    /// a slow server from a refused connection by the kind.
    #[test]
    fn connecting_that_ran_out_of_time_is_a_timeout() {
        let second = std::time::Duration::from_secs(1);
        for reason in [
            CloseReason::HandshakeTimeout(second),
            CloseReason::ConnectTimeout(second),
        ] {
            let e = Error::not_connected(reason.clone(), None, String::new());
            assert_eq!(e.kind(), "timeout", "{reason:?}");
        }
    }

    #[test]
    fn task_failures_have_the_kinds_of_their_causes() {
        let kind = |e: CallError| Error::Call(e).kind();
        let task_id = "t".to_owned();
        assert_eq!(kind(CallError::TaskCancelled { task_id }), "cancelled");
        assert_eq!(kind(CallError::Cancelled), "cancelled");
        let expired = TaskProblem::Expired(std::time::Duration::from_secs(1));
        assert_eq!(kind(CallError::Task(expired)), "timeout");
        assert_eq!(kind(CallError::Task(TaskProblem::TooManyPolls(9))), "limit");
        let status = TaskProblem::UnknownStatus("odd".into());
        assert_eq!(kind(CallError::Task(status)), "invalid-response");
    }

    #[test]
    fn failures_below_the_protocol_come_back_typed() {
        let refused = io::Error::new(io::ErrorKind::ConnectionRefused, "refused");
        let e = TransportError::new(TransportErrorKind::Connect, "http://h:1", refused);
        let http = CloseReason::Http(HttpFailure::from_transport(e.failure()));
        let Error::Transport(back) = Error::not_connected(http, None, String::new()) else {
            panic!("typed");
        };
        assert_eq!(back.kind(), TransportErrorKind::Connect);

        let spawn = Error::spawn(OsStr::new("srv"), io::ErrorKind::NotFound.into());
        let failure = TransportFailure::new(TransportFailureKind::Spawn, spawn.to_string())
            .with_source(Arc::new(spawn));
        let e = Error::closed(CloseReason::Transport(failure), None);
        assert_eq!(e.kind(), "spawn");

        let pipe = TransportFailure::new(TransportFailureKind::Closed, "broken pipe");
        let e = Error::not_connected(CloseReason::Transport(pipe), None, "bye".into());
        assert_eq!((e.kind(), e.stderr_tail()), ("connect", Some("bye")));
        let local = Error::not_connected(CloseReason::Local, None, String::new());
        assert!(matches!(local, Error::Closed(CloseReason::Local)));
    }

    #[test]
    fn server_errors_keep_their_object() {
        let http = HttpFailure::new(Some(400), Some(ErrorObject::new(-32020, "x")), "bad");
        let e = Error::Connect {
            reason: CloseReason::Http(http),
            stderr: String::new(),
            exit_status: None,
            stdout: None,
        };
        assert_eq!(
            (e.code(), e.http_status(), e.kind()),
            (Some(-32020), Some(400), "http")
        );
    }
}

#[cfg(all(test, unix))]
mod exit_wording {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    use super::*;

    fn ended(status: Option<ExitStatus>) -> Error {
        Error::not_connected_with(
            CloseReason::ServerExited { truncated: 0 },
            None,
            "fatal: bad config".into(),
            status,
        )
    }

    #[test]
    fn a_connect_error_says_once_how_the_server_process_ended() {
        let text = ended(Some(ExitStatus::from_raw(3 << 8))).to_string();
        assert_eq!(
            text,
            "could not connect: the server closed the connection (it exited with status 3)"
        );
        let text = ended(Some(ExitStatus::from_raw(9))).to_string();
        assert_eq!(
            text,
            "could not connect: the server closed the connection (it was killed by signal 9)"
        );
        // Not known (HTTP, or stopped by the client): nothing said about it.
        let text = ended(None).to_string();
        assert_eq!(text, "could not connect: the server closed the connection");
        // The server's stderr stays out of the message.
        assert!(!text.contains("fatal"));
    }

    /// The first line of stdout that was not JSON-RPC ends the message of a connect error,
    /// after how the process ended; other errors are left as they are.
    #[test]
    fn a_connect_error_quotes_the_first_unreadable_stdout_line() {
        let line = UnreadableLine::of(b"Server v1.2 starting on stdio...", None);
        let e = ended(Some(ExitStatus::from_raw(3 << 8))).with_unreadable_line(Some(&line));
        assert_eq!(
            e.to_string(),
            "could not connect: the server closed the connection (it exited with status 3); \
             the server wrote a line to stdout that is not JSON (stdout is for JSON-RPC \
             messages only; a server logs to stderr): \"Server v1.2 starting on stdio...\""
        );
        assert_eq!(e.unreadable_line(), Some(&line));
        assert_eq!(
            (e.kind(), e.stderr_tail()),
            ("connect", Some("fatal: bad config"))
        );
        // A timeout stays a timeout, quoting the line all the same.
        let timeout = Error::not_connected(
            CloseReason::ConnectTimeout(std::time::Duration::from_secs(3)),
            None,
            String::new(),
        )
        .with_unreadable_line(Some(&line));
        assert_eq!(timeout.kind(), "timeout");
        assert!(
            timeout.to_string().contains("starting on stdio"),
            "{timeout}"
        );
        let closed = Error::Closed(CloseReason::Local).with_unreadable_line(Some(&line));
        assert_eq!(closed.unreadable_line(), None);
        assert_eq!(
            closed.to_string(),
            "connection closed: closed by the client"
        );
    }
}
