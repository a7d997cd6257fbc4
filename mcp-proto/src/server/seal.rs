//! Sealed, single-use `requestState` (2026-07-28): the state a client carries between the
//! rounds of a tool call is attacker-controlled, so it travels signed and bound to what
//! it was issued for.
//!
//! A token is `v1.<key id>.<payload>.<tag>`: the payload is base64url JSON holding the
//! [`RequestState`], a digest of the authenticated principal, the method, a digest of
//! the request's important parameters, an expiry in Unix milliseconds and a random
//! nonce; the tag is HMAC-SHA256 over `v1.<key id>.<payload>` under the key the id names
//! ([`KeyRing`]: the newest key seals, every key still in the ring opens, so keys rotate
//! without refusing states in flight). Opening checks, in order: shape and size, a known
//! key, the tag (compared in constant time), the expiry, the principal, the method and
//! parameters, and, when the call asks for it, that the nonce was never consumed before
//! ([`ConsumptionStore`]). Any failure is a [`StateRefusal`]; the server answers `-32602`
//! without running the handler.
//!
//! Time and entropy are arguments: the expiry is the caller's `now` (a machine
//! [`Instant`]) placed on the Unix clock by the epoch given at construction, and nonces
//! come from a generator seeded by the caller.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::state::{RequestState, RequestStateCodec, StateContext, StateRefusal};
use crate::Instant;
use crate::auth::crypto::{Drbg, constant_time_eq, hmac_sha256, sha256};

/// The longest token opened; anything longer is refused unread. A server never issues
/// a longer `requestState`, whatever its codec: a call whose answers would need one is
/// refused (`-32602`) instead, before sealing when the answers alone take more as JSON.
pub const MAX_SEALED_STATE_BYTES: usize = 256 * 1024;
/// The longest key id.
pub const MAX_KEY_ID_BYTES: usize = 32;
/// How long a sealed state stays valid by default.
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(10 * 60);

const VERSION: &str = "v1";

/// The keys that seal and open states, each under an id that travels in the token.
/// The newest key seals; every key in the ring opens.
///
/// ```
/// use mcp_proto::server::KeyRing;
///
/// let mut ring = KeyRing::new("k1", [7; 32]).unwrap();
/// ring.rotate("k2", [9; 32]).unwrap();
/// assert_eq!(ring.current_id(), "k2");
/// assert!(ring.contains("k1"), "states sealed under k1 still open");
/// ring.retire("k1");
/// assert!(!ring.contains("k1"));
/// ```
#[derive(Clone)]
pub struct KeyRing {
    /// Oldest first; the last one seals.
    keys: Vec<(String, [u8; 32])>,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.keys.iter().map(|(id, _)| id.as_str()).collect();
        f.debug_struct("KeyRing").field("ids", &ids).finish()
    }
}

/// A key id that cannot travel in a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a key id must be 1 to {MAX_KEY_ID_BYTES} characters of A-Z, a-z, 0-9, '-' or '_'")]
pub struct InvalidKeyId;

impl KeyRing {
    /// A ring with one key.
    ///
    /// # Errors
    /// [`InvalidKeyId`] for an empty or long id, or one with other characters than
    /// letters, digits, `-` and `_`.
    pub fn new(id: &str, secret: [u8; 32]) -> Result<KeyRing, InvalidKeyId> {
        let mut ring = KeyRing { keys: Vec::new() };
        ring.rotate(id, secret)?;
        Ok(ring)
    }

