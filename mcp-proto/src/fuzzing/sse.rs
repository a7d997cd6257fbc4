//! Fuzz entry points for the SSE decoder and the 2026 header value codec.

use crate::http::headers::{decode_header_bytes, decode_header_value, encode_header_value};
use crate::http::xmcp::{extract_param_values, tool_declarations, tool_param_headers};
use crate::sse::{SseDecoder, SseError, SseEvent, SseLimits};

/// Everything observable from decoding one stream (shared with the decoder's tests).
#[derive(Debug, PartialEq, Eq)]
pub struct Run {
    /// Events and errors, in order.
    pub items: Vec<Result<SseEvent, SseError>>,
    /// An event was cut off by the end of the stream.
    pub incomplete: bool,
    /// The last event id at the end.
    pub last_event_id: Option<String>,
    /// The reconnection time at the end.
    pub retry_ms: Option<u64>,
    /// Comment lines seen.
    pub comments: u64,
}

/// Decodes a stream given in `chunks` with a fresh decoder.
pub fn decode<'a>(limits: &SseLimits, chunks: impl IntoIterator<Item = &'a [u8]>) -> Run {
    let mut d = SseDecoder::new(limits.clone());
    let mut items = Vec::new();
    for c in chunks {
        d.handle_input(c);
        items.extend(d.events());
    }
    let end = d.handle_eof();
    items.extend(d.events());
    Run {
        items,
        incomplete: end.incomplete_event,
        last_event_id: d.last_event_id().map(str::to_owned),
        retry_ms: d.retry_ms(),
        comments: d.comments(),
    }
}

/// SSE decoding: the first byte picks a chunk size, the second the limits; the stream is
/// the rest. Decoding it whole and in chunks must give the same events, errors and end
/// state, and no event may exceed the limits.
pub fn sse_decode(data: &[u8]) {
    let [chunk, limit, input @ ..] = data else {
        return;
    };
    let chunk = usize::from(*chunk).max(1);
    let limits = SseLimits::new(usize::from(limit & 0x0f) * 4, usize::from(limit >> 4) * 8);
    let whole = decode(&limits, std::iter::once(input));
    let split = decode(&limits, input.chunks(chunk));
    assert_eq!(whole, split, "SSE decoding depends on chunking");
    let bytes = decode(&limits, input.chunks(1));
    assert_eq!(
        whole, bytes,
        "SSE decoding depends on chunking (byte by byte)"
    );
    for event in whole.items.iter().flatten() {
        let explicit_type = if event.event_type == "message" {
            0
        } else {
            event.event_type.len()
        };
        assert!(
            event.data.len() + 1 + explicit_type <= limits.max_event_bytes,
            "event over the limit"
        );
    }
}

/// Header value codec: any string encodes to a header-safe value that decodes back to
/// it; any value that decodes re-encodes to something that decodes to the same string.
/// Input that parses as JSON is also run through the `x-mcp-header` schema walker and
/// the argument extractor (which must not panic).
pub fn header_value(data: &[u8]) {
    let decoded = decode_header_bytes(data);
    if let Ok(s) = std::str::from_utf8(data) {
        assert_eq!(
            decoded,
            decode_header_value(s),
            "bytes and str decoders differ"
        );
        let encoded = encode_header_value(s);
        assert!(
            encoded.bytes().all(|b| (0x20..=0x7e).contains(&b))
                && !encoded.starts_with(' ')
                && !encoded.ends_with(' '),
            "encoded value is not header-safe: {encoded:?}"
        );
        assert_eq!(
            decode_header_value(&encoded).as_deref(),
            Ok(s),
            "round trip failed"
        );
        if let Ok(schema) = serde_json::from_str::<serde_json::Value>(s) {
            let declared = tool_param_headers(&schema);
            // The schema read from text (as a client reads a listing) says the same.
            let tool = format!(r#"{{"name":"t","inputSchema":{s}}}"#);
            assert_eq!(
                tool_declarations(&tool).map(|(_, d)| d),
                Some(declared.clone()),
                "text and value disagree"
            );
            if let Ok(headers) = declared {
                let _ = extract_param_values(&headers, &schema);
            }
        }
    }
    if let Ok(v) = decoded {
        let again = encode_header_value(&v);
        assert_eq!(
            decode_header_value(&again),
            Ok(v),
            "re-encoding changed the value"
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn smoke() {
        super::sse_decode(
            b"\x03\x52\xEF\xBB\xBFdata: a\r\n: c\rid: 1\n\ndata: 0123456789abcdef\n\nretry: 5\n",
        );
        super::header_value(b"=?base64?SGVsbG8=?=");
        super::header_value(b" caf\xc3\xa9 ");
        super::header_value(
            br#"{"properties": {"a": {"type": "integer", "x-mcp-header": "A"}}, "a": 1e300}"#,
        );
    }
}
