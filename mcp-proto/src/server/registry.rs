//! What a server offers: tools (with their handlers), resources and prompts.
//!
//! A tool handler is a plain synchronous function of the arguments and the answers
//! gathered so far. It never talks to the client itself: when it needs the user, it
//! returns [`ToolOutcome::NeedInput`] and the machine asks in the way the request's era
//! requires (a server→client request in 2025, an MRTR `input_required` result in 2026),
//! then calls the handler again with the answers added to [`ToolCall::inputs`].

use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::deferred::{Completer, Slot};
use crate::client::LogLevel;
use crate::http::xmcp::{ParamHeader, tool_param_headers};
use crate::jsonrpc::ErrorObject;
use crate::version::Era;

/// What [`ToolCall::client_capabilities`] is when nothing is known (a handler under test).
static NO_CAPABILITIES: Value = Value::Null;

/// A tool handler: called once per round with the arguments and the answers so far.
pub type ToolHandler = Box<dyn FnMut(&ToolCall<'_>) -> ToolOutcome + Send>;

/// A prompt handler: called once per round with the arguments and the answers so far;
/// [`ToolOutcome::Done`] carries the `GetPromptResult` JSON (`{description?, messages}`).
/// [`Prompt::new`] makes one from a plain function of the arguments.
pub type PromptHandler = Box<dyn FnMut(&PromptCall<'_>) -> ToolOutcome + Send>;

/// A tool the server offers.
#[non_exhaustive]
pub struct Tool {
    /// The tool name (unique per server).
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// The JSON Schema of the arguments (an object schema).
    pub input_schema: Value,
    /// The handler.
    pub handler: ToolHandler,
    /// 2026-07-28: each `requestState` this tool's input rounds issue opens at most once
    /// (with a consuming [`RequestStateCodec`](super::RequestStateCodec), such as
    /// [`SealedStateCodec`](super::SealedStateCodec)); a replayed round is refused
    /// without running the handler. For tools with effects that must not repeat.
    pub single_use_state: bool,
    /// Runs as a task when a call asks for one (`execution.taskSupport: "optional"`),
    /// its task showing `working` for at least this many `tasks/get` polls; see
    /// [`Tool::as_task`].
    pub task_polls: Option<u32>,
    /// Runs only as a task (`execution.taskSupport: "required"`); see
    /// [`Tool::task_required`].
    pub task_required: bool,
    /// 2026-07-28: the input rounds of a call run as MRTR rounds on the `tools/call`
    /// itself, and the task is created with the first outcome that is not a request
    /// for input; see [`Tool::input_before_task`].
    pub input_before_task: bool,
    /// The `x-mcp-header` declarations of `input_schema` (`None`: invalid), read when
    /// they are first needed. A served tool's schema never changes in place (the server
    /// holds its tools, and a changed tool is a new `Tool`), so they are read once.
    param_headers: OnceLock<Option<Vec<ParamHeader>>>,
}

impl Tool {
    /// A tool with the given handler.
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: impl FnMut(&ToolCall<'_>) -> ToolOutcome + Send + 'static,
    ) -> Self {
        Tool {
            name: name.into(),
            description: description.into(),
            input_schema,
            handler: Box::new(handler),
            single_use_state: false,
            task_polls: None,
            task_required: false,
            input_before_task: false,
            param_headers: OnceLock::new(),
        }
    }

    /// The `x-mcp-header` declarations of this tool's `inputSchema`
    /// ([`tool_param_headers`]), `None` when they are invalid; read at the first call
    /// that needs them, then kept.
    pub(super) fn param_headers(&self) -> Option<&[ParamHeader]> {
        let read = || tool_param_headers(&self.input_schema).ok();
        self.param_headers.get_or_init(read).as_deref()
    }

    /// The same tool, its `requestState` opened at most once (see
    /// [`Tool::single_use_state`]).
    #[must_use]
    pub fn single_use_state(mut self) -> Self {
        self.single_use_state = true;
        self
    }

    /// The same tool, run as a task when a call asks for one (a 2025-11-25
    /// `params.task`, or a 2026-07-28 call declaring the tasks extension): its handler
    /// runs at once and the task shows `working` for at least `polls` `tasks/get`
    /// polls, and until its outcome is due ([`ToolOutcome::After`]), then that outcome
    /// (the server module `tasks` describes the model). Other calls run it as usual.
    #[must_use]
    pub fn as_task(mut self, polls: u32) -> Self {
        self.task_polls = Some(polls);
        self
    }

    /// The same tool, run only as a task (`execution.taskSupport: "required"`; implies
    /// [`Tool::as_task`] with no polls when it was not set): a 2025-11-25 call without
    /// `params.task` gets `-32601`, a 2026-07-28 call that does not declare the tasks
    /// extension gets `-32021` naming it in `data.requiredCapabilities`.
    #[must_use]
    pub fn task_required(mut self) -> Self {
        self.task_polls.get_or_insert(0);
        self.task_required = true;
        self
    }

    /// The same tool, its 2026-07-28 input gathered before the task exists (implies
    /// [`Tool::as_task`] with no polls when it was not set): while the handler asks
    /// for input, the `tools/call` gets `input_required` results as any tool's does;
    /// its first other outcome (typically a [`ToolOutcome::After`]) becomes a task,
    /// answered with `CreateTaskResult`. A call for which no task could be made now
    /// (the task bounds are reached and no ended task may go) is refused before each
    /// round, so the round that would lead to a refused task never runs. Without this,
    /// a task tool's input requests go through the task (`input_required` on
    /// `tasks/get`, answered by `tasks/update`).
    #[must_use]
    pub fn input_before_task(mut self) -> Self {
        self.task_polls.get_or_insert(0);
        self.input_before_task = true;
        self
    }

    /// The entry of this tool in `tools/list`; `execution.taskSupport` for a task tool
    /// only `with_tasks` (a version that has tasks).
    pub(super) fn listing(&self, with_tasks: bool) -> Value {
        let mut listing = json!({"name": self.name, "description": self.description, "inputSchema": self.input_schema});
        if with_tasks
            && self.task_polls.is_some()
            && let Some(o) = listing.as_object_mut()
        {
            let support = if self.task_required {
                "required"
            } else {
                "optional"
            };
            o.insert("execution".into(), json!({ "taskSupport": support }));
        }
        listing
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// One invocation of a tool handler.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ToolCall<'a> {
    /// The tool name.
    pub name: &'a str,
    /// The arguments (an object; `{}` when the client sent none).
    pub arguments: &'a Value,
    /// Answers gathered so far, by the key the handler chose in
    /// [`ToolOutcome::NeedInput`]: each value is the client's answer object verbatim (an
    /// `ElicitResult`, `CreateMessageResult` or `ListRootsResult`).
    pub inputs: &'a Map<String, Value>,
    /// The era of the request being served.
    pub era: Era,
    /// Input rounds completed before this invocation (0 on the first).
    pub round: u32,
    /// The client's capabilities (`ClientCapabilities`): from `initialize` in the legacy
    /// era, from the request's `_meta` in the modern one (`null` when unknown). A
    /// handler asks only for the inputs the client can give.
    pub client_capabilities: &'a Value,
    /// The request's `_meta.progressToken`, when it carries one: the handler may then
    /// report [`ToolNote::Progress`].
    pub progress_token: Option<&'a Value>,
    /// Where this invocation's work may be deferred to (absent for a handler called
    /// directly, as in a test).
    pub(crate) deferral: Option<&'a Slot<'a>>,
}

impl<'a> ToolCall<'a> {
    /// Defers this call: the handler returns [`ToolOutcome::Deferred`], moves the
    /// completer to wherever the work runs, and the call is answered when the work
    /// completes it (see the [`deferred`](super::deferred) module). Outside a server (a
    /// handler called directly) the completer goes nowhere and the handler's
    /// `Deferred` is its outcome.
    pub fn defer(&self) -> Completer {
        match self.deferral {
            Some(slot) => slot.completer(),
            None => Slot {
                work: 0,
                queue: &std::sync::Arc::default(),
                taken: std::cell::RefCell::default(),
            }
            .completer(),
        }
    }

    /// A first-round call (for testing handlers directly).
    #[must_use]
    pub fn new(name: &'a str, arguments: &'a Value, inputs: &'a Map<String, Value>) -> Self {
        ToolCall {
            name,
            arguments,
            inputs,
            era: Era::Modern,
            round: 0,
            client_capabilities: &NO_CAPABILITIES,
            progress_token: None,
            deferral: None,
        }
    }
}

/// One invocation of a prompt handler.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PromptCall<'a> {
    /// The prompt name.
    pub name: &'a str,
    /// The arguments (`{}` when the client sent none).
    pub arguments: &'a Map<String, Value>,
    /// Answers gathered so far, by the key the handler chose.
    pub inputs: &'a Map<String, Value>,
    /// The era of the request being served.
    pub era: Era,
    /// Input rounds completed before this invocation (0 on the first).
    pub round: u32,
    /// The client's capabilities (`null` when unknown).
    pub client_capabilities: &'a Value,
}

impl<'a> PromptCall<'a> {
    /// A first-round call (for testing handlers directly).
    #[must_use]
    pub fn new(
        name: &'a str,
        arguments: &'a Map<String, Value>,
        inputs: &'a Map<String, Value>,
    ) -> Self {
        PromptCall {
            name,
            arguments,
            inputs,
            era: Era::Modern,
            round: 0,
            client_capabilities: &NO_CAPABILITIES,
        }
    }
}

/// What a tool (or prompt) handler decided.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolOutcome {
    /// The `CallToolResult` JSON (`content`, `isError`, `structuredContent`, …). Must be
    /// an object.
    Done(Value),
    /// A `CallToolResult` with one text block, `{"content":[{"type":"text","text":…}]}`
    /// (and `"isError":true` when `is_error`): what [`ToolOutcome::text`] and
    /// [`ToolOutcome::error_text`] return. The same result as the [`ToolOutcome::Done`]
    /// of that JSON, but its text is written straight into the reply, with no JSON value
    /// built and dropped for it.
    DoneText {
        /// The text of the block.
        text: String,
        /// Whether the result reports a failure of the tool (`isError: true`).
        is_error: bool,
    },
    /// Ask the client for these inputs (key → request), then call the handler again.
    NeedInput(Vec<(String, InputRequestSpec)>),
    /// Never answer this call (for client timeout and cancellation tests).
    NoAnswer,
    /// Answer the call with this JSON-RPC error.
    Error(ErrorObject),
    /// The `CallToolResult` JSON, preceded by these notifications (log messages and
    /// progress) on the request's stream. The machine drops the ones the client did not
    /// ask for: log messages below the client's level (legacy `logging/setLevel`, modern
    /// `_meta` logLevel; a modern request without a logLevel gets none), progress
    /// without a `progressToken`.
    DoneWithNotes {
        /// What to send before the result, in this order.
        notes: Vec<ToolNote>,
        /// The `CallToolResult` JSON.
        result: Value,
    },
    /// This outcome, known now but due only after `delay` (a computation that takes
    /// that long). In a task, the task shows `working` until the request handed in at
    /// or after `created + delay` (the machine has no clock of its own: time is what
    /// its inputs say), then the outcome. Outside a task it is delivered at once.
    After {
        /// How long after the handler ran the outcome is due.
        delay: Duration,
        /// The outcome.
        outcome: Box<ToolOutcome>,
    },
    /// The work goes on elsewhere: the handler took a completer with
    /// [`ToolCall::defer`] and the call is answered when the completer is (see the
    /// [`deferred`](super::deferred) module). Tools only; without a completer taken,
    /// the call fails with `-32603`.
    Deferred,
}

/// A notification a tool sends while it runs (see [`ToolOutcome::DoneWithNotes`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolNote {
    /// `notifications/message`.
    Log {
        /// The severity.
        level: LogLevel,
        /// The logger name, if any.
        logger: Option<String>,
        /// Any JSON (a string, or an object with details).
        data: Value,
    },
    /// `notifications/progress` under the request's progress token.
    Progress {
        /// Progress so far, increasing with each note: a note whose progress is not
        /// finite, or not above the last one sent, is not sent (the protocol requires
        /// progress to increase with every notification).
        progress: f64,
        /// The total, when known (left out when not finite).
        total: Option<f64>,
        /// A human-readable message.
        message: Option<String>,
    },
}

