//! Transcript tests of the server machine against the example server.

use crate::Instant;

use serde_json::{Value, json};

use super::example::{self, confirm_schema};
use super::*;

/// Any instant: the machine only passes `now` along, so tests may read the clock once.
#[allow(clippy::disallowed_methods)]
fn some_instant() -> Instant {
    Instant::ZERO
}

const PV: &str = "io.modelcontextprotocol/protocolVersion";
const CC: &str = "io.modelcontextprotocol/clientCapabilities";

/// A server and the messages it wrote, parsed.
struct Peer {
    server: Server,
    now: Instant,
}

impl Peer {
    fn new(server: Server) -> Self {
        Peer {
            server,
            now: some_instant(),
        }
    }

    fn raw(&mut self, bytes: &[u8]) -> Vec<Value> {
        self.server.handle_input(self.now, bytes);
        let mut out = Vec::new();
        let mut written = 0;
        while let Some(t) = self.server.poll_transmit(self.now, &mut out) {
            if let crate::client::Transmit::Write { len, .. } = t {
                written += len;
            }
        }
        assert_eq!(written, out.len());
        assert!(out.is_empty() || out.ends_with(b"\n"));
        out.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("server wrote JSON"))
            .collect()
    }

    fn send(&mut self, message: Value) -> Vec<Value> {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.raw(&line)
    }

    /// Sends a request and expects exactly one message back.
    fn call(&mut self, id: Value, method: &str, params: Value) -> Value {
        let mut out = self.send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        assert_eq!(out.len(), 1, "{out:?}");
        out.remove(0)
    }

    fn initialize(&mut self, version: &str, caps: Value) -> Value {
        let reply = self.call(
            json!(0),
            "initialize",
            json!({"protocolVersion": version, "capabilities": caps,
                   "clientInfo": {"name": "t", "version": "0"}}),
        );
        assert!(
            self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
                .is_empty()
        );
        reply
    }
}

fn meta(caps: Value) -> Value {
    json!({PV: "2026-07-28", CC: caps, "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}})
}

fn modern(mut params: Value, caps: Value) -> Value {
    params["_meta"] = meta(caps);
    params
}

fn info() -> Value {
    json!({"name": "mcp-example", "version": env!("CARGO_PKG_VERSION")})
}

fn info_meta() -> Value {
    json!({"io.modelcontextprotocol/serverInfo": info()})
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

fn error_text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}], "isError": true})
}

fn ok(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn err(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn complete(mut result: Value) -> Value {
    result["resultType"] = json!("complete");
    result["_meta"] = info_meta();
    result
}

const ALL_CAPS: &str = r#"{"tools":{},"resources":{},"prompts":{},"completions":{},
    "extensions":{"io.modelcontextprotocol/skills":{"directoryRead":true}}}"#;

fn caps() -> Value {
    serde_json::from_str(ALL_CAPS).unwrap()
}

mod catalog_hostile;
mod deferred;
mod deferred_edges;
mod features;
mod legacy_task_result_ends;
mod listen;
mod meta_in_place;
mod modern_hostile;
mod task_update_answers;
mod tasks;
mod text_results;

#[test]
fn legacy_handshake() {
    let mut p = Peer::new(example::server());
    assert_eq!(
        p.initialize("2025-06-18", json!({})),
        ok(
            json!(0),
            json!({"protocolVersion": "2025-06-18", "capabilities": caps(), "serverInfo": info(),
                   "instructions": "Example server: echo, add, confirm, hang and fail."})
        )
    );
    assert_eq!(
        p.server.legacy_version(),
        Some(ProtocolVersion::V2025_06_18)
    );
    assert_eq!(
        p.call(json!("p"), "ping", json!({})),
        ok(json!("p"), json!({}))
    );
    let list = p.call(json!(1), "tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "add", "confirm", "hang", "fail", "media"]);
    assert!(list["result"].get("nextCursor").is_none());
    assert!(
        list["result"].get("resultType").is_none(),
        "legacy results have no resultType"
    );
    assert_eq!(
        p.call(
            json!(2),
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}})
        ),
        ok(json!(2), text("5"))
    );
    assert_eq!(
        p.call(
            json!(3),
            "initialize",
            json!({"protocolVersion": "2025-06-18"})
        ),
        err(json!(3), -32600, "Server already initialized")
    );
}

#[test]
fn legacy_counter_offer() {
    for (asked, got) in [
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ] {
        let mut p = Peer::new(example::server());
        let reply = p.initialize(asked, json!({}));
        assert_eq!(reply["result"]["protocolVersion"], got, "asked {asked}");
    }
    let mut p = Peer::new(example::server_with(|c| {
        c.versions.accepted = vec![ProtocolVersion::V2025_06_18, ProtocolVersion::V2026_07_28];
    }));
    assert_eq!(
        p.initialize("2025-11-25", json!({}))["result"]["protocolVersion"],
        "2025-06-18"
    );
    let mut p = Peer::new(example::server_with(|c| {
        c.versions.accepted = vec![ProtocolVersion::V2026_07_28];
    }));
    let reply = p.call(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25"}),
    );
    assert_eq!(
        reply["error"],
        json!({"code": -32602, "message": "Unsupported protocol version",
               "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}})
    );
}

/// A session keeps its client's capabilities for its whole life: more than
/// `MAX_CLIENT_CAPABILITIES_BYTES` of them are refused, and the session is not opened.
#[test]
fn legacy_capabilities_kept_by_a_session_are_bounded() {
    let big = "x".repeat(super::MAX_CLIENT_CAPABILITIES_BYTES);
    let mut p = Peer::new(example::server());
    let reply = p.call(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"experimental": {"x": big}},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`capabilities` is 65561 bytes"),
        "{message}"
    );
    // Not opened: the client may try again with less.
    let reply = p.initialize("2025-11-25", json!({"experimental": {"x": "small"}}));
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25", "{reply}");
}

/// Params that are JSON this server cannot read are named as such.
#[test]
fn unreadable_params_are_named() {
    let mut p = Peer::new(example::server());
    let out = p.raw(
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1e400}}
"#,
    );
    let message = out[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("`params`: number out of range"),
        "{message}"
    );
    assert_eq!(out[0]["error"]["code"], -32602);
}

