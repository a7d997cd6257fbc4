//! Real processes that misbehave on stdio, against both adapters: the limits the machine
//! enforces hold end to end, whatever each adapter queues on its side.
#![cfg(unix)]

use std::time::{Duration, Instant};

use futures_lite::future;
use mcp_proto::client::{ClientConfig, CloseReason};
use mcp_proto::limits::Limits;
use mcp_proto::version::EraMode;

/// A legacy server that answers `initialize` and then sends pings forever without ever
/// reading its stdin again.
const FLOODING_SERVER: &str = r#"
import json, sys
init = json.loads(sys.stdin.readline())
reply = {"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": "2025-11-25",
         "capabilities": {}, "serverInfo": {"name": "flood", "version": "1"}}}
sys.stdout.write(json.dumps(reply) + "\n")
sys.stdout.flush()
n = 0
try:
    while True:
        n += 1
        sys.stdout.write('{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % n)
        if n % 100 == 0:
            sys.stdout.flush()
except BrokenPipeError:
    pass
"#;

const BUDGET: usize = 256 * 1024;

use mcp_tests::python;

fn config() -> ClientConfig {
    let mut limits = Limits::default();
    limits.max_queued_output_bytes = BUDGET;
    limits.request_timeout = Duration::from_secs(30);
    ClientConfig::new("hostile", "1.0")
        .era_mode(EraMode::Legacy)
        .limits(limits)
}

fn is_not_reading(reason: Option<&CloseReason>) -> bool {
    matches!(reason, Some(CloseReason::PeerNotReading { waiting }) if *waiting > BUDGET)
}

#[test]
fn blocking_cuts_off_a_server_that_floods_requests_without_reading() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    let command = mcp_blocking::StdioCommand::new(python).args(["-c", FLOODING_SERVER]);
    let mut client = mcp_blocking::Client::connect_stdio(command, config()).expect("connect");
    let started = Instant::now();
    let err = client.list_tools().expect_err("the server never answers");
    assert!(
        is_not_reading(client.close_reason().as_ref()),
        "{err}; {:?}",
        client.close_reason()
    );
    assert!(err.to_string().contains("max_queued_output_bytes"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
    client.close();
}

#[test]
fn smol_cuts_off_a_server_that_floods_requests_without_reading() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    let command = mcp_smol::StdioCommand::new(python).args(["-c", FLOODING_SERVER]);
    let (client, driver) = mcp_smol::connect_stdio(command, config()).expect("spawn");
    let outcome = future::block_on(future::zip(driver, async {
        client.connected().await.expect("connect");
        client.list_tools().await
    }));
    let err = outcome.1.expect_err("the server never answers");
    assert!(
        is_not_reading(client.close_reason().as_ref()),
        "{err}; {:?}",
        client.close_reason()
    );
    assert!(err.to_string().contains("max_queued_output_bytes"), "{err}");
}

/// A server that never says a word, and ignores the end of its stdin.
fn silent_server() -> (&'static str, [&'static str; 2]) {
    ("sh", ["-c", "trap '' TERM; exec sleep 100"])
}

fn connect_within_one_second() -> ClientConfig {
    let mut limits = Limits::default();
    limits.connect_timeout = Duration::from_secs(1);
    ClientConfig::new("hostile", "1.0").limits(limits)
}

#[test]
fn blocking_fails_a_silent_server_within_the_connect_timeout_stop_included() {
    let (program, args) = silent_server();
    let command = mcp_blocking::StdioCommand::new(program).args(args);
    let started = Instant::now();
    let err = mcp_blocking::Client::connect_stdio(command, connect_within_one_second())
        .expect_err("the server never answers");
    let took = started.elapsed();
    assert!(err.to_string().contains("1s"), "{err}");
    // The default grace period (2 s) would have doubled this.
    assert!(took < Duration::from_millis(1500), "took {took:?}");
}

#[test]
fn smol_fails_a_silent_server_within_the_connect_timeout_stop_included() {
    let (program, args) = silent_server();
    let command = mcp_smol::StdioCommand::new(program).args(args);
    let started = Instant::now();
    let (client, driver) =
        mcp_smol::connect_stdio(command, connect_within_one_second()).expect("spawn");
    let (ended, connected) = future::block_on(future::zip(driver, client.connected()));
    let took = started.elapsed();
    assert!(ended.is_err() && connected.is_err());
    assert!(took < Duration::from_millis(1500), "took {took:?}");
    assert_eq!(client.process_id(), None, "reaped");
}

/// A legacy server that answers `initialize`, then writes half of its answer to the
/// first `tools/call` and dies, counting the calls it received in `$1`.
const DYING_SERVER: &str = r#"
import json, os, sys
count = sys.argv[1]
init = json.loads(sys.stdin.readline())
reply = {"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": "2025-11-25",
         "capabilities": {"tools": {}}, "serverInfo": {"name": "dying", "version": "1"}}}
