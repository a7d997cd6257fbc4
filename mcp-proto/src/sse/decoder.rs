//! The event-stream decoder. The rules it follows and its bounds are described in the
//! [`crate::sse`] module docs.
//!
//! # Theory of operation
//!
//! [`SseDecoder::handle_input`] only appends bytes; [`SseDecoder::poll_event`] does the work. It
//! takes one line at a time off the unprocessed input ([`Input`], with a `scanned` mark so
//! a long partial line is never rescanned) and applies it to the event under construction
//! ([`State`], which holds the buffers the standard names), until an event is dispatched,
//! a limit is crossed, or no complete line is left. A line ending in CR is processed at
//! once and `after_cr` remembers to skip one LF if it comes next. An oversized partial line
//! is dropped as soon as it crosses the limit (`skipping_line`), and the block it belongs
//! to is poisoned (`skipping_event`) until the next empty line. [`SseDecoder::handle_eof`]
//! drains the remaining complete lines into a queue that `poll_event` still returns.

use std::collections::VecDeque;

use crate::held::give_back;

/// The UTF-8 encoding of U+FEFF.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Bounds on what a peer can make the decoder hold.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseLimits {
    /// Longest line, in bytes, not counting its line end. Default 8 MiB + 1 KiB (one
    /// largest JSON-RPC message on a single `data:` line, with room for the field name).
    pub max_line_bytes: usize,
    /// Largest event: bytes of the data buffer (values plus one joining LF per `data`
    /// line) plus the event type. Default 8 MiB + 4 KiB.
    pub max_event_bytes: usize,
    /// Longest event id (`id:` field), in bytes. Default 1 KiB. The id is kept for as long
    /// as the stream lasts and sent back in `Last-Event-ID`; a longer one breaks the
    /// stream with [`SseError::EventIdTooLong`].
    pub max_event_id_bytes: usize,
}

impl SseLimits {
    /// The default of [`SseLimits::max_event_id_bytes`]: 1 KiB.
    pub const DEFAULT_MAX_EVENT_ID_BYTES: usize = 1024;

    /// Limits with the given line and event bounds (and the default event id bound).
    #[must_use]
    pub const fn new(max_line_bytes: usize, max_event_bytes: usize) -> Self {
        SseLimits {
            max_line_bytes,
            max_event_bytes,
            max_event_id_bytes: SseLimits::DEFAULT_MAX_EVENT_ID_BYTES,
        }
    }
}

impl Default for SseLimits {
    fn default() -> Self {
        SseLimits::new(8 * 1024 * 1024 + 1024, 8 * 1024 * 1024 + 4096)
    }
}

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field, or `message` when the event had none (or an empty one).
    pub event_type: String,
    /// The `data` lines joined with LF.
    pub data: String,
    /// The last event ID at dispatch: the most recent valid `id` field of the stream so
    /// far (not necessarily in this event). `None` when never set or set to empty.
    pub id: Option<String>,
    /// A valid `retry` field inside this event's own block, in milliseconds. The stream
    /// value, which persists, is [`SseDecoder::retry_ms`].
    pub retry: Option<u64>,
}

/// A limit was crossed; see the module docs for how the decoder recovers. Invalid UTF-8
/// is not an error: the event-stream rules replace it with U+FFFD.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// A line was longer than [`SseLimits::max_line_bytes`]. It and its event were dropped.
    #[error(
        "event-stream line longer than {limit} bytes (max_line_bytes); the line and its event were dropped"
    )]
    LineTooLong {
        /// The limit in force.
        limit: usize,
    },
    /// An event grew beyond [`SseLimits::max_event_bytes`]. It was dropped.
    #[error("event-stream event larger than {limit} bytes (max_event_bytes); it was dropped")]
    EventTooLarge {
        /// The limit in force.
        limit: usize,
    },
    /// An event id was longer than [`SseLimits::max_event_id_bytes`]. It and its event
    /// were dropped.
    #[error(
        "event-stream event id longer than {limit} bytes (max_event_id_bytes); it and its event were dropped"
    )]
    EventIdTooLong {
        /// The limit in force.
        limit: usize,
    },
}

/// What [`SseDecoder::handle_eof`] found at the end of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[must_use = "an incomplete event at end of stream usually means a broken connection"]
pub struct EndOfStream {
    /// The input ended inside an event (a field line since the last empty line) or in the
    /// middle of a line. That input was discarded without dispatch, as the standard says.
    pub incomplete_event: bool,
}

