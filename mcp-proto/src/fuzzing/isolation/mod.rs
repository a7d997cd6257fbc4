//! Two clients of one HTTP endpoint, authenticated as different principals: a victim
//! that runs well-formed work to its end, and an attacker driven by the fuzz input that
//! knows every secret of the victim's (its session id, request ids, the ids of the
//! server's requests to it, its task ids, its `requestState`, the event ids of its
//! streams) and uses them in any request it likes. Or both anonymous: then the victim's
//! session id is all that tells them apart, and the attacker knows everything but the
//! victim's bearer secrets (the session id, 2026 task ids, `requestState`).
//!
//! What must hold: nothing the attacker receives carries the victim's data (its tool
//! arguments and answers, which all hold `Vsecret`), its session id or its task ids,
//! unless the attacker sent them itself; and the victim's work is untouched: each of its
//! calls gets the answer it would get alone, its input requests are answered by it only,
//! its tasks are neither cancelled nor read by anyone else, and nothing of the attacker's
//! reaches it. The victim keeps within its fair share of every bound (one session, one
//! piece of work at a time, with calls answered at once beside it), and the tables are large enough that the attacker cannot evict it, so
//! an error it gets is a finding, with one exception: anonymous clients are told apart
//! by their sessions only (and a 2026 client has none), so when both are anonymous the
//! attacker may hold every open stream, and a request of the victim's that needs one may
//! get `503`, or, when the victim polls, be ended between two polls with an error that
//! says so; the victim then gives up that work. An authenticated victim has no such
//! excuse: anonymous clients give way to it (decision 123).

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::Instant;
use crate::http::ResponseReader;
use crate::server::http::{
    EventStore, EventStoreError, EventStoreLimits, EventStream, HttpEndpoint, HttpEndpointConfig,
    HttpStream, MemoryEventStore, MemorySessionStore, Replay,
};
use crate::server::{InputRequestSpec, Tool, ToolCall, ToolOutcome, example};
use crate::sse::SseDecoder;

use super::server::configure;

mod attacker;
mod victim;
mod watched;

use watched::response_in;

/// What the victim's data carries, and the attacker's input never does.
const SECRET: &str = "Vsecret";

/// What the attacker's data carries: never seen by the victim.
const MALLORY: &str = "Msecret";

/// Operations read from one input.
const MAX_OPERATIONS: usize = 96;

/// Open streams the endpoint allows: the attacker may hold a quarter.
const MAX_OPEN: usize = 8;

/// Sessions idle this long expire (with a load balancer; else the default, 30 minutes):
/// within reach of the attacker's time steps. A victim idle this long gives up its work
/// and its session, and starts again.
const BALANCED_IDLE: std::time::Duration = std::time::Duration::from_secs(20);

const MODERN: &str = "2026-07-28";

const TASKS_EXT: &str = "io.modelcontextprotocol/tasks";

/// A stream handed out, read as it is written.
struct Watched {
    stream: HttpStream,
    /// Everything written for it so far, head first.
    wire: Vec<u8>,
    reader: ResponseReader,
    sse: SseDecoder,
    /// The JSON-RPC messages read and not taken yet.
    messages: Vec<Value>,
    /// The last SSE event id read.
    last_event: Option<String>,
    finished: bool,
}

/// The victim's work that takes more than one request.
enum Pending {
    /// A legacy `ask` call waiting for the victim's answer to the server's
    /// `elicitation/create`.
    LegacyAsk(Box<LegacyAsk>),
    /// A modern `ask` call that needs input: the next round carries the state.
    ModernAsk {
        state: String,
        key: String,
        secret: String,
    },
    /// A task of the victim's (its id), polled until it completes.
    Task {
        id: String,
        modern: bool,
        secret: String,
        polls: u32,
    },
}

/// A legacy call whose messages come on its stream, or (polling) on the `GET`s that
/// resume it.
struct LegacyAsk {
    /// Its stream, while open.
    watched: Option<Watched>,
    /// The messages read so far.
    messages: Vec<Value>,
    /// The last event id read, to resume after.
    last_event: Option<String>,
    /// The id of the victim's request.
    id: Value,
    /// The id of the server's `elicitation/create`, once read.
    asked: Option<Value>,
    secret: String,
    /// A request of its was refused for room (see `victim_reply`): the victim gave up.
    refused: bool,
}

