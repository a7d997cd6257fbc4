//! Reading HTTP/1.1 responses from one connection, one at a time.
//!
//! # Theory of operation
//!
//! [`ResponseReader`] is a state machine in the style of h11. It is given what the socket
//! produced ([`ResponseReader::handle_input`]) and the end of input
//! ([`ResponseReader::handle_eof`]) and queues [`ResponseEvent`]s for
//! [`ResponseReader::poll_event`]. For each response the events are `Head`, any number of
//! `Body` chunks and `End { keep_alive }`; or, at any point, one `Error` after which there
//! is nothing more and the connection must be closed.
//!
//! ```text
//!        ┌── 1xx interim head (not 101): dropped ──┐
//!        ▼                                          │
//!  new ─▶ Head ──┬── final head ─▶ Length / Chunked / UntilEof ──▶ Done ─┐
//!        ▲       │                        │ (UntilEof: at EOF)           │
//!        │       └── HEAD, 204, 304 ──────┼───────────────────────────▶  │
//!        │                                ▼                              │
//!        │                             Failed (after an Error event)     │
//!        └────────────── reset_for_next (keep-alive only) ───────────────┘
//! ```
//!
//! * Nothing is an error until it must be: a partial head or chunk line just waits (as
//!   httparse's `Partial`). The head is handed to httparse only once its empty line is in,
//!   found by an incremental scan, so input that trickles in costs linear time.
//! * Body bytes are handed on as soon as they arrive, never collected, so an SSE stream
//!   can last for hours; `max_body_bytes` bounds the total when it is set.
//! * Buffers: the unconsumed input is at most a partial head (`max_head_bytes`), chunk
//!   line (`max_chunk_size_line`) or trailer section (`max_trailer_bytes`) plus one input
//!   segment of 16 KiB. When nothing is pending, input is read where the caller holds it
//!   and only its unconsumed tail is kept, so body bytes are copied once, into their
//!   `Body` event. After `End` the reader keeps the rest of the input it was given in
//!   that call (memory the caller already held), and of input given in later calls at most
//!   `max_leftover_bytes` in all: an adapter should stop reading at `End`, and one that
//!   does not cannot make the reader grow; the connection just becomes unusable.
//! * The event sequence does not depend on how the input is split (the tests and the
//!   `http_response` fuzz target check this), except that body bytes may be grouped into
//!   `Body` events differently.
//! * Bytes after the end of a response are kept, never read as part of it. They become
//!   the start of the next response after [`ResponseReader::reset_for_next`], or are
//!   returned by [`ResponseReader::into_leftover`]. End of input seen meanwhile is carried
//!   over to the next response.
//! * Input after `handle_eof` is ignored; so is input after an `Error`.

use std::collections::VecDeque;

use super::chunked::{Chunked, Step};
use super::error::{ResponseError, ReuseError};
use super::head::{self, Framing, ResponseHead};
use super::limits::HttpLimits;
use super::scan::{HeadScan, scan_head};

/// Input is processed in pieces of at most this size, bounding the buffer and each
/// `Body` event's growth per piece.
const SEGMENT: usize = 16 * 1024;

/// What happened on the response being read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseEvent {
    /// The final response head (interim 1xx heads are not reported).
    Head(ResponseHead),
    /// Body bytes, in order, as they arrived (chunked coding removed).
    Body(Vec<u8>),
    /// The response is complete. `keep_alive` says whether the connection may carry the
    /// next exchange (see [`ResponseReader::reset_for_next`]).
    End {
        /// Whether the connection may be reused.
        keep_alive: bool,
    },
    /// The response cannot be read; nothing follows and the connection must be closed.
    Error(ResponseError),
}

#[derive(Debug)]
enum State {
    /// Reading a head; `scanned` as in [`scan_head`].
    Head { scanned: usize },
    /// A `Content-Length` body with this many bytes to go.
    Length { remaining: u64, keep_alive: bool },
    /// A chunked body.
    Chunked { decoder: Chunked, keep_alive: bool },
    /// A body delimited by the end of the connection.
    UntilEof,
    /// `End` was queued.
    Done { keep_alive: bool },
    /// `Error` was queued.
    Failed,
}

