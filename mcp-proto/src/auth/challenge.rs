//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1) and the Bearer parameters an MCP
//! client acts on (RFC 6750 §3, RFC 9728 §5.1).
//!
//! The grammar, parsed by hand rather than with patterns, so that a quoted value can hold
//! commas, `=` and escaped quotes without being mistaken for parameters:
//!
//! ```text
//! WWW-Authenticate = [ challenge *( OWS "," OWS challenge ) ]   (empty elements allowed)
//! challenge        = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
//! auth-param       = token BWS "=" BWS ( token / quoted-string )
//! token68          = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
//! quoted-string    = DQUOTE *( qdtext / "\" ( HTAB / SP / VCHAR / obs-text ) ) DQUOTE
//! ```
//!
//! After a comma, `token =` continues the current challenge's parameters and any other
//! token starts a new challenge. Parameter names are case-insensitive (stored in
//! lowercase); a name repeated within one challenge makes the header value malformed
//! (RFC 9110: each parameter name MUST only occur once per challenge), rather than
//! letting one reader take the first and another the last.
//!
//! Bounds: at most [`MAX_HEADER_BYTES`] of input, [`MAX_CHALLENGES`] challenges,
//! [`MAX_PARAMS`] parameters per challenge, [`MAX_STRING_BYTES`] per name or value. The
//! work is linear in the input.

use std::collections::BTreeSet;

use crate::http::chars::is_tchar;

/// Longest header value accepted, in bytes.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Most challenges in one header value.
pub const MAX_CHALLENGES: usize = 64;

/// Most parameters in one challenge.
pub const MAX_PARAMS: usize = 64;

/// Longest scheme, parameter name or value (after unescaping), in bytes.
pub const MAX_STRING_BYTES: usize = 8 * 1024;

/// One challenge: an authentication scheme and its parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    /// The scheme as sent (compare it ignoring ASCII case, or use [`Challenge::is_scheme`]).
    pub scheme: String,
    /// The parameters in order: names in lowercase, values unquoted and unescaped. A
    /// token68 (`Basic dXNlcjpwYXNz`) is stored as the single parameter `("", value)`.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// The value of parameter `name`, compared ignoring ASCII case.
    #[must_use]
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the scheme is `scheme`, ignoring ASCII case.
    #[must_use]
    pub fn is_scheme(&self, scheme: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(scheme)
    }
}

/// Why a `WWW-Authenticate` value could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChallengeError {
    /// The header value is longer than [`MAX_HEADER_BYTES`].
    #[error("WWW-Authenticate value longer than {limit} bytes")]
    TooLong {
        /// The limit.
        limit: usize,
    },
    /// More than [`MAX_CHALLENGES`] challenges.
    #[error("WWW-Authenticate value has more than {limit} challenges")]
    TooManyChallenges {
        /// The limit.
        limit: usize,
    },
    /// More than [`MAX_PARAMS`] parameters in one challenge.
    #[error("challenge has more than {limit} parameters")]
    TooManyParams {
        /// The limit.
        limit: usize,
    },
    /// A scheme, name or value longer than [`MAX_STRING_BYTES`].
    #[error("scheme, parameter name or value at byte {position} is longer than {limit} bytes")]
    StringTooLong {
        /// Byte offset where it starts.
        position: usize,
        /// The limit.
        limit: usize,
    },
    /// A character the grammar does not allow there.
    #[error("unexpected character {found:?} at byte {position} (expected {expected})")]
    Unexpected {
        /// Byte offset in the header value.
        position: usize,
        /// The character found.
        found: char,
        /// What the grammar wanted there.
        expected: &'static str,
    },
    /// The value ended where the grammar needs more (after `name=`, say).
    #[error("WWW-Authenticate value ends early (expected {expected})")]
    UnexpectedEnd {
        /// What the grammar wanted there.
        expected: &'static str,
    },
    /// A quoted string without its closing quote.
    #[error("quoted string starting at byte {position} is not terminated")]
    UnterminatedQuote {
        /// Byte offset of the opening quote.
        position: usize,
    },
    /// A parameter name repeated within one challenge.
    #[error("parameter {name:?} appears more than once in one challenge")]
    DuplicateParam {
        /// The name, lowercased.
        name: String,
    },
}

