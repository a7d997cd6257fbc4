//! [`Client`]: the one client machine, over stdio or Streamable HTTP.

use super::http::pool::PoolStats;
use super::http::{HttpConfig, HttpLink};
use super::session::Session;
use super::stdio_link::StdioLink;
use super::transcript::{self, In, Out, Recorder};
use super::transmit::{ConnId, Transmit, TransportFailure};
use super::{
    ApiMisuse, CallId, CallRequest, ClientConfig, CloseReason, ConnectionState, Event, InputAnswer,
    InputId,
};
use crate::Instant;
use crate::model::ServerDetails;

/// The client connection machine: one connection to one MCP server, over a stdio
/// channel ([`Client::stdio`]) or Streamable HTTP ([`Client::http`]). See the
/// [module docs](super) for the run loop.
///
/// Its `Debug` is a summary that shows no secret: not the `Authorization` value, the
/// session id, the bytes of requests and responses in flight, nor the recording's
/// lines not yet taken (which are redacted only when they leave the process).
pub struct Client {
    link: Link,
    /// The instant it was made with: the origin of a transcript's times.
    origin: Instant,
    /// Some input, command or poll has reached it (a recording started now cannot be
    /// replayed).
    used: bool,
    recorder: Option<Box<Recorder>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Client");
        match &self.link {
            Link::Stdio(_) => d.field("transport", &"stdio"),
            Link::Http(l) => d
                .field("transport", &"http")
                .field("url", &super::http::UrlShown(&l.http_config().url)),
        };
        d.field("state", &self.state())
            .field(
                "server",
                &self.server().and_then(|s| s.server_info.as_ref()),
            )
            .field(
                "session_id",
                &crate::http::secret::redacted(&self.session_id()),
            )
            .field("recording", &self.recorder.is_some())
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
enum Link {
    Stdio(Box<StdioLink>),
    Http(Box<HttpLink>),
}

macro_rules! each {
    ($self:expr, |$l:ident| $body:expr) => {
        match &$self.link {
            Link::Stdio($l) => $body,
            Link::Http($l) => $body,
        }
    };
    (mut $self:expr, |$l:ident| $body:expr) => {
        match &mut $self.link {
            Link::Stdio($l) => $body,
            Link::Http($l) => $body,
        }
    };
}

impl Client {
    /// A client on a stdio server's stdin and stdout ([`ConnId::STDIO`]), which the
    /// driver has already started. The first bytes (probe or `initialize`) are ready.
    #[must_use]
    pub fn stdio(config: ClientConfig, now: Instant) -> Client {
        Client::new(Link::Stdio(Box::new(StdioLink::new(config, now))), now)
    }

    /// A client of the Streamable HTTP endpoint in `http`. The first
    /// [`Transmit::Connect`] is ready.
    #[must_use]
    pub fn http(config: ClientConfig, http: HttpConfig, now: Instant) -> Client {
        Client::new(Link::Http(Box::new(HttpLink::new(config, http, now))), now)
    }

    fn new(link: Link, origin: Instant) -> Client {
        Client {
            link,
            origin,
            used: false,
            recorder: None,
        }
    }

    fn session(&self) -> &Session {
        match &self.link {
            Link::Stdio(l) => &l.session,
            Link::Http(l) => l.session(),
        }
    }

    // ----- what it knows ------------------------------------------------------------

    /// Where the connection stands.
    #[must_use]
    pub fn state(&self) -> ConnectionState {
        self.session().state()
    }

    /// Why the connection closed, once it has.
    #[must_use]
    pub fn close_reason(&self) -> Option<&CloseReason> {
        self.session().close_reason()
    }

    /// What the server said about itself, once connected.
    #[must_use]
    pub fn server(&self) -> Option<&ServerDetails> {
        self.session().server()
    }

    /// stdio: the first line the server wrote to its stdout that could not be used as a
    /// JSON-RPC message (not JSON, not UTF-8, not JSON-RPC, over a limit), of this
    /// connection (a server started again included), quoted, clipped and escaped; `None`
    /// over HTTP. Every such line is an [`Event::PeerError`](crate::client::Event) as
    /// well; this one is kept to explain a connection that fails afterwards (a server
    /// printing its log lines to stdout, say): the adapters add it to their connect
    /// error.
    #[must_use]
    pub fn unreadable_line(&self) -> Option<&crate::client::UnreadableLine> {
        self.session().unreadable_line()
    }

