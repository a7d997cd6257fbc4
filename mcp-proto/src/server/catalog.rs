//! The read side both eras share: advertised capabilities, the paginated lists,
//! `resources/read` and `prompts/get`.
//!
//! A capability is advertised only when the registry has something for it, and the
//! methods behind an unadvertised capability are unknown (`-32601`). Cursors are the
//! decimal offset of the next page; any cursor the server did not issue is `-32602`.
//!
//! `resources/read` looks in the static resources, then asks the
//! [`ResourceReader`](super::ResourceReader) (template resources). A resource nobody knows
//! is `-32002` in the legacy era and `-32602` in 2026-07-28 (SEP-2164), with `data.uri`;
//! a reader answering with no contents is the server's fault (`-32603`), never an empty
//! result. `prompts/get` checks the prompt and its required arguments here for both eras;
//! a modern one that asks for input continues in `modern.rs`.

use serde_json::{Map, Value, json};

use crate::jsonrpc::{ErrorObject, codes};
use crate::version::Era;

use super::calls::{invalid, unwound};
use super::registry::{PromptCall, Tool, ToolOutcome};
use super::{Params, Server};

impl Server {
    /// The `ServerCapabilities` object for `era`. With resource subscriptions on,
    /// `resources.subscribe` means `resources/subscribe` in the legacy era and the
    /// `resourceSubscriptions` filter of `subscriptions/listen` in 2026-07-28; with list
    /// changes reported, each list capability carries `listChanged: true` (legacy:
    /// `notifications/*/list_changed` unsolicited; 2026: on listens that ask for them).
    pub(super) fn capabilities(&self, _era: Era) -> Value {
        let mut caps = Map::new();
        let c = &self.config;
        for (name, present) in [
            ("tools", !c.tools.is_empty()),
            (
                "resources",
                !c.resources.is_empty() || !c.resource_templates.is_empty() || !c.skills.is_empty(),
            ),
            ("prompts", !c.prompts.is_empty()),
            ("completions", c.completion.is_some()),
            ("logging", c.logging),
        ] {
            if present {
                caps.insert(name.to_owned(), json!({}));
            }
        }
        if !c.skills.is_empty() {
            caps.insert(
                "extensions".to_owned(),
                json!({crate::skills::EXTENSION: {"directoryRead": true}}),
            );
        }
        if c.resource_subscriptions
            && let Some(Value::Object(resources)) = caps.get_mut("resources")
        {
            resources.insert("subscribe".to_owned(), json!(true));
        }
        if c.list_changed {
            for name in ["tools", "prompts", "resources"] {
                if let Some(Value::Object(cap)) = caps.get_mut(name) {
                    cap.insert("listChanged".to_owned(), json!(true));
                }
            }
        }
        Value::Object(caps)
    }

    /// Serves a list, `resources/read` or `prompts/get`; `None` when `method` is none of
    /// them or its capability is not advertised.
    pub(super) fn catalog(
        &mut self,
        method: &str,
        params: &Params,
        era: Era,
    ) -> Option<Result<Value, ErrorObject>> {
        let page = self.config.page_size.filter(|n| *n > 0);
        let c = &self.config;
        let has_resources =
            !c.resources.is_empty() || !c.resource_templates.is_empty() || !c.skills.is_empty();
        if let Some(reply) = self.skills_method(method, params) {
            return Some(reply);
        }
        Some(match method {
            "tools/list" if !c.tools.is_empty() => {
                // `execution.taskSupport` only where tasks exist: a 2025-06-18 `Tool` has
                // no `execution`, and its sessions have no tasks (decision 101), so a
                // tool that runs only as a task is not theirs to see.
                let tasks = era == Era::Modern || self.session_has_tasks();
                if tasks || !c.tools.iter().any(|t| t.task_required) {
                    paginate(&c.tools, params, page, "tools", |t| t.listing(tasks))
                } else {
                    let callable: Vec<&Tool> =
                        c.tools.iter().filter(|t| !t.task_required).collect();
                    paginate(&callable, params, page, "tools", |t| t.listing(false))
                }
            }
            "resources/list" if has_resources => {
                paginate(&c.resources, params, page, "resources", |r| r.listing())
            }
            "resources/templates/list" if has_resources => paginate(
                &c.resource_templates,
                params,
                page,
                "resourceTemplates",
                Clone::clone,
            ),
            "resources/read" if has_resources => self.read_resource(params, era),
            "prompts/list" if !c.prompts.is_empty() => {
                paginate(&c.prompts, params, page, "prompts", |p| p.listing())
            }
            "prompts/get" if !c.prompts.is_empty() => self.get_prompt(params),
            "completion/complete" if c.completion.is_some() => self.complete(params),
            _ => return None,
        })
    }