/// The capacity a buffer of capacity `cap` should grow to so that it holds `needed`
/// bytes: `cap` when it already does, else twice `cap` (amortised growth) but no more than
/// `bound` (one longest line or event), and never less than `needed`.
fn reserve_within(cap: usize, needed: usize, bound: usize) -> usize {
    if needed <= cap {
        return cap;
    }
    cap.saturating_mul(2).min(bound).max(needed)
}

/// Unprocessed input.
#[derive(Debug, Default)]
struct Input {
    buf: Vec<u8>,
    /// Start of the unprocessed bytes in `buf`.
    pos: usize,
    /// Bytes after `pos` already known to hold no CR or LF.
    scanned: usize,
}

/// The parser state the standard describes, plus our bookkeeping.
#[derive(Debug)]
struct State {
    limits: SseLimits,
    /// Leading BOM dealt with (stripped or known absent).
    bom_done: bool,
    /// The previous line ended with CR: skip one LF if it comes next.
    after_cr: bool,
    /// Inside a line that crossed `max_line_bytes`: drop bytes up to its end.
    skipping_line: bool,
    /// The current block is dropped: ignore `data`/`event` until the empty line.
    skipping_event: bool,
    /// A field line was seen since the last empty line.
    block_has_fields: bool,
    data: String,
    event_type: String,
    id_buffer: String,
    last_event_id: String,
    block_retry: Option<u64>,
    /// A valid `id` field was read in the current block.
    block_id: bool,
    /// The event the last dispatch produced had an `id` field in its own block.
    dispatched_with_id: bool,
    retry: Option<u64>,
    comments: u64,
    finished: bool,
}

/// A WHATWG `text/event-stream` decoder with bounded memory. See the [module docs](crate::sse).
#[derive(Debug)]
pub struct SseDecoder {
    input: Input,
    state: State,
    /// Items produced by [`SseDecoder::handle_eof`] while draining the last complete lines,
    /// each with whether it had an `id` field of its own.
    queued: VecDeque<(Result<SseEvent, SseError>, bool)>,
    /// The item `poll_event` returned last was an event with an `id` field of its own.
    last_had_id: bool,
}

impl SseDecoder {
    /// A decoder for a new stream.
    #[must_use]
    pub fn new(limits: SseLimits) -> Self {
        SseDecoder {
            input: Input::default(),
            state: State {
                limits,
                bom_done: false,
                after_cr: false,
                skipping_line: false,
                skipping_event: false,
                block_has_fields: false,
                data: String::new(),
                event_type: String::new(),
                id_buffer: String::new(),
                last_event_id: String::new(),
                block_retry: None,
                block_id: false,
                dispatched_with_id: false,
                retry: None,
                comments: 0,
                finished: false,
            },
            queued: VecDeque::new(),
            last_had_id: false,
        }
    }

    /// A decoder for a stream resumed with `Last-Event-ID: last_event_id`: events without
    /// an `id` field of their own carry that ID until the server sets another.
    #[must_use]
    pub fn resuming(limits: SseLimits, last_event_id: &str) -> Self {
        let mut d = SseDecoder::new(limits);
        if !last_event_id.contains('\0') {
            d.state.id_buffer = last_event_id.to_owned();
            d.state.last_event_id = last_event_id.to_owned();
        }
        d
    }

    /// Adds body bytes. Call [`SseDecoder::poll_event`] until it returns `None` afterwards;
    /// bytes pushed after [`SseDecoder::handle_eof`] are ignored.
    pub fn handle_input(&mut self, bytes: &[u8]) {
        if self.state.finished || bytes.is_empty() {
            return;
        }
        let input = &mut self.input;
        if input.pos > 0 {
            input.buf.drain(..input.pos);
            input.pos = 0;
            give_back(&mut input.buf);
        }
        // Doubling as usual, but never to more than one longest line beyond this input.
        let needed = input.buf.len() + bytes.len();
        let bound = self.state.limits.max_line_bytes.saturating_add(bytes.len()) + 2;
        let cap = reserve_within(input.buf.capacity(), needed, bound);
        input.buf.reserve_exact(cap - input.buf.len());
        input.buf.extend_from_slice(bytes);
    }

    /// Bytes this decoder holds: unprocessed input, the event being built, the ids.
    #[must_use]
    pub fn retained_bytes(&self) -> usize {
        let s = &self.state;
        self.input.buf.capacity()
            + s.data.capacity()
            + s.event_type.capacity()
            + s.id_buffer.capacity()
            + s.last_event_id.capacity()
            + self
                .queued
                .iter()
                .map(|(q, _)| q.as_ref().map_or(0, |e| e.data.len()))
                .sum::<usize>()
    }

