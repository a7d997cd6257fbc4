//! The authorization flow under the HTTP link: a request refused with `401` (or `403
//! insufficient_scope`) is parked, not failed, while the [`Authorizer`] runs; the flow's
//! own requests go out on one-shot connections ([`super::side`]); when it succeeds the
//! parked requests are sent again with the new token, in order, and when it fails the
//! refused ones fail with its error (those that only waited go out with the token the
//! client still holds, after a failed step-up; with none left, they fail too).
//!
//! A refused request never ran (the server authenticates before it executes), so
//! sending it again after authorizing cannot run it twice. Each request is sent at most
//! [`MAX_AUTH_TRIES`] times more; the flow bounds its own step-ups. While a flow runs,
//! new requests wait with the parked ones rather than meet the same refusal. A refusal
//! that comes back for a request sent with a token the client has replaced since (it
//! was on its way while a refresh ended) is about that old token: the request is sent
//! again with the new one, and no flow starts. A request about to go with a token known
//! to be expired waits the same way for the refresh it starts
//! ([`Authorizer::refresh_before_request`]), and goes once, with the new token: every
//! request to the MCP server, a message's `POST`, the session's `GET` stream, a `GET`
//! resuming a stream after `Last-Event-ID`, the 2024-11-05 transport's stream `GET`,
//! and the `DELETE` that ends a session.
//!
//! A refused `notifications/initialized` of a legacy session takes the messages it held
//! with it: they wait behind it for the flow and go once it is accepted (or refused
//! again, reported as [`PeerError::InitializedRefused`]); when the flow fails they fail
//! with it, or go with the token still held, as the other messages that waited.
//!
//! A `401` that asks a DPoP-bound request for the server's nonce refuses no token and
//! starts no flow: [`super::nonce`] sends the request again with it.

use std::sync::Arc;

use crate::Instant;
use crate::auth::{AuthError, AuthEvent, AuthRequest, Authorizer};
use crate::client::session::{OutKind, Outgoing};
use crate::client::{CallError, Event, PeerError};

use super::HttpLink;
use super::exchange::{Exchange, Purpose};
use super::nonce::NonceResent;
use super::side::SideOutcome;

/// Times one message may be sent again after an authorization: the first one, and two
/// step-ups.
pub(super) const MAX_AUTH_TRIES: u8 = 3;

/// The notification that holds the legacy session's later messages until accepted.
const INITIALIZED: &str = "notifications/initialized";

/// A message waiting to be sent again (for an authorization to end, or out a server's
/// `Retry-After`), with the times it was refused for want of authorization (`tries`)
/// and turned away by a busy server so far.
#[derive(Debug)]
pub(super) struct Parked {
    pub(super) msg: Outgoing,
    pub(super) tries: u8,
    pub(super) turned_away: u8,
    /// The token it was sent again with for a DPoP nonce, if any; see
    /// [`NonceResent`].
    pub(super) nonce_resent: NonceResent,
    /// The status of the refusal that parked it for the flow that runs (`401`, or `403`
    /// asking for more scope); `None` when it only waits for that flow (started by
    /// another request, or by the refresh of a token known to be expired), or for a
    /// busy server. What is reported when the flow fails.
    pub(super) refused: Option<u16>,
}

/// A request's message kept with its exchange until the response's head shows whether
/// it must be sent again: a refusal for want of authorization, a busy server. The body
/// is the one the pool sends, shared.
#[derive(Debug)]
pub(super) struct Replay {
    pub(super) json: Arc<Vec<u8>>,
    pub(super) kind: OutKind,
    pub(super) tries: u8,
    pub(super) turned_away: u8,
    pub(super) nonce_resent: NonceResent,
    /// The link's `auth_generation` when it was written: which `Authorization` it carried.
    pub(super) generation: u64,
}

impl Replay {
    pub(super) fn into_parked(self) -> Parked {
        Parked {
            msg: Outgoing {
                // The pool let go of its share once the response began: no copy then.
                json: Arc::unwrap_or_clone(self.json),
                kind: self.kind,
            },
            tries: self.tries,
            turned_away: self.turned_away,
            nonce_resent: self.nonce_resent,
            refused: None,
        }
    }
}

impl HttpLink {
    /// Whether new messages must wait: a flow is running.
    pub(super) fn auth_busy(&self) -> bool {
        self.auth.as_ref().is_some_and(Authorizer::is_busy)
    }

    /// Before any request to the MCP server goes out at `now` (a message's `POST`, a
    /// `GET` stream, a resumption): `None` when it goes now; `Some(started)` when it
    /// must wait for the flow, which either runs already or, `started`, is the refresh
    /// of a token known to be expired that begins for it
    /// ([`Authorizer::refresh_before_request`]). The caller keeps the request where
    /// the flow's end finds it, then, when `started`, runs the flow
    /// ([`HttpLink::drive_auth`], which may end it at once).
    pub(super) fn auth_wait(&mut self, now: Instant) -> Option<bool> {
        let started = self
            .auth
            .as_mut()
            .is_some_and(|a| a.refresh_before_request(now));
        (started || self.auth_busy()).then_some(started)
    }

