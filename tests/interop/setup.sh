#!/usr/bin/env bash
# Installs the interop peers' dependencies next to this script:
#   node_modules/  from package-lock.json (npm ci)
#   pydeps/        from requirements.txt  (pip install --target)
# Idempotent: each step is skipped when its lock file has not changed since
# the last successful install (stamp files hold the lock file's sha256).
# Env: PYTHON (default python3), NPM (default npm), FORCE=1 to reinstall.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON="${PYTHON:-python3}"
NPM="${NPM:-npm}"

fingerprint() { sha256sum "$@" | sha256sum | cut -d' ' -f1; }

# --- npm -------------------------------------------------------------------
npm_fp="$(fingerprint package.json package-lock.json)"
if [[ "${FORCE:-}" != 1 && -f node_modules/.interop-stamp && "$(cat node_modules/.interop-stamp)" == "$npm_fp" ]]; then
  echo "setup.sh: node_modules up to date"
else
  echo "setup.sh: npm ci"
  "$NPM" ci --no-audit --no-fund
  echo "$npm_fp" > node_modules/.interop-stamp
fi

# --- pip -------------------------------------------------------------------
py_fp="$(fingerprint requirements.txt)-$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [[ "${FORCE:-}" != 1 && -f pydeps/.interop-stamp && "$(cat pydeps/.interop-stamp)" == "$py_fp" ]]; then
  echo "setup.sh: pydeps up to date"
else
  echo "setup.sh: pip install --target pydeps"
  rm -rf pydeps.tmp
  "$PYTHON" -m pip install --disable-pip-version-check --no-warn-conflicts --no-input \
    --target pydeps.tmp -r requirements.txt
  rm -rf pydeps
  mv pydeps.tmp pydeps
  echo "$py_fp" > pydeps/.interop-stamp
fi

# --- sanity ----------------------------------------------------------------
node -e 'import("@modelcontextprotocol/server").then(() => {}, (e) => { console.error(e); process.exit(1); })'
node -e 'import("@modelcontextprotocol/client").then(() => {}, (e) => { console.error(e); process.exit(1); })'
test -f node_modules/@modelcontextprotocol/server-everything/dist/index.js
PYTHONPATH=pydeps "$PYTHON" -c 'import mcp.server.mcpserver'
PYTHONPATH=pydeps "$PYTHON" -c 'import mcp.client.stdio, mcp.client.streamable_http; from mcp import Client'
echo "setup.sh: ok"
