//! Keeping [`Credentials`] between runs: the [`CredentialStore`] trait, and
//! [`FileCredentialStore`], one private JSON file per server binding.
//!
//! The authorization machine never reads or writes storage: it starts from the
//! credentials in [`AuthConfig::credentials`](mcp_proto::auth::AuthConfig::credentials)
//! and reports new ones ([`Options::on_credentials`](crate::Options::on_credentials)).
//! A store is what an application puts at both ends:
//!
//! ```no_run
//! use mcp_io::credentials::{CredentialStore, FileCredentialStore};
//!
//! let store = FileCredentialStore::open_default()?;
//! let saved = store.load("https://mcp.example.com/mcp")?;
//! // auth.credentials = saved; options.on_credentials(move |c| { let _ = store.save(c); })
//! # let _ = saved;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The files hold tokens and client secrets: they are created with mode `0600` from the
//! start (never readable by others, not even for a moment), in a directory of mode
//! `0700`, and replaced atomically (a temporary file in the same directory, then a
//! rename), so a crash leaves the old file or the new one, never half of one.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_proto::auth::Credentials;
use mcp_proto::auth::crypto::sha256;
use mcp_proto::http::EndpointUrl;

/// Where credentials are kept, per MCP server URL.
pub trait CredentialStore {
    /// The credentials saved for the server at `server_url`, if any.
    ///
    /// # Errors
    ///
    /// When the store cannot be read, or what it holds is not credentials.
    fn load(&self, server_url: &str) -> io::Result<Option<Credentials>>;

    /// Saves `credentials`, replacing those of the same server
    /// ([`Credentials::server_url`]).
    ///
    /// # Errors
    ///
    /// When the store cannot be written.
    fn save(&self, credentials: &Credentials) -> io::Result<()>;

    /// Forgets the credentials of the server at `server_url`; whether there were any.
    ///
    /// # Errors
    ///
    /// When the store cannot be changed.
    fn delete(&self, server_url: &str) -> io::Result<bool>;
}

/// A [`CredentialStore`] of one JSON file per server (the serialized [`Credentials`]:
/// server URL, resource, issuer, client registration, tokens, requested and granted
/// scopes), named by the hex SHA-256 of the server URL, with mode `0600` in a directory
/// of mode `0700`.
#[derive(Debug, Clone)]
pub struct FileCredentialStore {
    dir: PathBuf,
}

/// Distinguishes the temporary files of one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl FileCredentialStore {
    /// A store in `dir` (created when something is first saved).
    #[must_use]
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FileCredentialStore { dir: dir.into() }
    }

    /// The default directory: `$XDG_STATE_HOME/mcp/credentials`, else
    /// `~/.local/state/mcp/credentials`.
    ///
    /// # Errors
    ///
    /// When neither `XDG_STATE_HOME` nor `HOME` is set.
    pub fn default_dir() -> io::Result<PathBuf> {
        let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        if let Some(state) = non_empty("XDG_STATE_HOME") {
            return Ok(PathBuf::from(state).join("mcp").join("credentials"));
        }
        if let Some(home) = non_empty("HOME") {
            return Ok(PathBuf::from(home)
                .join(".local")
                .join("state")
                .join("mcp")
                .join("credentials"));
        }
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            "no place for credentials: neither XDG_STATE_HOME nor HOME is set",
        ))
    }

    /// A store in [`default_dir`](Self::default_dir).
    ///
    /// # Errors
    ///
    /// As [`default_dir`](Self::default_dir).
    pub fn open_default() -> io::Result<Self> {
        Self::default_dir().map(Self::new)
    }

    /// The directory of the files.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the server at `server_url`: the hex SHA-256 of the URL (as
    /// [`EndpointUrl`] normalizes it, when it parses) and `.json`.
    #[must_use]
    pub fn path_for(&self, server_url: &str) -> PathBuf {
        let key = binding_key(server_url);
        let hash = sha256(key.as_bytes());
        let mut name = String::with_capacity(69);
        for b in hash {
            name.push_str(&format!("{b:02x}"));
        }
        name.push_str(".json");
        self.dir.join(name)
    }

    /// Creates the directory (mode `0700`) if it is missing, and makes it `0700` if it
    /// is not.
    fn ensure_dir(&self) -> io::Result<()> {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(&self.dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&self.dir)?.permissions().mode();
            if mode & 0o077 != 0 {
                fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o700))?;
            }
        }
        Ok(())
    }
}

