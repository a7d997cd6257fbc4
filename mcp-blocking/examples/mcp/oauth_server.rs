//! `mcp serve-example --http ADDR --oauth`: the example server behind bearer tokens, with
//! a small authorization server of its own on the same origin, so that `mcp auth login`
//! can be tried (and tested) with nothing on the internet. It approves every
//! authorization at once: there is no person and no account. It is an example for
//! 127.0.0.1 and nothing else.
//!
//! # Theory of operation
//!
//! One [`ExampleAuth`] is the [`RequestGate`] of the HTTP endpoint: it sees every request
//! to `http://127.0.0.1:PORT` (the issuer) before the MCP endpoint does, and answers all
//! but the authorized MCP requests itself.
//!
//! * `/mcp`, the protected resource: served only with `Authorization: Bearer <token>`
//!   naming an access token issued here, unexpired, for this resource (the principal is
//!   then the client id). Otherwise `401` with `WWW-Authenticate: Bearer
//!   resource_metadata="…"` (and `error="invalid_token"` when a token was sent).
//! * `/.well-known/oauth-protected-resource[/mcp]`: the resource's metadata (RFC 9728).
//! * `/.well-known/oauth-authorization-server`: the issuer's metadata (RFC 8414).
//! * `POST /register`: dynamic client registration (RFC 7591) of public clients (auth
//!   method `none`) whose redirect URIs are loopback `http` URIs.
//! * `GET /authorize`: checks the client, its redirect URI (any port, RFC 8252 §7.3),
//!   `response_type=code`, a PKCE `S256` challenge, `state` and the `resource`, then
//!   redirects (`302`) to the redirect URI with `code`, `state` and `iss`. Errors found
//!   before the redirect URI is trusted are a plain `400`; later ones are redirected.
//! * `POST /token`: `authorization_code` (a code is good once, for 60 s, for the client,
//!   redirect URI and resource it was issued to, with the verifier of its challenge) and
//!   `refresh_token` (rotated on use). Access tokens live [`ACCESS_TOKEN_LIFETIME`].
//! * `POST /revoke`: token revocation (RFC 7009); always `200`.
//!
//! Tokens and codes are 32 bytes from a generator seeded by the operating system. Every
//! table is bounded ([`MAX_ENTRIES`], the entry unused longest goes first: an access token
//! used on `/mcp` counts as a use of its refresh token and its client too, so that a run
//! of logins by others pushes out the idle, not a client at work) and request bodies are
//! bounded by the endpoint's request limits and [`MAX_BODY`].

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::time::Duration;

use mcp_blocking::mcp_proto::Instant;
use mcp_blocking::mcp_proto::auth::crypto::{Drbg, base64url, constant_time_eq, sha256};
use mcp_blocking::mcp_proto::auth::form::{append_query, parse_pairs};
use mcp_blocking::mcp_proto::server::http::{GateVerdict, HttpRequest, HttpResponse, RequestGate};
use serde_json::{Value, json};

/// How long an access token is good for.
pub const ACCESS_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// How long an authorization code is good for.
pub const CODE_LIFETIME: Duration = Duration::from_secs(60);
/// The most clients, codes, access tokens and refresh tokens kept (each).
pub const MAX_ENTRIES: usize = 256;
/// The largest form or JSON body read.
pub const MAX_BODY: usize = 16 * 1024;
/// The most redirect URIs one client registers, and the longest one.
const MAX_REDIRECT_URIS: usize = 4;
const MAX_URI: usize = 512;

const PRM_PATH: &str = "/.well-known/oauth-protected-resource";
const AS_PATH: &str = "/.well-known/oauth-authorization-server";

/// A table of at most [`MAX_ENTRIES`] entries; inserting into a full one drops the one
/// unused longest ([`Table::touch`] marks a use).
struct Table<T> {
    order: VecDeque<String>,
    map: HashMap<String, T>,
}

impl<T> Table<T> {
    fn new() -> Self {
        Table {
            order: VecDeque::new(),
            map: HashMap::new(),
        }
    }

    fn insert(&mut self, key: String, value: T) {
        while self.map.len() >= MAX_ENTRIES {
            match self.order.pop_front() {
                Some(old) => {
                    self.map.remove(&old);
                }
                None => break,
            }
        }
        self.order.push_back(key.clone());
        self.map.insert(key, value);
    }