    /// Adds a key that seals from now on (the others still open). An id already in the
    /// ring is replaced.
    ///
    /// # Errors
    /// [`InvalidKeyId`] as for [`KeyRing::new`].
    pub fn rotate(&mut self, id: &str, secret: [u8; 32]) -> Result<(), InvalidKeyId> {
        let valid = !id.is_empty()
            && id.len() <= MAX_KEY_ID_BYTES
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            return Err(InvalidKeyId);
        }
        self.keys.retain(|(k, _)| k != id);
        self.keys.push((id.to_owned(), secret));
        Ok(())
    }

    /// Adds a key that opens states but does not seal them: the first step of a rotation
    /// without downtime across several instances (every instance learns the new key
    /// first, and only then does any of them seal with it, through
    /// [`KeyRing::rotate`]). An id already in the ring is replaced, except the sealing
    /// key's, which stays as it is.
    ///
    /// # Errors
    /// [`InvalidKeyId`] as for [`KeyRing::new`].
    pub fn add_opening(&mut self, id: &str, secret: [u8; 32]) -> Result<(), InvalidKeyId> {
        if self.current_id() == id {
            return Ok(());
        }
        self.rotate(id, secret)?;
        // `rotate` made it the last (sealing) key: move it just before the sealing one.
        let len = self.keys.len();
        if len >= 2 {
            self.keys.swap(len - 1, len - 2);
        }
        Ok(())
    }

    /// Removes a key: states sealed under it no longer open. The key that seals stays.
    pub fn retire(&mut self, id: &str) {
        if self.keys.len() > 1 || self.current_id() != id {
            let current = self.keys.len() - 1;
            let mut at = 0;
            self.keys.retain(|(k, _)| {
                let keep = k != id || at == current;
                at += 1;
                keep
            });
        }
    }

    /// The id of the key that seals.
    #[must_use]
    pub fn current_id(&self) -> &str {
        self.keys.last().map_or("", |(id, _)| id.as_str())
    }

    /// Whether a key with this id opens states.
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        self.keys.iter().any(|(k, _)| k == id)
    }

    fn secret(&self, id: &str) -> Option<&[u8; 32]> {
        self.keys.iter().find(|(k, _)| k == id).map(|(_, s)| s)
    }

    fn current(&self) -> (&str, &[u8; 32]) {
        let (id, secret) = self.keys.last().expect("a ring always holds a key");
        (id, secret)
    }
}

/// Remembers the nonces of consumed states until they expire, so that a state the
/// handler wants used once is refused the second time. Implement it over a shared
/// store when several server processes open each other's states.
///
/// A bounded store is shared by every client of the server: it should bound what one
/// principal may hold too, so that a client filling it refuses only itself (see
/// [`MemoryConsumptionStore`]).
pub trait ConsumptionStore: Send {
    /// Records `nonce`, of a state opened by `principal` (the authenticated principal
    /// of the request, `None` for an unauthenticated client), as consumed until
    /// `expires_unix_ms`.
    ///
    /// # Errors
    ///
    /// [`ConsumeRefusal::Consumed`] when it was consumed before; [`ConsumeRefusal::Full`],
    /// [`ConsumeRefusal::ShareFull`] or [`ConsumeRefusal::Unavailable`] when it cannot be
    /// recorded now. Either way the state is refused (at most once wins over
    /// availability), but only the first tells the client its state was used.
    fn consume(
        &mut self,
        principal: Option<&str>,
        nonce: &[u8],
        expires_unix_ms: u64,
        now_unix_ms: u64,
    ) -> Result<(), ConsumeRefusal>;
}

/// Why a [`ConsumptionStore`] did not record a nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConsumeRefusal {
    /// It was consumed before.
    #[error("already used")]
    Consumed,
    /// The store holds as many unexpired nonces as it may.
    #[error("the store of used states is full")]
    Full,
    /// The principal holds as many unexpired nonces as one principal may; others may
    /// still be recorded.
    #[error("this principal's share of the store of used states is full")]
    ShareFull,
    /// The store could not be reached or failed (a store over the network).
    #[error("the store of used states is unavailable")]
    Unavailable,
}

/// An in-memory [`ConsumptionStore`] for one process, bounded: expired nonces are
/// forgotten, and when `capacity` unexpired nonces are held, new ones are refused
/// ([`ConsumeRefusal::Full`]). One principal holds at most its share (a quarter of
/// `capacity` unless set with [`MemoryConsumptionStore::per_principal`]); past it, its
/// new nonces are refused ([`ConsumeRefusal::ShareFull`]) and other principals' still
/// recorded. All unauthenticated clients are one principal.
#[derive(Debug)]
pub struct MemoryConsumptionStore {
    /// Nonce → (expiry, principal's key).
    seen: BTreeMap<Vec<u8>, (u64, PrincipalKey)>,
    /// Nonces by expiry, to forget the expired ones cheaply.
    order: BTreeSet<(u64, Vec<u8>)>,
    /// Unexpired nonces held per principal (no entry: none).
    held: BTreeMap<PrincipalKey, usize>,
    capacity: usize,
    share: usize,
}

