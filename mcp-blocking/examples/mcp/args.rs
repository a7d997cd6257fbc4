//! Command-line parsing by hand (no argument-parsing dependency).
//!
//! Global flags (`--format`, `--timeout`, `--config`, `--record`, `-v`) may appear anywhere before
//! `--`. Each command declares its own flags; a flag that takes a value always consumes
//! the next word, so `--arg text=-v` passes `-v` as a value.

use mcp_blocking::mcp_proto::client::LogLevel;
use std::path::PathBuf;
use std::time::Duration;

use mcp_blocking::mcp_proto::model::CompletionRef;

use crate::config::OAuthEntry;
use mcp_io::transcript::redact_url;

/// A usage error: exit status 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl Usage {
    pub fn new(msg: impl Into<String>) -> Self {
        Usage(msg.into())
    }
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

/// The flags every command takes.
#[derive(Debug, Clone, Default)]
pub struct Global {
    pub format: Format,
    pub timeout: Option<Duration>,
    pub config: Option<PathBuf>,
    /// `--record FILE`: the transcript of every connection goes there.
    pub record: Option<PathBuf>,
    pub verbose: bool,
    /// `--no-input`: never wait for a person (no form, no browser approval).
    pub no_input: bool,
    /// `--save-content DIR`: image, audio and embedded binary blocks are written there.
    pub save_content: Option<PathBuf>,
    /// `--root PATH`, repeatable: the roots offered to the server.
    pub roots: Vec<String>,
    /// `--sampling-command CMD`: answers sampling requests (JSON on stdin and stdout).
    pub sampling_command: Option<String>,
    /// `--log-level LEVEL`: the server's log messages at LEVEL and above, on stderr.
    pub log_level: Option<String>,
    /// `--accept-old-versions`: also accept 2024-11-05 and 2025-03-26, and try the
    /// 2024-11-05 HTTP+SSE transport when a URL refuses Streamable HTTP.
    pub accept_old_versions: bool,
}

/// How requests for input are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    /// On a terminal: ask the person.
    Prompt,
    /// `--auto-accept`: schema defaults.
    AutoAccept,
    /// `--no-input`: no elicitation capability at all.
    None,
    /// The default off a terminal: forms are declared, so that a server asks the same
    /// way in both eras, but nobody answers; a call that needed input fails saying so.
    Script,
}

/// What to do.
#[derive(Debug, Clone)]
pub enum Command {
    Help,
    /// `mcp help <command>`.
    HelpOn(String),
    /// `mcp --version`.
    Version,
    Add {
        name: String,
        /// `--stdio <command>`.
        command: Option<String>,
        /// `--url <url>`, already checked (https, or http to loopback).
        url: Option<String>,
        args: Vec<String>,
        env: Vec<String>,
        era: String,
        /// `--oauth-*`, for `--url` servers.
        oauth: Option<Box<OAuthEntry>>,
        /// `--bearer-token-env NAME`.
        bearer_token_env: Option<String>,
        /// `--header-env HEADER=NAME`, repeated.
        header_env: std::collections::BTreeMap<String, String>,
    },
    List,
    Get {
        name: String,
    },
    Remove {
        name: String,
    },
    Tools {
        server: String,
    },
    Call {
        server: String,
        tool: String,
        args_json: Option<String>,
        args: Vec<(String, String)>,
        input: Option<InputMode>,
        /// `--task [--task-ttl SECS]`: run as a task, its status on stderr.
        task: Option<TaskFlags>,
    },
    /// `mcp tasks <server>`: `tasks/list` (2025-11-25).
    Tasks {
        server: String,
    },
    Resources {
        server: String,
    },
    Read {
        server: String,
        uri: String,
        input: Option<InputMode>,
    },
    Prompts {
        server: String,
    },
    /// `mcp skills <server> [<skill>] [--file PATH]`.
    Skills {
        server: String,
        /// A skill's name (unique in the listing) or the URI of its `SKILL.md`: load it.
        skill: Option<String>,
        /// `--file PATH`: then read this file of the loaded skill.
        file: Option<String>,
        /// `--dir PATH`: then list this directory of the loaded skill.
        dir: Option<String>,
    },
    Complete {
        server: String,
        reference: CompletionRef,
        argument: String,
        value: String,
        /// `--arg key=value`: arguments already chosen (`context.arguments`).
        context: Vec<(String, String)>,
    },
    Prompt {
        server: String,
        name: String,
        args: Vec<(String, String)>,
        input: Option<InputMode>,
    },
    Listen {
        server: String,
        /// `--resource <uri>`, repeatable.
        resources: Vec<String>,
        /// `--list-changed`: the tools, prompts and resources lists.
        list_changed: bool,
        /// `--max-events N`: stop after N notifications.
        max_events: Option<u64>,
        /// `--tasks`: task status notifications too; `--task ID` (repeatable) names the
        /// tasks to listen to in 2026-07-28, where push is per task.
        tasks: Option<Vec<String>>,
    },
    Test {
        name: String,
    },
    Status {
        name: Option<String>,
        connect: bool,
    },
    Doctor {
        connect: bool,
    },
    Auth {
        action: AuthAction,
        name: String,
        /// `auth login --scopes`.
        scopes: Vec<String>,
        /// `auth login --no-browser`.
        no_browser: bool,
    },
    Demo,
    Replay {
        file: PathBuf,
    },
    /// `mcp import FILE [--dry-run]`: the servers of another client's config.
    Import {
        file: PathBuf,
        dry_run: bool,
    },
    ServeExample {
        era: String,
        /// `--http ADDR`: a loopback socket address to serve Streamable HTTP on.
        http: Option<String>,
        /// `--tasks`: add the task tool `slow`.
        tasks: bool,
        /// `--sse-polling` (HTTP only): a 2025-11-25 session's SSE answers to POSTs are
        /// the priming event and `retry:`; clients resume them with `GET` and
        /// `Last-Event-ID`.
        sse_polling: bool,
        /// `--oauth` (HTTP only): bearer tokens needed, from the built-in authorization
        /// server that approves at once.
        oauth: bool,
        /// `--redis URL` (HTTP only): sessions, events and single-use nonces in Redis.
        redis: Option<String>,
        /// `--state-key-file FILE`: the `requestState` keys every process shares.
        state_key_file: Option<PathBuf>,
    },
}

