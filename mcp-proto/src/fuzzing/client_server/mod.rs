//! The client machine against the crate's own server, over a connection the fuzz input
//! breaks: Streamable HTTP (the `http` world) or a stdio process (the `stdio` world).
//!
//! The other client targets answer the client with arbitrary bytes, which seldom get past
//! the first parse; here a real server answers, so what gets exercised is the client's
//! policy: era negotiation, legacy sessions (and their loss when the server restarts),
//! the connection pool, open SSE streams, process restarts, rounds of input, header
//! learning, cancellation and deadlines. Every byte arrives in order unless the input
//! holds a connection back, cuts it, has the server close it or its process exit,
//! refuses new connections or processes, or leaves them connecting; time passes in
//! jumps.
//!
//! Both worlds share the calls (the `Ledger`) and the checks on what they got.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

use crate::Instant;
use crate::client::{
    AcceptDefaults, CallError, CallId, CallOutput, CallRequest, Client, ClientConfig, Event,
    InputHandler, ListenEnd, ListenFilter,
};
use crate::jsonrpc::codes;
use crate::model::ClientCapabilities;
use crate::server::{Server, Tool, ToolCall, ToolOutcome, example};
use crate::version::EraMode;

use super::server::configure;

mod http;
mod stdio;

/// Turns of the drive loop after which both sides must have settled: a turn moves about
/// one exchange per connection, and 256 operations may queue a few hundred listings of
/// ten pages each.
const MAX_TURNS: usize = 16 * 1024;

/// Bytes the client machine may hold between operations (its buffers, queued requests,
/// the calls' state), far above what this workload needs.
const MAX_RETAINED: usize = 1 << 20;

/// Operations read from one input.
const MAX_OPERATIONS: usize = 256;

/// What a call asked for, to check what it got.
#[derive(Debug, Clone)]
enum Asked {
    /// `count` with this number: the server runs it at most once, and a result that
    /// arrives carries the number.
    Count(u64),
    /// `tools/list`: a result lists `count`.
    List,
    /// `ask`: rounds of input, started while the server's life was this number (a
    /// round's `requestState` is sealed for that process only).
    Ask(u64),
    /// `hang`: never answered, ends by cancellation, deadline or close.
    Hang,
    /// `count_later` with this number, as a task, started while the server's life
    /// (process) was the second number: like `Count`, and the task may be lost with
    /// that process.
    Task(u64, u64),
}

/// The calls started, what they asked, how they ended; and the server's runs of `count`.
struct Ledger {
    /// Executions of `count` on the server (any process of it), by number.
    runs: Arc<Mutex<Vec<u64>>>,
    /// By client (its index) and call.
    calls: BTreeMap<(usize, CallId), Asked>,
    /// How each completed call ended (the text of its error).
    outcomes: BTreeMap<(usize, CallId), Result<(), String>>,
    next_count: u64,
    /// Server processes started so far (a task lives and dies with its process).
    servers: u64,
    /// The client declared elicitation, sampling and roots.
    capable: bool,
    /// The client's era mode and the server's versions can meet.
    compatible: bool,
}

/// One side of the world the client talks to, with the network or pipes in between.
trait Wire {
    /// The client machines (one, or two sharing the server).
    fn clients(&mut self) -> &mut [Client];
    /// The fake clock.
    fn now(&mut self) -> &mut Instant;
    /// A network operation (kinds 6 and up; see the targets).
    fn network(&mut self, kind: u8, operand: u8, ledger: &mut Ledger);
    /// One turn of the clients' commands, the network and the server; whether anything
    /// happened.
    fn turn(&mut self, ledger: &mut Ledger) -> bool;
    /// The checks that hold between operations, beyond the ledger's.
    fn check(&mut self);
    /// Holds nothing back and refuses nothing from now on.
    fn heal(&mut self);
    /// The server's next deadline.
    fn server_deadline(&self) -> Option<Instant>;
    /// The checks once the clients have closed and every deadline of either side passed.
    fn check_released(&mut self);
}

/// The server with the fuzz tools, `count`, which logs each run in `runs`, and
/// `count_later`, which does the same as a task; seeded for the server's life
/// `ledger.servers` as the adapters seed each process: task ids nobody can guess and
/// that differ between processes, `requestState` sealed under a key of its own.
fn server(variant: u8, ledger: &Ledger) -> Server {
    let mut seed = [0; 32];
    seed[..8].copy_from_slice(&ledger.servers.to_be_bytes());
    let mut server = configured_server(variant, &ledger.runs);
    server.seal_request_states(seed, 0);
    seed[31] = 1;
    server.seed_tasks(seed, 0);
    server
}

