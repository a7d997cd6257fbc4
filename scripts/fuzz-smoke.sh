#!/usr/bin/env bash
# Builds every fuzz target, replays its committed corpus (fuzz/corpus/<target>) and the
# inputs that once made it fail (fuzz/regressions/<target>), every input run once
# (`-runs=0`), then fuzzes each one briefly (SECONDS_PER_TARGET, default 20). The brief runs start from the committed corpus but write what they find to
# fuzz/target/smoke-corpus/<target>, so the committed corpus only changes through
# scripts/fuzz-campaign.sh.
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
targets=$(cargo fuzz list)
for target in $targets; do
  mkdir -p "corpus/$target"
  for dir in "corpus/$target" "regressions/$target"; do
    [ -d "$dir" ] || continue
    echo "replaying $dir ($(find "$dir" -type f | wc -l) inputs)"
    cargo fuzz run -O "$target" "$dir" -- -runs=0 -rss_limit_mb=2048
  done
done
for target in $targets; do
  scratch="target/smoke-corpus/$target"
  mkdir -p "$scratch"
  echo "fuzzing $target for ${per_target}s"
  cargo fuzz run -O "$target" "$scratch" "corpus/$target" -- \
    -max_total_time="$per_target" -rss_limit_mb=2048
done
