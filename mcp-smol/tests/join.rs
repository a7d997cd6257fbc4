//! [`Driver::join`] against the bundled example server (`examples/example_server.rs`):
//! wake-ups from async-io's threads, under `smol::block_on` and
//! `futures_lite::future::block_on`; work that never waits; one half ending before the
//! other; a panic in the work; the join dropped half-way; a `Driver<Local>`.
//!
//! A test that could hang runs on a thread of its own, given a minute ([`within`]): a
//! join that never yields would also starve a timer raced against it.
// The crate's `Error` is large on purpose: see its `lib.rs`.
#![allow(clippy::result_large_err)]

use std::cell::{Cell, RefCell};
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::Duration;

use futures_lite::future;
use mcp_smol::{
    Client, ClientCapabilities, ClientConfig, Driver, Error, Local, Options, StdioCommand,
};
use serde_json::json;

mod common;
use common::{Dialog, assert_gone_soon, bounded, calls_when_dropped, sequential_adds};

fn server() -> StdioCommand {
    common::stdio_server(&[])
}

fn config() -> ClientConfig {
    ClientConfig::new("mcp-smol-tests", "0.0.0")
}

fn connect() -> (Client, Driver) {
    mcp_smol::connect_stdio(server(), config()).expect("connect")
}

/// Runs `f` on a thread of its own and hands back what it returned (or its panic); fails
/// the test if it has not returned within a minute.
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(std::panic::catch_unwind(AssertUnwindSafe(f)));
    });
    match finished.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("did not finish within a minute"),
    }
}

/// Under `futures_lite::future::block_on` every readiness comes from async-io's helper
/// thread, so each answer's wake-up comes from another thread, at any point of the
/// join's poll; under `smol::block_on` the waiting thread runs the reactor itself.
#[test]
fn sequential_calls_finish_under_either_block_on() {
    for on_smol in [true, false] {
        let (driven, sum) = within(move || {
            let (client, driver) = connect();
            let join = driver.join(async move { sequential_adds(&client, 300).await });
            if on_smol {
                smol::block_on(join)
            } else {
                future::block_on(join)
            }
        });
        driven.expect("a clean end");
        assert_eq!(sum, (1..=300).sum::<u64>(), "on smol: {on_smol}");
    }
}

/// Work that never waits (it polls its call and yields, over and over) neither keeps the
/// other tasks of its executor from running nor keeps the driver from answering.
#[test]
fn work_that_only_yields_leaves_room_for_other_tasks_and_the_driver() {
    let (driven, answer) = within(|| {
        let (client, driver) = connect();
        let ex = smol::LocalExecutor::new();
        let other_runs = Rc::new(Cell::new(0_u32));
        smol::block_on(ex.run(async {
            let counter = other_runs.clone();
            let other = ex.spawn(async move {
                loop {
                    counter.set(counter.get() + 1);
                    future::yield_now().await;
                }
            });
            let seen = other_runs.clone();
            let work = async move {
                let mut call = pin!(client.call_tool("add", json!({"a": 1, "b": 2})));
                let mut answer = None;
                while answer.is_none() || seen.get() < 100 {
                    if answer.is_none() {
                        answer = future::poll_once(&mut call).await;
                    }
                    future::yield_now().await;
                }
                answer.expect("answered").expect("add").text()
            };
            let outcome = ex.spawn(driver.join(work)).await;
            drop(other);
            outcome
        }))
    });
    driven.expect("a clean end");
    assert_eq!(answer, "3");
}

/// The work resolves first; the driver goes on serving another handle, woken from
/// outside the join, until that one is dropped too.
#[test]
fn the_driver_outlives_work_that_ended_first() {
    let (driven, (work_output, sum)) = within(|| {
        let (client, driver) = connect();
        let other = client.clone();
        let ex = smol::LocalExecutor::new();
        let work_done = Rc::new(Cell::new(false));
        let done = work_done.clone();
        smol::block_on(ex.run(async {
            let joined = ex.spawn(driver.join(async move {
                client.connected().await.expect("connected");
                done.set(true);
                7
            }));
            while !work_done.get() {
                future::yield_now().await;
            }
            let sum = sequential_adds(&other, 20).await;
            // The last handle: the driver ends.
            drop(other);
            let (driven, output) = joined.await;
            (driven, (output, sum))
        }))
    });
    driven.expect("a clean end");
    assert_eq!((work_output, sum), (7, (1..=20).sum()));
}