    /// Marks `key` as just used: it goes last when room is made.
    fn touch(&mut self, key: &str) {
        if self.map.contains_key(key)
            && let Some(at) = self.order.iter().position(|k| k == key)
            && let Some(k) = self.order.remove(at)
        {
            self.order.push_back(k);
        }
    }

    fn remove(&mut self, key: &str) -> Option<T> {
        let value = self.map.remove(key)?;
        self.order.retain(|k| k != key);
        Some(value)
    }

    fn retain(&mut self, keep: impl Fn(&T) -> bool) {
        self.map.retain(|_, v| keep(v));
        let map = &self.map;
        self.order.retain(|k| map.contains_key(k));
    }
}

struct Code {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    expires: Instant,
}

struct Access {
    client_id: String,
    resource: String,
    expires: Instant,
    /// The refresh token issued with it (revoking that revokes this).
    refresh: String,
}

/// The example's authorization server and resource guard; see the module docs.
pub struct ExampleAuth {
    issuer: String,
    resource: String,
    rng: Drbg,
    clients: Table<Vec<String>>,
    codes: Table<Code>,
    access: Table<Access>,
    refresh: Table<String>,
}

impl fmt::Debug for ExampleAuth {
    // Never the tables: they hold the tokens.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExampleAuth")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

type Params = HashMap<String, String>;

impl ExampleAuth {
    /// The guard of `http://<authority>/mcp`, issuing from `http://<authority>`; `seed`:
    /// 32 bytes from the operating system.
    pub fn new(authority: &str, seed: &[u8]) -> Self {
        let issuer = format!("http://{authority}");
        ExampleAuth {
            resource: format!("{issuer}/mcp"),
            issuer,
            rng: Drbg::new(seed),
            clients: Table::new(),
            codes: Table::new(),
            access: Table::new(),
            refresh: Table::new(),
        }
    }

    fn metadata_url(&self) -> String {
        format!("{}{PRM_PATH}/mcp", self.issuer)
    }

