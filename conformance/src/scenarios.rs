//! One handler per scenario id of the suite.

use std::error::Error;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use mcp_blocking::Client;
use mcp_blocking::{
    AuthConfig, ClientIdentity, EndpointUrl, Grant, HttpOptions, KeySigner, Options,
};
use mcp_proto::client::{AcceptDefaults, CallRequest, ClientConfig};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::{EraMode, ProtocolVersion, VersionPolicy};
use serde_json::{Value, json};

use crate::Ctx;

/// A scenario's body.
pub type Handler = fn(&Ctx) -> Result<(), Box<dyn Error>>;

/// Every client scenario id of the suite (all versions, `extensions` and `backcompat`),
/// with its handler.
pub const SCENARIOS: &[(&str, Handler)] = &[
    ("initialize", initialize),
    ("tools_call", tools_call),
    ("elicitation-sep1034-client-defaults", elicitation_defaults),
    ("sse-retry", sse_retry),
    ("request-metadata", request_metadata),
    ("json-schema-ref-no-deref", list_tools_only),
    ("json-schema-2020-12-preservation", json_schema_preservation),
    ("sep-2322-client-request-state", request_state),
    ("http-standard-headers", standard_headers),
    ("http-custom-headers", custom_headers),
    ("http-invalid-tool-headers", invalid_tool_headers),
    // OAuth: the library's authorization flow, approved headless.
    ("auth/metadata-default", oauth),
    ("auth/metadata-var1", oauth),
    ("auth/metadata-var2", oauth),
    ("auth/metadata-var3", oauth),
    ("auth/basic-cimd", oauth),
    ("auth/scope-from-www-authenticate", oauth),
    ("auth/scope-from-scopes-supported", oauth),
    ("auth/scope-omitted-when-undefined", oauth),
    ("auth/scope-step-up", oauth),
    ("auth/scope-retry-limit", oauth),
    ("auth/token-endpoint-auth-basic", oauth),
    ("auth/token-endpoint-auth-post", oauth),
    ("auth/token-endpoint-auth-none", oauth),
    ("auth/pre-registration", oauth),
    ("auth/2025-03-26-oauth-metadata-backcompat", oauth),
    ("auth/2025-03-26-oauth-endpoint-fallback", oauth),
    ("auth/resource-mismatch", oauth),
    ("auth/offline-access-scope", oauth),
    ("auth/offline-access-not-supported", oauth),
    ("auth/authorization-server-migration", oauth),
    ("auth/iss-supported", oauth),
    ("auth/iss-not-advertised", oauth),
    ("auth/iss-supported-missing", oauth),
    ("auth/iss-wrong-issuer", oauth),
    ("auth/iss-unexpected", oauth),
    ("auth/iss-normalized", oauth),
    ("auth/metadata-issuer-mismatch", oauth),
    ("auth/client-credentials-jwt", oauth),
    ("auth/client-credentials-basic", oauth),
    ("auth/enterprise-managed-authorization", oauth),
    ("auth/dpop", oauth),
    ("auth/dpop-nonce", oauth),
    ("auth/wif-jwt-bearer", oauth),
    // The Skills extension (SEP-2640).
    ("sep-2640-client-no-prefetch", skills_list),
    ("sep-2640-client-verify-digest", skills_load_all),
    ("sep-2640-client-verify-size", skills_load_all),
    ("sep-2640-client-verify-frontmatter", skills_load_all),
];

/// The handler for `id`.
pub fn handler(id: &str) -> Option<Handler> {
    SCENARIOS.iter().find(|(s, _)| *s == id).map(|(_, h)| *h)
}

/// The client configuration for the version the runner asked for: the stateful
/// handshake offering exactly that version up to 2025-11-25, stateless 2026-07-28 after.
fn config(ctx: &Ctx, caps: ClientCapabilities) -> Result<ClientConfig, Box<dyn Error>> {
    let version = ProtocolVersion::parse(&ctx.version)
        .ok_or_else(|| format!("unknown protocol version {:?}", ctx.version))?;
    let config =
        ClientConfig::new("mcp-rs-conformance", env!("CARGO_PKG_VERSION")).capabilities(caps);
    Ok(if version >= ProtocolVersion::V2026_07_28 {
        config.era_mode(EraMode::Modern)
    } else {
        let mut config = config
            .era_mode(EraMode::Legacy)
            .accept_pre_2025_06_versions();
        config.versions = VersionPolicy {
            accepted: ProtocolVersion::ALL
                .into_iter()
                .filter(|v| *v <= version)
                .collect(),
        };
        config
    })
}

fn connect(ctx: &Ctx, caps: ClientCapabilities) -> Result<Client, Box<dyn Error>> {
    let mut client = Client::connect_http(&ctx.url, config(ctx, caps)?)?;
    client.set_input_handler(Box::new(AcceptDefaults));
    Ok(client)
}

