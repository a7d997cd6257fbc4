//! What a driver publishes about its connection for the client handles to read
//! ([`Shared`]), and the facade methods that read it ([`client_state!`](crate::client_state)),
//! one definition for both adapters.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::{Error, Inbox, Shutdown, StderrTail};

/// The state of one connection that its driver keeps up to date and its handles read,
/// behind a lock: the machine's events ([`Inbox`]), the server process (pid, restarts,
/// stderr, how it ended) and how the connection ended. The handle of `mcp-blocking`
/// reads it on the thread that drives it; those of `mcp-smol` on any thread.
#[derive(Debug)]
pub struct Shared {
    state: Mutex<SharedState>,
    next_key: AtomicU64,
}

/// The fields of [`Shared`], under its lock.
#[derive(Debug)]
#[non_exhaustive]
pub struct SharedState {
    /// What the machine's events say about the connection.
    pub inbox: Inbox,
    /// The error every later request gets, once the connection is over (for handles
    /// that outlive their driver).
    pub ended: Option<Error>,
    /// The error a handle waiting for the connection gets when it never came up (the
    /// close reason with the server's last stderr lines), once the driver has ended.
    pub connect_error: Option<Error>,
    /// The server's process id while it runs.
    pub pid: Option<u32>,
    /// The HTTP endpoint, verbatim, for connections over HTTP.
    pub endpoint: Option<String>,
    /// How many times the server process was started again.
    pub restarts: u32,
    /// The newest bytes of the server's stderr.
    pub stderr: StderrTail,
    /// How the last server process ended.
    pub shutdown: Option<Shutdown>,
}

impl SharedState {
    /// The server process exited (on the era probe) and is about to be started again:
    /// it ended as `shutdown`, it has no process id any more, and the stderr that a
    /// connect error quotes starts over with the process to come.
    pub fn restarting(&mut self, shutdown: Shutdown) {
        self.pid = None;
        self.shutdown = Some(shutdown);
        self.stderr.new_process();
    }
}

impl Shared {
    /// The state of a new connection: `inbox` for the machine's events, a stderr tail of
    /// at most `stderr_limit` bytes, the server's `pid` (stdio) and `endpoint` (HTTP).
    #[must_use]
    pub fn new(
        inbox: Inbox,
        stderr_limit: usize,
        pid: Option<u32>,
        endpoint: Option<String>,
    ) -> Self {
        let state = SharedState {
            inbox,
            ended: None,
            connect_error: None,
            pid,
            endpoint,
            restarts: 0,
            stderr: StderrTail::new(stderr_limit),
            shutdown: None,
        };
        Shared {
            state: Mutex::new(state),
            next_key: AtomicU64::new(0),
        }
    }

    /// The state, locked.
    pub fn lock(&self) -> MutexGuard<'_, SharedState> {
        // No critical section can panic half-way; a poisoned lock still holds
        // consistent data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A number no other call of this connection was given, for a handle to name a call.
    pub fn next_key(&self) -> u64 {
        self.next_key.fetch_add(1, Ordering::Relaxed)
    }
}

