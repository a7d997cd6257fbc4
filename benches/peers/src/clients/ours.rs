//! This project's clients: `mcp_blocking::Client` (sequential calls on the client, calls
//! in flight on threads sharing its `ClientHandle`) and `mcp_smol`'s client with its
//! driver on `async_io::block_on`.

use std::io;

use mcp_proto::EraMode;
use mcp_proto::client::ClientConfig;
use serde_json::json;

use crate::measure::{self, Outcome, Plan};
use crate::spawn::{HttpChild, serve_env, server_exe};
use crate::spec::{Case, Era};

fn config(era: Era) -> ClientConfig {
    let mode = match era {
        Era::Modern => EraMode::Modern,
        _ => EraMode::Legacy,
    };
    ClientConfig::new("mcp-peers", "0.1.0").era_mode(mode)
}

fn io_error(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// `mcp_blocking::Client`: sequential calls on the client itself, or `in_flight` threads
/// sharing one connection through clones of its `ClientHandle`, each calling in a loop.
pub fn blocking(case: &Case, plan: &Plan, text: &str) -> io::Result<Option<Outcome>> {
    let (var, value) = serve_env(case.server, case.transport);
    let mut _server = None;
    let mut client = if crate::clients::is_stdio(case) {
        let command = mcp_blocking::StdioCommand::new(server_exe()).env(var, value);
        mcp_blocking::Client::connect_stdio(command, config(case.era))
    } else {
        let server = _server.insert(HttpChild::spawn(case.server)?);
        mcp_blocking::Client::connect_http(&server.url, config(case.era))
    }
    .map_err(io_error)?;
    let version = client.protocol_version().to_string();
    let first = client
        .call_tool("echo", json!({ "text": text }))
        .map_err(io_error)?;
    crate::clients::check_echo(&first.text(), text)?;
    let timings = if plan.in_flight > 1 {
        let handle = client.handle();
        measure::run(plan, |count, timed| {
            measure::threads(count, plan.in_flight, timed, || {
                let result = handle
                    .call_tool("echo", json!({ "text": text }))
                    .expect("echo");
                std::hint::black_box(result.content.len());
            })
        })
    } else {
        measure::run(plan, |count, timed| {
            measure::sequential(count, timed, || {
                let result = client
                    .call_tool("echo", json!({ "text": text }))
                    .expect("echo");
                std::hint::black_box(result.content.len());
            })
        })
    };
    let outcome = Outcome::new(&version, &timings);
    let _ = client.close();
    Ok(Some(outcome))
}

/// `mcp_smol`'s client: the driver and the calls joined by
/// `async_io::block_on(driver.join(work))`; `in_flight` workers each await their calls
/// one after another.
pub fn smol(case: &Case, plan: &Plan, text: &str) -> io::Result<Outcome> {
    let (var, value) = serve_env(case.server, case.transport);
    let mut _server = None;
    let (client, driver) = if crate::clients::is_stdio(case) {
        let command = mcp_smol::StdioCommand::new(server_exe()).env(var, value);
        mcp_smol::connect_stdio(command, config(case.era))
    } else {
        let server = _server.insert(HttpChild::spawn(case.server)?);
        mcp_smol::connect_http(&server.url, config(case.era))
    }
    .map_err(io_error)?;
    let work = async move {
        let details = client.connected().await.map_err(io_error)?;
        let first = client
            .call_tool("echo", json!({ "text": text }))
            .await
            .map_err(io_error)?;
        crate::clients::check_echo(&first.text(), text)?;
        let client = &client;
        let timings = measure::run_async(plan, |count, timed| {
            measure::workers(count, plan.in_flight, timed, move || async move {
                let result = client
                    .call_tool("echo", json!({ "text": text }))
                    .await
                    .expect("echo");
                std::hint::black_box(result.content.len());
            })
        })
        .await;
        Ok::<_, io::Error>((details.protocol_version.to_string(), timings))
        // Dropping the last client handle makes the driver close the connection and end.
    };
    let (driven, work) = async_io::block_on(driver.join(work));
    let (version, timings) = work?;
    driven.map_err(io_error)?;
    Ok(Outcome::new(&version, &timings))
}
