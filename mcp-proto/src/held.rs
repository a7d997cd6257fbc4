//! What a value a peer sent costs to keep or to parse: its bytes in memory, estimated
//! from above. A parsed value costs many times its JSON text (`{"a":0}`, 7 bytes of
//! text, takes a whole B-tree node of over 700 bytes), so whatever a server keeps for a
//! client (task arguments and results, answers between rounds, capabilities) is counted
//! this way, never by its text, and a message is estimated from its text before it is
//! parsed. Buffers that hold a peer's bytes give back what a large message made them
//! grow to ([`give_back`]): public, for adapters and stores that buffer a peer's bytes
//! themselves.

use serde_json::Value;

use crate::jsonrpc::ErrorObject;

/// The capacity a buffer of peer bytes (a line, an event, a request, an answer) keeps
/// once it holds little: messages up to a few tens of KiB reuse it.
pub const KEEP_CAPACITY: usize = 64 * 1024;

/// Lets go of what a large message made `buf` grow to once it holds little again, so
/// that a connection or stream does not keep its high-water mark for as long as it
/// lives (at most four times [`KEEP_CAPACITY`] stays).
pub fn give_back(buf: &mut Vec<u8>) {
    if buf.capacity() > 4 * KEEP_CAPACITY && buf.len() <= KEEP_CAPACITY {
        buf.shrink_to(KEEP_CAPACITY);
    }
}

/// Each `Value`, wherever it sits.
const VALUE: usize = std::mem::size_of::<Value>();
/// What a heap block asked for `size` bytes takes: nothing for none, else the size with
/// a word of header, at least 32 bytes, in steps of 16 (glibc's malloc; other
/// allocators' size classes take no more).
fn block(size: usize) -> usize {
    match size {
        0 => 0,
        n => (n + 8).max(32).next_multiple_of(16),
    }
}
/// Members in one node of a `serde_json::Map` (std's `BTreeMap`, `B = 6`).
const NODE_MEMBERS: usize = 11;
/// Members every node but the root holds at least: a map of `n` members has at most
/// `1 + (n - 1) / 5` nodes.
const NODE_MIN_MEMBERS: usize = 5;
/// The most nodes a map of `n` members takes: one while they fit in a leaf, then one
/// per [`NODE_MIN_MEMBERS`] (every node but the root holds at least that many).
fn map_nodes(n: usize) -> usize {
    match n {
        0 => 0,
        1..=NODE_MEMBERS => 1,
        n => 1 + (n - 1) / NODE_MIN_MEMBERS,
    }
}

/// One node of a map, taken whole whatever it holds: its keys and values, its child
/// edges (internal nodes) and a header (parent, index, length).
const MAP_NODE: usize = NODE_MEMBERS * (std::mem::size_of::<String>() + VALUE)
    + (NODE_MEMBERS + 1) * std::mem::size_of::<usize>()
    + 16;

/// The bytes of memory `value` holds, estimated from above: 32 bytes a value, an
/// array's capacity, a map's nodes at full size (a node for one member is as big as for
/// eleven), each key and string its capacity, each heap block as the allocator takes it
/// (a one-byte string takes 32). Recursive: what the server keeps from a client was nested at most
/// `max_nesting_depth` deep.
pub(crate) fn held_bytes(value: &Value) -> usize {
    VALUE + held_beyond_slot(value)
}

/// What `value` holds beyond its own slot.
fn held_beyond_slot(value: &Value) -> usize {
    match value {
        Value::String(s) => block(s.capacity()),
        Value::Array(items) => {
            let slots = block(items.capacity() * VALUE);
            slots + items.iter().map(held_beyond_slot).sum::<usize>()
        }
        Value::Object(members) => {
            let nodes = map_nodes(members.len());
            let members_held: usize = (members.iter())
                .map(|(k, v)| block(k.capacity()) + held_beyond_slot(v))
                .sum();
            nodes * block(MAP_NODE) + members_held
        }
        _ => 0,
    }
}

/// The bytes of memory an error object holds ([`held_bytes`]).
pub(crate) fn error_held_bytes(e: &ErrorObject) -> usize {
    std::mem::size_of::<ErrorObject>()
        + block(e.message.capacity())
        + e.data.as_ref().map_or(0, held_bytes)
}