    fn protected_resource(&self) -> Value {
        json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "mcp serve-example",
        })
    }

    fn authorization_server(&self) -> Value {
        let i = &self.issuer;
        json!({
            "issuer": i,
            "authorization_endpoint": format!("{i}/authorize"),
            "token_endpoint": format!("{i}/token"),
            "registration_endpoint": format!("{i}/register"),
            "revocation_endpoint": format!("{i}/revoke"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "authorization_response_iss_parameter_supported": true,
        })
    }

    /// `/mcp`: pass with a good token, else 401.
    fn guard(&mut self, now: Instant, request: &HttpRequest) -> GateVerdict {
        let token = request
            .header("authorization")
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim());
        let Some(token) = token else {
            let challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url());
            return GateVerdict::Answer(unauthorized(challenge));
        };
        self.access.retain(|a| a.expires > now);
        match self.access.map.get(token) {
            Some(a) if a.resource == self.resource => {
                let (client_id, refresh) = (a.client_id.clone(), a.refresh.clone());
                self.access.touch(token);
                self.refresh.touch(&refresh);
                self.clients.touch(&client_id);
                GateVerdict::Pass {
                    principal: Some(client_id),
                }
            }
            _ => GateVerdict::Answer(unauthorized(format!(
                "Bearer resource_metadata=\"{}\", error=\"invalid_token\", \
                 error_description=\"unknown, expired or revoked token\"",
                self.metadata_url()
            ))),
        }
    }

    fn register(&mut self, request: &HttpRequest) -> HttpResponse {
        // Anyone may register: the body is checked before it is read into values (a
        // member named `$serde_json::private::RawValue` nests past any depth checked).
        let checked = mcp_proto::jsonrpc::check_untrusted_json(&request.body, 64, 1 << 20);
        if let Err(e) = checked {
            return oauth_error(400, "invalid_client_metadata", &e.to_string());
        }
        let body: Value = match serde_json::from_slice(&request.body) {
            Ok(v @ Value::Object(_)) => v,
            _ => return oauth_error(400, "invalid_client_metadata", "expected a JSON object"),
        };
        let uris: Vec<String> = match body.get("redirect_uris").and_then(Value::as_array) {
            Some(list) if !list.is_empty() && list.len() <= MAX_REDIRECT_URIS => list
                .iter()
                .filter_map(Value::as_str)
                .filter(|u| is_loopback_uri(u))
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        if uris.is_empty() || Some(uris.len()) != body["redirect_uris"].as_array().map(Vec::len) {
            return oauth_error(
                400,
                "invalid_redirect_uri",
                "redirect_uris: 1 to 4 loopback http URIs",
            );
        }
        let client_id = self.rng.token(16);
        self.clients.insert(client_id.clone(), uris.clone());
        let mut answer = json!({
            "client_id": client_id,
            "redirect_uris": uris,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        });
        if let Some(name) = body.get("client_name").and_then(Value::as_str) {
            answer["client_name"] = name.chars().take(200).collect::<String>().into();
        }
        json_response(201, &answer)
    }

    fn authorize(&mut self, now: Instant, request: &HttpRequest) -> HttpResponse {
        let query = request.target().split_once('?').map_or("", |(_, q)| q);
        let p = match params(query) {
            Ok(p) => p,
            Err(e) => return bad_request(&e),
        };
        let get = |k: &str| p.get(k).map_or("", String::as_str);
        let Some(registered) = self.clients.map.get(get("client_id")) else {
            return bad_request("unknown client_id");
        };
        let redirect = get("redirect_uri");
        if !registered.iter().any(|r| same_loopback_uri(r, redirect)) {
            return bad_request("redirect_uri is not one the client registered");
        }
        let refuse = |error: &str| {
            let pairs = [
                ("error", error),
                ("state", get("state")),
                ("iss", &self.issuer),
            ];
            found(&append_query(redirect, &pairs))
        };
        let challenge = get("code_challenge");
        if get("response_type") != "code" {
            return refuse("unsupported_response_type");
        }
        if get("code_challenge_method") != "S256" || !is_pkce_string(challenge) {
            return refuse("invalid_request");
        }
        if get("state").is_empty() {
            return refuse("invalid_request");
        }
        if p.contains_key("resource") && get("resource") != self.resource {
            return refuse("invalid_target");
        }
        let code = self.rng.token(32);
        self.codes.insert(
            code.clone(),
            Code {
                client_id: get("client_id").to_owned(),
                redirect_uri: redirect.to_owned(),
                challenge: challenge.to_owned(),
                expires: now + CODE_LIFETIME,
            },
        );
        let pairs = [
            ("code", code.as_str()),
            ("state", get("state")),
            ("iss", &self.issuer),
        ];
        found(&append_query(redirect, &pairs))
    }

    fn token(&mut self, now: Instant, request: &HttpRequest) -> HttpResponse {
        let p = match form(request) {
            Ok(p) => p,
            Err(e) => return oauth_error(400, "invalid_request", &e),
        };
        let get = |k: &str| p.get(k).map_or("", String::as_str);
        if p.contains_key("resource") && get("resource") != self.resource {
            return oauth_error(
                400,
                "invalid_target",
                "this server issues tokens for its /mcp",
            );
        }
        let client_id = get("client_id");
        if !self.clients.map.contains_key(client_id) {
            return oauth_error(401, "invalid_client", "unknown client_id");
        }
        match get("grant_type") {
            "authorization_code" => {
                // Removed whatever happens next: a code is tried once.
                let Some(code) = self.codes.remove(get("code")) else {
                    return oauth_error(400, "invalid_grant", "unknown or used code");
                };
                let verified = constant_time_eq(
                    base64url(&sha256(get("code_verifier").as_bytes())).as_bytes(),
                    code.challenge.as_bytes(),
                );
                if code.expires <= now
                    || code.client_id != client_id
                    || code.redirect_uri != get("redirect_uri")
                    || !is_pkce_string(get("code_verifier"))
                    || !verified
                {
                    return oauth_error(400, "invalid_grant", "the code does not match");
                }
            }
            "refresh_token" => match self.refresh.remove(get("refresh_token")) {
                Some(owner) if owner == client_id => {}
                _ => return oauth_error(400, "invalid_grant", "unknown refresh token"),
            },
            _ => return oauth_error(400, "unsupported_grant_type", "code or refresh_token"),
        }
        self.issue(now, client_id.to_owned())
    }

    fn issue(&mut self, now: Instant, client_id: String) -> HttpResponse {
        let access = self.rng.token(32);
        let refresh = self.rng.token(32);
        self.refresh.insert(refresh.clone(), client_id.clone());
        self.access.insert(
            access.clone(),
            Access {
                client_id,
                resource: self.resource.clone(),
                expires: now + ACCESS_TOKEN_LIFETIME,
                refresh: refresh.clone(),
            },
        );
        json_response(
            200,
            &json!({
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": ACCESS_TOKEN_LIFETIME.as_secs(),
                "refresh_token": refresh,
            }),
        )
    }

    fn revoke(&mut self, request: &HttpRequest) -> HttpResponse {
        let p = match form(request) {
            Ok(p) => p,
            Err(e) => return oauth_error(400, "invalid_request", &e),
        };
        let token = p.get("token").map_or("", String::as_str);
        if self.refresh.remove(token).is_some() {
            self.access.retain(|a| a.refresh != token);
        }
        self.access.remove(token);
        HttpResponse::new(200)
    }
}

