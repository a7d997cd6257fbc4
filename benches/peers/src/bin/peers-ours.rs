//! `peers-ours case blocking|smol SERVER TRANSPORT ERA SIZE IN_FLIGHT N`: one case with
//! `mcp_blocking`'s or `mcp_smol`'s client, in a binary that links only those clients,
//! `serde_json` and the measuring code (no tokio, hyper or rmcp), so its peak RSS is that
//! of an application using only our client. The suite in `mcp-peers` starts it.

fn main() {
    mcp_peers::clients::main("peers-ours", mcp_peers::clients::run_ours);
}
