//! The blocking client over Streamable HTTP, against a tiny local server on 127.0.0.1
//! that serves the bundled example server (see `http_support`).

mod http_support;

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_support::{Behavior, Eras, TestServer};
use mcp_blocking::TransportErrorKind;
use mcp_blocking::mcp_proto::client::{CallError, CallRequest, ClientConfig, CloseReason};
use mcp_blocking::mcp_proto::{Era, EraMode, ProtocolVersion};
use mcp_blocking::{Client, Direction, EraCache, Error, HttpOptions, Options};
use serde_json::json;

fn config() -> ClientConfig {
    ClientConfig::new("http-test", "0")
}

/// Waits up to 2 s for `done`.
fn wait_for(done: impl Fn() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn connect(server: &TestServer) -> Client {
    Client::connect_http(&server.url(), config()).expect("connect")
}

#[test]
fn modern_connect_list_and_call() {
    let server = TestServer::start(Behavior::default());
    let mut client = connect(&server);
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.server_name(), "mcp-example");
    let names: Vec<String> = client
        .list_tools()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"add".to_owned()), "{names:?}");
    let sum = client.call_tool("add", json!({"a": 2, "b": 3})).unwrap();
    assert_eq!(sum.text(), "5");
    assert!(client.excluded_tools().is_empty());
    assert!(client.endpoint().is_some());
    client.close();

    let seen = server.seen();
    assert_eq!(seen[0].rpc_method(), "server/discover");
    let call = seen
        .iter()
        .find(|r| r.rpc_method() == "tools/call")
        .unwrap();
    assert_eq!(call.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(call.header("mcp-method"), Some("tools/call"));
    assert_eq!(call.header("mcp-name"), Some("add"));
    assert!(
        seen.iter().all(|r| r.method == "POST"),
        "modern is POST only"
    );
    assert!(seen.iter().all(|r| r.header("mcp-session-id").is_none()));
}

#[test]
fn legacy_server_falls_back_and_keeps_its_session() {
    let server = TestServer::start(Behavior {
        eras: Eras::Legacy,
        ..Behavior::default()
    });
    let mut client = connect(&server);
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(client.http_session_id().as_deref(), Some("session-1"));
    assert_eq!(
        client
            .call_tool("echo", json!({"text": "hi"}))
            .unwrap()
            .text(),
        "hi"
    );
    assert!(!client.list_tools().unwrap().is_empty());
    // The GET for the server's own stream goes out on a connection of its own, in
    // parallel with the calls: give it a moment to arrive before closing aborts it.
    wait_for(|| server.seen().iter().any(|r| r.method == "GET"));
    client.close();

    let seen = server.seen();
    let methods: Vec<&str> = seen.iter().map(|r| r.rpc_method()).collect();
    assert_eq!(
        &methods[..2],
        ["server/discover", "initialize"],
        "{methods:?}"
    );
    let call = seen
        .iter()
        .find(|r| r.rpc_method() == "tools/call")
        .unwrap();
    assert_eq!(call.header("mcp-session-id"), Some("session-1"));
    assert_eq!(call.header("mcp-protocol-version"), Some("2025-11-25"));
    assert!(
        seen.iter().any(|r| r.method == "GET"),
        "the server stream is asked for"
    );
    assert!(
        seen.iter()
            .any(|r| r.method == "DELETE" && r.header("mcp-session-id") == Some("session-1")),
        "closing ends the session"
    );
}

/// A legacy client whose server keeps no session (so there is no `GET` stream) and whose
/// connections all went idle is idle, not gone: a wait for a notification ends with
/// nothing, and the next call opens a connection. (The wait closed the client once its
/// last connection expired: a CLI `listen` ended after 30 s with exit 0.)
#[test]
fn an_idle_legacy_client_without_connections_stays_usable() {
    let server = TestServer::start(Behavior {
        eras: Eras::Legacy,
        session: false,
        ..Behavior::default()
    });
    let http = HttpOptions::new().idle_timeout(Duration::from_millis(50));
    let mut client =
        Client::connect_http_with(&server.url(), config(), Options::new(), http).unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert!(
        !client.machine().hears_server(),
        "no session: the server cannot reach the client"
    );
    assert!(
        client
            .next_notification(Duration::from_millis(300))
            .is_none()
    );
    assert!(!client.is_closed(), "{:?}", client.close_reason());
    let echoed = client.call_tool("echo", json!({"text": "hi"})).unwrap();
    assert_eq!(echoed.text(), "hi");
    assert!(client.http_connections_opened() >= 2);
}

