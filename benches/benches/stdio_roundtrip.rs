//! `stdio_roundtrip`: `tools/call echo` through a real child process running the bundled
//! example server (`mcp_blocking::serve_stdio(example::server())`). The child is this
//! very binary, re-executed with `MCP_BENCH_SERVE=example` (see `mcp_benches::child`).
//!
//! Cases (each on a fresh connection, after a warm-up):
//!
//! * `blocking` — sequential round trips with `mcp_blocking::Client::call_tool`, 64 B and
//!   64 KiB texts, `EraMode::Legacy` (2025-11-25) and `EraMode::Modern` (2026-07-28);
//! * `blocking {1,8} in flight 64B` — calls through `mcp_blocking::ClientHandle`s of one
//!   client from one or eight threads at once (each making its calls one after another):
//!   calls/s, and the latency of each call under that load. The eight are pipelined on
//!   the one stdio connection; whichever waiting thread is free drives it (no driver
//!   thread);
//! * `smol/futures-lite 1 in flight` — the same sequential calls (64 B) through
//!   `mcp_smol`, the driver joined with the caller's future by
//!   `futures_lite::future::block_on(driver.join(work))` (`mcp_smol::Driver::join`);
//! * `smol/futures-lite 8 in flight` — eight `call_tool` futures at a time on one
//!   connection (eight workers, each awaiting its calls one after another), same driver
//!   setup: calls/s, and the latency of each call under that load;
//! * `smol/async-io …` — the same two with `async_io::block_on` (what `smol::block_on`
//!   is) instead: the reactor then runs on the calling thread instead of async-io's
//!   helper thread, which saves a thread hand-off per readiness event; with this runner
//!   also `1 in flight 64KiB`, one call at a time with 64 KiB texts;
//! * `bare` — the reference point of "Targets" in `benches/README.md`: one thread writing
//!   JSON-RPC with `serde_json` to a child that answers with `serde_json`, no MCP logic
//!   (the child runs with `MCP_BENCH_SERVE=bare`). Compare ratios within one run.
//!
//! ```text
//! cargo bench -p mcp-benches --bench stdio_roundtrip [-- FILTER…]
//! MCP_BENCH_ITERS=2000 cargo bench -p mcp-benches --bench stdio_roundtrip -- 64B modern
//! taskset -c 0 cargo bench -p mcp-benches --bench stdio_roundtrip   # stable wall clock
//! ```
//!
//! Unpinned on a small VM the figures are bimodal per case (client and child on one vCPU,
//! or cross-vCPU wake-ups costing ~50 µs each): pin the run, or compare ratios to `bare`
//! within one run, or count instructions (see `benches/README.md`).
//!
//! Client instructions per round trip (the client process only: the child is not traced,
//! the kernel's work is not counted):
//!
//! ```text
//! bash benches/callgrind.sh stdio_roundtrip "blocking 64B legacy" 5000
//! ```

use std::future::Future;
use std::hint::black_box;

use futures_lite::future;
use mcp_benches::child::{self, BareClient, ServerKind};
use mcp_benches::{Report, Settings, payload};
use mcp_proto::client::ClientConfig;
use mcp_proto::{EraMode, ProtocolVersion};
use serde_json::json;

const ERAS: [(&str, EraMode); 2] = [("legacy", EraMode::Legacy), ("modern", EraMode::Modern)];

/// The version each era mode must settle on against the example server.
fn expected(mode: EraMode) -> ProtocolVersion {
    match mode {
        EraMode::Modern => ProtocolVersion::LATEST_MODERN,
        _ => ProtocolVersion::LATEST_LEGACY,
    }
}

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("mcp-benches", "0.1.0").era_mode(mode)
}

fn blocking_case(settings: &Settings, key: &str, mode: EraMode, text: &str, n: usize) {
    let command = child::blocking_command(ServerKind::Example);
    let mut client = mcp_blocking::Client::connect_stdio(command, config(mode))
        .unwrap_or_else(|e| panic!("{key}: connect: {e}"));
    let version = client.protocol_version();
    assert_eq!(version, expected(mode), "{key}: negotiated version");
    let first = client
        .call_tool("echo", json!({ "text": text }))
        .expect("echo");
    assert_eq!(first.text(), text, "{key}: the echo came back");
    settings.measure(
        &format!("{key} ({version})"),
        "round trips",
        n,
        1,
        None,
        || {
            let result = client
                .call_tool("echo", json!({ "text": text }))
                .expect("echo");
            black_box(result.content.len());
        },
    );
    let shutdown = client.close();
    assert!(!shutdown.killed, "{key}: the server exited on stdin EOF");
}

fn blocking_threads_case(
    settings: &Settings,
    key: &str,
    mode: EraMode,
    text: &str,
    n: usize,
    threads: usize,
) {
    let command = child::blocking_command(ServerKind::Example);
    let client = mcp_blocking::Client::connect_stdio(command, config(mode))
        .unwrap_or_else(|e| panic!("{key}: connect: {e}"));
    let version = client.protocol_version();
    assert_eq!(version, expected(mode), "{key}: negotiated version");
    let name = format!("{key} ({version})");
    mcp_benches::blocking_echo_run(settings, &name, &client, text, n, threads);
    let shutdown = client.close();
    assert!(!shutdown.killed, "{key}: the server exited on stdin EOF");
}

