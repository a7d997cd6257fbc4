//! The wire log's redaction of HTTP heads, byte by byte: every byte given is mapped at
//! once to what stands for it (itself, nothing, or [`REDACTED`] for the first byte of a
//! secret), so that bytes read keep their place in the reads they came in.

use std::sync::Arc;

use crate::wire_log::{
    JsonSecrets, MAX_CHECKED_NAME, Query, REDACTED, is_chunked_transfer_encoding,
    is_form_content_type, is_secret_header,
};

/// Where [`Head`] is in its message.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum At {
    /// The start line (request or status line).
    #[default]
    Start,
    /// The first byte of a head line.
    LineStart,
    /// A header name.
    Name,
    /// A value shown as it is.
    Value,
    /// A secret value (its stand-in written): nothing more of it is shown.
    Secret,
    /// A continuation line of a secret header: hidden whole, line end included.
    Folded,
    /// The body (or a head too malformed to judge): shown with the OAuth secrets of a
    /// form or JSON body replaced, as the wire log shows them.
    Body,
}

/// Longest `Content-Type` line kept to tell a form body.
const CONTENT_TYPE_LINE: usize = 128;

/// One HTTP message as it streams by: the start line with its secret query values
/// replaced (the wire log's [`Query`]), each header whose name is secret
/// ([`is_secret_header`], the caller's names included) written as `Name: [redacted]`
/// with its continuation lines dropped, and the body with the secrets of the
/// authorization flow hidden (form parameters such as `code_verifier` and
/// `client_secret`, JSON members such as `access_token`: the wire log's rules). An
/// interim (1xx) response head is followed by another head.
#[derive(Debug, Default)]
pub(crate) struct Head {
    at: At,
    query: Query,
    /// The start line's first bytes, to tell an interim response.
    start: Vec<u8>,
    /// The current header's name, up to one byte more than can be checked.
    name: Vec<u8>,
    /// The current header is secret (its continuation lines are too).
    hiding: bool,
    extra: Arc<[String]>,
    /// The current head line, while it may be `Content-Type` (bounded).
    line: Vec<u8>,
    /// The body is a form (`application/x-www-form-urlencoded`).
    form: bool,
    json: JsonSecrets,
    form_query: Option<Query>,
    /// Where the current body line is in telling an event-stream `data:` line that
    /// carries a URL.
    data: DataLine,
    /// The head says `Transfer-Encoding: chunked`.
    chunked: bool,
    /// Where a chunked body is in its framing.
    chunk: Chunk,
}

/// Where a chunked body is in its framing: chunk-size lines are shown as they are and
/// kept from the body's rules, which judge the data as if it came whole (a secret cut by
/// a chunk boundary, or whose name and value a boundary parts, stays hidden).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// A chunk-size line: the size so far and its digits, then whether the digits
    /// ended (extensions or white space up to the line end).
    #[default]
    SizeStart,
    Size(u64, u8, bool),
    /// This many bytes of chunk data to come.
    Data(u64),
    /// After a chunk's data, up to the line end that closes it.
    DataEnd,
    /// After the last chunk (trailers), or framing no longer followed: the body's rules
    /// apply to what comes.
    Unframed,
}

/// How far the current body line is from being an event-stream line `data: URL` (the
/// `endpoint` event of the 2024-11-05 HTTP+SSE transport, whose `sessionId` is the
/// session's only credential): each byte of its secret query values becomes the next
/// byte of [`URL_STAND_IN`](super::URL_STAND_IN) (repeated), which keeps the URL usable
/// when replayed and the length its chunk of a chunked body declared.
#[derive(Debug)]
enum DataLine {
    /// This many bytes of `data:` matched at the start of the line.
    Prefix(usize),
    /// After `data:`, spaces so far.
    Spaces,
    /// A URL (the value does not start like JSON): its query is redacted.
    Url(Query),
    /// Anything else, up to the line end.
    Other,
}

impl Default for DataLine {
    fn default() -> Self {
        DataLine::Prefix(0)
    }
}

/// Bytes of the start line kept: `HTTP/1.1 100` and a little more.
const START: usize = 16;

impl Head {
    /// A message starts, hiding the headers named in `extra` besides the built-in ones.
    pub(crate) fn new(extra: Arc<[String]>) -> Head {
        Head {
            extra,
            ..Head::default()
        }
    }