    /// The next event, a limit report, or `None` when more input is needed. After an
    /// `Err` the decoder has recovered and decoding goes on with the next call.
    #[must_use = "events must be drained after every push"]
    pub fn poll_event(&mut self) -> Option<Result<SseEvent, SseError>> {
        if let Some((item, had_id)) = self.queued.pop_front() {
            self.last_had_id = had_id;
            return Some(item);
        }
        self.state.dispatched_with_id = false;
        let item = self.step();
        self.last_had_id = self.state.dispatched_with_id;
        item
    }

    /// Whether the event [`SseDecoder::poll_event`] returned last had an `id` field in
    /// its own block, rather than carrying the last event ID of the stream so far. On a
    /// stream resumed with `Last-Event-ID`, an event whose own id is that one is a
    /// replay of the event the client already has.
    #[must_use]
    pub fn last_event_had_own_id(&self) -> bool {
        self.last_had_id
    }

    /// An iterator over the events available now (drains like repeated
    /// [`SseDecoder::poll_event`]).
    pub fn events(&mut self) -> impl Iterator<Item = Result<SseEvent, SseError>> + '_ {
        std::iter::from_fn(move || self.poll_event())
    }

    /// Marks the end of the input. Complete lines not yet processed are processed first,
    /// and what they produce is still returned by [`SseDecoder::poll_event`]. Whatever is
    /// left (a partial line, an event without its final empty line) is discarded and
    /// reported. Calling it again reports nothing more.
    pub fn handle_eof(&mut self) -> EndOfStream {
        if self.state.finished {
            return EndOfStream {
                incomplete_event: false,
            };
        }
        self.state.dispatched_with_id = false;
        while let Some(item) = self.step() {
            let had_id = std::mem::take(&mut self.state.dispatched_with_id);
            self.queued.push_back((item, had_id));
        }
        let input = &mut self.input;
        let st = &mut self.state;
        let partial = input.buf.len() > input.pos;
        let incomplete_event = partial || st.skipping_line || st.block_has_fields;
        input.buf = Vec::new();
        input.pos = 0;
        input.scanned = 0;
        st.finished = true;
        st.skipping_line = false;
        st.skipping_event = false;
        st.block_has_fields = false;
        st.after_cr = false;
        st.data = String::new();
        st.event_type = String::new();
        st.block_retry = None;
        st.block_id = false;
        EndOfStream { incomplete_event }
    }

    /// The last event ID committed by a dispatch (an empty line), as a client sends it in
    /// `Last-Event-ID` when resuming. `None` when never set, or set to the empty string.
    #[must_use]
    pub fn last_event_id(&self) -> Option<&str> {
        Some(self.state.last_event_id.as_str()).filter(|s| !s.is_empty())
    }

    /// The stream's reconnection time from the most recent valid `retry` field, in
    /// milliseconds. Takes effect as soon as the field is read, even if its event is never
    /// dispatched.
    #[must_use]
    pub fn retry_ms(&self) -> Option<u64> {
        self.state.retry
    }

    /// Comment lines (starting with `:`) seen so far: keep-alive evidence.
    #[must_use]
    pub fn comments(&self) -> u64 {
        self.state.comments
    }

    /// True once [`SseDecoder::handle_eof`] has been called.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.state.finished
    }

    /// Processes lines until something comes out or input runs short.
    fn step(&mut self) -> Option<Result<SseEvent, SseError>> {
        let input = &mut self.input;
        let st = &mut self.state;
        loop {
            let rest = &input.buf[input.pos..];
            if !st.bom_done {
                if rest.len() < BOM.len() && BOM.starts_with(rest) {
                    return None;
                }
                st.bom_done = true;
                if rest.starts_with(BOM) {
                    input.pos += BOM.len();
                    continue;
                }
            }
            if st.after_cr {
                match rest.first() {
                    None => return None,
                    Some(b'\n') => {
                        input.pos += 1;
                        st.after_cr = false;
                        continue;
                    }
                    Some(_) => st.after_cr = false,
                }
            }
            let from = input.scanned.min(rest.len());
            let Some(i) = memchr::memchr2(b'\n', b'\r', &rest[from..]).map(|i| i + from) else {
                // No complete line: keep the partial line if it is within bounds.
                if st.skipping_line {
                    input.buf.clear();
                    input.pos = 0;
                    input.scanned = 0;
                    return None;
                }
                if rest.len() > st.limits.max_line_bytes {
                    input.buf.clear();
                    input.pos = 0;
                    input.scanned = 0;
                    st.skipping_line = true;
                    return Some(Err(st.line_too_long()));
                }
                input.scanned = rest.len();
                if input.pos == input.buf.len() {
                    input.buf.clear();
                    input.pos = 0;
                    give_back(&mut input.buf);
                }
                return None;
            };
            let line = &rest[..i];
            st.after_cr = rest[i] == b'\r';
            input.pos += i + 1;
            input.scanned = 0;
            if st.skipping_line {
                st.skipping_line = false;
                continue;
            }
            if line.len() > st.limits.max_line_bytes {
                return Some(Err(st.line_too_long()));
            }
            if let Some(out) = st.process_line(line) {
                return Some(out);
            }
        }
    }
}

