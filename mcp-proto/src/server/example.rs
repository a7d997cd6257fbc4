//! The bundled example server, `mcp-example`: a small, deterministic server for doctests,
//! simulations and the reference CLI.
//!
//! * tools: `echo {text}` (echoes the text), `add {a, b}` (the sum as text, integers
//!   without `.0`), `confirm` (asks the user through a form elicitation, key `confirm`),
//!   `hang` (never answers), `fail` (an `isError` result);
//!   `media` (one block of every kind: text, a 1×1 PNG image, a WAV header as audio, a
//!   resource link, an embedded text and an embedded binary resource, and a block of a
//!   type no client knows);
//! * resource `example://readme` (`text/plain`), resource template
//!   `example://greeting/{name}`;
//! * prompt `greet` with the required argument `name`;
//! * completion of `name` (for the prompt and the template) from [`NAMES`];
//! * skill `skill://greeting/SKILL.md` ([`GREETING_SKILL`]) with the supporting file
//!   `templates/formal.md` ([`GREETING_FORMAL`]), through the Skills extension.

use serde_json::{Map, Value, json};

use crate::jsonrpc::ErrorObject;
use crate::model::Implementation;
use crate::version::{ProtocolVersion, VersionPolicy};

use super::{
    InputRequestSpec, Prompt, PromptArgument, Resource, ServedSkill, Server, ServerConfig, Tool,
    ToolCall, ToolOutcome,
};

/// The server name in `serverInfo`.
pub const NAME: &str = "mcp-example";

/// The text of `example://readme`.
pub const README: &str = "mcp-example\n\
    A small MCP server bundled with mcp-proto.\n\
    Tools: echo, add, confirm, hang, fail, media.\n";

/// The `SKILL.md` of the example skill `greeting`.
pub const GREETING_SKILL: &str = "---\n\
name: greeting\n\
description: Greet someone with the greet prompt, in the register the user asks for\n\
metadata:\n  version: \"1.0\"\n\
---\n\n\
# Greeting\n\n\
Use the `greet` prompt with the person's name. For a formal greeting, follow\n\
`templates/formal.md`.\n";

/// The supporting file `templates/formal.md` of the example skill.
pub const GREETING_FORMAL: &str = "Dear {name},\n\nIt is a pleasure to greet you.\n";

/// The names `completion/complete` suggests from.
pub const NAMES: [&str; 4] = ["Ada", "Alan", "Barbara", "Grace"];

/// The PNG image `media` returns (1×1, transparent), as base64.
pub const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// The input key `confirm` asks under.
pub const CONFIRM_KEY: &str = "confirm";

/// The example server with default settings.
#[must_use]
pub fn server() -> Server {
    Server::new(config())
}

/// The example server after `tweak` adjusted its configuration (page size, versions,
/// limits, extra tools…).
#[must_use]
pub fn server_with(tweak: impl FnOnce(&mut ServerConfig)) -> Server {
    let mut config = config();
    tweak(&mut config);
    Server::new(config)
}

/// The example server speaking only the legacy era (2025-06-18 and 2025-11-25), as a
/// server written before 2026 does.
#[must_use]
pub fn legacy_only() -> Server {
    server_with(|c| {
        c.versions = VersionPolicy {
            accepted: vec![ProtocolVersion::V2025_06_18, ProtocolVersion::V2025_11_25],
        }
    })
}

/// The example server with one more tool, `slow {text}`, that runs as a task when a
/// call asks for one (2025-11-25 `params.task`, or a 2026-07-28 call declaring the tasks
/// extension) and then shows `working` for [`SLOW_POLLS`] `tasks/get` polls before it
/// completes with the text; otherwise it answers at once. The server then declares the
/// 2025 `tasks` capability and the 2026 extension (see [`super::tasks`]).
#[must_use]
pub fn with_tasks() -> Server {
    server_with(add_task_tool)
}

/// Adds the task tool `slow` of [`with_tasks`] to `config`.
pub fn add_task_tool(config: &mut ServerConfig) {
    config.tools.push(
        Tool::new(
            "slow",
            "Echo the text back, as a task when asked (done after two polls)",
            object_schema(json!({"text": {"type": "string"}}), &["text"]),
            echo,
        )
        .as_task(SLOW_POLLS),
    );
}

/// The `tasks/get` polls the task of `slow` shows `working` for ([`with_tasks`]).
pub const SLOW_POLLS: u32 = 2;

/// The example server returning `page_size` items per list page.
#[must_use]
pub fn paged(page_size: usize) -> Server {
    server_with(|c| c.page_size = Some(page_size))
}

