//! Turning the protocol machine's messages into HTTP requests.

use std::time::Instant;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::HttpClient;
use super::exchange::{Body, Exchange, Purpose};
use crate::client::{CallError, Event, PeerError};
use crate::http::headers::{self, LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use crate::http::{ACCEPT_JSON_AND_SSE, RequestHead, ResponseReader};
use crate::version::Era;

/// The parts of an outgoing message the HTTP layer needs.
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(default)]
    id: Option<i64>,
    #[serde(default, borrow)]
    method: Option<&'a str>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

impl HttpClient {
    fn base_head(&self, method: &str, accept: &str) -> RequestHead {
        let mut head = RequestHead::for_endpoint(method, &self.config.url)
            .with_header("Accept", accept)
            .with_header("User-Agent", self.config.user_agent.clone());
        if let Some(auth) = &self.config.authorization {
            head = head.with_header("Authorization", auth.clone());
        }
        if let Some(sid) = &self.session_id {
            head = head.with_header(MCP_SESSION_ID, sid.clone());
        }
        head
    }

    fn new_exchange(&self, purpose: Purpose, rpc_id: Option<i64>, method: &str) -> Exchange {
        Exchange {
            purpose,
            rpc_id,
            reader: ResponseReader::new(self.config.limits.clone(), method),
            head: None,
            body: Body::Unknown,
            had_session: self.session_id.is_some(),
            delivered: 0,
            resume_from: None,
        }
    }

    /// POSTs one message of the protocol machine.
    pub(super) fn send_message(&mut self, now: Instant, json: Vec<u8>) {
        if let Some(held) = &mut self.held {
            held.push_back(json);
            return;
        }
        let Ok(peek) = serde_json::from_slice::<Peek<'_>>(&json) else {
            return;
        };
        let rpc_id = peek.id.filter(|_| peek.method.is_some());
        let method = peek.method.unwrap_or("").to_owned();
        let version = self.client.header_version();
        let modern = version.is_some_and(|v| v.era() == Era::Modern);
        let mut head = self.base_head("POST", ACCEPT_JSON_AND_SSE);
        head = head.with_header("Content-Type", "application/json");
        if modern {
            let params: Value = peek
                .params
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .unwrap_or(Value::Null);
            let tool = (method == "tools/call")
                .then(|| params.get("name").and_then(Value::as_str))
                .flatten();
            if let (Some(tool), Some(rpc)) = (tool, rpc_id)
                && let Some(reason) = self.excluded_tools.get(tool)
            {
                let why = format!("tool {tool:?} was excluded from tools/list: {reason}");
                self.client.fail_request(rpc, CallError::Unsendable(why));
                return;
            }
            let mirrored = tool
                .and_then(|n| self.tool_headers.get(n))
                .cloned()
                .unwrap_or_default();
            let version = version.map_or("", |v| v.as_str());
            match headers::request_headers(&method, &params, version, &mirrored) {
                Ok(list) => {
                    for (k, v) in list {
                        head = head.with_header(k, v);
                    }
                }
                Err(e) => {
                    if let Some(rpc) = rpc_id {
                        self.client
                            .fail_request(rpc, CallError::Unsendable(e.to_string()));
                    }
                    return;
                }
            }
        } else if let Some(v) = version {
            head = head.with_header(MCP_PROTOCOL_VERSION, v.as_str());
        }
        let mut bytes = Vec::with_capacity(json.len() + 256);
        if let Err(e) = head.write(Some(json.len()), &mut bytes) {
            if let Some(rpc) = rpc_id {
                self.client
                    .fail_request(rpc, CallError::Unsendable(e.to_string()));
            } else {
                self.events
                    .push_back(Event::PeerError(PeerError::Protocol(format!(
                        "could not write a request: {e}"
                    ))));
            }
            return;
        }
        bytes.extend_from_slice(&json);
        let purpose = if rpc_id.is_some() {
            Purpose::Request {
                method: method.clone(),
            }
        } else if method == "notifications/initialized" {
            self.held = Some(Default::default());
            Purpose::Initialized
        } else {
            Purpose::Notify
        };
        if let Some(rpc) = rpc_id {
            self.methods.insert(rpc, method);
            if self.methods.len() > 4096 {
                let answered: Vec<i64> = self
                    .methods
                    .keys()
                    .copied()
                    .filter(|r| !self.client.is_awaiting(*r))
                    .collect();
                for r in answered {
                    self.methods.remove(&r);
                }
            }
        }
        let _ = now;
        let x = self.new_exchange(purpose, rpc_id, "POST");
        let id = self.alloc_exchange();
        self.insert_exchange(id, x, bytes);
    }

    /// Opens a GET stream: the server's own (`owed` empty) or a resumption.
    pub(super) fn open_get(&mut self, last_event_id: Option<String>, owed: Vec<i64>, attempt: u32) {
        let mut head = self.base_head("GET", "text/event-stream");
        if let Some(v) = self.client.header_version() {
            head = head.with_header(MCP_PROTOCOL_VERSION, v.as_str());
        }
        if let Some(last) = &last_event_id {
            head = head.with_header(LAST_EVENT_ID, last.clone());
        }
        let mut bytes = Vec::new();
        if head.write(None, &mut bytes).is_err() {
            return;
        }
        let mut x = self.new_exchange(Purpose::Get { owed, attempt }, None, "GET");
        x.resume_from = last_event_id;
        let id = self.alloc_exchange();
        self.insert_exchange(id, x, bytes);
    }

    /// `DELETE` of the legacy session.
    pub(super) fn send_delete(&mut self, version: Option<crate::version::ProtocolVersion>) {
        let mut head = self.base_head("DELETE", ACCEPT_JSON_AND_SSE);
        if let Some(v) = version {
            head = head.with_header(MCP_PROTOCOL_VERSION, v.as_str());
        }
        let mut bytes = Vec::new();
        if head.write(None, &mut bytes).is_err() {
            return;
        }
        let x = self.new_exchange(Purpose::Delete, None, "DELETE");
        let id = self.alloc_exchange();
        self.insert_exchange(id, x, bytes);
    }
}
