//! The harness the test files share: the example server's path, running a scenario with
//! the driver on a `smol::Executor`, or joined with it (`future::zip` or `Driver::join`)
//! and no executor at all, and the pieces of scenarios more than one file plays.
#![allow(dead_code)]

use std::cell::RefCell;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Duration;

use futures_lite::future::{self, poll_fn};
use mcp_smol::{
    Client, ClientConfig, Driver, Error, InputAnswer, InputHandler, InputRequest, StdioCommand,
};
use serde_json::json;

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

/// The example server as a child process, with these arguments.
pub fn stdio_server(args: &[&str]) -> StdioCommand {
    StdioCommand::new(server_path()).args(args.iter().copied())
}

pub type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
/// Starts a future as concurrently as the runner can: a task on an executor, or just
/// handed back to be joined.
pub type Spawn = Arc<dyn Fn(BoxFuture) -> BoxFuture + Send + Sync>;

/// How a scenario runs with its driver.
#[derive(Clone, Copy, Debug)]
pub enum Runner {
    /// `smol::block_on` running a `smol::Executor`: the driver and the "spawned" work
    /// are tasks on it.
    Smol,
    /// `futures_lite::future::block_on` of `future::zip(driver, scenario)`, no executor;
    /// "spawned" work is joined in the scenario's own future.
    Bare,
    /// The scenario in one future with the driver through [`Driver::join`], under
    /// `smol::block_on` (no executor).
    Joined,
}

impl Runner {
    /// Runs `scenario` with the driver as this runner does; returns the driver's result.
    pub fn run<F, Fut>(self, connected: (Client, Driver), scenario: F) -> Result<(), Error>
    where
        F: FnOnce(Client, Spawn) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let ex = Arc::new(smol::Executor::<'static>::new());
        let spawn: Spawn = match self {
            Runner::Smol => {
                let spawner = ex.clone();
                Arc::new(move |f: BoxFuture| -> BoxFuture { Box::pin(spawner.spawn(f)) })
            }
            Runner::Bare | Runner::Joined => Arc::new(|f: BoxFuture| f),
        };
        let (client, driver) = connected;
        let body = scenario(client, spawn);
        match self {
            Runner::Smol => smol::block_on(ex.run(async {
                let driver = ex.spawn(driver);
                bounded(body).await;
                bounded(driver).await
            })),
            Runner::Bare => {
                let (driven, ()) = future::block_on(bounded(future::zip(driver, body)));
                driven
            }
            Runner::Joined => {
                let (driven, ()) = smol::block_on(bounded(driver.join(body)));
                driven
            }
        }
    }

    /// Connects to `command` and [runs](Runner::run) `scenario`.
    pub fn run_stdio<F, Fut>(
        self,
        command: StdioCommand,
        config: ClientConfig,
        scenario: F,
    ) -> Result<(), Error>
    where
        F: FnOnce(Client, Spawn) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let connected = mcp_smol::connect_stdio(command, config).expect("connect");
        self.run(connected, scenario)
    }
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

/// Calls `add` `n` times in a row (`i + 1` for each `i` in `0..n`), checking each answer;
/// the sum of the answers.
pub async fn sequential_adds(client: &Client, n: u64) -> u64 {
    let mut sum = 0;
    for i in 0..n {
        let answer = client
            .call_tool("add", json!({"a": i, "b": 1}))
            .await
            .expect("add");
        assert_eq!(answer.text(), (i + 1).to_string());
        sum += answer.text().parse::<u64>().expect("a number");
    }
    sum
}

/// An input handler that is not `Send`: fills the example server's form (`proceed`, and
/// the name Ada), counting the questions in a single-threaded `Rc`.
pub struct Dialog(pub Rc<RefCell<usize>>);

impl InputHandler for Dialog {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        *self.0.borrow_mut() += 1;
        let InputRequest::Elicitation(_) = request else {
            return InputAnswer::decline();
        };
        let mut content = serde_json::Map::new();
        content.insert("proceed".into(), json!(true));
        content.insert("name".into(), json!("Ada"));
        InputAnswer::accept(content)
    }
}

/// Drives `driving` (the driver, or a join holding it) until a `hang` call of `client`
/// is in flight, queues a listing that the driver never takes, then drops `driving`:
/// the errors of the call in flight and of the queued one.
pub fn calls_when_dropped<D: Future + Unpin>(client: &Client, mut driving: D) -> [Error; 2] {
    let mut in_flight = Box::pin(client.call_tool("hang", json!({})));
    future::block_on(bounded(future::or(
        async {
            let _ = (&mut driving).await;
            panic!("the driver ended");
        },
        async {
            client.connected().await.expect("connected");
            assert!(future::poll_once(&mut in_flight).await.is_none());
            async_io::Timer::after(Duration::from_millis(100)).await;
        },
    )));
    // This one's command waits in the channel: the driver never takes it.
    let mut queued = Box::pin(client.list_tools());
    assert!(future::block_on(future::poll_once(&mut queued)).is_none());
    drop(driving);
    [
        future::block_on(bounded(in_flight)).expect_err("no driver"),
        future::block_on(bounded(queued)).expect_err("no driver"),
    ]
}

#[cfg(target_os = "linux")]
pub fn process_exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Fails the test if the process `pid` still exists within 5 s (killed, it is reaped
/// by async-process in the background). Checked on Linux only.
pub fn assert_gone_soon(pid: u32) {
    #[cfg(target_os = "linux")]
    {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while process_exists(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!process_exists(pid), "server {pid} still exists");
    }
    let _ = pid;
}
