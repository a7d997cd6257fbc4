//! Legacy sessions shared between server processes: the [`SessionStore`] an
//! [`HttpEndpoint`](super::HttpEndpoint) keeps the shareable part of each session in, so
//! that a session initialized by one process is known to every other process behind the
//! same URL, and [`MemorySessionStore`], a bounded one in memory that endpoints of one
//! process may share.
//!
//! # Theory of operation
//!
//! What a session is made of splits in two:
//!
//! * **Shared** ([`SessionRecord`]): the negotiated version, the client's capabilities,
//!   whether `notifications/initialized` arrived, the `logging/setLevel` level and the
//!   resource subscriptions. Whatever process serves a request of the session needs them
//!   to answer as the session's server.
//! * **Process-local**: calls parked waiting for the client's answer to a server→client
//!   request, the ids of those requests, open and detached streams, the standalone `GET`
//!   stream, and the task scope (tasks are process-local, so each process gives a session
//!   a scope of its own). A parked call lives where its stream is; an answer posted to
//!   another process is dropped there (202) like any answer to an id it did not send.
//!
//! The endpoint keeps its own table of sessions (the local part) and, with a store,
//! consults the store for every request naming a session: a session the store does not
//! know has ended (a `DELETE` on another process, or the store's idle expiry), and the
//! local copy goes; so has one whose record says it was last used longer ago than the
//! endpoint's idle timeout ([`SessionRecord::last_use`], kept by a store in the same
//! process), and the endpoint removes it from the store; a session it knows but the
//! endpoint does not is adopted (an empty local part, a fresh task scope); the shared
//! part of a known one is refreshed from the store. After each request the shared part
//! is saved back, stamped with the time of that use, which also tells the store the
//! session is in use. While a request or a stream of a session is live on an endpoint
//! (a client listening on its `GET` stream, or waiting for a long call), that endpoint
//! also touches its record ([`SessionStore::touch`]) every half idle timeout, from its
//! timer ([`HttpEndpoint::poll_timeout`](super::HttpEndpoint::poll_timeout)), so that
//! the session does not look idle elsewhere. Two processes serving the same session at once write
//! last-wins; the shared part only changes by the client's own requests.
//!
//! The store is called synchronously, under whatever lock the adapter holds around the
//! endpoint, and must not call back into it. A store doing network IO (one over Redis)
//! blocks the endpoint for that long: bounding that time (socket timeouts) is the
//! store's business. Records coming out of a store are untrusted input:
//! [`SessionRecord::decode`] bounds and checks them.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Instant;
use crate::client::LogLevel;
use crate::version::{Era, ProtocolVersion};

/// The largest encoded [`SessionRecord`] decoded; anything longer is refused unread.
pub const MAX_SESSION_RECORD_BYTES: usize = 256 * 1024;
/// The most subscriptions a decoded record may hold.
pub const MAX_RECORD_SUBSCRIPTIONS: usize = 1024;
/// The longest subscribed URI a decoded record may hold.
const MAX_RECORD_URI_BYTES: usize = 8 * 1024;
/// The deepest JSON a decoded record may hold (its capabilities object is the client's).
const MAX_RECORD_DEPTH: usize = 32;

/// The part of a legacy session every process serving it must know.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The version `initialize` negotiated (a legacy one).
    pub version: ProtocolVersion,
    /// The client's capabilities object, verbatim.
    pub client_capabilities: Value,
    /// `notifications/initialized` arrived.
    pub initialized: bool,
    /// The level set by `logging/setLevel`; `None`: every level is sent.
    pub log_level: Option<LogLevel>,
    /// The resource URIs subscribed to.
    pub subscriptions: Vec<String>,
    /// The principal whose `initialize` opened it (see
    /// [`HttpEndpoint::handle_request_as`](super::HttpEndpoint::handle_request_as));
    /// `None` for an unauthenticated client. Only requests from that principal are
    /// served in the session.
    pub principal: Option<String>,
    /// When the session was last used, by the clock of the endpoint saving the record
    /// (which sets it at every save). Not part of the encoded form: an [`Instant`] is a
    /// point on the caller's own timeline and means nothing to another process, so
    /// [`SessionRecord::decode`] gives `None`. A store serving the endpoints of one
    /// process (whose caller gives them all the same clock) keeps it and gives it back:
    /// an endpoint then refuses (404) and removes a session idle past its
    /// [`session_idle_timeout`](super::HttpEndpointConfig::session_idle_timeout). A
    /// store in another process expires idle sessions by its own clock and may drop it.
    pub last_use: Option<LastUse>,
}

