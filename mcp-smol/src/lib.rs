//! Model Context Protocol client over stdio and Streamable HTTP on smol / async-io /
//! futures-lite.
//!
//! `mcp-smol` drives the sans-IO machines of [`mcp_proto`] with async IO. It speaks MCP
//! 2025-06-18, 2025-11-25 and 2026-07-28 to a server it starts as a child process
//! ([`connect_stdio`]) or to a Streamable HTTP endpoint, `http` or `https`
//! ([`connect_http`]), picking the era by itself ([`EraMode::Auto`]: a `server/discover`
//! probe, falling back to `initialize` only on legacy evidence).
//!
//! # The contract: the library never spawns
//!
//! [`connect_stdio`] starts the server process ([`connect_http`] only checks the URL)
//! and returns two things:
//!
//! * a [`Client`]: a cheap, cloneable, `Send + Sync` handle whose `async` methods
//!   ([`Client::list_tools`], [`Client::call_tool`], [`Client::request`], …) can be
//!   used from any number of tasks at once;
//! * a [`Driver`]: a `Future` that owns **all** the IO — the child's stdin, stdout and
//!   stderr, or every HTTP connection (connecting, TLS, reading, writing), the protocol
//!   timer (`async_io::Timer`), the commands from the handles, answering input requests
//!   with an [`InputHandler`] — and resolves when the connection is over (the process
//!   reaped, the connections closed).
//!
//! The driver only moves bytes: one sans-IO machine, [`mcp_proto::client::Client`],
//! makes every decision for both transports (the era, the calls, and over HTTP how many
//! connections, which are reused, retried or expired), and the driver does what it says.
//!
//! Nothing happens unless the driver is polled, and the library never spawns a task or
//! a thread to poll it: **run the `Driver` on any executor** (`smol::spawn`, a
//! `smol::Executor` or `LocalExecutor`, another runtime's spawn), or join it with your
//! own future using `futures_lite::future::zip` / `or` with no executor at all. (The
//! async-io reactor and the async-process child reaper run their usual background helper
//! threads when no `async_io::block_on` drives them, and host names are resolved on the
//! `blocking` crate's pool; that is those crates' design, not a task of ours.)
//!
//! The connection closes when the last [`Client`] handle is dropped or
//! [`Client::close`] is called: the machine closes, the server's stdin is closed, the
//! server gets a grace period ([`Options::grace_period`], default 2 s) to exit,
//! and is then killed (`SIGKILL`; `SIGTERM` is not sent because that would need
//! platform code outside the allowed dependencies) and reaped. Dropping the driver kills
//! the server at once.
//!
//! The child sees no environment except the variables named with
//! [`StdioCommand::pass_env`] or set with [`StdioCommand::env`], a bare program name is
//! looked up on this process's `PATH`, and the server's stderr is kept in a bounded
//! buffer ([`Client::stderr_tail`]), never mixed into the protocol.
//!
//! The API mirrors `mcp-blocking`: the same [`StdioCommand`], [`Options`] and method
//! names, as `async` methods on a cloneable handle. Those types, the wire log with its
//! redaction, the TLS defaults and the error kind names are one implementation shared
//! by both crates (the `mcp-host` crate, std only, no runtime).
//!
//! If a server exits when probed with `server/discover` (some legacy servers do), the
//! machine asks for a fresh process: the driver reaps the old one and starts the command
//! again, and the machine speaks `initialize` to that one.
//!
//! # Streamable HTTP
//!
//! [`connect_http`] / [`connect_http_with`] return the same [`Client`] and [`Driver`]
//! types: every method works the same way over both transports. Connections are opened
//! as calls need them (one exchange per connection at a time, at most
//! [`HttpOptions::max_connections`], idle keep-alive connections reused); TLS is rustls
//! (`ring`, webpki roots by default, or your `rustls::ClientConfig`; with the `tls`
//! feature), and a [`Connector`] can bring streams of your own. Failures below HTTP are
//! typed: [`Error::Transport`] with a [`TransportErrorKind`]. See the [`HttpOptions`]
//! docs and the theory of operation in the `http` module's source.
//!
//! ```no_run
//! # fn main() -> Result<(), mcp_smol::Error> {
//! use mcp_smol::{ClientConfig, HttpOptions, Options};
//!
//! smol::block_on(async {
//!     let (client, driver) = mcp_smol::connect_http_with(
//!         "https://mcp.example.com/mcp",
//!         ClientConfig::new("my-app", "1.0"),
//!         Options::new(),
//!         HttpOptions::new().authorization("Bearer s3cr3t"),
//!     )?;
//!     let driver = smol::spawn(driver);
//!     for tool in client.list_tools().await? {
//!         println!("tool {}", tool.name);
//!     }
//!     client.close().await;
//!     driver.await
//! })
//! # }
//! ```
//!
//! # Example
//!
//! ```no_run
//! use mcp_smol::{ClientConfig, StdioCommand};
//! use serde_json::json;
//!
//! fn main() -> Result<(), mcp_smol::Error> {
//!     smol::block_on(async {
//!         let server = StdioCommand::new("my-mcp-server").arg("--stdio").pass_env("HOME");
//!         let (client, driver) =
//!             mcp_smol::connect_stdio(server, ClientConfig::new("my-app", "1.0"))?;
//!         // The library never spawns: the application runs the driver.
//!         let driver = smol::spawn(driver);
//!
//!         let details = client.connected().await?;
//!         println!("{} speaks {}", client.era().unwrap(), details.protocol_version);
//!         for tool in client.list_tools().await? {
//!             println!("tool {}", tool.name);
//!         }
//!         let sum = client.call_tool("add", json!({"a": 2, "b": 3})).await?;
//!         println!("2 + 3 = {}", sum.text());
//!
//!         drop(client); // the last handle: the driver closes the connection and ends
//!         driver.await
//!     })
//! }
//! ```
//!
//! Without any executor, join the driver with the code that uses the client:
//!
//! ```no_run
//! use futures_lite::future;
//! use mcp_smol::{ClientConfig, StdioCommand};
//!
//! # fn main() -> Result<(), mcp_smol::Error> {
//! let (client, driver) =
//!     mcp_smol::connect_stdio(StdioCommand::new("my-mcp-server"), ClientConfig::new("app", "1"))?;
//! let work = async move {
//!     let tools = client.list_tools().await;
//!     drop(client); // ends the driver
//!     tools
//! };
//! let (driven, tools) = future::block_on(future::zip(driver, work));
//! driven?;
//! println!("{} tools", tools?.len());
//! # Ok(()) }
//! ```
//!
//! # Input requests
//!
//! Elicitation, sampling and roots requests (legacy server→client requests and
//! 2026-07-28 `input_required` rounds alike) are answered by the connection's
//! [`InputHandler`]: [`DeclineAll`] by default, [`AcceptDefaults`] or your own with
//! [`Options::input_handler`] or [`Client::set_input_handler`]. Declare the capabilities
//! you answer in [`ClientConfig::capabilities`].
//!
//! Progress, notifications and the wire log: [`Options::on_progress`],
//! [`Client::next_notification`] / [`Client::poll_notification`], [`Options::wire_log`].
//!
//! # Handlers that are not `Send`
//!
//! [`Options::new`] takes `Send` handlers, and the [`Driver`] it goes to is `Send`.
//! [`Options::local`] takes any handler (state behind an `Rc<RefCell<…>>`, a GUI
//! toolkit's objects): [`connect_stdio_with`] and [`connect_http_with`] then return a
//! `Driver<Local>`, which is not `Send`; run it on a `LocalExecutor` or join it with
//! your code on one thread. The [`Client`] handle stays `Send + Sync` either way
//! (handlers set through it, with [`Client::set_input_handler`], are `Send`).
//!
//! ```no_run
//! use std::cell::RefCell;
//! use std::rc::Rc;
//! use mcp_smol::{ClientConfig, Driver, Local, Options, StdioCommand};
//!
//! # fn main() -> Result<(), mcp_smol::Error> {
//! let lines = Rc::new(RefCell::new(0_usize));
//! let count = lines.clone();
//! let options = Options::local().wire_log(move |_, _| *count.borrow_mut() += 1);
//! let (client, driver): (_, Driver<Local>) = mcp_smol::connect_stdio_with(
//!     StdioCommand::new("my-mcp-server"),
//!     ClientConfig::new("my-app", "1.0"),
//!     options,
//! )?;
//! let ex = smol::LocalExecutor::new();
//! futures_lite::future::block_on(ex.run(async {
//!     let driver = ex.spawn(driver);
//!     println!("{} tools", client.list_tools().await?.len());
//!     client.close().await;
//!     driver.await
//! }))?;
//! println!("{} lines on the wire", lines.borrow());
//! # Ok(())
//! # }
//! ```
//!
//! # Dependencies and cargo features
//!
//! The crate depends on the smol components it uses, not on the `smol` meta-crate:
//! `async-io` (reactor, timers, sockets), `async-process`, `async-channel`,
//! `futures-lite`, and `blocking` (host-name resolution). It works with `smol` (the same
//! crates), or with any executor; never tokio.
//!
//! * `tls` (default): `https` with rustls (ring provider, no aws-lc, no OpenSSL) through
//!   `futures-rustls`, trusting the Mozilla roots of `webpki-roots`:
//!   `HttpOptions::tls`, `TransportError::tls_error`, the `rustls` re-export. It adds
//!   rustls, futures-rustls, ring, rustls-webpki, rustls-pki-types, webpki-roots,
//!   untrusted, subtle, zeroize, once_cell and getrandom to the tree.
//!
//!   Without it (`default-features = false`) the crate speaks stdio and plain `http`
//!   (to loopback hosts, or to any host with [`HttpOptions::allow_insecure_remote`]); an
//!   `https` URL is refused by [`connect_http`] with [`Error::TlsUnavailable`] (kind
//!   `tls-unavailable`), unless the [`Connector`] [handles TLS](Connector::handles_tls)
//!   itself.
#![forbid(unsafe_code)]
// `Error` holds `CloseReason` and `CallError` by value, so callers can match on them
// without a box in the way; the size is a deliberate trade.
#![allow(clippy::result_large_err)]
#![warn(missing_docs)]

