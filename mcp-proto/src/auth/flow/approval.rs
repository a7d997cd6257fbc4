//! The authorization request a person approves, and the callback it comes back with.

use super::*;

impl Authorizer {
    pub(super) fn scope(&self) -> Vec<String> {
        let challenged = self
            .challenge
            .as_ref()
            .map(BearerChallenge::scopes)
            .unwrap_or_default();
        let mut scope = if self.trigger == Trigger::StepUp {
            let mut all = self.requested.clone();
            for s in challenged {
                if !all.contains(&s) {
                    all.push(s);
                }
            }
            all
        } else if !challenged.is_empty() {
            challenged
        } else {
            self.resource_metadata
                .as_ref()
                .and_then(|m| m.scopes_supported.clone())
                .unwrap_or_default()
        };
        for s in &self.config.scopes {
            if !scope.contains(s) {
                scope.push(s.clone());
            }
        }
        let offered = self
            .server_metadata
            .as_ref()
            .and_then(|m| m.scopes_supported.as_ref())
            .is_some_and(|s| s.iter().any(|x| x == "offline_access"));
        let grant_code = self.config.grant == Grant::AuthorizationCode;
        if grant_code
            && self.config.offline_access
            && offered
            && !scope.iter().any(|s| s == "offline_access")
        {
            scope.push("offline_access".to_owned());
        }
        scope
    }

    /// The scopes to ask for now ([`Authorizer::scope`]), remembered as the ones asked
    /// for: a later step-up adds to them, and a token response that names no scope was
    /// granted them.
    pub(super) fn ask_scope(&mut self) -> Vec<String> {
        let scope = self.scope();
        let joined = scope.join(" ");
        self.creds.requested_scope = (!joined.is_empty()).then_some(joined);
        self.requested.clone_from(&scope);
        scope
    }

    pub(super) fn resource(&self) -> String {
        match (&self.resource_metadata, &self.config.resource) {
            (Some(m), _) => m.resource.clone(),
            (None, Some(configured)) => configured.clone(),
            (None, None) => metadata::canonical_resource(&self.mcp_url),
        }
    }

    pub(super) fn authorize(&mut self, now: Instant) {
        let Some(asm) = &self.server_metadata else {
            return self.fail(AuthError::NoServerMetadata);
        };
        let Some(client) = &self.creds.client else {
            return self.fail(AuthError::NeedClientCredentials {
                detail: "no client identity".into(),
            });
        };
        let endpoint = asm.authorization_endpoint.clone().unwrap_or_default();
        if let Err(e) = EndpointUrl::parse(&endpoint, self.config.allow_insecure) {
            return self.fail(AuthError::UrlPolicy {
                url: clip(&endpoint),
                reason: e.to_string(),
            });
        }
        let iss_supported = asm.authorization_response_iss_parameter_supported;
        let client_id = client.client_id.clone();
        let scope = self.ask_scope();
        let pkce = Pkce::generate(&mut self.rng);
        let state = self.rng.token(16);
        let resource = self.resource();
        let joined = scope.join(" ");
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client_id.as_str()),
            ("redirect_uri", self.config.redirect_uri.as_str()),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state.as_str()),
            ("resource", resource.as_str()),
        ];
        if !scope.is_empty() {
            pairs.push(("scope", joined.as_str()));
        }
        if scope.iter().any(|s| s == "offline_access") {
            pairs.push(("prompt", "consent"));
        }
        let url = form::append_query(&endpoint, &pairs);
        let issuer = self.creds.issuer.clone();
        self.step = Step::Approval {
            pending: Box::new(Pending {
                state,
                pkce,
                issuer,
                iss_supported,
                deadline: now + self.config.approval_timeout,
            }),
        };
        self.events.push_back(AuthEvent::OpenUrl(url));
    }

    /// The browser came back to the redirect URI: `url` is that URL (or its query).
    ///
    /// # Errors
    ///
    /// [`AuthError::NotWaiting`] when no approval is pending, and
    /// [`AuthError::StateMismatch`] for a callback that does not belong to it (the flow
    /// keeps waiting: it may be a stale or forged request). Other errors also end the
    /// flow, with [`AuthEvent::Failed`]: among them [`AuthError::Timeout`] for a callback
    /// that comes after the approval's time ran out (`now` past it), never redeemed.
    pub fn handle_callback(&mut self, now: Instant, url: &str) -> Result<(), AuthError> {
        self.now = now;
        let Step::Approval { pending } = &self.step else {
            return Err(AuthError::NotWaiting);
        };
        if pending.deadline <= now {
            // Expired: never redeemed, though the driver handed in the callback before
            // the timeout.
            let e = AuthError::Timeout {
                what: "the approval in the browser".into(),
            };
            self.fail(e.clone());
            return Err(e);
        }
        let params = form::callback_params(url).map_err(|e| AuthError::InvalidCallback {
            detail: e.to_string(),
        })?;
        let one = |name: &str| -> Result<Option<&str>, AuthError> {
            let mut it = params.iter().filter(|(k, _)| k == name);
            let first = it.next().map(|(_, v)| v.as_str());
            if it.next().is_some() {
                return Err(AuthError::InvalidCallback {
                    detail: format!("`{name}` appears more than once"),
                });
            }
            Ok(first)
        };
        let state = one("state")?;
        if !state.is_some_and(|s| constant_time_eq(s.as_bytes(), pending.state.as_bytes())) {
            return Err(AuthError::StateMismatch);
        }
        // RFC 9207: the issuer check comes before `code` or `error` is looked at.
        let iss = one("iss");
        let verdict = match iss {
            Err(e) => Err(e),
            Ok(Some(iss)) if iss != pending.issuer => Err(AuthError::IssuerMismatch {
                expected: pending.issuer.clone(),
                found: clip(iss),
            }),
            Ok(None) if pending.iss_supported => Err(AuthError::MissingIss),
            Ok(_) => Ok(()),
        };
        if let Err(e) = verdict {
            self.fail(e.clone());
            return Err(e);
        }
        let error = match one("error") {
            Ok(error) => error,
            // A repeated `error` is a malformed callback, never one whose code is taken.
            Err(e) => {
                self.fail(e.clone());
                return Err(e);
            }
        };
        if let Some(error) = error {
            let description = one("error_description").ok().flatten().map(clip);
            let e = AuthError::Denied {
                error: clip(error),
                description,
            };
            self.fail(e.clone());
            return Err(e);
        }
        let code = match one("code") {
            Ok(Some(c)) if !c.is_empty() => c.to_owned(),
            _ => {
                let e = AuthError::InvalidCallback {
                    detail: "no `code`".into(),
                };
                self.fail(e.clone());
                return Err(e);
            }
        };
        let Step::Approval { pending } = std::mem::replace(&mut self.step, Step::Idle) else {
            return Err(AuthError::NotWaiting);
        };
        let verifier = pending.pkce.verifier.clone();
        let redirect = self.config.redirect_uri.clone();
        self.token_request(
            now,
            TokenGrant::Code,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", &redirect),
                ("code_verifier", &verifier),
            ],
        );
        Ok(())
    }
}
