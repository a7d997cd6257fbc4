//! The bundled example server (`mcp_proto::server::example`) on stdin/stdout, with a few
//! switches that let the tests of `mcp-smol` provoke the awkward cases.
//!
//! ```text
//! cargo run -p mcp-smol --example example_server -- [--era legacy|modern|both]
//!     [--exit-on-probe] [--ignore-eof] [--stderr TEXT] [--env-to-stderr]
//! ```
//!
//! * `--era`: which versions to serve (default both eras);
//! * `--exit-on-probe`: exit without a word when a `server/discover` arrives, as some
//!   legacy servers do (the client must restart it and speak `initialize`);
//! * `--ignore-eof`: keep running after stdin ends (the client must kill it);
//! * `--stderr TEXT`: write `TEXT` and a newline to stderr at start;
//! * `--env-to-stderr`: write every environment variable name to stderr at start, one
//!   `env: NAME` line each.
//!
//! A plain blocking loop: read a chunk, feed the machine, write what it says.

use std::io::{self, Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use mcp_proto::server::example;
use mcp_proto::version::{Era, VersionPolicy};

struct Args {
    era: Option<Era>,
    exit_on_probe: bool,
    ignore_eof: bool,
    stderr: Option<String>,
    env_to_stderr: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        era: None,
        exit_on_probe: false,
        ignore_eof: false,
        stderr: None,
        env_to_stderr: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--era" => {
                args.era = match it.next().as_deref() {
                    Some("both") => None,
                    Some("legacy") => Some(Era::Legacy),
                    Some("modern") => Some(Era::Modern),
                    other => return Err(format!("bad --era value {other:?}")),
                }
            }
            "--exit-on-probe" => args.exit_on_probe = true,
            "--ignore-eof" => args.ignore_eof = true,
            "--stderr" => args.stderr = Some(it.next().ok_or("--stderr needs a value")?),
            "--env-to-stderr" => args.env_to_stderr = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("example_server: {e}");
            eprintln!(
                "usage: example_server [--era legacy|modern|both] [--exit-on-probe] \
                 [--ignore-eof] [--stderr TEXT] [--env-to-stderr]"
            );
            return ExitCode::from(2);
        }
    };
    if let Some(text) = &args.stderr {
        eprintln!("{text}");
    }
    if args.env_to_stderr {
        for (name, _) in std::env::vars_os() {
            eprintln!("env: {}", name.to_string_lossy());
        }
    }
    match serve(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("example_server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: &Args) -> io::Result<()> {
    let mut server = example::server_with(|config| {
        if let Some(era) = args.era {
            let accepted = VersionPolicy::default()
                .accepted
                .into_iter()
                .filter(|v| v.era() == era)
                .collect();
            config.versions = VersionPolicy { accepted };
        }
    });
    let mut stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        if args.exit_on_probe && contains(chunk, b"\"server/discover\"") {
            eprintln!("example_server: exiting on server/discover (--exit-on-probe)");
            return Ok(());
        }
        server.handle_input(mcp_io::clock::now(), chunk);
        out.clear();
        while server
            .poll_transmit(mcp_io::clock::now(), &mut out)
            .is_some()
        {}
        if !out.is_empty() {
            stdout.write_all(&out)?;
            stdout.flush()?;
        }
        if server.is_closed() {
            return Ok(());
        }
    }
    server.handle_eof(mcp_io::clock::now());
    out.clear();
    while server
        .poll_transmit(mcp_io::clock::now(), &mut out)
        .is_some()
    {}
    if !out.is_empty() {
        stdout.write_all(&out)?;
        stdout.flush()?;
    }
    if args.ignore_eof {
        eprintln!("example_server: stdin closed, staying up (--ignore-eof)");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    Ok(())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