impl RequestGate for ExampleAuth {
    fn check(&mut self, now: Instant, request: &HttpRequest) -> GateVerdict {
        let method = request.method();
        let response = match (method, request.path()) {
            (_, "/mcp") => return self.guard(now, request),
            ("GET", p) if p == PRM_PATH || p == format!("{PRM_PATH}/mcp") => {
                json_response(200, &self.protected_resource())
            }
            ("GET", AS_PATH) => json_response(200, &self.authorization_server()),
            ("GET", "/authorize") => self.authorize(now, request),
            ("POST", "/register") if request.body.len() <= MAX_BODY => self.register(request),
            ("POST", "/token") => self.token(now, request),
            ("POST", "/revoke") => self.revoke(request),
            (_, "/register" | "/token" | "/revoke") => bad_request("POST a body of 16 KiB at most"),
            _ => return GateVerdict::Pass { principal: None },
        };
        GateVerdict::Answer(response)
    }
}

/// A form body's parameters; each may appear once (RFC 6749 §3.1).
fn form(request: &HttpRequest) -> Result<Params, String> {
    if request.body.len() > MAX_BODY {
        return Err("the body is too large".into());
    }
    let body = std::str::from_utf8(&request.body).map_err(|_| "the body is not UTF-8")?;
    params(body)
}

fn params(encoded: &str) -> Result<Params, String> {
    let mut out = Params::new();
    for (k, v) in parse_pairs(encoded).map_err(|e| e.to_string())? {
        if out.insert(k.clone(), v).is_some() {
            return Err(format!("{k} given twice"));
        }
    }
    Ok(out)
}

