//! The CLI's OAuth end to end: `mcp auth login` through the loopback callback, then
//! `mcp call`, `mcp auth status`, `mcp status`, `mcp auth logout`, against a protected
//! MCP server and its authorization server (`tests/fixtures/oauth_server.py`, Python 3
//! standard library, on 127.0.0.1).
//!
//! No browser: the test plays it. It reads the URL the CLI prints on stderr ("Open this
//! URL to authorize: …"), GETs it from the fixture's `/authorize` (which approves at
//! once and answers `302` to the redirect URI), and GETs that `Location` from the CLI's
//! own loopback listener, exactly what a browser would do. Every secret the fixture
//! handed out or received is then looked for in everything the CLI wrote (stdout,
//! stderr, and the `-v` wire log, which goes to stderr).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use mcp_tests::cli_home::CliHome as Home;

fn python_available() -> bool {
    Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The fixture process, killed on drop.
struct Fixture {
    child: Child,
    port: u16,
    secrets: PathBuf,
}

impl Fixture {
    fn start(dir: &Path) -> Fixture {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join("oauth_server.py");
        let secrets = dir.join("fixture-secrets.txt");
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(&secrets)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the fixture");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("read the fixture's port");
        let port = line.trim().parse().expect("the fixture prints its port");
        Fixture {
            child,
            port,
            secrets,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// What the fixture logged: the secrets, and the revocations.
    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(&self.secrets)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One GET, no redirect followed: the status line and the `Location`, if any.
fn get(url: &str) -> (String, Option<String>) {
    let rest = url.strip_prefix("http://").expect("a loopback http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut s = TcpStream::connect(authority).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    let _ = s.read_to_string(&mut response);
    let status = response.lines().next().unwrap_or("").to_owned();
    let location = response
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("location")
                .then(|| v.trim().to_owned())
        });
    (status, location)
}

/// Runs `mcp -v auth login srv --no-browser`, approving as a browser would.
fn login(home: &Home) -> (Output, String) {
    let mut child = home
        .command(&["-v", "auth", "login", "srv", "--no-browser"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcp auth login");
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut seen = String::new();
        let mut lines = BufReader::new(stderr).lines();
        let mut approved = None;
        for line in lines.by_ref() {
            let line = line.unwrap_or_default();
            seen.push_str(&line);
            seen.push('\n');
            if let Some(url) = line.strip_prefix("Open this URL to authorize: ") {
                // The authorization server approves at once and redirects.
                let (status, location) = get(url.trim());
                assert!(status.contains(" 302 "), "{status}");
                let callback = location.expect("a Location to the redirect URI");
                assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
                // The browser follows it to the CLI's listener.
                let (status, _) = get(&callback);
                approved = Some(status);
                break;
            }
        }
        for line in lines {
            seen.push_str(&line.unwrap_or_default());
            seen.push('\n');
        }
        (seen, approved)
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mcp auth login did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (stderr, approved) = reader.join().expect("stderr reader");
    let approved = approved.unwrap_or_else(|| panic!("no URL to open on stderr:\n{stderr}"));
    assert!(
        approved.contains(" 200 "),
        "the listener answered {approved}"
    );
    let output = child.wait_with_output().unwrap();
    (output, stderr)
}

/// Keeps what a run wrote, to look for secrets in at the end.
fn record(all: &mut String, o: &Output) {
    all.push_str(&text(&o.stdout));
    all.push_str(&text(&o.stderr));
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A home for `test` with the fixture running and `srv` added (legacy era): the home,
/// the fixture and the `add` run; `None` (the test is skipped) without Python.
fn with_fixture(test: &str) -> Option<(Home, Fixture, Output)> {
    if !python_available() {
        eprintln!("skipped: python3 is not installed");
        return None;
    }
    let home = Home::new(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-oauth"),
        test,
    );
    let fixture = Fixture::start(&home.dir);
    let add = home.run(&["add", "srv", "--url", &fixture.url(), "--era", "legacy"]);
    assert!(add.status.success(), "{}", text(&add.stderr));
    Some((home, fixture, add))
}

#[test]
fn login_call_status_logout_without_leaking_a_secret() {
    let Some((home, fixture, add)) = with_fixture("flow") else {
        return;
    };
    let mut everything = String::new();
    record(&mut everything, &add);

    // Without a person, a server that wants authorization fails at once, naming the fix.
    let refused = home.run(&["--no-input", "tools", "srv"]);
    record(&mut everything, &refused);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("mcp auth login srv"),
        "{}",
        text(&refused.stderr)
    );
    let status = home.run(&["auth", "status", "srv"]);
    record(&mut everything, &status);
    assert!(
        text(&status.stdout).contains("none"),
        "{}",
        text(&status.stdout)
    );

    let (out, stderr) = login(&home);
    everything.push_str(&text(&out.stdout));
    everything.push_str(&stderr);
    assert!(out.status.success(), "login failed:\n{stderr}");
    assert!(
        text(&out.stdout).contains("logged in to srv"),
        "{}",
        text(&out.stdout)
    );
    // The wire log was on: the token request went by it.
    assert!(stderr.contains("POST /token"), "{stderr}");

    // One file, private.
    let files: Vec<PathBuf> = std::fs::read_dir(home.credentials_dir())
        .expect("the credentials directory")
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(name.ends_with(".json") && name.len() == 69, "{name}");
    #[cfg(unix)]
    {
        assert_eq!(mode(file), 0o600);
        assert_eq!(mode(&home.credentials_dir()), 0o700);
    }

    // Later runs use the stored token, with no person needed.
    let call = home.run(&[
        "-v",
        "--no-input",
        "call",
        "srv",
        "echo",
        "--arg",
        "text=hello",
    ]);
    record(&mut everything, &call);
    assert!(call.status.success(), "{}", text(&call.stderr));
    assert!(text(&call.stdout).contains("echo: hello"));
    assert!(text(&call.stderr).contains("Authorization: [redacted]"));

    let status = home.run(&["auth", "status", "srv"]);
    record(&mut everything, &status);
    let shown = text(&status.stdout);
    assert!(shown.contains("valid until"), "{shown}");
    assert!(shown.contains("dcr"), "{shown}");
    let status = home.run(&["status", "srv"]);
    record(&mut everything, &status);
    assert!(text(&status.stdout).contains("credentials: valid until"));
    let json = home.run(&["--format", "json", "auth", "status", "srv"]);
    record(&mut everything, &json);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["credentials"]["state"], "valid");
    let test = home.run(&["test", "srv"]);
    record(&mut everything, &test);
    assert!(test.status.success(), "{}", text(&test.stderr));

    // A bearer token from the environment is used as it is, and shown as external.
    let external = home
        .command(&["auth", "status", "srv"])
        .env("MCP_BEARER_TOKEN", "not-a-fixture-token")
        .output()
        .unwrap();
    assert!(text(&external.stdout).contains("external"));
    let rejected = home
        .command(&["--no-input", "tools", "srv"])
        .env("MCP_BEARER_TOKEN", "not-a-fixture-token")
        .output()
        .unwrap();
    assert_eq!(rejected.status.code(), Some(1));
    assert!(!text(&rejected.stderr).contains("not-a-fixture-token"));

    let logout = home.run(&["auth", "logout", "srv"]);
    record(&mut everything, &logout);
    assert!(logout.status.success(), "{}", text(&logout.stderr));
    assert!(
        text(&logout.stdout).contains("revoked"),
        "{}",
        text(&logout.stdout)
    );
    assert!(!file.exists(), "the credentials file is still there");
    assert!(fixture.log().iter().any(|l| l == "revoked refresh"));
    let after = home.run(&["auth", "status", "srv"]);
    record(&mut everything, &after);
    assert!(text(&after.stdout).contains("none"));

    let secrets: Vec<String> = fixture
        .log()
        .into_iter()
        .filter(|l| !l.starts_with("revoked "))
        .collect();
    // A client secret, a code, a verifier, an access and a refresh token at least.
    assert!(secrets.len() >= 5, "{secrets:?}");
    for secret in &secrets {
        assert!(
            !everything.contains(secret.as_str()),
            "a secret reached the CLI's output: {secret}"
        );
    }
}

/// Tokens the authorization server no longer knows: the refresh is refused
/// (`invalid_grant`). A run without input then fails naming the login to run (the first
/// such run did not: the refusal came on a call after connecting), and the dead tokens
/// are not kept to be tried again by every later run.
#[test]
fn dead_tokens_are_forgotten_and_the_login_is_named() {
    let Some((home, fixture, _)) = with_fixture("dead-tokens") else {
        return;
    };
    let (out, stderr) = login(&home);
    assert!(out.status.success(), "login failed:\n{stderr}");
    let mut s = TcpStream::connect(("127.0.0.1", fixture.port)).unwrap();
    write!(
        s,
        "POST /forget?after=2 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"),
        "{answer}"
    );
    // The first run connects (`initialize` and `notifications/initialized` still pass)
    // and meets the refusal on its `tools/list`; the second meets it connecting.
    for run in 1..=2 {
        let refused = home.run(&["--no-input", "tools", "srv"]);
        assert_eq!(refused.status.code(), Some(1), "run {run}");
        assert!(
            text(&refused.stderr).contains("run `mcp auth login srv` first"),
            "run {run}: {}",
            text(&refused.stderr)
        );
        let status = home.run(&["auth", "status", "srv"]);
        let shown = text(&status.stdout);
        assert!(shown.contains("registered, no token"), "run {run}: {shown}");
    }
}
