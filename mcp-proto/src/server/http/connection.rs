//! One HTTP connection, server side: what to write, when to read, when to close.
//!
//! # Theory of operation
//!
//! [`HttpConnection`] makes every decision about one connection; the adapter accepts,
//! reads, writes, waits and wakes. After every input ([`HttpConnection::handle_input`],
//! [`handle_eof`](HttpConnection::handle_eof),
//! [`handle_transport_error`](HttpConnection::handle_transport_error),
//! [`handle_timeout`](HttpConnection::handle_timeout), [`close`](HttpConnection::close))
//! and after every wake-up, drain [`HttpConnection::poll_transmit`] and obey in order:
//! [`HttpTransmit::Write`] the bytes appended to the buffer, [`HttpTransmit::Shutdown`]
//! (half-close: send FIN, keep reading), [`HttpTransmit::Close`] (drop the socket and the
//! machine). Then wait for whichever comes first: input, when
//! [`HttpConnection::wants_input`]; output for the open stream
//! ([`HttpConnection::stream`], named by [`HttpEndpoint::poll_ready`]); the instant of
//! [`HttpConnection::poll_timeout`]. Give every write
//! [`HttpConnectionConfig::send_timeout`] to make progress, else report a transport error.
//!
//! **The endpoint.** Every connection of a server shares one [`HttpEndpoint`], so the
//! machine does not own it: `poll_transmit` takes it, and is the only call that touches
//! it. Requests are handled there, one at a time, each answered before the next is taken;
//! open streams are polled and cancelled there. After each `poll_transmit`, drain
//! [`HttpEndpoint::poll_ready`] and wake the connections whose streams it names.
//!
//! **Reading a request.** Three phases, each with a deadline that bytes do not reset, so
//! a client dripping one byte at a time cannot keep a connection:
//!
//! * *idle*, no byte of a request yet: closed without a word [`idle_timeout`] after the
//!   last exchange ended, or [`head_timeout`] after the connection opened when no request
//!   came yet;
//! * *head*, from its first byte (or from the connection's start, for the first request):
//!   it must be complete within `head_timeout`;
//! * *body*: it must keep an average of [`min_body_bytes_per_sec`] with at most
//!   [`body_grace`] of slack. The body starts with `body_grace` in hand; each byte adds
//!   its share (1 / rate s), but the slack never exceeds `body_grace`, so a burst cannot
//!   buy a long stall.
//!
//! A head or body past its deadline is answered `408 Request Timeout` with
//! `Connection: close`, and the connection closes. None of these deadlines run while a
//! request is being answered.
//!
//! **Answering.** A complete response is written; when it says `Connection: close` (the
//! request asked to close, HTTP/1.0 without keep-alive, a request that could not be read)
//! the connection closes after it. An open stream ([`HttpReply::Stream`]) gets its head,
//! then whatever the endpoint has for it whenever `poll_transmit` is called, an SSE
//! comment after every [`sse_keepalive`] of silence, and its end; then the next request.
//! While a stream is open the machine wants no input: pipelined requests stay in the
//! socket (the adapter may still look for the client leaving without reading, and report
//! end of input). Input is wanted only when every request read so far is answered, so a
//! connection never holds more than one read's worth of requests ahead.
//!
//! **`100 Continue`** is written for a request with `Expect: 100-continue` once its head
//! is in and its body is not, and only when it is the next request to answer (never in
//! the middle of an earlier response); not when its body already arrived.
//!
//! **Leaving.** End of input: the requests already read are answered (a half-closed
//! client still gets its answers), then the connection closes; during an open stream it
//! means the client left, and the request is cancelled. A transport error cancels the
//! open stream and closes at once. [`HttpConnection::close`] (the server stops) cancels
//! the open stream and closes without lingering.
//!
//! **Graceful close.** After a last response (a 408, a 503, one that says
//! `Connection: close`), [`HttpTransmit::Shutdown`]; input is then read and dropped until
//! end of input or for at most [`linger`], so that unread input does not turn the close
//! into a reset that destroys that response; then [`HttpTransmit::Close`]. With end of
//! input already seen, or no last response to protect (an idle connection timing out,
//! the server stopping, a failed connection), `Close` comes at once. Every close names
//! its reason ([`HttpCloseReason`]; the timeouts name their limit).
//!
//! **Over the bound.** [`super::HttpHost`] gives the connections it cannot serve a machine
//! that writes `503` with `Retry-After: 1` and closes as above. A served connection tells
//! its host, through its permit, when it waits for a request (from the moment its last
//! answer was written) and what it holds (the reader's bytes, answers not yet written).
//! When the host gave its place to a newcomer, it closes at its next turn, which comes at
//! once (its deadline is due, and the waker its adapter registered is woken): a request
//! read in full is answered with `Connection: close`, one partly read gets `503`, an idle
//! connection closes without a word. When all connections together hold more than the
//! host allows, one reading a request gets `503` and closes.
//!
//! [`idle_timeout`]: HttpConnectionConfig::idle_timeout
//! [`head_timeout`]: HttpConnectionConfig::head_timeout
//! [`min_body_bytes_per_sec`]: HttpConnectionConfig::min_body_bytes_per_sec
//! [`body_grace`]: HttpConnectionConfig::body_grace
//! [`sse_keepalive`]: HttpConnectionConfig::sse_keepalive
//! [`linger`]: HttpConnectionConfig::linger

