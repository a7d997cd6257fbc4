//! `subscriptions/listen` and `resources/subscribe` through both adapters, against a
//! scripted stdio server process (Python) in each era.
#![cfg(unix)]

use std::time::Duration;

use futures_lite::future;
use mcp_proto::client::{Change, ClientConfig, Event, ListenEnd, ListenFilter};
use mcp_proto::version::EraMode;

/// Acknowledges a listen with what was asked minus the prompts list, sends a tools list
/// change for it, and answers `notifications/cancelled` for it with nothing (the
/// client's end needs no answer). A `resources/subscribe` gets `{}` and an update.
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
              "capabilities": {"resources": {"subscribe": True}},
              "serverInfo": {"name": "listen", "version": "1"}}})
    elif method == "resources/subscribe":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
        send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
              "params": {"uri": m["params"]["uri"]}})
    elif method == "subscriptions/listen":
        meta = {"io.modelcontextprotocol/subscriptionId": mid}
        granted = dict(m["params"]["notifications"])
        granted.pop("promptsListChanged", None)
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": meta, "notifications": granted}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
              "params": {"_meta": meta}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

use mcp_tests::python;

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("listen-adapters", "1.0").era_mode(mode)
}

fn filter() -> ListenFilter {
    ListenFilter::new().tools().prompts()
}

#[test]
fn blocking_listens_in_2026_and_subscribes_in_2025() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    let command = || mcp_blocking::StdioCommand::new(python).args(["-c", SERVER]);
    let mut client =
        mcp_blocking::Client::connect_stdio(command(), config(EraMode::Auto)).expect("connect");
    let sub = client.listen(&filter()).expect("listen");
    let wait = Duration::from_secs(10);
    match client.next_subscription_event(Some(sub), wait) {
        Some(Event::SubscriptionAcknowledged { refused, .. }) => {
            assert_eq!(refused, ListenFilter::new().prompts());
        }
        other => panic!("{other:?}"),
    }
    match client.next_subscription_event(Some(sub), wait) {
        Some(Event::SubscriptionNotification { change, .. }) => {
            assert_eq!(change, Some(Change::ToolsListChanged));
        }
        other => panic!("{other:?}"),
    }
    client.end_listen(sub).expect("end");
    match client.next_subscription_event(Some(sub), wait) {
        Some(Event::SubscriptionEnded { end, .. }) => assert_eq!(end, ListenEnd::EndedByClient),
        other => panic!("{other:?}"),
    }
    client.close();

    let mut client =
        mcp_blocking::Client::connect_stdio(command(), config(EraMode::Legacy)).expect("connect");
    client.subscribe_resource("file:///a").expect("subscribe");
    let n = client.next_notification(wait).expect("an update");
    assert_eq!(
        Change::from_notification(&n),
        Some(Change::ResourceUpdated {
            uri: "file:///a".into()
        })
    );
    client
        .unsubscribe_resource("file:///a")
        .expect("unsubscribe");
    assert!(
        client
            .next_notification(Duration::from_millis(50))
            .is_none()
    );
    client.close();
}

#[test]
fn smol_listens_in_2026_and_subscribes_in_2025() {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return;
    };
    let command = || mcp_smol::StdioCommand::new(python).args(["-c", SERVER]);
    let (client, driver) = mcp_smol::connect_stdio(command(), config(EraMode::Auto)).unwrap();
    let work = async move {
        let sub = client.listen(&filter()).await.expect("listen");
        let mut seen = Vec::new();
        while let Some(e) = client.next_subscription_event(Some(sub)).await {
            match e {
                Event::SubscriptionAcknowledged { refused, .. } => {
                    assert_eq!(refused, ListenFilter::new().prompts());
                }
                Event::SubscriptionNotification { change, .. } => {
                    seen.push(change);
                    client.end_listen(sub).expect("end");
                }
                Event::SubscriptionEnded { end, .. } => {
                    assert_eq!(end, ListenEnd::EndedByClient);
                    break;
                }
                _ => {}
            }
        }
        assert_eq!(seen, vec![Some(Change::ToolsListChanged)]);
        client.close().await;
    };
    let (driven, ()) = future::block_on(future::zip(driver, work));
    driven.expect("closed locally");

    let (client, driver) = mcp_smol::connect_stdio(command(), config(EraMode::Legacy)).unwrap();
    let work = async move {
        client
            .subscribe_resource("file:///b")
            .await
            .expect("subscribe");
        let n = client.next_notification().await.expect("an update");
        assert_eq!(
            Change::from_notification(&n),
            Some(Change::ResourceUpdated {
                uri: "file:///b".into()
            })
        );
        client.close().await;
    };
    let (driven, ()) = future::block_on(future::zip(driver, work));
    driven.expect("closed locally");
}
