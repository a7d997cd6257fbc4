//! The authorization flow as a machine.
//!
//! # Theory of operation
//!
//! An [`Authorizer`] holds what one MCP client knows about authorizing to one MCP server:
//! the protected resource metadata, the authorization server's metadata, the client's
//! registration there, and the tokens. It is idle until the MCP machine reports a
//! refusal: [`Authorizer::handle_unauthorized`] for a `401`,
//! [`Authorizer::handle_insufficient_scope`] for a `403` whose challenge says
//! `insufficient_scope`; or, before a request, [`Authorizer::refresh_before_request`]
//! finds the token known to be expired and a refresh token to renew it with. A flow
//! then runs to one end, [`AuthEvent::Authorized`] or [`AuthEvent::Failed`]:
//!
//! ```text
//!  401/403 ─▶ resource metadata ─▶ server metadata ─┬─▶ refresh ─────────────────────┐
//!             (header URL, or the    (RFC 8414 and  ├─▶ client_credentials / JWT ───┤
//!              well-known paths)      OpenID paths) └─▶ client identity ─▶ approval ─▶ code ─▶ tokens
//!                                                        (stored, CIMD,    (OpenUrl,
//!                                                         DCR)              callback)
//! ```
//!
//! Each step is one HTTP request ([`Authorizer::poll_request`]) whose response comes
//! back through [`Authorizer::handle_response`]; the driver runs it on a fresh
//! connection, follows no redirect, and caps the body. The approval step emits
//! [`AuthEvent::OpenUrl`] and waits for [`Authorizer::handle_callback`] with the URL the
//! browser came back to.
//!
//! What the machine refuses, whatever the server says: a `resource` that is not this
//! server's; metadata whose `issuer` is not, byte for byte, the issuer it was fetched
//! for; an authorization server without PKCE `S256`; a callback whose `state` is not the
//! one sent, or whose `iss` is missing (when promised) or not the issuer; endpoints that
//! fail the URL policy; more than [`AuthConfig::max_requests`] requests or
//! [`AuthConfig::max_step_ups`] step-ups in one flow. Tokens are bound to the issuer and
//! resource that produced them: a server that moves to another authorization server gets
//! a new registration and new tokens, never the old ones.
//!
//! Time is the caller's [`Instant`]; wall-clock time (token expiry, JWT `iat`) is the
//! Unix time the caller gave at creation plus the time elapsed since. Randomness comes
//! from a generator seeded by the caller ([`AuthConfig::seed`]).

mod approval;
mod discovery;
mod dpop;
mod grants;
#[cfg(test)]
mod hostile_tests;
mod identity;
#[cfg(test)]
mod refusal_tests;

use std::collections::VecDeque;
use std::fmt;

use serde_json::json;

use super::challenge::{BearerChallenge, bearer_challenge};
use super::config::{AuthConfig, ClientIdentity, Grant};
use super::credentials::{ClientRegistration, Credentials};
use super::crypto::{Drbg, Pkce, base64url, constant_time_eq};
use super::error::AuthError;
use super::form;
use super::metadata::{self, ResourceMetadata, ServerMetadata};
use super::token::{self, TokenError};
use crate::Instant;
use crate::http::EndpointUrl;
use crate::version::ProtocolVersion;

/// Refreshes in a row that may fail for a passing cause (a `5xx`, `server_error`,
/// `temporarily_unavailable`, no answer) before the refresh token is given up: each
/// failure fails its flow and keeps the token for the next, up to this many.
const MAX_REFRESH_FAILURES: u32 = 3;

/// Identifies one HTTP request of the flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AuthRequestId(u64);

impl AuthRequestId {
    pub(crate) fn new(n: u64) -> Self {
        AuthRequestId(n)
    }
}

/// An HTTP request the flow needs made. Send it on a new connection to
/// [`AuthRequest::url`]'s origin, follow no redirect, and report the response (its body
/// capped at [`AuthConfig::max_body_bytes`]) or the failure.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthRequest {
    /// Which request this is.
    pub id: AuthRequestId,
    /// `GET` or `POST`.
    pub method: &'static str,
    /// Where; it passed the URL policy.
    pub url: EndpointUrl,
    /// Header fields besides `Host` and `Content-Length`.
    pub headers: Vec<(String, String)>,
    /// The body of a `POST`.
    pub body: Option<Vec<u8>>,
    /// Whether the connection must go only to a public address: the MCP server is not
    /// on this machine or a private network, and named this other origin (an
    /// authorization server it points to could otherwise make the client probe the
    /// local network). The driver refuses loopback, private and link-local addresses
    /// after resolving, and connects to the address it checked.
    pub public_only: bool,
}

