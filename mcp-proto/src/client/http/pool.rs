//! The connections under Streamable HTTP: how many, which exchange rides on which, when
//! an idle keep-alive connection is reused or expired, and the one retry of a request
//! that met a stale one.
//!
//! # Theory of operation
//!
//! Every exchange (one HTTP request and its response) is a job. A job takes an idle
//! connection when there is one (most recently used first), else a new connection when
//! the bound allows, else it waits in order. Connections carry one exchange at a time (no
//! pipelining): HTTP/1.1 keep-alive, never HTTP/2.
//!
//! Two bounds, each [`PoolConfig::max_connections`]: one for requests (idle connections
//! count here), one for long-lived streams (the legacy server stream, resumptions, 2026
//! listens), so a server that holds streams open can never starve the calls. A stream
//! takes an idle connection only within the stream bound, and a connection whose stream
//! ended joins the requests' side, where the longest idle one closes when it is over.
//!
//! A connection is *connecting* (until the driver reports it connected, within
//! [`PoolConfig::connect_timeout`]), *busy* with a job, or *idle* (since an instant; after
//! [`PoolConfig::idle_timeout`] it is closed rather than reused). The driver keeps reading
//! every connection, so a server closing an idle one is seen as end of input and the
//! connection is dropped; bytes arriving on an idle connection are a protocol violation and
//! close it.
//!
//! A request written on a *reused* connection that fails (end of input, reset, a failed
//! write) before any byte of its response arrived is sent again, once, on a fresh
//! connection: the server closed the idle connection as we wrote. Never after a response
//! byte (the request may have run), never for a job already retried, and never for a
//! request that must not run twice (`tools/call`, or a method the client does not know
//! to be a read): the server may have run it and then closed. Such a request takes only a
//! connection idle for less than [`PoolConfig::fresh_for`], so it seldom meets a closing
//! one, and fails with the transport error when it does.
//!
//! The pool never reads HTTP: the exchange layer above it parses responses and tells it
//! when one is over and whether the connection can be reused.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use super::exchange::ExchangeId;
use crate::Instant;
use crate::client::transmit::{ConnId, Origin, Transmit, TransportFailure, TransportFailureKind};

/// How connections are opened and kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolConfig {
    /// Connections carrying requests at once, idle ones included; as many more may carry
    /// long-lived streams. Default 16; 0 counts as 1.
    pub max_connections: usize,
    /// How long an idle keep-alive connection is kept for reuse. Default 30 s.
    pub idle_timeout: Duration,
    /// How long opening a connection (TCP and TLS) may take. Default 10 s. The adapters
    /// set it from their `HttpOptions::connect_timeout`, which the failure of a
    /// connection not open in time names.
    pub connect_timeout: Duration,
    /// How long a connection may have been idle and still carry a request that must not
    /// be sent twice (`tools/call`). Default 2 s, below the keep-alive timeout of common
    /// servers (Node's is 5 s), so such a request rarely meets a connection the server is
    /// closing, and is never sent again when it does.
    pub fresh_for: Duration,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            max_connections: 16,
            idle_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            fresh_for: Duration::from_secs(2),
        }
    }
}

/// Counters, for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Connections opened so far.
    pub opened: u64,
    /// Requests sent a second time after a stale keep-alive connection.
    pub retries: u64,
    /// Connections open now (connecting, busy or idle).
    pub open: usize,
    /// Idle connections now.
    pub idle: usize,
}

#[derive(Debug)]
struct Job {
    exchange: ExchangeId,
    /// The request's head and body, kept until a byte of its response arrives (for the
    /// one retry). Apart, so that a body is copied once: into the transmit buffer. The
    /// body is shared with the exchange's copy for sending it again (a refusal, a
    /// server too busy).
    bytes: (Vec<u8>, Arc<Vec<u8>>),
    long_lived: bool,
    /// Sending it twice is harmless (see the module docs).
    repeatable: bool,
    retried: bool,
    answered: bool,
}

