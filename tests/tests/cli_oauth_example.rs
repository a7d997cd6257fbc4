//! `mcp serve-example --oauth`, the bundled protected server with its own authorization
//! server that approves at once: the README's "CLI with a protected server" commands
//! against it (fresh `mcp` processes; the test plays the browser from the URL the CLI
//! prints), and what its resource guard and authorization server must refuse, spoken to
//! directly over HTTP on 127.0.0.1.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use mcp_proto::auth::crypto::{base64url, sha256};
use mcp_proto::auth::form::{callback_params, encode_pairs};
use mcp_tests::cli_home::CliHome as Home;
use serde_json::{Value, json};

/// `mcp serve-example --http 127.0.0.1:0 --oauth`, killed on drop.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(mcp_tests::example_bin("mcp-blocking", "mcp"))
            .args(["serve-example", "--http", "127.0.0.1:0", "--oauth"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start serve-example");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = lines.next().unwrap().unwrap();
        let note = lines.next().unwrap().unwrap();
        assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"));
        assert!(note.contains("approves every login at once"), "{note}");
        std::thread::spawn(move || lines.for_each(drop));
        Server { child, url }
    }

    fn issuer(&self) -> &str {
        self.url.trim_end_matches("/mcp")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP exchange: status, headers (names lowercased), body.
struct Reply {
    status: u16,
    headers: HashMap<String, String>,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }

    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }
}

fn http(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let rest = url.strip_prefix("http://").expect("a loopback http URL");
    let (authority, target) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut s = TcpStream::connect(authority).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut request = format!(
        "{method} {target} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    s.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = s.read_to_string(&mut response);
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let mut lines = head.lines();
    let status = lines.next().unwrap_or("").split(' ').nth(1).unwrap_or("0");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Reply {
        status: status.parse().unwrap_or(0),
        headers,
        body: body.to_owned(),
    }
}

fn form(url: &str, pairs: &[(&str, &str)]) -> Reply {
    let headers = [("Content-Type", "application/x-www-form-urlencoded")];
    http("POST", url, &headers, &encode_pairs(pairs))
}

/// A `tools/list` to the MCP endpoint, with `token` as the bearer token.
fn mcp_request(url: &str, token: Option<&str>) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(b) = &bearer {
        headers.push(("Authorization", b));
    }
    http("POST", url, &headers, &body.to_string())
}

