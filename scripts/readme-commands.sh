#!/usr/bin/env bash
# Runs the README's install commands as a new user would, into a scratch root: the CLI
# installed from the checkout, `mcp --version`, the main job, `mcp demo`, then the
# README's loopback blocks (a URL in place of a server name; record and replay), each
# `cargo run -p mcp-blocking --example mcp --` line run with the installed binary, and the
# OAuth block ("The CLI with a protected server": `mcp serve-example --oauth`, add, login,
# call, status, logout) as written, in a private HOME, with curl as the browser ($BROWSER)
# following the authorize URL back to the CLI's loopback callback. (The test command is
# the rest of CI; the README's Rust examples are doctests of mcp-blocking.)
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

# The OAuth block, as written: its `mcp` lines with the installed binary, comments and the
# trailing `&` dropped; every step's output checked.
mapfile -t auth < <(sed -n '/^### The CLI with a protected server/,/^## /p' README.md | grep -E '^mcp ')
[ "${#auth[@]}" -eq 6 ] || { echo "README's OAuth block changed: ${auth[*]}" >&2; exit 1; }
[[ "${auth[0]}" == "mcp serve-example --http 127.0.0.1:"*" --oauth &" ]] \
  || { echo "the OAuth block does not start the bundled server: ${auth[0]}" >&2; exit 1; }
auth_line() { sed -E "s|^mcp |$root/bin/mcp |; s| +#.*\$||; s| &\$||" <<<"$1"; }
export HOME="$root/home" XDG_STATE_HOME="$root/home/state" XDG_CONFIG_HOME="$root/home/config"
unset MCP_CONFIG MCP_BEARER_TOKEN
mkdir -p "$HOME"
eval "$(auth_line "${auth[0]}") 2>\"$root/oauth-server.txt\" &"
server=$!
url="$(grep -oE 'http://127\.0\.0\.1:[0-9]+/mcp' <<<"${auth[1]}")"
for _ in $(seq 1 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url")" = 401 ] && break
  kill -0 "$server" 2>/dev/null || { echo "serve-example --oauth exited" >&2; exit 1; }
  sleep 0.1
done
grep -q 'approves every login at once' "$root/oauth-server.txt"
curl -s -D - -o /dev/null -X POST "$url" | grep -qi '^www-authenticate: Bearer resource_metadata='
check() { grep -q "$1" "$root/out.txt" || { echo "expected '$1' from: $2" >&2; cat "$root/out.txt" >&2; exit 1; }; }
eval "$(auth_line "${auth[1]}")" > "$root/out.txt"; check '^added docs' "${auth[1]}"
export BROWSER="curl -fsSL -o /dev/null"
eval "timeout 60 $(auth_line "${auth[2]}")" > "$root/out.txt" 2>&1; check '^logged in to docs at http://127.0.0.1' "${auth[2]}"
check 'credentials valid until' "${auth[2]}"
unset BROWSER
eval "$(auth_line "${auth[3]}")" > "$root/out.txt"; check '^hello$' "${auth[3]}"
eval "$(auth_line "${auth[4]}")" > "$root/out.txt"; check '^credentials *valid until' "${auth[4]}"
eval "$(auth_line "${auth[5]}")" > "$root/out.txt"
check 'credentials deleted (revoked at the authorization server)' "${auth[5]}"
[ -z "$(ls -A "$XDG_STATE_HOME/mcp/credentials" 2>/dev/null)" ] || { echo "credentials left after logout" >&2; exit 1; }
if eval "$(auth_line "${auth[3]}")" < /dev/null > "$root/out.txt" 2>&1; then
  echo "a call after logout succeeded" >&2; exit 1
fi
check 'run `mcp auth login docs` first' "${auth[3]} after logout"
stop_server
echo "readme commands: ok ($("$root/bin/mcp" --version))"
