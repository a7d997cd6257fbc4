//! A deterministic simulation of the client machine over Streamable HTTP against a
//! scripted HTTP server and scripted connections, on a fake clock.
//!
//! The simulation obeys every [`Transmit`]: a `Connect` is answered as the connect
//! script says (accepted by default; refused, a TLS failure, or never answered), a `Write`
//! is parsed as one HTTP request and answered on the same connection as the request
//! script says, a `Close` forgets the connection. Everything the machine asked for is
//! recorded, so a test can assert each decision (which connection, how many, when closed).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use mcp_proto::Instant;

use mcp_proto::client::http::HttpConfig;
use mcp_proto::client::{
    CallError, CallId, CallOutput, CallRequest, Client, ClientConfig, CloseReason, ConnId, Event,
    Transmit, TransportFailure, TransportFailureKind,
};
use mcp_proto::http::EndpointUrl;
use serde_json::Value;

/// A request as the scripted server sees it.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    /// `POST`, `GET`, `DELETE`.
    pub method: String,
    /// The request target (path and query).
    pub target: String,
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
    /// The connection fails before any response (reset).
    NetworkError,
    /// The connection ends before any response byte: what a kept-alive connection the
    /// server had closed looks like.
    Eof,
}

/// What happens to a `Transmit::Connect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectOutcome {
    /// Connected.
    Accept,
    /// Refused (nothing listens).
    Refuse,
    /// The TLS handshake fails.
    TlsFailure,
    /// Never answered (the machine's connect deadline decides).
    Hang,
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
        target: req.path.unwrap_or("").to_owned(),
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
    pub client: Client,
    /// The scripted server.
    pub script: F,
    /// Every request seen.
    pub requests: Vec<SeenRequest>,
    /// The connection each request in `requests` was written on.
    pub request_conns: Vec<ConnId>,
    /// When each request in `requests` was written (the fake clock).
    pub request_times: Vec<Instant>,
    /// Every event.
    pub events: Vec<Event>,
    /// Every `Transmit::Connect`, in order.
    pub connects: Vec<ConnId>,
    /// Connections the client closed, in order.
    pub closed: Vec<ConnId>,
    /// Connections whose request never gets an answer.
    pub hung: Vec<ConnId>,
    /// What happens to the next `Connect`s, in order (then: accepted).
    pub connect_script: VecDeque<ConnectOutcome>,
    /// Connections the simulation holds open (connected, not closed by the client).
    pub open: BTreeMap<ConnId, bool>,
    deferred: VecDeque<(ConnId, Reply)>,
}

impl<F: FnMut(&SeenRequest) -> Reply> HttpSim<F> {
    /// A client for `http://127.0.0.1:9/mcp` with `config`.
    pub fn new(config: ClientConfig, script: F) -> Self {
        let url = EndpointUrl::parse("http://127.0.0.1:9/mcp", false).expect("url");
        Self::with_http(config, HttpConfig::new(url), script)
    }

    /// A client with this HTTP configuration.
    pub fn with_http(config: ClientConfig, http: HttpConfig, script: F) -> Self {
        let now = Instant::ZERO;
        HttpSim {
            now,
            client: Client::http(config, http, now),
            script,
            requests: Vec::new(),
            request_conns: Vec::new(),
            request_times: Vec::new(),
            events: Vec::new(),
            connects: Vec::new(),
            closed: Vec::new(),
            hung: Vec::new(),
            connect_script: VecDeque::new(),
            open: BTreeMap::new(),
            deferred: VecDeque::new(),
        }
    }

