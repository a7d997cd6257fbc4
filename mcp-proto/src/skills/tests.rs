use serde_json::{Value, json};

use super::entry::digest_text;
use super::*;
use crate::client::CallOutput;

const MD: &str = "---\nname: pdf\ndescription: Fill forms\n---\n\nBody.\n";
const FORMS: &str = "Forms.\n";

fn digest(s: &str) -> String {
    digest_text(&crate::auth::crypto::sha256(s.as_bytes()))
}

fn entry() -> Value {
    json!({
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": {"name": "pdf", "description": "Fill forms"},
        "resources": [
            {"uri": "skill://pdf/SKILL.md", "digest": digest(MD), "size": MD.len()},
            {"uri": "skill://pdf/references/FORMS.md", "digest": digest(FORMS), "size": FORMS.len()},
        ]
    })
}

fn read_output(uri: &str, text: &str) -> CallOutput {
    let result = json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]});
    CallOutput {
        result: serde_json::value::to_raw_value(&result).unwrap(),
        items: Vec::new(),
        pages: 1,
        rounds: 0,
    }
}

fn load(entry: Value, md: &str) -> Result<LoadedSkill, SkillError> {
    let skill = Skill::from_json(&entry, &SkillLimits::default()).unwrap();
    let mut load = SkillLoad::new(skill);
    let request = load.poll_request().unwrap();
    assert_eq!(request.method(), "resources/read");
    assert!(load.poll_request().is_none());
    load.handle_output(&read_output("skill://pdf/SKILL.md", md))
        .map(|s| s.unwrap())
}

#[test]
fn a_skill_loads_and_its_listed_files_read_verified() {
    let skill = load(entry(), MD).unwrap();
    assert_eq!(skill.body(), "\nBody.\n");
    assert_eq!(skill.directory("").unwrap(), ["SKILL.md", "references/"]);
    let read = skill.read_file("references/FORMS.md").unwrap();
    assert_eq!(read.uri(), "skill://pdf/references/FORMS.md");
    let out = read_output(read.uri(), FORMS);
    assert_eq!(read.handle_output(&out).unwrap(), FORMS.as_bytes());
    let bad = read_output(read.uri(), "Forms!\n");
    assert!(matches!(
        read.handle_output(&bad),
        Err(SkillError::DigestMismatch { .. })
    ));
    assert!(matches!(
        skill.read_file("references/OTHER.md"),
        Err(SkillError::NotListed { .. })
    ));
    assert!(matches!(
        skill.read_file("../other/SKILL.md"),
        Err(SkillError::OutsideSkill { .. })
    ));
    assert!(matches!(
        skill.read_file("skill://other/SKILL.md"),
        Err(SkillError::OutsideSkill { .. })
    ));
}

#[test]
fn verification_failures_are_named() {
    let tampered = MD.replace("Body.", "Evil!");
    assert!(matches!(
        load(entry(), &tampered),
        Err(SkillError::DigestMismatch { .. })
    ));
    let longer = format!("{MD}more");
    assert!(matches!(
        load(entry(), &longer),
        Err(SkillError::SizeMismatch { expected, actual, .. }) if actual == expected + 4
    ));
    let other = "---\nname: pdf\ndescription: Steal keys\n---\n\nBody.\n";
    let mut e = entry();
    e["resources"][0]["digest"] = json!(digest(other));
    e["resources"][0]["size"] = json!(other.len());
    assert_eq!(
        load(e, other).unwrap_err(),
        SkillError::FrontmatterMismatch {
            uri: "skill://pdf/SKILL.md".into(),
            field: "description".into()
        }
    );
    let none = "no frontmatter\n";
    let mut e = entry();
    e["resources"][0]["digest"] = json!(digest(none));
    e["resources"][0]["size"] = json!(none.len());
    assert!(matches!(load(e, none), Err(SkillError::Frontmatter { .. })));
}

#[test]
fn entries_are_checked() {
    let limits = SkillLimits::default();
    let cases: Vec<(&str, Value)> = vec![
        ("no resources", {
            let mut e = entry();
            e.as_object_mut().unwrap().remove("resources");
            e
        }),
        ("bad digest", {
            let mut e = entry();
            e["resources"][0]["digest"] = json!("sha256:ABC");
            e
        }),
        ("outside", {
            let mut e = entry();
            e["resources"][1]["uri"] = json!("skill://other/x.md");
            e
        }),
        ("dot-dot", {
            let mut e = entry();
            e["resources"][1]["uri"] = json!("skill://pdf/../x.md");
            e
        }),
        ("name", {
            let mut e = entry();
            e["frontmatter"]["name"] = json!("other");
            e
        }),
        ("no SKILL.md listed", {
            let mut e = entry();
            e["resources"].as_array_mut().unwrap().remove(0);
            e
        }),
        ("too big", {
            let mut e = entry();
            e["resources"][1]["size"] = json!(17 * 1024 * 1024);
            e
        }),
        ("duplicate", {
            let mut e = entry();
            let first = e["resources"][0].clone();
            e["resources"].as_array_mut().unwrap().push(first);
            e
        }),
    ];
    for (what, e) in cases {
        assert!(
            matches!(
                Skill::from_json(&e, &limits),
                Err(SkillError::InvalidEntry { .. })
            ),
            "{what} accepted"
        );
    }
    let mut e = entry();
    let many: Vec<Value> = (0..600)
        .map(|i| json!({"uri": format!("skill://pdf/f{i}"), "digest": digest(""), "size": 0}))
        .collect();
    e["resources"] = Value::Array(many);
    assert!(Skill::from_json(&e, &limits).is_err());
}

