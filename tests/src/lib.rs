//! Shared helpers for the integration tests: a deterministic simulation of a client
//! machine against a peer (the bundled server machine or a scripted one), with a fake
//! clock that jumps straight to the next deadline when nothing else can happen.

pub mod cli_home;
pub mod heap;
pub mod http_sim;
pub mod interop;
pub mod raw_http;
pub mod redis;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use mcp_proto::Instant;

use mcp_proto::client::{
    CallError, CallId, CallOutput, CallRequest, Client, ClientConfig, ConnId, Event, InputHandler,
    Transmit,
};
use mcp_proto::server::Server;
use serde_json::Value;

/// The other end of the wire.
pub trait Peer {
    /// Bytes from the client.
    fn handle(&mut self, now: Instant, bytes: &[u8]);
    /// Bytes for the client.
    fn transmit(&mut self, out: &mut Vec<u8>);
}

impl Peer for Server {
    fn handle(&mut self, now: Instant, bytes: &[u8]) {
        self.handle_input(now, bytes);
    }
    fn transmit(&mut self, out: &mut Vec<u8>) {
        while self.poll_transmit(Instant::ZERO, out).is_some() {}
    }
}

/// A peer written as a function from each client message to the lines it answers with.
/// How a call against [`Sim::answer_each_after`]'s slow server went.
#[derive(Debug)]
pub struct SlowRun {
    /// The call's outcome.
    pub outcome: Result<CallOutput, CallError>,
    /// Answers the server gave before it.
    pub answered: u32,
    /// Time from the call to its outcome.
    pub took: Duration,
}

pub struct Scripted<F: FnMut(&Value) -> Vec<String>> {
    script: F,
    pending: Vec<u8>,
    buf: Vec<u8>,
}

impl<F: FnMut(&Value) -> Vec<String>> Scripted<F> {
    /// A scripted peer.
    pub fn new(script: F) -> Self {
        Scripted {
            script,
            pending: Vec::new(),
            buf: Vec::new(),
        }
    }
}

impl<F: FnMut(&Value) -> Vec<String>> Peer for Scripted<F> {
    fn handle(&mut self, _now: Instant, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        while let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            let msg: Value = serde_json::from_slice(&line[..i]).expect("client sent bad JSON");
            for out in (self.script)(&msg) {
                self.pending.extend_from_slice(out.as_bytes());
                self.pending.push(b'\n');
            }
        }
    }
    fn transmit(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.pending);
    }
}

/// The simulation.
pub struct Sim {
    /// The fake clock.
    pub now: Instant,
    /// The client machine.
    pub client: Client,
    /// The peer.
    pub peer: Box<dyn Peer>,
    /// Every event polled so far (input requests included).
    pub events: Vec<Event>,
    /// Every message the client wrote, parsed.
    pub sent: Vec<Value>,
    /// When each message of `sent` was written (the fake clock).
    pub sent_at: Vec<Instant>,
    /// Answers input requests when set.
    pub handler: Option<Box<dyn InputHandler>>,
    /// Fresh peers for `Transmit::Respawn`, used in order.
    pub restarts: Vec<Box<dyn Peer>>,
    /// How many times the machine asked for a fresh process.
    pub respawns: u32,
    /// The machine released the stdio channel (`Transmit::Close`).
    pub channel_closed: bool,
}

impl Sim {
    /// A client with `config` against `peer`.
    pub fn new(config: ClientConfig, peer: impl Peer + 'static) -> Sim {
        let now = Instant::ZERO;
        Sim {
            now,
            client: Client::stdio(config, now),
            peer: Box::new(peer),
            events: Vec::new(),
            sent: Vec::new(),
            sent_at: Vec::new(),
            handler: None,
            restarts: Vec::new(),
            respawns: 0,
            channel_closed: false,
        }
    }

