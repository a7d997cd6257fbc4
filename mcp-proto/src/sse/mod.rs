//! Server-sent events: the WHATWG decoder.
//!
//! Streamable HTTP answers a POST (and, in the 2025 versions, a GET) with
//! `Content-Type: text/event-stream`. [`SseDecoder`] turns the body bytes, in whatever
//! chunks they arrive, into [`SseEvent`]s, following the event-stream interpretation rules
//! of the WHATWG HTML standard (section 9.2.6) exactly, with two additions a library needs:
//! every buffer is bounded ([`SseLimits`]), and the state a client needs to resume a 2025-era
//! stream (the last event ID and the `retry` reconnection time) is exposed.
//!
//! ```
//! use mcp_proto::sse::{SseDecoder, SseLimits};
//!
//! let mut decoder = SseDecoder::new(SseLimits::default());
//! decoder.push(b": keep-alive\nid: s7-1\nretry: 3000\ndata: {\"jsonrpc\":\"2.0\"");
//! decoder.push(b",\"method\":\"ping\"}\n\n");
//! let event = decoder.next_event().unwrap().unwrap();
//! assert_eq!(event.event_type, "message");
//! assert_eq!(event.data, r#"{"jsonrpc":"2.0","method":"ping"}"#);
//! assert_eq!(event.id.as_deref(), Some("s7-1"));
//! assert_eq!(decoder.retry_ms(), Some(3000));
//! assert_eq!(decoder.comments(), 1);
//! assert!(decoder.next_event().is_none());
//! let end = decoder.finish();
//! assert!(!end.incomplete_event);
//! ```

mod decoder;

pub use decoder::{EndOfStream, SseDecoder, SseError, SseEvent, SseLimits};
