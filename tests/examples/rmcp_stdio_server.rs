//! The Rust SDK's server (rmcp 3.11) over stdio, a peer for the interop tests
//! (`tests/interop_client_features.rs` starts it as a child process). Its tools are in
//! `interop/rmcp_calc.rs`.

#[path = "../interop/rmcp_calc.rs"]
mod rmcp_calc;

use rmcp::ServiceExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let running = rmcp_calc::Calc.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
