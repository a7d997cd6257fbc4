//! Interop for typed content, `completion/complete`, `resources/templates/list` and
//! `ping` against `@modelcontextprotocol/server-everything` (legacy era, stdio), a
//! server nobody here wrote.

use mcp_blocking::Client;
use mcp_proto::client::{CallError, ClientConfig};
use mcp_proto::content::{Content, ResourceBody};
use mcp_proto::model::{ClientCapabilities, CompletionRef};
use mcp_proto::version::{Era, EraMode};
use mcp_tests::interop::{Fixture, fixture};
use serde_json::json;

fn everything() -> Option<Client> {
    let cmd = fixture(Fixture::Everything)?;
    let config = ClientConfig::new("interop-test", "1.0")
        .era_mode(EraMode::Auto)
        .capabilities(ClientCapabilities::none());
    Some(Client::connect_stdio(cmd, config).expect("connect"))
}

#[test]
fn server_everything_content_blocks_are_typed() {
    let Some(mut client) = everything() else {
        return;
    };
    assert_eq!(client.era(), Era::Legacy);

    let image = client
        .call_tool("get-tiny-image", json!({}))
        .expect("image");
    let media: Vec<_> = image.media().collect();
    assert_eq!(media.len(), 1, "{:?}", image.content);
    assert_eq!(
        (media[0].kind, &*media[0].mime_type),
        ("image", "image/png")
    );
    let (_, data) = image
        .blocks()
        .find_map(|b| b.media().map(|(s, d)| (s, d.clone())))
        .unwrap();
    let png = data.decode(1 << 20).expect("valid base64");
    assert_eq!(png.len(), media[0].bytes);
    assert_eq!(&png[1..4], b"PNG");
    assert!(!image.text().is_empty(), "the text blocks around it");

    let links = client
        .call_tool("get-resource-links", json!({"count": 3}))
        .expect("links");
    let uris: Vec<String> = links.resource_links().map(|l| l.uri.into_owned()).collect();
    assert_eq!(uris.len(), 3, "{:?}", links.content);
    assert!(
        uris.iter().all(|u| u.starts_with("demo://resource/")),
        "{uris:?}"
    );

    let reference = client
        .call_tool(
            "get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 2}),
        )
        .expect("reference");
    let embedded = reference
        .blocks()
        .find_map(|b| match b {
            Content::Resource(r) => Some(r.resource.uri.into_owned()),
            _ => None,
        })
        .expect("an embedded resource");
    assert!(embedded.contains("/text/2"), "{embedded}");

    // A blob resource read through the typed contents.
    let out = client
        .request(mcp_proto::client::CallRequest::read_resource(
            "demo://resource/dynamic/blob/1",
        ))
        .expect("read");
    let contents = out.resource_contents().expect("contents");
    assert!(
        matches!(&contents[0], Ok(c) if matches!(&c.body, ResourceBody::Blob(b) if b.decode(1 << 20).is_ok())),
        "{}",
        out.result.get()
    );
    client.close();
}

#[test]
fn server_everything_completes_templates_and_pings() {
    let Some(mut client) = everything() else {
        return;
    };
    let templates = client.list_resource_templates().expect("templates");
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"),
        "{templates:?}"
    );

    let prompt = CompletionRef::Prompt("completable-prompt".into());
    let departments = client
        .complete(&prompt, "department", "Eng", json!(null))
        .expect("complete department");
    assert_eq!(departments.values, ["Engineering"]);
    // The second argument depends on the first, sent as context.arguments.
    let names = client
        .complete(&prompt, "name", "", json!({"department": "Engineering"}))
        .expect("complete name");
    assert_eq!(names.values, ["Alice", "Bob", "Charlie"]);

    let template =
        CompletionRef::ResourceTemplate("demo://resource/dynamic/text/{resourceId}".into());
    let ids = client
        .complete(&template, "resourceId", "3", json!(null))
        .expect("complete template");
    assert_eq!(ids.values, ["3"]);

    client.ping().expect("ping");
    client.close();
}