/// Reads responses from one connection; see the module docs.
///
/// ```
/// use mcp_proto::http::{HttpLimits, ResponseEvent, ResponseReader};
///
/// let mut reader = ResponseReader::new(HttpLimits::default(), "POST");
/// reader.handle_input(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n");
/// assert_eq!(reader.poll_event(), None); // a partial head is not an error
/// reader.handle_input(b"Content-Length: 2\r\n\r\nokHTTP/1.1 204 No Content\r\n\r\n");
/// let Some(ResponseEvent::Head(head)) = reader.poll_event() else { panic!() };
/// assert_eq!(head.header("content-type"), Some("application/json"));
/// assert_eq!(reader.poll_event(), Some(ResponseEvent::Body(b"ok".to_vec())));
/// assert_eq!(reader.poll_event(), Some(ResponseEvent::End { keep_alive: true }));
/// // The next response on the connection was already received; read it.
/// reader.reset_for_next("POST").unwrap();
/// assert!(matches!(reader.poll_event(), Some(ResponseEvent::Head(h)) if h.status == 204));
/// assert_eq!(reader.poll_event(), Some(ResponseEvent::End { keep_alive: true }));
/// ```
#[derive(Debug)]
pub struct ResponseReader {
    limits: HttpLimits,
    head_request: bool,
    /// Received and not consumed.
    buf: Vec<u8>,
    state: State,
    events: VecDeque<ResponseEvent>,
    /// Body bytes delivered for the current response.
    delivered: u64,
    /// Whether any byte of the current response (interim heads included) was received.
    started: bool,
    eof: bool,
    leftover_overflow: bool,
}

impl ResponseReader {
    /// A reader for the response to a request with `request_method` (the method as sent,
    /// case-sensitive: only `HEAD` changes how the response is read).
    #[must_use]
    pub fn new(limits: HttpLimits, request_method: &str) -> Self {
        ResponseReader {
            limits,
            head_request: request_method == "HEAD",
            buf: Vec::new(),
            state: State::Head { scanned: 0 },
            events: VecDeque::new(),
            delivered: 0,
            started: false,
            eof: false,
            leftover_overflow: false,
        }
    }

    /// Adds bytes received from the connection. Drain [`ResponseReader::poll_event`]
    /// afterwards.
    pub fn handle_input(&mut self, mut input: &[u8]) {
        if self.eof {
            return;
        }
        let ended_before = matches!(self.state, State::Done { .. });
        while !input.is_empty() {
            match self.state {
                State::Failed => return,
                State::Done { .. } if ended_before => return self.hold(input),
                State::Done { .. } => return self.buf.extend_from_slice(input),
                _ => self.started = true,
            }
            if self.buf.is_empty() {
                // Nothing is pending: step over the caller's bytes where they lie, so a
                // body is copied once (into its `Body` event), and keep only what the
                // steps left: a partial head or chunk line (bounded by the limits, as a
                // step fails past them) or what follows the response.
                let used = self.steps_over(input);
                if matches!(self.state, State::Failed) {
                    return;
                }
                self.buf
                    .extend_from_slice(input.get(used..).unwrap_or_default());
                return;
            }
            let (piece, rest) = input.split_at(input.len().min(SEGMENT));
            input = rest;
            self.buf.extend_from_slice(piece);
            self.run();
        }
    }

    /// Records that the connection delivered all it will (EOF, or the TLS close). This
    /// ends a close-delimited body; anywhere else inside a response it is an error.
    pub fn handle_eof(&mut self) {
        if self.eof {
            return;
        }
        self.eof = true;
        match self.state {
            State::Head { .. } if !self.started => self.fail(ResponseError::ConnectionClosed),
            State::Head { .. } | State::Length { .. } | State::Chunked { .. } => {
                self.fail(ResponseError::Truncated);
            }
            State::UntilEof => self.state = self.finish(false),
            State::Done { .. } | State::Failed => {}
        }
    }

