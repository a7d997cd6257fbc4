//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640), client side.
//!
//! A server that declares the extension serves skills: directories of files, each file
//! a resource, with a `SKILL.md` at the root. `skills/list` and `skills/get` return
//! *entries* ([`Skill`]): the skill's frontmatter and a manifest of its files with the
//! size and SHA-256 digest of each. This module turns those answers into checked values
//! and decides every step of loading a skill; an adapter only runs the requests it is
//! handed.
//!
//! # Theory of operation
//!
//! * **Discover.** [`SkillsSupport::of`] reads the server's declaration. The session
//!   refuses `skills/*` and `resources/directory/read` locally
//!   ([`CallError::NotDeclared`]) when the server
//!   did not declare them; nothing is sent.
//! * **List.** [`CallRequest::list_skills`] pages through `skills/list` under the
//!   session's listing limits; [`Listing::from_output`] checks each entry against
//!   [`SkillLimits`] and keeps the entries that fail apart ([`Listing::rejected`]) so
//!   one bad entry does not hide the others and is never loaded. Listing fetches no file.
//! * **Load.** [`SkillLoad`] is a small machine: [`SkillLoad::poll_request`] hands out the
//!   next request (`skills/get` when only a URI is known, then `resources/read` of the
//!   `SKILL.md`), [`SkillLoad::handle_output`] takes its answer. The `SKILL.md` is checked
//!   for size, then digest, then its frontmatter is parsed ([`frontmatter`]) and compared
//!   field by field with the entry's; any difference is an error and the skill is not
//!   loaded. Supporting files are never fetched here.
//! * **Read a file.** A [`LoadedSkill`] holds the entry it was loaded from.
//!   [`LoadedSkill::read_file`] resolves a path against the skill's root and refuses a
//!   file the held entry does not list before anything is sent; [`FileRead`] then checks
//!   the answer's size and digest. Unverified bytes are never returned.
//!
//! The per-skill bounds are [`SkillLimits`], not fields of [`crate::Limits`]: the session
//! never sees a skill (to it a listing is items and a file a `resources/read`), and two of
//! the bounds are the extension's own figures. The listing as a whole stays under the
//! session's `max_list_*` limits.
//!
//! Skills whose `resources` is `"dynamic"` carry no digests; they are listed, but
//! [`SkillLoad`] refuses them unless [`SkillLoad::allow_dynamic`] was called (then
//! the `SKILL.md` is bounded by the total-size limit and its frontmatter still checked,
//! and files are read without a digest, under the skill's root).

pub mod frontmatter;

use std::fmt;

use serde_json::{Map, Value};

use crate::client::{CallError, CallOutput, CallRequest};
use crate::content::ResourceBody;
use crate::model::ServerDetails;

pub use frontmatter::FrontmatterError;

/// The extension identifier, the key under the server's `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The MIME type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// What a server declared of the extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillsSupport {
    /// `directoryRead: true`: the server answers `resources/directory/read`.
    pub directory_read: bool,
}

impl SkillsSupport {
    /// The declaration in `capabilities.extensions["io.modelcontextprotocol/skills"]`,
    /// or `None` when the server did not declare the extension (or declared something
    /// other than an object).
    #[must_use]
    pub fn of(server: &ServerDetails) -> Option<SkillsSupport> {
        Self::from_capabilities(&server.capabilities)
    }

    /// As [`SkillsSupport::of`], from the capabilities object.
    #[must_use]
    pub fn from_capabilities(capabilities: &Value) -> Option<SkillsSupport> {
        let settings = capabilities
            .get("extensions")?
            .get(EXTENSION)?
            .as_object()?;
        Some(SkillsSupport {
            directory_read: settings.get("directoryRead") == Some(&Value::Bool(true)),
        })
    }
}

