import { compareUTF8, hasLoneSurrogate } from './compare-utf8.js';
import { SpaceLocks } from './lock.js';
import type { ScanOptions, Storage, StorageTransaction, StoredValue } from './types.js';

/**
 * A store in a SQLite-backed Durable Object's own storage: one table, `viewsync_kv`, of JSON
 * text. Make it in the object's constructor; one `storage` always gets the same store.
 *
 * An object lets other requests in at every `await`, and its SQL cannot keep a transaction open
 * across one, so the guarantees of {@link Storage} come from two locks and a buffer:
 * 1. Atomicity: a read-write transaction buffers its writes and, once its callback resolves,
 *    applies them in one `transactionSync`, which rolls back whole if a statement throws; a
 *    callback that rejects drops the buffer unseen.
 * 2. Serialisable writes: a read-write transaction holds its space's writers' lock from start
 *    to commit.
 * 3. Consistent snapshots: only a commit changes the table, and it waits for its space's table
 *    lock that read-only transactions share, so none sees one halfway or in between two reads. A
 *    read-write transaction reads the table (no one else can commit in its space) under its own
 *    buffer. So, unlike one lock, pulls go on while a push's mutator awaits something slow.
 *    Both locks are per space: spaces never wait for each other.
 * 4. Ordering: SQLite compares TEXT by memcmp of UTF-8 (BINARY collation), as {@link compareUTF8}
 *    does; scans merge the buffer in that order. A prefix is a primary key range: [prefix,
 *    prefix with its last code point raised by one).
 * 5. Values: `JSON.stringify` at commit, `JSON.parse` at each read from the table.
 *
 * Keys with a lone surrogate are refused: UTF-8 cannot spell them (workerd writes WTF-8 and
 * reads back U+FFFD). Durability is the object's: its output gate holds responses until the
 * commit is on disk.
 *
 * @example
 * const ctx = { storage: durableObjectStorage(state.storage), mutators };
 */
export function durableObjectStorage(storage: DurableObjectStorage): Storage {
  const known = stores.get(storage);
  if (known !== undefined) return known;
  const { sql } = storage;
  sql.exec(`CREATE TABLE IF NOT EXISTS ${TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`);
  const [writers, table] = [new SpaceLocks(), new SpaceLocks()];

  async function run<T>(fn: (tx: StorageTransaction) => Promise<T>, writes?: Writes): Promise<T> {
    let open = true;
    const check = (key: string, write = false): void => {
      if (!open) throw new Error('The storage transaction is already finished');
      if (write && writes === undefined) throw new Error('Cannot write in a read-only transaction');
      if (hasLoneSurrogate(key)) throw new Error(`Key ${JSON.stringify(key)} has a lone surrogate, which SQLite text cannot hold`);
    };
    const tx: StorageTransaction = {
      async get(key) {
        check(key);
        if (writes?.has(key)) return writes.get(key);
        const [row] = sql.exec(`SELECT value FROM ${TABLE} WHERE key = ?`, key).toArray() as Row[];
        return row && (JSON.parse(row.value) as StoredValue);
      },
      async put(key, value) {
        check(key, true);
        writes!.set(key, value);
      },
      async del(key) {
        check(key, true);
        writes!.set(key, undefined);
      },
      async scan(options) {
        check(options.prefix);
        if (options.start !== undefined) check(options.start.key);
        return scan(sql, writes, options);
      },
    };
    try {
      return await fn(tx);
    } finally {
      open = false;
    }
  }

  function commit(writes: Writes): void {
    storage.transactionSync(() => {
      for (const [key, value] of writes) {
        if (value === undefined) sql.exec(`DELETE FROM ${TABLE} WHERE key = ?`, key);
        else sql.exec(`INSERT INTO ${TABLE} VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, JSON.stringify(value));
      }
    });
  }

  const store: Storage = {
    transaction(fn, { readOnly, space }) {
      if (readOnly) return table.hold(space, false, () => run(fn));
      return writers.hold(space, true, async () => {
        const writes: Writes = new Map();
        const result = await run(fn, writes);
        if (writes.size > 0) await table.hold(space, true, () => commit(writes));
        return result;
      });
    },
  };
  stores.set(storage, store);
  return store;
}

/** The parts of a SQLite-backed Durable Object's storage (`state.storage`) that the store uses. */
export interface DurableObjectStorage {
  /** The object's SQLite database. */
  readonly sql: { exec(query: string, ...bindings: unknown[]): { toArray(): unknown[] } };
  /** Runs `fn` in one SQLite transaction, rolled back if it throws. */
  transactionSync<T>(fn: () => T): T;
}

const TABLE = 'viewsync_kv';
const stores = new WeakMap<DurableObjectStorage, Storage>();
type Row = { key: string; value: string };

/** A read-write transaction's writes; `undefined` deletes. */
type Writes = Map<string, StoredValue | undefined>;

function scan(sql: DurableObjectStorage['sql'], writes: Writes | undefined, { prefix, start, limit = Infinity }: ScanOptions): Array<[string, StoredValue]> {
  if (limit <= 0) return [];
  const fromStart = start !== undefined && compareUTF8(start.key, prefix) >= 0;
  const [from, after, end] = [fromStart ? start.key : prefix, fromStart && start.exclusive === true, upperBound(prefix)];
  // Each buffered write hides at most one row, so this many rows always fill the page.
  const rowLimit = Number.isFinite(limit) ? Math.ceil(limit) + (writes?.size ?? 0) : -1;
  const rows = sql.exec(
    `SELECT key, value FROM ${TABLE} WHERE key ${after ? '>' : '>='} ?1 ${end === undefined ? '' : 'AND key < ?3'} ORDER BY key LIMIT ?2`,
    ...(end === undefined ? [from, rowLimit] : [from, rowLimit, end]),
  ).toArray() as Row[];
  const entries = rows.map(({ key, value }): [string, StoredValue] => [key, JSON.parse(value) as StoredValue]);
  if (writes === undefined || writes.size === 0) return entries;
  const merged = new Map<string, StoredValue | undefined>(entries);
  for (const [key, value] of writes) {
    if (key.startsWith(prefix) && compareUTF8(key, from) >= (after ? 1 : 0)) merged.set(key, value);
  }
  const live = [...merged].filter((entry): entry is [string, StoredValue] => entry[1] !== undefined);
  return live.sort(([a], [b]) => compareUTF8(a, b)).slice(0, limit);
}

/** The least string above every string that starts with `prefix`; none when it is all U+10FFFF. */
function upperBound(prefix: string): string | undefined {
  const points = Array.from(prefix);
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) return points.join('') + String.fromCodePoint(last === 0xd7ff ? 0xe000 : last + 1);
  }
  return undefined;
}
