//! `mcp-blocking` and `mcp-smol` side by side: the same names importable from both, the
//! very same types where they share one, and the same error (kind and message) for the
//! same failure.

use std::net::TcpListener;

use futures_lite::future;
use serde_json::json;

/// The names both adapters export at their root, each as a `use` of `$krate`, so that
/// a name missing from either crate fails to compile.
macro_rules! common_api {
    ($krate:ident) => {
        #[allow(unused_imports)]
        use $krate::{
            AcceptDefaults, CallError, CallId, CallOutput, CallRequest, CallToolResult, Client,
            ClientCapabilities, ClientConfig, CloseReason, Connector, DEFAULT_CONNECT_TIMEOUT,
            DEFAULT_GRACE_PERIOD, DEFAULT_MAX_CONNECTIONS, DEFAULT_STDERR_LIMIT, DeclineAll,
            Direction, EndpointUrl, Era, EraCache, EraMode, Error, Flavour, HttpFailure,
            HttpOptions, HttpServeOptions, Implementation, InputAnswer, InputHandler, InputRequest,
            Limits, Local, Notification, Options, Origin, PeerError, Progress, ProgressHandler,
            Prompt, ProtocolVersion, ResolveError, Resource, ServerDetails, Shutdown, StdioCommand,
            TcpConnector, TlsUnavailable, Tool, TranscriptSink, TransportError, TransportErrorKind,
            TransportFailure, TransportFailureKind, UrlError, WireLog, connect_http,
            connect_http_with, connect_stdio, connect_stdio_with, mcp_proto, serde_json, serve,
            serve_http, serve_stdio, transcript,
        };
    };
}

mod blocking_names {
    common_api!(mcp_blocking);
}

mod smol_names {
    common_api!(mcp_smol);
}

/// The shared names are one type each, not two look-alikes: a value of either crate's
/// is a value of the other's.
#[test]
fn shared_names_are_the_same_types() {
    fn same<T>(a: T) -> T {
        a
    }
    let _: mcp_smol::Options = same::<mcp_blocking::Options>(mcp_blocking::Options::new());
    let _: mcp_smol::Options<mcp_smol::Local> =
        mcp_blocking::Options::<mcp_blocking::Local>::local();
    let _: mcp_smol::StdioCommand = mcp_blocking::StdioCommand::new("x");
    let _: mcp_smol::ClientConfig = mcp_blocking::ClientConfig::new("a", "1");
    let _: mcp_smol::EraCache = mcp_blocking::EraCache::new();
    let _: mcp_smol::TransportErrorKind = mcp_blocking::TransportErrorKind::Connect;
    let _: fn(mcp_blocking::Error) -> mcp_smol::Error = same;
    let _: fn(mcp_blocking::TransportError) -> mcp_smol::TransportError = same;
    let _: fn(mcp_blocking::TlsUnavailable) -> mcp_smol::TlsUnavailable = same;
    let _: fn(mcp_blocking::CallToolResult) -> mcp_smol::CallToolResult = same;
    let _: fn(mcp_blocking::Shutdown) -> mcp_smol::Shutdown = same;
    let _: mcp_smol::EraMode = mcp_blocking::EraMode::Auto;
    let _: mcp_smol::HttpServeOptions = mcp_blocking::HttpServeOptions::default();
    assert_eq!(
        mcp_blocking::DEFAULT_GRACE_PERIOD,
        mcp_smol::DEFAULT_GRACE_PERIOD
    );
}

fn config() -> mcp_proto::client::ClientConfig {
    mcp_proto::client::ClientConfig::new("mcp-tests-adapters", "0.0.0")
}

fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// What `mcp-smol` reports for `url` once its driver has tried to connect.
fn smol_connect_error(url: &str) -> mcp_smol::Error {
    let (client, driver) = mcp_smol::connect_http(url, config()).expect("only the URL is checked");
    let work = async move { client.connected().await.expect_err("nothing listens") };
    let (driven, e) = future::block_on(future::zip(driver, work));
    let ended = driven.expect_err("the driver reports the failure too");
    assert_eq!(ended.to_string(), e.to_string());
    e
}

