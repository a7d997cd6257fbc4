//! `conformance_server`: the fixture server the official suite's server scenarios drive
//! (`conformance server --url http://127.0.0.1:PORT/mcp ...`).
//!
//! ```text
//! conformance_server PORT
//! ```
//!
//! It serves, on `127.0.0.1:PORT` at `/mcp`, every tool, resource, resource template and
//! prompt the scenarios name (the "everything server" of the suite's
//! `examples/servers/typescript/README.md`), in both eras on one endpoint: 2025-06-18
//! and 2025-11-25 through `initialize` and legacy sessions, 2026-07-28 statelessly.
//! It prints the endpoint URL on stdout once it listens, then serves until killed.
//! The endpoint runs in polling mode (`HttpEndpointConfig::sse_polling`, retry 100 ms):
//! every SSE answer to a 2025-11-25 session's POST is cut after its priming event and
//! fetched with `GET` and `Last-Event-ID`, which the SDK clients of the suite do.
//!
//! Built only on the public API of `mcp-blocking` and `mcp-proto`: a scenario that
//! fails points at the library.

use std::net::TcpListener;
use std::process::ExitCode;
use std::time::Duration;

use mcp_blocking::HttpServeOptions;

use mcp_blocking::mcp_proto::client::LogLevel;
use mcp_blocking::mcp_proto::jsonrpc::ErrorObject;
use mcp_blocking::mcp_proto::model::Implementation;
use mcp_blocking::mcp_proto::server::{
    InputRequestSpec, Prompt, PromptArgument, PromptCall, Resource, Server, ServerConfig, Tool,
    ToolCall, ToolNote, ToolOutcome,
};
use mcp_blocking::mcp_proto::version::{Era, ProtocolVersion, VersionPolicy};
use serde_json::{Map, Value, json};

