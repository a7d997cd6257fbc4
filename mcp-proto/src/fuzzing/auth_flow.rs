//! The OAuth client machine ([`Authorizer`]) against authorization servers that answer
//! with arbitrary mutations of what they should say.
//!
//! The world is the one of the flow tests: an MCP server at `https://mcp.example.com/mcp`
//! whose protected resource metadata names an authorization server, which publishes its
//! metadata, registers clients and issues tokens. Each response is that canned document,
//! the document with one member replaced by fuzz JSON, fuzz bytes under a fuzz status,
//! a failed request, or no answer at all; each approval comes back right, with the wrong
//! `state`, without `iss`, as fuzz text, denied, or never.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Instant;
use crate::auth::form::callback_params;
use crate::auth::{
    AuthConfig, AuthEvent, AuthRequest, AuthResponse, Authorizer, ClientIdentity,
    ClientRegistration, Credentials, Grant, Signer,
};
use crate::http::{EndpointUrl, Scheme};
use crate::version::ProtocolVersion;

const MCP: &str = "https://mcp.example.com/mcp";
const MCP_ORIGIN: &str = "https://mcp.example.com";
const PRM: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const ISSUERS: [&str; 4] = [
    "https://auth.example.com",
    "https://auth2.example.com",
    "https://mcp.example.com",
    "http://127.0.0.1:9",
];
/// The identity provider of enterprise-managed authorization.
const IDP: &str = "https://idp.example.com";

/// The world's origins: a secret may reach none of them but its own.
fn known(origin: &str) -> bool {
    ISSUERS.contains(&origin) || origin == IDP
}

/// A DPoP key that signs with zeros: the machine only places the signature, and the
/// peers of the fuzz targets and of the tests read proofs without checking them.
#[derive(Debug, Clone, Copy, Default)]
pub struct ZeroSigner;

impl Signer for ZeroSigner {
    fn algorithm(&self) -> &str {
        "ES256"
    }

    fn sign(&self, _message: &[u8]) -> Result<Vec<u8>, String> {
        Ok(vec![0; 64])
    }

    fn public_jwk(&self) -> Value {
        json!({"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"})
    }
}
const REDIRECT: &str = "http://127.0.0.1:3333/callback";

/// Every secret the world hands out contains this; fuzz text never does (it is rewritten),
/// so a secret found in a request came from the world.
const MARK: &str = "SeCrEt";

/// Rounds of the harness loop after which the flow must have ended.
const MAX_ROUNDS: usize = 4096;

/// The harness: the machine, the fuzz input left, the clock, and what the world handed
/// out.
struct World<'a> {
    auth: Authorizer,
    input: &'a [u8],
    now: Instant,
    config: AuthConfig,
    /// Each secret handed out, with the issuer it belongs to (`None`: it goes nowhere):
    /// it may not reach another of the world's origins. (Fuzz text never names them, so
    /// an endpoint elsewhere can only be one the issuer's metadata designated.)
    secrets: BTreeMap<String, Option<String>>,
    issued: u32,
    /// Requests since the flow started.
    requests: u32,
    /// The `state` of the approval asked for in this flow, and whether the last callback
    /// carried it with a code.
    asked_state: Option<String>,
    callback_ok: bool,
    /// Flows that ended authorized.
    authorized: u32,
}

/// The first two bytes configure the client (interactive, grant, stored credentials,
/// legacy fallback, a pre-registered client, the protocol version, the issuer of what is
/// stored; enterprise-managed authorization through an identity provider, a DPoP key,
/// private servers allowed); the rest drives the world, a byte per decision, some
/// followed by a length-prefixed segment.
///
/// Invariants: no panic; at most `max_requests` requests per flow; every request goes to
/// `https` or loopback `http`, and to a public address only when it leaves the MCP
/// server's origin; no secret (token, client secret) reaches an origin other than the
/// one that issued it, no access token reaches any authorization server, and none shows
/// in a request's or an event's `Debug`; a flow never waits with nothing to send and no
/// deadline; `Authorized` comes with an authorization, and after an approval only when
/// the callback carried the `state` asked for; every flow ends.
pub fn auth_flow(data: &[u8]) {
    run(data);
}

/// [`auth_flow`], saying how many flows ended authorized.
fn run(data: &[u8]) -> u32 {
    let [control, more, input @ ..] = data else {
        return 0;
    };
    let mut w = World::new(*control, *more, input);
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(rounds <= MAX_ROUNDS, "the flow never ends");
        w.drain_events();
        if let Some(request) = w.auth.poll_request() {
            w.check_request(&request);
            w.answer(&request);
            continue;
        }
        if w.auth.is_busy() {
            let due = w.auth.poll_timeout();
            let Some(due) = due else {
                panic!("a flow waits with nothing to send and no deadline");
            };
            w.now = w.now.max(due);
            w.auth.handle_timeout(w.now);
            continue;
        }
        let Some(op) = w.byte() else {
            break;
        };
        w.trigger(op);
    }
    assert!(!w.auth.is_busy(), "a flow left running");
    w.authorized
}

