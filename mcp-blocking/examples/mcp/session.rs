//! From a server name to a connected [`Client`]: config lookup, the child's command and
//! environment, era mode, input handling, timeouts, progress and the wire log.

use std::io::IsTerminal;
use std::time::Duration;

use mcp_blocking::mcp_proto::client::{AcceptDefaults, ClientConfig, DeclineAll};
use mcp_blocking::mcp_proto::model::ClientCapabilities;
use mcp_blocking::mcp_proto::{EraMode, Limits};
use mcp_blocking::{Client, Direction, Options, StdioCommand};

use crate::args::{Global, InputMode};
use crate::config::{self, ServerEntry};
use crate::output::{self, Failure};
use crate::prompt::TerminalForm;

/// The client name and version sent to servers.
pub const CLIENT_NAME: &str = "mcp-cli";

/// A configured server, looked up by name.
pub fn entry(global: &Global, name: &str) -> Result<ServerEntry, Failure> {
    if name.starts_with("http://") || name.starts_with("https://") {
        return Err(Failure::Usage(format!(
            "not supported yet: HTTP servers ({name}); stdio servers work"
        )));
    }
    let path = config::path(global.config.as_deref()).map_err(Failure::Config)?;
    let mut file = config::load(&path).map_err(Failure::Config)?;
    file.servers.remove(name).ok_or_else(|| {
        Failure::Usage(format!(
            "no server named {name:?} in {} (see `mcp list`, `mcp add`)",
            path.display()
        ))
    })
}

/// The child process of a stdio entry.
pub fn command(entry: &ServerEntry, name: &str) -> Result<StdioCommand, Failure> {
    let Some(program) = &entry.command else {
        return Err(Failure::Usage(format!(
            "not supported yet: {name} is an HTTP server ({})",
            entry.url.as_deref().unwrap_or("no url")
        )));
    };
    let mut cmd = StdioCommand::new(program).args(&entry.args);
    for var in &entry.env {
        cmd = cmd.pass_env(var);
    }
    Ok(cmd)
}

/// The era mode of an entry.
pub fn era_mode(entry: &ServerEntry, name: &str) -> Result<EraMode, Failure> {
    EraMode::parse(&entry.era).ok_or_else(|| {
        Failure::Usage(format!(
            "server {name}: era must be legacy, auto or modern, not {:?}",
            entry.era
        ))
    })
}

/// `--no-input` is the default when stdin is not a terminal.
pub fn input_mode(explicit: Option<InputMode>) -> InputMode {
    explicit.unwrap_or_else(|| {
        if std::io::stdin().is_terminal() {
            InputMode::Prompt
        } else {
            InputMode::None
        }
    })
}

/// Client configuration for an era mode and input mode.
pub fn client_config(global: &Global, mode: EraMode, input: InputMode) -> ClientConfig {
    let mut caps = match input {
        InputMode::None => ClientCapabilities::none(),
        InputMode::AutoAccept | InputMode::Prompt => ClientCapabilities::with_elicitation(),
    };
    if input == InputMode::Prompt {
        caps.elicitation_url = true;
    }
    let mut limits = Limits::default();
    if let Some(t) = global.timeout {
        limits.request_timeout = t;
        limits.initialize_timeout = t;
        limits.probe_timeout = limits.probe_timeout.min(t);
    }
    ClientConfig::new(CLIENT_NAME, env!("CARGO_PKG_VERSION"))
        .era_mode(mode)
        .capabilities(caps)
        .limits(limits)
}

/// Options: input handler, progress on a terminal, wire log with `-v`.
pub fn options(global: &Global, input: InputMode, server: &str) -> Options {
    let mut options = Options::new();
    options = match input {
        InputMode::None => options.input_handler(DeclineAll),
        InputMode::AutoAccept => options.input_handler(AcceptDefaults),
        InputMode::Prompt => options.input_handler(TerminalForm::new(server)),
    };
    if output::show_progress() {
        options = options.on_progress(|p| {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let msg = p.message.as_deref().unwrap_or("");
            eprintln!("progress {}{total} {msg}", p.progress);
        });
    }
    if global.verbose {
        options = options.wire_log(|dir, line| {
            let arrow = match dir {
                Direction::Sent => "→",
                _ => "←",
            };
            eprintln!("{arrow} {}", String::from_utf8_lossy(line));
        });
    }
    options
}

/// Connects to the configured server `name`.
pub fn connect(global: &Global, name: &str, input: Option<InputMode>) -> Result<Client, Failure> {
    let entry = entry(global, name)?;
    let cmd = command(&entry, name)?;
    let mode = era_mode(&entry, name)?;
    let input = input_mode(input);
    let config = client_config(global, mode, input);
    Ok(Client::connect_stdio_with(
        cmd,
        config,
        options(global, input, name),
    )?)
}

/// A bounded connection check: the timeout given, or 10 s.
pub fn probe_timeout(global: &Global) -> Duration {
    global.timeout.unwrap_or(Duration::from_secs(10))
}
