//! Model Context Protocol on std blocking IO.
//!
//! `mcp-blocking` drives the sans-IO machines of [`mcp_proto`] with threads and channels:
//! no async runtime, no dependency beyond `mcp-proto`, `mcp-io` (the runtime-independent
//! half it shares with `mcp-smol`: the whole API but the [`Client`] and the connectors,
//! see [`mcp_io::api`]), serde and serde_json, on Unix `rustix` (for `poll(2)`), and,
//! with the `tls` feature, rustls (ring provider) with `webpki-roots` for `https://`.
//!
//! * [`Client`] starts a stdio server as a child process ([`StdioCommand`]: the child sees
//!   only the environment variables you name), settles the era (a `server/discover`
//!   probe, falling back to `initialize` for 2025 servers), and offers blocking calls:
//!   [`Client::list_tools`], [`Client::call_tool`], [`Client::read_resource`], …
//! * [`Client::connect_http`] does the same over Streamable HTTP (`https://`, or `http://`
//!   to loopback): keep-alive connections, TLS with rustls, an optional per-origin
//!   [`EraCache`]; see the [`http`] module.
//! * [`Client::handle`] gives a [`ClientHandle`] (`Send + Sync + Clone`, methods on
//!   `&self`) for calls from several threads at once: pipelined on the one stdio
//!   connection, or spread over several HTTP connections (as many as the machine opens,
//!   up to [`HttpOptions::max_connections`](mcp_io::http::HttpOptions::max_connections)).
//! * [`serve_stdio`] runs an [`mcp_proto::server::Server`] on this process's stdin and
//!   stdout.
//!
//! The protocol machine decides everything: the era, every HTTP connection (how many,
//! which to reuse, when to retry or close one), when to start a stdio server again. The
//! calling threads carry it out; there is no driver thread. A method executes what the
//! machine asks, waits for the server's bytes until the machine's next deadline, and
//! answers requests for input with the [`Options::input_handler`]. On Unix the waiting
//! thread moves the bytes of a stdio server's pipes and of plain HTTP connections itself,
//! non-blocking, with `poll(2)`; a TLS connection or a connector's own stream (and, off
//! Unix, every byte channel) has helper threads that only move bytes: one reader and one
//! writer, reporting over one bounded channel. A stdio server has a thread collecting
//! its stderr and, on Unix, one waiting for its exit.
//!
//! # Several threads
//!
//! The machine sits behind a lock shared by the [`Client`] and its [`ClientHandle`]s.
//! A thread that makes a call writes its request itself; to wait, it *leads* (waits,
//! unlocked, on the channels it polls and the helper threads' reports, then feeds what
//! came to the machine) when no other thread does, and otherwise sleeps until the leader
//! completes its call, the leader leaves (it then takes over), the connection closes or a
//! [`Canceller`] fires. A lone caller always leads: one call at a time costs no thread
//! hand-off. Each call keeps its own timeout ([`CallRequest::timeout`]); the input
//! handler and the progress callback run on the thread leading at that moment, for any
//! call, and hold the lock while they run (a handler that waits for a person holds up
//! the other calls meanwhile). Closing the [`Client`] (or dropping it) ends the calls
//! other threads wait for with [`Error::Closed`].
//!
//! ```no_run
//! use mcp_blocking::{Client, ClientConfig};
//!
//! # fn main() -> Result<(), mcp_blocking::Error> {
//! let client = Client::connect_http("https://mcp.example.com/mcp", ClientConfig::new("app", "1"))?;
//! let handle = client.handle();
//! std::thread::scope(|s| {
//!     for i in 0..8 {
//!         let handle = handle.clone();
//!         s.spawn(move || {
//!             let answer = handle.call_tool("add", serde_json::json!({"a": i, "b": 1}));
//!             println!("{i}: {:?}", answer.map(|r| r.text()));
//!         });
//!     }
//! });
//! println!("{} connections", client.http_connections_opened());
//! client.close();
//! # Ok(())
//! # }
//! ```
//!
//! ```no_run
//! use mcp_blocking::{
//!     AcceptDefaults, Client, ClientCapabilities, ClientConfig, EraMode, Options, StdioCommand,
//! };
//!
//! # fn main() -> Result<(), mcp_blocking::Error> {
//! // A server that is on PATH; it sees HOME and nothing else from our environment.
//! let server = StdioCommand::new("my-mcp-server").arg("--stdio").pass_env("HOME");
//! // Auto: probe for 2026-07-28, fall back to the 2025 handshake on legacy evidence.
//! // Declare form elicitation, and answer every form with its schema defaults.
//! let config = ClientConfig::new("my-app", "1.0")
//!     .era_mode(EraMode::Auto)
//!     .capabilities(ClientCapabilities::with_elicitation());
//! let options = Options::new().input_handler(AcceptDefaults);
//! let mut client = Client::connect_stdio_with(server, config, options)?;
//!
//! println!("{} ({} era, {})", client.server_name(), client.era(), client.protocol_version());
//! for tool in client.list_tools()? {
//!     println!("{:12} {}", tool.name, tool.description.unwrap_or_default());
//! }
//! let result = client.call_tool("add", serde_json::json!({"a": 2, "b": 3}))?;
//! assert_eq!(result.text(), "5");
//! let shutdown = client.close();
//! assert!(!shutdown.killed);
//! # Ok(())
//! # }
//! ```
//!
//! # Handlers that are not `Send`
//!
//! [`Options::new`] takes `Send` handlers, and the [`Client`] it makes is `Send`.
//! [`Options::local`] takes any handler (state behind an `Rc<RefCell<…>>`, a GUI
//! toolkit's objects; see the [`Options`] docs) and makes a `Client<Local>`, which stays
//! on the thread that made it: the same methods, over stdio and HTTP alike.
//!
//! # Cargo features
//!
//! * `tls` (default): `https://` with rustls (ring provider, no aws-lc, no OpenSSL) and
//!   the Mozilla roots of `webpki-roots`: `http::TlsConnector`, `HttpOptions::tls`,
//!   `http::default_tls_config`, the `rustls` re-export, `TransportError::tls_error`. It
//!   adds rustls, rustls-webpki, rustls-pki-types, webpki-roots, subtle, zeroize and
//!   once_cell to the tree (ring is there without it: `mcp-io` signs and draws entropy
//!   with it).
//!
//!   Without it (`default-features = false`) the crate speaks stdio and plain `http://`;
//!   an `https://` URL is refused with [`Error::TlsUnavailable`] unless
//!   [`HttpOptions::connector`](mcp_io::http::HttpOptions::connector) brings a
//!   connector that does TLS itself.
#![forbid(unsafe_code)]
// `Error` is large on purpose: see mcp-io.
#![allow(clippy::result_large_err)]
#![warn(missing_docs)]