#[test]
fn legacy_era_mode_skips_the_probe() {
    let server = TestServer::start(Behavior::default());
    let mut client =
        Client::connect_http(&server.url(), config().era_mode(EraMode::Legacy)).unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(
        client
            .call_tool("add", json!({"a": 1, "b": 1}))
            .unwrap()
            .text(),
        "2"
    );
    drop(client);
    assert!(
        server
            .seen()
            .iter()
            .all(|r| r.rpc_method() != "server/discover")
    );
}

#[test]
fn sse_responses_work_too() {
    let server = TestServer::start(Behavior {
        sse: true,
        ..Behavior::default()
    });
    let mut client = connect(&server);
    assert_eq!(
        client
            .call_tool("add", json!({"a": 4, "b": 5}))
            .unwrap()
            .text(),
        "9"
    );
    assert_eq!(
        server.accepted(),
        1,
        "chunked SSE responses keep the connection"
    );
}

#[test]
fn sequential_calls_share_one_connection() {
    let server = TestServer::start(Behavior::default());
    let mut client = connect(&server);
    for i in 0..5 {
        let out = client.call_tool("add", json!({"a": i, "b": 1})).unwrap();
        assert_eq!(out.text(), (i + 1).to_string());
    }
    client.list_tools().unwrap();
    assert_eq!(server.accepted(), 1, "keep-alive: one TCP connection");
    assert_eq!(client.http_connections_opened(), 1);
    assert_eq!(client.http_retries(), 0);
    // The probe, the listing the machine makes before the first `tools/call` (to learn
    // the tools' `x-mcp-header` declarations) and 5 calls; the caller's listing comes
    // from the list cache (the example server's `ttlMs` is 60 s).
    let methods: Vec<String> = server
        .seen()
        .iter()
        .map(|r| r.rpc_method().to_owned())
        .collect();
    assert_eq!(methods.len(), 7, "{methods:?}");
    assert_eq!(
        &methods[..2],
        ["server/discover", "tools/list"],
        "{methods:?}"
    );
    assert_eq!(methods.iter().filter(|m| *m == "tools/call").count(), 5);
}

#[test]
fn a_server_closing_idle_connections_loses_no_request() {
    let server = TestServer::start(Behavior {
        close_after_response: true,
        ..Behavior::default()
    });
    // Every listing must reach the server here: no list cache.
    let mut limits = mcp_blocking::mcp_proto::Limits::default();
    limits.max_cache_entries = 0;
    let mut client = Client::connect_http(&server.url(), config().limits(limits)).expect("connect");
    for i in 0..4 {
        // A listing right after the last answer races the server's close, and is sent
        // again when it loses. A tool call is never sent twice (it may have run), so it
        // goes once the close has been seen.
        assert!(!client.list_tools().unwrap().is_empty());
        std::thread::sleep(Duration::from_millis(60));
        let out = client.call_tool("add", json!({"a": i, "b": 10})).unwrap();
        assert_eq!(out.text(), (i + 10).to_string());
    }
    let retries = client.http_retries();
    client.close();
    // Whether a listing lost the race is up to the scheduler (the retry itself is pinned
    // by the simulations): at most one retry each.
    assert!(retries <= 4, "{retries} retries");
    // Each request was answered exactly once: the probe, 4 listings (the first of them
    // also tells the machine the tools' header declarations) and 4 calls.
    let seen = server.seen();
    assert_eq!(seen.len(), 9, "no request executed twice");
    assert_eq!(seen[1].rpc_method(), "tools/list");
    let calls: Vec<&serde_json::Value> = seen
        .iter()
        .filter(|r| r.rpc_method() == "tools/call")
        .map(|r| &r.body["params"]["arguments"]["a"])
        .collect();
    assert_eq!(calls, [&json!(0), &json!(1), &json!(2), &json!(3)]);
}

#[test]
fn connection_refused_is_a_typed_error() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let err = Client::connect_http(&format!("http://127.0.0.1:{port}/mcp"), config()).unwrap_err();
    let Error::Transport(t) = &err else {
        panic!("expected a transport error, got {err:?}")
    };
    assert_eq!(t.kind(), TransportErrorKind::Connect);
    assert_eq!(t.io_error().kind(), std::io::ErrorKind::ConnectionRefused);
    assert_eq!(err.kind(), "unreachable");
    assert_eq!(err.http_status(), None);
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}

#[test]
fn plain_http_to_a_remote_host_is_refused_before_any_io() {
    let err = Client::connect_http("http://mcp.example.com/mcp", config()).unwrap_err();
    assert!(matches!(err, Error::InvalidUrl { .. }), "{err:?}");
    assert_eq!(err.kind(), "invalid-url");
    assert!(err.to_string().contains("loopback"), "{err}");
}

