//! A request, from its arrival to its reply: the checks before the machine (`Host`,
//! `Origin`, CORS preflight, the application's gate, path, method, `Content-Type`, the
//! body; *Checks before the machine* in the module docs of [`super`]), the era of a
//! posted request and its header checks, and the hand-over to the machine under an
//! endpoint-unique id ([`HttpEndpoint::run`]), whose reply is a complete response or an
//! open stream. Posted notifications and responses (the answers to server→client
//! requests) are taken here too, each reaching the machine only when it is its poster's
//! to send.

use std::collections::btree_map::Entry;

use serde_json::{Map, Value};

use crate::Instant;
use crate::http::HttpVersion;
use crate::http::headers::MCP_PROTOCOL_VERSION;
use crate::jsonrpc::{
    self, ErrorObject, Message, Notification, Request, RequestId, Response, codes,
};
use crate::version::{Era, ProtocolVersion};

use super::super::id_of;
use super::super::meta_cache::with_lent_meta;
#[cfg(doc)]
use super::Server;
use super::answers::{answer, finish_complete, sse_head, write_events};
use super::cors;
use super::exchange::{Backlog, Event, Exchange, change_holding, held_changed};
use super::gate::GateVerdict;
use super::reader::HttpRequest;
use super::response::{HttpResponse, HttpStream, sse_event_with_id};
use super::validate::{legacy_version_header, modern_checks, origin_allowed};
use super::{HttpEndpoint, HttpReply};

impl HttpEndpoint {
    /// Serves one request from a client that is not authenticated (no principal). Never
    /// fails: every problem is an HTTP answer.
    pub fn handle_request(&mut self, now: Instant, request: &HttpRequest) -> HttpReply {
        self.handle_request_as(now, request, None)
    }

    /// Serves one request whose client the embedding application authenticated as
    /// `principal` (from a verified token, a client certificate, …): a sealed
    /// `requestState` issued to one principal does not open for another
    /// ([`Server::set_principal`]).
    pub fn handle_request_as(
        &mut self,
        now: Instant,
        request: &HttpRequest,
        principal: Option<&str>,
    ) -> HttpReply {
        self.next_turn();
        let close = !request.keep_alive();
        // A refusal, and a preflight (which carries no credentials for the gate), are
        // answered first; neither needs more CORS headers than it has.
        if let Some(early) = self
            .refuse_foreign(request)
            .or_else(|| cors::preflight(request))
        {
            return HttpReply::Complete(finish_complete(request, close, early));
        }
        let verdict = self.gate.as_mut().map(|g| g.check(now, request));
        let reply = match verdict {
            Some(GateVerdict::Answer(response)) => HttpReply::Complete(response),
            Some(GateVerdict::Pass { principal }) => {
                self.server.set_principal(principal);
                self.dispatch(now, request, close)
            }
            None => {
                self.server.set_principal(principal.map(str::to_owned));
                self.dispatch(now, request, close)
            }
        };
        #[cfg(any(test, feature = "index-checks"))]
        self.check_session_indexes();
        match reply {
            HttpReply::Complete(mut response) => {
                cors::allow_headers(request, &mut response.headers);
                HttpReply::Complete(finish_complete(request, close, response))
            }
            HttpReply::Stream(mut stream) => {
                cors::allow_headers(request, &mut stream.head.headers);
                HttpReply::Stream(stream)
            }
        }
    }

    /// The `403` of a request from a `Host` or an `Origin` not allowed.
    fn refuse_foreign(&self, http: &HttpRequest) -> Option<HttpResponse> {
        // An absolute-form target names the host itself, and `Host` is then ignored.
        let host = match http.authority() {
            Some(authority) => Some(authority.as_bytes()),
            None => http.header_bytes("host"),
        };
        if !self.config.host_allowed(host) {
            let why = if host.is_some() {
                "Forbidden: Host not allowed"
            } else {
                "Forbidden: the request names no host (Host header)"
            };
            let e = ErrorObject::new(codes::INVALID_REQUEST, why);
            return Some(HttpResponse::json_error(403, None, &e));
        }
        if let Some(origin) = http.header_bytes("origin")
            && !origin_allowed(origin, &self.config.allowed_origins)
        {
            let e = ErrorObject::new(codes::INVALID_REQUEST, "Forbidden: Origin not allowed");
            return Some(HttpResponse::json_error(403, None, &e));
        }
        None
    }

