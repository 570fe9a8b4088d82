import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite, sqliteDriver } from '../sqlite-driver.js';
import { describeStorageConformance } from './conformance.js';

const dir = mkdtempSync(join(tmpdir(), 'viewsync-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = () => join(dir, `db-${++files}.sqlite`);

describeStorageConformance(`sqliteStorage (${sqliteDriver}, in memory)`, () => sqliteStorage(openSQLite()));
describeStorageConformance(`sqliteStorage (${sqliteDriver}, a WAL file)`, () => sqliteStorage(openSQLite(file())));

describe('sqliteStorage', () => {
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
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all().map((row) => (row as { name: string }).name);
    expect(tables).toEqual(['app_a_kv', 'app_a_schema', 'app_b_kv', 'app_b_schema']);
    expect(sqliteStorage(db, { tablePrefix: 'app_a_' })).toBe(a);
    expect(() => sqliteStorage(db, { tablePrefix: 'x"; DROP TABLE app_a_kv; --' })).toThrow(/letters, digits and _/);
  });

  it('creating its tables is idempotent and versioned, and a newer schema is refused with a clear error', () => {
    const path = file();
    sqliteStorage(openSQLite(path));
    sqliteStorage(openSQLite(path));
    const db = openSQLite(path);
    expect(db.prepare('SELECT version FROM viewsync_schema').all()).toEqual([{ version: 1 }]);
    db.prepare('UPDATE viewsync_schema SET version = 99').run();
    expect(() => sqliteStorage(openSQLite(path))).toThrow(/schema version 99, newer than this viewsync knows \(1\): upgrade viewsync/);
  });
});
