//! The response head: parsing on httparse, header lookup, and the framing and
//! keep-alive rules of RFC 9112 §6.3 and §9.3.

use super::chars::eq_ignore_case;
use super::error::ResponseError;

/// The HTTP version of a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HttpVersion {
    /// HTTP/1.0: connections close after each response unless `Connection: keep-alive`.
    Http10,
    /// HTTP/1.1: connections persist unless `Connection: close`.
    Http11,
}

/// A final (non-1xx) response head.
///
/// Its header fields are kept in one buffer, in order, names as received. Values have
/// surrounding whitespace removed; bytes that are not UTF-8 (obsolete `obs-text`) are
/// replaced by U+FFFD, which no header the MCP transport reads can contain.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResponseHead {
    /// The status code (100–999; never 1xx for a head delivered as an event).
    pub status: u16,
    /// The reason phrase; empty when missing or not plain text.
    pub reason: String,
    /// The protocol version of the status line.
    pub version: HttpVersion,
    /// Every field's name, then its value, one after the other.
    fields: String,
    /// Where each field's name ends and its value ends in `fields` (the value starts
    /// where the name ends; the name where the previous value ends).
    ends: Vec<(usize, usize)>,
}

impl ResponseHead {
    /// The header fields in order, as `(name, value)`.
    pub fn headers(&self) -> impl ExactSizeIterator<Item = (&str, &str)> {
        let mut start = 0;
        self.ends.iter().map(move |&(n, v)| {
            let field = (&self.fields[start..n], &self.fields[n..v]);
            start = v;
            field
        })
    }

    /// The first value of the header `name` (compared case-insensitively).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.header_all(name).next()
    }

    /// Every value of the header `name` (compared case-insensitively), in order.
    pub fn header_all<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a str> {
        // A field whose name has another length is passed over on its offsets alone:
        // only names of the right length are sliced and compared.
        let mut start = 0;
        self.ends.iter().filter_map(move |&(n, v)| {
            let at = std::mem::replace(&mut start, v);
            let found = n - at == name.len() && eq_ignore_case(&self.fields[at..n], name);
            found.then(|| &self.fields[n..v])
        })
    }

    /// The comma-separated list elements of every `name` header, trimmed, empty
    /// elements skipped (RFC 9110 §5.6.1).
    pub fn header_tokens<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a str> {
        self.header_all(name)
            .flat_map(|v| v.split(','))
            .map(|t| t.trim_matches([' ', '\t']))
            .filter(|t| !t.is_empty())
    }

    /// Whether the status is 2xx.
    #[must_use]
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// How the body of a response is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Framing {
    /// No body: HEAD, 204, 304.
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Everything until the connection closes.
    UntilEof,
}

/// Parses a complete head block (status line through the empty line).
pub(super) fn parse(block: &[u8], max_headers: usize) -> Result<ResponseHead, ResponseError> {
    // A field line takes at least three bytes ("a:\n"), so this many slots cannot be
    // outnumbered by a block that respects `max_headers`; it also bounds the allocation.
    let slots = max_headers.min(block.len() / 3 + 1);
    // Most responses carry a handful of fields: their slots live on the stack, and only a
    // head with more of them than that is parsed again with slots on the heap.
    let mut few = [httparse::EMPTY_HEADER; FEW_FIELDS];
    if slots <= FEW_FIELDS {
        return parse_with(block, max_headers, &mut few[..slots]);
    }
    match parse_with(block, max_headers, &mut few) {
        Err(ResponseError::TooManyHeaders { .. }) => {
            parse_with(block, max_headers, &mut vec![httparse::EMPTY_HEADER; slots])
        }
        other => other,
    }
}

/// How many header slots [`parse`] keeps on the stack.
const FEW_FIELDS: usize = 24;

/// [`parse`] with `fields` for httparse's slots; running out of them is
/// [`ResponseError::TooManyHeaders`].
fn parse_with<'b>(
    block: &'b [u8],
    max_headers: usize,
    fields: &mut [httparse::Header<'b>],
) -> Result<ResponseHead, ResponseError> {
    let mut response = httparse::Response::new(fields);
    match response.parse(block) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(ResponseError::InvalidHead {
                reason: "incomplete head",
            });
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ResponseError::TooManyHeaders { limit: max_headers });
        }
        Err(e) => return Err(ResponseError::InvalidHead { reason: reason(e) }),
    }
    let version = match response.version {
        Some(0) => HttpVersion::Http10,
        Some(1) => HttpVersion::Http11,
        _ => return Err(ResponseError::InvalidHead { reason: "version" }),
    };
    let status = response.code.unwrap_or(0);
    if status < 100 {
        return Err(ResponseError::InvalidStatus { status });
    }
    let block_fields: usize = response
        .headers
        .iter()
        .map(|h| h.name.len() + h.value.len())
        .sum();
    // Names and values, surrounding SP/HTAB removed from the values (they are never part
    // of a UTF-8 sequence, valid or not), are checked as UTF-8 all at once: names are
    // tokens (ASCII), so the whole is valid exactly when every value is.
    let mut bytes = Vec::with_capacity(block_fields);
    let mut ends = Vec::with_capacity(response.headers.len());
    for h in response.headers.iter() {
        bytes.extend_from_slice(h.name.as_bytes());
        let name_end = bytes.len();
        bytes.extend_from_slice(trim_ows(h.value));
        ends.push((name_end, bytes.len()));
    }
    let fields = match String::from_utf8(bytes) {
        Ok(fields) => fields,
        Err(_) => lossy_fields(response.headers, &mut ends),
    };
    Ok(ResponseHead {
        status,
        reason: response.reason.unwrap_or("").to_owned(),
        version,
        fields,
        ends,
    })
}

