//! A request read in one pass with its params split ([`decode_request_split`]): every
//! member of an object `params` read as a value but `_meta`, kept as its text
//! ([`SplitParams`]), so that a server already holding the value of the same `_meta`
//! text need not read it again. The member names are read as `serde_json` reads them
//! (escapes honoured, a repeated member keeping its last value) and borrowed from the
//! text when they have no escapes.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::value::RawValue;

use super::Request;
use super::message::{Envelope, request_envelope, request_of};
#[cfg(doc)]
use super::{Message, check_nesting};

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