/// The text of a field value: borrowed when it is valid UTF-8 (the common case, checked
/// at full speed), with replacement characters otherwise, as the event-stream rules say.
fn utf8(value: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(value) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(value),
    }
}

impl State {
    /// Drops the current block for an oversized line.
    fn line_too_long(&mut self) -> SseError {
        self.drop_block();
        SseError::LineTooLong {
            limit: self.limits.max_line_bytes,
        }
    }

    fn drop_block(&mut self) {
        self.skipping_event = true;
        self.block_has_fields = true;
        self.data = String::new();
        self.event_type = String::new();
    }

    fn event_too_large(&mut self) -> Option<Result<SseEvent, SseError>> {
        self.drop_block();
        Some(Err(SseError::EventTooLarge {
            limit: self.limits.max_event_bytes,
        }))
    }

    /// Applies one complete line (without its line end).
    fn process_line(&mut self, line: &[u8]) -> Option<Result<SseEvent, SseError>> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            self.comments = self.comments.saturating_add(1);
            return None;
        }
        self.block_has_fields = true;
        let (name, value) = match line.iter().position(|b| *b == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" if !self.skipping_event => {
                let value = utf8(value);
                let size = self
                    .data
                    .len()
                    .saturating_add(value.len())
                    .saturating_add(1)
                    .saturating_add(self.event_type.len());
                if size > self.limits.max_event_bytes {
                    return self.event_too_large();
                }
                // One reservation for the value and its line end, so the `\n` never
                // doubles a buffer the value just filled, and never past the limit.
                let cap = reserve_within(self.data.capacity(), size, self.limits.max_event_bytes);
                self.data.reserve_exact(cap - self.data.len());
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"event" if !self.skipping_event => {
                let value = utf8(value);
                if self.data.len().saturating_add(value.len()) > self.limits.max_event_bytes {
                    return self.event_too_large();
                }
                self.event_type = value.into_owned();
            }
            b"id" => {
                if value.len() > self.limits.max_event_id_bytes {
                    self.drop_block();
                    return Some(Err(SseError::EventIdTooLong {
                        limit: self.limits.max_event_id_bytes,
                    }));
                }
                let value = utf8(value);
                if !value.contains('\0') {
                    self.id_buffer = value.into_owned();
                    self.block_id = true;
                }
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value.iter().fold(0u64, |acc, d| {
                    acc.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                });
                self.retry = Some(ms);
                self.block_retry = Some(ms);
            }
            _ => {}
        }
        None
    }

    /// The empty line.
    fn dispatch(&mut self) -> Option<Result<SseEvent, SseError>> {
        if self.last_event_id != self.id_buffer {
            self.last_event_id.clone_from(&self.id_buffer);
        }
        self.block_has_fields = false;
        let retry = self.block_retry.take();
        let own_id = std::mem::take(&mut self.block_id);
        if self.skipping_event {
            self.skipping_event = false;
            self.data = String::new();
            self.event_type = String::new();
            return None;
        }
        if self.data.is_empty() {
            self.event_type.clear();
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the final LF, always present
        let event_type = match std::mem::take(&mut self.event_type) {
            t if t.is_empty() => "message".to_owned(),
            t => t,
        };
        let id = Some(self.last_event_id.clone()).filter(|s| !s.is_empty());
        self.dispatched_with_id = own_id;
        Some(Ok(SseEvent {
            event_type,
            data,
            id,
            retry,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&[u8]], limits: SseLimits) -> (Vec<Result<SseEvent, SseError>>, bool) {
        let mut d = SseDecoder::new(limits);
        let mut out = Vec::new();
        for c in chunks {
            d.handle_input(c);
            out.extend(d.events());
        }
        let end = d.handle_eof();
        out.extend(d.events());
        (out, end.incomplete_event)
    }

    fn ev(data: &str) -> Result<SseEvent, SseError> {
        Ok(SseEvent {
            event_type: "message".into(),
            data: data.into(),
            id: None,
            retry: None,
        })
    }

    #[test]
    fn a_large_event_leaves_no_large_buffer_behind() {
        // One 4 MiB event, as a server writes a large result on one `data:` line, then
        // small ones: the stream lives on, and must not keep the large event's buffers.
        let mut d = SseDecoder::new(SseLimits::default());
        let mut big = b"data: ".to_vec();
        big.resize(4 << 20, b'x');
        big.extend_from_slice(b"\n\n");
        for chunk in big.chunks(16 * 1024) {
            d.handle_input(chunk);
            while let Some(e) = d.poll_event() {
                assert_eq!(e.unwrap().data.len(), (4 << 20) - 6);
            }
        }
        for _ in 0..4 {
            d.handle_input(b"data: small\n\ndata: par");
            assert_eq!(d.poll_event(), Some(ev("small")));
            assert_eq!(d.poll_event(), None);
            d.handle_input(b"tial\n\n");
            assert_eq!(d.poll_event(), Some(ev("partial")));
        }
        let kept = d.retained_bytes();
        assert!(kept <= 256 * 1024, "the stream keeps {kept} bytes");
    }

    #[test]
    fn split_crlf_is_one_line_end() {
        let (out, inc) = run(
            &[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"],
            SseLimits::default(),
        );
        assert_eq!(out, vec![ev("a\nb")]);
        assert!(!inc);
    }

    #[test]
    fn cr_alone_dispatches_without_waiting() {
        let mut d = SseDecoder::new(SseLimits::default());
        d.handle_input(b"data: x\r\r");
        assert_eq!(d.poll_event(), Some(ev("x")));
    }

    #[test]
    fn bom_split_and_only_once() {
        let (out, _) = run(
            &[b"\xEF", b"\xBB", b"\xBFdata: 1\n\n\xEF\xBB\xBFdata: 2\n\n"],
            SseLimits::default(),
        );
        assert_eq!(out, vec![ev("1")]);
    }

    #[test]
    fn partial_bom_then_other_bytes() {
        let (out, _) = run(&[b"\xEF\xBB", b"\n", b"data: z\n\n"], SseLimits::default());
        assert_eq!(out, vec![ev("z")]);
    }

    #[test]
    fn oversized_line_is_reported_once_and_block_dropped() {
        let limits = SseLimits::new(8, 64);
        let (out, _) = run(
            &[b"data: 0123456789\ndata: y\n\ndata: ok\n\n"],
            limits.clone(),
        );
        assert_eq!(out, vec![Err(SseError::LineTooLong { limit: 8 }), ev("ok")]);
        let (out, inc) = run(&[b"data: ", b"0123456789", b"abc"], limits);
        assert_eq!(out, vec![Err(SseError::LineTooLong { limit: 8 })]);
        assert!(inc);
    }

    #[test]
    fn event_too_large_keeps_id() {
        let (out, _) = run(
            &[b"id: 7\ndata: aaaa\ndata: bbbb\n\ndata: c\n\n"],
            SseLimits::new(64, 8),
        );
        assert_eq!(out[0], Err(SseError::EventTooLarge { limit: 8 }));
        assert_eq!(out[1].as_ref().unwrap().id.as_deref(), Some("7"));
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn finish_reports_incomplete_and_ignores_later_input() {
        let mut d = SseDecoder::new(SseLimits::default());
        d.handle_input(b"id: 1\n\nid: 2\ndata: x\n");
        assert!(d.poll_event().is_none());
        assert!(d.handle_eof().incomplete_event);
        assert_eq!(d.last_event_id(), Some("1"));
        d.handle_input(b"\n");
        assert!(d.poll_event().is_none());
        assert!(!d.handle_eof().incomplete_event);
    }

    #[test]
    fn finish_keeps_undrained_events() {
        let mut d = SseDecoder::new(SseLimits::default());
        d.handle_input(b"data: a\n\ndata: b\n\n: c");
        assert!(d.handle_eof().incomplete_event);
        assert_eq!(d.events().collect::<Vec<_>>(), vec![ev("a"), ev("b")]);
        assert_eq!(d.comments(), 0);
    }

    #[test]
    fn resuming_carries_the_id() {
        let mut d = SseDecoder::resuming(SseLimits::default(), "s7-2");
        d.handle_input(b"data: x\n\n");
        assert_eq!(d.poll_event().unwrap().unwrap().id.as_deref(), Some("s7-2"));
    }
}