    fn read_resource(&mut self, params: &Params, era: Era) -> Result<Value, ErrorObject> {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return Err(invalid("`uri` must be a string"));
        };
        if let Some(contents) = self.skill_file(uri) {
            return Ok(contents);
        }
        let found = match self.config.resources.iter().find(|r| r.uri == uri) {
            Some(r) => Some(r.contents()),
            None => match self.config.resource_reader.as_mut() {
                // A reader that panics fails the read, nothing else (see `calls::invoke`).
                Some(read) => unwound(|| read(uri)).ok_or_else(|| {
                    ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        "the resource reader failed (it panicked)",
                    )
                })?,
                None => None,
            },
        };
        match found {
            // A reader's answer must at least be an object with contents; an empty
            // `contents` is what SEP-2164 forbids for a missing resource.
            Some(v)
                if v.get("contents")
                    .and_then(Value::as_array)
                    .is_some_and(|c| !c.is_empty()) =>
            {
                Ok(v)
            }
            Some(_) => Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("the resource reader returned no contents for {uri}"),
            )),
            // 2025: -32002. 2026 must not emit -32002 and uses -32602.
            None => Err(ErrorObject::new(
                match era {
                    Era::Legacy => codes::RESOURCE_NOT_FOUND,
                    Era::Modern => codes::INVALID_PARAMS,
                },
                "Resource not found",
            )
            .with_data(json!({"uri": super::calls::clipped(uri)}))),
        }
    }

    /// Whether `uri` names a resource: a skill's file, a static one, or one the reader
    /// knows.
    pub(super) fn resource_exists(&mut self, uri: &str) -> bool {
        self.is_skill_file(uri)
            || self.config.resources.iter().any(|r| r.uri == uri)
            || self
                .config
                .resource_reader
                .as_mut()
                .is_some_and(|read| unwound(|| read(uri)).flatten().is_some())
    }

    fn complete(&mut self, params: &Params) -> Result<Value, ErrorObject> {
        let reference = params.get("ref").cloned().unwrap_or(Value::Null);
        let kind = reference.get("type").and_then(Value::as_str);
        if !matches!(kind, Some("ref/prompt" | "ref/resource")) {
            return Err(invalid("`ref` must be a ref/prompt or ref/resource"));
        }
        if kind == Some("ref/prompt") {
            let name = reference.get("name").and_then(Value::as_str);
            if !self
                .config
                .prompts
                .iter()
                .any(|p| Some(p.name.as_str()) == name)
            {
                return Err(invalid(format!(
                    "Unknown prompt: {}",
                    super::calls::clipped(name.unwrap_or_default())
                )));
            }
        }
        let argument = params.get("argument");
        let (Some(name), Some(value)) = (
            argument.and_then(|a| a.get("name")).and_then(Value::as_str),
            argument
                .and_then(|a| a.get("value"))
                .and_then(Value::as_str),
        ) else {
            return Err(invalid("`argument` must have string `name` and `value`"));
        };
        let context = params
            .get("context")
            .and_then(|c| c.get("arguments"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let Some(handler) = self.config.completion.as_mut() else {
            return Err(invalid("no completions"));
        };
        let mut values =
            unwound(|| handler(&reference, name, value, &context)).ok_or_else(|| {
                ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    "the completion handler failed (it panicked)",
                )
            })??;
        let total = values.len();
        values.truncate(100);
        Ok(json!({"completion": {
            "values": values,
            "total": total,
            "hasMore": total > 100,
        }}))
    }

    /// A legacy `prompts/get`: the handler runs once, without input (a legacy
    /// `prompts/get` cannot be parked while the client is asked).
    fn get_prompt(&mut self, params: &Params) -> Result<Value, ErrorObject> {
        let (name, arguments) = self.prompt_target(params)?;
        let caps = self.session.as_ref().map(|s| s.client_caps.clone());
        let caps = caps.unwrap_or(Value::Null);
        let outcome = self.invoke_prompt(&name, &arguments, &Map::new(), (Era::Legacy, 0), &caps);
        if let ToolOutcome::NeedInput(_) = outcome {
            return Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("prompt `{name}` needs input, which a legacy prompts/get cannot ask for"),
            ));
        }
        self.prompt_answer(&name, outcome)
    }

    /// The prompt `params` names and its arguments, once the required ones are there.
    pub(super) fn prompt_target(
        &self,
        params: &Params,
    ) -> Result<(String, Map<String, Value>), ErrorObject> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(invalid("`name` must be a string"));
        };
        let Some(prompt) = self.config.prompts.iter().find(|p| p.name == name) else {
            return Err(invalid(format!(
                "Unknown prompt: {}",
                super::calls::clipped(name)
            )));
        };
        let args = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(invalid("`arguments` must be an object")),
        };
        // `arguments` is `{[key: string]: string}`: a `null` is no argument given, and
        // another type none the prompt declares.
        if let Some((key, _)) = args.iter().find(|(_, v)| !v.is_string()) {
            return Err(invalid(format!(
                "Argument `{}` for prompt `{name}` must be a string",
                super::calls::clipped(key)
            )));
        }
        if let Some(a) = prompt
            .arguments
            .iter()
            .find(|a| a.required && !args.contains_key(&a.name))
        {
            return Err(invalid(format!(
                "Missing required argument `{}` for prompt `{name}`",
                a.name
            )));
        }
        Ok((name.to_owned(), args))
    }

    /// Runs the handler of prompt `name` once.
    pub(super) fn invoke_prompt(
        &mut self,
        name: &str,
        arguments: &Map<String, Value>,
        inputs: &Map<String, Value>,
        (era, round): (Era, u32),
        client_capabilities: &Value,
    ) -> ToolOutcome {
        let Some(prompt) = self.config.prompts.iter_mut().find(|p| p.name == name) else {
            return ToolOutcome::Error(invalid(format!(
                "Unknown prompt: {}",
                super::calls::clipped(name)
            )));
        };
        let call = PromptCall {
            name,
            arguments,
            inputs,
            era,
            round,
            client_capabilities,
        };
        // As a tool's (see `calls::invoke`): a panic fails the request, nothing else.
        unwound(|| (prompt.handler)(&call)).map_or_else(
            || {
                ToolOutcome::Error(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!(
                        "prompt `{}` failed (its handler panicked)",
                        super::calls::clipped(name)
                    ),
                ))
            },
            ToolOutcome::now,
        )
    }

    /// The answer for a prompt outcome other than asking: the result (an object), or
    /// the error.
    pub(super) fn prompt_answer(
        &self,
        name: &str,
        outcome: ToolOutcome,
    ) -> Result<Value, ErrorObject> {
        let result = match outcome {
            ToolOutcome::Done(v) | ToolOutcome::DoneWithNotes { result: v, .. } => v,
            ToolOutcome::DoneText { text, is_error } => {
                super::registry::text_result(text, is_error)
            }
            ToolOutcome::Error(e) => return Err(e),
            _ => {
                return Err(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("prompt `{name}` gave no answer"),
                ));
            }
        };
        if result.is_object() {
            Ok(result)
        } else {
            Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("prompt `{name}` returned a result that is not an object"),
            ))
        }
    }
}

/// One page of `items` under `key`, with `nextCursor` when more follow.
fn paginate<T>(
    items: &[T],
    params: &Params,
    page: Option<usize>,
    key: &str,
    render: impl Fn(&T) -> Value,
) -> Result<Value, ErrorObject> {
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => {
            parse_cursor(c, items.len(), page).ok_or_else(|| invalid("Invalid cursor"))?
        }
        Some(_) => return Err(invalid("Invalid cursor")),
    };
    let end = page.map_or(items.len(), |n| start.saturating_add(n).min(items.len()));
    let mut out = Map::new();
    let listed = items.get(start..end).unwrap_or_default();
    out.insert(key.to_owned(), listed.iter().map(render).collect());
    if end < items.len() {
        out.insert("nextCursor".to_owned(), Value::String(end.to_string()));
    }
    Ok(Value::Object(out))
}

/// The offset a cursor stands for, if the server could have issued it.
fn parse_cursor(cursor: &str, len: usize, page: Option<usize>) -> Option<usize> {
    let page = page?;
    let offset: usize = cursor.parse().ok()?;
    let canonical = offset.to_string() == cursor;
    (canonical && offset > 0 && offset < len && offset.is_multiple_of(page)).then_some(offset)
}
