//! `machine_roundtrip`: the pure machines back to back in memory — the client machine
//! (`mcp_proto::client::Client`) against the example server machine
//! (`mcp_proto::server::example::server()`), no process, no thread, no syscall, a fixed
//! `now`. One round trip is what an adapter does for one `call_tool("echo", {text})`:
//!
//! 1. `client_half_send`: build the `CallRequest`, `Client::call`, `poll_transmit`;
//! 2. `server_half`: `Server::handle_input` of those bytes, `poll_transmit`;
//! 3. `client_half_receive`: `Client::handle_read`, drain `poll_event` to the
//!    `CallCompleted`, parse the `CallToolResult` (as `mcp_blocking::Client::call_tool`
//!    does), `poll_timeout`, drop the result.
//!
//! ```text
//! cargo bench -p mcp-benches --bench machine_roundtrip [-- FILTER…]
//! ```
//!
//! Instructions per round trip (the figure to compare; wall time on a shared 2-core
//! machine moves 10–50 % between runs). `MCP_BENCH_QUIET=1` runs exactly
//! `MCP_BENCH_ITERS` round trips of each selected case with no clock reads and no output:
//!
//! ```text
//! cargo bench -p mcp-benches --bench machine_roundtrip --no-run   # prints the binary path
//! BIN=$(ls -t target/release/deps/machine_roundtrip-* | grep -v '\.d$' | head -1)
//! # whole round trip (client + server machines), legacy era:
//! MCP_BENCH_ITERS=10000 MCP_BENCH_QUIET=1 valgrind --tool=callgrind \
//!     --callgrind-out-file=/tmp/cg.legacy "$BIN" 64B legacy
//! #   instructions per round trip = total Ir / 10000 (setup adds < 1 %; for an exact
//! #   figure run 20000 too and take (Ir(20000) - Ir(10000)) / 10000)
//! # the client machine only (steps 1 and 3):
//! MCP_BENCH_ITERS=10000 MCP_BENCH_QUIET=1 valgrind --tool=callgrind \
//!     --toggle-collect='*client_half_*' --callgrind-out-file=/tmp/cg.client "$BIN" 64B legacy
//! callgrind_annotate --inclusive=yes /tmp/cg.client | head -40       # where it goes
//! ```
//!
//! `benches/callgrind.sh` does all of this and prints the per-round-trip figures.

use mcp_proto::Instant;
use std::hint::black_box;

use mcp_benches::{Settings, payload};
use mcp_proto::client::{
    CallId, CallRequest, Client, ClientConfig, ConnId, ConnectionState, Event,
};
use mcp_proto::server::{Server, example};
use mcp_proto::{EraMode, ProtocolVersion};
use serde_json::json;

/// The two machines and their wires.
struct Pair {
    client: Client,
    server: Server,
    now: Instant,
    to_server: Vec<u8>,
    to_client: Vec<u8>,
}

impl Pair {
    /// Connects in `mode`; returns the pair and the negotiated version.
    fn connect(mode: EraMode) -> (Pair, ProtocolVersion) {
        let now = Instant::ZERO;
        let config = ClientConfig::new("mcp-benches", "0.1.0").era_mode(mode);
        let mut pair = Pair {
            client: Client::stdio(config, now),
            server: example::server(),
            now,
            to_server: Vec::with_capacity(1 << 17),
            to_client: Vec::with_capacity(1 << 17),
        };
        for _ in 0..16 {
            while pair
                .client
                .poll_transmit(now, &mut pair.to_server)
                .is_some()
            {}
            pair.server.handle_input(now, &pair.to_server);
            pair.to_server.clear();
            while pair
                .server
                .poll_transmit(now, &mut pair.to_client)
                .is_some()
            {}
            pair.client.handle_read(now, ConnId::STDIO, &pair.to_client);
            pair.to_client.clear();
            while pair.client.poll_event().is_some() {}
            if let ConnectionState::Ready(_, version) = pair.client.state() {
                return (pair, version);
            }
        }
        panic!("no connection in {mode:?}: {:?}", pair.client.state());
    }

    fn round_trip(&mut self, text: &str) -> usize {
        let call = client_half_send(&mut self.client, self.now, text, &mut self.to_server);
        server_half(
            &mut self.server,
            self.now,
            &mut self.to_server,
            &mut self.to_client,
        );
        client_half_receive(&mut self.client, self.now, &mut self.to_client, call)
    }
}

#[inline(never)]
fn client_half_send(client: &mut Client, now: Instant, text: &str, out: &mut Vec<u8>) -> CallId {
    let request = CallRequest::call_tool("echo", json!({ "text": text }));
    let call = client.call(now, request).expect("call accepted");
    while client.poll_transmit(now, out).is_some() {}
    call
}

#[inline(never)]
fn server_half(server: &mut Server, now: Instant, input: &mut Vec<u8>, out: &mut Vec<u8>) {
    server.handle_input(now, input);
    input.clear();
    while server.poll_transmit(now, out).is_some() {}
}

/// Returns the length of the first content block, to keep the parse observable.
#[inline(never)]
fn client_half_receive(
    client: &mut Client,
    now: Instant,
    input: &mut Vec<u8>,
    call: CallId,
) -> usize {
    client.handle_read(now, ConnId::STDIO, input);
    input.clear();
    let mut answer = None;
    while let Some(event) = client.poll_event() {
        if let Event::CallCompleted { call: id, outcome } = event
            && id == call
        {
            let result = outcome
                .expect("echo succeeds")
                .tool_result()
                .expect("a CallToolResult");
            answer = Some(result.content.first().map_or(0, |b| b.get().len()));
        }
    }
    black_box(client.poll_timeout());
    answer.expect("the call completed in one turn")
}

fn main() {
    let settings = Settings::from_env();
    settings.title(
        "machine_roundtrip",
        "client machine <-> example server machine in memory, tools/call echo",
    );
    let cases = [("echo 64B", 64, 200_000), ("echo 64KiB", 64 * 1024, 4_000)];
    for (what, size, default_n) in cases {
        let text = payload(size);
        for (era, mode) in [("legacy", EraMode::Legacy), ("modern", EraMode::Modern)] {
            let key = format!("{what} {era}");
            if !settings.selected(&key) {
                continue;
            }
            let (mut pair, version) = Pair::connect(mode);
            // One checked call before timing: the echo really comes back.
            let call = client_half_send(&mut pair.client, pair.now, &text, &mut pair.to_server);
            server_half(
                &mut pair.server,
                pair.now,
                &mut pair.to_server,
                &mut pair.to_client,
            );
            assert!(
                String::from_utf8_lossy(&pair.to_client).contains(&text),
                "the server echoed the text"
            );
            assert!(
                client_half_receive(&mut pair.client, pair.now, &mut pair.to_client, call) > size
            );
            let n = settings.iters(default_n);
            settings.measure(
                &format!("{key} ({version})"),
                "round trips",
                n,
                1,
                None,
                || {
                    black_box(pair.round_trip(black_box(&text)));
                },
            );
        }
    }
    settings.note(
        "one round trip = client call + server reply + client parse, both machines on this thread; \
         count instructions with callgrind (see the file's docs) rather than trusting wall time",
    );
}
