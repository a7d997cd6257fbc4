//! Routing the machine's output: [`HttpEndpoint::route`] drains the machine after each
//! input and hands every message to the exchange (or `GET` stream) it belongs to, under
//! the ids the client knows (*Routing and ids* in the module docs of [`super`]); the
//! queueing of those messages, stored first for a resumable stream, with the bound on
//! what an open stream may leave unread; and the ends of exchanges: answered,
//! cancelled in the machine, forgotten.

use serde_json::{Value, json};

use crate::Instant;
use crate::jsonrpc::{self, ErrorObject, Message, Notification, RequestId, Response, codes};

use super::super::notify;
use super::HttpEndpoint;
#[cfg(doc)]
use super::HttpEndpointConfig;
use super::exchange::{
    Event, Exchange, ServerRequest, change_holding, detach, held_changed, holds_session,
};

impl HttpEndpoint {
    /// Queues a message for an exchange: stored first when it is a session's stream,
    /// queued for writing unless its client went away (the store keeps it for a
    /// resumption).
    fn queue_for_exchange(&mut self, key: i64, data: Vec<u8>) {
        let Some(exchange) = self.exchanges.get(&key) else {
            return;
        };
        let id = match (exchange.stream, &exchange.session) {
            (Some(number), Some(session)) => {
                let session = session.clone();
                self.store_event(&session, number, &data)
            }
            _ => None,
        };
        let Some(exchange) = self.exchanges.get_mut(&key) else {
            return;
        };
        if exchange.stream.is_none() || exchange.attach.is_some() {
            exchange.events.push_in(self.turn, Event { id, data });
            if exchange.streaming {
                self.ready.insert(key);
            }
            let behind = exchange.attach.is_some()
                && !exchange.answered
                && exchange.events.behind(self.config.max_stream_backlog);
            if behind {
                self.end_backlogged(key);
            }
        }
    }