impl fmt::Debug for AuthRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Bodies and headers carry secrets (codes, verifiers, client secrets).
        f.debug_struct("AuthRequest")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

/// The response to an [`AuthRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthResponse {
    /// The status code.
    pub status: u16,
    /// The header fields, names as received.
    pub headers: Vec<(String, String)>,
    /// The body, at most [`AuthConfig::max_body_bytes`].
    pub body: Vec<u8>,
}

impl AuthResponse {
    fn header_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What happened in the flow.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthEvent {
    /// A person must approve: open this URL in a browser (or show it), then hand the URL
    /// the browser is sent back to to [`Authorizer::handle_callback`].
    OpenUrl(String),
    /// New credentials to keep (tokens, a registration): save them for the next run.
    CredentialsChanged(Box<Credentials>),
    /// The flow succeeded: [`Authorizer::authorization`] has the new header value.
    Authorized,
    /// The flow failed.
    Failed(AuthError),
}

/// Why a flow started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    Unauthorized,
    StepUp,
}

/// What the request in flight is for.
#[derive(Debug)]
enum Step {
    Idle,
    ResourceMetadata {
        urls: Vec<String>,
        next: usize,
    },
    ServerMetadata {
        issuer: String,
        urls: Vec<String>,
        next: usize,
        legacy: bool,
    },
    Register {
        issuer: String,
    },
    Approval {
        pending: Box<Pending>,
    },
    Token {
        grant: TokenGrant,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenGrant {
    Code,
    Refresh,
    ClientCredentials,
    JwtBearer,
    /// The token exchange at the enterprise identity provider, for an ID-JAG.
    IdJag,
}

/// What an authorization request left to check its callback against.
struct Pending {
    state: String,
    pkce: Pkce,
    issuer: String,
    iss_supported: bool,
    deadline: Instant,
}

impl fmt::Debug for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// The OAuth 2.1 client of one MCP server; see the module docs.
pub struct Authorizer {
    config: AuthConfig,
    mcp_url: EndpointUrl,
    rng: Drbg,
    started: Instant,
    unix_at_start: u64,
    now: Instant,
    step: Step,
    trigger: Trigger,
    challenge: Option<BearerChallenge>,
    in_flight: Option<(AuthRequestId, Instant)>,
    /// What the request in flight asks, for its timeout's error: method, origin and
    /// path (no query).
    in_flight_what: String,
    outbox: VecDeque<AuthRequest>,
    events: VecDeque<AuthEvent>,
    next_id: u64,
    /// Requests made by the current flow.
    requests: u32,
    step_ups: u32,
    /// Refreshes in a row that failed for a passing cause; see [`MAX_REFRESH_FAILURES`].
    refresh_failures: u32,
    retried_code: bool,
    retried_client: bool,
    resource_metadata: Option<ResourceMetadata>,
    /// Where [`Authorizer::resource_metadata`] was read: read again there before a
    /// refresh that no refusal started.
    resource_metadata_url: Option<String>,
    server_metadata: Option<ServerMetadata>,
    creds: Credentials,
    /// The scopes asked for by the last authorization, in order.
    requested: Vec<String>,
    /// The last token request's grant and parameters (before `resource` and client
    /// authentication), to send again with a DPoP nonce.
    last_token: Option<(TokenGrant, Vec<(String, String)>)>,
    /// Whether the last token request was already sent again for a nonce.
    nonce_retried: bool,
    /// The authorization server's latest DPoP nonce.
    as_nonce: Option<String>,
    /// The MCP servers' latest DPoP nonces, by origin (RFC 9449 §9: a resource server's
    /// nonce is its own), the most recently given last; at most
    /// [`MAX_RESOURCE_NONCES`].
    rs_nonces: Vec<(String, String)>,
}

/// Most origins whose DPoP nonce an [`Authorizer`] keeps: the MCP server's requests all
/// go to one (the 2024-11-05 transport's endpoint is on the server's origin), so this
/// only bounds a caller that uses one authorizer for several.
const MAX_RESOURCE_NONCES: usize = 8;

impl fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorizer")
            .field("mcp_url", &self.mcp_url.as_str())
            .field("step", &self.step)
            .field("creds", &self.creds)
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    /// The authorizer of the MCP server at `mcp_url`, created at `now`, when the Unix
    /// time is `unix_now` seconds. Credentials in the config are used when they belong
    /// to this server.
    #[must_use]
    pub fn new(config: AuthConfig, mcp_url: &EndpointUrl, now: Instant, unix_now: u64) -> Self {
        let rng = Drbg::new(&config.seed);
        let creds = config
            .credentials
            .clone()
            .filter(|c| c.server_url == mcp_url.as_str())
            .unwrap_or_else(|| Credentials {
                server_url: mcp_url.as_str().to_owned(),
                resource: String::new(),
                issuer: String::new(),
                client: None,
                access_token: None,
                token_type: "Bearer".to_owned(),
                expires_at: None,
                obtained_at: None,
                refresh_token: None,
                requested_scope: None,
                granted_scope: None,
                revocation_endpoint: None,
            });
        let requested = creds
            .requested_scope
            .as_deref()
            .map(split_scope)
            .unwrap_or_default();
        Authorizer {
            config,
            mcp_url: mcp_url.clone(),
            rng,
            started: now,
            unix_at_start: unix_now,
            now,
            step: Step::Idle,
            trigger: Trigger::Unauthorized,
            challenge: None,
            in_flight: None,
            in_flight_what: String::new(),
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            next_id: 0,
            requests: 0,
            step_ups: 0,
            refresh_failures: 0,
            retried_code: false,
            retried_client: false,
            resource_metadata: None,
            resource_metadata_url: None,
            server_metadata: None,
            creds,
            requested,
            last_token: None,
            nonce_retried: false,
            as_nonce: None,
            rs_nonces: Vec::new(),
        }
    }

    /// The `Authorization` header value of the access token held, when it is not known
    /// to be expired ([`Credentials::is_expired`]) at the latest instant this
    /// authorizer was given: the `now` of its last call that took one, not the time
    /// since (a caller that let time pass judges with [`Credentials::is_expired`] at
    /// its own clock). The MCP requests themselves ([`Authorizer::request_headers`])
    /// carry a token known to be expired all the same, when it cannot be refreshed
    /// first: the server decides.
    #[must_use]
    pub fn authorization(&self) -> Option<String> {
        if self.creds.is_expired(self.unix(self.now)) {
            return None;
        }
        self.creds.authorization()
    }

    /// The credentials as they stand.
    #[must_use]
    pub fn credentials(&self) -> &Credentials {
        &self.creds
    }

    /// Whether a flow is running: MCP requests should wait for its end.
    #[must_use]
    pub fn is_busy(&self) -> bool {
        !matches!(self.step, Step::Idle)
    }

    /// Whether the flow waits for a person's approval (the callback).
    #[must_use]
    pub fn awaits_approval(&self) -> bool {
        matches!(self.step, Step::Approval { .. })
    }

    fn unix(&self, now: Instant) -> u64 {
        (self.unix_at_start).saturating_add(now.saturating_duration_since(self.started).as_secs())
    }

    // ----- triggers -----------------------------------------------------------------

    /// The MCP server answered `401` with these `WWW-Authenticate` values: the token is
    /// dropped and a flow starts (refreshing when it can). Ignored while a flow runs.
    pub fn handle_unauthorized<'a>(
        &mut self,
        now: Instant,
        challenges: impl IntoIterator<Item = &'a str>,
    ) {
        self.now = now;
        if self.is_busy() {
            return;
        }
        self.creds.access_token = None;
        self.start(now, Trigger::Unauthorized, bearer_challenge(challenges));
    }

