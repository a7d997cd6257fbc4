//! The OAuth client machine (`mcp_proto::auth::Authorizer`) driven on its own: canned
//! responses from a scripted protected resource and authorization server, a fixed seed
//! and a fake clock. Every test asserts the exact requests the machine makes (URLs, form
//! fields, headers) and the exact events and errors it reports.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::auth::crypto::{base64url, sha256};
use mcp_proto::auth::form::parse_pairs;
use mcp_proto::auth::{
    AuthConfig, AuthError, AuthEvent, AuthRequest, AuthResponse, Authorizer, ClientIdentity,
    ClientRegistration, Credentials, Grant,
};
use mcp_proto::http::EndpointUrl;
use mcp_proto::version::ProtocolVersion;
use serde_json::{Value, json};

const MCP: &str = "https://mcp.example.com/mcp";
const PRM_PATH: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const PRM_ROOT: &str = "https://mcp.example.com/.well-known/oauth-protected-resource";
const AS: &str = "https://auth.example.com";
const AS_OAUTH: &str = "https://auth.example.com/.well-known/oauth-authorization-server";
const AS_OIDC: &str = "https://auth.example.com/.well-known/openid-configuration";
const AS2: &str = "https://auth2.example.com";
const AS2_OAUTH: &str = "https://auth2.example.com/.well-known/oauth-authorization-server";
const REDIRECT: &str = "http://127.0.0.1:3333/callback";
const SEED: [u8; 32] = [7; 32];
const UNIX_START: u64 = 1_800_000_000;

// ----- canned documents --------------------------------------------------------------

fn prm(issuer: &str) -> Value {
    json!({"resource": MCP, "authorization_servers": [issuer],
        "scopes_supported": ["mcp:read", "mcp:write"]})
}

fn asm(issuer: &str) -> Value {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "code_challenge_methods_supported": ["S256"],
        "response_types_supported": ["code"],
        "token_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true,
    })
}

fn ok(body: &Value) -> AuthResponse {
    AuthResponse {
        status: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
    }
}

fn status(code: u16, body: &Value) -> AuthResponse {
    AuthResponse {
        status: code,
        ..ok(body)
    }
}

fn not_found() -> AuthResponse {
    status(404, &json!({}))
}

fn token(access: &str, refresh: Option<&str>) -> AuthResponse {
    let mut t = json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600});
    if let Some(r) = refresh {
        t["refresh_token"] = json!(r);
    }
    ok(&t)
}

fn registered(client_id: &str) -> AuthResponse {
    status(
        201,
        &json!({"client_id": client_id, "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none"}),
    )
}

// ----- the scripted world ------------------------------------------------------------

/// Responses by URL (without query). A route answers its queued responses in order and
/// keeps repeating its last one; a URL with no route gets `404`.
#[derive(Default)]
struct World {
    routes: BTreeMap<String, VecDeque<AuthResponse>>,
}

impl World {
    fn route(mut self, url: &str, response: AuthResponse) -> Self {
        self.set(url, response);
        self
    }
    fn set(&mut self, url: &str, response: AuthResponse) {
        self.routes
            .insert(url.to_owned(), VecDeque::from([response]));
    }
    fn answer(&mut self, req: &AuthRequest) -> AuthResponse {
        let url = req.url.as_str();
        let url = url.split('?').next().unwrap_or(url);
        match self.routes.get_mut(url) {
            Some(q) if q.len() > 1 => q.pop_front().expect("queued"),
            Some(q) => q.front().cloned().expect("queued"),
            None => not_found(),
        }
    }
}

/// The usual world: PRM at the path-inserted URL, the AS at the root, DCR and tokens.
fn standard_world() -> World {
    World::default()
        .route(PRM_PATH, ok(&prm(AS)))
        .route(AS_OAUTH, ok(&asm(AS)))
        .route(&format!("{AS}/register"), registered("client-1"))
        .route(&format!("{AS}/token"), token("at-1", Some("rt-1")))
}

struct Sim {
    auth: Authorizer,
    now: Instant,
    world: World,
    /// Every request, in order.
    sent: Vec<AuthRequest>,
    /// Every event, in order.
    events: Vec<AuthEvent>,
}

impl Sim {
    fn new(config: AuthConfig, world: World) -> Sim {
        let url = EndpointUrl::parse(MCP, false).expect("url");
        Sim {
            auth: Authorizer::new(config, &url, Instant::ZERO, UNIX_START),
            now: Instant::ZERO,
            world,
            sent: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Answers every request the machine makes until it makes none.
    fn pump(&mut self) {
        while let Some(req) = self.auth.poll_request() {
            let response = self.world.answer(&req);
            self.sent.push(req.clone());
            self.auth.handle_response(self.now, req.id, response);
        }
        self.drain();
    }

    fn drain(&mut self) {
        while let Some(e) = self.auth.poll_event() {
            self.events.push(e);
        }
    }

    fn unauthorized(&mut self, challenge: Option<&str>) {
        self.auth.handle_unauthorized(self.now, challenge);
        self.pump();
    }

    fn step_up(&mut self, challenge: &str) -> bool {
        let started = self.auth.handle_insufficient_scope(self.now, [challenge]);
        self.pump();
        started
    }

    /// The URLs requested so far, `METHOD url`.
    fn urls(&self) -> Vec<String> {
        self.sent
            .iter()
            .map(|r| format!("{} {}", r.method, r.url.as_str()))
            .collect()
    }

    fn requests_to(&self, url: &str) -> Vec<&AuthRequest> {
        self.sent.iter().filter(|r| r.url.as_str() == url).collect()
    }

    fn open_urls(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                AuthEvent::OpenUrl(u) => Some(u.clone()),
                _ => None,
            })
            .collect()
    }

    fn last_open_url(&self) -> String {
        self.open_urls().pop().expect("an OpenUrl event")
    }

    fn failure(&self) -> Option<AuthError> {
        self.events.iter().find_map(|e| match e {
            AuthEvent::Failed(e) => Some(e.clone()),
            _ => None,
        })
    }

    fn authorized_count(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, AuthEvent::Authorized))
            .count()
    }

    fn callback(&mut self, query: &str) -> Result<(), AuthError> {
        let r = self
            .auth
            .handle_callback(self.now, &format!("{REDIRECT}?{query}"));
        self.pump();
        r
    }

    /// The browser approves the pending authorization: `code` and the right `state`
    /// (and `iss` = `issuer` when given).
    fn approve_with(&mut self, code: &str, issuer: Option<&str>) -> Result<(), AuthError> {
        let params = query_of(&self.last_open_url());
        let state = one(&params, "state");
        let mut q = format!("code={code}&state={state}");
        if let Some(iss) = issuer {
            q.push_str("&iss=");
            q.push_str(&enc(iss));
        }
        self.callback(&q)
    }

    fn approve(&mut self) {
        self.approve_with("code-1", Some(AS)).expect("callback");
    }

    /// Runs the standard first authorization to its end.
    fn authorize_fully(&mut self) {
        self.unauthorized(None);
        self.approve();
        assert_eq!(self.authorized_count(), 1, "{:?}", self.events);
    }
}

fn enc(s: &str) -> String {
    mcp_proto::auth::form::encode_pairs(&[("x", s)])[2..].to_owned()
}

fn query_of(url: &str) -> Vec<(String, String)> {
    let q = url.split_once('?').map_or("", |(_, q)| q);
    parse_pairs(q).expect("query")
}

fn form(req: &AuthRequest) -> Vec<(String, String)> {
    let body = std::str::from_utf8(req.body.as_deref().expect("a body")).expect("utf-8");
    parse_pairs(body).expect("form body")
}

fn json_body(req: &AuthRequest) -> Value {
    serde_json::from_slice(req.body.as_deref().expect("a body")).expect("JSON body")
}

/// The single value of `name` (panics when absent or repeated).
fn one(pairs: &[(String, String)], name: &str) -> String {
    let values: Vec<&String> = pairs
        .iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v)
        .collect();
    assert_eq!(values.len(), 1, "`{name}` once in {pairs:?}");
    values[0].clone()
}

fn names(pairs: &[(String, String)]) -> Vec<&str> {
    pairs.iter().map(|(k, _)| k.as_str()).collect()
}

