//! Open SSE streams, as a driver serves them: what an open stream has to write
//! ([`HttpEndpoint::poll_stream`], [`HttpEndpoint::poll_ready`]), its client going away
//! ([`HttpEndpoint::cancel_stream`]: a legacy session's stream is only detached), and the
//! `GET` requests of a legacy session: its standalone stream, and the resumption of any
//! of its streams with `Last-Event-ID` from the event store (*Resumable streams* in the
//! module docs of [`super`]). Each connection serving a stream holds an attachment
//! number; a resumption hands out a new one, and the connection holding the old one ends.

use crate::Instant;
use crate::http::HttpVersion;
use crate::http::headers::MCP_SESSION_ID;
use crate::jsonrpc::{ErrorObject, codes};
use crate::version::ProtocolVersion;

use super::answers::{sse_head, write_events};
use super::events::EventStream;
use super::exchange::{Backlog, Listener, change_holding, detach, held_changed};
use super::reader::HttpRequest;
use super::response::{HttpResponse, HttpStream, sse_event_with_id};
use super::validate::{self, legacy_version_header};
use super::{HttpEndpoint, HttpReply, StreamId, StreamStatus};

impl HttpEndpoint {
    /// Appends what arrived for an open stream to `out` (SSE events in the stream's
    /// framing); when the answer was among them, or the exchange was cancelled, also the
    /// end of the body, and returns [`StreamStatus::Finished`].
    pub fn poll_stream(&mut self, stream: &HttpStream, out: &mut Vec<u8>) -> StreamStatus {
        if let Some(listener) = self.listeners.get_mut(&stream.key)
            && listener.attach == Some(stream.attach)
        {
            let mut data = Vec::new();
            write_events(&mut data, listener.events.take().into_iter());
            stream.write_data(out, &data);
            if listener.ended {
                let session = Some(listener.session.as_str());
                held_changed(&mut self.sessions, session, true, false);
                self.listeners.remove(&stream.key);
                self.ready.remove(&stream.key);
                stream.write_end(out);
                return StreamStatus::Finished;
            }
            return StreamStatus::Open;
        }
        let exchange = self
            .exchanges
            .get_mut(&stream.key)
            .filter(|e| e.attach == Some(stream.attach));
        let Some(exchange) = exchange else {
            // Gone, or resumed on another connection: this one ends.
            if !self.exchanges.contains_key(&stream.key)
                && !self.listeners.contains_key(&stream.key)
            {
                self.ready.remove(&stream.key);
            }
            stream.write_end(out);
            return StreamStatus::Finished;
        };
        let mut data = Vec::new();
        write_events(&mut data, exchange.events.take().into_iter());
        stream.write_data(out, &data);
        if exchange.answered {
            self.forget(stream.key);
            stream.write_end(out);
            return StreamStatus::Finished;
        }
        StreamStatus::Open
    }

    /// The next open stream with output waiting (events, or its end) since it was last
    /// reported. Output for open streams only ever appears while the endpoint handles
    /// input ([`HttpEndpoint::handle_request`], [`HttpEndpoint::cancel_stream`]): drain
    /// this after each, and wake whoever serves those streams. No polling is needed.
    pub fn poll_ready(&mut self) -> Option<StreamId> {
        self.ready.pop_first().map(StreamId)
    }

    /// Drains [`HttpEndpoint::poll_ready`]: whether any open stream got output since it
    /// was last asked. For a driver that wakes all its waiting streams at once rather
    /// than each by its id.
    #[must_use]
    pub fn take_ready(&mut self) -> bool {
        let mut any = false;
        while self.poll_ready().is_some() {
            any = true;
        }
        any
    }

    /// Whether [`HttpEndpoint::poll_stream`] would write anything for `stream` now.
    #[must_use]
    pub fn stream_ready(&self, stream: &HttpStream) -> bool {
        if let Some(l) = self.listeners.get(&stream.key)
            && l.attach == Some(stream.attach)
        {
            return l.ended || !l.events.is_empty();
        }
        self.exchanges
            .get(&stream.key)
            .filter(|e| e.attach == Some(stream.attach))
            .is_none_or(|e| e.answered || !e.events.is_empty())
    }

