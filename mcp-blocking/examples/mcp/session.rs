//! From a server name (or a literal `http(s)://` URL) to a connected [`Client`]: config
//! lookup, the child's command and environment or the endpoint URL, era mode, input
//! handling, timeouts, progress, the wire log and the transcript (`--record`).

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use mcp_blocking::mcp_proto::client::{ClientConfig, DeclineAll, LogLevel};
use mcp_blocking::mcp_proto::model::ClientCapabilities;
use mcp_blocking::mcp_proto::{EraMode, Limits};
use mcp_blocking::{Client, Direction, HttpOptions, Options, StdioCommand};

pub use crate::args::check_url;
use crate::args::{Global, InputMode};
use crate::auth;
use crate::config::{self, ServerEntry};
use crate::extras::{self, WithSampling};
use crate::output::{self, Failure};
use crate::prompt::TerminalForm;
use crate::terminal::clean;

/// The client name and version sent to servers.
pub const CLIENT_NAME: &str = "mcp-cli";

/// The entry's `headerEnv` headers, each value read from its variable now (an unset or
/// empty one fails, naming it) and hidden from the wire log of `-v`.
fn with_headers(
    name: &str,
    entry: &ServerEntry,
    mut http: HttpOptions,
    mut options: Options,
) -> Result<(HttpOptions, Options), Failure> {
    for (header, var) in &entry.header_env {
        crate::args::check_header_name(header)
            .map_err(|u| Failure::Config(format!("server {name}: headerEnv: {}", u.0)))?;
        let value = std::env::var(var).unwrap_or_default();
        if value.trim().is_empty() {
            return Err(Failure::Config(format!(
                "server {name} sends header {header} from ${var}, which is not set"
            )));
        }
        http = http.header(header, value.trim());
        options = options.redact_header(header);
    }
    Ok((http, options))
}

