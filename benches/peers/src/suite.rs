//! The whole comparison: every combination, each wall-clock case run `PEERS_REPEATS`
//! times in a fresh client process, and client instructions per call counted under
//! callgrind. The results go to [`crate::report`].
//!
//! Each client process is the binary [`ClientKind::binary`] names, next to this one:
//! `peers-ours` for ours, `peers-bare` for the bare client, this binary for rmcp's. Its
//! server children are this binary (`PEERS_SERVER_EXE`).
//!
//! Knobs (environment):
//!
//! * `PEERS_N_64B` (default 2000) and `PEERS_N_64KIB` (default 200): timed sequential
//!   calls per run; the 8-in-flight cases make twice as many;
//! * `PEERS_REPEATS` (default 3): runs per wall-clock case (median and min–max);
//! * `PEERS_CALLGRIND` (default `ours`): `ours` counts instructions of every sequential
//!   case against our server, of the bare pair and of rmcp's client against the canned
//!   server, `all` of every sequential case, `0` none;
//! * `PEERS_CALLGRIND_N_64B` (default 200) and `PEERS_CALLGRIND_N_64KIB` (default 20):
//!   `N` in `(Ir(2N) - Ir(N)) / N`;
//! * `PEERS_FILTER`: only the cases whose name (as printed) contains it.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::path::PathBuf;

use mcp_peers::clients::not_applicable;
use mcp_peers::measure::{OUTCOME_TAG, Outcome};
use mcp_peers::spawn::SERVER_EXE_VAR;
use mcp_peers::spec::{Case, ClientKind, Era, ServerKind, Transport};

/// What one case gave.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case.
    pub case: Case,
    /// One outcome per wall-clock run, or why there is none.
    pub runs: Result<Vec<Outcome>, String>,
    /// Client instructions per call, when counted.
    pub instructions: Option<Result<u64, String>>,
}

/// A numeric knob from the environment.
pub fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Every combination, in table order.
pub fn matrix() -> Vec<Case> {
    let mut cases = Vec::new();
    for transport in [Transport::Stdio, Transport::Http] {
        for size in [64, 64 * 1024] {
            for in_flight in [1, 8] {
                let case = |client, server, era| Case {
                    client,
                    server,
                    transport,
                    era,
                    size,
                    in_flight,
                };
                cases.push(case(ClientKind::Bare, ServerKind::Bare, Era::None));
                for server in [ServerKind::Ours, ServerKind::Rmcp] {
                    for client in [ClientKind::Blocking, ClientKind::Smol, ClientKind::Rmcp] {
                        for era in [Era::Legacy, Era::Modern] {
                            cases.push(case(client, server, era));
                        }
                    }
                }
                // The floor under rmcp's client: a server that does no work.
                if transport == Transport::Http {
                    for era in [Era::Legacy, Era::Modern] {
                        cases.push(case(ClientKind::Rmcp, ServerKind::Canned, era));
                    }
                }
            }
        }
    }
    cases
}

/// Timed calls per run of `case`.
fn calls(case: &Case) -> usize {
    let n = if case.size >= 1024 {
        knob("PEERS_N_64KIB", 200)
    } else {
        knob("PEERS_N_64B", 2000)
    };
    if case.in_flight > 1 { 2 * n } else { n }
}

/// `PEERS_CALLGRIND`: `0` (or `no`, or empty) turns the instruction counts off.
pub fn callgrind_enabled() -> bool {
    !matches!(
        std::env::var("PEERS_CALLGRIND").as_deref(),
        Ok("0" | "" | "no")
    )
}

fn wants_callgrind(case: &Case) -> bool {
    if case.in_flight > 1 || !callgrind_enabled() {
        return false;
    }
    match std::env::var("PEERS_CALLGRIND").as_deref() {
        Ok("all") => true,
        _ => matches!(
            case.server,
            ServerKind::Ours | ServerKind::Bare | ServerKind::Canned
        ),
    }
}

/// Runs the selected cases and returns what they gave, printing progress on stderr.
pub fn run() -> Vec<CaseResult> {
    let filter = std::env::var("PEERS_FILTER").unwrap_or_default();
    let repeats = knob("PEERS_REPEATS", 3).max(1);
    let selected: Vec<Case> = matrix()
        .into_iter()
        .filter(|c| c.to_string().contains(&filter))
        .collect();
    let total = selected.len();
    let mut results = Vec::new();
    for (i, case) in selected.into_iter().enumerate() {
        let started = Instant::now();
        let result = if let Some(why) = not_applicable(&case) {
            CaseResult {
                case,
                runs: Err(why.to_owned()),
                instructions: None,
            }
        } else {
            let runs = (0..repeats)
                .map(|_| wall_clock(&case))
                .collect::<Result<Vec<_>, _>>();
            let instructions =
                (runs.is_ok() && wants_callgrind(&case)).then(|| instructions(&case));
            CaseResult {
                case,
                runs,
                instructions,
            }
        };
        eprintln!(
            "[{}/{total}] {case}: {} ({:.1} s)",
            i + 1,
            summary(&result),
            started.elapsed().as_secs_f64()
        );
        results.push(result);
    }
    results
}

