//! `application/x-www-form-urlencoded` bodies and URL query strings.
//!
//! Encoding keeps only the RFC 3986 unreserved characters (`ALPHA DIGIT - . _ ~`) and
//! writes every other byte as `%XX` (uppercase hex), a space included (`%20`, not `+`):
//! the result means the same thing in a query string and in a form body.
//!
//! Decoding reads `+` as a space and `%XX` as a byte, refuses a `%` not followed by two
//! hex digits and decoded bytes that are not UTF-8, and bounds what it builds: at most
//! [`MAX_PAIRS`] pairs, names and values of at most [`MAX_COMPONENT_BYTES`] each, an input
//! of at most [`MAX_INPUT_BYTES`].

/// Most `name=value` pairs [`parse_pairs`] accepts.
pub const MAX_PAIRS: usize = 128;

/// Longest name or value, in bytes, after decoding.
pub const MAX_COMPONENT_BYTES: usize = 8 * 1024;

/// Longest query string or form body [`parse_pairs`] accepts, in bytes.
pub const MAX_INPUT_BYTES: usize = 64 * 1024;

/// Why a query string or form body could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormError {
    /// The input is longer than [`MAX_INPUT_BYTES`].
    #[error("form data longer than {limit} bytes")]
    TooLong {
        /// The limit.
        limit: usize,
    },
    /// More than [`MAX_PAIRS`] pairs.
    #[error("form data has more than {limit} name=value pairs")]
    TooManyPairs {
        /// The limit.
        limit: usize,
    },
    /// A decoded name or value longer than [`MAX_COMPONENT_BYTES`].
    #[error("name or value of pair {index} is longer than {limit} bytes")]
    ComponentTooLong {
        /// Index of the pair (0-based).
        index: usize,
        /// The limit.
        limit: usize,
    },
    /// A `%` not followed by two hex digits.
    #[error("invalid percent-encoding at byte {position}")]
    InvalidPercentEncoding {
        /// Byte offset in the query string or body.
        position: usize,
    },
    /// The decoded bytes of a name or value are not UTF-8.
    #[error("name or value of pair {index} is not UTF-8 once percent-decoded")]
    InvalidUtf8 {
        /// Index of the pair (0-based).
        index: usize,
    },
}

/// Appends `s` to `out`, percent-encoded: unreserved characters kept, every other byte
/// (space included) as `%XX` with uppercase hex digits.
pub fn encode_into(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.reserve(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
}

/// `name=value` pairs, each side encoded with [`encode_into`], joined with `&`.
///
/// ```
/// use mcp_proto::auth::form::encode_pairs;
/// assert_eq!(encode_pairs(&[("a", "1"), ("b c", "x&y=z")]), "a=1&b%20c=x%26y%3Dz");
/// ```
#[must_use]
pub fn encode_pairs(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    push_pairs(&mut out, pairs);
    out
}

fn push_pairs(out: &mut String, pairs: &[(&str, &str)]) {
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode_into(out, name);
        out.push('=');
        encode_into(out, value);
    }
}

/// `url` with `pairs` appended to its query: the existing query is kept, the pairs
/// follow a `?` (none yet) or a `&` (unless the URL already ends with `?` or `&`). A
/// `#fragment`, should there be one, stays at the end. No pairs: `url` unchanged.
///
/// ```
/// use mcp_proto::auth::form::append_query;
/// assert_eq!(append_query("https://as.example/authorize", &[("a", "1")]),
///            "https://as.example/authorize?a=1");
/// assert_eq!(append_query("https://as.example/authorize?tenant=x", &[("a", "1")]),
///            "https://as.example/authorize?tenant=x&a=1");
/// ```
#[must_use]
pub fn append_query(url: &str, pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return url.to_owned();
    }
    let (base, fragment) = match url.find('#') {
        Some(i) => url.split_at(i),
        None => (url, ""),
    };
    let mut out = String::with_capacity(url.len() + 64);
    out.push_str(base);
    if !base.contains('?') {
        out.push('?');
    } else if !base.ends_with(['?', '&']) {
        out.push('&');
    }
    push_pairs(&mut out, pairs);
    out.push_str(fragment);
    out
}

