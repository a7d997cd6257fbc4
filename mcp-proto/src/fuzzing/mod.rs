//! Entry points for the fuzz targets in `fuzz/`. Each takes arbitrary bytes and must
//! never panic, hang or grow memory without bound.

use std::time::Duration;

use crate::Instant;

use crate::client::{
    AcceptDefaults, CallRequest, Client, ClientConfig, ConnId, Event, InputHandler,
};
use crate::jsonrpc::{self, Message};
use crate::limits::Limits;
use crate::stdio::{Line, LineDecoder};

/// Stdio framing: the first byte picks a chunk size, the rest is split into chunks of
/// that size; the lines must be the same as for the input whole.
pub fn stdio_framing(data: &[u8]) {
    let Some((&chunk, input)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk).max(1);
    let collect = |chunks: &mut dyn Iterator<Item = &[u8]>| {
        let mut d = LineDecoder::new(64);
        let mut out = Vec::new();
        for c in chunks {
            d.handle_input(c);
            while let Some(l) = d.poll_line() {
                out.push(match l {
                    Line::Message(m) => Ok(m.to_vec()),
                    Line::Oversized { seen, head, tail } => {
                        Err((seen, head.to_vec(), tail.to_vec()))
                    }
                });
            }
            // One partial line, and the first and last bytes of two oversized ones (the
            // one being skipped and the one last reported), whatever the input.
            assert!(d.retained_bytes() <= 5 * 64, "the decoder holds too much");
        }
        out
    };
    let whole = collect(&mut std::iter::once(input));
    let split = collect(&mut input.chunks(chunk));
    assert_eq!(whole, split, "framing depends on chunking");
}

/// Elicitation form schemas (what a server asks the client to fill) and answers: the
/// input is a schema, a NUL byte, and an answer, both JSON. A schema parses or is refused
/// without panicking, at most `MAX_FORM_FIELDS` fields; an answer it accepts (defaults
/// filled in) holds only its fields, is accepted again unchanged, and so is the form of
/// defaults alone when that is accepted.
pub fn form_schema(data: &[u8]) {
    use crate::client::FormSchema;
    use crate::client::form::MAX_FORM_FIELDS;
    let (schema, answer) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"{}"[..]),
    };
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(schema) else {
        return;
    };
    let Ok(form) = FormSchema::parse(&schema) else {
        return;
    };
    let names: std::collections::BTreeSet<&str> = form.field_names().collect();
    assert!(names.len() <= MAX_FORM_FIELDS, "{} fields", names.len());
    let answers = [
        serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(answer).ok(),
        Some(serde_json::Map::new()),
    ];
    for answer in answers.into_iter().flatten() {
        if let Ok(filled) = form.check(answer) {
            assert!(
                filled.keys().all(|k| names.contains(k.as_str())),
                "an answer with a field the form lacks"
            );
            assert_eq!(
                form.check(filled.clone()).as_ref(),
                Ok(&filled),
                "an accepted answer is refused or changed when checked again"
            );
        }
    }
}