mod carrier;
mod client;
mod driver;
mod followers;
pub mod http;
#[cfg(unix)]
mod poll_set;
mod process;
mod serve;
mod serve_http;

pub use client::{Canceller, Client, ClientHandle, MachineRef};
pub use http::{Connector, HttpOptions, TcpConnector, send_auth_request, send_auth_request_within};
/// The names both adapters export (the protocol types, [`Options`], [`Error`],
/// [`StdioCommand`], the crates behind the API, …), one list shared with `mcp-smol`.
pub use mcp_io::api::*;
pub use serve::{serve, serve_stdio};
pub use serve_http::{
    HttpServeOptions, HttpServerHandle, serve_http, serve_http_on, serve_http_setup,
    serve_http_with,
};

/// The workspace README, whose Rust examples run as this crate's doctests
/// (`cargo test --doc -p mcp-blocking`), so they keep compiling against the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

mcp_io::connect_functions! {
    /// Starts `command` as an MCP server over stdio and connects with default [`Options`]:
    /// [`Client::connect_stdio`], by the name `mcp-smol` uses.
    ///
    /// # Errors
    /// As [`Client::connect_stdio`].
    fn connect_stdio -> Client;

    /// [`Client::connect_stdio_with`], by the name `mcp-smol` uses.
    ///
    /// # Errors
    /// As [`Client::connect_stdio`].
    fn connect_stdio_with -> Client<F>;

    /// [`Client::connect_http`], by the name `mcp-smol` uses.
    ///
    /// # Errors
    /// As [`Client::connect_http`].
    fn connect_http;

    /// [`Client::connect_http_with`], by the name `mcp-smol` uses.
    ///
    /// # Errors
    /// As [`Client::connect_http`].
    fn connect_http_with;
}