#[derive(Debug)]
enum ConnState {
    Connecting { job: Job, deadline: Instant },
    Busy { job: Job },
    Idle { since: Instant },
}

#[derive(Debug)]
struct Conn {
    state: ConnState,
    /// Exchanges finished on it: more than zero means the current one reuses it.
    carried: u32,
}

/// Kinds of job the pool has no room for (see [`Pool::full`]).
struct Full {
    requests: bool,
    streams: bool,
}

/// What a job waiting in the queue costs beyond its request's bytes: the job itself, and
/// the link's record of its exchange with that record's slot in the exchanges' map (whose
/// table can be twice as large as what it holds). Counted with the bytes, so that the
/// queue's budget bounds the memory a flood of small answers takes, not only their text:
/// 60,000 pings answered on a stream that left no connection free took a simulated client
/// to 175 MiB when only the answers' text counted (under the default 16 MiB budget).
const JOB_RECORD_BYTES: usize =
    size_of::<Job>() + 2 * (size_of::<ExchangeId>() + size_of::<super::exchange::Exchange>());

impl Job {
    /// What it weighs in the queue: its request's bytes and its records
    /// ([`JOB_RECORD_BYTES`]).
    fn size(&self) -> usize {
        self.bytes.0.len() + self.bytes.1.len() + JOB_RECORD_BYTES
    }
}

impl Conn {
    fn job(&self) -> Option<&Job> {
        match &self.state {
            ConnState::Connecting { job, .. } | ConnState::Busy { job } => Some(job),
            ConnState::Idle { .. } => None,
        }
    }

    fn long_lived(&self) -> bool {
        self.job().is_some_and(|j| j.long_lived)
    }
}

#[derive(Debug)]
enum Command {
    Connect(ConnId),
    /// Write the request of the job on this connection.
    Write(ConnId),
    Close(ConnId),
}

/// What an input on a connection means for the exchange it carried.
#[derive(Debug)]
pub(super) enum Outcome {
    /// Nothing for the exchanges (an idle connection ended, a retry started).
    None,
    /// Hand this to the exchange's response reader.
    Deliver(ExchangeId),
    /// The exchange failed below HTTP.
    Failed(ExchangeId, TransportFailure),
}

/// The connections of one client to one origin.
#[derive(Debug)]
pub(super) struct Pool {
    origin: Origin,
    config: PoolConfig,
    next_conn: u64,
    conns: BTreeMap<ConnId, Conn>,
    /// Jobs waiting for a connection, in order.
    queue: VecDeque<Job>,
    /// Bytes of the requests of `queue`.
    waiting_bytes: usize,
    /// Jobs of `queue` that open long-lived streams.
    waiting_streams: usize,
    commands: VecDeque<Command>,
    opened: u64,
    retries: u64,
    /// What an answered job's body becomes: shared, so that letting a body go does not
    /// allocate an empty one.
    no_body: Arc<Vec<u8>>,
    /// The head buffer of the last answered request, emptied, for the next request's
    /// head (at most [`SPARE_HEAD_MAX`] bytes of capacity).
    spare_head: Vec<u8>,
}

/// The largest head buffer kept for the next request.
const SPARE_HEAD_MAX: usize = 8 * 1024;

/// The capacity a new head buffer starts with: room for a request head without a large
/// token.
const HEAD_CAPACITY: usize = 512;

impl Pool {
    pub(super) fn new(origin: Origin, config: PoolConfig) -> Pool {
        Pool {
            origin,
            config,
            // 0 is the stdio channel.
            next_conn: 1,
            conns: BTreeMap::new(),
            queue: VecDeque::new(),
            waiting_bytes: 0,
            waiting_streams: 0,
            commands: VecDeque::new(),
            opened: 0,
            retries: 0,
            no_body: Arc::default(),
            spare_head: Vec::new(),
        }
    }

    /// An empty buffer to write a request head into: the last answered request's, or a
    /// new one.
    pub(super) fn head_buffer(&mut self) -> Vec<u8> {
        if self.spare_head.capacity() == 0 {
            return Vec::with_capacity(HEAD_CAPACITY);
        }
        std::mem::take(&mut self.spare_head)
    }

