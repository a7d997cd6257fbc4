//! Skill entries (`skills/list`, `skills/get`) read and checked.

use std::fmt;

use serde_json::{Map, Value};

use super::{SkillError, SkillLimits, invalid, truncate};
use crate::client::CallOutput;

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
        let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for s in &self.skills {
            *counts.entry(s.name.as_str()).or_default() += 1;
        }
        self.skills
            .iter()
            .filter(|s| counts.get(s.name.as_str()).is_some_and(|n| *n > 1))
            .collect()
    }
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

pub(super) fn digest_text(digest: &[u8; 32]) -> String {
    use fmt::Write;
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}
