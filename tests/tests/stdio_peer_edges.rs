//! Stdio peers that once got the better of the client or the server: oversized lines
//! whose `method` comes last (a request, never an answer, whatever its id), strings
//! written with escapes (`resultType`, `supportedVersions`), and servers that flood the
//! event queue with input requests they cancel at once or that the client never
//! declared (decision 132).
use mcp_proto::client::{
    CallError, CallId, CallRequest, ClientConfig, ConnId, ConnectionState, Event, PeerError,
};
use mcp_proto::limits::Limits;
use mcp_proto::model::ClientCapabilities;
use mcp_proto::server::example;
use mcp_proto::version::{Era, EraMode};
use mcp_tests::{Scripted, Sim};
use serde_json::{Value, json};

fn legacy_init(m: &Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"protocolVersion":"2025-11-25",
        "capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}})
    .to_string()
}

fn silent() -> impl mcp_tests::Peer {
    Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init(m)],
        _ => vec![],
    })
}

fn connected(limits: Limits) -> Sim {
    let config = ClientConfig::new("p", "1")
        .era_mode(EraMode::Legacy)
        .capabilities(ClientCapabilities::with_elicitation())
        .limits(limits);
    let mut sim = Sim::new(config, silent());
    sim.connect();
    sim.events.clear();
    sim
}

fn feed(sim: &mut Sim, bytes: &[u8]) {
    sim.client.handle_read(sim.now, ConnId::STDIO, bytes);
}

fn written(sim: &mut Sim) -> Vec<Value> {
    let mut wire = Vec::new();
    while let Some(t) = sim.client.poll_transmit(sim.now, &mut wire) {
        if let mcp_proto::client::Transmit::Write { conn, len } = t {
            sim.client.handle_written(sim.now, conn, len);
        }
    }
    wire.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("client wrote bad JSON"))
        .collect()
}

/// Starts a tools/call and returns its call id and JSON-RPC id.
fn start_call(sim: &mut Sim) -> (CallId, Value) {
    let call = sim
        .client
        .call(sim.now, CallRequest::call_tool("t", json!({})))
        .unwrap();
    let sent = written(sim);
    let m = sent.iter().find(|m| m["method"] == "tools/call").unwrap();
    (call, m["id"].clone())
}

fn drain(sim: &mut Sim) -> Vec<Event> {
    let mut v = Vec::new();
    while let Some(e) = sim.client.poll_event() {
        v.push(e);
    }
    v
}

/// An oversized *request* from the server, whose `id` happens to equal the id of the
/// client's own call and whose `method` member comes last, is taken for the answer to
/// that call: the call fails with `Oversized` though nothing answered it.
#[test]
fn an_oversized_server_request_with_method_last_fails_no_call() {
    let mut limits = Limits::default();
    limits.max_message_bytes = 64 * 1024;
    let mut sim = connected(limits);
    let (call, id) = start_call(&mut sim);
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"params\":{{\"message\":\"{}\",\"requestedSchema\":{{\"type\":\"object\",\"properties\":{{}}}}}},\"method\":\"elicitation/create\"}}\n",
        "x".repeat(100 * 1024)
    );
    feed(&mut sim, line.as_bytes());
    let events = drain(&mut sim);
    let failed = events.iter().any(|e| matches!(e,
        Event::CallCompleted { call: c, outcome: Err(CallError::Peer(PeerError::Oversized { .. })) } if *c == call));
    // Now the real answer arrives.
    let answer =
        json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"ok"}]}});
    feed(&mut sim, format!("{answer}\n").as_bytes());
    let later = drain(&mut sim);
    assert!(
        !failed,
        "the call was failed by a server request: {events:?}; its real answer then: {later:?}"
    );
}

// ----- the Server machine -----------------------------------------------------------

struct SPeer {
    server: mcp_proto::server::Server,
    now: mcp_proto::Instant,
}

impl SPeer {
    fn new(server: mcp_proto::server::Server) -> Self {
        SPeer {
            server,
            now: mcp_proto::Instant::ZERO,
        }
    }
    fn raw(&mut self, bytes: &[u8]) -> Vec<Value> {
        self.server.handle_input(self.now, bytes);
        let mut out = Vec::new();
        while self.server.poll_transmit(self.now, &mut out).is_some() {}
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
    fn initialize(&mut self, caps: Value) {
        let out = self.send(json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":caps,"clientInfo":{"name":"t","version":"0"}}}));
        assert_eq!(out.len(), 1, "{out:?}");
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    }
}

/// An oversized request from the client whose id equals the id of the server's own
/// outstanding elicitation, `method` written last: taken for the client's answer to the
/// elicitation; the parked tool call fails, and the request itself is never answered.
#[test]
fn an_oversized_client_request_with_method_last_is_refused_not_taken_for_an_answer() {
    let server = example::server_with(|c| c.limits.max_line_bytes = 64 * 1024);
    let mut p = SPeer::new(server);
    p.initialize(json!({"elicitation":{}}));
    let out = p.send(json!({"jsonrpc":"2.0","id":"c1","method":"tools/call",
        "params":{"name":"confirm","arguments":{}}}));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["method"], "elicitation/create");
    let elicit_id = out[0]["id"].clone();
    // The client's own request, too long, with the same id as the server's request.
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{elicit_id},\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"{}\"}}}},\"method\":\"tools/call\"}}\n",
        "x".repeat(100 * 1024)
    );
    let out = p.raw(line.as_bytes());
    let answered_request = out
        .iter()
        .any(|m| m["id"] == elicit_id && m["error"]["code"] == -32600);
    let confirm_done = out.iter().any(|m| m["id"] == "c1");
    assert!(
        answered_request && !confirm_done,
        "the oversized request got no -32600 and/or the parked call failed: {out:?}"
    );
}

