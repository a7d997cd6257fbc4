//! Connections to the endpoint: one worker thread per connection, an idle pool for
//! keep-alive, a bound on open connections, and the retry of a request that met a stale
//! pooled connection.
//!
//! # The bound
//!
//! At most `max_connections` connections carry requests (idle pooled ones included), and
//! at most as many more carry long-lived streams ([`Transmit::long_lived`], the legacy
//! server stream and resumptions): a server holding streams open can never starve the
//! calls. Exchanges beyond the bound wait in a queue, in order, until a connection of
//! their kind finishes or closes.
//!
//! # The worker
//!
//! A worker owns its [`Stream`] outright (a TLS stream cannot be shared between a reading
//! and a writing thread without locks around rustls), so it does all the IO of its
//! connection in turn: connect, then for each job write the request and read the response,
//! sending every chunk to the caller's thread over one bounded channel shared by all
//! workers (the same back-pressure as the stdio reader). To know when a response is over
//! — so it can stop reading and take the next job instead of blocking in `read` on a
//! keep-alive connection — it runs its own [`ResponseReader`] over the bytes it forwards,
//! the same parser with the same limits the machine uses, and marks the last chunk of a
//! response that leaves the connection reusable. The machine stays the authority: the
//! connection goes back to the pool only when the machine says `reusable` *and* the
//! worker saw the same end.
//!
//! An idle worker waits for its next job and does not read, so a server closing an idle
//! connection goes unnoticed until the next request on it. That request then fails to
//! write or meets end of file before any byte of its response; it is sent again, once, on
//! a fresh connection (never when a byte of the response arrived). Idle connections older
//! than the idle timeout are closed rather than reused.
//!
//! Aborting an exchange shuts its socket down ([`super::ShutdownHandle`]), which ends the
//! worker's blocked read; the worker then exits and drops the stream.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use mcp_proto::Instant;

use mcp_proto::client::http::{ExchangeId, Finished, Transmit};
use mcp_proto::http::{EndpointUrl, HttpLimits, ResponseEvent, ResponseReader};

use super::connector::{
    Connector, ShutdownHandle, Stream, TransportError, TransportStage, target_of,
};

/// Bytes read from a connection in one go.
const READ_CHUNK: usize = 64 * 1024;
/// Reports waiting for the caller's thread, all connections together, before workers block.
const REPORT_QUEUE: usize = 64;

/// Where a connection's reports go.
type Reports = SyncSender<(u64, Report)>;

/// What a worker tells the caller's thread.
#[derive(Debug)]
enum Report {
    /// Response bytes. `complete`: the worker's parser saw the response end with the
    /// connection reusable; the worker now waits for its next job.
    Data { bytes: Vec<u8>, complete: bool },
    /// The server closed the connection.
    Eof,
    /// Connecting, writing or reading failed; the worker has exited.
    Failed(TransportError),
}

/// One request for a worker.
struct Job {
    bytes: Arc<[u8]>,
    method: String,
}

/// What the caller's thread shares with a worker.
struct Shared {
    closed: AtomicBool,
    handle: Mutex<Option<ShutdownHandle>>,
}

impl Shared {
    /// Closes the connection: no job is written after this, and a blocked read returns.
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let handle = self
            .handle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(h) = handle {
            h.shutdown();
        }
    }
}

/// A request waiting for (or riding on) a connection.
#[derive(Clone)]
struct Pending {
    exchange: ExchangeId,
    bytes: Arc<[u8]>,
    method: String,
    /// Already sent once on a reused connection that turned out stale.
    retried: bool,
    /// A stream that may stay open indefinitely (the legacy GET); bounded apart from
    /// requests, so that streams never starve calls.
    long_lived: bool,
}

/// The caller's view of one connection.
struct Conn {
    jobs: Sender<Job>,
    shared: Arc<Shared>,
    /// The exchange it carries, if any.
    current: Option<Pending>,
    /// Exchanges it carried before the current one.
    carried: u32,
    /// A byte of the current exchange's response arrived.
    got_bytes: bool,
    /// The worker's parser saw the current response end, reusable.
    complete: bool,
    /// Since when it has been idle in the pool.
    idle_since: Option<Instant>,
}

/// What [`Pool::wait`] produced for the machine.
#[derive(Debug)]
pub(crate) enum Input {
    /// Response bytes for an exchange; `true` when the response is complete.
    Data(ExchangeId, Vec<u8>, bool),
    /// The exchange's connection ended.
    Eof(ExchangeId),
    /// The exchange failed below HTTP.
    Failed(ExchangeId, TransportError),
}

