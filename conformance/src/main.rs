//! `conformance_client`: the client the official MCP conformance suite drives.
//!
//! Contract (set by the suite's runner): the server URL is the last argument; the
//! scenario comes from `MCP_CONFORMANCE_SCENARIO`, the protocol version from
//! `MCP_CONFORMANCE_PROTOCOL_VERSION`, scenario data from `MCP_CONFORMANCE_CONTEXT`.
//! Exit 0 on success; on failure the error chain goes to stderr and the exit code is 1.
//! An id with no handler prints `unsupported scenario` and exits 2.
//!
//! Everything goes through the public API of `mcp-blocking` and `mcp-proto`: when a
//! scenario fails, the library is what gets fixed.

mod scenarios;

use std::process::ExitCode;

use serde_json::Value;

/// What the runner told us.
pub struct Ctx {
    /// The server URL.
    pub url: String,
    /// The scenario id.
    pub scenario: String,
    /// The protocol version to speak.
    pub version: String,
    /// `MCP_CONFORMANCE_CONTEXT`, parsed (`Null` when absent).
    pub context: Value,
}

fn main() -> ExitCode {
    let url = std::env::args().skip(1).last().unwrap_or_default();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version =
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_else(|_| "2025-11-25".into());
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let Some(handler) = scenarios::handler(&scenario) else {
        eprintln!("conformance_client: unsupported scenario {scenario:?}");
        return ExitCode::from(2);
    };
    eprintln!("conformance_client: scenario {scenario} at {version} against {url}");
    let ctx = Ctx {
        url,
        scenario,
        version,
        context,
    };
    match handler(&ctx) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance_client: {} failed: {e}", ctx.scenario);
            let mut source = e.source();
            while let Some(s) = source {
                eprintln!("  caused by: {s}");
                source = s.source();
            }
            ExitCode::from(1)
        }
    }
}
