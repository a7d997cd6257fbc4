//! The queue of [`Event`]s waiting to be polled, bounded in bytes as well as in count.
//!
//! A server can make the client hold events without any call of the client's own:
//! notifications (progress included) and reports of its protocol errors. Those are the
//! *droppable* kinds, with the reports of server requests for input the client did not
//! declare ([`Event::InputUndeclared`]: refused already). Each is admitted only while the droppable events waiting stay
//! within [`Limits::max_queued_notifications`] in number and
//! [`Limits::max_queued_event_bytes`] in bytes; past either bound it is dropped, and the
//! drop is counted in an [`Event::NotificationsDropped`] at the tail of the queue (one
//! per run of drops, so the queue cannot fill with drop reports either). Every other event
//! answers something the client asked for (a call's completion, a request for input, the
//! end) and is bounded by what was asked: it is always kept, but for a request for input
//! voided ([`Event::InputCancelled`]) before it was polled, which is taken back with its
//! cancellation.
//!
//! Peer-supplied text in a [`PeerError`](super::PeerError) is cut to
//! [`MAX_ECHO_BYTES`](super::MAX_ECHO_BYTES) on the way in.
//!
//! The bytes are what each event retains on the heap, estimated from the strings and the
//! verbatim JSON it holds; they are also what [`Client::retained_bytes`] reports.
//!
//! [`Limits::max_queued_notifications`]: crate::Limits::max_queued_notifications
//! [`Limits::max_queued_event_bytes`]: crate::Limits::max_queued_event_bytes
//! [`Client::retained_bytes`]: super::Client::retained_bytes

use std::collections::VecDeque;
use std::fmt;

use super::Event;
use crate::limits::Limits;

/// Bookkeeping cost charged to every event on top of its contents.
const EVENT_OVERHEAD: usize = std::mem::size_of::<Event>() + 16;

#[derive(Debug)]
pub(crate) struct EventQueue {
    events: VecDeque<(Event, usize)>,
    /// Bytes of every event waiting.
    bytes: usize,
    /// Count and bytes of the droppable events waiting.
    droppable: usize,
    droppable_bytes: usize,
    max_droppable: usize,
    max_droppable_bytes: usize,
}

impl EventQueue {
    pub(crate) fn new(limits: &Limits) -> EventQueue {
        EventQueue {
            events: VecDeque::new(),
            bytes: 0,
            droppable: 0,
            droppable_bytes: 0,
            max_droppable: limits.max_queued_notifications,
            max_droppable_bytes: limits.max_queued_event_bytes,
        }
    }

    /// Queues `event`, unless it is of a droppable kind and over the bounds.
    pub(crate) fn push_back(&mut self, event: Event) {
        let event = match event {
            Event::NotificationsDropped { count } => return self.count_dropped(count),
            // A request for input voided before anyone saw it: neither is kept (a server
            // asking and cancelling at once cannot fill the queue with both).
            Event::InputCancelled { input } if self.withdraw_request(input) => return,
            // Whatever the peer wrote is cut short before it is kept.
            Event::PeerError(e) => Event::PeerError(e.clipped()),
            event => event,
        };
        let size = retained_size(&event);
        if is_droppable(&event) {
            if self.droppable >= self.max_droppable
                || self.droppable_bytes.saturating_add(size) > self.max_droppable_bytes
            {
                self.count_dropped(1);
                return;
            }
            self.droppable += 1;
            self.droppable_bytes += size;
        }
        self.bytes += size;
        self.events.push_back((event, size));
    }

    pub(crate) fn pop_front(&mut self) -> Option<Event> {
        let (event, size) = self.events.pop_front()?;
        self.bytes -= size;
        if is_droppable(&event) {
            self.droppable -= 1;
            self.droppable_bytes -= size;
        }
        Some(event)
    }

    /// Takes back the queued [`Event::InputRequested`] for `input`, when it was not
    /// polled yet.
    fn withdraw_request(&mut self, input: super::InputId) -> bool {
        let at = self.events.iter().position(
            |(e, _)| matches!(e, Event::InputRequested { input: queued, .. } if *queued == input),
        );
        let Some((_, size)) = at.and_then(|at| self.events.remove(at)) else {
            return false;
        };
        self.bytes -= size;
        true
    }

    /// Bytes retained by the events waiting.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Adds `count` drops to the report at the tail, or starts a report there.
    fn count_dropped(&mut self, count: u64) {
        if let Some((Event::NotificationsDropped { count: total }, _)) = self.events.back_mut() {
            *total += count;
            return;
        }
        self.bytes += EVENT_OVERHEAD;
        self.events
            .push_back((Event::NotificationsDropped { count }, EVENT_OVERHEAD));
    }
}

fn is_droppable(event: &Event) -> bool {
    matches!(
        event,
        Event::Notification(_)
            | Event::Progress { .. }
            | Event::PeerError(_)
            | Event::Log { .. }
            | Event::ElicitationCompleted { .. }
            | Event::SubscriptionNotification { .. }
            | Event::TaskStatus { .. }
            | Event::InputUndeclared { .. }
    )
}

