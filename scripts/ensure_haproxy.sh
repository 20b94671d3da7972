#!/usr/bin/env bash
# Installs Debian's haproxy for `make bench-scaleout` and `make test` where it is missing (the
# bench runs the production layout of docs/deploy.md behind it, with deploy/haproxy.cfg; a test
# puts it in front of a live server). Idempotent; needs root (or sudo) only when it has to
# install. The installed service is not started (the bench and the test run their own haproxy in
# the foreground on a free loopback port).
set -euo pipefail
# Debian puts it in /usr/sbin, which is not on a normal user's PATH.
if command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends haproxy >/dev/null
# The version's first line, read whole: `| head -1` closed the pipe early and, under pipefail,
# failed the script with SIGPIPE (exit 141) on the run that installed haproxy.
version="$("$(command -v haproxy || echo /usr/sbin/haproxy)" -v)"
echo "${version%%$'\n'*}"