fn query(location: &str) -> HashMap<String, String> {
    callback_params(location).unwrap().into_iter().collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `mcp auth login docs --no-browser`, with the test as the browser: the authorize URL
/// from stderr, its `302` followed to the CLI's loopback listener.
fn login(home: &Home) -> Output {
    let mut child = home
        .command(&["auth", "login", "docs", "--no-browser"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcp auth login");
    let stderr = child.stderr.take().unwrap();
    let browser = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            if let Some(url) = line.strip_prefix("Open this URL to authorize: ") {
                let approved = http("GET", url.trim(), &[], "");
                assert_eq!(approved.status, 302, "{}", approved.body);
                let callback = approved.header("location").to_owned();
                assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
                return http("GET", &callback, &[], "").status;
            }
        }
        0
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mcp auth login did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(browser.join().unwrap(), 200, "the CLI's listener answered");
    child.wait_with_output().unwrap()
}

#[test]
fn readme_commands_against_serve_example_oauth() {
    let server = Server::start();
    let home = Home::new(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-oauth-example"),
        "flow",
    );
    let add = home.run(&["add", "docs", "--url", &server.url]);
    assert!(add.status.success(), "{}", text(&add.stderr));

    // Before login: refused, with the fix named.
    let refused = home.run(&["call", "docs", "echo", "--arg", "text=hello"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("run `mcp auth login docs` first"));

    let login = login(&home);
    let out = text(&login.stdout);
    assert_eq!(login.status.code(), Some(0), "{}", text(&login.stderr));
    assert!(
        out.starts_with(&format!("logged in to docs at {}\n", server.issuer())),
        "{out}"
    );
    assert!(out.contains("credentials valid until"), "{out}");
    assert_eq!(home.stored(), 1);

    let call = home.run(&["call", "docs", "echo", "--arg", "text=hello"]);
    assert_eq!(call.status.code(), Some(0), "{}", text(&call.stderr));
    assert_eq!(text(&call.stdout), "hello\n");

    let status = home.run(&["auth", "status", "docs"]);
    let out = text(&status.stdout);
    assert_eq!(status.status.code(), Some(0));
    assert!(out.contains("credentials  valid until"), "{out}");
    assert!(out.contains("(dcr, none)"), "{out}");

    let logout = home.run(&["auth", "logout", "docs"]);
    assert_eq!(logout.status.code(), Some(0));
    assert_eq!(
        text(&logout.stdout),
        "logged out of docs: credentials deleted (revoked at the authorization server)\n"
    );
    assert_eq!(home.stored(), 0);

    let after = home.run(&["call", "docs", "echo", "--arg", "text=hello"]);
    assert_eq!(after.status.code(), Some(1));
    assert!(text(&after.stderr).contains("run `mcp auth login docs` first"));
}

/// Registers a client and runs `/authorize` with the challenge of `verifier`: the
/// client id and the redirect's query.
fn authorize(
    server: &Server,
    verifier: &str,
    extra: &[(&str, &str)],
) -> (String, HashMap<String, String>) {
    let registered = http(
        "POST",
        &format!("{}/register", server.issuer()),
        &[("Content-Type", "application/json")],
        &json!({"redirect_uris": ["http://127.0.0.1:9/callback"], "client_name": "t"}).to_string(),
    );
    assert_eq!(registered.status, 201, "{}", registered.body);
    let client_id = registered.json()["client_id"].as_str().unwrap().to_owned();
    let challenge = base64url(&sha256(verifier.as_bytes()));
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", client_id.as_str()),
        // Another port than registered: any port of a loopback URI is fine.
        ("redirect_uri", "http://127.0.0.1:10/callback"),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("state", "st4te"),
    ];
    pairs.extend_from_slice(extra);
    let url = format!("{}/authorize?{}", server.issuer(), encode_pairs(&pairs));
    let reply = http("GET", &url, &[], "");
    assert_eq!(reply.status, 302, "{}", reply.body);
    let location = reply.header("location");
    assert!(
        location.starts_with("http://127.0.0.1:10/callback?"),
        "{location}"
    );
    (client_id, query(location))
}

fn exchange(server: &Server, client_id: &str, code: &str, verifier: &str) -> Reply {
    form(
        &format!("{}/token", server.issuer()),
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", "http://127.0.0.1:10/callback"),
            ("code_verifier", verifier),
            ("client_id", client_id),
            ("resource", &server.url),
        ],
    )
}

#[test]
fn serve_example_oauth_refuses_what_it_must() {
    let server = Server::start();
    let other = Server::start();
    let issuer = server.issuer().to_owned();
    let metadata = format!("{issuer}/.well-known/oauth-protected-resource/mcp");

    // No token: 401 naming the resource metadata, which names the issuer.
    let r = mcp_request(&server.url, None);
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("www-authenticate"),
        format!("Bearer resource_metadata=\"{metadata}\"")
    );
    let prm = http("GET", &metadata, &[], "").json();
    assert_eq!(prm["resource"], server.url.as_str());
    assert_eq!(prm["authorization_servers"], json!([issuer]));
    let asm = http(
        "GET",
        &format!("{issuer}/.well-known/oauth-authorization-server"),
        &[],
        "",
    )
    .json();
    assert_eq!(asm["issuer"], issuer.as_str());
    assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));

    // Only loopback redirect URIs are registered.
    let r = http(
        "POST",
        &format!("{issuer}/register"),
        &[],
        &json!({"redirect_uris": ["https://evil.example/cb"]}).to_string(),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"], "invalid_redirect_uri");
    // A member named as the JSON parser reserves (its string would be parsed as JSON,
    // nested past any depth checked) is refused before the body is read.
    let r = http(
        "POST",
        &format!("{issuer}/register"),
        &[],
        r#"{"redirect_uris":["http://127.0.0.1/cb"],"x":{"$serde_json::private::RawValue":"[[1]]"}}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"], "invalid_client_metadata");

    // A resource other than this server's is refused at the redirect.
    let verifier = "v".repeat(43);
    let (_, q) = authorize(
        &server,
        &verifier,
        &[("resource", "http://127.0.0.1:1/mcp")],
    );
    assert_eq!(q["error"], "invalid_target");
    assert_eq!(q["iss"], issuer);

    // The wrong PKCE verifier: invalid_grant, and the code is spent.
    let (client, q) = authorize(&server, &verifier, &[("resource", &server.url)]);
    assert_eq!(
        (q["state"].as_str(), q["iss"].as_str()),
        ("st4te", issuer.as_str())
    );
    let wrong = exchange(&server, &client, &q["code"], &"w".repeat(43));
    assert_eq!(
        (wrong.status, wrong.json()["error"].clone()),
        (400, json!("invalid_grant"))
    );
    let spent = exchange(&server, &client, &q["code"], &verifier);
    assert_eq!(spent.json()["error"], "invalid_grant");

    // The right one: a token that opens this server, and no other.
    let (client, q) = authorize(&server, &verifier, &[]);
    let granted = exchange(&server, &client, &q["code"], &verifier);
    assert_eq!(granted.status, 200, "{}", granted.body);
    let tokens = granted.json();
    assert_eq!(tokens["token_type"], "Bearer");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(mcp_request(&server.url, Some(access)).status, 200);
    let elsewhere = mcp_request(&other.url, Some(access));
    assert_eq!(elsewhere.status, 401);
    assert!(
        elsewhere
            .header("www-authenticate")
            .contains("error=\"invalid_token\"")
    );

    // Refresh rotates: the new token works, the old refresh token does not.
    let old_refresh = tokens["refresh_token"].as_str().unwrap();
    let refresh = |token: &str| {
        form(
            &format!("{issuer}/token"),
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", token),
                ("client_id", &client),
            ],
        )
    };
    let renewed = refresh(old_refresh);
    assert_eq!(renewed.status, 200, "{}", renewed.body);
    assert_eq!(refresh(old_refresh).json()["error"], "invalid_grant");
    let renewed = renewed.json();
    let access = renewed["access_token"].as_str().unwrap();
    assert_eq!(mcp_request(&server.url, Some(access)).status, 200);

    // Revoking the refresh token revokes its access token.
    let revoked = form(
        &format!("{issuer}/revoke"),
        &[
            ("token", renewed["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    );
    assert_eq!(revoked.status, 200);
    assert_eq!(mcp_request(&server.url, Some(access)).status, 401);
}
