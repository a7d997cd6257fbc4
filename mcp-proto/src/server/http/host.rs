//! Admission of connections: how many are served at once, and what happens to one more.
//!
//! # Theory of operation
//!
//! [`HttpHost::accept`] is asked about every connection the adapter accepts. While fewer
//! than `max_connections` are served, the new one is served: an [`HttpConnection`] that
//! reads requests. Past that it gets a refusing machine, which writes `503 Service
//! Unavailable` with `Retry-After: 1` and `Connection: close` and closes gracefully. When
//! `max_connections` (at least 16) are already on their way out (refused, or closing
//! after their last response, lingering), `accept` says `None`: close the socket without
//! a word. So a flood of connections never costs more than the two bounds in threads or
//! tasks.
//!
//! **Making room.** With every place taken, a newcomer may take the place of a served
//! connection that is only waiting for a request, or reading one, and has been for at
//! least [`EVICTABLE_AFTER`]: the one waiting longest is *evicted* and the newcomer is
//! served. Clients that hold connections without using them (kept alive and idle, or
//! dripping a request head or body within its deadlines) would otherwise hold every
//! place for as long as those deadlines allow, hours for a slow 8 MiB body, and every
//! other client would be refused. An evicted connection is told at once: the waker its
//! adapter registered ([`HttpConnection::set_eviction_waker`]) is woken (the blocking
//! adapter ends the socket's reading, an async one wakes the connection's task) and its
//! deadline is due; without a waker it learns it at its next input or deadline. A
//! request already read in full is answered, with `Connection: close`; one partly read is
//! answered `503` with `Retry-After: 1`; an idle one closes without a word. Until then it
//! still counts, so the served connections may exceed `max_connections` by those being
//! evicted, never by more than `max_connections`; one left until its own deadline (10 s
//! for a fresh connection) held that place as long, and a client opening idle
//! connections fast enough kept the evicting places full and others refused.
//!
//! A served connection that starts closing moves to the closing count when there is room
//! there, so that its linger does not hold a place a new client could use; it frees its
//! place when the machine is dropped. The counts live in the machines' permits, so an
//! adapter has nothing to report: dropping a machine, on any path, frees what it held.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Waker;
use std::time::Duration;

use crate::Instant;

use super::{HttpConnection, HttpConnectionConfig, HttpEndpointConfig, HttpRequestLimits};

/// How an HTTP server runs. Start from [`HttpServeOptions::default`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HttpServeOptions {
    /// The endpoint: path (default `/mcp`), extra allowed origins, open stream bound.
    pub endpoint: HttpEndpointConfig,
    /// Request size and pipelining bounds.
    pub limits: HttpRequestLimits,
    /// Bytes all connections may hold of requests being read and answers being written,
    /// together; past it, a connection reading a request is answered 503 and closed.
    /// Default 256 MiB ([`DEFAULT_MAX_BUFFERED_BYTES`]).
    pub max_buffered_bytes: usize,
    /// Connections served at once (0 counts as 1). Default 128: twice the endpoint's
    /// default `max_open_streams`, so that requests which stay open (each holds its
    /// connection) leave room for prompt ones. Keep it above `max_open_streams`. With
    /// all taken, a newcomer takes the place of one that has only waited for a request
    /// for [`EVICTABLE_AFTER`] or more (see [`HttpHost`]).
    pub max_connections: usize,
    /// A kept-alive connection with no new request for this long is closed; so is one
    /// whose client stops reading for this long. Default 30 s.
    pub idle_timeout: Duration,
    /// A request head must be complete this long after its first byte (after the
    /// connection opened, for its first request), else 408 and the connection closes.
    /// Default 10 s.
    pub head_timeout: Duration,
    /// The lowest average rate of a request body, in bytes per second, beyond the slack
    /// of `body_grace`; a slower body is answered 408 and the connection closes.
    /// Default 240; 0 asks only that a body never stalls for longer than `body_grace`.
    pub min_body_bytes_per_sec: u64,
    /// How far behind `min_body_bytes_per_sec` a body may fall (and so how long it may
    /// stall). Default 5 s.
    pub body_grace: Duration,
    /// Interval of SSE comment lines on open streams. Default 15 s.
    pub sse_keepalive: Duration,
}