/// When a session was last used, on the timeline of the endpoint that saved its
/// [`SessionRecord`], and how long it may then stay idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LastUse {
    /// The endpoint's `now` when it served the session's request.
    pub at: Instant,
    /// The endpoint's
    /// [`session_idle_timeout`](super::HttpEndpointConfig::session_idle_timeout).
    pub idle_timeout: Duration,
}

impl LastUse {
    /// A use of the session at `at`, by an endpoint expiring it after `idle_timeout`.
    #[must_use]
    pub fn new(at: Instant, idle_timeout: Duration) -> Self {
        LastUse { at, idle_timeout }
    }

    /// Whether at `now` the session has been idle for its whole timeout.
    #[must_use]
    pub fn expired_at(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.at) >= self.idle_timeout
    }
}

/// The wire form of a [`SessionRecord`]: compact JSON with short keys.
#[derive(Serialize, Deserialize)]
struct Wire {
    v: String,
    c: Value,
    i: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    l: Option<LogLevel>,
    #[serde(default)]
    s: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<String>,
}

impl SessionRecord {
    /// The record as bytes, for a store that keeps bytes.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let wire = Wire {
            v: self.version.as_str().to_owned(),
            c: self.client_capabilities.clone(),
            i: self.initialized,
            l: self.log_level,
            s: self.subscriptions.clone(),
            p: self.principal.clone(),
        };
        // Serialising plain data cannot fail.
        serde_json::to_vec(&wire).unwrap_or_default()
    }

    /// A record from bytes a store gave back, checked as untrusted input: at most
    /// [`MAX_SESSION_RECORD_BYTES`], nesting bounded, a served-era (legacy) version, a
    /// capabilities object, at most [`MAX_RECORD_SUBSCRIPTIONS`] URIs of bounded length.
    ///
    /// # Errors
    /// [`SessionStoreError::Corrupt`] for anything else.
    pub fn decode(bytes: &[u8]) -> Result<SessionRecord, SessionStoreError> {
        if bytes.len() > MAX_SESSION_RECORD_BYTES {
            return Err(SessionStoreError::Corrupt);
        }
        crate::jsonrpc::check_nesting(bytes, MAX_RECORD_DEPTH)
            .map_err(|_| SessionStoreError::Corrupt)?;
        let wire: Wire = serde_json::from_slice(bytes).map_err(|_| SessionStoreError::Corrupt)?;
        let version = ProtocolVersion::parse(&wire.v)
            .filter(|v| v.era() == Era::Legacy)
            .ok_or(SessionStoreError::Corrupt)?;
        let uris_ok = wire.s.len() <= MAX_RECORD_SUBSCRIPTIONS
            && wire.s.iter().all(|u| u.len() <= MAX_RECORD_URI_BYTES)
            && wire
                .p
                .as_ref()
                .is_none_or(|p| p.len() <= MAX_RECORD_URI_BYTES);
        if !wire.c.is_object() || !uris_ok {
            return Err(SessionStoreError::Corrupt);
        }
        Ok(SessionRecord {
            version,
            client_capabilities: wire.c,
            initialized: wire.i,
            log_level: wire.l,
            subscriptions: wire.s,
            principal: wire.p,
            last_use: None,
        })
    }
}

/// Why a session store could not do what was asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionStoreError {
    /// The store cannot be reached or failed (the reason, for logs).
    #[error("the session store is unavailable: {0}")]
    Unavailable(String),
    /// What the store holds for the session is not a valid record.
    #[error("the session store holds a malformed record")]
    Corrupt,
    /// The store holds as many sessions as it may.
    #[error("the session store is full")]
    Full,
}

