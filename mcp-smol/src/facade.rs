//! What the [`Client`](crate::Client) handles are owed: their commands applied to the
//! machine, the machine's events turned into replies, notifications and shared state,
//! and, at the end, an error for whatever still waits.
//!
//! Nothing here does IO or decides anything about the protocol: progress and input
//! requests are handled by [`Options::handle_event`](mcp_io::Options::handle_event) (shared with `mcp-blocking`), the
//! era cache is filled from the machine's verdict, and failures become errors as
//! [`Error::closed`] and [`Error::call`] make them (shared with `mcp-blocking` too).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_channel::Sender;
use event_listener::Event as Listeners;
use mcp_io::Flavour;
use mcp_io::drive::Core;
use mcp_io::mailbox::Mailbox;
use mcp_io::oneshot::Reply;
use mcp_proto::Instant;
use mcp_proto::client::{
    CallId, CallOutput, CloseReason, ConnectionState, Event, IdMap, UnreadableLine,
};
use mcp_proto::model::ServerDetails;

use crate::Error;
use crate::client::Command;
use mcp_io::Shared;

/// A bell every waiter hears (a channel's token would wake only one of them, and the
/// others would wait on for what is already queued): rung when the driver queues
/// something in the shared inbox, closed when the driver goes.
#[derive(Debug, Default)]
pub(crate) struct Bell {
    listeners: Listeners,
    closed: AtomicBool,
}

impl Bell {
    fn ring(&self) {
        self.listeners.notify(usize::MAX);
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.ring();
    }

    /// What `take` finds, as soon as it finds something; once the bell is closed (the
    /// driver gone), what it finds then, or `None`.
    pub(crate) async fn until<T>(&self, mut take: impl FnMut() -> Option<T>) -> Option<T> {
        loop {
            if let Some(found) = take() {
                return Some(found);
            }
            // Listening before looking again loses no ring.
            let rung = self.listeners.listen();
            if let Some(found) = take() {
                return Some(found);
            }
            if self.closed.load(Ordering::SeqCst) {
                return take();
            }
            rung.await;
        }
    }
}

/// The channels between the handles and the driver.
pub(crate) struct Channels {
    pub(crate) commands: Mailbox<Command>,
    /// Rung when a notification is queued in the shared inbox.
    pub(crate) doorbell: Arc<Bell>,
    /// Rung when a request for input is queued there.
    pub(crate) input_bell: Arc<Bell>,
    /// Dropped when the driver finishes.
    pub(crate) done: Sender<()>,
}

/// The command channel's receiving end. Dropping it (the driver ended or was dropped)
/// closes the channel and drops the commands still queued, so that every call waiting
/// for a reply learns that none will come.
pub(crate) type Commands = Mailbox<Command>;

/// The handles' side of a driver.
pub(crate) struct Facade {
    pub(crate) commands: Commands,
    doorbell: Arc<Bell>,
    input_bell: Arc<Bell>,
    _done: Sender<()>,
    pub(crate) shared: Arc<Shared>,
    calls: IdMap<CallId, (u64, Reply<Result<CallOutput, Error>>)>,
    keys: IdMap<u64, CallId>,
    waiters: Vec<Reply<Result<ServerDetails, Error>>>,
    /// The endpoint's origin, for HTTP: names it in transport errors.
    endpoint: Option<String>,
}

impl Drop for Facade {
    /// The driver is gone: every waiter takes what is queued, then learns it.
    fn drop(&mut self) {
        self.doorbell.close();
        self.input_bell.close();
    }
}

impl Facade {
    pub(crate) fn new(channels: Channels, shared: Arc<Shared>, endpoint: Option<String>) -> Facade {
        Facade {
            commands: channels.commands,
            doorbell: channels.doorbell,
            input_bell: channels.input_bell,
            _done: channels.done,
            shared,
            calls: IdMap::default(),
            keys: IdMap::default(),
            waiters: Vec::new(),
            endpoint,
        }
    }

    /// Applies one command from the handles.
    pub(crate) fn apply<F: Flavour>(&mut self, core: &mut Core<F>, now: Instant, command: Command) {
        let machine = &mut core.machine;
        match command {
            Command::Call {
                key,
                request,
                reply,
            } => match machine.call(now, request) {
                Ok(call) => {
                    self.calls.insert(call, (key, reply));
                    self.keys.insert(key, call);
                }
                Err(e) => {
                    reply.send(Err(Error::from(e)));
                }
            },
            Command::Listen { request, reply } => {
                // A listen whose future was dropped meanwhile ends at once: nobody could
                // end it, and it would hold one of the subscriptions for good.
                let started = machine.call(now, request).map_err(Error::from);
                if let Err(Ok(call)) = reply.try_send(started) {
                    let _ = machine.cancel(now, call);
                }
            }
            Command::EndListen(call) => {
                let _ = machine.cancel(now, call);
            }
            Command::Respond {
                input,
                answer,
                reply,
            } => {
                reply.send(machine.respond(now, input, answer).map_err(Error::from));
            }
            Command::SetRoots { roots, reply } => {
                reply.send(machine.set_roots(now, roots).map_err(Error::from));
            }
            Command::TaskView { call, reply } => {
                reply.send(machine.task(call).cloned());
            }
            Command::StartTask { request, reply } => {
                let started = machine.call(now, request).map_err(Error::from);
                if let Ok(call) = &started {
                    self.shared.lock().inbox.expect_outcome(*call);
                }
                reply.send(started);
            }
            Command::Cancel { key } => {
                if let Some(call) = self.keys.remove(&key) {
                    let _ = machine.cancel(now, call);
                }
            }
            Command::Connected(reply) => match (machine.state(), machine.server()) {
                (ConnectionState::Ready(..), Some(details)) => {
                    reply.send(Ok(details.clone()));
                }
                _ => self.waiters.push(reply),
            },
            Command::Configure(change) => change.apply(&mut core.options),
            Command::Close => machine.close(now),
        }
    }

