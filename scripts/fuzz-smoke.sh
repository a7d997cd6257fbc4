#!/usr/bin/env bash
# Builds every fuzz target and runs each one briefly (SECONDS_PER_TARGET, default 20).
# cargo-fuzz needs nightly-only compiler flags; RUSTC_BOOTSTRAP lets the stable
# toolchain accept them, so no second toolchain is needed.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
per_target="${SECONDS_PER_TARGET:-20}"
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked --version 0.13.2
fi
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O
for target in $(cargo fuzz list); do
  mkdir -p "corpus/$target"
  echo "fuzzing $target for ${per_target}s"
  cargo fuzz run -O "$target" "corpus/$target" -- -max_total_time="$per_target" -rss_limit_mb=2048
done
