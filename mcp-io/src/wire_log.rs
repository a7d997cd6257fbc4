//! Feeding the [`WireLog`](crate::WireLog): bytes as they cross the wire, cut into
//! lines, with secrets kept out. The loggers take a wire log of either
//! [flavour](crate::Flavour) (`&mut Option<Box<L>>` for any [`Sink`] `L`).
//!
//! The rules, the same for both adapters:
//!
//! * Every line is passed without its line end (`\n` or `\r\n`), empty lines included
//!   (an SSE event ends with one; an HTTP head ends with one).
//! * A line longer than [`MAX_LOG_LINE`] is passed in pieces of that size, so the log
//!   never holds more than that per stream, whatever the server sends.
//! * Over HTTP ([`HttpLog`]), the head of every request and response is logged with
//!   the value of every secret header replaced by [`REDACTED`] (the header name kept as
//!   written), continuation lines of such a header included, and the value of every
//!   secret query parameter of the request line replaced the same way (the parameter
//!   name kept). Bodies are logged as they are but for the OAuth secrets they may carry
//!   (see [below](self#secrets-in-bodies)). Lines are redacted whole, however the bytes
//!   arrived: a header split across reads is assembled before it is judged. An
//!   interim response's head (1xx other than 101) is followed by the next head, as the
//!   HTTP machine reads it, not by a body. A chunked body's chunk-size lines are logged
//!   as they are, and its data is put back together into the body's lines, each judged
//!   and logged whole where it ends: a chunk boundary never shows part of a secret.
//!
//! # Secret headers
//!
//! A header is secret ([`is_secret_header`]) when its name, without surrounding white
//! space and compared without regard to ASCII case,
//!
//! 1. is one the caller named ([`Options::redact_header`](crate::Options::redact_header),
//!    [`HttpLog::redacting`], [`ChannelLog::http_redacting`]), or
//! 2. is none of [`CHALLENGE_HEADERS`] (`WWW-Authenticate`, `Proxy-Authenticate`: a
//!    server's challenge, which OAuth discovery needs to be seen, carries no credential)
//!    and
//!    * is one of [`SECRET_HEADERS`] (`Authorization`, `Proxy-Authorization`, `Cookie`,
//!      `Set-Cookie`, `Mcp-Session-Id`), or
//!    * contains one of [`SECRET_HEADER_PARTS`] (`auth`, `token`, `secret`, `password`,
//!      `passwd`, `api-key`, `apikey`, `api_key`, `cookie`, `session`: `X-Api-Key`,
//!      `X-Auth-Token`, `X-Amz-Security-Token`, `Client-Secret`, …), or
//!    * is longer than [`MAX_CHECKED_NAME`] bytes (no real header is), or cannot be
//!      told because the first [`MAX_LOG_LINE`] bytes of its line hold no `:` (the
//!      whole line is then logged as [`REDACTED`]).
//!
//! # Secret query parameters
//!
//! In the first line of each message (the request line; a status line has no query),
//! the query is the part of the request target after its first `?`, up to the next
//! space or `#`; its parameters are separated by `&` (not `;`), and a parameter's value
//! is what follows its first `=`. A parameter is secret ([`is_secret_param`]) when its
//! name, `%XX` escapes decoded and compared without regard to ASCII case,
//!
//! * is one of [`SECRET_PARAMS`] (`key`, `code`, `sig`, `auth`, `pass`, `pwd`), or
//! * contains one of [`SECRET_PARAM_PARTS`] (`token`, `secret`, `password`, `passwd`,
//!   `apikey`, `api_key`, `api-key`, `signature`, `credential`, `session`:
//!   `access_token`, `client_secret`, `X-Amz-Signature`, …), or
//! * is longer than [`MAX_CHECKED_NAME`] bytes once decoded.
//!
//! A secret parameter's value, when not empty, becomes [`REDACTED`]; a parameter with
//! no `=` has no value to hide. The request line is redacted as it streams by, so a
//! request line longer than [`MAX_LOG_LINE`] keeps its secrets hidden across pieces.
//!
//! # Secrets in bodies
//!
//! The requests and responses of an authorization carry their secrets in bodies:
//!
//! * A message whose head says `Content-Type: application/x-www-form-urlencoded` (a
//!   token, revocation or registration request) has a form body: on each of its lines,
//!   the values of the secret parameters ([`is_secret_param`]: `code`, `code_verifier`,
//!   `client_secret`, `refresh_token`, `client_assertion`, `assertion`,
//!   `subject_token`, …) are replaced by [`REDACTED`], as in a query.
//! * Any other body is read as JSON, leniently and line by line: the string value of a
//!   member named one of [`SECRET_JSON_KEYS`] (compared without regard to ASCII case:
//!   `access_token`, `refresh_token`, `id_token`, `client_secret`, `code_verifier`,
//!   `assertion`, …) becomes `"[redacted]"`, in a token or registration response, and in
//!   an MCP message or SSE event alike. A number, `true` or an object there is left
//!   alone. `code` is not among the JSON names: no OAuth exchange puts the
//!   authorization code in JSON, while many tools take an argument of that name.
//! * An event-stream line `data: URL` whose value is a URL or an absolute path with a
//!   query (the `endpoint` event of the 2024-11-05 HTTP+SSE transport, whose
//!   `sessionId` is the session's only credential) has its secret query values replaced
//!   by [`REDACTED`], as in a request line.
//!
//! All of it takes time linear in the bytes logged.

use std::borrow::Cow;
use std::sync::Arc;

use crate::options::Direction;

/// What a wire log of either [flavour](crate::Flavour) is: called with every line and
/// its direction.
pub trait Sink: FnMut(Direction, &[u8]) {}

impl<T: ?Sized + FnMut(Direction, &[u8])> Sink for T {}

/// Longest line passed to the wire log whole; longer lines are passed in pieces.
pub const MAX_LOG_LINE: usize = 64 * 1024;

/// What stands in for a secret: in the wire log, and in `Debug` output of options.
pub const REDACTED: &str = "[redacted]";

/// Header names (lowercase) whose values never reach the wire log, in either direction.
/// More are secret by [`SECRET_HEADER_PARTS`]; see [the rules](self#secret-headers).
pub const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "mcp-session-id",
];

/// Parts of header names (lowercase): a header whose name contains one is secret,
/// unless it is one of [`CHALLENGE_HEADERS`]; see [the rules](self#secret-headers).
pub const SECRET_HEADER_PARTS: &[&str] = &[
    "auth", "token", "secret", "password", "passwd", "api-key", "apikey", "api_key", "cookie",
    "session",
];

/// Header names (lowercase) that contain a part of [`SECRET_HEADER_PARTS`] but are logged
/// as they are, unless the caller names them: a server's authentication challenge
/// carries no credential, and its `resource_metadata` is what OAuth discovery needs.
pub const CHALLENGE_HEADERS: &[&str] = &["www-authenticate", "proxy-authenticate"];

/// Query parameter names (lowercase) whose values never reach the wire log. More are
/// secret by [`SECRET_PARAM_PARTS`]; see [the rules](self#secret-query-parameters).
pub const SECRET_PARAMS: &[&str] = &["key", "code", "sig", "auth", "pass", "pwd"];

/// Parts of query parameter names (lowercase): a parameter whose name contains one is
/// secret; see [the rules](self#secret-query-parameters).
pub const SECRET_PARAM_PARTS: &[&str] = &[
    "token",
    "secret",
    "verifier",
    "assertion",
    "password",
    "passwd",
    "apikey",
    "api_key",
    "api-key",
    "signature",
    "credential",
    "session",
];

/// Names (lowercase) of the JSON members whose string values never reach the wire log;
/// see [the rules](self#secrets-in-bodies).
pub const SECRET_JSON_KEYS: &[&str] = &[
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "code_verifier",
    "assertion",
    "client_assertion",
    "subject_token",
    "actor_token",
    "registration_access_token",
    "device_code",
];

/// Longest header or query parameter name (in bytes) compared with the lists: a longer
/// one counts as secret.
pub const MAX_CHECKED_NAME: usize = 256;

/// [`REDACTED`] when a secret is set: for `Debug` implementations.
///
/// ```
/// assert_eq!(mcp_io::wire_log::redacted(&Some("Bearer abc")), Some("[redacted]"));
/// assert_eq!(mcp_io::wire_log::redacted::<String>(&None), None);
/// ```
#[must_use]
pub fn redacted<T>(secret: &Option<T>) -> Option<&'static str> {
    secret.as_ref().map(|_| REDACTED)
}

/// Whether `name` (at most [`MAX_CHECKED_NAME`] bytes) is one of `exact` or contains
/// one of `parts`, without regard to ASCII case.
fn listed(name: &[u8], exact: &[&str], parts: &[&str]) -> bool {
    let mut buf = [0; MAX_CHECKED_NAME];
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    let lower = &*lower;
    exact.iter().any(|e| lower == e.as_bytes())
        || parts.iter().any(|p| {
            let p = p.as_bytes();
            lower.windows(p.len()).any(|w| w == p)
        })
}

