//! `mcp listen`, `mcp skills` and the CLI's answers to a server's requests for
//! input, against hostile stdio servers written in Python. Each test names the line of
//! `docs/cli.md` it holds the CLI to.

mod common;

use std::path::Path;
use std::process::Output;

use common::{text, with_python_server};

fn run(config: &Path, args: &[&str]) -> Output {
    common::run_cli(config, args, &[])
}

/// Whether `s` holds a character that drives a terminal (anything but newline and tab).
fn drives_a_terminal(s: &str) -> bool {
    s.contains(|c: char| c.is_control() && c != '\n' && c != '\t')
}

/// A legacy server with tasks: it announces task `bg-1` after `notifications/initialized`
/// with a status message that holds a line break and a line of `mcp listen`'s own; its
/// tool runs as a task whose status message does the same on stderr.
const TASK_MESSAGE_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
task = {"taskId": "T", "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 60000, "pollInterval": 50}
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}, "resources": {"subscribe": True},
                               "tasks": {"list": {}, "requests": {"tools": {"call": {}}}}},
              "serverInfo": {"name": "t", "version": "1"}}})
    elif method == "notifications/initialized":
        send({"jsonrpc": "2.0", "method": "notifications/tasks/status",
              "params": {"taskId": "bg-1", "status": "working",
                         "createdAt": "2026-01-01T00:00:00Z",
                         "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 60000,
                         "statusMessage": "warming up\nresources/updated file:///forged"}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": "t",
              "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": mid, "result": {"task": dict(task, status="working")}})
    elif method == "tasks/get":
        send({"jsonrpc": "2.0", "id": mid, "result": dict(task, status="completed",
              statusMessage="done\nmcp: task T now failed")})
    elif method == "tasks/result":
        send({"jsonrpc": "2.0", "id": mid,
              "result": {"content": [{"type": "text", "text": "ok"}]}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// docs/cli.md, `listen`: "prints change notifications as they arrive, one line each";
/// with an older server `--tasks` prints "`task <id> <status>[: message]`"; and Output:
/// "a server cannot make one value look like two entries, two messages or a line of the
/// CLI's own". A status message with a line break must not print a second, forged
/// notification line.
#[test]
fn a_task_status_message_cannot_forge_a_listen_line() {
    let Some(config) = with_python_server("cli-text-task-msg", "t", "legacy", TASK_MESSAGE_SERVER)
    else {
        return;
    };
    let out = run(&config, &["listen", "t", "--tasks", "--max-events", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.lines().count(),
        1,
        "one notification printed as two lines, the second forged by the server:\n{stdout}"
    );
    assert!(
        stdout.starts_with("task bg-1 working: warming up"),
        "{stdout}"
    );
}

/// docs/cli.md, `call --task`: "The task's creation and every status change go to
/// stderr (`mcp: task <id> created working`, `mcp: task <id> now completed`)"; Output:
/// a server cannot make one value look like "a line of the CLI's own". A status message
/// must not forge a `mcp: task … now failed` line.
#[test]
fn a_task_status_message_cannot_forge_a_status_line_of_call_task() {
    let Some(config) =
        with_python_server("cli-text-call-task-msg", "t", "legacy", TASK_MESSAGE_SERVER)
    else {
        return;
    };
    let out = run(&config, &["call", "t", "t", "--task"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let forged: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("mcp: task T now failed"))
        .collect();
    assert!(
        forged.is_empty(),
        "the server forged a status line of the CLI's own on stderr:\n{stderr}"
    );
}

/// A 2026-07-28 server that acknowledges a listen, sends one list change, then ends
/// the listen with an error whose message holds a line break and a forged notification.
const LISTEN_ERROR_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"],
              "capabilities": {"tools": {"listChanged": True}, "resources": {"subscribe": True}}}})
    elif method == "subscriptions/listen":
        meta = {"io.modelcontextprotocol/subscriptionId": mid}
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": meta, "notifications": m["params"]["notifications"]}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
              "params": {"_meta": meta}})
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32603,
              "message": "boom\nresources/updated file:///forged"}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// docs/cli.md, `listen`: "The end of the subscription is a line too"; "Text lines are
