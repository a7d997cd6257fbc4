//! The server's two shortcuts (decision 214) against the paths they stand for: a text
//! result written straight into the reply (`ToolOutcome::DoneText`) and a 2026 request
//! whose `_meta` is the text kept from the request before, read with that text cut out
//! (`Server::split_request`). Both must be invisible: the same bytes out, from the
//! machine on stdio and from an [`HttpEndpoint`] (which takes the kept `_meta` through
//! the same split, with the request's headers checked against the body).

use serde_json::{Map, Value, json};

use super::server::{Choices, value};
use crate::Instant;
use crate::client::Transmit;
use crate::server::http::{HttpEndpoint, HttpReply, HttpRequest, StreamStatus};
use crate::server::{Server, Tool, ToolCall, ToolOutcome, example};

/// Requests per input: enough for a kept `_meta` to be taken, changed and taken again.
const MAX_REQUESTS: usize = 8;

/// Longest line the servers take: above the 8 KiB the shortcut copies, so that lines on
/// both sides of that bound, and lines refused as too long, are reached.
const MAX_LINE: usize = 12 * 1024;

/// The example server plus `say` (answers `text`, or the arguments' JSON, as a text
/// result; an error result when `error` is `true`) and `seen` (answers, as text, what the
/// server read from the request's `_meta`). With `by_text` their results are
/// [`ToolOutcome::text`] and [`ToolOutcome::error_text`], written in place; without, the
/// same results given as values.
#[must_use]
pub fn fast_paths_server(by_text: bool) -> Server {
    example::server_with(|c| {
        c.limits.max_line_bytes = MAX_LINE;
        c.tools.push(Tool::new(
            "say",
            "Answers `text` (an error result when `error` is true)",
            json!({"type": "object"}),
            move |call: &ToolCall<'_>| {
                let text = match call.arguments.get("text") {
                    Some(Value::String(s)) => s.clone(),
                    _ => call.arguments.to_string(),
                };
                let error = call.arguments.get("error") == Some(&Value::Bool(true));
                text_outcome(by_text, text, error)
            },
        ));
        c.tools.push(Tool::new(
            "seen",
            "Answers what the server read from the request's `_meta`",
            json!({"type": "object"}),
            move |call: &ToolCall<'_>| {
                let seen = json!({
                    "era": format!("{:?}", call.era),
                    "capabilities": call.client_capabilities,
                    "progressToken": call.progress_token,
                });
                text_outcome(by_text, seen.to_string(), false)
            },
        ));
    })
}

fn text_outcome(by_text: bool, text: String, error: bool) -> ToolOutcome {
    match (by_text, error) {
        (true, false) => ToolOutcome::text(text),
        (true, true) => ToolOutcome::error_text(text),
        (false, _) => {
            let mut result = json!({"content": [{"type": "text", "text": text}]});
            if error {
                result["isError"] = json!(true);
            }
            ToolOutcome::Done(result)
        }
    }
}

/// The bytes `server` writes for `line` (a newline is added).
fn answer(server: &mut Server, line: &[u8]) -> Vec<u8> {
    let now = Instant::ZERO;
    let mut input = line.to_vec();
    input.push(b'\n');
    server.handle_input(now, &input);
    let mut out = Vec::new();
    while let Some(t) = server.poll_transmit(now, &mut out) {
        assert!(
            matches!(t, Transmit::Write { .. }),
            "a stdio server asked for {t:?}"
        );
    }
    out
}

/// A sequence of requests built from `data` (see [`request_lines`]) fed to one
/// long-lived server whose tools answer text in place, and each to a fresh server (which
/// keeps no `_meta`) whose tools answer the same results as values: every answer must be
/// the same bytes.
///
/// The same lines then go, as `POST` bodies with the 2026 headers they name, to one
/// long-lived [`HttpEndpoint`] and each to a fresh one, with the same servers: every
/// response (status, headers, body) must be the same bytes.
pub fn server_fast_paths(data: &[u8]) {
    let lines = request_lines(data);
    let mut kept = fast_paths_server(true);
    for line in &lines {
        let fast = answer(&mut kept, line);
        let slow = answer(&mut fast_paths_server(false), line);
        agree("machine", line, &fast, &slow);
    }
    let mut kept = HttpEndpoint::new(fast_paths_server(true));
    for line in &lines {
        let request = post(line);
        let fast = respond(&mut kept, &request);
        let slow = respond(&mut HttpEndpoint::new(fast_paths_server(false)), &request);
        agree("endpoint", line, &fast, &slow);
    }
}

