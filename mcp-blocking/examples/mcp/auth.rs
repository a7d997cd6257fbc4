//! OAuth for HTTP servers: the stored credentials of each server (one private file per
//! binding, [`FileCredentialStore`]), how a connection is authorized (a bearer token from
//! the environment as it is; else the stored credentials, refreshed and saved by the
//! library, and a browser approval through the loopback listener when a person is
//! there), and `mcp auth login|status|logout`.
//!
//! Nothing here prints a token, a secret, an environment value or a callback URL.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_blocking::mcp_proto::auth::revocation_requests;
use mcp_blocking::{
    AuthConfig, AuthError, BrowserApproval, CallError, ClientIdentity, CloseReason,
    CredentialStore, Credentials, EndpointUrl, FileCredentialStore, HttpOptions, LoopbackCallback,
    Options, send_auth_request_within,
};
use serde_json::{Value, json};

use crate::args::{AuthAction, Format, Global};
use crate::config::{OAuthEntry, ServerEntry};
use crate::output::{Failure, print_json, table};
use crate::session;
use mcp_io::transcript::redact_url;

/// The variable whose bearer token every HTTP server gets, unless its entry names
/// another (`bearerTokenEnv`).
pub const BEARER_ENV: &str = "MCP_BEARER_TOKEN";

/// How a connection may get a person's approval.
pub struct Plan {
    /// A person is there (a terminal, no `--no-input`): run the browser flow.
    pub interactive: bool,
    /// Try to open a browser (else only show the URL).
    pub open_browser: bool,
    /// Start without the stored tokens (keeping the client registration): `auth login`.
    pub fresh: bool,
    /// The credentials last saved during the connection.
    pub saved: Arc<Mutex<Option<Credentials>>>,
    /// Scopes asked for besides the server's (`auth login --scopes`); empty: the
    /// entry's `--oauth-scopes`.
    pub scopes: Vec<String>,
    /// `--timeout`: also the bound on each of the flow's requests.
    pub timeout: Option<Duration>,
}

impl Plan {
    /// For an ordinary command: interactive on a terminal without `--no-input`.
    pub fn for_run(global: &Global) -> Plan {
        Plan {
            interactive: !global.no_input && std::io::stdin().is_terminal(),
            open_browser: true,
            fresh: false,
            saved: Arc::default(),
            scopes: Vec::new(),
            timeout: global.timeout,
        }
    }
}

/// The credential store, in the default place.
pub fn store() -> Result<FileCredentialStore, Failure> {
    FileCredentialStore::open_default()
        .map_err(|e| Failure::Auth(format!("cannot keep credentials: {e}")))
}

/// The URL as the library spells it (the key of the binding).
fn binding_url(url: &str) -> String {
    EndpointUrl::parse(url, false).map_or_else(|_| url.to_owned(), |u| u.as_str().to_owned())
}

/// The bearer token variable that applies to `entry`, with its value, when set.
fn bearer_from_env(entry: &ServerEntry) -> Option<(String, String)> {
    let var = entry.bearer_token_env.as_deref().unwrap_or(BEARER_ENV);
    std::env::var(var)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .map(|v| (var.to_owned(), v.trim().to_owned()))
}

/// Who the client is, from the `--oauth-*` settings.
fn identity(oauth: Option<&OAuthEntry>) -> Result<ClientIdentity, Failure> {
    let Some(o) = oauth else {
        return Ok(ClientIdentity::Auto { cimd_url: None });
    };
    let cimd = o
        .client_id
        .as_deref()
        .filter(|id| id.starts_with("https://"));
    Ok(
        match (o.client_registration.as_deref(), &o.client_id, cimd) {
            (Some("dcr"), _, _) => ClientIdentity::Dcr,
            (Some("cimd"), _, Some(url)) => ClientIdentity::Cimd {
                url: url.to_owned(),
            },
            (Some("cimd"), _, None) => {
                return Err(Failure::Usage(
                    "oauth clientRegistration cimd needs clientId, the https URL of the client \
                 metadata document"
                        .into(),
                ));
            }
            (_, _, Some(url)) => ClientIdentity::Auto {
                cimd_url: Some(url.to_owned()),
            },
            (_, Some(id), None) => {
                let client_secret = match &o.client_secret_env {
                    None => None,
                    Some(var) => Some(std::env::var(var).map_err(|_| {
                        Failure::Auth(format!(
                            "the client secret variable {var} is not set (see `mcp get`)"
                        ))
                    })?),
                };
                ClientIdentity::PreRegistered {
                    client_id: id.clone(),
                    client_secret,
                    issuer: o.issuer.clone(),
                }
            }
            (_, None, None) => ClientIdentity::Auto { cimd_url: None },
        },
    )
}

