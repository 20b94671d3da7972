#!/usr/bin/env bash
# The TypeScript SDK's two build steps, with the tools scripts/ensure_ts_sdk.sh pins in var/ts-sdk:
#   scripts/ts_sdk.sh generate SCHEMA.json [OUT.ts]  types from an OpenAPI schema (default: clients/typescript/src/schema.ts)
#   scripts/ts_sdk.sh build [OUTDIR]                  compile clients/typescript/src (default: clients/typescript/dist)
# Refresh both after an API change: save the served schema (GET /api/v1/schema/ with
# Accept: application/vnd.oai.openapi+json), generate, build; tests/clients/test_typescript_sdk.py
# fails while either is stale.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
SDK="$HERE/clients/typescript"
BIN="$HERE/var/ts-sdk/node_modules/.bin"
bash "$HERE/scripts/ensure_ts_sdk.sh" >/dev/null
case "${1:-}" in
  generate)
    "$BIN/openapi-typescript" "$2" --output "${3:-$SDK/src/schema.ts}" --alphabetize --silent
    ;;
  build)
    OUT="${2:-$SDK/dist}"
    rm -rf "$OUT"
    # Node's own types come from var/ts-sdk (typeRoots): nothing is installed into the SDK's folder.
    "$BIN/tsc" -p "$SDK/tsconfig.json" --outDir "$OUT" --typeRoots "$HERE/var/ts-sdk/node_modules/@types" --types node
    ;;
  *)
    echo "usage: scripts/ts_sdk.sh generate SCHEMA.json [OUT.ts] | build [OUTDIR]" >&2
    exit 2
    ;;
esac
