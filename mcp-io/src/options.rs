//! How a client behaves around the protocol machine ([`Options`]), what it reports
//! ([`Progress`], the wire log's [`Direction`]), and the event handling that depends on
//! the options alone ([`Options::handle_event`]).

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::auth::Credentials;
use mcp_proto::client::{CallId, DeclineAll, Event, InputAnswer, InputHandler, LogMessage};
use mcp_proto::jsonrpc::ErrorObject;

use crate::auth::{AuthorizationHandler, Reply};

/// Default time a server gets to exit after its stdin is closed, before it is killed: 2 s.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(2);

/// Notifications a client keeps for its caller before the oldest are dropped.
pub const MAX_NOTIFICATIONS: usize = 1024;

/// Peer errors (malformed or unexpected messages from the server) a client keeps.
pub const MAX_PEER_ERRORS: usize = 32;

/// Called with every `notifications/progress` of a call that asked for progress: `Send`
/// in the default flavour ([`Sendable`]), any closure in [`Local`].
pub type ProgressHandler<F = Sendable> = Box<<F as Flavour>::Progress>;

/// Called with every line written to or read from the server, without its line end:
/// `Send` in the default flavour ([`Sendable`]), any closure in [`Local`].
/// Over HTTP these are the lines of each request and response as sent and received
/// (heads and bodies, chunk sizes and SSE fields included), with the values of
/// credential-bearing headers (`Authorization`, `Cookie`, `Mcp-Session-Id`, `X-Api-Key`,
/// …, and those named with [`Options::redact_header`]) and of credential-looking query
/// parameters (`access_token`, `api_key`, …) replaced by `[redacted]`; see
/// [`crate::wire_log`] for the exact rules.
pub type WireLog<F = Sendable> = Box<<F as Flavour>::WireLog>;

/// Called with every log message of the server (`notifications/message`) and the call
/// it belongs to, when known. Ask for messages with
/// [`CallRequest::set_log_level`](mcp_proto::client::CallRequest::set_log_level) (or per
/// request with [`CallRequest::log_level`](mcp_proto::client::CallRequest::log_level())).
pub type LogSink = Box<dyn FnMut(Option<CallId>, &LogMessage) + Send>;

/// Called with the `elicitationId` of every URL-mode elicitation the server reports
/// complete (`notifications/elicitation/complete`).
pub type ElicitationCompleteSink = Box<dyn FnMut(&str) + Send>;

/// Called with the credentials an authorization produced, to keep them for the next
/// run (they hold secrets: store them privately).
pub type CredentialSink = Box<dyn FnMut(&Credentials) + Send>;

/// Called with every line of the connection's transcript (one JSON document, without a
/// line end), secrets redacted: `Send` in the default flavour ([`Sendable`]), any
/// closure in [`Local`]. See [`crate::transcript`].
pub type TranscriptSink<F = Sendable> = Box<<F as Flavour>::Transcript>;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Sendable {}
    impl Sealed for super::Local {}
}

/// Whether a connection's handlers (input handler, progress callback, wire log) must be
/// `Send`: [`Sendable`] (the default) or [`Local`]. Sealed: those two are all there is.
///
/// A `Send` handler fits both flavours; the conversions below turn one into the
/// flavour's box.
pub trait Flavour: sealed::Sealed + Sized + 'static {
    /// The input handler as [`Options`] holds it.
    type InputHandler: ?Sized + InputHandler;
    /// The progress callback as [`Options`] holds it.
    type Progress: ?Sized + FnMut(&Progress);
    /// The wire log as [`Options`] holds it.
    type WireLog: ?Sized + FnMut(Direction, &[u8]);
    /// The transcript sink as [`Options`] holds it.
    type Transcript: ?Sized + FnMut(&str);

    /// A `Send` input handler, as this flavour holds one.
    fn input_handler(handler: Box<dyn InputHandler + Send>) -> Box<Self::InputHandler>;

    /// A `Send` progress callback, as this flavour holds one.
    fn progress(handler: ProgressHandler) -> ProgressHandler<Self>;

    /// A `Send` wire log, as this flavour holds one.
    fn wire_log(log: WireLog) -> WireLog<Self>;

    /// A `Send` transcript sink, as this flavour holds one.
    fn transcript(sink: TranscriptSink) -> TranscriptSink<Self>;
}

/// The default [`Flavour`]: every handler is `Send`, so [`Options`] is `Send`, and so is
/// whatever holds them (`mcp_blocking::Client`, `mcp_smol::Driver`): they can move to
/// another thread or run on a multi-threaded executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sendable {}

