//! The reference CLI (`examples/mcp`), run as a process: the contract in `docs/cli.md`.

mod common;

// The CLI's own unit tests (argument parsing, form validation) run as part of this test
// binary: `cargo test` builds examples without testing them, and `test = true` on the
// example would stop cargo from placing the binary at `target/<profile>/examples/mcp`.
#[path = "../examples/mcp/args.rs"]
#[allow(dead_code)]
mod args;
#[path = "../examples/mcp/config.rs"]
#[allow(dead_code)]
mod config;
#[path = "../examples/mcp/content.rs"]
#[allow(dead_code)]
mod content;
#[path = "../examples/mcp/prompt.rs"]
#[allow(dead_code)]
mod prompt;
#[path = "../examples/mcp/terminal.rs"]
#[allow(dead_code)]
mod terminal;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// Adds the stdio server `name`, run as `python -c SCRIPT ARGS…` in `era`.
fn add_python_server(
    config: &Path,
    python: &str,
    name: &str,
    era: &str,
    script: &str,
    args: &[&str],
) {
    let mut argv = vec![
        "add", name, "--stdio", python, "--era", era, "--", "-c", script,
    ];
    argv.extend_from_slice(args);
    let out = run(config, &argv);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

fn mcp() -> PathBuf {
    common::example("mcp")
}

/// Runs the CLI with a private config file, stdin closed, and a clean-ish environment.
fn run(config: &Path, args: &[&str]) -> Output {
    common::run_cli(config, args, &[])
}

fn run_with_env(config: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    common::run_cli(config, args, env)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}", stdout(o)))
}

