//! A private home for fresh `mcp` CLI processes: their server config, credentials and
//! state live in a directory of their own under the target directory, removed on drop,
//! and no bearer token or browser of the caller's leaks in.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// A private config and state directory for the CLI.
pub struct CliHome {
    /// The directory (`HOME`; `MCP_CONFIG` is `servers.json` in it, `XDG_STATE_HOME` is
    /// `state/`).
    pub dir: PathBuf,
}

impl CliHome {
    /// A fresh, empty home at `root`/`test`-`pid` (a test passes a directory under its
    /// `CARGO_TARGET_TMPDIR`).
    pub fn new(root: impl Into<PathBuf>, test: &str) -> CliHome {
        let dir = root.into().join(format!("{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        CliHome { dir }
    }

    /// Where the CLI keeps credentials.
    pub fn credentials_dir(&self) -> PathBuf {
        self.dir.join("state").join("mcp").join("credentials")
    }

    /// How many credential files are stored.
    pub fn stored(&self) -> usize {
        std::fs::read_dir(self.credentials_dir()).map_or(0, Iterator::count)
    }

    /// `mcp args…` in this home, with no standard input.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(crate::example_bin("mcp-blocking", "mcp"));
        c.args(args)
            .env("MCP_CONFIG", self.dir.join("servers.json"))
            .env("XDG_STATE_HOME", self.dir.join("state"))
            .env("HOME", &self.dir)
            .env_remove("MCP_BEARER_TOKEN")
            .env_remove("BROWSER")
            .stdin(Stdio::null());
        c
    }

    /// Runs `mcp args…` to its end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run mcp")
    }
}

impl Drop for CliHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
