//! `mcp-smol` over Streamable HTTP against a small scripted HTTP/1.1 server in this file:
//! `std::net` threads (one per connection, keep-alive) feeding the bundled example
//! server machine (`mcp_proto::server::example`) through `Server::handle_json` and
//! `poll_message`, plainly or over rustls with a throw-away self-signed certificate (the
//! TLS tests need the `tls` feature; without it, `https` URLs must be refused).
//!
//! Every scenario runs three times, under three ways of driving futures:
//!
//! * `smol`: `smol::block_on` running a `smol::Executor`; the driver and the concurrent
//!   calls are tasks spawned on it;
//! * `bare`: `futures_lite::future::block_on` of `future::zip(driver, scenario)`, no
//!   executor at all; "spawned" work is joined in the scenario's own future;
//! * `joined`: the same under `smol::block_on`, through `driver.join(scenario)`.
// The crate's `Error` is large on purpose: see its `lib.rs`.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpListener;
#[cfg(feature = "tls")]
use std::path::Path;
#[cfg(feature = "tls")]
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use futures_lite::future;
use mcp_proto::server::{Server, example};
#[cfg(feature = "tls")]
use mcp_smol::rustls;
use mcp_smol::{
    AsyncStream, CallError, CallRequest, Client, ClientCapabilities, ClientConfig, ConnectFuture,
    Connector, Direction, Driver, Era, EraCache, EraMode, Error, HttpOptions, Options, Origin,
    ProtocolVersion, TransportErrorKind, UrlError,
};
use serde_json::{Value, json};

// ----- the scripted server -------------------------------------------------------------

/// How the test server behaves.
#[derive(Clone, Copy, Default)]
struct Script {
    /// Serve only the legacy era, with a session id, and require the id afterwards.
    legacy: bool,
    /// Answer requests as `text/event-stream` with chunked encoding.
    sse: bool,
    /// Close a connection, without a word, when a second request arrives on it (a
    /// keep-alive connection the server dropped just as the client reused it).
    drop_reused: bool,
}

/// What the server saw.
#[derive(Default)]
struct Seen {
    accepted: AtomicUsize,
    /// `METHOD rpc-method` per request.
    requests: Mutex<Vec<String>>,
    /// Connections the client closed while a request on them was unanswered.
    abandoned: AtomicUsize,
}

/// The test server's TLS configuration (none without the `tls` feature).
#[cfg(feature = "tls")]
type ServerTls = Arc<rustls::ServerConfig>;
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
enum ServerTls {}

struct TestServer {
    port: u16,
    seen: Arc<Seen>,
    backend: Arc<Backend>,
}

impl TestServer {
    fn start(script: Script) -> TestServer {
        Self::start_with(script, None)
    }

    #[cfg(feature = "tls")]
    fn start_tls(script: Script, tls: ServerTls) -> TestServer {
        Self::start_with(script, Some(tls))
    }

    fn start_with(script: Script, tls: Option<ServerTls>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Seen::default());
        let machine = Arc::new(Backend {
            server: Mutex::new(if script.legacy {
                example::legacy_only()
            } else {
                example::server()
            }),
            waiters: Mutex::new(HashMap::new()),
            modern_only: AtomicBool::new(false),
        });
        let backend = machine.clone();
        let server_seen = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                server_seen.accepted.fetch_add(1, Ordering::SeqCst);
                let machine = machine.clone();
                let seen = server_seen.clone();
                let tls = tls.clone();
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
                    match tls {
                        None => serve_connection(stream, script, &machine, &seen),
                        #[cfg(not(feature = "tls"))]
                        Some(never) => match never {},
                        #[cfg(feature = "tls")]
                        Some(config) => {
                            let conn = rustls::ServerConnection::new(config).expect("tls");
                            let tls = rustls::StreamOwned::new(conn, stream);
                            serve_connection(tls, script, &machine, &seen);
                        }
                    }
                });
            }
        });
        TestServer {
            port,
            seen,
            backend,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn accepted(&self) -> usize {
        self.seen.accepted.load(Ordering::SeqCst)
    }

    fn requests(&self) -> Vec<String> {
        self.seen.requests.lock().unwrap().clone()
    }

    /// The server is upgraded: from now on it speaks 2026-07-28 only, whatever the script
    /// said, and refuses a legacy `initialize` with HTTP 400 and `-32022`.
    fn go_modern_only(&self) {
        *self.backend.server.lock().unwrap() = example::server_with(|c| {
            c.versions.accepted = vec![ProtocolVersion::V2026_07_28];
        });
        self.backend.modern_only.store(true, Ordering::SeqCst);
    }
}

struct Request {
    method: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

/// Reads one request; `None` at a clean end of the connection.
fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let method = line.split(' ').next().unwrap_or("").to_owned();
    let mut headers = HashMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let len = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    Ok(Some(Request {
        method,
        headers,
        body,
    }))
}

fn respond(
    out: &mut (impl Write + ?Sized),
    status: &str,
    extra: &[(&str, String)],
    content_type: Option<&str>,
    body: &[u8],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\n");
    if let Some(ct) = content_type {
        head.push_str(&format!("Content-Type: {ct}\r\n"));
    }
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}

/// The head of a chunked event stream, and a comment.
fn sse_head(out: &mut impl Write, extra: &[(&str, String)]) -> io::Result<()> {
    let mut head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n".to_owned();
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("Transfer-Encoding: chunked\r\n\r\n");
    out.write_all(head.as_bytes())?;
    sse_chunk(out, b": keep-alive\n\n")
}

/// One event (with an id, as legacy streams have), in its own chunk.
fn sse_event(out: &mut impl Write, id: usize, message: &[u8]) -> io::Result<()> {
    let mut event = format!("id: e{id}\nevent: message\ndata: ").into_bytes();
    event.extend_from_slice(message);
    event.extend_from_slice(b"\n\n");
    sse_chunk(out, &event)
}

fn sse_chunk(out: &mut impl Write, chunk: &[u8]) -> io::Result<()> {
    write!(out, "{:x}\r\n", chunk.len())?;
    out.write_all(chunk)?;
    out.write_all(b"\r\n")?;
    out.flush()
}

