//! Two `mcp serve-example --http` processes sharing one Redis and one key file behave as
//! one server: a legacy session initialized on A is served by B, and a `DELETE` on B ends
//! it for A; a stream begun on A (polling mode) is resumed with `Last-Event-ID` on B; a
//! 2026-07-28 `requestState` sealed by A opens once on B, and its replay on A is refused
//! with `-32602`. Each assertion fails when the matching store is not shared: B would
//! answer 404 to A's session, 400 to A's event id, and a state sealed by A would not
//! open on B (unknown key) or would open twice.
//!
//! Skips when `redis-server` is not installed, except under `CI`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use mcp_tests::redis::RedisServer;
use serde_json::{Value, json};

const V: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";

/// `mcp serve-example --http 127.0.0.1:0 --sse-polling --redis … --state-key-file …`,
/// killed by its process id when dropped.
struct Process {
    child: Child,
    addr: String,
    /// What the server wrote on stderr after its URL, as it arrives.
    log: Arc<Mutex<String>>,
    stderr: Option<JoinHandle<()>>,
}

impl Process {
    fn start(redis: &str, keys: &PathBuf) -> Process {
        let bin = mcp_tests::example_bin("mcp-blocking", "mcp");
        let mut child = Command::new(bin)
            .args(["serve-example", "--http", "127.0.0.1:0", "--sse-polling"])
            .args(["--redis", redis, "--state-key-file"])
            .arg(keys)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mcp serve-example");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("the server's URL");
        let addr = line
            .trim()
            .strip_prefix("http://")
            .and_then(|r| r.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("not an endpoint URL: {line:?}"))
            .to_owned();
        let log = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&log);
        let stderr = thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Process {
            child,
            addr,
            log,
            stderr: Some(stderr),
        }
    }

    /// Waits (at most 20 s) until the server has said `what` on stderr `times` times.
    fn await_log(&self, what: &str, times: usize) {
        for _ in 0..400 {
            if self.log.lock().unwrap().matches(what).count() >= times {
                return;
            }
            thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "the server never said {what:?} {times} times: {}",
            self.log.lock().unwrap()
        );
    }

    /// One request on its own connection (`Connection: close`): status, head, body.
    fn send(&self, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut head = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
             Accept: application/json, text/event-stream\r\n",
            self.addr
        );
        for (n, v) in headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        if method == "POST" {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body.as_bytes()).unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head[9..12].parse().unwrap();
        (status, head.to_owned(), dechunk(head, body))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(t) = self.stderr.take() {
            let _ = t.join();
            let rest = self.log.lock().unwrap();
            if !rest.trim().is_empty() {
                eprintln!("--- server stderr ---\n{rest}");
            }
        }
    }
}

fn dechunk(head: &str, body: &str) -> String {
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return body.to_owned();
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    out
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// (id, retry, data) of each SSE event.
fn events(body: &str) -> Vec<(Option<String>, Option<String>, String)> {
    body.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(name).map(str::to_owned))
            };
            (
                field("id: "),
                field("retry: "),
                field("data: ").unwrap_or_default(),
            )
        })
        .collect()
}

fn key_file() -> PathBuf {
    key_file_named("shared", &format!("# shared by both processes\nk1 {K1}\n"))
}

fn key_file_named(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-scale-{name}-{}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

const K1: &str = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";
const K2: &str = "6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b";

const MODERN_CONFIRM: [(&str, &str); 3] = [
    ("MCP-Protocol-Version", MODERN),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "confirm"),
];

fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": MODERN,
           "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
}

/// A 2026-07-28 `confirm` on `p`: the `requestState` of its `input_required` answer.
fn seal(p: &Process) -> String {
    let first = json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                       "params": {"name": "confirm", "arguments": {}, "_meta": modern_meta()}});
    let (status, _, body) = p.send("POST", &MODERN_CONFIRM, &first.to_string());
    assert_eq!(status, 200, "{body}");
    let asked: Value = serde_json::from_str(&body).unwrap();
    asked["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState: {asked}"))
        .to_owned()
}

/// `confirm` answered with `state` on `p`: the JSON-RPC answer.
fn open(p: &Process, state: &str) -> Value {
    let retry = json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {
        "name": "confirm", "arguments": {}, "_meta": modern_meta(), "requestState": state,
        "inputResponses": {"confirm": {"action": "accept", "content": {"proceed": true}}}}});
    let (_, _, body) = p.send("POST", &MODERN_CONFIRM, &retry.to_string());
    serde_json::from_str(&body).unwrap_or_else(|_| panic!("not JSON: {body}"))
}

