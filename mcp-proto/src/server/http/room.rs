//! Room for open streams: how many exchanges may wait as open streams and how many `GET`
//! streams may be attached, the share of them one legacy session or one authenticated
//! principal may hold, and which stream is ended to make room for a newcomer (one whose
//! client went away first; an anonymous client's for an authenticated newcomer when
//! anonymous clients hold more than their part). The module docs of [`super`] tell the
//! whole policy (*Requests that are not answered at once*); this is where it is applied,
//! when [`HttpEndpoint::run`] is about to hand out a stream and when a `GET` stream is
//! opened or resumed.

use std::collections::BTreeMap;

use crate::Instant;
use crate::jsonrpc::{ErrorObject, Response, codes};

use super::exchange::Exchange;
use super::response::HttpResponse;
use super::{HttpEndpoint, HttpReply};

impl HttpEndpoint {
    /// Open streams still waiting for their answer: those that count against
    /// `max_open_streams` (one whose answer waits for its stream's next poll is done).
    fn waiting_streams(&self) -> usize {
        self.exchanges
            .values()
            .filter(|e| is_open_stream(e))
            .count()
    }

    /// The open streams one legacy session, or one authenticated principal, may hold,
    /// served or detached: a quarter of `max_open_streams` (at least one), so that one
    /// client cannot take them all.
    fn session_stream_share(&self) -> usize {
        fair_share(self.config.max_open_streams)
    }

