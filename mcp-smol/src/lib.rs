//! Model Context Protocol client over stdio and Streamable HTTP on smol / async-io /
//! futures-lite.
//!
//! `mcp-smol` drives the sans-IO machines of [`mcp_proto`] with async IO. It speaks MCP
//! 2025-06-18, 2025-11-25 and 2026-07-28 to a server it starts as a child process
//! ([`connect_stdio`]) or to a Streamable HTTP endpoint, `http` or `https`
//! ([`connect_http`]), picking the era by itself ([`EraMode::Auto`]: a `server/discover`
//! probe, falling back to `initialize` only on legacy evidence). The API is
//! `mcp-blocking`'s, with `async` methods on a cloneable handle: the same names at the
//! crate root ([`mcp_io::api`]), the same [`Error`], [`Options`] and [`HttpOptions`].
//!
//! It hosts servers too: [`serve`](fn@serve) and [`serve_stdio`] run a sans-IO
//! [`mcp_proto::server::Server`] over byte streams, [`serve_http`] as a Streamable HTTP
//! endpoint, each as one future that spawns nothing (`mcp-blocking`'s hosting, on async
//! IO).
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
//! makes every decision for both transports (the era, the calls, restarting a server
//! that exits on the probe, and over HTTP how many connections, which are reused,
//! retried or expired), and the driver does what it says.
//!
//! Nothing happens unless the driver is polled, and the library never spawns a task or
//! a thread to poll it: **run the `Driver` on any executor** (`smol::spawn`, a
//! `smol::Executor` or `LocalExecutor`, another runtime's spawn), or join it with your
//! own future using `futures_lite::future::zip` / `or` with no executor at all. (The
//! async-io reactor and the async-process child reaper run their usual background helper
//! threads when no `async_io::block_on` drives them, and host names are resolved (and
//! [`serve_stdio`]'s stdin and stdout read and written) on the `blocking` crate's pool;
//! that is those crates' design, not a task of ours.)
//!
//! The connection closes when the last [`Client`] handle is dropped or
//! [`Client::close`] is called: the machine closes, the server's stdin is closed, the
//! server gets a grace period ([`Options::grace_period`], default 2 s) to exit: on Unix
//! its process group (the server and what it started) is sent `SIGTERM` half-way
//! through and `SIGKILL` at the end, and once the server is reaped the group is sent
//! `SIGKILL` once more (see [`mcp_io::ending`]). Dropping the driver kills the server
//! and its group at once. The server sees only the environment its [`StdioCommand`]
//! names.
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
//! Without any executor, join the driver with the code that uses the client, and block
//! on the pair with `smol::block_on` (that is `async_io::block_on`): the waiting thread
//! then normally runs the reactor itself. Under `futures_lite::future::block_on`,
//! readiness reaches the caller through async-io's helper thread, which sleeps between
//! turns of the reactor while some `async_io::block_on` exists (async-process runs its
//! child reaper in one): a sequential 64-byte call over stdio took about 130 µs (median)
//! that way, 15 µs under `smol::block_on`. [`Driver::join`] runs the pair as one future
//! (`futures_lite::future::zip(driver, work)` does too, but each hand-over between the two
//! then costs a turn of the reactor: five system calls more per call on Linux).
//!
//! ```no_run
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
//! let (driven, tools) = smol::block_on(driver.join(work));
//! driven?;
//! println!("{} tools", tools?.len());
//! # Ok(()) }
//! ```
//!
//! # Streamable HTTP
//!
//! [`connect_http`] / [`connect_http_with`] return the same [`Client`] and [`Driver`]
//! types: every method works the same way over both transports. The [`HttpOptions`]
//! bound the connections; TLS is rustls (with the `tls` feature), and a [`Connector`]
//! can bring streams of your own. Failures below HTTP are typed: [`Error::Transport`].
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
//!         HttpOptions::new().bearer_token("s3cr3t"),
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
//! # Input requests, progress, notifications
//!
//! Elicitation, sampling and roots requests (legacy server→client requests and
//! 2026-07-28 `input_required` rounds alike) are answered by the connection's
//! [`InputHandler`]: [`DeclineAll`] by default, [`AcceptDefaults`] or your own with
//! [`Options::input_handler`] or [`Client::set_input_handler`]. Declare the capabilities
//! you answer in [`ClientConfig::capabilities`]. Progress, notifications and the wire
//! log: [`Options::on_progress`], [`Client::next_notification`], [`Options::wire_log`].
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
//!   mcp-io's TLS session (the one mcp-blocking uses), trusting the Mozilla roots of
//!   `webpki-roots`: `HttpOptions::tls`, `TransportError::tls_error`, the `rustls`
//!   re-export. It adds rustls, rustls-webpki, rustls-pki-types, webpki-roots, subtle,
//!   zeroize and once_cell to the tree (ring is there without it: `mcp-io` signs and
//!   draws entropy with it).
//!
//!   Without it (`default-features = false`) the crate speaks stdio and plain `http`;
//!   an `https` URL is refused with [`Error::TlsUnavailable`] unless the [`Connector`]
//!   [handles TLS](Connector::handles_tls) itself.
#![forbid(unsafe_code)]
// `Error` is large on purpose: see mcp-io.
#![allow(clippy::result_large_err)]
#![warn(missing_docs)]

mod client;
mod conn;
mod driver;
mod facade;
mod http;
mod join;
mod serve;
mod stdio;
mod wake;

pub use client::Client;
pub use driver::Driver;
pub use http::{AsyncStream, ConnectFuture, Connector, HttpOptions, TcpConnector};
pub use join::Join;
/// The names both adapters export (the protocol types, [`Options`], [`Error`],
/// [`StdioCommand`], the crates behind the API, …), one list shared with `mcp-blocking`.
pub use mcp_io::api::*;
pub use serve::{HttpServeOptions, serve, serve_http, serve_stdio};

mcp_io::connect_functions! {
    /// Starts `command` as an MCP server over stdio and returns a handle to the connection
    /// and the [`Driver`] future that does all of its IO.
    ///
    /// The process is spawned before this returns (a missing program fails now); the
    /// protocol starts when the driver is first polled. Calls made before the connection is
    /// ready are queued.
    ///
    /// # Errors
    /// [`Error::Spawn`] when the program cannot be found or started.
    fn connect_stdio -> (Client, Driver);

    /// [`connect_stdio`] with [`Options`] of either flavour (input handler, progress, wire
    /// log, grace period).
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
    /// As [`connect_stdio`].
    fn connect_stdio_with -> (Client, Driver<F>);

    /// Connects to the Streamable HTTP endpoint `url` (`http` to loopback, or `https`) and
    /// returns a handle to the connection and the [`Driver`] future that does all of its IO.
    ///
    /// Nothing is connected before the driver is first polled; then the era probe (or
    /// `initialize`) goes out on the first connection. An endpoint that cannot be reached
    /// is reported as [`Error::Transport`] by [`Client::connected`], the calls waiting, and
    /// the driver.
    ///
    /// # Errors
    /// What [`HttpOptions::prepare`](mcp_io::http::HttpOptions::prepare) refuses:
    /// [`Error::InvalidUrl`], [`Error::TlsUnavailable`].
    fn connect_http;

    /// [`connect_http`] with [`Options`] of either flavour and [`HttpOptions`].
    ///
    /// # Errors
    /// As [`connect_http`].
    fn connect_http_with;
}
