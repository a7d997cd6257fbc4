//! `mcp help <command>` and "did you mean" for every command `docs/cli.md` lists.

mod common;

use std::process::Output;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// docs/cli.md: "`mcp help <command>` the usage of one command", for each command of
/// "Talking to a server", `tasks` and `skills` included.
#[test]
fn help_on_every_documented_command_prints_its_usage() {
    let config = common::temp_dir("help-topics").join("servers.json");
    for (command, usage) in [
        ("tools", "mcp tools <server>"),
        ("tasks", "mcp tasks <server>"),
        ("skills", "mcp skills <server>"),
        ("listen", "mcp listen <server>"),
    ] {
        let out = common::run_cli(&config, &["help", command], &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "mcp help {command}: {}",
            stderr(&out)
        );
        assert!(
            stdout(&out).contains(usage),
            "mcp help {command}: {}",
            stdout(&out)
        );
    }
}

/// docs/cli.md: "An unknown command or flag gets "did you mean …" when one is close".
#[test]
fn a_mistyped_tasks_or_skills_command_suggests_it() {
    let config = common::temp_dir("help-suggest").join("servers.json");
    for (typed, meant) in [("skils", "skills"), ("taks", "tasks")] {
        let out = common::run_cli(&config, &[typed, "x"], &[]);
        assert_eq!(out.status.code(), Some(2), "{typed}");
        assert!(
            stderr(&out).contains(&format!("did you mean {meant}?")),
            "{typed}: {}",
            stderr(&out)
        );
    }
}

/// `--version` and `--help` are global flags, which "may appear anywhere before `--`":
/// after a command they print the version, or that command's usage, and run nothing
/// (`mcp call srv tool --version` called the tool and ignored the flag; `mcp call --help`
/// printed the whole help).
#[test]
fn version_and_help_after_the_command_run_nothing() {
    let dir = common::temp_dir("help-after-command");
    let config = dir.join("servers.json");
    let marker = dir.join("started");
    let start = format!("echo > '{}'", marker.display());
    let add = ["add", "ex", "--stdio", "/bin/sh", "--", "-c", &start];
    assert_eq!(common::run_cli(&config, &add, &[]).status.code(), Some(0));
    for args in [
        &["call", "ex", "add", "--version"][..],
        &["tools", "ex", "-V"][..],
        &["tools", "nosuch", "--version"][..],
    ] {
        let out = common::run_cli(&config, args, &[]);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            stdout(&out).starts_with("mcp 0."),
            "{args:?}: {}",
            stdout(&out)
        );
    }
    for (args, usage) in [
        (&["call", "--help"][..], "mcp call <server> <tool>"),
        (&["call", "ex", "add", "-h"][..], "mcp call <server> <tool>"),
        (&["listen", "--help"][..], "mcp listen <server>"),
        (
            &["--format", "json", "tools", "-h"][..],
            "mcp tools <server>",
        ),
    ] {
        let out = common::run_cli(&config, args, &[]);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            stdout(&out).starts_with(usage),
            "{args:?}: {}",
            stdout(&out)
        );
        assert!(!stdout(&out).contains("Using a server"), "{args:?}");
    }
    assert!(!marker.exists(), "the server was started");
    // Alone, or before the command, they stay what they were.
    let out = common::run_cli(&config, &["--help"], &[]);
    assert!(stdout(&out).contains("Using a server"), "{}", stdout(&out));
    let out = common::run_cli(&config, &["help", "--help"], &[]);
    assert!(stdout(&out).contains("Using a server"), "{}", stdout(&out));
}

/// docs/cli.md, Output: "With `--format json`, stdout receives exactly one JSON
/// document": `--version` printed its text line whatever the format.
#[test]
fn version_as_json_is_one_document() {
    let config = common::temp_dir("version-json").join("servers.json");
    for args in [
        &["--format", "json", "--version"][..],
        &["--version", "--format=json"][..],
        &["list", "--format", "json", "-V"][..],
    ] {
        let out = common::run_cli(&config, args, &[]);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", stdout(&out)));
        assert!(
            doc["version"].as_str().is_some_and(|v| v.starts_with("0.")),
            "{doc}"
        );
        assert_eq!(
            doc["protocolVersions"],
            serde_json::json!(["2025-06-18", "2025-11-25", "2026-07-28"]),
            "{doc}"
        );
    }
    let out = common::run_cli(&config, &["--version"], &[]);
    assert!(stdout(&out).starts_with("mcp 0."), "{}", stdout(&out));
}
