//! Discovery: the protected resource metadata, then the authorization server's.

use super::*;

impl Authorizer {
    pub(super) fn next_resource_metadata(&mut self, now: Instant) {
        let Step::ResourceMetadata { urls, next } = &mut self.step else {
            return;
        };
        let Some(url) = urls.get(*next).cloned() else {
            return self.no_resource_metadata(now);
        };
        *next += 1;
        self.send(now, "GET", &url, Vec::new(), None);
    }

    pub(super) fn no_resource_metadata(&mut self, now: Instant) {
        if !self.config.legacy_fallback {
            return self.fail(AuthError::NoResourceMetadata);
        }
        // 2025-03-26: the MCP server's origin is the authorization server, under the
        // issuer its metadata spelled, once known (a trailing `/`): the same server, so
        // its tokens and registration stay.
        self.resource_metadata = None;
        let origin = self.mcp_url.origin();
        let spelled = (!self.creds.issuer.is_empty())
            .then_some(&self.creds.issuer)
            .filter(|i| EndpointUrl::parse(i, true).is_ok_and(|u| u.origin() == origin));
        let issuer = spelled.cloned().unwrap_or_else(|| origin.to_owned());
        let urls = metadata::legacy_server_metadata_urls(&self.mcp_url);
        self.use_issuer(now, issuer, urls, true);
    }

    pub(super) fn on_resource_metadata(
        &mut self,
        now: Instant,
        urls: Vec<String>,
        next: usize,
        response: &AuthResponse,
    ) {
        match response.status {
            200..=299 => {}
            400..=499 => {
                self.step = Step::ResourceMetadata { urls, next };
                return self.next_resource_metadata(now);
            }
            status => {
                return self.fail(AuthError::Status {
                    what: "protected resource metadata",
                    status,
                });
            }
        }
        let prm = match metadata::parse_resource_metadata(&response.body) {
            Ok(m) => m,
            Err(e) => {
                return self.fail(AuthError::InvalidMetadata {
                    what: "protected resource metadata",
                    detail: e.to_string(),
                });
            }
        };
        let expected = self.mcp_url.as_str();
        let matches = match &self.config.resource {
            Some(configured) => prm.resource == *configured,
            None => metadata::resource_matches(&prm.resource, expected),
        };
        if !matches {
            return self.fail(AuthError::ResourceMismatch {
                resource: clip(&prm.resource),
                expected: expected.to_owned(),
            });
        }
        let Some(issuer) = prm.authorization_servers.first().cloned() else {
            return self.fail(AuthError::InvalidMetadata {
                what: "protected resource metadata",
                detail: "no authorization server".into(),
            });
        };
        self.resource_metadata = Some(prm);
        self.resource_metadata_url = next.checked_sub(1).and_then(|i| urls.get(i)).cloned();
        let urls = match metadata::server_metadata_urls(&issuer) {
            Ok(u) => u,
            Err(e) => {
                return self.fail(AuthError::InvalidMetadata {
                    what: "authorization server issuer",
                    detail: e.to_string(),
                });
            }
        };
        self.use_issuer(now, issuer, urls, false);
    }

    /// Moves on with authorization server `issuer`: a server that changed drops what was
    /// bound to the old one.
    pub(super) fn use_issuer(
        &mut self,
        now: Instant,
        issuer: String,
        urls: Vec<String>,
        legacy: bool,
    ) {
        let resource = self.resource();
        if self.creds.issuer != issuer || self.creds.resource != resource {
            let moved = !self.creds.issuer.is_empty();
            self.creds.issuer = issuer.clone();
            self.creds.resource = resource;
            self.creds.access_token = None;
            self.creds.refresh_token = None;
            self.creds.expires_at = None;
            self.creds.obtained_at = None;
            if moved
                || self
                    .creds
                    .client
                    .as_ref()
                    .is_some_and(|c| c.issuer != issuer)
            {
                self.creds.client = None;
            }
            self.server_metadata = None;
        }
        if self
            .server_metadata
            .as_ref()
            .is_some_and(|m| m.issuer == issuer)
        {
            return self.after_metadata(now);
        }
        self.step = Step::ServerMetadata {
            issuer,
            urls,
            next: 0,
            legacy,
        };
        self.next_server_metadata(now);
    }