#[test]
fn ping_is_local_against_a_2026_server() {
    let Some(cmd) = fixture(Fixture::TypeScript) else {
        return;
    };
    let config = ClientConfig::new("interop-test", "1.0").era_mode(EraMode::Auto);
    let mut client = Client::connect_stdio(cmd, config).expect("connect");
    assert_eq!(client.era(), Era::Modern);
    let err = client.ping().unwrap_err();
    assert!(
        matches!(
            &err,
            mcp_blocking::Error::Call(CallError::NotInVersion { .. })
        ),
        "{err:?}"
    );
    // The connection is fine: a real call still works.
    client.list_tools().expect("tools/list");
    client.close();
}

/// The TypeScript SDK fixture with `--content`: a `media` tool, a completable prompt and
/// resource template, and `tools/list` cached for a minute in 2026-07-28.
#[test]
fn typescript_sdk_content_completion_templates_and_the_list_cache_in_both_eras() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    for mode in [EraMode::Auto, EraMode::Legacy] {
        let Some(cmd) = fixture(Fixture::TypeScript) else {
            return;
        };
        let config = ClientConfig::new("interop-test", "1.0").era_mode(mode);
        let mut client = Client::connect_stdio(cmd.arg("--content"), config).expect("connect");
        let listings = Arc::new(AtomicUsize::new(0));
        let seen = listings.clone();
        client.set_wire_log(Some(Box::new(
            move |direction: mcp_blocking::Direction, bytes: &[u8]| {
                let text = String::from_utf8_lossy(bytes);
                if direction == mcp_blocking::Direction::Sent {
                    seen.fetch_add(
                        text.matches(r#""method":"tools/list""#).count(),
                        Ordering::SeqCst,
                    );
                }
            },
        )));
        let modern = client.era() == Era::Modern;
        assert_eq!(modern, mode == EraMode::Auto);

        let media = client.call_tool("media", json!({})).expect("media");
        let kinds: Vec<_> = media.media().map(|m| (m.kind, m.bytes)).collect();
        assert_eq!(kinds, [("image", 70), ("audio", 16)], "{mode:?}");
        assert_eq!(media.resource_links().count(), 1);
        let texts: Vec<String> = media
            .blocks()
            .filter_map(|b| b.text().map(str::to_owned))
            .collect();
        assert_eq!(texts, ["media", "note 2"]);
        let blob = media.blocks().find_map(|b| match b.media() {
            Some((s, data)) if s.kind == "blob" => Some(data.decode(16).unwrap()),
            _ => None,
        });
        assert_eq!(blob.as_deref(), Some(&[0u8, 1, 2][..]));

        let team = CompletionRef::Prompt("team".into());
        let departments = client
            .complete(&team, "department", "E", json!(null))
            .expect("complete");
        assert_eq!(departments.values, ["Engineering"]);
        let names = client
            .complete(&team, "name", "", json!({"department": "Sales"}))
            .expect("complete with context");
        assert_eq!(names.values, ["Carol", "Dave"]);
        let notes = CompletionRef::ResourceTemplate("ts://notes/{id}".into());
        let ids = client
            .complete(&notes, "id", "2", json!(null))
            .expect("complete a template");
        assert_eq!(ids.values, ["2"]);
        let templates = client.list_resource_templates().expect("templates");
        assert_eq!(templates[0].uri_template, "ts://notes/{id}");

        client.list_tools().expect("tools/list");
        client.list_tools().expect("tools/list again");
        let sent = listings.load(Ordering::SeqCst);
        if modern {
            assert_eq!(sent, 1, "the second listing comes from the cache");
            assert!(matches!(
                client.ping(),
                Err(mcp_blocking::Error::Call(CallError::NotInVersion { .. }))
            ));
        } else {
            assert_eq!(sent, 2, "no caching in the legacy era");
            client.ping().expect("ping");
        }
        client.close();
    }
}
