//! Writing HTTP/1.1 responses: whole ones ([`HttpResponse`]) and SSE streams whose end
//! is not known when the head goes out ([`HttpStream`]).

use std::borrow::Cow;

use crate::http::chars::{is_field_value, is_token};
use crate::http::decimal;
use crate::jsonrpc::{self, ErrorObject, RequestId, codes};

use super::reader::HttpRequestError;

/// A complete HTTP response. [`HttpResponse::write`] adds `Content-Length`. Its `Debug`
/// hides the values of credential headers (`Mcp-Session-Id`, `Set-Cookie`, …).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Header fields in order. `Content-Length` and `Transfer-Encoding` are ignored by
    /// [`HttpResponse::write`], which frames the body itself. Names and values known in
    /// advance are borrowed (`&'static str`), so a response costs no allocation for them.
    pub headers: Vec<(Cow<'static, str>, Cow<'static, str>)>,
    /// The body.
    pub body: Vec<u8>,
    /// For the answer to a `HEAD` request: the length of the body left out, which
    /// `Content-Length` states (RFC 9110 §8.6: the length a `GET` would have had).
    head_of: Option<usize>,
}

impl std::fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<_> = self
            .headers
            .iter()
            .map(|(n, v)| {
                let v = crate::http::secret::shown_header_value(n.as_bytes(), v.as_bytes());
                (n.as_ref(), v)
            })
            .collect();
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("headers", &headers)
            .field("body", &self.body)
            .field("head_of", &self.head_of)
            .finish()
    }
}

impl HttpResponse {
    /// A response with this status, no headers and no body.
    #[must_use]
    pub fn new(status: u16) -> Self {
        HttpResponse {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            head_of: None,
        }
    }

    /// The answer to a `HEAD` request: the same response without its body, whose
    /// `Content-Length` still states the body's length.
    #[must_use]
    pub fn for_head(mut self) -> Self {
        self.head_of = Some(self.head_of.unwrap_or(self.body.len()));
        self.body.clear();
        self
    }

    /// The same response with one more header field.
    #[must_use]
    pub fn with_header(
        mut self,
        name: impl Into<Cow<'static, str>>,
        value: impl Into<Cow<'static, str>>,
    ) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The same response with this body and `Content-Type`.
    #[must_use]
    pub fn with_body(mut self, content_type: impl Into<Cow<'static, str>>, body: Vec<u8>) -> Self {
        self.headers
            .push((Cow::Borrowed("Content-Type"), content_type.into()));
        self.body = body;
        self
    }

    /// A response carrying one JSON-RPC error object (`application/json`).
    #[must_use]
    pub fn json_error(status: u16, id: Option<&RequestId>, error: &ErrorObject) -> Self {
        let mut body = Vec::new();
        jsonrpc::encode_error(&mut body, id, error);
        HttpResponse::new(status).with_body("application/json", body)
    }

    /// The answer to a request the reader could not read: its status, a JSON-RPC
    /// `-32600` error with id `null` saying why, and `Connection: close`.
    #[must_use]
    pub fn for_request_error(error: &HttpRequestError) -> Self {
        let e = ErrorObject::new(codes::INVALID_REQUEST, format!("Bad request: {error}"));
        HttpResponse::json_error(error.status(), None, &e).with_header("Connection", "close")
    }