    /// The client of the open stream of exchange `key` fell more than
    /// [`HttpEndpointConfig::max_stream_backlog`] behind. A session's stream is detached
    /// (what it missed is stored for a `Last-Event-ID`); any other ends with an error
    /// after what is waiting, and the machine forgets its request (a listen ends). Runs
    /// while [`HttpEndpoint::route`] drains the machine, which takes what the
    /// cancellation says, if anything.
    fn end_backlogged(&mut self, key: i64) {
        let Some(exchange) = self.exchanges.get_mut(&key) else {
            return;
        };
        self.ready.insert(key);
        if exchange.stream.is_some() {
            change_holding(&mut self.sessions, exchange, detach);
            return;
        }
        let max = self.config.max_stream_backlog;
        let error = ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!(
                "Cancelled by the server: the client fell more than {max} bytes behind \
                 reading this stream, and messages after these were not sent"
            ),
        );
        self.answer_exchange(
            key,
            Response {
                id: None,
                outcome: Err(error),
            },
        );
        self.server.cancel_request(&RequestId::Number(key));
    }

    /// Queues a message for a standalone `GET` stream (stored first).
    pub(super) fn queue_for_listener(&mut self, key: i64, data: Vec<u8>) {
        let Some(l) = self.listeners.get(&key) else {
            return;
        };
        let (session, number) = (l.session.clone(), l.stream);
        let id = self.store_event(&session, number, &data);
        if let Some(l) = self.listeners.get_mut(&key)
            && l.attach.is_some()
        {
            l.events.push_in(self.turn, Event { id, data });
            self.ready.insert(key);
            if l.events.behind(self.config.max_stream_backlog) {
                // Its client fell too far behind: detached, as if it had gone away. What
                // it missed is stored, for a `Last-Event-ID`.
                l.attach = None;
                l.events.clear();
                held_changed(&mut self.sessions, Some(&l.session), true, false);
            }
        }
    }

    /// The standalone `GET` stream of the session in the machine, if it has one.
    fn current_listener(&self) -> Option<i64> {
        let session = self.current_session.as_deref()?;
        self.listeners
            .iter()
            .find(|(_, l)| l.session == session && !l.ended)
            .map(|(k, _)| *k)
    }

    /// Drains the machine and hands each message to its exchange; `context` is the
    /// exchange whose input was just fed (it receives server→client requests and
    /// notifications). Without one (or when it is a `GET` stream's), requests and
    /// notifications go to the standalone `GET` stream of the session in the machine, if
    /// it has one, and are dropped otherwise.
    pub(super) fn route(&mut self, context: Option<i64>) {
        while let Some(bytes) = self.server.poll_message() {
            let Some(bytes) = self.route_own_result(bytes) else {
                continue;
            };
            let Ok(message) = Message::decode(&bytes) else {
                continue;
            };
            let open = context.filter(|k| self.exchanges.get(k).is_some_and(|e| !e.answered));
            match message {
                Message::Notification(mut n) if let Some(k) = self.listen_of(&n) => {
                    // A 2026 listen's: on its own stream, under the id its client used.
                    if let Some(original) = self.exchanges.get(&k).map(|e| e.original.clone()) {
                        n.params = n.params.map(|p| with_subscription_id(&p, &original));
                    }
                    let mut out = Vec::new();
                    Message::Notification(n).encode(&mut out);
                    self.queue_for_exchange(k, out);
                }
                Message::Notification(n) if n.method == "notifications/tasks/status" => {
                    // A task's status is the session's news, not the request's: it goes
                    // on the session's `GET` stream (dropped without one).
                    if let Some(k) = self.current_listener() {
                        self.queue_for_listener(k, bytes);
                    }
                }
                Message::Response(r) => {
                    let key = match &r.id {
                        Some(RequestId::Number(k)) => Some(*k),
                        None => context,
                        Some(RequestId::String(_)) => None,
                    };
                    if let Some(key) = key {
                        self.answer_exchange(key, r);
                    }
                }
                Message::Request(mut r) => {
                    // On the stream of the call it asks for, else of the request being
                    // handled, else the session's `GET` stream.
                    let serving = match self.server.call_asking(&r.id) {
                        Some(RequestId::Number(k)) => Some(*k),
                        _ => None,
                    };
                    let serving =
                        serving.filter(|k| self.exchanges.get(k).is_some_and(|e| !e.answered));
                    let on_exchange = serving.or(open);
                    let Some(k) = on_exchange.or_else(|| self.current_listener()) else {
                        continue;
                    };
                    // With sessions the client sees an unguessable id, never the
                    // machine's counter.
                    let public = match &mut self.sessions {
                        Some(t) => RequestId::String(t.token()),
                        None => r.id.clone(),
                    };
                    let machine_id = std::mem::replace(&mut r.id, public.clone());
                    let (owner, principal) = match self.exchanges.get(&k) {
                        Some(e) => (e.session.clone(), e.principal.clone()),
                        None => self
                            .listeners
                            .get(&k)
                            .map(|l| (Some(l.session.clone()), l.principal.clone()))
                            .unwrap_or_default(),
                    };
                    let asked = ServerRequest {
                        exchange: k,
                        machine_id,
                        principal,
                    };
                    self.server_requests.insert((owner, public), asked);
                    let mut out = Vec::new();
                    Message::Request(r).encode(&mut out);
                    if on_exchange.is_some() {
                        self.queue_for_exchange(k, out);
                    } else {
                        self.queue_for_listener(k, out);
                    }
                }
                _ => match open {
                    Some(k) => self.queue_for_exchange(k, bytes),
                    None => {
                        if let Some(k) = self.current_listener() {
                            self.queue_for_listener(k, bytes);
                        }
                    }
                },
            }
        }
    }

    /// The common case of [`HttpEndpoint::route`] without reading the machine's text
    /// again: a successful answer to an exchange that is not a listen, under the id the
    /// endpoint gave it. Its result is left as it is and its id is
    /// replaced by the client's in place. Returns the message when it is anything else,
    /// for the general way.
    fn route_own_result(&mut self, bytes: Vec<u8>) -> Option<Vec<u8>> {
        let Some((key, end)) = jsonrpc::own_result_id(&bytes) else {
            return Some(bytes);
        };
        // An answer to no exchange, or to one already answered, is dropped (`None`), as
        // the general way drops it.
        let exchange = self.exchanges.get_mut(&key)?;
        if exchange.answered {
            return None;
        }
        // A listen's end names its subscription: that one is rewritten the general way.
        if exchange.listen {
            return Some(bytes);
        }
        exchange.error_code = None;
        exchange.answered = true;
        let detached = exchange.streaming && exchange.attach.is_none();
        let out = jsonrpc::replace_own_result_id(bytes, &exchange.original, end);
        self.queue_for_exchange(key, out);
        if detached {
            self.forget(key);
        }
        None
    }

    /// The open exchange of the 2026 listen a notification names in its `_meta`
    /// (`io.modelcontextprotocol/subscriptionId`, the endpoint's id of the listen).
    fn listen_of(&self, n: &Notification) -> Option<i64> {
        let params = n.params.as_deref()?;
        if !params.get().contains(notify::SUBSCRIPTION_ID) {
            return None;
        }
        let value: Value = serde_json::from_str(params.get()).ok()?;
        let key = value.get("_meta")?.get(notify::SUBSCRIPTION_ID)?.as_i64()?;
        self.exchanges
            .get(&key)
            .is_some_and(|e| !e.answered && e.session.is_none())
            .then_some(key)
    }

    /// Tells the machine the request `key` is cancelled and forgets it.
    pub(super) fn cancel(&mut self, now: Instant, key: i64, reason: &str) {
        if let Some(exchange) = self.forget(key) {
            self.tell_cancelled(now, exchange.session.as_deref(), key, reason);
        }
    }

    /// Hands the machine `notifications/cancelled` for the request `key` of `session`.
    pub(super) fn tell_cancelled(
        &mut self,
        now: Instant,
        session: Option<&str>,
        key: i64,
        reason: &str,
    ) {
        let params = json!({"requestId": key, "reason": reason});
        let n = Notification {
            method: "notifications/cancelled".to_owned(),
            params: Some(crate::jsonrpc::to_raw(&params)),
        };
        self.in_session(session, now, |e| {
            e.server.handle_message(now, Message::Notification(n));
            e.route(None);
        });
    }

    /// Hands exchange `key` its answer `r`, under the client's id (a listen's end names
    /// its subscription by the client's id too). An answer for a stream no client is
    /// attached to is stored for a resumption, and the exchange forgotten. An exchange
    /// keeps its first answer.
    pub(super) fn answer_exchange(&mut self, key: i64, mut r: Response) {
        let Some(exchange) = self.exchanges.get_mut(&key) else {
            return;
        };
        if exchange.answered {
            return;
        }
        r.id = Some(exchange.original.clone());
        if let Ok(result) = &mut r.outcome
            && exchange.listen
            && result.get().contains(notify::SUBSCRIPTION_ID)
        {
            *result = with_subscription_id(result, &exchange.original);
        }
        exchange.error_code = r.outcome.as_ref().err().map(|e| e.code);
        exchange.answered = true;
        let detached = exchange.streaming && exchange.attach.is_none();
        let mut out = Vec::new();
        Message::Response(r).encode(&mut out);
        self.queue_for_exchange(key, out);
        if detached {
            // Stored: a resumption replays it; nobody waits for it here.
            self.forget(key);
        }
    }

    /// Removes an exchange and the server→client requests routed to it.
    pub(super) fn forget(&mut self, key: i64) -> Option<Exchange> {
        let exchange = self.exchanges.remove(&key)?;
        let was = holds_session(&exchange);
        held_changed(&mut self.sessions, exchange.session.as_deref(), was, false);
        self.ready.remove(&key);
        self.server_requests
            .retain(|_, asked| asked.exchange != key);
        Some(exchange)
    }
}

/// `raw` (an object) with `_meta["io.modelcontextprotocol/subscriptionId"]` set to
/// `original`.
fn with_subscription_id(
    raw: &serde_json::value::RawValue,
    original: &RequestId,
) -> Box<serde_json::value::RawValue> {
    let Ok(mut value) = serde_json::from_str::<Value>(raw.get()) else {
        return crate::jsonrpc::to_raw(&Value::Null);
    };
    if let Some(meta) = value.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.insert(notify::SUBSCRIPTION_ID.into(), json!(original));
    }
    crate::jsonrpc::to_raw(&value)
}
