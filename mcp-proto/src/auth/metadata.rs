//! Discovery documents: protected resource metadata (RFC 9728), authorization server
//! metadata (RFC 8414 and OpenID Connect Discovery 1.0), and the well-known URLs to
//! fetch them from.
//!
//! Parsing is strict about what the flow uses and lenient about the rest: unknown fields
//! are ignored, a field with the wrong type is an error naming it, a JSON `null` is the
//! same as an absent field, and a field that appears twice makes the document malformed
//! (JSON parsers disagree about which copy wins). Bounds: the body at most
//! [`MAX_BODY_BYTES`], strings at most [`MAX_STRING_BYTES`], arrays at most
//! [`MAX_ARRAY_ENTRIES`] entries.
//!
//! Identifiers (`resource`, `authorization_servers` entries, `issuer`) are kept as the
//! raw strings sent, to be compared byte for byte; URLs are only parsed to vet them
//! (with [`EndpointUrl::parse`], insecure remotes allowed: the URL policy is the flow's
//! to apply) and to build the URLs this module returns.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use crate::http::{EndpointUrl, UrlError};

/// Largest metadata (or token endpoint) body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Longest string field accepted, in bytes.
pub const MAX_STRING_BYTES: usize = 8 * 1024;

/// Most entries in an array field.
pub const MAX_ARRAY_ENTRIES: usize = 256;

/// Why a metadata document, or an identifier, was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// The body is longer than [`MAX_BODY_BYTES`].
    #[error("metadata body longer than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// The body is not JSON.
    #[error("metadata is not valid JSON: {detail}")]
    InvalidJson {
        /// The JSON parser's message.
        detail: String,
    },
    /// The body is JSON but not an object.
    #[error("metadata is not a JSON object")]
    NotAnObject,
    /// A member name that appears more than once.
    #[error("field `{field}` appears more than once")]
    DuplicateField {
        /// The name (clipped to 64 bytes).
        field: String,
    },
    /// A required field is absent (or `null`).
    #[error("required field `{field}` is missing")]
    MissingField {
        /// The field.
        field: &'static str,
    },
    /// A field of the wrong JSON type.
    #[error("field `{field}` is not {expected}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// What it should be.
        expected: &'static str,
    },
    /// A string (or an array's string) longer than [`MAX_STRING_BYTES`].
    #[error("field `{field}` holds a string longer than {limit} bytes")]
    TooLong {
        /// The field.
        field: &'static str,
        /// The limit.
        limit: usize,
    },
    /// An array with more than [`MAX_ARRAY_ENTRIES`] entries.
    #[error("field `{field}` has more than {limit} entries")]
    TooManyEntries {
        /// The field.
        field: &'static str,
        /// The limit.
        limit: usize,
    },
    /// An array that must not be empty is.
    #[error("field `{field}` is an empty array")]
    EmptyArray {
        /// The field.
        field: &'static str,
    },
    /// A `#` in an identifier that may not have a fragment (`resource`).
    #[error("field `{field}` contains a fragment ('#')")]
    Fragment {
        /// The field.
        field: &'static str,
    },
    /// A URL field that [`EndpointUrl::parse`] refuses (a `javascript:` URL, say).
    #[error("field `{field}` is not an acceptable http(s) URL: {source}")]
    InvalidUrl {
        /// The field, with the index for an array entry (`authorization_servers[1]`).
        field: String,
        /// Why the URL was refused.
        source: UrlError,
    },
    /// An issuer identifier with a query (RFC 8414 §2 forbids it).
    #[error("field `{field}` is an issuer identifier with a query")]
    IssuerWithQuery {
        /// The field, with the index for an array entry; `issuer` for
        /// [`server_metadata_urls`].
        field: String,
    },
    /// An issuer identifier whose path has an empty segment (`//`): a metadata URL built
    /// from it would start its path with `//`, which servers and proxies read as an
    /// authority.
    #[error("field `{field}` is an issuer identifier with an empty path segment")]
    IssuerWithEmptySegment {
        /// The field, with the index for an array entry; `issuer` for
        /// [`server_metadata_urls`].
        field: String,
    },
}

/// Protected resource metadata (RFC 9728 §2), the fields the client uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// `resource`: the protected resource's identifier, verbatim (no `#`).
    pub resource: String,
    /// `authorization_servers`: issuer identifiers, verbatim, at least one; each parses
    /// as an http(s) URL without a query.
    pub authorization_servers: Vec<String>,
    /// `scopes_supported`, if present.
    pub scopes_supported: Option<Vec<String>>,
}

/// Parses a protected resource metadata document.
///
/// ```
/// use mcp_proto::auth::metadata::parse_resource_metadata;
/// let prm = parse_resource_metadata(br#"{"resource":"http://localhost:3000/mcp",
///     "authorization_servers":["http://localhost:3001"]}"#).unwrap();
/// assert_eq!(prm.authorization_servers, ["http://localhost:3001"]);
/// ```
///
/// # Errors
///
/// A [`MetadataError`] naming the field (or the body problem).
pub fn parse_resource_metadata(body: &[u8]) -> Result<ResourceMetadata, MetadataError> {
    let obj = JsonObject::parse(body).map_err(MetadataError::from)?;
    let resource = required_string(&obj, "resource")?;
    if resource.contains('#') {
        return Err(MetadataError::Fragment { field: "resource" });
    }
    let field = "authorization_servers";
    let authorization_servers = obj
        .string_array(field)
        .map_err(|e| e.into_metadata(field))?
        .ok_or(MetadataError::MissingField { field })?;
    if authorization_servers.is_empty() {
        return Err(MetadataError::EmptyArray { field });
    }
    for (i, server) in authorization_servers.iter().enumerate() {
        check_issuer(server, || format!("{field}[{i}]"))?;
    }
    let scopes_supported = string_array(&obj, "scopes_supported")?;
    Ok(ResourceMetadata {
        resource: resource.to_owned(),
        authorization_servers,
        scopes_supported,
    })
}

