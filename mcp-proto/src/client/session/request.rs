//! What a caller asks for, and how a request is written on the wire in each era.

use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::client::input::LogLevel;

/// The method of a 2026-07-28 subscription.
pub(crate) const LISTEN: &str = "subscriptions/listen";

/// One request to the server, with its options.
#[derive(Debug, Clone)]
pub struct CallRequest {
    pub(crate) method: String,
    pub(crate) params: Map<String, Value>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) progress: bool,
    /// For listings: the member holding the items; every page is fetched.
    pub(crate) list_key: Option<&'static str>,
    /// 2026-07-28: the least severe log messages wanted for this request.
    pub(crate) log_level: Option<LogLevel>,
    /// Run as a task where the server allows it ([`CallRequest::as_task`]).
    pub(crate) task: Option<TaskAsk>,
}

/// How a call asked to run as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskAsk {
    /// 2025-11-25: the `ttl` asked for.
    pub(crate) ttl: Option<Duration>,
}

/// The methods of the task protocol.
pub(crate) const TASKS_GET: &str = "tasks/get";
pub(crate) const TASKS_RESULT: &str = "tasks/result";
pub(crate) const TASKS_UPDATE: &str = "tasks/update";
pub(crate) const TASKS_CANCEL: &str = "tasks/cancel";
pub(crate) const TASKS_LIST: &str = "tasks/list";

/// Whether sending a request with `method` a second time is harmless, should the first
/// one have reached the server after all: it reads, or sets what it sets again
/// (everything but `tools/call` and the methods this client does not know to be so).
pub(crate) fn repeatable_method(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "server/discover"
            | "ping"
            | "tools/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "prompts/list"
            | "prompts/get"
            | "completion/complete"
            | "logging/setLevel"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | TASKS_GET
            | TASKS_LIST
            | TASKS_RESULT
    )
}

impl CallRequest {
    /// Any method with params (a JSON object; `Value::Null` means none).
    ///
    /// A `_meta` object in `params` is sent as given, except the keys the machine owns,
    /// which it writes itself per era and drops from the caller's: `progressToken`
    /// (see [`CallRequest::with_progress()`]), `io.modelcontextprotocol/protocolVersion`,
    /// `io.modelcontextprotocol/clientCapabilities`, `io.modelcontextprotocol/clientInfo`
    /// and `io.modelcontextprotocol/logLevel` (see [`CallRequest::log_level()`]).
    #[must_use]
    pub fn new(method: impl Into<String>, params: Value) -> Self {
        let params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        CallRequest {
            method: method.into(),
            params,
            timeout: None,
            progress: false,
            list_key: None,
            log_level: None,
            task: None,
        }
    }

    fn for_task(method: &str, task_id: &str) -> Self {
        let mut params = Map::new();
        params.insert("taskId".into(), Value::String(task_id.to_owned()));
        Self::new(method, Value::Object(params))
    }

    /// Run this `tools/call` as a task where the server allows it, and follow the task
    /// to its end: the call completes once, with the task's final result (or error, or
    /// [`CallError::TaskCancelled`](crate::client::CallError::TaskCancelled)), after an
    /// [`Event::TaskCreated`](crate::client::Event::TaskCreated) naming the task and an
    /// [`Event::TaskStatus`](crate::client::Event::TaskStatus) for every change the
    /// machine sees while it polls `tasks/get` at the server's poll interval.
    /// [`Client::cancel`](crate::client::Client::cancel) sends `tasks/cancel` (to a
    /// 2025-11-25 server only when it declared `tasks.cancel`).
    ///
    /// 2025-11-25: the request carries `params.task` (with `ttl` when given) when the
    /// server declared `tasks.requests.tools.call`; otherwise it goes out as a plain
    /// call. 2026-07-28: the request declares the `io.modelcontextprotocol/tasks`
    /// extension (whether the [`ClientConfig`](crate::client::ClientConfig) does or
    /// not); the server decides whether a task is made. `ttl` has no meaning there.
    #[must_use]
    pub fn as_task(mut self, ttl: Option<Duration>) -> Self {
        self.task = Some(TaskAsk { ttl });
        self
    }

