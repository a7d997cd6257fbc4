//! The server side of the stdio and HTTP round-trip benches. A bench binary re-executes itself with
//! `MCP_BENCH_SERVE` set, so no other binary has to be built or found:
//!
//! * `MCP_BENCH_SERVE=example` — `mcp_blocking::serve_stdio(example::server())`, the
//!   bundled example server on stdin/stdout;
//! * `MCP_BENCH_SERVE=bare` — the reference point of "Targets" in `benches/README.md`: a bare
//!   JSON-RPC echo with `serde_json` and no MCP logic (read a line, parse it, answer
//!   `{"content":[{"type":"text","text":…}]}`), single-threaded on locked stdio;
//! * `MCP_BENCH_SERVE=http` — `mcp_blocking::serve_http` with `example::server()` on
//!   `127.0.0.1:0`: the child prints its endpoint URL on the first line of stdout, then
//!   serves until its stdin closes ([`HttpServerChild`]);
//! * `MCP_BENCH_SERVE=http-bare` — the HTTP counterpart of `bare`: a keep-alive HTTP/1.1
//!   server with one thread per connection that reads a `Content-Length` POST, parses it
//!   with `serde_json` and answers `application/json`, no MCP logic ([`BareHttpClient`] is
//!   its client).
//!
//! [`serve_if_child`] must be the first thing a bench's `main` does.

use std::io::{self, BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// The variable that turns a bench binary into a server.
pub const SERVE_VAR: &str = "MCP_BENCH_SERVE";

/// Which server the child runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// The bundled example server on `mcp_blocking::serve_stdio`.
    Example,
    /// A bare `serde_json` echo with no MCP logic.
    Bare,
    /// The bundled example server on `mcp_blocking::serve_http`, loopback.
    Http,
    /// A bare HTTP/1.1 `serde_json` echo with no MCP logic, loopback.
    HttpBare,
}

impl ServerKind {
    fn value(self) -> &'static str {
        match self {
            ServerKind::Example => "example",
            ServerKind::Bare => "bare",
            ServerKind::Http => "http",
            ServerKind::HttpBare => "http-bare",
        }
    }
}

/// When this process was started as a bench's server, serves stdin/stdout and exits;
/// otherwise returns at once.
pub fn serve_if_child() {
    let result = match std::env::var(SERVE_VAR).as_deref() {
        Ok("example") => mcp_blocking::serve_stdio(mcp_proto::server::example::server()),
        Ok("bare") => bare_echo_server(),
        Ok("http") => example_http_server(),
        Ok("http-bare") => bare_http_server(),
        _ => return,
    };
    match result {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("bench server: {e}");
            std::process::exit(1)
        }
    }
}

/// This very executable.
///
/// # Panics
/// When the path of the running executable cannot be read.
#[must_use]
pub fn this_exe() -> PathBuf {
    std::env::current_exe().expect("the path of the running bench binary")
}

/// The child as an `mcp-blocking` command.
#[must_use]
pub fn blocking_command(kind: ServerKind) -> mcp_blocking::StdioCommand {
    mcp_blocking::StdioCommand::new(this_exe()).env(SERVE_VAR, kind.value())
}

/// The child as an `mcp-smol` command.
#[must_use]
pub fn smol_command(kind: ServerKind) -> mcp_smol::StdioCommand {
    mcp_smol::StdioCommand::new(this_exe()).env(SERVE_VAR, kind.value())
}

fn bare_echo_server() -> io::Result<()> {
    let mut input = io::stdin().lock();
    let mut output = io::stdout().lock();
    let mut line = Vec::new();
    let mut out = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let request: Value = serde_json::from_slice(&line)?;
        let text = request["params"]["arguments"]["text"]
            .as_str()
            .unwrap_or_default();
        let response = json!({
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"content": [{"type": "text", "text": text}]},
        });
        out.clear();
        serde_json::to_writer(&mut out, &response)?;
        out.push(b'\n');
        output.write_all(&out)?;
        output.flush()?;
    }
}

