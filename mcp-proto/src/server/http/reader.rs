//! Reading HTTP/1.1 requests from one connection, server side, on httparse.
//!
//! # Theory of operation
//!
//! [`HttpRequestReader`] is given what the socket produced
//! ([`HttpRequestReader::handle_input`]) and the end of input
//! ([`HttpRequestReader::handle_eof`]), and hands out whole requests, in arrival order, from
//! [`HttpRequestReader::poll_request`]. After an `Err` nothing more comes: the framing is
//! lost, so the adapter answers with [`HttpResponse::for_request_error`] and closes.
//!
//! * **Head.** Empty lines before a request line are skipped (RFC 9112 §2.2). The head is
//!   handed to httparse only once its empty line is in, found by an incremental scan, so
//!   input that trickles in byte by byte costs linear time. An HTTP/1.1 request without
//!   `Host` is refused (RFC 9112 §3.2).
//! * **Body.** Delimited by `Content-Length` (repeated identical values are accepted,
//!   differing ones refused); no `Content-Length` means no body. `Transfer-Encoding` is
//!   **not supported**: `chunked` is refused with 411 Length Required (every MCP client
//!   we know sends `Content-Length` for its JSON bodies), any other coding with 501, and
//!   `Transfer-Encoding` together with `Content-Length` (a request-smuggling pattern) with
//!   400. A `Content-Length` above the limit is refused as soon as the head is read, before
//!   the body is sent. `Expect: 100-continue` is reported through
//!   [`HttpRequestReader::take_expect_continue`] so the adapter can send `100 Continue`.
//! * **Keep-alive.** [`HttpRequest::keep_alive`] applies RFC 9112 §9.3. After a request
//!   that does not keep the connection alive, later bytes are ignored and the reader is
//!   finished once that request is polled.
//! * **Pipelining.** Requests sent back to back are parsed in order. At most
//!   [`HttpRequestLimits::max_queued_requests`] parsed requests wait for `poll_request`;
//!   beyond that parsing pauses ([`HttpRequestReader::wants_input`] turns false) and raw
//!   input is held up to `max_head_bytes + max_body_bytes`, past which the reader fails
//!   with [`HttpRequestError::PipelineOverflow`] (after the requests already parsed).
//! * **Bounds.** Unparsed input is at most one head, or the held pipelined bytes above;
//!   a body is at most `max_body_bytes`.
//! * **Chunking invariance.** The requests and errors produced do not depend on how the
//!   input is split (the tests check whole, byte by byte and every split point).
//!
//! [`HttpResponse::for_request_error`]: super::HttpResponse::for_request_error

use std::collections::VecDeque;
use std::mem::MaybeUninit;

use crate::held::give_back;
use crate::http::HttpVersion;
use crate::http::scan::{HeadScan, scan_head};

/// Bounds on what a client can make [`HttpRequestReader`] hold.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpRequestLimits {
    /// Largest request head (request line, header fields and the empty line), in bytes.
    /// Default 64 KiB.
    pub max_head_bytes: usize,
    /// Most header fields in one head. Default 100.
    pub max_headers: usize,
    /// Largest request body (`Content-Length`), in bytes. Default 8 MiB, the server
    /// machine's largest message.
    pub max_body_bytes: usize,
    /// Parsed requests that may wait for [`HttpRequestReader::poll_request`] before parsing
    /// pauses. Default 16.
    pub max_queued_requests: usize,
}

impl Default for HttpRequestLimits {
    fn default() -> Self {
        HttpRequestLimits {
            max_head_bytes: 64 * 1024,
            max_headers: 100,
            max_body_bytes: 8 * 1024 * 1024,
            max_queued_requests: 16,
        }
    }
}

