//! The `Client` handle: cheap to clone, `Send + Sync`, talks to the [`Driver`] over a
//! channel.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_channel::Receiver;
use mcp_io::mailbox::{self, Poster};
use mcp_io::oneshot::{self, Reply};
use mcp_proto::client::{CallOutput, CallRequest, ClientConfig, InputHandler};
use mcp_proto::jsonrpc::Notification;
use mcp_proto::model::ServerDetails;
use mcp_proto::version::{Era, ProtocolVersion};

use mcp_io::{Flavour, Inbox, Options, ProgressHandler, Shared, Shutdown, StdioCommand, WireLog};

use crate::driver::{Driver, Setup, Transport};
use crate::facade::{Bell, Channels, Facade};
use crate::http::Opener;
use crate::{Error, HttpOptions};

/// A change to the driver's [`Options`], applied in order with the other commands: a
/// `Send` handler (the handles are `Send`), which fits a driver of either flavour.
pub(crate) enum Configure {
    InputHandler(Box<dyn InputHandler + Send>),
    Progress(Option<ProgressHandler>),
    WireLog(Option<WireLog>),
    GracePeriod(Duration),
}

impl Configure {
    pub(crate) fn apply<F: Flavour>(self, options: &mut Options<F>) {
        match self {
            Configure::InputHandler(h) => options.input_handler = F::input_handler(h),
            Configure::Progress(p) => options.progress = p.map(F::progress),
            Configure::WireLog(l) => options.wire_log = l.map(F::wire_log),
            Configure::GracePeriod(grace) => options.grace_period = grace,
        }
    }
}

/// What a [`Client`] asks the [`Driver`] to do.
pub(crate) enum Command {
    Call {
        key: u64,
        request: CallRequest,
        reply: Reply<Result<CallOutput, Error>>,
    },
    Cancel {
        key: u64,
    },
    /// Start a 2026 subscription; its id is the reply (its end is an event).
    Listen {
        request: CallRequest,
        reply: Reply<Result<mcp_proto::client::CallId, Error>>,
    },
    /// End a subscription (or cancel a started task).
    EndListen(mcp_proto::client::CallId),
    /// Answer a queued request for input.
    Respond {
        input: mcp_proto::client::InputId,
        answer: mcp_proto::client::InputAnswer,
        reply: Reply<Result<(), Error>>,
    },
    /// Replace the roots offered to the server.
    SetRoots {
        roots: Vec<mcp_proto::client::Root>,
        reply: Reply<Result<(), Error>>,
    },
    /// The latest view of the task behind a call.
    TaskView {
        call: mcp_proto::client::CallId,
        reply: Reply<Option<mcp_proto::client::Task>>,
    },
    /// Start a call whose outcome is kept in the inbox (a task); its id is the reply.
    StartTask {
        request: CallRequest,
        reply: Reply<Result<mcp_proto::client::CallId, Error>>,
    },
    Connected(Reply<Result<ServerDetails, Error>>),
    Configure(Configure),
    /// Close the connection.
    Close,
}

/// A handle to one MCP connection driven by a [`Driver`].
///
/// Clone it freely and use it from any task or thread: every `async` method sends a
/// command to the driver and waits for the answer, so many calls can be in flight at
/// once. The connection stays open while any handle (or a call future) is alive and
/// closes when the last one is dropped or [`close`](Self::close) is called.
///
/// Every `async` method needs the driver to be running (on any executor, or joined with
/// the caller's future). A call whose future is dropped before it finishes is cancelled
/// (`notifications/cancelled` goes to the server).
///
/// The method names are those of `mcp-blocking`'s `Client`; what the blocking client
/// knows once `connect_stdio` returns (era, version, server) is an `Option` here until
/// [`connected`](Self::connected) has resolved.
#[derive(Clone)]
pub struct Client {
    tx: Poster<Command>,
    /// Rung by the driver when it queues a notification (or a started task's outcome);
    /// closes with the driver.
    doorbell: Arc<Bell>,
    /// Rung by the driver when it queues a request for input; closes with the driver.
    input_bell: Arc<Bell>,
    /// Never carries a message: it closes when the driver finishes or is dropped.
    done: Receiver<()>,
    shared: Arc<Shared>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("Client")
            .field("pid", &state.pid)
            .field("endpoint", &state.endpoint)
            .field(
                "protocol_version",
                &state.inbox.server.as_ref().map(|s| s.protocol_version),
            )
            .field("close_reason", &state.inbox.closed)
            .finish_non_exhaustive()
    }
}