    /// The first value of header `name` (compared case-insensitively).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_ref())
    }

    /// Whether the response says `Connection: close`: the adapter closes the connection
    /// after writing it.
    #[must_use]
    pub fn closes_connection(&self) -> bool {
        self.headers.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("connection")
                && v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"))
        })
    }

    /// Appends the response to `out`: status line, headers, `Content-Length`, the empty
    /// line and the body (none for 1xx, 204 and 304; none for [`HttpResponse::for_head`],
    /// whose `Content-Length` is the length of the body left out). Header fields whose name is not a
    /// token or whose value holds a control character are left out, so nothing a caller
    /// puts in can split the response.
    pub fn write(&self, out: &mut Vec<u8>) {
        self.write_head(out);
        let bodiless = matches!(self.status, 100..=199 | 204 | 304);
        if !bodiless {
            out.extend_from_slice(b"Content-Length: ");
            let length = self.head_of.unwrap_or(self.body.len());
            out.extend_from_slice(decimal(length, &mut [0; 20]));
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        if !bodiless {
            out.extend_from_slice(&self.body);
        }
    }

    /// Status line and header fields, without the empty line or any framing header.
    fn write_head(&self, out: &mut Vec<u8>) {
        let status = if (100..=999).contains(&self.status) {
            self.status
        } else {
            500
        };
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(decimal(usize::from(status), &mut [0; 20]));
        out.push(b' ');
        out.extend_from_slice(reason_phrase(status).as_bytes());
        out.extend_from_slice(b"\r\n");
        for (name, value) in &self.headers {
            let framing = name.eq_ignore_ascii_case("content-length")
                || name.eq_ignore_ascii_case("transfer-encoding");
            if framing || !is_token(name) || !is_field_value(value) {
                continue;
            }
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// How the body of an open stream is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    /// `Transfer-Encoding: chunked` (HTTP/1.1): the connection may be reused afterwards.
    Chunked,
    /// Until the connection closes (HTTP/1.0 clients).
    UntilClose,
}

/// An SSE response whose end is not known yet: the request is still being worked on
/// (a tool that has not answered, or a legacy call waiting for the client's input).
///
/// Write [`HttpStream::write_head`], keep the connection open, and call
/// [`super::HttpEndpoint::poll_stream`] until it says
/// [`StreamStatus::Finished`](super::StreamStatus::Finished); when the client goes away
/// first, call [`super::HttpEndpoint::cancel_stream`]. While waiting,
/// [`HttpStream::write_comment`] writes an SSE comment, which keeps proxies from timing
/// the stream out and reveals a vanished client as a write error.
#[derive(Debug)]
pub struct HttpStream {
    pub(super) key: i64,
    /// Which attachment of the exchange or GET stream this is: a client that resumes
    /// gets a new one, and the connection still holding the old one only ends it.
    pub(super) attach: u64,
    pub(super) head: HttpResponse,
    framing: Framing,
    close: bool,
}

impl HttpStream {
    /// Its name, as [`super::HttpEndpoint::poll_ready`] reports it.
    #[must_use]
    pub fn id(&self) -> super::StreamId {
        super::StreamId(self.key)
    }

    /// A stream with `head` (status and headers; its body is the events so far).
    /// `chunked`: HTTP/1.1 chunked framing, else the body ends with the connection.
    /// `close`: the connection closes after the stream even when chunked.
    pub(super) fn new(
        (key, attach): (i64, u64),
        head: HttpResponse,
        chunked: bool,
        close: bool,
    ) -> Self {
        let framing = if chunked {
            Framing::Chunked
        } else {
            Framing::UntilClose
        };
        HttpStream {
            key,
            attach,
            head,
            framing,
            close: close || framing == Framing::UntilClose,
        }
    }

    /// The head, whose body holds the events written by [`HttpStream::write_head`].
    #[must_use]
    pub fn response(&self) -> &HttpResponse {
        &self.head
    }

    /// Whether the connection must be closed once the stream ends.
    #[must_use]
    pub fn closes_connection(&self) -> bool {
        self.close
    }

    /// Appends the status line, the headers (with `Transfer-Encoding: chunked` or
    /// `Connection: close`), the empty line and the events available so far.
    pub fn write_head(&self, out: &mut Vec<u8>) {
        self.head.write_head(out);
        match self.framing {
            Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
            Framing::UntilClose if !self.head.closes_connection() => {
                out.extend_from_slice(b"Connection: close\r\n");
            }
            Framing::UntilClose => {}
        }
        out.extend_from_slice(b"\r\n");
        self.write_data(out, &self.head.body);
    }

    /// Appends an SSE comment line (`: keep-alive`).
    pub fn write_comment(&self, out: &mut Vec<u8>) {
        self.write_data(out, b": keep-alive\n\n");
    }

    /// Appends body bytes in the stream's framing.
    pub(super) fn write_data(&self, out: &mut Vec<u8>, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        match self.framing {
            Framing::Chunked => {
                write_hex(out, data.len());
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(data);
                out.extend_from_slice(b"\r\n");
            }
            Framing::UntilClose => out.extend_from_slice(data),
        }
    }

    /// Appends the end of the body (the last chunk, when chunked).
    pub(super) fn write_end(&self, out: &mut Vec<u8>) {
        if self.framing == Framing::Chunked {
            out.extend_from_slice(b"0\r\n\r\n");
        }
    }
}

/// Appends one SSE `message` event carrying `json` (one `data:` line per line of it).
pub(super) fn sse_event(out: &mut Vec<u8>, json: &[u8]) {
    out.extend_from_slice(b"event: message\n");
    for line in json.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// Appends one SSE event of a resumable stream: `id:` when it has one, `retry:` when
/// given, then the message as [`sse_event`] writes it, or an empty `data:` for a priming
/// event (empty `json`).
pub(super) fn sse_event_with_id(
    out: &mut Vec<u8>,
    id: Option<&str>,
    retry_ms: Option<u128>,
    json: &[u8],
) {
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    if let Some(ms) = retry_ms {
        out.extend_from_slice(format!("retry: {ms}\n").as_bytes());
    }
    if json.is_empty() {
        out.extend_from_slice(b"data: \n\n");
    } else {
        sse_event(out, json);
    }
}

/// Appends `n` in lower-case hexadecimal (a chunk size).
fn write_hex(out: &mut Vec<u8>, n: usize) {
    let digits = (usize::BITS - n.leading_zeros()).div_ceil(4).max(1);
    for i in (0..digits).rev() {
        out.push(b"0123456789abcdef"[(n >> (4 * i)) & 0xf]);
    }
}

/// The reason phrase of a status code.
fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        409 => "Conflict",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn chunk_sizes_are_lower_case_hex() {
        for n in [0, 1, 9, 10, 15, 16, 255, 256, 0xabc, 0x10000, usize::MAX] {
            let mut out = Vec::new();
            super::write_hex(&mut out, n);
            assert_eq!(out, format!("{n:x}").into_bytes(), "{n}");
        }
    }
}
