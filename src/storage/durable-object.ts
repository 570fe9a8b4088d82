import { sqliteCoreStorage } from './sqlite-core.js';
import type { Storage } from './types.js';

/**
 * A store in a SQLite-backed Durable Object's own storage: one table, `viewsync_kv`, of JSON
 * text, kept as `sqliteStorage` keeps it (see its guarantees there). Make it in the object's
 * constructor; one `storage` always gets the same store. Durability is the object's: its output
 * gate holds responses until the commit is on disk.
 *
 * @example
 * const ctx = createContext({ storage: durableObjectStorage(state.storage), mutators });
 */
export function durableObjectStorage(storage: DurableObjectStorage): Storage {
  let store = stores.get(storage);
  if (store === undefined) {
    // An object's SQL runs no BEGIN: its transactions are `transactionSync`.
    store = sqliteCoreStorage(
      {
        values: (query, params) => {
          const cursor = storage.sql.exec(query, ...params);
          return cursor.raw ? Array.from(cursor.raw()) : cursor.toArray().map((row) => Object.values(row as object));
        },
        run: (query, params) => void storage.sql.exec(query, ...params),
        transaction: (fn) => storage.transactionSync(fn),
      },
      'viewsync_',
    );
    stores.set(storage, store);
  }
  return store;
}

/** The parts of a SQLite-backed Durable Object's storage (`state.storage`) that the store uses. */
export interface DurableObjectStorage {
  /** The object's SQLite database. */
  readonly sql: {
    exec(
      query: string,
      ...bindings: unknown[]
    ): {
      toArray(): unknown[];
      /** The rows as arrays of column values, which workerd makes faster than objects. */
      raw?(): Iterable<unknown[]>;
    };
  };
  /** Runs `fn` in one SQLite transaction, rolled back if it throws. */
  transactionSync<T>(fn: () => T): T;
}

const stores = new WeakMap<DurableObjectStorage, Storage>();
