//! Token endpoint responses (RFC 6749 §5), dynamic client registration (RFC 7591), the
//! client ID metadata document, and HTTP Basic client authentication.
//!
//! Bodies are read as in [`super::metadata`]: at most
//! [`MAX_BODY_BYTES`](super::metadata::MAX_BODY_BYTES), a JSON object whose members
//! appear once, strings of at most
//! [`MAX_STRING_BYTES`](super::metadata::MAX_STRING_BYTES), `null` the same as absent.
//! Secrets (access and refresh tokens, client secrets) never appear in `Debug` output.

use std::fmt;

use base64::Engine as _;
use serde_json::{Value, json};

use super::form::encode_into;
use super::metadata::{FieldError, JsonObject, clip};
use crate::http::secret::{REDACTED, redacted};

/// Longest part of an error description (and of an error code) that `Display` shows.
const DISPLAY_CLIP_BYTES: usize = 256;

/// A token endpoint's successful answer.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenResponse {
    /// `access_token`: the token for `Authorization: Bearer` (or `DPoP`). Never empty.
    pub access_token: String,
    /// `token_type`, normalized: `"Bearer"` or `"DPoP"` whatever the case sent.
    pub token_type: String,
    /// `expires_in` in seconds, when given as a number or a string of digits that is
    /// not negative (a fraction is cut off; a value too large for `u64` saturates). The
    /// flow reads `0` as no lifetime stated. Another value states no usable lifetime:
    /// this is `None` then, as when absent, and [`TokenResponse::ignored_expires_in`]
    /// tells what was sent.
    pub expires_in: Option<u64>,
    /// An `expires_in` that was present but stated no usable lifetime (negative, not a
    /// number or a string of digits), as JSON text clipped to 64 bytes. The response is
    /// taken all the same (RFC 6749 makes `expires_in` only RECOMMENDED): its token's
    /// lifetime is unknown, and it is used until a server refuses it.
    pub ignored_expires_in: Option<String>,
    /// `refresh_token`, when given and not empty.
    pub refresh_token: Option<String>,
    /// `scope`: the granted scopes when the server says (absent means as requested).
    pub scope: Option<String>,
}

impl fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenResponse")
            .field("access_token", &REDACTED)
            .field("token_type", &self.token_type)
            .field("expires_in", &self.expires_in)
            .field("ignored_expires_in", &self.ignored_expires_in)
            .field("refresh_token", &redacted(&self.refresh_token))
            .field("scope", &self.scope)
            .finish()
    }
}

/// An OAuth error response (RFC 6749 §5.2, RFC 7591 §3.2.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthError {
    /// `error`: the error code (`invalid_grant`, `invalid_client`, …), as sent.
    pub error: String,
    /// `error_description`, as sent (for people, not for decisions).
    pub error_description: Option<String>,
    /// `error_uri`, as sent (not vetted: do not open it).
    pub error_uri: Option<String>,
}

