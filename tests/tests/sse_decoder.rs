//! The WHATWG event-stream decoder: chunking invariance (whole, byte by byte, every split
//! point, trailing partial data), limits, and the examples of the HTML standard.

use mcp_proto::fuzzing::sse::{Run, decode};
use mcp_proto::sse::{SseDecoder, SseError, SseEvent, SseLimits};

/// Decoding one stream is the same helper the fuzz target uses.
fn run<'a>(limits: &SseLimits, chunks: impl IntoIterator<Item = &'a [u8]>) -> Run {
    decode(limits, chunks)
}

/// Decodes `input` whole, byte by byte, split at every point, and split at every pair of
/// points when short enough; all runs must agree. Returns the run.
fn invariant(limits: &SseLimits, input: &[u8]) -> Run {
    let whole = run(limits, [input]);
    assert_eq!(run(limits, input.chunks(1)), whole, "byte by byte");
    for size in [2, 3, 5, 7, 64] {
        assert_eq!(run(limits, input.chunks(size)), whole, "chunks of {size}");
    }
    for i in 0..=input.len() {
        let (a, b) = input.split_at(i);
        assert_eq!(run(limits, [a, b]), whole, "split at {i}");
    }
    if input.len() <= 160 {
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let parts = [&input[..i], &input[i..j], &input[j..]];
                assert_eq!(run(limits, parts), whole, "split at {i} and {j}");
            }
        }
    }
    whole
}

fn event(event_type: &str, data: &str, id: Option<&str>, retry: Option<u64>) -> SseEvent {
    SseEvent {
        event_type: event_type.to_owned(),
        data: data.to_owned(),
        id: id.map(str::to_owned),
        retry,
    }
}

fn msg(data: &str) -> SseEvent {
    event("message", data, None, None)
}

/// A stream with every feature the decoder must handle.
const RICH: &[u8] = b"\xEF\xBB\xBF: hello\r\n\
id: s7-0\r\n\
data:\r\n\
\r\n\
event: progress\r\
data:  two spaces\n\
data:first\r\n\
data\n\
unknown: field\n\
retry: 12x\n\
retry: 3000\r\
\r\
id: a\0b\n\
data: {\"jsonrpc\":\"2.0\"}\n\
\n\
: keep-alive\r\
id: s7-9\n\
retry\n\
\r\n\
data: bad \xFF\xC3 utf8 \xE2\x82\n\
event\n\
\n\
id\n\
data: no id now\n\
\n\
\xEF\xBB\xBFdata: second BOM is data\n\
\n\
data: trailing partial";

