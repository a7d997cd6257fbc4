//! What the machine reported that the caller has not picked up yet.

use std::collections::{HashMap, VecDeque};

use mcp_host::{MAX_NOTIFICATIONS, MAX_PEER_ERRORS, push_newest};
use mcp_proto::client::{CallError, CallId, CallOutput, CloseReason, Event, PeerError};
use mcp_proto::jsonrpc::Notification;
use mcp_proto::model::ServerDetails;

/// The events of one connection, kept for the blocking methods: the handshake's verdict,
/// call outcomes, notifications, peer errors, excluded tools, the close reason.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    pub(crate) details: Option<ServerDetails>,
    pub(crate) completed: HashMap<CallId, Result<CallOutput, CallError>>,
    pub(crate) notifications: VecDeque<Notification>,
    pub(crate) dropped_notifications: u64,
    pub(crate) peer_errors: VecDeque<PeerError>,
    /// Tools left out of `tools/list` over HTTP, with the reason (latest per tool).
    pub(crate) excluded_tools: Vec<(String, String)>,
    pub(crate) closed: Option<CloseReason>,
}

impl Inbox {
    /// Keeps what `event` says. Progress and input requests never get here: the options
    /// handle them on the spot.
    pub(crate) fn push(&mut self, event: Event) {
        match event {
            Event::Connected(details) => self.details = Some(*details),
            Event::CallCompleted { call, outcome } => {
                self.completed.insert(call, outcome);
            }
            Event::Notification(n) => {
                let dropped = push_newest(&mut self.notifications, n, MAX_NOTIFICATIONS);
                self.dropped_notifications += u64::from(dropped);
            }
            Event::NotificationsDropped { count } => self.dropped_notifications += count,
            Event::PeerError(e) => {
                push_newest(&mut self.peer_errors, e, MAX_PEER_ERRORS);
            }
            Event::ToolExcluded { tool, reason } => {
                match self.excluded_tools.iter_mut().find(|(t, _)| *t == tool) {
                    Some(entry) => entry.1 = reason.to_string(),
                    None => self.excluded_tools.push((tool, reason.to_string())),
                }
            }
            Event::Closed { reason } => self.closed = Some(reason),
            // InputCancelled: the handler answers on the spot, nothing is waiting.
            _ => {}
        }
    }
}
