//! Model Context Protocol on std blocking IO.
//!
//! `mcp-blocking` drives the sans-IO machines of [`mcp_proto`] with threads and channels:
//! no async runtime, no dependency beyond `mcp-proto`, `mcp-host` (the runtime-independent
//! half it shares with `mcp-smol`: [`StdioCommand`], [`Options`], the wire log, the TLS
//! defaults), serde, thiserror, and, with the `tls` feature, rustls (ring provider) with
//! `webpki-roots` for `https://`.
//!
//! * [`Client`] starts a stdio server as a child process ([`StdioCommand`]: the child sees
//!   only the environment variables you name), settles the era (a `server/discover`
//!   probe, falling back to `initialize` for 2025 servers), and offers blocking calls:
//!   [`Client::list_tools`], [`Client::call_tool`], [`Client::read_resource`], …
//! * [`Client::connect_http`] does the same over Streamable HTTP (`https://`, or `http://`
//!   to loopback): keep-alive connections, TLS with rustls, an optional per-origin
//!   [`EraCache`]; see the [`http`] module.
//! * [`serve_stdio`] runs an [`mcp_proto::server::Server`] on this process's stdin and
//!   stdout.
//!
//! The calling thread owns the protocol machine, which decides everything: the era, every
//! HTTP connection (how many, which to reuse, when to retry or close one), when to start
//! a stdio server again. Every method carries out what the machine asks, waits for the
//! server's bytes until the machine's next deadline, and answers requests for input
//! with the [`Options::input_handler`]. Helper threads only move bytes: one reader and
//! one writer per byte channel, reporting to the calling thread over one bounded channel
//! (see the `process` module docs for why stdin has its own writer thread).
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
//! toolkit's objects) and makes a `Client<Local>`, which stays on the thread that made it:
//! the same methods, over stdio and HTTP alike.
//!
//! ```no_run
//! use std::cell::RefCell;
//! use std::rc::Rc;
//! use mcp_blocking::{
//!     Client, ClientCapabilities, ClientConfig, InputAnswer, InputHandler, InputRequest, Local,
//!     Options, StdioCommand,
//! };
//!
//! /// Remembers every question, for the (single-threaded) UI to show.
//! struct Questions(Rc<RefCell<Vec<String>>>);
//!
//! impl InputHandler for Questions {
//!     fn answer(&mut self, request: &InputRequest) -> InputAnswer {
//!         if let InputRequest::Elicitation(form) = request {
//!             self.0.borrow_mut().push(form.message.clone());
//!         }
//!         InputAnswer::decline()
//!     }
//! }
//!
//! # fn main() -> Result<(), mcp_blocking::Error> {
//! let questions = Rc::new(RefCell::new(Vec::new()));
//! let config = ClientConfig::new("my-editor", "1.0")
//!     .capabilities(ClientCapabilities::with_elicitation());
//! let options = Options::local().input_handler(Questions(questions.clone()));
//! let mut client: Client<Local> =
//!     Client::connect_stdio_with(StdioCommand::new("my-mcp-server"), config, options)?;
//! client.call_tool("confirm", serde_json::json!({}))?;
//! println!("asked: {:?}", questions.borrow());
//! # Ok(())
//! # }
//! ```
//!
//! # Cargo features
//!
//! * `tls` (default): `https://` with rustls (ring provider, no aws-lc, no OpenSSL) and
//!   the Mozilla roots of `webpki-roots`: `http::TlsConnector`, `HttpOptions::tls`,
//!   `http::default_tls_config`, the `rustls` re-export, `TransportError::tls_error`. It adds rustls, ring, rustls-webpki,
//!   rustls-pki-types, webpki-roots, untrusted, subtle, zeroize, once_cell, getrandom,
//!   libc and cfg-if to the tree.
//!
//!   Without it (`default-features = false`) the crate speaks stdio and plain `http://`
//!   (to loopback hosts, or to any host with [`HttpOptions::allow_insecure_remote`]);
//!   an `https://` URL is refused before anything connects with
//!   [`Error::TlsUnavailable`] (kind `tls-unavailable`), unless
//!   [`HttpOptions::connector`] brings a connector that does TLS itself.
#![forbid(unsafe_code)]
// `Error` holds `CloseReason` and `CallError` by value, so callers can match on them
// without a box in the way; the size is a deliberate trade.
#![allow(clippy::result_large_err)]
#![warn(missing_docs)]