impl Command {
    /// The server a command connects to, when it connects to one by name.
    pub fn server(&self) -> Option<&str> {
        match self {
            Command::Tools { server }
            | Command::Call { server, .. }
            | Command::Tasks { server }
            | Command::Resources { server }
            | Command::Read { server, .. }
            | Command::Prompts { server }
            | Command::Skills { server, .. }
            | Command::Complete { server, .. }
            | Command::Prompt { server, .. }
            | Command::Listen { server, .. } => Some(server),
            Command::Test { name } => Some(name),
            _ => None,
        }
    }
}

/// `mcp auth <action>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthAction {
    Login,
    Status,
    Logout,
}

/// A parsed command line.
#[derive(Debug)]
pub struct Invocation {
    pub global: Global,
    pub command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `--flag VALUE`, once.
    Value,
    /// `--flag VALUE`, any number of times.
    Repeat,
    /// `--flag`.
    Bool,
}

const GLOBAL: &[(&str, Kind)] = &[
    ("--format", Kind::Value),
    ("--timeout", Kind::Value),
    ("--config", Kind::Value),
    ("--record", Kind::Value),
    ("-v", Kind::Bool),
    ("--verbose", Kind::Bool),
    ("--no-input", Kind::Bool),
    ("--save-content", Kind::Value),
    ("--root", Kind::Repeat),
    ("--sampling-command", Kind::Value),
    ("--log-level", Kind::Value),
    ("--accept-old-versions", Kind::Bool),
    ("-h", Kind::Bool),
    ("--help", Kind::Bool),
    ("--version", Kind::Bool),
    ("-V", Kind::Bool),
];

/// Every command, for suggestions.
const COMMANDS: &[&str] = &[
    "add",
    "list",
    "get",
    "remove",
    "auth",
    "test",
    "status",
    "doctor",
    "tools",
    "call",
    "tasks",
    "resources",
    "read",
    "prompts",
    "prompt",
    "complete",
    "skills",
    "listen",
    "demo",
    "serve-example",
    "replay",
    "import",
    "help",
];

/// The closest of `candidates` to `word` (at most two edits away), for "did you mean".
fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance, for short words (commands and flags).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let next = (row[j + 1] + 1).min(row[j] + 1).min(prev + cost);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// " (did you mean X?)" when one is close.
fn suggestion(found: Option<&str>) -> String {
    found.map_or_else(String::new, |s| format!(" (did you mean {s}?)"))
}

const INPUT_FLAGS: &[(&str, Kind)] = &[("--auto-accept", Kind::Bool), ("--no-input", Kind::Bool)];

fn command_flags(command: &str) -> Option<&'static [(&'static str, Kind)]> {
    Some(match command {
        "add" => &[
            ("--stdio", Kind::Value),
            ("--url", Kind::Value),
            ("--env", Kind::Repeat),
            ("--era", Kind::Value),
            ("--oauth-resource", Kind::Value),
            ("--oauth-scopes", Kind::Value),
            ("--oauth-client-registration", Kind::Value),
            ("--oauth-client-id", Kind::Value),
            ("--oauth-client-secret-env", Kind::Value),
            ("--oauth-issuer", Kind::Value),
            ("--bearer-token-env", Kind::Value),
            ("--header-env", Kind::Repeat),
        ],
        "call" => &[
            ("--args", Kind::Value),
            ("--arg", Kind::Repeat),
            ("--auto-accept", Kind::Bool),
            ("--no-input", Kind::Bool),
            ("--task", Kind::Bool),
            ("--task-ttl", Kind::Value),
        ],
        "read" => INPUT_FLAGS,
        "prompt" => &[
            ("--arg", Kind::Repeat),
            ("--auto-accept", Kind::Bool),
            ("--no-input", Kind::Bool),
        ],
        "complete" => &[
            ("--prompt", Kind::Value),
            ("--resource-template", Kind::Value),
            ("--arg", Kind::Repeat),
        ],
        "skills" => &[("--file", Kind::Value), ("--dir", Kind::Value)],
        "status" | "doctor" => &[("--connect", Kind::Bool)],
        "serve-example" => &[
            ("--stdio", Kind::Bool),
            ("--http", Kind::Value),
            ("--era", Kind::Value),
            ("--tasks", Kind::Bool),
            ("--sse-polling", Kind::Bool),
            ("--oauth", Kind::Bool),
            ("--redis", Kind::Value),
            ("--state-key-file", Kind::Value),
        ],
        "listen" => &[
            ("--resource", Kind::Repeat),
            ("--list-changed", Kind::Bool),
            ("--max-events", Kind::Value),
            ("--tasks", Kind::Bool),
            ("--task", Kind::Repeat),
        ],
        "auth" => &[("--scopes", Kind::Value), ("--no-browser", Kind::Bool)],
        "import" => &[("--dry-run", Kind::Bool)],
        "list" | "get" | "remove" | "tools" | "tasks" | "resources" | "prompts" | "test"
        | "demo" | "replay" | "help" => &[],
        _ => return None,
    })
}

/// `mcp call --task`: run the call as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskFlags {
    /// `--task-ttl SECS` (2025-11-25 `ttl`).
    pub ttl_secs: Option<u64>,
}

#[derive(Default)]
struct Words {
    positionals: Vec<String>,
    flags: Vec<(&'static str, Option<String>)>,
    /// Words after `--`.
    trailing: Vec<String>,
}

impl Words {
    fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, _)| *n == name)
    }

    fn value(&self, name: &str) -> Option<String> {
        self.flags
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.clone())
    }

    fn values(&self, name: &str) -> Vec<String> {
        self.flags
            .iter()
            .filter(|(n, _)| *n == name)
            .filter_map(|(_, v)| v.clone())
            .collect()
    }
}