fn summary(result: &CaseResult) -> String {
    match &result.runs {
        Err(why) => why.clone(),
        Ok(runs) => {
            let rates: Vec<String> = runs
                .iter()
                .map(|o| format!("{:.0}", o.per_second))
                .collect();
            let instructions = match &result.instructions {
                Some(Ok(ir)) => format!(", {ir} instructions per call"),
                Some(Err(e)) => format!(", callgrind failed: {e}"),
                None => String::new(),
            };
            format!("{} calls/s{instructions}", rates.join(" / "))
        }
    }
}

/// How long one client process may take before it counts as hung.
const DEADLINE: Duration = Duration::from_secs(300);

/// Runs `command` to its end (killing it after [`DEADLINE`]); its stdout and stderr.
fn output(mut command: Command) -> Result<(String, String), String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "failed (no answer within {} s)",
                    DEADLINE.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("wait: {e}")),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        return Err(format!("failed ({})", last.unwrap_or("no message").trim()));
    }
    Ok((stdout, stderr))
}

/// This very executable, which plays every server.
fn this_exe() -> PathBuf {
    std::env::current_exe().expect("the path of the running bench binary")
}

/// The binary `case`'s client runs in: [`ClientKind::binary`] next to this one.
fn client_exe(case: &Case) -> PathBuf {
    this_exe().with_file_name(case.client.binary())
}

/// `PROGRAM case WORDS… N`, with this binary as the server.
fn case_command(program: PathBuf, case: &Case, n: usize) -> Command {
    let mut command = Command::new(program);
    command
        .arg("case")
        .args(case.words())
        .arg(n.to_string())
        .env(SERVER_EXE_VAR, this_exe());
    command
}

/// One wall-clock run of `case` in a fresh client process.
fn wall_clock(case: &Case) -> Result<Outcome, String> {
    let mut command = case_command(client_exe(case), case, calls(case));
    command.env_remove("PEERS_QUIET");
    let (stdout, _) = output(command)?;
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(OUTCOME_TAG))
        .ok_or_else(|| "failed (no outcome line)".to_owned())?;
    serde_json::from_str(line).map_err(|e| format!("failed (bad outcome line: {e})"))
}

/// Client instructions per call: `(Ir(2N) - Ir(N)) / N` under callgrind, so process
/// start, connection and handshake cancel out. Only the client process is counted (the
/// server child runs natively); its helper threads and tokio workers are included, the
/// kernel's work is not.
fn instructions(case: &Case) -> Result<u64, String> {
    let n = if case.size >= 1024 {
        knob("PEERS_CALLGRIND_N_64KIB", 20)
    } else {
        knob("PEERS_CALLGRIND_N_64B", 200)
    }
    .max(1);
    let count = |calls: usize| -> Result<u64, String> {
        let mut valgrind = Command::new("valgrind");
        valgrind
            .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
            .arg(client_exe(case))
            .arg("case")
            .args(case.words())
            .arg(calls.to_string())
            .env(SERVER_EXE_VAR, this_exe())
            .env("PEERS_QUIET", "1");
        let (_, stderr) = output(valgrind)?;
        stderr
            .lines()
            .find_map(|l| {
                l.split_once("Collected :")
                    .map(|(_, n)| n.trim().to_owned())
            })
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| "no instruction count from callgrind".to_owned())
    };
    let once = count(n)?;
    let twice = count(2 * n)?;
    Ok(twice.saturating_sub(once) / n as u64)
}

/// Whether valgrind can be run at all.
pub fn have_valgrind() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The client's wall-clock figures of `result`, summarised over runs.
pub fn medians(result: &CaseResult) -> Option<Summary> {
    let runs = result.runs.as_ref().ok()?;
    if runs.is_empty() {
        return None;
    }
    let median = |f: fn(&Outcome) -> f64| {
        let mut values: Vec<f64> = runs.iter().map(f).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let rates: Vec<f64> = runs.iter().map(|o| o.per_second).collect();
    Some(Summary {
        version: runs[0].version.clone(),
        per_second: median(|o| o.per_second),
        min: rates.iter().copied().fold(f64::INFINITY, f64::min),
        max: rates.iter().copied().fold(0.0, f64::max),
        p50_us: median(|o| o.p50_us),
        p99_us: median(|o| o.p99_us),
        peak_rss_kib: median(|o| o.peak_rss_kib as f64),
    })
}

/// The medians of a case's runs, and the spread of its rate.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The negotiated protocol version.
    pub version: String,
    /// Median calls per second.
    pub per_second: f64,
    /// Lowest calls per second of the runs.
    pub min: f64,
    /// Highest calls per second of the runs.
    pub max: f64,
    /// Median p50 latency, µs.
    pub p50_us: f64,
    /// Median p99 latency, µs.
    pub p99_us: f64,
    /// Median peak RSS, KiB.
    pub peak_rss_kib: f64,
}
