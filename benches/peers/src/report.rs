//! The Markdown report: the machine, the targets as met / not met, and every case.

use std::fmt::Write as _;
use std::process::Command;

use crate::suite::{CaseResult, Summary, medians};
use mcp_peers::spec::{Case, ClientKind, Era, ServerKind, Transport};

const KIB: usize = 1024;
const TRANSPORTS: [Transport; 2] = [Transport::Stdio, Transport::Http];
const ERAS: [Era; 2] = [Era::Legacy, Era::Modern];
const OURS: [ClientKind; 2] = [ClientKind::Blocking, ClientKind::Smol];

fn shell(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "?".to_owned())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_owned())
        })
        .unwrap_or_else(|| "?".to_owned())
}

/// Looks cases up by their coordinates.
struct Results<'a>(&'a [CaseResult]);

impl Results<'_> {
    fn get(&self, case: Case) -> Option<&CaseResult> {
        self.0.iter().find(|r| r.case == case)
    }

    fn summary(&self, case: Case) -> Option<Summary> {
        self.get(case).and_then(medians)
    }

    fn rate(&self, case: Case) -> Option<f64> {
        self.summary(case).map(|s| s.per_second)
    }

    fn instructions(&self, case: Case) -> Option<u64> {
        match self.get(case)?.instructions {
            Some(Ok(n)) => Some(n),
            _ => None,
        }
    }
}

fn case(
    client: ClientKind,
    server: ServerKind,
    transport: Transport,
    era: Era,
    size: usize,
    in_flight: usize,
) -> Case {
    Case {
        client,
        server,
        transport,
        era,
        size,
        in_flight,
    }
}

fn bare(transport: Transport, size: usize, in_flight: usize) -> Case {
    case(
        ClientKind::Bare,
        ServerKind::Bare,
        transport,
        Era::None,
        size,
        in_flight,
    )
}

/// One line of the targets table.
struct Check {
    target: &'static str,
    what: String,
    figure: String,
    met: Option<bool>,
}

impl Check {
    /// `a / b` against `bound`: met when the ratio is at least (`at_least`) or at most
    /// the bound.
    fn ratio(
        target: &'static str,
        what: String,
        (a, b): (Option<f64>, Option<f64>),
        bound: f64,
        at_least: bool,
    ) -> Check {
        let (figure, met) = match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => {
                let r = a / b;
                let met = if at_least { r >= bound } else { r <= bound };
                (
                    format!("{} / {} = **{r:.2}×**", number(a), number(b)),
                    Some(met),
                )
            }
            _ => ("not measured".to_owned(), None),
        };
        Check {
            target,
            what,
            figure,
            met,
        }
    }
}