fn lookup(table: &[(&'static str, Kind)], word: &str) -> Option<(&'static str, Kind)> {
    table.iter().find(|(n, _)| *n == word).copied()
}

/// Whether `argv` asks for `--format json`, for what is printed before (or without) a
/// full parse: the version, a usage error.
pub fn json_requested(argv: &[String]) -> bool {
    argv.windows(2)
        .any(|w| w[0] == "--format" && w[1] == "json")
        || argv.iter().any(|a| a == "--format=json")
}

/// Parses the arguments after the program name.
pub fn parse(argv: &[String]) -> Result<Invocation, Usage> {
    // Find the command: the first word that is not a global flag or its value.
    let mut i = 0;
    let mut command = None;
    while i < argv.len() {
        let word = flag_name(&argv[i]);
        match lookup(GLOBAL, word) {
            Some((_, Kind::Bool)) => i += 1,
            Some(_) if argv[i].contains('=') => i += 1,
            Some(_) => i += 2,
            None if word == "--" => break,
            None if word.starts_with('-') && word.len() > 1 => {
                let near = closest(word, GLOBAL.iter().map(|(n, _)| *n));
                return Err(Usage::new(format!(
                    "unknown option {word}{}",
                    suggestion(near)
                )));
            }
            None => {
                command = Some(argv[i].clone());
                break;
            }
        }
    }
    if argv
        .iter()
        .take(i + 1)
        .any(|a| a == "--version" || a == "-V")
    {
        let format = if json_requested(argv) {
            Format::Json
        } else {
            Format::Text
        };
        return Ok(Invocation {
            global: Global {
                format,
                ..Global::default()
            },
            command: Command::Version,
        });
    }
    let Some(command_name) = command else {
        if argv.iter().any(|a| a == "-h" || a == "--help") {
            return parse(&["help".to_owned()]);
        }
        return Err(Usage::new(
            "missing command (try `mcp demo`, or `mcp help` for the list)",
        ));
    };
    let Some(table) = command_flags(&command_name) else {
        let near = closest(&command_name, COMMANDS.iter().copied());
        return Err(Usage::new(format!(
            "unknown command {command_name:?}{}",
            suggestion(near)
        )));
    };

    let mut words = Words::default();
    let mut seen_command = false;
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        if arg == "--" {
            words.trailing = it.by_ref().cloned().collect();
            break;
        }
        let name = flag_name(arg);
        let inline = arg.split_once('=').map(|(_, v)| v.to_owned());
        let found = lookup(GLOBAL, name).or_else(|| lookup(table, name));
        match found {
            Some((flag, Kind::Bool)) => {
                if inline.is_some() {
                    return Err(Usage::new(format!("{flag} takes no value")));
                }
                words.flags.push((flag, None));
            }
            Some((flag, kind)) => {
                let server_args = command_name == "add" && words.has("--stdio");
                let value = match inline {
                    Some(v) => v,
                    None => match it.next() {
                        Some(v) => v.clone(),
                        None if server_args => return Err(after_dashes(&command_name, flag)),
                        None => return Err(Usage::new(format!("{flag} needs a value"))),
                    },
                };
                if kind == Kind::Value && words.has(flag) {
                    if server_args {
                        return Err(after_dashes(&command_name, flag));
                    }
                    return Err(Usage::new(format!("{flag} given twice")));
                }
                words.flags.push((flag, Some(value)));
            }
            None if arg.starts_with('-') && arg.len() > 1 => {
                if command_name == "add" {
                    return Err(after_dashes(&command_name, name));
                }
                let known = GLOBAL.iter().chain(table).map(|(n, _)| *n);
                return Err(Usage::new(format!(
                    "unknown option {name} for `{command_name}`{}",
                    suggestion(closest(name, known))
                )));
            }
            None => {
                if !seen_command && *arg == command_name {
                    seen_command = true;
                } else {
                    words.positionals.push(arg.clone());
                }
            }
        }
    }

    let global = Global {
        format: match words.value("--format").as_deref() {
            None | Some("text") => Format::Text,
            Some("json") => Format::Json,
            Some(other) => {
                return Err(Usage::new(format!(
                    "--format must be text or json, not {other:?}"
                )));
            }
        },
        timeout: match words.value("--timeout") {
            None => None,
            Some(s) => Some(parse_timeout(&s)?),
        },
        config: words.value("--config").map(PathBuf::from),
        record: words.value("--record").map(PathBuf::from),
        verbose: words.has("-v") || words.has("--verbose"),
        no_input: words.has("--no-input"),
        save_content: words.value("--save-content").map(PathBuf::from),
        roots: words.values("--root"),
        sampling_command: words.value("--sampling-command"),
        accept_old_versions: words.has("--accept-old-versions"),
        log_level: match words.value("--log-level") {
            None => None,
            Some(l) if LogLevel::parse(&l).is_some() => Some(l),
            Some(other) => {
                return Err(Usage::new(format!(
                    "--log-level must be one of debug, info, notice, warning, error, critical, alert, emergency, not {other:?}"
                )));
            }
        },
    };
    // Like every global flag, these count anywhere before `--`, and then nothing
    // else runs: `mcp call srv tool --version` must not call the tool.
    if words.has("--version") || words.has("-V") {
        return Ok(Invocation {
            global,
            command: Command::Version,
        });
    }
    if words.has("-h") || words.has("--help") {
        let command = if command_name == "help" {
            Command::Help
        } else {
            Command::HelpOn(command_name)
        };
        return Ok(Invocation { global, command });
    }
    let command = build(&command_name, words)?;
    Ok(Invocation { global, command })
}

/// `add` met `flag` where the server's own arguments were probably meant.
fn after_dashes(command: &str, flag: &str) -> Usage {
    let table = command_flags(command).unwrap_or(&[]);
    let what = if lookup(table, flag).is_some() {
        format!("{flag} follows the program")
    } else {
        let near = closest(flag, table.iter().map(|(n, _)| *n));
        format!("{flag} is not an option of `{command}`{}", suggestion(near))
    };
    Usage::new(format!(
        "{what}; the server's own arguments go after `--`: \
         mcp add <name> --stdio <program> -- <arguments>..."
    ))
}

fn flag_name(arg: &str) -> &str {
    if arg.starts_with("--") {
        arg.split_once('=').map_or(arg, |(n, _)| n)
    } else {
        arg
    }
}

fn parse_timeout(s: &str) -> Result<Duration, Usage> {
    let secs: f64 = s
        .parse()
        .map_err(|_| Usage::new(format!("--timeout wants seconds, not {s:?}")))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(Usage::new(format!(
            "--timeout must be more than 0 and at most 86400 seconds (one day), not {s}"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn build(name: &str, mut w: Words) -> Result<Command, Usage> {
    if name != "add" && !w.trailing.is_empty() {
        w.positionals.append(&mut w.trailing);
    }
    let command = match name {
        "help" => match w.positionals.first() {
            Some(topic) if COMMANDS.contains(&topic.as_str()) => Command::HelpOn(topic.clone()),
            Some(topic) => {
                let near = closest(topic, COMMANDS.iter().copied());
                return Err(Usage::new(format!(
                    "no command {topic:?}{}",
                    suggestion(near)
                )));
            }
            None => Command::Help,
        },
        "add" => {
            if let Some(extra) = w.positionals.get(1) {
                // `mcp add docs https://…`: a URL given without its flag.
                if is_url(extra) && !w.has("--url") && !w.has("--stdio") {
                    return Err(Usage::new(format!(
                        "unexpected argument {extra:?}: a server's URL goes after --url: \
                         mcp add <name> --url {extra}"
                    )));
                }
                return Err(Usage::new(format!(
                    "unexpected argument {extra:?}: the server's own arguments go after `--`: \
                     mcp add <name> --stdio <program> -- <arguments>..."
                )));
            }
            let [name] = positionals(&mut w, &["name"])?;
            check_name(&name)?;
            let (command, url) = match (w.value("--stdio"), w.value("--url")) {
                (Some(_), Some(_)) => {
                    return Err(Usage::new("add takes --stdio or --url, not both"));
                }
                (None, None) => {
                    return Err(Usage::new("add needs --stdio <command> or --url <url>"));
                }
                (command, url) => (command, url),
            };
            if let Some(url) = &url {
                check_url(url).map_err(Usage)?;
                if w.has("--env") || !w.trailing.is_empty() {
                    return Err(Usage::new(
                        "--env and arguments after `--` are for --stdio servers only",
                    ));
                }
            }
            let era = w.value("--era").unwrap_or_else(|| "auto".to_owned());
            check_era(&era, &["legacy", "auto", "modern"])?;
            let env = w.values("--env");
            for e in &env {
                check_env_name(e)?;
            }
            let oauth = oauth_flags(&w)?;
            let bearer_token_env = w.value("--bearer-token-env");
            if let Some(e) = &bearer_token_env {
                check_env_name(e)?;
            }
            let header_env = header_env_flags(&w)?;
            if url.is_none()
                && (oauth.is_some() || bearer_token_env.is_some() || !header_env.is_empty())
            {
                return Err(Usage::new(
                    "--oauth-*, --bearer-token-env and --header-env are for --url servers only",
                ));
            }
            Command::Add {
                name,
                command,
                url,
                args: w.trailing,
                env,
                era,
                oauth,
                bearer_token_env,
                header_env,
            }
        }
        "list" => {
            positionals(&mut w, &[])?;
            Command::List
        }
        "get" => Command::Get {
            name: one(&mut w, "name")?,
        },
        "remove" => Command::Remove {
            name: one(&mut w, "name")?,
        },
        "tools" => Command::Tools {
            server: one(&mut w, "server")?,
        },
        "resources" => Command::Resources {
            server: one(&mut w, "server")?,
        },
        "prompts" => Command::Prompts {
            server: one(&mut w, "server")?,
        },
        "skills" => {
            let file = w.value("--file");
            let dir = w.value("--dir");
            let mut got = std::mem::take(&mut w.positionals).into_iter();
            let (Some(server), skill, None) = (got.next(), got.next(), got.next()) else {
                return Err(Usage::new(
                    "skills takes <server> and optionally <skill> (a name or a SKILL.md URI)",
                ));
            };
            if (file.is_some() || dir.is_some()) && skill.is_none() {
                return Err(Usage::new("--file and --dir need a <skill> to read from"));
            }
            if file.is_some() && dir.is_some() {
                return Err(Usage::new("skills takes one of --file and --dir"));
            }
            Command::Skills {
                server,
                skill,
                file,
                dir,
            }
        }
        "test" => Command::Test {
            name: one(&mut w, "name")?,
        },
        "complete" => {
            let reference = match (w.value("--prompt"), w.value("--resource-template")) {
                (Some(name), None) => CompletionRef::Prompt(name),
                (None, Some(template)) => CompletionRef::ResourceTemplate(template),
                _ => {
                    return Err(Usage::new(
                        "complete takes one of --prompt <name> or --resource-template <uri-template>",
                    ));
                }
            };
            let context = key_values(&w)?;
            let [server, argument, value] =
                positionals(&mut w, &["server", "argument", "partial-value"])?;
            Command::Complete {
                server,
                reference,
                argument,
                value,
                context,
            }
        }
        "call" => {
            let input = input_mode(&w)?;
            let [server, tool] = positionals(&mut w, &["server", "tool"])?;
            let ttl = match w.value("--task-ttl") {
                None => None,
                Some(n) => Some(n.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    Usage::new(format!(
                        "--task-ttl takes a positive number of seconds, not {n:?}"
                    ))
                })?),
            };
            if ttl.is_some() && !w.has("--task") {
                return Err(Usage::new("--task-ttl goes with --task"));
            }
            Command::Call {
                server,
                tool,
                args_json: w.value("--args"),
                args: key_values(&w)?,
                input,
                task: w.has("--task").then_some(TaskFlags { ttl_secs: ttl }),
            }
        }
        "tasks" => Command::Tasks {
            server: one(&mut w, "server")?,
        },
        "read" => {
            let input = input_mode(&w)?;
            let [server, uri] = positionals(&mut w, &["server", "uri"])?;
            Command::Read { server, uri, input }
        }
        "prompt" => {
            let input = input_mode(&w)?;
            let [server, name] = positionals(&mut w, &["server", "name"])?;
            Command::Prompt {
                server,
                name,
                args: key_values(&w)?,
                input,
            }
        }
        "status" => {
            let name = match w.positionals.len() {
                0 => None,
                1 => w.positionals.pop(),
                _ => return Err(Usage::new("status takes at most one server name")),
            };
            Command::Status {
                name,
                connect: w.has("--connect"),
            }
        }
        "doctor" => {
            positionals(&mut w, &[])?;
            Command::Doctor {
                connect: w.has("--connect"),
            }
        }
        "demo" => {
            positionals(&mut w, &[])?;
            Command::Demo
        }
        "replay" => Command::Replay {
            file: PathBuf::from(one(&mut w, "file")?),
        },
        "import" => Command::Import {
            file: PathBuf::from(one(&mut w, "file")?),
            dry_run: w.has("--dry-run"),
        },
        "serve-example" => {
            positionals(&mut w, &[])?;
            let http = match w.value("--http") {
                Some(_) if w.has("--stdio") => {
                    return Err(Usage::new(
                        "serve-example takes --stdio or --http, not both",
                    ));
                }
                Some(addr) => Some(loopback_addr(&addr)?),
                None => None,
            };
            let era = w.value("--era").unwrap_or_else(|| "both".to_owned());
            check_era(&era, &["legacy", "modern", "both"])?;
            let sse_polling = w.has("--sse-polling");
            if sse_polling && http.is_none() {
                return Err(Usage::new("--sse-polling goes with --http"));
            }
            let oauth = w.has("--oauth");
            if oauth && http.is_none() {
                return Err(Usage::new("--oauth goes with --http"));
            }
            let redis = w.value("--redis");
            let state_key_file = w.value("--state-key-file").map(PathBuf::from);
            if redis.is_some() && http.is_none() {
                return Err(Usage::new("--redis goes with --http"));
            }
            if redis.is_some() != state_key_file.is_some() {
                return Err(Usage::new(
                    "--redis and --state-key-file go together: every process must seal \
                     requestState under the same keys",
                ));
            }
            Command::ServeExample {
                era,
                http,
                tasks: w.has("--tasks"),
                sse_polling,
                oauth,
                redis,
                state_key_file,
            }
        }
        "listen" => {
            let [server] = positionals(&mut w, &["server"])?;
            let resources = w.values("--resource");
            let list_changed = w.has("--list-changed");
            let task_ids = w.values("--task");
            if !task_ids.is_empty() && !w.has("--tasks") {
                return Err(Usage::new("--task <id> goes with --tasks"));
            }
            let tasks = w.has("--tasks").then_some(task_ids);
            if resources.is_empty() && !list_changed && tasks.is_none() {
                return Err(Usage::new(
                    "listen needs --resource <uri> (repeatable), --list-changed or --tasks",
                ));
            }
            let max_events = match w.value("--max-events") {
                None => None,
                Some(n) => Some(n.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    Usage::new(format!("--max-events takes a positive number, not {n:?}"))
                })?),
            };
            Command::Listen {
                server,
                resources,
                list_changed,
                max_events,
                tasks,
            }
        }
        "auth" => {
            let [action, name] = positionals(&mut w, &["login|status|logout", "name"])?;
            let action = match action.as_str() {
                "login" => AuthAction::Login,
                "status" => AuthAction::Status,
                "logout" => AuthAction::Logout,
                other => {
                    return Err(Usage::new(format!(
                        "auth takes login, status or logout, not {other:?}"
                    )));
                }
            };
            if action != AuthAction::Login && (w.has("--scopes") || w.has("--no-browser")) {
                return Err(Usage::new("--scopes and --no-browser are for `auth login`"));
            }
            Command::Auth {
                action,
                name,
                scopes: w.value("--scopes").map(|s| scopes(&s)).unwrap_or_default(),
                no_browser: w.has("--no-browser"),
            }
        }
        other => return Err(Usage::new(format!("unknown command {other:?}"))),
    };
    Ok(command)
}

fn positionals<const N: usize>(w: &mut Words, names: &[&str; N]) -> Result<[String; N], Usage> {
    let got = std::mem::take(&mut w.positionals);
    if got.len() != N {
        let want = names
            .iter()
            .map(|n| format!("<{n}>"))
            .collect::<Vec<_>>()
            .join(" ");
        return Err(Usage::new(if got.len() < N {
            format!("missing argument: expected {want}")
        } else {
            format!("unexpected argument {:?}", got[N])
        }));
    }
    got.try_into()
        .map_err(|_| Usage::new("wrong number of arguments"))
}

fn one(w: &mut Words, name: &str) -> Result<String, Usage> {
    let [v] = positionals(w, &[name])?;
    Ok(v)
}

fn input_mode(w: &Words) -> Result<Option<InputMode>, Usage> {
    match (w.has("--auto-accept"), w.has("--no-input")) {
        (true, true) => Err(Usage::new(
            "--auto-accept and --no-input exclude each other",
        )),
        (true, false) => Ok(Some(InputMode::AutoAccept)),
        (false, true) => Ok(Some(InputMode::None)),
        (false, false) => Ok(None),
    }
}

fn key_values(w: &Words) -> Result<Vec<(String, String)>, Usage> {
    w.values("--arg")
        .into_iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => Err(Usage::new(format!("--arg wants key=value, not {kv:?}"))),
        })
        .collect()
}