#[test]
fn legacy_requests_need_initialize() {
    let mut p = Peer::new(example::server());
    assert_eq!(p.call(json!(1), "ping", json!({})), ok(json!(1), json!({})));
    assert_eq!(
        p.call(json!(2), "tools/list", json!({})),
        err(json!(2), -32600, "Server not initialized")
    );
    p.initialize("2025-11-25", json!({}));
    assert_eq!(
        p.call(json!(3), "logging/setLevel", json!({"level": "info"})),
        err(json!(3), -32601, "Method not found: logging/setLevel")
    );
}

#[test]
fn modern_discover() {
    let mut p = Peer::new(example::server());
    let expected = ok(
        json!("d"),
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18"],
            "capabilities": caps(),
            "instructions": "Example server: echo, add, confirm, hang and fail.",
            "ttlMs": 60000,
            "cacheScope": "public",
            "_meta": info_meta(),
        }),
    );
    let discover = modern(json!({}), json!({}));
    assert_eq!(
        p.call(json!("d"), "server/discover", discover.clone()),
        expected
    );
    // Served statelessly after a legacy initialize too.
    p.initialize("2025-11-25", json!({}));
    assert_eq!(p.call(json!("d"), "server/discover", discover), expected);
}

#[test]
fn modern_missing_meta_is_invalid_params() {
    let mut p = Peer::new(example::server());
    for (method, params) in [
        ("server/discover", json!({})),
        ("server/discover", json!({"_meta": {CC: {}}})),
        ("tools/list", json!({"_meta": {CC: {}}})),
        ("tools/list", json!({"_meta": {PV: "2026-07-28"}})),
        ("tools/list", json!({"_meta": {PV: 20260728, CC: {}}})),
        ("tools/list", json!({"_meta": {PV: "2026-07-28", CC: []}})),
    ] {
        let reply = p.call(json!(1), method, params.clone());
        assert_eq!(reply["error"]["code"], -32602, "{method} {params}: {reply}");
        assert_eq!(reply["id"], 1);
    }
}

#[test]
fn modern_unsupported_version() {
    let mut p = Peer::new(example::server());
    for version in ["v999.0.0", "2025-11-25"] {
        let reply = p.call(
            json!(4),
            "tools/list",
            json!({"_meta": {PV: version, CC: {}}}),
        );
        assert_eq!(
            reply,
            json!({"jsonrpc": "2.0", "id": 4, "error": {
                "code": -32022,
                "message": format!("Unsupported protocol version: {version}"),
                "data": {"supported": ["2026-07-28", "2025-11-25", "2025-06-18"], "requested": version}
            }})
        );
    }
}

#[test]
fn modern_lists_and_calls() {
    let mut p = Peer::new(example::server());
    let list = p.call(json!(1), "tools/list", modern(json!({}), json!({})));
    let result = &list["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        (&result["ttlMs"], &result["cacheScope"]),
        (&json!(60000), &json!("public"))
    );
    assert_eq!(result["_meta"], info_meta());
    assert_eq!(
        result["tools"][1]["inputSchema"]["required"],
        json!(["a", "b"])
    );
    let add = modern(
        json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        json!({}),
    );
    assert_eq!(
        p.call(json!(2), "tools/call", add),
        ok(json!(2), complete(text("5")))
    );
    let fail = modern(json!({"name": "fail"}), json!({}));
    assert_eq!(
        p.call(json!(3), "tools/call", fail),
        ok(json!(3), complete(error_text("failed on purpose")))
    );
    assert_eq!(
        p.call(json!(4), "ping", modern(json!({}), json!({}))),
        err(json!(4), -32601, "Method not found: ping")
    );
}

#[test]
fn modern_missing_capability() {
    let mut p = Peer::new(example::server());
    let reply = p.call(
        json!(9),
        "tools/call",
        modern(json!({"name": "confirm"}), json!({})),
    );
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "id": 9, "error": {
            "code": -32021,
            "message": "Missing required client capability: elicitation",
            "data": {"requiredCapabilities": {"elicitation": {}}}
        }})
    );
    // `url` alone does not allow a form.
    let url_only = json!({"elicitation": {"url": {}}});
    let reply = p.call(
        json!(10),
        "tools/call",
        modern(json!({"name": "confirm"}), url_only),
    );
    assert_eq!(reply["error"]["code"], -32021);
}

#[test]
fn modern_mrtr_round_trip() {
    let mut p = Peer::new(example::server());
    let caps = json!({"elicitation": {"form": {}}});
    let first = p.call(
        json!(1),
        "tools/call",
        modern(json!({"name": "confirm", "arguments": {}}), caps.clone()),
    );
    let state = first["result"]["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();
    assert_eq!(
        first,
        ok(
            json!(1),
            json!({
                "resultType": "input_required",
                "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
                    "mode": "form",
                    "message": "Proceed with the example action?",
                    "requestedSchema": confirm_schema(),
                }}},
                "requestState": state,
                "_meta": info_meta(),
            })
        )
    );
    for (answer, expected) in [
        (
            json!({"action": "accept", "content": {"proceed": true, "name": "friend"}}),
            "accepted: proceed=true name=friend",
        ),
        (json!({"action": "decline"}), "declined"),
        (json!({"action": "cancel"}), "cancelled"),
    ] {
        let retry = modern(
            json!({"name": "confirm", "arguments": {}, "requestState": state,
                   "inputResponses": {"confirm": answer, "unasked": {"action": "accept"}}}),
            caps.clone(),
        );
        assert_eq!(
            p.call(json!(2), "tools/call", retry),
            ok(json!(2), complete(text(expected)))
        );
    }
    // A try without requestState hands its answers to the handler (decision 39)...
    let again = modern(
        json!({"name": "confirm", "inputResponses": {"confirm": {"action": "decline"}}}),
        caps.clone(),
    );
    assert_eq!(
        p.call(json!(3), "tools/call", again),
        ok(json!(3), complete(text("declined")))
    );
    // ...and one without answers starts over.
    let fresh = modern(json!({"name": "confirm"}), caps.clone());
    assert_eq!(
        p.call(json!(3), "tools/call", fresh)["result"]["resultType"],
        "input_required"
    );
    // Tampered, null or foreign state is -32602.
    for bad in [
        json!("plain1:{nope"),
        json!(null),
        json!(7),
        json!(state.replace("confirm", "echo")),
    ] {
        let retry = modern(
            json!({"name": "confirm", "requestState": bad}),
            caps.clone(),
        );
        let reply = p.call(json!(4), "tools/call", retry);
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Invalid requestState: "), "{message}");
    }
}