    /// Moves requests and replies once. True when anything happened.
    pub fn step(&mut self) -> bool {
        let mut moved = false;
        let mut buf = Vec::new();
        while let Some(t) = self.client.poll_transmit(self.now, &mut buf) {
            moved = true;
            match t {
                Transmit::Connect { conn, origin } => {
                    assert_eq!(origin.to_string(), "http://127.0.0.1:9");
                    self.connects.push(conn);
                    let outcome = self
                        .connect_script
                        .pop_front()
                        .unwrap_or(ConnectOutcome::Accept);
                    match outcome {
                        ConnectOutcome::Accept => {
                            self.open.insert(conn, true);
                            self.client.handle_connected(self.now, conn);
                        }
                        ConnectOutcome::Refuse => {
                            let f = TransportFailure::new(
                                TransportFailureKind::Refused,
                                "connection refused",
                            );
                            self.client.handle_transport_error(self.now, conn, f);
                        }
                        ConnectOutcome::TlsFailure => {
                            let f = TransportFailure::new(
                                TransportFailureKind::Tls,
                                "invalid peer certificate: UnknownIssuer",
                            );
                            self.client.handle_transport_error(self.now, conn, f);
                        }
                        ConnectOutcome::Hang => {}
                    }
                }
                Transmit::Write { conn, len } => {
                    assert!(
                        self.open.contains_key(&conn),
                        "{conn} written before it was connected, or after it was closed"
                    );
                    let bytes = buf.split_off(buf.len() - len);
                    let req = parse_request(&bytes);
                    let reply = (self.script)(&req);
                    self.requests.push(req);
                    self.request_conns.push(conn);
                    self.request_times.push(self.now);
                    self.deferred.push_back((conn, reply));
                }
                Transmit::Close { conn } => {
                    self.open.remove(&conn);
                    self.closed.push(conn);
                    self.deferred.retain(|(c, _)| *c != conn);
                }
                other => panic!("an HTTP client asked for {other:?}"),
            }
        }
        while let Some((conn, reply)) = self.deferred.pop_front() {
            moved = true;
            self.answer(conn, reply);
        }
        while let Some(e) = self.client.poll_event() {
            moved = true;
            self.events.push(e);
        }
        moved
    }

    fn answer(&mut self, conn: ConnId, reply: Reply) {
        match reply {
            Reply::Raw(bytes) => self.client.handle_read(self.now, conn, &bytes),
            Reply::RawThenClose(bytes) => {
                self.client.handle_read(self.now, conn, &bytes);
                self.open.remove(&conn);
                self.client.handle_eof(self.now, conn);
            }
            Reply::Silence => self.hung.push(conn),
            Reply::NetworkError => {
                self.open.remove(&conn);
                let f = TransportFailure::new(TransportFailureKind::Reset, "connection reset");
                self.client.handle_transport_error(self.now, conn, f);
            }
            Reply::Eof => {
                self.open.remove(&conn);
                self.client.handle_eof(self.now, conn);
            }
        }
    }

    /// The server closes `conn` (an idle keep-alive connection, say).
    pub fn server_closes(&mut self, conn: ConnId) {
        self.open.remove(&conn);
        self.client.handle_eof(self.now, conn);
        self.step();
    }

    /// Bytes from the server on `conn`, outside any script.
    pub fn server_sends(&mut self, conn: ConnId, bytes: &[u8]) {
        self.client.handle_read(self.now, conn, bytes);
        self.step();
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

    /// A call started, not run: it goes out at the next step.
    pub fn start(&mut self, request: CallRequest) -> CallId {
        self.client.call(self.now, request).expect("call")
    }

    /// A call, run to completion.
    pub fn call(&mut self, request: CallRequest) -> Result<CallOutput, CallError> {
        let id = self.start(request);
        self.run_until(|s| s.completion(id).is_some());
        // Whatever the machine decided along with the completion (closing a connection).
        self.step();
        self.completion(id).expect("completed")
    }

    /// The outcome of `call`, once completed.
    pub fn completion(&self, call: CallId) -> Option<Result<CallOutput, CallError>> {
        self.events.iter().find_map(|e| match e {
            Event::CallCompleted { call: c, outcome } if *c == call => Some(outcome.clone()),
            _ => None,
        })
    }

    /// Why the connection closed, once it has.
    pub fn closed_reason(&self) -> Option<CloseReason> {
        self.events.iter().find_map(|e| match e {
            Event::Closed { reason } => Some(reason.clone()),
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
