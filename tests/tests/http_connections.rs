//! The connection decisions of the client machine over Streamable HTTP, each asserted on
//! scripted connections and a fake clock: keep-alive reuse, the one retry after a stale
//! keep-alive connection, refused connections, TLS failures, the connect deadline, idle
//! expiry, the bound on connections, long-lived streams beside it, and releasing
//! everything on close.

use std::time::Duration;

use mcp_proto::client::http::HttpConfig;
use mcp_proto::client::http::pool::PoolConfig;
use mcp_proto::client::{
    CallError, CallRequest, ClientConfig, CloseReason, Event, TransportFailureKind,
};
use mcp_proto::http::EndpointUrl;
use mcp_proto::version::EraMode;
use mcp_tests::http_sim::{ConnectOutcome, HttpSim, Reply, SeenRequest};
use serde_json::{Value, json};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("http-connections", "1.0").era_mode(mode)
}

fn http(pool: PoolConfig) -> HttpConfig {
    let mut http = HttpConfig::new(EndpointUrl::parse("http://127.0.0.1:9/mcp", false).unwrap());
    http.pool = pool;
    http
}

fn pool(max_connections: usize) -> PoolConfig {
    let mut pool = PoolConfig::default();
    pool.max_connections = max_connections;
    pool.idle_timeout = Duration::from_secs(30);
    pool.connect_timeout = Duration::from_secs(5);
    pool
}

fn result(req: &SeenRequest, result: Value) -> Reply {
    Reply::json(
        200,
        &json!({"jsonrpc":"2.0","id":req.body["id"],"result":result}),
    )
}

/// A modern server: discover, an empty tool list, and `tools/call` answered with its
/// tool name (except `hang`, which never answers).
fn modern(req: &SeenRequest) -> Reply {
    match req.rpc_method() {
        "server/discover" => result(
            req,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}),
        ),
        "tools/list" => result(req, json!({"resultType":"complete","tools":[]})),
        "resources/read" => result(
            req,
            json!({"resultType":"complete","contents":[{"uri":req.body["params"]["uri"],"text":"r"}]}),
        ),
        "tools/call" if req.body["params"]["name"] == "hang" => Reply::Silence,
        "tools/call" => result(
            req,
            json!({"resultType":"complete","content":[{"type":"text","text":req.body["params"]["name"]}]}),
        ),
        _ => Reply::with_body(404, &[], ""),
    }
}

fn call(name: &str) -> CallRequest {
    CallRequest::call_tool(name, json!({}))
}

#[test]
fn sequential_exchanges_reuse_one_keep_alive_connection() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), modern);
    sim.connect();
    for _ in 0..3 {
        sim.call(call("t")).unwrap();
    }
    assert_eq!(sim.connects.len(), 1, "one connection for everything");
    assert!(sim.request_conns.iter().all(|c| *c == sim.connects[0]));
    assert!(sim.closed.is_empty());
    let stats = sim.client.pool_stats().unwrap();
    assert_eq!((stats.opened, stats.open, stats.idle), (1, 1, 1));
}

#[test]
fn a_request_on_a_stale_keep_alive_connection_is_sent_again_once() {
    // The server closed the idle connection as the read was written on it: end of input
    // before any byte of the response. A read can go again, on a new connection.
    let mut stale = true;
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), move |req| {
        if req.rpc_method() == "resources/read" && std::mem::take(&mut stale) {
            return Reply::Eof;
        }
        modern(req)
    });
    sim.connect();
    let out = sim.call(CallRequest::read_resource("file:///a")).unwrap();
    assert_eq!(
        out.result_as::<Value>().unwrap()["contents"][0]["text"],
        "r"
    );
    assert_eq!(sim.with_method("resources/read").len(), 2);
    assert_eq!(sim.connects.len(), 2, "the retry takes a fresh connection");
    let reads: Vec<_> = sim
        .requests
        .iter()
        .zip(&sim.request_conns)
        .filter(|(r, _)| r.rpc_method() == "resources/read")
        .map(|(_, c)| *c)
        .collect();
    assert_eq!(reads, [sim.connects[0], sim.connects[1]]);
    assert_eq!(sim.client.pool_stats().unwrap().retries, 1);
}

#[test]
fn a_fresh_connection_failing_is_not_retried() {
    // A reused connection is retried once; the fresh one failing too ends the call.
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), |req| {
        if req.rpc_method() == "resources/read" {
            return Reply::Eof;
        }
        modern(req)
    });
    sim.connect();
    let err = sim
        .call(CallRequest::read_resource("file:///a"))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Http(h) if h.status.is_none()),
        "{err:?}"
    );
    assert_eq!(
        sim.with_method("resources/read").len(),
        2,
        "one retry, never more"
    );
    assert_eq!(sim.client.pool_stats().unwrap().retries, 1);
}

