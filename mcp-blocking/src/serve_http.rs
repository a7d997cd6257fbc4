//! Running a sans-IO [`Server`] as a Streamable HTTP endpoint on std blocking sockets.
//!
//! One accept thread and one thread per connection. Every decision is made by the
//! machines of `mcp_proto::server::http`: [`HttpEndpoint`] answers requests (the threads
//! share it behind a mutex; tool handlers are synchronous, so each request holds the lock
//! for as long as its handler runs), [`HttpHost`] admits connections, and one
//! [`HttpConnection`] per connection decides what to write, when to read and when to
//! close. The threads only accept, read, write, wait and wake:
//!
//! * **Accepting.** At most [`HttpServeOptions::max_connections`] connections are served
//!   at once; one more is answered 503 with `Retry-After: 1` on its own thread, and when
//!   as many (at least 16) are already being refused or closed, it is closed at once.
//! * **Reading** happens only while the machine wants input, each read bounded by its
//!   next deadline: a request head must be complete within
//!   [`HttpServeOptions::head_timeout`], a body must keep up
//!   [`HttpServeOptions::min_body_bytes_per_sec`], and a kept-alive connection with no
//!   request for [`HttpServeOptions::idle_timeout`] is closed. Bytes do not reset these
//!   deadlines, so clients dripping bytes cannot hold the server's connections.
//!   Keep-alive, pipelined requests (answered in order), `100 Continue`, `Connection:
//!   close` and half-closed clients (answered, then closed) are the machine's business
//!   too.
//! * **Open streams.** A request whose answer is not ready (a tool that never answers, a
//!   legacy call waiting for the client's input) gets an SSE response that stays open.
//!   Its thread reads nothing meanwhile (pipelined requests wait in the socket) and
//!   sleeps on a condition variable; whichever thread fed the endpoint the input that
//!   produced output for the stream ([`HttpEndpoint::poll_ready`]) wakes it, so output
//!   goes out at once, with no polling interval. Between wake-ups it writes the SSE
//!   comments the machine asks for (every [`HttpServeOptions::sse_keepalive`]) and looks
//!   at the socket without reading to notice a client that went away, which cancels the
//!   request (or, for a legacy session's stream, detaches it until the client resumes).
//!   A legacy session's `GET` stream and a stream resumed with `Last-Event-ID` are open
//!   streams like any other: the endpoint decides what they carry.
//! * **Time.** The endpoint's own deadlines (a task outcome falling due, which ends a held
//!   `tasks/result` and notifies the task's owner) are handed to it by a watcher thread
//!   within [`POLL`] of falling due.
//! * **Stopping.** [`HttpServerHandle::stop`] (or setting the flag from
//!   [`HttpServerHandle::stop_flag`]) makes every thread finish within well under a
//!   second (open streams are cancelled; a write blocked on a client that stopped reading
//!   gives up after `idle_timeout`); `stop` then joins them all. Dropping the handle stops
//!   the server too.
//! * **Binding.** Only what the caller binds is served. Bind loopback
//!   (`127.0.0.1:PORT`) unless the server is meant to be reachable from elsewhere; the
//!   endpoint refuses browser `Origin`s other than loopback ones either way.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use mcp_io::clock;

use mcp_proto::server::Server;
pub use mcp_proto::server::http::HttpServeOptions;
use mcp_proto::server::http::{HttpConnection, HttpEndpoint, HttpHost, HttpTransmit};

/// How often blocked threads look at the stop flag. Never a delay for data: reads return
/// as bytes arrive, accepts as connections do, and open streams are woken.
const POLL: Duration = Duration::from_millis(20);
/// How long [`HttpServerHandle::stop`] waits for the `complete` results of the listens it
/// ends to be written.
const GRACE: Duration = Duration::from_millis(500);
/// How often an open stream with nothing to send checks that its client is still there.
const WATCH: Duration = Duration::from_millis(250);
/// The read buffer of a connection: a 64 KiB request arrives in one or two reads.
const READ_BUF: usize = 64 * 1024;

