//! What `Debug` shows of the credentials an endpoint holds or is handed: an operator's
//! log of the endpoint or of a request is no place for a client's token or session id.

use super::streams::{open_session, with_sessions_seeded};
use super::*;

#[test]
fn endpoint_debug_shows_no_session_id() {
    let mut ep = with_sessions_seeded(HttpEndpointConfig::default(), &[7; 32]);
    let ids = [
        open_session(&mut ep, "2025-11-25"),
        open_session(&mut ep, "2025-06-18"),
    ];
    for shown in [format!("{ep:?}"), format!("{ep:#?}")] {
        for id in &ids {
            assert!(!shown.contains(id.as_str()), "{id} shown: {shown:.3000}");
        }
    }
}

#[test]
fn request_debug_hides_credentials() {
    let mut r = HttpRequest::new("POST", "/mcp?api_key=querysecret&page=2&ghp_baresecret")
        .with_header("Host", "127.0.0.1")
        .with_body(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec());
    for (n, v) in [
        ("Authorization", "Bearer bearersecret"),
        ("Mcp-Session-Id", "sessionsecret"),
        ("Cookie", "sid=cookiesecret"),
        ("X-Api-Key", "keysecret"),
        ("MCP-Protocol-Version", "2025-11-25"),
    ] {
        r = r.with_header(n, v);
    }
    let shown = format!("{r:?}");
    for secret in [
        "bearersecret",
        "sessionsecret",
        "cookiesecret",
        "keysecret",
        "querysecret",
        "baresecret",
    ] {
        assert!(!shown.contains(secret), "{secret} shown: {shown}");
    }
    // Header names, the values of other headers and the body are shown; of the query,
    // the names.
    for kept in [
        "Authorization",
        "Mcp-Session-Id",
        "MCP-Protocol-Version",
        "2025-11-25",
        "api_key=",
        "&page=",
        "tools/list",
    ] {
        assert!(shown.contains(kept), "{kept} missing: {shown}");
    }
}

#[test]
fn server_debug_shows_no_task_id_key() {
    let seed = [9; 32];
    let key = crate::auth::crypto::hmac_sha256(&seed, &[b"task id key"]);
    let mut server = crate::server::example::server();
    server.seed_tasks(seed, 0);
    let shown = format!("{server:?}");
    assert!(
        !shown.contains(&format!("{key:?}")),
        "the key shown: {shown:.3000}"
    );
    // Keyed by an endpoint given entropy, too.
    let ep = with_sessions_seeded(HttpEndpointConfig::default(), &seed);
    let key = crate::auth::crypto::hmac_sha256(
        &crate::auth::crypto::hmac_sha256(&seed, &[b"endpoint tasks"]),
        &[b"task id key"],
    );
    let shown = format!("{ep:?}");
    assert!(
        !shown.contains(&format!("{key:?}")),
        "the key shown: {shown:.3000}"
    );
    assert!(shown.contains("<redacted>"), "{shown:.3000}");
}

#[test]
fn response_debug_hides_the_session_id_it_hands_out() {
    let mut ep = with_sessions_seeded(HttpEndpointConfig::default(), &[7; 32]);
    let init = post(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        &[],
    );
    let mut r = complete(ep.handle_request(now(), &init));
    r.headers
        .push(("Set-Cookie".into(), "sid=cookiesecret".into()));
    r.headers
        .push(("WWW-Authenticate".into(), r#"Bearer scope="shown""#.into()));
    let id = r.header("mcp-session-id").expect("a session").to_owned();
    for shown in [format!("{r:?}"), format!("{r:#?}")] {
        for secret in [id.as_str(), "cookiesecret"] {
            assert!(!shown.contains(secret), "{secret} shown: {shown}");
        }
        assert!(shown.contains("Mcp-Session-Id") || shown.contains("mcp-session-id"));
        assert!(shown.contains("200") && shown.contains("scope="), "{shown}");
    }
}
