//! From metadata to a grant, and the client's identity at the authorization server (stored, pre-registered, CIMD, dynamic registration).

use super::*;

impl Authorizer {
    pub(super) fn after_metadata(&mut self, now: Instant) {
        self.creds.revocation_endpoint = self
            .server_metadata
            .as_ref()
            .and_then(|m| m.revocation_endpoint.clone());
        match self.config.grant.clone() {
            Grant::ClientCredentials => self.client_credentials(now),
            Grant::JwtBearer { assertion } => self.jwt_bearer(now, &assertion),
            Grant::EnterpriseManaged {
                idp_token_endpoint,
                id_token,
                idp_client_id,
                idp_client_secret,
            } => self.token_exchange(
                now,
                &idp_token_endpoint,
                &id_token,
                &idp_client_id,
                idp_client_secret.as_deref(),
            ),
            Grant::AuthorizationCode => {
                if self.trigger == Trigger::Unauthorized
                    && self.creds.refresh_token.is_some()
                    && !self.widens_grant(self.challenge.as_ref())
                {
                    self.refresh(now);
                } else {
                    self.ensure_client(now);
                }
            }
        }
    }

    /// Whether `challenge` names a scope beyond those granted (or, when the server did
    /// not say, asked for): a refresh cannot widen the grant (RFC 6749 §6), so only a
    /// new authorization can answer it; and a step-up that names none asks for nothing
    /// new.
    pub(super) fn widens_grant(&self, challenge: Option<&BearerChallenge>) -> bool {
        let held = match &self.creds.granted_scope {
            Some(granted) => split_scope(granted),
            None => self.requested.clone(),
        };
        challenge
            .map(BearerChallenge::scopes)
            .unwrap_or_default()
            .iter()
            .any(|s| !held.contains(s))
    }

    pub(super) fn ensure_client(&mut self, now: Instant) {
        if !self.config.interactive {
            // Every way on from here ends at a person's approval.
            return self.fail(AuthError::ApprovalNeeded);
        }
        if let Err(e) = self.check_redirect() {
            // Before it is registered or sent: codes would travel in clear.
            return self.fail(e);
        }
        let issuer = self.creds.issuer.clone();
        if let Some(c) = &self.creds.client
            && c.issuer == issuer
        {
            return self.authorize(now);
        }
        let Some(asm) = self.server_metadata.clone() else {
            return self.fail(AuthError::NoServerMetadata);
        };
        let cimd = |url: &Option<String>| {
            url.clone()
                .filter(|_| asm.client_id_metadata_document_supported)
        };
        match self.config.identity.clone() {
            ClientIdentity::PreRegistered { .. } => {
                match self.use_pre_registered(|secret| choose_auth_method(&asm, None, secret)) {
                    Ok(_) => self.authorize(now),
                    Err(e) => self.fail(e),
                }
            }
            ClientIdentity::Auto { cimd_url } if cimd(&cimd_url).is_some() => {
                self.use_cimd(now, cimd_url.unwrap_or_default());
            }
            ClientIdentity::Cimd { url } if asm.client_id_metadata_document_supported => {
                self.use_cimd(now, url);
            }
            ClientIdentity::Cimd { .. } => self.fail(AuthError::NeedClientCredentials {
                detail: "the authorization server does not support client metadata documents"
                    .into(),
            }),
            ClientIdentity::Auto { .. } | ClientIdentity::Dcr => {
                match asm.registration_endpoint.clone() {
                    Some(endpoint) => self.register(now, issuer, &asm, &endpoint),
                    None => self.fail(AuthError::NeedClientCredentials {
                        detail: "the authorization server offers no dynamic registration".into(),
                    }),
                }
            }
        }
    }

    pub(super) fn use_cimd(&mut self, now: Instant, url: String) {
        let ok = EndpointUrl::parse(&url, false)
            .is_ok_and(|u| u.is_tls() && u.path() != "/" && !u.path().is_empty());
        if !ok {
            return self.fail(AuthError::UrlPolicy {
                url,
                reason: "a client metadata document URL must be https with a path".into(),
            });
        }
        self.creds.client = Some(ClientRegistration {
            issuer: self.creds.issuer.clone(),
            client_id: url,
            client_secret: None,
            auth_method: "none".into(),
            source: "cimd".into(),
        });
        self.authorize(now);
    }

    pub(super) fn register(
        &mut self,
        now: Instant,
        issuer: String,
        asm: &ServerMetadata,
        endpoint: &str,
    ) {
        let wanted = match &asm.token_endpoint_auth_methods_supported {
            Some(list) => ["none", "client_secret_basic", "client_secret_post"]
                .into_iter()
                .find(|m| list.iter().any(|x| x == m))
                .unwrap_or("none"),
            None => "client_secret_basic",
        };
        let application_type = if self.redirect_is_native() {
            "native"
        } else {
            "web"
        };
        let body = token::registration_body(
            &self.config.client_name,
            &[&self.config.redirect_uri],
            &["authorization_code", "refresh_token"],
            wanted,
            application_type,
            None,
        );
        let headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
        if self.send(now, "POST", endpoint, headers, Some(body)) {
            self.step = Step::Register { issuer };
        }
    }

    /// The redirect URI is loopback `http`, `https`, or a native app's own scheme
    /// (RFC 8252): a plain `http` one to another host is refused.
    fn check_redirect(&self) -> Result<(), AuthError> {
        let uri = &self.config.redirect_uri;
        let scheme = uri.split_once(':').map_or("", |(s, _)| s);
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return Ok(());
        }
        EndpointUrl::parse(uri, self.config.allow_insecure)
            .map(|_| ())
            .map_err(|e| AuthError::UrlPolicy {
                url: clip(uri),
                reason: format!("a redirect URI must be loopback http or https ({e})"),
            })
    }

    pub(super) fn redirect_is_native(&self) -> bool {
        match EndpointUrl::parse(&self.config.redirect_uri, true) {
            Ok(u) => u.is_loopback(),
            // A custom scheme (`com.example.app:/cb`) is a native app's.
            Err(_) => true,
        }
    }

    pub(super) fn on_registration(
        &mut self,
        now: Instant,
        issuer: String,
        response: &AuthResponse,
    ) {
        let reg = match token::parse_registration(response.status, &response.body) {
            Ok(r) => r,
            Err(e) => return self.fail(AuthError::RegistrationRefused(token_detail(e))),
        };
        let Some(asm) = &self.server_metadata else {
            return self.fail(AuthError::NoServerMetadata);
        };
        let method = choose_auth_method(
            asm,
            reg.token_endpoint_auth_method.as_deref(),
            reg.client_secret.is_some(),
        );
        self.creds.client = Some(ClientRegistration {
            issuer,
            client_id: reg.client_id,
            client_secret: reg.client_secret,
            auth_method: method,
            source: "dcr".into(),
        });
        self.authorize(now);
    }
}
