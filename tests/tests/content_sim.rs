//! Simulations on the fake clock for typed content, `completion/complete`,
//! `resources/templates/list`, `ping` and the 2026 list cache, in both eras.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use mcp_proto::client::{CallError, CallRequest, ClientConfig, Event};
use mcp_proto::content::{Content, ResourceBody};
use mcp_proto::limits::Limits;
use mcp_proto::model::{CompletionRef, ResourceTemplate};
use mcp_proto::version::{EraMode, ProtocolVersion};
use mcp_tests::http_sim::{HttpSim, Reply, SeenRequest};
use mcp_tests::{Scripted, Sim};
use serde_json::{Map, Value, json};

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("content-sim", "1.0").era_mode(mode)
}

fn answer(m: &Value, result: Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":result}).to_string()
}

/// Handshake answers for either era: `server/discover` (2026) or `initialize` (2025).
fn handshake(m: &Value) -> Option<Vec<String>> {
    match m["method"].as_str()? {
        "server/discover" => Some(vec![answer(
            m,
            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                "capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{},"completions":{}},
                "ttlMs":0,"cacheScope":"public"}),
        )]),
        "initialize" => Some(vec![answer(
            m,
            json!({"protocolVersion":"2025-11-25","capabilities":{"completions":{}},
                "serverInfo":{"name":"s","version":"1"}}),
        )]),
        "notifications/initialized" => Some(Vec::new()),
        _ => None,
    }
}

fn tools_page(ttl: Value, scope: &str) -> Value {
    json!({"resultType":"complete","ttlMs":ttl,"cacheScope":scope,
        "tools":[{"name":"t","inputSchema":{"type":"object"}}]})
}

const ERAS: [EraMode; 2] = [EraMode::Auto, EraMode::Legacy];

// ----- the list cache ---------------------------------------------------------------

