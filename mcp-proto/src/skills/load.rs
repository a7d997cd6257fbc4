//! Loading a skill and reading its files, each verified against the entry.

use super::entry::digest_text;
use super::{Skill, SkillError, SkillFile, SkillFiles, SkillLimits, frontmatter};
use crate::client::{CallError, CallOutput, CallRequest};
use crate::content::ResourceBody;

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
