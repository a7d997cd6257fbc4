//! Two clients of one HTTP endpoint, authenticated as different principals: a victim
//! that runs well-formed work to its end, and an attacker driven by the fuzz input that
//! knows every secret of the victim's (its session id, request ids, the ids of the
//! server's requests to it, its task ids, its `requestState`, the event ids of its
//! streams) and uses them in any request it likes.
//!
//! What must hold: nothing the attacker receives carries the victim's data (its tool
//! arguments and answers, which all hold `Vsecret`), its session id or its task ids,
//! unless the attacker sent them itself; and the victim's work is untouched: each of its
//! calls gets the answer it would get alone, its input requests are answered by it only,
//! its tasks are neither cancelled nor read by anyone else, and nothing of the attacker's
//! reaches it. The victim keeps within its fair share of every bound (one session, one
//! call at a time), and the tables are large enough that the attacker cannot evict it, so
//! an error it gets is a finding, with one exception: anonymous clients are told apart
//! by their sessions only (and a 2026 client has none), so an anonymous attacker may hold
//! every open stream, and a request of the victim's that needs one may get `503`, or,
//! when the victim polls, be ended between two polls with an error that says so; the
//! victim then gives up that work.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::Instant;
use crate::http::{HttpLimits, ResponseEvent, ResponseReader};
use crate::server::http::{
    EventStore, EventStoreError, EventStoreLimits, EventStream, HttpEndpoint, HttpEndpointConfig,
    HttpReply, HttpRequest, HttpStream, MemoryEventStore, MemorySessionStore, Replay, StreamStatus,
};
use crate::server::{InputRequestSpec, Tool, ToolCall, ToolOutcome, example};
use crate::sse::{SseDecoder, SseLimits};

use super::server::configure;

/// What the victim's data carries, and the attacker's input never does.
const SECRET: &str = "Vsecret";

/// What the attacker's data carries: never seen by the victim.
const MALLORY: &str = "Msecret";

/// Operations read from one input.
const MAX_OPERATIONS: usize = 96;

/// Open streams the endpoint allows: the attacker may hold a quarter.
const MAX_OPEN: usize = 8;

const MODERN: &str = "2026-07-28";

const TASKS_EXT: &str = "io.modelcontextprotocol/tasks";

/// A stream handed out, read as it is written.
struct Watched {
    stream: HttpStream,
    /// Everything written for it so far, head first.
    wire: Vec<u8>,
    reader: ResponseReader,
    sse: SseDecoder,
    /// The JSON-RPC messages read and not taken yet.
    messages: Vec<Value>,
    /// The last SSE event id read.
    last_event: Option<String>,
    finished: bool,
}

impl Watched {
    fn new(stream: HttpStream) -> Self {
        let mut w = Self {
            wire: Vec::new(),
            reader: ResponseReader::new(HttpLimits::default(), "POST"),
            sse: SseDecoder::new(SseLimits::new(1 << 20, 1 << 22)),
            messages: Vec::new(),
            last_event: None,
            finished: false,
            stream,
        };
        let mut head = Vec::new();
        w.stream.write_head(&mut head);
        w.read(&head);
        w
    }

    /// Polls the stream; what it wrote, read.
    fn poll(&mut self, ep: &mut HttpEndpoint) -> Vec<u8> {
        if self.finished {
            return Vec::new();
        }
        let mut out = Vec::new();
        self.finished = ep.poll_stream(&self.stream, &mut out) == StreamStatus::Finished;
        self.read(&out);
        out
    }

    fn read(&mut self, bytes: &[u8]) {
        self.wire.extend_from_slice(bytes);
        self.reader.handle_input(bytes);
        while let Some(event) = self.reader.poll_event() {
            match event {
                ResponseEvent::Body(b) => self.sse.handle_input(&b),
                ResponseEvent::Error(e) => panic!("a stream the response reader refuses: {e}"),
                _ => {}
            }
        }
        for event in self.sse.events() {
            let event = event.expect("an SSE event over the limits");
            if event.id.is_some() {
                self.last_event.clone_from(&event.id);
            }
            if event.data.is_empty() {
                continue;
            }
            let m = serde_json::from_str(&event.data).expect("an SSE event that is not JSON");
            self.messages.push(m);
        }
    }
}

/// The response among `messages`, if any.
fn response_in(messages: &[Value]) -> Option<&Value> {
    messages.iter().find(|m| m.get("method").is_none())
}

/// The victim's work that takes more than one request.
enum Pending {
    /// A legacy `ask` call waiting for the victim's answer to the server's
    /// `elicitation/create`.
    LegacyAsk(Box<LegacyAsk>),
    /// A modern `ask` call that needs input: the next round carries the state.
    ModernAsk {
        state: String,
        key: String,
        secret: String,
    },
    /// A task of the victim's (its id), polled until it completes.
    Task {
        id: String,
        modern: bool,
        secret: String,
        polls: u32,
    },
}

