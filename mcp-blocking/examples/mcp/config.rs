//! The servers file: named server entries in JSON.
//!
//! ```json
//! {"servers": {"ex": {"command": "/usr/bin/node", "args": ["server.js"], "env": ["HOME"], "era": "auto"}}}
//! ```
//!
//! `env` holds variable **names** only; their values are read from the CLI's environment
//! when the server starts and are never written anywhere. Unknown fields (of the file and
//! of each entry) are kept as they are, so entries written by a newer `mcp` survive.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use mcp_io::transcript::redact_url;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The whole file.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ConfigFile {
    #[serde(default)]
    pub servers: BTreeMap<String, ServerEntry>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerEntry {
    /// The stdio command (absent for HTTP servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Names of the variables passed to the child.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// The Streamable HTTP endpoint of an HTTP server (absent for stdio servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `legacy`, `auto` or `modern`.
    #[serde(default = "auto")]
    pub era: String,
    /// How an HTTP server is authorized (OAuth), when it asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthEntry>,
    /// The NAME of a variable holding a bearer token to send as it is (instead of OAuth).
    #[serde(
        default,
        rename = "bearerTokenEnv",
        skip_serializing_if = "Option::is_none"
    )]
    pub bearer_token_env: Option<String>,
    /// More headers for every request, each header's value read from the variable it
    /// names when the server is used (header name → variable NAME; never a value).
    #[serde(
        default,
        rename = "headerEnv",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub header_env: BTreeMap<String, String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The OAuth settings of an HTTP server (`mcp add --oauth-*`). Never a secret: the
/// client secret is named by its environment variable.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthEntry {
    /// The resource the tokens are expected to be for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Scopes to ask for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// `auto` (default), `cimd` or `dcr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_registration: Option<String>,
    /// A pre-registered client id, or the https URL of a Client ID Metadata Document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The NAME of the variable holding the client secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<String>,
    /// The issuer the pre-registered client belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OAuthEntry {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.resource.is_none()
            && self.scopes.is_empty()
            && self.client_registration.is_none()
            && self.client_id.is_none()
            && self.client_secret_env.is_none()
            && self.issuer.is_none()
            && self.extra.is_empty()
    }
}

fn auto() -> String {
    "auto".to_owned()
}

/// Where the config lives: `--config`, `$MCP_CONFIG`, `$XDG_CONFIG_HOME/mcp/servers.json`,
/// `~/.config/mcp/servers.json`.
pub fn path(flag: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = flag {
        return Ok(p.to_path_buf());
    }
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(p) = non_empty("MCP_CONFIG") {
        return Ok(PathBuf::from(p));
    }
    if let Some(x) = non_empty("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(x).join("mcp").join("servers.json"));
    }
    if let Some(home) = non_empty("HOME") {
        return Ok(PathBuf::from(home)
            .join(".config")
            .join("mcp")
            .join("servers.json"));
    }
    Err("no config file: pass --config FILE or set MCP_CONFIG (HOME is not set)".into())
}

/// Reads the file; a missing file is an empty config.
pub fn load(path: &Path) -> Result<ConfigFile, String> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(ConfigFile::default()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let raw: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: not a valid servers file: {e}", path.display()))?;
    if raw.get("mcpServers").is_some() && raw.get("servers").is_none() {
        return Err(format!(
            "{}: this file holds \"mcpServers\", the shape other MCP clients write; \
             bring those servers in with `mcp import {}` (into the config this command uses), \
             or point --config at a file of our own",
            path.display(),
            path.display()
        ));
    }
    if let Some(servers) = raw.get("servers").and_then(Value::as_object) {
        for (name, entry) in servers {
            if entry.get("env").is_some_and(Value::is_object) {
                return Err(format!(
                    "{}: server {name}: \"env\" is a map; list variable names instead \
                     (values are read at start, never stored), e.g. \"env\": [\"PATH\", \"HOME\"]; \
                     a file another client wrote (VS Code's mcp.json) is brought in with \
                     `mcp import {}`",
                    path.display(),
                    path.display()
                ));
            }
        }
    }
    serde_json::from_value(raw)
        .map_err(|e| format!("{}: not a valid servers file: {e}", path.display()))
}

