//! `mcp skills`: the Skills extension (SEP-2640). Listing shows the entries and fetches
//! no file; naming a skill loads it (its `SKILL.md` checked for size, digest and
//! frontmatter against the entry) and `--file` reads one more file of it, checked the
//! same way. Everything the server wrote is cleaned of control sequences on output.

use mcp_blocking::Client;
use mcp_blocking::mcp_proto::skills::{LoadedSkill, Skill, SkillFiles, SkillTarget};
use serde_json::{Value, json};

use crate::args::{Format, Global, InputMode};
use crate::output::{Failure, print_json, short, table};
use crate::session;
use crate::terminal::clean;

/// Runs `mcp skills <server> [<skill> [--file PATH]]`.
pub fn run(
    global: &Global,
    server: &str,
    skill: Option<&str>,
    file: Option<&str>,
) -> Result<u8, Failure> {
    let mut client = session::connect(global, server, Some(InputMode::None))?;
    let code = match skill {
        None => list(global, server, &mut client),
        Some(wanted) => load(global, server, &mut client, wanted, file),
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
                    clean(&clash.name),
                    clean(&clash.uri)
                );
            }
            for rejected in &listing.rejected {
                eprintln!("rejected: {}", clean(&rejected.to_string()));
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
    file: Option<&str>,
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
                let uris: Vec<String> = many.iter().map(|s| clean(&s.uri).into_owned()).collect();
                return Err(Failure::Usage(format!(
                    "{} skills are named {wanted:?}; name one by its URI: {}",
                    many.len(),
                    uris.join(", ")
                )));
            }
        }
    };
    let loaded = client.load_skill(target)?;
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
                clean(&loaded.entry().uri)
            );
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