#[test]
fn a_closed_port_is_the_same_error_in_both_adapters() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    let blocking = mcp_blocking::Client::connect_http(&url, config()).expect_err("nothing listens");
    let smol = smol_connect_error(&url);

    assert_eq!(blocking.kind(), "unreachable");
    assert_eq!(smol.kind(), blocking.kind());
    assert_eq!(smol.to_string(), blocking.to_string());
    assert!(
        blocking
            .to_string()
            .starts_with(&format!("cannot connect to {}", &url[..url.len() - 4])),
        "{blocking}"
    );
    let (b, s) = (
        blocking.transport_error().expect("typed"),
        smol.transport_error().expect("typed"),
    );
    assert_eq!(b.kind(), mcp_blocking::TransportErrorKind::Connect);
    assert_eq!(s.kind(), b.kind());
    assert_eq!(s.endpoint(), b.endpoint());
    assert_eq!(smol.http_status(), blocking.http_status());
}

#[test]
fn an_unacceptable_url_is_the_same_error_in_both_adapters() {
    let url = "http://example.com/mcp";
    let blocking = mcp_blocking::Client::connect_http(url, config()).expect_err("remote http");
    let smol = mcp_smol::connect_http(url, config()).expect_err("remote http");
    assert_eq!(blocking.kind(), "invalid-url");
    assert_eq!(smol.kind(), blocking.kind());
    assert_eq!(smol.to_string(), blocking.to_string());
}

#[test]
fn a_missing_program_is_the_same_error_in_both_adapters() {
    let program = "mcp-tests-no-such-server-anywhere";
    let blocking =
        mcp_blocking::Client::connect_stdio(mcp_blocking::StdioCommand::new(program), config())
            .expect_err("no such program");
    let smol = mcp_smol::connect_stdio(mcp_smol::StdioCommand::new(program), config())
        .expect_err("no such program");
    assert_eq!(blocking.kind(), "spawn");
    assert_eq!(smol.kind(), blocking.kind());
    assert_eq!(smol.to_string(), blocking.to_string());
}

/// Arguments are a JSON `Value` in both, and the same non-objects are refused the same
/// way, before anything is sent.
#[test]
fn arguments_that_are_not_an_object_are_refused_alike() {
    let server = mcp_blocking::serve_http_on("127.0.0.1:0", mcp_proto::server::example::server())
        .expect("serve the example server");
    let url = server.url();

    let mut blocking = mcp_blocking::Client::connect_http(&url, config()).expect("connect");
    let b_tool = blocking
        .call_tool("add", json!([2, 3]))
        .expect_err("an array");
    let b_prompt = blocking
        .get_prompt("greet", json!("Ada"))
        .expect_err("a string");
    // Null is "no arguments" for both methods.
    let b_null = blocking
        .get_prompt("greet", json!(null))
        .expect_err("name is required");
    blocking.close();

    let (client, driver) = mcp_smol::connect_http(&url, config()).expect("connect");
    let work = async move {
        let tool = client
            .call_tool("add", json!([2, 3]))
            .await
            .expect_err("an array");
        let prompt = client
            .get_prompt("greet", json!("Ada"))
            .await
            .expect_err("a string");
        let null = client
            .get_prompt("greet", json!(null))
            .await
            .expect_err("name is required");
        client.close().await;
        (tool, prompt, null)
    };
    let (driven, (s_tool, s_prompt, s_null)) = future::block_on(future::zip(driver, work));
    driven.expect("clean end");

    for (b, s) in [(&b_tool, &s_tool), (&b_prompt, &s_prompt)] {
        assert_eq!(b.kind(), "misuse");
        assert_eq!(s.kind(), b.kind());
        assert_eq!(s.to_string(), b.to_string());
    }
    assert_eq!(
        b_tool.to_string(),
        "invalid use of the client: arguments must be a JSON object (or null for none), not an array"
    );
    assert_eq!(b_null.code(), Some(-32602), "{b_null:?}");
    assert_eq!(s_null.code(), b_null.code());
    assert_eq!(s_null.kind(), b_null.kind());
    drop(server);
}