/// How many bytes `value` takes as compact JSON when that is at most `limit`; `None`
/// past it. Serialising stops at the limit: the cost is bounded by `limit`, not by the
/// value.
pub(crate) fn json_size_within(value: &impl serde::Serialize, limit: usize) -> Option<usize> {
    struct Count(usize, usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > self.1 {
                return Err(std::io::ErrorKind::FileTooLarge.into());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0, limit);
    serde_json::to_writer(&mut count, value)
        .ok()
        .map(|()| count.0)
}

/// How many bytes `value` takes as compact JSON, counted without keeping them.
pub(crate) fn json_size(value: &impl serde::Serialize) -> usize {
    json_size_within(value, usize::MAX).unwrap_or(usize::MAX)
}

/// The most memory any byte of JSON text takes once parsed, as [`parsed_bytes`] counts
/// it, with room to spare: the densest text is nested one-member objects, `{"":` taking
/// a map node (736 bytes) for four bytes.
const MAX_PARSED_PER_BYTE: usize = 256;

/// Why a peer's text is not parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unparsable {
    /// It would take more memory than the limit once parsed.
    TooLarge,
    /// A member's name starts with [`RESERVED_PREFIX`].
    ReservedName,
}

/// What member names `serde_json` gives a meaning of its own start with. Read into a
/// `Value`, an object whose first member is `"$serde_json::private::RawValue"` is
/// replaced by its string parsed as JSON: text in a string, unseen by the checks of
/// depth and size made on the text, each level with a fresh recursion limit.
pub(crate) const RESERVED_PREFIX: &str = "$serde_json::";

/// Whether `text` may be parsed into values: no member named with [`RESERVED_PREFIX`],
/// and at most `limit` bytes of memory once parsed, as [`parsed_bytes`] estimates it.
/// Text that holds no `$` (plain or escaped) and is short enough that even its densest
/// form would fit is not scanned. Nesting must have been bounded first
/// ([`crate::jsonrpc::check_nesting`]).
pub(crate) fn check_parse(text: &[u8], limit: usize) -> Result<(), Unparsable> {
    let names = may_name_reserved(text);
    if !names && parse_fits_by_length(text.len(), limit) {
        return Ok(());
    }
    scan_parsed(text, limit, names).map(|_| ())
}

/// Whether `text` holds a `$`, plain or escaped (`\u0024`), in one pass: a backslash
/// is looked at with what it escapes, so an escaped backslash followed by `u0024` is
/// not taken for one.
fn may_name_reserved(text: &[u8]) -> bool {
    let mut at = 0;
    while let Some(found) = text
        .get(at..)
        .and_then(|rest| memchr::memchr2(b'$', b'\\', rest))
    {
        let i = at + found;
        if text[i] == b'$' || text[i..].starts_with(b"\\u0024") {
            return true;
        }
        at = i + 2;
    }
    false
}

/// Whether any JSON text of `len` bytes, however dense, fits `limit` once parsed.
pub(crate) fn parse_fits_by_length(len: usize, limit: usize) -> bool {
    len.saturating_mul(MAX_PARSED_PER_BYTE) <= limit
}

/// The bytes of memory `text` takes once parsed into a `Value`, estimated from the text
/// in one pass, without parsing it, and from above as [`held_bytes`] counts it: each
/// array at the capacity it grows to while parsed (powers of two from four), each map
/// a node per five members, each string and key the length of its text. Text that is not
/// JSON is estimated for what a parser builds before it meets the error.
pub(crate) fn parsed_bytes(text: &[u8]) -> usize {
    scan_parsed(text, usize::MAX, false).unwrap_or(usize::MAX)
}

/// Whether the member name whose text (between its quotes) is `raw` starts with
/// [`RESERVED_PREFIX`] once its escapes are read.
fn reserved_name(raw: &[u8]) -> bool {
    if !raw.contains(&b'\\') {
        return raw.starts_with(RESERVED_PREFIX.as_bytes());
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted).is_ok_and(|name| name.starts_with(RESERVED_PREFIX))
}

/// An array or object the scan is inside of.
enum Open {
    Array { items: usize },
    Object { members: usize, next: Next },
}

/// What an object takes next: a member's name (after `{` or `,`), its value, or the
/// comma after it. Anything else out of turn is not JSON, and a parser builds nothing
/// of it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    Key,
    Value,
    Comma,
}

impl Open {
    /// What the container takes beyond the slot it sits in, its contents' own heap aside.
    fn held(&self) -> usize {
        match *self {
            Open::Array { items: 0 } | Open::Object { members: 0, .. } => 0,
            Open::Array { items } => block(items.next_power_of_two().max(4) * VALUE),
            Open::Object { members, .. } => map_nodes(members) * block(MAP_NODE),
        }
    }
}

