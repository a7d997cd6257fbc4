//! Writing messages: compact JSON text appended to a caller's buffer, from raw
//! (already serialised) params and results or straight from a [`serde_json::Value`]
//! (with the crate's string escaper), and the starts of requests and responses for
//! callers that write the rest themselves. A response this crate wrote with a number
//! id can have that id replaced without parsing the result ([`own_result_id`],
//! [`replace_own_result_id`]).

use serde::Serialize;
use serde_json::value::RawValue;

use super::{ErrorObject, RequestId};

fn push_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Serialising plain data into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, v);
}

fn push_id(out: &mut Vec<u8>, id: Option<&RequestId>) {
    match id {
        Some(id) => push_json(out, id),
        None => out.extend_from_slice(b"null"),
    }
}

/// Appends the start of a request, `{"jsonrpc":"2.0","id":…,"method":…`, for callers
/// that write the params (and the closing brace) themselves.
pub fn write_request_head(out: &mut Vec<u8>, id: &RequestId, method: &str) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_id(out, Some(id));
    out.extend_from_slice(b",\"method\":");
    push_json(out, method);
}

/// Appends a request with the given (already serialised) params.
pub fn encode_request(out: &mut Vec<u8>, id: &RequestId, method: &str, params: Option<&RawValue>) {
    write_request_head(out, id, method);
    if let Some(p) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(p.get().as_bytes());
    }
    out.push(b'}');
}

/// Appends a notification.
pub fn encode_notification(out: &mut Vec<u8>, method: &str, params: Option<&RawValue>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    push_json(out, method);
    if let Some(p) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(p.get().as_bytes());
    }
    out.push(b'}');
}

/// Appends a successful response.
pub fn encode_result(out: &mut Vec<u8>, id: Option<&RequestId>, result: &RawValue) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_id(out, id);
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result.get().as_bytes());
    out.push(b'}');
}

/// The start [`encode_result`] writes before the id.
const RESULT_HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
/// What [`encode_result`] writes between the id and the result.
const RESULT_KEY: &[u8] = b",\"result\":";

/// For a successful response with a number id as this crate's own encoders write it
/// (`{"jsonrpc":"2.0","id":N,"result":…}`, compact, nothing after the result): `N` and
/// where the id ends. `None` for any other text. Only for text this crate wrote itself:
/// the result is not looked at, let alone validated.
pub(crate) fn own_result_id(bytes: &[u8]) -> Option<(i64, usize)> {
    let rest = bytes.strip_prefix(RESULT_HEAD)?;
    let digits = rest
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b'-'))?;
    let id = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let end = RESULT_HEAD.len() + digits;
    (bytes[end..].starts_with(RESULT_KEY) && bytes.last() == Some(&b'}')).then_some((id, end))
}

/// The response `bytes` (for which [`own_result_id`] gave `end`) with its id replaced by
/// `id`, in place: the result is never parsed, and not even moved when both ids are
/// written with as many bytes.
pub(crate) fn replace_own_result_id(mut bytes: Vec<u8>, id: &RequestId, end: usize) -> Vec<u8> {
    let start = RESULT_HEAD.len();
    let len = bytes.len();
    // The most bytes the id can take written (a string escaped as `\u00XX` throughout).
    let longest = match id {
        RequestId::Number(_) => "-9223372036854775808".len(),
        RequestId::String(s) => s.len().saturating_mul(6).saturating_add(2),
    };
    if bytes.capacity() - len < longest {
        // No room for it after the message: writing it there would move the whole
        // message into a buffer twice as large.
        let mut text = Vec::new();
        push_id(&mut text, Some(id));
        match bytes.get_mut(start..end) {
            Some(old) if old.len() == text.len() => old.copy_from_slice(&text),
            _ => {
                bytes.splice(start..end, text);
            }
        }
        return bytes;
    }
    // The new id is written after the message, into its spare room, then moved into
    // place.
    push_id(&mut bytes, Some(id));
    if end.checked_sub(start) == Some(bytes.len() - len) && end <= len {
        bytes.copy_within(len.., start);
        bytes.truncate(len);
    } else {
        let text = bytes.split_off(len);
        bytes.splice(start..end, text);
    }
    bytes
}

/// Appends a successful response whose result is a [`serde_json::Value`], written
/// straight into `out` (no intermediate text) with the word-at-a-time string escaper.
pub(crate) fn encode_result_value(
    out: &mut Vec<u8>,
    id: Option<&RequestId>,
    result: &serde_json::Value,
) {
    out.reserve(crate::json_write::size_hint(result) + 40);
    write_result_head(out, id);
    crate::json_write::write_value(out, result);
    out.push(b'}');
}

/// Appends the start of a response, `{"jsonrpc":"2.0","id":…,"result":`, for callers
/// that write the result (and the closing brace) themselves.
pub(crate) fn write_result_head(out: &mut Vec<u8>, id: Option<&RequestId>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_id(out, id);
    out.extend_from_slice(b",\"result\":");
}

/// Appends a notification whose params are a [`serde_json::Value`], written straight
/// into `out`.
pub(crate) fn encode_notification_value(
    out: &mut Vec<u8>,
    method: &str,
    params: &serde_json::Value,
) {
    out.reserve(crate::json_write::size_hint(params) + method.len() + 40);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    crate::json_write::write_str(out, method);
    out.extend_from_slice(b",\"params\":");
    crate::json_write::write_value(out, params);
    out.push(b'}');
}

/// Appends an error response.
pub fn encode_error(out: &mut Vec<u8>, id: Option<&RequestId>, error: &ErrorObject) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_id(out, id);
    out.extend_from_slice(b",\"error\":");
    push_json(out, error);
    out.push(b'}');
}

/// Serialises any value into a boxed [`RawValue`].
#[must_use]
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
    RawValue::from_string(text).unwrap_or_else(|_| null_raw())
}

/// The JSON `null` as a [`RawValue`].
#[must_use]
pub fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).expect("null is valid JSON")
}
