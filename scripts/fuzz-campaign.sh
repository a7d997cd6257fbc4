#!/usr/bin/env bash
# A fuzzing campaign: every fuzz target (or those named as arguments) in turn, for
# SECONDS_PER_TARGET each (default 600), at low priority so it can run in the background
# while other work goes on (NICE, default 19).
#
# * New inputs go to fuzz/corpus/<target> (committed), which is minimised afterwards
#   with `cargo fuzz cmin` to the inputs that reach distinct code edges (CMIN_FLAGS,
#   default `-use_counters=0`: hit counts do not count, which keeps a corpus to a few
#   hundred KiB with the same edge coverage; seeds with names of their own, which tests
#   read, are kept); crashes go to fuzz/artifacts/<target> (not committed).
# * One row per target is appended to fuzz/campaigns.tsv (date, target, seconds,
#   executions, libFuzzer's final `cov:` and `ft:`, corpus files and bytes after
#   minimising, new crash files), and the table in fuzz/README.md is regenerated from
#   it (scripts/fuzz-table.py).
# * libFuzzer's output is kept in fuzz/target/campaign-logs/.
# * FUZZ_FLAGS adds libFuzzer flags (say `-len_control=10 -max_len=256`, for a target
#   whose inputs are sequences of operations that only matter when long).
#
# A crash does not stop the campaign: the next target runs, and the script exits with
# status 1 at the end.
#
#   SECONDS_PER_TARGET=600 bash scripts/fuzz-campaign.sh                 # every target
#   SECONDS_PER_TARGET=60 bash scripts/fuzz-campaign.sh redactor url_parse
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/fuzz"
per_target="${SECONDS_PER_TARGET:-600}"
rss_limit_mb="${RSS_LIMIT_MB:-2048}"
read -r -a cmin_flags <<<"${CMIN_FLAGS:--use_counters=0}"
read -r -a fuzz_flags <<<"${FUZZ_FLAGS:-}"
niceness="${NICE:-19}"
log_dir="$root/fuzz/target/campaign-logs"
table="$root/fuzz/campaigns.tsv"
export RUSTC_BOOTSTRAP=1
low() { nice -n "$niceness" "$@"; }

if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked --version 0.13.2
fi
low cargo fuzz build -O
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi
mkdir -p "$log_dir"
if [ ! -f "$table" ]; then
  printf 'date\ttarget\tseconds\texecutions\tcov\tft\tcorpus_files\tcorpus_bytes\tcrashes\n' >"$table"
fi

# Files libFuzzer leaves for a failing input.
count_crashes() {
  find "artifacts/$1" -maxdepth 1 -type f \
    \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) | wc -l
}

failed=0
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target" "artifacts/$target"
  log="$log_dir/$target-$(date -u +%Y%m%dT%H%M%SZ).log"
  before=$(count_crashes "$target")
  echo "== $target: fuzzing for ${per_target}s (log: $log)"
  start=$(date +%s)
  status=0
  low cargo fuzz run -O "$target" "corpus/$target" -- \
    -max_total_time="$per_target" -rss_limit_mb="$rss_limit_mb" -print_final_stats=1 \
    ${fuzz_flags[@]+"${fuzz_flags[@]}"} >"$log" 2>&1 || status=$?
  seconds=$(($(date +%s) - start))
  crashes=$(($(count_crashes "$target") - before))
  if [ "$status" -ne 0 ]; then
    failed=1
    echo "   $target failed (status $status, $crashes new crash files); see $log"
    grep -m1 -A3 'panicked at' "$log" || tail -n 20 "$log"
  fi
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n 1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  if [ -z "$executions" ]; then
    # No final statistics (a crash): the last status line counts the executions.
    executions=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")
  fi
  echo "== $target: minimising the corpus"
  # Seeds with names of their own (not libFuzzer's 40-digit hashes) are read by tests
  # and documented: cmin may drop them as redundant, so they are put back.
  named="target/named-seeds/$target"
  rm -rf "$named" && mkdir -p "$named"
  find "corpus/$target" -maxdepth 1 -regextype posix-extended -type f \
    ! -regex '.*/[0-9a-f]{40}' -exec cp {} "$named/" \;
  low cargo fuzz cmin -O "$target" "corpus/$target" -- \
    -rss_limit_mb="$rss_limit_mb" "${cmin_flags[@]}" >>"$log" 2>&1 ||
    echo "   cmin failed; the corpus is left as it was (see $log)"
  cp -n "$named"/* "corpus/$target/" 2>/dev/null || true
  files=$(find "corpus/$target" -type f | wc -l)
  bytes=$(find "corpus/$target" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$target" \
    "$seconds" "${executions:-0}" "${cov:-0}" "${ft:-0}" "$files" "$bytes" "$crashes" >>"$table"
  echo "   ${executions:-0} executions in ${seconds}s, cov ${cov:-?} ft ${ft:-?}," \
    "corpus $files files ($bytes bytes), $crashes new crash files"
done
python3 "$root/scripts/fuzz-table.py" "$table" "$root/fuzz/README.md"
exit "$failed"