/// The client half of the bare reference pair: one thread, blocking pipes, `serde_json`
/// both ways, no MCP logic (no handshake, no ids to track beyond a check).
#[derive(Debug)]
pub struct BareClient {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: io::BufReader<ChildStdout>,
    next_id: i64,
    out: Vec<u8>,
    line: Vec<u8>,
}

impl BareClient {
    /// Starts the bare echo server.
    ///
    /// # Errors
    /// When the child cannot be started.
    pub fn spawn() -> io::Result<BareClient> {
        let mut child = Command::new(this_exe())
            .env_clear()
            .env(SERVE_VAR, ServerKind::Bare.value())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(io::BufReader::new);
        let Some(stdout) = stdout else {
            return Err(io::Error::other("no stdout pipe"));
        };
        Ok(BareClient {
            child,
            stdin,
            stdout,
            next_id: 0,
            out: Vec::new(),
            line: Vec::new(),
        })
    }

    /// One `tools/call echo` round trip; returns the length of the echoed text.
    ///
    /// # Errors
    /// Pipe errors, or an answer that is not the expected one.
    pub fn echo(&mut self, text: &str) -> io::Result<usize> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}},
        });
        self.out.clear();
        serde_json::to_writer(&mut self.out, &request)?;
        self.out.push(b'\n');
        let Some(stdin) = &mut self.stdin else {
            return Err(io::Error::other("closed"));
        };
        stdin.write_all(&self.out)?;
        self.line.clear();
        if self.stdout.read_until(b'\n', &mut self.line)? == 0 {
            return Err(io::Error::other("the bare server exited"));
        }
        let response: Value = serde_json::from_slice(&self.line)?;
        if response["id"] != id {
            return Err(io::Error::other("answer to another id"));
        }
        let text = response["result"]["content"][0]["text"]
            .as_str()
            .ok_or_else(|| io::Error::other("no text in the answer"))?;
        Ok(text.len())
    }
}

impl Drop for BareClient {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// `MCP_BENCH_SERVE=http`: the example server over HTTP until stdin closes.
fn example_http_server() -> io::Result<()> {
    let handle = mcp_blocking::serve_http_on("127.0.0.1:0", mcp_proto::server::example::server())?;
    announce(&handle.url())?;
    io::copy(&mut io::stdin().lock(), &mut io::sink())?;
    handle.stop();
    Ok(())
}

/// Prints the endpoint URL as the first line of stdout.
fn announce(url: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{url}")?;
    out.flush()
}

/// `MCP_BENCH_SERVE=http-bare`: a bare JSON-RPC echo over HTTP/1.1 until stdin closes.
fn bare_http_server() -> io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    announce(&format!("http://{}/mcp", listener.local_addr()?))?;
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            std::thread::spawn(move || {
                if let Err(e) = bare_http_connection(stream) {
                    eprintln!("bare http server: {e}");
                }
            });
        }
    });
    io::copy(&mut io::stdin().lock(), &mut io::sink())?;
    Ok(())
}

/// Reads a head up to its empty line and returns the `Content-Length` (0 when absent),
/// or `None` at a clean end of input.
fn read_head(input: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Option<usize>> {
    let mut length = 0;
    let mut first = true;
    loop {
        line.clear();
        if input.read_until(b'\n', line)? == 0 {
            return if first {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        first = false;
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if text.is_empty() {
            return Ok(Some(length));
        }
        if let Some((name, value)) = text.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value
                .trim()
                .parse()
                .map_err(|_| io::Error::other("bad Content-Length"))?;
        }
    }
}

fn bare_http_connection(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut output = stream.try_clone()?;
    let mut input = io::BufReader::new(stream);
    let mut line = Vec::new();
    let mut body = Vec::new();
    let mut out = Vec::new();
    while let Some(length) = read_head(&mut input, &mut line)? {
        body.resize(length, 0);
        input.read_exact(&mut body)?;
        let request: Value = serde_json::from_slice(&body)?;
        let text = request["params"]["arguments"]["text"]
            .as_str()
            .unwrap_or_default();
        let response = json!({
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"content": [{"type": "text", "text": text}]},
        });
        let json = serde_json::to_vec(&response)?;
        out.clear();
        write!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            json.len()
        )?;
        out.extend_from_slice(&json);
        output.write_all(&out)?;
    }
    Ok(())
}