/// A 1×1 red PNG, base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV (RIFF header, no samples), base64.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let port = match args.as_slice() {
        [p] => match p.parse::<u16>() {
            Ok(p) => p,
            Err(_) => return usage(),
        },
        _ => return usage(),
    };
    let listener = match TcpListener::bind(("127.0.0.1", port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("conformance_server: cannot bind 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Polling mode (SEP-1699): a 2025-11-25 session's POST SSE answers end after their
    // priming event, and clients resume them with GET and Last-Event-ID.
    let mut options = HttpServeOptions::default();
    options.endpoint.sse_polling = true;
    options.endpoint.sse_retry = Duration::from_millis(100);
    match mcp_blocking::serve_http_with(listener, server(), options) {
        Ok(handle) => {
            println!("{}", handle.url());
            handle.wait();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("conformance_server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: conformance_server PORT");
    ExitCode::from(2)
}

/// The fixture server.
fn server() -> Server {
    let versions = VersionPolicy {
        accepted: vec![
            ProtocolVersion::V2025_06_18,
            ProtocolVersion::V2025_11_25,
            ProtocolVersion::V2026_07_28,
        ],
    };
    let mut config = ServerConfig::new(Implementation::new(
        "mcp-conformance-server",
        env!("CARGO_PKG_VERSION"),
    ))
    .with_instructions("Fixture server for the MCP conformance suite.")
    .with_logging()
    .with_resource_subscriptions()
    .with_completion(Box::new(complete))
    .with_resource_reader(Box::new(read_template))
    .with_resource_template(json!({
        "uriTemplate": "test://template/{id}/data",
        "name": "template",
        "description": "A resource template with one parameter",
        "mimeType": "application/json"
    }));
    config.versions = versions;
    for tool in tools() {
        config = config.with_tool(tool);
    }
    for resource in resources() {
        config = config.with_resource(resource);
    }
    for prompt in prompts() {
        config = config.with_prompt(prompt);
    }
    Server::new(config)
}

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn no_args() -> Value {
    schema(json!({}), &[])
}

fn fixed(name: &str, description: &str, result: Value) -> Tool {
    Tool::new(name, description, no_args(), move |_: &ToolCall<'_>| {
        ToolOutcome::Done(result.clone())
    })
}

fn tools() -> Vec<Tool> {
    vec![
        fixed(
            "test_simple_text",
            "Returns simple text content",
            json!({"content": [{"type": "text", "text": "This is a simple text response for testing."}]}),
        ),
        fixed(
            "test_image_content",
            "Returns image content",
            json!({"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}),
        ),
        fixed(
            "test_audio_content",
            "Returns audio content",
            json!({"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]}),
        ),
        fixed(
            "test_embedded_resource",
            "Returns an embedded resource",
            json!({"content": [{"type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain",
                "text": "This is an embedded resource content."}}]}),
        ),
        fixed(
            "test_multiple_content_types",
            "Returns text, image and resource content",
            json!({"content": [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": {
                    "uri": "test://mixed-content-resource", "mimeType": "application/json",
                    "text": "{\"test\":\"data\",\"value\":123}"}}
            ]}),
        ),
        fixed(
            "test_error_handling",
            "Always fails",
            json!({"isError": true, "content": [{"type": "text",
                "text": "This tool intentionally returns an error for testing"}]}),
        ),
        Tool::new(
            "test_tool_with_logging",
            "Sends three log messages while it runs",
            no_args(),
            |_: &ToolCall<'_>| ToolOutcome::DoneWithNotes {
                notes: vec![
                    ToolNote::log(LogLevel::Info, "Tool execution started"),
                    ToolNote::log(LogLevel::Info, "Tool processing data"),
                    ToolNote::log(LogLevel::Info, "Tool execution completed"),
                ],
                result: json!({"content": [{"type": "text", "text": "Logging test completed"}]}),
            },
        ),
        Tool::new(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100",
            no_args(),
            |_: &ToolCall<'_>| ToolOutcome::DoneWithNotes {
                notes: [0.0, 50.0, 100.0]
                    .into_iter()
                    .map(|p| ToolNote::progress(p, Some(100.0)))
                    .collect(),
                result: json!({"content": [{"type": "text", "text": "Progress test completed"}]}),
            },
        ),
        Tool::new(
            "test_logging_tool",
            "Sends a log message at each level from debug to error",
            no_args(),
            |_: &ToolCall<'_>| ToolOutcome::DoneWithNotes {
                notes: [
                    LogLevel::Debug,
                    LogLevel::Info,
                    LogLevel::Warning,
                    LogLevel::Error,
                ]
                .into_iter()
                .map(|l| ToolNote::log(l, format!("a {} message", l.as_str())))
                .collect(),
                result: json!({"content": [{"type": "text", "text": "Logged"}]}),
            },
        ),
        Tool::new(
            "test_missing_capability",
            "Needs the sampling capability",
            no_args(),
            |call: &ToolCall<'_>| {
                ask_then(
                    call,
                    "sample",
                    || sampling_request("Say hello"),
                    |a| format!("LLM response: {}", sampled_text(a)),
                )
            },
        ),
        Tool::new(
            "test_streaming_elicitation",
            "Asks the user (when the client can be asked) and answers",
            no_args(),
            |call: &ToolCall<'_>| {
                if call.client_capabilities.get("elicitation").is_none() {
                    return ToolOutcome::text("elicitation not available");
                }
                ask_then(
                    call,
                    "user_name",
                    || name_form("What is your name?"),
                    |a| format!("Hello, {}", answer_field(a, "name")),
                )
            },
        ),
        Tool::new(
            "test_custom_header_tool",
            "Mirrors `region` in the Mcp-Param-Region header (SEP-2243)",
            schema(
                json!({
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "query": {"type": "string"}
                }),
                &["region"],
            ),
            |call: &ToolCall<'_>| {
                let region = call.arguments.get("region").and_then(Value::as_str);
                ToolOutcome::text(format!("region={}", region.unwrap_or("(none)")))
            },
        ),
        Tool::new(
            "test_reconnection",
            "Logs once, then answers: an SSE answer, which the endpoint (in polling mode) \
             cuts after its priming event, so the client fetches the rest with GET and \
             Last-Event-ID (SEP-1699)",
            no_args(),
            |_: &ToolCall<'_>| ToolOutcome::DoneWithNotes {
                notes: vec![ToolNote::log(LogLevel::Info, "Reconnection test started")],
                result: json!({"content": [{"type": "text", "text": "Reconnection test completed"}]}),
            },
        ),
        Tool::new(
            "test_sampling",
            "Asks the client's LLM",
            schema(json!({"prompt": {"type": "string"}}), &["prompt"]),
            sampling,
        ),
        Tool::new(
            "test_elicitation",
            "Asks the user for a username and an email",
            schema(json!({"message": {"type": "string"}}), &["message"]),
            elicitation,
        ),
        Tool::new(
            "test_elicitation_sep1034_defaults",
            "Elicitation with defaults for every primitive type",
            no_args(),
            |call: &ToolCall<'_>| {
                elicit_once(
                    call,
                    "Please review the defaults",
                    &json!({
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "default": "John Doe"},
                            "age": {"type": "integer", "default": 30},
                            "score": {"type": "number", "default": 95.5},
                            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                            "verified": {"type": "boolean", "default": true}
                        }
                    }),
                )
            },
        ),
        Tool::new(
            "test_elicitation_sep1330_enums",
            "Elicitation with every enum variant",
            no_args(),
            |call: &ToolCall<'_>| {
                elicit_once(
                    call,
                    "Please choose",
                    &json!({
                        "type": "object",
                        "properties": {
                            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                            "titledSingle": {"type": "string", "oneOf": [
                                {"const": "value1", "title": "First Option"},
                                {"const": "value2", "title": "Second Option"},
                                {"const": "value3", "title": "Third Option"}]},
                            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                                "enumNames": ["Option One", "Option Two", "Option Three"]},
                            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                            "titledMulti": {"type": "array", "items": {"anyOf": [
                                {"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"}]}}
                        }
                    }),
                )
            },
        ),
        Tool::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }),
            |call: &ToolCall<'_>| ToolOutcome::text(format!("received {}", call.arguments)),
        ),
        Tool::new(
            "test_input_required_result_elicitation",
            "Asks for a user name (MRTR)",
            no_args(),
            |call: &ToolCall<'_>| {
                ask_then(
                    call,
                    "user_name",
                    || name_form("What is your name?"),
                    |a| format!("Hello, {}", answer_field(a, "name")),
                )
            },
        ),
        Tool::new(
            "test_input_required_result_tampered_state",
            "Asks for confirmation; its requestState is sealed",
            no_args(),
            |call: &ToolCall<'_>| {
                ask_then(
                    call,
                    "confirm",
                    || name_form("Confirm?"),
                    |_| "confirmed".to_owned(),
                )
            },
        ),
        Tool::new(
            "test_input_required_result_request_state",
            "Asks for a name; validates the echoed requestState",
            no_args(),
            |call: &ToolCall<'_>| {
                ask_then(
                    call,
                    "user_name",
                    || name_form("What is your name?"),
                    |a| format!("state-ok: {}", answer_field(a, "name")),
                )
            },
        ),
        Tool::new(
            "test_input_required_result_sampling",
            "Asks the client's LLM (MRTR)",
            no_args(),
            |call: &ToolCall<'_>| {
                ask_then(
                    call,
                    "capital_question",
                    || sampling_request("What is the capital of France?"),
                    |a| format!("LLM said: {}", sampled_text(a)),
                )
            },
        ),
        Tool::new(
            "test_input_required_result_list_roots",
            "Asks for the client's roots (MRTR)",
            no_args(),
            |call: &ToolCall<'_>| {
                ask_then(
                    call,
                    "client_roots",
                    || InputRequestSpec::Roots,
                    |a| {
                        let uris: Vec<&str> = a
                            .get("roots")
                            .and_then(Value::as_array)
                            .map(|r| r.iter().filter_map(|r| r.get("uri")?.as_str()).collect())
                            .unwrap_or_default();
                        format!("roots: {}", uris.join(", "))
                    },
                )
            },
        ),
        Tool::new(
            "test_input_required_result_multiple_inputs",
            "Asks for an elicitation, a sampling and the roots at once (MRTR)",
            no_args(),
            multiple_inputs,
        ),
        Tool::new(
            "test_input_required_result_multi_round",
            "Asks twice, one round after the other (MRTR)",
            no_args(),
            multi_round,
        ),
        Tool::new(
            "test_input_required_result_capabilities",
            "Asks only for what the client declared (MRTR)",
            no_args(),
            capabilities,
        ),
    ]
    .into_iter()
    .chain(task_tools())
    .collect()
}