/// Authorization server metadata (RFC 8414 §2, OpenID Connect Discovery 1.0 §3), the
/// fields the client uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerMetadata {
    /// `issuer`, verbatim: compare it byte for byte with the issuer the metadata URL was
    /// built from.
    pub issuer: String,
    /// `authorization_endpoint`; optional here because the `client_credentials` grant
    /// does not use it (the authorization-code flow must require it).
    pub authorization_endpoint: Option<String>,
    /// `token_endpoint`.
    pub token_endpoint: String,
    /// `registration_endpoint` (RFC 7591 dynamic client registration).
    pub registration_endpoint: Option<String>,
    /// `revocation_endpoint` (RFC 7009).
    pub revocation_endpoint: Option<String>,
    /// `scopes_supported`.
    pub scopes_supported: Option<Vec<String>>,
    /// `response_types_supported`.
    pub response_types_supported: Option<Vec<String>>,
    /// `grant_types_supported`.
    pub grant_types_supported: Option<Vec<String>>,
    /// `code_challenge_methods_supported` (PKCE methods).
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// `token_endpoint_auth_methods_supported` (absent means `client_secret_basic`).
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// `client_id_metadata_document_supported`: only a JSON `true` counts.
    pub client_id_metadata_document_supported: bool,
    /// `authorization_response_iss_parameter_supported` (RFC 9207): only a JSON `true`
    /// counts.
    pub authorization_response_iss_parameter_supported: bool,
    /// `dpop_signing_alg_values_supported` (RFC 9449).
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// Parses an authorization server metadata document. `issuer` and the endpoints must
/// parse as http(s) URLs (the issuer without a query); whether they are acceptable (https,
/// loopback) is for the flow to decide.
///
/// ```
/// use mcp_proto::auth::metadata::parse_server_metadata;
/// let m = parse_server_metadata(br#"{"issuer":"http://localhost:3001",
///     "authorization_endpoint":"http://localhost:3001/authorize",
///     "token_endpoint":"http://localhost:3001/token",
///     "code_challenge_methods_supported":["S256"],
///     "client_id_metadata_document_supported":"true"}"#).unwrap();
/// assert_eq!(m.issuer, "http://localhost:3001");
/// assert!(!m.client_id_metadata_document_supported);
/// ```
///
/// # Errors
///
/// A [`MetadataError`] naming the field (or the body problem).
pub fn parse_server_metadata(body: &[u8]) -> Result<ServerMetadata, MetadataError> {
    let obj = JsonObject::parse(body).map_err(MetadataError::from)?;
    let issuer = required_string(&obj, "issuer")?;
    check_issuer(issuer, || "issuer".to_owned())?;
    let token_endpoint = required_string(&obj, "token_endpoint")?;
    check_url(token_endpoint, "token_endpoint")?;
    let endpoint = |field: &'static str| -> Result<Option<String>, MetadataError> {
        let value = optional_string(&obj, field)?;
        if let Some(v) = value {
            check_url(v, field)?;
        }
        Ok(value.map(str::to_owned))
    };
    Ok(ServerMetadata {
        issuer: issuer.to_owned(),
        authorization_endpoint: endpoint("authorization_endpoint")?,
        token_endpoint: token_endpoint.to_owned(),
        registration_endpoint: endpoint("registration_endpoint")?,
        revocation_endpoint: endpoint("revocation_endpoint")?,
        scopes_supported: string_array(&obj, "scopes_supported")?,
        response_types_supported: string_array(&obj, "response_types_supported")?,
        grant_types_supported: string_array(&obj, "grant_types_supported")?,
        code_challenge_methods_supported: string_array(&obj, "code_challenge_methods_supported")?,
        token_endpoint_auth_methods_supported: string_array(
            &obj,
            "token_endpoint_auth_methods_supported",
        )?,
        client_id_metadata_document_supported: obj.is_true("client_id_metadata_document_supported"),
        authorization_response_iss_parameter_supported: obj
            .is_true("authorization_response_iss_parameter_supported"),
        dpop_signing_alg_values_supported: string_array(&obj, "dpop_signing_alg_values_supported")?,
    })
}

fn required_string<'o>(obj: &'o JsonObject, field: &'static str) -> Result<&'o str, MetadataError> {
    optional_string(obj, field)?.ok_or(MetadataError::MissingField { field })
}

fn optional_string<'o>(
    obj: &'o JsonObject,
    field: &'static str,
) -> Result<Option<&'o str>, MetadataError> {
    obj.string(field).map_err(|e| e.into_metadata(field))
}

fn string_array(
    obj: &JsonObject,
    field: &'static str,
) -> Result<Option<Vec<String>>, MetadataError> {
    obj.string_array(field).map_err(|e| e.into_metadata(field))
}