/// Why a request could not be read. Every one ends the connection: answer with
/// [`super::HttpResponse::for_request_error`] (status [`HttpRequestError::status`]) and
/// close.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpRequestError {
    /// The connection ended in the middle of a request.
    #[error("connection closed in the middle of a request")]
    Truncated,
    /// The head was longer than the limit.
    #[error("request head longer than {limit} bytes")]
    HeadTooLarge {
        /// [`HttpRequestLimits::max_head_bytes`].
        limit: usize,
    },
    /// More header fields than the limit.
    #[error("more than {limit} header fields")]
    TooManyHeaders {
        /// [`HttpRequestLimits::max_headers`].
        limit: usize,
    },
    /// The head is not HTTP/1.x request syntax, or an HTTP/1.1 head lacks `Host`.
    #[error("malformed request head: {reason}")]
    InvalidHead {
        /// What was wrong.
        reason: &'static str,
    },
    /// A `Content-Length` that is not a decimal number.
    #[error("invalid Content-Length")]
    InvalidContentLength,
    /// Several `Content-Length` values that differ.
    #[error("conflicting Content-Length values")]
    ConflictingContentLength,
    /// `Transfer-Encoding` with `Content-Length`, or in an HTTP/1.0 request.
    #[error("ambiguous message framing")]
    ConflictingFraming,
    /// A chunked request body: not supported, send `Content-Length`.
    #[error("chunked request bodies are not supported; send Content-Length")]
    ChunkedBody,
    /// A transfer coding other than `chunked`.
    #[error("unsupported Transfer-Encoding")]
    UnsupportedTransferEncoding,
    /// The body is longer than the limit.
    #[error("request body longer than {limit} bytes")]
    BodyTooLarge {
        /// [`HttpRequestLimits::max_body_bytes`].
        limit: usize,
    },
    /// Too many pipelined bytes arrived while parsed requests were waiting.
    #[error("more than {limit} pipelined bytes waiting")]
    PipelineOverflow {
        /// `max_head_bytes + max_body_bytes`.
        limit: usize,
    },
}

impl HttpRequestError {
    /// The HTTP status to answer with: 400, 411, 413, 431, 501 or 503.
    #[must_use]
    pub fn status(&self) -> u16 {
        match self {
            HttpRequestError::HeadTooLarge { .. } | HttpRequestError::TooManyHeaders { .. } => 431,
            HttpRequestError::ChunkedBody => 411,
            HttpRequestError::BodyTooLarge { .. } => 413,
            HttpRequestError::UnsupportedTransferEncoding => 501,
            HttpRequestError::PipelineOverflow { .. } => 503,
            HttpRequestError::Truncated
            | HttpRequestError::InvalidHead { .. }
            | HttpRequestError::InvalidContentLength
            | HttpRequestError::ConflictingContentLength
            | HttpRequestError::ConflictingFraming => 400,
        }
    }
}

/// One HTTP request: head and whole body.
///
/// The head is held as one byte buffer (the request line and header fields as read)
/// with the position of the method, the target and each field's name and value in it;
/// the accessors borrow from it.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpRequest {
    /// Holds the method, the target and every field name and value, at the spans below.
    text: Vec<u8>,
    method: Span,
    target: Span,
    /// Each field's (name, value), in order.
    fields: Vec<(Span, Span)>,
    /// The protocol version of the request line.
    pub version: HttpVersion,
    /// The body.
    pub body: Vec<u8>,
}

/// Where a part of the head is in [`HttpRequest::text`].
#[derive(Clone, Copy, Debug)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    fn of(self, text: &[u8]) -> &[u8] {
        text.get(self.start..self.end).unwrap_or_default()
    }

    /// The length of the part (0 for a span that is not one).
    fn len(self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// The span of `part`, a slice of `base` (as httparse's parts are of the block it
    /// parsed); `None` for a slice that does not lie inside `base`.
    fn within(base: &[u8], part: &[u8]) -> Option<Span> {
        let start = part.as_ptr().addr().checked_sub(base.as_ptr().addr())?;
        let end = start.checked_add(part.len())?;
        (end <= base.len()).then_some(Span { start, end })
    }

    /// Appends `part` to `text`; its span.
    fn push(text: &mut Vec<u8>, part: &[u8]) -> Span {
        let start = text.len();
        text.extend_from_slice(part);
        Span {
            start,
            end: text.len(),
        }
    }
}

impl PartialEq for HttpRequest {
    fn eq(&self, other: &Self) -> bool {
        self.method() == other.method()
            && self.target() == other.target()
            && self.version == other.version
            && self.fields.len() == other.fields.len()
            && self.headers().eq(other.headers())
            && self.body == other.body
    }
}

impl Eq for HttpRequest {}

