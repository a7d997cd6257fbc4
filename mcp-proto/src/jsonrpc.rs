//! JSON-RPC 2.0: messages, request ids, error objects and every MCP error code.
//!
//! Decoding is strict about the envelope and lazy about payloads: `params` and `result`
//! stay as [`RawValue`] (the exact bytes the peer sent) until someone asks for a typed
//! view. That keeps tool schemas, `structuredContent` and `requestState` verbatim and
//! costs one pass over the input.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

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
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
}

/// The `id` member as it appeared: absent, null, or a usable id.
enum IdField {
    Null,
    Valid(RequestId),
    Invalid,
}

impl<'de> Deserialize<'de> for IdField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IdField;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a request id")
            }
            fn visit_unit<E: de::Error>(self) -> Result<IdField, E> {
                Ok(IdField::Null)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IdField, E> {
                Ok(IdField::Valid(RequestId::Number(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IdField, E> {
                Ok(i64::try_from(v)
                    .map(|n| IdField::Valid(RequestId::Number(n)))
                    .unwrap_or(IdField::Invalid))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<IdField, E> {
                Ok(IdField::Invalid)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<IdField, E> {
                Ok(IdField::Invalid)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IdField, E> {
                Ok(IdField::Valid(RequestId::String(v.to_owned())))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<IdField, A::Error> {
                while a.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(IdField::Invalid)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut a: A) -> Result<IdField, A::Error> {
                while a.next_entry::<de::IgnoredAny, de::IgnoredAny>()?.is_some() {}
                Ok(IdField::Invalid)
            }
        }
        d.deserialize_any(V)
    }
}

fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    id: Option<IdField>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

impl Message {
    /// Decodes one message from its JSON text.
    ///
    /// # Errors
    /// A [`DecodeError`] naming what is wrong with the envelope.
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first.is_some_and(|b| *b != b'{') {
            // Validate it is JSON at all so the error says the right thing.
            return match serde_json::from_slice::<de::IgnoredAny>(bytes) {
                Ok(_) => Err(DecodeError::NotAnObject),
                Err(e) => Err(DecodeError::Json(e.to_string())),
            };
        }
        let env: Envelope<'_> =
            serde_json::from_slice(bytes).map_err(|e| DecodeError::Json(e.to_string()))?;
        if env.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
            return Err(DecodeError::Version);
        }
        if let Some(p) = env.params
            && !(p.get().starts_with('{') || p.get().starts_with('['))
        {
            return Err(DecodeError::Params);
        }
        match (env.method, env.result, env.error) {
            (Some(method), None, None) => {
                let params = env.params.map(RawValue::to_owned);
                match env.id {
                    None => Ok(Message::Notification(Notification { method, params })),
                    Some(IdField::Valid(id)) => {
                        Ok(Message::Request(Request { id, method, params }))
                    }
                    Some(_) => Err(DecodeError::Id),
                }
            }
            (Some(_), _, _) => Err(DecodeError::Shape),
            (None, Some(_), Some(_)) | (None, None, None) => {
                if env.id.is_none() {
                    Err(DecodeError::Shape)
                } else {
                    Err(DecodeError::ResultAndError)
                }
            }
            (None, Some(result), None) => match env.id {
                Some(IdField::Valid(id)) => Ok(Message::Response(Response {
                    id: Some(id),
                    outcome: Ok(result.to_owned()),
                })),
                _ => Err(DecodeError::Id),
            },
            (None, None, Some(error)) => {
                let error: ErrorObject =
                    serde_json::from_str(error.get()).map_err(|_| DecodeError::ErrorObject)?;
                let id = match env.id {
                    Some(IdField::Valid(id)) => Some(id),
                    Some(IdField::Null) | None => None,
                    Some(IdField::Invalid) => return Err(DecodeError::Id),
                };
                Ok(Message::Response(Response {
                    id,
                    outcome: Err(error),
                }))
            }
        }
    }

    /// Appends the compact JSON text of this message to `out` (no newline).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Message::Request(r) => encode_request(out, &r.id, &r.method, r.params.as_deref()),
            Message::Notification(n) => encode_notification(out, &n.method, n.params.as_deref()),
            Message::Response(r) => match &r.outcome {
                Ok(result) => encode_result(out, r.id.as_ref(), result),
                Err(e) => encode_error(out, r.id.as_ref(), e),
            },
        }
    }
}

fn push_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Serialising plain data into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, v);
}