/// A tool asking `a`, then `b`, then answering with both: the state must carry `a`.
fn two_rounds(call: &ToolCall<'_>) -> ToolOutcome {
    let ask = |k: &str| {
        ToolOutcome::NeedInput(vec![(
            k.to_owned(),
            InputRequestSpec::form(k, json!({"type": "object"})),
        )])
    };
    match (call.inputs.get("a"), call.inputs.get("b")) {
        (None, _) => ask("a"),
        (Some(_), None) => ask("b"),
        (Some(a), Some(b)) => {
            ToolOutcome::text(format!("{} {} round {}", a["v"], b["v"], call.round))
        }
    }
}

#[test]
fn modern_multi_round_and_round_cap() {
    let mut p = Peer::new(example::server_with(|c| {
        c.tools
            .push(Tool::new("two", "", json!({"type": "object"}), two_rounds));
        c.tools.push(Tool::new(
            "loop",
            "",
            json!({"type": "object"}),
            |_: &ToolCall<'_>| ToolOutcome::NeedInput(vec![("k".into(), InputRequestSpec::Roots)]),
        ));
        c.limits.max_input_rounds = 3;
    }));
    let caps = json!({"elicitation": {}, "roots": {}});
    let mut params = json!({"name": "two"});
    for (round, key) in [(0, "a"), (1, "b")] {
        let reply = p.call(
            json!(round),
            "tools/call",
            modern(params.clone(), caps.clone()),
        );
        let result = &reply["result"];
        assert_eq!(
            result["inputRequests"][key]["params"]["message"], key,
            "{reply}"
        );
        params["requestState"] = result["requestState"].clone();
        params["inputResponses"] = json!({key: {"action": "accept", "v": key}});
    }
    let reply = p.call(json!(2), "tools/call", modern(params, caps.clone()));
    assert_eq!(reply, ok(json!(2), complete(text("\"a\" \"b\" round 2"))));

    let mut params = json!({"name": "loop"});
    for round in 0..3 {
        let reply = p.call(
            json!(round),
            "tools/call",
            modern(params.clone(), caps.clone()),
        );
        assert_eq!(
            reply["result"]["inputRequests"]["k"],
            json!({"method": "roots/list"})
        );
        params["requestState"] = reply["result"]["requestState"].clone();
        params["inputResponses"] = json!({"k": {"roots": []}});
    }
    assert_eq!(
        p.call(json!(9), "tools/call", modern(params, caps)),
        ok(
            json!(9),
            complete(error_text(
                "tool `loop` still needed input after 3 rounds; giving up"
            ))
        )
    );
}

/// A legacy call waiting for more input keeps its earlier answers: no more of them than
/// `max_input_bytes` (they were kept whatever their size, round after round).
#[test]
fn a_legacy_calls_kept_answers_are_bounded() {
    let mut p = Peer::new(example::server_with(|c| {
        c.tools
            .push(Tool::new("two", "", json!({"type": "object"}), two_rounds));
        c.limits.max_input_bytes = 10_000;
    }));
    p.initialize("2025-11-25", json!({"elicitation": {}}));
    let out = p.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                            "params": {"name": "two"}}));
    let asked = out[0]["id"].clone();
    let answer = |id: &Value, v: &str| json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "v": v}});
    // `a`, small: `b` is asked.
    let out = p.send(answer(&asked, "small"));
    assert_eq!(out[0]["method"], "elicitation/create", "{out:?}");
    let asked = out[0]["id"].clone();
    let out = p.send(answer(&asked, &"v".repeat(20_000)));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["id"], 7);
    assert_eq!(out[0]["result"]["isError"], true, "{out:?}");
    let message = out[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(message.contains("max_input_bytes"), "{message}");
}

/// A legacy call waiting for input keeps its arguments too: they count against
/// `max_input_bytes` (an 8 MB `confirm` call of one-member objects held 770 MB while
/// it waited, counted nowhere, and 64 such calls could be parked at once).
#[test]
fn a_waiting_legacy_calls_arguments_count_against_the_bound() {
    let mut p = Peer::new(example::server_with(|c| c.limits.max_input_bytes = 100_000));
    p.initialize("2025-11-25", json!({"elicitation": {}}));
    let call = |id: u64, pad: usize| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "confirm", "arguments": {"p": vec![json!({"": 0}); pad]}}})
    };
    let out = p.send(call(1, 80));
    assert_eq!(out[0]["method"], "elicitation/create", "{out:?}");
    // Another waiting call would take the session's parked calls past the bound.
    let out = p.send(call(2, 80));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["id"], 2, "{out:?}");
    assert_eq!(out[0]["result"]["isError"], true, "{out:?}");
    let message = out[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(message.contains("max_input_bytes"), "{message}");
}

/// `confirm` takes a field left out as the form's default, and refuses one of the wrong
/// type (`"proceed": "notbool"` was read as the default, true).
#[test]
fn confirm_refuses_answers_of_the_wrong_type() {
    let cases = [
        (
            json!({"proceed": "notbool"}),
            error_text("`proceed` must be a boolean"),
        ),
        (
            json!({"proceed": false, "name": 7}),
            error_text("`name` must be a string"),
        ),
        (json!({}), text("accepted: proceed=true name=friend")),
    ];
    for (content, expected) in cases {
        let mut p = Peer::new(example::server());
        p.initialize("2025-11-25", json!({"elicitation": {}}));
        p.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "confirm"}}));
        let out = p.send(json!({"jsonrpc": "2.0", "id": 0,
            "result": {"action": "accept", "content": content}}));
        assert_eq!(out, [ok(json!(7), expected)]);
    }
}