/// A principal as the store keeps it: SHA-256 of its name, the same size however long
/// the name; `None` for unauthenticated clients.
type PrincipalKey = Option<[u8; 32]>;

impl MemoryConsumptionStore {
    /// A store holding at most `capacity` nonces, at most a quarter of them (at least
    /// one) of one principal.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        MemoryConsumptionStore {
            seen: BTreeMap::new(),
            order: BTreeSet::new(),
            held: BTreeMap::new(),
            capacity,
            share: (capacity / 4).max(1),
        }
    }

    /// The same store holding at most `share` nonces of one principal.
    #[must_use]
    pub fn per_principal(mut self, share: usize) -> Self {
        self.share = share;
        self
    }

    /// Nonces held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether no nonce is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

impl Default for MemoryConsumptionStore {
    fn default() -> Self {
        MemoryConsumptionStore::new(100_000)
    }
}

impl ConsumptionStore for MemoryConsumptionStore {
    fn consume(
        &mut self,
        principal: Option<&str>,
        nonce: &[u8],
        expires_unix_ms: u64,
        now_unix_ms: u64,
    ) -> Result<(), ConsumeRefusal> {
        // States are opened in any order (one sealed long ago after one sealed just now):
        // each nonce goes at its own expiry.
        while let Some((at, _)) = self.order.first() {
            if *at > now_unix_ms {
                break;
            }
            if let Some((_, old)) = self.order.pop_first()
                && let Some((_, who)) = self.seen.remove(&old)
                && let Some(n) = self.held.get_mut(&who)
            {
                *n -= 1;
                if *n == 0 {
                    self.held.remove(&who);
                }
            }
        }
        if self.seen.contains_key(nonce) {
            return Err(ConsumeRefusal::Consumed);
        }
        let who = principal.map(|p| sha256(p.as_bytes()));
        if self.seen.len() >= self.capacity {
            return Err(ConsumeRefusal::Full);
        }
        let theirs = self.held.entry(who).or_insert(0);
        if *theirs >= self.share {
            if *theirs == 0 {
                self.held.remove(&who);
            }
            return Err(ConsumeRefusal::ShareFull);
        }
        *theirs += 1;
        self.seen.insert(nonce.to_vec(), (expires_unix_ms, who));
        self.order.insert((expires_unix_ms, nonce.to_vec()));
        Ok(())
    }
}

/// What the tag covers besides the state.
#[derive(Serialize, Deserialize)]
struct Payload {
    #[serde(rename = "s")]
    state: RequestState,
    /// base64url SHA-256 of the principal, or absent for none.
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
    #[serde(rename = "m")]
    method: String,
    /// base64url digest of the important parameters.
    #[serde(rename = "d")]
    digest: String,
    /// Expiry, Unix milliseconds.
    #[serde(rename = "x")]
    expires: u64,
    /// base64url random nonce.
    #[serde(rename = "n")]
    nonce: String,
}