    /// Moves bytes both ways once and drains events. True when anything happened.
    pub fn step(&mut self) -> bool {
        let mut moved = false;
        let mut wire = Vec::new();
        while let Some(t) = self.client.poll_transmit(self.now, &mut wire) {
            match t {
                Transmit::Write { conn, len } => {
                    assert_eq!(conn, ConnId::STDIO);
                    // The simulated server takes every byte at once.
                    self.client.handle_written(self.now, conn, len);
                }
                Transmit::Respawn => {
                    moved = true;
                    assert!(!self.restarts.is_empty(), "unexpected restart");
                    assert!(wire.is_empty(), "bytes for a process that is gone");
                    self.respawns += 1;
                    self.peer = self.restarts.remove(0);
                    self.client.handle_connected(self.now, ConnId::STDIO);
                }
                Transmit::Close { conn } => {
                    assert_eq!(conn, ConnId::STDIO);
                    self.channel_closed = true;
                }
                other => panic!("a stdio client asked for {other:?}"),
            }
        }
        if !wire.is_empty() {
            moved = true;
            for line in wire.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                // JSON with a lone surrogate escape (a server's `requestState`, sent
                // back as written) is valid, but no `Value` holds it: kept as text.
                let message = match serde_json::from_slice(line) {
                    Ok(m) => m,
                    Err(_)
                        if String::from_utf8_lossy(line)
                            .to_lowercase()
                            .contains(r"\ud") =>
                    {
                        Value::String(String::from_utf8_lossy(line).into_owned())
                    }
                    Err(e) => panic!("client wrote bad JSON: {e}"),
                };
                self.sent.push(message);
                self.sent_at.push(self.now);
            }
            self.peer.handle(self.now, &wire);
        }
        let mut back = Vec::new();
        self.peer.transmit(&mut back);
        if !back.is_empty() {
            moved = true;
            self.client.handle_read(self.now, ConnId::STDIO, &back);
        }
        moved |= self.drain();
        moved
    }

    /// Polls every event, answering input requests.
    pub fn drain(&mut self) -> bool {
        let mut any = false;
        while let Some(ev) = self.client.poll_event() {
            any = true;
            if let Event::InputRequested { input, request, .. } = &ev
                && let Some(h) = &mut self.handler
            {
                let answer = h.answer(request);
                self.client
                    .respond(self.now, *input, answer)
                    .expect("respond");
            }
            self.events.push(ev);
        }
        any
    }

    /// Runs until `done` holds, jumping the clock to the next deadline when idle.
    /// Panics after `max` idle jumps without progress.
    pub fn run_until(&mut self, mut done: impl FnMut(&Sim) -> bool) {
        let mut jumps = 0;
        while !done(self) {
            if self.step() {
                continue;
            }
            match self.client.poll_timeout() {
                Some(t) => {
                    if t > self.now {
                        self.now = t;
                    }
                    self.client.handle_timeout(self.now);
                    self.drain();
                    jumps += 1;
                    assert!(jumps < 1000, "simulation makes no progress");
                }
                None => panic!("simulation stalled: no timer, nothing to do"),
            }
        }
    }

    /// Runs until connected (or closed).
    pub fn connect(&mut self) {
        self.run_until(|s| {
            s.events
                .iter()
                .any(|e| matches!(e, Event::Connected(_) | Event::Closed { .. }))
        });
        self.step();
    }

    /// Starts a call and runs until it completes.
    pub fn call(
        &mut self,
        request: mcp_proto::client::CallRequest,
    ) -> Result<CallOutput, CallError> {
        let id = self.client.call(self.now, request).expect("call");
        self.run_until(|s| s.completion(id).is_some());
        self.completion(id).expect("completed")
    }

    /// The outcome of `call`, once completed.
    pub fn completion(&self, call: CallId) -> Option<Result<CallOutput, CallError>> {
        self.events.iter().find_map(|e| match e {
            Event::CallCompleted { call: c, outcome } if *c == call => Some(outcome.clone()),
            _ => None,
        })
    }

    /// A slow server: makes `request`, then each time it has sent a `method` request,
    /// lets `delay` pass and answers it with `answer(id, n)` (the request's id, the
    /// answer's number from 1), until the call completes. Panics past `most` answers.
    pub fn answer_each_after(
        &mut self,
        request: CallRequest,
        method: &str,
        delay: Duration,
        most: u32,
        mut answer: impl FnMut(&Value, u32) -> Value,
    ) -> SlowRun {
        let start = self.now;
        let call = self.client.call(self.now, request).expect("call accepted");
        let mut answered = 0;
        loop {
            self.step();
            self.advance(delay);
            if let Some(outcome) = self.completion(call) {
                let took = self.now.saturating_duration_since(start);
                return SlowRun {
                    outcome,
                    answered,
                    took,
                };
            }
            assert!(answered < most, "still going after {answered} answers");
            answered += 1;
            let Some(id) = self
                .sent_with_method(method)
                .last()
                .map(|m| m["id"].clone())
            else {
                panic!("no {method} request");
            };
            let message = answer(&id, answered);
            self.client
                .handle_read(self.now, ConnId::STDIO, format!("{message}\n").as_bytes());
            self.drain();
        }
    }

    /// Advances the fake clock.
    pub fn advance(&mut self, d: Duration) {
        self.now += d;
        self.client.handle_timeout(self.now);
        self.drain();
    }

    /// Messages the client sent with this method.
    pub fn sent_with_method(&self, method: &str) -> Vec<&Value> {
        self.sent
            .iter()
            .filter(|m| m.get("method").and_then(Value::as_str) == Some(method))
            .collect()
    }
}

/// Path to a file under `tests/vectors/`.
pub fn vector_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("vectors")
        .join(name)
}

/// A vector file, parsed.
pub fn load_vectors(name: &str) -> Value {
    let text = std::fs::read_to_string(vector_path(name)).expect("vector file");
    serde_json::from_str(&text).expect("vector JSON")
}

/// The Python interpreter scripted test servers run on, if there is one.
pub fn python() -> Option<&'static str> {
    ["python3", "python"].into_iter().find(|p| {
        std::process::Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// `target/<profile>/examples/<example>` of `package`, built (once per test process) by
/// `cargo build --example`: `cargo test -p mcp-tests` does not build another package's
/// examples, nor this one's when a single `--test` is picked, and a stale binary would
/// test old code.
///
/// # Panics
/// When the build fails or the binary is not where cargo puts it.
pub fn example_bin(package: &str, example: &str) -> PathBuf {
    static BUILT: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);
    let mut built = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let key = format!("{package}/{example}");
    if let Some(path) = built.as_ref().and_then(|m| m.get(&key)) {
        return path.clone();
    }
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test-binary>
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binary lives in target/<profile>/deps")
        .to_path_buf();
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "-q", "-p", package, "--example", example]);
    // Not this test's package variables: build scripts that watch them (ring's watches
    // CARGO_MANIFEST_DIR) would rebuild on every run, and again for the next `cargo test`.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
            "CARGO_PRIMARY_",
        ]
        .iter()
        .any(|p| name.starts_with(p))
            || name == "CARGO_TARGET_TMPDIR"
        {
            build.env_remove(&*name);
        }
    }
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let status = build.status().expect("run cargo build");
    assert!(
        status.success(),
        "building the {example} example of {package} failed"
    );
    let path = profile_dir
        .join("examples")
        .join(format!("{example}{}", std::env::consts::EXE_SUFFIX));
    assert!(path.exists(), "{} missing", path.display());
    built
        .get_or_insert_with(HashMap::new)
        .insert(key, path.clone());
    path
}
