//! [`Inbox`]: what the machine says about a connection, kept for the handles to read.

use std::collections::VecDeque;

use mcp_proto::Limits;
use mcp_proto::client::{
    CallError, CallId, CallOutput, ClientConfig, CloseReason, Event, IdMap, InputId, InputRequest,
    PeerError,
};
use mcp_proto::jsonrpc::Notification;
use mcp_proto::model::ServerDetails;

use crate::{EraCache, MAX_NOTIFICATIONS, MAX_PEER_ERRORS, push_newest};

/// What the machine's events say about one connection, kept the same way by both
/// adapters for their handles: the server's details, the close reason, the newest peer
/// errors, the tools left out over HTTP, the notifications not yet taken and the count
/// of dropped ones; and, over HTTP with an [`EraCache`], the era the connection settled
/// on, recorded there.
///
/// Notifications are kept up to [`MAX_NOTIFICATIONS`] and up to a byte budget
/// ([`Limits::max_queued_event_bytes`] by default, the machine's own); beyond either the
/// oldest are dropped and counted.
///
/// ```
/// use mcp_io::Inbox;
/// use mcp_proto::client::{ClientConfig, CloseReason, Event, PeerError};
///
/// let mut inbox = Inbox::default();
/// assert!(inbox.keep(Event::NotificationsDropped { count: 2 }).is_none());
/// let closed = inbox.keep(Event::Closed { reason: CloseReason::Local });
/// assert!(matches!(closed, Some(Event::Closed { .. })), "passed on, for the adapter");
/// assert_eq!((inbox.dropped_notifications, inbox.closed), (2, Some(CloseReason::Local)));
/// ```
#[derive(Debug)]
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
    /// Kinds of input the server asked for that the client did not declare, each once
    /// ([`Event::InputUndeclared`]).
    pub undeclared_inputs: Vec<&'static str>,
    /// Notifications not yet taken, oldest first, and their bytes.
    notifications: VecDeque<Notification>,
    notification_bytes: usize,
    max_notification_bytes: usize,
    /// 2026-07-28 subscription events not yet taken, oldest first, with their bytes
    /// (counted in `notification_bytes`).
    subscription_events: VecDeque<(Event, usize)>,
    /// Where the era verdict goes, under which origin.
    era_cache: Option<(EraCache, String)>,
    /// Task events ([`Event::TaskCreated`], [`Event::TaskStatus`]) not yet taken, oldest
    /// first (at most [`MAX_NOTIFICATIONS`]; past it the oldest is dropped and counted).
    task_events: VecDeque<Event>,
    /// Outcomes of the calls started with [`Inbox::expect_outcome`], until taken (at
    /// most [`MAX_NOTIFICATIONS`] completed ones; past it the oldest is dropped).
    outcomes: IdMap<CallId, Option<Result<CallOutput, CallError>>>,
    /// Requests for input not yet taken, with [`Options::queue_input`](crate::Options::queue_input)
    /// (the machine bounds how many are pending).
    input_requests: VecDeque<PendingInput>,
}

/// A request for input the application answers itself (with
/// [`Options::queue_input`](crate::Options::queue_input)): answer it through the
/// client's `respond` with `input`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PendingInput {
    /// Answer with this id.
    pub input: InputId,
    /// The call it belongs to, when known (always in the 2026 era).
    pub call: Option<CallId>,
    /// What is asked.
    pub request: InputRequest,
}

impl Default for Inbox {
    fn default() -> Self {
        Inbox {
            server: None,
            closed: None,
            peer_errors: VecDeque::new(),
            excluded_tools: Vec::new(),
            dropped_notifications: 0,
            undeclared_inputs: Vec::new(),
            notifications: VecDeque::new(),
            notification_bytes: 0,
            max_notification_bytes: Limits::default().max_queued_event_bytes,
            subscription_events: VecDeque::new(),
            era_cache: None,
            input_requests: VecDeque::new(),
            task_events: VecDeque::new(),
            outcomes: IdMap::default(),
        }
    }
}

