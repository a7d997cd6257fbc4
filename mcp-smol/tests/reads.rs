//! How often the driver reads the stdio server's stdout per call, counted by the kernel
//! (`syscr` in `/proc/self/io`: this process's `read` system calls, its threads
//! included). One test in its own binary, so that no other test's reads are counted.
//!
//! A 64-byte call's answer arrives in one read that does not fill the driver's buffer.
//! The driver then waits for the pipe to become readable again instead of reading it
//! until `WouldBlock`: through async-io, reading on costs two more reads per call (the
//! reactor answers the first poll after an event as ready again).
// The crate's `Error` is large on purpose: see its `lib.rs`.
#![allow(clippy::result_large_err)]
#![cfg(target_os = "linux")]

use mcp_smol::{ClientConfig, EraMode, StdioCommand};
use serde_json::json;

mod common;
use common::server_path;

/// This process's `read` system calls so far.
fn reads_so_far() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("read /proc/self/io");
    io.lines()
        .find_map(|line| line.strip_prefix("syscr: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("a syscr line")
}

#[test]
fn a_small_answer_costs_one_read_of_the_pipe() {
    const CALLS: u64 = 300;
    let config = ClientConfig::new("mcp-smol-tests", "0.0.0").era_mode(EraMode::Auto);
    let (client, driver) =
        mcp_smol::connect_stdio(StdioCommand::new(server_path()), config).expect("connect");
    let work = async move {
        client.connected().await.expect("connected");
        let call = || client.call_tool("echo", json!({"text": "x".repeat(64)}));
        for _ in 0..20 {
            call().await.expect("warm-up call");
        }
        let before = reads_so_far();
        for _ in 0..CALLS {
            call().await.expect("call");
        }
        let reads = reads_so_far() - before;
        client.close().await;
        reads
    };
    // The calling thread runs async-io's reactor, as `smol::block_on` does.
    let (driven, reads) = async_io::block_on(futures_lite::future::zip(driver, work));
    driven.expect("driver");
    let per_call = reads as f64 / CALLS as f64;
    // One read of the pipe, and one of async-io's own notifier for each of the two
    // times the reactor runs in a call (after the answer, and while waiting for it).
    // Reading the pipe until `WouldBlock` made it 5.
    assert!(
        per_call <= 3.5,
        "{per_call:.2} reads per call ({reads} for {CALLS} calls)"
    );
}