/// The outcome of one wait.
#[derive(Debug)]
pub(crate) enum Waited {
    /// Something for the machine.
    Input(Input),
    /// Something the pool handled itself (an idle connection closed, a retry started).
    Internal,
    /// The timeout passed.
    Timeout,
    /// Nothing can arrive: no connection is busy and there is no timeout.
    Idle,
}

/// How connections are opened and kept.
#[derive(Clone)]
pub(crate) struct PoolConfig {
    pub(crate) connector: Arc<dyn Connector>,
    pub(crate) connect_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) limits: HttpLimits,
}

/// The connections of one client.
pub(crate) struct Pool {
    url: EndpointUrl,
    config: PoolConfig,
    tx: Reports,
    rx: Receiver<(u64, Report)>,
    next_conn: u64,
    conns: HashMap<u64, Conn>,
    /// Idle connections, most recently used last.
    idle: Vec<u64>,
    by_exchange: HashMap<ExchangeId, u64>,
    /// Requests waiting for a connection (the open-connection bound was reached), with
    /// whether they need a fresh one.
    queue: VecDeque<(Pending, bool)>,
    /// Connections opened so far.
    opened: u64,
    /// Requests sent again after a stale pooled connection.
    retries: u64,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("url", &self.url.as_str())
            .field("open", &self.conns.len())
            .field("idle", &self.idle.len())
            .field("queued", &self.queue.len())
            .field("opened", &self.opened)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

impl Pool {
    pub(crate) fn new(url: EndpointUrl, config: PoolConfig) -> Self {
        let (tx, rx) = mpsc::sync_channel(REPORT_QUEUE);
        Pool {
            url,
            config,
            tx,
            rx,
            next_conn: 0,
            conns: HashMap::new(),
            idle: Vec::new(),
            by_exchange: HashMap::new(),
            queue: VecDeque::new(),
            opened: 0,
            retries: 0,
        }
    }

    /// Connections opened so far.
    pub(crate) fn opened(&self) -> u64 {
        self.opened
    }

    /// Requests sent a second time because a pooled connection had gone stale.
    pub(crate) fn retries(&self) -> u64 {
        self.retries
    }

    /// Whether anything is in flight or waiting.
    pub(crate) fn busy(&self) -> bool {
        !self.by_exchange.is_empty() || !self.queue.is_empty()
    }

    /// Whether a request waits for a connection, or a response is still coming (its
    /// connection neither ended nor saw the response complete).
    pub(crate) fn awaiting_responses(&self) -> bool {
        !self.queue.is_empty()
            || self
                .conns
                .values()
                .any(|c| c.current.is_some() && !c.complete)
    }

    /// Whether `exchange` is queued or on a connection.
    pub(crate) fn carries(&self, exchange: ExchangeId) -> bool {
        self.by_exchange.contains_key(&exchange)
            || self.queue.iter().any(|(p, _)| p.exchange == exchange)
    }

    /// Sends a request: on an idle connection, a new one, or later.
    pub(crate) fn send(&mut self, now: Instant, t: Transmit) {
        let method = t
            .bytes
            .split(|b| *b == b' ')
            .next()
            .map(|m| String::from_utf8_lossy(m).into_owned())
            .unwrap_or_default();
        let pending = Pending {
            exchange: t.exchange,
            bytes: t.bytes.into(),
            method,
            retried: false,
            long_lived: t.long_lived,
        };
        self.dispatch(now, pending, false);
    }

    /// Connections counted against the bound of `long_lived` exchanges (idle ones count
    /// with the requests).
    fn count(&self, long_lived: bool) -> usize {
        self.conns
            .values()
            .filter(|c| {
                c.current
                    .as_ref()
                    .map_or(!long_lived, |p| p.long_lived == long_lived)
            })
            .count()
    }

    fn dispatch(&mut self, now: Instant, pending: Pending, fresh: bool) {
        if !fresh && let Some(id) = self.take_idle(now) {
            self.start_on(id, pending);
            return;
        }
        let max = self.config.max_connections;
        if !pending.long_lived
            && self.count(false) >= max
            && let Some(oldest) = (!self.idle.is_empty()).then(|| self.idle.remove(0))
        {
            // Make room: an idle connection is worth less than a fresh one now.
            self.close_conn(oldest);
        }
        if self.count(pending.long_lived) >= max {
            self.queue.push_back((pending, fresh));
            return;
        }
        let id = self.open();
        self.start_on(id, pending);
    }