#[test]
fn rich_stream_is_chunking_invariant() {
    let got = invariant(&SseLimits::default(), RICH);
    let expected: Vec<Result<SseEvent, SseError>> = vec![
        // `data:` with an empty value dispatches an empty event (WHATWG).
        Ok(event("message", "", Some("s7-0"), None)),
        // One space stripped, never two; `data` without colon appends an empty line;
        // `retry: 12x` ignored; unknown field ignored.
        Ok(event(
            "progress",
            " two spaces\nfirst\n",
            Some("s7-0"),
            Some(3000),
        )),
        // The id with NUL is ignored.
        Ok(event("message", r#"{"jsonrpc":"2.0"}"#, Some("s7-0"), None)),
        // Event s7-9 has no data: not dispatched, but the id is committed. Invalid UTF-8
        // becomes U+FFFD; an empty `event` means "message".
        Ok(event(
            "message",
            "bad \u{FFFD}\u{FFFD} utf8 \u{FFFD}",
            Some("s7-9"),
            None,
        )),
        // `id` with no value resets the last event ID.
        Ok(event("message", "no id now", None, None)),
        // Only the first BOM is stripped: the second makes the field name unknown.
    ];
    assert_eq!(got.items, expected);
    assert!(
        got.incomplete,
        "the trailing partial event is discarded and reported"
    );
    assert_eq!(got.last_event_id, None);
    assert_eq!(got.retry_ms, Some(3000));
    assert_eq!(got.comments, 2);
}

#[test]
fn empty_data_event_still_updates_last_event_id() {
    let got = invariant(&SseLimits::default(), b"data: a\n\nid: 42\nretry: 10\n\n");
    assert_eq!(got.items, vec![Ok(msg("a"))]);
    assert_eq!(got.last_event_id.as_deref(), Some("42"));
    assert_eq!(got.retry_ms, Some(10));
    assert!(!got.incomplete);
}

#[test]
fn id_not_committed_without_dispatch_at_eof() {
    let got = invariant(&SseLimits::default(), b"id: 1\n\nid: 2\ndata: x\n");
    assert_eq!(got.items, vec![]);
    assert_eq!(got.last_event_id.as_deref(), Some("1"));
    assert!(got.incomplete);
}

#[test]
fn crlf_split_across_pushes_is_one_line_end() {
    let mut d = SseDecoder::new(SseLimits::default());
    d.handle_input(b"data: a\r");
    assert_eq!(d.poll_event(), None);
    d.handle_input(b"\n");
    assert_eq!(
        d.poll_event(),
        None,
        "CR LF must not read as CR then an empty line"
    );
    d.handle_input(b"\r");
    assert_eq!(
        d.poll_event(),
        Some(Ok(msg("a"))),
        "a lone CR ends the event at once"
    );
    d.handle_input(b"\n\n");
    assert_eq!(
        d.poll_event(),
        None,
        "the LF after CR is skipped; the next LF is empty"
    );
    assert!(!d.handle_eof().incomplete_event);
}

#[test]
fn retry_rules() {
    let got = invariant(
        &SseLimits::default(),
        b"retry: 100\nretry: -5\nretry: 1.5\nretry:  200\nretry:\nretry: 99999999999999999999999\ndata: x\n\n",
    );
    assert_eq!(got.retry_ms, Some(u64::MAX), "all digits, saturated");
    assert_eq!(
        got.items,
        vec![Ok(event("message", "x", None, Some(u64::MAX)))]
    );
}

#[test]
fn trailing_partial_data_variants() {
    for (tail, incomplete) in [
        (&b""[..], false),
        (b"data", true),
        (b"data: x\n", true),
        (b"data: x\r", true),
        (b": comment", true),
        (b": comment\n", false),
        (b"\xEF\xBB", true),
    ] {
        let mut input = b"data: 1\n\n".to_vec();
        input.extend_from_slice(tail);
        let got = invariant(&SseLimits::default(), &input);
        assert_eq!(got.items, vec![Ok(msg("1"))], "tail {tail:?}");
        assert_eq!(got.incomplete, incomplete, "tail {tail:?}");
    }
}

#[test]
fn oversized_line_is_reported_once_and_its_event_dropped() {
    let limits = SseLimits::new(16, 1024);
    let input =
        b"data: before\n\nid: 5\ndata: 0123456789abcdefghij\ndata: rest\nid: 6\n\ndata: after\n\n";
    let got = invariant(&limits, input);
    assert_eq!(
        got.items,
        vec![
            Ok(msg("before")),
            Err(SseError::LineTooLong { limit: 16 }),
            Ok(event("message", "after", Some("6"), None)),
        ]
    );
    // A line of exactly the limit is fine.
    let got = invariant(&limits, b"data: 0123456789\n\n");
    assert_eq!(got.items, vec![Ok(msg("0123456789"))]);
}

#[test]
fn endless_line_is_bounded() {
    let limits = SseLimits::new(1024, 4096);
    let mut d = SseDecoder::new(limits);
    d.handle_input(b"data: ");
    let chunk = vec![b'x'; 64 * 1024];
    let mut errors = 0;
    for _ in 0..160 {
        // 10 MiB in total, never a line end.
        d.handle_input(&chunk);
        for item in d.events() {
            assert_eq!(item, Err(SseError::LineTooLong { limit: 1024 }));
            errors += 1;
        }
    }
    assert_eq!(errors, 1, "reported once");
    d.handle_input(b"\ndata: next\n\ndata: ok\n\n");
    assert_eq!(d.events().collect::<Vec<_>>(), vec![Ok(msg("ok"))]);
}

#[test]
fn event_that_never_ends_is_bounded() {
    let limits = SseLimits::new(1024, 4096);
    let mut d = SseDecoder::new(limits.clone());
    let lines = b"data: 0123456789012345678901234567890123456789\n".repeat(1000);
    let mut items = Vec::new();
    for _ in 0..200 {
        // About 9 MiB of data lines, never an empty line.
        d.handle_input(&lines);
        items.extend(d.events());
    }
    assert_eq!(items, vec![Err(SseError::EventTooLarge { limit: 4096 })]);
    assert!(d.handle_eof().incomplete_event);

    // Same with recovery, and chunking invariance around the limit.
    let mut input = b"id: 1\n".to_vec();
    input.extend(b"data: 0123456789\n".repeat(10));
    input.extend(b"event: big\nid: 2\n\ndata: small\n\n");
    let got = invariant(&SseLimits::new(64, 100), &input);
    assert_eq!(
        got.items,
        vec![
            Err(SseError::EventTooLarge { limit: 100 }),
            Ok(event("message", "small", Some("2"), None)),
        ]
    );
}

#[test]
fn zero_limits_never_panic() {
    let got = invariant(&SseLimits::new(0, 0), RICH);
    assert!(got.items.iter().all(Result::is_err));
}

#[test]
fn resuming_decoder_starts_from_the_given_id() {
    let mut d = SseDecoder::resuming(SseLimits::default(), "s7-2");
    assert_eq!(d.last_event_id(), Some("s7-2"));
    d.handle_input(b"data: replay\n\n");
    assert_eq!(
        d.poll_event(),
        Some(Ok(event("message", "replay", Some("s7-2"), None)))
    );
}

// ---------------------------------------------------------------------------------------
// The examples of the HTML standard, section 9.2 (server-sent events).

#[test]
fn whatwg_three_messages() {
    let got = invariant(
        &SseLimits::default(),
        b"data: This is the first message.\n\n\
data: This is the second message, it\n\
data: has two lines.\n\n\
data: This is the third message.\n\n",
    );
    assert_eq!(
        got.items,
        vec![
            Ok(msg("This is the first message.")),
            Ok(msg("This is the second message, it\nhas two lines.")),
            Ok(msg("This is the third message.")),
        ]
    );
}

#[test]
fn whatwg_event_types() {
    let got = invariant(
        &SseLimits::default(),
        b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n",
    );
    assert_eq!(
        got.items,
        vec![
            Ok(event("add", "73857293", None, None)),
            Ok(event("remove", "2153", None, None)),
            Ok(event("add", "113411", None, None)),
        ]
    );
}

#[test]
fn whatwg_stock_ticker() {
    let got = invariant(&SseLimits::default(), b"data: YHOO\ndata: +2\ndata: 10\n\n");
    assert_eq!(got.items, vec![Ok(msg("YHOO\n+2\n10"))]);
}

#[test]
fn whatwg_ids_and_comments() {
    let got = invariant(
        &SseLimits::default(),
        b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n",
    );
    // The third block has no final empty line: it is never dispatched.
    assert_eq!(
        got.items,
        vec![
            Ok(event("message", "first event", Some("1"), None)),
            Ok(msg("second event")),
        ]
    );
    assert_eq!(got.comments, 1);
    assert!(got.incomplete);
    let got = invariant(
        &SseLimits::default(),
        b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
    );
    assert_eq!(got.items.last(), Some(&Ok(msg(" third event"))));
}

#[test]
fn whatwg_empty_data_fields() {
    let got = invariant(&SseLimits::default(), b"data\n\ndata\ndata\n\ndata:\n");
    assert_eq!(got.items, vec![Ok(msg("")), Ok(msg("\n"))]);
    assert!(got.incomplete);
}

#[test]
fn whatwg_space_after_colon() {
    let got = invariant(&SseLimits::default(), b"data:test\n\ndata: test\n\n");
    assert_eq!(got.items, vec![Ok(msg("test")), Ok(msg("test"))]);
}

/// The constructed 2025-11-25 SSE response of spec section 4.3: a priming event with an
/// id and empty data, a notification, and a request with `retry`.
#[test]
fn spec_priming_and_retry_example() {
    let got = invariant(
        &SseLimits::default(),
        b"id: s7-0\ndata:\n\nid: s7-1\ndata: {\"a\":1}\n\nid: s7-2\nretry: 3000\ndata: {\"b\":2}\n\n",
    );
    assert_eq!(
        got.items,
        vec![
            Ok(event("message", "", Some("s7-0"), None)),
            Ok(event("message", r#"{"a":1}"#, Some("s7-1"), None)),
            Ok(event("message", r#"{"b":2}"#, Some("s7-2"), Some(3000))),
        ]
    );
    assert_eq!(got.last_event_id.as_deref(), Some("s7-2"));
    assert_eq!(got.retry_ms, Some(3000));
}

#[test]
fn buffers_never_grow_past_a_longest_line_or_event() {
    let limits = SseLimits::new(100_000, 150_000);
    let mut d = SseDecoder::new(limits.clone());
    // An endless line in 1000-byte chunks: the buffer stays within one line and a chunk,
    // where doubling would have taken it to 131 072 or beyond.
    d.handle_input(b"data: ");
    let mut peak = 0;
    for _ in 0..300 {
        d.handle_input(&[b'x'; 1000]);
        while d.poll_event().is_some() {}
        peak = peak.max(d.retained_bytes());
    }
    assert!(peak <= 100_000 + 2 * 1000 + 16, "peak {peak}");
    // An event just under its limit, in lines of 40 000 bytes.
    let mut d = SseDecoder::new(limits);
    let line = format!("data: {}\n", "y".repeat(39_999));
    let mut peak = 0;
    for _ in 0..3 {
        d.handle_input(line.as_bytes());
        assert!(d.poll_event().is_none());
        peak = peak.max(d.retained_bytes());
    }
    assert!(peak <= 150_000 + line.len() + 16, "peak {peak}");
    d.handle_input(b"\n");
    assert_eq!(d.poll_event().unwrap().unwrap().data.len(), 3 * 40_000 - 1);
}

#[test]
fn an_event_id_is_capped_at_its_edge() {
    let mut limits = SseLimits::default();
    limits.max_event_id_bytes = 8;
    let mut d = SseDecoder::new(limits);
    d.handle_input(b"id: 12345678\ndata: a\n\nid: 123456789\ndata: b\n\ndata: c\n\n");
    let first = d.poll_event().unwrap().unwrap();
    assert_eq!(first.id.as_deref(), Some("12345678"));
    assert_eq!(
        d.poll_event().unwrap(),
        Err(SseError::EventIdTooLong { limit: 8 })
    );
    // The long id was not kept: the next event carries the last good one.
    let third = d.poll_event().unwrap().unwrap();
    assert_eq!(
        (third.data.as_str(), third.id.as_deref()),
        ("c", Some("12345678"))
    );
    assert_eq!(d.last_event_id(), Some("12345678"));
}