use std::task::Waker;
use std::time::Duration;

use crate::Instant;
use crate::held::give_back;
use crate::jsonrpc::{ErrorObject, codes};

use super::host::Permit;
use super::reader::Progress;
use super::{
    HttpEndpoint, HttpReply, HttpRequestError, HttpRequestLimits, HttpRequestReader, HttpResponse,
    HttpStream, StreamId, StreamStatus,
};

#[cfg(test)]
mod tests;

/// The interim response to `Expect: 100-continue`.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The limits and intervals of one connection.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpConnectionConfig {
    /// Request size and pipelining bounds.
    pub limits: HttpRequestLimits,
    /// A request head must be complete this long after its first byte (after the
    /// connection opened, for its first request). Default 10 s.
    pub head_timeout: Duration,
    /// A kept-alive connection waits this long for the first byte of the next request.
    /// Default 30 s.
    pub idle_timeout: Duration,
    /// The lowest average rate of a request body, in bytes per second, beyond the slack
    /// of [`HttpConnectionConfig::body_grace`]. Default 240 (Kestrel's); 0 asks for no
    /// rate, only that the body never stalls for longer than `body_grace`.
    pub min_body_bytes_per_sec: u64,
    /// The slack of the body rate: how far behind it a body may fall, and so how long it
    /// may stall. Default 5 s.
    pub body_grace: Duration,
    /// Interval of SSE comment lines on an open stream with nothing to say. Default 15 s;
    /// zero sends none.
    pub sse_keepalive: Duration,
    /// How long a write may make no progress (a client that stopped reading) before the
    /// adapter gives up and reports a transport error. Default 30 s.
    pub send_timeout: Duration,
    /// How long a closing connection keeps reading (and dropping) input after its last
    /// response, waiting for the client's end of input. Default 500 ms.
    pub linger: Duration,
}

/// A blocked write returns to its adapter after [`HttpConnectionConfig::send_timeout`]
/// divided by this, to try again: the kernel does not report a little free room as
/// writable, and counts a blocked send's timeout from the call, not from the client's
/// last read, so a write waiting the whole send timeout at once found room only at the
/// timeout and let a client that stopped reading hold its connection for two or three.
pub const SEND_SLICES: u32 = 4;

impl HttpConnectionConfig {
    /// How long one attempt at a blocked write may wait before trying again: a
    /// [`SEND_SLICES`]th of the send timeout, at least 1 ms.
    #[must_use]
    pub fn send_slice(&self) -> Duration {
        (self.send_timeout / SEND_SLICES).max(Duration::from_millis(1))
    }
}

/// A write of the machine's bytes under way, as its adapter does it in slices
/// ([`HttpConnectionConfig::send_slice`]): it has stalled once no byte went out for the
/// send timeout, and the adapter then reports a transport error. A client reading a large
/// answer slowly but steadily never stalls it.
#[derive(Clone, Copy, Debug)]
pub struct WriteProgress {
    last: Instant,
    send_timeout: Duration,
}

impl WriteProgress {
    /// A write starting at `now`.
    #[must_use]
    pub fn new(now: Instant, config: &HttpConnectionConfig) -> WriteProgress {
        WriteProgress {
            last: now,
            send_timeout: config.send_timeout,
        }
    }

    /// Bytes went out at `now`.
    pub fn handle_progress(&mut self, now: Instant) {
        self.last = now;
    }

    /// Whether no byte went out for the send timeout by `now`.
    #[must_use]
    pub fn stalled(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last) >= self.send_timeout
    }
}

impl Default for HttpConnectionConfig {
    fn default() -> Self {
        HttpConnectionConfig {
            limits: HttpRequestLimits::default(),
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            min_body_bytes_per_sec: 240,
            body_grace: Duration::from_secs(5),
            sse_keepalive: Duration::from_secs(15),
            send_timeout: Duration::from_secs(30),
            linger: Duration::from_millis(500),
        }
    }
}