/// What `event` holds on the heap, estimated: the verbatim JSON and strings it carries,
/// plus a fixed overhead. Linear in the event's size.
pub(crate) fn retained_size(event: &Event) -> usize {
    EVENT_OVERHEAD
        + match event {
            // One (or two, through the HTTP link's queue) per call: counted directly, as
            // measuring the debug form of the result cost thousands of instructions.
            Event::CallCompleted {
                outcome: Ok(output),
                ..
            } => {
                let items = output.items.iter().map(|i| i.get().len());
                output.result.get().len() + items.sum::<usize>()
            }
            Event::Notification(n) => n.retained_bytes(),
            Event::Progress { message, .. } => message.as_ref().map_or(0, String::len),
            Event::Log { message, .. } => {
                message.data.get().len() + message.logger.as_ref().map_or(0, String::len)
            }
            Event::ElicitationCompleted { elicitation_id } => elicitation_id.len(),
            Event::SubscriptionAcknowledged {
                acknowledged,
                refused,
                ..
            } => acknowledged.retained_bytes() + refused.retained_bytes(),
            Event::SubscriptionNotification {
                notification,
                change,
                ..
            } => {
                notification.retained_bytes()
                    + match change {
                        Some(super::Change::ResourceUpdated { uri }) => uri.len(),
                        _ => 0,
                    }
            }
            // Rare kinds: their debug form is as long as what they hold, give or take.
            other => debug_len(other),
        }
}

/// The length of `value`'s debug form, counted without building it.
fn debug_len(value: &impl fmt::Debug) -> usize {
    struct Count(usize);
    impl fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = fmt::write(&mut count, format_args!("{value:?}"));
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{CallId, PeerError};
    use crate::jsonrpc::Notification;

    fn note(payload: usize) -> Event {
        let params =
            serde_json::value::RawValue::from_string(format!("\"{}\"", "x".repeat(payload)));
        Event::Notification(Notification {
            method: "m".to_owned(),
            params: Some(params.unwrap()),
        })
    }

    fn queue(bytes: usize, count: usize) -> EventQueue {
        EventQueue::new(&Limits {
            max_queued_event_bytes: bytes,
            max_queued_notifications: count,
            ..Limits::default()
        })
    }

    #[test]
    fn the_byte_budget_admits_exactly_its_size() {
        let size = retained_size(&note(100));
        for (budget, kept) in [(2 * size, 2), (2 * size - 1, 1)] {
            let mut q = queue(budget, 100);
            for _ in 0..3 {
                q.push_back(note(100));
            }
            assert!(q.bytes() <= budget + EVENT_OVERHEAD);
            let events: Vec<Event> = std::iter::from_fn(|| q.pop_front()).collect();
            let notes = events
                .iter()
                .filter(|e| matches!(e, Event::Notification(_)))
                .count();
            assert_eq!(notes, kept, "budget {budget}");
            assert!(matches!(
                events.last(),
                Some(Event::NotificationsDropped { count }) if *count == 3 - kept as u64
            ));
            assert_eq!(q.bytes(), 0);
        }
    }

    #[test]
    fn a_run_of_drops_is_one_report_and_answers_are_never_dropped() {
        let mut q = queue(1, 0);
        for _ in 0..1000 {
            q.push_back(note(10));
            q.push_back(Event::PeerError(PeerError::ResultWithoutId));
        }
        q.push_back(Event::CallCompleted {
            call: CallId(0),
            outcome: Err(crate::client::CallError::Cancelled),
        });
        q.push_back(note(10));
        let events: Vec<Event> = std::iter::from_fn(|| q.pop_front()).collect();
        assert!(matches!(
            events[..],
            [
                Event::NotificationsDropped { count: 2000 },
                Event::CallCompleted { .. },
                Event::NotificationsDropped { count: 1 }
            ]
        ));
    }

    #[test]
    fn a_completed_call_counts_its_result_and_items() {
        let raw = |n: usize| {
            serde_json::value::RawValue::from_string(format!("\"{}\"", "r".repeat(n))).unwrap()
        };
        let done = |items: usize| Event::CallCompleted {
            call: CallId(1),
            outcome: Ok(crate::client::CallOutput {
                result: raw(10_000),
                items: (0..items).map(|_| raw(1_000)).collect(),
                pages: 1,
                rounds: 0,
            }),
        };
        assert_eq!(retained_size(&done(0)), EVENT_OVERHEAD + 10_002);
        assert_eq!(retained_size(&done(3)), EVENT_OVERHEAD + 10_002 + 3 * 1_002);
    }

    #[test]
    fn peer_text_is_cut_on_the_way_in() {
        let mut q = queue(usize::MAX, 10);
        q.push_back(Event::PeerError(PeerError::UnknownResponse(
            "7".repeat(100_000),
        )));
        let Some(Event::PeerError(PeerError::UnknownResponse(id))) = q.pop_front() else {
            panic!("kept");
        };
        assert!(id.len() <= crate::client::MAX_ECHO_BYTES && id.ends_with('…'));
    }
}
