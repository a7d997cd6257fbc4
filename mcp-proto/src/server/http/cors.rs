//! Cross-origin requests from the browser pages the endpoint accepts (loopback ones, and
//! [`HttpEndpointConfig::allowed_origins`](super::HttpEndpointConfig::allowed_origins)).
//!
//! A browser page may only read a response that names its `Origin` in
//! `Access-Control-Allow-Origin`, and sends a `POST` with `Content-Type:
//! application/json` (or any MCP header) only after an `OPTIONS` preflight says it may.
//! Accepting those origins without either left every browser client (an inspector page on
//! `http://localhost:6274`, say) unable to talk to the server. So, once the `Host` and
//! `Origin` checks have passed:
//!
//! * an `OPTIONS` request with `Origin` and `Access-Control-Request-Method` is a
//!   preflight, answered `204` on any path, before the application's gate (a preflight
//!   carries no credentials): the methods `GET, POST, DELETE`, the request headers asked
//!   for (when they are a list of header names: `Mcp-Param-*` names are the tools' own),
//!   a private network when asked (an accepted public page calling a loopback server),
//!   cached for ten minutes;
//! * every other response to a request with an `Origin` (the gate's own answers, a `401`
//!   included, and the heads of SSE streams) names that origin, and exposes the headers a
//!   client reads: `Mcp-Session-Id`, `WWW-Authenticate`, `Retry-After`.
//!
//! A request from an origin not accepted is still `403`, with no CORS header, so the page
//! reads nothing. No credentials mode: MCP clients send `Authorization` themselves, never
//! cookies.

use std::borrow::Cow;

use super::reader::HttpRequest;
use super::response::HttpResponse;
use crate::http::chars::is_token;

/// The longest `Access-Control-Request-Headers` echoed back.
const MAX_REQUEST_HEADERS_BYTES: usize = 4096;

/// The `204` answer to a CORS preflight, or `None` when `request` is not one.
pub(super) fn preflight(request: &HttpRequest) -> Option<HttpResponse> {
    if !request.method_is("OPTIONS") {
        return None;
    }
    let origin = request.header("origin")?;
    request.header_bytes("access-control-request-method")?;
    let mut response = HttpResponse::new(204)
        .with_header("Access-Control-Allow-Origin", origin.to_owned())
        .with_header("Access-Control-Allow-Methods", "GET, POST, DELETE")
        .with_header("Access-Control-Max-Age", "600")
        .with_header(
            "Vary",
            "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
        );
    if let Some(asked) = request
        .header("access-control-request-headers")
        .filter(|h| h.len() <= MAX_REQUEST_HEADERS_BYTES)
        .filter(|h| h.split(',').all(|name| is_token(name.trim())))
    {
        response = response.with_header("Access-Control-Allow-Headers", asked.to_owned());
    }
    // A public page's request to a private address (Private Network Access): the origin
    // was accepted, so it may.
    if request.header("access-control-request-private-network") == Some("true") {
        response = response.with_header("Access-Control-Allow-Private-Network", "true");
    }
    Some(response)
}

/// The headers that let the page of `request`'s `Origin` (already accepted) read a
/// response to it; none without an `Origin`, nor when the response names one already
/// (an application's gate that writes its own).
pub(super) fn allow_headers(
    request: &HttpRequest,
    headers: &mut Vec<(Cow<'static, str>, Cow<'static, str>)>,
) {
    let Some(origin) = request.header("origin") else {
        return;
    };
    if headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("access-control-allow-origin"))
    {
        return;
    }
    headers.push((
        Cow::Borrowed("Access-Control-Allow-Origin"),
        Cow::Owned(origin.to_owned()),
    ));
    headers.push((
        Cow::Borrowed("Access-Control-Expose-Headers"),
        Cow::Borrowed("Mcp-Session-Id, WWW-Authenticate, Retry-After"),
    ));
    headers.push((Cow::Borrowed("Vary"), Cow::Borrowed("Origin")));
}
