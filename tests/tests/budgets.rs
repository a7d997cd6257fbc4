//! Byte budgets: what a hostile server can make the client machine hold, measured by the
//! machine itself (`Client::retained_bytes`), each limit at its edge, and a flood of every
//! retained kind at once staying under the documented budget.

use mcp_proto::client::{
    CallError, CallRequest, ClientConfig, CloseReason, ConnId, Event, MAX_ECHO_BYTES,
};
use mcp_proto::limits::Limits;
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::EraMode;
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

fn legacy_init(m: &Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"protocolVersion":"2025-11-25",
        "capabilities":{},"serverInfo":{"name":"s","version":"1"}}})
    .to_string()
}

/// A legacy server that answers `initialize` and nothing else: the tests write its
/// other lines themselves.
fn silent_server() -> impl mcp_tests::Peer {
    Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        _ => Vec::new(),
    })
}

fn connected(limits: Limits) -> Sim {
    let config = ClientConfig::new("budgets", "1.0")
        .era_mode(EraMode::Legacy)
        .capabilities(ClientCapabilities::with_elicitation())
        .limits(limits);
    let mut sim = Sim::new(config, silent_server());
    sim.connect();
    sim.events.clear();
    sim
}

/// Writes `line` to the client as if the server had printed it, polling nothing.
fn feed(sim: &mut Sim, line: &str) {
    let mut bytes = line.as_bytes().to_vec();
    bytes.push(b'\n');
    sim.client.handle_read(sim.now, ConnId::STDIO, &bytes);
}

fn notification(size: usize) -> String {
    json!({"jsonrpc":"2.0","method":"notifications/message",
        "params":{"level":"info","data":"x".repeat(size)}})
    .to_string()
}

fn elicitation(id: u64, size: usize) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"elicitation/create","params":{
        "message":"x".repeat(size),
        "requestedSchema":{"type":"object","properties":{}}}})
    .to_string()
}

/// What the client wrote since the last call, as JSON values.
fn written(sim: &mut Sim) -> Vec<Value> {
    let mut wire = Vec::new();
    while sim.client.poll_transmit(sim.now, &mut wire).is_some() {}
    wire.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("client wrote bad JSON"))
        .collect()
}

fn dropped(events: &[Event]) -> u64 {
    events
        .iter()
        .map(|e| match e {
            Event::NotificationsDropped { count } => *count,
            _ => 0,
        })
        .sum()
}

#[test]
fn unpolled_notifications_are_bounded_in_bytes_not_only_in_count() {
    let mut limits = Limits::default();
    limits.max_queued_event_bytes = MIB;
    let mut sim = connected(limits);
    let before = sim.client.retained_bytes();
    // 32 notifications of 256 KiB: 8 MiB offered, at most 1 MiB kept.
    for _ in 0..32 {
        feed(&mut sim, &notification(256 * KIB));
    }
    let held = sim.client.retained_bytes() - before;
    assert!(held <= MIB + 4 * KIB, "held {held} bytes");
    assert!(
        held >= 3 * 256 * KIB,
        "the first ones are kept: held {held}"
    );
    sim.drain();
    let kept = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::Log { .. }))
        .count();
    assert_eq!(kept, 3);
    assert_eq!(dropped(&sim.events), 29);
    // Once polled, there is room again.
    assert!(sim.client.retained_bytes() <= before);
    sim.events.clear();
    feed(&mut sim, &notification(256 * KIB));
    sim.drain();
    assert!(matches!(sim.events[..], [Event::Log { .. }]));
}

