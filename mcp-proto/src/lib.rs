//! Sans-IO Model Context Protocol.
//!
//! `mcp-proto` speaks MCP 2025-06-18, 2025-11-25 and 2026-07-28 as pure state machines.
//! It never touches a socket, a file, a process, a clock or the OS random number
//! generator: you hand it bytes and the current time, it hands back bytes to send, events,
//! and the next instant it wants to be woken. The adapters `mcp-blocking` and `mcp-smol`
//! do the IO; any other runtime can do the same (`examples/own_runtime.rs`, below).
//!
//! # The run loop
//!
//! Every machine follows the same contract:
//!
//! * inputs are `handle_*(now, …)`: bytes read ([`client::Client::handle_read`]), end of
//!   input, a connection opened or failed (with a typed [`client::TransportFailure`]), a
//!   timer firing ([`client::Client::handle_timeout`]);
//! * commands are verbs ([`client::Client::call`], [`client::Client::respond`],
//!   [`client::Client::cancel`], [`client::Client::close`]) that return
//!   `Err(ApiMisuse)` when the caller breaks the rules, never for peer trouble;
//! * outputs are drained after every input or command: `poll_transmit(now, &mut buf)`
//!   for what to do with the transport (a [`client::Transmit`]: connect, write these
//!   bytes, close, start the server process again), `poll_event()` for what happened,
//!   `poll_timeout()` for when to call `handle_timeout(now)` next.
//!
//! The machine decides everything that depends on the protocol, connection policy
//! included (how many HTTP connections, which to reuse, when to retry, when to give up);
//! the driver moves bytes, keeps one timer, and reports what happened. Time is an
//! [`Instant`] the caller makes from any clock, so the machines run anywhere, `wasm32`
//! included. Peer misbehaviour becomes an event or a typed error on the affected call. A
//! fatal condition is [`client::Event::Closed`].
//!
//! ```
//! use std::time::Duration;
//! use mcp_proto::Instant;
//! use mcp_proto::client::{CallRequest, Client, ClientConfig, ConnId, Event, Transmit};
//! use mcp_proto::server::{example, Server};
//!
//! // A client and the bundled example server, wired back to back with a fake clock.
//! let mut now = Instant::ZERO;
//! let mut client = Client::stdio(ClientConfig::new("doc-example", "1.0"), now);
//! let mut server: Server = example::server();
//! let call = client.call(now, CallRequest::call_tool("add", serde_json::json!({"a": 2, "b": 3}))).unwrap();
//!
//! let mut wire = Vec::new();
//! let mut answer = None;
//! while answer.is_none() {
//!     // Obey the client: its writes go to the server's input.
//!     while let Some(transmit) = client.poll_transmit(now, &mut wire) {
//!         assert!(matches!(transmit, Transmit::Write { conn: ConnId::STDIO, .. }));
//!     }
//!     server.handle_input(now, &wire);
//!     wire.clear();
//!     while server.poll_transmit(now, &mut wire).is_some() {}
//!     client.handle_read(now, ConnId::STDIO, &wire);
//!     wire.clear();
//!     while let Some(event) = client.poll_event() {
//!         if let Event::CallCompleted { call: id, outcome } = event {
//!             assert_eq!(id, call);
//!             answer = Some(outcome.unwrap());
//!         }
//!     }
//!     if let Some(deadline) = client.poll_timeout() {
//!         if answer.is_none() && deadline <= now { client.handle_timeout(now); }
//!     }
//!     now += Duration::from_millis(1);
//! }
//! let text = answer.unwrap().result.get().to_owned();
//! assert!(text.contains("\"5\""), "{text}");
//! ```
//!
//! `examples/own_runtime.rs` drives a real server process with nothing but `std` and
//! this crate, in about two hundred lines: the whole of what an adapter does, a server
//! that cannot be started, stops reading, or exits with its stdout held open included.
//! Its end is the machine's: after [`client::Transmit::Close`] it still drains the
//! events (the failed calls, [`client::Event::Closed`] with its reason).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
pub mod client;
pub mod content;
pub mod held;
pub mod http;
mod json_scan;
mod json_write;
pub mod jsonrpc;
pub mod limits;
pub mod model;
pub mod server;
pub mod skills;
pub mod sse;
pub mod stdio;
pub mod time;
pub mod verdicts;
pub mod version;

/// Entry points for the fuzz targets in `fuzz/`; compiled always so CI keeps them building.
#[doc(hidden)]
pub mod fuzzing;

pub use jsonrpc::{ErrorObject, Message, RequestId};
pub use limits::Limits;
pub use time::Instant;
pub use version::{Era, EraMode, ProtocolVersion};
