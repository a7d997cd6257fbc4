//! Change notifications from the application (both eras) and 2026-07-28
//! `subscriptions/listen` over the message transport: acknowledgement, filters, bounds,
//! cancellation, graceful end, and who hears what.

use serde_json::{Value, json};

use super::{Peer, meta};
use crate::model::Implementation;
use crate::server::{
    ListKind, Prompt, Resource, Server, ServerConfig, Tool, ToolCall, ToolOutcome,
};

const SUB: &str = "io.modelcontextprotocol/subscriptionId";

fn tool(name: &str) -> Tool {
    Tool::new(name, "", json!({"type": "object"}), |_: &ToolCall<'_>| {
        ToolOutcome::text("ok")
    })
}

/// A server with one tool, one prompt, one resource, list changes and subscriptions on.
fn server(tweak: impl FnOnce(ServerConfig) -> ServerConfig) -> Server {
    let config = ServerConfig::new(Implementation::new("t", "0"))
        .with_tool(tool("a"))
        .with_prompt(Prompt::new("p", None, vec![], |_| {
            Ok(json!({"messages": []}))
        }))
        .with_resource(Resource::text("test://r", "r", "text/plain", "r"))
        .with_list_changed()
        .with_resource_subscriptions();
    Server::new(tweak(config))
}

fn listen(p: &mut Peer, id: Value, filter: Value) -> Vec<Value> {
    p.send(
        json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"_meta": meta(json!({})), "notifications": filter}}),
    )
}

/// What the server wrote since the last input.
fn drain(p: &mut Peer) -> Vec<Value> {
    p.raw(b"")
}

#[test]
fn capabilities_advertise_list_changed_and_subscribe_in_both_eras() {
    let mut p = Peer::new(server(|c| c));
    let discover = p.call(
        json!(0),
        "server/discover",
        json!({"_meta": meta(json!({}))}),
    );
    let caps = &discover["result"]["capabilities"];
    assert_eq!(caps["tools"], json!({"listChanged": true}));
    assert_eq!(caps["prompts"], json!({"listChanged": true}));
    assert_eq!(
        caps["resources"],
        json!({"listChanged": true, "subscribe": true})
    );
    let init = p.initialize("2025-11-25", json!({}));
    assert_eq!(
        init["result"]["capabilities"]["tools"],
        json!({"listChanged": true})
    );
    // Off: no listChanged.
    let mut q = Peer::new(Server::new(
        ServerConfig::new(Implementation::new("t", "0")).with_tool(tool("a")),
    ));
    let init = q.initialize("2025-11-25", json!({}));
    assert_eq!(init["result"]["capabilities"]["tools"], json!({}));
}

#[test]
fn legacy_sessions_hear_of_catalog_changes_after_initialize() {
    let mut p = Peer::new(server(|c| c));
    // Before initialize: nobody to tell.
    assert_eq!(p.server.list_changed(ListKind::Tools), 0);
    assert!(drain(&mut p).is_empty());
    p.initialize("2025-06-18", json!({}));
    p.server.add_tool(tool("b"));
    let out = drain(&mut p);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["method"], "notifications/tools/list_changed");
    let list = p.call(json!(1), "tools/list", json!({}));
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 2);
    // Replacing a tool of the same name keeps one of it.
    p.server.add_tool(tool("b"));
    assert_eq!(drain(&mut p).len(), 1);
    assert!(p.server.remove_tool("b"));
    assert_eq!(
        drain(&mut p)[0]["method"],
        "notifications/tools/list_changed"
    );
    assert!(
        !p.server.remove_tool("b"),
        "nothing to remove, nothing said"
    );
    assert!(drain(&mut p).is_empty());
    p.server.add_prompt(Prompt::new("q", None, vec![], |_| {
        Ok(json!({"messages": []}))
    }));
    assert_eq!(
        drain(&mut p)[0]["method"],
        "notifications/prompts/list_changed"
    );
    // The last resource gone: the session saw the capability at initialize, so it is told.
    assert!(p.server.remove_resource("test://r"));
    assert_eq!(
        drain(&mut p)[0]["method"],
        "notifications/resources/list_changed"
    );
}

