//! `subscriptions/listen` served by our own server over real sockets
//! (`mcp_blocking::serve_http` on 127.0.0.1), listened to by our own clients of both
//! adapters: the acknowledgement, a tools list change the application makes while the
//! stream is open, the client ending its listen (the server forgets it once the stream
//! closes) and the server ending one gracefully (the `complete` result).

use std::net::TcpListener;
use std::time::{Duration, Instant};

use futures_lite::future;
use mcp_blocking::HttpServerHandle;
use mcp_proto::client::{Change, ClientConfig, Event, ListenEnd, ListenFilter};
use mcp_proto::server::{Server, Tool, ToolCall, ToolOutcome, example};
use mcp_proto::version::EraMode;
use serde_json::json;

fn serve() -> HttpServerHandle {
    let server = example::server_with(|c| c.list_changed = true);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    mcp_blocking::serve_http(listener, server).unwrap()
}

fn add_tool(handle: &HttpServerHandle, name: &str) {
    let tool = Tool::new(name, "", json!({"type": "object"}), |_: &ToolCall<'_>| {
        ToolOutcome::text("ok")
    });
    handle.with_endpoint(|e| e.update_server(mcp_io::clock::now(), |s| s.add_tool(tool)));
}

fn subscriptions(handle: &HttpServerHandle) -> usize {
    handle.with_endpoint(|e| e.server().subscriptions())
}

/// Waits (at most five seconds) until the server holds `n` listens.
fn until_subscriptions(handle: &HttpServerHandle, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while subscriptions(handle) != n {
        assert!(
            Instant::now() < deadline,
            "still {} listens",
            subscriptions(handle)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn config() -> ClientConfig {
    ClientConfig::new("listen-test", "1.0").era_mode(EraMode::Modern)
}

#[test]
fn blocking_client_listens_to_our_server() {
    let handle = serve();
    let mut client = mcp_blocking::Client::connect_http(&handle.url(), config()).expect("connect");
    let filter = ListenFilter::new().tools().prompts();
    let sub = client.listen(&filter).expect("listen");
    let wait = Duration::from_secs(5);
    match client.next_subscription_event(Some(sub), wait) {
        Some(Event::SubscriptionAcknowledged { refused, .. }) => {
            assert_eq!(refused, ListenFilter::new(), "both lists are served");
        }
        other => panic!("{other:?}"),
    }
    until_subscriptions(&handle, 1);
    add_tool(&handle, "extra");
    match client.next_subscription_event(Some(sub), wait) {
        Some(Event::SubscriptionNotification { change, .. }) => {
            assert_eq!(change, Some(Change::ToolsListChanged));
        }
        other => panic!("{other:?}"),
    }
    let tools = client.list_tools().expect("list");
    assert!(tools.iter().any(|t| t.name == "extra"));
    // The client ends it: the stream closes and the server forgets the listen.
    client.end_listen(sub).expect("end");
    match client.next_subscription_event(Some(sub), wait) {
        Some(Event::SubscriptionEnded { end, .. }) => assert_eq!(end, ListenEnd::EndedByClient),
        other => panic!("{other:?}"),
    }
    until_subscriptions(&handle, 0);
    // The server ends the next one gracefully.
    let sub = client.listen(&filter).expect("listen");
    assert!(matches!(
        client.next_subscription_event(Some(sub), wait),
        Some(Event::SubscriptionAcknowledged { .. })
    ));
    let ended =
        handle.with_endpoint(|e| e.update_server(mcp_io::clock::now(), Server::end_subscriptions));
    assert_eq!(ended, 1);
    match client.next_subscription_event(Some(sub), wait) {
        Some(Event::SubscriptionEnded { end, .. }) => assert_eq!(end, ListenEnd::Complete),
        other => panic!("{other:?}"),
    }
    client.close();
    handle.stop();
}

#[test]
fn smol_client_listens_to_our_server() {
    let handle = serve();
    let url = handle.url();
    let (client, driver) = mcp_smol::connect_http(&url, config()).expect("connect");
    let work = async {
        let sub = client
            .listen(&ListenFilter::new().tools())
            .await
            .expect("listen");
        let mut seen = Vec::new();
        while let Some(e) = client.next_subscription_event(Some(sub)).await {
            match e {
                Event::SubscriptionAcknowledged { refused, .. } => {
                    assert_eq!(refused, ListenFilter::new());
                    until_subscriptions(&handle, 1);
                    add_tool(&handle, "from-smol");
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
    until_subscriptions(&handle, 0);
    handle.stop();
}

/// The TypeScript SDK client (`tests/interop/listen.mjs`) hears of a tools list change
/// our server makes while it listens: in 2025-11-25 on its session's GET stream, in
/// 2026-07-28 on its `subscriptions/listen` stream (which it then closes; the server
/// forgets the listen).
#[test]
fn the_typescript_client_hears_of_list_changes() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = mcp_tests::interop::interop_dir();
    if !dir
        .join("node_modules/@modelcontextprotocol/client/package.json")
        .exists()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "TypeScript SDK client missing"
        );
        eprintln!("skipped: run `bash tests/interop/setup.sh`");
        return;
    }
    for era in ["legacy", "modern"] {
        let handle = serve();
        let mut child = Command::new("node")
            .arg(dir.join("listen.mjs"))
            .args(["--era", era, "--http", &handle.url()])
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node");
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(serde_json::from_str::<serde_json::Value>(&line).unwrap());
            }
        });
        let next = || {
            rx.recv_timeout(Duration::from_secs(20))
                .expect("a line from node")
        };
        let listening = next();
        let deadline = Instant::now() + Duration::from_secs(5);
        if era == "modern" {
            assert_eq!(listening["listening"], json!({"toolsListChanged": true}));
            until_subscriptions(&handle, 1);
        } else {
            // The SDK opens the session's GET stream on its own, after initialize.
            while handle.with_endpoint(|e| e.listeners()) == 0 {
                assert!(Instant::now() < deadline, "no GET stream");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        add_tool(&handle, "grown");
        let changed = next();
        let names = changed["changed"].as_array().expect("a change");
        assert!(names.iter().any(|n| n == "grown"), "{era}: {changed}");
        if era == "modern" {
            assert_eq!(next()["closed"], "local");
            until_subscriptions(&handle, 0);
        }
        let status = child.wait().unwrap();
        assert!(status.success(), "{era}: node exited {status}");
        handle.stop();
    }
}

/// Stopping the server says goodbye to its listens: the client sees the graceful end
/// (the `complete` result), not a dropped connection.
#[test]
fn stopping_the_server_ends_listens_gracefully() {
    let handle = serve();
    let mut client = mcp_blocking::Client::connect_http(&handle.url(), config()).expect("connect");
    let sub = client.listen(&ListenFilter::new().tools()).expect("listen");
    let wait = Duration::from_secs(5);
    assert!(matches!(
        client.next_subscription_event(Some(sub), wait),
        Some(Event::SubscriptionAcknowledged { .. })
    ));
    until_subscriptions(&handle, 1);
    handle.stop();
    match client.next_subscription_event(Some(sub), wait) {
        Some(Event::SubscriptionEnded { end, .. }) => assert_eq!(end, ListenEnd::Complete),
        other => panic!("{other:?}"),
    }
    client.close();
}