impl Inbox {
    /// The inbox of a connection made with `config`: notifications are kept within its
    /// [`Limits::max_queued_event_bytes`], the machine's own budget. Both adapters start
    /// from it.
    #[must_use]
    pub fn for_client(config: &ClientConfig) -> Self {
        Inbox::default().notification_budget(config.limits.max_queued_event_bytes)
    }

    /// The same inbox, recording the era the connection settles on in `cache`, under
    /// `origin` (the endpoint's), when there is a cache.
    #[must_use]
    pub fn recording_era(mut self, cache: Option<EraCache>, origin: &str) -> Self {
        self.era_cache = cache.map(|c| (c, origin.to_owned()));
        self
    }

    /// The same inbox, keeping at most `bytes` of notifications (see
    /// [`Notification::retained_bytes`]); the adapters pass their machine's
    /// [`Limits::max_queued_event_bytes`].
    #[must_use]
    pub fn notification_budget(mut self, bytes: usize) -> Self {
        self.max_notification_bytes = bytes;
        self
    }

    /// The oldest notification not yet taken.
    pub fn take_notification(&mut self) -> Option<Notification> {
        let n = self.notifications.pop_front()?;
        self.notification_bytes -= n.retained_bytes();
        Some(n)
    }

    /// The oldest request for input not yet taken (queued with
    /// [`Options::queue_input`](crate::Options::queue_input); one the server or the end
    /// of its call made void is gone from the queue).
    pub fn take_input_request(&mut self) -> Option<PendingInput> {
        self.input_requests.pop_front()
    }

    /// Bytes of the notifications waiting to be taken.
    #[must_use]
    pub fn notification_bytes(&self) -> usize {
        self.notification_bytes
    }

    /// The oldest 2026-07-28 subscription event not yet taken
    /// ([`Event::SubscriptionAcknowledged`], [`Event::SubscriptionNotification`],
    /// [`Event::SubscriptionReconnecting`], [`Event::SubscriptionEnded`]): of the
    /// subscription `only`, or of any.
    pub fn take_subscription_event(&mut self, only: Option<CallId>) -> Option<Event> {
        let at = self
            .subscription_events
            .iter()
            .position(|(e, _)| only.is_none() || subscription_of(e) == only)?;
        let (event, size) = self.subscription_events.remove(at)?;
        self.notification_bytes -= size;
        Some(event)
    }

    /// The oldest task event not yet taken ([`Event::TaskCreated`],
    /// [`Event::TaskStatus`]): of the call `only`, or of any.
    pub fn take_task_event(&mut self, only: Option<CallId>) -> Option<Event> {
        let at = self.task_events.iter().position(|e| {
            only.is_none()
                || matches!(e, Event::TaskCreated { call, .. } if Some(*call) == only)
                || matches!(e, Event::TaskStatus { call, .. } if *call == only)
        })?;
        self.task_events.remove(at)
    }

    /// Keeps the outcome of the call `call` for [`Inbox::take_outcome`] (an adapter
    /// marks so the calls it starts without waiting for them, such as a task).
    pub fn expect_outcome(&mut self, call: CallId) {
        self.outcomes.insert(call, None);
    }

    /// The outcome of a call marked with [`Inbox::expect_outcome`], once it completed.
    pub fn take_outcome(&mut self, call: CallId) -> Option<Result<CallOutput, CallError>> {
        match self.outcomes.get(&call) {
            Some(Some(_)) => self.outcomes.remove(&call).flatten(),
            _ => None,
        }
    }

    /// Whether the outcome of `call` is awaited (marked and not yet taken).
    #[must_use]
    pub fn awaits_outcome(&self, call: CallId) -> bool {
        self.outcomes.contains_key(&call)
    }

    /// Queues a subscription event within the notification bounds: past them the oldest
    /// notification (or, when there is none, the oldest event) is dropped and counted.
    fn push_subscription_event(&mut self, event: Event) {
        let size = match &event {
            Event::SubscriptionNotification { notification, .. } => notification.retained_bytes(),
            Event::SubscriptionAcknowledged {
                acknowledged,
                refused,
                ..
            } => acknowledged.retained_bytes() + refused.retained_bytes(),
            _ => 0,
        } + std::mem::size_of::<Event>();
        while !self.subscription_events.is_empty()
            && (self.subscription_events.len() >= MAX_NOTIFICATIONS
                || self.notification_bytes + size > self.max_notification_bytes)
        {
            let at = self
                .subscription_events
                .iter()
                .position(|(e, _)| matches!(e, Event::SubscriptionNotification { .. }))
                .unwrap_or(0);
            if let Some((_, dropped)) = self.subscription_events.remove(at) {
                self.notification_bytes -= dropped;
            }
            self.dropped_notifications += 1;
        }
        self.notification_bytes += size;
        self.subscription_events.push_back((event, size));
    }