    /// `close`: the connection ends after this request (it does not keep it alive).
    fn dispatch(&mut self, now: Instant, http: &HttpRequest, close: bool) -> HttpReply {
        let complete = HttpReply::Complete;
        if http.path() != self.config.path {
            return complete(HttpResponse::new(404));
        }
        let stateful =
            self.sessions.is_some() && self.server.config().versions.newest(Era::Legacy).is_some();
        if http.method_is("DELETE") && stateful {
            if let Err(e) = legacy_version_header(&self.server, http) {
                return complete(HttpResponse::json_error(400, None, &e));
            }
            return complete(self.end_session(now, http));
        }
        // Looked at only for a GET (the version header is read again for a POST).
        let modern_get = || {
            http.header(MCP_PROTOCOL_VERSION)
                .and_then(ProtocolVersion::parse)
                .is_some_and(|v| v.era() == Era::Modern)
        };
        if http.method_is("GET") && stateful && !modern_get() {
            return self.get_stream(now, http);
        }
        if !http.method_is("POST") {
            let allow = if stateful {
                "GET, POST, DELETE"
            } else {
                "POST"
            };
            return complete(HttpResponse::new(405).with_header("Allow", allow));
        }
        if let Some(ct) = http.header_bytes("content-type") {
            let media = ct.split(|b| *b == b';').next().unwrap_or_default();
            if !media.trim_ascii().eq_ignore_ascii_case(b"application/json") {
                let e = ErrorObject::new(
                    codes::INVALID_REQUEST,
                    "Unsupported Media Type: the body must be application/json",
                );
                return complete(HttpResponse::json_error(415, None, &e));
            }
        }
        if let Err(e) = self.server.admit(&http.body) {
            return complete(self.refuse_body(now, http, e));
        }
        // A request with an object (or no) params, the common case, is read in one pass,
        // its `_meta` taken from the machine's last request when the text is the same (as
        // on stdio); anything else the general way.
        if let Some((request, split)) = self.server.split_request(&http.body) {
            let serve = |e: &mut Self, params: &mut Map<String, Value>| {
                e.request(now, request, Some(params), http, close)
            };
            if let Some(reply) = with_lent_meta(self, |e| &mut e.server, split, serve) {
                return reply;
            }
        }
        let message = match Message::decode(&http.body) {
            Ok(m) => m,
            Err(e) => {
                // Read again as any JSON only now, to tell text that is not JSON (a parse
                // error) from a message of the wrong shape (answered with its id).
                if serde_json::from_slice::<serde::de::IgnoredAny>(&http.body).is_err() {
                    let e = ErrorObject::new(codes::PARSE_ERROR, "Parse error");
                    return complete(HttpResponse::json_error(400, None, &e));
                }
                let e = ErrorObject::new(codes::INVALID_REQUEST, format!("Invalid request: {e}"));
                return complete(self.refuse_body(now, http, e));
            }
        };
        if let Message::Request(mut request) = message {
            // The params are read once, here: the checks below look at them and the server
            // takes them as they are. Params that are not an object stay with the request
            // for the server to refuse.
            // Unreadable params are refused here, before any check takes them for absent.
            let mut params = match super::super::read_params(request.params.as_deref()) {
                Ok(params) => params,
                Err(e) => return complete(HttpResponse::json_error(400, Some(&request.id), &e)),
            };
            if params.is_some() {
                request.params = None;
            }
            return self.request(now, request, params.as_mut(), http, close);
        }
        // A notification or response of a legacy client names a version it serves, as
        // its requests do (a 2026 one is checked by the machine, with its `_meta`).
        let modern = (http
            .header(MCP_PROTOCOL_VERSION)
            .and_then(ProtocolVersion::parse))
        .is_some_and(|v| v.era() == Era::Modern);
        if !modern && let Err(e) = legacy_version_header(&self.server, http) {
            return complete(HttpResponse::json_error(400, None, &e));
        }
        // A notification or response belongs to the session it names, if any.
        let session = match self.named_session(now, http) {
            Ok(session) => session,
            Err(not_found) => return complete(not_found),
        };
        match message {
            Message::Notification(n) => complete(self.notification(now, n, session)),
            Message::Response(r) => complete(self.client_response(now, r, session)),
            Message::Request(_) => complete(HttpResponse::new(500)),
        }
    }