    /// A connection id no connection of this client has had: the pool's own, and those
    /// of the authorization flow's one-shot connections, come from one sequence.
    pub(super) fn alloc_conn(&mut self) -> ConnId {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        id
    }

    pub(super) fn stats(&self) -> PoolStats {
        PoolStats {
            opened: self.opened,
            retries: self.retries,
            open: self.conns.len(),
            idle: self
                .conns
                .values()
                .filter(|c| matches!(c.state, ConnState::Idle { .. }))
                .count(),
        }
    }

    /// Sends a request: on an idle connection, a new one, or later.
    pub(super) fn submit(
        &mut self,
        now: Instant,
        exchange: ExchangeId,
        bytes: (Vec<u8>, Arc<Vec<u8>>),
        long_lived: bool,
        repeatable: bool,
    ) {
        let job = Job {
            exchange,
            bytes,
            long_lived,
            repeatable,
            retried: false,
            answered: false,
        };
        // Nothing waits: the job goes where `dispatch` would put the queue's only job
        // (a connection when its kind has room), without a turn through the queue.
        if self.queue.is_empty() {
            let full = self.full();
            let kind_full = if long_lived {
                full.streams
            } else {
                full.requests
            };
            let unplaced = if kind_full {
                Some(job)
            } else {
                self.place(now, job)
            };
            if let Some(job) = unplaced {
                self.waiting_bytes += job.size();
                self.waiting_streams += usize::from(job.long_lived);
                self.queue.push_back(job);
            }
            return;
        }
        self.waiting_bytes += job.size();
        self.waiting_streams += usize::from(job.long_lived);
        self.queue.push_back(job);
        self.dispatch(now);
    }

    /// Bytes of the requests waiting for a connection, with their records
    /// ([`JOB_RECORD_BYTES`] each).
    /// Whether a request (not a long-lived stream) waits for a connection.
    pub(super) fn has_waiting_requests(&self) -> bool {
        self.queue.len() > self.waiting_streams
    }

    pub(super) fn waiting_bytes(&self) -> usize {
        self.waiting_bytes
    }

    fn streams(&self) -> usize {
        self.conns.values().filter(|c| c.long_lived()).count()
    }

    /// The exchange is no longer wanted: dropped from the queue, or its connection
    /// closed (a response half read leaves nothing reusable).
    pub(super) fn abort(&mut self, now: Instant, exchange: ExchangeId) {
        self.abort_many(now, &[exchange]);
    }

    /// [`Pool::abort`] for several exchanges (`exchanges` sorted) at the cost of one walk
    /// of the queue, not one per exchange: giving up thousands of queued answers at their
    /// deadline, or all of them at the end, stays linear.
    pub(super) fn abort_many(&mut self, now: Instant, exchanges: &[ExchangeId]) {
        debug_assert!(exchanges.is_sorted());
        let sent: Vec<ConnId> = exchanges.iter().filter_map(|x| self.conn_of(*x)).collect();
        if sent.len() < exchanges.len() {
            let (mut bytes, mut streams) = (0, 0);
            self.queue.retain(|j| {
                let keep = exchanges.binary_search(&j.exchange).is_err();
                if !keep {
                    bytes += j.size();
                    streams += usize::from(j.long_lived);
                }
                keep
            });
            self.waiting_bytes -= bytes;
            self.waiting_streams -= streams;
        }
        if sent.is_empty() {
            return;
        }
        for conn in sent {
            self.close(conn);
        }
        self.dispatch(now);
    }

    /// The exchange's response is over; its connection goes back to the pool when
    /// `reusable` (keep-alive, nothing left over), or is closed.
    pub(super) fn finished(&mut self, now: Instant, exchange: ExchangeId, reusable: bool) {
        let Some(id) = self.conn_of(exchange) else {
            return;
        };
        if reusable && let Some(conn) = self.conns.get_mut(&id) {
            conn.state = ConnState::Idle { since: now };
            conn.carried += 1;
            self.trim_idle();
        } else {
            self.close(id);
        }
        self.dispatch(now);
    }