/// Where an [`HttpEndpoint`](super::HttpEndpoint) keeps the shared part of its legacy
/// sessions ([`SessionRecord`]), so that several server processes behind one URL serve
/// the same sessions (see the module docs for what is shared and what is not).
///
/// Called synchronously by the endpoint; an implementation over the network blocks it
/// for as long as a call takes and must bound that itself. A store should forget a
/// session that was not saved for the endpoint's
/// [`session_idle_timeout`](super::HttpEndpointConfig::session_idle_timeout): saving is
/// how the endpoint tells it the session is in use. A store without a clock of its own
/// (one in the endpoints' process) may instead give back the [`SessionRecord::last_use`]
/// it was saved with: the endpoint then expires the session itself.
pub trait SessionStore: std::fmt::Debug + Send {
    /// Stores (or replaces) the record of session `id` and restarts its idle time.
    ///
    /// # Errors
    /// [`SessionStoreError`] when it could not be stored: a new session is then refused
    /// (503); a change to an existing one is kept only by this process.
    fn save(&mut self, id: &str, record: &SessionRecord) -> Result<(), SessionStoreError>;

    /// The record of session `id`, or `None` when it ended, expired or never existed.
    ///
    /// # Errors
    /// [`SessionStoreError`] when the store could not answer: the endpoint then serves
    /// the session from its own copy if it has one, and answers 503 otherwise (the
    /// session may live on elsewhere: a 404 would tell the client it ended). A
    /// [`SessionStoreError::Corrupt`] record is served by no one who does not hold it
    /// (404).
    fn load(&mut self, id: &str) -> Result<Option<SessionRecord>, SessionStoreError>;

    /// Ends session `id` (a `DELETE`): every process stops serving it. A process whose
    /// request of the session was running then saves it when that request ends: a store
    /// shared by several endpoints should refuse such a save for a while (both stores of
    /// this workspace do), or the session lives again everywhere.
    ///
    /// # Errors
    /// [`SessionStoreError`] when the store could not be told.
    fn remove(&mut self, id: &str) -> Result<(), SessionStoreError>;

    /// Restarts the idle time of session `id` without changing its record, `last_use`
    /// being this use (for a store that keeps [`SessionRecord::last_use`]): the endpoint
    /// calls it, at most once per half idle timeout, for each session it holds a request
    /// or a stream of, so that a client listening on one process for longer than the
    /// idle timeout keeps its session for the others. A session the store no longer
    /// holds is not brought back.
    ///
    /// The default loads the record and saves it back; a store that can restart a
    /// session's expiry alone should do that (one command, no record written, so a
    /// change another process just saved is not overwritten).
    ///
    /// # Errors
    /// [`SessionStoreError`] when the store could not be told (the endpoint tries again
    /// after another half idle timeout).
    ///
    /// Returns whether the store still holds the session: `false` means it ended (a
    /// `DELETE` elsewhere, or the store expired or evicted it), and the endpoint ends its
    /// streams as its next request would.
    fn touch(&mut self, id: &str, last_use: LastUse) -> Result<bool, SessionStoreError> {
        let Some(mut record) = self.load(id)? else {
            return Ok(false);
        };
        record.last_use = Some(last_use);
        self.save(id, &record)?;
        Ok(true)
    }
}

/// A bounded [`SessionStore`] in memory. Clones share the same sessions, so endpoints
/// of one process can serve each other's sessions (tests, or several listeners).
///
/// It has no clock: it keeps each record's [`SessionRecord::last_use`] and gives it back,
/// and an endpoint loading a session idle past its timeout refuses it and removes it.
/// The endpoints sharing one must therefore be given instants on one timeline (the
/// adapters of this workspace count from one origin for the whole process).
/// When `capacity` sessions are held, a new one makes room as an endpoint's own table
/// does: first every session idle past its timeout at the new record's last use goes;
/// else one whose id no endpoint has loaded since it was saved (no request named it
/// since its `initialize`: what a flood of `initialize`s leaves behind), the one saved
/// least recently; else the one saved least recently. It cannot see what an endpoint
/// holds in use (parked calls, tasks), which the endpoint's own table never evicts:
/// such a session whose client came back goes in its turn. (A session with a live
/// request or stream is touched by its endpoint, so it is not taken as idle.)
///
/// A session removed (a `DELETE`) stays ended: a later save of it, by an endpoint whose
/// request of the session was running at the time, is refused
/// ([`SessionStoreError::Unavailable`]) rather than bring the session back for every
/// endpoint. The ids of the last `capacity` sessions removed are kept for this, the
/// oldest forgotten first (the store has no clock; session ids are never issued twice,
/// so keeping one longer refuses nothing that could be saved rightly).
#[derive(Clone)]
pub struct MemorySessionStore {
    inner: Arc<Mutex<MemorySessions>>,
}

