//! How an [`Authorizer`](super::Authorizer) behaves: [`AuthConfig`], the client identity
//! it uses, the grant it runs, and the [`Signer`] for the grants that sign.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::credentials::Credentials;
use crate::http::secret::REDACTED;
use crate::version::ProtocolVersion;

/// Who the client is to the authorization server.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientIdentity {
    /// The first that applies, in the order of the 2025-11-25 and 2026-07-28
    /// specifications: a registration stored for the issuer, a Client ID Metadata
    /// Document (when the server supports them and `cimd_url` is set), dynamic client
    /// registration (when the server offers it). Otherwise the flow fails with
    /// [`AuthError::NeedClientCredentials`](super::AuthError::NeedClientCredentials).
    Auto {
        /// The https URL of this client's metadata document, if it has one.
        cimd_url: Option<String>,
    },
    /// Credentials registered beforehand. When `issuer` is set they are used only with
    /// that authorization server, and a flow that meets another one fails rather than
    /// showing them to it.
    PreRegistered {
        /// The client id.
        client_id: String,
        /// The secret of a confidential client.
        client_secret: Option<String>,
        /// The issuer the credentials belong to.
        issuer: Option<String>,
    },
    /// Only a Client ID Metadata Document: fails when the server does not support them.
    Cimd {
        /// The https URL of the document (a non-root path).
        url: String,
    },
    /// Only dynamic client registration: fails when the server does not offer it.
    Dcr,
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientIdentity::Auto { cimd_url } => {
                f.debug_struct("Auto").field("cimd_url", cimd_url).finish()
            }
            ClientIdentity::PreRegistered {
                client_id, issuer, ..
            } => f
                .debug_struct("PreRegistered")
                .field("client_id", client_id)
                .field("client_secret", &REDACTED)
                .field("issuer", issuer)
                .finish(),
            ClientIdentity::Cimd { url } => f.debug_struct("Cimd").field("url", url).finish(),
            ClientIdentity::Dcr => f.write_str("Dcr"),
        }
    }
}

/// How tokens are obtained.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Grant {
    /// The authorization code grant with PKCE: a person approves in a browser.
    AuthorizationCode,
    /// The `client_credentials` grant (the `io.modelcontextprotocol/oauth-client-credentials`
    /// extension) with the [`ClientIdentity::PreRegistered`] credentials: authenticated
    /// with the secret (`client_secret_basic`), or with a JWT signed by the configured
    /// [`Signer`] (`private_key_jwt`) when there is one.
    ClientCredentials,
    /// The JWT bearer grant (RFC 7523) with an assertion the workload already holds.
    JwtBearer {
        /// The assertion.
        assertion: String,
    },
    /// Enterprise-managed authorization (the `io.modelcontextprotocol/enterprise-managed-authorization`
    /// extension): the ID token from the enterprise identity provider is exchanged there
    /// (RFC 8693) for an identity assertion grant (ID-JAG) for this authorization server,
    /// which is then presented with the JWT bearer grant, authenticated with the
    /// [`ClientIdentity::PreRegistered`] credentials.
    EnterpriseManaged {
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// The ID token the person got from the identity provider.
        id_token: String,
        /// This client's id at the identity provider.
        idp_client_id: String,
        /// This client's secret at the identity provider, if it has one.
        idp_client_secret: Option<String>,
    },
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grant::AuthorizationCode => f.write_str("AuthorizationCode"),
            Grant::ClientCredentials => f.write_str("ClientCredentials"),
            Grant::JwtBearer { .. } => write!(f, "JwtBearer({REDACTED})"),
            Grant::EnterpriseManaged {
                idp_token_endpoint,
                idp_client_id,
                ..
            } => f
                .debug_struct("EnterpriseManaged")
                .field("idp_token_endpoint", idp_token_endpoint)
                .field("idp_client_id", idp_client_id)
                .finish_non_exhaustive(),
        }
    }
}

/// Signs JWTs for `private_key_jwt` client authentication and DPoP proofs. Signing
/// needs the private key and, for ECDSA and RSA, fresh randomness, so it lives outside
/// the machine: the adapters implement it with `ring`.
pub trait Signer: Send + Sync {
    /// The JWS `alg`, such as `ES256` or `RS256`.
    fn algorithm(&self) -> &str;
    /// The signature of `message` (for ES256 the 64-byte `r || s` form JWS uses).
    ///
    /// # Errors
    ///
    /// A description of why the key could not sign.
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, String>;
    /// The public key as a JWK (for DPoP's `jwk` header).
    fn public_jwk(&self) -> serde_json::Value;
}