/// Bounds on what a server may make the client hold or fetch for one skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillLimits {
    /// Most files in a skill's manifest. Default 512, the extension's own limit.
    pub max_files: usize,
    /// Largest sum of the files' sizes. Default 16 MiB, the extension's own limit.
    pub max_total_bytes: u64,
    /// Longest frontmatter block. Default 64 KiB.
    pub max_frontmatter_bytes: usize,
    /// Longest URI in an entry. Default 2048 bytes.
    pub max_uri_bytes: usize,
}

impl Default for SkillLimits {
    fn default() -> Self {
        SkillLimits {
            max_files: 512,
            max_total_bytes: 16 * 1024 * 1024,
            max_frontmatter_bytes: 64 * 1024,
            max_uri_bytes: 2048,
        }
    }
}

/// One file of a skill's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// The SHA-256 of its bytes.
    pub digest: [u8; 32],
    /// Its length in bytes.
    pub size: u64,
}

impl SkillFile {
    /// The digest as written on the wire, `sha256:` and 64 lowercase hex digits.
    #[must_use]
    pub fn digest_text(&self) -> String {
        digest_text(&self.digest)
    }
}

/// What a skill entry says of its files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkillFiles {
    /// Every file of the skill, `SKILL.md` included, each with its digest and size.
    Listed(Vec<SkillFile>),
    /// `"dynamic"`: generated content, no digests.
    Dynamic,
}

/// A skill entry, as `skills/list` and `skills/get` return it, checked.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Skill {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// `frontmatter.name`, which is also the last segment of the skill's path.
    pub name: String,
    /// `frontmatter.description`.
    pub description: String,
    /// The whole frontmatter, as the server rendered it.
    pub frontmatter: Map<String, Value>,
    /// The manifest.
    pub files: SkillFiles,
}