    /// Why exchange `key` may not become an open stream, after making room when it can
    /// (the exchange is then cancelled): its session, or its authenticated principal,
    /// holds its share already; or `max_open_streams` are open, once the sessions that
    /// idled out went and one stream was ended for room if one may be
    /// ([`HttpEndpoint::stream_to_end_for`]). Streams whose client went away make room
    /// for one whose client is there: else a few sessions that start streams and leave
    /// would hold every stream for as long as they live.
    pub(super) fn stream_refused(&mut self, now: Instant, key: i64) -> Option<ErrorObject> {
        let share = self.session_stream_share();
        let exchange = self.exchanges.get(&key)?;
        let (session, principal) = (exchange.session.clone(), exchange.principal.clone());
        let (session, principal) = (session.as_deref(), principal.as_deref());
        let mut whose = self.share_taken(session, principal, share);
        // Its own streams whose client is gone make room within its share first: a
        // client whose connection dropped while its requests waited (and who started
        // again, perhaps in a new session) is not locked out by what it left behind.
        if let Some(holder) = whose
            && let Some(oldest) = self.oldest_gone_of(now, holder, session, principal)
        {
            self.end_for_room(now, oldest, ROOM_DETACHED);
            whose = self.share_taken(session, principal, share);
        }
        if let Some(holder) = whose {
            self.cancel(now, key, "too many open HTTP streams for its client");
            let whose = match holder {
                Holder::Session => "this session",
                Holder::Principal => "this client",
            };
            return Some(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "Too many requests of {whose} are waiting for an answer (at most {share}); \
                     try again later"
                ),
            ));
        }
        if self.waiting_streams() >= self.config.max_open_streams {
            // Sessions that idled out may still hold detached requests: they go first.
            let expired = self
                .sessions
                .as_mut()
                .map_or_else(Vec::new, |t| t.sweep(now));
            for gone in expired {
                self.drop_session_state(&gone, false);
            }
        }
        if self.waiting_streams() >= self.config.max_open_streams
            && let Some((oldest, why)) = self.stream_to_end_for(now, principal)
        {
            self.end_for_room(now, oldest, why);
        }
        if self.waiting_streams() >= self.config.max_open_streams {
            self.cancel(now, key, "too many open HTTP streams");
            return Some(ErrorObject::new(
                codes::INTERNAL_ERROR,
                "Too many requests are waiting for an answer; try again later",
            ));
        }
        None
    }

    /// Which of `session` and authenticated `principal` (the session first) holds its
    /// `share` of open streams already, detached ones included.
    fn share_taken(
        &self,
        session: Option<&str>,
        principal: Option<&str>,
        share: usize,
    ) -> Option<Holder> {
        [Holder::Session, Holder::Principal]
            .into_iter()
            .find(|&holder| {
                let held = self
                    .exchanges
                    .values()
                    .filter(|e| is_open_stream(e) && holder.holds(e, session, principal));
                held.count() >= share
            })
    }

    /// The oldest open stream of `holder` whose client is gone (see
    /// [`HttpEndpoint::stream_to_end_for`]).
    fn oldest_gone_of(
        &self,
        now: Instant,
        holder: Holder,
        session: Option<&str>,
        principal: Option<&str>,
    ) -> Option<i64> {
        let gone = self.exchanges.iter().filter(|(_, e)| {
            is_open_stream(e) && holder.holds(e, session, principal) && is_gone(e, now)
        });
        gone.map(|(k, _)| *k).min()
    }

    /// The open stream to end for one more of `newcomer`'s when every one is taken, and
    /// why. First the oldest whose client is gone (not attached, and not a polling client
    /// before its next poll is due), of the newcomer's own group or, for an
    /// authenticated newcomer, of the anonymous clients or of a principal holding at
    /// least as many open streams as the newcomer's; else, for an authenticated
    /// newcomer, the oldest of the anonymous clients' when they hold more than one beyond
    /// what its principal holds. A group is one principal, or every anonymous client
    /// together: anonymous clients cannot be told apart (a session is free to make), so
    /// together they may take only what no principal needs, and never end a principal's
    /// stream.
    fn stream_to_end_for(
        &self,
        now: Instant,
        newcomer: Option<&str>,
    ) -> Option<(i64, &'static str)> {
        let open = || self.exchanges.iter().filter(|(_, e)| is_open_stream(e));
        let mut held: BTreeMap<Option<&str>, usize> = BTreeMap::new();
        for (_, e) in open() {
            *held.entry(e.principal.as_deref()).or_default() += 1;
        }
        let mine = held.get(&newcomer).copied().unwrap_or(0);
        let may_end = |e: &Exchange| {
            let group = e.principal.as_deref();
            group == newcomer
                || (newcomer.is_some()
                    && (group.is_none() || held.get(&group).copied().unwrap_or(0) >= mine))
        };
        let detached = open()
            .filter(|(_, e)| is_gone(e, now) && may_end(e))
            .map(|(k, _)| *k)
            .min();
        if let Some(key) = detached {
            return Some((key, ROOM_DETACHED));
        }
        let anonymous = held.get(&None).copied().unwrap_or(0);
        if newcomer.is_none() || !anonymous_give_way(anonymous, mine) {
            return None;
        }
        let oldest = open()
            .filter(|(_, e)| e.principal.is_none())
            .map(|(k, _)| *k);
        oldest.min().map(|key| (key, ROOM_ANONYMOUS))
    }

    /// When the next poll of a client told to poll now is due at the latest: the `retry:`
    /// it was given, and [`POLL_GRACE`] for its own delays.
    pub(super) fn next_poll_due(&self, now: Instant) -> Instant {
        now.saturating_add(self.config.sse_retry.saturating_add(POLL_GRACE))
    }

    /// The `503` for one more `GET` stream of the principal being served: when that
    /// principal has a quarter of `max_get_streams` attached already (at least one), or
    /// when `max_get_streams` are attached and no room can be made. An authenticated
    /// client's takes the place of the oldest an anonymous client is attached to, when
    /// anonymous clients hold more than one beyond what its principal holds (as for open
    /// streams, see [`HttpEndpoint::stream_to_end_for`]). That stream ends (what it
    /// sent stays stored for a `Last-Event-ID`); its client may open another when there
    /// is room.
    pub(super) fn get_streams_full(&mut self) -> Option<HttpReply> {
        let newcomer = self.server.principal.as_deref();
        let share = fair_share(self.config.max_get_streams);
        let (mut total, mut mine, mut anonymous, mut oldest) = (0, 0, 0, None);
        for (key, l) in &self.listeners {
            if l.attach.is_none() || l.ended {
                continue;
            }
            total += 1;
            match l.principal.as_deref() {
                None => {
                    anonymous += 1;
                    oldest = Some(oldest.map_or(*key, |o: i64| o.min(*key)));
                }
                p if p == newcomer => mine += 1,
                Some(_) => {}
            }
        }
        let refused = |why: String| {
            let e = ErrorObject::new(codes::INTERNAL_ERROR, why);
            Some(HttpReply::Complete(HttpResponse::json_error(503, None, &e)))
        };
        if newcomer.is_some() && mine >= share {
            return refused(format!(
                "Too many GET streams of this client are open (at most {share}); try again later"
            ));
        }
        if total < self.config.max_get_streams {
            return None;
        }
        if newcomer.is_some()
            && anonymous_give_way(anonymous, mine)
            && let Some(key) = oldest
            && let Some(l) = self.listeners.get_mut(&key)
        {
            l.ended = true;
            self.ready.insert(key);
            return None;
        }
        refused(format!(
            "Too many GET streams are open (at most {}); try again later",
            self.config.max_get_streams
        ))
    }

    /// Ends the open stream of exchange `key` to make room for another, `why`: with an
    /// error answer, so that its client learns the request ended rather than finding its
    /// stream silent forever. An attached client gets it at the stream's next poll; for
    /// one not attached it is stored in its stream, for when it resumes (a polling client
    /// between two polls, one that reconnects).
    fn end_for_room(&mut self, now: Instant, key: i64, why: &str) {
        let Some(session) = self.exchanges.get(&key).map(|e| e.session.clone()) else {
            return;
        };
        let error = ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("Cancelled by the server: {why}"),
        );
        let response = Response {
            id: None,
            outcome: Err(error),
        };
        self.answer_exchange(key, response);
        self.tell_cancelled(now, session.as_deref(), key, why);
    }
}