    /// The MCP server answered `403` with these `WWW-Authenticate` values. Returns
    /// whether the refused request should wait for a flow: only for
    /// `insufficient_scope`, which starts a step-up authorization (or joins the one
    /// running), at most [`AuthConfig::max_step_ups`] times in a row (a request that
    /// goes through starts the count again, see [`Authorizer::handle_success`]); past
    /// that the flow fails with [`AuthError::InsufficientScope`]. A challenge that names
    /// no scope beyond those granted (or none at all) starts nothing: asking the person
    /// again for the same scopes cannot help, and it fails at once with
    /// [`AuthError::ScopeNotGrantable`] (the token held stays in use).
    pub fn handle_insufficient_scope<'a>(
        &mut self,
        now: Instant,
        challenges: impl IntoIterator<Item = &'a str>,
    ) -> bool {
        self.now = now;
        let Some(challenge) = bearer_challenge(challenges) else {
            return false;
        };
        if !challenge.is_insufficient_scope() {
            return false;
        }
        if self.is_busy() {
            // The running flow decides for this request too: it waits for its end.
            return true;
        }
        if !self.widens_grant(Some(&challenge)) {
            let scope = clip(challenge.scope.as_deref().unwrap_or_default());
            self.events
                .push_back(AuthEvent::Failed(AuthError::ScopeNotGrantable { scope }));
            return true;
        }
        if self.step_ups >= self.config.max_step_ups {
            let scope = challenge.scope.clone().unwrap_or_default();
            self.events
                .push_back(AuthEvent::Failed(AuthError::InsufficientScope { scope }));
            return true;
        }
        self.step_ups += 1;
        self.start(now, Trigger::StepUp, Some(challenge));
        true
    }

    /// Before an MCP request goes out at `now`: starts a refresh when one is due, and
    /// returns whether it did (the request should then wait for the flow's end, as
    /// after a `401`, and go out once with the new token; if the flow fails, it fails
    /// with the flow's error).
    ///
    /// A refresh is due when no flow runs, a refresh token is held, the access token is
    /// known to be expired or about to be ([`Credentials::is_expired`]: its last minute,
    /// or the last quarter of a shorter life), and this authorizer has read the
    /// metadata before. With the authorization server's metadata read in this run for
    /// the issuer the tokens belong to, the refresh goes straight to its token
    /// endpoint: nothing refused the token, so nothing says the metadata changed (a
    /// `401` reads it again). With only the protected resource metadata's address, the
    /// flow goes as after a `401` (that metadata read, then the refresh), without the
    /// refused request. Before either (stored credentials, a first request), the
    /// request goes with the token held, as when no refresh token is: the server
    /// decides, and its `401` names where its metadata is (a server may name it only
    /// there).
    #[must_use = "when true, the request must wait for the refresh (park it as after a 401)"]
    pub fn refresh_before_request(&mut self, now: Instant) -> bool {
        self.now = now;
        let due = !self.is_busy()
            && self.config.grant == Grant::AuthorizationCode
            && self.creds.refresh_token.is_some()
            && self.creds.access_token.is_some()
            && self.creds.is_expired(self.unix(now));
        if !due {
            return false;
        }
        let held = self
            .server_metadata
            .as_ref()
            .is_some_and(|m| m.issuer == self.creds.issuer);
        if held {
            self.reset_flow(Trigger::Unauthorized, None);
            self.after_metadata(now);
            return true;
        }
        let Some(url) = self.resource_metadata_url.clone() else {
            return false;
        };
        self.begin(now, Trigger::Unauthorized, None, vec![url]);
        true
    }

    /// An MCP request went through with the current token: the step-up count starts
    /// again.
    pub fn handle_success(&mut self) {
        if !self.is_busy() {
            self.step_ups = 0;
        }
    }

    fn start(&mut self, now: Instant, trigger: Trigger, challenge: Option<BearerChallenge>) {
        let urls = match challenge.as_ref().and_then(|c| c.resource_metadata.clone()) {
            Some(url) => vec![url],
            None => metadata::resource_metadata_urls(&self.mcp_url),
        };
        self.begin(now, trigger, challenge, urls);
    }

    /// Starts a flow whose protected resource metadata is looked for at `urls`, in order.
    fn begin(
        &mut self,
        now: Instant,
        trigger: Trigger,
        challenge: Option<BearerChallenge>,
        urls: Vec<String>,
    ) {
        self.reset_flow(trigger, challenge);
        self.step = Step::ResourceMetadata { urls, next: 0 };
        self.next_resource_metadata(now);
    }

    /// What a new flow starts from: why it runs, and no request or retry counted yet.
    fn reset_flow(&mut self, trigger: Trigger, challenge: Option<BearerChallenge>) {
        self.trigger = trigger;
        self.requests = 0;
        self.retried_code = false;
        self.retried_client = false;
        self.challenge = challenge;
    }

    /// Gives up the running flow (the person declined, or nothing can open the URL):
    /// it fails with [`AuthError::Denied`] (`error` = `cancelled`). Nothing happens when
    /// no flow runs.
    pub fn abandon(&mut self, now: Instant, reason: &str) {
        self.now = now;
        if self.is_busy() {
            self.fail(AuthError::Denied {
                error: "cancelled".into(),
                description: Some(clip(reason)),
            });
        }
    }

    // ----- requests -----------------------------------------------------------------

    /// The next HTTP request to make.
    pub fn poll_request(&mut self) -> Option<AuthRequest> {
        self.outbox.pop_front()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<AuthEvent> {
        self.events.pop_front()
    }

    /// When [`Authorizer::handle_timeout`] is next due.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let approval = match &self.step {
            Step::Approval { pending } => Some(pending.deadline),
            _ => None,
        };
        [self.in_flight.map(|(_, d)| d), approval]
            .into_iter()
            .flatten()
            .min()
    }

    /// The operation waiting on the flow (connecting, say) ran out of time at `now`: a
    /// flow waiting for one of its requests fails with [`AuthError::Timeout`] naming that
    /// request, so that the failure says what was slow, not only that the operation was.
    /// Nothing happens when the flow waits for nothing or for a person's approval (which
    /// holds the operation's deadlines, and has its own).
    pub fn handle_deadline_passed(&mut self, now: Instant) {
        self.now = now;
        if self.in_flight.take().is_some() {
            let what = std::mem::take(&mut self.in_flight_what);
            self.fail(AuthError::Timeout {
                what: format!("the authorization request {what}"),
            });
        }
    }

    /// Fails the flow whose request or approval took too long.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        if let Some((_, deadline)) = self.in_flight
            && deadline <= now
        {
            self.in_flight = None;
            let what = std::mem::take(&mut self.in_flight_what);
            self.fail(AuthError::Timeout {
                what: format!(
                    "the authorization request {what}: no response within {:?} \
                     (AuthConfig::request_timeout)",
                    self.config.request_timeout
                ),
            });
            return;
        }
        if let Step::Approval { pending } = &self.step
            && pending.deadline <= now
        {
            self.fail(AuthError::Timeout {
                what: "the approval in the browser".into(),
            });
        }
    }

    /// Whether the flow still waits for the response to `id` (a request it gave up on,
    /// after a timeout or a failure, can be aborted).
    #[must_use]
    pub fn wants_response(&self, id: AuthRequestId) -> bool {
        self.in_flight.is_some_and(|(i, _)| i == id)
    }

    /// The request `id` failed below HTTP (connection refused, TLS, reset, …).
    pub fn handle_request_failed(&mut self, now: Instant, id: AuthRequestId, detail: &str) {
        self.now = now;
        if !self.wants_response(id) {
            return;
        }
        self.in_flight = None;
        self.fail(AuthError::Transport {
            detail: clip(detail),
        });
    }

    /// The response to request `id`.
    pub fn handle_response(&mut self, now: Instant, id: AuthRequestId, response: AuthResponse) {
        self.now = now;
        if !self.wants_response(id) {
            return;
        }
        self.in_flight = None;
        if (300..400).contains(&response.status) {
            return self.fail(AuthError::Redirect {
                status: response.status,
            });
        }
        if response.body.len() > self.config.max_body_bytes {
            return self.fail(AuthError::BodyTooLarge {
                limit: self.config.max_body_bytes,
            });
        }
        match std::mem::replace(&mut self.step, Step::Idle) {
            Step::Idle | Step::Approval { .. } => {}
            Step::ResourceMetadata { urls, next } => {
                self.on_resource_metadata(now, urls, next, &response);
            }
            Step::ServerMetadata {
                issuer,
                urls,
                next,
                legacy,
            } => self.on_server_metadata(now, issuer, urls, next, legacy, &response),
            Step::Register { issuer } => self.on_registration(now, issuer, &response),
            Step::Token { grant } => self.on_token(now, grant, &response),
        }
    }

    fn send(
        &mut self,
        now: Instant,
        method: &'static str,
        url: &str,
        headers: Vec<(String, String)>,
        body: Option<Vec<u8>>,
    ) -> bool {
        let url = match EndpointUrl::parse(url, self.config.allow_insecure) {
            Ok(u) => u,
            Err(e) => {
                self.fail(AuthError::UrlPolicy {
                    url: clip(url),
                    reason: e.to_string(),
                });
                return false;
            }
        };
        self.requests += 1;
        if self.requests > self.config.max_requests {
            self.fail(AuthError::TooManyRequests {
                limit: self.config.max_requests,
            });
            return false;
        }
        let id = AuthRequestId(self.next_id);
        self.next_id += 1;
        self.in_flight = Some((id, now + self.config.request_timeout));
        self.in_flight_what = clip(&format!("{method} {}{}", url.origin(), url.path()));
        let mut all = vec![("Accept".to_owned(), "application/json".to_owned())];
        all.extend(headers);
        let public_only = public_only_for(&self.mcp_url, self.config.allow_private_servers, &url);
        self.outbox.push_back(AuthRequest {
            id,
            method,
            url,
            headers: all,
            body,
            public_only,
        });
        true
    }

    fn fail(&mut self, error: AuthError) {
        if let Step::Token {
            grant: TokenGrant::Refresh,
        } = self.step
        {
            // The refresh went unanswered (no connection, a timeout, a redirect): a
            // cause that may pass, counted as one.
            self.refresh_failed_for_now();
        }
        self.step = Step::Idle;
        self.in_flight = None;
        self.outbox.clear();
        self.events.push_back(AuthEvent::Failed(error));
    }
}