/// Scopes given as `a,b` (or `a b`).
fn scopes(list: &str) -> Vec<String> {
    list.split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The `--oauth-*` flags of `add`, checked.
fn oauth_flags(w: &Words) -> Result<Option<Box<OAuthEntry>>, Usage> {
    let mut o = OAuthEntry {
        resource: w.value("--oauth-resource"),
        scopes: w
            .value("--oauth-scopes")
            .map(|s| scopes(&s))
            .unwrap_or_default(),
        client_registration: w.value("--oauth-client-registration"),
        client_id: w.value("--oauth-client-id"),
        client_secret_env: w.value("--oauth-client-secret-env"),
        issuer: w.value("--oauth-issuer"),
        ..OAuthEntry::default()
    };
    if o.is_empty() {
        return Ok(None);
    }
    for url in [&o.resource, &o.issuer].into_iter().flatten() {
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(Usage::new(format!("{url:?} is not an http(s) URL")));
        }
    }
    if let Some(r) = &o.client_registration {
        check_era(r, &["auto", "cimd", "dcr"])
            .map_err(|_| Usage::new("--oauth-client-registration takes auto, cimd or dcr"))?;
    }
    if let Some(e) = &o.client_secret_env {
        check_env_name(e)?;
        if o.client_id.is_none() {
            return Err(Usage::new(
                "--oauth-client-secret-env goes with --oauth-client-id",
            ));
        }
    }
    let cimd_url = o
        .client_id
        .as_deref()
        .is_some_and(|id| id.starts_with("https://"));
    match o.client_registration.as_deref() {
        Some("cimd") if !cimd_url => {
            return Err(Usage::new(
                "--oauth-client-registration cimd needs --oauth-client-id <https URL of the \
                 client metadata document>",
            ));
        }
        Some("dcr") if o.client_id.is_some() => {
            return Err(Usage::new(
                "--oauth-client-registration dcr registers a new client: drop --oauth-client-id",
            ));
        }
        Some("auto") => o.client_registration = None,
        _ => {}
    }
    Ok(Some(Box::new(o)))
}