/// Another client's config file: JSON, or, when that does not parse, JSON with comments
/// and trailing commas (VS Code's `mcp.json` and settings, Zed's settings). The error is
/// the strict parse's.
pub fn parse_jsonc(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice(bytes).or_else(|strict| {
        let text = String::from_utf8_lossy(bytes);
        serde_json::from_str(&strip_jsonc(&text)).map_err(|_| strict)
    })
}

/// `text` without `//` and `/* */` comments and without commas that close no element
/// (before `}` or `]`), strings left as they are.
fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    // Where the last comma written sits, while only blanks and comments followed it.
    let mut pending_comma: Option<usize> = None;
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                pending_comma = None;
                out.push(c);
                while let Some(c) = chars.next() {
                    out.push(c);
                    match c {
                        '\\' => out.extend(chars.next()),
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => while chars.next_if(|&c| c != '\n').is_some() {},
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            '}' | ']' => {
                if let Some(at) = pending_comma.take() {
                    out.replace_range(at..=at, " ");
                }
                out.push(c);
            }
            ',' => {
                // Only a comma after an element may close nothing.
                let after = out.trim_end().chars().last();
                pending_comma = (!matches!(after, Some('{' | '[' | ','))).then_some(out.len());
                out.push(c);
            }
            c if c.is_whitespace() => out.push(c),
            c => {
                pending_comma = None;
                out.push(c);
            }
        }
    }
    out
}

/// The servers another client's config lists, by name, in the shapes they write:
/// `mcpServers` (Claude Desktop and Code, Cursor, Windsurf, …), `servers` (VS Code's
/// `mcp.json`, and our own file), `mcp.servers` (VS Code's settings) or
/// `context_servers` (Zed, whose `command` may be an object of `path`, `args`, `env`).
pub fn servers_to_import(theirs: &Value) -> Result<Vec<(String, Value)>, String> {
    let found = [
        theirs.get("mcpServers"),
        theirs.get("servers"),
        theirs.get("mcp").and_then(|m| m.get("servers")),
        theirs.get("context_servers"),
    ];
    let Some(servers) = found.into_iter().flatten().find_map(Value::as_object) else {
        return Err(
            "no servers to import: looked for an object under \"mcpServers\", \
                    \"servers\", \"mcp.servers\" or \"context_servers\""
                .to_owned(),
        );
    };
    let flatten = |entry: &Value| {
        let mut entry = entry.clone();
        if let Some(Value::Object(command)) = entry.get("command").cloned()
            && let Some(fields) = entry.as_object_mut()
        {
            fields.remove("command");
            for (ours, theirs) in [("command", "path"), ("args", "args"), ("env", "env")] {
                if let Some(v) = command.get(theirs) {
                    fields.insert(ours.to_owned(), v.clone());
                }
            }
        }
        entry
    };
    Ok(servers
        .iter()
        .map(|(name, entry)| (name.clone(), flatten(entry)))
        .collect())
}

/// One server of another client's `mcpServers` file, as our entry.
pub struct Imported {
    pub entry: ServerEntry,
    /// The names of the environment variables whose values that file held (not kept).
    pub dropped_env_values: Vec<String>,
    /// The names of the headers not imported (their values are never kept).
    pub dropped_headers: Vec<String>,
    /// What the user should know: what was mapped, what is not supported.
    pub notes: Vec<String>,
}

