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

/// A request whose `params` are absent or an object, read in one pass: every member of
/// its params as a value but `_meta`, which is left as its text for a server that may
/// already hold the value of the same text (the returned [`Request::params`] is `None`).
/// `None` for anything else (another kind of message, params that are not an object,
/// text that does not decode), which [`Message::decode`] then reads and names the error
/// of. Nesting is not checked: check it first ([`check_nesting`]).
pub(crate) fn decode_request_split(bytes: &[u8]) -> Option<(Request, SplitParams<'_>)> {
    let env: Envelope<'_, SplitParams<'_>> = request_envelope(bytes)?;
    Some((
        request_of(env.id, env.method)?,
        env.params.unwrap_or_default(),
    ))
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

/// The params member that carries a request's metadata.
pub(crate) const META: &str = "_meta";

/// A request's params object as [`decode_request_split`] reads it: every member but
/// `_meta` as a value, and `_meta` as its text. A repeated member keeps its last value,
/// as a map read by `serde_json` does.
#[derive(Debug, Default)]
pub(crate) struct SplitParams<'a> {
    /// Every member but `_meta`.
    pub(crate) members: serde_json::Map<String, serde_json::Value>,
    /// The text of `_meta`, when present.
    pub(crate) meta: Option<&'a RawValue>,
    /// The `_meta` was the text the server kept from its last request, found in place
    /// (`meta` is then `None`): see `server::meta_cache`.
    pub(crate) meta_kept: bool,
}

impl<'de: 'a, 'a> Deserialize<'de> for SplitParams<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(SplitVisitor(std::marker::PhantomData))
    }
}

struct SplitVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for SplitVisitor<'a> {
    type Value = SplitParams<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut params = SplitParams::default();
        while let Some(MemberName(key)) = access.next_key()? {
            if key == META {
                params.meta = Some(access.next_value::<&'de RawValue>()?);
            } else if key.starts_with("$serde_json::") {
                // Keys serde_json gives a meaning of its own when it reads a map as a
                // value: left to that general path.
                return Err(de::Error::custom("reserved key"));
            } else {
                let value = access.next_value()?;
                params.members.insert(key.into_owned(), value);
            }
        }
        Ok(params)
    }
}

