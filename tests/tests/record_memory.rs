//! What reading a hostile record costs: members nobody reads are stepped over, not read
//! into values (a `serde_json::Value` costs many times the text it comes from).

use mcp_proto::client::{CallRequest, ClientConfig, Task};
use mcp_proto::model::ClientCapabilities;
use mcp_proto::version::{Era, EraMode};
use mcp_tests::heap::{CountingAlloc, peak_during};
use mcp_tests::{Scripted, Sim};
use serde_json::value::RawValue;
use serde_json::{Value, json};

#[global_allocator]
static HEAP: CountingAlloc = CountingAlloc;

/// A member of `n` zeros: 2 bytes of text each, 32 bytes each as values.
fn padding(n: usize) -> String {
    let mut s = String::with_capacity(2 * n + 16);
    s.push_str("\"padding\":[");
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push('0');
    }
    s.push(']');
    s
}

#[test]
fn a_task_record_padded_with_unread_members_costs_no_more_than_its_text() {
    let pad = padding(500_000);
    let legacy =
        format!(r#"{{"task":{{"taskId":"t","status":"working","ttl":60000,{pad}}},{pad}}}"#);
    let modern = format!(r#"{{"resultType":"task","taskId":"t","status":"working",{pad}}}"#);
    for (text, era) in [(legacy, Era::Legacy), (modern, Era::Modern)] {
        let raw: Box<RawValue> = serde_json::from_str(&text).unwrap();
        let (task, peak) = peak_during(|| Task::from_result(&raw, era, 64));
        let task = task.unwrap();
        assert_eq!(
            (task.task_id.as_str(), task.status.as_str()),
            ("t", "working")
        );
        // Read into a map of values, each padding cost 16 MB and more.
        assert!(
            peak < 64 * 1024,
            "{era:?}: {peak} bytes held for a {} byte record",
            text.len()
        );
    }
}

#[test]
fn a_polled_task_record_padded_with_unread_members_costs_no_more_than_its_text() {
    let pad = padding(500_000);
    let script = move |m: &Value| -> Vec<String> {
        let record = match m["method"].as_str() {
            Some("server/discover") => {
                return vec![
                    json!({"jsonrpc":"2.0","id":m["id"],"result":{
                    "resultType":"complete","supportedVersions":["2026-07-28"],
                    "capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},
                    "serverInfo":{"name":"s","version":"1"}}})
                    .to_string(),
                ];
            }
            Some("tools/call") => {
                r#""resultType":"task","taskId":"T","status":"working","pollIntervalMs":10"#
                    .to_owned()
            }
            Some("tasks/get") => format!(
                r#""resultType":"complete","taskId":"T","status":"completed","result":{{"content":[{{"type":"text","text":"done"}}]}},{pad}"#
            ),
            _ => return Vec::new(),
        };
        vec![format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{{record}}}}}"#,
            m["id"]
        )]
    };
    let config = ClientConfig::new("record-memory", "1.0")
        .era_mode(EraMode::Modern)
        .capabilities(ClientCapabilities::none().with_tasks());
    let mut sim = Sim::new(config, Scripted::new(script));
    sim.connect();
    let id = sim
        .client
        .call(sim.now, CallRequest::call_tool("run", json!({})))
        .unwrap();
    let ((), peak) = peak_during(|| sim.run_until(|s| s.completion(id).is_some()));
    let out = sim.completion(id).unwrap().unwrap();
    assert_eq!(out.tool_result().unwrap().text(), "done");
    // The record is 1 MB: it is held a few times over as text (the server's line, the
    // client's buffer), never as 500,000 values.
    assert!(peak < 8 << 20, "{peak} bytes held to poll a 1 MB record");
}

/// `n` empty content blocks: 3 bytes of text each.
fn empty_blocks(n: usize) -> String {
    let mut s = String::with_capacity(3 * n + 16);
    s.push_str(r#"{"content":["#);
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str("{}");
    }
    s.push_str("]}");
    s
}

fn output(result: &str) -> mcp_proto::client::CallOutput {
    mcp_proto::client::CallOutput {
        result: serde_json::from_str(result).unwrap(),
        items: Vec::new(),
        pages: 1,
        rounds: 0,
    }
}

/// A tool result of millions of empty blocks (an 8 MiB answer) is refused at
/// `MAX_CONTENT_BLOCKS`, before it costs many times its text: each block read is a
/// record of its own.
#[test]
fn a_tool_result_of_millions_of_empty_blocks_is_refused_at_the_block_bound() {
    use mcp_proto::model::MAX_CONTENT_BLOCKS;
    let at_bound = output(&empty_blocks(MAX_CONTENT_BLOCKS));
    assert_eq!(
        at_bound.tool_result().unwrap().content.len(),
        MAX_CONTENT_BLOCKS
    );
    assert_eq!(at_bound.content().unwrap().len(), MAX_CONTENT_BLOCKS);
    let over = output(&empty_blocks(MAX_CONTENT_BLOCKS + 1));
    assert!(over.tool_result().is_err());
    let flood = output(&empty_blocks(8 * 1024 * 1024 / 3));
    let (owned, peak_owned) = peak_during(|| flood.tool_result());
    let (borrowed, peak_borrowed) = peak_during(|| flood.content().map(|c| c.len()));
    for e in [owned.unwrap_err(), borrowed.unwrap_err()] {
        assert!(e.to_string().contains("MAX_CONTENT_BLOCKS"), "{e}");
    }
    // Read whole, the owned blocks held 73 MB (their allocations' own overhead not
    // counted), the typed views 537 MB.
    for peak in [peak_owned, peak_borrowed] {
        assert!(peak < 8 * 1024 * 1024, "{peak} bytes held");
    }
}

/// The same bound holds for a prompt's messages and a read resource's items.
#[test]
fn prompt_messages_and_resource_items_are_bounded_as_blocks() {
    use mcp_proto::model::MAX_CONTENT_BLOCKS;
    let many = |member: &str, item: &str, n: usize| {
        let items = vec![item; n].join(",");
        output(&format!(r#"{{"{member}":[{items}]}}"#))
    };
    let message = r#"{"role":"user","content":{"type":"text","text":""}}"#;
    let at_bound = many("messages", message, MAX_CONTENT_BLOCKS);
    assert_eq!(
        at_bound.prompt_view().unwrap().messages.len(),
        MAX_CONTENT_BLOCKS
    );
    let over = many("messages", message, MAX_CONTENT_BLOCKS + 1);
    let e = over.prompt_view().unwrap_err().to_string();
    assert!(e.contains("MAX_CONTENT_BLOCKS"), "{e}");
    let at_bound = many("contents", "{}", MAX_CONTENT_BLOCKS);
    assert_eq!(
        at_bound.resource_contents().unwrap().len(),
        MAX_CONTENT_BLOCKS
    );
    let over = many("contents", "{}", MAX_CONTENT_BLOCKS + 1);
    let e = over.resource_contents().unwrap_err().to_string();
    assert!(e.contains("MAX_CONTENT_BLOCKS"), "{e}");
}
