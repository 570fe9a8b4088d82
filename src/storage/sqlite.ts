import { type SQLiteConnection, sqliteCoreStorage } from './sqlite-core.js';
import type { Storage } from './types.js';

/**
 * A store in a SQLite database, through the synchronous handle your runtime has: a
 * `better-sqlite3` `Database` (Node), a `bun:sqlite` `Database` (Bun) or a `node:sqlite`
 * `DatabaseSync` (Deno, Node 22 and later). Creates its tables on first use (`viewsync_kv` and
 * `viewsync_schema`, or with another `tablePrefix`) and turns on WAL for a file database, so
 * readers never wait for the writer.
 *
 * One process writes a database file: the guarantees rest on locks inside the process (see
 * `sqliteCoreStorage`). So the store claims the file: it holds an exclusive lock on a file beside
 * it (`<file>-viewsync-lock`) for as long as the handle is open, and a second store on the same
 * file, in this process or another, throws at once saying so. The lock goes with the handle
 * (`close()`) or the process. For several server instances, use `postgresStorage`.
 *
 * @example
 * import Database from 'better-sqlite3';
 * const storage = sqliteStorage(new Database('sync.db'));
 */
export function sqliteStorage(db: SQLiteDatabase, options: SQLiteStorageOptions = {}): Storage {
  const prefix = options.tablePrefix ?? 'viewsync_';
  let byPrefix = stores.get(db);
  if (byPrefix === undefined) stores.set(db, (byPrefix = new Map()));
  const known = byPrefix.get(prefix);
  if (known !== undefined) return known;
  const statements = new Map<string, SQLiteStatement>();
  const prepared = (query: string) => {
    let statement = statements.get(query);
    if (statement === undefined) statements.set(query, (statement = db.prepare(query)));
    return statement;
  };
  const selects = new Map<string, (params: readonly unknown[]) => unknown[][]>();
  const selecting = (query: string) => {
    let select = selects.get(query);
    if (select === undefined) selects.set(query, (select = valuesOf(db.prepare(query))));
    return select;
  };
  db.exec('PRAGMA busy_timeout = 5000');
  if (options.claim !== false) claimFile(db);
  db.exec('PRAGMA journal_mode = WAL');
  const connection: SQLiteConnection = {
    values: (query, params) => selecting(query)(params),
    run: (query, params) => void prepared(query).run(...params),
    transaction(fn) {
      // Plain statements, as every driver has them (node:sqlite has no transaction helper).
      db.exec('BEGIN IMMEDIATE');
      try {
        fn();
        db.exec('COMMIT');
      } catch (error) {
        // SQLite may have rolled back already (a failed COMMIT): then there is nothing to undo.
        try {
          db.exec('ROLLBACK');
        } catch {}
        throw error;
      }
    },
  };
  // One process holds the file (the claim): a process that opens it after a restore from a backup is a new incarnation.
  const store = sqliteCoreStorage(connection, prefix, crypto.randomUUID());
  byPrefix.set(prefix, store);
  return store;
}

/** Options for {@link sqliteStorage}. */
export interface SQLiteStorageOptions {
  /**
   * What the store's table names start with, so several apps can share one database: letters,
   * digits and `_`. Default: `viewsync_`.
   */
  tablePrefix?: string;
  /**
   * Claim the database file for this process (see {@link sqliteStorage}). `false` is for tools
   * that only read while a server runs (`viewsync inspect`, `export`). Default: true.
   */
  claim?: boolean;
}

/** The part of a synchronous SQLite handle the store uses; better-sqlite3, `bun:sqlite` and `node:sqlite` all have it. */
export interface SQLiteDatabase {
  /** Compiles a statement. */
  prepare(query: string): SQLiteStatement;
  /** Runs statements that return no rows. */
  exec(query: string): unknown;
}

