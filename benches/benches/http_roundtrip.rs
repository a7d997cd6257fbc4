//! `http_roundtrip`: `tools/call echo` over loopback Streamable HTTP against the bundled
//! example server (`mcp_blocking::serve_http(example::server())`) in a child process. The
//! child is this very binary, re-executed with `MCP_BENCH_SERVE=http`; it binds
//! `127.0.0.1:0` and prints its URL (see `mcp_benches::child`). The example server
//! answers every echo with `application/json` and `Content-Length` (SSE only when a
//! request or notification precedes the answer, which echo never does).
//!
//! Cases (each against a fresh server process, on a fresh client, after a warm-up):
//!
//! * `blocking` — sequential round trips with `mcp_blocking::Client::connect_http` and
//!   `call_tool`, 64 B and 64 KiB texts, `EraMode::Legacy` (2025-11-25) and
//!   `EraMode::Modern` (2026-07-28). After the figures, a detail line gives the TCP
//!   connections the client opened (`http_connections_opened`, handshake included) and the
//!   requests it made: 1 connection means every request went over one keep-alive
//!   connection;
//! * `blocking {1,8} in flight 64B` — the same calls through `mcp_blocking::ClientHandle`s
//!   of one client from one or eight threads at once (each making its calls one after
//!   another); the machine opens a connection per outstanding call, counted by
//!   `http_connections_opened`;
//! * `smol/async-io {1,8} in flight 64B` — the same calls through `mcp_smol::connect_http`,
//!   the driver joined with the calls by `async_io::block_on(driver.join(work))`: one at a
//!   time, or eight workers on one client keeping eight calls outstanding (HTTP/1.1
//!   carries one exchange per connection, so that takes eight connections; they are
//!   counted by a `Connector` wrapping `TcpConnector`); and `1 in flight 64KiB`, one call
//!   at a time with 64 KiB texts;
//! * `bare http pair` — the reference point: one thread writing a JSON-RPC POST with
//!   `serde_json` and hand-written HTTP/1.1 on one keep-alive connection, to a child
//!   (`MCP_BENCH_SERVE=http-bare`) that answers with `serde_json`, no MCP logic. Compare
//!   ratios to it within one run.
//!
//! ```text
//! cargo bench -p mcp-benches --bench http_roundtrip [-- FILTER…]
//! taskset -c 0 cargo bench -p mcp-benches --bench http_roundtrip   # stable wall clock
//! bash benches/callgrind.sh http_roundtrip "blocking 64B modern" 5000
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_benches::child::{BareHttpClient, HttpServerChild, ServerKind};
use mcp_benches::{Report, Settings, payload};
use mcp_proto::client::ClientConfig;
use mcp_proto::{EraMode, ProtocolVersion};
use mcp_smol::{ConnectFuture, Connector, Origin, TcpConnector};
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

fn spawn_server(kind: ServerKind, key: &str) -> HttpServerChild {
    HttpServerChild::spawn(kind).unwrap_or_else(|e| panic!("{key}: start the server: {e}"))
}

fn blocking_case(settings: &Settings, key: &str, mode: EraMode, text: &str, n: usize) {
    let server = spawn_server(ServerKind::Http, key);
    let mut client = mcp_blocking::Client::connect_http(server.url(), config(mode))
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
    let calls = 1 + settings.warmup(n) + n;
    settings.detail(&format!(
        "connections opened: {}, retries: {} (handshake + {calls} calls)",
        client.http_connections_opened(),
        client.http_retries(),
    ));
    let _ = client.close();
    drop(server);
}

fn bare_case(settings: &Settings, key: &str, text: &str, n: usize) {
    let server = spawn_server(ServerKind::HttpBare, key);
    let mut client = BareHttpClient::connect(server.url()).expect("connect to the bare server");
    assert_eq!(client.echo(text).expect("bare echo"), text.len());
    settings.measure(key, "round trips", n, 1, None, || {
        black_box(client.echo(text).expect("bare echo"));
    });
    drop(client);
    drop(server);
}