/// The [`Flavour`] of handlers that need not be `Send` (an `Rc<RefCell<…>>` inside, a
/// GUI toolkit's objects): for connections driven on one thread, such as an
/// `mcp_blocking::Client<Local>` on the caller's thread, or an `mcp_smol::Driver<Local>`
/// on a `LocalExecutor`. `Options<Local>` and what holds it are not `Send`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Local {}

/// The two flavours differ only in the `Send` bound on the handlers they hold; a `Send`
/// handler becomes either by unsizing.
macro_rules! flavour {
    ($flavour:ty $(, $send:path)?) => {
        impl Flavour for $flavour {
            type InputHandler = dyn InputHandler $(+ $send)?;
            type Progress = dyn FnMut(&Progress) $(+ $send)?;
            type WireLog = dyn FnMut(Direction, &[u8]) $(+ $send)?;
            type Transcript = dyn FnMut(&str) $(+ $send)?;

            fn input_handler(handler: Box<dyn InputHandler + Send>) -> Box<Self::InputHandler> {
                handler
            }

            fn progress(handler: ProgressHandler) -> ProgressHandler<Self> {
                handler
            }

            fn wire_log(log: WireLog) -> WireLog<Self> {
                log
            }

            fn transcript(sink: TranscriptSink) -> TranscriptSink<Self> {
                sink
            }
        }
    };
}

flavour!(Sendable, Send);
flavour!(Local);

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
/// use mcp_io::Options;
/// use mcp_proto::client::AcceptDefaults;
///
/// let options = Options::new()
///     .grace_period(Duration::from_millis(500))
///     .input_handler(AcceptDefaults)
///     .wire_log(|dir, line| eprintln!("{dir:?} {}", String::from_utf8_lossy(line)));
/// # let _ = options;
/// ```
///
/// # Flavours
///
/// `Options` (that is, `Options<Sendable>`, made by [`Options::new`]) takes `Send`
/// handlers only and is `Send` itself. [`Options::local`] makes an `Options<Local>`,
/// whose handlers need not be `Send` (and which is not): for a connection driven on one
/// thread. The adapters take either, and what they return carries the flavour:
/// `mcp_blocking::Client<Local>`, `mcp_smol::Driver<Local>`.
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use mcp_io::{Local, Options};
/// use mcp_proto::client::{InputAnswer, InputHandler, InputRequest};
///
/// /// Asks the application's (single-threaded) UI.
/// struct Dialog(Rc<RefCell<Vec<String>>>);
///
/// impl InputHandler for Dialog {
///     fn answer(&mut self, request: &InputRequest) -> InputAnswer {
///         self.0.borrow_mut().push(format!("{request:?}"));
///         InputAnswer::decline()
///     }
/// }
///
/// let asked = Rc::new(RefCell::new(Vec::new()));
/// let options: Options<Local> = Options::local().input_handler(Dialog(asked.clone()));
/// # let _ = options;
/// ```
#[non_exhaustive]
pub struct Options<F: Flavour = Sendable> {
    /// How long the server may take to exit once its stdin is closed (by closing the
    /// client, or dropping it) before it is killed; half-way through it is sent
    /// `SIGTERM` (see [`ending`](crate::ending)). Default [`DEFAULT_GRACE_PERIOD`].
    /// Over HTTP: how long the last exchanges (a legacy session's `DELETE`) may take
    /// before every connection is dropped (`mcp-blocking` waits 2 s at most).
    pub grace_period: Duration,
    /// Answers every request for input. Default [`DeclineAll`]. Only requests for
    /// capabilities declared in the `ClientConfig` reach it: declare elicitation to see
    /// forms.
    pub input_handler: Box<F::InputHandler>,
    /// Called on progress notifications (ask for them with
    /// [`CallRequest::with_progress`](mcp_proto::client::CallRequest::with_progress)).
    pub progress: Option<ProgressHandler<F>>,
    /// Sees every line on the wire, from the first probe on; see [`WireLog`]. Over HTTP
    /// the lines of concurrent exchanges interleave, each line whole.
    pub wire_log: Option<WireLog<F>>,
    /// Header names whose values the wire log (and the transcript) hides, besides those
    /// of the built-in rules ([`crate::wire_log#secret-headers`]); compared without
    /// regard to ASCII case. Read when the client connects. Default none.
    pub redact_headers: Vec<String>,
    /// Receives the connection's transcript, line by line, from the first probe on (see
    /// [`TranscriptSink`] and [`crate::transcript`]): the machine records when this is
    /// set as the client connects. Default none.
    pub transcript: Option<TranscriptSink<F>>,
    /// Gets a person's approval when an authorization needs one (HTTP with
    /// [`HttpOptions::auth`](crate::http::HttpOptions::auth) set). Default none: such an
    /// authorization fails at once, naming the URL that was to be opened.
    pub authorization_handler: Option<Box<dyn AuthorizationHandler + Send>>,
    /// Called with the credentials whenever an authorization changed them (new tokens,
    /// a registration), to keep them for the next run. Default none.
    pub on_credentials: Option<CredentialSink>,
    /// Receives the server's log messages. Default none (they are dropped).
    pub on_log: Option<LogSink>,
    /// Told when the server reports a URL-mode elicitation complete. Default none.
    pub on_elicitation_complete: Option<ElicitationCompleteSink>,
    /// Requests for input are queued for the application instead of going to the
    /// [`input_handler`](Options::input_handler): `mcp-smol`'s
    /// `Client::next_input_request` hands them out and `Client::respond` answers, at
    /// whatever pace a person takes, without blocking the executor. Default off.
    /// `mcp-blocking` ignores it: a call holds its thread, so the handler answers there.
    pub queue_input: bool,
}

