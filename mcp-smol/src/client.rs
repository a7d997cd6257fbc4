//! The `Client` handle: cheap to clone, `Send + Sync`, talks to the [`Driver`] over a
//! channel.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_proto::client::{CallOutput, CallRequest, ClientConfig, InputHandler};
use mcp_proto::model::{CallToolResult, Prompt, Resource, ServerDetails, Tool};
use mcp_proto::version::{Era, ProtocolVersion};
use serde_json::{Map, Value};
use smol::channel::{Receiver, Sender};

use crate::driver::Driver;
use crate::{Error, StdioCommand};

/// What a [`Client`] asks the [`Driver`] to do.
pub(crate) enum Command {
    Call {
        key: u64,
        request: CallRequest,
        reply: Sender<Result<CallOutput, Error>>,
    },
    Cancel {
        key: u64,
    },
    Connected(Sender<Result<ServerDetails, Error>>),
    SetInputHandler(Box<dyn InputHandler>),
    /// Close the connection; the sender is dropped once the driver is done.
    Close(Sender<()>),
}

/// State the driver publishes for every handle to read.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<SharedState>,
    next_key: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct SharedState {
    pub(crate) server: Option<ServerDetails>,
    /// The error every later request gets, once the connection is over.
    pub(crate) ended: Option<Error>,
    pub(crate) pid: Option<u32>,
    pub(crate) stderr: StderrBuf,
}

impl Shared {
    pub(crate) fn new(stderr_limit: usize, pid: u32) -> Self {
        Shared {
            state: Mutex::new(SharedState {
                server: None,
                ended: None,
                pid: Some(pid),
                stderr: StderrBuf::new(stderr_limit),
            }),
            next_key: AtomicU64::new(0),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, SharedState> {
        // The critical sections cannot panic half-way; a poisoned lock still holds
        // consistent data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The most recent stderr bytes, up to a limit.
#[derive(Debug)]
pub(crate) struct StderrBuf {
    bytes: VecDeque<u8>,
    limit: usize,
}

impl StderrBuf {
    fn new(limit: usize) -> Self {
        StderrBuf {
            bytes: VecDeque::new(),
            limit,
        }
    }

    pub(crate) fn push(&mut self, data: &[u8]) {
        let data = &data[data.len().saturating_sub(self.limit)..];
        let excess = (self.bytes.len() + data.len()).saturating_sub(self.limit);
        self.bytes.drain(..excess);
        self.bytes.extend(data);
    }

    fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut all = Vec::with_capacity(a.len() + b.len());
        all.extend_from_slice(a);
        all.extend_from_slice(b);
        String::from_utf8_lossy(&all).into_owned()
    }
}

/// A handle to one MCP connection driven by a [`Driver`].
///
/// Clone it freely and use it from any task or thread: every method sends a command to
/// the driver and waits for the answer, so many calls can be in flight at once. The
/// connection stays open while any handle (or a call future) is alive and closes when the
/// last one is dropped or [`close`](Self::close) is called.
///
/// Every `async` method needs the driver to be running (on any executor, or joined
/// with the caller's future); a call whose future is dropped before it finishes is
/// cancelled (`notifications/cancelled` goes to the server).
#[derive(Clone)]
pub struct Client {
    tx: Sender<Command>,
    shared: Arc<Shared>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("Client")
            .field("pid", &state.pid)
            .field(
                "protocol_version",
                &state.server.as_ref().map(|s| s.protocol_version),
            )
            .field("ended", &state.ended)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts `command` and returns a handle to the connection and the [`Driver`] that
    /// does all of its IO. Same as the free function [`connect_stdio`](crate::connect_stdio).
    ///
    /// The process is spawned here (so a missing program fails now); the protocol starts
    /// when the driver is first polled: the `server/discover` probe in
    /// [`EraMode::Auto`](mcp_proto::EraMode::Auto), `initialize` in `Legacy`. Calls made
    /// before the connection is ready are queued.
    ///
    /// # Errors
    /// [`Error::Spawn`] when the program cannot be started.
    pub fn connect_stdio(
        command: StdioCommand,
        config: ClientConfig,
    ) -> Result<(Client, Driver), Error> {
        let child = command.spawn()?;
        let shared = Arc::new(Shared::new(command.get_stderr_limit(), child.id()));
        let (tx, rx): (Sender<Command>, Receiver<Command>) = smol::channel::unbounded();
        let driver = Driver::new(command, config, child, rx, shared.clone());
        Ok((Client { tx, shared }, driver))
    }

    /// Waits until the era and version are settled and returns what the server said
    /// about itself. Returns at once when already connected.
    ///
    /// # Errors
    /// [`Error::Closed`] when the connection failed or was closed first.
    pub async fn connected(&self) -> Result<ServerDetails, Error> {
        {
            let state = self.shared.lock();
            if let Some(server) = &state.server {
                return Ok(server.clone());
            }
            if let Some(e) = &state.ended {
                return Err(e.clone());
            }
        }
        let (reply, rx) = smol::channel::bounded(1);
        self.send(Command::Connected(reply))?;
        rx.recv().await.unwrap_or_else(|_| Err(self.gone()))
    }

    /// What the server said about itself, once connected.
    #[must_use]
    pub fn server(&self) -> Option<ServerDetails> {
        self.shared.lock().server.clone()
    }

    /// The era of the server, once connected.
    #[must_use]
    pub fn era(&self) -> Option<Era> {
        self.protocol_version().map(ProtocolVersion::era)
    }

    /// The negotiated protocol version, once connected.
    #[must_use]
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.shared
            .lock()
            .server
            .as_ref()
            .map(|s| s.protocol_version)
    }

    /// The process id of the running server, `None` once it has exited and been reaped.
    /// Changes if the server had to be restarted after the era probe.
    #[must_use]
    pub fn server_pid(&self) -> Option<u32> {
        self.shared.lock().pid
    }

    /// The most recent bytes the server wrote to stderr (lossy UTF-8), up to
    /// [`StdioCommand::stderr_limit`]. Still readable after the connection ended.
    #[must_use]
    pub fn stderr(&self) -> String {
        self.shared.lock().stderr.text()
    }

    /// Whether the connection is over (closed by either side, or the driver is gone).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed() || self.shared.lock().ended.is_some()
    }

    /// Every tool, all pages.
    ///
    /// # Errors
    /// See [`request`](Self::request); [`Error::Call`] with
    /// [`CallError::InvalidResponse`](mcp_proto::client::CallError::InvalidResponse) when
    /// a tool does not parse.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        Ok(self.request(CallRequest::list_tools()).await?.tools()?)
    }

