//! The timing harness shared by the `mcp-benches` benchmarks (see `benches/README.md`).
//!
//! Benchmarks print figures; they are never tests and never gate anything on a time.
//! No criterion: a warm-up, `N` timed operations, then the median (p50), p99 and mean
//! latency and the throughput, one line per case.
//!
//! Every bench binary reads the same knobs:
//!
//! * `MCP_BENCH_ITERS=N` — run exactly `N` timed operations in every case instead of the
//!   case's default;
//! * `MCP_BENCH_QUIET=1` — no warm-up, no clock reads and no output: exactly `N`
//!   operations per case, for `valgrind --tool=callgrind` (instructions per operation =
//!   total / N, or better `(I(2N) - I(N)) / N`, which cancels the setup);
//! * positional arguments select cases: a case runs when its name contains every
//!   argument (`cargo bench -p mcp-benches --bench machine_roundtrip -- legacy`). Flags
//!   starting with `-` (cargo passes `--bench`) are ignored.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

pub mod child;

/// What the environment and the command line asked for.
#[derive(Debug, Clone)]
pub struct Settings {
    iters: Option<usize>,
    quiet: bool,
    filters: Vec<String>,
}

impl Settings {
    /// Reads `MCP_BENCH_ITERS`, `MCP_BENCH_QUIET` and the positional arguments.
    ///
    /// # Panics
    /// When `MCP_BENCH_ITERS` is set but is not a positive integer.
    #[must_use]
    pub fn from_env() -> Settings {
        let iters = std::env::var("MCP_BENCH_ITERS").ok().map(|v| {
            v.trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .unwrap_or_else(|| panic!("MCP_BENCH_ITERS must be a positive integer, not {v:?}"))
        });
        let quiet = std::env::var("MCP_BENCH_QUIET").is_ok_and(|v| !v.is_empty() && v != "0");
        let filters = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .collect();
        Settings {
            iters,
            quiet,
            filters,
        }
    }

    /// True under `MCP_BENCH_QUIET`: run exactly `N` operations, read no clock, print
    /// nothing.
    #[must_use]
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// Whether the case called `name` was selected on the command line.
    #[must_use]
    pub fn selected(&self, name: &str) -> bool {
        self.filters.iter().all(|f| name.contains(f.as_str()))
    }

    /// Timed operations for a case whose default is `default`.
    #[must_use]
    pub fn iters(&self, default: usize) -> usize {
        self.iters.unwrap_or(default).max(1)
    }

    /// Untimed operations before the timed ones: a tenth of `n`, at least 10 and at most
    /// 2000; none when quiet.
    #[must_use]
    pub fn warmup(&self, n: usize) -> usize {
        if self.quiet {
            0
        } else {
            (n / 10).clamp(10, 2000)
        }
    }

    /// Prints the bench's title line (unless quiet).
    pub fn title(&self, bench: &str, what: &str) {
        if self.quiet {
            return;
        }
        let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
        println!("{bench}: {what}  ({cpus} CPUs available, release build)");
    }

    /// Prints a free-form note under the results (unless quiet).
    pub fn note(&self, text: &str) {
        if !self.quiet {
            println!("  note: {text}");
        }
    }

    /// Runs `op` for the warm-up, then `n` timed times (or, when quiet, exactly `n`
    /// untimed times), timing each run of `batch` consecutive operations as one sample.
    /// `bytes` is the payload size of one operation, for a MB/s column. Prints the line and
    /// returns the report (`None` when quiet).
    pub fn measure(
        &self,
        name: &str,
        unit: &'static str,
        n: usize,
        batch: usize,
        bytes: Option<usize>,
        mut op: impl FnMut(),
    ) -> Option<Report> {
        let batch = batch.max(1);
        if self.quiet {
            for _ in 0..n {
                op();
            }
            return None;
        }
        for _ in 0..self.warmup(n) {
            op();
        }
        let samples_wanted = n.div_ceil(batch);
        let mut samples = Vec::with_capacity(samples_wanted);
        let faults = minor_faults();
        let start = Instant::now();
        for _ in 0..samples_wanted {
            let t = Instant::now();
            for _ in 0..batch {
                op();
            }
            samples.push(t.elapsed() / u32::try_from(batch).unwrap_or(u32::MAX));
        }
        let elapsed = start.elapsed();
        let mut report = Report::new(name, unit, samples_wanted * batch, elapsed, samples, bytes);
        report.minor_faults = faults.zip(minor_faults()).map(|(a, b)| b.saturating_sub(a));
        self.report(&report);
        Some(report)
    }

    /// Prints a detail line under the case just reported (unless quiet).
    pub fn detail(&self, text: &str) {
        if !self.quiet {
            println!("      {text}");
        }
    }

    /// Prints a report made elsewhere (unless quiet).
    pub fn report(&self, report: &Report) {
        if !self.quiet {
            println!("{report}");
        }
    }
}