fn header<'a>(req: &'a AuthRequest, name: &str) -> Option<&'a str> {
    req.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn config() -> AuthConfig {
    AuthConfig::new(REDIRECT, SEED)
}

fn get(url: &str) -> String {
    format!("GET {url}")
}

fn post(url: &str) -> String {
    format!("POST {url}")
}

// ----- discovery ---------------------------------------------------------------------

#[test]
fn a_header_resource_metadata_url_is_the_only_one_tried() {
    let header_url = "https://mcp.example.com/meta/prm.json";
    // Even with metadata at the well-known URLs, a failing header URL is not followed by
    // a guess.
    let mut sim = Sim::new(config(), standard_world().route(PRM_ROOT, ok(&prm(AS))));
    sim.unauthorized(Some(&format!(
        r#"Bearer resource_metadata="{header_url}", scope="mcp:read""#
    )));
    assert_eq!(sim.urls(), [get(header_url)]);
    assert_eq!(sim.failure(), Some(AuthError::NoResourceMetadata));
    assert!(sim.open_urls().is_empty());
}

#[test]
fn a_header_resource_metadata_url_that_answers_is_used() {
    let header_url = "https://mcp.example.com/meta/prm.json";
    let world = standard_world().route(header_url, ok(&prm(AS)));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(Some(&format!(r#"Bearer resource_metadata="{header_url}""#)));
    assert_eq!(
        sim.urls(),
        [
            get(header_url),
            get(AS_OAUTH),
            post(&format!("{AS}/register"))
        ]
    );
    assert_eq!(sim.open_urls().len(), 1);
}

#[test]
fn without_a_header_url_path_inserted_then_root_and_as_metadata_in_order() {
    // PRM only at the root (its `resource` the origin, which covers /mcp); AS metadata
    // only at the OpenID URL.
    let root_prm = json!({"resource": "https://mcp.example.com",
        "authorization_servers": [AS]});
    let world = World::default()
        .route(PRM_ROOT, ok(&root_prm))
        .route(AS_OIDC, ok(&asm(AS)))
        .route(&format!("{AS}/register"), registered("client-1"));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(Some(r#"Bearer error="invalid_token""#));
    assert_eq!(
        sim.urls(),
        [
            get(PRM_PATH),
            get(PRM_ROOT),
            get(AS_OAUTH),
            get(AS_OIDC),
            post(&format!("{AS}/register")),
        ]
    );
    assert_eq!(sim.failure(), None);
    // The `resource` sent is the metadata's, verbatim.
    let params = query_of(&sim.last_open_url());
    assert_eq!(one(&params, "resource"), "https://mcp.example.com");
}

#[test]
fn every_resource_metadata_url_404_fails_with_no_resource_metadata() {
    let mut sim = Sim::new(config(), World::default());
    sim.unauthorized(None);
    assert_eq!(sim.urls(), [get(PRM_PATH), get(PRM_ROOT)]);
    assert_eq!(sim.failure(), Some(AuthError::NoResourceMetadata));
}

#[test]
fn a_5xx_on_resource_metadata_fails_without_trying_the_next_url() {
    let world = World::default()
        .route(PRM_PATH, status(503, &json!({})))
        .route(PRM_ROOT, ok(&prm(AS)));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    assert_eq!(sim.urls(), [get(PRM_PATH)]);
    assert_eq!(
        sim.failure(),
        Some(AuthError::Status {
            what: "protected resource metadata",
            status: 503
        })
    );
}

#[test]
fn an_issuer_with_a_path_tries_the_three_urls_and_never_the_root() {
    let issuer = "https://auth.example.com/tenant1";
    let world = World::default().route(PRM_PATH, ok(&prm(issuer)));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    assert_eq!(
        sim.urls(),
        [
            get(PRM_PATH),
            get("https://auth.example.com/.well-known/oauth-authorization-server/tenant1"),
            get("https://auth.example.com/.well-known/openid-configuration/tenant1"),
            get("https://auth.example.com/tenant1/.well-known/openid-configuration"),
        ]
    );
    assert_eq!(sim.failure(), Some(AuthError::NoServerMetadata));
}

#[test]
fn an_issuer_with_a_path_found_at_the_path_appended_openid_url() {
    let issuer = "https://auth.example.com/tenant1/";
    let appended = "https://auth.example.com/tenant1/.well-known/openid-configuration";
    let world = World::default()
        .route(PRM_PATH, ok(&prm(issuer)))
        .route(appended, ok(&asm(issuer)))
        .route(
            "https://auth.example.com/tenant1//register",
            registered("client-1"),
        );
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    // A trailing `/` on the issuer makes no double slash in the well-known URLs.
    assert_eq!(
        sim.urls()[..4],
        [
            get(PRM_PATH),
            get("https://auth.example.com/.well-known/oauth-authorization-server/tenant1"),
            get("https://auth.example.com/.well-known/openid-configuration/tenant1"),
            get(appended),
        ]
    );
    assert_eq!(sim.failure(), None, "{:?}", sim.events);
    assert_eq!(sim.auth.credentials().issuer, issuer);
}

// ----- client identity ---------------------------------------------------------------

#[test]
fn dcr_body_for_a_loopback_redirect_is_native_and_public() {
    let mut sim = Sim::new(config(), standard_world());
    sim.unauthorized(None);
    let reg = sim.requests_to(&format!("{AS}/register"));
    assert_eq!(reg.len(), 1);
    assert_eq!(reg[0].method, "POST");
    assert_eq!(header(reg[0], "content-type"), Some("application/json"));
    assert_eq!(header(reg[0], "authorization"), None);
    assert_eq!(
        json_body(reg[0]),
        json!({
            "client_name": "mcp-proto",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "native",
        })
    );
    let params = query_of(&sim.last_open_url());
    assert_eq!(one(&params, "client_id"), "client-1");
    let reg = sim.auth.credentials().client.clone().expect("registration");
    assert_eq!(
        reg,
        ClientRegistration {
            issuer: AS.into(),
            client_id: "client-1".into(),
            client_secret: None,
            auth_method: "none".into(),
            source: "dcr".into(),
        }
    );
}

#[test]
fn dcr_for_an_https_redirect_is_web_and_follows_the_advertised_auth_method() {
    let mut c = config();
    c.redirect_uri = "https://app.example.com/callback".into();
    let mut meta = asm(AS);
    meta["token_endpoint_auth_methods_supported"] = json!(["client_secret_post"]);
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(c, world);
    sim.unauthorized(None);
    let body = json_body(sim.requests_to(&format!("{AS}/register"))[0]);
    assert_eq!(body["application_type"], "web");
    assert_eq!(
        body["redirect_uris"],
        json!(["https://app.example.com/callback"])
    );
    assert_eq!(body["token_endpoint_auth_method"], "client_secret_post");
}

#[test]
fn dcr_without_an_advertised_list_asks_for_client_secret_basic() {
    let mut meta = asm(AS);
    meta.as_object_mut()
        .unwrap()
        .remove("token_endpoint_auth_methods_supported");
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    let body = json_body(sim.requests_to(&format!("{AS}/register"))[0]);
    assert_eq!(body["token_endpoint_auth_method"], "client_secret_basic");
}

#[test]
fn cimd_is_used_when_the_server_supports_it() {
    let cimd = "https://client.example.com/oauth/metadata.json";
    let mut c = config();
    c.identity = ClientIdentity::Auto {
        cimd_url: Some(cimd.into()),
    };
    let mut meta = asm(AS);
    meta["client_id_metadata_document_supported"] = json!(true);
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(c, world);
    sim.unauthorized(None);
    assert_eq!(
        sim.urls(),
        [get(PRM_PATH), get(AS_OAUTH)],
        "no registration"
    );
    let params = query_of(&sim.last_open_url());
    assert_eq!(one(&params, "client_id"), cimd);
    sim.approve();
    let t = sim.requests_to(&format!("{AS}/token"))[0];
    let body = form(t);
    assert_eq!(one(&body, "client_id"), cimd);
    assert!(!names(&body).contains(&"client_secret"));
    assert_eq!(header(t, "authorization"), None);
    assert_eq!(
        sim.auth.credentials().client.as_ref().unwrap().source,
        "cimd"
    );
}

#[test]
fn cimd_url_without_server_support_falls_back_to_dcr() {
    let mut c = config();
    c.identity = ClientIdentity::Auto {
        cimd_url: Some("https://client.example.com/oauth/metadata.json".into()),
    };
    let mut sim = Sim::new(c, standard_world());
    sim.unauthorized(None);
    assert_eq!(
        sim.urls(),
        [
            get(PRM_PATH),
            get(AS_OAUTH),
            post(&format!("{AS}/register"))
        ]
    );
    assert_eq!(
        one(&query_of(&sim.last_open_url()), "client_id"),
        "client-1"
    );
}

#[test]
fn no_identity_at_all_needs_client_credentials() {
    let mut meta = asm(AS);
    meta.as_object_mut()
        .unwrap()
        .remove("registration_endpoint");
    let world = World::default()
        .route(PRM_PATH, ok(&prm(AS)))
        .route(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    assert_eq!(sim.urls(), [get(PRM_PATH), get(AS_OAUTH)]);
    assert!(matches!(
        sim.failure(),
        Some(AuthError::NeedClientCredentials { .. })
    ));
}

fn pre_registered(issuer: Option<&str>) -> AuthConfig {
    let mut c = config();
    c.identity = ClientIdentity::PreRegistered {
        client_id: "pre-id".into(),
        client_secret: Some("pre secret".into()),
        issuer: issuer.map(str::to_owned),
    };
    c
}

#[test]
fn pre_registered_credentials_skip_registration_and_authenticate_with_basic() {
    let mut meta = asm(AS);
    meta["token_endpoint_auth_methods_supported"] = json!(["client_secret_basic"]);
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(pre_registered(Some(AS)), world);
    sim.unauthorized(None);
    assert_eq!(sim.urls(), [get(PRM_PATH), get(AS_OAUTH)]);
    assert_eq!(one(&query_of(&sim.last_open_url()), "client_id"), "pre-id");
    sim.approve();
    let t = sim.requests_to(&format!("{AS}/token"))[0];
    // base64("pre-id:pre%20secret"): both parts form-encoded first (RFC 6749 §2.3.1).
    assert_eq!(
        header(t, "authorization"),
        Some("Basic cHJlLWlkOnByZSUyMHNlY3JldA==")
    );
    let body = form(t);
    assert!(!names(&body).contains(&"client_id"), "{body:?}");
    assert!(!names(&body).contains(&"client_secret"), "{body:?}");
}

#[test]
fn pre_registered_credentials_bound_to_another_issuer_are_never_shown() {
    let mut sim = Sim::new(
        pre_registered(Some("https://other-as.example.com")),
        standard_world(),
    );
    sim.unauthorized(None);
    assert_eq!(sim.urls(), [get(PRM_PATH), get(AS_OAUTH)]);
    assert_eq!(
        sim.failure(),
        Some(AuthError::ClientBoundElsewhere {
            bound: "https://other-as.example.com".into(),
            issuer: AS.into(),
        })
    );
    assert!(sim.open_urls().is_empty());
    assert!(sim.requests_to(&format!("{AS}/token")).is_empty());
}

/// The grants without a person (client credentials, a JWT bearer assertion, an ID-JAG
/// from an identity provider) take pre-registered credentials too: bound to another
/// issuer, they fail the flow before any token request of that issuer, as the code flow
/// does, instead of sending the secret there.
#[test]
fn grants_without_a_person_never_show_credentials_bound_to_another_issuer() {
    let other = "https://other-as.example.com";
    let idp_token = "https://idp.example.com/token";
    let grants = [
        Grant::ClientCredentials,
        Grant::JwtBearer {
            assertion: "eyJhbGciOiJub25lIn0.e30.".into(),
        },
        Grant::EnterpriseManaged {
            idp_token_endpoint: idp_token.into(),
            id_token: "id-token".into(),
            idp_client_id: "idp-client".into(),
            idp_client_secret: None,
        },
    ];
    for grant in grants {
        let what = format!("{grant:?}");
        let mut c = pre_registered(Some(other));
        c.grant = grant;
        let id_jag = json!({"access_token": "id-jag", "token_type": "N_A",
            "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"});
        let world = standard_world().route(idp_token, ok(&id_jag));
        let mut sim = Sim::new(c, world);
        sim.unauthorized(None);
        assert_eq!(
            sim.failure(),
            Some(AuthError::ClientBoundElsewhere {
                bound: other.into(),
                issuer: AS.into(),
            }),
            "{what}: {:?}",
            sim.urls()
        );
        assert!(
            sim.requests_to(&format!("{AS}/token")).is_empty(),
            "{what}: {:?}",
            sim.urls()
        );
        assert!(
            sim.sent
                .iter()
                .all(|r| header(r, "authorization").is_none()),
            "{what}"
        );
    }
}

// ----- the authorization request and the code exchange -------------------------------

#[test]
fn authorization_url_and_token_request_carry_exactly_the_right_parameters() {
    let mut sim = Sim::new(config(), standard_world());
    sim.unauthorized(None);
    let url = sim.last_open_url();
    assert!(url.starts_with(&format!("{AS}/authorize?")), "{url}");
    let params = query_of(&url);
    assert_eq!(
        names(&params),
        [
            "response_type",
            "client_id",
            "redirect_uri",
            "code_challenge",
            "code_challenge_method",
            "state",
            "resource",
            "scope",
        ]
    );
    assert_eq!(one(&params, "response_type"), "code");
    assert_eq!(one(&params, "client_id"), "client-1");
    assert_eq!(one(&params, "redirect_uri"), REDIRECT);
    assert_eq!(one(&params, "code_challenge_method"), "S256");
    assert_eq!(one(&params, "resource"), MCP);
    // No challenge scope: the PRM's scopes_supported; no offline_access (not listed).
    assert_eq!(one(&params, "scope"), "mcp:read mcp:write");
    let state = one(&params, "state");
    assert!(state.len() >= 16, "{state}");
    assert!(sim.auth.awaits_approval());

    sim.callback(&format!("code=the%20code&state={state}&iss={}", enc(AS)))
        .expect("callback");
    let t = sim.requests_to(&format!("{AS}/token"));
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].method, "POST");
    assert_eq!(
        header(t[0], "content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(header(t[0], "authorization"), None, "a public client");
    let body = form(t[0]);
    assert_eq!(
        names(&body),
        [
            "grant_type",
            "code",
            "redirect_uri",
            "code_verifier",
            "resource",
            "client_id"
        ]
    );
    assert_eq!(one(&body, "grant_type"), "authorization_code");
    assert_eq!(one(&body, "code"), "the code");
    assert_eq!(one(&body, "redirect_uri"), REDIRECT);
    assert_eq!(one(&body, "resource"), MCP);
    assert_eq!(one(&body, "client_id"), "client-1");
    let verifier = one(&body, "code_verifier");
    assert!((43..=128).contains(&verifier.len()), "{verifier}");
    assert!(
        verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
    );
    assert_eq!(
        one(&params, "code_challenge"),
        base64url(&sha256(verifier.as_bytes()))
    );

    assert_eq!(sim.authorized_count(), 1);
    assert_eq!(sim.auth.authorization().as_deref(), Some("Bearer at-1"));
    let creds = sim
        .events
        .iter()
        .find_map(|e| match e {
            AuthEvent::CredentialsChanged(c) => Some(c.clone()),
            _ => None,
        })
        .expect("CredentialsChanged");
    assert_eq!(creds.server_url, MCP);
    assert_eq!(creds.resource, MCP);
    assert_eq!(creds.issuer, AS);
    assert_eq!(creds.access_token.as_deref(), Some("at-1"));
    assert_eq!(creds.refresh_token.as_deref(), Some("rt-1"));
    assert_eq!(creds.expires_at, Some(UNIX_START + 3600));
    assert_eq!(creds.requested_scope.as_deref(), Some("mcp:read mcp:write"));
    assert!(!sim.auth.is_busy());
}

#[test]
fn the_same_seed_gives_the_same_flow_and_another_seed_another() {
    let run = |seed: [u8; 32]| {
        let mut c = config();
        c.seed = seed;
        let mut sim = Sim::new(c, standard_world());
        sim.unauthorized(None);
        sim.last_open_url()
    };
    assert_eq!(run(SEED), run(SEED));
    assert_ne!(run(SEED), run([8; 32]));
}

#[test]
fn the_challenge_scope_comes_before_the_resource_metadata_scopes() {
    let mut sim = Sim::new(config(), standard_world());
    sim.unauthorized(Some(
        r#"Bearer error="invalid_token", scope="files:read files:read""#,
    ));
    assert_eq!(one(&query_of(&sim.last_open_url()), "scope"), "files:read");
}

#[test]
fn no_scope_anywhere_omits_the_parameter() {
    let mut world = standard_world();
    world.set(
        PRM_PATH,
        ok(&json!({"resource": MCP, "authorization_servers": [AS]})),
    );
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    let params = query_of(&sim.last_open_url());
    assert!(!names(&params).contains(&"scope"), "{params:?}");
    assert!(!names(&params).contains(&"prompt"), "{params:?}");
}

#[test]
fn offline_access_is_added_only_when_the_server_lists_it() {
    let mut meta = asm(AS);
    meta["scopes_supported"] = json!(["mcp:read", "offline_access"]);
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    let params = query_of(&sim.last_open_url());
    assert_eq!(one(&params, "scope"), "mcp:read mcp:write offline_access");
    assert_eq!(one(&params, "prompt"), "consent");

    // Listed, but the config does not want it.
    let mut c = config();
    c.offline_access = false;
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(c, world);
    sim.unauthorized(None);
    assert_eq!(
        one(&query_of(&sim.last_open_url()), "scope"),
        "mcp:read mcp:write"
    );
}

#[test]
fn an_authorization_endpoint_with_a_query_keeps_it() {
    let mut meta = asm(AS);
    meta["authorization_endpoint"] = json!(format!("{AS}/authorize?tenant=7"));
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    let url = sim.last_open_url();
    assert!(
        url.starts_with(&format!("{AS}/authorize?tenant=7&response_type=code&")),
        "{url}"
    );
}

#[test]
fn client_secret_post_puts_the_secret_in_the_body_only() {
    let mut meta = asm(AS);
    meta["token_endpoint_auth_methods_supported"] = json!(["client_secret_post"]);
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    world.set(
        &format!("{AS}/register"),
        status(
            201,
            &json!({"client_id": "client-1", "client_secret": "s3cr3t",
                "token_endpoint_auth_method": "client_secret_post"}),
        ),
    );
    let mut sim = Sim::new(config(), world);
    sim.authorize_fully();
    let t = sim.requests_to(&format!("{AS}/token"))[0];
    assert_eq!(header(t, "authorization"), None);
    let body = form(t);
    assert_eq!(one(&body, "client_id"), "client-1");
    assert_eq!(one(&body, "client_secret"), "s3cr3t");
}

#[test]
fn client_secret_basic_puts_the_secret_in_the_header_only() {
    let mut meta = asm(AS);
    meta["token_endpoint_auth_methods_supported"] = json!(["client_secret_basic"]);
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    world.set(
        &format!("{AS}/register"),
        status(
            201,
            &json!({"client_id": "client-1", "client_secret": "s3cr3t",
                "token_endpoint_auth_method": "client_secret_basic"}),
        ),
    );
    let mut sim = Sim::new(config(), world);
    sim.authorize_fully();
    let t = sim.requests_to(&format!("{AS}/token"))[0];
    // base64("client-1:s3cr3t")
    assert_eq!(
        header(t, "authorization"),
        Some("Basic Y2xpZW50LTE6czNjcjN0")
    );
    let body = form(t);
    assert!(!names(&body).contains(&"client_id"), "{body:?}");
    assert!(!names(&body).contains(&"client_secret"), "{body:?}");
}

// ----- refresh -----------------------------------------------------------------------

#[test]
fn a_later_401_refreshes_with_the_resource_and_keeps_an_unrotated_refresh_token() {
    let mut sim = Sim::new(config(), standard_world());
    sim.authorize_fully();
    let before = sim.sent.len();
    // The refresh answer has no refresh token: the old one stays.
    sim.world.set(&format!("{AS}/token"), token("at-2", None));
    sim.now += Duration::from_secs(100);
    sim.unauthorized(Some(r#"Bearer error="invalid_token""#));
    let later: Vec<String> = sim.urls()[before..].to_vec();
    assert_eq!(later, [get(PRM_PATH), post(&format!("{AS}/token"))]);
    let body = form(sim.sent.last().unwrap());
    assert_eq!(
        names(&body),
        ["grant_type", "refresh_token", "resource", "client_id"]
    );
    assert_eq!(one(&body, "grant_type"), "refresh_token");
    assert_eq!(one(&body, "refresh_token"), "rt-1");
    assert_eq!(one(&body, "resource"), MCP);
    assert_eq!(one(&body, "client_id"), "client-1");
    assert_eq!(sim.open_urls().len(), 1, "no second approval");
    assert_eq!(sim.authorized_count(), 2);
    assert_eq!(sim.auth.authorization().as_deref(), Some("Bearer at-2"));
    assert_eq!(
        sim.auth.credentials().refresh_token.as_deref(),
        Some("rt-1")
    );

    // A rotated refresh token replaces the old one, and is the one used next.
    sim.world
        .set(&format!("{AS}/token"), token("at-3", Some("rt-2")));
    sim.unauthorized(None);
    assert_eq!(
        one(&form(sim.sent.last().unwrap()), "refresh_token"),
        "rt-1"
    );
    assert_eq!(
        sim.auth.credentials().refresh_token.as_deref(),
        Some("rt-2")
    );
    sim.unauthorized(None);
    assert_eq!(
        one(&form(sim.sent.last().unwrap()), "refresh_token"),
        "rt-2"
    );
}

#[test]
fn a_refused_refresh_falls_back_to_a_full_authorization() {
    let mut sim = Sim::new(config(), standard_world());
    sim.authorize_fully();
    let before = sim.sent.len();
    sim.world.set(
        &format!("{AS}/token"),
        status(400, &json!({"error": "invalid_grant"})),
    );
    sim.unauthorized(None);
    assert_eq!(
        sim.urls()[before..],
        [get(PRM_PATH), post(&format!("{AS}/token"))],
        "the same client: no new registration"
    );
    assert_eq!(sim.open_urls().len(), 2);
    assert_eq!(sim.failure(), None);
    assert_eq!(sim.auth.credentials().refresh_token, None);
    // The store is told: neither dead token is tried again by the next run.
    let told = (sim.events.iter().rev())
        .find_map(|e| match e {
            AuthEvent::CredentialsChanged(c) => Some(c.clone()),
            _ => None,
        })
        .expect("the credentials told");
    assert_eq!(
        (told.access_token.as_deref(), told.refresh_token.as_deref()),
        (None, None)
    );
    assert_eq!(sim.auth.authorization(), None);
    sim.world
        .set(&format!("{AS}/token"), token("at-9", Some("rt-9")));
    sim.approve();
    assert_eq!(sim.auth.authorization().as_deref(), Some("Bearer at-9"));
    let body = form(sim.sent.last().unwrap());
    assert_eq!(one(&body, "grant_type"), "authorization_code");
}

#[test]
fn an_expired_token_is_not_offered() {
    let mut sim = Sim::new(config(), standard_world());
    sim.authorize_fully();
    assert!(sim.auth.authorization().is_some());
    // expires_in 3600, with a minute of margin; the machine learns time through calls.
    sim.now += Duration::from_secs(3600 - 61);
    sim.auth.handle_timeout(sim.now);
    assert!(sim.auth.authorization().is_some());
    sim.now += Duration::from_secs(2);
    sim.auth.handle_timeout(sim.now);
    assert_eq!(sim.auth.authorization(), None);
}

/// A token that lives a minute or less is used for three quarters of its life: a fixed
/// minute of margin counted it expired on arrival, and it was never sent.
#[test]
fn a_short_lived_token_is_offered_for_most_of_its_life() {
    let mut world = standard_world();
    let short = json!({"access_token": "at-short", "token_type": "Bearer", "expires_in": 40,
        "refresh_token": "rt-1"});
    world.set(&format!("{AS}/token"), ok(&short));
    let mut sim = Sim::new(config(), world);
    sim.authorize_fully();
    assert_eq!(sim.auth.authorization().as_deref(), Some("Bearer at-short"));
    let creds = sim.auth.credentials();
    assert_eq!(
        creds.expires_at.zip(creds.obtained_at),
        Some((UNIX_START + 40, UNIX_START))
    );
    sim.now += Duration::from_secs(29);
    sim.auth.handle_timeout(sim.now);
    assert!(sim.auth.authorization().is_some());
    sim.now += Duration::from_secs(2);
    sim.auth.handle_timeout(sim.now);
    assert_eq!(sim.auth.authorization(), None);
}

/// `expires_in: 0` says no lifetime (as `golang.org/x/oauth2` and others read it): the
/// token is used until the server refuses it. Counted as expiring on arrival, it was
/// never sent, and the login failed as "the server requires authorization (HTTP 401)".
#[test]
fn a_token_of_no_stated_lifetime_is_offered() {
    let mut world = standard_world();
    let zero = json!({"access_token": "at-zero", "token_type": "Bearer", "expires_in": 0});
    world.set(&format!("{AS}/token"), ok(&zero));
    let mut sim = Sim::new(config(), world);
    sim.authorize_fully();
    assert_eq!(sim.auth.credentials().expires_at, None);
    sim.now += Duration::from_secs(3600);
    sim.auth.handle_timeout(sim.now);
    assert_eq!(sim.auth.authorization().as_deref(), Some("Bearer at-zero"));
}

// ----- step-up -----------------------------------------------------------------------

#[test]
fn step_up_asks_for_the_union_of_scopes_and_stops_at_the_limit() {
    let mut sim = Sim::new(config(), standard_world());
    sim.unauthorized(Some(r#"Bearer scope="a""#));
    assert_eq!(one(&query_of(&sim.last_open_url()), "scope"), "a");
    sim.approve();

    // A 403 that is not about scope starts nothing.
    assert!(!sim.step_up(r#"Bearer error="invalid_token""#));
    assert!(!sim.step_up(r#"Basic realm="x""#));
    assert_eq!(sim.open_urls().len(), 1);

    let before = sim.sent.len();
    assert!(sim.step_up(r#"Bearer error="insufficient_scope", scope="b a""#));
    // No refresh (it cannot widen the grant): straight to a new authorization.
    assert_eq!(sim.urls()[before..], [get(PRM_PATH)]);
    assert_eq!(one(&query_of(&sim.last_open_url()), "scope"), "a b");
    sim.approve();
    assert!(sim.step_up(r#"Bearer error="insufficient_scope", scope="c""#));
    assert_eq!(one(&query_of(&sim.last_open_url()), "scope"), "a b c");
    sim.approve();
    assert_eq!(sim.authorized_count(), 3);

    let before = sim.sent.len();
    assert!(sim.step_up(r#"Bearer error="insufficient_scope", scope="d""#));
    assert_eq!(sim.sent.len(), before, "nothing more is sent");
    assert_eq!(sim.open_urls().len(), 3);
    assert_eq!(
        sim.failure(),
        Some(AuthError::InsufficientScope { scope: "d".into() })
    );
}

#[test]
fn a_success_resets_the_step_up_count() {
    let mut c = config();
    c.max_step_ups = 1;
    let mut sim = Sim::new(c, standard_world());
    sim.authorize_fully();
    assert!(sim.step_up(r#"Bearer error="insufficient_scope", scope="b""#));
    sim.approve();
    sim.auth.handle_success();
    assert!(sim.step_up(r#"Bearer error="insufficient_scope", scope="c""#));
    assert_eq!(sim.failure(), None);
    assert_eq!(sim.open_urls().len(), 3);
}

// ----- authorization server migration ------------------------------------------------

#[test]
fn a_new_authorization_server_gets_a_new_registration_and_never_the_old_secrets() {
    let mut sim = Sim::new(config(), standard_world());
    sim.authorize_fully();
    let before = sim.sent.len();
    sim.world.set(PRM_PATH, ok(&prm(AS2)));
    sim.world.set(AS2_OAUTH, ok(&asm(AS2)));
    sim.world
        .set(&format!("{AS2}/register"), registered("client-2"));
    sim.world
        .set(&format!("{AS2}/token"), token("at-new", Some("rt-new")));
    sim.unauthorized(Some(r#"Bearer error="invalid_token""#));
    assert_eq!(
        sim.urls()[before..],
        [
            get(PRM_PATH),
            get(AS2_OAUTH),
            post(&format!("{AS2}/register"))
        ]
    );
    let url = sim.last_open_url();
    assert!(url.starts_with(&format!("{AS2}/authorize?")), "{url}");
    assert_eq!(one(&query_of(&url), "client_id"), "client-2");
    sim.approve_with("code-2", Some(AS2)).expect("callback");
    let t = sim.sent.last().unwrap();
    assert_eq!(t.url.as_str(), format!("{AS2}/token"));
    assert_eq!(one(&form(t), "client_id"), "client-2");
    assert_eq!(one(&form(t), "grant_type"), "authorization_code");
    for r in &sim.sent[before..] {
        let text = format!(
            "{} {:?} {}",
            r.url.as_str(),
            r.headers,
            String::from_utf8_lossy(r.body.as_deref().unwrap_or_default())
        );
        for secret in ["client-1", "rt-1", "at-1"] {
            assert!(!text.contains(secret), "{secret} sent in {text}");
        }
        assert!(!r.url.as_str().starts_with(AS), "{}", r.url.as_str());
    }
    let creds = sim.auth.credentials();
    assert_eq!(creds.issuer, AS2);
    assert_eq!(creds.client.as_ref().unwrap().client_id, "client-2");
    assert_eq!(creds.refresh_token.as_deref(), Some("rt-new"));
}

// ----- other grants ------------------------------------------------------------------

#[test]
fn client_credentials_with_basic_authentication() {
    let mut c = pre_registered(None);
    c.grant = Grant::ClientCredentials;
    let mut meta = asm(AS);
    meta.as_object_mut()
        .unwrap()
        .remove("authorization_endpoint");
    meta.as_object_mut()
        .unwrap()
        .remove("code_challenge_methods_supported");
    meta["scopes_supported"] = json!(["mcp:read", "offline_access"]);
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    world.set(&format!("{AS}/token"), token("cc-token", None));
    let mut sim = Sim::new(c, world);
    sim.unauthorized(None);
    assert_eq!(
        sim.urls(),
        [get(PRM_PATH), get(AS_OAUTH), post(&format!("{AS}/token"))]
    );
    assert!(sim.open_urls().is_empty());
    let t = sim.sent.last().unwrap();
    assert_eq!(
        header(t, "authorization"),
        Some("Basic cHJlLWlkOnByZSUyMHNlY3JldA==")
    );
    let body = form(t);
    assert_eq!(names(&body), ["grant_type", "scope", "resource"]);
    assert_eq!(one(&body, "grant_type"), "client_credentials");
    // offline_access belongs to the code flow only.
    assert_eq!(one(&body, "scope"), "mcp:read mcp:write");
    assert_eq!(one(&body, "resource"), MCP);
    assert_eq!(sim.auth.authorization().as_deref(), Some("Bearer cc-token"));
}

#[test]
fn jwt_bearer_grant_sends_the_assertion() {
    let mut c = config();
    c.identity = ClientIdentity::PreRegistered {
        client_id: "wl-id".into(),
        client_secret: None,
        issuer: None,
    };
    c.grant = Grant::JwtBearer {
        assertion: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ3bCJ9.".into(),
    };
    let mut world = standard_world();
    world.set(&format!("{AS}/token"), token("jwt-token", None));
    let mut sim = Sim::new(c, world);
    sim.unauthorized(Some(r#"Bearer scope="mcp:read""#));
    assert_eq!(
        sim.urls(),
        [get(PRM_PATH), get(AS_OAUTH), post(&format!("{AS}/token"))]
    );
    let t = sim.sent.last().unwrap();
    assert_eq!(header(t, "authorization"), None);
    let body = form(t);
    assert_eq!(
        names(&body),
        ["grant_type", "assertion", "scope", "resource", "client_id"]
    );
    assert_eq!(
        one(&body, "grant_type"),
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(
        one(&body, "assertion"),
        "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ3bCJ9."
    );
    assert_eq!(one(&body, "scope"), "mcp:read");
    assert_eq!(one(&body, "client_id"), "wl-id");
    assert_eq!(
        sim.auth.authorization().as_deref(),
        Some("Bearer jwt-token")
    );
}

// ----- credentials from an earlier run -----------------------------------------------

fn stored(server_url: &str, expires_at: Option<u64>) -> Credentials {
    Credentials {
        server_url: server_url.into(),
        resource: MCP.into(),
        issuer: AS.into(),
        client: Some(ClientRegistration {
            issuer: AS.into(),
            client_id: "stored-client".into(),
            client_secret: None,
            auth_method: "none".into(),
            source: "dcr".into(),
        }),
        access_token: Some("stored-at".into()),
        token_type: "Bearer".into(),
        expires_at,
        obtained_at: None,
        refresh_token: Some("stored-rt".into()),
        requested_scope: Some("mcp:read".into()),
        granted_scope: Some("mcp:read".into()),
        revocation_endpoint: None,
    }
}

#[test]
fn stored_credentials_are_used_without_any_request() {
    let mut c = config();
    c.credentials = Some(stored(MCP, Some(UNIX_START + 600)));
    let mut sim = Sim::new(c, standard_world());
    assert_eq!(
        sim.auth.authorization().as_deref(),
        Some("Bearer stored-at")
    );
    assert!(sim.auth.poll_request().is_none());
    assert!(sim.auth.poll_event().is_none());
    assert_eq!(sim.auth.poll_timeout(), None);
    assert!(!sim.auth.is_busy());

    // On a 401 the stored refresh token and client are used: no registration.
    sim.unauthorized(None);
    assert_eq!(
        sim.urls(),
        [get(PRM_PATH), get(AS_OAUTH), post(&format!("{AS}/token"))]
    );
    let body = form(sim.sent.last().unwrap());
    assert_eq!(one(&body, "refresh_token"), "stored-rt");
    assert_eq!(one(&body, "client_id"), "stored-client");
}

#[test]
fn stored_credentials_for_another_server_or_expired_are_not_offered() {
    let mut c = config();
    c.credentials = Some(stored("https://other.example.com/mcp", None));
    let sim = Sim::new(c, standard_world());
    assert_eq!(sim.auth.authorization(), None);
    assert_eq!(sim.auth.credentials().refresh_token, None);

    let mut c = config();
    c.credentials = Some(stored(MCP, Some(UNIX_START - 1)));
    let sim = Sim::new(c, standard_world());
    assert_eq!(sim.auth.authorization(), None);
}

// ----- negative cases: metadata ------------------------------------------------------

#[test]
fn a_resource_metadata_for_another_resource_stops_before_any_authorization_server() {
    for resource in [
        "https://evil.example.com/mcp",
        "https://mcp.example.com/other",
        "http://mcp.example.com/mcp",
        "https://mcp.example.com/mcp/",
    ] {
        let mut world = standard_world();
        world.set(
            PRM_PATH,
            ok(&json!({"resource": resource, "authorization_servers": [AS]})),
        );
        let mut sim = Sim::new(config(), world);
        sim.unauthorized(None);
        assert_eq!(sim.urls(), [get(PRM_PATH)], "{resource}");
        assert_eq!(
            sim.failure(),
            Some(AuthError::ResourceMismatch {
                resource: resource.into(),
                expected: MCP.into()
            })
        );
    }
}

#[test]
fn an_issuer_mismatch_stops_before_registration() {
    for found in [
        "https://auth.example.com/",
        "https://evil.example.com",
        "https://AUTH.example.com",
        "https://auth.example.com:443",
    ] {
        let mut world = standard_world();
        world.set(AS_OAUTH, ok(&asm(found)));
        world.set(AS_OIDC, ok(&asm(found)));
        let mut sim = Sim::new(config(), world);
        sim.unauthorized(None);
        assert_eq!(sim.urls(), [get(PRM_PATH), get(AS_OAUTH)], "{found}");
        assert_eq!(
            sim.failure(),
            Some(AuthError::IssuerMismatch {
                expected: AS.into(),
                found: found.into()
            })
        );
        assert!(sim.open_urls().is_empty());
    }
}

#[test]
fn metadata_without_pkce_methods_is_refused_from_2025_11_25() {
    let mut meta = asm(AS);
    meta.as_object_mut()
        .unwrap()
        .remove("code_challenge_methods_supported");
    for (version, refused) in [
        (ProtocolVersion::V2026_07_28, true),
        (ProtocolVersion::V2025_11_25, true),
        (ProtocolVersion::V2025_06_18, false),
    ] {
        let mut c = config();
        c.protocol_version = version;
        let mut world = standard_world();
        world.set(AS_OAUTH, ok(&meta));
        let mut sim = Sim::new(c, world);
        sim.unauthorized(None);
        if refused {
            assert_eq!(sim.failure(), Some(AuthError::NoPkce), "{version:?}");
            assert_eq!(sim.urls(), [get(PRM_PATH), get(AS_OAUTH)]);
        } else {
            assert_eq!(sim.failure(), None, "{version:?}");
            let params = query_of(&sim.last_open_url());
            assert_eq!(one(&params, "code_challenge_method"), "S256");
        }
    }
}

#[test]
fn metadata_with_pkce_but_not_s256_is_refused_at_every_version() {
    for methods in [json!(["plain"]), json!([])] {
        for version in [ProtocolVersion::V2025_06_18, ProtocolVersion::V2026_07_28] {
            let mut meta = asm(AS);
            meta["code_challenge_methods_supported"] = methods.clone();
            let mut c = config();
            c.protocol_version = version;
            let mut world = standard_world();
            world.set(AS_OAUTH, ok(&meta));
            let mut sim = Sim::new(c, world);
            sim.unauthorized(None);
            assert_eq!(
                sim.failure(),
                Some(AuthError::NoPkce),
                "{methods} {version:?}"
            );
            assert!(sim.open_urls().is_empty());
        }
    }
}

#[test]
fn a_redirect_on_a_metadata_fetch_is_not_followed() {
    let redirect = AuthResponse {
        status: 302,
        headers: vec![("Location".into(), "https://evil.example.com/prm".into())],
        body: Vec::new(),
    };
    let mut world = standard_world();
    world.set(PRM_PATH, redirect);
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    assert_eq!(sim.urls(), [get(PRM_PATH)]);
    assert_eq!(sim.failure(), Some(AuthError::Redirect { status: 302 }));
}

#[test]
fn a_body_over_the_limit_fails() {
    let mut c = config();
    c.max_body_bytes = 300;
    let mut big = asm(AS);
    big["padding"] = json!("x".repeat(1000));
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&big));
    let mut sim = Sim::new(c, world);
    sim.unauthorized(None);
    assert_eq!(sim.urls(), [get(PRM_PATH), get(AS_OAUTH)]);
    assert_eq!(sim.failure(), Some(AuthError::BodyTooLarge { limit: 300 }));
}

#[test]
fn more_requests_than_allowed_fails() {
    let mut c = config();
    c.max_requests = 2;
    let mut sim = Sim::new(c, standard_world());
    sim.unauthorized(None);
    assert_eq!(sim.urls(), [get(PRM_PATH), get(AS_OAUTH)]);
    assert_eq!(sim.failure(), Some(AuthError::TooManyRequests { limit: 2 }));
}

#[test]
fn the_request_count_starts_again_with_each_flow() {
    let mut c = config();
    c.max_requests = 4;
    let mut sim = Sim::new(c, standard_world());
    // PRM, AS, register, token.
    sim.authorize_fully();
    // PRM, token (refresh).
    sim.unauthorized(None);
    assert_eq!(sim.authorized_count(), 2);
    assert_eq!(sim.failure(), None);
}

#[test]
fn an_unanswered_request_times_out_and_its_late_answer_is_ignored() {
    let mut sim = Sim::new(config(), standard_world());
    sim.now = Instant::ZERO + Duration::from_secs(5);
    sim.auth.handle_unauthorized(sim.now, None);
    let req = sim.auth.poll_request().expect("PRM request");
    assert_eq!(req.url.as_str(), PRM_PATH);
    assert_eq!(
        sim.auth.poll_timeout(),
        Some(Instant::ZERO + Duration::from_secs(35))
    );
    sim.auth
        .handle_timeout(Instant::ZERO + Duration::from_millis(34_999));
    assert!(sim.auth.poll_event().is_none());
    assert!(sim.auth.wants_response(req.id));
    sim.auth
        .handle_timeout(Instant::ZERO + Duration::from_secs(35));
    assert_eq!(
        sim.auth.poll_event(),
        Some(AuthEvent::Failed(AuthError::Timeout {
            what: format!(
                "the authorization request GET {PRM_PATH}: \
                 no response within 30s (AuthConfig::request_timeout)"
            )
        }))
    );
    assert!(!sim.auth.wants_response(req.id));
    assert!(!sim.auth.is_busy());
    assert_eq!(sim.auth.poll_timeout(), None);
    sim.auth.handle_response(sim.now, req.id, ok(&prm(AS)));
    assert!(sim.auth.poll_request().is_none());
    assert!(sim.auth.poll_event().is_none());
}

#[test]
fn a_failed_request_fails_the_flow() {
    let mut sim = Sim::new(config(), standard_world());
    sim.auth.handle_unauthorized(sim.now, None);
    let req = sim.auth.poll_request().expect("PRM request");
    sim.auth
        .handle_request_failed(sim.now, req.id, "connection refused");
    assert_eq!(
        sim.auth.poll_event(),
        Some(AuthEvent::Failed(AuthError::Transport {
            detail: "connection refused".into()
        }))
    );
}

#[test]
fn the_approval_times_out() {
    let mut sim = Sim::new(config(), standard_world());
    sim.now = Instant::ZERO + Duration::from_secs(1);
    sim.unauthorized(None);
    assert!(sim.auth.awaits_approval());
    let deadline = Instant::ZERO + Duration::from_secs(601);
    assert_eq!(sim.auth.poll_timeout(), Some(deadline));
    sim.auth.handle_timeout(deadline - Duration::from_millis(1));
    sim.drain();
    assert_eq!(sim.failure(), None);
    sim.now = deadline;
    sim.auth.handle_timeout(deadline);
    sim.drain();
    assert_eq!(
        sim.failure(),
        Some(AuthError::Timeout {
            what: "the approval in the browser".into()
        })
    );
    let params = query_of(&sim.last_open_url());
    let state = one(&params, "state");
    assert_eq!(
        sim.callback(&format!("code=c&state={state}&iss={}", enc(AS))),
        Err(AuthError::NotWaiting)
    );
    assert!(sim.requests_to(&format!("{AS}/token")).is_empty());
}

#[test]
fn an_http_endpoint_that_is_not_loopback_is_refused() {
    // The authorization endpoint: no OpenUrl.
    let mut meta = asm(AS);
    meta["authorization_endpoint"] = json!("http://auth.example.com/authorize");
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    assert!(
        matches!(sim.failure(), Some(AuthError::UrlPolicy { ref url, .. }) if url == "http://auth.example.com/authorize"),
        "{:?}",
        sim.events
    );
    assert!(sim.open_urls().is_empty());

    // The registration endpoint: nothing sent to it.
    let mut meta = asm(AS);
    meta["registration_endpoint"] = json!("http://auth.example.com/register");
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    assert_eq!(sim.urls(), [get(PRM_PATH), get(AS_OAUTH)]);
    assert!(matches!(sim.failure(), Some(AuthError::UrlPolicy { .. })));

    // The token endpoint: the code is never sent over plain http.
    let mut meta = asm(AS);
    meta["token_endpoint"] = json!("http://auth.example.com/token");
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    let state = one(&query_of(&sim.last_open_url()), "state");
    let _ = sim.callback(&format!("code=c&state={state}&iss={}", enc(AS)));
    assert!(
        sim.urls().iter().all(|u| !u.contains("/token")),
        "{:?}",
        sim.urls()
    );
    assert!(matches!(sim.failure(), Some(AuthError::UrlPolicy { .. })));

    // Loopback http is fine with the default policy.
    let issuer = "http://127.0.0.1:4000";
    let mut world = standard_world();
    world.set(PRM_PATH, ok(&prm(issuer)));
    world.set(
        "http://127.0.0.1:4000/.well-known/oauth-authorization-server",
        ok(&asm(issuer)),
    );
    world.set("http://127.0.0.1:4000/register", registered("c"));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    assert_eq!(sim.failure(), None, "{:?}", sim.events);
    assert_eq!(sim.open_urls().len(), 1);
}

#[test]
fn a_javascript_authorization_endpoint_is_refused() {
    let mut meta = asm(AS);
    meta["authorization_endpoint"] = json!("javascript:alert(1)");
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    assert!(
        matches!(
            sim.failure(),
            Some(AuthError::InvalidMetadata {
                what: "authorization server metadata",
                ..
            })
        ),
        "{:?}",
        sim.events
    );
    assert_eq!(sim.urls(), [get(PRM_PATH), get(AS_OAUTH)]);
    assert!(sim.open_urls().is_empty());
}

#[test]
fn an_http_resource_metadata_url_in_the_header_is_refused() {
    let mut sim = Sim::new(config(), standard_world());
    sim.unauthorized(Some(
        r#"Bearer resource_metadata="http://attacker.example.com/prm""#,
    ));
    assert!(sim.sent.is_empty());
    assert!(matches!(sim.failure(), Some(AuthError::UrlPolicy { .. })));
}

// ----- negative cases: the callback --------------------------------------------------

fn waiting_sim(iss_supported: bool) -> (Sim, String) {
    let mut meta = asm(AS);
    meta["authorization_response_iss_parameter_supported"] = json!(iss_supported);
    let mut world = standard_world();
    world.set(AS_OAUTH, ok(&meta));
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    let state = one(&query_of(&sim.last_open_url()), "state");
    (sim, state)
}

#[test]
fn a_callback_without_the_promised_iss_fails() {
    let (mut sim, state) = waiting_sim(true);
    assert_eq!(
        sim.callback(&format!("code=c&state={state}")),
        Err(AuthError::MissingIss)
    );
    assert_eq!(sim.failure(), Some(AuthError::MissingIss));
    assert!(sim.requests_to(&format!("{AS}/token")).is_empty());
    assert!(!sim.auth.is_busy());
}

#[test]
fn a_callback_with_another_or_normalized_iss_fails_without_a_token_request() {
    for iss in [
        "https://evil.example.com",
        "https://auth.example.com/",
        "https://AUTH.example.com",
        "https://auth.example.com:443",
        "https%3A%2F%2Fauth.example.com",
    ] {
        for supported in [true, false] {
            let (mut sim, state) = waiting_sim(supported);
            let r = sim.callback(&format!("code=c&state={state}&iss={}", enc(iss)));
            let expected = AuthError::IssuerMismatch {
                expected: AS.into(),
                found: iss.into(),
            };
            assert_eq!(r, Err(expected.clone()), "{iss} {supported}");
            assert_eq!(sim.failure(), Some(expected));
            assert!(sim.requests_to(&format!("{AS}/token")).is_empty());
        }
    }
}

#[test]
fn an_equal_iss_that_was_not_promised_is_accepted() {
    let (mut sim, state) = waiting_sim(false);
    sim.callback(&format!("code=c&state={state}&iss={}", enc(AS)))
        .expect("callback");
    assert_eq!(sim.requests_to(&format!("{AS}/token")).len(), 1);
    assert_eq!(sim.authorized_count(), 1);

    // And no iss at all is fine when not promised.
    let (mut sim, state) = waiting_sim(false);
    sim.callback(&format!("code=c&state={state}"))
        .expect("callback");
    assert_eq!(sim.authorized_count(), 1);
}

#[test]
fn a_wrong_state_is_refused_and_the_flow_keeps_waiting() {
    let (mut sim, state) = waiting_sim(true);
    let iss = enc(AS);
    assert_eq!(
        sim.callback(&format!("code=forged&state=not-it&iss={iss}")),
        Err(AuthError::StateMismatch)
    );
    assert_eq!(
        sim.callback(&format!("code=forged&iss={iss}")),
        Err(AuthError::StateMismatch)
    );
    assert!(sim.auth.awaits_approval());
    assert!(sim.sent.iter().all(|r| !r.url.as_str().ends_with("/token")));
    assert_eq!(sim.failure(), None);
    sim.callback(&format!("code=good&state={state}&iss={iss}"))
        .expect("callback");
    let body = form(sim.sent.last().unwrap());
    assert_eq!(one(&body, "code"), "good");
    assert_eq!(sim.authorized_count(), 1);
    // The state is used up.
    assert_eq!(
        sim.callback(&format!("code=again&state={state}&iss={iss}")),
        Err(AuthError::NotWaiting)
    );
}

#[test]
fn a_repeated_state_is_refused() {
    let (mut sim, state) = waiting_sim(true);
    let iss = enc(AS);
    let r = sim.callback(&format!("code=c&state={state}&state=other&iss={iss}"));
    assert!(matches!(r, Err(AuthError::InvalidCallback { .. })), "{r:?}");
    let r = sim.callback(&format!("code=c&state={state}&state={state}&iss={iss}"));
    assert!(matches!(r, Err(AuthError::InvalidCallback { .. })), "{r:?}");
    assert!(sim.requests_to(&format!("{AS}/token")).is_empty());
}

#[test]
fn a_repeated_code_is_refused() {
    let (mut sim, state) = waiting_sim(true);
    let iss = enc(AS);
    let r = sim.callback(&format!("code=a&code=b&state={state}&iss={iss}"));
    assert!(matches!(r, Err(AuthError::InvalidCallback { .. })), "{r:?}");
    assert!(sim.requests_to(&format!("{AS}/token")).is_empty());
    let r = sim.callback(&format!("state={state}&iss={iss}"));
    assert!(r.is_err());
    assert!(sim.requests_to(&format!("{AS}/token")).is_empty());
}

#[test]
fn a_repeated_iss_is_refused() {
    let (mut sim, state) = waiting_sim(true);
    let iss = enc(AS);
    let r = sim.callback(&format!("code=a&state={state}&iss={iss}&iss={iss}"));
    assert!(matches!(r, Err(AuthError::InvalidCallback { .. })), "{r:?}");
    assert!(sim.requests_to(&format!("{AS}/token")).is_empty());
}

#[test]
fn a_denied_authorization_is_reported() {
    let (mut sim, state) = waiting_sim(true);
    let iss = enc(AS);
    let expected = AuthError::Denied {
        error: "access_denied".into(),
        description: Some("the user said no".into()),
    };
    assert_eq!(
        sim.callback(&format!(
            "error=access_denied&error_description=the%20user%20said%20no&state={state}&iss={iss}"
        )),
        Err(expected.clone())
    );
    assert_eq!(sim.failure(), Some(expected));
    assert!(sim.requests_to(&format!("{AS}/token")).is_empty());
}

#[test]
fn a_denial_with_a_wrong_iss_is_reported_as_the_mismatch() {
    let (mut sim, state) = waiting_sim(true);
    let r = sim.callback(&format!(
        "error=access_denied&state={state}&iss={}",
        enc("https://evil.example.com")
    ));
    assert!(matches!(r, Err(AuthError::IssuerMismatch { .. })), "{r:?}");
}

#[test]
fn a_callback_with_no_flow_is_not_waiting() {
    let mut sim = Sim::new(config(), standard_world());
    assert_eq!(sim.callback("code=c&state=s"), Err(AuthError::NotWaiting));
}

#[test]
fn abandoning_the_flow_fails_it_as_cancelled() {
    let (mut sim, _) = waiting_sim(true);
    sim.auth.abandon(sim.now, "closed the window");
    sim.drain();
    assert_eq!(
        sim.failure(),
        Some(AuthError::Denied {
            error: "cancelled".into(),
            description: Some("closed the window".into())
        })
    );
    assert!(!sim.auth.is_busy());
    assert_eq!(sim.auth.poll_timeout(), None);
}

// ----- negative cases: the token endpoint --------------------------------------------

#[test]
fn a_refused_code_is_retried_once_with_a_new_authorization_then_fails() {
    let mut world = standard_world();
    world.set(
        &format!("{AS}/token"),
        status(400, &json!({"error": "invalid_grant"})),
    );
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    sim.approve();
    assert_eq!(sim.open_urls().len(), 2, "one new authorization");
    assert_eq!(sim.failure(), None);
    sim.approve();
    assert!(matches!(sim.failure(), Some(AuthError::TokenRefused(_))));
    assert_eq!(sim.open_urls().len(), 2);
}

#[test]
fn an_unknown_token_type_is_refused() {
    let mut world = standard_world();
    world.set(
        &format!("{AS}/token"),
        ok(&json!({"access_token": "x", "token_type": "mac"})),
    );
    let mut sim = Sim::new(config(), world);
    sim.unauthorized(None);
    sim.approve();
    assert!(matches!(sim.failure(), Some(AuthError::TokenRefused(_))));
    assert_eq!(sim.auth.authorization(), None);
}

#[test]
fn the_access_token_never_leaves_for_the_authorization_server() {
    let mut sim = Sim::new(config(), standard_world());
    sim.authorize_fully();
    sim.unauthorized(None);
    sim.world.set(PRM_PATH, ok(&prm(AS2)));
    sim.world.set(AS2_OAUTH, ok(&asm(AS2)));
    sim.world
        .set(&format!("{AS2}/register"), registered("client-2"));
    sim.unauthorized(None);
    for r in &sim.sent {
        let text = format!(
            "{} {:?} {}",
            r.url.as_str(),
            r.headers,
            String::from_utf8_lossy(r.body.as_deref().unwrap_or_default())
        );
        assert!(!text.contains("at-1"), "{text}");
        assert!(
            r.headers
                .iter()
                .all(|(k, v)| !k.eq_ignore_ascii_case("authorization") || v.starts_with("Basic ")),
            "{text}"
        );
    }
}

// ----- configured scopes, resource, and runs without a person -----------------------

mod configured {
    use mcp_proto::Instant;
    use mcp_proto::auth::{AuthConfig, AuthError, AuthEvent, AuthResponse, Authorizer};
    use mcp_proto::http::EndpointUrl;

    const PRM: &str = r#"{"resource": "https://mcp.example.com/mcp", "authorization_servers": ["https://as.example.com"], "scopes_supported": ["read"]}"#;
    const ASM: &str = r#"{"issuer": "https://as.example.com", "authorization_endpoint": "https://as.example.com/authorize", "token_endpoint": "https://as.example.com/token", "registration_endpoint": "https://as.example.com/register", "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"]}"#;

    fn ok(body: &str) -> AuthResponse {
        AuthResponse {
            status: 200,
            headers: vec![],
            body: body.as_bytes().to_vec(),
        }
    }

    fn to_metadata(config: AuthConfig) -> Authorizer {
        let url = EndpointUrl::parse("https://mcp.example.com/mcp", false).unwrap();
        let mut a = Authorizer::new(config, &url, Instant::ZERO, 1_700_000_000);
        a.handle_unauthorized(Instant::ZERO, ["Bearer"]);
        let prm = a.poll_request().unwrap();
        a.handle_response(Instant::ZERO, prm.id, ok(PRM));
        a
    }

    #[test]
    fn configured_scopes_are_added_to_what_the_server_names() {
        let mut config = AuthConfig::new("http://127.0.0.1:1/cb", [3; 32]);
        config.scopes = vec!["read".into(), "admin".into()];
        let mut a = to_metadata(config);
        let asm = a.poll_request().unwrap();
        a.handle_response(Instant::ZERO, asm.id, ok(ASM));
        let reg = a.poll_request().unwrap();
        a.handle_response(Instant::ZERO, reg.id, ok(r#"{"client_id": "c"}"#));
        let Some(AuthEvent::OpenUrl(url)) = a.poll_event() else {
            panic!("no approval asked")
        };
        assert!(url.contains("&scope=read%20admin"), "{url}");
    }

    #[test]
    fn a_configured_resource_must_be_the_metadata_resource() {
        let mut config = AuthConfig::new("http://127.0.0.1:1/cb", [3; 32]);
        config.resource = Some("https://mcp.example.com/".into());
        let mut a = to_metadata(config);
        assert!(
            a.poll_request().is_none(),
            "no request to any authorization server"
        );
        assert!(matches!(
            a.poll_event(),
            Some(AuthEvent::Failed(AuthError::ResourceMismatch { .. }))
        ));
    }

    #[test]
    fn without_a_person_the_flow_stops_before_registering() {
        let mut config = AuthConfig::new("http://127.0.0.1:1/cb", [3; 32]);
        config.interactive = false;
        let mut a = to_metadata(config);
        let asm = a.poll_request().unwrap();
        a.handle_response(Instant::ZERO, asm.id, ok(ASM));
        assert!(a.poll_request().is_none(), "nothing registered");
        assert_eq!(
            a.poll_event(),
            Some(AuthEvent::Failed(AuthError::ApprovalNeeded))
        );
    }
}
