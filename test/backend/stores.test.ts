import { PGlite } from '@electric-sql/pglite';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { afterAll } from 'vitest';
import { memoryStorage } from '../../src/index.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { describeBackend } from './suite.js';

// The Durable Object store runs the same suite inside workerd (durable-object.workerd.test.ts).
describeBackend('memoryStorage', () => memoryStorage());
describeBackend('sqliteStorage (better-sqlite3)', () => sqliteStorage(new Database(':memory:')));

const pglite = new PGlite();
let tables = 0;
describeBackend('postgresStorage (PGlite)', () => postgresStorage(pglite, { tablePrefix: `backend${tables++}_` }));

const url = process.env.DATABASE_URL;
if (url !== undefined) {
  const sql = postgres(url, { onnotice: () => {}, max: 4 });
  const schema = `backend_${process.pid}`;
  afterAll(async () => {
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sql.end();
  });
  describeBackend('postgresStorage (a real server)', () => postgresStorage(sql, { schema, tablePrefix: `backend${tables++}_` }));
}