/// The [`RequestStateCodec`] for servers that face untrusted clients: HMAC-SHA256 under
/// a [`KeyRing`], bound to the principal, the method and the parameters, with an expiry,
/// and single use through a [`ConsumptionStore`] when the tool asks for it.
///
/// A token is `v1.<key id>.<payload>.<tag>`: base64url JSON holding the state, a digest
/// of the principal, the method, the parameters' digest, an expiry in Unix milliseconds
/// and a random nonce, then HMAC-SHA256 over `v1.<key id>.<payload>`. Opening checks, in
/// order: shape and size ([`MAX_SEALED_STATE_BYTES`]), a known key, the tag (in constant
/// time), the expiry, the principal, the method and parameters, and, for a single-use
/// state, that its nonce was not consumed before.
///
/// ```
/// use mcp_proto::Instant;
/// use mcp_proto::server::{
///     KeyRing, RequestState, RequestStateCodec, SealedStateCodec, StateContext, StateRefusal,
/// };
///
/// let ring = KeyRing::new("k1", [42; 32]).unwrap();
/// // The seed comes from the operating system in a real server; the epoch is the Unix
/// // time in milliseconds at `Instant::ZERO`.
/// let mut codec = SealedStateCodec::new(ring, &[1; 32], 1_800_000_000_000);
/// let state = RequestState::new("tools/call", "deploy", 1, vec!["ok".into()], Default::default());
/// let alice = StateContext::new(Instant::ZERO, Some("alice"), "tools/call", b"deploy {}");
/// let token = codec.seal(&alice, &state);
/// assert_eq!(codec.open(&alice, &token), Ok(state));
/// let mallory = StateContext::new(Instant::ZERO, Some("mallory"), "tools/call", b"deploy {}");
/// assert_eq!(codec.open(&mallory, &token), Err(StateRefusal::OtherPrincipal));
/// ```
pub struct SealedStateCodec {
    keys: KeyRing,
    ttl: Duration,
    epoch_unix_ms: u64,
    rng: Drbg,
    store: Box<dyn ConsumptionStore>,
    /// The store was given ([`SealedStateCodec::consumption_store`]), not the codec's
    /// own in-memory one: it is kept when the codec replaces another.
    store_given: bool,
}

impl std::fmt::Debug for SealedStateCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedStateCodec")
            .field("keys", &self.keys)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl SealedStateCodec {
    /// A codec sealing with `keys`, nonces drawn from a generator seeded with `seed` (at
    /// least 32 bytes from a real entropy source), expiries on the Unix clock placed by
    /// `epoch_unix_ms` (the Unix time, in milliseconds, of `Instant::ZERO`), states valid
    /// for [`DEFAULT_STATE_TTL`], consumption in a [`MemoryConsumptionStore`].
    #[must_use]
    pub fn new(keys: KeyRing, seed: &[u8], epoch_unix_ms: u64) -> Self {
        SealedStateCodec {
            keys,
            ttl: DEFAULT_STATE_TTL,
            epoch_unix_ms,
            rng: Drbg::new(seed),
            store: Box::new(MemoryConsumptionStore::default()),
            store_given: false,
        }
    }

    /// The same codec with another lifetime for the states it seals.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The same codec with another consumption store (one shared by every instance of
    /// a horizontally scaled server).
    #[must_use]
    pub fn consumption_store(mut self, store: Box<dyn ConsumptionStore>) -> Self {
        self.store = store;
        self.store_given = true;
        self
    }

    /// The key ring, to rotate or retire keys on a running server.
    pub fn keys_mut(&mut self) -> &mut KeyRing {
        &mut self.keys
    }

    fn unix_ms(&self, now: Instant) -> u64 {
        let since = u64::try_from(now.elapsed_since_origin().as_millis()).unwrap_or(u64::MAX);
        self.epoch_unix_ms.saturating_add(since)
    }
}

fn principal_digest(principal: Option<&str>) -> Option<String> {
    principal.map(|p| URL_SAFE_NO_PAD.encode(sha256(p.as_bytes())))
}

fn tag(secret: &[u8; 32], signed: &str) -> String {
    URL_SAFE_NO_PAD.encode(hmac_sha256(secret, &[signed.as_bytes()]))
}

impl RequestStateCodec for SealedStateCodec {
    fn protects(&self) -> bool {
        true
    }

    fn hand_over_used_states(&mut self) -> Option<Box<dyn ConsumptionStore>> {
        let empty: Box<dyn ConsumptionStore> = Box::new(MemoryConsumptionStore::default());
        Some(std::mem::replace(&mut self.store, empty))
    }

    fn take_over_used_states(&mut self, used: Box<dyn ConsumptionStore>) {
        if !self.store_given {
            self.store = used;
        }
    }