#[test]
fn legacy_elicitation_round_trip() {
    for (version, mode) in [("2025-11-25", Some("form")), ("2025-06-18", None)] {
        let mut p = Peer::new(example::server());
        p.initialize(version, json!({"elicitation": {}}));
        let out = p.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                "params": {"name": "confirm", "arguments": {}}}));
        let mut params = json!({"message": "Proceed with the example action?",
                                "requestedSchema": confirm_schema()});
        if let Some(mode) = mode {
            params["mode"] = json!(mode);
        }
        assert_eq!(
            out,
            [json!({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": params})]
        );
        let out = p.send(json!({"jsonrpc": "2.0", "id": 0,
            "result": {"action": "accept", "content": {"proceed": false, "name": "bob"}}}));
        assert_eq!(
            out,
            [ok(json!(7), text("accepted: proceed=false name=bob"))]
        );
        // The next input request gets the next id; a late duplicate answer is ignored.
        assert!(
            p.send(json!({"jsonrpc": "2.0", "id": 0, "result": {}}))
                .is_empty()
        );
        let out = p.send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                                "params": {"name": "confirm"}}));
        assert_eq!(out[0]["id"], 1);
        let out = p.send(json!({"jsonrpc": "2.0", "id": 1,
                                "error": {"code": -1, "message": "user went away"}}));
        assert_eq!(
            out,
            [ok(
                json!(8),
                error_text("input request `confirm` failed: user went away (code -1)")
            )]
        );
    }
}

#[test]
fn legacy_elicitation_needs_capability() {
    let mut p = Peer::new(example::server());
    p.initialize("2025-11-25", json!({"sampling": {}}));
    assert_eq!(
        p.call(json!(1), "tools/call", json!({"name": "confirm"})),
        ok(
            json!(1),
            error_text(
                "tool `confirm` needs input, but the client did not declare the elicitation capability"
            )
        )
    );
}

#[test]
fn cancellation_drops_the_call() {
    let mut p = Peer::new(example::server());
    p.initialize("2025-11-25", json!({"elicitation": {"form": {}}}));
    let out = p.send(
        json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "confirm"}}),
    );
    assert_eq!(out[0]["method"], "elicitation/create");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": "c", "reason": "user"}});
    assert_eq!(
        p.send(cancel.clone()),
        [
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 0, "reason": "the tool call was cancelled"}})
        ]
    );
    assert!(
        p.send(json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept"}}))
            .is_empty()
    );
    assert!(p.send(cancel).is_empty());
    // `hang` never answers in either era; cancelling it is harmless.
    assert!(
        p.send(
            json!({"jsonrpc": "2.0", "id": "h", "method": "tools/call", "params": {"name": "hang"}})
        )
        .is_empty()
    );
    let hang = modern(json!({"name": "hang"}), json!({}));
    assert!(
        p.send(json!({"jsonrpc": "2.0", "id": "m", "method": "tools/call", "params": hang}))
            .is_empty()
    );
    assert!(p.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "m"}})).is_empty());
}

#[test]
fn pagination() {
    let mut p = Peer::new(example::server_with(|c| c.page_size = Some(2)));
    p.initialize("2025-11-25", json!({}));
    let mut cursor = Value::Null;
    let mut pages = Vec::new();
    loop {
        let reply = p.call(json!(1), "tools/list", json!({"cursor": cursor}));
        let result = &reply["result"];
        let names: Vec<String> = result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        pages.push(names);
        match result.get("nextCursor") {
            Some(next) => cursor = next.clone(),
            None => break,
        }
    }
    assert_eq!(
        pages,
        [
            vec!["echo", "add"],
            vec!["confirm", "hang"],
            vec!["fail", "media"]
        ]
    );
    for bad in [
        json!("3"),
        json!("0"),
        json!("02"),
        json!("6"),
        json!("x"),
        json!(2),
    ] {
        assert_eq!(
            p.call(json!(2), "tools/list", json!({"cursor": bad})),
            err(json!(2), -32602, "Invalid cursor"),
            "{bad}"
        );
    }
    // Modern pages carry the cache hints; one-page lists reject every cursor.
    let reply = p.call(
        json!(3),
        "tools/list",
        modern(json!({"cursor": "4"}), json!({})),
    );
    assert_eq!(reply["result"]["tools"][0]["name"], "fail");
    assert_eq!(reply["result"]["ttlMs"], 60000);
    let mut p = Peer::new(example::server());
    let reply = p.call(
        json!(4),
        "prompts/list",
        modern(json!({"cursor": "2"}), json!({})),
    );
    assert_eq!(reply["error"]["code"], -32602);
}

