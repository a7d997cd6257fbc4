//! Running a sans-IO [`Server`] as a Streamable HTTP endpoint on std blocking sockets.
//!
//! One accept thread and one thread per connection, at most
//! [`HttpServeOptions::max_connections`] at a time (one more gets 503 and is closed). The
//! protocol work is [`HttpEndpoint`]'s (see `mcp_proto::server::http`): the connection
//! threads share it behind a mutex and only move bytes. Tool handlers are synchronous,
//! so each request holds the lock for as long as its handler runs.
//!
//! * **Keep-alive and pipelining.** A connection serves requests until the client closes
//!   it, asks to close, sends something unreadable, or stays idle for
//!   [`HttpServeOptions::idle_timeout`]. Pipelined requests are answered in order.
//! * **Open streams.** A request whose answer is not ready (a tool that never answers,
//!   a legacy call waiting for the client's input) gets an SSE response that stays open.
//!   Its connection thread sleeps on a condition variable; whichever thread fed the
//!   endpoint the input that produced output for the stream
//!   ([`HttpEndpoint::poll_ready`]) wakes it, so output goes out at once, with no polling
//!   interval. It writes an SSE comment every [`HttpServeOptions::sse_keepalive`], looks
//!   at the socket (without reading pipelined requests) to notice a client that went
//!   away, and then cancels the request.
//! * **Stopping.** [`HttpServerHandle::stop`] (or setting the flag from
//!   [`HttpServerHandle::stop_flag`]) makes every thread finish within well under a
//!   second (open streams are cancelled; a write blocked on a client that stopped reading
//!   gives up after `idle_timeout`); `stop` then joins them all. Dropping the handle stops
//!   the server too.
//! * **Half-closed clients.** A client that shuts down its sending side still gets the
//!   answers to the requests it sent, except that EOF during an open stream is taken as
//!   the client leaving, which cancels that request.
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
use mcp_proto::server::http::{
    HttpEndpoint, HttpEndpointConfig, HttpReply, HttpRequest, HttpRequestLimits, HttpRequestReader,
    HttpResponse, HttpStream, StreamStatus,
};

/// How often blocked threads look at the stop flag. Never a delay for data: reads return
/// as bytes arrive, accepts as connections do, and open streams are woken.
const POLL: Duration = Duration::from_millis(20);
/// How often an open stream with nothing to send checks that its client is still there.
const WATCH: Duration = Duration::from_millis(250);

/// How an HTTP server runs. Start from [`HttpServeOptions::default`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HttpServeOptions {
    /// The endpoint: path (default `/mcp`), extra allowed origins, open stream bound.
    pub endpoint: HttpEndpointConfig,
    /// Request size and pipelining bounds.
    pub limits: HttpRequestLimits,
    /// Connections served at once. Default 64.
    pub max_connections: usize,
    /// A connection with no request in progress and no input for this long is closed; so
    /// is one whose client stops reading for this long. Default 30 s.
    pub idle_timeout: Duration,
    /// Interval of SSE comment lines on open streams. Default 15 s.
    pub sse_keepalive: Duration,
}

impl Default for HttpServeOptions {
    fn default() -> Self {
        HttpServeOptions {
            endpoint: HttpEndpointConfig::default(),
            limits: HttpRequestLimits::default(),
            max_connections: 64,
            idle_timeout: Duration::from_secs(30),
            sse_keepalive: Duration::from_secs(15),
        }
    }
}

/// A running HTTP server. Dropping it stops the server (as [`HttpServerHandle::stop`]).
#[derive(Debug)]
pub struct HttpServerHandle {
    local_addr: SocketAddr,
    path: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
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

