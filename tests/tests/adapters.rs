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
