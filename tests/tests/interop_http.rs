//! Interop over Streamable HTTP with servers nobody here wrote, each started by the test
//! on a free 127.0.0.1 port and killed by its process id when the test ends (see
//! `mcp_tests::interop::http_fixture`):
//!
//! * the TypeScript SDK v2 (`srv.mjs http`): Auto reaches 2026-07-28 (MRTR), Legacy is
//!   served by its stateless per-request leg (no session, so no mid-call elicitation);
//!   with `--strict` it is 2026-only. It also validates `Mcp-Param-*` headers against the
//!   body (SEP-2243), which makes it the peer for `x-mcp-header` mirroring and exclusion.
//! * the Python SDK 2.3 (`srv.py http`): Legacy with a session (SSE or JSON responses) or
//!   stateless, and Auto reaching 2026-07-28 with a sealed `requestState`.
//! * `@modelcontextprotocol/server-everything` (`streamableHttp`, legacy only): Auto falls
//!   back to 2025-11-25. It binds every interface, so its test re-runs itself inside a
//!   network namespace of its own (`unshare -n`), where only loopback exists.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcp_blocking::{Client, Direction, Error, HttpOptions, Options, WireLog};
use mcp_proto::client::{ClientConfig, InputAnswer, InputHandler, InputRequest};
use mcp_proto::jsonrpc::codes;
use mcp_proto::model::ClientCapabilities;
use mcp_proto::{Era, EraMode, Limits, ProtocolVersion};
use mcp_tests::interop::{
    FillForms, Fixture, HttpServer, fixture_installed, http_fixture, in_private_netns,
    run_in_private_netns,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Harness: a client with a wire log and a form filler that remembers what it was asked.

/// Every byte the client saw on the wire, for failure messages.
#[derive(Clone, Default)]
struct Wire(Arc<Mutex<Vec<u8>>>);

impl Wire {
    fn log(&self) -> WireLog {
        let buf = Arc::clone(&self.0);
        Box::new(move |dir, bytes| {
            let mut b = buf.lock().unwrap_or_else(PoisonError::into_inner);
            b.extend_from_slice(match dir {
                Direction::Sent => b"C>S ",
                _ => b"S>C ",
            });
            b.extend_from_slice(bytes);
            if !bytes.ends_with(b"\n") {
                b.push(b'\n');
            }
        })
    }

    /// The status of every HTTP response, in the order logged.
    fn statuses(&self) -> Vec<u16> {
        let b = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&b)
            .lines()
            .filter_map(|l| l.strip_prefix("S>C HTTP/1.1 "))
            .filter_map(|l| l.get(..3)?.parse().ok())
            .collect()
    }

    /// Whether `needle` was on the wire (anywhere, not just in the dump).
    fn contains(&self, needle: &str) -> bool {
        let b = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&b).contains(needle)
    }

    /// The first 6 KiB.
    fn head(&self) -> String {
        let b = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&b[..b.len().min(6 * 1024)]).into_owned()
    }

    /// The last 12 KiB.
    fn dump(&self) -> String {
        let b = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&b[b.len().saturating_sub(12 * 1024)..]).into_owned()
    }
}

/// [`FillForms`] shared with the test, so it can see which forms reached the handler.
#[derive(Clone, Default)]
struct Forms(Arc<Mutex<FillForms>>);

impl InputHandler for Forms {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .answer(request)
    }
}

impl Forms {
    fn seen(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .seen
            .clone()
    }
}

/// A connected client and what it takes to explain a failure.
struct Conn<'a> {
    client: Client,
    server: &'a HttpServer,
    wire: Wire,
    forms: Forms,
    what: String,
}

fn config(mode: EraMode) -> ClientConfig {
    let mut limits = Limits::default();
    // Fail a wedged exchange well before any harness timeout.
    limits.request_timeout = Duration::from_secs(20);
    ClientConfig::new("interop-http-test", "1.0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation())
        .limits(limits)
}

/// Connects to `server` in `mode`; the error comes back with the wire and server output.
fn try_connect<'a>(
    server: &'a HttpServer,
    what: &str,
    mode: EraMode,
) -> Result<Conn<'a>, Box<(Error, String)>> {
    let wire = Wire::default();
    let forms = Forms::default();
    let mut options = Options::new();
    options.wire_log = Some(wire.log());
    options.input_handler = Box::new(forms.clone());
    let what = format!("{what} {mode:?}");
    match Client::connect_http_with(&server.url, config(mode), options, HttpOptions::new()) {
        Ok(client) => Ok(Conn {
            client,
            server,
            wire,
            forms,
            what,
        }),
        Err(e) => {
            let ctx = context(&what, server, &wire);
            Err(Box::new((e, ctx)))
        }
    }
}

