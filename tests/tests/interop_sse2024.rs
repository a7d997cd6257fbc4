//! Interop with the 2024-11-05 HTTP+SSE transport of
//! `@modelcontextprotocol/server-everything` (`sse` mode: `GET /sse`, `POST /message`),
//! through both adapters and the CLI. Each test re-runs itself (alone) inside a network
//! namespace of its own, since server-everything binds every interface; the client only
//! ever connects to 127.0.0.1.
//!
//! With old versions accepted, `server/discover` and `initialize` POSTed to `/sse` draw a
//! 404, the client opens the GET stream, takes the `endpoint` event and runs the session
//! over it: tools are listed, `echo` answers, and an elicitation the server sends on the
//! stream is answered by POST. Without the opt-in the connection fails with the 404 and a
//! message that names the old transport and the opt-in.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use futures_lite::future;
use mcp_blocking::{Direction, HttpOptions, Options, WireLog};
use mcp_proto::client::ClientConfig;
use mcp_proto::model::ClientCapabilities;
use mcp_proto::{Era, EraMode, Limits};
use mcp_tests::interop::{
    FillForms, Fixture, HttpServer, fixture_installed, http_fixture, in_private_netns,
    run_in_private_netns,
};
use serde_json::json;

/// Runs `body` against a fresh server-everything in `sse` mode, inside a private network
/// namespace (the outer run starts the copy and returns).
fn in_netns(name: &str, body: impl FnOnce(&HttpServer)) {
    if !in_private_netns() {
        if fixture_installed(Fixture::Everything) {
            run_in_private_netns(name);
        }
        return;
    }
    let Some(server) = http_fixture(Fixture::Everything, &["sse"]) else {
        return;
    };
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    body(&server);
}

fn config(opted_in: bool) -> ClientConfig {
    let mut limits = Limits::default();
    limits.request_timeout = Duration::from_secs(20);
    let config = ClientConfig::new("interop-sse2024-test", "1.0")
        .era_mode(EraMode::Auto)
        .capabilities(ClientCapabilities::with_elicitation())
        .limits(limits);
    if opted_in {
        config.accept_pre_2025_06_versions()
    } else {
        config
    }
}

/// Every byte the client saw on the wire.
#[derive(Clone, Default)]
struct Wire(Arc<Mutex<Vec<u8>>>);

impl Wire {
    fn log(&self) -> WireLog {
        let buf = Arc::clone(&self.0);
        Box::new(move |dir, bytes| {
            let mut b = buf.lock().unwrap_or_else(PoisonError::into_inner);
            b.extend_from_slice(match dir {
                Direction::Sent => b"C>S ",
                _ => b"S>C ",
            });
            b.extend_from_slice(bytes);
            if !bytes.ends_with(b"\n") {
                b.push(b'\n');
            }
        })
    }

    fn text(&self) -> String {
        let b = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&b).into_owned()
    }
}

/// What the wire must show: the 404s on `/sse`, the stream, and POSTs to the endpoint.
fn assert_old_transport_on_the_wire(wire: &str, server: &HttpServer) {
    let ctx = || format!("-- wire --\n{wire}\n-- server --\n{}", server.output());
    assert!(wire.contains("C>S POST /sse HTTP/1.1"), "{}", ctx());
    assert!(wire.contains("S>C HTTP/1.1 404"), "{}", ctx());
    assert!(wire.contains("C>S GET /sse HTTP/1.1"), "{}", ctx());
    assert!(wire.contains("event: endpoint"), "{}", ctx());
    assert!(
        wire.contains("C>S POST /message?sessionId=[redacted]"),
        "{}",
        ctx()
    );
    // The session's only credential stays out of the log on the stream too.
    assert!(
        wire.contains("S>C data: /message?sessionId=[redacted]"),
        "{}",
        ctx()
    );
}

#[test]
fn server_everything_sse_through_the_blocking_adapter() {
    in_netns(
        "server_everything_sse_through_the_blocking_adapter",
        |server| {
            let wire = Wire::default();
            let forms = Arc::new(Mutex::new(FillForms::default()));
            let mut options = Options::new();
            options.wire_log = Some(wire.log());
            let handler = SharedForms(Arc::clone(&forms));
            options.input_handler = Box::new(handler);
            let mut client = mcp_blocking::Client::connect_http_with(
                &server.url,
                config(true),
                options,
                HttpOptions::new(),
            )
            .unwrap_or_else(|e| panic!("connect: {e}\n{}\n{}", wire.text(), server.output()));
            assert_eq!(client.era(), Era::Legacy);
            eprintln!("negotiated {} over HTTP+SSE", client.protocol_version());
            let names: Vec<String> = client
                .list_tools()
                .unwrap_or_else(|e| panic!("tools/list: {e}\n{}", wire.text()))
                .into_iter()
                .map(|t| t.name)
                .collect();
            assert!(names.iter().any(|n| n == "echo"), "{names:?}");
            let echoed = client
                .call_tool("echo", json!({"message": "over the old transport"}))
                .unwrap_or_else(|e| panic!("echo: {e}\n{}", wire.text()));
            assert_eq!(echoed.text(), "Echo: over the old transport");
            // The server's elicitation comes on the stream; the answer is POSTed.
            let answered = client
                .call_tool("trigger-elicitation-request", json!({}))
                .unwrap_or_else(|e| panic!("elicitation: {e}\n{}", wire.text()));
            assert!(
                answered
                    .text()
                    .contains("User provided the requested information"),
                "{}\n{}",
                answered.text(),
                wire.text()
            );
            let seen = forms
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .seen
                .len();
            assert_eq!(seen, 1, "one form reached the handler");
            let _ = client.close();
            assert_old_transport_on_the_wire(&wire.text(), server);
            assert!(
                !wire.text().contains("C>S DELETE"),
                "no DELETE in this transport"
            );
        },
    );
}