#[test]
fn progress_and_peer_errors_share_the_event_budget() {
    let mut limits = Limits::default();
    limits.max_queued_event_bytes = 64 * KIB;
    let mut sim = connected(limits);
    let call = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("slow", json!({})).with_progress(),
        )
        .unwrap();
    let sent = written(&mut sim);
    let token = sent[0]["params"]["_meta"]["progressToken"].clone();
    for i in 0..200 {
        let progress = json!({"jsonrpc":"2.0","method":"notifications/progress",
            "params":{"progressToken":token,"progress":i,"message":"m".repeat(4 * KIB)}});
        feed(&mut sim, &progress.to_string());
        // A response to an id never used: a peer error, its id cut short.
        let stray = json!({"jsonrpc":"2.0","id":"i".repeat(8 * KIB),"result":{}});
        feed(&mut sim, &stray.to_string());
    }
    assert!(sim.client.retained_bytes() < 80 * KIB);
    feed(
        &mut sim,
        &json!({"jsonrpc":"2.0","id":sent[0]["id"],"result":{"content":[]}}).to_string(),
    );
    sim.drain();
    // The call's own completion is never dropped.
    assert!(sim.completion(call).is_some_and(|r| r.is_ok()));
    let progress = sim
        .events
        .iter()
        .filter(|e| matches!(e, Event::Progress { .. }))
        .count();
    let peer_errors: Vec<String> = sim
        .events
        .iter()
        .filter_map(|e| match e {
            Event::PeerError(p) => Some(p.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        progress > 0 && progress < 20,
        "{progress} progress events kept"
    );
    assert!(!peer_errors.is_empty());
    assert!(peer_errors.iter().all(|e| e.len() < MAX_ECHO_BYTES + 64));
    assert_eq!(
        dropped(&sim.events),
        400 - progress as u64 - peer_errors.len() as u64
    );
}

#[test]
fn the_event_budget_admits_one_largest_message_by_default() {
    let limits = Limits::default();
    assert!(limits.max_queued_event_bytes >= limits.max_message_bytes + 64 * KIB);
    let mut sim = connected(limits);
    feed(&mut sim, &notification(limits_max_payload()));
    sim.drain();
    assert!(matches!(sim.events[..], [Event::Log { .. }]));
}

/// A notification payload just under the default message limit.
fn limits_max_payload() -> usize {
    Limits::default().max_message_bytes - 200
}

/// A `tools/list` page of `items` tools, each exactly `item_bytes` long as written.
fn page(id: &Value, items: usize, item_bytes: usize, next: Option<&str>) -> String {
    let skeleton = json!({"name":"t","inputSchema":{"type":"object"},"description":""});
    let pad = item_bytes - skeleton.to_string().len();
    let tool = json!({"name":"t","inputSchema":{"type":"object"},"description":"d".repeat(pad)});
    assert_eq!(tool.to_string().len(), item_bytes);
    let mut result = json!({"tools": vec![tool; items]});
    if let Some(cursor) = next {
        result["nextCursor"] = json!(cursor);
    }
    json!({"jsonrpc":"2.0","id":id,"result":result}).to_string()
}

#[test]
fn a_listing_is_bounded_in_bytes_at_the_edge() {
    // Two pages of two 10 KiB tools: exactly 40 KiB of items.
    for (limit, fails) in [(40 * KIB, false), (40 * KIB - 1, true)] {
        let mut limits = Limits::default();
        limits.max_list_bytes = limit;
        let mut sim = connected(limits);
        let call = sim.client.call(sim.now, CallRequest::list_tools()).unwrap();
        let first = written(&mut sim);
        feed(&mut sim, &page(&first[0]["id"], 2, 10 * KIB, Some("c1")));
        let second = written(&mut sim);
        assert_eq!(second[0]["params"]["cursor"], "c1");
        feed(&mut sim, &page(&second[0]["id"], 2, 10 * KIB, None));
        sim.drain();
        match sim.completion(call) {
            Some(Err(e)) if fails => {
                assert_eq!(e, CallError::ListTooLong("max_list_bytes"));
                assert!(e.to_string().contains("max_list_bytes"), "{e}");
            }
            Some(Ok(out)) if !fails => assert_eq!(out.items.len(), 4),
            other => panic!("limit {limit}: {other:?}"),
        }
    }
}

fn params_len(size: usize) -> usize {
    let line: Value = serde_json::from_str(&elicitation(1, size)).unwrap();
    line["params"].to_string().len()
}

#[test]
fn legacy_requests_for_input_are_bounded_in_bytes_at_the_edge() {
    let one = params_len(10 * KIB);
    for (limit, accepted) in [(2 * one, 2), (2 * one - 1, 1)] {
        let mut limits = Limits::default();
        limits.max_pending_input_bytes = limit;
        let mut sim = connected(limits);
        for id in 1..=3 {
            feed(&mut sim, &elicitation(id, 10 * KIB));
        }
        let refusals: Vec<Value> = written(&mut sim);
        sim.drain();
        let asked = sim
            .events
            .iter()
            .filter(|e| matches!(e, Event::InputRequested { .. }))
            .count();
        assert_eq!(asked, accepted, "limit {limit}");
        assert_eq!(refusals.len(), 3 - accepted);
        for r in &refusals {
            assert!(r["id"].as_u64().unwrap() > accepted as u64);
            let message = r["error"]["message"].as_str().unwrap();
            assert!(message.contains("bytes"), "{message}");
        }
    }
}

#[test]
fn a_refusal_does_not_echo_a_huge_method_name() {
    let mut sim = connected(Limits::default());
    let method = "m".repeat(MIB);
    feed(
        &mut sim,
        &json!({"jsonrpc":"2.0","id":1,"method":method}).to_string(),
    );
    let out = written(&mut sim);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], 1);
    assert!(out[0].to_string().len() < 2 * MAX_ECHO_BYTES);
    sim.drain();
    let report = sim.events.iter().find_map(|e| match e {
        Event::PeerError(p) => Some(p.to_string()),
        _ => None,
    });
    assert!(report.is_some_and(|r| r.len() < 3 * MAX_ECHO_BYTES));
}