fn connect<'a>(server: &'a HttpServer, what: &str, mode: EraMode) -> Conn<'a> {
    try_connect(server, what, mode).unwrap_or_else(|failed| {
        let (e, ctx) = *failed;
        panic!("connect failed: {e} [{}]\n{ctx}", e.kind())
    })
}

fn context(what: &str, server: &HttpServer, wire: &Wire) -> String {
    format!(
        "== {what}: server {} (pid {}) ==\n-- wire (client side) --\n{}\n-- server output --\n{}",
        server.url,
        server.pid(),
        wire.dump(),
        server.output()
    )
}

impl Conn<'_> {
    fn ctx(&self) -> String {
        context(&self.what, self.server, &self.wire)
    }

    fn expect_version(&self, era: Era, version: ProtocolVersion) {
        assert_eq!(
            (self.client.era(), self.client.protocol_version()),
            (era, version),
            "{}",
            self.ctx()
        );
    }

    fn tool_names(&mut self) -> Vec<String> {
        match self.client.list_tools() {
            Ok(tools) => tools.into_iter().map(|t| t.name).collect(),
            Err(e) => panic!("tools/list failed: {e}\n{}", self.ctx()),
        }
    }

    /// A successful (not `isError`) tool call's text.
    fn call_ok(&mut self, tool: &str, args: Value) -> String {
        match self.client.call_tool(tool, args.clone()) {
            Ok(r) if r.is_error != Some(true) => r.text(),
            Ok(r) => panic!(
                "{tool} {args}: tool error result: {}\n{}",
                r.text(),
                self.ctx()
            ),
            Err(e) => panic!(
                "{tool} {args}: call failed: {e} [{}]\n{}",
                e.kind(),
                self.ctx()
            ),
        }
    }

    /// list, add(2, 3) = "5", confirm answered by the form filler = `confirmed`.
    fn add_and_confirm(&mut self, confirmed: &str) {
        let names = self.tool_names();
        assert!(
            names.iter().any(|n| n == "add") && names.iter().any(|n| n == "confirm"),
            "tools: {names:?}\n{}",
            self.ctx()
        );
        assert_eq!(
            self.call_ok("add", json!({"a": 2, "b": 3})),
            "5",
            "{}",
            self.ctx()
        );
        let before = self.forms.seen().len();
        assert_eq!(
            self.call_ok("confirm", json!({})),
            confirmed,
            "{}",
            self.ctx()
        );
        assert_eq!(
            self.forms.seen()[before..],
            ["Proceed?".to_owned()],
            "the form must reach the input handler once\n{}",
            self.ctx()
        );
    }

    fn close(self) {
        self.client.close();
    }
}

// ---------------------------------------------------------------------------------------
// Raw HTTP, to send what our client never would.

/// One POST with `Connection: close`; the status and the JSON-RPC message of the answer
/// (a JSON body or the first SSE `data:` event).
fn raw_post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        req.push_str(&format!("{name}: {value}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    let mut stream = TcpStream::connect(addr).expect("connect for the raw request");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("read timeout");
    stream.write_all(req.as_bytes()).expect("write raw request");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read raw response");

    let mut hdrs = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut hdrs);
    let head = match resp.parse(&raw) {
        Ok(httparse::Status::Complete(n)) => n,
        other => panic!(
            "unparsable response ({other:?}): {}",
            String::from_utf8_lossy(&raw)
        ),
    };
    let status = resp.code.expect("status");
    let header = |name: &str| {
        resp.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
    };
    let mut payload = raw[head..].to_vec();
    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        payload = dechunk(&payload);
    }
    let text = String::from_utf8_lossy(&payload).into_owned();
    let json_text = if header("content-type").is_some_and(|v| v.starts_with("text/event-stream")) {
        text.lines()
            .find_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .unwrap_or_default()
            .to_owned()
    } else {
        text.clone()
    };
    let message = serde_json::from_str(&json_text)
        .unwrap_or_else(|e| panic!("answer is not JSON ({e}): {text:?}"));
    (status, message)
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = String::from_utf8_lossy(&body[..eol]);
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).expect("chunk size");
        if size == 0 {
            return out;
        }
        let start = eol + 2;
        let Some(chunk) = body.get(start..start + size) else {
            panic!(
                "truncated chunked body: {:?}",
                String::from_utf8_lossy(body)
            );
        };
        out.extend_from_slice(chunk);
        body = body.get(start + size + 2..).unwrap_or_default();
    }
}

