//! Tool calls, the part both eras share: reading `tools/call` params, running a handler,
//! vetting the inputs it asks for, and spelling an input request for a version.

use serde_json::{Map, Value, json};

use crate::jsonrpc::{ErrorObject, codes};
use crate::version::{Era, ProtocolVersion};

use std::cell::RefCell;
use std::sync::Arc;

use super::Params;
use super::config::ServerLimits;
use super::deferred::{Deferral, Queue, Slot};
use super::registry::{InputRequestSpec, Tool, ToolCall, ToolOutcome};

/// At most the first 64 bytes of `s` (on a character boundary): what an error message
/// echoes of a value a client sent (a method, a name, a key, a version), which may be as
/// long as a header or a body allows.
pub(crate) fn clipped(s: &str) -> &str {
    clipped_to(s, 64)
}

/// At most the first `max` bytes of `s`, on a character boundary.
pub(crate) fn clipped_to(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A 2026 call's answer: a result value, or a [`ToolOutcome::DoneText`] result, whose
/// text is written straight into the reply.
#[derive(Debug)]
pub(super) enum Answer {
    /// The result.
    Value(Value),
    /// A result with one text block.
    Text {
        /// The text.
        text: String,
        /// Whether it is `isError: true`.
        is_error: bool,
    },
}

/// Which tool, with which arguments.
#[derive(Debug, Clone)]
pub(super) struct Target {
    pub name: String,
    pub arguments: Value,
}

/// Reads `name` and `arguments` of a `tools/call`, taking the arguments out of `params`
/// instead of copying them; unknown tools are `-32602`.
pub(super) fn take_target(params: &mut Params, tools: &[Tool]) -> Result<Target, ErrorObject> {
    let arguments = params.remove("arguments");
    target_with(params, tools, arguments)
}

/// The tool a `tools/call` names in `params`, with `arguments` (taken out of them before)
/// as its arguments: an object, or an empty one when absent or null.
pub(super) fn target_with(
    params: &Params,
    tools: &[Tool],
    arguments: Option<Value>,
) -> Result<Target, ErrorObject> {
    let name = tool_name(params, tools)?.to_owned();
    let arguments = object_or_empty(arguments)?;
    Ok(Target { name, arguments })
}

/// The `name` of a `tools/call`, when it names one of `tools`.
fn tool_name<'p>(params: &'p Params, tools: &[Tool]) -> Result<&'p str, ErrorObject> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(invalid("`name` must be a string"));
    };
    if !tools.iter().any(|t| t.name == name) {
        return Err(invalid(format!("Unknown tool: {}", clipped(name))));
    }
    Ok(name)
}

/// The `arguments` of a `tools/call`: an object, or an empty one when absent or null.
fn object_or_empty(arguments: Option<Value>) -> Result<Value, ErrorObject> {
    match arguments {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(_) => Err(invalid("`arguments` must be an object")),
    }
}

/// Runs an application's callback; `None` when it panicked. Every handler the server
/// runs goes through here, so that a panic fails only the request it was for.
pub(super) fn unwound<T>(f: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
}

/// Runs the handler of tool `target.name` once. Its outcome, and when that is
/// [`ToolOutcome::Deferred`], the deferral the handler took (`work` is its number). A
/// `Deferred` without a completer taken is `-32603` (nothing could ever answer it); a
/// completer taken for another outcome is cancelled at once.
pub(super) fn invoke(
    tools: &mut [Tool],
    target: &Target,
    inputs: &Map<String, Value>,
    (era, round): (Era, u32),
    client_capabilities: &Value,
    (progress_token, queue, work): (Option<&Value>, &Arc<Queue>, u64),
) -> (ToolOutcome, Option<Deferral>) {
    let Some(tool) = tools.iter_mut().find(|t| t.name == target.name) else {
        let unknown = invalid(format!("Unknown tool: {}", clipped(&target.name)));
        return (ToolOutcome::Error(unknown), None);
    };
    let slot = Slot {
        work,
        queue,
        taken: RefCell::default(),
    };
    let call = ToolCall {
        name: &target.name,
        arguments: &target.arguments,
        inputs,
        era,
        round,
        client_capabilities,
        progress_token,
        deferral: Some(&slot),
    };
    // A handler that panics is answered as failed, its call and the server's state
    // intact: unwinding through the machine would leave a session's state swapped in
    // for the next client, and end every other call of an adapter driving one future.
    // The panic's message stays in the server (it may tell more than a client should
    // know).
    let outcome = unwound(|| (tool.handler)(&call)).unwrap_or_else(|| {
        ToolOutcome::Error(ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!(
                "tool `{}` failed (its handler panicked)",
                clipped(&target.name)
            ),
        ))
    });
    let taken = slot.release();
    match (outcome, taken) {
        (ToolOutcome::Deferred, Some(state)) => {
            (ToolOutcome::Deferred, Some(Deferral { work, state }))
        }
        (ToolOutcome::Deferred, None) => {
            let message = format!(
                "tool `{}` deferred its work without taking a completer (ToolCall::defer)",
                target.name
            );
            (
                ToolOutcome::Error(ErrorObject::new(codes::INTERNAL_ERROR, message)),
                None,
            )
        }
        (outcome, taken) => {
            if let Some(state) = taken {
                Deferral { work, state }.cancel();
            }
            (outcome, None)
        }
    }
}