fn sse_end(out: &mut impl Write) -> io::Result<()> {
    out.write_all(b"0\r\n\r\n")?;
    out.flush()
}

/// The server machine, shared by every connection, and the legacy calls waiting on an
/// event stream for the answer the client posts on another connection.
struct Backend {
    server: Mutex<Server>,
    /// JSON-RPC id (as JSON text) → the stream waiting for that response.
    waiters: Mutex<HashMap<String, mpsc::Sender<Vec<u8>>>>,
    /// Switched on by [`TestServer::go_modern_only`].
    modern_only: AtomicBool,
}

/// A stream that can read and write at once (plain TCP or rustls over it).
trait Duplex: Read + Write {}
impl<T: Read + Write> Duplex for T {}

/// Serves one connection until the client closes it.
fn serve_connection(stream: impl Duplex, script: Script, machine: &Backend, seen: &Seen) {
    let mut conn = BufReader::new(stream);
    let mut served = 0;
    while let Ok(Some(req)) = read_request(&mut conn) {
        served += 1;
        if script.drop_reused && served == 2 {
            return;
        }
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let rpc_method = body["method"].as_str().unwrap_or("").to_owned();
        seen.requests
            .lock()
            .unwrap()
            .push(format!("{} {rpc_method}", req.method).trim_end().to_owned());
        let out = conn.get_mut();
        let ok = match req.method.as_str() {
            "GET" => respond(out, "405 Method Not Allowed", &[], None, b"").map(|()| true),
            "DELETE" => respond(out, "200 OK", &[], None, b"").map(|()| true),
            "POST" => post(out, &req, &body, script, machine),
            _ => respond(out, "400 Bad Request", &[], None, b"").map(|()| true),
        };
        match ok {
            Ok(true) | Err(_) => {}
            Ok(false) => {
                // No answer (a `hang` call): wait for the client to give up.
                let mut rest = Vec::new();
                let _ = conn.read_to_end(&mut rest);
                seen.abandoned.fetch_add(1, Ordering::SeqCst);
                return;
            }
        }
    }
}

/// Answers a POST; false when the machine has nothing to say (the call hangs).
fn post(
    out: &mut impl Write,
    req: &Request,
    body: &Value,
    script: Script,
    machine: &Backend,
) -> io::Result<bool> {
    let method = body["method"].as_str().unwrap_or("");
    let modern = body["params"]["_meta"]
        .get("io.modelcontextprotocol/protocolVersion")
        .is_some();
    let bad = |out: &mut dyn Write, why: &str| {
        let e =
            json!({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32020, "message": why}});
        let e = serde_json::to_vec(&e).unwrap();
        respond(out, "400 Bad Request", &[], Some("application/json"), &e).map(|()| true)
    };
    let modern_only = machine.modern_only.load(Ordering::SeqCst);
    if modern_only && method == "initialize" {
        let e = json!({"jsonrpc": "2.0", "id": body["id"], "error": {
            "code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": body["params"]["protocolVersion"]}}});
        let e = serde_json::to_vec(&e).unwrap();
        return respond(out, "400 Bad Request", &[], Some("application/json"), &e).map(|()| true);
    }
    // A server switched to modern-only no longer behaves as a legacy one.
    let legacy = script.legacy && !modern_only;
    if method == "initialize" {
        // Every initialize starts a new session, on a fresh server (the era cache tests
        // connect more than once).
        *machine.server.lock().unwrap() = if legacy {
            example::legacy_only()
        } else {
            example::server()
        };
    }
    // The 2026 header set must mirror the body.
    if modern {
        if req.headers.get("mcp-method").map(String::as_str) != Some(method) {
            return bad(out, "Mcp-Method does not match the body");
        }
        if !req.headers.contains_key("mcp-protocol-version") {
            return bad(out, "MCP-Protocol-Version missing");
        }
    }
    // The legacy session, once issued, must come back.
    let sessionless = ["initialize", "server/discover"].contains(&method);
    if legacy && !sessionless && !req.headers.contains_key("mcp-session-id") {
        return bad(out, "Mcp-Session-Id missing");
    }
    let is_request = body.get("method").is_some() && body.get("id").is_some();
    let (mine, asks) = {
        let mut server = machine.server.lock().unwrap();
        server.handle_json(mcp_proto::Instant::ZERO, &req.body);
        let mut mine = None;
        let mut asks = Vec::new();
        while let Some(reply) = server.poll_message() {
            let v: Value = serde_json::from_slice(&reply).unwrap_or(Value::Null);
            if v.get("method").is_some() {
                // A server→client request (legacy elicitation): it goes on this stream.
                asks.push(reply);
            } else if is_request && v["id"] == body["id"] {
                mine = Some(reply);
            } else if let Some(tx) = machine.waiters.lock().unwrap().remove(&v["id"].to_string()) {
                // The answer to a call parked on another connection's stream.
                let _ = tx.send(reply);
            }
        }
        if mine.is_none() && !asks.is_empty() {
            let (tx, rx) = mpsc::channel();
            machine
                .waiters
                .lock()
                .unwrap()
                .insert(body["id"].to_string(), tx);
            (None, Some((asks, rx)))
        } else {
            (mine, None)
        }
    };
    if !is_request {
        respond(out, "202 Accepted", &[], None, b"")?;
        return Ok(true);
    }
    if let Some((asks, rx)) = asks {
        // Stream the questions, wait for the answer to arrive on another connection.
        sse_head(out, &[])?;
        for (i, ask) in asks.iter().enumerate() {
            sse_event(out, i, ask)?;
        }
        let last = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the parked call ends");
        sse_event(out, asks.len(), &last)?;
        sse_end(out)?;
        return Ok(true);
    }
    let Some(reply) = mine else {
        return Ok(false);
    };
    let parsed: Value = serde_json::from_slice(&reply).unwrap_or(Value::Null);
    if legacy && method == "server/discover" {
        // As legacy servers over HTTP do: the error on a 400.
        respond(
            out,
            "400 Bad Request",
            &[],
            Some("application/json"),
            &reply,
        )?;
        return Ok(true);
    }
    let mut extra = Vec::new();
    if legacy && method == "initialize" && parsed.get("result").is_some() {
        extra.push(("Mcp-Session-Id", "session-0123".to_owned()));
    }
    if script.sse {
        sse_head(out, &extra)?;
        sse_event(out, 0, &reply)?;
        sse_end(out)?;
    } else {
        respond(out, "200 OK", &extra, Some("application/json"), &reply)?;
    }
    Ok(true)
}

