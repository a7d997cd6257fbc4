//! The three stores over one shared [`RedisClient`].
//!
//! Keys (after the prefix):
//!
//! * `nonce:<hex>`: a consumed `requestState` nonce, expiring with the state.
//! * `session:<id>`: a session's [`SessionRecord`], expiring when idle.
//! * `ended:<id>`: a session ended by a `DELETE`, kept for the idle time, so that a
//!   process whose request of the session was running then does not save it back.
//! * `ev:<n>`: stream `n`'s events, a list of `<seq>:<message>`, the newest
//!   [`RedisEventLimits::max_events_per_stream`] kept; `evseq:<n>` its next sequence
//!   number minus one (`INCR`); `evown:<n>` the session that owns it; `evsess:<id>` the
//!   set of a session's stream numbers, to forget them with the session. All expire
//!   after [`RedisEventLimits::ttl`] without an append.
//! * `evcount:`: how many events were ever appended under the prefix (`INCR`, never
//!   expiring). A stream whose keys are new (first used, or expired) begins its sequence
//!   numbers there, so that no event id is ever issued twice: a client resuming a stream
//!   that expired and went on is told its events were evicted, not replayed with a gap.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcp_proto::server::http::{
    EventStore, EventStoreError, EventStream, LastUse, Replay, SessionRecord, SessionStore,
    SessionStoreError, StoredEvent, event_id, parse_event_id,
};
use mcp_proto::server::{ConsumeRefusal, ConsumptionStore};

use crate::client::{RedisClient, RedisError, RedisOptions};
use crate::resp::Reply;

/// The longest key prefix.
const MAX_PREFIX_BYTES: usize = 64;
/// The longest session id looked up (ids the endpoint issues are 22 characters).
const MAX_SESSION_ID_BYTES: usize = 128;
/// The longest nonce recorded (the sealing codec's are 16 bytes).
const MAX_NONCE_BYTES: usize = 64;

/// A connection to Redis shared by the stores made from it, and the prefix of their
/// keys. Clones share the connection.
#[derive(Clone, Debug)]
pub struct Redis {
    client: Arc<Mutex<RedisClient>>,
    prefix: String,
}

impl Redis {
    /// Connects to `redis://HOST:PORT[/DB]`; keys start with `mcp:`.
    ///
    /// # Errors
    /// As [`RedisClient::connect`].
    pub fn connect(url: &str, options: RedisOptions) -> Result<Redis, RedisError> {
        Ok(Redis {
            client: Arc::new(Mutex::new(RedisClient::connect(url, options)?)),
            prefix: "mcp:".to_owned(),
        })
    }

    /// The same connection with keys starting with `prefix` (at most 64 printable ASCII
    /// characters; anything else keeps the current prefix).
    #[must_use]
    pub fn with_prefix(mut self, prefix: &str) -> Redis {
        if prefix.len() <= MAX_PREFIX_BYTES && prefix.bytes().all(|b| b.is_ascii_graphic()) {
            self.prefix = prefix.to_owned();
        }
        self
    }

    /// The store of single-use `requestState` nonces.
    #[must_use]
    pub fn consumption_store(&self) -> RedisConsumptionStore {
        RedisConsumptionStore {
            redis: self.clone(),
        }
    }

    /// The store of legacy sessions; a session not saved for `idle` is forgotten (give
    /// it the endpoint's `session_idle_timeout`).
    #[must_use]
    pub fn session_store(&self, idle: Duration) -> RedisSessionStore {
        RedisSessionStore {
            redis: self.clone(),
            idle,
        }
    }

    /// The store of resumable SSE events.
    #[must_use]
    pub fn event_store(&self, limits: RedisEventLimits) -> RedisEventStore {
        RedisEventStore {
            redis: self.clone(),
            limits,
        }
    }

    fn key(&self, kind: &str, name: &str) -> Vec<u8> {
        format!("{}{kind}:{name}", self.prefix).into_bytes()
    }

