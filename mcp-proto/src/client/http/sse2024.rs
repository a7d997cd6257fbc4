//! The 2024-11-05 HTTP+SSE transport, reached by the spec's backwards-compatible
//! detection.
//!
//! # Theory of operation
//!
//! A client that accepts the pre-2025-06 versions
//! ([`ClientConfig::accept_pre_2025_06_versions`](crate::client::ClientConfig::accept_pre_2025_06_versions))
//! POSTs `initialize` to the URL as usual. A `400`, `404` or `405` whose body is not a
//! recognised 2026 error says the URL does not speak Streamable HTTP; the link then
//! switches to the old transport for the rest of the connection (decision 35):
//!
//! 1. a GET on the same URL (`Accept: text/event-stream`) opens the server's stream, a
//!    long-lived exchange on a connection of its own; with OAuth configured it follows
//!    the rule of every request (decision 203): it waits for the refresh of a token
//!    known to be expired, and a `401` (or a `403` with `insufficient_scope`) to it
//!    runs the flow (a refresh, an authorization, a step-up) and sends it again with
//!    the new token (at most `MAX_AUTH_TRIES` times); refused again with a token a flow
//!    obtained, or a flow that fails, ends the connection;
//! 2. its first event must be `endpoint`, whose data is the URL to POST to (relative
//!    ones resolved against the server URL). It is refused, with a typed
//!    [`HttpSseError`] ending the connection, when it is longer than
//!    [`MAX_ENDPOINT_BYTES`], not a URL, or on another origin; when a message comes
//!    first; or when none comes before the handshake's deadline;
//! 3. the `initialize` that drew the 4xx is sent again (it never ran), now to the
//!    endpoint, and so is every later message: a `2xx` answers the POST (its body is
//!    ignored), and every response, notification and server request arrives on the GET
//!    stream, matched to its call by id as on stdio;
//! 4. the session lives as long as its stream: when the stream ends or breaks the
//!    connection closes with [`HttpSseError::StreamLost`], failing every call in flight
//!    (the requests were delivered and may have run, so none is sent again);
//! 5. [`Client::close`](crate::client::Client::close) drops the stream (there is no
//!    `DELETE` in this transport).
//!
//! Without the opt-in, the 4xx to `initialize` fails the connection as before, and its
//! [`HttpFailure`](crate::client::HttpFailure) detail says that the server may speak the
//! old transport and names the opt-in.

use std::collections::VecDeque;

use crate::Instant;
use crate::auth::AuthError;

use super::HttpLink;
use super::exchange::Purpose;
use crate::client::event::clipped;
use crate::client::session::Outgoing;
use crate::client::{CloseReason, HttpFailure};
use crate::http::EndpointUrl;
use crate::jsonrpc::{Response, codes};
use crate::sse::SseEvent;
use crate::version::ProtocolVersion;

/// Longest `endpoint` event data accepted, in bytes.
pub const MAX_ENDPOINT_BYTES: usize = 4096;

/// What went wrong on the 2024-11-05 HTTP+SSE transport. Each one ends the connection
/// ([`CloseReason::HttpSse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpSseError {
    /// The GET for the event stream did not open one: a failure status, another content
    /// type, or no response.
    #[error(
        "the HTTP+SSE event stream did not open{}: {detail}",
        .status.map(|s| format!(" (HTTP {s})")).unwrap_or_default()
    )]
    StreamRefused {
        /// The status, when a response arrived.
        status: Option<u16>,
        /// What happened, for people.
        detail: String,
    },
    /// No `endpoint` event before the handshake's deadline.
    #[error("the HTTP+SSE event stream sent no endpoint event within {0:?}")]
    NoEndpoint(std::time::Duration),
    /// A message came on the stream before the `endpoint` event.
    #[error("the HTTP+SSE event stream sent a {event_type:?} event before the endpoint event")]
    MessageBeforeEndpoint {
        /// The event's type.
        event_type: String,
    },
    /// The `endpoint` event's data is longer than [`MAX_ENDPOINT_BYTES`].
    #[error("the HTTP+SSE endpoint is longer than {limit} bytes")]
    EndpointTooLong {
        /// The limit in force.
        limit: usize,
    },
    /// The `endpoint` event's data is not a usable URL.
    #[error("the HTTP+SSE endpoint {endpoint:?} is not a usable URL: {reason}")]
    EndpointInvalid {
        /// The data, cut to [`crate::client::MAX_ECHO_BYTES`].
        endpoint: String,
        /// Why, for people.
        reason: String,
    },
    /// The endpoint is on another origin than the server URL: messages are never sent
    /// there.
    #[error("the HTTP+SSE endpoint {endpoint:?} is not on the server's origin {origin}")]
    EndpointCrossOrigin {
        /// The endpoint as resolved, cut to [`crate::client::MAX_ECHO_BYTES`].
        endpoint: String,
        /// The server URL's origin.
        origin: String,
    },
    /// The stream ended or broke. Requests already sent may have run; none is sent again.
    #[error(
        "the HTTP+SSE event stream was lost ({detail}); requests in flight may have run and are not sent again"
    )]
    StreamLost {
        /// How it ended, for people.
        detail: String,
    },
}