    /// Every resource, all pages.
    ///
    /// # Errors
    /// See [`list_tools`](Self::list_tools).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        Ok(self
            .request(CallRequest::list_resources())
            .await?
            .resources()?)
    }

    /// Every prompt, all pages.
    ///
    /// # Errors
    /// See [`list_tools`](Self::list_tools).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        Ok(self.request(CallRequest::list_prompts()).await?.prompts()?)
    }

    /// Calls tool `name` with `arguments` (a JSON object). Requests for input on the way
    /// are answered by the input handler (see [`set_input_handler`](Self::set_input_handler)).
    ///
    /// A tool that reports failure (`isError: true`) is a successful call: check
    /// [`CallToolResult::is_error`].
    ///
    /// # Errors
    /// See [`request`](Self::request).
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        Ok(self
            .request(CallRequest::call_tool(name, arguments))
            .await?
            .tool_result()?)
    }

    /// `resources/read`; the result is verbatim in [`CallOutput::result`] (parse it with
    /// [`CallOutput::result_as`]).
    ///
    /// # Errors
    /// See [`request`](Self::request).
    pub async fn read_resource(&self, uri: &str) -> Result<CallOutput, Error> {
        self.request(CallRequest::read_resource(uri)).await
    }

    /// `prompts/get` with string arguments; the result is verbatim in
    /// [`CallOutput::result`].
    ///
    /// # Errors
    /// See [`request`](Self::request).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallOutput, Error> {
        self.request(CallRequest::get_prompt(name, arguments))
            .await
    }

    /// Any request. Waits for the connection if it is not ready yet; listings fetch
    /// every page; 2026 `input_required` rounds and legacy server requests are answered
    /// by the input handler. Dropping the future before it completes cancels the call.
    ///
    /// # Errors
    /// [`Error::Call`] for a server error, timeout or invalid answer; [`Error::Closed`]
    /// when the connection closed first; [`Error::Misuse`] for requests the machine
    /// refuses (too many in flight); [`Error::DriverGone`] when the driver was dropped.
    pub async fn request(&self, request: CallRequest) -> Result<CallOutput, Error> {
        let (reply, rx) = smol::channel::bounded(1);
        let key = self.shared.next_key.fetch_add(1, Ordering::Relaxed);
        self.send(Command::Call {
            key,
            request,
            reply,
        })?;
        let mut guard = CancelOnDrop {
            tx: &self.tx,
            key: Some(key),
        };
        let outcome = rx.recv().await;
        guard.key = None;
        outcome.unwrap_or_else(|_| Err(self.gone()))
    }

    /// Sets how requests for input (elicitation, sampling, roots, 2026 `input_required`
    /// rounds) are answered from now on. The default is
    /// [`DeclineAll`](mcp_proto::client::DeclineAll). To receive elicitations at all,
    /// declare the capability in [`ClientConfig::capabilities`].
    ///
    /// Takes effect in order with the calls made through this handle; it can be called
    /// before the driver runs.
    pub fn set_input_handler(&self, handler: impl InputHandler + 'static) {
        let _ = self.send(Command::SetInputHandler(Box::new(handler)));
    }

    /// Closes the connection for every handle: calls in flight fail with
    /// [`Error::Closed`], the server's stdin is closed, and the server gets the grace
    /// period ([`StdioCommand::shutdown_grace`]) to exit before it is killed. Returns once
    /// the driver is done (at once if the connection is already over).
    pub async fn close(&self) {
        let (done, rx) = smol::channel::bounded::<()>(1);
        if self.send(Command::Close(done)).is_ok() {
            // The driver drops `done` when it finishes; nothing is ever sent.
            let _ = rx.recv().await;
        }
    }

    fn send(&self, command: Command) -> Result<(), Error> {
        self.tx.try_send(command).map_err(|_| self.gone())
    }

    /// The error for a request the driver can no longer answer.
    fn gone(&self) -> Error {
        self.shared.lock().ended.clone().unwrap_or(Error::DriverGone)
    }
}

/// Cancels a call whose future is dropped before the answer arrives.
struct CancelOnDrop<'a> {
    tx: &'a Sender<Command>,
    key: Option<u64>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            let _ = self.tx.try_send(Command::Cancel { key });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_keeps_the_last_bytes() {
        let mut b = StderrBuf::new(8);
        b.push(b"hello ");
        b.push(b"world");
        assert_eq!(b.text(), "lo world");
        b.push(b"0123456789abc");
        assert_eq!(b.text(), "56789abc");
        let mut none = StderrBuf::new(0);
        none.push(b"x");
        assert_eq!(none.text(), "");
    }
}
