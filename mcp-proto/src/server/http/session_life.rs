//! A legacy session's life as the endpoint sees it: opened by `initialize`, named by
//! every later request (live, else 404; the session store asked first when there is
//! one, and told of every use), its state swapped into the machine while a request of it
//! is served ([`HttpEndpoint::in_session`]), kept alive in the store while it is busy
//! here, and ended by `DELETE`, idleness or eviction, with what the endpoint holds for it
//! (*Legacy sessions* and *Several processes* in the module docs of [`super`]). The
//! table of sessions itself, with its ids and eviction order, is [`super::sessions`].

use std::borrow::Cow;

use crate::Instant;
use crate::http::headers::MCP_SESSION_ID;
use crate::jsonrpc::{ErrorObject, Request, codes};
use crate::version::Era;

use serde_json::{Map, Value};

use super::super::legacy::LegacyState;
#[cfg(doc)]
use super::SessionStore;
use super::reader::HttpRequest;
use super::response::HttpResponse;
use super::session_store::{LastUse, SessionRecord, SessionStoreError};
use super::sessions::InUse;
use super::{HttpEndpoint, HttpReply};

impl HttpEndpoint {
    /// A legacy request with sessions: `initialize` opens a session (its id goes out in
    /// `Mcp-Session-Id` when the handshake succeeds); any other request must name a live
    /// one, and is served with that session's state in the machine.
    pub(super) fn in_legacy_session(
        &mut self,
        now: Instant,
        request: (Request, Option<&mut Map<String, Value>>),
        http: &HttpRequest,
        initialize: bool,
        framing: (bool, bool),
    ) -> HttpReply {
        let id = request.0.id.clone();
        let session = if initialize {
            self.settle_sessions();
            let tasks = &self.server.tasks;
            let in_use = InUse {
                newcomer: self.server.principal.as_deref(),
                results_due: |scope| tasks.has_results_due(scope),
            };
            let mut expired = Vec::new();
            let created = self
                .sessions
                .as_mut()
                .map(|t| t.create(now, in_use, &mut expired));
            for gone in expired {
                self.drop_session_state(&gone, false);
            }
            match created {
                Some(Ok(session)) => Cow::Owned(session),
                _ => {
                    let e = ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        "Too many sessions are open; try again later",
                    );
                    return HttpReply::Complete(HttpResponse::json_error(503, Some(&id), &e));
                }
            }
        } else {
            match http.header(MCP_SESSION_ID) {
                None => {
                    let e = ErrorObject::new(
                        codes::INVALID_REQUEST,
                        "Bad Request: Mcp-Session-Id header is required",
                    );
                    return HttpReply::Complete(HttpResponse::json_error(400, Some(&id), &e));
                }
                Some(s) => match self.session_live(s, now) {
                    // Borrowed from the request: copied once, for its exchange.
                    Ok(()) => Cow::Borrowed(s),
                    Err(refused) => return HttpReply::Complete(refused),
                },
            }
        };
        let reply = self.in_session(Some(&session), now, |e| {
            e.run(
                now,
                request,
                Era::Legacy,
                initialize,
                framing,
                Some(&session),
            )
        });
        if !initialize {
            return reply;
        }
        match reply {
            HttpReply::Complete(r) if r.status == 200 => {
                if !self.share_new_session(&session, now) {
                    let e = ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        "The session store is unavailable; try again later",
                    );
                    return HttpReply::Complete(HttpResponse::json_error(503, Some(&id), &e));
                }
                HttpReply::Complete(r.with_header(MCP_SESSION_ID, session.into_owned()))
            }
            other => {
                if let Some(t) = &mut self.sessions {
                    t.remove(&session);
                }
                other
            }
        }
    }

    /// The session a notification or response names (`Mcp-Session-Id`, with sessions),
    /// or the `404` for one not live.
    pub(super) fn named_session(
        &mut self,
        now: Instant,
        http: &HttpRequest,
    ) -> Result<Option<String>, HttpResponse> {
        match http.header(MCP_SESSION_ID) {
            Some(id) if self.sessions.is_some() => {
                self.session_live(id, now)?;
                Ok(Some(id.to_owned()))
            }
            _ => Ok(None),
        }
    }

    /// Whether `session` names a live session (one with an open exchange never idles) of
    /// the principal being served; if not, the answer: 404 for a session unknown, ended
    /// or expired, 503 for one this endpoint does not hold while the session store
    /// cannot say (it may live on elsewhere). A session whose client is attached to one
    /// of its streams, or whose request is being handled, is busy; one whose streams only
    /// wait for a resumption is not.
    pub(super) fn session_live(&mut self, session: &str, now: Instant) -> Result<(), HttpResponse> {
        // Another principal's session is unknown to this one, and left as it is (not
        // even kept alive): looked at before the store and again after an adoption.
        if !self.serves_principal(session) {
            return Err(session_not_found());
        }
        let store_down = match self.consult_session_store(session, now) {
            Consulted::Known => false,
            Consulted::Unreachable => true,
            Consulted::Ended => {
                if let Some(t) = &mut self.sessions {
                    t.remove(session);
                }
                self.drop_session_state(session, true);
                return Err(session_not_found());
            }
            // It lives on where it is served: its stored events stay.
            Consulted::NoRoom => {
                self.drop_session_state(session, false);
                return Err(session_not_found());
            }
        };
        // Only a session store's answer (an adoption) can have changed the principal.
        if self.session_store.is_some() && !self.serves_principal(session) {
            return Err(session_not_found());
        }
        let live = self
            .sessions
            .as_mut()
            .is_some_and(|t| t.knows(session, now));
        if !live {
            self.drop_session_state(session, false);
            return Err(if store_down {
                session_store_unavailable()
            } else {
                session_not_found()
            });
        }
        Ok(())
    }

    /// Whether session `session`, if held here, serves the principal being served.
    fn serves_principal(&self, session: &str) -> bool {
        let principal = self.server.principal.as_deref();
        let state = self.sessions.as_ref().and_then(|t| t.state(session));
        state.is_none_or(|s| s.serves(principal))
    }

    /// Drops the tasks of the legacy sessions gone since the last time: nobody can reach
    /// them any more, and they would hold their slots and bytes until they expire.
    pub(super) fn drop_ended_sessions_tasks(&mut self) {
        let Some(t) = &mut self.sessions else {
            return;
        };
        let scopes = t.take_ended_scopes();
        if !scopes.is_empty() {
            self.server.tasks.drop_scopes(&scopes);
        }
    }

    /// Forgets what the endpoint holds for a session it no longer serves (its legacy
    /// state, parked calls included, is gone already): its exchanges and its `GET` stream
    /// (ended); and its stored events once the session ended for good: always without a
    /// session store, and with one only when the store no longer knows the session
    /// (`ended_everywhere`). A session this endpoint dropped for idleness or for room may
    /// live on in another process, whose streams the shared event store still serves.
    pub(super) fn drop_session_state(&mut self, session: &str, ended_everywhere: bool) {
        let keys: Vec<i64> = self
            .exchanges
            .iter()
            .filter(|(_, e)| e.session.as_deref() == Some(session))
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            self.forget(key);
            self.ready.insert(key);
        }
        self.end_listeners(session);
        let ended = ended_everywhere || self.session_store.is_none();
        if ended && let Some(store) = &mut self.store {
            store.forget_session(session);
        }
    }

    /// Ends the `GET` streams of `session`: served ones finish at their next poll,
    /// detached ones go.
    fn end_listeners(&mut self, session: &str) {
        self.listeners.retain(|key, l| {
            if l.session != session {
                return true;
            }
            l.ended = true;
            if l.attach.is_some() {
                self.ready.insert(*key);
            }
            l.attach.is_some()
        });
    }

    /// Runs `f` with the legacy state of `session` in the machine (none: as it is).
    pub(super) fn in_session<R>(
        &mut self,
        session: Option<&str>,
        now: Instant,
        f: impl FnOnce(&mut Self) -> R,
    ) -> R {
        let taken = session.and_then(|id| Some((id, self.sessions.as_mut()?.take(id, now)?)));
        let Some((id, mut state)) = taken else {
            return f(self);
        };
        self.server.mark_parked_elsewhere(&state, false);
        self.server.swap_legacy(&mut state);
        // The id is copied into the buffer the last session served left behind.
        let mut current = std::mem::take(&mut self.spare_session);
        current.clear();
        current.push_str(id);
        let outer = self.current_session.replace(current);
        let result = f(self);
        if let Some(done) = std::mem::replace(&mut self.current_session, outer) {
            self.spare_session = done;
        }
        self.server.swap_legacy(&mut state);
        let mut saved = false;
        if let Some(store) = &mut self.session_store
            && let Some(mut record) = state.record()
        {
            record.last_use = Some(LastUse::new(now, self.config.session_idle_timeout));
            // Also restarts the session's idle time in the store. A failure keeps the
            // change here only (see `SessionStore::save`).
            saved = store.save(id, &record).is_ok();
        }
        if let Some(t) = &mut self.sessions {
            if saved {
                t.mark_stored(id, now);
            }
            if t.holds(id) {
                // Held outside the machine again: what it parks on is marked there.
                self.server.mark_parked_elsewhere(&state, true);
            }
            let tasks = &self.server.tasks;
            let due = state.task_scope().is_some_and(|s| tasks.has_results_due(s));
            t.put_back(id, state, due);
        }
        result
    }

    /// With a session store: whether it still knows `session` (a failing store: the
    /// local table decides). A session it knows is adopted when this endpoint does not
    /// hold it yet, else its shared part is refreshed from the store. One whose record
    /// was last used longer ago than the idle timeout (a store sharing the caller's
    /// clock says so) has ended, unless busy here (a request or stream of it
    /// live), and is removed from the store.
    fn consult_session_store(&mut self, session: &str, now: Instant) -> Consulted {
        let Some(store) = &mut self.session_store else {
            return Consulted::Known;
        };
        let idle = self.config.session_idle_timeout;
        let busy = |session| self.sessions.as_ref().is_some_and(|t| t.is_busy(session));
        let record = match store.load(session) {
            Ok(Some(record))
                if (record.last_use).is_some_and(|u| LastUse::new(u.at, idle).expired_at(now))
                    && !busy(session) =>
            {
                // Idle everywhere: no endpoint saved it since. A failure to remove it
                // leaves it to the store (every endpoint refuses it meanwhile).
                let _ = store.remove(session);
                return Consulted::Ended;
            }
            Ok(Some(record)) => record,
            Ok(None) => return Consulted::Ended,
            // What it holds cannot be served by anyone who does not hold it already.
            Err(SessionStoreError::Corrupt) => return Consulted::Known,
            Err(_) => return Consulted::Unreachable,
        };
        let max_subscriptions = self.server.config().limits.max_subscriptions;
        let Some(table) = &mut self.sessions else {
            return Consulted::Known;
        };
        let refreshed = table.refresh(session, now, |state| {
            state.refresh(record.clone(), max_subscriptions);
        });
        if refreshed {
            return Consulted::Known;
        }
        let scope = self.server.tasks.new_scope();
        let state = LegacyState::adopted(record, scope, max_subscriptions);
        self.settle_sessions();
        let tasks = &self.server.tasks;
        let principal = state.principal().map(str::to_owned);
        let in_use = InUse {
            newcomer: principal.as_deref(),
            results_due: |scope| tasks.has_results_due(scope),
        };
        let mut expired = Vec::new();
        let adopted = self
            .sessions
            .as_mut()
            .map(|t| t.adopt(session, state, now, in_use, &mut expired));
        for gone in expired {
            self.drop_session_state(&gone, false);
        }
        // No room here for a session another endpoint opened: this one answers as for an
        // unknown session (404; the client initializes again, perhaps elsewhere). The
        // record stays in the store.
        if matches!(adopted, Some(Ok(()))) {
            Consulted::Known
        } else {
            Consulted::NoRoom
        }
    }

    /// Tells the session store about a session `initialize` just opened (at `now`);
    /// false when it could not (the session is then dropped here too).
    fn share_new_session(&mut self, session: &str, now: Instant) -> bool {
        let Some(store) = &mut self.session_store else {
            return true;
        };
        let last_use = LastUse::new(now, self.config.session_idle_timeout);
        let record = self
            .sessions
            .as_ref()
            .and_then(|t| t.state(session))
            .and_then(LegacyState::record)
            .map(|r| SessionRecord {
                last_use: Some(last_use),
                ..r
            });
        let saved = record.is_some_and(|r| store.save(session, &r).is_ok());
        if !saved && let Some(t) = &mut self.sessions {
            t.remove(session);
        }
        saved
    }

    /// `DELETE` with `Mcp-Session-Id`: the session ends, its open exchanges are
    /// cancelled.
    pub(super) fn end_session(&mut self, now: Instant, http: &HttpRequest) -> HttpResponse {
        let Some(session) = http.header(MCP_SESSION_ID).map(str::to_owned) else {
            let e = ErrorObject::new(
                codes::INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required",
            );
            return HttpResponse::json_error(400, None, &e);
        };
        if let Err(refused) = self.session_live(&session, now) {
            return refused;
        }
        let open: Vec<i64> = self
            .exchanges
            .iter()
            .filter(|(_, e)| e.session.as_deref() == Some(session.as_str()))
            .map(|(k, _)| *k)
            .collect();
        for key in open {
            self.cancel(now, key, "the session ended");
            self.ready.insert(key);
        }
        self.end_listeners(&session);
        if let Some(store) = &mut self.store {
            store.forget_session(&session);
        }
        if let Some(store) = &mut self.session_store {
            // Failing to tell it leaves the session to the store's idle expiry.
            let _ = store.remove(&session);
        }
        if let Some(t) = &mut self.sessions {
            t.remove(&session);
        }
        HttpResponse::new(200)
    }

    /// Tells the session table which task scopes' results-due state changed since last
    /// told (as the machine's task store logged it), so that it knows which sessions may
    /// be evicted without asking for each, and has it put the sessions that changed in
    /// their places.
    pub(super) fn settle_sessions(&mut self) {
        let Some(table) = &mut self.sessions else {
            return;
        };
        let tasks = &mut self.server.tasks;
        for scope in tasks.take_results_due_changes() {
            table.results_due_changed(scope, tasks.has_results_due(scope));
        }
        table.settle();
    }

    /// How often the session store is told that a session held in use here is in use
    /// ([`SessionStore::touch`]): every half idle timeout (at least a second apart), so
    /// that its record never looks idle to another endpoint while a request or a stream
    /// of it is live here.
    fn touch_interval(&self) -> std::time::Duration {
        (self.config.session_idle_timeout / 2).max(std::time::Duration::from_secs(1))
    }

    /// With a session store: when the store is next due to hear that a session with a
    /// request being handled or a stream a client holds here is in use.
    pub(super) fn next_touch(&self) -> Option<Instant> {
        self.session_store.as_ref()?;
        let last = self.sessions.as_ref()?.first_busy_stored()?;
        Some(last + self.touch_interval())
    }

    /// Tells the session store that each session with a request being handled or a
    /// stream a client holds here is in use, once its record was last saved or touched
    /// a [`HttpEndpoint::touch_interval`] ago: without it a client that only listens
    /// here (or waits for a long call) for longer than the idle timeout found its
    /// session gone at its next request elsewhere (the store's record looked idle, or
    /// its expiry passed). One store call per session and interval, none per event. A
    /// session the store no longer holds has ended everywhere: it ends here too, as at
    /// its next request.
    pub(super) fn touch_sessions(&mut self, now: Instant) {
        let every = self.touch_interval();
        let (Some(store), Some(table)) = (&mut self.session_store, &mut self.sessions) else {
            return;
        };
        let due = table.busy_stored_due(|t| t + every <= now);
        let last_use = LastUse::new(now, self.config.session_idle_timeout);
        let mut gone = Vec::new();
        for id in due {
            // A failing store is asked again after another interval.
            table.mark_stored(&id, now);
            if store.touch(&id, last_use) == Ok(false) {
                gone.push(id);
            }
        }
        for id in &gone {
            if let Some(t) = &mut self.sessions {
                t.remove(id);
            }
            self.drop_session_state(id, true);
        }
        if !gone.is_empty() {
            self.drop_ended_sessions_tasks();
        }
    }
}

/// What the session store said of a session a request names.
enum Consulted {
    /// Known (or no store, or its record unusable): the local table decides.
    Known,
    /// Unknown there: ended or expired.
    Ended,
    /// Known there, but this endpoint has no room to take it in.
    NoRoom,
    /// The store could not answer: the local table decides, and a session not held here
    /// may live on elsewhere.
    Unreachable,
}

/// 503 for a legacy session this endpoint does not hold while the session store cannot
/// be reached: it may live on elsewhere, so the client tries again rather than start
/// another.
fn session_store_unavailable() -> HttpResponse {
    let e = ErrorObject::new(
        codes::INTERNAL_ERROR,
        "The session store is unavailable; try again later",
    );
    HttpResponse::json_error(503, None, &e)
}

/// 404 for a legacy session that is unknown, ended or expired: the client starts a new
/// one with `initialize`.
fn session_not_found() -> HttpResponse {
    let e = ErrorObject::new(
        codes::INVALID_REQUEST,
        "Session not found: it ended or expired; send initialize again",
    );
    HttpResponse::json_error(404, None, &e)
}