/// The `_meta` every 2026-07-28 request carries.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

// ---------------------------------------------------------------------------------------
// TypeScript SDK v2 (`srv.mjs http PORT [--strict]`)

/// Auto reaches 2026-07-28 (MRTR for the form); Legacy is served by the SDK's stateless
/// per-request leg: `initialize` is answered without `Mcp-Session-Id`, and because that
/// leg has no channel for server-to-client requests, `confirm` comes back as an `isError`
/// tool result (not a JSON-RPC error) whose text says so; the form never reaches us.
#[test]
fn typescript_sdk_http_both_eras() {
    let Some(server) = http_fixture(Fixture::TypeScript, &[]) else {
        return;
    };

    let mut modern = connect(&server, "ts http", EraMode::Auto);
    modern.expect_version(Era::Modern, ProtocolVersion::V2026_07_28);
    assert_eq!(
        modern.wire.statuses().first(),
        Some(&200),
        "the probe is answered\n{}",
        modern.ctx()
    );
    assert_eq!(modern.client.http_session_id(), None, "{}", modern.ctx());
    modern.add_and_confirm("ok=true");
    modern.close();

    let mut legacy = connect(&server, "ts http", EraMode::Legacy);
    legacy.expect_version(Era::Legacy, ProtocolVersion::V2025_11_25);
    assert_eq!(
        legacy.client.http_session_id(),
        None,
        "the legacy leg is stateless: no session id\n{}",
        legacy.ctx()
    );
    let names = legacy.tool_names();
    assert!(
        names.iter().any(|n| n == "add") && names.iter().any(|n| n == "confirm"),
        "tools: {names:?}\n{}",
        legacy.ctx()
    );
    assert_eq!(
        legacy.call_ok("add", json!({"a": 2, "b": 3})),
        "5",
        "{}",
        legacy.ctx()
    );
    // The stateless leg cannot elicit: a tool error result, not a JSON-RPC error.
    let confirm = legacy
        .client
        .call_tool("confirm", json!({}))
        .unwrap_or_else(|e| panic!("confirm: {e} [{}]\n{}", e.kind(), legacy.ctx()));
    assert_eq!(
        confirm.is_error,
        Some(true),
        "confirm on the stateless legacy leg: {}\n{}",
        confirm.text(),
        legacy.ctx()
    );
    assert!(
        confirm
            .text()
            .contains("per-request legacy serving cannot receive server-to-client requests"),
        "unexpected explanation: {}\n{}",
        confirm.text(),
        legacy.ctx()
    );
    assert!(
        legacy.forms.seen().is_empty(),
        "no form may reach the handler: {:?}\n{}",
        legacy.forms.seen(),
        legacy.ctx()
    );
    legacy.close();
}