fn check_url(s: &str, field: &'static str) -> Result<EndpointUrl, MetadataError> {
    EndpointUrl::parse(s, true).map_err(|source| MetadataError::InvalidUrl {
        field: field.to_owned(),
        source,
    })
}

/// An issuer identifier: an http(s) URL without query or fragment.
fn check_issuer(s: &str, field: impl Fn() -> String) -> Result<EndpointUrl, MetadataError> {
    let url = EndpointUrl::parse(s, true).map_err(|source| MetadataError::InvalidUrl {
        field: field(),
        source,
    })?;
    if url.query().is_some() {
        return Err(MetadataError::IssuerWithQuery { field: field() });
    }
    if url.path().contains("//") {
        return Err(MetadataError::IssuerWithEmptySegment { field: field() });
    }
    Ok(url)
}

/// `p`: the path minus one trailing `/` (so `/` gives the empty string).
fn path_without_trailing_slash(url: &EndpointUrl) -> &str {
    let path = url.path();
    path.strip_suffix('/').unwrap_or(path)
}

/// Where to look for the protected resource metadata of the MCP endpoint `mcp_url`
/// when the 401 challenge names no `resource_metadata` (RFC 9728 §3.1, MCP 2025-11-25):
/// the path-inserted well-known URL (only when the path, minus one trailing `/`, is not
/// empty; the query is not part of it), then the root one.
///
/// ```
/// use mcp_proto::auth::metadata::resource_metadata_urls;
/// use mcp_proto::http::EndpointUrl;
/// let url = EndpointUrl::parse("http://localhost:3000/mcp", false).unwrap();
/// assert_eq!(resource_metadata_urls(&url), [
///     "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
///     "http://localhost:3000/.well-known/oauth-protected-resource",
/// ]);
/// ```
#[must_use]
pub fn resource_metadata_urls(mcp_url: &EndpointUrl) -> Vec<String> {
    const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
    let origin = mcp_url.origin();
    let p = path_without_trailing_slash(mcp_url);
    let mut urls = Vec::with_capacity(2);
    if !p.is_empty() {
        urls.push(format!("{origin}{WELL_KNOWN}{p}"));
    }
    urls.push(format!("{origin}{WELL_KNOWN}"));
    urls
}

/// Where to look for the metadata of the authorization server whose issuer identifier
/// is `issuer`, in the order MCP 2025-11-25 fixes: with `p` the issuer's path minus one
/// trailing `/`, RFC 8414 path insertion, OpenID Connect path insertion, OpenID Connect
/// path appending (the last two collapse into one when `p` is empty).
///
/// ```
/// use mcp_proto::auth::metadata::server_metadata_urls;
/// assert_eq!(server_metadata_urls("http://localhost:3001/tenant1").unwrap(), [
///     "http://localhost:3001/.well-known/oauth-authorization-server/tenant1",
///     "http://localhost:3001/.well-known/openid-configuration/tenant1",
///     "http://localhost:3001/tenant1/.well-known/openid-configuration",
/// ]);
/// ```
///
/// # Errors
///
/// [`MetadataError::InvalidUrl`] when `issuer` is not an http(s) URL (a fragment
/// included), [`MetadataError::IssuerWithQuery`] when it has a query,
/// [`MetadataError::IssuerWithEmptySegment`] when its path has `//`.
pub fn server_metadata_urls(issuer: &str) -> Result<Vec<String>, MetadataError> {
    const OAUTH: &str = "/.well-known/oauth-authorization-server";
    const OIDC: &str = "/.well-known/openid-configuration";
    let url = check_issuer(issuer, || "issuer".to_owned())?;
    let origin = url.origin();
    let p = path_without_trailing_slash(&url);
    Ok(if p.is_empty() {
        vec![format!("{origin}{OAUTH}"), format!("{origin}{OIDC}")]
    } else {
        vec![
            format!("{origin}{OAUTH}{p}"),
            format!("{origin}{OIDC}{p}"),
            format!("{origin}{p}{OIDC}"),
        ]
    })
}

/// The 2025-03-26 fallback, for servers without protected resource metadata: the MCP
/// server's origin is the authorization server, its metadata at the root RFC 8414 URL.
///
/// ```
/// use mcp_proto::auth::metadata::legacy_server_metadata_urls;
/// use mcp_proto::http::EndpointUrl;
/// let url = EndpointUrl::parse("https://mcp.example.com/v1/mcp", false).unwrap();
/// assert_eq!(legacy_server_metadata_urls(&url),
///            ["https://mcp.example.com/.well-known/oauth-authorization-server"]);
/// ```
#[must_use]
pub fn legacy_server_metadata_urls(mcp_url: &EndpointUrl) -> Vec<String> {
    vec![format!(
        "{}/.well-known/oauth-authorization-server",
        mcp_url.origin()
    )]
}

