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
 * `sqliteCoreStorage`). For several server instances, use `postgresStorage`.
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
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec('PRAGMA journal_mode = WAL');
  const connection: SQLiteConnection = {
    all: (query, params) => prepared(query).all(...params) as Array<Record<string, unknown>>,
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
  const store = sqliteCoreStorage(connection, prefix);
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
}

// One store per handle and prefix: two over one table would each think they hold its locks.
const stores = new WeakMap<SQLiteDatabase, Map<string, Storage>>();