fn agree(what: &str, line: &[u8], fast: &[u8], slow: &[u8]) {
    if fast != slow {
        let shown = |b: &[u8]| String::from_utf8_lossy(&b[..b.len().min(2048)]).into_owned();
        panic!(
            "the shortcuts of the {what} answer otherwise\nline: {}\nfast: {}\nslow: {}",
            shown(line),
            shown(fast),
            shown(slow)
        );
    }
}

/// `line` as a 2026 `POST`, with the `Mcp-Method` and `Mcp-Name` headers its body names
/// when it can be read (else none: the endpoint refuses it, both endpoints alike).
fn post(line: &[u8]) -> HttpRequest {
    let mut request = HttpRequest::new("POST", "/mcp")
        .with_header("Host", "127.0.0.1")
        .with_header("Content-Type", "application/json")
        .with_header("Accept", "application/json, text/event-stream")
        .with_header("MCP-Protocol-Version", "2026-07-28");
    if let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(line) {
        if let Some(Value::String(method)) = body.get("method") {
            request = request.with_header("Mcp-Method", method);
        }
        let name = body.get("params").and_then(|p| p.get("name"));
        if let Some(Value::String(name)) = name
            && name.is_ascii()
            && !name.bytes().any(|b| b.is_ascii_control())
        {
            request = request.with_header("Mcp-Name", name);
        }
    }
    request.with_body(line.to_vec())
}

/// The response `endpoint` gives `request`, as written on the wire (a stream drained to
/// its end).
fn respond(endpoint: &mut HttpEndpoint, request: &HttpRequest) -> Vec<u8> {
    let now = Instant::ZERO;
    let mut out = Vec::new();
    match endpoint.handle_request(now, request) {
        HttpReply::Complete(response) => response.write(&mut out),
        HttpReply::Stream(stream) => {
            stream.write_head(&mut out);
            // Every tool here answers at once: a stream that stays open is a failure
            // of its own, shown as the bytes written so far.
            for _ in 0..MAX_REQUESTS {
                if endpoint.poll_stream(&stream, &mut out) == StreamStatus::Finished {
                    break;
                }
                endpoint.handle_timeout(now);
            }
        }
    }
    out
}

/// Up to `MAX_REQUESTS` request lines (no newline in them): 2026 `tools/call`,
/// `tools/list` and `ping` requests whose `_meta` texts are, by the input's choice, the
/// one of the request before, that text with a byte changed, spaced, escaped, cut or
/// wrapped, or a new one; placed first, last, twice, under an escaped key, inside the
/// arguments or behind a key that only ends in `_meta`; some lines padded to about 8 KiB
/// or beyond, or with a byte changed.
#[must_use]
pub fn request_lines(data: &[u8]) -> Vec<Vec<u8>> {
    let mut c = Choices::new(data);
    let mut lines = Vec::new();
    let mut last: Option<Vec<u8>> = None;
    for n in 0..MAX_REQUESTS {
        if n > 0 && c.byte() & 7 == 7 {
            break;
        }
        let meta = meta_text(&mut c, last.as_deref());
        last = Some(meta.clone());
        let mut line = request(&mut c, n, &meta);
        pad(&mut c, &mut line);
        if c.byte() % 16 == 15 {
            // One byte changed anywhere.
            let at = usize::from(c.byte()) * 256 + usize::from(c.byte());
            if !line.is_empty() {
                let len = line.len();
                line[at % len] = pick(&mut c, b" \"{}[]:,0\\x\xc3");
            }
        }
        for b in &mut line {
            if *b == b'\n' {
                *b = b' ';
            }
        }
        lines.push(line);
    }
    lines
}

