//! Running a sans-IO [`Server`] over blocking byte streams (a process's stdin and stdout).

use mcp_io::clock;
use std::io::{self, Read, Write};

use mcp_proto::server::Server;

/// Serves `server` on this process's stdin and stdout until stdin ends. A client that
/// goes away (stdout closed) ends it quietly too. A `requestState` codec that does not
/// protect what it seals is first replaced with a sealing one under a fresh random key
/// ([`Server::seal_request_states`]).
///
/// # Errors
/// Any other read or write error; the operating system having no random numbers.
pub fn serve_stdio(mut server: Server) -> io::Result<()> {
    mcp_io::auth::seal_server_states(&mut server)?;
    let stdin = io::stdin();
    let stdout = io::stdout();
    match serve(&mut server, stdin.lock(), stdout.lock()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Serves `server`: reads `input` to its end, writes every reply to `output` (flushed
/// after each batch), then handles the end of input and writes what is left.
///
/// ```
/// use mcp_proto::server::example;
///
/// let mut server = example::server();
/// let input = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
/// let mut output = Vec::new();
/// mcp_blocking::serve(&mut server, &input[..], &mut output).unwrap();
/// // The line has no newline, so it is dropped at the end of input; nothing was answered.
/// assert!(output.is_empty());
///
/// let mut server = example::server();
/// let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
/// mcp_blocking::serve(&mut server, &input[..], &mut output).unwrap();
/// assert_eq!(output, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
/// ```
///
/// # Errors
/// Any read or write error.
pub fn serve(server: &mut Server, mut input: impl Read, mut output: impl Write) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        server.handle_input(clock::now(), &buf[..n]);
        write_pending(server, &mut out, &mut output)?;
    }
    server.handle_eof(clock::now());
    write_pending(server, &mut out, &mut output)
}

fn write_pending(
    server: &mut Server,
    out: &mut Vec<u8>,
    output: &mut impl Write,
) -> io::Result<()> {
    out.clear();
    while server.poll_transmit(clock::now(), out).is_some() {}
    if !out.is_empty() {
        output.write_all(out)?;
        output.flush()?;
    }
    Ok(())
}