impl Options {
    /// The defaults, with `Send` handlers: 2 s grace period, [`DeclineAll`], no progress
    /// handler, no log.
    #[must_use]
    pub fn new() -> Self {
        Self::defaults()
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

    /// The same options with a transcript sink, called with each line of the
    /// connection's transcript.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use mcp_io::Options;
    ///
    /// let lines = Arc::new(Mutex::new(Vec::new()));
    /// let sink = Arc::clone(&lines);
    /// let options = Options::new().transcript(move |line| sink.lock().unwrap().push(line.to_owned()));
    /// assert!(options.transcript.is_some());
    /// ```
    #[must_use]
    pub fn transcript(mut self, f: impl FnMut(&str) + Send + 'static) -> Self {
        self.transcript = Some(Box::new(f));
        self
    }

    /// These options in the [`Local`] flavour (every handler kept as it is), to add
    /// handlers that are not `Send`.
    #[must_use]
    pub fn into_local(self) -> Options<Local> {
        Options {
            grace_period: self.grace_period,
            input_handler: self.input_handler,
            progress: self.progress.map(|p| p as ProgressHandler<Local>),
            wire_log: self.wire_log.map(|l| l as WireLog<Local>),
            redact_headers: self.redact_headers,
            transcript: self.transcript.map(|t| t as TranscriptSink<Local>),
            authorization_handler: self.authorization_handler,
            on_credentials: self.on_credentials,
            on_log: self.on_log,
            queue_input: self.queue_input,
            on_elicitation_complete: self.on_elicitation_complete,
        }
    }
}

impl Options<Local> {
    /// The defaults, for handlers that need not be `Send`: 2 s grace period,
    /// [`DeclineAll`], no progress handler, no log.
    #[must_use]
    pub fn local() -> Self {
        Self::defaults()
    }

    /// The same options with another input handler, `Send` or not.
    #[must_use]
    pub fn input_handler(mut self, handler: impl InputHandler + 'static) -> Self {
        self.input_handler = Box::new(handler);
        self
    }

    /// The same options with a progress callback, `Send` or not.
    #[must_use]
    pub fn on_progress(mut self, f: impl FnMut(&Progress) + 'static) -> Self {
        self.progress = Some(Box::new(f));
        self
    }

    /// The same options with a wire log, `Send` or not.
    #[must_use]
    pub fn wire_log(mut self, f: impl FnMut(Direction, &[u8]) + 'static) -> Self {
        self.wire_log = Some(Box::new(f));
        self
    }

    /// The same options with a transcript sink, `Send` or not.
    #[must_use]
    pub fn transcript(mut self, f: impl FnMut(&str) + 'static) -> Self {
        self.transcript = Some(Box::new(f));
        self
    }
}

impl From<Options> for Options<Local> {
    fn from(options: Options) -> Self {
        options.into_local()
    }
}

impl<F: Flavour> Options<F> {
    fn defaults() -> Self {
        Options {
            grace_period: DEFAULT_GRACE_PERIOD,
            input_handler: F::input_handler(Box::new(DeclineAll)),
            progress: None,
            wire_log: None,
            redact_headers: Vec::new(),
            transcript: None,
            authorization_handler: None,
            on_credentials: None,
            on_log: None,
            on_elicitation_complete: None,
            queue_input: false,
        }
    }