/// `--strict` (`legacy: 'reject'`): Auto reaches 2026-07-28; Legacy mode fails to connect
/// with the server's HTTP 400 / -32022 "Unsupported protocol version" (data lists the
/// supported revisions), kept as a typed error.
#[test]
fn typescript_sdk_http_strict_is_modern_only() {
    let Some(server) = http_fixture(Fixture::TypeScript, &["--strict"]) else {
        return;
    };
    let mut modern = connect(&server, "ts http --strict", EraMode::Auto);
    modern.expect_version(Era::Modern, ProtocolVersion::V2026_07_28);
    modern.add_and_confirm("ok=true");
    modern.close();

    let (e, ctx) = match try_connect(&server, "ts http --strict", EraMode::Legacy) {
        Ok(c) => panic!(
            "Legacy mode must not connect to a modern-only server\n{}",
            c.ctx()
        ),
        Err(failed) => *failed,
    };
    assert!(
        matches!(e, Error::Connect { .. }),
        "a connect error, got {e:?}\n{ctx}"
    );
    assert_eq!(e.kind(), "http", "{e}\n{ctx}");
    assert_eq!(e.http_status(), Some(400), "{e}\n{ctx}");
    assert_eq!(
        e.code(),
        Some(codes::UNSUPPORTED_PROTOCOL_VERSION),
        "{e}\n{ctx}"
    );
    let data = e.error_object().and_then(|o| o.data.clone());
    assert_eq!(
        data.as_ref().and_then(|d| d.get("supported")),
        Some(&json!(["2026-07-28"])),
        "{e}\n{ctx}"
    );
    assert!(
        e.to_string().contains("Unsupported protocol version"),
        "{e}"
    );
}

