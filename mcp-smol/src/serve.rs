//! Hosting a sans-IO [`Server`] on async IO: over byte streams ([`serve`],
//! [`serve_stdio`]) and as a Streamable HTTP endpoint ([`serve_http`]).
//!
//! Theory of operation. Every decision is made by mcp-proto's machines; this module
//! only moves bytes and waits. [`serve`] races one read against an `async_io::Timer` at
//! the server's next deadline ([`Server::poll_timeout`]) and against deferred tool work
//! completing ([`Server::set_deferred_waker`]). [`serve_http`] is one future
//! that polls, itself, the accept loop and one future per connection (no task is ever
//! spawned, so any executor, or `block_on` alone, can run it), each only when its own
//! waker fired:
//!
//! * [`HttpHost`] admits connections (one too many takes the place of one that only
//!   waits for a request, or gets the machine's 503);
//! * each [`HttpConnection`] says what to write, when to read and when to close; reads
//!   wait at most until its next deadline;
//! * the shared [`HttpEndpoint`] sits behind a mutex, held only while a machine is
//!   polled (tool handlers are synchronous);
//! * a connection with an open stream and nothing to write waits on an
//!   `event_listener::Event` registered under the lock; whoever feeds the endpoint the
//!   input that gives a stream output ([`HttpEndpoint::poll_ready`]) notifies it. It
//!   also waits for its socket to become readable, and then peeks at it to notice a
//!   client that went away;
//! * the endpoint's own deadlines are handed to it by a timer future that sleeps exactly
//!   until the next one ([`HttpEndpoint::arm_timer`]), or until notified when there is
//!   none: whoever changes the endpoint so that a deadline falls due sooner notifies it
//!   ([`HttpEndpoint::take_timer_moved`]), with its listener registered under the lock;
//!   deferred tool work that completes notifies it too (the endpoint's deferred waker):
//!   such work is due at once ([`HttpEndpoint::poll_timeout`]);
//! * when `stop` resolves, no more connections are accepted, every machine is closed
//!   (a write blocked on a client that does not read is given up),
//!   and the future resolves once each connection has finished. The stop future is
//!   polled with the rest, so it wakes the whole future itself;
//! * a connection whose awaits are all ready (a client that keeps its socket full of
//!   pipelined requests and reads the answers as fast) still yields every
//!   [`TURNS_BEFORE_YIELD`] turns of its loop, so that it cannot keep the other
//!   connections and the listener from their turn.
//!
//! Nothing wakes on a period except an open stream whose client already sent its next
//! request: the bytes waiting in the socket keep it readable, so the end of the
//! connection behind them can only be looked for, every [`WATCH`]. Once a stream's
//! input ended ([`HttpConnection::input_ended`]), its socket is not looked at again: it
//! would read as ended, at once, every time. An accept error (out
//! of descriptors) is retried after [`BACKOFF`].

use std::future::Future;
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use async_io::{Async, Timer};
use event_listener::Event;
use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, FutureExt, future};
use mcp_io::clock;
use mcp_proto::server::Server;
pub use mcp_proto::server::http::HttpServeOptions;
use mcp_proto::server::http::{
    HttpConnection, HttpEndpoint, HttpHost, HttpTransmit, WriteProgress,
};

use crate::wake::{Crew, Readiness, TaskWaker};

/// How often an open stream with nothing to send checks that its client is still there,
/// when bytes of a pipelined request keep its socket readable (else readiness tells).
const WATCH: Duration = Duration::from_millis(250);
/// Turns of a connection's loop (each a read, a write or a wait) after which it lets
/// the other connections and the listener run (or, for [`serve`], the executor's other
/// tasks), even when all of its awaits were ready.
const TURNS_BEFORE_YIELD: u32 = 64;
/// How long the accept loop waits after an accept error (out of descriptors and the
/// like) before accepting again, instead of spinning.
const BACKOFF: Duration = Duration::from_millis(100);

