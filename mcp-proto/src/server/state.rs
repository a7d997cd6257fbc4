//! 2026-07-28 `requestState`: what the server needs to resume a tool call on the client's
//! MRTR retry, carried by the client as an opaque string.
//!
//! The machine keeps nothing between rounds of a modern call (the spec forbids inferring
//! state from the connection), so the state holds everything: which call it belongs to,
//! the round, the keys asked for in the last round, and the answers of earlier rounds
//! (the client sends only the latest round's `inputResponses`).
//!
//! The seam is [`RequestStateCodec`], which sees the [`StateContext`] of every seal and
//! open: the time, the authenticated principal, the method and a digest of the request's
//! important parameters. [`SealedStateCodec`](super::SealedStateCodec) signs the state
//! and binds it to that context (the codec for any server facing untrusted clients);
//! [`PlainStateCodec`] writes readable JSON and trusts what comes back, which lets a
//! client forge earlier answers or skip rounds: for tests and trusted pipes only.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Instant;
use crate::auth::crypto::sha256;

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

/// What a state is sealed for and opened against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StateContext<'a> {
    /// The machine's time.
    pub now: Instant,
    /// The authenticated principal of the request, as the embedding application
    /// established it (never taken from `clientInfo`); `None` when there is none.
    pub principal: Option<&'a str>,
    /// The method (`tools/call`).
    pub method: &'a str,
    /// SHA-256 of the request's important parameters (for `tools/call`: the tool name
    /// and its arguments).
    pub digest: [u8; 32],
    /// The state may be opened once only (the tool asked for it).
    pub single_use: bool,
}

impl<'a> StateContext<'a> {
    /// The context of a request for `method` whose important parameters serialise to
    /// `important`.
    #[must_use]
    pub fn new(
        now: Instant,
        principal: Option<&'a str>,
        method: &'a str,
        important: &[u8],
    ) -> Self {
        StateContext {
            now,
            principal,
            method,
            digest: sha256(important),
            single_use: false,
        }
    }

    /// The same context, opening the state at most once when `once`.
    #[must_use]
    pub fn single_use(mut self, once: bool) -> Self {
        self.single_use = once;
        self
    }
}

/// Why a `requestState` was refused. The server answers `-32602` naming it, without
/// running the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateRefusal {
    /// Not a token of this codec, or too long.
    #[error("malformed")]
    Malformed,
    /// Sealed under a key the server does not hold (retired, or never its own).
    #[error("unknown key")]
    UnknownKey,
    /// The signature does not match: tampered with.
    #[error("tampered with")]
    Forged,
    /// Past its expiry.
    #[error("expired")]
    Expired,
    /// Issued to another principal.
    #[error("issued to another principal")]
    OtherPrincipal,
    /// Issued for another method, tool or arguments.
    #[error("issued for another request")]
    OtherRequest,
    /// Single use, and used before.
    #[error("already used")]
    Replayed,
    /// Single use, and its use could not be recorded now (the store of used states is
    /// full or unavailable): refused, though the client did nothing wrong.
    #[error("its use cannot be recorded now: {0}")]
    Unrecorded(super::ConsumeRefusal),
}

/// Turns a [`RequestState`] into the opaque `requestState` string and back.
pub trait RequestStateCodec: Send {
    /// The string to send as `requestState`, for a request in `context`.
    fn seal(&mut self, context: &StateContext<'_>, state: &RequestState) -> String;

    /// Reads back a `requestState` the client echoed with a request in `context`.
    ///
    /// # Errors
    /// A [`StateRefusal`] when it is malformed, tampered with, expired, issued for
    /// another principal or request, or already used.
    fn open(
        &mut self,
        context: &StateContext<'_>,
        token: &str,
    ) -> Result<RequestState, StateRefusal>;

    /// Whether the codec protects what it seals (signed, bound to its context). The
    /// adapters replace a codec that does not with a sealing one under a fresh key
    /// ([`Server::seal_request_states`](super::Server::seal_request_states)).
    fn protects(&self) -> bool {
        false
    }

    /// Gives up the record of single-use states this codec has seen used, when the server
    /// replaces it ([`Server::set_state_codec`](super::Server::set_state_codec)), for the
    /// codec that takes its place. `None` (the default) for a codec that keeps none.
    fn hand_over_used_states(&mut self) -> Option<Box<dyn super::ConsumptionStore>> {
        None
    }

    /// Takes over the record of used single-use states of the codec it replaces (see
    /// [`RequestStateCodec::hand_over_used_states`]), unless it was given one of its
    /// own. The default drops it.
    fn take_over_used_states(&mut self, used: Box<dyn super::ConsumptionStore>) {
        drop(used);
    }
}

/// The unprotected codec: `plain1:` followed by the state as JSON. It checks nothing of
/// the context; use [`SealedStateCodec`](super::SealedStateCodec) for any server that
/// faces untrusted clients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlainStateCodec;

const PLAIN_PREFIX: &str = "plain1:";

impl RequestStateCodec for PlainStateCodec {
    fn seal(&mut self, _: &StateContext<'_>, state: &RequestState) -> String {
        // Serialising plain data cannot fail; an empty body would only fail `open`.
        let body = serde_json::to_string(state).unwrap_or_default();
        format!("{PLAIN_PREFIX}{body}")
    }

    fn open(&mut self, _: &StateContext<'_>, token: &str) -> Result<RequestState, StateRefusal> {
        let body = token
            .strip_prefix(PLAIN_PREFIX)
            .ok_or(StateRefusal::Malformed)?;
        serde_json::from_str(body).map_err(|_| StateRefusal::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::{PlainStateCodec, RequestState, RequestStateCodec, StateContext};
    use crate::Instant;

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
        let cx = StateContext::new(Instant::ZERO, None, "tools/call", b"");
        let token = codec.seal(&cx, &state);
        assert!(token.starts_with("plain1:"));
        assert_eq!(codec.open(&cx, &token), Ok(state.clone()));
        assert!(codec.open(&cx, "plain1:{").is_err());
        assert!(codec.open(&cx, &token[1..]).is_err());
        // Reading a number the client sent and writing it back gives the same text.
        let text = "1.9353172926179995e-255";
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(v.to_string(), text);
    }
}
