//! A call's timeout bounds the whole operation, on a fake clock: a call made while the
//! client connects, while a stdio server is restarted, or sent again on a new legacy
//! session after the old one expired, is given up when its own timeout (counted from
//! when it was made) runs out, never a whole timeout after the step that held it.

use std::time::Duration;

use mcp_proto::Instant;
use mcp_proto::client::http::HttpConfig;
use mcp_proto::client::{
    CallError, CallId, CallOutput, CallRequest, Client, ClientConfig, ConnId, Event, RestartPolicy,
    Transmit,
};
use mcp_proto::http::EndpointUrl;
use mcp_proto::version::EraMode;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(10);

type Outcome = Option<Result<CallOutput, CallError>>;

fn outcome_of(events: &[Event], call: CallId) -> Outcome {
    events.iter().find_map(|e| match e {
        Event::CallCompleted { call: c, outcome } if *c == call => Some(outcome.clone()),
        _ => None,
    })
}

fn assert_timed_out_in_time(outcome: Outcome, made: Instant, now: Instant) {
    assert!(
        matches!(outcome, Some(Err(CallError::Timeout(_)))),
        "{outcome:?}"
    );
    let took = now.saturating_duration_since(made);
    assert!(
        took <= TIMEOUT,
        "the call timed out {took:?} after it was made (its timeout is {TIMEOUT:?})"
    );
}

/// What both simulations share: a client on a fake clock, and one step of traffic.
trait Sim: Sized {
    /// The client and the clock.
    fn clocked(&mut self) -> (&mut Client, &mut Instant);

    /// Carries what the client wrote to the scripted server and back; whether anything
    /// moved.
    fn step(&mut self) -> bool;

    /// Steps until `done`, jumping the clock to the client's next deadline whenever
    /// nothing moves.
    fn run_until(&mut self, done: impl Fn(&Self) -> bool) {
        let mut jumps = 0;
        while !done(self) {
            if self.step() {
                continue;
            }
            let (client, now) = self.clocked();
            *now = (*now).max(client.poll_timeout().expect("stalled: no deadline"));
            client.handle_timeout(*now);
            jumps += 1;
            assert!(jumps < 1000, "no progress");
        }
    }

    /// Moves the clock on by `d`, then steps once.
    fn advance(&mut self, d: Duration) {
        let (client, now) = self.clocked();
        *now += d;
        client.handle_timeout(*now);
        self.step();
    }
}

// ----- stdio ------------------------------------------------------------------------

type Script = Box<dyn FnMut(&Value) -> Vec<String>>;

/// A client over stdio against a scripted server (each message in, the lines out).
struct Stdio {
    now: Instant,
    client: Client,
    server: Script,
    /// Servers for the restarts the client asks for, in order.
    restarts: Vec<Script>,
    respawns: u32,
    sent: Vec<Value>,
    events: Vec<Event>,
}

impl Stdio {
    fn new(config: ClientConfig, server: Script) -> Stdio {
        Stdio {
            now: Instant::ZERO,
            client: Client::stdio(config, Instant::ZERO),
            server,
            restarts: Vec::new(),
            respawns: 0,
            sent: Vec::new(),
            events: Vec::new(),
        }
    }
}

impl Sim for Stdio {
    fn clocked(&mut self) -> (&mut Client, &mut Instant) {
        (&mut self.client, &mut self.now)
    }

    fn step(&mut self) -> bool {
        let mut moved = false;
        let mut wire = Vec::new();
        while let Some(t) = self.client.poll_transmit(self.now, &mut wire) {
            match t {
                Transmit::Write { conn, len } => self.client.handle_written(self.now, conn, len),
                Transmit::Respawn => {
                    moved = true;
                    self.respawns += 1;
                    self.server = self.restarts.remove(0);
                    self.client.handle_connected(self.now, ConnId::STDIO);
                }
                Transmit::Close { .. } => {}
                other => panic!("a stdio client asked for {other:?}"),
            }
        }
        let mut back = Vec::new();
        for line in wire.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            moved = true;
            let msg: Value = serde_json::from_slice(line).expect("JSON");
            for out in (self.server)(&msg) {
                back.extend_from_slice(out.as_bytes());
                back.push(b'\n');
            }
            self.sent.push(msg);
        }
        if !back.is_empty() {
            self.client.handle_read(self.now, ConnId::STDIO, &back);
        }
        while let Some(e) = self.client.poll_event() {
            moved = true;
            self.events.push(e);
        }
        moved
    }
}

impl Stdio {
    fn sent_with_method(&self, method: &str) -> Vec<&Value> {
        self.sent.iter().filter(|m| m["method"] == method).collect()
    }
}

