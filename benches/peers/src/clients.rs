//! The client side: one case in this process, then one [`Outcome`] line on stdout. Each
//! client runs in the binary the suite starts for it ([`ClientKind::binary`]): ours in
//! `peers-ours`, the bare one in `peers-bare` (neither links tokio, hyper or rmcp, so
//! their peak RSS is that of an application using only that client), rmcp's in
//! `mcp-peers`. Each binary's `case` subcommand goes through [`main`].

use std::io;

use crate::measure::{Outcome, Plan, payload};
use crate::spec::{Case, ClientKind, ServerKind, Transport};

pub mod bare;
pub mod ours;

/// A binary's client: runs a case with a plan and the echo text, `Ok(None)` when it cannot.
pub type Runner = fn(&Case, &Plan, &str) -> io::Result<Option<Outcome>>;

/// The `main` of a client binary named `name`: `NAME case CLIENT SERVER TRANSPORT ERA SIZE
/// IN_FLIGHT N` runs the case with `run` and prints its outcome line; any error goes to
/// stderr with exit status 1.
pub fn main(name: &str, run: Runner) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.split_first() {
        Some((first, words)) if first == "case" => run_case(words, run),
        _ => Err(io::Error::other(format!(
            "usage: {name} case CLIENT SERVER TRANSPORT ERA SIZE IN_FLIGHT N"
        ))),
    };
    if let Err(e) = result {
        eprintln!("{name}: {e}");
        std::process::exit(1);
    }
}

/// Runs one case in this process: `words` are the case's words and the call count.
pub fn run_case(words: &[String], run: Runner) -> io::Result<()> {
    let (n, case_words) = words.split_last().ok_or_else(|| {
        io::Error::other("usage: case CLIENT SERVER TRANSPORT ERA SIZE IN_FLIGHT N")
    })?;
    let n: usize = n.parse().map_err(io::Error::other)?;
    let case = Case::parse(case_words).ok_or_else(|| io::Error::other("not a case"))?;
    if let Some(why) = not_applicable(&case) {
        println!("{why}");
        return Ok(());
    }
    let plan = Plan::new(n, case.in_flight);
    let text = payload(case.size);
    if let Some(outcome) = run(&case, &plan, &text)? {
        outcome.print(&plan);
    }
    Ok(())
}

/// The client of `peers-ours`: `mcp_blocking` and `mcp_smol`.
pub fn run_ours(case: &Case, plan: &Plan, text: &str) -> io::Result<Option<Outcome>> {
    match case.client {
        ClientKind::Blocking => ours::blocking(case, plan, text),
        ClientKind::Smol => ours::smol(case, plan, text).map(Some),
        other => Err(elsewhere(other)),
    }
}

/// The client of `peers-bare`.
pub fn run_bare(case: &Case, plan: &Plan, text: &str) -> io::Result<Option<Outcome>> {
    match case.client {
        ClientKind::Bare => bare::run(case, plan, text).map(Some),
        other => Err(elsewhere(other)),
    }
}

/// The error for a client this binary does not contain.
pub fn elsewhere(client: ClientKind) -> io::Error {
    io::Error::other(format!(
        "the {client} client runs in the {} binary",
        client.binary()
    ))
}

/// Why a cell stays empty, or `None` when the combination runs.
pub fn not_applicable(case: &Case) -> Option<&'static str> {
    let bare_client = case.client == ClientKind::Bare;
    let bare_server = case.server == ServerKind::Bare;
    if bare_client != bare_server {
        return Some("n/a (the bare pair only talks to itself)");
    }
    if case.server == ServerKind::Canned
        && (case.client != ClientKind::Rmcp || case.transport != Transport::Http)
    {
        return Some("n/a (the canned server answers only rmcp's client, over HTTP)");
    }
    None
}

/// The echo came back whole, or an error that says what came instead.
pub fn check_echo(got: &str, text: &str) -> io::Result<()> {
    if got == text {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "the echo came back as {} bytes, not {}",
            got.len(),
            text.len()
        )))
    }
}

/// Whether the server is a child on stdio (the client spawns it) or on HTTP.
pub fn is_stdio(case: &Case) -> bool {
    case.transport == Transport::Stdio
}
