/**
 * Runs one benchmark on each store `STORES` names (memory, a SQLite file, a schema of its own on
 * the PostgreSQL server DATABASE_URL names, skipped without it), and cleans up after each.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { memoryStorage, type Storage } from '../src/index.js';
import { postgresStorage } from '../src/storage/postgres.js';
import { sqliteStorage } from '../src/storage/sqlite.js';
import type { Row } from './table.js';

export async function eachStore(stores: readonly string[], label: string, bench: (name: string, storage: Storage) => Promise<Row[]>): Promise<Row[]> {
  const rows: Row[] = [];
  for (const store of stores) {
    if (store === 'memory') rows.push(...(await bench('memory', memoryStorage())));
    else if (store === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), `viewsync-${label}-`));
      const db = new Database(join(dir, `${label}.db`));
      try {
        rows.push(...(await bench('SQLite', sqliteStorage(db))));
      } finally {
        db.close();
        rmSync(dir, { recursive: true, force: true });
      }
    } else if (store === 'postgres' && process.env.DATABASE_URL) {
      const sql = postgres(process.env.DATABASE_URL, { onnotice: () => {}, max: 4 });
      const schema = `bench_${label.replaceAll('-', '_')}_${process.pid}`;
      try {
        rows.push(...(await bench('PostgreSQL', postgresStorage(sql, { schema }))));
      } finally {
        await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await sql.end();
      }
    }
  }
  return rows;
}