/// A stdio server for the failures a call can meet, in both eras: `fail` is a tool
/// error result, `slow` never answers, `crash` exits, any other tool is unknown
/// (`-32602`).
const FAILING_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
              "serverInfo": {"name": "failing", "version": "1"}}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "failing", "version": "1"}}})
    elif method == "tools/call":
        name = m["params"]["name"]
        if name == "crash":
            sys.exit(3)
        elif name == "slow":
            pass
        elif name == "fail":
            send({"jsonrpc": "2.0", "id": mid, "result": {"isError": True,
                  "content": [{"type": "text", "text": "it broke"}]}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602,
                  "message": "Unknown tool: " + name}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// The failures of [`FAILING_SERVER`], one call each, as `(kind, message)`.
type Outcomes = Vec<(String, String)>;

fn outcome<T: std::fmt::Debug>(r: Result<T, mcp_blocking::Error>) -> (String, String) {
    match r {
        Ok(v) => ("ok".to_owned(), format!("{v:?}")),
        Err(e) => (e.kind().to_owned(), e.to_string()),
    }
}

fn failing_calls() -> Vec<mcp_blocking::CallRequest> {
    let slow = mcp_blocking::CallRequest::call_tool("slow", json!({}))
        .timeout(std::time::Duration::from_millis(300));
    vec![
        mcp_blocking::CallRequest::call_tool("nope", json!({})),
        slow,
        mcp_blocking::CallRequest::call_tool("crash", json!({})),
        // After the server exited.
        mcp_blocking::CallRequest::call_tool("fail", json!({})),
    ]
}

fn blocking_failures(python: &str, mode: mcp_blocking::EraMode) -> Outcomes {
    let command = mcp_blocking::StdioCommand::new(python).args(["-c", FAILING_SERVER]);
    let mut client =
        mcp_blocking::Client::connect_stdio(command, config().era_mode(mode)).expect("connect");
    let fail = client
        .call_tool("fail", json!({}))
        .expect("a tool error is a result");
    assert_eq!(fail.is_error, Some(true));
    let done = client
        .start_task(failing_calls().remove(0))
        .expect("started");
    let _ = client.task_result(done);
    let mut outcomes = Vec::new();
    for request in failing_calls() {
        outcomes.push(outcome(client.request(request).map(|_| ())));
    }
    // The connection is over now.
    outcomes.push(outcome(client.cancel_task(done)));
    outcomes.push(outcome(client.end_listen(done)));
    client.close();
    outcomes
}

fn smol_failures(python: &str, mode: mcp_blocking::EraMode) -> Outcomes {
    let command = mcp_smol::StdioCommand::new(python).args(["-c", FAILING_SERVER]);
    let (client, driver) =
        mcp_smol::connect_stdio(command, config().era_mode(mode)).expect("connect");
    let work = async move {
        let fail = client.call_tool("fail", json!({})).await;
        assert_eq!(fail.expect("a tool error is a result").is_error, Some(true));
        let done = client.start_task(failing_calls().remove(0)).await;
        let done = done.expect("started");
        let _ = client.task_result(done).await;
        let mut outcomes = Vec::new();
        for request in failing_calls() {
            outcomes.push(outcome(client.request(request).await.map(|_| ())));
        }
        // The connection is over now.
        outcomes.push(outcome(client.cancel_task(done)));
        outcomes.push(outcome(client.end_listen(done)));
        client.close().await;
        outcomes
    };
    let (_, outcomes) = future::block_on(future::zip(driver, work));
    outcomes
}

/// An unknown tool, a timeout, a server that exits in a call (with no restart policy,
/// the connection is over), and a call and a cancellation after that: the same kind and
/// the same message from both adapters, in both eras.
#[test]
fn call_failures_are_the_same_errors_in_both_adapters() {
    let Some(python) = mcp_tests::python() else {
        eprintln!("skipped: no python");
        return;
    };
    for mode in [mcp_blocking::EraMode::Auto, mcp_blocking::EraMode::Legacy] {
        let blocking = blocking_failures(python, mode);
        let smol = smol_failures(python, mode);
        eprintln!("{mode:?}\n  blocking {blocking:#?}\n  smol {smol:#?}");
        let kinds: Vec<&str> = blocking.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "unknown-name",
                "timeout",
                "closed",
                "closed",
                "closed",
                "closed"
            ],
            "{mode:?}"
        );
        assert_eq!(smol, blocking, "{mode:?}");
    }
}

/// The errors of both adapters connecting to `sh -c script`, a server that fails.
fn connect_errors(script: &str) -> (mcp_blocking::Error, mcp_smol::Error) {
    let blocking = mcp_blocking::Client::connect_stdio(
        mcp_blocking::StdioCommand::new("sh").args(["-c", script]),
        config(),
    )
    .expect_err("the server fails");
    let (client, driver) = mcp_smol::connect_stdio(
        mcp_smol::StdioCommand::new("sh").args(["-c", script]),
        config(),
    )
    .expect("spawned");
    let work = async move { client.connected().await.expect_err("the server fails") };
    let (driven, smol) = future::block_on(future::zip(driver, work));
    eprintln!("blocking: {blocking}\nsmol: {smol}\ndriver: {driven:?}");
    (blocking, smol)
}

