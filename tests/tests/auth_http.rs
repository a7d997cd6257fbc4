//! The whole HTTP client machine with OAuth configured, on a fake clock, against a
//! scripted network: an MCP server that wants a bearer token, its protected resource
//! metadata, and an authorization server that registers clients and issues tokens.
//! Requests are routed by origin and path; every one is recorded, so a test can assert
//! where each token went and how many times a tool ran.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::auth::form::parse_pairs;
use mcp_proto::auth::{AuthConfig, AuthError};
use mcp_proto::client::http::{HttpConfig, HttpSseError};
use mcp_proto::client::{
    CallError, CallId, CallOutput, CallRequest, Client, ClientConfig, CloseReason, ConnId, Event,
    PeerError, Root, Transmit,
};
use mcp_proto::http::EndpointUrl;
use mcp_tests::http_sim::Reply;
use serde_json::{Value, json};

const MCP: &str = "https://mcp.example.com/mcp";
const PRM: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const AS: &str = "https://auth.example.com";
const REDIRECT: &str = "http://127.0.0.1:3333/callback";
const UNIX_START: u64 = 1_800_000_000;

// ----- the scripted network ------------------------------------------------------------

/// One request as its server saw it.
#[derive(Debug, Clone)]
struct Seen {
    /// `https://host[:port]`.
    origin: String,
    method: String,
    /// The request target (path and query).
    target: String,
    /// Names lower-cased.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn url(&self) -> String {
        format!("{}{}", self.origin, self.target)
    }
    fn path_url(&self) -> String {
        let url = self.url();
        url.split('?').next().unwrap_or(&url).to_owned()
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
    fn rpc_method(&self) -> String {
        self.json()["method"].as_str().unwrap_or("").to_owned()
    }
    fn form(&self) -> Vec<(String, String)> {
        parse_pairs(std::str::from_utf8(&self.body).expect("utf-8")).expect("form")
    }
    fn form_value(&self, name: &str) -> Option<String> {
        self.form()
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
    fn is_mcp(&self) -> bool {
        self.path_url() == MCP
    }
}

/// A parsed request: method, target, headers (names lower-cased), body.
type Parsed = (String, String, Vec<(String, String)>, Vec<u8>);

/// Parses one complete HTTP request; `None` while incomplete.
fn parse_request(bytes: &[u8]) -> Option<Parsed> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let httparse::Status::Complete(len) = req.parse(bytes).expect("a valid request head") else {
        return None;
    };
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let body_len = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map_or(0, |(_, v)| v.parse::<usize>().expect("content-length"));
    if bytes.len() < len + body_len {
        return None;
    }
    Some((
        req.method.unwrap_or("").to_owned(),
        req.path.unwrap_or("").to_owned(),
        headers,
        bytes[len..len + body_len].to_vec(),
    ))
}

/// What the servers know and count.
#[derive(Default)]
struct State {
    /// `Authorization` values the MCP server accepts.
    valid: Vec<String>,
    /// Access tokens issued so far.
    issued: u32,
    /// Authorization codes the token endpoint redeemed.
    codes: u32,
    /// `tools/call`s the MCP server executed.
    tool_runs: u32,
    /// Answers to the next `tools/call`s instead of running them (status,
    /// `WWW-Authenticate`); the presented token stops being valid on a 401.
    refuse_calls: VecDeque<(u16, String)>,
    /// Every `tools/call` gets `403 insufficient_scope`.
    always_insufficient: bool,
    /// The MCP server refuses every token.
    reject_all: bool,
    /// The next refresh is refused with `invalid_grant`.
    refuse_refresh: bool,
    /// The `WWW-Authenticate` of a 401.
    challenge: String,
    /// Extra routes (exact URL without query) answered as given.
    routes: BTreeMap<String, Reply>,
    /// The `expires_in` of issued tokens, when not 3600.
    expires_in: Option<Value>,
    /// Tokens are issued without a refresh token.
    no_refresh_token: bool,
    /// The token endpoint issues the access token it issued last again (once it has
    /// issued one), valid again at the MCP server.
    repeat_token: bool,
    /// The MCP server speaks 2025-11-25 (no `server/discover`, sessions, `GET`
    /// streams, `DELETE`).
    legacy: bool,
    /// A `tools/call` is answered on an event stream that sends one priming event
    /// (id `e1`) and drops: the answer comes on the `GET` that resumes after it.
    drop_call_streams: bool,
    /// The JSON-RPC id of the last `tools/call` whose stream dropped.
    dropped_call: Value,
    /// Answers to the next `GET`s to the MCP endpoint (status, `WWW-Authenticate`),
    /// given once the token is accepted (legacy).
    refuse_gets: VecDeque<(u16, String)>,
    /// The MCP server speaks only the 2024-11-05 HTTP+SSE transport (legacy): a `POST`
    /// of `initialize` draws `405`.
    sse2024: bool,
    /// A 2024-11-05 HTTP+SSE server that checks tokens on its stream alone: a `POST` to
    /// the server URL draws `405` before any token check; the stream (`GET`, token
    /// checked, `refuse_gets` honoured) names the endpoint `/mcp?sessionId=1`, and what
    /// is POSTed there (token checked) is answered on the stream.
    sse_only: bool,
    /// Events for that stream not yet delivered, chunked.
    sse_outbox: Vec<u8>,
    /// Tokens are DPoP-bound: the authorization server supports ES256 proofs and issues
    /// `DPoP` tokens, which the MCP server takes as `DPoP at-N`.
    dpop: bool,
    /// DPoP nonces the MCP server demands (RFC 9449 §9), each once: the next request of
    /// its kind (`POST tools/call` and so on, `GET`, `GET resume` with a
    /// `Last-Event-ID`, `DELETE`) whose token is accepted draws `401` with
    /// `error="use_dpop_nonce"` and the nonce in `DPoP-Nonce`.
    nonce_demands: Vec<(String, String)>,
    /// The `DPoP-Nonce` the MCP server sends with its answers to `tools/call`.
    success_nonce: Option<String>,
    /// Answers to the next `notifications/initialized` instead of accepting it (status,
    /// `WWW-Authenticate`), legacy; the presented token stops being valid on a 401.
    refuse_initialized: VecDeque<(u16, String)>,
}

fn rpc_result(req: &Seen, result: Value) -> Reply {
    Reply::json(
        200,
        &json!({"jsonrpc": "2.0", "id": req.json()["id"], "result": result}),
    )
}

fn refusal(status: u16, challenge: &str) -> Reply {
    Reply::with_body(
        status,
        &[
            ("WWW-Authenticate", challenge),
            ("Content-Type", "application/json"),
        ],
        "{}",
    )
}

fn prm_doc() -> Value {
    json!({"resource": MCP, "authorization_servers": [AS],
        "scopes_supported": ["mcp:read", "mcp:write"]})
}

fn asm_doc() -> Value {
    json!({
        "issuer": AS,
        "authorization_endpoint": format!("{AS}/authorize"),
        "token_endpoint": format!("{AS}/token"),
        "registration_endpoint": format!("{AS}/register"),
        "code_challenge_methods_supported": ["S256"],
        "response_types_supported": ["code"],
        "token_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true,
    })
}

impl State {
    fn new() -> State {
        State {
            challenge: format!(r#"Bearer resource_metadata="{PRM}""#),
            ..State::default()
        }
    }

    fn answer(&mut self, req: &Seen) -> Reply {
        let url = req.path_url();
        if let Some(r) = self.routes.get(&url) {
            return r.clone();
        }
        match url.as_str() {
            MCP => self.mcp(req),
            PRM => Reply::json(200, &prm_doc()),
            "https://auth.example.com/.well-known/oauth-authorization-server" => {
                let mut doc = asm_doc();
                if self.dpop {
                    doc["dpop_signing_alg_values_supported"] = json!(["ES256"]);
                }
                Reply::json(200, &doc)
            }
            "https://auth.example.com/register" => Reply::json(
                201,
                &json!({"client_id": "client-1", "token_endpoint_auth_method": "none"}),
            ),
            "https://auth.example.com/token" => self.token(req),
            _ => Reply::json(404, &json!({})),
        }
    }

    fn token(&mut self, req: &Seen) -> Reply {
        match req.form_value("grant_type").as_deref() {
            Some("authorization_code") => self.codes += 1,
            Some("refresh_token") if self.refuse_refresh => {
                self.refuse_refresh = false;
                return Reply::json(400, &json!({"error": "invalid_grant"}));
            }
            Some("refresh_token") => {}
            other => panic!("unexpected grant {other:?}"),
        }
        if !self.repeat_token || self.issued == 0 {
            self.issued += 1;
        }
        let access = format!("at-{}", self.issued);
        let scheme = if self.dpop { "DPoP" } else { "Bearer" };
        self.valid.push(format!("{scheme} {access}"));
        let expires_in = self.expires_in.clone().unwrap_or(json!(3600));
        let mut body = json!({"access_token": access, "token_type": scheme,
            "expires_in": expires_in, "refresh_token": "rt-1"});
        if self.no_refresh_token {
            body.as_object_mut().unwrap().remove("refresh_token");
        }
        Reply::json(200, &body)
    }

    fn mcp(&mut self, req: &Seen) -> Reply {
        if self.sse_only && req.method == "POST" && !req.target.contains('?') {
            return Reply::json(405, &json!({}));
        }
        let presented = req.header("authorization").unwrap_or("").to_owned();
        if self.reject_all || !self.valid.contains(&presented) {
            return refusal(401, &self.challenge.clone());
        }
        if let Some(reply) = self.nonce_demand(req) {
            return reply;
        }
        if self.sse_only {
            return self.sse_only_mcp(req);
        }
        if self.legacy
            && let Some(reply) = self.legacy_mcp(req)
        {
            return reply;
        }
        match req.rpc_method().as_str() {
            "server/discover" => rpc_result(
                req,
                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "public"}),
            ),
            "tools/list" => rpc_result(
                req,
                json!({"resultType": "complete", "ttlMs": 0, "tools": []}),
            ),
            "tools/call" if self.drop_call_streams => {
                self.dropped_call = req.json()["id"].clone();
                Reply::sse_then_drop(Some(1000), &[(Some("e1"), "")])
            }
            "tools/call" => {
                if self.always_insufficient {
                    return refusal(
                        403,
                        &format!(
                            r#"Bearer error="insufficient_scope", scope="extra:{}""#,
                            self.issued
                        ),
                    );
                }
                if let Some((status, challenge)) = self.refuse_calls.pop_front() {
                    if status == 401 {
                        self.valid.retain(|v| *v != presented);
                    }
                    return refusal(status, &challenge);
                }
                self.tool_runs += 1;
                let reply = rpc_result(
                    req,
                    json!({"resultType": "complete",
                        "content": [{"type": "text", "text": format!("run {}", self.tool_runs)}]}),
                );
                match &self.success_nonce {
                    Some(nonce) => with_header(reply, "DPoP-Nonce", nonce),
                    None => reply,
                }
            }
            _ => Reply::json(
                404,
                &json!({"jsonrpc": "2.0", "id": req.json()["id"],
                    "error": {"code": -32601, "message": "nope"}}),
            ),
        }
    }
}

/// `reply` with one more header.
fn with_header(reply: Reply, name: &str, value: &str) -> Reply {
    let Reply::Raw(bytes) = reply else {
        panic!("not a complete response: {reply:?}")
    };
    let line_end = bytes
        .windows(2)
        .position(|w| w == b"\r\n")
        .expect("status line")
        + 2;
    let mut out = bytes[..line_end].to_vec();
    out.extend(format!("{name}: {value}\r\n").into_bytes());
    out.extend(&bytes[line_end..]);
    Reply::Raw(out)
}

impl State {
    /// The refusal of [`State::nonce_demands`] that `req` draws, if any.
    fn nonce_demand(&mut self, req: &Seen) -> Option<Reply> {
        let kind = match (req.method.as_str(), req.header("last-event-id")) {
            ("GET", Some(_)) => "GET resume".to_owned(),
            ("POST", _) => format!("POST {}", req.rpc_method()),
            (method, _) => method.to_owned(),
        };
        let at = self.nonce_demands.iter().position(|(k, _)| *k == kind)?;
        let (_, nonce) = self.nonce_demands.remove(at);
        let challenge = r#"DPoP error="use_dpop_nonce", error_description="a nonce is required""#;
        let mut headers = vec![
            ("WWW-Authenticate", challenge),
            ("Content-Type", "application/json"),
        ];
        // An empty demand asks for a nonce without giving one.
        if !nonce.is_empty() {
            headers.push(("DPoP-Nonce", &nonce));
        }
        Some(Reply::with_body(401, &headers, "{}"))
    }
}

/// One chunk of a chunked body.
fn chunk(text: &str) -> Vec<u8> {
    format!("{:x}\r\n{text}\r\n", text.len()).into_bytes()
}

impl State {
    /// [`State::sse_only`], the token accepted: the stream, or a message POSTed to the
    /// endpoint (`202`, its answer on the stream).
    fn sse_only_mcp(&mut self, req: &Seen) -> Reply {
        if req.method == "GET" {
            if let Some((status, challenge)) = self.refuse_gets.pop_front() {
                return refusal(status, &challenge);
            }
            let mut head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                Transfer-Encoding: chunked\r\n\r\n"
                .to_vec();
            head.extend(chunk("event: endpoint\ndata: /mcp?sessionId=1\n\n"));
            return Reply::Raw(head);
        }
        let result = match req.rpc_method().as_str() {
            "initialize" => Some(json!({"protocolVersion": "2024-11-05",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "old-sse", "version": "1"}})),
            "tools/list" => Some(json!({"tools": []})),
            "tools/call" => {
                self.tool_runs += 1;
                Some(json!({"content": [{"type": "text",
                    "text": format!("run {}", self.tool_runs)}]}))
            }
            _ => None,
        };
        if let Some(result) = result {
            let answer = json!({"jsonrpc": "2.0", "id": req.json()["id"], "result": result});
            let frame = format!("event: message\ndata: {answer}\n\n");
            self.sse_outbox.extend(chunk(&frame));
        }
        Reply::accepted()
    }

    /// What a 2025-11-25 server answers that a 2026 one does not: `None` for the
    /// requests both answer alike.
    fn legacy_mcp(&mut self, req: &Seen) -> Option<Reply> {
        if req.method == "GET"
            && let Some((status, challenge)) = self.refuse_gets.pop_front()
        {
            return Some(refusal(status, &challenge));
        }
        if self.sse2024 && req.method == "POST" && req.rpc_method() == "initialize" {
            return Some(Reply::json(405, &json!({})));
        }
        match req.method.as_str() {
            "DELETE" => return Some(Reply::with_body(200, &[], "")),
            "GET" if req.header("last-event-id") == Some("e1") => {
                let answer = json!({"jsonrpc": "2.0", "id": self.dropped_call,
                    "result": {"content": [{"type": "text", "text": "resumed"}]}});
                return Some(Reply::sse(&[], &[(Some("e2"), &answer.to_string())]));
            }
            // The server's own stream: open, silent.
            "GET" => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                            Transfer-Encoding: chunked\r\n\r\n";
                return Some(Reply::Raw(head.as_bytes().to_vec()));
            }
            _ => {}
        }
        match req.rpc_method().as_str() {
            "server/discover" => Some(Reply::json(
                400,
                &json!({"jsonrpc": "2.0", "id": req.json()["id"],
                    "error": {"code": -32601, "message": "Method not found"}}),
            )),
            "initialize" => {
                let result = json!({"jsonrpc": "2.0", "id": req.json()["id"], "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "legacy", "version": "1"}}});
                Some(Reply::with_body(
                    200,
                    &[
                        ("Content-Type", "application/json"),
                        ("Mcp-Session-Id", "s-1"),
                    ],
                    &result.to_string(),
                ))
            }
            "notifications/initialized" => match self.refuse_initialized.pop_front() {
                Some((status, challenge)) => {
                    if status == 401 {
                        let presented = req.header("authorization").unwrap_or("");
                        self.valid.retain(|v| v != presented);
                    }
                    Some(refusal(status, &challenge))
                }
                None => Some(Reply::accepted()),
            },
            "notifications/roots/list_changed" => Some(Reply::accepted()),
            _ => None,
        }
    }
}