/// Sets up the authorization of the connection to `url` (the entry `name`): the
/// `Authorization` header of a bearer token from the environment, else OAuth with the
/// stored credentials, new ones saved as they come, and the approval `plan` allows.
pub fn setup(
    name: &str,
    entry: &ServerEntry,
    url: &str,
    mut http: HttpOptions,
    mut options: Options,
    plan: &Plan,
) -> Result<(HttpOptions, Options), Failure> {
    if !plan.fresh {
        if let Some((_, token)) = bearer_from_env(entry) {
            http.authorization = Some(format!("Bearer {token}"));
            return Ok((http, options));
        }
        if let Some(var) = &entry.bearer_token_env {
            return Err(Failure::Auth(unset_advice(name, var)));
        }
    }
    let store = store()?;
    let key = binding_url(url);
    let mut saved = store
        .load(&key)
        .map_err(|e| Failure::Auth(format!("cannot read the stored credentials: {e}")))?;
    if plan.fresh
        && let Some(c) = &mut saved
    {
        c.access_token = None;
        c.refresh_token = None;
        c.expires_at = None;
        c.obtained_at = None;
    }
    let listener = LoopbackCallback::bind()
        .map_err(|e| Failure::Auth(format!("cannot listen for the browser on 127.0.0.1: {e}")))?;
    let mut seed = [0u8; 32];
    // The library mixes in fresh randomness from the operating system; this only
    // keeps two connections of one run apart.
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    seed[..16].copy_from_slice(&nanos.to_le_bytes());
    let mut auth = AuthConfig::new(listener.redirect_uri(), seed);
    auth.client_name = session::CLIENT_NAME.to_owned();
    auth.identity = identity(entry.oauth.as_ref())?;
    auth.credentials = saved;
    auth.interactive = plan.interactive;
    if let Some(t) = plan.timeout {
        // `--timeout` bounds each of the flow's requests too.
        auth.request_timeout = auth.request_timeout.min(t);
    }
    if let Some(o) = &entry.oauth {
        auth.resource.clone_from(&o.resource);
        auth.scopes.clone_from(&o.scopes);
    }
    if !plan.scopes.is_empty() {
        auth.scopes.clone_from(&plan.scopes);
    }
    if entry.era == "legacy" {
        auth.protocol_version = mcp_blocking::ProtocolVersion::V2025_11_25;
    }
    http.auth = Some(auth);

    let last = Arc::clone(&plan.saved);
    let dir = store.dir().display().to_string();
    options = options.on_credentials(move |c: &Credentials| {
        if let Err(e) = store.save(c) {
            eprintln!("mcp: warning: could not save the credentials in {dir}: {e}");
        }
        *last.lock().unwrap_or_else(PoisonError::into_inner) = Some(c.clone());
    });
    if plan.interactive {
        let approval = BrowserApproval::new(listener, |url: &str| {
            eprintln!("Open this URL to authorize: {url}");
        })
        .open_browser(plan.open_browser);
        options = options.authorization_handler(approval);
    } else {
        let login = format!("mcp auth login {name}");
        options = options.authorization_handler(move |_url: &str| -> Result<String, String> {
            Err(format!(
                "the server needs authorization and this run takes no input: run `{login}` first"
            ))
        });
    }
    Ok((http, options))
}

/// The failure for `e`, naming the fix when a person's approval was needed and this
/// run takes no input.
pub fn explain(e: mcp_blocking::Error, name: &str) -> Failure {
    let needs_approval = matches!(
        e.close_reason(),
        Some(CloseReason::Authorization(AuthError::ApprovalNeeded))
    ) || matches!(
        &e,
        mcp_blocking::Error::Call(CallError::Authorization(AuthError::ApprovalNeeded))
    );
    if needs_approval {
        return Failure::Auth(format!(
            "the server needs authorization and this run takes no input: run `mcp auth login {name}` first"
        ));
    }
    Failure::Mcp(e)
}

// ----- credential state -------------------------------------------------------------

/// What is known about a server's credentials, without a connection.
pub enum State {
    /// A bearer token from this variable is sent as it is.
    External(String),
    /// Nothing stored.
    None,
    /// A token, valid until then (Unix seconds), or of unknown expiry.
    Valid(Option<u64>),
    /// The access token expired; a refresh token is there.
    Refreshable,
    /// The access token expired, and there is nothing to refresh it with.
    Expired,
    /// A registration but no token.
    NoToken,
    /// The store cannot be read.
    Unreadable(String),
    /// The entry's bearer token variable (`bearerTokenEnv`) is not set: its connections
    /// fail until it is.
    Unset(String),
}

