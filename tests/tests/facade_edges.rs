//! Both adapters' client facades against a scripted legacy stdio server: two tasks
//! waiting for notifications that come in one write (`mcp-smol`), an input handler that
//! panics (`mcp-blocking`, where it runs on whichever thread drives), and a server that
//! stops reading its stdin but stays alive (both). Every limit here only detects a hang.

#![allow(clippy::result_large_err)]

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use futures_lite::future;
use mcp_blocking::mcp_proto::client::{
    CallRequest, ClientConfig, InputAnswer, InputHandler, InputRequest,
};
use mcp_blocking::mcp_proto::model::ClientCapabilities;
use mcp_blocking::{EraMode, Options, StdioCommand};
use serde_json::json;

/// A legacy (2025-11-25) server: `echo`; `notify2` (two notifications in one write, then
/// the answer); `hang` (no answer); `close_stdin` (closes its stdin, then answers, and
/// stays alive a minute with stdout open: a request written after the answer cannot
/// land in the pipe before it closed); `elicit` (asks for a form, answers with what came back).
const SERVER: &str = r#"
import json, os, sys, time
out = sys.stdout
def send(o): out.write(json.dumps(o) + "\n"); out.flush()
def result(i, text): send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": text}]}})
asked = {}
for line in sys.stdin:
    m = json.loads(line); i = m.get("id"); method = m.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "edges", "version": "0"}}})
    elif method == "tools/call":
        name = m["params"]["name"]; args = m["params"].get("arguments") or {}
        if name == "echo":
            result(i, args.get("text", ""))
        elif name == "notify2":
            n = lambda uri: json.dumps({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
            out.write(n("edges://a") + "\n" + n("edges://b") + "\n"); out.flush()
            result(i, "notified")
        elif name == "close_stdin":
            os.close(0); result(i, "closed stdin"); time.sleep(60); sys.exit(0)
        elif name == "elicit":
            asked["e-%s" % i] = i
            send({"jsonrpc": "2.0", "id": "e-%s" % i, "method": "elicitation/create",
                  "params": {"message": "ok?", "requestedSchema": {"type": "object", "properties": {}}}})
    elif method is None and i in asked:
        result(asked.pop(i), "elicited: " + json.dumps(m.get("result", m.get("error"))))
"#;

fn server() -> Option<StdioCommand> {
    let Some(python) = mcp_tests::python() else {
        eprintln!("skipped: no python");
        return None;
    };
    Some(StdioCommand::new(python).arg("-c").arg(SERVER))
}

fn config() -> ClientConfig {
    ClientConfig::new("edges", "0")
        .era_mode(EraMode::Legacy)
        .capabilities(ClientCapabilities::with_elicitation())
}

/// Runs `f` on a thread; fails when it takes longer than `limit` (a hang).
fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|e| panic!("{what}: not done within {limit:?} ({e:?})"))
}

/// Two tasks wait in `next_notification`; the server sends two notifications in one
/// write. Each waiter gets one (a bell that woke only one waiter left the other waiting
/// with a notification queued).
#[test]
fn two_notification_waiters_each_get_one() {
    let Some(server) = server() else { return };
    let (client, driver) = mcp_smol::connect_stdio(server, config()).expect("connect");
    let waiter = |client: mcp_smol::Client| async move {
        client
            .next_notification()
            .await
            .expect("a notification")
            .method
    };
    let work = async move {
        client.connected().await.expect("connected");
        let waiters = future::zip(waiter(client.clone()), waiter(client.clone()));
        let caller = async {
            // The waiters are listening by the time the call is made.
            future::yield_now().await;
            let r = client
                .call_tool("notify2", json!({}))
                .await
                .expect("notify2");
            assert_eq!(r.text(), "notified");
        };
        let ((a, b), ()) = future::zip(waiters, caller).await;
        assert_eq!(
            (a.as_str(), b.as_str()),
            (
                "notifications/resources/updated",
                "notifications/resources/updated"
            )
        );
        client.close().await;
    };
    let (driven, ()) = within(
        "two notification waiters",
        Duration::from_secs(20),
        move || future::block_on(future::zip(driver, work)),
    );
    driven.expect("the driver ends cleanly");
}