impl ToolNote {
    /// A log message with text data and no logger.
    #[must_use]
    pub fn log(level: LogLevel, text: impl Into<String>) -> Self {
        ToolNote::Log {
            level,
            logger: None,
            data: Value::String(text.into()),
        }
    }

    /// A progress report.
    #[must_use]
    pub fn progress(progress: f64, total: Option<f64>) -> Self {
        ToolNote::Progress {
            progress,
            total,
            message: None,
        }
    }
}

impl ToolOutcome {
    /// `outcome`, due after `delay` ([`ToolOutcome::After`]).
    #[must_use]
    pub fn after(delay: Duration, outcome: ToolOutcome) -> Self {
        ToolOutcome::After {
            delay,
            outcome: Box::new(outcome),
        }
    }

    /// The outcome without its delays (what a call outside a task gets at once).
    pub(super) fn now(self) -> ToolOutcome {
        let mut outcome = self;
        while let ToolOutcome::After { outcome: inner, .. } = outcome {
            outcome = *inner;
        }
        outcome
    }

    /// A successful result with one text block ([`ToolOutcome::DoneText`]).
    #[must_use]
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutcome::DoneText {
            text: text.into(),
            is_error: false,
        }
    }

    /// A failed (`isError: true`) result with one text block
    /// ([`ToolOutcome::DoneText`]).
    #[must_use]
    pub fn error_text(text: impl Into<String>) -> Self {
        ToolOutcome::DoneText {
            text: text.into(),
            is_error: true,
        }
    }
}