/// A legacy call whose messages come on its stream, or (polling) on the `GET`s that
/// resume it.
struct LegacyAsk {
    /// Its stream, while open.
    watched: Option<Watched>,
    /// The messages read so far.
    messages: Vec<Value>,
    /// The last event id read, to resume after.
    last_event: Option<String>,
    /// The id of the victim's request.
    id: Value,
    /// The id of the server's `elicitation/create`, once read.
    asked: Option<Value>,
    secret: String,
    /// A request of its was refused for room (see `victim_reply`): the victim gave up.
    refused: bool,
}

impl LegacyAsk {
    /// Polls its open stream: what it wrote joins the messages.
    fn poll(&mut self, ep: &mut HttpEndpoint) {
        if let Some(w) = &mut self.watched {
            w.poll(ep);
            assert_no_mallory(&w.wire);
            self.messages.append(&mut w.messages);
            if w.last_event.is_some() {
                self.last_event.clone_from(&w.last_event);
            }
            if w.finished {
                self.watched = None;
            }
        }
    }

    /// What a request of its got.
    fn take(&mut self, mut got: Got) {
        self.messages.append(&mut got.messages);
        if got.last_event.is_some() {
            self.last_event = got.last_event;
        }
        self.watched = got.open.filter(|w| !w.finished);
    }
}

/// The id of the `elicitation/create` among `messages`.
fn elicitation(messages: &[Value]) -> Option<Value> {
    messages
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .map(|m| m["id"].clone())
}

/// The victim: one legacy session, one call at a time.
struct Victim {
    principal: Option<&'static str>,
    version: &'static str,
    session: Option<String>,
    next_id: i64,
    next_secret: u64,
    pending: Option<Pending>,
    /// Its session's `GET` stream, while open.
    listening: Option<Watched>,
}

/// What the attacker knows of the victim.
#[derive(Default)]
struct Leaked {
    session: Option<String>,
    /// The id of the victim's latest request (JSON).
    request_id: Option<Value>,
    /// The id of the server's latest request to the victim (JSON).
    asked: Option<Value>,
    task: Option<String>,
    state: Option<String>,
    /// The last SSE event id the victim saw.
    event: Option<String>,
}

/// A stream of the attacker's, with what its request carried of the victim's.
struct Taken {
    watched: Watched,
    sent: Vec<u8>,
}

struct World {
    /// The victim's endpoint.
    ep: HttpEndpoint,
    /// The attacker's, when it is another process of the same server (sharing the
    /// session and event stores): else the attacker talks to `ep` too.
    other: Option<HttpEndpoint>,
    now: Instant,
    victim: Victim,
    leaked: Leaked,
    mallory: Option<&'static str>,
    /// The attacker's latest session id and SSE event id.
    own_session: Option<String>,
    own_event: Option<String>,
    next_mallory_id: i64,
    taken: Vec<Taken>,
}