// ----- TLS material --------------------------------------------------------------------

/// A self-signed certificate for `localhost` and 127.0.0.1, made by `openssl` in a temp
/// dir: (certificate DER, private key DER). `None` (with a message) when openssl is
/// missing here; a failure when the env says this is CI, where it must be present.
#[cfg(feature = "tls")]
fn self_signed() -> Option<(Vec<u8>, Vec<u8>)> {
    static PAIR: OnceLock<Option<(Vec<u8>, Vec<u8>)>> = OnceLock::new();
    PAIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("mcp-smol-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        // CA:FALSE: webpki refuses a CA certificate as the server's own certificate.
        let run = std::process::Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=localhost",
            ])
            .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
            .args([
                "-addext",
                "basicConstraints=critical,CA:FALSE",
                "-days",
                "1",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .output();
        let pair = match run {
            Ok(out) if out.status.success() => Some((pem_cert(&cert), pem_key(&key))),
            Ok(out) => panic!("openssl failed: {}", String::from_utf8_lossy(&out.stderr)),
            Err(e) if std::env::var_os("CI").is_some() => {
                panic!("openssl is required on CI for the TLS tests: {e}")
            }
            Err(e) => {
                eprintln!("skipping the TLS tests: openssl is not available ({e})");
                None
            }
        };
        let _ = std::fs::remove_dir_all(&dir);
        pair
    })
    .clone()
}

/// The DER of the PEM certificate in `path`.
#[cfg(feature = "tls")]
fn pem_cert(path: &Path) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_file(path)
        .expect("certificate PEM")
        .to_vec()
}

/// The DER of the PKCS#8 PEM key in `path`.
#[cfg(feature = "tls")]
fn pem_key(path: &Path) -> Vec<u8> {
    use rustls::pki_types::PrivatePkcs8KeyDer;
    use rustls::pki_types::pem::PemObject;
    PrivatePkcs8KeyDer::from_pem_file(path)
        .expect("PKCS#8 key PEM")
        .secret_pkcs8_der()
        .to_vec()
}

#[cfg(feature = "tls")]
fn ring() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

#[cfg(feature = "tls")]
fn tls_server_config((cert, key): &(Vec<u8>, Vec<u8>)) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let config = rustls::ServerConfig::builder_with_provider(ring())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.clone())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.clone())),
        )
        .expect("server certificate");
    Arc::new(config)
}

/// A client configuration trusting only `cert`.
#[cfg(feature = "tls")]
fn tls_client_trusting(cert: &[u8]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(cert.to_vec()))
        .expect("trust anchor");
    let config = rustls::ClientConfig::builder_with_provider(ring())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

// ----- harness -------------------------------------------------------------------------

mod common;
use common::{BoxFuture, Dialog, Runner, Spawn, bounded, join_all, sequential_adds};