fn configured_server(variant: u8, runs: &Arc<Mutex<Vec<u64>>>) -> Server {
    let runs = Arc::clone(runs);
    example::server_with(move |c| {
        configure(c, variant);
        c.tools
            .push(counting("count", "Logs `n` and answers it", &runs));
        let later = "Logs `n` and answers it, as a task when asked (done after one poll)";
        c.tools
            .push(counting("count_later", later, &runs).as_task(1));
    })
}

/// A tool that logs its argument `n` in `runs` and answers it.
fn counting(name: &str, description: &str, runs: &Arc<Mutex<Vec<u64>>>) -> Tool {
    let runs = Arc::clone(runs);
    Tool::new(
        name,
        description,
        json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        move |call: &ToolCall<'_>| {
            let n = call.arguments.get("n").and_then(Value::as_u64).unwrap_or(0);
            runs.lock().unwrap_or_else(PoisonError::into_inner).push(n);
            ToolOutcome::text(n.to_string())
        },
    )
}

/// The text of a tool result's first block.
fn first_text(output: &CallOutput) -> Option<String> {
    let result: Value = serde_json::from_str(output.result.get()).ok()?;
    Some(result["content"][0]["text"].as_str()?.to_owned())
}

/// The HTTP client against an [`HttpEndpoint`](crate::server::http::HttpEndpoint) with
/// legacy sessions. The first byte: the client's era mode (low two bits: auto, legacy,
/// modern), the server's variant (bits 2–3, as the other server targets pick it), SSE
/// polling (bit 4), clients without elicitation, sampling and roots (bit 5), two
/// clients sharing the server instead of one (bit 6), a busy server with three places
/// and one stream of each kind (bit 7: connections past them are answered `503` with
/// `Retry-After`). Then one operation per byte (low four bits; the high four are the
/// operand): 0 calls `count`, 12 calls `count_later` as a task (polled to its end), 1
/// lists tools, 2 calls `ask` for input, 3 calls `hang` (operand 8 and up: opens a 2026
/// `subscriptions/listen` instead), 4 cancels a call, 5 lets time pass
/// (2^(operand+2) ms); then the network's: 6 holds back or releases a
/// connection, 7 lets a few of a held connection's bytes through (either way), 8 cuts a
/// connection, 9 has the server close one, 10 refuses the next connections, 11 restarts
/// the server (its sessions lost), 13 leaves new connections connecting (or not), 14
/// lets them connect, 15 releases every connection.
///
/// Invariants: nothing panics; after every operation both sides settle within a bounded
/// number of turns and the client keeps no deadline already past; the client writes
/// only on connections it opened and that are open, opens no more than twice its pool's
/// bound at once, and holds no more than 1 MiB; `count` and `count_later` run at most
/// once per call, and a call that gets a result gets its own (a task may be lost only
/// with the server process that held it); no call is refused for
/// how the client sent it (`-32020`, an invalid request, a 400 without a reason the
/// client's configuration explains); once the network heals, a new call and a listing
/// succeed (when the client's era mode and the server's versions can meet); after the
/// client closes, every call has completed exactly once.
pub fn client_server(data: &[u8]) {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let (config, mut ledger) = setup(control);
    let clients = if control & 64 == 0 { 1 } else { 2 };
    let (variant, sse_polling) = ((control >> 2) & 3, control & 16 != 0);
    let busy = control & 128 != 0;
    let mut w = http::HttpWorld::new(&config, clients, variant, sse_polling, busy, &ledger);
    run(&mut w, &mut ledger, input);
}

/// The stdio client against the [`Server`] machine as its process, restarted when the
/// client asks. The first byte as for [`client_server`] (bits 4 and 6 unused: one
/// client); operations 0–5 and 12 too; then 6 holds back or releases the pipes, 7 lets a few
/// held bytes through (either way), 8 and 11 end the process at once (its exit reported
/// before the end of its output is read), 9 ends it after what it wrote is read, 10
/// makes the next starts fail, 15 releases the pipes.
///
/// Invariants as for [`client_server`], restarts in place of a pool: the client never
/// writes to a process whose end it read, `count` never runs twice (a call in flight when
/// the process exits is not sent again), and a call and a listing succeed after the
/// process restarts.
pub fn client_server_stdio(data: &[u8]) {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let (config, mut ledger) = setup(control);
    let mut w = stdio::StdioWorld::new(config, (control >> 2) & 3, &ledger);
    run(&mut w, &mut ledger, input);
}

