//! The client adapters around the application's handlers and futures: a progress
//! callback that panics, and `mcp-smol` futures dropped before they resolve.
#![cfg(unix)]
#![allow(clippy::result_large_err)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_lite::future;
use mcp_proto::client::{CallRequest, ClientConfig, ListenFilter};
use mcp_proto::version::EraMode;
use serde_json::json;

/// A server of either era: `progress` sends one progress notification (for the call's
/// token) and then answers `done`; a `subscriptions/listen` is acknowledged and stays
/// open.
const SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": True}}}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "progress", "version": "1"}}})
    elif method == "tools/call":
        token = (m["params"].get("_meta") or {}).get("progressToken")
        if token is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": 1, "total": 2}})
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "done"}]}})
    elif method == "subscriptions/listen":
        meta = {"io.modelcontextprotocol/subscriptionId": mid}
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": meta, "notifications": m["params"]["notifications"]}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

fn python() -> Option<&'static str> {
    let found = mcp_tests::python();
    if found.is_none() {
        eprintln!("skipped: no python");
    }
    found
}

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("handler-failures", "1.0").era_mode(mode)
}

fn progress_call() -> CallRequest {
    CallRequest::call_tool("progress", json!({})).with_progress()
}

/// The progress callback panics (once): the call it was for, and the connection, go on;
/// the driver does not unwind out of the executor taking every call with it.
#[test]
fn smol_a_progress_callback_that_panics_leaves_the_connection_and_the_call_standing() {
    let Some(python) = python() else { return };
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let options = mcp_smol::Options::new().on_progress(move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("the progress callback failed");
        }
    });
    let command = mcp_smol::StdioCommand::new(python).args(["-c", SERVER]);
    let (client, driver) =
        mcp_smol::connect_stdio_with(command, config(EraMode::Legacy), options).unwrap();
    let work = async move {
        let first = client.request(progress_call()).await;
        let second = client.request(progress_call()).await;
        client.close().await;
        (first.map(|_| ()), second.map(|_| ()))
    };
    let ran = catch_unwind(AssertUnwindSafe(|| {
        future::block_on(future::zip(driver, work))
    }));
    let (_, (first, second)) = ran.expect("the driver unwound out of the executor");
    assert!(first.is_ok(), "{first:?}");
    assert!(second.is_ok(), "{second:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// The same in `mcp-blocking`, where the callback runs on whichever thread drives: the
/// call whose progress it was handling still gets its answer.
#[test]
fn blocking_a_progress_callback_that_panics_leaves_the_call_answered() {
    let Some(python) = python() else { return };
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let options = mcp_blocking::Options::new().on_progress(move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("the progress callback failed");
        }
    });
    let command = mcp_blocking::StdioCommand::new(python).args(["-c", SERVER]);
    let mut client =
        mcp_blocking::Client::connect_stdio_with(command, config(EraMode::Legacy), options)
            .unwrap();
    let first = catch_unwind(AssertUnwindSafe(|| client.request(progress_call())));
    let second = client.request(progress_call());
    client.close();
    let first = first.expect("the call unwound with the callback's panic");
    assert!(first.is_ok(), "{first:?}");
    assert!(second.is_ok(), "{second:?}");
}

/// A `listen` future dropped before it resolved (a `select` with a timeout, a task
/// cancelled) ends the subscription it started, as a dropped call is cancelled: sixteen
/// of them do not use up the subscriptions a connection may have open.
#[test]
fn smol_a_dropped_listen_future_ends_its_subscription() {
    let Some(python) = python() else { return };
    let command = mcp_smol::StdioCommand::new(python).args(["-c", SERVER]);
    let (client, driver) = mcp_smol::connect_stdio(command, config(EraMode::Auto)).unwrap();
    let filter = ListenFilter::new().tools();
    let work = async move {
        client.connected().await.expect("connected");
        for _ in 0..20 {
            // Sends the command, then is dropped before the driver answers it.
            let pending = future::poll_once(client.listen(&filter)).await;
            assert!(pending.is_none(), "answered before the driver ran");
            for _ in 0..4 {
                future::yield_now().await;
            }
        }
        let listened = client.listen(&filter).await;
        client.close().await;
        listened
    };
    let (_, listened) = future::block_on(future::zip(driver, work));
    assert!(
        listened.is_ok(),
        "a listen after 20 dropped ones: {listened:?}"
    );
}