fn initialize(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::none())?;
    client.list_tools()?;
    client.close();
    Ok(())
}

fn tools_call(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::none())?;
    let tools = client.list_tools()?;
    if !tools.iter().any(|t| t.name == "add_numbers") {
        return Err("the server lists no add_numbers tool".into());
    }
    let result = client.call_tool("add_numbers", json!({"a": 2, "b": 3}))?;
    eprintln!("add_numbers: {}", result.text());
    client.close();
    Ok(())
}

/// Lists the server's skills and fetches nothing else: listing is not loading.
fn skills_list(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::none())?;
    let listing = client.list_skills()?;
    for skill in &listing.skills {
        eprintln!(
            "skill {} ({}): {}",
            skill.name, skill.uri, skill.description
        );
    }
    for rejected in &listing.rejected {
        eprintln!("rejected: {rejected}");
    }
    client.close();
    Ok(())
}

/// Lists the skills, loads each (its `SKILL.md` verified against the entry) and then
/// reads each of its files, verified too. A skill that fails verification ends the run
/// with the error, before any of its other files is read.
fn skills_load_all(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::none())?;
    let listing = client.list_skills()?;
    if let Some(rejected) = listing.rejected.first() {
        return Err(rejected.clone().into());
    }
    for skill in listing.skills {
        let loaded = client.load_skill(&skill)?;
        eprintln!(
            "loaded {} ({} bytes of body)",
            skill.uri,
            loaded.body().len()
        );
        if let mcp_proto::skills::SkillFiles::Listed(files) = &skill.files {
            for file in files.iter().filter(|f| f.uri != skill.uri) {
                let bytes = client.read_skill_file(&loaded, &file.uri)?;
                eprintln!("read {} ({} bytes, verified)", file.uri, bytes.len());
            }
        }
    }
    client.close();
    Ok(())
}

fn elicitation_defaults(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::with_elicitation())?;
    client.list_tools()?;
    let result = client.call_tool("test_client_elicitation_defaults", json!({}))?;
    eprintln!("{}", result.text());
    client.close();
    Ok(())
}

fn sse_retry(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::none())?;
    client.list_tools()?;
    let result = client.call_tool("test_reconnection", json!({}))?;
    eprintln!("{}", result.text());
    client.close();
    Ok(())
}

/// Declares every capability so each of the scenario's capability checks is scored.
fn request_metadata(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut caps = ClientCapabilities::with_elicitation();
    caps.sampling = true;
    caps.roots = true;
    let mut client = connect(ctx, caps)?;
    client.list_tools()?;
    client.close();
    Ok(())
}

fn list_tools_only(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::none())?;
    client.list_tools()?;
    client.close();
    Ok(())
}

fn json_schema_preservation(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::none())?;
    let tools = client.list_tools()?;
    let tool = tools
        .iter()
        .find(|t| t.name == "json_schema_2020_12_tool")
        .ok_or("no json_schema_2020_12_tool")?;
    let schema: Value = serde_json::from_str(tool.input_schema.get())?;
    client.call_tool("json_schema_echo", json!({ "schema": schema }))?;
    client.close();
    Ok(())
}

fn request_state(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::with_elicitation())?;
    client.list_tools()?;
    client.call_tool("test_mrtr_echo_state", json!({}))?;
    client.call_tool("test_mrtr_unrelated", json!({}))?;
    client.call_tool("test_mrtr_no_state", json!({}))?;
    client.call_tool("test_mrtr_no_result_type", json!({}))?;
    client.close();
    Ok(())
}

fn standard_headers(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::none())?;
    let tools = client.list_tools()?;
    if let Some(tool) = tools.first() {
        client.call_tool(&tool.name, json!({}))?;
    }
    let resources = client.list_resources()?;
    if let Some(r) = resources.first() {
        client.read_resource(&r.uri)?;
    }
    let prompts = client.list_prompts()?;
    if let Some(p) = prompts.first() {
        client.get_prompt(&p.name, Value::Null)?;
    }
    client.close();
    Ok(())
}

/// Makes the calls the scenario lists in its context (`toolCalls`), after listing tools
/// so the `x-mcp-header` declarations are known.
fn custom_headers(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::none())?;
    client.list_tools()?;
    let calls = ctx
        .context
        .get("toolCalls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if calls.is_empty() {
        return Err("the scenario context lists no toolCalls".into());
    }
    for call in calls {
        let name = call["name"].as_str().ok_or("a toolCall without a name")?;
        let args = call.get("arguments").cloned().unwrap_or(json!({}));
        client.request(CallRequest::call_tool(name, args))?;
    }
    client.close();
    Ok(())
}

