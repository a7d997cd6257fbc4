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
//! The leaf modules parse what the servers send: [`challenge`] (`WWW-Authenticate`),
//! [`metadata`], [`token`], and [`form`] encoding.

pub mod challenge;
mod config;
mod credentials;
pub mod crypto;
mod error;
mod flow;
pub mod form;
pub mod metadata;
pub mod token;

pub use config::{AuthConfig, ClientIdentity, Grant, Signer};
pub use credentials::{ClientRegistration, Credentials};
pub use error::AuthError;
pub use flow::{AuthEvent, AuthRequest, AuthRequestId, AuthResponse, Authorizer};