/// How the client authenticates at the token endpoint: the method the registration
/// returned when the server accepts it and the client can perform it (`none`, or
/// `client_secret_basic` or `client_secret_post` with a secret: a registration made here
/// has no key for `private_key_jwt`), else the first of `client_secret_basic`,
/// `client_secret_post` (both only with a secret) and `none` the server lists; with no
/// list, `client_secret_basic` with a secret (RFC 8414's default) and `none` without.
fn choose_auth_method(asm: &ServerMetadata, returned: Option<&str>, has_secret: bool) -> String {
    let list = asm.token_endpoint_auth_methods_supported.as_deref();
    let listed = |m: &str| list.is_none_or(|l| l.iter().any(|x| x == m));
    let performed = |m: &str| match m {
        "none" => true,
        "client_secret_basic" | "client_secret_post" => has_secret,
        _ => false,
    };
    if let Some(m) = returned
        && listed(m)
        && performed(m)
    {
        return m.to_owned();
    }
    let Some(list) = list else {
        return if has_secret {
            "client_secret_basic"
        } else {
            "none"
        }
        .to_owned();
    };
    let candidates: &[&str] = if has_secret {
        &["client_secret_basic", "client_secret_post", "none"]
    } else {
        &["none"]
    };
    candidates
        .iter()
        .find(|m| list.iter().any(|x| x == *m))
        .map_or_else(|| "none".to_owned(), |m| (*m).to_owned())
}

