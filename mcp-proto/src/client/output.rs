//! Typed views of a [`CallOutput`], and the answering side of input requests.

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{CallError, CallOutput, InputAnswer, InputRequest, Task};
use crate::content::{Content, PromptView, ResourceContents, read_contents};
use crate::jsonrpc::{ErrorObject, codes};
use crate::model::{CallToolResult, Completion, Prompt, Resource, Tool};

/// The items of a `resources/read` result: typed, or verbatim when neither text nor
/// blob.
pub type ReadContents<'a> = Vec<Result<ResourceContents<'a>, &'a RawValue>>;

impl CallOutput {
    /// The items of a listing, each parsed as `T`.
    ///
    /// # Errors
    /// [`CallError::InvalidResponse`] naming the first item that does not parse.
    pub fn items_as<T: DeserializeOwned>(&self) -> Result<Vec<T>, CallError> {
        self.items
            .iter()
            .enumerate()
            .map(|(i, raw)| {
                serde_json::from_str(raw.get())
                    .map_err(|e| CallError::InvalidResponse(format!("item {i}: {e}")))
            })
            .collect()
    }

    /// The items of `tools/list`.
    ///
    /// # Errors
    /// [`CallError::InvalidResponse`] when a tool does not parse.
    pub fn tools(&self) -> Result<Vec<Tool>, CallError> {
        self.items_as()
    }

    /// The items of `tasks/list` (2025-11-25), each read as [`Task::from_object`] with
    /// the default `Limits::max_task_id_bytes`.
    ///
    /// # Errors
    /// [`CallError::Task`] naming the first item that does not read.
    pub fn tasks(&self) -> Result<Vec<Task>, CallError> {
        let limit = crate::Limits::default().max_task_id_bytes;
        self.items
            .iter()
            .map(|raw| Task::from_result(raw, crate::Era::Legacy, limit))
            .collect::<Result<_, _>>()
            .map_err(CallError::Task)
    }

    /// The task of a `tasks/get` or `tasks/cancel` result (2025-11-25, or `tasks/get`
    /// in 2026-07-28: name the era the connection is in), read as
    /// [`Task::from_result`] with the default `Limits::max_task_id_bytes`.
    ///
    /// # Errors
    /// [`CallError::Task`] naming what is wrong.
    pub fn task(&self, era: crate::Era) -> Result<Task, CallError> {
        let limit = crate::Limits::default().max_task_id_bytes;
        Task::from_result(&self.result, era, limit).map_err(CallError::Task)
    }

    /// The items of `resources/list`.
    ///
    /// # Errors
    /// [`CallError::InvalidResponse`] when a resource does not parse.
    pub fn resources(&self) -> Result<Vec<Resource>, CallError> {
        self.items_as()
    }

    /// The items of `prompts/list`.
    ///
    /// # Errors
    /// [`CallError::InvalidResponse`] when a prompt does not parse.
    pub fn prompts(&self) -> Result<Vec<Prompt>, CallError> {
        self.items_as()
    }

    /// The result parsed as `T`.
    ///
    /// # Errors
    /// [`CallError::InvalidResponse`] when it does not parse.
    pub fn result_as<T: DeserializeOwned>(&self) -> Result<T, CallError> {
        serde_json::from_str(self.result.get())
            .map_err(|e| CallError::InvalidResponse(e.to_string()))
    }

    /// The `completion` of a `completion/complete` result.
    ///
    /// # Errors
    /// [`CallError::InvalidResponse`] when there is none, or it does not parse.
    pub fn completion(&self) -> Result<Completion, CallError> {
        #[derive(serde::Deserialize)]
        struct Complete {
            completion: Completion,
        }
        Ok(self.result_as::<Complete>()?.completion)
    }