/// Decodes a query string or form body into its pairs, in order (duplicates kept; the
/// caller decides what a repeated name means). Empty segments (`a=1&&b=2`, a trailing
/// `&`) are skipped; a segment without `=` is a name with an empty value.
///
/// ```
/// use mcp_proto::auth::form::parse_pairs;
/// let pairs = parse_pairs("code=a%2Bb&state=x+y&flag").unwrap();
/// assert_eq!(pairs, [("code".into(), "a+b".into()), ("state".into(), "x y".into()),
///                    ("flag".into(), String::new())]);
/// ```
///
/// # Errors
///
/// A [`FormError`]: input too long, too many pairs, a name or value too long, an invalid
/// `%` escape, or bytes that are not UTF-8 once decoded.
pub fn parse_pairs(query: &str) -> Result<Vec<(String, String)>, FormError> {
    if query.len() > MAX_INPUT_BYTES {
        return Err(FormError::TooLong {
            limit: MAX_INPUT_BYTES,
        });
    }
    let mut pairs = Vec::new();
    let mut offset = 0;
    for segment in query.split('&') {
        let start = offset;
        offset += segment.len() + 1;
        if segment.is_empty() {
            continue;
        }
        let index = pairs.len();
        if index == MAX_PAIRS {
            return Err(FormError::TooManyPairs { limit: MAX_PAIRS });
        }
        let (name, value, value_start) = match segment.find('=') {
            Some(eq) => (&segment[..eq], &segment[eq + 1..], start + eq + 1),
            None => (segment, "", start + segment.len()),
        };
        let name = decode(name, start, index)?;
        let value = decode(value, value_start, index)?;
        pairs.push((name, value));
    }
    Ok(pairs)
}

/// Decodes one name or value that starts at byte `offset` of the input.
fn decode(s: &str, offset: usize, index: usize) -> Result<String, FormError> {
    if s.len() > 3 * MAX_COMPONENT_BYTES {
        // Even fully escaped, it would decode to more than the limit.
        return Err(FormError::ComponentTooLong {
            index,
            limit: MAX_COMPONENT_BYTES,
        });
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| {
                    let hi = char::from(h[0]).to_digit(16)?;
                    let lo = char::from(h[1]).to_digit(16)?;
                    u8::try_from(hi * 16 + lo).ok()
                });
                let Some(b) = hex else {
                    return Err(FormError::InvalidPercentEncoding {
                        position: offset + i,
                    });
                };
                out.push(b);
                i += 3;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    if out.len() > MAX_COMPONENT_BYTES {
        return Err(FormError::ComponentTooLong {
            index,
            limit: MAX_COMPONENT_BYTES,
        });
    }
    String::from_utf8(out).map_err(|_| FormError::InvalidUtf8 { index })
}

/// The pairs of a redirect callback, given either the full URL the browser was sent to
/// (the part after the first `?` is read; without a `?` there are no pairs) or its
/// query string alone, with or without the leading `?`. A `#fragment` is dropped in
/// both cases.
///
/// A string is taken as a URL when it starts with a scheme (a letter, then letters,
/// digits, `+`, `-` or `.`) and a `:`; a query string never does, since its first name
/// would have to contain a `:` with no `=` or `&` before it.
///
/// ```
/// use mcp_proto::auth::form::callback_params;
/// let from_url = callback_params("http://127.0.0.1:8080/cb?code=abc&state=xyz#frag").unwrap();
/// let from_query = callback_params("?code=abc&state=xyz").unwrap();
/// assert_eq!(from_url, from_query);
/// assert_eq!(from_url[0], ("code".to_owned(), "abc".to_owned()));
/// ```
///
/// # Errors
///
/// As [`parse_pairs`].
pub fn callback_params(url_or_query: &str) -> Result<Vec<(String, String)>, FormError> {
    let s = match url_or_query.find('#') {
        Some(i) => &url_or_query[..i],
        None => url_or_query,
    };
    let query = if let Some(q) = s.strip_prefix('?') {
        q
    } else if starts_with_scheme(s) {
        match s.split_once('?') {
            Some((_, q)) => q,
            None => "",
        }
    } else {
        s
    };
    parse_pairs(query)
}