/// The fuzz target: see the module's documentation.
///
/// The first byte: bits 0–1 the principals (victim and attacker: alice and mallory,
/// anonymous and mallory, alice and anonymous), bit 2 the victim's legacy version
/// (2025-11-25 or 2025-06-18), bit 3 polling (SEP-1699: the victim fetches its legacy
/// call's messages with `GET`s), bit 4 the attacker talking to a second process of the
/// server that shares the first's session and event stores. Then operations: a byte below 0x80 is a step of the
/// victim's (its low four bits pick new work when it has none), a byte from 0x80 on is
/// one of the attacker's (its low five bits the request, see [`World::attack`]) followed
/// by an option byte (and, for a raw body, its length and bytes).
pub fn isolation(data: &[u8]) {
    let Some((&control, mut input)) = data.split_first() else {
        return;
    };
    let (victim, mallory) = match control & 3 {
        1 => (None, Some("mallory")),
        2 => (Some("alice"), None),
        _ => (Some("alice"), Some("mallory")),
    };
    let config = HttpEndpointConfig {
        max_open_streams: MAX_OPEN,
        max_sessions: 4 * MAX_OPERATIONS,
        sse_polling: control & 8 != 0,
        ..HttpEndpointConfig::default()
    };
    // One process of the server, or two sharing their stores (keys alike, as a
    // deployment's processes share them; task ids and session ids drawn apart).
    let process = |seed: u8| {
        let mut server = example::server_with(|c| {
            configure(c, 0);
            c.tools.push(confide());
        });
        server.seal_request_states([7; 32], 0);
        server.seed_tasks([seed; 32], 0);
        HttpEndpoint::with_sessions(server, config.clone(), &[seed + 1; 32])
    };
    let mut ep = process(8);
    let mut other = (control & 16 != 0).then(|| process(18));
    if let Some(b) = &mut other {
        let sessions = MemorySessionStore::default();
        let events = SharedEvents::default();
        for e in [&mut ep, b] {
            e.set_session_store(Box::new(sessions.clone()));
            e.set_event_store(Box::new(events.clone()));
        }
    }
    let mut w = World {
        ep,
        other,
        now: Instant::ZERO,
        victim: Victim {
            principal: victim,
            version: if control & 4 == 0 {
                "2025-11-25"
            } else {
                "2025-06-18"
            },
            session: None,
            next_id: 1,
            next_secret: 0,
            pending: None,
            listening: None,
        },
        leaked: Leaked::default(),
        mallory,
        own_session: None,
        own_event: None,
        next_mallory_id: 1,
        taken: Vec::new(),
    };
    for _ in 0..MAX_OPERATIONS {
        let Some((&op, rest)) = input.split_first() else {
            break;
        };
        input = rest;
        if op < 0x80 {
            w.victim_step(op);
        } else {
            let (&option, rest) = input.split_first().unwrap_or((&0, &[]));
            input = rest;
            let mut raw: &[u8] = &[];
            if op & 0x1f == RAW {
                let len = usize::from(option >> 2).min(input.len());
                (raw, input) = input.split_at(len);
            }
            w.attack(op & 0x1f, option, raw);
        }
        w.settle();
    }
    // The attacker's clients go away; the victim's work ends as it would alone.
    for taken in std::mem::take(&mut w.taken) {
        let now = w.now;
        w.mallory_ep().cancel_stream(now, &taken.watched.stream);
    }
    w.settle();
    for _ in 0..8 {
        if w.victim.pending.is_none() {
            break;
        }
        w.victim_step(0);
        w.settle();
    }
    assert!(w.victim.pending.is_none(), "the victim's work did not end");
}

/// A task tool that asks for `k` inside its task, then answers with what it got: over
/// `tasks/result` in 2025, `tasks/update` in 2026.
fn confide() -> Tool {
    Tool::new(
        "confide",
        "Asks for `k`, then tells what it got",
        json!({"type": "object"}),
        |call: &ToolCall<'_>| match call.inputs.get("k") {
            Some(answer) => ToolOutcome::text(answer.to_string()),
            None => {
                let ask = InputRequestSpec::form("k?", json!({"type": "object"}));
                ToolOutcome::NeedInput(vec![("k".to_owned(), ask)])
            }
        },
    )
    .as_task(0)
}

/// The attacker's request of a raw body (the option byte's high six bits its length).
const RAW: u8 = 17;

impl World {
    /// Deadlines due; the attacker's streams polled and checked.
    fn settle(&mut self) {
        for ep in std::iter::once(&mut self.ep).chain(&mut self.other) {
            if ep.poll_timeout().is_some_and(|t| t <= self.now) {
                ep.handle_timeout(self.now);
            }
            while ep.poll_ready().is_some() {}
        }
        let mut i = 0;
        while i < self.taken.len() {
            let t = &mut self.taken[i];
            t.watched.poll(self.other.as_mut().unwrap_or(&mut self.ep));
            self.leaked.check(&t.watched.wire, &t.sent, &self.victim);
            if t.watched.finished {
                self.taken.remove(i);
            } else {
                i += 1;
            }
        }
        if let Some(Pending::LegacyAsk(ask)) = &mut self.victim.pending {
            ask.poll(&mut self.ep);
            if let Some(asked) = &ask.asked {
                assert!(
                    response_in(&ask.messages).is_none(),
                    "the victim's call was answered before the victim answered {asked}: {:?}",
                    ask.messages
                );
            }
        }
        if let Some(w) = &mut self.victim.listening {
            w.poll(&mut self.ep);
            assert_no_mallory(&w.wire);
            w.messages.clear();
            if w.finished {
                self.victim.listening = None;
            }
        }
    }

    // ---- The victim ----

