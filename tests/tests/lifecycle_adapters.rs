//! A stdio server process that exits after connecting, restarted through both adapters
//! under a `RestartPolicy` (also when a process it started keeps its stdout open); a
//! blocking call cancelled from another thread. Against a
//! scripted server process (Python) in both eras.
#![cfg(unix)]

use std::time::{Duration, Instant};

use futures_lite::future;
use mcp_proto::client::{CallError, ClientConfig, RestartPolicy};
use mcp_proto::version::{Era, EraMode};
use serde_json::json;

/// Answers both eras; `crash` exits without answering, `slow` never answers, `pid`
/// names the process, and `cancelled` lists the request ids of every
/// `notifications/cancelled` it received.
const SERVER: &str = r#"
import json, os, sys
cancelled = []
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
def text(mid, t):
    send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": t}]}})
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
              "serverInfo": {"name": "life", "version": "1"}}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "life", "version": "1"}}})
    elif method == "notifications/cancelled":
        cancelled.append(m["params"]["requestId"])
    elif method == "tools/call":
        name = m["params"]["name"]
        if name == "crash":
            sys.exit(3)
        elif name == "orphan":
            # A child that inherits stdout and outlives this process, which exits.
            import subprocess
            subprocess.Popen(["sleep", "60"])
            os._exit(5)
        elif name == "slow":
            pass
        elif name == "pid":
            text(mid, str(os.getpid()))
        elif name == "cancelled":
            text(mid, json.dumps(cancelled))
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

use mcp_tests::python;

fn config(mode: EraMode) -> ClientConfig {
    let policy =
        RestartPolicy::up_to(2).delays(Duration::from_millis(50), Duration::from_millis(200));
    ClientConfig::new("lifecycle", "1.0")
        .era_mode(mode)
        .restart(policy)
}

/// How the server exits: at once (`crash`), or leaving a process it started (`sleep 60`)
/// with its stdout (`orphan`), which the adapters notice from the exit itself, not from
/// the end of stdout.
const EXITS: [&str; 2] = ["crash", "orphan"];

/// Well inside the default 60 s request timeout, which ended the `orphan` call before
/// the adapters reported the exit itself.
const PROMPTLY: Duration = Duration::from_secs(15);

#[test]
fn blocking_restarts_a_server_that_exits_in_both_eras() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    for (mode, era) in [(EraMode::Auto, Era::Modern), (EraMode::Legacy, Era::Legacy)] {
        let command = mcp_blocking::StdioCommand::new(python).args(["-c", SERVER]);
        let mut client = mcp_blocking::Client::connect_stdio(command, config(mode)).unwrap();
        assert_eq!(client.era(), era);
        for exit in EXITS {
            let before = client.call_tool("pid", json!({})).unwrap().text();
            let started = Instant::now();
            let err = client.call_tool(exit, json!({})).unwrap_err();
            let took = started.elapsed();
            assert_eq!(err.kind(), "server-exited", "{exit}: {err}");
            assert!(matches!(
                err,
                mcp_blocking::Error::Call(CallError::ServerExited)
            ));
            assert!(took < PROMPTLY, "{exit}: ended after {took:?}");
            // The next call goes to a fresh process, in the same era.
            let after = client.call_tool("pid", json!({})).unwrap().text();
            assert_ne!(before, after);
            assert_eq!(client.era(), era);
        }
        let shutdown = client.close();
        assert!(!shutdown.killed);
    }
}

#[test]
fn smol_restarts_a_server_that_exits() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    let command = mcp_smol::StdioCommand::new(python).args(["-c", SERVER]);
    let (client, driver) = mcp_smol::connect_stdio(command, config(EraMode::Auto)).unwrap();
    let work = async move {
        for exit in EXITS {
            let before = client.call_tool("pid", json!({})).await.unwrap().text();
            let started = Instant::now();
            let err = client.call_tool(exit, json!({})).await.unwrap_err();
            let took = started.elapsed();
            assert_eq!(err.kind(), "server-exited", "{exit}: {err}");
            assert!(took < PROMPTLY, "{exit}: ended after {took:?}");
            let after = client.call_tool("pid", json!({})).await.unwrap().text();
            assert_ne!(before, after);
        }
        client.close().await;
    };
    let (driven, ()) = future::block_on(future::zip(driver, work));
    driven.expect("closed locally");
}

