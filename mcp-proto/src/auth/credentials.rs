//! What an authorization leaves behind: [`Credentials`] for one MCP server, in a shape a
//! store can keep as JSON. The machine never reads or writes storage: it starts from the
//! credentials it was given and reports new ones as an event.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::http::secret::redacted;

/// The client as one authorization server knows it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRegistration {
    /// The issuer this registration belongs to (never used with another).
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// The secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint (`none`,
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt`).
    pub auth_method: String,
    /// Where the id came from: `dcr`, `cimd` or `pre-registered`.
    pub source: String,
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &redacted(&self.client_secret))
            .field("auth_method", &self.auth_method)
            .field("source", &self.source)
            .finish()
    }
}

/// Tokens for one MCP server, and how they were obtained: the binding a store keeps.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The MCP server's URL.
    pub server_url: String,
    /// The resource the tokens are for (the protected resource metadata's `resource`).
    pub resource: String,
    /// The authorization server's issuer, as its metadata spells it.
    pub issuer: String,
    /// The client registration used.
    pub client: Option<ClientRegistration>,
    /// The access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
    /// `Bearer` or `DPoP`.
    #[serde(default = "bearer")]
    pub token_type: String,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When the access token was received, in seconds since the Unix epoch: with
    /// `expires_at`, its lifetime, which sets the margin [`Credentials::is_expired`] keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obtained_at: Option<u64>,
    /// The refresh token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// The scopes asked for, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_scope: Option<String>,
    /// The scopes granted, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted_scope: Option<String>,
    /// The authorization server's revocation endpoint (RFC 7009), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
}

/// How long before its expiry a token is no longer sent, at most, in seconds.
const EXPIRY_MARGIN: u64 = 60;

fn bearer() -> String {
    "Bearer".to_owned()
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("server_url", &self.server_url)
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("client", &self.client)
            .field("access_token", &redacted(&self.access_token))
            .field("token_type", &self.token_type)
            .field("expires_at", &self.expires_at)
            .field("obtained_at", &self.obtained_at)
            .field("refresh_token", &redacted(&self.refresh_token))
            .field("requested_scope", &self.requested_scope)
            .field("granted_scope", &self.granted_scope)
            .field("revocation_endpoint", &self.revocation_endpoint)
            .finish()
    }
}

impl Credentials {
    /// Whether the access token is known to be expired at `unix_now`, or close enough to
    /// it not to be sent: a minute before its expiry, or a quarter of its lifetime
    /// before when that is shorter (a token that lives 60 s or less, which a fixed
    /// minute counted expired on arrival, is used for three quarters of its life). A
    /// token without an expiry is assumed valid until a server refuses it.
    #[must_use]
    pub fn is_expired(&self, unix_now: u64) -> bool {
        let Some(expires_at) = self.expires_at else {
            return false;
        };
        let lifetime = self.obtained_at.map(|o| expires_at.saturating_sub(o));
        let margin = lifetime.map_or(EXPIRY_MARGIN, |l| (l / 4).min(EXPIRY_MARGIN));
        unix_now.saturating_add(margin) >= expires_at
    }

    /// The `Authorization` header value, when there is an access token.
    #[must_use]
    pub fn authorization(&self) -> Option<String> {
        let token = self.access_token.as_ref()?;
        let scheme = if self.token_type.eq_ignore_ascii_case("dpop") {
            "DPoP"
        } else {
            "Bearer"
        };
        Some(format!("{scheme} {token}"))
    }
}
