//! Reading a message without decoding it: for a message that cannot be decoded (too
//! large, too deep, malformed, or only a prefix of it at hand), which request it
//! answers or whether it is one. [`sniff`] walks the top-level members from the start,
//! skipping values; [`sniff_trailing_id`] and [`sniff_trailing_method`] read the last
//! member backwards from the end. Each is linear in the bytes it looks at, whatever the
//! nesting.

use super::message::IdField;
use super::{RequestId, string_end};

/// What a look at the top-level members of a message says about it without decoding it,
/// for a message that cannot be decoded (too large, too deep, malformed): whether it
/// answers a request, and which.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Sniffed {
    /// The first top-level `id` that is a string or an integer.
    pub(crate) id: Option<RequestId>,
    /// A top-level `method` member was seen: a request or a notification, so not the
    /// answer to anything.
    pub(crate) has_method: bool,
    /// Every top-level member was read (up to the object's closing brace): no `method`
    /// seen means there is none.
    pub(crate) whole: bool,
}

/// Walks the top-level members of a JSON object, skipping their values without decoding
/// them, and notes `id` and `method`. `bytes` may be a truncated prefix: members cut off
/// by its end are not read. Linear in `bytes`, whatever the nesting.
pub(crate) fn sniff(bytes: &[u8]) -> Sniffed {
    let mut out = Sniffed::default();
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return out;
    }
    i += 1;
    loop {
        i = skip_ws(bytes, i);
        if bytes.get(i) != Some(&b'"') {
            return out;
        }
        let Some(key_end) = string_end(bytes, i + 1) else {
            return out;
        };
        let key = &bytes[i + 1..key_end - 1];
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return out;
        }
        i = skip_ws(bytes, i + 1);
        let Some(value_end) = value_end(bytes, i) else {
            return out;
        };
        match member_name(key).as_deref() {
            Some(b"id") if out.id.is_none() => out.id = parse_id(&bytes[i..value_end]),
            Some(b"method") => out.has_method = true,
            _ => {}
        }
        i = skip_ws(bytes, value_end);
        if bytes.get(i) != Some(&b',') {
            out.whole = bytes.get(i) == Some(&b'}');
            return out;
        }
        i += 1;
    }
}

/// The `id` of a message whose text ends with it as the last top-level member
/// (`…,"id":7}`), read backwards from the end of `tail`, the last bytes of the text.
/// Serialisers that write `result` before `id` put it there.
///
/// In a JSON object the last `}` closes the top level, so a member written right before
/// it is a top-level one; and a `,` (or `{`) then `"id"` cannot be the inside of a
/// string that the text closes later. Linear in `tail`.
pub(crate) fn sniff_trailing_id(tail: &[u8]) -> Option<RequestId> {
    trailing_member(tail, b"\"id\"").and_then(parse_id)
}

/// Whether the text whose last bytes are `tail` ends with a top-level `method` member
/// (`…,"method":"tools/call"}`): a request or a notification, whatever came before.
/// Serialisers that write members in alphabetical order, or `params` first, put it there.
pub(crate) fn sniff_trailing_method(tail: &[u8]) -> bool {
    trailing_member(tail, b"\"method\"").is_some_and(|v| v.starts_with(b"\""))
}

/// The value (a string with its quotes, or a number) of the member named `quoted_name`
/// (as written, quotes included) when it is the last top-level member of the text whose
/// last bytes are `tail` (see [`sniff_trailing_id`] for why that is sound).
fn trailing_member<'t>(tail: &'t [u8], quoted_name: &[u8]) -> Option<&'t [u8]> {
    let t = tail.trim_ascii_end().strip_suffix(b"}")?.trim_ascii_end();
    let value_start = if let Some(body) = t.strip_suffix(b"\"") {
        // The opening quote is the last one not escaped by an odd run of backslashes.
        let mut end = body.len();
        loop {
            let q = memchr::memrchr(b'"', &body[..end])?;
            let backslashes = body[..q].iter().rev().take_while(|b| **b == b'\\').count();
            if backslashes % 2 == 0 {
                break q;
            }
            end = q;
        }
    } else {
        t.iter()
            .rposition(|b| !(b.is_ascii_digit() || *b == b'-'))
            .map_or(0, |p| p + 1)
    };
    let (before, value) = t.split_at(value_start);
    let before = before.trim_ascii_end().strip_suffix(b":")?.trim_ascii_end();
    let before = before.strip_suffix(quoted_name)?.trim_ascii_end();
    if !(before.ends_with(b",") || before.ends_with(b"{")) {
        return None;
    }
    Some(value)
}

/// The name of a member from the text between its quotes: as is, or unescaped when it
/// has escapes (`"i\u0064"` names `id` as well).
fn member_name(raw: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
    if !raw.contains(&b'\\') {
        return Some(std::borrow::Cow::Borrowed(raw));
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    let name: String = serde_json::from_slice(&quoted).ok()?;
    Some(std::borrow::Cow::Owned(name.into_bytes()))
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The index just past the value starting at `i`, or `None` when the text ends first.
fn value_end(bytes: &[u8], i: usize) -> Option<usize> {
    match *bytes.get(i)? {
        b'"' => string_end(bytes, i + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while let Some(&b) = bytes.get(j) {
                match b {
                    b'"' => {
                        j = string_end(bytes, j + 1)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let len = bytes[i..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())?;
            (len > 0).then_some(i + len)
        }
    }
}

/// A request id from the text of one JSON value: a string or an integer, read as the
/// decoder reads `id` ([`IdField`]; `-0`, which `serde_json` reads as a float, is none).
fn parse_id(value: &[u8]) -> Option<RequestId> {
    match serde_json::from_slice::<IdField>(value) {
        Ok(IdField::Valid(id)) => Some(id),
        _ => None,
    }
}
