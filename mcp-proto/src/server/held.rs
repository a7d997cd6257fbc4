//! What a value a client sent costs the server to keep: its bytes in memory, estimated
//! from above. A parsed value costs many times its JSON text (`{"a":0}`, 7 bytes of
//! text, takes a whole B-tree node of about 630 bytes), so whatever the server keeps
//! for a client (task arguments and results, answers between rounds, capabilities) is
//! counted this way, never by its text.

use serde_json::Value;

use crate::jsonrpc::ErrorObject;

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
            let nodes = match members.len() {
                0 => 0,
                n => 1 + (n - 1) / NODE_MIN_MEMBERS,
            };
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