/// The link's state on the old transport.
#[derive(Debug)]
pub(super) struct HttpSse {
    /// The POST endpoint, once the `endpoint` event named it.
    pub(super) endpoint: Option<EndpointUrl>,
    /// Until then: when waiting for it ends, and the messages waiting.
    pub(super) deadline: Option<Instant>,
    pub(super) waited_since: Instant,
    pub(super) waiting: VecDeque<Outgoing>,
    /// The stream's `GET` waits for the authorization flow (the refresh of a token known
    /// to be expired, a flow already running, or the one its refusal started) before it
    /// goes.
    pub(super) awaits_authorization: bool,
    /// Times the stream's `GET` was refused for want of authorization (`401`, or `403`
    /// with `insufficient_scope`) and sent again, after the flow the refusal started or
    /// with the token that replaced the one it carried: at most
    /// [`MAX_AUTH_TRIES`](super::authorize::MAX_AUTH_TRIES), as a message; a `401` to the
    /// token a flow obtained fails the connection.
    pub(super) tries: u8,
    /// The token the stream's `GET` was sent again with for a DPoP nonce, if any
    /// ([`super::nonce::NonceResent`]).
    pub(super) nonce_resend: super::nonce::NonceResent,
}

/// Resolves the `endpoint` event's data against the server URL and checks it stays on
/// the same origin.
///
/// # Errors
///
/// [`HttpSseError::EndpointTooLong`], [`HttpSseError::EndpointInvalid`] or
/// [`HttpSseError::EndpointCrossOrigin`].
pub(crate) fn resolve_endpoint(
    base: &EndpointUrl,
    data: &str,
) -> Result<EndpointUrl, HttpSseError> {
    if data.len() > MAX_ENDPOINT_BYTES {
        return Err(HttpSseError::EndpointTooLong {
            limit: MAX_ENDPOINT_BYTES,
        });
    }
    let invalid = |reason: &str| HttpSseError::EndpointInvalid {
        endpoint: clipped(data).into_owned(),
        reason: reason.to_owned(),
    };
    let reference = data.trim_matches([' ', '\t', '\r', '\n']);
    // A fragment is never sent.
    let reference = reference.split('#').next().unwrap_or("");
    if reference.is_empty() {
        return Err(invalid("empty"));
    }
    let absolute = if let Some(rest) = reference.strip_prefix("//") {
        format!("{}://{rest}", base.scheme().as_str())
    } else if has_scheme(reference) {
        reference.to_owned()
    } else {
        let (path, query) = match reference.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (reference, None),
        };
        let path = if path.is_empty() {
            base.path().to_owned()
        } else if path.starts_with('/') {
            path.to_owned()
        } else {
            let dir = &base.path()[..base.path().rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{path}")
        };
        let path = remove_dot_segments(&path);
        let origin = base.origin();
        // A reference without a query keeps none of the base's (RFC 3986 §5.2.2).
        match query {
            Some(q) => format!("{origin}{path}?{q}"),
            None => format!("{origin}{path}"),
        }
    };
    // Plain http is allowed here: the origin check below keeps it on the (vetted) server.
    let url = EndpointUrl::parse(&absolute, true).map_err(|e| invalid(&e.to_string()))?;
    if url.origin() != base.origin() {
        return Err(HttpSseError::EndpointCrossOrigin {
            endpoint: clipped(&absolute).into_owned(),
            origin: base.origin().to_owned(),
        });
    }
    Ok(url)
}

/// Whether `reference` starts with `scheme:` (RFC 3986 §3.1) before any `/`, `?`.
fn has_scheme(reference: &str) -> bool {
    let Some(colon) = reference.find(':') else {
        return false;
    };
    let scheme = &reference[..colon];
    !scheme.contains(['/', '?'])
        && scheme
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
}