    /// The latest view of the task behind `call` (see
    /// [`CallRequest::as_task`](crate::client::CallRequest::as_task)), once the server
    /// made one and until the call completes.
    #[must_use]
    pub fn task(&self, call: CallId) -> Option<&crate::client::Task> {
        self.session().task_of(call)
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ClientConfig {
        self.session().config()
    }

    /// The HTTP configuration, for a client over HTTP.
    #[must_use]
    pub fn http_config(&self) -> Option<&HttpConfig> {
        match &self.link {
            Link::Http(l) => Some(l.http_config()),
            Link::Stdio(_) => None,
        }
    }

    /// When a connection that never came up must be fully stopped (a stdio server
    /// reaped, every connection closed): the deadline of connecting as a whole
    /// ([`Limits::connect_timeout`](crate::Limits::connect_timeout)), so that a caller's
    /// timeout is a total, stopping included. `None` once connected: the driver's own
    /// grace period applies then.
    #[must_use]
    pub fn stop_by(&self) -> Option<Instant> {
        match &self.link {
            Link::Stdio(l) => l.session.unmet_connect_deadline(),
            Link::Http(l) => l.session().unmet_connect_deadline(),
        }
    }

    /// The legacy session id the server issued, for a client over HTTP.
    #[must_use]
    pub fn session_id(&self) -> Option<&str> {
        match &self.link {
            Link::Http(l) => l.session_id(),
            Link::Stdio(_) => None,
        }
    }

    /// The URL messages are POSTed to when the connection runs the 2024-11-05 HTTP+SSE
    /// transport (detected after `initialize` drew a 4xx, with old versions accepted),
    /// once the server's `endpoint` event named it. `None` on Streamable HTTP and stdio.
    #[must_use]
    pub fn http_sse_endpoint(&self) -> Option<&crate::http::EndpointUrl> {
        match &self.link {
            Link::Http(l) => l.http_sse_endpoint(),
            Link::Stdio(_) => None,
        }
    }

    /// Whether the server can send this client something outside the client's requests
    /// (notifications such as `resources/updated`, and requests, in the legacy era):
    /// over stdio while connected; over Streamable HTTP while the session's `GET` stream
    /// is open or being reopened, which is not the case when the server keeps no
    /// session, refuses the stream (`405`) or it failed for good; on the 2024-11-05
    /// HTTP+SSE transport while connected. False in the 2026-07-28 era, where
    /// `subscriptions/listen` asks for what is wanted, and once closed.
    #[must_use]
    pub fn hears_server(&self) -> bool {
        let legacy = matches!(
            self.state(),
            ConnectionState::Ready(crate::version::Era::Legacy, _)
        );
        match &self.link {
            Link::Http(l) => legacy && l.hears_server(),
            Link::Stdio(_) => legacy,
        }
    }

    /// Connection counters, for a client over HTTP.
    #[must_use]
    pub fn pool_stats(&self) -> Option<PoolStats> {
        match &self.link {
            Link::Http(l) => Some(l.pool_stats()),
            Link::Stdio(_) => None,
        }
    }

    /// Whether `conn` is an open HTTP connection with no exchange on it: after
    /// [`Client::handle_read`], true means the response that was being read is complete
    /// (a driver's wire log can end its last line there). Always false for stdio.
    #[must_use]
    pub fn is_idle(&self, conn: ConnId) -> bool {
        match &self.link {
            Link::Http(l) => l.is_idle(conn),
            Link::Stdio(_) => false,
        }
    }

    /// Whether the machine is done with its transport: closed, the last bytes handed
    /// out and every connection (or the stdio channel) released. A driver can stop then.
    #[must_use]
    pub fn is_released(&self) -> bool {
        each!(self, |l| l.is_released())
    }

    /// The browser came back from an authorization ([`Event::AuthorizationRequested`]):
    /// `url` is the URL it was sent to (or just its query). The flow goes on to the
    /// token request; the requests that waited are sent once it succeeds.
    ///
    /// # Errors
    ///
    /// [`AuthError::NotWaiting`](crate::auth::AuthError::NotWaiting) when no approval
    /// is pending (or the client is not over HTTP with authorization configured),
    /// [`AuthError::StateMismatch`](crate::auth::AuthError::StateMismatch) for a callback
    /// that belongs to no pending approval (the flow keeps waiting), or the reason the
    /// flow failed.
    pub fn handle_authorization_callback(
        &mut self,
        now: Instant,
        url: &str,
    ) -> Result<(), crate::auth::AuthError> {
        match &mut self.link {
            Link::Http(l) => l.handle_authorization_callback(now, url),
            Link::Stdio(_) => Err(crate::auth::AuthError::NotWaiting),
        }
    }

    /// Gives up the authorization that waits for a person
    /// ([`Event::AuthorizationRequested`]): the requests refused for want of it fail
    /// with [`CallError::Authorization`](super::CallError::Authorization), and those
    /// that only waited go out with the token the client still holds (a step-up keeps
    /// it) or fail the same way when there is none (before the
    /// handshake: the connection closes with
    /// [`CloseReason::Authorization`](super::CloseReason::Authorization)).
    pub fn abandon_authorization(&mut self, now: Instant, reason: &str) {
        if let Link::Http(l) = &mut self.link {
            l.abandon_authorization(now, reason);
        }
    }

    /// The authorization credentials as they stand (HTTP with authorization configured).
    #[must_use]
    pub fn credentials(&self) -> Option<&crate::auth::Credentials> {
        match &self.link {
            Link::Http(l) => l.credentials(),
            Link::Stdio(_) => None,
        }
    }

    /// Replaces the `Authorization` header value of the requests that follow (HTTP).
    pub fn set_authorization(&mut self, value: Option<String>) {
        let step = self.recorder.is_some().then(|| In::SetAuthorization {
            value: value.clone(),
        });
        if let Link::Http(l) = &mut self.link {
            l.set_authorization(value);
        }
        self.recorded_input(None, step);
    }

    // ----- transcripts --------------------------------------------------------------

    /// Starts recording a [transcript](super::transcript): every input, command and
    /// poll from now on appends a line for [`Client::poll_transcript`], keeping at most
    /// [`transcript::DEFAULT_BUDGET`] bytes waiting. Call it right after making the
    /// machine: a recording started later says so in its header and cannot be replayed.
    /// Recording again changes nothing.
    pub fn start_recording(&mut self) {
        self.start_recording_within(transcript::DEFAULT_BUDGET);
    }

    /// Starts recording, keeping at most `budget` bytes of lines waiting (one line
    /// always fits when none waits): past it the recording ends with a truncation mark.
    pub fn start_recording_within(&mut self, budget: usize) {
        if self.recorder.is_some() {
            return;
        }
        let header = transcript::header(self, self.used, self.origin);
        let mut recorder = Recorder::new(&header, self.origin, budget);
        recorder.deadline(self.poll_timeout());
        self.recorder = Some(Box::new(recorder));
    }

    /// The next line of the transcript (JSON, without a line end), while recording.
    /// Drain it after every step; nothing is written anywhere by the machine. Secrets
    /// are in it as they were given: pass the lines through a
    /// [`transcript::Redactor`] before they leave the process.
    pub fn poll_transcript(&mut self) -> Option<String> {
        self.recorder.as_mut()?.poll()
    }

    /// Records the input or command `make` describes, then the deadline if it changed.
    fn record(&mut self, now: Instant, make: impl FnOnce() -> In) {
        let step = self.recorder.is_some().then(make);
        self.recorded_input(Some(now), step);
    }

    fn recorded_input(&mut self, now: Option<Instant>, step: Option<In>) {
        self.used = true;
        let deadline = self.recorder.is_some().then(|| self.poll_timeout());
        if let (Some(r), Some(step), Some(deadline)) = (&mut self.recorder, step, deadline) {
            r.input(now, &step);
            r.deadline(deadline);
        }
    }

    fn recorded_output(&mut self, now: Option<Instant>, step: Out) {
        let deadline = self.poll_timeout();
        if let Some(r) = &mut self.recorder {
            r.output(now, &step);
            r.deadline(deadline);
        }
    }

    // ----- inputs -------------------------------------------------------------------

    /// `conn` is open: a [`Transmit::Connect`] succeeded, or (stdio) the fresh process
    /// asked for by [`Transmit::Respawn`] is running.
    pub fn handle_connected(&mut self, now: Instant, conn: ConnId) {
        each!(mut self, |l| l.handle_connected(now, conn));
        self.record(now, || In::Connected { conn: conn.0 });
    }

    /// Bytes read from `conn`, in any chunks.
    pub fn handle_read(&mut self, now: Instant, conn: ConnId, data: &[u8]) {
        each!(mut self, |l| l.handle_read(now, conn, data));
        self.record(now, || In::Read {
            conn: conn.0,
            data: transcript::Data::of(data),
        });
    }

    /// `bytes` of what [`Transmit::Write`] handed out for `conn` reached the peer (a
    /// stdio server's stdin took them). A driver that writes before it polls again can
    /// report each write whole. Over stdio the machine counts what is handed out and not
    /// yet written: a server that sends requests while not reading its stdin is cut off
    /// at [`Limits::max_queued_output_bytes`](crate::Limits::max_queued_output_bytes)
    /// ([`CloseReason::PeerNotReading`](super::CloseReason::PeerNotReading)) instead of
    /// growing the driver's queue. HTTP exchanges are bounded by their deadlines instead;
    /// reports for HTTP connections are accepted and ignored.
    pub fn handle_written(&mut self, now: Instant, conn: ConnId, bytes: usize) {
        if let Link::Stdio(l) = &mut self.link {
            l.handle_written(conn, bytes);
        }
        self.record(now, || In::Written {
            conn: conn.0,
            bytes,
        });
    }

    /// `conn` reached end of input (the stdio server closed its stdout or exited; the
    /// HTTP server closed the connection).
    pub fn handle_eof(&mut self, now: Instant, conn: ConnId) {
        each!(mut self, |l| l.handle_eof(now, conn));
        self.record(now, || In::Eof { conn: conn.0 });
    }

    /// The stdio server's process exited. Its stdout normally ends with it
    /// ([`Client::handle_eof`]), and this report changes nothing then. When a process the
    /// server started keeps the pipe open, what the server wrote before it exited is still
    /// read for [`EXIT_DRAIN`](super::EXIT_DRAIN), and then its stdout counts as ended:
    /// the calls in flight fail with the server's exit instead of waiting for their
    /// deadlines. Ignored by an HTTP client.
    pub fn handle_process_exited(&mut self, now: Instant) {
        if let Link::Stdio(l) = &mut self.link {
            l.handle_process_exited(now);
        }
        self.record(now, || In::ProcessExited);
    }

    /// `conn` failed: it could not be opened (refused, DNS, TLS, the process would not
    /// start), or a read or write on it failed. The machine closes it.
    pub fn handle_transport_error(
        &mut self,
        now: Instant,
        conn: ConnId,
        failure: TransportFailure,
    ) {
        let step = self.recorder.is_some().then(|| In::TransportError {
            conn: conn.0,
            kind: failure.kind.as_str().to_owned(),
            detail: failure.detail.clone(),
        });
        each!(mut self, |l| l.handle_transport_error(now, conn, failure));
        self.recorded_input(Some(now), step);
    }

    /// Time passed: fire every deadline at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        match &mut self.link {
            Link::Stdio(l) => l.handle_timeout(now),
            Link::Http(l) => l.handle_timeout(now),
        }
        self.record(now, || In::Timeout);
    }