/// What to do when `name`'s bearer token variable `var` is not set.
fn unset_advice(name: &str, var: &str) -> String {
    format!(
        "server {name} sends its bearer token from ${var}, which is not set: set it, or \
         remove bearerTokenEnv from the entry to use OAuth"
    )
}

/// The state of `entry`'s credentials.
pub fn state(entry: &ServerEntry) -> State {
    if let Some((var, _)) = bearer_from_env(entry) {
        return State::External(var);
    }
    if let Some(var) = &entry.bearer_token_env {
        return State::Unset(var.clone());
    }
    let Some(url) = &entry.url else {
        return State::None;
    };
    let store = match FileCredentialStore::open_default() {
        Ok(s) => s,
        Err(e) => return State::Unreadable(e.to_string()),
    };
    match store.load(&binding_url(url)) {
        Err(e) => State::Unreadable(e.to_string()),
        Ok(None) => State::None,
        Ok(Some(c)) => state_of(&c),
    }
}

fn state_of(c: &Credentials) -> State {
    if c.access_token.is_none() {
        return if c.refresh_token.is_some() {
            State::Refreshable
        } else {
            State::NoToken
        };
    }
    if c.is_expired(unix_now()) {
        if c.refresh_token.is_some() {
            State::Refreshable
        } else {
            State::Expired
        }
    } else {
        State::Valid(c.expires_at)
    }
}

impl State {
    /// For people: `none`, `valid until …`, `expired (refreshable)`, `external`.
    pub fn describe(&self) -> String {
        match self {
            State::External(var) => format!("external (bearer token from ${var})"),
            State::None => "none".into(),
            State::Valid(Some(t)) => format!("valid until {}", utc(*t)),
            State::Valid(None) => "valid (no expiry given)".into(),
            State::Refreshable => "expired (refreshable)".into(),
            State::Expired => "expired".into(),
            State::NoToken => "registered, no token".into(),
            State::Unreadable(e) => format!("unreadable ({e})"),
            State::Unset(var) => format!("bearer token variable ${var} not set"),
        }
    }

