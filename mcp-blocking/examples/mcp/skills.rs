//! `mcp skills`: the Skills extension (SEP-2640). Listing shows the entries and fetches
//! no file; naming a skill loads it (its `SKILL.md` checked for size, digest and
//! frontmatter against the entry), `--file` reads one more file of it, checked the
//! same way, and `--dir` lists a directory of it: with `resources/directory/read` when the
//! server offers it (children the held entry does not list are marked, never read), from
//! the entry otherwise. Everything the server wrote is cleaned of control sequences on
//! output.

use mcp_blocking::Client;
use mcp_blocking::mcp_proto::skills::{
    DIRECTORY_MIME_TYPE, LoadedSkill, Skill, SkillFiles, SkillTarget, SkillsSupport,
};
use serde_json::{Value, json};

use crate::args::{Format, Global, InputMode};
use crate::output::{Failure, print_json, short, table};
use crate::session;
use crate::terminal::{clean, one_line};

/// What to do once a skill is loaded.
#[derive(Clone, Copy)]
pub enum Then<'a> {
    /// Print its `SKILL.md`.
    Show,
    /// Print this file of it.
    File(&'a str),
    /// List this directory of it.
    Dir(&'a str),
}

impl<'a> Then<'a> {
    /// From `--file` and `--dir` (at most one is set).
    pub fn of(file: Option<&'a str>, dir: Option<&'a str>) -> Self {
        match (file, dir) {
            (Some(f), _) => Then::File(f),
            (None, Some(d)) => Then::Dir(d),
            (None, None) => Then::Show,
        }
    }
}

/// Runs `mcp skills <server> [<skill> [--file PATH | --dir PATH]]`.
pub fn run(
    global: &Global,
    server: &str,
    skill: Option<&str>,
    then: Then<'_>,
) -> Result<u8, Failure> {
    let mut client = session::connect(global, server, Some(InputMode::None))?;
    let code = match skill {
        None => list(global, server, &mut client),
        Some(wanted) => load(global, server, &mut client, wanted, then),
    };
    client.close();
    code
}

fn list(global: &Global, server: &str, client: &mut Client) -> Result<u8, Failure> {
    let listing = client.list_skills()?;
    match global.format {
        Format::Json => {
            let mut doc = header(server, client);
            doc["skills"] = listing.skills.iter().map(entry_json).collect();
            doc["rejected"] = listing
                .rejected
                .iter()
                .map(|e| Value::String(e.to_string()))
                .collect();
            print_json(&doc);
        }
        Format::Text => {
            if listing.skills.is_empty() {
                println!("{server} lists no skills");
            }
            let rows: Vec<Vec<String>> = listing
                .skills
                .iter()
                .map(|s| {
                    let files = match &s.files {
                        SkillFiles::Listed(f) => format!("{} files", f.len()),
                        _ => "dynamic".to_owned(),
                    };
                    vec![
                        s.name.clone(),
                        s.uri.clone(),
                        files,
                        short(&s.description, 80),
                    ]
                })
                .collect();
            table(&rows);
            for clash in listing.name_collisions() {
                eprintln!(
                    "note: the name {} is not unique; use the URI {}",
                    one_line(&clash.name),
                    one_line(&clash.uri)
                );
            }
            for rejected in &listing.rejected {
                eprintln!("rejected: {}", one_line(&rejected.to_string()));
            }
        }
    }
    Ok(0)
}

fn load(
    global: &Global,
    server: &str,
    client: &mut Client,
    wanted: &str,
    then: Then<'_>,
) -> Result<u8, Failure> {
    let target: SkillTarget = if wanted.contains("://") {
        wanted.into()
    } else {
        let listing = client.list_skills()?;
        let found: Vec<&Skill> = listing.skills.iter().filter(|s| s.name == wanted).collect();
        match found.as_slice() {
            [one] => (*one).into(),
            [] => {
                return Err(Failure::Usage(format!(
                    "{server} lists no skill named {wanted:?} (a SKILL.md URI loads an unlisted one)"
                )));
            }
            many => {
                let uris: Vec<String> =
                    many.iter().map(|s| one_line(&s.uri).into_owned()).collect();
                return Err(Failure::Usage(format!(
                    "{} skills are named {wanted:?}; name one by its URI: {}",
                    many.len(),
                    uris.join(", ")
                )));
            }
        }
    };
    let loaded = client.load_skill(target)?;
    let file = match then {
        Then::Dir(dir) => return directory(global, server, client, &loaded, dir),
        Then::File(path) => Some(path),
        Then::Show => None,
    };
    let content = match file {
        Some(path) => Some(client.read_skill_file(&loaded, path)?),
        None => None,
    };
    match global.format {
        Format::Json => {
            let mut doc = header(server, client);
            doc["skill"] = entry_json(loaded.entry());
            doc["text"] = Value::String(loaded.text().to_owned());
            if let (Some(path), Some(bytes)) = (file, &content) {
                doc["file"] = file_json(&loaded, path, bytes);
            }
            print_json(&doc);
        }
        Format::Text => {
            let text = match &content {
                Some(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                None => loaded.text().to_owned(),
            };
            let end = if text.ends_with('\n') { "" } else { "\n" };
            print!("{}{end}", clean(&text));
            eprintln!(
                "(skill {} from {server}, verified against its entry)",
                one_line(&loaded.entry().uri)
            );
        }
    }
    Ok(0)
}

/// `--dir`: the children of a directory of the loaded skill, from the server when it
/// offers directory reads (each marked with whether the held entry lists it), from the
/// entry otherwise.
fn directory(
    global: &Global,
    server: &str,
    client: &mut Client,
    loaded: &LoadedSkill,
    dir: &str,
) -> Result<u8, Failure> {
    let entry = loaded.entry();
    let relative = match dir.trim_matches('/') {
        "." => "",
        d => d.strip_prefix("./").unwrap_or(d),
    };
    let uri = if relative.is_empty() {
        entry.root().to_owned()
    } else {
        entry.resolve(relative).map_err(mcp_blocking::Error::from)?
    };
    let offered = SkillsSupport::of(client.server()).is_some_and(|s| s.directory_read);
    let children: Vec<Value> = if offered {
        client
            .read_directory(&uri)?
            .into_iter()
            .map(|r| {
                let is_dir = r.mime_type.as_deref() == Some(DIRECTORY_MIME_TYPE);
                let listed = is_dir || entry.file(&r.uri).is_some();
                json!({"uri": r.uri, "name": r.name, "mimeType": r.mime_type,
                       "inEntry": listed})
            })
            .collect()
    } else {
        loaded
            .directory(relative)
            .unwrap_or_default()
            .into_iter()
            .map(|name| {
                let (name, mime) = match name.strip_suffix('/') {
                    Some(d) => (d.to_owned(), Some(DIRECTORY_MIME_TYPE)),
                    None => (name, None),
                };
                json!({"uri": format!("{uri}/{name}"), "name": name, "mimeType": mime,
                       "inEntry": true})
            })
            .collect()
    };
    match global.format {
        Format::Json => {
            let mut doc = header(server, client);
            doc["skill"] = Value::String(entry.uri.clone());
            doc["directory"] = Value::String(uri);
            doc["source"] = Value::String(if offered { "server" } else { "entry" }.into());
            doc["children"] = Value::Array(children);
            print_json(&doc);
        }
        Format::Text => {
            let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
            let rows: Vec<Vec<String>> = children
                .iter()
                .map(|c| {
                    let mut name = text(c, "name");
                    if c["mimeType"] == DIRECTORY_MIME_TYPE {
                        name.push('/');
                    }
                    let note = if c["inEntry"] == true {
                        ""
                    } else {
                        "not in the skill's entry: not readable under this load"
                    };
                    let mut row = vec![name, text(c, "uri")];
                    if !note.is_empty() {
                        row.push(note.to_owned());
                    }
                    row
                })
                .collect();
            if rows.is_empty() {
                println!("{} is empty", one_line(&uri));
            }
            table(&rows);
        }
    }
    Ok(0)
}

fn header(server: &str, client: &Client) -> Value {
    json!({
        "server": server,
        "protocolVersion": client.protocol_version().as_str(),
        "era": client.era().to_string(),
    })
}

fn entry_json(skill: &Skill) -> Value {
    let files = match &skill.files {
        SkillFiles::Listed(files) => files
            .iter()
            .map(|f| json!({"uri": f.uri, "digest": f.digest_text(), "size": f.size}))
            .collect(),
        _ => Value::String("dynamic".into()),
    };
    json!({
        "uri": skill.uri,
        "name": skill.name,
        "description": skill.description,
        "frontmatter": skill.frontmatter,
        "resources": files,
    })
}

fn file_json(skill: &LoadedSkill, path: &str, bytes: &[u8]) -> Value {
    let uri = skill
        .entry()
        .resolve(path)
        .unwrap_or_else(|_| path.to_owned());
    match std::str::from_utf8(bytes) {
        Ok(text) => json!({"uri": uri, "size": bytes.len(), "text": text}),
        Err(_) => json!({"uri": uri, "size": bytes.len(), "binary": true}),
    }
}
