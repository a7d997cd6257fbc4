#!/usr/bin/env bash
# Runs the whole test suite: installs the pinned interop fixtures (npm and pip packages
# for the servers built with other SDKs), then every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/interop/setup.sh
# mcp-proto's own-runtime example, a client on std alone, against the bundled server.
bash scripts/own-runtime.sh
# Libraries, binaries, examples (built), integration tests and doc tests. Benchmarks are
# not tests: they are built by CI (`cargo bench --no-run`) and run by hand.
cargo test --workspace "$@"