/// Parses one `WWW-Authenticate` header value into its challenges, in order. An empty
/// value (or one of only commas and spaces) is an empty list.
///
/// ```
/// use mcp_proto::auth::challenge::parse_challenges;
/// let c = parse_challenges(r#"Basic realm="x", Bearer scope="a b", error="insufficient_scope""#).unwrap();
/// assert_eq!(c.len(), 2);
/// assert_eq!(c[1].param("Scope"), Some("a b"));
/// ```
///
/// # Errors
///
/// A [`ChallengeError`] naming the first problem and where it is.
pub fn parse_challenges(header: &str) -> Result<Vec<Challenge>, ChallengeError> {
    if header.len() > MAX_HEADER_BYTES {
        return Err(ChallengeError::TooLong {
            limit: MAX_HEADER_BYTES,
        });
    }
    Parser {
        s: header,
        b: header.as_bytes(),
        pos: 0,
    }
    .challenges()
}

/// The characters of a token68 before its `=` padding.
fn is_token68_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn skip_ows(&mut self) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(is_ows) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn skip_ows_and_commas(&mut self) {
        while self.peek().is_some_and(|b| is_ows(b) || b == b',') {
            self.pos += 1;
        }
    }

    fn unexpected(&self, expected: &'static str) -> ChallengeError {
        match self.s.get(self.pos..).and_then(|rest| rest.chars().next()) {
            Some(found) => ChallengeError::Unexpected {
                position: self.pos,
                found,
                expected,
            },
            None => ChallengeError::UnexpectedEnd { expected },
        }
    }

    /// A run of `tchar`, possibly empty.
    fn token(&mut self) -> Result<&str, ChallengeError> {
        let start = self.pos;
        while self.peek().is_some_and(is_tchar) {
            self.pos += 1;
        }
        if self.pos - start > MAX_STRING_BYTES {
            return Err(ChallengeError::StringTooLong {
                position: start,
                limit: MAX_STRING_BYTES,
            });
        }
        Ok(&self.s[start..self.pos])
    }

    fn challenges(mut self) -> Result<Vec<Challenge>, ChallengeError> {
        let mut out: Vec<Challenge> = Vec::new();
        self.skip_ows_and_commas();
        while self.pos < self.b.len() {
            if out.len() == MAX_CHALLENGES {
                return Err(ChallengeError::TooManyChallenges {
                    limit: MAX_CHALLENGES,
                });
            }
            let scheme = self.token()?;
            if scheme.is_empty() {
                return Err(self.unexpected("an authentication scheme"));
            }
            let mut challenge = Challenge {
                scheme: scheme.to_owned(),
                params: Vec::new(),
            };
            let spaces = self.skip_ows();
            match self.peek() {
                None | Some(b',') => {}
                Some(_) if spaces == 0 => return Err(self.unexpected("a space after the scheme")),
                Some(_) => {
                    if let Some(t68) = self.token68()? {
                        challenge.params.push((String::new(), t68));
                    } else {
                        self.params(&mut challenge)?;
                    }
                }
            }
            out.push(challenge);
            // Either the end, or a comma before the next challenge.
            self.skip_ows();
            match self.peek() {
                None => break,
                Some(b',') => self.skip_ows_and_commas(),
                Some(_) => return Err(self.unexpected("a comma or the end")),
            }
        }
        Ok(out)
    }

    /// A token68 filling the rest of the challenge (followed by OWS then a comma or the
    /// end); `None`, with the position unchanged, when what follows is not one.
    fn token68(&mut self) -> Result<Option<String>, ChallengeError> {
        let start = self.pos;
        let mut end = start;
        while self.b.get(end).copied().is_some_and(is_token68_char) {
            end += 1;
        }
        if end == start {
            return Ok(None);
        }
        while self.b.get(end) == Some(&b'=') {
            end += 1;
        }
        let mut after = end;
        while self.b.get(after).copied().is_some_and(is_ows) {
            after += 1;
        }
        if !matches!(self.b.get(after), None | Some(b',')) {
            return Ok(None);
        }
        if end - start > MAX_STRING_BYTES {
            return Err(ChallengeError::StringTooLong {
                position: start,
                limit: MAX_STRING_BYTES,
            });
        }
        self.pos = end;
        Ok(Some(self.s[start..end].to_owned()))
    }

    /// `#auth-param`: parameters separated by commas, up to the next challenge's scheme
    /// (a token after a comma that is not followed by `=`) or the end.
    fn params(&mut self, challenge: &mut Challenge) -> Result<(), ChallengeError> {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        loop {
            let name = self.token()?;
            if name.is_empty() {
                return Err(self.unexpected("a parameter name"));
            }
            let name = name.to_ascii_lowercase();
            self.skip_ows();
            if self.peek() != Some(b'=') {
                return Err(self.unexpected("'=' after the parameter name"));
            }
            self.pos += 1;
            self.skip_ows();
            let value = match self.peek() {
                Some(b'"') => self.quoted_string()?,
                Some(b) if is_tchar(b) => self.token()?.to_owned(),
                _ => return Err(self.unexpected("a token or a quoted string")),
            };
            if challenge.params.len() == MAX_PARAMS {
                return Err(ChallengeError::TooManyParams { limit: MAX_PARAMS });
            }
            if !seen.insert(name.clone()) {
                return Err(ChallengeError::DuplicateParam { name });
            }
            challenge.params.push((name, value));
            // A comma, then either another parameter of this challenge or a new one.
            let resume = self.pos;
            self.skip_ows();
            if self.peek() != Some(b',') {
                self.pos = resume;
                return Ok(());
            }
            self.skip_ows_and_commas();
            let next = self.pos;
            let token = self.token()?;
            let is_param = !token.is_empty() && {
                self.skip_ows();
                self.peek() == Some(b'=')
            };
            if is_param {
                self.pos = next;
            } else {
                // The end, or the next challenge: leave the comma for the caller.
                self.pos = resume;
                return Ok(());
            }
        }
    }

    /// A quoted string at the position (which holds `"`), unescaped.
    fn quoted_string(&mut self) -> Result<String, ChallengeError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.s.get(self.pos..).and_then(|rest| rest.chars().next()) else {
                return Err(ChallengeError::UnterminatedQuote { position: open });
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                '\\' => {
                    self.pos += 1;
                    let Some(e) = self.s.get(self.pos..).and_then(|rest| rest.chars().next())
                    else {
                        return Err(ChallengeError::UnterminatedQuote { position: open });
                    };
                    if e.is_ascii_control() && e != '\t' {
                        return Err(self.unexpected("an escapable character after '\\'"));
                    }
                    out.push(e);
                    self.pos += e.len_utf8();
                }
                c if c.is_ascii_control() && c != '\t' => {
                    return Err(self.unexpected("a character allowed in a quoted string"));
                }
                c => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
            if out.len() > MAX_STRING_BYTES {
                return Err(ChallengeError::StringTooLong {
                    position: open,
                    limit: MAX_STRING_BYTES,
                });
            }
        }
    }
}

