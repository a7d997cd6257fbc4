//! A hook in front of the endpoint: [`RequestGate`], which sees every request that passed
//! the `Host` and `Origin` checks before the endpoint serves it, and either lets it
//! through (naming the principal it authenticated) or answers it itself.
//!
//! This is where an application protects its MCP server with bearer tokens: the gate
//! checks the `Authorization` header of requests to the MCP path and answers `401` with
//! `WWW-Authenticate` when it is missing or wrong, and it may serve other paths of the
//! same origin (the protected resource metadata of RFC 9728, or a whole authorization
//! server) without the MCP endpoint seeing them. The gate owns its state; the endpoint
//! only gives it the request and the time.

use super::reader::HttpRequest;
use super::response::HttpResponse;
use crate::Instant;

/// What a [`RequestGate`] decides about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GateVerdict {
    /// Serve the request, as a client authenticated as `principal` (`None`: not
    /// authenticated), as [`HttpEndpoint::handle_request_as`](super::HttpEndpoint::handle_request_as)
    /// would.
    Pass {
        /// Who the client is, when the gate knows.
        principal: Option<String>,
    },
    /// Answer with this response; the endpoint never sees the request.
    Answer(HttpResponse),
}

/// Decides, before the endpoint, whether a request is served
/// ([`HttpEndpoint::set_gate`](super::HttpEndpoint::set_gate)).
pub trait RequestGate: std::fmt::Debug + Send {
    /// The verdict on `request`, at `now`. Every request of every path comes here once
    /// its `Host` and `Origin` passed; a request of another path than the endpoint's
    /// that the gate lets through gets the endpoint's `404`.
    fn check(&mut self, now: Instant, request: &HttpRequest) -> GateVerdict;
}
