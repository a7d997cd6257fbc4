//! Which HTTP header names carry credentials: one rule for everything that must not show
//! a credential (the wire log, `Debug` output of requests and responses).
//!
//! A header is a credential when its name (without regard to ASCII case, surrounding
//! whitespace ignored) is one of [`SECRET_HEADERS`] or contains one of
//! [`SECRET_HEADER_PARTS`], unless it is one of [`CHALLENGE_HEADERS`]; a name longer than
//! [`MAX_CHECKED_NAME`] bytes counts as one.
//!
//! `Debug` output shows a credential as [`REDACTED`], through [`redacted`] (a field that
//! may hold one), [`shown_header_value`] (a header's value) and [`write_hidden_query`]
//! (a URL's query values).

use std::borrow::Cow;
use std::fmt;

/// What `Debug` output shows in place of a credential.
pub const REDACTED: &str = "<redacted>";

/// [`REDACTED`] when the secret is set, `None` when not: for a `Debug` field.
///
/// ```
/// use mcp_proto::http::secret::redacted;
///
/// assert_eq!(format!("{:?}", redacted(&Some("Bearer abc"))), r#"Some("<redacted>")"#);
/// assert_eq!(redacted::<String>(&None), None);
/// ```
#[must_use]
pub fn redacted<T>(secret: &Option<T>) -> Option<&'static str> {
    secret.as_ref().map(|_| REDACTED)
}

/// A header's value as `Debug` output shows it: [`REDACTED`] when the header carries a
/// credential by its name ([`is_credential_header`]), else the value (invalid UTF-8
/// replaced).
///
/// ```
/// use mcp_proto::http::secret::shown_header_value;
///
/// assert_eq!(shown_header_value(b"Authorization", b"Bearer abc"), "<redacted>");
/// assert_eq!(shown_header_value(b"Content-Type", b"text/plain"), "text/plain");
/// ```
#[must_use]
pub fn shown_header_value<'v>(name: &[u8], value: &'v [u8]) -> Cow<'v, str> {
    if is_credential_header(name) {
        Cow::Borrowed(REDACTED)
    } else {
        String::from_utf8_lossy(value)
    }
}

/// Writes a URL's `query` (what follows its `?`) for `Debug` output: `?`, then each
/// parameter's name with `=` and `stand_in` for its value, `&` between them. A part
/// without `=` is replaced whole: it may be a token itself (`?ghp_…`).
///
/// ```
/// use mcp_proto::http::secret::{REDACTED, write_hidden_query};
///
/// let mut shown = String::from("/mcp");
/// write_hidden_query(&mut shown, "api_key=k&page=2&sk_live_1", REDACTED).unwrap();
/// assert_eq!(shown, "/mcp?api_key=<redacted>&page=<redacted>&<redacted>");
/// ```
///
/// # Errors
///
/// When `out` fails to take the text.
pub fn write_hidden_query(out: &mut impl fmt::Write, query: &str, stand_in: &str) -> fmt::Result {
    for (i, pair) in query.split('&').enumerate() {
        out.write_char(if i == 0 { '?' } else { '&' })?;
        if let Some((name, _)) = pair.split_once('=') {
            out.write_str(name)?;
            out.write_char('=')?;
        }
        out.write_str(stand_in)?;
    }
    Ok(())
}

/// Header names (lowercase) whose values are credentials.
pub const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "mcp-session-id",
];

/// Parts of header names (lowercase): a header whose name contains one is a credential,
/// unless it is one of [`CHALLENGE_HEADERS`].
pub const SECRET_HEADER_PARTS: &[&str] = &[
    "auth", "token", "secret", "password", "passwd", "api-key", "apikey", "api_key", "cookie",
    "session",
];

/// Header names (lowercase) that contain a part of [`SECRET_HEADER_PARTS`] but carry no
/// credential: a server's authentication challenge, whose `resource_metadata` is what
/// OAuth discovery needs.
pub const CHALLENGE_HEADERS: &[&str] = &["www-authenticate", "proxy-authenticate"];

/// Longest name (in bytes) compared with the lists: a longer one counts as secret.
pub const MAX_CHECKED_NAME: usize = 256;

/// Whether a header of this name carries a credential (see the [module](self)).
///
/// ```
/// use mcp_proto::http::secret::is_credential_header;
///
/// for name in ["Authorization", "mcp-session-id", "X-Api-Key", " X-Auth-Token", "Set-Cookie"] {
///     assert!(is_credential_header(name.as_bytes()), "{name}");
/// }
/// for name in ["Content-Type", "WWW-Authenticate", "MCP-Protocol-Version", "X-Tenant-Key"] {
///     assert!(!is_credential_header(name.as_bytes()), "{name}");
/// }
/// ```
#[must_use]
pub fn is_credential_header(name: &[u8]) -> bool {
    let name = name.trim_ascii();
    if name.len() > MAX_CHECKED_NAME {
        return true;
    }
    if CHALLENGE_HEADERS
        .iter()
        .any(|c| name.eq_ignore_ascii_case(c.as_bytes()))
    {
        return false;
    }
    is_listed(name, SECRET_HEADERS, SECRET_HEADER_PARTS)
}

/// Whether `name` (at most [`MAX_CHECKED_NAME`] bytes; longer ones are not) is one of
/// `exact` or contains one of `parts`, without regard to ASCII case. The lists are
/// lowercase.
#[must_use]
pub fn is_listed(name: &[u8], exact: &[&str], parts: &[&str]) -> bool {
    if name.len() > MAX_CHECKED_NAME {
        return false;
    }
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