/// Shows the request as received, except its credentials: the values of the headers
/// that carry one by their name (see `is_credential_header`) and of the target's query
/// parameters are `<redacted>`.
impl std::fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::http::secret::{REDACTED, shown_header_value, write_hidden_query};
        let headers: Vec<_> = self
            .headers()
            .map(|(n, v)| (n, shown_header_value(n.as_bytes(), v)))
            .collect();
        let target = match self.target().split_once('?') {
            None => self.target().to_owned(),
            Some((path, query)) => {
                let mut shown = path.to_owned();
                write_hidden_query(&mut shown, query, REDACTED)?;
                shown
            }
        };
        f.debug_struct("HttpRequest")
            .field("method", &self.method())
            .field("target", &target)
            .field("version", &self.version)
            .field("headers", &headers)
            .field("body", &String::from_utf8_lossy(&self.body))
            .finish()
    }
}

impl HttpRequest {
    /// An HTTP/1.1 request with no headers and no body (for tests and other transports).
    #[must_use]
    pub fn new(method: impl AsRef<str>, target: impl AsRef<str>) -> Self {
        let mut text = Vec::new();
        let method = Span::push(&mut text, method.as_ref().as_bytes());
        let target = Span::push(&mut text, target.as_ref().as_bytes());
        HttpRequest {
            text,
            method,
            target,
            fields: Vec::new(),
            version: HttpVersion::Http11,
            body: Vec::new(),
        }
    }

    /// The same request with one more header field.
    #[must_use]
    pub fn with_header(mut self, name: impl AsRef<str>, value: impl AsRef<[u8]>) -> Self {
        let name = Span::push(&mut self.text, name.as_ref().as_bytes());
        let value = Span::push(&mut self.text, value.as_ref());
        self.fields.push((name, value));
        self
    }

    /// The same request without any `name` header field (compared case-insensitively).
    #[must_use]
    pub fn without_header(mut self, name: &str) -> Self {
        let text = &self.text;
        self.fields
            .retain(|(n, _)| !n.of(text).eq_ignore_ascii_case(name.as_bytes()));
        self
    }

    /// The same request with this body.
    #[must_use]
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// The method, as sent (case-sensitive: `POST`).
    #[must_use]
    pub fn method(&self) -> &str {
        std::str::from_utf8(self.method.of(&self.text)).unwrap_or_default()
    }

    /// Whether the method is `method` (as [`HttpRequest::method`] compares, without reading
    /// it as text first).
    pub(super) fn method_is(&self, method: &str) -> bool {
        self.method.of(&self.text) == method.as_bytes()
    }

    /// The request target, as sent (`/mcp`, `/mcp?x=1`, or absolute-form).
    #[must_use]
    pub fn target(&self) -> &str {
        std::str::from_utf8(self.target.of(&self.text)).unwrap_or_default()
    }