fn blocking_threads_case(
    settings: &Settings,
    key: &str,
    mode: EraMode,
    text: &str,
    n: usize,
    threads: usize,
) {
    let server = spawn_server(ServerKind::Http, key);
    let client = mcp_blocking::Client::connect_http(server.url(), config(mode))
        .unwrap_or_else(|e| panic!("{key}: connect: {e}"));
    let version = client.protocol_version();
    assert_eq!(version, expected(mode), "{key}: negotiated version");
    let name = format!("{key} ({version})");
    mcp_benches::blocking_echo_run(settings, &name, &client, text, n, threads);
    settings.detail(&format!(
        "connections opened: {} (handshake + {} calls, {threads} at a time)",
        client.http_connections_opened(),
        1 + settings.warmup(n) + n,
    ));
    let _ = client.close();
    drop(server);
}

/// [`TcpConnector`], counting the connections it opens.
struct Counting {
    opened: Arc<AtomicU64>,
}

impl Connector for Counting {
    fn connect(&self, origin: &Origin) -> ConnectFuture {
        self.opened.fetch_add(1, Ordering::Relaxed);
        TcpConnector.connect(origin)
    }
}

fn smol_case(
    settings: &Settings,
    key: &str,
    mode: EraMode,
    text: &str,
    n: usize,
    in_flight: usize,
) {
    let server = spawn_server(ServerKind::Http, key);
    let opened = Arc::new(AtomicU64::new(0));
    let http = mcp_smol::HttpOptions::new().connector(Counting {
        opened: Arc::clone(&opened),
    });
    let (client, driver) =
        mcp_smol::connect_http_with(server.url(), config(mode), mcp_smol::Options::new(), http)
            .unwrap_or_else(|e| panic!("{key}: connect: {e}"));
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
    let (driven, (version, elapsed, latencies, faults)) = async_io::block_on(driver.join(work));
    driven.unwrap_or_else(|e| panic!("{key}: driver: {e}"));
    if let Some(elapsed) = elapsed {
        let name = format!("{key} ({version})");
        let mut report = Report::new(&name, "calls", n, elapsed, latencies, None);
        report.minor_faults = faults;
        settings.report(&report);
        settings.detail(&format!(
            "connections opened: {} (handshake + {} calls, {in_flight} at a time)",
            opened.load(Ordering::Relaxed),
            1 + warmup + n,
        ));
    }
    drop(server);
}

fn main() {
    mcp_benches::child::serve_if_child();
    let settings = Settings::from_env();
    settings.title(
        "http_roundtrip",
        "tools/call echo over loopback HTTP against the example server in a child process",
    );
    // (label, text length, default sequential iterations)
    let sizes = [("64B", 64, 10_000), ("64KiB", 64 * 1024, 1_000)];
    for (size, len, default_n) in sizes {
        let text = payload(len);
        let n = settings.iters(default_n);
        for (era, mode) in ERAS {
            let key = format!("blocking {size} {era}");
            if settings.selected(&key) {
                blocking_case(&settings, &key, mode, &text, n);
            }
        }
        let key = format!("bare http pair {size}");
        if settings.selected(&key) {
            bare_case(&settings, &key, &text, n);
        }
    }
    let text = payload(64);
    for in_flight in [1, 8] {
        let n = settings.iters(if in_flight == 1 { 10_000 } else { 20_000 });
        for (era, mode) in ERAS {
            let key = format!("blocking {in_flight} in flight 64B {era}");
            if settings.selected(&key) {
                blocking_threads_case(&settings, &key, mode, &text, n, in_flight);
            }
        }
    }
    for in_flight in [1, 8] {
        let n = settings.iters(if in_flight == 1 { 10_000 } else { 20_000 });
        for (era, mode) in ERAS {
            let key = format!("smol/async-io {in_flight} in flight 64B {era}");
            if settings.selected(&key) {
                smol_case(&settings, &key, mode, &text, n, in_flight);
            }
        }
    }
    let text = payload(64 * 1024);
    let n = settings.iters(1_000);
    for (era, mode) in ERAS {
        let key = format!("smol/async-io 1 in flight 64KiB {era}");
        if settings.selected(&key) {
            smol_case(&settings, &key, mode, &text, n, 1);
        }
    }
    settings.note(
        "round trips/s are sequential (one call at a time, one keep-alive connection); \
         \"8 in flight\" is calls/s with eight calls outstanding (eight connections), p50/p99 \
         per call under that load (blocking: eight threads on ClientHandles of one client); smol \
         runs the driver with async_io::block_on",
    );
}
