import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import base from '../../vitest.config.ts';

// The suites scripts/test-lts.sh runs on each Node release in package.json here: the core, the
// Node adapter and the stores. The rest run in the main suite only (`npm test`, which CI runs on
// the lowest release here): the package
// tests install the packed tarball, and the examples, Deno, Bun and workerd suites run other
// runtimes, whatever Node starts them. So no global setup (it packs the package for those) and
// no workerd project; the other options are the main config's.
const { globalSetup: _packs, projects: _projects, ...options } = base.test!;
const root = fileURLToPath(new URL('../..', import.meta.url));

export default defineConfig({
  root,
  test: {
    ...options,
    setupFiles: [fileURLToPath(new URL('expect-node.ts', import.meta.url))],
    include: [
      'test/{hostile,server,limits,sync,house}/*.test.ts',
      'test/spec/*.test.ts',
      'test/adapters/node.integration.test.ts',
      'test/runtime/node.e2e.test.ts',
      'test/poke/node.integration.test.ts',
      'test/storage/*.test.ts',
      'test/housekeeping/stores.test.ts',
      'test/backend/stores.test.ts',
      'test/testing/conformance.test.ts',
    ],
    // The big-space suites fill spaces of 20,000-25,000 entries on every store (40 s a release):
    // what they check lies in the protocol core; each store's reads are checked here by the
    // conformance suite, and the big-space suites run in the main suite. The PostgreSQL
    // conformance suite over its four drivers (a minute a release) runs there too: the drivers
    // are JavaScript over sockets or WebAssembly, and each release still runs PostgreSQL here
    // through the lost-statement, killed-backend, client-per-transaction and instances suites.
    // A statement lost behind PgBouncer (11 s a release, main suite only) checks the store's SQL against the
    // pooler, as the lost-statement suite here checks it against each release's sockets.
    exclude: [...configDefaults.exclude, 'test/storage/sqlite-runtimes.e2e.test.ts', 'test/**/*.workerd.test.ts', 'test/sync/streamed-reset.test.ts', 'test/sync/first-sync-pages.test.ts', 'test/storage/postgres.integration.test.ts', 'test/storage/pooled-lost-statement.integration.test.ts'],
  },
});
