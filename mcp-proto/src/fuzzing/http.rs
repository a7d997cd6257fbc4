//! Fuzz entry points for the HTTP reader, the URL parser and header codecs.

use crate::http::{EndpointUrl, HttpLimits, ResponseEvent, ResponseReader};

/// Reads responses from `input` fed in pieces of `chunk` bytes (0: all at once); see
/// [`read_pieces`].
#[must_use]
pub fn read_responses(
    input: &[u8],
    chunk: usize,
    limits: &HttpLimits,
    methods: &[&str],
    eof: bool,
) -> (Vec<ResponseEvent>, Vec<u8>) {
    if chunk == 0 {
        read_pieces([input], limits, methods, eof)
    } else {
        read_pieces(input.chunks(chunk), limits, methods, eof)
    }
}

/// Reads responses from `pieces`, then the end of input if `eof`. After each keep-alive
/// `End` the reader moves on to the next response, for a request with the next of
/// `methods` (the first is for the first response). Returns the events, adjacent `Body`
/// events merged, and the leftover bytes.
#[must_use]
pub fn read_pieces<'a>(
    pieces: impl IntoIterator<Item = &'a [u8]>,
    limits: &HttpLimits,
    methods: &[&str],
    eof: bool,
) -> (Vec<ResponseEvent>, Vec<u8>) {
    let mut methods = methods.iter().copied();
    let mut reader = ResponseReader::new(limits.clone(), methods.next().unwrap_or("GET"));
    let mut events = Vec::new();
    for piece in pieces {
        reader.handle_input(piece);
        pump(&mut reader, &mut events, &mut methods);
    }
    if eof {
        reader.handle_eof();
        pump(&mut reader, &mut events, &mut methods);
    }
    (events, reader.into_leftover())
}

/// Drains events, moving on to the next response after each keep-alive `End`.
fn pump<'a>(
    reader: &mut ResponseReader,
    events: &mut Vec<ResponseEvent>,
    methods: &mut impl Iterator<Item = &'a str>,
) {
    loop {
        let mut next = false;
        while let Some(event) = reader.poll_event() {
            next = matches!(event, ResponseEvent::End { keep_alive: true });
            match (events.last_mut(), event) {
                (Some(ResponseEvent::Body(prev)), ResponseEvent::Body(more)) => prev.extend(more),
                (_, event) => events.push(event),
            }
        }
        let Some(method) = next.then(|| methods.next()).flatten() else {
            return;
        };
        if reader.reset_for_next(method).is_err() {
            return;
        }
    }
}

/// Checks the event grammar: per response `Head`, `Body`*, `End`; an `Error` anywhere
/// is the last event.
fn check_grammar(events: &[ResponseEvent]) {
    let mut in_response = false;
    for (i, event) in events.iter().enumerate() {
        match event {
            ResponseEvent::Head(_) => {
                assert!(!in_response, "head inside a response");
                in_response = true;
            }
            ResponseEvent::Body(b) => assert!(in_response && !b.is_empty(), "stray body"),
            ResponseEvent::End { .. } => {
                assert!(in_response, "end outside a response");
                in_response = false;
            }
            ResponseEvent::Error(_) => assert_eq!(i + 1, events.len(), "event after error"),
        }
    }
}

/// The response reader: the first byte picks a piece size (low six bits), a `HEAD`
/// request first (bit 6) and the end of input (bit 7); the rest is the server's bytes.
/// Whole, split and byte-at-a-time input must give the same events and leftover, and
/// the events must follow the grammar of [`ResponseEvent`].
pub fn http_response(data: &[u8]) {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(control & 0x3f) + 1;
    let methods: &[&str] = if control & 0x40 != 0 {
        &["HEAD", "GET", "POST", "GET"]
    } else {
        &["POST", "GET", "HEAD", "GET"]
    };
    let eof = control & 0x80 != 0;
    let limits = HttpLimits {
        max_head_bytes: 512,
        max_headers: 8,
        max_body_bytes: Some(2048),
        max_chunk_size_line: 32,
        max_trailer_bytes: 64,
        max_leftover_bytes: 1024,
    };
    let whole = read_responses(input, 0, &limits, methods, eof);
    check_grammar(&whole.0);
    for chunk in [chunk, 1] {
        let split = read_responses(input, chunk, &limits, methods, eof);
        assert_eq!(whole.0, split.0, "events depend on chunking ({chunk})");
        // Input fed after the last `End` is capped for split input only (the whole input
        // came in the call that ended the response).
        if whole.1.len() <= limits.max_leftover_bytes {
            assert_eq!(whole.1, split.1, "leftover depends on chunking ({chunk})");
        } else {
            assert!(
                whole.1.starts_with(&split.1),
                "leftover is not a prefix ({chunk})"
            );
        }
    }
}

/// The URL parser on arbitrary UTF-8: whatever parses re-parses from `as_str()` to the
/// same URL, and from its normalized form (`origin()` + `target()`) to the same parts;
/// whatever parses without insecure remotes parses with them.
pub fn url_parse(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    for allow in [false, true] {
        let Ok(url) = EndpointUrl::parse(s, allow) else {
            continue;
        };
        let again = EndpointUrl::parse(url.as_str(), allow).expect("as_str must re-parse");
        assert_eq!(url, again);
        let normal = format!("{}{}", url.origin(), url.target());
        let n = EndpointUrl::parse(&normal, true).expect("normalized form must re-parse");
        assert_eq!(
            (n.scheme(), n.host(), n.ip(), n.port()),
            (url.scheme(), url.host(), url.ip(), url.port())
        );
        assert_eq!(
            (n.host_header(), n.target(), n.origin()),
            (url.host_header(), url.target(), url.origin())
        );
        if !allow {
            assert!(
                EndpointUrl::parse(s, true).is_ok(),
                "allowing more refused it"
            );
        }
    }
}

/// The resolution of an HTTP+SSE `endpoint` event against a fixed server URL on
/// arbitrary UTF-8: never a panic, and whatever is accepted is on the server's origin
/// with an absolute target.
pub fn http_sse_endpoint(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let base = EndpointUrl::parse("http://127.0.0.1:3001/mcp/sse", false).expect("base");
    if let Ok(url) = crate::client::http::sse2024::resolve_endpoint(&base, s) {
        assert_eq!(url.origin(), base.origin());
        assert!(url.target().starts_with('/'), "{}", url.target());
        assert!(s.len() <= crate::client::http::MAX_ENDPOINT_BYTES);
    }
}
