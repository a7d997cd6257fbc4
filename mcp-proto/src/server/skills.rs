//! Skills (the Skills extension, SEP-2640) served from memory: `skills/list`,
//! `skills/get`, the files through `resources/read`, and `resources/directory/read`.
//! Entries are computed from the files: the frontmatter parsed from the `SKILL.md`, and
//! each file's size and SHA-256.

use serde_json::{Map, Value, json};

use crate::jsonrpc::ErrorObject;
use crate::skills::{DIRECTORY_MIME_TYPE, frontmatter};

use super::Server;
use super::calls::invalid;

/// One skill a server serves: its skill path (`git-workflow`, `acme/billing/refunds`;
/// the last segment is the skill's name) and its files, `SKILL.md` first.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServedSkill {
    /// The skill path, under `skill://`.
    pub path: String,
    /// `(path relative to the skill's root, text)`; the first is `SKILL.md`.
    pub files: Vec<(String, String)>,
}

impl ServedSkill {
    /// A skill at `skill://<path>/SKILL.md` with this `SKILL.md` text.
    #[must_use]
    pub fn new(path: impl Into<String>, skill_md: impl Into<String>) -> Self {
        ServedSkill {
            path: path.into(),
            files: vec![("SKILL.md".to_owned(), skill_md.into())],
        }
    }

    /// Adds a supporting file at `relative` (`templates/invoice.md`).
    #[must_use]
    pub fn with_file(mut self, relative: impl Into<String>, text: impl Into<String>) -> Self {
        self.files.push((relative.into(), text.into()));
        self
    }

    fn root(&self) -> String {
        format!("skill://{}", self.path)
    }

    fn uri(&self, relative: &str) -> String {
        format!("{}/{relative}", self.root())
    }

    /// Whether `uri` is `self.uri(relative)`, without building it.
    fn names(&self, uri: &str, relative: &str) -> bool {
        let rest = uri
            .strip_prefix("skill://")
            .and_then(|r| r.strip_prefix(&*self.path));
        rest.and_then(|r| r.strip_prefix('/')) == Some(relative)
    }

    /// The entry, as `skills/list` and `skills/get` carry it. It hashes every file: the
    /// server computes it once ([`Server::new`]), not per request.
    pub(super) fn entry(&self) -> Value {
        let skill_md = self.files.first().map_or("", |(_, t)| t.as_str());
        let fm = frontmatter::parse(skill_md, usize::MAX).unwrap_or_default();
        let resources: Vec<Value> = self
            .files
            .iter()
            .map(|(rel, text)| {
                json!({
                    "uri": self.uri(rel),
                    "digest": digest(text.as_bytes()),
                    "size": text.len(),
                })
            })
            .collect();
        json!({"uri": self.uri("SKILL.md"), "frontmatter": fm, "resources": resources})
    }
}

fn digest(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::from("sha256:");
    for b in crate::auth::crypto::sha256(bytes) {
        let _ = write!(s, "{b:02x}");
    }
    s
}

impl Server {
    /// The file at `uri` of a served skill, as `resources/read` contents.
    pub(super) fn skill_file(&self, uri: &str) -> Option<Value> {
        self.config.skills.iter().find_map(|s| {
            s.files
                .iter()
                .find(|(rel, _)| s.names(uri, rel))
                .map(|(_, text)| {
                    json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
                })
        })
    }

    /// Whether `uri` is a file of a served skill (what [`Server::skill_file`] reads).
    pub(super) fn is_skill_file(&self, uri: &str) -> bool {
        (self.config.skills.iter()).any(|s| s.files.iter().any(|(rel, _)| s.names(uri, rel)))
    }

    /// `skills/list`, `skills/get` and `resources/directory/read`; `None` for other
    /// methods or when no skill is served.
    pub(super) fn skills_method(
        &self,
        method: &str,
        params: &Map<String, Value>,
    ) -> Option<Result<Value, ErrorObject>> {
        let skills = &self.config.skills;
        if skills.is_empty() {
            return None;
        }
        let uri = params.get("uri").and_then(Value::as_str);
        // Both listings are one page: no cursor is ever issued, so none is valid.
        if matches!(method, "skills/list" | "resources/directory/read")
            && !matches!(params.get("cursor"), None | Some(Value::Null))
        {
            return Some(Err(invalid("Invalid cursor")));
        }
        Some(match method {
            "skills/list" => Ok(json!({"skills": self.skill_entries})),
            "skills/get" => (skills.iter().zip(&self.skill_entries))
                .find(|(s, _)| uri.is_some_and(|uri| s.names(uri, "SKILL.md")))
                .map(|(_, entry)| json!({"skill": entry}))
                .ok_or_else(|| invalid("No skill is served at this URI")),
            "resources/directory/read" => uri
                .and_then(|uri| self.directory(uri))
                .ok_or_else(|| invalid("Not a directory resource")),
            _ => return None,
        })
    }

    /// The direct children of the directory `uri` (a skill root or a subdirectory).
    fn directory(&self, uri: &str) -> Option<Value> {
        let mut children: Vec<Value> = Vec::new();
        let mut dirs: Vec<String> = Vec::new();
        for skill in &self.config.skills {
            let root = skill.root();
            let Some(rest) = uri.strip_prefix(&root) else {
                continue;
            };
            let prefix = match rest {
                "" => String::new(),
                r if r.starts_with('/') && r.len() > 1 => format!("{}/", &r[1..]),
                _ => continue,
            };
            for (rel, _) in &skill.files {
                let Some(under) = rel.strip_prefix(&prefix) else {
                    continue;
                };
                match under.split_once('/') {
                    Some((dir, _)) => {
                        if !dirs.iter().any(|d| d == dir) {
                            dirs.push(dir.to_owned());
                        }
                    }
                    None => children.push(json!({
                        "uri": skill.uri(rel), "name": under, "mimeType": "text/markdown"
                    })),
                }
            }
        }
        if children.is_empty() && dirs.is_empty() {
            return None;
        }
        for dir in dirs {
            children.push(json!({
                "uri": format!("{uri}/{dir}"), "name": dir, "mimeType": DIRECTORY_MIME_TYPE
            }));
        }
        Some(json!({"resources": children}))
    }
}