    /// `tasks/list` (2025-11-25), every page; read the items with
    /// [`CallOutput::tasks`](crate::client::CallOutput::tasks). The 2026-07-28
    /// extension has no listing: there the call fails locally with
    /// [`CallError::NotInVersion`](crate::client::CallError::NotInVersion). A
    /// 2025-11-25 server that did not declare `tasks.list` is not asked
    /// ([`CallError::NotDeclared`](crate::client::CallError::NotDeclared)).
    #[must_use]
    pub fn list_tasks() -> Self {
        Self::listing(TASKS_LIST, "tasks")
    }

    /// `tasks/get` for the task `task_id`, once (the machine polls the tasks of its
    /// own calls by itself): read it with
    /// [`CallOutput::task`](crate::client::CallOutput::task). In 2026-07-28 the request
    /// declares the tasks extension.
    #[must_use]
    pub fn task_status(task_id: &str) -> Self {
        Self::for_task(TASKS_GET, task_id)
    }

    /// `tasks/result` (2025-11-25): the result of the task `task_id`, once it is
    /// terminal (the server holds the answer until then). The 2026-07-28 extension
    /// inlines results in `tasks/get`: there the call fails locally with
    /// [`CallError::NotInVersion`](crate::client::CallError::NotInVersion).
    #[must_use]
    pub fn task_result(task_id: &str) -> Self {
        Self::for_task(TASKS_RESULT, task_id)
    }

    /// `tasks/cancel` for the task `task_id`. 2025-11-25 answers with the task (now
    /// `cancelled`), or `-32602` when it had already finished; 2026-07-28 answers with
    /// an acknowledgement, the task ending later. A 2025-11-25 server that did not
    /// declare `tasks.cancel` is not asked
    /// ([`CallError::NotDeclared`](crate::client::CallError::NotDeclared)).
    #[must_use]
    pub fn cancel_task(task_id: &str) -> Self {
        Self::for_task(TASKS_CANCEL, task_id)
    }

    fn listing(method: &str, key: &'static str) -> Self {
        let mut r = Self::new(method, Value::Null);
        r.list_key = Some(key);
        r
    }

    /// `tools/list`, every page.
    #[must_use]
    pub fn list_tools() -> Self {
        Self::listing("tools/list", "tools")
    }

    /// `resources/list`, every page.
    #[must_use]
    pub fn list_resources() -> Self {
        Self::listing("resources/list", "resources")
    }

    /// `resources/templates/list`, every page.
    #[must_use]
    pub fn list_resource_templates() -> Self {
        Self::listing("resources/templates/list", "resourceTemplates")
    }

    /// `prompts/list`, every page.
    #[must_use]
    pub fn list_prompts() -> Self {
        Self::listing("prompts/list", "prompts")
    }

    /// `skills/list` (the Skills extension), every page. Read the items with
    /// [`Listing::from_output`](crate::skills::Listing::from_output). Refused locally
    /// with [`CallError::NotDeclared`](crate::client::CallError::NotDeclared) when the
    /// server did not declare the extension.
    #[must_use]
    pub fn list_skills() -> Self {
        Self::listing("skills/list", "skills")
    }