#[test]
fn a_request_whose_id_is_too_long_to_echo_is_not_answered() {
    let mut sim = connected(Limits::default());
    for (len, answered) in [(MAX_ECHO_BYTES, true), (MAX_ECHO_BYTES + 1, false)] {
        let id = "i".repeat(len);
        feed(
            &mut sim,
            &json!({"jsonrpc":"2.0","id":id,"method":"ping"}).to_string(),
        );
        assert_eq!(
            written(&mut sim).len(),
            usize::from(answered),
            "id of {len}"
        );
    }
}

/// A server floods every kind the client retains, nobody polls, and the machine's own
/// count stays under the sum of the budgets after every line.
#[test]
fn a_flood_of_every_retained_kind_stays_under_the_budget() {
    let mut limits = Limits::default();
    limits.max_message_bytes = 256 * KIB;
    limits.max_queued_event_bytes = MIB;
    limits.max_list_bytes = MIB;
    limits.max_pending_input_bytes = MIB;
    let budget = limits.max_queued_event_bytes
        + limits.max_list_bytes
        + limits.max_pending_input_bytes
        + 2 * limits.max_message_bytes // a line being read, a listing's last page
        + 256 * KIB; // refusals waiting to be written, bookkeeping
    let mut sim = connected(limits);
    let list = sim.client.call(sim.now, CallRequest::list_tools()).unwrap();
    let progress = sim
        .client
        .call(
            sim.now,
            CallRequest::call_tool("slow", json!({})).with_progress(),
        )
        .unwrap();
    let sent = written(&mut sim);
    let (list_id, token) = (
        sent[0]["id"].clone(),
        sent[1]["params"]["_meta"]["progressToken"].clone(),
    );
    let mut offered = 0;
    let mut peak = 0;
    let mut check = |sim: &mut Sim, line: String| {
        offered += line.len();
        feed(sim, &line);
        peak = peak.max(sim.client.retained_bytes());
    };
    let mut next_list = list_id;
    for i in 0..64u64 {
        check(&mut sim, notification(100 * KIB));
        let p = json!({"jsonrpc":"2.0","method":"notifications/progress",
            "params":{"progressToken":token,"progress":i,"message":"p".repeat(100 * KIB)}});
        check(&mut sim, p.to_string());
        let stray =
            json!({"jsonrpc":"2.0","id":format!("{i}{}", "s".repeat(100 * KIB)),"result":{}});
        check(&mut sim, stray.to_string());
        check(&mut sim, elicitation(1000 + i, 100 * KIB));
        if sim.completion(list).is_none() {
            let cursor = format!("c{i}");
            check(&mut sim, page(&next_list, 2, 100 * KIB, Some(&cursor)));
            if let Some(m) = written(&mut sim)
                .iter()
                .find(|m| m["method"] == "tools/list")
            {
                next_list = m["id"].clone();
            }
        }
        written(&mut sim);
    }
    assert!(offered > 30 * MIB, "offered {offered}");
    assert!(peak <= budget, "peak {peak} > budget {budget}");
    sim.drain();
    assert!(matches!(
        sim.completion(list),
        Some(Err(CallError::ListTooLong("max_list_bytes")))
    ));
    assert!(
        sim.completion(progress).is_none(),
        "the call is still running"
    );
    assert!(dropped(&sim.events) > 0);
}