impl fmt::Display for OAuthError {
    /// `error` and `error_description`, each clipped to 256 bytes, control characters
    /// escaped (they come from the server and end up in logs).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_sanitized(f, clip(&self.error, DISPLAY_CLIP_BYTES))?;
        if let Some(d) = &self.error_description {
            f.write_str(": ")?;
            write_sanitized(f, clip(d, DISPLAY_CLIP_BYTES))?;
            if d.len() > DISPLAY_CLIP_BYTES {
                f.write_str("…")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for OAuthError {}

/// Writes `s` with control characters escaped.
fn write_sanitized(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    for c in s.chars() {
        if c.is_control() {
            write!(f, "{}", c.escape_default())?;
        } else {
            f.write_fmt(format_args!("{c}"))?;
        }
    }
    Ok(())
}

/// Why a token endpoint (or registration) response gave no token (or client).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The server answered with an OAuth error (`invalid_grant`, …).
    #[error("authorization server error: {0}")]
    OAuth(OAuthError),
    /// An HTTP status that is neither success nor an OAuth error response.
    #[error("unexpected HTTP status {status} from the authorization server")]
    Status {
        /// The status code.
        status: u16,
    },
    /// A success status with a body that is not what the RFC describes; the message
    /// names the field (or the body problem).
    #[error("malformed response: {0}")]
    Malformed(String),
    /// A `token_type` other than `Bearer` (or `DPoP` when DPoP was requested); clipped
    /// to 64 bytes.
    #[error("unexpected token_type {0:?}")]
    UnexpectedTokenType(String),
}

/// Reads a token endpoint response: `status` and the body.
///
/// * 200: a JSON object with a non-empty string `access_token` and a `token_type` of
///   `Bearer` in any case (or `DPoP` in any case when `expect_dpop`; `Bearer` is still
///   accepted then, as RFC 9449 §5 allows a server without DPoP to issue one: check
///   [`TokenResponse::token_type`] if a DPoP-bound token is required). A 200 body with
///   an `error` member is [`TokenError::OAuth`].
/// * 400 or 401 with an OAuth error object: [`TokenError::OAuth`].
/// * Anything else: [`TokenError::Status`].
///
/// ```
/// use mcp_proto::auth::token::{parse_token_response, TokenError};
/// let ok = parse_token_response(200, br#"{"access_token":"t","token_type":"bearer","expires_in":3600}"#, false).unwrap();
/// assert_eq!((ok.token_type.as_str(), ok.expires_in), ("Bearer", Some(3600)));
/// let err = parse_token_response(400, br#"{"error":"invalid_grant"}"#, false).unwrap_err();
/// assert!(matches!(err, TokenError::OAuth(e) if e.error == "invalid_grant"));
/// ```
///
/// # Errors
///
/// As above; [`TokenError::Malformed`] names the field at fault.
pub fn parse_token_response(
    status: u16,
    body: &[u8],
    expect_dpop: bool,
) -> Result<TokenResponse, TokenError> {
    if status != 200 {
        return Err(error_response(status, body));
    }
    let obj = JsonObject::parse(body).map_err(|e| TokenError::Malformed(e.to_string()))?;
    if obj.get("error").is_some() {
        return Err(TokenError::OAuth(oauth_error(&obj)?));
    }
    let access_token = required_string(&obj, "access_token")?;
    if !is_b64token(access_token) {
        // It goes in `Authorization: Bearer …` as it is: a line break there would end
        // the header (and the request could not be sent), a space would split it.
        return Err(TokenError::Malformed(
            "field `access_token` holds characters a Bearer token cannot carry (RFC 6750 \
             b64token: letters, digits, - . _ ~ + / and trailing =)"
                .to_owned(),
        ));
    }
    let token_type = required_string(&obj, "token_type")?;
    let token_type = if token_type.eq_ignore_ascii_case("Bearer") {
        "Bearer"
    } else if expect_dpop && token_type.eq_ignore_ascii_case("DPoP") {
        "DPoP"
    } else {
        return Err(TokenError::UnexpectedTokenType(
            clip(token_type, 64).to_owned(),
        ));
    };
    // Only RECOMMENDED (RFC 6749 §5.1): a value that states no usable lifetime leaves
    // it unknown rather than losing the token, whose code the server has spent.
    let (expires_in, ignored_expires_in) = match obj.get("expires_in") {
        None => (None, None),
        Some(v) => match seconds(v, true) {
            Some(s) => (Some(s), None),
            None => (None, Some(clip(&v.to_string(), 64).to_owned())),
        },
    };
    let refresh_token = optional_string(&obj, "refresh_token")?.filter(|s| !s.is_empty());
    if refresh_token.is_some_and(|t| !t.bytes().all(|b| (0x20..=0x7e).contains(&b))) {
        return Err(TokenError::Malformed(
            "field `refresh_token` holds characters outside VSCHAR (RFC 6749 A.17)".to_owned(),
        ));
    }
    let scope = optional_string(&obj, "scope")?;
    Ok(TokenResponse {
        access_token: access_token.to_owned(),
        token_type: token_type.to_owned(),
        expires_in,
        ignored_expires_in,
        refresh_token: refresh_token.map(str::to_owned),
        scope: scope.map(str::to_owned),
    })
}

/// Whether `token` is a `b64token` (RFC 6750 2.1): the syntax of a Bearer credential.
fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

/// A non-negative whole number of seconds: a JSON integer, a float with no fraction (or
/// any non-negative float, its fraction cut off, when `truncate`), or a string of ASCII
/// digits; too large saturates at `u64::MAX`.
fn seconds(v: &Value, truncate: bool) -> Option<u64> {
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                return Some(u);
            }
            let f = n.as_f64()?;
            // `as` truncates and saturates; refuse negatives (integers below zero fail
            // `as_u64` and land here as negative floats).
            (f >= 0.0 && (truncate || f.fract() == 0.0)).then_some(f as u64)
        }
        Value::String(s)
            if !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Some(s.parse::<u64>().unwrap_or(u64::MAX))
        }
        _ => None,
    }
}

