//! Resumable SSE streams of legacy sessions: the [`EventStore`] that keeps what each
//! stream sent, so that a client reconnecting with `Last-Event-ID` gets what it missed,
//! and [`MemoryEventStore`], a bounded one in memory.
//!
//! Event ids are `<stream>-<seq>`: the endpoint-unique number of the stream, then the
//! event's place in it. A stream's sequence numbers are consecutive from where its log
//! began; [`MemoryEventStore`] begins a log at the number of events it stored before it,
//! so that a stream it dropped to stay within its bounds and that goes on later never
//! hands out an id again (a client resuming from before the gap is told the events were
//! evicted). They are unique across every stream of every session and name their stream,
//! as spec 2025-11-25 asks. They are not secret: the endpoint replays a stream only to the session that
//! owns it ([`EventStream::session`]), whatever id a client sends.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The longest `Last-Event-ID` worth parsing: two `u64` and a dash.
pub const MAX_EVENT_ID_BYTES: usize = 41;

/// One SSE stream of one legacy session.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventStream {
    /// The `Mcp-Session-Id` of the session that owns it.
    pub session: String,
    /// Its endpoint-unique number (the first part of its event ids).
    pub number: u64,
}

/// One stored event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its SSE `id`.
    pub id: String,
    /// The JSON-RPC message, compact JSON; empty for a priming event.
    pub message: Vec<u8>,
}

/// What a stream sent after an event id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    /// The stream the id belongs to.
    pub stream: EventStream,
    /// Its events after that id, oldest first.
    pub events: Vec<StoredEvent>,
}

/// Why an event store could not do what was asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EventStoreError {
    /// The id is not of the form this store hands out.
    #[error("malformed event id")]
    Malformed,
    /// No stream held here has such an event (never issued, or its stream was dropped).
    #[error("unknown event id")]
    Unknown,
    /// Events after that id were evicted: the stream cannot be replayed from there.
    #[error("events after this id were evicted")]
    Evicted,
    /// The store could not be reached or failed (a store over the network).
    #[error("the event store is unavailable")]
    Unavailable,
    /// The message alone is larger than the store may hold.
    #[error("an event of {size} bytes exceeds the store's {limit} bytes")]
    TooLarge {
        /// The message's size.
        size: usize,
        /// The store's bound.
        limit: usize,
    },
}

/// Where the events of resumable SSE streams are kept until a client that lost its
/// connection asks for them again (`GET` with `Last-Event-ID`).
///
/// The endpoint appends every event of a legacy session's SSE streams (a priming event
/// has an empty message) and asks for a replay when a client resumes; it checks that the
/// replayed stream belongs to the asking session, and never replays another stream.
/// A store may forget old events to stay within its bounds: a replay that would need them
/// must fail with [`EventStoreError::Evicted`] rather than skip them.
pub trait EventStore: std::fmt::Debug + Send {
    /// Stores `message` as the next event of `stream` and returns its event id, which
    /// must be unique across every stream the store ever held.
    ///
    /// # Errors
    ///
    /// [`EventStoreError::TooLarge`] when it cannot be kept (the event then goes out
    /// without an id).
    fn append(&mut self, stream: &EventStream, message: &[u8]) -> Result<String, EventStoreError>;

    /// The stream of `event_id` and its events after it.
    ///
    /// # Errors
    ///
    /// [`EventStoreError::Malformed`], [`EventStoreError::Unknown`] or
    /// [`EventStoreError::Evicted`].
    fn replay_after(&self, event_id: &str) -> Result<Replay, EventStoreError>;

    /// Drops every stream of `session` (it ended or expired).
    fn forget_session(&mut self, session: &str);
}

/// The bounds of a [`MemoryEventStore`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventStoreLimits {
    /// Events kept per stream; the oldest go first. Default 256.
    pub max_events_per_stream: usize,
    /// Bytes of messages kept in all; the oldest events of any stream go first.
    /// Default 8 MiB.
    pub max_bytes: usize,
    /// Streams kept; the one appended to least recently goes first. Default 4096.
    pub max_streams: usize,
}

impl Default for EventStoreLimits {
    fn default() -> Self {
        EventStoreLimits {
            max_events_per_stream: 256,
            max_bytes: 8 << 20,
            max_streams: 4096,
        }
    }
}