    pub(super) fn next_server_metadata(&mut self, now: Instant) {
        let Step::ServerMetadata {
            urls, next, legacy, ..
        } = &mut self.step
        else {
            return;
        };
        let Some(url) = urls.get(*next).cloned() else {
            if *legacy {
                return self.legacy_default_endpoints(now);
            }
            return self.fail(AuthError::NoServerMetadata);
        };
        *next += 1;
        self.send(now, "GET", &url, Vec::new(), None);
    }

    /// 2025-03-26 fallback: the default endpoints at the MCP server's origin.
    pub(super) fn legacy_default_endpoints(&mut self, now: Instant) {
        let origin = self.mcp_url.origin().to_owned();
        self.server_metadata = Some(ServerMetadata {
            issuer: origin.clone(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            revocation_endpoint: None,
            scopes_supported: None,
            response_types_supported: None,
            grant_types_supported: None,
            code_challenge_methods_supported: None,
            token_endpoint_auth_methods_supported: None,
            client_id_metadata_document_supported: false,
            authorization_response_iss_parameter_supported: false,
            dpop_signing_alg_values_supported: None,
        });
        self.after_metadata(now);
    }

    pub(super) fn on_server_metadata(
        &mut self,
        now: Instant,
        issuer: String,
        urls: Vec<String>,
        next: usize,
        legacy: bool,
        response: &AuthResponse,
    ) {
        match response.status {
            200..=299 => {}
            400..=499 => {
                self.step = Step::ServerMetadata {
                    issuer,
                    urls,
                    next,
                    legacy,
                };
                return self.next_server_metadata(now);
            }
            status => {
                return self.fail(AuthError::Status {
                    what: "authorization server metadata",
                    status,
                });
            }
        }
        let asm = match metadata::parse_server_metadata(&response.body) {
            Ok(m) => m,
            Err(e) => {
                return self.fail(AuthError::InvalidMetadata {
                    what: "authorization server metadata",
                    detail: e.to_string(),
                });
            }
        };
        // The issuer must be the one the document was fetched for, byte for byte. The
        // 2025-03-26 fallback derived the issuer from the MCP URL; there the document
        // names it, on the same origin.
        let same = if legacy {
            EndpointUrl::parse(&asm.issuer, true).is_ok_and(|u| u.origin() == self.mcp_url.origin())
        } else {
            asm.issuer == issuer
        };
        if !same {
            return self.fail(AuthError::IssuerMismatch {
                expected: issuer,
                found: clip(&asm.issuer),
            });
        }
        if let Err(e) = self.check_server_metadata(&asm) {
            return self.fail(e);
        }
        if legacy {
            self.creds.issuer = asm.issuer.clone();
        }
        self.server_metadata = Some(asm);
        self.after_metadata(now);
    }

    pub(super) fn check_server_metadata(&self, asm: &ServerMetadata) -> Result<(), AuthError> {
        let code = self.config.grant == Grant::AuthorizationCode;
        if code {
            match &asm.code_challenge_methods_supported {
                Some(m) if m.iter().any(|x| x == "S256") => {}
                None if self.config.protocol_version < ProtocolVersion::V2025_11_25 => {}
                _ => return Err(AuthError::NoPkce),
            }
            // REQUIRED (RFC 8414 section 2): absent is refused as lacking `code`.
            let types = asm.response_types_supported.as_deref().unwrap_or_default();
            if !types.iter().any(|t| t == "code") {
                return Err(AuthError::InvalidMetadata {
                    what: "authorization server metadata",
                    detail: "response_types_supported lacks \"code\"".into(),
                });
            }
            if asm.authorization_endpoint.is_none() {
                return Err(AuthError::InvalidMetadata {
                    what: "authorization server metadata",
                    detail: "no authorization_endpoint".into(),
                });
            }
        }
        Ok(())
    }
}
