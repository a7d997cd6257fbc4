//! The server's child process: spawning it with an isolated environment, the threads that
//! move its bytes, and a shutdown that is bounded in time.
//!
//! # Threads
//!
//! Each child gets three small threads:
//!
//! * a **reader** that reads the child's stdout in chunks and sends them over a bounded
//!   channel ([`READ_QUEUE_CHUNKS`] chunks of at most [`READ_CHUNK`] bytes), followed by one
//!   end-of-file message. A server that floods stdout blocks on its own pipe instead of
//!   growing our memory;
//! * a **writer** that writes what the caller's thread hands it to the child's stdin.
//!   The design guide has the caller's thread write stdin itself; we do not, because a
//!   blocking write to a child that is itself blocked writing stdout (our read queue being
//!   full while the caller is busy) would deadlock both sides. The writer only ever holds
//!   our own requests, so its queue is bounded by what the caller sends;
//! * a **stderr collector** that keeps the last bytes of the child's stderr in a bounded
//!   buffer ([`StderrTail`]). Stderr is never mixed into the protocol.
//!
//! # Shutdown
//!
//! Closing drops the writer's queue, so the child's stdin is closed once pending bytes are
//! written; the child then has a grace period to exit before it is killed. It is always
//! reaped. The threads are then joined for a short while only: a grandchild that inherited
//! the pipes can keep them open for as long as it lives, and we never hang on it (such a
//! thread is detached and ends when the pipe closes).
//!
//! The 2026 stdio text asks for SIGTERM between closing stdin and SIGKILL. The standard
//! library can only send SIGKILL ([`Child::kill`]) and this crate forbids `unsafe`, so the
//! escalation goes straight from the stdin EOF plus grace period to a kill.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::error::Error;

/// Bytes read from the child's stdout in one go.
pub(crate) const READ_CHUNK: usize = 64 * 1024;
/// Chunks of stdout waiting for the caller's thread before the reader blocks.
pub(crate) const READ_QUEUE_CHUNKS: usize = 64;
/// Default size of the stderr tail kept per client.
pub const DEFAULT_STDERR_LIMIT: usize = 64 * 1024;
/// How long shutdown waits for the IO threads after the child is reaped.
const THREAD_JOIN_WAIT: Duration = Duration::from_millis(250);

/// How to start a stdio MCP server: program, arguments, working directory and the only
/// environment variables the child will see.
///
/// The child starts with an **empty environment**. Name what it needs with
/// [`StdioCommand::pass_env`] (copies the parent's value when the child starts) or set a
/// value with [`StdioCommand::env`]. `PATH` is not passed implicitly; a program given
/// without a slash is looked up on the parent's `PATH` before spawning, so `node` or
/// `npx` work without handing `PATH` to the child.
///
/// `Debug` shows variable names, never values.
///
/// ```
/// use mcp_blocking::StdioCommand;
///
/// let cmd = StdioCommand::new("node")
///     .arg("server.js")
///     .pass_env("HOME")
///     .env("LOG_LEVEL", "debug");
/// assert_eq!(cmd.program(), "node");
/// assert_eq!(cmd.env_names().collect::<Vec<_>>(), ["HOME", "LOG_LEVEL"]);
/// assert!(!format!("{cmd:?}").contains("debug"));
/// ```
#[derive(Clone)]
pub struct StdioCommand {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, EnvValue)>,
    stderr_limit: usize,
}

#[derive(Clone)]
enum EnvValue {
    /// Copy the parent's value at spawn time (skipped when the parent has none).
    FromParent,
    Set(OsString),
}

impl StdioCommand {
    /// A command running `program` with no arguments and an empty environment.
    #[must_use]
    pub fn new(program: impl Into<OsString>) -> Self {
        StdioCommand {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            stderr_limit: DEFAULT_STDERR_LIMIT,
        }
    }

    /// Adds one argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Runs the child in `dir` (default: the parent's working directory).
    #[must_use]
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Passes the parent's variable `name` to the child, read when the child starts (and
    /// again on every restart). Nothing is set when the parent has no such variable.
    #[must_use]
    pub fn pass_env(mut self, name: impl Into<OsString>) -> Self {
        self.set_env(name.into(), EnvValue::FromParent);
        self
    }