fn check_name(name: &str) -> Result<(), Usage> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(Usage::new(format!(
            "server names use letters, digits, '-', '_' and '.': {name:?}"
        )))
    }
}

/// The `--header-env HEADER=NAME` flags of `add`: a header for every request, its value
/// read from variable NAME when the server is used. The header must be a token and not
/// one the client writes itself (`Authorization` has `--bearer-token-env`).
fn header_env_flags(w: &Words) -> Result<std::collections::BTreeMap<String, String>, Usage> {
    let mut headers = std::collections::BTreeMap::new();
    for flag in w.values("--header-env") {
        let Some((header, var)) = flag.split_once('=') else {
            return Err(Usage::new(format!(
                "--header-env takes HEADER=VARIABLE (the value is read from the variable \
                 when the server is used, never stored), not {flag:?}"
            )));
        };
        check_header_name(header)?;
        check_env_name(var)?;
        if headers.insert(header.to_owned(), var.to_owned()).is_some() {
            return Err(Usage::new(format!("--header-env names {header} twice")));
        }
    }
    Ok(headers)
}

/// A header a `--header-env` (or an imported entry) may set.
pub fn check_header_name(header: &str) -> Result<(), Usage> {
    let token = !header.is_empty()
        && header
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return Err(Usage::new(format!("{header:?} is not a header name")));
    }
    if header.eq_ignore_ascii_case("authorization") {
        return Err(Usage::new(
            "the Authorization header is set with --bearer-token-env NAME (or OAuth)",
        ));
    }
    let own = [
        "accept",
        "content-type",
        "content-length",
        "transfer-encoding",
        "host",
        "connection",
        "user-agent",
        "last-event-id",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
    ];
    let lower = header.to_ascii_lowercase();
    if own.contains(&lower.as_str()) || lower.starts_with("mcp-param-") {
        return Err(Usage::new(format!(
            "{header} is a header the client writes itself"
        )));
    }
    Ok(())
}

