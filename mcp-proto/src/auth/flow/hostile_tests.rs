//! The authorization flow against authorization and resource servers that misbehave,
//! and stored state that does not add up: a late callback, a repeated `error`, metadata
//! without `response_types_supported`, a legacy issuer's spelling, a remote plain-http
//! redirect, revocation and NAT64 addresses behind a public server, a registration of
//! another issuer, a clock at the end of `u64`, a DPoP nonce that changes between flows,
//! a step-up of a grant without a person, a registration naming a client authentication
//! the client cannot perform.

use std::time::Duration;

use super::*;

const MCP: &str = "https://mcp.example.com/mcp";
const PRM_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const AS: &str = "https://auth.example.com";
const REDIRECT: &str = "http://127.0.0.1:3333/callback";

fn mcp() -> EndpointUrl {
    EndpointUrl::parse(MCP, false).unwrap()
}

fn resp(status: u16, body: &str) -> AuthResponse {
    AuthResponse {
        status,
        headers: vec![],
        body: body.as_bytes().to_vec(),
    }
}

fn prm_body(issuer: &str) -> String {
    format!(r#"{{"resource":"{MCP}","authorization_servers":["{issuer}"]}}"#)
}

fn asm_value(issuer: &str) -> serde_json::Value {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    })
}

fn new_auth(config: AuthConfig) -> Authorizer {
    Authorizer::new(config, &mcp(), Instant::ZERO, 1_700_000_000)
}

fn config() -> AuthConfig {
    AuthConfig::new(REDIRECT, [9; 32])
}

/// Answers the next request, asserting its URL starts with `url_prefix`.
fn answer(a: &mut Authorizer, now: Instant, url_prefix: &str, r: AuthResponse) -> AuthRequest {
    let req = a.poll_request().unwrap_or_else(|| {
        panic!(
            "no request (expected {url_prefix}); events: {:?}",
            events(a)
        )
    });
    assert!(
        req.url.as_str().starts_with(url_prefix),
        "expected {url_prefix}, got {}",
        req.url.as_str()
    );
    a.handle_response(now, req.id, r);
    req
}

fn events(a: &mut Authorizer) -> Vec<AuthEvent> {
    std::iter::from_fn(|| a.poll_event()).collect()
}

fn failed(evs: &[AuthEvent]) -> Option<&AuthError> {
    evs.iter().find_map(|e| match e {
        AuthEvent::Failed(e) => Some(e),
        _ => None,
    })
}

fn open_url(evs: &[AuthEvent]) -> Option<String> {
    evs.iter().find_map(|e| match e {
        AuthEvent::OpenUrl(u) => Some(u.clone()),
        _ => None,
    })
}