/// A server that exits before it answers anything: the same error from both.
#[test]
fn a_server_that_exits_at_once_is_the_same_error_in_both_adapters() {
    let (blocking, smol) = connect_errors("echo 'no config file' >&2; exit 3");
    assert_eq!(smol.kind(), blocking.kind());
    assert_eq!(smol.to_string(), blocking.to_string());
    assert_eq!(smol.stderr_tail(), blocking.stderr_tail());
    // Started again after it exited on the era probe: the run that failed is told, once.
    assert_eq!(blocking.stderr_tail(), Some("no config file\n"));
    assert!(
        blocking.to_string().ends_with("(it exited with status 3)"),
        "{blocking}"
    );
    assert_eq!(
        matches!(
            smol,
            mcp_smol::Error::Connect {
                exit_status: Some(_),
                ..
            }
        ),
        matches!(
            blocking,
            mcp_blocking::Error::Connect {
                exit_status: Some(_),
                ..
            }
        ),
        "{smol:?} / {blocking:?}"
    );
}

/// A server that prints a log line to stdout and exits: both adapters quote the line in
/// their connect error, the same way.
#[test]
fn a_log_line_on_stdout_is_quoted_alike_by_both_adapters() {
    let (blocking, smol) =
        connect_errors("read line; echo 'Server v1.2 starting on stdio...'; exit 3");
    assert_eq!(smol.to_string(), blocking.to_string());
    assert_eq!(smol.unreadable_line(), blocking.unreadable_line());
    assert_eq!(
        blocking.unreadable_line().map(|l| l.start.as_str()),
        Some("Server v1.2 starting on stdio...")
    );
    assert!(
        blocking.to_string().ends_with(
            "(it exited with status 3); the server wrote a line to stdout that is not JSON \
             (stdout is for JSON-RPC messages only; a server logs to stderr): \
             \"Server v1.2 starting on stdio...\""
        ),
        "{blocking}"
    );
    assert_eq!(blocking.kind(), "connect");
}

/// URLs refused before anything connects: the same error from both.
#[test]
fn bad_urls_are_the_same_errors_in_both_adapters() {
    for url in [
        "ftp://127.0.0.1/mcp",
        "not a url",
        "",
        "http://user:pw@127.0.0.1/mcp",
        "http://127.0.0.1/mcp#frag",
        "http://127.0.0.1:99999/mcp",
        "https://[::1/mcp",
    ] {
        let blocking = mcp_blocking::Client::connect_http(url, config()).expect_err(url);
        let smol = mcp_smol::connect_http(url, config()).expect_err(url);
        eprintln!("{url}: {blocking}");
        assert_eq!(smol.kind(), blocking.kind(), "{url}");
        assert_eq!(smol.to_string(), blocking.to_string(), "{url}");
    }
}

/// Ending a call that is over already (`cancel_task`, `end_listen`): the same answer
/// from both.
#[test]
fn cancelling_a_finished_call_is_answered_alike() {
    let server = mcp_blocking::serve_http_on("127.0.0.1:0", mcp_proto::server::example::server())
        .expect("serve the example server");
    let url = server.url();
    let add = || mcp_blocking::CallRequest::call_tool("add", json!({"a": 1, "b": 2}));

    let mut blocking = mcp_blocking::Client::connect_http(&url, config()).expect("connect");
    let call = blocking.start_task(add()).expect("started");
    blocking.task_result(call).expect("done");
    let b = outcome(blocking.cancel_task(call));
    let b_end = outcome(blocking.end_listen(call));
    // The call kept its outcome: nothing was cancelled.
    assert!(blocking.poll_task_result(call).is_none(), "taken once");
    blocking.close();

    let (client, driver) = mcp_smol::connect_http(&url, config()).expect("connect");
    let work = async move {
        let call = client.start_task(add()).await.expect("started");
        client.task_result(call).await.expect("done");
        let s = outcome(client.cancel_task(call));
        let s_end = outcome(client.end_listen(call));
        client.close().await;
        (s, s_end)
    };
    let (_, (s, s_end)) = future::block_on(future::zip(driver, work));
    eprintln!("blocking {b:?} {b_end:?}\nsmol {s:?} {s_end:?}");
    assert_eq!(s, b);
    assert_eq!(s_end, b_end);
    assert_eq!(b.0, "ok", "a call over already is left as it is");
    drop(server);
}

