#!/usr/bin/env bash
# The peers side by side: builds benches/peers in release and runs every combination of
# client (rmcp 3.11, mcp-blocking, mcp-smol, bare JSON-RPC), server (rmcp 3.11, ours, bare,
# and over HTTP for rmcp's client only `canned`: fixed answers and no MCP work, the floor
# under rmcp's client), transport (stdio, HTTP on 127.0.0.1), era, payload (64 B, 64 KiB) and calls in flight
# (1, 8). Writes the Markdown report to benches/peers/results.md and stdout; progress
# goes to stderr. About 10 minutes on 2 cores with the defaults. Builds three binaries:
# mcp-peers (servers, rmcp's client, the suite), peers-ours and peers-bare (our clients and
# the bare one, each without tokio/hyper/rmcp, so their peak RSS is their own).
#
#   bash benches/peers/run.sh
#   PEERS_REPEATS=5 PEERS_N_64B=10000 PEERS_N_64KIB=1000 bash benches/peers/run.sh
#   PEERS_FILTER="-> ours http" PEERS_CALLGRIND=0 bash benches/peers/run.sh
#   taskset -c 0 bash benches/peers/run.sh        # one CPU: steadier wall clock
#   PEERS_WARM=1 bash benches/peers/run.sh        # CPUs kept busy: no wake-up from idle
#   PEERS_RMCP_STDIO=pipes bash benches/peers/run.sh   # rmcp's stdio server on stdio_pipes()
#
# Knobs: PEERS_N_64B, PEERS_N_64KIB (timed calls per run; 8 in flight makes twice as
# many), PEERS_REPEATS (runs per case, default 3), PEERS_CALLGRIND (ours | all | 0),
# PEERS_CALLGRIND_N_64B, PEERS_CALLGRIND_N_64KIB, PEERS_FILTER (a substring of the case
# names printed on stderr, such as "smol -> rmcp stdio"), PEERS_WARM (below),
# PEERS_CANNED_HANDOFF (`1`: the canned server accepts on one thread and hands each
# connection to a waiting one, as a server with an accept thread does, instead of serving it
# on the thread that accepted it; what that hand-off costs a client that opens a
# connection per request), PEERS_RMCP_STDIO (`pipes`: rmcp's stdio server reads and writes through tokio's reactor,
# `rmcp::transport::stdio_pipes()`, instead of one blocking-pool hand-off per read and per
# answer with `stdio()`, the default, which caps every client near one answer per
# hand-off; the report says when it was on). See
# src/suite.rs. A single case run by hand (`peers-ours case …`) writes each call's latency
# in nanoseconds, in call order, to the file PEERS_LATENCIES names, for looking at a tail.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# The top-level target directory, so artifacts the top-level workspace already built with
# the same features (rmcp, tokio, …) can be reused.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"

cargo build --release --manifest-path "$here/Cargo.toml"
# PEERS_WARM=1: one busy loop per CPU at the lowest priority for the whole run. Where an
# idle (virtual) CPU halts and takes tens of microseconds to wake, every small round trip
# pays that wake-up, and by how much depends on what else runs; with the CPUs kept busy,
# a woken thread runs at once (the loops give way to anything else) and the figures
# repeat. The report says when it was on.
if [[ "${PEERS_WARM:-0}" == 1 ]]; then
    spinners=()
    for _ in $(seq "$(nproc)"); do
        nice -n 19 bash -c 'while :; do :; done' &
        spinners+=("$!")
    done
    trap 'kill "${spinners[@]}" 2>/dev/null' EXIT
    # What the report reads: the loops that run, not the wish for them.
    export PEERS_WARM_LOOPS=${#spinners[@]}
fi
"$CARGO_TARGET_DIR/release/mcp-peers" suite "$here/results.md"
echo "written to $here/results.md" >&2