/// Whether a header of this name is secret: see [the rules](self#secret-headers).
/// `extra` are the names the caller added.
///
/// ```
/// use mcp_io::wire_log::is_secret_header;
///
/// for name in ["Authorization", "mcp-session-id", "X-Api-Key", " X-Auth-Token", "Cookie"] {
///     assert!(is_secret_header(name.as_bytes(), &[]), "{name}");
/// }
/// for name in ["Content-Type", "WWW-Authenticate", "MCP-Protocol-Version", "X-Tenant-Key"] {
///     assert!(!is_secret_header(name.as_bytes(), &[]), "{name}");
/// }
/// assert!(is_secret_header(b"x-tenant-key", &["X-Tenant-Key".to_owned()]));
/// ```
#[must_use]
pub fn is_secret_header(name: &[u8], extra: &[String]) -> bool {
    let name = name.trim_ascii();
    if extra
        .iter()
        .any(|e| name.eq_ignore_ascii_case(e.trim().as_bytes()))
    {
        return true;
    }
    if name.len() > MAX_CHECKED_NAME {
        return true;
    }
    if CHALLENGE_HEADERS
        .iter()
        .any(|c| name.eq_ignore_ascii_case(c.as_bytes()))
    {
        return false;
    }
    listed(name, SECRET_HEADERS, SECRET_HEADER_PARTS)
}

/// Whether a query parameter of this name (as written, `%XX` escapes included) is
/// secret: see [the rules](self#secret-query-parameters).
///
/// ```
/// use mcp_io::wire_log::is_secret_param;
///
/// for name in ["access_token", "API_KEY", "code", "sig", "X-Amz-Signature", "client%5Fsecret"] {
///     assert!(is_secret_param(name.as_bytes()), "{name}");
/// }
/// for name in ["page", "cursor", "keyword", "codec", "format"] {
///     assert!(!is_secret_param(name.as_bytes()), "{name}");
/// }
/// ```
#[must_use]
pub fn is_secret_param(name: &[u8]) -> bool {
    let mut decoded = [0; MAX_CHECKED_NAME];
    let mut len = 0;
    let mut i = 0;
    while i < name.len() {
        let escaped = (name[i] == b'%')
            .then(|| Some((hex(*name.get(i + 1)?)? << 4) | hex(*name.get(i + 2)?)?))
            .flatten();
        let byte = match escaped {
            Some(b) => {
                i += 3;
                b
            }
            None => {
                i += 1;
                name[i - 1]
            }
        };
        if len == MAX_CHECKED_NAME {
            return true;
        }
        decoded[len] = byte;
        len += 1;
    }
    listed(&decoded[..len], SECRET_PARAMS, SECRET_PARAM_PARTS)
}

/// The value of a hexadecimal digit.
fn hex(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// How a head line (without its line end) is logged.
enum HeadLine {
    /// A secret header: its value goes, from the byte after the colon.
    Secret(usize),
    /// A header whose name cannot be told: the first piece of a line too long to log
    /// whole, with no `:` in it.
    Unknown,
    /// Anything else, logged as it is.
    Plain,
}

/// What `line`, the first piece of a header line, is.
fn head_line(line: &[u8], last: bool, extra: &[String]) -> HeadLine {
    match line.iter().position(|&b| b == b':') {
        Some(colon) if is_secret_header(&line[..colon], extra) => HeadLine::Secret(colon),
        Some(_) => HeadLine::Plain,
        None if last => HeadLine::Plain,
        None => HeadLine::Unknown,
    }
}

/// `line` up to and including the colon at `colon`, then [`REDACTED`].
fn hide_value(line: &[u8], colon: usize) -> Vec<u8> {
    let mut out = line[..=colon].to_vec();
    out.push(b' ');
    out.extend_from_slice(REDACTED.as_bytes());
    out
}

/// A header line with its value replaced by [`REDACTED`] when the header is secret (by
/// the built-in [rules](self#secret-headers)); other lines unchanged.
///
/// ```
/// use mcp_io::wire_log::redact_header;
///
/// assert_eq!(&*redact_header(b"Authorization: Bearer abc"), b"Authorization: [redacted]");
/// assert_eq!(&*redact_header(b"set-cookie: a=b"), b"set-cookie: [redacted]");
/// assert_eq!(&*redact_header(b"Mcp-Session-Id: 1868a90c"), b"Mcp-Session-Id: [redacted]");
/// assert_eq!(&*redact_header(b"X-Api-Key: k"), b"X-Api-Key: [redacted]");
/// assert_eq!(&*redact_header(b"Content-Type: x"), b"Content-Type: x");
/// ```
#[must_use]
pub fn redact_header(line: &[u8]) -> Cow<'_, [u8]> {
    match head_line(line, true, &[]) {
        HeadLine::Secret(colon) => hide_value(line, colon).into(),
        _ => line.into(),
    }
}

/// A request line with the values of its secret query parameters replaced by
/// [`REDACTED`]; see [the rules](self#secret-query-parameters).
///
/// ```
/// use mcp_io::wire_log::redact_request_line;
///
/// assert_eq!(
///     redact_request_line(b"GET /mcp?access_token=abc&page=2&API_KEY=k HTTP/1.1"),
///     b"GET /mcp?access_token=[redacted]&page=2&API_KEY=[redacted] HTTP/1.1"
/// );
/// ```
#[must_use]
pub fn redact_request_line(line: &[u8]) -> Vec<u8> {
    Query::default().redact(line)
}

/// Where [`Query`] is in a start line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum At {
    /// The method (or a status line's version), up to the first space.
    #[default]
    Method,
    /// The request target before its query.
    Path,
    /// A query parameter's name.
    Name,
    /// A value shown as it is.
    Value,
    /// A secret value, nothing of which was logged yet.
    Secret,
    /// A secret value after its [`REDACTED`].
    Hidden,
    /// After the request target (the version), or after a `#`.
    Rest,
}

/// Redacts the secret query parameters of a start line as it comes, piece by piece.
#[derive(Debug, Default)]
pub(crate) struct Query {
    at: At,
    /// The current parameter's name as written, up to three times
    /// [`MAX_CHECKED_NAME`] bytes (what at most that many bytes take once escaped).
    name: Vec<u8>,
    /// The name is longer than what `name` holds.
    long: bool,
    /// Each byte of a secret value becomes the next byte of this text (repeated), so
    /// the value keeps its length; `None`: the value becomes [`REDACTED`].
    same_length: Option<&'static [u8]>,
    /// Bytes of the current secret value replaced so far.
    hidden: usize,
}

/// What [`Query`] logs of one byte.
enum Shown {
    /// The byte.
    Byte,
    /// [`REDACTED`], for the first byte of a secret value.
    Redacted,
    /// Nothing: the rest of a secret value.
    Nothing,
}

impl Query {
    /// For a form body: the line starts with a parameter's name.
    pub(crate) fn form() -> Self {
        Query {
            at: At::Name,
            ..Query::default()
        }
    }

    /// For the rest of a URL that starts with its path, each secret value replaced by
    /// `stand_in` repeated to the value's length (bytes framed by a length, a chunk of
    /// a chunked body say, keep their framing).
    pub(crate) fn url_same_length(stand_in: &'static str) -> Self {
        Query {
            at: At::Path,
            same_length: Some(stand_in.as_bytes()),
            ..Query::default()
        }
    }

    /// `piece` as logged, the secret values replaced.
    pub(crate) fn redact(&mut self, piece: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(piece.len());
        for &b in piece {
            let (at, shown) = match (self.at, b) {
                (At::Rest, _) => (At::Rest, Shown::Byte),
                (At::Method, b' ') => (At::Path, Shown::Byte),
                (At::Method, _) => (At::Method, Shown::Byte),
                (_, b' ' | b'#') => (At::Rest, Shown::Byte),
                (At::Path, b'?') => (self.next_param(), Shown::Byte),
                (At::Path, _) => (At::Path, Shown::Byte),
                (_, b'&') => (self.next_param(), Shown::Byte),
                (At::Name, b'=') if self.long || is_secret_param(&self.name) => {
                    (At::Secret, Shown::Byte)
                }
                (At::Name, b'=') => (At::Value, Shown::Byte),
                (At::Name, _) => {
                    if self.name.len() < 3 * MAX_CHECKED_NAME {
                        self.name.push(b);
                    } else {
                        self.long = true;
                    }
                    (At::Name, Shown::Byte)
                }
                (At::Value, _) => (At::Value, Shown::Byte),
                (At::Secret, _) => (At::Hidden, Shown::Redacted),
                (At::Hidden, _) => (At::Hidden, Shown::Nothing),
            };
            self.at = at;
            match (shown, self.same_length) {
                (Shown::Byte, _) => out.push(b),
                (Shown::Redacted | Shown::Nothing, Some(stand_in)) if !stand_in.is_empty() => {
                    out.push(stand_in[self.hidden % stand_in.len()]);
                    self.hidden += 1;
                }
                (Shown::Redacted, _) => out.extend_from_slice(REDACTED.as_bytes()),
                (Shown::Nothing, _) => {}
            }
        }
        out
    }

    /// A parameter starts.
    fn next_param(&mut self) -> At {
        self.name.clear();
        self.long = false;
        self.hidden = 0;
        At::Name
    }
}

