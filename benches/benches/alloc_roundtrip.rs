//! `alloc_roundtrip`: heap allocations, allocated bytes and peak RSS per `tools/call echo`
//! round trip, at 64 B and 64 KiB.
//!
//! Cases:
//!
//! * `machine {64B,64KiB} {legacy,modern}` — the client machine and the example server
//!   machine back to back in memory, as `machine_roundtrip` runs them (both machines are
//!   counted: they share this process);
//! * `blocking {64B,64KiB} {legacy,modern}` — `mcp_blocking::Client::call_tool` over stdio
//!   against the example server in a child process (only this, the client process, is
//!   counted: every thread of it, the adapter's IO threads included);
//! * `smol {64B,64KiB} {legacy,modern}` — the same through `mcp_smol`, the driver and the
//!   calls joined by `async_io::block_on`; `smol/futures-lite …` with
//!   `futures_lite::future::block_on` instead (the reactor then runs on async-io's helper
//!   thread); `smol/8-in-flight …` with eight calls outstanding at a time;
//! * `blocking/http {64B,64KiB} {legacy,modern}` — the same calls over Streamable HTTP on
//!   loopback, against the example server on `serve_http` in a child process;
//!   `blocking/http/8-in-flight …` from eight threads calling through `ClientHandle`s
//!   (eight connections); `smol/http …` and `smol/http/8-in-flight …` the same through
//!   `mcp_smol::connect_http` under `async_io::block_on`;
//! * `bare {64B,64KiB}` — the bare `serde_json` client of `stdio_roundtrip`, the reference;
//!   `bare/http {64B,64KiB}` the bare HTTP/1.1 client of `http_roundtrip`.
//!
//! Every case runs in a fresh process (this binary re-executed with `MCP_ALLOC_CASE` set),
//! so its peak RSS (`VmHWM` of `/proc/self/status`) belongs to that case alone. A case
//! warms up, then counts `N` round trips (`MCP_BENCH_ITERS`, default 2,000 at 64 B and 300
//! at 64 KiB) and prints per round trip:
//!
//! * `allocs` — calls to `alloc`, `alloc_zeroed` and `realloc`;
//! * `bytes` — bytes those calls asked for (a `realloc` counts its new size);
//! * `peak heap` — the most heap bytes live at once during the counted round trips;
//! * `peak RSS` — `VmHWM` at the end of the process (start-up, connection and warm-up
//!   included), and `RSS` — `VmRSS` at the end (what stays), with its anonymous part
//!   (`RssAnon`: heap, stacks; the rest is the binary's and libc's pages, which depend on
//!   how much code ran, not on buffers).
//!
//! `MCP_ALLOC_SMAPS=1` also prints the mappings holding the most RSS at the end of each
//! case.
//!
//! ```text
//! cargo bench -p mcp-benches --bench alloc_roundtrip [-- FILTER…]
//! ```

// The counting allocator below has to implement `GlobalAlloc`, an unsafe trait. This shim
// is the only unsafe code of the bench crate (the crate's lints deny it everywhere else).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use futures_lite::future;
use mcp_benches::child::{self, BareClient, ServerKind};
use mcp_benches::payload;
use mcp_proto::Instant;
use mcp_proto::client::{
    CallId, CallRequest, Client, ClientConfig, ConnId, ConnectionState, Event,
};
use mcp_proto::server::{Server, example};
use mcp_proto::{EraMode, ProtocolVersion};
use serde_json::json;

