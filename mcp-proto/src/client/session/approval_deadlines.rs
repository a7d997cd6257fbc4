//! The hold of every deadline while a person approves an authorization, against calls
//! made during it: a call is held only from when it was made.

use std::time::Duration;

use serde_json::{Value, json};

use super::{CallError, CallRequest, ConnectionState, Event, Session};
use crate::Instant;
use crate::client::ClientConfig;
use crate::version::EraMode;

/// A stdio session past its 2025-11-25 handshake, its output drained.
pub(super) fn connected(now: Instant) -> Session {
    let config = ClientConfig::new("deadlines", "1").era_mode(EraMode::Legacy);
    let mut session = Session::new(config, now);
    let mut out = Vec::new();
    session.poll_transmit(now, &mut out);
    let line = out.split(|b| *b == b'\n').next().unwrap_or_default();
    let init: Value = serde_json::from_slice(line).expect("initialize");
    let reply = json!({"jsonrpc":"2.0","id":init["id"],"result":{
        "protocolVersion":"2025-11-25","capabilities":{"tools":{}},
        "serverInfo":{"name":"s","version":"1"}}});
    session.handle_input(now, format!("{reply}\n").as_bytes());
    assert!(
        matches!(session.state(), ConnectionState::Ready(..)),
        "{:?}",
        session.state()
    );
    out.clear();
    session.poll_transmit(now, &mut out);
    session
}

/// A person takes 1000 s to approve; a call with a 60 s timeout made one second before
/// the approval ends was held for that one second only. It is given up 61 s after it
/// was made at the latest, not 60 s plus the whole approval (1060 s) after.
#[test]
fn a_call_made_during_an_approval_is_held_only_from_when_it_was_made() {
    let start = Instant::ZERO;
    let mut session = connected(start);
    session.pause_for_approval(start);
    let made = start + Duration::from_secs(999);
    let request = CallRequest::call_tool("t", json!({})).timeout(Duration::from_secs(60));
    let call = session.call(made, request).expect("call");
    session.resume_after_approval(start + Duration::from_secs(1000));
    let due = session.poll_timeout().expect("the call's deadline");
    let latest = made + Duration::from_secs(61);
    assert!(
        due <= latest,
        "the call is due {:?} after it was made (timeout 60 s, held 1 s)",
        due.saturating_duration_since(made)
    );
    session.handle_timeout(latest);
    let outcome = std::iter::from_fn(|| session.poll_event()).find_map(|e| match e {
        Event::CallCompleted { call: c, outcome } if c == call => Some(outcome),
        _ => None,
    });
    assert!(
        matches!(outcome, Some(Err(CallError::Timeout(_)))),
        "{outcome:?}"
    );
}