mod carrier;
mod client;
mod driver;
pub mod http;
mod inbox;
mod process;
mod serve;
mod serve_http;

pub use client::Client;
pub use http::{Connector, HttpOptions, TcpConnector};
// The runtime-independent pieces, one implementation shared with `mcp-smol`.
pub use mcp_host::http::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_CONNECTIONS, TlsUnavailable};
pub use mcp_host::{
    DEFAULT_GRACE_PERIOD, DEFAULT_STDERR_LIMIT, Direction, EraCache, Error, Flavour, Local,
    Options, Progress, ProgressHandler, ResolveError, Sendable, Shutdown, StdioCommand,
    TransportError, TransportErrorKind, WireLog,
};
pub use serve::{serve, serve_stdio};
pub use serve_http::{
    HttpServeOptions, HttpServerHandle, serve_http, serve_http_on, serve_http_with,
};

/// The workspace README, whose Rust examples run as this crate's doctests
/// (`cargo test --doc -p mcp-blocking`), so they keep compiling against the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The protocol crate this one drives, re-exported so its types need no second dependency.
pub use mcp_proto;
/// The TLS crate of [`HttpOptions::tls`](mcp_host::http::HttpOptions::tls), re-exported so
/// a configuration can be built with the very version this crate uses. With the `tls`
/// feature only.
#[cfg(feature = "tls")]
pub use rustls;
/// The JSON crate of the API (arguments and results are [`serde_json::Value`]s),
/// re-exported so that `serde_json::json!` needs no second dependency.
pub use serde_json;

// The protocol types of the API, by the same names as in `mcp-smol`.
pub use mcp_proto::client::{
    AcceptDefaults, CallError, CallId, CallOutput, CallRequest, ClientConfig, CloseReason,
    DeclineAll, HttpFailure, InputAnswer, InputHandler, InputRequest, Origin, PeerError,
    TransportFailure, TransportFailureKind,
};
pub use mcp_proto::http::{EndpointUrl, UrlError};
pub use mcp_proto::jsonrpc::Notification;
pub use mcp_proto::model::{
    CallToolResult, ClientCapabilities, Implementation, Prompt, Resource, ServerDetails, Tool,
};
pub use mcp_proto::{Era, EraMode, Limits, ProtocolVersion};

/// Starts `command` as an MCP server over stdio and connects with default [`Options`]:
/// [`Client::connect_stdio`], by the name `mcp-smol` uses.
///
/// # Errors
/// As [`Client::connect_stdio`].
pub fn connect_stdio(command: StdioCommand, config: ClientConfig) -> Result<Client, Error> {
    Client::connect_stdio(command, config)
}

/// [`Client::connect_stdio_with`], by the name `mcp-smol` uses.
///
/// # Errors
/// As [`Client::connect_stdio`].
pub fn connect_stdio_with<F: Flavour>(
    command: StdioCommand,
    config: ClientConfig,
    options: Options<F>,
) -> Result<Client<F>, Error> {
    Client::connect_stdio_with(command, config, options)
}

/// [`Client::connect_http`], by the name `mcp-smol` uses.
///
/// # Errors
/// As [`Client::connect_http`].
pub fn connect_http(url: &str, config: ClientConfig) -> Result<Client, Error> {
    Client::connect_http(url, config)
}

/// [`Client::connect_http_with`], by the name `mcp-smol` uses.
///
/// # Errors
/// As [`Client::connect_http`].
pub fn connect_http_with<F: Flavour>(
    url: &str,
    config: ClientConfig,
    options: Options<F>,
    http: HttpOptions,
) -> Result<Client<F>, Error> {
    Client::connect_http_with(url, config, options, http)
}