    /// Closes the longest-idle connections while the request side is over its bound: an
    /// idle connection counts there, and one that carried a long-lived stream joins it
    /// when the stream ends (else every listen that ended would leave one more open
    /// connection behind, until the idle timeout).
    fn trim_idle(&mut self) {
        while self.conns.len() - self.streams() > self.max() {
            let Some(id) = self.longest_idle() else {
                return;
            };
            self.close(id);
        }
    }

    /// The connection idle for longest, if any.
    fn longest_idle(&self) -> Option<ConnId> {
        let idle = self.conns.iter().filter_map(|(id, c)| match c.state {
            ConnState::Idle { since } => Some((since, *id)),
            _ => None,
        });
        idle.min().map(|(_, id)| id)
    }

    /// The driver connected `conn`: its request goes out.
    pub(super) fn connected(&mut self, conn: ConnId) {
        let Some(c) = self.conns.remove(&conn) else {
            return;
        };
        let state = match c.state {
            ConnState::Connecting { job, .. } => {
                self.commands.push_back(Command::Write(conn));
                ConnState::Busy { job }
            }
            other => other,
        };
        self.conns.insert(conn, Conn { state, ..c });
    }

    /// Bytes arrived on `conn`: [`Outcome::Deliver`] to the exchange they belong to.
    /// Bytes on an idle or unknown connection close it; on one still being opened, they
    /// close it too and fail the exchange it was opened for ([`Outcome::Failed`]): its
    /// request was never written, and nothing else would ever end it.
    pub(super) fn read(&mut self, now: Instant, conn: ConnId) -> Outcome {
        let job = match self.conns.get_mut(&conn).map(|c| &mut c.state) {
            Some(ConnState::Busy { job }) => job,
            Some(ConnState::Connecting { job, .. }) => {
                let exchange = job.exchange;
                self.close(conn);
                self.dispatch(now);
                let failure = TransportFailure::new(
                    TransportFailureKind::Io,
                    format!("{} sent bytes before the request was written", self.origin),
                );
                return Outcome::Failed(exchange, failure);
            }
            Some(ConnState::Idle { .. }) => {
                self.close(conn);
                self.dispatch(now);
                return Outcome::None;
            }
            None => return Outcome::None,
        };
        if !job.answered {
            job.answered = true;
            let (mut head, _) =
                std::mem::replace(&mut job.bytes, (Vec::new(), Arc::clone(&self.no_body)));
            if head.capacity() <= SPARE_HEAD_MAX && head.capacity() > self.spare_head.capacity() {
                head.clear();
                self.spare_head = head;
            }
        }
        Outcome::Deliver(job.exchange)
    }

    /// `conn` reached end of input.
    pub(super) fn eof(&mut self, now: Instant, conn: ConnId) -> Outcome {
        let failure =
            || TransportFailure::new(TransportFailureKind::Closed, "closed by the server");
        self.ended(now, conn, failure, true)
    }

    /// `conn` failed below HTTP.
    pub(super) fn failed(
        &mut self,
        now: Instant,
        conn: ConnId,
        failure: TransportFailure,
    ) -> Outcome {
        self.ended(now, conn, || failure, false)
    }

