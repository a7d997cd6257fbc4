//! `peers-bare case bare bare TRANSPORT - SIZE IN_FLIGHT N`: one case with the bare
//! JSON-RPC client, in a binary that links only it, `serde_json` and the measuring code.
//! The suite in `mcp-peers` starts it.

fn main() {
    mcp_peers::clients::main("peers-bare", mcp_peers::clients::run_bare);
}
