/**
 * viewsync export --history and import --history from a shell: a space's history carried from
 * one SQLite file into a new space of another, read the same as of every kept version.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { historyContext, metaOf, Recorder, stateAt } from '../history/suite.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'viewsync-history-dump-'));

function viewsync(args: string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), join(ROOT, 'src/cli/bin.ts'), ...args], {
    cwd: work,
    encoding: 'utf8',
    input,
    timeout: 60_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('viewsync export/import --history', () => {
  it('carries a space with its history into a new space of another file; without --history the dump is format 3', async () => {
    const [from, to] = [join(work, 'from.db'), join(work, 'to.db')];
    const source = sqliteStorage(openSQLite(from));
    const { ctx } = historyContext(source);
    const r = new Recorder(ctx, 'acme');
    for (let i = 0; i < 5; i++) await r.modelled({ [`k${i % 2}`]: i, ...(i === 3 && { k0: undefined }) });
    const exported = viewsync(['export', 'acme', '--history', '--quiet', '--sqlite', from]);
    expect(exported.status, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout.slice(0, exported.stdout.indexOf('\n')))).toMatchObject({ format: 4, history: { from: 0 } });
    expect(JSON.parse(viewsync(['export', 'acme', '--quiet', '--sqlite', from]).stdout.split('\n')[0]!)).toMatchObject({ format: 3 });

    const imported = viewsync(['import', 'acme', '--history', '--quiet', '--sqlite', to], exported.stdout);
    expect(imported.status, imported.stderr).toBe(0);
    const { ctx: target } = historyContext(sqliteStorage(openSQLite(to)));
    expect((await metaOf(target, 'acme'))!.version).toBe(5);
    for (let v = 0; v <= 5; v++) expect(await stateAt(target, 'acme', v)).toEqual(r.at(v));
  });
});
