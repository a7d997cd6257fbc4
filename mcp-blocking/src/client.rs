//! The blocking client: connect, call, close.

use std::sync::Arc;
use std::time::Duration;

use mcp_io::{
    Error, Flavour, Inbox, Options, ProgressHandler, Sendable, Shared, Shutdown, StdioCommand,
    WireLog, clock,
};
use mcp_proto::client::{self as proto, CallOutput, CallRequest, ClientConfig};
use mcp_proto::http::EndpointUrl;
use mcp_proto::model::ServerDetails;
use mcp_proto::{Era, ProtocolVersion};

use crate::carrier;
use crate::driver::{Link, Scope};
use crate::http::{self, HttpConns, HttpOptions};
use crate::process::Stdio;

/// A connected MCP client, over a child process's stdio ([`Client::connect_stdio`]) or
/// Streamable HTTP ([`Client::connect_http`]); the methods are the same for both. Every
/// method blocks the calling thread until the answer is in (or the call's timeout, from
/// [`mcp_proto::Limits::request_timeout`] or [`CallRequest::timeout`], passes).
///
/// Dropping the client closes it like [`Client::close`] does: bounded in time, the server
/// reaped, never a zombie; over HTTP, a legacy session is ended and the connections
/// closed.
///
/// `F` is the [flavour](Flavour) of its handlers: a `Client` (that is, a
/// `Client<Sendable>`, from [`Options::new`]) is `Send`; a `Client<Local>`, from
/// [`Options::local`], takes handlers that are not `Send` and stays on its thread.
///
/// ```no_run
/// use mcp_blocking::{Client, ClientConfig, StdioCommand};
///
/// # fn main() -> Result<(), mcp_blocking::Error> {
/// let server = StdioCommand::new("npx")
///     .args(["-y", "@modelcontextprotocol/server-everything"])
///     .pass_env("PATH")
///     .pass_env("HOME");
/// let mut client = Client::connect_stdio(server, ClientConfig::new("my-app", "1.0"))?;
/// println!("{} era, version {}", client.era(), client.protocol_version());
/// for tool in client.list_tools()? {
///     println!("{}", tool.name);
/// }
/// let sum = client.call_tool("add", serde_json::json!({"a": 2, "b": 3}))?;
/// println!("{}", sum.text());
/// client.close();
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Client<F: Flavour = Sendable> {
    link: Arc<Link<F>>,
    details: ServerDetails,
    /// The HTTP endpoint, which never changes.
    endpoint: Option<EndpointUrl>,
    /// What [`Client::canceller`] cancels: the calls of this client, not its handles'.
    scope: Scope,
}

impl Client {
    mcp_io::connect_functions! {
        impl
        /// Starts the server and connects with default [`Options`]: returns once the era and
        /// version are settled (probe, then `initialize` when the server is legacy).
        ///
        /// # Errors
        /// [`Error::Spawn`] when the program cannot be started, [`Error::Connect`] when the
        /// handshake fails (the server process is stopped and reaped first).
        fn connect_stdio -> Client;

        /// Connects to a Streamable HTTP endpoint (`https://…`, or `http://` to a loopback
        /// host) with default [`Options`] and [`HttpOptions`]: returns once the era and
        /// version are settled.
        ///
        /// # Errors
        /// [`Error::InvalidUrl`] for a URL that is not acceptable, [`Error::Transport`] when
        /// the server cannot be reached at all (refused, DNS, TLS), [`Error::Connect`] when
        /// it answered but the handshake failed (an HTTP status, a refusal, no common version),
        /// [`Error::TlsUnavailable`] for `https://` when the `tls` feature is off.
        fn connect_http;
    }
}