/** A compiled statement, with positional parameters. */
export interface SQLiteStatement {
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): unknown;
  /** better-sqlite3 and libsql: rows as arrays from now on (bun:sqlite's `raw` is another thing). */
  raw?(on: boolean): unknown;
  /** `node:sqlite` (Node 22.16, 24): rows as arrays from now on. */
  setReturnArrays?(on: boolean): void;
  /** `bun:sqlite`: the rows as arrays. */
  values?(...params: unknown[]): unknown[][];
}

/**
 * A function that runs `statement`, a SELECT, and returns its rows as arrays of column values:
 * in the driver's array mode where it has one (see `SQLiteConnection.values`), else each row
 * object's values, which keep the columns' order.
 */
function valuesOf(statement: SQLiteStatement): (params: readonly unknown[]) => unknown[][] {
  if (typeof statement.setReturnArrays === 'function') {
    statement.setReturnArrays(true);
    return (params) => statement.all(...params) as unknown[][];
  }
  // Before `raw`: bun:sqlite has a `raw` too, which runs the statement and returns bytes.
  if (typeof statement.values === 'function') return (params) => statement.values!(...params);
  if (typeof statement.raw === 'function') {
    statement.raw(true);
    return (params) => statement.all(...params) as unknown[][];
  }
  return (params) => statement.all(...params).map((row) => Object.values(row as object));
}

// One store per handle and prefix: two over one table would each think they hold its locks.
const stores = new WeakMap<SQLiteDatabase, Map<string, Storage>>();

/**
 * Takes the lock that makes `db`'s file this process's: an exclusive lock on a file beside it,
 * attached in EXCLUSIVE locking mode and written once, which SQLite then holds until the handle
 * closes. Not the database itself: readers (an export while the server runs) never wait for it.
 */
function claimFile(db: SQLiteDatabase): void {
  const rows = db.prepare('PRAGMA database_list').all() as Array<{ name: string; file: string }>;
  const file = rows.find((row) => row.name === 'main')?.file;
  // A database in memory is this handle's alone; one already claimed is claimed.
  if (!file || rows.some((row) => row.name === LOCK_SCHEMA)) return;
  const lock = `${file}-viewsync-lock`;
  // Fail at once rather than wait for a lock that a running server never lets go.
  db.exec('PRAGMA busy_timeout = 0');
  try {
    // Attaching reads the file's schema: held by another, that fails already.
    db.exec(`ATTACH DATABASE '${lock.replaceAll("'", "''")}' AS ${LOCK_SCHEMA}`);
    db.exec(`PRAGMA ${LOCK_SCHEMA}.locking_mode = EXCLUSIVE`);
    db.exec('BEGIN');
    db.exec(`CREATE TABLE IF NOT EXISTS ${LOCK_SCHEMA}.claim (since)`);
    db.exec(`INSERT INTO ${LOCK_SCHEMA}.claim VALUES (${Date.now()})`);
    db.exec('COMMIT');
  } catch (error) {
    for (const undo of ['ROLLBACK', `DETACH DATABASE ${LOCK_SCHEMA}`]) {
      try {
        db.exec(undo);
      } catch {}
    }
    const message = String((error as Error)?.message);
    // Deno's node:sqlite allows no ATTACH without every permission: no claim there (README).
    if (/too many attached databases/.test(message)) return;
    // Anything but a lock held elsewhere (a folder that cannot be written) is said as it is.
    if (!/locked|busy/i.test(message))
      throw new Error(`Cannot claim ${file} for this process: its lock file ${lock} could not be written (${message})`, { cause: error });
    throw new Error(
      `${file} is in use by another viewsync store (another process, or another handle in this one): a SQLite file is served by one process, whose locks keep its guarantees. Stop the other, or use PostgreSQL for several instances`,
      { cause: error },
    );
  } finally {
    db.exec('PRAGMA busy_timeout = 5000');
  }
}

const LOCK_SCHEMA = 'viewsync_lock';
