//! What the application changes, delivered: [`HttpEndpoint::update_server`] runs its
//! change on the machine and routes what that says (2026 listens get their
//! notifications on their streams), then tells each legacy session with a `GET` stream
//! of every change as the machine would tell it; [`HttpEndpoint::notify_listeners`] and
//! [`HttpEndpoint::resource_updated`] send one notification there. Sessions without a
//! `GET` stream do not hear of it (*Listens and changes* in the module docs of
//! [`super`]).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::Instant;
use crate::client::LogLevel;
use crate::jsonrpc::{Message, Notification};

use super::super::notify;
use super::{HttpEndpoint, Server};

impl HttpEndpoint {
    /// Sends a notification (`list_changed`, a log message, …) on the standalone `GET`
    /// stream of every legacy session that opened one; returns how many streams got it.
    /// Sessions without such a stream do not hear of it, nor does a session of a
    /// `notifications/message` whose `level` is below the one it set with
    /// `logging/setLevel`. Drain [`HttpEndpoint::poll_ready`] afterwards.
    pub fn notify_listeners(&mut self, method: &str, params: Option<&Value>) -> usize {
        self.next_turn();
        let level = (method == "notifications/message")
            .then(|| params?.get("level")?.as_str().and_then(LogLevel::parse))
            .flatten();
        let n = Notification {
            method: method.to_owned(),
            params: params.map(crate::jsonrpc::to_raw),
        };
        let mut bytes = Vec::new();
        Message::Notification(n).encode(&mut bytes);
        let sessions = self.sessions.as_ref();
        let admits = |session: &str| {
            let threshold = sessions.and_then(|t| t.state(session)?.log_level());
            level.is_none_or(|level| threshold.is_none_or(|min| level >= min))
        };
        let keys: Vec<i64> = self
            .listeners
            .iter()
            .filter(|(_, l)| !l.ended && admits(&l.session))
            .map(|(k, _)| *k)
            .collect();
        for key in &keys {
            self.queue_for_listener(*key, bytes.clone());
        }
        keys.len()
    }

    /// Runs `f` on the server machine (to change its catalog: [`Server::add_tool`],
    /// [`Server::remove_prompt`], [`Server::list_changed`], [`Server::resource_updated`],
    /// …; or to end its listens: [`Server::end_subscriptions`]) and delivers what that
    /// says: 2026 listens get their notifications (and results) on their streams, and
    /// every legacy session with a standalone `GET` stream is told of each change there,
    /// as the machine tells a session (list changes with
    /// [`ServerConfig::list_changed`](crate::server::ServerConfig::list_changed), resource
    /// updates when it subscribed). Sessions without a `GET` stream do not hear of it.
    /// Drain [`HttpEndpoint::poll_ready`] afterwards.
    pub fn update_server<R>(&mut self, now: Instant, f: impl FnOnce(&mut Server) -> R) -> R {
        self.next_turn();
        self.server.record_changes(true);
        let result = f(&mut self.server);
        let changes = self.server.take_changes();
        self.server.record_changes(false);
        self.route(None);
        if !changes.is_empty() {
            self.tell_sessions(now, &changes);
        }
        result
    }

    /// The legacy sessions with a standalone `GET` stream open.
    pub(super) fn listening_sessions(&self) -> BTreeSet<String> {
        self.listeners
            .values()
            .filter(|l| !l.ended)
            .map(|l| l.session.clone())
            .collect()
    }

    /// Tells every legacy session with a standalone `GET` stream of `changes`; how many
    /// notifications went out.
    fn tell_sessions(&mut self, now: Instant, changes: &[notify::Change]) -> usize {
        let sessions = self.listening_sessions();
        let mut told = 0;
        for session in sessions {
            told += self.in_session(Some(&session), now, |e| {
                let mut told = 0;
                for change in changes {
                    let sent = match change {
                        notify::Change::List(kind) => e.server.legacy_list_changed(*kind),
                        notify::Change::Resource(uri) => e.server.legacy_resource_updated(uri),
                    };
                    told += usize::from(sent);
                }
                e.route(None);
                told
            });
        }
        told
    }

    /// Tells every legacy session with a standalone `GET` stream that resource `uri`
    /// changed (those subscribed to it get `notifications/resources/updated` there), and
    /// every 2026 listen naming it on its stream ([`Server::resource_updated`]). Returns
    /// how many streams were told.
    pub fn resource_updated(&mut self, now: Instant, uri: &str) -> usize {
        self.next_turn();
        let listens = self.server.listens_naming(uri);
        self.server.resource_updated(uri);
        self.route(None);
        listens + self.tell_sessions(now, &[notify::Change::Resource(uri.to_owned())])
    }
}
