#!/usr/bin/env bash
# Instructions per operation of the server child of one stdio or HTTP round-trip bench case,
# counted by callgrind: the server-side counterpart of callgrind.sh.
#
#   bash benches/callgrind_server.sh BENCH "FILTER…" [N]
#
#   bash benches/callgrind_server.sh http_roundtrip "blocking 64KiB legacy" 20
#   bash benches/callgrind_server.sh http_roundtrip "blocking 64KiB modern" 20
#   bash benches/callgrind_server.sh http_roundtrip "bare http pair 64KiB" 20
#
# Runs the bench under `valgrind --tool=callgrind --trace-children=yes` twice, with
# MCP_BENCH_QUIET=1 and MCP_BENCH_ITERS=N, then 2N, and prints (Ir(2N) - Ir(N)) / N of the
# server process (the bench's only child, so the profile with the higher pid): its start,
# handshake and warm-up cancel out. FILTER must select exactly one case, which starts
# exactly one server. The client runs under callgrind too, which only makes it slower.
# Profiles stay in target/callgrind/ for `callgrind_annotate --inclusive=yes FILE`.
set -euo pipefail

bench=${1:?usage: callgrind_server.sh BENCH "FILTER…" [N]}
filter=${2:?usage: callgrind_server.sh BENCH "FILTER…" [N]}
n=${3:-20}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
bin=$(cargo bench -p mcp-benches --bench "$bench" --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*'"$bench"'-[^"]*"' | tail -1 | cut -d'"' -f4)
[[ -x "$bin" ]] || { echo "could not build the $bench bench" >&2; exit 1; }
out="$target/callgrind"
mkdir -p "$out"
tag=server_$(echo "$bench $filter" | tr -c "A-Za-z0-9\n" "_" | sed "s/__*/_/g; s/_$//")
# shellcheck source=benches/one_case.sh
source "$root/benches/one_case.sh"
select_one_case "$filter" || exit 1

# Prints the profile of the server process and its instruction count.
count() {
    local iters=$1
    rm -f "$out/$tag.$iters".*.out
    MCP_BENCH_QUIET=1 MCP_BENCH_ITERS=$iters valgrind --tool=callgrind --trace-children=yes \
        --callgrind-out-file="$out/$tag.$iters.%p.out" "$bin" "${case_args[@]}" \
        >/dev/null 2>"$out/$tag.$iters.log" || {
        echo "the bench failed under valgrind; see $out/$tag.$iters.log:" >&2
        tail -5 "$out/$tag.$iters.log" >&2
        return 1
    }
    # Processes of the bench binary only: closing a stdio server kills its process group
    # through `/bin/sh -c kill`, which valgrind follows too.
    local files
    files=$(grep -l -m1 "^cmd: *$bin" "$out/$tag.$iters".*.out || true)
    if [[ $(grep -c . <<<"$files") -ne 2 ]]; then
        echo "\"$filter\" must start exactly one server (run the bench to see the case names)" >&2
        return 1
    fi
    local file
    file=$(echo "$files" | awk -F. '{print $(NF-1), $0}' | sort -n | tail -1 | cut -d' ' -f2)
    echo "$file $(grep -E '^(summary|totals):' "$file" | head -1 | awk '{print $2}')"
}

read -r _ a < <(count "$n") || exit 1
read -r fb b < <(count $((2 * n))) || exit 1
echo "$bench [$filter], server process"
echo "  Ir($n) = $a, Ir($((2 * n))) = $b"
echo "  instructions per operation: $(( (b - a) / n ))"
echo "  profile: $fb"
