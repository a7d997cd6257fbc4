//! The server machine driven by arbitrary client bytes, and the `requestState` codec.

use serde_json::{Map, Number, Value, json};

use crate::Instant;
use crate::client::Transmit;
use crate::jsonrpc::{Message, RequestId, codes};
use crate::server::{
    InputRequestSpec, KeyRing, PlainStateCodec, RequestState, RequestStateCodec, SealedStateCodec,
    Server, ServerConfig, StateContext, Tool, ToolCall, ToolOutcome, example,
};
use crate::version::{ProtocolVersion, VersionPolicy};

/// The server's estimate of the memory `value` holds, for tests that check it against
/// an allocator's count (it must never be below).
#[must_use]
pub fn held_bytes(value: &Value) -> usize {
    crate::held::held_bytes(value)
}

/// The server's estimate, from JSON text alone, of the memory the text takes once
/// parsed, for tests that check it against an allocator's count and against
/// [`held_bytes`] of the parsed value (it must never be below either).
#[must_use]
pub fn parsed_bytes(text: &[u8]) -> usize {
    crate::held::parsed_bytes(text)
}

/// Largest stdio line the fuzzed servers take (longer ones are refused): small, so that
/// the oversized-line path is reached with short inputs.
pub const MAX_LINE: usize = 2048;

/// The longest message the fuzzed servers may write in answer to one input line of
/// `line` bytes: a fixed part (the largest catalog answer of the example server with
/// the fuzz tool is about 2 KiB) plus a few copies of the line, which error messages and
/// tool results may quote (`echo`, an unknown method's name, a requested version).
#[must_use]
pub fn max_reply(line: usize) -> usize {
    16 * 1024 + 4 * line
}

/// The example server plus the fuzz tool `ask` and the task tool `later`, under small
/// limits; `variant` (0–3)
/// picks the versions served and the page size: both eras, legacy only, modern only, or
/// both eras with one item per page.
#[must_use]
pub fn fuzz_server(variant: u8) -> Server {
    example::server_with(|c| configure(c, variant))
}

pub(super) fn configure(c: &mut ServerConfig, variant: u8) {
    c.limits.max_line_bytes = MAX_LINE;
    c.limits.max_nesting_depth = 16;
    c.limits.max_pending_inputs = 6;
    c.limits.max_input_rounds = 4;
    c.limits.max_inputs_per_round = 4;
    c.tools.push(Tool::new(
        "ask",
        "Asks for the inputs named in `keys` (first letter: e elicitation, s sampling, r \
         roots) until `rounds` rounds were taken, then lists what it got",
        json!({"type": "object", "properties": {
            "keys": {"type": "array", "items": {"type": "string"}},
            "rounds": {"type": "integer"},
            "tag": {"type": "string", "x-mcp-header": "Tag"}
        }}),
        ask,
    ));
    // A task tool: the task paths of both eras (creation, polls, result, list, cancel).
    c.tools.push(
        Tool::new(
            "later",
            "Echoes `text`, as a task when asked (done after one poll)",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            |call: &ToolCall<'_>| {
                let text = call.arguments.get("text").and_then(Value::as_str);
                ToolOutcome::text(text.unwrap_or(""))
            },
        )
        .as_task(1),
    );
    // A task tool asking for input inside its task, its outcome due after `ms`: the
    // input_required, tasks/update and delay paths.
    c.tools.push(
        Tool::new(
            "asker",
            "Asks for `k` inside its task, then answers after `ms` milliseconds",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}}),
            |call: &ToolCall<'_>| {
                if !call.inputs.contains_key("k") {
                    let ask = InputRequestSpec::form("k?", json!({"type": "object"}));
                    return ToolOutcome::NeedInput(vec![("k".to_owned(), ask)]);
                }
                let ms = call.arguments.get("ms").and_then(Value::as_u64);
                let delay = std::time::Duration::from_millis(ms.unwrap_or(0));
                ToolOutcome::after(delay, ToolOutcome::text("k"))
            },
        )
        .as_task(0),
    );
    // Deferred work, completed at once from inside the handler (what a completer on
    // another thread would do, without the thread): the outcome `then` names is handed to
    // the call when the driver calls `handle_deferred`. As a task when asked.
    c.tools.push(
        Tool::new(
            "defer",
            "Defers its work, whose outcome is `then`: text (default), ask, error, none, drop, lazy",
            json!({"type": "object", "properties": {"then": {"type": "string"}}}),
            deferred,
        )
        .as_task(0),
    );
    match variant % 4 {
        1 => {
            c.versions = VersionPolicy {
                accepted: vec![ProtocolVersion::V2025_06_18, ProtocolVersion::V2025_11_25],
            };
        }
        2 => {
            c.versions = VersionPolicy {
                accepted: vec![ProtocolVersion::V2026_07_28],
            };
        }
        3 => c.page_size = Some(1),
        _ => {}
    }
}

