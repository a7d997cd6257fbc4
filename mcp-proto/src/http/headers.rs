//! The 2026-07-28 request header set (SEP-2243) and the `=?base64?…?=` value codec.
//!
//! A 2026-07-28 POST carries `MCP-Protocol-Version`, `Mcp-Method`, for some methods
//! `Mcp-Name`, and for `tools/call` one `Mcp-Param-{Name}` per argument the tool mirrors
//! (see [`super::xmcp`]). [`request_headers`] builds that list.
//!
//! # Value codec
//!
//! [`encode_header_value`] sends a value as is unless it contains anything outside
//! 0x20–0x7E (TAB included), starts or ends with SP or HTAB, or itself looks like the
//! sentinel (starts with `=?base64?` and ends with `?=`); then it sends `=?base64?` +
//! standard padded Base64 of the UTF-8 bytes + `?=`. The empty string is sent empty.
//!
//! [`decode_header_value`] first trims SP/HTAB as every HTTP parser does. A value in
//! sentinel form must decode strictly (standard alphabet, canonical padding, no stray bits,
//! UTF-8); a value that is exactly `=?base64?=` (markers overlapping, no payload) is
//! rejected. Anything else is literal and may contain only visible ASCII, SP and HTAB.
//!
//! # Decisions
//!
//! * Integers outside ±(2^53−1) are refused locally ([`HeaderError::IntegerOutOfRange`]):
//!   the call fails before anything is sent (design decision 2).
//! * A JSON number with a zero fraction (`42.0`) is an integer as far as JSON Schema is
//!   concerned; it is sent in canonical form (`42`). A fraction (`4.2`) for an
//!   integer-typed argument is [`HeaderError::NotAnInteger`].
//! * An argument whose JSON type does not match the declared type (a string for an
//!   integer property, say) is [`HeaderError::TypeMismatch`] rather than being sent
//!   converted: the server would reject the arguments anyway.
//! * `Mcp-Method` and `MCP-Protocol-Version` are copied verbatim (no sentinel is defined
//!   for them); a value that cannot travel verbatim is [`HeaderError::UnsafeValue`].

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;

use super::xmcp::{ParamHeader, Primitive, extract_param_values};

/// `MCP-Protocol-Version`: the protocol version of this request (every POST).
pub const MCP_PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
/// `Mcp-Method`: the JSON-RPC method, verbatim (2026-07-28, every request).
pub const MCP_METHOD: &str = "Mcp-Method";
/// `Mcp-Name`: the tool or prompt name, resource URI or task id (2026-07-28).
pub const MCP_NAME: &str = "Mcp-Name";
/// Prefix of the headers that mirror tool arguments: `Mcp-Param-{Name}`.
pub const MCP_PARAM_PREFIX: &str = "Mcp-Param-";
/// `Mcp-Session-Id` (2025 versions; ignored by 2026-07-28 servers).
pub const MCP_SESSION_ID: &str = "Mcp-Session-Id";
/// The longest `Mcp-Session-Id` the client accepts, in bytes: room for a signed token,
/// short enough that echoing it on every request costs little.
pub const MAX_SESSION_ID_BYTES: usize = 4096;
/// `Last-Event-ID`: resumption of a 2025-era SSE stream.
pub const LAST_EVENT_ID: &str = "Last-Event-ID";
/// Opening marker of a Base64-wrapped value (case-sensitive).
pub const SENTINEL_PREFIX: &str = "=?base64?";
/// Closing marker of a Base64-wrapped value.
pub const SENTINEL_SUFFIX: &str = "?=";
/// The largest magnitude an integer header value may have: 2^53 − 1.
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// RFC 4648 §4 alphabet, padding written and required, non-zero trailing bits refused.
const STRICT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_encode_padding(true)
        .with_decode_allow_trailing_bits(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// A received `Mcp-Name` or `Mcp-Param-*` value that is malformed (a server answers 400
/// with JSON-RPC `-32020`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderValueError {
    /// A literal value holds a byte outside visible ASCII, SP and HTAB.
    #[error(
        "header value has byte 0x{byte:02x} at offset {offset}, outside visible ASCII, SP and HTAB"
    )]
    InvalidCharacter {
        /// The offending byte.
        byte: u8,
        /// Its offset in the OWS-trimmed value.
        offset: usize,
    },
    /// The value is `=?base64?=`: both markers present but overlapping, no payload.
    #[error("header value `=?base64?=` has overlapping sentinel markers and no payload")]
    OverlappingSentinel,
    /// The sentinel payload is not canonical padded standard Base64.
    #[error("sentinel payload is not canonical padded standard Base64")]
    InvalidBase64,
    /// The sentinel payload decodes to bytes that are not UTF-8.
    #[error("sentinel payload does not decode to UTF-8")]
    InvalidUtf8,
}