/// The client's configuration and the ledger, from the first byte.
fn setup(control: u8) -> (ClientConfig, Ledger) {
    let mode = match control & 3 {
        1 => EraMode::Legacy,
        2 => EraMode::Modern,
        _ => EraMode::Auto,
    };
    let variant = (control >> 2) & 3;
    let capable = control & 32 == 0;
    let mut caps = ClientCapabilities::none();
    caps.elicitation_form = capable;
    caps.sampling = capable;
    caps.roots = capable;
    let config = ClientConfig::new("fuzz", "0")
        .era_mode(mode)
        .capabilities(caps);
    let compatible = match mode {
        EraMode::Legacy => variant != 2,
        EraMode::Modern => variant != 1,
        _ => true,
    };
    let ledger = Ledger {
        runs: Arc::new(Mutex::new(Vec::new())),
        calls: BTreeMap::new(),
        outcomes: BTreeMap::new(),
        next_count: 0,
        servers: 1,
        capable,
        compatible,
    };
    (config, ledger)
}

/// The operations, then the healed network's checks, then the close.
fn run(w: &mut impl Wire, ledger: &mut Ledger, input: &[u8]) {
    for &op in input.iter().take(MAX_OPERATIONS) {
        let operand = op >> 4;
        match op & 15 {
            kind @ (0..=4 | 12) => ledger.operate(w, kind, operand),
            5 => *w.now() += Duration::from_millis(1 << (operand + 2)),
            kind => w.network(kind, operand, ledger),
        }
        settle(w, ledger);
    }
    // The network heals; what is in flight ends, by answer or deadline.
    w.heal();
    settle(w, ledger);
    advance(w, ledger, Duration::from_secs(70));
    if ledger.compatible {
        let now = *w.now();
        let mut fresh = Vec::new();
        for who in 0..w.clients().len() {
            let client = &mut w.clients()[who];
            fresh.push(ledger.start_count(who, client, now, false));
            fresh.push(ledger.start_count(who, client, now, true));
            let list = CallRequest::list_tools();
            fresh.push(ledger.start(who, client, now, list, Asked::List));
        }
        let end = now + Duration::from_secs(70);
        let done = |l: &Ledger| fresh.iter().flatten().all(|c| l.outcomes.contains_key(c));
        while *w.now() < end && !done(ledger) {
            advance(w, ledger, Duration::from_millis(10));
        }
        for call in fresh.iter().flatten() {
            let outcome = ledger.outcomes.get(call);
            assert!(
                outcome.is_some_and(Result::is_ok),
                "{:?} after the network healed: {outcome:?}",
                ledger.calls[call]
            );
        }
    }
    let now = *w.now();
    for client in w.clients() {
        client.close(now);
    }
    settle(w, ledger);
    advance(w, ledger, Duration::from_secs(20));
    for call in ledger.calls.keys() {
        // Twice is caught as it happens.
        assert!(
            ledger.outcomes.contains_key(call),
            "call {call:?} never completed"
        );
    }
    // Every deadline passes (a server's sessions are dropped lazily, when room is
    // needed, so one whose client could not end it may stay).
    advance(w, ledger, Duration::from_secs(3600));
    w.check_released();
}

/// Both sides take their turns until neither has anything left to do; then the checks
/// that hold between operations.
fn settle(w: &mut impl Wire, ledger: &mut Ledger) {
    let mut turns = 0;
    while w.turn(ledger) {
        turns += 1;
        assert!(turns <= MAX_TURNS, "the clients and server never settle");
    }
    let now = *w.now();
    for client in w.clients() {
        let due = client.poll_timeout();
        assert!(
            due.is_none_or(|t| t > now),
            "a client keeps a deadline already past ({due:?} at {now:?}): its adapter would spin"
        );
        let retained = client.retained_bytes();
        assert!(retained <= MAX_RETAINED, "a client holds {retained} bytes");
    }
    w.check();
    ledger.check_runs();
}

/// Time passes by `span`, stopping at every deadline of either side on the way.
fn advance(w: &mut impl Wire, ledger: &mut Ledger, span: Duration) {
    let end = *w.now() + span;
    while *w.now() < end {
        let now = *w.now();
        let next = w.server_deadline().unwrap_or(end);
        let next = w
            .clients()
            .iter()
            .filter_map(Client::poll_timeout)
            .fold(next.min(end), Instant::min);
        *w.now() = next.max(now + Duration::from_millis(1)).min(end);
        settle(w, ledger);
    }
}