/// The victim: one legacy session, one piece of work at a time, and calls answered at
/// once beside it.
struct Victim {
    principal: Option<&'static str>,
    version: &'static str,
    session: Option<String>,
    next_id: i64,
    next_secret: u64,
    pending: Option<Pending>,
    /// Other work of its that waits meanwhile, and whether the first process serves it
    /// (see `World::swap_work`).
    parked: Option<(Pending, bool)>,
    /// Its session's `GET` stream, while open.
    listening: Option<Watched>,
    /// Its current work (and its session's requests) go to the first process.
    on_first: bool,
    /// Its `GET` stream is served by the first process.
    listening_first: bool,
    /// When it last sent a request.
    last_active: Instant,
}

impl Victim {
    /// Its current and its parked work, each with whether the first process serves it.
    fn works(&mut self) -> impl Iterator<Item = (&mut Pending, bool)> {
        let current = self.pending.as_mut().map(|p| (p, self.on_first));
        let parked = self.parked.as_mut().map(|(p, first)| (p, *first));
        current.into_iter().chain(parked)
    }
}

/// What the attacker knows of the victim.
#[derive(Default)]
struct Leaked {
    session: Option<String>,
    /// The id of the victim's latest request (JSON).
    request_id: Option<Value>,
    /// The id of the server's latest request to the victim (JSON).
    asked: Option<Value>,
    task: Option<String>,
    /// That task is a 2026 one (reachable by its principal, not bound to a session).
    task_modern: bool,
    state: Option<String>,
    /// The last SSE event id the victim saw.
    event: Option<String>,
}

/// A stream of the attacker's, with what its request carried of the victim's.
struct Taken {
    watched: Watched,
    sent: Vec<u8>,
    /// Served by the first process (see [`pick`]).
    first: bool,
}

struct World {
    /// The victim's endpoint.
    ep: HttpEndpoint,
    /// The attacker's, when it is another process of the same server (sharing the
    /// session and event stores): else the attacker talks to `ep` too.
    other: Option<HttpEndpoint>,
    now: Instant,
    victim: Victim,
    leaked: Leaked,
    mallory: Option<&'static str>,
    /// The attacker's latest session id and SSE event id.
    own_session: Option<String>,
    own_event: Option<String>,
    next_mallory_id: i64,
    taken: Vec<Taken>,
    /// A load balancer between the two processes: each piece of the victim's work, and
    /// each request of the attacker's, goes to the one its input byte picks.
    balanced: bool,
    /// An endpoint without sessions: legacy state is the process's, so each legacy
    /// `initialize` (the attacker's too) replaces the handshake, a new one takes a new
    /// task scope, and the calls waiting for input share the machine's bounds (a call of
    /// the victim's refused for them is given up). The victim initializes again before each legacy request it starts,
    /// and its tasks and its stream are 2026 ones (a `GET` stream needs a session); the
    /// clients are never both anonymous (anonymous clients are then one client). What
    /// still holds: neither sees, answers or cancels the other's requests.
    stateless: bool,
    /// The attacker's current request goes to the first process.
    attacker_first: bool,
}