    fn client(&self) -> MutexGuard<'_, RedisClient> {
        self.client.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn millis(d: Duration) -> Vec<u8> {
    d.as_millis()
        .clamp(1, u128::from(u64::MAX))
        .to_string()
        .into_bytes()
}

/// [`ConsumptionStore`] over Redis: `SET <nonce> 1 NX PX <until expiry>`. A nonce is
/// consumed once across every process using the same Redis and prefix; when Redis
/// cannot be reached the state is refused (at most once wins over availability). It
/// bounds neither the nonces held nor one principal's share of them: Redis's own
/// memory limit (`maxmemory`) does, and a full Redis refuses every state. That holds
/// only under `maxmemory-policy noeviction` (Redis's default): a policy that evicts keys
/// (`allkeys-*`, `volatile-*`) may drop a nonce before its expiry, and the state it
/// recorded would then be accepted a second time. Give these keys a Redis that does not
/// evict.
#[derive(Debug)]
pub struct RedisConsumptionStore {
    redis: Redis,
}

impl ConsumptionStore for RedisConsumptionStore {
    fn consume(
        &mut self,
        _principal: Option<&str>,
        nonce: &[u8],
        expires_unix_ms: u64,
        now_unix_ms: u64,
    ) -> Result<(), ConsumeRefusal> {
        // The codec never makes such nonces: refused as used, without asking Redis.
        if nonce.is_empty() || nonce.len() > MAX_NONCE_BYTES {
            return Err(ConsumeRefusal::Consumed);
        }
        let mut hex = String::with_capacity(nonce.len() * 2);
        for b in nonce {
            let _ = write!(hex, "{b:02x}");
        }
        let key = self.redis.key("nonce", &hex);
        let ttl = expires_unix_ms
            .saturating_sub(now_unix_ms)
            .max(1)
            .to_string();
        let reply =
            self.redis
                .client()
                .command(&[b"SET", &key, b"1", b"NX", b"PX", ttl.as_bytes()]);
        match reply {
            Ok(Reply::Status(s)) if s == "OK" => Ok(()),
            // `NX` found the key: consumed before.
            Ok(Reply::Bulk(None)) => Err(ConsumeRefusal::Consumed),
            _ => Err(ConsumeRefusal::Unavailable),
        }
    }
}

/// [`SessionStore`] over Redis: one key per session holding its encoded
/// [`SessionRecord`], expiring after the idle time unless saved again. A session
/// removed (a `DELETE`) stays ended: a save by another process whose request of the
/// session was running at the time is refused for the idle time after the removal,
/// rather than bring the session back on every process.
#[derive(Debug)]
pub struct RedisSessionStore {
    redis: Redis,
    idle: Duration,
}

/// Saves a session's record (`KEYS[1]`, `ARGV[1]`, expiring after `ARGV[2]` ms) unless
/// the session was ended (`KEYS[2]` exists): 1 saved, 0 ended.
const SAVE_UNLESS_ENDED: &[u8] = b"if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end \
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1";

fn valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_SESSION_ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn unavailable(e: &RedisError) -> SessionStoreError {
    SessionStoreError::Unavailable(e.to_string())
}

impl SessionStore for RedisSessionStore {
    fn save(&mut self, id: &str, record: &SessionRecord) -> Result<(), SessionStoreError> {
        if !valid_session_id(id) {
            return Err(SessionStoreError::Unavailable("invalid session id".into()));
        }
        let key = self.redis.key("session", id);
        let ended = self.redis.key("ended", id);
        let ttl = millis(self.idle);
        let command: [&[u8]; 7] = [
            b"EVAL",
            SAVE_UNLESS_ENDED,
            b"2",
            &key,
            &ended,
            &record.encode(),
            &ttl,
        ];
        match self.redis.client().command(&command) {
            Ok(Reply::Integer(1)) => Ok(()),
            Ok(Reply::Integer(0)) => Err(SessionStoreError::Unavailable(
                "the session was ended".into(),
            )),
            Ok(_) => Err(SessionStoreError::Unavailable(
                "unexpected reply to a save".into(),
            )),
            Err(e) => Err(unavailable(&e)),
        }
    }

    fn load(&mut self, id: &str) -> Result<Option<SessionRecord>, SessionStoreError> {
        if !valid_session_id(id) {
            return Ok(None);
        }
        let key = self.redis.key("session", id);
        match self.redis.client().command(&[b"GET", &key]) {
            Ok(Reply::Bulk(None)) => Ok(None),
            Ok(Reply::Bulk(Some(bytes))) => SessionRecord::decode(&bytes).map(Some),
            Ok(_) => Err(SessionStoreError::Corrupt),
            Err(e) => Err(unavailable(&e)),
        }
    }

    /// Restarts the key's expiry (`PEXPIRE`), leaving the record as it is; a key that
    /// expired or was removed is not brought back.
    fn touch(&mut self, id: &str, _: LastUse) -> Result<bool, SessionStoreError> {
        if !valid_session_id(id) {
            return Ok(false);
        }
        let key = self.redis.key("session", id);
        let ttl = millis(self.idle);
        match self.redis.client().command(&[b"PEXPIRE", &key, &ttl]) {
            Ok(Reply::Integer(1)) => Ok(true),
            Ok(Reply::Integer(0)) => Ok(false),
            Ok(_) => Err(SessionStoreError::Unavailable(
                "unexpected reply to a touch".into(),
            )),
            Err(e) => Err(unavailable(&e)),
        }
    }