impl Client {
    mcp_io::connect_functions! {
        impl
        /// [`connect_stdio`](crate::connect_stdio).
        ///
        /// # Errors
        /// As [`connect_stdio`](crate::connect_stdio).
        fn connect_stdio -> (Client, Driver);

        /// [`connect_http`](crate::connect_http).
        ///
        /// # Errors
        /// As [`connect_http`](crate::connect_http).
        fn connect_http;
    }

    /// [`connect_stdio_with`](crate::connect_stdio_with).
    ///
    /// # Errors
    /// As [`connect_stdio`](crate::connect_stdio).
    pub fn connect_stdio_with<F: Flavour>(
        command: StdioCommand,
        config: ClientConfig,
        options: Options<F>,
    ) -> Result<(Client, Driver<F>), Error> {
        let (child, stdout) = crate::stdio::spawn(&command)?;
        let limit = command.stderr_bytes_kept();
        let inbox = Inbox::for_client(&config);
        let shared = Arc::new(Shared::new(inbox, limit, Some(child.id()), None));
        let (client, channels) = Client::with_channels(shared.clone());
        let driver = Driver::new(Setup {
            config,
            transport: Transport::Stdio(command, (child, stdout)),
            facade: Facade::new(channels, shared, None),
            options,
        });
        Ok((client, driver))
    }

    /// [`connect_http_with`](crate::connect_http_with).
    ///
    /// # Errors
    /// As [`connect_http`](crate::connect_http).
    pub fn connect_http_with<F: Flavour>(
        url: &str,
        config: ClientConfig,
        options: Options<F>,
        http: HttpOptions,
    ) -> Result<(Client, Driver<F>), Error> {
        let does_tls = http.connector.as_ref().is_some_and(|c| c.handles_tls());
        let start = http.prepare("mcp-smol", url, config, does_tls, options.grace_period)?;
        let opener = Opener::new(http.connector, &start);
        let origin = start.url.origin().to_owned();
        let endpoint = Some(start.url.as_str().to_owned());
        let shared = Arc::new(Shared::new(start.inbox, 0, None, endpoint));
        let (client, channels) = Client::with_channels(shared.clone());
        let driver = Driver::new(Setup {
            config: start.config,
            transport: Transport::Http(Box::new(start.http), opener),
            facade: Facade::new(channels, shared, Some(origin)),
            options,
        });
        Ok((client, driver))
    }

    /// A handle and the driver's ends of its channels.
    fn with_channels(shared: Arc<Shared>) -> (Client, Channels) {
        let (tx, rx) = mailbox::mailbox();
        let (doorbell, input_bell) = (Arc::new(Bell::default()), Arc::new(Bell::default()));
        let (done_tx, done_rx) = async_channel::bounded(1);
        let channels = Channels {
            commands: rx,
            doorbell: Arc::clone(&doorbell),
            input_bell: Arc::clone(&input_bell),
            done: done_tx,
        };
        let client = Client {
            tx,
            doorbell,
            input_bell,
            done: done_rx,
            shared,
        };
        (client, channels)
    }