/// A non-success answer: an OAuth error for 400/401 with an error object, otherwise the
/// status.
fn error_response(status: u16, body: &[u8]) -> TokenError {
    if matches!(status, 400 | 401)
        && let Ok(obj) = JsonObject::parse(body)
        && let Ok(e) = oauth_error(&obj)
    {
        return TokenError::OAuth(e);
    }
    TokenError::Status { status }
}

/// The OAuth error in `obj` (which has an `error` member). A description or URI of the
/// wrong type is dropped rather than hiding the error code.
fn oauth_error(obj: &JsonObject) -> Result<OAuthError, TokenError> {
    let error = required_string(obj, "error")?;
    let optional = |field| obj.string(field).ok().flatten().map(str::to_owned);
    Ok(OAuthError {
        error: error.to_owned(),
        error_description: optional("error_description"),
        error_uri: optional("error_uri"),
    })
}

fn malformed(field: &str, e: &FieldError) -> TokenError {
    TokenError::Malformed(e.describe(field))
}

fn optional_string<'o>(obj: &'o JsonObject, field: &str) -> Result<Option<&'o str>, TokenError> {
    obj.string(field).map_err(|e| malformed(field, &e))
}

/// A present, non-empty string.
fn required_string<'o>(obj: &'o JsonObject, field: &str) -> Result<&'o str, TokenError> {
    match optional_string(obj, field)? {
        Some(s) if !s.is_empty() => Ok(s),
        Some(_) => Err(TokenError::Malformed(format!("field `{field}` is empty"))),
        None => Err(TokenError::Malformed(format!(
            "required field `{field}` is missing"
        ))),
    }
}

/// A client registered with dynamic client registration.
#[derive(Clone, PartialEq, Eq)]
pub struct Registration {
    /// `client_id`. Never empty.
    pub client_id: String,
    /// `client_secret`, for confidential clients.
    pub client_secret: Option<String>,
    /// `token_endpoint_auth_method` the server chose, if it said.
    pub token_endpoint_auth_method: Option<String>,
    /// `client_secret_expires_at` (seconds since the Unix epoch; 0 means never), if
    /// given.
    pub client_secret_expires_at: Option<u64>,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("client_id", &self.client_id)
            .field("client_secret", &redacted(&self.client_secret))
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field("client_secret_expires_at", &self.client_secret_expires_at)
            .finish()
    }
}

