#!/usr/bin/env bash
# Install the Node MCP clients the tests and the conformance run use (issue 27) into build/mcp-node/:
# the MCP Inspector (its CLI: `mcp-inspector --cli ...`) and the protocol's conformance suite.
# Pinned versions (the Inspector's 0.15 line runs on Debian's Node 20; later lines need newer Node).
# Needs Node 18+ and npm (the npm registry, at install time only). Idempotent: skips what is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=build/mcp-node
if ! command -v npm >/dev/null 2>&1; then
  echo "mcp_clients.sh: npm not found; the Inspector and conformance tests will be skipped" >&2
  exit 0
fi
mkdir -p "$PREFIX"
[ -f "$PREFIX/package.json" ] || echo '{"private": true}' > "$PREFIX/package.json"
need=()
[ -x "$PREFIX/node_modules/.bin/mcp-inspector" ] || need+=("@modelcontextprotocol/inspector@0.15.0")
[ -d "$PREFIX/node_modules/@modelcontextprotocol/conformance" ] || need+=("@modelcontextprotocol/conformance@0.1.16")
if [ ${#need[@]} -gt 0 ]; then
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "${need[@]}"
fi
ls "$PREFIX/node_modules/.bin" | grep -E 'inspector|conformance' || true