/// The figures of one case.
#[derive(Debug, Clone)]
pub struct Report {
    /// The case.
    pub name: String,
    /// What one operation is ("round trips", "calls", "decodes").
    pub unit: &'static str,
    /// Operations timed.
    pub ops: usize,
    /// Wall-clock time of all timed operations.
    pub elapsed: Duration,
    /// Per-operation latencies, sorted.
    pub samples: Vec<Duration>,
    /// Payload bytes of one operation, when throughput in MB/s means something.
    pub bytes_per_op: Option<usize>,
    /// Minor page faults of this process while the operations ran (Linux), when known.
    pub minor_faults: Option<u64>,
}

impl Report {
    /// A report from per-operation latencies (any order) and the wall time they took.
    #[must_use]
    pub fn new(
        name: &str,
        unit: &'static str,
        ops: usize,
        elapsed: Duration,
        mut samples: Vec<Duration>,
        bytes_per_op: Option<usize>,
    ) -> Report {
        samples.sort_unstable();
        Report {
            name: name.to_owned(),
            unit,
            ops,
            elapsed,
            samples,
            bytes_per_op,
            minor_faults: None,
        }
    }

    /// Operations per second of wall-clock time.
    #[must_use]
    pub fn per_second(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-12)
    }

    /// The `q`-quantile latency (0.5 = median).
    #[must_use]
    pub fn quantile(&self, q: f64) -> Duration {
        if self.samples.is_empty() {
            return Duration::ZERO;
        }
        let last = self.samples.len() - 1;
        let i = ((last as f64) * q).round() as usize;
        self.samples[i.min(last)]
    }

    /// Mean latency.
    #[must_use]
    pub fn mean(&self) -> Duration {
        if self.samples.is_empty() {
            return Duration::ZERO;
        }
        self.samples.iter().sum::<Duration>() / u32::try_from(self.samples.len()).unwrap_or(1)
    }

    /// Payload megabytes (10^6 bytes) per second, when a payload size is known.
    #[must_use]
    pub fn megabytes_per_second(&self) -> Option<f64> {
        self.bytes_per_op
            .map(|b| b as f64 * self.per_second() / 1e6)
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "  {:<58} n={:<7} {:>11} {}/s   p50 {:>9}   p99 {:>9}   mean {:>9}",
            self.name,
            self.ops,
            group_thousands(self.per_second()),
            self.unit,
            human(self.quantile(0.5)),
            human(self.quantile(0.99)),
            human(self.mean()),
        )?;
        if let Some(mbps) = self.megabytes_per_second() {
            write!(f, "   {mbps:>8.1} MB/s")?;
        }
        if let Some(faults) = self
            .minor_faults
            .filter(|f| *f as f64 >= 0.05 * self.ops as f64)
        {
            write!(
                f,
                "   {:.2} page faults/op",
                faults as f64 / self.ops as f64
            )?;
        }
        Ok(())
    }
}

/// Minor page faults of this process so far (field 10 of `/proc/self/stat`), on Linux.
/// A steady stream of them in a loop that allocates the same sizes every time means the
/// allocator keeps giving memory back to the kernel and taking it again.
#[must_use]
pub fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name in parentheses: state is field 3, minflt field 10.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(7)?.parse().ok()
}

/// `1234567.8` as `1,234,568`.
#[must_use]
pub fn group_thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A latency with a readable unit: `850 ns`, `12.3 µs`, `4.56 ms`.
#[must_use]
pub fn human(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{:.2} ms", ns as f64 / 1e6)
    }
}

/// A text of exactly `len` bytes of printable ASCII (no characters JSON must escape).
#[must_use]
pub fn payload(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,-";
    (0..len)
        .map(|i| char::from(ALPHABET[(i * 7 + i / 64) % ALPHABET.len()]))
        .collect()
}