#[test]
fn a_tool_call_is_never_sent_twice() {
    // The connection ends before any byte of the answer: the server may have run the
    // tool and then closed. The call fails; the server's record shows one execution.
    let mut executions = 0;
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), move |req| {
        if req.rpc_method() == "tools/call" {
            executions += 1;
            assert_eq!(executions, 1, "tools/call executed twice");
            return Reply::Eof;
        }
        modern(req)
    });
    sim.connect();
    let err = sim.call(call("t")).unwrap_err();
    assert!(
        matches!(&err, CallError::Http(h) if h.status.is_none()),
        "{err:?}"
    );
    assert_eq!(sim.with_method("tools/call").len(), 1);
    assert_eq!(sim.client.pool_stats().unwrap().retries, 0);
}

#[test]
fn a_tool_call_takes_only_a_connection_idle_for_less_than_fresh_for() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), modern);
    sim.connect();
    sim.call(call("a")).unwrap();
    // Just under `fresh_for` (2 s): the same connection.
    sim.advance(Duration::from_millis(1900));
    sim.call(call("b")).unwrap();
    assert_eq!(sim.connects.len(), 1);
    // Past it: a read still reuses the connection, a tool call opens a new one.
    sim.advance(Duration::from_millis(2100));
    sim.call(CallRequest::read_resource("file:///a")).unwrap();
    assert_eq!(sim.connects.len(), 1);
    sim.advance(Duration::from_millis(2100));
    sim.call(call("c")).unwrap();
    assert_eq!(
        sim.connects.len(),
        2,
        "a fresh connection for the tool call"
    );
}

#[test]
fn a_response_byte_ends_any_chance_of_a_retry() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), |req| {
        if req.rpc_method() == "tools/call" {
            return Reply::RawThenClose(b"HTTP/1.1 200 OK\r\nContent-Le".to_vec());
        }
        modern(req)
    });
    sim.connect();
    sim.call(call("t")).unwrap_err();
    assert_eq!(
        sim.with_method("tools/call").len(),
        1,
        "it may have run: not sent again"
    );
    assert_eq!(sim.client.pool_stats().unwrap().retries, 0);
}

#[test]
fn a_refused_connection_is_a_typed_failure() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), modern);
    sim.connect_script.push_back(ConnectOutcome::Refuse);
    sim.connect();
    let reason = sim.client.close_reason().cloned();
    let Some(CloseReason::Http(failure)) = reason else {
        panic!("{reason:?}")
    };
    let transport = failure.transport.expect("the transport failure is kept");
    assert_eq!(transport.kind, TransportFailureKind::Refused);
    assert!(sim.requests.is_empty(), "nothing was written");
}

#[test]
fn a_tls_failure_fails_the_call_it_carried() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), modern);
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    // The keep-alive connection is gone; the next one fails its handshake.
    let conn = sim.connects[0];
    sim.server_closes(conn);
    sim.connect_script.push_back(ConnectOutcome::TlsFailure);
    let err = sim.call(call("t")).unwrap_err();
    let CallError::Http(failure) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        failure.transport.as_ref().map(|t| t.kind),
        Some(TransportFailureKind::Tls)
    );
    // The next call connects again, and works.
    sim.call(call("t")).unwrap();
    assert_eq!(sim.connects.len(), 3);
}

#[test]
fn a_connection_that_never_opens_fails_at_the_connect_deadline() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), modern);
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    sim.server_closes(sim.connects[0]);
    sim.connect_script.push_back(ConnectOutcome::Hang);
    let start = sim.now;
    let err = sim
        .call(call("t").timeout(Duration::from_secs(60)))
        .unwrap_err();
    assert_eq!(
        sim.now - start,
        Duration::from_secs(5),
        "the connect timeout"
    );
    let CallError::Http(failure) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        failure.transport.as_ref().map(|t| t.kind),
        Some(TransportFailureKind::Timeout)
    );
    assert_eq!(
        sim.closed, sim.connects,
        "the hung attempt is abandoned too"
    );
}