    fn victim_request(&mut self, body: &Value, modern: bool) -> HttpRequest {
        let mut r = HttpRequest::new("POST", "/mcp")
            .with_header("Host", "127.0.0.1")
            .with_header("Content-Type", "application/json")
            .with_header("Accept", "application/json, text/event-stream");
        if modern {
            let method = body["method"].as_str().unwrap_or_default();
            r = r
                .with_header("MCP-Protocol-Version", MODERN)
                .with_header("Mcp-Method", method);
            let params = &body["params"];
            if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
                r = r.with_header("Mcp-Name", name);
            }
        } else {
            r = r.with_header("MCP-Protocol-Version", self.victim.version);
            if let Some(s) = &self.victim.session {
                r = r.with_header("Mcp-Session-Id", s);
            }
        }
        r.with_body(serde_json::to_vec(body).unwrap_or_default())
    }

    /// A victim's request whose answer is due now: the response (the stream, if one was
    /// opened, is read to its end).
    fn victim_call(&mut self, method: &str, mut params: Value, modern: bool) -> Value {
        if modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities":
                    {"elicitation": {}, "extensions": {TASKS_EXT: {}}},
            });
        }
        let id = self.victim.next_id;
        self.victim.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.leaked.request_id = Some(json!(id));
        let request = self.victim_request(&body, modern);
        let got = self.victim_reply(&request);
        assert!(!got.refused, "the victim's {method} was refused for room");
        assert!(
            got.open.as_ref().is_none_or(|w| w.finished),
            "the victim's {method} was not answered: {:?}",
            got.messages
        );
        let response = response_in(&got.messages).cloned().unwrap_or(Value::Null);
        assert_eq!(response["id"], json!(id), "the victim got another's answer");
        assert!(
            response.get("error").is_none(),
            "the victim's {method} failed: {response}"
        );
        response
    }

    /// What the victim's request got: its messages (those of a stream written so far)
    /// and the stream, if one was handed out.
    fn victim_reply(&mut self, request: &HttpRequest) -> Got {
        let principal = self.victim.principal;
        let mut got = Got::default();
        match self.ep.handle_request_as(self.now, request, principal) {
            HttpReply::Complete(r) => {
                let mut wire = Vec::new();
                r.write(&mut wire);
                assert_no_mallory(&wire);
                if let Some(s) = r.header("mcp-session-id") {
                    self.victim.session = Some(s.to_owned());
                    self.leaked.session = Some(s.to_owned());
                }
                if r.status == 503 && self.mallory.is_none() && self.victim.principal.is_some() {
                    // Anonymous clients are told apart by their sessions only, and a
                    // 2026 client has none: together they may hold every open stream.
                    got.refused = true;
                    return got;
                }
                assert!(
                    (200..300).contains(&r.status),
                    "the victim got {}: {}",
                    r.status,
                    String::from_utf8_lossy(&r.body)
                );
                if r.header("content-type") == Some("text/event-stream") {
                    let mut d = SseDecoder::new(SseLimits::new(1 << 20, 1 << 22));
                    d.handle_input(&r.body);
                    for e in d.events().flatten() {
                        if e.id.is_some() {
                            got.last_event.clone_from(&e.id);
                            self.leaked.event.clone_from(&e.id);
                        }
                        if let Ok(m) = serde_json::from_str::<Value>(&e.data) {
                            got.messages.push(m);
                        }
                    }
                } else if let Ok(m) = serde_json::from_slice(&r.body) {
                    got.messages.push(m);
                }
            }
            HttpReply::Stream(s) => {
                let mut w = Watched::new(s);
                w.poll(&mut self.ep);
                assert_no_mallory(&w.wire);
                got.messages = std::mem::take(&mut w.messages);
                got.last_event.clone_from(&w.last_event);
                if w.last_event.is_some() {
                    self.leaked.event.clone_from(&w.last_event);
                }
                got.open = Some(w);
            }
        }
        got
    }

    /// A `GET` of the victim's session's stream, resumed after `last_event` if any.
    fn victim_get(&self, last_event: Option<&str>) -> HttpRequest {
        let mut r = HttpRequest::new("GET", "/mcp")
            .with_header("Host", "127.0.0.1")
            .with_header("Accept", "text/event-stream")
            .with_header("MCP-Protocol-Version", self.victim.version);
        if let Some(s) = &self.victim.session {
            r = r.with_header("Mcp-Session-Id", s);
        }
        if let Some(e) = last_event {
            r = r.with_header("Last-Event-ID", e);
        }
        r
    }

    /// Reads the victim's legacy call on until `want` holds of its messages: its open
    /// stream, else `GET`s resuming it (polling). Whether it did.
    fn follow(&mut self, ask: &mut LegacyAsk, want: fn(&[Value]) -> bool) -> bool {
        for _ in 0..4 {
            ask.poll(&mut self.ep);
            if want(&ask.messages) {
                return true;
            }
            let Some(last) = ask.last_event.clone().filter(|_| ask.watched.is_none()) else {
                return false;
            };
            let request = self.victim_get(Some(&last));
            let got = self.victim_reply(&request);
            if got.refused {
                ask.refused = true;
                return false;
            }
            ask.take(got);
        }
        want(&ask.messages)
    }

    fn secret(&mut self) -> String {
        self.victim.next_secret += 1;
        format!("{SECRET}{}", self.victim.next_secret)
    }

    fn ensure_session(&mut self) {
        if self.victim.session.is_some() {
            return;
        }
        let version = self.victim.version;
        self.victim_call(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {"elicitation": {}},
                "clientInfo": {"name": SECRET, "version": "1"}}),
            false,
        );
        assert!(self.victim.session.is_some(), "no session for the victim");
        let body = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let request = self.victim_request(&body, false);
        let got = self.victim_reply(&request);
        assert!(got.open.is_none(), "a stream for a notification");
    }

    /// One step of the victim's: the next of its pending work, or new work.
    fn victim_step(&mut self, op: u8) {
        match self.victim.pending.take() {
            None => self.victim_start(op & 15),
            Some(Pending::LegacyAsk(mut ask)) => {
                let body = json!({"jsonrpc": "2.0", "id": ask.asked, "result":
                    {"action": "accept", "content": {"v": ask.secret}}});
                let request = self.victim_request(&body, false);
                let got = self.victim_reply(&request);
                assert!(got.open.is_none(), "a stream for an answer");
                let answered = self.follow(&mut ask, |m| response_in(m).is_some());
                if ask.refused {
                    return;
                }
                assert!(answered, "no result after the input: {:?}", ask.messages);
                let response = response_in(&ask.messages).cloned().unwrap_or_default();
                assert_eq!(response["id"], ask.id, "the victim got another's answer");
                let why = response["error"]["message"].as_str().unwrap_or_default();
                if self.mallory.is_none() && why.contains("another needed the room") {
                    // Between two polls its call was ended for an anonymous attacker's
                    // stream (see the module's documentation), and it was told.
                    return;
                }
                check_text(&response, &ask.secret);
            }
            Some(Pending::ModernAsk { state, key, secret }) => {
                let result = self.victim_call(
                    "tools/call",
                    json!({"name": "ask", "arguments": {"keys": ["e"]},
                        "inputResponses": {key: {"action": "accept", "content": {"v": secret}}},
                        "requestState": state}),
                    true,
                );
                check_text(&result, &secret);
            }
            Some(Pending::Task {
                id,
                modern,
                secret,
                polls,
            }) => {
                assert!(polls < 4, "the victim's task never completes");
                let got = self.victim_call("tasks/get", json!({"taskId": id}), modern);
                let status = got["result"]["status"].as_str().unwrap_or_default();
                match status {
                    "completed" if modern => check_text(&got, &secret),
                    "completed" => {
                        let result = self.victim_call("tasks/result", json!({"taskId": id}), false);
                        check_text(&result, &secret);
                    }
                    "working" => {
                        self.victim.pending = Some(Pending::Task {
                            id,
                            modern,
                            secret,
                            polls: polls + 1,
                        });
                    }
                    "input_required" if modern => {
                        let key = got["result"]["inputRequests"]
                            .as_object()
                            .and_then(|m| m.keys().next().cloned())
                            .unwrap_or_default();
                        let answer = json!({"action": "accept", "content": {"v": secret}});
                        self.victim_call(
                            "tasks/update",
                            json!({"taskId": id, "inputResponses": {key: answer}}),
                            true,
                        );
                        self.victim.pending = Some(Pending::Task {
                            id,
                            modern,
                            secret,
                            polls: polls + 1,
                        });
                    }
                    // 2025: the task's requests come on the stream of its `tasks/result`.
                    "input_required" => {
                        self.victim_legacy_ask("tasks/result", json!({"taskId": id}), secret);
                    }
                    _ => panic!("the victim's task is {status}: {got}"),
                }
            }
        }
    }

    /// A legacy request answered over a stream after the server's `elicitation/create`,
    /// which the victim answers on its next step.
    fn victim_legacy_ask(&mut self, method: &str, params: Value, secret: String) {
        let id = self.victim.next_id;
        self.victim.next_id += 1;
        self.leaked.request_id = Some(json!(id));
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let request = self.victim_request(&body, false);
        let got = self.victim_reply(&request);
        if got.refused {
            return;
        }
        let mut ask = LegacyAsk {
            id: json!(id),
            watched: None,
            messages: Vec::new(),
            last_event: None,
            asked: None,
            secret,
            refused: false,
        };
        ask.take(got);
        let asked = self.follow(&mut ask, |m| elicitation(m).is_some());
        if ask.refused {
            return;
        }
        assert!(asked, "no elicitation: {:?}", ask.messages);
        assert!(
            response_in(&ask.messages).is_none(),
            "the victim's {method} was answered without its input: {:?}",
            ask.messages
        );
        ask.asked = elicitation(&ask.messages);
        self.leaked.asked.clone_from(&ask.asked);
        self.victim.pending = Some(Pending::LegacyAsk(Box::new(ask)));
    }

    fn victim_start(&mut self, op: u8) {
        let secret = self.secret();
        let modern = op & 1 == 1;
        if !modern {
            self.ensure_session();
        }
        match op >> 1 {
            // An immediate call.
            0 => {
                let result = self.victim_call(
                    "tools/call",
                    json!({"name": "echo", "arguments": {"text": secret}}),
                    modern,
                );
                check_text(&result, &secret);
            }
            // A call that asks for input.
            1 if modern => {
                let result = self.victim_call(
                    "tools/call",
                    json!({"name": "ask", "arguments": {"keys": ["e"]}}),
                    true,
                );
                let r = &result["result"];
                assert_eq!(r["resultType"], "input_required", "{result}");
                let state = r["requestState"].as_str().unwrap_or_default().to_owned();
                let key = r["inputRequests"]
                    .as_object()
                    .and_then(|m| m.keys().next().cloned())
                    .unwrap_or_default();
                self.leaked.state = Some(state.clone());
                self.victim.pending = Some(Pending::ModernAsk { state, key, secret });
            }
            1 => {
                let params = json!({"name": "ask", "arguments": {"keys": ["e"], "tag": secret}});
                self.victim_legacy_ask("tools/call", params, secret);
            }
            // A task, done at once or after the victim's input.
            2 | 4 => {
                let tool = if op >> 1 == 2 { "later" } else { "confide" };
                let mut params = json!({"name": tool, "arguments": {"text": secret}});
                if tool == "confide" && !modern && self.victim.version == "2025-06-18" {
                    // No tasks in 2025-06-18: a call that asks over its stream.
                    return self.victim_legacy_ask("tools/call", params, secret);
                }
                if !modern {
                    params["task"] = json!({});
                }
                let created = self.victim_call("tools/call", params, modern);
                let r = &created["result"];
                let id = if modern {
                    &r["taskId"]
                } else {
                    &r["task"]["taskId"]
                };
                match id.as_str() {
                    Some(id) => {
                        self.leaked.task = Some(id.to_owned());
                        self.victim.pending = Some(Pending::Task {
                            id: id.to_owned(),
                            modern,
                            secret,
                            polls: 0,
                        });
                    }
                    None => check_text(&created, &secret),
                }
            }
            // The session's stream, held open.
            _ if !modern => {
                if self.victim.listening.is_none() {
                    let request = self.victim_get(None);
                    let got = self.victim_reply(&request);
                    self.victim.listening = got.open.filter(|w| !w.finished);
                }
            }
            // A listing.
            _ => {
                let listed = self.victim_call("tools/list", json!({}), modern);
                assert!(listed["result"]["tools"].is_array(), "{listed}");
            }
        }
    }

    // ---- The attacker ----

    /// One request of the attacker's: `kind` picks it, `option` its headers (bits 0–1 the
    /// session: none, its own, the victim's, its own again; bits 2–3 the protocol:
    /// 2026-07-28, 2025-11-25, 2025-06-18, none; bit 4 `Last-Event-ID` of the victim's
    /// rather than its own on a GET; bits 5–6 the request id: a fresh one, the victim's
    /// latest, the server's latest request to the victim, 1).
    fn attack(&mut self, kind: u8, option: u8, raw: &[u8]) {
        let victim_task = self.leaked.task.clone().unwrap_or_default();
        let asked = self.leaked.asked.clone().unwrap_or(json!(0));
        let state = self.leaked.state.clone().unwrap_or_default();
        let answer = json!({"action": "accept", "content": {"v": MALLORY}});
        let (method, params): (&str, Value) = match kind {
            0 => (
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                    "clientInfo": {"name": "m", "version": "1"}}),
            ),
            1 => ("notifications/initialized", Value::Null),
            2 => (
                "notifications/cancelled",
                json!({"requestId": self.leaked.request_id.clone().unwrap_or(json!(1))}),
            ),
            3 => ("tasks/cancel", json!({"taskId": victim_task})),
            4 => ("tasks/get", json!({"taskId": victim_task})),
            5 => ("tasks/result", json!({"taskId": victim_task})),
            6 => ("tasks/list", json!({})),
            7 => (
                "tools/call",
                json!({"name": "ask", "arguments": {"keys": ["e"]},
                    "inputResponses": {"e0": answer}, "requestState": state}),
            ),
            8 | 9 => {
                let body = if kind == 8 {
                    json!({"jsonrpc": "2.0", "id": asked, "result": answer})
                } else {
                    json!({"jsonrpc": "2.0", "id": asked, "error": {"code": -1, "message": MALLORY}})
                };
                return self.mallory_send("POST", option, Some(body));
            }
            10 => return self.mallory_send("DELETE", option, None),
            11 => return self.mallory_send("GET", option, None),
            12 => (
                "tools/call",
                json!({"name": "echo", "arguments": {"text": MALLORY}}),
            ),
            13 => (
                "tools/call",
                json!({"name": "ask", "arguments": {"keys": ["e"], "tag": MALLORY}}),
            ),
            14 => ("tools/call", json!({"name": "hang"})),
            15 => (
                "tools/call",
                json!({"name": "later", "arguments": {"text": MALLORY}, "task": {}}),
            ),
            16 => (
                "tasks/update",
                json!({"taskId": victim_task, "inputResponses": {"k": answer}}),
            ),
            22 => (
                "tools/call",
                json!({"name": "confide", "arguments": {}, "task": {}}),
            ),
            RAW => {
                // Whatever the input says, with the victim's secrets filled in for `$…`.
                let text = String::from_utf8_lossy(raw).replace(SECRET, MALLORY);
                let text = self.fill(&text);
                let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
                return self.mallory_send("POST", option, Some(body));
            }
            18 => {
                // Time passes: up to about 5 s.
                self.now += std::time::Duration::from_millis(20 * u64::from(option));
                return;
            }
            19 => {
                // The client of the attacker's oldest stream goes away.
                if !self.taken.is_empty() {
                    let t = self.taken.remove(0);
                    let now = self.now;
                    self.mallory_ep().cancel_stream(now, &t.watched.stream);
                }
                return;
            }
            20 => ("ping", json!({})),
            21 => (
                "subscriptions/listen",
                json!({"notifications": {"taskIds": [victim_task]}}),
            ),
            _ => ("tools/list", json!({})),
        };
        let id = match (option >> 5) & 3 {
            0 => {
                self.next_mallory_id += 1;
                json!(format!("m{}", self.next_mallory_id))
            }
            1 => self.leaked.request_id.clone().unwrap_or(json!(1)),
            2 => asked,
            _ => json!(1),
        };
        let mut body = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            body["params"] = params;
        }
        if !method.starts_with("notifications/") {
            body["id"] = id;
        }
        self.mallory_send("POST", option, Some(body));
    }

    /// `$session`, `$task`, `$state`, `$asked`, `$id` and `$event` replaced by the
    /// victim's.
    fn fill(&self, text: &str) -> String {
        let l = &self.leaked;
        let or = |v: &Option<String>| v.clone().unwrap_or_default();
        let json = |v: &Option<Value>| v.as_ref().map(Value::to_string).unwrap_or_default();
        text.replace("$session", &or(&l.session))
            .replace("$task", &or(&l.task))
            .replace("$state", &or(&l.state))
            .replace("$asked", &json(&l.asked))
            .replace("$id", &json(&l.request_id))
            .replace("$event", &or(&l.event))
    }

    fn mallory_send(&mut self, method: &str, option: u8, body: Option<Value>) {
        let mut r = HttpRequest::new(method, "/mcp")
            .with_header("Host", "127.0.0.1")
            .with_header("Accept", "application/json, text/event-stream");
        let session = match option & 3 {
            0 => None,
            2 => self.leaked.session.clone(),
            _ => self.own_session.clone(),
        };
        if let Some(s) = &session {
            r = r.with_header("Mcp-Session-Id", s);
        }
        let modern = (option >> 2) & 3 == 0;
        match (option >> 2) & 3 {
            0 => r = r.with_header("MCP-Protocol-Version", MODERN),
            1 => r = r.with_header("MCP-Protocol-Version", "2025-11-25"),
            2 => r = r.with_header("MCP-Protocol-Version", "2025-06-18"),
            _ => {}
        }
        if method == "GET" {
            let event = if option & 0x10 != 0 {
                self.leaked.event.clone()
            } else {
                self.own_event.clone()
            };
            if let Some(e) = event {
                r = r.with_header("Last-Event-ID", &e);
            }
        }
        if let Some(mut body) = body {
            if modern && let Some(m) = body["method"].as_str().map(str::to_owned) {
                r = r.with_header("Mcp-Method", &m);
                let params = &body["params"];
                if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
                    r = r.with_header("Mcp-Name", name);
                }
                if let Some(p) = body.get_mut("params").and_then(Value::as_object_mut) {
                    p.insert(
                        "_meta".to_owned(),
                        json!({
                            "io.modelcontextprotocol/protocolVersion": MODERN,
                            "io.modelcontextprotocol/clientCapabilities":
                                {"elicitation": {}, "extensions": {TASKS_EXT: {}}},
                        }),
                    );
                }
            }
            let bytes = match &body {
                Value::String(s) => s.clone().into_bytes(),
                v => serde_json::to_vec(v).unwrap_or_default(),
            };
            r = r
                .with_header("Content-Type", "application/json")
                .with_body(bytes);
        }
        let mut sent = Vec::new();
        for (name, value) in r.headers() {
            sent.extend_from_slice(name.as_bytes());
            sent.extend_from_slice(value);
        }
        sent.extend_from_slice(&r.body);
        let (now, who) = (self.now, self.mallory);
        match self.mallory_ep().handle_request_as(now, &r, who) {
            HttpReply::Complete(response) => {
                let mut wire = Vec::new();
                response.write(&mut wire);
                self.leaked.check(&wire, &sent, &self.victim);
                if let Some(s) = response.header("mcp-session-id")
                    && Some(s) != self.leaked.session.as_deref()
                {
                    self.own_session = Some(s.to_owned());
                }
                self.note_own_events(&wire);
            }
            HttpReply::Stream(stream) => {
                let watched = Watched::new(stream);
                self.leaked.check(&watched.wire, &sent, &self.victim);
                let wire = watched.wire.clone();
                self.note_own_events(&wire);
                self.taken.push(Taken { watched, sent });
            }
        }
    }

    /// The endpoint the attacker talks to.
    fn mallory_ep(&mut self) -> &mut HttpEndpoint {
        self.other.as_mut().unwrap_or(&mut self.ep)
    }

    fn note_own_events(&mut self, wire: &[u8]) {
        for line in wire.split(|b| *b == b'\n') {
            if let Some(id) = line.strip_prefix(b"id: ") {
                self.own_event = Some(String::from_utf8_lossy(id).trim().to_owned());
            }
        }
    }
}