fn config(mode: EraMode) -> ClientConfig {
    // These tests count requests on the wire: the list cache (tested in the simulations)
    // would answer a repeated listing itself.
    let mut limits = mcp_proto::Limits::default();
    limits.max_cache_entries = 0;
    ClientConfig::new("mcp-smol-http-tests", "0.0.0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation())
        .limits(limits)
}

/// One test per runner. `$setup` runs first and yields `(server, (client, driver))`;
/// `$scenario` gets the client, the spawner and the server.
macro_rules! on_both_runners {
    ($name:ident, $setup:expr, $scenario:expr) => {
        on_both_runners!($name, $setup, $scenario, |r: Result<(), Error>| r
            .expect("driver ends cleanly"));
    };
    ($name:ident, $setup:expr, $scenario:expr, $check:expr) => {
        mod $name {
            use super::*;

            fn run_with(runner: Runner) {
                let Some((server, connected)) = $setup else {
                    return;
                };
                let server = Arc::new(server);
                let s = server.clone();
                let result = runner.run(connected, move |c, spawn| $scenario(c, spawn, s));
                ($check)(result);
            }

            #[test]
            fn smol_executor() {
                run_with(Runner::Smol);
            }

            #[test]
            fn no_executor() {
                run_with(Runner::Bare);
            }

            #[test]
            fn joined() {
                run_with(Runner::Joined);
            }
        }
    };
}

fn plain(script: Script, mode: EraMode) -> Option<(TestServer, (Client, Driver))> {
    plain_with(script, mode, HttpOptions::new())
}

fn plain_with(
    script: Script,
    mode: EraMode,
    options: HttpOptions,
) -> Option<(TestServer, (Client, Driver))> {
    let server = TestServer::start(script);
    let connected =
        mcp_smol::connect_http_with(&server.url(), config(mode), Options::new(), options)
            .expect("connect_http");
    Some((server, connected))
}

// ----- scenarios -----------------------------------------------------------------------

/// List, add, echo, and 8 calls in flight at once from separate tasks.
async fn tour(client: Client, spawn: Spawn, era: Era, version: ProtocolVersion) {
    let details = client.connected().await.expect("connected");
    assert_eq!(details.protocol_version, version);
    assert_eq!(client.era(), Some(era));
    assert_eq!(client.server_name().as_deref(), Some("mcp-example"));
    assert!(client.endpoint().is_some_and(|e| e.contains("/mcp")));
    assert_eq!(client.process_id(), None);

    let tools = client.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "add", "confirm", "hang", "fail"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let sum = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .expect("add");
    assert_eq!(sum.text(), "5");
    let echo = client
        .call_tool("echo", json!({"text": "über"}))
        .await
        .expect("echo");
    assert_eq!(echo.text(), "über");
    let failed = client.call_tool("fail", json!({})).await.expect("fail");
    assert_eq!(failed.is_error, Some(true));

    let results = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<BoxFuture> = (0..8i64)
        .map(|i| {
            let client = client.clone();
            let results = results.clone();
            spawn(Box::pin(async move {
                let r = client
                    .call_tool("add", json!({"a": i, "b": 100}))
                    .await
                    .expect("concurrent add");
                results.lock().unwrap().push((i, r.text()));
            }))
        })
        .collect();
    join_all(tasks).await;
    let mut results = results.lock().unwrap().clone();
    results.sort();
    let expected: Vec<(i64, String)> = (0..8).map(|i| (i, (i + 100).to_string())).collect();
    assert_eq!(results, expected);
    assert!(
        client.recent_peer_errors().is_empty(),
        "{:?}",
        client.recent_peer_errors()
    );
}

async fn modern_tour(client: Client, spawn: Spawn, server: Arc<TestServer>) {
    tour(
        client.clone(),
        spawn,
        Era::Modern,
        ProtocolVersion::V2026_07_28,
    )
    .await;
    // The 2026 era answers input requests in rounds of ordinary requests.
    client.set_input_handler(Box::new(mcp_smol::AcceptDefaults));
    let confirmed = client
        .call_tool("confirm", json!({}))
        .await
        .expect("confirm");
    assert_eq!(confirmed.text(), "accepted: proceed=true name=friend");
    let requests = server.requests();
    assert_eq!(requests[0], "POST server/discover");
    assert!(
        requests.iter().all(|r| r.starts_with("POST ")),
        "{requests:?}"
    );
    // 8 at once need 8 connections; never more than the bound.
    let accepted = server.accepted();
    assert!((8..=16).contains(&accepted), "{accepted} connections");
}

on_both_runners!(
    modern_server,
    plain(Script::default(), EraMode::Auto),
    modern_tour
);

on_both_runners!(
    modern_server_answering_with_event_streams,
    plain(
        Script {
            sse: true,
            ..Script::default()
        },
        EraMode::Auto
    ),
    modern_tour
);

async fn legacy_tour(client: Client, spawn: Spawn, server: Arc<TestServer>) {
    tour(
        client.clone(),
        spawn,
        Era::Legacy,
        ProtocolVersion::V2025_11_25,
    )
    .await;
    // The form request arrives on the call's event stream; the answer is POSTed (202)
    // while that stream waits for the result.
    client.set_input_handler(Box::new(mcp_smol::AcceptDefaults));
    let confirmed = client
        .call_tool("confirm", json!({}))
        .await
        .expect("confirm");
    assert_eq!(confirmed.text(), "accepted: proceed=true name=friend");
    let requests = server.requests();
    assert!(requests.contains(&"POST".to_owned()), "{requests:?}");
    assert_eq!(requests[..2], ["POST server/discover", "POST initialize"]);
    assert!(requests.contains(&"POST notifications/initialized".to_owned()));
    // The server's own stream was asked for, and refused with 405.
    assert!(requests.contains(&"GET".to_owned()), "{requests:?}");
}

on_both_runners!(
    legacy_server_falls_back_to_initialize,
    plain(
        Script {
            legacy: true,
            ..Script::default()
        },
        EraMode::Auto
    ),
    legacy_tour
);

/// One call after another: one connection carries them all.
async fn sequential_calls_reuse_one_connection(
    client: Client,
    _spawn: Spawn,
    server: Arc<TestServer>,
) {
    sequential_adds(&client, 10).await;
    // The probe, the listing the machine makes before the first `tools/call` (to learn
    // the tools' `x-mcp-header` declarations), and the 10 calls.
    let requests = server.requests();
    assert_eq!(requests.len(), 12, "{requests:?}");
    assert_eq!(requests[..2], ["POST server/discover", "POST tools/list"]);
    let calls = requests.iter().filter(|r| *r == "POST tools/call").count();
    assert_eq!(calls, 10, "{requests:?}");
    assert_eq!(server.accepted(), 1);
}

on_both_runners!(
    legacy_server_answering_with_event_streams,
    plain(
        Script {
            legacy: true,
            sse: true,
            ..Script::default()
        },
        EraMode::Auto
    ),
    legacy_tour
);

on_both_runners!(
    keep_alive_connections_are_reused,
    plain(Script::default(), EraMode::Auto),
    sequential_calls_reuse_one_connection
);

/// The server drops every connection as its second request arrives: each reuse fails
/// before a byte of answer. A listing goes out again on a fresh connection; a tool call,
/// which may have run, is never sent twice and fails.
async fn stale_connections_are_retried(client: Client, _spawn: Spawn, server: Arc<TestServer>) {
    for _ in 0..5 {
        let tools = client
            .list_tools()
            .await
            .expect("a listing despite the dropped connection");
        assert!(!tools.is_empty());
    }
    // The probe on the first connection, then one fresh connection per listing; each
    // request was answered exactly once.
    assert_eq!(server.accepted(), 6);
    let requests = server.requests();
    assert_eq!(requests.len(), 6, "{requests:?}");
    assert_eq!(requests[0], "POST server/discover");
    assert!(
        requests[1..].iter().all(|r| r == "POST tools/list"),
        "{requests:?}"
    );
    let err = client
        .call_tool("add", json!({"a": 1, "b": 10}))
        .await
        .expect_err("a tool call on a dropped connection is not sent again");
    // The connection closed before a response began: a failure below HTTP, as a reset is.
    assert!(
        matches!(&err, Error::Transport(e) if e.kind() == TransportErrorKind::Read),
        "{err:?}"
    );
    assert!(err.to_string().contains("before a response began"), "{err}");
    assert_eq!(server.requests().len(), 6, "nothing ran twice");
}

on_both_runners!(
    a_reused_connection_closed_by_the_server_is_retried_once,
    plain(
        Script {
            drop_reused: true,
            ..Script::default()
        },
        EraMode::Auto
    ),
    stale_connections_are_retried
);

/// With a bound of 2 connections, 8 calls at once wait their turn.
async fn bounded_pool(client: Client, spawn: Spawn, server: Arc<TestServer>) {
    let tasks: Vec<BoxFuture> = (0..8i64)
        .map(|i| {
            let client = client.clone();
            spawn(Box::pin(async move {
                let r = client
                    .call_tool("add", json!({"a": i, "b": i}))
                    .await
                    .expect("add");
                assert_eq!(r.text(), (2 * i).to_string());
            }))
        })
        .collect();
    join_all(tasks).await;
    assert!(server.accepted() <= 2, "{} connections", server.accepted());
}

on_both_runners!(
    connections_beyond_the_bound_wait,
    plain_with(
        Script::default(),
        EraMode::Auto,
        HttpOptions::new().max_connections(2)
    ),
    bounded_pool
);

/// A call that times out in the 2026 era is cancelled by closing its exchange; the
/// connection goes on with the next call. The wire log shows HTTP, without the token.
async fn cancel_and_log(client: Client, _spawn: Spawn, server: Arc<TestServer>) {
    let lines = Arc::new(Mutex::new(Vec::<(Direction, String)>::new()));
    let sink = lines.clone();
    client.set_wire_log(Some(Box::new(move |dir, line| {
        sink.lock()
            .unwrap()
            .push((dir, String::from_utf8_lossy(line).into_owned()));
    })));
    client.connected().await.expect("connected");
    let timed_out = client
        .request(CallRequest::call_tool("hang", json!({})).timeout(Duration::from_millis(200)))
        .await
        .expect_err("hang must time out");
    assert!(
        matches!(timed_out, Error::Call(CallError::Timeout(_))),
        "{timed_out:?}"
    );
    let sum = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .expect("add after a cancellation");
    assert_eq!(sum.text(), "2");
    // The server saw the abandoned exchange's connection close.
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.seen.abandoned.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the hung exchange was never closed"
        );
        async_io::Timer::after(Duration::from_millis(10)).await;
    }
    let lines = lines.lock().unwrap();
    let sent: Vec<&str> = lines
        .iter()
        .filter(|(d, _)| *d == Direction::Sent)
        .map(|(_, l)| l.as_str())
        .collect();
    let received: Vec<&str> = lines
        .iter()
        .filter(|(d, _)| *d == Direction::Received)
        .map(|(_, l)| l.as_str())
        .collect();
    assert!(sent.contains(&"POST /mcp HTTP/1.1"), "{sent:?}");
    assert!(sent.contains(&"Authorization: [redacted]"), "{sent:?}");
    assert!(!sent.iter().any(|l| l.contains("s3cr3t")), "{sent:?}");
    assert!(
        sent.iter().any(|l| l.contains("\"name\":\"hang\"")),
        "{sent:?}"
    );
    assert!(received.contains(&"HTTP/1.1 200 OK"), "{received:?}");
    assert!(
        received.iter().any(|l| l.contains("\"text\":\"2\"")),
        "{received:?}"
    );
}

