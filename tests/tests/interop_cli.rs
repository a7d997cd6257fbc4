//! The reference CLI (`mcp`, `mcp-blocking/examples/mcp`) as a person uses it, in fresh
//! processes, against servers built with other SDKs over stdio: the TypeScript SDK v2
//! and the Python SDK 2.3 in both eras, and `@modelcontextprotocol/server-everything`
//! (legacy). Each test skips when its fixture is not installed (fails under `CI`).

use std::path::Path;
use std::process::Output;

use mcp_tests::cli_home::CliHome;
use mcp_tests::interop::{Fixture, fixture_installed, interop_dir};
use serde_json::Value;

fn home(test: &str) -> CliHome {
    CliHome::new(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-cli"),
        test,
    )
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}", stdout(o)))
}

/// `mcp add NAME --stdio …` for fixture `f` in `era` (`auto`, `legacy`, `modern`), with
/// the server's own flags (`--tasks`, …) after its mode; `None` (skip) when `f` is not
/// installed.
fn add(home: &CliHome, name: &str, f: Fixture, era: &str, flags: &[&str]) -> Option<()> {
    if !fixture_installed(f) {
        return None;
    }
    let dir = interop_dir();
    let (command, script, env): (&str, String, &[&str]) = match f {
        Fixture::TypeScript => ("node", dir.join("srv.mjs").display().to_string(), &["PATH"]),
        Fixture::Python => (
            "python3",
            dir.join("srv.py").display().to_string(),
            &["PATH", "HOME", "PYTHONPATH"],
        ),
        Fixture::Everything => (
            "node",
            dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
                .display()
                .to_string(),
            &["PATH"],
        ),
    };
    let mut args = vec!["add", name, "--stdio", command, "--era", era];
    for e in env {
        args.extend(["--env", e]);
    }
    args.extend(["--", &script, "stdio"]);
    args.extend(flags);
    let out = home.run(&args);
    assert_eq!(out.status.code(), Some(0), "add {name}: {}", stderr(&out));
    Some(())
}

/// Runs `mcp args…` in `home`, with the Python fixture's packages on `PYTHONPATH`.
fn run(home: &CliHome, args: &[&str]) -> Output {
    home.command(args)
        .env("PYTHONPATH", interop_dir().join("pydeps"))
        .output()
        .expect("run mcp")
}