    /// What `bytes`, the next bytes of the message, are shown as.
    pub(crate) fn redact(&mut self, mut bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        while let Some((&b, rest)) = bytes.split_first() {
            match self.at {
                At::Body => {
                    out.extend(self.body(bytes));
                    return out;
                }
                At::Start => {
                    let end = bytes.iter().position(|&b| b == b'\n');
                    let line = &bytes[..end.unwrap_or(bytes.len())];
                    let room = START.saturating_sub(self.start.len()).min(line.len());
                    self.start.extend_from_slice(&line[..room]);
                    out.extend(self.query.redact(line));
                    let Some(end) = end else { return out };
                    out.push(b'\n');
                    bytes = &bytes[end + 1..];
                    // An empty line before the start line (RFC 9112, 2.2) starts nothing.
                    if self.start.iter().any(|&b| b != b'\r') {
                        self.at = At::LineStart;
                    } else {
                        *self = Head::new(Arc::clone(&self.extra));
                    }
                    continue;
                }
                At::LineStart => match b {
                    b'\r' => out.push(b),
                    b'\n' => {
                        out.push(b);
                        self.head_ended();
                    }
                    b' ' | b'\t' if self.hiding => self.at = At::Folded,
                    b' ' | b'\t' => {
                        out.push(b);
                        self.at = At::Value;
                    }
                    _ => {
                        out.push(b);
                        self.name.clear();
                        self.name.push(b);
                        self.line.clear();
                        self.line.push(b);
                        self.hiding = false;
                        self.at = At::Name;
                    }
                },
                At::Name => match b {
                    b':' if is_secret_header(&self.name, &self.extra) => {
                        out.extend_from_slice(b": ");
                        out.extend_from_slice(REDACTED.as_bytes());
                        self.hiding = true;
                        self.at = At::Secret;
                    }
                    b':' => {
                        out.push(b);
                        self.line.push(b);
                        self.at = At::Value;
                    }
                    b'\n' => {
                        out.push(b);
                        self.at = At::LineStart;
                    }
                    _ if self.name.len() > MAX_CHECKED_NAME => {
                        // No colon in sight: what follows cannot be told from a value.
                        out.extend_from_slice(REDACTED.as_bytes());
                        self.hiding = true;
                        self.at = At::Secret;
                    }
                    _ => {
                        out.push(b);
                        self.name.push(b);
                        if self.line.len() < CONTENT_TYPE_LINE {
                            self.line.push(b);
                        }
                    }
                },
                At::Value => {
                    out.push(b);
                    if b == b'\n' {
                        self.form |= is_form_content_type(&self.line);
                        self.chunked |= is_chunked_transfer_encoding(&self.line);
                        self.at = At::LineStart;
                    } else if b != b'\r' && self.line.len() < CONTENT_TYPE_LINE {
                        self.line.push(b);
                    }
                }
                At::Secret => match b {
                    b'\r' => out.push(b),
                    b'\n' => {
                        out.push(b);
                        self.at = At::LineStart;
                    }
                    _ => {}
                },
                At::Folded => {
                    if b == b'\n' {
                        self.at = At::LineStart;
                    }
                }
            }
            bytes = rest;
        }
        out
    }