/// `System`, counting what goes through it.
struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let live = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(live, Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the
// counters are plain atomics and never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size(), Relaxed);
        grew(layout.size());
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size(), Relaxed);
        grew(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: `ptr` came from this allocator (hence from `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new_size, Relaxed);
        if new_size >= layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Relaxed);
        }
        // SAFETY: `ptr` came from `System` with `layout`; the caller upholds the rest.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The counters at one moment.
#[derive(Clone, Copy)]
struct Snapshot {
    allocs: usize,
    bytes: usize,
}

/// Reads the counters and restarts the peak of live heap from what is live now.
fn snapshot() -> Snapshot {
    PEAK.store(LIVE.load(Relaxed), Relaxed);
    Snapshot {
        allocs: ALLOCS.load(Relaxed),
        bytes: BYTES.load(Relaxed),
    }
}

/// A `/proc/self/status` field in KiB (`VmHWM`, `VmRSS`).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..]
        .trim_start_matches(':')
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(
        || "?".to_owned(),
        |k| format!("{:.2} MiB", k as f64 / 1024.0),
    )
}

/// Under `MCP_ALLOC_SMAPS=1`: the mappings of this process holding the most RSS, to see
/// where a peak comes from (heap, thread stacks, the binary's pages).
fn print_smaps() {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return;
    };
    let mut maps: Vec<(u64, String)> = Vec::new();
    let mut current = String::new();
    for line in smaps.lines() {
        if let Some(kib) = line.strip_prefix("Rss:") {
            let kib = kib
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(0);
            maps.push((kib, current.clone()));
        } else if line.split_whitespace().next().is_some_and(|range| {
            range.contains('-') && range.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit())
        }) {
            current = line.to_owned();
        }
    }
    maps.sort_by_key(|m| std::cmp::Reverse(m.0));
    for (kib, map) in maps.iter().take(12) {
        println!("      {kib:>6} KiB  {map}");
    }
}

fn report(name: &str, n: usize, before: Snapshot, peak_heap: usize) {
    let after = snapshot();
    let allocs = (after.allocs - before.allocs) as f64 / n as f64;
    let bytes = (after.bytes - before.bytes) as f64 / n as f64;
    println!(
        "  {name:<28} n={n:<6} allocs/rt {allocs:>8.1}   bytes/rt {:>10}   peak heap {:>9}   peak RSS {:>9}   RSS {:>9} (anon {:>9})",
        format!("{bytes:.0}"),
        format!("{:.1} KiB", peak_heap as f64 / 1024.0),
        mib(status_kib("VmHWM")),
        mib(status_kib("VmRSS")),
        mib(status_kib("RssAnon")),
    );
    if std::env::var_os("MCP_ALLOC_SMAPS").is_some() {
        print_smaps();
    }
}

const ERAS: [(&str, EraMode); 2] = [("legacy", EraMode::Legacy), ("modern", EraMode::Modern)];
const SIZES: [(&str, usize); 2] = [("64B", 64), ("64KiB", 64 * 1024)];
const CASE_VAR: &str = "MCP_ALLOC_CASE";

fn config(mode: EraMode) -> ClientConfig {
    ClientConfig::new("mcp-benches", "0.1.0").era_mode(mode)
}

/// (warm-up, counted) round trips for a text of `len` bytes.
fn counts(len: usize) -> (usize, usize) {
    let default = if len > 1024 { 300 } else { 2_000 };
    let n = std::env::var("MCP_BENCH_ITERS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default);
    ((n / 5).max(20), n)
}

// ---- machine ----------------------------------------------------------------------

struct Pair {
    client: Client,
    server: Server,
    now: Instant,
    to_server: Vec<u8>,
    to_client: Vec<u8>,
}

impl Pair {
    fn connect(mode: EraMode) -> (Pair, ProtocolVersion) {
        let now = Instant::ZERO;
        let mut pair = Pair {
            client: Client::stdio(config(mode), now),
            server: example::server(),
            now,
            to_server: Vec::new(),
            to_client: Vec::new(),
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

    /// One round trip; returns the length of the first content block (as JSON).
    fn round_trip(&mut self, text: &str) -> usize {
        let now = self.now;
        let request = CallRequest::call_tool("echo", json!({ "text": text }));
        let call: CallId = self.client.call(now, request).expect("call accepted");
        while self
            .client
            .poll_transmit(now, &mut self.to_server)
            .is_some()
        {}
        self.server.handle_input(now, &self.to_server);
        self.to_server.clear();
        while self
            .server
            .poll_transmit(now, &mut self.to_client)
            .is_some()
        {}
        self.client.handle_read(now, ConnId::STDIO, &self.to_client);
        self.to_client.clear();
        let mut answer = None;
        while let Some(event) = self.client.poll_event() {
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
        black_box(self.client.poll_timeout());
        answer.expect("the call completed in one turn")
    }
}

fn machine_case(name: &str, mode: EraMode, text: &str) {
    let (warmup, n) = counts(text.len());
    let (mut pair, _version) = Pair::connect(mode);
    for _ in 0..warmup {
        assert!(pair.round_trip(text) > text.len());
    }
    let before = snapshot();
    for _ in 0..n {
        black_box(pair.round_trip(text));
    }
    report(name, n, before, PEAK.load(Relaxed));
}

// ---- blocking ---------------------------------------------------------------------

fn blocking_case(name: &str, mode: EraMode, text: &str) {
    let command = child::blocking_command(ServerKind::Example);
    let client = mcp_blocking::Client::connect_stdio(command, config(mode))
        .unwrap_or_else(|e| panic!("{name}: connect: {e}"));
    blocking_calls(name, text, client);
}

/// `mcp_blocking::Client::call_tool` over Streamable HTTP, against the example server on
/// `serve_http` in a child process.
fn blocking_http_case(name: &str, mode: EraMode, text: &str, in_flight: usize) {
    let server = child::HttpServerChild::spawn(ServerKind::Http)
        .unwrap_or_else(|e| panic!("{name}: spawn the server: {e}"));
    let client = mcp_blocking::Client::connect_http(server.url(), config(mode))
        .unwrap_or_else(|e| panic!("{name}: connect: {e}"));
    if in_flight == 1 {
        blocking_calls(name, text, client);
        return;
    }
    let (warmup, n) = counts(text.len());
    let _ = mcp_benches::blocking_echo_calls(&client, text, warmup, in_flight, false);
    let before = snapshot();
    let _ = mcp_benches::blocking_echo_calls(&client, text, n, in_flight, false);
    report(name, n, before, PEAK.load(Relaxed));
    client.close();
}

/// Warms up with echo calls on `client` (checking what comes back), then counts `n`
/// more, reports, and closes the client.
fn blocking_calls(name: &str, text: &str, mut client: mcp_blocking::Client) {
    let mut echo = || {
        client
            .call_tool("echo", json!({ "text": text }))
            .expect("echo")
    };
    let (warmup, n) = counts(text.len());
    for _ in 0..warmup {
        assert_eq!(echo().text(), text, "{name}: the echo came back");
    }
    let before = snapshot();
    for _ in 0..n {
        black_box(echo().content.len());
    }
    report(name, n, before, PEAK.load(Relaxed));
    client.close();
}

// ---- smol -------------------------------------------------------------------------

/// How the `mcp_smol` driver and the calls are run.
#[derive(Clone, Copy)]
enum Runner {
    /// `async_io::block_on` (= `smol::block_on`): the reactor on this thread.
    AsyncIo,
    /// `futures_lite::future::block_on`: the reactor on async-io's helper thread.
    FuturesLite,
}

fn smol_case(name: &str, mode: EraMode, text: &str, runner: Runner, in_flight: usize) {
    let command = child::smol_command(ServerKind::Example);
    let (client, driver) = mcp_smol::connect_stdio(command, config(mode))
        .unwrap_or_else(|e| panic!("{name}: spawn: {e}"));
    smol_calls(name, text, runner, in_flight, client, driver);
}

/// `mcp_smol` over Streamable HTTP, against the example server on `serve_http` in a
/// child process.
fn smol_http_case(name: &str, mode: EraMode, text: &str, in_flight: usize) {
    let server = child::HttpServerChild::spawn(ServerKind::Http)
        .unwrap_or_else(|e| panic!("{name}: spawn the server: {e}"));
    let (client, driver) = mcp_smol::connect_http(server.url(), config(mode))
        .unwrap_or_else(|e| panic!("{name}: connect: {e}"));
    smol_calls(name, text, Runner::AsyncIo, in_flight, client, driver);
}

fn smol_calls(
    name: &str,
    text: &str,
    runner: Runner,
    in_flight: usize,
    client: mcp_smol::Client,
    driver: mcp_smol::Driver,
) {
    let (warmup, n) = counts(text.len());
    let work = async move {
        client.connected().await.expect("connected");
        let first = client
            .call_tool("echo", json!({ "text": text }))
            .await
            .expect("echo");
        assert_eq!(first.text(), text, "{name}: the echo came back");
        mcp_benches::smol_echo_calls(&client, text, warmup, in_flight, false).await;
        let before = snapshot();
        mcp_benches::smol_echo_calls(&client, text, n, in_flight, false).await;
        report(name, n, before, PEAK.load(Relaxed));
        drop(client);
    };
    let (driven, ()) = match runner {
        Runner::AsyncIo => async_io::block_on(driver.join(work)),
        Runner::FuturesLite => future::block_on(driver.join(work)),
    };
    driven.unwrap_or_else(|e| panic!("{name}: driver: {e}"));
}

// ---- bare -------------------------------------------------------------------------

/// The bare HTTP/1.1 client of `http_roundtrip`, against its bare server.
fn bare_http_case(name: &str, text: &str) {
    let server = child::HttpServerChild::spawn(ServerKind::HttpBare)
        .unwrap_or_else(|e| panic!("{name}: spawn the server: {e}"));
    let mut client = child::BareHttpClient::connect(server.url()).expect("connect");
    bare_calls(name, text, || client.echo(text).expect("bare echo"));
}

fn bare_case(name: &str, text: &str) {
    let mut client = BareClient::spawn().expect("spawn the bare server");
    bare_calls(name, text, || client.echo(text).expect("bare echo"));
}

/// Warms up with `echo` (which returns the length of what came back), then counts `n`
/// more and reports.
fn bare_calls(name: &str, text: &str, mut echo: impl FnMut() -> usize) {
    let (warmup, n) = counts(text.len());
    for _ in 0..warmup {
        assert_eq!(echo(), text.len(), "{name}: the echo came back");
    }
    let before = snapshot();
    for _ in 0..n {
        black_box(echo());
    }
    report(name, n, before, PEAK.load(Relaxed));
}

// ---- main -------------------------------------------------------------------------

fn cases() -> Vec<String> {
    let mut names = Vec::new();
    for kind in [
        "machine",
        "blocking",
        "blocking/http",
        "smol",
        "smol/futures-lite",
        "smol/8-in-flight",
        "blocking/http/8-in-flight",
        "smol/http",
        "smol/http/8-in-flight",
    ] {
        for (size, _) in SIZES {
            for (era, _) in ERAS {
                names.push(format!("{kind} {size} {era}"));
            }
        }
    }
    for (size, _) in SIZES {
        names.push(format!("bare {size}"));
    }
    for (size, _) in SIZES {
        names.push(format!("bare/http {size}"));
    }
    names
}

fn run_case(name: &str) {
    let mut words = name.split(' ');
    let kind = words.next().unwrap_or_default();
    let size = words.next().unwrap_or_default();
    let era = words.next();
    let len = SIZES
        .iter()
        .find(|(s, _)| *s == size)
        .map_or_else(|| panic!("no size in case {name:?}"), |(_, l)| *l);
    let text = payload(len);
    let mode = ERAS
        .iter()
        .find(|(e, _)| Some(*e) == era)
        .map_or(EraMode::Modern, |(_, m)| *m);
    match kind {
        "machine" => machine_case(name, mode, &text),
        "blocking" => blocking_case(name, mode, &text),
        "smol" => smol_case(name, mode, &text, Runner::AsyncIo, 1),
        "smol/futures-lite" => smol_case(name, mode, &text, Runner::FuturesLite, 1),
        "smol/8-in-flight" => smol_case(name, mode, &text, Runner::AsyncIo, 8),
        "blocking/http" => blocking_http_case(name, mode, &text, 1),
        "blocking/http/8-in-flight" => blocking_http_case(name, mode, &text, 8),
        "smol/http" => smol_http_case(name, mode, &text, 1),
        "smol/http/8-in-flight" => smol_http_case(name, mode, &text, 8),
        "bare" => bare_case(name, &text),
        "bare/http" => bare_http_case(name, &text),
        _ => panic!("unknown case {name:?}"),
    }
}

fn main() {
    child::serve_if_child();
    if let Ok(name) = std::env::var(CASE_VAR) {
        run_case(&name);
        return;
    }
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    println!(
        "alloc_roundtrip: heap allocations and RSS per tools/call echo round trip, one process per case  ({cpus} CPUs available, release build)"
    );
    let exe = child::this_exe();
    for name in cases() {
        if !filters.iter().all(|f| name.contains(f.as_str())) {
            continue;
        }
        let status = std::process::Command::new(&exe)
            .env(CASE_VAR, &name)
            .env_remove(child::SERVE_VAR)
            .status()
            .unwrap_or_else(|e| panic!("{name}: re-exec: {e}"));
        assert!(status.success(), "{name}: the case failed ({status})");
    }
    println!(
        "  note: allocs and bytes count alloc, alloc_zeroed and realloc calls of the whole process (the stdio server is a child and not counted); \
         peak RSS is VmHWM of the case's own process, start-up and warm-up included"
    );
}