/// The tools of the `tasks-*` scenarios (the `io.modelcontextprotocol/tasks` extension).
fn task_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "greet",
            "Says hello (never a task)",
            schema(json!({"name": {"type": "string"}}), &["name"]),
            |call: &ToolCall<'_>| {
                let name = call.arguments.get("name").and_then(Value::as_str);
                ToolOutcome::text(format!("Hello, {}!", name.unwrap_or("world")))
            },
        ),
        Tool::new(
            "slow_compute",
            "Computes for `seconds` seconds (a task when the client allows)",
            schema(
                json!({"seconds": {"type": "number"}, "label": {"type": "string"}}),
                &["seconds"],
            ),
            |call: &ToolCall<'_>| {
                let seconds = call.arguments.get("seconds").and_then(Value::as_f64);
                let seconds = seconds.unwrap_or(0.0).clamp(0.0, 3600.0);
                let label = call.arguments.get("label").and_then(Value::as_str);
                let text = format!("computed {} in {seconds}s", label.unwrap_or("(no label)"));
                ToolOutcome::after(Duration::from_secs_f64(seconds), ToolOutcome::text(text))
            },
        )
        .as_task(0),
        Tool::new(
            "failing_job",
            "Fails as a tool after about a second (only as a task)",
            no_args(),
            |_: &ToolCall<'_>| {
                let failed = ToolOutcome::error_text("the job failed");
                ToolOutcome::after(Duration::from_secs(1), failed)
            },
        )
        .task_required(),
        Tool::new(
            "protocol_error_job",
            "Fails with a JSON-RPC error (a task when the client allows)",
            no_args(),
            |_: &ToolCall<'_>| ToolOutcome::Error(ErrorObject::new(-32603, "the job crashed")),
        )
        .as_task(0),
        Tool::new(
            "confirm_delete",
            "Asks for confirmation inside its task, then deletes",
            schema(json!({"filename": {"type": "string"}}), &["filename"]),
            |call: &ToolCall<'_>| {
                let file = call.arguments.get("filename").and_then(Value::as_str);
                let file = file.unwrap_or("(no file)").to_owned();
                let confirm = json!({"type": "object",
                    "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]});
                ask_then(
                    call,
                    "confirm",
                    || InputRequestSpec::form(format!("Delete {file}?"), confirm),
                    |a| match a.get("action").and_then(Value::as_str) {
                        Some("accept") => format!("deleted {file}"),
                        _ => format!("kept {file}"),
                    },
                )
            },
        )
        .as_task(0),
        Tool::new(
            "multi_input",
            "Asks for two inputs at once inside its task",
            no_args(),
            |call: &ToolCall<'_>| {
                let keys = ["first", "second"];
                if keys.iter().all(|k| call.inputs.contains_key(*k)) {
                    let names: Vec<String> = keys
                        .iter()
                        .map(|k| answer_field(&call.inputs[*k], "name"))
                        .collect();
                    return ToolOutcome::text(format!("got {}", names.join(" and ")));
                }
                ToolOutcome::NeedInput(
                    keys.iter()
                        .filter(|k| !call.inputs.contains_key(**k))
                        .map(|k| ((*k).to_owned(), name_form(&format!("The {k} name?"))))
                        .collect(),
                )
            },
        )
        .as_task(0),
        Tool::new(
            "test_tool_with_task",
            "Asks for a user name (MRTR), then works on it as a task",
            no_args(),
            |call: &ToolCall<'_>| match call.inputs.get("user_name") {
                Some(a) => {
                    let text = format!("Hello, {}! (from a task)", answer_field(a, "name"));
                    ToolOutcome::after(Duration::from_millis(500), ToolOutcome::text(text))
                }
                None => ToolOutcome::NeedInput(vec![(
                    "user_name".to_owned(),
                    name_form("What is your name?"),
                )]),
            },
        )
        .task_required()
        .input_before_task(),
    ]
}