/// Writes the members of a [`ToolOutcome::DoneText`] result, `{"content":[…]` and
/// `,"isError":true` for an error, without the closing brace: the same bytes
/// [`write_value`](crate::json_write::write_value) writes for the [`text_result`] value
/// up to its end, so that a caller may add members of its own.
pub(super) fn write_text_result(out: &mut Vec<u8>, text: &str, is_error: bool) {
    out.reserve(text.len() + 64);
    // Members in the order of the map `text_result` builds (sorted by name).
    out.extend_from_slice(b"{\"content\":[{\"text\":");
    crate::json_write::write_str(out, text);
    out.extend_from_slice(b",\"type\":\"text\"}]");
    if is_error {
        out.extend_from_slice(b",\"isError\":true");
    }
}

/// `{"content":[{"type":"text","text":…}]}`, with `"isError":true` for an error, owning
/// `text`: a [`ToolOutcome::DoneText`] as a value, where one is kept (a task's result,
/// a prompt's).
pub(super) fn text_result(text: String, is_error: bool) -> Value {
    let mut block = Map::new();
    block.insert("type".to_owned(), Value::from("text"));
    block.insert("text".to_owned(), Value::String(text));
    let mut result = Map::new();
    result.insert(
        "content".to_owned(),
        Value::Array(vec![Value::Object(block)]),
    );
    if is_error {
        result.insert("isError".to_owned(), Value::Bool(true));
    }
    Value::Object(result)
}