    /// `ok`, `warn` or `fail`, for `doctor`.
    pub fn severity(&self) -> &'static str {
        match self {
            State::External(_) | State::Valid(_) | State::Refreshable => "ok",
            State::None | State::Expired | State::NoToken => "warn",
            State::Unreadable(_) | State::Unset(_) => "fail",
        }
    }

    /// The state, and the fix when there is one.
    pub fn advice(&self, name: &str) -> String {
        let fix = match self {
            State::None | State::Expired | State::NoToken | State::Unreadable(_) => {
                format!(" (if the server asks for authorization: mcp auth login {name})")
            }
            State::Unset(_) => format!(" (set it, or remove bearerTokenEnv from {name})"),
            _ => String::new(),
        };
        format!("credentials {}{fix}", self.describe())
    }

    /// For `--format json`.
    pub fn to_json(&self) -> Value {
        let (state, until) = match self {
            State::External(_) => ("external", None),
            State::None => ("none", None),
            State::Valid(t) => ("valid", *t),
            State::Refreshable => ("expired-refreshable", None),
            State::Expired => ("expired", None),
            State::NoToken => ("no-token", None),
            State::Unreadable(_) => ("unreadable", None),
            State::Unset(_) => ("unset", None),
        };
        json!({"state": state, "expiresAt": until, "description": self.describe()})
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `2025-01-31 13:45 UTC`.
fn utc(unix: u64) -> String {
    let t = mcp_blocking::mcp_proto::time::rfc3339_utc(unix.saturating_mul(1000));
    format!("{} {} UTC", &t[..10], &t[11..16])
}

/// One line for `add` and `get`.
pub fn oauth_summary(o: &OAuthEntry) -> String {
    let mut parts = Vec::new();
    if let Some(r) = &o.client_registration {
        parts.push(format!("registration {r}"));
    }
    if let Some(id) = &o.client_id {
        parts.push(format!("client {id}"));
    }
    if let Some(var) = &o.client_secret_env {
        parts.push(format!("secret from ${var}"));
    }
    if let Some(i) = &o.issuer {
        parts.push(format!("issuer {i}"));
    }
    if let Some(r) = &o.resource {
        parts.push(format!("resource {r}"));
    }
    if !o.scopes.is_empty() {
        parts.push(format!("scopes {}", o.scopes.join(",")));
    }
    if parts.is_empty() {
        "automatic".into()
    } else {
        parts.join(", ")
    }
}

// ----- mcp auth ---------------------------------------------------------------------

/// `mcp auth login|status|logout <name>`.
pub fn command(
    global: &Global,
    action: AuthAction,
    name: &str,
    scopes: &[String],
    no_browser: bool,
) -> Result<u8, Failure> {
    let entry = session::entry(global, name)?;
    let Some(url) = entry.url.clone() else {
        return Err(Failure::Usage(format!(
            "{name} is a stdio server: authorization is for HTTP servers"
        )));
    };
    match action {
        AuthAction::Login => login(global, name, &entry, scopes, no_browser),
        AuthAction::Status => status(global, name, &entry, &url),
        AuthAction::Logout => logout(global, name, &url),
    }
}

fn login(
    global: &Global,
    name: &str,
    entry: &ServerEntry,
    scopes: &[String],
    no_browser: bool,
) -> Result<u8, Failure> {
    if global.no_input {
        return Err(Failure::Usage(
            "auth login needs a person to approve in a browser: drop --no-input".into(),
        ));
    }
    if let Some((var, _)) = bearer_from_env(entry) {
        eprintln!(
            "mcp: note: ${var} is set, and connections send it instead of what this login stores"
        );
    }
    let plan = Plan {
        interactive: true,
        open_browser: !no_browser,
        fresh: true,
        saved: Arc::default(),
        scopes: scopes.to_vec(),
        timeout: global.timeout,
    };
    let mut client = session::connect_with(global, name, entry.clone(), None, &plan)?;
    client.set_grace_period(Duration::from_millis(500));
    client.close();
    let saved = plan
        .saved
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let Some(creds) = saved.filter(|c| c.access_token.is_some()) else {
        match global.format {
            Format::Json => print_json(&json!({"server": name, "loggedIn": false,
                "message": "the server did not ask for authorization"})),
            Format::Text => {
                println!("{name}: the server did not ask for authorization; nothing stored");
            }
        }
        return Ok(0);
    };
    let state = state_of(&creds);
    match global.format {
        Format::Json => print_json(&json!({
            "server": name,
            "loggedIn": true,
            "issuer": creds.issuer,
            "scope": creds.granted_scope,
            "credentials": state.to_json(),
        })),
        Format::Text => print!("{}", logged_in_text(name, &creds, &state)),
    }
    Ok(0)
}

/// What `auth login` prints once logged in. The issuer and the scope are the
/// authorization server's text: each is made one line that cannot steer the terminal.
fn logged_in_text(name: &str, creds: &Credentials, state: &State) -> String {
    let issuer = crate::terminal::one_line(&creds.issuer);
    let mut text = format!("logged in to {name} at {issuer}\n");
    if let Some(s) = &creds.granted_scope {
        text.push_str(&format!("  scope {}\n", crate::terminal::one_line(s)));
    }
    text.push_str(&format!("  credentials {}\n", state.describe()));
    text
}

fn status(global: &Global, name: &str, entry: &ServerEntry, url: &str) -> Result<u8, Failure> {
    let store = store()?;
    let path = store.path_for(&binding_url(url));
    let stored = store
        .load(&binding_url(url))
        .map_err(|e| Failure::Auth(format!("cannot read the stored credentials: {e}")))?;
    let state = state(entry);
    let client = stored.as_ref().and_then(|c| c.client.as_ref());
    match global.format {
        Format::Json => print_json(&json!({
            "server": name,
            "url": redact_url(url),
            "credentials": state.to_json(),
            "file": stored.as_ref().map(|_| &path),
            "issuer": stored.as_ref().map(|c| &c.issuer),
            "resource": stored.as_ref().map(|c| &c.resource),
            "client": client.map(|c| json!({"clientId": c.client_id, "source": c.source,
                "authMethod": c.auth_method})),
            "requestedScope": stored.as_ref().and_then(|c| c.requested_scope.as_ref()),
            "grantedScope": stored.as_ref().and_then(|c| c.granted_scope.as_ref()),
        })),
        Format::Text => {
            let mut rows = vec![
                vec!["server".to_owned(), format!("{name} ({})", redact_url(url))],
                vec!["credentials".to_owned(), state.describe()],
            ];
            if let Some(c) = &stored {
                rows.push(vec!["issuer".into(), c.issuer.clone()]);
                rows.push(vec!["resource".into(), c.resource.clone()]);
                if let Some(r) = client {
                    rows.push(vec![
                        "client".into(),
                        format!("{} ({}, {})", r.client_id, r.source, r.auth_method),
                    ]);
                }
                if let Some(s) = &c.requested_scope {
                    rows.push(vec!["requested scope".into(), s.clone()]);
                }
                if let Some(s) = &c.granted_scope {
                    rows.push(vec!["granted scope".into(), s.clone()]);
                }
                rows.push(vec!["file".into(), path.display().to_string()]);
            }
            table(&rows);
            if matches!(state, State::None | State::Expired | State::NoToken) {
                println!("(to authorize: mcp auth login {name})");
            }
        }
    }
    Ok(0)
}

fn logout(global: &Global, name: &str, url: &str) -> Result<u8, Failure> {
    let store = store()?;
    let key = binding_url(url);
    let stored = store.load(&key);
    let revoked = match &stored {
        Ok(Some(c)) => revoke(c, global),
        Ok(None) => Revocation::Skipped("nothing stored".into()),
        Err(_) => Revocation::Skipped("the stored file is unreadable".into()),
    };
    let deleted = store
        .delete(&key)
        .map_err(|e| Failure::Auth(format!("cannot delete the stored credentials: {e}")))?;
    let revocation = match &revoked {
        Revocation::Done => "revoked at the authorization server".to_owned(),
        Revocation::Skipped(why) => format!("not revoked: {why}"),
    };
    match global.format {
        Format::Json => print_json(&json!({
            "server": name,
            "deleted": deleted,
            "revoked": matches!(revoked, Revocation::Done),
            "revocation": revocation,
        })),
        Format::Text => {
            if deleted {
                println!("logged out of {name}: credentials deleted ({revocation})");
            } else {
                println!("{name}: no stored credentials");
            }
        }
    }
    Ok(0)
}

// ----- revocation (RFC 7009) --------------------------------------------------------

enum Revocation {
    Done,
    Skipped(String),
}

/// Revokes the refresh token, then the access token, at the authorization server's
/// `revocation_endpoint` (remembered with the credentials), through the library's one-shot
/// request. Best effort: the file is deleted whatever happens here.
fn revoke(c: &Credentials, global: &Global) -> Revocation {
    if c.revocation_endpoint.is_none() {
        return Revocation::Skipped("the authorization server offers no revocation".into());
    }
    let requests = match revocation_requests(c, false) {
        Ok(r) if r.is_empty() => return Revocation::Skipped("no token stored".into()),
        Ok(r) => r,
        Err(e) => return Revocation::Skipped(e.to_string()),
    };
    let http = HttpOptions::new();
    // One deadline for both revocations: `--timeout`, else the library's bound for one
    // request (connecting, then 30 s for the response).
    let total = global
        .timeout
        .unwrap_or(http.connect_timeout + Duration::from_secs(30));
    let deadline = std::time::Instant::now() + total;
    let mut revoked = false;
    let mut trouble = None;
    for request in requests {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        match send_auth_request_within(request, &http, left) {
            Ok(r) if r.status == 200 => revoked = true,
            Ok(r) => trouble = Some(format!("the server answered {}", r.status)),
            Err(e) => trouble = Some(e.to_string()),
        }
    }
    match (revoked, trouble) {
        (true, _) => Revocation::Done,
        (false, why) => Revocation::Skipped(why.unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An authorization server's issuer and scope cannot add lines or send the
    /// terminal control sequences (a window title, a cleared screen).
    #[test]
    fn the_login_summary_shows_the_servers_text_on_one_line_each() {
        let creds = Credentials {
            server_url: "https://mcp.example.com/mcp".into(),
            resource: "https://mcp.example.com/mcp".into(),
            issuer: "https://as.example\u{1b}]0;pwned\u{7}".into(),
            client: None,
            access_token: Some("t".into()),
            token_type: "Bearer".into(),
            expires_at: None,
            obtained_at: None,
            refresh_token: None,
            requested_scope: None,
            granted_scope: Some("read\n\u{1b}[2Jlogged in to bank at https://bank\r".into()),
            revocation_endpoint: None,
        };
        let text = logged_in_text("ex", &creds, &State::Valid(None));
        assert_eq!(text.lines().count(), 3, "{text:?}");
        assert!(!text.contains(['\u{1b}', '\u{7}', '\r']), "{text:?}");
        assert!(
            text.starts_with("logged in to ex at https://as.example"),
            "{text:?}"
        );
        assert!(text.contains("  scope read"), "{text:?}");
    }
}
