//! rmcp 3.11's client on a multi-threaded tokio runtime (what `#[tokio::main]` builds):
//! `Peer::call_tool`, one future per call; `in_flight` workers joined in one task, each
//! awaiting its calls one after another.

use std::io;

use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::ClientLifecycleMode;
use rmcp::service::ClientServiceExt;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::json;

use mcp_peers::clients::{check_echo, is_stdio};
use mcp_peers::measure::{self, Outcome, Plan};
use mcp_peers::spawn::{HttpChild, serve_env, server_exe};
use mcp_peers::spec::{Case, Era};

fn lifecycle(era: Era) -> ClientLifecycleMode {
    match era {
        Era::Modern => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        _ => ClientLifecycleMode::Initialize,
    }
}

fn params(text: &str) -> CallToolRequestParams {
    let serde_json::Value::Object(arguments) = json!({ "text": text }) else {
        unreachable!("an object literal")
    };
    CallToolRequestParams::new("echo").with_arguments(arguments)
}

fn text_of(result: &impl serde::Serialize) -> String {
    let value = serde_json::to_value(result).unwrap_or_default();
    value["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// One case with rmcp's client.
pub fn run(case: &Case, plan: &Plan, text: &str) -> io::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (var, value) = serve_env(case.server, case.transport);
        let mut _server = None;
        let client = if is_stdio(case) {
            let mut command = tokio::process::Command::new(server_exe());
            command.env(var, value);
            let child = TokioChildProcess::new(command)?;
            ().serve_with_lifecycle(child, lifecycle(case.era)).await
        } else {
            let server = _server.insert(HttpChild::spawn(case.server)?);
            let transport = StreamableHttpClientTransport::from_uri(server.url.as_str());
            ().serve_with_lifecycle(transport, lifecycle(case.era))
                .await
        }
        .map_err(io::Error::other)?;
        let version = client
            .peer_info()
            .map(|info| info.protocol_version.to_string())
            .unwrap_or_default();
        let first = client
            .call_tool(params(text))
            .await
            .map_err(io::Error::other)?;
        check_echo(&text_of(&first), text)?;
        let peer = client.peer();
        let timings = measure::run_async(plan, |count, timed| {
            measure::workers(count, plan.in_flight, timed, move || async move {
                let result = peer.call_tool(params(text)).await.expect("echo");
                std::hint::black_box(&result);
            })
        })
        .await;
        let outcome = Outcome::new(&version, &timings);
        let _ = client.cancel().await;
        Ok(outcome)
    })
}
