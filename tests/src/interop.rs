//! Real servers built with other SDKs, installed by `tests/interop/setup.sh`.
//!
//! A test that needs a fixture calls [`fixture`]: when the packages are missing it skips
//! (prints why and returns `None`) on a developer machine, and fails under `CI`.
//! [`http_fixture`] starts the same servers on Streamable HTTP (127.0.0.1, a free port,
//! killed when dropped); [`run_in_private_netns`] re-runs a test inside a network namespace
//! of its own, for servers that bind every interface.

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use mcp_blocking::StdioCommand;
use mcp_proto::client::{InputAnswer, InputHandler, InputRequest, SamplingResult};
use serde_json::{Map, Value};

/// `tests/interop/`.
pub fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop")
}

/// The servers available as fixtures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fixture {
    /// TypeScript SDK v2 (`srv.mjs`), both eras.
    TypeScript,
    /// Python SDK 2.3 (`srv.py`), both eras.
    Python,
    /// `@modelcontextprotocol/server-everything`, legacy era only.
    Everything,
}

fn require(path: &Path, what: &str) -> bool {
    if path.exists() {
        return true;
    }
    let msg = format!(
        "interop fixture missing: {what} ({}); run `bash tests/interop/setup.sh`",
        path.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{msg}");
    }
    eprintln!("skipping: {msg}");
    false
}

/// The stdio command that starts `f`, or `None` (skip) when it is not installed.
pub fn fixture(f: Fixture) -> Option<StdioCommand> {
    let dir = interop_dir();
    match f {
        Fixture::TypeScript => {
            let marker = dir.join("node_modules/@modelcontextprotocol/server/package.json");
            require(&marker, "TypeScript SDK").then(|| {
                StdioCommand::new("node")
                    .arg(dir.join("srv.mjs"))
                    .arg("stdio")
                    .pass_env("PATH")
            })
        }
        Fixture::Python => {
            let pydeps = dir.join("pydeps");
            require(&pydeps.join("mcp"), "Python SDK").then(|| {
                StdioCommand::new("python3")
                    .arg(dir.join("srv.py"))
                    .arg("stdio")
                    .env("PYTHONPATH", pydeps)
                    .pass_env("PATH")
                    .pass_env("HOME")
            })
        }
        Fixture::Everything => {
            let entry =
                dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
            require(&entry, "server-everything").then(|| {
                StdioCommand::new("node")
                    .arg(entry)
                    .arg("stdio")
                    .pass_env("PATH")
            })
        }
    }
}

/// Answers sampling with a fixed text ("sampled reply"), remembering the prompts;
/// declines everything else.
#[derive(Clone, Default)]
pub struct Model(pub Arc<Mutex<Vec<String>>>);

impl InputHandler for Model {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        match request {
            InputRequest::Sampling(p) => {
                let prompt = p.messages[0].content["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                self.0.lock().unwrap().push(prompt);
                InputAnswer::sampled(SamplingResult::text("interop-model", "sampled reply"))
            }
            _ => InputAnswer::decline(),
        }
    }
}

/// Accepts every form, filling each schema property: its default when there is one,
/// otherwise a plain value of its type (`true`, `1`, `"interop"`).
#[derive(Debug, Default)]
pub struct FillForms {
    /// Every request seen.
    pub seen: Vec<String>,
}

impl InputHandler for FillForms {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        let InputRequest::Elicitation(p) = request else {
            return InputAnswer::Error(mcp_proto::ErrorObject::new(-32600, "not supported"));
        };
        self.seen.push(p.message.clone());
        let schema: Value = p
            .requested_schema
            .as_ref()
            .and_then(|s| serde_json::from_str(s.get()).ok())
            .unwrap_or(Value::Null);
        let mut content = Map::new();
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                let value = prop.get("default").cloned().unwrap_or_else(|| fill(prop));
                content.insert(name.clone(), value);
            }
        }
        InputAnswer::accept(content)
    }
}

/// A value that passes `prop`'s constraints: the first option of an enum, a value of
/// the string's format, the minimum of a number.
fn fill(prop: &Value) -> Value {
    let first_option = |p: &Value| {
        p.get("enum")
            .and_then(|e| e.get(0))
            .or_else(|| {
                p.get("oneOf")
                    .and_then(|o| o.get(0))
                    .and_then(|o| o.get("const"))
            })
            .or_else(|| {
                p.get("anyOf")
                    .and_then(|o| o.get(0))
                    .and_then(|o| o.get("const"))
            })
            .cloned()
    };
    match prop.get("type").and_then(Value::as_str) {
        Some("boolean") => Value::Bool(true),
        Some("integer") | Some("number") => prop.get("minimum").cloned().unwrap_or(Value::from(1)),
        Some("array") => Value::Array(
            prop.get("items")
                .and_then(first_option)
                .into_iter()
                .collect(),
        ),
        _ => first_option(prop).unwrap_or_else(|| {
            Value::String(
                match prop.get("format").and_then(Value::as_str) {
                    Some("email") => "interop@example.com",
                    Some("uri") => "https://example.com/interop",
                    Some("date") => "2000-01-01",
                    Some("date-time") => "2000-01-01T00:00:00Z",
                    _ => "interop",
                }
                .into(),
            )
        }),
    }
}