/// A boxed future borrowing for `'a`, as [`join_all`] takes them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Polls every future to completion on the current task and returns their outputs in
/// order (a minimal `join_all`, so the benches need no futures crate beyond
/// `futures-lite`).
pub async fn join_all<T>(futures: Vec<BoxFuture<'_, T>>) -> Vec<T> {
    let mut slots: Vec<(BoxFuture<'_, T>, Option<T>)> =
        futures.into_iter().map(|f| (f, None)).collect();
    std::future::poll_fn(move |cx| {
        let mut pending = false;
        for (future, out) in &mut slots {
            if out.is_some() {
                continue;
            }
            match future.as_mut().poll(cx) {
                Poll::Ready(v) => *out = Some(v),
                Poll::Pending => pending = true,
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(slots.iter_mut().filter_map(|(_, o)| o.take()).collect())
        }
    })
    .await
}

type Worker<'a> = BoxFuture<'a, Vec<Duration>>;

/// `calls` sequential-per-worker `tools/call echo` calls of `text` through an `mcp_smol`
/// client, spread over `in_flight` workers that each await theirs one by one (so
/// `in_flight` calls are outstanding at any time). Returns each call's latency, or
/// nothing when `timed` is false.
///
/// # Panics
/// When a call fails.
pub async fn smol_echo_calls(
    client: &mcp_smol::Client,
    text: &str,
    calls: usize,
    in_flight: usize,
    timed: bool,
) -> Vec<Duration> {
    let workers: Vec<Worker<'_>> = (0..in_flight)
        .map(|w| {
            let mine = calls / in_flight + usize::from(w < calls % in_flight);
            Box::pin(async move {
                let mut latencies = Vec::with_capacity(if timed { mine } else { 0 });
                for _ in 0..mine {
                    let start = timed.then(Instant::now);
                    let result = client
                        .call_tool("echo", serde_json::json!({ "text": text }))
                        .await
                        .expect("echo");
                    std::hint::black_box(result.content.len());
                    if let Some(start) = start {
                        latencies.push(start.elapsed());
                    }
                }
                latencies
            }) as Worker<'_>
        })
        .collect();
    join_all(workers).await.into_iter().flatten().collect()
}

/// What one measured `mcp_smol` run gives: the negotiated version, the elapsed time and
/// latencies (when timed), and minor page faults over the measured calls.
pub type SmolRun = (
    mcp_proto::ProtocolVersion,
    Option<Duration>,
    Vec<Duration>,
    Option<u64>,
);

/// The body of an `mcp_smol` echo benchmark: wait for the connection, check the version
/// and one echo, run `warmup` then `n` calls with `in_flight` outstanding, and drop the
/// client so the driver ends. Run it joined with the driver (`Driver::join`, or `zip` on any executor).
///
/// # Panics
/// When connecting or a call fails, or the version or echo is not what was expected.
pub async fn smol_echo_run(
    client: mcp_smol::Client,
    key: &str,
    expected: mcp_proto::ProtocolVersion,
    text: &str,
    (warmup, n, in_flight): (usize, usize, usize),
    quiet: bool,
) -> SmolRun {
    let details = client.connected().await.expect("connected");
    assert_eq!(
        details.protocol_version, expected,
        "{key}: negotiated version"
    );
    let first = client
        .call_tool("echo", serde_json::json!({ "text": text }))
        .await
        .expect("echo");
    assert_eq!(first.text(), text, "{key}: the echo came back");
    smol_echo_calls(&client, text, warmup, in_flight, false).await;
    let faults = minor_faults();
    let start = (!quiet).then(Instant::now);
    let latencies = smol_echo_calls(&client, text, n, in_flight, !quiet).await;
    let elapsed = start.map(|s| s.elapsed());
    let faults = faults.zip(minor_faults()).map(|(a, b)| b.saturating_sub(a));
    drop(client); // the last handle: the driver closes the connection and ends
    (details.protocol_version, elapsed, latencies, faults)
}

/// `calls` echo calls of `text` through [`mcp_blocking::ClientHandle`]s of `client`,
/// from `threads` threads at once (each making its share one after another): the
/// latency of each call when `timed`.
///
/// # Panics
/// When a call fails.
#[must_use]
pub fn blocking_echo_calls(
    client: &mcp_blocking::Client,
    text: &str,
    calls: usize,
    threads: usize,
    timed: bool,
) -> Vec<Duration> {
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|w| {
                let mine = calls / threads + usize::from(w < calls % threads);
                let handle = client.handle();
                s.spawn(move || {
                    let mut latencies = Vec::with_capacity(if timed { mine } else { 0 });
                    for _ in 0..mine {
                        let start = timed.then(Instant::now);
                        let result = handle
                            .call_tool("echo", serde_json::json!({ "text": text }))
                            .expect("echo");
                        std::hint::black_box(result.content.len());
                        if let Some(start) = start {
                            latencies.push(start.elapsed());
                        }
                    }
                    latencies
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a calling thread panicked"))
            .collect()
    })
}

/// A measured `mcp_blocking` run with `threads` threads: `warmup` then `n` echo calls
/// (see [`blocking_echo_calls`]) on `client`, reported as `name` in calls/s with the
/// latency of each call under that load. Nothing is printed (nor timed) when quiet.
pub fn blocking_echo_run(
    settings: &Settings,
    name: &str,
    client: &mcp_blocking::Client,
    text: &str,
    n: usize,
    threads: usize,
) {
    let quiet = settings.quiet();
    let _ = blocking_echo_calls(client, text, settings.warmup(n), threads, false);
    let faults = minor_faults();
    let start = Instant::now();
    let latencies = blocking_echo_calls(client, text, n, threads, !quiet);
    let elapsed = start.elapsed();
    if !quiet {
        let mut report = Report::new(name, "calls", n, elapsed, latencies, None);
        report.minor_faults = faults.zip(minor_faults()).map(|(a, b)| b.saturating_sub(a));
        settings.report(&report);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_formatting() {
        let samples = (1..=100).map(Duration::from_micros).collect();
        let r = Report::new(
            "x",
            "ops",
            100,
            Duration::from_millis(10),
            samples,
            Some(1000),
        );
        assert_eq!(r.quantile(0.5), Duration::from_micros(51));
        assert_eq!(r.quantile(0.99), Duration::from_micros(99));
        assert_eq!(group_thousands(r.per_second()), "10,000");
        assert_eq!(human(Duration::from_nanos(850)), "850 ns");
        assert_eq!(human(Duration::from_nanos(12_345)), "12.3 µs");
        assert_eq!(payload(64).len(), 64);
        assert!(!payload(65536).contains(['"', '\\', '\n']));
    }
}