#[test]
fn legacy_list_changes_need_the_configuration() {
    let mut p = Peer::new(server(|mut c| {
        c.list_changed = false;
        c
    }));
    p.initialize("2025-11-25", json!({}));
    p.server.add_tool(tool("b"));
    assert!(drain(&mut p).is_empty());
}

#[test]
fn a_listen_is_acknowledged_first_and_carries_what_it_asked_for() {
    let mut p = Peer::new(server(|c| c));
    let out = listen(
        &mut p,
        json!("L1"),
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://r", "test://r"]}),
    );
    assert_eq!(
        out,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {SUB: "L1"}, "notifications":
                {"toolsListChanged": true, "resourceSubscriptions": ["test://r"]}}})
        ]
    );
    assert_eq!(p.server.subscriptions(), 1);
    p.server.add_tool(tool("b"));
    p.server.add_prompt(Prompt::new("q", None, vec![], |_| {
        Ok(json!({"messages": []}))
    }));
    assert!(p.server.resource_updated("test://r"));
    assert!(!p.server.resource_updated("test://other"));
    let out = drain(&mut p);
    assert_eq!(
        out,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                "params": {"_meta": {SUB: "L1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"_meta": {SUB: "L1"}, "uri": "test://r"}}),
        ],
        "no prompts change: not asked for"
    );
    // A legacy session on the same pipe hears nothing it was not promised... and the
    // listen nothing of legacy subscriptions.
    p.initialize("2025-11-25", json!({}));
    p.server.add_tool(tool("c"));
    let out = drain(&mut p);
    assert_eq!(
        out.len(),
        2,
        "one for the session, one for the listen: {out:?}"
    );
    assert!(out.iter().any(|m| m["params"]["_meta"][SUB] == "L1"));
    assert!(out.iter().any(|m| m["params"].get("_meta").is_none()));
}

#[test]
fn unsupported_types_are_left_out_of_the_acknowledgement() {
    let mut p = Peer::new(server(|mut c| {
        c.resource_subscriptions = false;
        c.prompts.clear();
        c
    }));
    let out = listen(
        &mut p,
        json!(7),
        json!({"promptsListChanged": true, "resourcesListChanged": true,
               "resourceSubscriptions": ["test://r"], "toolsListChanged": false}),
    );
    assert_eq!(
        out[0]["params"]["notifications"],
        json!({"resourcesListChanged": true})
    );
    assert_eq!(out[0]["params"]["_meta"][SUB], 7);
    p.server.list_changed(ListKind::Prompts);
    p.server.resource_updated("test://r");
    p.server.list_changed(ListKind::Tools);
    assert!(
        drain(&mut p).is_empty(),
        "nothing it did not ask for, or was not agreed"
    );
}