/// RFC 3986 §5.2.4 on an absolute path.
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    let mut trailing_slash = false;
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => trailing_slash = i == last,
            ".." => {
                out.pop();
                trailing_slash = i == last;
            }
            s => {
                out.push(s);
                trailing_slash = false;
            }
        }
    }
    let mut joined = format!("/{}", out.join("/"));
    if trailing_slash && !joined.ends_with('/') {
        joined.push('/');
    }
    joined
}

impl HttpLink {
    /// `initialize` drew `status` (with `response` as its body): when the old transport
    /// should be tried, starts it and returns true. Otherwise, for a status that would
    /// have started it with the opt-in, adds a hint to `failure`.
    pub(super) fn try_http_sse(
        &mut self,
        now: Instant,
        rpc: i64,
        status: Option<u16>,
        response: Option<&Response>,
        failure: &mut HttpFailure,
    ) -> bool {
        let is_initialize = self
            .client
            .request_info(rpc)
            .is_some_and(|(method, params)| method == "initialize" && params.is_none());
        let modern_error = response
            .and_then(|r| r.outcome.as_ref().err())
            .is_some_and(|e| codes::is_modern_request_error(e.code));
        if self.sse.is_some()
            || !is_initialize
            || modern_error
            || !matches!(status, Some(400 | 404 | 405))
        {
            return false;
        }
        if !self
            .client
            .config()
            .versions
            .accepts(ProtocolVersion::V2024_11_05)
        {
            if !failure.detail.is_empty() {
                failure.detail.push_str("; ");
            }
            failure.detail.push_str(
                "the server may speak the 2024-11-05 HTTP+SSE transport, which is tried only \
                 when old versions are accepted (ClientConfig::accept_pre_2025_06_versions)",
            );
            return false;
        }
        if !self.client.restart_initialize(now) {
            return false;
        }
        self.sse = Some(HttpSse {
            endpoint: None,
            deadline: self.client.handshake_deadline(),
            waited_since: now,
            waiting: VecDeque::new(),
            awaits_authorization: false,
            tries: 0,
            nonce_resend: super::nonce::NonceResent::NO,
        });
        self.open_sse_stream(now);
        true
    }

    /// The GET that opens the old transport's stream. As every request to the MCP
    /// server, it waits for a refresh when the token is known to be expired (or for the
    /// flow that runs) and goes when it ends, with the new token
    /// ([`HttpLink::sse_stream_after_auth`]).
    pub(super) fn open_sse_stream(&mut self, now: Instant) {
        if let Some(refreshing) = self.auth_wait(now) {
            if let Some(sse) = &mut self.sse {
                sse.awaits_authorization = true;
            }
            if refreshing {
                self.client.handshake_waits_on_authorization();
                self.drive_auth(now);
            }
            return;
        }
        let handshake = self.client.handshake_deadline();
        let (after_refusal, nonce_resent) = match &mut self.sse {
            Some(sse) => {
                // Waiting for the endpoint keeps the handshake's deadline, which moved
                // on by the time a person took to approve.
                if sse.endpoint.is_none() && handshake.is_some() {
                    sse.deadline = handshake;
                }
                (sse.tries > 0, std::mem::take(&mut sse.nonce_resend))
            }
            None => (false, super::nonce::NonceResent::NO),
        };
        let url = self.config.url.clone();
        let mut bytes = Vec::new();
        let managed = super::outgoing::auth_headers(&mut self.auth, self.now, "GET", &url);
        let accept = "text/event-stream";
        if let Err(e) = self.write_head(&managed, "GET", accept, &url, |_| {}, None, &mut bytes) {
            self.sse_fail(HttpSseError::StreamRefused {
                status: None,
                detail: e.to_string(),
            });
            return;
        }
        let mut x = self.new_exchange(Purpose::SseStream, None, "GET");
        x.after_refusal = after_refusal;
        x.nonce_resent = nonce_resent.holds(self.auth_generation);
        let id = self.alloc_exchange();
        self.insert_exchange(id, x, (bytes, std::sync::Arc::default()));
    }

    /// The flow the stream's `GET` waited for ended: `Ok` with a token, or `Err` with
    /// the flow's error and whether a token is still held. The `GET` goes (with what is
    /// held), or the connection fails with the flow's error: with nothing to send, or
    /// when the `GET` was refused (the token held is the one it was refused with).
    pub(super) fn sse_stream_after_auth(
        &mut self,
        now: Instant,
        outcome: Result<(), (&AuthError, bool)>,
    ) {
        let Some(sse) = &mut self.sse else {
            return;
        };
        if !std::mem::take(&mut sse.awaits_authorization) || self.closing {
            return;
        }
        // A `GET` that was refused goes again only with what the flow obtained: after a
        // failed step-up the token it was refused with would be refused again.
        let refused = sse.tries > 0;
        match outcome {
            Ok(()) => self.open_sse_stream(now),
            Err((_, true)) if !refused => self.open_sse_stream(now),
            Err((e, _)) => self.sse_refused(None, format!("authorization failed: {e}")),
        }
    }