    /// The content blocks of a `tools/call` result, typed, borrowed from
    /// [`CallOutput::result`] (nothing is copied or decoded).
    ///
    /// # Errors
    /// [`CallError::InvalidResponse`] when the result has no `content` array, or one of
    /// more than [`MAX_CONTENT_BLOCKS`](crate::model::MAX_CONTENT_BLOCKS) blocks.
    pub fn content(&self) -> Result<Vec<Content<'_>>, CallError> {
        #[derive(serde::Deserialize)]
        struct Blocks<'a> {
            #[serde(borrow, deserialize_with = "crate::model::content_blocks")]
            content: Vec<&'a RawValue>,
        }
        let b: Blocks<'_> = serde_json::from_str(self.result.get())
            .map_err(|e| CallError::InvalidResponse(e.to_string()))?;
        Ok(b.content.into_iter().map(Content::parse).collect())
    }

    /// The messages of a `prompts/get` result, typed, borrowed from
    /// [`CallOutput::result`].
    ///
    /// # Errors
    /// [`CallError::InvalidResponse`] when it is not a `GetPromptResult`.
    pub fn prompt_view(&self) -> Result<PromptView<'_>, CallError> {
        PromptView::parse(&self.result).map_err(|e| CallError::InvalidResponse(e.to_string()))
    }

    /// The `contents` of a `resources/read` result, typed, borrowed from
    /// [`CallOutput::result`]; an item with neither `text` nor `blob` is `Err` with the
    /// item verbatim.
    ///
    /// # Errors
    /// [`CallError::InvalidResponse`] when the result has no `contents` array.
    pub fn resource_contents(&self) -> Result<ReadContents<'_>, CallError> {
        read_contents(&self.result).map_err(|e| CallError::InvalidResponse(e.to_string()))
    }

    /// The result of `tools/call`. A result without `content` is accepted when it has
    /// `structuredContent` (some servers send only that); with neither, it says nothing
    /// and is refused, naming what it is instead when it is a task the call did not ask
    /// for.
    ///
    /// # Errors
    /// [`CallError::InvalidResponse`] when it is not a `CallToolResult` (more than
    /// [`MAX_CONTENT_BLOCKS`](crate::model::MAX_CONTENT_BLOCKS) blocks included).
    pub fn tool_result(&self) -> Result<CallToolResult, CallError> {
        let result: CallToolResult = self.result_as()?;
        if result.content.is_empty() && result.structured_content.is_none() {
            // Rare, so looked at only here: was `content` there at all?
            #[derive(serde::Deserialize)]
            struct Members {
                content: Option<serde::de::IgnoredAny>,
                task: Option<serde::de::IgnoredAny>,
            }
            let members: Members = self.result_as()?;
            match (members.content, members.task) {
                (Some(_), _) => {}
                (None, Some(_)) => {
                    return Err(CallError::InvalidResponse(
                        "a task the call did not ask for, not a tool result".into(),
                    ));
                }
                (None, None) => {
                    return Err(CallError::InvalidResponse(
                        "a tools/call result with neither content nor structuredContent".into(),
                    ));
                }
            }
        }
        Ok(result)
    }
}

/// Answers requests for input. Adapters call it for every [`InputRequest`] when the caller
/// has no interactive way to answer.
///
/// It need not be `Send`: a handler holding an `Rc<RefCell<…>>` (a GUI's state, say) can
/// answer for a connection driven on one thread. The adapters ask for `Send` only where
/// the connection may cross threads (their default flavour of options).
pub trait InputHandler {
    /// The answer to `request`.
    fn answer(&mut self, request: &InputRequest) -> InputAnswer;
}

/// Accepts every form with the defaults of its schema; declines URL elicitations;
/// refuses sampling; answers roots (asked only when the config has no list of its own)
/// with an empty list.
#[derive(Debug, Default, Clone, Copy)]
pub struct AcceptDefaults;

impl InputHandler for AcceptDefaults {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        match request {
            InputRequest::Elicitation(p) if p.is_url_mode() => InputAnswer::decline(),
            InputRequest::Elicitation(p) => InputAnswer::accept(p.defaults()),
            InputRequest::Roots => {
                let mut m = Map::new();
                m.insert("roots".into(), Value::Array(Vec::new()));
                InputAnswer::Result(Value::Object(m))
            }
            _ => InputAnswer::Error(ErrorObject::new(
                codes::INVALID_REQUEST,
                "this client does not answer sampling requests",
            )),
        }
    }
}

/// Declines every elicitation and refuses everything else.
#[derive(Debug, Default, Clone, Copy)]
pub struct DeclineAll;

impl InputHandler for DeclineAll {
    fn answer(&mut self, request: &InputRequest) -> InputAnswer {
        match request {
            InputRequest::Elicitation(_) => InputAnswer::decline(),
            _ => InputAnswer::Error(ErrorObject::new(
                codes::INVALID_REQUEST,
                "no input can be given",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(result: &str) -> CallOutput {
        CallOutput {
            result: RawValue::from_string(result.to_owned()).unwrap(),
            items: Vec::new(),
            pages: 1,
            rounds: 0,
        }
    }

    #[test]
    fn a_tool_result_must_say_something() {
        assert!(output(r#"{"content":[]}"#).tool_result().is_ok());
        assert!(
            output(r#"{"structuredContent":{"n":1}}"#)
                .tool_result()
                .is_ok()
        );
        let refused = |r: &str| match output(r).tool_result() {
            Err(CallError::InvalidResponse(why)) => why,
            other => panic!("{r}: {other:?}"),
        };
        assert!(refused("{}").contains("neither content nor structuredContent"));
        let task = r#"{"task":{"taskId":"t","status":"working"}}"#;
        assert!(refused(task).contains("a task the call did not ask for"));
    }
}
