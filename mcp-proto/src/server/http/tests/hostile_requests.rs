//! Requests a hostile or careless client may send: a version header nobody serves on
//! notifications, responses and `DELETE`; `Accept` split over lines, as a range, or
//! refused with `q=0`; an `Mcp-Name` for a body that names nothing; an empty port after
//! a bracketed host.

use super::streams::{open_session, with_sessions};
use super::*;

/// The status of a reply; a stream is cancelled once looked at.
fn status_of(ep: &mut HttpEndpoint, reply: HttpReply) -> u16 {
    match reply {
        HttpReply::Complete(r) => r.status,
        HttpReply::Stream(s) => {
            let status = s.response().status;
            ep.cancel_stream(now(), &s);
            status
        }
    }
}

/// `MCP-Protocol-Version` on every request after initialize, and an invalid or
/// unsupported value gets 400: a notification, a posted JSON-RPC response and a
/// `DELETE` in a session, each naming a version nobody serves, are refused (and the
/// session is not ended).
#[test]
fn a_version_nobody_serves_is_refused_on_notifications_responses_and_delete() {
    let mut ep = with_sessions(HttpEndpointConfig::default());
    let s = open_session(&mut ep, "2025-11-25");
    let bogus = [
        ("Mcp-Session-Id", s.as_str()),
        ("MCP-Protocol-Version", "1999-01-01"),
    ];
    let note = post(
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        &bogus,
    );
    let n = {
        let reply = ep.handle_request(now(), &note);
        status_of(&mut ep, reply)
    };
    let answer = post(&json!({"jsonrpc": "2.0", "id": "x", "result": {}}), &bogus);
    let r = {
        let reply = ep.handle_request(now(), &answer);
        status_of(&mut ep, reply)
    };
    let del = HttpRequest::new("DELETE", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Mcp-Session-Id", &s)
        .with_header("MCP-Protocol-Version", "1999-01-01");
    let d = {
        let reply = ep.handle_request(now(), &del);
        status_of(&mut ep, reply)
    };
    assert_eq!(
        (n, r, d),
        (400, 400, 400),
        "notification, posted response, DELETE with MCP-Protocol-Version: 1999-01-01"
    );
    let ping = post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        &[("Mcp-Session-Id", s.as_str())],
    );
    let reply = ep.handle_request(now(), &ping);
    assert_eq!(status_of(&mut ep, reply), 200, "the session lives on");
}

/// RFC 9110 5.3 / 12.5.1: `Accept` is a list field (a client may split it over several
/// field lines), `text/*` matches `text/event-stream`, and `q=0` means "not acceptable"
/// (the most specific range decides).
#[test]
fn the_get_streams_accept_is_read_as_a_list_with_ranges_and_weights() {
    let mut ep = with_sessions(HttpEndpointConfig::default());
    let s = open_session(&mut ep, "2025-11-25");
    let mut seen = Vec::new();
    for (accepts, want) in [
        (&["application/json", "text/event-stream"][..], 200),
        (&["text/*"][..], 200),
        (&["text/event-stream;q=0"][..], 406),
    ] {
        let mut r = HttpRequest::new("GET", "/mcp").with_header("Host", "127.0.0.1");
        for a in accepts {
            r = r.with_header("Accept", a);
        }
        let r = r.with_header("Mcp-Session-Id", &s);
        let got = {
            let reply = ep.handle_request(now(), &r);
            status_of(&mut ep, reply)
        };
        seen.push((accepts.to_vec(), want, got));
    }
    assert!(
        seen.iter().all(|(_, want, got)| want == got),
        "(Accept lines, expected, got): {seen:?}"
    );
}

/// Spec 5.5: reject with 400 and -32020 when a header value differs from the body: an
/// `Mcp-Name` naming something while the body names nothing (no `name`, a non-string
/// `name`, no `uri`) differs too.
#[test]
fn an_mcp_name_for_a_body_that_names_nothing_is_a_mismatch() {
    let mut ep = endpoint();
    let mut seen = Vec::new();
    for (method, params, name) in [
        ("tools/call", json!({"arguments": {}}), "add"),
        ("tools/call", json!({"name": 7, "arguments": {}}), "7"),
        ("resources/read", json!({}), "file:///x"),
    ] {
        let r = complete(ep.handle_request(now(), &modern(9, method, params, Some(name))));
        seen.push((method, r.status, error_code(&r)));
    }
    assert!(
        seen.iter()
            .all(|&(_, status, code)| (status, code) == (400, -32020)),
        "(method, status, code): {seen:?}"
    );
}

/// The status of a `ping` sent with each `Host` in `hosts` to an endpoint whose hosts
/// are restricted for a server bound to `bound`.
fn host_statuses<'a>(bound: &str, hosts: &[&'a str]) -> Vec<(&'a str, u16)> {
    let mut config = HttpEndpointConfig::default();
    config.restrict_hosts_for(bound.parse().unwrap());
    let mut ep = HttpEndpoint::with_config(example::server(), config);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let mut seen = Vec::new();
    for &host in hosts {
        let r = HttpRequest::new("POST", "/mcp")
            .with_header("Host", host)
            .with_header("Content-Type", "application/json")
            .with_body(serde_json::to_vec(&ping).unwrap());
        seen.push((host, complete(ep.handle_request(now(), &r)).status));
    }
    seen
}

/// RFC 9110 7.2 / RFC 3986 3.2.3: `Host = uri-host [ ":" port ]`, `port = *DIGIT`, so
/// an empty port is valid, after a name and after a bracketed address alike.
#[test]
fn an_empty_port_is_accepted_after_any_allowed_host() {
    let seen = host_statuses("127.0.0.1", &["127.0.0.1:", "localhost:", "[::1]:"]);
    assert!(seen.iter().all(|(_, s)| *s == 200), "{seen:?}");
}

/// Every address of 127.0.0.0/8 is loopback, and a server may be bound to any of them
/// (127.0.0.2, to sit beside another on the same port): its own address, the one its
/// clients connect to, is a `Host` it answers to, beside the loopback names.
#[test]
fn a_server_bound_to_another_loopback_address_answers_to_it() {
    let hosts = [
        "127.0.0.2:8080",
        "127.0.0.2",
        "localhost:8080",
        "evil.example:8080",
    ];
    assert_eq!(
        host_statuses("127.0.0.2", &hosts),
        [
            ("127.0.0.2:8080", 200),
            ("127.0.0.2", 200),
            ("localhost:8080", 200),
            ("evil.example:8080", 403)
        ]
    );
}

/// `::ffff:127.0.0.1` is 127.0.0.1 written as IPv6: a server bound to it is on loopback,
/// and names outside the loopback ones and its own are refused as they are for 127.0.0.1.
#[test]
fn a_server_bound_to_an_ipv4_mapped_loopback_address_checks_host() {
    let hosts = [
        "[::ffff:127.0.0.1]:8080",
        "127.0.0.1:8080",
        "evil.example:8080",
    ];
    assert_eq!(
        host_statuses("::ffff:127.0.0.1", &hosts),
        [
            ("[::ffff:127.0.0.1]:8080", 200),
            ("127.0.0.1:8080", 200),
            ("evil.example:8080", 403)
        ]
    );
}