/// Connecting in the auto era: the `server/discover` probe's first connection never
/// opens. Over HTTP silence is an outage, not a legacy server, so the probe is not held
/// to the short stdio window (3 s) while TCP and TLS are still opening: the connection's
/// own deadline (5 s here) is what runs out, and says so.
#[test]
fn a_probe_whose_connection_never_opens_fails_at_the_connect_deadline() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), modern);
    sim.connect_script.push_back(ConnectOutcome::Hang);
    let start = sim.now;
    sim.connect();
    assert_eq!(
        sim.now - start,
        Duration::from_secs(5),
        "the connect timeout"
    );
    let Some(CloseReason::Http(failure)) = sim.closed_reason() else {
        panic!("{:?}", sim.closed_reason())
    };
    assert_eq!(
        failure.transport.as_ref().map(|t| t.kind),
        Some(TransportFailureKind::Timeout),
        "{failure:?}"
    );
}

/// A server that accepts the probe's connection and never answers: the probe gets the
/// handshake's time (`Limits::initialize_timeout`), as `initialize` would, and the
/// failure names that limit.
#[test]
fn a_silent_probe_over_http_gets_the_handshake_time() {
    let mut config = config(EraMode::Auto);
    config.limits.initialize_timeout = Duration::from_secs(7);
    config.limits.connect_timeout = Duration::from_secs(20);
    let mut sim = HttpSim::with_http(config, http(pool(4)), |_: &SeenRequest| Reply::Silence);
    let start = sim.now;
    sim.connect();
    assert_eq!(sim.now - start, Duration::from_secs(7));
    let Some(CloseReason::Http(failure)) = sim.closed_reason() else {
        panic!("{:?}", sim.closed_reason())
    };
    assert!(
        failure
            .to_string()
            .contains("no answer to server/discover within 7s (Limits::initialize_timeout)"),
        "{failure}"
    );
}

#[test]
fn idle_connections_expire_and_the_next_call_opens_a_new_one() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), modern);
    sim.connect();
    sim.call(call("t")).unwrap();
    let first = sim.connects[0];
    sim.advance(Duration::from_secs(29));
    assert!(sim.closed.is_empty(), "not yet");
    sim.advance(Duration::from_secs(1));
    assert_eq!(sim.closed, [first], "closed at the idle timeout");
    sim.call(call("t")).unwrap();
    assert_eq!(sim.connects.len(), 2);
    assert_eq!(sim.client.pool_stats().unwrap().retries, 0);
}

#[test]
fn a_server_closing_an_idle_connection_costs_no_retry() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), modern);
    sim.connect();
    sim.server_closes(sim.connects[0]);
    sim.call(call("t")).unwrap();
    assert_eq!(sim.connects.len(), 2);
    assert_eq!(sim.client.pool_stats().unwrap().retries, 0);
    assert_eq!(sim.with_method("tools/call").len(), 1);
}

#[test]
fn bytes_on_an_idle_connection_close_it() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), modern);
    sim.connect();
    let conn = sim.connects[0];
    sim.server_sends(conn, b"HTTP/1.1 200 OK\r\n\r\n");
    assert_eq!(sim.closed, [conn]);
    sim.call(call("t")).unwrap();
    assert_eq!(sim.connects.len(), 2);
}

#[test]
fn calls_beyond_the_bound_wait_for_a_connection() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(2)), modern);
    sim.connect();
    let hung: Vec<_> = (0..2)
        .map(|_| sim.client.call(sim.now, call("hang")).unwrap())
        .collect();
    let waiting = sim.client.call(sim.now, call("t")).unwrap();
    for _ in 0..5 {
        sim.step();
    }
    assert_eq!(sim.connects.len(), 2, "never more than the bound");
    assert_eq!(sim.with_method("tools/call").len(), 2, "the third waits");
    assert!(sim.completion(waiting).is_none());
    // One hung call is cancelled: its connection closes and the waiting call takes a
    // fresh one.
    sim.client.cancel(sim.now, hung[0]).unwrap();
    sim.run_until(|s| s.completion(waiting).is_some());
    assert!(sim.completion(waiting).unwrap().is_ok());
    assert_eq!(sim.connects.len(), 3);
    assert_eq!(sim.open.len(), 2, "still within the bound");
}

