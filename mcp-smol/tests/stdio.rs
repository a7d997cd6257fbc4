//! `mcp-smol` against the bundled example server (`examples/example_server.rs`) as a real
//! child process.
//!
//! Every scenario runs twice, under two ways of driving futures:
//!
//! * `smol`: `smol::block_on` running a `smol::Executor`; the driver and the concurrent
//!   calls are tasks spawned on it;
//! * `bare`: `futures_lite::future::block_on` of `future::zip(driver, scenario)`, no
//!   executor at all; "spawned" work is joined in the scenario's own future.
// The crate's `Error` is large on purpose: see its `lib.rs`.
#![allow(clippy::result_large_err)]

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
#[cfg(target_os = "linux")]
use std::time::Instant;

use futures_lite::future;
use mcp_smol::{
    AcceptDefaults, CallError, CallRequest, Client, ClientCapabilities, ClientConfig, CloseReason,
    Direction, Driver, Era, EraMode, Error, InputAnswer, InputHandler, InputRequest, Local,
    Options, ProtocolVersion, StdioCommand,
};
use serde_json::json;

// ----- harness -----------------------------------------------------------------------

mod common;
#[cfg(target_os = "linux")]
use common::process_exists;
use common::stdio_server as server;
use common::{BoxFuture, Runner, Spawn, assert_gone_soon, bounded, calls_when_dropped, join_all};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("mcp-smol-tests", "0.0.0")
        .era_mode(mode)
        .capabilities(ClientCapabilities::with_elicitation())
}

/// One test per runner for a scenario.
macro_rules! on_both_runners {
    ($name:ident, $command:expr, $config:expr, $scenario:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn smol_executor() {
                Runner::Smol
                    .run_stdio($command, $config, $scenario)
                    .expect("driver ends cleanly");
            }

            #[test]
            fn no_executor() {
                Runner::Bare
                    .run_stdio($command, $config, $scenario)
                    .expect("driver ends cleanly");
            }
        }
    };
}

// ----- scenarios ---------------------------------------------------------------------

/// The tour every era must pass: list, add, confirm (answered with the defaults),
/// resources, prompts, 8 concurrent calls from separate tasks.
async fn tour(client: Client, spawn: Spawn, era: Era, version: ProtocolVersion) {
    client.set_input_handler(Box::new(AcceptDefaults));
    let details = client.connected().await.expect("connected");
    assert_eq!(details.protocol_version, version);
    assert_eq!(client.era(), Some(era));
    assert_eq!(client.protocol_version(), Some(version));
    assert_eq!(client.server_name().as_deref(), Some("mcp-example"));

    let tools = client.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "add", "confirm", "hang", "fail"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }

    let sum = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .expect("add");
    assert_eq!(sum.text(), "5");
    assert_ne!(sum.is_error, Some(true));

    let confirmed = client
        .call_tool("confirm", json!({}))
        .await
        .expect("confirm");
    assert_eq!(confirmed.text(), "accepted: proceed=true name=friend");

    let failed = client.call_tool("fail", json!({})).await.expect("fail");
    assert_eq!(failed.is_error, Some(true));

    let resources = client.list_resources().await.expect("resources/list");
    assert!(resources.iter().any(|r| r.uri == "example://readme"));
    let readme = client
        .read_resource("example://readme")
        .await
        .expect("read");
    assert!(readme.to_string().contains("mcp-example"), "{readme}");

    let prompts = client.list_prompts().await.expect("prompts/list");
    assert!(prompts.iter().any(|p| p.name == "greet"));
    let greeting = client
        .get_prompt("greet", json!({"name": "Ada"}))
        .await
        .expect("prompt");
    assert!(greeting.to_string().contains("Ada"), "{greeting}");

    // 8 calls in flight at once, each from its own task with its own handle.
    let results = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<BoxFuture> = (0..8i64)
        .map(|i| {
            let client = client.clone();
            let results = results.clone();
            spawn(Box::pin(async move {
                let r = client
                    .call_tool("add", json!({"a": i, "b": 100}))
                    .await
                    .expect("concurrent add");
                results.lock().unwrap().push((i, r.text()));
            }))
        })
        .collect();
    join_all(tasks).await;
    let mut results = results.lock().unwrap().clone();
    results.sort();
    let expected: Vec<(i64, String)> = (0..8).map(|i| (i, (i + 100).to_string())).collect();
    assert_eq!(results, expected);

    assert!(client.recent_peer_errors().is_empty());
    // Dropping the last handle (here) ends the driver.
}

