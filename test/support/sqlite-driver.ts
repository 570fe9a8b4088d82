/**
 * The one place the Node suites pick their SQLite driver: better-sqlite3 where its native build
 * loads (the Node `npm ci` built it for: in CI the lowest supported release, which runs the main
 * suite), else `node:sqlite`'s `DatabaseSync` (the other releases, where scripts/test-lts.sh runs
 * the suites against the same node_modules).
 * Only a build for another Node ABI falls back: any other failure to load better-sqlite3 fails
 * the run, so the machine's Node never drops to a driver it was not meant to test.
 */
import Database from 'better-sqlite3';
import type { SQLiteDatabase } from '../../src/storage/sqlite.js';

/** A SQLite handle a test opens; both drivers have these methods. */
export interface TestSQLite extends SQLiteDatabase {
  close(): void;
}

const driver = await pickDriver();

/** The driver's name, for test titles and logs: `better-sqlite3` or `node:sqlite`. */
export const sqliteDriver: string = driver.name;

/** Opens a database: a file at `path`, or one in memory (the default). */
export function openSQLite(path = ':memory:'): TestSQLite {
  return driver.open(path);
}

async function pickDriver(): Promise<{ name: string; open: (path: string) => TestSQLite }> {
  try {
    // better-sqlite3 loads its native addon on the first handle, not on import.
    new Database(':memory:').close();
    return { name: 'better-sqlite3', open: (path) => new Database(path) };
  } catch (error) {
    if (!String(error).includes('NODE_MODULE_VERSION')) throw error;
    // Typed as a string: @types/node 20 has no node:sqlite.
    const { DatabaseSync } = (await import('node:sqlite' as string)) as { DatabaseSync: new (path: string) => TestSQLite };
    return { name: 'node:sqlite', open: (path) => new DatabaseSync(path) };
  }
}