#[test]
fn a_second_listing_within_the_ttl_sends_nothing_and_one_after_it_does() {
    let peer = Scripted::new(|m: &Value| {
        handshake(m).unwrap_or_else(|| match m["method"].as_str() {
            Some("tools/list") => vec![answer(m, tools_page(json!(1000), "private"))],
            _ => Vec::new(),
        })
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    let first = sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(sim.sent_with_method("tools/list").len(), 1);
    assert!(sim.client.retained_bytes() > 0, "the cache is counted");
    sim.advance(Duration::from_millis(999));
    let second = sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(sim.sent_with_method("tools/list").len(), 1, "served cached");
    assert_eq!(second.items[0].get(), first.items[0].get());
    assert_eq!(second.result.get(), first.result.get());
    // Fresh while now < arrival + ttlMs: at exactly 1000 ms it is stale.
    sim.advance(Duration::from_millis(1));
    sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(sim.sent_with_method("tools/list").len(), 2);
}

#[test]
fn list_changed_drops_the_cached_listing() {
    let peer = Scripted::new(|m: &Value| {
        handshake(m).unwrap_or_else(|| match m["method"].as_str() {
            Some("tools/list") => vec![answer(m, tools_page(json!(60_000), "public"))],
            Some("prompts/list") => vec![answer(
                m,
                json!({"resultType":"complete","ttlMs":60000,"cacheScope":"public","prompts":[]}),
            )],
            Some("tools/call") => vec![
                json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}).to_string(),
                answer(
                    m,
                    json!({"resultType":"complete","content":[{"type":"text","text":"ok"}]}),
                ),
            ],
            _ => Vec::new(),
        })
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    sim.call(CallRequest::list_prompts()).unwrap();
    sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(sim.sent_with_method("tools/list").len(), 1);
    sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
    assert!(sim.events.iter().any(
        |e| matches!(e, Event::Notification(n) if n.method == "notifications/tools/list_changed")
    ));
    sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(sim.sent_with_method("tools/list").len(), 2, "invalidated");
    // Only the matching list: prompts stay cached.
    sim.call(CallRequest::list_prompts()).unwrap();
    assert_eq!(sim.sent_with_method("prompts/list").len(), 1);
}

#[test]
fn results_without_usable_hints_and_legacy_results_are_not_cached() {
    for (ttl, scope) in [
        (json!(0), "public"),
        (json!(-5), "public"),
        (Value::Null, "public"),
        (json!(1000), "everyone"),
    ] {
        let page = tools_page(ttl.clone(), scope);
        let peer = Scripted::new(move |m: &Value| {
            handshake(m).unwrap_or_else(|| match m["method"].as_str() {
                Some("tools/list") => vec![answer(m, page.clone())],
                _ => Vec::new(),
            })
        });
        let mut sim = Sim::new(config(EraMode::Auto), peer);
        sim.connect();
        sim.call(CallRequest::list_tools()).unwrap();
        sim.call(CallRequest::list_tools()).unwrap();
        assert_eq!(sim.sent_with_method("tools/list").len(), 2, "{ttl} {scope}");
    }
    // A legacy server that sends the hints anyway: the 2025 protocol has no caching.
    let peer = Scripted::new(|m: &Value| {
        handshake(m).unwrap_or_else(|| match m["method"].as_str() {
            Some("tools/list") => vec![answer(m, tools_page(json!(60_000), "public"))],
            _ => Vec::new(),
        })
    });
    let mut sim = Sim::new(config(EraMode::Legacy), peer);
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(sim.sent_with_method("tools/list").len(), 2);
    assert_eq!(sim.client.retained_bytes(), 0);
}

#[test]
fn the_earliest_page_expiry_bounds_a_paginated_listing() {
    // Page 1 lives 5 s, page 2 (fetched 0 ms later) 1 s: the listing is stale at 1 s.
    let peer = Scripted::new(|m: &Value| {
        handshake(m).unwrap_or_else(|| match m["method"].as_str() {
            Some("tools/list") if m["params"].get("cursor").is_none() => vec![answer(
                m,
                json!({"resultType":"complete","ttlMs":5000,"cacheScope":"public",
                    "tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":""}),
            )],
            Some("tools/list") => vec![answer(
                m,
                json!({"resultType":"complete","ttlMs":1000,"cacheScope":"public",
                    "tools":[{"name":"b","inputSchema":{"type":"object"}}]}),
            )],
            _ => Vec::new(),
        })
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    let out = sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(
        (out.items.len(), out.pages),
        (2, 2),
        "an empty cursor means more in 2026"
    );
    sim.advance(Duration::from_millis(500));
    let cached = sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(cached.items.len(), 2);
    assert_eq!(sim.sent_with_method("tools/list").len(), 2);
    sim.advance(Duration::from_millis(500));
    sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(sim.sent_with_method("tools/list").len(), 4);
}

#[test]
fn the_cache_is_bounded_in_entries_and_bytes() {
    let lists = |m: &Value| {
        handshake(m).unwrap_or_else(|| match m["method"].as_str() {
            Some("tools/list") => vec![answer(m, tools_page(json!(60_000), "public"))],
            Some("prompts/list") => vec![answer(
                m,
                json!({"resultType":"complete","ttlMs":60000,"cacheScope":"public",
                    "prompts":[{"name":"p"}]}),
            )],
            _ => Vec::new(),
        })
    };
    // One entry: the newer listing pushes the older one out.
    let mut limits = Limits::default();
    limits.max_cache_entries = 1;
    let mut sim = Sim::new(config(EraMode::Auto).limits(limits), Scripted::new(lists));
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    sim.call(CallRequest::list_prompts()).unwrap();
    sim.call(CallRequest::list_prompts()).unwrap();
    sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(sim.sent_with_method("prompts/list").len(), 1);
    assert_eq!(sim.sent_with_method("tools/list").len(), 2);
    // A byte budget smaller than one listing: nothing is kept.
    let mut limits = Limits::default();
    limits.max_cache_bytes = 64;
    let mut sim = Sim::new(config(EraMode::Auto).limits(limits), Scripted::new(lists));
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(sim.sent_with_method("tools/list").len(), 2);
    assert_eq!(sim.client.retained_bytes(), 0);
}

/// A modern HTTP server whose `tools/list` says `scope`, counting listings.
fn scoped_server(
    scope: &'static str,
    listings: Rc<Cell<u32>>,
) -> impl FnMut(&SeenRequest) -> Reply {
    move |req| {
        let result = |r: Value| json!({"jsonrpc":"2.0","id":req.body["id"],"result":r});
        match req.rpc_method() {
            "server/discover" => Reply::json(
                200,
                &result(
                    json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                    "capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}),
                ),
            ),
            "tools/list" => {
                listings.set(listings.get() + 1);
                Reply::json(200, &result(tools_page(json!(60_000), scope)))
            }
            _ => Reply::with_body(404, &[], ""),
        }
    }
}

#[test]
fn private_listings_are_not_served_under_another_authorization() {
    for (scope, after_change) in [("private", 2), ("public", 1)] {
        let listings = Rc::new(Cell::new(0));
        let mut sim = HttpSim::new(
            config(EraMode::Auto),
            scoped_server(scope, listings.clone()),
        );
        sim.client.set_authorization(Some("Bearer alice".into()));
        sim.connect();
        sim.call(CallRequest::list_tools()).unwrap();
        sim.call(CallRequest::list_tools()).unwrap();
        assert_eq!(listings.get(), 1, "{scope}: cached under one token");
        // The same value again is the same context.
        sim.client.set_authorization(Some("Bearer alice".into()));
        sim.call(CallRequest::list_tools()).unwrap();
        assert_eq!(listings.get(), 1);
        sim.client.set_authorization(Some("Bearer bob".into()));
        sim.call(CallRequest::list_tools()).unwrap();
        assert_eq!(listings.get(), after_change, "{scope}");
    }
}

#[test]
fn a_header_mismatch_fetches_the_listing_again_despite_the_cache() {
    // The cached listing shows `route` without its annotation; the server wants the
    // header. The -32020 must refetch tools/list, not read the stale cached one.
    let mut listings = 0;
    let mut sim = HttpSim::new(config(EraMode::Auto), move |req: &SeenRequest| {
        let result = |r: Value| json!({"jsonrpc":"2.0","id":req.body["id"],"result":r});
        match req.rpc_method() {
            "server/discover" => Reply::json(
                200,
                &result(
                    json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                    "capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}),
                ),
            ),
            "tools/list" => {
                listings += 1;
                let region = if listings == 1 {
                    json!({"type":"string"})
                } else {
                    json!({"type":"string","x-mcp-header":"Region"})
                };
                Reply::json(
                    200,
                    &result(
                        json!({"resultType":"complete","ttlMs":60000,"cacheScope":"public",
                        "tools":[{"name":"route","inputSchema":{"type":"object","properties":{"region":region}}}]}),
                    ),
                )
            }
            "tools/call" if req.header("mcp-param-region").is_none() => Reply::json(
                400,
                &json!({"jsonrpc":"2.0","id":req.body["id"],
                    "error":{"code":-32020,"message":"Header mismatch"}}),
            ),
            "tools/call" => Reply::json(
                200,
                &result(
                    json!({"resultType":"complete","content":[{"type":"text","text":"routed"}]}),
                ),
            ),
            _ => Reply::with_body(404, &[], ""),
        }
    });
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    let out = sim
        .call(CallRequest::call_tool("route", json!({"region":"eu"})))
        .unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "routed");
    assert_eq!(sim.with_method("tools/list").len(), 2);
    // The refreshed listing is cached in turn.
    sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(sim.with_method("tools/list").len(), 2);
}

// ----- typed content -----------------------------------------------------------------

const BLOCKS: &str = r##"[{"type":"text","text":"hello","annotations":{"audience":["user"],"priority":0.5}},
 {"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},
 {"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},
 {"type":"resource_link","uri":"file:///r.txt","name":"r","mimeType":"text/plain"},
 {"type":"resource","resource":{"uri":"x://doc","mimeType":"text/markdown","text":"# doc"}},
 {"type":"resource","resource":{"uri":"x://bin","blob":"AAECAw=="}},
 {"type":"x-future","payload":{"z":1,  "a":[true]}}]"##;

#[test]
fn content_blocks_are_typed_and_unknown_ones_kept_verbatim_in_both_eras() {
    for mode in ERAS {
        let peer = Scripted::new(|m: &Value| {
            handshake(m).unwrap_or_else(|| match m["method"].as_str() {
                Some("tools/call") => vec![format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":{BLOCKS},"structuredContent":{{"n":1}},"isError":false}}}}"#,
                    m["id"],
                    BLOCKS = BLOCKS.replace('\n', "")
                )],
                Some("prompts/get") => vec![format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":{{"messages":[{{"role":"user","content":{{"type":"x-future","q":2}}}},{{"role":"assistant","content":{{"type":"image","data":"AA==","mimeType":"image/gif"}}}}]}}}}"#,
                    m["id"]
                )],
                Some("resources/read") => vec![answer(
                    m,
                    json!({"contents":[{"uri":"x://a","text":"A"},{"uri":"x://b","mimeType":"image/png","blob":"AAAA"}]}),
                )],
                _ => Vec::new(),
            })
        });
        let mut sim = Sim::new(config(mode), peer);
        sim.connect();
        let out = sim.call(CallRequest::call_tool("t", json!({}))).unwrap();
        assert!(
            out.result
                .get()
                .contains(r#""payload":{"z":1,  "a":[true]}"#),
            "exact"
        );
        let blocks = out.content().unwrap();
        assert_eq!(blocks.len(), 7);
        assert!(matches!(&blocks[0], Content::Text(t) if t.text == "hello"));
        assert!(blocks[0].annotations().unwrap().get().contains("priority"));
        let (img, data) = blocks[1].media().unwrap();
        assert_eq!(
            (img.kind, &*img.mime_type, img.bytes),
            ("image", "image/png", 8)
        );
        assert_eq!(data.decode(8).unwrap()[1..4], *b"PNG");
        assert_eq!(blocks[2].media().unwrap().0.kind, "audio");
        assert!(matches!(&blocks[3], Content::ResourceLink(l) if l.uri == "file:///r.txt"));
        assert_eq!(blocks[4].text(), Some("# doc"));
        assert_eq!(blocks[5].media().unwrap().0.bytes, 4);
        assert!(matches!(blocks[6], Content::Unknown(_)));
        assert_eq!(
            blocks[6].raw().get(),
            r#"{"type":"x-future","payload":{"z":1,  "a":[true]}}"#
        );
        // The owned result offers the same views.
        let result = out.tool_result().unwrap();
        assert_eq!(result.text(), "hello");
        assert_eq!(result.media().count(), 2);
        assert_eq!(result.resource_links().count(), 1);
        assert_eq!(result.structured_content.unwrap().get(), r#"{"n":1}"#);
        assert_eq!(result.is_error, Some(false));

        let out = sim.call(CallRequest::get_prompt("p", Map::new())).unwrap();
        let prompt = out.prompt_view().unwrap();
        assert_eq!(prompt.messages[0].role, "user");
        assert_eq!(
            prompt.messages[0].content.raw().get(),
            r#"{"type":"x-future","q":2}"#
        );
        assert_eq!(prompt.messages[1].content.media().unwrap().0.bytes, 1);

        let out = sim.call(CallRequest::read_resource("x://a")).unwrap();
        let contents = out.resource_contents().unwrap();
        assert!(
            matches!(&contents[0], Ok(c) if matches!(&c.body, ResourceBody::Text(t) if t == "A"))
        );
        assert!(
            matches!(&contents[1], Ok(c) if matches!(&c.body, ResourceBody::Blob(b) if b.decoded_len() == 3))
        );
    }
}

// ----- completion, templates, ping -----------------------------------------------------

#[test]
fn completion_sends_the_reference_argument_and_context_in_both_eras() {
    for mode in ERAS {
        let peer = Scripted::new(|m: &Value| {
            handshake(m).unwrap_or_else(|| match m["method"].as_str() {
                Some("completion/complete") => vec![answer(
                    m,
                    json!({"resultType":"complete",
                        "completion":{"values":["python","pytorch"],"total":2,"hasMore":false}}),
                )],
                _ => Vec::new(),
            })
        });
        let mut sim = Sim::new(config(mode), peer);
        sim.connect();
        let mut context = Map::new();
        context.insert("owner".into(), json!("me"));
        let out = sim
            .call(CallRequest::complete(
                &CompletionRef::Prompt("code_review".into()),
                "language",
                "py",
                context,
            ))
            .unwrap();
        let c = out.completion().unwrap();
        assert_eq!(c.values, ["python", "pytorch"]);
        assert_eq!((c.total, c.has_more), (Some(2), Some(false)));
        let sent = sim.sent_with_method("completion/complete")[0].clone();
        assert_eq!(
            sent["params"]["ref"],
            json!({"type":"ref/prompt","name":"code_review"})
        );
        assert_eq!(
            sent["params"]["argument"],
            json!({"name":"language","value":"py"})
        );
        assert_eq!(
            sent["params"]["context"],
            json!({"arguments":{"owner":"me"}})
        );

        sim.call(CallRequest::complete(
            &CompletionRef::ResourceTemplate("file:///{path}".into()),
            "path",
            "",
            Map::new(),
        ))
        .unwrap();
        let sent = sim.sent_with_method("completion/complete")[1].clone();
        assert_eq!(
            sent["params"]["ref"],
            json!({"type":"ref/resource","uri":"file:///{path}"})
        );
        assert!(sent["params"].get("context").is_none());
    }
}

#[test]
fn completion_leaves_the_context_out_for_2025_03_26() {
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![answer(
            m,
            json!({"protocolVersion":"2025-03-26","capabilities":{"completions":{}},"serverInfo":{"name":"s","version":"1"}}),
        )],
        Some("completion/complete") => {
            vec![answer(m, json!({"completion":{"values":[]}}))]
        }
        _ => Vec::new(),
    });
    let mut sim = Sim::new(config(EraMode::Legacy).accept_pre_2025_06_versions(), peer);
    sim.connect();
    let mut context = Map::new();
    context.insert("a".into(), json!("b"));
    sim.call(CallRequest::complete(
        &CompletionRef::Prompt("p".into()),
        "x",
        "y",
        context,
    ))
    .unwrap();
    let sent = sim.sent_with_method("completion/complete")[0].clone();
    assert!(sent["params"].get("context").is_none(), "{sent}");
}

#[test]
fn resource_templates_are_listed_page_by_page_in_both_eras() {
    for mode in ERAS {
        let peer = Scripted::new(|m: &Value| {
            handshake(m).unwrap_or_else(|| match (m["method"].as_str(), m["params"]["cursor"].as_str()) {
                (Some("resources/templates/list"), None) => vec![answer(
                    m,
                    json!({"resultType":"complete","ttlMs":0,"cacheScope":"public",
                        "resourceTemplates":[{"uriTemplate":"file:///{path}","name":"files","x-extra":1}],
                        "nextCursor":"p2"}),
                )],
                (Some("resources/templates/list"), Some("p2")) => vec![answer(
                    m,
                    json!({"resultType":"complete","ttlMs":0,"cacheScope":"public",
                        "resourceTemplates":[{"uriTemplate":"db://{table}","name":"tables","mimeType":"application/json"}]}),
                )],
                _ => Vec::new(),
            })
        });
        let mut sim = Sim::new(config(mode), peer);
        sim.connect();
        let out = sim.call(CallRequest::list_resource_templates()).unwrap();
        assert_eq!(out.pages, 2);
        let templates: Vec<ResourceTemplate> = out.items_as().unwrap();
        assert_eq!(templates[0].uri_template, "file:///{path}");
        assert_eq!(templates[0].extra["x-extra"], 1);
        assert_eq!(templates[1].mime_type.as_deref(), Some("application/json"));
        let sent = sim.sent_with_method("resources/templates/list");
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[1]["params"]["cursor"], "p2");
    }
}

#[test]
fn ping_is_answered_in_the_legacy_era_and_refused_locally_in_the_modern_one() {
    for mode in ERAS {
        let peer = Scripted::new(|m: &Value| {
            handshake(m).unwrap_or_else(|| match m["method"].as_str() {
                Some("ping") => vec![answer(m, json!({}))],
                _ => Vec::new(),
            })
        });
        let mut sim = Sim::new(config(mode), peer);
        sim.connect();
        let outcome = sim.call(CallRequest::ping());
        match mode {
            EraMode::Legacy => {
                outcome.unwrap();
                assert_eq!(sim.sent_with_method("ping").len(), 1);
            }
            _ => {
                assert_eq!(
                    outcome.unwrap_err(),
                    CallError::NotInVersion {
                        method: "ping".into(),
                        version: ProtocolVersion::V2026_07_28
                    }
                );
                assert!(sim.sent_with_method("ping").is_empty());
            }
        }
    }
}

#[test]
fn a_listing_overtaken_by_list_changed_is_not_stored() {
    // The change notification arrives while the listing is in flight: its result may
    // predate the change, so it is delivered but not cached.
    let peer = Scripted::new(|m: &Value| {
        handshake(m).unwrap_or_else(|| match m["method"].as_str() {
            Some("tools/list") => vec![
                json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}).to_string(),
                answer(m, tools_page(json!(60_000), "public")),
            ],
            _ => Vec::new(),
        })
    });
    let mut sim = Sim::new(config(EraMode::Auto), peer);
    sim.connect();
    sim.call(CallRequest::list_tools()).unwrap();
    sim.call(CallRequest::list_tools()).unwrap();
    assert_eq!(sim.sent_with_method("tools/list").len(), 2);
}

