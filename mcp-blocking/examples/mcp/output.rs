//! Printing: aligned text for people, one JSON document for scripts, and the failure
//! report with its exit status.

use std::borrow::Cow;
use std::io::{self, IsTerminal, Write};

use std::process::ExitStatus;
use std::sync::{Mutex, PoisonError};

use mcp_blocking::mcp_proto::client::{CallError, CloseReason};
use mcp_blocking::{ClientHandle, Error};
use serde::Serialize;
use serde_json::json;

use crate::args::Format;
use crate::terminal::{self, clean, folded, one_line};

/// Why a command failed.
#[derive(Debug)]
pub enum Failure {
    /// Bad command line, unknown server name, unsupported feature: exit 2.
    Usage(String),
    /// The servers file cannot be read or written: exit 1.
    Config(String),
    /// Connecting or calling failed: exit 1.
    Mcp(Error),
    /// As `Mcp`, with the next step to take.
    Hinted(Error, String),
    /// The server asked for input nobody can give here (no terminal, or `--no-input`):
    /// what was asked, and the flag that answers it. Exit 1 in both eras.
    NeedsInput {
        /// What happened.
        message: String,
        /// The flags to pass.
        hint: String,
    },
    /// A transcript did not replay (or could not be read): exit 1.
    Replay(String),
    /// Credentials cannot be kept, or an authorization needs a person: exit 1.
    Auth(String),
}

/// Every error of the library becomes a failure here, whichever command met it: one that
/// timed out once connected to a stdio server that wrote a line to stdout that is no
/// JSON-RPC message (a log line, most often) quotes that line as its hint, as a failed
/// connect does in its message: the answer may have been lost in it.
impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        match stdout_line(&e) {
            Some(line) => Failure::Hinted(e, line),
            None => Failure::Mcp(e),
        }
    }
}

impl From<mcp_blocking::mcp_proto::client::CallError> for Failure {
    fn from(e: mcp_blocking::mcp_proto::client::CallError) -> Self {
        Error::from(e).into()
    }
}

/// The connected server's unreadable stdout line, quoted, for a timeout `e` that does not
/// quote it already (a connect error does).
fn stdout_line(e: &Error) -> Option<String> {
    if e.kind() != "timeout" || matches!(e, Error::Connect { .. }) {
        return None;
    }
    let server = SERVER.lock().unwrap_or_else(PoisonError::into_inner);
    Some(server.as_ref()?.unreadable_line()?.to_string())
}

impl Failure {
    fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Config(_)
            | Failure::Mcp(_)
            | Failure::Hinted(..)
            | Failure::NeedsInput { .. }
            | Failure::Replay(_)
            | Failure::Auth(_) => 1,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Usage(_) => "usage",
            Failure::Config(_) => "config",
            Failure::Replay(_) => "replay",
            Failure::Auth(_) => "authorization",
            Failure::Mcp(e) | Failure::Hinted(e, _) => e.kind(),
            Failure::NeedsInput { .. } => "input-needed",
        }
    }
}

impl Failure {
    /// What went wrong, in one line.
    pub fn message(&self) -> String {
        match self {
            Failure::Usage(m) | Failure::Config(m) | Failure::Replay(m) | Failure::Auth(m) => {
                m.clone()
            }
            Failure::Mcp(e) => e.to_string(),
            Failure::Hinted(e, hint) => format!("{e} (hint: {hint})"),
            Failure::NeedsInput { message, hint } => format!("{message} (hint: {hint})"),
        }
    }

    /// The MCP error behind it, if any.
    pub fn error(&self) -> Option<&Error> {
        error_of(self)
    }
}

