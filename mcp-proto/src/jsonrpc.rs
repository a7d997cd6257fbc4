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

mod checks;
mod encode;
mod sniff;
mod split_params;
#[cfg(test)]
mod tests;

pub(crate) use checks::string_end;
use checks::{Marks, nesting_within, value_within, walk_nesting_within};
pub use checks::{check_nesting, check_untrusted_json};
pub use encode::{
    encode_error, encode_notification, encode_request, encode_result, null_raw, to_raw,
    write_request_head,
};
pub(crate) use encode::{
    encode_notification_value, encode_result_value, own_result_id, replace_own_result_id,
    write_result_head,
};
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

/// A member that is there, even as `null` (serde reads `null` as absent otherwise).
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn absent<T>() -> Option<T> {
    None
}

/// The fields of a message; `P` is how `params` is read (kept as raw text, or read as
/// [`SplitParams`] by [`decode_request_split`]).
#[derive(Deserialize)]
struct Envelope<'a, P = &'a RawValue> {
    #[serde(default, borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    id: Option<IdField>,
    #[serde(default)]
    method: Option<String>,
    #[serde(
        default = "absent",
        deserialize_with = "present",
        bound(deserialize = "P: Deserialize<'de>")
    )]
    params: Option<P>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// The envelope of a request (an object with `"jsonrpc": "2.0"`, neither `result` nor
