//! Writing a `serde_json::Value` as compact JSON, byte for byte what `serde_json::to_writer`
//! writes, but with a string escaper that looks at eight bytes at a time.
//!
//! serde_json's escaper looks every byte up in a table (about eleven instructions per byte),
//! which made it the largest cost of a call with a large text argument. Here a run of
//! bytes that need no escape (no `"`, no `\`, no control character) is found a word at a
//! time and copied in one piece; the escapes themselves are serde_json's (`\"`, `\\`,
//! `\b`, `\f`, `\n`, `\r`, `\t`, else `\u00xx` in lower-case hex), so the output is
//! identical.

use serde_json::Value;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// True when some byte of `word` is zero (exact as a yes/no answer).
#[inline]
fn has_zero_byte(word: u64) -> bool {
    word.wrapping_sub(ONES) & !word & HIGHS != 0
}

/// True when some byte of `word` needs an escape in a JSON string: `"`, `\` or a byte
/// below 0x20. No false negatives; a `true` is checked byte by byte.
#[inline]
fn needs_escape(word: u64) -> bool {
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS != 0;
    below_space
        || has_zero_byte(word ^ (ONES * u64::from(b'"')))
        || has_zero_byte(word ^ (ONES * u64::from(b'\\')))
}

#[inline]
fn byte_needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Length of the leading run of `bytes` that needs no escape.
fn clean_prefix(bytes: &[u8]) -> usize {
    let mut i = 0;
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if needs_escape(u64::from_le_bytes(word)) {
            break;
        }
        i += 8;
    }
    while i < bytes.len() && !byte_needs_escape(bytes[i]) {
        i += 1;
    }
    i
}

/// Appends `s` as a JSON string, quotes included.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut rest = bytes;
    loop {
        let clean = clean_prefix(rest);
        out.extend_from_slice(&rest[..clean]);
        let Some(&b) = rest.get(clean) else {
            break;
        };
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
        }
        rest = &rest[clean + 1..];
    }
    out.push(b'"');
}

/// Appends `value` as compact JSON (what `serde_json::to_writer` writes).
pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            // Writing into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, n);
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                write_value(out, v);
            }
            out.push(b'}');
        }
    }
}

/// About how many bytes `value` takes as JSON: exact for strings without escapes, an
/// estimate for numbers. Only a capacity hint, so that a large argument is written into
/// a buffer of the right size instead of one that doubles (and copies) its way there.
pub(crate) fn size_hint(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 20,
        Value::String(s) => s.len() + 2,
        Value::Array(items) => items.iter().map(|v| size_hint(v) + 1).sum::<usize>() + 2,
        Value::Object(map) => map_size_hint(map),
    }
}

/// [`size_hint`] of an object.
pub(crate) fn map_size_hint(map: &serde_json::Map<String, Value>) -> usize {
    map.iter()
        .map(|(k, v)| k.len() + 4 + size_hint(v))
        .sum::<usize>()
        + 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same_as_serde(value: &Value) {
        let mut ours = Vec::new();
        write_value(&mut ours, value);
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            serde_json::to_string(value).unwrap()
        );
    }

    #[test]
    fn strings_escape_as_serde_json_does() {
        let mut every_byte = String::new();
        for c in 0u8..0x80 {
            every_byte.push(char::from(c));
        }
        let cases = [
            String::new(),
            "plain".to_owned(),
            "exactly8".to_owned(),
            "a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{1}i\u{1f}j\u{7f}".to_owned(),
            every_byte.clone(),
            every_byte.repeat(9),
            "héllo wörld ✓ 𝄞 \"quoted\" ".repeat(40),
            format!("{}\"", "x".repeat(65_536)),
            format!("{}\u{0}{}", "y".repeat(15), "z".repeat(17)),
        ];
        for s in &cases {
            same_as_serde(&Value::String(s.clone()));
            for start in 0..s.len().min(9) {
                if s.is_char_boundary(start) {
                    same_as_serde(&Value::String(s[start..].to_owned()));
                }
            }
        }
    }

    #[test]
    fn values_write_as_serde_json_does() {
        same_as_serde(&json!({
            "text": "hi \"there\"\n",
            "n": [1, -2, 3.5, 1e300, u64::MAX, i64::MIN],
            "nested": {"a": null, "b": true, "c": false, "d": [], "e": {}},
            "k\"ey\u{1}": "v",
        }));
        let v = json!({"text": "x".repeat(1000)});
        assert!(size_hint(&v) >= 1000 + 2);
    }
}