/// Deeper than this, the scan gives up (counts the text as too large) rather than keep
/// a frame per level: nesting is bounded far below it before any text is scanned.
const SCAN_MAX_DEPTH: usize = 100_000;

/// [`parsed_bytes`], refused as soon as the estimate passes `limit`, and, with `names`,
/// at a member name starting with [`RESERVED_PREFIX`]. Linear in the text: each byte is
/// looked at once, strings skipped with a vectorised search (a name is read again only
/// when it holds an escape).
fn scan_parsed(text: &[u8], limit: usize, names: bool) -> Result<usize, Unparsable> {
    // A value starts: as an array's item it takes a slot in the array's block, as a
    // member's value a place in a map node (both counted when their container closes),
    // at the top level the slot counted up front. A member counts from its value: a
    // parser inserts none before.
    fn value_starts(open: &mut [Open]) {
        match open.last_mut() {
            Some(Open::Array { items }) => *items += 1,
            Some(Open::Object { members, next }) if *next == Next::Value => {
                *members += 1;
                *next = Next::Comma;
            }
            _ => {}
        }
    }
    let mut open: Vec<Open> = Vec::new();
    let mut total = VALUE;
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        match b {
            b'"' => {
                let end = crate::jsonrpc::string_end(text, i + 1);
                let len = end.map_or(text.len(), |e| e - 1) - (i + 1);
                match open.last_mut() {
                    Some(Open::Object {
                        next: next @ Next::Key,
                        ..
                    }) => {
                        *next = Next::Value;
                        if names && reserved_name(&text[i + 1..i + 1 + len]) {
                            return Err(Unparsable::ReservedName);
                        }
                    }
                    _ => value_starts(&mut open),
                }
                total = total.saturating_add(block(len));
                i = end.unwrap_or(text.len());
            }
            b'{' | b'[' => {
                value_starts(&mut open);
                if open.len() >= SCAN_MAX_DEPTH {
                    return Err(Unparsable::TooLarge);
                }
                open.push(if b == b'{' {
                    Open::Object {
                        members: 0,
                        next: Next::Key,
                    }
                } else {
                    Open::Array { items: 0 }
                });
                i += 1;
            }
            b'}' | b']' => {
                if let Some(closed) = open.pop() {
                    total = total.saturating_add(closed.held());
                }
                i += 1;
            }
            b',' => {
                if let Some(Open::Object { next, .. }) = open.last_mut() {
                    *next = Next::Key;
                }
                i += 1;
            }
            b':' | b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            _ => {
                // A number or a literal: no heap of its own.
                value_starts(&mut open);
                i += 1;
                while text.get(i).is_some_and(|c| {
                    !matches!(
                        c,
                        b',' | b':'
                            | b'"'
                            | b'['
                            | b']'
                            | b'{'
                            | b'}'
                            | b' '
                            | b'\t'
                            | b'\n'
                            | b'\r'
                    )
                }) {
                    i += 1;
                }
            }
        }
        if total > limit {
            return Err(Unparsable::TooLarge);
        }
    }
    // Text that ends inside containers: what the parser had built when it stopped.
    let unclosed: usize = open.iter().map(Open::held).sum();
    let total = total.saturating_add(unclosed);
    if total > limit {
        return Err(Unparsable::TooLarge);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::{Unparsable, check_parse, may_name_reserved};

    /// A `$` is found plain and escaped, wherever it is; an escaped backslash followed
    /// by `u0024` is a backslash and text, not a `$`.
    #[test]
    fn a_dollar_is_found_plain_or_escaped() {
        assert!(may_name_reserved(br#"{"a":"$"}"#));
        assert!(may_name_reserved(br#"{"\u0024serde_json::x":1}"#));
        assert!(may_name_reserved(br#"{"a\n":"\\\u0024"}"#));
        assert!(may_name_reserved(b"\\u0024"));
        assert!(!may_name_reserved(br#"{"a":"\\u0024"}"#));
        assert!(!may_name_reserved(br#"{"a":"x\n\t\"y"}"#));
        assert!(!may_name_reserved(b"\\"));
        assert!(!may_name_reserved(b""));
        let reserved = br#"{"a":{"\u0024serde_json::private::RawValue":"1"}}"#;
        assert_eq!(
            check_parse(reserved, usize::MAX),
            Err(Unparsable::ReservedName)
        );
        assert_eq!(
            check_parse(br#"{"a":"\\u0024serde_json::"}"#, usize::MAX),
            Ok(())
        );
    }
}