/// Counts only: a session id is a credential of its client (it is redacted from wire
/// logs as such), and a record holds what its client negotiated.
impl std::fmt::Debug for MemorySessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never waits: printed by the thread holding the lock (a log line in a store
        // wrapper, a panic message), it says so, as `Mutex`'s own `Debug` does.
        let mut out = f.debug_struct("MemorySessionStore");
        let inner = match self.inner.try_lock() {
            Ok(inner) => Some(inner),
            // The store carries on after a panic under its lock (see `lock`): so does this.
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        match inner {
            Some(inner) => out
                .field("sessions", &inner.records.len())
                .field("capacity", &inner.capacity)
                .field("ended", &inner.ended.len()),
            None => out.field("sessions", &format_args!("<locked>")),
        };
        out.finish_non_exhaustive()
    }
}

struct MemorySessions {
    records: BTreeMap<String, Held>,
    /// The ids of `records` in the order a full store evicts them when none is idle:
    /// by `(returned, saved)` (unreturned first, then least recently saved; `saved` is
    /// unique).
    by_eviction: BTreeMap<(bool, u64), String>,
    /// The ids of the `records` with a last use, by when they are idle past their
    /// timeout ([`idle_from`]), then `saved`.
    by_idle: BTreeMap<(Instant, u64), String>,
    saves: u64,
    capacity: usize,
    /// Sessions removed, whose saves are refused: at most `capacity`.
    ended: BTreeSet<String>,
    /// The same ids, removed first at the front.
    ended_order: VecDeque<String>,
    /// Records looked at to make room, for the tests of its cost.
    #[cfg(test)]
    looked_at: usize,
}

impl MemorySessionStore {
    /// A store holding at most `capacity` sessions.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        MemorySessionStore {
            inner: Arc::new(Mutex::new(MemorySessions {
                records: BTreeMap::new(),
                by_eviction: BTreeMap::new(),
                by_idle: BTreeMap::new(),
                saves: 0,
                capacity: capacity.max(1),
                ended: BTreeSet::new(),
                ended_order: VecDeque::new(),
                #[cfg(test)]
                looked_at: 0,
            })),
        }
    }

    /// Sessions held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    /// Whether no session is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemorySessions> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A record held by a [`MemorySessionStore`].
struct Held {
    /// The store's save counter when it was last saved.
    saved: u64,
    bytes: Vec<u8>,
    last_use: Option<LastUse>,
    /// Loaded since it was first saved: a request named the session's id.
    returned: bool,
}

/// When a session last used at `u` is idle past its timeout: from this instant on,
/// [`LastUse::expired_at`] holds (a zero timeout: from the origin, as it holds even
/// at instants before `u.at`).
fn idle_from(u: LastUse) -> Instant {
    if u.idle_timeout.is_zero() {
        Instant::ZERO
    } else {
        u.at.saturating_add(u.idle_timeout)
    }
}

impl MemorySessions {
    /// Puts the record of `id` in the eviction indexes.
    fn index(&mut self, id: &str, held: &Held) {
        self.by_eviction
            .insert((held.returned, held.saved), id.to_owned());
        if let Some(u) = held.last_use {
            self.by_idle
                .insert((idle_from(u), held.saved), id.to_owned());
        }
    }

    /// Takes a record out of the eviction indexes.
    fn unindex(&mut self, held: &Held) {
        self.by_eviction.remove(&(held.returned, held.saved));
        if let Some(u) = held.last_use {
            self.by_idle.remove(&(idle_from(u), held.saved));
        }
    }

    /// Removes the record of `id`, if held.
    fn drop_record(&mut self, id: &str) {
        if let Some(held) = self.records.remove(id) {
            self.unindex(&held);
        }
    }

    /// Changes the record of `id` with `f`, keeping the indexes in step; whether it
    /// is held.
    fn update(&mut self, id: &str, f: impl FnOnce(&mut Held)) -> bool {
        let Some(mut held) = self.records.remove(id) else {
            return false;
        };
        self.unindex(&held);
        f(&mut held);
        self.index(id, &held);
        self.records.insert(id.to_owned(), held);
        true
    }