on_both_runners!(
    cancelling_closes_the_exchange,
    plain_with(
        Script::default(),
        EraMode::Auto,
        HttpOptions::new().authorization("Bearer s3cr3t")
    ),
    cancel_and_log
);

/// Nothing listens: `connected`, queued calls and the driver all report the refusal,
/// typed.
async fn refused(client: Client, _spawn: Spawn, _server: Arc<()>) {
    let queued = client.list_tools().await.expect_err("nothing listens");
    let e = client.connected().await.expect_err("nothing listens");
    for e in [&e, &queued] {
        let Error::Transport(t) = e else {
            panic!("not a transport error: {e:?}");
        };
        assert_eq!(t.kind(), TransportErrorKind::Connect);
        assert_eq!(t.io_error().kind(), io::ErrorKind::ConnectionRefused, "{t}");
        assert_eq!(e.kind(), "unreachable");
        assert!(t.endpoint().starts_with("http://127.0.0.1:"), "{t}");
    }
}

fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

on_both_runners!(
    connection_refused_is_a_typed_error,
    Some((
        (),
        mcp_smol::connect_http(
            &format!("http://127.0.0.1:{}/mcp", closed_port()),
            config(EraMode::Auto)
        )
        .expect("connect_http")
    )),
    refused,
    |r: Result<(), Error>| {
        let e = r.expect_err("the driver reports the failure");
        assert!(
            matches!(&e, Error::Transport(t) if t.kind() == TransportErrorKind::Connect),
            "{e:?}"
        );
    }
);

/// A connector that never connects: the connect timeout ends the wait.
struct Never;

impl Connector for Never {
    fn connect(&self, _origin: &Origin) -> ConnectFuture {
        Box::pin(future::pending())
    }
}

async fn timed_out(client: Client, _spawn: Spawn, _server: Arc<()>) {
    let started = Instant::now();
    let e = client.connected().await.expect_err("never connects");
    assert!(
        matches!(&e, Error::Transport(t) if t.kind() == TransportErrorKind::ConnectTimeout
            && t.io_error().kind() == io::ErrorKind::TimedOut),
        "{e:?}"
    );
    assert_eq!(e.kind(), "unreachable");
    // The 200 ms run from the driver's first poll, a moment before this scenario's own
    // first poll: not instant, and not cut short by more than that moment.
    assert!(started.elapsed() >= Duration::from_millis(150));
}

on_both_runners!(
    connect_timeout_is_a_typed_error,
    Some((
        (),
        mcp_smol::connect_http_with(
            "http://127.0.0.1:9/mcp",
            config(EraMode::Auto),
            Options::new(),
            HttpOptions::new()
                .connector(Never)
                .connect_timeout(Duration::from_millis(200)),
        )
        .expect("connect_http")
    )),
    timed_out,
    |r: Result<(), Error>| {
        assert!(matches!(r, Err(Error::Transport(_))), "{r:?}");
    }
);

/// A connector bringing its own streams: the URL names port 9, the connector goes to
/// the test server.
struct To(u16);