on_both_runners!(
    auto_settles_on_2026,
    server(&[]),
    config(EraMode::Auto),
    |client, spawn| tour(client, spawn, Era::Modern, ProtocolVersion::V2026_07_28)
);

on_both_runners!(
    legacy_mode_initializes,
    server(&[]),
    config(EraMode::Legacy),
    |client, spawn| tour(client, spawn, Era::Legacy, ProtocolVersion::V2025_11_25)
);

on_both_runners!(
    auto_falls_back_for_a_legacy_server,
    server(&["--era", "legacy"]),
    config(EraMode::Auto),
    |client, spawn| tour(client, spawn, Era::Legacy, ProtocolVersion::V2025_11_25)
);

on_both_runners!(
    modern_mode_against_a_modern_only_server,
    server(&["--era", "modern"]),
    config(EraMode::Modern),
    |client, spawn| tour(client, spawn, Era::Modern, ProtocolVersion::V2026_07_28)
);

/// A server that exits on the probe is restarted and spoken to with `initialize`.
async fn restarted_after_probe(client: Client, spawn: Spawn) {
    client.connected().await.expect("connected after a restart");
    assert_eq!(client.restarts(), 1);
    // The process that answers is the second one. (Its pid cannot be compared with the
    // first's here: on the runner without an executor the driver may restart the server
    // before this scenario first looks.)
    assert!(client.process_id().is_some());
    assert!(
        client.stderr_tail().contains("exiting on server/discover"),
        "{:?}",
        client.stderr_tail()
    );
    tour(client, spawn, Era::Legacy, ProtocolVersion::V2025_11_25).await;
}

on_both_runners!(
    server_exiting_on_the_probe_is_restarted,
    server(&["--exit-on-probe"]),
    config(EraMode::Auto),
    restarted_after_probe
);

/// Without an input handler, the form is declined (the default is `DeclineAll`).
async fn declined_by_default(client: Client, _spawn: Spawn) {
    let r = client
        .call_tool("confirm", json!({}))
        .await
        .expect("confirm");
    assert_eq!(r.text(), "declined");
}

on_both_runners!(
    input_is_declined_by_default_modern,
    server(&[]),
    config(EraMode::Auto),
    declined_by_default
);

on_both_runners!(
    input_is_declined_by_default_legacy,
    server(&[]),
    config(EraMode::Legacy),
    declined_by_default
);

/// Timeouts and dropped call futures both cancel the call; the connection goes on.
async fn cancellation(client: Client, _spawn: Spawn) {
    let sent = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = sent.clone();
    client.set_wire_log(Some(Box::new(move |dir, line| {
        if dir == Direction::Sent {
            log.lock()
                .unwrap()
                .push(String::from_utf8_lossy(line).into_owned());
        }
    })));
    client.connected().await.expect("connected");

    let timed_out = client
        .request(CallRequest::call_tool("hang", json!({})).timeout(Duration::from_millis(200)))
        .await
        .expect_err("hang must time out");
    assert!(
        matches!(timed_out, Error::Call(CallError::Timeout(_))),
        "{timed_out:?}"
    );

    // Drop a call future while the call is in flight.
    let hang = client.call_tool("hang", json!({}));
    let gave_up = future::or(async { Some(hang.await) }, async {
        async_io::Timer::after(Duration::from_millis(100)).await;
        None
    })
    .await;
    assert!(gave_up.is_none(), "hang answered: {gave_up:?}");

    let sum = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .expect("add");
    assert_eq!(sum.text(), "5");
    let cancels = sent
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("notifications/cancelled"))
        .count();
    assert_eq!(cancels, 2, "{:#?}", sent.lock().unwrap());
}