/// The fuzz target: see the module's documentation.
///
/// The first byte: bits 0–1 the principals (victim and attacker: alice and mallory,
/// anonymous and mallory, alice and anonymous, both anonymous), bit 2 the victim's
/// legacy version (2025-11-25 or 2025-06-18), bit 3 polling (SEP-1699: the victim
/// fetches its legacy call's messages with `GET`s), bit 4 the attacker talking to a
/// second process of the server that shares the first's session and event stores, bit 5
/// (with bit 4) a load balancer: both clients use both processes, and sessions idle
/// for `BALANCED_IDLE` (20 s) expire; bit 5 without bit 4 an endpoint without sessions
/// (see `World::stateless`).
///
/// Then operations: a byte below 0x80 is a step of the victim's (its low four bits pick
/// new work when it has none, bit 6 then the process that serves that work; with bit 5,
/// while work waits, a call answered at once beside it instead of the next step; with
/// bit 4, its other piece of work first becomes the current one: it may have two), a byte
/// from 0x80 on is one of the attacker's (its low five bits the request, see
/// `World::attack`, bit 5 the first process) followed by an option byte (and, for a raw
/// body, its length and bytes).
pub fn isolation(data: &[u8]) {
    let Some((&control, mut input)) = data.split_first() else {
        return;
    };
    let balanced = control & 0x30 == 0x30;
    let stateless = control & 0x30 == 0x20;
    let (victim, mallory) = match control & 3 {
        1 => (None, Some("mallory")),
        2 => (Some("alice"), None),
        // Without sessions anonymous clients share everything (see `World::stateless`).
        3 if !stateless => (None, None),
        _ => (Some("alice"), Some("mallory")),
    };
    let config = HttpEndpointConfig {
        session_idle_timeout: if balanced {
            BALANCED_IDLE
        } else {
            HttpEndpointConfig::default().session_idle_timeout
        },
        max_open_streams: MAX_OPEN,
        max_sessions: 4 * MAX_OPERATIONS,
        sse_polling: control & 8 != 0,
        ..HttpEndpointConfig::default()
    };
    // One process of the server, or two sharing their stores (keys alike, as a
    // deployment's processes share them; task ids and session ids drawn apart).
    let process = |seed: u8| {
        let mut server = example::server_with(|c| {
            configure(c, 0);
            c.tools.push(confide());
        });
        server.seal_request_states([7; 32], 0);
        server.seed_tasks([seed; 32], 0);
        if stateless {
            return HttpEndpoint::with_config(server, config.clone());
        }
        HttpEndpoint::with_sessions(server, config.clone(), &[seed + 1; 32])
    };
    let mut ep = process(8);
    let mut other = (control & 16 != 0).then(|| process(18));
    if let Some(b) = &mut other {
        let sessions = MemorySessionStore::default();
        let events = SharedEvents::default();
        for e in [&mut ep, b] {
            e.set_session_store(Box::new(sessions.clone()));
            e.set_event_store(Box::new(events.clone()));
        }
    }
    let mut w = World {
        ep,
        other,
        now: Instant::ZERO,
        victim: Victim {
            principal: victim,
            version: if control & 4 == 0 {
                "2025-11-25"
            } else {
                "2025-06-18"
            },
            session: None,
            next_id: 1,
            next_secret: 0,
            pending: None,
            parked: None,
            listening: None,
            on_first: true,
            listening_first: true,
            last_active: Instant::ZERO,
        },
        leaked: Leaked::default(),
        mallory,
        own_session: None,
        own_event: None,
        next_mallory_id: 1,
        taken: Vec::new(),
        balanced,
        stateless,
        attacker_first: false,
    };
    for _ in 0..MAX_OPERATIONS {
        let Some((&op, rest)) = input.split_first() else {
            break;
        };
        input = rest;
        if op < 0x80 {
            w.victim_step(op);
        } else {
            let (&option, rest) = input.split_first().unwrap_or((&0, &[]));
            input = rest;
            let mut raw: &[u8] = &[];
            if op & 0x1f == RAW {
                let len = usize::from(option >> 2).min(input.len());
                (raw, input) = input.split_at(len);
            }
            w.attacker_first = balanced && op & 0x20 != 0;
            w.attack(op & 0x1f, option, raw);
        }
        w.settle();
    }
    // The attacker's clients go away; the victim's work ends as it would alone.
    for taken in std::mem::take(&mut w.taken) {
        let now = w.now;
        pick(&mut w.ep, &mut w.other, taken.first).cancel_stream(now, &taken.watched.stream);
    }
    w.settle();
    for _ in 0..16 {
        if w.victim.pending.is_none() {
            w.swap_work();
        }
        if w.victim.pending.is_none() {
            break;
        }
        w.victim_step(0);
        w.settle();
    }
    assert!(
        w.victim.pending.is_none() && w.victim.parked.is_none(),
        "the victim's work did not end"
    );
}

/// A task tool that asks for `k` inside its task, then answers with what it got: over
/// `tasks/result` in 2025, `tasks/update` in 2026.
fn confide() -> Tool {
    Tool::new(
        "confide",
        "Asks for `k`, then tells what it got",
        json!({"type": "object"}),
        |call: &ToolCall<'_>| match call.inputs.get("k") {
            Some(answer) => ToolOutcome::text(answer.to_string()),
            None => {
                let ask = InputRequestSpec::form("k?", json!({"type": "object"}));
                ToolOutcome::NeedInput(vec![("k".to_owned(), ask)])
            }
        },
    )
    .as_task(0)
}

/// The attacker's request of a raw body (the option byte's high six bits its length).
const RAW: u8 = 17;