impl Skill {
    /// Reads one entry (a JSON object) and checks it: the URI names a `SKILL.md` whose
    /// directory is the skill's name, the frontmatter has a `name` (following the Agent
    /// Skills naming rules) and a `description`, and the manifest lists the `SKILL.md`,
    /// only files under the skill's root, each once, with well-formed digests, within
    /// `limits`.
    ///
    /// # Errors
    /// [`SkillError::InvalidEntry`] naming the entry and what is wrong.
    pub fn from_json(entry: &Value, limits: &SkillLimits) -> Result<Skill, SkillError> {
        let uri = entry
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("(no uri)", "no uri"))?;
        if uri.len() > limits.max_uri_bytes {
            return Err(invalid(&truncate(uri), "uri too long"));
        }
        let root = skill_root(uri).ok_or_else(|| invalid(uri, "uri does not name a SKILL.md"))?;
        let dir_name = root.rsplit('/').next().unwrap_or_default();
        let frontmatter = entry
            .get("frontmatter")
            .and_then(Value::as_object)
            .ok_or_else(|| invalid(uri, "no frontmatter object"))?;
        let name = frontmatter
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(uri, "frontmatter has no name"))?;
        let description = frontmatter
            .get("description")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
            .ok_or_else(|| invalid(uri, "frontmatter has no description"))?;
        if !valid_name(name) {
            return Err(invalid(uri, "name breaks the naming rules"));
        }
        if name != dir_name {
            return Err(invalid(
                uri,
                "name is not the last segment of the skill path",
            ));
        }
        let files = match entry.get("resources") {
            Some(Value::String(s)) if s == "dynamic" => SkillFiles::Dynamic,
            Some(Value::Array(items)) => SkillFiles::Listed(manifest(uri, root, items, limits)?),
            Some(_) => return Err(invalid(uri, "resources is neither a list nor \"dynamic\"")),
            None => return Err(invalid(uri, "no resources")),
        };
        Ok(Skill {
            uri: uri.to_owned(),
            name: name.to_owned(),
            description: description.to_owned(),
            frontmatter: frontmatter.clone(),
            files,
        })
    }

    /// The entry of a `skills/get` output for the skill at `uri`, checked as
    /// [`Skill::from_json`] does, and checked to be that skill.
    ///
    /// # Errors
    /// [`SkillError::InvalidEntry`] (no `skill`, or an invalid one),
    /// [`SkillError::WrongSkill`] for an entry of another URI.
    pub fn from_get_output(
        output: &CallOutput,
        uri: &str,
        limits: &SkillLimits,
    ) -> Result<Skill, SkillError> {
        let result = output
            .result_as::<Value>()
            .map_err(|e| invalid(uri, &e.to_string()))?;
        let entry = result
            .get("skill")
            .ok_or_else(|| invalid(uri, "skills/get answered without a skill"))?;
        let skill = Skill::from_json(entry, limits)?;
        if skill.uri != uri {
            return Err(SkillError::WrongSkill {
                asked: uri.to_owned(),
                answered: skill.uri,
            });
        }
        Ok(skill)
    }

    /// The skill's root directory: the URI without `/SKILL.md`.
    #[must_use]
    pub fn root(&self) -> &str {
        &self.uri[..self.uri.len() - "/SKILL.md".len()]
    }

    /// The manifest entry for `uri`, when the files are listed.
    #[must_use]
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.files {
            SkillFiles::Listed(files) => files.iter().find(|f| f.uri == uri),
            SkillFiles::Dynamic => None,
        }
    }

    /// The sum of the listed files' sizes (0 for a dynamic skill).
    #[must_use]
    pub fn total_size(&self) -> u64 {
        match &self.files {
            SkillFiles::Listed(files) => files.iter().map(|f| f.size).sum(),
            SkillFiles::Dynamic => 0,
        }
    }

    /// Resolves `path` against the skill: an absolute URI as it is, a relative path
    /// (`references/FORMS.md`) against the skill's root.
    ///
    /// # Errors
    /// [`SkillError::OutsideSkill`] for a path with `.` or `..` segments, an empty
    /// segment, or a URI outside the skill's root.
    pub fn resolve(&self, path: &str) -> Result<String, SkillError> {
        let outside = || SkillError::OutsideSkill {
            skill: self.uri.clone(),
            uri: truncate(path),
        };
        let uri = if path.contains("://") {
            path.to_owned()
        } else {
            format!("{}/{}", self.root(), path.trim_start_matches("./"))
        };
        let rel = uri
            .strip_prefix(self.root())
            .and_then(|r| r.strip_prefix('/'))
            .ok_or_else(outside)?;
        if rel
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
        {
            return Err(outside());
        }
        Ok(uri)
    }
}

/// The entries of a `skills/list`, checked.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Listing {
    /// The entries that passed every check, in the server's order.
    pub skills: Vec<Skill>,
    /// The entries that did not, each with why. They must not be loaded.
    pub rejected: Vec<SkillError>,
}

impl Listing {
    /// Reads the items of a `skills/list` output (every page).
    #[must_use]
    pub fn from_output(output: &CallOutput, limits: &SkillLimits) -> Listing {
        let mut listing = Listing::default();
        for raw in &output.items {
            let parsed = serde_json::from_str::<Value>(raw.get())
                .map_err(|e| invalid("(unreadable entry)", &e.to_string()))
                .and_then(|v| Skill::from_json(&v, limits));
            match parsed {
                Ok(skill) => listing.skills.push(skill),
                Err(e) => listing.rejected.push(e),
            }
        }
        listing
    }

    /// The skills sharing a name with another in the listing: these must be told apart
    /// by their URIs.
    #[must_use]
    pub fn name_collisions(&self) -> Vec<&Skill> {
        let mut counts: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for s in &self.skills {
            *counts.entry(s.name.as_str()).or_default() += 1;
        }
        self.skills
            .iter()
            .filter(|s| counts.get(s.name.as_str()).is_some_and(|n| *n > 1))
            .collect()
    }
}