    /// The client of an open stream went away. A resumable stream (a legacy session's)
    /// is only detached: its request goes on, its events are kept, and the client may
    /// resume it with `GET` and `Last-Event-ID` (spec 2025-06-18: a disconnect is not a
    /// cancellation). Otherwise the machine gets `notifications/cancelled` for the
    /// request, and nothing more is sent for it. A stream already resumed elsewhere is
    /// left alone.
    pub fn cancel_stream(&mut self, now: Instant, stream: &HttpStream) {
        self.next_turn();
        if let Some(l) = self.listeners.get_mut(&stream.key) {
            if l.attach == Some(stream.attach) {
                l.attach = None;
                l.events.clear();
                held_changed(&mut self.sessions, Some(&l.session), true, false);
            }
            return;
        }
        let Some(exchange) = self.exchanges.get_mut(&stream.key) else {
            return;
        };
        if exchange.attach != Some(stream.attach) {
            return;
        }
        if exchange.answered {
            // Its answer is stored (a session's stream) or nobody will read it.
            self.forget(stream.key);
            return;
        }
        if exchange.stream.is_some() {
            change_holding(&mut self.sessions, exchange, detach);
            return;
        }
        self.cancel(now, stream.key, "the HTTP client disconnected");
    }

    /// `GET` on the endpoint of a legacy session: resumes a stream (`Last-Event-ID`), or
    /// opens the session's standalone stream (at most one served at once: 409).
    pub(super) fn get_stream(&mut self, now: Instant, http: &HttpRequest) -> HttpReply {
        let complete = HttpReply::Complete;
        if !validate::accepts_event_stream(http) {
            let e = ErrorObject::new(
                codes::INVALID_REQUEST,
                "Not Acceptable: a GET stream needs Accept: text/event-stream",
            );
            return complete(HttpResponse::json_error(406, None, &e));
        }
        let Some(session) = http.header(MCP_SESSION_ID).map(str::to_owned) else {
            let e = ErrorObject::new(
                codes::INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required",
            );
            return complete(HttpResponse::json_error(400, None, &e));
        };
        if let Err(refused) = self.session_live(&session, now) {
            return complete(refused);
        }
        if let Err(e) = legacy_version_header(&self.server, http) {
            return complete(HttpResponse::json_error(400, None, &e));
        }
        let primes = self.in_session(Some(&session), now, |e| e.primes());
        let framing = (http.version == HttpVersion::Http11, !http.keep_alive());
        if let Some(last) = http.header_bytes("last-event-id") {
            return self.resume(now, &session, last, primes, framing);
        }
        let served = self
            .listeners
            .values()
            .any(|l| l.session == session && l.attach.is_some() && !l.ended);
        if served {
            let e = ErrorObject::new(
                codes::INVALID_REQUEST,
                "Conflict: this session's GET stream is already open",
            );
            return complete(HttpResponse::json_error(409, None, &e));
        }
        if let Some(refused) = self.get_streams_full() {
            return refused;
        }
        // A GET stream whose client went away without resuming is replaced.
        let sessions = &mut self.sessions;
        self.listeners.retain(|_, l| {
            let replaced = l.session == session;
            if replaced {
                held_changed(sessions, Some(&l.session), l.attach.is_some(), false);
            }
            !replaced
        });
        let key = self.fresh_key();
        let number = self.fresh_stream();
        let attach = self.fresh_attach();
        let mut body = Vec::new();
        if primes {
            let id = self.store_event(&session, number, b"");
            sse_event_with_id(&mut body, id.as_deref(), None, b"");
        }
        held_changed(&mut self.sessions, Some(&session), false, true);
        self.listeners.insert(
            key,
            Listener {
                session,
                principal: self.server.principal.clone(),
                stream: number,
                events: Backlog::default(),
                attach: Some(attach),
                ended: false,
            },
        );
        HttpReply::Stream(self.open_stream((key, attach), body, framing))
    }

