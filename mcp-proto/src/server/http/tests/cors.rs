//! Browser pages of accepted origins: preflights answered, responses readable.

use super::streams::with_sessions;
use super::*;

const PAGE: &str = "http://localhost:6274";

fn preflight(origin: &str, headers: Option<&str>) -> HttpRequest {
    let mut r = HttpRequest::new("OPTIONS", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Origin", origin)
        .with_header("Access-Control-Request-Method", "POST");
    if let Some(h) = headers {
        r = r.with_header("Access-Control-Request-Headers", h);
    }
    r
}

/// Every `(name, value)` of `name` in `r` (several `Vary` lines may be there).
fn all<'a>(r: &'a HttpResponse, name: &str) -> Vec<&'a str> {
    r.headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_ref())
        .collect()
}

/// A preflight from an accepted origin is `204` with what the browser asks for (the
/// headers it names, `Mcp-Param-*` ones included), before the gate and on any path;
/// from another origin it is `403` with no CORS header; garbage in the asked headers is
/// not echoed. It used to be `405` for every origin, so no browser page could `POST`.
#[test]
fn a_preflight_from_an_accepted_origin_is_allowed() {
    let seen = std::sync::Arc::default();
    let mut ep = HttpEndpoint::new(example::server());
    ep.set_gate(Box::new(BearerGate {
        seen: std::sync::Arc::clone(&seen),
    }));
    let asked = "content-type, mcp-protocol-version, mcp-method, mcp-name, mcp-param-region";
    let r = complete(ep.handle_request(now(), &preflight(PAGE, Some(asked))));
    assert_eq!(r.status, 204, "{r:?}");
    assert_eq!(all(&r, "access-control-allow-origin"), [PAGE]);
    assert_eq!(
        r.header("access-control-allow-methods"),
        Some("GET, POST, DELETE")
    );
    assert_eq!(r.header("access-control-allow-headers"), Some(asked));
    assert_eq!(r.header("access-control-max-age"), Some("600"));
    assert!(r.body.is_empty());
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 0, "gated");
    let elsewhere = HttpRequest::new("OPTIONS", "/.well-known/oauth-protected-resource")
        .with_header("Host", "127.0.0.1")
        .with_header("Origin", PAGE)
        .with_header("Access-Control-Request-Method", "GET");
    assert_eq!(complete(ep.handle_request(now(), &elsewhere)).status, 204);
    let r = complete(ep.handle_request(now(), &preflight(PAGE, None)));
    assert!(r.header("access-control-allow-headers").is_none());
    assert!(r.header("access-control-allow-private-network").is_none());
    let private =
        preflight(PAGE, None).with_header("Access-Control-Request-Private-Network", "true");
    let r = complete(ep.handle_request(now(), &private));
    assert_eq!(
        r.header("access-control-allow-private-network"),
        Some("true")
    );
    let r = complete(ep.handle_request(now(), &preflight(PAGE, Some("x-a, bad header"))));
    assert_eq!(r.status, 204);
    assert_eq!(r.header("access-control-allow-headers"), None);
    let r = complete(ep.handle_request(now(), &preflight("https://evil.example", Some(asked))));
    assert_eq!(r.status, 403);
    assert!(all(&r, "access-control-allow-origin").is_empty(), "{r:?}");
    // Not a preflight: an `OPTIONS` without `Origin` is served as before (gated, then
    // `405`).
    let plain = HttpRequest::new("OPTIONS", "/mcp").with_header("Host", "127.0.0.1");
    assert_eq!(complete(ep.handle_request(now(), &plain)).status, 401);
    let mut open = HttpEndpoint::new(example::server());
    assert_eq!(complete(open.handle_request(now(), &plain)).status, 405);
}

/// A response to a page of an accepted origin names it and exposes the headers a client
/// reads (the session id, an authorization challenge); so do the gate's `401` and the
/// head of an SSE stream. Without `Origin`, no CORS header.
#[test]
fn responses_to_an_accepted_origin_are_readable() {
    let mut ep = with_sessions(HttpEndpointConfig::default());
    let init = post(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}}),
        &[("Origin", PAGE)],
    );
    let r = complete(ep.handle_request(now(), &init));
    assert_eq!(r.status, 200);
    assert_eq!(all(&r, "access-control-allow-origin"), [PAGE]);
    let exposed = r.header("access-control-expose-headers").unwrap();
    for name in ["Mcp-Session-Id", "WWW-Authenticate"] {
        assert!(exposed.contains(name), "{exposed}");
    }
    assert_eq!(all(&r, "vary"), ["Origin"]);
    let session = r.header("mcp-session-id").unwrap().to_owned();
    let get = HttpRequest::new("GET", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Origin", PAGE)
        .with_header("Accept", "text/event-stream")
        .with_header("Mcp-Session-Id", &session)
        .with_header("MCP-Protocol-Version", "2025-11-25");
    let s = stream(ep.handle_request(now(), &get));
    let mut head = Vec::new();
    s.write_head(&mut head);
    let head = String::from_utf8_lossy(&head);
    assert!(
        head.contains(&format!("Access-Control-Allow-Origin: {PAGE}\r\n")),
        "{head}"
    );
    let bare = post(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}), &[]);
    let r = complete(ep.handle_request(now(), &bare));
    assert!(all(&r, "access-control-allow-origin").is_empty(), "{r:?}");

    let mut gated = HttpEndpoint::new(example::server());
    gated.set_gate(Box::new(BearerGate {
        seen: std::sync::Arc::default(),
    }));
    let discover = modern(1, "server/discover", json!({}), None).with_header("Origin", PAGE);
    let r = complete(gated.handle_request(now(), &discover));
    assert_eq!(r.status, 401);
    assert_eq!(all(&r, "access-control-allow-origin"), [PAGE]);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    // A gate that writes its own CORS headers keeps them, not doubled.
    let mut own = HttpEndpoint::new(example::server());
    own.set_gate(Box::new(OwnCors));
    let r = complete(own.handle_request(now(), &discover));
    assert_eq!(all(&r, "access-control-allow-origin"), ["*"]);
}

/// A gate that answers every request itself, with its own CORS header.
#[derive(Debug)]
struct OwnCors;

impl RequestGate for OwnCors {
    fn check(&mut self, _now: Instant, _request: &HttpRequest) -> GateVerdict {
        GateVerdict::Answer(HttpResponse::new(401).with_header("Access-Control-Allow-Origin", "*"))
    }
}