    /// Body bytes with their secrets hidden; a chunked body's framing is shown as it is
    /// and kept from the rules.
    fn body(&mut self, mut bytes: &[u8]) -> Vec<u8> {
        if !self.chunked {
            return self.body_data(bytes);
        }
        let mut out = Vec::with_capacity(bytes.len());
        while let Some((&b, rest)) = bytes.split_first() {
            if let Chunk::Data(left) = self.chunk {
                let take = usize::try_from(left).map_or(bytes.len(), |l| l.min(bytes.len()));
                let (data, after) = bytes.split_at(take);
                out.extend(self.body_data(data));
                self.chunk = match left - take as u64 {
                    0 => Chunk::DataEnd,
                    more => Chunk::Data(more),
                };
                bytes = after;
                continue;
            }
            if self.chunk == Chunk::Unframed {
                out.extend(self.body_data(bytes));
                return out;
            }
            out.push(b);
            let digit = (b as char).to_digit(16).map(u64::from);
            self.chunk = match (self.chunk, digit) {
                (Chunk::SizeStart, Some(d)) => Chunk::Size(d, 1, false),
                (Chunk::SizeStart, None) => {
                    // Not a chunk size: what follows is judged as a body.
                    out.pop();
                    out.extend(self.body_data(&[b]));
                    Chunk::Unframed
                }
                (Chunk::Size(n, digits, false), Some(d)) if digits < 16 => {
                    Chunk::Size(n * 16 + d, digits + 1, false)
                }
                (Chunk::Size(0, _, _), _) if b == b'\n' => Chunk::Unframed,
                (Chunk::Size(n, _, _), _) if b == b'\n' => Chunk::Data(n),
                (Chunk::Size(n, digits, _), _) => Chunk::Size(n, digits, true),
                (Chunk::DataEnd, _) if b == b'\n' => Chunk::SizeStart,
                (other, _) => other,
            };
            bytes = rest;
        }
        out
    }