struct Net {
    now: Instant,
    client: Client,
    state: Rc<RefCell<State>>,
    seen: Vec<Seen>,
    events: Vec<Event>,
    origins: BTreeMap<ConnId, String>,
    partial: BTreeMap<ConnId, Vec<u8>>,
    deferred: VecDeque<(ConnId, Reply)>,
    /// Connections whose requests are never answered (their origin+path).
    silent: Vec<String>,
    /// The `tools/call` (counted from 1 among those seen) whose answer is kept in
    /// `held_back` until [`Net::release`].
    hold_call: Option<usize>,
    held_back: Vec<(ConnId, Reply)>,
    /// The JSON-RPC method whose answers (to the MCP endpoint) are kept in `held_back`
    /// until [`Net::release`].
    hold_method: Option<&'static str>,
    /// Answers to `GET`s to the MCP endpoint are kept in `held_back` until
    /// [`Net::release`].
    hold_gets: bool,
    /// The connections that carried a `GET` to the MCP endpoint.
    get_conns: Vec<ConnId>,
    /// The last of them: where [`State::sse_outbox`] goes.
    stream_conn: Option<ConnId>,
}

fn auth_config() -> AuthConfig {
    AuthConfig::new(REDIRECT, [9; 32])
}

impl Net {
    fn new(auth: AuthConfig) -> Net {
        Net::with_config(auth, ClientConfig::new("auth-http", "1.0"))
    }

    /// [`Net::new`] with the client's `config`.
    fn with_config(auth: AuthConfig, config: ClientConfig) -> Net {
        Net::with_headers(auth, config, Vec::new())
    }

    /// [`Net::with_config`] with these [`HttpConfig::headers`].
    fn with_headers(auth: AuthConfig, config: ClientConfig, headers: Vec<(String, String)>) -> Net {
        Net::with_http(auth, config, |http| http.headers = headers)
    }

    /// [`Net::with_config`], the [`HttpConfig`] edited by `edit` first.
    fn with_http(
        auth: AuthConfig,
        config: ClientConfig,
        edit: impl FnOnce(&mut HttpConfig),
    ) -> Net {
        let url = EndpointUrl::parse(MCP, false).expect("url");
        let mut http = HttpConfig::new(url);
        edit(&mut http);
        http.auth = Some(auth);
        http.unix_time = UNIX_START;
        let now = Instant::ZERO;
        Net {
            now,
            client: Client::http(config, http, now),
            state: Rc::new(RefCell::new(State::new())),
            seen: Vec::new(),
            events: Vec::new(),
            origins: BTreeMap::new(),
            partial: BTreeMap::new(),
            deferred: VecDeque::new(),
            silent: Vec::new(),
            hold_call: None,
            held_back: Vec::new(),
            hold_method: None,
            hold_gets: false,
            get_conns: Vec::new(),
            stream_conn: None,
        }
    }

    fn step(&mut self) -> bool {
        let mut moved = false;
        let mut buf = Vec::new();
        while let Some(t) = self.client.poll_transmit(self.now, &mut buf) {
            moved = true;
            match t {
                Transmit::Connect { conn, origin } => {
                    // Origins as URLs spell them: no default port.
                    let origin = origin.to_string();
                    let origin = match origin.strip_suffix(":443") {
                        Some(o) if o.starts_with("https://") => o.to_owned(),
                        _ => origin,
                    };
                    self.origins.insert(conn, origin);
                    self.client.handle_connected(self.now, conn);
                }
                Transmit::Write { conn, len } => {
                    let bytes = buf.split_off(buf.len() - len);
                    let acc = self.partial.entry(conn).or_default();
                    acc.extend_from_slice(&bytes);
                    let Some((method, target, headers, body)) = parse_request(acc) else {
                        continue;
                    };
                    self.partial.remove(&conn);
                    let seen = Seen {
                        origin: self.origins.get(&conn).cloned().expect("connected"),
                        method,
                        target,
                        headers,
                        body,
                    };
                    if self.silent.contains(&seen.path_url()) {
                        self.seen.push(seen);
                        continue;
                    }
                    if seen.is_mcp() && seen.method == "GET" {
                        self.get_conns.push(conn);
                        self.stream_conn = Some(conn);
                    }
                    let reply = self.state.borrow_mut().answer(&seen);
                    let call = seen.is_mcp() && seen.rpc_method() == "tools/call";
                    let held = seen.is_mcp()
                        && (self.hold_method.is_some_and(|m| seen.rpc_method() == m)
                            || self.hold_gets && seen.method == "GET");
                    self.seen.push(seen);
                    if held || call && self.hold_call == Some(self.mcp_requests("tools/call").len())
                    {
                        self.held_back.push((conn, reply));
                        continue;
                    }
                    self.deferred.push_back((conn, reply));
                }
                Transmit::Close { conn } => {
                    self.origins.remove(&conn);
                    self.partial.remove(&conn);
                    self.deferred.retain(|(c, _)| *c != conn);
                }
                other => panic!("an HTTP client asked for {other:?}"),
            }
        }
        while let Some((conn, reply)) = self.deferred.pop_front() {
            moved = true;
            match reply {
                Reply::Raw(bytes) => self.client.handle_read(self.now, conn, &bytes),
                Reply::RawThenClose(bytes) => {
                    self.client.handle_read(self.now, conn, &bytes);
                    self.client.handle_eof(self.now, conn);
                }
                other => panic!("unsupported reply {other:?}"),
            }
        }
        let events = std::mem::take(&mut self.state.borrow_mut().sse_outbox);
        if let Some(conn) = self.stream_conn.filter(|_| !events.is_empty()) {
            moved = true;
            self.client.handle_read(self.now, conn, &events);
        }
        while let Some(e) = self.client.poll_event() {
            moved = true;
            self.events.push(e);
        }
        moved
    }

    /// Delivers the answers kept back ([`Net::hold_call`]), then settles.
    fn release(&mut self) {
        self.deferred.extend(std::mem::take(&mut self.held_back));
        self.settle();
    }

    /// Runs until nothing moves, without touching the clock.
    fn settle(&mut self) {
        let mut n = 0;
        while self.step() {
            n += 1;
            assert!(n < 10_000, "no quiescence");
        }
    }

    /// Runs until `done`, jumping the clock to the next deadline when idle.
    fn run_until(&mut self, mut done: impl FnMut(&Self) -> bool) {
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

    /// The server ends every `GET` stream it has open.
    fn end_get_streams(&mut self) {
        for conn in std::mem::take(&mut self.get_conns) {
            if self.origins.contains_key(&conn) {
                self.client.handle_eof(self.now, conn);
            }
        }
    }

    fn approval_urls(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::AuthorizationRequested { url } => Some(url.clone()),
                _ => None,
            })
            .collect()
    }

    /// The browser approves the last authorization request.
    fn approve(&mut self) -> Result<(), AuthError> {
        let url = self
            .approval_urls()
            .pop()
            .expect("an authorization request");
        let params = parse_pairs(url.split_once('?').expect("query").1).expect("query");
        let state = &params.iter().find(|(k, _)| k == "state").expect("state").1;
        let callback =
            format!("{REDIRECT}?code=code-x&state={state}&iss=https%3A%2F%2Fauth.example.com");
        let r = self
            .client
            .handle_authorization_callback(self.now, &callback);
        self.settle();
        r
    }

    fn connected(&self) -> bool {
        self.events.iter().any(|e| matches!(e, Event::Connected(_)))
    }

    fn closed(&self) -> Option<CloseReason> {
        self.events.iter().find_map(|e| match e {
            Event::Closed { reason } => Some(reason.clone()),
            _ => None,
        })
    }

    /// Connects, approving the authorization the first refusal starts.
    fn connect_with_approval(&mut self) {
        self.run_until(|n| !n.approval_urls().is_empty() || n.closed().is_some());
        self.approve().expect("callback");
        self.run_until(|n| n.connected() || n.closed().is_some());
        assert!(self.connected(), "{:#?}", self.events);
    }

    fn completion(&self, call: CallId) -> Option<Result<CallOutput, CallError>> {
        self.events.iter().find_map(|e| match e {
            Event::CallCompleted { call: c, outcome } if *c == call => Some(outcome.clone()),
            _ => None,
        })
    }

    fn call(&mut self, request: CallRequest) -> Result<CallOutput, CallError> {
        let id = self.client.call(self.now, request).expect("call");
        self.run_until(|n| n.completion(id).is_some());
        self.settle();
        self.completion(id).expect("completed")
    }

    fn mcp_requests(&self, rpc: &str) -> Vec<&Seen> {
        self.seen
            .iter()
            .filter(|s| s.is_mcp() && s.rpc_method() == rpc)
            .collect()
    }

    fn token_requests(&self) -> Vec<&Seen> {
        self.seen
            .iter()
            .filter(|s| s.path_url() == format!("{AS}/token"))
            .collect()
    }

    /// No request but the MCP endpoint's carries a bearer token, and no token appears in
    /// a URL or in a request to another server.
    fn assert_tokens_only_to_the_mcp_server(&self) {
        let issued = self.state.borrow().issued;
        for s in &self.seen {
            for n in 1..=issued {
                let token = format!("at-{n}");
                assert!(!s.target.contains(&token), "token in a URL: {}", s.url());
                if !s.is_mcp() {
                    assert!(
                        !String::from_utf8_lossy(&s.body).contains(&token),
                        "token sent to {}",
                        s.url()
                    );
                    assert!(
                        s.headers.iter().all(|(_, v)| !v.contains(&token)),
                        "token sent to {}",
                        s.url()
                    );
                }
            }
            if !s.is_mcp() {
                assert!(
                    s.header("authorization")
                        .is_none_or(|v| !v.starts_with("Bearer")),
                    "bearer token sent to {}",
                    s.url()
                );
            }
        }
    }
}

fn tool() -> CallRequest {
    CallRequest::call_tool("echo", json!({}))
}

fn text(out: &CallOutput) -> String {
    let v: Value = serde_json::from_str(out.result.get()).expect("json");
    v["content"][0]["text"].as_str().unwrap_or("").to_owned()
}

// ----- tests -------------------------------------------------------------------------

#[test]
fn the_first_refusal_runs_the_flow_and_the_refused_request_is_sent_again_with_the_token() {
    let mut net = Net::new(auth_config());
    net.run_until(|n| !n.approval_urls().is_empty() || n.closed().is_some());
    // The first MCP request went without a token and was refused; then discovery.
    let first = &net.seen[0];
    assert!(first.is_mcp(), "{first:?}");
    assert_eq!(first.header("authorization"), None);
    let urls: Vec<String> = net
        .seen
        .iter()
        .map(|s| format!("{} {}", s.method, s.url()))
        .collect();
    assert_eq!(
        urls[1..],
        [
            format!("GET {PRM}"),
            format!("GET {AS}/.well-known/oauth-authorization-server"),
            format!("POST {AS}/register"),
        ]
    );
    // The flow's requests are plain OAuth requests on their own connections.
    for s in &net.seen[1..] {
        assert_eq!(s.header("connection"), Some("close"), "{}", s.url());
        assert_eq!(s.header("mcp-protocol-version"), None, "{}", s.url());
    }
    let url = net.approval_urls().pop().unwrap();
    assert!(url.starts_with(&format!("{AS}/authorize?")), "{url}");
    assert!(!net.connected());

    let refused_body = net.seen[0].body.clone();
    let before = net.seen.len();
    net.approve().expect("callback");
    net.run_until(|n| n.connected() || n.closed().is_some());
    assert!(net.connected(), "{:#?}", net.events);
    // The token request, then the refused request again, byte for byte, with the token.
    assert_eq!(net.seen[before].path_url(), format!("{AS}/token"));
    let again = &net.seen[before + 1];
    assert!(again.is_mcp());
    assert_eq!(again.body, refused_body);
    assert_eq!(again.header("authorization"), Some("Bearer at-1"));
    assert!(net.events.iter().any(
        |e| matches!(e, Event::CredentialsChanged(c) if c.access_token.as_deref() == Some("at-1"))
    ));

    let out = net.call(tool()).expect("call");
    assert_eq!(text(&out), "run 1");
    for s in net.seen.iter().filter(|s| s.is_mcp()).skip(1) {
        assert_eq!(s.header("authorization"), Some("Bearer at-1"));
    }
    net.assert_tokens_only_to_the_mcp_server();
}

/// The configured headers (an API key, say) go to the MCP server only: never to its
/// metadata, the authorization server's discovery, registration or token endpoint.
#[test]
fn configured_headers_never_reach_the_authorization_flow() {
    let headers = vec![("X-Api-Key".to_owned(), "k-123".to_owned())];
    let mut net = Net::with_headers(
        auth_config(),
        ClientConfig::new("auth-http", "1.0"),
        headers,
    );
    net.run_until(|n| !n.approval_urls().is_empty() || n.closed().is_some());
    net.approve().expect("callback");
    net.run_until(|n| n.connected() || n.closed().is_some());
    assert!(net.connected(), "{:#?}", net.events);
    net.call(tool()).expect("call");
    let (mcp, flow): (Vec<&Seen>, Vec<&Seen>) = net.seen.iter().partition(|s| s.is_mcp());
    assert!(mcp.len() >= 3 && flow.len() >= 4, "{:#?}", net.seen);
    for s in mcp {
        assert_eq!(s.header("x-api-key"), Some("k-123"), "{}", s.url());
    }
    for s in flow {
        assert_eq!(s.header("x-api-key"), None, "{}", s.url());
    }
}

