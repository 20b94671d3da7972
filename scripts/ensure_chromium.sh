#!/usr/bin/env bash
# Installs Debian's chromium for the browser tests where it is missing (Playwright's own browser
# download does not work here). Idempotent; needs root (or sudo) only when it has to install.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
/usr/bin/chromium --version
