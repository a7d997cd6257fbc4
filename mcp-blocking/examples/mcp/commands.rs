//! The commands: managing the servers file, and using a server.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use mcp_blocking::Client;
use mcp_blocking::mcp_proto::client::{
    CallOutput, CallRequest, Change, Event, ListenEnd, ListenFilter,
};
use mcp_blocking::mcp_proto::jsonrpc::Notification;
use mcp_blocking::mcp_proto::model::{CallToolResult, CompletionRef};
use mcp_blocking::mcp_proto::server::example;
use mcp_blocking::mcp_proto::version::{Era, VersionPolicy};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::args::{Format, Global, InputMode, TaskFlags};
use crate::config::{self, ServerEntry, shell_words};
use crate::content::{self, Saver};
use crate::output::{self, Failure, print_json, short, table};
use crate::session;
use crate::terminal::{clean, one_line};
use mcp_io::transcript::redact_url;

/// The JSON document of a command that talked to a server.
#[derive(Serialize)]
struct Doc<'a> {
    server: &'a str,
    #[serde(rename = "protocolVersion")]
    protocol_version: &'a str,
    era: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a [Box<RawValue>]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<&'a [Box<RawValue>]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompts: Option<&'a [Box<RawValue>]>,
    #[serde(rename = "resourceTemplates", skip_serializing_if = "Option::is_none")]
    resource_templates: Option<&'a [Box<RawValue>]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tasks: Option<&'a [Box<RawValue>]>,
    #[serde(rename = "excludedTools", skip_serializing_if = "Option::is_none")]
    excluded_tools: Option<Vec<Value>>,
}

impl<'a> Doc<'a> {
    fn new(server: &'a str, client: &'a Client) -> Self {
        Doc {
            server,
            protocol_version: client.protocol_version().as_str(),
            era: client.era().to_string(),
            result: None,
            tools: None,
            resources: None,
            prompts: None,
            resource_templates: None,
            tasks: None,
            excluded_tools: None,
        }
    }
}

fn config_path(global: &Global) -> Result<std::path::PathBuf, Failure> {
    config::path(global.config.as_deref()).map_err(Failure::Config)
}

// ----- the servers file ------------------------------------------------------------

/// `mcp import FILE`: reads the servers map other MCP clients write (command, args,
/// env, url; see [`config::servers_to_import`] for the shapes), shows what it adds
/// (environment values are not kept: only the names, whose values are read when the
/// server starts), and writes our config.
pub fn import(global: &Global, file: &Path, dry_run: bool) -> Result<u8, Failure> {
    let text =
        std::fs::read(file).map_err(|e| Failure::Config(format!("{}: {e}", file.display())))?;
    let theirs = config::parse_jsonc(&text)
        .map_err(|e| Failure::Config(format!("{}: not JSON: {e}", file.display())))?;
    let servers = config::servers_to_import(&theirs)
        .map_err(|e| Failure::Config(format!("{}: {e}", file.display())))?;
    let path = config_path(global)?;
    let _lock = (!dry_run)
        .then(|| config::lock(&path))
        .transpose()
        .map_err(Failure::Config)?;
    let mut ours = config::load(&path).map_err(Failure::Config)?;
    let mut added = Vec::new();
    for (name, entry) in &servers {
        check_name_for_import(name)?;
        let imported = config::import_entry(name, entry).map_err(Failure::Config)?;
        let replaced = ours.servers.contains_key(name);
        added.push(
            json!({"name": name, "entry": entry_shown(&imported.entry), "replaced": replaced,
            "droppedEnvValues": imported.dropped_env_values,
            "droppedHeaders": imported.dropped_headers, "notes": imported.notes}),
        );
        ours.servers.insert(name.clone(), imported.entry);
    }
    if !dry_run {
        config::save(&path, &ours).map_err(Failure::Config)?;
    }
    match global.format {
        Format::Json => print_json(&json!({"config": path, "dryRun": dry_run, "servers": added})),
        Format::Text => {
            for a in &added {
                let name = a["name"].as_str().unwrap_or_default();
                let entry: ServerEntry = serde_json::from_value(a["entry"].clone())
                    .map_err(|e| Failure::Config(format!("{name}: {e}")))?;
                let verb = if a["replaced"] == true {
                    "replace"
                } else {
                    "add"
                };
                // A file from elsewhere is shown for review: nothing of it may drive
                // the terminal or hide the command behind a forged line.
                println!("{verb} {name}: {}", one_line(&entry.summary()));
                if !entry.env.is_empty() {
                    println!(
                        "  passes {} (names only: values are read when the server starts)",
                        one_line(&entry.env.join(", "))
                    );
                }
                if let Some(hint) = crate::session::launcher_hint(&entry) {
                    println!("  warning: {}", one_line(&hint));
                }
                for note in a["notes"].as_array().into_iter().flatten() {
                    println!("  note: {}", one_line(note.as_str().unwrap_or_default()));
                }
            }
            if dry_run {
                println!("(dry run: {} not written)", path.display());
            } else {
                println!("in {}", path.display());
            }
        }
    }
    Ok(0)
}

fn check_name_for_import(name: &str) -> Result<(), Failure> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Failure::Config(format!(
            "cannot import {name:?}: a server name is 1 to 64 letters, digits, '-', '_' or '.'"
        )))
    }
}

pub fn add(global: &Global, name: &str, entry: ServerEntry) -> Result<u8, Failure> {
    if let Some(command) = &entry.command
        && (command.trim() != command
            || (command.contains(char::is_whitespace) && !Path::new(command).exists()))
    {
        return Err(Failure::Usage(format!(
            "--stdio takes the program alone; put its arguments after `--`, e.g. \
             mcp add {name} --stdio npx -- -y some-server"
        )));
    }
    let path = config_path(global)?;
    let _lock = config::lock(&path).map_err(Failure::Config)?;
    let mut file = config::load(&path).map_err(Failure::Config)?;
    let replaced = file
        .servers
        .insert(name.to_owned(), entry.clone())
        .is_some();
    config::save(&path, &file).map_err(Failure::Config)?;
    match global.format {
        Format::Json => print_json(&json!({
            "added": name,
            "replaced": replaced,
            "config": path,
            "entry": entry_shown(&entry),
        })),
        Format::Text => {
            let verb = if replaced { "updated" } else { "added" };
            println!(
                "{verb} {name}: {} (era {})",
                one_line(&entry.summary()),
                entry.era
            );
            if !entry.env.is_empty() {
                println!(
                    "  passes {} (names only: values are read when the server starts)",
                    entry.env.join(", ")
                );
            }
            if let Some(note) = entry.url.as_deref().and_then(config::url_secret_note) {
                println!("  note: {note}");
            }
            if let Some(o) = &entry.oauth {
                println!("  oauth: {}", crate::auth::oauth_summary(o));
            }
            if let Some(var) = &entry.bearer_token_env {
                println!("  bearer token from ${var} (the name only: never stored)");
            }
            for (header, var) in &entry.header_env {
                println!("  header {header} from ${var} (the name only: never stored)");
            }
            println!("  in {}", path.display());
            if let Some(hint) = crate::session::launcher_hint(&entry) {
                eprintln!("mcp: warning: {hint}");
            }
        }
    }
    Ok(0)
}

pub fn list(global: &Global) -> Result<u8, Failure> {
    let path = config_path(global)?;
    let file = config::load(&path).map_err(Failure::Config)?;
    match global.format {
        Format::Json => {
            let servers: Vec<Value> = file
                .servers
                .iter()
                .map(|(name, e)| entry_json(name, e))
                .collect();
            print_json(&json!({"config": path, "servers": servers}));
        }
        Format::Text => {
            if file.servers.is_empty() {
                println!(
                    "no servers in {} (add one with `mcp add <name> --stdio <command>`)",
                    path.display()
                );
            }
            let rows: Vec<Vec<String>> = file
                .servers
                .iter()
                .map(|(name, e)| entry_row(name, e))
                .collect();
            table(&rows);
        }
    }
    Ok(0)
}

