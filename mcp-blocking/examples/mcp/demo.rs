//! `mcp demo`: starts the bundled example server (this very binary, `serve-example
//! --stdio`) and tours it once per era: era, version, server, tools, a call to `add`, and
//! a call to `confirm` whose form is answered from its schema defaults.

use std::sync::{Arc, Mutex, PoisonError};

use mcp_blocking::mcp_proto::client::{
    AcceptDefaults, CallRequest, InputAnswer, InputHandler, InputRequest,
};
use mcp_blocking::mcp_proto::{Era, EraMode};
use mcp_blocking::{Client, StdioCommand};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::args::{Format, Global, InputMode};
use crate::commands::tool_names;
use crate::config::shell_words;
use crate::output::{Failure, print_json};
use crate::session;
use crate::terminal::clean;

/// What the handler was asked and what it answered.
#[derive(Debug, Clone, Serialize)]
struct Exchange {
    asked: Value,
    answer: Value,
}

/// [`AcceptDefaults`], remembering each exchange for the tour.
struct Recorder {
    log: Arc<Mutex<Vec<Exchange>>>,
}

impl InputHandler for Recorder {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        let answer = AcceptDefaults.answer(request);
        let asked = match request {
            InputRequest::Elicitation(p) => json!({
                "method": "elicitation/create",
                "message": p.message,
                "requestedSchema": p.requested_schema.as_deref()
                    .and_then(|s| serde_json::from_str::<Value>(s.get()).ok()),
            }),
            InputRequest::Roots => json!({"method": "roots/list"}),
            _ => json!({"method": "sampling/createMessage"}),
        };
        let shown = match &answer {
            InputAnswer::Result(v) => v.clone(),
            InputAnswer::Error(e) => json!({"error": e}),
            _ => Value::Null,
        };
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Exchange {
                asked,
                answer: shown,
            });
        answer
    }
}

#[derive(Serialize)]
struct Call {
    arguments: Value,
    result: Box<RawValue>,
    #[serde(skip)]
    text: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    input: Vec<Exchange>,
}

#[derive(Serialize)]
struct DemoDoc<'a> {
    server: &'a str,
    eras: &'a [Tour],
}

#[derive(Serialize)]
struct Tour {
    #[serde(rename = "eraMode")]
    era_mode: &'static str,
    era: Era,
    #[serde(rename = "protocolVersion")]
    protocol_version: &'static str,
    #[serde(rename = "serverInfo")]
    server_info: Value,
    tools: Vec<String>,
    add: Call,
    confirm: Call,
}

pub fn run(global: &Global) -> Result<u8, Failure> {
    let exe = std::env::current_exe().map_err(|e| {
        Failure::Config(format!(
            "cannot find this program to start the example server: {e}"
        ))
    })?;
    let mut tours = Vec::new();
    for (mode, name) in [(EraMode::Auto, "auto"), (EraMode::Legacy, "legacy")] {
        let server = StdioCommand::new(&exe).args(["serve-example", "--stdio"]);
        tours.push(tour(global, server, mode, name)?);
    }
    match global.format {
        Format::Json => print_json(&DemoDoc {
            server: "mcp serve-example --stdio",
            eras: &tours,
        }),
        Format::Text => print_text(&tours, &exe.to_string_lossy()),
    }
    Ok(0)
}

fn tour(
    global: &Global,
    server: StdioCommand,
    mode: EraMode,
    mode_name: &'static str,
) -> Result<Tour, Failure> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let config = session::client_config(global, mode, InputMode::AutoAccept);
    let options = session::options(global, InputMode::None, "example").input_handler(Recorder {
        log: Arc::clone(&log),
    });
    let mut client = Client::connect_stdio_with(server, config, options)?;
    let tools = tool_names(&client.request(CallRequest::list_tools())?);
    let add = call(&mut client, "add", json!({"a": 2, "b": 3}), &log)?;
    let confirm = call(&mut client, "confirm", json!({}), &log)?;
    let tour = Tour {
        era_mode: mode_name,
        era: client.era(),
        protocol_version: client.protocol_version().as_str(),
        server_info: serde_json::to_value(&client.server().server_info).unwrap_or(Value::Null),
        tools,
        add,
        confirm,
    };
    client.close();
    Ok(tour)
}

fn call(
    client: &mut Client,
    tool: &str,
    arguments: Value,
    log: &Arc<Mutex<Vec<Exchange>>>,
) -> Result<Call, Failure> {
    let out = client.request(CallRequest::call_tool(tool, arguments.clone()))?;
    let text = out.tool_result()?.text();
    let input = std::mem::take(&mut *log.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(Call {
        arguments,
        result: out.result,
        text,
        input,
    })
}

fn print_text(tours: &[Tour], exe: &str) {
    println!("mcp demo: the bundled example server, toured in both eras\n");
    for t in tours {
        let how = match (t.era, t.era_mode) {
            (Era::Modern, _) => {
                "server/discover answered the probe; no handshake, _meta on every request"
            }
            (Era::Legacy, "legacy") => "initialize handshake, as 2025 servers expect",
            (Era::Legacy, _) => "the probe found a legacy server; initialize handshake",
        };
        println!(
            "{}  {}  (era mode {}: {how})",
            t.era, t.protocol_version, t.era_mode
        );
        let server = t
            .server_info
            .get("name")
            .and_then(Value::as_str)
            .map(|n| {
                let v = t
                    .server_info
                    .get("version")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                format!("{n} {v}")
            })
            .unwrap_or_else(|| "(unnamed)".into());
        println!("  server   {}", clean(&server));
        println!("  tools    {}", clean(&t.tools.join(", ")));
        println!("  add      {}  →  {}", t.add.arguments, clean(&t.add.text));
        let via = match t.era {
            Era::Modern => "an input_required round",
            Era::Legacy => "an elicitation/create request",
        };
        for x in &t.confirm.input {
            let message = x.asked.get("message").and_then(Value::as_str).unwrap_or("");
            println!("  confirm  asks {message:?} through {via}");
            let content = x.answer.get("content").cloned().unwrap_or(Value::Null);
            let action = match x.answer.get("action").and_then(Value::as_str) {
                Some("accept") => "accepted",
                Some("decline") => "declined",
                Some("cancel") => "cancelled",
                _ => "answered",
            };
            let content = content.to_string();
            println!(
                "           {action} with the schema defaults {}",
                clean(&content)
            );
        }
        if t.confirm.input.is_empty() {
            println!("  confirm  (no input was requested)");
        }
        println!("           →  {}", clean(&t.confirm.text));
        println!();
    }
    let exe = shell_words(exe);
    println!("Next: mcp add ex --stdio {exe} -- serve-example --stdio");
    println!("      mcp call ex add --arg a=2 --arg b=3");
}
