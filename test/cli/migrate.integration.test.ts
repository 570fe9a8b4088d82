/**
 * `viewsync migrate` as an operator runs it, from the source, on a SQLite file: a run with its
 * progress lines (not a terminal), `--status` and `--json` reading only, `inspect SPACE` listing
 * the space's migrations, and the mistakes: a name the module does not export, a module that does
 * not load (exit 1), wrong flags (exit 2), each said in one line.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { entriesOf, migrationContext, seed } from '../backend/migrations-suite.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'viewsync-migrate-cli-'));
const file = join(work, 'app.db');
writeFileSync(
  join(work, 'migrations.mjs'),
  `export default { name: 'count-once', prefix: 'item/', entry: async (tx, key, value) => { await tx.set(key, { ...value, m: (value.m ?? 0) + 1 }); } };\n`,
);

function viewsync(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), join(ROOT, 'src/cli/bin.ts'), ...args], {
    cwd: work,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('viewsync migrate', () => {
  it('runs a migration over every space, telling its progress on stderr; --status and inspect say it is done', async () => {
    const db = openSQLite(file);
    const ctx = migrationContext(sqliteStorage(db));
    for (const space of ['a', 'b']) await seed(ctx, space, 40);
    db.close();
    const before = statSync(file).mtimeMs;
    const pending = viewsync(['migrate', 'count-once', '--status', '--sqlite', file]);
    expect([pending.status, pending.stderr]).toEqual([0, '']);
    expect(pending.stdout).toMatch(/^Migration "count-once": 0 of 2 spaces done, 0 started, 2 not started\.\nSPACE\s+STATE\s+ENTRIES/);
    // --status reads only.
    expect(statSync(file).mtimeMs).toBe(before);

    const run = viewsync(['migrate', 'count-once', '--module', 'migrations.mjs', '--batch', '7', '--sqlite', file], { VIEWSYNC_PROGRESS_MS: '0' });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^migration "count-once": 2 spaces migrated \(80 entries, [\d,]+\/s\), 0 done before, 0 empty, in [\d.]+ s\n$/);
    // Not a terminal: plain lines, no bar.
    expect(run.stderr).toMatch(/^migrate: \d+\/2 spaces, [\d,]+ entries \([\d,]+\/s\), in "a"\n/);
    expect(run.stderr).not.toContain('\r');

    const status = viewsync(['migrate', 'count-once', '--status', '--json', '--sqlite', file]);
    expect(JSON.parse(status.stdout)).toMatchObject({
      name: 'count-once',
      done: 2,
      started: 0,
      pending: 0,
      spaces: [
        { space: 'a', state: 'done', entries: 40 },
        { space: 'b', state: 'done', entries: 40 },
      ],
    });
    expect(viewsync(['inspect', 'a', '--sqlite', file]).stdout).toMatch(/MIGRATION\s+STATE\s+ENTRIES\s+STARTED\s+FINISHED\ncount-once\s+done\s+40\s/);
    const again = viewsync(['migrate', 'count-once', '--module', 'migrations.mjs', '--quiet', '--sqlite', file]);
    expect([again.status, again.stderr]).toEqual([0, '']);
    expect(again.stdout).toMatch(/0 spaces migrated \(0 entries, 0\/s\), 2 done before/);

    const check = openSQLite(file);
    const entries = await entriesOf(migrationContext(sqliteStorage(check)), 'b');
    check.close();
    expect([...entries.values()].filter(({ m }) => m === 1)).toHaveLength(40);
  });

  it.each([
    [
      ['migrate', 'nope', '--module', 'migrations.mjs'],
      1,
      /^viewsync: --module "migrations.mjs" exports no migration named "nope" \(it exports "count-once"\)\n$/,
    ],
    [['migrate', 'count-once', '--module', 'missing.mjs'], 1, /^viewsync: --module "missing.mjs" could not be loaded: /],
    [['migrate', 'count-once'], 2, /^viewsync: migrate needs --module FILE, the module that exports the migration \(or --status, to see where it stands\)\n/],
    [['migrate', 'count-once', '--status', '--module', 'migrations.mjs'], 2, /^viewsync: migrate --status only reads: it takes no --module or --batch\n/],
    [['migrate', 'count-once', '--module', 'migrations.mjs', '--batch', '0'], 2, /^viewsync: --batch takes a number of entries from 1 to 10000, got "0"\n/],
    [['migrate', 'a/b', '--status'], 2, /^viewsync: a migration's name is 1 to 100 letters/],
    [['migrate', '--status'], 2, /^viewsync: migrate takes one NAME/],
  ])('%j exits %i, saying why in one line', (args, code, message) => {
    const run = viewsync([...args, '--sqlite', file]);
    expect(run.status).toBe(code);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).toBe('');
  });
});
