#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the tests and benchmarks, and prints its URL:
#   export DATABASE_URL=$(scripts/start-postgres.sh)
# It listens on 127.0.0.1, port PGPORT_TEST (default 55432), with its data, log and socket in the
# folder PGBASE_TEST (default /tmp/viewsync-postgres; fsync off: nothing here needs to survive a
# crash). A server already running in that folder is kept, and its URL printed. Stop it, and
# delete the folder, with
#   scripts/start-postgres.sh --stop        (PGBASE_TEST names the folder, as when it started)
# Tests that need servers of their own start them on free ports, each in a folder of its own, and
# stop them when they end (test/support/clusters.ts): this default one is the developer's.
# Installs Debian's postgresql package when no server binaries are found. initdb refuses to run as
# root, so as root the server runs as the `postgres` user.
set -euo pipefail
port=${PGPORT_TEST:-55432}
base=${PGBASE_TEST:-/tmp/viewsync-postgres}
find_bin() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$dir/$1" ] && { echo "$dir/$1"; return; }
  done
  command -v "$1" || true
}
if [ "${1:-}" = "--where" ]; then echo "$base/data"; exit 0; fi
as_owner=()
if [ "$(id -u)" = 0 ]; then as_owner=(runuser -u postgres --); fi
if [ "${1:-}" = "--stop" ]; then
  pg_ctl=$(find_bin pg_ctl)
  if [ -n "$pg_ctl" ] && [ -f "$base/data/postmaster.pid" ]; then
    "${as_owner[@]}" "$pg_ctl" -D "$base/data" stop -m immediate -w >/dev/null 2>&1 || true
  fi
  rm -rf "$base"
  exit 0
fi
initdb=$(find_bin initdb)
if [ -z "$initdb" ]; then
  apt-get install -y -qq postgresql >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq postgresql >/dev/null; }
  initdb=$(find_bin initdb)
fi
bindir=$(dirname "$initdb")
if "${as_owner[@]}" "$bindir/pg_ctl" -D "$base/data" status >/dev/null 2>&1; then
  # Running already: on the port it was started with (the fourth line of postmaster.pid).
  port=$(sed -n 4p "$base/data/postmaster.pid")
else
  rm -rf "$base" && mkdir -p "$base"
  [ "$(id -u)" = 0 ] && chown postgres "$base"
  "${as_owner[@]}" "$initdb" -D "$base/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
  if ! "${as_owner[@]}" "$bindir/pg_ctl" -D "$base/data" -l "$base/log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $base -c fsync=off -c max_connections=200" start >/dev/null; then
    echo "start-postgres.sh: the server did not start on port $port; its log, $base/log:" >&2
    cat "$base/log" >&2 || true
    exit 1
  fi
fi
echo "postgres://postgres@127.0.0.1:$port/postgres"
