//! The authorization flow as a machine.
//!
//! # Theory of operation
//!
//! An [`Authorizer`] holds what one MCP client knows about authorizing to one MCP server:
//! the protected resource metadata, the authorization server's metadata, the client's
//! registration there, and the tokens. It is idle until the MCP machine reports a
//! refusal: [`Authorizer::handle_unauthorized`] for a `401`,
//! [`Authorizer::handle_insufficient_scope`] for a `403` whose challenge says
//! `insufficient_scope`. A flow then runs to one end, [`AuthEvent::Authorized`] or
//! [`AuthEvent::Failed`]:
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

/// Identifies one HTTP request of the flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AuthRequestId(u64);

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
    outbox: VecDeque<AuthRequest>,
    events: VecDeque<AuthEvent>,
    next_id: u64,
    /// Requests made by the current flow.
    requests: u32,
    step_ups: u32,
    retried_code: bool,
    retried_client: bool,
    resource_metadata: Option<ResourceMetadata>,
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
    /// The MCP server's latest DPoP nonce.
    rs_nonce: Option<String>,
}

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
                refresh_token: None,
                requested_scope: None,
                granted_scope: None,
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
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            next_id: 0,
            requests: 0,
            step_ups: 0,
            retried_code: false,
            retried_client: false,
            resource_metadata: None,
            server_metadata: None,
            creds,
            requested,
            last_token: None,
            nonce_retried: false,
            as_nonce: None,
            rs_nonce: None,
        }
    }

    /// The `Authorization` header value for MCP requests, when there is a token that is
    /// not known to be expired.
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
        self.unix_at_start + now.saturating_duration_since(self.started).as_secs()
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
    /// whether a step-up authorization started: only for `insufficient_scope`, and at
    /// most [`AuthConfig::max_step_ups`] times in a row; past that the flow fails with
    /// [`AuthError::InsufficientScope`].
    pub fn handle_insufficient_scope<'a>(
        &mut self,
        now: Instant,
        challenges: impl IntoIterator<Item = &'a str>,
    ) -> bool {
        self.now = now;
        let Some(challenge) = bearer_challenge(challenges) else {
            return false;
        };
        if !challenge.is_insufficient_scope() || self.is_busy() {
            return false;
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

    /// An MCP request went through with the current token: the step-up count starts
    /// again.
    pub fn handle_success(&mut self) {
        if !self.is_busy() {
            self.step_ups = 0;
        }
    }

    fn start(&mut self, now: Instant, trigger: Trigger, challenge: Option<BearerChallenge>) {
        self.trigger = trigger;
        self.requests = 0;
        self.retried_code = false;
        self.retried_client = false;
        let urls = match challenge.as_ref().and_then(|c| c.resource_metadata.clone()) {
            Some(url) => vec![url],
            None => metadata::resource_metadata_urls(&self.mcp_url),
        };
        self.challenge = challenge;
        self.step = Step::ResourceMetadata { urls, next: 0 };
        self.next_resource_metadata(now);
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

    /// Fails the flow whose request or approval took too long.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        if let Some((id, deadline)) = self.in_flight
            && deadline <= now
        {
            self.in_flight = None;
            let _ = id;
            self.fail(AuthError::Timeout {
                what: "an authorization request".into(),
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
        let mut all = vec![("Accept".to_owned(), "application/json".to_owned())];
        all.extend(headers);
        self.outbox.push_back(AuthRequest {
            id,
            method,
            url,
            headers: all,
            body,
        });
        true
    }

    fn fail(&mut self, error: AuthError) {
        self.step = Step::Idle;
        self.in_flight = None;
        self.outbox.clear();
        self.events.push_back(AuthEvent::Failed(error));
    }

    // ----- discovery ----------------------------------------------------------------

    fn next_resource_metadata(&mut self, now: Instant) {
        let Step::ResourceMetadata { urls, next } = &mut self.step else {
            return;
        };
        let Some(url) = urls.get(*next).cloned() else {
            return self.no_resource_metadata(now);
        };
        *next += 1;
        self.send(now, "GET", &url, Vec::new(), None);
    }

    fn no_resource_metadata(&mut self, now: Instant) {
        if !self.config.legacy_fallback {
            return self.fail(AuthError::NoResourceMetadata);
        }
        // 2025-03-26: the MCP server's origin is the authorization server.
        self.resource_metadata = None;
        let issuer = self.mcp_url.origin().to_owned();
        let urls = metadata::legacy_server_metadata_urls(&self.mcp_url);
        self.use_issuer(now, issuer, urls, true);
    }

    fn on_resource_metadata(
        &mut self,
        now: Instant,
        urls: Vec<String>,
        next: usize,
        response: &AuthResponse,
    ) {
        match response.status {
            200..=299 => {}
            400..=499 => {
                self.step = Step::ResourceMetadata { urls, next };
                return self.next_resource_metadata(now);
            }
            status => {
                return self.fail(AuthError::Status {
                    what: "protected resource metadata",
                    status,
                });
            }
        }
        let prm = match metadata::parse_resource_metadata(&response.body) {
            Ok(m) => m,
            Err(e) => {
                return self.fail(AuthError::InvalidMetadata {
                    what: "protected resource metadata",
                    detail: e.to_string(),
                });
            }
        };
        let expected = self.mcp_url.as_str();
        if !metadata::resource_matches(&prm.resource, expected) {
            return self.fail(AuthError::ResourceMismatch {
                resource: clip(&prm.resource),
                expected: expected.to_owned(),
            });
        }
        let Some(issuer) = prm.authorization_servers.first().cloned() else {
            return self.fail(AuthError::InvalidMetadata {
                what: "protected resource metadata",
                detail: "no authorization server".into(),
            });
        };
        self.resource_metadata = Some(prm);
        let urls = match metadata::server_metadata_urls(&issuer) {
            Ok(u) => u,
            Err(e) => {
                return self.fail(AuthError::InvalidMetadata {
                    what: "authorization server issuer",
                    detail: e.to_string(),
                });
            }
        };
        self.use_issuer(now, issuer, urls, false);
    }

    /// Moves on with authorization server `issuer`: a server that changed drops what was
    /// bound to the old one.
    fn use_issuer(&mut self, now: Instant, issuer: String, urls: Vec<String>, legacy: bool) {
        let resource = self.resource();
        if self.creds.issuer != issuer || self.creds.resource != resource {
            let moved = !self.creds.issuer.is_empty();
            self.creds.issuer = issuer.clone();
            self.creds.resource = resource;
            self.creds.access_token = None;
            self.creds.refresh_token = None;
            self.creds.expires_at = None;
            if moved
                || self
                    .creds
                    .client
                    .as_ref()
                    .is_some_and(|c| c.issuer != issuer)
            {
                self.creds.client = None;
            }
            self.server_metadata = None;
        }
        if self
            .server_metadata
            .as_ref()
            .is_some_and(|m| m.issuer == issuer)
        {
            return self.after_metadata(now);
        }
        self.step = Step::ServerMetadata {
            issuer,
            urls,
            next: 0,
            legacy,
        };
        self.next_server_metadata(now);
    }

    fn next_server_metadata(&mut self, now: Instant) {
        let Step::ServerMetadata {
            urls, next, legacy, ..
        } = &mut self.step
        else {
            return;
        };
        let Some(url) = urls.get(*next).cloned() else {
            if *legacy {
                return self.legacy_default_endpoints(now);
            }
            return self.fail(AuthError::NoServerMetadata);
        };
        *next += 1;
        self.send(now, "GET", &url, Vec::new(), None);
    }

    /// 2025-03-26 fallback: the default endpoints at the MCP server's origin.
    fn legacy_default_endpoints(&mut self, now: Instant) {
        let origin = self.mcp_url.origin().to_owned();
        self.server_metadata = Some(ServerMetadata {
            issuer: origin.clone(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            revocation_endpoint: None,
            scopes_supported: None,
            response_types_supported: None,
            grant_types_supported: None,
            code_challenge_methods_supported: None,
            token_endpoint_auth_methods_supported: None,
            client_id_metadata_document_supported: false,
            authorization_response_iss_parameter_supported: false,
            dpop_signing_alg_values_supported: None,
        });
        self.after_metadata(now);
    }

    fn on_server_metadata(
        &mut self,
        now: Instant,
        issuer: String,
        urls: Vec<String>,
        next: usize,
        legacy: bool,
        response: &AuthResponse,
    ) {
        match response.status {
            200..=299 => {}
            400..=499 => {
                self.step = Step::ServerMetadata {
                    issuer,
                    urls,
                    next,
                    legacy,
                };
                return self.next_server_metadata(now);
            }
            status => {
                return self.fail(AuthError::Status {
                    what: "authorization server metadata",
                    status,
                });
            }
        }
        let asm = match metadata::parse_server_metadata(&response.body) {
            Ok(m) => m,
            Err(e) => {
                return self.fail(AuthError::InvalidMetadata {
                    what: "authorization server metadata",
                    detail: e.to_string(),
                });
            }
        };
        // The issuer must be the one the document was fetched for, byte for byte. The
        // 2025-03-26 fallback derived the issuer from the MCP URL; there the document
        // names it, on the same origin.
        let same = if legacy {
            EndpointUrl::parse(&asm.issuer, true).is_ok_and(|u| u.origin() == self.mcp_url.origin())
        } else {
            asm.issuer == issuer
        };
        if !same {
            return self.fail(AuthError::IssuerMismatch {
                expected: issuer,
                found: clip(&asm.issuer),
            });
        }
        if let Err(e) = self.check_server_metadata(&asm) {
            return self.fail(e);
        }
        if legacy {
            self.creds.issuer = asm.issuer.clone();
        }
        self.server_metadata = Some(asm);
        self.after_metadata(now);
    }

    fn check_server_metadata(&self, asm: &ServerMetadata) -> Result<(), AuthError> {
        let code = self.config.grant == Grant::AuthorizationCode;
        if code {
            match &asm.code_challenge_methods_supported {
                Some(m) if m.iter().any(|x| x == "S256") => {}
                None if self.config.protocol_version < ProtocolVersion::V2025_11_25 => {}
                _ => return Err(AuthError::NoPkce),
            }
            if let Some(types) = &asm.response_types_supported
                && !types.iter().any(|t| t == "code")
            {
                return Err(AuthError::InvalidMetadata {
                    what: "authorization server metadata",
                    detail: "response_types_supported lacks \"code\"".into(),
                });
            }
            if asm.authorization_endpoint.is_none() {
                return Err(AuthError::InvalidMetadata {
                    what: "authorization server metadata",
                    detail: "no authorization_endpoint".into(),
                });
            }
        }
        Ok(())
    }

    // ----- choosing the way to a token ----------------------------------------------

    fn after_metadata(&mut self, now: Instant) {
        match self.config.grant.clone() {
            Grant::ClientCredentials => self.client_credentials(now),
            Grant::JwtBearer { assertion } => self.jwt_bearer(now, &assertion),
            Grant::EnterpriseManaged {
                idp_token_endpoint,
                id_token,
                idp_client_id,
                idp_client_secret,
            } => self.token_exchange(
                now,
                &idp_token_endpoint,
                &id_token,
                &idp_client_id,
                idp_client_secret.as_deref(),
            ),
            Grant::AuthorizationCode => {
                if self.trigger == Trigger::Unauthorized && self.creds.refresh_token.is_some() {
                    self.refresh(now);
                } else {
                    self.ensure_client(now);
                }
            }
        }
    }

    fn ensure_client(&mut self, now: Instant) {
        let issuer = self.creds.issuer.clone();
        if let Some(c) = &self.creds.client
            && c.issuer == issuer
        {
            return self.authorize(now);
        }
        let Some(asm) = self.server_metadata.clone() else {
            return self.fail(AuthError::NoServerMetadata);
        };
        let cimd = |url: &Option<String>| {
            url.clone()
                .filter(|_| asm.client_id_metadata_document_supported)
        };
        match self.config.identity.clone() {
            ClientIdentity::PreRegistered {
                client_id,
                client_secret,
                issuer: bound,
            } => {
                if bound.as_ref().is_some_and(|b| *b != issuer) {
                    return self.fail(AuthError::ClientBoundElsewhere {
                        bound: bound.unwrap_or_default(),
                        issuer,
                    });
                }
                let method = choose_auth_method(&asm, None, client_secret.is_some());
                self.creds.client = Some(ClientRegistration {
                    issuer,
                    client_id,
                    client_secret,
                    auth_method: method,
                    source: "pre-registered".into(),
                });
                self.authorize(now);
            }
            ClientIdentity::Auto { cimd_url } if cimd(&cimd_url).is_some() => {
                self.use_cimd(now, cimd_url.unwrap_or_default());
            }
            ClientIdentity::Cimd { url } if asm.client_id_metadata_document_supported => {
                self.use_cimd(now, url);
            }
            ClientIdentity::Cimd { .. } => self.fail(AuthError::NeedClientCredentials {
                detail: "the authorization server does not support client metadata documents"
                    .into(),
            }),
            ClientIdentity::Auto { .. } | ClientIdentity::Dcr => {
                match asm.registration_endpoint.clone() {
                    Some(endpoint) => self.register(now, issuer, &asm, &endpoint),
                    None => self.fail(AuthError::NeedClientCredentials {
                        detail: "the authorization server offers no dynamic registration".into(),
                    }),
                }
            }
        }
    }

    fn use_cimd(&mut self, now: Instant, url: String) {
        let ok = EndpointUrl::parse(&url, false)
            .is_ok_and(|u| u.is_tls() && u.path() != "/" && !u.path().is_empty());
        if !ok {
            return self.fail(AuthError::UrlPolicy {
                url,
                reason: "a client metadata document URL must be https with a path".into(),
            });
        }
        self.creds.client = Some(ClientRegistration {
            issuer: self.creds.issuer.clone(),
            client_id: url,
            client_secret: None,
            auth_method: "none".into(),
            source: "cimd".into(),
        });
        self.authorize(now);
    }

    fn register(&mut self, now: Instant, issuer: String, asm: &ServerMetadata, endpoint: &str) {
        let wanted = match &asm.token_endpoint_auth_methods_supported {
            Some(list) => ["none", "client_secret_basic", "client_secret_post"]
                .into_iter()
                .find(|m| list.iter().any(|x| x == m))
                .unwrap_or("none"),
            None => "client_secret_basic",
        };
        let application_type = if self.redirect_is_native() {
            "native"
        } else {
            "web"
        };
        let body = token::registration_body(
            &self.config.client_name,
            &[&self.config.redirect_uri],
            &["authorization_code", "refresh_token"],
            wanted,
            application_type,
            None,
        );
        let headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
        if self.send(now, "POST", endpoint, headers, Some(body)) {
            self.step = Step::Register { issuer };
        }
    }

    fn redirect_is_native(&self) -> bool {
        match EndpointUrl::parse(&self.config.redirect_uri, true) {
            Ok(u) => u.is_loopback(),
            // A custom scheme (`com.example.app:/cb`) is a native app's.
            Err(_) => true,
        }
    }

    fn on_registration(&mut self, now: Instant, issuer: String, response: &AuthResponse) {
        let reg = match token::parse_registration(response.status, &response.body) {
            Ok(r) => r,
            Err(e) => return self.fail(AuthError::RegistrationRefused(token_detail(e))),
        };
        let Some(asm) = &self.server_metadata else {
            return self.fail(AuthError::NoServerMetadata);
        };
        let method = choose_auth_method(
            asm,
            reg.token_endpoint_auth_method.as_deref(),
            reg.client_secret.is_some(),
        );
        self.creds.client = Some(ClientRegistration {
            issuer,
            client_id: reg.client_id,
            client_secret: reg.client_secret,
            auth_method: method,
            source: "dcr".into(),
        });
        self.authorize(now);
    }

    // ----- the authorization request ------------------------------------------------

    fn scope(&self) -> Vec<String> {
        let challenged = self
            .challenge
            .as_ref()
            .map(BearerChallenge::scopes)
            .unwrap_or_default();
        let mut scope = if self.trigger == Trigger::StepUp {
            let mut all = self.requested.clone();
            for s in challenged {
                if !all.contains(&s) {
                    all.push(s);
                }
            }
            all
        } else if !challenged.is_empty() {
            challenged
        } else {
            self.resource_metadata
                .as_ref()
                .and_then(|m| m.scopes_supported.clone())
                .unwrap_or_default()
        };
        let offered = self
            .server_metadata
            .as_ref()
            .and_then(|m| m.scopes_supported.as_ref())
            .is_some_and(|s| s.iter().any(|x| x == "offline_access"));
        let grant_code = self.config.grant == Grant::AuthorizationCode;
        if grant_code
            && self.config.offline_access
            && offered
            && !scope.iter().any(|s| s == "offline_access")
        {
            scope.push("offline_access".to_owned());
        }
        scope
    }

    fn resource(&self) -> String {
        match &self.resource_metadata {
            Some(m) => m.resource.clone(),
            None => metadata::canonical_resource(&self.mcp_url),
        }
    }

    fn authorize(&mut self, now: Instant) {
        let Some(asm) = &self.server_metadata else {
            return self.fail(AuthError::NoServerMetadata);
        };
        let Some(client) = &self.creds.client else {
            return self.fail(AuthError::NeedClientCredentials {
                detail: "no client identity".into(),
            });
        };
        let endpoint = asm.authorization_endpoint.clone().unwrap_or_default();
        if let Err(e) = EndpointUrl::parse(&endpoint, self.config.allow_insecure) {
            return self.fail(AuthError::UrlPolicy {
                url: clip(&endpoint),
                reason: e.to_string(),
            });
        }
        let iss_supported = asm.authorization_response_iss_parameter_supported;
        let client_id = client.client_id.clone();
        let scope = self.scope();
        let pkce = Pkce::generate(&mut self.rng);
        let state = self.rng.token(16);
        let resource = self.resource();
        let joined = scope.join(" ");
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client_id.as_str()),
            ("redirect_uri", self.config.redirect_uri.as_str()),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state.as_str()),
            ("resource", resource.as_str()),
        ];
        if !scope.is_empty() {
            pairs.push(("scope", joined.as_str()));
        }
        if scope.iter().any(|s| s == "offline_access") {
            pairs.push(("prompt", "consent"));
        }
        let url = form::append_query(&endpoint, &pairs);
        self.requested = scope;
        self.creds.requested_scope = (!joined.is_empty()).then_some(joined);
        let issuer = self.creds.issuer.clone();
        self.step = Step::Approval {
            pending: Box::new(Pending {
                state,
                pkce,
                issuer,
                iss_supported,
                deadline: now + self.config.approval_timeout,
            }),
        };
        self.events.push_back(AuthEvent::OpenUrl(url));
    }

    /// The browser came back to the redirect URI: `url` is that URL (or its query).
    ///
    /// # Errors
    ///
    /// [`AuthError::NotWaiting`] when no approval is pending, and
    /// [`AuthError::StateMismatch`] for a callback that does not belong to it (the flow
    /// keeps waiting: it may be a stale or forged request). Other errors also end the
    /// flow, with [`AuthEvent::Failed`].
    pub fn handle_callback(&mut self, now: Instant, url: &str) -> Result<(), AuthError> {
        self.now = now;
        let Step::Approval { pending } = &self.step else {
            return Err(AuthError::NotWaiting);
        };
        let params = form::callback_params(url).map_err(|e| AuthError::InvalidCallback {
            detail: e.to_string(),
        })?;
        let one = |name: &str| -> Result<Option<&str>, AuthError> {
            let mut it = params.iter().filter(|(k, _)| k == name);
            let first = it.next().map(|(_, v)| v.as_str());
            if it.next().is_some() {
                return Err(AuthError::InvalidCallback {
                    detail: format!("`{name}` appears more than once"),
                });
            }
            Ok(first)
        };
        let state = one("state")?;
        if !state.is_some_and(|s| constant_time_eq(s.as_bytes(), pending.state.as_bytes())) {
            return Err(AuthError::StateMismatch);
        }
        // RFC 9207: the issuer check comes before `code` or `error` is looked at.
        let iss = one("iss");
        let verdict = match iss {
            Err(e) => Err(e),
            Ok(Some(iss)) if iss != pending.issuer => Err(AuthError::IssuerMismatch {
                expected: pending.issuer.clone(),
                found: clip(iss),
            }),
            Ok(None) if pending.iss_supported => Err(AuthError::MissingIss),
            Ok(_) => Ok(()),
        };
        if let Err(e) = verdict {
            self.fail(e.clone());
            return Err(e);
        }
        if let Ok(Some(error)) = one("error") {
            let description = one("error_description").ok().flatten().map(clip);
            let e = AuthError::Denied {
                error: clip(error),
                description,
            };
            self.fail(e.clone());
            return Err(e);
        }
        let code = match one("code") {
            Ok(Some(c)) if !c.is_empty() => c.to_owned(),
            _ => {
                let e = AuthError::InvalidCallback {
                    detail: "no `code`".into(),
                };
                self.fail(e.clone());
                return Err(e);
            }
        };
        let Step::Approval { pending } = std::mem::replace(&mut self.step, Step::Idle) else {
            return Err(AuthError::NotWaiting);
        };
        let verifier = pending.pkce.verifier.clone();
        let redirect = self.config.redirect_uri.clone();
        self.token_request(
            now,
            TokenGrant::Code,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", &redirect),
                ("code_verifier", &verifier),
            ],
        );
        Ok(())
    }

    // ----- token requests -----------------------------------------------------------

    fn refresh(&mut self, now: Instant) {
        let Some(refresh) = self.creds.refresh_token.clone() else {
            return self.ensure_client(now);
        };
        if self.creds.client.is_none() {
            return self.ensure_client(now);
        }
        self.token_request(
            now,
            TokenGrant::Refresh,
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        );
    }

    fn client_credentials(&mut self, now: Instant) {
        let ClientIdentity::PreRegistered {
            client_id,
            client_secret,
            ..
        } = self.config.identity.clone()
        else {
            return self.fail(AuthError::NeedClientCredentials {
                detail: "client_credentials needs pre-registered credentials".into(),
            });
        };
        let method = if self.config.signer.is_some() {
            "private_key_jwt"
        } else {
            "client_secret_basic"
        };
        self.creds.client = Some(ClientRegistration {
            issuer: self.creds.issuer.clone(),
            client_id,
            client_secret,
            auth_method: method.into(),
            source: "pre-registered".into(),
        });
        let scope = self.scope().join(" ");
        let mut pairs = vec![("grant_type", "client_credentials")];
        if !scope.is_empty() {
            pairs.push(("scope", scope.as_str()));
        }
        self.token_request(now, TokenGrant::ClientCredentials, &pairs);
    }

    fn jwt_bearer(&mut self, now: Instant, assertion: &str) {
        if let ClientIdentity::PreRegistered {
            client_id,
            client_secret,
            ..
        } = self.config.identity.clone()
        {
            let method = if client_secret.is_some() {
                "client_secret_basic"
            } else {
                "none"
            };
            self.creds.client = Some(ClientRegistration {
                issuer: self.creds.issuer.clone(),
                client_id,
                client_secret,
                auth_method: method.into(),
                source: "pre-registered".into(),
            });
        }
        let scope = self.scope().join(" ");
        let mut pairs = vec![
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", assertion),
        ];
        if !scope.is_empty() {
            pairs.push(("scope", scope.as_str()));
        }
        self.token_request(now, TokenGrant::JwtBearer, &pairs);
    }

    /// POSTs to the token endpoint: `pairs`, `resource`, and the client's authentication.
    fn token_request(&mut self, now: Instant, grant: TokenGrant, pairs: &[(&str, &str)]) {
        let Some(endpoint) = self
            .server_metadata
            .as_ref()
            .map(|m| m.token_endpoint.clone())
        else {
            return self.fail(AuthError::NoServerMetadata);
        };
        let kept = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        if self.last_token.as_ref().is_none_or(|(g, _)| *g != grant) {
            self.nonce_retried = false;
        }
        self.last_token = Some((grant, kept));
        let resource = self.resource();
        let mut body: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        body.push(("resource".into(), resource));
        let mut headers = vec![(
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        )];
        if let Some(client) = self.creds.client.clone()
            && let Err(e) = self.client_auth(now, &client, &endpoint, &mut headers, &mut body)
        {
            return self.fail(e);
        }
        if self.dpop_active() {
            let nonce = self.as_nonce.clone();
            match self.dpop_proof(now, "POST", &endpoint, None, nonce.as_deref()) {
                Ok(proof) => headers.push(("DPoP".to_owned(), proof)),
                Err(e) => return self.fail(e),
            }
        }
        let refs: Vec<(&str, &str)> = body.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let encoded = form::encode_pairs(&refs).into_bytes();
        if self.send(now, "POST", &endpoint, headers, Some(encoded)) {
            self.step = Step::Token { grant };
        }
    }

    /// The token exchange of enterprise-managed authorization (RFC 8693): the ID token
    /// for an identity assertion grant (ID-JAG) naming this authorization server and
    /// resource, at the identity provider.
    fn token_exchange(
        &mut self,
        now: Instant,
        endpoint: &str,
        id_token: &str,
        client_id: &str,
        client_secret: Option<&str>,
    ) {
        let resource = self.resource();
        let scope = self.scope().join(" ");
        let issuer = self.creds.issuer.clone();
        let mut pairs = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag",
            ),
            ("subject_token", id_token),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
            ("audience", issuer.as_str()),
            ("resource", resource.as_str()),
            ("client_id", client_id),
        ];
        if let Some(secret) = client_secret {
            pairs.push(("client_secret", secret));
        }
        if !scope.is_empty() {
            pairs.push(("scope", scope.as_str()));
        }
        let body = form::encode_pairs(&pairs).into_bytes();
        let headers = vec![(
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        )];
        if self.send(now, "POST", endpoint, headers, Some(body)) {
            self.step = Step::Token {
                grant: TokenGrant::IdJag,
            };
        }
    }

    /// The identity provider's answer to the token exchange: the ID-JAG goes on to the
    /// JWT bearer grant at the authorization server.
    fn on_id_jag(&mut self, now: Instant, response: &AuthResponse) {
        let parsed: Option<serde_json::Value> = (response.status == 200)
            .then(|| serde_json::from_slice(&response.body).ok())
            .flatten();
        let assertion = parsed.as_ref().and_then(|v| {
            let issued = v
                .get("issued_token_type")
                .and_then(serde_json::Value::as_str);
            (issued == Some("urn:ietf:params:oauth:token-type:id-jag"))
                .then(|| v.get("access_token").and_then(serde_json::Value::as_str))
                .flatten()
        });
        match assertion {
            Some(a) => {
                let a = a.to_owned();
                self.jwt_bearer(now, &a);
            }
            None => {
                let detail =
                    match token::parse_token_response(response.status, &response.body, false) {
                        Err(e) => token_detail(e),
                        Ok(_) => "the identity provider issued no ID-JAG".to_owned(),
                    };
                self.fail(AuthError::TokenRefused(format!("token exchange: {detail}")));
            }
        }
    }

    // ----- DPoP ---------------------------------------------------------------------

    /// Whether tokens are DPoP-bound: a key is configured and the authorization server
    /// supports its algorithm.
    fn dpop_active(&self) -> bool {
        let Some(key) = &self.config.dpop else {
            return false;
        };
        self.server_metadata
            .as_ref()
            .and_then(|m| m.dpop_signing_alg_values_supported.as_ref())
            .is_some_and(|algs| algs.iter().any(|a| a == key.algorithm()))
    }

    /// A DPoP proof (RFC 9449 §4.2) for `method` on `url` (query and fragment left out),
    /// with `ath` for an access token and the server's nonce when it gave one.
    fn dpop_proof(
        &mut self,
        now: Instant,
        method: &str,
        url: &str,
        token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, AuthError> {
        let Some(key) = self.config.dpop.clone() else {
            return Err(AuthError::Signing {
                detail: "no DPoP key".into(),
            });
        };
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let header = json!({"typ": "dpop+jwt", "alg": key.algorithm(), "jwk": key.public_jwk()});
        let mut claims = json!({
            "jti": self.rng.token(16),
            "htm": method,
            "htu": htu,
            "iat": self.unix(now),
        });
        if let Some(t) = token {
            claims["ath"] = json!(base64url(&super::crypto::sha256(t.as_bytes())));
        }
        if let Some(n) = nonce {
            claims["nonce"] = json!(n);
        }
        sign_jwt(key.as_ref(), &header, &claims)
    }

    /// The headers that authorize one MCP request: `Authorization` (`Bearer` or `DPoP`)
    /// and, for a DPoP-bound token, a fresh `DPoP` proof for `method` on `url`. Empty
    /// without a usable token.
    pub fn request_headers(
        &mut self,
        now: Instant,
        method: &str,
        url: &EndpointUrl,
    ) -> Vec<(String, String)> {
        self.now = now;
        let Some(value) = self.authorization() else {
            return Vec::new();
        };
        let mut headers = vec![("Authorization".to_owned(), value)];
        if self.creds.token_type.eq_ignore_ascii_case("dpop") {
            let token = self.creds.access_token.clone();
            let nonce = self.rs_nonce.clone();
            if let Ok(proof) = self.dpop_proof(
                now,
                method,
                url.as_str(),
                token.as_deref(),
                nonce.as_deref(),
            ) {
                headers.push(("DPoP".to_owned(), proof));
            }
        }
        headers
    }

    /// The MCP server asked for a DPoP nonce (`401` with `error="use_dpop_nonce"` and a
    /// `DPoP-Nonce` header): kept for the next proofs. True when the refused request
    /// should simply be sent again: a DPoP-bound token is in use and the nonce is new.
    pub fn handle_resource_nonce(&mut self, nonce: &str) -> bool {
        let dpop =
            self.creds.token_type.eq_ignore_ascii_case("dpop") && self.creds.access_token.is_some();
        let fresh = self.rs_nonce.as_deref() != Some(nonce);
        self.rs_nonce = Some(clip(nonce));
        dpop && fresh
    }

    fn client_auth(
        &mut self,
        now: Instant,
        client: &ClientRegistration,
        token_endpoint: &str,
        headers: &mut Vec<(String, String)>,
        body: &mut Vec<(String, String)>,
    ) -> Result<(), AuthError> {
        let secret = client.client_secret.clone().unwrap_or_default();
        match client.auth_method.as_str() {
            "client_secret_basic" => headers.push((
                "Authorization".into(),
                token::basic_authorization(&client.client_id, &secret),
            )),
            "client_secret_post" => {
                body.push(("client_id".into(), client.client_id.clone()));
                body.push(("client_secret".into(), secret));
            }
            "private_key_jwt" => {
                let assertion = self.client_assertion(now, &client.client_id, token_endpoint)?;
                body.push(("client_id".into(), client.client_id.clone()));
                body.push((
                    "client_assertion_type".into(),
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
                ));
                body.push(("client_assertion".into(), assertion));
            }
            _ => body.push(("client_id".into(), client.client_id.clone())),
        }
        Ok(())
    }

    /// A `private_key_jwt` assertion (RFC 7523 §3): `iss` = `sub` = the client id,
    /// `aud` = the issuer, valid for five minutes.
    fn client_assertion(
        &mut self,
        now: Instant,
        client_id: &str,
        _token_endpoint: &str,
    ) -> Result<String, AuthError> {
        let Some(signer) = self.config.signer.clone() else {
            return Err(AuthError::NeedClientCredentials {
                detail: "private_key_jwt needs a signing key".into(),
            });
        };
        let iat = self.unix(now);
        let header = json!({"alg": signer.algorithm(), "typ": "JWT"});
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": self.creds.issuer,
            "iat": iat,
            "exp": iat + 300,
            "jti": self.rng.token(16),
        });
        sign_jwt(signer.as_ref(), &header, &claims)
    }

    fn on_token(&mut self, now: Instant, grant: TokenGrant, response: &AuthResponse) {
        if grant == TokenGrant::IdJag {
            return self.on_id_jag(now, response);
        }
        if let Some(nonce) = response.header_all("dpop-nonce").next() {
            self.as_nonce = Some(clip(nonce));
        }
        let dpop = self.dpop_active();
        match token::parse_token_response(response.status, &response.body, dpop) {
            Ok(t) => {
                self.creds.access_token = Some(t.access_token);
                self.creds.token_type = t.token_type;
                self.creds.expires_at = t.expires_in.map(|s| self.unix(now).saturating_add(s));
                if t.refresh_token.is_some() {
                    self.creds.refresh_token = t.refresh_token;
                }
                self.creds.granted_scope = t.scope.or_else(|| self.creds.requested_scope.clone());
                self.step = Step::Idle;
                self.events
                    .push_back(AuthEvent::CredentialsChanged(Box::new(self.creds.clone())));
                self.events.push_back(AuthEvent::Authorized);
            }
            Err(TokenError::OAuth(e)) => {
                let code_flow = matches!(grant, TokenGrant::Code | TokenGrant::Refresh);
                match e.error.as_str() {
                    "use_dpop_nonce" if dpop && !self.nonce_retried && self.as_nonce.is_some() => {
                        self.nonce_retried = true;
                        if let Some((grant, pairs)) = self.last_token.clone() {
                            let refs: Vec<(&str, &str)> = pairs
                                .iter()
                                .map(|(k, v)| (k.as_str(), v.as_str()))
                                .collect();
                            self.token_request(now, grant, &refs);
                        }
                    }
                    "invalid_grant" if grant == TokenGrant::Refresh => {
                        self.creds.refresh_token = None;
                        self.ensure_client(now);
                    }
                    "invalid_grant" if grant == TokenGrant::Code && !self.retried_code => {
                        self.retried_code = true;
                        self.authorize(now);
                    }
                    "invalid_client" | "unauthorized_client"
                        if code_flow
                            && !self.retried_client
                            && self
                                .creds
                                .client
                                .as_ref()
                                .is_some_and(|c| c.source == "dcr") =>
                    {
                        self.retried_client = true;
                        self.creds.client = None;
                        self.creds.refresh_token = None;
                        self.ensure_client(now);
                    }
                    _ => self.fail(AuthError::TokenRefused(e.to_string())),
                }
            }
            Err(e) => self.fail(AuthError::TokenRefused(token_detail(e))),
        }
    }
}

/// How the client authenticates at the token endpoint: the method the registration
/// returned when the server accepts it, else the first of `client_secret_basic`,
/// `client_secret_post` (both only with a secret) and `none` the server lists; with no
/// list, `client_secret_basic` with a secret (RFC 8414's default) and `none` without.
fn choose_auth_method(asm: &ServerMetadata, returned: Option<&str>, has_secret: bool) -> String {
    let list = asm.token_endpoint_auth_methods_supported.as_deref();
    let listed = |m: &str| list.is_none_or(|l| l.iter().any(|x| x == m));
    if let Some(m) = returned
        && listed(m)
        && (m == "none" || has_secret)
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