/// Reads a dynamic client registration response (RFC 7591 §3.2): 201 (or 200) with a
/// JSON object holding a non-empty string `client_id`. A 400 or 401 with an error object
/// (`invalid_redirect_uri`, `invalid_client_metadata`, …) is [`TokenError::OAuth`], as is
/// a success body with an `error` member.
///
/// # Errors
///
/// As for [`parse_token_response`].
pub fn parse_registration(status: u16, body: &[u8]) -> Result<Registration, TokenError> {
    if !matches!(status, 200 | 201) {
        return Err(error_response(status, body));
    }
    let obj = JsonObject::parse(body).map_err(|e| TokenError::Malformed(e.to_string()))?;
    if obj.get("error").is_some() {
        return Err(TokenError::OAuth(oauth_error(&obj)?));
    }
    let client_id = required_string(&obj, "client_id")?;
    let client_secret = optional_string(&obj, "client_secret")?.filter(|s| !s.is_empty());
    let method = optional_string(&obj, "token_endpoint_auth_method")?;
    let client_secret_expires_at = match obj.get("client_secret_expires_at") {
        None => None,
        Some(v) => Some(seconds(v, false).ok_or_else(|| {
            TokenError::Malformed(
                "field `client_secret_expires_at` is not a non-negative integer".to_owned(),
            )
        })?),
    };
    Ok(Registration {
        client_id: client_id.to_owned(),
        client_secret: client_secret.map(str::to_owned),
        token_endpoint_auth_method: method.map(str::to_owned),
        client_secret_expires_at,
    })
}

/// The JSON body of a dynamic client registration request (RFC 7591 §2):
/// `client_name`, `redirect_uris`, `grant_types`, `response_types` (`["code"]` when
/// `grant_types` contains `authorization_code`, omitted otherwise),
/// `token_endpoint_auth_method`, `application_type` (`native` or `web`, required by MCP
/// 2026-07-28) and `scope` when given.
///
/// ```
/// use mcp_proto::auth::token::registration_body;
/// let body = registration_body("My client", &["http://127.0.0.1:8080/callback"],
///     &["authorization_code", "refresh_token"], "none", "native", None);
/// let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
/// assert_eq!(v["response_types"], serde_json::json!(["code"]));
/// ```
#[must_use]
pub fn registration_body(
    client_name: &str,
    redirect_uris: &[&str],
    grant_types: &[&str],
    token_endpoint_auth_method: &str,
    application_type: &str,
    scope: Option<&str>,
) -> Vec<u8> {
    let mut body = json!({
        "client_name": client_name,
        "redirect_uris": redirect_uris,
        "grant_types": grant_types,
        "token_endpoint_auth_method": token_endpoint_auth_method,
        "application_type": application_type,
    });
    if grant_types.contains(&"authorization_code") {
        body["response_types"] = json!(["code"]);
    }
    if let Some(scope) = scope {
        body["scope"] = json!(scope);
    }
    serde_json::to_vec(&body).unwrap_or_default()
}

