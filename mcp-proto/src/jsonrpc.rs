//! JSON-RPC 2.0: messages, request ids, error objects and every MCP error code.
//!
//! Decoding is strict about the envelope and lazy about payloads: `params` and `result`
//! stay as [`RawValue`] (the exact bytes the peer sent) until someone asks for a typed
//! view. That keeps tool schemas, `structuredContent` and `requestState` verbatim and
//! costs one pass over the input.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

mod checks;
mod encode;
mod message;
mod sniff;
mod split_params;
#[cfg(test)]
mod tests;

pub(crate) use checks::string_end;
pub use checks::{check_nesting, check_untrusted_json};
pub use encode::{
    encode_error, encode_notification, encode_request, encode_result, null_raw, to_raw,
    write_request_head,
};
pub(crate) use encode::{
    encode_notification_value, encode_result_value, own_result_id, replace_own_result_id,
    write_result_head,
};
pub(crate) use message::present;
pub(crate) use sniff::{Sniffed, sniff, sniff_trailing_id, sniff_trailing_method};
pub(crate) use split_params::{META, SplitParams, decode_request_split};

/// Error codes defined by JSON-RPC 2.0 and by the three MCP versions.
pub mod codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available (2026: HTTP 404).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters (unknown tool, bad cursor, missing `_meta` in 2026).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// 2025 only: resource not found. 2026 servers must not emit it; clients accept it.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// 2025-11-25 only: URL mode elicitation required (`data.elicitations`).
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;
    /// 2026-07-28: an `Mcp-*` header is missing, malformed or differs from the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the request needs a client capability it did not declare
    /// (`data.requiredCapabilities`).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the protocol version is not served (`data.supported`, `data.requested`).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// Draft-era number of [`HEADER_MISMATCH`] still seen in older code.
    pub const DRAFT_HEADER_MISMATCH: i64 = -32001;
    /// Draft-era number of [`MISSING_REQUIRED_CLIENT_CAPABILITY`].
    pub const DRAFT_MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32003;
    /// Draft-era number of [`UNSUPPORTED_PROTOCOL_VERSION`].
    pub const DRAFT_UNSUPPORTED_PROTOCOL_VERSION: i64 = -32004;

    /// True for the codes a 2026-07-28 server uses to reject a request it understood:
    /// proof that the peer is modern.
    #[must_use]
    pub fn is_modern_request_error(code: i64) -> bool {
        matches!(
            code,
            HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION
        )
    }
}

/// A JSON-RPC request id: a string or an integer, never null.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

/// A JSON-RPC error object. `data` is kept exactly as the peer sent it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ErrorObject {
    /// The error code (see [`codes`]).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Additional information, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl ErrorObject {
    /// An error with no `data`.
    #[must_use]
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` attached.
    #[must_use]
    pub fn with_data(mut self, data: serde_json::Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `data.supported` of a `-32022` error, when it is a list of strings.
    #[must_use]
    pub fn supported_versions(&self) -> Option<Vec<&str>> {
        let list = self.data.as_ref()?.get("supported")?.as_array()?;
        list.iter().map(|v| v.as_str()).collect()
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)?;
        if let Some(data) = &self.data {
            write!(f, ", data: {data}")?;
        }
        Ok(())
    }
}

/// A request: it has an id and expects exactly one response.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request id.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The parameters, verbatim.
    pub params: Option<Box<RawValue>>,
}

/// A notification: no id, never answered.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The parameters, verbatim.
    pub params: Option<Box<RawValue>>,
}

impl Notification {
    /// The bytes this notification holds, estimated: its method and parameters as
    /// received, plus the fixed size of the value. What the client's byte budgets count.
    #[must_use]
    pub fn retained_bytes(&self) -> usize {
        std::mem::size_of::<Notification>()
            + self.method.len()
            + self.params.as_ref().map_or(0, |p| p.get().len())
    }
}

/// A response to a request.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request answered; `None` only for an error about a request whose id
    /// could not be read.
    pub id: Option<RequestId>,
    /// The result (verbatim) or the error.
    pub outcome: Result<Box<RawValue>, ErrorObject>,
}

/// Any JSON-RPC message.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response (result or error).
    Response(Response),
}

/// Why bytes are not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not JSON at all, or not UTF-8.
    #[error("not valid JSON: {0}")]
    Json(String),
    /// JSON, but not an object (batches were removed in 2025-06-18).
    #[error("a JSON-RPC message must be a JSON object")]
    NotAnObject,
    /// A JSON object, but a member of the envelope has the wrong type (a `method` that
    /// is not a string, …): the parser's words, naming what it expected.
    #[error("a member has the wrong type: {0}")]
    Member(String),
    /// `jsonrpc` is missing or is not `"2.0"`.
    #[error("`jsonrpc` must be \"2.0\"")]
    Version,
    /// `id` is not a string or an integer (or is null where null is not allowed).
    #[error("`id` must be a string or an integer")]
    Id,
    /// Both `result` and `error`, or neither, on a response.
    #[error("a response must have exactly one of `result` and `error`")]
    ResultAndError,
    /// `method` together with `result`/`error`, or an id-less message without a method.
    #[error("the message is neither a request, a notification nor a response")]
    Shape,
    /// `error` is not a valid error object.
    #[error("`error` must be an object with an integer `code` and a string `message`")]
    ErrorObject,
    /// `params` is present but not an object or array.
    #[error("`params` must be an object or an array")]
    Params,
    /// Arrays and objects nested deeper than the limit (the message itself is level 1).
    #[error("nesting deeper than {limit} levels (max_nesting_depth)")]
    TooDeep {
        /// The limit in force: `Limits::max_nesting_depth` in the client,
        /// `ServerLimits::max_nesting_depth` in the server.
        limit: usize,
    },
    /// What would be parsed of the message takes more memory than the limit, as
    /// estimated from its text before decoding it.
    #[error(
        "the message would take more than {limit} bytes of memory once parsed (max_parsed_bytes)"
    )]
    TooLargeOnceParsed {
        /// The limit in force: `Limits::max_parsed_bytes` in the client,
        /// `ServerLimits::max_parsed_bytes` in the server.
        limit: usize,
    },
    /// A member is named `$serde_json::…`: the JSON parser gives such names a meaning of
    /// its own (an object named so is replaced by its string parsed as JSON, past every
    /// check made on the text), so no message may use them.
    #[error("a member is named `$serde_json::…`, a name the JSON parser reserves")]
    ReservedName,
}

impl DecodeError {
    /// The error for text [`crate::held::check_parse`] refused under `limit`.
    pub(crate) fn unparsable(why: crate::held::Unparsable, limit: usize) -> Self {
        match why {
            crate::held::Unparsable::TooLarge => DecodeError::TooLargeOnceParsed { limit },
            crate::held::Unparsable::ReservedName => DecodeError::ReservedName,
        }
    }
}