    /// Waits until the era and version are settled and returns what the server said
    /// about itself. Returns at once when already connected (or already closed).
    ///
    /// # Errors
    /// [`Error::Connect`] (with the server's stderr tail) when the connection could not
    /// be established; [`Error::Closed`] when it was closed before.
    pub async fn connected(&self) -> Result<ServerDetails, Error> {
        let (ended, server) = {
            let state = self.shared.lock();
            (state.ended.clone(), state.inbox.server.clone())
        };
        match (ended, server) {
            (Some(e), Some(_)) => return Err(e),
            (None, Some(server)) => return Ok(server),
            (Some(_), None) => {
                // The handshake failed and the driver is winding down: its end carries
                // the whole story (the server's last stderr lines included).
                let _ = self.done.recv().await;
                let state = self.shared.lock();
                let error = state.connect_error.clone().or_else(|| state.ended.clone());
                return Err(error.unwrap_or(Error::DriverGone));
            }
            (None, None) => {}
        }
        let (reply, rx) = oneshot::channel();
        self.send(Command::Connected(reply))?;
        rx.await.unwrap_or_else(|_| Err(self.gone()))
    }

    /// The server's era, once connected.
    #[must_use]
    pub fn era(&self) -> Option<Era> {
        self.protocol_version().map(ProtocolVersion::era)
    }

