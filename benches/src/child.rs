//! The server side of the stdio benches. A bench binary re-executes itself with
//! `MCP_BENCH_SERVE` set, so no other binary has to be built or found:
//!
//! * `MCP_BENCH_SERVE=example` — `mcp_blocking::serve_stdio(example::server())`, the
//!   bundled example server on stdin/stdout;
//! * `MCP_BENCH_SERVE=bare` — the reference point of `../shared/performance.md`: a bare
//!   JSON-RPC echo with `serde_json` and no MCP logic (read a line, parse it, answer
//!   `{"content":[{"type":"text","text":…}]}`), single-threaded on locked stdio.
//!
//! [`serve_if_child`] must be the first thing a bench's `main` does.

use std::io::{self, BufRead, Write};
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
}

impl ServerKind {
    fn value(self) -> &'static str {
        match self {
            ServerKind::Example => "example",
            ServerKind::Bare => "bare",
        }
    }
}

/// When this process was started as a bench's server, serves stdin/stdout and exits;
/// otherwise returns at once.
pub fn serve_if_child() {
    let result = match std::env::var(SERVE_VAR).as_deref() {
        Ok("example") => mcp_blocking::serve_stdio(mcp_proto::server::example::server()),
        Ok("bare") => bare_echo_server(),
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