    /// The stream's `GET` `x` was refused with `status` (`401`, `403`): as the session's
    /// `GET` of Streamable HTTP, a `401` starts the refresh or the authorization flow (or
    /// joins the one running) and a `403` with `insufficient_scope` a step-up, and the
    /// `GET` waits for it, then goes with the new token; one sent with a token
    /// replaced since goes again with the new one and starts nothing. False, and the
    /// refusal ends the connection, without authorization, for another `403`, for a
    /// `401` to a `GET` already sent again after a refusal (the server takes no token the
    /// client obtains: no loop), or once sent again
    /// [`MAX_AUTH_TRIES`](super::authorize::MAX_AUTH_TRIES) times (the authorizer's
    /// `max_step_ups` bounds the step-ups too).
    pub(super) fn sse_stream_refused(
        &mut self,
        now: Instant,
        x: &super::exchange::Exchange,
        status: u16,
    ) -> bool {
        let Some(auth) = &mut self.auth else {
            return false;
        };
        let Some(sse) = &mut self.sse else {
            return false;
        };
        if sse.tries >= super::authorize::MAX_AUTH_TRIES || self.closing {
            return false;
        }
        let Some(challenges) = x.answerable_challenges(status) else {
            return false;
        };
        let current = x.generation == self.auth_generation;
        if current {
            if status == 401 && sse.tries > 0 {
                return false;
            }
            let started = if status == 401 {
                auth.handle_unauthorized(now, challenges);
                true
            } else {
                auth.handle_insufficient_scope(now, challenges)
            };
            if !started {
                return false;
            }
        }
        sse.tries += 1;
        // A nonce resend goes with it: it counts only while the `GET` goes with the token
        // it was made with, not with one a flow obtains (see `NonceResent`).
        sse.nonce_resend = super::nonce::NonceResent::of(x);
        // Refused with the current token: the `GET` goes when the flow ends, with what it
        // obtained ([`HttpLink::sse_stream_after_auth`]); a step-up that could not start
        // (the scope is not grantable, the step-ups are spent) fails the connection
        // there with its own error, instead of the refused token being sent again.
        // Refused with a token replaced since: it goes now, with the new one.
        sse.awaits_authorization = current;
        // The server answered: connecting waits on the flow, within its own deadline.
        self.client.handshake_waits_on_authorization();
        if !current {
            self.open_sse_stream(now);
        }
        self.drive_auth(now);
        true
    }

    /// Whether messages wait for the endpoint: then `msg` joins them.
    pub(super) fn hold_for_endpoint(&mut self, msg: Outgoing) -> Option<Outgoing> {
        match &mut self.sse {
            Some(sse) if sse.endpoint.is_none() => {
                sse.waiting.push_back(msg);
                None
            }
            _ => Some(msg),
        }
    }

    /// Whether the link runs the old transport (a 2xx to a POST carries no answer).
    pub(super) fn on_http_sse(&self) -> bool {
        self.sse.is_some()
    }

    /// The endpoint, once known.
    pub(crate) fn http_sse_endpoint(&self) -> Option<&EndpointUrl> {
        self.sse.as_ref().and_then(|s| s.endpoint.as_ref())
    }

    /// One event of the old transport's stream.
    pub(super) fn sse_event(&mut self, now: Instant, ev: SseEvent) {
        let Some(sse) = &mut self.sse else {
            return;
        };
        let known = sse.endpoint.is_some();
        match (ev.event_type.as_str(), known) {
            ("endpoint", false) => match resolve_endpoint(&self.config.url, &ev.data) {
                Ok(url) => {
                    sse.endpoint = Some(url);
                    sse.deadline = None;
                    let waiting = std::mem::take(&mut sse.waiting);
                    for msg in waiting {
                        self.send_message(now, msg);
                    }
                }
                Err(e) => self.sse_fail(e),
            },
            // A second endpoint event: the first one holds (decision 35).
            ("endpoint", true) => {}
            (other, false) => {
                let event_type = clipped(other).into_owned();
                self.sse_fail(HttpSseError::MessageBeforeEndpoint { event_type });
            }
            ("message", true) if !ev.data.is_empty() => {
                let _ = self.deliver(now, ev.data.as_bytes());
            }
            // Other event types are not this transport's: ignored.
            _ => {}
        }
    }

