//! The checks of JSON text from a peer before anything reads it into values: how deep
//! it nests arrays and objects ([`check_nesting`], counted in one pass over the bytes,
//! strings skipped), and with [`check_untrusted_json`] also the memory it would take
//! once parsed and the reserved `$serde_json::…` member names. [`Marks`] counts, in one
//! pass, what the combined check of a message needs; [`value_within`] bounds the depth
//! of a value already decoded, without recursing.

use super::DecodeError;

/// Checks JSON text from a peer before it is read into values (`serde_json::Value`, or a
/// type holding some): nested no deeper than `max_depth`, taking no more than
/// `max_parsed` bytes of memory once parsed (estimated from the text in one pass; text
/// of at most a 256th of it is not scanned for this), and naming no member
/// `$serde_json::…` (which `serde_json` reads as text to parse, past both checks). The
/// machines check every message this way; this is for other JSON an application reads
/// from a peer.
///
/// ```
/// use mcp_proto::jsonrpc::{DecodeError, check_untrusted_json};
///
/// assert!(check_untrusted_json(br#"{"a":[1,2]}"#, 64, 1 << 20).is_ok());
/// let hidden = br#"{"a":{"$serde_json::private::RawValue":"[[[[1]]]]"}}"#;
/// assert_eq!(check_untrusted_json(hidden, 64, 1 << 20), Err(DecodeError::ReservedName));
/// ```
///
/// # Errors
/// [`DecodeError::TooDeep`], [`DecodeError::TooLargeOnceParsed`] or
/// [`DecodeError::ReservedName`].
pub fn check_untrusted_json(
    bytes: &[u8],
    max_depth: usize,
    max_parsed: usize,
) -> Result<(), DecodeError> {
    check_nesting(bytes, max_depth)?;
    crate::held::check_parse(bytes, max_parsed)
        .map_err(|why| DecodeError::unparsable(why, max_parsed))
}

// ----- bounded scans over raw JSON text ----------------------------------------------
//
// These never recurse and never allocate more than an id: each looks at every byte at
// most once, so their cost is linear in the input whatever its nesting.

/// Checks that JSON text nests arrays and objects no more than `max_depth` levels deep
/// (a top-level object or array is level 1; a bare scalar is level 0).
///
/// One pass over the bytes: `[` and `{` outside strings count a level, `]` and `}` end
/// one, and strings are skipped with their escapes honoured. Text that is not JSON is
/// not diagnosed (a decoder does that); only its depth is bounded.
///
/// # Errors
/// [`DecodeError::TooDeep`] naming `max_depth`.
pub fn check_nesting(bytes: &[u8], max_depth: usize) -> Result<(), DecodeError> {
    if nesting_within(bytes, max_depth) {
        Ok(())
    } else {
        Err(DecodeError::TooDeep { limit: max_depth })
    }
}

pub(super) fn nesting_within(bytes: &[u8], max_depth: usize) -> bool {
    // Every level opens with a `[` or `{`: text with no more of them than `max_depth`
    // (counting those in strings too, which can only overcount) is within the limit.
    // A vectorised search finds them (a long string holds none to stop at), much cheaper
    // than the walk below, which steps over strings byte by byte.
    opening_brackets_within(bytes, max_depth) || walk_nesting_within(bytes, max_depth)
}

/// [`nesting_within`] by walking the text, strings skipped.
pub(super) fn walk_nesting_within(bytes: &[u8], max_depth: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                let Some(end) = string_end(bytes, i + 1) else {
                    return true; // an unterminated string holds no more levels
                };
                i = end;
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max_depth {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    true
}

/// What [`Marks::of`] counts in a message's bytes, wherever they are (strings included).
#[derive(Clone, Copy)]
pub(super) struct Marks {
    /// The `[` and `{` bytes: text with no more of them than a depth nests no deeper.
    pub(super) opening_brackets: usize,
    /// A `$` or a backslash: without either, text names no member with
    /// [`crate::held::RESERVED_PREFIX`], plainly or escaped.
    pub(super) dollar_or_backslash: bool,
}

impl Marks {
    /// The longest text [`Marks::of`] is used for: past it, a vectorised search for each
    /// mark costs less than the pass (whose cost per byte is higher; the searches' cost
    /// per call is what it saves).
    pub(super) const MAX_LEN: usize = 512;

    /// Both counts in one pass, 64 bytes at a time (a loop without branches: each
    /// block's counts fit a byte).
    pub(super) fn of(bytes: &[u8]) -> Marks {
        fn block(b: &[u8]) -> (usize, bool) {
            let (mut open, mut marked) = (0u8, 0u8);
            for &c in b {
                open += u8::from(c == b'[' || c == b'{');
                marked |= u8::from(c == b'$' || c == b'\\');
            }
            (usize::from(open), marked != 0)
        }
        let mut marks = Marks {
            opening_brackets: 0,
            dollar_or_backslash: false,
        };
        let blocks = bytes.chunks_exact(64);
        let rest = blocks.remainder();
        for b in blocks.chain(std::iter::once(rest)) {
            let (open, marked) = block(b);
            marks.opening_brackets += open;
            marks.dollar_or_backslash |= marked;
        }
        marks
    }
}

/// Whether `bytes` holds no more than `max` `[` and `{` bytes, wherever they are.
pub(super) fn opening_brackets_within(bytes: &[u8], max: usize) -> bool {
    bytes.len() <= max || memchr::memchr2_iter(b'[', b'{', bytes).nth(max).is_none()
}

/// The index just past the quote that closes the string whose contents start at `from`,
/// or `None` when the text ends first.
pub(crate) fn string_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    // Most strings (member names, short values) end within a few bytes: look at those
    // directly before paying for a vectorised search.
    let short = from.saturating_add(32).min(bytes.len());
    while i < short {
        match bytes[i] {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    loop {
        let at = i + memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
        if bytes[at] == b'"' {
            return Some(at + 1);
        }
        // A backslash: the byte after it is escaped, whatever it is.
        i = at + 2;
    }
}

/// Whether a decoded value nests no more than `max_depth` levels (without recursing).
pub(super) fn value_within(value: &serde_json::Value, max_depth: usize) -> bool {
    use serde_json::Value;
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((v, depth)) = stack.pop() {
        let level = depth + 1;
        match v {
            Value::Array(items) if level <= max_depth => {
                stack.extend(items.iter().map(|c| (c, level)));
            }
            Value::Object(members) if level <= max_depth => {
                stack.extend(members.values().map(|c| (c, level)));
            }
            Value::Array(_) | Value::Object(_) => return false,
            _ => {}
        }
    }
    true
}