/// How late past its `retry:` a polling client may come back before it counts as gone.
const POLL_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Why a stream no client was attached to was ended for room.
const ROOM_DETACHED: &str = "no client was attached, and another request needed the room";

/// Why an anonymous client's stream was ended for room.
const ROOM_ANONYMOUS: &str = "every open stream was taken, and an authenticated client \
     needed one (unauthenticated clients give way)";

/// What one session or principal may hold of a `bound` shared by all: a quarter, at
/// least one.
fn fair_share(bound: usize) -> usize {
    (bound / 4).max(1)
}

/// Whether anonymous clients, holding `anonymous` streams of a kind, give one up to an
/// authenticated newcomer whose principal holds `mine`: when they hold more than one
/// beyond it, so that neither side takes the other's last place back and forth.
fn anonymous_give_way(anonymous: usize, mine: usize) -> bool {
    anonymous > mine + 1
}

/// An exchange handed out as an open stream and not answered yet.
fn is_open_stream(e: &Exchange) -> bool {
    e.streaming && !e.answered
}

/// Who holds a share of the open streams: a legacy session, or an authenticated
/// principal.
#[derive(Clone, Copy, Debug)]
enum Holder {
    Session,
    Principal,
}

impl Holder {
    /// Whether exchange `e` is `session`'s (for [`Holder::Session`]) or authenticated
    /// `principal`'s (for [`Holder::Principal`]).
    fn holds(self, e: &Exchange, session: Option<&str>, principal: Option<&str>) -> bool {
        match self {
            Holder::Session => session.is_some() && e.session.as_deref() == session,
            Holder::Principal => principal.is_some() && e.principal.as_deref() == principal,
        }
    }
}

/// Whether the client of exchange `e` is gone: not attached, and not a polling client
/// whose next poll is not due yet.
fn is_gone(e: &Exchange, now: Instant) -> bool {
    e.attach.is_none() && e.poll_due.is_none_or(|due| due <= now)
}