#[test]
fn a_blocking_call_is_cancelled_from_another_thread_in_both_eras() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    for mode in [EraMode::Auto, EraMode::Legacy] {
        let command = mcp_blocking::StdioCommand::new(python).args(["-c", SERVER]);
        let mut client = mcp_blocking::Client::connect_stdio(command, config(mode)).unwrap();
        let canceller = client.canceller();
        let started = Instant::now();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            canceller.cancel();
        });
        let err = client.call_tool("slow", json!({})).unwrap_err();
        thread.join().unwrap();
        assert_eq!(err.kind(), "cancelled", "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        // The server was told, once.
        let told = client.call_tool("cancelled", json!({})).unwrap().text();
        let ids: Vec<serde_json::Value> = serde_json::from_str(&told).unwrap();
        assert_eq!(ids.len(), 1, "{mode:?}: {told}");
        // A cancellation while nothing waits is void: the next call is not cancelled.
        client.canceller().cancel();
        assert!(client.call_tool("pid", json!({})).is_ok());
        client.close();
    }
}

/// A legacy server that asks for the roots whenever told they changed; its `roots` tool
/// answers with the URIs it got last (waiting for the answer when it is on its way).
const ROOTS_SERVER: &str = r#"
import json, sys
roots, waiting = None, None
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
def answer(mid):
    uris = [r["uri"] for r in roots]
    send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": json.dumps(uris)}]}})
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "roots", "version": "1"}}})
    elif method == "notifications/roots/list_changed":
        roots = None
        send({"jsonrpc": "2.0", "id": "r", "method": "roots/list"})
    elif method is None and mid == "r":
        roots = m["result"]["roots"]
        if waiting is not None:
            answer(waiting)
            waiting = None
    elif method == "tools/call":
        if roots is None:
            waiting = mid
        else:
            answer(mid)
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

fn roots_config() -> ClientConfig {
    let first = mcp_proto::client::Root::new("file:///first");
    ClientConfig::new("lifecycle", "1.0")
        .era_mode(EraMode::Legacy)
        .roots(vec![first])
}

#[test]
fn both_adapters_change_the_roots_of_a_live_connection() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    let second = || vec![mcp_proto::client::Root::new("file:///second")];
    let command = mcp_blocking::StdioCommand::new(python).args(["-c", ROOTS_SERVER]);
    let mut client = mcp_blocking::Client::connect_stdio(command, roots_config()).unwrap();
    client.set_roots(second()).unwrap();
    let seen = client.call_tool("roots", json!({})).unwrap().text();
    assert_eq!(seen, r#"["file:///second"]"#);
    client.close();

    let command = mcp_smol::StdioCommand::new(python).args(["-c", ROOTS_SERVER]);
    let (client, driver) = mcp_smol::connect_stdio(command, roots_config()).unwrap();
    let work = async move {
        // Changed while connecting, the roots would simply be the ones the server asks
        // for later: change them on the live session.
        client.connected().await.unwrap();
        client.set_roots(second()).await.unwrap();
        let seen = client.call_tool("roots", json!({})).await.unwrap().text();
        assert_eq!(seen, r#"["file:///second"]"#);
        client.close().await;
    };
    let (driven, ()) = future::block_on(future::zip(driver, work));
    driven.expect("closed locally");

    // Without a roots capability there is nothing to change.
    let command = mcp_blocking::StdioCommand::new(python).args(["-c", ROOTS_SERVER]);
    let config = ClientConfig::new("lifecycle", "1.0").era_mode(EraMode::Legacy);
    let mut client = mcp_blocking::Client::connect_stdio(command, config).unwrap();
    let refused = client.set_roots(second()).unwrap_err();
    assert_eq!(refused.kind(), "misuse", "{refused}");
}
