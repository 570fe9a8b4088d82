/**
 * The stores a suite runs on in Node: memory, SQLite (through the driver sqlite-driver.ts picks),
 * PGlite and, when `DATABASE_URL` names one (CI always does), a real PostgreSQL server. The Durable Object store runs its suites inside
 * workerd (test/storage/durable-object.workerd.test.ts).
 */
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll } from 'vitest';
import { memoryStorage, type Storage } from '../../src/index.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite, sqliteDriver } from './sqlite-driver.js';

/** A real PostgreSQL server's client and a schema of this test file's own, dropped after it; undefined without `DATABASE_URL`. */
export function testDatabase(name: string): { sql: ReturnType<typeof postgres>; schema: string } | undefined {
  const url = process.env.DATABASE_URL;
  if (url === undefined) return undefined;
  const sql = postgres(url, { onnotice: () => {}, max: 4 });
  const schema = `${name}_${process.pid}`;
  afterAll(async () => {
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sql.end();
  });
  return { sql, schema };
}

/**
 * True in the fast loop (`npm run test:unit` sets VIEWSYNC_FAST=1), which leaves out what costs
 * most of its time for little it would catch there: the PostgreSQL runs of the store suites
 * (PGlite, and a real server with `DATABASE_URL`) and a few stress tests. `npm test` runs them all.
 */
export const fastLoop = process.env.VIEWSYNC_FAST === '1';
/** Whether PostgreSQL suites run: always, but in the fast loop. */
export const withPostgres = !fastLoop;

/** Calls `describeSuite` once per store, each call's stores new ones (tables named from `name`). */
export function onEveryStore(name: string, describeSuite: (store: string, create: () => Storage) => void): void {
  describeSuite('memoryStorage', () => memoryStorage());
  describeSuite(`sqliteStorage (${sqliteDriver})`, () => sqliteStorage(openSQLite()));
  if (!withPostgres) return;
  const pglite = new PGlite();
  let tables = 0;
  describeSuite('postgresStorage (PGlite)', () => postgresStorage(pglite, { tablePrefix: `${name}${tables++}_` }));
  const database = testDatabase(name);
  if (database === undefined) return;
  describeSuite('postgresStorage (a real server)', () => postgresStorage(database.sql, { schema: database.schema, tablePrefix: `${name}${tables++}_` }));
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 4 });
  afterAll(() => pool.end());
  describeSuite('postgresStorage (a pg Pool, a real server)', () => postgresStorage(pool, { schema: database.schema, tablePrefix: `${name}${tables++}_` }));
}