#[test]
fn a_token_expiring_during_a_call_is_refreshed_and_the_call_runs_exactly_once() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    // Learn the tools first, so the 401 meets the tools/call itself.
    assert!(net.call(CallRequest::list_tools()).is_ok());
    net.state.borrow_mut().refuse_calls.push_back((
        401,
        format!(r#"Bearer error="invalid_token", resource_metadata="{PRM}""#),
    ));
    let before = net.seen.len();
    let out = net.call(tool()).expect("the call completes");
    assert_eq!(text(&out), "run 1");
    assert_eq!(net.state.borrow().tool_runs, 1, "the tool ran exactly once");
    let calls = net.mcp_requests("tools/call");
    assert_eq!(calls.len(), 2, "the refused copy and the one that ran");
    assert_eq!(calls[0].header("authorization"), Some("Bearer at-1"));
    assert_eq!(calls[1].header("authorization"), Some("Bearer at-2"));
    assert_eq!(calls[0].body, calls[1].body, "the same request, same id");
    // Refreshed, not re-authorized: no second approval.
    let later: Vec<String> = net.seen[before..]
        .iter()
        .map(|s| format!("{} {}", s.method, s.path_url()))
        .collect();
    assert_eq!(
        later,
        [
            format!("POST {MCP}"),
            format!("GET {PRM}"),
            format!("POST {AS}/token"),
            format!("POST {MCP}"),
        ]
    );
    let refresh = net.token_requests().pop().unwrap().clone();
    assert_eq!(
        refresh.form_value("grant_type").as_deref(),
        Some("refresh_token")
    );
    assert_eq!(refresh.form_value("refresh_token").as_deref(), Some("rt-1"));
    assert_eq!(refresh.form_value("resource").as_deref(), Some(MCP));
    assert_eq!(net.approval_urls().len(), 1);
    net.assert_tokens_only_to_the_mcp_server();
}