/// The parameters of a `Bearer` (or `DPoP`) challenge that drive the MCP authorization
/// flow. Values are as sent (unquoted); nothing here is validated as a URL or scope.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// `resource_metadata` (RFC 9728 §5.1): where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: space-separated scopes the request needs (may be empty).
    pub scope: Option<String>,
    /// `error` (RFC 6750 §3.1), e.g. `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
    /// `error_description`: human-readable, for logs only.
    pub error_description: Option<String>,
}

impl BearerChallenge {
    fn from_challenge(c: &Challenge) -> BearerChallenge {
        let get = |name: &str| c.param(name).map(str::to_owned);
        BearerChallenge {
            resource_metadata: get("resource_metadata"),
            scope: get("scope"),
            error: get("error"),
            error_description: get("error_description"),
        }
    }

    /// Whether `error` is exactly `insufficient_scope` (error codes are case-sensitive,
    /// RFC 6750 §3.1): the 403 that asks for a step-up authorization.
    #[must_use]
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    /// The scopes of `scope`, split on whitespace, duplicates removed, first occurrence
    /// order kept. Empty when there is no `scope` or it is empty.
    #[must_use]
    pub fn scopes(&self) -> Vec<String> {
        let Some(scope) = self.scope.as_deref() else {
            return Vec::new();
        };
        let mut seen = BTreeSet::new();
        scope
            .split_ascii_whitespace()
            .filter(|s| seen.insert(*s))
            .map(str::to_owned)
            .collect()
    }
}