/// A configured server, looked up by name, or an entry for a literal `http(s)://` URL.
pub fn entry(global: &Global, name: &str) -> Result<ServerEntry, Failure> {
    if crate::args::is_url(name) {
        check_url(name).map_err(Failure::Usage)?;
        return Ok(ServerEntry {
            command: None,
            args: Vec::new(),
            env: Vec::new(),
            url: Some(name.to_owned()),
            era: "auto".to_owned(),
            oauth: None,
            bearer_token_env: None,
            header_env: Default::default(),
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

/// Launchers that find the real server through `PATH` (and often need `HOME`): with
/// the empty environment a stdio server gets by default they cannot start it.
const LAUNCHERS: [&str; 14] = [
    "npx", "npm", "pnpm", "yarn", "bunx", "bun", "uvx", "uv", "node", "python", "python3", "sh",
    "bash", "deno",
];

/// For a URL with no path (`https://host`, `https://host/`): where MCP endpoints
/// usually are.
fn path_hint(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let path = rest.find('/').map_or("", |at| &rest[at..]);
    let path = path.split(['?', '#']).next().unwrap_or("");
    (path.is_empty() || path == "/").then(|| {
        let base = url.trim_end_matches('/');
        format!("the URL has no path, and MCP endpoints are usually at /mcp: try {base}/mcp")
    })
}

/// The next step when `entry` runs a launcher without `PATH`: what to add.
pub fn launcher_hint(entry: &ServerEntry) -> Option<String> {
    let program = entry.command.as_deref()?;
    let base = std::path::Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    let launcher = LAUNCHERS.contains(&base);
    let has = |var: &str| entry.env.iter().any(|e| e == var);
    (launcher && !has("PATH")).then(|| {
        let missing = if has("HOME") {
            "--env PATH"
        } else {
            "--env PATH --env HOME"
        };
        format!(
            "{base} finds the server through PATH, and stdio servers start with an empty \
             environment: add `{missing}` to the entry (mcp add … --stdio {base} {missing} -- …)"
        )
    })
}

/// Whether a server that could not connect looks like it failed to find a program or a
/// file (exit status 127, or its stderr says so): only then is a missing `PATH` a likely
/// cause, and worth a hint.
fn looked_for_something(e: &mcp_blocking::Error) -> bool {
    const SAID: [&str; 5] = [
        "not found",
        "No such file",
        "ENOENT",
        "No interpreter",
        "cannot find",
    ];
    let status = e.exit_status().and_then(|s| s.code());
    let stderr = e.stderr_tail().unwrap_or_default();
    status == Some(127) || SAID.iter().any(|s| stderr.contains(s))
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

/// Off a terminal, nobody answers input (and a call that needs it says so).
pub fn input_mode(explicit: Option<InputMode>) -> InputMode {
    explicit.unwrap_or_else(|| {
        if std::io::stdin().is_terminal() {
            InputMode::Prompt
        } else {
            InputMode::Script
        }
    })
}

/// Client configuration for an era mode and input mode.
pub fn client_config(global: &Global, mode: EraMode, input: InputMode) -> ClientConfig {
    let mut caps = match input {
        InputMode::None => ClientCapabilities::none(),
        InputMode::AutoAccept | InputMode::Prompt | InputMode::Script => {
            ClientCapabilities::with_elicitation()
        }
    };
    if input == InputMode::Prompt {
        caps.elicitation_url = true;
    }
    caps.sampling = global.sampling_command.is_some();
    let mut limits = Limits::default();
    if let Some(t) = global.timeout {
        limits.request_timeout = t;
        limits.initialize_timeout = t;
        limits.connect_timeout = t;
        limits.probe_timeout = limits.probe_timeout.min(t);
    }
    let mut config = ClientConfig::new(CLIENT_NAME, env!("CARGO_PKG_VERSION"))
        .era_mode(mode)
        .capabilities(caps)
        .limits(limits);
    if global.accept_old_versions {
        config = config.accept_pre_2025_06_versions();
    }
    match extras::roots(&global.roots) {
        Ok(roots) if !roots.is_empty() => config.roots(roots),
        _ => config,
    }
}

/// The global flags with what the server's config entry adds: its `roots` after those
/// of `--root` (each made a `file://` URI now, so that a bad path is a usage error),
/// its `sampling` command and `logLevel` where the flags name none, and its
/// `acceptOldVersions` (`true`: as `--accept-old-versions`).
pub fn with_entry(global: &Global, entry: &ServerEntry) -> Result<Global, Failure> {
    let mut merged = global.clone();
    let strings = |key: &str| -> Vec<String> {
        match entry.extra.get(key) {
            Some(serde_json::Value::Array(list)) => list
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        }
    };
    merged.roots.extend(strings("roots"));
    merged.roots = extras::roots(&merged.roots)
        .map_err(Failure::Usage)?
        .into_iter()
        .map(|r| r.uri)
        .collect();
    if merged.sampling_command.is_none() {
        merged.sampling_command = strings("sampling").into_iter().next();
    }
    if merged.log_level.is_none() {
        merged.log_level = strings("logLevel").into_iter().next();
    }
    if entry.extra.get("acceptOldVersions") == Some(&serde_json::Value::Bool(true)) {
        merged.accept_old_versions = true;
    }
    Ok(merged)
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

/// The shortest time between two progress lines on a terminal.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Lets a line through at most once per period, and the last one of a run of lines.
struct Throttle {
    every: Duration,
    last: Option<std::time::Instant>,
    /// The line let through last said it was the last one.
    last_was_final: bool,
}

impl Throttle {
    fn new(every: Duration) -> Self {
        Throttle {
            every,
            last: None,
            last_was_final: false,
        }
    }

    /// Whether a line at `now` is shown. A `last_one` line is shown within the period
    /// too, unless the line shown before it was one: whether a line is the last is the
    /// server's to say, and a server that says it of every line is throttled all the same.
    fn admit(&mut self, now: std::time::Instant, last_one: bool) -> bool {
        let soon = self
            .last
            .is_some_and(|at| now.saturating_duration_since(at) < self.every);
        if soon && (!last_one || self.last_was_final) {
            return false;
        }
        self.last = Some(now);
        self.last_was_final = last_one;
        true
    }
}

/// Options: input handler, progress on a terminal, wire log with `-v`, transcript with
/// `--record`.
pub fn options(global: &Global, input: InputMode, server: &str) -> Options {
    let mut options = Options::new();
    let sampling = global.sampling_command.clone();
    // The sampling command gets as long as a request does.
    let limit = global.timeout.unwrap_or(Limits::default().request_timeout);
    options = match input {
        InputMode::None => options.input_handler(WithSampling::new(DeclineAll, sampling, limit)),
        InputMode::Script => {
            options.input_handler(WithSampling::new(extras::Unanswered, sampling, limit))
        }
        InputMode::AutoAccept => {
            options.input_handler(WithSampling::new(extras::AutoAccept, sampling, limit))
        }
        InputMode::Prompt => options.input_handler(WithSampling::new(
            TerminalForm::new(server),
            sampling,
            limit,
        )),
    };
    if global.log_level.is_some() {
        let server = server.to_owned();
        options =
            options.on_log(move |_, message| eprintln!("{}", extras::log_line(&server, message)));
    }
    if input == InputMode::Prompt {
        options = options.on_elicitation_complete(|id| {
            eprintln!(
                "The server says the step in the browser is done ({}).",
                clean(id)
            );
        });
    }
    if output::show_progress() {
        // A line at most every PROGRESS_EVERY (and the last one, when it says so): a
        // server that floods progress must not make the terminal the bottleneck.
        let mut throttle = Throttle::new(PROGRESS_EVERY);
        options = options.on_progress(move |p| {
            let finished = p.total.is_some_and(|t| p.progress >= t);
            if !throttle.admit(std::time::Instant::now(), finished) {
                return;
            }
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let msg = output::clip(&clean(p.message.as_deref().unwrap_or("")), 200);
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
    // A failure from now on is this server's, not one connected to before.
    output::watch_server(None);
    let input = if global.no_input {
        Some(InputMode::None)
    } else {
        input
    };
    let global = &with_entry(global, &entry)?;
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
        let (http, options) = with_headers(name, &entry, http, options(global, input, name))?;
        let (http, options) = auth::setup(name, &entry, url, http, options, plan)?;
        let client = Client::connect_http_with(url, config, options, http).map_err(|e| {
            match (e.http_status(), path_hint(url)) {
                (Some(404), Some(hint)) => Failure::Hinted(e, hint),
                _ => auth::explain(e, name),
            }
        })?;
        crate::interrupt::watch(client.canceller());
        return Ok(with_log_level(global, client));
    }
    let cmd = command(&entry, name)?;
    let client = Client::connect_stdio_with(cmd, config, options(global, input, name)).map_err(
        |e| match (launcher_hint(&entry), &e) {
            (Some(hint), mcp_blocking::Error::Connect { .. }) if looked_for_something(&e) => {
                Failure::Hinted(e, hint)
            }
            _ => Failure::Mcp(e),
        },
    )?;
    crate::interrupt::watch(client.canceller());
    output::watch_server(Some(client.handle()));
    Ok(with_log_level(global, client))
}

/// Asks for the server's log messages at `--log-level` and above, when the server
/// declared logging: `logging/setLevel` for a legacy server (a refusal is not fatal),
/// the per-request level of every request in 2026-07-28. A server that declared no
/// logging is not asked (the client would refuse the call locally).
fn with_log_level(global: &Global, mut client: Client) -> Client {
    let level = global.log_level.as_deref().and_then(LogLevel::parse);
    if let Some(level) = level
        && client.server().has_capability("logging")
        && let Err(e) = client.set_log_level(level)
    {
        eprintln!("the server did not take --log-level {level}: {e}");
    }
    client
}

/// A bounded connection check: the timeout given, or 10 s.
pub fn probe_timeout(global: &Global) -> Duration {
    global.timeout.unwrap_or(Duration::from_secs(10))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use mcp_blocking::mcp_proto::client::CloseReason;

    #[test]
    fn progress_is_shown_at_most_every_period_and_always_at_the_end() {
        let start = std::time::Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut throttle = Throttle::new(Duration::from_millis(100));
        let shown: Vec<u64> = (0..1000)
            .map(|i| i * 3)
            .filter(|&ms| throttle.admit(at(ms), false))
            .collect();
        // One line per 100 ms of a flood every 3 ms: at 0, 102, 204, …
        assert_eq!(shown.len(), 30, "{shown:?}");
        assert!(shown.windows(2).all(|w| w[1] - w[0] >= 100), "{shown:?}");
        assert!(throttle.admit(at(3000), true), "the last line always shows");
    }

    #[test]
    fn the_path_hint_is_given_only_when_something_was_not_found() {
        use std::os::unix::process::ExitStatusExt;
        let failed = |code: i32, stderr: &str| mcp_blocking::Error::Connect {
            reason: CloseReason::ServerExited { truncated: 0 },
            stderr: stderr.to_owned(),
            exit_status: Some(std::process::ExitStatus::from_raw(code << 8)),
            stdout: None,
        };
        assert!(looked_for_something(&failed(127, "")));
        assert!(looked_for_something(&failed(
            1,
            "/usr/bin/env: 'node': No such file or directory"
        )));
        // A server that started and said what went wrong is not helped by PATH.
        assert!(!looked_for_something(&failed(7, "bad config: port in use")));
    }
}

#[cfg(test)]
mod progress_flood {
    use super::*;

    /// docs/cli.md: a long call's progress shows "at most one line every 100 ms". Whether
    /// a line is the last is the server's to say (`progress` at `total`): a server that
    /// sends nothing but "last" lines must not get one line per notification.
    #[test]
    fn a_flood_of_final_progress_lines_is_throttled_too() {
        let start = std::time::Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut throttle = Throttle::new(PROGRESS_EVERY);
        let shown: Vec<u64> = (0..1000)
            .map(|i| i * 3)
            .filter(|&ms| throttle.admit(at(ms), true))
            .collect();
        assert!(shown.len() <= 30, "{} lines in 3 s: {shown:?}", shown.len());
    }
}