/// Without the `tls` feature, `https://` is refused before anything connects, saying why.
#[cfg(not(feature = "tls"))]
#[test]
fn https_without_the_tls_feature_is_a_typed_error() {
    let err = Client::connect_http("https://mcp.example.com/mcp", config()).unwrap_err();
    let Error::TlsUnavailable(e) = &err else {
        panic!("expected TlsUnavailable, got {err:?}")
    };
    assert_eq!(e.url(), "https://mcp.example.com/mcp");
    assert_eq!(err.kind(), "tls-unavailable");
    assert!(
        err.to_string().contains("TLS support was compiled out"),
        "{err}"
    );
}

/// Without the `tls` feature, a connector of the caller's may still serve `https://`
/// (another TLS stack, a proxy): the URL is accepted and the connector is asked.
#[cfg(not(feature = "tls"))]
#[test]
fn https_without_the_tls_feature_goes_to_a_callers_connector() {
    use mcp_blocking::http::{Connector, Stream, TcpConnector};
    use mcp_blocking::mcp_proto::http::EndpointUrl;

    /// Plain TCP to the test server, whatever the URL says (standing in for a TLS stack).
    struct Fixed(EndpointUrl);
    impl Connector for Fixed {
        fn connect(&self, _: &EndpointUrl, timeout: Duration) -> std::io::Result<Box<dyn Stream>> {
            TcpConnector.connect(&self.0, timeout)
        }
    }

    let server = TestServer::start(Behavior::default());
    let plain = EndpointUrl::parse(&server.url(), false).unwrap();
    let http = HttpOptions::new().connector(Fixed(plain.clone()));
    let url = format!("https://localhost:{}/mcp", plain.port());
    let mut client =
        Client::connect_http_with(&url, config(), Options::new(), http).expect("connect");
    assert_eq!(
        client
            .call_tool("add", json!({"a": 1, "b": 2}))
            .unwrap()
            .text(),
        "3"
    );
    client.close();
}