/// Prints the failure (stderr for text, stdout for JSON) and returns the exit status.
pub fn report(format: Format, verbose: bool, failure: &Failure) -> u8 {
    let message = match failure {
        Failure::Usage(m) | Failure::Config(m) | Failure::Replay(m) | Failure::Auth(m) => m.clone(),
        Failure::Mcp(e) | Failure::Hinted(e, _) => e.to_string(),
        Failure::NeedsInput { message, .. } => message.clone(),
    };
    let error = match failure {
        Failure::Mcp(e) | Failure::Hinted(e, _) => Some(e),
        _ => None,
    };
    let hint = match failure {
        Failure::Hinted(_, hint) | Failure::NeedsInput { hint, .. } => Some(hint.as_str()),
        _ => None,
    };
    let (code, http_status) = error.map_or((None, None), |e| (e.code(), e.http_status()));
    match format {
        Format::Json => {
            let mut error = json!({
                "kind": failure.kind(),
                "message": message,
                "code": code,
                "httpStatus": http_status,
            });
            if let Some(data) = error_data(failure) {
                error["data"] = data;
            }
            if let Some(hint) = hint {
                error["hint"] = json!(hint);
            }
            let (status, tail) = error_of(failure).map(server_end).unwrap_or_default();
            if let Some(status) = status {
                error["exitStatus"] = json!(status.code());
            }
            if let Some(tail) = tail
                && !tail.trim().is_empty()
            {
                error["stderr"] = json!(last_lines(&tail, STDERR_LINES).join("\n"));
            }
            print_json(&json!({ "error": error }));
        }
        Format::Text => {
            // A server's error text can be megabytes; `--format json` keeps all of it.
            eprintln!("mcp: {}", clip(&clean(&message), MESSAGE_CHARS));
            match failure {
                Failure::Usage(_) => eprintln!("(run `mcp help` for usage)"),
                Failure::Mcp(e) | Failure::Hinted(e, _) => {
                    if message.contains("accept_pre_2025_06_versions") {
                        eprintln!(
                            "(to try the 2024-11-05 HTTP+SSE transport, add --accept-old-versions)"
                        );
                    }
                    let (status, tail) = server_end(e);
                    // A connect error's message says how the server ended already.
                    match status {
                        Some(status) if e.exit_status().is_none() => {
                            eprintln!("the server exited: {}", describe_exit(status));
                        }
                        Some(status) if status.code() == Some(127) => {
                            eprintln!("(status 127: a command was not found)");
                        }
                        _ => {}
                    }
                    if let Some(tail) = tail.filter(|t| !t.trim().is_empty()) {
                        let n = if verbose {
                            4 * STDERR_LINES
                        } else {
                            STDERR_LINES
                        };
                        eprintln!("server stderr (last lines):");
                        for line in last_lines(&tail, n) {
                            eprintln!("  | {}", clip(&clean(line), 200));
                        }
                    }
                    if let Some(hint) = hint {
                        eprintln!("hint: {}", clean(hint));
                    }
                    if e.kind() == "timeout" && !matches!(e, Error::Call(CallError::Task(_))) {
                        // The library names its own limits; here they are all `--timeout`.
                        eprintln!("(the limit is --timeout SECS)");
                    }
                }
                Failure::NeedsInput { hint, .. } => eprintln!("hint: {}", clean(hint)),
                Failure::Config(_) | Failure::Replay(_) | Failure::Auth(_) => {}
            }
        }
    }
    failure.exit_code()
}

/// Lines of a server's stderr shown with a failure (four times as many with `-v`).
const STDERR_LINES: usize = 10;

/// The stdio server of this run (of the latest connect, for a command that connects to
/// several), for how it ended when it exited during a call and for what it wrote to
/// stdout that was no message.
static SERVER: Mutex<Option<ClientHandle>> = Mutex::new(None);

/// Remembers the server of `handle` (`None`: none, when connecting to another server
/// starts), so that a failure because it exited can say how it did and what it last
/// wrote to stderr, and one because it did not answer can quote its unreadable stdout.
pub fn watch_server(handle: Option<ClientHandle>) {
    *SERVER.lock().unwrap_or_else(PoisonError::into_inner) = handle;
}

/// How the stdio server ended and its last stderr, for a failure it caused: from the
/// error when it never connected, from the client when it exited during a call (the
/// client was dropped, so the server was reaped, by the time a failure is reported).
fn server_end(e: &Error) -> (Option<ExitStatus>, Option<Cow<'_, str>>) {
    if let Error::Closed(CloseReason::ServerExited { .. }) = e
        && let Some(server) = SERVER
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
    {
        let status = server.process_exit().and_then(|s| s.status);
        return (status, Some(Cow::Owned(server.stderr_tail())));
    }
    (e.exit_status(), e.stderr_tail().map(Cow::Borrowed))
}

fn error_of(failure: &Failure) -> Option<&Error> {
    match failure {
        Failure::Mcp(e) | Failure::Hinted(e, _) => Some(e),
        _ => None,
    }
}

fn error_data(failure: &Failure) -> Option<serde_json::Value> {
    error_of(failure)?.error_object()?.data.clone()
}

/// An exit status in words: the code, or the signal that ended it.
fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    match status.code() {
        Some(127) => "status 127 (command not found)".to_owned(),
        Some(code) => format!("status {code}"),
        None => "unknown status".to_owned(),
    }
}

/// Characters of a failure's message printed as text.
const MESSAGE_CHARS: usize = 2000;

/// At most `max` characters of `line`, marked when cut.
pub fn clip(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

fn last_lines(text: &str, n: usize) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

/// Prints one JSON document on stdout (escaping what `serde_json` leaves for a terminal
/// to act on: see [`terminal::json`]).
pub fn print_json<T: Serialize + ?Sized>(value: &T) {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|e| {
        json!({"error": {"kind": "internal", "message": e.to_string(), "code": null, "httpStatus": null}})
            .to_string()
    });
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{}", terminal::json(&text));
}