fn pick(c: &mut Choices<'_>, from: &[u8]) -> u8 {
    from[usize::from(c.byte()) % from.len()]
}

/// A `_meta` text: most often the last one again.
fn meta_text(c: &mut Choices<'_>, last: Option<&[u8]>) -> Vec<u8> {
    let Some(last) = last else {
        return fresh_meta(c);
    };
    let mut text = last.to_vec();
    let at = |c: &mut Choices<'_>, len: usize| (usize::from(c.byte()) * 7) % (len + 1);
    match c.byte() % 16 {
        0..=6 => {}
        7 => text = fresh_meta(c),
        8 => {
            // One byte changed.
            if !text.is_empty() {
                let i = at(c, text.len() - 1);
                text[i] = pick(c, b" 0123\"{}aA\\_,:\t");
            }
        }
        9 => {
            // Whitespace put in.
            let i = at(c, text.len());
            let ws = pick(c, b" \t\r");
            text.insert(i, ws);
        }
        10 => {
            // A name's character escaped: `_` or the first `i` (of `io.…`).
            let (from, to): (&[u8], &[u8]) = if c.byte() & 1 == 0 {
                (b"_", b"\\u005f")
            } else {
                (b"\"io", b"\"\\u0069o")
            };
            if let Some(i) = memchr::memmem::find(&text, from) {
                text.splice(i..i + from.len(), to.iter().copied());
            }
        }
        11 => {
            // Cut short.
            let i = at(c, text.len());
            text.truncate(i);
        }
        12 => {
            // The same value under a wrapper, or followed by more.
            text = match c.byte() % 3 {
                0 => [&b"["[..], &text, b"]"].concat(),
                1 => [&b"{\"x\":"[..], &text, b"}"].concat(),
                _ => [&text[..], b" "].concat(),
            };
        }
        13 => {
            // A member repeated, or added in front.
            if text.first() == Some(&b'{') {
                let member: &[u8] = match c.byte() % 3 {
                    0 => b"\"io.modelcontextprotocol/protocolVersion\":\"2025-11-25\",",
                    1 => b"\"progressToken\":7,",
                    _ => b"\"_meta\":{},",
                };
                text.splice(1..1, member.iter().copied());
            }
        }
        14 => text = c.string().into_bytes(),
        _ => {
            // Pretty-printed.
            if let Ok(v) = serde_json::from_slice::<Value>(&text) {
                text = serde_json::to_vec_pretty(&v).unwrap_or_default();
            }
        }
    }
    text
}

/// A new `_meta` text (mostly 2026-07-28).
fn fresh_meta(c: &mut Choices<'_>) -> Vec<u8> {
    let mut m = Map::new();
    let version = match c.byte() % 8 {
        0..=5 => Some("2026-07-28"),
        6 => Some("2025-11-25"),
        _ => None,
    };
    if let Some(v) = version {
        m.insert("io.modelcontextprotocol/protocolVersion".into(), json!(v));
    }
    let caps = match c.byte() % 4 {
        0 => json!({}),
        1 => json!({"elicitation": {}, "sampling": {}, "roots": {}}),
        2 => json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        _ => value(c, 2),
    };
    m.insert("io.modelcontextprotocol/clientCapabilities".into(), caps);
    m.insert(
        "io.modelcontextprotocol/clientInfo".into(),
        json!({"name": c.string(), "version": "1"}),
    );
    match c.byte() % 4 {
        1 => {
            m.insert("progressToken".into(), json!(c.byte()));
        }
        2 => {
            m.insert("x".into(), value(c, 2));
        }
        _ => {}
    }
    serde_json::to_vec(&Value::Object(m)).unwrap_or_default()
}