/// Whether the protected resource metadata's `resource` names the resource `expected`
/// (the MCP endpoint, or the URL the metadata URL was derived from).
///
/// True when the strings are byte for byte equal, or when both parse as http(s) URLs
/// with the same scheme, host and port (compared on the parsed parts, so `HTTPS://Host`
/// and an explicit default port are the same origin), `resource` has no query, and
/// `resource`'s path is a prefix of `expected`'s ending on a `/` boundary (`/` covers
/// everything; `/api` covers `/api` and `/api/mcp`, not `/apiary`; `/mcp/` does not cover
/// `/mcp`).
///
/// Why the relaxation: RFC 9728 §3.3 asks for equality with the URL the metadata URL was
/// derived from, but a server whose metadata sits at the root well-known URL publishes
/// its origin (or a base path) as `resource`, and the MCP endpoint lies under it. A
/// resource on the same origin that contains the endpoint's path names the same server,
/// so a token for it is not a token for someone else; a different scheme, host or port
/// is always refused (that is the mix-up RFC 9728 §3.3 guards against). The TypeScript
/// SDK accepts the same.
///
/// ```
/// use mcp_proto::auth::metadata::resource_matches;
/// assert!(resource_matches("http://localhost:3000/mcp", "http://localhost:3000/mcp"));
/// assert!(resource_matches("http://localhost:3000", "http://localhost:3000/mcp"));
/// assert!(!resource_matches("https://evil.example.com/mcp", "http://localhost:3000/mcp"));
/// ```
#[must_use]
pub fn resource_matches(resource: &str, expected: &str) -> bool {
    if resource == expected {
        return true;
    }
    let (Ok(r), Ok(e)) = (
        EndpointUrl::parse(resource, true),
        EndpointUrl::parse(expected, true),
    ) else {
        return false;
    };
    if r.scheme() != e.scheme() || r.host() != e.host() || r.port() != e.port() {
        return false;
    }
    if r.query().is_some() {
        return false;
    }
    let (rp, ep) = (r.path(), e.path());
    match ep.strip_prefix(rp) {
        Some(rest) => rest.is_empty() || rp.ends_with('/') || rest.starts_with('/'),
        None => false,
    }
}

/// The canonical resource URI of an MCP endpoint (RFC 8707 §2, MCP "canonical server
/// URI"): lowercase scheme and host, the port only when not the scheme's default, the
/// path without one trailing `/`, the query kept, no fragment (an [`EndpointUrl`] never
/// has one). Use it as the `resource` parameter only when there is no protected resource
/// metadata `resource` to send verbatim.
///
/// ```
/// use mcp_proto::auth::metadata::canonical_resource;
/// use mcp_proto::http::EndpointUrl;
/// let url = EndpointUrl::parse("HTTPS://MCP.Example.com:443/Server/", false).unwrap();
/// assert_eq!(canonical_resource(&url), "https://mcp.example.com/Server");
/// ```
#[must_use]
pub fn canonical_resource(mcp_url: &EndpointUrl) -> String {
    let mut out = String::from(mcp_url.origin());
    out.push_str(path_without_trailing_slash(mcp_url));
    if let Some(q) = mcp_url.query() {
        out.push('?');
        out.push_str(q);
    }
    out
}

// ---- A JSON object read once, shared with `token` ----

/// Why a body is not a usable JSON object.
#[derive(Debug)]
pub(crate) enum ObjectError {
    TooLarge,
    InvalidJson(String),
    NotAnObject,
    Duplicate(String),
}

impl From<ObjectError> for MetadataError {
    fn from(e: ObjectError) -> Self {
        match e {
            ObjectError::TooLarge => MetadataError::TooLarge {
                limit: MAX_BODY_BYTES,
            },
            ObjectError::InvalidJson(detail) => MetadataError::InvalidJson { detail },
            ObjectError::NotAnObject => MetadataError::NotAnObject,
            ObjectError::Duplicate(field) => MetadataError::DuplicateField { field },
        }
    }
}

impl fmt::Display for ObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObjectError::TooLarge => write!(f, "body longer than {MAX_BODY_BYTES} bytes"),
            ObjectError::InvalidJson(detail) => write!(f, "body is not valid JSON: {detail}"),
            ObjectError::NotAnObject => f.write_str("body is not a JSON object"),
            ObjectError::Duplicate(name) => write!(f, "field `{name}` appears more than once"),
        }
    }
}

/// Why a field's value is unusable (the caller adds the field's name).
#[derive(Debug)]
pub(crate) enum FieldError {
    WrongType(&'static str),
    TooLong,
    TooManyEntries,
}

impl FieldError {
    fn into_metadata(self, field: &'static str) -> MetadataError {
        match self {
            FieldError::WrongType(expected) => MetadataError::WrongType { field, expected },
            FieldError::TooLong => MetadataError::TooLong {
                field,
                limit: MAX_STRING_BYTES,
            },
            FieldError::TooManyEntries => MetadataError::TooManyEntries {
                field,
                limit: MAX_ARRAY_ENTRIES,
            },
        }
    }

