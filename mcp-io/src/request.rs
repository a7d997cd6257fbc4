//! The requests behind the clients' typed methods that take arguments
//! (`call_tool`, `get_prompt`), so that both adapters take them as one type, a JSON
//! [`Value`], and refuse the same values the same way.

use mcp_proto::client::{ApiMisuse, CallRequest};
use serde_json::{Map, Value};

/// The arguments of a tool call or a prompt: an object as it is, `null` as none (an
/// empty object); anything else is refused with [`ApiMisuse::ArgumentsNotObject`],
/// before anything is sent.
///
/// ```
/// use mcp_io::request::arguments;
/// use mcp_proto::client::ApiMisuse;
/// use serde_json::json;
///
/// assert_eq!(arguments(json!({"a": 1})).unwrap()["a"], 1);
/// assert!(arguments(json!(null)).unwrap().is_empty());
/// assert_eq!(arguments(json!([1])), Err(ApiMisuse::ArgumentsNotObject("an array")));
/// ```
///
/// # Errors
/// [`ApiMisuse::ArgumentsNotObject`] for a string, number, boolean or array.
pub fn arguments(value: Value) -> Result<Map<String, Value>, ApiMisuse> {
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        Value::Bool(_) => Err(ApiMisuse::ArgumentsNotObject("a boolean")),
        Value::Number(_) => Err(ApiMisuse::ArgumentsNotObject("a number")),
        Value::String(_) => Err(ApiMisuse::ArgumentsNotObject("a string")),
        Value::Array(_) => Err(ApiMisuse::ArgumentsNotObject("an array")),
    }
}

/// `tools/call` of `name` with `arguments` (see [`arguments`]; `null` is sent as `{}`).
///
/// # Errors
/// As [`arguments`].
pub fn call_tool(name: &str, arguments: Value) -> Result<CallRequest, ApiMisuse> {
    let arguments = self::arguments(arguments)?;
    Ok(CallRequest::call_tool(name, Value::Object(arguments)))
}

/// `prompts/get` of `name` with `arguments` (see [`arguments`]; none are sent for `null`
/// or `{}`).
///
/// # Errors
/// As [`arguments`].
pub fn get_prompt(name: &str, arguments: Value) -> Result<CallRequest, ApiMisuse> {
    Ok(CallRequest::get_prompt(name, self::arguments(arguments)?))
}
