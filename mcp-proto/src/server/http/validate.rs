//! The checks the endpoint makes before the server machine sees a message: `Origin`, and
//! the 2026-07-28 request headers against the body (spec section 5.5).

use serde_json::{Map, Value, json};

use crate::http::headers::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, decode_header_bytes};
use crate::http::xmcp::{Primitive, tool_param_headers};
use crate::jsonrpc::{ErrorObject, codes};
use crate::version::{Era, ProtocolVersion};

use super::super::Server;
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

/// The one value of header `name`: `None` when absent, `-32020` when it appears several
/// times with different values.
pub(super) fn single_header<'a>(
    http: &'a HttpRequest,
    name: &str,
) -> Result<Option<&'a [u8]>, ErrorObject> {
    let mut values = http
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_slice());
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
    let Some(header_method) = single_header(http, MCP_METHOD)? else {
        return Err(mismatch(format!(
            "Header mismatch: missing {MCP_METHOD} header"
        )));
    };
    compare(MCP_METHOD, header_method, method)?;
    let name_field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return Ok(()),
    };
    let Some(raw_name) = single_header(http, MCP_NAME)? else {
        return Err(mismatch(format!(
            "Header mismatch: missing {MCP_NAME} header for {method}"
        )));
    };
    let name = decode_header_bytes(raw_name).map_err(|e| {
        mismatch(format!(
            "Header mismatch: {MCP_NAME} header is invalid: {e}"
        ))
    })?;
    // A body without the member is the machine's -32602.
    if let Some(body_name) = params.get(name_field).and_then(Value::as_str)
        && name != body_name
    {
        return Err(mismatch(format!(
            "Header mismatch: {MCP_NAME} header value '{name}' does not match body value '{body_name}'"
        )));
    }
    if method == "tools/call" {
        param_checks(server, params, http)?;
    }
    Ok(())
}

/// `Mcp-Param-*` for a `tools/call` of a tool with `x-mcp-header` annotations: each
/// argument present and not null must come with its header, equal after decoding
/// (integers compared numerically when the header is plain decimal). A tool whose
/// annotations are invalid is not checked (clients leave it out over HTTP).
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
    let Ok(declared) = tool_param_headers(&tool.input_schema) else {
        return Ok(());
    };
    let arguments = params.get("arguments").unwrap_or(&Value::Null);
    for decl in declared {
        let value = decl
            .path
            .iter()
            .try_fold(arguments, |v, key| v.get(key.as_str()));
        let Some(value) = value.filter(|v| !v.is_null()) else {
            continue;
        };
        let header = decl.header_name();
        let Some(raw) = single_header(http, &header)? else {
            return Err(mismatch(format!(
                "Header mismatch: missing {header} header for argument `{}`",
                decl.path.join(".")
            )));
        };
        let text = decode_header_bytes(raw)
            .map_err(|e| mismatch(format!("Header mismatch: {header} header is invalid: {e}")))?;
        if !param_matches(decl.kind, value, &text) {
            return Err(mismatch(format!(
                "Header mismatch: {header} header value '{text}' does not match body value {value}"
            )));
        }
    }
    Ok(())
}

/// Whether a decoded `Mcp-Param-*` value stands for `body`.
fn param_matches(kind: Primitive, body: &Value, text: &str) -> bool {
    match (kind, body) {
        (Primitive::String, Value::String(s)) => s == text,
        (Primitive::Boolean, Value::Bool(b)) => text == if *b { "true" } else { "false" },
        (Primitive::Integer, Value::Number(n)) => {
            // Only plain decimal text takes part: `0x2a`, `4.2e1` and `+42` do not match.
            let digits = text.strip_prefix('-').unwrap_or(text);
            let (int, frac) = digits.split_once('.').unwrap_or((digits, "0"));
            let plain = !int.is_empty()
                && !frac.is_empty()
                && int.bytes().all(|b| b.is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit());
            if !plain {
                return false;
            }
            match (text.parse::<i64>(), n.as_i64()) {
                (Ok(h), Some(b)) => h == b,
                _ => text.parse::<f64>().ok() == n.as_f64(),
            }
        }
        _ => false,
    }
}

/// `-32020` unless the header value equals `body` exactly (values are case-sensitive).
fn compare(name: &str, header: &[u8], body: &str) -> Result<(), ErrorObject> {
    if header == body.as_bytes() {
        return Ok(());
    }
    let shown = String::from_utf8_lossy(header);
    Err(mismatch(format!(
        "Header mismatch: {name} header value '{shown}' does not match body value '{body}'"
    )))
}

/// A `-32020` error with this message.
fn mismatch(message: String) -> ErrorObject {
    ErrorObject::new(codes::HEADER_MISMATCH, message)
}

/// `data` for a refused version: `{supported, requested}`.
pub(super) fn version_data(server: &Server, requested: &str) -> Value {
    json!({"supported": server.supported_versions(), "requested": requested})
}