fn query_param(url: &str, name: &str) -> Option<String> {
    form::callback_params(url)
        .unwrap()
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

/// Runs a 401 through PRM, AS metadata `asm` and DCR up to the approval; returns the
/// authorization URL.
fn to_approval(a: &mut Authorizer, now: Instant, asm: &serde_json::Value) -> String {
    a.handle_unauthorized(now, [r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#]);
    let issuer = asm["issuer"].as_str().unwrap().to_owned();
    answer(a, now, PRM_URL, resp(200, &prm_body(&issuer)));
    answer(a, now, &issuer, resp(200, &asm.to_string()));
    answer(
        a,
        now,
        &format!("{issuer}/register"),
        resp(201, r#"{"client_id":"c1"}"#),
    );
    let evs = events(a);
    open_url(&evs).unwrap_or_else(|| panic!("no OpenUrl: {evs:?}"))
}

fn callback(state: &str, extra: &str) -> String {
    format!("{REDIRECT}?state={state}{extra}")
}

/// The pending authorization expires (approval_timeout, default 10 min). A callback
/// handed in after that must be refused even if the driver has not yet called
/// `handle_timeout` (time is an argument of every input of a sans-IO machine).
#[test]
fn an_expired_pending_callback_is_refused() {
    let mut a = new_auth(config());
    let t0 = Instant::ZERO;
    let url = to_approval(&mut a, t0, &asm_value(AS));
    let state = query_param(&url, "state").unwrap();
    let late = t0 + Duration::from_secs(3600);
    let r = a.handle_callback(late, &callback(&state, "&code=abc"));
    let req = a.poll_request();
    assert!(
        r.is_err() && req.is_none(),
        "callback one hour after the 10-minute approval deadline was accepted: {r:?}, \
         token request {:?}",
        req.map(|q| q.url.as_str().to_owned())
    );
}

/// An authorization server that does not answer: the flow fails naming the request and
/// the limit that ran out (`AuthConfig::request_timeout`, with its value).
#[test]
fn a_request_that_is_not_answered_names_the_request_timeout() {
    let mut a = new_auth(config());
    a.handle_unauthorized(Instant::ZERO, [r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#]);
    assert!(a.poll_request().is_some(), "the metadata request goes out");
    a.handle_timeout(Instant::ZERO + Duration::from_secs(30));
    let evs = events(&mut a);
    let e = failed(&evs).expect("the flow failed").to_string();
    assert_eq!(
        e,
        "timed out waiting for the authorization request GET \
         https://mcp.example.com/.well-known/oauth-protected-resource/mcp: \
         no response within 30s (AuthConfig::request_timeout)"
    );
}

/// A caller-supplied (fake) Unix clock near the end of u64: no panic.
#[test]
fn a_unix_clock_at_the_end_of_u64_does_not_overflow() {
    let mut a = Authorizer::new(config(), &mcp(), Instant::ZERO, u64::MAX - 5);
    let later = Instant::ZERO + Duration::from_secs(3600);
    a.handle_unauthorized(later, ["Bearer"]);
    let _ = a.authorization();
}

/// `error` twice with a `code` in the callback: the callback is malformed (a parameter
/// may not be repeated) and must not be redeemed.
#[test]
fn a_repeated_error_with_a_code_is_not_redeemed() {
    let mut a = new_auth(config());
    let t0 = Instant::ZERO;
    let url = to_approval(&mut a, t0, &asm_value(AS));
    let state = query_param(&url, "state").unwrap();
    let r = a.handle_callback(
        t0,
        &callback(&state, "&error=access_denied&error=x&code=abc"),
    );
    let req = a.poll_request();
    assert!(
        req.is_none(),
        "callback with a repeated `error` was redeemed at {:?} ({r:?})",
        req.map(|q| q.url.as_str().to_owned())
    );
}

/// AS metadata without `response_types_supported`: RFC 8414 makes it REQUIRED and the
/// digest says validate that it contains `code`.
#[test]
fn metadata_without_response_types_is_refused() {
    let mut a = new_auth(config());
    let t0 = Instant::ZERO;
    let mut asm = asm_value(AS);
    asm.as_object_mut()
        .unwrap()
        .remove("response_types_supported");
    a.handle_unauthorized(t0, ["Bearer"]);
    answer(&mut a, t0, PRM_URL, resp(200, &prm_body(AS)));
    answer(&mut a, t0, AS, resp(200, &asm.to_string()));
    let evs = events(&mut a);
    assert!(
        failed(&evs).is_some(),
        "metadata without response_types_supported accepted; next request {:?}, events {evs:?}",
        a.poll_request().map(|q| q.url.as_str().to_owned())
    );
}

/// 2025-03-26 fallback (opt-in): the server's metadata names its issuer with a trailing
/// `/` (same origin, which the legacy check accepts). A later 401 must refresh with the
/// refresh token obtained, not throw away tokens and registration and start over.
#[test]
fn a_legacy_issuers_spelling_keeps_its_tokens() {
    let mut c = config();
    c.legacy_fallback = true;
    let mut a = new_auth(c);
    let t0 = Instant::ZERO;
    let origin = "https://mcp.example.com";
    let mut asm = asm_value(origin);
    asm["issuer"] = json!("https://mcp.example.com/");
    // Flow 1: no PRM anywhere, legacy metadata at the MCP origin.
    a.handle_unauthorized(t0, ["Bearer"]);
    answer(&mut a, t0, PRM_URL, resp(404, ""));
    answer(
        &mut a,
        t0,
        "https://mcp.example.com/.well-known/oauth-protected-resource",
        resp(404, ""),
    );
    answer(
        &mut a,
        t0,
        "https://mcp.example.com/.well-known/oauth-authorization-server",
        resp(200, &asm.to_string()),
    );
    answer(
        &mut a,
        t0,
        "https://mcp.example.com/register",
        resp(201, r#"{"client_id":"c1"}"#),
    );
    let url = open_url(&events(&mut a)).expect("OpenUrl");
    let state = query_param(&url, "state").unwrap();
    a.handle_callback(t0, &callback(&state, "&code=abc"))
        .unwrap();
    answer(
        &mut a,
        t0,
        "https://mcp.example.com/token",
        resp(
            200,
            r#"{"access_token":"at1","token_type":"Bearer","expires_in":3600,"refresh_token":"rt1"}"#,
        ),
    );
    let evs = events(&mut a);
    assert!(evs.contains(&AuthEvent::Authorized), "{evs:?}");
    assert_eq!(a.credentials().refresh_token.as_deref(), Some("rt1"));
    // Flow 2: the token is refused; the refresh token should be used.
    let t1 = t0 + Duration::from_secs(60);
    a.handle_unauthorized(t1, ["Bearer"]);
    answer(&mut a, t1, PRM_URL, resp(404, ""));
    answer(
        &mut a,
        t1,
        "https://mcp.example.com/.well-known/oauth-protected-resource",
        resp(404, ""),
    );
    let mut seen = Vec::new();
    while let Some(req) = a.poll_request() {
        seen.push(req.url.as_str().to_owned());
        let body = String::from_utf8(req.body.clone().unwrap_or_default()).unwrap();
        if req.url.as_str().ends_with("/token") {
            assert!(
                body.contains("grant_type=refresh_token"),
                "token request {body}"
            );
            return;
        }
        let r = if req.url.as_str().ends_with("/register") {
            resp(201, r#"{"client_id":"c2"}"#)
        } else {
            resp(200, &asm.to_string())
        };
        a.handle_response(t1, req.id, r);
    }
    panic!(
        "no refresh: requests {seen:?}, events {:?}, refresh token now {:?}",
        events(&mut a),
        a.credentials().refresh_token
    );
}

/// The redirect URI must be loopback http or https (RFC 8252 / digest §6): a plain-http
/// remote redirect (codes sent in clear to a remote host) is refused before an
/// authorization URL is opened.
#[test]
fn a_plain_http_remote_redirect_uri_is_refused() {
    let mut a = new_auth(AuthConfig::new("http://callback.example.com/cb", [9; 32]));
    let t0 = Instant::ZERO;
    a.handle_unauthorized(t0, ["Bearer"]);
    answer(&mut a, t0, PRM_URL, resp(200, &prm_body(AS)));
    answer(&mut a, t0, AS, resp(200, &asm_value(AS).to_string()));
    let reg = a.poll_request();
    let evs = events(&mut a);
    assert!(
        reg.is_none() && open_url(&evs).is_none(),
        "http remote redirect_uri used: request {:?}, events {evs:?}",
        reg.map(|r| r.url.as_str().to_owned())
    );
}

/// Decision 30: a request to an origin a public MCP server's authorization server named
/// goes only to public addresses (`public_only`); the revocation requests built from
/// stored credentials too, so that a hostile AS cannot aim the logout POST (with the
/// refresh token and client secret) at a private address.
#[test]
fn revocation_for_a_public_server_is_public_only() {
    let json = r#"{"server_url": "https://mcp.example.com/mcp", "resource": "https://mcp.example.com/mcp",
      "issuer": "https://auth.example.com", "refresh_token": "r1", "access_token": "a1",
      "revocation_endpoint": "https://10.0.0.5/admin/revoke",
      "client": {"issuer": "https://auth.example.com", "client_id": "c1", "client_secret": "s3cr3t",
                 "auth_method": "client_secret_post", "source": "dcr"}}"#;
    let creds: Credentials = serde_json::from_str(json).unwrap();
    let requests = crate::auth::revocation_requests(&creds, false).unwrap();
    assert!(!requests.is_empty());
    for r in &requests {
        assert!(
            r.public_only,
            "revocation POST to {} (carrying tokens and the client secret) is not public_only",
            r.url.as_str()
        );
    }
}

/// `is_public` decides, after DNS resolution, whether the connector may reach an
/// address for a public MCP server's AS (decision 30). IPv4 addresses embedded in the
/// NAT64 well-known prefix 64:ff9b::/96 (RFC 6052; what DNS64 synthesises on IPv6-only
/// networks for ANY A record) reach the embedded IPv4 address through the translator,
/// so a private or link-local one must not count as public, as `::ffff:` ones do not.
#[test]
fn addresses_carrying_private_ipv4_ones_are_not_public() {
    for ip in [
        "64:ff9b::808:808",
        "2002:808:808::1",
        "8.8.8.8",
        "2606:4700::1111",
    ] {
        assert!(is_public(ip.parse().unwrap()), "{ip} is public");
    }
    for ip in [
        "64:ff9b::a9fe:a9fe",
        "64:ff9b::a00:5",
        "64:ff9b::c0a8:101",
        "64:ff9b::7f00:1",
        "64:ff9b:1::808:808",
        "2002:a00:5::1",
        "::a00:5",
        "2001:db8::1",
        "ff02::1",
        "0.1.2.3",
        "240.0.0.1",
        "224.0.0.1",
        "198.18.0.1",
    ] {
        assert!(
            !is_public(ip.parse().unwrap()),
            "{ip} (or the IPv4 address it carries) is not public"
        );
    }
}

/// `ClientRegistration::issuer` is "the issuer this registration belongs to (never used
/// with another)". Stored credentials whose registration belongs to another AS than the
/// tokens' issuer: the refresh path does not send that other AS's client id and secret
/// to this AS's token endpoint (it registers anew, as `ensure_client` does).
#[test]
fn refresh_never_uses_a_registration_of_another_issuer() {
    let json = format!(
        r#"{{"server_url": "{MCP}", "resource": "{MCP}", "issuer": "{AS}",
      "refresh_token": "r1",
      "client": {{"issuer": "https://other-as.example.com", "client_id": "other-client",
                 "client_secret": "other-secret", "auth_method": "client_secret_post", "source": "dcr"}}}}"#
    );
    let creds: Credentials = serde_json::from_str(&json).unwrap();
    let mut c = config();
    c.credentials = Some(creds);
    let mut a = new_auth(c);
    let t0 = Instant::ZERO;
    a.handle_unauthorized(t0, ["Bearer"]);
    answer(&mut a, t0, PRM_URL, resp(200, &prm_body(AS)));
    answer(&mut a, t0, AS, resp(200, &asm_value(AS).to_string()));
    while let Some(req) = a.poll_request() {
        let body = String::from_utf8(req.body.clone().unwrap_or_default()).unwrap();
        let headers = format!("{:?}", req.headers);
        assert!(
            !body.contains("other-secret")
                && !body.contains("other-client")
                && !headers.contains("Basic"),
            "credentials of https://other-as.example.com sent to {}: {body}",
            req.url.as_str()
        );
        if req.url.as_str().ends_with("/register") {
            a.handle_response(t0, req.id, resp(201, r#"{"client_id":"c1"}"#));
        } else {
            break;
        }
    }
}

use crate::fuzzing::auth_flow::ZeroSigner;

fn client_credentials_config() -> AuthConfig {
    let mut c = config();
    c.grant = Grant::ClientCredentials;
    c.identity = ClientIdentity::PreRegistered {
        client_id: "svc".into(),
        client_secret: Some("s3cr3t".into()),
        issuer: None,
    };
    c
}

fn form_of(req: &AuthRequest) -> Vec<(String, String)> {
    form::callback_params(&format!(
        "?{}",
        String::from_utf8(req.body.clone().unwrap_or_default()).unwrap()
    ))
    .unwrap()
}

fn nonce_refusal(nonce: &str) -> AuthResponse {
    AuthResponse {
        status: 400,
        headers: vec![("DPoP-Nonce".into(), nonce.into())],
        body: br#"{"error":"use_dpop_nonce"}"#.to_vec(),
    }
}

/// The nonce the DPoP proof of `req` carries.
fn proof_nonce(req: &AuthRequest) -> Option<String> {
    headers_nonce(&req.headers)
}

/// The nonce the DPoP proof among `headers` carries.
fn headers_nonce(headers: &[(String, String)]) -> Option<String> {
    let (_, proof) = headers.iter().find(|(n, _)| n == "DPoP")?;
    let claims = proof.split('.').nth(1)?;
    let bytes =
        base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, claims).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v["nonce"].as_str().map(str::to_owned)
}

/// RFC 9449 §8: an authorization server's nonce changes over time, and each token
/// request refused with `use_dpop_nonce` is sent again once with the new one. The
/// second flow of the same grant (a later `401`) must do so too, not only the first.
#[test]
fn a_later_flow_follows_a_new_dpop_nonce_too() {
    let mut c = client_credentials_config();
    c.dpop = Some(std::sync::Arc::new(ZeroSigner));
    let mut a = new_auth(c);
    let mut asm = asm_value(AS);
    asm["dpop_signing_alg_values_supported"] = json!(["ES256"]);
    let t0 = Instant::ZERO;
    let token = r#"{"access_token":"at","token_type":"DPoP","expires_in":3600}"#;
    a.handle_unauthorized(t0, ["Bearer"]);
    answer(&mut a, t0, PRM_URL, resp(200, &prm_body(AS)));
    answer(&mut a, t0, AS, resp(200, &asm.to_string()));
    answer(&mut a, t0, &format!("{AS}/token"), nonce_refusal("n1"));
    let retry = answer(&mut a, t0, &format!("{AS}/token"), resp(200, token));
    assert_eq!(proof_nonce(&retry).as_deref(), Some("n1"));
    assert!(events(&mut a).contains(&AuthEvent::Authorized));
    // An hour later the token is refused; the server has moved on to another nonce.
    let t1 = t0 + Duration::from_secs(3600);
    a.handle_unauthorized(t1, ["Bearer"]);
    answer(&mut a, t1, PRM_URL, resp(200, &prm_body(AS)));
    answer(&mut a, t1, &format!("{AS}/token"), nonce_refusal("n2"));
    let evs = events(&mut a);
    let retry = a.poll_request();
    assert!(
        retry.is_some(),
        "the second flow's use_dpop_nonce was not followed: {evs:?}"
    );
    assert_eq!(proof_nonce(&retry.unwrap()).as_deref(), Some("n2"));
}

/// RFC 9449 §9: a resource server's nonce is its own. A nonce the MCP server gave is in
/// the next proofs to its origin and in none to another; the origins kept are bounded,
/// the one given a nonce longest ago forgotten first.
#[test]
fn resource_nonces_are_kept_per_origin_and_bounded() {
    let json = format!(
        r#"{{"server_url": "{MCP}", "resource": "{MCP}", "issuer": "{AS}",
      "access_token": "at", "token_type": "DPoP"}}"#
    );
    let mut c = config();
    c.dpop = Some(std::sync::Arc::new(ZeroSigner));
    c.credentials = Some(serde_json::from_str(&json).unwrap());
    let mut a = new_auth(c);
    assert!(a.is_dpop_bound());
    let url = |u: &str| EndpointUrl::parse(u, false).unwrap();
    let nonce_to = |a: &mut Authorizer, u: &str| {
        headers_nonce(&a.request_headers(Instant::ZERO, "GET", &url(u)))
    };
    assert_eq!(nonce_to(&mut a, MCP), None);
    a.handle_resource_nonce(&url(MCP), "n1");
    a.handle_resource_nonce(&url(MCP), "");
    assert_eq!(
        nonce_to(&mut a, "https://mcp.example.com/other").as_deref(),
        Some("n1")
    );
    assert_eq!(nonce_to(&mut a, "https://elsewhere.example.com/mcp"), None);
    for i in 0..MAX_RESOURCE_NONCES {
        a.handle_resource_nonce(&url(&format!("https://s{i}.example.com/")), "x");
    }
    assert_eq!(a.rs_nonces.len(), MAX_RESOURCE_NONCES);
    assert_eq!(nonce_to(&mut a, MCP), None, "the oldest is forgotten");
    assert_eq!(
        nonce_to(&mut a, "https://s0.example.com/").as_deref(),
        Some("x")
    );
}

/// A step-up of a grant without a person asks for the union of the scopes asked for
/// before and the challenged ones (2026-07-28), as the authorization code grant does:
/// a token for the challenged scope alone would lose what the earlier requests needed,
/// and the two kinds of request would take turns being refused.
#[test]
fn a_client_credentials_step_up_keeps_the_earlier_scopes() {
    let mut a = new_auth(client_credentials_config());
    let t0 = Instant::ZERO;
    a.handle_unauthorized(t0, [r#"Bearer scope="mcp:read""#]);
    answer(&mut a, t0, PRM_URL, resp(200, &prm_body(AS)));
    answer(&mut a, t0, AS, resp(200, &asm_value(AS).to_string()));
    let req = answer(
        &mut a,
        t0,
        &format!("{AS}/token"),
        resp(200, r#"{"access_token":"at1","token_type":"Bearer"}"#),
    );
    let scope = |req: &AuthRequest| {
        form_of(req)
            .into_iter()
            .find(|(k, _)| k == "scope")
            .map(|(_, v)| v)
    };
    assert_eq!(scope(&req).as_deref(), Some("mcp:read"));
    assert!(events(&mut a).contains(&AuthEvent::Authorized));
    assert!(a.handle_insufficient_scope(
        t0,
        [r#"Bearer error="insufficient_scope", scope="mcp:write""#]
    ));
    answer(&mut a, t0, PRM_URL, resp(200, &prm_body(AS)));
    let req = a.poll_request().expect("a token request");
    assert_eq!(scope(&req).as_deref(), Some("mcp:read mcp:write"));
}

/// A registration response naming a client authentication the client cannot perform
/// (`private_key_jwt`: no key was registered) must not end the flow only after the
/// person approved, for want of a signing key: the client authenticates in a way it can
/// with what the server gave it (here the secret).
#[test]
fn a_registration_naming_an_unusable_auth_method_is_not_taken() {
    let mut a = new_auth(config());
    let t0 = Instant::ZERO;
    a.handle_unauthorized(t0, ["Bearer"]);
    answer(&mut a, t0, PRM_URL, resp(200, &prm_body(AS)));
    answer(&mut a, t0, AS, resp(200, &asm_value(AS).to_string()));
    answer(
        &mut a,
        t0,
        &format!("{AS}/register"),
        resp(
            201,
            r#"{"client_id":"c1","client_secret":"s1","token_endpoint_auth_method":"private_key_jwt"}"#,
        ),
    );
    let url = open_url(&events(&mut a)).expect("OpenUrl");
    let state = query_param(&url, "state").unwrap();
    let r = a.handle_callback(t0, &callback(&state, "&code=abc"));
    let evs = events(&mut a);
    let req = a.poll_request();
    assert!(
        r.is_ok() && req.is_some(),
        "approved code never redeemed: {r:?}, {evs:?}"
    );
    let req = req.unwrap();
    assert!(
        req.headers
            .iter()
            .any(|(n, v)| n == "Authorization" && v.starts_with("Basic ")),
        "{:?}",
        req.headers
    );
}

/// A `401` whose challenge names scopes beyond those the tokens were asked for (the
/// server now needs more): a refresh cannot widen the grant (RFC 6749 §6), so the
/// refreshed token would be refused again and the request fail without the person ever
/// being asked. The flow goes to a new authorization for the challenged scopes instead.
#[test]
fn a_401_asking_for_more_scope_is_not_answered_with_a_refresh() {
    let json = format!(
        r#"{{"server_url": "{MCP}", "resource": "{MCP}", "issuer": "{AS}",
      "refresh_token": "r1", "requested_scope": "mcp:read",
      "client": {{"issuer": "{AS}", "client_id": "c1", "auth_method": "none", "source": "dcr"}}}}"#
    );
    let mut c = config();
    c.credentials = Some(serde_json::from_str(&json).unwrap());
    let mut a = new_auth(c);
    let t0 = Instant::ZERO;
    a.handle_unauthorized(t0, [r#"Bearer scope="mcp:read mcp:admin""#]);
    answer(&mut a, t0, PRM_URL, resp(200, &prm_body(AS)));
    answer(&mut a, t0, AS, resp(200, &asm_value(AS).to_string()));
    let next = a.poll_request();
    let evs = events(&mut a);
    assert!(
        next.is_none(),
        "a refresh (or other request) instead of an authorization: {:?}",
        next.map(|r| String::from_utf8(r.body.unwrap_or_default()).unwrap())
    );
    let url = open_url(&evs).unwrap_or_else(|| panic!("no OpenUrl: {evs:?}"));
    assert_eq!(
        query_param(&url, "scope").as_deref(),
        Some("mcp:read mcp:admin")
    );
}

/// The same `401` naming only scopes already asked for is answered with a refresh.
#[test]
fn a_401_within_the_scopes_asked_for_refreshes() {
    let json = format!(
        r#"{{"server_url": "{MCP}", "resource": "{MCP}", "issuer": "{AS}",
      "refresh_token": "r1", "requested_scope": "mcp:read mcp:admin",
      "client": {{"issuer": "{AS}", "client_id": "c1", "auth_method": "none", "source": "dcr"}}}}"#
    );
    let mut c = config();
    c.credentials = Some(serde_json::from_str(&json).unwrap());
    let mut a = new_auth(c);
    let t0 = Instant::ZERO;
    a.handle_unauthorized(t0, [r#"Bearer scope="mcp:admin""#]);
    answer(&mut a, t0, PRM_URL, resp(200, &prm_body(AS)));
    answer(&mut a, t0, AS, resp(200, &asm_value(AS).to_string()));
    let req = a.poll_request().expect("a refresh");
    let body = String::from_utf8(req.body.unwrap_or_default()).unwrap();
    assert!(body.contains("grant_type=refresh_token"), "{body}");
}