    /// Queues `n`, dropping the oldest while the queue is over its count or its bytes
    /// (one notification always fits: the machine admitted it under the same budget).
    fn push_notification(&mut self, n: Notification) {
        let size = n.retained_bytes();
        while !self.notifications.is_empty()
            && (self.notifications.len() >= MAX_NOTIFICATIONS
                || self.notification_bytes + size > self.max_notification_bytes)
        {
            let _ = self.take_notification();
            self.dropped_notifications += 1;
        }
        self.notification_bytes += size;
        self.notifications.push_back(n);
    }

    /// Keeps what `event` says about the connection. The events the adapter must act
    /// on are handed back: `Connected` and `Closed` (kept as well), call outcomes,
    /// and whatever [`Options::handle_event`](crate::Options::handle_event)
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
            Event::Notification(n) => self.push_notification(n),
            Event::CallCompleted { call, outcome } if self.outcomes.contains_key(&call) => {
                // Outcomes nobody takes are bounded too: past MAX_NOTIFICATIONS, one
                // left waiting the longest goes (the lowest call id).
                let done: Vec<CallId> = self
                    .outcomes
                    .iter()
                    .filter(|(_, o)| o.is_some())
                    .map(|(c, _)| *c)
                    .collect();
                if done.len() >= MAX_NOTIFICATIONS
                    && let Some(oldest) = done.into_iter().min()
                {
                    self.outcomes.remove(&oldest);
                }
                self.outcomes.insert(call, Some(outcome.clone()));
                return Some(Event::CallCompleted { call, outcome });
            }
            e @ (Event::TaskCreated { .. } | Event::TaskStatus { .. }) => {
                if self.task_events.len() >= MAX_NOTIFICATIONS {
                    self.task_events.pop_front();
                    self.dropped_notifications += 1;
                }
                self.task_events.push_back(e);
            }
            e @ (Event::SubscriptionAcknowledged { .. }
            | Event::SubscriptionNotification { .. }
            | Event::SubscriptionReconnecting { .. }
            | Event::SubscriptionEnded { .. }) => self.push_subscription_event(e),
            Event::PeerError(e) => {
                push_newest(&mut self.peer_errors, e, MAX_PEER_ERRORS);
            }
            Event::InputRequested {
                input,
                call,
                request,
            } => self.input_requests.push_back(PendingInput {
                input,
                call,
                request,
            }),
            Event::InputCancelled { input } => {
                self.input_requests.retain(|p| p.input != input);
            }
            Event::InputUndeclared { kind } => {
                if !self.undeclared_inputs.contains(&kind) {
                    self.undeclared_inputs.push(kind);
                }
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

/// The subscription a subscription event is about.
fn subscription_of(event: &Event) -> Option<CallId> {
    match event {
        Event::SubscriptionAcknowledged { subscription, .. }
        | Event::SubscriptionNotification { subscription, .. }
        | Event::SubscriptionReconnecting { subscription, .. }
        | Event::SubscriptionEnded { subscription, .. } => Some(*subscription),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    fn note(payload: usize) -> Notification {
        let params = RawValue::from_string(format!("\"{}\"", "x".repeat(payload))).unwrap();
        Notification {
            method: "notifications/message".to_owned(),
            params: Some(params),
        }
    }

    #[test]
    fn notifications_are_kept_within_the_byte_budget_newest_first() {
        let size = note(1000).retained_bytes();
        for (budget, kept) in [(3 * size, 3), (3 * size - 1, 2)] {
            let mut inbox = Inbox::default().notification_budget(budget);
            for _ in 0..10 {
                assert!(inbox.keep(Event::Notification(note(1000))).is_none());
            }
            assert!(inbox.notification_bytes() <= budget);
            assert_eq!(inbox.dropped_notifications, 10 - kept);
            let taken = std::iter::from_fn(|| inbox.take_notification()).count();
            assert_eq!(taken, kept as usize, "budget {budget}");
            assert_eq!(inbox.notification_bytes(), 0);
        }
    }

    #[test]
    fn notifications_are_kept_up_to_their_count() {
        let mut inbox = Inbox::default();
        for _ in 0..MAX_NOTIFICATIONS + 5 {
            let _ = inbox.keep(Event::Notification(note(1)));
        }
        assert_eq!(inbox.dropped_notifications, 5);
        assert_eq!(
            std::iter::from_fn(|| inbox.take_notification()).count(),
            MAX_NOTIFICATIONS
        );
    }
}

#[cfg(test)]
mod subscription_tests {
    use super::*;
    use mcp_proto::client::ListenEnd;
    use serde_json::value::RawValue;

    fn event(sub: u64) -> Event {
        Event::SubscriptionNotification {
            subscription: CallId::from_raw(sub),
            change: None,
            notification: Notification {
                method: "notifications/tools/list_changed".to_owned(),
                params: Some(RawValue::from_string("{}".into()).unwrap()),
            },
        }
    }

    #[test]
    fn subscription_events_are_taken_per_subscription_and_bounded() {
        let mut inbox = Inbox::default();
        for i in 0..MAX_NOTIFICATIONS as u64 + 3 {
            assert!(inbox.keep(event(i % 2)).is_none());
        }
        let ended = Event::SubscriptionEnded {
            subscription: CallId::from_raw(1),
            end: ListenEnd::Complete,
        };
        assert!(inbox.keep(ended).is_none());
        assert_eq!(inbox.dropped_notifications, 4);
        let first = inbox
            .take_subscription_event(Some(CallId::from_raw(1)))
            .unwrap();
        assert!(
            matches!(first, Event::SubscriptionNotification { subscription, .. } if subscription.raw() == 1)
        );
        let mut all = 1;
        while inbox.take_subscription_event(None).is_some() {
            all += 1;
        }
        assert_eq!(all, MAX_NOTIFICATIONS);
        assert_eq!(inbox.notification_bytes(), 0);
    }
}

#[cfg(test)]
mod task_tests {
    use super::*;
    use mcp_proto::client::{CallError, Task, TaskStatus};

    fn status(call: Option<u64>, id: &str) -> Event {
        let object = serde_json::json!({"taskId": id, "status": "working"});
        let task =
            Task::from_object(object.as_object().unwrap(), mcp_proto::Era::Modern, 64).unwrap();
        Event::TaskStatus {
            call: call.map(CallId::from_raw),
            task,
        }
    }

    #[test]
    fn task_events_and_outcomes_are_kept_per_call_and_bounded() {
        let mut inbox = Inbox::default();
        for i in 0..MAX_NOTIFICATIONS as u64 + 2 {
            assert!(inbox.keep(status(Some(i % 2), "t")).is_none());
        }
        assert_eq!(inbox.dropped_notifications, 2);
        match inbox.take_task_event(Some(CallId::from_raw(1))) {
            Some(Event::TaskStatus { call, task }) => {
                assert_eq!(call, Some(CallId::from_raw(1)));
                assert_eq!(task.status, TaskStatus::Working);
            }
            other => panic!("{other:?}"),
        }
        assert!(inbox.keep(status(None, "stranger")).is_none());
        assert!(inbox.take_task_event(Some(CallId::from_raw(7))).is_none());

        let call = CallId::from_raw(9);
        inbox.expect_outcome(call);
        assert!(inbox.awaits_outcome(call));
        assert!(inbox.take_outcome(call).is_none(), "not completed yet");
        let done = Event::CallCompleted {
            call,
            outcome: Err(CallError::Cancelled),
        };
        assert!(inbox.keep(done).is_some(), "passed on as well");
        assert!(matches!(
            inbox.take_outcome(call),
            Some(Err(CallError::Cancelled))
        ));
        assert!(!inbox.awaits_outcome(call));
    }
}
