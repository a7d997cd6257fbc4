//! What to run as a stdio server, and how it is started.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use smol::process::{Child, Command, Stdio};

use crate::Error;

/// Default number of stderr bytes kept (the most recent ones): 64 KiB.
pub const DEFAULT_STDERR_LIMIT: usize = 64 * 1024;

/// Default time a server gets to exit after its stdin is closed, before it is killed: 2 s.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A server program to start as a child process and speak MCP with over stdin/stdout.
///
/// * The child sees **no environment** except the variables named with
///   [`env`](Self::env); their values are read from this process each time the child is
///   started, and never stored.
/// * A program name without a path separator is looked up on this process's `PATH`
///   before spawning (the child itself gets no `PATH` unless you pass it through).
/// * stdin and stdout carry the protocol; stderr is captured by the
///   [`Driver`](crate::Driver) into a bounded buffer (the last
///   [`stderr_limit`](Self::stderr_limit) bytes), readable with
///   [`Client::stderr`](crate::Client::stderr), and never mixed into the protocol.
///
/// ```
/// use std::time::Duration;
/// use mcp_smol::StdioCommand;
///
/// let cmd = StdioCommand::new("npx")
///     .args(["-y", "@modelcontextprotocol/server-everything", "stdio"])
///     .env("HOME")
///     .env("PATH")
///     .shutdown_grace(Duration::from_millis(500));
/// assert_eq!(cmd.get_program(), "npx");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct StdioCommand {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<OsString>,
    current_dir: Option<PathBuf>,
    stderr_limit: usize,
    shutdown_grace: Duration,
}

impl StdioCommand {
    /// Runs `program` (a path, or a name looked up on `PATH`) with no arguments and an
    /// empty environment.
    pub fn new(program: impl Into<OsString>) -> Self {
        StdioCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
            stderr_limit: DEFAULT_STDERR_LIMIT,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds several arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Passes the environment variable `name` through to the child, with the value it
    /// has in this process when the child starts (absent here means absent there).
    pub fn env(mut self, name: impl Into<OsString>) -> Self {
        let name = name.into();
        if !self.env.contains(&name) {
            self.env.push(name);
        }
        self
    }

    /// Passes several environment variables through, by name.
    pub fn envs<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        for name in names {
            self = self.env(name);
        }
        self
    }

    /// The child's working directory (default: this process's).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// How many of the most recent stderr bytes to keep (default
    /// [`DEFAULT_STDERR_LIMIT`]). `0` keeps nothing; stderr is still drained so the
    /// server never blocks on it.
    pub fn stderr_limit(mut self, bytes: usize) -> Self {
        self.stderr_limit = bytes;
        self
    }

    /// How long the server may take to exit once its stdin is closed before it is killed
    /// (default [`DEFAULT_SHUTDOWN_GRACE`]).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// The program as given.
    #[must_use]
    pub fn get_program(&self) -> &OsStr {
        &self.program
    }

    /// The arguments.
    #[must_use]
    pub fn get_args(&self) -> &[OsString] {
        &self.args
    }

    /// The names of the environment variables passed through.
    #[must_use]
    pub fn get_env_names(&self) -> &[OsString] {
        &self.env
    }

    /// The stderr limit in bytes.
    #[must_use]
    pub fn get_stderr_limit(&self) -> usize {
        self.stderr_limit
    }

    /// The shutdown grace period.
    #[must_use]
    pub fn get_shutdown_grace(&self) -> Duration {
        self.shutdown_grace
    }

    /// Starts the child with stdin, stdout and stderr piped. It is killed if its handle
    /// is dropped (the driver normally closes stdin and waits first).
    pub(crate) fn spawn(&self) -> Result<Child, Error> {
        let spawn_error = |source: io::Error| Error::Spawn {
            program: self.program.to_string_lossy().into_owned(),
            source: Arc::new(source),
        };
        let program = resolve_program(&self.program).map_err(spawn_error)?;
        let mut cmd = Command::new(program);
        cmd.args(&self.args).env_clear();
        for name in &self.env {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        if let Some(dir) = &self.current_dir {
            cmd.current_dir(dir);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd.spawn().map_err(spawn_error)
    }
}

/// Resolves a bare program name against this process's `PATH`; anything with a
/// directory part is returned as is.
///
/// The child runs with a cleared environment, so leaving the lookup to the OS would
/// search the child's (empty) `PATH`, or a platform default, depending on the platform.
/// Looking the name up here makes the behaviour the same everywhere.
pub(crate) fn resolve_program(program: &OsStr) -> io::Result<PathBuf> {
    let path = Path::new(program);
    if program.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "empty program name",
        ));
    }
    if path.components().count() != 1 || path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&search) {
        // An empty entry means "the current directory" to a POSIX shell; a library that
        // starts programs should not pick one up from wherever it happens to run.
        if dir.as_os_str().is_empty() {
            continue;
        }
        for candidate in candidates(&dir, path) {
            if is_executable(&candidate) {
                return Ok(candidate);
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("`{}` was not found on PATH", path.display()),
    ))
}

#[cfg(not(windows))]
fn candidates(dir: &Path, name: &Path) -> Vec<PathBuf> {
    vec![dir.join(name)]
}

#[cfg(windows)]
fn candidates(dir: &Path, name: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.join(name)];
    if name.extension().is_none() {
        let exts = std::env::var("PATHEXT").unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".into());
        for ext in exts.split(';').filter(|e| !e.is_empty()) {
            let mut file = name.as_os_str().to_owned();
            file.push(ext);
            out.push(dir.join(file));
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_with_a_directory_are_not_searched() {
        assert_eq!(
            resolve_program(OsStr::new("./server")).unwrap(),
            PathBuf::from("./server")
        );
        assert_eq!(
            resolve_program(OsStr::new("/no/such/bin")).unwrap(),
            PathBuf::from("/no/such/bin")
        );
    }

    #[test]
    fn unknown_names_are_not_found() {
        let e = resolve_program(OsStr::new("mcp-smol-no-such-program-xyz")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("not found on PATH"), "{e}");
        assert!(resolve_program(OsStr::new("")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn bare_names_resolve_on_path() {
        let sh = resolve_program(OsStr::new("sh")).unwrap();
        assert!(sh.is_absolute(), "{}", sh.display());
    }
}