    /// The header fields in order: names as received, values with surrounding SP/HTAB
    /// removed and otherwise as raw bytes (they may hold `obs-text`).
    pub fn headers(&self) -> impl ExactSizeIterator<Item = (&str, &[u8])> + '_ {
        self.fields.iter().map(|(n, v)| {
            let name = std::str::from_utf8(n.of(&self.text)).unwrap_or_default();
            (name, v.of(&self.text))
        })
    }

    /// The first value of header `name` (compared case-insensitively), if it is UTF-8.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        std::str::from_utf8(self.header_bytes(name)?).ok()
    }

    /// The first value of header `name` (compared case-insensitively), as raw bytes.
    #[must_use]
    pub fn header_bytes(&self, name: &str) -> Option<&[u8]> {
        self.header_all(name).next()
    }

    /// Every value of header `name` (compared case-insensitively), in order.
    pub fn header_all<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a [u8]> {
        let text = &self.text;
        self.fields
            .iter()
            // Lengths first: most fields are passed over without being looked at.
            .filter(move |(n, _)| {
                n.len() == name.len() && n.of(text).eq_ignore_ascii_case(name.as_bytes())
            })
            .map(move |(_, v)| v.of(text))
    }

    /// The comma-separated elements of every `name` header, trimmed, empty ones skipped.
    fn header_tokens<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.header_all(name)
            .flat_map(|v| v.split(|b| *b == b','))
            .map(trim_ows)
            .filter(|t| !t.is_empty())
    }

    /// The authority of an absolute-form target (`POST http://host:port/mcp`), which
    /// stands for the `Host` header (RFC 9112, 3.2.2); `None` for the usual origin form.
    #[must_use]
    pub fn authority(&self) -> Option<&str> {
        let rest = self.after_scheme()?;
        rest.split(['/', '?', '#']).next()
    }

    /// An absolute-form target without its scheme (`host:port/mcp`).
    fn after_scheme(&self) -> Option<&str> {
        // An origin-form target (`/mcp`), the usual one, is told at its first byte.
        let raw = self.target.of(&self.text);
        if !raw.first().is_some_and(|b| b.eq_ignore_ascii_case(&b'h')) {
            return None;
        }
        after_scheme(self.target())
    }

    /// The path of the target: without the query, and for an absolute-form target
    /// (`http://host/mcp`) without scheme and authority.
    #[must_use]
    pub fn path(&self) -> &str {
        let target = self.target();
        let t = match after_scheme(target) {
            Some(rest) => rest.find('/').map_or("/", |i| &rest[i..]),
            None => target,
        };
        t.split(['?', '#']).next().unwrap_or_default()
    }

    /// Whether the connection may carry another request after this one (RFC 9112 §9.3):
    /// HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    #[must_use]
    pub fn keep_alive(&self) -> bool {
        // The `Connection` tokens, looked at in one pass.
        let (mut close, mut keep_alive) = (false, false);
        for value in self.header_all("connection") {
            for token in value.split(|b| *b == b',') {
                let token = trim_ows(token);
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        }
        match self.version {
            HttpVersion::Http11 => !close,
            HttpVersion::Http10 => keep_alive && !close,
        }
    }
}

/// An absolute-form target `t` without its scheme (`host:port/mcp`).
fn after_scheme(t: &str) -> Option<&str> {
    ["http://", "https://"].iter().find_map(|scheme| {
        t.get(..scheme.len())
            .filter(|s| s.eq_ignore_ascii_case(scheme))
            .and_then(|_| t.get(scheme.len()..))
    })
}

/// How far the request being read has come ([`HttpRequestReader::progress`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Progress {
    /// No byte of it is held.
    Nothing,
    /// Part of its head is held.
    Head,
    /// Its head was read; this many body bytes arrived.
    Body(usize),
}

#[derive(Debug)]
enum State {
    /// Reading a head; `scanned` as in [`scan_head`].
    Head { scanned: usize },
    /// Reading a `Content-Length` body.
    Body {
        request: HttpRequest,
        remaining: usize,
    },
    /// The last request did not keep the connection alive: later bytes are ignored.
    Closed,
    /// An error was queued: nothing more.
    Failed,
}

/// Reads requests from one connection; see the module docs.
#[derive(Debug)]
pub struct HttpRequestReader {
    limits: HttpRequestLimits,
    /// Received bytes; those from `start` on are not consumed yet.
    buf: Vec<u8>,
    /// Bytes at the front of `buf` already consumed. They go when they outnumber the
    /// rest (or are all of it), so pipelined requests taken one at a time each cost their
    /// own size, not that of everything held behind them. Never `buf.len()` unless zero.
    start: usize,
    state: State,
    queue: VecDeque<Result<HttpRequest, HttpRequestError>>,
    eof: bool,
    expect_continue: bool,
    /// A handled request given back ([`HttpRequestReader::recycle`]), emptied: its
    /// buffers hold the next request's head and body. Not counted in
    /// [`HttpRequestReader::held_bytes`]: it holds no peer bytes, and each of its buffers
    /// at most [`SPARE_CAPACITY`] of room.
    spare: Option<HttpRequest>,
}

/// The capacity a buffer of a handled request may have to be kept for the next one:
/// small requests (nearly all) then allocate nothing, and an idle connection keeps
/// little.
const SPARE_CAPACITY: usize = 8 * 1024;

impl Default for HttpRequestReader {
    fn default() -> Self {
        HttpRequestReader::new(HttpRequestLimits::default())
    }
}

impl HttpRequestReader {
    /// A reader for a new connection.
    #[must_use]
    pub fn new(limits: HttpRequestLimits) -> Self {
        HttpRequestReader {
            limits,
            buf: Vec::new(),
            start: 0,
            state: State::Head { scanned: 0 },
            queue: VecDeque::new(),
            eof: false,
            expect_continue: false,
            spare: None,
        }
    }