/// A request line around `meta`.
fn request(c: &mut Choices<'_>, n: usize, meta: &[u8]) -> Vec<u8> {
    let method: &[u8] = match c.byte() % 8 {
        0..=4 => b"tools/call",
        5 => b"tools/list",
        6 => b"ping",
        _ => b"tools/nope",
    };
    let params = params(c, meta);
    let id = match c.byte() % 8 {
        5 => b"\"s\"".to_vec(),
        6 => b"null".to_vec(),
        7 => Vec::new(),
        _ => n.to_string().into_bytes(),
    };
    let mut members: Vec<Vec<u8>> = vec![
        b"\"jsonrpc\":\"2.0\"".to_vec(),
        [&b"\"method\":\""[..], method, b"\""].concat(),
        [&b"\"params\":"[..], &params].concat(),
    ];
    if !id.is_empty() {
        members.insert(1, [&b"\"id\":"[..], &id].concat());
    }
    if c.byte() % 8 == 7 {
        // A `_meta` beside the params, not theirs.
        members.insert(0, [&b"\"_meta\":"[..], meta].concat());
    }
    let turn = usize::from(c.byte()) % members.len();
    members.rotate_left(turn);
    object(c, &members)
}

/// `{…}` of `members`, separated as the input says.
fn object(c: &mut Choices<'_>, members: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![b'{'];
    for (i, m) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if c.byte() % 8 == 7 {
            out.push(pick(c, b" \t\r"));
        }
        out.extend_from_slice(m);
    }
    out.push(b'}');
    out
}

/// `"_meta":` spelled as the input says (mostly plainly), followed by `meta`.
fn meta_member(c: &mut Choices<'_>, meta: &[u8]) -> Vec<u8> {
    let key: &[u8] = match c.byte() % 12 {
        7 => b"\"\\u005fmeta\":",
        8 => b"\"_m\\u0065ta\":",
        9 => b"\"_meta\" :\t",
        10 => b"\"_meta\": ",
        // Only ends in `_meta`: its own member, not the request's.
        11 => b"\"\\\"_meta\":",
        _ => b"\"_meta\":",
    };
    [key, meta].concat()
}

/// The params object of a request.
fn params(c: &mut Choices<'_>, meta: &[u8]) -> Vec<u8> {
    let name: &[u8] = match c.byte() % 8 {
        0..=2 => b"say",
        3 => b"seen",
        4 => b"echo",
        5 => b"fail",
        6 => b"add",
        _ => b"nope",
    };
    let name = [&b"\"name\":\""[..], name, b"\""].concat();
    let arguments = arguments(c, meta);
    let mut members = vec![meta_member(c, meta), name, arguments];
    match c.byte() % 8 {
        4 => {
            // A second `_meta`, the same text or another.
            let other = if c.byte() & 1 == 0 {
                meta.to_vec()
            } else {
                fresh_meta(c)
            };
            members.push(meta_member(c, &other));
        }
        5 => {
            members.remove(0);
        }
        6 => members.push(b"\"cursor\":\"0\"".to_vec()),
        7 => {
            let extra = serde_json::to_vec(&value(c, 2)).unwrap_or_default();
            members.push([&b"\"x\":"[..], &extra].concat());
        }
        _ => {}
    }
    let turn = usize::from(c.byte()) % members.len();
    members.rotate_left(turn);
    object(c, &members)
}

/// The arguments: a text (with escapes, non-ASCII text, or anything), whether it is an
/// error, and sometimes a `_meta` of their own.
fn arguments(c: &mut Choices<'_>, meta: &[u8]) -> Vec<u8> {
    let mut members = vec![[&b"\"text\":"[..], &text(c)].concat()];
    match c.byte() % 8 {
        4 => members.push(b"\"error\":true".to_vec()),
        5 => members.insert(0, meta_member(c, meta)),
        6 => members.push(meta_member(c, meta)),
        7 => members.push(b"\"a\":1,\"b\":2".to_vec()),
        _ => {}
    }
    let arguments = object(c, &members);
    [&b"\"arguments\":"[..], &arguments].concat()
}