/// The reply for a finished call: the handler's result, which must be an object.
pub(super) fn done(name: &str, result: Value) -> Result<Value, ErrorObject> {
    if result.is_object() {
        Ok(result)
    } else {
        Err(ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("tool `{name}` returned a result that is not an object"),
        ))
    }
}

/// The reply to send instead of asking, when the asks break a limit; `None` when they
/// may be sent.
pub(super) fn refuse(
    name: &str,
    asks: &[(String, InputRequestSpec)],
    round: u32,
    limits: &ServerLimits,
) -> Option<Result<Value, ErrorObject>> {
    let internal = |m: String| Some(Err(ErrorObject::new(codes::INTERNAL_ERROR, m)));
    if asks.is_empty() {
        return internal(format!("tool `{name}` asked for input without naming any"));
    }
    if asks.len() > limits.max_inputs_per_round {
        return internal(format!(
            "tool `{name}` asked for {} inputs in one round; the limit is {}",
            asks.len(),
            limits.max_inputs_per_round
        ));
    }
    if asks
        .iter()
        .enumerate()
        .any(|(i, (k, _))| asks[..i].iter().any(|(j, _)| j == k))
    {
        return internal(format!("tool `{name}` asked for the same input key twice"));
    }
    if round >= limits.max_input_rounds {
        return Some(Ok(error_result(format!(
            "tool `{name}` still needed input after {round} rounds; giving up"
        ))));
    }
    None
}

/// The capabilities (as a `ClientCapabilities` object) the client lacks for `asks`, or
/// `None` when it declared them all in `caps`, as `version` reads them.
pub(super) fn missing_capabilities(
    caps: &Value,
    asks: &[(String, InputRequestSpec)],
    version: ProtocolVersion,
) -> Option<Value> {
    let mut missing = Map::new();
    for (_, spec) in asks {
        let (name, lacking) = match spec {
            InputRequestSpec::Elicitation { .. } => {
                ("elicitation", (!supports_form(caps)).then(|| json!({})))
            }
            InputRequestSpec::Sampling(params) => {
                ("sampling", sampling_lacks(caps, params, version))
            }
            InputRequestSpec::Roots => ("roots", caps.get("roots").is_none().then(|| json!({}))),
        };
        if let Some(lacking) = lacking {
            // `sampling: {tools}` says more than `sampling: {}`: it is kept.
            let kept = missing.entry(name.to_owned()).or_insert_with(|| json!({}));
            if let (Some(k), Value::Object(l)) = (kept.as_object_mut(), lacking) {
                k.extend(l);
            }
        }
    }
    (!missing.is_empty()).then_some(Value::Object(missing))
}

/// The capabilities in `missing` (from [`missing_capabilities`]) by name, a lacking
/// member under its capability: `elicitation`, `sampling.tools`.
pub(super) fn missing_names(missing: &Value) -> Vec<String> {
    (missing.as_object().into_iter().flatten())
        .flat_map(|(k, v)| match v.as_object().filter(|m| !m.is_empty()) {
            Some(m) => m.keys().map(|sub| format!("{k}.{sub}")).collect(),
            None => vec![k.clone()],
        })
        .collect()
}

/// What a sampling request with `params` needs of `sampling` that `caps` lacks at
/// `version`: tool use (`tools`, `toolChoice`) needs `sampling.tools`, which only
/// 2025-11-25 and later have (the client must refuse such a request otherwise); from
/// 2025-11-25 on, an `includeContext` other than `none` needs `sampling.context` (a
/// SHOULD for servers, and clients refuse it).
fn sampling_lacks(caps: &Value, params: &Value, version: ProtocolVersion) -> Option<Value> {
    let Some(sampling) = caps.get("sampling") else {
        return Some(json!({}));
    };
    let since_2025_11_25 = version >= ProtocolVersion::V2025_11_25;
    let mut lacking = Map::new();
    let tools = params.get("tools").is_some() || params.get("toolChoice").is_some();
    if tools && (!since_2025_11_25 || sampling.get("tools").is_none()) {
        lacking.insert("tools".to_owned(), json!({}));
    }
    let context = params.get("includeContext").and_then(Value::as_str);
    if since_2025_11_25 && context.is_some_and(|c| c != "none") && sampling.get("context").is_none()
    {
        lacking.insert("context".to_owned(), json!({}));
    }
    (!lacking.is_empty()).then_some(Value::Object(lacking))
}

/// Form elicitation: `elicitation: {}` (form implied) or `elicitation: {form: …}`.
fn supports_form(caps: &Value) -> bool {
    caps.get("elicitation")
        .and_then(Value::as_object)
        .is_some_and(|e| e.is_empty() || e.contains_key("form"))
}

/// The method and params of an input request as `version` spells them.
pub(super) fn render(
    spec: &InputRequestSpec,
    version: ProtocolVersion,
) -> (&'static str, Option<Value>) {
    match spec {
        InputRequestSpec::Elicitation {
            message,
            requested_schema,
        } => {
            let mut p = json!({"message": message, "requestedSchema": requested_schema});
            if version >= ProtocolVersion::V2025_11_25
                && let Some(obj) = p.as_object_mut()
            {
                obj.insert("mode".to_owned(), json!("form"));
            }
            ("elicitation/create", Some(p))
        }
        InputRequestSpec::Sampling(params) => ("sampling/createMessage", Some(params.clone())),
        InputRequestSpec::Roots => ("roots/list", None),
    }
}

/// A failed (`isError: true`) `CallToolResult` with one text block.
pub(super) fn error_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// A `-32602` error.
pub(super) fn invalid(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(codes::INVALID_PARAMS, message)
}