/// One stream's log.
struct Log {
    session: String,
    /// Kept events, by sequence number, oldest first.
    events: VecDeque<(u64, Vec<u8>)>,
    /// The sequence number of the next event (a log begins at the store's count of
    /// earlier appends).
    next_seq: u64,
    /// When it was last appended to (the store's append counter).
    touched: u64,
}

impl Log {
    /// The sequence number of the oldest event still held (`next_seq` when none).
    fn first_seq(&self) -> u64 {
        self.events.front().map_or(self.next_seq, |(s, _)| *s)
    }
}

/// A bounded [`EventStore`] in memory: events per stream, bytes in all and streams are
/// each bounded ([`EventStoreLimits`]), the oldest evicted first.
pub struct MemoryEventStore {
    limits: EventStoreLimits,
    logs: BTreeMap<u64, Log>,
    /// Stream numbers by when they were last appended to (`Log::touched`, unique), so
    /// that the stalest stream is found without looking at every other.
    by_touch: BTreeMap<u64, u64>,
    /// Every stream as (session, number), so that a session's streams are found
    /// without looking at every other.
    by_session: BTreeSet<(String, u64)>,
    /// Every kept event in append order, for eviction by size (entries of events already
    /// evicted otherwise are skipped, and compacted away when they pile up).
    order: VecDeque<(u64, u64)>,
    /// Events held.
    held: usize,
    bytes: usize,
    appends: u64,
}

/// Bounds and counts only: the logs hold session ids (credentials of their clients) and
/// what the server sent them.
impl std::fmt::Debug for MemoryEventStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryEventStore")
            .field("limits", &self.limits)
            .field("streams", &self.logs.len())
            .field("events", &self.held)
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl MemoryEventStore {
    /// An empty store with these bounds.
    #[must_use]
    pub fn new(limits: EventStoreLimits) -> Self {
        MemoryEventStore {
            limits,
            logs: BTreeMap::new(),
            by_touch: BTreeMap::new(),
            by_session: BTreeSet::new(),
            order: VecDeque::new(),
            held: 0,
            bytes: 0,
            appends: 0,
        }
    }

    /// Bytes of messages held.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Events held.
    #[must_use]
    pub fn events(&self) -> usize {
        self.held
    }

    /// Streams held.
    #[must_use]
    pub fn streams(&self) -> usize {
        self.logs.len()
    }

    /// Removes the oldest event of stream `number`.
    fn pop_oldest(&mut self, number: u64) {
        if let Some(log) = self.logs.get_mut(&number)
            && let Some((_, message)) = log.events.pop_front()
        {
            self.bytes -= message.len();
            self.held -= 1;
        }
    }

    fn drop_stream(&mut self, number: u64) {
        if let Some(log) = self.logs.remove(&number) {
            self.by_touch.remove(&log.touched);
            self.by_session.remove(&(log.session, number));
            self.held -= log.events.len();
            self.bytes -= log.events.iter().map(|(_, m)| m.len()).sum::<usize>();
        }
    }

    /// Evicts the oldest events of any stream until `extra` more bytes fit.
    fn make_room(&mut self, extra: usize) {
        while self.bytes + extra > self.limits.max_bytes {
            let Some((number, seq)) = self.order.pop_front() else {
                break;
            };
            let oldest = self
                .logs
                .get(&number)
                .and_then(|l| l.events.front())
                .is_some_and(|(s, _)| *s == seq);
            if oldest {
                self.pop_oldest(number);
            }
        }
        if self.order.len() > 2 * self.held + 64 {
            let logs = &self.logs;
            self.order.retain(|(n, s)| {
                logs.get(n)
                    .is_some_and(|l| l.first_seq() <= *s && *s < l.next_seq)
            });
        }
    }
}