fn check_env_name(name: &str) -> Result<(), Usage> {
    if name.contains('=') {
        return Err(Usage::new(format!(
            "--env takes a variable NAME only (values are read at start, never stored): {:?}",
            name.split('=').next().unwrap_or_default()
        )));
    }
    if name.is_empty() || name.contains('\0') {
        return Err(Usage::new("--env needs a variable name"));
    }
    Ok(())
}

/// The `--http` address of `serve-example`: `IP:PORT` (or `localhost:PORT`) on a
/// loopback interface only, since the example server has no authentication.
fn loopback_addr(addr: &str) -> Result<String, Usage> {
    let refused = || {
        Usage::new(format!(
            "--http wants a loopback address such as 127.0.0.1:8080 or [::1]:8080, not {addr:?}"
        ))
    };
    let parsed: std::net::SocketAddr = match addr.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}").parse(),
        None => addr.parse(),
    }
    .map_err(|_| refused())?;
    if parsed.ip().is_loopback() {
        Ok(parsed.to_string())
    } else {
        Err(refused())
    }
}

/// Whether `server` is a literal endpoint URL rather than a configured name.
pub fn is_url(server: &str) -> bool {
    let lower = server.get(..8).unwrap_or(server).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// Checks an endpoint URL the way the library will: `https://…`, or `http://` to a
/// loopback host only.
pub fn check_url(url: &str) -> Result<(), String> {
    use mcp_blocking::mcp_proto::http::{EndpointUrl, UrlError};
    match EndpointUrl::parse(url, false) {
        Ok(_) => Ok(()),
        Err(UrlError::InsecureRemote) => Err(format!(
            "{}: plain http:// is only allowed to loopback hosts (localhost, 127.0.0.0/8, \
             [::1]); use https://",
            redact_url(url)
        )),
        Err(e) => Err(format!(
            "{}: not a usable endpoint URL: {e}",
            redact_url(url)
        )),
    }
}

fn check_era(era: &str, allowed: &[&str]) -> Result<(), Usage> {
    if allowed.contains(&era) {
        Ok(())
    } else {
        Err(Usage::new(format!(
            "--era must be one of {}, not {era:?}",
            allowed.join("|")
        )))
    }
}

/// The usage lines of one command, from [`HELP`] (its lines and their continuations).
pub fn command_help(command: &str) -> String {
    let mut out = String::new();
    let mut taking = false;
    for line in HELP.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let names_it = trimmed.split('|').any(|part| {
            let mut words = part.split_whitespace();
            words.next() == Some("mcp") && words.next() == Some(command)
        });
        if indent == 2 && trimmed.starts_with("mcp ") {
            taking = names_it;
        } else if indent < 8 {
            taking = false;
        }
        if taking {
            out.push_str(line.strip_prefix("  ").unwrap_or(line));
            out.push('\n');
        }
    }
    if out.is_empty() {
        out = format!("mcp {command}: see `mcp help`\n");
    }
    out
}

pub const HELP: &str = "\
mcp: a Model Context Protocol client (stdio and Streamable HTTP servers)

Servers:
  mcp add <name> --stdio <command> [--env NAME]... [--era legacy|auto|modern] [-- <args>...]
  mcp add <name> --url <https-or-loopback-url> [--era legacy|auto|modern]
        [--oauth-resource URL] [--oauth-scopes S,S] [--oauth-client-registration auto|cimd|dcr]
        [--oauth-client-id ID-or-CIMD-URL] [--oauth-client-secret-env ENV] [--oauth-issuer URL]
        [--bearer-token-env ENV] [--header-env HEADER=ENV]...
  mcp list | mcp get <name> | mcp remove <name>
  mcp import <file> [--dry-run]    add the servers of another client's config (Claude, Cursor,
        VS Code, Zed, …)
  mcp auth login <name> [--scopes S,S] [--no-browser]   authorize in a browser, keep the tokens
  mcp auth status <name> | mcp auth logout <name>
  mcp test <name>                  connect, authenticate, negotiate, list tools; calls no tool
  mcp status [<name>] [--connect]  offline unless --connect (then era, version, tool count)
  mcp doctor [--connect]           config, credentials and environment checks