    fn remove(&mut self, id: &str) -> Result<(), SessionStoreError> {
        if !valid_session_id(id) {
            return Ok(());
        }
        let key = self.redis.key("session", id);
        let ended = self.redis.key("ended", id);
        let ttl = millis(self.idle);
        // The mark first: a save between the two commands is refused already.
        let replies = self
            .redis
            .client()
            .pipeline(&[&[b"SET", &ended, b"1", b"PX", &ttl], &[b"DEL", &key]]);
        match replies {
            Ok(r) if !r.iter().any(|r| matches!(r, Reply::Error(_))) => Ok(()),
            Ok(_) => Err(SessionStoreError::Unavailable(
                "redis refused to end the session".into(),
            )),
            Err(e) => Err(unavailable(&e)),
        }
    }
}

/// The bounds of a [`RedisEventStore`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisEventLimits {
    /// Events kept per stream; the oldest go first. Default 256.
    pub max_events_per_stream: usize,
    /// The largest message stored; a larger one goes out without an id. Default 1 MiB.
    pub max_message_bytes: usize,
    /// How long a stream is kept after its last event. Default 30 minutes.
    pub ttl: Duration,
}

impl Default for RedisEventLimits {
    fn default() -> Self {
        RedisEventLimits {
            max_events_per_stream: 256,
            max_message_bytes: 1 << 20,
            ttl: Duration::from_secs(30 * 60),
        }
    }
}

/// [`EventStore`] over Redis: one capped, expiring list per stream (see the module
/// docs for the keys). Event ids are `<stream>-<seq>` as in the in-memory store; stream
/// numbers are the endpoint's, drawn from a random base so that processes do not
/// collide. What Redis returns is checked: an element that is not `<seq>:<message>`, a
/// sequence out of order, or more elements than the cap make the replay fail.
#[derive(Debug)]
pub struct RedisEventStore {
    redis: Redis,
    limits: RedisEventLimits,
}

/// Splits a stored element `<seq>:<message>`.
fn split_element(element: &[u8]) -> Option<(u64, &[u8])> {
    let colon = element.iter().take(21).position(|b| *b == b':')?;
    let seq = std::str::from_utf8(&element[..colon]).ok()?.parse().ok()?;
    Some((seq, &element[colon + 1..]))
}

