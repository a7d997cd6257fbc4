//! Helpers shared by the integration tests: where the example binaries are, running the
//! CLI, finding Python.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

static BUILD: Mutex<()> = Mutex::new(());

/// The path of a built example of this package (`target/<profile>/examples/<name>`),
/// building it first when `cargo test` was asked for one test target only.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test-binary>
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binary lives in target/<profile>/deps");
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "mcp-blocking", "--example", name])
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building example {name} failed");
    }
    assert!(path.exists(), "{} missing", path.display());
    path
}

/// A fresh directory under cargo's per-target temp dir.
pub fn temp_dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("mcp-blocking")
        .join(format!("{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// A canned legacy `initialize` result for request id 0, as one line.
pub const INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh-server","version":"0"}}}"#;

/// Runs the CLI with a private config file, stdin closed, `env` added to its environment.
pub fn run_cli(config: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(example("mcp"));
    cmd.arg("--config")
        .arg(config)
        .args(args)
        .env_remove("MCP_CONFIG")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run mcp")
}

/// Bytes of output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A Python to run scripted servers with, if there is one.
pub fn python() -> Option<&'static str> {
    ["python3", "python"].into_iter().find(|p| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// A config file (in a fresh directory named after `test`) with server `name`: `script`
/// run by Python over stdio, in `era`. `None` (the test is skipped) without Python.
pub fn with_python_server(test: &str, name: &str, era: &str, script: &str) -> Option<PathBuf> {
    let Some(python) = python() else {
        eprintln!("skipped: no python");
        return None;
    };
    let config = temp_dir(test).join("servers.json");
    let add = [
        "add", name, "--stdio", python, "--era", era, "--", "-c", script,
    ];
    let out = run_cli(&config, &add, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    Some(config)
}