fn ping(id: u64) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"ping"}).to_string()
}

/// The bytes of the client's answer to `ping(id)`, newline included.
fn pong_len(id: u64) -> usize {
    json!({"jsonrpc":"2.0","id":id,"result":{}})
        .to_string()
        .len()
        + 1
}

#[test]
fn a_server_that_does_not_read_its_stdin_is_cut_off_at_the_output_budget() {
    let answers = 10;
    for (slack, closes) in [(0, false), (-1, true)] {
        let mut limits = Limits::default();
        limits.max_queued_output_bytes = (answers * pong_len(100)).saturating_add_signed(slack);
        let mut sim = connected(limits);
        // The driver hands everything out, and the server reads none of it.
        for id in 100..100 + answers as u64 {
            feed(&mut sim, &ping(id));
            written(&mut sim);
        }
        sim.drain();
        let closed = sim.events.iter().find_map(|e| match e {
            Event::Closed { reason } => Some(reason.clone()),
            _ => None,
        });
        if closes {
            assert!(
                matches!(closed, Some(CloseReason::PeerNotReading { waiting }) if waiting == answers * pong_len(100)),
                "{closed:?}"
            );
            let text = closed.unwrap().to_string();
            assert!(text.contains("max_queued_output_bytes"), "{text}");
        } else {
            assert!(closed.is_none(), "{closed:?}");
        }
    }
}

#[test]
fn written_bytes_make_room_and_the_callers_own_requests_are_never_refused() {
    let mut limits = Limits::default();
    limits.max_queued_output_bytes = 4 * KIB;
    let mut sim = connected(limits);
    // A server that reads: ten thousand pings, every answer reported written.
    for id in 0..10_000 {
        feed(&mut sim, &ping(id));
        let mut wire = Vec::new();
        while let Some(t) = sim.client.poll_transmit(sim.now, &mut wire) {
            if let mcp_proto::client::Transmit::Write { conn, len } = t {
                sim.client.handle_written(sim.now, conn, len);
            }
        }
    }
    // The caller's own requests, unread, far past the budget: still sent.
    for _ in 0..20 {
        let big = json!({"blob": "b".repeat(KIB)});
        sim.client
            .call(sim.now, CallRequest::call_tool("t", big))
            .unwrap();
    }
    assert_eq!(written(&mut sim).len(), 20);
    sim.drain();
    assert!(!sim.events.iter().any(|e| matches!(e, Event::Closed { .. })));
}

fn url_elicitation(id: u64, elicitation_id: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"elicitation/create","params":{
        "mode":"url","message":"Sign in","url":"https://example.com/f",
        "elicitationId":elicitation_id}})
    .to_string()
}

