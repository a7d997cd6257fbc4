//! HTTP/1.1 for Streamable HTTP: one exchange at a time, on httparse.
//!
//! Pure pieces, no IO; an adapter owns the socket (and TLS) and moves bytes:
//!
//! * [`EndpointUrl`] parses and vets the MCP endpoint URL (schemes, host forms, the
//!   plain-`http`-only-to-loopback rule) and yields what a connection needs: the host and
//!   port to connect to, the `Host` header, the request target and the origin.
//! * [`RequestHead`] writes a request head; it refuses anything that would let a header
//!   name or value smuggle a line break or a second header into the request.
//! * [`ResponseReader`] turns response bytes into [`ResponseEvent`]s: the head, body
//!   chunks as they arrive (SSE streams are long-lived), the end with a keep-alive verdict.
//!   End of input is an input ([`ResponseReader::handle_eof`]); a partial head is not an
//!   error. Every buffer it keeps is bounded by [`HttpLimits`].
//! * [`headers`] and [`xmcp`]: the 2026-07-28 request header set and its value codec.
//! * [`secret`]: which header names carry credentials.

pub(crate) mod chars;
mod chunked;
mod error;
mod head;
pub mod headers;
mod host;
mod limits;
mod request;
mod response;
pub(crate) mod scan;
pub mod secret;
mod url;
pub mod xmcp;

pub use error::{ResponseError, ReuseError};
pub use head::{HttpVersion, ResponseHead};
pub use limits::HttpLimits;
#[cfg(test)]
pub(crate) use request::check_field;
pub use request::{ACCEPT_JSON_AND_SSE, RequestError, RequestHead};
pub(crate) use request::{HeadRef, decimal};
pub use response::{ResponseEvent, ResponseReader};
pub use url::{EndpointUrl, Scheme, UrlError};

#[cfg(test)]
mod tests;