    /// `skills/get` (the Skills extension): the entry of the skill whose `SKILL.md` is at
    /// `uri`. Refused locally like [`CallRequest::list_skills`].
    #[must_use]
    pub fn skill_entry(uri: &str) -> Self {
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(uri.to_owned()));
        Self::new("skills/get", Value::Object(params))
    }

    /// `resources/directory/read` (the Skills extension), every page: the direct children
    /// of the directory resource at `uri` (items read with
    /// [`CallOutput::resources`](crate::client::CallOutput::resources)). Refused locally
    /// with [`CallError::NotDeclared`](crate::client::CallError::NotDeclared) unless the
    /// server declared `directoryRead: true`.
    #[must_use]
    pub fn read_directory(uri: &str) -> Self {
        let mut r = Self::listing("resources/directory/read", "resources");
        r.params.insert("uri".into(), Value::String(uri.to_owned()));
        r
    }

    /// `tools/call` with these arguments (a JSON object).
    #[must_use]
    pub fn call_tool(name: &str, arguments: Value) -> Self {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        params.insert("arguments".into(), arguments);
        Self::new("tools/call", Value::Object(params))
    }

    /// `resources/read`.
    #[must_use]
    pub fn read_resource(uri: &str) -> Self {
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(uri.to_owned()));
        Self::new("resources/read", Value::Object(params))
    }

    /// `prompts/get` with string arguments.
    #[must_use]
    pub fn get_prompt(name: &str, arguments: Map<String, Value>) -> Self {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        if !arguments.is_empty() {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        Self::new("prompts/get", Value::Object(params))
    }

    /// `completion/complete`: values for `argument` of `reference` starting from
    /// `value`. `context` holds arguments already chosen (`context.arguments`); it is
    /// left out for a server on 2025-03-26, which does not know it. A server that did
    /// not declare `completions` is not asked: the call fails locally with
    /// [`CallError::NotDeclared`](crate::client::CallError::NotDeclared).
    #[must_use]
    pub fn complete(
        reference: &crate::model::CompletionRef,
        argument: &str,
        value: &str,
        context: Map<String, Value>,
    ) -> Self {
        let mut params = Map::new();
        params.insert("ref".into(), reference.to_json());
        let mut arg = Map::new();
        arg.insert("name".into(), Value::String(argument.to_owned()));
        arg.insert("value".into(), Value::String(value.to_owned()));
        params.insert("argument".into(), Value::Object(arg));
        if !context.is_empty() {
            let mut c = Map::new();
            c.insert("arguments".into(), Value::Object(context));
            params.insert("context".into(), Value::Object(c));
        }
        Self::new("completion/complete", Value::Object(params))
    }

    /// `ping` (2025-06-18 and 2025-11-25). The 2026-07-28 protocol has no ping: there
    /// the call fails locally with [`CallError::NotInVersion`](crate::client::CallError::NotInVersion),
    /// without sending anything.
    #[must_use]
    pub fn ping() -> Self {
        Self::new("ping", Value::Null)
    }

    /// `resources/subscribe` (2025-06-18 and 2025-11-25): the server then sends
    /// `notifications/resources/updated` when the resource at `uri` changes. The
    /// 2026-07-28 protocol subscribes with `subscriptions/listen` instead: there the call
    /// fails locally with [`CallError::NotInVersion`](crate::client::CallError::NotInVersion).
    /// A server that did not declare `resources.subscribe: true` is not asked: the call
    /// fails locally with [`CallError::NotDeclared`](crate::client::CallError::NotDeclared).
    #[must_use]
    pub fn subscribe_resource(uri: &str) -> Self {
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(uri.to_owned()));
        Self::new("resources/subscribe", Value::Object(params))
    }

    /// `resources/unsubscribe` (2025-06-18 and 2025-11-25); refused locally in
    /// 2026-07-28 like [`CallRequest::subscribe_resource`].
    #[must_use]
    pub fn unsubscribe_resource(uri: &str) -> Self {
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(uri.to_owned()));
        Self::new("resources/unsubscribe", Value::Object(params))
    }

    /// 2026-07-28 `subscriptions/listen` with `filter`: a subscription, open until it
    /// ends. Start it with [`Client::call`](crate::client::Client::call); its call id
    /// names it in [`Event::SubscriptionAcknowledged`](crate::client::Event::SubscriptionAcknowledged),
    /// [`Event::SubscriptionNotification`](crate::client::Event::SubscriptionNotification)
    /// and [`Event::SubscriptionEnded`](crate::client::Event::SubscriptionEnded) (its
    /// one completion). Only its acknowledgement must come within the call's timeout
    /// (else it ends with [`CallError::Timeout`](crate::client::CallError::Timeout));
    /// after that it has none. [`Client::cancel`](crate::client::Client::cancel) ends it
    /// (`notifications/cancelled` on stdio, closing the stream over HTTP). The
    /// legacy era has no such request: there it ends at once with
    /// [`CallError::NotInVersion`](crate::client::CallError::NotInVersion).
    #[must_use]
    pub fn listen(filter: &crate::client::ListenFilter) -> Self {
        let mut params = Map::new();
        params.insert("notifications".into(), filter.to_json());
        Self::new(LISTEN, Value::Object(params))
    }

    /// `logging/setLevel`: log messages at `level` and above, for the whole session.
    ///
    /// In the legacy era this is the request. In 2026-07-28, which has no such request,
    /// nothing is sent: the level becomes the default per-request level
    /// (`_meta["io.modelcontextprotocol/logLevel"]`) of every later request, and the
    /// call completes at once with `{}`.
    ///
    /// In both eras a server that did not declare `logging` is not asked: the call
    /// fails locally with [`CallError::NotDeclared`](crate::client::CallError::NotDeclared)
    /// and the level is left as it was.
    #[must_use]
    pub fn set_log_level(level: LogLevel) -> Self {
        let mut params = Map::new();
        params.insert("level".into(), Value::String(level.as_str().to_owned()));
        Self::new("logging/setLevel", Value::Object(params))
    }

    /// 2026-07-28: ask for log messages at `level` and above on this request only
    /// (`_meta["io.modelcontextprotocol/logLevel"]`); without it (and without a
    /// [`CallRequest::set_log_level`] before), the server sends none. Ignored in the
    /// legacy era, where the level is per session.
    #[must_use]
    pub fn log_level(mut self, level: LogLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// A timeout for this call instead of `Limits::request_timeout`.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Ask for `notifications/progress` (delivered as [`super::Event::Progress`]).
    #[must_use]
    pub fn with_progress(mut self) -> Self {
        self.progress = true;
        self
    }

    /// The method.
    #[must_use]
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params as given.
    #[must_use]
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }
}