impl<F: Flavour> Client<F> {
    /// [`Client::connect_stdio`] with [`Options`] of either flavour (input handler,
    /// progress, wire log, grace period).
    ///
    /// # Errors
    /// As [`Client::connect_stdio`].
    pub fn connect_stdio_with(
        command: StdioCommand,
        config: ClientConfig,
        options: Options<F>,
    ) -> Result<Client<F>, Error> {
        let inbox = Inbox::for_client(&config);
        let shared = Arc::new(Shared::new(inbox, command.stderr_bytes_kept(), None, None));
        let (stdio, bell, inlet) = Stdio::start(command, Arc::clone(&shared))?;
        let machine = proto::Client::stdio(config, clock::now());
        let link = Link::new(machine, Box::new(stdio), (bell, inlet), options, shared);
        Client::connected(link)
    }

    /// [`Client::connect_http`] with [`Options`] and [`HttpOptions`] (TLS configuration or
    /// connector, `Authorization`, connection bound and timeouts, era cache: see
    /// [`HttpOptions::prepare`](mcp_io::http::HttpOptions::prepare)). Every successful
    /// connection records its era in the cache.
    ///
    /// # Errors
    /// As [`Client::connect_http`].
    pub fn connect_http_with(
        url: &str,
        config: ClientConfig,
        options: Options<F>,
        http: HttpOptions,
    ) -> Result<Client<F>, Error> {
        let grace = options.grace_period;
        let start = http.prepare("mcp-blocking", url, config, http.connector.is_some(), grace)?;
        let connector = http::connector(&http, &start);
        let machine = proto::Client::http(start.config, start.http, clock::now());
        let timeout = start.connect_timeout;
        let endpoint = Some(start.url.as_str().to_owned());
        let redact = &options.redact_headers;
        let (conns, bell, inlet) = HttpConns::start(start.url, connector, timeout, redact)
            .map_err(|e| {
                Error::Transport(mcp_io::TransportError::new(
                    mcp_io::TransportErrorKind::Connect,
                    endpoint.as_deref().unwrap_or_default(),
                    e,
                ))
            })?;
        let shared = Arc::new(Shared::new(start.inbox, 0, None, endpoint));
        let link = Link::new(machine, Box::new(conns), (bell, inlet), options, shared);
        Client::connected(link)
    }

    /// Runs the handshake on `link`.
    fn connected(link: Link<F>) -> Result<Client<F>, Error> {
        let details = link.connect()?;
        let endpoint = link
            .lock()
            .core
            .machine
            .http_config()
            .map(|c| c.url.clone());
        Ok(Client {
            link: Arc::new(link),
            details,
            endpoint,
            scope: Scope::default(),
        })
    }

    /// A handle on this connection for other threads: cheap to clone, `Send + Sync`
    /// (with `Send` handlers, as from [`Options::new`]), with the call methods taking
    /// `&self`, so that several calls are in flight at once. See [`ClientHandle`].
    ///
    /// ```no_run
    /// use mcp_blocking::{Client, ClientConfig, StdioCommand};
    ///
    /// # fn main() -> Result<(), mcp_blocking::Error> {
    /// let client = Client::connect_stdio(StdioCommand::new("my-server"), ClientConfig::new("app", "1"))?;
    /// let handle = client.handle();
    /// let sums = std::thread::scope(|s| {
    ///     let calls: Vec<_> = (0..8)
    ///         .map(|i| {
    ///             let handle = handle.clone();
    ///             s.spawn(move || handle.call_tool("add", serde_json::json!({"a": i, "b": 1})))
    ///         })
    ///         .collect();
    ///     calls.into_iter().map(|c| c.join().unwrap()).collect::<Result<Vec<_>, _>>()
    /// })?;
    /// assert_eq!(sums.len(), 8);
    /// client.close();
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn handle(&self) -> ClientHandle<F> {
        ClientHandle {
            link: Arc::clone(&self.link),
            details: Arc::new(self.details.clone()),
            scope: Scope::default(),
        }
    }

    /// The server's era.
    #[must_use]
    pub fn era(&self) -> Era {
        self.details.protocol_version.era()
    }