    /// The most recently used idle connection that is not too old.
    fn take_idle(&mut self, now: Instant) -> Option<u64> {
        while let Some(id) = self.idle.pop() {
            let fresh_enough =
                self.conns
                    .get(&id)
                    .and_then(|c| c.idle_since)
                    .is_some_and(|since| {
                        now.saturating_duration_since(since) < self.config.idle_timeout
                    });
            if fresh_enough {
                return Some(id);
            }
            self.close_conn(id);
        }
        None
    }

    fn start_on(&mut self, id: u64, pending: Pending) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.idle_since.take().is_some() {
            conn.carried += 1;
        }
        conn.got_bytes = false;
        conn.complete = false;
        let job = Job {
            bytes: Arc::clone(&pending.bytes),
            method: pending.method.clone(),
        };
        self.by_exchange.insert(pending.exchange, id);
        conn.current = Some(pending);
        if conn.jobs.send(job).is_err() {
            // The worker is gone; its report (already queued) settles the exchange.
        }
    }

    /// Spawns a worker for a new connection.
    fn open(&mut self) -> u64 {
        let id = self.next_conn;
        self.next_conn += 1;
        self.opened += 1;
        let (jobs, job_rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            closed: AtomicBool::new(false),
            handle: Mutex::new(None),
        });
        let worker = Worker {
            id,
            url: self.url.clone(),
            config: self.config.clone(),
            jobs: job_rx,
            reports: self.tx.clone(),
            shared: Arc::clone(&shared),
        };
        let spawned = thread::Builder::new()
            .name(format!("mcp-http-{id}"))
            .spawn(move || worker.run());
        if let Err(e) = spawned {
            let error = TransportError::new(TransportStage::Connect, target_of(&self.url), e);
            let _ = self.tx.try_send((id, Report::Failed(error)));
        }
        self.conns.insert(
            id,
            Conn {
                jobs,
                shared,
                current: None,
                carried: 0,
                got_bytes: false,
                complete: false,
                idle_since: None,
            },
        );
        id
    }

    fn close_conn(&mut self, id: u64) {
        if let Some(conn) = self.conns.remove(&id) {
            conn.shared.close();
            if let Some(p) = conn.current {
                self.by_exchange.remove(&p.exchange);
            }
        }
        self.idle.retain(|i| *i != id);
    }

    /// Starts queued requests while there is room.
    fn service_queue(&mut self, now: Instant) {
        // Those still without room go back in the queue, in order.
        for (pending, fresh) in std::mem::take(&mut self.queue) {
            self.dispatch(now, pending, fresh);
        }
    }

    /// The machine gave up on `exchange`: close its connection now.
    pub(crate) fn abort(&mut self, now: Instant, exchange: ExchangeId) {
        self.queue.retain(|(p, _)| p.exchange != exchange);
        if let Some(id) = self.by_exchange.remove(&exchange) {
            self.close_conn(id);
        }
        self.service_queue(now);
    }

    /// The machine is done with an exchange: pool its connection or close it.
    pub(crate) fn finished(&mut self, now: Instant, f: Finished) {
        let Some(id) = self.by_exchange.remove(&f.exchange) else {
            return;
        };
        match self.conns.get_mut(&id) {
            Some(conn) if f.reusable && conn.complete => {
                conn.current = None;
                conn.idle_since = Some(now);
                self.idle.push(id);
            }
            _ => self.close_conn(id),
        }
        self.service_queue(now);
    }

    /// Waits up to `timeout` (forever with `None`) for one report and handles it.
    pub(crate) fn wait(&mut self, now: Instant, timeout: Option<Duration>) -> Waited {
        let received = match timeout {
            _ if !self.busy() && self.conns.is_empty() && timeout.is_none() => {
                return Waited::Idle;
            }
            Some(t) => match self.rx.recv_timeout(t) {
                Ok(r) => r,
                Err(RecvTimeoutError::Timeout) => return Waited::Timeout,
                Err(RecvTimeoutError::Disconnected) => return Waited::Idle,
            },
            None if !self.busy() => return Waited::Idle,
            None => match self.rx.recv() {
                Ok(r) => r,
                Err(_) => return Waited::Idle,
            },
        };
        self.handle(now, received)
    }

    fn handle(&mut self, now: Instant, (id, report): (u64, Report)) -> Waited {
        let Some(conn) = self.conns.get_mut(&id) else {
            // A connection closed already (aborted, or replaced): nobody waits for it.
            return Waited::Internal;
        };
        let Some(exchange) = conn.current.as_ref().map(|p| p.exchange) else {
            // Bytes or an end on an idle connection: it is no longer usable.
            self.close_conn(id);
            return Waited::Internal;
        };
        if let Report::Data { bytes, complete } = report {
            conn.got_bytes = true;
            conn.complete = complete;
            return Waited::Input(Input::Data(exchange, bytes, complete));
        }
        if self.stale(id)
            && let Some(mut pending) = self.conns.get(&id).and_then(|c| c.current.clone())
        {
            // A pooled connection the server had closed: send the request again, once,
            // on a fresh connection.
            pending.retried = true;
            self.retries += 1;
            self.close_conn(id);
            self.dispatch(now, pending, true);
            return Waited::Internal;
        }
        self.close_conn(id);
        self.service_queue(now);
        match report {
            Report::Failed(error) => Waited::Input(Input::Failed(exchange, error)),
            _ => Waited::Input(Input::Eof(exchange)),
        }
    }

    /// Whether connection `id` failed as a stale pooled connection does: its current
    /// exchange was not its first, no byte of the response came, and the request was
    /// not already sent again once.
    fn stale(&self, id: u64) -> bool {
        self.conns.get(&id).is_some_and(|c| {
            c.carried > 0 && !c.got_bytes && c.current.as_ref().is_some_and(|p| !p.retried)
        })
    }

    /// Closes every connection.
    pub(crate) fn close_all(&mut self) {
        let ids: Vec<u64> = self.conns.keys().copied().collect();
        for id in ids {
            self.close_conn(id);
        }
        self.queue.clear();
        self.by_exchange.clear();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.close_all();
    }
}