Using a server:
  mcp tools <server>
  mcp call <server> <tool> [--args JSON|@FILE|-] [--arg key=value]... [--auto-accept]
        [--no-input] [--task [--task-ttl SECS]]   run the call as a task (2025-11-25 task-augmented call,
        or 2026-07-28 with the tasks extension declared); its status changes on stderr,
        then the result as for any call
  mcp tasks <server>               the server's tasks (tasks/list, 2025-11-25 only)
  mcp resources <server> | mcp read <server> <uri>
  mcp prompts <server>   | mcp prompt <server> <name> [--arg key=value]...
  mcp skills <server> [<skill> [--file PATH | --dir PATH]]   the server's skills (Skills
        extension); with <skill> (a name or a SKILL.md URI) load it and print its SKILL.md,
        verified against its entry; --file prints that file of the skill, verified;
        --dir lists a directory of it (. for the root)
  mcp complete <server> (--prompt <name> | --resource-template <uri-template>)
        <argument> <partial-value> [--arg key=value]...   suggested values for an argument
  mcp listen <server> [--resource <uri>]... [--list-changed] [--tasks [--task <id>]...]
        [--max-events N]
        print change notifications as they arrive (subscriptions/listen in 2026-07-28,
        resources/subscribe before), one line each; Ctrl-C or --max-events ends it;
        --tasks adds task status notifications (2025-11-25: every notifications/tasks/status;
        2026-07-28: notifications/tasks of the tasks named with --task)
  mcp demo                         tour the bundled example server in both eras
  mcp serve-example [--stdio | --http 127.0.0.1:PORT [--sse-polling] [--oauth]
        [--redis redis://HOST:PORT --state-key-file FILE]] [--era legacy|modern|both] [--tasks]
        --oauth needs a bearer token for /mcp and serves an authorization server on the same
        origin that approves every login at once (no person, no account: an example for
        trying `mcp auth login` on 127.0.0.1, never a real server's security)
        --tasks adds the tool slow {text}, which runs as a task when asked (call --task);
        --sse-polling ends a 2025-11-25 call's SSE answer after its priming event and retry:
        when the call is not answered at once (clients resume with GET and Last-Event-ID);
        --redis with --state-key-file lets several processes serve as one: legacy sessions,
        resumable events and single-use requestState in Redis, requestState sealed under
        the file's keys (lines `<key id> <64 hex digits>`, the last seals)
  mcp replay <file>                play a transcript written with --record again; OK or the first difference

<server> is a configured name or a literal https:// URL (http:// only to loopback hosts).
Global flags: --format text|json, --timeout SECS, --config FILE, -v (wire log on stderr),
  --record FILE (the transcript of each connection, secrets redacted),
  --no-input (never wait for a person: no forms, no browser approval),
  --save-content DIR (image, audio and binary blocks written there, never overwriting),
  --root PATH (repeatable; offered to the server as file:// URIs; or \"roots\" in the config),
  --sampling-command CMD (answers sampling: request JSON on stdin, CreateMessageResult JSON
  on stdout; or \"sampling\" in the config; without it sampling is declined),
  --log-level LEVEL (the server's log messages on stderr; or \"logLevel\" in the config),
  --accept-old-versions (also accept 2024-11-05 and 2025-03-26, and fall back to the
  2024-11-05 HTTP+SSE transport when a URL refuses Streamable HTTP with 400, 404 or 405)
Credentials: $XDG_STATE_HOME/mcp/credentials/ (~/.local/state/mcp/credentials/), one 0600 file
  per server; MCP_BEARER_TOKEN (or a server's bearerTokenEnv) is sent as it is instead
Config: --config, else $MCP_CONFIG, else $XDG_CONFIG_HOME/mcp/servers.json, else ~/.config/mcp/servers.json
Exit status: 0 ok, 1 connection or protocol failure, 2 usage error, 3 the tool returned isError,
  130 Ctrl-C (what was in flight is cancelled at the server first)
";

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Invocation, Usage> {
        parse(&args.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn globals_anywhere_and_values_are_values() {
        let inv = p(&[
            "--format", "json", "call", "ex", "echo", "--arg", "text=-v", "-v",
        ])
        .unwrap();
        assert_eq!(inv.global.format, Format::Json);
        assert!(inv.global.verbose);
        let Command::Call { args, .. } = inv.command else {
            panic!()
        };
        assert_eq!(args, [("text".to_owned(), "-v".to_owned())]);
    }

    #[test]
    fn record_is_global_and_replay_takes_a_file() {
        let inv = p(&["tools", "ex", "--record", "run.jsonl"]).unwrap();
        assert_eq!(inv.global.record, Some(PathBuf::from("run.jsonl")));
        let inv = p(&["--record=run.jsonl", "demo"]).unwrap();
        assert_eq!(inv.global.record, Some(PathBuf::from("run.jsonl")));
        let Command::Replay { file } = p(&["replay", "run.jsonl"]).unwrap().command else {
            panic!()
        };
        assert_eq!(file, PathBuf::from("run.jsonl"));
        assert!(p(&["replay"]).is_err());
        assert!(p(&["--record", "a", "--record", "b", "demo"]).is_err());
    }

    #[test]
    fn add_takes_trailing_args() {
        let inv = p(&[
            "add", "ex", "--stdio", "node", "--env", "HOME", "--", "s.js", "--port", "1",
        ])
        .unwrap();
        let Command::Add { args, env, era, .. } = inv.command else {
            panic!()
        };
        assert_eq!(args, ["s.js", "--port", "1"]);
        assert_eq!(env, ["HOME"]);
        assert_eq!(era, "auto");
    }

    #[test]
    fn add_with_a_url() {
        let inv = p(&[
            "add",
            "web",
            "--url",
            "https://mcp.example.com/mcp",
            "--era",
            "modern",
        ])
        .unwrap();
        let Command::Add {
            command, url, era, ..
        } = inv.command
        else {
            panic!()
        };
        assert_eq!(command, None);
        assert_eq!(url.as_deref(), Some("https://mcp.example.com/mcp"));
        assert_eq!(era, "modern");
        assert!(p(&["add", "l", "--url", "http://127.0.0.1:8080/mcp"]).is_ok());
        let refused = |args: &[&str]| match p(args) {
            Err(Usage(msg)) => msg,
            Ok(inv) => panic!("{:?}", inv.command),
        };
        assert!(refused(&["add", "w", "--url", "http://mcp.example.com/mcp"]).contains("loopback"));
        assert!(refused(&["add", "w", "--url", "ftp://x/"]).contains("ftp://x/"));
        assert!(refused(&["add", "w", "--url", "https://x/", "--stdio", "y"]).contains("not both"));
        assert!(refused(&["add", "w", "--url", "https://x/", "--env", "HOME"]).contains("--env"));
        assert!(refused(&["add", "w"]).contains("--url"));
    }

    #[test]
    fn add_with_oauth_and_auth_commands() {
        let inv = p(&[
            "add",
            "w",
            "--url",
            "https://x.example/mcp",
            "--oauth-client-id",
            "c1",
            "--oauth-client-secret-env",
            "W_SECRET",
            "--oauth-scopes",
            "a,b",
            "--oauth-issuer",
            "https://as.example",
        ])
        .unwrap();
        let Command::Add { oauth, .. } = inv.command else {
            panic!()
        };
        let oauth = oauth.unwrap();
        assert_eq!(oauth.client_id.as_deref(), Some("c1"));
        assert_eq!(oauth.client_secret_env.as_deref(), Some("W_SECRET"));
        assert_eq!(oauth.scopes, ["a", "b"]);
        let refused = |args: &[&str]| p(args).is_err();
        assert!(refused(&[
            "add",
            "s",
            "--stdio",
            "x",
            "--oauth-scopes",
            "a"
        ]));
        assert!(refused(&[
            "add",
            "w",
            "--url",
            "https://x/",
            "--oauth-client-secret-env",
            "A=b"
        ]));
        assert!(refused(&[
            "add",
            "w",
            "--url",
            "https://x/",
            "--oauth-client-registration",
            "cimd"
        ]));
        assert!(refused(&[
            "add",
            "w",
            "--url",
            "https://x/",
            "--oauth-client-registration",
            "magic"
        ]));

        let inv = p(&["auth", "login", "w", "--scopes", "a,b", "--no-browser"]).unwrap();
        let Command::Auth {
            action,
            name,
            scopes,
            no_browser,
        } = inv.command
        else {
            panic!()
        };
        assert_eq!(action, AuthAction::Login);
        assert_eq!(name, "w");
        assert_eq!(scopes, ["a", "b"]);
        assert!(no_browser);
        assert!(p(&["auth", "status", "w"]).is_ok());
        assert!(p(&["auth", "logout", "w", "--scopes", "a"]).is_err());
        assert!(p(&["auth", "frob", "w"]).is_err());
        assert!(p(&["--no-input", "tools", "w"]).unwrap().global.no_input);
        let g = p(&[
            "--root",
            "/a",
            "call",
            "s",
            "t",
            "--root=/b",
            "--log-level",
            "info",
        ])
        .unwrap()
        .global;
        assert_eq!(g.roots, ["/a", "/b"]);
        assert_eq!(g.log_level.as_deref(), Some("info"));
        assert!(p(&["--log-level", "loud", "tools", "s"]).is_err());
    }

    #[test]
    fn usage_errors() {
        assert!(p(&["call", "ex"]).is_err());
        assert!(p(&["frobnicate"]).is_err());
        assert!(p(&["add", "ex", "--stdio", "x", "--env", "A=b"]).is_err());
        assert!(p(&["tools", "ex", "--bogus"]).is_err());
        assert!(p(&["--timeout", "abc", "list"]).is_err());
        assert!(p(&["call", "a", "b", "--auto-accept", "--no-input"]).is_err());
    }

    #[test]
    fn a_url_given_to_add_without_its_flag_is_pointed_at_url() {
        let err = |args: &[&str]| match p(args) {
            Err(Usage(msg)) => msg,
            Ok(inv) => panic!("accepted: {:?}", inv.command),
        };
        let url = "http://127.0.0.1:8/mcp";
        let msg = err(&["add", "docs", url]);
        assert!(
            msg.contains(&format!("mcp add <name> --url {url}")),
            "{msg}"
        );
        let msg = err(&["add", "docs", "--era", "legacy", url]);
        assert!(msg.contains("--url"), "{msg}");
        // Not a URL: the server's arguments were probably meant.
        let msg = err(&["add", "docs", "--stdio", "srv", "--verbose-arg"]);
        assert!(msg.contains("after `--`"), "{msg}");
        let msg = err(&["add", "docs", "--stdio", "srv", "extra"]);
        assert!(msg.contains("after `--`"), "{msg}");
    }

    #[test]
    fn serve_example_http_is_loopback_only() {
        let http = |args: &[&str]| match p(args).map(|inv| inv.command) {
            Ok(Command::ServeExample { http, .. }) => Ok(http),
            Ok(other) => panic!("{other:?}"),
            Err(Usage(msg)) => Err(msg),
        };
        let ok = |a: &str| http(&["serve-example", "--http", a]).unwrap();
        assert_eq!(ok("127.0.0.1:8080"), Some("127.0.0.1:8080".to_owned()));
        assert_eq!(ok("localhost:0"), Some("127.0.0.1:0".to_owned()));
        assert_eq!(ok("[::1]:9"), Some("[::1]:9".to_owned()));
        assert_eq!(http(&["serve-example"]).unwrap(), None);
        for bad in [
            "0.0.0.0:8080",
            "192.168.1.2:80",
            "example.com:80",
            "127.0.0.1",
        ] {
            assert!(http(&["serve-example", "--http", bad]).is_err(), "{bad}");
        }
        assert!(http(&["serve-example", "--stdio", "--http", "127.0.0.1:1"]).is_err());
    }

    #[test]
    fn serve_example_sse_polling_needs_http() {
        let polling = |args: &[&str]| match p(args).map(|inv| inv.command) {
            Ok(Command::ServeExample { sse_polling, .. }) => Ok(sse_polling),
            Ok(other) => panic!("{other:?}"),
            Err(Usage(msg)) => Err(msg),
        };
        assert_eq!(
            polling(&["serve-example", "--http", "127.0.0.1:0", "--sse-polling"]),
            Ok(true)
        );
        assert_eq!(
            polling(&["serve-example", "--http", "127.0.0.1:0"]),
            Ok(false)
        );
        assert!(polling(&["serve-example", "--sse-polling"]).is_err());
        assert!(polling(&["serve-example", "--stdio", "--sse-polling"]).is_err());
    }
}