    /// A sentence naming `field`, for [`crate::auth::token`]'s `Malformed`.
    pub(crate) fn describe(&self, field: &str) -> String {
        match self {
            FieldError::WrongType(expected) => format!("field `{field}` is not {expected}"),
            FieldError::TooLong => {
                format!("field `{field}` is longer than {MAX_STRING_BYTES} bytes")
            }
            FieldError::TooManyEntries => {
                format!("field `{field}` has more than {MAX_ARRAY_ENTRIES} entries")
            }
        }
    }
}

/// The members of a JSON object body; `null` members are dropped (same as absent).
pub(crate) struct JsonObject {
    members: BTreeMap<String, Value>,
}

/// The result of reading an object: its members and the first repeated name.
struct Members {
    members: BTreeMap<String, Value>,
    duplicate: Option<String>,
}

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = BTreeMap::new();
                let mut duplicate = None;
                while let Some(key) = map.next_key::<String>()? {
                    let value: Value = map.next_value()?;
                    match members.entry(key) {
                        Entry::Occupied(e) => {
                            duplicate.get_or_insert_with(|| e.key().clone());
                        }
                        Entry::Vacant(e) => {
                            e.insert(value);
                        }
                    }
                }
                Ok(Members { members, duplicate })
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl JsonObject {
    pub(crate) fn parse(body: &[u8]) -> Result<JsonObject, ObjectError> {
        if body.len() > MAX_BODY_BYTES {
            return Err(ObjectError::TooLarge);
        }
        let first = body.iter().find(|b| !b" \t\r\n".contains(b));
        if first != Some(&b'{') {
            // Valid JSON of another kind, or not JSON at all (an HTML error page):
            // either way not the object expected.
            return Err(match serde_json::from_slice::<de::IgnoredAny>(body) {
                Ok(_) => ObjectError::NotAnObject,
                Err(e) => ObjectError::InvalidJson(e.to_string()),
            });
        }
        // Within the size bound already; nested no deeper than a message may be, and no
        // member named as the parser reserves (it would parse a string as JSON, deeper).
        let depth = crate::Limits::DEFAULT_MAX_NESTING_DEPTH;
        crate::jsonrpc::check_untrusted_json(body, depth, usize::MAX)
            .map_err(|e| ObjectError::InvalidJson(e.to_string()))?;
        let parsed: Members =
            serde_json::from_slice(body).map_err(|e| ObjectError::InvalidJson(e.to_string()))?;
        if let Some(name) = parsed.duplicate {
            return Err(ObjectError::Duplicate(clip(&name, 64).to_owned()));
        }
        let mut members = parsed.members;
        members.retain(|_, v| !v.is_null());
        Ok(JsonObject { members })
    }

    pub(crate) fn get(&self, field: &str) -> Option<&Value> {
        self.members.get(field)
    }

    pub(crate) fn string(&self, field: &str) -> Result<Option<&str>, FieldError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) if s.len() > MAX_STRING_BYTES => Err(FieldError::TooLong),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(FieldError::WrongType("a string")),
        }
    }

    pub(crate) fn string_array(&self, field: &str) -> Result<Option<Vec<String>>, FieldError> {
        let Some(value) = self.get(field) else {
            return Ok(None);
        };
        let Value::Array(items) = value else {
            return Err(FieldError::WrongType("an array of strings"));
        };
        if items.len() > MAX_ARRAY_ENTRIES {
            return Err(FieldError::TooManyEntries);
        }
        items
            .iter()
            .map(|item| match item {
                Value::String(s) if s.len() > MAX_STRING_BYTES => Err(FieldError::TooLong),
                Value::String(s) => Ok(s.clone()),
                _ => Err(FieldError::WrongType("an array of strings")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// Whether the member is JSON `true` (a string `"true"` is not).
    pub(crate) fn is_true(&self, field: &str) -> bool {
        matches!(self.get(field), Some(Value::Bool(true)))
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub(crate) fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An authorization server's document naming a member as the JSON parser reserves
    /// (its string would be parsed as JSON, nested past any depth checked) is not JSON
    /// the client reads.
    #[test]
    fn a_member_named_as_the_parser_reserves_is_refused() {
        let body = br#"{"issuer":{"$serde_json::private::RawValue":"\"x\""}}"#;
        match JsonObject::parse(body) {
            Err(ObjectError::InvalidJson(why)) => assert!(why.contains("reserves"), "{why}"),
            Err(other) => panic!("{other}"),
            Ok(o) => panic!("read: {:?}", o.get("issuer")),
        }
    }

    fn url(s: &str) -> EndpointUrl {
        EndpointUrl::parse(s, true).unwrap()
    }

    const AS_META: &str = r#"{
        "issuer": "http://localhost:3001",
        "authorization_endpoint": "http://localhost:3001/authorize",
        "token_endpoint": "http://localhost:3001/token",
        "registration_endpoint": "http://localhost:3001/register",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true,
        "x-unknown": {"nested": [1, 2, {"deep": null}]}
    }"#;

    #[test]
    fn conformance_resource_metadata() {
        let body = br#"{"resource":"http://localhost:3000/mcp","authorization_servers":["http://localhost:3001"],"bearer_methods_supported":["header"]}"#;
        let prm = parse_resource_metadata(body).unwrap();
        assert_eq!(
            prm,
            ResourceMetadata {
                resource: "http://localhost:3000/mcp".into(),
                authorization_servers: vec!["http://localhost:3001".into()],
                scopes_supported: None,
            }
        );
        assert!(resource_matches(&prm.resource, "http://localhost:3000/mcp"));
        let with_scopes = br#"{"resource":"http://localhost:3000","authorization_servers":["http://localhost:3001/tenant1","https://as2.example/"],"scopes_supported":["mcp:basic","mcp:read","mcp:write"]}"#;
        let prm = parse_resource_metadata(with_scopes).unwrap();
        assert_eq!(prm.authorization_servers[1], "https://as2.example/");
        assert_eq!(
            prm.scopes_supported.unwrap(),
            ["mcp:basic", "mcp:read", "mcp:write"]
        );
    }

    #[test]
    fn resource_metadata_negative() {
        use MetadataError as E;
        let cases: &[(&str, E)] = &[
            ("[]", E::NotAnObject),
            ("\"x\"", E::NotAnObject),
            (
                r#"{"authorization_servers":["https://a"]}"#,
                E::MissingField { field: "resource" },
            ),
            (
                r#"{"resource":null,"authorization_servers":["https://a"]}"#,
                E::MissingField { field: "resource" },
            ),
            (
                r#"{"resource":1,"authorization_servers":["https://a"]}"#,
                E::WrongType {
                    field: "resource",
                    expected: "a string",
                },
            ),
            (
                r#"{"resource":"https://r/mcp#x","authorization_servers":["https://a"]}"#,
                E::Fragment { field: "resource" },
            ),
            (
                r#"{"resource":"https://r/mcp"}"#,
                E::MissingField {
                    field: "authorization_servers",
                },
            ),
            (
                r#"{"resource":"https://r/mcp","authorization_servers":[]}"#,
                E::EmptyArray {
                    field: "authorization_servers",
                },
            ),
            (
                r#"{"resource":"https://r/mcp","authorization_servers":"https://a"}"#,
                E::WrongType {
                    field: "authorization_servers",
                    expected: "an array of strings",
                },
            ),
            (
                r#"{"resource":"https://r/mcp","authorization_servers":["https://a",7]}"#,
                E::WrongType {
                    field: "authorization_servers",
                    expected: "an array of strings",
                },
            ),
            (
                r#"{"resource":"https://r/mcp","authorization_servers":["https://a","javascript:alert(1)"]}"#,
                E::InvalidUrl {
                    field: "authorization_servers[1]".into(),
                    source: UrlError::UnsupportedScheme,
                },
            ),
            (
                r#"{"resource":"https://r/mcp","authorization_servers":["https://a/#f"]}"#,
                E::InvalidUrl {
                    field: "authorization_servers[0]".into(),
                    source: UrlError::Fragment,
                },
            ),
            (
                r#"{"resource":"https://r/mcp","authorization_servers":["https://user@a/"]}"#,
                E::InvalidUrl {
                    field: "authorization_servers[0]".into(),
                    source: UrlError::UserInfo,
                },
            ),
            (
                r#"{"resource":"https://r/mcp","authorization_servers":["https://a/?t=1"]}"#,
                E::IssuerWithQuery {
                    field: "authorization_servers[0]".into(),
                },
            ),
            (
                r#"{"resource":"https://r/mcp","authorization_servers":["https://a"],"scopes_supported":"a b"}"#,
                E::WrongType {
                    field: "scopes_supported",
                    expected: "an array of strings",
                },
            ),
            (
                r#"{"resource":"https://r/mcp","resource":"https://evil/mcp","authorization_servers":["https://a"]}"#,
                E::DuplicateField {
                    field: "resource".into(),
                },
            ),
        ];
        for (body, want) in cases {
            assert_eq!(
                parse_resource_metadata(body.as_bytes()).as_ref(),
                Err(want),
                "{body}"
            );
        }
        // Plain http to a remote host passes here: the policy is the flow's.
        assert!(
            parse_resource_metadata(
                br#"{"resource":"https://r/mcp","authorization_servers":["http://as.example"]}"#
            )
            .is_ok()
        );
        for body in [&b"<html>nope</html>"[..], b"", b"{\"resource\":", b"{} x"] {
            assert!(
                matches!(parse_resource_metadata(body), Err(E::InvalidJson { .. })),
                "{body:?}"
            );
        }
        // Messages name the field.
        let msg =
            parse_resource_metadata(br#"{"resource":"x","authorization_servers":["data:x"]}"#)
                .unwrap_err()
                .to_string();
        assert!(msg.contains("authorization_servers[0]"), "{msg}");
    }

    #[test]
    fn bounds() {
        use MetadataError as E;
        let big = vec![b' '; MAX_BODY_BYTES + 1];
        assert_eq!(
            parse_resource_metadata(&big),
            Err(E::TooLarge {
                limit: MAX_BODY_BYTES
            })
        );
        let long = format!(
            r#"{{"resource":"{}","authorization_servers":["https://a"]}}"#,
            "r".repeat(MAX_STRING_BYTES + 1)
        );
        assert_eq!(
            parse_resource_metadata(long.as_bytes()),
            Err(E::TooLong {
                field: "resource",
                limit: MAX_STRING_BYTES
            })
        );
        let many = format!(
            r#"{{"resource":"r","authorization_servers":[{}]}}"#,
            vec![r#""https://a""#; MAX_ARRAY_ENTRIES + 1].join(",")
        );
        assert_eq!(
            parse_resource_metadata(many.as_bytes()),
            Err(E::TooManyEntries {
                field: "authorization_servers",
                limit: MAX_ARRAY_ENTRIES
            })
        );
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(1000), "]".repeat(1000));
        assert!(matches!(
            parse_resource_metadata(deep.as_bytes()),
            Err(E::InvalidJson { .. })
        ));
    }

    #[test]
    fn conformance_server_metadata() {
        let m = parse_server_metadata(AS_META.as_bytes()).unwrap();
        assert_eq!(m.issuer, "http://localhost:3001");
        assert_eq!(
            m.authorization_endpoint.as_deref(),
            Some("http://localhost:3001/authorize")
        );
        assert_eq!(m.token_endpoint, "http://localhost:3001/token");
        assert_eq!(
            m.registration_endpoint.as_deref(),
            Some("http://localhost:3001/register")
        );
        assert_eq!(m.revocation_endpoint, None);
        assert_eq!(m.code_challenge_methods_supported.unwrap(), ["S256"]);
        assert_eq!(m.token_endpoint_auth_methods_supported.unwrap(), ["none"]);
        assert!(m.authorization_response_iss_parameter_supported);
        assert!(!m.client_id_metadata_document_supported);
        assert_eq!(m.scopes_supported, None);
    }

    #[test]
    fn server_metadata_flags_only_true_counts() {
        for (value, want) in [
            ("true", true),
            ("false", false),
            ("\"true\"", false),
            ("1", false),
            ("null", false),
            ("{}", false),
        ] {
            let body = format!(
                r#"{{"issuer":"https://a","token_endpoint":"https://a/t","client_id_metadata_document_supported":{value},"authorization_response_iss_parameter_supported":{value}}}"#
            );
            let m = parse_server_metadata(body.as_bytes()).unwrap();
            assert_eq!(m.client_id_metadata_document_supported, want, "{value}");
            assert_eq!(
                m.authorization_response_iss_parameter_supported, want,
                "{value}"
            );
        }
    }

    #[test]
    fn server_metadata_negative() {
        use MetadataError as E;
        let base = |extra: &str| {
            format!(r#"{{"issuer":"https://a","token_endpoint":"https://a/t"{extra}}}"#)
        };
        assert!(parse_server_metadata(base("").as_bytes()).is_ok());
        for (scheme, field) in [
            ("javascript:alert(1)", "authorization_endpoint"),
            ("data:text/html,x", "token_endpoint"),
            ("file:///etc/passwd", "registration_endpoint"),
            ("vbscript:x", "revocation_endpoint"),
        ] {
            let body = if field == "token_endpoint" {
                format!(r#"{{"issuer":"https://a","token_endpoint":"{scheme}"}}"#)
            } else {
                base(&format!(r#","{field}":"{scheme}""#))
            };
            assert_eq!(
                parse_server_metadata(body.as_bytes()),
                Err(E::InvalidUrl {
                    field: field.into(),
                    source: UrlError::UnsupportedScheme
                }),
                "{body}"
            );
            let msg = parse_server_metadata(body.as_bytes())
                .unwrap_err()
                .to_string();
            assert!(msg.contains(field), "{msg}");
        }
        let cases: &[(String, E)] = &[
            (
                r#"{"token_endpoint":"https://a/t"}"#.into(),
                E::MissingField { field: "issuer" },
            ),
            (
                r#"{"issuer":"https://a"}"#.into(),
                E::MissingField {
                    field: "token_endpoint",
                },
            ),
            (
                r#"{"issuer":"https://a?x=1","token_endpoint":"https://a/t"}"#.into(),
                E::IssuerWithQuery {
                    field: "issuer".into(),
                },
            ),
            (
                r#"{"issuer":"https://a#x","token_endpoint":"https://a/t"}"#.into(),
                E::InvalidUrl {
                    field: "issuer".into(),
                    source: UrlError::Fragment,
                },
            ),
            (
                base(r#","authorization_endpoint":"https://user@a/authorize""#),
                E::InvalidUrl {
                    field: "authorization_endpoint".into(),
                    source: UrlError::UserInfo,
                },
            ),
            (
                base(r#","code_challenge_methods_supported":"S256""#),
                E::WrongType {
                    field: "code_challenge_methods_supported",
                    expected: "an array of strings",
                },
            ),
            (
                base(r#","response_types_supported":[["code"]]"#),
                E::WrongType {
                    field: "response_types_supported",
                    expected: "an array of strings",
                },
            ),
            (
                base(r#","token_endpoint":"https://evil/t""#),
                E::DuplicateField {
                    field: "token_endpoint".into(),
                },
            ),
            (
                base(r#","authorization_endpoint":5"#),
                E::WrongType {
                    field: "authorization_endpoint",
                    expected: "a string",
                },
            ),
        ];
        for (body, want) in cases {
            assert_eq!(
                parse_server_metadata(body.as_bytes()).as_ref(),
                Err(want),
                "{body}"
            );
        }
        // Empty arrays are kept as such: whether `[]` is acceptable is the flow's call.
        let m = parse_server_metadata(base(r#","code_challenge_methods_supported":[]"#).as_bytes())
            .unwrap();
        assert_eq!(m.code_challenge_methods_supported, Some(vec![]));
    }

    #[test]
    fn resource_metadata_url_candidates() {
        let root = "http://localhost:3000/.well-known/oauth-protected-resource";
        for (mcp, want) in [
            (
                "http://localhost:3000/mcp",
                vec![format!("{root}/mcp"), root.to_owned()],
            ),
            (
                "http://localhost:3000/mcp/",
                vec![format!("{root}/mcp"), root.to_owned()],
            ),
            (
                "http://localhost:3000/mcp?tenant=a",
                vec![format!("{root}/mcp"), root.to_owned()],
            ),
            (
                "http://LOCALHOST:3000/a/b",
                vec![format!("{root}/a/b"), root.to_owned()],
            ),
            ("http://localhost:3000", vec![root.to_owned()]),
            ("http://localhost:3000/", vec![root.to_owned()]),
            ("http://localhost:3000/?x=1", vec![root.to_owned()]),
        ] {
            assert_eq!(resource_metadata_urls(&url(mcp)), want, "{mcp}");
        }
        assert_eq!(
            resource_metadata_urls(&url("https://Example.com:443/mcp")),
            [
                "https://example.com/.well-known/oauth-protected-resource/mcp",
                "https://example.com/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            resource_metadata_urls(&url("http://[::1]:8080/")),
            ["http://[::1]:8080/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_metadata_url_candidates() {
        assert_eq!(
            server_metadata_urls("http://localhost:3001").unwrap(),
            [
                "http://localhost:3001/.well-known/oauth-authorization-server",
                "http://localhost:3001/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            server_metadata_urls("http://localhost:3001/").unwrap(),
            server_metadata_urls("http://localhost:3001").unwrap()
        );
        let tenant = [
            "http://localhost:3001/.well-known/oauth-authorization-server/tenant1",
            "http://localhost:3001/.well-known/openid-configuration/tenant1",
            "http://localhost:3001/tenant1/.well-known/openid-configuration",
        ];
        assert_eq!(
            server_metadata_urls("http://localhost:3001/tenant1").unwrap(),
            tenant
        );
        // A trailing slash: no double slash, and never the root RFC 8414 URL.
        let with_slash = server_metadata_urls("http://localhost:3001/tenant1/").unwrap();
        assert_eq!(with_slash, tenant);
        assert!(
            with_slash
                .iter()
                .all(|u| !u.contains("//.") && !u.ends_with("server"))
        );
        assert_eq!(
            server_metadata_urls("https://AS.example.com:443").unwrap()[0],
            "https://as.example.com/.well-known/oauth-authorization-server"
        );
        assert_eq!(
            server_metadata_urls("https://as.example.com:8443/a/b").unwrap()[2],
            "https://as.example.com:8443/a/b/.well-known/openid-configuration"
        );
        assert_eq!(
            server_metadata_urls("https://as/x?y=1"),
            Err(MetadataError::IssuerWithQuery {
                field: "issuer".into()
            })
        );
        assert_eq!(
            server_metadata_urls("https://as/x?"),
            Err(MetadataError::IssuerWithQuery {
                field: "issuer".into()
            })
        );
        // Found by the oauth_metadata fuzz target: `{origin}///t/.well-known/…` would
        // start its request target with `//`.
        for issuer in [
            "http://localhost:3001///tenant1",
            "https://as//x",
            "https://as/x//",
        ] {
            assert_eq!(
                server_metadata_urls(issuer),
                Err(MetadataError::IssuerWithEmptySegment {
                    field: "issuer".into()
                }),
                "{issuer}"
            );
        }
        assert_eq!(
            server_metadata_urls("https://as/x#y"),
            Err(MetadataError::InvalidUrl {
                field: "issuer".into(),
                source: UrlError::Fragment
            })
        );
        assert!(server_metadata_urls("javascript:alert(1)").is_err());
    }

    #[test]
    fn legacy_urls() {
        assert_eq!(
            legacy_server_metadata_urls(&url("http://localhost:3000/mcp?x=1")),
            ["http://localhost:3000/.well-known/oauth-authorization-server"]
        );
    }

    #[test]
    fn resource_matching() {
        let e = "http://localhost:3000/mcp";
        for (resource, want) in [
            ("http://localhost:3000/mcp", true),
            ("http://localhost:3000", true),
            ("http://localhost:3000/", true),
            ("HTTP://LOCALHOST:3000/mcp", true),
            ("http://localhost:3000/mcp/", false),
            ("http://localhost:3000/mc", false),
            ("http://localhost:3000/mcp/sub", false),
            ("http://localhost:3000/other", false),
            ("https://localhost:3000/mcp", false),
            ("http://localhost:3001/mcp", false),
            ("http://127.0.0.1:3000/mcp", false),
            ("https://evil.example.com/mcp", false),
            ("http://localhost:3000/mcp?x=1", false),
            ("http://localhost:3000/mcp#x", false),
            ("not a url", false),
            ("", false),
        ] {
            assert_eq!(resource_matches(resource, e), want, "{resource}");
        }
        assert!(resource_matches(
            "https://a.example/api",
            "https://a.example/api/mcp"
        ));
        assert!(resource_matches(
            "https://a.example/api/",
            "https://a.example/api/mcp"
        ));
        assert!(!resource_matches(
            "https://a.example/api",
            "https://a.example/apiary"
        ));
        assert!(resource_matches(
            "https://a.example:443/mcp",
            "https://a.example/mcp"
        ));
        assert!(resource_matches(
            "https://a.example/mcp",
            "https://a.example/mcp?t=1"
        ));
        assert!(resource_matches(
            "https://a.example/mcp?t=1",
            "https://a.example/mcp?t=1"
        ));
        assert!(!resource_matches(
            "https://a.example/mcp?t=1",
            "https://a.example/mcp?t=2"
        ));
        // A string that is not a URL still matches itself byte for byte.
        assert!(resource_matches("urn:x", "urn:x"));
    }

    #[test]
    fn canonical_resources() {
        for (input, want) in [
            ("http://localhost:3000/mcp", "http://localhost:3000/mcp"),
            ("HTTP://LocalHost:3000/mcp/", "http://localhost:3000/mcp"),
            ("https://Example.COM:443/MCP", "https://example.com/MCP"),
            ("https://example.com:8443", "https://example.com:8443"),
            ("https://example.com/", "https://example.com"),
            ("http://localhost:80/a?b=1", "http://localhost/a?b=1"),
            ("http://[::1]:3000/mcp", "http://[::1]:3000/mcp"),
        ] {
            assert_eq!(canonical_resource(&url(input)), want, "{input}");
        }
    }
}