impl Default for HttpServeOptions {
    fn default() -> Self {
        let connection = HttpConnectionConfig::default();
        HttpServeOptions {
            endpoint: HttpEndpointConfig::default(),
            limits: connection.limits,
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
            max_connections: 128,
            idle_timeout: connection.idle_timeout,
            head_timeout: connection.head_timeout,
            min_body_bytes_per_sec: connection.min_body_bytes_per_sec,
            body_grace: connection.body_grace,
            sse_keepalive: connection.sse_keepalive,
        }
    }
}

impl HttpServeOptions {
    /// The machines' configuration of each connection: these bounds, with
    /// `idle_timeout` also bounding a client that stops reading (`send_timeout`).
    #[must_use]
    pub fn connection(&self) -> HttpConnectionConfig {
        HttpConnectionConfig {
            limits: self.limits.clone(),
            idle_timeout: self.idle_timeout,
            send_timeout: self.idle_timeout,
            head_timeout: self.head_timeout,
            min_body_bytes_per_sec: self.min_body_bytes_per_sec,
            body_grace: self.body_grace,
            sse_keepalive: self.sse_keepalive,
            ..HttpConnectionConfig::default()
        }
    }
}

/// Decides which connections are served; see the module docs. Clones share the counts.
///
/// ```
/// use mcp_proto::Instant;
/// use mcp_proto::server::http::{HttpConnectionConfig, HttpHost};
///
/// let host = HttpHost::new(1, HttpConnectionConfig::default());
/// let served = host.accept(Instant::ZERO).unwrap();
/// assert!(!served.is_refusal());
/// let refused = host.accept(Instant::ZERO).unwrap();
/// assert!(refused.is_refusal());
/// drop(served);
/// assert_eq!(host.connections(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct HttpHost {
    counts: Arc<Counts>,
    config: HttpConnectionConfig,
}

/// How long a served connection must have been waiting for a request (or reading one)
/// before a newcomer may take its place when all are taken.
pub const EVICTABLE_AFTER: Duration = Duration::from_secs(1);

/// The default of [`HttpServeOptions::max_buffered_bytes`]: 256 MiB.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 256 * 1024 * 1024;

#[derive(Debug)]
struct Counts {
    max_connections: usize,
    max_closing: usize,
    serving: AtomicUsize,
    closing: AtomicUsize,
    /// Served connections evicted and not gone yet.
    evicting: AtomicUsize,
    /// Bytes the connections hold (requests being read, answers being written).
    held_bytes: AtomicUsize,
    max_buffered_bytes: AtomicUsize,
    /// The number of the next permit.
    next: AtomicU64,
    /// The served connections by permit number: since when each waits for a request (or
    /// reads one), and the flag that tells one it was evicted. Entries stay while the
    /// connection is served, so that the per-request updates only change them in place.
    waiting: Mutex<BTreeMap<u64, Waiting>>,
}

#[derive(Debug)]
struct Waiting {
    /// `None` while it answers a request (or streams, or writes an answer).
    since: Option<Instant>,
    evicted: Arc<AtomicBool>,
    /// What its adapter wants woken when it is evicted.
    waker: Option<Waker>,
}