/// `name  era auto  stdio  cmd args  env A,B` (names only).
fn entry_row(name: &str, e: &ServerEntry) -> Vec<String> {
    let env = if e.env.is_empty() {
        String::new()
    } else {
        format!("env {}", e.env.join(","))
    };
    vec![name.to_owned(), format!("era {}", e.era), e.summary(), env]
}

/// An entry as the CLI prints it as JSON: as stored, but for a URL's secret query
/// values, redacted (the file keeps them).
fn entry_shown(e: &ServerEntry) -> Value {
    let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
    if let (Some(obj), Some(url)) = (v.as_object_mut(), &e.url) {
        obj.insert("url".into(), json!(redact_url(url)));
    }
    v
}

fn entry_json(name: &str, e: &ServerEntry) -> Value {
    let mut v = entry_shown(e);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("name".into(), json!(name));
    }
    v
}

pub fn get(global: &Global, name: &str) -> Result<u8, Failure> {
    let entry = session::entry(global, name)?;
    match global.format {
        Format::Json => print_json(&entry_json(name, &entry)),
        Format::Text => {
            let mut rows = vec![vec!["name".to_owned(), name.to_owned()]];
            if let Some(cmd) = &entry.command {
                rows.push(vec!["transport".into(), "stdio".into()]);
                rows.push(vec!["command".into(), shell_words(cmd)]);
                if !entry.args.is_empty() {
                    let args: Vec<String> = entry.args.iter().map(|a| shell_words(a)).collect();
                    rows.push(vec!["args".into(), args.join(" ")]);
                }
            }
            if let Some(url) = &entry.url {
                rows.push(vec!["url".into(), redact_url(url)]);
            }
            let env = if entry.env.is_empty() {
                "(none: the server sees an empty environment)".to_owned()
            } else {
                format!("{} (names only)", entry.env.join(", "))
            };
            rows.push(vec!["env".into(), env]);
            rows.push(vec!["era".into(), entry.era.clone()]);
            if let Some(o) = &entry.oauth {
                rows.push(vec!["oauth".into(), crate::auth::oauth_summary(o)]);
            }
            if let Some(var) = &entry.bearer_token_env {
                rows.push(vec!["bearer token".into(), format!("${var} (name only)")]);
            }
            for (header, var) in &entry.header_env {
                rows.push(vec![
                    format!("header {header}"),
                    format!("${var} (name only)"),
                ]);
            }
            if entry.url.is_some() {
                let state = crate::auth::state(&entry);
                rows.push(vec!["credentials".into(), state.describe()]);
            }
            table(&rows);
        }
    }
    Ok(0)
}

pub fn remove(global: &Global, name: &str) -> Result<u8, Failure> {
    let path = config_path(global)?;
    let _lock = config::lock(&path).map_err(Failure::Config)?;
    let mut file = config::load(&path).map_err(Failure::Config)?;
    if file.servers.remove(name).is_none() {
        return Err(Failure::Usage(format!(
            "no server named {name:?} in {}",
            path.display()
        )));
    }
    config::save(&path, &file).map_err(Failure::Config)?;
    match global.format {
        Format::Json => print_json(&json!({"removed": name})),
        Format::Text => println!("removed {name}"),
    }
    Ok(0)
}

// ----- using a server ---------------------------------------------------------------

/// Parameters a signature names at most; more show as `…`.
const MAX_SHOWN_PARAMS: usize = 64;
/// Entries of a schema's `required` read at most.
const MAX_REQUIRED: usize = 256;

/// `name(a, b?)` from an object schema's property names and `required`: required
/// arguments first (in the order `required` lists them) and plain, optional ones with `?`.
fn signature(name: &str, schema: Option<&Schema>) -> String {
    let Some(schema) = schema else {
        return name.to_owned();
    };
    let (required, properties) = (&schema.required.items, &schema.properties);
    // Required ones first, in the order `required` lists them: those among the property
    // names read, and, when the properties were cut short, the others too (theirs may be
    // past the cut).
    let mut shown: Vec<(&str, bool)> = Vec::new();
    for r in required {
        let listed = properties.more || properties.items.contains(r);
        if listed && !shown.iter().any(|(n, _)| *n == r.as_str()) {
            shown.push((r.as_str(), true));
        }
    }
    let mut optional: Vec<&String> = (properties.items.iter())
        .filter(|n| !required.contains(n))
        .collect();
    optional.sort();
    shown.extend(optional.into_iter().map(|n| (n.as_str(), false)));
    let more = properties.more || shown.len() > MAX_SHOWN_PARAMS;
    shown.truncate(MAX_SHOWN_PARAMS);
    format!("{name}({})", parameter_list(shown.into_iter(), more))
}

/// `a, b?, …`: parameters as a signature names them (optional ones with `?`), then `…`
/// when more were left out.
fn parameter_list<'a>(params: impl Iterator<Item = (&'a str, bool)>, more: bool) -> String {
    let mut shown: Vec<String> = params
        .map(|(n, required)| {
            if required {
                n.to_owned()
            } else {
                format!("{n}?")
            }
        })
        .collect();
    if more {
        shown.push("…".to_owned());
    }
    shown.join(", ")
}

/// The part of a schema a signature shows; the rest is skipped as it is read, and so is
/// what lies past the first [`MAX_SHOWN_PARAMS`] property names and [`MAX_REQUIRED`]
/// required ones: a listing is the server's to size, and the table shows a line.
#[derive(serde::Deserialize, Default)]
struct Schema {
    #[serde(default)]
    required: Capped<String, MAX_REQUIRED>,
    #[serde(default)]
    properties: Capped<String, MAX_SHOWN_PARAMS>,
}

/// The first `N` elements of an array (or member names of an object) as `T`; the rest are
/// skipped unread, and `more` says there were some.
struct Capped<T, const N: usize> {
    items: Vec<T>,
    more: bool,
}

impl<T, const N: usize> Default for Capped<T, N> {
    fn default() -> Self {
        Capped {
            items: Vec::new(),
            more: false,
        }
    }
}

impl<'de, T: serde::Deserialize<'de>, const N: usize> serde::Deserialize<'de> for Capped<T, N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct Reader<T, const N: usize>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>, const N: usize> Visitor<'de> for Reader<T, N> {
            type Value = Capped<T, N>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array, an object or null")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(Capped::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut capped = Capped::default();
                while capped.items.len() < N {
                    match seq.next_element()? {
                        Some(item) => capped.items.push(item),
                        None => return Ok(capped),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    capped.more = true;
                }
                Ok(capped)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut capped = Capped::default();
                while capped.items.len() < N {
                    match map.next_key()? {
                        Some(key) => capped.items.push(key),
                        None => return Ok(capped),
                    }
                    map.next_value::<IgnoredAny>()?;
                }
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                    capped.more = true;
                }
                Ok(capped)
            }
        }
        d.deserialize_any(Reader(std::marker::PhantomData))
    }
}

/// The row of one listed tool: its signature and the start of its description. Only what
/// the row shows is parsed; the rest of its schema (which may be most of a message) is
/// skipped, not built as values.
fn tool_row(tool: &RawValue) -> Vec<String> {
    let row = ToolRow::read(tool);
    let schema = row
        .input_schema
        .map(|raw| serde_json::from_str::<Schema>(raw.get()).unwrap_or_default());
    vec![
        signature(&row.name, schema.as_ref()),
        short(row.description.as_deref().unwrap_or(""), 72),
    ]
}

/// A listed tool as its row and `call --arg` read it: its schema borrowed, unparsed.
#[derive(serde::Deserialize, Default)]
struct ToolRow<'a> {
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(rename = "inputSchema", default, borrow)]
    input_schema: Option<&'a RawValue>,
}

impl<'a> ToolRow<'a> {
    /// `tool` read; an empty row when it is not a tool object.
    fn read(tool: &'a RawValue) -> Self {
        serde_json::from_str(tool.get()).unwrap_or_default()
    }
}