#[test]
fn bad_filters_and_too_many_listens_are_refused() {
    let mut p = Peer::new(server(|mut c| {
        c.limits.max_listens = 1;
        c.limits.max_anonymous_listens = 2;
        c.limits.max_listen_items = 2;
        c
    }));
    let call = |p: &mut Peer, id: i64, params: Value| {
        let mut out = p.send(json!({"jsonrpc": "2.0", "id": id,
            "method": "subscriptions/listen", "params": params}));
        assert_eq!(out.len(), 1, "{out:?}");
        out.remove(0)
    };
    let m = meta(json!({}));
    for (id, params, code) in [
        (1, json!({"_meta": m}), -32602),
        (2, json!({"_meta": m, "notifications": []}), -32602),
        (
            3,
            json!({"_meta": m, "notifications": {"toolsListChanged": "yes"}}),
            -32602,
        ),
        (
            4,
            json!({"_meta": m, "notifications": {"resourceSubscriptions": "test://r"}}),
            -32602,
        ),
        (
            5,
            json!({"_meta": m, "notifications": {"resourceSubscriptions": [1]}}),
            -32602,
        ),
        (
            6,
            json!({"_meta": m, "notifications": {"resourceSubscriptions": ["a", "b", "c"]}}),
            -32602,
        ),
        (
            7,
            json!({"_meta": m, "notifications": {"resourceSubscriptions": ["x".repeat(8 * 1024 + 1)]}}),
            -32602,
        ),
        // taskIds without the tasks extension declared.
        (
            8,
            json!({"_meta": m, "notifications": {"taskIds": []}}),
            -32021,
        ),
    ] {
        let reply = call(&mut p, id, params);
        assert_eq!(reply["error"]["code"], code, "{id}: {reply}");
    }
    assert_eq!(p.server.subscriptions(), 0);
    assert_eq!(listen(&mut p, json!(10), json!({})).len(), 1);
    // The same id again while it is open.
    let again = call(&mut p, 10, json!({"_meta": m, "notifications": {}}));
    assert_eq!(again["error"]["code"], -32600);
    assert_eq!(listen(&mut p, json!(11), json!({})).len(), 1);
    let over = call(&mut p, 12, json!({"_meta": m, "notifications": {}}));
    assert_eq!(over["error"]["code"], -32603);
    assert_eq!(over["result"], Value::Null);
    let message = over["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("at most 2 open at once for unauthenticated clients"),
        "{message}"
    );
    // Each authenticated principal has its own bound.
    p.server.set_principal(Some("bob".into()));
    assert_eq!(
        listen(&mut p, json!(12), json!({}))[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    let over = call(&mut p, 13, json!({"_meta": m, "notifications": {}}));
    let message = over["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("at most 1 open at once per client"),
        "{message}"
    );
    assert_eq!(p.server.subscriptions(), 3);
}

/// One listen's URIs are bounded in bytes as well as in count and length: 16 URIs of
/// 8 KiB (128 KiB) are heard, one more is refused, so 64 anonymous listens hold at most
/// 8 MiB of URIs, where 256 of 8 KiB each made 128 MiB.
#[test]
fn a_listens_uris_are_bounded_in_bytes() {
    let mut p = Peer::new(server(|c| c));
    let uris = |n: usize| -> Vec<String> {
        (0..n)
            .map(|i| format!("test://{i:05}/{}", "x".repeat(8 * 1024 - 13)))
            .collect()
    };
    assert!(uris(1)[0].len() == 8 * 1024);
    let m = meta(json!({}));
    let over = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {"_meta": m, "notifications": {"resourceSubscriptions": uris(17)}}});
    let reply = p.send(over);
    assert_eq!(reply[0]["error"]["code"], -32602, "{:?}", reply[0]["error"]);
    let message = reply[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("more than 131072 bytes"), "{message}");
    assert_eq!(p.server.subscriptions(), 0);
    let out = listen(&mut p, json!(2), json!({"resourceSubscriptions": uris(16)}));
    assert_eq!(out[0]["method"], "notifications/subscriptions/acknowledged");
    let agreed = &out[0]["params"]["notifications"]["resourceSubscriptions"];
    assert_eq!(agreed.as_array().map(Vec::len), Some(16));
    // Repeats count once.
    let mut twice = uris(16);
    twice.extend(uris(16));
    let out = listen(&mut p, json!(3), json!({"resourceSubscriptions": twice}));
    assert_eq!(out[0]["method"], "notifications/subscriptions/acknowledged");
}

#[test]
fn a_cancelled_listen_ends_silently_and_end_subscriptions_answers_the_rest() {
    let mut p = Peer::new(server(|c| c));
    listen(&mut p, json!(1), json!({"toolsListChanged": true}));
    listen(&mut p, json!("two"), json!({"toolsListChanged": true}));
    let out = p.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1}}),
    );
    assert!(out.is_empty());
    p.server.add_tool(tool("b"));
    let out = drain(&mut p);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["params"]["_meta"][SUB], "two");
    assert_eq!(p.server.end_subscriptions(), 1);
    let out = drain(&mut p);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], "two");
    assert_eq!(out[0]["result"]["resultType"], "complete");
    assert_eq!(out[0]["result"]["_meta"][SUB], "two");
    assert_eq!(
        out[0]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "t"
    );
    p.server.add_tool(tool("c"));
    assert!(drain(&mut p).is_empty());
    // The end of input ends listens without a word.
    listen(&mut p, json!(3), json!({"toolsListChanged": true}));
    p.server.handle_eof(p.now);
    assert_eq!(p.server.subscriptions(), 0);
}

#[test]
fn a_legacy_listen_request_is_unknown() {
    let mut p = Peer::new(server(|c| c));
    p.initialize("2025-11-25", json!({}));
    let reply = p.call(
        json!(1),
        "subscriptions/listen",
        json!({"notifications": {}}),
    );
    assert_eq!(reply["error"]["code"], -32601);
}