#[test]
fn unknown_tool_prompt_resource_method() {
    let mut p = Peer::new(example::server());
    let reply = p.call(
        json!(1),
        "tools/call",
        modern(json!({"name": "nope"}), json!({})),
    );
    assert_eq!(reply, err(json!(1), -32602, "Unknown tool: nope"));
    let reply = p.call(
        json!(2),
        "prompts/get",
        modern(json!({"name": "nope"}), json!({})),
    );
    assert_eq!(reply, err(json!(2), -32602, "Unknown prompt: nope"));
    let reply = p.call(
        json!(3),
        "prompts/get",
        modern(json!({"name": "greet"}), json!({})),
    );
    assert_eq!(
        reply,
        err(
            json!(3),
            -32602,
            "Missing required argument `name` for prompt `greet`"
        )
    );
    let reply = p.call(
        json!(4),
        "resources/read",
        modern(json!({"uri": "example://nope"}), json!({})),
    );
    assert_eq!(
        reply["error"],
        json!({"code": -32602, "message": "Resource not found", "data": {"uri": "example://nope"}})
    );
    let reply = p.call(
        json!(5),
        "completion/complete",
        modern(json!({}), json!({})),
    );
    assert_eq!(
        reply,
        err(
            json!(5),
            -32602,
            "`ref` must be a ref/prompt or ref/resource"
        )
    );
    let reply = p.call(
        json!(6),
        "completion/complete",
        modern(
            json!({"ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "name", "value": "g"}}),
            json!({}),
        ),
    );
    assert_eq!(
        reply["result"]["completion"],
        json!({"values": ["Grace"], "total": 1, "hasMore": false})
    );

    p.initialize("2025-11-25", json!({}));
    let reply = p.call(json!(6), "tools/call", json!({"name": "nope"}));
    assert_eq!(reply, err(json!(6), -32602, "Unknown tool: nope"));
    let reply = p.call(json!(7), "resources/read", json!({"uri": "example://nope"}));
    assert_eq!(
        reply["error"],
        json!({"code": -32002, "message": "Resource not found", "data": {"uri": "example://nope"}})
    );
}

#[test]
fn resources_and_prompts() {
    let mut p = Peer::new(example::server());
    let reply = p.call(
        json!(1),
        "resources/read",
        modern(json!({"uri": "example://readme"}), json!({})),
    );
    assert_eq!(
        reply,
        ok(
            json!(1),
            json!({
                "contents": [{"uri": "example://readme", "mimeType": "text/plain", "text": example::README}],
                "resultType": "complete", "ttlMs": 60000, "cacheScope": "public", "_meta": info_meta(),
            })
        )
    );
    p.initialize("2025-11-25", json!({}));
    assert_eq!(
        p.call(json!(2), "resources/list", json!({})),
        ok(
            json!(2),
            json!({"resources": [{"uri": "example://readme", "name": "readme", "mimeType": "text/plain"}]})
        )
    );
    let reply = p.call(
        json!(3),
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": "Ada"}}),
    );
    assert_eq!(
        reply["result"]["messages"][0]["content"]["text"],
        "Please greet Ada warmly."
    );
    assert_eq!(
        p.call(json!(4), "resources/templates/list", json!({})),
        ok(
            json!(4),
            json!({"resourceTemplates": [{"uriTemplate": "example://greeting/{name}",
                "name": "greeting", "mimeType": "text/plain"}]})
        )
    );
}

#[test]
fn example_tools() {
    let mut p = Peer::new(example::server());
    let mut call = |args: Value| {
        let name = args["name"].clone();
        p.call(json!(1), "tools/call", modern(args, json!({})))["result"]["content"][0]["text"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("{name}"))
    };
    assert_eq!(
        call(json!({"name": "echo", "arguments": {"text": "hi\nthere"}})),
        "hi\nthere"
    );
    assert_eq!(
        call(json!({"name": "add", "arguments": {"a": 2.5, "b": 0.5}})),
        "3"
    );
    assert_eq!(
        call(json!({"name": "add", "arguments": {"a": 1.5, "b": 1}})),
        "2.5"
    );
    assert_eq!(
        call(json!({"name": "add", "arguments": {"a": -4, "b": 1}})),
        "-3"
    );
    assert_eq!(
        call(json!({"name": "add", "arguments": {"a": "x", "b": 1}})),
        "`a` and `b` must be numbers"
    );
}

#[test]
fn malformed_lines() {
    let mut p = Peer::new(example::server_with(|c| c.limits.max_line_bytes = 64));
    assert_eq!(
        p.raw(b"this is not json\n"),
        [json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})]
    );
    assert_eq!(p.raw(b"\xff\xfe\n")[0]["error"]["code"], -32700);
    assert_eq!(
        p.raw(b"{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}\n"),
        [err(
            json!(5),
            -32600,
            "Invalid request: `jsonrpc` must be \"2.0\""
        )]
    );
    assert_eq!(p.raw(b"[1,2]\n")[0]["error"]["code"], -32600);
    assert_eq!(
        p.raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[]}\n")[0]["error"]["code"],
        -32602
    );
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}\n",
        "a".repeat(100)
    );
    let mut input = long.into_bytes();
    input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
    assert_eq!(
        p.raw(&input),
        [
            err(
                json!(1),
                -32600,
                "Invalid request: message longer than 64 bytes"
            ),
            ok(json!(2), json!({})),
        ]
    );
    // The id is read from the end when the start does not show it; when neither does,
    // the answer has id null.
    let id_last = format!(
        "{{\"params\":{{\"x\":\"{}\"}},\"method\":\"ping\",\"jsonrpc\":\"2.0\",\"id\":\"z\"}}\n",
        "a".repeat(100)
    );
    assert_eq!(p.raw(id_last.as_bytes())[0]["id"], json!("z"));
    let id_inside = format!(
        "{{\"params\":{{\"x\":\"{}\"}},\"id\":\"z\",\"method\":\"ping\",\"jsonrpc\":\"2.0\"}}\n",
        "a".repeat(100)
    );
    assert_eq!(p.raw(id_inside.as_bytes())[0]["id"], json!(null));
}

/// `{"a":[[…]]}` with `levels` levels in all.
fn nested_object(levels: usize) -> String {
    let arrays = levels - 1;
    format!("{{\"a\":{}{}}}", "[".repeat(arrays), "]".repeat(arrays))
}

#[test]
fn deep_messages_are_refused_before_decoding() {
    let mut p = Peer::new(example::server());
    // The message is level 1, params level 2: params of 63 levels make 64, the default.
    let at_limit = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{}}}\n",
        nested_object(63)
    );
    assert_eq!(p.raw(at_limit.as_bytes()), [ok(json!(1), json!({}))]);
    for levels in [64, 100_000] {
        let over = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{}}}\n",
            nested_object(levels)
        );
        assert_eq!(
            p.raw(over.as_bytes()),
            [err(
                json!(2),
                -32600,
                "Invalid request: nesting deeper than 64 levels (max_nesting_depth)"
            )],
            "{levels}"
        );
    }
    // Decoded messages handed in directly are checked too.
    let text = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{}}}",
        nested_object(1000)
    );
    let message = Message::decode(text.as_bytes()).unwrap();
    p.server.handle_message(p.now, message);
    assert_eq!(
        p.raw(b""),
        [err(
            json!(3),
            -32600,
            "Invalid request: nesting deeper than 64 levels (max_nesting_depth)"
        )]
    );
}

#[test]
fn a_deep_answer_to_an_elicitation_fails_the_waiting_call_at_once() {
    let mut p = Peer::new(example::server_with(|c| c.limits.max_nesting_depth = 8));
    p.initialize("2025-11-25", json!({"elicitation": {}}));
    let out = p.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                            "params": {"name": "confirm", "arguments": {}}}));
    assert_eq!(out[0]["method"], "elicitation/create");
    let answer = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}}\n",
        nested_object(8)
    );
    assert_eq!(
        p.raw(answer.as_bytes()),
        [ok(
            json!(7),
            error_text(
                "input request `confirm` failed: Invalid request: nesting deeper than 8 levels (max_nesting_depth) (code -32600)"
            )
        )]
    );
}

