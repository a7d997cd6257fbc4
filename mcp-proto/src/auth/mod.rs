//! OAuth 2.1 authorization for MCP clients, without IO.
//!
//! [`Authorizer`] is the client side of the MCP authorization specification (2025-06-18,
//! 2025-11-25 and 2026-07-28) as a machine: protected resource metadata (RFC 9728),
//! authorization server metadata (RFC 8414, OpenID discovery), client identity
//! (pre-registered, Client ID Metadata Documents, dynamic registration per RFC 7591),
//! the authorization code grant with PKCE `S256`, resource indicators (RFC 8707), the
//! authorization response `iss` check (RFC 9207), refresh, step-up on
//! `insufficient_scope`, and the `client_credentials` and JWT bearer grants. The
//! HTTP client machine runs it for you when its [`HttpConfig`](crate::client::http::HttpConfig)
//! has an [`AuthConfig`]; it can also be driven on its own.
//!
//! Driven on its own, with canned answers standing in for the servers:
//!
//! ```
//! use mcp_proto::Instant;
//! use mcp_proto::auth::{AuthConfig, AuthEvent, AuthResponse, Authorizer};
//! use mcp_proto::http::EndpointUrl;
//!
//! let now = Instant::ZERO;
//! let mcp = EndpointUrl::parse("https://mcp.example.com/mcp", false).unwrap();
//! let config = AuthConfig::new("http://127.0.0.1:8976/callback", [7; 32]);
//! let mut auth = Authorizer::new(config, &mcp, now, 1_700_000_000);
//! let json = |status, body: &str| AuthResponse { status, headers: vec![], body: body.into() };
//!
//! // The MCP server said 401; the flow asks for the protected resource metadata first.
//! let challenge = r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#;
//! auth.handle_unauthorized(now, [challenge]);
//! let prm = auth.poll_request().unwrap();
//! auth.handle_response(now, prm.id, json(200, r#"{"resource": "https://mcp.example.com/mcp",
//!     "authorization_servers": ["https://auth.example.com"]}"#));
//! let asm = auth.poll_request().unwrap();
//! assert_eq!(asm.url.as_str(), "https://auth.example.com/.well-known/oauth-authorization-server");
//! auth.handle_response(now, asm.id, json(200, r#"{"issuer": "https://auth.example.com",
//!     "authorization_endpoint": "https://auth.example.com/authorize",
//!     "token_endpoint": "https://auth.example.com/token",
//!     "registration_endpoint": "https://auth.example.com/register",
//!     "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"]}"#));
//! let register = auth.poll_request().unwrap();
//! auth.handle_response(now, register.id, json(201, r#"{"client_id": "c-42"}"#));
//!
//! // A person approves in a browser; the browser comes back to the redirect URI.
//! let Some(AuthEvent::OpenUrl(url)) = auth.poll_event() else { panic!() };
//! let state = url.split("state=").nth(1).unwrap().split('&').next().unwrap();
//! auth.handle_callback(now, &format!("http://127.0.0.1:8976/callback?code=xyz&state={state}")).unwrap();
//! let token = auth.poll_request().unwrap();
//! assert_eq!(token.url.as_str(), "https://auth.example.com/token");
//! auth.handle_response(now, token.id, json(200, r#"{"access_token": "t0k", "token_type": "Bearer", "expires_in": 3600}"#));
//! assert!(matches!(auth.poll_event(), Some(AuthEvent::CredentialsChanged(_))));
//! assert_eq!(auth.poll_event(), Some(AuthEvent::Authorized));
//! assert_eq!(auth.authorization().as_deref(), Some("Bearer t0k"));
//! ```
//!
//! The leaf modules parse what the servers send: [`challenge`] (`WWW-Authenticate`),
//! [`metadata`], [`token`], and [`form`] encoding.

pub mod challenge;
mod config;
mod credentials;
pub mod crypto;
mod error;
mod exchange;
mod flow;
pub mod form;
pub mod metadata;
pub(crate) mod revoke;
pub mod token;

pub use config::{AuthConfig, ClientIdentity, Grant, Signer};
pub use credentials::{ClientRegistration, Credentials};
pub use error::AuthError;
pub use exchange::Exchange;
pub use flow::{AuthEvent, AuthRequest, AuthRequestId, AuthResponse, Authorizer, is_public};
pub use revoke::revocation_requests;