    // ----- commands -----------------------------------------------------------------

    /// Starts a call. It is written at once when connected, or queued until then.
    ///
    /// # Errors
    /// [`ApiMisuse::Closed`] after close, [`ApiMisuse::TooManyCalls`] at the limit.
    pub fn call(&mut self, now: Instant, request: CallRequest) -> Result<CallId, ApiMisuse> {
        let repr = self
            .recorder
            .is_some()
            .then(|| transcript::RequestRepr::of(&request));
        let result = match &mut self.link {
            Link::Stdio(l) => l.session.call(now, request),
            Link::Http(l) => l.call(now, request),
        };
        self.recorded_input(Some(now), repr.map(|r| In::call(r, &result)));
        result
    }

    /// Answers an [`Event::InputRequested`].
    ///
    /// # Errors
    /// [`ApiMisuse::UnknownInput`] when the request was already answered or voided.
    pub fn respond(
        &mut self,
        now: Instant,
        input: InputId,
        answer: InputAnswer,
    ) -> Result<(), ApiMisuse> {
        let repr = self
            .recorder
            .is_some()
            .then(|| transcript::AnswerRepr::of(&answer));
        let result = match &mut self.link {
            Link::Stdio(l) => l.session.respond(now, input, answer),
            Link::Http(l) => l.respond(now, input, answer),
        };
        self.recorded_input(Some(now), repr.map(|a| In::respond(input, a, &result)));
        result
    }

