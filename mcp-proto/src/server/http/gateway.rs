//! The header checks of a 2026-07-28 server as a standalone function, for proxies and
//! gateways that route or enforce policy on `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`
//! without running an MCP server: [`check_request`].
//!
//! A mirrored header is only worth trusting when the request says it speaks a version
//! whose servers must validate it: on an older `MCP-Protocol-Version` (or none) the
//! verdict is [`GatewayVerdict::Untrusted`], whatever the headers claim. Otherwise the
//! headers are compared with the body exactly as the server machine compares them
//! (decoded names, exact numbers, no header for an absent argument), and a failure is an
//! HTTP `400` with a plain-text reason ([`GatewayRejection::response`]): an intermediary
//! need not build a JSON-RPC error.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::reader::HttpRequest;
use super::response::HttpResponse;
use super::validate::{check_params, compare, method_and_name, raw_arguments, single_header};
use crate::http::headers::{MCP_PROTOCOL_VERSION, decode_header_bytes};
use crate::http::xmcp::tool_param_headers;
use crate::version::{Era, ProtocolVersion};

const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// What a gateway may do with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GatewayVerdict {
    /// The mirrored headers equal the body: route on them.
    Validated(Route),
    /// The request does not claim a version whose servers validate mirrored headers
    /// (a legacy `MCP-Protocol-Version`, an unknown one, or none; a notification or a
    /// response): its headers prove nothing. Route on the body, or pass it through.
    Untrusted,
    /// Answer with this rejection instead of forwarding.
    Rejected(GatewayRejection),
}

/// What the validated headers say.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Route {
    /// The method (`Mcp-Method`).
    pub method: String,
    /// The decoded `Mcp-Name`, for `tools/call`, `prompts/get`, `resources/read` and
    /// `tasks/get`, `tasks/update`, `tasks/cancel`.
    pub name: Option<String>,
    /// The decoded `Mcp-Param-*` headers the tool declares and the request carries, as
    /// (header name, value); empty when the tool's schema was not given.
    pub params: Vec<(String, String)>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GatewayRejection {
    /// The HTTP status to answer with (`400`, or `405` for another method than POST).
    pub status: u16,
    /// What was wrong, for people.
    pub reason: String,
}

impl GatewayRejection {
    fn bad(reason: impl Into<String>) -> Self {
        GatewayRejection {
            status: 400,
            reason: reason.into(),
        }
    }

    /// The HTTP answer: the status, with the reason as a plain-text body.
    #[must_use]
    pub fn response(&self) -> HttpResponse {
        let mut response =
            HttpResponse::new(self.status).with_header("Content-Type", "text/plain; charset=utf-8");
        if self.status == 405 {
            response = response.with_header("Allow", "POST");
        }
        response.body = self.reason.clone().into_bytes();
        response
    }
}

/// Checks the mirrored headers of `request` against its body, as a 2026-07-28 server
/// would. `input_schema` gives the `inputSchema` of a tool by name, as the gateway
/// learned it from `tools/list` (`None`: the `Mcp-Param-*` headers of that tool are not
/// checked, and not reported).
///
/// ```
/// use mcp_proto::server::http::HttpRequest;
/// use mcp_proto::server::http::gateway::{GatewayVerdict, check_request};
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {
///     "region": {"type": "string", "x-mcp-header": "Region"}}});
/// let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
///     "name": "run", "arguments": {"region": "eu"},
///     "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
///               "io.modelcontextprotocol/clientCapabilities": {}}}});
/// let request = |region: &str| {
///     HttpRequest::new("POST", "/mcp")
///         .with_header("MCP-Protocol-Version", "2026-07-28")
///         .with_header("Mcp-Method", "tools/call")
///         .with_header("Mcp-Name", "run")
///         .with_header("Mcp-Param-Region", region)
///         .with_body(body.to_string())
/// };
/// let lookup = |tool: &str| (tool == "run").then_some(&schema);
/// match check_request(&request("eu"), lookup) {
///     GatewayVerdict::Validated(route) => {
///         assert_eq!(route.params, [("Mcp-Param-Region".to_owned(), "eu".to_owned())]);
///     }
///     other => panic!("{other:?}"),
/// }
/// // A header that lies about the body is refused with a plain 400.
/// let GatewayVerdict::Rejected(why) = check_request(&request("us"), lookup) else {
///     panic!()
/// };
/// assert_eq!(why.response().status, 400);
/// ```
pub fn check_request<'s>(
    request: &HttpRequest,
    input_schema: impl FnOnce(&str) -> Option<&'s Value>,
) -> GatewayVerdict {
    match check(request, input_schema) {
        Ok(Some(route)) => GatewayVerdict::Validated(route),
        Ok(None) => GatewayVerdict::Untrusted,
        Err(rejection) => GatewayVerdict::Rejected(rejection),
    }
}

