//! The attacker's side: requests built from the fuzz input, with the victim's secrets in
//! them.

use serde_json::{Value, json};

use crate::server::http::{HttpEndpoint, HttpReply, HttpRequest};

use super::watched::sse_body;
use super::{MALLORY, MODERN, RAW, SECRET, TASKS_EXT, Taken, Watched, World};

impl World {
    /// One request of the attacker's: `kind` picks it, `option` its headers (bits 0–1 the
    /// session: none, its own, the victim's, its own again; bits 2–3 the protocol:
    /// 2026-07-28, 2025-11-25, 2025-06-18, none; bit 4 `Last-Event-ID` of the victim's
    /// rather than its own on a GET; bits 5–6 the request id: a fresh one, the victim's
    /// latest, the server's latest request to the victim, 1).
    pub(super) fn attack(&mut self, kind: u8, option: u8, raw: &[u8]) {
        let victim_task = self.usable_task().unwrap_or_default();
        let asked = self.leaked.asked.clone().unwrap_or(json!(0));
        let state = (self.leaked.state.clone())
            .filter(|_| !self.one_principal())
            .unwrap_or_default();
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
                    let error = json!({"code": -1, "message": MALLORY});
                    json!({"jsonrpc": "2.0", "id": asked, "error": error})
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
                    super::pick(&mut self.ep, &mut self.other, t.first)
                        .cancel_stream(now, &t.watched.stream);
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
        let kept = self.one_principal();
        let or = |v: &Option<String>| v.clone().unwrap_or_default();
        let bearer = |v: &Option<String>| v.clone().filter(|_| !kept).unwrap_or_default();
        let json = |v: &Option<Value>| v.as_ref().map(Value::to_string).unwrap_or_default();
        text.replace("$session", &bearer(&l.session))
            .replace("$task", &self.usable_task().unwrap_or_default())
            .replace("$state", &bearer(&l.state))
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
            2 if !self.one_principal() => self.leaked.session.clone(),
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
                self.leaked.check(&wire, &sent);
                if let Some(s) = response.header("mcp-session-id")
                    && Some(s) != self.leaked.session.as_deref()
                {
                    self.own_session = Some(s.to_owned());
                }
                if response.header("content-type") == Some("text/event-stream")
                    && let (_, Some(event)) = sse_body(&response.body)
                {
                    self.own_event = Some(event);
                }
            }
            HttpReply::Stream(stream) => {
                let watched = Watched::new(stream);
                self.leaked.check(&watched.wire, &sent);
                if watched.last_event.is_some() {
                    self.own_event.clone_from(&watched.last_event);
                }
                let first = self.attacker_first;
                self.taken.push(Taken {
                    watched,
                    sent,
                    first,
                });
            }
        }
    }

    /// The victim's task id, unless it is a bearer secret (see [`World::one_principal`]).
    fn usable_task(&self) -> Option<String> {
        let kept = self.one_principal() && self.leaked.task_modern;
        self.leaked.task.clone().filter(|_| !kept)
    }

    /// The endpoint the attacker talks to: the second process when there is one, unless
    /// the load balancer picked the first.
    fn mallory_ep(&mut self) -> &mut HttpEndpoint {
        super::pick(&mut self.ep, &mut self.other, self.attacker_first)
    }
}
