//! `mcp listen --format json`: a notification line's `params` are the
//! server's, against stdio servers written in Python. Each test names the line of
//! `docs/cli.md` it holds the CLI to.

mod common;

use std::path::Path;
use std::process::Output;

use common::{python, text, with_python_server};

fn run(config: &Path, args: &[&str]) -> Output {
    common::run_cli(config, args, &[])
}

/// A server whose notifications carry a number JSON cannot hold in a double, in both
/// eras; the legacy task status carries fields beyond those the CLI shows as text.
const EXACT_PARAMS_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"],
              "capabilities": {"resources": {"subscribe": True}}}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"resources": {"subscribe": True}, "tasks": {"list": {}}},
              "serverInfo": {"name": "x", "version": "1"}}})
    elif method == "notifications/initialized":
        send({"jsonrpc": "2.0", "method": "notifications/tasks/status",
              "params": {"taskId": "bg-1", "status": "working",
                         "createdAt": "2026-01-01T00:00:00Z",
                         "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 60000,
                         "pollInterval": 250}})
    elif method == "resources/subscribe":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
        send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
              "params": {"uri": m["params"]["uri"], "revision": 12345678901234567890123}})
    elif method == "subscriptions/listen":
        meta = {"io.modelcontextprotocol/subscriptionId": mid}
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": meta, "notifications": m["params"]["notifications"]}})
        send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
              "params": {"_meta": meta, "uri": "file:///a", "revision": 12345678901234567890123}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// docs/cli.md, `listen`: "with `--format json` each line is one JSON document:
/// `{"event": "notification", "method": …, "params": …}`", and Output: "With `--format
/// json`, stdout receives … every value exactly as the server sent it". A large integer
/// in a notification's params must come out as the server wrote it, not rounded to a
/// double (`1.2345678901234568e+22`).
#[test]
fn listen_json_keeps_the_servers_numbers() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    let config = common::temp_dir("cli-text-listen-exact").join("servers.json");
    for (name, era) in [("new", "modern"), ("old", "legacy")] {
        let add = [
            "add",
            name,
            "--stdio",
            python,
            "--era",
            era,
            "--",
            "-c",
            EXACT_PARAMS_SERVER,
        ];
        let out = run(&config, &add);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let out = run(
            &config,
            &[
                "--format",
                "json",
                "listen",
                name,
                "--resource",
                "file:///a",
                "--max-events",
                "1",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let line = stdout
            .lines()
            .find(|l| l.contains("notifications/resources/updated"))
            .unwrap_or_else(|| panic!("{era}: no notification line:\n{stdout}"));
        assert!(
            line.contains("12345678901234567890123"),
            "{era}: the server's number was changed: {line}"
        );
    }
}

/// docs/cli.md, `listen --format json`: a notification line's `params` are the server's
/// ("every value exactly as the server sent it"); a 2025-11-25 task status notification
/// keeps its `createdAt`, `ttl` and `pollInterval`, and gets no `statusMessage` the
/// server did not send.
#[test]
fn listen_json_gives_a_task_status_notifications_params_as_sent() {
    let Some(config) =
        with_python_server("cli-text-task-params", "old", "legacy", EXACT_PARAMS_SERVER)
    else {
        return;
    };
    let out = run(
        &config,
        &[
            "--format",
            "json",
            "listen",
            "old",
            "--tasks",
            "--max-events",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let line: serde_json::Value =
        serde_json::from_str(stdout.lines().next().unwrap_or_default()).expect("a JSON line");
    assert_eq!(line["method"], "notifications/tasks/status", "{line}");
    assert_eq!(
        line["params"],
        serde_json::json!({"taskId": "bg-1", "status": "working",
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
            "ttl": 60000, "pollInterval": 250}),
        "the params are not the server's"
    );
}

/// docs/cli.md, `listen`: it "first prints what the server acknowledged, naming what it
/// refused", and a listen that can hear nothing more fails (as a legacy server with no
/// stream does). A 2026-07-28 server that refuses everything asked for (the example
/// server has no list-changed notifications) will never send a notification on that
/// subscription: `listen` waited forever after `acknowledged {} (refused …)`.
#[test]
fn a_listen_acknowledged_for_nothing_ends_failed() {
    let config = common::temp_dir("listen-nothing").join("servers.json");
    let exe = common::example("mcp");
    let exe = exe.to_str().unwrap();
    let add = [
        "add",
        "ex",
        "--stdio",
        exe,
        "--",
        "serve-example",
        "--stdio",
    ];
    assert_eq!(run(&config, &add).status.code(), Some(0));
    for format in ["text", "json"] {
        let mut child = std::process::Command::new(exe)
            .args(["--config", config.to_str().unwrap(), "--format", format])
            .args(["listen", "ex", "--list-changed", "--max-events", "1"])
            .env_remove("MCP_CONFIG")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run mcp");
        let started = std::time::Instant::now();
        while child.try_wait().expect("wait").is_none() {
            if started.elapsed() > std::time::Duration::from_secs(30) {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let out = child.wait_with_output().expect("output");
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{format}: {stdout}");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 2, "{format}: {stdout}");
        if format == "json" {
            let end: serde_json::Value = serde_json::from_str(lines[1]).expect("JSON");
            assert_eq!(end["event"], "ended", "{stdout}");
            let detail = end["detail"].as_str().unwrap_or_default();
            assert!(detail.starts_with("failed: "), "{stdout}");
        } else {
            assert!(
                lines[0].starts_with("acknowledged {} (refused "),
                "{stdout}"
            );
            assert!(lines[1].starts_with("ended failed: "), "{stdout}");
        }
    }
}