#[test]
fn chunking_does_not_matter() {
    let input = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}\r\n\
        garbage\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":1,\"b\":2}}}\n";
    let whole = Peer::new(example::server()).raw(input);
    assert_eq!(whole.len(), 3);
    let mut p = Peer::new(example::server());
    let bytewise: Vec<Value> = input.iter().flat_map(|b| p.raw(&[*b])).collect();
    assert_eq!(bytewise, whole);
}

#[test]
fn eof_and_poll_message() {
    let mut s = example::server();
    let now = some_instant();
    s.handle_input(
        now,
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\"",
    );
    s.handle_eof(now);
    assert!(!s.is_closed(), "output still queued");
    assert_eq!(
        s.poll_message().unwrap(),
        br#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    assert!(s.poll_message().is_none());
    assert!(s.is_closed());
    s.handle_input(now, b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
    assert!(s.poll_message().is_none());
}

#[test]
fn legacy_only_and_modern_only_configs() {
    let mut p = Peer::new(example::server_with(|c| {
        c.versions.accepted = vec![ProtocolVersion::V2025_11_25];
    }));
    let reply = p.call(json!(1), "server/discover", modern(json!({}), json!({})));
    assert_eq!(reply, err(json!(1), -32600, "Server not initialized"));
    let mut p = Peer::new(example::server_with(|c| {
        c.versions.accepted = vec![ProtocolVersion::V2026_07_28];
    }));
    assert_eq!(
        p.call(json!(1), "tools/list", json!({}))["error"]["code"],
        -32602
    );
    assert_eq!(p.call(json!(2), "ping", json!({}))["error"]["code"], -32602);
}

#[test]
fn fuzzish_inputs_never_panic() {
    let mut s = example::server();
    let now = some_instant();
    let samples: [&[u8]; 12] = [
        b"{}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":1,\"message\":\"\"}}\n",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":[1]}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"confirm\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{}}},\"requestState\":\"plain1:{\\\"method\\\":\\\"tools/call\\\",\\\"name\\\":\\\"confirm\\\",\\\"round\\\":4294967295,\\\"asked\\\":[],\\\"inputs\\\":{}}\"}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":1e308,\"b\":1e308}}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":18446744073709551615,\"method\":\"ping\"}\n",
        b"\n\n\r\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":null}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}},\"uri\":5}}\n",
    ];
    let mut out = Vec::new();
    for sample in samples {
        s.handle_input(now, sample);
        while s.poll_transmit(now, &mut out).is_some() {}
    }
    for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        serde_json::from_slice::<Value>(line).unwrap();
    }
}

#[test]
fn task_tools_declare_tasks_and_refuse_undeclared_task_requests() {
    let ext = crate::client::TASKS_EXTENSION;
    // Without a task tool, nothing about tasks.
    let mut p = Peer::new(example::server());
    let init = p.initialize("2025-11-25", json!({}));
    assert!(init["result"]["capabilities"].get("tasks").is_none());
    let r = p.call(json!(1), "tasks/list", json!({}));
    assert_eq!(r["error"]["code"], -32601);

    let mut p = Peer::new(example::with_tasks());
    let init = p.initialize("2025-11-25", json!({}));
    assert_eq!(
        init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
        json!({})
    );
    let list = p.call(json!(1), "tools/list", json!({}));
    let slow = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "slow")
        .unwrap()
        .clone();
    assert_eq!(slow["execution"]["taskSupport"], "optional");
    let created = p.call(
        json!(2),
        "tools/call",
        json!({"name":"slow","arguments":{"text":"a"},"task":{}}),
    );
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    // tasks/result counts as the polls and the outcome is due at once: the result,
    // tagged with its task, then the status the session had not seen yet.
    let out = p.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result",
        "params": {"taskId": id}}));
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[1]["method"], "notifications/tasks/status");
    assert_eq!(out[1]["params"]["status"], "completed");
    let r = out[0].clone();
    assert_eq!(r["result"]["content"][0]["text"], "a");
    assert_eq!(
        r["result"]["_meta"][crate::client::RELATED_TASK_KEY]["taskId"],
        id
    );
    let r = p.call(json!(4), "tasks/cancel", json!({"taskId": id}));
    assert_eq!(r["error"]["code"], -32602, "already terminal");

    let mut p = Peer::new(example::with_tasks());
    let d = p.call(
        json!(1),
        "server/discover",
        json!({"_meta": meta(json!({}))}),
    );
    assert_eq!(d["result"]["capabilities"]["extensions"][ext], json!({}));
    // Not declared: a plain call, and task requests are refused with -32021.
    let r = p.call(
        json!(2),
        "tools/call",
        json!({"name":"slow","arguments":{"text":"b"},"_meta": meta(json!({}))}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "b");
    let r = p.call(
        json!(3),
        "tasks/get",
        json!({"taskId":"task-1","_meta": meta(json!({}))}),
    );
    assert_eq!(r["error"]["code"], -32021);
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"]["extensions"][ext],
        json!({})
    );
    let declared = meta(json!({"extensions": {ext: {}}}));
    let r = p.call(
        json!(4),
        "tools/call",
        json!({"name":"slow","arguments":{"text":"c"},"_meta": declared}),
    );
    assert_eq!(r["result"]["resultType"], "task");
    assert_eq!(r["result"]["pollIntervalMs"], 100);
    let id = r["result"]["taskId"].clone();
    for (n, status) in [(5, "working"), (6, "completed")] {
        let r = p.call(
            json!(n),
            "tasks/get",
            json!({"taskId": id, "_meta": declared}),
        );
        assert_eq!(r["result"]["status"], status);
        assert_eq!(r["result"]["resultType"], "complete");
    }
    let r = p.call(
        json!(7),
        "tasks/get",
        json!({"taskId": id, "_meta": declared}),
    );
    assert_eq!(r["result"]["result"]["content"][0]["text"], "c");
    let r = p.call(
        json!(8),
        "tasks/result",
        json!({"taskId": id, "_meta": declared}),
    );
    assert_eq!(
        r["error"]["code"], -32601,
        "no tasks/result in the extension"
    );
}

