//! Reading and writing a whole message ([`Message`]'s decoders and its encoder). The
//! envelope is read strictly and in one pass ([`Envelope`]: `"jsonrpc": "2.0"`, an id
//! that is a string or an integer ([`IdField`]), exactly one of `method`, `result` and
//! `error` as the kind requires), while `params` and `result` stay raw text. The bounded
//! decoders check the text first (`checks.rs`), so that a deep or large message costs
//! no more than a flat one of the same size.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::value::RawValue;

use super::checks::{Marks, nesting_within, value_within, walk_nesting_within};
use super::{
    DecodeError, ErrorObject, Message, Notification, Request, RequestId, Response, check_nesting,
    encode_error, encode_notification, encode_request, encode_result,
};

/// The `id` member as it appeared: absent, null, or a usable id.
pub(super) enum IdField {
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

pub(super) fn absent<T>() -> Option<T> {
    None
}

/// The fields of a message; `P` is how `params` is read (kept as raw text, or read as
/// [`SplitParams`] by [`decode_request_split`]).
#[derive(Deserialize)]
pub(super) struct Envelope<'a, P = &'a RawValue> {
    #[serde(default, borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    pub(super) id: Option<IdField>,
    #[serde(default)]
    pub(super) method: Option<String>,
    #[serde(
        default = "absent",
        deserialize_with = "present",
        bound(deserialize = "P: Deserialize<'de>")
    )]
    pub(super) params: Option<P>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// The envelope of a request (an object with `"jsonrpc": "2.0"`, neither `result` nor
/// `error`), with its params read as `P`.
pub(super) fn request_envelope<'a, P: Deserialize<'a>>(bytes: &'a [u8]) -> Option<Envelope<'a, P>> {
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
pub(super) fn request_of(id: Option<IdField>, method: Option<String>) -> Option<Request> {
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
