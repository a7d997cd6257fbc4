//! Running a sans-IO [`Server`] over blocking byte streams (a process's stdin and stdout).

use mcp_io::clock;
use std::io::{self, Read, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;

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
    let stdout = io::stdout();
    match serve(&mut server, io::stdin(), stdout.lock()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Serves `server`: reads `input` to its end (on a thread of its own), writes every reply
/// to `output` (flushed after each batch), hands the server its deadlines
/// ([`Server::poll_timeout`]: a task outcome falling due) as they pass, then handles the
/// end of input and writes what is left. After a write error it returns once the reading
/// thread's current read returns.
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
pub fn serve(
    server: &mut Server,
    input: impl Read + Send,
    mut output: impl Write,
) -> io::Result<()> {
    mcp_io::heap::keep_freed_memory();
    let (tx, rx) = mpsc::sync_channel::<io::Result<Vec<u8>>>(4);
    thread::scope(|scope| {
        // Owned here: returning drops it, so a reader blocked on a full channel stops.
        let rx = rx;
        scope.spawn(move || read_all(input, &tx));
        let mut out = Vec::new();
        loop {
            let chunk = match server.poll_timeout() {
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(due) => rx.recv_timeout(due.saturating_duration_since(clock::now())),
            };
            match chunk {
                Ok(Ok(bytes)) => server.handle_input(clock::now(), &bytes),
                Ok(Err(e)) => return Err(e),
                Err(RecvTimeoutError::Timeout) => server.handle_timeout(clock::now()),
                Err(RecvTimeoutError::Disconnected) => break,
            }
            write_pending(server, &mut out, &mut output)?;
        }
        server.handle_eof(clock::now());
        write_pending(server, &mut out, &mut output)
    })
}

/// Reads `input` to its end, each chunk sent to `tx`; stops at the end, at an error
/// (sent), or when nobody receives any more.
fn read_all(mut input: impl Read, tx: &mpsc::SyncSender<io::Result<Vec<u8>>>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let sent = match input.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => tx.send(Ok(buf[..n].to_vec())),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        if sent.is_err() {
            return;
        }
    }
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