    /// The exchange `x` was refused with `status`: parks its message and starts (or
    /// joins) a flow. False when authorization cannot help (not configured, a `403`
    /// that is not about scope, a message refused too often): the failure stands.
    pub(super) fn intercept_refusal(
        &mut self,
        now: Instant,
        x: &mut Exchange,
        status: u16,
    ) -> bool {
        let Some(auth) = &mut self.auth else {
            return false;
        };
        let Some(replay) = x.replay.take() else {
            return false;
        };
        // Sent with a token the client has replaced since (a refresh or an approval
        // ended while it was on its way): the refusal is about that old token.
        let superseded = replay.generation != self.auth_generation;
        let initialized = matches!(x.purpose, Purpose::Initialized);
        let parked = replay.into_parked();
        if parked.tries >= MAX_AUTH_TRIES {
            return false;
        }
        let challenges: Vec<&str> = x
            .head
            .as_ref()
            .map(|h| h.header_all("www-authenticate").collect())
            .unwrap_or_default();
        if superseded {
            // The token that replaced it answers the refusal, not another flow: that
            // would drop the new token, and without a refresh token ask the person again.
            // Sent again now, or once the flow that is running ends (only waiting for
            // it: not refused with what the client holds).
            let parked = Parked {
                tries: parked.tries + 1,
                ..parked
            };
            self.send_again(now, parked, initialized, false);
            return true;
        }
        if status == 401 && parked.tries > 0 {
            // Sent again after an authorization and refused again: the server does not
            // take what the flow obtained; no loop.
            return false;
        }
        let started = match status {
            401 => {
                auth.handle_unauthorized(now, challenges);
                true
            }
            _ => auth.handle_insufficient_scope(now, challenges),
        };
        if !started {
            return false;
        }
        // Sent again after the flow, with the token it obtains: a DPoP nonce may
        // refuse it once more (see `NonceResent`).
        let parked = Parked {
            tries: parked.tries + 1,
            refused: Some(status),
            ..parked
        };
        self.send_again(now, parked, initialized, true);
        // The server answered: connecting now waits on the flow, within its own
        // deadline rather than the probe's short window.
        self.client.handshake_waits_on_authorization();
        self.drive_auth(now);
        true
    }

    /// Puts a refused message back on its way: sent now, or (`after_flow`) parked for
    /// the flow to end. When it is `notifications/initialized` (`initialized`), what it
    /// held goes after it, held anew by its next sending or parked behind it, and not
    /// ahead of it: queued in front, it would wait for itself, and everything with it.
    pub(super) fn send_again(
        &mut self,
        now: Instant,
        parked: Parked,
        initialized: bool,
        after_flow: bool,
    ) {
        let held = if initialized { self.held.take() } else { None };
        if after_flow {
            self.parked.push_back(parked);
        } else {
            self.send_parked(now, parked);
        }
        let Some(mut held) = held else {
            return;
        };
        if !after_flow && let Some(anew) = &mut self.held {
            // Sent: they wait for its answer again.
            held.append(anew);
            *anew = held;
            return;
        }
        let behind = held.into_iter().map(|msg| Parked {
            msg,
            tries: 0,
            turned_away: 0,
            nonce_resent: NonceResent::NO,
            refused: None,
        });
        if after_flow {
            self.parked.extend(behind);
        } else {
            // Not sent (it waits for a flow, or could not be written): they go as they
            // would have, behind it.
            for p in behind {
                self.send_parked(now, p);
            }
        }
    }

    /// Runs what the flow produced: its requests onto one-shot connections, its events
    /// into the link's.
    pub(super) fn drive_auth(&mut self, now: Instant) {
        loop {
            let Some(auth) = &mut self.auth else {
                return;
            };
            let requests: Vec<AuthRequest> = std::iter::from_fn(|| auth.poll_request()).collect();
            let events: Vec<AuthEvent> = std::iter::from_fn(|| auth.poll_event()).collect();
            if requests.is_empty() && events.is_empty() {
                return;
            }
            for request in requests {
                let conn = self.pool.alloc_conn();
                let max = self.auth_max_body;
                if let Some(outcome) = self.side.start(conn, request, &self.config.user_agent, max)
                {
                    self.side_outcome(now, outcome);
                }
            }
            for event in events {
                self.auth_event(now, event);
            }
        }
    }

    pub(super) fn side_outcome(&mut self, now: Instant, outcome: SideOutcome) {
        let Some(auth) = &mut self.auth else {
            return;
        };
        match outcome {
            SideOutcome::Response(id, response) => auth.handle_response(now, id, response),
            SideOutcome::Failed(id, detail) => auth.handle_request_failed(now, id, &detail),
        }
        self.drive_auth(now);
    }

