//! Running a sans-IO [`Server`] as a Streamable HTTP endpoint on std blocking sockets.
//!
//! One thread per connection, the one that accepted it: the threads with no connection
//! (at most [`IDLE_WORKERS`]) block in `accept` on the listener, and the operating system
//! wakes one of them per connection. The last of them to take a connection starts
//! another before it serves it, so the listener is accepted from while every thread is
//! busy; a thread whose connection is over accepts again. A client that opens a
//! connection per request (rmcp's client does) costs neither a thread started per
//! request nor a hand-off from an accepting thread to a serving one: one wake-up per
//! connection, the accept's. Every decision is made by the
//! machines of `mcp_proto::server::http`: [`HttpEndpoint`] answers requests (the threads
//! share it behind a mutex; tool handlers are synchronous, so each request holds the lock
//! for as long as its handler runs; a handler with slow work defers it, see
//! `mcp_proto::server::deferred`), [`HttpHost`] admits connections, and one
//! [`HttpConnection`] per connection decides what to write, when to read and when to
//! close. The threads only accept, read, write, wait and wake:
//!
//! * **Accepting.** At most [`HttpServeOptions::max_connections`] connections are served
//!   at once; one more takes the place of a connection that has only waited for (or
//!   dripped) a request for a second or more ([`HttpHost`] evicts it, and wakes its
//!   thread by ending its socket's reading), else it is answered 503 with
//!   `Retry-After: 1` on its own thread, and when as many (at least 16) are already being
//!   refused or closed, it is closed at once.
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
//!   comments the machine asks for (every [`HttpServeOptions::sse_keepalive`]). A client
//!   that went away cancels the request (or, for a legacy session's stream, detaches it
//!   until the client resumes); to notice it while the stream's thread sleeps, a small
//!   second thread per open stream (`mcp-http-peek`) blocks in a peek at the socket,
//!   which consumes nothing, and wakes the stream when it returns (the client sent,
//!   left, or the connection failed); the stream's thread then looks at the socket
//!   itself. A legacy session's `GET` stream and a stream resumed with `Last-Event-ID`
//!   are open streams like any other: the endpoint decides what they carry.
//! * **Time.** The endpoint's own deadlines (a task outcome falling due, which ends a held
//!   `tasks/result` and notifies the task's owner) are handed to it by a timer thread
//!   that sleeps on a condition variable exactly until the next one
//!   ([`HttpEndpoint::arm_timer`]), or until woken when there is none. Whichever thread
//!   changes the endpoint so that a deadline falls due sooner (a request creating a task,
//!   an application's [`HttpServerHandle::with_endpoint`]) wakes it
//!   ([`HttpEndpoint::take_timer_moved`]), under the endpoint's lock, so no change is
//!   missed and nothing polls.
//! * **Deferred work.** A completer that completes rings a bell (a flag and a condition
//!   variable under a lock of their own, never the endpoint's: the completing thread may
//!   hold that one); a thread of its own (`mcp-http-deferred`) waits on the bell, hands
//!   the endpoint the completed work ([`HttpEndpoint::handle_deferred`]) and wakes the
//!   streams that got output.
//! * **Stopping.** [`HttpServerHandle::stop`] (or setting the flag from
//!   [`HttpServerHandle::stop_flag`]) makes every thread finish within well under a
//!   second, and `stop` then joins them all; dropping the handle stops the server too.
//!   Nothing looks at a stop flag periodically to get there: `stop` wakes the timer and
//!   every open stream on their condition variables, ends every connection
//!   (`shutdown(Both)` on a clone of its socket that the server keeps, which returns a
//!   blocked read at once, and a write blocked on a client that stopped reading too),
//!   and wakes each thread blocked in `accept` with a connection to the listener of its
//!   own. Open streams are cancelled. The flag alone notifies no one (it is a bare
//!   `AtomicBool`), so once [`HttpServerHandle::stop_flag`] has handed it out, the timer
//!   thread also wakes every [`FLAG_CHECK`] to look at it, and then stops the server as
//!   `stop` does: the one periodic wake-up of an idle server, and only of one whose
//!   application asked for the flag.
//! * **What still looks periodically.** Besides a handed-out stop flag, only an open
//!   stream whose client already sent its next request (pipelined bytes waiting in the
//!   socket make every peek return at once, and hide whether the client is still there
//!   behind them) looks at its socket every [`WATCH`]; as does one whose peeking thread
//!   could not be started. Neither delays any data. A write blocked on a client that
//!   does not read returns every quarter of the send timeout ([`mcp_proto::server::http::SEND_SLICES`]) to see
//!   whether it made progress since. And `stop` itself, for at most half a
//!   second, looks every 5 ms whether the listens it ended have written their `complete`
//!   result.
//! * **Binding.** Only what the caller binds is served. Bind loopback
//!   (`127.0.0.1:PORT`) unless the server is meant to be reachable from elsewhere; the
//!   endpoint refuses browser `Origin`s other than loopback ones either way.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::mem;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Wake, Waker};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use mcp_io::clock;

