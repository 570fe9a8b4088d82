import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { configDefaults, defineConfig } from 'vitest/config';

process.env.WRANGLER_SEND_METRICS ??= 'false';

/**
 * A test file's name says which project runs it:
 * - `*.e2e.test.ts`: whatever runs another process, another runtime, a browser, the real client
 *   or the packed package. They need the package packed first (the global setup), and take
 *   minutes.
 * - `*.integration.test.ts`: in-process tests that need more than the core: real HTTP servers on
 *   sockets, and PostgreSQL (PGlite, or the server `DATABASE_URL` names).
 * - `*.workerd.test.ts`: run inside workerd.
 * - any other `*.test.ts`: the unit project, the fast loop (`npm run test:unit`, which also
 *   leaves out the PostgreSQL runs of the store suites and a few stress tests, and runs fewer
 *   property cases). `npm test` runs all four.
 * A new slow file is put in its project by its name, not by a list someone must remember.
 */
const E2E = 'test/**/*.e2e.test.ts';
const INTEGRATION = 'test/**/*.integration.test.ts';
const WORKERD = 'test/**/*.workerd.test.ts';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    projects: [
      // The projects run one after another, the fast ones first (groupOrder), so that `npm test`
      // fails within minutes on what the fast loop catches rather than after the e2e project. On
      // 2 cores vitest runs one file at a time anyway (its default: a worker per core but one).
      {
        extends: true,
        test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, INTEGRATION, E2E, WORKERD], sequence: { groupOrder: 0 } },
      },
      { extends: true, test: { name: 'integration', include: [INTEGRATION], sequence: { groupOrder: 1 } } },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: [E2E],
          exclude: [...configDefaults.exclude, WORKERD],
          globalSetup: ['test/support/global-setup.ts'],
          sequence: { groupOrder: 2 },
        },
      },
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
        test: { name: 'workerd', include: [WORKERD], testTimeout: 60_000, sequence: { groupOrder: 3 } },
      },
    ],
  },
});