    fn request(
        &mut self,
        now: Instant,
        request: Request,
        parsed: Option<&mut Map<String, Value>>,
        http: &HttpRequest,
        close: bool,
    ) -> HttpReply {
        let empty = Map::new();
        let params = parsed.as_deref().unwrap_or(&empty);
        let era = if self.is_modern(&request.method, params, http) {
            Era::Modern
        } else {
            Era::Legacy
        };
        let refuse = |e: &ErrorObject| {
            HttpReply::Complete(HttpResponse::json_error(400, Some(&request.id), e))
        };
        match era {
            Era::Modern => {
                let checks = modern_checks(&self.server, &request.method, params, http);
                if let Err(e) = checks {
                    return refuse(&e);
                }
            }
            _ if request.method == "initialize" => {
                if self.sessions.is_none() {
                    // Stateless legacy: every client's handshake replaces the last one,
                    // and the tasks of the one replaced become unreachable: they go.
                    if let Some(replaced) = self.server.session.take() {
                        self.server.tasks.drop_scopes(&[replaced.task_scope]);
                    }
                }
            }
            _ => {
                if let Err(e) = legacy_version_header(&self.server, http) {
                    return refuse(&e);
                }
            }
        }
        let initialize = request.method == "initialize";
        let chunked = http.version == HttpVersion::Http11;
        if era == Era::Legacy && self.sessions.is_some() {
            let request = (request, parsed);
            return self.in_legacy_session(now, request, http, initialize, (chunked, close));
        }
        let request = (request, parsed);
        self.run(now, request, era, initialize, (chunked, close), None)
    }

    /// Whether a request is served as 2026-07-28 (see the module docs).
    fn is_modern(&self, method: &str, params: &Map<String, Value>, http: &HttpRequest) -> bool {
        let versions = &self.server.config().versions;
        if versions.newest(Era::Modern).is_none() {
            return false;
        }
        if method == "initialize" {
            // Legacy, unless its `_meta` says it is a 2026-07-28 request.
            return self.server.is_modern(method, params);
        }
        self.server.is_modern(method, params)
            || http
                .header(MCP_PROTOCOL_VERSION)
                .and_then(crate::version::ProtocolVersion::parse)
                .is_some_and(|v| v.era() == Era::Modern)
    }

    /// Hands a request to the machine under an endpoint id and builds the reply. With its
    /// params already read (an object), the machine takes them as they are.
    pub(super) fn run(
        &mut self,
        now: Instant,
        (mut request, params): (Request, Option<&mut Map<String, Value>>),
        era: Era,
        initialize: bool,
        (chunked, close): (bool, bool),
        session: Option<&str>,
    ) -> HttpReply {
        self.drop_ended_sessions_tasks();
        let key = self.fresh_key();
        let original = std::mem::replace(&mut request.id, RequestId::Number(key));
        let resumable = session.filter(|_| self.store.is_some());
        self.exchanges.insert(
            key,
            Exchange {
                original: original.clone(),
                events: Backlog::default(),
                answered: false,
                error_code: None,
                streaming: false,
                session: session.map(str::to_owned),
                principal: self.server.principal.clone(),
                stream: None,
                attach: None,
                poll_due: None,
                listen: request.method == "subscriptions/listen",
            },
        );
        held_changed(&mut self.sessions, session, false, true);
        match params {
            // The era found by `request` is the machine's own: a request the endpoint
            // takes for modern by its header alone has passed `modern_checks`, so its
            // `_meta` names a protocol version, which makes it modern for the machine.
            Some(params) => {
                let modern = Some(era == Era::Modern);
                self.server.serve_parsed(now, request, params, modern);
            }
            None => self.server.handle_message(now, Message::Request(request)),
        }
        self.route(Some(key));
        let answered = self.exchanges.get(&key).is_some_and(|e| e.answered);
        let single = self
            .exchanges
            .get(&key)
            .is_some_and(|e| e.events.len() == 1);
        if answered
            && (single || resumable.is_none())
            && let Some(exchange) = self.forget(key)
        {
            return HttpReply::Complete(answer(exchange, era, initialize));
        }
        if !answered && let Some(refusal) = self.stream_refused(now, key) {
            return HttpReply::Complete(HttpResponse::json_error(503, Some(&original), &refusal));
        }
        let mut body = Vec::new();
        let mut polling = false;
        let queued: Vec<Event> = self
            .exchanges
            .get_mut(&key)
            .map(|e| e.events.take().into())
            .unwrap_or_default();
        if let Some(session) = resumable {
            // A stream of a session: every event gets an id, a 2025-11-25 stream starts
            // with a priming event, and in polling mode that is all the POST gets.
            let number = self.fresh_stream();
            let priming = self.primes();
            polling = priming && self.config.sse_polling;
            if priming {
                let id = self.store_event(session, number, b"");
                let retry = polling.then_some(self.config.sse_retry.as_millis());
                sse_event_with_id(&mut body, id.as_deref(), retry, b"");
            }
            for event in queued {
                let id = self.store_event(session, number, &event.data);
                if !polling {
                    sse_event_with_id(&mut body, id.as_deref(), None, &event.data);
                }
            }
            if let Some(exchange) = self.exchanges.get_mut(&key) {
                exchange.stream = Some(number);
            }
        } else {
            write_events(&mut body, queued.into_iter());
        }
        if answered || polling {
            // Everything is known (and stored), or the client is to poll for the rest.
            let due = self.next_poll_due(now);
            if answered {
                self.forget(key);
            } else if let Some(exchange) = self.exchanges.get_mut(&key) {
                change_holding(&mut self.sessions, exchange, |e| {
                    e.streaming = true;
                    e.poll_due = Some(due);
                });
            }
            return HttpReply::Complete(sse_head(body));
        }
        let attach = self.fresh_attach();
        if let Some(exchange) = self.exchanges.get_mut(&key) {
            change_holding(&mut self.sessions, exchange, |e| {
                e.streaming = true;
                e.attach = Some(attach);
            });
        }
        let mut head = sse_head(body);
        if close {
            head = head.with_header("Connection", "close");
        }
        HttpReply::Stream(HttpStream::new((key, attach), head, chunked, close))
    }

