//! Running a sans-IO [`Server`] over blocking byte streams (a process's stdin and stdout).

use mcp_io::clock;
use std::io::{self, Read, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::thread;

use mcp_proto::server::Server;

/// Serves `server` on this process's stdin and stdout until stdin ends. A client that
/// stops reading (stdout closed) ends it quietly too: at once, unless a read of stdin
/// is waiting on the helper thread (see [`serve`]), and then when stdin ends or brings
/// its next bytes; a client that exits closes both. A `requestState` codec that does not
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

/// Serves `server`: reads `input` to its end, writes every reply to `output` (flushed
/// after each batch), hands the server its deadlines ([`Server::poll_timeout`]: a task
/// outcome falling due) as they pass, then handles the end of input and writes what is
/// left.
///
/// While the server has no deadline and no call waits for deferred work (the usual
/// case), the calling thread reads `input` itself: a request goes from the read to the
/// reply with no hand-off between threads. Otherwise a blocking read could not be
/// interrupted when the deadline passes or the work completes, so the reads move to a
/// helper thread and the calling thread waits for either (a completion wakes it through
/// [`Server::set_deferred_waker`]); once neither is left and the helper's read has come
/// back, the calling thread reads again.
/// After a write error it returns once a read in progress on the helper returns.
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
pub fn serve(server: &mut Server, input: impl Read + Send, output: impl Write) -> io::Result<()> {
    mcp_io::heap::keep_freed_memory();
    let input = Mutex::new(input);
    let (ask, asked) = mpsc::channel::<()>();
    let (tx, rx) = mpsc::sync_channel::<Wake>(1);
    // Deferred tool work that completes wakes the loop as input does.
    server.set_deferred_waker(Waker::from(Arc::new(DeferredDone(tx.clone()))));
    thread::scope(|scope| {
        let input = &input;
        // The helper reads only when asked; dropping `ask` (returning) ends it.
        scope.spawn(move || {
            let mut buf = vec![0u8; READ_CHUNK];
            for () in asked {
                let chunk = match read_some(&mut *lock(input), &mut buf) {
                    Ok(n) => Ok(buf[..n].to_vec()),
                    Err(e) => Err(e),
                };
                if tx.send(Wake::Input(chunk)).is_err() {
                    return;
                }
            }
        });
        let mut run = Run {
            server,
            output,
            out: Vec::new(),
        };
        let served = run.serve(input, &ask, &rx);
        // The helper ends once it is no longer asked (after a read in progress returns).
        drop(ask);
        served
    })
}

/// What the helper read: bytes (none at the end of input) or the error.
type Chunk = io::Result<Vec<u8>>;

/// What wakes the loop while it waits: the helper's read, or deferred work completed.
enum Wake {
    Input(Chunk),
    Deferred,
}

/// The waker of deferred work: a message to the loop, unless one already waits there
/// (the loop looks for completed work on every turn anyway).
struct DeferredDone(mpsc::SyncSender<Wake>);

impl std::task::Wake for DeferredDone {
    fn wake(self: Arc<Self>) {
        let _ = self.0.try_send(Wake::Deferred);
    }
}

/// The bytes asked of `input` in one read.
const READ_CHUNK: usize = 64 * 1024;

struct Run<'s, W> {
    server: &'s mut Server,
    output: W,
    out: Vec<u8>,
}

impl<W: Write> Run<'_, W> {
    fn serve<R: Read>(
        &mut self,
        input: &Mutex<R>,
        ask: &mpsc::Sender<()>,
        rx: &mpsc::Receiver<Wake>,
    ) -> io::Result<()> {
        let mut buf = vec![0u8; READ_CHUNK];
        // Whether the helper is reading (its chunk not yet received).
        let mut helper_reads = false;
        loop {
            // Completed deferred work is due at once.
            let deadline = self.server.poll_timeout();
            // While a call waits for deferred work, its completion must be able to
            // interrupt the wait: reads go to the helper.
            let waits = self.server.has_deferred_calls();
            if deadline.is_none() && !waits && !helper_reads {
                let n = read_some(&mut *lock(input), &mut buf)?;
                if n == 0 {
                    break;
                }
                self.server.handle_input(clock::now(), &buf[..n]);
            } else {
                if !helper_reads {
                    // The helper is alive while `rx` is: a failed ask is not possible.
                    let _ = ask.send(());
                    helper_reads = true;
                }
                let chunk = match deadline {
                    None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    Some(due) => rx.recv_timeout(due.saturating_duration_since(clock::now())),
                };
                match chunk {
                    Ok(Wake::Deferred) => self.server.handle_timeout(clock::now()),
                    Ok(Wake::Input(chunk)) => {
                        helper_reads = false;
                        let bytes = chunk?;
                        if bytes.is_empty() {
                            break;
                        }
                        self.server.handle_input(clock::now(), &bytes);
                    }
                    Err(RecvTimeoutError::Timeout) => self.server.handle_timeout(clock::now()),
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            self.write_pending()?;
        }
        self.server.handle_eof(clock::now());
        self.write_pending()
    }

    fn write_pending(&mut self) -> io::Result<()> {
        self.out.clear();
        while self
            .server
            .poll_transmit(clock::now(), &mut self.out)
            .is_some()
        {}
        if !self.out.is_empty() {
            self.output.write_all(&self.out)?;
            self.output.flush()?;
        }
        Ok(())
    }
}

/// One read, retried when interrupted.
fn read_some(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match input.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