/// What the adapter is to do next; see [`HttpConnection`] for the run loop.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpTransmit {
    /// Write the `len` bytes just appended to the buffer, in order after earlier writes.
    Write {
        /// How many bytes at the end of the buffer.
        len: usize,
    },
    /// Nothing more will be written: half-close the connection (TCP `shutdown` of the
    /// sending side), and keep reading while [`HttpConnection::wants_input`].
    Shutdown,
    /// Close the connection and drop the machine.
    Close {
        /// Why.
        reason: HttpCloseReason,
    },
}

/// Why a connection closed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpCloseReason {
    /// The client ended its input, and every request it sent was answered.
    #[error("the client closed the connection")]
    ClientClosed,
    /// A request did not keep the connection alive (`Connection: close`, HTTP/1.0).
    #[error("the request asked to close the connection")]
    RequestedClose,
    /// A request could not be read; it was answered with the error's status.
    #[error("unreadable request: {0}")]
    BadRequest(HttpRequestError),
    /// No request began within the idle timeout after the last one.
    #[error("no request within the idle timeout of {limit:?}")]
    IdleTimeout {
        /// [`HttpConnectionConfig::idle_timeout`].
        limit: Duration,
    },
    /// A request head was not complete in time (answered 408 when part of it came).
    #[error("the request head took longer than {limit:?}")]
    HeadTimeout {
        /// [`HttpConnectionConfig::head_timeout`].
        limit: Duration,
    },
    /// A request body fell behind the minimum rate by more than its slack (answered 408).
    #[error("the request body was slower than {min_bytes_per_sec} bytes/s beyond {grace:?}")]
    SlowBody {
        /// [`HttpConnectionConfig::min_body_bytes_per_sec`].
        min_bytes_per_sec: u64,
        /// [`HttpConnectionConfig::body_grace`].
        grace: Duration,
    },
    /// The client went away while its response stream was open; the request was
    /// cancelled.
    #[error("the client left an open response stream")]
    StreamAbandoned,
    /// Over the connection bound: answered 503 ([`super::HttpHost`]).
    #[error("refused: too many connections")]
    Refused,
    /// All connections together held more bytes than the server allows
    /// ([`super::HttpServeOptions::max_buffered_bytes`]) while this one read a request:
    /// answered 503.
    #[error("the server holds too many bytes of requests and answers")]
    Overloaded,
    /// Its place went to a newcomer while it waited for a request or read one
    /// ([`super::HttpHost`]): a request partly read was answered 503.
    #[error("evicted: another client needed its place")]
    Evicted,
    /// [`HttpConnection::close`]: the server is stopping.
    #[error("the server is stopping")]
    Stopped,
    /// The connection failed ([`HttpConnection::handle_transport_error`]).
    #[error("the connection failed")]
    TransportError,
}

/// Where the connection stands.
#[derive(Debug)]
enum State {
    /// Reading the next request, or answering those read.
    Reading(Phase),
    /// Writing an open stream.
    Streaming {
        stream: HttpStream,
        last_write: Instant,
    },
    /// On the way out.
    Closing {
        reason: HttpCloseReason,
        stage: Stage,
    },
    Closed(HttpCloseReason),
}

/// The request being read, and its deadline.
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// No byte of it yet; `first`: no request came on the connection yet.
    Idle {
        deadline: Instant,
        first: bool,
    },
    Head {
        deadline: Instant,
    },
    /// `received`: body bytes in so far.
    Body {
        deadline: Instant,
        received: usize,
    },
}

impl Phase {
    fn deadline(self) -> Instant {
        match self {
            Phase::Idle { deadline, .. }
            | Phase::Head { deadline }
            | Phase::Body { deadline, .. } => deadline,
        }
    }
}

/// How far a close has come.
#[derive(Clone, Copy, Debug)]
enum Stage {
    /// The last bytes go out, then `Shutdown`.
    Flushing,
    /// Reading and dropping input until end of input or the instant.
    Lingering(Instant),
    /// `Close` is next.
    Done,
}