    /// The same options queueing requests for input for the application to take and
    /// answer asynchronously (see [`Options::queue_input`]).
    #[must_use]
    pub fn queue_input_requests(mut self) -> Self {
        self.queue_input = true;
        self
    }

    /// The same options with a sink for the server's log messages.
    #[must_use]
    pub fn on_log(mut self, f: impl FnMut(Option<CallId>, &LogMessage) + Send + 'static) -> Self {
        self.on_log = Some(Box::new(f));
        self
    }

    /// The same options with a callback for completed URL-mode elicitations.
    #[must_use]
    pub fn on_elicitation_complete(mut self, f: impl FnMut(&str) + Send + 'static) -> Self {
        self.on_elicitation_complete = Some(Box::new(f));
        self
    }

    /// The same options with an [`AuthorizationHandler`].
    #[must_use]
    pub fn authorization_handler(
        mut self,
        handler: impl AuthorizationHandler + Send + 'static,
    ) -> Self {
        self.authorization_handler = Some(Box::new(handler));
        self
    }

    /// The same options with a callback for changed credentials.
    #[must_use]
    pub fn on_credentials(mut self, f: impl FnMut(&Credentials) + Send + 'static) -> Self {
        self.on_credentials = Some(Box::new(f));
        self
    }

    /// The same options with another grace period.
    #[must_use]
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace_period = grace;
        self
    }

    /// The grace period for stopping `machine`'s transport now: the configured one, cut
    /// to what is left of connecting as a whole when the connection never came up
    /// ([`Client::stop_by`](mcp_proto::client::Client::stop_by)), so that a caller's
    /// timeout bounds the failed connect with the stop included.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_proto::Instant;
    /// use mcp_proto::client::{Client, ClientConfig};
    ///
    /// let mut config = ClientConfig::new("app", "1");
    /// config.limits.connect_timeout = Duration::from_secs(3);
    /// let machine = Client::stdio(config, Instant::ZERO);
    /// let options = mcp_io::Options::new();
    /// let later = Instant::ZERO + Duration::from_millis(2500);
    /// assert_eq!(options.grace_now(&machine, later), Duration::from_millis(500));
    /// ```
    #[must_use]
    pub fn grace_now(&self, machine: &mcp_proto::client::Client, now: Instant) -> Duration {
        match machine.stop_by() {
            Some(by) => self.grace_period.min(by.saturating_duration_since(now)),
            None => self.grace_period,
        }
    }

    /// The same options with one more header whose value the wire log hides, in
    /// requests and responses: for a credential in a header the built-in rules do not
    /// know ([`crate::wire_log#secret-headers`]).
    ///
    /// ```
    /// use mcp_io::Options;
    ///
    /// let options = Options::new().redact_header("X-Tenant-Key");
    /// assert_eq!(options.redact_headers, ["X-Tenant-Key"]);
    /// ```
    #[must_use]
    pub fn redact_header(mut self, name: impl Into<String>) -> Self {
        self.redact_headers.push(name.into());
        self
    }