/// Whether `s` starts with `scheme:` (RFC 3986 §3.1).
fn starts_with_scheme(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn encodes_unreserved_only() {
        let mut out = String::new();
        encode_into(&mut out, "AZaz09-._~ /?#[]@!$&'()*+,;=%é");
        assert_eq!(
            out,
            "AZaz09-._~%20%2F%3F%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D%25%C3%A9"
        );
    }

    #[test]
    fn encode_then_parse_round_trips() {
        let original = [
            ("redirect_uri", "http://127.0.0.1:1234/callback?x=1&y=2"),
            ("scope", "mcp:read mcp:write"),
            ("weird name", "+%&=\u{1F600}"),
            ("", ""),
        ];
        let encoded = encode_pairs(&original);
        assert!(!encoded.contains(' ') && !encoded.contains('+'));
        assert_eq!(parse_pairs(&encoded).unwrap(), pairs(&original));
    }

    #[test]
    fn append_query_keeps_existing_query() {
        let p = [("response_type", "code"), ("state", "a b")];
        assert_eq!(
            append_query("https://as.example/authorize", &p),
            "https://as.example/authorize?response_type=code&state=a%20b"
        );
        assert_eq!(
            append_query("https://as.example/authorize?tenant=1", &p),
            "https://as.example/authorize?tenant=1&response_type=code&state=a%20b"
        );
        assert_eq!(
            append_query("https://as.example/authorize?", &p[..1]),
            "https://as.example/authorize?response_type=code"
        );
        assert_eq!(
            append_query("https://as.example/authorize?a=1&", &p[..1]),
            "https://as.example/authorize?a=1&response_type=code"
        );
        assert_eq!(
            append_query("https://as.example/a#frag", &p[..1]),
            "https://as.example/a?response_type=code#frag"
        );
        assert_eq!(append_query("https://x/a?b", &[]), "https://x/a?b");
    }

    #[test]
    fn parse_decodes_plus_and_percent_once() {
        assert_eq!(
            parse_pairs("iss=http%3A%2F%2Flocalhost%3A3001&x=%2541&y=a+b%20c").unwrap(),
            pairs(&[
                ("iss", "http://localhost:3001"),
                ("x", "%41"),
                ("y", "a b c")
            ])
        );
    }

    #[test]
    fn parse_keeps_duplicates_and_skips_empty_segments() {
        assert_eq!(
            parse_pairs("&state=a&&state=b&code&=v&").unwrap(),
            pairs(&[("state", "a"), ("state", "b"), ("code", ""), ("", "v")])
        );
        assert_eq!(parse_pairs("").unwrap(), pairs(&[]));
        assert_eq!(parse_pairs("a==b").unwrap(), pairs(&[("a", "=b")]));
    }

    #[test]
    fn parse_refuses_bad_escapes_and_utf8() {
        assert_eq!(
            parse_pairs("a=1&b=%4"),
            Err(FormError::InvalidPercentEncoding { position: 6 })
        );
        assert_eq!(
            parse_pairs("a=%zz"),
            Err(FormError::InvalidPercentEncoding { position: 2 })
        );
        assert_eq!(
            parse_pairs("%"),
            Err(FormError::InvalidPercentEncoding { position: 0 })
        );
        // A `%` followed by a multi-byte character must not be sliced mid-character.
        assert_eq!(
            parse_pairs("a=%é"),
            Err(FormError::InvalidPercentEncoding { position: 2 })
        );
        assert_eq!(
            parse_pairs("ok=1&a=%C3%28"),
            Err(FormError::InvalidUtf8 { index: 1 })
        );
        assert_eq!(
            parse_pairs("%FF=1"),
            Err(FormError::InvalidUtf8 { index: 0 })
        );
    }

    #[test]
    fn parse_bounds_counts_and_sizes() {
        let ok = vec!["a=1"; MAX_PAIRS].join("&");
        assert_eq!(parse_pairs(&ok).unwrap().len(), MAX_PAIRS);
        let too_many = vec!["a=1"; MAX_PAIRS + 1].join("&");
        assert_eq!(
            parse_pairs(&too_many),
            Err(FormError::TooManyPairs { limit: MAX_PAIRS })
        );
        let long = format!("a={}", "x".repeat(MAX_COMPONENT_BYTES + 1));
        assert_eq!(
            parse_pairs(&long),
            Err(FormError::ComponentTooLong {
                index: 0,
                limit: MAX_COMPONENT_BYTES
            })
        );
        let exact = format!("a={}", "%41".repeat(MAX_COMPONENT_BYTES));
        assert_eq!(parse_pairs(&exact).unwrap()[0].1.len(), MAX_COMPONENT_BYTES);
        let huge = "&".repeat(MAX_INPUT_BYTES + 1);
        assert_eq!(
            parse_pairs(&huge),
            Err(FormError::TooLong {
                limit: MAX_INPUT_BYTES
            })
        );
    }

    #[test]
    fn callback_params_accepts_url_or_query() {
        let want = pairs(&[
            ("code", "test-auth-code"),
            ("state", "s1"),
            ("iss", "http://localhost:3001"),
        ]);
        for input in [
            "http://localhost:3000/callback?code=test-auth-code&state=s1&iss=http%3A%2F%2Flocalhost%3A3001",
            "http://localhost:3000/callback?code=test-auth-code&state=s1&iss=http%3A%2F%2Flocalhost%3A3001#x=y",
            "?code=test-auth-code&state=s1&iss=http%3A%2F%2Flocalhost%3A3001",
            "code=test-auth-code&state=s1&iss=http%3A%2F%2Flocalhost%3A3001",
            "code=test-auth-code&state=s1&iss=http://localhost:3001",
        ] {
            assert_eq!(callback_params(input).unwrap(), want, "{input}");
        }
        // A URL without a query has no pairs; a `?` inside a value of a bare query is data.
        assert!(
            callback_params("http://127.0.0.1:8080/cb")
                .unwrap()
                .is_empty()
        );
        assert!(callback_params("myapp:/cb#code=x").unwrap().is_empty());
        assert_eq!(
            callback_params("state=a?b&code=c").unwrap(),
            pairs(&[("state", "a?b"), ("code", "c")])
        );
        assert_eq!(
            callback_params("com.example.app:/cb?code=c").unwrap(),
            pairs(&[("code", "c")])
        );
        assert!(callback_params("").unwrap().is_empty());
        assert_eq!(
            callback_params("http://x/cb?code=%"),
            Err(FormError::InvalidPercentEncoding { position: 5 })
        );
    }
}
