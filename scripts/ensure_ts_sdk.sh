#!/usr/bin/env bash
# Installs what builds the TypeScript SDK (clients/typescript), pinned, into var/ts-sdk
# (git-ignored): the TypeScript compiler, openapi-typescript (the types generated from the served
# OpenAPI schema) and Node's type definitions. Build-time only: the SDK itself has no dependency.
# Idempotent; fails loudly when it cannot install (the test must run, not skip).
set -euo pipefail
TYPESCRIPT="5.9.3"
OPENAPI_TYPESCRIPT="7.13.0"
TYPES_NODE="20.19.43"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$HERE/var/ts-sdk"
want() { grep -q "\"version\": \"$2\"" "$DEST/node_modules/$1/package.json" 2>/dev/null; }
if want typescript "$TYPESCRIPT" && want openapi-typescript "$OPENAPI_TYPESCRIPT" && want @types/node "$TYPES_NODE"; then
  exit 0
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "the TypeScript SDK needs Node >= 20 and npm (apt-get install nodejs npm)" >&2
  exit 1
fi
mkdir -p "$DEST"
npm install --prefix "$DEST" --save-exact --no-audit --no-fund --silent \
  "typescript@$TYPESCRIPT" "openapi-typescript@$OPENAPI_TYPESCRIPT" "@types/node@$TYPES_NODE"
"$DEST/node_modules/.bin/tsc" --version