    /// The negotiated protocol version.
    #[must_use]
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.details.protocol_version
    }

    /// What the server said about itself.
    #[must_use]
    pub fn server(&self) -> &ServerDetails {
        &self.details
    }

    /// The server's name from its `serverInfo`, or `"(unnamed)"`.
    #[must_use]
    pub fn server_name(&self) -> &str {
        self.details
            .server_info
            .as_ref()
            .map_or("(unnamed)", |i| i.name.as_str())
    }

    /// A handle that cancels, from another thread (a Ctrl-C handler, a UI), the call
    /// this client is blocked in: see [`Canceller`].
    #[must_use]
    pub fn canceller(&self) -> Canceller {
        Canceller {
            scope: self.scope.clone(),
            wake: self.link.waker(),
        }
    }

    /// Any request; listings fetch every page. The building block of the typed methods.
    ///
    /// # Errors
    /// [`Error::Call`] for a failed call (server error, timeout, invalid answer),
    /// [`Error::Closed`] when the connection is over.
    pub fn request(&mut self, request: CallRequest) -> Result<CallOutput, Error> {
        self.link.request(request, &self.scope)
    }

    mcp_io::typed_requests!(blocking &mut);

    /// 2026-07-28 `subscriptions/listen` with `filter`: starts a subscription and
    /// returns its id at once. Read what it brings with
    /// [`Client::next_subscription_event`]; end it with [`Client::end_listen`]. Over
    /// HTTP it holds its own stream and listens again (with backoff) when the stream
    /// drops. In the legacy era it ends at once with
    /// [`CallError::NotInVersion`](proto::CallError::NotInVersion): subscribe to
    /// resources with [`Client::subscribe_resource`] and read
    /// [`Client::next_notification`] instead.
    ///
    /// # Errors
    /// [`Error::Closed`] when the connection is over, [`Error::Misuse`] when 16
    /// subscriptions are open already.
    pub fn listen(&mut self, filter: &proto::ListenFilter) -> Result<proto::CallId, Error> {
        self.link.start(CallRequest::listen(filter))
    }

    /// Ends the subscription `subscription` (`notifications/cancelled` on stdio,
    /// closing its stream over HTTP); its [`Event::SubscriptionEnded`](proto::Event::SubscriptionEnded)
    /// follows. A subscription that is over already is left as it is.
    ///
    /// # Errors
    /// [`Error::Closed`] when the connection is over.
    pub fn end_listen(&mut self, subscription: proto::CallId) -> Result<(), Error> {
        self.link.cancel(subscription)
    }

    /// The next event of the subscription `only` (or of any, for `None`), waiting up
    /// to `timeout` while driving the connection: an acknowledgement, a notification,
    /// a reconnection or the end. `None` when nothing came in time or the connection is
    /// over.
    pub fn next_subscription_event(
        &mut self,
        only: Option<proto::CallId>,
        timeout: Duration,
    ) -> Option<proto::Event> {
        self.link.wait_for(timeout, &self.scope, |inbox| {
            inbox.take_subscription_event(only)
        })
    }

    /// Starts `request` (a [`CallRequest::call_tool`] made a task with
    /// [`CallRequest::as_task`]) and returns its id at once. The machine follows the task
    /// by itself while this client is driven: read its creation and status changes with
    /// [`Client::next_task_event`], its latest view with [`Client::task`], wait for its
    /// end with [`Client::task_result`], stop it with [`Client::cancel_task`]. A plain
    /// [`Client::request`] (or `call_tool`) follows a task the same way, behind the one
    /// result.
    ///
    /// # Errors
    /// [`Error::Closed`] when the connection is over, [`Error::Misuse`] when too many
    /// calls are in flight.
    pub fn start_task(&mut self, request: CallRequest) -> Result<proto::CallId, Error> {
        self.link.start(request)
    }

    /// Runs the connection until the call `call` started with [`Client::start_task`]
    /// completes: the task's result, or its error
    /// ([`CallError::TaskCancelled`](proto::CallError::TaskCancelled) for a cancelled
    /// task). Ask once per call.
    ///
    /// # Errors
    /// [`Error::Call`] for a failed call or task, [`Error::Closed`] when the connection
    /// ended first.
    pub fn task_result(&mut self, call: proto::CallId) -> Result<CallOutput, Error> {
        self.link.finish(call, &self.scope)
    }

    /// The result of the call `call` started with [`Client::start_task`] if it has
    /// completed already, without driving the connection or waiting (drive it with
    /// [`Client::next_task_event`]). Taken once.
    pub fn poll_task_result(&mut self, call: proto::CallId) -> Option<Result<CallOutput, Error>> {
        self.link.poll_outcome(call)
    }

    /// Cancels the call `call` and the task behind it (`tasks/cancel`); its result is
    /// then [`CallError::Cancelled`](proto::CallError::Cancelled). A call that completed
    /// already keeps its outcome (nothing is sent).
    ///
    /// # Errors
    /// [`Error::Closed`] when the connection is over.
    pub fn cancel_task(&mut self, call: proto::CallId) -> Result<(), Error> {
        self.link.cancel(call)
    }

    /// The latest view of the task behind the call `call`, while it runs.
    #[must_use]
    pub fn task(&self, call: proto::CallId) -> Option<proto::Task> {
        self.link.lock().core.machine.task(call).cloned()
    }

    /// The next task event ([`Event::TaskCreated`](proto::Event::TaskCreated) or
    /// [`Event::TaskStatus`](proto::Event::TaskStatus)) of the call `only` (or of any,
    /// for `None`), waiting up to `timeout` while driving the connection. `None` when
    /// nothing came in time or the connection is over.
    pub fn next_task_event(
        &mut self,
        only: Option<proto::CallId>,
        timeout: Duration,
    ) -> Option<proto::Event> {
        self.link
            .wait_for(timeout, &self.scope, |inbox| inbox.take_task_event(only))
    }

    /// The next server notification not consumed by the machine (a legacy
    /// `notifications/resources/updated` or `list_changed`, say; read it with
    /// [`Change::from_notification`](proto::Change::from_notification)), waiting up to
    /// `timeout` while driving the connection. `None` when nothing came in time or the
    /// connection is over.
    pub fn next_notification(
        &mut self,
        timeout: Duration,
    ) -> Option<mcp_proto::jsonrpc::Notification> {
        self.link
            .wait_for(timeout, &self.scope, Inbox::take_notification)
    }

    /// Replaces the roots offered to the server: later `roots/list` requests get them,
    /// and a legacy server is sent `notifications/roots/list_changed` when they differ.
    ///
    /// # Errors
    /// [`Error::Misuse`] when the [`ClientConfig`] did not declare roots, [`Error::Closed`]
    /// when the connection is over.
    pub fn set_roots(&mut self, roots: Vec<proto::Root>) -> Result<(), Error> {
        self.link.set_roots(roots)
    }

    /// Replaces the handler that answers requests for input (elicitation, sampling,
    /// roots). Only requests for capabilities declared in the [`ClientConfig`] reach it.
    pub fn set_input_handler(&mut self, handler: Box<F::InputHandler>) {
        self.link.lock().core.options.input_handler = handler;
    }

    /// Sets (or with `None` removes) the progress callback.
    pub fn set_progress_handler(&mut self, handler: Option<ProgressHandler<F>>) {
        self.link.lock().core.options.progress = handler;
    }

    /// Sets (or with `None` removes) the wire log.
    pub fn set_wire_log(&mut self, log: Option<WireLog<F>>) {
        self.link.lock().core.options.wire_log = log;
    }

    /// Sets the grace period of [`Client::close`].
    pub fn set_grace_period(&mut self, grace: Duration) {
        self.link.lock().core.options.grace_period = grace;
    }

    mcp_io::client_state!(link.shared);

    /// The endpoint, for a client over HTTP.
    #[must_use]
    pub fn endpoint(&self) -> Option<&EndpointUrl> {
        self.endpoint.as_ref()
    }

    /// The legacy session id the server issued, for a client over HTTP.
    #[must_use]
    pub fn http_session_id(&self) -> Option<String> {
        self.machine().session_id().map(str::to_owned)
    }

    /// TCP connections opened so far, for a client over HTTP (keep-alive keeps this low).
    #[must_use]
    pub fn http_connections_opened(&self) -> u64 {
        self.machine().pool_stats().map_or(0, |s| s.opened)
    }

    /// Requests sent a second time because the pooled connection they were written on
    /// had been closed by the server (each is retried at most once, and only when no
    /// byte of its response had arrived).
    #[must_use]
    pub fn http_retries(&self) -> u64 {
        self.machine().pool_stats().map_or(0, |s| s.retries)
    }

    /// Whether the connection is over (closed by either side).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.link.closed().is_some()
    }

    /// The protocol machine, for inspection. It is locked while the [`MachineRef`]
    /// lives: calls from other threads wait meanwhile, so let it go soon.
    #[must_use]
    pub fn machine(&self) -> MachineRef<'_, F> {
        MachineRef(self.link.lock())
    }

    /// Ends the connection: closes the server's stdin, waits up to the grace period
    /// (default 2 s) for it to exit (sending its process group `SIGTERM` half-way), kills
    /// it and its group otherwise, reaps it, and kills what is left of its group. Over
    /// HTTP: ends a legacy session (`DELETE`, waited for within the grace period) and
    /// closes every connection; the [`Shutdown`] is then empty. Calls that
    /// [`ClientHandle`]s have in flight on other threads end with [`Error::Closed`], and
    /// later ones fail with it at once.
    pub fn close(self) -> Shutdown {
        self.link.close()
    }
}

