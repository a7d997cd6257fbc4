//! Both adapters end a stdio server's whole process group when the client closes: what
//! it started through a shell (or `npx`) is gone with it, and a server that ignores
//! stdin EOF and `SIGTERM` is still ended within the grace period.
//!
//! The servers are `sh -c` scripts that start a grandchild (`sleep 300 &`, its pid
//! written to a file) and run the bundled example server (`mcp-blocking`'s
//! `example-server`). The timing policy itself is unit-tested in `mcp_io::ending`.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_lite::future;
use mcp_proto::client::ClientConfig;

/// The grace period of every test here.
const GRACE: Duration = Duration::from_secs(1);
/// What a close may take beyond the grace period (spawning `sh`, reaping, a busy host).
const MARGIN: Duration = Duration::from_millis(1000);

/// The bundled example server, built here when only this test target was.
fn example_server() -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test-binary>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binary lives in target/<profile>/deps");
    let path = profile_dir.join("examples").join("example-server");
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if !path.exists() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "mcp-blocking", "--example", "example-server"])
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building example-server failed");
    }
    assert!(path.exists(), "{} missing", path.display());
    path
}

/// A file for the grandchild's pid, fresh for `test`.
fn pid_file(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("process-group");
    std::fs::create_dir_all(&dir).expect("create temp dir");
    let file = dir.join(format!("{test}-{}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    file
}

/// `sh -c script`, with `$PIDFILE` and `$SERVER` set.
fn sh(script: &str, pid_file: &Path) -> mcp_blocking::StdioCommand {
    mcp_blocking::StdioCommand::new("sh")
        .arg("-c")
        .arg(script)
        .env("PIDFILE", pid_file)
        .env("SERVER", example_server())
}

/// Starts a grandchild, then becomes the example server, which exits on stdin EOF.
const WELL_BEHAVED: &str = r#"sleep 300 & echo $! > "$PIDFILE"; exec "$SERVER""#;

/// Starts a grandchild, runs the example server, and once that has exited on stdin EOF
/// stays up: it ignores `SIGTERM`, as do its children (an ignored signal stays ignored
/// across fork and exec).
const STUBBORN: &str =
    r#"trap '' TERM; sleep 300 & echo $! > "$PIDFILE"; "$SERVER"; while :; do sleep 1; done"#;

#[derive(Debug, Clone, Copy)]
enum Adapter {
    Blocking,
    Smol,
}

/// What a connect, one call and a close with [`GRACE`] showed.
struct Closed {
    shutdown: mcp_blocking::Shutdown,
    /// When `close` was called.
    started: Instant,
    /// How long it took.
    took: Duration,
    /// The server's pid (its process group's id).
    pid: u32,
}

fn config() -> ClientConfig {
    ClientConfig::new("mcp-tests-process-group", "0")
}

fn connect_and_close(adapter: Adapter, command: mcp_blocking::StdioCommand) -> Closed {
    match adapter {
        Adapter::Blocking => {
            let options = mcp_blocking::Options::new().grace_period(GRACE);
            let mut client = mcp_blocking::Client::connect_stdio_with(command, config(), options)
                .expect("connect");
            client.list_tools().expect("tools/list");
            let pid = client.process_id().expect("pid");
            let started = Instant::now();
            let shutdown = client.close();
            Closed {
                shutdown,
                started,
                took: started.elapsed(),
                pid,
            }
        }
        Adapter::Smol => {
            let options = mcp_smol::Options::new().grace_period(GRACE);
            let (client, driver) =
                mcp_smol::connect_stdio_with(command, config(), options).expect("connect");
            let work = async move {
                client.connected().await.expect("connected");
                client.list_tools().await.expect("tools/list");
                let pid = client.process_id().expect("pid");
                let started = Instant::now();
                let shutdown = client.close().await;
                Closed {
                    shutdown,
                    started,
                    took: started.elapsed(),
                    pid,
                }
            };
            let (driven, closed) = future::block_on(future::zip(driver, work));
            driven.expect("a client-side close is a clean end");
            closed
        }
    }
}

/// The pid the script wrote.
fn grandchild(pid_file: &Path) -> u32 {
    let text = std::fs::read_to_string(pid_file).expect("the script wrote the pid file");
    text.trim().parse().expect("a pid")
}

/// Gone: no such process, or a zombie (reparented, waiting for its new parent).
fn is_gone(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    // `pid (comm) S ...`: the state follows the last `)`.
    stat.rsplit_once(')')
        .is_none_or(|(_, rest)| rest.trim_start().starts_with('Z'))
}

/// Waits until `pid` is gone, at most until `deadline`; otherwise kills it (not to
/// leave it behind) and fails.
fn assert_gone_by(pid: u32, deadline: Instant, what: &str) {
    while !is_gone(pid) {
        if Instant::now() >= deadline {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("{what} {pid} outlived the close");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A server that exits on stdin EOF ends at once, without a signal, and what it
/// started ends with it.
fn the_grandchild_ends_with_the_client(adapter: Adapter, test: &str) {
    let file = pid_file(test);
    let closed = connect_and_close(adapter, sh(WELL_BEHAVED, &file));
    let sleep = grandchild(&file);
    let shutdown = closed.shutdown;
    assert!(!shutdown.terminated && !shutdown.killed, "{shutdown:?}");
    assert!(shutdown.status.is_some_and(|s| s.success()), "{shutdown:?}");
    assert!(
        closed.took < GRACE,
        "{adapter:?}: close took {:?}",
        closed.took
    );
    assert!(is_gone(closed.pid), "server {} still runs", closed.pid);
    assert_gone_by(sleep, closed.started + GRACE + MARGIN, "grandchild");
}

/// A server that ignores stdin EOF and `SIGTERM` is sent `SIGTERM` half-way, killed at
/// the end of the grace period, and its grandchild with it.
fn a_stubborn_server_is_ended_within_the_grace_period(adapter: Adapter, test: &str) {
    let file = pid_file(test);
    let closed = connect_and_close(adapter, sh(STUBBORN, &file));
    let sleep = grandchild(&file);
    let shutdown = closed.shutdown;
    assert!(shutdown.terminated && shutdown.killed, "{shutdown:?}");
    assert!(
        closed.took >= GRACE,
        "{adapter:?}: close took {:?}",
        closed.took
    );
    assert!(
        closed.took < GRACE + MARGIN,
        "{adapter:?}: close took {:?}",
        closed.took
    );
    assert!(is_gone(closed.pid), "server {} still runs", closed.pid);
    assert_gone_by(sleep, closed.started + GRACE + MARGIN, "grandchild");
}

#[test]
fn the_grandchild_ends_with_the_client_blocking() {
    the_grandchild_ends_with_the_client(Adapter::Blocking, "grandchild-blocking");
}

#[test]
fn the_grandchild_ends_with_the_client_smol() {
    the_grandchild_ends_with_the_client(Adapter::Smol, "grandchild-smol");
}

#[test]
fn a_server_ignoring_eof_and_sigterm_is_ended_within_the_grace_period_blocking() {
    a_stubborn_server_is_ended_within_the_grace_period(Adapter::Blocking, "stubborn-blocking");
}

#[test]
fn a_server_ignoring_eof_and_sigterm_is_ended_within_the_grace_period_smol() {
    a_stubborn_server_is_ended_within_the_grace_period(Adapter::Smol, "stubborn-smol");
}

/// Dropping `mcp-smol`'s driver (instead of closing) kills the group at once too.
#[test]
fn dropping_the_smol_driver_ends_the_grandchild() {
    let file = pid_file("drop-smol");
    let (client, driver) =
        mcp_smol::connect_stdio(sh(WELL_BEHAVED, &file), config()).expect("connect");
    let mut driver = Box::pin(driver);
    future::block_on(future::or(
        async {
            let _ = driver.as_mut().await;
            panic!("the driver ended");
        },
        async {
            client.connected().await.expect("connected");
        },
    ));
    let pid = client.process_id().expect("pid");
    let sleep = grandchild(&file);
    let dropped = Instant::now();
    drop(driver);
    assert_gone_by(pid, dropped + MARGIN, "server");
    assert_gone_by(sleep, dropped + MARGIN, "grandchild");
}