on_both_runners!(
    timeouts_and_dropped_calls_cancel_modern,
    server(&[]),
    config(EraMode::Auto),
    cancellation
);

on_both_runners!(
    timeouts_and_dropped_calls_cancel_legacy,
    server(&[]),
    config(EraMode::Legacy),
    cancellation
);

/// `close()` fails calls in flight, ends the driver, and reports how the server ended.
async fn close_ends_everything(client: Client, spawn: Spawn) {
    client.connected().await.expect("connected");
    let other = client.clone();
    let hanging = spawn(Box::pin(async move {
        let e = other
            .call_tool("hang", json!({}))
            .await
            .expect_err("closed");
        assert!(
            matches!(e, Error::Closed(CloseReason::Local)),
            "hang ended with {e:?}"
        );
    }));
    // Let the hang call reach the server first.
    async_io::Timer::after(Duration::from_millis(100)).await;
    let shutdown = client.close().await;
    assert!(!shutdown.killed);
    assert!(shutdown.status.is_some_and(|s| s.success()), "{shutdown:?}");
    hanging.await;
    assert!(client.is_closed());
    assert_eq!(client.close_reason(), Some(CloseReason::Local));
    assert_eq!(client.process_id(), None);
    let e = client.list_tools().await.expect_err("closed");
    assert!(matches!(e, Error::Closed(CloseReason::Local)), "{e:?}");
}

on_both_runners!(
    close_ends_everything,
    server(&[]),
    config(EraMode::Auto),
    close_ends_everything
);

// ----- single-runner tests -----------------------------------------------------------

