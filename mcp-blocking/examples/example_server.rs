//! The bundled example server (`mcp_proto::server::example`) on stdin/stdout.
//!
//! ```text
//! cargo run -p mcp-blocking --example example-server -- [--era legacy|modern|both]
//! ```
//!
//! The tests of `mcp-blocking` start it as a child process.

use std::process::ExitCode;

use mcp_blocking::mcp_proto::server::example;
use mcp_blocking::mcp_proto::version::{Era, VersionPolicy};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let era = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => None,
        ["--era", "both"] => None,
        ["--era", "legacy"] => Some(Era::Legacy),
        ["--era", "modern"] => Some(Era::Modern),
        _ => {
            eprintln!("usage: example-server [--era legacy|modern|both]");
            return ExitCode::from(2);
        }
    };
    let server = example::server_with(|config| {
        if let Some(era) = era {
            let accepted = VersionPolicy::default()
                .accepted
                .into_iter()
                .filter(|v| v.era() == era)
                .collect();
            config.versions = VersionPolicy { accepted };
        }
    });
    match mcp_blocking::serve_stdio(server) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("example-server: {e}");
            ExitCode::FAILURE
        }
    }
}