/// SEP-2243 against a server that checks it: the TS SDK v2 validates `Mcp-Param-*`
/// headers against the body (400 / -32020 on a missing or different value, Base64
/// sentinel decoded). Our client mirrors `regional`'s `region` (plain and
/// sentinel-encoded), excludes `bad_header` (`x-mcp-header` on a `number` property), and
/// keeps the other tools usable.
#[test]
fn typescript_sdk_validates_mirrored_mcp_param_headers() {
    let Some(server) = http_fixture(Fixture::TypeScript, &[]) else {
        return;
    };
    let mut c = connect(&server, "ts http (x-mcp-header)", EraMode::Auto);
    c.expect_version(Era::Modern, ProtocolVersion::V2026_07_28);
    let names = c.tool_names();
    for want in ["add", "confirm", "regional"] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}\n{}",
            c.ctx()
        );
    }
    assert!(
        !names.iter().any(|n| n == "bad_header"),
        "bad_header must be left out: {names:?}\n{}",
        c.ctx()
    );
    let excluded = c.client.excluded_tools().to_vec();
    assert_eq!(
        excluded.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        ["bad_header"],
        "{excluded:?}\n{}",
        c.ctx()
    );
    assert!(
        excluded[0].1.contains("number"),
        "the reason names the number property: {excluded:?}"
    );

    // The server rejects a missing or different Mcp-Param-Region, so success proves the
    // header went out right: plain, and as a Base64 sentinel (non-ASCII, outer spaces).
    assert_eq!(
        c.call_ok("regional", json!({"region": "eu"})),
        "region=eu",
        "{}",
        c.ctx()
    );
    assert!(
        c.wire.contains("Mcp-Param-Region: eu\n"),
        "header on the wire\n{}",
        c.ctx()
    );
    assert_eq!(
        c.call_ok("regional", json!({"region": " Zürich "})),
        "region= Zürich ",
        "{}",
        c.ctx()
    );
    assert!(
        c.wire
            .contains("Mcp-Param-Region: =?base64?IFrDvHJpY2gg?=\n"),
        "sentinel-encoded header on the wire\n{}",
        c.ctx()
    );
    assert_eq!(
        c.call_ok("add", json!({"a": 2, "b": 3})),
        "5",
        "{}",
        c.ctx()
    );
    // Calling the excluded tool anyway must not succeed. Today our client sends it without
    // any Mcp-Param header and the TS server (which still checks number-typed
    // declarations) answers 400 / -32020; a client that refused locally would pass too.
    match c.client.call_tool("bad_header", json!({"n": 1})) {
        Ok(r) => panic!(
            "calling the excluded bad_header succeeded: {}\n{}",
            r.text(),
            c.ctx()
        ),
        Err(e) if e.http_status().is_some() => {
            assert_eq!(e.http_status(), Some(400), "{e}\n{}", c.ctx());
            assert_eq!(e.code(), Some(codes::HEADER_MISMATCH), "{e}\n{}", c.ctx());
        }
        Err(_) => {}
    }
    c.close();

    // Raw requests prove the server validates: same body, right / wrong / missing header.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "regional", "arguments": {"region": "eu"}, "_meta": modern_meta()}});
    let standard = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "regional"),
    ];
    let with = |region: Option<&'static str>| {
        let mut h = standard.to_vec();
        if let Some(r) = region {
            h.push(("Mcp-Param-Region", r));
        }
        h
    };
    let (status, ok) = raw_post(server.addr, &with(Some("eu")), &call);
    assert_eq!(
        (status, ok.pointer("/result/content/0/text")),
        (200, Some(&json!("region=eu"))),
        "control request with the right header: {ok}\n{}",
        server.output()
    );
    for (header, label) in [(Some("us"), "wrong"), (None, "missing")] {
        let (status, answer) = raw_post(server.addr, &with(header), &call);
        assert_eq!(
            status,
            400,
            "{label} Mcp-Param-Region: {answer}\n{}",
            server.output()
        );
        assert_eq!(
            answer.pointer("/error/code"),
            Some(&json!(codes::HEADER_MISMATCH)),
            "{label} Mcp-Param-Region: {answer}"
        );
        assert_eq!(
            answer.pointer("/error/data/mismatch/header"),
            Some(&json!("Mcp-Param-Region")),
            "{label} Mcp-Param-Region: {answer}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Python SDK 2.3 (`srv.py http PORT [--json] [--stateless]`)

/// Waits (briefly) until the server's output contains `needle`.
fn output_shows(server: &HttpServer, needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        if server.output().contains(needle) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Auto reaches 2026-07-28: add, and confirm through MRTR with the sealed `requestState`
/// echoed back verbatim (the Python key is `__main__:ask_user`). Same in every mode: the
/// modern leg is per-request and answers JSON.
fn python_modern(server: &HttpServer, what: &str) {
    let mut modern = connect(server, what, EraMode::Auto);
    modern.expect_version(Era::Modern, ProtocolVersion::V2026_07_28);
    assert_eq!(modern.client.http_session_id(), None, "{}", modern.ctx());
    modern.add_and_confirm("ok=True");
    assert!(
        modern.wire.contains("\"requestState\":\"v1."),
        "the sealed requestState goes back with the answer\n{}",
        modern.ctx()
    );
    modern.close();
}

/// Default mode (SSE responses, sessions on the legacy leg): Legacy gets a session id
/// and answers the mid-call `elicitation/create` that arrives on the call's own SSE
/// stream; closing ends the session with DELETE. Then Auto reaches 2026-07-28.
#[test]
fn python_sdk_http_sse_sessions() {
    let Some(server) = http_fixture(Fixture::Python, &[]) else {
        return;
    };
    let mut legacy = connect(&server, "py http", EraMode::Legacy);
    legacy.expect_version(Era::Legacy, ProtocolVersion::V2025_11_25);
    let session = legacy
        .client
        .http_session_id()
        .unwrap_or_else(|| panic!("Python issues a session id\n{}", legacy.ctx()))
        .to_owned();
    legacy.add_and_confirm("ok=True");
    legacy.close();
    assert!(
        output_shows(&server, &format!("Terminating session: {session}")),
        "closing must DELETE the session\n{}",
        server.output()
    );

    python_modern(&server, "py http");
}

/// `--json`: the legacy leg keeps sessions but answers with `application/json`, and then
/// has no channel for a mid-call request (it does not use the open GET stream): confirm
/// fails with the server's -32600 "no back-channel" error. Auto still reaches 2026.
#[test]
fn python_sdk_http_json_responses() {
    let Some(server) = http_fixture(Fixture::Python, &["--json"]) else {
        return;
    };
    let mut legacy = connect(&server, "py http --json", EraMode::Legacy);
    legacy.expect_version(Era::Legacy, ProtocolVersion::V2025_11_25);
    assert!(
        legacy.client.http_session_id().is_some(),
        "--json keeps sessions\n{}",
        legacy.ctx()
    );
    assert!(
        legacy
            .wire
            .dump()
            .contains("content-type: application/json"),
        "JSON responses\n{}",
        legacy.ctx()
    );
    assert_no_back_channel(&mut legacy);
    legacy.close();

    python_modern(&server, "py http --json");
}

/// `--stateless`: no session id on the legacy leg either, and no mid-call elicitation.
#[test]
fn python_sdk_http_stateless() {
    let Some(server) = http_fixture(Fixture::Python, &["--stateless"]) else {
        return;
    };
    let mut legacy = connect(&server, "py http --stateless", EraMode::Legacy);
    legacy.expect_version(Era::Legacy, ProtocolVersion::V2025_11_25);
    assert_eq!(
        legacy.client.http_session_id(),
        None,
        "stateless: no session id\n{}",
        legacy.ctx()
    );
    assert_no_back_channel(&mut legacy);
    legacy.close();

    python_modern(&server, "py http --stateless");
}

/// list, add, and confirm failing with Python's -32600 "no back-channel" error before any
/// form reaches the handler.
fn assert_no_back_channel(legacy: &mut Conn<'_>) {
    let names = legacy.tool_names();
    assert!(
        names.iter().any(|n| n == "confirm"),
        "tools: {names:?}\n{}",
        legacy.ctx()
    );
    assert_eq!(
        legacy.call_ok("add", json!({"a": 2, "b": 3})),
        "5",
        "{}",
        legacy.ctx()
    );
    match legacy.client.call_tool("confirm", json!({})) {
        Ok(r) => panic!(
            "confirm cannot elicit here, yet it returned: {}\n{}",
            r.text(),
            legacy.ctx()
        ),
        Err(e) => {
            assert_eq!(e.kind(), "server-error", "{e}\n{}", legacy.ctx());
            assert_eq!(
                e.code(),
                Some(codes::INVALID_REQUEST),
                "{e}\n{}",
                legacy.ctx()
            );
            assert!(
                e.to_string().contains("no back-channel"),
                "{e}\n{}",
                legacy.ctx()
            );
        }
    }
    assert!(
        legacy.forms.seen().is_empty(),
        "{:?}\n{}",
        legacy.forms.seen(),
        legacy.ctx()
    );
}

// ---------------------------------------------------------------------------------------
// server-everything (`streamableHttp`), in a network namespace of its own

/// server-everything binds every interface, so this test re-runs itself (alone) inside a
/// fresh network namespace where only loopback exists; the copy starts the server there.
/// Auto: the `server/discover` probe draws an HTTP 4xx (no session), so the client falls
/// back to `initialize` and gets 2025-11-25 with a session; `echo` and the form of
/// `trigger-elicitation-request` (sent on the call's SSE stream) work; closing DELETEs the
/// session.
#[test]
fn server_everything_http_falls_back_to_legacy() {
    const NAME: &str = "server_everything_http_falls_back_to_legacy";
    if !in_private_netns() {
        if fixture_installed(Fixture::Everything) {
            run_in_private_netns(NAME);
        }
        return;
    }
    let Some(server) = http_fixture(Fixture::Everything, &[]) else {
        return;
    };
    let mut c = connect(&server, "everything", EraMode::Auto);
    c.expect_version(Era::Legacy, ProtocolVersion::V2025_11_25);
    let statuses = c.wire.statuses();
    assert!(
        statuses.first().is_some_and(|s| (400..500).contains(s)),
        "the probe must draw a 4xx, saw statuses {statuses:?}\n{}",
        c.wire.head()
    );
    let session = c
        .client
        .http_session_id()
        .unwrap_or_else(|| panic!("a session id\n{}", c.ctx()))
        .to_owned();
    let names = c.tool_names();
    for want in ["echo", "trigger-elicitation-request"] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}\n{}",
            c.ctx()
        );
    }
    assert_eq!(
        c.call_ok("echo", json!({"message": "hello"})),
        "Echo: hello",
        "{}",
        c.ctx()
    );
    let answered = c.call_ok("trigger-elicitation-request", json!({}));
    assert!(
        answered.contains("User provided the requested information"),
        "{answered}\n{}",
        c.ctx()
    );
    assert_eq!(
        c.forms.seen(),
        ["Please provide inputs for the following fields:".to_owned()],
        "{}",
        c.ctx()
    );
    c.close();
    assert!(
        output_shows(
            &server,
            &format!("Received session termination request for session {session}")
        ),
        "closing must DELETE the session\n{}",
        server.output()
    );
}