    /// Handles one event of the machine that the options did not take.
    pub(crate) fn on_event(&mut self, event: Event) {
        let notification = matches!(
            event,
            Event::Notification(_)
                | Event::TaskCreated { .. }
                | Event::TaskStatus { .. }
                | Event::SubscriptionAcknowledged { .. }
                | Event::SubscriptionNotification { .. }
                | Event::SubscriptionReconnecting { .. }
                | Event::SubscriptionEnded { .. }
        );
        let input = matches!(event, Event::InputRequested { .. });
        let Some(event) = self.shared.lock().inbox.keep(event) else {
            if notification {
                self.doorbell.ring();
            }
            if input {
                self.input_bell.ring();
            }
            return;
        };
        match event {
            Event::Connected(details) => {
                for waiter in self.waiters.drain(..) {
                    waiter.send(Ok((*details).clone()));
                }
            }
            Event::CallCompleted { call, .. } if !self.calls.contains_key(&call) => {
                // A started task's outcome, kept in the inbox: wake its waiter.
                self.doorbell.ring();
            }
            Event::CallCompleted { call, outcome } => {
                if let Some((key, reply)) = self.calls.remove(&call) {
                    self.keys.remove(&key);
                    let outcome = outcome.map_err(|e| Error::call(e, self.endpoint.as_deref()));
                    // A dropped receiver means the caller stopped waiting: nothing to do.
                    reply.send(outcome);
                }
            }
            Event::Closed { reason } => {
                self.shared.lock().ended = Some(self.closed_error(reason));
                // Later commands fail at once; the queued ones get the end in `finish`.
                self.commands.close();
            }
            _ => {}
        }
    }

    /// The error for a connection that closed for `reason`.
    pub(crate) fn closed_error(&self, reason: CloseReason) -> Error {
        Error::closed(reason, self.endpoint.as_deref())
    }

    /// The end: the driver's result, published, and given to whatever still waits
    /// (queued commands, calls, [`Client::connected`](crate::Client::connected)). A
    /// connection that never connected fails with the server's stderr and `unreadable`,
    /// the first line of its stdout that could not be used.
    pub(crate) fn finish(
        &mut self,
        reason: Option<&CloseReason>,
        unreadable: Option<&UnreadableLine>,
    ) -> Result<(), Error> {
        let reason = reason.cloned().unwrap_or(CloseReason::Local);
        let ended = self.closed_error(reason.clone());
        self.commands.close();
        let connect_error = {
            let mut shared = self.shared.lock();
            shared.pid = None;
            shared.ended.get_or_insert_with(|| ended.clone());
            if shared.inbox.server.is_none() {
                let stderr = shared.stderr.current_text();
                // The process, if any, is reaped by now: its exit status is known.
                let shutdown = shared.shutdown;
                let endpoint = self.endpoint.as_deref();
                let e = Error::not_connected_after(reason.clone(), endpoint, stderr, shutdown)
                    .with_unreadable_line(unreadable);
                shared.connect_error = Some(e.clone());
                e
            } else {
                ended.clone()
            }
        };
        while let Some(command) = self.commands.try_next() {
            match command {
                Command::Call { reply, .. } => {
                    reply.send(Err(ended.clone()));
                }
                Command::Connected(reply) => self.waiters.push(reply),
                Command::Listen { reply, .. } | Command::StartTask { reply, .. } => {
                    reply.send(Err(ended.clone()));
                }
                Command::Respond { reply, .. } | Command::SetRoots { reply, .. } => {
                    reply.send(Err(ended.clone()));
                }
                Command::TaskView { reply, .. } => {
                    reply.send(None);
                }
                Command::Cancel { .. }
                | Command::EndListen(_)
                | Command::Configure(_)
                | Command::Close => {}
            }
        }
        for (_, (_, reply)) in self.calls.drain() {
            reply.send(Err(ended.clone()));
        }
        self.keys.clear();
        for waiter in self.waiters.drain(..) {
            waiter.send(Err(connect_error.clone()));
        }
        match reason {
            CloseReason::Local => Ok(()),
            _ => Err(ended),
        }
    }
}