impl World {
    /// Both clients are anonymous: one principal, told apart by the victim's session id
    /// alone, so its bearer secrets (the session id, its 2026 task ids, its
    /// `requestState`) are kept from the attacker, and it runs no 2026 task (which any
    /// anonymous client may list).
    fn one_principal(&self) -> bool {
        self.victim.principal.is_none() && self.mallory.is_none()
    }

    /// Deadlines due; the attacker's streams polled and checked.
    fn settle(&mut self) {
        for ep in std::iter::once(&mut self.ep).chain(&mut self.other) {
            if ep.poll_timeout().is_some_and(|t| t <= self.now) {
                ep.handle_timeout(self.now);
            }
            while ep.poll_ready().is_some() {}
        }
        let mut i = 0;
        while i < self.taken.len() {
            let t = &mut self.taken[i];
            t.watched.poll(pick(&mut self.ep, &mut self.other, t.first));
            self.leaked.check(&t.watched.wire, &t.sent);
            if t.watched.finished {
                self.taken.remove(i);
            } else {
                i += 1;
            }
        }
        for (work, first) in self.victim.works() {
            if let Pending::LegacyAsk(ask) = work {
                ask.poll(pick(&mut self.ep, &mut self.other, first));
                if let Some(asked) = &ask.asked {
                    assert!(
                        response_in(&ask.messages).is_none(),
                        "the victim's call was answered before the victim answered {asked}: {:?}",
                        ask.messages
                    );
                }
            }
        }
        if let Some(w) = &mut self.victim.listening {
            w.poll(pick(
                &mut self.ep,
                &mut self.other,
                self.victim.listening_first,
            ));
            assert_no_mallory(&w.wire);
            w.messages.clear();
            if w.finished {
                self.victim.listening = None;
            }
        }
    }
}

/// A [`MemoryEventStore`] two endpoints append to and replay from.
#[derive(Debug, Clone)]
struct SharedEvents(Arc<Mutex<MemoryEventStore>>);

impl Default for SharedEvents {
    fn default() -> Self {
        let store = MemoryEventStore::new(EventStoreLimits::default());
        Self(Arc::new(Mutex::new(store)))
    }
}

impl SharedEvents {
    fn store(&self) -> std::sync::MutexGuard<'_, MemoryEventStore> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl EventStore for SharedEvents {
    fn append(&mut self, stream: &EventStream, message: &[u8]) -> Result<String, EventStoreError> {
        self.store().append(stream, message)
    }
    fn replay_after(&self, event_id: &str) -> Result<Replay, EventStoreError> {
        self.store().replay_after(event_id)
    }
    fn forget_session(&mut self, session: &str) {
        self.store().forget_session(session);
    }
}

/// The first process (`ep`), or the other one when there is one.
fn pick<'a>(
    ep: &'a mut HttpEndpoint,
    other: &'a mut Option<HttpEndpoint>,
    first: bool,
) -> &'a mut HttpEndpoint {
    match other {
        Some(other) if !first => other,
        _ => ep,
    }
}

/// What a victim's request got: see [`World::victim_reply`].
#[derive(Default)]
struct Got {
    /// Refused for want of room that an anonymous attacker holds, the victim anonymous
    /// too (see `victim_reply`).
    refused: bool,
    messages: Vec<Value>,
    last_event: Option<String>,
    open: Option<Watched>,
}

impl Leaked {
    /// What the attacker received (`wire`) for a request of `sent` bytes: none of the
    /// victim's data, and its session id and task id only when the request held them.
    fn check(&self, wire: &[u8], sent: &[u8]) {
        let text = String::from_utf8_lossy(wire);
        assert!(
            !text.contains(SECRET),
            "the attacker received the victim's data: {text}"
        );
        let sent = String::from_utf8_lossy(sent);
        for secret in [&self.session, &self.task].into_iter().flatten() {
            assert!(
                sent.contains(secret.as_str()) || !text.contains(secret.as_str()),
                "the attacker received the victim's id {secret}: {text}"
            );
        }
    }
}

fn assert_no_mallory(wire: &[u8]) {
    let text = String::from_utf8_lossy(wire);
    assert!(
        !text.contains(MALLORY),
        "the attacker's data reached the victim: {text}"
    );
}