/// The answer's `content[field]` as text.
fn answer_field(answer: &Value, field: &str) -> String {
    match answer.get("content").and_then(|c| c.get(field)) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "(none)".to_owned(),
    }
}

fn sampled_text(answer: &Value) -> String {
    answer
        .get("content")
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .unwrap_or("(no text)")
        .to_owned()
}

fn name_form(message: &str) -> InputRequestSpec {
    InputRequestSpec::form(
        message,
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    )
}

fn sampling_request(text: &str) -> InputRequestSpec {
    InputRequestSpec::Sampling(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": 100
    }))
}

/// Asks for `key` (built by `ask`) until it is answered, then finishes with the text
/// `finish` makes of the answer.
fn ask_then(
    call: &ToolCall<'_>,
    key: &str,
    ask: impl FnOnce() -> InputRequestSpec,
    finish: impl FnOnce(&Value) -> String,
) -> ToolOutcome {
    match call.inputs.get(key) {
        Some(answer) => ToolOutcome::text(finish(answer)),
        None => ToolOutcome::NeedInput(vec![(key.to_owned(), ask())]),
    }
}

fn elicit_once(call: &ToolCall<'_>, message: &str, requested: &Value) -> ToolOutcome {
    ask_then(
        call,
        "form",
        || InputRequestSpec::form(message, requested.clone()),
        |a| format!("Elicitation result: {a}"),
    )
}

