//! The client side: one case in this process, then one [`Outcome`] line on stdout.

use std::io;

use crate::measure::{Plan, payload};
use crate::spec::{Case, ClientKind, ServerKind, Transport};

mod bare;
mod ours;
mod rmcp;

/// Runs `case` with `n` timed calls and prints its outcome. `Ok(false)` when this
/// combination cannot run (the cell says why).
pub fn run(case: &Case, n: usize) -> io::Result<bool> {
    let plan = Plan::new(n, case.in_flight);
    let text = payload(case.size);
    let outcome = match case.client {
        ClientKind::Bare => Some(bare::run(case, &plan, &text)?),
        ClientKind::Blocking => ours::blocking(case, &plan, &text)?,
        ClientKind::Smol => Some(ours::smol(case, &plan, &text)?),
        ClientKind::Rmcp => Some(rmcp::run(case, &plan, &text)?),
    };
    if let Some(outcome) = &outcome {
        outcome.print(&plan);
    }
    Ok(outcome.is_some())
}

/// Why a cell stays empty, or `None` when the combination runs.
pub fn not_applicable(case: &Case) -> Option<&'static str> {
    let bare_client = case.client == ClientKind::Bare;
    let bare_server = case.server == ServerKind::Bare;
    if bare_client != bare_server {
        return Some("n/a (the bare pair only talks to itself)");
    }
    None
}

/// The echo came back whole, or an error that says what came instead.
fn check_echo(got: &str, text: &str) -> io::Result<()> {
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
fn is_stdio(case: &Case) -> bool {
    case.transport == Transport::Stdio
}