mod client;
mod conn;
mod driver;
mod facade;
mod http;
mod stdio;

pub use client::Client;
pub use driver::Driver;
pub use http::{AsyncStream, ConnectFuture, Connector, HttpOptions, TcpConnector};
// The runtime-independent pieces, one implementation shared with `mcp-blocking`.
pub use mcp_host::http::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_CONNECTIONS, TlsUnavailable};
pub use mcp_host::{
    DEFAULT_GRACE_PERIOD, DEFAULT_STDERR_LIMIT, Direction, EraCache, Error, Flavour, Local,
    Options, Progress, ProgressHandler, ResolveError, Sendable, Shutdown, StdioCommand,
    TransportError, TransportErrorKind, WireLog,
};

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

/// Starts `command` as an MCP server over stdio and returns a handle to the connection
/// and the [`Driver`] future that does all of its IO.
///
/// The process is spawned before this returns; the protocol starts when the driver is
/// first polled. The library never spawns a task: run the driver on any executor, or
/// join it with your own future.
///
/// ```no_run
/// # fn main() -> Result<(), mcp_smol::Error> {
/// use mcp_smol::{ClientConfig, EraMode, StdioCommand};
///
/// let ex = smol::Executor::new();
/// smol::block_on(ex.run(async {
///     let config = ClientConfig::new("my-app", "1.0").era_mode(EraMode::Legacy);
///     let (client, driver) = mcp_smol::connect_stdio(StdioCommand::new("my-mcp-server"), config)?;
///     let driver = ex.spawn(driver);
///     println!("{:?}", client.connected().await?.server_info);
///     client.close().await;
///     driver.await
/// }))
/// # }
/// ```
///
/// # Errors
/// [`Error::Spawn`] when the program cannot be found or started.
pub fn connect_stdio(
    command: StdioCommand,
    config: ClientConfig,
) -> Result<(Client, Driver), Error> {
    Client::connect_stdio(command, config)
}