use mcp_proto::server::Server;
pub use mcp_proto::server::http::HttpServeOptions;
use mcp_proto::server::http::{
    HttpConnection, HttpEndpoint, HttpHost, HttpTransmit, WriteProgress,
};

/// How often the timer thread looks at the stop flag, once [`HttpServerHandle::stop_flag`]
/// has handed it out (a bare flag set by someone else wakes no thread); never before.
const FLAG_CHECK: Duration = Duration::from_millis(250);
/// How long the accept loop waits after an accept error (out of descriptors and the
/// like) before accepting again, instead of spinning.
const BACKOFF: Duration = Duration::from_millis(100);
/// How long [`HttpServerHandle::stop`] waits for the `complete` results of the listens it
/// ends to be written.
const GRACE: Duration = Duration::from_millis(500);
/// Threads kept blocked in `accept` at most; more end with their connection. They wake
/// for nothing but a connection (or the stop).
const IDLE_WORKERS: usize = 8;
/// How often an open stream with nothing to send checks that its client is still there
/// when no peeking thread can tell it (pipelined bytes waiting, no thread to be had).
const WATCH: Duration = Duration::from_millis(250);

/// A running HTTP server. Dropping it stops the server (as [`HttpServerHandle::stop`]).
pub struct HttpServerHandle {
    local_addr: SocketAddr,
    path: String,
    stop: Arc<AtomicBool>,
    /// The timer thread, which ends once the server stops; the others are in
    /// [`Threads::all`].
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
        self.shared.wake(&mut endpoint);
        result
    }

    /// The flag that stops the server when set (for signal handlers and the like). A bare
    /// flag wakes no thread, so from the first call on the server's timer thread looks at
    /// it every quarter of a second ([`HttpServerHandle::stop`] needs no such look).
    #[must_use]
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.shared.flag_out.store(true, Ordering::SeqCst);
        // Under the lock: the timer sees the flag before it sleeps, or is woken.
        let _endpoint = self.shared.endpoint();
        self.shared.timer.notify_all();
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
        self.shared.stop_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.shared.join_all();
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
/// When the listener cannot be made blocking or has no local address.
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
/// When the listener cannot be made blocking or has no local address, or the
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
/// [`RequestGate`](mcp_proto::server::http::RequestGate) ([`HttpEndpoint::set_gate`]:
/// bearer tokens, other paths of its origin such as metadata documents) and how stores shared by several server processes are put
/// in place ([`HttpEndpoint::set_session_store`], [`HttpEndpoint::set_event_store`]; the
/// `mcp-redis` crate has Redis ones). The stores are called under the endpoint's lock,
/// so a store doing network IO holds every connection's thread for that long.
///
/// # Errors
/// As [`serve_http_with`].
pub fn serve_http_setup(
    listener: TcpListener,
    server: Server,
    options: HttpServeOptions,
    setup: impl FnOnce(&mut HttpEndpoint),
) -> io::Result<HttpServerHandle> {
    // Accepting blocks: a connection is served the moment it arrives, by the thread that
    // accepted it.
    listener.set_nonblocking(false)?;
    let local_addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let path = options.endpoint.path.clone();
    let endpoint = mcp_io::hosting::http_endpoint(server, &options, local_addr.ip(), setup)?;
    let shared = Shared {
        endpoint: Mutex::new(endpoint),
        output: Condvar::new(),
        timer: Condvar::new(),
        stop: Arc::clone(&stop),
        flag_out: AtomicBool::new(false),
        stopped: AtomicBool::new(false),
        sockets: Mutex::new(Sockets::default()),
        local_addr,
        host: HttpHost::for_options(&options),
        listener,
        threads: Mutex::new(Threads::default()),
        deferred: Bell::default(),
    };
    let shared = Arc::new(shared);
    shared
        .endpoint()
        .set_deferred_waker(Waker::from(Arc::new(DeferredDone(Arc::downgrade(&shared)))));
    // From here on, a failure drops the handle, which stops what was started.
    let mut handle = HttpServerHandle {
        local_addr,
        path,
        stop,
        thread: None,
        shared: Arc::clone(&shared),
    };
    handle.thread = Some(spawn("mcp-http-timer", &shared, timer_loop)?);
    let mut threads = shared.threads();
    // Without it, deferred work never completes; everything else is served.
    if let Ok(deferred) = spawn("mcp-http-deferred", &shared, deferred_loop) {
        threads.all.push(deferred);
    }
    // The first connection thread, counted by its starter as every one is.
    threads.accepting = 1;
    shared.start_acceptor(&mut threads)?;
    drop(threads);
    Ok(handle)
}

