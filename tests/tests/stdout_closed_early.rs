//! A stdio server that closes its stdout but keeps running (and ignores `SIGTERM`): the
//! call in flight must fail as soon as the machine sees the end of output, in both
//! adapters, not after the grace period that stopping the process takes.
//!
//! Expected behaviour: the grace period is "the grace period of `Client::close`"
//! (rustdoc of `mcp_blocking::Client::set_grace_period`); README: the adapter "stops
//! [servers] within a bounded grace period" — stopping the process is bounded by it, a
//! call's failure is not meant to wait for it. Decision 31: a caller "learns of the exit
//! at once". `mcp-smol` fails the call in milliseconds; `mcp-blocking` executes the
//! machine's `Transmit::Close` (the whole escalation, up to `SIGKILL` at the end of the
//! grace period) on the calling thread before it hands over the call's failure, so the
//! call is held for the full grace period (8 s here). "Both adapters behave the same."
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use futures_lite::future;
use mcp_proto::client::ClientConfig;
use mcp_proto::version::EraMode;
use serde_json::json;

/// Legacy server; `closeout` ignores `SIGTERM`, closes stdout and sleeps on.
const SERVER: &str = r#"
import json, os, sys, time, signal
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "initialize":
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "p", "version": "1"}}}) + "\n")
        sys.stdout.flush()
    elif method == "tools/call":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.stdout.flush()
        os.close(1)
        while True:
            time.sleep(1)
"#;

const GRACE: Duration = Duration::from_secs(8);
/// Far more than the end of output needs (smol: under 100 ms), far less than `GRACE`.
const PROMPTLY: Duration = Duration::from_secs(3);

fn config() -> ClientConfig {
    ClientConfig::new("stdout-closed", "1").era_mode(EraMode::Legacy)
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn blocking_fails_the_call_when_stdout_closes_without_waiting_for_the_grace_period() {
    let Some(python) = mcp_tests::python() else {
        eprintln!("skipped: no python");
        return;
    };
    let command = mcp_blocking::StdioCommand::new(python).args(["-c", SERVER]);
    let mut client = mcp_blocking::Client::connect_stdio(command, config()).unwrap();
    client.set_grace_period(GRACE);
    let pid = client.process_id().unwrap();
    let started = Instant::now();
    let err = client.call_tool("closeout", json!({})).unwrap_err();
    let took = started.elapsed();
    let shutdown = client.close();
    assert!(!alive(pid), "server still runs after close");
    assert!(shutdown.killed);
    assert!(
        took < PROMPTLY,
        "mcp-blocking: the call failed ({err}) only after {took:?}, with a grace period of {GRACE:?}"
    );
}

#[test]
fn smol_fails_the_call_when_stdout_closes_without_waiting_for_the_grace_period() {
    let Some(python) = mcp_tests::python() else {
        eprintln!("skipped: no python");
        return;
    };
    let command = mcp_smol::StdioCommand::new(python).args(["-c", SERVER]);
    let options = mcp_smol::Options::new().grace_period(GRACE);
    let (client, driver) = mcp_smol::connect_stdio_with(command, config(), options).unwrap();
    let pid = client.process_id().unwrap();
    let work = async move {
        client.connected().await.unwrap();
        let started = Instant::now();
        let err = client.call_tool("closeout", json!({})).await.unwrap_err();
        let took = started.elapsed();
        client.close().await;
        (err, took)
    };
    let (_, (err, took)) = future::block_on(future::zip(driver, work));
    assert!(!alive(pid), "server still runs after the driver ended");
    assert!(
        took < PROMPTLY,
        "mcp-smol: the call failed ({err}) only after {took:?}, with a grace period of {GRACE:?}"
    );
}