/// Why a skill could not be listed, loaded, or one of its files read. Every variant
/// names the skill or file concerned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// An entry breaks the extension's rules or the client's [`SkillLimits`].
    #[error("invalid skill entry {uri}: {problem}")]
    InvalidEntry {
        /// The entry's URI (or a placeholder when it has none).
        uri: String,
        /// What is wrong.
        problem: String,
    },
    /// A read's length differs from the manifest's `size`.
    #[error("{uri}: {actual} bytes where the skill entry says {expected}")]
    SizeMismatch {
        /// The file.
        uri: String,
        /// The manifest's size.
        expected: u64,
        /// The bytes received (for a blob larger than expected: at least this many).
        actual: u64,
    },
    /// A read's SHA-256 differs from the manifest's digest.
    #[error("{uri}: content digest {actual} where the skill entry says {expected}")]
    DigestMismatch {
        /// The file.
        uri: String,
        /// The manifest's digest.
        expected: String,
        /// The digest of what was received.
        actual: String,
    },
    /// The `SKILL.md` frontmatter could not be read.
    #[error("{uri}: unreadable frontmatter: {source}")]
    Frontmatter {
        /// The `SKILL.md`.
        uri: String,
        /// What is wrong with it.
        #[source]
        source: FrontmatterError,
    },
    /// The `SKILL.md` frontmatter differs from the entry's in `field`.
    #[error("{uri}: frontmatter field {field:?} differs from the skill entry")]
    FrontmatterMismatch {
        /// The `SKILL.md`.
        uri: String,
        /// The first field that differs.
        field: String,
    },
    /// A file the held entry does not list (the skill changed, or the path is wrong);
    /// nothing was fetched.
    #[error("{uri} is not a file of skill {skill}")]
    NotListed {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The file asked for.
        uri: String,
    },
    /// A path outside the skill's root, or with `.`/`..`/empty segments; nothing was
    /// fetched.
    #[error("{uri} is outside skill {skill}")]
    OutsideSkill {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The path asked for.
        uri: String,
    },
    /// The entry's `resources` is `"dynamic"` and dynamic skills were not allowed.
    #[error("skill {uri} is dynamic (no digests) and dynamic skills are not allowed")]
    Dynamic {
        /// The skill's `SKILL.md` URI.
        uri: String,
    },
    /// `skills/get` answered for another skill than the one asked for.
    #[error("skills/get for {asked} answered with {answered}")]
    WrongSkill {
        /// The URI asked for.
        asked: String,
        /// The URI of the entry received.
        answered: String,
    },
    /// A `resources/read` answer has no usable contents for the file.
    #[error("{uri}: {problem}")]
    Content {
        /// The file.
        uri: String,
        /// What is missing or wrong.
        problem: String,
    },
    /// The request failed.
    #[error("{uri}: {source}")]
    Call {
        /// The skill or file.
        uri: String,
        /// Why (boxed: a `CallError` is large).
        #[source]
        source: Box<CallError>,
    },
}

fn invalid(uri: &str, problem: &str) -> SkillError {
    SkillError::InvalidEntry {
        uri: uri.to_owned(),
        problem: problem.to_owned(),
    }
}

fn truncate(s: &str) -> String {
    let mut end = s.len().min(256);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// The directory of a `…/<name>/SKILL.md` URI, when the URI has a scheme and a skill path.
fn skill_root(uri: &str) -> Option<&str> {
    let scheme_end = uri.find("://")?;
    let root = uri.strip_suffix("/SKILL.md")?;
    let path = root.get(scheme_end + 3..)?;
    if path.is_empty()
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return None;
    }
    Some(root)
}