#[test]
fn long_lived_streams_never_starve_calls() {
    // A legacy server whose GET stream stays open: with a bound of one connection, calls
    // still get theirs.
    let mut sim = HttpSim::with_http(config(EraMode::Legacy), http(pool(1)), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => Reply::with_body(
                200,
                &[("Content-Type", "application/json"), ("Mcp-Session-Id", "s")],
                &json!({"jsonrpc":"2.0","id":req.body["id"],"result":{
                    "protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                    "serverInfo":{"name":"legacy","version":"1"}}})
                .to_string(),
            ),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::Raw(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                    .to_vec(),
            ),
            ("POST", "tools/call") => Reply::json(
                200,
                &json!({"jsonrpc":"2.0","id":req.body["id"],"result":{"content":[]}}),
            ),
            ("DELETE", _) => Reply::with_body(200, &[], ""),
            _ => Reply::with_body(400, &[], ""),
        }
    });
    sim.connect();
    sim.run_until(|s| s.requests.iter().any(|r| r.method == "GET"));
    sim.call(call("t")).unwrap();
    assert_eq!(sim.connects.len(), 2, "one for the stream, one for calls");

    // Close: the session is ended with DELETE, then every connection is released.
    sim.client.close(sim.now);
    sim.run_until(|s| s.client.is_released());
    assert!(sim.requests.iter().any(|r| r.method == "DELETE"));
    assert!(
        sim.open.is_empty(),
        "every connection closed: open {:?}, connects {:?}, closed {:?}, requests {:?}",
        sim.open,
        sim.connects,
        sim.closed,
        sim.requests
            .iter()
            .map(|r| (&r.method, r.rpc_method()))
            .collect::<Vec<_>>()
    );
    assert!(sim.events.iter().any(|e| matches!(
        e,
        Event::Closed {
            reason: CloseReason::Local
        }
    )));
}

#[test]
fn a_failed_handshake_releases_every_connection() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), |req| {
        Reply::json(
            403,
            &json!({"jsonrpc":"2.0","id":req.body["id"],"error":{"code":-32600,"message":"forbidden"}}),
        )
    });
    sim.connect();
    assert!(sim.client.close_reason().is_some());
    sim.step();
    assert!(sim.client.is_released(), "the driver can stop");
    assert!(sim.open.is_empty(), "{:?}", sim.open);
}

#[test]
fn an_unanswered_delete_is_given_up_at_the_close_timeout() {
    let mut sim = HttpSim::with_http(config(EraMode::Legacy), http(pool(4)), |req| {
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => Reply::with_body(
                200,
                &[
                    ("Content-Type", "application/json"),
                    ("Mcp-Session-Id", "s"),
                ],
                &json!({"jsonrpc":"2.0","id":req.body["id"],"result":{
                    "protocolVersion":"2025-11-25","capabilities":{},
                    "serverInfo":{"name":"legacy","version":"1"}}})
                .to_string(),
            ),
            ("POST", "notifications/initialized") => Reply::accepted(),
            ("GET", _) => Reply::with_body(405, &[], ""),
            _ => Reply::Silence,
        }
    });
    sim.connect();
    sim.client.close(sim.now);
    sim.step();
    assert!(sim.requests.iter().any(|r| r.method == "DELETE"));
    assert!(!sim.client.is_released(), "waiting for the DELETE");
    let start = sim.now;
    sim.run_until(|s| s.client.is_released());
    assert_eq!(sim.now - start, Duration::from_secs(2));
    assert!(sim.open.is_empty());
    assert_eq!(sim.client.poll_timeout(), None, "nothing left to wait for");
}

#[test]
fn a_connection_is_idle_exactly_when_its_response_is_complete() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), modern);
    sim.connect();
    let conn = sim.connects[0];
    assert!(sim.client.is_idle(conn));
    sim.client.call(sim.now, call("hang")).unwrap();
    sim.run_until(|s| !s.hung.is_empty());
    assert!(!sim.client.is_idle(sim.hung[0]), "a response is owed");
    assert!(!sim.client.is_idle(mcp_proto::client::ConnId::STDIO));
}

/// A driver may report a read of nothing (a TLS layer that decrypted no application
/// data yet): it must change nothing, least of all the request waiting to be written.
#[test]
fn an_empty_read_before_the_request_is_written_changes_nothing() {
    use mcp_proto::Instant;
    use mcp_proto::client::{Client, Transmit};
    let mut client = Client::http(config(EraMode::Auto), http(pool(4)), Instant::ZERO);
    let now = Instant::ZERO;
    let mut buf = Vec::new();
    let Some(Transmit::Connect { conn, .. }) = client.poll_transmit(now, &mut buf) else {
        panic!("a connect first");
    };
    client.handle_read(now, conn, &[]);
    client.handle_connected(now, conn);
    client.handle_read(now, conn, &[]);
    let Some(Transmit::Write { conn: written, len }) = client.poll_transmit(now, &mut buf) else {
        panic!("the probe is written");
    };
    assert_eq!(written, conn);
    assert!(
        len > 0 && buf.starts_with(b"POST /mcp HTTP/1.1\r\n"),
        "{len} bytes"
    );
}

/// `modern`, with every 2026 listen left open (a stream that is never answered).
fn modern_listening(req: &SeenRequest) -> Reply {
    match req.rpc_method() {
        "subscriptions/listen" => Reply::Silence,
        _ => modern(req),
    }
}