/// One server of another client's `mcpServers` file (Claude Desktop and Code, Cursor,
/// Windsurf's `serverUrl`): `command`, `args`, `env`, `url`, `type`, `headers`. A URL
/// is checked as `mcp add --url` checks it. An `Authorization: Bearer ${NAME}` header
/// becomes `bearerTokenEnv` NAME; any other header is left out, and said so. `type: sse`
/// (the 2024-11-05 HTTP+SSE transport) sets `acceptOldVersions`.
pub fn import_entry(name: &str, theirs: &Value) -> Result<Imported, String> {
    let text = |key: &str| theirs.get(key).and_then(Value::as_str).map(str::to_owned);
    let args = match theirs.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|a| {
                a.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{name}: every argument must be a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("{name}: \"args\" must be a list of strings")),
    };
    let (env, dropped_env_values) = match theirs.get("env") {
        None | Some(Value::Null) => (Vec::new(), Vec::new()),
        Some(Value::Object(map)) => {
            let names: Vec<String> = map.keys().cloned().collect();
            (names.clone(), names)
        }
        Some(Value::Array(list)) => (
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            Vec::new(),
        ),
        Some(_) => return Err(format!("{name}: \"env\" must be a map or a list of names")),
    };
    // Names a shell could set: no `=`, no control character (a file from elsewhere
    // could hide one in a name shown for review).
    if let Some(bad) = env
        .iter()
        .find(|n| n.is_empty() || n.contains('=') || n.chars().any(char::is_control))
    {
        return Err(format!(
            "{name}: {bad:?} is not an environment variable name"
        ));
    }
    let (command, url) = (text("command"), text("url").or_else(|| text("serverUrl")));
    if command.is_none() && url.is_none() {
        return Err(format!("{name}: neither \"command\" nor \"url\""));
    }
    let mut imported = Imported {
        entry: ServerEntry {
            command,
            args,
            env,
            url,
            era: auto(),
            oauth: None,
            bearer_token_env: None,
            header_env: BTreeMap::new(),
            extra: Map::new(),
        },
        dropped_env_values,
        dropped_headers: Vec::new(),
        notes: Vec::new(),
    };
    if let Some(url) = &imported.entry.url
        && imported.entry.command.is_none()
    {
        crate::args::check_url(url).map_err(|e| format!("{name}: {e}"))?;
        import_http(name, theirs, &mut imported)?;
    }
    let entry = &imported.entry;
    if let Some(note) = entry.url.as_deref().and_then(url_secret_note) {
        imported.notes.push(note);
    }
    let words = entry.command.iter().chain(&entry.args).chain(&entry.url);
    if let Some(word) = words.into_iter().find(|w| w.contains("${")) {
        imported.notes.push(format!(
            "{word:?} is passed as it is: this CLI expands no ${{…}} variables"
        ));
    }
    if let Some(input) = vscode_input(theirs.get("env")) {
        imported.notes.push(format!(
            "its environment uses the VS Code input {input:?}, which this CLI cannot prompt \
             for: set the variable itself before running"
        ));
    }
    if theirs.get("envFile").is_some() {
        imported.notes.push(
            "\"envFile\" is left out: the server gets only the variables listed, from \
             mcp's own environment"
                .to_owned(),
        );
    }
    if theirs.get("cwd").is_some() {
        imported
            .notes
            .push("\"cwd\" is left out: the command runs in the directory mcp runs in".to_owned());
    }
    Ok(imported)
}

/// The HTTP-only fields of an imported entry: `type` and `headers`.
fn import_http(name: &str, theirs: &Value, imported: &mut Imported) -> Result<(), String> {
    if theirs.get("type").and_then(Value::as_str) == Some("sse") {
        imported
            .entry
            .extra
            .insert("acceptOldVersions".to_owned(), Value::Bool(true));
        imported.notes.push(
            "type sse: the 2024-11-05 HTTP+SSE transport, accepted for this server \
             (acceptOldVersions)"
                .to_owned(),
        );
    }
    let headers = match theirs.get("headers") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(format!("{name}: \"headers\" must be a map")),
    };
    for (header, value) in headers {
        let bearer = header
            .eq_ignore_ascii_case("authorization")
            .then(|| value.as_str().and_then(bearer_variable))
            .flatten();
        // Another header whose whole value names a variable: read from it when used.
        let variable = (bearer.is_none() && crate::args::check_header_name(header).is_ok())
            .then(|| value.as_str().and_then(variable_reference))
            .flatten();
        if let Some(variable) = bearer {
            imported.notes.push(format!(
                "its bearer token is read from ${variable} when it is used (bearerTokenEnv)"
            ));
            imported.entry.bearer_token_env = Some(variable.to_owned());
        } else if let Some(variable) = variable {
            imported.notes.push(format!(
                "header {header} is read from ${variable} when it is used (headerEnv)"
            ));
            (imported.entry.header_env).insert(header.clone(), variable.to_owned());
        } else {
            imported.dropped_headers.push(header.clone());
        }
    }
    if let Some(input) = vscode_input(Some(&Value::Object(headers.clone()))) {
        imported.notes.push(format!(
            "a header uses the VS Code input {input:?}, which this CLI cannot prompt for"
        ));
    }
    if !imported.dropped_headers.is_empty() {
        imported.notes.push(format!(
            "header {} left out: values are never copied; a header read from a variable \
             when the server is used is kept (`mcp add {name} --url URL \
             --header-env HEADER=NAME`, `--bearer-token-env NAME` for a bearer token)",
            imported.dropped_headers.join(", ")
        ));
    }
    Ok(())
}