    fn seal(&mut self, context: &StateContext<'_>, state: &RequestState) -> String {
        let mut nonce = [0u8; 16];
        self.rng.fill(&mut nonce);
        let ttl = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let payload = Payload {
            state: state.clone(),
            principal: principal_digest(context.principal),
            method: context.method.to_owned(),
            digest: URL_SAFE_NO_PAD.encode(context.digest),
            expires: self.unix_ms(context.now).saturating_add(ttl),
            nonce: URL_SAFE_NO_PAD.encode(nonce),
        };
        // Serialising plain data cannot fail.
        let json = serde_json::to_vec(&payload).unwrap_or_default();
        let (id, secret) = self.keys.current();
        let signed = format!("{VERSION}.{id}.{}", URL_SAFE_NO_PAD.encode(json));
        let tag = tag(secret, &signed);
        format!("{signed}.{tag}")
    }

    fn open(
        &mut self,
        context: &StateContext<'_>,
        token: &str,
    ) -> Result<RequestState, StateRefusal> {
        if token.len() > MAX_SEALED_STATE_BYTES {
            return Err(StateRefusal::Malformed);
        }
        let (signed, given) = token.rsplit_once('.').ok_or(StateRefusal::Malformed)?;
        let mut parts = signed.splitn(3, '.');
        let (Some(VERSION), Some(id), Some(body)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(StateRefusal::Malformed);
        };
        let secret = self.keys.secret(id).ok_or(StateRefusal::UnknownKey)?;
        if !constant_time_eq(tag(secret, signed).as_bytes(), given.as_bytes()) {
            return Err(StateRefusal::Forged);
        }
        let json = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| StateRefusal::Malformed)?;
        let payload: Payload =
            serde_json::from_slice(&json).map_err(|_| StateRefusal::Malformed)?;
        let now = self.unix_ms(context.now);
        if payload.expires <= now {
            return Err(StateRefusal::Expired);
        }
        if payload.principal != principal_digest(context.principal) {
            return Err(StateRefusal::OtherPrincipal);
        }
        let digest = URL_SAFE_NO_PAD.encode(context.digest);
        if payload.method != context.method || payload.digest != digest {
            return Err(StateRefusal::OtherRequest);
        }
        if context.single_use {
            let nonce = URL_SAFE_NO_PAD
                .decode(&payload.nonce)
                .map_err(|_| StateRefusal::Malformed)?;
            match self
                .store
                .consume(context.principal, &nonce, payload.expires, now)
            {
                Ok(()) => {}
                Err(ConsumeRefusal::Consumed) => return Err(StateRefusal::Replayed),
                Err(why) => return Err(StateRefusal::Unrecorded(why)),
            }
        }
        Ok(payload.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> RequestState {
        RequestState::new("tools/call", "t", 1, vec!["k".into()], Default::default())
    }

    fn ctx(now: Instant, who: Option<&'static str>, args: &'static [u8]) -> StateContext<'static> {
        StateContext::new(now, who, "tools/call", args)
    }

    fn codec() -> SealedStateCodec {
        SealedStateCodec::new(KeyRing::new("k1", [3; 32]).unwrap(), &[5; 32], 1_000)
    }

    #[test]
    fn every_binding_is_checked() {
        let mut c = codec();
        let t0 = Instant::ZERO;
        let token = c.seal(&ctx(t0, Some("a"), b"x"), &state());
        assert_eq!(c.open(&ctx(t0, Some("a"), b"x"), &token), Ok(state()));
        assert_eq!(
            c.open(&ctx(t0, Some("b"), b"x"), &token),
            Err(StateRefusal::OtherPrincipal)
        );
        assert_eq!(
            c.open(&ctx(t0, None, b"x"), &token),
            Err(StateRefusal::OtherPrincipal)
        );
        assert_eq!(
            c.open(&ctx(t0, Some("a"), b"y"), &token),
            Err(StateRefusal::OtherRequest)
        );
        let other_method = StateContext::new(t0, Some("a"), "prompts/get", b"x");
        assert_eq!(
            c.open(&other_method, &token),
            Err(StateRefusal::OtherRequest)
        );
        let late = t0.saturating_add(DEFAULT_STATE_TTL);
        assert_eq!(
            c.open(&ctx(late, Some("a"), b"x"), &token),
            Err(StateRefusal::Expired)
        );
    }

