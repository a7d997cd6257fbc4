//! The checks the endpoint makes before the server machine sees a message: `Origin`, and
//! the 2026-07-28 request headers against the body (spec section 5.5).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::http::headers::{
    MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, decode_header_bytes, decode_header_cow,
};
use crate::http::xmcp::{ParamHeader, Primitive};
use crate::jsonrpc::{ErrorObject, codes};
use crate::version::{Era, ProtocolVersion};

use super::super::Server;
use super::super::calls::clipped;
use super::reader::HttpRequest;

const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// Whether a present `Origin` is acceptable: one of `extra` exactly, or a loopback origin
/// `http(s)://localhost`, `http(s)://127.0.0.1` or `http(s)://[::1]`, with an optional
/// port. Anything else, `null` included, is refused.
pub(super) fn origin_allowed(origin: &[u8], extra: &[String]) -> bool {
    let Ok(origin) = std::str::from_utf8(origin) else {
        return false;
    };
    if extra.iter().any(|o| o == origin) {
        return true;
    }
    let lower = origin.to_ascii_lowercase();
    let Some(authority) = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))
    else {
        return false;
    };
    ["localhost", "127.0.0.1", "[::1]"].iter().any(|host| {
        authority.strip_prefix(host).is_some_and(|rest| {
            rest.is_empty()
                || rest.strip_prefix(':').is_some_and(|port| {
                    (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit())
                })
        })
    })
}

/// Whether `version` is a modern version the server serves.
pub(super) fn serves_modern(server: &Server, version: &str) -> bool {
    ProtocolVersion::parse(version)
        .is_some_and(|v| v.era() == Era::Modern && server.config().versions.accepts(v))
}

/// Whether the server serves `version` as a legacy version.
pub(super) fn serves_legacy(server: &Server, version: &str) -> bool {
    ProtocolVersion::parse(version)
        .is_some_and(|v| v.era() == Era::Legacy && server.config().versions.accepts(v))
}

/// The legacy `MCP-Protocol-Version` check of every request after `initialize` (a POST or
/// a GET stream): absent is fine (the session knows its version), several different
/// values are `-32020`, and a value the server does not serve as a legacy version is
/// `-32600` with `data: {supported, requested}`.
pub(super) fn legacy_version_header(
    server: &Server,
    http: &HttpRequest,
) -> Result<(), ErrorObject> {
    match single_header(http, MCP_PROTOCOL_VERSION)? {
        Some(v) if !std::str::from_utf8(v).is_ok_and(|v| serves_legacy(server, v)) => {
            let shown = String::from_utf8_lossy(v);
            let shown = clipped(&shown);
            Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                format!("Bad Request: unsupported {MCP_PROTOCOL_VERSION}: {shown}"),
            )
            .with_data(version_data(server, shown)))
        }
        _ => Ok(()),
    }
}

/// Whether the request's `Accept` (every field line, as one list) takes `text/event-stream`
/// (RFC 9110 section 12.5.1): the most specific range that matches it (`text/event-stream`,
/// then `text/*`, then `*/*`) decides, and `q=0` there means it is not acceptable.
pub(super) fn accepts_event_stream(http: &HttpRequest) -> bool {
    let mut best: Option<(u8, bool)> = None;
    for line in http.header_all("accept") {
        for range in line.split(|b| *b == b',') {
            let mut parts = range.split(|b| *b == b';');
            let media = parts.next().unwrap_or_default().trim_ascii();
            let specificity = if media.eq_ignore_ascii_case(b"text/event-stream") {
                3
            } else if media.eq_ignore_ascii_case(b"text/*") {
                2
            } else if media == b"*/*" {
                1
            } else {
                continue;
            };
            let refused = parts.any(|p| {
                let p = p.trim_ascii();
                let Some(q) = p.strip_prefix(b"q=").or_else(|| p.strip_prefix(b"Q=")) else {
                    return false;
                };
                // `q=0`, `q=0.`, `q=0.000`: weight zero.
                q.first() == Some(&b'0') && q[1..].iter().all(|b| matches!(b, b'.' | b'0'))
            });
            if best.is_none_or(|(s, _)| specificity > s) {
                best = Some((specificity, !refused));
            }
        }
    }
    best.is_some_and(|(_, accepted)| accepted)
}

