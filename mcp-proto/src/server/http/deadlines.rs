//! Time and deferred work: when the endpoint is next due ([`HttpEndpoint::poll_timeout`]),
//! what it does when time passes or deferred work completes
//! ([`HttpEndpoint::handle_timeout`], [`HttpEndpoint::handle_deferred`]), and the timer
//! protocol a driver follows so that nobody polls ([`HttpEndpoint::arm_timer`],
//! [`HttpEndpoint::take_timer_moved`], [`HttpEndpoint::handle_due`]; *Waking the driver*
//! in the module docs of [`super`]). The calls that go on run each in its own legacy
//! session, their output routed to their streams as any other.

use std::collections::BTreeSet;

use crate::Instant;
use crate::jsonrpc::RequestId;

use super::HttpEndpoint;
#[cfg(doc)]
use crate::server::Server;

impl HttpEndpoint {
    /// When [`HttpEndpoint::handle_timeout`] is next due: the machine's
    /// [`Server::poll_timeout`] (a task outcome falling due, a held `tasks/result`
    /// expiring; completed deferred work, at once), and the expiry of the task of each
    /// 2025 `tasks/result` parked on its task's input requests in a legacy session (at
    /// once for one whose task ended or is gone).
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        #[cfg(any(test, feature = "index-checks"))]
        self.check_session_indexes();
        let machine = self.server.poll_timeout();
        let parked = self.server.parked_elsewhere_expiry();
        [machine, parked, self.next_touch()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Time passed ([`Server::handle_timeout`]): the calls whose deferred work completed
    /// go on (as [`HttpEndpoint::handle_deferred`] says), due task outcomes are shown,
    /// held `tasks/result` requests whose task ended are answered on their streams, 2026
    /// listens get their `notifications/tasks`, and each legacy session with a `GET`
    /// stream gets `notifications/tasks/status` there for its tasks that changed (only
    /// those sessions are swapped into the machine). Drain [`HttpEndpoint::poll_ready`]
    /// afterwards.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.next_turn();
        self.resume_completed(now);
        self.drop_ended_sessions_tasks();
        self.server.time_passed(now);
        self.route(None);
        self.ask_in_sessions(now);
        for session in self.listening_sessions_with_news() {
            self.in_session(Some(&session), now, |e| {
                e.server.announce_tasks();
                e.route(None);
            });
        }
        self.touch_sessions(now);
    }

    /// The legacy sessions with a standalone `GET` stream and a task whose change they
    /// were not told: the sessions that time passing has news for. No walk of the
    /// streams when no session has news (the common tick).
    fn listening_sessions_with_news(&self) -> Vec<String> {
        let Some(table) = &self.sessions else {
            return Vec::new();
        };
        let with_news: BTreeSet<&str> = (self.server.tasks.scopes_with_news())
            .filter_map(|scope| table.of_scope(scope))
            .collect();
        if with_news.is_empty() {
            return Vec::new();
        }
        let listening: BTreeSet<&str> = (self.listeners.values())
            .filter(|l| !l.ended && with_news.contains(l.session.as_str()))
            .map(|l| l.session.as_str())
            .collect();
        listening.into_iter().map(str::to_owned).collect()
    }

    /// Registers the waker to wake when a tool's deferred work completes
    /// ([`Server::set_deferred_waker`]); the driver then calls
    /// [`HttpEndpoint::handle_deferred`] or [`HttpEndpoint::handle_due`] (completed
    /// work is due at once).
    pub fn set_deferred_waker(&mut self, waker: std::task::Waker) {
        self.server.set_deferred_waker(waker);
    }

    /// Whether completed deferred work waits for [`HttpEndpoint::handle_deferred`].
    #[must_use]
    pub fn has_deferred_done(&self) -> bool {
        self.server.has_deferred_done()
    }

    /// Goes on with every call whose deferred work completed (see
    /// [`crate::server::deferred`]): each in its legacy session, swapped into the machine
    /// as for its client's own input, its output to the call's stream (a stream that
    /// went away, detached or resumed, gets it as any output). Then what
    /// [`HttpEndpoint::handle_timeout`] does, for the tasks whose work completed. Drain
    /// [`HttpEndpoint::poll_ready`] afterwards.
    pub fn handle_deferred(&mut self, now: Instant) {
        self.handle_timeout(now);
    }