    /// Adds bytes received from the connection; then drain
    /// [`HttpRequestReader::poll_request`]. Ignored after end of input, an error, or a
    /// request that closes the connection.
    pub fn handle_input(&mut self, input: &[u8]) {
        if self.eof || matches!(self.state, State::Closed | State::Failed) || input.is_empty() {
            return;
        }
        if self.pending().is_empty() {
            // Nothing buffered: parse `input` where it is, and keep only what is left of
            // it (a partial head, requests beyond the queue bound), so a body is copied
            // once, straight into its request.
            let pos = self.consume(input);
            if matches!(self.state, State::Head { .. } | State::Body { .. }) {
                self.buf.extend_from_slice(&input[pos..]);
                give_back(&mut self.buf);
            }
        } else {
            self.buf.extend_from_slice(input);
            self.run();
        }
        if self.paused() {
            let limit = self
                .limits
                .max_head_bytes
                .saturating_add(self.limits.max_body_bytes);
            if self.pending().len() > limit {
                self.fail(HttpRequestError::PipelineOverflow { limit });
            }
        }
    }

    /// Records that the client will send nothing more. A request cut short becomes
    /// [`HttpRequestError::Truncated`]; a connection closed between requests is not an
    /// error.
    pub fn handle_eof(&mut self) {
        if self.eof {
            return;
        }
        self.eof = true;
        self.settle_eof();
    }

    /// Takes back a request handled, so that its buffers (emptied) hold the next one's
    /// head and body; a buffer grown past a few KiB is let go instead.
    pub(crate) fn recycle(&mut self, mut request: HttpRequest) {
        for buf in [&mut request.text, &mut request.body] {
            buf.clear();
            if buf.capacity() > SPARE_CAPACITY {
                *buf = Vec::new();
            }
        }
        request.fields.clear();
        if request.fields.capacity() > SPARE_CAPACITY / std::mem::size_of::<(Span, Span)>() {
            request.fields = Vec::new();
        }
        self.spare = Some(request);
    }

    /// The next request (or the error that ends the connection), in arrival order.
    #[must_use]
    pub fn poll_request(&mut self) -> Option<Result<HttpRequest, HttpRequestError>> {
        let next = self.queue.pop_front()?;
        if !matches!(self.state, State::Closed | State::Failed) {
            self.run();
            self.settle_eof();
        }
        Some(next)
    }

    /// True once after the head of a request with `Expect: 100-continue` was read while
    /// its body is still to come: the adapter should write `HTTP/1.1 100 Continue\r\n\r\n`.
    pub fn take_expect_continue(&mut self) -> bool {
        std::mem::take(&mut self.expect_continue)
    }

    /// Whether reading more input is useful now: false after end of input, an error or a
    /// closing request, and while parsed requests wait (back-pressure on pipelining).
    #[must_use]
    pub fn wants_input(&self) -> bool {
        !self.eof && !matches!(self.state, State::Closed | State::Failed) && !self.paused()
    }