/// The one value of header `name`: `None` when absent, `-32020` when it appears several
/// times with different values.
pub(crate) fn single_header<'a>(
    http: &'a HttpRequest,
    name: &str,
) -> Result<Option<&'a [u8]>, ErrorObject> {
    let mut values = http.header_all(name);
    let first = values.next();
    if let Some(first) = first
        && values.any(|v| v != first)
    {
        return Err(mismatch(format!(
            "Header mismatch: {name} appears several times with different values"
        )));
    }
    Ok(first)
}

/// The 2026-07-28 checks, in the order of spec section 5.5: `MCP-Protocol-Version`
/// present (`-32020`) → `_meta` members present (`-32602`) → header equals body version
/// (`-32020`) → version served (else `Ok`: the machine answers `-32022` itself) →
/// `Mcp-Method` (`-32020`) → `Mcp-Name` (`-32020`) → `Mcp-Param-*` (`-32020`). Method
/// lookup and client capabilities are the machine's (`-32601`, `-32021`).
pub(super) fn modern_checks(
    server: &Server,
    method: &str,
    params: &Map<String, Value>,
    http: &HttpRequest,
) -> Result<(), ErrorObject> {
    let Some(header_version) = single_header(http, MCP_PROTOCOL_VERSION)? else {
        return Err(mismatch(format!(
            "Header mismatch: missing {MCP_PROTOCOL_VERSION} header"
        )));
    };
    let meta = params.get("_meta").and_then(Value::as_object);
    let body_version = meta
        .and_then(|m| m.get(PROTOCOL_VERSION))
        .and_then(Value::as_str);
    let caps = meta
        .and_then(|m| m.get(CLIENT_CAPABILITIES))
        .is_some_and(Value::is_object);
    let (Some(body_version), true) = (body_version, caps) else {
        return Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            format!(
                "A 2026-07-28 request must carry `{PROTOCOL_VERSION}` (a string) and \
                 `{CLIENT_CAPABILITIES}` (an object) in `params._meta`"
            ),
        ));
    };
    compare(MCP_PROTOCOL_VERSION, header_version, body_version)?;
    if !serves_modern(server, body_version) {
        return Ok(());
    }
    let body_name = crate::http::headers::mcp_name_source(method)
        .and_then(|f| params.get(f))
        .and_then(Value::as_str);
    method_and_name(http, method, body_name)?;
    if method == "tools/call" {
        param_checks(server, params, http)?;
    }
    Ok(())
}

/// `Mcp-Method` equal to the body's method and, for the methods that name something
/// ([`mcp_name_source`](crate::http::headers::mcp_name_source): `tools/call`,
/// `prompts/get`, `resources/read`, and the tasks extension's `tasks/get`,
/// `tasks/update`, `tasks/cancel`), `Mcp-Name` (decoded) equal to the body's name, URI
/// or task id; a body without that string differs from any header. Returns the decoded
/// name.
pub(crate) fn method_and_name<'h>(
    http: &'h HttpRequest,
    method: &str,
    body_name: Option<&str>,
) -> Result<Option<Cow<'h, str>>, ErrorObject> {
    let Some(header_method) = single_header(http, MCP_METHOD)? else {
        return Err(mismatch(format!(
            "Header mismatch: missing {MCP_METHOD} header"
        )));
    };
    compare(MCP_METHOD, header_method, method)?;
    if crate::http::headers::mcp_name_source(method).is_none() {
        return Ok(None);
    }
    let Some(raw_name) = single_header(http, MCP_NAME)? else {
        return Err(mismatch(format!(
            "Header mismatch: missing {MCP_NAME} header for {method}"
        )));
    };
    let name = decode_header_cow(raw_name).map_err(|e| {
        mismatch(format!(
            "Header mismatch: {MCP_NAME} header is invalid: {e}"
        ))
    })?;
    match body_name {
        Some(body_name) if name == body_name => Ok(Some(name)),
        Some(body_name) => Err(mismatch(format!(
            "Header mismatch: {MCP_NAME} header value '{}' does not match body value '{}'",
            clipped(&name),
            clipped(body_name)
        ))),
        // The header names what the body does not (absent, or not a string): they
        // differ, and a proxy acting on the header must not pass it.
        None => Err(mismatch(format!(
            "Header mismatch: {MCP_NAME} header value '{}' does not match the body, which \
             names no {} (a string)",
            clipped(&name),
            crate::http::headers::mcp_name_source(method).unwrap_or("name")
        ))),
    }
}