fn bare_case(settings: &Settings, key: &str, text: &str, n: usize) {
    let mut client = BareClient::spawn().expect("spawn the bare server");
    assert_eq!(client.echo(text).expect("bare echo"), text.len());
    settings.measure(key, "round trips", n, 1, None, || {
        black_box(client.echo(text).expect("bare echo"));
    });
}

/// What runs the `mcp_smol` driver joined with the calls.
#[derive(Debug, Clone, Copy)]
enum Runner {
    /// `futures_lite::future::block_on`: no executor, no reactor on this thread (async-io
    /// drives its reactor on its own helper thread and wakes this one).
    FuturesLite,
    /// `async_io::block_on` (what `smol::block_on` is): the reactor runs on this thread
    /// while it would otherwise park.
    AsyncIo,
}

impl Runner {
    fn label(self) -> &'static str {
        match self {
            Runner::FuturesLite => "smol/futures-lite",
            Runner::AsyncIo => "smol/async-io",
        }
    }

    fn block_on<T>(self, f: impl Future<Output = T>) -> T {
        match self {
            Runner::FuturesLite => future::block_on(f),
            Runner::AsyncIo => async_io::block_on(f),
        }
    }
}

struct SmolCase<'a> {
    key: &'a str,
    mode: EraMode,
    runner: Runner,
    text: &'a str,
    n: usize,
    in_flight: usize,
}

fn smol_case(settings: &Settings, case: &SmolCase<'_>) {
    let SmolCase {
        key,
        mode,
        runner,
        text,
        n,
        in_flight,
    } = *case;
    let command = child::smol_command(ServerKind::Example);
    let (client, driver) = mcp_smol::connect_stdio(command, config(mode))
        .unwrap_or_else(|e| panic!("{key}: spawn: {e}"));
    let quiet = settings.quiet();
    let warmup = settings.warmup(n);
    let work = mcp_benches::smol_echo_run(
        client,
        key,
        expected(mode),
        text,
        (warmup, n, in_flight),
        quiet,
    );
    let (driven, (version, elapsed, latencies, faults)) = runner.block_on(driver.join(work));
    driven.unwrap_or_else(|e| panic!("{key}: driver: {e}"));
    if let Some(elapsed) = elapsed {
        let name = format!("{key} ({version})");
        let mut report = Report::new(&name, "calls", n, elapsed, latencies, None);
        report.minor_faults = faults;
        settings.report(&report);
    }
}

fn main() {
    child::serve_if_child();
    let settings = Settings::from_env();
    settings.title(
        "stdio_roundtrip",
        "tools/call echo against the example server in a child process",
    );
    // (label, text length, default sequential iterations)
    let sizes = [("64B", 64, 20_000), ("64KiB", 64 * 1024, 2_000)];
    for (size, len, default_n) in sizes {
        let text = payload(len);
        let n = settings.iters(default_n);
        for (era, mode) in ERAS {
            let key = format!("blocking {size} {era}");
            if settings.selected(&key) {
                blocking_case(&settings, &key, mode, &text, n);
            }
        }
        let key = format!("bare serde_json pair {size}");
        if settings.selected(&key) {
            bare_case(&settings, &key, &text, n);
        }
    }
    let text = payload(64);
    for in_flight in [1, 8] {
        let n = settings.iters(if in_flight == 1 { 20_000 } else { 40_000 });
        for (era, mode) in ERAS {
            let key = format!("blocking {in_flight} in flight 64B {era}");
            if settings.selected(&key) {
                blocking_threads_case(&settings, &key, mode, &text, n, in_flight);
            }
        }
    }
    for runner in [Runner::FuturesLite, Runner::AsyncIo] {
        for in_flight in [1, 8] {
            let n = settings.iters(if in_flight == 1 { 20_000 } else { 40_000 });
            for (era, mode) in ERAS {
                let key = format!("{} {in_flight} in flight 64B {era}", runner.label());
                if settings.selected(&key) {
                    let case = SmolCase {
                        key: &key,
                        mode,
                        runner,
                        text: &text,
                        n,
                        in_flight,
                    };
                    smol_case(&settings, &case);
                }
            }
        }
    }
    // Large texts through mcp_smol, one call at a time (the reactor on this thread).
    let text = payload(64 * 1024);
    let n = settings.iters(2_000);
    for (era, mode) in ERAS {
        let key = format!("smol/async-io 1 in flight 64KiB {era}");
        if settings.selected(&key) {
            let case = SmolCase {
                key: &key,
                mode,
                runner: Runner::AsyncIo,
                text: &text,
                n,
                in_flight: 1,
            };
            smol_case(&settings, &case);
        }
    }
    settings.note(
        "round trips/s are sequential (one call at a time); \"8 in flight\" is calls/s with \
         eight calls outstanding, p50/p99 per call under that load (blocking: eight threads on \
         ClientHandles of one client); smol/futures-lite runs the \
         driver with futures_lite::future::block_on (reactor on async-io's helper thread), \
         smol/async-io with async_io::block_on (= smol::block_on, reactor on this thread)",
    );
}