/// Why the headers for a request could not be built. The call should fail locally.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// An integer argument lies outside ±(2^53−1).
    #[error("{header}: integer {value} is outside ±(2^53−1)")]
    IntegerOutOfRange {
        /// The header it was for.
        header: String,
        /// The JSON text of the number.
        value: String,
    },
    /// An integer-typed argument is a number with a fractional part.
    #[error("{header}: {value} is not an integer")]
    NotAnInteger {
        /// The header it was for.
        header: String,
        /// The JSON text of the number.
        value: String,
    },
    /// An argument's JSON type differs from the type its schema declares.
    #[error("{header}: expected {expected}, found a JSON {found}")]
    TypeMismatch {
        /// The header it was for.
        header: String,
        /// The declared type.
        expected: Primitive,
        /// The JSON type found (`string`, `number`, `boolean`, `object`, `array`).
        found: &'static str,
    },
    /// The method needs `Mcp-Name` but the params lack the string it comes from.
    #[error("{method} needs params.{field} as a string for Mcp-Name")]
    MissingName {
        /// The method.
        method: String,
        /// The params member (`name`, `uri` or `taskId`).
        field: &'static str,
    },
    /// A value copied verbatim into a header (method, version) is empty, has characters
    /// outside 0x20–0x7E, or has leading/trailing spaces.
    #[error("{header}: value cannot be sent verbatim in an HTTP header")]
    UnsafeValue {
        /// The header.
        header: &'static str,
    },
}

/// The header value for `value`: the text itself when it is header-safe, otherwise the
/// `=?base64?…?=` form. Always decodes back to `value` with [`decode_header_value`].
#[must_use]
pub fn encode_header_value(value: &str) -> String {
    if needs_wrapping(value) {
        let mut out = String::with_capacity(value.len() * 4 / 3 + 16);
        out.push_str(SENTINEL_PREFIX);
        STRICT_BASE64.encode_string(value.as_bytes(), &mut out);
        out.push_str(SENTINEL_SUFFIX);
        out
    } else {
        value.to_owned()
    }
}

/// True when [`encode_header_value`] must Base64-wrap `value`.
#[must_use]
pub fn needs_wrapping(value: &str) -> bool {
    value.bytes().any(|b| !(0x20..=0x7e).contains(&b))
        || value.starts_with([' ', '\t'])
        || value.ends_with([' ', '\t'])
        || is_wrapped(value)
}

/// True when `value` has the sentinel form: starts with `=?base64?` and ends with `?=`
/// (case-sensitive; the markers may overlap, as in `=?base64?=`). No OWS trimming.
#[must_use]
pub fn is_wrapped(value: &str) -> bool {
    value.starts_with(SENTINEL_PREFIX) && value.ends_with(SENTINEL_SUFFIX)
}

/// Decodes a received `Mcp-Name` / `Mcp-Param-*` value (see the module docs).
pub fn decode_header_value(raw: &str) -> Result<String, HeaderValueError> {
    decode_header_bytes(raw.as_bytes())
}

/// [`decode_header_value`] on raw field-value bytes, as an HTTP parser hands them over.
pub fn decode_header_bytes(raw: &[u8]) -> Result<String, HeaderValueError> {
    decode_header_cow(raw).map(std::borrow::Cow::into_owned)
}

/// [`decode_header_bytes`], borrowing the value when it is plain text (not encoded).
pub(crate) fn decode_header_cow(raw: &[u8]) -> Result<std::borrow::Cow<'_, str>, HeaderValueError> {
    let value = trim_ows(raw);
    let prefix = SENTINEL_PREFIX.as_bytes();
    let suffix = SENTINEL_SUFFIX.as_bytes();
    if value.starts_with(prefix) && value.ends_with(suffix) {
        if value.len() < prefix.len() + suffix.len() {
            return Err(HeaderValueError::OverlappingSentinel);
        }
        let payload = &value[prefix.len()..value.len() - suffix.len()];
        let bytes = STRICT_BASE64
            .decode(payload)
            .map_err(|_| HeaderValueError::InvalidBase64)?;
        return (String::from_utf8(bytes).map(std::borrow::Cow::Owned))
            .map_err(|_| HeaderValueError::InvalidUtf8);
    }
    if let Some(offset) = value
        .iter()
        .position(|b| !(0x20..=0x7e).contains(b) && *b != b'\t')
    {
        return Err(HeaderValueError::InvalidCharacter {
            byte: value[offset],
            offset,
        });
    }
    // Only ASCII is left, so this cannot fail; stay total anyway.
    (std::str::from_utf8(value).map(std::borrow::Cow::Borrowed))
        .map_err(|_| HeaderValueError::InvalidUtf8)
}

