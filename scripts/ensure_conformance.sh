#!/usr/bin/env bash
# Installs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned) into
# var/conformance for tests/memories/test_mcp_conformance.py. Idempotent. 0.1.13 is the newest
# that runs on Node 20 (0.1.14 and later need Node 22). Fails loudly when it cannot install:
# the test must run, not skip. Installs Debian's nodejs and npm with apt where missing.
set -euo pipefail
VERSION="0.1.13"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${MMW_CONFORMANCE_DIR:-$HERE/var/conformance}"
BIN="$DEST/node_modules/.bin/conformance"
if [ -x "$BIN" ] && [ "$("$BIN" --version)" = "$VERSION" ]; then exit 0; fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then  # as ensure_chromium.sh does
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
mkdir -p "$DEST"
npm install --prefix "$DEST" --save-exact --no-audit --no-fund --silent "@modelcontextprotocol/conformance@$VERSION"
"$BIN" --version