fn sampling(call: &ToolCall<'_>) -> ToolOutcome {
    let prompt = call
        .arguments
        .get("prompt")
        .and_then(Value::as_str)
        .unwrap_or("Hello");
    ask_then(
        call,
        "sample",
        || sampling_request(prompt),
        |a| format!("LLM response: {}", sampled_text(a)),
    )
}

fn elicitation(call: &ToolCall<'_>) -> ToolOutcome {
    let message = call
        .arguments
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("Please provide your information");
    let form = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        },
        "required": ["username", "email"]
    });
    ask_then(
        call,
        "user",
        || InputRequestSpec::form(message, form),
        |a| {
            let action = a.get("action").and_then(Value::as_str).unwrap_or("unknown");
            let content = a.get("content").cloned().unwrap_or(Value::Null);
            format!("User response: action={action}, content={content}")
        },
    )
}

fn multiple_inputs(call: &ToolCall<'_>) -> ToolOutcome {
    let keys = ["user_name", "greeting", "client_roots"];
    if keys.iter().all(|k| call.inputs.contains_key(*k)) {
        return ToolOutcome::text(format!(
            "name={}, greeting={}",
            call.inputs
                .get("user_name")
                .map_or_else(String::new, |a| answer_field(a, "name")),
            call.inputs
                .get("greeting")
                .map_or_else(String::new, sampled_text),
        ));
    }
    ToolOutcome::NeedInput(vec![
        ("user_name".to_owned(), name_form("What is your name?")),
        ("greeting".to_owned(), sampling_request("Say hello")),
        ("client_roots".to_owned(), InputRequestSpec::Roots),
    ])
}