impl<F: Flavour> Drop for Client<F> {
    fn drop(&mut self) {
        self.link.close();
    }
}

/// Cancels, from any thread, what a [`Client`] (or a [`ClientHandle`]) is blocked in: the call in flight ends
/// with [`CallError::Cancelled`](proto::CallError::Cancelled) (the server is told:
/// `notifications/cancelled`, or in 2026-07-28 over HTTP, its stream is closed), and a
/// wait such as [`Client::next_subscription_event`] returns `None`. A cancellation when
/// the client is not blocked is void: it never reaches a later call. Cheap to clone;
/// stays valid (and does nothing) after the client is gone.
///
/// ```no_run
/// use std::time::Duration;
/// use mcp_blocking::{Client, ClientConfig, StdioCommand};
///
/// # fn main() -> Result<(), mcp_blocking::Error> {
/// let mut client = Client::connect_stdio(StdioCommand::new("my-server"), ClientConfig::new("app", "1"))?;
/// let canceller = client.canceller();
/// std::thread::spawn(move || {
///     std::thread::sleep(Duration::from_secs(5));
///     canceller.cancel();
/// });
/// match client.call_tool("slow", serde_json::json!({})) {
///     Err(e) if e.kind() == "cancelled" => println!("gave up after 5 s"),
///     other => println!("{:?}", other.map(|r| r.text())),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Canceller {
    scope: Scope,
    wake: carrier::Bell,
}