/// Whether `ip` is an address on the public internet: not loopback, unspecified,
/// private (RFC 1918, unique local), link-local, shared (CGNAT), documentation,
/// benchmarking, multicast or reserved; an IPv6 address that carries an IPv4 one
/// (IPv4-mapped, IPv4-compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged by the
/// IPv4 address it reaches, and local-use NAT64 (`64:ff9b:1::/48`) is never public.
#[must_use]
pub fn is_public(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || a == 0
                || a >= 240
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (18..20).contains(&b)))
        }
        std::net::IpAddr::V6(v6) => {
            if let Some(v4) = embedded_ipv4(v6) {
                return is_public(std::net::IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0], s[1]) == (0x2001, 0x0db8)
                || (s[0], s[1], s[2]) == (0x0064, 0xff9b, 0x0001))
        }
    }
}

/// The IPv4 address an IPv6 one reaches: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`), NAT64 with the well-known prefix (`64:ff9b::a.b.c.d`,
/// RFC 6052), 6to4 (`2002:aabb:ccdd::/48`).
fn embedded_ipv4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = v6.segments();
    let o = v6.octets();
    let last = std::net::Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    if s[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified() {
        return Some(last);
    }
    if s[..6] == [0x0064, 0xff9b, 0, 0, 0, 0] {
        return Some(last);
    }
    (s[0] == 0x2002).then(|| std::net::Ipv4Addr::new(o[2], o[3], o[4], o[5]))
}

