//! The harness the test files share: the example server's path, and running a scenario
//! with the driver on a `smol::Executor`, or joined with it (`future::zip` or
//! `Driver::join`) and no executor at all.
#![allow(dead_code)]

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Duration;

use futures_lite::future::{self, poll_fn};
use mcp_smol::{Client, Driver, Error};

/// The example server binary, built by `cargo test` with the other examples (or here if
/// only this test target was built).
pub fn server_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().expect("current_exe");
        // target/<profile>/deps/<test>-<hash>
        let profile_dir = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("test binary lives in target/<profile>/deps");
        let path = profile_dir
            .join("examples")
            .join(format!("example_server{}", std::env::consts::EXE_SUFFIX));
        if !path.exists() {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let status = std::process::Command::new(cargo)
                .args(["build", "-p", "mcp-smol", "--example", "example_server"])
                .status()
                .expect("run cargo to build the example server");
            assert!(status.success(), "building example_server failed");
        }
        assert!(path.exists(), "no example server at {}", path.display());
        path
    })
    .clone()
}

pub type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
/// Starts a future as concurrently as the runner can: a task on an executor, or just
/// handed back to be joined.
pub type Spawn = Arc<dyn Fn(BoxFuture) -> BoxFuture + Send + Sync>;

/// Runs `scenario` with the driver on a `smol::Executor`; returns the driver's result.
pub fn run_smol<F, Fut>(connected: (Client, Driver), scenario: F) -> Result<(), Error>
where
    F: FnOnce(Client, Spawn) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let ex = Arc::new(smol::Executor::<'static>::new());
    let spawner = ex.clone();
    let spawn: Spawn = Arc::new(move |f: BoxFuture| -> BoxFuture {
        let task = spawner.spawn(f);
        Box::pin(task)
    });
    let (client, driver) = connected;
    let body = scenario(client, spawn);
    smol::block_on(ex.run(async {
        let driver = ex.spawn(driver);
        bounded(body).await;
        bounded(driver).await
    }))
}

/// Runs `scenario` joined with the driver, without any executor.
pub fn run_bare<F, Fut>(connected: (Client, Driver), scenario: F) -> Result<(), Error>
where
    F: FnOnce(Client, Spawn) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let spawn: Spawn = Arc::new(|f: BoxFuture| f);
    let (client, driver) = connected;
    let body = scenario(client, spawn);
    let (driven, ()) = future::block_on(bounded(future::zip(driver, body)));
    driven
}

/// Runs `scenario` in one future with the driver through [`Driver::join`], under
/// `smol::block_on` (no executor).
pub fn run_joined<F, Fut>(connected: (Client, Driver), scenario: F) -> Result<(), Error>
where
    F: FnOnce(Client, Spawn) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let spawn: Spawn = Arc::new(|f: BoxFuture| f);
    let (client, driver) = connected;
    let body = scenario(client, spawn);
    let (driven, ()) = smol::block_on(bounded(driver.join(body)));
    driven
}

/// Fails the test instead of hanging it.
pub async fn bounded<T>(f: impl Future<Output = T>) -> T {
    future::or(f, async {
        async_io::Timer::after(Duration::from_secs(30)).await;
        panic!("scenario did not finish within 30 s");
    })
    .await
}

pub async fn join_all(futures: Vec<BoxFuture>) {
    let mut slots: Vec<Option<BoxFuture>> = futures.into_iter().map(Some).collect();
    poll_fn(|cx| {
        let mut done = true;
        for slot in &mut slots {
            if let Some(f) = slot {
                if f.as_mut().poll(cx).is_ready() {
                    *slot = None;
                } else {
                    done = false;
                }
            }
        }
        if done { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
}