/// A config with `ex`: the CLI's own `serve-example --stdio`.
fn config_with_example(test: &str) -> PathBuf {
    let config = common::temp_dir(test).join("servers.json");
    let exe = mcp();
    let out = run(
        &config,
        &[
            "add",
            "ex",
            "--stdio",
            exe.to_str().unwrap(),
            "--",
            "serve-example",
            "--stdio",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    config
}

#[test]
fn demo_tours_both_eras() {
    let config = common::temp_dir("demo").join("servers.json");
    let out = run(&config, &["demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "modern",
        "legacy",
        "2026-07-28",
        "2025-11-25",
        "mcp-example",
        "→  5",
        "accepted: proceed=true name=friend",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    assert!(!config.exists(), "the demo needs no config");
}

#[test]
fn demo_as_json() {
    let config = common::temp_dir("demo-json").join("servers.json");
    let out = run(&config, &["demo", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    let eras = doc["eras"].as_array().unwrap();
    assert_eq!(eras[0]["era"], "modern");
    assert_eq!(eras[0]["protocolVersion"], "2026-07-28");
    assert_eq!(eras[1]["era"], "legacy");
    assert_eq!(eras[1]["protocolVersion"], "2025-11-25");
    for era in eras {
        assert_eq!(era["add"]["result"]["content"][0]["text"], "5");
        assert_eq!(
            era["confirm"]["result"]["content"][0]["text"],
            "accepted: proceed=true name=friend"
        );
        assert_eq!(era["confirm"]["input"][0]["answer"]["action"], "accept");
    }
}

#[test]
fn record_writes_a_transcript_that_replay_plays_again() {
    let dir = common::temp_dir("record");
    let config = dir.join("servers.json");
    let file = dir.join("demo.jsonl");
    let out = run(&config, &["--record", file.to_str().unwrap(), "demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&file).unwrap();
    // One transcript per connection: the demo connects once per era.
    assert_eq!(text.matches(r#"{"transcript":"#).count(), 2, "{text}");

    let out = run(&config, &["replay", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("OK: 2 transcripts, "),
        "{}",
        stdout(&out)
    );
    let out = run(
        &config,
        &["replay", file.to_str().unwrap(), "--format", "json"],
    );
    assert_eq!(json(&out)["transcripts"], 2);

    // The server's answer to add(2, 3), changed: the first difference, exit 1.
    let tampered = dir.join("tampered.jsonl");
    let answer = text
        .lines()
        .position(|l| l.contains(r#""in":"read""#) && l.contains(r#"\"text\":\"5\""#))
        .expect("the answer to add");
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| match i == answer {
            true => l.replace(r#"\"text\":\"5\""#, r#"\"text\":\"6\""#),
            false => l.to_owned(),
        })
        .collect();
    std::fs::write(&tampered, lines.join("\n")).unwrap();
    let out = run(&config, &["replay", tampered.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains(": line ") && err.contains("expected"), "{err}");
    let out = run(
        &config,
        &["--format", "json", "replay", tampered.to_str().unwrap()],
    );
    assert_eq!(json(&out)["error"]["kind"], "replay");
}

#[test]
fn call_as_json() {
    let config = config_with_example("call-json");
    let out = run(
        &config,
        &[
            "--format", "json", "call", "ex", "add", "--arg", "a=2", "--arg", "b=3",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    assert_eq!(doc["server"], "ex");
    assert_eq!(doc["era"], "modern");
    assert_eq!(doc["protocolVersion"], "2026-07-28");
    assert_eq!(doc["result"]["content"][0]["text"], "5");

    let out = run(
        &config,
        &["call", "ex", "echo", "--args", r#"{"text":"hello"}"#],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello\n");
}

/// `--args @FILE` reads the arguments from a file, `--args -` from standard input; a
/// file that cannot be read is a usage error naming it.
#[test]
fn call_reads_its_arguments_from_a_file_or_stdin() {
    let config = config_with_example("args-from");
    let file = config.with_file_name("args.json");
    std::fs::write(&file, r#"{"text": "from a file"}"#).unwrap();
    let out = run(
        &config,
        &[
            "call",
            "ex",
            "echo",
            "--args",
            &format!("@{}", file.display()),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "from a file\n");

    let mut child = Command::new(mcp())
        .arg("--config")
        .arg(&config)
        .args(["call", "ex", "echo", "--args", "-"])
        .env_remove("MCP_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mcp");
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, br#"{"text": "from stdin"}"#).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "from stdin\n");

    let missing = config.with_file_name("missing.json");
    let out = run(
        &config,
        &[
            "call",
            "ex",
            "echo",
            "--args",
            &format!("@{}", missing.display()),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.json"), "{}", stderr(&out));
}

#[test]
fn confirm_with_auto_accept_and_without_input() {
    let config = config_with_example("confirm");
    let out = run(&config, &["call", "ex", "confirm", "--auto-accept"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "accepted: proceed=true name=friend\n");
    // Stdin is not a terminal: nobody answers; the failure says what was asked and
    // names the flag, in both eras, with the same words and status.
    let out = run(&config, &["--format", "json", "call", "ex", "confirm"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let error = &json(&out)["error"];
    assert_eq!(error["kind"], "input-needed", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("elicitation"),
        "{error}"
    );
    assert!(
        error["hint"].as_str().unwrap().contains("--auto-accept"),
        "{error}"
    );
    // Explicit --no-input declares nothing: a 2026 server says which capability it
    // missed (-32021), and the CLI names the flag all the same.
    let out = run(&config, &["call", "ex", "confirm", "--no-input"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--auto-accept"), "{}", stderr(&out));
}

#[test]
fn a_script_gets_the_same_input_failure_in_both_eras() {
    let dir = common::temp_dir("script-input");
    let config = dir.join("servers.json");
    let exe = mcp();
    for era in ["modern", "legacy"] {
        let out = run(
            &config,
            &[
                "add",
                era,
                "--stdio",
                exe.to_str().unwrap(),
                "--era",
                era,
                "--",
                "serve-example",
                "--stdio",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let mut said = Vec::new();
    for era in ["modern", "legacy"] {
        let out = run(&config, &["call", era, "confirm"]);
        assert_eq!(out.status.code(), Some(1), "{era}: {}", stderr(&out));
        said.push(stderr(&out));
    }
    assert_eq!(said[0], said[1]);
    assert!(
        said[0].contains("asked for elicitation input"),
        "{}",
        said[0]
    );
    assert!(said[0].contains("hint: pass --auto-accept"), "{}", said[0]);
}

#[test]
fn a_tool_error_exits_3() {
    let config = config_with_example("fail");
    let out = run(&config, &["call", "ex", "fail"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stdout(&out).contains("failed on purpose"));
    let out = run(&config, &["--format", "json", "call", "ex", "fail"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json(&out)["result"]["isError"], true);
}

#[test]
fn usage_errors_exit_2() {
    let config = common::temp_dir("usage").join("servers.json");
    for args in [
        &["call", "ex"][..],
        &["frobnicate"],
        &["tools", "ex", "--bogus"],
        &["tools", "nosuchserver"],
        &["add", "ex", "--url", "http://example.com/mcp"],
        &["listen", "ex"],
    ] {
        let out = run(&config, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let out = run(&config, &["--format", "json", "call", "ex"]);
    assert_eq!(out.status.code(), Some(2));
    let doc = json(&out);
    assert_eq!(doc["error"]["kind"], "usage");
    assert!(doc["error"]["code"].is_null());
    assert!(doc["error"]["httpStatus"].is_null());
}

#[test]
fn get_never_prints_environment_values() {
    let config = common::temp_dir("env").join("servers.json");
    let out = run(
        &config,
        &[
            "add",
            "sec",
            "--stdio",
            "some-server",
            "--env",
            "MCP_TEST_SECRET",
            "--era",
            "legacy",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let secret = "hunter2-very-secret-value";
    for args in [
        &["get", "sec"][..],
        &["--format", "json", "get", "sec"],
        &["list"],
        &["status"],
    ] {
        let out = run_with_env(&config, args, &[("MCP_TEST_SECRET", secret)]);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let all = stdout(&out) + &stderr(&out);
        assert!(all.contains("MCP_TEST_SECRET"), "{args:?}: {all}");
        assert!(!all.contains(secret), "{args:?} printed the value: {all}");
    }
    let stored = std::fs::read_to_string(&config).unwrap();
    assert!(!stored.contains(secret));
    let out = run(&config, &["--format", "json", "get", "sec"]);
    let doc = json(&out);
    assert_eq!(doc["env"][0], "MCP_TEST_SECRET");
    assert_eq!(doc["era"], "legacy");
}

#[test]
fn add_list_remove_and_the_other_commands() {
    let config = config_with_example("crud");
    let out = run(&config, &["tools", "ex"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("add(a, b)"), "{}", stdout(&out));

    let out = run(&config, &["test", "ex"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("ok  ex: mcp-example"),
        "{}",
        stdout(&out)
    );

    let out = run(&config, &["read", "ex", "example://readme"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("A small MCP server"));

    let out = run(&config, &["prompt", "ex", "greet", "--arg", "name=Ada"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "user: Please greet Ada warmly.\n");

    let out = run(&config, &["--format", "json", "status", "--connect"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["servers"][0]["status"]["tools"], 6);

    let out = run(&config, &["list"]);
    assert!(stdout(&out).starts_with("ex "), "{}", stdout(&out));
    let out = run(&config, &["remove", "ex"]);
    assert_eq!(out.status.code(), Some(0));
    let out = run(&config, &["remove", "ex"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&config, &["--format", "json", "list"]);
    assert_eq!(json(&out)["servers"], serde_json::json!([]));
}

#[test]
fn a_legacy_pinned_server_and_the_wire_log() {
    let config = common::temp_dir("legacy").join("servers.json");
    let exe = mcp();
    let out = run(
        &config,
        &[
            "add",
            "old",
            "--era",
            "legacy",
            "--stdio",
            exe.to_str().unwrap(),
            "--",
            "serve-example",
            "--stdio",
            "--era",
            "legacy",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(
        &config,
        &[
            "-v",
            "--format",
            "json",
            "call",
            "old",
            "add",
            "--args",
            r#"{"a":1,"b":2}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    assert_eq!(doc["era"], "legacy");
    assert_eq!(doc["protocolVersion"], "2025-11-25");
    let log = stderr(&out);
    assert!(
        log.contains("→ {") && log.contains("\"initialize\""),
        "{log}"
    );
    assert!(log.contains("← {"), "{log}");
}

/// Characters a terminal could act on: controls but `\n` and `\t`, and the
/// bidirectional overrides.
fn drives_a_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c)
}

#[test]
fn server_text_is_neutralised_in_text_and_exact_in_json() {
    let config = config_with_example("escapes");
    let evil = "red \u{1b}[31mtext\u{1b}[0m, title \u{1b}]0;pwned\u{7}, csi \u{9b}2J, \
                rlo \u{202e}cba, over\rwritten, tab\tand\nnewline\r\n";
    let args = serde_json::json!({ "text": evil }).to_string();
    let out = run(&config, &["call", "ex", "echo", "--args", &args]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "red ^[[31mtext^[[0m, title ^[]0;pwned^G, csi \\u{9b}2J, \
         rlo \\u{202e}cba, over^Mwritten, tab\tand\nnewline\r\n\n"
    );

    // JSON: the value exactly as the server sent it, escaped as JSON.
    let out = run(
        &config,
        &["--format", "json", "call", "ex", "echo", "--args", &args],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["result"]["content"][0]["text"], evil);
    assert!(
        !stdout(&out).contains(drives_a_terminal),
        "{}",
        stdout(&out)
    );

    // The wire log shows the server's lines the same way.
    let out = run(&config, &["-v", "call", "ex", "echo", "--args", &args]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(log.contains("\\u{9b}2J"), "{log}");
    assert!(!log.contains(drives_a_terminal), "{log}");

    // An error message carrying server text (the unknown tool's name, echoed back).
    let out = run(&config, &["call", "ex", "no\u{1b}]0;such\u{7}tool"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(message.contains("no^[]0;such^Gtool"), "{message}");
    assert!(!message.contains(drives_a_terminal), "{message}");
}

/// A long error message from a server is cut in text, whole in JSON.
#[test]
fn a_long_server_error_is_cut_in_text_and_whole_in_json() {
    let Some(config) = legacy_python_server("long-error", "c", ODD_SERVER) else {
        return;
    };
    let long = format!("tool{}", "x".repeat(10_000));
    let out = run(&config, &["call", "c", "long"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let first = stderr(&out).lines().next().unwrap_or_default().to_owned();
    assert!(
        first.starts_with("mcp: ") && first.ends_with("x…"),
        "{first}"
    );
    assert_eq!(first.chars().count(), "mcp: ".len() + 2000 + 1);
    let out = run(&config, &["--format", "json", "call", "c", "long"]);
    assert_eq!(out.status.code(), Some(1));
    let message = json(&out)["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains(&long), "{}", message.len());
}

#[cfg(unix)]
#[test]
fn a_server_stderr_is_neutralised() {
    let config = common::temp_dir("stderr-escapes").join("servers.json");
    let script = r#"printf 'boom\033]0;pwned\007 \033[2J\n' >&2; exit 1"#;
    let out = run(
        &config,
        &["add", "noisy", "--stdio", "sh", "--", "-c", script],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(&config, &["-v", "tools", "noisy"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("  | boom^[]0;pwned^G ^[[2J"), "{err}");
    assert!(!err.contains(drives_a_terminal), "{err}");
}

#[test]
fn a_server_that_cannot_start_exits_1() {
    let config = common::temp_dir("nostart").join("servers.json");
    run(
        &config,
        &["add", "bad", "--stdio", "surely-no-such-mcp-server"],
    );
    let out = run(&config, &["--format", "json", "tools", "bad"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["kind"], "spawn");
}

#[test]
fn complete_suggests_values_for_a_prompt_and_a_template() {
    let config = config_with_example("complete");
    let out = run(
        &config,
        &["complete", "ex", "--prompt", "greet", "name", "a"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Ada\nAlan\n");
    let out = run(
        &config,
        &[
            "--format",
            "json",
            "complete",
            "ex",
            "--resource-template",
            "example://greeting/{name}",
            "name",
            "G",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    assert_eq!(
        doc["result"]["completion"]["values"],
        serde_json::json!(["Grace"])
    );
    // Exactly one of --prompt and --resource-template.
    for args in [
        &["complete", "ex", "name", "a"][..],
        &[
            "complete",
            "ex",
            "--prompt",
            "greet",
            "--resource-template",
            "x",
            "name",
            "a",
        ],
        &["complete", "ex", "--prompt", "greet", "name"],
    ] {
        let out = run(&config, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn resources_shows_the_templates() {
    let config = config_with_example("templates");
    let out = run(&config, &["resources", "ex"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("example://readme"), "{text}");
    assert!(text.contains("example://greeting/{name}"), "{text}");
    let out = run(&config, &["--format", "json", "resources", "ex"]);
    let doc = json(&out);
    assert_eq!(doc["resourceTemplates"][0]["name"], "greeting");
}

#[test]
fn typed_content_is_summarised_and_saved_without_overwriting() {
    let config = config_with_example("media");
    let out = run(&config, &["call", "ex", "media"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for expected in [
        "every kind of block",
        "[image image/png, 70 bytes]",
        "[audio audio/wav, 16 bytes]",
        "[resource link example://readme (readme, text/plain)]",
        "embedded notes",
        "[blob example://data/blob.bin application/octet-stream, 5 bytes]",
        r#""x-example-sticker""#,
    ] {
        assert!(text.contains(expected), "{expected} missing from {text}");
    }

    let dir = common::temp_dir("media-save").join("out");
    let dir_arg = dir.to_str().unwrap();
    let out = run(&config, &["--save-content", dir_arg, "call", "ex", "media"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let png = std::fs::read(dir.join("content-1.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    assert_eq!(std::fs::read(dir.join("content-2.wav")).unwrap().len(), 16);
    assert_eq!(
        std::fs::read(dir.join("blob.bin")).unwrap(),
        [0, 1, 2, 3, 4]
    );
    assert!(stdout(&out).contains("saved to"), "{}", stdout(&out));

    // Again, with a file and a symlink in the way: neither is touched, new names are used.
    std::fs::write(dir.join("blob.bin"), b"mine").unwrap();
    #[cfg(unix)]
    {
        let outside = common::temp_dir("media-outside").join("target");
        std::fs::remove_file(dir.join("content-2.wav")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("content-2.wav")).unwrap();
        let out = run(
            &config,
            &[
                "--format",
                "json",
                "--save-content",
                dir_arg,
                "call",
                "ex",
                "media",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(!outside.exists(), "wrote through a symlink");
        // The JSON document is the server's result, exactly.
        let doc = json(&out);
        assert_eq!(doc["result"]["content"].as_array().unwrap().len(), 7);
        assert_eq!(doc["result"]["content"][6]["sticker"]["shape"], "star");
        assert!(stderr(&out).contains("saved"), "{}", stderr(&out));
    }
    assert_eq!(std::fs::read(dir.join("blob.bin")).unwrap(), b"mine");
    assert!(dir.join("blob-1.bin").exists() || !cfg!(unix));
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
}

/// A stdio server for `mcp listen` in either era: it acknowledges a
/// `subscriptions/listen` and sends a tools list change and an update of the first
/// resource asked for (a listen for `file:///silent` is never acknowledged); a
/// `resources/subscribe` gets `{}` and an update of its URI.
const LISTEN_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"],
              "capabilities": {"tools": {"listChanged": True}, "resources": {"subscribe": True}}}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"resources": {"subscribe": True}},
              "serverInfo": {"name": "listen", "version": "1"}}})
    elif method == "resources/subscribe":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
        send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
              "params": {"uri": m["params"]["uri"]}})
    elif method == "subscriptions/listen":
        wanted = m["params"]["notifications"]
        if "file:///silent" in wanted.get("resourceSubscriptions", []):
            continue
        meta = {"io.modelcontextprotocol/subscriptionId": mid}
        granted = {"toolsListChanged": True,
                   "resourceSubscriptions": wanted.get("resourceSubscriptions", [])[:1]}
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": meta, "notifications": granted}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
              "params": {"_meta": meta}})
        for uri in granted["resourceSubscriptions"]:
            send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                  "params": {"_meta": meta, "uri": uri}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// A legacy server whose tool runs as a task that fails, and whose `tasks/result` then
/// gives a result that does not say so (no `isError`).
const FAILING_TASK_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
task = {"taskId": "T", "createdAt": "2025-12-01T09:00:00Z",
        "lastUpdatedAt": "2025-12-01T09:00:00Z", "ttl": 60000, "pollInterval": 100}
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
              "serverInfo": {"name": "failing", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": "t",
              "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": dict(task, status="working")}})
    elif method == "tasks/get":
        send({"jsonrpc": "2.0", "id": mid, "result": dict(task, status="failed",
              statusMessage="boom")})
    elif method == "tasks/result":
        send({"jsonrpc": "2.0", "id": mid,
              "result": {"content": [{"type": "text", "text": "half done"}]}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// A task that ended `failed` is a failed call (exit 3), even when the result it ends with
/// does not say `isError`.
#[test]
fn a_failed_task_exits_3_whatever_its_result_says() {
    let Some(config) = legacy_python_server("failing-task", "failing", FAILING_TASK_SERVER) else {
        return;
    };
    let out = run(&config, &["call", "failing", "t", "--task"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(stdout(&out), "half done\n");
    let err = stderr(&out);
    assert!(err.contains("task T now failed: boom"), "{err}");
}

/// Completes with a value holding a newline; its tool `pic` returns an image block and
/// one whose data is not base64.
const ODD_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"completions": {}, "prompts": {}, "tools": {}},
              "serverInfo": {"name": "completing", "version": "1"}}})
    elif method == "completion/complete":
        send({"jsonrpc": "2.0", "id": mid, "result": {"completion": {
              "values": ["v1", "v2\nforged"], "total": 2}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": "pic",
              "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call" and m["params"]["name"] == "long":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32000,
              "message": "tool" + "x" * 10000}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [
              {"type": "image", "mimeType": "image/png", "data": "AAECAw=="},
              {"type": "image", "mimeType": "image/png", "data": "not base64!"}]}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// A server whose answers are small as text and huge once read into values: a million
/// `{"":0}` objects (7 MB) as a tool's structured output, inside a listed resource and
/// inside a listed tool, whose schema also names 50,000 required properties (sorting them
/// by their place in `required` was quadratic).
#[cfg(unix)]
const BLOATED_SERVER: &str = r#"
import json, sys
blob = "[" + ",".join(['{"":0}'] * 1000000) + "]"
names = ",".join('"p%d"' % k for k in range(50000))
def send(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), json.dumps(m.get("id"))
    if method == "initialize":
        send(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {
             "protocolVersion": "2025-11-25", "capabilities": {"tools": {}, "resources": {}},
             "serverInfo": {"name": "bloated", "version": "1"}}}))
    elif method == "tools/call":
        send('{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":{"z":%s,"a":1}}}' % (mid, blob))
    elif method == "resources/list":
        send('{"jsonrpc":"2.0","id":%s,"result":{"resources":[{"uri":"a://b","name":"b","junk":%s}]}}' % (mid, blob))
    elif method == "tools/list":
        send('{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","x":%s,"inputSchema":{"type":"object","required":[%s],"properties":{%s}}}]}}'
             % (mid, blob, names, names.replace('",', '":0,') + ":0"))
    elif m.get("id") is not None and method is not None:
        send('{"jsonrpc":"2.0","id":%s,"result":{}}' % mid)
"#;

/// What a server sends is shown without being read into values: each of these took
/// hundreds of megabytes (and `tools --format json` read the listing whole) (a million small objects read as a `serde_json::Value` take
/// ~700 MB), and now runs within 256 MiB of data segment (`ulimit -d`), as an abort of
/// the old code showed. Structured output keeps the server's key order.
#[cfg(unix)]
#[test]
fn answers_huge_once_parsed_are_shown_within_bounded_memory() {
    let Some(config) = legacy_python_server("bloated", "b", BLOATED_SERVER) else {
        return;
    };
    let bounded = |args: &[&str]| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(r#"ulimit -d 262144 && exec "$0" "$@""#)
            .arg(mcp())
            .arg("--config")
            .arg(&config)
            .args(args)
            .env_remove("MCP_CONFIG")
            .stdin(Stdio::null())
            .output()
            .expect("run mcp");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let text = bounded(&["call", "b", "t"]);
    assert!(
        text.starts_with("{\n  \"z\": [\n    {\n      \"\": 0\n    },"),
        "{}",
        &text[..80]
    );
    assert!(
        text.ends_with("    }\n  ],\n  \"a\": 1\n}\n"),
        "{}",
        &text[text.len() - 80..]
    );
    assert_eq!(text.matches("\"\": 0").count(), 1_000_000);
    assert_eq!(bounded(&["resources", "b"]), "a://b  b\n");
    // Required first, in their order; at most 64 named; the table cuts the line.
    assert!(bounded(&["tools", "b"]).starts_with("t(p0, p1, p2, p3,"));
    // JSON output writes the listing as it came.
    let listed = bounded(&["--format", "json", "tools", "b"]);
    assert!(
        listed.contains("\"tools\": [\n    {\"name\":\"t\",\"x\":[{\"\":0},"),
        "{}",
        &listed[..200]
    );
    assert_eq!(listed.matches("{\"\":0}").count(), 1_000_000);
}

/// Completion values are one per line: one with a newline cannot pass for two.
#[test]
fn a_completion_value_cannot_forge_another() {
    let Some(config) = legacy_python_server("completing", "c", ODD_SERVER) else {
        return;
    };
    let out = run(&config, &["complete", "c", "--prompt", "p", "a", "x"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "v1\nv2^Jforged\n");
}

/// A block `--save-content` could not write (its data is not base64) is named on its
/// line, and the command exits 1: it did not do what it was asked (it exited 0).
#[test]
fn a_block_that_cannot_be_saved_fails_the_command() {
    let Some(config) = legacy_python_server("unsaved", "c", ODD_SERVER) else {
        return;
    };
    let dir = config.parent().unwrap().to_owned();
    let saved = dir.join("saved");
    let saved = saved.to_str().unwrap();
    let out = run(&config, &["--save-content", saved, "call", "c", "pic"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(", saved to "), "{text}");
    assert!(text.contains("not saved: invalid base64"), "{text}");
    assert!(
        stderr(&out).contains("1 block(s) could not be saved"),
        "{}",
        stderr(&out)
    );
    // With --format json there is no block line: the reason is on stderr too.
    let json_args = [
        "--format",
        "json",
        "--save-content",
        saved,
        "call",
        "c",
        "pic",
    ];
    let out = run(&config, &json_args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("invalid base64"), "{}", stderr(&out));
    // Without --save-content nothing was asked, and nothing failed.
    assert_eq!(run(&config, &["call", "c", "pic"]).status.code(), Some(0));
}

#[test]
fn listen_prints_change_notifications_in_both_eras() {
    let Some(python) = common::python() else {
        eprintln!("skipped: no python");
        return;
    };
    let config = common::temp_dir("listen").join("servers.json");
    for (name, era) in [("new", "modern"), ("old", "legacy")] {
        add_python_server(&config, python, name, era, LISTEN_SERVER, &[]);
    }

    let out = run(
        &config,
        &[
            "--format",
            "json",
            "listen",
            "new",
            "--list-changed",
            "--resource",
            "file:///a",
            "--resource",
            "file:///b",
            "--max-events",
            "2",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document per line"))
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["event"], "acknowledged");
    assert_eq!(
        lines[0]["refused"],
        serde_json::json!({"promptsListChanged":true,"resourcesListChanged":true,
            "resourceSubscriptions":["file:///b"]})
    );
    assert_eq!(lines[1]["method"], "notifications/tools/list_changed");
    assert_eq!(lines[2]["method"], "notifications/resources/updated");
    assert_eq!(lines[2]["params"]["uri"], "file:///a");

    // Never acknowledged: the listen ends at the timeout, and that is a failure.
    let out = run(
        &config,
        &[
            "listen",
            "new",
            "--resource",
            "file:///silent",
            "--timeout",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "ended failed: no answer within 1s (the call's timeout: CallRequest::timeout, else Limits::request_timeout)\n"
    );

    let out = run(
        &config,
        &[
            "listen",
            "old",
            "--resource",
            "file:///c",
            "--max-events",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "resources/updated file:///c\n");

    let out = run(
        &config,
        &["listen", "old", "--max-events", "0", "--list-changed"],
    );
    assert_eq!(out.status.code(), Some(2));
}

/// A 2026/2025 server whose `slow` tool never answers; it appends `called` and then
/// `cancelled <id>` for each `notifications/cancelled` to the file named by its
/// argument.
#[cfg(unix)]
const SLOW_SERVER: &str = r#"
import json, sys
log = sys.argv[1]
def note(t):
    with open(log, "a") as f:
        f.write(t + "\n")
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "slow", "version": "1"}}})
    elif method == "tools/call":
        note("called")
    elif method == "notifications/cancelled":
        note("cancelled %s" % m["params"]["requestId"])
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

#[cfg(unix)]
#[test]
fn ctrl_c_cancels_the_call_at_the_server_and_exits_130() {
    let Some(python) = common::python() else {
        eprintln!("skipped: no python");
        return;
    };
    let dir = common::temp_dir("ctrl-c");
    let config = dir.join("servers.json");
    for era in ["modern", "legacy"] {
        let log = dir.join(format!("{era}.log"));
        add_python_server(
            &config,
            python,
            era,
            era,
            SLOW_SERVER,
            &[log.to_str().unwrap()],
        );
        let mut child = Command::new(mcp())
            .arg("--config")
            .arg(&config)
            .args(["call", era, "slow"])
            .env_remove("MCP_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run mcp");
        // Wait until the call reached the server, then press Ctrl-C.
        let waited = std::time::Instant::now();
        while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("called")) {
            assert!(
                waited.elapsed() < std::time::Duration::from_secs(20),
                "{era}: no call"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let kill = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(kill.success());
        let pressed = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            assert!(
                pressed.elapsed() < std::time::Duration::from_secs(10),
                "{era}: mcp did not exit after Ctrl-C"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let out = child.wait_with_output().expect("output");
        assert_eq!(status.code(), Some(130), "{era}: {}", stderr(&out));
        assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
        let seen = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            seen.lines().filter(|l| l.starts_with("cancelled")).count(),
            1,
            "{era}: the server was not told once: {seen}"
        );
    }
}

/// A stdio server with tasks in either era (see tests/tests/tasks_adapters.rs): every
/// task-augmented (2025) or extension-declaring (2026) `tools/call` becomes a task that
/// completes on its second poll; a finished task `bg-1` is there from the start and its
/// status is announced after `notifications/initialized`; a 2026 listen for task ids
/// gets its acknowledgement and one `notifications/tasks` per id.
const TASKS_SERVER: &str = r#"
import json, sys
EXT = "io.modelcontextprotocol/tasks"
tasks = {"bg-1": {"status": "completed", "polls": 0, "name": "bg"}}
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
def record(tid, modern):
    r = {"taskId": tid, "status": tasks[tid]["status"], "createdAt": "2026-01-01T00:00:00Z",
         "lastUpdatedAt": "2026-01-01T00:00:00Z"}
    r.update({"ttlMs": 60000, "pollIntervalMs": 50} if modern else {"ttl": 60000, "pollInterval": 50})
    return r
for line in sys.stdin:
    m = json.loads(line)
    method, mid, p = m.get("method"), m.get("id"), m.get("params", {})
    meta = p.get("_meta", {})
    modern = "io.modelcontextprotocol/protocolVersion" in meta
    declared = EXT in meta.get("io.modelcontextprotocol/clientCapabilities", {}).get("extensions", {})
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "extensions": {EXT: {}}}}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
              "serverInfo": {"name": "tasks", "version": "1"}}})
    elif method == "notifications/initialized":
        send({"jsonrpc": "2.0", "method": "notifications/tasks/status",
              "params": dict(record("bg-1", False), status="working", statusMessage="warming up")})
    elif method == "tools/call" and ((modern and declared) or (not modern and "task" in p)):
        tid = "%s-%d" % (p["name"], len(tasks) - 1)
        tasks[tid] = {"status": "working", "polls": 0, "name": p["name"]}
        r = record(tid, modern)
        send({"jsonrpc": "2.0", "id": mid, "result": dict(r, resultType="task") if modern else {"task": r}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "plain"}]}})
    elif method in ("tasks/get", "tasks/result"):
        t = tasks[p["taskId"]]
        result = {"content": [{"type": "text", "text": "done " + t["name"]}]}
        if method == "tasks/result":
            send({"jsonrpc": "2.0", "id": mid, "result": result})
            continue
        t["polls"] += 1
        if t["polls"] >= 2:
            t["status"] = "completed"
        r = record(p["taskId"], modern)
        if modern:
            r["resultType"] = "complete"
            if t["status"] == "completed":
                r["result"] = result
        send({"jsonrpc": "2.0", "id": mid, "result": r})
    elif method == "tasks/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tasks": [record(t, False) for t in tasks]}})
    elif method == "subscriptions/listen":
        wanted = p["notifications"]
        lmeta = {"io.modelcontextprotocol/subscriptionId": mid}
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": lmeta, "notifications": wanted}})
        for tid in wanted.get("taskIds", []):
            send({"jsonrpc": "2.0", "method": "notifications/tasks",
                  "params": {"_meta": lmeta, "taskId": tid, "status": "working", "createdAt": "x",
                             "lastUpdatedAt": "y", "ttlMs": None}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

#[test]
fn tasks_from_the_command_line_in_both_eras() {
    let Some(python) = common::python() else {
        eprintln!("skipped: no python");
        return;
    };
    let config = common::temp_dir("tasks").join("servers.json");
    for (name, era) in [("new", "modern"), ("old", "legacy")] {
        add_python_server(&config, python, name, era, TASKS_SERVER, &[]);
    }

    // mcp call --task: the status on stderr, the result as for any call.
    let out = run(
        &config,
        &["call", "old", "build", "--task", "--task-ttl", "60"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "done build\n");
    assert!(
        stderr(&out).contains("task build-0 created working"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("task build-0 now completed"));
    let out = run(
        &config,
        &["--format", "json", "call", "new", "build", "--task"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    assert_eq!(doc["result"]["content"][0]["text"], "done build");
    assert_eq!(doc["era"], "modern");
    // Without --task the same tool is a plain call.
    let out = run(&config, &["call", "old", "build"]);
    assert_eq!(stdout(&out), "plain\n");

    // mcp tasks: tasks/list in 2025-11-25, none in the extension.
    let out = run(&config, &["tasks", "old"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("bg-1"), "{}", stdout(&out));
    assert!(stdout(&out).contains("completed"));
    let out = run(&config, &["--format", "json", "tasks", "old"]);
    assert_eq!(json(&out)["tasks"][0]["taskId"], "bg-1");
    let out = run(&config, &["tasks", "new"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));

    // mcp listen --tasks: every status notification (2025), the named tasks (2026).
    let out = run(&config, &["listen", "old", "--tasks", "--max-events", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "task bg-1 working: warming up\n");
    let out = run(
        &config,
        &[
            "--format",
            "json",
            "listen",
            "new",
            "--tasks",
            "--task",
            "T9",
            "--max-events",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document per line"))
        .collect();
    assert_eq!(lines[0]["event"], "acknowledged");
    assert_eq!(lines[0]["detail"]["taskIds"], serde_json::json!(["T9"]));
    assert_eq!(lines[1]["method"], "notifications/tasks");
    assert_eq!(lines[1]["params"]["taskId"], "T9");

    // Usage errors.
    for args in [
        &["listen", "new", "--tasks"][..],
        &["listen", "new", "--task", "T9"],
        &["call", "old", "build", "--task-ttl", "5"],
    ] {
        let out = run(&config, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

/// A 2025-11-25 stdio server whose every task stays `working`, with a `ttl` of 300 ms.
const UNENDING_TASK_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
task = {"taskId": "t-1", "status": "working", "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 300, "pollInterval": 50}
for line in sys.stdin:
    m = json.loads(line)
    method, mid, p = m.get("method"), m.get("id"), m.get("params", {})
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}},
              "serverInfo": {"name": "unending", "version": "1"}}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": task}})
    elif method == "tasks/get":
        send({"jsonrpc": "2.0", "id": mid, "result": task})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// A task that outlives its `ttl` is a timeout, but not one `--timeout` sets: the CLI
/// does not point at that flag.
#[test]
fn a_task_past_its_ttl_is_not_blamed_on_the_timeout_flag() {
    let Some(python) = common::python() else {
        eprintln!("skipped: no python");
        return;
    };
    let config = common::temp_dir("task-ttl").join("servers.json");
    add_python_server(&config, python, "u", "legacy", UNENDING_TASK_SERVER, &[]);
    let out = run(&config, &["call", "u", "build", "--task"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("the task did not end within its ttl of 300ms"),
        "{err}"
    );
    assert!(!err.contains("--timeout"), "{err}");
    let out = run(
        &config,
        &["--format", "json", "call", "u", "build", "--task"],
    );
    assert_eq!(json(&out)["error"]["kind"], "timeout", "{}", stdout(&out));
}

#[test]
fn call_task_against_the_example_server_with_tasks_in_both_eras() {
    let config = common::temp_dir("example-tasks").join("servers.json");
    let exe = mcp();
    for (name, era) in [("new", "modern"), ("old", "legacy")] {
        let out = run(
            &config,
            &[
                "add",
                name,
                "--stdio",
                exe.to_str().unwrap(),
                "--era",
                era,
                "--",
                "serve-example",
                "--stdio",
                "--tasks",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let out = run(
            &config,
            &["call", name, "slow", "--arg", "text=later", "--task"],
        );
        assert_eq!(out.status.code(), Some(0), "{era}: {}", stderr(&out));
        assert_eq!(stdout(&out), "later\n");
        // The serve functions seed the task ids: 128 bits in hex, not `task-1`.
        let err = stderr(&out);
        let id = err
            .split("mcp: task ")
            .nth(1)
            .and_then(|rest| rest.find(" created working").map(|i| &rest[..i]))
            .unwrap_or_else(|| panic!("{era}: {err}"));
        assert!(
            id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{era}: {err}"
        );
        assert!(
            err.contains(&format!("mcp: task {id} now completed")),
            "{err}"
        );
    }
    let out = run(&config, &["tasks", "old"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "no tasks\n", "a fresh server process");
}

#[test]
fn skills_lists_loads_and_reads_verified_files() {
    let config = config_with_example("skills");
    let out = run(&config, &["skills", "ex"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("greeting  skill://greeting/SKILL.md  2 files  Greet"),
        "{}",
        stdout(&out)
    );
    let out = run(&config, &["skills", "ex", "greeting"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        mcp_blocking::mcp_proto::server::example::GREETING_SKILL
    );
    let out = run(
        &config,
        &[
            "--format",
            "json",
            "skills",
            "ex",
            "skill://greeting/SKILL.md",
            "--file",
            "templates/formal.md",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    assert_eq!(doc["skill"]["name"], "greeting");
    assert_eq!(
        doc["file"]["text"],
        mcp_blocking::mcp_proto::server::example::GREETING_FORMAL
    );
    // A file the entry does not list is refused before it is read.
    let out = run(
        &config,
        &[
            "--format",
            "json",
            "skills",
            "ex",
            "greeting",
            "--file",
            "templates/x.md",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["kind"], "skill-not-listed");
    let out = run(&config, &["skills", "ex", "greeting", "--dir", "."]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "SKILL.md    skill://greeting/SKILL.md\ntemplates/  skill://greeting/templates\n"
    );
    let out = run(
        &config,
        &[
            "--format",
            "json",
            "skills",
            "ex",
            "greeting",
            "--dir",
            "templates",
        ],
    );
    let doc = json(&out);
    assert_eq!(doc["source"], "server");
    assert_eq!(doc["children"][0]["name"], "formal.md");
    assert_eq!(doc["children"][0]["inEntry"], true);
    let out = run(&config, &["skills", "ex", "nobody"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = run(&config, &["skills", "ex", "--file", "x"]);
    assert_eq!(out.status.code(), Some(2));
}

// ----- guidance: every mistake gets a next step ---------------------------------------

/// Writes an executable shell script.
#[cfg(unix)]
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[cfg(unix)]
#[test]
fn a_launcher_without_path_gets_the_hint_and_env_path_fixes_it() {
    let dir = common::temp_dir("launcher");
    let config = dir.join("servers.json");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // `npx` here finds the real server through PATH, as the real one does.
    std::os::unix::fs::symlink(mcp(), bin.join("mcp-fixture")).unwrap();
    script(&bin.join("npx"), "exec mcp-fixture \"$@\"");
    let npx = bin.join("npx");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = [("PATH", path.as_str())];
    let add = |extra: &[&str]| {
        let mut args = vec!["add", "ev", "--stdio", npx.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "serve-example", "--stdio"]);
        run_with_env(&config, &args, &env)
    };
    let out = add(&[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("add `--env PATH --env HOME`"),
        "{}",
        stderr(&out)
    );
    let out = run_with_env(&config, &["tools", "ev"], &env);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("(it exited with status 127)"), "{err}");
    assert!(err.contains("status 127: a command was not found"), "{err}");
    assert!(err.contains("mcp-fixture: not found"), "{err}");
    assert!(
        err.contains("hint: npx finds the server through PATH"),
        "{err}"
    );
    // With PATH passed it works, and nothing warns.
    let out = add(&["--env", "PATH"]);
    assert!(!stderr(&out).contains("--env PATH"), "{}", stderr(&out));
    let out = run_with_env(&config, &["tools", "ev"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("echo"));
}

#[cfg(unix)]
#[test]
fn a_server_that_exits_shows_its_status_and_last_stderr_lines() {
    let dir = common::temp_dir("exits");
    let config = dir.join("servers.json");
    let server = dir.join("broken-server");
    script(
        &server,
        "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo \"line $i\" >&2; done\nprintf '\\033[31mred\\033[0m\\n' >&2\nexit 3",
    );
    let out = run(&config, &["add", "b", "--stdio", server.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let out = run(&config, &["tools", "b"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(
            "could not connect: the server closed the connection (it exited with status 3)"
        ),
        "{err}"
    );
    assert_eq!(err.matches("status 3").count(), 1, "said once: {err}");
    assert!(err.contains("red") && !err.contains('\u{1b}'), "{err}");
    // The last lines only.
    assert!(
        err.contains("  | line 12") && !err.contains("  | line 2\n"),
        "{err}"
    );
    assert!(!err.contains("hint:"), "not a launcher: {err}");
    let out = run(&config, &["--format", "json", "tools", "b"]);
    assert_eq!(json(&out)["error"]["exitStatus"], 3);
}

/// Era auto starts a server that exits on the probe once more (decision 104): what the
/// user is shown is the run that failed to connect, its stderr and status once.
#[cfg(unix)]
#[test]
fn a_server_that_exits_at_once_in_era_auto_is_reported_once() {
    let dir = common::temp_dir("exits-at-once");
    let config = dir.join("servers.json");
    let server = dir.join("bad-config");
    script(&server, "echo \"fatal: bad config\" >&2\nexit 1");
    let out = run(&config, &["add", "b", "--stdio", server.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let out = run(&config, &["tools", "b"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.matches("fatal: bad config").count(), 1, "{err}");
    assert_eq!(err.matches("status 1").count(), 1, "{err}");
    let out = run(&config, &["--format", "json", "tools", "b"]);
    let error = &json(&out)["error"];
    assert_eq!(error["stderr"], "fatal: bad config", "{error}");
    assert_eq!(error["exitStatus"], 1, "{error}");
}

/// A silent HTTP server is given up at `--timeout`, not at the era probe's short window
/// (over HTTP silence is an outage, not a legacy server), and the CLI says which flag sets
/// that limit.
#[test]
fn a_silent_http_server_is_given_up_at_the_timeout_given() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    // Accepts (the backlog does) and never answers.
    let dir = common::temp_dir("silent-http");
    let config = dir.join("servers.json");
    let out = run(&config, &["--timeout", "1", "tools", &url]);
    drop(listener);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("1s (Limits::connect_timeout)"), "{err}");
    assert!(err.contains("(the limit is --timeout SECS)"), "{err}");
    assert!(!err.contains("probe_timeout"), "{err}");
}

/// A timeout says which limit ran out and its value, and the CLI says how to set it.
#[cfg(unix)]
#[test]
fn a_timeout_names_its_limit_and_the_flag_that_sets_it() {
    let dir = common::temp_dir("silent-server");
    let config = dir.join("servers.json");
    let server = dir.join("silent");
    script(&server, "while read line; do :; done");
    let out = run(
        &config,
        &[
            "add",
            "s",
            "--stdio",
            server.to_str().unwrap(),
            "--era",
            "legacy",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let out = run(&config, &["--timeout", "1", "tools", "s"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    // `--timeout` sets both the handshake's limit and connecting's as a whole; the
    // latter started first, so it runs out first.
    assert!(
        err.contains("connecting did not finish within 1s (Limits::connect_timeout)"),
        "{err}"
    );
    assert!(err.contains("(the limit is --timeout SECS)"), "{err}");
}

/// A server that prints its log lines to stdout instead of stderr: the failure quotes
/// the first such line (escaped), not just the timeout it led to.
#[cfg(unix)]
#[test]
fn a_log_line_on_stdout_is_quoted_when_connecting_fails() {
    let dir = common::temp_dir("stdout-log");
    let config = dir.join("servers.json");
    let server = dir.join("chatty");
    script(
        &server,
        "read line\nprintf 'Server v1.2 starting on stdio...\\033[2J\\n'\nwhile read line; do :; done",
    );
    let path = server.to_str().unwrap();
    let out = run(&config, &["add", "s", "--stdio", path, "--era", "legacy"]);
    assert_eq!(out.status.code(), Some(0));
    let out = run(&config, &["--timeout", "1", "tools", "s"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("connecting did not finish within 1s (Limits::connect_timeout)"),
        "{err}"
    );
    assert!(
        err.contains(
            "the server wrote a line to stdout that is not JSON (stdout is for JSON-RPC \
             messages only; a server logs to stderr): \"Server v1.2 starting on stdio...\\u{1b}[2J\""
        ),
        "{err}"
    );
    assert!(!err.contains(drives_a_terminal), "{err}");
    let out = run(
        &config,
        &["--format", "json", "--timeout", "1", "tools", "s"],
    );
    let error = &json(&out)["error"];
    assert_eq!(error["kind"], "timeout", "{error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains(r#"stdio...\u{1b}[2J""#), "{message}");
}

/// A legacy server that connects, then answers a `tools/call` with a log line on stdout
/// in place of its answer, and nothing more.
const LOGS_INSTEAD_OF_ANSWERING: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "chatty", "version": "1"}}})
    elif method in ("tools/call", "tools/list", "resources/list"):
        sys.stdout.write("handling " + method + " \x1b[2J...\n")
        sys.stdout.flush()
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// A request that times out once connected, on a stdio server that wrote a line to
/// stdout that is no message (its answer may be lost in it): the failure quotes that line
/// (escaped), as a failed connect does, and still names the limit; for `call` and alike
/// for every other command that talks to the server (`tools`, `resources`, and the probe
/// of `status --connect`, which prints the failure in its table).
#[test]
fn a_log_line_on_stdout_is_quoted_when_a_call_times_out() {
    let Some(python) = common::python() else {
        eprintln!("skipped: no python");
        return;
    };
    let config = common::temp_dir("stdout-log-call").join("servers.json");
    // `--timeout` bounds the connect too: 3 s leaves a loaded machine room to start
    // python and answer `initialize`, so what times out is the request.
    add_python_server(
        &config,
        python,
        "s",
        "legacy",
        LOGS_INSTEAD_OF_ANSWERING,
        &[],
    );
    let out = run(&config, &["--timeout", "3", "call", "s", "echo"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("no answer within 3s"), "{err}");
    assert!(
        err.contains(
            "the server wrote a line to stdout that is not JSON (stdout is for JSON-RPC \
             messages only; a server logs to stderr): \"handling tools/call \\u{1b}[2J...\""
        ),
        "{err}"
    );
    assert!(err.contains("(the limit is --timeout SECS)"), "{err}");
    assert!(!err.contains(drives_a_terminal), "{err}");
    let out = run(
        &config,
        &["--format", "json", "--timeout", "3", "call", "s", "echo"],
    );
    let error = &json(&out)["error"];
    assert_eq!(error["kind"], "timeout", "{error}");
    let hint = error["hint"].as_str().unwrap_or_default();
    assert!(hint.contains(r#"tools/call \u{1b}[2J...""#), "{error}");
    for (command, method) in [("tools", "tools/list"), ("resources", "resources/list")] {
        let out = run(&config, &["--timeout", "3", command, "s"]);
        assert_eq!(out.status.code(), Some(1), "{command}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("no answer within 3s"), "{command}: {err}");
        assert!(
            err.contains(&format!(
                "hint: the server wrote a line to stdout that is not JSON (stdout is for \
                 JSON-RPC messages only; a server logs to stderr): \"handling {method} \
                 \\u{{1b}}[2J...\""
            )),
            "{command}: {err}"
        );
        assert!(
            err.contains("(the limit is --timeout SECS)"),
            "{command}: {err}"
        );
        assert!(!err.contains(drives_a_terminal), "{command}: {err}");
        let out = run(
            &config,
            &["--format", "json", "--timeout", "3", command, "s"],
        );
        let error = &json(&out)["error"];
        assert_eq!(error["kind"], "timeout", "{command}: {error}");
        let hint = error["hint"].as_str().unwrap_or_default();
        assert!(
            hint.contains(&format!("{method} \\u{{1b}}[2J...\"")),
            "{command}: {error}"
        );
    }
    // The probe of `status --connect` lists its tools, in the failure it prints.
    let out = run(&config, &["--timeout", "3", "status", "--connect"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains("no answer within"), "{text}");
    assert!(text.contains(r#"tools/list \u{1b}[2J...""#), "{text}");
}

#[test]
fn version_help_per_command_and_suggestions() {
    let config = common::temp_dir("guidance").join("servers.json");
    let out = run(&config, &["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("mcp 0."), "{}", stdout(&out));
    let out = run(&config, &["help", "call"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).starts_with("mcp call <server> <tool>"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("mcp tools"), "{}", stdout(&out));
    for (args, said) in [
        (&["cal"][..], "did you mean call?"),
        (
            &["call", "x", "y", "--auto-acept"][..],
            "did you mean --auto-accept?",
        ),
        (&["--formt", "json", "list"][..], "did you mean --format?"),
        (&["help", "lisen"][..], "did you mean listen?"),
        (
            &["--timeout", "0", "list"][..],
            "more than 0 and at most 86400",
        ),
    ] {
        let out = run(&config, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn add_points_at_dashes_for_the_servers_own_arguments() {
    let config = common::temp_dir("dashes").join("servers.json");
    for args in [
        &["add", "ev", "--stdio", "npx", "-y", "pkg"][..],
        &["add", "ev", "--stdio", "mcp", "serve-example", "--stdio"][..],
        &["add", "ev", "--stdio", "mcp", "serve-example"][..],
    ] {
        let out = run(&config, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("go after `--`"), "{args:?}: {err}");
    }
    assert!(!config.exists(), "nothing was written");
}

#[test]
fn doctor_fails_a_command_that_does_not_exist_offline() {
    let config = common::temp_dir("doctor-missing").join("servers.json");
    run(&config, &["add", "nb", "--stdio", "/no/such/binary"]);
    let out = run(&config, &["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("/no/such/binary does not exist or is not executable"),
        "{}",
        stdout(&out)
    );
}

/// A credential in a URL's query is kept in the file (the server needs it) and never
/// printed: `add`, `import`, `list`, `get`, `auth status` and `doctor` show it redacted,
/// and say where it is; a refused URL is not repeated with it either.
#[test]
fn a_credential_in_a_url_query_is_stored_but_never_printed() {
    let dir = common::temp_dir("url-secret");
    let config = dir.join("servers.json");
    let url = "http://127.0.0.1:9/mcp?api_key=sk_live_4242&page=2";
    let theirs = dir.join("cursor.json");
    std::fs::write(
        &theirs,
        r#"{"mcpServers": {"imported": {"url": "http://127.0.0.1:9/mcp?access_token=tok-77"}}}"#,
    )
    .unwrap();
    let noted = [
        run(&config, &["add", "remote", "--url", url]),
        run(&config, &["import", theirs.to_str().unwrap()]),
    ];
    let list = run(&config, &["list"]);
    let quiet = [
        run(&config, &["--format", "json", "add", "again", "--url", url]),
        run(&config, &["get", "remote"]),
        run(&config, &["get", "imported"]),
        run(&config, &["--format", "json", "list"]),
        run(&config, &["--format", "json", "get", "remote"]),
        run(&config, &["auth", "status", "remote"]),
        run(&config, &["--format", "json", "auth", "status", "remote"]),
    ];
    for out in noted.iter().chain([&list]).chain(&quiet) {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    }
    for out in &noted {
        assert!(
            stdout(out).contains("credential in the query"),
            "{}",
            stdout(out)
        );
    }
    assert!(
        stdout(&list).contains("?api_key=redacted&page=2"),
        "{}",
        stdout(&list)
    );
    // Whatever their exit status, diagnostics and refusals print no secret either.
    let doctor = run(&config, &["doctor"]);
    assert!(
        stdout(&doctor).contains("endpoint http://127.0.0.1:9/mcp?api_key=redacted"),
        "{}",
        stdout(&doctor)
    );
    let refused = run(
        &config,
        &[
            "add",
            "far",
            "--url",
            "http://remote.example/mcp?api_key=sk_live_4242",
        ],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    for out in noted.iter().chain([&list, &doctor, &refused]).chain(&quiet) {
        let printed = format!("{}{}", stdout(out), stderr(out));
        assert!(
            !printed.contains("sk_live_4242") && !printed.contains("tok-77"),
            "{printed}"
        );
    }
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(
        written.contains(url) && written.contains("access_token=tok-77"),
        "{written}"
    );
}

#[test]
fn import_reads_other_clients_configs_and_never_keeps_values() {
    let dir = common::temp_dir("import");
    let config = dir.join("servers.json");
    let theirs = dir.join("claude.json");
    std::fs::write(
        &theirs,
        r#"{"mcpServers": {
            "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
                           "env": {"API_KEY": "s3cret-value"}},
            "remote": {"url": "https://mcp.example.com/mcp"}}}"#,
    )
    .unwrap();
    let out = run(&config, &["import", theirs.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).contains("add everything: stdio npx -y"),
        "{}",
        stdout(&out)
    );
    assert!(!config.exists(), "a dry run writes nothing");
    let out = run(&config, &["import", theirs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(!written.contains("s3cret-value"), "{written}");
    assert!(written.contains("\"API_KEY\""), "{written}");
    let out = run(&config, &["--format", "json", "get", "remote"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Their file used as ours says what to do.
    let out = run(&theirs, &["list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("mcp import"), "{}", stderr(&out));
    // An env map in ours is refused with the fix.
    std::fs::write(
        &config,
        r#"{"servers": {"a": {"command": "x", "env": {"K": "v"}}}}"#,
    )
    .unwrap();
    let out = run(&config, &["list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("list variable names"),
        "{}",
        stderr(&out)
    );
}

/// What other clients put in HTTP entries: a URL is checked as `add --url` checks it
/// (nothing is written when one is refused), a bearer token named by a variable becomes
/// `bearerTokenEnv`, other headers are left out and said so, with their values never
/// written, and `${…}` in arguments is reported as not expanded.
#[test]
fn import_checks_urls_and_maps_bearer_headers() {
    let dir = common::temp_dir("import-http");
    let config = dir.join("servers.json");
    let theirs = dir.join("cursor.json");
    let import = |body: &str| {
        std::fs::write(&theirs, body).unwrap();
        run(&config, &["import", theirs.to_str().unwrap()])
    };
    for (url, why) in [
        ("ftp://x/mcp", "unsupported scheme"),
        ("http://example.com/mcp", "only allowed to loopback hosts"),
    ] {
        let out = import(&format!(
            r#"{{"mcpServers": {{"ok": {{"command": "x"}}, "bad": {{"url": "{url}"}}}}}}"#
        ));
        assert_eq!(out.status.code(), Some(1), "{url}");
        assert!(
            stderr(&out).contains("bad: ") && stderr(&out).contains(why),
            "{}",
            stderr(&out)
        );
        assert!(!config.exists(), "{url}: a refused import writes nothing");
    }
    let out = import(
        r#"{"mcpServers": {
            "a": {"type": "http", "url": "https://a.example/mcp",
                  "headers": {"Authorization": "Bearer ${A_TOKEN}"}},
            "b": {"url": "https://b.example/mcp",
                  "headers": {"authorization": "Bearer ${env:B_TOKEN}", "X-Api-Key": "k3y-value"}},
            "c": {"serverUrl": "https://c.example/mcp",
                  "headers": {"Authorization": "Bearer lit3ral-token"}},
            "d": {"command": "node", "args": ["${workspaceFolder}/server.js"]},
            "e": {"url": "https://e.example/mcp",
                  "headers": {"X-Api-Key": "${env:E_KEY}", "X-Org": "lit3ral-org"}}}}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("read from $A_TOKEN"), "{text}");
    assert!(text.contains("header X-Api-Key left out"), "{text}");
    assert!(text.contains("header Authorization left out"), "{text}");
    assert!(text.contains("expands no"), "{text}");
    let written = std::fs::read_to_string(&config).unwrap();
    for secret in ["k3y-value", "lit3ral-token", "lit3ral-org"] {
        assert!(!written.contains(secret), "{written}");
    }
    let entry = |name: &str| {
        let out = run(&config, &["--format", "json", "get", name]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap()
    };
    assert_eq!(entry("a")["bearerTokenEnv"], "A_TOKEN", "{}", entry("a"));
    assert_eq!(entry("b")["bearerTokenEnv"], "B_TOKEN", "{}", entry("b"));
    assert!(entry("c").get("bearerTokenEnv").is_none(), "{}", entry("c"));
    assert_eq!(
        entry("e")["headerEnv"],
        serde_json::json!({"X-Api-Key": "E_KEY"}),
        "{}",
        entry("e")
    );
    assert!(
        text.contains("header X-Api-Key is read from $E_KEY"),
        "{text}"
    );
    assert!(text.contains("header X-Org left out"), "{text}");
}

/// VS Code's `mcp.json` (`servers`, with comments and trailing commas, `${input:…}`
/// prompts, `envFile`) and its settings (`mcp.servers`), and Zed's `context_servers`
/// (a `command` object) import as `mcpServers` files do; a file with none of these says
/// where it looked.
#[test]
fn import_reads_vscode_and_zed_configs() {
    let dir = common::temp_dir("import-editors");
    let config = dir.join("servers.json");
    let theirs = dir.join("mcp.json");
    let import = |body: &str| {
        std::fs::write(&theirs, body).unwrap();
        run(&config, &["import", theirs.to_str().unwrap()])
    };
    let out = import(
        r#"{
          // workspace servers
          "inputs": [{"type": "promptString", "id": "api-key", "description": "a // b", "password": true}],
          "servers": {
            "fs": {"type": "stdio", "command": "npx", "args": ["-y", "server-filesystem", "/*x*/"],
                   "env": {"API_KEY": "${input:api-key}"}, "envFile": "${workspaceFolder}/.env"},
            /* a remote one */
            "remote": {"type": "http", "url": "https://example.com/mcp",
                       "headers": {"Authorization": "Bearer ${input:api-key}"},},
          },
        }"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("add fs: stdio npx -y server-filesystem '/*x*/'"),
        "{text}"
    );
    assert!(text.contains("VS Code input \"api-key\""), "{text}");
    assert!(text.contains("\"envFile\" is left out"), "{text}");
    assert!(text.contains("header Authorization left out"), "{text}");
    let entry = |name: &str| {
        let out = run(&config, &["--format", "json", "get", name]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap()
    };
    assert_eq!(
        entry("fs")["env"],
        serde_json::json!(["API_KEY"]),
        "{}",
        entry("fs")
    );
    assert_eq!(entry("remote")["url"], "https://example.com/mcp");
    let out =
        import(r#"{"mcp": {"servers": {"settings": {"command": "node", "args": ["s.js"]}}}}"#);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(entry("settings")["args"], serde_json::json!(["s.js"]));
    let out = import(
        r#"{"theme": "One", "context_servers": {
            "pg": {"command": {"path": "/usr/bin/pg-mcp", "args": ["--db", "x"], "env": {"PGPASS": "pw-value"}}},
            "time": {"source": "custom", "command": "uvx", "args": ["mcp-server-time"]}}}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let pg = entry("pg");
    assert_eq!(pg["command"], "/usr/bin/pg-mcp", "{pg}");
    assert_eq!(pg["args"], serde_json::json!(["--db", "x"]), "{pg}");
    assert_eq!(pg["env"], serde_json::json!(["PGPASS"]), "{pg}");
    assert_eq!(entry("time")["command"], "uvx");
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(!written.contains("pw-value"), "{written}");
    let out = import(r#"{"editor": {}}"#);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(r#""mcpServers", "servers", "mcp.servers" or "context_servers""#),
        "{}",
        stderr(&out)
    );
    // Not JSON even with comments allowed: the strict parser's error.
    let out = import(r#"{"servers": {,}}"#);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not JSON"), "{}", stderr(&out));
}

/// An entry whose bearer token variable is not set fails at once, saying which variable
/// (it went on to OAuth as if none were named), and `doctor` and `status` say so too.
#[test]
fn an_unset_bearer_token_variable_is_named() {
    let config = common::temp_dir("bearer-unset").join("servers.json");
    let var = "MCP_TEST_UNSET_BEARER_7";
    let out = run(
        &config,
        &[
            "add",
            "web",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--bearer-token-env",
            var,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(&config, &["--no-input", "tools", "web"]);
    assert_ne!(out.status.code(), Some(0));
    let said = stderr(&out);
    assert!(
        said.contains(&format!("${var}, which is not set")),
        "{said}"
    );
    assert!(!said.contains("connect"), "it tried to connect: {said}");
    let out = run(&config, &["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    let said = stdout(&out);
    assert!(
        said.contains(&format!(
            "fail  web: credentials bearer token variable ${var} not set"
        )),
        "{said}"
    );
    let out = run_with_env(
        &config,
        &["--format", "json", "status", "web"],
        &[(var, "tok")],
    );
    assert!(stdout(&out).contains("\"external\""), "{}", stdout(&out));
}

#[test]
fn text_tables_fit_100_columns() {
    let config = common::temp_dir("wide").join("servers.json");
    let long = format!("/opt/{}/server", "very-long-directory-name/".repeat(6));
    run(
        &config,
        &[
            "add",
            "wide",
            "--stdio",
            &long,
            "--",
            "--flag",
            &"x".repeat(80),
        ],
    );
    let out = run(&config, &["status"]);
    for line in stdout(&out).lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    assert!(stdout(&out).contains("wide"));
}

/// In a terminal, `serve-example` says what it is and how to stop it (through
/// `script`, which gives it a terminal; skipped where there is none).
#[cfg(unix)]
#[test]
fn serve_example_in_a_terminal_says_how_it_is_used_and_stopped() {
    let has_script = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_script {
        eprintln!("skipped: no script(1) to provide a terminal");
        return;
    }
    let command = format!("{} serve-example --stdio", mcp().display());
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("run script");
    let said = stdout(&out);
    assert!(said.contains("speaks MCP on stdin and stdout"), "{said}");
    assert!(said.contains("Ctrl-D or Ctrl-C stops it"), "{said}");
    // Off a terminal it stays silent: stdout is the protocol's.
    let quiet = Command::new(mcp())
        .args(["serve-example", "--stdio"])
        .stdin(Stdio::null())
        .output()
        .expect("run mcp");
    assert!(quiet.stdout.is_empty() && quiet.stderr.is_empty());
}

/// A config with server `name`: `script` run by Python over stdio, in the legacy era.
fn legacy_python_server(test: &str, name: &str, script: &str) -> Option<std::path::PathBuf> {
    common::with_python_server(test, name, "legacy", script)
}
