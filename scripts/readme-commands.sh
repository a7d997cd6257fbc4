#!/usr/bin/env bash
# Runs the README's install commands as a new user would, into a scratch root: the CLI
# installed from the checkout, `mcp --version`, the main job, `mcp demo`, then the
# README's loopback blocks (a URL in place of a server name; record and replay), each
# `cargo run -p mcp-blocking --example mcp --` line run with the installed binary. (The
# test command is the rest of CI; the README's Rust examples are doctests of
# mcp-blocking; the OAuth block names a server on the internet and is not run here: the
# same commands run against a loopback authorization server in tests/cli_oauth.rs.)
# The build shares target/ so that CI pays for it once, after the benches' release build.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
grep -q 'cargo install --path mcp-blocking --example mcp' README.md
cargo install --quiet --path mcp-blocking --example mcp --root "$root"
"$root/bin/mcp" --version | grep -q '^mcp '
"$root/bin/mcp" demo > "$root/demo.txt"
grep -q 'modern' "$root/demo.txt"
grep -q 'legacy' "$root/demo.txt"

# The README's shell lines that drive the example over loopback HTTP, as written there.
mapfile -t lines < <(grep -E '^cargo run -p mcp-blocking --example mcp -- (serve-example|tools|--record|replay) ' README.md)
[ "${#lines[@]}" -eq 4 ] || { echo "README's loopback block changed: ${lines[*]}" >&2; exit 1; }
mcp_line() { sed "s|^cargo run -p mcp-blocking --example mcp --|$root/bin/mcp|; s|/tmp/run.jsonl|$root/run.jsonl|; s| &\$||" <<<"$1"; }
server=""
stop_server() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
  fi
}
trap 'stop_server; rm -rf "$root"' EXIT
eval "$(mcp_line "${lines[0]}") >/dev/null 2>&1 &"
server=$!
url="$(grep -oE 'http://127\.0\.0\.1:[0-9]+/mcp' <<<"${lines[1]}")"
for _ in $(seq 1 100); do
  "$root/bin/mcp" tools "$url" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { echo "serve-example exited" >&2; exit 1; }
  sleep 0.1
done
eval "$(mcp_line "${lines[1]}")" | grep -q echo
eval "$(mcp_line "${lines[2]}")" | grep -q echo
eval "$(mcp_line "${lines[3]}")" >/dev/null
stop_server
echo "readme commands: ok ($("$root/bin/mcp" --version))"
