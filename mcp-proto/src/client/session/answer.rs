//! What an answer to an input request must look like, checked before anything is sent:
//! a form answer against its schema (defaults applied), a URL-mode answer without
//! content, a sampling result with its required members, a roots list of `file://`
//! URIs.

use serde_json::{Map, Value};

use super::InputAnswer;
use crate::client::form::FormSchema;
use crate::client::input::{Root, SamplingResult};

/// The shape an answer must have.
#[derive(Debug, Clone)]
pub(crate) enum AnswerCheck {
    Form(Box<FormSchema>),
    Url,
    Sampling,
    Roots,
}

/// The answer as it will be sent, or why it does not fit.
pub(crate) fn check_answer(
    check: &AnswerCheck,
    answer: InputAnswer,
) -> Result<InputAnswer, String> {
    let value = match answer {
        InputAnswer::Error(e) => return Ok(InputAnswer::Error(e)),
        InputAnswer::Result(v) => v,
    };
    let checked = match check {
        AnswerCheck::Form(schema) => elicit(value, Some(schema))?,
        AnswerCheck::Url => elicit(value, None)?,
        AnswerCheck::Sampling => {
            serde_json::from_value::<SamplingResult>(value.clone())
                .map_err(|e| format!("not a CreateMessageResult: {e}"))?;
            value
        }
        AnswerCheck::Roots => {
            let roots = value
                .get("roots")
                .cloned()
                .ok_or_else(|| "a roots/list answer needs `roots`".to_owned())?;
            let roots: Vec<Root> =
                serde_json::from_value(roots).map_err(|e| format!("not a list of roots: {e}"))?;
            if let Some(r) = roots.iter().find(|r| !r.uri.starts_with("file://")) {
                return Err(format!("root {:?} is not a file:// URI", r.uri));
            }
            value
        }
    };
    Ok(InputAnswer::Result(checked))
}

/// An `ElicitResult`: `content` only with a form accept, checked against the schema.
fn elicit(value: Value, schema: Option<&FormSchema>) -> Result<Value, String> {
    let Value::Object(mut m) = value else {
        return Err("an elicitation answer is an object".to_owned());
    };
    let action = m.get("action").and_then(Value::as_str).unwrap_or("");
    match action {
        "accept" => {}
        "decline" | "cancel" => {
            m.remove("content");
            return Ok(Value::Object(m));
        }
        other => return Err(format!("unknown action {other:?}")),
    }
    match schema {
        None => {
            m.remove("content");
        }
        Some(schema) => {
            let content = match m.remove("content") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(c)) => c,
                Some(_) => return Err("`content` is not an object".to_owned()),
            };
            let content = schema.check(content).map_err(|e| e.to_string())?;
            m.insert("content".into(), Value::Object(content));
        }
    }
    Ok(Value::Object(m))
}