/// Every decision about one server-side HTTP connection: what to write, when to read,
/// when to close. The adapter accepts, reads, writes, waits and wakes.
///
/// **Run loop.** After every input ([`handle_input`](Self::handle_input),
/// [`handle_eof`](Self::handle_eof), [`handle_transport_error`](Self::handle_transport_error),
/// [`handle_timeout`](Self::handle_timeout) once [`poll_timeout`](Self::poll_timeout) is
/// due, [`close`](Self::close)) and after every wake-up, drain
/// [`poll_transmit`](Self::poll_transmit) and obey in order. Then wait for whichever comes
/// first: input, while [`wants_input`](Self::wants_input); output for the open
/// [`stream`](Self::stream), announced by [`HttpEndpoint::poll_ready`]; the deadline. Give
/// each write [`HttpConnectionConfig::send_timeout`] to make progress. The endpoint,
/// shared by every connection of a server, is only touched in `poll_transmit`: after each
/// call, drain [`HttpEndpoint::poll_ready`] and wake the connections it names.
///
/// **Decisions.** A request head must be complete within
/// [`head_timeout`](HttpConnectionConfig::head_timeout) of its first byte (of the
/// connection's start, for the first request); a body must keep up
/// [`min_body_bytes_per_sec`](HttpConnectionConfig::min_body_bytes_per_sec) with
/// [`body_grace`](HttpConnectionConfig::body_grace) of slack; bytes do not reset these
/// (408, then close). A kept-alive connection closes after
/// [`idle_timeout`](HttpConnectionConfig::idle_timeout) without a request. Requests are
/// answered one at a time; no input is wanted while one waits or a stream is open.
/// `100 Continue` goes out only for the next request to answer, while its body is
/// awaited. Open streams get an SSE comment after every
/// [`sse_keepalive`](HttpConnectionConfig::sse_keepalive) of silence and are cancelled
/// when the client leaves. `Connection: close` and HTTP/1.0 end the connection after the
/// answer; a last response is protected by a half-close and a
/// [`linger`](HttpConnectionConfig::linger). Every close names its [`HttpCloseReason`].
///
/// ```
/// use mcp_proto::Instant;
/// use mcp_proto::server::example;
/// use mcp_proto::server::http::{
///     HttpCloseReason, HttpConnection, HttpConnectionConfig, HttpEndpoint, HttpTransmit,
/// };
///
/// let mut endpoint = HttpEndpoint::new(example::server());
/// let now = Instant::ZERO;
/// let mut conn = HttpConnection::new(now, HttpConnectionConfig::default());
/// let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
/// let head = format!(
///     "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
///      Content-Length: {}\r\nConnection: close\r\n\r\n",
///     body.len()
/// );
/// conn.handle_input(now, head.as_bytes());
/// conn.handle_input(now, body);
///
/// // The answer, then a graceful close: FIN, linger until the client's end of input.
/// let mut out = Vec::new();
/// let sent = conn.poll_transmit(now, &mut endpoint, &mut out);
/// assert_eq!(sent, Some(HttpTransmit::Write { len: out.len() }));
/// assert!(out.starts_with(b"HTTP/1.1 200 OK\r\n"));
/// let sent = conn.poll_transmit(now, &mut endpoint, &mut out);
/// assert_eq!(sent, Some(HttpTransmit::Shutdown));
/// assert!(conn.wants_input());
/// conn.handle_eof(now);
/// let sent = conn.poll_transmit(now, &mut endpoint, &mut out);
/// let reason = HttpCloseReason::RequestedClose;
/// assert_eq!(sent, Some(HttpTransmit::Close { reason }));
/// ```
#[derive(Debug)]
pub struct HttpConnection {
    config: HttpConnectionConfig,
    reader: HttpRequestReader,
    state: State,
    /// Bytes decided and not handed out yet.
    pending: Vec<u8>,
    /// Requests taken from the reader so far.
    taken: u64,
    /// The request (numbered as `taken` counts) whose `100 Continue` is owed.
    continue_for: Option<u64>,
    /// The client ended its input.
    eof: bool,
    /// The connection failed: nothing more is written.
    broken: bool,
    /// A close decided by an input, carried out (open stream cancelled) at the next
    /// `poll_transmit`.
    ending: Option<HttpCloseReason>,
    /// Its place in an [`super::HttpHost`], if it has one.
    permit: Option<Permit>,
    /// When the last exchange ended, until the host is told the connection waits for a
    /// request: once its last bytes were handed out and written (the adapter asks for
    /// more), not while a slow reader still holds the answer.
    waiting_from: Option<Instant>,
    /// Bytes of the last [`HttpTransmit::Write`], held by the adapter until it comes back.
    in_flight: usize,
}

impl HttpConnection {
    /// The machine of a connection opened at `now`.
    #[must_use]
    pub fn new(now: Instant, config: HttpConnectionConfig) -> Self {
        HttpConnection {
            reader: HttpRequestReader::new(config.limits.clone()),
            state: State::Reading(Phase::Idle {
                deadline: now + config.head_timeout,
                first: true,
            }),
            config,
            pending: Vec::new(),
            taken: 0,
            continue_for: None,
            eof: false,
            broken: false,
            ending: None,
            permit: None,
            waiting_from: None,
            in_flight: 0,
        }
    }

    pub(super) fn with_permit(mut self, permit: Permit) -> Self {
        self.permit = Some(permit);
        self
    }