impl Connector for To {
    fn connect(&self, _origin: &Origin) -> ConnectFuture {
        let port = self.0;
        Box::pin(async move {
            let tcp = smol::net::TcpStream::connect(("127.0.0.1", port)).await?;
            Ok(Box::new(tcp) as Box<dyn AsyncStream>)
        })
    }
}

fn via_connector() -> Option<(TestServer, (Client, Driver))> {
    let server = TestServer::start(Script::default());
    let connected = connect_via(To(server.port));
    Some((server, connected))
}

/// A client of `http://localhost:9/mcp` whose connections `connector` opens.
fn connect_via(connector: impl mcp_smol::Connector + 'static) -> (Client, Driver) {
    mcp_smol::connect_http_with(
        "http://localhost:9/mcp",
        config(EraMode::Auto),
        Options::new(),
        HttpOptions::new().connector(connector),
    )
    .expect("connect_http")
}

async fn custom_streams(client: Client, _spawn: Spawn, server: Arc<TestServer>) {
    let r = client
        .call_tool("echo", json!({"text": "via connector"}))
        .await
        .expect("echo");
    assert_eq!(r.text(), "via connector");
    assert_eq!(server.accepted(), 1);
}

on_both_runners!(
    a_connector_brings_its_own_streams,
    via_connector(),
    custom_streams
);

/// [`To`], saying its streams are TLS sessions already (as a connector with another TLS
/// stack would): `https` URLs go to it, with or without the `tls` feature, and the driver
/// does no handshake of its own.
struct TlsTo(u16);

impl Connector for TlsTo {
    fn connect(&self, origin: &Origin) -> ConnectFuture {
        To(self.0).connect(origin)
    }

    fn handles_tls(&self) -> bool {
        true
    }
}

fn https_via_connector() -> Option<(TestServer, (Client, Driver))> {
    let server = TestServer::start(Script::default());
    let connector = TlsTo(server.port);
    let connected = mcp_smol::connect_http_with(
        "https://localhost:9/mcp",
        config(EraMode::Auto),
        Options::new(),
        HttpOptions::new().connector(connector),
    )
    .expect("connect_http");
    Some((server, connected))
}

on_both_runners!(
    a_connector_handling_tls_serves_https,
    https_via_connector(),
    custom_streams
);

/// A connector that counts, per connection, how often the driver tries to read it.
struct Counting {
    port: u16,
    reads: Arc<Mutex<Vec<Arc<AtomicUsize>>>>,
}

/// A connection of [`Counting`]: every `poll_read` counted, whatever it returns.
struct Counted {
    tcp: smol::net::TcpStream,
    reads: Arc<AtomicUsize>,
}

impl futures_lite::AsyncRead for Counted {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut [u8],
    ) -> std::task::Poll<io::Result<usize>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        std::pin::Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl futures_lite::AsyncWrite for Counted {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        std::pin::Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_close(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.tcp).poll_close(cx)
    }
}

impl Connector for Counting {
    fn connect(&self, _origin: &Origin) -> ConnectFuture {
        let port = self.port;
        let reads = Arc::new(AtomicUsize::new(0));
        self.reads.lock().unwrap().push(reads.clone());
        Box::pin(async move {
            let tcp = smol::net::TcpStream::connect(("127.0.0.1", port)).await?;
            Ok(Box::new(Counted { tcp, reads }) as Box<dyn AsyncStream>)
        })
    }
}

type Reads = Arc<Mutex<Vec<Arc<AtomicUsize>>>>;

fn counted() -> Option<((TestServer, Reads), (Client, Driver))> {
    let server = TestServer::start(Script::default());
    let reads = Reads::default();
    let connector = Counting {
        port: server.port,
        reads: reads.clone(),
    };
    let connected = connect_via(connector);
    Some(((server, reads), connected))
}

/// While one connection waits on a call the server never answers, 20 calls go one after
/// another on a second connection. The waiting connection has nothing to read and
/// nothing woke it: the driver does not try to read it on each of those calls (it did,
/// a syscall each time, on every poll of the driver), and the busy one is read a few
/// times per call, not on every poll.
async fn idle_connections_are_left_alone(
    client: Client,
    _spawn: Spawn,
    counted: Arc<(TestServer, Reads)>,
) {
    let (server, reads) = &*counted;
    client.connected().await.expect("connected");
    let hang = client.request(CallRequest::call_tool("hang", json!({})));
    let calls = async {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !server.requests().contains(&"POST tools/call".to_owned()) {
            assert!(Instant::now() < deadline, "the hanging call never arrived");
            async_io::Timer::after(Duration::from_millis(5)).await;
        }
        // The hanging call's connection has been read until it had nothing more.
        async_io::Timer::after(Duration::from_millis(50)).await;
        let snapshot = |reads: &Reads| -> Vec<usize> {
            let reads = reads.lock().unwrap();
            reads.iter().map(|r| r.load(Ordering::SeqCst)).collect()
        };
        let before = snapshot(reads);
        let hanging = before.len() - 1;
        sequential_adds(&client, 20).await;
        let after = snapshot(reads);
        assert_eq!(
            after.len(),
            before.len() + 1,
            "one more connection for the calls"
        );
        let idle = after[hanging] - before[hanging];
        assert!(idle <= 2, "the idle connection was read {idle} times");
        // An answer takes a read for each of its two writes (head, body), and async-io
        // reads twice more each time before it waits.
        let busy = after[hanging + 1];
        assert!(busy <= 20 * 6, "the busy connection was read {busy} times");
    };
    let hang = async {
        let _ = hang.await;
        panic!("the hanging call ended");
    };
    future::or(calls, hang).await;
    assert_eq!(server.accepted(), 2);
}

on_both_runners!(
    idle_connections_are_not_read,
    counted(),
    idle_connections_are_left_alone
);

// ----- TLS -------------------------------------------------------------------------------