#[test]
fn a_refused_refresh_during_a_call_reauthorizes_and_the_call_runs_exactly_once() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    {
        let mut s = net.state.borrow_mut();
        s.refuse_calls
            .push_back((401, r#"Bearer error="invalid_token""#.to_owned()));
        s.refuse_refresh = true;
    }
    let id = net.client.call(net.now, tool()).expect("call");
    net.run_until(|n| n.approval_urls().len() == 2 || n.completion(id).is_some());
    assert_eq!(net.approval_urls().len(), 2, "{:#?}", net.events);
    assert!(net.completion(id).is_none());
    assert_eq!(net.state.borrow().tool_runs, 0);
    net.approve().expect("callback");
    net.run_until(|n| n.completion(id).is_some());
    let out = net.completion(id).unwrap().expect("the call completes");
    assert_eq!(text(&out), "run 1");
    assert_eq!(net.state.borrow().tool_runs, 1);
    assert_eq!(net.state.borrow().codes, 2);
    assert_eq!(net.mcp_requests("tools/call").len(), 2);
    net.assert_tokens_only_to_the_mcp_server();
}

#[test]
fn a_step_up_loop_fails_the_call_after_at_most_three_authorizations() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    net.state.borrow_mut().always_insufficient = true;
    let id = net.client.call(net.now, tool()).expect("call");
    let mut approvals = 0;
    loop {
        // The approvals so far: the one that connected, and the step-ups approved.
        let before = 1 + approvals;
        net.run_until(|n| n.approval_urls().len() > before || n.completion(id).is_some());
        if net.completion(id).is_some() {
            break;
        }
        approvals += 1;
        assert!(approvals <= 3, "too many step-ups");
        net.approve().expect("callback");
    }
    assert_eq!(approvals, 2, "two step-ups (max_step_ups)");
    assert_eq!(
        net.approval_urls().len(),
        3,
        "at most three authorizations in all"
    );
    match net.completion(id).unwrap() {
        Err(CallError::Authorization(AuthError::InsufficientScope { scope })) => {
            assert_eq!(scope, "extra:3");
        }
        other => panic!("{other:?}"),
    }
    // Each step-up asks for the union of what was asked before and the challenge.
    let scopes: Vec<String> = net
        .approval_urls()
        .iter()
        .map(|u| {
            parse_pairs(u.split_once('?').unwrap().1)
                .unwrap()
                .into_iter()
                .find(|(k, _)| k == "scope")
                .map(|(_, v)| v)
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        scopes,
        [
            "mcp:read mcp:write",
            "mcp:read mcp:write extra:1",
            "mcp:read mcp:write extra:1 extra:2"
        ]
    );
    assert_eq!(net.state.borrow().tool_runs, 0);
    assert_eq!(net.mcp_requests("tools/call").len(), 3);
}

#[test]
fn step_ups_are_counted_per_request_not_for_the_client_lifetime() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    // Three calls, each refused once for scope and then allowed: three separate
    // step-ups, each followed by success.
    for round in 1..=3 {
        net.state.borrow_mut().refuse_calls.push_back((
            403,
            format!(r#"Bearer error="insufficient_scope", scope="s{round}""#),
        ));
        let id = net.client.call(net.now, tool()).expect("call");
        net.run_until(|n| n.approval_urls().len() > round || n.completion(id).is_some());
        assert!(
            net.completion(id).is_none(),
            "round {round}: {:?}",
            net.completion(id)
        );
        net.approve().expect("callback");
        net.run_until(|n| n.completion(id).is_some());
        assert!(net.completion(id).unwrap().is_ok(), "round {round}");
    }
    assert_eq!(net.state.borrow().tool_runs, 3);
}

#[test]
fn deadlines_are_held_while_a_person_approves() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    net.state
        .borrow_mut()
        .refuse_calls
        .push_back((401, r#"Bearer error="invalid_token""#.to_owned()));
    net.state.borrow_mut().refuse_refresh = true;
    let id = net
        .client
        .call(net.now, tool().timeout(Duration::from_secs(5)))
        .expect("call");
    net.run_until(|n| n.approval_urls().len() == 2);
    for _ in 0..6 {
        net.now += Duration::from_secs(60);
        net.client.handle_timeout(net.now);
        net.settle();
    }
    assert!(net.completion(id).is_none(), "{:?}", net.completion(id));
    net.approve().expect("callback");
    net.run_until(|n| n.completion(id).is_some());
    let out = net.completion(id).unwrap().expect("the call completes");
    assert_eq!(text(&out), "run 1");
}

/// Connecting waits for a person as long as the approval's own bound allows: an approval
/// that came after the connect deadline had passed failed the token request as soon as
/// it went out ("timed out waiting for the authorization request POST …/token").
#[test]
fn connecting_waits_for_a_slow_approval() {
    let mut config = ClientConfig::new("auth-http", "1.0");
    config.limits.connect_timeout = Duration::from_secs(10);
    let mut net = Net::with_config(auth_config(), config);
    net.run_until(|n| !n.approval_urls().is_empty());
    net.now += Duration::from_secs(65);
    net.client.handle_timeout(net.now);
    net.settle();
    assert!(net.closed().is_none(), "{:?}", net.closed());
    // The browser comes back; time is looked at while the token request is out.
    let url = net.approval_urls().pop().expect("an authorization request");
    let params = parse_pairs(url.split_once('?').expect("query").1).expect("query");
    let state = &params.iter().find(|(k, _)| k == "state").expect("state").1;
    let callback =
        format!("{REDIRECT}?code=code-x&state={state}&iss=https%3A%2F%2Fauth.example.com");
    net.client
        .handle_authorization_callback(net.now, &callback)
        .expect("callback");
    net.client.handle_timeout(net.now);
    net.run_until(|n| n.connected() || n.closed().is_some());
    assert!(net.connected(), "{:?}", net.closed());
}

#[test]
fn the_approval_timing_out_fails_the_waiting_call() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    net.state
        .borrow_mut()
        .refuse_calls
        .push_back((401, r#"Bearer error="invalid_token""#.to_owned()));
    net.state.borrow_mut().refuse_refresh = true;
    let id = net
        .client
        .call(net.now, tool().timeout(Duration::from_secs(5)))
        .expect("call");
    net.run_until(|n| n.approval_urls().len() == 2);
    net.now += Duration::from_secs(600);
    net.client.handle_timeout(net.now);
    net.settle();
    assert_eq!(
        net.completion(id).map(|r| r.err()),
        Some(Some(CallError::Authorization(AuthError::Timeout {
            what: "the approval in the browser".into()
        })))
    );
    assert_eq!(net.state.borrow().tool_runs, 0);
}

#[test]
fn abandoning_the_authorization_fails_the_waiting_call_as_denied() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    net.state
        .borrow_mut()
        .refuse_calls
        .push_back((401, r#"Bearer error="invalid_token""#.to_owned()));
    net.state.borrow_mut().refuse_refresh = true;
    let id = net.client.call(net.now, tool()).expect("call");
    net.run_until(|n| n.approval_urls().len() == 2);
    let sent = net.seen.len();
    net.client.abandon_authorization(net.now, "no browser");
    net.settle();
    assert_eq!(
        net.completion(id).map(|r| r.err()),
        Some(Some(CallError::Authorization(AuthError::Denied {
            error: "cancelled".into(),
            description: Some("no browser".into())
        })))
    );
    assert_eq!(net.seen.len(), sent, "nothing more is sent");
    assert_eq!(net.state.borrow().tool_runs, 0);
    // The connection is still usable: the next refusal starts a new flow.
    assert!(net.client.close_reason().is_none());
}

/// A step-up that fails (the person declines) fails the call refused for scope, not a
/// call that only waited behind it: the token it would carry is still good (a step-up
/// keeps it), so it goes out with that token once the flow is over.
#[test]
fn a_failed_step_up_fails_only_the_call_refused_for_scope() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    net.state.borrow_mut().refuse_calls.push_back((
        403,
        r#"Bearer error="insufficient_scope", scope="admin""#.to_owned(),
    ));
    let refused = net.client.call(net.now, tool()).expect("call");
    net.run_until(|n| n.approval_urls().len() == 2);
    // Made while the person is asked: waits for the flow, never refused.
    let waiting = net.client.call(net.now, tool()).expect("call");
    net.settle();
    assert_eq!(net.completion(waiting).map(|r| r.err()), None);
    net.client.abandon_authorization(net.now, "declined");
    net.run_until(|n| n.completion(refused).is_some() && n.completion(waiting).is_some());
    assert!(
        matches!(
            net.completion(refused),
            Some(Err(CallError::Authorization(AuthError::Denied { .. })))
        ),
        "{:?}",
        net.completion(refused)
    );
    let out = net.completion(waiting).expect("completed");
    assert!(
        out.is_ok(),
        "a call that only waited for the step-up failed with it: {out:?}"
    );
    assert_eq!(net.state.borrow().tool_runs, 1);
}

/// An [`mcp_io::auth::AuthorizationHandler`] answers once: when the machine refuses the
/// callback it returned (another `state`, a malformed URL) and would keep waiting for
/// another, nobody is left to bring one. The waiting call fails then, naming the
/// refusal, rather than hanging until the approval's ten minutes run out and failing as
/// a timeout.
#[test]
fn a_handler_callback_the_flow_refuses_ends_the_wait_at_once() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    net.state
        .borrow_mut()
        .refuse_calls
        .push_back((401, r#"Bearer error="invalid_token""#.to_owned()));
    net.state.borrow_mut().refuse_refresh = true;
    let id = net.client.call(net.now, tool()).expect("call");
    net.run_until(|n| n.approval_urls().len() == 2);
    let forged = format!("{REDIRECT}?code=code-x&state=WRONG&iss=https%3A%2F%2Fauth.example.com");
    mcp_io::auth::Reply::AuthorizationCallback(forged).apply(&mut net.client, net.now);
    net.settle();
    match net.completion(id) {
        Some(Err(CallError::Authorization(AuthError::Denied { description, .. }))) => {
            let d = description.unwrap_or_default();
            assert!(d.contains("state"), "{d}");
        }
        other => panic!("the call still waits (or ended otherwise): {other:?}"),
    }
    assert_eq!(net.state.borrow().tool_runs, 0);
}

#[test]
fn a_failing_handshake_closes_with_the_authorization_error() {
    let mut net = Net::new(auth_config());
    net.state.borrow_mut().routes.insert(
        PRM.to_owned(),
        Reply::json(
            200,
            &json!({"resource": "https://evil.example.com/mcp",
                "authorization_servers": [AS]}),
        ),
    );
    net.run_until(|n| n.closed().is_some());
    assert_eq!(
        net.closed(),
        Some(CloseReason::Authorization(AuthError::ResourceMismatch {
            resource: "https://evil.example.com/mcp".into(),
            expected: MCP.into(),
        }))
    );
    assert!(
        net.seen.iter().all(|s| !s.url().starts_with(AS)),
        "nothing sent to the authorization server"
    );
}

#[test]
fn an_abandoned_handshake_authorization_closes_the_connection() {
    let mut net = Net::new(auth_config());
    net.run_until(|n| !n.approval_urls().is_empty());
    net.client.abandon_authorization(net.now, "declined");
    net.settle();
    assert_eq!(
        net.closed(),
        Some(CloseReason::Authorization(AuthError::Denied {
            error: "cancelled".into(),
            description: Some("declined".into())
        }))
    );
}

#[test]
fn a_wrong_state_in_the_callback_keeps_the_flow_waiting() {
    let mut net = Net::new(auth_config());
    net.run_until(|n| !n.approval_urls().is_empty());
    let r = net.client.handle_authorization_callback(
        net.now,
        &format!("{REDIRECT}?code=forged&state=nope&iss=https%3A%2F%2Fauth.example.com"),
    );
    assert_eq!(r, Err(AuthError::StateMismatch));
    net.settle();
    assert!(net.token_requests().is_empty());
    assert!(net.closed().is_none());
    net.approve().expect("callback");
    net.run_until(|n| n.connected() || n.closed().is_some());
    assert!(net.connected());
}

#[test]
fn an_authorization_request_that_never_answers_times_out() {
    let mut auth = auth_config();
    // Shorter than the handshake's own deadline.
    auth.request_timeout = Duration::from_secs(3);
    let mut net = Net::new(auth);
    net.silent
        .push("https://auth.example.com/.well-known/oauth-authorization-server".into());
    net.run_until(|n| n.closed().is_some());
    assert_eq!(
        net.closed(),
        Some(CloseReason::Authorization(AuthError::Timeout {
            what: "the authorization request GET https://auth.example.com/.well-known/oauth-authorization-server: \
                   no response within 3s (AuthConfig::request_timeout)"
                .into()
        }))
    );
}

/// Connecting waits on the flow, within the connect deadline (not the probe's short
/// window: the server did answer, with `401`), and a request of the flow that hangs
/// past it is named: the handshake's own timeout blamed `server/discover`.
#[test]
fn a_hanging_authorization_request_is_named_when_connecting_runs_out_of_time() {
    let mut config = ClientConfig::new("auth-http", "1.0");
    config.era_mode = mcp_proto::version::EraMode::Auto;
    config.limits.probe_timeout = Duration::from_secs(3);
    config.limits.connect_timeout = Duration::from_secs(10);
    let mut net = Net::with_config(auth_config(), config);
    net.silent.push(PRM.into());
    net.run_until(|n| n.closed().is_some());
    assert_eq!(
        net.closed(),
        Some(CloseReason::Authorization(AuthError::Timeout {
            what: format!("the authorization request GET {PRM}")
        }))
    );
    assert_eq!(net.now, Instant::ZERO + Duration::from_secs(10));
}

#[test]
fn without_a_refresh_token_a_401_during_a_call_asks_for_approval_and_runs_once() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    net.state
        .borrow_mut()
        .refuse_calls
        .push_back((401, r#"Bearer error="invalid_token""#.to_owned()));
    net.state.borrow_mut().refuse_refresh = true;
    let id = net.client.call(net.now, tool()).expect("call");
    net.run_until(|n| n.approval_urls().len() == 2);
    // A second call made while the flow runs waits with the first, unsent.
    let id2 = net.client.call(net.now, tool()).expect("call");
    net.settle();
    assert_eq!(net.mcp_requests("tools/call").len(), 1);
    net.approve().expect("callback");
    net.run_until(|n| n.completion(id).is_some() && n.completion(id2).is_some());
    assert!(net.completion(id).unwrap().is_ok());
    assert!(net.completion(id2).unwrap().is_ok());
    assert_eq!(net.state.borrow().tool_runs, 2);
    assert_eq!(net.mcp_requests("tools/call").len(), 3);
    net.assert_tokens_only_to_the_mcp_server();
}

#[test]
fn stored_credentials_are_sent_from_the_first_request_without_any_flow() {
    let mut auth = auth_config();
    auth.credentials = Some(mcp_proto::auth::Credentials {
        server_url: MCP.into(),
        resource: MCP.into(),
        issuer: AS.into(),
        client: None,
        access_token: Some("stored-at".into()),
        token_type: "Bearer".into(),
        expires_at: Some(UNIX_START + 3600),
        obtained_at: Some(UNIX_START),
        refresh_token: None,
        requested_scope: None,
        granted_scope: None,
        revocation_endpoint: None,
    });
    let mut net = Net::new(auth);
    net.state.borrow_mut().valid.push("Bearer stored-at".into());
    net.run_until(|n| n.connected() || n.closed().is_some());
    assert!(net.connected(), "{:#?}", net.events);
    assert!(
        net.seen.iter().all(Seen::is_mcp),
        "no authorization request"
    );
    for s in &net.seen {
        assert_eq!(s.header("authorization"), Some("Bearer stored-at"));
    }
    assert!(net.approval_urls().is_empty());
}

#[test]
fn a_server_that_refuses_every_token_does_not_loop() {
    let mut net = Net::new(auth_config());
    // Tokens are issued but the MCP server never accepts any.
    net.state.borrow_mut().challenge =
        format!(r#"Bearer error="invalid_token", resource_metadata="{PRM}""#);
    net.state.borrow_mut().reject_all = true;
    net.run_until(|n| !n.approval_urls().is_empty());
    net.approve().expect("callback");
    let mut rounds = 0;
    while net.closed().is_none() {
        if net.step() {
            continue;
        }
        if net.approval_urls().len() > 1 + rounds {
            rounds += 1;
            assert!(rounds < 5, "looping");
            net.approve().expect("callback");
            continue;
        }
        let t = net.client.poll_timeout().expect("a deadline");
        net.now = net.now.max(t);
        net.client.handle_timeout(net.now);
    }
    // The first probe, and once more with the token the flow obtained; refused again,
    // the refusal stands: no refresh, no second authorization.
    assert_eq!(rounds, 0, "no further approval");
    assert_eq!(net.mcp_requests("server/discover").len(), 2);
    let grants: Vec<Option<String>> = net
        .token_requests()
        .iter()
        .map(|t| t.form_value("grant_type"))
        .collect();
    assert_eq!(grants, [Some("authorization_code".to_owned())]);
    assert!(
        matches!(net.closed(), Some(CloseReason::AuthRequired { .. })),
        "{:?}",
        net.closed()
    );
    net.assert_tokens_only_to_the_mcp_server();
}

#[test]
fn two_concurrent_calls_refused_for_scope_share_one_step_up() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    {
        let mut s = net.state.borrow_mut();
        for _ in 0..2 {
            s.refuse_calls.push_back((
                403,
                r#"Bearer error="insufficient_scope", scope="more""#.to_owned(),
            ));
        }
    }
    let a = net.client.call(net.now, tool()).expect("call");
    let b = net.client.call(net.now, tool()).expect("call");
    net.run_until(|n| {
        n.approval_urls().len() == 2 || (n.completion(a).is_some() && n.completion(b).is_some())
    });
    assert_eq!(
        net.completion(b).map(|r| r.err()),
        None,
        "the second call waits for the step-up"
    );
    net.approve().expect("callback");
    net.run_until(|n| n.completion(a).is_some() && n.completion(b).is_some());
    assert!(net.completion(a).unwrap().is_ok());
    assert!(net.completion(b).unwrap().is_ok());
    assert_eq!(net.state.borrow().tool_runs, 2);
    assert_eq!(net.approval_urls().len(), 2, "one step-up for both");
}

#[test]
fn two_concurrent_calls_refused_with_401_share_one_flow() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    // The first refusal ends the token, so the second call is refused too.
    net.state
        .borrow_mut()
        .refuse_calls
        .push_back((401, r#"Bearer error="invalid_token""#.to_owned()));
    let a = net.client.call(net.now, tool()).expect("call");
    let b = net.client.call(net.now, tool()).expect("call");
    net.run_until(|n| n.completion(a).is_some() && n.completion(b).is_some());
    assert!(net.completion(a).unwrap().is_ok());
    assert!(net.completion(b).unwrap().is_ok());
    assert_eq!(net.state.borrow().tool_runs, 2);
    assert_eq!(net.token_requests().len(), 2, "the code, then one refresh");
    assert_eq!(net.mcp_requests("tools/call").len(), 4);
}

/// Two calls go out with the same token; the server refuses the first (the token is
/// dead), and its refusal of the second, sent with that same dead token, arrives only
/// after the refresh the first started has ended. That late refusal is about the old
/// token: the second call is sent again with the new one. Another flow would drop the
/// token just obtained and refresh again (without a refresh token, ask the person again).
#[test]
fn a_late_refusal_of_an_older_token_is_answered_by_the_new_one() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    net.state
        .borrow_mut()
        .refuse_calls
        .push_back((401, r#"Bearer error="invalid_token""#.to_owned()));
    net.hold_call = Some(2);
    let a = net.client.call(net.now, tool()).expect("call");
    let b = net.client.call(net.now, tool()).expect("call");
    net.run_until(|n| n.completion(a).is_some());
    assert!(net.completion(a).unwrap().is_ok());
    assert_eq!(net.token_requests().len(), 2, "the code, then one refresh");
    assert_eq!(
        net.held_back.len(),
        1,
        "the second call's refusal is kept back"
    );
    net.release();
    net.run_until(|n| n.completion(b).is_some());
    assert!(net.completion(b).unwrap().is_ok(), "{:#?}", net.events);
    assert_eq!(net.state.borrow().tool_runs, 2);
    assert_eq!(
        net.token_requests().len(),
        2,
        "the late refusal started another flow"
    );
    let calls = net.mcp_requests("tools/call");
    let tokens: Vec<_> = calls.iter().map(|c| c.header("authorization")).collect();
    assert_eq!(
        tokens,
        [
            Some("Bearer at-1"),
            Some("Bearer at-1"),
            Some("Bearer at-2"),
            Some("Bearer at-2")
        ]
    );
    assert_eq!(net.approval_urls().len(), 1);
}

/// Stored credentials whose token expires an hour after `UNIX_START`, with a refresh
/// token.
fn stored_expiring() -> mcp_proto::auth::Credentials {
    mcp_proto::auth::Credentials {
        server_url: MCP.into(),
        resource: MCP.into(),
        issuer: AS.into(),
        client: Some(mcp_proto::auth::ClientRegistration {
            issuer: AS.into(),
            client_id: "client-1".into(),
            client_secret: None,
            auth_method: "none".into(),
            source: "dcr".into(),
        }),
        access_token: Some("stored-at".into()),
        token_type: "Bearer".into(),
        expires_at: Some(UNIX_START + 3600),
        obtained_at: Some(UNIX_START),
        refresh_token: Some("rt-1".into()),
        requested_scope: None,
        granted_scope: None,
        revocation_endpoint: None,
    }
}

/// A static `Authorization` header beside the flow: the flow's token wins while it has
/// one, and once the flow holds credentials the static header never comes back, not
/// even when the flow's token expires (it was sent then, in place of a refresh).
#[test]
fn the_flows_token_wins_over_a_static_header_even_once_expired() {
    let mut auth = auth_config();
    auth.credentials = Some(stored_expiring());
    let mut net = Net::with_http(auth, ClientConfig::new("auth-http", "1.0"), |http| {
        http.authorization = Some("Bearer static".into());
    });
    {
        let mut s = net.state.borrow_mut();
        s.valid.push("Bearer stored-at".into());
        s.valid.push("Bearer static".into());
    }
    net.run_until(|n| n.connected() || n.closed().is_some());
    assert!(net.connected(), "{:#?}", net.events);
    for s in &net.seen {
        assert_eq!(s.header("authorization"), Some("Bearer stored-at"));
    }
    // The stored token expires: refreshed, never replaced by the static header. (This
    // run has not read the server's metadata yet: the expired token goes, the server
    // refuses it, and its `401` leads to the refresh.)
    net.now += Duration::from_secs(7200);
    net.state
        .borrow_mut()
        .valid
        .retain(|v| v != "Bearer stored-at");
    let out = net.call(tool()).expect("call");
    assert_eq!(text(&out), "run 1");
    let sent: Vec<Option<&str>> = net
        .seen
        .iter()
        .filter(|s| s.is_mcp())
        .map(|s| s.header("authorization"))
        .collect();
    assert!(!sent.contains(&Some("Bearer static")), "{sent:?}");
    assert_eq!(sent.last(), Some(&Some("Bearer at-1")), "{sent:?}");
    assert_eq!(net.token_requests().len(), 1, "one refresh");
}

/// A token the flow obtained and that is known to have expired is not sent again from
/// the link's copy of the last header value: it is refreshed before the request goes,
/// and the call runs once with the new token.
#[test]
fn a_token_known_expired_is_not_sent_from_a_stale_copy() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    // `expires_in` 3600: an hour and more later, `at-1` is known expired.
    net.now += Duration::from_secs(3700);
    let out = net.call(tool()).expect("call");
    assert_eq!(text(&out), "run 1");
    let calls = net.mcp_requests("tools/call");
    for c in &calls {
        assert_ne!(
            c.header("authorization"),
            Some("Bearer at-1"),
            "expired token sent"
        );
    }
    assert_eq!(
        calls.last().unwrap().header("authorization"),
        Some("Bearer at-2")
    );
    assert_eq!(net.state.borrow().tool_runs, 1);
}

/// A `403 insufficient_scope` that names no scope: the person is not asked again for
/// the scopes the token already has; the call fails at once with a typed error, and
/// the token stays in use for the next call.
#[test]
fn a_403_insufficient_scope_without_a_scope_fails_the_call_without_asking_again() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    net.state
        .borrow_mut()
        .refuse_calls
        .push_back((403, r#"Bearer error="insufficient_scope""#.to_owned()));
    let id = net.client.call(net.now, tool()).expect("call");
    net.run_until(|n| n.completion(id).is_some() || n.approval_urls().len() > 1);
    assert_eq!(
        net.approval_urls().len(),
        1,
        "asked again for the same scopes"
    );
    assert!(
        matches!(
            net.completion(id),
            Some(Err(CallError::Authorization(
                AuthError::ScopeNotGrantable { .. }
            )))
        ),
        "{:?}",
        net.completion(id)
    );
    assert_eq!(net.mcp_requests("tools/call").len(), 1, "not sent again");
    let out = net.call(tool()).expect("the next call");
    assert_eq!(text(&out), "run 1");
    assert_eq!(
        net.mcp_requests("tools/call")
            .last()
            .unwrap()
            .header("authorization"),
        Some("Bearer at-1")
    );
}

/// A token response whose `expires_in` is negative, fractional, past any integer or not
/// digits still carries a usable token, for a code the authorization server has spent:
/// it is kept with an unknown lifetime (a fraction is cut off), the handshake and the
/// calls go ahead with it, and nobody is asked to approve again.
#[test]
fn a_token_with_an_unusable_expires_in_is_kept_and_used() {
    for expires_in in [
        json!(-1),
        json!(3600.5),
        json!(-1e300),
        json!("1h"),
        json!("-5"),
        json!(true),
    ] {
        let mut net = Net::new(auth_config());
        net.state.borrow_mut().expires_in = Some(expires_in.clone());
        net.connect_with_approval();
        let out = net.call(tool()).expect("call");
        assert_eq!(text(&out), "run 1", "{expires_in}");
        assert_eq!(net.state.borrow().codes, 1, "{expires_in}");
        assert_eq!(net.approval_urls().len(), 1, "{expires_in}");
        assert_eq!(net.token_requests().len(), 1, "{expires_in}");
        let creds = net.client.credentials().expect("credentials").clone();
        assert_eq!(creds.access_token.as_deref(), Some("at-1"));
        let lifetime = creds.expires_at.map(|e| e - creds.obtained_at.unwrap());
        let want = (expires_in == json!(3600.5)).then_some(3600);
        assert_eq!(lifetime, want, "{expires_in}");
        // Much later, the token with no known end is still sent.
        net.now += Duration::from_secs(10 * 3600);
        if want.is_none() {
            assert!(net.call(tool()).is_ok());
            let last = net
                .mcp_requests("tools/call")
                .last()
                .unwrap()
                .header("authorization");
            assert_eq!(last, Some("Bearer at-1"), "{expires_in}");
        }
    }
}

/// What went to the servers from `seen[from..]`, as `METHOD url`.
fn requests_since(net: &Net, from: usize) -> Vec<String> {
    net.seen[from..]
        .iter()
        .map(|s| format!("{} {}", s.method, s.path_url()))
        .collect()
}

/// A token known to have expired, or in its last minute, is refreshed before the calls
/// go out, with the metadata this run already read (not fetched again): no request is
/// spent on a `401` or on the metadata. The calls made meanwhile wait for that one
/// refresh and each goes out once, with the new token.
#[test]
fn a_token_known_expired_is_refreshed_before_the_calls_go_out() {
    // 3570 s: inside the last minute of an hour's token; 3700 s: past its end.
    for ahead in [3570, 3700] {
        let mut net = Net::new(auth_config());
        net.connect_with_approval();
        assert!(net.call(CallRequest::list_tools()).is_ok());
        net.now += Duration::from_secs(ahead);
        let before = net.seen.len();
        let a = net.client.call(net.now, tool()).expect("call");
        let b = net.client.call(net.now, tool()).expect("call");
        net.run_until(|n| n.completion(a).is_some() && n.completion(b).is_some());
        assert!(net.completion(a).unwrap().is_ok(), "{ahead}");
        assert!(net.completion(b).unwrap().is_ok(), "{ahead}");
        assert_eq!(
            requests_since(&net, before),
            [
                format!("POST {AS}/token"),
                format!("POST {MCP}"),
                format!("POST {MCP}"),
            ],
            "{ahead}"
        );
        let refresh = net.token_requests().pop().unwrap().clone();
        assert_eq!(
            refresh.form_value("grant_type").as_deref(),
            Some("refresh_token")
        );
        let calls = net.mcp_requests("tools/call");
        assert_eq!(calls.len(), 2, "{ahead}");
        for c in &calls {
            assert_eq!(c.header("authorization"), Some("Bearer at-2"), "{ahead}");
        }
        assert_eq!(net.state.borrow().tool_runs, 2);
        assert_eq!(net.approval_urls().len(), 1);
        net.assert_tokens_only_to_the_mcp_server();
    }
}

/// A refresh made before sending that fails fails the call with the error a refresh
/// after a `401` gives, and the call never goes out.
#[test]
fn a_failed_refresh_before_sending_fails_the_call_as_after_a_401() {
    let failing = |net: &mut Net| {
        net.state.borrow_mut().routes.insert(
            format!("{AS}/token"),
            Reply::json(500, &json!({"error": "server_error"})),
        );
    };
    // After a 401.
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    failing(&mut net);
    net.state
        .borrow_mut()
        .refuse_calls
        .push_back((401, r#"Bearer error="invalid_token""#.to_owned()));
    let after_401 = net.call(tool()).expect_err("the refresh failed");
    assert!(
        matches!(
            after_401,
            CallError::Authorization(AuthError::TokenRefused(_))
        ),
        "{after_401:?}"
    );
    // Before sending.
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    failing(&mut net);
    net.now += Duration::from_secs(3700);
    let before_sending = net.call(tool()).expect_err("the refresh failed");
    assert_eq!(format!("{before_sending:?}"), format!("{after_401:?}"));
    assert_eq!(net.mcp_requests("tools/call").len(), 0, "sent all the same");
    assert_eq!(net.state.borrow().tool_runs, 0);
    // The refresh token stays (a passing failure): the next call refreshes again.
    net.state.borrow_mut().routes.clear();
    let out = net.call(tool()).expect("call");
    assert_eq!(text(&out), "run 1");
    assert_eq!(net.mcp_requests("tools/call").len(), 1);
    assert_eq!(net.approval_urls().len(), 1);
}

/// Without a refresh token, the token held is sent until the server refuses it, in its
/// last minute and past its known end alike: the server decides. Sent without it, the
/// call met a `401` and the person was asked to approve again while the token was still
/// good.
#[test]
fn without_a_refresh_token_the_held_token_is_sent_until_refused() {
    let mut net = Net::new(auth_config());
    net.state.borrow_mut().no_refresh_token = true;
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    for ahead in [3570, 200] {
        net.now += Duration::from_secs(ahead);
        let out = net.call(tool()).expect("call");
        assert!(text(&out).starts_with("run "));
        let last = net
            .mcp_requests("tools/call")
            .last()
            .unwrap()
            .header("authorization");
        assert_eq!(last, Some("Bearer at-1"));
    }
    assert_eq!(net.mcp_requests("tools/call").len(), 2);
    assert_eq!(net.approval_urls().len(), 1);
    assert_eq!(net.token_requests().len(), 1);
}

/// A 2025-11-25 server behind OAuth, its tokens issued for `expires_in` seconds, the
/// client connected (with one approval) and its `GET` stream open.
fn legacy_net(expires_in: u64) -> Net {
    let mut net = Net::new(auth_config());
    {
        let mut s = net.state.borrow_mut();
        s.legacy = true;
        s.expires_in = Some(json!(expires_in));
    }
    net.connect_with_approval();
    net.settle();
    let gets: Vec<&Seen> = net
        .seen
        .iter()
        .filter(|s| s.is_mcp() && s.method == "GET")
        .collect();
    assert_eq!(gets.len(), 1, "the session's stream");
    net
}

/// Asserts the MCP requests sent since `since`, each as `METHOD token`
/// ([`mcp_tokens_since`]), naming every request in the failure.
#[track_caller]
fn assert_mcp_tokens(net: &Net, since: usize, want: &[&str]) {
    assert_eq!(
        mcp_tokens_since(net, since),
        want,
        "{:?}",
        requests_since(net, since)
    );
}

/// The `Authorization` of every request to the MCP endpoint from `seen[from..]`, as
/// `METHOD token`.
fn mcp_tokens_since(net: &Net, from: usize) -> Vec<String> {
    net.seen[from..]
        .iter()
        .filter(|s| s.is_mcp())
        .map(|s| format!("{} {}", s.method, s.header("authorization").unwrap_or("-")))
        .collect()
}

/// The session's `GET` stream reopened with a token known to be expired drew a `401`
/// that nothing answered: it was opened again with the same token, a bounded number of
/// times, and then the client stopped listening. It is refreshed first now, like the
/// `POST`s, and the stream reopens once, with the new token.
#[test]
fn a_get_stream_reopened_with_an_expired_token_refreshes_first() {
    let mut net = legacy_net(3600);
    net.now += Duration::from_secs(3700);
    net.state.borrow_mut().valid.retain(|v| v != "Bearer at-1");
    let before = net.seen.len();
    net.end_get_streams();
    net.run_until(|n| n.seen[before..].iter().any(|s| s.is_mcp()));
    net.settle();
    assert_mcp_tokens(&net, before, &["GET Bearer at-2"]);
    assert_eq!(net.token_requests().len(), 2, "one refresh");
    net.assert_tokens_only_to_the_mcp_server();
}

/// A call whose event stream dropped is resumed with a `GET` (`Last-Event-ID`): sent
/// with a token known to be expired, its `401` failed the call ("resuming the event
/// stream failed"). The token is refreshed first now, and the call gets its answer.
#[test]
fn a_resumption_with_an_expired_token_refreshes_first() {
    // A minute's token: known expired 45 s on, inside the call's own deadline.
    let mut net = legacy_net(60);
    net.state.borrow_mut().drop_call_streams = true;
    let call = net.client.call(net.now, tool()).expect("call");
    net.settle();
    assert_eq!(net.mcp_requests("tools/call").len(), 1);
    net.now += Duration::from_secs(50);
    net.state.borrow_mut().valid.retain(|v| v != "Bearer at-1");
    let before = net.seen.len();
    net.run_until(|n| n.completion(call).is_some());
    let out = net.completion(call).unwrap().expect("the resumed answer");
    assert_eq!(text(&out), "resumed");
    assert_mcp_tokens(&net, before, &["GET Bearer at-2"]);
    assert_eq!(net.mcp_requests("tools/call").len(), 1, "sent once");
}

/// The `DELETE` that ends a session went with a token known to be expired: the server
/// refused it and kept the session. The token is refreshed first now (within the
/// close's own time), and the `DELETE` goes once, with the new token.
/// A legacy session whose first token has expired (the server refuses it), closed after
/// `before_close` ran on it: the tokens of the MCP requests sent from then on.
fn mcp_tokens_at_close_with_an_expired_token(before_close: impl FnOnce(&mut Net)) -> Vec<String> {
    let mut net = legacy_net(3600);
    net.now += Duration::from_secs(3700);
    net.state.borrow_mut().valid.retain(|v| v != "Bearer at-1");
    let before = net.seen.len();
    before_close(&mut net);
    net.client.close(net.now);
    net.run_until(|n| n.client.is_released());
    eprintln!("{:?}", requests_since(&net, before));
    mcp_tokens_since(&net, before)
}

#[test]
fn the_delete_at_close_refreshes_an_expired_token_first() {
    assert_eq!(
        mcp_tokens_at_close_with_an_expired_token(|_| {}),
        ["DELETE Bearer at-2"]
    );
}

/// Closing while a refresh that a call started is still in flight: the `DELETE` waits for
/// that refresh (within the close's own time) instead of going at once with the expired
/// token, which the server refused, keeping the session.
#[test]
fn the_delete_at_close_waits_for_a_refresh_in_flight() {
    // The call waits for the refresh it starts; the connection closes before it ends.
    let tokens = mcp_tokens_at_close_with_an_expired_token(|net| {
        net.client.call(net.now, tool()).expect("call");
    });
    assert_eq!(tokens, ["DELETE Bearer at-2"]);
}

/// A refresh that a resumption waits for and that fails fails the call it owed, once,
/// with the flow's error (as a call's own refresh failing does), rather than leaving
/// it waiting or resuming with the expired token.
#[test]
fn a_failed_refresh_before_a_resumption_fails_its_call_with_the_flows_error() {
    let mut net = legacy_net(60);
    net.state.borrow_mut().drop_call_streams = true;
    let call = net.client.call(net.now, tool()).expect("call");
    net.settle();
    net.now += Duration::from_secs(50);
    {
        let mut s = net.state.borrow_mut();
        s.valid.retain(|v| v != "Bearer at-1");
        s.routes.insert(
            format!("{AS}/token"),
            Reply::json(500, &json!({"error": "server_error"})),
        );
    }
    let before = net.seen.len();
    net.run_until(|n| n.completion(call).is_some());
    let outcome = net.completion(call).unwrap();
    assert!(
        matches!(
            outcome,
            Err(CallError::Authorization(AuthError::TokenRefused(_)))
        ),
        "{outcome:?}"
    );
    assert_eq!(
        mcp_tokens_since(&net, before),
        Vec::<String>::new(),
        "nothing sent with the expired token"
    );
    let completions = net
        .events
        .iter()
        .filter(|e| matches!(e, Event::CallCompleted { call: c, .. } if *c == call))
        .count();
    assert_eq!(completions, 1);
}

/// A `GET` resuming a call's stream refused with `401` for a token the client did not
/// know had ended (revoked, or a lifetime never given) failed the call at once: a `GET`
/// started no flow. It now waits for the flow its refusal starts, as a `POST` does, and
/// resumes once with the new token; refused again after that, it fails as before.
#[test]
fn a_resumption_refused_with_401_refreshes_and_resumes() {
    let mut net = legacy_net(3600);
    net.state.borrow_mut().drop_call_streams = true;
    let call = net.client.call(net.now, tool()).expect("call");
    net.settle();
    net.state.borrow_mut().valid.retain(|v| v != "Bearer at-1");
    let before = net.seen.len();
    net.run_until(|n| n.completion(call).is_some());
    let out = net.completion(call).unwrap().expect("the resumed answer");
    assert_eq!(text(&out), "resumed");
    assert_mcp_tokens(&net, before, &["GET Bearer at-1", "GET Bearer at-2"]);
    assert_eq!(net.mcp_requests("tools/call").len(), 1, "sent once");
    assert_eq!(net.approval_urls().len(), 1, "refreshed, nobody asked");

    // A server that refuses every token: one flow, then the call fails.
    let mut net = legacy_net(3600);
    net.state.borrow_mut().drop_call_streams = true;
    let call = net.client.call(net.now, tool()).expect("call");
    net.settle();
    net.state.borrow_mut().reject_all = true;
    net.run_until(|n| n.completion(call).is_some());
    assert!(net.completion(call).unwrap().is_err());
    assert_eq!(net.token_requests().len(), 2, "one refresh, no loop");
}

/// The session's own `GET` stream refused with `401` (a token revoked) was opened
/// again with the same token until the client stopped listening. It now waits for the
/// flow its refusal starts and reopens with the new token.
#[test]
fn a_get_stream_refused_with_401_refreshes_and_reopens() {
    let mut net = legacy_net(3600);
    net.state.borrow_mut().valid.retain(|v| v != "Bearer at-1");
    let before = net.seen.len();
    net.end_get_streams();
    net.run_until(|n| {
        n.seen[before..]
            .iter()
            .filter(|s| s.is_mcp() && s.method == "GET")
            .count()
            >= 2
    });
    net.settle();
    assert_mcp_tokens(&net, before, &["GET Bearer at-1", "GET Bearer at-2"]);
}

/// The refresh the closing `DELETE` starts is refused (`invalid_grant`): the flow would
/// go on to ask the person to approve, for a connection being closed. Nobody is asked;
/// the `DELETE` goes with what is held (nothing: the refusal dropped both tokens), and
/// the client is released.
#[test]
fn closing_never_asks_a_person_to_approve() {
    let mut net = legacy_net(3600);
    net.now += Duration::from_secs(3700);
    net.state.borrow_mut().refuse_refresh = true;
    let before = net.seen.len();
    net.client.close(net.now);
    net.run_until(|n| n.client.is_released());
    assert_eq!(net.approval_urls().len(), 1, "asked again at close");
    assert_mcp_tokens(&net, before, &["DELETE -"]);
}

/// Several calls waiting for one refresh before sending that fails: each fails once,
/// with the same error, and none goes out.
#[test]
fn a_failed_refresh_fails_each_waiting_call_once_with_the_same_error() {
    let mut net = Net::new(auth_config());
    net.connect_with_approval();
    assert!(net.call(CallRequest::list_tools()).is_ok());
    net.state.borrow_mut().routes.insert(
        format!("{AS}/token"),
        Reply::json(500, &json!({"error": "server_error"})),
    );
    net.now += Duration::from_secs(3700);
    let calls: Vec<CallId> = (0..3)
        .map(|_| net.client.call(net.now, tool()).expect("call"))
        .collect();
    net.run_until(|n| calls.iter().all(|c| n.completion(*c).is_some()));
    net.settle();
    let errors: Vec<String> = calls
        .iter()
        .map(|c| format!("{:?}", net.completion(*c).unwrap().expect_err("failed")))
        .collect();
    assert!(errors.iter().all(|e| *e == errors[0]), "{errors:?}");
    for c in &calls {
        let n = net
            .events
            .iter()
            .filter(|e| matches!(e, Event::CallCompleted { call, .. } if call == c))
            .count();
        assert_eq!(n, 1);
    }
    assert_eq!(net.token_requests().len(), 2, "one refresh for the three");
    assert_eq!(net.mcp_requests("tools/call").len(), 0);
}

/// A `403 insufficient_scope` answering a `GET` that resumes a call's stream failed the
/// call ("resuming the event stream failed"), where the same answer to a `POST` starts
/// a step-up. It now starts the step-up too (the person is asked for the scopes held
/// and the one challenged), and the stream resumes once, with the new token.
#[test]
fn a_resumption_refused_for_scope_steps_up_and_resumes() {
    let mut net = legacy_net(3600);
    {
        let mut s = net.state.borrow_mut();
        s.drop_call_streams = true;
        s.refuse_gets.push_back((
            403,
            r#"Bearer error="insufficient_scope", scope="mcp:read mcp:stream""#.to_owned(),
        ));
    }
    let call = net.client.call(net.now, tool()).expect("call");
    net.settle();
    let before = net.seen.len();
    net.run_until(|n| n.approval_urls().len() == 2 || n.completion(call).is_some());
    assert!(net.completion(call).is_none(), "{:?}", net.completion(call));
    let url = net.approval_urls().pop().unwrap();
    let params = parse_pairs(url.split_once('?').unwrap().1).unwrap();
    let scope = params
        .iter()
        .find(|(k, _)| k == "scope")
        .map(|(_, v)| v.as_str());
    assert_eq!(scope, Some("mcp:read mcp:write mcp:stream"));
    net.approve().expect("callback");
    net.run_until(|n| n.completion(call).is_some());
    let out = net.completion(call).unwrap().expect("the resumed answer");
    assert_eq!(text(&out), "resumed");
    assert_mcp_tokens(&net, before, &["GET Bearer at-1", "GET Bearer at-2"]);
    assert_eq!(net.mcp_requests("tools/call").len(), 1, "sent once");
    net.assert_tokens_only_to_the_mcp_server();
}

/// The session's own `GET` stream refused with `403 insufficient_scope` was opened again
/// with the same token, to the same refusal, until the client stopped listening. It
/// now starts a step-up and reopens once, with the new token; refused again after
/// that, the stream is given up (no second step-up).
#[test]
fn a_get_stream_refused_for_scope_steps_up_and_reopens() {
    let mut net = legacy_net(3600);
    let challenge = r#"Bearer error="insufficient_scope", scope="mcp:stream""#.to_owned();
    net.state
        .borrow_mut()
        .refuse_gets
        .push_back((403, challenge.clone()));
    let before = net.seen.len();
    net.end_get_streams();
    net.run_until(|n| n.approval_urls().len() == 2);
    net.approve().expect("callback");
    net.settle();
    assert_mcp_tokens(&net, before, &["GET Bearer at-1", "GET Bearer at-2"]);

    // Refused again for a scope the new token holds: no step-up can help; the stream
    // is given up rather than reopened to the same refusal, and nobody is asked again.
    net.state
        .borrow_mut()
        .refuse_gets
        .push_back((403, challenge));
    let before = net.seen.len();
    net.end_get_streams();
    net.settle();
    for _ in 0..10 {
        net.now += Duration::from_secs(60);
        net.client.handle_timeout(net.now);
        net.settle();
    }
    let gets = mcp_tokens_since(&net, before);
    assert_eq!(gets, ["GET Bearer at-2"], "{gets:?}");
    assert_eq!(net.approval_urls().len(), 2);
}

/// A session on the 2024-11-05 HTTP+SSE transport: its stream's `GET` opens when the
/// `initialize` `POST` draws `405`. When the token expired meanwhile (the answer came
/// late), the `GET` went with the expired token; it now waits for a refresh and goes
/// once with the new token.
#[test]
fn the_http_sse_stream_refreshes_an_expired_token_first() {
    let mut net = pre_2025_net(auth_config(), |s| {
        s.legacy = true;
        s.sse2024 = true;
        // Known expired 15 s on.
        s.expires_in = Some(json!(20));
    });
    net.hold_method = Some("initialize");
    net.run_until(|n| !n.approval_urls().is_empty());
    net.approve().expect("callback");
    net.run_until(|n| !n.held_back.is_empty());
    assert_eq!(
        net.mcp_requests("initialize")[0].header("authorization"),
        Some("Bearer at-1")
    );
    net.now += Duration::from_secs(16);
    let before = net.seen.len();
    net.hold_method = None;
    net.release();
    let gets: Vec<String> = mcp_tokens_since(&net, before);
    assert_eq!(
        gets,
        ["GET Bearer at-2"],
        "{:?}",
        requests_since(&net, before)
    );
    assert_eq!(
        requests_since(&net, before)[0],
        format!("POST {AS}/token"),
        "refreshed first"
    );
    net.assert_tokens_only_to_the_mcp_server();
}

/// A client for a [`State::sse_only`] server: the 2024-11-05 transport, only its stream
/// protected.
fn sse_only_net() -> Net {
    pre_2025_net(auth_config(), |s| s.sse_only = true)
}

/// A client with `auth` that accepts versions before 2025-06-18, of a server whose state
/// `edit` sets.
fn pre_2025_net(auth: AuthConfig, edit: impl FnOnce(&mut State)) -> Net {
    let config = ClientConfig::new("auth-http", "1.0").accept_pre_2025_06_versions();
    let net = Net::with_config(auth, config);
    edit(&mut net.state.borrow_mut());
    net
}

/// [`sse_only_net`] with DPoP-bound tokens, the stream's `GET` refused for each of
/// `nonces` in turn, and what else `edit` sets.
fn sse_only_dpop_net(nonces: &[&str], edit: impl FnOnce(&mut State)) -> Net {
    pre_2025_net(dpop_config(), |s| {
        s.sse_only = true;
        s.dpop = true;
        for nonce in nonces {
            s.nonce_demands.push(("GET".into(), (*nonce).into()));
        }
        edit(s);
    })
}

/// A 2024-11-05 HTTP+SSE server that protects only its stream (the `POST` to its URL
/// draws `405` without a token check, the `GET` a `401` naming its resource metadata)
/// could never be reached: the `401` to the stream's `GET` failed the connection at
/// once, with no authorization. It now runs the flow (the person takes 45 s to approve,
/// longer than the handshake's own window) and opens the stream once with the token,
/// and the session works.
#[test]
fn the_http_sse_stream_refused_with_401_authorizes_and_reopens() {
    let mut net = sse_only_net();
    net.run_until(|n| !n.approval_urls().is_empty() || n.closed().is_some());
    assert_eq!(net.closed(), None);
    net.now += Duration::from_secs(45);
    net.client.handle_timeout(net.now);
    net.settle();
    net.approve().expect("callback");
    net.run_until(|n| n.connected() || n.closed().is_some());
    assert!(net.connected(), "{:#?}", net.events);
    let out = net.call(tool()).expect("call");
    assert_eq!(text(&out), "run 1");
    let sent = mcp_tokens_since(&net, 0);
    assert_eq!(
        sent[..4],
        ["POST -", "POST -", "GET -", "GET Bearer at-1"],
        "{:?}",
        requests_since(&net, 0)
    );
    assert!(
        sent[4..].iter().all(|s| s == "POST Bearer at-1"),
        "{sent:?}"
    );
    assert_eq!(net.approval_urls().len(), 1);
    net.assert_tokens_only_to_the_mcp_server();
}

/// The stream's `GET` refused again with the token the flow obtained: the connection
/// fails with the status named, after one flow (no loop of approvals).
#[test]
fn the_http_sse_stream_refused_again_after_authorizing_fails_the_connection() {
    let mut net = sse_only_net();
    let challenge = net.state.borrow().challenge.clone();
    net.state
        .borrow_mut()
        .refuse_gets
        .push_back((401, challenge));
    net.run_until(|n| !n.approval_urls().is_empty() || n.closed().is_some());
    net.approve().expect("callback");
    net.run_until(|n| n.closed().is_some());
    let reason = net.closed().unwrap();
    assert!(
        matches!(
            &reason,
            CloseReason::HttpSse(HttpSseError::StreamRefused {
                status: Some(401),
                ..
            })
        ),
        "{reason:?}"
    );
    let said = reason.to_string();
    assert!(
        said.contains("HTTP 401") && said.contains("refused again after authorizing"),
        "{said}"
    );
    assert_mcp_tokens(&net, 0, &["POST -", "POST -", "GET -", "GET Bearer at-1"]);
    assert_eq!(net.approval_urls().len(), 1, "one flow");
    assert_eq!(net.token_requests().len(), 1);
}

/// A `403 insufficient_scope` answering the stream's `GET` steps up, as it does for the
/// session's `GET` of Streamable HTTP, and the stream opens with the new token.
#[test]
fn the_http_sse_stream_refused_for_scope_steps_up_and_reopens() {
    let mut net = sse_only_net();
    let challenge = r#"Bearer error="insufficient_scope", scope="mcp:stream""#.to_owned();
    net.state
        .borrow_mut()
        .refuse_gets
        .push_back((403, challenge));
    net.run_until(|n| !n.approval_urls().is_empty() || n.closed().is_some());
    net.approve().expect("callback");
    net.run_until(|n| n.approval_urls().len() == 2 || n.closed().is_some());
    assert_eq!(net.closed(), None);
    let url = net.approval_urls().pop().unwrap();
    assert!(url.contains("mcp%3Astream"), "{url}");
    net.approve().expect("callback");
    net.run_until(|n| n.connected() || n.closed().is_some());
    assert!(net.connected(), "{:#?}", net.events);
    assert_eq!(
        mcp_tokens_since(&net, 0)[..5],
        [
            "POST -",
            "POST -",
            "GET -",
            "GET Bearer at-1",
            "GET Bearer at-2"
        ],
        "{:?}",
        requests_since(&net, 0)
    );
}

/// A `403 insufficient_scope` to the stream's `GET` for a scope the token already has
/// (no step-up can help): the connection fails at once with that reason; the refused
/// token is not sent again (it went three times, and the close said "refused again after
/// authorizing" although nothing was authorized).
#[test]
fn the_http_sse_stream_refused_for_a_granted_scope_fails_without_resending() {
    let mut net = sse_only_net();
    let challenge = r#"Bearer error="insufficient_scope", scope="mcp:read""#.to_owned();
    for _ in 0..6 {
        net.state
            .borrow_mut()
            .refuse_gets
            .push_back((403, challenge.clone()));
    }
    net.run_until(|n| !n.approval_urls().is_empty() || n.closed().is_some());
    net.approve().expect("callback");
    net.run_until(|n| n.connected() || n.closed().is_some());
    assert!(!net.connected());
    assert_mcp_tokens(&net, 0, &["POST -", "POST -", "GET -", "GET Bearer at-1"]);
    assert_eq!(net.approval_urls().len(), 1);
    let reason = net.closed().map(|r| r.to_string()).unwrap_or_default();
    assert!(
        reason.contains("authorization failed") && !reason.contains("refused again"),
        "{reason}"
    );
}

/// On the 2024-11-05 transport a message POSTed to the endpoint and refused with `401`
/// (a token revoked) refreshes and is sent again, as on Streamable HTTP; one sent with a
/// token known to be expired waits for the refresh first.
#[test]
fn http_sse_posts_refresh_on_401_and_when_known_expired() {
    let mut net = sse_only_net();
    net.connect_with_approval();
    net.state.borrow_mut().valid.retain(|v| v != "Bearer at-1");
    let before = net.seen.len();
    let out = net.call(tool()).expect("call");
    assert_eq!(text(&out), "run 1");
    assert_mcp_tokens(&net, before, &["POST Bearer at-1", "POST Bearer at-2"]);
    net.now += Duration::from_secs(3700);
    let before = net.seen.len();
    let out = net.call(tool()).expect("call");
    assert_eq!(text(&out), "run 2");
    assert_mcp_tokens(&net, before, &["POST Bearer at-3"]);
    assert_eq!(net.state.borrow().tool_runs, 2);
    net.assert_tokens_only_to_the_mcp_server();
}

// ----- DPoP nonces of the MCP server (RFC 9449 §9) -----------------------------------

// A DPoP key that signs with zeros: the servers here read proofs, they do not check
// signatures.
use mcp_proto::fuzzing::auth_flow::ZeroSigner;

/// Base64url without padding, decoded (`None` for another alphabet).
fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// The claims of the DPoP proof `s` carries.
fn proof_claims(s: &Seen) -> Value {
    let proof = s.header("dpop").expect("a DPoP proof");
    let payload = proof.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&base64url_decode(payload).expect("base64url")).expect("JSON")
}

/// The nonce in the DPoP proof of `s`.
fn proof_nonce(s: &Seen) -> Option<String> {
    proof_claims(s)["nonce"].as_str().map(str::to_owned)
}

/// Each MCP request from `seen[from..]` that `pick` keeps, as `METHOD authorization
/// nonce` (`-` for none).
fn mcp_proofs_since(net: &Net, from: usize, pick: impl Fn(&Seen) -> bool) -> Vec<String> {
    net.seen[from..]
        .iter()
        .filter(|s| s.is_mcp() && pick(s))
        .map(|s| {
            let nonce = proof_nonce(s).unwrap_or_else(|| "-".into());
            let auth = s.header("authorization").unwrap_or("-");
            format!("{} {auth} {nonce}", s.method)
        })
        .collect()
}

fn dpop_config() -> AuthConfig {
    let mut c = auth_config();
    c.dpop = Some(std::sync::Arc::new(ZeroSigner));
    c
}

/// A server whose tokens are DPoP-bound (2025-11-25 when `legacy`), `demands` its
/// nonce demands, the client connected with one approval.
fn dpop_net(legacy: bool, demands: &[(&str, &str)]) -> Net {
    let mut net = Net::new(dpop_config());
    {
        let mut s = net.state.borrow_mut();
        s.dpop = true;
        s.legacy = legacy;
        s.nonce_demands = demands
            .iter()
            .map(|(k, n)| ((*k).to_owned(), (*n).to_owned()))
            .collect();
    }
    net.connect_with_approval();
    net.settle();
    net
}

fn is_get(s: &Seen) -> bool {
    s.method == "GET" && s.header("last-event-id").is_none()
}

fn is_resume(s: &Seen) -> bool {
    s.method == "GET" && s.header("last-event-id").is_some()
}

/// A call's `POST` refused for a DPoP nonce goes again once, with the same token and a
/// proof carrying the nonce; no authorization starts and the tool runs once.
#[test]
fn a_post_refused_for_a_dpop_nonce_is_sent_again_once_with_it() {
    let mut net = dpop_net(false, &[("POST tools/call", "n-post")]);
    let before = net.seen.len();
    let out = net.call(tool()).expect("call");
    assert_eq!(text(&out), "run 1");
    assert_eq!(
        mcp_proofs_since(&net, before, |s| s.rpc_method() == "tools/call"),
        ["POST DPoP at-1 -", "POST DPoP at-1 n-post"]
    );
    let proof = proof_claims(net.mcp_requests("tools/call")[1]);
    assert_eq!(proof["htm"], "POST");
    assert_eq!(proof["htu"], MCP);
    assert_eq!(net.token_requests().len(), 1);
    assert_eq!(net.approval_urls().len(), 1);
}

/// The session's `GET` stream refused for a DPoP nonce opens again once with it, not
/// after a new authorization (a refresh, which the refusal does not ask for).
#[test]
fn a_get_stream_refused_for_a_dpop_nonce_is_sent_again_once_with_it() {
    let net = dpop_net(true, &[("GET", "n-get")]);
    assert_eq!(
        mcp_proofs_since(&net, 0, is_get),
        ["GET DPoP at-1 -", "GET DPoP at-1 n-get"],
        "{:?}",
        requests_since(&net, 0)
    );
    let proof = proof_claims(net.seen.iter().rfind(|s| is_get(s)).unwrap());
    assert_eq!(proof["htm"], "GET");
    assert_eq!(net.token_requests().len(), 1);
    assert_eq!(net.approval_urls().len(), 1);
}

/// A `GET` resuming a dropped call stream after `Last-Event-ID`, refused for a DPoP
/// nonce: resumed again once with it, and the call gets its answer.
#[test]
fn a_resumption_refused_for_a_dpop_nonce_is_sent_again_once_with_it() {
    let mut net = dpop_net(true, &[("GET resume", "n-resume")]);
    net.state.borrow_mut().drop_call_streams = true;
    let before = net.seen.len();
    let out = net.call(tool()).expect("the resumed answer");
    assert_eq!(text(&out), "resumed");
    assert_eq!(
        mcp_proofs_since(&net, before, is_resume),
        ["GET DPoP at-1 -", "GET DPoP at-1 n-resume"],
        "{:?}",
        requests_since(&net, before)
    );
    assert_eq!(net.token_requests().len(), 1);
}

/// The `DELETE` that ends the session, refused for a DPoP nonce, goes again once with it
/// (it was dropped: the session stayed at the server).
#[test]
fn the_delete_refused_for_a_dpop_nonce_is_sent_again_once_with_it() {
    let mut net = dpop_net(true, &[("DELETE", "n-delete")]);
    let before = net.seen.len();
    net.client.close(net.now);
    net.run_until(|n| n.client.is_released());
    assert_eq!(
        mcp_proofs_since(&net, before, |s| s.method == "DELETE"),
        ["DELETE DPoP at-1 -", "DELETE DPoP at-1 n-delete"],
        "{:?}",
        requests_since(&net, before)
    );
    let proof = proof_claims(net.seen.iter().rfind(|s| s.method == "DELETE").unwrap());
    assert_eq!(proof["htm"], "DELETE");
    assert_eq!(net.token_requests().len(), 1);
}

/// The 2024-11-05 transport's stream `GET` refused for a DPoP nonce opens again once
/// with it, and the session works.
#[test]
fn the_http_sse_stream_refused_for_a_dpop_nonce_is_sent_again_once_with_it() {
    let mut net = sse_only_dpop_net(&["n-sse"], |_| {});
    net.connect_with_approval();
    let out = net.call(tool()).expect("call");
    assert_eq!(text(&out), "run 1");
    assert_eq!(
        mcp_proofs_since(&net, 0, |s| s.method == "GET" && s.header("dpop").is_some()),
        ["GET DPoP at-1 -", "GET DPoP at-1 n-sse"],
        "{:?}",
        requests_since(&net, 0)
    );
    assert_eq!(net.token_requests().len(), 1);
}

/// A request sent again with the server's nonce and refused for a nonce once more
/// fails, naming the cause, and is not sent a third time: a call's `POST`.
#[test]
fn a_post_refused_for_a_dpop_nonce_twice_fails_without_a_third_try() {
    let demands = [("POST tools/call", "n1"), ("POST tools/call", "n2")];
    let mut net = dpop_net(false, &demands);
    let before = net.seen.len();
    let err = net.call(tool()).expect_err("refused twice");
    assert!(
        matches!(
            err,
            CallError::Authorization(AuthError::DpopNonceRefused { .. })
        ),
        "{err:?}"
    );
    assert_eq!(
        mcp_proofs_since(&net, before, |s| s.rpc_method() == "tools/call"),
        ["POST DPoP at-1 -", "POST DPoP at-1 n1"]
    );
    assert_eq!(net.state.borrow().tool_runs, 0);
    assert_eq!(net.token_requests().len(), 1);
    assert_eq!(net.approval_urls().len(), 1);
}

/// A call's `POST` refused for a DPoP nonce without a `DPoP-Nonce` to use fails at
/// once, saying so: it is not sent again (the same proof would be refused the same way),
/// and no authorization starts (the token was not refused).
#[test]
fn a_post_refused_for_a_dpop_nonce_without_giving_one_fails_at_once() {
    let mut net = dpop_net(false, &[("POST tools/call", "")]);
    let before = net.seen.len();
    let err = net.call(tool()).expect_err("refused");
    assert!(
        matches!(
            &err,
            CallError::Authorization(AuthError::DpopNonceRefused { method, resent: false })
                if method == "POST"
        ),
        "{err:?}"
    );
    assert_eq!(
        mcp_proofs_since(&net, before, |s| s.rpc_method() == "tools/call"),
        ["POST DPoP at-1 -"]
    );
    assert_eq!(net.state.borrow().tool_runs, 0);
    assert_eq!(net.token_requests().len(), 1);
    assert_eq!(net.approval_urls().len(), 1);
}

/// [`a_post_refused_for_a_dpop_nonce_twice_fails_without_a_third_try`] for a
/// resumption: the call it owed fails with the cause.
#[test]
fn a_resumption_refused_for_a_dpop_nonce_twice_fails_without_a_third_try() {
    let demands = [("GET resume", "n1"), ("GET resume", "n2")];
    let mut net = dpop_net(true, &demands);
    net.state.borrow_mut().drop_call_streams = true;
    let before = net.seen.len();
    let err = net.call(tool()).expect_err("refused twice");
    assert!(
        matches!(
            err,
            CallError::Authorization(AuthError::DpopNonceRefused { .. })
        ),
        "{err:?}"
    );
    assert_eq!(
        mcp_proofs_since(&net, before, is_resume),
        ["GET DPoP at-1 -", "GET DPoP at-1 n1"]
    );
    assert_eq!(net.token_requests().len(), 1);
}

/// A nonce the server gives on a success (`DPoP-Nonce` on a `200`) is in the next
/// proof to it, before any refusal asks for it.
#[test]
fn a_nonce_given_on_a_success_is_in_the_next_proof() {
    let mut net = dpop_net(false, &[]);
    net.state.borrow_mut().success_nonce = Some("n-200".into());
    let before = net.seen.len();
    net.call(tool()).expect("call");
    net.call(tool()).expect("call");
    assert_eq!(
        mcp_proofs_since(&net, before, |s| s.rpc_method() == "tools/call"),
        ["POST DPoP at-1 -", "POST DPoP at-1 n-200"]
    );
}

/// The peer errors reported so far that name a DPoP nonce refused again.
fn nonce_refusals(net: &Net) -> usize {
    net.events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::PeerError(mcp_proto::client::PeerError::Authorization(
                    AuthError::DpopNonceRefused { resent: true, .. }
                ))
            )
        })
        .count()
}

/// [`a_post_refused_for_a_dpop_nonce_twice_fails_without_a_third_try`] for the
/// session's `GET` stream: it is reported, and not listened to any more.
#[test]
fn a_get_stream_refused_for_a_dpop_nonce_twice_is_not_tried_a_third_time() {
    let mut net = dpop_net(true, &[("GET", "n1"), ("GET", "n2")]);
    net.now += Duration::from_secs(60);
    net.client.handle_timeout(net.now);
    net.settle();
    assert_eq!(
        mcp_proofs_since(&net, 0, is_get),
        ["GET DPoP at-1 -", "GET DPoP at-1 n1"]
    );
    assert_eq!(nonce_refusals(&net), 1, "{:#?}", net.events);
    assert_eq!(net.token_requests().len(), 1);
}

/// [`a_post_refused_for_a_dpop_nonce_twice_fails_without_a_third_try`] for the `DELETE`
/// that ends the session.
#[test]
fn the_delete_refused_for_a_dpop_nonce_twice_is_not_tried_a_third_time() {
    let mut net = dpop_net(true, &[("DELETE", "n1"), ("DELETE", "n2")]);
    let before = net.seen.len();
    net.client.close(net.now);
    net.run_until(|n| n.client.is_released());
    assert_eq!(
        mcp_proofs_since(&net, before, |s| s.method == "DELETE"),
        ["DELETE DPoP at-1 -", "DELETE DPoP at-1 n1"]
    );
    assert_eq!(nonce_refusals(&net), 1, "{:#?}", net.events);
}

// ----- `notifications/initialized` refused for want of authorization ----------------

/// A 2025-11-25 server behind OAuth (`config`, the server scripted by `edit`), the
/// client connected with one approval; the answer to its `notifications/initialized`
/// is kept back while a call is made (it waits behind the notification), then let go.
/// The call.
fn call_behind_initialized(config: AuthConfig, edit: impl FnOnce(&mut State)) -> (Net, CallId) {
    let mut net = Net::new(config);
    {
        let mut s = net.state.borrow_mut();
        s.legacy = true;
        edit(&mut s);
    }
    net.hold_method = Some("notifications/initialized");
    net.connect_with_approval();
    net.settle();
    assert_eq!(net.mcp_requests("notifications/initialized").len(), 1);
    let call = net.client.call(net.now, tool()).expect("call");
    net.settle();
    assert!(
        net.mcp_requests("tools/call").is_empty(),
        "the call waits for notifications/initialized"
    );
    net.hold_method = None;
    net.release();
    (net, call)
}

/// The `POST`s of `notifications/initialized` and `tools/call`, in the order sent, as
/// `method authorization nonce` (`-` for none).
fn initialized_and_calls(net: &Net) -> Vec<String> {
    net.seen
        .iter()
        .filter(|s| s.is_mcp() && s.method == "POST")
        .filter(|s| {
            matches!(
                s.rpc_method().as_str(),
                "notifications/initialized" | "tools/call"
            )
        })
        .map(|s| {
            let nonce = s.header("dpop").and_then(|_| proof_nonce(s));
            format!(
                "{} {} {}",
                s.rpc_method(),
                s.header("authorization").unwrap_or("-"),
                nonce.as_deref().unwrap_or("-")
            )
        })
        .collect()
}

/// The refusals of `notifications/initialized` reported: (status, detail).
fn initialized_refusals(net: &Net) -> Vec<(Option<u16>, String)> {
    net.events
        .iter()
        .filter_map(|e| match e {
            Event::PeerError(mcp_proto::client::PeerError::InitializedRefused {
                status,
                detail,
            }) => Some((*status, detail.clone())),
            _ => None,
        })
        .collect()
}

fn invalid_token() -> (u16, String) {
    (
        401,
        format!(r#"Bearer error="invalid_token", resource_metadata="{PRM}""#),
    )
}

/// `notifications/initialized` refused with `401` (its token revoked) was parked for the
/// refresh, and sent again behind the call that waited for it, where it waited for
/// itself: the call ran out of time. It goes again once, with the new token, and the
/// call goes once it is accepted.
#[test]
fn initialized_refused_with_401_goes_again_after_the_refresh_and_the_call_after_it() {
    let (mut net, call) = call_behind_initialized(auth_config(), |s| {
        s.refuse_initialized.push_back(invalid_token())
    });
    net.run_until(|n| n.completion(call).is_some());
    let out = net.completion(call).unwrap().expect("the call");
    assert_eq!(text(&out), "run 1");
    assert_eq!(
        initialized_and_calls(&net),
        [
            "notifications/initialized Bearer at-1 -",
            "notifications/initialized Bearer at-2 -",
            "tools/call Bearer at-2 -",
        ]
    );
    assert_eq!(net.token_requests().len(), 2, "one refresh");
    assert_eq!(net.approval_urls().len(), 1);
    assert_eq!(initialized_refusals(&net), []);
}

/// [`initialized_refused_with_401_goes_again_after_the_refresh_and_the_call_after_it`]
/// for a `403` asking for more scope: after the step-up.
#[test]
fn initialized_refused_for_scope_goes_again_after_the_step_up_and_the_call_after_it() {
    let (mut net, call) = call_behind_initialized(auth_config(), |s| {
        s.refuse_initialized.push_back((
            403,
            r#"Bearer error="insufficient_scope", scope="mcp:read admin""#.to_owned(),
        ));
    });
    net.run_until(|n| n.approval_urls().len() == 2 || n.completion(call).is_some());
    assert_eq!(net.completion(call).map(|r| r.err()), None);
    net.approve().expect("callback");
    net.run_until(|n| n.completion(call).is_some());
    let out = net.completion(call).unwrap().expect("the call");
    assert_eq!(text(&out), "run 1");
    assert_eq!(
        initialized_and_calls(&net),
        [
            "notifications/initialized Bearer at-1 -",
            "notifications/initialized Bearer at-2 -",
            "tools/call Bearer at-2 -",
        ]
    );
    assert_eq!(initialized_refusals(&net), []);
}

/// `notifications/initialized` with a DPoP-bound token, refused for the server's nonce:
/// sent again once with it, and the call that waited goes after it.
#[test]
fn initialized_refused_for_a_dpop_nonce_goes_again_with_it_and_the_call_after_it() {
    let (mut net, call) = call_behind_initialized(dpop_config(), |s| {
        s.dpop = true;
        s.nonce_demands
            .push(("POST notifications/initialized".into(), "n-init".into()));
    });
    net.run_until(|n| n.completion(call).is_some());
    let out = net.completion(call).unwrap().expect("the call");
    assert_eq!(text(&out), "run 1");
    assert_eq!(
        initialized_and_calls(&net),
        [
            "notifications/initialized DPoP at-1 -",
            "notifications/initialized DPoP at-1 n-init",
            "tools/call DPoP at-1 n-init",
        ]
    );
    assert_eq!(net.token_requests().len(), 1, "no flow");
    assert_eq!(initialized_refusals(&net), []);
}

/// `notifications/initialized` refused again with the token its refresh obtained: the
/// refusal is reported and the call that waited goes (and, refused in turn, gets a
/// token of its own); neither waits out its deadline.
#[test]
fn initialized_refused_twice_with_401_is_reported_and_the_call_goes() {
    let (mut net, call) = call_behind_initialized(auth_config(), |s| {
        s.refuse_initialized.push_back(invalid_token());
        s.refuse_initialized.push_back(invalid_token());
    });
    net.run_until(|n| n.completion(call).is_some());
    let out = net.completion(call).unwrap().expect("the call");
    assert_eq!(text(&out), "run 1");
    assert_eq!(
        initialized_and_calls(&net),
        [
            "notifications/initialized Bearer at-1 -",
            "notifications/initialized Bearer at-2 -",
            "tools/call Bearer at-2 -",
            "tools/call Bearer at-3 -",
        ]
    );
    let refusals = initialized_refusals(&net);
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0].0, Some(401));
}

/// `notifications/initialized` refused for a DPoP nonce, and again with it: reported
/// as [`AuthError::DpopNonceRefused`], not sent a third time, and the call goes.
#[test]
fn initialized_refused_for_a_dpop_nonce_twice_is_reported_and_the_call_goes() {
    let (mut net, call) = call_behind_initialized(dpop_config(), |s| {
        s.dpop = true;
        for nonce in ["n1", "n2"] {
            s.nonce_demands
                .push(("POST notifications/initialized".into(), nonce.into()));
        }
    });
    net.run_until(|n| n.completion(call).is_some());
    let out = net.completion(call).unwrap().expect("the call");
    assert_eq!(text(&out), "run 1");
    assert_eq!(
        initialized_and_calls(&net),
        [
            "notifications/initialized DPoP at-1 -",
            "notifications/initialized DPoP at-1 n1",
            "tools/call DPoP at-1 n2",
        ]
    );
    let refusals = initialized_refusals(&net);
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    let expected = AuthError::DpopNonceRefused {
        method: "POST".into(),
        resent: true,
    };
    assert_eq!(refusals[0], (Some(401), expected.to_string()));
}

/// The flow a refused `notifications/initialized` started fails (the refresh refused,
/// the person declines): the refusal is reported as one of `notifications/initialized`,
/// and the call that waited behind it fails with the flow's error (no token is left to
/// send it with) rather than at its deadline.
#[test]
fn initialized_whose_flow_fails_is_reported_and_the_call_behind_it_fails_with_the_flow() {
    let (mut net, call) = call_behind_initialized(auth_config(), |s| {
        s.refuse_initialized.push_back(invalid_token());
        s.refuse_refresh = true;
    });
    net.run_until(|n| n.approval_urls().len() == 2 || n.completion(call).is_some());
    assert_eq!(net.completion(call).map(|r| r.err()), None);
    net.client.abandon_authorization(net.now, "declined");
    net.run_until(|n| n.completion(call).is_some());
    let outcome = net.completion(call).unwrap();
    assert!(
        matches!(
            outcome,
            Err(CallError::Authorization(AuthError::Denied { .. }))
        ),
        "{outcome:?}"
    );
    assert_eq!(
        initialized_and_calls(&net),
        ["notifications/initialized Bearer at-1 -"]
    );
    let refusals = initialized_refusals(&net);
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0].0, Some(401));
}

/// The step-up a `notifications/initialized` refused for scope started is declined: the
/// token held stays usable, so the call that waited goes with it, and the session's
/// `GET` stream opens, as after any refusal of `notifications/initialized`.
#[test]
fn initialized_whose_step_up_is_declined_lets_the_call_and_the_stream_go() {
    let (mut net, call) = call_behind_initialized(auth_config(), |s| {
        s.refuse_initialized.push_back((
            403,
            r#"Bearer error="insufficient_scope", scope="mcp:read admin""#.to_owned(),
        ));
    });
    net.run_until(|n| n.approval_urls().len() == 2 || n.completion(call).is_some());
    net.client.abandon_authorization(net.now, "declined");
    net.run_until(|n| n.completion(call).is_some());
    let out = net.completion(call).unwrap().expect("the call");
    assert_eq!(text(&out), "run 1");
    assert_eq!(
        initialized_and_calls(&net),
        [
            "notifications/initialized Bearer at-1 -",
            "tools/call Bearer at-1 -",
        ]
    );
    let refusals = initialized_refusals(&net);
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0].0, Some(403), "the status that refused it");
    net.settle();
    let gets = net.seen.iter().filter(|s| s.is_mcp() && is_get(s)).count();
    assert_eq!(gets, 1, "{:?}", requests_since(&net, 0));
}