/// `error`), with its params read as `P`.
fn request_envelope<'a, P: Deserialize<'a>>(bytes: &'a [u8]) -> Option<Envelope<'a, P>> {
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    // Checked as UTF-8 once, as a whole: read from bytes, serde_json would check every
    // string it meets on its own, at several times the cost for short strings.
    let text = std::str::from_utf8(bytes).ok()?;
    let env: Envelope<'a, P> = serde_json::from_str(text).ok()?;
    let request = env.jsonrpc.map(RawValue::get) == Some("\"2.0\"")
        && env.result.is_none()
        && env.error.is_none();
    request.then_some(env)
}

/// A request with a valid id and a method, its params left out.
fn request_of(id: Option<IdField>, method: Option<String>) -> Option<Request> {
    let Some(IdField::Valid(id)) = id else {
        return None;
    };
    Some(Request {
        id,
        method: method?,
        params: None,
    })
}

impl Message {
    /// Decodes one message from its JSON text, refusing text that nests arrays and
    /// objects more than `max_depth` levels deep (the message object is level 1). The
    /// depth is checked first, in one pass over the bytes, so a deep message costs no
    /// more than a flat one of the same size.
    ///
    /// This is how every message received from a peer should be decoded: the `params` and
    /// `result` of [`Message::decode`] are kept verbatim, so its own recursion limit does
    /// not apply to them.
    ///
    /// # Errors
    /// [`DecodeError::TooDeep`], or what [`Message::decode`] reports.
    pub fn decode_with_max_depth(bytes: &[u8], max_depth: usize) -> Result<Message, DecodeError> {
        check_nesting(bytes, max_depth)?;
        Message::decode(bytes)
    }

    /// [`Message::decode_with_max_depth`], also refusing a message whose parts read into
    /// values would take more than `max_parsed` bytes of memory once parsed: an `error`
    /// (decoded here, its `data` into a value) and the params of a request or
    /// notification (which a receiver reads), each estimated from its text in one linear
    /// pass before it is parsed (text of at most a 256th of `max_parsed` is not scanned).
    /// A successful response's `result`, kept verbatim, is not counted.
    ///
    /// # Errors
    /// [`DecodeError::TooLargeOnceParsed`], or what [`Message::decode_with_max_depth`]
    /// reports.
    pub fn decode_within(
        bytes: &[u8],
        max_depth: usize,
        max_parsed: usize,
    ) -> Result<Message, DecodeError> {
        // A short message: one pass over the bytes for what both the depth check and the
        // check of a result's member names look for first. A longer one: a vectorised
        // search for each, cheaper per byte than that pass.
        let marks = (bytes.len() <= Marks::MAX_LEN).then(|| Marks::of(bytes));
        match &marks {
            Some(m) if m.opening_brackets > max_depth => {
                if !walk_nesting_within(bytes, max_depth) {
                    return Err(DecodeError::TooDeep { limit: max_depth });
                }
            }
            Some(_) => {}
            None => check_nesting(bytes, max_depth)?,
        }
        let message = Message::decode_bounded(bytes, max_parsed)?;
        // A result is kept verbatim: only its member names are checked, for whoever reads
        // it into values later. Text with neither a `$` nor a backslash names none of the
        // reserved names, and any result fits `usize::MAX` bytes once parsed.
        let (verbatim, limit) = match &message {
            Message::Request(r) => (r.params.as_deref(), max_parsed),
            Message::Notification(n) => (n.params.as_deref(), max_parsed),
            Message::Response(_) if marks.is_some_and(|m| !m.dollar_or_backslash) => {
                (None, usize::MAX)
            }
            Message::Response(r) => (r.outcome.as_deref().ok(), usize::MAX),
        };
        match verbatim.map(|raw| crate::held::check_parse(raw.get().as_bytes(), limit)) {
            Some(Err(why)) => Err(DecodeError::unparsable(why, max_parsed)),
            _ => Ok(message),
        }
    }

    /// Checks that this message nests arrays and objects no more than `max_depth` levels
    /// deep (the message object is level 1), for messages that were not decoded with
    /// [`Message::decode_with_max_depth`]. Costs one pass over the verbatim parts.
    ///
    /// # Errors
    /// [`DecodeError::TooDeep`].
    pub fn check_nesting(&self, max_depth: usize) -> Result<(), DecodeError> {
        let too_deep = DecodeError::TooDeep { limit: max_depth };
        // The envelope is level 1; what it holds starts at level 2.
        let inner = max_depth.checked_sub(1).ok_or(too_deep.clone())?;
        let raw = match self {
            Message::Request(r) => r.params.as_deref(),
            Message::Notification(n) => n.params.as_deref(),
            Message::Response(r) => match &r.outcome {
                Ok(result) => Some(&**result),
                Err(e) => {
                    // `error` is level 2, what its `data` holds starts at level 3.
                    let ok = match inner.checked_sub(1) {
                        None => false,
                        Some(rest) => e.data.as_ref().is_none_or(|d| value_within(d, rest)),
                    };
                    return if ok { Ok(()) } else { Err(too_deep) };
                }
            },
        };
        match raw {
            Some(raw) if !nesting_within(raw.get().as_bytes(), inner) => Err(too_deep),
            _ => Ok(()),
        }
    }

    /// Decodes one message from its JSON text.
    ///
    /// `params` and `result` are kept verbatim whatever their depth: decode what a peer
    /// sent with [`Message::decode_with_max_depth`].
    ///
    /// # Errors
    /// A [`DecodeError`] naming what is wrong with the envelope.
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        Message::decode_bounded(bytes, usize::MAX)
    }

    /// [`Message::decode`], refusing an `error` that would take more than `max_parsed`
    /// bytes once parsed (it is decoded into an [`ErrorObject`], its `data` a value);
    /// everything else is kept verbatim.
    fn decode_bounded(bytes: &[u8], max_parsed: usize) -> Result<Message, DecodeError> {
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first.is_some_and(|b| *b != b'{') {
            // Validate it is JSON at all so the error says the right thing.
            return match serde_json::from_slice::<de::IgnoredAny>(bytes) {
                Ok(_) => Err(DecodeError::NotAnObject),
                Err(e) => Err(DecodeError::Json(e.to_string())),
            };
        }
        // UTF-8 checked once for the whole text (see `request_envelope`); text that is not
        // UTF-8 is read from its bytes, so the error names where it breaks.
        let env: Result<Envelope<'_>, _> = match std::str::from_utf8(bytes) {
            Ok(text) => serde_json::from_str(text),
            Err(_) => serde_json::from_slice(bytes),
        };
        let env = env.map_err(|e| {
            // Valid JSON whose envelope does not read is an invalid message, not a parse
            // error (a second pass, only for messages that fail).
            let json = std::str::from_utf8(bytes)
                .is_ok_and(|text| serde_json::from_str::<de::IgnoredAny>(text).is_ok());
            if json {
                DecodeError::Member(e.to_string())
            } else {
                DecodeError::Json(e.to_string())
            }
        })?;
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
                if let Err(why) = crate::held::check_parse(error.get().as_bytes(), max_parsed) {
                    return Err(DecodeError::unparsable(why, max_parsed));
                }
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