fn multi_round(call: &ToolCall<'_>) -> ToolOutcome {
    let Some(step1) = call.inputs.get("step1") else {
        return ToolOutcome::NeedInput(vec![("step1".to_owned(), name_form("Step 1: your name?"))]);
    };
    let Some(step2) = call.inputs.get("step2") else {
        let color = InputRequestSpec::form(
            "Step 2: your favourite colour?",
            json!({"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}),
        );
        return ToolOutcome::NeedInput(vec![("step2".to_owned(), color)]);
    };
    ToolOutcome::text(format!(
        "name={}, color={}",
        answer_field(step1, "name"),
        answer_field(step2, "color")
    ))
}

/// Asks for an elicitation and a sampling, each only when the client declared it.
fn capabilities(call: &ToolCall<'_>) -> ToolOutcome {
    let caps = call.client_capabilities;
    let mut asks = Vec::new();
    if caps.get("elicitation").is_some() && !call.inputs.contains_key("user_name") {
        asks.push(("user_name".to_owned(), name_form("What is your name?")));
    }
    if caps.get("sampling").is_some() && !call.inputs.contains_key("greeting") {
        asks.push(("greeting".to_owned(), sampling_request("Say hello")));
    }
    if asks.is_empty() {
        ToolOutcome::text(format!("inputs: {}", call.inputs.len()))
    } else {
        ToolOutcome::NeedInput(asks)
    }
}

fn resources() -> Vec<Resource> {
    vec![
        Resource::text(
            "test://static-text",
            "static-text",
            "text/plain",
            "This is the content of the static text resource.",
        )
        .with_description("A static text resource"),
        Resource::blob("test://static-binary", "static-binary", "image/png", PNG)
            .with_description("A static binary resource (a PNG image)"),
        Resource::text(
            "test://watched-resource",
            "watched-resource",
            "text/plain",
            "A resource that can be subscribed to.",
        )
        .with_description("A resource to subscribe to"),
    ]
}

/// `test://template/{id}/data`.
fn read_template(uri: &str) -> Option<Value> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    if id.is_empty() || id.contains('/') {
        return None;
    }
    let text = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
    Some(
        json!({"contents": [{"uri": uri, "mimeType": "application/json", "text": text.to_string()}]}),
    )
}

fn text_message(text: String) -> Value {
    json!({"role": "user", "content": {"type": "text", "text": text}})
}

fn prompts() -> Vec<Prompt> {
    let arg = |name: &str, description: &str| {
        PromptArgument::new(name, Some(description.to_owned()), true)
    };
    let get = |args: &Map<String, Value>, name: &str| {
        args.get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    vec![
        Prompt::new(
            "test_simple_prompt",
            Some("A simple prompt without arguments".to_owned()),
            vec![],
            |_: &Map<String, Value>| {
                Ok(
                    json!({"messages": [text_message("This is a simple prompt for testing.".to_owned())]}),
                )
            },
        ),
        Prompt::new(
            "test_prompt_with_arguments",
            Some("A prompt with two arguments".to_owned()),
            vec![
                arg("arg1", "First test argument"),
                arg("arg2", "Second test argument"),
            ],
            move |args: &Map<String, Value>| {
                let text = format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    get(args, "arg1"),
                    get(args, "arg2")
                );
                Ok(json!({"messages": [text_message(text)]}))
            },
        ),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            Some("A prompt embedding a resource".to_owned()),
            vec![arg("resourceUri", "URI of the resource to embed")],
            move |args: &Map<String, Value>| {
                let uri = get(args, "resourceUri");
                Ok(json!({"messages": [
                    {"role": "user", "content": {"type": "resource", "resource": {
                        "uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
                    text_message("Please process the embedded resource above.".to_owned())
                ]}))
            },
        ),
        Prompt::with_input(
            "test_input_required_result_prompt",
            Some("A prompt that asks the user before it is built (MRTR)".to_owned()),
            vec![],
            |call: &PromptCall<'_>| {
                let topic = match call.inputs.get("topic") {
                    Some(answer) => answer_field(answer, "topic"),
                    // A legacy prompts/get cannot ask: use a default.
                    None if call.era == Era::Legacy => "anything".to_owned(),
                    None => {
                        let form = InputRequestSpec::form(
                            "Which topic should the prompt be about?",
                            json!({"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}),
                        );
                        return ToolOutcome::NeedInput(vec![("topic".to_owned(), form)]);
                    }
                };
                ToolOutcome::Done(
                    json!({"messages": [text_message(format!("Tell me about {topic}."))]}),
                )
            },
        ),
        Prompt::new(
            "test_prompt_with_image",
            Some("A prompt with an image".to_owned()),
            vec![],
            |_: &Map<String, Value>| {
                Ok(json!({"messages": [
                    {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
                    text_message("Please analyze the image above.".to_owned())
                ]}))
            },
        ),
    ]
}

/// `completion/complete`: a few values for any argument, those starting with the
/// partial value first.
fn complete(
    _reference: &Value,
    _argument: &str,
    value: &str,
    _context: &Map<String, Value>,
) -> Result<Vec<String>, ErrorObject> {
    let known = ["paris", "park", "party", "test-value"];
    let mut values: Vec<String> = known
        .iter()
        .filter(|v| v.starts_with(value))
        .map(|v| (*v).to_owned())
        .collect();
    if values.is_empty() {
        values = known.iter().map(|v| (*v).to_owned()).collect();
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    //! The fixture offers every name the server scenarios call, in both eras (checked on
    //! the machine directly, without the suite).

    use mcp_blocking::mcp_proto::Instant;
    use serde_json::{Value, json};

    /// Sends one request and returns the last message written for it (its answer).
    fn ask(server: &mut super::Server, id: i64, method: &str, params: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        server.handle_json(Instant::ZERO, &serde_json::to_vec(&request).unwrap());
        let mut last = Value::Null;
        while let Some(m) = server.poll_message() {
            last = serde_json::from_slice(&m).unwrap();
        }
        last
    }

    fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
        list["result"][key]
            .as_array()
            .unwrap_or_else(|| panic!("no {key} in {list}"))
            .iter()
            .map(|t| t[field].as_str().unwrap().to_owned())
            .collect()
    }

    const TOOLS: [&str; 26] = [
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_tool_with_logging",
        "test_error_handling",
        "test_tool_with_progress",
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "json_schema_2020_12_tool",
        "test_logging_tool",
        "test_missing_capability",
        "test_streaming_elicitation",
        "test_reconnection",
        "test_custom_header_tool",
        "test_input_required_result_elicitation",
        "test_input_required_result_tampered_state",
        "test_input_required_result_request_state",
        "test_input_required_result_sampling",
        "test_input_required_result_list_roots",
        "test_input_required_result_multiple_inputs",
        "test_input_required_result_multi_round",
        "test_input_required_result_capabilities",
    ];

    #[test]
    fn every_named_item_is_served_in_both_eras() {
        let modern = json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }});
        let mut server = super::server();
        let init = json!({"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "0"}});
        assert_eq!(
            ask(&mut server, 0, "initialize", init)["result"]["protocolVersion"],
            "2025-06-18"
        );
        for params in [json!({}), modern.clone()] {
            let tools = names(
                &ask(&mut server, 1, "tools/list", params.clone()),
                "tools",
                "name",
            );
            for t in TOOLS {
                assert!(tools.iter().any(|n| n == t), "{t} missing");
            }
            let resources = names(
                &ask(&mut server, 2, "resources/list", params.clone()),
                "resources",
                "uri",
            );
            for r in [
                "test://static-text",
                "test://static-binary",
                "test://watched-resource",
            ] {
                assert!(resources.iter().any(|n| n == r), "{r} missing");
            }
            let prompts = names(
                &ask(&mut server, 3, "prompts/list", params.clone()),
                "prompts",
                "name",
            );
            for p in [
                "test_simple_prompt",
                "test_prompt_with_arguments",
                "test_prompt_with_embedded_resource",
                "test_prompt_with_image",
                "test_input_required_result_prompt",
            ] {
                assert!(prompts.iter().any(|n| n == p), "{p} missing");
            }
            let mut read = params.clone();
            read["uri"] = json!("test://template/123/data");
            let contents = ask(&mut server, 4, "resources/read", read);
            assert!(
                contents["result"]["contents"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("123")
            );
        }
    }
}
