//! `mcp-peers`: the same `tools/call echo` between rmcp 3.11, this project's clients and
//! servers, and a bare JSON-RPC pair, side by side (see `benches/README.md`, "Peers side
//! by side"). This binary plays every part but two:
//!
//! * `PEERS_SERVE=<server>-<transport>` set: a server ([`servers`]);
//! * `mcp-peers case CLIENT SERVER TRANSPORT ERA SIZE IN_FLIGHT N`: one client process,
//!   which prints one outcome line. The suite runs only rmcp's client ([`rmcp_client`])
//!   here; ours run in `peers-ours` and the bare one in `peers-bare`, binaries without
//!   tokio, hyper and rmcp (see [`mcp_peers::clients`]). This binary still runs them too,
//!   by hand, to compare a client's peak RSS in both;
//! * `mcp-peers suite [OUT.md]`: every case, each in fresh client processes, then the
//!   Markdown report on stdout and in `OUT.md` ([`suite`], [`report`]).

mod report;
mod rmcp_client;
mod servers;
mod suite;

use mcp_peers::clients;
use mcp_peers::measure::{Outcome, Plan};
use mcp_peers::spec::{Case, ClientKind};

use std::io;

fn main() {
    servers::serve_if_child();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("case") => clients::run_case(&args[1..], run_any),
        Some("suite") => run_suite(args.get(1)),
        _ => Err(io::Error::other(
            "usage: mcp-peers suite [OUT.md] | mcp-peers case CLIENT SERVER TRANSPORT ERA SIZE IN_FLIGHT N",
        )),
    };
    if let Err(e) = result {
        eprintln!("mcp-peers: {e}");
        std::process::exit(1);
    }
}

/// Any client, rmcp's included.
fn run_any(case: &Case, plan: &Plan, text: &str) -> io::Result<Option<Outcome>> {
    match case.client {
        ClientKind::Rmcp => rmcp_client::run(case, plan, text).map(Some),
        ClientKind::Bare => clients::run_bare(case, plan, text),
        ClientKind::Blocking | ClientKind::Smol => clients::run_ours(case, plan, text),
    }
}

fn run_suite(out: Option<&String>) -> io::Result<()> {
    let callgrind = suite::callgrind_enabled();
    if callgrind && !suite::have_valgrind() {
        eprintln!("valgrind not found: the instruction counts will read as failed");
    }
    let results = suite::run();
    let knob = suite::knob;
    let setup = report::Setup {
        calls: (knob("PEERS_N_64B", 2000), knob("PEERS_N_64KIB", 200)),
        repeats: knob("PEERS_REPEATS", 3).max(1),
        callgrind: callgrind.then(|| {
            (
                knob("PEERS_CALLGRIND_N_64B", 200),
                knob("PEERS_CALLGRIND_N_64KIB", 20),
            )
        }),
    };
    let markdown = report::markdown(&results, &setup);
    print!("{markdown}");
    if let Some(path) = out {
        std::fs::write(path, &markdown)?;
    }
    Ok(())
}
