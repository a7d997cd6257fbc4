//! The canned HTTP server: the floor under rmcp's client. It answers exactly what rmcp's
//! client sends in this suite with fixed bytes, and does no MCP work at all:
//!
//! * `POST` `initialize` (2025-11-25) and `server/discover` (2026-07-28): a fixed result,
//!   a session id with the first;
//! * `POST` a notification (no id): `202 Accepted`;
//! * `POST` `tools/call`: the request's `id` and `arguments.text` copied, as they came
//!   (still JSON-encoded), into a fixed result; anything else with an id gets `{}`;
//! * `GET` (the legacy session's stream) and `DELETE` (the session's end): `405`, which
//!   rmcp's client takes as "not supported" and goes on.
//!
//! Every answer is JSON with `Content-Length`, written in one `write`, on a socket with
//! `TCP_NODELAY`, keep-alive. [`THREADS`] threads each block in `accept` on the same
//! listener and serve the connection they get themselves, so a new connection costs no
//! hand-off between threads (rmcp's default client opens one per request). Not a
//! general server: no validation beyond what it needs to find the id and the text.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use serde::Deserialize;
use serde_json::value::RawValue;

/// Threads blocked in `accept` at once: more than the 8 calls in flight of the suite's
/// busiest case, so no connection waits for a thread.
const THREADS: usize = 16;

/// The largest request body read (the suite's largest is 64 KiB of text).
const MAX_BODY: usize = 1 << 20;

/// What is looked at in a request body; everything else is skipped.
#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: &'a str,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    arguments: Option<Arguments<'a>>,
}

#[derive(Deserialize)]
struct Arguments<'a> {
    #[serde(borrow)]
    text: &'a RawValue,
}

/// The request head: its method, body length and whether it asked for 2026-07-28.
struct Head {
    method: Vec<u8>,
    length: usize,
    modern: bool,
}

const INITIALIZE: &str = r#""result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"canned","version":"0.1.0"}}}"#;
const DISCOVER: &str = r#""result":{"capabilities":{"tools":{}},"supportedVersions":["2026-07-28"],"resultType":"complete","ttlMs":60000,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"canned","version":"0.1.0"}}}}"#;
const MODERN_TAIL: &str = r#"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"canned","version":"0.1.0"}}}}"#;
const SESSION: &str = "Mcp-Session-Id: canned-session\r\n";

/// The variable that, set to `1` in the server's environment, makes one thread accept and
/// hand each connection to a waiting thread (as a server with an accept thread does), to
/// measure what that hand-off costs a client that opens a connection per request.
pub const HANDOFF_VAR: &str = "PEERS_CANNED_HANDOFF";

/// Serves on 127.0.0.1 until stdin closes.
pub fn serve_http() -> io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    super::announce(&format!("http://{}/mcp", listener.local_addr()?))?;
    if std::env::var(HANDOFF_VAR).is_ok_and(|v| v == "1") {
        return serve_handing_off(listener);
    }
    for _ in 0..THREADS {
        let listener = listener.try_clone()?;
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Err(e) = connection(stream) {
                    eprintln!("canned http server: {e}");
                }
            }
        });
    }
    super::wait_for_stdin_eof()
}

/// One thread accepts; [`THREADS`] threads wait for the connections it hands over.
fn serve_handing_off(listener: TcpListener) -> io::Result<()> {
    let (hand, take) = std::sync::mpsc::channel::<TcpStream>();
    let take = std::sync::Arc::new(std::sync::Mutex::new(take));
    for _ in 0..THREADS {
        let take = std::sync::Arc::clone(&take);
        std::thread::spawn(move || {
            loop {
                let next = take.lock().map(|t| t.recv());
                let Ok(Ok(stream)) = next else { return };
                if let Err(e) = connection(stream) {
                    eprintln!("canned http server: {e}");
                }
            }
        });
    }
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            if hand.send(stream).is_err() {
                return;
            }
        }
    });
    super::wait_for_stdin_eof()
}

fn connection(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut output = stream.try_clone()?;
    let mut input = BufReader::new(stream);
    let (mut line, mut body, mut json, mut out) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    while let Some(head) = read_head(&mut input, &mut line)? {
        body.resize(head.length, 0);
        input.read_exact(&mut body)?;
        out.clear();
        match head.method.as_slice() {
            b"POST" => post(&body, head.modern, &mut json, &mut out)?,
            _ => out.extend_from_slice(
                b"HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\nContent-Length: 0\r\n\r\n",
            ),
        }
        output.write_all(&out)?;
    }
    Ok(())
}

/// The whole answer to a `POST` with `body`, into `out`.
fn post(body: &[u8], modern: bool, json: &mut Vec<u8>, out: &mut Vec<u8>) -> io::Result<()> {
    let request: Request = serde_json::from_slice(body).map_err(io::Error::other)?;
    let Some(id) = request.id else {
        out.extend_from_slice(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
        return Ok(());
    };
    json.clear();
    json.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    json.extend_from_slice(id.get().as_bytes());
    json.push(b',');
    let mut session = "";
    match request.method {
        "initialize" => {
            json.extend_from_slice(INITIALIZE.as_bytes());
            session = SESSION;
        }
        "server/discover" => json.extend_from_slice(DISCOVER.as_bytes()),
        "tools/call" => {
            let text = request
                .params
                .and_then(|p| p.arguments)
                .map_or("\"\"", |a| a.text.get());
            json.extend_from_slice(br#""result":{"content":[{"type":"text","text":"#);
            json.extend_from_slice(text.as_bytes());
            json.extend_from_slice(if modern { MODERN_TAIL } else { "}]}}" }.as_bytes());
        }
        _ => json.extend_from_slice(br#""result":{}}"#),
    }
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{session}Content-Length: {}\r\n\r\n",
        json.len()
    )?;
    out.extend_from_slice(json);
    Ok(())
}

/// Reads a request head; `None` when the client closed the connection before one.
fn read_head(input: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Option<Head>> {
    line.clear();
    if input.read_until(b'\n', line)? == 0 {
        return Ok(None);
    }
    let method = line
        .split(|&b| b == b' ')
        .next()
        .unwrap_or_default()
        .to_vec();
    let (mut length, mut modern) = (0, false);
    loop {
        line.clear();
        if input.read_until(b'\n', line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let text = std::str::from_utf8(line)
            .map_err(io::Error::other)?
            .trim_end();
        if text.is_empty() {
            return Ok(Some(Head {
                method,
                length,
                modern,
            }));
        }
        let Some((name, value)) = text.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().map_err(io::Error::other)?;
            if length > MAX_BODY {
                return Err(io::Error::other("request body too large"));
            }
        } else if name.eq_ignore_ascii_case("mcp-protocol-version") {
            modern = value == "2026-07-28";
        }
    }
}