/// Hides the string values of [`SECRET_JSON_KEYS`] in a JSON body as it comes, piece by
/// piece. Lenient: it follows strings and colons only, so anything that is not JSON
/// passes unchanged unless it looks like such a member.
#[derive(Debug, Default)]
pub(crate) struct JsonSecrets {
    /// Inside a string.
    in_string: bool,
    /// After a backslash inside a string.
    escaped: bool,
    /// Inside a secret string value: nothing of it is logged.
    hiding: bool,
    /// The current string, up to [`MAX_JSON_KEY`] bytes (a longer one is no secret name).
    key: Vec<u8>,
    /// The current string is longer than that.
    long: bool,
    /// What came after the last string.
    after: AfterString,
}

/// Longest JSON member name, as written, compared with [`SECRET_JSON_KEYS`]: room for
/// the longest of them with every character written as a `\uXXXX` escape.
const MAX_JSON_KEY: usize = 6 * 32;

/// The name a JSON string's text (between its quotes) decodes to, for the comparison
/// with [`SECRET_JSON_KEYS`]: escapes read (`\u005f` is `_`); a character outside ASCII
/// stands as `0xFF`, matching no secret name. Text without a backslash is its own name.
fn json_name(raw: &[u8]) -> Cow<'_, [u8]> {
    if !raw.contains(&b'\\') {
        return Cow::Borrowed(raw);
    }
    let mut name = Vec::with_capacity(raw.len());
    let mut i = 0;
    while let Some(&b) = raw.get(i) {
        i += 1;
        if b != b'\\' {
            name.push(b);
            continue;
        }
        let Some(&e) = raw.get(i) else { break };
        i += 1;
        let decoded = match e {
            b'u' => {
                let code = raw
                    .get(i..i + 4)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u16::from_str_radix(h, 16).ok());
                i += 4;
                code.and_then(|c| u8::try_from(c).ok())
                    .filter(u8::is_ascii)
                    .unwrap_or(0xFF)
            }
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            other => other,
        };
        name.push(decoded);
    }
    Cow::Owned(name)
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum AfterString {
    /// Nothing of note.
    #[default]
    Nothing,
    /// The last string was a secret name.
    SecretName,
    /// A secret name and its colon: a string now is a secret value.
    Colon,
}

impl JsonSecrets {
    /// `piece` as logged; `last` when it ends its line (a JSON string never spans lines,
    /// so one left open ends there).
    pub(crate) fn redact(&mut self, piece: &[u8], last: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(piece.len());
        for &b in piece {
            if self.in_string {
                let closes = !self.escaped && b == b'"';
                if self.escaped {
                    self.escaped = false;
                    self.keep(b);
                } else if b == b'\\' {
                    self.escaped = true;
                    self.keep(b);
                } else if b == b'"' {
                    self.in_string = false;
                    self.after = if !self.hiding
                        && !self.long
                        && is_secret_json_key(&json_name(&self.key))
                    {
                        AfterString::SecretName
                    } else {
                        AfterString::Nothing
                    };
                    self.hiding = false;
                } else {
                    self.keep(b);
                }
                if !self.hiding || closes {
                    out.push(b);
                }
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    self.key.clear();
                    self.long = false;
                    out.push(b);
                    if self.after == AfterString::Colon {
                        self.hiding = true;
                        out.extend_from_slice(REDACTED.as_bytes());
                    }
                    self.after = AfterString::Nothing;
                }
                b':' if self.after == AfterString::SecretName => {
                    self.after = AfterString::Colon;
                    out.push(b);
                }
                b' ' | b'\t' | b'\r' | b'\n' => out.push(b),
                _ => {
                    self.after = AfterString::Nothing;
                    out.push(b);
                }
            }
        }
        if last {
            self.in_string = false;
            self.escaped = false;
            self.hiding = false;
        }
        out
    }

    /// Keeps a byte of the current string, for the name check.
    fn keep(&mut self, b: u8) {
        if self.hiding {
            return;
        }
        if self.key.len() < MAX_JSON_KEY {
            self.key.push(b);
        } else {
            self.long = true;
        }
    }
}

/// Whether a JSON member of this name (as written between the quotes) has a secret
/// value: see [the rules](self#secrets-in-bodies).
///
/// ```
/// use mcp_io::wire_log::is_secret_json_key;
///
/// assert!(is_secret_json_key(b"access_token"));
/// assert!(is_secret_json_key(b"Refresh_Token"));
/// assert!(!is_secret_json_key(b"token_type"));
/// assert!(!is_secret_json_key(b"code"));
/// ```
#[must_use]
pub fn is_secret_json_key(name: &[u8]) -> bool {
    SECRET_JSON_KEYS
        .iter()
        .any(|k| name.eq_ignore_ascii_case(k.as_bytes()))
}

/// Cuts a byte stream into lines of at most [`MAX_LOG_LINE`] bytes.
#[derive(Debug, Default)]
struct Lines {
    /// The line being assembled (never more than `MAX_LOG_LINE` bytes).
    line: Vec<u8>,
    /// Part of the current line was passed on already.
    continued: bool,
    /// The input so far ended with a `\r` not yet in `line`: the next byte tells whether
    /// it ends the line (`\n`) or belongs to it.
    cr: bool,
}

/// One piece handed on by [`Lines`].
struct Piece<'a> {
    bytes: &'a [u8],
    /// The first piece of its line.
    first: bool,
    /// The last piece of its line (the line end was seen, or the stream ended).
    last: bool,
    /// Bytes of the line end that followed it (`\n` 1, `\r\n` 2; 0 when none did), for
    /// following a chunked body's framing.
    ending: usize,
}