fn check<'s>(
    request: &HttpRequest,
    input_schema: impl FnOnce(&str) -> Option<&'s Value>,
) -> Result<Option<Route>, GatewayRejection> {
    let reason = |e: crate::jsonrpc::ErrorObject| GatewayRejection::bad(e.message);
    // Notifications and responses carry nothing to route on, and the server checks no
    // header on them: pass them through, whatever their headers say.
    let body = read_body(&request.body);
    if let Some(b) = &body
        && (b.method.is_none() || b.id.is_none())
    {
        return Ok(None);
    }
    // The version first: headers of an older protocol earn no trust.
    let Some(header_version) = single_header(request, MCP_PROTOCOL_VERSION).map_err(reason)? else {
        return Ok(None);
    };
    let modern = std::str::from_utf8(header_version)
        .ok()
        .and_then(ProtocolVersion::parse)
        .is_some_and(|v| v.era() == Era::Modern);
    if !modern {
        return Ok(None);
    }
    if request.method() != "POST" {
        return Err(GatewayRejection {
            status: 405,
            reason: format!(
                "{} is not served: a 2026-07-28 endpoint takes POST",
                request.method()
            ),
        });
    }
    let body = body.ok_or_else(|| GatewayRejection::bad("the body is not JSON"))?;
    let Some(method) = body.method.and_then(string) else {
        return Err(GatewayRejection::bad("the body is not a JSON-RPC request"));
    };
    let method = method.as_str();
    let params = body
        .params
        .map(|p| read_members(p, &["_meta", "name", "uri", "taskId"]));
    let body_version = params
        .as_ref()
        .and_then(|p| p.value("_meta"))
        .and_then(|m| read_members(m, &[PROTOCOL_VERSION]).value(PROTOCOL_VERSION))
        .and_then(string)
        .ok_or_else(|| {
            GatewayRejection::bad(format!("the body carries no `_meta` `{PROTOCOL_VERSION}`"))
        })?;
    compare(MCP_PROTOCOL_VERSION, header_version, &body_version).map_err(reason)?;
    let body_name = crate::http::headers::mcp_name_source(method)
        .and_then(|field| params.as_ref().and_then(|p| p.value(field)))
        .and_then(string);
    let body_name = body_name.as_deref();
    let name = (method_and_name(request, method, body_name).map_err(reason)?).map(Cow::into_owned);
    let mut route = Route {
        method: method.to_owned(),
        name,
        params: Vec::new(),
    };
    if method != "tools/call" {
        return Ok(Some(route));
    }
    let Some(schema) = body_name.and_then(input_schema) else {
        return Ok(Some(route));
    };
    let declared = tool_param_headers(schema).map_err(|e| {
        GatewayRejection::bad(format!(
            "the tool's x-mcp-header annotations are invalid: {e}"
        ))
    })?;
    check_params(&declared, raw_arguments(&request.body), |name| {
        single_header(request, name)
    })
    .map_err(reason)?;
    for decl in declared {
        let name = decl.header_name();
        if let Ok(Some(raw)) = single_header(request, &name)
            && let Ok(value) = decode_header_bytes(raw)
        {
            route.params.push((name, value));
        }
    }
    Ok(Some(route))
}

/// What the gateway reads of a body: the text of its `id`, `method` and `params`,
/// borrowed (a parsed body would take a hundred times its text, for a routing
/// decision). `None` for text that is not JSON; a JSON value that is not an object reads
/// as one without members.
fn read_body(body: &[u8]) -> Option<Envelope<'_>> {
    let text = std::str::from_utf8(body).ok()?;
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text).ok()
    } else {
        serde_json::from_str::<IgnoredAny>(text).ok()?;
        Some(Envelope::default())
    }
}

/// The members of a JSON-RPC message the gateway looks at.
#[derive(Default, Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "crate::jsonrpc::present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::jsonrpc::present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "crate::jsonrpc::present")]
    params: Option<&'a RawValue>,
}

/// The text of a JSON string, unescaped; `None` for any other value.
fn string(raw: &RawValue) -> Option<String> {
    serde_json::from_str(raw.get()).ok()
}

/// Some members of a JSON object, by name, as their text: the last of each name, as a
/// server reading the object keeps (nothing when the text is not an object).
struct Members<'a> {
    found: Vec<(&'static str, &'a RawValue)>,
}

impl<'a> Members<'a> {
    /// The text of member `name`, when it was asked for and is there.
    fn value(&self, name: &str) -> Option<&'a RawValue> {
        (self.found.iter().rev())
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

/// Reads the members named in `wanted` out of the object `raw`, skipping the others
/// without keeping them.
fn read_members<'a>(raw: &'a RawValue, wanted: &[&'static str]) -> Members<'a> {
    struct Reader<'w>(&'w [&'static str]);
    impl<'de, 'w> DeserializeSeed<'de> for Reader<'w> {
        type Value = Vec<(&'static str, &'de RawValue)>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de, 'w> Visitor<'de> for Reader<'w> {
        type Value = Vec<(&'static str, &'de RawValue)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = Vec::new();
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                match self.0.iter().find(|w| **w == key) {
                    // Each name kept once, its last value: a repeated member costs
                    // nothing more.
                    Some(name) => {
                        let value = map.next_value::<&'de RawValue>()?;
                        found.retain(|(n, _): &(&str, _)| n != name);
                        found.push((*name, value));
                    }
                    None => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let found = Reader(wanted).deserialize(&mut de).unwrap_or_default();
    Members { found }
}