/// The Agent Skills naming rules: 1 to 64 of `a-z`, `0-9` and `-`, no leading, trailing or
/// doubled hyphen.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn manifest(
    uri: &str,
    root: &str,
    items: &[Value],
    limits: &SkillLimits,
) -> Result<Vec<SkillFile>, SkillError> {
    if items.len() > limits.max_files {
        return Err(invalid(
            uri,
            &format!("{} files, more than {}", items.len(), limits.max_files),
        ));
    }
    let mut files: Vec<SkillFile> = Vec::with_capacity(items.len());
    let mut total: u64 = 0;
    for (i, item) in items.iter().enumerate() {
        let file_uri = item
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(uri, &format!("resources[{i}] has no uri")))?;
        if file_uri.len() > limits.max_uri_bytes {
            return Err(invalid(uri, &format!("resources[{i}].uri is too long")));
        }
        let inside = file_uri
            .strip_prefix(root)
            .and_then(|r| r.strip_prefix('/'))
            .is_some_and(|rel| {
                !rel.split('/')
                    .any(|s| s.is_empty() || s == "." || s == "..")
            });
        if !inside {
            return Err(invalid(
                uri,
                &format!("resources[{i}] is outside the skill"),
            ));
        }
        let digest = item
            .get("digest")
            .and_then(Value::as_str)
            .and_then(parse_digest)
            .ok_or_else(|| invalid(uri, &format!("resources[{i}] has no valid sha256 digest")))?;
        let size = item
            .get("size")
            .and_then(Value::as_u64)
            .ok_or_else(|| invalid(uri, &format!("resources[{i}] has no valid size")))?;
        total = total.saturating_add(size);
        if total > limits.max_total_bytes {
            return Err(invalid(
                uri,
                &format!("files total more than {} bytes", limits.max_total_bytes),
            ));
        }
        if files.iter().any(|f| f.uri == file_uri) {
            return Err(invalid(uri, &format!("resources[{i}] is listed twice")));
        }
        files.push(SkillFile {
            uri: file_uri.to_owned(),
            digest,
            size,
        });
    }
    if !files.iter().any(|f| f.uri == uri) {
        return Err(invalid(uri, "resources does not list the SKILL.md"));
    }
    Ok(files)
}