fn integer(reply: &Reply) -> Option<i64> {
    match reply {
        Reply::Integer(n) => Some(*n),
        Reply::Bulk(Some(b)) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

impl EventStore for RedisEventStore {
    fn append(&mut self, stream: &EventStream, message: &[u8]) -> Result<String, EventStoreError> {
        if message.len() > self.limits.max_message_bytes {
            return Err(EventStoreError::TooLarge {
                size: message.len(),
                limit: self.limits.max_message_bytes,
            });
        }
        if !valid_session_id(&stream.session) {
            return Err(EventStoreError::Unknown);
        }
        let n = stream.number.to_string();
        let (list, seq, own) = (
            self.redis.key("ev", &n),
            self.redis.key("evseq", &n),
            self.redis.key("evown", &n),
        );
        let sess = self.redis.key("evsess", &stream.session);
        let ttl = millis(self.limits.ttl);
        let session = stream.session.as_bytes();
        let mut client = self.redis.client();
        let count = self.redis.key("evcount", "");
        let claimed = client
            .pipeline(&[
                &[b"SET", &own, session, b"NX", b"PX", &ttl],
                &[b"GET", &own],
                &[b"INCR", &seq],
                &[b"INCR", &count],
            ])
            .map_err(|_| EventStoreError::Unavailable)?;
        // Stream numbers are never shared between sessions: refuse rather than mix.
        if claimed.get(1) != Some(&Reply::Bulk(Some(session.to_vec()))) {
            return Err(EventStoreError::Unknown);
        }
        let next = claimed
            .get(2)
            .and_then(integer)
            .and_then(|n| u64::try_from(n).ok())
            .filter(|n| *n >= 1)
            .ok_or(EventStoreError::Unavailable)?;
        let appended = claimed
            .get(3)
            .and_then(integer)
            .and_then(|n| u64::try_from(n).ok())
            .filter(|n| *n >= 1)
            .ok_or(EventStoreError::Unavailable)?;
        // A new sequence (the stream's first event, or the first after its keys expired)
        // begins at the count of events appended before this one, above every number
        // issued so far (stream numbers are the endpoint's, so only this process appends
        // to this stream: nothing races the `SET` below).
        let fresh = next == 1;
        let number = if fresh { appended - 1 } else { next - 1 };
        let restart = number.saturating_add(1).to_string();
        let mut element = format!("{number}:").into_bytes();
        element.extend_from_slice(message);
        let keep = format!("-{}", self.limits.max_events_per_stream.max(1));
        let set_seq: &[&[u8]] = &[b"SET", &seq, restart.as_bytes(), b"PX", &ttl];
        let store: [&[&[u8]]; 7] = [
            &[b"RPUSH", &list, &element],
            &[b"LTRIM", &list, keep.as_bytes(), b"-1"],
            &[b"PEXPIRE", &list, &ttl],
            &[b"PEXPIRE", &seq, &ttl],
            &[b"PEXPIRE", &own, &ttl],
            &[b"SADD", &sess, n.as_bytes()],
            &[b"PEXPIRE", &sess, &ttl],
        ];
        let commands: Vec<&[&[u8]]> = fresh.then_some(set_seq).into_iter().chain(store).collect();
        let replies = client
            .pipeline(&commands)
            .map_err(|_| EventStoreError::Unavailable)?;
        if replies.iter().any(|r| matches!(r, Reply::Error(_))) {
            return Err(EventStoreError::Unavailable);
        }
        Ok(event_id(stream.number, number))
    }

    fn replay_after(&self, id: &str) -> Result<Replay, EventStoreError> {
        let (number, after) = parse_event_id(id).ok_or(EventStoreError::Malformed)?;
        let n = number.to_string();
        let replies = self
            .redis
            .client()
            .pipeline(&[
                &[b"GET", &self.redis.key("evown", &n)],
                &[b"GET", &self.redis.key("evseq", &n)],
                &[b"LRANGE", &self.redis.key("ev", &n), b"0", b"-1"],
            ])
            .map_err(|_| EventStoreError::Unavailable)?;
        let [own, seq, list] = replies.as_slice() else {
            return Err(EventStoreError::Unavailable);
        };
        let session = match own {
            Reply::Bulk(Some(s)) => String::from_utf8(s.clone())
                .ok()
                .filter(|s| valid_session_id(s))
                .ok_or(EventStoreError::Unavailable)?,
            _ => return Err(EventStoreError::Unknown),
        };
        let issued = integer(seq)
            .and_then(|n| u64::try_from(n).ok())
            .ok_or(EventStoreError::Unknown)?;
        if after >= issued {
            return Err(EventStoreError::Unknown);
        }
        let Reply::Array(Some(elements)) = list else {
            return Err(EventStoreError::Unknown);
        };
        if elements.len() > self.limits.max_events_per_stream.max(1) {
            return Err(EventStoreError::Unavailable);
        }
        let mut events = Vec::new();
        let mut first = None;
        let mut previous = None;
        for element in elements {
            let Reply::Bulk(Some(bytes)) = element else {
                return Err(EventStoreError::Unavailable);
            };
            let (s, message) = split_element(bytes).ok_or(EventStoreError::Unavailable)?;
            if previous.is_some_and(|p| s <= p) || s >= issued {
                return Err(EventStoreError::Unavailable);
            }
            previous = Some(s);
            first.get_or_insert(s);
            if s > after {
                events.push(StoredEvent {
                    id: event_id(number, s),
                    message: message.to_vec(),
                });
            }
        }
        if first.unwrap_or(issued) > after + 1 {
            return Err(EventStoreError::Evicted);
        }
        Ok(Replay {
            stream: EventStream { session, number },
            events,
        })
    }

    fn forget_session(&mut self, session: &str) {
        if !valid_session_id(session) {
            return;
        }
        let sess = self.redis.key("evsess", session);
        let mut client = self.redis.client();
        let Ok(Reply::Array(Some(members))) = client.command(&[b"SMEMBERS", &sess]) else {
            return;
        };
        let mut keys = vec![sess.clone()];
        for member in members.iter().take(4096) {
            let Some(n) = integer(member).and_then(|n| u64::try_from(n).ok()) else {
                continue;
            };
            let n = n.to_string();
            keys.push(self.redis.key("ev", &n));
            keys.push(self.redis.key("evseq", &n));
            keys.push(self.redis.key("evown", &n));
        }
        let mut del: Vec<&[u8]> = vec![b"DEL"];
        del.extend(keys.iter().map(Vec::as_slice));
        let _ = client.command(&del);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_elements_are_checked() {
        assert_eq!(split_element(b"12:{}"), Some((12, &b"{}"[..])));
        assert_eq!(split_element(b"0:"), Some((0, &b""[..])));
        assert_eq!(split_element(b"x:1"), None);
        assert_eq!(split_element(b"123"), None);
        assert_eq!(split_element(&[b'9'; 30]), None);
        assert!(valid_session_id("abc-_9"));
        assert!(!valid_session_id("a b"));
        assert!(!valid_session_id(""));
        assert!(!valid_session_id(&"a".repeat(129)));
    }
}