    /// What wakes the adapter when its [`super::HttpHost`] gives this connection's place
    /// to a newcomer (at once if it has): waking it must bring the adapter back to the
    /// machine, from a blocked read or a wait until the deadline (the blocking adapter
    /// ends the socket's reading, an async one wakes the connection's task). From then
    /// on the connection's deadline is due, and it closes at its next turn. Without a
    /// waker it learns it at its next input or deadline, which for a fresh connection is
    /// `head_timeout` away. A connection without a host place never calls it.
    pub fn set_eviction_waker(&mut self, waker: Waker) {
        if let Some(permit) = &mut self.permit {
            permit.set_waker(waker);
        }
    }

    /// A connection over the bound: `503` with `Retry-After: 1`, then a graceful close.
    pub(super) fn refusal(now: Instant, config: HttpConnectionConfig, permit: Permit) -> Self {
        let mut conn = HttpConnection::new(now, config).with_permit(permit);
        HttpResponse::new(503)
            .with_header("Connection", "close")
            .with_header("Retry-After", "1")
            .write(&mut conn.pending);
        conn.begin_close(HttpCloseReason::Refused);
        conn
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &HttpConnectionConfig {
        &self.config
    }

    /// Whether this machine refuses its connection (503) rather than serving it.
    #[must_use]
    pub fn is_refusal(&self) -> bool {
        matches!(self.close_reason(), Some(HttpCloseReason::Refused))
    }

    /// Bytes read from the connection. Ignored while closing (the linger drops them).
    pub fn handle_input(&mut self, now: Instant, bytes: &[u8]) {
        let open = matches!(self.state, State::Reading(_) | State::Streaming { .. });
        if !open || bytes.is_empty() {
            return;
        }
        self.reader.handle_input(bytes);
        if self.reader.take_expect_continue() {
            let queued = u64::try_from(self.reader.queued()).unwrap_or(u64::MAX);
            self.continue_for = Some(self.taken.saturating_add(queued).saturating_add(1));
        }
        if let State::Reading(phase) = &mut self.state {
            *phase = advance(*phase, now, self.reader.progress(), &self.config);
        }
        if self.account() && !self.reader.has_request() {
            self.refuse_overloaded();
        }
    }

    /// The client ended its input (a read returned 0).
    pub fn handle_eof(&mut self, _now: Instant) {
        self.eof = true;
        if matches!(self.state, State::Reading(_)) && !self.reader.has_request() && self.evicted() {
            // Evicted (an adapter may end the socket's reading to say so): what was read
            // of a request is answered as the eviction says, not as a request cut short.
            return;
        }
        if matches!(self.state, State::Streaming { .. }) && self.evicted() {
            // A stream accepted on a connection that gave its place away is answered,
            // then the connection closes. The end of input says nothing of its client
            // here (the adapter may have ended the socket's reading to wake it); one
            // that did leave is found when a write fails.
            return;
        }
        self.reader.handle_eof();
        match &mut self.state {
            State::Streaming { .. } => {
                self.ending.get_or_insert(HttpCloseReason::StreamAbandoned);
            }
            State::Closing { stage, .. } if !matches!(stage, Stage::Flushing) => {
                *stage = Stage::Done;
            }
            _ => {}
        }
    }

    /// The connection failed (a read or write error, a write that made no progress for
    /// [`HttpConnectionConfig::send_timeout`]): nothing more is written, and `Close`
    /// follows.
    pub fn handle_transport_error(&mut self, _now: Instant) {
        self.broken = true;
        self.pending.clear();
        match &mut self.state {
            State::Closing { stage, .. } => *stage = Stage::Done,
            State::Closed(_) => {}
            _ => {
                self.ending = Some(HttpCloseReason::TransportError);
            }
        }
    }

    /// The server stops: the open stream is cancelled, and the connection closes (after
    /// the bytes already decided). A lingering connection stops lingering.
    pub fn close(&mut self, _now: Instant) {
        match &mut self.state {
            State::Reading(_) | State::Streaming { .. } => {
                self.ending.get_or_insert(HttpCloseReason::Stopped);
            }
            State::Closing { stage, .. } if matches!(stage, Stage::Lingering(_)) => {
                *stage = Stage::Done;
            }
            State::Closing { .. } | State::Closed(_) => {}
        }
    }

    /// Hands the connection `now` when its next deadline has passed
    /// ([`HttpConnection::poll_timeout`], [`HttpConnection::handle_timeout`]): whether it
    /// was due.
    pub fn handle_due(&mut self, now: Instant) -> bool {
        let due = self.poll_timeout().is_some_and(|t| t <= now);
        if due {
            self.handle_timeout(now);
        }
        due
    }

    /// Acts on the deadlines that passed by `now`: a request too slow (408), an idle
    /// connection, an SSE comment due, a linger over.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.ending.is_some() {
            return;
        }
        match &mut self.state {
            State::Reading(phase) if !self.reader.has_request() && phase.deadline() <= now => {
                let c = &self.config;
                let (reason, answer) = match *phase {
                    Phase::Idle { first: false, .. } => {
                        let limit = c.idle_timeout;
                        (HttpCloseReason::IdleTimeout { limit }, false)
                    }
                    Phase::Idle { first: true, .. } => {
                        let limit = c.head_timeout;
                        (HttpCloseReason::HeadTimeout { limit }, false)
                    }
                    Phase::Head { .. } => {
                        let limit = c.head_timeout;
                        (HttpCloseReason::HeadTimeout { limit }, true)
                    }
                    Phase::Body { .. } => {
                        let min_bytes_per_sec = c.min_body_bytes_per_sec;
                        let grace = c.body_grace;
                        let reason = HttpCloseReason::SlowBody {
                            min_bytes_per_sec,
                            grace,
                        };
                        (reason, true)
                    }
                };
                // Something of a request came: say why it is not answered.
                if answer {
                    let text = format!("Request Timeout: {reason}");
                    let e = ErrorObject::new(codes::INVALID_REQUEST, text);
                    HttpResponse::json_error(408, None, &e)
                        .with_header("Connection", "close")
                        .write(&mut self.pending);
                }
                self.begin_close(reason);
            }
            State::Streaming { stream, last_write } => {
                let every = self.config.sse_keepalive;
                if !every.is_zero() && *last_write + every <= now {
                    stream.write_comment(&mut self.pending);
                    *last_write = now;
                }
            }
            State::Closing { stage, .. } => {
                if let Stage::Lingering(until) = *stage
                    && until <= now
                {
                    *stage = Stage::Done;
                }
            }
            _ => {}
        }
    }

    /// The next thing to do, with the bytes of a [`HttpTransmit::Write`] appended to
    /// `buf`. Requests are handed to `endpoint` here, the open stream polled or cancelled.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        endpoint: &mut HttpEndpoint,
        buf: &mut Vec<u8>,
    ) -> Option<HttpTransmit> {
        if let Some(reason) = self.ending.take() {
            if let State::Streaming { stream, .. } = &self.state {
                endpoint.cancel_stream(now, stream);
            }
            self.begin_close(reason);
        }
        self.leave_if_evicted();
        // The adapter came back: what it was handed is written.
        self.in_flight = 0;
        // A large answer once written leaves no large buffer behind: neither ours nor
        // the adapter's, which the swap below would make ours. Nothing counts them.
        if buf.is_empty() {
            give_back(buf);
        }
        give_back(&mut self.pending);
        loop {
            if !self.pending.is_empty() {
                let len = self.pending.len();
                self.in_flight = len;
                if buf.is_empty() {
                    // Hand the bytes over instead of copying them; the adapter's cleared
                    // buffer comes back as ours, so both keep their capacity.
                    std::mem::swap(buf, &mut self.pending);
                } else {
                    buf.append(&mut self.pending);
                }
                if let State::Streaming { last_write, .. } = &mut self.state {
                    *last_write = now;
                }
                self.account();
                return Some(HttpTransmit::Write { len });
            }
            let progressed = match &self.state {
                State::Reading(_) => self.answer(now, endpoint),
                State::Streaming { .. } => self.stream_output(now, endpoint),
                State::Closing { .. } => return self.finish_close(now),
                State::Closed(_) => return None,
            };
            if !progressed {
                self.account();
                if let (State::Reading(_), Some(permit)) = (&self.state, &mut self.permit) {
                    // Everything written: waiting for the next request from now on.
                    if let Some(since) = self.waiting_from.take() {
                        permit.waiting_since(Some(since));
                    }
                }
                return None;
            }
        }
    }

    /// How long an adapter may block (reading, or waiting for output) before it must
    /// come back to the machine: the time until [`poll_timeout`](Self::poll_timeout),
    /// at least 1 ms (a zero socket timeout means none); `None` without a deadline.
    #[must_use]
    pub fn until_due(&self, now: Instant) -> Option<Duration> {
        self.poll_timeout().map(|t| {
            t.saturating_duration_since(now)
                .max(Duration::from_millis(1))
        })
    }

    /// When [`HttpConnection::handle_timeout`] is next due.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        match &self.state {
            State::Reading(_) if self.reader.has_request() => None,
            // Its place went to a newcomer: due now, to close.
            State::Reading(_) if self.evicted() => Some(Instant::ZERO),
            State::Reading(phase) => Some(phase.deadline()),
            State::Streaming { last_write, .. } if !self.config.sse_keepalive.is_zero() => {
                Some(*last_write + self.config.sse_keepalive)
            }
            State::Closing {
                stage: Stage::Lingering(t),
                ..
            } => Some(*t),
            _ => None,
        }
    }

    /// Whether the end of the client's input was seen ([`HttpConnection::handle_eof`]):
    /// an adapter need not look at the socket for it again (an evicted connection's
    /// socket may read as ended for good, its reading ended by the adapter to wake it).
    #[must_use]
    pub fn input_ended(&self) -> bool {
        self.eof
    }

    /// Whether to read the connection now: while a request is being read (never while
    /// one read earlier waits for its answer or a stream is open), and while lingering.
    #[must_use]
    pub fn wants_input(&self) -> bool {
        match &self.state {
            State::Reading(_) => {
                self.ending.is_none() && !self.reader.has_request() && self.reader.wants_input()
            }
            State::Closing {
                stage: Stage::Lingering(_),
                ..
            } => !self.broken,
            _ => false,
        }
    }

    /// The open stream, whose output [`HttpEndpoint::poll_ready`] announces: when it
    /// does, call [`HttpConnection::poll_transmit`].
    #[must_use]
    pub fn stream(&self) -> Option<StreamId> {
        match &self.state {
            State::Streaming { stream, .. } => Some(stream.id()),
            _ => None,
        }
    }

    /// Why the connection is closing or closed.
    #[must_use]
    pub fn close_reason(&self) -> Option<&HttpCloseReason> {
        match &self.state {
            State::Closing { reason, .. } | State::Closed(reason) => Some(reason),
            _ => None,
        }
    }

    /// Whether [`HttpTransmit::Close`] was handed out.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed(_))
    }

    /// Answers the next request read, writes an owed `100 Continue`, or notices the end
    /// of the requests. False when there is nothing to do.
    fn answer(&mut self, now: Instant, endpoint: &mut HttpEndpoint) -> bool {
        if let Some(n) = self.continue_for
            && !self.reader.has_request()
            && self.taken.saturating_add(1) == n
        {
            self.continue_for = None;
            if let Progress::Body(_) = self.reader.progress() {
                self.pending.extend_from_slice(CONTINUE);
                return true;
            }
        }
        let Some(next) = self.reader.poll_request() else {
            if self.reader.is_finished() {
                let reason = if self.eof {
                    HttpCloseReason::ClientClosed
                } else {
                    HttpCloseReason::RequestedClose
                };
                self.begin_close(reason);
                return true;
            }
            return false;
        };
        self.taken = self.taken.saturating_add(1);
        if self.continue_for.is_some_and(|n| n <= self.taken) {
            self.continue_for = None;
        }
        self.waiting_from = None;
        if let Some(permit) = &mut self.permit {
            permit.waiting_since(None);
        }
        let request = match next {
            Ok(request) => request,
            Err(e) => {
                HttpResponse::for_request_error(&e).write(&mut self.pending);
                self.begin_close(HttpCloseReason::BadRequest(e));
                return true;
            }
        };
        match endpoint.handle_request(now, &request) {
            HttpReply::Complete(response) if self.evicted() => {
                // Answered, and the last: its place went to another client.
                let response = if response.closes_connection() {
                    response
                } else {
                    response.with_header("Connection", "close")
                };
                response.write(&mut self.pending);
                self.begin_close(HttpCloseReason::Evicted);
            }
            HttpReply::Complete(response) => {
                response.write(&mut self.pending);
                if response.closes_connection() {
                    self.begin_close(HttpCloseReason::RequestedClose);
                } else {
                    self.next_request(now);
                }
            }
            HttpReply::Stream(stream) => {
                stream.write_head(&mut self.pending);
                self.state = State::Streaming {
                    stream,
                    last_write: now,
                };
            }
        }
        self.reader.recycle(request);
        true
    }

    /// Takes what the endpoint has for the open stream. False when it has nothing.
    fn stream_output(&mut self, now: Instant, endpoint: &mut HttpEndpoint) -> bool {
        let State::Streaming { stream, .. } = &self.state else {
            return false;
        };
        if !endpoint.stream_ready(stream) {
            return false;
        }
        if endpoint.poll_stream(stream, &mut self.pending) == StreamStatus::Finished {
            if stream.closes_connection() {
                self.begin_close(HttpCloseReason::RequestedClose);
            } else {
                self.next_request(now);
            }
        }
        true
    }

    /// The close's next step: `Shutdown` after the last bytes, then `Close`.
    fn finish_close(&mut self, now: Instant) -> Option<HttpTransmit> {
        let State::Closing { reason, stage } = &mut self.state else {
            return None;
        };
        match stage {
            Stage::Flushing if !self.eof && !self.broken => {
                *stage = Stage::Lingering(now + self.config.linger);
                Some(HttpTransmit::Shutdown)
            }
            Stage::Lingering(_) => None,
            Stage::Flushing | Stage::Done => {
                let reason = reason.clone();
                self.state = State::Closed(reason.clone());
                Some(HttpTransmit::Close { reason })
            }
        }
    }

    /// Tells the host what this connection holds (the request being read and those
    /// queued, answers not written yet): whether all its connections hold too much.
    fn account(&mut self) -> bool {
        let held = self.reader.held_bytes() + self.pending.len() + self.in_flight;
        self.permit.as_mut().is_some_and(|p| p.hold(held))
    }

    /// A request is being read while the server holds too much: `503`, and the
    /// connection closes (what it held goes with it).
    fn refuse_overloaded(&mut self) {
        if !matches!(self.state, State::Reading(_)) || self.ending.is_some() {
            return;
        }
        self.write_unavailable(
            "Service Unavailable: the server holds too much data in flight; try again later",
        );
        self.begin_close(HttpCloseReason::Overloaded);
    }

    /// A last `503` for a request this connection will not read to its end, with
    /// `Retry-After: 1`: another connection may serve it at once.
    fn write_unavailable(&mut self, why: &str) {
        let e = ErrorObject::new(codes::INTERNAL_ERROR, why);
        HttpResponse::json_error(503, None, &e)
            .with_header("Connection", "close")
            .with_header("Retry-After", "1")
            .write(&mut self.pending);
    }

    /// Whether a newcomer took this connection's place ([`super::HttpHost`]).
    fn evicted(&self) -> bool {
        self.permit.as_ref().is_some_and(Permit::evicted)
    }

    /// Closes an evicted connection that has no request to answer: with a `503` when
    /// part of one came (the client may try again at once), else without a word.
    fn leave_if_evicted(&mut self) {
        let State::Reading(phase) = self.state else {
            return;
        };
        if self.reader.has_request() || !self.evicted() {
            return;
        }
        if !matches!(phase, Phase::Idle { .. }) {
            self.write_unavailable("Service Unavailable: another client needed this connection");
        }
        self.begin_close(HttpCloseReason::Evicted);
    }

    /// An exchange ended: the next request's phase, from what was read of it already.
    fn next_request(&mut self, now: Instant) {
        self.waiting_from = Some(now);
        let c = &self.config;
        self.state = State::Reading(match self.reader.progress() {
            Progress::Nothing => Phase::Idle {
                deadline: now + c.idle_timeout,
                first: false,
            },
            Progress::Head => Phase::Head {
                deadline: now + c.head_timeout,
            },
            Progress::Body(received) => Phase::Body {
                deadline: now + c.body_grace,
                received,
            },
        });
    }

    fn begin_close(&mut self, reason: HttpCloseReason) {
        if matches!(self.state, State::Closing { .. } | State::Closed(_)) {
            return;
        }
        if self.broken {
            self.pending.clear();
        }
        self.continue_for = None;
        // Shutdown and linger only protect last bytes; without any, close at once.
        let stage = if self.pending.is_empty() {
            Stage::Done
        } else {
            Stage::Flushing
        };
        self.state = State::Closing { reason, stage };
        if let Some(permit) = &mut self.permit {
            permit.leave();
        }
    }
}

/// The phase after input: the first byte starts the head's deadline, body bytes earn
/// their time (see the module docs).
fn advance(phase: Phase, now: Instant, progress: Progress, config: &HttpConnectionConfig) -> Phase {
    match (phase, progress) {
        (Phase::Idle { deadline, first }, Progress::Nothing | Progress::Head) => Phase::Head {
            deadline: if first {
                deadline
            } else {
                now + config.head_timeout
            },
        },
        (phase, Progress::Body(received)) => {
            let (deadline, before) = match phase {
                Phase::Body {
                    deadline,
                    received: before,
                } if before <= received => (deadline, before),
                _ => (now + config.body_grace, 0),
            };
            let earned = body_credit(received - before, config.min_body_bytes_per_sec);
            Phase::Body {
                deadline: (deadline + earned).min(now + config.body_grace),
                received,
            }
        }
        (phase, _) => phase,
    }
}

/// The time `bytes` earn at `rate` bytes per second (unbounded at rate 0).
fn body_credit(bytes: usize, rate: u64) -> Duration {
    if rate == 0 {
        return Duration::MAX;
    }
    let nanos = (bytes as u128).saturating_mul(1_000_000_000) / u128::from(rate);
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}
