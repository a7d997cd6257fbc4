//! Writing an HTTP/1.1 request head.
//!
//! Everything is checked before a byte is written, so a refused head leaves the output
//! buffer untouched. The checks are what keeps caller-supplied strings (tokens, session
//! ids, header values from tool arguments) from adding lines to the request: names must
//! be tokens, values visible ASCII with inner spaces or tabs only, and the framing headers
//! (`Host`, `Content-Length`, `Transfer-Encoding`) are written by the writer alone.

use super::chars::{is_field_value, is_host, is_token};
use super::url::EndpointUrl;

/// The `Accept` value every Streamable HTTP POST carries (spec §4.1).
pub const ACCEPT_JSON_AND_SSE: &str = "application/json, text/event-stream";

/// Why a request head was refused. Nothing was written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The method is not a token.
    #[error("invalid method {0:?}")]
    InvalidMethod(String),
    /// The target is not an origin-form path (`/` then visible ASCII).
    #[error("invalid request target {0:?}")]
    InvalidTarget(String),
    /// The host is empty or has bytes a `Host` header cannot carry.
    #[error("invalid host {0:?}")]
    InvalidHost(String),
    /// A header name that is not a token.
    #[error("invalid header name {0:?}")]
    InvalidHeaderName(String),
    /// A header value with control bytes, non-ASCII, or surrounding whitespace.
    #[error("invalid value for header {0:?}")]
    InvalidHeaderValue(String),
    /// `Host`, `Content-Length` or `Transfer-Encoding` among the caller's headers.
    #[error("header {0:?} is set by the request writer")]
    ReservedHeader(String),
}

/// A request head: request line, `Host`, the caller's headers and `Content-Length`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// The method, such as `POST`.
    pub method: String,
    /// The origin-form target: path and optional `?query`.
    pub target: String,
    /// `host[:port]` exactly as the `Host` header carries it.
    pub host: String,
    /// Further header fields, written in order.
    pub headers: Vec<(String, String)>,
}

impl RequestHead {
    /// A head with no headers besides `Host`.
    #[must_use]
    pub fn new(
        method: impl Into<String>,
        target: impl Into<String>,
        host: impl Into<String>,
    ) -> Self {
        RequestHead {
            method: method.into(),
            target: target.into(),
            host: host.into(),
            headers: Vec::new(),
        }
    }

    /// A head for `method` on an endpoint: its target and `Host`.
    #[must_use]
    pub fn for_endpoint(method: impl Into<String>, url: &EndpointUrl) -> Self {
        RequestHead::new(method, url.target(), url.host_header())
    }

    /// Adds a header field (checked when the head is written).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Appends the head to `out`: `content_length` is `Some` when a body follows
    /// (`Some(0)` for an empty one), `None` for none (a GET).
    ///
    /// # Errors
    ///
    /// A [`RequestError`] when a part could break the framing; `out` is unchanged then.
    pub fn write(
        &self,
        content_length: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Result<(), RequestError> {
        let mut head = HeadRef::new(&self.method, &self.target, &self.host);
        for (name, value) in &self.headers {
            head.push(name, value);
        }
        head.write(content_length, out)
    }
}

/// A request head that borrows its parts: what [`RequestHead`] writes, with the same
/// checks, for a writer that has the strings already (the client machine, once per
/// request) and need not copy them.
#[derive(Debug)]
pub(crate) struct HeadRef<'a> {
    /// Method, target and `Host`; `None` for the rest of a head whose start was written
    /// before ([`HeadRef::continuing`]).
    line: Option<(&'a str, &'a str, &'a str)>,
    /// The first [`FEW_FIELDS`] fields, in place (a request carries about ten).
    few: [(&'a str, &'a str); FEW_FIELDS],
    few_len: usize,
    /// Fields past those.
    more: Vec<(&'a str, &'a str)>,
    /// Bit `i` set: field `i` is one of this crate's own constant fields
    /// ([`HeadRef::push_own`]), not checked again on every request.
    own: u64,
}

/// How many fields a [`HeadRef`] holds without allocating.
const FEW_FIELDS: usize = 16;

impl<'a> HeadRef<'a> {
    /// A head with no headers besides `Host`.
    pub(crate) fn new(method: &'a str, target: &'a str, host: &'a str) -> Self {
        HeadRef {
            line: Some((method, target, host)),
            few: [("", ""); FEW_FIELDS],
            few_len: 0,
            more: Vec::new(),
            own: 0,
        }
    }

    /// A head for `method` on an endpoint: its target and `Host`.
    pub(crate) fn for_endpoint(method: &'a str, url: &'a EndpointUrl) -> Self {
        HeadRef::new(method, url.target(), url.host_header())
    }

    /// The fields that follow a start written by [`HeadRef::write_start`]: what
    /// [`HeadRef::write`] then appends is those fields, `Content-Length` and the empty
    /// line, checked as in a whole head.
    pub(crate) fn continuing() -> Self {
        HeadRef {
            line: None,
            ..HeadRef::new("", "", "")
        }
    }

    /// Adds a header field (checked when the head is written).
    pub(crate) fn push(&mut self, name: &'a str, value: &'a str) {
        match self.few.get_mut(self.few_len) {
            Some(slot) => {
                *slot = (name, value);
                self.few_len += 1;
            }
            None => self.more.push((name, value)),
        }
    }

    /// Adds a field whose name and value are constants of this crate (`Accept`,
    /// `Content-Type`, a protocol version), known to pass the checks (see the tests that
    /// go through them): the head does not check them again.
    pub(crate) fn push_own(&mut self, name: &'static str, value: &'static str) {
        let at = self.few_len + self.more.len();
        if let Some(bit) = 1u64.checked_shl(u32::try_from(at).unwrap_or(u32::MAX)) {
            self.own |= bit;
        }
        self.push(name, value);
    }

