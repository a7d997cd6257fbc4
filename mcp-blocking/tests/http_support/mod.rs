//! A tiny Streamable HTTP server for the HTTP tests: HTTP/1.1 with keep-alive on
//! 127.0.0.1 (port 0), one thread per connection, serving the bundled example server
//! machine (`mcp_proto::server::example`) as a JSON-answering Streamable HTTP endpoint.
//! It counts accepted connections and records every request, and can be told to close
//! each connection right after its response (without saying so), to fail every request
//! with a fixed status, or to speak only one era.

#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use mcp_blocking::mcp_proto::server::{Server, Tool, ToolCall, ToolOutcome, example};
use mcp_blocking::mcp_proto::version::{Era, VersionPolicy};
use serde_json::{Value, json};

/// Which eras the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eras {
    Both,
    Legacy,
    Modern,
}

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct Behavior {
    pub eras: Eras,
    /// Close the connection after every response, without `Connection: close`.
    pub close_after_response: bool,
    /// Answer every request with this status and JSON body.
    pub fail_with: Option<(u16, Value)>,
    /// Mint `Mcp-Session-Id` on `initialize`.
    pub session: bool,
    /// Answer with SSE (`text/event-stream`, chunked) instead of JSON.
    pub sse: bool,
    /// Also offer `sum`, whose `x-mcp-header` sits on a number property (invalid).
    pub bad_header_tool: bool,
    /// Answer GET (legacy) with an event stream that stays open, instead of 405.
    pub get_stream: bool,
    /// End the connection after every response without a goodbye (TLS: no
    /// `close_notify`, the TCP connection just closes).
    pub abrupt_close: bool,
    /// Send only the first half of every `tools/call` answer, then end the connection
    /// without a goodbye.
    pub truncate_tool_calls: bool,
}

impl Default for Behavior {
    fn default() -> Self {
        Behavior {
            eras: Eras::Both,
            close_after_response: false,
            fail_with: None,
            session: true,
            sse: false,
            bad_header_tool: false,
            get_stream: false,
            abrupt_close: false,
            truncate_tool_calls: false,
        }
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// Which accepted connection carried it (0-based).
    pub connection: usize,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn rpc_method(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
}

/// A running server; it stops accepting when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    pub accepted: Arc<AtomicUsize>,
    pub requests: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl TestServer {
    /// A plain HTTP server.
    pub fn start(behavior: Behavior) -> TestServer {
        Self::start_with(behavior, |s| Ok(Box::new(s) as Box<dyn Conn>))
    }

    /// A server whose connections go through `wrap` (TLS, say).
    pub fn start_with(
        behavior: Behavior,
        wrap: impl Fn(TcpStream) -> io::Result<Box<dyn Conn>> + Send + Sync + 'static,
    ) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let state = Arc::new(Mutex::new(State {
            server: make_server(&behavior),
            initialized: false,
            sessions: 0,
        }));
        let wrap = Arc::new(wrap);
        {
            let (accepted, requests, stop) = (accepted.clone(), requests.clone(), stop.clone());
            thread::spawn(move || {
                for socket in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(socket) = socket else { continue };
                    let n = accepted.fetch_add(1, Ordering::SeqCst);
                    let (behavior, requests, state, wrap) = (
                        behavior.clone(),
                        requests.clone(),
                        state.clone(),
                        wrap.clone(),
                    );
                    thread::spawn(move || {
                        let _ = socket.set_read_timeout(Some(Duration::from_secs(30)));
                        if let Ok(conn) = wrap(socket) {
                            serve_connection(conn, n, &behavior, &requests, &state);
                        }
                    });
                }
            });
        }
        TestServer {
            addr,
            accepted,
            requests,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

/// A server-side connection.
pub trait Conn: Read + Write + Send {
    /// Ends the connection from our side (TLS: close_notify first).
    fn finish(&mut self) {}
    /// Ends the connection without a goodbye (TLS: no close_notify).
    fn abort(&mut self) {
        self.finish();
    }
}

impl Conn for TcpStream {
    fn finish(&mut self) {
        let _ = self.shutdown(std::net::Shutdown::Both);
    }
}

struct State {
    server: Server,
    initialized: bool,
    sessions: u32,
}

fn make_server(behavior: &Behavior) -> Server {
    let only = match behavior.eras {
        Eras::Both => None,
        Eras::Legacy => Some(Era::Legacy),
        Eras::Modern => Some(Era::Modern),
    };
    example::server_with(|config| {
        if let Some(only) = only {
            let accepted = VersionPolicy::default()
                .accepted
                .into_iter()
                .filter(|v| v.era() == only)
                .collect();
            config.versions = VersionPolicy { accepted };
        }
        if behavior.bad_header_tool {
            let schema = json!({"type": "object", "properties": {
                "n": {"type": "number", "x-mcp-header": "N"}}});
            config.tools.push(Tool::new(
                "sum",
                "Bad header annotation",
                schema,
                |_: &ToolCall<'_>| ToolOutcome::text("never"),
            ));
        }
    })
}

fn serve_connection(
    conn: Box<dyn Conn>,
    n: usize,
    behavior: &Behavior,
    requests: &Mutex<Vec<Seen>>,
    state: &Mutex<State>,
) {
    let mut reader = BufReader::new(conn);
    loop {
        let Some(seen) = read_request(&mut reader, n) else {
            return;
        };
        requests.lock().unwrap().push(seen.clone());
        let Some(response) = respond(&seen, behavior, state) else {
            // No answer (the `hang` tool): hold the exchange until the client gives up.
            let mut sink = [0u8; 1024];
            while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
            return;
        };
        let conn = reader.get_mut();
        if behavior.truncate_tool_calls && seen.rpc_method() == "tools/call" {
            let _ = conn
                .write_all(&response[..response.len() / 2])
                .and_then(|()| conn.flush());
            conn.abort();
            return;
        }
        if conn
            .write_all(&response)
            .and_then(|()| conn.flush())
            .is_err()
        {
            return;
        }
        if behavior.abrupt_close {
            thread::sleep(Duration::from_millis(20));
            conn.abort();
            return;
        }
        if seen.method == "GET" && behavior.get_stream {
            // The stream stays open until the client goes away.
            let mut sink = [0u8; 1024];
            while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
            return;
        }
        if behavior.close_after_response {
            // Give the client time to pool the connection, then close it quietly.
            thread::sleep(Duration::from_millis(20));
            conn.finish();
            return;
        }
    }
}

fn read_request(reader: &mut BufReader<Box<dyn Conn>>, connection: usize) -> Option<Seen> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let method = line.split(' ').next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        method,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        connection,
    })
}