/// A client ID metadata document (draft-ietf-oauth-client-id-metadata-document): the
/// JSON to publish at `client_id_url`, which is also its `client_id`; a public client
/// (`token_endpoint_auth_method` `none`) using the authorization code grant with refresh.
///
/// ```
/// use mcp_proto::auth::token::client_metadata_document;
/// let url = "https://conformance-test.local/client-metadata.json";
/// let doc = client_metadata_document(url, "Client", &["http://127.0.0.1:3333/callback"]);
/// let v: serde_json::Value = serde_json::from_slice(&doc).unwrap();
/// assert_eq!(v["client_id"], url);
/// ```
#[must_use]
pub fn client_metadata_document(
    client_id_url: &str,
    client_name: &str,
    redirect_uris: &[&str],
) -> Vec<u8> {
    let doc = json!({
        "client_id": client_id_url,
        "client_name": client_name,
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    serde_json::to_vec(&doc).unwrap_or_default()
}

/// The `Authorization` header value for `client_secret_basic` (RFC 6749 §2.3.1):
/// `Basic ` and the base64 of the form-encoded client id, `:`, the form-encoded secret.
///
/// ```
/// use mcp_proto::auth::token::basic_authorization;
/// assert_eq!(basic_authorization("client", "secret"), "Basic Y2xpZW50OnNlY3JldA==");
/// ```
#[must_use]
pub fn basic_authorization(client_id: &str, secret: &str) -> String {
    let mut credentials = String::with_capacity(client_id.len() + secret.len() + 1);
    encode_into(&mut credentials, client_id);
    credentials.push(':');
    encode_into(&mut credentials, secret);
    let mut out = String::from("Basic ");
    base64::engine::general_purpose::STANDARD.encode_string(credentials, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: &str) -> TokenResponse {
        parse_token_response(200, body.as_bytes(), false).unwrap()
    }

    fn err(status: u16, body: &str) -> TokenError {
        parse_token_response(status, body.as_bytes(), false).unwrap_err()
    }

    fn malformed_mentions(e: TokenError, field: &str) {
        match e {
            TokenError::Malformed(m) => assert!(m.contains(field), "{m} should name {field}"),
            other => panic!("expected Malformed naming {field}, got {other:?}"),
        }
    }

    #[test]
    fn conformance_token_response() {
        let t = ok(r#"{"access_token":"test-token","token_type":"Bearer","expires_in":3600}"#);
        assert_eq!(
            t,
            TokenResponse {
                access_token: "test-token".into(),
                token_type: "Bearer".into(),
                expires_in: Some(3600),
                ignored_expires_in: None,
                refresh_token: None,
                scope: None,
            }
        );
        let t = ok(
            r#"{"access_token":"a","token_type":"bearer","refresh_token":"r","scope":"mcp:basic","x":{"y":[1]}}"#,
        );
        assert_eq!(t.token_type, "Bearer");
        assert_eq!(t.refresh_token.as_deref(), Some("r"));
        assert_eq!(t.scope.as_deref(), Some("mcp:basic"));
        assert_eq!(t.expires_in, None);
    }

    /// A token goes into `Authorization` as it is: one with a line break (a header of its
    /// own, or a request that cannot be sent) or a space is refused when it arrives,
    /// before it is stored.
    #[test]
    fn a_token_that_cannot_go_in_a_header_is_refused() {
        for token in ["abc\r\nX-Injected: 1", "a b", "", "==", "t\u{e9}"] {
            let body = json!({"access_token": token, "token_type": "Bearer"}).to_string();
            malformed_mentions(err(200, &body), "access_token");
        }
        for token in ["eyJh.eyJz-_.sig", "abc+/==", "A~b"] {
            let body = json!({"access_token": token, "token_type": "Bearer"}).to_string();
            assert_eq!(ok(&body).access_token, token);
        }
        let body = json!({"access_token": "a", "token_type": "Bearer", "refresh_token": "r\n"});
        malformed_mentions(err(200, &body.to_string()), "refresh_token");
    }

    #[test]
    fn token_types() {
        assert_eq!(
            ok(r#"{"access_token":"a","token_type":"BEARER"}"#).token_type,
            "Bearer"
        );
        assert_eq!(
            err(200, r#"{"access_token":"a","token_type":"mac"}"#),
            TokenError::UnexpectedTokenType("mac".into())
        );
        assert_eq!(
            err(200, r#"{"access_token":"a","token_type":"DPoP"}"#),
            TokenError::UnexpectedTokenType("DPoP".into())
        );
        let dpop = parse_token_response(200, br#"{"access_token":"a","token_type":"dpop"}"#, true)
            .unwrap();
        assert_eq!(dpop.token_type, "DPoP");
        let bearer =
            parse_token_response(200, br#"{"access_token":"a","token_type":"Bearer"}"#, true)
                .unwrap();
        assert_eq!(bearer.token_type, "Bearer");
        let long = format!(
            r#"{{"access_token":"a","token_type":"{}"}}"#,
            "x".repeat(500)
        );
        assert!(matches!(err(200, &long), TokenError::UnexpectedTokenType(t) if t.len() == 64));
        malformed_mentions(err(200, r#"{"access_token":"a"}"#), "token_type");
        malformed_mentions(
            err(200, r#"{"access_token":"a","token_type":1}"#),
            "token_type",
        );
    }

    /// `expires_in` is only RECOMMENDED (RFC 6749 §5.1): a value that states no usable
    /// lifetime leaves the lifetime unknown, and the token is kept (the code it answers
    /// was spent); what was ignored is told in `ignored_expires_in`. A fraction is cut
    /// off.
    #[test]
    fn expires_in_forms() {
        let body =
            |v: &str| format!(r#"{{"access_token":"a","token_type":"Bearer","expires_in":{v}}}"#);
        for (v, want) in [
            ("3600", Some(3600)),
            ("0", Some(0)),
            ("\"3600\"", Some(3600)),
            ("3600.0", Some(3600)),
            ("3600.5", Some(3600)),
            ("1.5", Some(1)),
            ("0.5", Some(0)),
            ("null", None),
            ("18446744073709551615", Some(u64::MAX)),
            ("99999999999999999999999", Some(u64::MAX)),
            ("1e300", Some(u64::MAX)),
            ("\"99999999999999999999999\"", Some(u64::MAX)),
        ] {
            let t = ok(&body(v));
            assert_eq!(t.expires_in, want, "{v}");
            assert_eq!(t.ignored_expires_in, None, "{v}");
        }
        for v in [
            "-1",
            "\"-1\"",
            "\"\"",
            "\"1h\"",
            "true",
            "[1]",
            "\" 1\"",
            "-0.5",
            "-99999999999999999999999",
            "\"3600.5\"",
            "{}",
        ] {
            let t = ok(&body(v));
            assert_eq!(t.access_token, "a", "{v}");
            assert_eq!(t.expires_in, None, "{v}");
            let text = serde_json::from_str::<Value>(v).unwrap().to_string();
            assert_eq!(t.ignored_expires_in, Some(text), "{v}");
        }
        // What is kept of a long value is clipped.
        let long = format!("\"{}\"", "x".repeat(500));
        let t = ok(&body(&long));
        assert_eq!(t.expires_in, None);
        assert!(t.ignored_expires_in.unwrap().len() <= 64);
    }

    #[test]
    fn access_token_problems() {
        malformed_mentions(err(200, r#"{"token_type":"Bearer"}"#), "access_token");
        malformed_mentions(
            err(200, r#"{"access_token":"","token_type":"Bearer"}"#),
            "access_token",
        );
        malformed_mentions(
            err(200, r#"{"access_token":{"v":1},"token_type":"Bearer"}"#),
            "access_token",
        );
        malformed_mentions(
            err(
                200,
                r#"{"access_token":"a","access_token":"b","token_type":"Bearer"}"#,
            ),
            "access_token",
        );
        malformed_mentions(
            err(
                200,
                r#"{"access_token":"a","token_type":"Bearer","refresh_token":5}"#,
            ),
            "refresh_token",
        );
        malformed_mentions(
            err(
                200,
                r#"{"access_token":"a","token_type":"Bearer","scope":["a"]}"#,
            ),
            "scope",
        );
        assert!(matches!(err(200, "<html>"), TokenError::Malformed(m) if m.contains("JSON")));
        assert!(matches!(err(200, "[1]"), TokenError::Malformed(m) if m.contains("object")));
        assert!(matches!(err(200, ""), TokenError::Malformed(_)));
        let big = vec![b' '; 64 * 1024 + 1];
        assert!(matches!(
            parse_token_response(200, &big, false),
            Err(TokenError::Malformed(m)) if m.contains("longer")
        ));
        // An empty refresh token is no refresh token.
        assert_eq!(
            ok(r#"{"access_token":"a","token_type":"Bearer","refresh_token":""}"#).refresh_token,
            None
        );
    }

    #[test]
    fn oauth_errors() {
        let e = err(
            400,
            r#"{"error":"invalid_grant","error_description":"bad code","error_uri":"https://x/e"}"#,
        );
        assert_eq!(
            e,
            TokenError::OAuth(OAuthError {
                error: "invalid_grant".into(),
                error_description: Some("bad code".into()),
                error_uri: Some("https://x/e".into()),
            })
        );
        assert!(
            matches!(err(401, r#"{"error":"invalid_client"}"#), TokenError::OAuth(e) if e.error == "invalid_client")
        );
        // A 200 carrying an error is an error.
        assert!(matches!(
            err(200, r#"{"error":"invalid_scope","access_token":"a","token_type":"Bearer"}"#),
            TokenError::OAuth(e) if e.error == "invalid_scope"
        ));
        malformed_mentions(err(200, r#"{"error":{"code":1}}"#), "error");
        // A description of the wrong type does not hide the code.
        assert_eq!(
            err(400, r#"{"error":"invalid_request","error_description":7}"#),
            TokenError::OAuth(OAuthError {
                error: "invalid_request".into(),
                error_description: None,
                error_uri: None,
            })
        );
        for (status, body) in [
            (400, "not json"),
            (400, r#"{"message":"x"}"#),
            (400, r#"{"error":5}"#),
            (401, ""),
            (403, r#"{"error":"access_denied"}"#),
            (500, r#"{"error":"server_error"}"#),
            (302, ""),
            (201, r#"{"access_token":"a","token_type":"Bearer"}"#),
        ] {
            assert_eq!(
                err(status, body),
                TokenError::Status { status },
                "{status} {body}"
            );
        }
    }

    #[test]
    fn oauth_error_display_is_clipped_and_sanitized() {
        let e = OAuthError {
            error: "invalid_grant".into(),
            error_description: Some(format!("line1\nline2\x1b[31m{}", "é".repeat(300))),
            error_uri: None,
        };
        let shown = e.to_string();
        assert!(
            shown.starts_with("invalid_grant: line1\\nline2\\u{1b}[31m"),
            "{shown}"
        );
        assert!(!shown.contains('\n') && !shown.contains('\x1b'));
        assert!(shown.len() < 256 + 64, "{}", shown.len());
        assert!(shown.ends_with('…'));
        let short = OAuthError {
            error: "x".into(),
            error_description: None,
            error_uri: None,
        };
        assert_eq!(short.to_string(), "x");
        assert_eq!(
            TokenError::OAuth(short).to_string(),
            "authorization server error: x"
        );
    }

    #[test]
    fn debug_redacts_secrets() {
        let t = ok(
            r#"{"access_token":"SECRET-AT","token_type":"Bearer","refresh_token":"SECRET-RT","scope":"s"}"#,
        );
        let d = format!("{t:?}");
        assert!(!d.contains("SECRET"), "{d}");
        assert!(d.contains("<redacted>") && d.contains("Bearer") && d.contains("\"s\""));
        let r =
            parse_registration(201, br#"{"client_id":"cid","client_secret":"SECRET-CS"}"#).unwrap();
        let d = format!("{r:?}");
        assert!(!d.contains("SECRET"), "{d}");
        assert!(d.contains("cid") && d.contains("<redacted>"));
        let d = format!(
            "{:?}",
            parse_registration(201, br#"{"client_id":"cid"}"#).unwrap()
        );
        assert!(d.contains("client_secret: None"), "{d}");
    }

    #[test]
    fn registrations() {
        let r = parse_registration(
            201,
            br#"{"client_id":"abc","client_secret":"s","token_endpoint_auth_method":"client_secret_basic","client_secret_expires_at":0,"redirect_uris":["http://127.0.0.1/cb"]}"#,
        )
        .unwrap();
        assert_eq!(
            r,
            Registration {
                client_id: "abc".into(),
                client_secret: Some("s".into()),
                token_endpoint_auth_method: Some("client_secret_basic".into()),
                client_secret_expires_at: Some(0),
            }
        );
        let r = parse_registration(200, br#"{"client_id":"abc"}"#).unwrap();
        assert_eq!(r.client_secret, None);
        malformed_mentions(
            parse_registration(201, br#"{"client_secret":"s"}"#).unwrap_err(),
            "client_id",
        );
        malformed_mentions(
            parse_registration(201, br#"{"client_id":1}"#).unwrap_err(),
            "client_id",
        );
        malformed_mentions(
            parse_registration(201, br#"{"client_id":"a","client_secret_expires_at":-5}"#)
                .unwrap_err(),
            "client_secret_expires_at",
        );
        malformed_mentions(
            parse_registration(
                201,
                br#"{"client_id":"a","token_endpoint_auth_method":["none"]}"#,
            )
            .unwrap_err(),
            "token_endpoint_auth_method",
        );
        assert!(matches!(
            parse_registration(400, br#"{"error":"invalid_redirect_uri","error_description":"no"}"#),
            Err(TokenError::OAuth(e)) if e.error == "invalid_redirect_uri"
        ));
        assert!(matches!(
            parse_registration(201, br#"{"error":"invalid_client_metadata"}"#),
            Err(TokenError::OAuth(e)) if e.error == "invalid_client_metadata"
        ));
        assert_eq!(
            parse_registration(404, b"Not Found"),
            Err(TokenError::Status { status: 404 })
        );
    }

    #[test]
    fn registration_and_cimd_bodies() {
        let body = registration_body(
            "MCP client",
            &["http://127.0.0.1:3333/callback"],
            &["authorization_code", "refresh_token"],
            "client_secret_basic",
            "native",
            Some("mcp:basic mcp:read"),
        );
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            v,
            json!({
                "client_name": "MCP client",
                "redirect_uris": ["http://127.0.0.1:3333/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "client_secret_basic",
                "application_type": "native",
                "scope": "mcp:basic mcp:read",
            })
        );
        let cc = registration_body(
            "svc \"q\"",
            &[],
            &["client_credentials"],
            "client_secret_basic",
            "web",
            None,
        );
        let v: Value = serde_json::from_slice(&cc).unwrap();
        assert_eq!(v["client_name"], "svc \"q\"");
        assert_eq!(v.get("response_types"), None);
        assert_eq!(v.get("scope"), None);
        assert_eq!(v["redirect_uris"], json!([]));

        let url = "https://conformance-test.local/client-metadata.json";
        let doc = client_metadata_document(url, "Client", &["http://127.0.0.1:3333/callback"]);
        let v: Value = serde_json::from_slice(&doc).unwrap();
        assert_eq!(
            v,
            json!({
                "client_id": url,
                "client_name": "Client",
                "redirect_uris": ["http://127.0.0.1:3333/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            })
        );
    }

    #[test]
    fn basic_auth_header() {
        use base64::engine::general_purpose::STANDARD;
        // RFC 7617 §2's example.
        assert_eq!(
            basic_authorization("Aladdin", "open sesame"),
            format!("Basic {}", STANDARD.encode("Aladdin:open%20sesame"))
        );
        let h = basic_authorization("id:with/colon", "s3cr&t=+é");
        let decoded = STANDARD.decode(h.strip_prefix("Basic ").unwrap()).unwrap();
        assert_eq!(
            String::from_utf8(decoded).unwrap(),
            "id%3Awith%2Fcolon:s3cr%26t%3D%2B%C3%A9"
        );
        // What a server decodes (split on the first ':', form-decode) is the original.
        let (id, secret) = ("id:with/colon", "s3cr&t=+é");
        let h = basic_authorization(id, secret);
        let raw = String::from_utf8(STANDARD.decode(&h[6..]).unwrap()).unwrap();
        let (i, s) = raw.split_once(':').unwrap();
        let back = crate::auth::form::parse_pairs(&format!("i={i}&s={s}")).unwrap();
        assert_eq!((back[0].1.as_str(), back[1].1.as_str()), (id, secret));
    }
}