/// One thing a tool asks the client for.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputRequestSpec {
    /// Form-mode elicitation: show `message` and a form for `requested_schema`.
    Elicitation {
        /// What to show the user.
        message: String,
        /// The flat object schema of the answer.
        requested_schema: Value,
    },
    /// `sampling/createMessage` with these params.
    Sampling(Value),
    /// `roots/list`.
    Roots,
}

impl InputRequestSpec {
    /// A form-mode elicitation.
    #[must_use]
    pub fn form(message: impl Into<String>, requested_schema: Value) -> Self {
        InputRequestSpec::Elicitation {
            message: message.into(),
            requested_schema,
        }
    }
}

/// A static text resource.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Resource {
    /// The URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// MIME type.
    pub mime_type: Option<String>,
    /// The text returned by `resources/read` (unless `blob` is set).
    pub text: String,
    /// Binary contents as base64: when set, `resources/read` returns it as `blob`
    /// instead of `text`.
    pub blob: Option<String>,
}

impl Resource {
    /// A text resource.
    #[must_use]
    pub fn text(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: Some(mime_type.into()),
            text: text.into(),
            blob: None,
        }
    }

    /// A binary resource; `base64` is its contents, base64-encoded.
    #[must_use]
    pub fn blob(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        base64: impl Into<String>,
    ) -> Self {
        Resource {
            blob: Some(base64.into()),
            ..Resource::text(uri, name, mime_type, "")
        }
    }

    /// The same resource with a description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    pub(super) fn listing(&self) -> Value {
        let mut v = json!({"uri": self.uri, "name": self.name});
        if let Some(d) = &self.description {
            v["description"] = json!(d);
        }
        if let Some(m) = &self.mime_type {
            v["mimeType"] = json!(m);
        }
        v
    }

    pub(super) fn contents(&self) -> Value {
        let mut v = match &self.blob {
            Some(b) => json!({"uri": self.uri, "blob": b}),
            None => json!({"uri": self.uri, "text": self.text}),
        };
        if let Some(m) = &self.mime_type {
            v["mimeType"] = json!(m);
        }
        json!({"contents": [v]})
    }
}

