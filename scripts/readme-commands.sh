#!/usr/bin/env bash
# Runs the README's install commands as a new user would, into a scratch root: the CLI
# installed from the checkout, `mcp --version`, and the main job, `mcp demo`. (The test
# command is the rest of CI; the README's Rust examples are doctests of mcp-blocking.)
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
echo "readme commands: ok ($("$root/bin/mcp" --version))"
