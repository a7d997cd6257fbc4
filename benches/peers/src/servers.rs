//! The server side: `mcp-peers` started with `PEERS_SERVE=<server>-<transport>` (see
//! [`mcp_peers::spawn`], which the clients start it with) serves and exits.

use std::io::{self, Write};

use mcp_peers::spawn::SERVE_VAR;

mod bare;
mod canned;
mod rmcp_echo;

/// When this process was started as a server, serves and exits; otherwise returns.
pub fn serve_if_child() {
    let Ok(what) = std::env::var(SERVE_VAR) else {
        return;
    };
    let result = match what.as_str() {
        "ours-stdio" => mcp_blocking::serve_stdio(mcp_proto::server::example::server()),
        "ours-http" => ours_http(),
        "rmcp-stdio" => rmcp_echo::serve_stdio(false),
        "rmcp-stdio-pipes" => rmcp_echo::serve_stdio(true),
        "rmcp-http" => rmcp_echo::serve_http(),
        "bare-stdio" => bare::serve_stdio(),
        "bare-http" => bare::serve_http(),
        "canned-http" => canned::serve_http(),
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
