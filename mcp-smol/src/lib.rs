//! Model Context Protocol client over stdio on smol / async-io / futures-lite.
//!
//! `mcp-smol` drives the sans-IO machines of [`mcp_proto`] with async IO. It speaks MCP
//! 2025-06-18, 2025-11-25 and 2026-07-28 to a server it starts as a child process,
//! picking the era by itself ([`EraMode::Auto`]: a `server/discover` probe, falling back
//! to `initialize` only on legacy evidence).
//!
//! # The contract: the library never spawns
//!
//! [`connect_stdio`] starts the server process and returns two things:
//!
//! * a [`Client`]: a cheap, cloneable, `Send + Sync` handle whose `async` methods
//!   ([`Client::list_tools`], [`Client::call_tool`], [`Client::request`], …) can be
//!   used from any number of tasks at once;
//! * a [`Driver`]: a `Future` that owns **all** the IO — the child's stdin, stdout and
//!   stderr, the protocol timers (`async_io::Timer`), the commands from the handles,
//!   answering input requests with an [`InputHandler`] — and resolves when the connection
//!   is over and the process has been reaped.
//!
//! Nothing happens unless the driver is polled, and the library never spawns a task or
//! a thread to poll it: **run the `Driver` on any executor** (`smol::spawn`, a
//! `smol::Executor` or `LocalExecutor`, another runtime's spawn), or join it with your
//! own future using `futures_lite::future::zip` / `or` with no executor at all. (The
//! async-io reactor and the async-process child reaper run their usual background helper
//! threads when no `async_io::block_on` drives them; that is those crates' design, not a
//! task of ours.)
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
//! names, as `async` methods on a cloneable handle.
//!
//! If a server exits when probed with `server/discover` (some legacy servers do), the
//! driver reaps it, starts a fresh process and speaks `initialize` to that one.
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
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod client;
mod command;
mod driver;
mod error;
mod options;

pub use client::Client;
pub use command::{DEFAULT_STDERR_LIMIT, StdioCommand};
pub use driver::Driver;
pub use error::Error;
pub use options::{
    DEFAULT_GRACE_PERIOD, Direction, Options, Progress, ProgressHandler, Shutdown, WireLog,
};

/// The protocol crate this one drives, re-exported so its types need no second dependency.
pub use mcp_proto;

pub use mcp_proto::client::{
    AcceptDefaults, CallError, CallId, CallOutput, CallRequest, ClientConfig, CloseReason,
    DeclineAll, InputAnswer, InputHandler, InputRequest, PeerError,
};
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
pub fn connect_stdio_with(
    command: StdioCommand,
    config: ClientConfig,
    options: Options,
) -> Result<(Client, Driver), Error> {
    Client::connect_stdio_with(command, config, options)
}