#[test]
fn a_uri_only_load_fetches_the_entry_first() {
    let mut load = SkillLoad::new("skill://pdf/SKILL.md");
    assert_eq!(load.poll_request().unwrap().method(), "skills/get");
    let result = json!({"skill": entry(), "ttlMs": 0, "cacheScope": "private"});
    let out = CallOutput {
        result: serde_json::value::to_raw_value(&result).unwrap(),
        items: Vec::new(),
        pages: 1,
        rounds: 0,
    };
    assert!(load.handle_output(&out).unwrap().is_none());
    assert_eq!(load.poll_request().unwrap().method(), "resources/read");
    let loaded = load
        .handle_output(&read_output("skill://pdf/SKILL.md", MD))
        .unwrap()
        .unwrap();
    assert_eq!(loaded.entry().name, "pdf");

    let mut load = SkillLoad::new("skill://other/SKILL.md");
    let _ = load.poll_request();
    assert!(matches!(
        load.handle_output(&out),
        Err(SkillError::WrongSkill { .. })
    ));
}

#[test]
fn dynamic_skills_are_refused_unless_allowed() {
    let mut e = entry();
    e["resources"] = json!("dynamic");
    let skill = Skill::from_json(&e, &SkillLimits::default()).unwrap();
    let mut load = SkillLoad::new(skill.clone());
    assert!(load.poll_request().is_none());
    assert!(matches!(load.check(), Err(SkillError::Dynamic { .. })));
    let mut load = SkillLoad::new(skill).allow_dynamic();
    assert!(load.poll_request().is_some());
    let loaded = load
        .handle_output(&read_output("skill://pdf/SKILL.md", MD))
        .unwrap()
        .unwrap();
    assert!(loaded.read_file("anything/here.md").is_ok());
}

#[test]
fn support_is_read_from_the_capabilities() {
    let caps = json!({"extensions": {EXTENSION: {"directoryRead": true}}});
    assert_eq!(
        SkillsSupport::from_capabilities(&caps),
        Some(SkillsSupport {
            directory_read: true
        })
    );
    let caps = json!({"extensions": {EXTENSION: {}}});
    assert_eq!(
        SkillsSupport::from_capabilities(&caps),
        Some(SkillsSupport {
            directory_read: false
        })
    );
    assert_eq!(SkillsSupport::from_capabilities(&json!({})), None);
}

#[test]
fn the_fuzz_entry_point_runs_on_samples() {
    let entry = entry().to_string();
    for md in [
        MD,
        "---\nname: pdf\ndescription: Fill forms\n---\n",
        "---\n- a\n---\n",
        "---\nname: [\n---\n",
        "",
    ] {
        crate::fuzzing::skill_load(format!("{entry}\n{md}").as_bytes());
    }
    crate::fuzzing::skill_load(b"\xff");
    // Once a panic: a URI whose "://" overlaps its "/SKILL.md".
    crate::fuzzing::skill_load(b"{\"uri\": \"skil://SKILL.md\"}\n");
    crate::fuzzing::skill_load(b"{\"uri\": \"skill:://SKILL.md\"}\n");
    crate::fuzzing::skill_load(b"{}");
}

#[test]
fn same_named_skills_are_reported_not_dropped() {
    let limits = SkillLimits::default();
    let mut nested = entry();
    nested["uri"] = json!("skill://acme/pdf/SKILL.md");
    nested["resources"] = json!("dynamic");
    let mut other = entry();
    other["uri"] = json!("skill://other/SKILL.md");
    other["frontmatter"]["name"] = json!("other");
    other["resources"] = json!("dynamic");
    let items: Vec<Box<serde_json::value::RawValue>> = [entry(), nested, other]
        .iter()
        .map(|v| serde_json::value::to_raw_value(v).unwrap())
        .collect();
    let output = CallOutput {
        result: serde_json::value::to_raw_value(&json!({})).unwrap(),
        items,
        pages: 1,
        rounds: 0,
    };
    let listing = Listing::from_output(&output, &limits);
    assert_eq!(listing.skills.len(), 3);
    let clashes: Vec<&str> = listing
        .name_collisions()
        .iter()
        .map(|s| s.uri.as_str())
        .collect();
    assert_eq!(
        clashes,
        ["skill://pdf/SKILL.md", "skill://acme/pdf/SKILL.md"]
    );
}