    /// Replaces the roots offered to the server ([`ClientConfig::roots()`]): later
    /// `roots/list` requests get them, and a legacy session whose client declared
    /// `roots.listChanged` is sent `notifications/roots/list_changed` when they differ
    /// from the ones before.
    ///
    /// # Errors
    /// [`ApiMisuse::Undeclared`] when the client did not declare roots;
    /// [`ApiMisuse::Closed`] after close.
    pub fn set_roots(&mut self, now: Instant, roots: Vec<super::Root>) -> Result<(), ApiMisuse> {
        let repr = self.recorder.is_some().then(|| roots.clone());
        let result = match &mut self.link {
            Link::Stdio(l) => l.session.set_roots(now, roots),
            Link::Http(l) => l.set_roots(now, roots),
        };
        self.recorded_input(
            Some(now),
            repr.map(|roots| In::SetRoots {
                roots,
                misuse: transcript::misuse(&result),
            }),
        );
        result
    }

    /// Cancels a call: it completes with [`super::CallError::Cancelled`] and the server
    /// is told (`notifications/cancelled`, or over 2026 HTTP by closing its stream).
    /// A call with a task behind it sends `tasks/cancel` for the task as well (the
    /// tasks protocol forbids `notifications/cancelled` for a task), to a 2025-11-25
    /// server only when it declared `tasks.cancel`; its answer is not awaited.
    ///
    /// # Errors
    /// [`ApiMisuse::UnknownCall`] when the call already completed.
    pub fn cancel(&mut self, now: Instant, call: CallId) -> Result<(), ApiMisuse> {
        let result = match &mut self.link {
            Link::Stdio(l) => l.session.cancel(now, call),
            Link::Http(l) => l.cancel(now, call),
        };
        self.record(now, || In::Cancel {
            call: call.0,
            misuse: transcript::misuse(&result),
        });
        result
    }