/// `bytes` without leading and trailing SP / HTAB.
fn trim_ows(bytes: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = bytes.iter().position(|b| !is_ows(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !is_ows(b))
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// The header text of an argument declared as `kind` (before wrapping): strings as is,
/// integers in canonical decimal, booleans as `true`/`false`. `header` names the header
/// in errors. JSON `null` is a [`HeaderError::TypeMismatch`]: callers omit the header for
/// null values before getting here.
pub fn primitive_text(kind: Primitive, value: &Value, header: &str) -> Result<String, HeaderError> {
    let mismatch = || HeaderError::TypeMismatch {
        header: header.to_owned(),
        expected: kind,
        found: json_type(value),
    };
    match (kind, value) {
        (Primitive::String, Value::String(s)) => Ok(s.clone()),
        (Primitive::Boolean, Value::Bool(b)) => Ok(if *b { "true" } else { "false" }.to_owned()),
        (Primitive::Integer, Value::Number(n)) => integer_text(n, header),
        _ => Err(mismatch()),
    }
}

/// Canonical decimal of a JSON number that must be a safe integer.
fn integer_text(n: &serde_json::Number, header: &str) -> Result<String, HeaderError> {
    let out_of_range = || HeaderError::IntegerOutOfRange {
        header: header.to_owned(),
        value: n.to_string(),
    };
    if let Some(i) = n.as_i64() {
        return if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) {
            Ok(i.to_string())
        } else {
            Err(out_of_range())
        };
    }
    if n.as_u64().is_some() {
        return Err(out_of_range());
    }
    match n.as_f64() {
        Some(f) if f.is_finite() && f.fract() == 0.0 => {
            // 2^53 − 1 is exactly representable, so the comparison is exact, and a
            // whole number within it converts to i64 without loss.
            if f.abs() <= MAX_SAFE_INTEGER as f64 {
                Ok((f as i64).to_string())
            } else {
                Err(out_of_range())
            }
        }
        Some(f) if f.is_finite() => Err(HeaderError::NotAnInteger {
            header: header.to_owned(),
            value: n.to_string(),
        }),
        _ => Err(out_of_range()),
    }
}

/// The JSON type name of `value`.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The params member that feeds `Mcp-Name` for `method`, if any: `name` for `tools/call`
/// and `prompts/get`, `uri` for `resources/read`, `taskId` for `tasks/get`,
/// `tasks/update` and `tasks/cancel` (tasks extension).
#[must_use]
pub fn mcp_name_source(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// The 2026-07-28 headers for a request: `MCP-Protocol-Version: version`,
/// `Mcp-Method: method`, `Mcp-Name` where [`mcp_name_source`] says so (wrapped when
/// needed), and, for `tools/call` only, `Mcp-Param-{Name}` for every `mirrored` argument
/// present and non-null in `params.arguments` (see [`extract_param_values`]). `mirrored`
/// comes from [`super::xmcp::tool_param_headers`] on the tool's latest `inputSchema`.
///
/// Pairs are (name, value) in that order.
pub fn request_headers(
    method: &str,
    params: &Value,
    version: &str,
    mirrored: &[ParamHeader],
) -> Result<Vec<(String, String)>, HeaderError> {
    let empty = serde_json::Map::new();
    request_headers_for(
        method,
        params.as_object().unwrap_or(&empty),
        version,
        mirrored,
    )
}

/// [`request_headers`] for params already held as a map (what a client keeps of the
/// request it is sending).
///
/// # Errors
/// As [`request_headers`].
pub fn request_headers_for(
    method: &str,
    params: &serde_json::Map<String, Value>,
    version: &str,
    mirrored: &[ParamHeader],
) -> Result<Vec<(String, String)>, HeaderError> {
    let list = request_headers_borrowed(method, params, version, mirrored)?;
    Ok(list
        .into_iter()
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect())
}

/// A header of [`request_headers_borrowed`]: its name (static but for `Mcp-Param-*`) and
/// its value (borrowed unless encoded).
pub(crate) type BorrowedHeader<'a> = (Cow<'static, str>, Cow<'a, str>);

/// [`request_headers_for`] without copying what it need not: the names are static but
/// for `Mcp-Param-*`, and a value is borrowed from `method`, `params` or `version`
/// unless it had to be encoded. What a client sending the request writes at once.
pub(crate) fn request_headers_borrowed<'a>(
    method: &'a str,
    params: &'a serde_json::Map<String, Value>,
    version: &'a str,
    mirrored: &[ParamHeader],
) -> Result<Vec<BorrowedHeader<'a>>, HeaderError> {
    let verbatim = |header: &'static str, value: &'a str| {
        let safe = !value.is_empty()
            && value.bytes().all(|b| (0x20..=0x7e).contains(&b))
            && !value.starts_with(' ')
            && !value.ends_with(' ');
        if safe {
            Ok((Cow::Borrowed(header), Cow::Borrowed(value)))
        } else {
            Err(HeaderError::UnsafeValue { header })
        }
    };
    let mut out = Vec::with_capacity(3);
    out.push(verbatim(MCP_PROTOCOL_VERSION, version)?);
    out.push(verbatim(MCP_METHOD, method)?);
    if let Some(field) = mcp_name_source(method) {
        let Some(name) = params.get(field).and_then(Value::as_str) else {
            return Err(HeaderError::MissingName {
                method: method.to_owned(),
                field,
            });
        };
        let value = if needs_wrapping(name) {
            Cow::Owned(encode_header_value(name))
        } else {
            Cow::Borrowed(name)
        };
        out.push((Cow::Borrowed(MCP_NAME), value));
    }
    if method == "tools/call"
        && !mirrored.is_empty()
        && let Some(arguments) = params.get("arguments")
    {
        let values = extract_param_values(mirrored, arguments)?;
        out.extend(
            values
                .into_iter()
                .map(|(name, value)| (Cow::Owned(name), Cow::Owned(value))),
        );
    }
    Ok(out)
}

