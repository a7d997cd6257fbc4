//! DPoP (RFC 9449): proofs for token requests and MCP requests, and the servers' nonces.

use super::*;
use crate::auth::revoke::add_client_auth;

impl Authorizer {
    /// Whether tokens are DPoP-bound: a key is configured and the authorization server
    /// supports its algorithm.
    pub(super) fn dpop_active(&self) -> bool {
        let Some(key) = &self.config.dpop else {
            return false;
        };
        self.server_metadata
            .as_ref()
            .and_then(|m| m.dpop_signing_alg_values_supported.as_ref())
            .is_some_and(|algs| algs.iter().any(|a| a == key.algorithm()))
    }

    /// A DPoP proof (RFC 9449 §4.2) for `method` on `url` (query and fragment left out),
    /// with `ath` for an access token and the server's nonce when it gave one.
    pub(super) fn dpop_proof(
        &mut self,
        now: Instant,
        method: &str,
        url: &str,
        token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, AuthError> {
        let Some(key) = self.config.dpop.clone() else {
            return Err(AuthError::Signing {
                detail: "no DPoP key".into(),
            });
        };
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let header = json!({"typ": "dpop+jwt", "alg": key.algorithm(), "jwk": key.public_jwk()});
        let mut claims = json!({
            "jti": self.rng.token(16),
            "htm": method,
            "htu": htu,
            "iat": self.unix(now),
        });
        if let Some(t) = token {
            claims["ath"] = json!(base64url(&crate::auth::crypto::sha256(t.as_bytes())));
        }
        if let Some(n) = nonce {
            claims["nonce"] = json!(n);
        }
        sign_jwt(key.as_ref(), &header, &claims)
    }

    /// The headers that authorize one MCP request: `Authorization` (`Bearer` or `DPoP`)
    /// and, for a DPoP-bound token, a fresh `DPoP` proof for `method` on `url`. Empty
    /// without an access token. A token known to be expired is sent all the same (the
    /// server decides: clocks differ, and the margin counts a token expired before it
    /// is); one that can be refreshed is refreshed first, see
    /// [`Authorizer::refresh_before_request`].
    pub fn request_headers(
        &mut self,
        now: Instant,
        method: &str,
        url: &EndpointUrl,
    ) -> Vec<(String, String)> {
        self.now = now;
        let Some(value) = self.creds.authorization() else {
            return Vec::new();
        };
        let mut headers = vec![("Authorization".to_owned(), value)];
        if self.creds.token_type.eq_ignore_ascii_case("dpop") {
            let token = self.creds.access_token.clone();
            let nonce = self.resource_nonce(url).map(str::to_owned);
            if let Ok(proof) = self.dpop_proof(
                now,
                method,
                url.as_str(),
                token.as_deref(),
                nonce.as_deref(),
            ) {
                headers.push(("DPoP".to_owned(), proof));
            }
        }
        headers
    }

    /// Whether the access token held is DPoP-bound: every MCP request carries a proof,
    /// and a `401` asking for a nonce (`error="use_dpop_nonce"`) is answered by sending
    /// the request again with it (the nonce recorded by
    /// [`Authorizer::handle_resource_nonce`], the request sent again by the client
    /// machine), not by a flow.
    #[must_use]
    pub fn is_dpop_bound(&self) -> bool {
        self.creds.token_type.eq_ignore_ascii_case("dpop") && self.creds.access_token.is_some()
    }

    /// The MCP server at `url` gave a DPoP nonce (a `DPoP-Nonce` header, on any of its
    /// responses: a `401` asking for it, or a success announcing the next one, RFC 9449
    /// §8-9): the next proofs to that origin carry it. An empty value is ignored; a long
    /// one is cut. The authorization server's nonces are kept apart.
    pub fn handle_resource_nonce(&mut self, url: &EndpointUrl, nonce: &str) {
        if nonce.is_empty() {
            return;
        }
        let origin = url.origin();
        if let Some(at) = self.rs_nonces.iter().position(|(o, _)| o == origin) {
            self.rs_nonces.remove(at);
        } else if self.rs_nonces.len() >= MAX_RESOURCE_NONCES {
            self.rs_nonces.remove(0);
        }
        self.rs_nonces.push((origin.to_owned(), clip(nonce)));
    }

    /// The DPoP nonce the MCP server at `url`'s origin gave last.
    fn resource_nonce(&self, url: &EndpointUrl) -> Option<&str> {
        let origin = url.origin();
        self.rs_nonces
            .iter()
            .find(|(o, _)| o == origin)
            .map(|(_, n)| n.as_str())
    }

    /// The client's authentication at the token endpoint: a signed assertion for
    /// `private_key_jwt`, else what `add_client_auth` writes.
    pub(super) fn client_auth(
        &mut self,
        now: Instant,
        client: &ClientRegistration,
        headers: &mut Vec<(String, String)>,
        body: &mut Vec<(String, String)>,
    ) -> Result<(), AuthError> {
        if client.auth_method != "private_key_jwt" {
            add_client_auth(client, headers, body);
            return Ok(());
        }
        let assertion = self.client_assertion(now, &client.client_id)?;
        body.push(("client_id".into(), client.client_id.clone()));
        body.push((
            "client_assertion_type".into(),
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
        ));
        body.push(("client_assertion".into(), assertion));
        Ok(())
    }

    /// A `private_key_jwt` assertion (RFC 7523 §3): `iss` = `sub` = the client id,
    /// `aud` = the issuer, valid for five minutes.
    pub(super) fn client_assertion(
        &mut self,
        now: Instant,
        client_id: &str,
    ) -> Result<String, AuthError> {
        let Some(signer) = self.config.signer.clone() else {
            return Err(AuthError::NeedClientCredentials {
                detail: "private_key_jwt needs a signing key".into(),
            });
        };
        let iat = self.unix(now);
        let header = json!({"alg": signer.algorithm(), "typ": "JWT"});
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": self.creds.issuer,
            "iat": iat,
            "exp": iat.saturating_add(300),
            "jti": self.rng.token(16),
        });
        sign_jwt(signer.as_ref(), &header, &claims)
    }
}