    /// Ends the connection: every call fails with [`CloseReason::Local`]; then the
    /// transport is released through [`Transmit::Close`] (after a legacy HTTP session's
    /// `DELETE`).
    pub fn close(&mut self, now: Instant) {
        match &mut self.link {
            Link::Stdio(l) => {
                l.session.close(now);
                l.pump();
            }
            Link::Http(l) => l.close(now),
        }
        self.record(now, || In::Close);
    }

    // ----- outputs ------------------------------------------------------------------

    /// The next thing for the driver to do. For [`Transmit::Write`] the bytes are
    /// appended to `buf`. Call until it returns `None` after every input and command.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        let transmit = match &mut self.link {
            Link::Stdio(l) => l.poll_transmit(now, buf),
            Link::Http(l) => l.poll_transmit(buf),
        };
        if self.recorder.is_some() {
            let len = match &transmit {
                Some(Transmit::Write { len, .. }) => *len,
                _ => 0,
            };
            let bytes = &buf[buf.len().saturating_sub(len)..];
            let step = Out::transmit(transmit.as_ref(), bytes);
            self.recorded_output(Some(now), step);
        }
        self.used = true;
        transmit
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        let event = each!(mut self, |l| l.poll_event());
        if self.recorder.is_some() {
            self.recorded_output(None, Out::event(event.as_ref()));
        }
        self.used = true;
        event
    }

    /// The bytes a server can make this machine hold, as the machine counts them: events
    /// waiting to be polled, input being read (a stdio line, HTTP responses, event
    /// streams), messages waiting to be written, listing pages gathered, requests for
    /// input waiting for an answer, listings kept by the 2026 list cache, the ids of URL-mode
    /// elicitations waiting for their completion notice. Each is bounded by
    /// [`Limits`](crate::Limits): the event bytes by `max_queued_event_bytes` (plus what
    /// the caller's own calls return), a line or event by `max_message_bytes`, a listing
    /// by `max_list_bytes`, legacy requests for input by `max_pending_input_bytes`, the
    /// list cache by `max_cache_bytes`, the elicitation ids by
    /// `max_pending_server_requests` ids of at most
    /// [`MAX_ELICITATION_ID_BYTES`](crate::client::MAX_ELICITATION_ID_BYTES).
    #[must_use]
    pub fn retained_bytes(&self) -> usize {
        match &self.link {
            Link::Stdio(l) => l.session.retained_bytes(),
            Link::Http(l) => l.retained_bytes(),
        }
    }

    /// When [`Client::handle_timeout`] should be called next.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        match &self.link {
            Link::Stdio(l) => l.poll_timeout(),
            Link::Http(l) => l.poll_timeout(),
        }
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;
    use crate::http::EndpointUrl;
    use crate::version::EraMode;

    /// A legacy HTTP client holding every kind of secret it can: a query secret in its
    /// URL, a configured `Authorization`, an API key header, a session id from the
    /// server and a recording not yet taken.
    fn client_with_secrets() -> Client {
        let url = EndpointUrl::parse(
            "http://127.0.0.1:9/mcp?access_token=urlsecret&baresecret",
            false,
        )
        .expect("a valid URL");
        let mut http = HttpConfig::new(url);
        http.authorization = Some("Bearer headersecret".to_owned());
        http.headers
            .push(("X-Api-Key".to_owned(), "keysecret".to_owned()));
        let mut config = ClientConfig::new("debug", "1");
        config.era_mode = EraMode::Legacy;
        let mut client = Client::http(config, http, Instant::ZERO);
        client.start_recording();
        let mut buf = Vec::new();
        while client.poll_transmit(Instant::ZERO, &mut buf).is_some() {}
        client.handle_connected(Instant::ZERO, ConnId(1));
        buf.clear();
        while client.poll_transmit(Instant::ZERO, &mut buf).is_some() {}
        let sent = String::from_utf8_lossy(&buf).into_owned();
        assert!(sent.contains("headersecret"), "{sent}");
        let id = sent
            .split("\"id\":")
            .nth(1)
            .and_then(|s| s.split([',', '}']).next())
            .expect("the initialize request has an id")
            .to_owned();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-06-18","capabilities":{{}},"serverInfo":{{"name":"s","version":"1"}}}}}}"#
        );
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: sessionsecret\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        client.handle_read(Instant::ZERO, ConnId(1), response.as_bytes());
        assert_eq!(client.session_id(), Some("sessionsecret"));
        client
    }

    #[test]
    fn debug_shows_no_credential_session_id_or_recorded_line() {
        let client = client_with_secrets();
        let shown = [
            format!("{client:?}"),
            format!("{client:#?}"),
            format!("{:?}", client.http_config().expect("an HTTP client")),
        ];
        for text in &shown {
            for secret in [
                "urlsecret",
                "baresecret",
                "headersecret",
                "keysecret",
                "sessionsecret",
            ] {
                assert!(!text.contains(secret), "{secret} shown: {text:.2000}");
            }
        }
        // What is not secret is still there to read.
        assert!(
            shown[0].contains("Ready") || shown[0].contains("state"),
            "{}",
            shown[0]
        );
        assert!(shown[2].contains("X-Api-Key") && shown[2].contains("127.0.0.1:9/mcp"));
    }
}