impl Canceller {
    /// Cancels the call (or wait) the client is blocked in, if any; for a
    /// [`ClientHandle`]'s canceller, every call that handle (or a clone of it) is
    /// blocked in, on any thread.
    pub fn cancel(&self) {
        self.scope.bump();
        self.wake.ring(carrier::IoEvent::Wake);
    }
}

/// A handle on a [`Client`]'s connection for several threads ([`Client::handle`]):
/// cheap to clone, `Send + Sync` (with `Send` handlers), every call method taking
/// `&self`, so that calls from several threads are in flight at once. Over stdio they
/// are pipelined on the one connection; over HTTP the machine opens more connections,
/// up to [`HttpOptions::max_connections`](mcp_io::http::HttpOptions::max_connections).
///
/// There is no driver thread: whichever calling thread waits drives the connection
/// while the others sleep until their own answer is in (see the crate docs). Each call
/// keeps its own timeout. The input handler and the progress callback of the
/// [`Options`] run on the thread that drives at that moment, for any call.
///
/// The [`Client`] keeps the connection: closing (or dropping) it ends the calls the
/// handles have in flight with [`Error::Closed`], and later calls fail with it at once.
///
/// ```no_run
/// use mcp_blocking::{Client, ClientConfig, StdioCommand};
///
/// # fn main() -> Result<(), mcp_blocking::Error> {
/// let client = Client::connect_stdio(StdioCommand::new("my-server"), ClientConfig::new("app", "1"))?;
/// let handle = client.handle();
/// let worker = std::thread::spawn(move || handle.call_tool("echo", serde_json::json!({"text": "hi"})));
/// let tools = client.handle().list_tools()?; // meanwhile, on this thread
/// println!("{} tools; echo said {}", tools.len(), worker.join().unwrap()?.text());
/// client.close();
/// # Ok(())
/// # }
/// ```
pub struct ClientHandle<F: Flavour = Sendable> {
    link: Arc<Link<F>>,
    details: Arc<ServerDetails>,
    /// What [`ClientHandle::canceller`] cancels: the calls of this handle and its clones.
    scope: Scope,
}