/// A form filler the test can read afterwards.
struct SharedForms(Arc<Mutex<FillForms>>);

impl mcp_proto::client::InputHandler for SharedForms {
    fn answer(
        &mut self,
        request: &mcp_proto::client::InputRequest,
    ) -> mcp_proto::client::InputAnswer {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .answer(request)
    }
}

#[test]
fn server_everything_sse_needs_the_opt_in() {
    in_netns("server_everything_sse_needs_the_opt_in", |server| {
        let Err(err) = mcp_blocking::Client::connect_http(&server.url, config(false)) else {
            panic!("connected without the opt-in")
        };
        let text = err.to_string();
        assert_eq!(err.http_status(), Some(404), "{text}");
        assert!(
            text.contains("HTTP+SSE") && text.contains("accept_pre_2025_06_versions"),
            "{text}"
        );
    });
}

#[test]
fn server_everything_sse_through_the_smol_adapter() {
    in_netns("server_everything_sse_through_the_smol_adapter", |server| {
        let wire = Wire::default();
        let mut options = mcp_smol::Options::new();
        options.wire_log = Some(wire.log());
        let (client, driver) = mcp_smol::connect_http_with(
            &server.url,
            config(true),
            options,
            mcp_smol::HttpOptions::new(),
        )
        .expect("the URL is acceptable");
        let work = async move {
            let details = client.connected().await.expect("connected");
            assert_eq!(details.protocol_version.era(), Era::Legacy);
            let tools = client.list_tools().await.expect("tools/list");
            assert!(tools.iter().any(|t| t.name == "echo"));
            let echoed = client
                .call_tool("echo", json!({"message": "smol"}))
                .await
                .expect("echo");
            assert_eq!(echoed.text(), "Echo: smol");
            let sum = client
                .call_tool("get-sum", json!({"a": 2, "b": 3}))
                .await
                .expect("get-sum");
            assert!(sum.text().contains('5'), "{}", sum.text());
            client.close().await;
        };
        let (driven, ()) = future::block_on(future::zip(driver, work));
        driven.expect("the driver ends cleanly after close");
        assert_old_transport_on_the_wire(&wire.text(), server);
    });
}

fn mcp_exe() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("current_exe");
            let profile_dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("test binary lives in target/<profile>/deps");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let status = Command::new(cargo)
                .args([
                    "build",
                    "--offline",
                    "-p",
                    "mcp-blocking",
                    "--example",
                    "mcp",
                ])
                .status()
                .expect("run cargo build");
            assert!(status.success(), "building the mcp example failed");
            profile_dir.join("examples").join("mcp")
        })
        .clone()
}

fn run_cli(home: &Path, args: &[&str]) -> Output {
    Command::new(mcp_exe())
        .args(args)
        .env("MCP_CONFIG", home.join("servers.json"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("HOME", home)
        .env_remove("MCP_BEARER_TOKEN")
        .stdin(Stdio::null())
        .output()
        .expect("run mcp")
}

#[test]
fn server_everything_sse_through_the_cli() {
    // Built before entering the namespace, where cargo has no network.
    if !in_private_netns() && fixture_installed(Fixture::Everything) {
        mcp_exe();
    }
    in_netns("server_everything_sse_through_the_cli", |server| {
        let home = std::env::temp_dir().join(format!("mcp-sse2024-cli-{}", std::process::id()));
        std::fs::create_dir_all(&home).expect("home");
        let out = run_cli(&home, &["tools", &server.url, "--accept-old-versions"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{stdout}\n{stderr}\n{}",
            server.output()
        );
        assert!(stdout.contains("echo"), "{stdout}");
        // A transcript of the run replays, and keeps the session id out.
        let record = home.join("sse.jsonl");
        let record_arg = record.to_str().expect("utf-8 path");
        let out = run_cli(
            &home,
            &[
                "tools",
                &server.url,
                "--accept-old-versions",
                "--record",
                record_arg,
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let transcript = std::fs::read_to_string(&record).expect("transcript written");
        let values: Vec<&str> = transcript
            .split("sessionId=")
            .skip(1)
            .map(|rest| &rest[..rest.find(['&', ' ', '\\', '"']).unwrap_or(rest.len())])
            .collect();
        assert!(!values.is_empty(), "{transcript}");
        assert!(
            values
                .iter()
                .all(|v| *v == "[redacted]" || "redacted".repeat(8).starts_with(v)),
            "{values:?}"
        );
        let replayed = run_cli(&home, &["replay", record_arg]);
        assert!(
            replayed.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&replayed.stdout),
            String::from_utf8_lossy(&replayed.stderr)
        );
        let refused = run_cli(&home, &["tools", &server.url]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("--accept-old-versions"), "{stderr}");
        // Another client's config naming it `"type": "sse"` imports as a server that
        // accepts the old transport, with no flag.
        let theirs = home.join("claude.json");
        let text = format!(
            r#"{{"mcpServers": {{"old": {{"type": "sse", "url": "{}"}}}}}}"#,
            server.url
        );
        std::fs::write(&theirs, text).expect("write their config");
        let imported = run_cli(&home, &["import", theirs.to_str().expect("utf-8 path")]);
        let stdout = String::from_utf8_lossy(&imported.stdout);
        assert!(imported.status.success(), "{stdout}");
        assert!(stdout.contains("acceptOldVersions"), "{stdout}");
        let out = run_cli(&home, &["tools", "old"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("echo"), "{stdout}");
        let _ = std::fs::remove_dir_all(&home);
    });
}