// ----- DPoP nonces: the 2024-11-05 stream, notifications, waiting for a flow ------------

/// [`a_post_refused_for_a_dpop_nonce_twice_fails_without_a_third_try`] for the
/// 2024-11-05 transport's stream `GET`: the connection closes, naming the cause, and the
/// stream is not asked for a third time.
#[test]
fn the_http_sse_stream_refused_for_a_dpop_nonce_twice_closes_without_a_third_try() {
    let mut net = sse_only_dpop_net(&["n1", "n2"], |_| {});
    net.run_until(|n| !n.approval_urls().is_empty() || n.closed().is_some());
    net.approve().expect("callback");
    net.run_until(|n| n.closed().is_some());
    let reason = net.closed().unwrap();
    let expected = CloseReason::Authorization(AuthError::DpopNonceRefused {
        method: "GET".into(),
        resent: true,
    });
    assert_eq!(reason, expected);
    net.settle();
    assert_eq!(
        mcp_proofs_since(&net, 0, |s| s.method == "GET" && s.header("dpop").is_some()),
        ["GET DPoP at-1 -", "GET DPoP at-1 n1"],
        "{:?}",
        requests_since(&net, 0)
    );
    assert_eq!(net.token_requests().len(), 1);
    assert_eq!(net.approval_urls().len(), 1);
}