    #[test]
    fn an_opening_key_opens_but_never_seals() {
        let mut ring = KeyRing::new("k1", [3; 32]).unwrap();
        ring.add_opening("k2", [4; 32]).unwrap();
        assert_eq!(ring.current_id(), "k1");
        assert!(ring.contains("k2"));
        // The sealing key's own id changes nothing; a bad id is refused.
        ring.add_opening("k1", [9; 32]).unwrap();
        assert_eq!(ring.current_id(), "k1");
        assert!(ring.add_opening("bad id", [4; 32]).is_err());
        // An instance that only learned k2 opens what one already sealing with k2 sealed.
        let cx = ctx(Instant::ZERO, None, b"x");
        let mut learned = SealedStateCodec::new(ring.clone(), &[5; 32], 1_000);
        let mut sealing = ring;
        sealing.rotate("k2", [4; 32]).unwrap();
        let mut rotated = SealedStateCodec::new(sealing, &[6; 32], 1_000);
        let token = rotated.seal(&cx, &state());
        assert!(token.starts_with("v1.k2."), "{token}");
        assert_eq!(learned.open(&cx, &token), Ok(state()));
        // And the other way round: the old key still opens on the rotated instance.
        let old = learned.seal(&cx, &state());
        assert!(old.starts_with("v1.k1."), "{old}");
        assert_eq!(rotated.open(&cx, &old), Ok(state()));
    }

    #[test]
    fn tampering_and_unknown_keys_are_refused() {
        let mut c = codec();
        let cx = ctx(Instant::ZERO, None, b"x");
        let token = c.seal(&cx, &state());
        let (signed, tag) = token.rsplit_once('.').unwrap();
        // A payload of the attacker's making under the real tag.
        let mut forged_state = state();
        forged_state.round = 9;
        let other = c.seal(&cx, &forged_state);
        let other_body = other.split('.').nth(2).unwrap();
        let parts: Vec<&str> = signed.split('.').collect();
        let spliced = format!("{}.{}.{other_body}.{tag}", parts[0], parts[1]);
        assert_eq!(c.open(&cx, &spliced), Err(StateRefusal::Forged));
        assert_eq!(
            c.open(&cx, &format!("{signed}.AAAA")),
            Err(StateRefusal::Forged)
        );
        let renamed = token.replacen("v1.k1.", "v1.k9.", 1);
        assert_eq!(c.open(&cx, &renamed), Err(StateRefusal::UnknownKey));
        for junk in ["", "v1", "v2.k1.e30.AAAA", "plain1:{}", "v1.k1"] {
            assert!(c.open(&cx, junk).is_err(), "{junk}");
        }
        let huge = "v".repeat(MAX_SEALED_STATE_BYTES + 1);
        assert_eq!(c.open(&cx, &huge), Err(StateRefusal::Malformed));
    }

    #[test]
    fn rotation_keeps_states_in_flight_and_retiring_ends_them() {
        let mut c = codec();
        let cx = ctx(Instant::ZERO, None, b"x");
        let old = c.seal(&cx, &state());
        c.keys_mut().rotate("k2", [4; 32]).unwrap();
        let new = c.seal(&cx, &state());
        assert!(new.starts_with("v1.k2."));
        assert_eq!(c.open(&cx, &old), Ok(state()));
        c.keys_mut().retire("k1");
        assert_eq!(c.open(&cx, &old), Err(StateRefusal::UnknownKey));
        assert_eq!(c.open(&cx, &new), Ok(state()));
        // The sealing key cannot be retired.
        c.keys_mut().retire("k2");
        assert_eq!(c.keys_mut().current_id(), "k2");
        assert_eq!(KeyRing::new("bad id", [0; 32]).unwrap_err(), InvalidKeyId);
    }

