//! Why an authorization flow failed: [`AuthError`].

/// Why an authorization flow failed, or a callback was refused. Peer text in it is cut
/// to 256 bytes; secrets never appear.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No protected resource metadata at any of the places it may be.
    #[error("the server publishes no protected resource metadata (RFC 9728)")]
    NoResourceMetadata,
    /// No authorization server metadata at any of the places it may be.
    #[error("the authorization server publishes no metadata (RFC 8414 / OpenID discovery)")]
    NoServerMetadata,
    /// A metadata document was malformed.
    #[error("invalid {what}: {detail}")]
    InvalidMetadata {
        /// Which document.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// The protected resource metadata names another resource than this server.
    #[error("the protected resource metadata is for {resource:?}, not {expected:?}")]
    ResourceMismatch {
        /// The `resource` it named.
        resource: String,
        /// This server.
        expected: String,
    },
    /// Metadata or a callback named another issuer than the authorization server's.
    #[error("issuer mismatch: expected {expected:?}, got {found:?}")]
    IssuerMismatch {
        /// The issuer the flow uses.
        expected: String,
        /// What arrived.
        found: String,
    },
    /// The authorization server promised `iss` in its responses and the callback had
    /// none (RFC 9207).
    #[error("the authorization response has no `iss` although the server promised one")]
    MissingIss,
    /// The authorization server does not support PKCE with `S256`.
    #[error("the authorization server does not support PKCE with S256")]
    NoPkce,
    /// A URL failed the URL policy (scheme, host, userinfo, fragment).
    #[error("refused URL {url:?}: {reason}")]
    UrlPolicy {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// A request was answered with a redirect; authorization requests follow none.
    #[error("an authorization request was redirected (HTTP {status}); redirects are not followed")]
    Redirect {
        /// The status.
        status: u16,
    },
    /// An unexpected status.
    #[error("{what}: HTTP {status}")]
    Status {
        /// What was being fetched.
        what: &'static str,
        /// The status.
        status: u16,
    },
    /// A response body over the limit.
    #[error("a response body exceeded {limit} bytes")]
    BodyTooLarge {
        /// The limit.
        limit: usize,
    },
    /// The flow made as many requests as it may.
    #[error("the authorization flow made {limit} requests without finishing")]
    TooManyRequests {
        /// The limit.
        limit: u32,
    },
    /// A request or the approval took too long.
    #[error("timed out waiting for {what}")]
    Timeout {
        /// What.
        what: String,
    },
    /// A request failed below HTTP.
    #[error("an authorization request failed: {detail}")]
    Transport {
        /// What the driver reported.
        detail: String,
    },
    /// No client identity applies: configure a client id (or a metadata document URL).
    #[error("no client identity for this authorization server: {detail}")]
    NeedClientCredentials {
        /// Why none applied.
        detail: String,
    },
    /// Pre-registered credentials belong to another authorization server.
    #[error("the configured client credentials belong to {bound:?}, not {issuer:?}")]
    ClientBoundElsewhere {
        /// The issuer they belong to.
        bound: String,
        /// The issuer the server uses.
        issuer: String,
    },
    /// Dynamic client registration failed.
    #[error("client registration failed: {0}")]
    RegistrationRefused(String),
    /// The token endpoint refused.
    #[error("the token request failed: {0}")]
    TokenRefused(String),
    /// The person (or the server) denied the authorization.
    #[error("authorization denied: {error}{}", .description.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The OAuth error code.
        error: String,
        /// Its description.
        description: Option<String>,
    },
    /// The server still wants more scope after the allowed step-ups.
    #[error("the server keeps asking for more scope ({scope:?}); gave up")]
    InsufficientScope {
        /// The scope it asked for last.
        scope: String,
    },
    /// The server refused a request for insufficient scope (`403 insufficient_scope`)
    /// naming no scope beyond those the token was granted (or none at all): asking the
    /// person again for the same scopes cannot help, so no authorization started.
    #[error(
        "the server refused the request for insufficient scope but names no scope beyond \
         those already granted ({scope:?}); not asking again"
    )]
    ScopeNotGrantable {
        /// The scope the challenge named (empty when it named none).
        scope: String,
    },
    /// The flow needs a person's approval and none can be given
    /// ([`AuthConfig::interactive`](super::AuthConfig::interactive) is false).
    #[error("the server needs authorization, which needs a person to approve in a browser")]
    ApprovalNeeded,
    /// A callback arrived with no approval pending.
    #[error("no authorization is waiting for a callback")]
    NotWaiting,
    /// A callback whose `state` is not the pending authorization's.
    #[error("the callback's state does not match the pending authorization")]
    StateMismatch,
    /// A malformed callback.
    #[error("invalid callback: {detail}")]
    InvalidCallback {
        /// What was wrong.
        detail: String,
    },
    /// The MCP server refused a request's DPoP proof for want of a nonce (`401` with
    /// `error="use_dpop_nonce"`, RFC 9449 §9) once more after the request was sent
    /// again with the nonce it gave (`resent`), or without giving one (no `DPoP-Nonce`):
    /// sending it again cannot help, so it is not, and no authorization starts.
    #[error(
        "the MCP server refused the DPoP proof of a {method} request for want of a nonce {}",
        if *.resent {
            "again, after it was sent with the nonce the server gave"
        } else {
            "without giving one (no DPoP-Nonce header)"
        }
    )]
    DpopNonceRefused {
        /// The request's HTTP method: `POST`, `GET` or `DELETE`.
        method: String,
        /// Whether it had been sent again with the server's nonce.
        resent: bool,
    },
    /// The signer failed.
    #[error("signing failed: {detail}")]
    Signing {
        /// Why.
        detail: String,
    },
}