    /// The flag that stops the server when set (for signal handlers and the like).
    #[must_use]
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// Stops accepting, ends every connection (open streams are cancelled), and waits for
    /// all threads.
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
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
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

/// [`serve_http`] with options.
///
/// # Errors
/// When the listener cannot be made non-blocking or has no local address.
pub fn serve_http_with(
    listener: TcpListener,
    server: Server,
    options: HttpServeOptions,
) -> io::Result<HttpServerHandle> {
    listener.set_nonblocking(true)?;
    let local_addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let path = options.endpoint.path.clone();
    let endpoint = HttpEndpoint::with_config(server, options.endpoint.clone());
    let shared = Shared {
        endpoint: Mutex::new(endpoint),
        output: Condvar::new(),
        stop: Arc::clone(&stop),
        options,
    };
    let thread = thread::Builder::new()
        .name("mcp-http-accept".to_owned())
        .spawn(move || accept_loop(&listener, local_addr, Arc::new(shared)))?;
    Ok(HttpServerHandle {
        local_addr,
        path,
        stop,
        thread: Some(thread),
    })
}

/// What every thread of one server shares.
struct Shared {
    endpoint: Mutex<HttpEndpoint>,
    /// Signalled when an open stream may have output (or the server stops).
    output: Condvar,
    stop: Arc<AtomicBool>,
    options: HttpServeOptions,
}

impl Shared {
    fn endpoint(&self) -> MutexGuard<'_, HttpEndpoint> {
        // A panicking tool handler must not take the whole server down with it.
        self.endpoint.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Feeds one request to the endpoint and wakes the streams it gave output to.
    fn handle(&self, request: &HttpRequest) -> HttpReply {
        let mut endpoint = self.endpoint();
        let reply = endpoint.handle_request(clock::now(), request);
        self.wake_ready(&mut endpoint);
        reply
    }

    fn cancel(&self, stream: &HttpStream) {
        let mut endpoint = self.endpoint();
        endpoint.cancel_stream(clock::now(), stream);
        self.wake_ready(&mut endpoint);
    }

