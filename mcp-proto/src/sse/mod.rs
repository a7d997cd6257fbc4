//! Server-sent events: the WHATWG decoder.
//!
//! Streamable HTTP answers a POST (and, in the 2025 versions, a GET) with
//! `Content-Type: text/event-stream`. [`SseDecoder`] turns the body bytes, in whatever
//! chunks they arrive, into [`SseEvent`]s, following the event-stream interpretation rules
//! of the WHATWG HTML standard (section 9.2.6) exactly, with two additions a library needs:
//! every buffer is bounded ([`SseLimits`]), and the state a client needs to resume a 2025-era
//! stream (the last event ID and the `retry` reconnection time) is exposed.
//!
//! # Rules
//!
//! * One UTF-8 byte order mark at the very start of the stream is dropped. It may arrive
//!   split across pushes; the decoder waits for enough bytes to tell.
//! * A line ends at CR, LF or CRLF. A line ending in CR is processed at once; if the next
//!   byte (possibly in a later push) is LF, that LF is skipped, so a CRLF split between two
//!   pushes never yields a spurious empty line.
//! * Bytes are decoded as UTF-8 with U+FFFD replacing invalid sequences, line by line
//!   (equivalent to decoding the whole stream, since CR and LF never occur inside a UTF-8
//!   sequence).
//! * A line starting with `:` is a comment: ignored, but counted ([`SseDecoder::comments`])
//!   so a caller can notice keep-alives.
//! * `name:value` is a field (one space after the colon is dropped); a line without a
//!   colon is a field with an empty value. `data` appends the value and a LF to the data
//!   buffer, `event` sets the event type, `id` sets the last-event-ID buffer unless the
//!   value contains U+0000, `retry` sets the reconnection time if the value is all ASCII
//!   digits (a value too large for `u64` saturates). Other fields are ignored.
//! * An empty line dispatches: the last event ID is committed (even when nothing else
//!   happens), and if the data buffer is non-empty an [`SseEvent`] comes out with the final
//!   LF removed and the type defaulting to `message`. Note that `data:` with an empty value
//!   *does* make the buffer non-empty, so `data:\n\n` dispatches an event whose data is the
//!   empty string (this is what browsers and `eventsource-parser` do; 2025-11-25 "priming"
//!   events look like that, and callers should skip empty data). An event with no `data`
//!   line at all is not dispatched.
//! * At end of input ([`SseDecoder::handle_eof`]) an unterminated line and an undispatched
//!   event are discarded, as the standard requires, and reported.
//!
//! # Bounds and recovery
//!
//! Memory held between calls is the unprocessed input plus at most one partial line of
//! [`SseLimits::max_line_bytes`] and one event of [`SseLimits::max_event_bytes`]; once
//! [`SseDecoder::poll_event`] has returned `None`, the unprocessed input is at most a partial
//! line. When a limit is crossed the decoder reports it once, as `Some(Err(_))`, and
//! recovers rather than giving up:
//!
//! * [`SseError::LineTooLong`]: the line is dropped (bytes up to its end are discarded as
//!   they arrive) and so is the whole event block it belongs to, because an event missing
//!   one of its lines must not be dispatched as if it were complete.
//! * [`SseError::EventTooLarge`]: the event under construction is dropped.
//!
//! In both cases the `data` and `event` fields of the rest of that block are ignored up to
//! the next empty line, which then dispatches nothing. `id` and `retry` fields in the
//! block still take effect, so a resuming client moves past the oversized event instead of
//! having it replayed forever. Decoding goes on normally after the empty line.
//!
//! Errors and events come out at the same points of the stream whatever the chunking, so
//! the output is identical for any split of the input (`tests/tests/sse_decoder.rs` checks
//! every split point).
//!
//! ```
//! use mcp_proto::sse::{SseDecoder, SseLimits};
//!
//! let mut decoder = SseDecoder::new(SseLimits::default());
//! decoder.handle_input(b": keep-alive\nid: s7-1\nretry: 3000\ndata: {\"jsonrpc\":\"2.0\"");
//! decoder.handle_input(b",\"method\":\"ping\"}\n\n");
//! let event = decoder.poll_event().unwrap().unwrap();
//! assert_eq!(event.event_type, "message");
//! assert_eq!(event.data, r#"{"jsonrpc":"2.0","method":"ping"}"#);
//! assert_eq!(event.id.as_deref(), Some("s7-1"));
//! assert_eq!(decoder.retry_ms(), Some(3000));
//! assert_eq!(decoder.comments(), 1);
//! assert!(decoder.poll_event().is_none());
//! let end = decoder.handle_eof();
//! assert!(!end.incomplete_event);
//! ```

mod decoder;

pub use decoder::{EndOfStream, SseDecoder, SseError, SseEvent, SseLimits};
