//! How the flow answers refusals that another authorization cannot mend, or that must
//! not be tried again forever: refreshes refused with an error other than
//! `invalid_grant` (or failing for a while), and `403 insufficient_scope` naming no
//! scope beyond those already held.

use super::*;

const MCP: &str = "https://mcp.example.com/mcp";
const PRM_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const AS: &str = "https://auth.example.com";
const REDIRECT: &str = "http://127.0.0.1:3333/callback";

fn resp(status: u16, body: &str) -> AuthResponse {
    AuthResponse {
        status,
        headers: vec![],
        body: body.as_bytes().to_vec(),
    }
}

fn asm() -> String {
    json!({
        "issuer": AS,
        "authorization_endpoint": format!("{AS}/authorize"),
        "token_endpoint": format!("{AS}/token"),
        "registration_endpoint": format!("{AS}/register"),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    })
    .to_string()
}

/// An authorizer holding a refresh token (and a refused access token) from a client
/// registered by `source`, granted `granted`.
fn holding(source: &str, granted: &str) -> Authorizer {
    let json = format!(
        r#"{{"server_url": "{MCP}", "resource": "{MCP}", "issuer": "{AS}",
      "access_token": "at0", "refresh_token": "r1", "requested_scope": "{granted}",
      "granted_scope": "{granted}",
      "client": {{"issuer": "{AS}", "client_id": "c1", "auth_method": "none",
                  "source": "{source}"}}}}"#
    );
    let mut c = AuthConfig::new(REDIRECT, [9; 32]);
    c.credentials = Some(serde_json::from_str(&json).unwrap());
    let url = EndpointUrl::parse(MCP, false).unwrap();
    Authorizer::new(c, &url, Instant::ZERO, 1_700_000_000)
}

fn events(a: &mut Authorizer) -> Vec<AuthEvent> {
    std::iter::from_fn(|| a.poll_event()).collect()
}

/// Answers the next request, which must go to a URL starting with `prefix`.
fn answer(a: &mut Authorizer, prefix: &str, r: AuthResponse) -> AuthRequest {
    let req = a
        .poll_request()
        .unwrap_or_else(|| panic!("no request for {prefix}"));
    assert!(req.url.as_str().starts_with(prefix), "{}", req.url.as_str());
    a.handle_response(Instant::ZERO, req.id, r);
    req
}

fn body(req: &AuthRequest) -> String {
    String::from_utf8(req.body.clone().unwrap_or_default()).unwrap()
}

