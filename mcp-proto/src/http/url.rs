//! MCP endpoint URLs, parsed strictly (RFC 3986 syntax, HTTP(S) only).
//!
//! Accepted: `http` or `https` (any case), `//`, a host that is a DNS name
//! (letters, digits, `-`, `_`, dots; percent-encoded octets allowed if they decode to
//! those), dotted-decimal IPv4, or a bracketed IPv6 literal; an optional port 1–65535; a
//! path (default `/`) and a query, both kept byte for byte.
//!
//! Refused:
//!
//! * **Fragments** (`#…`), rather than stripped: an endpoint URL is an identity (OAuth
//!   resource indicators may not carry one, RFC 8707 §2) and dropping a part silently
//!   would make two different strings name the same endpoint.
//! * Userinfo (`user:pass@`): credentials do not belong in an endpoint URL, and `@` is
//!   the classic way to make a URL look like it points elsewhere.
//! * Control bytes, spaces, non-ASCII (convert IRIs and IDNs first), characters outside
//!   RFC 3986, invalid percent-encodings, empty or zero ports, IPv6 zone identifiers and
//!   IPvFuture, empty DNS labels (a trailing dot included).
//! * Numeric-looking hosts that are not dotted-decimal IPv4 (`127.1`, `0x7f.0.0.1`,
//!   `2130706433`, `010.0.0.1`): name resolvers disagree on them, and some resolve them to
//!   loopback.
//! * Plain `http` to anything but loopback (`localhost`, 127.0.0.0/8, `::1`), unless the
//!   caller allows it.
//!
//! [`EndpointUrl::as_str`] is the caller's string verbatim (identity comparisons are on
//! raw strings, design decision 8); the accessors give the normalized parts.

use std::fmt;
use std::net::IpAddr;

use super::host::parse_authority;

/// Longest URL accepted, in bytes.
const MAX_URL_BYTES: usize = 8 * 1024;

/// The scheme of an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `http`, plain TCP.
    Http,
    /// `https`, TLS.
    Https,
}

impl Scheme {
    /// `"http"` or `"https"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    /// 80 or 443.
    #[must_use]
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// Why a string is not an acceptable endpoint URL.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// Longer than 8 KiB.
    #[error("URL longer than {limit} bytes")]
    TooLong {
        /// The limit.
        limit: usize,
    },
    /// A byte that may not appear there (control, space, non-ASCII, …).
    #[error("invalid character at byte {position}")]
    InvalidCharacter {
        /// Byte offset in the string.
        position: usize,
    },
    /// No `scheme:` at the start.
    #[error("missing scheme")]
    MissingScheme,
    /// A scheme other than `http` or `https`.
    #[error("unsupported scheme (only http and https)")]
    UnsupportedScheme,
    /// No `//authority` after the scheme.
    #[error("missing //host")]
    MissingAuthority,
    /// `user:pass@` in the authority.
    #[error("credentials (userinfo) are not allowed in the URL")]
    UserInfo,
    /// A `#fragment`.
    #[error("fragments are not allowed in an endpoint URL")]
    Fragment,
    /// An empty, malformed or ambiguous host.
    #[error("invalid host")]
    InvalidHost,
    /// A bracketed literal that is not a plain IPv6 address.
    #[error("invalid IPv6 literal")]
    InvalidIpv6,
    /// A port that is empty, not decimal, 0 or above 65535.
    #[error("invalid port")]
    InvalidPort,
    /// A `%` not followed by two hex digits.
    #[error("invalid percent-encoding")]
    InvalidPercentEncoding,
    /// Plain `http` to a host that is not loopback, and insecure remotes are not allowed.
    #[error("plain http is only allowed to loopback hosts")]
    InsecureRemote,
}

/// A vetted MCP endpoint URL.
///
/// ```
/// use mcp_proto::http::{EndpointUrl, RequestHead, UrlError};
///
/// let url = EndpointUrl::parse("https://Example.COM:443/mcp?x=1", false).unwrap();
/// assert_eq!((url.host(), url.port(), url.target()), ("example.com", 443, "/mcp?x=1"));
/// assert_eq!(url.origin(), "https://example.com");
/// assert_eq!(url.as_str(), "https://Example.COM:443/mcp?x=1");
///
/// let mut out = Vec::new();
/// RequestHead::for_endpoint("POST", &url).write(Some(2), &mut out).unwrap();
/// assert!(out.starts_with(b"POST /mcp?x=1 HTTP/1.1\r\nHost: example.com\r\n"));
///
/// let refused = EndpointUrl::parse("http://example.com/mcp", false);
/// assert_eq!(refused, Err(UrlError::InsecureRemote));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EndpointUrl {
    original: String,
    scheme: Scheme,
    host: String,
    ip: Option<IpAddr>,
    port: u16,
    host_header: String,
    target: String,
    path_len: usize,
    origin: String,
}

