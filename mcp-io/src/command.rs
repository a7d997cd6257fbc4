//! What to run as a stdio server: [`StdioCommand`], its program lookup, and the
//! [`std::process::Command`] both adapters start it with.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Default number of stderr bytes kept (the newest ones): 64 KiB.
pub const DEFAULT_STDERR_LIMIT: usize = 64 * 1024;

/// How to start a stdio MCP server: program, arguments, working directory and the only
/// environment variables the child will see.
///
/// * The child starts with an **empty environment**. Name what it needs with
///   [`pass_env`](Self::pass_env) (copies this process's value each time the child
///   starts; never stored) or set a value with [`env`](Self::env).
/// * A program name without a directory part is looked up on this process's `PATH`
///   before spawning (see [`resolve_program`](Self::resolve_program)), so `node` or
///   `npx` work without handing `PATH` to the child.
/// * stdin and stdout carry the protocol; stderr is captured into a bounded buffer (the
///   newest [`stderr_limit`](Self::stderr_limit) bytes) and never mixed into the
///   protocol.
/// * On Unix the server runs in **its own process group** (its pid is the group id), so
///   closing the client ends everything it started too: what `npx` or a shell script
///   runs underneath, not only the direct child (see [`ending`](crate::ending)). A
///   consequence: a terminal's Ctrl-C (`SIGINT` to the foreground group) no longer
///   reaches the server directly; this process gets it, and closing the client (or
///   dropping it) ends the server within the grace period.
///
/// `Debug` shows variable names, never values. `mcp-blocking` and `mcp-smol` both use
/// this type (re-exported as `mcp_blocking::StdioCommand` and `mcp_smol::StdioCommand`).
///
/// ```
/// use mcp_io::StdioCommand;
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
    /// A later [`pass_env`](Self::pass_env) or [`env`](Self::env) of the same name
    /// replaces this one.
    #[must_use]
    pub fn pass_env(mut self, name: impl Into<OsString>) -> Self {
        self.set_env(name.into(), EnvValue::FromParent);
        self
    }

    /// Sets the child's variable `name` to `value`. A later
    /// [`pass_env`](Self::pass_env) or [`env`](Self::env) of the same name replaces
    /// this one.
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

    /// How many bytes of the child's stderr are kept (the tail), as set by
    /// [`StdioCommand::stderr_limit`].
    #[must_use]
    pub fn stderr_bytes_kept(&self) -> usize {
        self.stderr_limit
    }

    /// The program path to execute.
    ///
    /// * A program with a directory part (`./server`, `bin/server`, `/usr/bin/node`) is
    ///   used as given, and a relative one is relative to **this** process's working
    ///   directory even when [`cwd`](Self::cwd) is set (made absolute here, because the
    ///   standard library leaves that case platform-dependent).
    /// * A bare name is looked up on this process's `PATH`: the first entry holding an
    ///   executable file of that name wins (on Windows also with each `PATHEXT`
    ///   extension). **Empty `PATH` entries are skipped**: a POSIX shell reads them as
    ///   the current directory, but a library that starts programs must not pick one
    ///   up from wherever its host happens to run.
    ///
    /// The lookup is done here rather than by the OS because the child runs with a
    /// cleared environment: the OS would search the child's (empty) `PATH`, or a
    /// platform default, depending on the platform.
    ///
    /// # Errors
    /// [`io::ErrorKind::InvalidInput`] for an empty program name,
    /// [`io::ErrorKind::NotFound`] when no `PATH` entry has it, and the error of
    /// reading the working directory.
    pub fn resolve_program(&self) -> io::Result<PathBuf> {
        let program = Path::new(&self.program);
        if self.program.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "empty program name",
            ));
        }
        if program.components().count() != 1 || program.is_absolute() {
            if program.is_relative() && self.cwd.is_some() {
                return Ok(std::env::current_dir()?.join(program));
            }
            return Ok(program.to_path_buf());
        }
        let search = std::env::var_os("PATH").unwrap_or_default();
        for dir in std::env::split_paths(&search) {
            if dir.as_os_str().is_empty() {
                continue;
            }
            for candidate in candidates(&dir, program) {
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

    /// The command that starts the server: the [resolved](Self::resolve_program)
    /// program, the arguments, the working directory, a cleared environment holding
    /// only the named variables (parent values read now), stdin, stdout and stderr
    /// piped, and on Unix a new process group led by the server (`process_group(0)`).
    ///
    /// `mcp-blocking` spawns it as it is; `mcp-smol` converts it into an async
    /// `Command` (`async_process::Command: From<std::process::Command>`), which has to
    /// set the pipes again because that conversion resets them.
    ///
    /// # Errors
    /// As [`resolve_program`](Self::resolve_program).
    pub fn to_command(&self) -> io::Result<Command> {
        let mut command = Command::new(self.resolve_program()?);
        command
            .args(&self.args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &self.cwd {
            command.current_dir(dir);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        for (name, value) in &self.env {
            match value {
                EnvValue::Set(value) => {
                    command.env(name, value);
                }
                EnvValue::FromParent => {
                    if let Some(value) = std::env::var_os(name) {
                        command.env(name, value);
                    }
                }
            }
        }
        Ok(command)
    }

    fn set_env(&mut self, name: OsString, value: EnvValue) {
        self.env.retain(|(n, _)| *n != name);
        self.env.push((name, value));
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
    fn later_env_entries_replace_earlier_ones() {
        let cmd = StdioCommand::new("x")
            .env("A", "1")
            .pass_env("B")
            .pass_env("A");
        assert_eq!(cmd.env_names().collect::<Vec<_>>(), ["B", "A"]);
    }

    #[test]
    fn paths_with_a_directory_are_not_searched() {
        let cmd = StdioCommand::new("./nope/x");
        assert_eq!(cmd.resolve_program().unwrap(), PathBuf::from("./nope/x"));
        let abs = StdioCommand::new("/no/such/bin");
        assert_eq!(
            abs.resolve_program().unwrap(),
            PathBuf::from("/no/such/bin")
        );
    }

    #[test]
    fn relative_paths_are_relative_to_this_process_even_with_a_cwd() {
        let cmd = StdioCommand::new("./server").cwd("/somewhere/else");
        let here = std::env::current_dir().unwrap();
        assert_eq!(cmd.resolve_program().unwrap(), here.join("./server"));
    }

    #[test]
    fn unknown_and_empty_names_are_errors() {
        let e = StdioCommand::new("mcp-io-no-such-program-xyz")
            .resolve_program()
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("not found on PATH"), "{e}");
        let e = StdioCommand::new("").resolve_program().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(StdioCommand::new("").to_command().is_err());
    }

    #[cfg(unix)]
    #[test]
    fn bare_names_resolve_on_path() {
        let sh = StdioCommand::new("sh").resolve_program().unwrap();
        assert!(sh.is_absolute(), "{}", sh.display());
    }

    #[test]
    fn the_command_has_only_the_named_environment() {
        let cmd = StdioCommand::new("/bin/true")
            .arg("-x")
            .cwd("/tmp")
            .env("SET", "1")
            .pass_env("MCP_HOST_SURELY_UNSET_VARIABLE");
        let std = cmd.to_command().unwrap();
        assert_eq!(std.get_program(), "/bin/true");
        assert_eq!(std.get_args().collect::<Vec<_>>(), ["-x"]);
        assert_eq!(std.get_current_dir(), Some(Path::new("/tmp")));
        // `env_clear` plus one variable set; the unset parent variable is left out.
        let envs: Vec<_> = std.get_envs().collect();
        assert_eq!(envs, [(OsStr::new("SET"), Some(OsStr::new("1")))]);
    }
}