/// An HTTP endpoint that accepts connections and never answers, and one that answers
/// every request with a `500`: the same error from both adapters.
#[test]
fn silent_and_failing_endpoints_are_the_same_errors_in_both_adapters() {
    use std::io::{Read, Write};
    use std::time::Duration;

    for answer in [
        None,
        Some("HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n\r\noops"),
    ] {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for mut stream in listener.incoming().flatten() {
                if let Some(answer) = answer {
                    let mut buf = [0u8; 4096];
                    let _ = stream.read(&mut buf);
                    let _ = stream.write_all(answer.as_bytes());
                }
                held.push(stream);
            }
        });
        let mut limits = mcp_blocking::Limits::default();
        limits.probe_timeout = Duration::from_millis(300);
        limits.initialize_timeout = Duration::from_millis(300);
        limits.connect_timeout = Duration::from_secs(2);
        let config = || config().limits(limits.clone());
        let blocking = mcp_blocking::Client::connect_http(&url, config()).expect_err("no answer");
        let (client, driver) = mcp_smol::connect_http(&url, config()).expect("URL is fine");
        let work = async move { client.connected().await.expect_err("no answer") };
        let (_, smol) = future::block_on(future::zip(driver, work));
        eprintln!(
            "{answer:?}\n  blocking: {blocking} ({})\n  smol: {smol} ({})",
            blocking.kind(),
            smol.kind()
        );
        assert_eq!(smol.kind(), blocking.kind());
        assert_eq!(smol.to_string(), blocking.to_string());
        assert_eq!(smol.http_status(), blocking.http_status());
    }
}

/// What a case of [`the_same_failure_is_the_same_error_in_both_adapters`] connects to.
enum Peer {
    /// An HTTP endpoint, with `HttpOptions::connect_timeout`.
    Http(String, std::time::Duration),
    /// A stdio server: a program and its arguments.
    Stdio(&'static str, Vec<&'static str>),
}

/// One failure to provoke: the peer, the limits, and the call to make once connected
/// (none: connecting is what fails).
struct Case {
    name: &'static str,
    peer: Peer,
    limits: mcp_proto::Limits,
    call: Option<mcp_blocking::CallRequest>,
    /// What the message must say (the limit that ran out, say).
    says: &'static str,
}

/// A loopback listener that does `answer` with every connection: reads what comes and
/// writes the bytes given (`Some`), or holds it silent (`None`); or, when `close` is set,
/// closes each connection once the request came, answering nothing.
fn raw_peer(answer: Option<&'static str>, close: bool) -> String {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            if close {
                // Read first: closing with a request unread would reset the connection,
                // or not, by the luck of timing.
                let _ = stream.read(&mut buf);
                continue;
            }
            if let Some(answer) = answer {
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(answer.as_bytes());
            }
            held.push(stream);
        }
    });
    addr.to_string()
}

fn blocking_outcome(case: &Case) -> (String, String) {
    let config = config().limits(case.limits.clone());
    let connected = match &case.peer {
        Peer::Http(url, connect) => mcp_blocking::Client::connect_http_with(
            url,
            config,
            mcp_blocking::Options::new(),
            mcp_blocking::HttpOptions::new().connect_timeout(*connect),
        ),
        Peer::Stdio(program, args) => mcp_blocking::Client::connect_stdio(
            mcp_blocking::StdioCommand::new(program).args(args.iter().copied()),
            config,
        ),
    };
    let mut client = match connected {
        Ok(client) => client,
        Err(e) => return outcome::<()>(Err(e)),
    };
    let call = case.call.clone().expect("a call for a peer that connects");
    let out = outcome(client.request(call).map(|_| ()));
    client.close();
    out
}

fn smol_outcome(case: &Case) -> (String, String) {
    let config = config().limits(case.limits.clone());
    let connected = match &case.peer {
        Peer::Http(url, connect) => mcp_smol::connect_http_with(
            url,
            config,
            mcp_smol::Options::new(),
            mcp_smol::HttpOptions::new().connect_timeout(*connect),
        ),
        Peer::Stdio(program, args) => mcp_smol::connect_stdio(
            mcp_smol::StdioCommand::new(program).args(args.iter().copied()),
            config,
        ),
    };
    let (client, driver) = match connected {
        Ok(pair) => pair,
        Err(e) => return outcome::<()>(Err(e)),
    };
    let call = case.call.clone();
    let work = async move {
        let out = match call {
            None => outcome(client.connected().await.map(|_| ())),
            Some(call) => match client.connected().await {
                Err(e) => outcome::<()>(Err(e)),
                Ok(_) => outcome(client.request(call).await.map(|_| ())),
            },
        };
        client.close().await;
        out
    };
    future::block_on(future::zip(driver, work)).1
}

