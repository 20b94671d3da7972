#!/usr/bin/env bash
# Installs the official MCP conformance suite (@modelcontextprotocol/conformance) and the MCP
# TypeScript SDK, both pinned, into var/conformance for tests/memories/test_mcp_conformance.py and
# test_mcp_typescript_client.py, with Node 22 from npm (the `node` package: the suite since 0.1.14
# needs Node >= 22, Debian's is 20; the suite's `#!/usr/bin/env node` finds it first when
# var/conformance/node_modules/.bin leads PATH, as the test arranges). Idempotent. Fails loudly
# when it cannot install: the test must run, not skip. Installs Debian's nodejs and npm with apt
# where missing (npm is needed to fetch the rest).
set -euo pipefail
VERSION="0.1.16"
NODE_VERSION="22.23.3"  # npm's `node` package: a Node 22 binary for the suite
SDK_VERSION="1.32.2"  # the TypeScript SDK client of tests/memories/test_mcp_typescript_client.py
HERE="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$HERE/var/conformance"
BIN="$DEST/node_modules/.bin/conformance"
export PATH="$DEST/node_modules/.bin:$PATH"
SDK_PACKAGE="$DEST/node_modules/@modelcontextprotocol/sdk/package.json"
if [ -x "$BIN" ] && [ "$(node --version)" = "v$NODE_VERSION" ] && [ "$("$BIN" --version)" = "$VERSION" ] && grep -q "\"version\": \"$SDK_VERSION\"" "$SDK_PACKAGE" 2>/dev/null; then
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
  "node@$NODE_VERSION" "@modelcontextprotocol/conformance@$VERSION" "@modelcontextprotocol/sdk@$SDK_VERSION"
"$BIN" --version