/// Writes the methods of a client facade that read its [`Shared`] state
/// (`poll_notification`, `dropped_notifications`, `recent_peer_errors`, `stderr_tail`,
/// `process_exit`, `process_id`, `restarts`, `excluded_tools`, `close_reason`), so that both adapters have
/// one definition of them and their documentation. `client_state!(shared)` reads
/// `self.shared`; `client_state!(driver.shared)` reads `self.driver.shared`. Each value is
/// a copy, taken under the lock.
#[macro_export]
#[doc(hidden)]
macro_rules! client_state {
    ($($field:ident).+) => {
        /// The next server notification not consumed by the machine (list changes, log
        /// messages, resource updates, …), if one is waiting. At most 1024 are kept, and
        /// at most [`Limits::max_queued_event_bytes`](mcp_proto::Limits::max_queued_event_bytes)
        /// of them; older ones are dropped and counted in
        /// [`Client::dropped_notifications`](Self::dropped_notifications).
        #[must_use]
        pub fn poll_notification(&self) -> Option<$crate::mcp_proto::jsonrpc::Notification> {
            self.$($field).+.lock().inbox.take_notification()
        }

        /// Notifications dropped because nobody took them.
        #[must_use]
        pub fn dropped_notifications(&self) -> u64 {
            self.$($field).+.lock().inbox.dropped_notifications
        }

        /// The newest protocol violations of the server that did not fail a call (at
        /// most 32), oldest first.
        #[must_use]
        pub fn recent_peer_errors(&self) -> Vec<$crate::mcp_proto::client::PeerError> {
            self.$($field).+.lock().inbox.peer_errors.iter().cloned().collect()
        }

        /// The newest bytes the server wrote to stderr (bounded by
        /// [`StdioCommand::stderr_limit`](crate::StdioCommand::stderr_limit)), as text.
        /// It is the server's own text: it may hold anything the server chose to print.
        /// Still readable after the connection ended; always empty over HTTP.
        #[must_use]
        pub fn stderr_tail(&self) -> String {
            self.$($field).+.lock().stderr.text()
        }

        /// How the server process ended, once it has been reaped: its exit status, and
        /// whether it had to be sent `SIGTERM` or killed. `None` while it runs (and
        /// always over HTTP). After a restart, the last process that ended.
        #[must_use]
        pub fn process_exit(&self) -> Option<$crate::Shutdown> {
            self.$($field).+.lock().shutdown
        }

        /// The server's process id, while it runs (`None` once it has been reaped). It
        /// changes if the server is restarted. Always `None` over HTTP.
        #[must_use]
        pub fn process_id(&self) -> Option<u32> {
            self.$($field).+.lock().pid
        }

        /// How many times the server process was restarted (once when a server exits on
        /// the `server/discover` probe; always 0 over HTTP).
        #[must_use]
        pub fn restarts(&self) -> u32 {
            self.$($field).+.lock().restarts
        }

        /// The tools left out of `tools/list` because their `x-mcp-header` annotations
        /// are invalid (Streamable HTTP, 2026-07-28), as `(tool, reason)`, latest listing
        /// first seen first. The other tools stay usable; stdio never excludes any.
        #[must_use]
        pub fn excluded_tools(&self) -> Vec<(String, String)> {
            self.$($field).+.lock().inbox.excluded_tools.clone()
        }

        /// The kinds of input the server asked for that the client did not declare
        /// (`"elicitation"`, `"sampling"`, `"roots"`, …; see
        /// [`Event::InputUndeclared`](mcp_proto::client::Event::InputUndeclared)), each
        /// once, first asked first: what a run without a person was missing.
        #[must_use]
        pub fn undeclared_inputs(&self) -> Vec<&'static str> {
            self.$($field).+.lock().inbox.undeclared_inputs.clone()
        }

        /// Why the connection ended, once it has.
        #[must_use]
        pub fn close_reason(&self) -> Option<$crate::mcp_proto::client::CloseReason> {
            self.$($field).+.lock().inbox.closed.clone()
        }
    };
}

/// Writes the `connect_*` entry points of an adapter, which only differ by what they
/// return, so that both adapters have one definition of them: with `impl`, inside
/// `impl Client`, `connect_stdio` and `connect_http` with default options on top of the
/// `_with` methods the adapter writes; without, at the crate root, the four free
/// functions on top of `Client`'s. The documentation of each is the adapter's own
/// (`$(#[$doc])*`); `$ret` is what the default-flavour entry points return, `$ret_f`
/// what the `_with` ones return, for options of flavour `F`.
#[macro_export]
#[doc(hidden)]
macro_rules! connect_functions {
    (
        impl
        $(#[$stdio:meta])* fn connect_stdio -> $ret:ty;
        $(#[$http:meta])* fn connect_http;
    ) => {
        $(#[$stdio])*
        pub fn connect_stdio(
            command: $crate::StdioCommand,
            config: $crate::mcp_proto::client::ClientConfig,
        ) -> ::core::result::Result<$ret, $crate::Error> {
            Self::connect_stdio_with(command, config, $crate::Options::new())
        }

        $(#[$http])*
        pub fn connect_http(
            url: &str,
            config: $crate::mcp_proto::client::ClientConfig,
        ) -> ::core::result::Result<$ret, $crate::Error> {
            Self::connect_http_with(url, config, $crate::Options::new(), HttpOptions::new())
        }
    };
    (
        $(#[$stdio:meta])* fn connect_stdio -> $ret:ty;
        $(#[$stdio_with:meta])* fn connect_stdio_with -> $ret_f:ty;
        $(#[$http:meta])* fn connect_http;
        $(#[$http_with:meta])* fn connect_http_with;
    ) => {
        $(#[$stdio])*
        pub fn connect_stdio(
            command: $crate::StdioCommand,
            config: $crate::mcp_proto::client::ClientConfig,
        ) -> ::core::result::Result<$ret, $crate::Error> {
            Client::connect_stdio(command, config)
        }

        $(#[$stdio_with])*
        pub fn connect_stdio_with<F: $crate::Flavour>(
            command: $crate::StdioCommand,
            config: $crate::mcp_proto::client::ClientConfig,
            options: $crate::Options<F>,
        ) -> ::core::result::Result<$ret_f, $crate::Error> {
            Client::connect_stdio_with(command, config, options)
        }

        $(#[$http])*
        pub fn connect_http(
            url: &str,
            config: $crate::mcp_proto::client::ClientConfig,
        ) -> ::core::result::Result<$ret, $crate::Error> {
            Client::connect_http(url, config)
        }

        $(#[$http_with])*
        pub fn connect_http_with<F: $crate::Flavour>(
            url: &str,
            config: $crate::mcp_proto::client::ClientConfig,
            options: $crate::Options<F>,
            http: HttpOptions,
        ) -> ::core::result::Result<$ret_f, $crate::Error> {
            Client::connect_http_with(url, config, options, http)
        }
    };
}