#[test]
fn url_elicitation_ids_are_bounded_and_counted_until_completed() {
    // The id of a URL-mode elicitation is kept after its request was answered, until
    // the server's completion notice, which a hostile server never sends: a long one
    // is refused, and those kept count in what the client retains.
    let mut caps = ClientCapabilities::with_elicitation();
    caps.elicitation_url = true;
    let config = ClientConfig::new("budgets", "1.0")
        .era_mode(EraMode::Legacy)
        .capabilities(caps);
    let mut sim = Sim::new(config, silent_server());
    sim.connect();
    sim.events.clear();
    let _ = written(&mut sim);
    let before = sim.client.retained_bytes();

    feed(&mut sim, &url_elicitation(1, &"i".repeat(64 * KIB)));
    sim.drain();
    assert!(
        !(sim.events.iter()).any(|e| matches!(e, Event::InputRequested { .. })),
        "{:?}",
        sim.events
    );
    let sent = written(&mut sim);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["id"], 1);
    assert_eq!(sent[0]["error"]["code"], -32602, "{sent:?}");
    let message = sent[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("elicitationId"), "{message}");

    // Many ids of the longest length accepted, each answered: each is kept, and counted.
    let long = mcp_proto::client::MAX_ELICITATION_ID_BYTES;
    for n in 0..64u64 {
        sim.events.clear();
        let id = format!("{n:04}{}", "i".repeat(long - 4));
        feed(&mut sim, &url_elicitation(100 + n, &id));
        sim.drain();
        let Some(input) = sim.events.iter().find_map(|e| match e {
            Event::InputRequested { input, .. } => Some(*input),
            _ => None,
        }) else {
            panic!("{:?}", sim.events)
        };
        sim.client
            .respond(
                sim.now,
                input,
                mcp_proto::client::InputAnswer::Result(json!({"action":"accept"})),
            )
            .unwrap();
        let _ = written(&mut sim);
    }
    let held = sim.client.retained_bytes() - before;
    assert!(held >= 64 * long, "the ids kept are counted: {held}");
    assert!(held <= 64 * (long + 256), "held {held}");
}

/// A legacy server whose `tools/list` is one page of `count` tools with names of `len`
/// bytes, each marked with `taskSupport`; it declares task-augmented calls when `tasks`.
fn listing_server(count: usize, len: usize, tasks: bool) -> impl mcp_tests::Peer {
    Scripted::new(move |m: &Value| match m["method"].as_str() {
        Some("initialize") => {
            let caps = if tasks {
                json!({"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}})
            } else {
                json!({"tools":{}})
            };
            vec![
                json!({"jsonrpc":"2.0","id":m["id"],"result":{"protocolVersion":"2025-11-25",
                "capabilities":caps,"serverInfo":{"name":"s","version":"1"}}})
                .to_string(),
            ]
        }
        Some("tools/list") => {
            let support = ["forbidden", "optional", "required"];
            let tools: Vec<Value> = (0..count)
                .map(|n| {
                    json!({"name":format!("{n:06}{}", "t".repeat(len - 6)),
                    "inputSchema":{"type":"object"},
                    "execution":{"taskSupport":support[n % 3]}})
                })
                .collect();
            vec![json!({"jsonrpc":"2.0","id":m["id"],"result":{"tools":tools}}).to_string()]
        }
        _ => Vec::new(),
    })
}

#[test]
fn the_task_support_learned_from_a_listing_is_counted() {
    // What the latest `tools/list` said of each tool's task support is kept after the
    // listing was handed over (to decide how later calls go): it counts in what the
    // client retains, and a server that takes no task-augmented calls costs nothing.
    let (count, len) = (3000, 1024);
    for tasks in [true, false] {
        let config = ClientConfig::new("budgets", "1.0").era_mode(EraMode::Legacy);
        let mut sim = Sim::new(config, listing_server(count, len, tasks));
        sim.connect();
        let before = sim.client.retained_bytes();
        let listed = sim.call(CallRequest::list_tools()).unwrap();
        assert_eq!(listed.items.len(), count);
        sim.events.clear();
        let held = sim.client.retained_bytes() - before;
        if tasks {
            // Optional support is the same as none listed: those are not kept.
            let kept = count * 2 / 3 * len;
            assert!(held >= kept, "the names kept are counted: {held}");
            assert!(held <= kept + count * 64, "held {held}");
        } else {
            assert!(held <= 4 * KIB, "held {held}");
        }
    }
}
