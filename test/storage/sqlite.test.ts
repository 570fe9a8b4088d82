import { pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import Libsql from 'libsql';
import { type SQLiteDatabase, sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite, sqliteDriver } from '../support/sqlite-driver.js';
import { describeStorageConformance } from './conformance.js';
import { fastLoop } from '../support/stores.js';

const dir = mkdtempSync(join(tmpdir(), 'viewsync-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = () => join(dir, `db-${++files}.sqlite`);

// The fast loop runs the suite on one of these (a file, as apps use it); `npm test` on all four.
if (!fastLoop) describeStorageConformance(`sqliteStorage (${sqliteDriver}, in memory)`, () => sqliteStorage(openSQLite()), { lanesApart: true });
describeStorageConformance(`sqliteStorage (${sqliteDriver}, a WAL file)`, () => sqliteStorage(openSQLite(file())), { lanesApart: true });
// libSQL's embedded driver (the `libsql` package, better-sqlite3's API). Its remote mode (Turso,
// `sqld`) needs a server that is not available here, so only local files are tested.
if (!fastLoop) describeStorageConformance('sqliteStorage (libsql, in memory)', () => sqliteStorage(new Libsql(':memory:') as unknown as SQLiteDatabase));
if (!fastLoop) describeStorageConformance('sqliteStorage (libsql, a WAL file)', () => sqliteStorage(new Libsql(file()) as unknown as SQLiteDatabase));
// A driver whose statements return rows as objects only (`all`, `run`): the store reads each
// row's values in order, where the others hand it arrays.
if (!fastLoop) describeStorageConformance('sqliteStorage (a driver with rows as objects only)', () => sqliteStorage(objectsOnly(openSQLite())));

function objectsOnly(db: SQLiteDatabase): SQLiteDatabase {
  return {
    exec: (query) => db.exec(query),
    prepare(query) {
      const statement = db.prepare(query);
      return { all: (...params) => statement.all(...params), run: (...params) => statement.run(...params) };
    },
  };
}

it('sqliteStorage on libsql claims its file as on the other drivers', () => {
  const path = file();
  const first = new Libsql(path);
  sqliteStorage(first as unknown as SQLiteDatabase);
  const second = new Libsql(path);
  expect(() => sqliteStorage(second as unknown as SQLiteDatabase)).toThrow(`${path} is in use by another viewsync store`);
  first.close();
  second.close();
});

describe('sqliteStorage', () => {
  it('claims its file: a second store on it, in this process or another, is refused at once and clearly; a reader without a claim reads beside it; closing frees it', async () => {
    const path = file();
    const first = openSQLite(path);
    const storage = sqliteStorage(first);
    await storage.transaction((tx) => tx.put('k', 1), { readOnly: false });
    const second = openSQLite(path);
    const started = performance.now();
    expect(() => sqliteStorage(second)).toThrow(`${path} is in use by another viewsync store`);
    // At once: about 1.5 ms here on 2 cores under a load of 5; waiting out SQLite's busy
    // timeout (5 s) instead would take 5,000.
    expect(performance.now() - started).toBeLessThan(1_000);
    // The first goes on, and a tool that only reads (viewsync inspect, export) reads beside it.
    await storage.transaction((tx) => tx.put('k', 2), { readOnly: false });
    const reader = openSQLite(path);
    expect(await sqliteStorage(reader, { claim: false }).transaction((tx) => tx.get('k'), { readOnly: true })).toBe(2);
    // Another process, as a second server on the same file would be.
    // From the sources, through tsx: the fast loop runs on a fresh clone, with no build.
    const driver = sqliteDriver === 'node:sqlite' ? "new (require('node:sqlite').DatabaseSync)" : "new (require('better-sqlite3'))";
    const source = pathToFileURL(join(process.cwd(), 'src/storage/sqlite.ts')).href;
    const script = `import { createRequire } from 'node:module'; const require = createRequire(import.meta.url); const { sqliteStorage } = await import(${JSON.stringify(source)}); try { sqliteStorage(${driver}(${JSON.stringify(path)})); console.log('claimed'); } catch (e) { console.log(e.message); }`;
    const other = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', cwd: process.cwd() });
    expect(other.stdout).toContain('is in use by another viewsync store');
    first.close();
    expect(await sqliteStorage(second).transaction((tx) => tx.get('k'), { readOnly: true })).toBe(2);
    second.close();
    reader.close();
  });

  it('reads rows as arrays where the driver can: array mode is set on each statement that selects, never on one that writes', async () => {
    const db = openSQLite();
    const arrays: string[] = [];
    const watched: SQLiteDatabase = {
      exec: (query) => db.exec(query),
      prepare(query) {
        const statement = db.prepare(query);
        for (const mode of ['raw', 'setReturnArrays'] as const) {
          const set = statement[mode]?.bind(statement);
          if (set) statement[mode] = (on: boolean) => (arrays.push(query), set(on));
        }
        return statement;
      },
    };
    const storage = sqliteStorage(watched);
    await storage.transaction(async (tx) => (await tx.put('a', 1), tx.put('b', { c: [2] })), { readOnly: false });
    const read = await storage.transaction(async (tx) => [await tx.get('a'), await tx.scan({ prefix: '' }), await tx.scanText!({ prefix: '' })], {
      readOnly: true,
    });
    expect(read).toEqual([
      1,
      [
        ['a', 1],
        ['b', { c: [2] }],
      ],
      [
        ['a', '1'],
        ['b', '{"c":[2]}'],
      ],
    ]);
    expect(arrays.length).toBeGreaterThan(0);
    expect(arrays.every((query) => query.trimStart().startsWith('SELECT'))).toBe(true);
    db.close();
  });

  it('a lock file that cannot be written is said as it is, not taken for another server', () => {
    const path = file();
    mkdirSync(`${path}-viewsync-lock`);
    const db = openSQLite(path);
    expect(() => sqliteStorage(db)).toThrow(`Cannot claim ${path} for this process: its lock file ${path}-viewsync-lock could not be written`);
    db.close();
  });

  it('keeps its data in the file: a new handle on it reads what the last one committed', async () => {
    const path = file();
    const first = openSQLite(path);
    await sqliteStorage(first).transaction((tx) => tx.put('k', { v: 1 }), { readOnly: false });
    first.close();
    const again = openSQLite(path);
    expect(await sqliteStorage(again).transaction((tx) => tx.get('k'), { readOnly: true })).toEqual({ v: 1 });
    expect(again.prepare('PRAGMA journal_mode').all()).toEqual([{ journal_mode: 'wal' }]);
    again.close();
  });

  it('apps with different table prefixes share a database without seeing each other', async () => {
    const db = openSQLite();
    const [a, b] = [sqliteStorage(db, { tablePrefix: 'app_a_' }), sqliteStorage(db, { tablePrefix: 'app_b_' })];
    await a.transaction((tx) => tx.put('k', 'a'), { readOnly: false });
    expect(await b.transaction((tx) => tx.get('k'), { readOnly: true })).toBeUndefined();
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all()
      .map((row) => (row as { name: string }).name);
    expect(tables).toEqual(['app_a_kv', 'app_a_schema', 'app_b_kv', 'app_b_schema']);
    expect(sqliteStorage(db, { tablePrefix: 'app_a_' })).toBe(a);
    expect(() => sqliteStorage(db, { tablePrefix: 'x"; DROP TABLE app_a_kv; --' })).toThrow(/letters, digits and _/);
  });

  it('creating its tables is idempotent and versioned, and a newer schema is refused with a clear error', () => {
    const path = file();
    // One handle at a time: each store claims the file while its handle is open.
    for (let i = 0; i < 2; i++) {
      const handle = openSQLite(path);
      sqliteStorage(handle);
      handle.close();
    }
    const db = openSQLite(path);
    expect(db.prepare('SELECT version FROM viewsync_schema').all()).toEqual([{ version: 1 }]);
    db.prepare('UPDATE viewsync_schema SET version = 99').run();
    db.close();
    expect(() => sqliteStorage(openSQLite(path))).toThrow(/schema version 99, newer than this viewsync knows \(1\): upgrade viewsync/);
  });
});
