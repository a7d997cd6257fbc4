//! The bring-your-own-runtime example (`examples/own_runtime.rs`) against servers that
//! go wrong the ways real ones do: one that cannot be started, one that exits at once,
//! one that stops reading its input and runs on, one whose exit leaves its stdout held
//! open by a process it started. The example must say what happened, exit 1, and end
//! in bounded time (the machine's own bounds), never panic, hang or report success.
#![cfg(unix)]
// This test runs processes, as the example does: the IO side, not the library.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Far beyond what any case needs (the slowest waits the machine's 2 s drain, then the
/// example's 2 s grace period), and far below the call timeouts a hang would run into.
const BOUND: Duration = Duration::from_secs(20);

/// `target/<profile>/examples/own_runtime`, built here: a single `--test` does not build
/// the package's examples, and a stale binary would test old code.
fn example() -> PathBuf {
    static BUILT: Mutex<bool> = Mutex::new(false);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binary lives in target/<profile>/deps")
        .to_path_buf();
    if !*built {
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "-q", "-p", "mcp-proto", "--example", "own_runtime"]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        assert!(build.status().expect("run cargo").success(), "build failed");
        *built = true;
    }
    profile_dir.join("examples").join("own_runtime")
}

/// Runs the example on `argv` and returns its exit code and stdout, killing it at
/// [`BOUND`].
fn run(argv: &[&str]) -> (Option<i32>, String, Duration) {
    // Built before the clock starts: a build is not the example's time.
    let example = example();
    let started = Instant::now();
    let mut child = Command::new(example)
        .args(argv)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the example");
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if started.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    let _ = child.stdout.take().expect("piped").read_to_string(&mut out);
    (code, out, started.elapsed())
}

fn assert_failed(argv: &[&str], says: &str) {
    let (code, out, took) = run(argv);
    assert!(took < BOUND, "{argv:?} still ran after {BOUND:?}: {out}");
    assert_eq!(code, Some(1), "{argv:?}: {out}");
    assert!(out.contains("closed: "), "{argv:?} did not say why: {out}");
    assert!(out.contains(says), "{argv:?}: {out}");
}

#[test]
fn a_server_that_exits_at_once_is_reported_not_success() {
    assert_failed(&["sh", "-c", "exit 3"], "the server closed the connection");
}

#[test]
fn a_server_that_cannot_be_started_is_reported_not_a_panic() {
    assert_failed(
        &["/nonexistent/mcp-server"],
        "the server could not be started",
    );
}

#[test]
fn a_server_that_stops_reading_and_runs_on_is_given_up() {
    // It reads the era probe and closes its stdin: the `initialize` that follows the
    // probe's timeout fails as closed, and the machine waits 2 s for its output to end.
    assert_failed(
        &["sh", "-c", "read probe; exec 0<&-; exec sleep 30"],
        "the server stopped reading its input",
    );
}

#[test]
fn a_server_whose_stdout_outlives_it_is_seen_to_exit() {
    // `sleep` inherits the server's stdout and holds it open after the server exits.
    assert_failed(
        &["sh", "-c", "sleep 30 & exit 0"],
        "the server closed the connection",
    );
}