/// How the flow behaves. Build with [`AuthConfig::new`] and change the fields you need.
#[derive(Clone)]
#[non_exhaustive]
pub struct AuthConfig {
    /// Where the authorization server sends the browser back: a loopback `http` URL the
    /// adapter listens on (RFC 8252), or an `https` URL.
    pub redirect_uri: String,
    /// `client_name` in registrations.
    pub client_name: String,
    /// Who the client is.
    pub identity: ClientIdentity,
    /// How tokens are obtained.
    pub grant: Grant,
    /// Scopes the client wants besides those the server asks for: added, in order, to
    /// every authorization and `client_credentials` request. Default none.
    pub scopes: Vec<String>,
    /// The resource indicator (RFC 8707) of the MCP server, when it is not the server's
    /// URL: sent when the server publishes no protected resource metadata, and required
    /// of that metadata's `resource` (byte for byte) when it does. Default none.
    pub resource: Option<String>,
    /// Whether a person can approve in a browser. Without one, a flow that would need an
    /// approval fails with [`AuthError::ApprovalNeeded`](super::AuthError::ApprovalNeeded)
    /// before it registers a client or opens anything; refreshing a stored token still
    /// works. Default true.
    pub interactive: bool,
    /// Ask for a refresh token: `offline_access` is added to the scope when the
    /// authorization server lists it (and only then). Default true.
    pub offline_access: bool,
    /// Allow plain `http` to hosts that are not loopback. Default false.
    pub allow_insecure: bool,
    /// Let an MCP server with a public name send the flow to authorization servers at
    /// private or loopback addresses (an intranet whose public-looking names resolve to
    /// private addresses). Default false: such requests are marked
    /// [`public_only`](super::AuthRequest::public_only).
    pub allow_private_servers: bool,
    /// 2025-03-26 servers: with no protected resource metadata, the MCP server's origin
    /// is the authorization server, and its default endpoints (`/authorize`, `/token`,
    /// `/register`) are used when it publishes no metadata. Default false.
    pub legacy_fallback: bool,
    /// The newest protocol version the client speaks: the rules that differ by version
    /// (refusing metadata without `code_challenge_methods_supported`) follow it.
    pub protocol_version: ProtocolVersion,
    /// HTTP requests one flow may make before it fails. Default 24.
    pub max_requests: u32,
    /// Largest response body read, in bytes. Default 64 KiB.
    pub max_body_bytes: usize,
    /// Step-up authorizations (`403 insufficient_scope`) allowed per flow. Default 2.
    pub max_step_ups: u32,
    /// How long each HTTP request may take. Default 30 s.
    pub request_timeout: Duration,
    /// How long a person has to approve in the browser. Default 10 minutes.
    pub approval_timeout: Duration,
    /// Seed of the flow's random numbers (PKCE verifiers, `state`, JWT ids): at least 32
    /// bytes from the operating system's generator. The adapters fill it.
    pub seed: [u8; 32],
    /// Credentials saved by an earlier run, for this server.
    pub credentials: Option<Credentials>,
    /// Signs client assertions (`private_key_jwt`).
    pub signer: Option<Arc<dyn Signer>>,
    /// The key of DPoP proofs (RFC 9449): with one, tokens are bound to it whenever the
    /// authorization server supports DPoP with its algorithm
    /// (`dpop_signing_alg_values_supported`), and every MCP request then carries a fresh
    /// proof. Default none (bearer tokens).
    pub dpop: Option<Arc<dyn Signer>>,
}

impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfig")
            .field("redirect_uri", &self.redirect_uri)
            .field("identity", &self.identity)
            .field("grant", &self.grant)
            .field("protocol_version", &self.protocol_version)
            .field("credentials", &self.credentials.is_some())
            .field(
                "signer",
                &self.signer.as_ref().map(|s| s.algorithm().to_owned()),
            )
            .finish_non_exhaustive()
    }
}

impl AuthConfig {
    /// Defaults for a client whose browser comes back to `redirect_uri`, seeded with
    /// `seed`.
    #[must_use]
    pub fn new(redirect_uri: impl Into<String>, seed: [u8; 32]) -> Self {
        AuthConfig {
            redirect_uri: redirect_uri.into(),
            client_name: "mcp-proto".to_owned(),
            identity: ClientIdentity::Auto { cimd_url: None },
            grant: Grant::AuthorizationCode,
            scopes: Vec::new(),
            resource: None,
            interactive: true,
            offline_access: true,
            allow_insecure: false,
            allow_private_servers: false,
            legacy_fallback: false,
            protocol_version: ProtocolVersion::V2026_07_28,
            max_requests: 24,
            max_body_bytes: 64 * 1024,
            max_step_ups: 2,
            request_timeout: Duration::from_secs(30),
            approval_timeout: Duration::from_secs(600),
            seed,
            credentials: None,
            signer: None,
            dpop: None,
        }
    }
}