// ---------------------------------------------------------------------------------------
// Streamable HTTP fixtures: the same servers as separate processes on 127.0.0.1.

/// Whether `f` is installed. Missing: `false` (with a note) on a developer machine, a
/// panic under `CI`, like [`fixture`].
pub fn fixture_installed(f: Fixture) -> bool {
    let dir = interop_dir();
    match f {
        Fixture::TypeScript => require(
            &dir.join("node_modules/@modelcontextprotocol/server/package.json"),
            "TypeScript SDK",
        ),
        Fixture::Python => require(&dir.join("pydeps/mcp"), "Python SDK"),
        Fixture::Everything => require(&everything_entry(), "server-everything"),
    }
}

fn everything_entry() -> PathBuf {
    interop_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// A fixture serving Streamable HTTP at `http://127.0.0.1:PORT/mcp`, started by
/// [`http_fixture`]. Dropping it kills the process (by its id) and waits for it, also when
/// the test panics.
#[derive(Debug)]
pub struct HttpServer {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    log: PathBuf,
}

/// How long a fixture may take to accept connections (Python imports are slow).
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts `f` as a Streamable HTTP server on a free loopback port with these extra
/// arguments (`--strict`, `--json`, `--stateless`), waits until it accepts TCP connections
/// and returns it; `None` (skip) when it is not installed, as [`fixture`].
/// For [`Fixture::Everything`], `extra` `["sse"]` starts the 2024-11-05 HTTP+SSE
/// transport instead (`GET /sse`, `POST /message`), and the URL ends in `/sse`.
///
/// [`Fixture::Everything`] binds every interface, so it is only started when this
/// process runs inside a network namespace of its own ([`in_private_netns`]); elsewhere
/// this panics.
pub fn http_fixture(f: Fixture, extra: &[&str]) -> Option<HttpServer> {
    if !fixture_installed(f) {
        return None;
    }
    assert!(
        f != Fixture::Everything || in_private_netns(),
        "server-everything binds all interfaces: start it only inside `run_in_private_netns`"
    );
    let mut failures = Vec::new();
    // A port found free can be taken before the server binds it: try a few.
    for _ in 0..4 {
        let port = free_port();
        match start_http(f, port, extra) {
            Ok(server) => return Some(server),
            Err(why) => failures.push(why),
        }
    }
    panic!(
        "{f:?} HTTP server did not start:\n{}",
        failures.join("\n---\n")
    );
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

static LOG_SEQ: AtomicUsize = AtomicUsize::new(0);

fn start_http(f: Fixture, port: u16, extra: &[&str]) -> Result<HttpServer, String> {
    let dir = interop_dir();
    let log = std::env::temp_dir().join(format!(
        "mcp-interop-{:?}-{}-{}.log",
        f,
        std::process::id(),
        LOG_SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let out = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let sse = f == Fixture::Everything && extra.first() == Some(&"sse");
    let mut cmd = match f {
        Fixture::TypeScript => {
            let mut c = Command::new("node");
            c.arg(dir.join("srv.mjs")).arg("http").arg(port.to_string());
            c
        }
        Fixture::Python => {
            let mut c = Command::new("python3");
            c.arg(dir.join("srv.py"))
                .arg("http")
                .arg(port.to_string())
                .env("PYTHONPATH", dir.join("pydeps"))
                .env("PYTHONUNBUFFERED", "1");
            c
        }
        Fixture::Everything => {
            let mode = if sse { "sse" } else { "streamableHttp" };
            let mut c = Command::new("node");
            c.arg(everything_entry())
                .arg(mode)
                .env("PORT", port.to_string());
            c
        }
    };
    let extra = if sse { &extra[1..] } else { extra };
    cmd.args(extra)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    let child = cmd.spawn().map_err(|e| format!("spawn {f:?}: {e}"))?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut server = HttpServer {
        child,
        addr,
        url: format!("http://{addr}/{}", if sse { "sse" } else { "mcp" }),
        log,
    };
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(format!(
                "{f:?} on port {port} exited with {status} before accepting connections; output:\n{}",
                server.output()
            ));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            // Still ours? (Another process may hold the port if ours failed to bind.)
            if let Ok(None) = server.child.try_wait() {
                return Ok(server);
            }
            continue;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{f:?} on port {port} did not accept connections within {READY_TIMEOUT:?}; output:\n{}",
                server.output()
            ));
        }
        thread::sleep(Duration::from_millis(50));
    }
}

