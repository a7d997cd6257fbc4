//! From a server name (or a literal `http(s)://` URL) to a connected [`Client`]: config
//! lookup, the child's command and environment or the endpoint URL, era mode, input
//! handling, timeouts, progress, the wire log and the transcript (`--record`).

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use mcp_blocking::mcp_proto::client::{AcceptDefaults, ClientConfig, DeclineAll};
use mcp_blocking::mcp_proto::model::ClientCapabilities;
use mcp_blocking::mcp_proto::{EraMode, Limits};
use mcp_blocking::{Client, Direction, HttpOptions, Options, StdioCommand};

pub use crate::args::check_url;
use crate::args::{Global, InputMode};
use crate::auth;
use crate::config::{self, ServerEntry};
use crate::output::{self, Failure};
use crate::prompt::TerminalForm;
use crate::terminal::clean;

/// The client name and version sent to servers.
pub const CLIENT_NAME: &str = "mcp-cli";

/// Whether `server` is a literal endpoint URL rather than a configured name.
pub fn is_url(server: &str) -> bool {
    let lower = server.get(..8).unwrap_or(server).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// A configured server, looked up by name, or an entry for a literal `http(s)://` URL.
pub fn entry(global: &Global, name: &str) -> Result<ServerEntry, Failure> {
    if is_url(name) {
        check_url(name).map_err(Failure::Usage)?;
        return Ok(ServerEntry {
            command: None,
            args: Vec::new(),
            env: Vec::new(),
            url: Some(name.to_owned()),
            era: "auto".to_owned(),
            oauth: None,
            bearer_token_env: None,
            extra: serde_json::Map::new(),
        });
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
            "{name} is an HTTP server ({}), not a command",
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
        limits.connect_timeout = t;
        limits.probe_timeout = limits.probe_timeout.min(t);
    }
    ClientConfig::new(CLIENT_NAME, env!("CARGO_PKG_VERSION"))
        .era_mode(mode)
        .capabilities(caps)
        .limits(limits)
}

/// The `--record` file, once opened: every connection of the run appends its transcript,
/// one after the other (each starts with its header line).
static RECORD: OnceLock<Arc<Mutex<File>>> = OnceLock::new();

/// Creates (or empties) the `--record` file.
pub fn record_to(path: &Path) -> Result<(), Failure> {
    let file = File::create(path).map_err(|e| {
        Failure::Usage(format!(
            "cannot write the transcript to {}: {e}",
            path.display()
        ))
    })?;
    let _ = RECORD.set(Arc::new(Mutex::new(file)));
    Ok(())
}

/// Options: input handler, progress on a terminal, wire log with `-v`, transcript with
/// `--record`.
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
            let msg = clean(p.message.as_deref().unwrap_or(""));
            eprintln!("progress {}{total} {msg}", p.progress);
        });
    }
    if global.verbose {
        options = options.wire_log(|dir, line| {
            let arrow = match dir {
                Direction::Sent => "→",
                _ => "←",
            };
            eprintln!("{arrow} {}", clean(&String::from_utf8_lossy(line)));
        });
    }
    if let Some(file) = RECORD.get() {
        let file = Arc::clone(file);
        options = options.transcript(move |line| {
            let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
            // One write per line; a full disk loses the transcript, not the command.
            let _ = file.write_all(format!("{line}\n").as_bytes());
        });
    }
    options
}

/// Connects to the configured server `name`, or to a literal endpoint URL.
pub fn connect(global: &Global, name: &str, input: Option<InputMode>) -> Result<Client, Failure> {
    let entry = entry(global, name)?;
    connect_with(global, name, entry, input, &auth::Plan::for_run(global))
}

/// Connects to `entry` (named `name`), authorizing an HTTP server as `plan` allows.
pub fn connect_with(
    global: &Global,
    name: &str,
    entry: ServerEntry,
    input: Option<InputMode>,
    plan: &auth::Plan,
) -> Result<Client, Failure> {
    let input = if global.no_input {
        Some(InputMode::None)
    } else {
        input
    };
    let mode = era_mode(&entry, name)?;
    let input = input_mode(input);
    let config = client_config(global, mode, input);
    if let (None, Some(url)) = (&entry.command, &entry.url) {
        check_url(url).map_err(|m| Failure::Usage(format!("server {name}: {m}")))?;
        let mut http = HttpOptions::new();
        if let Some(t) = global.timeout {
            let default = http.connect_timeout;
            http = http.connect_timeout(t.min(default));
        }
        let (http, options) =
            auth::setup(name, &entry, url, http, options(global, input, name), plan)?;
        return Client::connect_http_with(url, config, options, http)
            .map_err(|e| auth::explain(e, name));
    }
    let cmd = command(&entry, name)?;
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
