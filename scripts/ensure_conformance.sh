#!/usr/bin/env bash
# Installs the official MCP conformance suite (@modelcontextprotocol/conformance) and the MCP
# TypeScript SDK, both pinned, into var/conformance for tests/memories/test_mcp_conformance.py and
# test_mcp_typescript_client.py. Idempotent. 0.1.13 is the newest
# that runs on Node 20 (0.1.14 and later need Node 22). Fails loudly when it cannot install:
# the test must run, not skip. Installs Debian's nodejs and npm with apt where missing.
set -euo pipefail
VERSION="0.1.13"
SDK_VERSION="1.32.2"  # the TypeScript SDK client of tests/memories/test_mcp_typescript_client.py
HERE="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$HERE/var/conformance"
BIN="$DEST/node_modules/.bin/conformance"
SDK_PACKAGE="$DEST/node_modules/@modelcontextprotocol/sdk/package.json"
if [ -x "$BIN" ] && [ "$("$BIN" --version)" = "$VERSION" ] && grep -q "\"version\": \"$SDK_VERSION\"" "$SDK_PACKAGE" 2>/dev/null; then
  exit 0
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then  # as ensure_chromium.sh does
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
mkdir -p "$DEST"
npm install --prefix "$DEST" --save-exact --no-audit --no-fund --silent \
  "@modelcontextprotocol/conformance@$VERSION" "@modelcontextprotocol/sdk@$SDK_VERSION"
"$BIN" --version