/// [`connect_stdio`] with [`Options`] (input handler, progress, wire log, grace period).
///
/// ```no_run
/// # fn main() -> Result<(), mcp_smol::Error> {
/// use mcp_smol::{AcceptDefaults, ClientCapabilities, ClientConfig, Options, StdioCommand};
///
/// let config = ClientConfig::new("my-app", "1.0")
///     .capabilities(ClientCapabilities::with_elicitation());
/// let options = Options::new().input_handler(AcceptDefaults);
/// let (client, driver) =
///     mcp_smol::connect_stdio_with(StdioCommand::new("my-mcp-server"), config, options)?;
/// smol::spawn(driver).detach();
/// let answer = smol::block_on(client.call_tool("confirm", serde_json::json!({})))?;
/// println!("{}", answer.text());
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::Spawn`] when the program cannot be found or started.
pub fn connect_stdio_with<F: Flavour>(
    command: StdioCommand,
    config: ClientConfig,
    options: Options<F>,
) -> Result<(Client, Driver<F>), Error> {
    Client::connect_stdio_with(command, config, options)
}

/// Connects to the Streamable HTTP endpoint `url` (`http` to loopback, or `https`) and
/// returns a handle to the connection and the [`Driver`] future that does all of its IO.
///
/// Nothing is connected before the driver is first polled; then the era probe (or
/// `initialize`) goes out on the first connection. An endpoint that cannot be reached
/// is reported as [`Error::Transport`] by [`Client::connected`], the calls waiting, and
/// the driver.
///
/// ```no_run
/// # fn main() -> Result<(), mcp_smol::Error> {
/// use mcp_smol::ClientConfig;
///
/// let (client, driver) =
///     mcp_smol::connect_http("http://127.0.0.1:8080/mcp", ClientConfig::new("my-app", "1.0"))?;
/// let work = async move {
///     let sum = client.call_tool("add", serde_json::json!({"a": 2, "b": 3})).await;
///     drop(client); // the last handle: the driver ends
///     sum
/// };
/// let (driven, sum) = futures_lite::future::block_on(futures_lite::future::zip(driver, work));
/// driven?;
/// println!("{}", sum?.text());
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::InvalidUrl`] when `url` is not an acceptable endpoint (plain `http` to a
/// remote host included; see [`HttpOptions::allow_insecure_remote`]);
/// [`Error::TlsUnavailable`] for `https` when the `tls` feature is off.
pub fn connect_http(url: &str, config: ClientConfig) -> Result<(Client, Driver), Error> {
    Client::connect_http(url, config)
}

/// [`connect_http`] with [`Options`] (input handler, progress, wire log, grace period)
/// and [`HttpOptions`] (TLS configuration, connector, authorization, insecure remotes,
/// connect and idle timeouts, connection bound, [`EraCache`]).
///
/// With an [`EraCache`] and [`EraMode::Auto`], an origin known to be legacy gets
/// `initialize` without the `server/discover` probe; if the server has moved on (HTTP 400
/// with a 2026 error code), it is probed after all, once. Every successful connection
/// records its verdict. See [`Client::connect_http_with`].
///
/// ```no_run
/// # #[cfg(not(feature = "tls"))] fn main() {}
/// # #[cfg(feature = "tls")]
/// # fn main() -> Result<(), mcp_smol::Error> {
/// use std::sync::Arc;
/// use mcp_smol::{ClientConfig, HttpOptions, Options, rustls};
///
/// // Trust a private CA instead of the webpki roots.
/// let mut roots = rustls::RootCertStore::empty();
/// # let ca_der: rustls::pki_types::CertificateDer<'static> = Vec::new().into();
/// roots.add(ca_der).expect("a valid CA certificate");
/// let provider = Arc::new(rustls::crypto::ring::default_provider());
/// let tls = rustls::ClientConfig::builder_with_provider(provider)
///     .with_safe_default_protocol_versions()
///     .expect("ring supports the defaults")
///     .with_root_certificates(roots)
///     .with_no_client_auth();
/// let (client, driver) = mcp_smol::connect_http_with(
///     "https://mcp.internal:8443/mcp",
///     ClientConfig::new("my-app", "1.0"),
///     Options::new(),
///     HttpOptions::new().tls(Arc::new(tls)),
/// )?;
/// smol::spawn(driver).detach();
/// println!("{:?}", smol::block_on(client.connected())?.server_info);
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::InvalidUrl`] when `url` is not an acceptable endpoint;
/// [`Error::TlsUnavailable`] for `https` when the `tls` feature is off and the connector
/// does not handle TLS.
pub fn connect_http_with<F: Flavour>(
    url: &str,
    config: ClientConfig,
    options: Options<F>,
    http: HttpOptions,
) -> Result<(Client, Driver<F>), Error> {
    Client::connect_http_with(url, config, options, http)
}