    #[test]
    fn single_use_states_open_once() {
        let mut c = codec();
        let once = ctx(Instant::ZERO, None, b"x").single_use(true);
        let token = c.seal(&once, &state());
        assert_eq!(c.open(&once, &token), Ok(state()));
        assert_eq!(c.open(&once, &token), Err(StateRefusal::Replayed));
        // Reuse is allowed where the tool did not ask for single use.
        let many = ctx(Instant::ZERO, None, b"x");
        let token = c.seal(&many, &state());
        assert_eq!(c.open(&many, &token), Ok(state()));
        assert_eq!(c.open(&many, &token), Ok(state()));
    }

    #[test]
    fn the_memory_store_forgets_expired_nonces_and_fails_closed_when_full() {
        let mut store = MemoryConsumptionStore::new(2).per_principal(2);
        assert_eq!(store.consume(None, b"a", 10, 0), Ok(()));
        assert_eq!(store.consume(None, b"b", 20, 0), Ok(()));
        assert_eq!(
            store.consume(None, b"a", 10, 5),
            Err(ConsumeRefusal::Consumed)
        );
        assert_eq!(
            store.consume(None, b"c", 30, 5),
            Err(ConsumeRefusal::Full),
            "full: refused, not evicted"
        );
        assert_eq!(store.consume(None, b"c", 30, 10), Ok(()), "a expired at 10");
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn one_principal_holds_only_its_share_of_the_memory_store() {
        let mut store = MemoryConsumptionStore::new(8);
        for n in [b"m1", b"m2"] {
            assert_eq!(store.consume(Some("mallory"), n, 100, 0), Ok(()));
        }
        assert_eq!(
            store.consume(Some("mallory"), b"m3", 100, 0),
            Err(ConsumeRefusal::ShareFull),
            "a quarter of 8"
        );
        assert_eq!(store.consume(Some("alice"), b"a1", 100, 0), Ok(()));
        assert_eq!(store.consume(None, b"n1", 100, 0), Ok(()));
        // Replays are still told apart from a full share.
        assert_eq!(
            store.consume(Some("mallory"), b"m1", 100, 0),
            Err(ConsumeRefusal::Consumed)
        );
        // Its share comes back as its nonces expire, and a principal holding none is
        // not remembered.
        assert_eq!(store.consume(Some("mallory"), b"m3", 200, 100), Ok(()));
        assert_eq!(store.len(), 1);
        assert_eq!(store.held.len(), 1);
        assert_eq!(
            MemoryConsumptionStore::new(0).consume(None, b"x", 1, 0),
            Err(ConsumeRefusal::Full)
        );
    }

    /// A principal refused with a share of nothing is not remembered: the store keeps no
    /// count for each of the principals it turned away, however many they are.
    #[test]
    fn a_principal_refused_for_its_share_is_not_remembered() {
        let mut store = MemoryConsumptionStore::new(8).per_principal(0);
        for who in ["mallory-1", "mallory-2", "mallory-3"] {
            assert_eq!(
                store.consume(Some(who), who.as_bytes(), 100, 0),
                Err(ConsumeRefusal::ShareFull)
            );
        }
        assert_eq!(store.len(), 0);
        assert!(store.held.is_empty(), "{:?}", store.held);
    }

    /// States are not opened in the order they expire (one sealed long ago is opened
    /// after one sealed just now): a nonce past its expiry is forgotten then, not when
    /// every nonce recorded before it has expired too, and its principal's share and
    /// the store's room come back with it.
    #[test]
    fn the_memory_store_forgets_each_nonce_at_its_own_expiry() {
        let mut store = MemoryConsumptionStore::new(8).per_principal(2);
        assert_eq!(store.consume(Some("mallory"), b"fresh", 600, 0), Ok(()));
        assert_eq!(store.consume(Some("alice"), b"a-late", 600, 0), Ok(()));
        assert_eq!(store.consume(Some("alice"), b"a-old", 100, 0), Ok(()));
        assert_eq!(
            store.consume(Some("alice"), b"a-next", 700, 150),
            Ok(()),
            "a-old expired at 100"
        );
        assert_eq!(store.len(), 3);
    }
}