    /// The negotiated protocol version, once connected.
    #[must_use]
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.shared
            .lock()
            .inbox
            .server
            .as_ref()
            .map(|s| s.protocol_version)
    }

    /// What the server said about itself, once connected.
    #[must_use]
    pub fn server(&self) -> Option<ServerDetails> {
        self.shared.lock().inbox.server.clone()
    }

    /// The server's name from its `serverInfo` (`"(unnamed)"` when it sent none), once
    /// connected.
    #[must_use]
    pub fn server_name(&self) -> Option<String> {
        self.shared.lock().inbox.server.as_ref().map(|s| {
            s.server_info
                .as_ref()
                .map_or_else(|| "(unnamed)".to_owned(), |i| i.name.clone())
        })
    }

    /// Any request; listings fetch every page. Waits for the connection if it is not
    /// ready yet; 2026 `input_required` rounds and legacy server requests are answered by
    /// the input handler. Dropping the future before it completes cancels the call.
    ///
    /// # Errors
    /// [`Error::Call`] for a failed call (server error, timeout, invalid answer);
    /// [`Error::Closed`] when the connection is over; [`Error::Misuse`] for requests the
    /// machine refuses (too many in flight); [`Error::DriverGone`] when the driver was
    /// dropped.
    pub async fn request(&self, request: CallRequest) -> Result<CallOutput, Error> {
        let (reply, rx) = oneshot::channel();
        let key = self.shared.next_key();
        self.send(Command::Call {
            key,
            request,
            reply,
        })?;
        let mut guard = CancelOnDrop {
            tx: &self.tx,
            key: Some(key),
        };
        let outcome = rx.await;
        guard.key = None;
        outcome.unwrap_or_else(|_| Err(self.gone()))
    }

    mcp_io::typed_requests!(async &);

    /// 2026-07-28 `subscriptions/listen` with `filter`: starts a subscription and
    /// resolves to its id once the machine has it. Read what it brings with
    /// [`Client::next_subscription_event`]; end it with [`Client::end_listen`]. Over
    /// HTTP it holds its own stream and listens again (with backoff) when the stream
    /// drops. In the legacy era it ends at once with
    /// [`CallError::NotInVersion`](mcp_proto::client::CallError::NotInVersion):
    /// subscribe to resources with [`Client::subscribe_resource`] and read
    /// [`Client::next_notification`] instead.
    ///
    /// # Errors
    /// [`Error::Closed`] when the connection is over, [`Error::Misuse`] when 16
    /// subscriptions are open already, [`Error::DriverGone`] when the driver was dropped.
    pub async fn listen(
        &self,
        filter: &mcp_proto::client::ListenFilter,
    ) -> Result<mcp_proto::client::CallId, Error> {
        let (reply, rx) = oneshot::channel();
        self.send(Command::Listen {
            request: CallRequest::listen(filter),
            reply,
        })?;
        // Dropped before it resolves, the future ends the subscription it started.
        let mut guard = EndListenOnDrop {
            tx: &self.tx,
            answer: Some(rx),
        };
        let outcome = std::future::poll_fn(|cx| match guard.answer.as_mut() {
            Some(answer) => std::future::Future::poll(std::pin::Pin::new(answer), cx),
            None => std::task::Poll::Ready(Err(oneshot::Dropped)),
        })
        .await;
        guard.answer = None;
        outcome.unwrap_or_else(|_| Err(self.gone()))
    }

    /// Ends the subscription `subscription` (`notifications/cancelled` on stdio,
    /// closing its stream over HTTP); its
    /// [`Event::SubscriptionEnded`](mcp_proto::client::Event::SubscriptionEnded) follows.
    /// A subscription that is over already is left as it is.
    ///
    /// # Errors
    /// [`Error::Closed`] or [`Error::DriverGone`] when the connection is over.
    pub fn end_listen(&self, subscription: mcp_proto::client::CallId) -> Result<(), Error> {
        self.send(Command::EndListen(subscription))
    }

    /// Waits for the next event of the subscription `only` (or of any, for `None`): an
    /// acknowledgement, a notification, a reconnection or the end. `None` once the
    /// connection is over and every such event has been taken.
    pub async fn next_subscription_event(
        &self,
        only: Option<mcp_proto::client::CallId>,
    ) -> Option<mcp_proto::client::Event> {
        let take = || self.shared.lock().inbox.take_subscription_event(only);
        self.doorbell.until(take).await
    }

    /// Waits for the next request for input (elicitation, sampling, roots, 2026
    /// `input_required` rounds) when the options queue them
    /// ([`Options::queue_input_requests`]); answer it with [`Client::respond`], taking as
    /// long as a person needs: the executor is never blocked, and the call it belongs to
    /// waits (legacy call deadlines are paused meanwhile). One the server or the end of
    /// its call made void is never handed out. `None` once the connection is over.
    ///
    /// ```no_run
    /// use mcp_smol::{InputAnswer, InputRequest, Options, StdioCommand};
    /// # use mcp_smol::{ClientCapabilities, ClientConfig};
    /// # async fn run() -> Result<(), mcp_smol::Error> {
    /// let config = ClientConfig::new("app", "1").capabilities(ClientCapabilities::with_elicitation());
    /// let options = Options::new().queue_input_requests();
    /// let (client, driver) =
    ///     mcp_smol::connect_stdio_with(StdioCommand::new("my-server"), config, options)?;
    /// let answering = client.clone();
    /// let answers = async move {
    ///     while let Some(asked) = answering.next_input_request().await {
    ///         // Ask a person, at their pace; here: decline.
    ///         let answer = InputAnswer::decline();
    ///         let _ = answering.respond(asked.input, answer).await;
    ///     }
    /// };
    /// # let _ = (driver, answers, client);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn next_input_request(&self) -> Option<mcp_io::PendingInput> {
        let take = || self.shared.lock().inbox.take_input_request();
        self.input_bell.until(take).await
    }
    /// Starts `request` (a [`CallRequest::call_tool`] made a task with
    /// [`CallRequest::as_task`]) and resolves to its id once the machine has it. The
    /// machine follows the task by itself while the driver runs: read its creation and
    /// status changes with [`Client::next_task_event`], wait for its end with
    /// [`Client::task_result`], stop it with [`Client::cancel_task`]. A plain
    /// [`Client::request`] (or `call_tool`) follows a task the same way, behind the one
    /// result.
    ///
    /// # Errors
    /// [`Error::Closed`] when the connection is over, [`Error::Misuse`] when too many
    /// calls are in flight, [`Error::DriverGone`] when the driver was dropped.
    pub async fn start_task(
        &self,
        request: CallRequest,
    ) -> Result<mcp_proto::client::CallId, Error> {
        let (reply, rx) = oneshot::channel();
        self.send(Command::StartTask { request, reply })?;
        rx.await.unwrap_or_else(|_| Err(self.gone()))
    }

    /// Waits for the end of the call `call` started with [`Client::start_task`]: the
    /// task's result, or its error
    /// ([`CallError::TaskCancelled`](mcp_proto::client::CallError::TaskCancelled) for a
    /// cancelled task). Ask once per call.
    ///
    /// # Errors
    /// [`Error::Call`] for a failed call or task, [`Error::Closed`] when the connection
    /// ended first.
    pub async fn task_result(&self, call: mcp_proto::client::CallId) -> Result<CallOutput, Error> {
        let take = || self.shared.lock().inbox.take_outcome(call);
        match self.doorbell.until(take).await {
            Some(outcome) => outcome.map_err(|e| Error::call(e, self.endpoint().as_deref())),
            None => Err(self.gone()),
        }
    }

    /// Answers a request for input from [`Client::next_input_request`]. The answer is
    /// checked as the input handler's would be (a form answer against its schema, with
    /// defaults applied).
    ///
    /// # Errors
    /// [`Error::Misuse`] when the request is unknown or void (its call ended), or the
    /// answer does not fit it; [`Error::Closed`] or [`Error::DriverGone`] when the
    /// connection is over.
    pub async fn respond(
        &self,
        input: mcp_proto::client::InputId,
        answer: mcp_proto::client::InputAnswer,
    ) -> Result<(), Error> {
        let (reply, rx) = oneshot::channel();
        self.send(Command::Respond {
            input,
            answer,
            reply,
        })?;
        rx.await.unwrap_or_else(|_| Err(self.gone()))
    }

    /// Replaces the roots offered to the server: later `roots/list` requests get them,
    /// and a legacy server is sent `notifications/roots/list_changed` when they differ.
    ///
    /// # Errors
    /// [`Error::Misuse`] when the [`ClientConfig`] did not declare roots;
    /// [`Error::Closed`] or [`Error::DriverGone`] when the connection is over.
    pub async fn set_roots(&self, roots: Vec<mcp_proto::client::Root>) -> Result<(), Error> {
        let (reply, rx) = oneshot::channel();
        self.send(Command::SetRoots { roots, reply })?;
        rx.await.unwrap_or_else(|_| Err(self.gone()))
    }
    /// The latest view of the task behind the call `call`, while it runs (`None` before
    /// the server made one, after the call completed, or once the driver is gone).
    pub async fn task(&self, call: mcp_proto::client::CallId) -> Option<mcp_proto::client::Task> {
        let (reply, rx) = oneshot::channel();
        self.send(Command::TaskView { call, reply }).ok()?;
        rx.await.ok().flatten()
    }

    /// Cancels the call `call` and the task behind it (`tasks/cancel`); its result is
    /// then [`CallError::Cancelled`](mcp_proto::client::CallError::Cancelled). A call
    /// that completed already keeps its outcome (nothing is sent).
    ///
    /// # Errors
    /// [`Error::Closed`] or [`Error::DriverGone`] when the connection is over.
    pub fn cancel_task(&self, call: mcp_proto::client::CallId) -> Result<(), Error> {
        self.send(Command::EndListen(call))
    }

    /// Waits for the next task event ([`Event::TaskCreated`](mcp_proto::client::Event::TaskCreated)
    /// or [`Event::TaskStatus`](mcp_proto::client::Event::TaskStatus)) of the call `only`
    /// (or of any, for `None`). `None` once the connection is over and every such event
    /// has been taken.
    pub async fn next_task_event(
        &self,
        only: Option<mcp_proto::client::CallId>,
    ) -> Option<mcp_proto::client::Event> {
        let take = || self.shared.lock().inbox.take_task_event(only);
        self.doorbell.until(take).await
    }

    /// Replaces the handler that answers requests for input (elicitation, sampling,
    /// roots, 2026 `input_required` rounds). Only requests for capabilities declared in
    /// the [`ClientConfig`] reach it. Takes effect in order with the calls made through
    /// this handle, and can be called before the driver runs.
    pub fn set_input_handler(&self, handler: Box<dyn InputHandler + Send>) {
        self.configure(Configure::InputHandler(handler));
    }

    /// Sets (or with `None` removes) the progress callback.
    pub fn set_progress_handler(&self, handler: Option<ProgressHandler>) {
        self.configure(Configure::Progress(handler));
    }

    /// Sets (or with `None` removes) the wire log.
    pub fn set_wire_log(&self, log: Option<WireLog>) {
        self.configure(Configure::WireLog(log));
    }

    /// Sets the grace period of [`Client::close`] (and of the close on the last drop).
    pub fn set_grace_period(&self, grace: Duration) {
        self.configure(Configure::GracePeriod(grace));
    }

    mcp_io::client_state!(shared);

    /// Waits for the next server notification; `None` once the connection is over and
    /// every notification has been taken.
    pub async fn next_notification(&self) -> Option<Notification> {
        // Once the driver is gone, what it queued last is all there is.
        self.doorbell.until(|| self.poll_notification()).await
    }

    /// Whether the connection is over (closed by either side, or the driver is gone).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed() || self.shared.lock().ended.is_some()
    }

    /// The endpoint URL, verbatim, for a connection over HTTP (`None` for stdio).
    #[must_use]
    pub fn endpoint(&self) -> Option<String> {
        self.shared.lock().endpoint.clone()
    }

    /// Ends the connection for every handle: calls in flight fail with
    /// [`Error::Closed`], the server's stdin is closed, the server gets the grace period
    /// (default 2 s) to exit (its process group is sent `SIGTERM` half-way) and is killed
    /// with its group otherwise, reaped, and what is left of its group killed. Resolves
    /// once that is done, with how the process ended (at once if the connection was
    /// already over).
    ///
    /// Over HTTP the exchanges in flight are aborted, a legacy session is ended with
    /// `DELETE` (waiting at most the grace period for it), every connection is closed,
    /// and the [`Shutdown`] is the default (no process).
    pub async fn close(&self) -> Shutdown {
        // Fails when the connection is already ending: then just wait for the end.
        let _ = self.send(Command::Close);
        // Returns (with an error) when the driver finishes or is dropped.
        let _ = self.done.recv().await;
        self.shared.lock().shutdown.unwrap_or_default()
    }

    fn configure(&self, change: Configure) {
        // Fails only when the driver is gone, and then there is nothing to configure.
        let _ = self.send(Command::Configure(change));
    }

    fn send(&self, command: Command) -> Result<(), Error> {
        self.tx.post(command).map_err(|_| self.gone())
    }

    /// The error for a request the driver can no longer answer.
    fn gone(&self) -> Error {
        self.shared
            .lock()
            .ended
            .clone()
            .unwrap_or(Error::DriverGone)
    }
}

