//! A server too busy for a request: `503 Service Unavailable` or `429 Too Many Requests`
//! with a `Retry-After` in seconds. The request was not handled (that is what both
//! statuses mean, and this crate's server sends `503` only for requests it never read),
//! so it is sent again, unchanged and under its own JSON-RPC id, once the wait is over.
//!
//! The wait is the server's, but never shorter than a backoff that doubles with each
//! time the same request is turned away ([`BUSY_BACKOFF`], then twice that, …), up to
//! [`HttpConfig::max_retry_after`](super::HttpConfig): requests turned away together
//! would otherwise come back together, and a server answering `Retry-After: 0` would be
//! asked again at once. Bounded three ways: at most
//! [`HttpConfig::max_busy_retries`](super::HttpConfig) times per request, a `Retry-After`
//! of at most `max_retry_after`, and only when the wait ends before the request's
//! deadline (its call's, or the handshake's). Otherwise the call fails at once with the
//! status, as it does without a `Retry-After` (an HTTP date is not read: the machine has
//! no wall clock). A request cancelled or timed out while it waits is not sent. One
//! whose legacy session was replaced while it waited, or whose new session is still
//! being made, goes to the session, which sends it on the new session once (it never
//! ran). Notifications and responses are not sent again. The legacy session's `DELETE` at
//! close is, within the close's own deadline (`HttpConfig::close_timeout`): else the
//! server keeps the session until it drops it by itself.

use std::time::Duration;

use crate::Instant;
use crate::client::ConnectionState;
use crate::client::session::{OutKind, Outgoing};
use crate::http::ResponseHead;
use crate::version::ProtocolVersion;

use super::HttpLink;
use super::authorize::Parked;
use super::exchange::Exchange;

/// The shortest wait before a request turned away is sent again, doubled for each
/// time it was turned away before.
pub const BUSY_BACKOFF: Duration = Duration::from_millis(500);

/// A request waiting out the server's `Retry-After`.
#[derive(Debug)]
pub(super) struct PendingRetry {
    pub(super) due: Instant,
    pub(super) again: Again,
    /// The legacy session the request was turned away on (see
    /// `HttpLink::session_epoch`).
    pub(super) epoch: u32,
}

/// What is sent again.
#[derive(Debug)]
pub(super) enum Again {
    /// A message of the protocol machine.
    Message(Parked),
    /// The session's `DELETE`, with the version it names.
    Delete(Option<ProtocolVersion>),
}

impl PendingRetry {
    /// The JSON-RPC id of the request.
    pub(super) fn rpc_id(&self) -> Option<i64> {
        match &self.again {
            Again::Message(Parked {
                msg:
                    Outgoing {
                        kind: OutKind::Request(rpc),
                        ..
                    },
                ..
            }) => Some(*rpc),
            _ => None,
        }
    }

    /// Bytes it holds.
    pub(super) fn retained_bytes(&self) -> usize {
        match &self.again {
            Again::Message(p) => p.msg.json.len(),
            Again::Delete(_) => 0,
        }
    }
}

impl HttpLink {
    /// The request of `x` drew `status`: when the server said how long to wait and the
    /// wait fits (see the module docs), its message waits and is sent again. True when
    /// it will be.
    pub(super) fn retry_when_turned_away(
        &mut self,
        now: Instant,
        x: &mut Exchange,
        status: Option<u16>,
    ) -> bool {
        let Some(rpc) = x.rpc_id else {
            return false;
        };
        let Some(wait) = self.busy_wait(x.head.as_ref(), status) else {
            return false;
        };
        let longest = self.config.max_retry_after;
        let Some(replay) = x.replay.take() else {
            return false;
        };
        if replay.turned_away >= self.config.max_busy_retries {
            return false;
        }
        let backoff = BUSY_BACKOFF.saturating_mul(1 << replay.turned_away.min(16));
        let due = now + wait.max(backoff.min(longest));
        let in_time = self.client.deadline_of(rpc).is_none_or(|d| due < d);
        if !in_time || !self.client.is_awaiting(rpc) {
            return false;
        }
        let mut parked = replay.into_parked();
        parked.turned_away += 1;
        self.retries.push(PendingRetry {
            due,
            again: Again::Message(parked),
            epoch: x.session_epoch,
        });
        true
    }

    /// The session's `DELETE` ended with the response `head`: when a busy server turned
    /// it away and the close's deadline leaves time for the wait, it is sent again then.
    pub(super) fn retry_delete_when_turned_away(
        &mut self,
        now: Instant,
        head: Option<&ResponseHead>,
        version: Option<ProtocolVersion>,
    ) {
        let Some(wait) = self.busy_wait(head, head.map(|h| h.status)) else {
            return;
        };
        let due = now + wait.max(BUSY_BACKOFF);
        if self.close_deadline.is_some_and(|d| due < d) {
            let again = Again::Delete(version);
            let epoch = self.session_epoch;
            self.retries.push(PendingRetry { due, again, epoch });
        }
    }

    /// The server's wait, when `status` says it is busy and the wait is one to honour.
    fn busy_wait(&self, head: Option<&ResponseHead>, status: Option<u16>) -> Option<Duration> {
        if !matches!(status, Some(429 | 503)) {
            return None;
        }
        let wait = retry_after(head?.header("retry-after")?)?;
        (wait <= self.config.max_retry_after).then_some(wait)
    }

    /// Sends the requests whose wait is over, unless their call ended meanwhile.
    pub(super) fn start_due_retries(&mut self, now: Instant) {
        if self.retries.iter().all(|r| r.due > now) {
            return;
        }
        let (due, later) = std::mem::take(&mut self.retries)
            .into_iter()
            .partition(|r| r.due <= now);
        self.retries = later;
        for retry in due {
            let parked = match retry.again {
                Again::Delete(version) => {
                    self.send_delete(version);
                    continue;
                }
                Again::Message(parked) => parked,
            };
            let OutKind::Request(rpc) = parked.msg.kind else {
                continue;
            };
            if !self.client.is_awaiting(rpc) {
                continue;
            }
            // The legacy session it was turned away on was replaced since, or a new one
            // is still being made: the session sends the call on the new one (its
            // request never ran), as for a late `404`.
            let replaced = retry.epoch != self.session_epoch
                || !matches!(self.client.state(), ConnectionState::Ready(..));
            if replaced && !self.client.is_handshake(rpc) {
                self.client.handle_refused_on_replaced_session(now, rpc);
            } else {
                self.send_parked(now, parked);
            }
        }
    }

    /// The requests waiting out a `Retry-After`, taken away: their session is gone.
    pub(super) fn take_retries(&mut self) -> Vec<i64> {
        let retries = std::mem::take(&mut self.retries);
        retries.iter().filter_map(PendingRetry::rpc_id).collect()
    }
}

/// `Retry-After` as a number of seconds (RFC 9110 §10.2.3's delay-seconds); `None` for
/// an HTTP date or anything else.
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() || value.len() > 9 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_only() {
        assert_eq!(retry_after("1"), Some(Duration::from_secs(1)));
        assert_eq!(retry_after(" 120 "), Some(Duration::from_secs(120)));
        assert_eq!(retry_after("0"), Some(Duration::ZERO));
        for bad in [
            "",
            "-1",
            "1.5",
            "+3",
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "9999999999",
        ] {
            assert_eq!(retry_after(bad), None, "{bad:?}");
        }
    }
}
