#!/usr/bin/env bash
# Installs the official MCP conformance suite (@modelcontextprotocol/conformance) and the MCP
# TypeScript SDK, both pinned, into var/conformance for tests/memories/test_mcp_conformance.py and
# test_mcp_typescript_client.py, with Node 22 from npm (the `node` package: the suite since 0.1.14
# needs Node >= 22, Debian's is 20; the suite's `#!/usr/bin/env node` finds it first when
# var/conformance/node_modules/.bin leads PATH, as the test arranges). Idempotent. Fails loudly
# when it cannot install: the test must run, not skip. Installs Debian's nodejs and npm with apt
# where missing (npm is needed to fetch the rest).
#
# Two suites: VERSION checks the handshake revisions (up to 2025-11-25) and is installed at
# var/conformance; NEXT_VERSION checks revision 2026-07-28 (run with `--requirements 2026-07-28`)
# and is installed beside it in var/conformance/$NEXT_VERSION (both name their command
# `conformance`, so they cannot share one node_modules). The TypeScript SDK is pinned in both, so
# the suites' own dependency on it resolves to the same release.
set -euo pipefail
VERSION="0.1.16"
NEXT_VERSION="0.2.0-alpha.12"
NODE_VERSION="22.23.3"  # npm's `node` package: a Node 22 binary for the suites
SDK_VERSION="1.32.2"  # the TypeScript SDK client of tests/memories/test_mcp_typescript_client.py
HERE="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$HERE/var/conformance"
NEXT_DEST="$DEST/$NEXT_VERSION"
BIN="$DEST/node_modules/.bin/conformance"
NEXT_BIN="$NEXT_DEST/node_modules/.bin/conformance"
export PATH="$DEST/node_modules/.bin:$PATH"
SDK_PACKAGE="$DEST/node_modules/@modelcontextprotocol/sdk/package.json"

installed() {  # the suite at $1 answers `--version` with $2
  [ -x "$1" ] && [ "$("$1" --version)" = "$2" ]
}

if installed "$BIN" "$VERSION" && [ "$(node --version)" = "v$NODE_VERSION" ] \
  && grep -q "\"version\": \"$SDK_VERSION\"" "$SDK_PACKAGE" 2>/dev/null && installed "$NEXT_BIN" "$NEXT_VERSION"; then
  exit 0
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then  # as ensure_chromium.sh does
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
mkdir -p "$DEST" "$NEXT_DEST"
npm install --prefix "$DEST" --save-exact --no-audit --no-fund --silent \
  "node@$NODE_VERSION" "@modelcontextprotocol/conformance@$VERSION" "@modelcontextprotocol/sdk@$SDK_VERSION"
npm install --prefix "$NEXT_DEST" --save-exact --no-audit --no-fund --silent \
  "@modelcontextprotocol/conformance@$NEXT_VERSION" "@modelcontextprotocol/sdk@$SDK_VERSION"
"$BIN" --version
"$NEXT_BIN" --version
