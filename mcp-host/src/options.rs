//! How a client behaves around the protocol machine ([`Options`]), what it reports
//! ([`Progress`], the wire log's [`Direction`]), and the event handling that depends on
//! the options alone ([`Options::handle_event`]).

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use mcp_proto::client::{CallId, DeclineAll, Event, InputAnswer, InputHandler, InputId};

/// Default time a server gets to exit after its stdin is closed, before it is killed: 2 s.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(2);

/// Notifications a client keeps for its caller before the oldest are dropped.
pub const MAX_NOTIFICATIONS: usize = 1024;

/// Peer errors (malformed or unexpected messages from the server) a client keeps.
pub const MAX_PEER_ERRORS: usize = 32;

/// Called with every `notifications/progress` of a call that asked for progress.
pub type ProgressHandler = Box<dyn FnMut(&Progress) + Send>;

/// Called with every line written to or read from the server, without its line end.
/// Over HTTP these are the lines of each request and response as sent and received
/// (heads and bodies, chunk sizes and SSE fields included), with the values of
/// `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie` replaced by
/// `[redacted]`; see [`crate::wire_log`].
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

/// How a client behaves around the protocol machine: the same type in `mcp-blocking`
/// and `mcp-smol` (re-exported as `mcp_blocking::Options` and `mcp_smol::Options`).
///
/// The callbacks run on the thread (or inside the future) that drives the connection:
/// keep them short and never block in them.
///
/// ```
/// use std::time::Duration;
/// use mcp_host::Options;
/// use mcp_proto::client::AcceptDefaults;
///
/// let options = Options::new()
///     .grace_period(Duration::from_millis(500))
///     .input_handler(AcceptDefaults)
///     .wire_log(|dir, line| eprintln!("{dir:?} {}", String::from_utf8_lossy(line)));
/// # let _ = options;
/// ```
#[non_exhaustive]
pub struct Options {
    /// How long the server may take to exit once its stdin is closed (by closing the
    /// client, or dropping it) before it is killed. Default [`DEFAULT_GRACE_PERIOD`].
    /// Over HTTP: how long the last exchanges (a legacy session's `DELETE`) may take
    /// before every connection is dropped (`mcp-blocking` waits 2 s at most).
    pub grace_period: Duration,
    /// Answers every request for input. Default [`DeclineAll`]. Only requests for
    /// capabilities declared in the `ClientConfig` reach it: declare elicitation to see
    /// forms.
    pub input_handler: Box<dyn InputHandler + Send>,
    /// Called on progress notifications (ask for them with
    /// [`CallRequest::with_progress`](mcp_proto::client::CallRequest::with_progress)).
    pub progress: Option<ProgressHandler>,
    /// Sees every line on the wire, from the first probe on; see [`WireLog`]. Over HTTP
    /// the lines of concurrent exchanges interleave, each line whole.
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
    pub fn input_handler(mut self, handler: impl InputHandler + Send + 'static) -> Self {
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

    /// Handles the machine's events that the options alone decide, the same way for
    /// every adapter and transport:
    ///
    /// * [`Event::Progress`] goes to the [progress callback](Options::on_progress), if
    ///   any;
    /// * [`Event::InputRequested`] is answered on the spot by the
    ///   [`input_handler`](Options::input_handler): `respond` gets the answer, to hand
    ///   to the machine's `respond`. Nothing is ever left waiting, so the machine's
    ///   `InputCancelled` needs no handling.
    ///
    /// Every other event is returned for the caller to handle.
    ///
    /// ```
    /// use mcp_host::Options;
    /// use mcp_proto::client::Event;
    ///
    /// let mut options = Options::new();
    /// let event = Event::NotificationsDropped { count: 3 };
    /// let left = options.handle_event(event, |_, _| unreachable!());
    /// assert!(matches!(left, Some(Event::NotificationsDropped { count: 3 })));
    /// ```
    pub fn handle_event(
        &mut self,
        event: Event,
        respond: impl FnOnce(InputId, InputAnswer),
    ) -> Option<Event> {
        match event {
            Event::Progress {
                call,
                progress,
                total,
                message,
            } => {
                if let Some(f) = &mut self.progress {
                    f(&Progress {
                        call,
                        progress,
                        total,
                        message,
                    });
                }
                None
            }
            Event::InputRequested { input, request, .. } => {
                respond(input, self.input_handler.answer(&request));
                None
            }
            other => Some(other),
        }
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

/// Appends `item` to a queue that keeps the newest `max` items, dropping the oldest
/// when full. True when one was dropped.
///
/// ```
/// use std::collections::VecDeque;
///
/// let mut q = VecDeque::from([1, 2]);
/// assert!(mcp_host::push_newest(&mut q, 3, 2));
/// assert_eq!(q, [2, 3]);
/// ```
pub fn push_newest<T>(queue: &mut VecDeque<T>, item: T, max: usize) -> bool {
    let mut dropped = false;
    while !queue.is_empty() && queue.len() >= max {
        queue.pop_front();
        dropped = true;
    }
    queue.push_back(item);
    dropped
}