impl Counts {
    fn waiting(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl HttpHost {
    /// Serves at most `max_connections` connections at once (0 counts as 1), each with
    /// `config`.
    #[must_use]
    pub fn new(max_connections: usize, config: HttpConnectionConfig) -> Self {
        HttpHost {
            counts: Arc::new(Counts {
                max_connections: max_connections.max(1),
                max_closing: max_connections.max(16),
                serving: AtomicUsize::new(0),
                closing: AtomicUsize::new(0),
                evicting: AtomicUsize::new(0),
                held_bytes: AtomicUsize::new(0),
                max_buffered_bytes: AtomicUsize::new(DEFAULT_MAX_BUFFERED_BYTES),
                next: AtomicU64::new(0),
                waiting: Mutex::default(),
            }),
            config,
        }
    }

    /// At most `bytes` held by all its connections together (requests being read,
    /// answers being written); see [`HttpServeOptions::max_buffered_bytes`]. Clones
    /// share the bound.
    #[must_use]
    pub fn with_max_buffered_bytes(self, bytes: usize) -> Self {
        self.counts
            .max_buffered_bytes
            .store(bytes, Ordering::SeqCst);
        self
    }

    /// Bytes its connections hold now.
    #[must_use]
    pub fn buffered_bytes(&self) -> usize {
        self.counts.held_bytes.load(Ordering::SeqCst)
    }

    /// The configuration of the connections it hands out.
    #[must_use]
    pub fn config(&self) -> &HttpConnectionConfig {
        &self.config
    }

    /// The host of a server run with `options`: their connection bound and the
    /// configuration of each connection.
    #[must_use]
    pub fn for_options(options: &HttpServeOptions) -> Self {
        HttpHost::new(options.max_connections, options.connection())
            .with_max_buffered_bytes(options.max_buffered_bytes)
    }

    /// The machine for a connection accepted at `now`: a served one (in the place of an
    /// evicted one when all are taken, see the module docs), a refusing one
    /// ([`HttpConnection::is_refusal`]) when `max_connections` are served and none can
    /// be evicted, or `None` when `max_connections` (at least 16) are already on their
    /// way out: close the socket at once.
    #[must_use]
    pub fn accept(&self, now: Instant) -> Option<HttpConnection> {
        let max = self.counts.max_connections;
        if take(&self.counts.serving, max) || self.evict(now) {
            let permit = Permit::served(&self.counts, now);
            let conn = HttpConnection::new(now, self.config.clone());
            return Some(conn.with_permit(permit));
        }
        if take(&self.counts.closing, self.counts.max_closing) {
            let permit = Permit {
                counts: Arc::clone(&self.counts),
                leaving: true,
                number: None,
                evicted: Arc::default(),
                held: 0,
            };
            return Some(HttpConnection::refusal(now, self.config.clone(), permit));
        }
        None
    }

    /// Evicts the served connection waiting longest for a request, if one has waited
    /// [`EVICTABLE_AFTER`] and fewer than `max_connections` are being evicted already:
    /// its place is then the newcomer's (counted now; the evicted one's goes when it
    /// does).
    fn evict(&self, now: Instant) -> bool {
        let counts = &self.counts;
        if !take(&counts.evicting, counts.max_connections) {
            return false;
        }
        let mut waiting = counts.waiting();
        let oldest = (waiting.iter())
            .filter_map(|(number, w)| Some((*number, w.since?)))
            .filter(|(_, since)| since.saturating_add(EVICTABLE_AFTER) <= now)
            .min_by_key(|(_, since)| *since)
            .map(|(number, _)| number);
        let Some(victim) = oldest.and_then(|n| waiting.remove(&n)) else {
            drop(waiting);
            counts.evicting.fetch_sub(1, Ordering::SeqCst);
            return false;
        };
        // Under the lock: a permit dropped meanwhile sees the flag once it got the lock.
        victim.evicted.store(true, Ordering::SeqCst);
        drop(waiting);
        counts.serving.fetch_add(1, Ordering::SeqCst);
        if let Some(waker) = victim.waker {
            waker.wake();
        }
        true
    }

    /// Connections served now (not refused, not closing).
    #[must_use]
    pub fn connections(&self) -> usize {
        self.counts.serving.load(Ordering::SeqCst)
    }

    /// Connections on their way out now: refused, or closing.
    #[must_use]
    pub fn closing(&self) -> usize {
        self.counts.closing.load(Ordering::SeqCst)
    }
}

/// Takes one of `max` places in `count`, if one is free.
fn take(count: &AtomicUsize, max: usize) -> bool {
    count
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .is_ok()
}

/// The place a connection holds in its [`HttpHost`]'s counts, given back on drop.
#[derive(Debug)]
pub(super) struct Permit {
    counts: Arc<Counts>,
    /// Counted among the closing connections rather than the served ones.
    leaving: bool,
    /// Its number among the served, while it may be found waiting for a request.
    number: Option<u64>,
    /// Set when a newcomer took its place.
    evicted: Arc<AtomicBool>,
    /// Bytes it holds, as counted in the host's total.
    held: usize,
}

impl Permit {
    /// The permit of a connection served from `now` on, waiting for its first request.
    fn served(counts: &Arc<Counts>, now: Instant) -> Permit {
        let number = counts.next.fetch_add(1, Ordering::SeqCst);
        let evicted = Arc::new(AtomicBool::new(false));
        let entry = Waiting {
            since: Some(now),
            evicted: Arc::clone(&evicted),
            waker: None,
        };
        counts.waiting().insert(number, entry);
        Permit {
            counts: Arc::clone(counts),
            leaving: false,
            number: Some(number),
            evicted,
            held: 0,
        }
    }

    /// The connection holds `bytes` now: whether all connections together hold more
    /// than the host allows.
    pub(super) fn hold(&mut self, bytes: usize) -> bool {
        let total = &self.counts.held_bytes;
        let now = if bytes >= self.held {
            total.fetch_add(bytes - self.held, Ordering::SeqCst) + (bytes - self.held)
        } else {
            total.fetch_sub(self.held - bytes, Ordering::SeqCst) - (self.held - bytes)
        };
        self.held = bytes;
        now > self.counts.max_buffered_bytes.load(Ordering::Relaxed)
    }

    /// Wakes `waker` when a newcomer takes this connection's place; at once if one has.
    pub(super) fn set_waker(&mut self, waker: Waker) {
        let mut waiting = self.counts.waiting();
        match self.number.and_then(|n| waiting.get_mut(&n)) {
            Some(entry) => entry.waker = Some(waker),
            None => {
                drop(waiting);
                // Gone from the table: evicted (flagged under the lock), or closing.
                if self.evicted() {
                    waker.wake();
                }
            }
        }
    }

    /// Whether a newcomer took this connection's place.
    pub(super) fn evicted(&self) -> bool {
        self.evicted.load(Ordering::SeqCst)
    }

    /// The connection waits for a request (or reads one) since `since`, or (`None`) has
    /// one to answer: only a waiting one may be evicted.
    pub(super) fn waiting_since(&mut self, since: Option<Instant>) {
        let Some(number) = self.number else {
            return;
        };
        // Gone from the table once evicted.
        if let Some(entry) = self.counts.waiting().get_mut(&number) {
            entry.since = since;
        }
    }

    /// The connection started closing: its served place is free for a new client, when
    /// there is room among the closing ones; it can no longer be evicted.
    pub(super) fn leave(&mut self) {
        if let Some(number) = self.number.take() {
            self.counts.waiting().remove(&number);
        }
        if !self.leaving && take(&self.counts.closing, self.counts.max_closing) {
            self.leaving = true;
            self.counts.serving.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.counts
            .held_bytes
            .fetch_sub(self.held, Ordering::SeqCst);
        if let Some(number) = self.number {
            self.counts.waiting().remove(&number);
        }
        if self.evicted.load(Ordering::SeqCst) {
            self.counts.evicting.fetch_sub(1, Ordering::SeqCst);
        }
        let count = if self.leaving {
            &self.counts.closing
        } else {
            &self.counts.serving
        };
        count.fetch_sub(1, Ordering::SeqCst);
    }
}
