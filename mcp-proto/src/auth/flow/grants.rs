//! Token requests: the authorization code, refresh, client credentials, JWT bearer and token exchange grants, and what their answers mean.

use super::*;

impl Authorizer {
    pub(super) fn refresh(&mut self, now: Instant) {
        let Some(refresh) = self.creds.refresh_token.clone() else {
            return self.ensure_client(now);
        };
        // A registration bound to another issuer is never shown to this one.
        let issuer = &self.creds.issuer;
        if self
            .creds
            .client
            .as_ref()
            .is_none_or(|c| c.issuer != *issuer)
        {
            return self.ensure_client(now);
        }
        self.token_request(
            now,
            TokenGrant::Refresh,
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        );
    }

    pub(super) fn client_credentials(&mut self, now: Instant) {
        let signs = self.config.signer.is_some();
        let method = |_| {
            if signs {
                "private_key_jwt".to_owned()
            } else {
                "client_secret_basic".to_owned()
            }
        };
        match self.use_pre_registered(method) {
            Ok(true) => {}
            Ok(false) => {
                return self.fail(AuthError::NeedClientCredentials {
                    detail: "client_credentials needs pre-registered credentials".into(),
                });
            }
            Err(e) => return self.fail(e),
        }
        self.scoped_grant(
            now,
            TokenGrant::ClientCredentials,
            vec![("grant_type", "client_credentials")],
        );
    }

    pub(super) fn jwt_bearer(&mut self, now: Instant, assertion: &str) {
        // The client authenticates when it has credentials; the assertion is what counts.
        let method = |secret| {
            if secret {
                "client_secret_basic".to_owned()
            } else {
                "none".to_owned()
            }
        };
        if let Err(e) = self.use_pre_registered(method) {
            return self.fail(e);
        }
        let pairs = vec![
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", assertion),
        ];
        self.scoped_grant(now, TokenGrant::JwtBearer, pairs);
    }

    /// Takes the pre-registered credentials as the client, authenticated at the token
    /// endpoint by `method(has a secret)`. False without them; an error, and nothing
    /// taken, when they are bound to another issuer than this flow's: they are never
    /// shown to it, whatever the grant.
    pub(super) fn use_pre_registered(
        &mut self,
        method: impl FnOnce(bool) -> String,
    ) -> Result<bool, AuthError> {
        let ClientIdentity::PreRegistered {
            client_id,
            client_secret,
            issuer: bound,
        } = self.config.identity.clone()
        else {
            return Ok(false);
        };
        if let Some(bound) = bound
            && bound != self.creds.issuer
        {
            return Err(AuthError::ClientBoundElsewhere {
                bound,
                issuer: self.creds.issuer.clone(),
            });
        }
        self.creds.client = Some(ClientRegistration {
            issuer: self.creds.issuer.clone(),
            client_id,
            auth_method: method(client_secret.is_some()),
            client_secret,
            source: "pre-registered".into(),
        });
        Ok(true)
    }

    /// A token request of a grant without a person: `pairs` and the scope, if any.
    fn scoped_grant(&mut self, now: Instant, grant: TokenGrant, pairs: Vec<(&str, &str)>) {
        let scope = self.ask_scope().join(" ");
        let mut pairs = pairs;
        if !scope.is_empty() {
            pairs.push(("scope", &scope));
        }
        self.token_request(now, grant, &pairs);
    }

    /// POSTs to the token endpoint: `pairs`, `resource`, and the client's authentication.
    pub(super) fn token_request(
        &mut self,
        now: Instant,
        grant: TokenGrant,
        pairs: &[(&str, &str)],
    ) {
        let Some(endpoint) = self
            .server_metadata
            .as_ref()
            .map(|m| m.token_endpoint.clone())
        else {
            return self.fail(AuthError::NoServerMetadata);
        };
        let kept = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        // A request of its own: a `use_dpop_nonce` answer to it is followed once (the
        // retry sets the flag again once sent).
        self.nonce_retried = false;
        self.last_token = Some((grant, kept));
        let resource = self.resource();
        let mut body: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        body.push(("resource".into(), resource));
        let mut headers = vec![(
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        )];
        if let Some(client) = self.creds.client.clone()
            && let Err(e) = self.client_auth(now, &client, &mut headers, &mut body)
        {
            return self.fail(e);
        }
        if self.dpop_active() {
            let nonce = self.as_nonce.clone();
            match self.dpop_proof(now, "POST", &endpoint, None, nonce.as_deref()) {
                Ok(proof) => headers.push(("DPoP".to_owned(), proof)),
                Err(e) => return self.fail(e),
            }
        }
        let refs: Vec<(&str, &str)> = body.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let encoded = form::encode_pairs(&refs).into_bytes();
        if self.send(now, "POST", &endpoint, headers, Some(encoded)) {
            self.step = Step::Token { grant };
        }
    }

