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

mod entry;
pub mod frontmatter;
mod load;

use serde_json::Value;

use crate::client::CallError;
#[cfg(doc)]
use crate::client::CallRequest;
use crate::model::ServerDetails;

pub use entry::{Listing, Skill, SkillFile, SkillFiles};
pub use frontmatter::FrontmatterError;
pub use load::{FileRead, LoadedSkill, SkillLoad, SkillTarget};

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

#[cfg(test)]
mod tests;
