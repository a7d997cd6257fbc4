#!/usr/bin/env bash
# Instructions per operation of one bench case, counted by callgrind (repeatable within
# about 1 %, unlike wall time on a shared machine).
#
#   bash benches/callgrind.sh BENCH "FILTER…" [N] [extra valgrind args…]
#
#   bash benches/callgrind.sh machine_roundtrip "64B legacy"
#   bash benches/callgrind.sh machine_roundtrip "64B modern" 10000 --toggle-collect='*client_half_*'
#   bash benches/callgrind.sh stdio_roundtrip "blocking 64B modern" 5000
#   bash benches/callgrind.sh jsonrpc_decode "decode echo 64KiB legacy" 2000
#
# Runs the bench binary under `valgrind --tool=callgrind` twice, with MCP_BENCH_QUIET=1 and
# MCP_BENCH_ITERS=N, then 2N, and prints (Ir(2N) - Ir(N)) / N: the setup (process start,
# connection, fixtures) cancels out. FILTER must select exactly one case: as words (every
# word in the case's name) or, when the words select several, as one phrase (see
# one_case.sh; run the bench normally to see the names). Profiles stay in
# target/callgrind/ for `callgrind_annotate --inclusive=yes FILE`.
#
# Only the process the bench runs in is counted: the stdio benches' server child runs
# natively (valgrind does not follow children without --trace-children=yes), so a stdio
# figure is the client side with its IO threads and syscalls (the kernel's work is not
# counted).
set -euo pipefail

bench=${1:?usage: callgrind.sh BENCH "FILTER…" [N] [valgrind args…]}
filter=${2:?usage: callgrind.sh BENCH "FILTER…" [N] [valgrind args…]}
n=${3:-10000}
shift $(( $# < 3 ? $# : 3 ))

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=$(cargo bench -p mcp-benches --bench "$bench" --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*'"$bench"'-[^"]*"' | tail -1 | cut -d'"' -f4)
[[ -x "$bin" ]] || { echo "could not build the $bench bench" >&2; exit 1; }
out="$root/target/callgrind"
mkdir -p "$out"
tag=$(echo "$bench $filter $*" | tr -c "A-Za-z0-9\n" "_" | sed "s/__*/_/g; s/_$//")
# shellcheck source=benches/one_case.sh
source "$root/benches/one_case.sh"
select_one_case "$filter" || exit 1

count() {
    local iters=$1 file="$out/$tag.$1.out"
    shift
    MCP_BENCH_QUIET=1 MCP_BENCH_ITERS=$iters valgrind --tool=callgrind \
        --callgrind-out-file="$file" "$@" "$bin" "${case_args[@]}" >/dev/null 2>"$file.log" || {
        echo "the bench failed under valgrind; see $file.log:" >&2
        tail -5 "$file.log" >&2
        return 1
    }
    grep -E '^(summary|totals):' "$file" | head -1 | awk '{print $2}'
}

a=$(count "$n" "$@") || exit 1
b=$(count $((2 * n)) "$@") || exit 1
if [[ "$a" == "$b" ]]; then
    echo "no case of $bench matched \"$filter\" (run the bench to see the case names)" >&2
    exit 1
fi
echo "$bench [$filter] $*"
echo "  Ir($n) = $a, Ir($((2 * n))) = $b"
echo "  instructions per operation: $(( (b - a) / n ))"
echo "  profile: $out/$tag.$((2 * n)).out"