/// An HTTP server child ([`ServerKind::Http`] or [`ServerKind::HttpBare`]) and its URL.
/// Dropping it closes the child's stdin, which stops the server, and reaps it.
#[derive(Debug)]
pub struct HttpServerChild {
    child: Child,
    stdin: Option<ChildStdin>,
    url: String,
}

impl HttpServerChild {
    /// Starts the server and waits for its URL.
    ///
    /// # Errors
    /// When the child cannot be started or does not announce its URL.
    pub fn spawn(kind: ServerKind) -> io::Result<HttpServerChild> {
        let mut child = Command::new(this_exe())
            .env_clear()
            .env(SERVE_VAR, kind.value())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take();
        let Some(stdout) = child.stdout.take() else {
            return Err(io::Error::other("no stdout pipe"));
        };
        let mut url = String::new();
        io::BufReader::new(stdout).read_line(&mut url)?;
        let url = url.trim().to_owned();
        if !url.starts_with("http://") {
            return Err(io::Error::other(format!("the server said {url:?}")));
        }
        Ok(HttpServerChild { child, stdin, url })
    }

    /// The endpoint URL, `http://127.0.0.1:PORT/mcp`.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for HttpServerChild {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// The client half of the bare HTTP pair: one keep-alive connection, one thread,
/// `serde_json` both ways, a hand-written HTTP/1.1 framing (`Content-Length` only).
#[derive(Debug)]
pub struct BareHttpClient {
    output: TcpStream,
    input: io::BufReader<TcpStream>,
    path: String,
    host: String,
    next_id: i64,
    out: Vec<u8>,
    line: Vec<u8>,
    body: Vec<u8>,
}

impl BareHttpClient {
    /// Connects to `url` (`http://HOST:PORT/PATH`).
    ///
    /// # Errors
    /// When the URL is not of that form or the connection fails.
    pub fn connect(url: &str) -> io::Result<BareHttpClient> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| io::Error::other("not an http URL"))?;
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let output = TcpStream::connect(host)?;
        output.set_nodelay(true)?;
        let input = io::BufReader::new(output.try_clone()?);
        Ok(BareHttpClient {
            output,
            input,
            path: if path.is_empty() { "/" } else { path }.to_owned(),
            host: host.to_owned(),
            next_id: 0,
            out: Vec::new(),
            line: Vec::new(),
            body: Vec::new(),
        })
    }

    /// One `tools/call echo` round trip; returns the length of the echoed text.
    ///
    /// # Errors
    /// Socket errors, or an answer that is not the expected one.
    pub fn echo(&mut self, text: &str) -> io::Result<usize> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}},
        });
        let json = serde_json::to_vec(&request)?;
        self.out.clear();
        write!(
            self.out,
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
            self.path,
            self.host,
            json.len()
        )?;
        self.out.extend_from_slice(&json);
        self.output.write_all(&self.out)?;
        let Some(length) = read_head(&mut self.input, &mut self.line)? else {
            return Err(io::Error::other("the bare server closed the connection"));
        };
        self.body.resize(length, 0);
        self.input.read_exact(&mut self.body)?;
        let response: Value = serde_json::from_slice(&self.body)?;
        if response["id"] != id {
            return Err(io::Error::other("answer to another id"));
        }
        let text = response["result"]["content"][0]["text"]
            .as_str()
            .ok_or_else(|| io::Error::other("no text in the answer"))?;
        Ok(text.len())
    }
}