/// The first `Bearer` challenge (scheme compared ignoring ASCII case) across all
/// `WWW-Authenticate` values of a response, in order; if there is none, the first
/// `DPoP` challenge (RFC 9449 §7.1 carries the same parameters). `None` when neither is
/// present.
///
/// A value that does not parse is skipped: one malformed header does not hide a good
/// challenge in another, and nothing is guessed from a malformed one.
///
/// ```
/// use mcp_proto::auth::challenge::bearer_challenge;
/// let c = bearer_challenge([
///     r#"Basic realm="mcp""#,
///     r#"Bearer error="insufficient_scope", scope="files:read files:write""#,
/// ]).unwrap();
/// assert!(c.is_insufficient_scope());
/// assert_eq!(c.scopes(), ["files:read", "files:write"]);
/// ```
pub fn bearer_challenge<'a>(
    header_values: impl IntoIterator<Item = &'a str>,
) -> Option<BearerChallenge> {
    let mut dpop = None;
    for value in header_values {
        let Ok(challenges) = parse_challenges(value) else {
            continue;
        };
        for c in &challenges {
            if c.is_scheme("Bearer") {
                return Some(BearerChallenge::from_challenge(c));
            }
            if dpop.is_none() && c.is_scheme("DPoP") {
                dpop = Some(BearerChallenge::from_challenge(c));
            }
        }
    }
    dpop
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(scheme: &str, params: &[(&str, &str)]) -> Challenge {
        Challenge {
            scheme: scheme.to_owned(),
            params: params
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn rfc9110_examples() {
        // RFC 9110 §11.6.1.
        assert_eq!(
            parse_challenges(r#"Basic realm="simple""#).unwrap(),
            [ch("Basic", &[("realm", "simple")])]
        );
        assert_eq!(
            parse_challenges(
                r#"Basic realm="simple", Newauth realm="apps", type=1, title="Login to \"apps\"""#
            )
            .unwrap(),
            [
                ch("Basic", &[("realm", "simple")]),
                ch(
                    "Newauth",
                    &[
                        ("realm", "apps"),
                        ("type", "1"),
                        ("title", r#"Login to "apps""#)
                    ]
                ),
            ]
        );
        // RFC 9110 §11.5: BWS around '=' and case-insensitive names.
        assert_eq!(
            parse_challenges(r#"Basic REALM = "Foo", charset="UTF-8""#).unwrap(),
            [ch("Basic", &[("realm", "Foo"), ("charset", "UTF-8")])]
        );
        // RFC 6750 §3 examples.
        assert_eq!(
            parse_challenges(r#"Bearer realm="example""#).unwrap(),
            [ch("Bearer", &[("realm", "example")])]
        );
        assert_eq!(
            parse_challenges(
                "Bearer realm=\"example\",\r\n error=\"invalid_token\",\r\n error_description=\"The access token expired\""
                    .replace("\r\n", "")
                    .as_str()
            )
            .unwrap(),
            [ch(
                "Bearer",
                &[
                    ("realm", "example"),
                    ("error", "invalid_token"),
                    ("error_description", "The access token expired")
                ]
            )]
        );
    }

    #[test]
    fn conformance_header() {
        let h = r#"Bearer error="invalid_token", error_description="Missing Authorization header", resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/mcp""#;
        let c = bearer_challenge([h]).unwrap();
        assert_eq!(
            c,
            BearerChallenge {
                resource_metadata: Some(
                    "http://localhost:3000/.well-known/oauth-protected-resource/mcp".into()
                ),
                scope: None,
                error: Some("invalid_token".into()),
                error_description: Some("Missing Authorization header".into()),
            }
        );
        assert!(!c.is_insufficient_scope());
        assert!(c.scopes().is_empty());
    }

    #[test]
    fn several_challenges_in_one_value() {
        let c = parse_challenges(r#"Basic realm="x", Bearer scope="a b""#).unwrap();
        assert_eq!(
            c,
            [
                ch("Basic", &[("realm", "x")]),
                ch("Bearer", &[("scope", "a b")])
            ]
        );
        let b = bearer_challenge([r#"Basic realm="x", Bearer scope="a b""#]).unwrap();
        assert_eq!(b.scopes(), ["a", "b"]);
        // Schemes without parameters, empty list elements, tabs.
        assert_eq!(
            parse_challenges(" , Negotiate ,\t,Bearer\t realm=x ,, Basic").unwrap(),
            [
                ch("Negotiate", &[]),
                ch("Bearer", &[("realm", "x")]),
                ch("Basic", &[])
            ]
        );
        assert_eq!(parse_challenges("").unwrap(), []);
        assert_eq!(parse_challenges(" ,, ").unwrap(), []);
    }

    #[test]
    fn token68() {
        assert_eq!(
            parse_challenges("Negotiate a87421000492aa874209af8bc028, Basic YWxh+/Zg==").unwrap(),
            [
                ch("Negotiate", &[("", "a87421000492aa874209af8bc028")]),
                ch("Basic", &[("", "YWxh+/Zg==")])
            ]
        );
        // `a=` cannot be a parameter (a value is never empty unless quoted): a token68.
        assert_eq!(
            parse_challenges("X a= , Bearer").unwrap(),
            [ch("X", &[("", "a=")]), ch("Bearer", &[])]
        );
        // A token68 cannot be followed by parameters.
        assert!(parse_challenges("X abc, y=z").is_err());
    }

    #[test]
    fn quoted_values_do_not_leak_params() {
        let h = r#"Bearer error="insufficient_scope", error_description="a, scope=evil, resource_metadata=\"https://evil\"", scope="good""#;
        let c = bearer_challenge([h]).unwrap();
        assert_eq!(c.scope.as_deref(), Some("good"));
        assert_eq!(c.resource_metadata, None);
        assert_eq!(
            c.error_description.as_deref(),
            Some(r#"a, scope=evil, resource_metadata="https://evil""#)
        );
        let only_inside = r#"Bearer error_description="x scope=evil""#;
        assert_eq!(bearer_challenge([only_inside]).unwrap().scope, None);
    }

    #[test]
    fn escapes_and_non_ascii() {
        assert_eq!(
            parse_challenges(r#"Bearer a="\\\"\x", b="é, ü""#).unwrap(),
            [ch("Bearer", &[("a", r#"\"x"#), ("b", "é, ü")])]
        );
        assert_eq!(
            parse_challenges(r#"Bearer a="""#).unwrap(),
            [ch("Bearer", &[("a", "")])]
        );
    }

    #[test]
    fn mixed_case_and_token_values() {
        let c = bearer_challenge([r#"bEaReR Error=insufficient_scope, SCOPE="x""#]).unwrap();
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some("x"));
        let parsed = parse_challenges("bearer Error=x").unwrap();
        assert_eq!(parsed[0].scheme, "bearer");
        assert_eq!(parsed[0].params[0].0, "error");
        assert_eq!(parsed[0].param("ERROR"), Some("x"));
        // Error codes are case-sensitive.
        let c = bearer_challenge(["Bearer error=Insufficient_Scope"]).unwrap();
        assert!(!c.is_insufficient_scope());
    }

    #[test]
    fn bearer_selection_across_values() {
        assert_eq!(bearer_challenge([]), None);
        assert_eq!(bearer_challenge([r#"Basic realm="x""#]), None);
        // DPoP only when there is no Bearer anywhere.
        let c =
            bearer_challenge([r#"DPoP algs="ES256", scope="d""#, r#"Bearer scope="b""#]).unwrap();
        assert_eq!(c.scope.as_deref(), Some("b"));
        let c = bearer_challenge([r#"DPoP algs="ES256", scope="d""#, "Basic"]).unwrap();
        assert_eq!(c.scope.as_deref(), Some("d"));
        // The first Bearer wins; a malformed value is skipped.
        let c = bearer_challenge([
            r#"Bearer scope="broken"#,
            r#"Bearer scope="one""#,
            r#"Bearer scope="two""#,
        ])
        .unwrap();
        assert_eq!(c.scope.as_deref(), Some("one"));
    }

    #[test]
    fn scopes_dedup_keep_order() {
        let c = BearerChallenge {
            scope: Some("  b a  b c a ".into()),
            ..BearerChallenge::default()
        };
        assert_eq!(c.scopes(), ["b", "a", "c"]);
        let empty = bearer_challenge([r#"Bearer scope="""#]).unwrap();
        assert_eq!(empty.scope.as_deref(), Some(""));
        assert!(empty.scopes().is_empty());
    }

    #[test]
    fn malformed() {
        use ChallengeError as E;
        assert!(matches!(
            parse_challenges(r#"Bearer realm="x"#),
            Err(E::UnterminatedQuote { position: 13 })
        ));
        assert!(matches!(
            parse_challenges(r#"Bearer realm="x\"#),
            Err(E::UnterminatedQuote { .. })
        ));
        assert!(matches!(
            parse_challenges("Bearer a=b, c="),
            Err(E::UnexpectedEnd { .. })
        ));
        assert!(matches!(
            parse_challenges("Bearer a=b, c=,"),
            Err(E::Unexpected { found: ',', .. })
        ));
        assert!(matches!(
            parse_challenges("Bearer a=b c=d"),
            Err(E::Unexpected {
                position: 11,
                found: 'c',
                ..
            })
        ));
        assert!(matches!(
            parse_challenges("=x"),
            Err(E::Unexpected {
                position: 0,
                found: '=',
                ..
            })
        ));
        assert!(matches!(
            parse_challenges("Bearer\"x\""),
            Err(E::Unexpected { .. })
        ));
        assert!(matches!(
            parse_challenges("Bearer a=\"x\ny\""),
            Err(E::Unexpected { found: '\n', .. })
        ));
        assert!(matches!(
            parse_challenges("Bearer a=@"),
            Err(E::Unexpected { found: '@', .. })
        ));
        assert!(matches!(
            parse_challenges("Bearer a=\"x\"\"y\""),
            Err(E::Unexpected { .. })
        ));
        assert_eq!(
            parse_challenges(r#"Bearer scope="a", Scope="evil""#),
            Err(E::DuplicateParam {
                name: "scope".into()
            })
        );
        assert!(matches!(
            parse_challenges("Bearer é=x"),
            Err(E::Unexpected { found: 'é', .. })
        ));
        // Every message names what was wrong.
        let msg = parse_challenges("Bearer a=b c=d").unwrap_err().to_string();
        assert!(msg.contains("'c'") && msg.contains("byte 11"), "{msg}");
    }

    #[test]
    fn bounds() {
        use ChallengeError as E;
        let long = "a".repeat(MAX_HEADER_BYTES + 1);
        assert_eq!(
            parse_challenges(&long),
            Err(E::TooLong {
                limit: MAX_HEADER_BYTES
            })
        );
        let many = vec!["Basic"; MAX_CHALLENGES].join(", ");
        assert_eq!(parse_challenges(&many).unwrap().len(), MAX_CHALLENGES);
        let too_many = vec!["Basic"; MAX_CHALLENGES + 1].join(", ");
        assert_eq!(
            parse_challenges(&too_many),
            Err(E::TooManyChallenges {
                limit: MAX_CHALLENGES
            })
        );
        let params: Vec<String> = (0..=MAX_PARAMS).map(|i| format!("p{i}=v")).collect();
        let ok = format!("Bearer {}", params[..MAX_PARAMS].join(", "));
        assert_eq!(parse_challenges(&ok).unwrap()[0].params.len(), MAX_PARAMS);
        let too_many = format!("Bearer {}", params.join(", "));
        assert_eq!(
            parse_challenges(&too_many),
            Err(E::TooManyParams { limit: MAX_PARAMS })
        );
        let big_value = format!("Bearer a=\"{}\"", "x".repeat(MAX_STRING_BYTES + 1));
        assert!(matches!(
            parse_challenges(&big_value),
            Err(E::StringTooLong { .. })
        ));
        let big_token = format!("Bearer a={}", "x".repeat(MAX_STRING_BYTES + 1));
        assert!(matches!(
            parse_challenges(&big_token),
            Err(E::StringTooLong { .. })
        ));
        let big_t68 = format!("Bearer {}", "x/".repeat(MAX_STRING_BYTES / 2 + 1));
        assert!(matches!(
            parse_challenges(&big_t68),
            Err(E::StringTooLong { .. })
        ));
        let exact = format!("Bearer a=\"{}\"", "x".repeat(MAX_STRING_BYTES));
        assert!(parse_challenges(&exact).is_ok());
    }
}
