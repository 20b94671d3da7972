#!/usr/bin/env bash
# Installs the other memory services' own libraries, pinned, each in a virtualenv of its own under
# var/peers (git-ignored), for tests/datarights/test_import_from_peers.py: the importers are tested
# on files these libraries write. mem0ai and the Supermemory SDK go to var/peers/py (any Python
# >= 3.10); basic-memory needs Python >= 3.12 and goes to var/peers/basic-memory. Idempotent; fails
# loudly when it cannot install (the test must run, not skip). Safe to run twice at once.
set -euo pipefail
MEM0_VERSION="2.2.1"
SUPERMEMORY_VERSION="5.0.1"
BASIC_MEMORY_VERSION="0.24.1"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$HERE/var/peers"
mkdir -p "$DEST"
# One install at a time: `make pytest` starts this in the background while the fast pass runs
# (the downloads take minutes and need no CPU), and the test's own call waits here for it.
exec 9>"$DEST/.lock"
flock 9

installed() {  # installed VENV PACKAGE VERSION
  [ -x "$1/bin/python" ] && "$1/bin/python" -m pip show "$2" 2>/dev/null | grep -qx "Version: $3"
}

python_at_least() {  # the first of the given interpreters that is at least 3.$1
  local minor="$1"; shift
  for candidate in "$@"; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import sys; sys.exit(sys.version_info < (3, $minor))"; then
      command -v "$candidate"; return 0
    fi
  done
  return 1
}

PY="$DEST/py"
if ! installed "$PY" mem0ai "$MEM0_VERSION" || ! installed "$PY" supermemory "$SUPERMEMORY_VERSION"; then
  BASE="$(python_at_least 10 python3.11 python3.12 python3.10 python3)"
  "$BASE" -m venv "$PY"
  "$PY/bin/python" -m pip install --quiet --disable-pip-version-check "mem0ai==$MEM0_VERSION" "supermemory==$SUPERMEMORY_VERSION"
fi

BM="$DEST/basic-memory"
if ! installed "$BM" basic-memory "$BASIC_MEMORY_VERSION"; then
  BASE="$(python_at_least 12 python3.12 python3.13 /root/.pyenv/versions/3.12.1/bin/python3.12 python3)" || {
    echo "basic-memory needs Python >= 3.12: install one (e.g. pyenv install 3.12)" >&2; exit 1; }
  "$BASE" -m venv "$BM"
  "$BM/bin/python" -m pip install --quiet --disable-pip-version-check "basic-memory==$BASIC_MEMORY_VERSION"
fi