/// The deferring tool: see [`configure`]. Its second round (after `ask`) answers.
fn deferred(call: &ToolCall<'_>) -> ToolOutcome {
    if call.inputs.contains_key("d") {
        return ToolOutcome::text("asked and answered");
    }
    let then = call.arguments.get("then").and_then(Value::as_str);
    let outcome = match then.unwrap_or("text") {
        "ask" => ToolOutcome::NeedInput(vec![(
            "d".to_owned(),
            InputRequestSpec::form("d?", json!({"type": "object"})),
        )]),
        "error" => ToolOutcome::Error(crate::jsonrpc::ErrorObject::new(-32001, "deferred error")),
        "none" => ToolOutcome::NoAnswer,
        // The completer is dropped without an outcome, or never taken.
        "drop" => {
            drop(call.defer());
            return ToolOutcome::Deferred;
        }
        "lazy" => return ToolOutcome::Deferred,
        _ => ToolOutcome::text("deferred text"),
    };
    call.defer().complete(outcome);
    ToolOutcome::Deferred
}

/// The fuzz tool: see [`fuzz_server`].
fn ask(call: &ToolCall<'_>) -> ToolOutcome {
    let rounds = call
        .arguments
        .get("rounds")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let keys: Vec<&str> = call
        .arguments
        .get("keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if u64::from(call.round) >= rounds || keys.is_empty() {
        let got = Value::Object(call.inputs.clone());
        return ToolOutcome::text(format!("round {}: {got}", call.round));
    }
    let asks = keys
        .iter()
        .map(|k| {
            let spec = match k.as_bytes().first() {
                Some(b's') => InputRequestSpec::Sampling(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": k}}],
                    "maxTokens": 8
                })),
                Some(b'r') => InputRequestSpec::Roots,
                _ => InputRequestSpec::form(*k, json!({"type": "object"})),
            };
            (format!("{k}{}", call.round), spec)
        })
        .collect();
    ToolOutcome::NeedInput(asks)
}

/// Everything one server wrote for one input: the bytes of every `Write`, and whether
/// (and after how many bytes) it said `Close`.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    out: Vec<u8>,
    closed_at: Option<usize>,
}

/// Feeds `pieces` to a fresh server of `variant`, draining after each; then the end of
/// input when `eof`, and some more input, which must be ignored.
fn run<'a>(variant: u8, pieces: impl IntoIterator<Item = &'a [u8]>, eof: bool) -> Run {
    let now = Instant::ZERO;
    let mut server = fuzz_server(variant);
    let mut out = Vec::new();
    let mut closed_at = None;
    let drain = |server: &mut Server, out: &mut Vec<u8>, closed_at: &mut Option<usize>| {
        let before = out.len();
        let mut written = 0;
        while let Some(t) = server.poll_transmit(now, out) {
            match t {
                Transmit::Write { len, .. } => {
                    assert!(closed_at.is_none(), "write after close");
                    written += len;
                }
                Transmit::Close { .. } => {
                    assert!(closed_at.is_none(), "closed twice");
                    *closed_at = Some(out.len());
                }
                other => panic!("a stdio server asked for {other:?}"),
            }
        }
        assert_eq!(written, out.len() - before, "Write lengths disagree");
    };
    for piece in pieces {
        server.handle_input(now, piece);
        drain(&mut server, &mut out, &mut closed_at);
    }
    // Deferred work is gone on with once, after all the input: the same point however
    // the input was split.
    server.handle_deferred(now);
    drain(&mut server, &mut out, &mut closed_at);
    if eof {
        server.handle_eof(now);
        drain(&mut server, &mut out, &mut closed_at);
        assert!(closed_at.is_some(), "no close after the end of input");
        assert!(server.is_closed(), "not closed after the end of input");
        server.handle_input(now, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        let mut more = Vec::new();
        assert!(
            server.poll_transmit(now, &mut more).is_none() && more.is_empty(),
            "output after the end of input"
        );
    } else {
        assert!(closed_at.is_none(), "closed before the end of input");
    }
    Run { out, closed_at }
}

/// The server machine on arbitrary client bytes. The first byte picks the piece size
/// (low five bits), the configuration (next two, see [`fuzz_server`]) and whether the
/// input ends (top bit). The output must not depend on how the input is split; every
/// line written must be a JSON-RPC message no longer than [`max_reply`] of the longest
/// input line; and there may be no more responses than input lines.
pub fn server_machine(data: &[u8]) {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let chunk = 1 + usize::from(control & 0x1f);
    let variant = (control >> 5) & 3;
    let eof = control & 0x80 != 0;
    let whole = run(variant, [input], eof);
    let split = run(variant, input.chunks(chunk), eof);
    assert_eq!(whole, split, "output depends on chunking ({chunk})");

    let longest = input
        .split(|b| *b == b'\n')
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0)
        .min(MAX_LINE);
    let lines = input.iter().filter(|b| **b == b'\n').count();
    assert!(
        whole.out.is_empty() || whole.out.ends_with(b"\n"),
        "unterminated output"
    );
    let mut responses = 0;
    for line in whole.out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        assert!(
            line.len() <= max_reply(longest),
            "a reply of {} bytes to lines of at most {longest}",
            line.len()
        );
        let message = Message::decode(line).unwrap_or_else(|e| {
            panic!(
                "the server wrote something that is not JSON-RPC ({e}): {}",
                String::from_utf8_lossy(line)
            )
        });
        if matches!(message, Message::Response(_)) {
            responses += 1;
        }
    }
    assert!(
        responses <= lines,
        "{responses} responses to {lines} input lines"
    );
}

