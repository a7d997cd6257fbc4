//! Which headers, query parameters and JSON members are secret (the rules of
//! [the module](super#secret-headers)), and the redactors that hide their values: a
//! header line, a request line or query ([`Query`]), and JSON read leniently as it
//! streams ([`JsonSecrets`]).

use std::borrow::Cow;

use super::REDACTED;

pub use mcp_proto::http::secret::{
    CHALLENGE_HEADERS, MAX_CHECKED_NAME, SECRET_HEADER_PARTS, SECRET_HEADERS,
};

/// Query parameter names (lowercase) whose values never reach the wire log. More are
/// secret by [`SECRET_PARAM_PARTS`]; see [the rules](crate::wire_log#secret-query-parameters).
pub const SECRET_PARAMS: &[&str] = &["key", "code", "sig", "auth", "pass", "pwd"];

/// Parts of query parameter names (lowercase): a parameter whose name contains one is
/// secret; see [the rules](crate::wire_log#secret-query-parameters).
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
/// see [the rules](crate::wire_log#secrets-in-bodies).
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

/// Whether a header of this name is secret: see [the rules](crate::wire_log#secret-headers).
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
    mcp_proto::http::secret::is_credential_header(name)
}

/// Whether a query parameter of this name (as written, `%XX` escapes included) is
/// secret: see [the rules](crate::wire_log#secret-query-parameters).
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
    mcp_proto::http::secret::is_listed(&decoded[..len], SECRET_PARAMS, SECRET_PARAM_PARTS)
}

/// The value of a hexadecimal digit.
fn hex(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// How a head line (without its line end) is logged.
pub(super) enum HeadLine {
    /// A secret header: its value goes, from the byte after the colon.
    Secret(usize),
    /// A header whose name cannot be told: the first piece of a line too long to log
    /// whole, with no `:` in it.
    Unknown,
    /// Anything else, logged as it is.
    Plain,
}

/// What `line`, the first piece of a header line, is.
pub(super) fn head_line(line: &[u8], last: bool, extra: &[String]) -> HeadLine {
    match line.iter().position(|&b| b == b':') {
        Some(colon) if is_secret_header(&line[..colon], extra) => HeadLine::Secret(colon),
        Some(_) => HeadLine::Plain,
        None if last => HeadLine::Plain,
        None => HeadLine::Unknown,
    }
}

/// `line` up to and including the colon at `colon`, then [`REDACTED`].
pub(super) fn hide_value(line: &[u8], colon: usize) -> Vec<u8> {
    let mut out = line[..=colon].to_vec();
    out.push(b' ');
    out.extend_from_slice(REDACTED.as_bytes());
    out
}

/// A header line with its value replaced by [`REDACTED`] when the header is secret (by
/// the built-in [rules](crate::wire_log#secret-headers)); other lines unchanged.
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
/// [`REDACTED`]; see [the rules](crate::wire_log#secret-query-parameters).
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

    /// For the rest of a URL that starts with its path.
    pub(crate) fn url() -> Self {
        Query {
            at: At::Path,
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
/// value: see [the rules](crate::wire_log#secrets-in-bodies).
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