/// A [`MemoryEventStore`] two endpoints append to and replay from.
#[derive(Debug, Clone)]
struct SharedEvents(Arc<Mutex<MemoryEventStore>>);

impl Default for SharedEvents {
    fn default() -> Self {
        let store = MemoryEventStore::new(EventStoreLimits::default());
        Self(Arc::new(Mutex::new(store)))
    }
}

impl SharedEvents {
    fn store(&self) -> std::sync::MutexGuard<'_, MemoryEventStore> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl EventStore for SharedEvents {
    fn append(&mut self, stream: &EventStream, message: &[u8]) -> Result<String, EventStoreError> {
        self.store().append(stream, message)
    }
    fn replay_after(&self, event_id: &str) -> Result<Replay, EventStoreError> {
        self.store().replay_after(event_id)
    }
    fn forget_session(&mut self, session: &str) {
        self.store().forget_session(session);
    }
}

/// What a victim's request got: see [`World::victim_reply`].
#[derive(Default)]
struct Got {
    /// Refused for want of room that anonymous attackers hold (see `victim_reply`).
    refused: bool,
    messages: Vec<Value>,
    last_event: Option<String>,
    open: Option<Watched>,
}

impl Leaked {
    /// What the attacker received (`wire`) for a request of `sent` bytes: none of the
    /// victim's data, and its session id and task id only when the request held them.
    fn check(&self, wire: &[u8], sent: &[u8], victim: &Victim) {
        let text = String::from_utf8_lossy(wire);
        assert!(
            !text.contains(SECRET),
            "the attacker received the victim's data: {text}"
        );
        let sent = String::from_utf8_lossy(sent);
        for secret in [&self.session, &self.task].into_iter().flatten() {
            assert!(
                sent.contains(secret.as_str()) || !text.contains(secret.as_str()),
                "the attacker received the victim's id {secret}: {text}"
            );
        }
        let _ = victim;
    }
}

