//! Where one HTTP exchange ends and the next begins, on scripted connections and a fake
//! clock: a failure status whose body never ends, a JSON body that answers another
//! request than the one it was posted for, and bytes on a connection before its request
//! was written.

use std::time::Duration;

use mcp_proto::client::http::HttpConfig;
use mcp_proto::client::http::pool::PoolConfig;
use mcp_proto::client::{CallError, CallRequest, ClientConfig};
use mcp_proto::http::EndpointUrl;
use mcp_proto::version::EraMode;
use mcp_tests::http_sim::{ConnectOutcome, HttpSim, Reply, SeenRequest};
use serde_json::{Value, json};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("http-exchange-edges", "1.0").era_mode(mode)
}

fn http(max_connections: usize) -> HttpConfig {
    let mut http = HttpConfig::new(EndpointUrl::parse("http://127.0.0.1:9/mcp", false).unwrap());
    let mut pool = PoolConfig::default();
    pool.max_connections = max_connections;
    pool.connect_timeout = Duration::from_secs(5);
    http.pool = pool;
    http
}

fn result(req: &SeenRequest, result: Value) -> Reply {
    Reply::json(
        200,
        &json!({"jsonrpc":"2.0","id":req.body["id"],"result":result}),
    )
}

/// The head of a failure whose chunked body never comes to its end.
fn failure_without_end() -> Reply {
    Reply::Raw(b"HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec())
}

/// A 2025-11-25 server with a session and no `GET` stream; `tools/call` of `hang` is
/// never answered, any other is answered with its name.
fn legacy(req: &SeenRequest) -> Reply {
    match (req.method.as_str(), req.rpc_method()) {
        ("POST", "initialize") => Reply::with_body(
            200,
            &[
                ("Content-Type", "application/json"),
                ("Mcp-Session-Id", "s"),
            ],
            &json!({"jsonrpc":"2.0","id":req.body["id"],"result":{
                "protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                "serverInfo":{"name":"legacy","version":"1"}}})
            .to_string(),
        ),
        ("POST", "notifications/initialized") => Reply::accepted(),
        ("GET", _) => Reply::with_body(405, &[("Allow", "POST")], ""),
        ("POST", "tools/list") => result(req, json!({"tools":[]})),
        ("POST", "tools/call") if req.body["params"]["name"] == "hang" => Reply::Silence,
        ("POST", "tools/call") => result(
            req,
            json!({"content":[{"type":"text","text":req.body["params"]["name"]}]}),
        ),
        ("DELETE", _) => Reply::with_body(200, &[], ""),
        _ => Reply::accepted(),
    }
}

/// A 2026-07-28 server: discover, an empty tool list, `tools/call` answered with its
/// name, except `slow`, whose answer the test sends itself.
fn modern(req: &SeenRequest) -> Reply {
    match req.rpc_method() {
        "server/discover" => result(
            req,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}),
        ),
        "tools/list" => result(req, json!({"resultType":"complete","tools":[]})),
        "tools/call" if req.body["params"]["name"] == "slow" => Reply::Silence,
        "tools/call" => result(
            req,
            json!({"resultType":"complete","content":[{"type":"text","text":req.body["params"]["name"]}]}),
        ),
        _ => Reply::with_body(404, &[], ""),
    }
}

fn text_of(out: &mcp_proto::client::CallOutput) -> String {
    out.result_as::<Value>().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A legacy server refuses `notifications/initialized` with a status whose body never
/// ends. The status alone says it was refused, and an exchange not tied to a call gets
/// `Limits::request_timeout` (decision 22): the calls held behind the notification must
/// go out by then at the latest, not wait out their own deadline.
#[test]
fn a_refused_initialized_whose_body_never_ends_does_not_hold_the_calls_behind_it() {
    let mut sim = HttpSim::with_http(config(EraMode::Legacy), http(4), |req| {
        match req.rpc_method() {
            "notifications/initialized" => failure_without_end(),
            _ => legacy(req),
        }
    });
    sim.connect();
    let start = sim.now;
    let out = sim.call(CallRequest::call_tool("t", json!({})).timeout(Duration::from_secs(600)));
    assert!(
        out.is_ok(),
        "the call waited {:?} behind the refused notification: {out:?}",
        sim.now - start
    );
    assert!(
        sim.now - start <= Duration::from_secs(60),
        "{:?}",
        sim.now - start
    );
}

/// A notification (here the `notifications/cancelled` of a legacy cancellation) drawn a
/// failure status whose body never ends: its exchange must not hold the connection past
/// `Limits::request_timeout`. With one connection allowed, the next call waited for it
/// until its own deadline; with the default sixteen, sixteen such cancellations took
/// every connection for good.
#[test]
fn a_refused_notification_whose_body_never_ends_gives_its_connection_back() {
    let mut sim = HttpSim::with_http(config(EraMode::Legacy), http(1), |req| {
        match req.rpc_method() {
            "notifications/cancelled" => failure_without_end(),
            _ => legacy(req),
        }
    });
    sim.connect();
    let hung = sim.start(CallRequest::call_tool("hang", json!({})));
    sim.run_until(|s| !s.hung.is_empty());
    sim.client.cancel(sim.now, hung).unwrap();
    sim.run_until(|s| !s.with_method("notifications/cancelled").is_empty());
    let start = sim.now;
    let out = sim.call(CallRequest::call_tool("t", json!({})).timeout(Duration::from_secs(600)));
    assert!(
        out.is_ok(),
        "the call waited {:?} for the notification's connection: {out:?}",
        sim.now - start
    );
    assert!(
        sim.now - start <= Duration::from_secs(60),
        "{:?}",
        sim.now - start
    );
}

/// The JSON body of a POST is the one response to the request it carried. A body
/// carrying the id of another call in flight (a confused proxy, a server mixing up its
/// connections) must not complete that other call with an answer that was not sent for
/// it: the call it was posted for fails as not answered, and the other call keeps
/// waiting for its own response.
#[test]
fn a_json_body_answering_another_call_does_not_complete_that_call() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(4), modern);
    sim.connect();
    // The tool listing (learned before a first call) out of the way.
    sim.call(CallRequest::call_tool("warm", json!({}))).unwrap();
    let a = sim.start(CallRequest::call_tool("slow", json!({"which":"a"})));
    let b = sim.start(CallRequest::call_tool("slow", json!({"which":"b"})));
    sim.run_until(|s| s.hung.len() == 2);
    let sent = |which: &str| {
        let at = sim
            .requests
            .iter()
            .position(|r| r.body["params"]["arguments"]["which"] == which)
            .unwrap();
        (sim.request_conns[at], sim.requests[at].body["id"].clone())
    };
    let ((conn_a, _), (conn_b, id_b)) = (sent("a"), sent("b"));
    assert_ne!(conn_a, conn_b);
    let answer = |id: &Value, text: &str| {
        let body = json!({"jsonrpc":"2.0","id":id,"result":{"resultType":"complete",
            "content":[{"type":"text","text":text}]}})
        .to_string();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    // A's POST is answered with B's id.
    sim.server_sends(conn_a, answer(&id_b, "meant for nobody").as_bytes());
    sim.step();
    assert!(
        matches!(sim.completion(a), Some(Err(CallError::Http(_)))),
        "a's POST carried no answer to a: {:?}",
        sim.completion(a)
    );
    assert!(
        sim.completion(b).is_none(),
        "b was completed by the body of a's POST: {:?}",
        sim.completion(b).map(|o| o.map(|o| text_of(&o)))
    );
    // B's own answer then completes it.
    sim.server_sends(conn_b, answer(&id_b, "b's own").as_bytes());
    sim.run_until(|s| s.completion(b).is_some());
    assert_eq!(text_of(&sim.completion(b).unwrap().unwrap()), "b's own");
}

/// Bytes on a connection still being opened (a server that speaks first: a banner, an
/// early error; the blocking adapter's poll set can report them before the connecting
/// thread reports the connection open) close it. The request it was opened for must then
/// fail at once, not be forgotten until its call's deadline.
#[test]
fn bytes_before_the_request_is_written_fail_it_at_once() {
    let mut sim = HttpSim::with_http(config(EraMode::Auto), http(4), modern);
    sim.connect();
    sim.call(CallRequest::call_tool("warm", json!({}))).unwrap();
    // The kept-alive connection is gone; the next one never reports itself open.
    sim.server_closes(sim.connects[0]);
    sim.connect_script.push_back(ConnectOutcome::Hang);
    let call = sim.start(CallRequest::call_tool("t", json!({})).timeout(Duration::from_secs(60)));
    sim.step();
    let conn = *sim.connects.last().unwrap();
    assert_eq!(sim.connects.len(), 2);
    sim.server_sends(conn, b"SSH-2.0-OpenSSH_9.6\r\n");
    assert_eq!(sim.closed.last(), Some(&conn), "the connection is closed");
    for _ in 0..3 {
        sim.step();
    }
    assert!(
        sim.completion(call).is_some(),
        "the call is left waiting for a connection that was closed (until its deadline, {:?} away)",
        sim.client.poll_timeout().map(|t| t - sim.now)
    );
    assert!(matches!(
        sim.completion(call),
        Some(Err(CallError::Http(_)))
    ));
}

/// A legacy server may answer one request on the event stream of another's POST (each
/// message goes to exactly one stream). The request whose answer came elsewhere owes
/// nothing more on its own stream: that exchange must let its connection go (as a
/// stream that brought its answer does, after a linger), not hold it for as long as
/// the server keeps the stream open.
#[test]
fn a_stream_whose_answer_came_on_another_stream_lets_its_connection_go() {
    let mut sim = HttpSim::with_http(config(EraMode::Legacy), http(4), |req| {
        match req.rpc_method() {
            "tools/call" if req.body["params"]["name"] == "slow" => Reply::Silence,
            _ => legacy(req),
        }
    });
    sim.connect();
    let a = sim.start(CallRequest::call_tool("slow", json!({"which":"a"})));
    let b = sim.start(CallRequest::call_tool("slow", json!({"which":"b"})));
    sim.run_until(|s| s.hung.len() == 2);
    let sent = |which: &str| {
        let at = sim
            .requests
            .iter()
            .position(|r| r.body["params"]["arguments"]["which"] == which)
            .unwrap();
        (sim.request_conns[at], sim.requests[at].body["id"].clone())
    };
    let ((conn_a, id_a), (conn_b, id_b)) = (sent("a"), sent("b"));
    assert_ne!(conn_a, conn_b);
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    // B's stream opens, and stays open with nothing on it.
    sim.server_sends(conn_b, head.as_bytes());
    // A's stream carries B's answer, then A's own, and ends.
    let event = |id: &Value, text: &str| {
        let msg =
            json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":text}]}});
        format!("data: {msg}\n\n")
    };
    let body = format!("{}{}", event(&id_b, "b"), event(&id_a, "a"));
    let stream = format!("{head}{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    sim.server_sends(conn_a, stream.as_bytes());
    sim.run_until(|s| s.completion(a).is_some() && s.completion(b).is_some());
    assert_eq!(text_of(&sim.completion(b).unwrap().unwrap()), "b");
    assert_eq!(text_of(&sim.completion(a).unwrap().unwrap()), "a");
    sim.advance(Duration::from_secs(5));
    sim.advance(Duration::from_secs(120));
    assert!(
        sim.closed.contains(&conn_b),
        "b's stream still holds its connection, with nothing owed on it: open {:?}, closed {:?}",
        sim.open,
        sim.closed
    );
}

/// The `Authorization` value and the session id a `POST` carries are those of the moment
/// it is written: a value set between two calls, a value taken away, and a session that
/// replaced an expired one are what the next requests carry, however many requests went
/// out with the previous ones.
#[test]
fn each_post_carries_the_authorization_and_session_current_when_it_is_written() {
    use std::cell::Cell;
    use std::rc::Rc;
    let sessions = Rc::new(Cell::new(0u32));
    let expire = Rc::new(Cell::new(false));
    let (s, e) = (Rc::clone(&sessions), Rc::clone(&expire));
    let mut sim = HttpSim::with_http(config(EraMode::Legacy), http(4), move |req| {
        if req.rpc_method() == "initialize" {
            s.set(s.get() + 1);
            let sid = format!("session-{}", s.get());
            return Reply::with_body(
                200,
                &[
                    ("Content-Type", "application/json"),
                    ("Mcp-Session-Id", &sid),
                ],
                &json!({"jsonrpc":"2.0","id":req.body["id"],"result":{
                    "protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                    "serverInfo":{"name":"legacy","version":"1"}}})
                .to_string(),
            );
        }
        if req.rpc_method() == "tools/call" && e.replace(false) {
            return Reply::with_body(404, &[], "");
        }
        legacy(req)
    });
    sim.connect();
    let last_post = |sim: &HttpSim<_>| -> (Option<String>, Option<String>) {
        let req = sim
            .requests
            .iter()
            .rev()
            .find(|r| r.method == "POST")
            .unwrap();
        let header = |name: &str| req.header(name).map(str::to_owned);
        (header("authorization"), header("mcp-session-id"))
    };
    let session = |n: u32| Some(format!("session-{n}"));
    let echo = || CallRequest::call_tool("echo", json!({}));
    let call = |sim: &mut HttpSim<_>| assert_eq!(text_of(&sim.call(echo()).expect("echo")), "echo");
    call(&mut sim);
    assert_eq!(last_post(&sim), (None, session(1)));
    for token in ["Bearer alice", "Bearer alice", "Bearer bob"] {
        sim.client.set_authorization(Some(token.into()));
        call(&mut sim);
        call(&mut sim);
        assert_eq!(last_post(&sim), (Some(token.into()), session(1)));
    }
    sim.client.set_authorization(None);
    call(&mut sim);
    assert_eq!(last_post(&sim), (None, session(1)));
    sim.client.set_authorization(Some("Bearer carol".into()));
    expire.set(true);
    // The 404 says the call never ran: it goes again, on the new session.
    call(&mut sim);
    assert_eq!(sessions.get(), 2, "the expired session was replaced");
    assert_eq!(last_post(&sim), (Some("Bearer carol".into()), session(2)));
    call(&mut sim);
    assert_eq!(last_post(&sim), (Some("Bearer carol".into()), session(2)));
}