    /// The fields pushed, in order.
    fn fields(&self) -> impl Iterator<Item = &(&'a str, &'a str)> {
        self.few[..self.few_len].iter().chain(&self.more)
    }

    /// As [`RequestHead::write`]. Every part is checked before a byte is written, and
    /// room for the whole head is made once.
    pub(crate) fn write(
        &self,
        content_length: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Result<(), RequestError> {
        self.write_parts(Some(content_length), out)
    }

    /// The request line and the fields, checked as by [`HeadRef::write`], without
    /// `Content-Length` or the empty line: the start of heads that a
    /// [`HeadRef::continuing`] ends.
    pub(crate) fn write_start(&self, out: &mut Vec<u8>) -> Result<(), RequestError> {
        self.write_parts(None, out)
    }

    /// What [`HeadRef::write`] and [`HeadRef::write_start`] write: the end of the head
    /// (with its `Content-Length`, if any) when `end` is `Some`.
    fn write_parts(
        &self,
        end: Option<Option<usize>>,
        out: &mut Vec<u8>,
    ) -> Result<(), RequestError> {
        // "M T HTTP/1.1\r\nHost: H\r\n", the fields, `Content-Length`, the empty line.
        let mut size = 38 + 2;
        if let Some((method, target, host)) = self.line {
            check_request_line(method, target, host)?;
            size += method.len() + target.len() + host.len() + 19;
        }
        for (i, &(name, value)) in self.fields().enumerate() {
            let own = u32::try_from(i)
                .ok()
                .and_then(|i| 1u64.checked_shl(i))
                .is_some_and(|bit| self.own & bit != 0);
            if !own {
                check_field(name, value)?;
            }
            size += name.len() + value.len() + 4;
        }
        out.reserve(size);
        if let Some((method, target, host)) = self.line {
            for part in [method, " ", target, " HTTP/1.1\r\nHost: ", host, "\r\n"] {
                out.extend_from_slice(part.as_bytes());
            }
        }
        for &(name, value) in self.fields() {
            for part in [name, ": ", value, "\r\n"] {
                out.extend_from_slice(part.as_bytes());
            }
        }
        let Some(content_length) = end else {
            return Ok(());
        };
        if let Some(n) = content_length {
            let mut digits = [0u8; 20];
            out.extend_from_slice(b"Content-Length: ");
            out.extend_from_slice(decimal(n, &mut digits));
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        Ok(())
    }
}

/// Checks the method, the target and `Host`.
fn check_request_line(method: &str, target: &str, host: &str) -> Result<(), RequestError> {
    if !is_token(method) {
        return Err(RequestError::InvalidMethod(method.to_owned()));
    }
    let target_ok = target.starts_with('/') && target.bytes().all(|b| b.is_ascii_graphic());
    if !target_ok {
        return Err(RequestError::InvalidTarget(target.to_owned()));
    }
    if !is_host(host) {
        return Err(RequestError::InvalidHost(host.to_owned()));
    }
    Ok(())
}

/// Checks one header field: a token for a name, not one the head writes itself, a
/// value that cannot break the head.
pub(crate) fn check_field(name: &str, value: &str) -> Result<(), RequestError> {
    if !is_token(name) {
        return Err(RequestError::InvalidHeaderName(name.to_owned()));
    }
    if is_framing_header(name) {
        return Err(RequestError::ReservedHeader(name.to_owned()));
    }
    if !is_field_value(value) {
        return Err(RequestError::InvalidHeaderValue(name.to_owned()));
    }
    Ok(())
}

/// Whether `name` is a field the head writes itself (`Host`, `Content-Length`) or one
/// that would change its framing (`Transfer-Encoding`): looked at by length first.
fn is_framing_header(name: &str) -> bool {
    let reserved = match name.len() {
        4 => "host",
        14 => "content-length",
        17 => "transfer-encoding",
        _ => return false,
    };
    name.eq_ignore_ascii_case(reserved)
}

/// `n` in decimal, written at the end of `digits`.
pub(crate) fn decimal(mut n: usize, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &digits[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_length_is_written_in_decimal_at_every_width() {
        for n in [0, 7, 10, 99, 100, 65_536, 1_234_567_890, usize::MAX] {
            let mut digits = [0u8; 20];
            assert_eq!(decimal(n, &mut digits), n.to_string().as_bytes());
        }
    }

    /// Fields past those a head holds in place are written too, in order, and checked
    /// like the others.
    #[test]
    fn many_fields_are_written_in_order_and_checked() {
        for count in [15, 16, 17, 40] {
            let mut head = RequestHead::new("POST", "/mcp", "127.0.0.1:1");
            for i in 0..count {
                head = head.with_header(format!("X-{i}"), i.to_string());
            }
            let mut out = Vec::new();
            head.write(Some(0), &mut out).expect("a valid head");
            let text = String::from_utf8(out).expect("ASCII");
            let mut expected = String::from("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:1\r\n");
            for i in 0..count {
                expected.push_str(&format!("X-{i}: {i}\r\n"));
            }
            expected.push_str("Content-Length: 0\r\n\r\n");
            assert_eq!(text, expected, "{count} fields");

            let bad = head.with_header("X-Last", "a\r\nInjected: 1");
            let mut out = Vec::new();
            assert!(matches!(
                bad.write(None, &mut out),
                Err(RequestError::InvalidHeaderValue(name)) if name == "X-Last"
            ));
            assert!(out.is_empty(), "nothing written for a refused head");
        }
    }
}