fn assert_no_mallory(wire: &[u8]) {
    let text = String::from_utf8_lossy(wire);
    assert!(
        !text.contains(MALLORY),
        "the attacker's data reached the victim: {text}"
    );
}

/// A successful result whose text holds `secret`.
fn check_text(response: &Value, secret: &str) {
    let text = response.to_string();
    assert!(
        response.get("error").is_none() && text.contains(secret),
        "the victim's result is not its own ({secret}): {response}"
    );
    assert!(
        response["result"]["isError"] != true,
        "the victim's call failed: {response}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An anonymous attacker's listens fill the open streams while the victim's legacy
    /// call waits for its input between two polls: its call is ended for room, and its
    /// next poll must say so (it used to find nothing, at every poll).
    #[test]
    fn a_polled_call_ended_for_room_is_told() {
        let mut input = vec![0x0a, 0xd5, 0, 0xd5, 0, 0xd5, 0, 0x42];
        input.extend_from_slice(&[0xd5, 0, 0xd5, 0, 0xd5, 0, 0xd5, 0, 0xd5]);
        isolation(&input);
    }

    /// Every kind of the victim's work, alone and with each of the attacker's requests
    /// in between its steps.
    #[test]
    fn smoke() {
        for control in [0u8, 1, 2, 4, 8, 9, 10, 12, 16, 17, 18, 24, 26] {
            for work in 0..16u8 {
                isolation(&[control, work, work, work, work]);
                for kind in 0..23u8 {
                    for option in [0u8, 2, 6, 0x12, 0x42, 0x4a] {
                        let input = [control, work, 0x80 | kind, option, 0, 0x80 | kind, option];
                        isolation(&input);
                    }
                }
            }
        }
    }
}