impl HttpServer {
    /// Everything the process wrote to stdout and stderr so far (the last 8 KiB).
    pub fn output(&self) -> String {
        let text = std::fs::read(&self.log).unwrap_or_default();
        let tail = &text[text.len().saturating_sub(8192)..];
        String::from_utf8_lossy(tail).into_owned()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

// ---------------------------------------------------------------------------------------
// A network namespace of the test's own, for servers that bind every interface.

/// Set in the copy of the test binary [`run_in_private_netns`] starts.
pub const NETNS_MARKER: &str = "MCP_INTEROP_PRIVATE_NETNS";

/// True in the copy of the test binary that [`run_in_private_netns`] started inside a
/// fresh network namespace (only loopback, up).
pub fn in_private_netns() -> bool {
    std::env::var_os(NETNS_MARKER).is_some_and(|v| v == "1")
}

/// How long the copy in the namespace may run.
const NETNS_TIMEOUT: Duration = Duration::from_secs(180);

/// Runs the test `name` (its full path in this test binary) again, alone, in a fresh
/// network namespace: `unshare -n sh -c 'ip link set lo up && exec "$@"'` around this very
/// binary with `--exact NAME --nocapture` and [`NETNS_MARKER`] set. Panics with the copy's
/// output when it fails or outlives a generous deadline (its whole process group is
/// killed then). When namespaces are not permitted it skips (returns `false`) on a
/// developer machine and panics under `CI`.
pub fn run_in_private_netns(name: &str) -> bool {
    assert!(!in_private_netns(), "already inside the namespace");
    let probe = Command::new("unshare")
        .args(["-n", "sh", "-c", "ip link set lo up"])
        .stdin(Stdio::null())
        .output();
    let refused = match probe {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "`unshare -n sh -c 'ip link set lo up'` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Some(format!("cannot run `unshare`: {e}")),
    };
    if let Some(why) = refused {
        let msg = format!("a private network namespace is needed for {name}: {why}");
        if std::env::var_os("CI").is_some() {
            panic!("{msg}");
        }
        eprintln!("skipping: {msg}");
        return false;
    }
    let exe = std::env::current_exe().expect("current test binary");
    let log = std::env::temp_dir().join(format!(
        "mcp-interop-netns-{}-{}.log",
        std::process::id(),
        LOG_SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let out = File::create(&log).expect("netns log file");
    let err = out.try_clone().expect("netns log file");
    let mut child = Command::new("unshare")
        .args(["-n", "sh", "-c", "ip link set lo up && exec \"$@\"", "sh"])
        .arg(&exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(NETNS_MARKER, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        // Its own process group, so a copy that hangs is killed with its servers.
        .process_group(0)
        .spawn()
        .expect("spawn unshare");
    let deadline = Instant::now() + NETNS_TIMEOUT;
    let status = loop {
        match child.try_wait().expect("wait for the namespace copy") {
            Some(status) => break Some(status),
            None if Instant::now() >= deadline => break None,
            None => thread::sleep(Duration::from_millis(50)),
        }
    };
    let status = status.unwrap_or_else(|| {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .status();
        let _ = child.kill();
        let _ = child.wait();
        let output = String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).into_owned();
        let _ = std::fs::remove_file(&log);
        panic!(
            "{name} in the private network namespace ran over {NETNS_TIMEOUT:?}; output:\n{output}"
        );
    });
    let output = String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).into_owned();
    let _ = std::fs::remove_file(&log);
    assert!(
        status.success(),
        "{name} failed in the private network namespace ({status}); output:\n{output}"
    );
    assert!(
        output.contains("1 passed"),
        "{name} did not run in the private network namespace (wrong test name?); output:\n{output}"
    );
    eprintln!("--- {name} in the private network namespace ---\n{output}");
    true
}

// ---------------------------------------------------------------------------------------
// Clients built with other SDKs, pointed at our own server (`tests/interop/cli.*`).

/// The SDK clients available as peers for our server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdkClient {
    /// TypeScript SDK v2 client (`@modelcontextprotocol/client`, `cli.mjs`).
    TypeScript,
    /// Python SDK 2.3 client (`mcp.Client`, `cli.py`).
    Python,
}

/// The command that runs `c`'s client script (arguments still to add), or `None` (skip)
/// when its packages are not installed; a panic under `CI`, like [`fixture`].
pub fn sdk_client(c: SdkClient) -> Option<Command> {
    let dir = interop_dir();
    match c {
        SdkClient::TypeScript => {
            let marker = dir.join("node_modules/@modelcontextprotocol/client/package.json");
            require(&marker, "TypeScript SDK client").then(|| {
                let mut cmd = Command::new("node");
                cmd.arg(dir.join("cli.mjs")).current_dir(&dir);
                cmd
            })
        }
        SdkClient::Python => {
            let pydeps = dir.join("pydeps");
            require(&pydeps.join("mcp/client/client.py"), "Python SDK client").then(|| {
                let mut cmd = Command::new("python3");
                cmd.arg(dir.join("cli.py"))
                    .current_dir(&dir)
                    .env("PYTHONPATH", &pydeps)
                    .env("PYTHONUNBUFFERED", "1");
                cmd
            })
        }
    }
}