/// `sha256:` and 64 lowercase hex digits.
fn parse_digest(text: &str) -> Option<[u8; 32]> {
    let hex = text.strip_prefix("sha256:")?;
    if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn digest_text(digest: &[u8; 32]) -> String {
    use fmt::Write;
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The bytes of `uri` in a `resources/read` output, at most `max` of them (a blob is
/// decoded only that far).
fn read_bytes(output: &CallOutput, uri: &str, max: u64) -> Result<Vec<u8>, SkillError> {
    let content = |problem: &str| SkillError::Content {
        uri: uri.to_owned(),
        problem: problem.to_owned(),
    };
    let contents = output
        .resource_contents()
        .map_err(|e| content(&e.to_string()))?;
    let item = contents
        .iter()
        .filter_map(|c| c.as_ref().ok())
        .find(|c| c.uri == uri)
        .ok_or_else(|| content("the answer has no contents for this URI"))?;
    let bytes = match &item.body {
        ResourceBody::Text(t) => t.as_bytes().to_vec(),
        ResourceBody::Blob(b) => {
            let cap = usize::try_from(max).unwrap_or(usize::MAX);
            match b.decode(cap) {
                Ok(bytes) => bytes,
                Err(crate::content::DecodeError::TooLarge { len, .. }) => {
                    return Err(SkillError::SizeMismatch {
                        uri: uri.to_owned(),
                        expected: max,
                        actual: len as u64,
                    });
                }
                Err(e) => return Err(content(&e.to_string())),
            }
        }
    };
    Ok(bytes)
}

/// Checks `bytes` against a manifest entry: size first, then digest.
fn verify(file: &SkillFile, bytes: &[u8]) -> Result<(), SkillError> {
    if bytes.len() as u64 != file.size {
        return Err(SkillError::SizeMismatch {
            uri: file.uri.clone(),
            expected: file.size,
            actual: bytes.len() as u64,
        });
    }
    let actual = crate::auth::crypto::sha256(bytes);
    if actual != file.digest {
        return Err(SkillError::DigestMismatch {
            uri: file.uri.clone(),
            expected: file.digest_text(),
            actual: digest_text(&actual),
        });
    }
    Ok(())
}

/// What to load: an entry already held (from a listing), or only a URI (the entry is
/// fetched with `skills/get` first).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SkillTarget {
    /// An entry from `skills/list` or `skills/get`.
    Entry(Skill),
    /// The URI of a `SKILL.md`.
    Uri(String),
}

impl From<Skill> for SkillTarget {
    fn from(skill: Skill) -> Self {
        SkillTarget::Entry(skill)
    }
}

impl From<&Skill> for SkillTarget {
    fn from(skill: &Skill) -> Self {
        SkillTarget::Entry(skill.clone())
    }
}

impl From<&str> for SkillTarget {
    fn from(uri: &str) -> Self {
        SkillTarget::Uri(uri.to_owned())
    }
}

impl From<String> for SkillTarget {
    fn from(uri: String) -> Self {
        SkillTarget::Uri(uri)
    }
}

#[derive(Debug)]
enum LoadStep {
    /// Next: `skills/get`.
    Entry(String),
    /// `skills/get` sent.
    AwaitEntry(String),
    /// Next: `resources/read` of the `SKILL.md`.
    SkillMd(Skill),
    /// `resources/read` sent.
    AwaitSkillMd(Skill),
    Done,
}

/// Loads one skill: a machine that hands out requests and takes their answers.
///
/// ```
/// use mcp_proto::skills::{SkillLoad, SkillError};
///
/// let mut load = SkillLoad::new("skill://pdf/SKILL.md");
/// let request = load.poll_request().unwrap();
/// assert_eq!(request.method(), "skills/get");
/// assert!(load.poll_request().is_none()); // nothing more until the answer
/// ```
///
/// Run it as: take [`SkillLoad::poll_request`], make the call, give its output to
/// [`SkillLoad::handle_output`] (or its failure to [`SkillLoad::handle_error`]), until
/// `handle_output` returns the [`LoadedSkill`].
#[derive(Debug)]
pub struct SkillLoad {
    step: LoadStep,
    limits: SkillLimits,
    allow_dynamic: bool,
}

impl SkillLoad {
    /// A load of `target` under the default [`SkillLimits`].
    #[must_use]
    pub fn new(target: impl Into<SkillTarget>) -> SkillLoad {
        let step = match target.into() {
            SkillTarget::Entry(skill) => LoadStep::SkillMd(skill),
            SkillTarget::Uri(uri) => LoadStep::Entry(uri),
        };
        SkillLoad {
            step,
            limits: SkillLimits::default(),
            allow_dynamic: false,
        }
    }

    /// Other limits.
    #[must_use]
    pub fn limits(mut self, limits: SkillLimits) -> SkillLoad {
        self.limits = limits;
        self
    }

    /// Load skills whose `resources` is `"dynamic"` (no digests) too.
    #[must_use]
    pub fn allow_dynamic(mut self) -> SkillLoad {
        self.allow_dynamic = true;
        self
    }

    /// The next request to make, once; `None` while an answer is awaited or once done.
    #[must_use]
    pub fn poll_request(&mut self) -> Option<CallRequest> {
        match std::mem::replace(&mut self.step, LoadStep::Done) {
            LoadStep::Entry(uri) => {
                let request = CallRequest::skill_entry(&uri);
                self.step = LoadStep::AwaitEntry(uri);
                Some(request)
            }
            LoadStep::SkillMd(skill) => {
                if skill.files == SkillFiles::Dynamic && !self.allow_dynamic {
                    // Refused when the answer would have come: handle_output reports it.
                    self.step = LoadStep::SkillMd(skill);
                    return None;
                }
                let request = CallRequest::read_resource(&skill.uri);
                self.step = LoadStep::AwaitSkillMd(skill);
                Some(request)
            }
            other => {
                self.step = other;
                None
            }
        }
    }

    /// Whether a request is out and its answer awaited.
    #[must_use]
    pub fn is_awaiting(&self) -> bool {
        matches!(
            self.step,
            LoadStep::AwaitEntry(_) | LoadStep::AwaitSkillMd(_)
        )
    }

    /// Checks the load can go on: `Err` for a dynamic skill that is not allowed. Call it
    /// when [`SkillLoad::poll_request`] returns `None` with nothing awaited.
    ///
    /// # Errors
    /// [`SkillError::Dynamic`].
    pub fn check(&self) -> Result<(), SkillError> {
        match &self.step {
            LoadStep::SkillMd(skill) if skill.files == SkillFiles::Dynamic => {
                Err(SkillError::Dynamic {
                    uri: skill.uri.clone(),
                })
            }
            _ => Ok(()),
        }
    }

    /// The answer to the request last handed out: `Ok(None)` when another request
    /// follows, `Ok(Some(skill))` when the skill is loaded.
    ///
    /// # Errors
    /// A [`SkillError`] naming what failed; the load is then over.
    pub fn handle_output(
        &mut self,
        output: &CallOutput,
    ) -> Result<Option<LoadedSkill>, SkillError> {
        match std::mem::replace(&mut self.step, LoadStep::Done) {
            LoadStep::AwaitEntry(uri) => {
                let skill = Skill::from_get_output(output, &uri, &self.limits)?;
                if skill.files == SkillFiles::Dynamic && !self.allow_dynamic {
                    return Err(SkillError::Dynamic { uri: skill.uri });
                }
                self.step = LoadStep::SkillMd(skill);
                Ok(None)
            }
            LoadStep::AwaitSkillMd(skill) => {
                let loaded = LoadedSkill::from_skill_md(skill, output, &self.limits)?;
                Ok(Some(loaded))
            }
            other => {
                self.step = other;
                Err(SkillError::Content {
                    uri: String::new(),
                    problem: "an answer came with no request out".into(),
                })
            }
        }
    }

    /// The request last handed out failed: the load is over, with this error.
    #[must_use]
    pub fn handle_error(&mut self, error: CallError) -> SkillError {
        let uri = match std::mem::replace(&mut self.step, LoadStep::Done) {
            LoadStep::AwaitEntry(uri) | LoadStep::Entry(uri) => uri,
            LoadStep::AwaitSkillMd(skill) | LoadStep::SkillMd(skill) => skill.uri,
            LoadStep::Done => String::new(),
        };
        SkillError::Call {
            uri,
            source: Box::new(error),
        }
    }
}

/// A skill whose `SKILL.md` was read and verified; it holds the entry it was loaded from,
/// against which every later read is checked.
#[derive(Debug, Clone)]
pub struct LoadedSkill {
    entry: Skill,
    text: String,
    body_offset: usize,
    limits: SkillLimits,
}

impl LoadedSkill {
    fn from_skill_md(
        entry: Skill,
        output: &CallOutput,
        limits: &SkillLimits,
    ) -> Result<LoadedSkill, SkillError> {
        let uri = entry.uri.clone();
        let bytes = match entry.file(&uri) {
            Some(file) => {
                let bytes = read_bytes(output, &uri, file.size)?;
                verify(file, &bytes)?;
                bytes
            }
            None => {
                let bytes = read_bytes(output, &uri, limits.max_total_bytes)?;
                if bytes.len() as u64 > limits.max_total_bytes {
                    return Err(SkillError::SizeMismatch {
                        uri,
                        expected: limits.max_total_bytes,
                        actual: bytes.len() as u64,
                    });
                }
                bytes
            }
        };
        let text = String::from_utf8(bytes).map_err(|_| SkillError::Content {
            uri: uri.clone(),
            problem: "SKILL.md is not UTF-8".into(),
        })?;
        let frontmatter_error = |source| SkillError::Frontmatter {
            uri: uri.clone(),
            source,
        };
        let parsed =
            frontmatter::parse(&text, limits.max_frontmatter_bytes).map_err(frontmatter_error)?;
        if let Some(field) = frontmatter::first_difference(&entry.frontmatter, &parsed) {
            return Err(SkillError::FrontmatterMismatch { uri, field });
        }
        let (_, body) =
            frontmatter::split(&text, limits.max_frontmatter_bytes).map_err(frontmatter_error)?;
        let body_offset = text.len() - body.len();
        Ok(LoadedSkill {
            entry,
            text,
            body_offset,
            limits: *limits,
        })
    }

    /// The entry the skill was loaded from.
    #[must_use]
    pub fn entry(&self) -> &Skill {
        &self.entry
    }

    /// The whole `SKILL.md`, verified.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The `SKILL.md` after its frontmatter.
    #[must_use]
    pub fn body(&self) -> &str {
        &self.text[self.body_offset..]
    }

    /// The files of the held entry under `directory` (a path relative to the skill's root,
    /// `""` for the root), as direct children: files, and subdirectories with a trailing
    /// `/`. Answered from the entry alone; `None` for a dynamic skill.
    #[must_use]
    pub fn directory(&self, directory: &str) -> Option<Vec<String>> {
        let SkillFiles::Listed(files) = &self.entry.files else {
            return None;
        };
        let prefix = match directory.trim_matches('/') {
            "" => format!("{}/", self.entry.root()),
            d => format!("{}/{d}/", self.entry.root()),
        };
        let mut out: Vec<String> = Vec::new();
        for file in files {
            if let Some(rest) = file.uri.strip_prefix(&prefix) {
                let child = match rest.split_once('/') {
                    Some((dir, _)) => format!("{dir}/"),
                    None => rest.to_owned(),
                };
                if !out.contains(&child) {
                    out.push(child);
                }
            }
        }
        Some(out)
    }

    /// A read of one of the skill's files: `path` relative to the skill's root or a full
    /// URI. Refused before anything is sent when the file is outside the skill or not in
    /// the held entry.
    ///
    /// # Errors
    /// [`SkillError::OutsideSkill`], [`SkillError::NotListed`].
    pub fn read_file(&self, path: &str) -> Result<FileRead, SkillError> {
        let uri = self.entry.resolve(path)?;
        let expected = match &self.entry.files {
            SkillFiles::Listed(_) => {
                Some(
                    self.entry
                        .file(&uri)
                        .cloned()
                        .ok_or_else(|| SkillError::NotListed {
                            skill: self.entry.uri.clone(),
                            uri: uri.clone(),
                        })?,
                )
            }
            SkillFiles::Dynamic => None,
        };
        Ok(FileRead {
            uri,
            expected,
            max_bytes: self.limits.max_total_bytes,
        })
    }
}

/// One verified read of a skill file: make [`FileRead::request`], then give its output
/// to [`FileRead::handle_output`].
#[derive(Debug, Clone)]
#[must_use = "a FileRead does nothing until its request is made and its answer handled"]
pub struct FileRead {
    uri: String,
    expected: Option<SkillFile>,
    max_bytes: u64,
}

impl FileRead {
    /// The file's URI.
    #[must_use]
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The `resources/read` to make.
    #[must_use]
    pub fn request(&self) -> CallRequest {
        CallRequest::read_resource(&self.uri)
    }

    /// The verified bytes of the answer.
    ///
    /// # Errors
    /// [`SkillError::SizeMismatch`], [`SkillError::DigestMismatch`],
    /// [`SkillError::Content`].
    pub fn handle_output(&self, output: &CallOutput) -> Result<Vec<u8>, SkillError> {
        match &self.expected {
            Some(file) => {
                let bytes = read_bytes(output, &self.uri, file.size)?;
                verify(file, &bytes)?;
                Ok(bytes)
            }
            None => {
                let bytes = read_bytes(output, &self.uri, self.max_bytes)?;
                if bytes.len() as u64 > self.max_bytes {
                    return Err(SkillError::SizeMismatch {
                        uri: self.uri.clone(),
                        expected: self.max_bytes,
                        actual: bytes.len() as u64,
                    });
                }
                Ok(bytes)
            }
        }
    }
}

#[cfg(test)]
mod tests;