    fn ended(
        &mut self,
        now: Instant,
        conn: ConnId,
        failure: impl FnOnce() -> TransportFailure,
        eof: bool,
    ) -> Outcome {
        let Some(c) = self.conns.get(&conn) else {
            return Outcome::None;
        };
        let outcome = match &c.state {
            ConnState::Idle { .. } => Outcome::None,
            ConnState::Connecting { job, .. } => Outcome::Failed(job.exchange, failure()),
            ConnState::Busy { job }
                if !job.answered && c.carried > 0 && !job.retried && job.repeatable =>
            {
                // The server closed a kept-alive connection as we wrote: send it again,
                // once, on a fresh connection.
                let Some(Conn {
                    state: ConnState::Busy { mut job },
                    ..
                }) = self.conns.remove(&conn)
                else {
                    return Outcome::None;
                };
                self.commands.push_back(Command::Close(conn));
                job.retried = true;
                self.retries += 1;
                self.waiting_bytes += job.size();
                self.waiting_streams += usize::from(job.long_lived);
                self.queue.push_front(job);
                self.dispatch(now);
                return Outcome::None;
            }
            // End of input is the response's own business (a close-delimited body ends
            // there); the exchange layer reports `finished` and the connection closes.
            ConnState::Busy { job } if eof => return Outcome::Deliver(job.exchange),
            ConnState::Busy { job } => Outcome::Failed(job.exchange, failure()),
        };
        self.close(conn);
        self.dispatch(now);
        outcome
    }

