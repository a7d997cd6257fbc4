//! 2026 `tasks/update`: an answer the server cannot take for an outstanding key is a
//! clear error naming the key, as the same answer to an MRTR round is, never an
//! acknowledgement that leaves the task waiting for an answer the client believes it
//! gave.

use serde_json::{Value, json};

use super::{Peer, meta};
use crate::client::TASKS_EXTENSION;
use crate::model::Implementation;
use crate::server::{InputRequestSpec, Server, ServerConfig, Tool, ToolCall, ToolOutcome};

fn server() -> Server {
    let form = InputRequestSpec::form(
        "Name?",
        json!({"type": "object", "properties": {"name": {"type": "string"}}}),
    );
    let config = ServerConfig::new(Implementation::new("t", "0")).with_tool(
        Tool::new(
            "ask",
            "",
            json!({"type": "object"}),
            move |call: &ToolCall<'_>| match call.inputs.get("who") {
                Some(_) => ToolOutcome::text("hello"),
                None => ToolOutcome::NeedInput(vec![("who".into(), form.clone())]),
            },
        )
        .as_task(0),
    );
    Server::new(config)
}

fn req(p: &mut Peer, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta(json!({"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}));
    p.call(json!(1), method, params)
}

#[test]
fn a_malformed_answer_to_an_outstanding_task_input_is_refused_by_name() {
    let mut p = Peer::new(server());
    let id = req(&mut p, "tools/call", json!({"name": "ask"}))["result"]["taskId"].clone();
    let r = req(&mut p, "tasks/get", json!({"taskId": id}));
    assert_eq!(r["result"]["status"], "input_required");
    // The same answer a `tools/call` retry gets -32602 for.
    let reply = req(
        &mut p,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"who": "Ada"}}),
    );
    assert_eq!(
        reply["error"]["code"], -32602,
        "a malformed answer was acknowledged: {reply}"
    );
    let message = reply["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("who"), "{reply}");
}
