//! Starting a server child. Every server runs in the `mcp-peers` binary, re-executed with
//! `PEERS_SERVE=<server>-<transport>` (for example `rmcp-http`); the client binaries
//! (`mcp-peers` itself for rmcp's client, `peers-ours` and `peers-bare` for the others)
//! find it through [`server_exe`]:
//!
//! * over stdio the child serves its stdin/stdout;
//! * over HTTP the child binds `127.0.0.1:0`, prints its endpoint URL on the first line of
//!   stdout and serves until its stdin closes.

use std::io::{self, BufRead};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::spec::{ServerKind, Transport};

/// The variable that turns the `mcp-peers` binary into a server.
pub const SERVE_VAR: &str = "PEERS_SERVE";

/// The variable that names the `mcp-peers` binary for a client binary (the suite sets it;
/// without it, `mcp-peers` next to the running executable).
pub const SERVER_EXE_VAR: &str = "PEERS_SERVER_EXE";

/// The name of the binary that plays every server and runs the suite.
pub const SERVER_BINARY: &str = "mcp-peers";

/// The `mcp-peers` executable, which plays every server.
pub fn server_exe() -> PathBuf {
    if let Some(path) = std::env::var_os(SERVER_EXE_VAR) {
        return PathBuf::from(path);
    }
    let this = std::env::current_exe().expect("the path of the running bench binary");
    this.with_file_name(SERVER_BINARY)
}

/// The variable that, set to `pipes` in a client process, gives rmcp's stdio server
/// `rmcp::transport::stdio_pipes()` (stdin and stdout on tokio's reactor) instead of
/// `rmcp::transport::stdio()` (every read and write on tokio's blocking thread pool).
pub const RMCP_STDIO_VAR: &str = "PEERS_RMCP_STDIO";

/// Whether rmcp's stdio server runs on `stdio_pipes()` ([`RMCP_STDIO_VAR`] is `pipes`).
pub fn rmcp_stdio_pipes() -> bool {
    std::env::var(RMCP_STDIO_VAR).is_ok_and(|v| v == "pipes")
}

/// The environment that makes a child of [`server_exe`] serve `server` over `transport`.
/// The choice of rmcp's stdio transport travels in the value, since our clients start
/// their server with nothing else from the environment.
pub fn serve_env(server: ServerKind, transport: Transport) -> (&'static str, String) {
    let pipes = server == ServerKind::Rmcp && transport == Transport::Stdio && rmcp_stdio_pipes();
    let suffix = if pipes { "-pipes" } else { "" };
    (SERVE_VAR, format!("{server}-{transport}{suffix}"))
}

/// An HTTP server child and its URL. Dropping it closes the child's stdin, which stops
/// the server, then reaps it.
#[derive(Debug)]
pub struct HttpChild {
    child: Child,
    stdin: Option<ChildStdin>,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl HttpChild {
    /// Starts `server` over HTTP and waits for its URL.
    pub fn spawn(server: ServerKind) -> io::Result<HttpChild> {
        let (var, value) = serve_env(server, Transport::Http);
        let mut child = Command::new(server_exe())
            .env(var, value)
            .env_remove("PEERS_QUIET")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("no stdout pipe"))?;
        let mut url = String::new();
        io::BufReader::new(stdout).read_line(&mut url)?;
        let url = url.trim().to_owned();
        if !url.starts_with("http://127.0.0.1:") {
            return Err(io::Error::other(format!("the server said {url:?}")));
        }
        Ok(HttpChild { child, stdin, url })
    }
}

impl Drop for HttpChild {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// Reads an HTTP head up to its empty line and returns its `Content-Length` (0 when
/// absent), or `None` when the peer closed the connection before a head. The bare client
/// and the bare server both read heads with it.
pub fn read_head(input: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Option<usize>> {
    let mut length = 0;
    for first in std::iter::once(true).chain(std::iter::repeat(false)) {
        line.clear();
        if input.read_until(b'\n', line)? == 0 {
            return if first {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        let text = std::str::from_utf8(line)
            .map_err(io::Error::other)?
            .trim_end();
        if text.is_empty() {
            return Ok(Some(length));
        }
        if let Some((name, value)) = text.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().map_err(io::Error::other)?;
        }
    }
    unreachable!("the iterator never ends")
}