/// A `401` runs discovery up to the refresh, which `refusal` answers; returns the
/// refresh request.
fn refresh_refused(a: &mut Authorizer, refusal: AuthResponse) -> AuthRequest {
    a.handle_unauthorized(Instant::ZERO, ["Bearer"]);
    answer(
        a,
        PRM_URL,
        resp(
            200,
            &format!(r#"{{"resource":"{MCP}","authorization_servers":["{AS}"]}}"#),
        ),
    );
    answer(a, AS, resp(200, &asm()));
    let req = a.poll_request().expect("a refresh");
    assert!(
        body(&req).contains("grant_type=refresh_token"),
        "{}",
        body(&req)
    );
    a.handle_response(Instant::ZERO, req.id, refusal);
    req
}

/// A refresh refused with an OAuth error other than `invalid_grant`, by a client whose
/// registration cannot be made again (pre-registered, CIMD), or answered with a
/// malformed success: the refresh token is dropped (and the change reported), never
/// sent again by a later flow.
#[test]
fn a_definitive_refresh_failure_drops_the_refresh_token() {
    let cases = [
        ("pre-registered", resp(400, r#"{"error":"invalid_client"}"#)),
        ("cimd", resp(401, r#"{"error":"invalid_client"}"#)),
        ("cimd", resp(400, r#"{"error":"unauthorized_client"}"#)),
        ("dcr", resp(400, r#"{"error":"unsupported_grant_type"}"#)),
        ("dcr", resp(400, r#"{"error":"invalid_request"}"#)),
        ("dcr", resp(200, r#"{"token_type":"Bearer"}"#)),
        (
            "dcr",
            resp(200, r#"{"access_token":"x","token_type":"mac"}"#),
        ),
        ("dcr", resp(404, "not here")),
    ];
    for (source, refusal) in cases {
        let what = format!(
            "{source} {} {}",
            refusal.status,
            String::from_utf8_lossy(&refusal.body)
        );
        let mut a = holding(source, "mcp:read");
        refresh_refused(&mut a, refusal);
        assert_eq!(
            a.credentials().refresh_token,
            None,
            "{what}: refresh token kept"
        );
        let evs = events(&mut a);
        assert!(
            evs.iter().any(
                |e| matches!(e, AuthEvent::CredentialsChanged(c) if c.refresh_token.is_none())
            ),
            "{what}: the dropped refresh token is not reported: {evs:?}"
        );
        // Whatever comes next (a new authorization, or the failure), the next flow
        // never refreshes with it.
        a.abandon(Instant::ZERO, "test");
        events(&mut a);
        a.handle_unauthorized(Instant::ZERO, ["Bearer"]);
        while let Some(req) = a.poll_request() {
            assert!(
                !body(&req).contains("refresh_token"),
                "{what}: refreshed again"
            );
            let r = if req.url.as_str().starts_with(PRM_URL) {
                resp(
                    200,
                    &format!(r#"{{"resource":"{MCP}","authorization_servers":["{AS}"]}}"#),
                )
            } else {
                resp(200, &asm())
            };
            a.handle_response(Instant::ZERO, req.id, r);
        }
    }
}

/// A refresh that fails for a cause that may pass (a 5xx, `server_error`,
/// `temporarily_unavailable`) keeps the refresh token, but not forever: after
/// [`MAX_REFRESH_FAILURES`] such failures in a row it is dropped, and the next flow
/// asks for a new authorization.
#[test]
fn transient_refresh_failures_keep_the_refresh_token_a_bounded_number_of_times() {
    let failures = [
        resp(503, "busy"),
        resp(500, r#"{"error":"server_error"}"#),
        resp(400, r#"{"error":"temporarily_unavailable"}"#),
    ];
    let mut a = holding("dcr", "mcp:read");
    let mut refreshes = 0;
    for i in 0..10 {
        a.handle_unauthorized(Instant::ZERO, ["Bearer"]);
        let mut refreshed = false;
        while let Some(req) = a.poll_request() {
            let r = if req.url.as_str().starts_with(PRM_URL) {
                resp(
                    200,
                    &format!(r#"{{"resource":"{MCP}","authorization_servers":["{AS}"]}}"#),
                )
            } else if req.url.as_str().ends_with("/token") {
                refreshed = true;
                refreshes += 1;
                failures[i % failures.len()].clone()
            } else {
                resp(200, &asm())
            };
            a.handle_response(Instant::ZERO, req.id, r);
        }
        let evs = events(&mut a);
        if !refreshed {
            assert!(a.awaits_approval(), "{evs:?}");
            break;
        }
        assert!(
            matches!(
                evs.last(),
                Some(AuthEvent::Failed(AuthError::TokenRefused(_)))
            ),
            "{evs:?}"
        );
        if refreshes < MAX_REFRESH_FAILURES {
            assert_eq!(a.credentials().refresh_token.as_deref(), Some("r1"));
        }
    }
    assert_eq!(refreshes, MAX_REFRESH_FAILURES, "refreshes tried");
    assert_eq!(a.credentials().refresh_token, None);
}

/// A `403 insufficient_scope` that names no scope, or only scopes already granted,
/// cannot be mended by asking the person again for the same scopes: no flow starts,
/// and the request fails at once with [`AuthError::ScopeNotGrantable`].
#[test]
fn a_step_up_naming_nothing_new_asks_for_nothing() {
    for challenge in [
        r#"Bearer error="insufficient_scope""#,
        r#"Bearer error="insufficient_scope", scope="mcp:read""#,
        r#"Bearer error="insufficient_scope", scope="mcp:write mcp:read""#,
    ] {
        let mut a = holding("dcr", "mcp:read mcp:write");
        assert!(a.handle_insufficient_scope(Instant::ZERO, [challenge]));
        assert!(!a.is_busy(), "{challenge}: a flow started");
        assert!(a.poll_request().is_none(), "{challenge}");
        let evs = events(&mut a);
        assert!(
            matches!(
                evs.as_slice(),
                [AuthEvent::Failed(AuthError::ScopeNotGrantable { .. })]
            ),
            "{challenge}: {evs:?}"
        );
        // The token held stays: it is good for what it was granted.
        assert_eq!(a.authorization().as_deref(), Some("Bearer at0"));
    }
    // A scope beyond those granted still steps up.
    let mut a = holding("dcr", "mcp:read");
    assert!(a.handle_insufficient_scope(
        Instant::ZERO,
        [r#"Bearer error="insufficient_scope", scope="mcp:write""#]
    ));
    assert!(a.is_busy());
}

/// A refresh answered without `scope` keeps the grant the refreshed token had (RFC 6749
/// §6: a refresh that names no scope asks for the scope originally granted), not the
/// wider one first asked for: a grant narrowed by the authorization server stays
/// narrowed, so a later `403` for a scope it left out still asks the person for it.
#[test]
fn a_refresh_without_scope_keeps_a_narrowed_grant() {
    let mut a = holding("dcr", "mcp:read");
    a.creds.requested_scope = Some("mcp:read mcp:write".into());
    a.requested = split_scope("mcp:read mcp:write");
    refresh_refused(
        &mut a,
        resp(
            200,
            r#"{"access_token":"at1","token_type":"Bearer","expires_in":3600}"#,
        ),
    );
    assert_eq!(a.authorization().as_deref(), Some("Bearer at1"));
    assert_eq!(a.credentials().granted_scope.as_deref(), Some("mcp:read"));
    events(&mut a);
    // `mcp:write` was never granted: a step-up asks for it.
    assert!(a.handle_insufficient_scope(
        Instant::ZERO,
        [r#"Bearer error="insufficient_scope", scope="mcp:write""#]
    ));
    assert!(a.is_busy(), "{:?}", events(&mut a));
}