impl EventStore for MemoryEventStore {
    fn append(&mut self, stream: &EventStream, message: &[u8]) -> Result<String, EventStoreError> {
        if message.len() > self.limits.max_bytes {
            return Err(EventStoreError::TooLarge {
                size: message.len(),
                limit: self.limits.max_bytes,
            });
        }
        self.appends += 1;
        if !self.logs.contains_key(&stream.number) {
            while self.logs.len() >= self.limits.max_streams.max(1) {
                match self.by_touch.first_key_value() {
                    Some((_, &n)) => self.drop_stream(n),
                    None => break,
                }
            }
            // The log begins at the number of appends before this one: every sequence
            // number issued so far is below it, including those of an earlier log of
            // this stream that was evicted, whose ids must neither be issued again nor
            // resume without the events that were lost.
            self.logs.insert(
                stream.number,
                Log {
                    session: stream.session.clone(),
                    events: VecDeque::new(),
                    next_seq: self.appends - 1,
                    touched: self.appends,
                },
            );
            self.by_touch.insert(self.appends, stream.number);
            self.by_session
                .insert((stream.session.clone(), stream.number));
        }
        self.make_room(message.len());
        let max_events = self.limits.max_events_per_stream.max(1);
        while self
            .logs
            .get(&stream.number)
            .is_some_and(|l| l.events.len() >= max_events)
        {
            self.pop_oldest(stream.number);
        }
        let appends = self.appends;
        let Some(log) = self.logs.get_mut(&stream.number) else {
            return Err(EventStoreError::Unknown);
        };
        if log.session != stream.session {
            // Stream numbers are never reused across sessions; refuse rather than mix.
            return Err(EventStoreError::Unknown);
        }
        let seq = log.next_seq;
        log.next_seq += 1;
        if log.touched != appends {
            self.by_touch.remove(&log.touched);
            self.by_touch.insert(appends, stream.number);
            log.touched = appends;
        }
        log.events.push_back((seq, message.to_vec()));
        self.order.push_back((stream.number, seq));
        self.held += 1;
        self.bytes += message.len();
        Ok(event_id(stream.number, seq))
    }

    fn replay_after(&self, event_id: &str) -> Result<Replay, EventStoreError> {
        let (number, seq) = parse_event_id(event_id).ok_or(EventStoreError::Malformed)?;
        let log = self.logs.get(&number).ok_or(EventStoreError::Unknown)?;
        if seq >= log.next_seq {
            return Err(EventStoreError::Unknown);
        }
        if log.first_seq() > seq + 1 {
            return Err(EventStoreError::Evicted);
        }
        // A log's sequence numbers are consecutive from its oldest event.
        let skip = usize::try_from(seq + 1 - log.first_seq()).unwrap_or(usize::MAX);
        let events = log
            .events
            .iter()
            .skip(skip)
            .map(|(s, m)| StoredEvent {
                id: self::event_id(number, *s),
                message: m.clone(),
            })
            .collect();
        Ok(Replay {
            stream: EventStream {
                session: log.session.clone(),
                number,
            },
            events,
        })
    }

    fn forget_session(&mut self, session: &str) {
        let first = (session.to_owned(), 0);
        let last = (session.to_owned(), u64::MAX);
        let gone: Vec<u64> = self
            .by_session
            .range(first..=last)
            .map(|(_, n)| *n)
            .collect();
        for n in gone {
            self.drop_stream(n);
        }
    }
}

/// The event id of event `seq` of stream `number`.
#[must_use]
pub fn event_id(number: u64, seq: u64) -> String {
    format!("{number}-{seq}")
}