fn number(x: f64) -> String {
    let rounded = x.round() as u64;
    let digits = rounded.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn checks(r: &Results<'_>) -> Vec<Check> {
    let mut checks = Vec::new();
    let ours = |client, transport, era, size, in_flight| {
        case(client, ServerKind::Ours, transport, era, size, in_flight)
    };
    for transport in TRANSPORTS {
        for client in OURS {
            for era in ERAS {
                let me = ours(client, transport, era, 64 * KIB, 1);
                let them = bare(transport, 64 * KIB, 1);
                let ir = |c| r.instructions(c).map(|n| n as f64);
                checks.push(Check::ratio(
                    "64 KiB: client instructions ≤ 1.2× bare",
                    format!("{client} → ours, {transport}, {era}"),
                    (ir(me), ir(them)),
                    1.2,
                    false,
                ));
                checks.push(Check::ratio(
                    "64 KiB: rt/s ≥ 0.8× bare",
                    format!("{client} → ours, {transport}, {era}"),
                    (r.rate(me), r.rate(them)),
                    0.8,
                    true,
                ));
            }
        }
    }
    for transport in TRANSPORTS {
        for client in OURS {
            for (size, bound) in [(64 * KIB, 4.0), (64, 3.0)] {
                let worst =
                    r.0.iter()
                        .filter(|x| {
                            x.case.client == client
                                && x.case.transport == transport
                                && x.case.size == size
                        })
                        .filter_map(medians)
                        .map(|s| s.peak_rss_kib / 1024.0)
                        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
                checks.push(Check {
                    target: if size == 64 {
                        "peak RSS ≤ 3 MiB at 64 B"
                    } else {
                        "peak RSS ≤ 4 MiB at 64 KiB"
                    },
                    what: format!(
                        "{client}, {transport}, worst of both servers, eras and in-flight counts"
                    ),
                    figure: worst.map_or("not measured".to_owned(), |w| format!("**{w:.2} MiB**")),
                    met: worst.map(|w| w <= bound),
                });
            }
        }
    }
    for transport in TRANSPORTS {
        for server in [ServerKind::Ours, ServerKind::Rmcp] {
            for era in ERAS {
                for client in OURS {
                    let me = case(client, server, transport, era, 64, 8);
                    let them = case(ClientKind::Rmcp, server, transport, era, 64, 8);
                    let what = format!("{client} vs rmcp → {server}, {transport}, {era}, 64 B");
                    checks.push(Check::ratio(
                        "8 in flight: ≥ 2× rmcp's client, same server",
                        what,
                        (r.rate(me), r.rate(them)),
                        2.0,
                        true,
                    ));
                }
            }
        }
    }
    for transport in TRANSPORTS {
        for era in ERAS {
            for client in [ClientKind::Rmcp, ClientKind::Smol] {
                checks.push(Check::ratio(
                    "any client → our server ≥ 0.8× our client → our server",
                    format!("{client} vs blocking → ours, {transport}, {era}, 64 B sequential"),
                    (
                        r.rate(ours(client, transport, era, 64, 1)),
                        r.rate(ours(ClientKind::Blocking, transport, era, 64, 1)),
                    ),
                    0.8,
                    true,
                ));
            }
        }
    }
    for transport in TRANSPORTS {
        for era in ERAS {
            for in_flight in [1, 8] {
                let rmcp = |server| case(ClientKind::Rmcp, server, transport, era, 64, in_flight);
                checks.push(Check::ratio(
                    "rmcp's client: → our server ≥ 1.5× → rmcp's server",
                    format!("{transport}, {era}, 64 B, {in_flight} in flight"),
                    (
                        r.rate(rmcp(ServerKind::Ours)),
                        r.rate(rmcp(ServerKind::Rmcp)),
                    ),
                    1.5,
                    true,
                ));
            }
        }
    }
    for transport in TRANSPORTS {
        let (target, bound) = match transport {
            Transport::Stdio => ("sequential 64 B: rt/s ≥ 0.9× bare (stdio)", 0.9),
            Transport::Http => ("sequential 64 B: rt/s ≥ 0.8× bare (HTTP)", 0.8),
        };
        for client in OURS {
            for era in ERAS {
                checks.push(Check::ratio(
                    target,
                    format!("{client} → ours, {transport}, {era}"),
                    (
                        r.rate(ours(client, transport, era, 64, 1)),
                        r.rate(bare(transport, 64, 1)),
                    ),
                    bound,
                    true,
                ));
            }
        }
    }
    for transport in TRANSPORTS {
        for client in OURS {
            for era in ERAS {
                let s = r.summary(ours(client, transport, era, 64, 1));
                checks.push(Check::ratio(
                    "sequential 64 B: p99 ≤ 2× p50",
                    format!("{client} → ours, {transport}, {era} (µs)"),
                    (s.as_ref().map(|s| s.p99_us), s.as_ref().map(|s| s.p50_us)),
                    2.0,
                    false,
                ));
            }
        }
    }
    checks
}

/// What the suite ran with, for the header.
pub struct Setup {
    /// Timed calls per run, 64 B and 64 KiB, sequential (8 in flight: twice).
    pub calls: (usize, usize),
    /// Runs per wall-clock case.
    pub repeats: usize,
    /// `N` of the callgrind counts, 64 B and 64 KiB; `None` when not counted.
    pub callgrind: Option<(usize, usize)>,
}

/// The whole report.
pub fn markdown(results: &[CaseResult], setup: &Setup) -> String {
    let r = Results(results);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Measured {} on `{}`, {} CPUs ({}), kernel {}. rmcp 3.11.0 on tokio (multi-threaded \
         runtime, as `#[tokio::main]` builds it).",
        shell("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        shell("uname", &["-m"]),
        shell("nproc", &[]),
        cpu_model(),
        shell("uname", &["-r"]),
    );
    if mcp_peers::spawn::rmcp_stdio_pipes() {
        let _ = writeln!(
            out,
            "rmcp's stdio server ran on `rmcp::transport::stdio_pipes()` \
             (`PEERS_RMCP_STDIO=pipes`), not `stdio()`."
        );
    }
    // Set by run.sh once it has started the loops (`PEERS_WARM=1`).
    if let Ok(loops) = std::env::var("PEERS_WARM_LOOPS") {
        let _ = writeln!(
            out,
            "Every CPU was kept busy during the run by a busy loop at the lowest priority \
             ({loops} loops, `PEERS_WARM=1`), so that no woken thread waited for an idle CPU \
             to wake up."
        );
    }
    let _ = writeln!(
        out,
        "Each wall-clock case ran {} times in a fresh client process with {} (64 B) or {} \
         (64 KiB) timed calls after a warm-up (8 in flight: twice as many): median, and the \
         spread (min–max) of the rate. {}",
        setup.repeats,
        setup.calls.0,
        setup.calls.1,
        match setup.callgrind {
            Some((a, b)) => format!(
                "Client instructions per call: `(Ir(2N) − Ir(N)) / N` under callgrind, N = {a} \
                 (64 B) or {b} (64 KiB), client process only."
            ),
            None => "No callgrind counts in this run.".to_owned(),
        }
    );
    out.push_str(
        "Client peak RSS: the client process's VmHWM (`/proc/self/status`, read after the \
         timed calls; its server children are other processes and not counted), in the binary \
         the client ran in: `peers-ours` for `mcp_blocking` and `mcp_smol`, `peers-bare` for the \
         bare client (neither links tokio, hyper or rmcp), `mcp-peers` for rmcp's client (which \
         also holds every server and the suite).\n",
    );
    out.push_str("\n#### Targets\n\n| target | comparison | figure | met? |\n|---|---|---|---|\n");
    for check in checks(&r) {
        let met = match check.met {
            Some(true) => "met",
            Some(false) => "**not met**",
            None => "—",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {met} |",
            check.target, check.what, check.figure
        );
    }
    out.push_str(
        "\n#### Every case\n\n| transport | payload | in flight | client → server | era (version) \
         | calls/s: median (min–max) | p50 µs | p99 µs | client peak RSS | client instructions per call |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for result in results {
        let c = &result.case;
        let head = format!(
            "| {} | {} | {} | {} → {} |",
            c.transport,
            c.size_label(),
            c.in_flight,
            c.client,
            c.server
        );
        let era = |version: &str| match c.era {
            Era::None => "—".to_owned(),
            era => format!("{era} ({version})"),
        };
        let Some(s) = medians(result) else {
            let why = result.runs.as_ref().err().cloned().unwrap_or_default();
            let _ = writeln!(out, "{head} {} | {why} | | | | |", era("—"));
            continue;
        };
        let instructions = match &result.instructions {
            Some(Ok(n)) => number(*n as f64),
            Some(Err(e)) => e.clone(),
            None => "—".to_owned(),
        };
        let _ = writeln!(
            out,
            "{head} {} | {} ({}–{}) | {:.0} | {:.0} | {:.2} MiB | {instructions} |",
            era(&s.version),
            number(s.per_second),
            number(s.min),
            number(s.max),
            s.p50_us,
            s.p99_us,
            s.peak_rss_kib / 1024.0,
        );
    }
    out
}