/// What the text output shows of a listed tool, resource, template or prompt. Every
/// other member is skipped as it is read, so an item costs no more than these strings
/// whatever else it holds (read into values, each `{"":0}` it nests takes hundreds of
/// bytes); an item whose shown members have other types shows blank.
#[derive(serde::Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Listed {
    name: Option<String>,
    uri: Option<String>,
    uri_template: Option<String>,
    mime_type: Option<String>,
    description: Option<String>,
    arguments: Capped<ListedArgument, MAX_SHOWN_PARAMS>,
}

/// A prompt's argument, as its row shows it.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct ListedArgument {
    name: Option<String>,
    required: Option<bool>,
}

fn parse_items(items: &[Box<RawValue>]) -> Vec<Listed> {
    items
        .iter()
        .map(|i| serde_json::from_str(i.get()).unwrap_or_default())
        .collect()
}

/// JSON text from the server read into a value, unless it would take more memory
/// once parsed than the library lets a message take (or nests deeper): `None` then.
fn untrusted_value(raw: &RawValue) -> Option<Value> {
    let limits = mcp_blocking::mcp_proto::Limits::default();
    let depth = limits.max_nesting_depth;
    mcp_blocking::mcp_proto::jsonrpc::check_untrusted_json(
        raw.get().as_bytes(),
        depth,
        limits.max_parsed_bytes,
    )
    .ok()?;
    serde_json::from_str(raw.get()).ok()
}

/// A string member as shown: empty when absent.
fn shown(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

pub fn tools(global: &Global, server: &str) -> Result<u8, Failure> {
    // Declares what a call would (a server may list some tools only to a client that
    // can answer them): the listing shows what `mcp call` can call.
    let mut client = session::connect(global, server, None)?;
    let out = client.request(CallRequest::list_tools())?;
    let excluded: Vec<Value> = client
        .excluded_tools()
        .iter()
        .map(|(name, reason)| json!({"name": name, "reason": reason}))
        .collect();
    match global.format {
        Format::Json => {
            // Written straight from the listing: the tools verbatim, never read into
            // values (a tool may carry megabytes of small objects).
            print_json(&Doc {
                tools: Some(&out.items),
                excluded_tools: (!excluded.is_empty()).then_some(excluded),
                ..Doc::new(server, &client)
            });
        }
        Format::Text => {
            let rows: Vec<Vec<String>> = out.items.iter().map(|t| tool_row(t)).collect();
            if rows.is_empty() && excluded.is_empty() {
                println!("{server} offers no tools");
            }
            table(&rows);
            let excluded = client.excluded_tools();
            if !excluded.is_empty() {
                println!();
                println!("excluded (invalid x-mcp-header annotations, not callable over HTTP):");
                let rows: Vec<Vec<String>> = excluded
                    .iter()
                    .map(|(name, reason)| vec![format!("  {name}"), reason.clone()])
                    .collect();
                table(&rows);
            }
        }
    }
    client.close();
    Ok(0)
}

/// Turns `--arg key=value` into JSON using the tool's schema: strings stay strings,
/// numbers, booleans, arrays and objects are parsed; without a schema, JSON if it parses.
fn coerce(schema: Option<&Value>, key: &str, raw: &str) -> Result<Value, Failure> {
    let property = schema
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.get(key));
    // The types the schema allows (`type`, a list of them, or the `type` of each
    // `anyOf`/`oneOf` branch, as `Optional[str]` becomes in Pydantic); `null` aside,
    // since a value given on the command line is never meant as null.
    let kinds: Vec<&str> = property
        .map(|p| {
            let branches = ["anyOf", "oneOf"]
                .into_iter()
                .filter_map(|k| p.get(k).and_then(Value::as_array))
                .flatten();
            std::iter::once(p)
                .chain(branches)
                .flat_map(|s| match s.get("type") {
                    Some(Value::String(t)) => vec![t.as_str()],
                    Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                })
                .filter(|k| *k != "null")
                .collect()
        })
        .unwrap_or_default();
    let bad = |what: &str| Failure::Usage(format!("--arg {key}={raw}: expected {what}"));
    let untyped = || serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
    match kinds.as_slice() {
        [] => Ok(untyped()),
        [kind] => as_kind(kind, raw).ok_or_else(|| bad(kind_name(kind))),
        several => several
            .iter()
            .filter(|k| **k != "string")
            .find_map(|k| as_kind(k, raw))
            .or_else(|| {
                several
                    .contains(&"string")
                    .then(|| Value::String(raw.to_owned()))
            })
            .ok_or_else(|| {
                let names: Vec<&str> = several.iter().map(|k| kind_name(k)).collect();
                bad(&names.join(" or "))
            }),
    }
}

/// `raw` as a value of the JSON Schema type `kind` (any JSON, else a string, for a type
/// this does not know); `None` when it is not one.
fn as_kind(kind: &str, raw: &str) -> Option<Value> {
    match kind {
        "string" => Some(Value::String(raw.to_owned())),
        "number" => match serde_json::from_str::<Value>(raw) {
            Ok(v @ Value::Number(_)) => Some(v),
            _ => None,
        },
        "integer" => raw.parse::<i64>().ok().map(|i| json!(i)),
        "boolean" => match raw {
            "true" => Some(json!(true)),
            "false" => Some(json!(false)),
            _ => None,
        },
        "array" | "object" => serde_json::from_str(raw).ok(),
        _ => Some(serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))),
    }
}

/// What a value of the JSON Schema type `kind` is called in an error.
fn kind_name(kind: &str) -> &'static str {
    match kind {
        "number" => "a number",
        "integer" => "an integer",
        "boolean" => "true or false",
        "string" => "a string",
        _ => "JSON",
    }
}

/// The text of `--args`: the JSON itself, `@FILE` for a file's contents, or `-` for
/// standard input (JSON never starts with `@`, and `-` alone is no JSON value).
fn args_text(flag: &str) -> Result<String, Failure> {
    let read = |what: &str, got: std::io::Result<String>| {
        got.map_err(|e| Failure::Usage(format!("--args {what}: {e}")))
    };
    if flag == "-" {
        let mut text = String::new();
        let got = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map(|_| text);
        read("- (standard input)", got)
    } else if let Some(path) = flag.strip_prefix('@') {
        read(flag, std::fs::read_to_string(path))
    } else {
        Ok(flag.to_owned())
    }
}

pub fn call(
    global: &Global,
    server: &str,
    tool: &str,
    args_json: Option<&str>,
    args: &[(String, String)],
    input: Option<InputMode>,
    task: Option<TaskFlags>,
) -> Result<u8, Failure> {
    let args_json = args_json.map(args_text).transpose()?;
    let mut arguments = match args_json.as_deref() {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(Failure::Usage("--args must be a JSON object".into())),
            Err(e) => return Err(Failure::Usage(format!("--args is not valid JSON: {e}"))),
        },
    };
    let mut client = session::connect(global, server, input)?;
    if !args.is_empty() {
        let listed = client.request(CallRequest::list_tools())?;
        // Only the called tool's schema is read into a value, once it is checked.
        let schema = (listed.items.iter())
            .map(|t| ToolRow::read(t))
            .find(|t| t.name == tool)
            .and_then(|t| t.input_schema)
            .and_then(untrusted_value);
        for (k, v) in args {
            arguments.insert(k.clone(), coerce(schema.as_ref(), k, v)?);
        }
    }
    let mut request = CallRequest::call_tool(tool, Value::Object(arguments));
    if output::show_progress() {
        request = request.with_progress();
    }
    let (out, task_failed) = match task {
        Some(flags) => {
            let ttl = flags.ttl_secs.map(Duration::from_secs);
            match run_task(global, &mut client, request.as_task(ttl)) {
                Ok(done) => done,
                // A task that needed input fails as a plain call that needed it does.
                Err(failure) => {
                    let needed = (failure.error()).and_then(|e| input_needed(&client, Some(e)));
                    return Err(needed.unwrap_or(failure));
                }
            }
        }
        None => match client.request(request) {
            Ok(out) => (out, false),
            Err(e) => {
                let failure = input_needed(&client, Some(&e));
                return Err(failure.unwrap_or_else(|| e.into()));
            }
        },
    };
    let result = out.tool_result()?;
    // A task that ended `failed` failed, even when its result does not say so.
    let failed = result.is_error == Some(true) || task_failed;
    if let Some(needed) = input_needed(&client, None) {
        client.close();
        return Err(needed);
    }
    let mut saver = Saver::new(global.save_content.as_deref());
    match global.format {
        Format::Json => {
            print_json(&Doc {
                result: Some(&out.result),
                ..Doc::new(server, &client)
            });
            // Files are still written; the document stays exactly the server's.
            for block in result.blocks() {
                let _ = content::render(&block, &mut saver);
            }
            report_saved(&saver);
        }
        Format::Text => print_tool_result(&result, &mut saver),
    }
    client.close();
    if unsaved(&saver) {
        return Ok(1);
    }
    if failed {
        if global.format == Format::Text {
            eprintln!("mcp: the tool {tool} reported an error");
        }
        return Ok(3);
    }
    Ok(0)
}

