//! The Skills extension through both adapters against the bundled example server over
//! loopback HTTP, in both eras: the same listing, the same verified `SKILL.md` and file,
//! the same refusals.

use futures_lite::future;
use mcp_proto::client::ClientConfig;
use mcp_proto::server::example::{GREETING_FORMAL, GREETING_SKILL};
use mcp_proto::skills::SkillFiles;
use mcp_proto::version::EraMode;

const URI: &str = "skill://greeting/SKILL.md";

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("mcp-tests-skills", "0.0.0").era_mode(mode)
}

#[test]
fn both_adapters_list_load_and_read_the_example_skill() {
    let server = mcp_blocking::serve_http_on("127.0.0.1:0", mcp_proto::server::example::server())
        .expect("serve the example server");
    let url = server.url();
    for mode in [EraMode::Auto, EraMode::Legacy] {
        let mut client = mcp_blocking::Client::connect_http(&url, config(mode)).expect("connect");
        let listing = client.list_skills().expect("skills/list");
        assert!(listing.rejected.is_empty(), "{:?}", listing.rejected);
        let [skill] = listing.skills.as_slice() else {
            panic!("one skill: {listing:?}");
        };
        assert_eq!((skill.uri.as_str(), skill.name.as_str()), (URI, "greeting"));
        assert_eq!(skill.frontmatter["metadata"]["version"], "1.0");
        assert!(matches!(&skill.files, SkillFiles::Listed(f) if f.len() == 2));
        let loaded = client.load_skill(skill).expect("load");
        assert_eq!(loaded.text(), GREETING_SKILL);
        let formal = client
            .read_skill_file(&loaded, "templates/formal.md")
            .expect("a listed file");
        assert_eq!(formal, GREETING_FORMAL.as_bytes());
        let unlisted = client
            .read_skill_file(&loaded, "templates/casual.md")
            .expect_err("not in the entry");
        assert_eq!(unlisted.kind(), "skill-not-listed");
        let children = client
            .read_directory("skill://greeting")
            .expect("directory read");
        let names: Vec<&str> = children.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["SKILL.md", "templates"]);
        assert_eq!(children[1].mime_type.as_deref(), Some("inode/directory"));
        assert_eq!(&client.skill_entry(URI).expect("skills/get"), skill);
        // By URI alone: skills/get, then the verified SKILL.md.
        let by_uri = client.load_skill(URI).expect("load by URI");
        assert_eq!(by_uri.entry(), loaded.entry());
        let unknown = client
            .load_skill("skill://nothing/SKILL.md")
            .expect_err("unknown skill");
        assert_eq!(unknown.code(), Some(-32602));
        client.close();
    }

    let (client, driver) = mcp_smol::connect_http(&url, config(EraMode::Auto)).expect("connect");
    let work = async move {
        let listing = client.list_skills().await.expect("skills/list");
        let loaded = client.load_skill(&listing.skills[0]).await.expect("load");
        let formal = client
            .read_skill_file(&loaded, "templates/formal.md")
            .await
            .expect("read");
        let unlisted = client
            .read_skill_file(&loaded, "../other/SKILL.md")
            .await
            .expect_err("outside");
        client.close().await;
        (loaded, formal, unlisted)
    };
    let (driven, (loaded, formal, unlisted)) = future::block_on(future::zip(driver, work));
    driven.expect("clean end");
    assert_eq!(loaded.text(), GREETING_SKILL);
    assert_eq!(formal, GREETING_FORMAL.as_bytes());
    assert_eq!(unlisted.kind(), "skill-not-listed");
    drop(server);
}