/// A member name as read: borrowed from the text when it has no escapes, so that a name
/// that is not kept (`_meta`) is not copied.
struct MemberName<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for MemberName<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MemberName<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MemberName(std::borrow::Cow::Borrowed(v)))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MemberName(std::borrow::Cow::Owned(v.to_owned())))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(MemberName(std::borrow::Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
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

/// Checks JSON text from a peer before it is read into values (`serde_json::Value`, or a
/// type holding some): nested no deeper than `max_depth`, taking no more than
/// `max_parsed` bytes of memory once parsed (estimated from the text in one pass; text
/// of at most a 256th of it is not scanned for this), and naming no member
/// `$serde_json::…` (which `serde_json` reads as text to parse, past both checks). The
/// machines check every message this way; this is for other JSON an application reads
/// from a peer.
///
/// ```
/// use mcp_proto::jsonrpc::{DecodeError, check_untrusted_json};
///
/// assert!(check_untrusted_json(br#"{"a":[1,2]}"#, 64, 1 << 20).is_ok());
/// let hidden = br#"{"a":{"$serde_json::private::RawValue":"[[[[1]]]]"}}"#;
/// assert_eq!(check_untrusted_json(hidden, 64, 1 << 20), Err(DecodeError::ReservedName));
/// ```
///
/// # Errors
/// [`DecodeError::TooDeep`], [`DecodeError::TooLargeOnceParsed`] or
/// [`DecodeError::ReservedName`].
pub fn check_untrusted_json(
    bytes: &[u8],
    max_depth: usize,
    max_parsed: usize,
) -> Result<(), DecodeError> {
    check_nesting(bytes, max_depth)?;
    crate::held::check_parse(bytes, max_parsed)
        .map_err(|why| DecodeError::unparsable(why, max_parsed))
}

// ----- bounded scans over raw JSON text ----------------------------------------------
//
// These never recurse and never allocate more than an id: each looks at every byte at
// most once, so their cost is linear in the input whatever its nesting.

/// Checks that JSON text nests arrays and objects no more than `max_depth` levels deep
/// (a top-level object or array is level 1; a bare scalar is level 0).
///
/// One pass over the bytes: `[` and `{` outside strings count a level, `]` and `}` end
/// one, and strings are skipped with their escapes honoured. Text that is not JSON is
/// not diagnosed (a decoder does that); only its depth is bounded.
///
/// # Errors
/// [`DecodeError::TooDeep`] naming `max_depth`.
pub fn check_nesting(bytes: &[u8], max_depth: usize) -> Result<(), DecodeError> {
    if nesting_within(bytes, max_depth) {
        Ok(())
    } else {
        Err(DecodeError::TooDeep { limit: max_depth })
    }
}

fn nesting_within(bytes: &[u8], max_depth: usize) -> bool {
    // Every level opens with a `[` or `{`: text with no more of them than `max_depth`
    // (counting those in strings too, which can only overcount) is within the limit.
    // A vectorised search finds them (a long string holds none to stop at), much cheaper
    // than the walk below, which steps over strings byte by byte.
    opening_brackets_within(bytes, max_depth) || walk_nesting_within(bytes, max_depth)
}

/// [`nesting_within`] by walking the text, strings skipped.
fn walk_nesting_within(bytes: &[u8], max_depth: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                let Some(end) = string_end(bytes, i + 1) else {
                    return true; // an unterminated string holds no more levels
                };
                i = end;
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max_depth {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    true
}

/// What [`Marks::of`] counts in a message's bytes, wherever they are (strings included).
#[derive(Clone, Copy)]
struct Marks {
    /// The `[` and `{` bytes: text with no more of them than a depth nests no deeper.
    opening_brackets: usize,
    /// A `$` or a backslash: without either, text names no member with
    /// [`crate::held::RESERVED_PREFIX`], plainly or escaped.
    dollar_or_backslash: bool,
}

impl Marks {
    /// The longest text [`Marks::of`] is used for: past it, a vectorised search for each
    /// mark costs less than the pass (whose cost per byte is higher; the searches' cost
    /// per call is what it saves).
    const MAX_LEN: usize = 512;

    /// Both counts in one pass, 64 bytes at a time (a loop without branches: each
    /// block's counts fit a byte).
    fn of(bytes: &[u8]) -> Marks {
        fn block(b: &[u8]) -> (usize, bool) {
            let (mut open, mut marked) = (0u8, 0u8);
            for &c in b {
                open += u8::from(c == b'[' || c == b'{');
                marked |= u8::from(c == b'$' || c == b'\\');
            }
            (usize::from(open), marked != 0)
        }
        let mut marks = Marks {
            opening_brackets: 0,
            dollar_or_backslash: false,
        };
        let blocks = bytes.chunks_exact(64);
        let rest = blocks.remainder();
        for b in blocks.chain(std::iter::once(rest)) {
            let (open, marked) = block(b);
            marks.opening_brackets += open;
            marks.dollar_or_backslash |= marked;
        }
        marks
    }
}

/// Whether `bytes` holds no more than `max` `[` and `{` bytes, wherever they are.
fn opening_brackets_within(bytes: &[u8], max: usize) -> bool {
    bytes.len() <= max || memchr::memchr2_iter(b'[', b'{', bytes).nth(max).is_none()
}

/// The index just past the quote that closes the string whose contents start at `from`,
/// or `None` when the text ends first.
pub(crate) fn string_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    // Most strings (member names, short values) end within a few bytes: look at those
    // directly before paying for a vectorised search.
    let short = from.saturating_add(32).min(bytes.len());
    while i < short {
        match bytes[i] {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    loop {
        let at = i + memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
        if bytes[at] == b'"' {
            return Some(at + 1);
        }
        // A backslash: the byte after it is escaped, whatever it is.
        i = at + 2;
    }
}

/// Whether a decoded value nests no more than `max_depth` levels (without recursing).
fn value_within(value: &serde_json::Value, max_depth: usize) -> bool {
    use serde_json::Value;
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((v, depth)) = stack.pop() {
        let level = depth + 1;
        match v {
            Value::Array(items) if level <= max_depth => {
                stack.extend(items.iter().map(|c| (c, level)));
            }
            Value::Object(members) if level <= max_depth => {
                stack.extend(members.values().map(|c| (c, level)));
            }
            Value::Array(_) | Value::Object(_) => return false,
            _ => {}
        }
    }
    true
}

/// What a look at the top-level members of a message says about it without decoding it,
/// for a message that cannot be decoded (too large, too deep, malformed): whether it
/// answers a request, and which.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Sniffed {
    /// The first top-level `id` that is a string or an integer.
    pub(crate) id: Option<RequestId>,
    /// A top-level `method` member was seen: a request or a notification, so not the
    /// answer to anything.
    pub(crate) has_method: bool,
    /// Every top-level member was read (up to the object's closing brace): no `method`
    /// seen means there is none.
    pub(crate) whole: bool,
}

/// Walks the top-level members of a JSON object, skipping their values without decoding
/// them, and notes `id` and `method`. `bytes` may be a truncated prefix: members cut off
/// by its end are not read. Linear in `bytes`, whatever the nesting.
pub(crate) fn sniff(bytes: &[u8]) -> Sniffed {
    let mut out = Sniffed::default();
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return out;
    }
    i += 1;
    loop {
        i = skip_ws(bytes, i);
        if bytes.get(i) != Some(&b'"') {
            return out;
        }
        let Some(key_end) = string_end(bytes, i + 1) else {
            return out;
        };
        let key = &bytes[i + 1..key_end - 1];
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return out;
        }
        i = skip_ws(bytes, i + 1);
        let Some(value_end) = value_end(bytes, i) else {
            return out;
        };
        match member_name(key).as_deref() {
            Some(b"id") if out.id.is_none() => out.id = parse_id(&bytes[i..value_end]),
            Some(b"method") => out.has_method = true,
            _ => {}
        }
        i = skip_ws(bytes, value_end);
        if bytes.get(i) != Some(&b',') {
            out.whole = bytes.get(i) == Some(&b'}');
            return out;
        }
        i += 1;
    }
}

/// The `id` of a message whose text ends with it as the last top-level member
/// (`…,"id":7}`), read backwards from the end of `tail`, the last bytes of the text.
/// Serialisers that write `result` before `id` put it there.
///
/// In a JSON object the last `}` closes the top level, so a member written right before
/// it is a top-level one; and a `,` (or `{`) then `"id"` cannot be the inside of a
/// string that the text closes later. Linear in `tail`.
pub(crate) fn sniff_trailing_id(tail: &[u8]) -> Option<RequestId> {
    trailing_member(tail, b"\"id\"").and_then(parse_id)
}

/// Whether the text whose last bytes are `tail` ends with a top-level `method` member
/// (`…,"method":"tools/call"}`): a request or a notification, whatever came before.
/// Serialisers that write members in alphabetical order, or `params` first, put it there.
pub(crate) fn sniff_trailing_method(tail: &[u8]) -> bool {
    trailing_member(tail, b"\"method\"").is_some_and(|v| v.starts_with(b"\""))
}

/// The value (a string with its quotes, or a number) of the member named `quoted_name`
/// (as written, quotes included) when it is the last top-level member of the text whose
/// last bytes are `tail` (see [`sniff_trailing_id`] for why that is sound).
fn trailing_member<'t>(tail: &'t [u8], quoted_name: &[u8]) -> Option<&'t [u8]> {
    let t = tail.trim_ascii_end().strip_suffix(b"}")?.trim_ascii_end();
    let value_start = if let Some(body) = t.strip_suffix(b"\"") {
        // The opening quote is the last one not escaped by an odd run of backslashes.
        let mut end = body.len();
        loop {
            let q = memchr::memrchr(b'"', &body[..end])?;
            let backslashes = body[..q].iter().rev().take_while(|b| **b == b'\\').count();
            if backslashes % 2 == 0 {
                break q;
            }
            end = q;
        }
    } else {
        t.iter()
            .rposition(|b| !(b.is_ascii_digit() || *b == b'-'))
            .map_or(0, |p| p + 1)
    };
    let (before, value) = t.split_at(value_start);
    let before = before.trim_ascii_end().strip_suffix(b":")?.trim_ascii_end();
    let before = before.strip_suffix(quoted_name)?.trim_ascii_end();
    if !(before.ends_with(b",") || before.ends_with(b"{")) {
        return None;
    }
    Some(value)
}

