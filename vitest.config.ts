import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { configDefaults, defineConfig } from 'vitest/config';

process.env.WRANGLER_SEND_METRICS ??= 'false';

/**
 * The end-to-end tests: whatever runs another process, another runtime, a browser, the real
 * client or the packed package. They need the package packed first (the global setup), and take
 * minutes. The unit project is the fast loop (`npm run test:unit`, which also leaves out the
 * PostgreSQL runs of the store suites and a few stress tests, and runs fewer property cases); `npm test` runs all four.
 */
const E2E = [
  'test/package/**/*.test.ts',
  'test/runtime/**/*.test.ts',
  'test/interop/**/*.test.ts',
  'test/demo/**/*.test.ts',
  'test/shutdown/**/*.test.ts',
  'test/cli/**/*.test.ts',
  'test/examples.test.ts',
  'test/poke/flood.test.ts',
  'test/storage/killed-backends.test.ts',
  'test/storage/sqlite-runtimes.test.ts',
  'test/telemetry/deno.test.ts',
  'test/edge/**/*.test.ts',
  'test/route/clusters.test.ts',
  'test/chaos/chaos.test.ts',
  'test/failover/**/*.test.ts',
];
/** In-process tests that need more than the core: real HTTP servers on sockets, and PostgreSQL (PGlite, or the server `DATABASE_URL` names). */
const INTEGRATION = [
  'test/adapters/**/*.test.ts',
  'test/poke/node.test.ts',
  'test/storage/postgres.test.ts',
  'test/backend/migrate.test.ts',
  'test/backend/postgres-poke.test.ts',
  'test/backend/client.test.ts',
  'test/postgres-instances.test.ts',
  'test/poke/redis.test.ts',
];
const WORKERD = 'test/**/*.workerd.test.ts';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...INTEGRATION, ...E2E, WORKERD] } },
      { extends: true, test: { name: 'integration', include: INTEGRATION } },
      { extends: true, test: { name: 'e2e', include: E2E, exclude: [...configDefaults.exclude, WORKERD], globalSetup: ['test/support/global-setup.ts'] } },
      {
        // Test files named *.workerd.test.ts run inside workerd, beside the Worker `main` exports.
        plugins: [
          cloudflareTest({
            main: './test/storage/durable-object.worker.ts',
            miniflare: {
              compatibilityDate: '2026-04-01',
              compatibilityFlags: ['nodejs_compat'],
              durableObjects: { STORAGE: { className: 'StorageObject', useSQLite: true } },
            },
          }),
        ],
        test: { name: 'workerd', include: [WORKERD], testTimeout: 60_000 },
      },
    ],
  },
});