    /// Handles the machine's events that the options alone decide, the same way for
    /// every adapter and transport:
    ///
    /// * [`Event::Progress`] goes to the [progress callback](Options::on_progress), if
    ///   any;
    /// * [`Event::InputRequested`] is answered on the spot by the
    ///   [`input_handler`](Options::input_handler): `reply` gets the answer, to apply to
    ///   the machine ([`Reply::apply`]); with [`Options::queue_input`] it is returned
    ///   instead, for the [`Inbox`](crate::Inbox) to queue.
    /// * [`Event::AuthorizationRequested`] goes to the
    ///   [`authorization_handler`](Options::authorization_handler), and `reply` gets the
    ///   callback URL it returned, or the reason there is none;
    /// * [`Event::CredentialsChanged`] goes to [`on_credentials`](Options::on_credentials);
    /// * [`Event::Log`] goes to [`on_log`](Options::on_log()), and
    ///   [`Event::ElicitationCompleted`] to
    ///   [`on_elicitation_complete`](Options::on_elicitation_complete()), when set (else
    ///   they are returned).
    ///
    /// Every other event is returned for the caller to handle.
    ///
    /// ```
    /// use mcp_io::Options;
    /// use mcp_proto::client::Event;
    ///
    /// let mut options = Options::new();
    /// let event = Event::NotificationsDropped { count: 3 };
    /// let left = options.handle_event(event, |_| unreachable!());
    /// assert!(matches!(left, Some(Event::NotificationsDropped { count: 3 })));
    /// ```
    pub fn handle_event(&mut self, event: Event, reply: impl FnOnce(Reply)) -> Option<Event> {
        match event {
            Event::Progress {
                call,
                progress,
                total,
                message,
            } => {
                if let Some(f) = &mut self.progress {
                    let progress = Progress {
                        call,
                        progress,
                        total,
                        message,
                    };
                    // A callback that panics loses that one notice, nothing else: it runs
                    // on whichever thread drives (`mcp-blocking`, where the panic took down
                    // that thread's own call) or inside the driver (`mcp-smol`, where it
                    // ended the connection and every call on it).
                    let _ = contained(|| f(&progress));
                }
                None
            }
            e @ Event::InputRequested { .. } if self.queue_input => Some(e),
            Event::InputRequested { input, request, .. } => {
                // A handler that panics still answers: the request is refused with what
                // it said, so that no call waits for an answer that will never come (in
                // `mcp-blocking` the handler runs on whichever thread drives, which the
                // panic would take down with an unrelated call of its own).
                let handler = &mut self.input_handler;
                let answer = contained(|| handler.answer(&request))
                    .unwrap_or_else(|said| InputAnswer::Error(handler_panicked(&said)));
                reply(Reply::Input(input, answer));
                None
            }
            Event::AuthorizationRequested { url } => {
                reply(match &mut self.authorization_handler {
                    Some(h) => match contained(|| h.authorize(&url)) {
                        Ok(Ok(callback)) => Reply::AuthorizationCallback(callback),
                        Ok(Err(why)) => Reply::AuthorizationAbandoned(why),
                        Err(said) => Reply::AuthorizationAbandoned(format!(
                            "the authorization handler failed: {said}"
                        )),
                    },
                    None => Reply::AuthorizationAbandoned(format!(
                        "approval needed at {url}, and no authorization handler is set"
                    )),
                });
                None
            }
            Event::CredentialsChanged(c) => {
                if let Some(f) = &mut self.on_credentials {
                    let _ = contained(|| f(&c));
                }
                None
            }
            Event::Log { call, message } => match &mut self.on_log {
                Some(f) => {
                    let _ = contained(|| f(call, &message));
                    None
                }
                None => Some(Event::Log { call, message }),
            },
            Event::ElicitationCompleted { elicitation_id } => {
                match &mut self.on_elicitation_complete {
                    Some(f) => {
                        let _ = contained(|| f(&elicitation_id));
                        None
                    }
                    None => Some(Event::ElicitationCompleted { elicitation_id }),
                }
            }
            other => Some(other),
        }
    }
}

impl<F: Flavour> Default for Options<F> {
    fn default() -> Self {
        Self::defaults()
    }
}

impl<F: Flavour> fmt::Debug for Options<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("grace_period", &self.grace_period)
            .field("progress", &self.progress.is_some())
            .field("wire_log", &self.wire_log.is_some())
            .field("redact_headers", &self.redact_headers)
            .field("transcript", &self.transcript.is_some())
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
/// assert!(mcp_io::push_newest(&mut q, 3, 2));
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

/// Runs a callback of the application with a panic in it contained (see the progress
/// callback in [`Options::handle_event`]): what it returned, or what the panic said
/// (`(no message)` when it said nothing as text).
fn contained<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
        (panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_owned())
    })
}

/// The refusal sent for a request whose input handler panicked, with the panic's message.
fn handler_panicked(said: &str) -> ErrorObject {
    ErrorObject::new(
        mcp_proto::jsonrpc::codes::INTERNAL_ERROR,
        format!("the client's input handler failed: {said}"),
    )
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use mcp_proto::client::{InputAnswer, InputRequest};

    use super::*;

    #[test]
    fn sendable_options_cross_threads() {
        fn send<T: Send>(_: &T) {}
        send(&Options::new().input_handler(DeclineAll));
    }

    #[test]
    fn local_options_take_handlers_that_are_not_send() {
        let asked = Rc::new(RefCell::new(0));
        let count = asked.clone();
        struct Counting(Rc<RefCell<u32>>);
        impl InputHandler for Counting {
            fn answer(&mut self, _: &InputRequest) -> InputAnswer {
                *self.0.borrow_mut() += 1;
                InputAnswer::decline()
            }
        }
        let mut options = Options::new()
            .grace_period(Duration::from_secs(1))
            .into_local()
            .input_handler(Counting(count))
            .on_progress(move |_| {});
        assert_eq!(options.grace_period, Duration::from_secs(1));
        let _ = options.input_handler.answer(&InputRequest::Roots);
        assert_eq!(*asked.borrow(), 1);
    }
}