    /// A posted notification: 202. `notifications/cancelled` is mapped to the one open
    /// exchange with that request id of the poster's own session and principal, if
    /// exactly one has it. With neither a session nor a principal nothing ties the
    /// poster to any exchange (one anonymous client could cancel another's call by
    /// guessing its id), so the notification is ignored: such a client cancels by
    /// closing the stream, as 2026-07-28 prescribes.
    fn notification(
        &mut self,
        now: Instant,
        n: Notification,
        session: Option<String>,
    ) -> HttpResponse {
        if n.method == "notifications/cancelled" {
            let principal = self.server.principal.clone();
            if session.is_none() && principal.is_none() {
                return HttpResponse::new(202);
            }
            let target = n
                .params
                .as_deref()
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .and_then(|p| p.get("requestId").and_then(id_of));
            if let Some(target) = target {
                let mut open = self
                    .exchanges
                    .iter()
                    .filter(|(_, e)| {
                        e.streaming
                            && e.original == target
                            && e.session == session
                            && e.principal == principal
                    })
                    .map(|(k, _)| *k);
                if let (Some(key), None) = (open.next(), open.next()) {
                    self.cancel(now, key, "cancelled by the client");
                    // The stream's end is output for it: its driver must hear of it.
                    self.ready.insert(key);
                }
            }
            return HttpResponse::new(202);
        }
        self.in_session(session.as_deref(), now, |e| {
            e.server.handle_message(now, Message::Notification(n));
            e.route(None);
        });
        HttpResponse::new(202)
    }

    /// The `400` for a body that is JSON but no valid message (`error`). When it answers
    /// a request the server sent on the session it names (no `method`, the request's
    /// `id`), that request gets `error` as its answer, as over stdio: the call waiting
    /// for it fails rather than waiting for an answer that already came. An error about
    /// a response carries id null (with its own id the client would read it as the
    /// answer to its request of that id).
    fn refuse_body(
        &mut self,
        now: Instant,
        http: &HttpRequest,
        error: ErrorObject,
    ) -> HttpResponse {
        let sniffed = jsonrpc::sniff(&http.body);
        if !sniffed.has_method
            && let Some(id) = sniffed.id
        {
            let session = match self.named_session(now, http) {
                Ok(session) => session,
                Err(not_found) => return not_found,
            };
            if self
                .server_requests
                .contains_key(&(session.clone(), id.clone()))
            {
                let outcome = Err(error.clone());
                let answer = Response {
                    id: Some(id),
                    outcome,
                };
                let _ = self.client_response(now, answer, session);
            }
            return HttpResponse::json_error(400, None, &error);
        }
        HttpResponse::json_error(400, sniffed.id.as_ref(), &error)
    }

    /// A posted JSON-RPC response (the answer to a server→client request): 202. Only
    /// an answer to a request sent to this session (or, without sessions, to anyone)
    /// under the id the client saw, from the principal it was sent to, reaches the
    /// machine; anything else is dropped, and leaves the request waiting for its own
    /// client's answer. Without sessions the ids are the machine's counter: the
    /// principal is all that keeps one client from answering another's request.
    fn client_response(
        &mut self,
        now: Instant,
        mut r: Response,
        session: Option<String>,
    ) -> HttpResponse {
        let Some(id) = r.id.take() else {
            return HttpResponse::new(202);
        };
        let principal = self.server.principal.as_ref();
        let (key, machine_id) = match self.server_requests.entry((session.clone(), id)) {
            Entry::Occupied(asked) if asked.get().principal.as_ref() == principal => {
                let asked = asked.remove();
                (asked.exchange, asked.machine_id)
            }
            _ => return HttpResponse::new(202),
        };
        r.id = Some(machine_id);
        self.in_session(session.as_deref(), now, |e| {
            e.server.handle_message(now, Message::Response(r));
            e.route(Some(key));
        });
        HttpResponse::new(202)
    }
}