fn push_id(out: &mut Vec<u8>, id: Option<&RequestId>) {
    match id {
        Some(id) => push_json(out, id),
        None => out.extend_from_slice(b"null"),
    }
}

/// Appends the start of a request, `{"jsonrpc":"2.0","id":…,"method":…`, for callers
/// that write the params (and the closing brace) themselves.
pub fn write_request_head(out: &mut Vec<u8>, id: &RequestId, method: &str) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_id(out, Some(id));
    out.extend_from_slice(b",\"method\":");
    push_json(out, method);
}

/// Appends a request with the given (already serialised) params.
pub fn encode_request(out: &mut Vec<u8>, id: &RequestId, method: &str, params: Option<&RawValue>) {
    write_request_head(out, id, method);
    if let Some(p) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(p.get().as_bytes());
    }
    out.push(b'}');
}

/// Appends a notification.
pub fn encode_notification(out: &mut Vec<u8>, method: &str, params: Option<&RawValue>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    push_json(out, method);
    if let Some(p) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(p.get().as_bytes());
    }
    out.push(b'}');
}

/// Appends a successful response.
pub fn encode_result(out: &mut Vec<u8>, id: Option<&RequestId>, result: &RawValue) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_id(out, id);
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result.get().as_bytes());
    out.push(b'}');
}

/// Appends an error response.
pub fn encode_error(out: &mut Vec<u8>, id: Option<&RequestId>, error: &ErrorObject) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_id(out, id);
    out.extend_from_slice(b",\"error\":");
    push_json(out, error);
    out.push(b'}');
}

/// Serialises any value into a boxed [`RawValue`].
#[must_use]
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
    RawValue::from_string(text).unwrap_or_else(|_| null_raw())
}

/// The JSON `null` as a [`RawValue`].
#[must_use]
pub fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).expect("null is valid JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Result<Message, DecodeError> {
        Message::decode(s.as_bytes())
    }

    #[test]
    fn decodes_the_three_kinds() {
        assert!(matches!(
            dec(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Message::Request(Request {
                id: RequestId::Number(1),
                ..
            }))
        ));
        assert!(matches!(
            dec(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification(_))
        ));
        let Ok(Message::Response(r)) = dec(r#"{"jsonrpc":"2.0","id":"a","result":{"x":[1, 2]}}"#)
        else {
            panic!("not a response")
        };
        assert_eq!(r.id, Some(RequestId::String("a".into())));
        assert_eq!(
            r.outcome.unwrap().get(),
            r#"{"x":[1, 2]}"#,
            "result kept verbatim"
        );
    }

    #[test]
    fn error_keeps_data_and_null_id() {
        let Ok(Message::Response(r)) = dec(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"v","data":{"supported":["2026-07-28"],"requested":"x"}}}"#,
        ) else {
            panic!()
        };
        assert_eq!(r.id, None);
        let e = r.outcome.unwrap_err();
        assert_eq!(e.code, codes::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.supported_versions(), Some(vec!["2026-07-28"]));
    }

    #[test]
    fn rejects_bad_envelopes() {
        assert_eq!(dec("[1]").unwrap_err(), DecodeError::NotAnObject);
        assert!(matches!(dec("{nope").unwrap_err(), DecodeError::Json(_)));
        assert_eq!(
            dec(r#"{"id":1,"method":"x"}"#).unwrap_err(),
            DecodeError::Version
        );
        assert_eq!(
            dec(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err(),
            DecodeError::Id
        );
        assert_eq!(
            dec(r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#).unwrap_err(),
            DecodeError::Id
        );
        assert_eq!(
            dec(r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#)
                .unwrap_err(),
            DecodeError::ResultAndError
        );
        assert_eq!(
            dec(r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#).unwrap_err(),
            DecodeError::ErrorObject
        );
        assert_eq!(
            dec(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#).unwrap_err(),
            DecodeError::Params
        );
        assert_eq!(dec(r#"{"jsonrpc":"2.0"}"#).unwrap_err(), DecodeError::Shape);
    }

    #[test]
    fn encode_round_trips() {
        let raw = to_raw(&serde_json::json!({"a": 1}));
        let mut out = Vec::new();
        encode_request(&mut out, &RequestId::Number(7), "tools/list", Some(&raw));
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"a":1}}"#
        );
        let m = Message::decode(&out).unwrap();
        let mut again = Vec::new();
        m.encode(&mut again);
        assert_eq!(out, again);
    }
}