/// Cancels a call whose future is dropped before the answer arrives.
/// Ends the subscription of a [`Client::listen`] future dropped before it resolved: the
/// one already started (its id sent, not yet taken), or, through the abandoned answer,
/// the one the driver starts later.
struct EndListenOnDrop<'a> {
    tx: &'a Poster<Command>,
    answer: Option<oneshot::Answer<Result<mcp_proto::client::CallId, Error>>>,
}

impl Drop for EndListenOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(Ok(call)) = self.answer.take().and_then(oneshot::Answer::abandon) {
            let _ = self.tx.post(Command::EndListen(call));
        }
    }
}

struct CancelOnDrop<'a> {
    tx: &'a Poster<Command>,
    key: Option<u64>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            let _ = self.tx.post(Command::Cancel { key });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_and_futures_cross_threads() {
        fn send_sync<T: Send + Sync>(_: &T) {}
        fn send<T: Send>(_: &T) {}
        let (tx, _rx) = mailbox::mailbox();
        let (_dtx, drx) = async_channel::bounded(1);
        let client = Client {
            tx,
            doorbell: Arc::default(),
            input_bell: Arc::default(),
            done: drx,
            shared: Arc::new(Shared::new(Inbox::default(), 16, Some(1), None)),
        };
        send_sync(&client);
        send(&client.request(CallRequest::list_tools()));
        send(&client.call_tool("x", serde_json::Value::Null));
        send(&client.connected());
        send(&client.close());
        send(&client.next_notification());
        send(&client.next_input_request());
    }
}
