//! The buffer requests are written into: reused while requests stay large, given back
//! once small ones follow a large one.

use serde_json::{Value, json};

use super::Session;
use super::approval_deadlines::connected;
use crate::Instant;
use crate::client::CallRequest;

/// One call with a `text` argument of `size` bytes, written into `out` as an adapter
/// does (its buffer emptied after the previous write), then answered. Returns where the
/// request was written.
fn call(session: &mut Session, out: &mut Vec<u8>, size: usize) -> *const u8 {
    let now = Instant::ZERO;
    let request = CallRequest::call_tool("echo", json!({ "text": "x".repeat(size) }));
    session.call(now, request).expect("call");
    out.clear();
    session.poll_transmit(now, out);
    let sent: Value = serde_json::from_slice(out.trim_ascii_end()).expect("one request");
    let reply = json!({"jsonrpc":"2.0","id":sent["id"],"result":{"content":[]}});
    session.handle_input(now, format!("{reply}\n").as_bytes());
    while session.poll_event().is_some() {}
    out.as_ptr()
}

/// A run of 64 KiB requests is written into the same two buffers over and over (no
/// allocation per request); once 100 small requests followed it, neither the machine's
/// spare nor the buffer it handed out holds more than a few KiB.
#[test]
fn a_large_request_leaves_no_large_buffer_behind_once_small_ones_follow() {
    let mut session = connected(Instant::ZERO);
    let mut out = Vec::new();
    let mut buffers = std::collections::BTreeSet::new();
    for i in 0..20 {
        let at = call(&mut session, &mut out, 64 * 1024);
        if i >= 2 {
            buffers.insert(at);
        }
    }
    assert!(
        buffers.len() <= 2,
        "64 KiB requests were written into {} buffers",
        buffers.len()
    );
    assert!(session.spare.capacity().max(out.capacity()) >= 64 * 1024);
    for _ in 0..100 {
        call(&mut session, &mut out, 16);
    }
    let held = session.spare.capacity().max(out.capacity());
    assert!(
        held <= 16 * 1024,
        "{held} bytes of buffer kept after 100 small requests"
    );
}