/// Serves `server` on this process's stdin and stdout until stdin ends (through
/// [`blocking::Unblock`], whose threads do the blocking reads and writes). A client that
/// goes away (stdout closed) ends it quietly. A `requestState` codec that does not
/// protect what it seals is first replaced with a sealing one under a fresh random key
/// ([`Server::seal_request_states`]).
///
/// # Errors
/// Any other read or write error; the operating system having no random numbers.
pub async fn serve_stdio(mut server: Server) -> io::Result<()> {
    mcp_io::auth::seal_server_states(&mut server)?;
    let input = blocking::Unblock::new(io::stdin());
    let output = blocking::Unblock::new(io::stdout());
    match serve(&mut server, input, output).await {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Serves `server`: reads `input` to its end, writes every reply to `output` (flushed
/// after each batch), hands the server its deadlines ([`Server::poll_timeout`]: a task
/// outcome falling due, deferred work completed) as they pass, between two reads even
/// when input is always ready, then handles the end of input and writes what is left.
///
/// ```
/// use mcp_proto::server::example;
///
/// let mut server = example::server();
/// let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
/// let mut output = Vec::new();
/// futures_lite::future::block_on(mcp_smol::serve(&mut server, &input[..], &mut output))
///     .unwrap();
/// assert_eq!(output, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
/// ```
///
/// # Errors
/// Any read or write error.
pub async fn serve(
    server: &mut Server,
    mut input: impl AsyncRead + Unpin,
    mut output: impl AsyncWrite + Unpin,
) -> io::Result<()> {
    mcp_io::heap::keep_freed_memory();
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    let mut turns = Turns::default();
    // Deferred tool work that completes wakes the loop as input does.
    let done = Arc::new(Event::new());
    server.set_deferred_waker(Waker::from(Arc::new(Notify(Arc::clone(&done)))));
    loop {
        // Input that never runs dry must not keep the executor's thread from its other
        // tasks.
        turns.take().await;
        // A deadline that passed (completed work is due at once) is handled before the
        // race below, in which ready input would always win: input that never pauses
        // must not hold back a completed call or a task's outcome.
        let now = clock::now();
        if server.poll_timeout().is_some_and(|due| due <= now) {
            server.handle_timeout(now);
            write_pending(server, &mut out, &mut output).await?;
        }
        // Listening before looking (completed work is due at once) loses no completion.
        let completed = done.listen();
        let read = async { Some(Some(input.read(&mut buf).await)) };
        let completed = async {
            completed.await;
            Some(None)
        };
        // Dropping a pending read consumes nothing, so the race loses no input.
        let event = match server.poll_timeout() {
            None => read.or(completed).await,
            Some(due) => {
                let timer = async {
                    Timer::at(clock::to_std(due)).await;
                    None
                };
                read.or(completed).or(timer).await
            }
        };
        match event {
            Some(Some(Ok(0))) => break,
            Some(Some(Ok(n))) => server.handle_input(clock::now(), &buf[..n]),
            Some(Some(Err(e))) if e.kind() == io::ErrorKind::Interrupted => continue,
            Some(Some(Err(e))) => return Err(e),
            Some(None) | None => server.handle_timeout(clock::now()),
        }
        write_pending(server, &mut out, &mut output).await?;
    }
    server.handle_eof(clock::now());
    write_pending(server, &mut out, &mut output).await
}

/// Notifies an event when woken: the waker of deferred tool work.
struct Notify(Arc<Event>);

impl Wake for Notify {
    fn wake(self: Arc<Self>) {
        self.0.notify(usize::MAX);
    }
}

async fn write_pending(
    server: &mut Server,
    out: &mut Vec<u8>,
    output: &mut (impl AsyncWrite + Unpin),
) -> io::Result<()> {
    out.clear();
    while server.poll_transmit(clock::now(), out).is_some() {}
    if !out.is_empty() {
        output.write_all(out).await?;
        output.flush().await?;
    }
    Ok(())
}

/// Serves `server` as a Streamable HTTP endpoint (at `options.endpoint.path`, `/mcp` by
/// default) on `listener` until `stop` resolves, then ends every connection and
/// resolves. One future drives the listener and every connection; the library spawns
/// nothing, so run it on any executor or with `smol::block_on` (see the crate docs for why
/// that one rather than `futures_lite::future::block_on`).
///
/// `setup` runs on the endpoint before the first connection is accepted (a
/// [`RequestGate`](mcp_proto::server::http::RequestGate), session and event stores), as
/// in `mcp-blocking`'s `serve_http_setup`. A `requestState` codec that does not protect
/// what it seals is first replaced with a sealing one under a fresh random key
/// ([`Server::seal_request_states`]). Bind a loopback address unless remote clients are
/// intended.
///
/// ```no_run
/// use async_io::Async;
/// use mcp_proto::server::example;
/// use mcp_smol::HttpServeOptions;
///
/// let listener = Async::<std::net::TcpListener>::bind(([127, 0, 0, 1], 0))?;
/// println!("serving http://{}/mcp", listener.get_ref().local_addr()?);
/// let stop = futures_lite::future::pending::<()>();
/// let served = mcp_smol::serve_http(
///     listener,
///     example::server(),
///     HttpServeOptions::default(),
///     |_| {},
///     stop,
/// );
/// smol::block_on(served)?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
/// When the listener has no local address, or the operating system has no random
/// numbers.
pub async fn serve_http(
    listener: Async<TcpListener>,
    server: Server,
    options: HttpServeOptions,
    setup: impl FnOnce(&mut HttpEndpoint),
    stop: impl Future<Output = ()>,
) -> io::Result<()> {
    let local_addr = listener.get_ref().local_addr()?;
    let endpoint = mcp_io::hosting::http_endpoint(server, &options, local_addr.ip(), setup)?;
    let timer = Arc::new(Event::new());
    let mut endpoint = endpoint;
    // Deferred tool work that completes wakes the timer future, which goes on with it.
    endpoint.set_deferred_waker(Waker::from(Arc::new(Notify(Arc::clone(&timer)))));
    let shared = Shared {
        endpoint: Mutex::new(endpoint),
        wake: Event::new(),
        timer,
        halt: Event::new(),
        stopping: AtomicBool::new(false),
        host: HttpHost::for_options(&options),
    };
    run(&listener, &shared, stop).await;
    Ok(())
}

/// What the connections of one server share.
struct Shared {
    endpoint: Mutex<HttpEndpoint>,
    /// Notified when an open stream may have output, or the server stops.
    wake: Event,
    /// Notified when the endpoint's next deadline moved earlier, or deferred tool work
    /// completed; the timer waits on it.
    timer: Arc<Event>,
    /// Notified when the server stops; connections without an open stream wait on it.
    halt: Event,
    stopping: AtomicBool,
    host: HttpHost,
}

impl Shared {
    fn endpoint(&self) -> MutexGuard<'_, HttpEndpoint> {
        // A panicking tool handler must not take the whole server down with it.
        self.endpoint.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// After any change to the endpoint, under its lock: wakes the connections of the
    /// streams it gave output to, and the timer when a deadline now falls due sooner than
    /// the one it sleeps until.
    fn wake(&self, endpoint: &mut HttpEndpoint) {
        if endpoint.take_ready() {
            self.wake.notify(usize::MAX);
        }
        if endpoint.take_timer_moved() {
            self.timer.notify(usize::MAX);
        }
    }

    /// Hands the endpoint the time whenever its next deadline passes, which includes
    /// going on with the calls whose deferred work completed (due at once);
    /// sleeps until then, or until notified that a deadline moved earlier or work
    /// completed. Never resolves.
    async fn timer(&self) {
        loop {
            // Listening before arming and looking, under the lock, loses no
            // notification.
            let (due, moved) = {
                let mut endpoint = self.endpoint();
                let moved = self.timer.listen();
                // Completed deferred work is due at once.
                if endpoint.handle_due(clock::now()) {
                    self.wake(&mut endpoint);
                }
                (endpoint.arm_timer(), moved)
            };
            moved.or(until(due)).await;
        }
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Resolves once the server stops (at once if it has).
    async fn stopped(&self) {
        loop {
            // Listening before looking loses no notification.
            let halt = self.halt.listen();
            if self.stopping() {
                return;
            }
            halt.await;
        }
    }
}

type Accept<'a> = Pin<Box<dyn Future<Output = io::Result<Async<TcpStream>>> + 'a>>;

/// Polls the stop signal, the listener, the endpoint's clock and every connection, until
/// stopped with no connection left. Each of them is polled with a waker of its own and
/// only when that waker fired (see the `wake` module): an idle connection is not polled
/// (no failed read of its socket) because another one progressed, nor is the listener
/// (no failed accept).
async fn run(listener: &Async<TcpListener>, shared: &Shared, stop: impl Future<Output = ()>) {
    let mut stop = Box::pin(stop);
    let mut accepted: Option<Accept<'_>> = None;
    let mut backoff: Option<Timer> = None;
    let mut timer = Box::pin(shared.timer());
    let task = Arc::new(TaskWaker::default());
    let mut conns: Crew<dyn Future<Output = ()> + '_> = Crew::new(&task);
    let [stop_ready, accept_ready, timer_ready] = [(); 3].map(|()| Readiness::new(&task));
    future::poll_fn(|cx| {
        task.register(cx.waker());
        if !shared.stopping()
            && stop_ready.take()
            && stop.as_mut().poll(&mut stop_ready.context()).is_ready()
        {
            shared.stopping.store(true, Ordering::SeqCst);
            shared.wake.notify(usize::MAX);
            shared.halt.notify(usize::MAX);
            accepted = None;
        }
        if !shared.stopping() && accept_ready.take() {
            let mut cx = accept_ready.context();
            accept(
                listener,
                shared,
                &mut accepted,
                &mut backoff,
                &mut conns,
                &mut cx,
            );
        }
        if !shared.stopping() && timer_ready.take() {
            let _ = timer.as_mut().poll(&mut timer_ready.context());
        }
        conns.poll();
        if shared.stopping() && conns.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}

/// Accepts connections until none is waiting (or after an accept error, until
/// [`BACKOFF`] passed), each a new member of `conns`.
fn accept<'a>(
    listener: &'a Async<TcpListener>,
    shared: &'a Shared,
    accepted: &mut Option<Accept<'a>>,
    backoff: &mut Option<Timer>,
    conns: &mut Crew<dyn Future<Output = ()> + 'a>,
    cx: &mut Context<'_>,
) {
    if backoff
        .as_mut()
        .is_some_and(|t| Pin::new(t).poll(cx).is_ready())
    {
        *backoff = None;
    }
    while backoff.is_none() {
        let pending = accepted
            .get_or_insert_with(|| Box::pin(async { listener.accept().await.map(|(s, _)| s) }));
        let Poll::Ready(result) = pending.as_mut().poll(cx) else {
            break;
        };
        *accepted = None;
        match result {
            Ok(stream) => {
                // None: too many connections on their way out already; drop it.
                if let Some(machine) = shared.host.accept(clock::now()) {
                    conns.push(Box::pin(Connection::new(stream, machine, shared).run()));
                }
            }
            // Out of descriptors and the like: accept again a little later.
            Err(_) => {
                let mut wait = Timer::after(BACKOFF);
                if Pin::new(&mut wait).poll(cx).is_pending() {
                    *backoff = Some(wait);
                }
            }
        }
    }
}

/// One client connection: its socket and its machine. Dropping it closes the socket and
/// gives the machine's place back to the host.
struct Connection<'a> {
    stream: Async<TcpStream>,
    machine: HttpConnection,
    /// Notified when the host gives the connection's place to a newcomer.
    evicted: Arc<Evicted>,
    shared: &'a Shared,
    buf: Vec<u8>,
    out: Vec<u8>,
    /// Whether bytes of a next request were waiting when the open stream last looked.
    pipelined: bool,
}

impl<'a> Connection<'a> {
    fn new(stream: Async<TcpStream>, mut machine: HttpConnection, shared: &'a Shared) -> Self {
        let _ = stream.get_ref().set_nodelay(true);
        let evicted = Arc::new(Evicted::default());
        machine.set_eviction_waker(Waker::from(Arc::clone(&evicted)));
        Connection {
            stream,
            machine,
            evicted,
            shared,
            buf: vec![0; mcp_io::hosting::READ_CHUNK],
            out: Vec::new(),
            pipelined: false,
        }
    }

    async fn run(mut self) {
        let mut turns = Turns::default();
        loop {
            // A client that keeps its socket full (pipelined requests, read back as fast)
            // would keep every await here ready, and this future would never give the
            // others (and the listener) their turn.
            turns.take().await;
            let now = clock::now();
            if self.shared.stopping() {
                self.machine.close(now);
            }
            self.machine.handle_due(now);
            // Listening before polling, under the lock, loses no wake-up: an open stream
            // for its output or the stop, anything else for the stop alone.
            let (transmit, listener) = {
                self.out.clear();
                let mut endpoint = self.shared.endpoint();
                let transmit = self
                    .machine
                    .poll_transmit(now, &mut endpoint, &mut self.out);
                self.shared.wake(&mut endpoint);
                let listener = if self.machine.stream().is_some() {
                    self.shared.wake.listen()
                } else {
                    self.shared.halt.listen()
                };
                (transmit, listener)
            };
            match transmit {
                Some(HttpTransmit::Write { .. }) => self.write().await,
                Some(HttpTransmit::Shutdown) => {
                    let _ = self.stream.get_ref().shutdown(Shutdown::Write);
                }
                // Close (or anything newer this adapter cannot do).
                Some(_) => return,
                // Closed above: the machine says Close at once (never a busy loop).
                None if self.shared.stopping() => sleep(Duration::from_millis(1)).await,
                None if self.machine.stream().is_some() => {
                    let due = self.machine.poll_timeout();
                    // Once the input ended, the socket reads as ended for good (readable
                    // at once, every time): there is nothing more to see on it.
                    let ended = self.machine.input_ended();
                    let left = async {
                        if ended {
                            future::pending::<()>().await;
                        } else if self.pipelined {
                            sleep(WATCH).await;
                        } else {
                            // Readable: the client sent something, left, or failed.
                            let _ = self.stream.readable().await;
                        }
                    };
                    listener.or(until(due)).or(left).await;
                    if !ended {
                        self.pipelined = self.watch();
                    }
                }
                None if self.machine.wants_input() => {
                    self.pipelined = false;
                    // An eviction before the deadline is read made it due; one after
                    // ends the wait.
                    let due = self.machine.poll_timeout();
                    let evicted = &self.evicted;
                    let read = async { Some(self.stream.read(&mut self.buf).await) };
                    let other = async {
                        listener.or(until(due)).or(evicted.wait()).await;
                        None
                    };
                    let event = read.or(other).await;
                    let now = clock::now();
                    match event {
                        Some(Ok(0)) => self.machine.handle_eof(now),
                        Some(Ok(n)) => self.machine.handle_input(now, &self.buf[..n]),
                        Some(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                        Some(Err(_)) => self.machine.handle_transport_error(now),
                        None => {}
                    }
                }
                None => listener.or(until(self.machine.poll_timeout())).await,
            }
        }
    }

    /// Writes the machine's bytes, giving up when a write makes no progress for its send
    /// timeout (a client that stopped reading; one that reads a large answer slowly but
    /// steadily gets all of it), or when the server stops (such a client must not hold
    /// the stop).
    async fn write(&mut self) {
        let slice = self.machine.config().send_slice();
        let shared = self.shared;
        let mut written = 0;
        let mut progress = WriteProgress::new(clock::now(), self.machine.config());
        while written < self.out.len() {
            let (stream, rest) = (&mut self.stream, &self.out[written..]);
            let write = async { Some(stream.write(rest).await) };
            let late = async {
                sleep(slice).await;
                None
            };
            let stopped = async {
                shared.stopped().await;
                None
            };
            match write.or(late).or(stopped).await {
                Some(Ok(n @ 1..)) => {
                    written += n;
                    progress.handle_progress(clock::now());
                }
                Some(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                // A slice without progress: try again, until the send timeout.
                None if !shared.stopping() && !progress.stalled(clock::now()) => {}
                _ => {
                    self.machine.handle_transport_error(clock::now());
                    return;
                }
            }
        }
    }

    /// During an open stream: whether the client closed the connection or it failed,
    /// looked at without consuming anything. True when bytes are waiting (pipelined
    /// requests), which hide whether the client is still there.
    fn watch(&mut self) -> bool {
        let mut probe = [0u8; 1];
        let peeked = self.stream.get_ref().peek(&mut probe);
        mcp_io::hosting::handle_peek(&mut self.machine, clock::now(), peeked)
    }
}

/// What the host wakes when it gives a connection's place to a newcomer: the wait of
/// the connection's reading, which then finds its deadline due and closes. Waiting
/// allocates nothing (a listener per read would, on every request).
#[derive(Default)]
struct Evicted {
    done: AtomicBool,
    /// The read's task, as its last wait registered it.
    waiter: TaskWaker,
}

impl Evicted {
    /// Resolves once the connection is evicted.
    async fn wait(&self) {
        future::poll_fn(|cx| {
            if self.done.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            self.waiter.register(cx.waker());
            // Looked at again after the waker is in place: no wake-up is lost.
            if self.done.load(Ordering::SeqCst) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }
}

impl Wake for Evicted {
    fn wake(self: Arc<Self>) {
        self.done.store(true, Ordering::SeqCst);
        self.waiter.wake();
    }
}

/// The turns a loop took since it last gave way.
#[derive(Default)]
struct Turns(u32);

impl Turns {
    /// Counts one turn; every [`TURNS_BEFORE_YIELD`]th yields once (resolves after
    /// returning `Pending` once, with its own waker woken).
    async fn take(&mut self) {
        self.0 += 1;
        if self.0 == TURNS_BEFORE_YIELD {
            self.0 = 0;
            future::yield_now().await;
        }
    }
}

/// Resolves at `due`; with no deadline, never.
async fn until(due: Option<mcp_proto::Instant>) {
    match due {
        Some(due) => {
            Timer::at(clock::to_std(due)).await;
        }
        None => future::pending::<()>().await,
    }
}

async fn sleep(duration: Duration) {
    Timer::after(duration).await;
}