/// Starts a thread of the server named `name`, running `f`.
fn spawn(
    name: &str,
    shared: &Arc<Shared>,
    f: impl FnOnce(&Arc<Shared>) + Send + 'static,
) -> io::Result<JoinHandle<()>> {
    let shared = Arc::clone(shared);
    thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || f(&shared))
}

/// What every thread of one server shares.
struct Shared {
    endpoint: Mutex<HttpEndpoint>,
    /// Signalled when an open stream may have output (or the server stops).
    output: Condvar,
    /// Signalled when the endpoint's next deadline moved earlier (or the server stops);
    /// the timer thread waits on it.
    timer: Condvar,
    stop: Arc<AtomicBool>,
    /// Whether [`HttpServerHandle::stop_flag`] handed the flag out.
    flag_out: AtomicBool,
    /// Whether [`Shared::stop_all`] ran.
    stopped: AtomicBool,
    /// A clone of every served connection's socket, to end its reading on stop.
    sockets: Mutex<Sockets>,
    local_addr: SocketAddr,
    host: HttpHost,
    /// Blocking; every thread with no connection waits in its `accept`.
    listener: TcpListener,
    threads: Mutex<Threads>,
    /// Rung when a tool's deferred work completed (or the server stops).
    deferred: Bell,
}

/// A flag and its condition variable, under a lock of their own: a completer rings it
/// from any thread, even one that holds the endpoint's lock (a handler completing work),
/// which a completer taking that lock itself would deadlock on.
#[derive(Default)]
struct Bell {
    rung: Mutex<bool>,
    ringing: Condvar,
}

impl Bell {
    fn ring(&self) {
        *self.rung.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.ringing.notify_all();
    }