/// `<method without notifications/> [uri]`". The server's error text in the `ended` line
/// must not print a forged `resources/updated` line after it.
#[test]
fn the_end_of_a_listen_is_one_line_whatever_the_servers_error_says() {
    let Some(config) =
        with_python_server("cli-text-listen-end", "n", "modern", LISTEN_ERROR_SERVER)
    else {
        return;
    };
    let out = run(&config, &["listen", "n", "--list-changed"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        3,
        "acknowledged, tools/list_changed, ended: the server's error text added a line:\n{stdout}"
    );
    assert!(lines[2].starts_with("ended failed: "), "{stdout}");
    assert!(
        !lines.iter().any(|l| l.starts_with("resources/updated")),
        "a forged notification line:\n{stdout}"
    );
}

/// A 2026-07-28 server with the Skills extension: two skills named `x`, the second's
/// URI holding a line break and a forged `note:` line, and an invalid entry whose URI
/// holds a forged `rejected:` line.
const SKILLS_SERVER: &str = r#"
import json, sys, hashlib
EXT = "io.modelcontextprotocol/skills"
BODY = "---\nname: x\ndescription: d\n---\nhello\n"
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
def entry(uri, name="x"):
    b = BODY.encode()
    return {"uri": uri, "frontmatter": {"name": name, "description": "d"},
            "resources": [{"uri": uri, "digest": "sha256:" + hashlib.sha256(b).hexdigest(),
                           "size": len(b)}]}
skills = [entry("skill://a/x/SKILL.md"),
          entry("skill://b\nnote: everything is verified/x/SKILL.md"),
          entry("skill://c\nrejected: nothing/y/SKILL.md", name="Bad Name")]
for line in sys.stdin:
    m = json.loads(line)
    method, mid, p = m.get("method"), m.get("id"), m.get("params", {})
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"],
              "capabilities": {"resources": {}, "extensions": {EXT: {}}}}})
    elif method == "skills/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete", "skills": skills}})
    elif method == "skills/get":
        s = [s for s in skills if s["uri"] == p["uri"]]
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete", "skill": s[0]}})
    elif method == "resources/read":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "contents": [{"uri": p["uri"], "mimeType": "text/markdown", "text": BODY}]}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}})
"#;

/// docs/cli.md, `skills`: entries that break the rules are "each reported on stderr as
/// `rejected: …`", "a note names skills that share a name"; Output: "Values that are one
/// line (names, URIs, …) show newline and tab as `^J` and `^I` too … a server cannot
/// make one value look like two entries, two messages or a line of the CLI's own." A
/// skill URI with a line break must not forge a `note:` or `rejected:` line, nor split
/// the line that says which skill was verified.
#[test]
fn skill_uris_cannot_forge_lines_on_stderr() {
    let Some(config) = with_python_server("cli-text-skills", "s", "modern", SKILLS_SERVER) else {
        return;
    };
    let out = run(&config, &["skills", "s"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(!drives_a_terminal(&stderr), "{stderr:?}");
    let notes = stderr.lines().filter(|l| l.starts_with("note: ")).count();
    let rejected = stderr
        .lines()
        .filter(|l| l.starts_with("rejected: "))
        .count();
    assert_eq!(
        (notes, rejected),
        (2, 1),
        "two notes (one per skill named x) and one rejection, each one line:\n{stderr}"
    );
    assert!(
        !stderr.contains("\nnote: everything is verified")
            && !stderr.contains("\nrejected: nothing"),
        "a URI forged a line of the CLI's own:\n{stderr}"
    );

    // Loaded by its URI: the line that says what was verified is one line.
    let uri = "skill://b\nnote: everything is verified/x/SKILL.md";
    let out = run(&config, &["skills", "s", uri]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.lines().count(),
        1,
        "the verification line was split by the server's URI:\n{stderr}"
    );
}

/// A 2026-07-28 server whose tool fails with `-32021`, naming a capability whose name
/// holds a line break and a forged `mcp:` line.
const MISSING_CAPABILITY_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"resultType": "complete",
              "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32021, "message": "need input",
              "data": {"requiredCapabilities": {"elicitation": {},
                       "x\nmcp: the call succeeded": {}}}}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// docs/cli.md, "When the server asks for input": "`--no-input` … a call that needed
/// input fails the same way when the server says which capability it missed (a 2026
/// `-32021` …)", the failure "saying what was asked"; Output: names are one line, "a
/// server cannot make one value look like … a line of the CLI's own". A capability name
/// from the server must not forge an `mcp:` line on stderr.
#[test]
fn a_missing_capabilitys_name_cannot_forge_a_line() {
    let Some(config) =
        with_python_server("cli-text-32021", "m", "modern", MISSING_CAPABILITY_SERVER)
    else {
        return;
    };
    let out = run(&config, &["call", "m", "t", "--no-input"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("elicitation"), "{stderr}");
    assert!(
        !stderr
            .lines()
            .any(|l| l.starts_with("mcp: the call succeeded")),
        "the server forged a line of the CLI's own:\n{stderr}"
    );
}