/// The example server's configuration.
#[must_use]
pub fn config() -> ServerConfig {
    ServerConfig::new(Implementation::new(NAME, env!("CARGO_PKG_VERSION")))
        .with_instructions("Example server: echo, add, confirm, hang and fail.")
        .with_tool(Tool::new(
            "echo",
            "Echo the text back",
            object_schema(json!({"text": {"type": "string"}}), &["text"]),
            echo,
        ))
        .with_tool(Tool::new(
            "add",
            "Add two numbers",
            object_schema(
                json!({"a": {"type": "number"}, "b": {"type": "number"}}),
                &["a", "b"],
            ),
            add,
        ))
        .with_tool(Tool::new(
            "confirm",
            "Ask the user to confirm (elicitation)",
            object_schema(json!({}), &[]),
            confirm,
        ))
        .with_tool(Tool::new(
            "hang",
            "Never answers (for timeout and cancellation tests)",
            object_schema(json!({}), &[]),
            |_: &ToolCall<'_>| ToolOutcome::NoAnswer,
        ))
        .with_tool(Tool::new(
            "fail",
            "Always fails with an error result",
            object_schema(json!({}), &[]),
            |_: &ToolCall<'_>| ToolOutcome::error_text("failed on purpose"),
        ))
        .with_tool(Tool::new(
            "media",
            "Returns one content block of every kind",
            object_schema(json!({}), &[]),
            |_: &ToolCall<'_>| ToolOutcome::Done(media()),
        ))
        .with_resource_template(json!({
            "uriTemplate": "example://greeting/{name}",
            "name": "greeting",
            "mimeType": "text/plain"
        }))
        .with_completion(Box::new(complete))
        .with_skill(
            ServedSkill::new("greeting", GREETING_SKILL)
                .with_file("templates/formal.md", GREETING_FORMAL),
        )
        .with_resource(Resource::text(
            "example://readme",
            "readme",
            "text/plain",
            README,
        ))
        .with_prompt(Prompt::new(
            "greet",
            Some("Greet someone by name".to_owned()),
            vec![PromptArgument::new(
                "name",
                Some("Who to greet".to_owned()),
                true,
            )],
            greet,
        ))
}

/// The form `confirm` shows.
#[must_use]
pub fn confirm_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "proceed": {"type": "boolean", "default": true, "title": "Proceed?"},
            "name": {"type": "string", "default": "friend"}
        },
        "required": ["proceed"]
    })
}

fn object_schema(properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty()
        && let Some(obj) = schema.as_object_mut()
    {
        obj.insert("required".to_owned(), json!(required));
    }
    schema
}

fn echo(call: &ToolCall<'_>) -> ToolOutcome {
    match call.arguments.get("text").and_then(Value::as_str) {
        // A text result: written into the reply as it is, no JSON value built for it.
        Some(text) => ToolOutcome::text(text),
        None => ToolOutcome::error_text("`text` must be a string"),
    }
}

fn add(call: &ToolCall<'_>) -> ToolOutcome {
    let (Some(a), Some(b)) = (call.arguments.get("a"), call.arguments.get("b")) else {
        return ToolOutcome::error_text("`a` and `b` are required");
    };
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64())
        && let Some(sum) = x.checked_add(y)
    {
        return ToolOutcome::text(sum.to_string());
    }
    match (a.as_f64(), b.as_f64()) {
        // `Display` for f64 prints 5.0 as "5".
        (Some(x), Some(y)) => ToolOutcome::text((x + y).to_string()),
        _ => ToolOutcome::error_text("`a` and `b` must be numbers"),
    }
}

fn confirm(call: &ToolCall<'_>) -> ToolOutcome {
    let Some(answer) = call.inputs.get(CONFIRM_KEY) else {
        let ask = InputRequestSpec::form("Proceed with the example action?", confirm_schema());
        return ToolOutcome::NeedInput(vec![(CONFIRM_KEY.to_owned(), ask)]);
    };
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            // A field left out takes the form's default; one of the wrong type is an
            // answer the form did not allow.
            let content = answer.get("content");
            let field = |name: &str| content.and_then(|c| c.get(name));
            let proceed = match field("proceed") {
                None => true,
                Some(v) => match v.as_bool() {
                    Some(b) => b,
                    None => return ToolOutcome::error_text("`proceed` must be a boolean"),
                },
            };
            let name = match field("name") {
                None => "friend",
                Some(v) => match v.as_str() {
                    Some(s) => s,
                    None => return ToolOutcome::error_text("`name` must be a string"),
                },
            };
            ToolOutcome::text(format!("accepted: proceed={proceed} name={name}"))
        }
        Some("decline") => ToolOutcome::text("declined"),
        Some("cancel") => ToolOutcome::text("cancelled"),
        _ => ToolOutcome::error_text("invalid elicitation answer"),
    }
}

/// The `media` tool's result.
fn media() -> Value {
    json!({"content": [
        {"type": "text", "text": "every kind of block"},
        {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRiQAAABXQVZFZm10IA==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "example://readme", "name": "readme", "mimeType": "text/plain"},
        {"type": "resource", "resource": {"uri": "example://notes.txt", "mimeType": "text/plain", "text": "embedded notes"}},
        {"type": "resource", "resource": {"uri": "example://data/blob.bin", "blob": "AAECAwQ="}},
        {"type": "x-example-sticker", "sticker": {"id": 7, "shape": "star"}}
    ]})
}

fn complete(
    reference: &Value,
    argument: &str,
    value: &str,
    _context: &Map<String, Value>,
) -> Result<Vec<String>, ErrorObject> {
    let known = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => reference.get("name").and_then(Value::as_str) == Some("greet"),
        Some("ref/resource") => {
            reference.get("uri").and_then(Value::as_str) == Some("example://greeting/{name}")
        }
        _ => false,
    };
    if !known || argument != "name" {
        return Ok(Vec::new());
    }
    let prefix = value.to_lowercase();
    Ok(NAMES
        .iter()
        .filter(|n| n.to_lowercase().starts_with(&prefix))
        .map(|n| (*n).to_owned())
        .collect())
}

fn greet(args: &Map<String, Value>) -> Result<Value, ErrorObject> {
    let name = args.get("name").and_then(Value::as_str).unwrap_or("friend");
    Ok(json!({
        "description": "Greet someone by name",
        "messages": [{
            "role": "user",
            "content": {"type": "text", "text": format!("Please greet {name} warmly.")}
        }]
    }))
}