    /// The token exchange of enterprise-managed authorization (RFC 8693): the ID token
    /// for an identity assertion grant (ID-JAG) naming this authorization server and
    /// resource, at the identity provider.
    pub(super) fn token_exchange(
        &mut self,
        now: Instant,
        endpoint: &str,
        id_token: &str,
        client_id: &str,
        client_secret: Option<&str>,
    ) {
        let resource = self.resource();
        let scope = self.ask_scope().join(" ");
        let issuer = self.creds.issuer.clone();
        let mut pairs = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag",
            ),
            ("subject_token", id_token),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
            ("audience", issuer.as_str()),
            ("resource", resource.as_str()),
            ("client_id", client_id),
        ];
        if let Some(secret) = client_secret {
            pairs.push(("client_secret", secret));
        }
        if !scope.is_empty() {
            pairs.push(("scope", scope.as_str()));
        }
        let body = form::encode_pairs(&pairs).into_bytes();
        let headers = vec![(
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        )];
        if self.send(now, "POST", endpoint, headers, Some(body)) {
            self.step = Step::Token {
                grant: TokenGrant::IdJag,
            };
        }
    }

    /// The identity provider's answer to the token exchange: the ID-JAG goes on to the
    /// JWT bearer grant at the authorization server.
    pub(super) fn on_id_jag(&mut self, now: Instant, response: &AuthResponse) {
        let depth = crate::Limits::DEFAULT_MAX_NESTING_DEPTH;
        let parsed: Option<serde_json::Value> = (response.status == 200)
            .then(|| {
                let max = super::super::metadata::MAX_BODY_BYTES * 256;
                crate::jsonrpc::check_untrusted_json(&response.body, depth, max).ok()?;
                serde_json::from_slice(&response.body).ok()
            })
            .flatten();
        let assertion = parsed.as_ref().and_then(|v| {
            let issued = v
                .get("issued_token_type")
                .and_then(serde_json::Value::as_str);
            (issued == Some("urn:ietf:params:oauth:token-type:id-jag"))
                .then(|| v.get("access_token").and_then(serde_json::Value::as_str))
                .flatten()
        });
        match assertion {
            Some(a) => {
                let a = a.to_owned();
                self.jwt_bearer(now, &a);
            }
            None => {
                let detail =
                    match token::parse_token_response(response.status, &response.body, false) {
                        Err(e) => token_detail(e),
                        Ok(_) => "the identity provider issued no ID-JAG".to_owned(),
                    };
                self.fail(AuthError::TokenRefused(format!("token exchange: {detail}")));
            }
        }
    }

    pub(super) fn on_token(&mut self, now: Instant, grant: TokenGrant, response: &AuthResponse) {
        if grant == TokenGrant::IdJag {
            return self.on_id_jag(now, response);
        }
        if let Some(nonce) = response.header_all("dpop-nonce").next() {
            self.as_nonce = Some(clip(nonce));
        }
        let dpop = self.dpop_active();
        match token::parse_token_response(response.status, &response.body, dpop) {
            Ok(t) => {
                self.creds.access_token = Some(t.access_token);
                self.creds.token_type = t.token_type;
                let unix_now = self.unix(now);
                // `expires_in: 0` states no lifetime: the token is used until refused.
                let lifetime = t.expires_in.filter(|&s| s > 0);
                self.creds.expires_at = lifetime.map(|s| unix_now.saturating_add(s));
                self.creds.obtained_at = Some(unix_now);
                if t.refresh_token.is_some() {
                    self.creds.refresh_token = t.refresh_token;
                }
                // Absent, the scope is the one asked for: by a refresh, which names
                // none, the one granted before (RFC 6749 §6), which may be narrower.
                let asked = match grant {
                    TokenGrant::Refresh => self.creds.granted_scope.take(),
                    _ => None,
                };
                self.creds.granted_scope = t
                    .scope
                    .or(asked)
                    .or_else(|| self.creds.requested_scope.clone());
                self.refresh_failures = 0;
                self.step = Step::Idle;
                self.events
                    .push_back(AuthEvent::CredentialsChanged(Box::new(self.creds.clone())));
                self.events.push_back(AuthEvent::Authorized);
            }
            Err(TokenError::OAuth(e)) => {
                let code_flow = matches!(grant, TokenGrant::Code | TokenGrant::Refresh);
                match e.error.as_str() {
                    "use_dpop_nonce" if dpop && !self.nonce_retried && self.as_nonce.is_some() => {
                        if let Some((grant, pairs)) = self.last_token.clone() {
                            let refs: Vec<(&str, &str)> = pairs
                                .iter()
                                .map(|(k, v)| (k.as_str(), v.as_str()))
                                .collect();
                            self.token_request(now, grant, &refs);
                        }
                        self.nonce_retried = true;
                    }
                    "invalid_grant" if grant == TokenGrant::Refresh => {
                        // The refresh token is dead, and the access token it was to
                        // replace is refused or expired: neither is kept (a store that
                        // kept them tried them again on every run).
                        self.drop_tokens();
                        self.ensure_client(now);
                    }
                    "invalid_grant" if grant == TokenGrant::Code && !self.retried_code => {
                        self.retried_code = true;
                        self.authorize(now);
                    }
                    "invalid_client" | "unauthorized_client"
                        if code_flow
                            && !self.retried_client
                            && self
                                .creds
                                .client
                                .as_ref()
                                .is_some_and(|c| c.source == "dcr") =>
                    {
                        self.retried_client = true;
                        self.creds.client = None;
                        self.creds.refresh_token = None;
                        self.ensure_client(now);
                    }
                    _ if grant == TokenGrant::Refresh => {
                        self.refresh_refused(now, TokenError::OAuth(e));
                    }
                    _ => self.fail(AuthError::TokenRefused(e.to_string())),
                }
            }
            Err(e) if grant == TokenGrant::Refresh => self.refresh_refused(now, e),
            Err(e) => self.fail(AuthError::TokenRefused(token_detail(e))),
        }
    }

    /// A refresh failed otherwise than with `invalid_grant` (or a registration made
    /// again). For a cause that may pass (a `5xx` or `429`, `server_error`,
    /// `temporarily_unavailable`, a DPoP nonce still refused) the flow fails and the
    /// refresh token stays for the next one, [`MAX_REFRESH_FAILURES`] times in a row at
    /// most. Any other answer is definitive: the tokens are dropped, and the flow goes
    /// on to a new authorization after an OAuth error (the grant is refused, not the
    /// client), or fails (`invalid_client`: the client's own credentials are refused;
    /// a malformed or unexpected answer).
    fn refresh_refused(&mut self, now: Instant, e: TokenError) {
        let passing = match &e {
            TokenError::OAuth(o) => matches!(
                o.error.as_str(),
                "server_error" | "temporarily_unavailable" | "use_dpop_nonce"
            ),
            TokenError::Status { status } => *status >= 500 || *status == 429,
            TokenError::Malformed(_) | TokenError::UnexpectedTokenType(_) => false,
        };
        if passing {
            self.refresh_failed_for_now();
            return self.fail(AuthError::TokenRefused(token_detail(e)));
        }
        self.drop_tokens();
        match e {
            TokenError::OAuth(o) if o.error != "invalid_client" => self.ensure_client(now),
            e => self.fail(AuthError::TokenRefused(token_detail(e))),
        }
    }

    /// Counts a refresh that failed for a cause that may pass; at
    /// [`MAX_REFRESH_FAILURES`] in a row the tokens are given up.
    pub(super) fn refresh_failed_for_now(&mut self) {
        self.refresh_failures = self.refresh_failures.saturating_add(1);
        if self.refresh_failures >= MAX_REFRESH_FAILURES && self.creds.refresh_token.is_some() {
            self.drop_tokens();
        }
    }

    /// Drops the access and refresh tokens (the registration stays) and reports it.
    fn drop_tokens(&mut self) {
        self.refresh_failures = 0;
        self.creds.refresh_token = None;
        self.creds.access_token = None;
        self.creds.expires_at = None;
        self.creds.obtained_at = None;
        self.events
            .push_back(AuthEvent::CredentialsChanged(Box::new(self.creds.clone())));
    }
}
