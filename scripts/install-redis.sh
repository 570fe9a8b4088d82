#!/usr/bin/env bash
# Installs Debian's redis-server when it is missing: the Redis notifier's tests start their own
# redis-server on a free port (test/support/redis-server.ts) and skip, saying so, without one.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then exit 0; fi
apt-get install -y -qq redis-server >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq redis-server >/dev/null; }
# The package starts a system server; the tests start their own.
service redis-server stop >/dev/null 2>&1 || true