/// JSON-RPC decoding: anything that decodes re-encodes to something that decodes to the
/// same kind of message; the bounded scans agree with the decoder (the depth of what
/// `serde_json` parses, the id and kind of what decodes, from the start and from the
/// end).
pub fn jsonrpc_decode(data: &[u8]) {
    if let Ok(TextDepth(depth)) = serde_json::from_slice::<TextDepth>(data) {
        assert!(
            jsonrpc::check_nesting(data, depth).is_ok(),
            "depth {depth} refused"
        );
        if depth > 0 {
            assert!(
                jsonrpc::check_nesting(data, depth - 1).is_err(),
                "depth {depth} missed"
            );
        }
    }
    // The server refuses text on this estimate before parsing it, and skips the scan
    // for text short enough that even its densest form would fit.
    let estimate = crate::held::parsed_bytes(data);
    if !data.is_empty() {
        assert!(estimate <= data.len() * 256, "{estimate} bytes estimated");
    }
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        let held = crate::held::held_bytes(&value);
        assert!(estimate >= held, "{estimate} estimated, {held} held");
    }
    let Ok(m) = Message::decode(data) else {
        return;
    };
    let (id, has_method) = match &m {
        Message::Request(r) => (Some(r.id.clone()), true),
        Message::Notification(_) => (None, true),
        Message::Response(r) => (r.id.clone(), false),
    };
    let sniffed = jsonrpc::sniff(data);
    assert_eq!(sniffed.has_method, has_method, "method sniffed wrong");
    if id.is_some() {
        assert_eq!(sniffed.id, id, "id sniffed wrong");
    }
    let tail = &data[data.len().saturating_sub(crate::stdio::SNIFF_BYTES)..];
    if let Some(trailing) = jsonrpc::sniff_trailing_id(tail) {
        assert_eq!(Some(trailing), id, "trailing id sniffed wrong");
    }
    {
        let mut out = Vec::new();
        m.encode(&mut out);
        let again = Message::decode(&out).expect("re-encoded message must decode");
        assert_eq!(
            std::mem::discriminant(&m),
            std::mem::discriminant(&again),
            "kind changed on re-encoding"
        );
    }
}

/// The nesting depth of a JSON text as written: each container is one level more than the
/// one holding it, empty or not. Read from the text, not from a parsed `Value`, which keeps
/// only the last of repeated keys and may so be shallower than the text the bounded scan
/// sees.
struct TextDepth(usize);

impl<'de> serde::Deserialize<'de> for TextDepth {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DepthVisitor)
    }
}

struct DepthVisitor;

impl<'de> serde::de::Visitor<'de> for DepthVisitor {
    type Value = TextDepth;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<TextDepth, E> {
        Ok(TextDepth(0))
    }

    fn visit_i64<E>(self, _: i64) -> Result<TextDepth, E> {
        Ok(TextDepth(0))
    }

    fn visit_u64<E>(self, _: u64) -> Result<TextDepth, E> {
        Ok(TextDepth(0))
    }

    fn visit_f64<E>(self, _: f64) -> Result<TextDepth, E> {
        Ok(TextDepth(0))
    }

    fn visit_str<E>(self, _: &str) -> Result<TextDepth, E> {
        Ok(TextDepth(0))
    }

    fn visit_unit<E>(self) -> Result<TextDepth, E> {
        Ok(TextDepth(0))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut items: A) -> Result<TextDepth, A::Error> {
        let mut deepest = 0;
        while let Some(TextDepth(d)) = items.next_element()? {
            deepest = deepest.max(d);
        }
        Ok(TextDepth(deepest + 1))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut members: A,
    ) -> Result<TextDepth, A::Error> {
        let mut deepest = 0;
        while let Some((serde::de::IgnoredAny, TextDepth(d))) = members.next_entry()? {
            deepest = deepest.max(d);
        }
        Ok(TextDepth(deepest + 1))
    }
}

/// A client driven by arbitrary server bytes, with calls in flight, input requests
/// answered, time passing, and the server ending; it must never panic, and every call must complete
/// exactly once. `start` is any instant (the fuzz target passes the current time).
pub fn client_with_server_bytes(data: &[u8], start: Instant) {
    let mut now = start;
    let limits = Limits {
        max_message_bytes: 4096,
        ..Limits::default()
    };
    let config = ClientConfig::new("fuzz", "0").limits(limits);
    let mut client = Client::stdio(config, now);
    let mut calls = Vec::new();
    for r in [
        CallRequest::list_tools(),
        CallRequest::call_tool("t", serde_json::json!({})),
        CallRequest::read_resource("x://y"),
    ] {
        if let Ok(id) = client.call(now, r) {
            calls.push(id);
        }
    }
    let mut handler = AcceptDefaults;
    let mut completed = Vec::new();
    let mut sink = Vec::new();
    for chunk in data.chunks(97) {
        client.handle_read(now, ConnId::STDIO, chunk);
        while client.poll_transmit(now, &mut sink).is_some() {}
        sink.clear();
        while let Some(ev) = client.poll_event() {
            match ev {
                Event::InputRequested { input, request, .. } => {
                    let answer = handler.answer(&request);
                    let _ = client.respond(now, input, answer);
                }
                Event::CallCompleted { call, .. } => {
                    assert!(!completed.contains(&call), "call completed twice");
                    completed.push(call);
                }
                _ => {}
            }
        }
        now += Duration::from_millis(500);
        client.handle_timeout(now);
    }
    // The server's end: its stdout closing, or (odd lengths) its exit with the pipe held
    // open by something it started, which ends the stdout after the drain.
    if data.len() % 2 == 1 {
        client.handle_process_exited(now);
        now += crate::client::EXIT_DRAIN;
        client.handle_timeout(now);
    } else {
        client.handle_eof(now, ConnId::STDIO);
    }
    client.close(now);
    while let Some(ev) = client.poll_event() {
        if let Event::CallCompleted { call, .. } = ev {
            assert!(!completed.contains(&call), "call completed twice");
            completed.push(call);
        }
    }
    for call in calls {
        assert!(completed.contains(&call), "call {call} never completed");
    }
}

