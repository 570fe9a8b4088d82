import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { configDefaults, defineConfig } from 'vitest/config';

process.env.WRANGLER_SEND_METRICS ??= 'false';

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'node', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, 'test/**/*.workerd.test.ts'] } },
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
        test: { name: 'workerd', include: ['test/**/*.workerd.test.ts'], testTimeout: 60_000 },
      },
    ],
  },
});
