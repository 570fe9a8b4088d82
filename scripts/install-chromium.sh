#!/usr/bin/env bash
# Installs Debian's Chromium for the browser test (test/demo) when it is missing; the test skips
# itself, saying so, where there is none. Needs root and Debian's package sources.
set -euo pipefail
[ -x /usr/bin/chromium ] && exit 0
if [ "$(id -u)" != 0 ]; then echo "Chromium is missing; run as root to install it (the browser test is skipped without it)" >&2; exit 0; fi
apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null; }