/// The name of a member from the text between its quotes: as is, or unescaped when it
/// has escapes (`"i\u0064"` names `id` as well).
fn member_name(raw: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
    if !raw.contains(&b'\\') {
        return Some(std::borrow::Cow::Borrowed(raw));
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    let name: String = serde_json::from_slice(&quoted).ok()?;
    Some(std::borrow::Cow::Owned(name.into_bytes()))
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The index just past the value starting at `i`, or `None` when the text ends first.
fn value_end(bytes: &[u8], i: usize) -> Option<usize> {
    match *bytes.get(i)? {
        b'"' => string_end(bytes, i + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while let Some(&b) = bytes.get(j) {
                match b {
                    b'"' => {
                        j = string_end(bytes, j + 1)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let len = bytes[i..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())?;
            (len > 0).then_some(i + len)
        }
    }
}

/// A request id from the text of one JSON value: a string or an integer, read as the
/// decoder reads `id` ([`IdField`]; `-0`, which `serde_json` reads as a float, is none).
fn parse_id(value: &[u8]) -> Option<RequestId> {
    match serde_json::from_slice::<IdField>(value) {
        Ok(IdField::Valid(id)) => Some(id),
        _ => None,
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

/// The start [`encode_result`] writes before the id.
const RESULT_HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
/// What [`encode_result`] writes between the id and the result.
const RESULT_KEY: &[u8] = b",\"result\":";

/// For a successful response with a number id as this crate's own encoders write it
/// (`{"jsonrpc":"2.0","id":N,"result":…}`, compact, nothing after the result): `N` and
/// where the id ends. `None` for any other text. Only for text this crate wrote itself:
/// the result is not looked at, let alone validated.
pub(crate) fn own_result_id(bytes: &[u8]) -> Option<(i64, usize)> {
    let rest = bytes.strip_prefix(RESULT_HEAD)?;
    let digits = rest
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b'-'))?;
    let id = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let end = RESULT_HEAD.len() + digits;
    (bytes[end..].starts_with(RESULT_KEY) && bytes.last() == Some(&b'}')).then_some((id, end))
}

/// The response `bytes` (for which [`own_result_id`] gave `end`) with its id replaced by
/// `id`, in place: the result is never parsed, and not even moved when both ids are
/// written with as many bytes.
pub(crate) fn replace_own_result_id(mut bytes: Vec<u8>, id: &RequestId, end: usize) -> Vec<u8> {
    let start = RESULT_HEAD.len();
    let len = bytes.len();
    // The most bytes the id can take written (a string escaped as `\u00XX` throughout).
    let longest = match id {
        RequestId::Number(_) => "-9223372036854775808".len(),
        RequestId::String(s) => s.len().saturating_mul(6).saturating_add(2),
    };
    if bytes.capacity() - len < longest {
        // No room for it after the message: writing it there would move the whole
        // message into a buffer twice as large.
        let mut text = Vec::new();
        push_id(&mut text, Some(id));
        match bytes.get_mut(start..end) {
            Some(old) if old.len() == text.len() => old.copy_from_slice(&text),
            _ => {
                bytes.splice(start..end, text);
            }
        }
        return bytes;
    }
    // The new id is written after the message, into its spare room, then moved into
    // place.
    push_id(&mut bytes, Some(id));
    if end.checked_sub(start) == Some(bytes.len() - len) && end <= len {
        bytes.copy_within(len.., start);
        bytes.truncate(len);
    } else {
        let text = bytes.split_off(len);
        bytes.splice(start..end, text);
    }
    bytes
}

/// Appends a successful response whose result is a [`serde_json::Value`], written
/// straight into `out` (no intermediate text) with the word-at-a-time string escaper.
pub(crate) fn encode_result_value(
    out: &mut Vec<u8>,
    id: Option<&RequestId>,
    result: &serde_json::Value,
) {
    out.reserve(crate::json_write::size_hint(result) + 40);
    write_result_head(out, id);
    crate::json_write::write_value(out, result);
    out.push(b'}');
}

/// Appends the start of a response, `{"jsonrpc":"2.0","id":…,"result":`, for callers
/// that write the result (and the closing brace) themselves.
pub(crate) fn write_result_head(out: &mut Vec<u8>, id: Option<&RequestId>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_id(out, id);
    out.extend_from_slice(b",\"result\":");
}

/// Appends a notification whose params are a [`serde_json::Value`], written straight
/// into `out`.
pub(crate) fn encode_notification_value(
    out: &mut Vec<u8>,
    method: &str,
    params: &serde_json::Value,
) {
    out.reserve(crate::json_write::size_hint(params) + method.len() + 40);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    crate::json_write::write_str(out, method);
    out.extend_from_slice(b",\"params\":");
    crate::json_write::write_value(out, params);
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

    /// [`decode_request_split`], with the `_meta` read back into the params.
    fn decode_request_object(
        bytes: &[u8],
    ) -> Option<(Request, serde_json::Map<String, serde_json::Value>)> {
        let (request, split) = decode_request_split(bytes)?;
        let mut params = split.members;
        if let Some(meta) = split.meta {
            params.insert(META.to_owned(), serde_json::from_str(meta.get()).unwrap());
        }
        Some((request, params))
    }

    #[test]
    fn text_that_is_not_utf8_is_named_where_it_breaks() {
        // Valid text is read as a string; text that is not UTF-8 keeps the error
        // serde_json gives for its bytes, with the line and column.
        let bytes = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\xff\"}";
        let want = serde_json::from_slice::<serde_json::Value>(bytes).unwrap_err();
        assert_eq!(want.column(), 36);
        assert_eq!(
            Message::decode(bytes).unwrap_err(),
            DecodeError::Json(want.to_string())
        );
        assert!(decode_request_object(bytes).is_none());
        let fine = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"text\":\"h\u{e9}\"}}";
        let (request, params) = decode_request_object(fine.as_bytes()).unwrap();
        assert_eq!(request.method, "tools/call");
        assert_eq!(params["text"], "h\u{e9}");
    }

    fn dec(s: &str) -> Result<Message, DecodeError> {
        Message::decode(s.as_bytes())
    }

    #[test]
    fn requests_with_object_params_decode_as_message_decode_reads_them() {
        let inputs = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a\"b"}}}"#,
            r#" {"method":"ping","id":"x","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{},"extra":[1,2]}"#,
            // Repeated members, `_meta` among them: the last one stands.
            r#"{"jsonrpc":"2.0","id":2,"method":"m","params":{"_meta":{"k":[1, 2]},"n":"a","n":"b","_meta":{"k":3}}}"#,
            // Anything else is left to Message::decode.
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
            "",
        ];
        let mut fast = 0;
        for input in inputs {
            let general = dec(input);
            match decode_request_object(input.as_bytes()) {
                Some((request, params)) => {
                    fast += 1;
                    let Ok(Message::Request(want)) = general else {
                        panic!("{input}: decoded a request that is not one: {general:?}");
                    };
                    assert_eq!((&request.id, &request.method), (&want.id, &want.method));
                    assert!(request.params.is_none());
                    let want_params: serde_json::Map<String, serde_json::Value> =
                        want.params.map_or_else(serde_json::Map::new, |p| {
                            serde_json::from_str(p.get()).unwrap()
                        });
                    assert_eq!(params, want_params, "{input}");
                }
                None => assert!(
                    !matches!(&general, Ok(Message::Request(r))
                        if r.params.as_deref().is_none_or(|p| p.get().starts_with('{'))),
                    "{input}: a request with object params was left out"
                ),
            }
        }
        assert_eq!(fast, 4);
    }

    #[test]
    fn a_split_request_keeps_its_meta_as_text() {
        let input = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta": {"a" : 1},"x":2}}"#;
        let (request, params) = decode_request_split(input.as_bytes()).unwrap();
        assert_eq!(request.method, "m");
        assert_eq!(params.meta.map(RawValue::get), Some(r#"{"a" : 1}"#));
        assert_eq!(
            serde_json::Value::Object(params.members),
            serde_json::json!({"x": 2})
        );
        // A repeated `_meta` keeps its last text, as a map read by serde_json would.
        let repeated = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":1,"_meta":[2]}}"#;
        let (_, params) = decode_request_split(repeated.as_bytes()).unwrap();
        assert_eq!(params.meta.map(RawValue::get), Some("[2]"));
        // A key serde_json gives a meaning of its own is left to the general path.
        let reserved = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"$serde_json::private::RawValue":"1"}}"#;
        assert!(decode_request_split(reserved.as_bytes()).is_none());
    }

    #[test]
    fn split_params_are_what_serde_json_reads_whatever_the_member_names_spelling() {
        // Names with escapes (read into an owned string) and without (borrowed) alike:
        // the members, and `_meta` (the last of several, however spelled), are those of
        // the params read by serde_json as a whole.
        for params in [
            r#"{"_m\u0065ta":{"a":1},"x":2}"#,
            r#"{"\u005fmeta":{"a":1},"\u0078":2}"#,
            r#"{"_meta":{"a":1},"_m\u0065ta":{"b":2}}"#,
            r#"{"_m\u0065ta":{"a":1},"_meta":[3]}"#,
            r#"{"_meta":1,"x":2,"_meta":{"c":"\u00e9"},"x":3}"#,
            r#"{"_Meta":1,"_meta ":2,"__meta":3,"meta":4}"#,
            r#"{"na\"me":1,"\u00e9\ud83d\ude00":2,"":3,"\\":4}"#,
            r#"{"_meta":{"_meta":{"_meta":1}}}"#,
            r#"{}"#,
        ] {
            let message = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#);
            let (_, got) = decode_request_object(message.as_bytes()).expect(params);
            let want: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(params).unwrap();
            assert_eq!(got, want, "{params}");
        }
        // serde_json's own key, escaped, is still refused.
        let reserved = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"\u0024serde_json::private::RawValue":"1"}}"#;
        assert!(decode_request_split(reserved.as_bytes()).is_none());
    }

    #[test]
    fn own_results_take_any_id_as_if_written_with_it() {
        // Every machine id against every client id, the message with no spare room and
        // with plenty: the text is what encoding the result with the client's id gives.
        let result =
            RawValue::from_string(r#"{"content":[{"type":"text","text":"x"}]}"#.into()).unwrap();
        let numbers = [0, 7, -1, 42, -99, 12345, i64::MAX, i64::MIN, 1 << 53];
        let strings = [
            "",
            "1",
            "a\"b",
            "\\",
            "é\u{1}",
            "\u{2028}",
            &"long".repeat(40),
        ];
        let clients = (numbers.iter().map(|n| RequestId::Number(*n)))
            .chain(strings.iter().map(|s| RequestId::String((*s).to_owned())));
        for client in clients {
            for own in numbers {
                let mut want = Vec::new();
                encode_result(&mut want, Some(&client), &result);
                let mut bytes = Vec::new();
                encode_result(&mut bytes, Some(&RequestId::Number(own)), &result);
                let (id, end) = own_result_id(&bytes).expect("our own encoding");
                assert_eq!(id, own);
                for spare in [0, 1, 20, 4096] {
                    let mut b = bytes.clone();
                    b.shrink_to_fit();
                    b.reserve_exact(spare);
                    let replaced = replace_own_result_id(b, &client, end);
                    assert_eq!(
                        String::from_utf8_lossy(&replaced),
                        String::from_utf8_lossy(&want),
                        "{own} -> {client:?}, {spare} spare"
                    );
                }
            }
        }
    }

    #[test]
    fn an_own_result_full_to_its_capacity_is_not_moved_for_an_id_as_long() {
        // A large result whose buffer has no room left, its id replaced by one written
        // with as many bytes: replaced in place, not copied into a buffer twice as large.
        let text = "x".repeat(1 << 20);
        let result = to_raw(&serde_json::json!({"content": [{"type": "text", "text": text}]}));
        let mut bytes = Vec::new();
        encode_result(&mut bytes, Some(&RequestId::Number(17)), &result);
        bytes.shrink_to_fit();
        let (capacity, at) = (bytes.capacity(), bytes.as_ptr());
        let (_, end) = own_result_id(&bytes).unwrap();
        let replaced = replace_own_result_id(bytes, &RequestId::Number(42), end);
        assert_eq!(&replaced[..30], br#"{"jsonrpc":"2.0","id":42,"resu"#);
        assert_eq!(replaced.capacity(), capacity, "the message was moved");
        assert_eq!(replaced.as_ptr(), at, "the message was moved");
    }

    #[test]
    fn own_results_get_their_id_replaced_without_parsing() {
        let result =
            RawValue::from_string(r#"{"content":[{"type":"text","text":"x"}]}"#.into()).unwrap();
        let mut bytes = Vec::new();
        encode_result(&mut bytes, Some(&RequestId::Number(-17)), &result);
        let (id, end) = own_result_id(&bytes).expect("our own encoding");
        assert_eq!(id, -17);
        for (client, text) in [
            (RequestId::Number(42), "42"),
            (RequestId::Number(7), "7"),
            (RequestId::Number(-99), "-99"),
            (RequestId::String("a\"b".into()), r#""a\"b""#),
        ] {
            let replaced = replace_own_result_id(bytes.clone(), &client, end);
            let want = format!(
                r#"{{"jsonrpc":"2.0","id":{text},"result":{}}}"#,
                result.get()
            );
            assert_eq!(String::from_utf8(replaced).unwrap(), want);
        }
        // Anything not written that way is not taken for it.
        for other in [
            r#"{"jsonrpc":"2.0","id":"1","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1 ,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}} "#,
            r#"{"id":1,"jsonrpc":"2.0","result":{}}"#,
        ] {
            assert_eq!(own_result_id(other.as_bytes()), None, "{other}");
        }
    }

    #[test]
    fn value_encoders_write_what_the_raw_ones_write() {
        let value = serde_json::json!({
            "content": [{"type": "text", "text": "a \"quoted\" line\n\u{1}\u{7f}é\u{2028}"}],
            "n": [1, -2.5, 1e300, null, true, {}],
            "nested": {"z": [], "a": {"b": "\\"}},
        });
        let id = RequestId::String("r\"1".into());
        let (mut direct, mut raw) = (Vec::new(), Vec::new());
        encode_result_value(&mut direct, Some(&id), &value);
        encode_result(&mut raw, Some(&id), &to_raw(&value));
        assert_eq!(
            String::from_utf8(direct).unwrap(),
            String::from_utf8(raw).unwrap()
        );
        let (mut direct, mut raw) = (Vec::new(), Vec::new());
        encode_notification_value(&mut direct, "notifications/\"x\"", &value);
        encode_notification(&mut raw, "notifications/\"x\"", Some(&to_raw(&value)));
        assert_eq!(
            String::from_utf8(direct).unwrap(),
            String::from_utf8(raw).unwrap()
        );
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
    fn opening_brackets_are_counted_exactly() {
        let count = |bytes: &[u8]| bytes.iter().filter(|b| matches!(b, b'[' | b'{')).count();
        let within = |bytes: &[u8], max| super::opening_brackets_within(bytes, max);
        for b in 0..=255u8 {
            for len in 0..20 {
                for at in 0..len {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    let n = count(&bytes);
                    assert!(within(&bytes, n), "{b} at {at} of {len}");
                    if n > 0 {
                        assert!(!within(&bytes, n - 1), "{b} at {at} of {len}");
                    }
                }
            }
        }
        let mixed = br#"{"a":[{"b":"[{"},[[]],{}],"c":"\{"}"#;
        let n = count(mixed);
        assert!(within(mixed, n) && !within(mixed, n - 1));
        // Long text is searched past any alignment.
        let mut long = vec![b'x'; 4099];
        long[4097] = b'{';
        assert!(within(&long, 1) && !within(&long, 0));
    }

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        let depth = |s: &str| (0..10).find(|&d| check_nesting(s.as_bytes(), d).is_ok());
        assert_eq!(depth("5"), Some(0));
        assert_eq!(depth(r#""[[[""#), Some(0));
        assert_eq!(depth("[]"), Some(1));
        assert_eq!(depth(r#"{"a":[{"b":[]}]}"#), Some(4));
        assert_eq!(depth(r#"["[[[", "\"[[[", {"k\"{{":1}]"#), Some(2));
        // An escaped backslash does not escape the quote after it.
        assert_eq!(depth(r#"["\\", [[1]]]"#), Some(3));
        assert_eq!(depth(r#"["\\\"[[[", 1]"#), Some(1));
        // Closers never go below zero; an unterminated string ends the count.
        assert_eq!(depth("]]]][]"), Some(1));
        assert_eq!(depth(r#"[["abc"#), Some(2));
        assert_eq!(
            check_nesting(b"[[[]]]", 2),
            Err(DecodeError::TooDeep { limit: 2 })
        );
    }

    /// `decode_within` reads depth and the marks of reserved names in one pass first: its
    /// verdicts are those of the separate checks, whatever the text holds.
    #[test]
    fn decode_within_counts_brackets_and_dollars_as_the_separate_checks_do() {
        let reserved = Err(DecodeError::ReservedName);
        let long = "x".repeat(600);
        let cases: [(&str, Result<(), DecodeError>); 11] = [
            // Longer than what the one pass is used for: the separate searches.
            (
                &format!(r#"{{"a":"{long}","$serde_json::x":1}}"#),
                reserved.clone(),
            ),
            (&format!(r#"{{"a":"{long}\\u0024"}}"#), Ok(())),
            (
                &format!(
                    r#"{{"a":"{long}","b":{}{}}}"#,
                    "[".repeat(63),
                    "]".repeat(63)
                ),
                Err(DecodeError::TooDeep { limit: 64 }),
            ),
            (r#"{"content":[{"type":"text","text":"hi"}]}"#, Ok(())),
            (r#"{"a":"cost: $5"}"#, Ok(())),
            (r#"{"a\n":"\\u0024"}"#, Ok(())),
            (
                r#"{"$serde_json::private::RawValue":"1"}"#,
                reserved.clone(),
            ),
            (r#"{"a":[{"\u0024serde_json::x":1}]}"#, reserved),
            (&format!("{}{}", "[".repeat(63), "]".repeat(63)), Ok(())),
            (
                &format!("{}{}", "[".repeat(64), "]".repeat(64)),
                Err(DecodeError::TooDeep { limit: 64 }),
            ),
            (
                // More brackets than levels, all but one in a string: within the limit.
                &format!(r#"{{"s":"{}"}}"#, "[{".repeat(100)),
                Ok(()),
            ),
        ];
        for (result, want) in cases {
            let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
            let got = Message::decode_within(text.as_bytes(), 64, 1 << 20).map(|_| ());
            assert_eq!(got, want, "{result}");
        }
        // The marks are found wherever they fall, the last partial block of the one pass
        // included: padding moves them through every offset up to past its length limit.
        for pad in 0..=Marks::MAX_LEN {
            let pad = "x".repeat(pad);
            let cases = [
                (
                    format!(r#"{{"p":"{pad}","$serde_json::x":1}}"#),
                    Err(DecodeError::ReservedName),
                ),
                (
                    format!(r#"{{"p":"{pad}","\u0024serde_json::x":1}}"#),
                    Err(DecodeError::ReservedName),
                ),
                (
                    format!(
                        r#"{{"p":"{pad}","d":{}{}}}"#,
                        "[".repeat(62),
                        "]".repeat(62)
                    ),
                    Ok(()),
                ),
                (
                    format!(
                        r#"{{"p":"{pad}","d":{}{}}}"#,
                        "[".repeat(63),
                        "]".repeat(63)
                    ),
                    Err(DecodeError::TooDeep { limit: 64 }),
                ),
            ];
            for (result, want) in cases {
                let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
                let got = Message::decode_within(text.as_bytes(), 64, 1 << 20).map(|_| ());
                assert_eq!(got, want, "{} bytes: {result}", text.len());
            }
            // Unclosed openers at the very end: too deep, found before the parse (which
            // would call the text incomplete).
            let text = format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"p":"{pad}","d":{}"#,
                "[".repeat(63)
            );
            let got = Message::decode_within(text.as_bytes(), 64, 1 << 20).map(|_| ());
            let too_deep = Err(DecodeError::TooDeep { limit: 64 });
            assert_eq!(got, too_deep, "{} bytes", text.len());
        }
    }

    #[test]
    fn a_very_deep_message_is_refused_in_one_pass() {
        let levels = 1_000_000;
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        );
        assert_eq!(
            Message::decode_with_max_depth(text.as_bytes(), 64).unwrap_err(),
            DecodeError::TooDeep { limit: 64 }
        );
        assert_eq!(sniff(text.as_bytes()).id, Some(RequestId::Number(1)));
        let at_limit = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#,
            "[".repeat(63),
            "]".repeat(63)
        );
        let m = Message::decode_with_max_depth(at_limit.as_bytes(), 64).unwrap();
        assert_eq!(m.check_nesting(64), Ok(()));
        assert_eq!(m.check_nesting(63), Err(DecodeError::TooDeep { limit: 63 }));
    }

    #[test]
    fn error_data_counts_from_level_three() {
        let data = serde_json::json!({"a": [[1]]}); // 3 levels
        let m = Message::Response(Response {
            id: Some(RequestId::Number(1)),
            outcome: Err(ErrorObject::new(1, "x").with_data(data)),
        });
        assert_eq!(m.check_nesting(5), Ok(()));
        assert_eq!(m.check_nesting(4), Err(DecodeError::TooDeep { limit: 4 }));
        let bare = Message::Response(Response {
            id: None,
            outcome: Err(ErrorObject::new(1, "x")),
        });
        assert_eq!(bare.check_nesting(2), Ok(()));
        assert_eq!(
            bare.check_nesting(1),
            Err(DecodeError::TooDeep { limit: 1 })
        );
    }

    #[test]
    fn sniff_reads_top_level_members_only() {
        let s = |t: &str| sniff(t.as_bytes());
        let id = |n| Some(RequestId::Number(n));
        assert_eq!(s(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).id, id(7));
        assert_eq!(
            s(r#" { "result" : {"id":1,"x":"\"id\":2"} , "id" : -3 } "#).id,
            id(-3)
        );
        assert_eq!(
            s(r#"{"id":"a\"b","result":1}"#).id,
            Some(RequestId::String("a\"b".into()))
        );
        let whole_without_id = Sniffed {
            whole: true,
            ..Sniffed::default()
        };
        assert_eq!(s(r#"{"result":{"id":1}}"#), whole_without_id);
        assert_eq!(s(r#"{"i\u0064":8,"result":1}"#).id, id(8));
        assert_eq!(s(r#"{"id":1.5,"result":1}"#).id, None);
        assert_eq!(s(r#"{"id":null,"error":{}}"#).id, None);
        // As the decoder reads it: `-0` is no id (an error answering it said `0`).
        assert_eq!(
            dec(r#"{"jsonrpc":"2.0","id":-0,"method":"x"}"#).unwrap_err(),
            DecodeError::Id
        );
        assert_eq!(s(r#"{"id":-0,"method":"x"}"#).id, None);
        assert_eq!(s(r#"{"id":-10,"method":"x"}"#).id, id(-10));
        let request = s(r#"{"jsonrpc":"2.0","method":"x","id":4}"#);
        assert!(request.has_method);
        assert_eq!(request.id, id(4));
        // A truncated prefix: members cut off are not read.
        assert_eq!(s(r#"{"jsonrpc":"2.0","id":12"#).id, None);
        assert_eq!(s(r#"{"jsonrpc":"2.0","id":12,"res"#).id, id(12));
        assert!(!s(r#"{"jsonrpc":"2.0","id":12,"res"#).whole);
        assert!(s(r#"{"jsonrpc":"2.0","id":12} "#).whole);
        assert!(s(r#"{"method":"notifications/message","params":{"data":"xx"#).has_method);
        assert_eq!(s("[1]"), Sniffed::default());
        assert_eq!(s("not json"), Sniffed::default());
    }

    #[test]
    fn sniff_trailing_id_reads_the_last_member() {
        let t = |s: &str| sniff_trailing_id(s.as_bytes());
        assert_eq!(
            t(r#"xxxx"},"jsonrpc":"2.0","id":7}"#),
            Some(RequestId::Number(7))
        );
        assert_eq!(t("xx\"} , \"id\" : 7 }\r"), Some(RequestId::Number(7)));
        assert_eq!(
            t(r#"x","id":"a\"b"}"#),
            Some(RequestId::String("a\"b".into()))
        );
        assert_eq!(
            t(r#"x","id":"a\\"}"#),
            Some(RequestId::String("a\\".into()))
        );
        assert_eq!(t(r#"{"id":-2}"#), Some(RequestId::Number(-2)));
        // A nested member, a cut-off id, or anything else last: nothing.
        assert_eq!(t(r#"{"x":{"id":3}}"#), None);
        assert_eq!(t(r#"23}"#), None);
        assert_eq!(t(r#""id":3}"#), None);
        assert_eq!(t(r#"x\",\"id\":3}"#), None);
        assert_eq!(t(r#","id":3,"extra":1}"#), None);
        assert_eq!(t(r#","id":null}"#), None);
        assert_eq!(t(""), None);
    }

    #[test]
    fn scans_agree_with_the_decoder_on_mutated_messages() {
        let messages = [
            r#"{"jsonrpc":"2.0","id":7,"result":{"a":[1,{"b":"x\"y"}]}}"#,
            r#"{"result":[[["\\"]]],"jsonrpc":"2.0","id":"k\"1"}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":{"id":3},"id":-4}"#,
            r#"{"jsonrpc":"2.0","method":"n","params":[{"i\u0064":1}]}"#,
            r#" { "id" : 12 , "jsonrpc" : "2.0" , "error" : {"code":1,"message":"m","data":[[]]} } "#,
        ];
        let bytes: &[u8] = b"{}[]\"\\,:1 ";
        for m in messages {
            let m = m.as_bytes();
            for end in 0..=m.len() {
                crate::fuzzing::jsonrpc_decode(&m[..end]);
            }
            for at in 0..m.len() {
                for &b in bytes {
                    let mut mutated = m.to_vec();
                    mutated[at] = b;
                    crate::fuzzing::jsonrpc_decode(&mutated);
                }
            }
        }
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