/// A JSON string literal, mostly valid, built of escapes and characters that text
/// results must carry through.
fn text(c: &mut Choices<'_>) -> Vec<u8> {
    if c.byte() % 4 == 3 {
        return serde_json::to_vec(&c.string()).unwrap_or_default();
    }
    let mut out = vec![b'"'];
    for _ in 0..c.byte() % 24 {
        let piece: &[u8] = match c.byte() % 32 {
            0 => b"\\\"",
            1 => b"\\\\",
            2 => b"\\n\\t\\r\\b\\f",
            3 => b"\\u00e9",
            4 => "é✓".as_bytes(),
            5 => "𝄞".as_bytes(),
            6 => b"\\ud834\\udd1e",
            7 => b"\\u0000",
            8 => b"\\u001f\\u007f",
            9 => "\u{7f}\u{2028}\u{2029}".as_bytes(),
            10 => b"\\/",
            11 => b"_meta",
            12 => b"\\\"_meta\\\":",
            13 => b"\\u005f",
            // Not JSON: a raw control character, a lone surrogate.
            14 => b"\x01",
            15 => b"\\ud800",
            _ => b"plain ",
        };
        out.extend_from_slice(piece);
    }
    out.push(b'"');
    out
}

/// Sometimes grows `line` to about 8 KiB (either side of the bound the shortcut copies
/// up to), or beyond the longest line taken, with spaces after its first `{` or a member
/// at its end.
fn pad(c: &mut Choices<'_>, line: &mut Vec<u8>) {
    let target = match c.byte() % 8 {
        5 => 8 * 1024 - 8 + usize::from(c.byte() % 16),
        6 => 8 * 1024 - 64 + usize::from(c.byte()),
        7 => MAX_LINE - 4 + usize::from(c.byte() % 8),
        _ => return,
    };
    let Some(missing) = target.checked_sub(line.len()) else {
        return;
    };
    if c.byte() & 1 == 0 && line.first() == Some(&b'{') {
        line.splice(1..1, std::iter::repeat_n(b' ', missing));
    } else if line.last() == Some(&b'}') && missing >= 9 {
        // `,"pad":"…"` inside the envelope.
        line.pop();
        line.extend_from_slice(b",\"pad\":\"");
        line.extend(std::iter::repeat_n(b'p', missing - 9));
        line.extend_from_slice(b"\"}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs walking every choice byte, through the entry point: the two servers agree
    /// on them, and the builder reaches the shortcut (a kept `_meta` found in place) and
    /// lines that come near it without taking it.
    #[test]
    fn fast_paths_agree_on_built_requests() {
        let (mut in_place, mut lines, mut served, mut served_in_place) = (0, 0, 0, 0);
        for seed in 0..=255u32 {
            // Mostly zeros (each choice's common case), some bytes of a simple generator.
            let mut state = seed.wrapping_mul(2_654_435_761) | 1;
            let data: Vec<u8> = (0..400)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    if state % 4 == 0 {
                        (state >> 8) as u8
                    } else {
                        0
                    }
                })
                .collect();
            server_fast_paths(&data);
            let mut kept = fast_paths_server(true);
            let mut endpoint = HttpEndpoint::new(fast_paths_server(true));
            for line in request_lines(&data) {
                lines += 1;
                let split = kept.split_request(&line);
                let took = split.is_some_and(|(_, s)| s.meta_kept);
                in_place += usize::from(took);
                answer(&mut kept, &line);
                let response = respond(&mut endpoint, &post(&line));
                if response.starts_with(b"HTTP/1.1 200 ") {
                    served += 1;
                    served_in_place += usize::from(took);
                }
            }
        }
        eprintln!("{in_place} of {lines}; the endpoint served {served} ({served_in_place})");
        // The endpoint half is not all refusals: most lines pass its header checks,
        // among them most of those the machine took in place.
        assert!(served * 2 > lines, "{served} of {lines} served");
        assert!(
            served_in_place * 2 > in_place,
            "{served_in_place} of {in_place} served"
        );
        assert!(
            in_place * 10 > lines,
            "{in_place} of {lines} found in place"
        );
        assert!(in_place * 2 < lines, "{in_place} of {lines} found in place");
    }
}