    /// Sets the child's variable `name` to `value`.
    #[must_use]
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.set_env(name.into(), EnvValue::Set(value.into()));
        self
    }

    /// Keeps at most `bytes` of the child's stderr (the newest). Default
    /// [`DEFAULT_STDERR_LIMIT`].
    #[must_use]
    pub fn stderr_limit(mut self, bytes: usize) -> Self {
        self.stderr_limit = bytes;
        self
    }

    /// The program as given.
    #[must_use]
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// The arguments.
    #[must_use]
    pub fn arguments(&self) -> &[OsString] {
        &self.args
    }

    /// The working directory, when one was set.
    #[must_use]
    pub fn working_dir(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// The names of the variables the child will see (values are never exposed).
    pub fn env_names(&self) -> impl Iterator<Item = &OsStr> {
        self.env.iter().map(|(name, _)| name.as_os_str())
    }

    fn set_env(&mut self, name: OsString, value: EnvValue) {
        self.env.retain(|(n, _)| *n != name);
        self.env.push((name, value));
    }

    /// The program path to execute: as given when it contains a path separator (relative
    /// to the parent's working directory), else the first executable match on the
    /// parent's `PATH`.
    ///
    /// # Errors
    /// [`io::ErrorKind::NotFound`] when no `PATH` entry has it.
    pub fn resolve_program(&self) -> io::Result<PathBuf> {
        let program = Path::new(&self.program);
        if program.components().count() != 1 || self.program.is_empty() {
            // A relative path means the parent's directory, whatever `cwd` says (the
            // standard library leaves that ambiguous).
            if program.is_relative() && self.cwd.is_some() {
                return Ok(std::env::current_dir()?.join(program));
            }
            return Ok(program.to_path_buf());
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        for dir in std::env::split_paths(&path) {
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            };
            for candidate in candidates(&dir, &self.program) {
                if is_executable(&candidate) {
                    return Ok(candidate);
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            "not found on PATH (give a path, or check PATH)",
        ))
    }

    pub(crate) fn stderr_bytes(&self) -> usize {
        self.stderr_limit
    }

    pub(crate) fn display_program(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }
}

impl fmt::Debug for StdioCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env_names", &self.env_names().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

#[cfg(windows)]
fn candidates(dir: &Path, program: &OsStr) -> Vec<PathBuf> {
    let mut out = vec![dir.join(program)];
    for ext in ["exe", "cmd", "bat", "com"] {
        out.push(dir.join(program).with_extension(ext));
    }
    out
}

#[cfg(not(windows))]
fn candidates(dir: &Path, program: &OsStr) -> [PathBuf; 1] {
    [dir.join(program)]
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// How a server process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Shutdown {
    /// Its exit status, when it could be collected.
    pub status: Option<ExitStatus>,
    /// True when it did not exit within the grace period and was killed.
    pub killed: bool,
}

/// The newest bytes of a child's stderr, bounded.
#[derive(Debug)]
pub(crate) struct StderrTail {
    buf: Mutex<VecDeque<u8>>,
    limit: usize,
}

impl StderrTail {
    pub(crate) fn new(limit: usize) -> Self {
        StderrTail {
            buf: Mutex::new(VecDeque::new()),
            limit,
        }
    }

    fn push(&self, data: &[u8]) {
        let mut buf = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        let data = &data[data.len().saturating_sub(self.limit)..];
        let excess = (buf.len() + data.len()).saturating_sub(self.limit);
        buf.drain(..excess);
        buf.extend(data);
    }

    /// The kept bytes as text (invalid UTF-8 replaced).
    pub(crate) fn text(&self) -> String {
        let buf = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        let (a, b) = buf.as_slices();
        let mut bytes = Vec::with_capacity(buf.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// What the reader thread reports.
#[derive(Debug)]
pub(crate) enum FromChild {
    /// Bytes from stdout.
    Data(Vec<u8>),
    /// Stdout ended (the child exited or closed it, or reading failed).
    Eof,
}

/// A running server process and its IO threads.
#[derive(Debug)]
pub(crate) struct Process {
    child: Child,
    to_child: Option<Sender<Vec<u8>>>,
    from_child: Option<Receiver<FromChild>>,
    threads: Vec<JoinHandle<()>>,
    shutdown: Option<Shutdown>,
}

impl Process {
    /// Starts the child with exactly the environment `cmd` names.
    pub(crate) fn spawn(cmd: &StdioCommand, tail: &Arc<StderrTail>) -> Result<Process, Error> {
        let spawn_error = |source| Error::Spawn {
            program: cmd.display_program(),
            source,
        };
        let program = cmd.resolve_program().map_err(spawn_error)?;
        let mut command = Command::new(&program);
        command
            .args(&cmd.args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &cmd.cwd {
            command.current_dir(dir);
        }
        for (name, value) in &cmd.env {
            match value {
                EnvValue::Set(v) => {
                    command.env(name, v);
                }
                EnvValue::FromParent => {
                    if let Some(v) = std::env::var_os(name) {
                        command.env(name, v);
                    }
                }
            }
        }
        let mut child = command.spawn().map_err(spawn_error)?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(spawn_error(io::Error::other("child pipes missing")));
        };

        let (to_child, writer_rx) = mpsc::channel::<Vec<u8>>();
        let (reader_tx, from_child) = mpsc::sync_channel::<FromChild>(READ_QUEUE_CHUNKS);
        let mut threads = Vec::with_capacity(3);
        let spawned = [
            thread::Builder::new()
                .name("mcp-stdio-writer".into())
                .spawn(move || write_loop(stdin, &writer_rx)),
            thread::Builder::new()
                .name("mcp-stdio-reader".into())
                .spawn(move || read_loop(stdout, &reader_tx)),
            {
                let tail = Arc::clone(tail);
                thread::Builder::new()
                    .name("mcp-stdio-stderr".into())
                    .spawn(move || stderr_loop(stderr, &tail))
            },
        ];
        let mut failure = None;
        for t in spawned {
            match t {
                Ok(handle) => threads.push(handle),
                Err(e) => failure = Some(e),
            }
        }
        let mut process = Process {
            child,
            to_child: Some(to_child),
            from_child: Some(from_child),
            threads,
            shutdown: None,
        };
        if let Some(e) = failure {
            process.shutdown(Duration::ZERO);
            return Err(spawn_error(e));
        }
        Ok(process)
    }

    /// The OS process id.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// Hands bytes to the writer thread. Silently dropped once stdin is closed (the
    /// reader's end of file reports the exit).
    pub(crate) fn send(&self, bytes: Vec<u8>) {
        if let Some(tx) = &self.to_child {
            let _ = tx.send(bytes);
        }
    }

    /// Waits up to `timeout` (forever for `None`) for the reader thread.
    pub(crate) fn recv(&self, timeout: Option<Duration>) -> Received {
        let Some(rx) = &self.from_child else {
            return Received::Eof;
        };
        let got = match timeout {
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            Some(t) => rx.recv_timeout(t),
        };
        match got {
            Ok(FromChild::Data(d)) => Received::Data(d),
            Ok(FromChild::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => Received::Eof,
            Err(mpsc::RecvTimeoutError::Timeout) => Received::Timeout,
        }
    }

    /// Closes stdin, waits up to `grace` for the child to exit, kills it otherwise, reaps
    /// it, and joins the IO threads for a bounded time. Idempotent.
    pub(crate) fn shutdown(&mut self, grace: Duration) -> Shutdown {
        if let Some(done) = self.shutdown {
            return done;
        }
        drop(self.to_child.take());
        let deadline = Instant::now() + grace;
        let mut status = None;
        let mut pause = Duration::from_millis(1);
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => {
                    status = Some(s);
                    break;
                }
                Ok(None) => {}
                Err(_) => break,
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
        let killed = status.is_none();
        if killed {
            let _ = self.child.kill();
            status = self.child.wait().ok();
        }
        // Unblocks a reader waiting on a full queue.
        drop(self.from_child.take());
        join_bounded(std::mem::take(&mut self.threads), THREAD_JOIN_WAIT);
        let done = Shutdown { status, killed };
        self.shutdown = Some(done);
        done
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.shutdown(Duration::ZERO);
    }
}

/// One wait on the reader.
#[derive(Debug)]
pub(crate) enum Received {
    Data(Vec<u8>),
    Eof,
    Timeout,
}

fn write_loop(mut stdin: ChildStdin, rx: &Receiver<Vec<u8>>) {
    for chunk in rx {
        if stdin
            .write_all(&chunk)
            .and_then(|()| stdin.flush())
            .is_err()
        {
            break;
        }
    }
}

fn read_loop(mut stdout: impl Read, tx: &SyncSender<FromChild>) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match stdout.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if tx.send(FromChild::Data(buf[..n].to_vec())).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = tx.send(FromChild::Eof);
}

fn stderr_loop(mut stderr: impl Read, tail: &StderrTail) {
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => tail.push(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Joins the threads that finish within `wait`; the rest are detached.
fn join_bounded(threads: Vec<JoinHandle<()>>, wait: Duration) {
    let deadline = Instant::now() + wait;
    let mut pending = threads;
    loop {
        let (done, rest): (Vec<_>, Vec<_>) = pending.into_iter().partition(JoinHandle::is_finished);
        for t in done {
            let _ = t.join();
        }
        pending = rest;
        if pending.is_empty() || Instant::now() >= deadline {
            return;
        }
        thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_newest_bytes() {
        let t = StderrTail::new(5);
        t.push(b"abc");
        t.push(b"defg");
        assert_eq!(t.text(), "cdefg");
        t.push(b"0123456789");
        assert_eq!(t.text(), "56789");
    }

    #[test]
    fn later_env_entries_replace_earlier_ones() {
        let cmd = StdioCommand::new("x")
            .env("A", "1")
            .pass_env("B")
            .pass_env("A");
        assert_eq!(cmd.env_names().collect::<Vec<_>>(), ["B", "A"]);
    }

    #[test]
    fn programs_with_a_slash_are_not_searched() {
        let cmd = StdioCommand::new("./nope/x");
        assert_eq!(cmd.resolve_program().unwrap(), PathBuf::from("./nope/x"));
        let missing = StdioCommand::new("surely-no-such-program-mcp-blocking");
        assert_eq!(
            missing.resolve_program().unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
