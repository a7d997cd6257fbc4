//! [`Inbox`]: what the machine says about a connection, kept for the handles to read.

use std::collections::VecDeque;

use mcp_proto::client::{CloseReason, Event, PeerError};
use mcp_proto::model::ServerDetails;

use crate::{EraCache, MAX_PEER_ERRORS, push_newest};

/// What the machine's events say about one connection, kept the same way by both
/// adapters for their handles: the server's details, the close reason, the newest peer
/// errors, the tools left out over HTTP, the count of dropped notifications; and, over
/// HTTP with an [`EraCache`], the era the connection settled on, recorded there.
///
/// ```
/// use mcp_io::Inbox;
/// use mcp_proto::client::{CloseReason, Event, PeerError};
///
/// let mut inbox = Inbox::default();
/// assert!(inbox.keep(Event::NotificationsDropped { count: 2 }).is_none());
/// let closed = inbox.keep(Event::Closed { reason: CloseReason::Local });
/// assert!(matches!(closed, Some(Event::Closed { .. })), "passed on, for the adapter");
/// assert_eq!((inbox.dropped_notifications, inbox.closed), (2, Some(CloseReason::Local)));
/// ```
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Inbox {
    /// What the server said about itself, once connected.
    pub server: Option<ServerDetails>,
    /// Why the connection ended, once it has.
    pub closed: Option<CloseReason>,
    /// The newest protocol violations of the server that failed no call (at most
    /// [`MAX_PEER_ERRORS`]).
    pub peer_errors: VecDeque<PeerError>,
    /// The tools left out of `tools/list` because their `x-mcp-header` annotations are
    /// invalid (Streamable HTTP, 2026-07-28), as `(tool, reason)`, the latest reason for
    /// each, first seen first.
    pub excluded_tools: Vec<(String, String)>,
    /// Notifications dropped because nobody took them (by the machine, or by the
    /// adapter's own bounded queue).
    pub dropped_notifications: u64,
    /// Where the era verdict goes, under which origin.
    era_cache: Option<(EraCache, String)>,
}

impl Inbox {
    /// An inbox that records the era the connection settles on in `cache`, under
    /// `origin` (the endpoint's), when there is a cache.
    #[must_use]
    pub fn recording_era(cache: Option<EraCache>, origin: &str) -> Self {
        Inbox {
            era_cache: cache.map(|c| (c, origin.to_owned())),
            ..Self::default()
        }
    }

    /// Keeps what `event` says about the connection. The events the adapter must act
    /// on are handed back: `Connected` and `Closed` (kept as well), call outcomes,
    /// notifications, and whatever [`Options::handle_event`](crate::Options::handle_event)
    /// did not take.
    pub fn keep(&mut self, event: Event) -> Option<Event> {
        match event {
            Event::Connected(details) => {
                if let Some((cache, origin)) = &self.era_cache {
                    cache.record(origin, details.protocol_version);
                }
                self.server = Some((*details).clone());
                return Some(Event::Connected(details));
            }
            Event::Closed { reason } => {
                self.closed = Some(reason.clone());
                return Some(Event::Closed { reason });
            }
            Event::NotificationsDropped { count } => self.dropped_notifications += count,
            Event::PeerError(e) => {
                push_newest(&mut self.peer_errors, e, MAX_PEER_ERRORS);
            }
            Event::ToolExcluded { tool, reason } => {
                let reason = reason.to_string();
                match self.excluded_tools.iter_mut().find(|(t, _)| *t == tool) {
                    Some(entry) => entry.1 = reason,
                    None => self.excluded_tools.push((tool, reason)),
                }
            }
            other => return Some(other),
        }
        None
    }
}