pub mod auth_flow;
pub mod client_server;
pub mod fast_paths;
pub mod gateway;
pub mod http;
pub mod http_client;
pub mod http_endpoint;
pub mod http_host;
pub mod isolation;
pub mod server;
pub mod sse;

/// Task records of both eras (`Task::from_result`): never a panic; a record that reads
/// has a non-empty id within the limit and a status message within `MAX_ECHO_BYTES`.
pub fn task_records(data: &[u8]) {
    use crate::client::{MAX_ECHO_BYTES, Task};
    use serde_json::value::RawValue;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(raw) = serde_json::from_str::<&RawValue>(text) else {
        return;
    };
    for era in [crate::Era::Legacy, crate::Era::Modern] {
        if let Ok(task) = Task::from_result(raw, era, 16) {
            assert!(!task.task_id.is_empty() && task.task_id.len() <= 16);
            assert!(
                task.status_message
                    .as_ref()
                    .is_none_or(|m| m.len() <= MAX_ECHO_BYTES)
            );
        }
    }
}

/// Content views on arbitrary JSON: a block keeps its bytes whatever its type, a decoded
/// payload is never larger than the bound or than `decoded_len`, and prompt and resource
/// views never panic.
pub fn content_blocks(data: &[u8]) {
    use crate::content::{Content, PromptView, ResourceBody, read_contents};
    use serde_json::value::RawValue;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(raw) = serde_json::from_str::<&RawValue>(text) else {
        return;
    };
    let check = |b: &crate::content::Base64<'_>| {
        let len = b.decoded_len();
        if let Ok(bytes) = b.decode(1024) {
            assert!(bytes.len() <= 1024);
            assert_eq!(bytes.len(), len, "decoded_len is exact for what decodes");
        }
    };
    let block = Content::parse(raw);
    assert_eq!(block.raw().get(), raw.get(), "a block keeps its bytes");
    if let Some((summary, b)) = block.media() {
        assert_eq!(summary.bytes, b.decoded_len());
        check(b);
    }
    let _ = block.text();
    let _ = PromptView::parse(raw);
    if let Ok(items) = read_contents(raw) {
        for c in items.iter().flatten() {
            if let ResourceBody::Blob(b) = &c.body {
                check(b);
            }
        }
    }
}