impl Lines {
    fn feed(&mut self, mut data: &[u8], emit: &mut dyn FnMut(Piece<'_>)) {
        while !data.is_empty() {
            let (mut chunk, end) = match data.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let chunk = &data[..i];
                    data = &data[i + 1..];
                    (chunk, true)
                }
                None => (std::mem::take(&mut data), false),
            };
            // The `\r` of a `\r\n` is not part of the line, whether it came with this
            // chunk or ended the input before it. One that ends the input is held back,
            // so the line is cut into the same pieces however the bytes arrive.
            let mut held = std::mem::take(&mut self.cr);
            let mut ending = 1;
            if end {
                match chunk.strip_suffix(b"\r") {
                    Some(rest) => {
                        chunk = rest;
                        ending = 2;
                    }
                    None if chunk.is_empty() => {
                        if held {
                            ending = 2;
                        }
                        held = false;
                    }
                    None => {}
                }
            } else if let Some(rest) = chunk.strip_suffix(b"\r") {
                chunk = rest;
                self.cr = true;
            }
            if held {
                self.append(b"\r", emit);
            }
            self.append(chunk, emit);
            if end {
                self.emit(true, ending, emit);
            }
        }
    }

    /// Adds bytes to the current line, passing it on in pieces when it is full.
    fn append(&mut self, mut chunk: &[u8], emit: &mut dyn FnMut(Piece<'_>)) {
        while !chunk.is_empty() {
            // A full line is passed on only when more of it arrives, so that a line of
            // exactly the maximum is one piece.
            if self.line.len() == MAX_LOG_LINE {
                self.emit(false, 0, emit);
            }
            let take = chunk.len().min(MAX_LOG_LINE - self.line.len());
            self.line.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
    }

    /// Passes on what is left of an unfinished line.
    fn finish(&mut self, emit: &mut dyn FnMut(Piece<'_>)) {
        if std::mem::take(&mut self.cr) {
            self.append(b"\r", emit);
        }
        if !self.line.is_empty() {
            self.emit(true, 0, emit);
        }
        self.clear();
    }

    fn emit(&mut self, last: bool, ending: usize, emit: &mut dyn FnMut(Piece<'_>)) {
        emit(Piece {
            bytes: &self.line,
            first: !self.continued,
            last,
            ending,
        });
        self.line.clear();
        self.continued = !last;
    }

    fn clear(&mut self) {
        self.line.clear();
        self.continued = false;
        self.cr = false;
    }
}

/// The wire log of one stream of lines: a stdio server's stdout or stdin.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use mcp_io::wire_log::LineLog;
/// use mcp_io::{Direction, WireLog};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let mut log: Option<WireLog> = Some(Box::new(move |_, line| {
///     sink.lock().unwrap().push(String::from_utf8_lossy(line).into_owned());
/// }));
/// let mut lines = LineLog::new();
/// lines.feed(&mut log, Direction::Received, b"{\"a\":1}\n{\"b\"");
/// lines.feed(&mut log, Direction::Received, b":2}\r\n");
/// assert_eq!(*seen.lock().unwrap(), ["{\"a\":1}", "{\"b\":2}"]);
/// ```
#[derive(Debug, Default)]
pub struct LineLog {
    lines: Lines,
}

impl LineLog {
    /// Nothing logged yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Logs every line `data` completes, keeping an unfinished one for the next call.
    /// Nothing is kept while there is no log.
    pub fn feed<L: ?Sized + Sink>(
        &mut self,
        log: &mut Option<Box<L>>,
        dir: Direction,
        data: &[u8],
    ) {
        match log {
            Some(log) => self.lines.feed(data, &mut |p| log(dir, p.bytes)),
            None => self.lines.clear(),
        }
    }

    /// Logs what is left of an unfinished line (the stream ended) and starts afresh.
    pub fn finish<L: ?Sized + Sink>(&mut self, log: &mut Option<Box<L>>, dir: Direction) {
        match log {
            Some(log) => self.lines.finish(&mut |p| log(dir, p.bytes)),
            None => self.lines.clear(),
        }
    }

    /// Forgets an unfinished line without logging it.
    pub fn clear(&mut self) {
        self.lines.clear();
    }

    /// Logs `data`, a whole message or batch of messages, line by line.
    pub fn whole<L: ?Sized + Sink>(log: &mut Option<Box<L>>, dir: Direction, data: &[u8]) {
        let mut lines = LineLog::new();
        lines.feed(log, dir, data);
        lines.finish(log, dir);
    }
}

/// The wire log of one HTTP message (a request, or a response as it arrives): lines as
/// [`LineLog`] cuts them, with the values of secret headers in the head and of secret
/// query parameters in the request line replaced by [`REDACTED`] (see
/// [the rules](self#secret-headers)). [`finish`](Self::finish) ends the message; the
/// next bytes start a new head (a connection's next exchange).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use mcp_io::wire_log::HttpLog;
/// use mcp_io::{Direction, WireLog};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let mut log: Option<WireLog> = Some(Box::new(move |_, line| {
///     sink.lock().unwrap().push(String::from_utf8_lossy(line).into_owned());
/// }));
/// HttpLog::whole(
///     &mut log,
///     Direction::Sent,
///     b"POST /mcp?access_token=s3cr3t HTTP/1.1\r\nAuthorization: Bearer s3cr3t\r\n\r\n{}",
/// );
/// assert_eq!(
///     *seen.lock().unwrap(),
///     ["POST /mcp?access_token=[redacted] HTTP/1.1", "Authorization: [redacted]", "", "{}"]
/// );
/// ```
#[derive(Debug, Default)]
pub struct HttpLog {
    lines: Lines,
    head: Head,
    /// Bytes went by while there was no log and ended mid-line: the rest of that line
    /// is not logged (it may be part of a secret).
    skip_partial: bool,
}

/// Where an [`HttpLog`] is in its message, and what it hides.
#[derive(Debug, Default)]
struct Head {
    /// The empty line after the head was seen.
    in_body: bool,
    /// The current head line (and its continuation lines) belongs to a secret header.
    hiding: bool,
    /// The first line of the message is over (or went by unseen): head lines are
    /// headers.
    past_start: bool,
    /// The first line is the status line of an interim response (1xx other than 101):
    /// another head follows its head, not a body.
    interim: bool,
    /// The secret query parameters of the first line.
    query: Query,
    /// The header names the caller wants hidden too.
    extra: Arc<[String]>,
    /// What hides the secrets of the body (boxed: most messages never need it, and a
    /// connection's log stays small).
    body: Option<Box<Body>>,
}

/// How a body's secrets are hidden.
#[derive(Debug, Default)]
struct Body {
    /// The head says the body is a form (`application/x-www-form-urlencoded`).
    form: bool,
    /// The secret parameters of a form body's current line.
    form_query: Option<Query>,
    /// The secret members of a JSON body.
    json: JsonSecrets,
    /// The secret query parameters of the URL on the current `data:` line (an HTTP+SSE
    /// `endpoint` event).
    url_query: Option<Query>,
    /// The head says `Transfer-Encoding: chunked`: where the body is in its framing.
    chunked: Option<Chunked>,
}

/// Where a chunked body is in its framing. Its chunk-size lines are shown as they are and
/// kept from the rules of the body, whose data is judged as if it came whole: a secret
/// cut by a chunk boundary, or whose name and value a boundary parts, stays hidden.
#[derive(Debug, Default)]
struct Chunked {
    at: ChunkAt,
    /// The data of the body's current line so far, when chunk boundaries cut it (less
    /// than [`MAX_LOG_LINE`] bytes: a longer one is judged and logged in pieces).
    line: Vec<u8>,
    /// Part of the body's current line was judged and logged already.
    continued: bool,
    /// Lines to log before what the current piece shows.
    flushed: Vec<Vec<u8>>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkAt {
    /// A chunk-size line; its size once read.
    #[default]
    Size,
    /// A chunk-size line whose size was read.
    SizeRead(u64),
    /// This many bytes of chunk data to come.
    Data(u64),
    /// After a chunk's data, up to the line end that closes it.
    DataEnd,
    /// The trailer section, after the last chunk.
    Trailers,
}

impl HttpLog {
    /// At the start of a message, hiding the secret headers of the built-in rules.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// At the start of a message, hiding the headers named in `headers` (compared
    /// without regard to ASCII case) besides those of the built-in rules.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use mcp_io::wire_log::HttpLog;
    /// use mcp_io::{Direction, WireLog};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = seen.clone();
    /// let mut log: Option<WireLog> = Some(Box::new(move |_, line| {
    ///     sink.lock().unwrap().push(String::from_utf8_lossy(line).into_owned());
    /// }));
    /// let mut response = HttpLog::redacting(vec!["X-Tenant-Key".to_owned()]);
    /// response.feed(&mut log, Direction::Received, b"HTTP/1.1 200 OK\r\nx-tenant-key: t1\r\n\r\n");
    /// assert_eq!(seen.lock().unwrap()[1], "x-tenant-key: [redacted]");
    /// ```
    #[must_use]
    pub fn redacting(headers: impl Into<Arc<[String]>>) -> Self {
        HttpLog {
            head: Head {
                extra: headers.into(),
                ..Head::default()
            },
            ..Self::default()
        }
    }

    /// Logs every line `data` completes, keeping an unfinished one for the next call.
    ///
    /// Nothing is kept while there is no log. A log that appears in the middle of a
    /// message starts at the next whole line and takes it for a header line (redacting
    /// what looks like a secret header) until the next empty line: no secret slips
    /// through because the start of the message went unseen.
    pub fn feed<L: ?Sized + Sink>(
        &mut self,
        log: &mut Option<Box<L>>,
        dir: Direction,
        data: &[u8],
    ) {
        let Some(log) = log else {
            self.lines.clear();
            if let Some(&last) = data.last() {
                self.skip_partial = last != b'\n';
            }
            let head = &mut self.head;
            head.in_body = false;
            head.hiding = true;
            head.past_start = true;
            head.interim = false;
            head.query = Query::default();
            return;
        };
        let Self {
            lines,
            head,
            skip_partial,
        } = self;
        lines.feed(data, &mut |p| {
            if *skip_partial {
                *skip_partial = !p.last;
            } else {
                head.log(&p, &mut |line| log(dir, line));
            }
        });
    }

    /// Logs what is left of an unfinished line and ends the message: the next bytes
    /// start a new head.
    pub fn finish<L: ?Sized + Sink>(&mut self, log: &mut Option<Box<L>>, dir: Direction) {
        if let Some(log) = log {
            let Self {
                lines,
                head,
                skip_partial,
            } = self;
            lines.finish(&mut |p| {
                if !*skip_partial {
                    head.log(&p, &mut |line| log(dir, line));
                }
            });
            // A chunked body cut short: the line it left unended ends here.
            if let Some(body) = head.body.as_deref_mut()
                && let Some(mut chunked) = body.chunked.take()
                && let Some(shown) = body.flush(&mut chunked)
            {
                log(dir, &shown);
            }
        }
        self.reset();
    }

    /// Ready for the next message, as new (the extra secret headers kept), without
    /// giving up what it allocated: a connection's log is reset after every exchange.
    fn reset(&mut self) {
        self.lines.clear();
        self.skip_partial = false;
        self.head.reset();
    }

    /// Logs `data`, one whole message (a request as sent).
    pub fn whole<L: ?Sized + Sink>(log: &mut Option<Box<L>>, dir: Direction, data: &[u8]) {
        HttpLog::new().log_whole(log, dir, data);
    }

    /// Logs `data` as one whole message.
    fn log_whole<L: ?Sized + Sink>(
        mut self,
        log: &mut Option<Box<L>>,
        dir: Direction,
        data: &[u8],
    ) {
        self.feed(log, dir, data);
        self.finish(log, dir);
    }
}

impl Head {
    /// At the start of a message (the extra secret headers kept).
    fn reset(&mut self) {
        // Every field named: one added later must be reset here too.
        let Head {
            in_body,
            hiding,
            past_start,
            interim,
            query,
            extra: _,
            body,
        } = self;
        *in_body = false;
        *hiding = false;
        *past_start = false;
        *interim = false;
        *query = Query::default();
        *body = None;
    }

    /// Logs what `piece` shows: a line of a chunked body that ends before it first,
    /// then the piece as [`Head::filter`] shows it.
    fn log(&mut self, piece: &Piece<'_>, log: &mut dyn FnMut(&[u8])) {
        let shown = self.filter(piece);
        if let Some(chunked) = self.body.as_deref_mut().and_then(|b| b.chunked.as_mut()) {
            for line in chunked.flushed.drain(..) {
                log(&line);
            }
        }
        if let Some(shown) = shown {
            log(&shown);
        }
    }

    /// What to log of `piece`, if anything.
    fn filter<'a>(&mut self, piece: &Piece<'a>) -> Option<Cow<'a, [u8]>> {
        if self.in_body {
            return self.body(piece).map(Cow::Owned);
        }
        if !self.past_start {
            if piece.first && piece.last && piece.bytes.is_empty() {
                // An empty line before the start line (RFC 9112, 2.2).
                return Some(piece.bytes.into());
            }
            if piece.first {
                self.interim = is_interim_status(piece.bytes);
            }
            let shown = self.query.redact(piece.bytes);
            if piece.last {
                self.past_start = true;
                self.query = Query::default();
            }
            return Some(shown.into());
        }
        if !piece.first {
            // The rest of a head line too long to log whole.
            return (!self.hiding).then(|| piece.bytes.into());
        }
        if piece.bytes.is_empty() && piece.last {
            if self.interim {
                // An interim response's head is followed by the next head (the HTTP
                // machine skips it), not by a body.
                self.reset();
            } else {
                self.in_body = true;
                self.hiding = false;
            }
            return Some(piece.bytes.into());
        }
        // A line starting with white space continues the previous header (obs-fold).
        let folded = piece
            .bytes
            .first()
            .is_some_and(|b| matches!(b, b' ' | b'\t'));
        if folded && self.hiding {
            return None;
        }
        match head_line(piece.bytes, piece.last, &self.extra) {
            HeadLine::Secret(colon) => {
                self.hiding = true;
                Some(hide_value(piece.bytes, colon).into())
            }
            HeadLine::Unknown => {
                self.hiding = true;
                Some(REDACTED.as_bytes().into())
            }
            HeadLine::Plain => {
                self.hiding = false;
                if is_form_content_type(piece.bytes) {
                    self.body.get_or_insert_default().form = true;
                }
                if is_chunked_transfer_encoding(piece.bytes) {
                    self.body.get_or_insert_default().chunked = Some(Chunked::default());
                }
                Some(piece.bytes.into())
            }
        }
    }

    /// A piece of the body, its secrets hidden (`None`: nothing to log for it yet).
    fn body(&mut self, piece: &Piece<'_>) -> Option<Vec<u8>> {
        let body = self.body.get_or_insert_default();
        match body.chunked.take() {
            Some(mut chunked) => {
                let shown = body.dechunked(&mut chunked, piece);
                body.chunked = Some(chunked);
                shown
            }
            None => Some(body.data(piece)),
        }
    }
}

impl Body {
    /// A piece of a chunked body. Its framing (chunk-size lines, the line ends that close
    /// chunks) is shown as it is; its data is put back together into the lines of the
    /// body, which are judged and logged whole as they end, as if the body came in one
    /// piece: a line cut by a chunk boundary is logged where it ends, after the size
    /// line that cut it, and [`Chunked::flushed`] takes the lines to log before what
    /// `piece` shows.
    fn dechunked(&mut self, chunked: &mut Chunked, piece: &Piece<'_>) -> Option<Vec<u8>> {
        let bytes = piece.bytes;
        match chunked.at {
            ChunkAt::Size | ChunkAt::SizeRead(_) => {
                if piece.first {
                    chunked.at = match chunk_size(bytes) {
                        Some(size) => ChunkAt::SizeRead(size),
                        // Not a size: the framing is no longer followed, and what comes
                        // is judged line by line as a body.
                        None => ChunkAt::Trailers,
                    };
                }
                if chunked.at == ChunkAt::Trailers {
                    let line = self.flush(chunked);
                    chunked.flushed.extend(line);
                    return Some(self.data(piece));
                }
                if piece.last {
                    chunked.at = match chunked.at {
                        ChunkAt::SizeRead(0) => {
                            // The last chunk: a line the body left unended ends here.
                            let line = self.flush(chunked);
                            chunked.flushed.extend(line);
                            ChunkAt::Trailers
                        }
                        ChunkAt::SizeRead(size) => ChunkAt::Data(size),
                        other => other,
                    };
                }
                Some(bytes.to_vec())
            }
            ChunkAt::Data(left) => {
                let len = bytes.len() as u64;
                let ending = piece.ending as u64;
                let split = usize::try_from(left.min(len)).unwrap_or(bytes.len());
                let (data, rest) = bytes.split_at(split);
                // The line end after the piece is the body's when the data goes on past
                // it; when the data ends with the piece, it is the one closing the chunk.
                let line_ends = piece.last && len < left && len + ending <= left;
                chunked.at = if line_ends {
                    match left - len - ending {
                        0 => ChunkAt::DataEnd,
                        more => ChunkAt::Data(more),
                    }
                } else if len < left && !piece.last {
                    ChunkAt::Data(left - len)
                } else if piece.last {
                    ChunkAt::Size
                } else {
                    ChunkAt::DataEnd
                };
                chunked.line.extend_from_slice(data);
                if chunked.line.len() > MAX_LOG_LINE {
                    // Longer than a log line holds: its first part is judged and logged
                    // now, in a piece of the most a log line holds, as `Lines` does.
                    let line = std::mem::take(&mut chunked.line);
                    let (head, tail) = line.split_at(MAX_LOG_LINE);
                    let shown = self.data(&Piece {
                        bytes: head,
                        first: !chunked.continued,
                        last: false,
                        ending: 0,
                    });
                    chunked.flushed.push(shown);
                    chunked.continued = true;
                    chunked.line = tail.to_vec();
                }
                let mut shown = None;
                if line_ends {
                    let line = std::mem::take(&mut chunked.line);
                    shown = Some(self.data(&Piece {
                        bytes: &line,
                        first: !chunked.continued,
                        last: true,
                        ending: 0,
                    }));
                    chunked.continued = false;
                    chunked.line = line;
                    chunked.line.clear();
                }
                if !rest.is_empty() {
                    // Bytes between a chunk's data and its line end (not HTTP): shown
                    // as they are, on a line of their own.
                    chunked.flushed.extend(shown.take());
                    shown = Some(rest.to_vec());
                }
                shown
            }
            ChunkAt::DataEnd => {
                if piece.last {
                    chunked.at = ChunkAt::Size;
                }
                Some(bytes.to_vec())
            }
            ChunkAt::Trailers => Some(self.data(piece)),
        }
    }

    /// The line of the body a chunk boundary left unended, judged as ending here.
    fn flush(&mut self, chunked: &mut Chunked) -> Option<Vec<u8>> {
        if chunked.line.is_empty() && !chunked.continued {
            return None;
        }
        let line = std::mem::take(&mut chunked.line);
        let shown = self.data(&Piece {
            bytes: &line,
            first: !chunked.continued,
            last: true,
            ending: 0,
        });
        chunked.continued = false;
        Some(shown)
    }

    /// A piece of body data (a whole body, or the data of a chunked one), its secrets
    /// hidden.
    fn data(&mut self, piece: &Piece<'_>) -> Vec<u8> {
        let body = self;
        if piece.first
            && !body.form
            && let Some(start) = url_data_start(piece.bytes)
        {
            let mut query = Query {
                at: At::Path,
                ..Query::default()
            };
            let mut shown = piece.bytes[..start].to_vec();
            shown.extend(query.redact(&piece.bytes[start..]));
            body.url_query = (!piece.last).then_some(query);
            return shown;
        }
        if !piece.first
            && let Some(query) = &mut body.url_query
        {
            let shown = query.redact(piece.bytes);
            if piece.last {
                body.url_query = None;
            }
            return shown;
        }
        if !body.form {
            // An event's data may go on over several `data:` lines (joined by a line
            // end, white space to JSON): the prefix is no JSON, and must not make the
            // scan forget a secret member whose value is on the next line.
            let prefix = match piece.bytes.strip_prefix(b"data:") {
                Some(_) if piece.first => b"data:".len(),
                _ => 0,
            };
            let mut shown = piece.bytes[..prefix].to_vec();
            shown.extend(body.json.redact(&piece.bytes[prefix..], piece.last));
            return shown;
        }
        let query = body.form_query.get_or_insert_with(Query::form);
        let shown = query.redact(piece.bytes);
        if piece.last {
            body.form_query = None;
        }
        shown
    }
}

/// The size a chunk-size line declares (hex digits, then extensions), or `None` when it
/// is no such line.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let rest = line[digits..].trim_ascii_start();
    if digits == 0 || digits > 16 || !(rest.is_empty() || rest.starts_with(b";")) {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(&line[..digits]).ok()?, 16).ok()
}

/// Whether a head line is `Transfer-Encoding` ending with `chunked`.
pub(crate) fn is_chunked_transfer_encoding(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return false;
    };
    let name = line[..colon].trim_ascii();
    name.eq_ignore_ascii_case(b"transfer-encoding")
        && line[colon + 1..]
            .rsplit(|&b| b == b',')
            .next()
            .is_some_and(|coding| coding.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

/// Whether a start line is the status line of an interim response (1xx other than 101,
/// which switches protocols).
fn is_interim_status(line: &[u8]) -> bool {
    let status = line.strip_prefix(b"HTTP/").and_then(|rest| {
        let space = rest.iter().position(|&b| b == b' ')?;
        rest.get(space + 1..space + 4)
    });
    matches!(status, Some([b'1', d1, d2]) if [*d1, *d2] != *b"01")
}

/// Where the URL starts on an event-stream line `data: URL` whose value is a URL or an
/// absolute path (the `endpoint` event of the 2024-11-05 HTTP+SSE transport, which
/// carries the session in its query), not JSON.
fn url_data_start(line: &[u8]) -> Option<usize> {
    let rest = line.strip_prefix(b"data:")?;
    let spaces = rest.iter().take_while(|&&b| b == b' ').count();
    let value = &rest[spaces..];
    let url_like = value.starts_with(b"/")
        || value.starts_with(b"?")
        || value
            .iter()
            .position(|&b| b == b':')
            .is_some_and(|i| i > 0 && value[..i].iter().all(u8::is_ascii_alphabetic));
    (url_like && value.contains(&b'?')).then_some(5 + spaces)
}

/// Whether a head line is `Content-Type: application/x-www-form-urlencoded` (any case,
/// parameters allowed).
pub(crate) fn is_form_content_type(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return false;
    };
    let name = line[..colon].trim_ascii();
    let value = line[colon + 1..].trim_ascii();
    name.eq_ignore_ascii_case(b"content-type")
        && value.split(|&b| b == b';').next().is_some_and(|v| {
            v.trim_ascii()
                .eq_ignore_ascii_case(b"application/x-www-form-urlencoded")
        })
}

/// The wire log of one byte channel, as both adapters keep it: an HTTP connection
/// (requests logged whole as they are written, responses as they arrive, through
/// [`HttpLog`]) or a stdio server's pipes (lines both ways, through [`LineLog`]).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use mcp_io::wire_log::ChannelLog;
/// use mcp_io::{Direction, WireLog};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let mut log: Option<WireLog> = Some(Box::new(move |dir, line| {
///     sink.lock().unwrap().push((dir, String::from_utf8_lossy(line).into_owned()));
/// }));
/// let mut conn = ChannelLog::http();
/// conn.sent(&mut log, b"POST /mcp HTTP/1.1\r\n\r\n");
/// conn.received(&mut log, b"HTTP/1.1 202 Accepted\r\n\r\n");
/// conn.finish(&mut log);
/// assert_eq!(seen.lock().unwrap().len(), 4);
/// assert_eq!(seen.lock().unwrap()[2], (Direction::Received, "HTTP/1.1 202 Accepted".into()));
/// ```
#[derive(Debug)]
pub enum ChannelLog {
    /// An HTTP connection; what it has received of the current response.
    Http(HttpLog),
    /// A stdio server's pipes; what its stdout has sent of the current line.
    Lines(LineLog),
}

impl ChannelLog {
    /// The log of an HTTP connection, hiding the secret headers of the built-in rules.
    #[must_use]
    pub fn http() -> Self {
        ChannelLog::Http(HttpLog::new())
    }

    /// The log of an HTTP connection, hiding the headers named in `headers` (compared
    /// without regard to ASCII case) besides those of the built-in rules, both ways.
    #[must_use]
    pub fn http_redacting(headers: impl Into<Arc<[String]>>) -> Self {
        ChannelLog::Http(HttpLog::redacting(headers))
    }

    /// The log of a stdio server's pipes.
    #[must_use]
    pub fn lines() -> Self {
        ChannelLog::Lines(LineLog::new())
    }

    /// Logs `bytes` written on the channel: stdio lines, or an HTTP request, which is
    /// written only once the response before it on the connection is over (its log ends
    /// here: the next bytes received start a new message).
    pub fn sent<L: ?Sized + Sink>(&mut self, log: &mut Option<Box<L>>, bytes: &[u8]) {
        match self {
            ChannelLog::Http(received) => {
                received.finish(log, Direction::Received);
                // Without a log there is nothing to cut into lines.
                if log.is_some() {
                    let request = HttpLog::redacting(Arc::clone(&received.head.extra));
                    request.log_whole(log, Direction::Sent, bytes);
                }
            }
            ChannelLog::Lines(_) if log.is_some() => LineLog::whole(log, Direction::Sent, bytes),
            ChannelLog::Lines(_) => {}
        }
    }

    /// Logs `bytes` read from the channel.
    pub fn received<L: ?Sized + Sink>(&mut self, log: &mut Option<Box<L>>, bytes: &[u8]) {
        match self {
            ChannelLog::Http(received) => received.feed(log, Direction::Received, bytes),
            ChannelLog::Lines(received) => received.feed(log, Direction::Received, bytes),
        }
    }

    /// What was received is over (a complete response, the end of the channel): logs what
    /// is left of an unfinished line.
    pub fn finish<L: ?Sized + Sink>(&mut self, log: &mut Option<Box<L>>) {
        match self {
            ChannelLog::Http(received) => received.finish(log, Direction::Received),
            ChannelLog::Lines(received) => received.finish(log, Direction::Received),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WireLog;
    use std::sync::{Arc, Mutex};

    type Seen = Arc<Mutex<Vec<(Direction, Vec<u8>)>>>;

    fn recorder() -> (Option<WireLog>, Seen) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let log: WireLog =
            Box::new(move |dir, line| sink.lock().unwrap().push((dir, line.to_vec())));
        (Some(log), seen)
    }

    fn texts(seen: &Mutex<Vec<(Direction, Vec<u8>)>>) -> Vec<String> {
        seen.lock()
            .unwrap()
            .iter()
            .map(|(_, l)| String::from_utf8_lossy(l).into_owned())
            .collect()
    }

    #[test]
    fn lines_are_split_across_chunks_and_long_lines_come_in_pieces() {
        let (mut log, seen) = recorder();
        let rx = Direction::Received;
        let mut lines = LineLog::new();
        lines.feed(&mut log, rx, b"{\"a\":1}\n{\"b\"");
        lines.feed(&mut log, rx, b":2}\r\n");
        lines.feed(&mut log, rx, b"\n");
        assert_eq!(texts(&seen), ["{\"a\":1}", "{\"b\":2}", ""]);
        seen.lock().unwrap().clear();

        let long = vec![b'x'; MAX_LOG_LINE * 2 + 5];
        lines.feed(&mut log, rx, &long);
        assert_eq!(seen.lock().unwrap().len(), 2);
        lines.finish(&mut log, rx);
        let seen = seen.lock().unwrap();
        let sizes: Vec<usize> = seen.iter().map(|(_, l)| l.len()).collect();
        assert_eq!(sizes, [MAX_LOG_LINE, MAX_LOG_LINE, 5]);
        assert!(seen.iter().all(|(d, _)| *d == rx));
    }

    #[test]
    fn a_line_of_exactly_the_maximum_is_one_piece() {
        let (mut log, seen) = recorder();
        let mut line = vec![b'y'; MAX_LOG_LINE];
        line.extend_from_slice(b"\r\n");
        LineLog::whole(&mut log, Direction::Sent, &line);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].1.len(), MAX_LOG_LINE);
    }

    #[test]
    fn lines_do_not_depend_on_where_a_crlf_is_split() {
        let run = |pieces: &[&[u8]]| {
            let (mut log, seen) = recorder();
            let mut lines = LineLog::new();
            for p in pieces {
                lines.feed(&mut log, Direction::Received, p);
            }
            lines.finish(&mut log, Direction::Received);
            let seen = seen.lock().unwrap();
            seen.iter().map(|(_, l)| l.clone()).collect::<Vec<_>>()
        };
        // A line of exactly the maximum, its `\r\n` split: one piece, not the line and
        // an empty one.
        let mut full = vec![b'y'; MAX_LOG_LINE];
        full.extend_from_slice(b"\r\nz\r");
        let whole = run(&[&full]);
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[0].len(), MAX_LOG_LINE);
        assert_eq!(whole[1], b"z\r");
        for at in 0..full.len() {
            let (a, b) = full.split_at(at);
            if at < MAX_LOG_LINE - 2 {
                continue;
            }
            assert_eq!(run(&[a, b]), whole, "split at {at}");
        }
        // A `\r` that is not before a `\n` stays in the line, however it arrives.
        let text = b"a\rb\r\r\nc\r\n\r";
        let whole = run(&[text]);
        assert_eq!(whole, [&b"a\rb\r"[..], b"c", b"\r"]);
        for at in 0..=text.len() {
            let (a, b) = text.split_at(at);
            assert_eq!(run(&[a, b]), whole, "split at {at}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(run(&bytes), whole);
    }

    #[test]
    fn no_log_keeps_nothing() {
        let mut log: Option<WireLog> = None;
        let mut lines = LineLog::new();
        lines.feed(&mut log, Direction::Received, b"partial");
        let (mut log, seen) = recorder();
        lines.feed(&mut log, Direction::Received, b" line\n");
        assert_eq!(texts(&seen), [" line"]);
    }

    #[test]
    fn requests_hide_every_secret_header() {
        let (mut log, seen) = recorder();
        HttpLog::whole(
            &mut log,
            Direction::Sent,
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nauthorization: Bearer s3cr3t\r\n\
              Proxy-Authorization : Basic abc\r\nCookie: a=b\r\nContent-Length: 2\r\n\r\n{}",
        );
        assert_eq!(
            texts(&seen),
            [
                "POST /mcp HTTP/1.1",
                "Host: x",
                "authorization: [redacted]",
                "Proxy-Authorization : [redacted]",
                "Cookie: [redacted]",
                "Content-Length: 2",
                "",
                "{}",
            ]
        );
    }

    #[test]
    fn responses_hide_set_cookie_in_the_head_only() {
        let (mut log, seen) = recorder();
        let rx = Direction::Received;
        let mut response = HttpLog::new();
        response.feed(&mut log, rx, b"HTTP/1.1 200 OK\r\nSet-Cookie: id=");
        response.feed(&mut log, rx, b"42\r\n\tmore=1\r\nX: y\r\n\r\n");
        response.feed(&mut log, rx, b"data: {\"set-cookie: no\"}\n\n");
        response.finish(&mut log, rx);
        // The next exchange on the connection starts with a head again.
        response.feed(
            &mut log,
            rx,
            b"HTTP/1.1 202 Accepted\r\nSet-Cookie: b=2\r\n\r\n",
        );
        assert_eq!(
            texts(&seen),
            [
                "HTTP/1.1 200 OK",
                "Set-Cookie: [redacted]",
                "X: y",
                "",
                "data: {\"set-cookie: no\"}",
                "",
                "HTTP/1.1 202 Accepted",
                "Set-Cookie: [redacted]",
                "",
            ]
        );
    }

    #[test]
    fn a_secret_too_long_for_one_line_stays_hidden() {
        let (mut log, seen) = recorder();
        let mut head = b"GET / HTTP/1.1\r\nAuthorization: Bearer ".to_vec();
        head.extend(std::iter::repeat_n(b's', MAX_LOG_LINE * 2));
        head.extend_from_slice(b"\r\nHost: x\r\n\r\n");
        HttpLog::whole(&mut log, Direction::Sent, &head);
        assert_eq!(
            texts(&seen),
            ["GET / HTTP/1.1", "Authorization: [redacted]", "Host: x", ""]
        );
    }

    #[test]
    fn a_log_set_mid_message_still_sees_no_secret() {
        let mut none: Option<WireLog> = None;
        let mut response = HttpLog::new();
        response.feed(&mut none, Direction::Received, b"HTTP/1.1 200 OK\r\nSet-Co");
        let (mut log, seen) = recorder();
        response.feed(&mut log, Direction::Received, b"okie: a=b\r\n\r\n");
        // The piece before the log existed is not logged; the header is still hidden.
        assert!(texts(&seen).iter().all(|l| !l.contains("a=b")));
    }

    /// The lines `message` is logged as, sent whole.
    fn sent(message: &[u8]) -> Vec<String> {
        let (mut log, seen) = recorder();
        HttpLog::whole(&mut log, Direction::Sent, message);
        texts(&seen)
    }

    /// The lines `message` is logged as, received one byte at a time.
    fn received_bytewise(mut log: HttpLog, message: &[u8]) -> Vec<String> {
        let (mut sink, seen) = recorder();
        for b in message {
            log.feed(&mut sink, Direction::Received, std::slice::from_ref(b));
        }
        log.finish(&mut sink, Direction::Received);
        texts(&seen)
    }

    #[test]
    fn the_session_id_is_hidden_both_ways() {
        let lines = sent(b"DELETE /mcp HTTP/1.1\r\nMcp-Session-Id: 1868a90c\r\n\r\n");
        assert_eq!(
            lines,
            ["DELETE /mcp HTTP/1.1", "Mcp-Session-Id: [redacted]", ""]
        );
        let (mut log, seen) = recorder();
        let mut response = HttpLog::new();
        response.feed(
            &mut log,
            Direction::Received,
            b"HTTP/1.1 200 OK\r\nmcp-session-id: 1868a90c\r\n\r\n",
        );
        assert_eq!(
            texts(&seen),
            ["HTTP/1.1 200 OK", "mcp-session-id: [redacted]", ""]
        );
    }

    #[test]
    fn the_http_sse_endpoint_event_hides_its_session() {
        let message = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
            event: endpoint\ndata: /message?sessionId=5f2a&x=1\n\n\
            event: endpoint\ndata:http://127.0.0.1:9/m?session_id=ab#f\n\n\
            event: message\ndata: {\"id\":1,\"result\":{\"u\":\"/a?session=keep\"}}\n\n";
        let expected = [
            "HTTP/1.1 200 OK",
            "Content-Type: text/event-stream",
            "",
            "event: endpoint",
            "data: /message?sessionId=[redacted]&x=1",
            "",
            "event: endpoint",
            "data:http://127.0.0.1:9/m?session_id=[redacted]#f",
            "",
            "event: message",
            "data: {\"id\":1,\"result\":{\"u\":\"/a?session=keep\"}}",
            "",
        ];
        assert_eq!(received_bytewise(HttpLog::new(), message), expected);
        let (mut sink, seen) = recorder();
        HttpLog::whole(&mut sink, Direction::Received, message);
        assert_eq!(texts(&seen), expected);
    }

    #[test]
    fn headers_named_like_credentials_are_hidden() {
        let lines = sent(
            b"POST /mcp HTTP/1.1\r\nX-Api-Key: k1\r\nX-APIKEY: k2\r\napi_key: k3\r\n\
              X-Auth-Token: k4\r\nX-Amz-Security-Token: k5\r\nClient-Secret: k6\r\n\
              X-Password: k7\r\nX-Session: k8\r\nCookie2: k9\r\nX-Authorization-Extra: k10\r\n\
              Content-Type: application/json\r\nAccept: text/event-stream\r\n\
              MCP-Protocol-Version: 2025-11-25\r\n\r\n{\"token\": \"body\"}",
        );
        assert_eq!(
            lines,
            [
                "POST /mcp HTTP/1.1",
                "X-Api-Key: [redacted]",
                "X-APIKEY: [redacted]",
                "api_key: [redacted]",
                "X-Auth-Token: [redacted]",
                "X-Amz-Security-Token: [redacted]",
                "Client-Secret: [redacted]",
                "X-Password: [redacted]",
                "X-Session: [redacted]",
                "Cookie2: [redacted]",
                "X-Authorization-Extra: [redacted]",
                "Content-Type: application/json",
                "Accept: text/event-stream",
                "MCP-Protocol-Version: 2025-11-25",
                "",
                "{\"token\": \"body\"}",
            ]
        );
    }

    #[test]
    fn challenges_are_shown() {
        let challenge = "WWW-Authenticate: Bearer resource_metadata=\"https://x/.well-known\"";
        let (mut log, seen) = recorder();
        let mut response = HttpLog::new();
        let head = format!(
            "HTTP/1.1 401 Unauthorized\r\n{challenge}\r\nProxy-Authenticate: Basic\r\n\r\n"
        );
        response.feed(&mut log, Direction::Received, head.as_bytes());
        assert_eq!(
            texts(&seen),
            [
                "HTTP/1.1 401 Unauthorized",
                challenge,
                "Proxy-Authenticate: Basic",
                ""
            ]
        );
        // Unless the caller names one.
        let named = HttpLog::redacting(vec!["www-authenticate".to_owned()]);
        let lines = received_bytewise(named, head.as_bytes());
        assert_eq!(lines[1], "WWW-Authenticate: [redacted]");
    }

    #[test]
    fn a_secret_header_split_across_reads_stays_hidden() {
        let head: &[u8] = b"HTTP/1.1 200 OK\r\nMcp-Session-Id: 1868a90c\r\n\
                            X-Api-Key: k1\r\n\tfolded-k1\r\nContent-Length: 2\r\n\r\n{}";
        let expected = [
            "HTTP/1.1 200 OK",
            "Mcp-Session-Id: [redacted]",
            "X-Api-Key: [redacted]",
            "Content-Length: 2",
            "",
            "{}",
        ];
        assert_eq!(received_bytewise(HttpLog::new(), head), expected);
        // Cut inside the name, inside the value, and between `\r` and `\n`.
        for cut in [20, 28, 36, 42, 44] {
            let (mut log, seen) = recorder();
            let mut response = HttpLog::new();
            response.feed(&mut log, Direction::Received, &head[..cut]);
            response.feed(&mut log, Direction::Received, &head[cut..]);
            response.finish(&mut log, Direction::Received);
            assert_eq!(texts(&seen), expected, "cut at {cut}");
        }
    }

    #[test]
    fn headers_the_caller_names_are_hidden_both_ways_for_every_exchange() {
        let (mut log, seen) = recorder();
        let mut conn = ChannelLog::http_redacting(vec![" X-Tenant-Key ".to_owned()]);
        for _ in 0..2 {
            conn.sent(
                &mut log,
                b"POST /mcp HTTP/1.1\r\nx-tenant-key: t1\r\nX-Tenant: t2\r\n\r\n{}",
            );
            conn.received(&mut log, b"HTTP/1.1 200 OK\r\nX-TENANT-KEY: t");
            conn.received(&mut log, b"3\r\n\r\n{}");
            conn.finish(&mut log);
        }
        let lines = texts(&seen);
        let once = [
            "POST /mcp HTTP/1.1",
            "x-tenant-key: [redacted]",
            "X-Tenant: t2",
            "",
            "{}",
            "HTTP/1.1 200 OK",
            "X-TENANT-KEY: [redacted]",
            "",
            "{}",
        ];
        assert_eq!(lines, [once, once].concat());
        // Without the name, the header is not one of the built-in secrets.
        assert!(!is_secret_header(b"X-Tenant-Key", &[]));
    }

    #[test]
    fn secret_query_parameters_are_hidden_in_the_request_line() {
        let lines = sent(
            b"GET /mcp?access_token=t1&page=2&API_KEY=k1&apikey=k2&key=k3&secret=s1&\
              password=p1&sig=s2&signature=s3&code=c1&x-amz-signature=s4&client%5Fsecret=s5&\
              empty=&token&keyword=rust&codec=h264&session_id=s6 HTTP/1.1\r\n\
              Referer: /x?page=1\r\n\r\n",
        );
        assert_eq!(
            lines,
            [
                "GET /mcp?access_token=[redacted]&page=2&API_KEY=[redacted]&apikey=[redacted]&\
                 key=[redacted]&secret=[redacted]&password=[redacted]&sig=[redacted]&\
                 signature=[redacted]&code=[redacted]&x-amz-signature=[redacted]&\
                 client%5Fsecret=[redacted]&empty=&token&keyword=rust&codec=h264&\
                 session_id=[redacted] HTTP/1.1",
                "Referer: /x?page=1",
                "",
            ]
        );
        // Only the query: not the path, not a fragment, not the version.
        assert_eq!(
            redact_request_line(b"GET /token=a/b?x=1&code=abc=def#code=c HTTP/1.1"),
            b"GET /token=a/b?x=1&code=[redacted]#code=c HTTP/1.1"
        );
        // A status line has no query.
        assert_eq!(redact_request_line(b"HTTP/1.1 200 OK"), b"HTTP/1.1 200 OK");
    }

    #[test]
    fn a_request_line_split_across_reads_keeps_its_secrets_hidden() {
        let line: &[u8] = b"POST /mcp?page=1&access_token=s3cr3t&x=2 HTTP/1.1\r\n\r\n";
        let expected = ["POST /mcp?page=1&access_token=[redacted]&x=2 HTTP/1.1", ""];
        assert_eq!(received_bytewise(HttpLog::new(), line), expected);
    }

    #[test]
    fn a_request_line_too_long_for_one_piece_keeps_its_secrets_hidden() {
        // The first piece ends inside the name `access_token`, the second inside its
        // value.
        let mut line = b"GET /mcp?pad=".to_vec();
        line.resize(MAX_LOG_LINE - "&access_to".len(), b'p');
        line.extend_from_slice(b"&access_token=");
        line.extend(std::iter::repeat_n(b's', MAX_LOG_LINE * 2));
        line.extend_from_slice(b"&after=1 HTTP/1.1\r\nHost: x\r\n\r\n");
        let (mut log, seen) = recorder();
        HttpLog::whole(&mut log, Direction::Sent, &line);
        let lines = texts(&seen);
        assert!(lines.iter().all(|l| !l.contains("sss")), "the token leaked");
        let joined: String = lines[..lines.len() - 2].concat();
        assert!(
            joined.ends_with("&access_token=[redacted]&after=1 HTTP/1.1"),
            "{}",
            &joined[joined.len() - 60..]
        );
        assert_eq!(lines[lines.len() - 2..], ["Host: x", ""]);
    }

    #[test]
    fn names_too_long_to_check_count_as_secret() {
        let long = "X-".to_owned() + &"a".repeat(MAX_CHECKED_NAME);
        assert!(is_secret_header(long.as_bytes(), &[]));
        let param = "a".repeat(MAX_CHECKED_NAME + 1);
        assert!(is_secret_param(param.as_bytes()));
        assert!(!is_secret_param("a".repeat(MAX_CHECKED_NAME).as_bytes()));
        // Escaped, the same name takes three times the bytes.
        assert!(!is_secret_param("%61".repeat(MAX_CHECKED_NAME).as_bytes()));
        let line = format!("GET /?{}=v HTTP/1.1", "%61".repeat(MAX_CHECKED_NAME + 1));
        assert!(redact_request_line(line.as_bytes()).ends_with(b"=[redacted] HTTP/1.1"));
        // A header line whose first piece holds no colon is hidden whole.
        let mut head = b"GET / HTTP/1.1\r\n".to_vec();
        head.extend(std::iter::repeat_n(b'n', MAX_LOG_LINE + 10));
        head.extend_from_slice(b": value\r\nHost: x\r\n\r\n");
        assert_eq!(sent(&head), ["GET / HTTP/1.1", "[redacted]", "Host: x", ""]);
    }

    #[test]
    fn oauth_secrets_in_form_bodies_are_hidden() {
        let lines = sent(
            b"POST /token HTTP/1.1\r\nContent-Type: Application/X-WWW-Form-Urlencoded; charset=utf-8\r\n\r\n\
              grant_type=authorization_code&code=c0de&code_verifier=v3r&redirect_uri=http%3A%2F%2F127.0.0.1\
              &client_id=c1&client_secret=s3c&resource=r&refresh_token=rt&assertion=a1&\
              client_assertion=a2&subject_token=st",
        );
        assert_eq!(
            lines[3],
            "grant_type=authorization_code&code=[redacted]&code_verifier=[redacted]&\
             redirect_uri=http%3A%2F%2F127.0.0.1&client_id=c1&client_secret=[redacted]&resource=r&\
             refresh_token=[redacted]&assertion=[redacted]&client_assertion=[redacted]&\
             subject_token=[redacted]"
        );
        // Revocation: `token` itself.
        let lines = sent(
            b"POST /revoke HTTP/1.1\r\ncontent-type: application/x-www-form-urlencoded\r\n\r\n\
              token=rt1&token_type_hint=refresh_token",
        );
        assert_eq!(lines[3], "token=[redacted]&token_type_hint=[redacted]");
    }

    #[test]
    fn oauth_secrets_in_json_bodies_are_hidden() {
        let response: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n\
            {\"access_token\":\"at\\\"1\",\"token_type\":\"Bearer\",\"expires_in\":3600,\
            \"Refresh_Token\" : \"rt1\",\"id_token\":\"it\",\"scope\":\"a b\"}\n\
            {\"client_id\":\"c1\",\"client_secret\":\"s3c\",\"client_secret_expires_at\":0}\n\
            {\"access_token\":\n  \"split-across-lines\"}\n\
            {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32600,\"message\":\"access_token\"}}\n\
            [\"access_token\", \"shown\"]";
        let expected = [
            "HTTP/1.1 200 OK",
            "Content-Type: application/json",
            "",
            "{\"access_token\":\"[redacted]\",\"token_type\":\"Bearer\",\"expires_in\":3600,\
             \"Refresh_Token\" : \"[redacted]\",\"id_token\":\"[redacted]\",\"scope\":\"a b\"}",
            "{\"client_id\":\"c1\",\"client_secret\":\"[redacted]\",\"client_secret_expires_at\":0}",
            "{\"access_token\":",
            "  \"[redacted]\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32600,\"message\":\"access_token\"}}",
            "[\"access_token\", \"shown\"]",
        ];
        assert_eq!(received_bytewise(HttpLog::new(), response), expected);
        let (mut log, seen) = recorder();
        let mut whole = HttpLog::new();
        whole.feed(&mut log, Direction::Received, response);
        whole.finish(&mut log, Direction::Received);
        assert_eq!(texts(&seen), expected);
        // A request too (a JWT bearer grant sent as JSON), and an SSE event.
        let lines = sent(b"POST /x HTTP/1.1\r\n\r\ndata: {\"assertion\": \"eyJ\"}");
        assert_eq!(lines[2], "data: {\"assertion\": \"[redacted]\"}");
        // A tool argument named `code` stays visible.
        let lines = sent(b"POST /mcp HTTP/1.1\r\n\r\n{\"arguments\":{\"code\":\"print(1)\"}}");
        assert_eq!(lines[2], "{\"arguments\":{\"code\":\"print(1)\"}}");
    }

    #[test]
    fn a_secret_json_value_longer_than_a_line_piece_stays_hidden() {
        let mut body = b"HTTP/1.1 200 OK\r\n\r\n{\"access_token\":\"".to_vec();
        body.extend(std::iter::repeat_n(b's', MAX_LOG_LINE * 2));
        body.extend_from_slice(b"\",\"x\":1}");
        let lines = received_bytewise(HttpLog::new(), &body);
        assert!(lines.iter().all(|l| !l.contains("sss")), "the token leaked");
        assert_eq!(
            lines.concat(),
            "HTTP/1.1 200 OK{\"access_token\":\"[redacted]\",\"x\":1}"
        );
    }

    #[test]
    fn redaction_takes_linear_time() {
        // Many parameters and headers, fed in small reads: quadratic work would take
        // minutes here.
        let mut message = b"GET /?".to_vec();
        for i in 0..200_000 {
            message.extend_from_slice(if i % 2 == 0 { b"token=ab&" } else { b"x=1&" });
        }
        message.extend_from_slice(b" HTTP/1.1\r\n");
        for _ in 0..20_000 {
            message.extend_from_slice(b"X-Api-Key: k\r\nA: b\r\n");
        }
        message.extend_from_slice(b"\r\n");
        let (mut log, seen) = recorder();
        let mut request = HttpLog::new();
        for chunk in message.chunks(7) {
            request.feed(&mut log, Direction::Sent, chunk);
        }
        request.finish(&mut log, Direction::Sent);
        assert!(
            texts(&seen)
                .iter()
                .all(|l| !l.contains("=ab") && !l.contains(": k"))
        );
    }
}
