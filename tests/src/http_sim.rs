//! A deterministic simulation of the HTTP client machine against a scripted HTTP server,
//! on a fake clock.

use std::collections::VecDeque;
use std::time::Duration;

use mcp_proto::Instant;

use mcp_proto::client::http::{ExchangeId, HttpClient, HttpConfig};
use mcp_proto::client::{CallError, CallId, CallOutput, CallRequest, ClientConfig, Event};
use mcp_proto::http::EndpointUrl;
use serde_json::Value;

/// A request as the scripted server sees it.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    /// `POST`, `GET`, `DELETE`.
    pub method: String,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Null` when none).
    pub body: Value,
}

impl SeenRequest {
    /// A header value by (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
    /// The JSON-RPC method of the body.
    pub fn rpc_method(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
}

/// What the scripted server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete response (bytes as written), then the connection stays open.
    Raw(Vec<u8>),
    /// Response bytes followed by the connection closing.
    RawThenClose(Vec<u8>),
    /// Nothing, ever (a hung exchange).
    Silence,
    /// The connection fails before any response.
    NetworkError,
}

impl Reply {
    /// `status` with a JSON body.
    pub fn json(status: u16, body: &Value) -> Reply {
        Reply::with_body(
            status,
            &[("Content-Type", "application/json")],
            &body.to_string(),
        )
    }
    /// `status` with extra headers and a body (Content-Length framed).
    pub fn with_body(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut out = format!("HTTP/1.1 {status} X\r\n");
        for (k, v) in headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        Reply::Raw(out.into_bytes())
    }
    /// 202 Accepted, empty.
    pub fn accepted() -> Reply {
        Reply::with_body(202, &[], "")
    }
    /// A complete SSE response (chunked, ended) with these events (each `(id, data)`).
    pub fn sse(headers: &[(&str, &str)], events: &[(Option<&str>, &str)]) -> Reply {
        let body = sse_body(events);
        let mut hs = vec![("Content-Type", "text/event-stream")];
        hs.extend_from_slice(headers);
        Reply::with_body(200, &hs, &body)
    }
    /// An SSE stream that sends these events (and a `retry`) and then the connection
    /// drops without ending the response.
    pub fn sse_then_drop(retry_ms: Option<u64>, events: &[(Option<&str>, &str)]) -> Reply {
        let mut body = String::new();
        if let Some(r) = retry_ms {
            body.push_str(&format!("retry: {r}\n\n"));
        }
        body.push_str(&sse_body(events));
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n",
            body.len()
        );
        Reply::RawThenClose(head.into_bytes())
    }
}

fn sse_body(events: &[(Option<&str>, &str)]) -> String {
    let mut body = String::new();
    for (id, data) in events {
        if let Some(id) = id {
            body.push_str(&format!("id: {id}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    body
}

fn parse_request(bytes: &[u8]) -> SeenRequest {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let status = req.parse(bytes).expect("valid request head");
    let httparse::Status::Complete(len) = status else {
        panic!("incomplete request head")
    };
    let body = &bytes[len..];
    SeenRequest {
        method: req.method.unwrap_or("").to_owned(),
        headers: req
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_ascii_lowercase(),
                    String::from_utf8_lossy(h.value).into_owned(),
                )
            })
            .collect(),
        body: if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(body).expect("JSON body")
        },
    }
}

/// The simulation.
pub struct HttpSim<F: FnMut(&SeenRequest) -> Reply> {
    /// The fake clock.
    pub now: Instant,
    /// The machine.
    pub client: HttpClient,
    /// The scripted server.
    pub script: F,
    /// Every request seen.
    pub requests: Vec<SeenRequest>,
    /// Every event.
    pub events: Vec<Event>,
    /// Exchanges aborted by the client.
    pub aborted: Vec<ExchangeId>,
    /// Exchanges that never get an answer.
    pub hung: Vec<ExchangeId>,
    deferred: VecDeque<(ExchangeId, Reply)>,
}

impl<F: FnMut(&SeenRequest) -> Reply> HttpSim<F> {
    /// A client for `http://127.0.0.1:9/mcp` with `config`.
    pub fn new(config: ClientConfig, script: F) -> Self {
        let url = EndpointUrl::parse("http://127.0.0.1:9/mcp", false).expect("url");
        let now = Instant::ZERO;
        HttpSim {
            now,
            client: HttpClient::new(config, HttpConfig::new(url), now),
            script,
            requests: Vec::new(),
            events: Vec::new(),
            aborted: Vec::new(),
            hung: Vec::new(),
            deferred: VecDeque::new(),
        }
    }

    /// Moves requests and replies once. True when anything happened.
    pub fn step(&mut self) -> bool {
        let mut moved = false;
        while let Some(t) = self.client.poll_transmit() {
            moved = true;
            let req = parse_request(&t.bytes);
            let reply = (self.script)(&req);
            self.requests.push(req);
            self.deferred.push_back((t.exchange, reply));
        }
        while let Some((x, reply)) = self.deferred.pop_front() {
            moved = true;
            match reply {
                Reply::Raw(bytes) => self.client.handle_response_data(self.now, x, &bytes),
                Reply::RawThenClose(bytes) => {
                    self.client.handle_response_data(self.now, x, &bytes);
                    self.client.handle_response_eof(self.now, x);
                }
                Reply::Silence => self.hung.push(x),
                Reply::NetworkError => {
                    self.client
                        .handle_exchange_error(self.now, x, "connection refused")
                }
            }
        }
        while let Some(a) = self.client.poll_abort() {
            self.aborted.push(a);
        }
        while self.client.poll_finished().is_some() {}
        while let Some(e) = self.client.poll_event() {
            moved = true;
            self.events.push(e);
        }
        moved
    }

    /// Runs until `done`, jumping the clock to the next deadline when idle.
    pub fn run_until(&mut self, mut done: impl FnMut(&Self) -> bool) {
        let mut jumps = 0;
        while !done(self) {
            if self.step() {
                continue;
            }
            let Some(t) = self.client.poll_timeout() else {
                panic!("stalled; events so far: {:#?}", self.events)
            };
            self.now = self.now.max(t);
            self.client.handle_timeout(self.now);
            jumps += 1;
            assert!(jumps < 1000, "no progress");
        }
    }

    /// Runs until connected or closed.
    pub fn connect(&mut self) {
        self.run_until(|s| {
            s.events
                .iter()
                .any(|e| matches!(e, Event::Connected(_) | Event::Closed { .. }))
        });
        self.step();
    }

    /// A call, run to completion.
    pub fn call(&mut self, request: CallRequest) -> Result<CallOutput, CallError> {
        let id = self.client.call(self.now, request).expect("call");
        self.run_until(|s| s.completion(id).is_some());
        self.completion(id).expect("completed")
    }

    /// The outcome of `call`, once completed.
    pub fn completion(&self, call: CallId) -> Option<Result<CallOutput, CallError>> {
        self.events.iter().find_map(|e| match e {
            Event::CallCompleted { call: c, outcome } if *c == call => Some(outcome.clone()),
            _ => None,
        })
    }

    /// Requests whose JSON-RPC method is `method`.
    pub fn with_method(&self, method: &str) -> Vec<&SeenRequest> {
        self.requests
            .iter()
            .filter(|r| r.rpc_method() == method)
            .collect()
    }

    /// Advances the clock.
    pub fn advance(&mut self, d: Duration) {
        self.now += d;
        self.client.handle_timeout(self.now);
        self.step();
    }
}