    /// Waits until rung, and clears it; `false` once the server stops.
    fn wait(&self, shared: &Shared) -> bool {
        let mut rung = self.rung.lock().unwrap_or_else(PoisonError::into_inner);
        while !*rung {
            rung = self
                .ringing
                .wait(rung)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *rung = false;
        !shared.stopping()
    }
}

/// The waker of deferred tool work: rings the deferred thread's bell.
struct DeferredDone(std::sync::Weak<Shared>);

impl Wake for DeferredDone {
    fn wake(self: Arc<Self>) {
        if let Some(shared) = self.0.upgrade() {
            shared.deferred.ring();
        }
    }
}

/// The deferred thread: each time deferred tool work completes, the calls waiting for
/// it go on ([`HttpEndpoint::handle_deferred`]) and their streams are woken.
fn deferred_loop(shared: &Arc<Shared>) {
    while shared.deferred.wait(shared) {
        let mut endpoint = shared.endpoint();
        endpoint.handle_deferred(clock::now());
        shared.wake(&mut endpoint);
    }
}

/// The server's threads but the timer.
#[derive(Default)]
struct Threads {
    /// How many block in `accept`, or are about to (each is woken by a connection of its
    /// own on stop).
    accepting: usize,
    /// Every one that may still run, to join on stop.
    all: Vec<JoinHandle<()>>,
}

/// The sockets of the connections being served, by connection number.
#[derive(Default)]
struct Sockets {
    next: u64,
    open: HashMap<u64, TcpStream>,
}

impl Shared {
    fn endpoint(&self) -> MutexGuard<'_, HttpEndpoint> {
        // A panicking tool handler must not take the whole server down with it.
        self.endpoint.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sockets(&self) -> MutexGuard<'_, Sockets> {
        self.sockets.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// After any change to the endpoint, under its lock: wakes the threads of the streams
    /// it gave output to, and the timer when a deadline now falls due sooner than the one
    /// it sleeps until.
    fn wake(&self, endpoint: &mut HttpEndpoint) {
        if endpoint.take_ready() {
            self.output.notify_all();
        }
        if endpoint.take_timer_moved() {
            self.timer.notify_all();
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn threads(&self) -> MutexGuard<'_, Threads> {
        self.threads.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a connection thread, which accepts first: counted in `accepting` by its
    /// starter (it replaces the starter there), so that `stop` wakes it even before it
    /// runs.
    fn start_acceptor(self: &Arc<Self>, threads: &mut Threads) -> io::Result<()> {
        let thread = spawn("mcp-http-conn", self, serve_connections)?;
        threads.all.retain(|t| !t.is_finished());
        threads.all.push(thread);
        Ok(())
    }

    /// Blocks in `accept` until a connection this thread is to serve comes (counted in
    /// `accepting` meanwhile); `None` once the server stops. The last thread accepting
    /// starts another in its place before it serves what it took, so the listener is
    /// accepted from while it serves; when none can be started, the connection is closed
    /// and this thread accepts on.
    fn accept(self: &Arc<Self>) -> Option<Connection> {
        loop {
            let accepted = self.listener.accept();
            if self.stopping() {
                return None;
            }
            match accepted {
                Ok((stream, _)) => {
                    let Some(conn) = self.admit(stream) else {
                        continue;
                    };
                    let mut threads = self.threads();
                    if threads.accepting > 1 {
                        threads.accepting -= 1;
                    } else if self.start_acceptor(&mut threads).is_err() {
                        continue;
                    }
                    return Some(conn);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Out of descriptors and the like: back off instead of spinning.
                Err(_) => thread::sleep(BACKOFF),
            }
        }
    }

    /// The host's machine for a new connection, its socket registered: `None` when the
    /// host closes it at once (too many connections on their way out already) or the
    /// server stops.
    fn admit(self: &Arc<Self>, stream: TcpStream) -> Option<Connection> {
        let mut machine = self.host.accept(clock::now())?;
        let id = self.register(&stream)?;
        machine.set_eviction_waker(Waker::from(Arc::new(Evicted {
            shared: Arc::downgrade(self),
            id,
        })));
        Some(Connection::new(stream, machine, Arc::clone(self), id))
    }

    /// After [`Shared::stop_all`]: joins every thread but the timer (whose handle the
    /// server's handle holds).
    fn join_all(&self) {
        loop {
            // Not under the lock: a thread ending may take it.
            let thread = self.threads().all.pop();
            let Some(thread) = thread else {
                return;
            };
            let _ = thread.join();
        }
    }

    /// Keeps a clone of a new connection's socket for [`Shared::stop_all`]: its number,
    /// or `None` when the server is stopping (or the socket cannot be cloned), and the
    /// connection must not be served. The socket is cloned (and, in
    /// [`Shared::unregister`], closed) outside the lock: a connection accepted as the
    /// previous one closes (a client that opens one per request) does not wait for it.
    fn register(&self, stream: &TcpStream) -> Option<u64> {
        let clone = stream.try_clone().ok()?;
        let mut sockets = self.sockets();
        if self.stopping() {
            return None;
        }
        let id = sockets.next;
        sockets.next += 1;
        sockets.open.insert(id, clone);
        Some(id)
    }

    fn unregister(&self, id: u64) {
        let clone = self.sockets().open.remove(&id);
        drop(clone);
    }

    /// Stops the server: sets the flag, wakes every thread waiting on a condition
    /// variable, ends every connection both ways (a blocked read returns at once, and so
    /// does a write blocked on a client that does not read, which would otherwise hold
    /// the stop for its send timeout), and wakes every thread blocked in `accept` with a
    /// connection of its own.
    fn stop_all(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        {
            // Under the lock: a thread about to wait sees the flag, or is woken.
            let _endpoint = self.endpoint();
            self.output.notify_all();
            self.timer.notify_all();
        }
        self.deferred.ring();
        // Under their lock, which a thread takes to count itself in before it accepts
        // again (and looks at the flag under): every other one sees the flag.
        let accepting = self.threads().accepting;
        // Under the sockets' lock, which `register` takes to look at the flag: every
        // connection either is in the map now or will never be served.
        for socket in self.sockets().open.values() {
            let _ = socket.shutdown(Shutdown::Both);
        }
        let mut wake = self.local_addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        for _ in 0..accepting {
            let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        }
    }
}

/// The timer thread: hands the endpoint the time when its next deadline passes, sleeping
/// until then (or until woken: a deadline moved earlier, the server stops). Once the stop
/// flag was handed out it also wakes every [`FLAG_CHECK`] to look at it.
fn timer_loop(shared: &Arc<Shared>) {
    let mut endpoint = shared.endpoint();
    while !shared.stopping() {
        if endpoint.handle_due(clock::now()) {
            shared.wake(&mut endpoint);
        }
        let due = endpoint
            .arm_timer()
            .map(|t| t.saturating_duration_since(clock::now()));
        let check = shared.flag_out.load(Ordering::SeqCst).then_some(FLAG_CHECK);
        endpoint = match due.into_iter().chain(check).min() {
            None => shared
                .timer
                .wait(endpoint)
                .unwrap_or_else(PoisonError::into_inner),
            Some(wait) => {
                shared
                    .timer
                    .wait_timeout(endpoint, wait)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
        };
    }
    drop(endpoint);
    // The flag may have been set by someone else: stop the rest as `stop` does.
    shared.stop_all();
}

/// What wakes a connection's thread when the host gives its place to a newcomer: the
/// end of its socket's reading (on the server's clone of it), which returns a blocked
/// read at once; the machine, evicted, then closes.
struct Evicted {
    shared: std::sync::Weak<Shared>,
    id: u64,
}

impl Wake for Evicted {
    fn wake(self: Arc<Self>) {
        if let Some(shared) = self.shared.upgrade()
            && let Some(socket) = shared.sockets().open.get(&self.id)
        {
            let _ = socket.shutdown(Shutdown::Read);
        }
    }
}

/// A connection's thread: accepts a connection and serves it, again and again, reusing
/// its read buffer, until the server stops or, a connection over, [`IDLE_WORKERS`]
/// threads accept already.
fn serve_connections(shared: &Arc<Shared>) {
    let mut buf = Vec::new();
    while let Some(mut conn) = shared.accept() {
        conn.buf = buf;
        buf = conn.run();
        let mut threads = shared.threads();
        if shared.stopping() || threads.accepting >= IDLE_WORKERS {
            return;
        }
        threads.accepting += 1;
    }
}

/// One client connection: its socket and its machine. Dropping it closes the socket,
/// forgets the server's clone of it, and gives the machine's place back to the host.
struct Connection {
    stream: TcpStream,
    machine: HttpConnection,
    shared: Arc<Shared>,
    /// Its number among the server's sockets ([`Shared::register`]).
    id: u64,
    buf: Vec<u8>,
    out: Vec<u8>,
    /// During an open stream, the thread blocked in a peek at the socket, which tells at
    /// once when the client sends, leaves or fails.
    peeker: Option<Peeker>,
    /// Whether bytes of a next request were waiting when the open stream last looked:
    /// they keep every peek returning at once, so the stream looks every [`WATCH`].
    pipelined: bool,
    /// The socket's read timeout as last set.
    read_timeout: ReadTimeout,
}

/// What a connection knows of its socket's read timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadTimeout {
    /// Not known: never set, cleared for a stream, or the last setting failed.
    Unknown,
    /// As last set (`None`: reads wait as long as it takes).
    Set(Option<Duration>),
}

/// How late a read may return past the connection's deadline, rather than set the
/// socket's timeout again before every read (a system call per request: the deadline of
/// an idle keep-alive connection moves with every request). Its deadlines (idle expiry,
/// a body that stops arriving) are seconds apart.
const READ_TIMEOUT_SLACK: Duration = Duration::from_millis(50);

/// Whether a read due in `due` (`None`: no deadline) needs the socket's timeout changed
/// from `set`: one not known is always set; the timeout kept must end the read no more
/// than [`READ_TIMEOUT_SLACK`] after the deadline, and not before half of it (a read that
/// times out early is only tried again).
fn needs_new_timeout(set: ReadTimeout, due: Option<Duration>) -> bool {
    match (set, due) {
        (ReadTimeout::Unknown, _) => true,
        (ReadTimeout::Set(None), None) => false,
        (ReadTimeout::Set(Some(set)), Some(due)) => set > due + READ_TIMEOUT_SLACK || set < due / 2,
        // No timeout where the read has a deadline, or the other way round.
        (ReadTimeout::Set(_), _) => true,
    }
}

/// A thread blocked in a peek at a connection's socket.
struct Peeker {
    thread: JoinHandle<()>,
    /// Set (before the endpoint's condition variable is signalled) when the peek returned.
    done: Arc<AtomicBool>,
}

impl Peeker {
    fn done(&self) -> bool {
        self.done.load(Ordering::SeqCst)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.unregister(self.id);
        if let Some(peeker) = self.peeker.take() {
            // Its clone would keep the socket open: end its peek first.
            if !peeker.done() {
                let _ = self.stream.shutdown(Shutdown::Read);
            }
            let _ = peeker.thread.join();
        }
    }
}

impl Connection {
    fn new(stream: TcpStream, machine: HttpConnection, shared: Arc<Shared>, id: u64) -> Self {
        Connection {
            stream,
            machine,
            shared,
            id,
            // Given by the thread that serves it ([`Connection::run`]).
            buf: Vec::new(),
            out: Vec::new(),
            peeker: None,
            pipelined: false,
            read_timeout: ReadTimeout::Unknown,
        }
    }

    /// Keeps a [`Peeker`] on the socket while a stream is open (not while pipelined bytes
    /// would make its peek return at once), and joins the one whose peek returned, then
    /// looks at the socket for what it saw.
    fn mind_peeker(&mut self) {
        if self.peeker.as_ref().is_some_and(Peeker::done)
            && let Some(peeker) = self.peeker.take()
        {
            let _ = peeker.thread.join();
            if self.machine.stream().is_some() {
                self.watch();
            }
        }
        if self.machine.stream().is_none() {
            self.pipelined = false;
            return;
        }
        // Once the input ended, a peek returns at once, for good: nothing more to see.
        if self.pipelined
            || self.peeker.is_some()
            || self.shared.stopping()
            || self.machine.input_ended()
        {
            return;
        }
        let Ok(clone) = self.stream.try_clone() else {
            return;
        };
        // Nothing reads during a stream; the next read sets its own timeout again.
        let _ = self.stream.set_read_timeout(None);
        self.read_timeout = ReadTimeout::Unknown;
        let done = Arc::new(AtomicBool::new(false));
        let shared = Arc::clone(&self.shared);
        let finished = Arc::clone(&done);
        let spawned = thread::Builder::new()
            .name("mcp-http-peek".to_owned())
            .stack_size(64 * 1024)
            .spawn(move || {
                let mut probe = [0u8; 1];
                while matches!(clone.peek(&mut probe), Err(e) if e.kind() == io::ErrorKind::Interrupted)
                {}
                finished.store(true, Ordering::SeqCst);
                let _endpoint = shared.endpoint();
                shared.output.notify_all();
            });
        // Without one, the stream looks every WATCH.
        if let Ok(thread) = spawned {
            self.peeker = Some(Peeker { thread, done });
        }
    }

    /// Serves the connection until it closes; gives back its read buffer, for the next.
    fn run(mut self) -> Vec<u8> {
        if self.buf.is_empty() {
            self.buf = vec![0; mcp_io::hosting::READ_CHUNK];
        }
        if self.setup().is_err() {
            return mem::take(&mut self.buf);
        }
        loop {
            let now = clock::now();
            if self.shared.stopping() {
                self.machine.close(now);
            }
            self.machine.handle_due(now);
            self.mind_peeker();
            match self.transmit(now) {
                Some(HttpTransmit::Write { .. }) => self.write(),
                Some(HttpTransmit::Shutdown) => {
                    let _ = self.stream.shutdown(Shutdown::Write);
                }
                // Close (or anything newer this adapter cannot do).
                Some(_) => return mem::take(&mut self.buf),
                // Once the input ended, there is nothing more to see on the socket.
                None if self.machine.stream().is_some() && !self.machine.input_ended() => {
                    self.watch();
                }
                None if self.machine.stream().is_some() => {}
                None if self.machine.wants_input() => self.read(),
                // `transmit` waited already (for the next deadline, or the stop).
                None => {}
            }
        }
    }

    /// The socket blocks already: accepted from a listener set to block.
    fn setup(&self) -> io::Result<()> {
        self.stream.set_nodelay(true)?;
        self.stream
            .set_write_timeout(Some(self.machine.config().send_slice()))
    }

    /// The machine's next transmit, taken under the endpoint's lock. With nothing to write
    /// and no input wanted, it sleeps on the condition variable in the same critical
    /// section (so no wake-up is lost) until another thread gives the stream output, the
    /// server stops, or the machine's next deadline; with a stream open, at most
    /// [`WATCH`], to look at the socket.
    fn transmit(&mut self, now: mcp_proto::Instant) -> Option<HttpTransmit> {
        self.out.clear();
        let mut endpoint = self.shared.endpoint();
        let transmit = self
            .machine
            .poll_transmit(now, &mut endpoint, &mut self.out);
        self.shared.wake(&mut endpoint);
        let peeked = self.peeker.as_ref().is_some_and(Peeker::done);
        if transmit.is_none() && !self.machine.wants_input() && !self.shared.stopping() && !peeked {
            // A stream with no peeker looks at its socket itself, every WATCH.
            let watch = self
                .machine
                .stream()
                .filter(|_| self.peeker.is_none() && !self.machine.input_ended())
                .map(|_| WATCH);
            match self
                .machine
                .until_due(clock::now())
                .into_iter()
                .chain(watch)
                .min()
            {
                Some(wait) => drop(self.shared.output.wait_timeout(endpoint, wait)),
                None => drop(self.shared.output.wait(endpoint)),
            }
        }
        transmit
    }

    /// Writes the machine's bytes, giving up once the write stalled ([`WriteProgress`]: a
    /// client that stopped reading); each send returns after a slice of the send timeout.
    fn write(&mut self) {
        let mut rest = &self.out[..];
        let mut progress = WriteProgress::new(clock::now(), self.machine.config());
        while !rest.is_empty() {
            match self.stream.write(rest) {
                Ok(0) => break,
                Ok(n) => {
                    rest = &rest[n..];
                    // Progress matters only to a write still going on.
                    if !rest.is_empty() {
                        progress.handle_progress(clock::now());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) && !progress.stalled(clock::now()) => {}
                Err(_) => break,
            }
        }
        if !rest.is_empty() {
            self.machine.handle_transport_error(clock::now());
        }
    }

    /// Reads once, until bytes come or the machine's next deadline (with none, until
    /// bytes come or the server stops, which ends the reading of the socket).
    fn read(&mut self) {
        let due = self.machine.until_due(clock::now());
        if needs_new_timeout(self.read_timeout, due) {
            self.read_timeout = match self.stream.set_read_timeout(due) {
                Ok(()) => ReadTimeout::Set(due),
                Err(_) => ReadTimeout::Unknown,
            };
        }
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
    /// looked at without consuming anything (bytes waiting are pipelined requests). Only
    /// when no peeker is blocked in a peek (none, or its peek returned): the socket is
    /// made non-blocking for a moment, which a peek starting then would see.
    fn watch(&mut self) {
        if self.peeker.as_ref().is_some_and(|p| !p.done()) {
            return;
        }
        let mut probe = [0u8; 1];
        let peeked = self
            .stream
            .set_nonblocking(true)
            .and_then(|()| self.stream.peek(&mut probe));
        // A socket left non-blocking cannot be served: that fails the connection too.
        let peeked = self.stream.set_nonblocking(false).and(peeked);
        self.pipelined = mcp_io::hosting::handle_peek(&mut self.machine, clock::now(), peeked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_timeout_is_set_again_only_when_it_would_end_the_read_too_late_or_much_too_early() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        let set = |timeout| ReadTimeout::Set(Some(timeout));
        let none = ReadTimeout::Set(None);
        // Unknown, or no deadline where there is one (and the other way round): set.
        assert!(needs_new_timeout(ReadTimeout::Unknown, Some(s(30))));
        assert!(needs_new_timeout(ReadTimeout::Unknown, None));
        assert!(needs_new_timeout(none, Some(s(30))));
        assert!(needs_new_timeout(set(s(30)), None));
        assert!(!needs_new_timeout(none, None));
        // An idle keep-alive deadline that moved with the last request: kept.
        assert!(!needs_new_timeout(set(s(30)), Some(s(30) - ms(3))));
        // Would end the read more than the slack past the deadline: set.
        assert!(needs_new_timeout(set(s(30)), Some(s(5))));
        assert!(needs_new_timeout(set(s(30)), Some(s(30) - ms(60))));
        // Ends it before half the wait: set (it would wake for nothing).
        assert!(needs_new_timeout(set(ms(100)), Some(s(30))));
        assert!(!needs_new_timeout(set(s(20)), Some(s(30))));
    }
}