fn listen() -> CallRequest {
    CallRequest::listen(&mcp_proto::client::ListenFilter::new().tools())
}

/// The stream bound counts streams whichever connection carries them: a listen that
/// finds an idle keep-alive connection takes it only while fewer than the bound are
/// streams. Listens used to take every idle connection, past the bound.
#[test]
fn a_listen_takes_an_idle_connection_only_within_the_stream_bound() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(2)), modern_listening);
    sim.connect();
    let idle_two = |sim: &mut HttpSim<_>| {
        let calls: Vec<_> = (0..2)
            .map(|_| sim.client.call(sim.now, call("t")).unwrap())
            .collect();
        sim.run_until(|s| calls.iter().all(|c| s.completion(*c).is_some()));
        assert_eq!(sim.client.pool_stats().unwrap().idle, 2);
    };
    // Two idle connections become the two streams the bound allows.
    idle_two(&mut sim);
    for _ in 0..2 {
        sim.client.call(sim.now, listen()).unwrap();
    }
    sim.step();
    // Two idle connections again; a third listen waits instead of taking one.
    idle_two(&mut sim);
    sim.client.call(sim.now, listen()).unwrap();
    for _ in 0..5 {
        sim.step();
    }
    assert_eq!(
        sim.with_method("subscriptions/listen").len(),
        2,
        "the third waits"
    );
    let stats = sim.client.pool_stats().unwrap();
    assert_eq!((stats.open, stats.idle), (4, 2), "{stats:?}");
}

/// A connection whose listen ended gracefully goes back to the pool as an idle request
/// connection: over the request bound, the longest idle one closes. Each listen that
/// ended used to leave one more open connection behind, until the idle timeout.
#[test]
fn a_connection_whose_listen_ended_stays_within_the_request_bound() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(1)), modern_listening);
    sim.connect();
    let sub = sim.client.call(sim.now, listen()).unwrap();
    sim.run_until(|s| !s.with_method("subscriptions/listen").is_empty());
    sim.step();
    let at = sim
        .requests
        .iter()
        .position(|r| r.rpc_method() == "subscriptions/listen");
    let (stream, id) = (
        sim.request_conns[at.unwrap()],
        sim.requests[at.unwrap()].body["id"].clone(),
    );
    // A call beside the stream, on a connection of its own, idle after.
    sim.call(call("t")).unwrap();
    assert_eq!(sim.client.pool_stats().unwrap().idle, 1);
    // The server ends the listen; its connection is kept alive.
    let body = json!({"jsonrpc":"2.0","id":id,"result":{"resultType":"complete"}}).to_string();
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    sim.server_sends(stream, response.as_bytes());
    sim.run_until(|s| {
        s.events.iter().any(
            |e| matches!(e, Event::SubscriptionEnded { subscription, .. } if *subscription == sub),
        )
    });
    sim.step();
    let stats = sim.client.pool_stats().unwrap();
    assert_eq!((stats.open, stats.idle), (1, 1), "{stats:?}");
}

/// A server that closes the connection before its response began, or in the middle of
/// it (a crash, a proxy timing out), is a closed connection, reported as one: the call
/// fails with the transport failure kept (`closed`), not as a malformed response, and the
/// detail says where the response stopped.
#[test]
fn a_response_cut_off_by_the_server_closing_is_a_closed_connection() {
    for (reply, where_) in [
        (Reply::Eof, "before a response began"),
        (
            Reply::RawThenClose(b"HTTP/1.1 200 OK\r\nContent-Le".to_vec()),
            "in the middle of the response",
        ),
        (
            Reply::RawThenClose(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{\"jsonrpc\":"
                    .to_vec(),
            ),
            "in the middle of the response",
        ),
    ] {
        let mut sim = HttpSim::with_http(config(EraMode::Auto), http(pool(4)), move |req| {
            if req.rpc_method() == "tools/call" {
                return reply.clone();
            }
            modern(req)
        });
        sim.connect();
        let err = sim.call(call("t")).unwrap_err();
        let CallError::Http(h) = &err else {
            panic!("{err:?}")
        };
        let kind = h.transport.as_ref().map(|t| t.kind);
        assert_eq!(kind, Some(TransportFailureKind::Closed), "{where_}: {h:?}");
        assert!(h.detail.contains(where_), "{where_}: {h:?}");
        assert!(!h.detail.contains("malformed"), "{where_}: {h:?}");
        assert_eq!(sim.with_method("tools/call").len(), 1, "never sent twice");
    }
}
