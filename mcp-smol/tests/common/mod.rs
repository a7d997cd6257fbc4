//! The harness both test files share: running a scenario with the driver on a
//! `smol::Executor`, or joined with it and no executor at all.
#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_lite::future::{self, poll_fn};
use mcp_smol::{Client, Driver, Error};

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