/// A successful result whose text holds `secret`.
fn check_text(response: &Value, secret: &str) {
    let text = response.to_string();
    assert!(
        response.get("error").is_none() && text.contains(secret),
        "the victim's result is not its own ({secret}): {response}"
    );
    assert!(
        response["result"]["isError"] != true,
        "the victim's call failed: {response}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An anonymous attacker's listens fill the open streams while the victim's legacy
    /// call waits for its input between two polls, the victim late for its next poll
    /// (15 s pass). An anonymous victim's call is ended for room, and its next poll must
    /// say so (it used to find nothing, at every poll); an authenticated victim's is not
    /// ended (it used to be).
    #[test]
    fn a_polled_call_ended_for_room_is_told() {
        for principals in [3, 2] {
            let mut input = vec![8 | principals, 0xd5, 0, 0xd5, 0, 0xd5, 0, 0x42];
            input.extend_from_slice(&[0x92, 0xff, 0x92, 0xff, 0x92, 0xff]);
            input.extend_from_slice(&[0xd5, 0, 0xd5, 0, 0xd5, 0, 0xd5, 0, 0xd5]);
            isolation(&input);
        }
    }

    /// Behind a load balancer: the victim's session begun on the first process, its
    /// polled call on the second; 25 s on, the attacker's calls fill the first one's
    /// streams, and it sweeps the sessions idle by its own clock. The victim's session is
    /// one of them, though in use on the second process: its next poll there must still
    /// find its call (the sweep used to forget its events in the shared store: `400`).
    #[test]
    fn a_session_swept_by_one_process_is_resumed_on_the_other() {
        let mut input = vec![0x3a, 0x40, 0x92, 0xff, 0x92, 0xff, 0x92, 0xff, 0x02];
        input.extend_from_slice(&[0x92, 0xff, 0x92, 0xff]);
        for _ in 0..9 {
            input.extend_from_slice(&[0xae, 0x00]);
        }
        input.push(0x00);
        isolation(&input);
    }

    /// Without sessions the server's requests have the machine's ids (the first is 0):
    /// the attacker's answer under the id of the victim's `elicitation/create`, as another
    /// principal or anonymous, must not reach the victim's call (it did).
    #[test]
    fn without_sessions_the_attacker_cannot_answer_the_victims_request() {
        for principals in [0, 2, 1] {
            isolation(&[0x20 | principals, 0x02, 0x88, 0x04, 0x00]);
            isolation(&[0x20 | principals, 0x02, 0x89, 0x04, 0x00]);
        }
    }

    /// Behind a load balancer, polling: the victim idles out twice while its 2025 task
    /// waits for its input on a `tasks/result` it polls, so it leaves two calls waiting in
    /// sessions it gave up, its share of open streams. Its next such call, in a new
    /// session, must take the place of one it left (it got `503` "Too many requests of
    /// this client").
    #[test]
    fn a_victim_is_not_locked_out_by_the_calls_it_left() {
        isolation(include_bytes!(
            "../../../../fuzz/regressions/isolation/principal-locked-out-by-calls-it-left"
        ));
    }

    /// Every kind of the victim's work, alone and with each of the attacker's requests
    /// in between its steps.
    #[test]
    fn smoke() {
        for control in [
            0u8, 1, 2, 3, 4, 8, 9, 10, 11, 12, 16, 17, 18, 19, 24, 26, 48, 59, 32, 33, 34, 36,
        ] {
            for work in 0..16u8 {
                isolation(&[control, work, work, work, work]);
                for kind in 0..23u8 {
                    for option in [0u8, 2, 6, 0x12, 0x42, 0x4a] {
                        let input = [control, work, 0x80 | kind, option, 0, 0x80 | kind, option];
                        isolation(&input);
                    }
                }
                // A call answered at once while work that waits (a call asking for
                // input, a task) waits, the attacker between.
                if !matches!(work >> 1, 1 | 2 | 4) {
                    continue;
                }
                for side in [0x20, 0x23] {
                    isolation(&[control, work, side, work, side, work]);
                    for kind in 0..23u8 {
                        let input = [control, work, side, 0x80 | kind, 0x4a, side, 0];
                        isolation(&input);
                    }
                }
                // Two pieces of work waiting at once, in turns.
                for other in [2u8, 3, 8, 9] {
                    isolation(&[control, work, 0x10 | other, 0x10, 0x10, 0, 0x10]);
                    for kind in [2u8, 8, 9, 19] {
                        for option in [0x04u8, 0x44] {
                            let input = [control, work, 0x10 | other, 0x80 | kind, option, 0x10];
                            isolation(&input);
                        }
                    }
                }
            }
        }
    }
}