    /// True when nothing more will come out: every request was polled and the connection
    /// ended, failed or was asked to close.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.queue.is_empty()
            && match self.state {
                State::Closed | State::Failed => true,
                State::Head { .. } => self.eof && self.pending().is_empty(),
                State::Body { .. } => false,
            }
    }

    /// Whether a parsed request (or the error that ends the connection) waits for
    /// [`HttpRequestReader::poll_request`].
    pub(super) fn has_request(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Parsed requests (and errors) waiting for [`HttpRequestReader::poll_request`].
    pub(super) fn queued(&self) -> usize {
        self.queue.len()
    }

    /// How far the request being read has come.
    /// Bytes it holds: what was received and not consumed, the body being read, and the
    /// requests read and not taken yet.
    pub(super) fn held_bytes(&self) -> usize {
        let request = |r: &HttpRequest| r.text.len() + r.body.capacity();
        let reading = match &self.state {
            State::Body { request: r, .. } => request(r),
            _ => 0,
        };
        let queued: usize = (self.queue.iter())
            .map(|q| q.as_ref().map_or(0, request))
            .sum();
        self.buf.capacity() + reading + queued
    }

    pub(super) fn progress(&self) -> Progress {
        match &self.state {
            State::Head { .. } if !self.pending().is_empty() => Progress::Head,
            State::Body { request, .. } => Progress::Body(request.body.len()),
            State::Head { .. } | State::Closed | State::Failed => Progress::Nothing,
        }
    }

    fn paused(&self) -> bool {
        self.queue.len() >= self.limits.max_queued_requests.max(1)
    }

    /// At end of input with nothing more to parse: what is left is a truncated request.
    fn settle_eof(&mut self) {
        if !self.eof || self.paused() {
            return;
        }
        self.run();
        match self.state {
            State::Head { .. } if self.pending().iter().all(|b| matches!(b, b'\r' | b'\n')) => {
                self.buf.clear();
                self.start = 0;
            }
            State::Head { .. } | State::Body { .. } => self.fail(HttpRequestError::Truncated),
            State::Closed | State::Failed => {}
        }
    }

    /// Received bytes not consumed yet.
    fn pending(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or_default()
    }

    /// Parses as far as the buffered input and the queue bound allow.
    fn run(&mut self) {
        let mut buf = std::mem::take(&mut self.buf);
        let pos = self.start + self.consume(buf.get(self.start..).unwrap_or_default());
        self.start = 0;
        if matches!(self.state, State::Head { .. } | State::Body { .. }) {
            let rest = buf.len() - pos;
            if rest == 0 {
                buf.clear();
            } else if pos > rest {
                // Moving the rest costs less than what was consumed since the last move.
                buf.drain(..pos);
            } else {
                self.start = pos;
            }
            self.buf = buf;
            give_back(&mut self.buf);
        }
    }

    /// Steps over `data` as far as it and the queue bound allow; how much was consumed.
    fn consume(&mut self, data: &[u8]) -> usize {
        let mut pos = 0;
        while !self.paused() {
            let rest = data.get(pos..).unwrap_or_default();
            match self.step(rest) {
                Ok(Some(n)) => pos = pos.saturating_add(n).min(data.len()),
                Ok(None) => break,
                Err(e) => {
                    self.fail(e);
                    break;
                }
            }
        }
        pos
    }

    /// One step over the front of the unconsumed input: how much it consumed, or `None`
    /// when nothing more can happen without more input.
    fn step(&mut self, data: &[u8]) -> Result<Option<usize>, HttpRequestError> {
        match std::mem::replace(&mut self.state, State::Failed) {
            State::Head { mut scanned } => {
                let limit = self.limits.max_head_bytes;
                let end = match scan_head(data, &mut scanned, limit) {
                    HeadScan::Complete(end) => end,
                    HeadScan::TooLarge => return Err(HttpRequestError::HeadTooLarge { limit }),
                    HeadScan::Pending(skip) => {
                        self.state = State::Head { scanned };
                        return Ok(skip);
                    }
                };
                let spare = self.spare.take();
                let request = parse_head(&data[..end], self.limits.max_headers, spare)?;
                self.begin(request)?;
                Ok(Some(end))
            }
            State::Body {
                mut request,
                remaining,
            } => {
                if data.is_empty() {
                    self.state = State::Body { request, remaining };
                    return Ok(None);
                }
                let n = remaining.min(data.len());
                append_body(&mut request.body, &data[..n], remaining);
                if remaining == n {
                    self.complete(request);
                } else {
                    self.state = State::Body {
                        request,
                        remaining: remaining - n,
                    };
                }
                Ok(Some(n))
            }
            state @ (State::Closed | State::Failed) => {
                self.state = state;
                Ok(None)
            }
        }
    }

    /// A head was read: decide the body framing.
    fn begin(&mut self, request: HttpRequest) -> Result<(), HttpRequestError> {
        let length = content_length(&request)?;
        if request.header_all("transfer-encoding").next().is_some() {
            if length.is_some() || request.version == HttpVersion::Http10 {
                return Err(HttpRequestError::ConflictingFraming);
            }
            let last = request.header_tokens("transfer-encoding").last();
            return Err(match last {
                Some(c) if c.eq_ignore_ascii_case(b"chunked") => HttpRequestError::ChunkedBody,
                _ => HttpRequestError::UnsupportedTransferEncoding,
            });
        }
        let limit = self.limits.max_body_bytes;
        let remaining = match length {
            None | Some(0) => {
                self.complete(request);
                return Ok(());
            }
            Some(n) => usize::try_from(n)
                .ok()
                .filter(|n| *n <= limit)
                .ok_or(HttpRequestError::BodyTooLarge { limit })?,
        };
        self.expect_continue = request.version == HttpVersion::Http11
            && request
                .header_tokens("expect")
                .any(|t| t.eq_ignore_ascii_case(b"100-continue"));
        let mut request = request;
        request.body.reserve_exact(remaining.min(BODY_PREALLOC));
        self.state = State::Body { request, remaining };
        Ok(())
    }

    fn complete(&mut self, request: HttpRequest) {
        self.expect_continue = false;
        self.state = if request.keep_alive() {
            State::Head { scanned: 0 }
        } else {
            State::Closed
        };
        self.queue.push_back(Ok(request));
    }

    fn fail(&mut self, error: HttpRequestError) {
        self.state = State::Failed;
        self.buf = Vec::new();
        self.start = 0;
        self.expect_continue = false;
        self.queue.push_back(Err(error));
    }
}

