//! The reference CLI against HTTP servers: literal URLs as `<server>`, `add --url`, the
//! excluded tools of `tools`, and `httpStatus` in JSON errors.

mod common;
mod http_support;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use http_support::{Behavior, TestServer};
use serde_json::{Value, json};

fn run(config: &Path, args: &[&str]) -> Output {
    common::run_cli(config, args, &[])
}

use common::text;

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}", text(&o.stdout)))
}

/// `mcp serve-example --http 127.0.0.1:0`, killed on drop.
struct ExampleServer {
    child: Child,
    url: String,
}

impl ExampleServer {
    fn start(era: &str) -> ExampleServer {
        let mut child = Command::new(common::example("mcp"))
            .args(["serve-example", "--http", "127.0.0.1:0", "--era", era])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start serve-example");
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .expect("the URL on stderr");
        let url = line.trim().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
        ExampleServer { child, url }
    }
}

impl Drop for ExampleServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn tools_and_call_on_a_literal_url_in_both_eras() {
    let config = common::temp_dir("http-literal").join("servers.json");
    for era in ["modern", "legacy"] {
        let server = ExampleServer::start(era);
        let out = run(&config, &["tools", &server.url]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains("add(a, b)"),
            "{}",
            text(&out.stdout)
        );

        let out = run(
            &config,
            &[
                "--format",
                "json",
                "call",
                &server.url,
                "add",
                "--arg",
                "a=2",
                "--arg",
                "b=3",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let doc = json(&out);
        assert_eq!(doc["era"], era);
        assert_eq!(doc["server"], server.url.as_str());
        assert_eq!(doc["result"]["content"][0]["text"], "5");
    }
}

#[test]
fn add_url_then_use_it_by_name() {
    let server = ExampleServer::start("both");
    let config = common::temp_dir("http-add").join("servers.json");
    let out = run(
        &config,
        &["add", "web", "--url", &server.url, "--era", "legacy"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("http {}", server.url)));
    let out = run(&config, &["--format", "json", "get", "web"]);
    assert_eq!(json(&out)["url"], server.url.as_str());
    let out = run(&config, &["--format", "json", "test", "web"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(json(&out)["era"], "legacy", "--era legacy is kept");
    let out = run(&config, &["doctor"]);
    assert!(
        text(&out.stdout).contains("web: endpoint"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn plain_http_to_a_remote_host_is_a_usage_error() {
    let config = common::temp_dir("http-remote").join("servers.json");
    for args in [
        &["tools", "http://mcp.example.com/mcp"][..],
        &["add", "x", "--url", "http://mcp.example.com/mcp"],
        &["call", "http://10.1.2.3/mcp", "add"],
    ] {
        let out = run(&config, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains("loopback"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn json_errors_carry_the_http_status() {
    let config = common::temp_dir("http-status").join("servers.json");
    let server = TestServer::start(Behavior {
        fail_with: Some((503, json!({"oops": true}))),
        ..Behavior::default()
    });
    let out = run(&config, &["--format", "json", "tools", &server.url()]);
    assert_eq!(out.status.code(), Some(1));
    let error = &json(&out)["error"];
    assert_eq!(error["kind"], "http");
    assert_eq!(error["httpStatus"], 503);

    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = run(
        &config,
        &[
            "--format",
            "json",
            "tools",
            &format!("http://127.0.0.1:{port}/mcp"),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let error = &json(&out)["error"];
    assert_eq!(error["kind"], "unreachable");
    assert_eq!(error["httpStatus"], Value::Null);
}

#[test]
fn tools_lists_the_excluded_tools_and_why() {
    let config = common::temp_dir("http-excluded").join("servers.json");
    let server = TestServer::start(Behavior {
        bad_header_tool: true,
        ..Behavior::default()
    });
    let out = run(&config, &["tools", &server.url()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let (listed, excluded) = stdout.split_once("excluded").expect(&stdout);
    assert!(
        listed.contains("add(a, b)") && !listed.contains("sum"),
        "{stdout}"
    );
    assert!(
        excluded.contains("sum") && excluded.contains("number"),
        "{stdout}"
    );

    let out = run(&config, &["--format", "json", "tools", &server.url()]);
    let doc = json(&out);
    assert_eq!(doc["excludedTools"][0]["name"], "sum");
    assert!(
        doc["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["name"] != "sum")
    );
}

#[test]
fn a_404_on_a_url_without_a_path_suggests_mcp() {
    let server = ExampleServer::start("both");
    let root = server.url.trim_end_matches("/mcp").to_owned();
    let config = common::temp_dir("no-path").join("servers.json");
    for url in [root.clone(), format!("{root}/")] {
        let out = run(&config, &["tools", &url]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains(&format!("try {root}/mcp")), "{err}");
    }
    // A URL with a path that 404s gets no such guess.
    let out = run(&config, &["tools", &format!("{root}/other")]);
    assert!(!text(&out.stderr).contains("usually at /mcp"));
}

/// A legacy `listen` that can never hear anything fails and says why: a server that keeps
/// no session has no stream to send notifications on; one that refuses its `GET` stream
/// (405 here) leaves none either. Both exited 0 with nothing printed, after 30 s.
#[test]
fn a_legacy_listen_without_a_server_stream_fails_and_says_why() {
    let config = common::temp_dir("listen-nostream").join("servers.json");
    for (session, why) in [
        (false, "keeps no session"),
        (true, "was refused or lost for good"),
    ] {
        let server = TestServer::start(Behavior {
            eras: http_support::Eras::Legacy,
            session,
            ..Behavior::default()
        });
        let started = std::time::Instant::now();
        let out = run(&config, &["listen", &server.url(), "--list-changed"]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let line = text(&out.stdout);
        assert!(
            line.starts_with("ended failed: ") && line.contains(why),
            "{line}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}

/// `add --header-env HEADER=NAME`: the header goes with every request, its value read
/// from the variable when the server is used (never stored, hidden in `-v`'s wire log);
/// an unset variable fails at once, naming it; a header the client writes itself is a
/// usage error.
#[test]
fn header_env_sends_a_header_read_from_a_variable() {
    let dir = common::temp_dir("header-env");
    let config = dir.join("servers.json");
    let server = TestServer::start(Behavior::default());
    let var = "MCP_TEST_HEADER_ENV_KEY";
    let add = run(
        &config,
        &[
            "add",
            "keyed",
            "--url",
            &server.url(),
            "--header-env",
            &format!("X-Api-Key={var}"),
        ],
    );
    assert_eq!(add.status.code(), Some(0), "{}", text(&add.stderr));
    assert!(text(&add.stdout).contains(&format!("header X-Api-Key from ${var}")));
    let with_key = |args: &[&str]| {
        Command::new(common::example("mcp"))
            .arg("--config")
            .arg(&config)
            .args(args)
            .env_remove("MCP_CONFIG")
            .env(var, "k3y-s3cr3t")
            .stdin(Stdio::null())
            .output()
            .expect("run mcp")
    };
    let out = with_key(&["-v", "tools", "keyed"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let seen = server.seen();
    assert!(!seen.is_empty());
    for r in &seen {
        assert_eq!(r.header("x-api-key"), Some("k3y-s3cr3t"), "{r:?}");
    }
    assert!(
        text(&out.stderr).contains("X-Api-Key:"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !text(&out.stderr).contains("k3y-s3cr3t"),
        "{}",
        text(&out.stderr)
    );
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(
        written.contains(r#""X-Api-Key": "MCP_TEST_HEADER_ENV_KEY""#),
        "{written}"
    );

    let before = server.seen().len();
    let out = run(&config, &["tools", "keyed"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!("${var}, which is not set")),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.seen().len(), before, "nothing was sent");

    for (flag, why) in [
        ("Authorization=T", "--bearer-token-env"),
        ("Mcp-Session-Id=T", "writes itself"),
        ("X Key=T", "not a header name"),
        ("X-Key", "HEADER=VARIABLE"),
    ] {
        let out = run(
            &config,
            &["add", "bad", "--url", &server.url(), "--header-env", flag],
        );
        assert_eq!(out.status.code(), Some(2), "{flag}");
        assert!(
            text(&out.stderr).contains(why),
            "{flag}: {}",
            text(&out.stderr)
        );
    }
}
