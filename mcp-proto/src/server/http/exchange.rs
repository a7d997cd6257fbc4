//! What the endpoint keeps for each request it answers and each legacy `GET` stream it
//! serves: the [`Exchange`] and [`Listener`] records, the [`Backlog`] of messages an open
//! stream has not handed out yet, the server→client requests awaiting an answer, and the
//! map they are kept in by endpoint key. Also the count of what keeps a legacy session
//! busy, kept in step as these records change.

use std::collections::VecDeque;
use std::hash::{BuildHasherDefault, Hasher};

use crate::Instant;
use crate::jsonrpc::RequestId;

#[cfg(doc)]
use super::HttpEndpoint;
#[cfg(doc)]
use super::HttpEndpointConfig;
use super::sessions::Sessions;

/// One message of a stream, as compact JSON, with its SSE event id once it has one.
#[derive(Debug)]
pub(super) struct Event {
    pub(super) id: Option<String>,
    pub(super) data: Vec<u8>,
}

/// The messages of a stream not handed out yet, and their bytes
/// ([`HttpEndpointConfig::max_stream_backlog`]).
#[derive(Debug, Default)]
pub(super) struct Backlog {
    /// The oldest message, held in place: most exchanges only ever get their answer,
    /// which then needs no queue. `None` only when `events` is empty too.
    first: Option<Event>,
    /// The messages after `first`.
    events: VecDeque<Event>,
    pub(super) bytes: usize,
    /// The endpoint's turn ([`HttpEndpoint::turn`]) of the last message queued.
    turn: u64,
    /// The bytes that were waiting when that turn queued its first message: what the
    /// client left unread from earlier turns.
    carried: usize,
}

impl Backlog {
    /// Queues a message in the endpoint's turn `turn`.
    pub(super) fn push_in(&mut self, turn: u64, event: Event) {
        if turn != self.turn {
            self.turn = turn;
            self.carried = self.bytes;
        }
        self.bytes = self.bytes.saturating_add(event.data.len());
        if self.first.is_none() {
            self.first = Some(event);
        } else {
            self.events.push_back(event);
        }
    }

    /// Whether its client left more than `max` bytes unread from earlier turns: what one
    /// turn brings at once does not count, as the client had no chance to read it.
    pub(super) fn behind(&self, max: usize) -> bool {
        self.carried > max
    }

    /// Every message, oldest first; the backlog is left empty.
    pub(super) fn take(&mut self) -> VecDeque<Event> {
        self.bytes = 0;
        self.carried = 0;
        let mut all = std::mem::take(&mut self.events);
        if let Some(first) = self.first.take() {
            all.push_front(first);
        }
        all
    }

    /// The oldest message (for a backlog of one, all of it), taking the backlog.
    pub(super) fn into_first(mut self) -> Option<Event> {
        self.first.take().or_else(|| self.events.pop_front())
    }

    pub(super) fn clear(&mut self) {
        self.take();
    }

    pub(super) fn is_empty(&self) -> bool {
        self.first.is_none() && self.events.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.events.len() + usize::from(self.first.is_some())
    }
}

/// A server→client request awaiting its client's response.
#[derive(Debug)]
pub(super) struct ServerRequest {
    /// The exchange (or `GET` stream) it went out on.
    pub(super) exchange: i64,
    /// The machine's own id of the request.
    pub(super) machine_id: RequestId,
    /// The principal it went to: the only one whose answer is taken.
    pub(super) principal: Option<String>,
}

/// A legacy session's standalone `GET` stream.
#[derive(Debug)]
pub(super) struct Listener {
    pub(super) session: String,
    /// The principal of its session (authenticated by the application), if any.
    pub(super) principal: Option<String>,
    /// Its resumable stream number.
    pub(super) stream: u64,
    /// Events not handed out yet (only while a connection serves it).
    pub(super) events: Backlog,
    /// The attachment a connection serves; `None` when its client went away.
    pub(super) attach: Option<u64>,
    /// The session ended: the stream ends.
    pub(super) ended: bool,
}

/// One request being answered.
#[derive(Debug)]
pub(super) struct Exchange {
    /// The client's request id.
    pub(super) original: RequestId,
    /// Messages for it not yet handed out.
    pub(super) events: Backlog,
    /// The response arrived (it is the last of `events`).
    pub(super) answered: bool,
    /// The error code of the response, if it is an error.
    pub(super) error_code: Option<i64>,
    /// An open stream was handed out for it.
    pub(super) streaming: bool,
    /// The legacy session it belongs to, with sessions.
    pub(super) session: Option<String>,
    /// The principal its request was served as (authenticated by the application).
    pub(super) principal: Option<String>,
    /// Its resumable stream number, once it is a stream of a session.
    pub(super) stream: Option<u64>,
    /// The attachment a connection serves; `None` while no connection does (not
    /// streaming yet, or a resumable stream whose client went away or was told to poll).
    pub(super) attach: Option<u64>,
    /// While its client polls (SEP-1699): when its next poll is due at the latest
    /// ([`HttpEndpoint::next_poll_due`]). Until then the client is not gone, and its
    /// stream is not ended for room.
    pub(super) poll_due: Option<Instant>,
    /// A `subscriptions/listen`: its result names its subscription by the endpoint's id,
    /// which becomes the client's on the way out.
    pub(super) listen: bool,
}

/// A map by endpoint key ([`HttpEndpoint::fresh_key`]), hashed with [`KeyHasher`].
#[allow(clippy::disallowed_types)] // a fixed hasher: no keys drawn from the OS
pub(super) type KeyMap<V> = std::collections::HashMap<i64, V, BuildHasherDefault<KeyHasher>>;

/// Hashes endpoint keys with one multiplication instead of SipHash: the keys are counters
/// the endpoint hands out itself, never chosen by a peer, so there is no flooding to
/// resist. The odd multiplier spreads consecutive keys over both the low bits (the
/// bucket) and the high bits (the tag) of the hash.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(KEY_MULTIPLIER);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (self.0 ^ n.cast_unsigned()).wrapping_mul(KEY_MULTIPLIER);
    }
}

/// 2^64 divided by the golden ratio, made odd.
const KEY_MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// Whether exchange `e` keeps its session busy: its request is being handled, or a
/// client holds its stream (see [`Sessions::hold`]).
pub(super) fn holds_session(e: &Exchange) -> bool {
    e.attach.is_some() || !e.streaming
}

/// No client is attached to exchange `e` any more: what was queued for the one that was
/// is dropped (a resumption replays it from the store).
pub(super) fn detach(e: &mut Exchange) {
    e.attach = None;
    e.events.clear();
}

/// Changes exchange `e` with `change`, keeping the count of what holds its session busy
/// in step (see [`held_changed`]).
pub(super) fn change_holding(
    sessions: &mut Option<Sessions>,
    e: &mut Exchange,
    change: impl FnOnce(&mut Exchange),
) {
    let was = holds_session(e);
    change(e);
    let is = holds_session(e);
    held_changed(sessions, e.session.as_deref(), was, is);
}

/// Keeps the count of what holds each session busy ([`Sessions::hold`]) in step after
/// an exchange or a `GET` stream of `session` changed: whether it held the session
/// before (`was`) and after (`is`).
pub(super) fn held_changed(
    sessions: &mut Option<Sessions>,
    session: Option<&str>,
    was: bool,
    is: bool,
) {
    let (Some(table), Some(session)) = (sessions.as_mut(), session) else {
        return;
    };
    match (was, is) {
        (false, true) => table.hold(session),
        (true, false) => table.release(session),
        _ => {}
    }
}