fn legacy_init_line(m: &Value) -> String {
    json!({"jsonrpc":"2.0","id":m["id"],"result":{"protocolVersion":"2025-11-25",
        "capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}})
    .to_string()
}

/// A legacy stdio server that answers `initialize` at once and never answers a call.
fn silent_legacy_server() -> Script {
    Box::new(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![legacy_init_line(m)],
        _ => Vec::new(),
    })
}

/// A call made before the handshake ends waits for it; the handshake's time is the
/// call's own (the caller's timeout counts from the call), so a slow `initialize`
/// followed by a silent server ends the call when its timeout is over, not a whole
/// timeout after connecting.
#[test]
fn a_call_made_while_connecting_is_given_up_at_its_own_timeout() {
    let config = ClientConfig::new("deadlines", "1").era_mode(EraMode::Legacy);
    let mut sim = Stdio::new(config, Box::new(|_: &Value| Vec::new()));
    let made = sim.now;
    let request = CallRequest::call_tool("slow", json!({})).timeout(TIMEOUT);
    let call = sim.client.call(sim.now, request).unwrap();
    sim.step();
    // The server answers `initialize` after 8 s.
    sim.advance(Duration::from_secs(8));
    let init = sim.sent_with_method("initialize")[0].clone();
    let line = format!("{}\n", legacy_init_line(&init));
    sim.client
        .handle_read(sim.now, ConnId::STDIO, line.as_bytes());
    sim.run_until(|s| outcome_of(&s.events, call).is_some());
    assert_eq!(sim.sent_with_method("tools/call").len(), 1);
    assert_timed_out_in_time(outcome_of(&sim.events, call), made, sim.now);
}

/// A call made while an exited stdio server waits to be started again is carried to
/// the fresh process, within its own timeout: the restart's wait is not added to it.
#[test]
fn a_call_made_while_the_server_restarts_is_given_up_at_its_own_timeout() {
    let mut policy = RestartPolicy::up_to(3);
    policy.first_delay = Duration::from_secs(4);
    let config = ClientConfig::new("deadlines", "1")
        .era_mode(EraMode::Legacy)
        .restart(policy);
    let mut sim = Stdio::new(config, silent_legacy_server());
    sim.run_until(|s| s.events.iter().any(|e| matches!(e, Event::Connected(_))));
    sim.step();
    // The process exits.
    sim.client.handle_eof(sim.now, ConnId::STDIO);
    sim.step();
    assert!(
        (sim.events.iter()).any(|e| matches!(e, Event::ServerRestarting { .. })),
        "{:?}",
        sim.events
    );
    let made = sim.now;
    let request = CallRequest::call_tool("slow", json!({})).timeout(TIMEOUT);
    let call = sim.client.call(sim.now, request).unwrap();
    sim.restarts.push(silent_legacy_server());
    sim.run_until(|s| outcome_of(&s.events, call).is_some());
    assert_eq!(sim.respawns, 1);
    assert_eq!(sim.sent_with_method("tools/call").len(), 1);
    assert_timed_out_in_time(outcome_of(&sim.events, call), made, sim.now);
}

// ----- Streamable HTTP --------------------------------------------------------------

/// A request as the scripted HTTP server sees it.
struct Seen {
    method: String,
    session: Option<String>,
    body: Value,
}

/// A client over Streamable HTTP against a scripted server: `None` is silence.
struct Http<F: FnMut(&Seen) -> Option<String>> {
    now: Instant,
    client: Client,
    server: F,
    seen: Vec<Seen>,
    events: Vec<Event>,
}

impl<F: FnMut(&Seen) -> Option<String>> Http<F> {
    fn new(config: ClientConfig, server: F) -> Self {
        let url = EndpointUrl::parse("http://127.0.0.1:9/mcp", false).expect("url");
        Http {
            now: Instant::ZERO,
            client: Client::http(config, HttpConfig::new(url), Instant::ZERO),
            server,
            seen: Vec::new(),
            events: Vec::new(),
        }
    }
}

impl<F: FnMut(&Seen) -> Option<String>> Sim for Http<F> {
    fn clocked(&mut self) -> (&mut Client, &mut Instant) {
        (&mut self.client, &mut self.now)
    }

    fn step(&mut self) -> bool {
        let mut moved = false;
        let mut buf = Vec::new();
        let mut replies = Vec::new();
        while let Some(t) = self.client.poll_transmit(self.now, &mut buf) {
            moved = true;
            match t {
                Transmit::Connect { conn, .. } => self.client.handle_connected(self.now, conn),
                Transmit::Write { conn, len } => {
                    let bytes = buf.split_off(buf.len() - len);
                    let mut headers = [httparse::EMPTY_HEADER; 64];
                    let mut req = httparse::Request::new(&mut headers);
                    let Ok(httparse::Status::Complete(head)) = req.parse(&bytes) else {
                        panic!("incomplete request");
                    };
                    let session = (req.headers.iter())
                        .find(|h| h.name.eq_ignore_ascii_case("mcp-session-id"))
                        .map(|h| String::from_utf8_lossy(h.value).into_owned());
                    let body = &bytes[head..];
                    let seen = Seen {
                        method: req.method.unwrap_or("").to_owned(),
                        session,
                        body: serde_json::from_slice(body).unwrap_or(Value::Null),
                    };
                    if let Some(reply) = (self.server)(&seen) {
                        replies.push((conn, reply));
                    }
                    self.seen.push(seen);
                }
                Transmit::Close { .. } => {}
                other => panic!("an HTTP client asked for {other:?}"),
            }
        }
        for (conn, reply) in replies {
            self.client.handle_read(self.now, conn, reply.as_bytes());
        }
        while let Some(e) = self.client.poll_event() {
            moved = true;
            self.events.push(e);
        }
        moved
    }
}

impl<F: FnMut(&Seen) -> Option<String>> Http<F> {
    fn with_method(&self, method: &str) -> Vec<&Seen> {
        let seen = self.seen.iter();
        seen.filter(|s| s.body["method"] == method).collect()
    }
}

fn http_reply(status: u16, headers: &[(&str, &str)], body: &str) -> String {
    let mut out = format!("HTTP/1.1 {status} X\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    out
}

fn json_reply(seen: &Seen, result: Value, session: Option<&str>) -> String {
    let body = json!({"jsonrpc":"2.0","id":seen.body["id"],"result":result}).to_string();
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(s) = session {
        headers.push(("Mcp-Session-Id", s));
    }
    http_reply(200, &headers, &body)
}

/// A legacy Streamable HTTP server that hands out sessions `s1`, `s2`, …, forgets `s1`
/// (a `tools/call` on it is a 404) and never answers `tools/list`.
fn forgetful_server() -> impl FnMut(&Seen) -> Option<String> {
    let mut inits = 0;
    move |seen| {
        let method = seen.body["method"].as_str().unwrap_or("");
        Some(match (seen.method.as_str(), method) {
            ("POST", "initialize") => {
                inits += 1;
                let result = json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                    "serverInfo":{"name":"legacy","version":"1"}});
                json_reply(seen, result, Some(&format!("s{inits}")))
            }
            ("POST", "notifications/initialized") => http_reply(202, &[], ""),
            ("GET", _) => http_reply(405, &[], ""),
            ("POST", "tools/list") => return None,
            ("POST", "tools/call") if seen.session.as_deref() == Some("s1") => {
                http_reply(404, &[], "session gone")
            }
            ("POST", "tools/call") => json_reply(
                seen,
                json!({"content":[{"type":"text","text":"fresh"}]}),
                None,
            ),
            _ => http_reply(400, &[], "?"),
        })
    }
}

/// A listing in flight when the legacy session expires is sent again on the new
/// session (a read, harmless to repeat), as the same operation: it keeps what was left
/// of its timeout instead of starting a whole new one.
#[test]
fn a_listing_sent_again_on_a_new_legacy_session_keeps_its_timeout() {
    let config = ClientConfig::new("deadlines", "1").era_mode(EraMode::Legacy);
    let mut sim = Http::new(config, forgetful_server());
    sim.run_until(|s| s.events.iter().any(|e| matches!(e, Event::Connected(_))));
    sim.step();
    let made = sim.now;
    let list = sim
        .client
        .call(sim.now, CallRequest::list_tools().timeout(TIMEOUT))
        .unwrap();
    sim.step();
    sim.advance(Duration::from_secs(9));
    // Another call meets the expired session: a new one is made, the listing sent again.
    let call = sim
        .client
        .call(sim.now, CallRequest::call_tool("t", json!({})))
        .unwrap();
    sim.run_until(|s| outcome_of(&s.events, call).is_some());
    assert!(outcome_of(&sim.events, call).unwrap().is_ok());
    assert_eq!(sim.with_method("initialize").len(), 2);
    sim.run_until(|s| outcome_of(&s.events, list).is_some());
    let sessions: Vec<_> = (sim.with_method("tools/list").iter())
        .map(|s| s.session.clone())
        .collect();
    assert_eq!(sessions, [Some("s1".to_owned()), Some("s2".to_owned())]);
    assert_timed_out_in_time(outcome_of(&sim.events, list), made, sim.now);
}