/// A running HTTP server. Dropping it stops the server (as [`HttpServerHandle::stop`]).
pub struct HttpServerHandle {
    local_addr: SocketAddr,
    path: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HttpServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServerHandle")
            .field("local_addr", &self.local_addr)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl HttpServerHandle {
    /// The address the listener is bound to (with the real port when 0 was asked for).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint URL, `http://127.0.0.1:PORT/mcp` (IPv6 hosts in brackets).
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}{}", self.local_addr, self.path)
    }

    /// Runs `f` on the endpoint, under its lock, then wakes the streams it gave output
    /// to: how an application tells its legacy sessions something outside any request,
    /// on their `GET` streams ([`HttpEndpoint::notify_listeners`],
    /// [`HttpEndpoint::resource_updated`]).
    pub fn with_endpoint<R>(&self, f: impl FnOnce(&mut HttpEndpoint) -> R) -> R {
        let mut endpoint = self.shared.endpoint();
        let result = f(&mut endpoint);
        self.shared.wake_ready(&mut endpoint);
        result
    }

    /// The flag that stops the server when set (for signal handlers and the like).
    #[must_use]
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// Stops accepting, ends every connection, and waits for all threads. Open 2026-07-28
    /// listens first get their `complete` result (a graceful end; up to half a second to
    /// write it); other open streams are cancelled. Setting the
    /// [`HttpServerHandle::stop_flag`] stops without that goodbye.
    pub fn stop(mut self) {
        self.shutdown();
    }

    /// Waits until the server stops (someone set [`HttpServerHandle::stop_flag`]); for a
    /// process that serves until it is killed, forever.
    pub fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    fn shutdown(&mut self) {
        if self.thread.is_some() {
            self.end_listens();
        }
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl HttpServerHandle {
    /// Ends the open 2026-07-28 listens gracefully (each gets its `complete` result,
    /// [`Server::end_subscriptions`]) and gives their connections up to [`GRACE`] to
    /// write it before the server stops.
    fn end_listens(&self) {
        let (before, ended) = self.with_endpoint(|e| {
            let before = e.open_streams();
            (
                before,
                e.update_server(clock::now(), Server::end_subscriptions),
            )
        });
        if ended == 0 {
            return;
        }
        let deadline = std::time::Instant::now() + GRACE;
        while self.with_endpoint(|e| e.open_streams()) > before.saturating_sub(ended)
            && std::time::Instant::now() < deadline
        {
            thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for HttpServerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Serves `server` at `/mcp` on `listener` with default options, on background threads.
///
/// ```no_run
/// use std::net::TcpListener;
/// use mcp_proto::server::example;
///
/// let listener = TcpListener::bind("127.0.0.1:0")?;
/// let handle = mcp_blocking::serve_http(listener, example::server())?;
/// println!("serving {}", handle.url());
/// handle.wait();
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
/// When the listener cannot be made non-blocking or has no local address.
pub fn serve_http(listener: TcpListener, server: Server) -> io::Result<HttpServerHandle> {
    serve_http_with(listener, server, HttpServeOptions::default())
}

/// Binds `addr` and serves `server` there with default options. Bind a loopback address
/// unless remote clients are intended.
///
/// # Errors
/// When binding fails.
pub fn serve_http_on(addr: impl ToSocketAddrs, server: Server) -> io::Result<HttpServerHandle> {
    serve_http(TcpListener::bind(addr)?, server)
}

/// [`serve_http`] with options. A `requestState` codec that does not protect what it
/// seals is first replaced with a sealing one under a fresh random key
/// ([`Server::seal_request_states`]); bring a
/// [`SealedStateCodec`](mcp_proto::server::SealedStateCodec) with a shared key ring to
/// let several instances open each other's states.
///
/// # Errors
/// When the listener cannot be made non-blocking or has no local address, or the
/// operating system has no random numbers.
pub fn serve_http_with(
    listener: TcpListener,
    server: Server,
    options: HttpServeOptions,
) -> io::Result<HttpServerHandle> {
    serve_http_setup(listener, server, options, |_| {})
}

/// [`serve_http_with`], with `setup` run on the endpoint before the first connection is
/// accepted, so that nothing is served without it: how a server is put behind a
/// [`RequestGate`](mcp_proto::server::http::RequestGate) ([`HttpEndpoint::set_gate`]: bearer tokens, other paths of its origin
/// such as metadata documents) and how stores shared by several server processes are put
/// in place ([`HttpEndpoint::set_session_store`], [`HttpEndpoint::set_event_store`]; the
/// `mcp-redis` crate has Redis ones). The stores are called under the endpoint's lock,
/// so a store doing network IO holds every connection's thread for that long.
///
/// # Errors
/// As [`serve_http_with`].
pub fn serve_http_setup(
    listener: TcpListener,
    mut server: Server,
    options: HttpServeOptions,
    setup: impl FnOnce(&mut HttpEndpoint),
) -> io::Result<HttpServerHandle> {
    mcp_io::heap::keep_freed_memory();
    mcp_io::auth::seal_server_states(&mut server)?;
    listener.set_nonblocking(true)?;
    let local_addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let path = options.endpoint.path.clone();
    let seed = mcp_io::auth::random_seed()?;
    let mut config = options.endpoint.clone();
    config.restrict_hosts_for(local_addr.ip());
    let mut endpoint = HttpEndpoint::with_sessions(server, config, &seed);
    setup(&mut endpoint);
    let shared = Shared {
        endpoint: Mutex::new(endpoint),
        output: Condvar::new(),
        stop: Arc::clone(&stop),
        host: HttpHost::for_options(&options),
    };
    let shared = Arc::new(shared);
    let accepting = Arc::clone(&shared);
    let thread = thread::Builder::new()
        .name("mcp-http-accept".to_owned())
        .spawn(move || accept_loop(&listener, local_addr, accepting))?;
    Ok(HttpServerHandle {
        local_addr,
        path,
        stop,
        thread: Some(thread),
        shared,
    })
}

/// What every thread of one server shares.
struct Shared {
    endpoint: Mutex<HttpEndpoint>,
    /// Signalled when an open stream may have output (or the server stops).
    output: Condvar,
    stop: Arc<AtomicBool>,
    host: HttpHost,
}

impl Shared {
    fn endpoint(&self) -> MutexGuard<'_, HttpEndpoint> {
        // A panicking tool handler must not take the whole server down with it.
        self.endpoint.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the threads of the streams the endpoint gave output to.
    fn wake_ready(&self, endpoint: &mut HttpEndpoint) {
        if endpoint.take_ready() {
            self.output.notify_all();
        }
    }

    /// Hands the endpoint the time when its next deadline passed (a task outcome due, a
    /// held `tasks/result` to answer), and wakes the streams that got output.
    fn tick(&self) {
        let mut endpoint = self.endpoint();
        if endpoint.handle_due(clock::now()) {
            self.wake_ready(&mut endpoint);
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// Accepts in blocking mode, so a connection is served the moment it arrives; a small
/// watcher hands the endpoint its deadlines (every [`POLL`]) and wakes the accept with a
/// connection of its own once the stop flag is set.
fn accept_loop(listener: &TcpListener, local_addr: SocketAddr, shared: Arc<Shared>) {
    if listener.set_nonblocking(false).is_err() {
        return;
    }
    let watcher = {
        let shared = Arc::clone(&shared);
        thread::Builder::new()
            .name("mcp-http-stop".to_owned())
            .spawn(move || {
                while !shared.stopping() {
                    thread::sleep(POLL);
                    shared.tick();
                }
                shared.output.notify_all();
                let mut wake = local_addr;
                if wake.ip().is_unspecified() {
                    wake.set_ip(match wake {
                        SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                        SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                    });
                }
                let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
            })
    };
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    while !shared.stopping() {
        match listener.accept() {
            Ok(_) if shared.stopping() => break,
            Ok((stream, _)) => {
                workers.retain(|w| !w.is_finished());
                // None: too many connections on their way out already; drop this one.
                let Some(machine) = shared.host.accept(clock::now()) else {
                    continue;
                };
                let shared = Arc::clone(&shared);
                let spawned = thread::Builder::new()
                    .name("mcp-http-conn".to_owned())
                    .spawn(move || Connection::new(stream, machine, &shared).run());
                if let Ok(worker) = spawned {
                    workers.push(worker);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => thread::sleep(POLL),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Out of descriptors and the like: back off instead of spinning.
            Err(_) => thread::sleep(POLL * 5),
        }
    }
    for worker in workers {
        let _ = worker.join();
    }
    if let Ok(watcher) = watcher {
        let _ = watcher.join();
    }
}

/// One client connection: its socket and its machine. Dropping it closes the socket and
/// gives the machine's place back to the host.
struct Connection<'a> {
    stream: TcpStream,
    machine: HttpConnection,
    shared: &'a Shared,
    buf: Vec<u8>,
    out: Vec<u8>,
}

impl<'a> Connection<'a> {
    fn new(stream: TcpStream, machine: HttpConnection, shared: &'a Shared) -> Self {
        Connection {
            stream,
            machine,
            shared,
            buf: vec![0; READ_BUF],
            out: Vec::new(),
        }
    }

    fn run(mut self) {
        if self.setup().is_err() {
            return;
        }
        loop {
            let now = clock::now();
            if self.shared.stopping() {
                self.machine.close(now);
            }
            self.machine.handle_due(now);
            match self.transmit(now) {
                Some(HttpTransmit::Write { .. }) => {
                    if self.stream.write_all(&self.out).is_err() {
                        self.machine.handle_transport_error(clock::now());
                    }
                }
                Some(HttpTransmit::Shutdown) => {
                    let _ = self.stream.shutdown(Shutdown::Write);
                }
                // Close (or anything newer this adapter cannot do).
                Some(_) => return,
                None if self.machine.stream().is_some() => self.watch(),
                None if self.machine.wants_input() => self.read(),
                None => thread::sleep(self.until_due(POLL)),
            }
        }
    }

    fn setup(&self) -> io::Result<()> {
        self.stream.set_nonblocking(false)?;
        self.stream.set_nodelay(true)?;
        let send_timeout = self.machine.config().send_timeout;
        self.stream
            .set_write_timeout(Some(send_timeout.max(Duration::from_millis(1))))
    }

    /// The machine's next transmit, taken under the endpoint's lock. With a stream open
    /// and nothing to write, it sleeps on the condition variable in the same critical
    /// section (so no wake-up is lost) until another thread gives the stream output,
    /// the next deadline, or time to look at the socket.
    fn transmit(&mut self, now: mcp_proto::Instant) -> Option<HttpTransmit> {
        self.out.clear();
        let mut endpoint = self.shared.endpoint();
        let transmit = self
            .machine
            .poll_transmit(now, &mut endpoint, &mut self.out);
        self.shared.wake_ready(&mut endpoint);
        if transmit.is_none() && self.machine.stream().is_some() && !self.shared.stopping() {
            let wait = self.until_due(WATCH);
            let _ = self.shared.output.wait_timeout(endpoint, wait);
        }
        transmit
    }

    /// Reads once, for at most [`POLL`] or until the machine's next deadline.
    fn read(&mut self) {
        let _ = self.stream.set_read_timeout(Some(self.until_due(POLL)));
        match self.stream.read(&mut self.buf) {
            Ok(0) => self.machine.handle_eof(clock::now()),
            Ok(n) => self.machine.handle_input(clock::now(), &self.buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => self.machine.handle_transport_error(clock::now()),
        }
    }

    /// During an open stream: whether the client closed the connection or it failed,
    /// looked at without consuming anything (bytes waiting are pipelined requests).
    fn watch(&mut self) {
        let mut probe = [0u8; 1];
        let peeked = self
            .stream
            .set_nonblocking(true)
            .and_then(|()| self.stream.peek(&mut probe));
        let restored = self.stream.set_nonblocking(false);
        let now = clock::now();
        match (peeked, restored) {
            (Ok(0), _) => self.machine.handle_eof(now),
            (Ok(_), Ok(())) => {}
            (Err(e), Ok(()))
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            _ => self.machine.handle_transport_error(now),
        }
    }

    /// The time until the machine's next deadline, at most `cap` (at least 1 ms: a zero
    /// socket timeout means none).
    fn until_due(&self, cap: Duration) -> Duration {
        self.machine.until_due(clock::now(), cap)
    }
}