/// The stream number and sequence number of an event id made by [`event_id`].
#[must_use]
pub fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    if id.len() > MAX_EVENT_ID_BYTES {
        return None;
    }
    let (number, seq) = id.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(number) || !digits(seq) {
        return None;
    }
    Some((number.parse().ok()?, seq.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(session: &str, number: u64) -> EventStream {
        EventStream {
            session: session.to_owned(),
            number,
        }
    }

    #[test]
    fn debug_shows_counts_not_sessions_or_events() {
        let mut store = MemoryEventStore::new(EventStoreLimits::default());
        store
            .append(&stream("sess-secret-7", 1), b"{\"private\":\"payload\"}")
            .unwrap();
        let shown = format!("{store:?}");
        assert!(
            !shown.contains("sess-secret-7") && !shown.contains("payload"),
            "{shown}"
        );
        assert!(shown.contains("streams: 1, events: 1"), "{shown}");
    }

    #[test]
    fn ids_are_unique_across_streams_and_replay_only_their_stream() {
        let mut store = MemoryEventStore::new(EventStoreLimits::default());
        let a = stream("s1", 1);
        let b = stream("s1", 2);
        let a0 = store.append(&a, b"").unwrap();
        let b0 = store.append(&b, b"").unwrap();
        let a1 = store.append(&a, b"{\"a\":1}").unwrap();
        store.append(&b, b"{\"b\":1}").unwrap();
        let a2 = store.append(&a, b"{\"a\":2}").unwrap();
        assert_eq!(
            (a0.as_str(), b0.as_str(), a1.as_str()),
            ("1-0", "2-1", "1-1")
        );
        let replay = store.replay_after(&a0).unwrap();
        assert_eq!(replay.stream, a);
        let ids: Vec<_> = replay.events.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, [a1.as_str(), a2.as_str()]);
        assert!(
            replay
                .events
                .iter()
                .all(|e| !e.message.starts_with(b"{\"b\""))
        );
        assert!(store.replay_after(&a2).unwrap().events.is_empty());
    }

    #[test]
    fn the_stalest_stream_goes_first_and_a_session_takes_only_its_own() {
        let limits = EventStoreLimits {
            max_streams: 3,
            ..EventStoreLimits::default()
        };
        let mut store = MemoryEventStore::new(limits);
        let (a, b, c, d) = (
            stream("s1", 1),
            stream("s2", 2),
            stream("s1", 3),
            stream("s2", 4),
        );
        let a0 = store.append(&a, b"").unwrap();
        let b0 = store.append(&b, b"").unwrap();
        store.append(&c, b"").unwrap();
        store.append(&a, b"{}").unwrap();
        // b is now the one appended to least recently.
        store.append(&d, b"").unwrap();
        assert_eq!(store.streams(), 3);
        assert_eq!(store.replay_after(&b0), Err(EventStoreError::Unknown));
        assert_eq!(store.replay_after(&a0).unwrap().events.len(), 1);
        // Then c; a was touched after it.
        store.append(&b, b"").unwrap();
        assert_eq!(store.streams(), 3);
        store.forget_session("s1");
        assert_eq!(store.streams(), 2);
        assert_eq!(store.replay_after(&a0), Err(EventStoreError::Unknown));
        assert_eq!(store.events(), 2);
        store.forget_session("s2");
        assert_eq!((store.streams(), store.events(), store.bytes()), (0, 0, 0));
    }

    #[test]
    fn unknown_malformed_and_evicted_ids_are_refused() {
        let limits = EventStoreLimits {
            max_events_per_stream: 2,
            ..EventStoreLimits::default()
        };
        let mut store = MemoryEventStore::new(limits);
        let s = stream("s", 7);
        let first = store.append(&s, b"").unwrap();
        for _ in 0..3 {
            store.append(&s, b"{}").unwrap();
        }
        assert_eq!(store.events(), 2);
        assert_eq!(store.replay_after(&first), Err(EventStoreError::Evicted));
        assert_eq!(store.replay_after("7-2").unwrap().events.len(), 1);
        assert_eq!(store.replay_after("7-9"), Err(EventStoreError::Unknown));
        assert_eq!(store.replay_after("8-0"), Err(EventStoreError::Unknown));
        for bad in [
            "",
            "7",
            "7-",
            "-1",
            "x-1",
            "7-1-1",
            "7 - 1",
            &"9".repeat(60),
        ] {
            assert_eq!(
                store.replay_after(bad),
                Err(EventStoreError::Malformed),
                "{bad}"
            );
        }
        store.forget_session("s");
        assert_eq!(store.replay_after("7-2"), Err(EventStoreError::Unknown));
        assert_eq!((store.events(), store.bytes(), store.streams()), (0, 0, 0));
    }

    #[test]
    fn bytes_and_streams_are_bounded_oldest_first() {
        let limits = EventStoreLimits {
            max_events_per_stream: 100,
            max_bytes: 10,
            max_streams: 2,
        };
        let mut store = MemoryEventStore::new(limits);
        let a = stream("s", 1);
        store.append(&a, b"").unwrap();
        for _ in 0..5 {
            store.append(&a, b"abcd").unwrap();
        }
        assert!(store.bytes() <= 10);
        assert_eq!(store.replay_after("1-0"), Err(EventStoreError::Evicted));
        assert_eq!(store.replay_after("1-3").unwrap().events.len(), 2);
        assert_eq!(
            store.append(&a, &[b'x'; 11]),
            Err(EventStoreError::TooLarge {
                size: 11,
                limit: 10
            })
        );
        store.append(&stream("s", 2), b"").unwrap();
        store.append(&stream("t", 3), b"").unwrap();
        assert_eq!(store.streams(), 2);
        // Stream 1 was appended to least recently: it went.
        assert_eq!(store.replay_after("1-4"), Err(EventStoreError::Unknown));
        for i in 0..1000 {
            store.append(&stream("t", 3), &[b'x'; 3][..i % 4]).unwrap();
        }
        assert!(store.order.len() <= 2 * store.held + 64 + 1);
    }
}
