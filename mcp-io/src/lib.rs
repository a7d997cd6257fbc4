//! The runtime-independent half of the MCP client adapters.
//!
//! [`mcp_proto`] holds the sans-IO protocol machines; `mcp-blocking` drives them on std
//! threads and `mcp-smol` with a `Driver` future on any executor. Whatever those two do
//! the same way, whatever the runtime, lives here once, and both re-export the public
//! types under their own paths (`mcp_blocking::StdioCommand`, `mcp_smol::Options`, …):
//!
//! * [`StdioCommand`]: what to run as a stdio server, with an isolated environment and
//!   the `PATH` lookup, turned into a [`std::process::Command`] by
//!   [`StdioCommand::to_command`]; [`StderrTail`], the bounded stderr buffer, and
//!   [`Shutdown`], how the process ended.
//! * [`heap`]: keeping glibc from returning, after every large request, memory a
//!   long-running server needs again at once (the serve functions call it).
//! * [`ending`]: how a server is ended after its stdin is closed, within the grace
//!   period (`SIGTERM`, then `SIGKILL`, to its whole process group), as steps both
//!   adapters execute.
//! * [`Options`]: grace period, input handler, progress callback, wire log (and the
//!   headers it must hide besides the built-in ones), transcript sink, in two
//!   [flavours](Flavour) (`Send` handlers by default, or [`Local`] ones for a connection
//!   driven on one thread); with [`Options::handle_event`], the event handling that
//!   depends on the options alone.
//! * [`http::HttpOptions`]: how an endpoint is reached, and
//!   [`HttpOptions::prepare`](http::HttpOptions::prepare), everything `connect_http`
//!   checks and sets up before anything connects; the HTTP defaults and the default TLS
//!   configuration (rustls with `ring`, `webpki-roots`, ALPN `http/1.1`; with the `tls`
//!   feature).
//! * [`Error`]: the one error type of both adapters, with its stable kind names, and
//!   [`TransportError`], the failures below HTTP, which ride through the machine as the
//!   `source` of its `TransportFailure` and come back typed.
//! * [`request`]: the requests behind `call_tool` and `get_prompt`, their arguments (a
//!   JSON object, or null for none) checked the same way for both adapters.
//! * [`wire_log`]: bytes cut into wire-log lines, with the values of credential-bearing
//!   headers (`Authorization`, `Mcp-Session-Id`, `X-Api-Key`, …) and query parameters
//!   (`access_token`, …) redacted.
//! * [`transcript`]: the machine's transcript, redacted by the same rules for the
//!   [transcript sink](Options::transcript) (`transcript::Recording`, which both
//!   adapters drain after every step), and its replay (`transcript::replay`).
//! * [`Inbox`]: what the machine's events say about a connection (server, close reason,
//!   peer errors, excluded tools), kept for the handles; the era verdict recorded in the
//!   [`EraCache`].
//! * [`Shared`]: what a driver publishes about its connection for the client handles
//!   (the inbox, the server process's pid, restarts and stderr), and the facade methods
//!   that read it, written once for both adapters.
//! * [`drive`]: the driver's loop around the machine (transmits executed, events handed
//!   on, bytes, ends and failures fed, the wire log and the transcript kept), with the
//!   IO left to the adapter.
//! * [`credentials`]: [`CredentialStore`](credentials::CredentialStore), where OAuth
//!   credentials are kept between runs, and the private file store; [`callback`]: the
//!   loopback listener the browser comes back to after an authorization, and the
//!   [`AuthorizationHandler`](auth::AuthorizationHandler) built on it.
//! * [`api`]: every name both adapters export at their root, listed once.
//! * [`EraCache`]: the era verdicts per HTTP origin behind a lock, shareable between
//!   connections and between both adapters (the decisions are the machine's).
//!
//! It uses std IO where it must (looking programs up on `PATH`, building a process
//! command, running `/bin/sh` to signal a process group, the credential files, the
//! loopback listener of an authorization, the system clock and the OS random number
//! generator through `ring`) and nothing else: no async runtime, no threads.
//!
//! # Cargo features
//!
//! * `tls` (default): the default TLS client configuration and the rustls helpers of
//!   [`http`], and [`tls::TlsSession`], the TLS session both adapters move bytes
//!   through, with `rustls` (ring provider) and `webpki-roots`. Without it the crate
//!   depends on `mcp-proto`, three of its own dependencies (`serde_json`, `thiserror`,
//!   `base64`) and `ring` (the authorization flow's entropy and signing keys); the
//!   adapters turn it on with their own `tls` feature.
#![forbid(unsafe_code)]
// `Error` holds `CloseReason` and `CallError` by value, so callers can match on them
// without a box in the way; the size is a deliberate trade.
#![allow(clippy::result_large_err)]
#![warn(missing_docs)]

pub mod api;
pub mod auth;
pub mod callback;
mod child;
pub mod clock;
mod command;
pub mod credentials;
pub mod drive;
pub mod ending;
mod era_cache;
mod error;
/// Entry points for the fuzz targets in `fuzz/`; compiled always so CI keeps them building.
#[doc(hidden)]
pub mod fuzzing;
pub mod heap;
pub mod hosting;
pub mod http;
mod inbox;
pub mod mailbox;
pub mod oneshot;
mod options;
pub mod request;
mod shared;
#[cfg(test)]
mod test_waker;
pub mod tls;
pub mod transcript;
mod transport;
pub mod wire_log;

pub use child::{Shutdown, StderrTail};
pub use command::{DEFAULT_STDERR_LIMIT, StdioCommand};
pub use era_cache::EraCache;
pub use error::Error;
pub use inbox::{Inbox, PendingInput};
pub use options::{
    DEFAULT_GRACE_PERIOD, Direction, ElicitationCompleteSink, Flavour, Local, LogSink,
    MAX_NOTIFICATIONS, MAX_PEER_ERRORS, Options, Progress, ProgressHandler, Sendable,
    TranscriptSink, WireLog, push_newest,
};
pub use shared::{Shared, SharedState};
pub use transport::{ResolveError, TransportError, TransportErrorKind};

/// The protocol crate, re-exported so its types need no second dependency.
pub use mcp_proto;
