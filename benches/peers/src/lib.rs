//! What the `mcp-peers` binaries share: the cases ([`spec`]), the timing and peak-RSS
//! reading inside a client process ([`measure`]), starting a server child ([`spawn`]) and
//! the clients that run in the lean binaries ([`clients`]: ours in `peers-ours`, the bare
//! one in `peers-bare`).
//!
//! Nothing here names tokio, hyper or rmcp: those are only in the `mcp-peers` binary
//! (rmcp's client, the servers, the suite), so the lean client binaries carry only what
//! their client needs, and a client's peak RSS is not inflated by code it never runs.

pub mod clients;
pub mod measure;
pub mod spawn;
pub mod spec;