/// True when two header names are equal, ignoring ASCII case (names are
/// case-insensitive; values are not).
#[must_use]
pub fn header_name_eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// The value of the first header called `name` (compared case-insensitively).
#[must_use]
pub fn find_header<'a, N: AsRef<str>, V: AsRef<str>>(
    headers: &'a [(N, V)],
    name: &str,
) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| header_name_eq(n.as_ref(), name))
        .map(|(_, v)| v.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codec_examples() {
        assert_eq!(encode_header_value("us-west1"), "us-west1");
        assert_eq!(
            encode_header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_header_value(""), "");
        assert_eq!(
            encode_header_value("=?base64?="),
            "=?base64?PT9iYXNlNjQ/PQ==?="
        );
        assert_eq!(
            decode_header_value(" \t=?base64?SGVsbG8=?= ").unwrap(),
            "Hello"
        );
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8?="),
            Err(HeaderValueError::InvalidBase64)
        );
        assert_eq!(
            decode_header_value("=?base64?SGVsbG9=?="),
            Err(HeaderValueError::InvalidBase64)
        );
        assert_eq!(
            decode_header_value("=?base64?="),
            Err(HeaderValueError::OverlappingSentinel)
        );
        assert_eq!(
            decode_header_value("=?base64?/w==?="),
            Err(HeaderValueError::InvalidUtf8)
        );
        assert_eq!(
            decode_header_bytes(b"a\x7fb"),
            Err(HeaderValueError::InvalidCharacter {
                byte: 0x7f,
                offset: 1
            })
        );
        assert_eq!(decode_header_bytes(b" a\tb ").unwrap(), "a\tb");
        assert_eq!(decode_header_value("\t \t").unwrap(), "");
    }

    #[test]
    fn integers() {
        let t = |v: Value| primitive_text(Primitive::Integer, &v, "H");
        assert_eq!(t(json!(42)).unwrap(), "42");
        assert_eq!(t(json!(42.0)).unwrap(), "42");
        assert_eq!(t(json!(-0.0)).unwrap(), "0");
        assert_eq!(
            t(json!(-9_007_199_254_740_991_i64)).unwrap(),
            "-9007199254740991"
        );
        assert!(matches!(
            t(json!(9_007_199_254_740_992_u64)),
            Err(HeaderError::IntegerOutOfRange { .. })
        ));
        assert!(matches!(
            t(json!(u64::MAX)),
            Err(HeaderError::IntegerOutOfRange { .. })
        ));
        assert!(matches!(
            t(json!(1e300)),
            Err(HeaderError::IntegerOutOfRange { .. })
        ));
        assert!(matches!(
            t(json!(4.2)),
            Err(HeaderError::NotAnInteger { .. })
        ));
        assert!(matches!(
            t(json!("42")),
            Err(HeaderError::TypeMismatch {
                found: "string",
                ..
            })
        ));
    }

    #[test]
    fn unsafe_verbatim_values() {
        let p = json!({});
        assert_eq!(
            request_headers("a\r\nX-Evil: 1", &p, "2026-07-28", &[]),
            Err(HeaderError::UnsafeValue { header: MCP_METHOD })
        );
        assert_eq!(
            request_headers("tools/call", &json!({"name": 3}), "2026-07-28", &[]),
            Err(HeaderError::MissingName {
                method: "tools/call".into(),
                field: "name"
            })
        );
    }
}