    /// Connections that took too long to open fail their exchange; idle ones past their
    /// time close.
    pub(super) fn handle_timeout(&mut self, now: Instant) -> Vec<(ExchangeId, TransportFailure)> {
        let mut failed = Vec::new();
        let mut expired = Vec::new();
        for (id, c) in &self.conns {
            match &c.state {
                ConnState::Connecting { job, deadline } if *deadline <= now => {
                    // The origin is the caller's to add (`timed out connecting to …`);
                    // the limit is named as the adapters' option that sets it.
                    let detail = format!(
                        "not connected within {:?} (HttpOptions::connect_timeout)",
                        self.config.connect_timeout
                    );
                    let failure = TransportFailure::new(TransportFailureKind::Timeout, detail);
                    failed.push((job.exchange, failure));
                    expired.push(*id);
                }
                ConnState::Idle { since } if *since + self.config.idle_timeout <= now => {
                    expired.push(*id);
                }
                _ => {}
            }
        }
        for id in expired {
            self.close(id);
        }
        if !failed.is_empty() {
            self.dispatch(now);
        }
        failed
    }

    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        self.conns
            .values()
            .filter_map(|c| match &c.state {
                ConnState::Connecting { deadline, .. } => Some(*deadline),
                ConnState::Idle { since } => Some(*since + self.config.idle_timeout),
                ConnState::Busy { .. } => None,
            })
            .min()
    }

    /// Closes every connection and forgets every job.
    pub(super) fn close_all(&mut self) {
        self.queue.clear();
        self.waiting_bytes = 0;
        self.waiting_streams = 0;
        let ids: Vec<ConnId> = self.conns.keys().copied().collect();
        for id in ids {
            self.close(id);
        }
    }

    /// Whether `conn` is open and carries no exchange: a response on it just ended.
    pub(super) fn is_idle(&self, conn: ConnId) -> bool {
        self.conns
            .get(&conn)
            .is_some_and(|c| matches!(c.state, ConnState::Idle { .. }))
    }

    /// Whether every connection is closed and the driver was told so.
    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty() && self.conns.is_empty() && self.commands.is_empty()
    }

    /// The next command, with a request's bytes appended to `buf`.
    pub(super) fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> Option<Transmit> {
        loop {
            let command = self.commands.pop_front()?;
            return Some(match command {
                Command::Connect(conn) => {
                    if !self.conns.contains_key(&conn) {
                        continue;
                    }
                    Transmit::Connect {
                        conn,
                        origin: self.origin.clone(),
                    }
                }
                Command::Write(conn) => {
                    let Some(job) = self.conns.get(&conn).and_then(Conn::job) else {
                        continue;
                    };
                    let (head, body) = &job.bytes;
                    buf.reserve(head.len() + body.len());
                    buf.extend_from_slice(head);
                    buf.extend_from_slice(body);
                    Transmit::Write {
                        conn,
                        len: head.len() + body.len(),
                    }
                }
                Command::Close(conn) => Transmit::Close { conn },
            });
        }
    }

    fn conn_of(&self, exchange: ExchangeId) -> Option<ConnId> {
        self.conns
            .iter()
            .find(|(_, c)| c.job().is_some_and(|j| j.exchange == exchange))
            .map(|(id, _)| *id)
    }

    fn close(&mut self, conn: ConnId) {
        if self.conns.remove(&conn).is_some() {
            self.commands.push_back(Command::Close(conn));
        }
    }

    fn max(&self) -> usize {
        self.config.max_connections.max(1)
    }

    /// Puts waiting jobs on connections, in order, as far as the bounds allow.
    ///
    /// Each queued job once, in order; one that finds no connection keeps its place. A
    /// job of a kind with no room left (no idle connection to take or close, every
    /// connection for its kind in use) is passed over without trying, and the walk stops
    /// once no kind that is waiting has room: a long queue costs nothing while the pool
    /// is full.
    fn dispatch(&mut self, now: Instant) {
        // What has room changes only when a job is placed (or fails to be): the pool is
        // looked at again then, not for each job passed over (nor when none waits).
        if self.queue.is_empty() {
            return;
        }
        let mut full = self.full();
        let mut i = 0;
        while i < self.queue.len() {
            if full.requests && (full.streams || self.waiting_streams == 0) {
                return;
            }
            let long_lived = self.queue[i].long_lived;
            if (long_lived && full.streams) || (!long_lived && full.requests) {
                i += 1;
                continue;
            }
            let Some(job) = self.queue.remove(i) else {
                return;
            };
            let size = job.size();
            match self.place(now, job) {
                Some(job) => {
                    self.queue.insert(i, job);
                    i += 1;
                }
                None => {
                    self.waiting_bytes -= size;
                    self.waiting_streams -= usize::from(long_lived);
                }
            }
            if i >= self.queue.len() {
                return;
            }
            full = self.full();
        }
    }

    /// Which kinds of job could not have a connection now: no idle one to take (or
    /// close), and every connection for that kind in use.
    fn full(&self) -> Full {
        let idle = self
            .conns
            .values()
            .any(|c| matches!(c.state, ConnState::Idle { .. }));
        let streams = self.streams();
        Full {
            requests: !idle && self.conns.len() - streams >= self.max(),
            // The stream bound counts streams, whichever connection carries them: an
            // idle one taken for a stream is one stream more.
            streams: streams >= self.max(),
        }
    }

    /// Puts `job` on a connection, or hands it back when none can be had.
    fn place(&mut self, now: Instant, job: Job) -> Option<Job> {
        if job.long_lived && self.streams() >= self.max() {
            return Some(job);
        }
        // Reuse: the most recently idle connection that has not expired. A retried job
        // takes only a fresh connection; one that must not be sent twice only a
        // connection idle for less than `fresh_for`, which the server is not about to
        // close (it would not be sent again if it were).
        if !job.retried {
            let kept_for = if job.repeatable {
                self.config.idle_timeout
            } else {
                self.config.idle_timeout.min(self.config.fresh_for)
            };
            let idle = self
                .conns
                .iter()
                .filter_map(|(id, c)| match c.state {
                    ConnState::Idle { since } if since + kept_for > now => Some((since, *id)),
                    _ => None,
                })
                .max();
            if let Some((_, id)) = idle
                && let Some(conn) = self.conns.get_mut(&id)
            {
                conn.state = ConnState::Busy { job };
                self.commands.push_back(Command::Write(id));
                return None;
            }
        }
        let streams = self.streams();
        let requests = self.conns.len() - streams;
        let room = if job.long_lived {
            streams < self.max()
        } else if requests < self.max() {
            true
        } else {
            // Make room by closing the longest-idle connection, if any.
            match self.longest_idle() {
                Some(id) => {
                    self.close(id);
                    true
                }
                None => false,
            }
        };
        if !room {
            return Some(job);
        }
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        self.opened += 1;
        let deadline = now + self.config.connect_timeout;
        self.conns.insert(
            id,
            Conn {
                state: ConnState::Connecting { job, deadline },
                carried: 0,
            },
        );
        self.commands.push_back(Command::Connect(id));
        None
    }
}