/// Methods whose results may be `input_required` (2026-07-28 MRTR).
pub(crate) fn allows_input_required(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// The `_meta` keys the machine writes itself: a caller's are dropped.
pub(crate) const OWNED_META_KEYS: [&str; 5] = [
    "progressToken",
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/logLevel",
];

/// A params member the machine adds to a request.
#[derive(Clone, Copy)]
pub(crate) enum Member<'a> {
    /// A value of its own.
    Value(&'a Value),
    /// JSON text kept as the server wrote it (`requestState`).
    Raw(&'a RawValue),
}

/// Writes a params object: `_meta` first (the per-era envelope, the log level, the
/// progress token, then the `_meta` the caller supplied, without the keys the machine
/// owns), then the caller's members but those of `extra`, then `extra` (the MRTR
/// members, a page's cursor, a task augmentation).
pub(crate) fn write_params(
    out: &mut Vec<u8>,
    envelope: &str,
    log_level: Option<LogLevel>,
    progress_token: Option<u64>,
    params: &Map<String, Value>,
    extra: &[(&str, Member<'_>)],
) {
    out.push(b'{');
    let user_meta = params.get("_meta").and_then(Value::as_object);
    let mut first = true;
    if !envelope.is_empty()
        || log_level.is_some()
        || progress_token.is_some()
        || user_meta.is_some()
    {
        out.extend_from_slice(b"\"_meta\":{");
        let mut inner_first = true;
        if !envelope.is_empty() {
            out.extend_from_slice(envelope.as_bytes());
            inner_first = false;
        }
        if let Some(level) = log_level {
            if !inner_first {
                out.push(b',');
            }
            out.extend_from_slice(b"\"io.modelcontextprotocol/logLevel\":\"");
            out.extend_from_slice(level.as_str().as_bytes());
            out.push(b'"');
            inner_first = false;
        }
        if let Some(token) = progress_token {
            if !inner_first {
                out.push(b',');
            }
            out.extend_from_slice(b"\"progressToken\":");
            out.extend_from_slice(token.to_string().as_bytes());
            inner_first = false;
        }
        for (k, v) in user_meta.into_iter().flatten() {
            if OWNED_META_KEYS.contains(&k.as_str()) {
                continue;
            }
            if !inner_first {
                out.push(b',');
            }
            push_member(out, k, v);
            inner_first = false;
        }
        out.push(b'}');
        first = false;
    }
    for (k, v) in params {
        // The members the machine writes (`inputResponses`, `requestState`, `cursor`,
        // `task`) are its own: a caller's beside them would make a member twice.
        if k == "_meta" || extra.iter().any(|(e, _)| e == k) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        push_member(out, k, v);
        first = false;
    }
    for (k, v) in extra {
        if !first {
            out.push(b',');
        }
        match v {
            Member::Value(v) => push_member(out, k, v),
            Member::Raw(raw) => {
                crate::json_write::write_str(out, k);
                out.push(b':');
                out.extend_from_slice(raw.get().as_bytes());
            }
        }
        first = false;
    }
    out.push(b'}');
}

fn push_member(out: &mut Vec<u8>, key: &str, value: &Value) {
    crate::json_write::write_str(out, key);
    out.push(b':');
    crate::json_write::write_value(out, value);
}

/// The `_meta` members a 2026-07-28 request carries, serialised once per connection
/// (without the surrounding braces).
pub(crate) fn modern_envelope(version: &str, capabilities: &Value, client_info: &Value) -> String {
    let mut out = Vec::new();
    push_member(
        &mut out,
        "io.modelcontextprotocol/protocolVersion",
        &Value::String(version.to_owned()),
    );
    out.push(b',');
    push_member(
        &mut out,
        "io.modelcontextprotocol/clientCapabilities",
        capabilities,
    );
    out.push(b',');
    push_member(&mut out, "io.modelcontextprotocol/clientInfo", client_info);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn params_put_meta_first_and_merge_caller_meta() {
        let mut out = Vec::new();
        let Value::Object(p) = json!({"name":"t","_meta":{"x.y/z":1,
            "io.modelcontextprotocol/protocolVersion":"bad","progressToken":"theirs",
            "io.modelcontextprotocol/related-task":{"taskId":"t1"}}})
        else {
            unreachable!()
        };
        let rs = json!("state");
        write_params(
            &mut out,
            "\"a\":1",
            Some(LogLevel::Warning),
            Some(4),
            &p,
            &[("requestState", Member::Value(&rs))],
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            concat!(
                r#"{"_meta":{"a":1,"io.modelcontextprotocol/logLevel":"warning","progressToken":4,"#,
                r#""io.modelcontextprotocol/related-task":{"taskId":"t1"},"x.y/z":1},"#,
                r#""name":"t","requestState":"state"}"#
            )
        );
        let mut out = Vec::new();
        write_params(&mut out, "", None, None, &Map::new(), &[]);
        assert_eq!(out, b"{}");
    }

    /// A member the machine writes (a page's `cursor`, a task augmentation, the MRTR
    /// members) is written once, its own value: the caller's member of that name is left
    /// out rather than written beside it.
    #[test]
    fn params_write_a_machine_member_once() {
        let Value::Object(p) = json!({"name":"t","cursor":"theirs","task":{"ttl":1},
            "requestState":"relayed"})
        else {
            unreachable!()
        };
        let (cursor, task) = (json!("c1"), json!({"ttl":5}));
        let state = serde_json::value::RawValue::from_string(r#""s\\/1""#.into()).unwrap();
        let mut out = Vec::new();
        write_params(
            &mut out,
            "",
            None,
            None,
            &p,
            &[
                ("task", Member::Value(&task)),
                ("requestState", Member::Raw(&state)),
                ("cursor", Member::Value(&cursor)),
            ],
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"name":"t","task":{"ttl":5},"requestState":"s\\/1","cursor":"c1"}"#
        );
    }
}