/// The server dies while the work waits on a call: the call fails with the reason, and
/// the join resolves with the driver's error.
#[cfg(unix)]
#[test]
fn a_driver_that_fails_fails_the_call_the_work_waits_on() {
    let (driven, failed) = within(|| {
        let (client, driver) = connect();
        let pid = client.process_id().expect("pid");
        let work = async move {
            client.connected().await.expect("connected");
            let mut hang = pin!(client.call_tool("hang", json!({})));
            assert!(future::poll_once(&mut hang).await.is_none());
            let killed = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .expect("run kill");
            assert!(killed.success());
            hang.await.expect_err("the server died")
        };
        smol::block_on(driver.join(work))
    });
    assert!(
        matches!(
            failed,
            Error::Closed(mcp_smol::CloseReason::ServerExited { .. })
        ),
        "{failed:?}"
    );
    assert!(
        matches!(
            driven,
            Err(Error::Closed(mcp_smol::CloseReason::ServerExited { .. }))
        ),
        "{driven:?}"
    );
}

/// A panic in the work comes out of `block_on` as it is; the join is dropped on the
/// way, so the server is killed and the calls of other handles fail.
#[test]
fn a_panic_in_the_work_propagates_and_releases_the_driver() {
    let (client, driver) = connect();
    let pid = client.process_id().expect("pid");
    let outside = client.clone();
    let panicked = within(move || {
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            smol::block_on(driver.join(async move {
                client.connected().await.expect("connected");
                std::panic::panic_any("the work failed");
            }))
        }))
    });
    let panic = panicked.expect_err("the panic propagates");
    assert_eq!(panic.downcast_ref::<&str>(), Some(&"the work failed"));
    let e = future::block_on(bounded(outside.list_tools())).expect_err("no driver");
    assert!(matches!(e, Error::DriverGone), "{e:?}");
    // Killed on drop, then reaped by async-process in the background.
    assert_gone_soon(pid);
}

/// Dropping the join half-way is dropping the driver: a call in flight and one still
/// queued, from a handle outside the join, both fail with `DriverGone`.
#[test]
fn calls_in_flight_or_queued_fail_when_the_join_is_dropped() {
    let (client, driver) = connect();
    let outside = client.clone();
    let join = driver.join(async move {
        client.connected().await.expect("connected");
        future::pending::<()>().await;
    });
    for e in calls_when_dropped(&outside, join) {
        assert!(matches!(e, Error::DriverGone), "{e:?}");
    }
}

/// A join dropped before it was ever polled fails the calls queued meanwhile.
#[test]
fn a_join_dropped_unpolled_fails_the_queued_calls() {
    let (client, driver) = connect();
    let mut queued = Box::pin(client.list_tools());
    assert!(future::block_on(future::poll_once(&mut queued)).is_none());
    let join = driver.join(future::pending::<()>());
    assert!(format!("{join:?}").starts_with("Join {"), "{join:?}");
    drop(join);
    let e = future::block_on(bounded(queued)).expect_err("no driver");
    assert!(matches!(e, Error::DriverGone), "{e:?}");
}

/// A `Driver<Local>` (a handler that is not `Send`) joined with its work on one thread,
/// under either `block_on`.
#[test]
fn a_local_driver_joins_under_either_block_on() {
    for on_smol in [true, false] {
        let (asked, answer) = within(move || {
            let asked = Rc::new(RefCell::new(0_usize));
            let asking = config().capabilities(ClientCapabilities::with_elicitation());
            let options = Options::local().input_handler(Dialog(asked.clone()));
            let (client, driver): (Client, Driver<Local>) =
                mcp_smol::connect_stdio_with(server(), asking, options).expect("connect");
            let work = async move {
                let answer = client.call_tool("confirm", json!({})).await;
                answer.expect("confirm").text()
            };
            let join = driver.join(work);
            let (driven, answer) = if on_smol {
                smol::block_on(join)
            } else {
                future::block_on(join)
            };
            driven.expect("a clean end");
            (*asked.borrow(), answer)
        });
        assert_eq!(asked, 1, "on smol: {on_smol}");
        assert_eq!(answer, "accepted: proceed=true name=Ada");
    }
}
