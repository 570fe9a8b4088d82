/**
 * The one place the Node suites pick their SQLite driver: better-sqlite3 where it is installed and
 * its native build loads, else `node:sqlite`'s `DatabaseSync` (every supported Node has it). So
 * `npm test` runs where better-sqlite3 could not build (an optional dependency, which `npm ci`
 * leaves out there), and on the releases scripts/test-lts.sh runs against a build for another Node.
 * Tests of better-sqlite3 itself skip themselves where it did not load (`betterSQLiteMissing`).
 * With VIEWSYNC_REQUIRE_BETTER_SQLITE=1, as .ci/run sets for the main suite, any failure to load
 * better-sqlite3 fails the run instead: CI never drops silently to a driver it was not meant to test.
 * A failure that is neither of those two (missing, built for another Node) fails the run too.
 */
import { createRequire } from 'node:module';
import type { SQLiteDatabase, SQLiteStatement } from '../../src/storage/sqlite.js';

/** A statement a test prepares; both drivers have these methods. */
export interface TestStatement extends SQLiteStatement {
  get(...params: unknown[]): unknown;
}

/** A SQLite handle a test opens; both drivers have these methods. */
export interface TestSQLite extends SQLiteDatabase {
  prepare(query: string): TestStatement;
  close(): void;
}

/** How a test opens a database. */
export interface OpenOptions {
  /** Opens the file read-only: writes fail. Default: false. */
  readOnly?: boolean;
}

/** The driver the suites run on. */
export interface SQLiteDriver {
  /** `better-sqlite3` or `node:sqlite`. */
  name: 'better-sqlite3' | 'node:sqlite';
  /** Opens a database at `path` (`:memory:` for one in memory). */
  open(path: string, options: OpenOptions): TestSQLite;
  /** Why better-sqlite3 was not taken, where it was not. */
  missing?: string;
}

/** Where {@link pickSQLiteDriver} gets the drivers from and what it reads of the environment: the process's own, or a test's stand-ins. */
export interface DriverSources {
  /** Imports better-sqlite3's `Database` class. */
  betterSQLite(): Promise<new (path: string, options?: { readonly?: boolean }) => TestSQLite>;
  /** Imports `node:sqlite`'s `DatabaseSync` class. */
  nodeSQLite(): Promise<new (path: string, options?: { readOnly?: boolean }) => TestSQLite>;
  /** The environment: VIEWSYNC_REQUIRE_BETTER_SQLITE. */
  env: Record<string, string | undefined>;
}

// Node's own require, not Vite's import: Vite turns a missing optional peer of the package
// (better-sqlite3) into a module that throws an error of its own. Untyped: @types/node 20 has no
// node:sqlite.
const require = createRequire(import.meta.url);
const PROCESS_SOURCES: DriverSources = {
  betterSQLite: async () => require('better-sqlite3'),
  nodeSQLite: async () => require('node:sqlite').DatabaseSync,
  env: process.env,
};

/** Picks the suites' driver, as this file's header says. */
export async function pickSQLiteDriver(sources: DriverSources = PROCESS_SOURCES): Promise<SQLiteDriver> {
  let missing: string;
  try {
    const Database = await sources.betterSQLite();
    // better-sqlite3 loads its native addon on the first handle, not on import.
    new Database(':memory:').close();
    return { name: 'better-sqlite3', open: (path, { readOnly = false }) => new Database(path, { readonly: readOnly }) };
  } catch (error) {
    if (sources.env.VIEWSYNC_REQUIRE_BETTER_SQLITE === '1')
      throw new Error(`VIEWSYNC_REQUIRE_BETTER_SQLITE=1, but better-sqlite3 did not load: ${(error as Error).message}`, { cause: error });
    missing = whyMissing(error);
  }
  let DatabaseSync: Awaited<ReturnType<DriverSources['nodeSQLite']>>;
  try {
    DatabaseSync = await sources.nodeSQLite();
  } catch {
    throw new Error(`No SQLite driver for the tests: ${missing}, and Node ${process.version} has no node:sqlite (Node 22.15 or later has)`);
  }
  return { name: 'node:sqlite', open: (path, { readOnly = false }) => new DatabaseSync(path, { readOnly }), missing };
}

const driver = await pickSQLiteDriver();

/** The driver's name, for test titles and logs: `better-sqlite3` or `node:sqlite`. */
export const sqliteDriver: string = driver.name;

/** Why better-sqlite3 did not load, for the tests of that driver itself (`it.skipIf(betterSQLiteMissing)`), or undefined where it did. */
export const betterSQLiteMissing: string | undefined = driver.missing;

/** Opens a database: a file at `path`, or one in memory (the default). */
export function openSQLite(path = ':memory:', options: OpenOptions = {}): TestSQLite {
  return driver.open(path, options);
}

/** Says why better-sqlite3 did not load, where that is a reason to fall back; rethrows any other failure. */
function whyMissing(error: unknown): string {
  const message = String((error as Error).message);
  // Only better-sqlite3 itself: a dependency of it missing is a broken install, not an absent one.
  if (message.startsWith("Cannot find module 'better-sqlite3'"))
    return 'better-sqlite3 is not installed (an optional dependency: npm ci leaves it out where it cannot build)';
  // A native addon loads only in the Node it was built for.
  if (message.includes('NODE_MODULE_VERSION')) return `the installed better-sqlite3 is built for another Node than ${process.version}`;
  throw error;
}
