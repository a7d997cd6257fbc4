//! How the driver behaves around the protocol machine, and what it reports.

use std::fmt;
use std::process::ExitStatus;
use std::time::Duration;

use mcp_proto::client::{CallId, DeclineAll, InputHandler};

/// Default time a server gets to exit after its stdin is closed, before it is killed: 2 s.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(2);

/// Called with every `notifications/progress` of a call that asked for progress.
pub type ProgressHandler = Box<dyn FnMut(&Progress) + Send>;

/// Called with every line written to or read from the server, without its line end (over
/// HTTP: the lines of each request and response, see [`Options::wire_log`]).
pub type WireLog = Box<dyn FnMut(Direction, &[u8]) + Send>;

/// Progress of a call (`notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The call.
    pub call: CallId,
    /// Progress so far.
    pub progress: f64,
    /// Total, when known.
    pub total: Option<f64>,
    /// A message for people.
    pub message: Option<String>,
}

/// Which way a logged line went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Direction {
    /// Written to the server's stdin, or sent in an HTTP request.
    Sent,
    /// Read from the server's stdout, or received in an HTTP response.
    Received,
}

/// How the [`Driver`](crate::Driver) behaves around the protocol machine. The same type,
/// with the same fields and builders, exists in `mcp-blocking`.
///
/// The callbacks run inside the driver's `poll`: keep them short and never block in
/// them.
///
/// ```
/// use std::time::Duration;
/// use mcp_smol::{AcceptDefaults, Options};
///
/// let options = Options::new()
///     .grace_period(Duration::from_millis(500))
///     .input_handler(AcceptDefaults)
///     .wire_log(|dir, line| eprintln!("{dir:?} {}", String::from_utf8_lossy(line)));
/// # let _ = options;
/// ```
#[non_exhaustive]
pub struct Options {
    /// How long the server may take to exit once its stdin is closed (by
    /// [`Client::close`](crate::Client::close) or the last handle being dropped) before it
    /// is killed. Default [`DEFAULT_GRACE_PERIOD`]. Over HTTP: how long the last
    /// exchanges (a legacy session's `DELETE`) may take before every connection is
    /// dropped.
    pub grace_period: Duration,
    /// Answers every request for input. Default [`DeclineAll`]. Only requests for
    /// capabilities declared in the `ClientConfig` reach it: declare elicitation to see
    /// forms.
    pub input_handler: Box<dyn InputHandler>,
    /// Called on progress notifications (ask for them with
    /// [`CallRequest::with_progress`](mcp_proto::client::CallRequest::with_progress)).
    pub progress: Option<ProgressHandler>,
    /// Sees every line on the wire, from the first probe on. Over HTTP that is the
    /// HTTP/1.1 text of each exchange (request head and body, response head and body as
    /// received, chunk sizes and SSE fields included, inside TLS), with the
    /// `Authorization` value replaced by `[redacted]`; lines of concurrent exchanges
    /// interleave, each line whole.
    pub wire_log: Option<WireLog>,
}

impl Options {
    /// The defaults: 2 s grace period, [`DeclineAll`], no progress handler, no log.
    #[must_use]
    pub fn new() -> Self {
        Options {
            grace_period: DEFAULT_GRACE_PERIOD,
            input_handler: Box::new(DeclineAll),
            progress: None,
            wire_log: None,
        }
    }

    /// The same options with another grace period.
    #[must_use]
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace_period = grace;
        self
    }

    /// The same options with another input handler.
    #[must_use]
    pub fn input_handler(mut self, handler: impl InputHandler + 'static) -> Self {
        self.input_handler = Box::new(handler);
        self
    }

    /// The same options with a progress callback.
    #[must_use]
    pub fn on_progress(mut self, f: impl FnMut(&Progress) + Send + 'static) -> Self {
        self.progress = Some(Box::new(f));
        self
    }

    /// The same options with a wire log.
    #[must_use]
    pub fn wire_log(mut self, f: impl FnMut(Direction, &[u8]) + Send + 'static) -> Self {
        self.wire_log = Some(Box::new(f));
        self
    }
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("grace_period", &self.grace_period)
            .field("progress", &self.progress.is_some())
            .field("wire_log", &self.wire_log.is_some())
            .finish_non_exhaustive()
    }
}

/// How a server process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Shutdown {
    /// Its exit status, when it could be collected.
    pub status: Option<ExitStatus>,
    /// True when it did not exit within the grace period and was killed.
    pub killed: bool,
}
