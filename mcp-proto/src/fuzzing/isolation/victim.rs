//! The victim's side: well-formed work of both eras, one step at a time, each answer
//! checked.

use serde_json::{Value, json};

use crate::server::http::{HttpEndpoint, HttpReply, HttpRequest};

use super::watched::{elicitation, response_in, sse_body};
use super::{
    BALANCED_IDLE, Got, LegacyAsk, MODERN, Pending, SECRET, TASKS_EXT, Watched, World,
    assert_no_mallory, check_text, pick,
};

impl World {
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
        self.victim.last_active = self.now;
        let now = self.now;
        match self.victim_ep().handle_request_as(now, request, principal) {
            HttpReply::Complete(r) => {
                let mut wire = Vec::new();
                r.write(&mut wire);
                assert_no_mallory(&wire);
                if let Some(s) = r.header("mcp-session-id") {
                    self.victim.session = Some(s.to_owned());
                    self.leaked.session = Some(s.to_owned());
                }
                if r.status == 503 && self.one_principal() {
                    // Anonymous clients are told apart by their sessions only, and a
                    // 2026 client has none: together they may hold every open stream
                    // (but give way to an authenticated victim).
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
                    (got.messages, got.last_event) = sse_body(&r.body);
                    if got.last_event.is_some() {
                        self.leaked.event.clone_from(&got.last_event);
                    }
                } else if let Ok(m) = serde_json::from_slice(&r.body) {
                    got.messages.push(m);
                }
            }
            HttpReply::Stream(s) => {
                let mut w = Watched::new(s);
                w.poll(self.victim_ep());
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
            ask.poll(self.victim_ep());
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

    /// The process serving the victim's current work.
    fn victim_ep(&mut self) -> &mut HttpEndpoint {
        pick(&mut self.ep, &mut self.other, self.victim.on_first)
    }

    /// The victim idled as long as a session may (with a load balancer): its client goes
    /// away, giving up its work and its session, and the next work starts afresh.
    fn victim_leaves(&mut self) {
        let now = self.now;
        if let Some(w) = self.victim.listening.take() {
            pick(&mut self.ep, &mut self.other, self.victim.listening_first)
                .cancel_stream(now, &w.stream);
        }
        for (work, first) in self.victim.works() {
            if let Pending::LegacyAsk(ask) = work
                && let Some(w) = &ask.watched
            {
                pick(&mut self.ep, &mut self.other, first).cancel_stream(now, &w.stream);
            }
        }
        (self.victim.pending, self.victim.parked) = (None, None);
        self.victim.session = None;
    }

    /// The victim's other piece of work (if any) becomes the current one, and the
    /// current one (if any) waits: it may have two going at once, in one session.
    pub(super) fn swap_work(&mut self) {
        let current = self
            .victim
            .pending
            .take()
            .map(|p| (p, self.victim.on_first));
        if let Some((work, first)) = self.victim.parked.take() {
            self.victim.pending = Some(work);
            self.victim.on_first = first;
        }
        self.victim.parked = current;
    }

    fn secret(&mut self) -> String {
        self.victim.next_secret += 1;
        format!("{SECRET}{}", self.victim.next_secret)
    }

    fn ensure_session(&mut self) {
        if self.victim.session.is_some() && !self.stateless {
            return;
        }
        let version = self.victim.version;
        self.victim_call(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {"elicitation": {}},
                "clientInfo": {"name": SECRET, "version": "1"}}),
            false,
        );
        assert!(
            self.victim.session.is_some() != self.stateless,
            "the victim's session is {:?} on an endpoint {} sessions",
            self.victim.session,
            if self.stateless { "without" } else { "with" }
        );
        let body = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let request = self.victim_request(&body, false);
        let got = self.victim_reply(&request);
        assert!(got.open.is_none(), "a stream for a notification");
    }

    /// One step of the victim's: the next of its pending work, or new work.
    pub(super) fn victim_step(&mut self, op: u8) {
        let idle = self.now.saturating_duration_since(self.victim.last_active);
        if self.balanced && idle >= BALANCED_IDLE {
            self.victim_leaves();
        }
        if op & 0x10 != 0 {
            self.swap_work();
        }
        if op & 0x20 != 0 && self.victim.pending.is_some() {
            return self.victim_side_call(op);
        }
        match self.victim.pending.take() {
            None => {
                self.victim.on_first = !self.balanced || op & 0x40 != 0;
                self.victim_start(op & 15);
            }
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
                if self.one_principal() && why.contains("another request needed the room") {
                    // Between two polls its anonymous call was ended for the anonymous
                    // attacker's stream (see the module's documentation), and it was told.
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

    /// A call answered at once (`echo`, or `tools/list`), in either era, made while other
    /// work of the victim's waits: a call waiting for its input has its stream open, a
    /// task runs. Its answer is its own, and the waiting work goes on untouched (checked
    /// as it goes on). The attacker keeps aiming at the waiting work's request id.
    fn victim_side_call(&mut self, op: u8) {
        let modern = op & 1 == 1;
        if !modern {
            self.ensure_session();
        }
        let aimed = self.leaked.request_id.clone();
        if op & 2 == 0 {
            let secret = self.secret();
            let params = json!({"name": "echo", "arguments": {"text": secret}});
            let result = self.victim_call("tools/call", params, modern);
            check_text(&result, &secret);
        } else {
            let listed = self.victim_call("tools/list", json!({}), modern);
            assert!(listed["result"]["tools"].is_array(), "{listed}");
        }
        self.leaked.request_id = aimed;
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
        if self.stateless && !asked && response_in(&ask.messages).is_some_and(over_shared_bound) {
            // Without sessions the bounds of the calls waiting for input are the whole
            // process's (see `World::stateless`): the victim gives this call up.
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
        // No 2026 task when both clients are one principal (see `one_principal`); only
        // calls in the legacy era without sessions (see `World::stateless`).
        let modern = (op & 1 == 1 && !(self.one_principal() && matches!(op >> 1, 2 | 4)))
            || (self.stateless && !matches!(op >> 1, 0 | 1));
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
                        self.leaked.task_modern = modern;
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
                    self.victim.listening_first = self.victim.on_first;
                }
            }
            // A listing.
            _ => {
                let listed = self.victim_call("tools/list", json!({}), modern);
                assert!(listed["result"]["tools"].is_array(), "{listed}");
            }
        }
    }
}

/// Whether `response` refuses a call that asks for input for a bound on all the calls
/// waiting for input (`max_pending_inputs`, `max_input_bytes`).
fn over_shared_bound(response: &Value) -> bool {
    let error = response["error"]["message"].as_str().unwrap_or_default();
    let text = response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    error.contains("Too many input requests awaiting") || text.contains("(max_input_bytes)")
}