/// Whether a request to `url` for the MCP server at `mcp` may reach public addresses
/// only: when the server is taken for a public one (a DNS name other than `localhost`,
/// or an IP literal that is not loopback, private or link-local, unless
/// `allow_private_servers`) and `url` is on another origin (decision 30).
pub(crate) fn public_only_for(
    mcp: &EndpointUrl,
    allow_private_servers: bool,
    url: &EndpointUrl,
) -> bool {
    let mcp_is_public =
        !allow_private_servers && !mcp.is_loopback() && mcp.ip().is_none_or(is_public);
    mcp_is_public && url.origin() != mcp.origin()
}

/// A compact JWS: base64url header, claims and signature.
fn sign_jwt(
    signer: &dyn super::Signer,
    header: &serde_json::Value,
    claims: &serde_json::Value,
) -> Result<String, AuthError> {
    let input = format!(
        "{}.{}",
        base64url(header.to_string().as_bytes()),
        base64url(claims.to_string().as_bytes())
    );
    let signature = signer
        .sign(input.as_bytes())
        .map_err(|detail| AuthError::Signing { detail })?;
    Ok(format!("{input}.{}", base64url(&signature)))
}

fn split_scope(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in s.split(' ').filter(|p| !p.is_empty()) {
        if !out.iter().any(|x| x == part) {
            out.push(part.to_owned());
        }
    }
    out
}