    /// The stream's GET failed before it opened.
    pub(super) fn sse_refused(&mut self, status: Option<u16>, detail: String) {
        self.sse_fail(HttpSseError::StreamRefused { status, detail });
    }

    /// The stream ended or broke after it opened.
    pub(super) fn sse_lost(&mut self, detail: String) {
        self.sse_fail(HttpSseError::StreamLost { detail });
    }

    /// Ends the connection: calls fail with the reason, connections close.
    fn sse_fail(&mut self, error: HttpSseError) {
        if let Some(sse) = &mut self.sse {
            sse.waiting.clear();
            sse.deadline = None;
        }
        self.client.close_with(CloseReason::HttpSse(error));
    }

    /// The endpoint did not come in time.
    pub(super) fn sse_timeout(&mut self, now: Instant) {
        let Some(sse) = &self.sse else {
            return;
        };
        if self.sse_deadline().is_some_and(|d| d <= now) {
            let waited = now.saturating_duration_since(sse.waited_since);
            self.sse_fail(HttpSseError::NoEndpoint(waited));
        }
    }

    /// When waiting for the endpoint ends (nothing waits once the link closes). Not
    /// while the stream's `GET` waits for an authorization flow: a person approving
    /// holds the handshake's deadline, the flow has its own bounds, and the `GET` takes
    /// the handshake's deadline as it stands when it goes.
    pub(super) fn sse_deadline(&self) -> Option<Instant> {
        self.sse
            .as_ref()
            .filter(|s| !s.awaits_authorization)
            .and_then(|s| s.deadline)
            .filter(|_| !self.closing)
    }

    /// Bytes held for messages waiting for the endpoint.
    pub(super) fn sse_retained_bytes(&self) -> usize {
        self.sse
            .as_ref()
            .map_or(0, |s| s.waiting.iter().map(|m| m.json.len()).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> EndpointUrl {
        EndpointUrl::parse("http://127.0.0.1:3001/sse", false).unwrap()
    }

    fn resolved(data: &str) -> String {
        let url = resolve_endpoint(&base(), data).unwrap();
        format!("{}{}", url.origin(), url.target())
    }

    #[test]
    fn relative_endpoints_resolve_against_the_server_url() {
        assert_eq!(
            resolved("/message?sessionId=abc"),
            "http://127.0.0.1:3001/message?sessionId=abc"
        );
        assert_eq!(
            resolved("messages?x=1"),
            "http://127.0.0.1:3001/messages?x=1"
        );
        assert_eq!(resolved("?s=1"), "http://127.0.0.1:3001/sse?s=1");
        assert_eq!(resolved("//127.0.0.1:3001/m"), "http://127.0.0.1:3001/m");
        assert_eq!(resolved("/a/../b/./c"), "http://127.0.0.1:3001/b/c");
        assert_eq!(
            resolved("http://127.0.0.1:3001/m?s=1"),
            "http://127.0.0.1:3001/m?s=1"
        );
        assert_eq!(resolved("a/b/../../m"), "http://127.0.0.1:3001/m");
        assert_eq!(resolved(" /m#frag\r\n"), "http://127.0.0.1:3001/m");
        let nested = EndpointUrl::parse("http://127.0.0.1:3001/mcp/sse", false).unwrap();
        let url = resolve_endpoint(&nested, "message?id=1").unwrap();
        assert_eq!(url.target(), "/mcp/message?id=1");
    }

    #[test]
    fn other_origins_and_bad_urls_are_refused() {
        for data in [
            "http://127.0.0.1:3002/message",
            "https://127.0.0.1:3001/message",
            "//evil.example/message",
            "http://evil.example/message",
        ] {
            assert!(
                matches!(
                    resolve_endpoint(&base(), data),
                    Err(HttpSseError::EndpointCrossOrigin { .. })
                ),
                "{data}"
            );
        }
        for data in ["", "   ", "/a b", "ftp://127.0.0.1:3001/x", "/\u{e9}"] {
            assert!(
                matches!(
                    resolve_endpoint(&base(), data),
                    Err(HttpSseError::EndpointInvalid { .. })
                ),
                "{data:?}"
            );
        }
        let long = format!("/{}", "a".repeat(MAX_ENDPOINT_BYTES));
        assert_eq!(
            resolve_endpoint(&base(), &long),
            Err(HttpSseError::EndpointTooLong {
                limit: MAX_ENDPOINT_BYTES
            })
        );
    }
}
