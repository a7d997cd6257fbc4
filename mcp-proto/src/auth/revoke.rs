//! Token revocation (RFC 7009): the requests that give tokens back when a person logs
//! out. The refresh token goes first (revoking it revokes the grant at most servers),
//! then the access token. Each is one POST to the authorization server's
//! `revocation_endpoint` with the client's authentication; the answers matter little (a
//! `200` is success, anything else leaves a token to expire on its own).

use super::credentials::{ClientRegistration, Credentials};
use super::error::AuthError;
use super::flow::{AuthRequest, AuthRequestId};
use super::{form, token};
use crate::http::EndpointUrl;

/// The revocation requests for `credentials`: none when the authorization server has no
/// revocation endpoint or there is no token.
///
/// # Errors
///
/// [`AuthError::UrlPolicy`] when the revocation endpoint fails the URL policy
/// (`allow_insecure` permits plain `http` to hosts that are not loopback).
///
/// ```
/// use mcp_proto::auth::{ClientRegistration, Credentials, revocation_requests};
///
/// let json = r#"{"server_url": "https://mcp.example/mcp", "resource": "https://mcp.example/mcp",
///   "issuer": "https://as.example", "refresh_token": "r1",
///   "revocation_endpoint": "https://as.example/revoke",
///   "client": {"issuer": "https://as.example", "client_id": "c1", "auth_method": "none", "source": "dcr"}}"#;
/// let creds: Credentials = serde_json::from_str(json).unwrap();
/// let requests = revocation_requests(&creds, false).unwrap();
/// assert_eq!(requests.len(), 1);
/// let body = String::from_utf8(requests[0].body.clone().unwrap()).unwrap();
/// assert_eq!(body, "token=r1&token_type_hint=refresh_token&client_id=c1");
/// ```
pub fn revocation_requests(
    credentials: &Credentials,
    allow_insecure: bool,
) -> Result<Vec<AuthRequest>, AuthError> {
    let Some(endpoint) = &credentials.revocation_endpoint else {
        return Ok(Vec::new());
    };
    let url = EndpointUrl::parse(endpoint, allow_insecure).map_err(|e| AuthError::UrlPolicy {
        url: endpoint.clone(),
        reason: e.to_string(),
    })?;
    // As every request to an authorization server a public MCP server named (decision
    // 30): public addresses only. Credentials that do not say their server are taken
    // for a public one's.
    let public_only = EndpointUrl::parse(&credentials.server_url, true).map_or(true, |server| {
        super::flow::public_only_for(&server, false, &url)
    });
    let tokens = [
        (&credentials.refresh_token, "refresh_token"),
        (&credentials.access_token, "access_token"),
    ];
    let mut out = Vec::new();
    for (token_value, hint) in tokens {
        let Some(value) = token_value else {
            continue;
        };
        let pairs = [("token", value.as_str()), ("token_type_hint", hint)];
        let mut headers = vec![
            ("Accept".to_owned(), "application/json".to_owned()),
            (
                "Content-Type".to_owned(),
                "application/x-www-form-urlencoded".to_owned(),
            ),
        ];
        let mut body: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        if let Some(client) = &credentials.client {
            add_client_auth(client, &mut headers, &mut body);
        }
        let refs: Vec<(&str, &str)> = body.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        out.push(AuthRequest {
            id: AuthRequestId::new(out.len() as u64),
            method: "POST",
            url: url.clone(),
            headers,
            body: Some(form::encode_pairs(&refs).into_bytes()),
            public_only,
        });
    }
    Ok(out)
}

/// A client's authentication by its secret (or none) on a request to the authorization
/// server: `client_secret_basic` as an `Authorization` header, `client_secret_post` and
/// `none` (and anything else) as form parameters. `private_key_jwt` needs a signed
/// assertion, which the flow adds itself.
pub(super) fn add_client_auth(
    client: &ClientRegistration,
    headers: &mut Vec<(String, String)>,
    body: &mut Vec<(String, String)>,
) {
    let secret = client.client_secret.clone().unwrap_or_default();
    match client.auth_method.as_str() {
        "client_secret_basic" => headers.push((
            "Authorization".into(),
            token::basic_authorization(&client.client_id, &secret),
        )),
        "client_secret_post" => {
            body.push(("client_id".into(), client.client_id.clone()));
            body.push(("client_secret".into(), secret));
        }
        _ => body.push(("client_id".into(), client.client_id.clone())),
    }
}
