//! How the endpoint's answers look on the wire: the HTTP status of a JSON-RPC answer in
//! each era, a complete answer as `application/json` or, when messages came before it,
//! as an SSE body, the head of an SSE response, and the last touches every complete
//! response gets (`Connection: close`, no body for `HEAD`). The module docs of
//! [`super`] (*Status codes of answers*, *JSON or SSE*) say when each applies.

use crate::jsonrpc::codes;
use crate::version::Era;

use super::exchange::{Event, Exchange};
use super::reader::HttpRequest;
use super::response::{HttpResponse, sse_event, sse_event_with_id};

/// `response` with `Connection: close` when the connection ends after it, and without a
/// body for a `HEAD` request.
pub(super) fn finish_complete(
    request: &HttpRequest,
    close: bool,
    mut response: HttpResponse,
) -> HttpResponse {
    if close && !response.closes_connection() {
        response = response.with_header("Connection", "close");
    }
    if request.method_is("HEAD") {
        response = response.for_head();
    }
    response
}

/// The complete answer to an exchange whose response arrived.
pub(super) fn answer(mut exchange: Exchange, era: Era, initialize: bool) -> HttpResponse {
    if exchange.events.len() == 1 {
        let status = match (exchange.error_code, era) {
            (None, _) => 200,
            (Some(_), Era::Legacy) if initialize => 400,
            (Some(code), Era::Modern) => modern_status(code),
            (Some(code), _) => legacy_status(code),
        };
        let body = (exchange.events.into_first())
            .map(|e| e.data)
            .unwrap_or_default();
        return HttpResponse::new(status).with_body("application/json", body);
    }
    let mut body = Vec::new();
    write_events(&mut body, exchange.events.take().into_iter());
    sse_head(body)
}

/// Appends events as SSE, with their ids when they have them.
pub(super) fn write_events(out: &mut Vec<u8>, events: impl Iterator<Item = Event>) {
    for event in events {
        match &event.id {
            Some(id) => sse_event_with_id(out, Some(id), None, &event.data),
            None => sse_event(out, &event.data),
        }
    }
}

/// The HTTP status of a modern JSON-RPC error answer from the machine (spec 4.5). A
/// `-32602` here is about the request's content (an unknown tool, bad arguments): a
/// handler error, answered with 200 as SDKs do. The `-32602` for missing `_meta`, which
/// must be a 400, comes from the endpoint's own checks before the machine sees the request.
fn modern_status(code: i64) -> u16 {
    match code {
        codes::HEADER_MISMATCH
        | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION
        | codes::INVALID_REQUEST
        | codes::PARSE_ERROR => 400,
        codes::METHOD_NOT_FOUND => 404,
        _ => 200,
    }
}

/// The HTTP status of a legacy JSON-RPC error answer.
fn legacy_status(code: i64) -> u16 {
    match code {
        codes::INVALID_REQUEST | codes::PARSE_ERROR => 400,
        _ => 200,
    }
}

/// A 200 SSE response head with `body` as its events so far.
pub(super) fn sse_head(body: Vec<u8>) -> HttpResponse {
    HttpResponse::new(200)
        .with_body("text/event-stream", body)
        .with_header("Cache-Control", "no-cache")
        .with_header("X-Accel-Buffering", "no")
}
