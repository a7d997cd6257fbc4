//! rmcp 3.11's server with one tool, `echo {text}`, which returns the text. Over stdio it
//! serves stdin/stdout through `rmcp::transport::stdio()`, or `stdio_pipes()` with
//! `PEERS_RMCP_STDIO=pipes`; over HTTP it is rmcp's `StreamableHttpService` (default config:
//! sessions, SSE answers) on hyper's HTTP/1.1 server, one task per connection.

use std::io;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::ServiceExt;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_router};
use serde::Deserialize;

/// The server: stateless, one tool.
#[derive(Debug, Clone)]
pub struct Echo;

/// The `echo` tool's arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[tool_router(server_handler)]
impl Echo {
    #[tool(description = "Returns the text it is given")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

/// The runtime a server built with rmcp usually runs on: `#[tokio::main]`'s.
fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

/// rmcp's server on stdin/stdout until stdin closes: through `stdio()`, which reads and
/// writes on tokio's blocking thread pool (one hand-off per read, and per answer written,
/// one at a time), or with `pipes` through `stdio_pipes()`, on tokio's reactor.
pub fn serve_stdio(pipes: bool) -> io::Result<()> {
    runtime()?.block_on(async {
        let running = if pipes {
            Echo.serve(rmcp::transport::stdio_pipes()).await
        } else {
            Echo.serve(rmcp::transport::stdio()).await
        }
        .map_err(io::Error::other)?;
        running.waiting().await.map_err(io::Error::other)?;
        Ok(())
    })
}

/// rmcp's Streamable HTTP server on 127.0.0.1 until stdin closes.
pub fn serve_http() -> io::Result<()> {
    let runtime = runtime()?;
    runtime.block_on(async {
        let service = StreamableHttpService::new(
            || Ok(Echo),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/mcp", listener.local_addr()?);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let service = TowerToHyperService::new(service.clone());
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        super::announce(&url)?;
        tokio::task::spawn_blocking(super::wait_for_stdin_eof)
            .await
            .map_err(io::Error::other)?
    })?;
    // Open connections and sessions are not waited for.
    runtime.shutdown_background();
    Ok(())
}
