/**
 * The `viewsync` CLI as a user runs it: the bin of the packed package, in a project of its own,
 * as processes, against a SQLite file and a PostgreSQL database (a real server when there is one,
 * as in CI). Each check looks at the exit code, stdout and stderr, and at the store itself.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { collectGarbage, handlePull, inspect, type JSONValue, type SyncContext, transact } from '../../src/index.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { applyPatch, mutation, post, pullBody, push, testMutators } from '../helpers.js';
import { ROOT, userProject } from '../package/packed.js';
import { testDatabase } from '../stores.js';

const project = userProject(['better-sqlite3', 'postgres']);
// The bin as npm links it: `viewsync` on the PATH, a link to the package's dist/cli.js.
const bin = join(project, 'node_modules', '.bin');
mkdirSync(bin, { recursive: true });
symlinkSync(join(project, 'node_modules', 'viewsync', 'dist', 'cli.js'), join(bin, 'viewsync'));
const work = mkdtempSync(join(tmpdir(), 'viewsync-cli-'));

const url = process.env.DATABASE_URL;
const database = testDatabase('cli');

/** Runs a shell command line in the work folder with the bin on the PATH. */
function sh(line: string, env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync('sh', ['-c', line], { cwd: work, encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, ...env }, timeout: 120_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** A SQLite file with a history: pushes, a delete, a client group. */
async function sqliteFile(name: string): Promise<string> {
  const file = join(work, name);
  const db = new Database(file);
  const ctx: SyncContext = { storage: sqliteStorage(db), mutators: testMutators, onError: () => {} };
  for (let i = 0; i < 5; i++) {
    await push(ctx, 'g1', Array.from({ length: 1_000 }, (_, j) => mutation('c1', i * 1_000 + j + 1, 'put', { key: `todo/${String(i * 1_000 + j).padStart(5, '0')}`, value: { title: `Todo ${i}-${j} ✓`, done: j % 2 === 0 } })));
  }
  await push(ctx, 'g1', [mutation('c1', 5_001, 'del', { key: 'todo/00003' })]);
  await transact(ctx, 'other', (tx) => tx.set('x', 1));
  db.close();
  return file;
}

/** What a full pull of `space` gives. */
async function fullPull(ctx: SyncContext, space: string): Promise<Map<string, JSONValue>> {
  const response = await handlePull(post('/pull', pullBody(`reader-${Math.random()}`, null)), { ...ctx, space: () => space });
  const { patch } = (await response.json()) as { patch: Parameters<typeof applyPatch>[1] };
  return applyPatch(new Map(), patch);
}

describe('the viewsync CLI, run as a process', () => {
  it('every command has --help; a wrong command, option or argument exits 2 and says why', () => {
    for (const command of ['', 'inspect', 'export', 'import', 'gc']) {
      const run = sh(`viewsync ${command} --help`);
      expect(run.status, command).toBe(0);
      expect(run.stdout, command).toMatch(command === '' ? /Commands:/ : new RegExp(`Usage: viewsync ${command}`));
    }
    const usage: Array<[string, RegExp]> = [
      ['viewsync frobnicate', /Unknown command "frobnicate"/],
      ['viewsync export', /export needs a SPACE/],
      ['viewsync export a b --sqlite x.db', /takes one SPACE/],
      ['viewsync inspect --merge --sqlite x.db', /inspect takes no --merge/],
      ['viewsync inspect --bogus', /Unknown option '--bogus'/],
      ['viewsync gc --tombstones soon --sqlite x.db', /--tombstones takes a number of days/],
      ['env -u DATABASE_URL viewsync inspect', /No store: give --sqlite FILE or --postgres URL, or set DATABASE_URL/],
      ['viewsync inspect --sqlite a.db --postgres postgres://h/d', /not both/],
    ];
    for (const [line, message] of usage) {
      const run = sh(line);
      expect(run.status, line).toBe(2);
      expect(run.stderr, line).toMatch(message);
      expect(run.stderr, line).toMatch(/viewsync --help/);
    }
  });

  it('against a SQLite file: inspect, export, import into a new file, a bad dump, a wrong path', async () => {
    const file = await sqliteFile('app.db');
    const table = sh(`viewsync inspect --sqlite app.db`);
    expect(table.status, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^SPACE\s+ENTRIES\s+SIZE\s+VERSION\s+CLIENT GROUPS\s+LAST ACTIVITY\n""\s+4,999\s+[\d.]+ KiB\s+6\s+1\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n"other"\s+1\s+/);
    const json = sh(`viewsync inspect '' --sqlite app.db --json`);
    expect(JSON.parse(json.stdout)).toMatchObject({ space: '', entries: 4_999, version: 6, clientGroups: 1, groups: [{ userID: null, clientGroupID: 'g1', clients: { c1: 5_001 } }] });

    const exported = sh(`viewsync export '' --sqlite app.db > dump.ndjson`, { VIEWSYNC_PROGRESS_MS: '0' });
    expect(exported.status, exported.stderr).toBe(0);
    expect(exported.stderr).toMatch(/^export: [\d,]+ entries of ""…$/m);
    expect(exported.stderr).toMatch(/^exported 4,999 entries of "" in [\d.]+ s$/m);
    const imported = sh(`viewsync import copy --sqlite copy.db < dump.ndjson`, { VIEWSYNC_PROGRESS_MS: '0' });
    expect(imported.status, imported.stderr).toBe(0);
    expect(imported.stderr).toMatch(/^import: [\d,]+ entries read and checked…$/m);
    expect(imported.stderr).toMatch(/^imported 4,999 entries into "copy" in [\d.]+ s: 4,999 written, 0 deleted, the rest unchanged$/m);
    const original: SyncContext = { storage: sqliteStorage(new Database(file, { readonly: false })), mutators: {}, onError: () => {} };
    const copy: SyncContext = { storage: sqliteStorage(new Database(join(work, 'copy.db'))), mutators: {}, onError: () => {} };
    expect(await fullPull(copy, 'copy')).toEqual(await fullPull(original, ''));
    // A reader that stops early closes the pipe: the export ends quietly, with status 0.
    const cut = sh(`bash -o pipefail -c "viewsync export '' --sqlite app.db --quiet | head -c 100 > /dev/null"`);
    expect([cut.status, cut.stderr]).toEqual([0, '']);

    // A bad dump: exit 1, the line named, the file as it was.
    writeFileSync(join(work, 'bad.ndjson'), '{"viewsync":"space","format":1}\n{"key":"b","value":1}\n{"key":"a","value":1}\n');
    const before = (await inspect(copy, 'copy')).entries;
    const bad = sh(`viewsync import copy --sqlite copy.db --quiet < bad.ndjson`);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toBe('viewsync: line 3 of the dump has key "a", which is not after the previous line\'s "b": a dump lists each key once, in ascending order (UTF-8 bytes)\n');
    expect((await inspect(copy, 'copy')).entries).toBe(before);
    // --merge sets, and keeps the rest.
    writeFileSync(join(work, 'one.ndjson'), '{"viewsync":"space","format":1}\n{"key":"todo/00000","value":"merged"}\n');
    expect(sh(`viewsync import copy --sqlite copy.db --merge --quiet < one.ndjson`).status).toBe(0);
    expect(await inspect(copy, 'copy')).toMatchObject({ entries: 4_999 });

    const missing = sh(`viewsync export '' --sqlite missing.db`);
    expect([missing.status, missing.stderr, missing.stdout]).toEqual([1, 'viewsync: No such SQLite file: missing.db\n', '']);
    writeFileSync(join(work, 'not-sqlite.db'), 'hello, this is text\n'.repeat(100));
    const notSQLite = sh(`viewsync inspect --sqlite not-sqlite.db`);
    expect(notSQLite.status).toBe(1);
    expect(notSQLite.stderr).toMatch(/not-sqlite\.db is not a viewsync SQLite database: file is not a database/);
  });

  it('runs under Bun (bun:sqlite) and Deno (node:sqlite) on the same SQLite file', async () => {
    const cli = join(project, 'node_modules', 'viewsync', 'dist', 'cli.js');
    const runtimes = { bun: `${ROOT}node_modules/.bin/bun ${cli}`, deno: `${ROOT}node_modules/.bin/deno run --no-remote -A ${cli}` };
    writeFileSync(join(work, 'runtimes.ndjson'), '{"viewsync":"space","format":1}\n{"key":"a","value":1}\n{"key":"b","value":{"ü":[true]}}\n');
    const imported = sh(`${runtimes.bun} import s --sqlite runtimes.db < runtimes.ndjson`, { DENO_NO_UPDATE_CHECK: '1' });
    expect(imported.status, imported.stderr).toBe(0);
    const exported = sh(`${runtimes.deno} export s --sqlite runtimes.db --quiet`, { DENO_NO_UPDATE_CHECK: '1' });
    expect(exported.status, exported.stderr).toBe(0);
    expect(exported.stdout.split('\n').slice(1)).toEqual(['{"key":"a","value":1}', '{"key":"b","value":{"ü":[true]}}', '']);
  });

  it('gc removes what the retention lets go', async () => {
    const file = join(work, 'gc.db');
    const ctx: SyncContext = { storage: sqliteStorage(new Database(file)), mutators: testMutators, onError: () => {}, clock: () => Date.now() - 10 * 24 * 60 * 60 * 1000 };
    await push(ctx, 'idle', [mutation('c', 1, 'put', { key: 'k', value: 1 }), mutation('c', 2, 'del', { key: 'k' })]);
    // Kept at 30 days; gone at 5.
    expect(JSON.parse(sh(`viewsync gc --sqlite gc.db --json`).stdout)).toEqual({ clientGroups: 0, clients: 0, tombstones: 0, views: 0 });
    const run = sh(`viewsync gc --sqlite gc.db --client-groups 5 --tombstones 5`);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('Removed 1 client group (1 client), 1 tombstone, 0 view records.\n');
    expect(await collectGarbage({ ...ctx, clock: Date.now, retention: { clientGroups: 1, tombstones: 1 } })).toEqual({ clientGroups: 0, clients: 0, tombstones: 0, views: 0 });
  });

  it('moves a space from a SQLite file to PostgreSQL through a pipe, as the README shows; an unreachable database exits 1', async () => {
    const file = await sqliteFile('move.db');
    const target = url ?? 'postgres://nobody@127.0.0.1:1/none';
    if (database === undefined) return void expect(sh(`viewsync inspect --postgres ${target}`).status).toBe(1);
    const { sql, schema } = database;
    const flags = `--postgres '${url}' --schema ${schema}`;
    const moved = sh(`viewsync export '' --sqlite move.db | viewsync import '' ${flags}`);
    expect(moved.status, moved.stderr).toBe(0);
    expect(moved.stderr).toMatch(/imported 4,999 entries into "" in [\d.]+ s: 4,999 written/);
    const source: SyncContext = { storage: sqliteStorage(new Database(file)), mutators: {}, onError: () => {} };
    const destination: SyncContext = { storage: postgresStorage(sql, { schema }), mutators: {}, onError: () => {} };
    expect(await fullPull(destination, '')).toEqual(await fullPull(source, ''));
    // DATABASE_URL is the default store.
    const listed = sh(`viewsync inspect --schema ${schema} --json`, { DATABASE_URL: url! });
    expect(JSON.parse(listed.stdout).spaces).toMatchObject([{ space: '', entries: 4_999 }]);

    const unreachable = sh(`viewsync inspect --postgres postgres://someone:secret@127.0.0.1:1/none`);
    expect(unreachable.status).toBe(1);
    expect(unreachable.stderr).toMatch(/^viewsync: Cannot reach PostgreSQL at 127\.0\.0\.1:1\/none: .*ECONNREFUSED/);
    expect(unreachable.stderr).not.toContain('secret');
  });
});