    /// The held 2025 `tasks/result` requests whose task now asks for input (its
    /// deferred or delayed work asked) ask in their own session, on their own stream;
    /// those parked on the input requests of a task that ended are answered there.
    fn ask_in_sessions(&mut self, now: Instant) {
        let mut sessions: Vec<String> = (self.server.results_to_ask_on().iter())
            .filter_map(|r| match r {
                RequestId::Number(k) => self.exchanges.get(k)?.session.clone(),
                RequestId::String(_) => None,
            })
            .collect();
        // And those whose `tasks/result` parked on a task's input requests must end: the
        // task ended (expired, or gone) while another session was in the machine. The
        // machine keeps those tasks marked: no walk of the sessions.
        for task in self.server.parked_elsewhere_due(now) {
            match self
                .sessions
                .as_ref()
                .and_then(|t| t.parked_session_of(&task))
            {
                Some(session) => sessions.push(session.to_owned()),
                // Not parked on any more (cannot happen: the marks follow the states).
                None => self.server.tasks.mark_parked_elsewhere(&task, None, false),
            }
        }
        sessions.sort_unstable();
        sessions.dedup();
        for session in sessions {
            self.in_session(Some(&session), now, |e| {
                e.server.after_input();
                e.route(None);
            });
        }
    }

    /// Resumes every call whose work completed, each in its own session.
    fn resume_completed(&mut self, now: Instant) {
        while let Some((work, outcome, request)) = self.server.poll_deferred() {
            let key = match request {
                RequestId::Number(key) => Some(key),
                RequestId::String(_) => None,
            };
            let exchange = key.and_then(|k| self.exchanges.get(&k));
            let session = exchange.and_then(|e| e.session.clone());
            let principal = exchange.and_then(|e| e.principal.clone());
            self.server.set_principal(principal);
            self.in_session(session.as_deref(), now, |e| {
                e.server.resume_deferred(now, work, outcome);
                e.route(key);
            });
        }
    }

    /// Hands the endpoint `now` when its next deadline has passed
    /// ([`HttpEndpoint::poll_timeout`], [`HttpEndpoint::handle_timeout`]): whether it was
    /// due. Drain [`HttpEndpoint::poll_ready`] (or [`HttpEndpoint::take_ready`]) after a
    /// `true`.
    pub fn handle_due(&mut self, now: Instant) -> bool {
        let due = self.poll_timeout().is_some_and(|t| t <= now);
        if due {
            self.handle_timeout(now);
        }
        due
    }

    /// For a driver that keeps one timer for the endpoint's deadlines: the instant to set
    /// it for ([`HttpEndpoint::poll_timeout`]; `None`: no deadline, sleep until woken),
    /// remembered so that [`HttpEndpoint::take_timer_moved`] can tell when it is no
    /// longer the earliest. Call it each time the timer is set (after
    /// [`HttpEndpoint::handle_due`]).
    #[must_use]
    pub fn arm_timer(&mut self) -> Option<Instant> {
        self.timer = self.poll_timeout();
        self.timer
    }

    /// Whether the endpoint's next deadline is now earlier than the one the driver's
    /// timer was last set for ([`HttpEndpoint::arm_timer`]), or there is one where there
    /// was none: a request, a cancellation or an application's change made work fall due
    /// sooner. When `true`, wake the timer so that it is set again; the new deadline
    /// counts as set, so the same move is reported once. A deadline that moved later
    /// needs nothing: the timer fires early, finds nothing due, and is set again. Ask
    /// after every change to the endpoint, with [`HttpEndpoint::take_ready`]; this is
    /// how a driver hands the endpoint its deadlines with no periodic polling.
    #[must_use]
    pub fn take_timer_moved(&mut self) -> bool {
        let next = self.poll_timeout();
        let moved = match (next, self.timer) {
            (Some(next), Some(set)) => next < set,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if moved {
            self.timer = next;
        }
        moved
    }
}