impl<F: Flavour> Clone for ClientHandle<F> {
    fn clone(&self) -> Self {
        ClientHandle {
            link: Arc::clone(&self.link),
            details: Arc::clone(&self.details),
            scope: self.scope.clone(),
        }
    }
}

impl<F: Flavour> std::fmt::Debug for ClientHandle<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientHandle")
            .field("server", &self.details.server_info)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl<F: Flavour> ClientHandle<F> {
    /// Any request, while other threads make theirs; listings fetch every page.
    ///
    /// # Errors
    /// [`Error::Call`] for a failed call (server error, timeout, invalid answer),
    /// [`Error::Closed`] when the connection is over (the [`Client`] closed or dropped
    /// included).
    pub fn request(&self, request: CallRequest) -> Result<CallOutput, Error> {
        self.link.request(request, &self.scope)
    }

    mcp_io::typed_requests!(blocking &);

    /// A [`Canceller`] of every call this handle and its clones are blocked in when it
    /// fires (take another handle from the [`Client`] to cancel apart).
    #[must_use]
    pub fn canceller(&self) -> Canceller {
        Canceller {
            scope: self.scope.clone(),
            wake: self.link.waker(),
        }
    }

    /// The server's era.
    #[must_use]
    pub fn era(&self) -> Era {
        self.details.protocol_version.era()
    }

    /// The negotiated protocol version.
    #[must_use]
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.details.protocol_version
    }

    /// What the server said about itself.
    #[must_use]
    pub fn server(&self) -> &ServerDetails {
        &self.details
    }

    /// Whether the connection is over (closed by either side).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.link.closed().is_some()
    }

    /// TCP connections opened so far, for a client over HTTP.
    #[must_use]
    pub fn http_connections_opened(&self) -> u64 {
        let d = self.link.lock();
        d.core.machine.pool_stats().map_or(0, |s| s.opened)
    }

    /// stdio: the first line the server wrote to its stdout that was no JSON-RPC message
    /// (a log line, most often), quoted, clipped and escaped, as
    /// [`proto::Client::unreadable_line`] keeps it; `None` over HTTP. Still readable
    /// after the connection ended. A call that timed out may have lost its answer in
    /// such a line: a caller can quote it, as a failed connect's [`Error`] does.
    #[must_use]
    pub fn unreadable_line(&self) -> Option<proto::UnreadableLine> {
        self.link.lock().core.machine.unreadable_line().cloned()
    }

    mcp_io::client_state!(link.shared);
}

/// The protocol machine of a [`Client`], locked for inspection ([`Client::machine`]):
/// dereferences to [`mcp_proto::client::Client`]. Calls from other threads wait while it
/// lives.
pub struct MachineRef<'a, F: Flavour = Sendable>(crate::followers::Locked<'a, F>);

impl<F: Flavour> std::ops::Deref for MachineRef<'_, F> {
    type Target = mcp_proto::client::Client;

    fn deref(&self) -> &Self::Target {
        &self.0.core.machine
    }
}

impl<F: Flavour> std::fmt::Debug for MachineRef<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn client_and_error_cross_threads() {
        fn send<T: Send>() {}
        fn send_sync<T: Send + Sync>() {}
        send::<super::Client>();
        send_sync::<super::ClientHandle>();
        send_sync::<super::Canceller>();
        send_sync::<crate::Error>();
    }
}