#[test]
fn the_fuzzed_server_serves_many_tasks_within_the_reply_bound() {
    let mut input = String::new();
    input.push_str(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"0"}}}"#);
    input.push('\n');
    input.push_str(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    input.push('\n');
    for i in 1..80 {
        input.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"later","arguments":{{"text":"{i}"}},"task":{{}}}}}}"#
        ));
        input.push('\n');
    }
    for (i, m) in [
        "tasks/list",
        "tasks/get",
        "tasks/cancel",
        "tasks/result",
        "tasks/get",
    ]
    .iter()
    .enumerate()
    {
        input.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"{m}","params":{{"taskId":"task-79"}}}}"#,
            100 + i
        ));
        input.push('\n');
    }
    // Legacy only (variant 1), in pieces of 8 bytes, then the end of input.
    let mut data = vec![0x80 | (1 << 5) | 7];
    data.extend_from_slice(input.as_bytes());
    crate::fuzzing::server::server_machine(&data);
}

#[test]
fn the_example_skill_is_served_with_its_digests() {
    use crate::skills::{Skill, SkillLimits};
    let mut p = Peer::new(example::server());
    let listed = p.call(json!(1), "skills/list", modern(json!({}), json!({})));
    let result = &listed["result"];
    assert_eq!(result["ttlMs"], 60000, "cacheable: {listed}");
    let skill = Skill::from_json(&result["skills"][0], &SkillLimits::default()).unwrap();
    assert_eq!(skill.uri, "skill://greeting/SKILL.md");
    assert_eq!(
        skill.file("skill://greeting/SKILL.md").unwrap().digest,
        crate::auth::crypto::sha256(example::GREETING_SKILL.as_bytes())
    );
    let got = p.call(
        json!(2),
        "skills/get",
        modern(json!({"uri": "skill://greeting/SKILL.md"}), json!({})),
    );
    assert_eq!(got["result"]["skill"], result["skills"][0]);
    for (method, uri) in [
        ("skills/get", "skill://nothing/SKILL.md"),
        ("resources/directory/read", "skill://greeting/SKILL.md"),
        ("resources/directory/read", "skill://nothing"),
    ] {
        let reply = p.call(json!(3), method, modern(json!({"uri": uri}), json!({})));
        assert_eq!(reply["error"]["code"], -32602, "{method} {uri}: {reply}");
    }
    let dir = p.call(
        json!(4),
        "resources/directory/read",
        modern(json!({"uri": "skill://greeting/templates"}), json!({})),
    );
    assert_eq!(
        dir["result"]["resources"],
        json!([{"uri": "skill://greeting/templates/formal.md", "name": "formal.md",
                "mimeType": "text/markdown"}])
    );
}