    fn wake_ready(&self, endpoint: &mut HttpEndpoint) {
        let mut any = false;
        while endpoint.poll_ready().is_some() {
            any = true;
        }
        if any {
            self.output.notify_all();
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// Accepts in blocking mode, so a connection is served the moment it arrives; a small
/// watcher wakes the accept with a connection of its own once the stop flag is set.
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
                if workers.len() >= shared.options.max_connections {
                    refuse(stream);
                    continue;
                }
                let shared = Arc::clone(&shared);
                let spawned = thread::Builder::new()
                    .name("mcp-http-conn".to_owned())
                    .spawn(move || Connection::new(stream, &shared).run());
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

/// Answers a connection over the limit with 503 and closes it.
fn refuse(mut stream: TcpStream) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let mut out = Vec::new();
    HttpResponse::new(503)
        .with_header("Connection", "close")
        .with_header("Retry-After", "1")
        .write(&mut out);
    let _ = stream.write_all(&out);
    close_gracefully(&mut stream);
}

/// Closes our side and reads what the client still sends for a moment, so that unread
/// input does not turn the close into a reset that destroys the last response.
fn close_gracefully(stream: &mut TcpStream) {
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut sink = [0u8; 4096];
    let deadline = clock::now() + Duration::from_millis(500);
    while clock::now() < deadline {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

/// One client connection.
struct Connection<'a> {
    stream: TcpStream,
    shared: &'a Shared,
    reader: HttpRequestReader,
    buf: Vec<u8>,
    out: Vec<u8>,
    /// The client closed its side.
    eof: bool,
}

/// Whether a connection goes on after an exchange.
enum Next {
    Continue,
    Close,
}

impl<'a> Connection<'a> {
    fn new(stream: TcpStream, shared: &'a Shared) -> Self {
        Connection {
            stream,
            reader: HttpRequestReader::new(shared.options.limits.clone()),
            shared,
            buf: vec![0; 16 * 1024],
            out: Vec::new(),
            eof: false,
        }
    }

    fn run(mut self) {
        if self.setup().is_ok() {
            self.serve();
        }
        close_gracefully(&mut self.stream);
    }

    fn setup(&self) -> io::Result<()> {
        self.stream.set_nonblocking(false)?;
        self.stream.set_nodelay(true)?;
        self.stream.set_read_timeout(Some(POLL))?;
        self.stream
            .set_write_timeout(Some(self.shared.options.idle_timeout))
    }

    fn serve(&mut self) {
        let mut last_input = clock::now();
        loop {
            if self.shared.stopping() {
                return;
            }
            while let Some(next) = self.reader.poll_request() {
                let request = match next {
                    Ok(request) => request,
                    Err(e) => {
                        let _ = self.send(&HttpResponse::for_request_error(&e));
                        return;
                    }
                };
                let reply = self.shared.handle(&request);
                let next = match reply {
                    HttpReply::Complete(response) => match self.send(&response) {
                        Ok(()) if !response.closes_connection() => Next::Continue,
                        _ => Next::Close,
                    },
                    HttpReply::Stream(stream) => self.stream_reply(&stream),
                    _ => Next::Close,
                };
                if matches!(next, Next::Close) {
                    return;
                }
                last_input = clock::now();
            }
            if self.reader.is_finished() || !self.reader.wants_input() {
                return;
            }
            match self.read() {
                Ok(true) => last_input = clock::now(),
                Ok(false) if (clock::now() - last_input) < self.shared.options.idle_timeout => {}
                _ => return,
            }
        }
    }

    /// Reads once (up to [`POLL`]): `Ok(true)` when bytes or EOF arrived, `Ok(false)` on
    /// timeout. Sends `100 Continue` when the request asked for it.
    fn read(&mut self) -> io::Result<bool> {
        match self.stream.read(&mut self.buf) {
            Ok(0) => {
                self.eof = true;
                self.reader.handle_eof();
                Ok(true)
            }
            Ok(n) => {
                self.reader.handle_input(&self.buf[..n]);
                if self.reader.take_expect_continue() {
                    self.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
                }
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    fn send(&mut self, response: &HttpResponse) -> io::Result<()> {
        self.out.clear();
        response.write(&mut self.out);
        self.stream.write_all(&self.out)
    }

    /// Writes an open stream until it finishes, the client goes away, or the server stops.
    fn stream_reply(&mut self, stream: &HttpStream) -> Next {
        self.out.clear();
        stream.write_head(&mut self.out);
        if self.stream.write_all(&self.out).is_err() {
            self.cancel(stream);
            return Next::Close;
        }
        let mut last_write = clock::now();
        loop {
            if self.shared.stopping() {
                self.cancel(stream);
                return Next::Close;
            }
            self.out.clear();
            let status = {
                let mut endpoint = self.shared.endpoint();
                if !endpoint.stream_ready(stream) {
                    // Sleep until another thread gives this stream output, the next
                    // keep-alive comment is due, or it is time to look at the socket.
                    let keepalive = self.shared.options.sse_keepalive;
                    let wait = keepalive
                        .saturating_sub(clock::now() - last_write)
                        .clamp(Duration::from_millis(1), WATCH);
                    endpoint = self
                        .shared
                        .output
                        .wait_timeout(endpoint, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                endpoint.poll_stream(stream, &mut self.out)
            };
            if !self.out.is_empty() {
                if self.stream.write_all(&self.out).is_err() {
                    self.cancel(stream);
                    return Next::Close;
                }
                last_write = clock::now();
            }
            if status == StreamStatus::Finished {
                return if stream.closes_connection() {
                    Next::Close
                } else {
                    Next::Continue
                };
            }
            if (clock::now() - last_write) >= self.shared.options.sse_keepalive {
                self.out.clear();
                stream.write_comment(&mut self.out);
                if self.stream.write_all(&self.out).is_err() {
                    self.cancel(stream);
                    return Next::Close;
                }
                last_write = clock::now();
            }
            if self.client_left() {
                self.cancel(stream);
                return Next::Close;
            }
        }
    }

    /// Whether the client closed the connection or it failed, looked at without
    /// consuming anything: bytes waiting are pipelined requests, read after the stream.
    fn client_left(&mut self) -> bool {
        if self.eof {
            return true;
        }
        if self.stream.set_nonblocking(true).is_err() {
            return true;
        }
        let mut probe = [0u8; 1];
        let left = match self.stream.peek(&mut probe) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ),
        };
        left || self.stream.set_nonblocking(false).is_err()
    }

    fn cancel(&self, stream: &HttpStream) {
        self.shared.cancel(stream);
    }
}
