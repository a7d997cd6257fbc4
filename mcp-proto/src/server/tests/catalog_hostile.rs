//! The catalog paths (resources, skills, prompts, completions) against a
//! hostile client, in both eras.

use serde_json::{Value, json};

use super::{Peer, modern};
use crate::server::example;

/// The example server, legacy session open, with resource subscriptions on.
fn legacy() -> Peer {
    let mut p = Peer::new(example::server_with(|c| c.resource_subscriptions = true));
    p.initialize("2025-11-25", json!({}));
    p
}

fn error_of(reply: &Value) -> (i64, String) {
    let e = &reply["error"];
    assert!(e.is_object(), "expected an error, got {reply}");
    (
        e["code"].as_i64().unwrap(),
        e["message"].as_str().unwrap().to_owned(),
    )
}

/// Decision 52: "Subscribing to a resource that does not exist is `-32002` with
/// `data.uri`, as reading it would be". A served skill's files are resources the client
/// reads with `resources/read` (skills.rs: "the files through `resources/read`"), so
/// subscribing to one must succeed, and `resource_updated` must reach the subscriber.
#[test]
fn a_readable_skill_file_can_be_subscribed_to() {
    let mut p = legacy();
    for uri in [
        "skill://greeting/SKILL.md",
        "skill://greeting/templates/formal.md",
    ] {
        let read = p.call(json!(1), "resources/read", json!({"uri": uri}));
        assert!(read["result"]["contents"].is_array(), "{read}");
        let sub = p.call(json!(2), "resources/subscribe", json!({"uri": uri}));
        assert_eq!(
            sub["result"],
            json!({}),
            "a resource that resources/read serves must be subscribable: {sub}"
        );
    }
    p.server.resource_updated("skill://greeting/SKILL.md");
    let out = p.raw(b"");
    assert_eq!(
        out,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                    "params": {"uri": "skill://greeting/SKILL.md"}})
        ]
    );
}

/// `GetPromptRequest.params.arguments` is `{ [key: string]: string }` in every schema
/// version; catalog.rs says `prompts/get` "checks the prompt and its required arguments
/// here for both eras". A required argument sent as `null` is not given (and the example's
/// handler greets "friend" instead of refusing), and one of another type is not a valid
/// argument: both are `-32602` naming the argument, before the handler runs.
#[test]
fn prompt_arguments_must_be_strings() {
    let mut p = legacy();
    let mut m = Peer::new(example::server());
    for bad in [
        json!(null),
        json!(5),
        json!({"deep": [1, 2]}),
        json!(["Ada"]),
    ] {
        let params = json!({"name": "greet", "arguments": {"name": bad}});
        let legacy = p.call(json!(1), "prompts/get", params.clone());
        let modern = m.call(json!(1), "prompts/get", modern(params, json!({})));
        for reply in [legacy, modern] {
            let (code, message) = error_of(&reply);
            assert_eq!(code, -32602, "{reply}");
            assert!(
                message.contains("`name`"),
                "the error names the argument: {reply}"
            );
        }
    }
}

/// The spec's completion page: servers SHOULD answer "Invalid prompt name: -32602". The
/// machine checks `ref` itself (catalog.rs, `complete`) and knows the prompts, yet a
/// `ref/prompt` naming no prompt is handed to the handler and answered as an empty
/// completion, in both eras.
#[test]
fn completing_an_unknown_prompt_is_invalid_params() {
    let params = json!({"ref": {"type": "ref/prompt", "name": "nope"},
                        "argument": {"name": "name", "value": "g"}});
    let mut p = legacy();
    let reply = p.call(json!(1), "completion/complete", params.clone());
    assert_eq!(error_of(&reply).0, -32602, "{reply}");
    let mut m = Peer::new(example::server());
    let reply = m.call(json!(1), "completion/complete", modern(params, json!({})));
    assert_eq!(error_of(&reply).0, -32602, "{reply}");
}

/// catalog.rs: "Cursors are the decimal offset of the next page; any cursor the server
/// did not issue is `-32602`." `skills/list` and `resources/directory/read` are listings
/// the client pages (`CallRequest::list_skills`, `read_directory`: "every page"), but the
/// server ignores a forged cursor and answers the first page again.
#[test]
fn skill_listings_refuse_forged_cursors() {
    let mut p = legacy();
    let mut m = Peer::new(example::server());
    for (method, params) in [
        ("skills/list", json!({"cursor": "garbage"})),
        ("skills/list", json!({"cursor": 5})),
        (
            "resources/directory/read",
            json!({"uri": "skill://greeting", "cursor": "garbage"}),
        ),
    ] {
        let legacy = p.call(json!(1), method, params.clone());
        let modern = m.call(json!(1), method, modern(params, json!({})));
        for reply in [legacy, modern] {
            assert_eq!(
                error_of(&reply),
                (-32602, "Invalid cursor".to_owned()),
                "{method}: {reply}"
            );
        }
    }
}