/// Reads fuzz input as a sequence of choices.
pub struct Choices<'a> {
    data: &'a [u8],
}

impl<'a> Choices<'a> {
    /// Choices taken from `data`; when it runs out, every choice is 0.
    #[must_use]
    pub fn new(data: &'a [u8]) -> Self {
        Choices { data }
    }

    /// The next byte.
    pub fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.data.split_first() else {
            return 0;
        };
        self.data = rest;
        b
    }

    /// The next `n` bytes (fewer when they run out).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// The next eight bytes as a number.
    pub fn u64(&mut self) -> u64 {
        let mut buf = [0; 8];
        let b = self.bytes(8);
        buf[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(buf)
    }

    /// A string of up to 31 bytes (lossy UTF-8 of the input, so any character).
    pub fn string(&mut self) -> String {
        let len = usize::from(self.byte() & 0x1f);
        String::from_utf8_lossy(self.bytes(len)).into_owned()
    }

    /// The rest of the input.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }
}

/// An arbitrary JSON value, nested at most `depth` levels.
pub fn value(c: &mut Choices<'_>, depth: u32) -> Value {
    let kind = c.byte();
    match kind % 8 {
        0 => Value::Null,
        1 => Value::Bool(kind & 0x80 != 0),
        2 => {
            let n = c.u64();
            if kind & 0x80 == 0 {
                Value::from(n)
            } else {
                Value::from(n.cast_signed())
            }
        }
        3 => Number::from_f64(f64::from_bits(c.u64())).map_or(Value::Null, Value::Number),
        4 | 5 => Value::String(c.string()),
        6 if depth > 0 => {
            let n = usize::from(kind >> 4);
            Value::Array((0..n).map(|_| value(c, depth - 1)).collect())
        }
        7 if depth > 0 => Value::Object(object(c, depth - 1)),
        _ => Value::Null,
    }
}

/// An arbitrary JSON object (members nested at most `depth` levels).
pub fn object(c: &mut Choices<'_>, depth: u32) -> Map<String, Value> {
    let n = c.byte() & 0x07;
    (0..n).map(|_| (c.string(), value(c, depth))).collect()
}

/// A `params._meta` for 2026-07-28 with these client capabilities.
fn modern_meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

/// How the server's answer to a `requestState` it cannot use begins.
const BAD_STATE: &str = "Invalid requestState";

/// The arguments every fuzzed `ask` call carries (what a state is bound to).
fn ask_arguments() -> Value {
    json!({"keys": ["e", "s"], "rounds": 3})
}

/// The sealing codec of the fuzzed servers: a fixed key and seed, so runs reproduce.
fn sealed_codec() -> SealedStateCodec {
    let ring = KeyRing::new("fz", [0x5a; 32]).expect("a valid key id");
    SealedStateCodec::new(ring, &[7; 32], 1_800_000_000_000)
}

/// The context of the fuzzed `ask` call named `name`, as the server computes it.
fn ask_context(name: &str) -> StateContext<'static> {
    let important = serde_json::to_vec(&json!([name, ask_arguments()])).unwrap_or_default();
    StateContext::new(Instant::ZERO, None, "tools/call", &important)
}