/// A declared prompt argument.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PromptArgument {
    /// The argument name.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// Whether `prompts/get` without it is refused (`-32602`).
    pub required: bool,
}

impl PromptArgument {
    /// An argument.
    #[must_use]
    pub fn new(name: impl Into<String>, description: Option<String>, required: bool) -> Self {
        PromptArgument {
            name: name.into(),
            description,
            required,
        }
    }
}

/// A prompt the server offers.
#[non_exhaustive]
pub struct Prompt {
    /// The prompt name.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// Declared arguments.
    pub arguments: Vec<PromptArgument>,
    /// Builds the result.
    pub handler: PromptHandler,
}

impl Prompt {
    /// A prompt whose result is a function of its arguments: `handler` returns the
    /// `GetPromptResult` JSON or an error.
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        description: Option<String>,
        arguments: Vec<PromptArgument>,
        mut handler: impl FnMut(&Map<String, Value>) -> Result<Value, ErrorObject> + Send + 'static,
    ) -> Self {
        Prompt::with_input(
            name,
            description,
            arguments,
            move |call: &PromptCall<'_>| match handler(call.arguments) {
                Ok(v) => ToolOutcome::Done(v),
                Err(e) => ToolOutcome::Error(e),
            },
        )
    }

    /// A prompt that may ask the client for input before it answers, as a tool does
    /// ([`ToolOutcome::NeedInput`]). In 2026-07-28 the ask is an `input_required`
    /// result and the client's retry resumes `prompts/get`. A legacy `prompts/get`
    /// cannot be parked: a handler asking there gets `-32603` as the answer, so it
    /// should look at [`PromptCall::era`] and answer without input instead.
    /// [`ToolOutcome::NoAnswer`] and notes are not supported for prompts (`-32603`; the
    /// notes' result is sent without them).
    #[must_use]
    pub fn with_input(
        name: impl Into<String>,
        description: Option<String>,
        arguments: Vec<PromptArgument>,
        handler: impl FnMut(&PromptCall<'_>) -> ToolOutcome + Send + 'static,
    ) -> Self {
        Prompt {
            name: name.into(),
            description,
            arguments,
            handler: Box::new(handler),
        }
    }

    pub(super) fn listing(&self) -> Value {
        let args: Vec<Value> = self
            .arguments
            .iter()
            .map(|a| {
                let mut v = json!({"name": a.name, "required": a.required});
                if let Some(d) = &a.description {
                    v["description"] = json!(d);
                }
                v
            })
            .collect();
        let mut v = json!({"name": self.name, "arguments": args});
        if let Some(d) = &self.description {
            v["description"] = json!(d);
        }
        v
    }
}

impl fmt::Debug for Prompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prompt")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}
