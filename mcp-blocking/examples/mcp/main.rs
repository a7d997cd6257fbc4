//! `mcp`, the reference command-line client (stdio and Streamable HTTP servers), built on
//! `mcp-blocking`.
//!
//! ```text
//! cargo run -p mcp-blocking --example mcp -- demo
//! cargo run -p mcp-blocking --example mcp -- add ex --stdio "$(command -v mcp)" -- serve-example --stdio
//! cargo run -p mcp-blocking --example mcp -- call ex add --arg a=2 --arg b=3
//! cargo run -p mcp-blocking --example mcp -- tools https://mcp.example.com/mcp
//! ```
//!
//! The contract (commands, flags, output, exit status) is `docs/cli.md` at the repository root.
//! Everything here goes through the public API of `mcp-blocking`.
// The crate's `Error` is large on purpose: see its `lib.rs`.
#![allow(clippy::result_large_err)]

mod args;
mod auth;
mod commands;
mod config;
mod content;
mod demo;
mod extras;
mod interrupt;
mod oauth_server;
mod output;
mod prompt;
mod scale;
mod session;
mod skills;
mod terminal;

use std::io::Write;
use std::process::ExitCode;

use args::{Command, Format, Global, Usage};
use output::Failure;

/// The protocol versions the CLI speaks, as `--version` names them.
const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-11-25", "2026-07-28"];

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let invocation = match args::parse(&argv) {
        Ok(inv) => inv,
        Err(Usage(msg)) => {
            // The format flag may be fine even when something else is not.
            let format = if args::json_requested(&argv) {
                Format::Json
            } else {
                Format::Text
            };
            return ExitCode::from(output::report(format, false, &Failure::Usage(msg)));
        }
    };
    let global = invocation.global;
    interrupt::install();
    if let Some(path) = &global.record
        && let Err(failure) = session::record_to(path)
    {
        return ExitCode::from(output::report(global.format, global.verbose, &failure));
    }
    // An authorization that needed a person, in a run that takes no input, names the
    // login to run, whether connecting or a later call met it.
    let server = invocation.command.server().map(str::to_owned);
    let result = run(&global, invocation.command).map_err(|failure| match (failure, &server) {
        (Failure::Mcp(e), Some(name)) => auth::explain(e, name),
        (failure, _) => failure,
    });
    let code = match result {
        _ if interrupt::interrupted() => {
            eprintln!("mcp: interrupted (what was in flight was cancelled at the server)");
            130
        }
        Ok(code) => code,
        Err(failure) => output::report(global.format, global.verbose, &failure),
    };
    let _ = std::io::stdout().flush();
    ExitCode::from(code)
}

/// Runs one command; `Ok` carries the exit status of a command that did its job (0, or
/// 3 when the tool answered `isError`).
fn run(global: &Global, command: Command) -> Result<u8, Failure> {
    match command {
        Command::Help => {
            print!("{}", args::HELP);
            Ok(0)
        }
        Command::HelpOn(command) => {
            print!("{}", args::command_help(&command));
            Ok(0)
        }
        Command::Version => {
            let version = env!("CARGO_PKG_VERSION");
            match global.format {
                Format::Json => output::print_json(&serde_json::json!({
                    "version": version,
                    "protocolVersions": PROTOCOL_VERSIONS,
                })),
                Format::Text => println!(
                    "mcp {version} (mcp-blocking; protocol versions {})",
                    PROTOCOL_VERSIONS.join(", ")
                ),
            }
            Ok(0)
        }
        Command::Add {
            name,
            command,
            url,
            args,
            env,
            era,
            oauth,
            bearer_token_env,
            header_env,
        } => commands::add(
            global,
            &name,
            config::ServerEntry {
                command,
                args,
                env,
                url,
                era,
                oauth: oauth.map(|o| *o),
                bearer_token_env,
                header_env,
                extra: serde_json::Map::new(),
            },
        ),
        Command::List => commands::list(global),
        Command::Get { name } => commands::get(global, &name),
        Command::Remove { name } => commands::remove(global, &name),
        Command::Tools { server } => commands::tools(global, &server),
        Command::Call {
            server,
            tool,
            args_json,
            args,
            input,
            task,
        } => commands::call(
            global,
            &server,
            &tool,
            args_json.as_deref(),
            &args,
            input,
            task,
        ),
        Command::Tasks { server } => commands::tasks(global, &server),
        Command::Resources { server } => commands::resources(global, &server),
        Command::Read { server, uri, input } => commands::read(global, &server, &uri, input),
        Command::Prompts { server } => commands::prompts(global, &server),
        Command::Skills {
            server,
            skill,
            file,
            dir,
        } => skills::run(
            global,
            &server,
            skill.as_deref(),
            skills::Then::of(file.as_deref(), dir.as_deref()),
        ),
        Command::Complete {
            server,
            reference,
            argument,
            value,
            context,
        } => commands::complete(global, &server, &reference, &argument, &value, &context),
        Command::Prompt {
            server,
            name,
            args,
            input,
        } => commands::prompt(global, &server, &name, &args, input),
        Command::Listen {
            server,
            resources,
            list_changed,
            max_events,
            tasks,
        } => commands::listen(
            global,
            &server,
            &resources,
            list_changed,
            max_events,
            tasks.as_deref(),
        ),
        Command::Test { name } => commands::test(global, &name),
        Command::Status { name, connect } => commands::status(global, name.as_deref(), connect),
        Command::Doctor { connect } => commands::doctor(global, connect),
        Command::Auth {
            action,
            name,
            scopes,
            no_browser,
        } => auth::command(global, action, &name, &scopes, no_browser),
        Command::Demo => demo::run(global),
        Command::Replay { file } => commands::replay(global, &file),
        Command::Import { file, dry_run } => commands::import(global, &file, dry_run),
        Command::ServeExample {
            era,
            http,
            tasks,
            sse_polling,
            oauth,
            redis,
            state_key_file,
        } => {
            let scale = match (redis, state_key_file) {
                (Some(url), Some(file)) => match scale::Scale::open(&url, &file) {
                    Ok(scale) => Some(scale),
                    Err(e) => {
                        eprintln!("mcp serve-example: {e}");
                        return Ok(1);
                    }
                },
                _ => None,
            };
            let (era, http) = (&era, http.as_deref());
            commands::serve_example(era, http, tasks, sse_polling, oauth, scale.as_ref())
        }
    }
}