    /// Room for one more session (see [`MemorySessionStore`]), `now` being the last use
    /// of the one coming in, when known. Each record idle by then is looked at once, as
    /// it goes; otherwise one record goes: no walk of the others.
    fn make_room(&mut self, now: Option<Instant>) {
        if self.records.len() < self.capacity {
            return;
        }
        if let Some(now) = now {
            let idle: Vec<String> = (self.by_idle.range(..=(now, u64::MAX)))
                .map(|(_, id)| id)
                .filter(|id| {
                    #[cfg(test)]
                    {
                        self.looked_at += 1;
                    }
                    (self.records.get(*id))
                        .and_then(|h| h.last_use)
                        .is_some_and(|u| u.expired_at(now))
                })
                .cloned()
                .collect();
            for id in idle {
                self.drop_record(&id);
            }
        }
        if self.records.len() < self.capacity {
            return;
        }
        #[cfg(test)]
        {
            self.looked_at += 1;
        }
        let victim = self.by_eviction.values().next().cloned();
        if let Some(victim) = victim {
            self.drop_record(&victim);
        }
    }
}

impl Default for MemorySessionStore {
    fn default() -> Self {
        MemorySessionStore::new(4096)
    }
}

impl SessionStore for MemorySessionStore {
    fn save(&mut self, id: &str, record: &SessionRecord) -> Result<(), SessionStoreError> {
        let mut inner = self.lock();
        let m = &mut *inner;
        if m.ended.contains(id) {
            return Err(SessionStoreError::Unavailable(
                "the session was ended".into(),
            ));
        }
        m.saves += 1;
        let saved = m.saves;
        let bytes = record.encode();
        let last_use = record.last_use;
        if m.records.contains_key(id) {
            m.update(id, |held| {
                (held.saved, held.bytes, held.last_use) = (saved, bytes, last_use);
            });
            return Ok(());
        }
        m.make_room(last_use.map(|u| u.at));
        let held = Held {
            saved,
            bytes,
            last_use,
            returned: false,
        };
        m.index(id, &held);
        m.records.insert(id.to_owned(), held);
        Ok(())
    }

    fn load(&mut self, id: &str) -> Result<Option<SessionRecord>, SessionStoreError> {
        let mut inner = self.lock();
        if inner.records.get(id).is_some_and(|h| !h.returned) {
            inner.update(id, |held| held.returned = true);
        }
        let Some(held) = inner.records.get(id) else {
            return Ok(None);
        };
        let mut record = SessionRecord::decode(&held.bytes)?;
        record.last_use = held.last_use;
        Ok(Some(record))
    }

    fn touch(&mut self, id: &str, last_use: LastUse) -> Result<bool, SessionStoreError> {
        let mut inner = self.lock();
        let m = &mut *inner;
        let saved = m.saves + 1;
        let held = m.update(id, |held| {
            (held.saved, held.last_use) = (saved, Some(last_use))
        });
        if held {
            m.saves = saved;
        }
        Ok(held)
    }

    fn remove(&mut self, id: &str) -> Result<(), SessionStoreError> {
        let mut inner = self.lock();
        let m = &mut *inner;
        m.drop_record(id);
        if m.ended.insert(id.to_owned()) {
            m.ended_order.push_back(id.to_owned());
        }
        while m.ended_order.len() > m.capacity {
            if let Some(old) = m.ended_order.pop_front() {
                m.ended.remove(&old);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record() -> SessionRecord {
        SessionRecord {
            version: ProtocolVersion::V2025_11_25,
            client_capabilities: json!({"elicitation": {}}),
            initialized: true,
            log_level: Some(LogLevel::Warning),
            subscriptions: vec!["example://readme".into()],
            principal: Some("alice".into()),
            last_use: None,
        }
    }

    #[test]
    fn debug_shows_counts_not_session_ids_or_records() {
        let mut store = MemorySessionStore::new(8);
        store.save("sess-secret-7", &record()).unwrap();
        let shown = format!("{store:?}");
        assert!(
            !shown.contains("sess-secret-7") && !shown.contains("alice"),
            "{shown}"
        );
        assert!(shown.contains("sessions: 1, capacity: 8"), "{shown}");
        let held = store.lock();
        assert!(format!("{store:?}").contains("<locked>"));
        drop(held);
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _held = store.inner.lock();
            panic!("poisons the lock");
        }));
        let shown = format!("{store:?}");
        assert!(shown.contains("sessions: 1, capacity: 8"), "{shown}");
    }