/// When a call failed because the server wanted input this run cannot give (a legacy
/// request for an undeclared capability, or a 2026 `-32021`), the failure that says
/// which and names the flag that answers it; the same words in both eras.
fn input_needed(client: &Client, error: Option<&mcp_blocking::Error>) -> Option<Failure> {
    if let Some((form, why)) = crate::extras::unfilled() {
        return Some(Failure::NeedsInput {
            message: format!(
                "--auto-accept cannot answer the server's form ({}) with its defaults: {why}",
                output::clip(&one_line(&form), 80)
            ),
            hint: "run it from a terminal without --auto-accept to fill the form in".to_owned(),
        });
    }
    let mut kinds: Vec<String> = client
        .undeclared_inputs()
        .iter()
        .chain(&crate::extras::unanswered())
        .map(|k| k.split(' ').next().unwrap_or(k).to_owned())
        .collect();
    if let Some(e) = error
        && e.code() == Some(-32021)
        && let Some(required) = e
            .error_object()
            .and_then(|o| o.data.as_ref())
            .and_then(|d| d.get("requiredCapabilities"))
            .and_then(Value::as_object)
    {
        // Names the server chose: one line each in the message.
        kinds.extend(required.keys().map(|k| one_line(k).into_owned()));
    }
    kinds.sort();
    kinds.dedup();
    if kinds.is_empty() {
        return None;
    }
    let flags: Vec<&str> = kinds
        .iter()
        .filter_map(|k| match k.as_str() {
            "elicitation" => Some("--auto-accept (answers forms with their defaults)"),
            "sampling" => Some("--sampling-command CMD"),
            "roots" => Some("--root PATH"),
            _ => None,
        })
        .collect();
    let hint = if flags.is_empty() {
        "run it from a terminal to answer".to_owned()
    } else {
        format!("pass {}", flags.join(", or "))
    };
    Some(Failure::NeedsInput {
        message: format!(
            "the server asked for {} input, and nobody can answer here (stdin is not a \
             terminal, or --no-input was given)",
            kinds.join(" and ")
        ),
        hint,
    })
}

/// Starts `request` as a task and follows it to its end, its creation and status
/// changes on stderr (text output only: the JSON document stays the result's). With the
/// result, whether the task was last seen `failed`.
fn run_task(
    global: &Global,
    client: &mut Client,
    request: CallRequest,
) -> Result<(CallOutput, bool), Failure> {
    let call = client.start_task(request)?;
    let mut failed = false;
    let outcome = loop {
        if let Some(outcome) = client.poll_task_result(call) {
            break outcome;
        }
        let event = client.next_task_event(Some(call), Duration::from_millis(250));
        let (verb, task) = match event {
            Some(Event::TaskCreated { task, .. }) => ("created", task),
            Some(Event::TaskStatus { task, .. }) => ("now", task),
            Some(_) => continue,
            None if client.is_closed() => break client.task_result(call),
            None => continue,
        };
        failed = task.status == mcp_blocking::TaskStatus::Failed;
        if global.format == Format::Text {
            let message = task
                .status_message
                .as_deref()
                .map(|m| format!(": {}", one_line(m)))
                .unwrap_or_default();
            eprintln!(
                "mcp: task {} {verb} {}{message}",
                one_line(&task.task_id),
                task.status
            );
        }
    };
    Ok((outcome?, failed))
}