fn accepted(answer: &Value) -> bool {
    answer["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("accepted"))
}

/// Keys rotate through the shared key file without a restart and without a moment in
/// which one process seals what the other cannot open: the new key is first added as
/// `open` (both learn it), then made the sealing key; a state sealed with it by the first
/// process to read the change opens on the other even before that one reads it, and
/// states sealed under the old key keep opening until the old key leaves the file.
#[test]
fn keys_rotate_through_the_file_without_downtime() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    const RELOAD: &str = "keys read again";
    let keys = key_file_named("rotate", &format!("k1 {K1}\n"));
    let a = Process::start(&redis.url(), &keys);
    let b = Process::start(&redis.url(), &keys);
    let before = [seal(&a), seal(&b), seal(&a)];
    assert!(before.iter().all(|s| s.starts_with("v1.k1.")), "{before:?}");

    // Step 1: both learn k2, neither seals with it.
    std::fs::write(&keys, format!("k1 {K1}\nk2 {K2} open\n")).unwrap();
    a.await_log(RELOAD, 1);
    b.await_log(RELOAD, 1);
    assert!(
        seal(&a).starts_with("v1.k1."),
        "an opening key does not seal"
    );

    // Step 2: k2 seals. As soon as A has read it, what A seals opens on B (which may not
    // have read the change yet: it already had k2 as an opening key).
    std::fs::write(&keys, format!("k1 {K1}\nk2 {K2}\n")).unwrap();
    a.await_log(RELOAD, 2);
    let new = seal(&a);
    assert!(new.starts_with("v1.k2."), "{new}");
    assert!(accepted(&open(&b, &new)), "B opens A's k2 state");
    // The old key still opens, on both.
    assert!(accepted(&open(&b, &before[0])), "B opens a k1 state of A's");
    assert!(accepted(&open(&a, &before[1])), "A opens a k1 state of B's");

    // Step 3: k1 leaves the file: its states no longer open; k2's still do.
    std::fs::write(&keys, format!("k2 {K2}\n")).unwrap();
    a.await_log(RELOAD, 3);
    b.await_log(RELOAD, 3);
    let refused = open(&a, &before[2]);
    assert_eq!(refused["error"]["code"], -32602, "k1 retired: {refused}");
    assert!(accepted(&open(&a, &seal(&b))), "A opens B's k2 state");

    // A file that no longer parses keeps the keys in force.
    std::fs::write(&keys, "k3 not-hex\n").unwrap();
    a.await_log("the keys in force stay", 1);
    assert!(seal(&a).starts_with("v1.k2."));

    drop((a, b));
    let _ = std::fs::remove_file(keys);
}

#[test]
fn two_processes_on_one_redis_serve_as_one() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let keys = key_file();
    let a = Process::start(&redis.url(), &keys);
    let b = Process::start(&redis.url(), &keys);

    // A legacy session initialized on A...
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": V, "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let (status, head, _) = a.send("POST", &[], &init.to_string());
    assert_eq!(status, 200);
    let session = header(&head, "mcp-session-id").unwrap().to_owned();
    let ours = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", V),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(b.send("POST", &ours, &initialized.to_string()).0, 202);

    // ...calls tools on B.
    let echo = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "from B"}}});
    let (status, _, body) = b.send("POST", &ours, &echo.to_string());
    assert_eq!(status, 200, "B knows A's session: {body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["result"]["content"][0]["text"], "from B");

    // A stream begun on A (polling: its priming event and retry) resumes on B.
    let confirm = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "confirm", "arguments": {}}});
    let (status, _, body) = a.send("POST", &ours, &confirm.to_string());
    assert_eq!(status, 200);
    let priming = events(&body)[0].0.clone().expect("a priming event id");
    let resume = |from: &Process, last: &str| {
        let mut h = ours.to_vec();
        h.push(("Last-Event-ID", last));
        from.send("GET", &h, "")
    };
    let (status, _, body) = resume(&b, &priming);
    assert_eq!(status, 200, "B replays A's stream: {body}");
    let got = events(&body);
    let ask: Value = serde_json::from_str(&got[0].2).unwrap();
    assert_eq!(ask["method"], "elicitation/create", "{got:?}");
    assert!(
        got.iter().any(|e| e.1.is_some()),
        "told to poll again: {got:?}"
    );
    let seen = got[0].0.clone().unwrap();
    // The parked call lives on A: the answer goes there; its result is then on B too.
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
                        "result": {"action": "accept", "content": {"proceed": true}}});
    assert_eq!(a.send("POST", &ours, &answer.to_string()).0, 202);
    let (_, _, body) = resume(&b, &seen);
    let result: Value = serde_json::from_str(&events(&body)[0].2).unwrap();
    assert_eq!(result["id"], 2);
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("accepted"),
        "{result}"
    );

    // DELETE on B ends the session for A.
    assert_eq!(b.send("DELETE", &ours, "").0, 200);
    assert_eq!(a.send("POST", &ours, &echo.to_string()).0, 404);

    // 2026-07-28: a requestState sealed by A opens once on B; its replay on A is refused.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                      "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let modern = [
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "confirm"),
    ];
    let first = json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                       "params": {"name": "confirm", "arguments": {}, "_meta": meta}});
    let (status, _, body) = a.send("POST", &modern, &first.to_string());
    assert_eq!(status, 200, "{body}");
    let asked: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].clone();
    assert!(
        state.as_str().unwrap().starts_with("v1.k1."),
        "sealed under the file's key"
    );
    let retry = json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {
        "name": "confirm", "arguments": {}, "_meta": meta, "requestState": state,
        "inputResponses": {"confirm": {"action": "accept", "content": {"proceed": true}}}}});
    let (status, _, body) = b.send("POST", &modern, &retry.to_string());
    assert_eq!(status, 200, "B opens A's state: {body}");
    let done: Value = serde_json::from_str(&body).unwrap();
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("accepted"),
        "{done}"
    );
    let (_, _, body) = a.send("POST", &modern, &retry.to_string());
    let refused: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(refused["error"]["code"], -32602, "replayed on A: {refused}");

    drop((a, b));
    let _ = std::fs::remove_file(keys);
}