impl EndpointUrl {
    /// Parses and vets `s`; see the module docs for what is accepted.
    /// `allow_insecure_remote` permits plain `http` to hosts that are not loopback.
    ///
    /// # Errors
    ///
    /// A [`UrlError`] naming the first problem found.
    pub fn parse(s: &str, allow_insecure_remote: bool) -> Result<EndpointUrl, UrlError> {
        if s.len() > MAX_URL_BYTES {
            return Err(UrlError::TooLong {
                limit: MAX_URL_BYTES,
            });
        }
        if let Some(position) = s.bytes().position(|b| !is_url_byte(b)) {
            return Err(if s.as_bytes()[position] == b'#' {
                UrlError::Fragment
            } else {
                UrlError::InvalidCharacter { position }
            });
        }
        let (scheme, rest) = s.split_once(':').ok_or(UrlError::MissingScheme)?;
        let scheme_ok = scheme
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic())
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b));
        if !scheme_ok {
            return Err(UrlError::MissingScheme);
        }
        let scheme = if scheme.eq_ignore_ascii_case("http") {
            Scheme::Http
        } else if scheme.eq_ignore_ascii_case("https") {
            Scheme::Https
        } else {
            return Err(UrlError::UnsupportedScheme);
        };
        let rest = rest.strip_prefix("//").ok_or(UrlError::MissingAuthority)?;
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path_and_query) = rest.split_at(end);
        if authority.contains('@') {
            return Err(UrlError::UserInfo);
        }
        let (host, ip, port) = parse_authority(authority)?;
        let port = port.unwrap_or(scheme.default_port());
        let (path, query) = match path_and_query.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (path_and_query, None),
        };
        check_part(path_and_query, s.len() - path_and_query.len())?;
        let path = if path.is_empty() { "/" } else { path };
        let target = match query {
            Some(q) => format!("{path}?{q}"),
            None => path.to_owned(),
        };
        let mut host_header = match ip {
            Some(IpAddr::V6(_)) => format!("[{host}]"),
            _ => host.clone(),
        };
        if port != scheme.default_port() {
            host_header = format!("{host_header}:{port}");
        }
        let url = EndpointUrl {
            original: s.to_owned(),
            origin: format!("{}://{host_header}", scheme.as_str()),
            scheme,
            host,
            ip,
            port,
            host_header,
            path_len: path.len(),
            target,
        };
        if url.scheme == Scheme::Http && !url.is_loopback() && !allow_insecure_remote {
            return Err(UrlError::InsecureRemote);
        }
        Ok(url)
    }

    /// The string parsed, verbatim: use it for identity comparisons.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.original
    }

    /// The scheme.
    #[must_use]
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Whether the connection uses TLS (`https`).
    #[must_use]
    pub fn is_tls(&self) -> bool {
        self.scheme == Scheme::Https
    }

    /// The host to resolve or connect to: lowercase, percent-decoded, IPv6 without
    /// brackets (in canonical form). Also the TLS server name for DNS names.
    #[must_use]
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The address, when the host is an IP literal (no name resolution needed).
    #[must_use]
    pub fn ip(&self) -> Option<IpAddr> {
        self.ip
    }

    /// Whether the host is loopback: `localhost`, 127.0.0.0/8 or `::1`.
    #[must_use]
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost" || self.ip.is_some_and(|ip| ip.is_loopback())
    }

    /// The port, the scheme's default when none was given.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `host[:port]` for the `Host` header: brackets around IPv6, the port omitted when
    /// it is the default.
    #[must_use]
    pub fn host_header(&self) -> &str {
        &self.host_header
    }

    /// The request target: the path (`/` when empty) and `?query` if present.
    #[must_use]
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The path alone.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.target[..self.path_len]
    }

    /// The query without its `?`, if there was one.
    #[must_use]
    pub fn query(&self) -> Option<&str> {
        self.target.get(self.path_len..)?.strip_prefix('?')
    }

    /// The origin, normalized as RFC 6454 serializes it: `scheme://host[:port]` in
    /// lowercase, the port omitted when default. Two URLs on the same server share it;
    /// use it as the key for per-server verdicts (the protocol era, say).
    #[must_use]
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

impl fmt::Display for EndpointUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.original)
    }
}

/// RFC 3986 characters: unreserved, reserved, and `%`.
fn is_url_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~:/?[]@!$&'()*+,;=%".contains(&b)
}

/// Checks the path and query (starting at byte `offset` of the URL): no brackets, valid
/// percent-encodings.
fn check_part(part: &str, offset: usize) -> Result<(), UrlError> {
    let bytes = part.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'[' || b == b']' {
            return Err(UrlError::InvalidCharacter {
                position: offset.saturating_add(i),
            });
        }
        if b == b'%' {
            let ok = bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
            if !ok {
                return Err(UrlError::InvalidPercentEncoding);
            }
        }
    }
    Ok(())
}
