#!/usr/bin/env bash
# Installs Debian's pgbouncer and pg_auto_failover (for the PostgreSQL release whose server
# binaries are installed) when they are missing: the tests behind a transaction-mode pooler
# (test/support/pgbouncer.ts) and under an HA manager (test/support/auto-failover.ts) start their
# own, and skip without them. The packages' system services are not used.
set -euo pipefail
major=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)
packages=()
command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || packages+=(pgbouncer)
if [ -n "$major" ] && ! command -v pg_autoctl >/dev/null 2>&1; then packages+=("postgresql-$major-auto-failover"); fi
if [ ${#packages[@]} -eq 0 ]; then exit 0; fi
apt-get install -y -qq "${packages[@]}" >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq "${packages[@]}" >/dev/null; }
# The pgbouncer package may start a system pooler on 6432; the tests start their own.
service pgbouncer stop >/dev/null 2>&1 || true