    /// `GET` with `Last-Event-ID`: what the session's stream missed after that id, then
    /// (for a stream still going) what comes next. An id that is malformed, unknown,
    /// evicted or of another session's stream gets 400 and nothing else.
    fn resume(
        &mut self,
        now: Instant,
        session: &str,
        last: &[u8],
        primes: bool,
        framing: (bool, bool),
    ) -> HttpReply {
        let replay = std::str::from_utf8(last)
            .ok()
            .map(str::trim)
            .and_then(|id| self.store.as_ref()?.replay_after(id).ok())
            .filter(|r| r.stream.session == session);
        let Some(replay) = replay else {
            let e = ErrorObject::new(
                codes::INVALID_REQUEST,
                "Bad Request: Last-Event-ID names no event this session can resume after",
            );
            return HttpReply::Complete(HttpResponse::json_error(400, None, &e));
        };
        let number = replay.stream.number;
        let mut body = Vec::new();
        for event in &replay.events {
            if !event.message.is_empty() {
                sse_event_with_id(&mut body, Some(&event.id), None, &event.message);
            }
        }
        let listener = self
            .listeners
            .iter()
            .find(|(_, l)| l.stream == number && !l.ended)
            .map(|(k, _)| *k);
        if let Some(key) = listener {
            let detached = self.listeners.get(&key).is_some_and(|l| l.attach.is_none());
            if detached && let Some(refused) = self.get_streams_full() {
                return refused;
            }
            let attach = self.fresh_attach();
            if let Some(l) = self.listeners.get_mut(&key) {
                held_changed(
                    &mut self.sessions,
                    Some(&l.session),
                    l.attach.is_some(),
                    true,
                );
                l.attach = Some(attach);
                l.events.clear();
            }
            // The connection still serving the old attachment ends.
            self.ready.insert(key);
            return HttpReply::Stream(self.open_stream((key, attach), body, framing));
        }
        let exchange = self
            .exchanges
            .iter()
            .find(|(_, e)| e.stream == Some(number))
            .map(|(k, _)| *k);
        let Some(key) = exchange else {
            // The request was answered, or (with a shared store) it runs in another
            // process: what is stored is all this endpoint can give. When polling, the
            // client is told to come back, which it only does while its response is
            // missing.
            if primes && self.config.sse_polling && self.session_store.is_some() {
                body.extend_from_slice(
                    format!("retry: {}\n\n", self.config.sse_retry.as_millis()).as_bytes(),
                );
            }
            return HttpReply::Complete(sse_head(body));
        };
        if primes && self.config.sse_polling {
            let due = self.next_poll_due(now);
            if let Some(e) = self.exchanges.get_mut(&key) {
                change_holding(&mut self.sessions, e, |e| {
                    detach(e);
                    e.poll_due = Some(due);
                });
            }
            body.extend_from_slice(
                format!("retry: {}\n\n", self.config.sse_retry.as_millis()).as_bytes(),
            );
            return HttpReply::Complete(sse_head(body));
        }
        let attach = self.fresh_attach();
        if let Some(e) = self.exchanges.get_mut(&key) {
            change_holding(&mut self.sessions, e, |e| {
                e.attach = Some(attach);
                e.events.clear();
            });
        }
        self.ready.insert(key);
        HttpReply::Stream(self.open_stream((key, attach), body, framing))
    }

    /// An open SSE stream with `body` as its events so far.
    fn open_stream(
        &self,
        name: (i64, u64),
        body: Vec<u8>,
        (chunked, close): (bool, bool),
    ) -> HttpStream {
        let mut head = sse_head(body);
        if close {
            head = head.with_header("Connection", "close");
        }
        HttpStream::new(name, head, chunked, close)
    }

    /// Whether the session in the machine speaks 2025-11-25 or later: its streams start
    /// with a priming event and may be polled (SEP-1699).
    pub(super) fn primes(&self) -> bool {
        self.server
            .legacy_version()
            .is_some_and(|v| v >= ProtocolVersion::V2025_11_25)
    }

    /// Stores an event of stream `number` of `session`; its id, unless the store
    /// refused it (it then goes out without one).
    pub(super) fn store_event(
        &mut self,
        session: &str,
        number: u64,
        message: &[u8],
    ) -> Option<String> {
        let stream = EventStream {
            session: session.to_owned(),
            number,
        };
        self.store.as_mut()?.append(&stream, message).ok()
    }

    pub(super) fn fresh_stream(&mut self) -> u64 {
        let n = self.next_stream;
        self.next_stream = self.next_stream.wrapping_add(1);
        n
    }

    pub(super) fn fresh_attach(&mut self) -> u64 {
        let n = self.next_attach;
        self.next_attach = self.next_attach.wrapping_add(1);
        n
    }
}