/// The fields of a head with a value that is not UTF-8: each such value read lossily,
/// `ends` set again for what that makes of them.
fn lossy_fields(headers: &[httparse::Header<'_>], ends: &mut Vec<(usize, usize)>) -> String {
    let mut fields = String::new();
    ends.clear();
    for h in headers {
        fields.push_str(h.name);
        let name_end = fields.len();
        fields.push_str(&String::from_utf8_lossy(trim_ows(h.value)));
        ends.push((name_end, fields.len()));
    }
    fields
}

/// `bytes` without leading and trailing SP and HTAB.
fn trim_ows(mut bytes: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = bytes {
        bytes = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = bytes {
        bytes = rest;
    }
    bytes
}

/// A static description of an httparse error.
pub(super) fn reason(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "invalid header name",
        httparse::Error::HeaderValue => "invalid header value",
        httparse::Error::NewLine => "invalid line ending",
        httparse::Error::Status => "invalid status line",
        httparse::Error::Token => "invalid token",
        httparse::Error::TooManyHeaders => "too many header fields",
        httparse::Error::Version => "invalid HTTP version",
    }
}

/// The body framing of a final response to a request with the given method
/// (RFC 9112 §6.3). Framing headers of bodiless responses are not examined.
pub(super) fn framing(head: &ResponseHead, head_request: bool) -> Result<Framing, ResponseError> {
    if head_request || head.status == 204 || head.status == 304 {
        return Ok(Framing::Empty);
    }
    let has_te = head.header_all("transfer-encoding").next().is_some();
    let length = content_length(head)?;
    if has_te {
        if length.is_some() || head.version == HttpVersion::Http10 {
            return Err(ResponseError::ConflictingFraming);
        }
        let mut codings = head.header_tokens("transfer-encoding");
        return match (codings.next(), codings.next()) {
            (Some(c), None) if c.eq_ignore_ascii_case("chunked") => Ok(Framing::Chunked),
            _ => Err(ResponseError::UnsupportedTransferEncoding),
        };
    }
    Ok(match length {
        Some(n) => Framing::Length(n),
        None => Framing::UntilEof,
    })
}

/// The `Content-Length`, if any; repeated identical values (in one field or several)
/// are accepted, differing ones refused.
fn content_length(head: &ResponseHead) -> Result<Option<u64>, ResponseError> {
    let mut found = None;
    for value in head.header_all("content-length") {
        // The usual value is one number: read as it is, not split as a list.
        if let Some(n) = parse_decimal(value) {
            agree(&mut found, n)?;
            continue;
        }
        for item in value.split(',') {
            let n = parse_decimal(item.trim_matches([' ', '\t']))
                .ok_or(ResponseError::InvalidContentLength)?;
            agree(&mut found, n)?;
        }
    }
    Ok(found)
}

/// Records `n` as the `Content-Length`, unless another value came before.
fn agree(found: &mut Option<u64>, n: u64) -> Result<(), ResponseError> {
    match *found {
        Some(prev) if prev != n => Err(ResponseError::ConflictingContentLength),
        _ => {
            *found = Some(n);
            Ok(())
        }
    }
}

fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.bytes().try_fold(0u64, |acc, b| {
        let digit = b.is_ascii_digit().then(|| u64::from(b - b'0'))?;
        acc.checked_mul(10)?.checked_add(digit)
    })
}

/// Whether the connection may carry another exchange after this response, given its
/// framing (RFC 9112 §9.3). A close-delimited body always ends the connection.
pub(super) fn keep_alive(head: &ResponseHead, framing: Framing) -> bool {
    if framing == Framing::UntilEof {
        return false;
    }
    let has = |token: &str| {
        head.header_tokens("connection")
            .any(|t| t.eq_ignore_ascii_case(token))
    };
    match head.version {
        HttpVersion::Http11 => !has("close"),
        HttpVersion::Http10 => has("keep-alive") && !has("close"),
    }
}