#[cfg(target_os = "linux")]
fn dropping_the_client(runner: Runner) {
    let pid = Arc::new(Mutex::new(None));
    let seen = pid.clone();
    let started = Instant::now();
    let scenario = move |client: Client, _: Spawn| async move {
        // A server that exits on EOF must not wait for the grace period.
        client.set_grace_period(Duration::from_secs(30));
        client.connected().await.expect("connected");
        *seen.lock().unwrap() = client.process_id();
        let copy = client.clone();
        drop(client);
        copy.call_tool("add", json!({"a": 1, "b": 1}))
            .await
            .expect("one handle is enough");
        // `copy` is the last handle: dropping it ends the connection.
    };
    let driven = runner.run_stdio(server(&[]), config(EraMode::Auto), scenario);
    driven.expect("a client-side close is a clean end");
    let pid = pid.lock().unwrap().expect("pid");
    assert!(!process_exists(pid), "server {pid} still exists");
    // The server exits on stdin EOF: nothing waited for the 30 s grace period.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[cfg(target_os = "linux")]
#[test]
fn dropping_the_client_ends_the_driver_and_the_process_smol() {
    dropping_the_client(Runner::Smol);
}

#[cfg(target_os = "linux")]
#[test]
fn dropping_the_client_ends_the_driver_and_the_process_bare() {
    dropping_the_client(Runner::Bare);
}

/// The example server stays up on stdin EOF but not on `SIGTERM`, sent half-way
/// through the grace period. (One that ignores `SIGTERM` too is killed at its end:
/// `tests/tests/process_group.rs` in the workspace.)
#[cfg(target_os = "linux")]
#[test]
fn a_server_ignoring_eof_is_terminated_half_way_through_the_grace_period() {
    let options = Options::new().grace_period(Duration::from_millis(600));
    let (client, driver) =
        mcp_smol::connect_stdio_with(server(&["--ignore-eof"]), config(EraMode::Auto), options)
            .expect("connect");
    let pid = client.process_id().expect("pid");
    let work = async move {
        client.connected().await.expect("connected");
        let started = Instant::now();
        let shutdown = client.close().await;
        assert!(shutdown.terminated && !shutdown.killed, "{shutdown:?}");
        assert!(
            shutdown.status.is_some_and(|s| !s.success()),
            "{shutdown:?}"
        );
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(
            client.stderr_tail().contains("staying up"),
            "{}",
            client.stderr_tail()
        );
    };
    let (driven, ()) = future::block_on(bounded(future::zip(driver, work)));
    driven.expect("clean end");
    assert!(!process_exists(pid), "server {pid} still exists");
}

#[test]
fn dropping_the_driver_kills_the_server_and_fails_calls() {
    let (client, driver) =
        mcp_smol::connect_stdio(server(&[]), config(EraMode::Auto)).expect("connect");
    let pid = client.process_id().expect("pid");
    drop(driver);
    let e = future::block_on(client.list_tools()).expect_err("no driver");
    assert!(matches!(e, Error::DriverGone), "{e:?}");
    assert_eq!(e.kind(), "driver-gone");
    let shutdown = future::block_on(client.close());
    assert_eq!(shutdown.status, None);
    // Killed on drop, then reaped by async-process in the background.
    assert_gone_soon(pid);
}

#[test]
fn calls_in_flight_or_queued_fail_when_the_driver_is_dropped() {
    let (client, driver) =
        mcp_smol::connect_stdio(server(&[]), config(EraMode::Auto)).expect("connect");
    for e in calls_when_dropped(&client, Box::pin(driver)) {
        assert!(matches!(e, Error::DriverGone), "{e:?}");
    }
}

#[test]
fn modern_mode_refuses_a_legacy_server_with_its_stderr() {
    let command = server(&["--era", "legacy", "--stderr", "hello from the server"]);
    let driven = Runner::Bare.run_stdio(command, config(EraMode::Modern), |client, _| async move {
        let e = client.connected().await.expect_err("legacy server");
        assert!(
            matches!(
                &e,
                Error::Connect {
                    reason: CloseReason::LegacyServer,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(e.kind(), "legacy-server");
        assert!(
            e.stderr_tail().unwrap().contains("hello from the server"),
            "{e:?}"
        );
        // Later calls report the end too.
        let later = client.list_tools().await.expect_err("closed");
        assert!(later.close_reason().is_some(), "{later:?}");
    });
    let e = driven.expect_err("the server-side end is an error");
    assert!(
        matches!(e, Error::Closed(CloseReason::LegacyServer)),
        "{e:?}"
    );
}

#[test]
fn the_child_sees_only_the_named_environment() {
    let command = server(&["--env-to-stderr"])
        .pass_env("HOME")
        .pass_env("MCP_SMOL_TEST_SURELY_UNSET")
        .env("MCP_SMOL_SET", "1");
    let driven = Runner::Bare.run_stdio(command, config(EraMode::Auto), |client, _| async move {
        client.connected().await.expect("connected");
        let shutdown = client.close().await;
        assert!(!shutdown.killed);
        let mut names: Vec<String> = client
            .stderr_tail()
            .lines()
            .filter_map(|l| l.strip_prefix("env: ").map(str::to_owned))
            .collect();
        names.sort();
        let mut expected = vec!["MCP_SMOL_SET".to_owned()];
        if std::env::var_os("HOME").is_some() {
            expected.insert(0, "HOME".to_owned());
        }
        assert_eq!(names, expected);
    });
    driven.expect("clean end");
}

#[test]
fn a_missing_program_is_a_spawn_error() {
    let e = mcp_smol::connect_stdio(
        StdioCommand::new("mcp-smol-no-such-server-anywhere"),
        config(EraMode::Auto),
    )
    .expect_err("no such program");
    assert!(matches!(e, Error::Spawn { .. }), "{e:?}");
    assert_eq!(e.kind(), "spawn");
    assert!(e.to_string().contains("not found on PATH"), "{e}");
}

#[test]
fn a_server_that_dies_fails_the_calls_in_flight() {
    // `--exit-on-probe` in Modern mode: the process exit during the probe is fatal.
    let driven = Runner::Bare.run_stdio(
        server(&["--exit-on-probe"]),
        config(EraMode::Modern),
        |client, _| async move {
            let e = client.list_tools().await.expect_err("server gone");
            assert!(
                matches!(e, Error::Closed(CloseReason::ServerExited { .. })),
                "{e:?}"
            );
            assert_eq!(client.restarts(), 0);
        },
    );
    assert!(
        matches!(driven, Err(Error::Closed(CloseReason::ServerExited { .. }))),
        "{driven:?}"
    );
}

/// An input handler that is not `Send`: its state sits behind an `Rc<RefCell<…>>`, as a
/// single-threaded UI's would. It fills the form with a name of its own.
struct Dialog {
    asked: Rc<RefCell<Vec<String>>>,
}

impl InputHandler for Dialog {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        let InputRequest::Elicitation(form) = request else {
            return InputAnswer::decline();
        };
        self.asked.borrow_mut().push(form.message.clone());
        let mut content = serde_json::Map::new();
        content.insert("proceed".into(), json!(true));
        content.insert("name".into(), json!("Ada"));
        InputAnswer::accept(content)
    }
}

/// `Options::local()` with a handler and a wire log that are not `Send`: a
/// `Driver<Local>`, run on a `LocalExecutor`, answering the example server's form.
#[test]
fn handlers_that_are_not_send_answer_on_a_local_executor() {
    for mode in [EraMode::Auto, EraMode::Legacy] {
        let asked = Rc::new(RefCell::new(Vec::new()));
        let lines = Rc::new(RefCell::new(Vec::<String>::new()));
        let sink = lines.clone();
        let options = Options::local()
            .input_handler(Dialog {
                asked: asked.clone(),
            })
            .wire_log(move |_, line| {
                sink.borrow_mut()
                    .push(String::from_utf8_lossy(line).into_owned());
            });
        let (client, driver): (Client, Driver<Local>) =
            mcp_smol::connect_stdio_with(server(&[]), config(mode), options).expect("connect");
        let ex = smol::LocalExecutor::new();
        let driven = future::block_on(ex.run(bounded(async {
            let driver = ex.spawn(driver);
            let answer = client.call_tool("confirm", json!({})).await;
            assert_eq!(
                answer.expect("confirm").text(),
                "accepted: proceed=true name=Ada"
            );
            client.close().await;
            driver.await
        })));
        driven.expect("clean end");
        assert_eq!(*asked.borrow(), ["Proceed with the example action?"]);
        assert!(
            lines.borrow().iter().any(|l| l.contains("\"confirm\"")),
            "{:#?}",
            lines.borrow()
        );
    }
}

/// `Options::transcript`: the run's transcript, in both eras, replays on a fresh machine.
#[test]
fn a_transcript_of_the_run_replays() {
    use std::sync::{Arc, Mutex};
    for mode in [EraMode::Auto, EraMode::Legacy] {
        let text = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&text);
        let options = Options::new()
            .input_handler(AcceptDefaults)
            .transcript(move |line| {
                let mut text = sink.lock().unwrap();
                text.push_str(line);
                text.push('\n');
            });
        let connected =
            mcp_smol::connect_stdio_with(server(&[]), config(mode), options).expect("connect");
        let driven = Runner::Bare.run(connected, |client, _| async move {
            client
                .call_tool("add", json!({"a": 2, "b": 3}))
                .await
                .expect("add");
            client
                .call_tool("confirm", json!({}))
                .await
                .expect("confirm");
            client.close().await;
        });
        driven.expect("clean end");
        let text = text.lock().unwrap();
        assert!(text.starts_with(r#"{"transcript":"#), "{text}");
        assert!(text.contains("InputRequested"), "{text}");
        let summary = mcp_smol::transcript::replay(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(summary.transcripts, 1);
    }
}

// ----- input answered by the application, asynchronously --------------------------------

/// With `queue_input_requests`, the form of `confirm` is taken by another task, answered
/// after a pause (the executor keeps running: a second call completes meanwhile), and
/// the call gets the answer; in both eras.
#[test]
fn queued_input_is_answered_by_another_task_in_both_eras() {
    for mode in [EraMode::Auto, EraMode::Legacy] {
        let options = Options::new().queue_input_requests();
        let connected = mcp_smol::connect_stdio_with(server(&[]), config(mode), options).unwrap();
        let outcome = Runner::Smol.run(connected, move |client: Client, spawn: Spawn| async move {
            let answering = client.clone();
            let answered = spawn(Box::pin(async move {
                let asked = answering.next_input_request().await.expect("a request");
                let InputRequest::Elicitation(form) = &asked.request else {
                    panic!("{:?}", asked.request);
                };
                assert!(form.message.contains("Proceed"), "{}", form.message);
                assert!(asked.call.is_some() || mode == EraMode::Legacy);
                async_io::Timer::after(Duration::from_millis(100)).await;
                let mut content = serde_json::Map::new();
                content.insert("proceed".into(), json!(false));
                content.insert("name".into(), json!("Ada"));
                answering
                    .respond(asked.input, InputAnswer::accept(content))
                    .await
                    .expect("respond");
                // Answered once: a second answer is refused.
                let again = answering.respond(asked.input, InputAnswer::decline()).await;
                assert!(matches!(again, Err(Error::Misuse(_))), "{again:?}");
            }));
            let confirm = client.call_tool("confirm", json!({}));
            // Meanwhile other calls go on.
            let sum = client
                .call_tool("add", json!({"a": 1, "b": 2}))
                .await
                .unwrap();
            assert_eq!(sum.text(), "3");
            let confirmed = confirm.await.expect("confirm");
            assert_eq!(confirmed.text(), "accepted: proceed=false name=Ada");
            answered.await;
            client.close().await;
        });
        outcome.expect("driver ends cleanly");
    }
}

/// A request whose call is dropped is void: its answer is refused.
#[test]
fn a_queued_request_of_a_dropped_call_is_void() {
    let options = Options::new().queue_input_requests();
    let connected =
        mcp_smol::connect_stdio_with(server(&[]), config(EraMode::Auto), options).unwrap();
    let driven = Runner::Bare.run(connected, |client: Client, _spawn: Spawn| async move {
        let asked = {
            let confirm = client.call_tool("confirm", json!({}));
            future::or(async { client.next_input_request().await }, async {
                confirm.await.ok();
                None
            })
            .await
            .expect("a request")
            // The call's future is dropped here: the call is cancelled.
        };
        let late = client.respond(asked.input, InputAnswer::decline()).await;
        assert!(matches!(late, Err(Error::Misuse(_))), "{late:?}");
        client.close().await;
    });
    driven.expect("driver ends cleanly");
}

/// A server that exits on the probe and whose command is gone when it is started again:
/// the connection fails with the spawn error, and no process id of the server that
/// exited is still reported as running.
#[cfg(unix)]
#[test]
fn a_restart_that_cannot_spawn_reports_no_process() {
    let dir = std::env::temp_dir().join(format!("mcp-smol-respawn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let script = dir.join("server-once.sh");
    let text = format!(
        "#!/bin/sh\nrm -f -- \"$0\"\nexec '{}' --exit-on-probe\n",
        common::server_path().display()
    );
    // Written by a child process: a file this multi-threaded process held open for
    // writing could be inherited by a child another test forks meanwhile, and starting it
    // would then fail with ETXTBSY.
    let written = std::process::Command::new("sh")
        .args([
            "-c",
            "printf '%s' \"$1\" > \"$2\" && chmod 755 \"$2\"",
            "sh",
        ])
        .arg(&text)
        .arg(&script)
        .status()
        .expect("sh");
    assert!(written.success());
    let (client, driver) =
        mcp_smol::connect_stdio(StdioCommand::new(&script), config(EraMode::Auto))
            .expect("connect");
    let checked = async {
        let e = client.connected().await.expect_err("cannot start again");
        assert_eq!(e.kind(), "spawn", "{e:?}");
        assert_eq!(
            client.process_id(),
            None,
            "the server that exited is not running"
        );
    };
    let (driven, ()) = future::block_on(common::bounded(future::zip(driver, checked)));
    assert!(driven.is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
