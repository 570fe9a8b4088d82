import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../support/command.js';
import { ROOT } from '../package/packed.js';

// The conformance suite on sqliteStorage over each runtime's own SQLite (sqlite-runtime.ts).
const RUNTIMES = {
  'Deno, node:sqlite': ['deno', 'run', '--no-remote', '--unstable-sloppy-imports', '--node-modules-dir=manual', '--allow-read', '--allow-write', '--allow-env'],
  'Bun, bun:sqlite': ['bun'],
} as const;

describe.concurrent('sqliteStorage conforms in every runtime with a SQLite of its own', () => {
  it.each(Object.keys(RUNTIMES) as Array<keyof typeof RUNTIMES>)('%s', async (runtime) => {
    const [bin, ...args] = RUNTIMES[runtime];
    const dir = mkdtempSync(join(tmpdir(), 'viewsync-sqlite-runtime-'));
    try {
      const { code, output } = await runCommand(join(ROOT, 'node_modules', '.bin', bin), [...args, 'test/storage/sqlite-runtime.ts', dir], {
        cwd: ROOT,
        env: { DENO_NO_UPDATE_CHECK: '1' },
      });
      expect(code, output).toBe(0);
      const results = JSON.parse(output.trim().split('\n').at(-1)!) as Array<{ name: string; error?: string }>;
      expect(results.filter((result) => result.error !== undefined)).toEqual([]);
      // Both a database in memory and one in a file ran every check.
      expect(results.length).toBeGreaterThanOrEqual(70);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
