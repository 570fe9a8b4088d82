#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the tests and benchmarks, and prints its URL:
#   export DATABASE_URL=$(scripts/start-postgres.sh)
# Data lives in a temporary folder (fsync off: nothing here needs to survive a crash); stop it with
#   pg_ctl -D "$(dirname "$(scripts/start-postgres.sh --where)")/data" stop
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
initdb=$(find_bin initdb)
if [ -z "$initdb" ]; then
  apt-get install -y -qq postgresql >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq postgresql >/dev/null; }
  initdb=$(find_bin initdb)
fi
bindir=$(dirname "$initdb")
as_owner=()
if [ "$(id -u)" = 0 ]; then as_owner=(runuser -u postgres --); fi
if ! "${as_owner[@]}" "$bindir/pg_ctl" -D "$base/data" status >/dev/null 2>&1; then
  rm -rf "$base" && mkdir -p "$base"
  [ "$(id -u)" = 0 ] && chown postgres "$base"
  "${as_owner[@]}" "$initdb" -D "$base/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
  "${as_owner[@]}" "$bindir/pg_ctl" -D "$base/data" -l "$base/log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $base -c fsync=off -c max_connections=200" start >/dev/null
fi
echo "postgres://postgres@127.0.0.1:$port/postgres"
