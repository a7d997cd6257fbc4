//! Redis-backed stores for running several MCP server processes behind one URL, so that
//! a client's requests may land on any of them:
//!
//! * [`RedisConsumptionStore`]: single-use sealed `requestState` nonces
//!   ([`ConsumptionStore`](mcp_proto::server::ConsumptionStore)), recorded with
//!   `SET NX PX` so that of two processes opening the same state at once, one wins.
//!   Run it on a Redis that does not evict keys (`maxmemory-policy noeviction`, the
//!   default): an evicted nonce would let its state be used again.
//! * [`RedisEventStore`]: the events of resumable SSE streams
//!   ([`EventStore`](mcp_proto::server::http::EventStore)), one capped list per stream,
//!   every key expiring, so that a stream begun on one process resumes on another.
//! * [`RedisSessionStore`]: the shared part of legacy sessions
//!   ([`SessionStore`](mcp_proto::server::http::SessionStore)), expiring when idle.
//!
//! Every key starts with a prefix ([`Redis::with_prefix`], default `mcp:`), so one Redis
//! can serve several deployments. The processes must also seal `requestState` under the
//! same keys ([`KeyRing`](mcp_proto::server::KeyRing)): that is configuration, not
//! stored here.
//!
//! The stores are called synchronously by the machines of `mcp-proto`, under the lock
//! the adapter holds around the endpoint: each call is a blocking round trip (two for an
//! appended event and for forgetting a session's events), bounded by
//! [`RedisOptions::command_timeout`]. The client
//! ([`RedisClient`]) is a small RESP2 implementation on `std::net::TcpStream`: every
//! reply is untrusted input, bounded in size, element count and nesting
//! ([`ReplyLimits`]), and a failure is a typed [`RedisError`]. A store that cannot reach
//! Redis fails closed where it must (a single-use state is refused, a new session is
//! refused) and degrades elsewhere (an event goes out without an id).
//!
//! ```no_run
//! use mcp_redis::{Redis, RedisOptions};
//!
//! let redis = Redis::connect("redis://127.0.0.1:6379", RedisOptions::default())?;
//! let sessions = redis.session_store(std::time::Duration::from_secs(30 * 60));
//! let events = redis.event_store(Default::default());
//! let nonces = redis.consumption_store();
//! # let _ = (sessions, events, nonces);
//! # Ok::<(), mcp_redis::RedisError>(())
//! ```

pub mod client;
pub mod resp;
mod stores;

pub use client::{RedisClient, RedisError, RedisOptions};
pub use resp::{Reply, ReplyLimits, ReplyScanner, RespError};
pub use stores::{
    Redis, RedisConsumptionStore, RedisEventLimits, RedisEventStore, RedisSessionStore,
};