/// A PKCE verifier or S256 challenge: 43 to 128 unreserved characters (RFC 7636 §4.1).
fn is_pkce_string(s: &str) -> bool {
    (43..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// The host and the rest of a loopback `http` URI with its port taken out; `None` for
/// anything else.
fn loopback_parts(uri: &str) -> Option<(&str, &str)> {
    // Visible ASCII only: the URI goes into a `Location` header.
    if uri.len() > MAX_URI || uri.contains('#') || !uri.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    let rest = uri.strip_prefix("http://")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = match authority.rsplit_once(':') {
        Some((h, port)) if !h.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    };
    ["127.0.0.1", "localhost", "[::1]"]
        .contains(&host)
        .then_some((host, path))
}

fn is_loopback_uri(uri: &str) -> bool {
    loopback_parts(uri).is_some()
}

/// Whether `asked` is the registered loopback URI on any port (RFC 8252 §7.3).
fn same_loopback_uri(registered: &str, asked: &str) -> bool {
    loopback_parts(registered).is_some_and(|r| loopback_parts(asked) == Some(r))
}

fn json_response(status: u16, body: &Value) -> HttpResponse {
    HttpResponse::new(status)
        .with_header("Cache-Control", "no-store")
        .with_body("application/json", body.to_string().into_bytes())
}

fn oauth_error(status: u16, error: &str, description: &str) -> HttpResponse {
    json_response(
        status,
        &json!({"error": error, "error_description": description}),
    )
}

fn bad_request(why: &str) -> HttpResponse {
    HttpResponse::new(400).with_body("text/plain; charset=utf-8", format!("{why}\n").into_bytes())
}

fn unauthorized(challenge: String) -> HttpResponse {
    HttpResponse::new(401)
        .with_header("WWW-Authenticate", challenge)
        .with_body(
            "text/plain; charset=utf-8",
            b"a bearer token from this server's authorization server is needed\n".to_vec(),
        )
}

fn found(location: &str) -> HttpResponse {
    HttpResponse::new(302)
        .with_header("Location", location.to_owned())
        .with_header("Cache-Control", "no-store")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access_token(response: &HttpResponse) -> String {
        let body: Value = serde_json::from_slice(&response.body).unwrap();
        body["access_token"].as_str().unwrap().to_owned()
    }

    fn status(auth: &mut ExampleAuth, now: Instant, token: &str) -> Option<u16> {
        let request = HttpRequest::new("POST", "/mcp")
            .with_header("Authorization", format!("Bearer {token}").into_bytes());
        match auth.check(now, &request) {
            GateVerdict::Pass { principal } => {
                assert_eq!(principal.as_deref(), Some("client"));
                None
            }
            GateVerdict::Answer(r) => {
                let challenge = r.header("www-authenticate").unwrap_or_default();
                assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
                Some(r.status)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tokens_expire_and_are_bound_to_the_resource() {
        let mut auth = ExampleAuth::new("127.0.0.1:1", &[7; 32]);
        let t0 = Instant::ZERO;
        let token = access_token(&auth.issue(t0, "client".into()));
        let last = t0 + ACCESS_TOKEN_LIFETIME - Duration::from_secs(1);
        assert_eq!(status(&mut auth, last, &token), None);
        assert_eq!(
            status(&mut auth, t0 + ACCESS_TOKEN_LIFETIME, &token),
            Some(401)
        );

        let token = access_token(&auth.issue(t0, "client".into()));
        auth.access.map.get_mut(&token).unwrap().resource = "http://127.0.0.1:2/mcp".into();
        assert_eq!(status(&mut auth, t0, &token), Some(401));
    }

    #[test]
    fn tables_stay_bounded() {
        let mut auth = ExampleAuth::new("127.0.0.1:1", &[7; 32]);
        let first = access_token(&auth.issue(Instant::ZERO, "client".into()));
        for _ in 0..MAX_ENTRIES {
            let _ = auth.issue(Instant::ZERO, "client".into());
        }
        assert_eq!(auth.access.map.len(), MAX_ENTRIES);
        assert_eq!(auth.access.order.len(), MAX_ENTRIES);
        assert_eq!(auth.refresh.map.len(), MAX_ENTRIES);
        assert_eq!(status(&mut auth, Instant::ZERO, &first), Some(401));
    }

    /// Logins by others push out what is idle, not a client at work: its access token,
    /// refresh token and registration stay while it uses the token (256 anonymous logins
    /// evicted a logged-in user).
    #[test]
    fn a_client_at_work_outlives_a_run_of_other_logins() {
        let mut auth = ExampleAuth::new("127.0.0.1:1", &[7; 32]);
        auth.clients.insert("client".into(), Vec::new());
        let issued = auth.issue(Instant::ZERO, "client".into());
        let token = access_token(&issued);
        let body: Value = serde_json::from_slice(&issued.body).unwrap();
        let refresh = body["refresh_token"].as_str().unwrap().to_owned();
        for round in 0..3 * MAX_ENTRIES {
            let other = format!("other-{round}");
            auth.clients.insert(other.clone(), Vec::new());
            let _ = auth.issue(Instant::ZERO, other);
            if round % 100 == 0 {
                assert_eq!(
                    status(&mut auth, Instant::ZERO, &token),
                    None,
                    "round {round}"
                );
            }
        }
        assert_eq!(status(&mut auth, Instant::ZERO, &token), None);
        assert!(auth.refresh.map.contains_key(&refresh));
        assert!(auth.clients.map.contains_key("client"));
        assert_eq!(auth.access.order.len(), MAX_ENTRIES);
    }

    #[test]
    fn loopback_redirect_uris_match_on_any_port() {
        assert!(same_loopback_uri(
            "http://127.0.0.1:1/callback",
            "http://127.0.0.1:9/callback"
        ));
        assert!(!same_loopback_uri(
            "http://127.0.0.1:1/callback",
            "http://127.0.0.1:9/other"
        ));
        assert!(!same_loopback_uri(
            "http://127.0.0.1:1/cb",
            "http://localhost:1/cb"
        ));
        assert!(!is_loopback_uri("https://127.0.0.1/cb"));
        assert!(!is_loopback_uri("http://127.0.0.1.evil.example/cb"));
        assert!(!is_loopback_uri("http://127.0.0.1:1/cb#frag"));
        assert!(!is_loopback_uri("http://127.0.0.1:1/cb\r\nSet-Cookie: a=b"));
        assert!(!is_loopback_uri(&format!(
            "http://127.0.0.1:1/{}",
            "a".repeat(MAX_URI)
        )));
    }
}