/// `mcp tasks`: `tasks/list` (2025-11-25; the 2026-07-28 extension has none).
pub fn tasks(global: &Global, server: &str) -> Result<u8, Failure> {
    let mut client = session::connect(global, server, Some(InputMode::None))?;
    let out = client.request(CallRequest::list_tasks())?;
    let tasks = out.tasks()?;
    match global.format {
        Format::Json => print_json(&Doc {
            tasks: Some(&out.items),
            ..Doc::new(server, &client)
        }),
        Format::Text => {
            let rows: Vec<Vec<String>> = tasks
                .iter()
                .map(|t| {
                    vec![
                        t.task_id.clone(),
                        t.status.to_string(),
                        t.last_updated_at.clone(),
                        t.status_message.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            if rows.is_empty() {
                println!("no tasks");
            } else {
                table(&rows);
            }
        }
    }
    client.close();
    Ok(0)
}

fn print_tool_result(result: &CallToolResult, saver: &mut Saver) {
    // A block at a time (a result can hold millions of them), written in large pieces
    // rather than a system call per line.
    let mut printed = false;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for block in result.blocks() {
        let _ = writeln!(out, "{}", clean(&content::render(&block, saver)));
        printed = true;
    }
    // Indented as it is read, never parsed into values: the server chose its size.
    if let Some(s) = &result.structured_content
        && !printed
    {
        let _ = crate::terminal::write_pretty(&mut out, s.get()).and_then(|()| writeln!(out));
    }
    let _ = out.flush();
}

pub fn resources(global: &Global, server: &str) -> Result<u8, Failure> {
    let mut client = session::connect(global, server, Some(InputMode::None))?;
    let items = listing(&mut client, CallRequest::list_resources(), "resources")?;
    // Templates only where the server offers resources at all; a server without them
    // answers the listing with an error, which is no reason to fail the command.
    let templates = client
        .request(CallRequest::list_resource_templates())
        .map(|t| t.items)
        .unwrap_or_default();
    match global.format {
        Format::Json => print_json(&Doc {
            resources: Some(&items),
            resource_templates: Some(&templates),
            ..Doc::new(server, &client)
        }),
        Format::Text => {
            let rows: Vec<Vec<String>> = parse_items(&items)
                .iter()
                .map(|r| {
                    vec![
                        shown(&r.uri).to_owned(),
                        shown(&r.name).to_owned(),
                        shown(&r.mime_type).to_owned(),
                    ]
                })
                .collect();
            if rows.is_empty() {
                println!("{server} offers no resources");
            }
            table(&rows);
            let rows: Vec<Vec<String>> = parse_items(&templates)
                .iter()
                .map(|t| {
                    vec![
                        shown(&t.uri_template).to_owned(),
                        shown(&t.name).to_owned(),
                        shown(&t.mime_type).to_owned(),
                    ]
                })
                .collect();
            if !rows.is_empty() {
                println!("\ntemplates:");
                table(&rows);
            }
        }
    }
    client.close();
    Ok(0)
}

/// The items of a listing; none when the server answered "Method not found" to a
/// listing of something it did not declare (`capability`: `prompts`, `resources`): it
/// offers none, which is no failure.
fn listing(
    client: &mut Client,
    request: CallRequest,
    capability: &str,
) -> Result<Vec<Box<serde_json::value::RawValue>>, Failure> {
    match client.request(request) {
        Ok(out) => Ok(out.items),
        Err(e) if undeclared(client, &e, capability) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// Whether `e` is a "Method not found" for a `capability` the server did not declare.
fn undeclared(client: &Client, e: &mcp_blocking::Error, capability: &str) -> bool {
    e.code() == Some(-32601) && client.server().capabilities.get(capability).is_none()
}

/// `e`, with a hint when it is a "Method not found" for a `capability` the server did
/// not declare.
fn hinted(client: &Client, e: mcp_blocking::Error, capability: &str) -> Failure {
    if undeclared(client, &e, capability) {
        let hint =
            format!("the server declared no {capability} capability: it offers no {capability}");
        return Failure::Hinted(e, hint);
    }
    e.into()
}

pub fn read(
    global: &Global,
    server: &str,
    uri: &str,
    input: Option<InputMode>,
) -> Result<u8, Failure> {
    let mut client = session::connect(global, server, input)?;
    let out = client
        .request(CallRequest::read_resource(uri))
        .map_err(|e| hinted(&client, e, "resources"))?;
    let mut saver = Saver::new(global.save_content.as_deref());
    // The JSON document is printed whatever the result holds; text needs the contents.
    let lines: Result<Vec<String>, _> = out.resource_contents().map(|contents| {
        contents
            .iter()
            .map(|item| match item {
                Ok(c) => content::contents(c, &mut saver),
                Err(raw) => raw.get().to_owned(),
            })
            .collect()
    });
    match global.format {
        Format::Json => {
            print_json(&Doc {
                result: Some(&out.result),
                ..Doc::new(server, &client)
            });
            report_saved(&saver);
        }
        Format::Text => {
            for t in &lines? {
                let end = if t.ends_with('\n') { "" } else { "\n" };
                print!("{}{end}", clean(t));
            }
        }
    }
    client.close();
    Ok(u8::from(unsaved(&saver)))
}

pub fn prompts(global: &Global, server: &str) -> Result<u8, Failure> {
    let mut client = session::connect(global, server, Some(InputMode::None))?;
    let items = listing(&mut client, CallRequest::list_prompts(), "prompts")?;
    match global.format {
        Format::Json => print_json(&Doc {
            prompts: Some(&items),
            ..Doc::new(server, &client)
        }),
        Format::Text => {
            let rows: Vec<Vec<String>> = parse_items(&items)
                .iter()
                .map(|p| {
                    let args = (p.arguments.items.iter())
                        .map(|a| (shown(&a.name), a.required == Some(true)));
                    let args = parameter_list(args, p.arguments.more);
                    vec![
                        format!("{}({args})", shown(&p.name)),
                        short(shown(&p.description), 72),
                    ]
                })
                .collect();
            if rows.is_empty() {
                println!("{server} offers no prompts");
            }
            table(&rows);
        }
    }
    client.close();
    Ok(0)
}

pub fn prompt(
    global: &Global,
    server: &str,
    name: &str,
    args: &[(String, String)],
    input: Option<InputMode>,
) -> Result<u8, Failure> {
    let mut client = session::connect(global, server, input)?;
    let arguments: Map<String, Value> = args
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let out = client
        .request(CallRequest::get_prompt(name, arguments))
        .map_err(|e| hinted(&client, e, "prompts"))?;
    let mut saver = Saver::new(global.save_content.as_deref());
    // The JSON document is printed whatever the result holds; text needs the messages.
    let lines: Result<Vec<String>, _> = out.prompt_view().map(|view| {
        view.messages
            .iter()
            .map(|m| prompt_message(&m.role, &content::render(&m.content, &mut saver)))
            .collect()
    });
    match global.format {
        Format::Json => {
            print_json(&Doc {
                result: Some(&out.result),
                ..Doc::new(server, &client)
            });
            report_saved(&saver);
        }
        Format::Text => {
            for line in &lines? {
                println!("{line}");
            }
        }
    }
    client.close();
    Ok(u8::from(unsaved(&saver)))
}

/// A prompt message as text: `role: ` and its text, whose further lines are indented
/// under the first, so that a line of the text (`assistant: …`) cannot pass for a message
/// of its own.
fn prompt_message(role: &str, text: &str) -> String {
    let role = one_line(role);
    let indent = " ".repeat(role.chars().count() + 2);
    let text = clean(text);
    let mut lines = text.split('\n');
    let mut out = format!("{role}: {}", lines.next().unwrap_or_default());
    for line in lines {
        out.push('\n');
        out.push_str(&indent);
        out.push_str(line);
    }
    out
}

pub fn complete(
    global: &Global,
    server: &str,
    reference: &CompletionRef,
    argument: &str,
    value: &str,
    context: &[(String, String)],
) -> Result<u8, Failure> {
    let mut client = session::connect(global, server, Some(InputMode::None))?;
    let context: Map<String, Value> = context
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let out = client.request(CallRequest::complete(reference, argument, value, context))?;
    let completion = out.completion()?;
    match global.format {
        Format::Json => print_json(&Doc {
            result: Some(&out.result),
            ..Doc::new(server, &client)
        }),
        Format::Text => {
            for v in &completion.values {
                println!("{}", one_line(v));
            }
            let shown = completion.values.len() as u64;
            match (completion.total, completion.has_more) {
                (Some(total), _) if total > shown => {
                    eprintln!("({shown} of {total} values)");
                }
                (_, Some(true)) => eprintln!("(more values exist)"),
                _ => {}
            }
        }
    }
    client.close();
    Ok(0)
}

/// `mcp listen`: change notifications, one line each, until the subscription ends,
/// the connection does, or `max_events` notifications were printed.
pub fn listen(
    global: &Global,
    server: &str,
    resources: &[String],
    list_changed: bool,
    max_events: Option<u64>,
    tasks: Option<&[String]>,
) -> Result<u8, Failure> {
    let mut client = session::connect(global, server, Some(InputMode::None))?;
    let wait = Duration::from_secs(60);
    let mut printed = 0u64;
    let more = |printed: u64| max_events.is_none_or(|max| printed < max);
    if client.era() == Era::Modern {
        let mut filter = ListenFilter::new();
        if list_changed {
            filter = filter.tools().prompts().resources();
        }
        for uri in resources {
            filter = filter.resource(uri.clone());
        }
        let task_ids = tasks.unwrap_or_default();
        if tasks.is_some() && task_ids.is_empty() {
            client.close();
            return Err(Failure::Usage(
                "2026-07-28 pushes task updates per task: name them with --task <id>".into(),
            ));
        }
        for id in task_ids {
            filter = filter.task(id.clone());
        }
        let subscription = client.listen(&filter)?;
        while more(printed) {
            let Some(event) = client.next_subscription_event(Some(subscription), wait) else {
                if client.is_closed() || crate::interrupt::interrupted() {
                    break;
                }
                continue;
            };
            match event {
                Event::SubscriptionAcknowledged {
                    acknowledged,
                    refused,
                    ..
                } => {
                    listen_line(
                        global,
                        "acknowledged",
                        &acknowledged.to_json(),
                        Some(&refused),
                    );
                    if acknowledged.is_empty() {
                        // Refused everything: nothing can come on this subscription,
                        // so waiting for it would never end.
                        let _ = client.end_listen(subscription);
                        let detail = "failed: the server acknowledged none of what was asked";
                        listen_line(global, "ended", &Value::String(detail.into()), None);
                        client.close();
                        return Ok(1);
                    }
                }
                Event::SubscriptionNotification { notification, .. } => {
                    print_notification(global, &notification);
                    printed += 1;
                }
                Event::SubscriptionReconnecting { attempt, delay, .. } => {
                    eprintln!(
                        "mcp: stream closed; listening again in {delay:?} (attempt {attempt})"
                    );
                }
                Event::SubscriptionEnded { end, .. } => {
                    let (detail, status) = match end {
                        ListenEnd::Complete => ("complete".to_owned(), 0),
                        ListenEnd::CancelledByServer => ("cancelled by the server".to_owned(), 0),
                        ListenEnd::EndedByClient => ("ended".to_owned(), 0),
                        ListenEnd::Failed(e) => (format!("failed: {e}"), 1),
                        other => (format!("{other:?}"), 1),
                    };
                    listen_line(global, "ended", &Value::String(detail), None);
                    client.close();
                    return Ok(status);
                }
                _ => {}
            }
        }
        let _ = client.end_listen(subscription);
    } else {
        // A legacy server offers `resources/subscribe` only with `resources.subscribe`.
        let subscribes = client
            .server()
            .capabilities
            .pointer("/resources/subscribe")
            .is_some_and(|s| s == &Value::Bool(true));
        if !resources.is_empty() && !subscribes {
            let why = "the server does not offer resource subscriptions (it declared no \
                       resources.subscribe)";
            if !list_changed && tasks.is_none() {
                // Nothing else was asked: nothing can come.
                let detail = Value::String(format!("failed: {why}"));
                listen_line(global, "ended", &detail, None);
                client.close();
                return Ok(1);
            }
            eprintln!(
                "mcp: not subscribed to {}: {why}",
                one_line(&resources.join(" "))
            );
        } else {
            for uri in resources {
                client.subscribe_resource(uri)?;
            }
        }
        // Task status notifications are task events; with --tasks, both kinds are
        // waited for in turn. Over HTTP the server's stream is looked at every second:
        // once it is gone for good nothing more can come.
        let wait = if tasks.is_some() {
            Duration::from_millis(200)
        } else if client.endpoint().is_some() {
            Duration::from_secs(1)
        } else {
            wait
        };
        while more(printed) {
            if !client.machine().hears_server() && !client.is_closed() {
                let why = if client.http_session_id().is_none() {
                    "the server keeps no session, so it has no stream to send notifications on"
                } else {
                    "the server's event stream (GET) was refused or lost for good"
                };
                listen_line(
                    global,
                    "ended",
                    &Value::String(format!("failed: {why}")),
                    None,
                );
                client.close();
                return Ok(1);
            }
            if tasks.is_some()
                && let Some(Event::TaskStatus { task, .. }) = client.next_task_event(None, wait)
            {
                print_task_status(global, &task);
                printed += 1;
                continue;
            }
            let Some(n) = client.next_notification(wait) else {
                if client.is_closed() || crate::interrupt::interrupted() {
                    break;
                }
                continue;
            };
            let wanted = match Change::from_notification(&n) {
                Some(Change::ResourceUpdated { .. }) => true,
                Some(_) => list_changed,
                None => false,
            };
            if wanted {
                print_notification(global, &n);
                printed += 1;
            }
        }
        if !crate::interrupt::interrupted()
            && let Some(reason) = client.close_reason()
        {
            // The connection went: nothing more can arrive, and that is a failure.
            let detail = Value::String(format!("failed: {reason}"));
            listen_line(global, "ended", &detail, None);
            return Ok(1);
        }
        for uri in resources {
            let _ = client.unsubscribe_resource(uri);
        }
    }
    client.close();
    Ok(0)
}

/// One notification of `mcp listen`: `method [uri]` as text, the notification as a JSON line.
fn print_notification(global: &Global, n: &Notification) {
    match global.format {
        Format::Json => {
            // The params as the server wrote them (a number JSON reads as a double
            // stays exact), on one line.
            let raw = n
                .params
                .as_deref()
                .map_or("null".into(), |p| compact(p.get()));
            let method = serde_json::to_string(&n.method).unwrap_or_default();
            let line = format!(r#"{{"event":"notification","method":{method},"params":{raw}}}"#);
            raw_line(&line);
        }
        Format::Text => {
            let method = n.method.strip_prefix("notifications/").unwrap_or(&n.method);
            let params = n
                .params
                .as_deref()
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .unwrap_or(Value::Null);
            match params.get("uri").and_then(Value::as_str) {
                Some(uri) => println!("{} {}", one_line(method), one_line(uri)),
                None => println!("{}", one_line(method)),
            }
        }
    }
}

/// A task status of `mcp listen --tasks` (2025-11-25): `task <id> <status>` as text.
fn print_task_status(global: &Global, task: &mcp_blocking::Task) {
    match global.format {
        Format::Json => {
            // The task's fields the server sent, none it did not.
            let mut params = json!({"taskId": task.task_id, "status": task.status.as_str()});
            if let Some(m) = &task.status_message {
                params["statusMessage"] = json!(m);
            }
            for (key, at) in [
                ("createdAt", &task.created_at),
                ("lastUpdatedAt", &task.last_updated_at),
            ] {
                if !at.is_empty() {
                    params[key] = json!(at);
                }
            }
            params["ttl"] = json!(task.ttl.map(|t| t.as_millis() as u64));
            if let Some(p) = task.poll_interval {
                params["pollInterval"] = json!(p.as_millis() as u64);
            }
            json_line(&json!({
                "event": "notification",
                "method": "notifications/tasks/status",
                "params": params,
            }))
        }
        Format::Text => {
            let message = task
                .status_message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            println!(
                "task {} {}{}",
                one_line(&task.task_id),
                task.status,
                one_line(&message)
            );
        }
    }
}

/// A line of `mcp listen` about the subscription itself.
fn listen_line(global: &Global, event: &str, detail: &Value, refused: Option<&ListenFilter>) {
    match global.format {
        Format::Json => {
            let mut line = json!({"event": event, "detail": detail});
            if let Some(r) = refused {
                line["refused"] = r.to_json();
            }
            json_line(&line);
        }
        Format::Text => {
            let text = match detail {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            match refused.filter(|r| !r.is_empty()) {
                Some(r) => println!(
                    "{event} {} (refused {})",
                    one_line(&text),
                    one_line(&r.to_json().to_string())
                ),
                None => println!("{event} {}", one_line(&text)),
            }
        }
    }
}

/// One compact JSON document on its own line (escaped for a terminal like
/// [`print_json`]).
fn json_line(value: &Value) {
    raw_line(&serde_json::to_string(value).unwrap_or_default());
}

/// A JSON document already written on one line, on its own line (escaped for a
/// terminal like [`print_json`]).
fn raw_line(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", crate::terminal::json(text));
    let _ = out.flush();
}

/// Valid JSON text without the whitespace between its tokens: one line, every value
/// as it was written.
fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}

/// Whether `--save-content` failed to write a block it was asked to (each is named on its
/// line in text output); says how many on stderr. The command then exits 1.
fn unsaved(saver: &Saver) -> bool {
    if !saver.failed.is_empty() {
        eprintln!(
            "mcp: {} block(s) could not be saved to --save-content",
            saver.failed.len()
        );
        // JSON output shows no block's line: the reasons go here.
        for why in &saver.failed {
            eprintln!("mcp:   {}", crate::terminal::one_line(why));
        }
    }
    !saver.failed.is_empty()
}

/// Names the files `--save-content` wrote, on stderr (the JSON document is the server's).
fn report_saved(saver: &Saver) {
    for path in &saver.saved {
        eprintln!("mcp: saved {}", path.display());
    }
}

/// A connection check: era, version, server name and tool count.
struct Check {
    era: Era,
    version: &'static str,
    server_info: Value,
    server_name: String,
    tools: usize,
}

/// `approve`: a person may approve an authorization in a browser (`test`), as for any
/// command; `status` and `doctor` probe without one.
fn check(global: &Global, name: &str, approve: bool) -> Result<Check, Failure> {
    let bounded = Global {
        timeout: Some(session::probe_timeout(global)),
        ..global.clone()
    };
    // The capabilities a script's call declares (the tools counted are those it can
    // call; none with --no-input), but nobody is ever waited for: a check stays bounded.
    let input = if global.no_input {
        InputMode::None
    } else {
        InputMode::Script
    };
    let run = crate::auth::Plan::for_run(&bounded);
    let plan = crate::auth::Plan {
        interactive: approve && run.interactive,
        ..run
    };
    let entry = session::entry(&bounded, name)?;
    let mut client = session::connect_with(&bounded, name, entry, Some(input), &plan)?;
    let tools = client.list_tools()?.len();
    let c = Check {
        era: client.era(),
        version: client.protocol_version().as_str(),
        server_info: serde_json::to_value(&client.server().server_info).unwrap_or(Value::Null),
        server_name: server_label(&client),
        tools,
    };
    client.set_grace_period(Duration::from_millis(500));
    client.close();
    Ok(c)
}

fn server_label(client: &Client) -> String {
    match &client.server().server_info {
        Some(i) => format!("{} {}", i.name, i.version),
        None => "(unnamed server)".to_owned(),
    }
}

pub fn test(global: &Global, name: &str) -> Result<u8, Failure> {
    let c = check(global, name, true)?;
    match global.format {
        Format::Json => print_json(&json!({
            "server": name,
            "ok": true,
            "era": c.era,
            "protocolVersion": c.version,
            "serverInfo": c.server_info,
            "tools": c.tools,
        })),
        Format::Text => println!(
            "ok  {name}: {}, {} era ({}), {} tool{}",
            one_line(&c.server_name),
            c.era,
            c.version,
            c.tools,
            if c.tools == 1 { "" } else { "s" }
        ),
    }
    Ok(0)
}

pub fn status(global: &Global, only: Option<&str>, connect: bool) -> Result<u8, Failure> {
    let path = config_path(global)?;
    let file = config::load(&path).map_err(Failure::Config)?;
    let names: Vec<&String> = match only {
        Some(n) => {
            let Some((name, _)) = file.servers.get_key_value(n) else {
                return Err(Failure::Usage(format!("no server named {n:?}")));
            };
            vec![name]
        }
        None => file.servers.keys().collect(),
    };
    let mut failed = false;
    let mut rows = Vec::new();
    let mut docs = Vec::new();
    for name in names {
        let entry = &file.servers[name];
        let mut doc = entry_json(name, entry);
        let mut row = entry_row(name, entry);
        if entry.url.is_some() {
            let state = crate::auth::state(entry);
            row.push(format!("credentials: {}", state.describe()));
            doc["credentials"] = state.to_json();
        }
        if connect {
            // A probe never waits for a person.
            match check(global, name, false) {
                Ok(c) => {
                    row.push(format!("ok: {} {} ({} tools)", c.era, c.version, c.tools));
                    doc["status"] = json!({"ok": true, "era": c.era, "protocolVersion": c.version, "tools": c.tools});
                }
                Err(f) => {
                    failed = true;
                    let (kind, msg) = (f.kind(), f.message());
                    let (code, http_status) = f
                        .error()
                        .map_or((None, None), |e| (e.code(), e.http_status()));
                    row.push(format!("failed: {msg}"));
                    doc["status"] = json!({"ok": false, "kind": kind, "message": msg,
                        "code": code, "httpStatus": http_status});
                }
            }
        }
        rows.push(row);
        docs.push(doc);
    }
    match global.format {
        Format::Json => print_json(&json!({"config": path, "servers": docs})),
        Format::Text => {
            println!("config {}", path.display());
            if rows.is_empty() {
                println!("no servers configured");
            }
            table(&rows);
            if !connect && !rows.is_empty() {
                println!("(offline; add --connect to probe each server)");
            }
        }
    }
    Ok(if failed { 1 } else { 0 })
}

/// Whether `path` is a file this user may run.
fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

pub fn doctor(global: &Global, connect: bool) -> Result<u8, Failure> {
    let mut checks: Vec<(&'static str, String)> = Vec::new();
    let path = config_path(global)?;
    let file = match config::load(&path) {
        Ok(f) => {
            let what = if path.exists() {
                "readable"
            } else {
                "absent (no servers yet)"
            };
            checks.push(("ok", format!("config {}: {what}", path.display())));
            f
        }
        Err(e) => {
            checks.push(("fail", e));
            config::ConfigFile::default()
        }
    };
    for (name, entry) in &file.servers {
        if let (None, Some(url)) = (&entry.command, &entry.url) {
            match session::check_url(url) {
                Ok(()) => checks.push(("ok", format!("{name}: endpoint {}", redact_url(url)))),
                Err(m) => checks.push(("fail", format!("{name}: {m}"))),
            }
            if session::era_mode(entry, name).is_err() {
                checks.push((
                    "fail",
                    format!("{name}: era {:?} is not legacy|auto|modern", entry.era),
                ));
            }
            let state = crate::auth::state(entry);
            checks.push((state.severity(), format!("{name}: {}", state.advice(name))));
            continue;
        }
        match session::command(entry, name) {
            Err(f) => checks.push(("fail", f.message())),
            Ok(cmd) => match cmd.resolve_program() {
                Ok(p) if is_executable(&p) => {
                    checks.push(("ok", format!("{name}: runs {}", p.display())))
                }
                Ok(p) => checks.push((
                    "fail",
                    format!(
                        "{name}: {} does not exist or is not executable",
                        p.display()
                    ),
                )),
                Err(e) => checks.push((
                    "fail",
                    format!("{name}: {}: {e}", cmd.program().to_string_lossy()),
                )),
            },
        }
        if let Some(hint) = session::launcher_hint(entry) {
            checks.push(("warn", format!("{name}: {hint}")));
        }
        for var in &entry.env {
            if std::env::var_os(var).is_none() {
                checks.push((
                    "warn",
                    format!("{name}: {var} is not set here, so the server will not see it"),
                ));
            }
        }
        if session::era_mode(entry, name).is_err() {
            checks.push((
                "fail",
                format!("{name}: era {:?} is not legacy|auto|modern", entry.era),
            ));
        }
    }
    if connect {
        for name in file.servers.keys() {
            // A probe never waits for a person.
            match check(global, name, false) {
                Ok(c) => checks.push((
                    "ok",
                    format!(
                        "{name}: connected, {} era ({}), {} tools",
                        c.era, c.version, c.tools
                    ),
                )),
                Err(f @ (Failure::Usage(_) | Failure::Config(_) | Failure::Replay(_))) => {
                    checks.push(("warn", format!("{name}: {}", f.message())))
                }
                Err(f) => checks.push(("fail", format!("{name}: {}", f.message()))),
            }
        }
    }
    let failed = checks.iter().any(|(s, _)| *s == "fail");
    match global.format {
        Format::Json => {
            let list: Vec<Value> = checks
                .iter()
                .map(|(s, m)| json!({"status": s, "message": m}))
                .collect();
            print_json(&json!({"ok": !failed, "checks": list}));
        }
        Format::Text => {
            let rows: Vec<Vec<String>> = checks
                .iter()
                .map(|(s, m)| vec![(*s).to_owned(), m.clone()])
                .collect();
            table(&rows);
        }
    }
    Ok(u8::from(failed))
}

/// `mcp replay FILE`: plays every transcript in the file again, prints what was checked
/// or the first difference (exit 1).
pub fn replay(global: &Global, file: &Path) -> Result<u8, Failure> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::Replay(format!("cannot read {}: {e}", file.display())))?;
    let summary = mcp_blocking::transcript::replay(&text)
        .map_err(|e| Failure::Replay(format!("{}: {e}", file.display())))?;
    match global.format {
        Format::Json => print_json(&json!({
            "ok": true,
            "transcripts": summary.transcripts,
            "entries": summary.entries,
        })),
        Format::Text => println!("OK: {summary} replayed"),
    }
    Ok(0)
}

pub fn serve_example(
    era: &str,
    http: Option<&str>,
    tasks: bool,
    sse_polling: bool,
    oauth: bool,
    scale: Option<&crate::scale::Scale>,
) -> Result<u8, Failure> {
    let only = match era {
        "legacy" => Some(Era::Legacy),
        "modern" => Some(Era::Modern),
        _ => None,
    };
    let mut configured = Ok(());
    let server = example::server_with(|config| {
        if let Some(era) = only {
            let accepted = VersionPolicy::default()
                .accepted
                .into_iter()
                .filter(|v| v.era() == era)
                .collect();
            config.versions = VersionPolicy { accepted };
        }
        if tasks {
            example::add_task_tool(config);
        }
        if let Some(scale) = scale
            && let Err(e) = scale.configure(config)
        {
            configured = Err(e);
        }
    });
    if let Err(e) = configured {
        eprintln!("mcp serve-example: {e}");
        return Ok(1);
    }
    if let Some(addr) = http {
        // Streamable HTTP at /mcp until killed; the URL goes to stderr for whoever
        // started us (stdout stays free). Polling (SEP-1699): in a 2025-11-25 session, the
        // SSE answer to a call not answered at once is its priming event and `retry:` (the
        // endpoint's default, 1 s), and the client fetches the rest with GET and
        // Last-Event-ID.
        let mut options = mcp_blocking::HttpServeOptions::default();
        options.endpoint.sse_polling = sse_polling;
        let served = std::net::TcpListener::bind(addr).and_then(|listener| {
            // The gate (--oauth) is there before the first connection, so nothing is ever
            // served without it.
            let gate = match oauth {
                true => {
                    let authority = listener.local_addr()?.to_string();
                    let seed = mcp_io::auth::random_seed()?;
                    Some(crate::oauth_server::ExampleAuth::new(&authority, &seed))
                }
                false => None,
            };
            mcp_blocking::serve_http_setup(listener, server, options, |endpoint| {
                if let Some(gate) = gate {
                    endpoint.set_gate(Box::new(gate));
                }
                if let Some(scale) = scale {
                    scale.setup(endpoint);
                }
            })
        });
        return match served {
            Ok(handle) => {
                eprintln!("{}", handle.url());
                if oauth {
                    eprintln!(
                        "bearer tokens needed; the authorization server at {} approves every \
                         login at once (an example: no person, no account)",
                        handle.url().trim_end_matches("/mcp")
                    );
                }
                if std::io::stderr().is_terminal() {
                    eprintln!(
                        "serving the example MCP server ({era} era{}) at that URL; \
                         try `mcp tools {}` in another terminal; Ctrl-C stops it",
                        if era == "both" { "s" } else { "" },
                        handle.url()
                    );
                }
                if let Some(scale) = scale {
                    scale.watch_keys(&handle);
                }
                handle.wait();
                Ok(0)
            }
            Err(e) => {
                eprintln!("mcp serve-example: cannot serve HTTP on {addr}: {e}");
                Ok(1)
            }
        };
    }
    if std::io::stdin().is_terminal() {
        eprintln!(
            "mcp serve-example speaks MCP on stdin and stdout, for a client that starts it \
             (mcp add ex --stdio mcp -- serve-example --stdio); Ctrl-D or Ctrl-C stops it"
        );
    }
    match mcp_blocking::serve_stdio(server) {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("mcp serve-example: {e}");
            Ok(1)
        }
    }
}

/// Output of a listing call, for the demo.
pub fn tool_names(out: &CallOutput) -> Vec<String> {
    parse_items(&out.items)
        .iter()
        .map(|t| shown(&t.name).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_messages_from_a_server_cannot_forge_lines() {
        // A tool whose name and a property hold line breaks stays on its row.
        let tool = json!({"name": "bad\nfake", "description": "one\ntwo",
            "inputSchema": {"type": "object", "properties": {"a\nb": {}}}})
        .to_string();
        let row = tool_row(&RawValue::from_string(tool).unwrap());
        let lines = crate::output::table_lines(&[row], 100);
        assert_eq!(lines, ["bad^Jfake(a^Jb?)  one"]);
        // A prompt message's further lines are indented under its role.
        assert_eq!(
            prompt_message("user", "hi\nassistant: sure"),
            "user: hi\n      assistant: sure"
        );
        assert_eq!(prompt_message("user\nassistant", "x"), "user^Jassistant: x");
    }

    #[test]
    fn rows_read_what_they_show_and_tolerate_null_or_long_lists() {
        let raw = |v: Value| RawValue::from_string(v.to_string()).unwrap();
        // `null` where a list is expected reads as empty.
        let tool = json!({"name": "t", "inputSchema": {"type": "object", "required": null,
            "properties": {"a": {}}}});
        assert_eq!(tool_row(&raw(tool))[0], "t(a?)");
        let prompt = raw(json!({"name": "p", "arguments": null, "description": "d"}));
        let listed = parse_items(&[prompt]);
        assert_eq!(shown(&listed[0].name), "p");
        assert!(listed[0].arguments.items.is_empty());
        // Past 64 parameters a signature says `…`; required ones come first.
        let properties: Map<String, Value> =
            (0..100).map(|i| (format!("p{i:03}"), json!({}))).collect();
        let tool = json!({"name": "t", "inputSchema": {"type": "object",
            "required": ["p050"], "properties": properties}});
        let signature = &tool_row(&raw(tool))[0];
        assert!(signature.starts_with("t(p050, p000?, p001?"), "{signature}");
        assert!(signature.ends_with("p063?, …)"), "{signature}");
    }

    #[test]
    fn a_tool_row_shows_the_signature_and_skips_the_rest_of_the_schema() {
        let tool = serde_json::to_string(&json!({
            "name": "search",
            "description": "Finds things",
            "inputSchema": {"type": "object", "required": ["query"],
                "properties": {"limit": {"type": "integer", "enum": [1, 2, 3]},
                               "query": {"type": "string"}}},
            "annotations": {"readOnlyHint": true}
        }))
        .unwrap();
        let raw = RawValue::from_string(tool).unwrap();
        assert_eq!(tool_row(&raw), ["search(query, limit?)", "Finds things"]);
        // Whatever is not shown is not looked at, and what is not an object is no row.
        let odd = RawValue::from_string(r#"{"name":"x","inputSchema":{"properties":7}}"#.into());
        assert_eq!(tool_row(&odd.unwrap()), ["x()", ""]);
    }
}

#[cfg(test)]
mod signature_required_first {
    use super::*;

    /// docs/cli.md: "A signature names at most 64 parameters (required ones first, in the
    /// order `required` lists them), then `…`": a required parameter whose property comes
    /// after the 64th is still named, first.
    #[test]
    fn a_required_parameter_listed_late_still_leads_the_signature() {
        let properties: Map<String, Value> =
            (0..100).map(|i| (format!("p{i:03}"), json!({}))).collect();
        let tool = json!({"name": "t", "inputSchema": {"type": "object",
            "required": ["p080", "p099"], "properties": properties}});
        let raw = RawValue::from_string(tool.to_string()).unwrap();
        let signature = &tool_row(&raw)[0];
        assert!(signature.starts_with("t(p080, p099, p000?"), "{signature}");
        assert!(signature.ends_with(", …)"), "{signature}");
    }
}

#[cfg(test)]
mod arg_types_from_schema {
    use super::*;

    /// docs/cli.md: "A pair's value is converted to the type that the tool's input schema
    /// gives that key". A key that may be a string or null (`"type": ["string", "null"]`,
    /// or the `anyOf` an optional string gets from Pydantic, as Python servers write it)
    /// is a string: `--arg id=123` must not send the number 123.
    #[test]
    fn a_nullable_string_argument_stays_a_string() {
        for schema in [
            json!({"properties": {"id": {"type": ["string", "null"]}}}),
            json!({"properties": {"id": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}),
        ] {
            let value = coerce(Some(&schema), "id", "123").ok();
            assert_eq!(value, Some(json!("123")), "{schema}");
        }
        // And one that may be an integer or null is an integer.
        let schema = json!({"properties": {"n": {"type": ["integer", "null"]}}});
        assert_eq!(coerce(Some(&schema), "n", "7").ok(), Some(json!(7)));
    }
}
