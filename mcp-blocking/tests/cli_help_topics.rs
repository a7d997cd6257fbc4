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
