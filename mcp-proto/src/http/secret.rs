//! Which HTTP header names carry credentials: one rule for everything that must not show
//! a credential (the wire log, `Debug` output of requests and responses).
//!
//! A header is a credential when its name (without regard to ASCII case, surrounding
//! whitespace ignored) is one of [`SECRET_HEADERS`] or contains one of
//! [`SECRET_HEADER_PARTS`], unless it is one of [`CHALLENGE_HEADERS`]; a name longer than
//! [`MAX_CHECKED_NAME`] bytes counts as one.

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