fn token_detail(e: TokenError) -> String {
    clip(&e.to_string())
}

/// Peer text kept in an error: at most 256 bytes, cut on a character boundary.
fn clip(s: &str) -> String {
    let mut end = s.len().min(256);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses_are_told_from_local_ones() {
        let public = ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.4.4"];
        let local = [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "192.0.2.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ];
        for ip in public {
            assert!(is_public(ip.parse().unwrap()), "{ip} is public");
        }
        for ip in local {
            assert!(!is_public(ip.parse().unwrap()), "{ip} is not public");
        }
    }

    #[test]
    fn requests_to_other_origins_of_a_public_server_are_public_only() {
        let url = EndpointUrl::parse("https://mcp.example.com/mcp", false).unwrap();
        let mut a = Authorizer::new(
            AuthConfig::new("http://127.0.0.1:1/cb", [1; 32]),
            &url,
            Instant::ZERO,
            0,
        );
        a.handle_unauthorized(
            Instant::ZERO,
            ["Bearer resource_metadata=\"https://meta.example.net/prm\""],
        );
        let r = a.poll_request().unwrap();
        assert_eq!(r.url.as_str(), "https://meta.example.net/prm");
        assert!(r.public_only);
        // The same origin as the MCP server: no restriction.
        let mut b = Authorizer::new(
            AuthConfig::new("http://127.0.0.1:1/cb", [1; 32]),
            &url,
            Instant::ZERO,
            0,
        );
        b.handle_unauthorized(Instant::ZERO, ["Bearer"]);
        let r = b.poll_request().unwrap();
        assert_eq!(
            r.url.as_str(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert!(!r.public_only);
        // A server on loopback may name anything.
        let local = EndpointUrl::parse("http://127.0.0.1:8000/mcp", false).unwrap();
        let mut c = Authorizer::new(
            AuthConfig::new("http://127.0.0.1:1/cb", [1; 32]),
            &local,
            Instant::ZERO,
            0,
        );
        c.handle_unauthorized(
            Instant::ZERO,
            ["Bearer resource_metadata=\"http://127.0.0.1:9000/prm\""],
        );
        assert!(!c.poll_request().unwrap().public_only);
        // Nor may `localhost`, or an intranet that opted out.
        for (server, allow) in [
            ("http://localhost:8000/mcp", false),
            ("https://mcp.example.com/mcp", true),
        ] {
            let server = EndpointUrl::parse(server, false).unwrap();
            let mut config = AuthConfig::new("http://127.0.0.1:1/cb", [1; 32]);
            config.allow_private_servers = allow;
            let mut d = Authorizer::new(config, &server, Instant::ZERO, 0);
            d.handle_unauthorized(
                Instant::ZERO,
                ["Bearer resource_metadata=\"https://10.0.0.5/prm\""],
            );
            assert!(!d.poll_request().unwrap().public_only);
        }
    }
}