struct Panics;

impl InputHandler for Panics {
    fn answer(&mut self, _: &InputRequest) -> InputAnswer {
        panic!("the input handler panics");
    }
}

/// An input handler that panics refuses the request it was given (its message goes to
/// the server): the call that asked ends, and later calls keep their timeouts (an
/// unanswered request for input held every deadline of the connection for good).
#[test]
fn a_panicking_input_handler_refuses_and_deadlines_still_run() {
    let Some(server) = server() else { return };
    let options = Options::new().input_handler(Panics);
    let mut client =
        mcp_blocking::Client::connect_stdio_with(server, config(), options).expect("connect");
    let asked = client.call_tool("elicit", json!({})).expect("answered");
    assert!(
        asked
            .text()
            .contains("the client's input handler failed: the input handler panics"),
        "{}",
        asked.text()
    );
    let handle = client.handle();
    let started = Instant::now();
    let later = within("a later call", Duration::from_secs(20), move || {
        let hang = CallRequest::call_tool("hang", json!({})).timeout(Duration::from_millis(500));
        handle.request(hang)
    });
    assert_eq!(later.expect_err("no answer").kind(), "timeout");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// The handler runs on whichever thread drives the connection: its panic no longer takes
/// that thread's own, unrelated call down with it.
#[test]
fn a_panicking_input_handler_leaves_the_driving_threads_call_alone() {
    let Some(server) = server() else { return };
    let options = Options::new().input_handler(Panics);
    let client =
        mcp_blocking::Client::connect_stdio_with(server, config(), options).expect("connect");
    let (a, b) = (client.handle(), client.handle());
    let leader = thread::spawn(move || {
        let hang = CallRequest::call_tool("hang", json!({})).timeout(Duration::from_secs(2));
        a.request(hang)
    });
    // Orders the calls only (which thread drives when the question comes does not
    // change what must happen).
    thread::sleep(Duration::from_millis(300));
    let asked = within("the asking call", Duration::from_secs(20), move || {
        b.request(CallRequest::call_tool("elicit", json!({})))
    });
    assert!(asked.is_ok(), "{asked:?}");
    let led = leader.join().expect("the driving thread did not panic");
    assert_eq!(led.expect_err("hang").kind(), "timeout");
}

/// A server that stops reading its stdin but stays alive with stdout open: the next
/// call's request cannot be written, and the call ends within seconds, not at its
/// timeout.
#[test]
fn a_server_that_stops_reading_ends_the_next_call_soon() {
    let Some(server) = server() else { return };
    let slow = Duration::from_secs(30);
    // Blocking.
    let options = Options::new().grace_period(Duration::from_millis(200));
    let client =
        mcp_blocking::Client::connect_stdio_with(server, config(), options).expect("connect");
    let h = client.handle();
    h.call_tool("close_stdin", json!({})).expect("answered");
    let started = Instant::now();
    let r = within("blocking", Duration::from_secs(20), move || {
        h.request(CallRequest::call_tool("echo", json!({"text": "x"})).timeout(slow))
    });
    let e = r.expect_err("not written");
    assert_eq!(e.kind(), "closed");
    assert!(e.to_string().contains("stopped reading its input"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    drop(client);
    // smol.
    let server = self::server().expect("python");
    let (client, driver) = mcp_smol::connect_stdio(server, config()).expect("connect");
    client.set_grace_period(Duration::from_millis(200));
    let work = async move {
        client
            .call_tool("close_stdin", json!({}))
            .await
            .expect("answered");
        let started = Instant::now();
        let echo = CallRequest::call_tool("echo", json!({"text": "x"})).timeout(slow);
        let r = client.request(echo).await;
        let e = r.expect_err("not written");
        assert_eq!(e.kind(), "closed");
        assert!(e.to_string().contains("stopped reading its input"), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{:?}",
            started.elapsed()
        );
        client.close().await;
    };
    // The driver ends with the server's end, which it saw.
    let (driven, ()) = within("smol", Duration::from_secs(20), move || {
        future::block_on(future::zip(driver, work))
    });
    assert!(driven.is_err(), "{driven:?}");
}
