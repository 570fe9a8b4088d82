#!/usr/bin/env bash
# Runs the core, Node adapter and store suites (.ci/lts/vitest.config.mts) on the Node releases
# that .ci/lts/package.json pins (node22, node24, ...), from the npm `node` package: the same
# node_modules, with SQLite through node:sqlite where better-sqlite3 is built for another release
# (test/support/sqlite-driver.ts). Each release it is given by major (`scripts/test-lts.sh 24 26`),
# or every one it pins. `.ci/run` runs everything on the lowest (`npm test` there) and this on the
# others. PostgreSQL suites run on a real server when DATABASE_URL names one, as in `npm test`.
# Property tests run FC_RUNS cases each (default here 200, fewer than in the main suite: these runs
# look for what differs between releases, not for rare cases). Exits non-zero if any release
# failed, after running them all.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
releases=(.ci/lts/node_modules/node[0-9]*/bin/node)
if [ ${#releases[@]} -eq 0 ]; then
  npm ci --prefix .ci/lts
  releases=(.ci/lts/node_modules/node[0-9]*/bin/node)
fi
if [ $# -gt 0 ]; then
  wanted=()
  for major in "$@"; do
    node=.ci/lts/node_modules/node$major/bin/node
    [ -x "$node" ] || { echo "No Node $major in .ci/lts/package.json (it pins: ${releases[*]})" >&2; exit 2; }
    wanted+=("$node")
  done
  releases=("${wanted[@]}")
fi
export FC_RUNS="${FC_RUNS:-200}"
failed=()
for node in "${releases[@]}"; do
  major=$(basename "$(dirname "$(dirname "$node")")")
  major=${major#node}
  echo "=== Node $("$node" --version) ($node): core, Node adapter and store suites"
  start=$SECONDS
  if EXPECT_NODE_MAJOR=$major "$node" node_modules/vitest/vitest.mjs run --config .ci/lts/vitest.config.mts; then
    echo "=== Node $major passed in $((SECONDS - start)) s"
  else
    echo "=== Node $major FAILED after $((SECONDS - start)) s"
    failed+=("$major")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "=== Failed on Node ${failed[*]}"
  exit 1
fi