sys.stdout.write(json.dumps(reply) + "\n")
sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "tools/call":
        with open(count, "a") as f:
            f.write("call\n")
        answer = json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                             "result": {"content": [{"type": "text", "text": "done"}]}})
        sys.stdout.write(answer[: len(answer) // 2])
        sys.stdout.flush()
        os._exit(1)
"#;

fn dying_command(count: &std::path::Path) -> (String, [String; 3]) {
    let python = python().expect("checked").to_owned();
    let count = count.display().to_string();
    (python, ["-c".to_owned(), DYING_SERVER.to_owned(), count])
}

fn calls_received(count: &std::path::Path) -> usize {
    std::fs::read_to_string(count).map_or(0, |s| s.lines().count())
}

fn legacy() -> ClientConfig {
    ClientConfig::new("hostile", "1.0").era_mode(EraMode::Legacy)
}

#[test]
fn a_server_dying_mid_answer_fails_the_call_once_in_both_adapters() {
    if python().is_none() {
        eprintln!("skipped: no python");
        return;
    }
    let dir = std::env::temp_dir().join(format!("mcp-dying-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let count = dir.join("blocking");
    let (program, args) = dying_command(&count);
    let command = mcp_blocking::StdioCommand::new(program).args(args);
    let mut client = mcp_blocking::Client::connect_stdio(command, legacy()).expect("connect");
    let err = client
        .call_tool("t", serde_json::json!({}))
        .expect_err("half an answer");
    assert!(
        matches!(client.close_reason(), Some(CloseReason::ServerExited { truncated }) if truncated > 0),
        "{err}"
    );
    assert_eq!(
        calls_received(&count),
        1,
        "run once, never restarted to run again"
    );
    // How it ended stays readable, from a handle too, once the client is gone.
    let handle = client.handle();
    drop(client);
    let exit = handle.process_exit().expect("reaped");
    assert_eq!(exit.status.and_then(|s| s.code()), Some(1), "{exit:?}");

    let count = dir.join("smol");
    let (program, args) = dying_command(&count);
    let command = mcp_smol::StdioCommand::new(program).args(args);
    let (client, driver) = mcp_smol::connect_stdio(command, legacy()).expect("spawn");
    let outcome = future::block_on(future::zip(driver, async {
        client.connected().await.expect("connect");
        client.call_tool("t", serde_json::json!({})).await
    }));
    assert!(outcome.1.is_err());
    assert!(
        matches!(client.close_reason(), Some(CloseReason::ServerExited { truncated }) if truncated > 0),
        "{:?}",
        client.close_reason()
    );
    assert_eq!(calls_received(&count), 1);
    let exit = client.process_exit().expect("reaped");
    assert_eq!(exit.status.and_then(|s| s.code()), Some(1), "{exit:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A legacy server that writes every answer in three pieces, 30 ms apart, so that each
/// read the client makes finds only part of a message and the rest comes while it waits.
const HALTING_SERVER: &str = r#"
import json, sys, time
def answer(msg_id, result):
    text = json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n"
    third = len(text) // 3
    for piece in (text[:third], text[third:2 * third], text[2 * third:]):
        sys.stdout.write(piece)
        sys.stdout.flush()
        time.sleep(0.03)
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        answer(msg["id"], {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "halting", "version": "1"}})
    elif msg["method"] == "tools/list":
        answer(msg["id"], {"tools": [{"name": "slow", "inputSchema": {"type": "object"}}]})
"#;

/// Answers that arrive in pieces: the client reads each piece as it comes (a short read)
/// and must be woken for the next, without a timer to rescue it (a missed wake-up would
/// end the calls only at the 5 s request timeout).
fn halting_config() -> ClientConfig {
    let mut limits = Limits::default();
    limits.request_timeout = Duration::from_secs(5);
    ClientConfig::new("hostile", "1.0")
        .era_mode(EraMode::Legacy)
        .limits(limits)
}

#[test]
fn answers_written_in_pieces_are_read_as_they_come_in_both_adapters() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    let started = Instant::now();
    let command = mcp_blocking::StdioCommand::new(python).args(["-c", HALTING_SERVER]);
    let mut client = mcp_blocking::Client::connect_stdio(command, halting_config()).unwrap();
    for _ in 0..3 {
        let tools = client.list_tools().expect("blocking: tools/list");
        assert_eq!(tools[0].name, "slow");
    }
    client.close();

    let command = mcp_smol::StdioCommand::new(python).args(["-c", HALTING_SERVER]);
    let (client, driver) = mcp_smol::connect_stdio(command, halting_config()).expect("spawn");
    let (_, names) = async_io::block_on(future::zip(driver, async {
        let mut names = Vec::new();
        for _ in 0..3 {
            let tools = client.list_tools().await.expect("smol: tools/list");
            names.push(tools[0].name.clone());
        }
        client.close().await;
        names
    }));
    assert_eq!(names, ["slow"; 3]);
    // Four answers of three pieces each per adapter: about 0.7 s in all.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(4), "took {took:?}");
}

/// A legacy server that says why on stderr and exits with status 7 when a tool is called.
const EXITING_SERVER: &str = r#"
import json, os, sys
init = json.loads(sys.stdin.readline())
reply = {"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": "2025-11-25",
         "capabilities": {"tools": {}}, "serverInfo": {"name": "exiting", "version": "1"}}}
sys.stdout.write(json.dumps(reply) + "\n")
sys.stdout.flush()
for line in sys.stdin:
    if json.loads(line).get("method") == "tools/call":
        sys.stderr.write("out of tokens for this month\n")
        sys.stderr.flush()
        os._exit(7)
"#;

#[test]
fn the_cli_says_how_a_server_that_exited_during_a_call_ended() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    let home = mcp_tests::cli_home::CliHome::new(env!("CARGO_TARGET_TMPDIR"), "cli-exit");
    let added = home.run(&[
        "add",
        "exiting",
        "--era",
        "legacy",
        "--stdio",
        python,
        "--",
        "-c",
        EXITING_SERVER,
    ]);
    assert!(added.status.success(), "{added:?}");
    let text = home.run(&["call", "exiting", "t"]);
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert_eq!(text.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the server exited: status 7"), "{stderr}");
    assert!(stderr.contains("out of tokens for this month"), "{stderr}");
    let json = home.run(&["--format", "json", "call", "exiting", "t"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("one JSON document");
    assert_eq!(doc["error"]["exitStatus"], 7, "{doc}");
    assert!(
        doc["error"]["stderr"]
            .as_str()
            .unwrap()
            .contains("out of tokens"),
        "{doc}"
    );
}