impl Ledger {
    /// Operations 0–4 and 12: calls started (`count`, a listing, `hang` and
    /// `count_later` on the client the operand picks, `ask` on the first) and cancelled.
    fn operate(&mut self, w: &mut impl Wire, kind: u8, operand: u8) {
        let now = *w.now();
        let clients = w.clients();
        let who = usize::from(operand) % clients.len();
        match kind {
            1 => {
                let request = CallRequest::list_tools();
                self.start(who, &mut clients[who], now, request, Asked::List);
            }
            2 => {
                let keys: Vec<&str> = [(1, "e1"), (2, "s1"), (4, "r1")]
                    .iter()
                    .filter(|(bit, _)| operand & bit != 0)
                    .map(|(_, k)| *k)
                    .collect();
                let rounds = 1 + (operand >> 3);
                let args = json!({"keys": keys, "rounds": rounds, "tag": format!("t{operand}")});
                let request = CallRequest::call_tool("ask", args);
                let life = self.servers;
                self.start(0, &mut clients[0], now, request, Asked::Ask(life));
            }
            3 => {
                // Operand 8 and up: a 2026 `subscriptions/listen`, open until cancelled
                // or closed (refused locally in the legacy era).
                let request = if operand & 8 == 0 {
                    CallRequest::call_tool("hang", json!({}))
                } else {
                    CallRequest::listen(&ListenFilter::new().tools().prompts().resources())
                };
                self.start(who, &mut clients[who], now, request, Asked::Hang);
            }
            4 => {
                let open: Vec<(usize, CallId)> = self
                    .calls
                    .keys()
                    .filter(|c| !self.outcomes.contains_key(c))
                    .copied()
                    .collect();
                if !open.is_empty() {
                    let (who, call) = open[usize::from(operand) % open.len()];
                    let _ = clients[who].cancel(now, call);
                }
            }
            _ => {
                self.start_count(who, &mut clients[who], now, kind == 12);
            }
        }
    }

    fn start(
        &mut self,
        who: usize,
        client: &mut Client,
        now: Instant,
        request: CallRequest,
        asked: Asked,
    ) -> Option<(usize, CallId)> {
        let call = client.call(now, request).ok()?;
        self.calls.insert((who, call), asked);
        Some((who, call))
    }

    /// `count`, or `count_later` as a task, with the next number.
    fn start_count(
        &mut self,
        who: usize,
        client: &mut Client,
        now: Instant,
        task: bool,
    ) -> Option<(usize, CallId)> {
        self.next_count += 1;
        let n = self.next_count;
        if task {
            let request = CallRequest::call_tool("count_later", json!({"n": n})).as_task(None);
            self.start(who, client, now, request, Asked::Task(n, self.servers))
        } else {
            let request = CallRequest::call_tool("count", json!({"n": n}));
            self.start(who, client, now, request, Asked::Count(n))
        }
    }

    /// Client `who`'s events: input answered with defaults, completions checked.
    fn events(&mut self, who: usize, client: &mut Client, now: Instant) -> bool {
        let mut any = false;
        while let Some(event) = client.poll_event() {
            any = true;
            match event {
                Event::InputRequested { input, request, .. } => {
                    let answer = AcceptDefaults.answer(&request);
                    let _ = client.respond(now, input, answer);
                }
                Event::CallCompleted { call, outcome } => self.completed((who, call), &outcome),
                // A listen ends with this event instead of a completion.
                Event::SubscriptionEnded { subscription, end } => {
                    let outcome = match end {
                        ListenEnd::Failed(e) => Err(e),
                        _ => Ok(()),
                    };
                    self.ended((who, subscription), outcome);
                }
                _ => {}
            }
        }
        any
    }

    /// A listen ended.
    fn ended(&mut self, call: (usize, CallId), outcome: Result<(), CallError>) {
        let brief = outcome.as_ref().map_err(ToString::to_string).cloned();
        let earlier = self.outcomes.insert(call, brief);
        assert!(earlier.is_none(), "listen {call:?} ended twice");
        if let Err(e) = outcome {
            self.check_refusal(self.calls.get(&call), &e);
        }
    }