#[cfg(feature = "tls")]
fn https(trusted: bool, host: &str) -> Option<(TestServer, (Client, Driver))> {
    let pair = self_signed()?;
    let server = TestServer::start_tls(Script::default(), tls_server_config(&pair));
    let mut options = HttpOptions::new();
    if trusted {
        options = options.tls(tls_client_trusting(&pair.0));
    }
    let url = format!("https://{host}:{}/mcp", server.port);
    let connected =
        mcp_smol::connect_http_with(&url, config(EraMode::Auto), Options::new(), options)
            .expect("connect_http");
    Some((server, connected))
}

#[cfg(feature = "tls")]
async fn over_tls(client: Client, spawn: Spawn, server: Arc<TestServer>) {
    modern_tour(client, spawn, server).await;
}

#[cfg(feature = "tls")]
on_both_runners!(
    https_with_a_trusted_self_signed_certificate,
    https(true, "127.0.0.1"),
    over_tls
);

#[cfg(feature = "tls")]
async fn over_tls_by_name(client: Client, _spawn: Spawn, server: Arc<TestServer>) {
    let r = client
        .call_tool("add", json!({"a": 20, "b": 22}))
        .await
        .expect("add over TLS");
    assert_eq!(r.text(), "42");
    let r = client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .expect("add over TLS");
    assert_eq!(r.text(), "3");
    // TLS sessions are kept alive and reused like plain connections.
    assert_eq!(server.accepted(), 1);
}

#[cfg(feature = "tls")]
on_both_runners!(
    https_to_a_dns_name,
    https(true, "localhost"),
    over_tls_by_name
);

#[cfg(feature = "tls")]
async fn untrusted(client: Client, _spawn: Spawn, _server: Arc<TestServer>) {
    let e = client
        .connected()
        .await
        .expect_err("self-signed is not trusted");
    let Error::Transport(t) = &e else {
        panic!("not a transport error: {e:?}");
    };
    assert_eq!(t.kind(), TransportErrorKind::Tls);
    assert_eq!(e.kind(), "tls");
    assert!(
        matches!(
            t.tls_error(),
            Some(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer
            ))
        ),
        "{t:?}"
    );
}

#[cfg(feature = "tls")]
on_both_runners!(
    the_default_roots_reject_a_self_signed_certificate,
    https(false, "127.0.0.1"),
    untrusted,
    |r: Result<(), Error>| {
        assert!(
            matches!(&r, Err(Error::Transport(t)) if t.kind() == TransportErrorKind::Tls),
            "{r:?}"
        );
    }
);

// ----- URLs ------------------------------------------------------------------------------

