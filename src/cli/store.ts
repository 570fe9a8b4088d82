import { existsSync } from 'node:fs';
import type { Storage } from '../storage/types.js';
import { UsageError } from './usage.js';

/** Where the CLI's store is: the options every command takes. */
export interface StoreOptions {
  sqlite?: string | undefined;
  postgres?: string | undefined;
  schema?: string | undefined;
  'table-prefix'?: string | undefined;
}

/** An open store, and how to let go of it so the process can exit. */
export interface OpenStore {
  storage: Storage;
  /** What the store is, for messages: a file or a database, never a password. */
  label: string;
  close(): Promise<void>;
}

/** A failure a user can act on: printed as is, exit code 1. */
export class CLIError extends Error {
  override name = 'CLIError';
}

/**
 * Opens the store the options name: `--sqlite FILE` (which must exist unless `create`), or
 * `--postgres URL`, or else the `DATABASE_URL` environment variable. Reaches the database
 * before returning, so a wrong path or an unreachable server fails here, plainly.
 */
export async function openStore(options: StoreOptions, { create = false } = {}): Promise<OpenStore> {
  const tablePrefix = options['table-prefix'];
  if (options.sqlite !== undefined && options.postgres !== undefined) throw new UsageError('Give one store: --sqlite FILE or --postgres URL, not both');
  if (options.sqlite !== undefined) return openSQLite(options.sqlite, create, tablePrefix);
  const url = options.postgres ?? process.env.DATABASE_URL;
  if (url === undefined || url === '') throw new UsageError('No store: give --sqlite FILE or --postgres URL, or set DATABASE_URL');
  return openPostgres(url, options.schema, tablePrefix);
}

async function openSQLite(file: string, create: boolean, tablePrefix: string | undefined): Promise<OpenStore> {
  if (!create && !existsSync(file)) throw new CLIError(`No such SQLite file: ${file}`);
  const { sqliteStorage } = await import('../storage/sqlite.js');
  const db = await openDatabase(file);
  try {
    return { storage: sqliteStorage(db, { tablePrefix }), label: file, close: async () => void db.close() };
  } catch (error) {
    db.close();
    throw new CLIError(`${file} is not a viewsync SQLite database: ${(error as Error).message}`);
  }
}

/** A synchronous SQLite handle from whichever driver this runtime has. */
async function openDatabase(file: string): Promise<{ prepare(sql: string): any; exec(sql: string): unknown; close(): unknown }> {
  if ('Bun' in globalThis) {
    const { Database } = await import(/* @vite-ignore */ 'bun:sqlite' as string);
    return new Database(file);
  }
  if ('Deno' in globalThis) {
    const { DatabaseSync } = await import(/* @vite-ignore */ 'node:sqlite' as string);
    return new DatabaseSync(file);
  }
  try {
    const { default: Database } = await import(/* @vite-ignore */ 'better-sqlite3' as string);
    return new Database(file);
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw new CLIError(`Cannot open ${file}: ${(error as Error).message}`);
  }
  try {
    const { DatabaseSync } = await import(/* @vite-ignore */ 'node:sqlite' as string);
    return new DatabaseSync(file);
  } catch {
    throw new CLIError('No SQLite driver: install better-sqlite3 (npm i better-sqlite3), or run on Node 22 or later (node:sqlite) or Bun');
  }
}

async function openPostgres(url: string, schema: string | undefined, tablePrefix: string | undefined): Promise<OpenStore> {
  const label = describeURL(url);
  let postgres: (url: string, options: object) => any;
  try {
    ({ default: postgres } = await import(/* @vite-ignore */ 'postgres' as string));
  } catch {
    throw new CLIError('The PostgreSQL client is not installed: npm i postgres');
  }
  const sql = postgres(url, { max: 4, onnotice: () => {}, connect_timeout: 10 });
  try {
    await sql`SELECT 1`;
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw new CLIError(`Cannot reach PostgreSQL at ${label}: ${(error as Error).message}`);
  }
  const { postgresStorage } = await import('../storage/postgres.js');
  return { storage: postgresStorage(sql, { schema, tablePrefix }), label, close: () => sql.end({ timeout: 5 }) };
}

/** A database URL with its password left out. */
function describeURL(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}${parsed.port ? `:${parsed.port}` : ''}${parsed.pathname}`;
  } catch {
    throw new UsageError('--postgres (or DATABASE_URL) is not a URL: postgres://user:password@host:port/database');
  }
}