/// The id of the first VS Code input (`${input:ID}`) among the string values of `map`.
fn vscode_input(map: Option<&Value>) -> Option<String> {
    let values = map?.as_object()?.values().filter_map(Value::as_str);
    values.into_iter().find_map(|v| {
        let rest = &v[v.find("${input:")? + "${input:".len()..];
        Some(rest[..rest.find('}')?].to_owned())
    })
}

/// The variable of `Bearer ${NAME}`, `Bearer ${env:NAME}` or `Bearer $NAME`.
fn bearer_variable(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    variable_reference(token)
}

/// The variable of `${NAME}`, `${env:NAME}` or `$NAME`, the whole of `value`.
fn variable_reference(value: &str) -> Option<&str> {
    let token = value.trim();
    let name = match token.strip_prefix("${") {
        Some(rest) => rest.strip_suffix('}')?,
        None => token.strip_prefix('$')?,
    };
    let name = name.strip_prefix("env:").unwrap_or(name);
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(name)
}

/// The file `path` names, through any symbolic links (a config kept in a dotfiles
/// repository and linked into place): what is written is that file, and the link stays.
fn resolved(path: &Path) -> PathBuf {
    let mut at = path.to_path_buf();
    for _ in 0..16 {
        let is_link = fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        let Some(target) = is_link.then(|| fs::read_link(&at).ok()).flatten() else {
            break;
        };
        at = match at.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
    }
    at
}

/// The config's lock, held while a command reads, changes and writes the file: two
/// `mcp add` at once both keep their entry (the second waits for the first).
pub struct Lock {
    _file: fs::File,
}

/// Takes the lock of the config at `path` (a file beside it, `….lock`), waiting for
/// another `mcp` that holds it.
pub fn lock(path: &Path) -> Result<Lock, String> {
    let target = resolved(path);
    let fail = |e: io::Error| format!("{}: {e}", target.display());
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut name = target.clone().into_os_string();
    name.push(".lock");
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(PathBuf::from(name))
        .map_err(fail)?;
    file.lock().map_err(fail)?;
    Ok(Lock { _file: file })
}

/// Writes the file (via a temporary file and a rename, so it is never half-written;
/// through a symbolic link, to the file it names). Take [`lock`] before loading what is
/// written.
pub fn save(path: &Path, config: &ConfigFile) -> Result<(), String> {
    let path = &resolved(path);
    let fail = |e: io::Error| format!("{}: {e}", path.display());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut text = serde_json::to_string_pretty(config).map_err(|e| e.to_string())?;
    text.push('\n');
    let tmp = path.with_extension(format!("json.tmp{}", std::process::id()));
    // A new file, never one found there: its name is predictable, and a link someone
    // put at it must not be written through.
    let _ = fs::remove_file(&tmp);
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| io::Write::write_all(&mut f, text.as_bytes()));
    // The file it replaces keeps its permissions (a config its owner made private
    // stays private: its headers may hold what only they should read).
    let kept = written.and_then(|()| match fs::metadata(path) {
        Ok(old) => fs::set_permissions(&tmp, old.permissions()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    });
    if let Err(e) = kept {
        let _ = fs::remove_file(&tmp);
        return Err(fail(e));
    }
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        fail(e)
    })
}

/// What to tell the user of a URL whose query carries a credential (`?api_key=…`, see
/// [`mcp_io::wire_log::is_secret_param`]): it is stored as given, since the server needs
/// it, and shown redacted everywhere this CLI prints it.
pub fn url_secret_note(url: &str) -> Option<String> {
    (redact_url(url) != url).then(|| {
        "its URL carries a credential in the query: stored as given in the config file, \
         shown redacted; a header read from a variable (--header-env) keeps it out of the file"
            .to_owned()
    })
}

impl ServerEntry {
    /// `stdio: node server.js` or `http: https://…` (secret query values redacted), for
    /// listings.
    pub fn summary(&self) -> String {
        match (&self.command, &self.url) {
            (Some(cmd), _) => {
                let mut s = format!("stdio {}", shell_words(cmd));
                for a in &self.args {
                    s.push(' ');
                    s.push_str(&shell_words(a));
                }
                s
            }
            (None, Some(url)) => format!("http {}", redact_url(url)),
            (None, None) => "(no command or url)".to_owned(),
        }
    }
}

/// A word quoted for display when it has spaces or quotes.
pub fn shell_words(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,%".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