#[test]
fn urls_are_vetted_before_anything_connects() {
    let e = mcp_smol::connect_http("http://mcp.example.com/mcp", config(EraMode::Auto))
        .expect_err("plain http to a remote host");
    assert!(
        matches!(
            e,
            Error::InvalidUrl {
                source: UrlError::InsecureRemote,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.kind(), "invalid-url");
    assert!(matches!(
        mcp_smol::connect_http("ftp://127.0.0.1/", config(EraMode::Auto)),
        Err(Error::InvalidUrl {
            source: UrlError::UnsupportedScheme,
            ..
        })
    ));
    // Allowed on request; nothing is connected until the driver runs.
    let (client, driver) = mcp_smol::connect_http_with(
        "http://mcp.example.com/mcp",
        config(EraMode::Auto),
        Options::new(),
        HttpOptions::new().allow_insecure_remote(true),
    )
    .expect("allowed");
    assert_eq!(
        client.endpoint().as_deref(),
        Some("http://mcp.example.com/mcp")
    );
    drop(driver);
    assert!(matches!(
        future::block_on(client.list_tools()),
        Err(Error::DriverGone)
    ));
}

/// Without the `tls` feature, `https` is refused before anything connects, saying why,
/// unless the connector handles TLS itself (`a_connector_handling_tls_serves_https`).
#[cfg(not(feature = "tls"))]
#[test]
fn https_without_the_tls_feature_is_a_typed_error() {
    let e = mcp_smol::connect_http("https://mcp.example.com/mcp", config(EraMode::Auto))
        .expect_err("no TLS in this build");
    let Error::TlsUnavailable(t) = &e else {
        panic!("not TlsUnavailable: {e:?}");
    };
    assert_eq!(t.url(), "https://mcp.example.com/mcp");
    assert_eq!(e.kind(), "tls-unavailable");
    assert!(
        e.to_string()
            .contains("TLS support was compiled out of mcp-smol"),
        "{e}"
    );
    // A connector that leaves TLS to the driver does not help.
    let e = mcp_smol::connect_http_with(
        "https://127.0.0.1:9/mcp",
        config(EraMode::Auto),
        Options::new(),
        HttpOptions::new().connector(To(9)),
    )
    .expect_err("no TLS in this build");
    assert!(matches!(e, Error::TlsUnavailable(_)), "{e:?}");
}

#[test]
fn the_shutdown_sees_no_stray_connections() {
    // A legacy session is closed explicitly; the driver ends without waiting out the
    // grace period.
    let server = TestServer::start(Script {
        legacy: true,
        ..Script::default()
    });
    let (client, driver) =
        mcp_smol::connect_http(&server.url(), config(EraMode::Legacy)).expect("connect_http");
    let started = Instant::now();
    let work = async move {
        client.connected().await.expect("connected");
        client.close().await;
        assert!(client.is_closed());
    };
    let (driven, ()) = future::block_on(bounded(future::zip(driver, work)));
    driven.expect("closed cleanly");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

// ----- the era cache ----------------------------------------------------------------------

/// One connection to `server` in `Auto` with `cache`, on the smol executor or with no
/// executor at all: a call made before the connection is up (it waits for the era to be
/// settled, through a retry if there is one), then `connected`, then close. Returns the
/// negotiated version and the requests the server saw during this connection.
fn connect_with_cache(
    server: &TestServer,
    cache: &EraCache,
    runner: Runner,
) -> (ProtocolVersion, Vec<String>) {
    let before = server.requests().len();
    let connected = mcp_smol::connect_http_with(
        &server.url(),
        config(EraMode::Auto),
        Options::new(),
        HttpOptions::new().era_cache(cache.clone()),
    )
    .expect("connect_http");
    let version = Arc::new(Mutex::new(None));
    let seen = version.clone();
    let scenario = move |client: Client, _spawn: Spawn| async move {
        let sum = client
            .call_tool("add", json!({"a": 2, "b": 3}))
            .await
            .expect("add");
        assert_eq!(sum.text(), "5");
        let details = client.connected().await.expect("connected");
        *seen.lock().unwrap() = Some(details.protocol_version);
        client.close().await;
    };
    let driven = runner.run(connected, scenario);
    driven.expect("driver ends cleanly");
    let version = version.lock().unwrap().expect("a version");
    (version, server.requests()[before..].to_vec())
}

fn origin(server: &TestServer) -> String {
    format!("http://127.0.0.1:{}", server.port)
}

#[test]
fn the_era_cache_records_a_modern_verdict() {
    for runner in [Runner::Smol, Runner::Bare] {
        let server = TestServer::start(Script::default());
        let cache = EraCache::new();
        let (version, requests) = connect_with_cache(&server, &cache, runner);
        assert_eq!(version, ProtocolVersion::V2026_07_28);
        assert_eq!(requests[0], "POST server/discover", "{requests:?}");
        assert_eq!(
            cache.hint(&origin(&server)),
            Some((Era::Modern, ProtocolVersion::V2026_07_28))
        );
        // A modern verdict changes nothing: the next connection probes as usual.
        let (version, requests) = connect_with_cache(&server, &cache, runner);
        assert_eq!(version, ProtocolVersion::V2026_07_28);
        assert_eq!(requests[0], "POST server/discover", "{requests:?}");
        assert_eq!(cache.len(), 1);
    }
}

#[test]
fn the_era_cache_skips_the_probe_for_a_legacy_origin() {
    for runner in [Runner::Smol, Runner::Bare] {
        let server = TestServer::start(Script {
            legacy: true,
            ..Script::default()
        });
        let cache = EraCache::new();
        let (version, requests) = connect_with_cache(&server, &cache, runner);
        assert_eq!(version, ProtocolVersion::V2025_11_25);
        assert_eq!(
            requests[..2],
            ["POST server/discover", "POST initialize"],
            "{requests:?}"
        );
        assert_eq!(
            cache.hint(&origin(&server)),
            Some((Era::Legacy, ProtocolVersion::V2025_11_25))
        );
        let (version, requests) = connect_with_cache(&server, &cache, runner);
        assert_eq!(version, ProtocolVersion::V2025_11_25);
        assert_eq!(requests[0], "POST initialize", "{requests:?}");
        assert!(
            !requests.contains(&"POST server/discover".to_owned()),
            "the second connection went straight to initialize: {requests:?}"
        );
        assert!(
            requests.contains(&"POST tools/call".to_owned()),
            "{requests:?}"
        );
    }
}

#[test]
fn a_stale_legacy_verdict_is_dropped_and_the_origin_probed_again() {
    for runner in [Runner::Smol, Runner::Bare] {
        let server = TestServer::start(Script {
            legacy: true,
            ..Script::default()
        });
        let cache = EraCache::new();
        let (version, _) = connect_with_cache(&server, &cache, runner);
        assert_eq!(version, ProtocolVersion::V2025_11_25);
        assert_eq!(
            cache.hint(&origin(&server)).map(|(era, _)| era),
            Some(Era::Legacy)
        );

        server.go_modern_only();
        let (version, requests) = connect_with_cache(&server, &cache, runner);
        assert_eq!(version, ProtocolVersion::V2026_07_28);
        // The cached verdict was tried (initialize, refused with 400 and -32022), then
        // dropped, and the origin probed; the call made meanwhile went to the new
        // connection only.
        assert_eq!(
            requests[..2],
            ["POST initialize", "POST server/discover"],
            "{requests:?}"
        );
        let calls = requests.iter().filter(|r| *r == "POST tools/call").count();
        assert_eq!(calls, 1, "{requests:?}");
        assert_eq!(
            cache.hint(&origin(&server)),
            Some((Era::Modern, ProtocolVersion::V2026_07_28))
        );
    }
}

#[test]
fn one_era_cache_serves_both_adapters() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<EraCache>();
    // The very type of mcp-io, whose unit tests cover the decisions.
    let cache: mcp_io::EraCache = EraCache::new();
    let options = HttpOptions::new().era_cache(cache.clone());
    assert!(options.era_cache.is_some());
    assert!(format!("{options:?}").contains("era_cache"));
}

/// `Options::local()` over HTTP: an input handler and a wire log holding `Rc`s, in a
/// `Driver<Local>` run on a `LocalExecutor`, answer the example server's form in both eras.
#[test]
fn handlers_that_are_not_send_answer_over_http() {
    use std::cell::RefCell;
    use std::rc::Rc;

    use mcp_smol::Local;

    let legacy = Script {
        legacy: true,
        ..Script::default()
    };
    for script in [Script::default(), legacy] {
        let server = TestServer::start(script);
        let asked = Rc::new(RefCell::new(0_usize));
        let lines = Rc::new(RefCell::new(0_usize));
        let sink = lines.clone();
        let options = Options::local()
            .input_handler(Dialog(asked.clone()))
            .wire_log(move |_, _| *sink.borrow_mut() += 1);
        let (client, driver): (Client, Driver<Local>) = mcp_smol::connect_http_with(
            &server.url(),
            config(EraMode::Auto),
            options,
            HttpOptions::new(),
        )
        .expect("connect_http");
        let ex = smol::LocalExecutor::new();
        let driven = future::block_on(ex.run(async {
            let driver = ex.spawn(driver);
            let answer = client.call_tool("confirm", json!({})).await;
            assert_eq!(
                answer.expect("confirm").text(),
                "accepted: proceed=true name=Ada"
            );
            client.close().await;
            driver.await
        }));
        driven.expect("clean end");
        assert_eq!(*asked.borrow(), 1);
        assert!(*lines.borrow() > 0);
    }
}