#[test]
fn an_http_failure_keeps_its_status() {
    let server = TestServer::start(Behavior {
        fail_with: Some((403, json!({"error": "forbidden"}))),
        ..Behavior::default()
    });
    let err = Client::connect_http(&server.url(), config()).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Connect {
                reason: CloseReason::Http(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.http_status(), Some(403));
    assert_eq!(err.kind(), "http");
}

#[test]
fn a_timed_out_call_aborts_its_exchange_and_the_next_call_works() {
    let server = TestServer::start(Behavior::default());
    let mut client = connect(&server);
    let hang = CallRequest::call_tool("hang", json!({})).timeout(Duration::from_millis(300));
    let err = client.request(hang).unwrap_err();
    assert!(matches!(err, Error::Call(CallError::Timeout(_))), "{err:?}");
    assert_eq!(
        client
            .call_tool("add", json!({"a": 1, "b": 2}))
            .unwrap()
            .text(),
        "3"
    );
    assert_eq!(server.accepted(), 2, "the aborted connection is not reused");
}

#[test]
fn tools_with_invalid_header_annotations_are_excluded() {
    let server = TestServer::start(Behavior {
        bad_header_tool: true,
        ..Behavior::default()
    });
    let mut client = connect(&server);
    let names: Vec<String> = client
        .list_tools()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(!names.contains(&"sum".to_owned()), "{names:?}");
    assert!(names.contains(&"add".to_owned()));
    let excluded = client.excluded_tools();
    assert_eq!(excluded.len(), 1, "{excluded:?}");
    assert_eq!(excluded[0].0, "sum");
    assert!(excluded[0].1.contains("number"), "{excluded:?}");
    // A second listing does not duplicate the entry.
    client.list_tools().unwrap();
    assert_eq!(client.excluded_tools().len(), 1);
}

#[test]
fn the_wire_log_hides_the_authorization_header() {
    let server = TestServer::start(Behavior::default());
    let lines = Arc::new(Mutex::new(Vec::<(Direction, String)>::new()));
    let sink = Arc::clone(&lines);
    let options = Options::new().wire_log(move |dir, line| {
        sink.lock()
            .unwrap()
            .push((dir, String::from_utf8_lossy(line).into_owned()));
    });
    let http = HttpOptions::new().bearer_token("topsecret");
    let mut client = Client::connect_http_with(&server.url(), config(), options, http).unwrap();
    client.call_tool("echo", json!({"text": "x"})).unwrap();
    client.close();
    let lines = lines.lock().unwrap();
    assert!(lines.iter().all(|(_, l)| !l.contains("topsecret")));
    assert!(
        lines
            .iter()
            .any(|(d, l)| *d == Direction::Sent && l == "Authorization: [redacted]")
    );
    assert!(
        lines
            .iter()
            .any(|(d, l)| *d == Direction::Received && l.starts_with("HTTP/1.1 200"))
    );
    assert!(
        server
            .seen()
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer topsecret"))
    );
}

#[test]
fn the_wire_log_hides_the_session_id_and_the_headers_the_options_name() {
    let server = TestServer::start(Behavior {
        eras: Eras::Legacy,
        ..Behavior::default()
    });
    let lines = Arc::new(Mutex::new(Vec::<(Direction, String)>::new()));
    let sink = Arc::clone(&lines);
    let options = Options::new()
        .redact_header("content-type")
        .wire_log(move |dir, line| {
            sink.lock()
                .unwrap()
                .push((dir, String::from_utf8_lossy(line).into_owned()));
        });
    let mut client =
        Client::connect_http_with(&server.url(), config(), options, HttpOptions::new()).unwrap();
    assert_eq!(client.http_session_id().as_deref(), Some("session-1"));
    client.call_tool("echo", json!({"text": "x"})).unwrap();
    client.close();
    let lines = lines.lock().unwrap();
    assert!(
        lines.iter().all(|(_, l)| !l.contains("session-1")),
        "{lines:?}"
    );
    for dir in [Direction::Sent, Direction::Received] {
        for header in ["mcp-session-id", "content-type"] {
            let shown = format!("{header}: [redacted]");
            assert!(
                lines
                    .iter()
                    .any(|(d, l)| *d == dir && l.eq_ignore_ascii_case(&shown)),
                "{dir:?} {header}: {lines:?}"
            );
        }
    }
    assert!(
        lines.iter().all(|(_, l)| !l
            .to_ascii_lowercase()
            .starts_with("content-type: application")),
        "{lines:?}"
    );
}

#[test]
fn the_era_cache_skips_the_probe_for_legacy_origins() {
    let server = TestServer::start(Behavior {
        eras: Eras::Legacy,
        ..Behavior::default()
    });
    let cache = EraCache::new();
    let http = HttpOptions::new().era_cache(cache.clone());
    let origin = format!("http://{}", server.addr);
    let first =
        Client::connect_http_with(&server.url(), config(), Options::new(), http.clone()).unwrap();
    assert_eq!(first.era(), Era::Legacy);
    drop(first);
    assert_eq!(
        cache.hint(&origin),
        Some((Era::Legacy, ProtocolVersion::V2025_11_25))
    );
    let second = Client::connect_http_with(&server.url(), config(), Options::new(), http).unwrap();
    assert_eq!(second.era(), Era::Legacy);
    drop(second);
    let probes = server
        .seen()
        .iter()
        .filter(|r| r.rpc_method() == "server/discover")
        .count();
    assert_eq!(
        probes, 1,
        "the second connection went straight to initialize"
    );
}

#[test]
fn a_stale_legacy_verdict_is_dropped_when_the_server_moved_on() {
    let server = TestServer::start(Behavior {
        eras: Eras::Modern,
        ..Behavior::default()
    });
    let cache = EraCache::new();
    let origin = format!("http://{}", server.addr);
    cache.record(&origin, ProtocolVersion::V2025_11_25);
    let http = HttpOptions::new().era_cache(cache.clone());
    let client = Client::connect_http_with(&server.url(), config(), Options::new(), http).unwrap();
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(
        cache.hint(&origin),
        Some((Era::Modern, ProtocolVersion::V2026_07_28))
    );
    let methods: Vec<String> = server
        .seen()
        .iter()
        .map(|r| r.rpc_method().to_owned())
        .collect();
    assert_eq!(
        &methods[..2],
        ["initialize", "server/discover"],
        "{methods:?}"
    );

    // Without a cache entry, a modern-only server pinned to legacy fails clearly.
    let err = Client::connect_http(&server.url(), config().era_mode(EraMode::Legacy)).unwrap_err();
    assert_eq!(err.http_status(), Some(400));
    assert_eq!(err.code(), Some(-32022));
}

#[test]
fn a_held_get_stream_does_not_starve_requests() {
    let server = TestServer::start(Behavior {
        eras: Eras::Legacy,
        get_stream: true,
        ..Behavior::default()
    });
    // The smallest bound: the GET stream holds a connection of its own, every POST
    // shares the one other (so the first call waits in the queue behind the
    // `initialized` notification).
    let http = HttpOptions::new().max_connections(1);
    let mut client =
        Client::connect_http_with(&server.url(), config(), Options::new(), http).unwrap();
    for i in 0..3 {
        let out = client.call_tool("add", json!({"a": i, "b": 1})).unwrap();
        assert_eq!(out.text(), (i + 1).to_string());
        // Make sure the stream is held (it was opened in parallel with the first call).
        wait_for(|| server.seen().iter().any(|r| r.method == "GET"));
    }
    client.close();
    assert_eq!(server.accepted(), 2);
    let seen = server.seen();
    assert_eq!(seen.iter().filter(|r| r.method == "GET").count(), 1);
    assert!(seen.iter().any(|r| r.method == "DELETE"));
}