/// One modern `tools/call` with `requestState` set to `token`, answered by a fresh
/// server (fed the message whole, so any token fits) whose codec is sealing or plain:
/// exactly one response, to id 1.
fn call_with_state(
    name: &str,
    token: &str,
    responses: Value,
    sealed: bool,
) -> Result<Value, (i64, String)> {
    let now = Instant::ZERO;
    let mut server = example::server_with(|c| {
        configure(c, 0);
        if sealed {
            c.state_codec = Box::new(sealed_codec());
        }
    });
    let caps = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name,
        "arguments": ask_arguments(),
        "requestState": token,
        "inputResponses": responses,
        "_meta": modern_meta(caps),
    }});
    // Whole, as a transport with its own framing gives it: a long token is not an
    // oversized stdio line.
    let json = serde_json::to_vec(&request).unwrap_or_default();
    server.handle_json(now, &json);
    let mut out = Vec::new();
    while server.poll_transmit(now, &mut out).is_some() {}
    let mut lines = out.split(|b| *b == b'\n').filter(|l| !l.is_empty());
    let reply = lines.next().expect("a tools/call got no answer");
    assert!(
        lines.next().is_none(),
        "more than the answer to a modern call"
    );
    match Message::decode(reply) {
        Ok(Message::Response(r)) => {
            assert_eq!(r.id, Some(RequestId::Number(1)), "answer to another id");
            r.outcome
                .map(|raw| serde_json::from_str(raw.get()).expect("result is JSON"))
                .map_err(|e| (e.code, e.message))
        }
        other => panic!("a tools/call was answered with {other:?}"),
    }
}

fn refused_state(reply: &Result<Value, (i64, String)>) -> bool {
    matches!(reply, Err((code, m)) if *code == codes::INVALID_PARAMS && m.starts_with(BAD_STATE))
}

/// The `requestState` codecs (sealing and plain) and their use by the server. The first
/// byte picks what the rest is:
///
/// * bit 0 clear: an arbitrary token. Opening it must not panic. The sealing codec
///   never opens it (nobody can forge the tag without the key), and a server with that
///   codec refuses it with `-32602`. For the plain codec, a state it opens to must seal
///   and open back to itself; a server given the token answers `-32602` when it does
///   not open or belongs to another call, a result otherwise.
/// * bit 0 set: a structured state. Sealed for the `ask` call it opens to itself in the
///   same context, and the server resuming from it does not refuse the state; the token
///   with one byte changed (picked by the input) never opens.
pub fn request_state(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut plain = PlainStateCodec;
    let mut sealed = sealed_codec();
    if mode & 1 == 0 {
        let text = String::from_utf8_lossy(rest);
        // Half the time behind a prefix, so the parts after it are reached at once.
        let token = match mode & 6 {
            0 => text.into_owned(),
            2 => format!("plain1:{text}"),
            _ => format!("v1.fz.{text}"),
        };
        let context = ask_context("ask");
        assert!(
            sealed.open(&context, &token).is_err(),
            "an arbitrary token opened under the key: {token}"
        );
        assert!(
            refused_state(&call_with_state("ask", &token, json!({}), true)),
            "a sealing server took an arbitrary token"
        );
        let opened = plain.open(&context, &token).ok();
        if let Some(state) = &opened {
            let resealed = plain.seal(&context, state);
            let again = plain.open(&context, &resealed);
            assert_eq!(
                again.as_ref().ok(),
                Some(state),
                "seal/open changed the state"
            );
        }
        let name = opened.as_ref().map_or("ask", |s| s.name.as_str());
        let reply = call_with_state(name, &token, json!({"e0": {"action": "accept"}}), false);
        match &opened {
            Some(s) if s.method == "tools/call" => assert!(
                !refused_state(&reply),
                "a state that opens was refused: {reply:?}"
            ),
            Some(_) => assert!(
                matches!(&reply, Err((code, _)) if *code == codes::INVALID_PARAMS),
                "a state for another method was taken: {reply:?}"
            ),
            None => assert!(
                refused_state(&reply),
                "a token that does not open was taken: {reply:?}"
            ),
        }
        return;
    }
    let mut c = Choices::new(rest);
    let round = u32::try_from(c.u64() >> 32).unwrap_or(u32::MAX);
    let round = if mode & 8 == 0 { round % 4 } else { round };
    let asked = (0..c.byte() % 5).map(|_| c.string()).collect();
    let inputs = object(&mut c, 4);
    let state = RequestState::new("tools/call", "ask", round, asked, inputs);
    let context = ask_context("ask");
    let token = sealed.seal(&context, &state);
    assert_eq!(
        sealed.open(&context, &token),
        Ok(state.clone()),
        "round trip failed"
    );
    let at = usize::from(c.byte()) * 7 % token.len();
    let mut bytes = token.clone().into_bytes();
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    if let Ok(changed) = String::from_utf8(bytes) {
        assert!(
            sealed.open(&context, &changed).is_err(),
            "a token changed at byte {at} still opened"
        );
    }
    let responses = Value::Object(object(&mut c, 3));
    let reply = call_with_state("ask", &token, responses, true);
    assert!(
        !refused_state(&reply),
        "a sealed state was refused: {reply:?}"
    );
}