impl<'a> World<'a> {
    fn new(control: u8, more: u8, input: &'a [u8]) -> Self {
        let mut config = AuthConfig::new(REDIRECT, [7; 32]);
        config.interactive = control & 1 == 0;
        if control & 2 != 0 {
            config.grant = Grant::ClientCredentials;
        }
        config.legacy_fallback = control & 8 != 0;
        if control & 0x20 != 0 {
            config.protocol_version = ProtocolVersion::V2025_06_18;
        }
        let mut secrets = BTreeMap::new();
        let issuer = ISSUERS[usize::from(control >> 6)];
        if control & 0x10 != 0 {
            let secret = format!("CS-pre-{MARK}");
            secrets.insert(secret.clone(), Some(issuer.to_owned()));
            config.identity = ClientIdentity::PreRegistered {
                client_id: "pre".into(),
                client_secret: Some(secret),
                issuer: Some(issuer.to_owned()),
            };
        }
        if control & 4 != 0 {
            let refresh = format!("RT-stored-{MARK}");
            let access = format!("AT-stored-{MARK}");
            secrets.insert(refresh.clone(), Some(issuer.to_owned()));
            secrets.insert(access.clone(), None);
            config.credentials = Some(Credentials {
                server_url: MCP.into(),
                resource: MCP.into(),
                issuer: issuer.to_owned(),
                client: Some(ClientRegistration {
                    issuer: issuer.to_owned(),
                    client_id: "stored".into(),
                    client_secret: None,
                    auth_method: "none".into(),
                    source: "dcr".into(),
                }),
                access_token: Some(access),
                token_type: "Bearer".into(),
                expires_at: Some(1),
                obtained_at: Some(0),
                refresh_token: Some(refresh),
                requested_scope: None,
                granted_scope: None,
                revocation_endpoint: None,
            });
        }
        if more & 1 != 0 {
            let id_token = format!("IDT-{MARK}");
            let secret = format!("IDPCS-{MARK}");
            secrets.insert(id_token.clone(), Some(IDP.to_owned()));
            secrets.insert(secret.clone(), Some(IDP.to_owned()));
            config.grant = Grant::EnterpriseManaged {
                idp_token_endpoint: format!("{IDP}/token"),
                id_token,
                idp_client_id: "idp-client".into(),
                idp_client_secret: Some(secret),
            };
        }
        if more & 2 != 0 {
            config.dpop = Some(std::sync::Arc::new(ZeroSigner));
        }
        config.allow_private_servers = more & 4 != 0;
        let url = EndpointUrl::parse(MCP, false).expect("the MCP URL");
        World {
            auth: Authorizer::new(config.clone(), &url, Instant::ZERO, 1_800_000_000),
            input,
            now: Instant::ZERO,
            config,
            secrets,
            issued: 0,
            requests: 0,
            asked_state: None,
            callback_ok: false,
            authorized: 0,
        }
    }

    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.input.split_first()?;
        self.input = rest;
        Some(b)
    }

    /// A length-prefixed piece of the input, as text naming neither a secret nor one of
    /// the world's hosts.
    fn segment(&mut self) -> String {
        let len = usize::from(self.byte().unwrap_or(0));
        let (piece, rest) = self.input.split_at(len.min(self.input.len()));
        self.input = rest;
        let text = String::from_utf8_lossy(piece);
        let lower = text.to_ascii_lowercase();
        if ["example.com", "127.0.0.1", MARK]
            .iter()
            .any(|n| lower.contains(&n.to_ascii_lowercase()))
        {
            lower
                .replace("example.com", "example.net")
                .replace("127.0.0.1", "127.0.0.2")
                .replace(&MARK.to_ascii_lowercase(), "mark")
        } else {
            text.into_owned()
        }
    }

    /// Starts a flow (or tells the machine a request went through).
    fn trigger(&mut self, op: u8) {
        self.requests = 0;
        self.asked_state = None;
        self.callback_ok = false;
        let challenge = match op & 3 {
            0 => format!(r#"Bearer resource_metadata="{PRM}", scope="mcp:read""#),
            1 => "Bearer".to_owned(),
            _ => self.segment(),
        };
        match op >> 2 & 3 {
            0 | 1 => self
                .auth
                .handle_unauthorized(self.now, [challenge.as_str()]),
            2 => {
                let challenge = format!(
                    r#"Bearer error="insufficient_scope", scope="mcp:write", resource_metadata="{PRM}""#
                );
                let _ = self
                    .auth
                    .handle_insufficient_scope(self.now, [challenge.as_str()]);
            }
            _ => self.auth.handle_success(),
        }
        self.now += Duration::from_millis(u64::from(op >> 4) * 1000);
    }

    /// What every request must respect.
    fn check_request(&mut self, request: &AuthRequest) {
        self.requests += 1;
        assert!(
            self.requests <= self.config.max_requests,
            "{} requests in one flow",
            self.requests
        );
        let url = &request.url;
        assert!(
            url.scheme() == Scheme::Https || url.is_loopback(),
            "plain http to {}",
            url.as_str()
        );
        if url.origin() != MCP_ORIGIN && !self.config.allow_private_servers {
            assert!(request.public_only, "{} not public only", url.as_str());
        }
        let shown = format!("{request:?}");
        let mut sent = String::new();
        for (name, value) in &request.headers {
            sent.push_str(name);
            sent.push_str(value);
            // `client_secret_basic`: the secret is in there, base64-encoded.
            if let Some(basic) = value.strip_prefix("Basic ") {
                use base64::Engine as _;
                let decoded = base64::engine::general_purpose::STANDARD.decode(basic);
                sent.push_str(&String::from_utf8_lossy(&decoded.unwrap_or_default()));
            }
        }
        sent.push_str(url.as_str());
        sent.push_str(&String::from_utf8_lossy(
            request.body.as_deref().unwrap_or_default(),
        ));
        let in_world = known(url.origin());
        for (secret, issuer) in &self.secrets {
            assert!(!shown.contains(secret.as_str()), "a secret in {shown}");
            if sent.contains(secret.as_str()) {
                assert!(issuer.is_some(), "an access token sent to {}", url.as_str());
                assert!(
                    !in_world || issuer.as_deref() == Some(url.origin()),
                    "a secret of {issuer:?} sent to {}",
                    url.as_str()
                );
            }
        }
    }

    /// Answers `request` as the world decides.
    fn answer(&mut self, request: &AuthRequest) {
        let op = self.byte().unwrap_or(0);
        let statuses = [200, 201, 400, 401, 403, 404, 500, 302];
        let status = statuses[usize::from(op >> 3 & 7)];
        let response = match op & 7 {
            0 | 1 | 7 => self.canned(request),
            2 => {
                let mut response = self.canned(request);
                let replacement = self.segment();
                let value =
                    serde_json::from_str(&replacement).unwrap_or(Value::String(replacement));
                if let Ok(Value::Object(mut doc)) = serde_json::from_slice(&response.body) {
                    let key = doc
                        .keys()
                        .nth(usize::from(op >> 3) % doc.len().max(1))
                        .cloned();
                    if let Some(key) = key {
                        doc.insert(key, value);
                    }
                    response.body = Value::Object(doc).to_string().into_bytes();
                }
                response
            }
            3 => AuthResponse {
                status,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: self.segment().into_bytes(),
            },
            4 => {
                self.auth
                    .handle_request_failed(self.now, request.id, "connection refused");
                return;
            }
            5 => {
                self.now += self.config.request_timeout;
                self.auth.handle_timeout(self.now);
                return;
            }
            _ => AuthResponse {
                status,
                ..self.canned(request)
            },
        };
        self.auth.handle_response(self.now, request.id, response);
    }

    /// What a well-behaved world answers to `request`.
    fn canned(&mut self, request: &AuthRequest) -> AuthResponse {
        let url = request.url.as_str();
        let origin = request.url.origin().to_owned();
        let ok = |status: u16, doc: Value| AuthResponse {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: doc.to_string().into_bytes(),
        };
        if url.contains("/.well-known/oauth-protected-resource") {
            let issuer = ISSUERS[(self.issued % 2) as usize];
            return ok(
                200,
                json!({"resource": MCP, "authorization_servers": [issuer],
                    "scopes_supported": ["mcp:read", "mcp:write", "offline_access"]}),
            );
        }
        if url.contains("/.well-known/") {
            return ok(
                200,
                json!({
                    "issuer": origin,
                    "authorization_endpoint": format!("{origin}/authorize"),
                    "token_endpoint": format!("{origin}/token"),
                    "registration_endpoint": format!("{origin}/register"),
                    "revocation_endpoint": format!("{origin}/revoke"),
                    "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"],
                    "grant_types_supported": ["authorization_code", "refresh_token",
                        "client_credentials"],
                    "token_endpoint_auth_methods_supported": ["none", "client_secret_post",
                        "client_secret_basic"],
                    "scopes_supported": ["mcp:read", "mcp:write", "offline_access"],
                    "authorization_response_iss_parameter_supported": true,
                    "dpop_signing_alg_values_supported": ["ES256"],
                    "client_id_metadata_document_supported": false,
                }),
            );
        }
        self.issued += 1;
        let n = self.issued;
        // Secrets from an endpoint elsewhere cannot be told whose they are: not bound.
        let issuer = known(&origin).then(|| origin.clone());
        if url.ends_with("/register") {
            let secret = format!("CS-{n}-{MARK}");
            if issuer.is_some() {
                self.secrets.insert(secret.clone(), issuer);
            }
            return ok(
                201,
                json!({"client_id": format!("client-{n}"), "client_secret": secret,
                    "redirect_uris": [REDIRECT],
                    "token_endpoint_auth_method": "client_secret_post"}),
            );
        }
        if origin == IDP {
            // The ID-JAG goes on to an authorization server: not bound here.
            return ok(
                200,
                json!({"access_token": format!("idjag-{n}"), "token_type": "N_A",
                    "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "expires_in": 300}),
            );
        }
        if url.ends_with("/token") {
            let access = format!("AT-{n}-{MARK}");
            let refresh = format!("RT-{n}-{MARK}");
            self.secrets.insert(access.clone(), None);
            if issuer.is_some() {
                self.secrets.insert(refresh.clone(), issuer);
            }
            return ok(
                200,
                json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                    "refresh_token": refresh, "scope": "mcp:read mcp:write"}),
            );
        }
        ok(404, json!({}))
    }

    /// Takes the machine's events, answering an approval as the input decides.
    fn drain_events(&mut self) {
        while let Some(event) = self.auth.poll_event() {
            let shown = format!("{event:?}");
            for secret in self.secrets.keys() {
                assert!(!shown.contains(secret.as_str()), "a secret in {shown}");
            }
            match event {
                AuthEvent::OpenUrl(url) => self.approve(&url),
                AuthEvent::Authorized => {
                    self.authorized += 1;
                    assert!(
                        self.auth.authorization().is_some(),
                        "authorized without an authorization"
                    );
                    if self.asked_state.is_some() {
                        assert!(
                            self.callback_ok,
                            "authorized after a callback without the state asked for"
                        );
                    }
                }
                _ => {}
            }
        }
    }

    /// The browser comes back from `url` (or never does).
    fn approve(&mut self, url: &str) {
        let asked = callback_params(url).unwrap_or_default();
        let param = |name: &str| {
            asked
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let state = param("state");
        self.asked_state = Some(state.clone());
        let issuer = EndpointUrl::parse(url, true)
            .map(|u| u.origin().to_owned())
            .unwrap_or_default();
        let op = self.byte().unwrap_or(0);
        let query = match op & 7 {
            0 | 1 => format!("code=c1&state={state}&iss={issuer}"),
            2 => format!("code=c1&state=x{state}&iss={issuer}"),
            3 => format!("code=c1&state={state}"),
            4 => self.segment(),
            5 => format!("error=access_denied&state={state}&iss={issuer}"),
            6 => format!("code=c1&state={state}&iss=https://evil.example"),
            _ => {
                self.now += self.config.approval_timeout;
                self.auth.handle_timeout(self.now);
                return;
            }
        };
        let callback = format!("{REDIRECT}?{query}");
        let got = callback_params(&callback).unwrap_or_default();
        let has = |name: &str, value: &str| got.iter().any(|(n, v)| n == name && v == value);
        self.callback_ok = has("state", &state) && got.iter().any(|(n, _)| n == "code");
        let _ = self.auth.handle_callback(self.now, &callback);
    }
}

#[cfg(test)]
mod tests {
    /// The canned world authorizes (through an approval, with client credentials, by a
    /// stored refresh token, with a pre-registered client, in either version, with a DPoP
    /// key, through an identity provider), and not with the wrong `state`, without a
    /// code, or when the metadata fetch fails.
    #[test]
    fn the_canned_world_authorizes_and_broken_answers_do_not() {
        for (control, more) in [
            (0u8, 0u8),
            (2 | 0x10, 0),
            (4, 0),
            (0x10, 0),
            (0x20, 0),
            (0, 2),
            (0x10, 1),
        ] {
            assert_eq!(super::run(&[control, more, 0]), 1, "{control:#x} {more:#x}");
        }
        // The stored refresh token of auth2: refreshed there.
        assert_eq!(super::run(&[4 | 0x40, 0, 0, 0, 0, 0, 0, 0]), 1);
        // The approval comes back with another state; denied; the first request fails.
        assert_eq!(super::run(&[0, 0, 0, 0, 0, 0, 0, 2]), 0);
        assert_eq!(super::run(&[0, 0, 0, 0, 0, 0, 0, 5]), 0);
        assert_eq!(super::run(&[0, 0, 0, 4]), 0);
    }
}
