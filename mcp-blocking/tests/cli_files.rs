//! The CLI's own files (the config and the credential store) in a hostile local
//! environment: a symbolic link planted where the CLI writes a temporary file, a FIFO
//! where a credentials file should be.

#![cfg(unix)]

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::text;
use mcp_blocking::FileCredentialStore;

/// Waits for `child` at most `limit`; kills it (and says so) when it takes longer.
fn finish_within(mut child: Child, limit: Duration) -> Result<std::process::Output, String> {
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            return Ok(child.wait_with_output().unwrap());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            return Err(format!(
                "still running after {limit:?}; stdout {:?}, stderr {:?}",
                text(&out.stdout),
                text(&out.stderr)
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `mcp add` writes the config through a temporary file beside it, named
/// `servers.json.tmp<pid>`: a name anyone who can write that directory can predict. The
/// file must be created new (never opened through a link someone else put there), or a
/// planted symbolic link makes `add` overwrite whatever file it names, and the config
/// then becomes that link.
///
/// Expected (docs/cli.md, "Help and mistakes": "`add`, `remove` and `import` hold a lock
/// beside the config … while they read, change and write it"; config.rs `save`: "via a
/// temporary file and a rename, so it is never half-written"; and the credential store's
/// own temporary files are `create_new`, mcp-io/src/credentials.rs): a file that the
/// config does not name is never written, and the config stays a regular file.
#[test]
fn add_does_not_write_through_a_link_planted_at_its_temporary_file() {
    let dir = common::temp_dir("cli-files-tmp-link");
    let config = dir.join("servers.json");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::write(&config, "{\"servers\": {}}\n").unwrap();

    // Hold the config's lock, so that `add` waits for it with its pid known.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("servers.json.lock"))
        .unwrap();
    lock.lock().unwrap();
    let child = Command::new(common::example("mcp"))
        .arg("--config")
        .arg(&config)
        .args(["add", "a", "--url", "https://a.example/mcp"])
        .env_remove("MCP_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Another local user's move: a link at the name the temporary file will have.
    let planted = dir.join(format!("servers.json.tmp{}", child.id()));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    lock.unlock().unwrap();
    let out = finish_within(child, Duration::from_secs(20)).unwrap();

    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "precious\n",
        "`mcp add` wrote the config into the file a planted link named (exit {:?}, stderr {:?})",
        out.status.code(),
        text(&out.stderr)
    );
    assert!(
        !std::fs::symlink_metadata(&config)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the config became the planted link"
    );
}

/// The credentials file of a server, in the store of `state` (`$XDG_STATE_HOME`).
fn credentials_file(state: &Path, url: &str) -> std::path::PathBuf {
    FileCredentialStore::new(state.join("mcp").join("credentials")).path_for(url)
}

/// A home with one HTTP server `srv` at `url` and a FIFO where its credentials file
/// would be.
fn home_with_fifo(test: &str, url: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = common::temp_dir(test);
    let config = dir.join("servers.json");
    let out = common::run_cli(&config, &["add", "srv", "--url", url], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let state = dir.join("state");
    let file = credentials_file(&state, url);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        file.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let status = Command::new("mkfifo").arg(&file).status().unwrap();
    assert!(status.success());
    (dir, file)
}

fn cli(dir: &Path, args: &[&str]) -> Child {
    Command::new(common::example("mcp"))
        .arg("--config")
        .arg(dir.join("servers.json"))
        .args(args)
        .env_remove("MCP_CONFIG")
        .env_remove("MCP_BEARER_TOKEN")
        .env("XDG_STATE_HOME", dir.join("state"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Something that is not a regular file where the credentials should be (a FIFO, which
/// nobody writes to) made `mcp auth logout` block forever on reading it, so the file was
/// never deleted.
///
/// Expected (docs/cli.md, "Naming servers", Secrets: "`auth logout` asks the server to
/// revoke the token where the server supports it, and then deletes the file whether or
/// not revocation worked"; the CLI's own logout already treats an unreadable file as
/// "not revoked" and deletes it): logout finishes and the path is gone.
#[test]
fn logout_deletes_a_credentials_path_that_is_a_fifo() {
    let url = "https://fifo.example/mcp";
    let (dir, file) = home_with_fifo("cli-files-fifo-logout", url);
    let out = finish_within(
        cli(&dir, &["auth", "logout", "srv"]),
        Duration::from_secs(15),
    )
    .unwrap_or_else(|e| panic!("`mcp auth logout` with a FIFO as credentials file: {e}"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        std::fs::symlink_metadata(&file).is_err(),
        "the credentials path is still there"
    );
}

/// `auth status` and `doctor` work offline and say when the stored credentials are
/// unreadable (`State::Unreadable`, "unreadable (…)", a `doctor` failure). A FIFO in place
/// of the file hung both forever.
///
/// Expected (docs/cli.md, "Authorization (OAuth)": "`mcp auth status <name>` shows the
/// binding … and its state … `status` and `doctor` show the same state, with the fix";
/// "`mcp status` … works offline by default"): both answer, promptly.
#[test]
fn status_and_doctor_answer_when_the_credentials_path_is_a_fifo() {
    let url = "https://fifo.example/mcp";
    let (dir, _file) = home_with_fifo("cli-files-fifo-status", url);
    for args in [
        &["auth", "status", "srv"][..],
        &["doctor"],
        &["status", "srv"],
    ] {
        let out = finish_within(cli(&dir, args), Duration::from_secs(15)).unwrap_or_else(|e| {
            panic!(
                "`mcp {}` with a FIFO as credentials file: {e}",
                args.join(" ")
            )
        });
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(
            out.status.code().is_some(),
            "`mcp {}` died: {all}",
            args.join(" ")
        );
    }
}

/// A config its owner made private stays private when `add` rewrites it: the new file
/// takes the permissions of the one it replaces (a config's headers may hold what only its
/// owner should read), instead of the process's default.
#[test]
fn add_keeps_the_permissions_of_the_config_it_replaces() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::temp_dir("cli-files-mode");
    let config = dir.join("servers.json");
    std::fs::write(&config, "{\"servers\": {}}\n").unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = common::run_cli(
        &config,
        &["add", "s", "--url", "http://127.0.0.1:9/mcp"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the config's mode after add: {mode:o}");
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("127.0.0.1:9")
    );
}