/// [`a_post_refused_for_a_dpop_nonce_twice_fails_without_a_third_try`] for a
/// notification (`notifications/roots/list_changed` of a 2025-11-25 session): reported
/// once, not sent a third time, and the connection goes on.
#[test]
fn a_notification_refused_for_a_dpop_nonce_twice_is_reported_once_and_the_session_goes_on() {
    let config = ClientConfig::new("auth-http", "1.0").roots(vec![Root::new("file:///a")]);
    let mut net = Net::with_config(dpop_config(), config);
    {
        let mut s = net.state.borrow_mut();
        s.dpop = true;
        s.legacy = true;
        for nonce in ["n1", "n2"] {
            s.nonce_demands
                .push(("POST notifications/roots/list_changed".into(), nonce.into()));
        }
    }
    net.connect_with_approval();
    net.settle();
    let before = net.seen.len();
    net.client
        .set_roots(net.now, vec![Root::new("file:///b")])
        .expect("roots");
    net.settle();
    let is_list_changed = |s: &Seen| s.rpc_method() == "notifications/roots/list_changed";
    assert_eq!(
        mcp_proofs_since(&net, before, is_list_changed),
        ["POST DPoP at-1 -", "POST DPoP at-1 n1"],
        "{:?}",
        requests_since(&net, before)
    );
    let refusals: Vec<&PeerError> = net
        .events
        .iter()
        .filter_map(|e| match e {
            Event::PeerError(p @ PeerError::Authorization(_)) => Some(p),
            _ => None,
        })
        .collect();
    let expected = PeerError::Authorization(AuthError::DpopNonceRefused {
        method: "POST".into(),
        resent: true,
    });
    assert_eq!(refusals, [&expected]);
    assert_eq!(net.closed(), None);
    let out = net.call(tool()).expect("a later call");
    assert_eq!(text(&out), "run 1");
    assert_eq!(mcp_proofs_since(&net, before, is_list_changed).len(), 2);
    assert_eq!(net.token_requests().len(), 1, "no flow");
}