    fn completed(&mut self, call: (usize, CallId), outcome: &Result<CallOutput, CallError>) {
        let brief = outcome.as_ref().map(|_| ()).map_err(ToString::to_string);
        let earlier = self.outcomes.insert(call, brief);
        assert!(earlier.is_none(), "call {call:?} completed twice");
        let asked = self.calls.get(&call).cloned();
        match (&asked, outcome) {
            (Some(Asked::Count(n) | Asked::Task(n, _)), Ok(output)) => {
                assert_eq!(
                    first_text(output),
                    Some(n.to_string()),
                    "count {n} got another call's result: {}",
                    output.result.get()
                );
            }
            (Some(Asked::List), Ok(output)) => {
                let listed = output.items.iter().any(|i| i.get().contains("\"count\""));
                assert!(listed, "a listing without count: {:?}", output.items);
            }
            (_, Err(e)) => self.check_refusal(asked.as_ref(), e),
            _ => {}
        }
    }

    /// A call refused by the server: only for what this client lacks (a capability it
    /// was not given, a version its era mode excludes) or for the network's delays,
    /// never for how it sent the request.
    fn check_refusal(&self, asked: Option<&Asked>, error: &CallError) {
        let (status, error) = match error {
            CallError::Server(e) => (None, Some(e)),
            CallError::Http(f) => (f.status, f.error.as_ref()),
            _ => return,
        };
        // A request the network held back past the server's patience (408) is the
        // network's doing.
        if status == Some(408) {
            return;
        }
        // A task is lost with the process that held it, and a round's state opens only
        // in the process that sealed it.
        let lost =
            matches!(asked, Some(Asked::Task(_, life) | Asked::Ask(life)) if *life < self.servers);
        let allowed = match error.map(|e| e.code) {
            Some(codes::INVALID_PARAMS) if lost => true,
            Some(codes::MISSING_REQUIRED_CLIENT_CAPABILITY) => !self.capable,
            Some(codes::INVALID_PARAMS | codes::UNSUPPORTED_PROTOCOL_VERSION) => !self.compatible,
            Some(codes::HEADER_MISMATCH | codes::INVALID_REQUEST | codes::PARSE_ERROR) => false,
            _ => status != Some(400),
        };
        assert!(allowed, "{asked:?} refused: {status:?} {error:?}");
    }

    /// `count` ran at most once for each number.
    fn check_runs(&self) {
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        let mut seen = runs.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), runs.len(), "a call ran twice: {runs:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client that listed its tools, then listed them again while another listing of
    /// the same tools ran: each call of a tool with `x-mcp-header` still sends its header.
    #[test]
    fn regression_tool_declarations_across_listings() {
        client_server(&[
            0xff, 0xc8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xe6, 0x6d, 0x65, 0x64, 0x69, 0xb2, 0x2f,
            0xb2, 0xb2, 0xb2, 0xb2, 0x0b, 0x00, 0x23, 0xb2, 0xb2, 0xb2, 0xb2, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x00, 0x52, 0x52, 0x52, 0x52,
            0x52, 0x52, 0x52, 0x52, 0x52, 0x52, 0x52, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x39, 0x39, 0x39, 0x30, 0x7b, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x31,
            0x23, 0x5b, 0xe2, 0x3c, 0xf3, 0x0d, 0x01, 0x12, 0xd0, 0xf2, 0x75, 0x63, 0x00, 0x6f,
            0x6f, 0x6e, 0x01, 0x63, 0x5d, 0x63, 0x68, 0x6c, 0x52, 0x52, 0xff, 0x00, 0x00, 0xff,
            0x00,
        ]);
    }

    /// Every configuration of both worlds, with a few of each operation.
    #[test]
    fn smoke() {
        let scripts: [&[u8]; 3] = [
            &[
                0,
                1,
                2 | 0x10,
                0x25,
                0x0c,
                0,
                3,
                4,
                0x65,
                0x08,
                0x0b,
                0x1c,
                0,
                1,
            ],
            &[
                0x06,
                0,
                0x83,
                0x17,
                0x37,
                0x0a | 0x20,
                0,
                0x0d,
                0x93,
                0,
                0x0e,
                0x09,
                0x04,
                0,
            ],
            &[
                0, 0x08, 1, 0x09, 0x1a, 0, 0x0b, 0x25, 3, 0x16, 0x47, 0x0f, 0,
            ],
        ];
        for control in 0u8..=255 {
            for script in scripts {
                let mut input = vec![control];
                input.extend_from_slice(script);
                client_server(&input);
                client_server_stdio(&input);
            }
        }
    }
}