/// server-everything registers `trigger-elicitation-request` only for a client that
/// declared elicitation. A script's `mcp call` declares it (forms are declared off a
/// terminal too), so `mcp tools` must list what such a call can call.
#[test]
fn tools_lists_the_tools_a_call_can_call() {
    let home = home("tools-as-call");
    if add(&home, "ev", Fixture::Everything, "auto", &[]).is_none() {
        return;
    }
    let out = run(&home, &["--format", "json", "tools", "ev"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let names: Vec<String> = json(&out)["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert!(
        names.iter().any(|n| n == "trigger-elicitation-request"),
        "tools lists fewer tools than a call sees: {names:?}"
    );
    // The count `mcp test` reports is the same listing, and so is `status --connect`'s.
    let out = run(&home, &["--format", "json", "test", "ev"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["tools"], names.len(), "{}", stdout(&out));
    let out = run(&home, &["--format", "json", "status", "ev", "--connect"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        json(&out)["servers"][0]["status"]["tools"],
        names.len(),
        "{}",
        stdout(&out)
    );
}

/// A call run as a task (2026-07-28, the tasks extension) whose task asks for input off a
/// terminal fails as a plain call that asks does: kind `input-needed`, the same words.
#[test]
fn a_task_that_needs_input_fails_as_a_call_that_does() {
    for f in [Fixture::TypeScript, Fixture::Python] {
        let home = home(&format!("task-input-{f:?}"));
        if add(&home, "srv", f, "modern", &["--tasks"]).is_none() {
            return;
        }
        let plain = run(&home, &["call", "srv", "confirm"]);
        assert_eq!(plain.status.code(), Some(1), "{f:?}: {}", stderr(&plain));
        let task = run(&home, &["call", "srv", "ask_task", "--task"]);
        assert_eq!(task.status.code(), Some(1), "{f:?}: {}", stderr(&task));
        let said = stderr(&task);
        let last: Vec<&str> = said.lines().filter(|l| !l.contains(" task ")).collect();
        assert_eq!(
            last.join("\n") + "\n",
            stderr(&plain),
            "{f:?}: the task's failure is not the call's"
        );
        let out = run(
            &home,
            &["--format", "json", "call", "srv", "ask_task", "--task"],
        );
        assert_eq!(out.status.code(), Some(1), "{f:?}: {}", stdout(&out));
        assert_eq!(
            json(&out)["error"]["kind"],
            "input-needed",
            "{}",
            stdout(&out)
        );
    }
}

/// `--auto-accept` answers a form with its defaults; a form with a required field that has
/// none cannot be answered so. The failure says so, names the field, and is the same in
/// both eras and with both SDKs (the legacy servers report the client's refusal each in
/// their own way: a JSON-RPC error, a tool error).
#[test]
fn auto_accept_without_a_default_says_so_in_both_eras() {
    let mut said = Vec::new();
    for f in [Fixture::TypeScript, Fixture::Python] {
        for era in ["modern", "legacy"] {
            let home = home(&format!("auto-accept-{f:?}-{era}"));
            if add(&home, "srv", f, era, &[]).is_none() {
                return;
            }
            let out = run(&home, &["call", "srv", "confirm", "--auto-accept"]);
            assert_eq!(out.status.code(), Some(1), "{f:?} {era}: {}", stderr(&out));
            let text = stderr(&out);
            assert!(
                text.contains("--auto-accept") && text.contains("\"ok\""),
                "{f:?} {era}: {text}"
            );
            said.push((format!("{f:?} {era}"), text));
            let out = run(
                &home,
                &[
                    "--format",
                    "json",
                    "call",
                    "srv",
                    "confirm",
                    "--auto-accept",
                ],
            );
            assert_eq!(out.status.code(), Some(1), "{f:?} {era}: {}", stdout(&out));
            assert_eq!(
                json(&out)["error"]["kind"],
                "input-needed",
                "{}",
                stdout(&out)
            );
        }
    }
    for (who, text) in &said[1..] {
        assert_eq!(text, &said[0].1, "{who} differs from {}", said[0].0);
    }
}

/// `listen --resource` on a legacy server that declared no `resources.subscribe`: the
/// subscription is not sent (the client only uses capabilities the server declared), and
/// the listen ends as a 2026-07-28 one acknowledged for nothing does (`ended failed`, exit
/// 1), saying why, instead of printing the server's "Method not found".
#[test]
fn legacy_listen_without_subscribe_capability_says_why() {
    for f in [Fixture::TypeScript, Fixture::Python] {
        let home = home(&format!("listen-no-subscribe-{f:?}"));
        if add(&home, "srv", f, "legacy", &[]).is_none() {
            return;
        }
        let out = run(&home, &["listen", "srv", "--resource", "ts://notes/1"]);
        assert_eq!(out.status.code(), Some(1), "{f:?}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.starts_with("ended failed: ") && text.contains("resources.subscribe"),
            "{f:?}: stdout {text:?}, stderr {:?}",
            stderr(&out)
        );
        let out = run(
            &home,
            &[
                "--format",
                "json",
                "listen",
                "srv",
                "--resource",
                "ts://notes/1",
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{f:?}: {}", stderr(&out));
        assert_eq!(json(&out)["event"], "ended", "{}", stdout(&out));
    }
}

/// The TypeScript SDK's server declares neither prompts nor resources and answers their
/// listings "Method not found": `mcp prompts` and `mcp resources` say it offers none
/// (exit 0, an empty list in JSON), in both eras, and `mcp prompt` / `mcp read` fail
/// with a hint naming the capability the server did not declare.
#[test]
fn listings_of_what_a_server_did_not_declare_are_empty() {
    let home = home("undeclared-listings");
    for era in ["modern", "legacy"] {
        let name = format!("ts-{era}");
        if add(&home, &name, Fixture::TypeScript, era, &[]).is_none() {
            return;
        }
        for (what, list) in [("prompts", "prompts"), ("resources", "resources")] {
            let out = run(&home, &[what, &name]);
            assert_eq!(out.status.code(), Some(0), "{era} {what}: {}", stderr(&out));
            assert_eq!(stdout(&out), format!("{name} offers no {what}\n"), "{era}");
            let out = run(&home, &["--format", "json", what, &name]);
            assert_eq!(out.status.code(), Some(0), "{era} {what}: {}", stderr(&out));
            assert_eq!(json(&out)[list], serde_json::json!([]), "{era} {what}");
        }
        for (args, capability) in [
            (vec!["prompt", &name, "greet"], "prompts"),
            (vec!["read", &name, "file:///x"], "resources"),
        ] {
            let out = run(&home, &args);
            assert_eq!(out.status.code(), Some(1), "{era} {args:?}");
            let hint = format!("the server declared no {capability} capability");
            assert!(
                stderr(&out).contains(&hint),
                "{era} {args:?}: {}",
                stderr(&out)
            );
        }
    }
}