/// The thread of one connection.
struct Worker {
    id: u64,
    url: EndpointUrl,
    config: PoolConfig,
    jobs: Receiver<Job>,
    reports: Reports,
    shared: Arc<Shared>,
}

impl Worker {
    fn run(self) {
        let mut stream = match self
            .config
            .connector
            .connect(&self.url, self.config.connect_timeout)
        {
            Ok(s) => s,
            Err(e) => {
                let error = TransportError::from_connect(&self.url, e);
                let _ = self.reports.send((self.id, Report::Failed(error)));
                return;
            }
        };
        {
            let mut slot = self
                .shared
                .handle
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if self.shared.closed.load(Ordering::SeqCst) {
                return;
            }
            *slot = stream.shutdown_handle().ok();
        }
        let mut buf = vec![0u8; READ_CHUNK];
        while let Ok(job) = self.jobs.recv() {
            if self.shared.closed.load(Ordering::SeqCst) {
                return;
            }
            if let Err(e) = stream.write_all(&job.bytes).and_then(|()| stream.flush()) {
                self.fail(TransportStage::Write, e);
                return;
            }
            if !self.read_response(&mut *stream, &mut buf, &job.method) {
                return;
            }
        }
    }

    /// Forwards the response; true when it ended with the connection reusable (the
    /// worker then waits for the next job), false when the worker must exit.
    fn read_response(&self, stream: &mut dyn Stream, buf: &mut [u8], method: &str) -> bool {
        let mut parser = Some(ResponseReader::new(self.config.limits.clone(), method));
        loop {
            let n = match stream.read(buf) {
                Ok(0) => {
                    let _ = self.reports.send((self.id, Report::Eof));
                    return false;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.fail(TransportStage::Read, e);
                    return false;
                }
            };
            let mut complete = false;
            if let Some(p) = &mut parser {
                p.handle_input(&buf[..n]);
                while let Some(ev) = p.poll_event() {
                    match ev {
                        ResponseEvent::End { keep_alive } => {
                            complete = keep_alive && p.leftover().is_empty();
                        }
                        ResponseEvent::Error(_) => complete = false,
                        _ => continue,
                    }
                    break;
                }
                if !p.wants_input() {
                    // Ended (reusable or not) or failed: nothing more to learn here.
                    parser = None;
                }
            }
            let data = Report::Data {
                bytes: buf[..n].to_vec(),
                complete,
            };
            if self.reports.send((self.id, data)).is_err() {
                return false;
            }
            if complete {
                return true;
            }
        }
    }

    fn fail(&self, stage: TransportStage, e: io::Error) {
        if self.shared.closed.load(Ordering::SeqCst) {
            return;
        }
        let error = TransportError::new(stage, target_of(&self.url), e);
        let _ = self.reports.send((self.id, Report::Failed(error)));
    }
}