fn http(status: u16, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} X\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn respond(req: &Seen, behavior: &Behavior, state: &Mutex<State>) -> Option<Vec<u8>> {
    let json_type = ("Content-Type", "application/json".to_owned());
    if let Some((status, body)) = &behavior.fail_with {
        return Some(http(*status, &[json_type], body.to_string().as_bytes()));
    }
    match req.method.as_str() {
        "POST" => {}
        "GET" if behavior.get_stream => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                        Transfer-Encoding: chunked\r\n\r\n";
            let prime = "id: g-0\ndata:\n\n";
            return Some(format!("{head}{:x}\r\n{prime}\r\n", prime.len()).into_bytes());
        }
        "DELETE" if behavior.session => return Some(http(200, &[], b"")),
        _ => return Some(http(405, &[("Allow", "POST".to_owned())], b"")),
    }
    let body = &req.body;
    let is_request = body.get("method").is_some() && body.get("id").is_some();
    let method = req.rpc_method().to_owned();
    let mut st = state.lock().unwrap();
    if method == "initialize" && behavior.eras == Eras::Modern {
        let error = json!({"jsonrpc": "2.0", "id": body["id"], "error": {
            "code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": null}}});
        return Some(http(400, &[json_type], error.to_string().as_bytes()));
    }
    if method == "initialize" {
        // Every initialize starts a new session on a fresh server.
        st.server = make_server(behavior);
        st.initialized = true;
        st.sessions += 1;
    }
    if behavior.eras == Eras::Legacy && is_request && !st.initialized && method != "initialize" {
        // As the TypeScript SDK answers a request without a session.
        let error = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32000, "message": "Bad Request: Server not initialized"}});
        return Some(http(400, &[json_type], error.to_string().as_bytes()));
    }
    st.server
        .handle_json(mcp_proto::Instant::ZERO, body.to_string().as_bytes());
    let mut replies = Vec::new();
    while let Some(m) = st.server.poll_message() {
        replies.push(serde_json::from_slice::<Value>(&m).unwrap_or(Value::Null));
    }
    let sessions = st.sessions;
    drop(st);
    if !is_request {
        return Some(http(202, &[], b""));
    }
    // No reply (the `hang` tool): no answer either.
    let reply = replies
        .into_iter()
        .find(|r| r.get("id") == body.get("id"))?;
    let status = match reply["error"]["code"].as_i64() {
        Some(-32020 | -32021 | -32022 | -32600) => 400,
        Some(-32601) => 404,
        _ => 200,
    };
    let mut headers = Vec::new();
    if behavior.session && method == "initialize" && status == 200 {
        headers.push(("Mcp-Session-Id", format!("session-{sessions}")));
    }
    if behavior.sse && status == 200 {
        headers.push(("Content-Type", "text/event-stream".to_owned()));
        headers.push(("Transfer-Encoding", "chunked".to_owned()));
        let event = format!("event: message\ndata: {reply}\n\n");
        let mut out = "HTTP/1.1 200 OK\r\n".to_owned();
        for (k, v) in &headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str(&format!("\r\n{:x}\r\n{event}\r\n0\r\n\r\n", event.len()));
        return Some(out.into_bytes());
    }
    headers.push(json_type);
    Some(http(status, &headers, reply.to_string().as_bytes()))
}