/// Every failure that can be provoked on loopback, with each adapter: the same kind and
/// the same message, and the message names the limit that ran out, when one did.
#[test]
fn the_same_failure_is_the_same_error_in_both_adapters() {
    use std::time::Duration;
    let quick = || {
        let mut limits = mcp_proto::Limits::default();
        limits.probe_timeout = Duration::from_millis(300);
        limits.initialize_timeout = Duration::from_millis(400);
        limits.connect_timeout = Duration::from_secs(5);
        limits
    };
    let connect = mcp_blocking::DEFAULT_CONNECT_TIMEOUT;
    let example = mcp_blocking::serve_http_on("127.0.0.1:0", mcp_proto::server::example::server())
        .expect("serve the example server");
    let silent = vec!["-c", "cat >/dev/null"];
    let mut whole = quick();
    whole.initialize_timeout = Duration::from_secs(10);
    whole.connect_timeout = Duration::from_millis(600);
    let cases = [
        Case {
            name: "closed port",
            peer: Peer::Http(format!("http://127.0.0.1:{}/mcp", closed_port()), connect),
            limits: quick(),
            call: None,
            says: "cannot connect to",
        },
        Case {
            name: "server that closes at once",
            peer: Peer::Http(format!("http://{}/mcp", raw_peer(None, true)), connect),
            limits: quick(),
            call: None,
            says: "connection closed before a response began",
        },
        Case {
            name: "stdio command not found",
            peer: Peer::Stdio("mcp-tests-no-such-server-anywhere", vec![]),
            limits: quick(),
            call: None,
            says: "not found on PATH",
        },
        Case {
            name: "stdio server exiting with status 3",
            peer: Peer::Stdio("sh", vec!["-c", "exit 3"]),
            limits: quick(),
            call: None,
            says: "(it exited with status 3)",
        },
        Case {
            name: "call timeout",
            peer: Peer::Http(example.url(), connect),
            limits: quick(),
            call: Some(
                mcp_blocking::CallRequest::call_tool("hang", json!({}))
                    .timeout(Duration::from_millis(300)),
            ),
            says: "no answer within 300ms (the call's timeout: CallRequest::timeout, else Limits::request_timeout)",
        },
        Case {
            name: "handshake timeout",
            peer: Peer::Stdio("sh", silent.clone()),
            limits: quick(),
            call: None,
            says: "within 400ms (Limits::initialize_timeout)",
        },
        Case {
            name: "connecting as a whole times out",
            peer: Peer::Stdio("sh", silent),
            limits: whole,
            call: None,
            says: "600ms (Limits::connect_timeout)",
        },
        Case {
            name: "silent HTTP endpoint",
            peer: Peer::Http(format!("http://{}/mcp", raw_peer(None, false)), connect),
            limits: quick(),
            call: None,
            says: "no answer to server/discover within 400ms (Limits::initialize_timeout)",
        },
        Case {
            name: "HTTP 500 on initialize",
            peer: Peer::Http(
                format!(
                    "http://{}/mcp",
                    raw_peer(
                        Some("HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n\r\noops"),
                        false
                    )
                ),
                connect,
            ),
            limits: quick(),
            call: None,
            says: "HTTP 500",
        },
        Case {
            name: "TLS to a plain-text port",
            peer: Peer::Http(
                format!(
                    "https://{}/mcp",
                    raw_peer(
                        Some(
                            "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        ),
                        false
                    )
                ),
                connect,
            ),
            limits: quick(),
            call: None,
            says: "TLS failed with",
        },
        Case {
            name: "HTTP connect timeout (a TLS handshake that never completes)",
            peer: Peer::Http(
                format!("https://{}/mcp", raw_peer(None, false)),
                Duration::from_millis(700),
            ),
            limits: mcp_proto::Limits::default(),
            call: None,
            says: "700ms (HttpOptions::connect_timeout)",
        },
    ];
    let mut differ = Vec::new();
    for case in &cases {
        let blocking = blocking_outcome(case);
        let smol = smol_outcome(case);
        eprintln!(
            "{}:\n  blocking {blocking:?}\n  smol     {smol:?}",
            case.name
        );
        if smol != blocking || !blocking.1.contains(case.says) {
            differ.push(case.name);
        }
    }
    assert!(
        differ.is_empty(),
        "the adapters differ, or do not say what failed, on {differ:?}"
    );
    drop(example);
}