/// The `Mcp-Param-*` headers of a `tools/call` against the tool's declarations. The
/// argument values are read from the raw body, so that a number is compared with every
/// digit it was written with (the parsed body has been through `f64`).
fn param_checks(
    server: &Server,
    params: &Map<String, Value>,
    http: &HttpRequest,
) -> Result<(), ErrorObject> {
    let Some(tool) = params
        .get("name")
        .and_then(Value::as_str)
        .and_then(|name| server.config().tools.iter().find(|t| t.name == name))
    else {
        return Ok(());
    };
    let Some(declared) = tool.param_headers() else {
        return Ok(());
    };
    if declared.is_empty() {
        // Nothing to compare: the arguments need not be looked for in the body.
        return Ok(());
    }
    check_params(declared, raw_arguments(&http.body), |name| {
        single_header(http, name)
    })
}

/// The `params.arguments` of a JSON-RPC request body, as written: the member the
/// machine reads, whatever the spelling of its name (`"argum\u0065nts"`), and the last
/// of several, as the machine keeps the last.
pub(crate) fn raw_arguments(body: &[u8]) -> Option<&RawValue> {
    let body = std::str::from_utf8(body).ok()?;
    let top = members(body)?;
    members(top.get("params")?.get())?.get("arguments").copied()
}

/// The members of the JSON object written as `json`, by decoded name, the last one of a
/// name kept (as `serde_json::Map` keeps it); `None` when `json` is not an object.
fn members(json: &str) -> Option<BTreeMap<String, &RawValue>> {
    serde_json::from_str(json).ok()
}

/// Checks each declared header against the argument it mirrors: present exactly when
/// the argument is present and not null, and equal to it once decoded.
pub(crate) fn check_params<'h>(
    declared: &[ParamHeader],
    arguments: Option<&RawValue>,
    mut header: impl FnMut(&str) -> Result<Option<&'h [u8]>, ErrorObject>,
) -> Result<(), ErrorObject> {
    for decl in declared {
        // Names decoded (an escape in any of them must not hide the argument).
        let value = decl.path.iter().try_fold(arguments, |raw, key| {
            Some(members(raw?.get())?.get(key.as_str()).copied())
        });
        let value = value.flatten().filter(|v| v.get() != "null");
        let name = decl.header_name();
        let raw = header(&name)?;
        let (Some(value), Some(raw)) = (value, raw) else {
            if value.is_some() {
                return Err(mismatch(format!(
                    "Header mismatch: missing {name} header for argument `{}`",
                    decl.path.join(".")
                )));
            }
            if raw.is_some() {
                return Err(mismatch(format!(
                    "Header mismatch: {name} header sent for argument `{}`, which is absent or null",
                    decl.path.join(".")
                )));
            }
            continue;
        };
        let text = decode_header_bytes(raw)
            .map_err(|e| mismatch(format!("Header mismatch: {name} header is invalid: {e}")))?;
        if !param_matches(decl.kind, value.get(), &text) {
            return Err(mismatch(format!(
                "Header mismatch: {name} header value '{}' does not match body value {}",
                clipped(&text),
                clipped(value.get())
            )));
        }
    }
    Ok(())
}