    fn auth_event(&mut self, now: Instant, event: AuthEvent) {
        match event {
            AuthEvent::OpenUrl(_) if self.closing => {
                // Only the closing `DELETE` waits (its refresh was refused): nobody is
                // asked to approve for a connection being closed. It goes with the
                // token held.
                if let Some(auth) = &mut self.auth {
                    auth.abandon(now, "the connection is closing");
                }
            }
            AuthEvent::OpenUrl(url) => {
                self.client.pause_for_approval(now);
                self.events.push_back(Event::AuthorizationRequested { url });
            }
            AuthEvent::CredentialsChanged(c) => {
                self.events.push_back(Event::CredentialsChanged(c));
            }
            AuthEvent::Authorized => {
                self.client.resume_after_approval(now);
                let value = self.auth.as_ref().and_then(Authorizer::authorization);
                // A token the flow obtained is a new start even when the server gave the
                // same value again: the flow was bounded on its own, and a request sent
                // again for a nonce before it may be so once more (see `NonceResent`).
                if self.config.authorization == value {
                    self.auth_generation = self.auth_generation.wrapping_add(1);
                }
                self.set_authorization(value);
                // The flow's token from now on: never the configured header again.
                self.static_authorization = false;
                for parked in std::mem::take(&mut self.parked) {
                    self.send_parked(now, parked);
                }
                for get in std::mem::take(&mut self.waiting_gets) {
                    self.reopen(now, get);
                }
                if let Some(version) = self.waiting_delete.take() {
                    self.send_delete(version);
                }
                self.sse_stream_after_auth(now, Ok(()));
            }
            AuthEvent::Failed(e) => {
                self.client.resume_after_approval(now);
                self.fail_parked(now, &e);
            }
        }
    }

    /// The flow failed: the messages refused for want of authorization fail with its
    /// error, reported with the status that refused them. Those that only waited for
    /// it go out when the flow left a token to send (a step-up that failed keeps the
    /// one it started with), and fail too when it did not, reported without a status
    /// (no response refused them).
    fn fail_parked(&mut self, now: Instant, e: &AuthError) {
        let usable = self
            .auth
            .as_ref()
            .and_then(Authorizer::authorization)
            .is_some();
        for parked in std::mem::take(&mut self.parked) {
            if usable && parked.refused.is_none() {
                self.send_parked(now, parked);
                continue;
            }
            match parked.msg.kind {
                OutKind::Request(rpc) => {
                    self.client
                        .fail_request(rpc, CallError::Authorization(e.clone()));
                }
                OutKind::Notification(INITIALIZED) => {
                    // Reported as after any refusal of it; what it held is parked
                    // behind it and goes (or fails) as the messages that waited.
                    self.events
                        .push_back(Event::PeerError(PeerError::InitializedRefused {
                            status: parked.refused,
                            detail: format!("authorization failed: {e}"),
                        }));
                    if usable {
                        self.open_session_stream(now);
                    }
                }
                OutKind::Notification(_) | OutKind::Cancel(_) | OutKind::Response => {
                    self.events
                        .push_back(Event::PeerError(PeerError::MessageRefused {
                            status: parked.refused,
                            detail: format!("authorization failed: {e}"),
                        }));
                }
            }
        }
        for get in std::mem::take(&mut self.waiting_gets) {
            self.get_after_failed_auth(now, get, usable, e);
        }
        self.sse_stream_after_auth(now, Err((e, usable)));
        // The session still ends at the server when it takes what the client holds.
        if let Some(version) = self.waiting_delete.take() {
            self.write_delete(version);
        }
    }

    /// The browser came back: see [`crate::client::Client::handle_authorization_callback`].
    pub(crate) fn handle_authorization_callback(
        &mut self,
        now: Instant,
        url: &str,
    ) -> Result<(), AuthError> {
        self.now = now;
        let result = match &mut self.auth {
            Some(auth) => auth.handle_callback(now, url),
            None => Err(AuthError::NotWaiting),
        };
        self.drive_auth(now);
        self.pump(now);
        result
    }

    /// See [`crate::client::Client::abandon_authorization`].
    pub(crate) fn abandon_authorization(&mut self, now: Instant, reason: &str) {
        self.now = now;
        if let Some(auth) = &mut self.auth {
            auth.abandon(now, reason);
            self.side.retain(|id| auth.wants_response(id));
        }
        self.drive_auth(now);
        self.pump(now);
    }

    /// Times out the flow's requests and approval, closing connections it gave up.
    pub(super) fn auth_timeout(&mut self, now: Instant) {
        // Not while a person approves: the deadlines are held then, and move on by the
        // time it took once the flow ends.
        let handshake_due = !self.client.paused_for_approval()
            && self.client.handshake_deadline().is_some_and(|d| d <= now);
        // (Its deadline is the connect deadline while the flow runs.)
        if let Some(auth) = &mut self.auth {
            auth.handle_timeout(now);
            if handshake_due {
                // Connecting waits on the flow: its failure names the request that hung
                // (the handshake's own message would blame the server's silence).
                auth.handle_deadline_passed(now);
            }
            self.side.retain(|id| auth.wants_response(id));
            self.drive_auth(now);
        }
    }
}