/// A request sent again for a DPoP nonce while a step-up that another request started
/// runs waits for it, then goes with the new token; refused for a nonce once more, it is
/// sent again with that nonce, as a request its own flow sent again would be: one nonce
/// resend per token, not per request. It failed at once: the mark of its first resend
/// outlived the token it was made with.
#[test]
fn a_request_that_waited_for_a_flow_may_be_sent_again_for_a_nonce_with_its_token() {
    let demands = [("POST tools/list", "n1"), ("POST tools/list", "n2")];
    let mut net = dpop_net(true, &demands);
    net.state.borrow_mut().refuse_calls.push_back((
        403,
        r#"Bearer error="insufficient_scope", scope="mcp:read admin""#.to_owned(),
    ));
    let before = net.seen.len();
    // The listing reaches the server first; its nonce refusal is kept back until the
    // call's refusal has started a step-up, which waits for the person.
    net.hold_method = Some("tools/list");
    let list = net
        .client
        .call(net.now, CallRequest::list_tools())
        .expect("list");
    let call = net.client.call(net.now, tool()).expect("call");
    net.run_until(|n| n.approval_urls().len() == 2);
    net.hold_method = None;
    net.release();
    assert_eq!(
        mcp_proofs_since(&net, before, |s| s.rpc_method() == "tools/list"),
        ["POST DPoP at-1 -"],
        "it waits for the step-up"
    );
    net.approve().expect("callback");
    net.run_until(|n| n.completion(call).is_some() && n.completion(list).is_some());
    assert_eq!(
        mcp_proofs_since(&net, before, |s| s.rpc_method() == "tools/list"),
        ["POST DPoP at-1 -", "POST DPoP at-2 n1", "POST DPoP at-2 n2"],
        "{:?}",
        requests_since(&net, before)
    );
    assert!(net.completion(list).unwrap().is_ok(), "{:#?}", net.events);
    assert_eq!(text(&net.completion(call).unwrap().expect("call")), "run 1");
}