/// The URL a binding is keyed by: normalized when it parses (loopback `http` or any
/// `https`), else as given.
fn binding_key(server_url: &str) -> String {
    EndpointUrl::parse(server_url, true)
        .map_or_else(|_| server_url.to_owned(), |u| u.as_str().to_owned())
}

/// A new file for writing, readable by its owner only from the start.
fn create_private(path: &Path) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

impl CredentialStore for FileCredentialStore {
    fn load(&self, server_url: &str) -> io::Result<Option<Credentials>> {
        let path = self.path_for(server_url);
        // Only a regular file is read: a FIFO (or a device) there would block the
        // reader for good, and `logout` would never get to delete it.
        match fs::metadata(&path) {
            Ok(m) if !m.is_file() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: not a regular file", path.display()),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            _ => {}
        }
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let creds: Credentials = serde_json::from_slice(&bytes).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a credentials file: {e}", path.display()),
            )
        })?;
        // A file that names another server (copied by hand) is not this binding.
        if binding_key(&creds.server_url) != binding_key(server_url) {
            return Ok(None);
        }
        Ok(Some(creds))
    }

    fn save(&self, credentials: &Credentials) -> io::Result<()> {
        self.ensure_dir()?;
        let path = self.path_for(&credentials.server_url);
        let mut text = serde_json::to_vec_pretty(credentials)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        text.push(b'\n');
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let file_name = path.file_name().map_or_else(
            || "credentials".into(),
            |n| n.to_string_lossy().into_owned(),
        );
        let tmp = self
            .dir
            .join(format!(".{file_name}.tmp.{}.{n}", std::process::id()));
        let written = create_private(&tmp).and_then(|mut f| {
            f.write_all(&text)?;
            f.sync_all()
        });
        let renamed = written.and_then(|()| fs::rename(&tmp, &path));
        if renamed.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        renamed
    }

    fn delete(&self, server_url: &str) -> io::Result<bool> {
        match fs::remove_file(self.path_for(server_url)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(url: &str) -> Credentials {
        serde_json::from_value(serde_json::json!({
            "server_url": url,
            "resource": url,
            "issuer": "http://127.0.0.1:9/",
            "client": {"issuer": "http://127.0.0.1:9/", "client_id": "c1",
                       "client_secret": "s3cr3t", "auth_method": "client_secret_post",
                       "source": "dcr"},
            "access_token": "at",
            "refresh_token": "rt",
            "expires_at": 10,
            "requested_scope": "read",
            "granted_scope": "read"
        }))
        .unwrap()
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcp-io-credentials-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn saves_loads_and_deletes_one_file_per_server() {
        let dir = temp_dir("roundtrip");
        let store = FileCredentialStore::new(dir.join("credentials"));
        let url = "http://127.0.0.1:8080/mcp";
        assert_eq!(store.load(url).unwrap(), None);
        store.save(&creds(url)).unwrap();
        store.save(&creds("https://other.example/mcp")).unwrap();
        assert_eq!(store.load(url).unwrap(), Some(creds(url)));
        let path = store.path_for(url);
        let name = path.file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), 64 + 5);
        assert!(name.ends_with(".json"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(store.dir()), 0o700);
        }
        // Replaced, not appended; no temporary file left behind.
        let mut newer = creds(url);
        newer.access_token = Some("at2".into());
        store.save(&newer).unwrap();
        assert_eq!(store.load(url).unwrap(), Some(newer));
        assert_eq!(fs::read_dir(store.dir()).unwrap().count(), 2);
        assert!(store.delete(url).unwrap());
        assert!(!store.delete(url).unwrap());
        assert_eq!(store.load(url).unwrap(), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_for_another_server_is_not_loaded() {
        let dir = temp_dir("other");
        let store = FileCredentialStore::new(&dir);
        let url = "https://a.example/mcp";
        store.save(&creds(url)).unwrap();
        fs::copy(store.path_for(url), store.path_for("https://b.example/mcp")).unwrap();
        assert_eq!(store.load("https://b.example/mcp").unwrap(), None);
        fs::write(store.path_for(url), b"{").unwrap();
        assert!(store.load(url).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