/// How much of a declared body is allocated before its bytes arrive: enough for most
/// messages in one piece, little enough that a head alone cannot claim much memory.
const BODY_PREALLOC: usize = 128 * 1024;

/// Appends `chunk` to a body of which `remaining` bytes (`chunk` included) are still to
/// come. Its buffer grows by doubling as usual, but never past the declared length.
fn append_body(body: &mut Vec<u8>, chunk: &[u8], remaining: usize) {
    if body.capacity() - body.len() < chunk.len() {
        let total = body.len().saturating_add(remaining);
        let want = body
            .capacity()
            .saturating_mul(2)
            .max(body.len() + chunk.len())
            .min(total);
        body.reserve_exact(want - body.len());
    }
    body.extend_from_slice(chunk);
}

/// Header slots parsed into on the stack; a head with more fields is parsed again with
/// as many slots as it may need.
const STACK_FIELDS: usize = 32;

/// Parses a complete head block (request line through the empty line).
fn parse_head(
    block: &[u8],
    max_headers: usize,
    spare: Option<HttpRequest>,
) -> Result<HttpRequest, HttpRequestError> {
    // A field line takes at least three bytes ("a:\n"): this many slots cannot be
    // outnumbered by a block within `max_headers`, and the allocation stays bounded.
    let slots = max_headers.min(block.len() / 3 + 1);
    let mut stack = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; STACK_FIELDS];
    let mut heap = Vec::new();
    let mut parsed = httparse::Request::new(&mut []);
    let mut outcome =
        parsed.parse_with_uninit_headers(block, &mut stack[..slots.min(STACK_FIELDS)]);
    if slots > STACK_FIELDS && outcome == Err(httparse::Error::TooManyHeaders) {
        heap.reserve_exact(slots);
        parsed = httparse::Request::new(&mut []);
        outcome = parsed.parse_with_uninit_headers(block, &mut heap.spare_capacity_mut()[..slots]);
    }
    match outcome {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(HttpRequestError::InvalidHead {
                reason: "incomplete head",
            });
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HttpRequestError::TooManyHeaders { limit: max_headers });
        }
        Err(e) => return Err(HttpRequestError::InvalidHead { reason: reason(e) }),
    }
    let version = match parsed.version {
        Some(0) => HttpVersion::Http10,
        Some(1) => HttpVersion::Http11,
        _ => return Err(HttpRequestError::InvalidHead { reason: "version" }),
    };
    let (Some(method), Some(target)) = (parsed.method, parsed.path) else {
        return Err(HttpRequestError::InvalidHead {
            reason: "request line",
        });
    };
    // RFC 9112 3.2: a target is a path and a query, or absolute; a fragment is the
    // client's own business and never sent.
    if target.contains('#') {
        return Err(HttpRequestError::InvalidHead {
            reason: "a fragment (#) in the request target",
        });
    }
    // httparse hands out slices of `block`; one that is not would be a broken promise,
    // refused as a head it could not place rather than trusted.
    let outside = HttpRequestError::InvalidHead {
        reason: "a part outside the head",
    };
    let span = |part: &[u8]| Span::within(block, part).ok_or_else(|| outside.clone());
    // The buffers of the request handled last, when given back (empty).
    let (mut text, mut fields, body) = match spare {
        Some(r) => (r.text, r.fields, r.body),
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    fields.reserve_exact(parsed.headers.len());
    for h in parsed.headers.iter() {
        fields.push((span(h.name.as_bytes())?, span(trim_ows(h.value))?));
    }
    text.extend_from_slice(block);
    let request = HttpRequest {
        text,
        method: span(method.as_bytes())?,
        target: span(target.as_bytes())?,
        version,
        fields,
        body,
    };
    // How many Host, Origin and Mcp-Session-Id fields there are, counted in one pass.
    let (mut hosts, mut origins, mut sessions) = (0usize, 0usize, 0usize);
    for (name, _) in &request.fields {
        let name = name.of(&request.text);
        if name.eq_ignore_ascii_case(b"host") {
            hosts += 1;
        } else if name.eq_ignore_ascii_case(b"origin") {
            origins += 1;
        } else if name.eq_ignore_ascii_case(b"mcp-session-id") {
            sessions += 1;
        }
    }
    if version == HttpVersion::Http11 && hosts == 0 {
        return Err(HttpRequestError::InvalidHead {
            reason: "missing Host header",
        });
    }
    // One value each (RFC 9112 3.2 for Host): with two, whatever checks the first (the
    // loopback and Origin checks here) and whatever uses the last (a proxy in front)
    // would disagree about where the request comes from and goes to.
    if hosts > 1 {
        return Err(HttpRequestError::InvalidHead {
            reason: "more than one Host header",
        });
    }
    if origins > 1 {
        return Err(HttpRequestError::InvalidHead {
            reason: "more than one Origin header",
        });
    }
    // The same for the session: a proxy that keeps a client on one server by its last
    // `Mcp-Session-Id` and an endpoint that reads the first would serve two sessions.
    if sessions > 1 {
        return Err(HttpRequestError::InvalidHead {
            reason: "more than one Mcp-Session-Id header",
        });
    }
    Ok(request)
}