/// Prints rows with every column but the last padded to the widest cell, every cell
/// [cleaned](clean) (they hold names, descriptions and messages servers chose).
pub fn table(rows: &[Vec<String>]) {
    let mut out = io::stdout().lock();
    for line in table_lines(rows, TABLE_WIDTH) {
        let _ = writeln!(out, "{line}");
    }
}

/// The widest a text table gets.
pub const TABLE_WIDTH: usize = 100;

/// The fewest columns the last column of a table is given.
const MIN_LAST: usize = 20;

/// The lines of a table at most `width` columns wide: every column but the last is at
/// most a third of the width (longer cells are cut with `…`), and the last column wraps
/// at word boundaries onto lines indented to where it starts.
pub fn table_lines(rows: &[Vec<String>], width: usize) -> Vec<String> {
    let rows: Vec<Vec<Cow<'_, str>>> = rows
        .iter()
        .map(|row| {
            // Leading cells are names and URIs, one line each; the last is free text,
            // wrapped here, so its line breaks are folded into spaces.
            let last = row.len().saturating_sub(1);
            row.iter()
                .enumerate()
                .map(|(i, cell)| {
                    if i < last {
                        one_line(cell)
                    } else {
                        folded(cell)
                    }
                })
                .collect()
        })
        .collect();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let natural = |cap: usize| {
        let mut widths = vec![0; columns];
        for row in &rows {
            for (i, cell) in row.iter().enumerate() {
                if i + 1 < row.len() {
                    widths[i] = widths[i].max(cell.chars().count().min(cap));
                }
            }
        }
        widths
    };
    // Cut the leading columns only when the table would not fit otherwise.
    let mut widths = natural(usize::MAX);
    let last = rows
        .iter()
        .filter_map(|r| r.last())
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0);
    let used = |widths: &[usize]| widths.iter().map(|w| w + 2).sum::<usize>();
    if used(&widths) + last > width {
        // Each leading column at most a third of the width, less when there are more
        // than two of them: the last column keeps at least `MIN_LAST` columns.
        let full = widths;
        let capped = |cap: usize| full.iter().map(|w| (*w).min(cap)).collect::<Vec<_>>();
        let mut cap = (width / 3).max(8);
        widths = capped(cap);
        while used(&widths) + MIN_LAST > width && cap > 1 {
            cap -= 1;
            widths = capped(cap);
        }
    }
    let mut lines = Vec::new();
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                let start = line.chars().count();
                let room = width.saturating_sub(start).max(MIN_LAST);
                let mut wrapped = wrap(cell, room).into_iter();
                line.push_str(&wrapped.next().unwrap_or_default());
                lines.push(line.trim_end().to_owned());
                line = String::new();
                for more in wrapped {
                    lines.push(format!("{}{more}", " ".repeat(start)));
                }
            } else {
                let shown = if cell.chars().count() > widths[i] {
                    clip(cell, widths[i].saturating_sub(1))
                } else {
                    cell.to_string()
                };
                let pad = widths[i] - shown.chars().count() + 2;
                line.push_str(&shown);
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        if !line.is_empty() {
            lines.push(line.trim_end().to_owned());
        }
    }
    lines
}

/// `text` cut into lines of at most `room` characters, at spaces where possible.
fn wrap(text: &str, room: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let current = lines.last_mut().expect("one line at least");
        let used = current.chars().count();
        let len = word.chars().count();
        if used > 0 && used + 1 + len > room {
            lines.push(String::new());
        } else if used > 0 {
            current.push(' ');
        }
        let mut rest: Vec<char> = word.chars().collect();
        while rest.len() > room {
            let head: String = rest.drain(..room).collect();
            let current = lines.last_mut().expect("one line at least");
            current.push_str(&head);
            lines.push(String::new());
        }
        let current = lines.last_mut().expect("one line at least");
        current.extend(rest);
    }
    lines
}

/// One line of a description: the first line, shortened to `max` characters.
pub fn short(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or("").trim();
    if first.chars().count() <= max {
        first.to_owned()
    } else {
        let cut: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Whether progress is worth showing (stderr is a terminal).
pub fn show_progress() -> bool {
    io::stderr().is_terminal()
}

#[cfg(test)]
mod table_width {
    use super::*;

    /// docs/cli.md: "Text tables fit 100 columns (leading columns cut with `…`, the last
    /// one wrapped)", also for the four-column tables (`tasks`, `skills`).
    #[test]
    fn a_four_column_table_fits_its_width() {
        let long = |c: char| std::iter::repeat_n(c, 60).collect::<String>();
        let rows = vec![vec![
            long('a'),
            long('b'),
            long('c'),
            "a message of several words that has to wrap somewhere".to_owned(),
        ]];
        for line in table_lines(&rows, TABLE_WIDTH) {
            assert!(
                line.chars().count() <= TABLE_WIDTH,
                "{} columns: {line}",
                line.chars().count()
            );
        }
    }
}