/// `notifications/initialized` that never met a refusal, only waited for the refresh of
/// a token known to be expired, and the refresh left no token: reported, without a
/// status (no response refused it). It was reported as refused with `401`.
#[test]
fn initialized_that_only_waited_for_a_failed_refresh_is_reported_without_a_status() {
    let mut net = Net::new(auth_config());
    net.state.borrow_mut().legacy = true;
    net.run_until(|n| !n.approval_urls().is_empty() || n.closed().is_some());
    net.hold_method = Some("initialize");
    net.approve().expect("callback");
    net.settle();
    assert!(!net.held_back.is_empty(), "initialize answered");
    // The token runs out while `initialize` is answered, and cannot be refreshed.
    net.now += Duration::from_secs(3700);
    net.state.borrow_mut().routes.insert(
        format!("{AS}/token"),
        Reply::json(500, &json!({"error": "server_error"})),
    );
    net.hold_method = None;
    net.release();
    net.settle();
    assert_eq!(net.mcp_requests("notifications/initialized").len(), 0);
    let refusals = initialized_refusals(&net);
    assert_eq!(refusals.len(), 1, "{:#?}", net.events);
    assert_eq!(refusals[0].0, None, "{refusals:?}");
}

// ----- DPoP nonces: once per token, across flows ----------------------------------------

/// The session's `GET` stream, refused for a DPoP nonce while a step-up that a call
/// started waits for the person: its resend waits for the step-up and goes with the new
/// token, and refused for a nonce with it, is sent again once more with that nonce. A
/// third refusal, with the same token, ends the stream. The
/// [`a_request_that_waited_for_a_flow_may_be_sent_again_for_a_nonce_with_its_token`]
/// of the session's `GET`.
#[test]
fn a_get_stream_that_waited_for_a_flow_may_be_sent_again_for_a_nonce_with_its_token() {
    let mut net = dpop_net(true, &[]);
    {
        let mut s = net.state.borrow_mut();
        for nonce in ["n1", "n2", "n3"] {
            s.nonce_demands.push(("GET".into(), nonce.into()));
        }
        s.refuse_calls.push_back((
            403,
            r#"Bearer error="insufficient_scope", scope="mcp:read admin""#.to_owned(),
        ));
    }
    let before = net.seen.len();
    // The stream reopens and is refused for a nonce; the refusal is kept back until the
    // call's refusal has started a step-up, which waits for the person.
    net.hold_gets = true;
    net.end_get_streams();
    net.run_until(|n| !n.held_back.is_empty());
    let call = net.client.call(net.now, tool()).expect("call");
    net.run_until(|n| n.approval_urls().len() == 2);
    net.hold_gets = false;
    net.release();
    assert_eq!(
        mcp_proofs_since(&net, before, is_get),
        ["GET DPoP at-1 -"],
        "it waits for the step-up"
    );
    net.approve().expect("callback");
    net.run_until(|n| n.completion(call).is_some());
    net.settle();
    assert_eq!(
        mcp_proofs_since(&net, before, is_get),
        ["GET DPoP at-1 -", "GET DPoP at-2 n1", "GET DPoP at-2 n2"],
        "{:?}",
        requests_since(&net, before)
    );
    assert_eq!(nonce_refusals(&net), 1, "{:#?}", net.events);
    assert_eq!(text(&net.completion(call).unwrap().expect("call")), "run 1");
}

/// The 2024-11-05 transport's stream `GET`, refused for a DPoP nonce when its token has
/// run out meanwhile: its resend waits for the refresh and goes with the new token, and
/// refused for a nonce with it, is sent again once more with that nonce. A third
/// refusal, with the same token, closes the connection.
#[test]
fn the_http_sse_stream_that_waited_for_a_refresh_may_be_sent_again_for_a_nonce_with_its_token() {
    // Known to be expired 30 s after it is issued.
    let mut net = sse_only_dpop_net(&["n1", "n2", "n3"], |s| s.expires_in = Some(json!(40)));
    net.run_until(|n| !n.approval_urls().is_empty() || n.closed().is_some());
    net.hold_gets = true;
    net.approve().expect("callback");
    assert_eq!(net.held_back.len(), 1, "the stream refused for a nonce");
    net.now += Duration::from_secs(35);
    net.hold_gets = false;
    net.release();
    net.run_until(|n| n.closed().is_some());
    let expected = CloseReason::Authorization(AuthError::DpopNonceRefused {
        method: "GET".into(),
        resent: true,
    });
    assert_eq!(net.closed(), Some(expected));
    net.settle();
    assert_eq!(
        mcp_proofs_since(&net, 0, |s| s.method == "GET" && s.header("dpop").is_some()),
        ["GET DPoP at-1 -", "GET DPoP at-2 n1", "GET DPoP at-2 n2"],
        "{:?}",
        requests_since(&net, 0)
    );
    assert_eq!(net.token_requests().len(), 2, "one refresh");
    assert_eq!(net.approval_urls().len(), 1);
}

/// A call on a DPoP server (edited by `edit`) refused for a nonce (`n1`), sent again with
/// it and refused with `401` for its token (`at-1`, which the server stops taking); that
/// answer is kept back. The call and where its requests start in `seen`.
fn call_resent_for_a_nonce_then_refused(edit: impl FnOnce(&mut State)) -> (Net, CallId, usize) {
    let mut net = dpop_net(false, &[("POST tools/call", "n1")]);
    {
        let mut s = net.state.borrow_mut();
        s.refuse_calls.push_back(invalid_token());
        edit(&mut s);
    }
    let before = net.seen.len();
    net.hold_call = Some(net.mcp_requests("tools/call").len() + 2);
    let call = net.client.call(net.now, tool()).expect("call");
    net.settle();
    assert_eq!(net.held_back.len(), 1, "{:?}", requests_since(&net, before));
    (net, call, before)
}

/// Lets the kept-back refusal of [`call_resent_for_a_nonce_then_refused`] go, the server
/// now asking the call's next `POST` for a nonce (`n2`); runs until the call completes
/// and returns the call's `POST`s as [`mcp_proofs_since`] gives them.
fn refusal_released_with_a_nonce_demand(net: &mut Net, call: CallId, from: usize) -> Vec<String> {
    net.state
        .borrow_mut()
        .nonce_demands
        .push(("POST tools/call".into(), "n2".into()));
    net.hold_call = None;
    net.release();
    net.run_until(|n| n.completion(call).is_some());
    mcp_proofs_since(net, from, |s| s.rpc_method() == "tools/call")
}

/// Releases the call's refusal with one more nonce demand
/// ([`refusal_released_with_a_nonce_demand`]): its `POST`s are `want`, the tool ran
/// once, and `tokens` tokens were asked for in all (`why`).
fn assert_sent_again_once(
    net: &mut Net,
    (call, before): (CallId, usize),
    want: &[&str],
    (tokens, why): (usize, &str),
) {
    let posts = refusal_released_with_a_nonce_demand(net, call, before);
    assert_eq!(posts, want, "{:?}", requests_since(net, before));
    assert_eq!(text(&net.completion(call).unwrap().expect("call")), "run 1");
    assert_eq!(net.state.borrow().tool_runs, 1);
    assert_eq!(net.token_requests().len(), tokens, "{why}");
}

/// The `POST`s of a call sent again for a nonce with `at-1`, then with `at-2` for the
/// server's next nonce.
const RESENT_WITH_AT_2: [&str; 4] = [
    "POST DPoP at-1 -",
    "POST DPoP at-1 n1",
    "POST DPoP at-2 n1",
    "POST DPoP at-2 n2",
];

/// A call sent again for a nonce with `at-1`, then refused with `401`: its own refresh
/// gives `at-2`, and refused for a nonce with that token, it is sent again with the
/// nonce; the tool runs once.
#[test]
fn a_request_sent_again_after_its_refresh_may_be_sent_again_for_a_nonce_with_the_new_token() {
    let (mut net, call, before) = call_resent_for_a_nonce_then_refused(|_| {});
    let refreshes = (2, "one refresh");
    assert_sent_again_once(&mut net, (call, before), &RESENT_WITH_AT_2, refreshes);
}

/// A call sent again for a nonce with `at-1` and refused with `401` after another
/// request's refresh replaced that token: it goes again at once with `at-2` (no flow
/// of its own), and refused for a nonce with that token, is sent again with the nonce;
/// the tool runs once.
#[test]
fn a_request_sent_again_for_a_replaced_token_may_be_sent_again_for_a_nonce_with_it() {
    let (mut net, call, before) = call_resent_for_a_nonce_then_refused(|_| {});
    // A listing, refused with the revoked token, refreshes it.
    let list = net
        .client
        .call(net.now, CallRequest::list_tools())
        .expect("list");
    net.run_until(|n| n.completion(list).is_some());
    assert!(net.completion(list).unwrap().is_ok(), "{:#?}", net.events);
    assert_eq!(net.token_requests().len(), 2, "the listing's refresh");
    let refreshes = (2, "no flow of its own");
    assert_sent_again_once(&mut net, (call, before), &RESENT_WITH_AT_2, refreshes);
}

/// [`a_request_sent_again_after_its_refresh_may_be_sent_again_for_a_nonce_with_the_new_token`]
/// with a token endpoint that gives the very same access token again: the refresh is a
/// new start all the same, and the call is sent again for the server's next nonce.
#[test]
fn a_refresh_that_gives_the_same_token_again_is_a_new_start_for_nonces() {
    let (mut net, call, before) = call_resent_for_a_nonce_then_refused(|s| s.repeat_token = true);
    let want = [
        "POST DPoP at-1 -",
        "POST DPoP at-1 n1",
        "POST DPoP at-1 n1",
        "POST DPoP at-1 n2",
    ];
    assert_sent_again_once(&mut net, (call, before), &want, (2, "one refresh"));
}
