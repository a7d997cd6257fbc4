//! The MCP server's DPoP nonces (RFC 9449 §8-9). With a DPoP-bound token, a `401`
//! whose challenge says `error="use_dpop_nonce"` does not refuse the token: the proof
//! lacked the nonce the server gives in `DPoP-Nonce`. Every request the link sends (a
//! message's `POST`, the session's `GET` stream, a resumption after `Last-Event-ID`, the
//! 2024-11-05 transport's stream `GET`, the `DELETE` that ends a session) is then sent
//! again once, at once, with the same token and a fresh proof carrying the nonce; no
//! authorization flow starts. Refused so once more, or refused without a nonce to use,
//! it fails with [`AuthError::DpopNonceRefused`] and is not sent again.
//!
//! That is once per token ([`NonceResent`]): a request that goes with a token obtained
//! since its nonce resend (after a flow, whether its own refusal started it or it only
//! waited for one running, or for the token that replaced the one it was refused with)
//! starts afresh, and may be sent again for a nonce once more; a token a flow obtains
//! counts as new even when the server gave the same value again. A new token is a new
//! start for the server too (RFC 9449 §8: a nonce may be asked for of any request), and
//! each flow is bounded on its own ([`MAX_AUTH_TRIES`], the authorizer's step-ups).
//!
//! The nonce itself is kept from whatever response gave it, a success too
//! ([`HttpLink`]'s `on_head`), per origin by the [`Authorizer`]; the authorization
//! server's nonces are the flow's own.
//!
//! [`Authorizer`]: crate::auth::Authorizer
//! [`MAX_AUTH_TRIES`]: super::authorize::MAX_AUTH_TRIES

use crate::Instant;
use crate::auth::AuthError;
use crate::auth::challenge::parse_challenges;
use crate::client::{CallError, CloseReason, Event, PeerError};

use super::HttpLink;
use super::exchange::{Exchange, PendingResume, Purpose};

/// Which token a request was sent again with for a DPoP nonce: the link's
/// `auth_generation` then, or none. The mark travels with the request while it waits
/// (parked for a flow, a `GET` to reopen, the 2024-11-05 stream's next `GET`) and
/// [`NonceResent::holds`] only while that token is the one the request goes with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct NonceResent(Option<u64>);

impl NonceResent {
    /// Not sent again for a nonce.
    pub(super) const NO: NonceResent = NonceResent(None);

    /// Sent again now, with the token `link` holds.
    pub(super) fn now(link: &HttpLink) -> NonceResent {
        NonceResent(Some(link.auth_generation))
    }

    /// The mark of the exchange `x`: sent again for a nonce with the token it carried.
    pub(super) fn of(x: &Exchange) -> NonceResent {
        NonceResent(x.nonce_resent.then_some(x.generation))
    }

    /// Whether a request going with the token of `generation` was already sent again
    /// for a nonce with it.
    pub(super) fn holds(self, generation: u64) -> bool {
        self.0 == Some(generation)
    }
}

/// Whether a challenge among `values` (the `WWW-Authenticate` header values) is a `DPoP`
/// one asking for a nonce. Each value is parsed within the challenge parser's bounds.
fn asks_for_nonce<'a>(values: impl IntoIterator<Item = &'a str>) -> bool {
    values.into_iter().any(|value| {
        parse_challenges(value).is_ok_and(|challenges| {
            challenges
                .iter()
                .any(|c| c.is_scheme("DPoP") && c.param("error") == Some("use_dpop_nonce"))
        })
    })
}

impl HttpLink {
    /// The exchange `x` was refused with `401`: when the server asks for a DPoP nonce
    /// and the token held is DPoP-bound, sends the request again with it, or fails it
    /// (see the module's documentation). False when the refusal is about something
    /// else, for the authorization flow to answer.
    pub(super) fn answer_nonce_refusal(&mut self, now: Instant, x: &mut Exchange) -> bool {
        let Some(head) = x.head.as_ref() else {
            return false;
        };
        if !self.auth.as_ref().is_some_and(|a| a.is_dpop_bound())
            || !asks_for_nonce(head.header_all("www-authenticate"))
        {
            return false;
        }
        // `on_head` kept the nonce when there was one.
        let given = head
            .header("dpop-nonce")
            .is_some_and(|n| !n.trim().is_empty());
        // A message kept no copy of itself to send again only when the link has no
        // authorization to answer with (not the case here): it fails rather than waits.
        let can_resend = x.replay.is_some() || !x.purpose.is_message();
        if given && !x.nonce_resent && can_resend {
            self.send_with_nonce(now, x);
        } else {
            let error = AuthError::DpopNonceRefused {
                method: x.purpose.http_method().to_owned(),
                resent: x.nonce_resent,
            };
            self.nonce_refused(now, x, error);
        }
        true
    }

    /// Sends the request of `x` again, now, marked as sent for a nonce.
    fn send_with_nonce(&mut self, now: Instant, x: &mut Exchange) {
        match &x.purpose {
            Purpose::Request { .. } | Purpose::Notify | Purpose::Initialized => {
                let Some(replay) = x.replay.take() else {
                    // Not reached: `answer_nonce_refusal` checked it was kept.
                    return;
                };
                let mut parked = replay.into_parked();
                parked.nonce_resent = NonceResent::now(self);
                // What waited for `notifications/initialized` waits for its second
                // sending (which holds messages anew) rather than being held by it.
                let initialized = matches!(x.purpose, Purpose::Initialized);
                self.send_again(now, parked, initialized, false);
            }
            Purpose::Get { owed, attempt } => {
                let again = PendingResume {
                    due: now,
                    last_event_id: x.resume_from.clone(),
                    digest: x.resume_digest,
                    owed: owed.clone(),
                    attempt: *attempt,
                    after_refusal: x.after_refusal,
                    nonce_resent: NonceResent::now(self),
                };
                self.reopen(now, again);
            }
            Purpose::SseStream => {
                let mark = NonceResent::now(self);
                if let Some(sse) = &mut self.sse {
                    sse.nonce_resend = mark;
                }
                self.open_sse_stream(now);
            }
            Purpose::Delete { version } => self.write_delete_marked(*version, true),
        }
    }

    /// The request of `x` fails with `error`: a call's with it, a resumption's calls
    /// too; the 2024-11-05 transport's stream closes the connection with it; anything
    /// else is reported as a [`PeerError::Authorization`].
    fn nonce_refused(&mut self, now: Instant, x: &Exchange, error: AuthError) {
        match &x.purpose {
            Purpose::Request { .. } => {
                if let Some(rpc) = x.rpc_id {
                    self.client
                        .fail_request(rpc, CallError::Authorization(error));
                }
            }
            Purpose::Initialized => {
                self.events
                    .push_back(Event::PeerError(PeerError::InitializedRefused {
                        status: Some(401),
                        detail: error.to_string(),
                    }));
                self.release_held(now);
            }
            Purpose::Get { owed, .. } if !owed.is_empty() => {
                for &rpc in owed {
                    if self.client.is_awaiting(rpc) {
                        self.client
                            .fail_request(rpc, CallError::Authorization(error.clone()));
                    }
                }
            }
            Purpose::SseStream => {
                if let Some(sse) = &mut self.sse {
                    sse.waiting.clear();
                    sse.deadline = None;
                }
                self.client.close_with(CloseReason::Authorization(error));
            }
            purpose => {
                if matches!(purpose, Purpose::Get { .. }) {
                    // The session's own stream: not listened to any more.
                    self.get_stream = super::GetStream::Unavailable;
                }
                self.events
                    .push_back(Event::PeerError(PeerError::Authorization(error)));
            }
        }
    }
}