fn invalid_tool_headers(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let mut client = connect(ctx, ClientCapabilities::none())?;
    let tools = client.list_tools()?;
    for excluded in client.excluded_tools() {
        eprintln!("excluded {}: {}", excluded.0, excluded.1);
    }
    let valid = tools
        .iter()
        .find(|t| t.name == "valid_tool")
        .ok_or("valid_tool is missing from the listing")?;
    client.call_tool(&valid.name, json!({"value": "ok"}))?;
    client.close();
    Ok(())
}

/// The authorization scenarios: the library's OAuth flow, with the approval done
/// headless (the suite's authorization server redirects at once; its `Location` is the
/// callback). What the scenario's context provides picks the client identity and the
/// grant.
fn oauth(ctx: &Ctx) -> Result<(), Box<dyn Error>> {
    let version = ProtocolVersion::parse(&ctx.version).unwrap_or(ProtocolVersion::V2026_07_28);
    let mut auth = AuthConfig::new("http://127.0.0.1:8976/callback", [0; 32]);
    auth.client_name = "mcp-rs-conformance".into();
    auth.protocol_version = version;
    auth.legacy_fallback =
        version < ProtocolVersion::V2026_07_28 || ctx.scenario.starts_with("auth/2025-03-26");
    let text = |k: &str| {
        ctx.context
            .get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    auth.identity = match text("client_id") {
        Some(client_id) => ClientIdentity::PreRegistered {
            client_id,
            client_secret: text("client_secret"),
            issuer: None,
        },
        None => ClientIdentity::Auto {
            cimd_url: Some("https://conformance-test.local/client-metadata.json".into()),
        },
    };
    match ctx.scenario.as_str() {
        "auth/client-credentials-basic" => auth.grant = Grant::ClientCredentials,
        "auth/client-credentials-jwt" => {
            auth.grant = Grant::ClientCredentials;
            let pem = text("private_key_pem").ok_or("no private_key_pem in the context")?;
            let alg = text("signing_algorithm");
            auth.signer = Some(KeySigner::from_pem(&pem, alg.as_deref())?);
        }
        "auth/wif-jwt-bearer" => {
            let assertion = text("valid_jwt").ok_or("no valid_jwt in the context")?;
            auth.grant = Grant::JwtBearer { assertion };
        }
        "auth/enterprise-managed-authorization" => {
            let need = |k: &str| text(k).ok_or_else(|| format!("no {k} in the context"));
            auth.grant = Grant::EnterpriseManaged {
                idp_token_endpoint: need("idp_token_endpoint")?,
                id_token: need("idp_id_token")?,
                idp_client_id: need("idp_client_id")?,
                idp_client_secret: text("idp_client_secret"),
            };
        }
        _ => {}
    }
    // A DPoP key always: tokens are bound to it when the authorization server supports
    // DPoP, and stay bearer tokens otherwise.
    auth.dpop = Some(KeySigner::generate_es256()?);
    let mut http = HttpOptions::new();
    http.auth = Some(auth);
    let options = Options::new().authorization_handler(headless_approval);
    let mut client = Client::connect_http_with(
        &ctx.url,
        config(ctx, ClientCapabilities::none())?,
        options,
        http,
    )?;
    let tools = client.list_tools()?;
    if let Some(tool) = tools.first() {
        client.call_tool(&tool.name, json!({}))?;
    }
    client.close();
    Ok(())
}

/// Approves without a browser: GETs the authorization URL (loopback only) without
/// following the redirect, and returns its `Location`.
fn headless_approval(url: &str) -> Result<String, String> {
    let endpoint = EndpointUrl::parse(url, false).map_err(|e| e.to_string())?;
    if !endpoint.is_loopback() {
        return Err(format!("refusing to fetch {url}: not a loopback URL"));
    }
    let mut stream = TcpStream::connect((endpoint.host(), endpoint.port()))
        .map_err(|e| format!("connecting to {}: {e}", endpoint.origin()))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        endpoint.target(),
        endpoint.host_header()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    text.lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_owned())
        })
        .ok_or_else(|| {
            format!(
                "the authorization endpoint did not redirect: {}",
                text.lines().next().unwrap_or("")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dispatch table covers every client scenario id the pinned suite knows, and
    /// nothing else: a new or renamed scenario fails here before CI silently skips it.
    #[test]
    fn dispatch_table_matches_the_scenario_list() {
        let text = include_str!("../scenarios.json");
        let doc: Value = serde_json::from_str(text).unwrap();
        let mut listed: Vec<String> = doc["client_scenarios_by_version"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|ids| ids.as_array().unwrap().iter())
            .map(|id| id.as_str().unwrap().to_owned())
            .collect();
        listed.sort();
        listed.dedup();
        let mut ours: Vec<String> = SCENARIOS.iter().map(|(s, _)| (*s).to_owned()).collect();
        ours.sort();
        let before = ours.len();
        ours.dedup();
        assert_eq!(before, ours.len(), "duplicate ids in the dispatch table");
        assert_eq!(ours, listed);
        assert!(handler("no-such-scenario").is_none());
    }
}
