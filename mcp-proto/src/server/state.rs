//! 2026-07-28 `requestState`: what the server needs to resume a tool call on the client's
//! MRTR retry, carried by the client as an opaque string.
//!
//! The machine keeps nothing between rounds of a modern call (the spec forbids inferring
//! state from the connection), so the state holds everything: which call it belongs to,
//! the round, the keys asked for in the last round, and the answers of earlier rounds
//! (the client sends only the latest round's `inputResponses`).
//!
//! The seam is [`RequestStateCodec`]. [`PlainStateCodec`] writes the state as readable
//! JSON and trusts what comes back, which lets a client forge earlier answers or skip
//! rounds. That is acceptable only while no handler bases authorisation or business
//! decisions on it. The sealed codec (HMAC over the state plus an expiry, with entropy
//! supplied by the adapter) is a later piece of work; it will implement the same trait.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The resumable part of a tool call that asked for input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestState {
    /// The method the state belongs to (`tools/call`).
    pub method: String,
    /// The tool name; a retry naming another tool is refused.
    pub name: String,
    /// Input rounds completed so far (1 after the first `input_required`).
    pub round: u32,
    /// The keys asked for in the last round; other `inputResponses` keys are ignored.
    pub asked: Vec<String>,
    /// Answers of the earlier rounds, by key.
    pub inputs: Map<String, Value>,
}

impl RequestState {
    /// A state.
    #[must_use]
    pub fn new(
        method: impl Into<String>,
        name: impl Into<String>,
        round: u32,
        asked: Vec<String>,
        inputs: Map<String, Value>,
    ) -> Self {
        RequestState {
            method: method.into(),
            name: name.into(),
            round,
            asked,
            inputs,
        }
    }
}

/// Turns a [`RequestState`] into the opaque `requestState` string and back.
pub trait RequestStateCodec: Send {
    /// The string to send as `requestState`.
    fn seal(&mut self, state: &RequestState) -> String;

    /// Reads back a `requestState` the client echoed; `None` when it is malformed,
    /// tampered with, expired or already used. The caller answers `-32602`.
    fn open(&mut self, token: &str) -> Option<RequestState>;
}

/// The unprotected codec: `plain1:` followed by the state as JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlainStateCodec;

const PLAIN_PREFIX: &str = "plain1:";

impl RequestStateCodec for PlainStateCodec {
    fn seal(&mut self, state: &RequestState) -> String {
        // Serialising plain data cannot fail; an empty body would only fail `open`.
        let body = serde_json::to_string(state).unwrap_or_default();
        format!("{PLAIN_PREFIX}{body}")
    }

    fn open(&mut self, token: &str) -> Option<RequestState> {
        serde_json::from_str(token.strip_prefix(PLAIN_PREFIX)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::{PlainStateCodec, RequestState, RequestStateCodec};

    #[test]
    fn plain_states_open_to_what_was_sealed() {
        let mut inputs = Map::new();
        inputs.insert(
            "k".to_owned(),
            json!({"action": "accept", "content": {"n": 3}}),
        );
        // A number whose shortest form the default `serde_json` float parser reads back
        // one unit in the last place off: earlier answers must survive every round as
        // they are.
        let tiny = f64::from_bits(0x0b0d_0f11_1315_1719);
        inputs.insert("f".to_owned(), json!([tiny, 0.1, 1e308, -2.5e-300]));
        let state = RequestState::new("tools/call", "t", 2, vec!["k".to_owned()], inputs);
        let mut codec = PlainStateCodec;
        let token = codec.seal(&state);
        assert!(token.starts_with("plain1:"));
        assert_eq!(codec.open(&token), Some(state.clone()));
        assert_eq!(codec.open("plain1:{"), None);
        assert_eq!(codec.open(&token[1..]), None);
        // Reading a number the client sent and writing it back gives the same text.
        let text = "1.9353172926179995e-255";
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(v.to_string(), text);
    }
}