    /// Body data with its secrets hidden, line by line (a JSON string never spans
    /// lines; a form body's parameters end at a line end too).
    fn body_data(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            let last = piece.ends_with(b"\n");
            if self.form {
                let query = self.form_query.get_or_insert_with(Query::form);
                out.extend(query.redact(piece));
                if last {
                    self.form_query = None;
                }
            } else {
                for &b in piece {
                    self.body_byte(b, &mut out);
                }
            }
        }
        out
    }

    /// One byte of a body that is not a form.
    fn body_byte(&mut self, b: u8, out: &mut Vec<u8>) {
        const DATA: &[u8] = b"data:";
        if b == b'\n' || b == b'\r' {
            // A line end (CR alone ends an event-stream line too).
            self.data = DataLine::Prefix(0);
            out.extend(self.json.redact(&[b], b == b'\n'));
            return;
        }
        self.data = match std::mem::take(&mut self.data) {
            DataLine::Prefix(n) if DATA[n] == b && n + 1 == DATA.len() => DataLine::Spaces,
            DataLine::Prefix(n) if DATA[n] == b => DataLine::Prefix(n + 1),
            DataLine::Spaces if b == b' ' => DataLine::Spaces,
            DataLine::Spaces if matches!(b, b'{' | b'[' | b'"') => DataLine::Other,
            DataLine::Spaces => DataLine::Url(Query::url_same_length(super::URL_STAND_IN)),
            DataLine::Url(q) => DataLine::Url(q),
            _ => DataLine::Other,
        };
        match &mut self.data {
            DataLine::Url(query) => out.extend(query.redact(&[b])),
            // The `data:` prefix (and the spaces after it) is no JSON: an event's data
            // may go on over several `data:` lines, a secret member's value on the next.
            DataLine::Prefix(_) | DataLine::Spaces => out.push(b),
            DataLine::Other => out.extend(self.json.redact(&[b], false)),
        }
    }

    /// The empty line after the head: the body follows, or the next head after an
    /// interim response (1xx other than 101).
    fn head_ended(&mut self) {
        let status = self.start.strip_prefix(b"HTTP/").and_then(|rest| {
            let space = rest.iter().position(|&b| b == b' ')?;
            rest.get(space + 1..space + 4)
        });
        match status {
            Some([b'1', d1, d2]) if [*d1, *d2] != *b"01" => {
                *self = Head::new(Arc::clone(&self.extra));
            }
            _ => self.at = At::Body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(message: &[u8]) -> String {
        String::from_utf8(Head::default().redact(message)).unwrap()
    }

    #[test]
    fn the_http_sse_endpoint_event_keeps_a_usable_url_without_its_session() {
        let message = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
            event: endpoint\r\ndata: /message?sessionId=5f2a&x=1\r\n\r\n\
            data:http://h/m?session_id=ab#f\n\n\
            data: {\"u\":\"/a?session=keep\",\"access_token\":\"t\"}\n\n";
        let expected = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
            event: endpoint\r\ndata: /message?sessionId=reda&x=1\r\n\r\n\
            data:http://h/m?session_id=re#f\n\n\
            data: {\"u\":\"/a?session=keep\",\"access_token\":\"[redacted]\"}\n\n";
        assert_eq!(whole(message), expected);
        let mut head = Head::default();
        let bytewise: Vec<u8> = message.iter().flat_map(|b| head.redact(&[*b])).collect();
        assert_eq!(String::from_utf8(bytewise).unwrap(), expected);
    }

    #[test]
    fn secrets_are_replaced_as_the_wire_log_shows_them() {
        let request = b"POST /mcp?access_token=s3cr3t&page=2 HTTP/1.1\r\nHost: x\r\n\
            Authorization: Bearer s3cr3t\r\nMcp-Session-Id: 1868a90c\r\nX-Api-Key: k\r\n\
            \tfolded-k\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(
            whole(request),
            "POST /mcp?access_token=[redacted]&page=2 HTTP/1.1\r\nHost: x\r\n\
             Authorization: [redacted]\r\nMcp-Session-Id: [redacted]\r\nX-Api-Key: [redacted]\r\n\
             Content-Length: 2\r\n\r\n{}"
        );
        // The body is not a head: a header-like line there is shown.
        assert_eq!(
            whole(b"HTTP/1.1 200 OK\n\nCookie: a\n"),
            "HTTP/1.1 200 OK\n\nCookie: a\n"
        );
        // A challenge is shown.
        let challenge = "HTTP/1.1 401 X\r\nWWW-Authenticate: Bearer realm=\"x\"\r\n\r\n";
        assert_eq!(whole(challenge.as_bytes()), challenge);
    }

    #[test]
    fn each_read_maps_to_its_own_bytes() {
        let response: &[u8] =
            b"HTTP/1.1 200 OK\r\nmcp-session-id: abc\r\nContent-Type: x\r\n\r\nbody";
        let expected =
            "HTTP/1.1 200 OK\r\nmcp-session-id: [redacted]\r\nContent-Type: x\r\n\r\nbody";
        for cut in 0..response.len() {
            let mut head = Head::default();
            let first = head.redact(&response[..cut]);
            let second = head.redact(&response[cut..]);
            let joined = String::from_utf8([first.clone(), second].concat()).unwrap();
            assert_eq!(joined, expected, "cut at {cut}");
            // Nothing of the first read waits for the second.
            let body = response.len() - 4;
            if cut >= body {
                let shown = expected.len() - (response.len() - cut);
                assert_eq!(first, expected.as_bytes()[..shown], "cut at {cut}");
            }
        }
    }

    #[test]
    fn oauth_secrets_in_bodies_are_hidden_whatever_the_reads() {
        let form: &[u8] =
            b"POST /token HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n\
            grant_type=authorization_code&code=c0de&code_verifier=v3rif&client_secret=s3c";
        let json: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n\
            {\"access_token\": \"t0k\", \"token_type\": \"Bearer\", \"refresh_token\": \"r3f\"}";
        for message in [form, json] {
            let whole_text = whole(message);
            for secret in ["c0de", "v3rif", "s3c", "t0k", "r3f"] {
                assert!(!whole_text.contains(secret), "{whole_text}");
            }
            assert!(whole_text.contains("[redacted]"), "{whole_text}");
            for cut in 0..message.len() {
                let mut head = Head::default();
                let joined = [head.redact(&message[..cut]), head.redact(&message[cut..])].concat();
                assert_eq!(
                    String::from_utf8(joined).unwrap(),
                    whole_text,
                    "cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn an_interim_response_is_followed_by_a_head() {
        let response = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\
            HTTP/1.1 200 OK\r\nSet-Cookie: s\r\n\r\nSet-Cookie: body";
        assert_eq!(
            whole(response),
            "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\
             HTTP/1.1 200 OK\r\nSet-Cookie: [redacted]\r\n\r\nSet-Cookie: body"
        );
    }

    #[test]
    fn a_name_too_long_to_check_hides_the_rest_of_its_line() {
        let mut message = b"GET / HTTP/1.1\r\n".to_vec();
        message.extend(std::iter::repeat_n(b'n', MAX_CHECKED_NAME + 10));
        message.extend_from_slice(b"secret\r\nHost: x\r\n\r\n");
        let shown = whole(&message);
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.ends_with("[redacted]\r\nHost: x\r\n\r\n"), "{shown}");
    }
}