    #[test]
    fn records_round_trip_and_hostile_ones_are_refused() {
        let r = record();
        assert_eq!(SessionRecord::decode(&r.encode()), Ok(r));
        let corrupt = |b: &[u8]| SessionRecord::decode(b) == Err(SessionStoreError::Corrupt);
        assert!(corrupt(b"not json"));
        assert!(
            corrupt(br#"{"v":"2026-07-28","c":{},"i":true}"#),
            "modern version"
        );
        assert!(corrupt(br#"{"v":"1999-01-01","c":{},"i":true}"#));
        assert!(
            corrupt(br#"{"v":"2025-06-18","c":[],"i":true}"#),
            "caps not object"
        );
        let deep = format!(
            r#"{{"v":"2025-06-18","c":{}{}, "i":true}}"#,
            "{\"a\":".repeat(100),
            "{}".to_owned() + &"}".repeat(100)
        );
        assert!(corrupt(deep.as_bytes()));
        let many: Vec<String> = (0..=MAX_RECORD_SUBSCRIPTIONS)
            .map(|i| i.to_string())
            .collect();
        let wide = json!({"v": "2025-06-18", "c": {}, "i": true, "s": many}).to_string();
        assert!(corrupt(wide.as_bytes()));
        let long = json!({"v": "2025-06-18", "c": {}, "i": true, "s": ["x".repeat(9000)]});
        assert!(corrupt(long.to_string().as_bytes()));
        assert!(corrupt(&vec![b' '; MAX_SESSION_RECORD_BYTES + 1]));
    }

    #[test]
    fn clones_share_sessions_and_capacity_evicts_the_stalest() {
        let mut a = MemorySessionStore::new(2);
        let mut b = a.clone();
        a.save("s1", &record()).unwrap();
        assert_eq!(b.load("s1").unwrap(), Some(record()));
        b.save("s2", &record()).unwrap();
        a.save("s1", &record()).unwrap();
        a.save("s3", &record()).unwrap();
        assert_eq!(a.load("s2").unwrap(), None, "s2 was saved least recently");
        assert!(a.load("s1").unwrap().is_some());
        b.remove("s1").unwrap();
        assert_eq!(a.load("s1").unwrap(), None);
        assert_eq!(a.len(), 1);
    }

    /// A full store makes room as an endpoint's table does: sessions idle past their
    /// timeout first, then one no request named since it was saved (a flood of
    /// `initialize`s), then the one saved least recently. It used to evict the one saved
    /// least recently whatever it was, so that a flood pushed out sessions in use.
    #[test]
    fn a_full_store_evicts_the_idle_then_the_unreturned_then_the_stalest() {
        let minutes = |m: u64| Instant::ZERO + Duration::from_secs(60 * m);
        let at = |m: u64| SessionRecord {
            last_use: Some(LastUse::new(minutes(m), Duration::from_secs(30 * 60))),
            ..record()
        };
        let mut store = MemorySessionStore::new(3);
        let held =
            |s: &MemorySessionStore| -> Vec<String> { s.lock().records.keys().cloned().collect() };
        store.save("a", &at(0)).unwrap();
        store.save("b", &at(10)).unwrap();
        store.save("c", &at(20)).unwrap();
        assert_eq!(
            store.load("a").unwrap(),
            Some(at(0)),
            "the last use comes back"
        );
        store.load("b").unwrap();
        // At minute 31 "a" has been idle for its whole timeout: it goes first, although
        // its client came back and "c"'s never did.
        store.save("d", &at(31)).unwrap();
        assert_eq!(held(&store), ["b", "c", "d"]);
        // Then the sessions no request named since their save, the oldest first.
        store.save("e", &at(32)).unwrap();
        assert_eq!(held(&store), ["b", "d", "e"]);
        store.load("d").unwrap();
        store.save("f", &at(33)).unwrap();
        assert_eq!(held(&store), ["b", "d", "f"]);
        // Every one returned: the one saved least recently.
        store.load("f").unwrap();
        store.save("g", &at(34)).unwrap();
        assert_eq!(held(&store), ["d", "f", "g"]);
        // A record saved without its last use is never taken as idle.
        let mut store = MemorySessionStore::new(2);
        store.save("x", &record()).unwrap();
        store.save("y", &at(0)).unwrap();
        store.save("z", &at(600)).unwrap();
        assert_eq!(held(&store), ["x", "z"]);
    }

    /// A client that `initialize`s in a loop against a full store costs a few steps per
    /// session, not a walk of every record: making room used to look at each of the
    /// `capacity` records (twice) for every new session.
    #[test]
    fn making_room_in_a_full_store_does_not_walk_every_record() {
        let minutes = |m: u64| Instant::ZERO + Duration::from_secs(60 * m);
        let at = |m: u64| SessionRecord {
            last_use: Some(LastUse::new(minutes(m), Duration::from_secs(30 * 60))),
            ..record()
        };
        let capacity = 1000;
        let mut store = MemorySessionStore::new(capacity);
        for i in 0..capacity {
            store.save(&format!("old{i}"), &at(0)).unwrap();
        }
        // Half of them came back, and some more were idle when the flood began.
        for i in (0..capacity).step_by(2) {
            store.load(&format!("old{i}")).unwrap();
        }
        store.lock().looked_at = 0;
        let flood = 500;
        for i in 0..flood {
            store.save(&format!("new{i}"), &at(1)).unwrap();
        }
        assert_eq!(store.len(), capacity);
        let looked_at = store.lock().looked_at;
        assert!(
            looked_at <= 4 * flood,
            "{looked_at} records looked at for {flood} new sessions"
        );
        // The unreturned went first, the oldest first; the returned ones are all here.
        let held = |id: &str| store.lock().records.contains_key(id);
        assert!((0..capacity).step_by(2).all(|i| held(&format!("old{i}"))));
        assert!((0..flood).all(|i| held(&format!("new{i}"))));
        // At minute 30 every old record is idle (the new ones are not): the next save
        // takes them all, each looked at once.
        store.lock().looked_at = 0;
        store.save("late", &at(30)).unwrap();
        assert_eq!(store.len(), flood + 1);
        let m = store.lock();
        assert_eq!(
            (m.by_eviction.len(), m.by_idle.len()),
            (flood + 1, flood + 1)
        );
        drop(m);
        assert!(store.lock().looked_at <= 4 * capacity);
    }

    /// A session idle for exactly its timeout counts as idle when a full store makes
    /// room (as in an endpoint's own table, which expires it at that instant): it goes
    /// before one no request named yet, although its client came back.
    #[test]
    fn a_full_store_takes_a_session_idle_for_exactly_its_timeout_as_idle() {
        let minutes = |m: u64| Instant::ZERO + Duration::from_secs(60 * m);
        let at = |m: u64| SessionRecord {
            last_use: Some(LastUse::new(minutes(m), Duration::from_secs(30 * 60))),
            ..record()
        };
        let mut store = MemorySessionStore::new(2);
        store.save("a", &at(0)).unwrap();
        store.load("a").unwrap();
        store.save("b", &at(10)).unwrap();
        store.save("c", &at(30)).unwrap();
        let held: Vec<String> = store.lock().records.keys().cloned().collect();
        assert_eq!(held, ["b", "c"]);
    }

    /// An endpoint loads a session, another ends it (`DELETE`) while the first one's
    /// request runs, and the first saves the record back when its request ends: the
    /// session must stay ended for every endpoint, as over Redis (decision 180).
    #[test]
    fn a_session_ended_by_one_endpoint_is_not_saved_back_by_another() {
        let mut a = MemorySessionStore::new(2);
        let mut b = a.clone();
        a.save("s1", &record()).unwrap();
        assert_eq!(b.load("s1").unwrap(), Some(record()));
        a.remove("s1").unwrap();
        assert!(b.save("s1", &record()).is_err(), "the save is refused");
        assert_eq!(a.load("s1").unwrap(), None, "the ended session came back");
        // Other sessions are saved as before; the ended ids are bounded by the capacity,
        // the oldest forgotten first.
        b.save("s2", &record()).unwrap();
        a.remove("s2").unwrap();
        a.remove("s3").unwrap();
        assert!(
            b.save("s2", &record()).is_err(),
            "s2 is still known as ended"
        );
        assert!(b.save("s1", &record()).is_ok(), "s1 was forgotten for room");
        assert_eq!(a.lock().ended.len(), 2);
        assert_eq!(a.lock().ended_order.len(), 2);
    }
}
