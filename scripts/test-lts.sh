#!/usr/bin/env bash
# Runs the core, Node adapter and store suites (.ci/lts/vitest.config.mts) on every Node release
# that .ci/lts/package.json pins (node22, node24, ...), from the npm `node` package: the same
# node_modules, with SQLite through node:sqlite there (test/sqlite-driver.ts). `npm test` runs
# everything on the machine's Node; this adds the other releases. PostgreSQL suites run on a real
# server when DATABASE_URL names one, as in `npm test`. Property tests run FC_RUNS cases each
# (default here 200, fewer than on the machine's Node: these runs look for what differs between
# releases, not for rare cases). Exits non-zero if any release failed, after running them all.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
releases=(.ci/lts/node_modules/node[0-9]*/bin/node)
if [ ${#releases[@]} -eq 0 ]; then
  npm ci --prefix .ci/lts
  releases=(.ci/lts/node_modules/node[0-9]*/bin/node)
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
