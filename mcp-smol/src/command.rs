//! What to run as a stdio server, and how it is started.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use smol::process::{Child, Command, Stdio};

use crate::Error;

/// Default number of stderr bytes kept (the newest ones): 64 KiB.
pub const DEFAULT_STDERR_LIMIT: usize = 64 * 1024;

/// How to start a stdio MCP server: program, arguments, working directory and the only
/// environment variables the child will see.
///
/// * The child starts with an **empty environment**. Name what it needs with
///   [`pass_env`](Self::pass_env) (copies this process's value each time the child
///   starts; never stored) or set a value with [`env`](Self::env).
/// * A program name without a path separator is looked up on this process's `PATH`
///   before spawning, so `node` or `npx` work without handing `PATH` to the child.
/// * stdin and stdout carry the protocol; stderr is captured by the
///   [`Driver`](crate::Driver) into a bounded buffer (the newest
///   [`stderr_limit`](Self::stderr_limit) bytes), readable with
///   [`Client::stderr_tail`](crate::Client::stderr_tail), and never mixed into the
///   protocol.
///
/// `Debug` shows variable names, never values. The same type, with the same methods,
/// exists in `mcp-blocking`.
///
/// ```
/// use mcp_smol::StdioCommand;
///
/// let cmd = StdioCommand::new("npx")
///     .args(["-y", "@modelcontextprotocol/server-everything", "stdio"])
///     .pass_env("HOME")
///     .pass_env("PATH")
///     .env("LOG_LEVEL", "debug");
/// assert_eq!(cmd.program(), "npx");
/// assert_eq!(cmd.env_names().collect::<Vec<_>>(), ["HOME", "PATH", "LOG_LEVEL"]);
/// assert!(!format!("{cmd:?}").contains("debug"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct StdioCommand {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, EnvValue)>,
    stderr_limit: usize,
}

#[derive(Clone, PartialEq, Eq)]
enum EnvValue {
    /// Copy this process's value at spawn time (skipped when there is none).
    FromParent,
    Set(OsString),
}

impl StdioCommand {
    /// A command running `program` (a path, or a name looked up on `PATH`) with no
    /// arguments and an empty environment.
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

    /// Runs the child in `dir` (default: this process's working directory).
    #[must_use]
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Passes this process's variable `name` to the child, read when the child starts
    /// (and again if it is restarted). Nothing is set when there is no such variable.
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
    /// [`DEFAULT_STDERR_LIMIT`]. With `0` nothing is kept, but stderr is still drained so
    /// the server never blocks on it.
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

    /// The stderr limit in bytes.
    #[must_use]
    pub fn get_stderr_limit(&self) -> usize {
        self.stderr_limit
    }

    /// The program path to execute: as given when it has a directory part, else the
    /// first executable match on this process's `PATH`.
    ///
    /// # Errors
    /// [`io::ErrorKind::NotFound`] when no `PATH` entry has it.
    pub fn resolve_program(&self) -> io::Result<PathBuf> {
        resolve_program(&self.program)
    }

    fn set_env(&mut self, name: OsString, value: EnvValue) {
        self.env.retain(|(n, _)| *n != name);
        self.env.push((name, value));
    }

    /// Starts the child with stdin, stdout and stderr piped. It is killed if its handle
    /// is dropped (the driver normally closes stdin and waits first).
    pub(crate) fn spawn(&self) -> Result<Child, Error> {
        let spawn_error = |source: io::Error| Error::Spawn {
            program: self.program.to_string_lossy().into_owned(),
            source: Arc::new(source),
        };
        let program = self.resolve_program().map_err(spawn_error)?;
        let mut cmd = Command::new(program);
        cmd.args(&self.args).env_clear();
        for (name, value) in &self.env {
            match value {
                EnvValue::FromParent => {
                    if let Some(value) = std::env::var_os(name) {
                        cmd.env(name, value);
                    }
                }
                EnvValue::Set(value) => {
                    cmd.env(name, value);
                }
            }
        }
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd.spawn().map_err(spawn_error)
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
        // (mcp-blocking reads it as "."; the difference only shows with a `PATH` that has
        // an empty entry.)
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