/// Whether the header text `text` equals the body value written as `raw` JSON.
fn param_matches(kind: Primitive, raw: &str, text: &str) -> bool {
    match kind {
        Primitive::String => serde_json::from_str::<String>(raw).is_ok_and(|s| s == text),
        Primitive::Boolean => matches!((raw, text), ("true", "true") | ("false", "false")),
        Primitive::Integer => match (Decimal::of_header(text), Decimal::of_json(raw)) {
            (Some(h), Some(b)) => h == b,
            _ => false,
        },
    }
}

/// A decimal number in canonical form: sign, integer digits without leading zeros,
/// fraction digits without trailing zeros; zero has no sign. Compared exactly.
#[derive(Debug, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    int: String,
    frac: String,
}

/// The longest number (digits, after applying an exponent) compared; longer ones are
/// mismatches, so a peer cannot make the comparison costly.
const MAX_DECIMAL_DIGITS: usize = 400;

impl Decimal {
    fn new(negative: bool, int: &str, frac: &str) -> Option<Decimal> {
        if int.len() + frac.len() > MAX_DECIMAL_DIGITS {
            return None;
        }
        let int = int.trim_start_matches('0').to_owned();
        let frac = frac.trim_end_matches('0').to_owned();
        let zero = int.is_empty() && frac.is_empty();
        Some(Decimal {
            negative: negative && !zero,
            int,
            frac,
        })
    }

    /// A header's plain decimal text: `-?digits(.digits)?`, nothing else (no `+`, no
    /// exponent, no hex).
    fn of_header(text: &str) -> Option<Decimal> {
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let plain = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        let ok =
            !int.is_empty() && plain(int) && plain(frac) && frac.is_empty() != digits.contains('.');
        if !ok {
            return None;
        }
        Decimal::new(negative, int, frac)
    }

    /// A JSON number as written (which may carry an exponent).
    fn of_json(raw: &str) -> Option<Decimal> {
        let (mantissa, exp) = match raw.find(['e', 'E']) {
            Some(at) => (&raw[..at], raw[at + 1..].parse::<i64>().ok()?),
            None => (raw, 0),
        };
        let plain = Decimal::of_header(mantissa)?;
        if exp == 0 {
            return Some(plain);
        }
        if exp.unsigned_abs() > MAX_DECIMAL_DIGITS as u64 {
            return None;
        }
        // Move the point `exp` places over the digits.
        let digits = format!("{}{}", plain.int, plain.frac);
        let point = i64::try_from(plain.int.len()).ok()? + exp;
        let (int, frac) = if point <= 0 {
            let zeros = "0".repeat(usize::try_from(-point).ok()?);
            (String::new(), format!("{zeros}{digits}"))
        } else {
            let point = usize::try_from(point).ok()?;
            if point >= digits.len() {
                (
                    format!("{digits}{}", "0".repeat(point - digits.len())),
                    String::new(),
                )
            } else {
                (digits[..point].to_owned(), digits[point..].to_owned())
            }
        };
        Decimal::new(plain.negative, &int, &frac)
    }
}

pub(crate) fn compare(name: &str, header: &[u8], body: &str) -> Result<(), ErrorObject> {
    if header == body.as_bytes() {
        return Ok(());
    }
    let shown = String::from_utf8_lossy(header);
    Err(mismatch(format!(
        "Header mismatch: {name} header value '{}' does not match body value '{}'",
        clipped(&shown),
        clipped(body)
    )))
}

/// A `-32020` error with this message.
pub(crate) fn mismatch(message: String) -> ErrorObject {
    ErrorObject::new(codes::HEADER_MISMATCH, message)
}

/// `data` for a refused version: `{supported, requested}`.
pub(super) fn version_data(server: &Server, requested: &str) -> Value {
    json!({"supported": server.supported_versions(), "requested": requested})
}
