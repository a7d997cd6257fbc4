//! Timing of one case inside the client process: a warm-up, then `n` timed calls, then
//! the figures of [`Outcome`]. Under callgrind (`PEERS_QUIET=1`) there is no warm-up and
//! no clock: exactly `n` calls, so that `(Ir(2N) - Ir(N)) / N` is the cost of one call.

use std::future::Future;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How many calls a case makes and how.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Untimed calls first (none when quiet).
    pub warmup: usize,
    /// Timed calls.
    pub n: usize,
    /// Calls outstanding at any time (1 = sequential).
    pub in_flight: usize,
    /// No warm-up, no clock: for callgrind.
    pub quiet: bool,
}

impl Plan {
    /// `n` calls with `in_flight` outstanding; `PEERS_QUIET=1` makes it quiet.
    pub fn new(n: usize, in_flight: usize) -> Plan {
        let quiet = std::env::var("PEERS_QUIET").is_ok_and(|v| v == "1");
        Plan {
            warmup: if quiet { 0 } else { (n / 10).clamp(10, 500) },
            n,
            in_flight: in_flight.max(1),
            quiet,
        }
    }
}

/// What a batch of timed calls gives: the wall time and each call's latency.
#[derive(Debug)]
pub struct Timings {
    /// Wall time of all timed calls.
    pub elapsed: Duration,
    /// One latency per call.
    pub latencies: Vec<Duration>,
}

/// Runs the warm-up, then the timed calls, with `batch(count, timed)` making `count`
/// calls and returning their latencies when `timed`.
pub fn run(plan: &Plan, mut batch: impl FnMut(usize, bool) -> Vec<Duration>) -> Timings {
    batch(plan.warmup, false);
    let start = Instant::now();
    let latencies = batch(plan.n, !plan.quiet);
    Timings {
        elapsed: start.elapsed(),
        latencies,
    }
}

/// [`run`] for async clients: `batch(count, timed)` is a future.
pub async fn run_async<F, Fut>(plan: &Plan, mut batch: F) -> Timings
where
    F: FnMut(usize, bool) -> Fut,
    Fut: Future<Output = Vec<Duration>>,
{
    batch(plan.warmup, false).await;
    let start = Instant::now();
    let latencies = batch(plan.n, !plan.quiet).await;
    Timings {
        elapsed: start.elapsed(),
        latencies,
    }
}

/// `count` calls one after another.
pub fn sequential(count: usize, timed: bool, mut call: impl FnMut()) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(if timed { count } else { 0 });
    for _ in 0..count {
        let start = timed.then(Instant::now);
        call();
        if let Some(start) = start {
            latencies.push(start.elapsed());
        }
    }
    latencies
}

/// `count` calls spread over `threads` scoped threads, each making its calls one after
/// another, so `threads` calls are outstanding at any time.
pub fn threads(count: usize, threads: usize, timed: bool, call: impl Fn() + Sync) -> Vec<Duration> {
    let call = &call;
    std::thread::scope(|scope| {
        let all: Vec<_> = (0..threads)
            .map(|t| {
                let mine = count / threads + usize::from(t < count % threads);
                scope.spawn(move || sequential(mine, timed, call))
            })
            .collect();
        all.into_iter()
            .flat_map(|t| t.join().expect("a calling thread panicked"))
            .collect()
    })
}

/// `count` calls spread over `workers` futures polled together, each awaiting its calls
/// one after another, so `workers` calls are outstanding at any time.
pub async fn workers<F, Fut>(count: usize, workers: usize, timed: bool, call: F) -> Vec<Duration>
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let call = &call;
    let all = (0..workers).map(|w| {
        let mine = count / workers + usize::from(w < count % workers);
        async move {
            let mut latencies = Vec::with_capacity(if timed { mine } else { 0 });
            for _ in 0..mine {
                let start = timed.then(Instant::now);
                call().await;
                if let Some(start) = start {
                    latencies.push(start.elapsed());
                }
            }
            latencies
        }
    });
    futures::future::join_all(all)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The figures of one run of one case, as the client process prints them (one JSON line
/// after [`OUTCOME_TAG`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    /// The protocol version the connection settled on ("-" for the bare pair).
    pub version: String,
    /// Calls per second over the timed calls.
    pub per_second: f64,
    /// Median latency, µs.
    pub p50_us: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
    /// The client process's peak resident set (VmHWM), KiB.
    pub peak_rss_kib: u64,
}

/// The prefix of the line that carries an [`Outcome`].
pub const OUTCOME_TAG: &str = "PEERS-OUTCOME ";

impl Outcome {
    /// The figures of `timings` with the peak RSS read now.
    pub fn new(version: &str, timings: &Timings) -> Outcome {
        if let Ok(path) = std::env::var("PEERS_LATENCIES") {
            let lines: String = timings
                .latencies
                .iter()
                .map(|l| format!("{}\n", l.as_nanos()))
                .collect();
            let _ = std::fs::write(path, lines);
        }
        let mut sorted = timings.latencies.clone();
        sorted.sort_unstable();
        let quantile = |q: f64| {
            if sorted.is_empty() {
                return 0.0;
            }
            let index = ((sorted.len() as f64 * q) as usize).min(sorted.len() - 1);
            sorted[index].as_secs_f64() * 1e6
        };
        let secs = timings.elapsed.as_secs_f64();
        Outcome {
            version: version.to_owned(),
            per_second: if secs > 0.0 {
                sorted.len() as f64 / secs
            } else {
                0.0
            },
            p50_us: quantile(0.5),
            p99_us: quantile(0.99),
            peak_rss_kib: peak_rss_kib(),
        }
    }

    /// Prints the outcome line (nothing when quiet).
    pub fn print(&self, plan: &Plan) {
        if !plan.quiet {
            let json = serde_json::to_string(self).expect("an outcome is JSON");
            println!("{OUTCOME_TAG}{json}");
        }
    }
}

/// VmHWM of this process from `/proc/self/status`, KiB (0 when unknown).
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The echo payload: `len` bytes of printable ASCII that JSON needs no escapes for.
pub fn payload(len: usize) -> String {
    (0..len)
        .map(|i| char::from(b'a' + u8::try_from(i % 26).unwrap_or(0)))
        .collect()
}