/// A `SKILL.md` and a skill entry from untrusted bytes: the first line is a JSON entry,
/// the rest the file. Reading the frontmatter, checking the entry and loading the skill
/// never panic; a loaded skill's text is exactly what was read, its body a suffix of it,
/// and every file it would read lies under its root.
pub fn skill_load(data: &[u8]) {
    use crate::client::CallOutput;
    use crate::skills::{Skill, SkillLimits, SkillLoad, frontmatter};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (entry, md) = text.split_once('\n').unwrap_or((text, ""));
    if let Ok(map) = frontmatter::parse(md, 4096) {
        let value = serde_json::Value::Object(map.clone());
        assert!(
            frontmatter::same_value(&value, &value),
            "a value equals itself"
        );
        assert!(frontmatter::first_difference(&map, &map).is_none());
    }
    let limits = SkillLimits::default();
    let Ok(entry) = serde_json::from_str::<serde_json::Value>(entry) else {
        return;
    };
    let Ok(skill) = Skill::from_json(&entry, &limits) else {
        return;
    };
    let result = serde_json::json!({"contents": [{"uri": skill.uri, "text": md}]});
    let Ok(result) = serde_json::value::to_raw_value(&result) else {
        return;
    };
    let output = CallOutput {
        result,
        items: Vec::new(),
        pages: 1,
        rounds: 0,
    };
    let mut load = SkillLoad::new(skill.clone()).allow_dynamic();
    let Some(_request) = load.poll_request() else {
        return;
    };
    if let Ok(Some(loaded)) = load.handle_output(&output) {
        assert_eq!(loaded.text(), md);
        assert!(md.ends_with(loaded.body()));
        for path in ["a", "../a", "a/../../b", "./x", "x//y"] {
            if let Ok(read) = loaded.read_file(path) {
                assert!(read.uri().starts_with(&format!("{}/", skill.root())));
            }
        }
    }
}

/// The hand-written JSON paths against serde_json: the string and value writer
/// (`json_write`) must produce serde_json's bytes exactly, and the member scan
/// (`json_scan::object_member`) must agree with a full parse on whether the text is an
/// object, whether the member is there, and its value.
pub fn json_paths(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut ours = Vec::new();
    crate::json_write::write_str(&mut ours, &text);
    let theirs = serde_json::to_vec(text.as_ref()).expect("a string serialises");
    assert_eq!(ours, theirs, "write_str differs from serde_json");
    let Ok(json) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(json) else {
        return;
    };
    let mut ours = Vec::new();
    crate::json_write::write_value(&mut ours, &value);
    let theirs = serde_json::to_vec(&value).expect("a value serialises");
    assert_eq!(ours, theirs, "write_value differs from serde_json");
    for key in ["resultType", "a"] {
        use crate::json_scan::{Member, object_member};
        let member = value.get(key);
        match object_member(json, key) {
            Member::NotObject => assert!(!value.is_object(), "an object taken for a non-object"),
            Member::Absent => assert!(value.is_object() && member.is_none(), "{key} missed"),
            Member::Duplicate => assert!(member.is_some(), "{key} duplicated but absent"),
            Member::Raw(raw) => {
                let parsed = serde_json::from_str::<serde_json::Value>(raw);
                assert_eq!(
                    parsed.ok().as_ref(),
                    member,
                    "{key}: {raw} is not its value"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// The shapes the writer and the scan special-case, through the fuzz entry point.
    #[test]
    fn json_paths_agree_with_serde_json() {
        for input in [
            &b""[..],
            b"\xff\xfe not utf-8 \x00",
            b"\"\\u0000\\u001f\\\"\\\\ \xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80\"",
            b"{\"resultType\":\"task\",\"a\":[1,{\"resultType\":2}]}",
            b"{\"result\\u0054ype\":\"complete\"}",
            b"{\"resultType\":1,\"resultType\":2}",
            b" [ {\"resultType\": null} ] ",
            b"{\"a\" : \"x\\\"}\" , \"resultType\" : -1.5e3 }",
            b"{\"k\":\"0123456789abcdef\x7f\\n\\t\\r\\b\\f/\"}",
        ] {
            super::json_paths(input);
        }
    }

    /// A repeated key whose first value is the deepest part of the text: a parsed value
    /// keeps only the last one, the bounded depth scan sees both (found by the fuzzer).
    #[test]
    fn depth_counts_what_a_repeated_key_drops() {
        for input in [
            &b"{\"a\":{\"b\":{}},\"a\":0}"[..],
            b"[{\"k\":[[[]]],\"k\":[]}]",
            b"{\"a\":1,\"a\":{\"b\":{\"c\":{}}}}",
        ] {
            super::jsonrpc_decode(input);
        }
    }
}