/// A static description of an httparse error.
fn reason(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "invalid header name",
        httparse::Error::HeaderValue => "invalid header value",
        httparse::Error::NewLine => "invalid line ending",
        httparse::Error::Status => "invalid status",
        httparse::Error::Token => "invalid token",
        httparse::Error::TooManyHeaders => "too many header fields",
        httparse::Error::Version => "invalid HTTP version",
    }
}

/// The `Content-Length`, if any; repeated identical values are accepted.
fn content_length(request: &HttpRequest) -> Result<Option<u64>, HttpRequestError> {
    let mut found = None;
    for value in request.header_all("content-length") {
        for item in value.split(|b| *b == b',') {
            let n = parse_decimal(trim_ows(item)).ok_or(HttpRequestError::InvalidContentLength)?;
            match found {
                Some(prev) if prev != n => {
                    return Err(HttpRequestError::ConflictingContentLength);
                }
                _ => found = Some(n),
            }
        }
    }
    Ok(found)
}

fn parse_decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |acc, b| {
        let digit = b.is_ascii_digit().then(|| u64::from(b - b'0'))?;
        acc.checked_mul(10)?.checked_add(digit)
    })
}

/// `bytes` without leading and trailing SP / HTAB.
fn trim_ows(bytes: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = bytes.iter().position(|b| !is_ows(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !is_ows(b))
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

#[cfg(test)]
mod span_tests {
    use super::Span;

    /// A part of the block gets its place; a slice from elsewhere gets none, where a
    /// subtraction of addresses would have wrapped or run past the block.
    #[test]
    fn spans_are_only_given_to_parts_of_the_block() {
        let block = b"POST /mcp HTTP/1.1\r\n".to_vec();
        let target = Span::within(&block, &block[5..9]).expect("inside");
        assert_eq!(target.of(&block), b"/mcp");
        let end = Span::within(&block, &block[block.len()..]).expect("empty, at the end");
        assert_eq!(end.of(&block), b"");
        let elsewhere = b"/mcp".to_vec();
        assert!(Span::within(&block, &elsewhere).is_none());
        let before = &block[..4];
        assert!(Span::within(&block[4..], before).is_none());
        let overlapping = &block[10..];
        assert!(Span::within(&block[..12], overlapping).is_none());
    }
}
