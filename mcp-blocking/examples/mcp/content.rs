//! Content blocks for people: text in full, binary blocks summarised (or written to
//! `--save-content DIR`), resource links and embedded resources named.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use mcp_blocking::mcp_proto::content::{Base64, Content, ResourceBody, ResourceContents};

use crate::terminal::one_line;

/// Largest block written to a file, decoded.
const MAX_SAVED_BYTES: usize = 256 * 1024 * 1024;

/// Writes binary blocks into one directory, each under a fresh safe name.
pub struct Saver {
    dir: Option<PathBuf>,
    next: u32,
    /// Files written, for the JSON format's report on stderr.
    pub saved: Vec<PathBuf>,
    /// Why each block that was to be written could not be (data not base64, too large,
    /// a file that could not be made): the command then exits 1.
    pub failed: Vec<String>,
}

impl Saver {
    /// Saves into `dir` when set; otherwise only summarises.
    pub fn new(dir: Option<&Path>) -> Self {
        Saver {
            dir: dir.map(Path::to_path_buf),
            next: 1,
            saved: Vec::new(),
            failed: Vec::new(),
        }
    }

    /// Writes `data` as a new file named after `hint` (a URI or nothing) and `mime`.
    /// `None` when not saving; `Err` with a reason for people.
    fn save(
        &mut self,
        data: &Base64<'_>,
        mime: &str,
        hint: Option<&str>,
    ) -> Option<Result<PathBuf, String>> {
        let dir = self.dir.as_ref()?;
        let n = self.next;
        self.next += 1;
        let written = write_new(dir, &file_stem(hint, n), extension(mime), data);
        match &written {
            Ok(path) => self.saved.push(path.clone()),
            Err(why) => self.failed.push(why.clone()),
        }
        Some(written)
    }
}

/// The lines that show `block`. What a bracketed line names (a URI, a name, a media
/// type) is one line: its line breaks are made visible, so that it cannot forge another
/// line.
pub fn render(block: &Content<'_>, saver: &mut Saver) -> String {
    match block {
        Content::Text(t) => t.text.to_string(),
        Content::Image(_) | Content::Audio(_) => {
            let Some((summary, data)) = block.media() else {
                return String::new();
            };
            let saved = saver.save(data, &summary.mime_type, None);
            with_saved(
                format!(
                    "[{} {}, {} bytes",
                    summary.kind,
                    one_line(&summary.mime_type),
                    summary.bytes
                ),
                saved,
            )
        }
        Content::ResourceLink(l) => {
            let mut extra = Vec::new();
            if l.name != l.uri {
                extra.push(one_line(&l.name).into_owned());
            }
            if let Some(m) = &l.mime_type {
                extra.push(one_line(m).into_owned());
            }
            let uri = one_line(&l.uri);
            if extra.is_empty() {
                format!("[resource link {uri}]")
            } else {
                format!("[resource link {uri} ({})]", extra.join(", "))
            }
        }
        Content::Resource(r) => contents(&r.resource, saver),
        Content::Unknown(raw) | Content::Malformed(raw) => raw.get().to_owned(),
        _ => block.raw().get().to_owned(),
    }
}

/// One item of `resources/read` (or an embedded resource).
pub fn contents(c: &ResourceContents<'_>, saver: &mut Saver) -> String {
    match &c.body {
        ResourceBody::Text(t) => t.to_string(),
        ResourceBody::Blob(b) => {
            let mime = c.mime_type.as_deref().unwrap_or("application/octet-stream");
            let saved = saver.save(b, mime, Some(c.uri.as_ref()));
            let (uri, shown_mime) = (one_line(&c.uri), one_line(mime));
            with_saved(
                format!("[blob {uri} {shown_mime}, {} bytes", b.decoded_len()),
                saved,
            )
        }
        _ => String::new(),
    }
}

fn with_saved(mut head: String, saved: Option<Result<PathBuf, String>>) -> String {
    match saved {
        None => {}
        Some(Ok(path)) => head.push_str(&format!(", saved to {}", path.display())),
        Some(Err(e)) => head.push_str(&format!(", not saved: {e}")),
    }
    head.push(']');
    head
}

/// A file name stem with nothing but `[A-Za-z0-9._-]`, never starting with a dot: the
/// last path segment of `hint` when it has a usable one, else `content-<n>`.
pub fn file_stem(hint: Option<&str>, n: u32) -> String {
    let segment = hint
        .map(|h| h.split(['?', '#']).next().unwrap_or(""))
        .and_then(|h| h.rsplit('/').find(|s| !s.is_empty()))
        .unwrap_or("");
    let mut stem: String = segment
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    // No hidden files, no `.`/`..`, no extension doubled up by the one added.
    stem = stem.trim_matches('.').to_owned();
    if let Some((base, ext)) = stem.rsplit_once('.')
        && !base.is_empty()
        && ext.len() <= 5
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
    {
        stem = base.trim_matches('.').to_owned();
    }
    if stem.is_empty() || stem.chars().all(|c| c == '_') {
        format!("content-{n}")
    } else {
        stem
    }
}

/// The file extension for a MIME type (`bin` when unknown).
pub fn extension(mime: &str) -> &'static str {
    let essence = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "application/pdf" => "pdf",
        "application/json" => "json",
        "text/plain" => "txt",
        _ => "bin",
    }
}

/// Decodes `data` into a file that did not exist in `dir`: `stem.ext`, else
/// `stem-1.ext`, … Never follows or replaces an existing entry (`create_new`).
fn write_new(dir: &Path, stem: &str, ext: &str, data: &Base64<'_>) -> Result<PathBuf, String> {
    let bytes = data.decode(MAX_SAVED_BYTES).map_err(|e| e.to_string())?;
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for i in 0..1000u32 {
        let name = if i == 0 {
            format!("{stem}.{ext}")
        } else {
            format!("{stem}-{i}.{ext}")
        };
        let path = dir.join(&name);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                f.write_all(&bytes)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Err(format!(
        "no free name for {stem}.{ext} in {}",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside_the_directory() {
        assert_eq!(file_stem(Some("file:///a/b/photo.png"), 1), "photo");
        assert_eq!(file_stem(Some("x://../../etc/passwd"), 2), "passwd");
        assert_eq!(file_stem(Some("x://host/.."), 3), "content-3");
        assert_eq!(file_stem(Some("x://host/.hidden"), 4), "hidden");
        assert_eq!(file_stem(Some("x://h/a\\..\\b c"), 5), "a_.._b_c");
        assert_eq!(file_stem(None, 6), "content-6");
        assert_eq!(file_stem(Some("x://h/%2e%2e"), 7), "_2e_2e");
        for stem in ["a", "content-1", "passwd", "_2e_2e"] {
            assert!(!stem.contains('/') && !stem.starts_with('.'));
        }
        assert_eq!(extension("image/PNG; q=1"), "png");
        assert_eq!(extension("application/x-evil/../"), "bin");
    }
}
