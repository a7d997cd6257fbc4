//! The server side. The bench binary re-executes itself with `PEERS_SERVE=<server>-<transport>`
//! (for example `rmcp-http`), so no other binary has to be built or found:
//!
//! * over stdio the child serves its stdin/stdout;
//! * over HTTP the child binds `127.0.0.1:0`, prints its endpoint URL on the first line of
//!   stdout and serves until its stdin closes.

use std::io::{self, BufRead, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::spec::{ServerKind, Transport};

mod bare;
mod rmcp_echo;

pub use bare::read_head;

/// The variable that turns the bench binary into a server.
pub const SERVE_VAR: &str = "PEERS_SERVE";

fn serve_value(server: ServerKind, transport: Transport) -> String {
    format!("{server}-{transport}")
}

/// When this process was started as a server, serves and exits; otherwise returns.
pub fn serve_if_child() {
    let Ok(what) = std::env::var(SERVE_VAR) else {
        return;
    };
    let result = match what.as_str() {
        "ours-stdio" => mcp_blocking::serve_stdio(mcp_proto::server::example::server()),
        "ours-http" => ours_http(),
        "rmcp-stdio" => rmcp_echo::serve_stdio(),
        "rmcp-http" => rmcp_echo::serve_http(),
        "bare-stdio" => bare::serve_stdio(),
        "bare-http" => bare::serve_http(),
        other => Err(io::Error::other(format!("unknown server {other:?}"))),
    };
    match result {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("peers server {what}: {e}");
            std::process::exit(1)
        }
    }
}

fn ours_http() -> io::Result<()> {
    let handle = mcp_blocking::serve_http_on("127.0.0.1:0", mcp_proto::server::example::server())?;
    announce(&handle.url())?;
    wait_for_stdin_eof()?;
    handle.stop();
    Ok(())
}

/// Prints the endpoint URL as the first line of stdout.
fn announce(url: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{url}")?;
    out.flush()
}

/// Blocks until the parent closes our stdin (or dies).
fn wait_for_stdin_eof() -> io::Result<()> {
    io::copy(&mut io::stdin().lock(), &mut io::sink()).map(drop)
}

/// This very executable.
pub fn this_exe() -> std::path::PathBuf {
    std::env::current_exe().expect("the path of the running bench binary")
}

/// The environment that makes a child of this executable serve `server` over `transport`.
pub fn serve_env(server: ServerKind, transport: Transport) -> (&'static str, String) {
    (SERVE_VAR, serve_value(server, transport))
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
        let mut child = Command::new(this_exe())
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