    /// The next event, if any.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<ResponseEvent> {
        self.events.pop_front()
    }

    /// Whether the current response still needs input (it has neither ended nor failed).
    #[must_use]
    pub fn wants_input(&self) -> bool {
        !matches!(self.state, State::Done { .. } | State::Failed) && !self.eof
    }

    /// Bytes this reader holds: input not yet consumed and events not yet polled.
    #[must_use]
    pub fn retained_bytes(&self) -> usize {
        let event = |e: &ResponseEvent| match e {
            ResponseEvent::Body(b) => b.len(),
            _ => 0,
        };
        self.buf.capacity() + self.events.iter().map(event).sum::<usize>()
    }

    /// Bytes received and not consumed: after `End`, what followed the response.
    #[must_use]
    pub fn leftover(&self) -> &[u8] {
        &self.buf
    }

    /// Gives up the reader, returning [`ResponseReader::leftover`].
    #[must_use]
    pub fn into_leftover(self) -> Vec<u8> {
        self.buf
    }

    /// Prepares to read the next response on the same connection, for a request with
    /// `request_method`; the bytes that followed the last response are read as its
    /// start. Events not yet polled stay queued, in order.
    ///
    /// # Errors
    ///
    /// Refused, and nothing changes, unless the current response ended with
    /// `keep_alive: true` and input given after it (in later calls to
    /// [`ResponseReader::handle_input`]) stayed within `max_leftover_bytes`.
    pub fn reset_for_next(&mut self, request_method: &str) -> Result<(), ReuseError> {
        match self.state {
            State::Done { keep_alive: true } => {}
            State::Done { keep_alive: false } => return Err(ReuseError::NotKeepAlive),
            _ => return Err(ReuseError::NotFinished),
        }
        if self.leftover_overflow {
            return Err(ReuseError::LeftoverOverflow {
                limit: self.limits.max_leftover_bytes,
            });
        }
        self.head_request = request_method == "HEAD";
        self.state = State::Head { scanned: 0 };
        self.delivered = 0;
        self.started = !self.buf.is_empty();
        self.run();
        if std::mem::take(&mut self.eof) {
            self.handle_eof();
        }
        Ok(())
    }

    /// Keeps bytes given after `End` (in a later call), up to the limit.
    fn hold(&mut self, input: &[u8]) {
        let room = self
            .limits
            .max_leftover_bytes
            .saturating_sub(self.buf.len());
        if input.len() > room {
            self.leftover_overflow = true;
        }
        self.buf.extend_from_slice(&input[..input.len().min(room)]);
    }

    /// Steps the machine over the buffered input as far as it goes.
    fn run(&mut self) {
        let mut buf = std::mem::take(&mut self.buf);
        let pos = self.steps_over(&buf);
        match self.state {
            State::Failed => buf.clear(),
            _ => drop(buf.drain(..pos)),
        }
        self.buf = buf;
    }

    /// Steps over `data` as far as it goes: how many bytes were consumed. On error the
    /// state is `Failed` and the `Error` event queued.
    fn steps_over(&mut self, data: &[u8]) -> usize {
        let mut pos = 0;
        loop {
            match self.step(data.get(pos..).unwrap_or_default()) {
                Ok(Some(n)) => pos = pos.saturating_add(n).min(data.len()),
                Ok(None) => return pos,
                Err(e) => {
                    self.fail(e);
                    return pos;
                }
            }
        }
    }

    /// One step over the front of the unconsumed input: how much it consumed, or `None`
    /// when nothing more can happen without more input. On error the state is `Failed`.
    fn step(&mut self, data: &[u8]) -> Result<Option<usize>, ResponseError> {
        match std::mem::replace(&mut self.state, State::Failed) {
            State::Head { mut scanned } => {
                // Empty lines before a status line are tolerated (RFC 9112 §2.2).
                let limit = self.limits.max_head_bytes;
                let end = match scan_head(data, &mut scanned, limit) {
                    HeadScan::Complete(end) => end,
                    HeadScan::TooLarge => return Err(ResponseError::HeadTooLarge { limit }),
                    HeadScan::Pending(skip) => {
                        self.state = State::Head { scanned };
                        return Ok(skip);
                    }
                };
                let head = head::parse(&data[..end], self.limits.max_headers)?;
                self.state = self.begin(head)?;
                Ok(Some(end))
            }
            State::Length {
                remaining,
                keep_alive,
            } => {
                if data.is_empty() {
                    self.state = State::Length {
                        remaining,
                        keep_alive,
                    };
                    return Ok(None);
                }
                let n = usize::try_from(remaining).map_or(data.len(), |r| r.min(data.len()));
                self.deliver(&data[..n]);
                let remaining = remaining.saturating_sub(n as u64);
                self.state = if remaining == 0 {
                    self.finish(keep_alive)
                } else {
                    State::Length {
                        remaining,
                        keep_alive,
                    }
                };
                Ok(Some(n))
            }
            State::Chunked {
                mut decoder,
                keep_alive,
            } => {
                let consumed = match decoder.step(data, &self.limits)? {
                    Step::NeedMore => None,
                    Step::Framing(n) => Some(n),
                    Step::Size { consumed, size } => {
                        self.check_room(size)?;
                        Some(consumed)
                    }
                    Step::Data(n) => {
                        self.deliver(&data[..n]);
                        Some(n)
                    }
                    Step::End(n) => {
                        self.state = self.finish(keep_alive);
                        return Ok(Some(n));
                    }
                };
                self.state = State::Chunked {
                    decoder,
                    keep_alive,
                };
                Ok(consumed)
            }
            State::UntilEof => {
                if data.is_empty() {
                    self.state = State::UntilEof;
                    return Ok(None);
                }
                let room = self.room().unwrap_or(u64::MAX);
                let n = usize::try_from(room).map_or(data.len(), |r| r.min(data.len()));
                self.deliver(&data[..n]);
                if n < data.len() {
                    // Deliver up to the limit, then refuse: the same bytes however the
                    // input was split.
                    self.check_room(1)?;
                }
                self.state = State::UntilEof;
                Ok(Some(n))
            }
            state @ (State::Done { .. } | State::Failed) => {
                self.state = state;
                Ok(None)
            }
        }
    }

    /// Handles a complete head: drops interim ones, reports a final one and picks the
    /// body state.
    fn begin(&mut self, head: ResponseHead) -> Result<State, ResponseError> {
        match head.status {
            101 => return Err(ResponseError::SwitchingProtocols),
            100..=199 => return Ok(State::Head { scanned: 0 }),
            _ => {}
        }
        let framing = head::framing(&head, self.head_request)?;
        let keep_alive = head::keep_alive(&head, framing);
        self.events.push_back(ResponseEvent::Head(head));
        Ok(match framing {
            Framing::Empty | Framing::Length(0) => self.finish(keep_alive),
            Framing::Length(remaining) => {
                self.check_room(remaining)?;
                State::Length {
                    remaining,
                    keep_alive,
                }
            }
            Framing::Chunked => State::Chunked {
                decoder: Chunked::Size { scanned: 0 },
                keep_alive,
            },
            Framing::UntilEof => State::UntilEof,
        })
    }

    /// Body bytes still allowed, if there is a limit.
    fn room(&self) -> Option<u64> {
        self.limits
            .max_body_bytes
            .map(|limit| limit.saturating_sub(self.delivered))
    }

    /// Fails unless `more` body bytes fit within the limit.
    fn check_room(&self, more: u64) -> Result<(), ResponseError> {
        match (self.room(), self.limits.max_body_bytes) {
            (Some(room), Some(limit)) if more > room => Err(ResponseError::BodyTooLarge { limit }),
            _ => Ok(()),
        }
    }

    fn deliver(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.delivered = self.delivered.saturating_add(bytes.len() as u64);
        if let Some(ResponseEvent::Body(last)) = self.events.back_mut()
            && last.len() < SEGMENT
        {
            last.extend_from_slice(bytes);
        } else {
            self.events.push_back(ResponseEvent::Body(bytes.to_vec()));
        }
    }

    fn finish(&mut self, keep_alive: bool) -> State {
        self.events.push_back(ResponseEvent::End { keep_alive });
        State::Done { keep_alive }
    }

    fn fail(&mut self, error: ResponseError) {
        self.state = State::Failed;
        self.buf.clear();
        self.events.push_back(ResponseEvent::Error(error));
    }
}