/// A legacy server asks for input and cancels the request at once, over and over. Each
/// pair leaves an `InputRequested` (carrying the request's params) and an
/// `InputCancelled` in the event queue; neither kind is ever dropped, so, with the
/// caller not polling, what the machine holds grows with the flood, far past the
/// documented budgets (decision 18).
#[test]
fn input_requests_cancelled_before_they_are_polled_are_taken_back() {
    let mut limits = Limits::default();
    limits.max_message_bytes = 256 * 1024;
    limits.max_queued_event_bytes = 1024 * 1024;
    limits.max_pending_input_bytes = 1024 * 1024;
    let budget = limits.max_queued_event_bytes
        + limits.max_list_bytes
        + limits.max_pending_input_bytes
        + 2 * limits.max_message_bytes
        + 256 * 1024;
    let mut sim = connected(limits);
    let mut peak = 0;
    for i in 0..400u64 {
        let ask = json!({"jsonrpc":"2.0","id":i,"method":"elicitation/create","params":{
            "message":"x".repeat(200 * 1024),
            "requestedSchema":{"type":"object","properties":{}}}});
        let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
            "params":{"requestId":i}});
        feed(&mut sim, format!("{ask}\n{cancel}\n").as_bytes());
        written(&mut sim);
        peak = peak.max(sim.client.retained_bytes());
    }
    assert!(peak <= budget, "peak {peak} > budget {budget}");
}

/// Requests for a kind of input the client did not declare each leave an
/// `InputUndeclared` event, which is never dropped either.
#[test]
fn undeclared_input_requests_stay_within_the_event_budget() {
    let mut limits = Limits::default();
    limits.max_queued_event_bytes = 64 * 1024;
    let budget = 4 * 1024 * 1024;
    let mut sim = connected(limits);
    let mut peak = 0;
    let mut fed = 0;
    for i in 0..200_000u64 {
        let ask = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"sampling/createMessage\",\"params\":{{}}}}\n"
        );
        fed += ask.len();
        feed(&mut sim, ask.as_bytes());
        if i % 64 == 0 {
            written(&mut sim);
            peak = peak.max(sim.client.retained_bytes());
        }
    }
    assert!(
        peak <= budget,
        "peak {peak} > budget {budget} after {fed} bytes fed"
    );
}

fn discover_ok(m: &Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"resultType":"complete",
        "supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}})
    .to_string()
}

/// `"resultType":"compl\u0065te"` is the string "complete"; the client refuses the
/// result as "not an object".
#[test]
fn an_escaped_result_type_is_read_as_its_string() {
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![discover_ok(m)],
        Some("tools/call") => vec![format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"resultType\":\"compl\\u0065te\",\"content\":[]}}}}",
            m["id"]
        )],
        _ => vec![],
    });
    let mut sim = Sim::new(ClientConfig::new("p", "1").era_mode(EraMode::Modern), peer);
    sim.connect();
    let out = sim.call(CallRequest::call_tool("t", json!({})));
    assert!(out.is_ok(), "{out:?}");
}

/// A discover result whose version is written with an escape is not recognised: the
/// client (Auto) falls back to `initialize` on a 2026-only server.
#[test]
fn an_escaped_supported_version_is_read_as_its_string() {
    let peer = Scripted::new(|m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"resultType\":\"complete\",\"supportedVersions\":[\"2026\\u002d07\\u002d28\"],\"capabilities\":{{}},\"ttlMs\":0,\"cacheScope\":\"public\"}}}}",
            m["id"]
        )],
        _ => vec![
            json!({"jsonrpc":"2.0","id":m["id"],"error":{"code":-32601,"message":"gone"}})
                .to_string(),
        ],
    });
    let mut sim = Sim::new(ClientConfig::new("p", "1").era_mode(EraMode::Auto), peer);
    sim.connect();
    assert!(
        matches!(sim.client.state(), ConnectionState::Ready(Era::Modern, _)),
        "{:?}; sent {:?}",
        sim.client.state(),
        sim.sent
            .iter()
            .map(|m| m["method"].clone())
            .collect::<Vec<_>>()
    );
}