#[test]
fn over_http_ping_and_completion_follow_the_era() {
    for modern in [true, false] {
        let mut sim = HttpSim::new(
            config(if modern {
                EraMode::Auto
            } else {
                EraMode::Legacy
            }),
            move |req: &SeenRequest| {
                let result = |r: Value| json!({"jsonrpc":"2.0","id":req.body["id"],"result":r});
                match req.rpc_method() {
                    "server/discover" => Reply::json(
                        200,
                        &result(
                            json!({"resultType":"complete","supportedVersions":["2026-07-28"],
                            "capabilities":{"completions":{}},"ttlMs":0,"cacheScope":"public"}),
                        ),
                    ),
                    "initialize" => Reply::json(
                        200,
                        &result(
                            json!({"protocolVersion":"2025-11-25","capabilities":{"completions":{}},
                            "serverInfo":{"name":"s","version":"1"}}),
                        ),
                    ),
                    "notifications/initialized" => Reply::accepted(),
                    "ping" => Reply::json(200, &result(json!({}))),
                    "completion/complete" => {
                        Reply::json(200, &result(json!({"completion":{"values":["x"]}})))
                    }
                    _ => Reply::with_body(404, &[], ""),
                }
            },
        );
        sim.connect();
        let c = sim
            .call(CallRequest::complete(
                &CompletionRef::Prompt("p".into()),
                "a",
                "",
                Map::new(),
            ))
            .unwrap()
            .completion()
            .unwrap();
        assert_eq!(c.values, ["x"]);
        let ping = sim.call(CallRequest::ping());
        if modern {
            assert!(
                matches!(ping, Err(CallError::NotInVersion { .. })),
                "{ping:?}"
            );
            assert!(sim.with_method("ping").is_empty());
        } else {
            ping.unwrap();
            assert_eq!(sim.with_method("ping").len(), 1);
        }
    }
}
