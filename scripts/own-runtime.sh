#!/usr/bin/env bash
# Runs mcp-proto's bring-your-own-runtime example (a client on std alone) against the
# bundled example server in each era, and checks that it listed the tools and called one.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p mcp-blocking --example example-server
cargo build -q -p mcp-proto --example own_runtime
target_dir="${CARGO_TARGET_DIR:-target}"
for era in legacy modern both; do
    out="$(timeout 60 "$target_dir/debug/examples/own_runtime" \
        "$target_dir/debug/examples/example-server" --era "$era")"
    echo "$out" | sed "s/^/own_runtime ($era): /"
    grep -q '^add(2, 3) = 5$' <<<"$out" || { echo "own_runtime failed in era $era" >&2; exit 1; }
done