#[test]
fn a_kept_meta_serves_only_requests_whose_meta_has_the_same_text() {
    let mut p = Peer::new(example::server());
    let echo = |meta: Value| json!({"_meta": meta, "name": "echo", "arguments": {"text": "hi"}});
    let current = echo(meta(json!({})));
    let retired = echo(json!({PV: "2025-11-25", CC: {}}));
    let current_text = serde_json::to_string(&current["_meta"]).unwrap();
    for round in 0..3 {
        let reply = p.call(json!(1), "tools/call", current.clone());
        assert_eq!(
            reply["result"]["content"][0]["text"], "hi",
            "{round}: {reply}"
        );
        assert!(p.server.keeps_meta(&current_text), "{round}");
        let reply = p.call(json!(2), "tools/call", retired.clone());
        assert_eq!(reply["error"]["code"], -32022, "{round}: {reply}");
        assert!(!p.server.keeps_meta(&current_text), "{round}");
    }
    // The same members written with other spacing are another text: read, not taken.
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{{\"_meta\": {} \
         ,\"name\":\"echo\",\"arguments\":{{\"text\":\"spaced\"}}}}}}\n",
        current_text.replace(',', ", ")
    );
    let reply = p.raw(line.as_bytes()).remove(0);
    assert_eq!(reply["result"]["content"][0]["text"], "spaced", "{reply}");
    assert!(!p.server.keeps_meta(&current_text));
    let reply = p.call(json!(4), "tools/call", current.clone());
    assert_eq!(reply["result"]["content"][0]["text"], "hi", "{reply}");
    assert!(p.server.keeps_meta(&current_text));
}

#[test]
fn requests_read_with_a_kept_meta_get_the_replies_of_requests_read_in_full() {
    let echo = |meta: Value| json!({"_meta": meta, "name": "echo", "arguments": {"text": "hi"}});
    let request = |id: usize, method: &str, params: &Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let tasks = json!({"tasks": {"requests": {"tools": {"call": {}}}}});
    let modern_requests = [
        ("tools/call", echo(meta(json!({})))),
        ("tools/call", echo(meta(tasks.clone()))),
        ("tools/list", json!({"_meta": meta(json!({}))})),
        ("tools/call", echo(json!({PV: "2025-11-25", CC: {}}))),
        (
            "tools/call",
            echo(json!({PV: "2026-07-28", CC: {}, "io.modelcontextprotocol/logLevel": "loud"})),
        ),
        ("tools/call", echo(json!({PV: "2026-07-28"}))),
        ("server/discover", json!({"_meta": meta(tasks)})),
        (
            "tools/call",
            json!({"_meta": meta(json!({})), "name": "add", "arguments": {"a": 2, "b": 3}}),
        ),
        (
            "tools/call",
            json!({"_meta": meta(json!({})), "name": "fail"}),
        ),
        ("tools/call", json!({"_meta": [1], "name": "echo"})),
    ];
    let (mut kept, mut read) = (example::server(), example::server());
    let now = some_instant();
    // A walk over the requests that repeats some in a row and interleaves the others.
    for step in 0..60_usize {
        let (method, params) = &modern_requests[(step * step / 3) % modern_requests.len()];
        let bytes = serde_json::to_vec(&request(step, method, params)).unwrap();
        kept.handle_json(now, &bytes);
        read.handle_message(now, Message::decode(&bytes).unwrap());
        let replies = |s: &mut Server| std::iter::from_fn(|| s.poll_message()).collect::<Vec<_>>();
        let (a, b) = (replies(&mut kept), replies(&mut read));
        assert!(!a.is_empty(), "{step}: no reply");
        assert_eq!(
            a,
            b,
            "{step} {method} {params}: {:?}",
            String::from_utf8_lossy(&a[0])
        );
    }
}

/// A first try's answers go to the handler and into the state of the next round: never
/// more answers than a call could be asked for, and never a state too large to open
/// again (600,000 unasked answers made a 10 MB `requestState` the server then refused).
#[test]
fn a_first_tries_answers_are_bounded() {
    let caps = json!({"elicitation": {"form": {}}});
    let answers = |n: usize, size: usize| -> Value {
        let filler = "x".repeat(size);
        (0..n)
            .map(|i| {
                (
                    format!("k{i}"),
                    json!({"action": "accept", "content": {"f": filler}}),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let limits = crate::server::ServerLimits::default();
    let most = limits.max_inputs_per_round * limits.max_input_rounds as usize;
    let mut sealed = example::server();
    sealed.seal_request_states([5; 32], 1_800_000_000_000);
    for (server, is_sealed) in [(example::server(), false), (sealed, true)] {
        let mut p = Peer::new(server);
        let try_with = |p: &mut Peer, inputs: Value| {
            let params = json!({"name": "confirm", "inputResponses": inputs});
            p.call(json!(1), "tools/call", modern(params, caps.clone()))
        };
        let r = try_with(&mut p, answers(most + 1, 0));
        assert_eq!(r["error"]["code"], -32602, "{r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("`inputResponses` carries 161 answers"),
            "{message}"
        );
        let r = try_with(&mut p, answers(100, 4000));
        assert_eq!(r["error"]["code"], -32602, "{r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("more than 262144 bytes as JSON"),
            "{message}"
        );
        // Under the JSON bound, over it once sealed (a third more in base64).
        let r = try_with(&mut p, answers(60, 4000));
        if is_sealed {
            let message = r["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("as `requestState`"), "{message}");
        } else {
            assert_eq!(r["result"]["resultType"], "input_required");
        }
        // Under both bounds, the state issued opens again.
        let r = try_with(&mut p, answers(most, 100));
        let state = r["result"]["requestState"].as_str().expect("a state");
        let retry = json!({"name": "confirm", "requestState": state,
            "inputResponses": {"confirm": {"action": "decline"}}});
        let r = p.call(json!(2), "tools/call", modern(retry, caps.clone()));
        assert_eq!(r, ok(json!(2), complete(text("declined"))));
    }
}

/// An error names what a client sent wrong without echoing all of it: a method, a tool
/// or prompt name, a URI, a version or an answer key as long as the message allows came
/// back whole (a 7 MB key made a 7 MB answer), twice for a version (message and data).
#[test]
fn errors_echo_at_most_a_clip_of_what_was_sent() {
    let long = "Z".repeat(100_000);
    let caps = json!({"elicitation": {"form": {}}});
    let mut bad_answer = serde_json::Map::new();
    bad_answer.insert(long.clone(), json!(1));
    let cases = [
        (long.as_str(), modern(json!({}), caps.clone())),
        ("tools/call", modern(json!({"name": long}), caps.clone())),
        ("prompts/get", modern(json!({"name": long}), caps.clone())),
        ("resources/read", modern(json!({"uri": long}), caps.clone())),
        (
            "tools/call",
            modern(
                json!({"name": "confirm", "inputResponses": bad_answer}),
                caps.clone(),
            ),
        ),
        (
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": long,
                "io.modelcontextprotocol/clientCapabilities": {}}}),
        ),
    ];
    for (method, params) in cases {
        let mut p = Peer::new(example::server());
        let reply = p.call(json!(1), method, params);
        assert!(
            reply["error"]["code"].is_i64(),
            "{method:.40}: not an error"
        );
        let text = reply.to_string();
        assert!(text.contains("ZZZZ"), "{method:.40}: names nothing: {text}");
        assert!(text.len() < 1024, "{method:.40}: {} bytes", text.len());
    }
    // A legacy initialize with an unknown version names it clipped too.
    let mut p = Peer::new(example::server_with(|c| {
        c.versions.accepted = vec![ProtocolVersion::V2026_07_28];
    }));
    let reply = p.call(
        json!(0),
        "initialize",
        json!({"protocolVersion": long, "capabilities": {}, "clientInfo": info()}),
    );
    let text = reply.to_string();
    assert!(
        text.contains("ZZZZ") && text.len() < 1024,
        "{} bytes",
        text.len()
    );
}

/// A malformed response to no request of the server is answered with id null: answered
/// with its id, the client took the error for the answer to its own request of that id
/// (request 5 got two answers). A message whose `method` is not a string is valid JSON:
/// an invalid request answered with its id, not a parse error.
#[test]
fn malformed_responses_and_members_are_answered_as_what_they_are() {
    let mut p = Peer::new(example::server());
    p.initialize("2025-11-25", json!({"elicitation": {}}));
    let out = p.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                            "params": {"name": "confirm", "arguments": {}}}));
    assert_eq!(out[0]["method"], "elicitation/create");
    let asked = out[0]["id"].clone();
    assert_ne!(asked, json!(5));
    let reply = p.raw(b"{\"jsonrpc\":\"2.0\",\"id\":5}\n");
    assert_eq!(reply.len(), 1, "{reply:?}");
    assert_eq!(reply[0]["id"], json!(null), "{reply:?}");
    assert_eq!(reply[0]["error"]["code"], -32600);
    let message = reply[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("response to no request"), "{message}");
    // Request 5 gets its one answer when the elicitation does.
    let out = p.send(json!({"jsonrpc": "2.0", "id": asked, "result": {"action": "decline"}}));
    assert_eq!(out, [ok(json!(5), text("declined"))]);
    for line in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":5}\n"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{},\"jsonrpc\":7}\n",
    ] {
        let reply = p.raw(line);
        assert_eq!(reply[0]["id"], json!(3), "{reply:?}");
        assert_eq!(reply[0]["error"]["code"], -32600, "{reply:?}");
    }
    let reply = p.raw(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":5}\n");
    let message = reply[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("wrong type"), "{message}");
}
