import { runChecked } from './checked.js';
import { compareUTF8 } from '../base/utf8.js';
import { manySpacesOf, SpaceLocks } from './lock.js';
import { fromTextKey, quoteIdentifier, toTextKey, upperBound } from './sql.js';
import type { ScanOptions, Storage, StoredValue } from './types.js';
import { type StorageReader, WriteBuffer } from './write-buffer.js';

/**
 * A synchronous SQLite connection: what the SQLite store needs of a driver (better-sqlite3,
 * `bun:sqlite`, `node:sqlite`, a Durable Object's `sql`).
 */
export interface SQLiteConnection {
  /**
   * The rows `query` selects, each as its columns' values in the query's order. An array a row,
   * not an object: a driver makes an array from a row faster (better-sqlite3: about 0.7 of the
   * time), and a full pull reads a row for each entry of the space.
   */
  values(query: string, params: readonly unknown[]): ReadonlyArray<readonly unknown[]>;
  /** Runs a statement that returns no rows. */
  run(query: string, params: readonly unknown[]): void;
  /** Runs `fn` in one transaction, rolled back whole if it throws. */
  transaction(fn: () => void): void;
}

/**
 * The store over one SQLite table of keys and JSON text, shared by `sqliteStorage` and
 * `durableObjectStorage`. A synchronous driver cannot keep a transaction open across awaits while
 * other requests run, so the guarantees of {@link Storage} come from two locks per space and a
 * write buffer:
 * 1. Atomicity: a read-write transaction buffers its writes and, once its callback resolves,
 *    applies them in one SQLite transaction, which rolls back whole if a statement throws; a
 *    callback that rejects drops the buffer unseen.
 * 2. Serialisable writes: a read-write transaction holds its space's writers' lock from start to
 *    commit (a transaction of no space holds every space's); one of a lane (`WriteLane`)
 *    holds that lane's alone, and one of no lane both. A deliveries transaction reads the
 *    table, where a push of its space may commit between two of its reads: commits are whole.
 * 3. Consistent snapshots: only a commit changes the table, and it waits for its space's table
 *    lock, which read-only transactions share, so none sees one halfway or between two reads. A
 *    read-write transaction reads the table (no one else commits in its space) under its buffer.
 *    So pulls go on while a push's mutator awaits something slow, and spaces never wait for
 *    each other.
 * 4. Ordering: SQLite compares TEXT by memcmp of UTF-8 (the BINARY collation), as
 *    `compareUTF8` does, and keys are written with `toTextKey`, which keeps that order. A prefix
 *    is a primary key range: [prefix, prefix with its last code point raised by one).
 * 5. Values: `JSON.stringify` at commit, `JSON.parse` at each read from the table.
 * Keys with a lone surrogate are refused: UTF-8 cannot spell them.
 */
export function sqliteCoreStorage(db: SQLiteConnection, tablePrefix: string, incarnation?: string): Storage {
  const name = migrate(db, tablePrefix);
  const [writers, committing] = [new SpaceLocks(), new SpaceLocks()];
  const sql = {
    get: `SELECT value FROM ${name} WHERE key = ?`,
    // A literal LIMIT makes a short scan nearly twice as fast as a bound one (SQLite 3.53 through
    // better-sqlite3: 26 µs against 45 for 11 rows); literals are kept to a few values, so that
    // the statements a driver caches stay few.
    scan: (after: boolean, bounded: boolean, limit: number) =>
      `SELECT key, value FROM ${name} WHERE key ${after ? '>' : '>='} ?${bounded ? ' AND key < ?' : ''} ORDER BY key LIMIT ${LITERAL_LIMITS.has(limit) ? limit : '?'}`,
    upsert: inSizes(
      (rows) => `INSERT INTO ${name} (key, value) VALUES ${Array(rows).fill('(?, ?)').join(', ')} ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    ),
    del: inSizes((rows) => `DELETE FROM ${name} WHERE key IN (${Array(rows).fill('?').join(', ')})`),
  };
  const committed: StorageReader = {
    async get(key) {
      const [row] = db.values(sql.get, [toTextKey(key)]);
      return row && (JSON.parse(row[0] as string) as StoredValue);
    },
    async scan(options: ScanOptions) {
      return rowsOf(options).map((row): [string, StoredValue] => [fromTextKey(row[0] as string), JSON.parse(row[1] as string) as StoredValue]);
    },
    async scanText(options: ScanOptions) {
      return rowsOf(options).map((row): [string, string] => [fromTextKey(row[0] as string), row[1] as string]);
    },
  };

  function rowsOf({ prefix, start, limit = Infinity }: ScanOptions): ReadonlyArray<readonly unknown[]> {
    if (limit <= 0) return [];
    const fromStart = start !== undefined && compareUTF8(start.key, prefix) >= 0;
    const from = fromStart ? start.key : prefix;
    const end = upperBound(prefix);
    const count = finite(limit);
    const params = [toTextKey(from), ...(end === undefined ? [] : [toTextKey(end)]), ...(LITERAL_LIMITS.has(count) ? [] : [count])];
    return db.values(sql.scan(fromStart && start.exclusive === true, end !== undefined, count), params);
  }

  function commit(writes: ReadonlyMap<string, StoredValue | undefined>): void {
    const puts: string[] = [];
    const dels: string[] = [];
    for (const [key, value] of writes) {
      if (value === undefined) dels.push(toTextKey(key));
      else puts.push(toTextKey(key), JSON.stringify(value));
    }
    db.transaction(() => {
      inRows(puts, 2, sql.upsert);
      inRows(dels, 1, sql.del);
    });
  }

  /**
   * Runs `statement` over `params`, `width` of them a row: {@link ROWS} rows a statement, then
   * the rest one by one, so a commit of many writes crosses into SQLite a few times, not once a
   * write, and each kind has two statements to cache. Keys are distinct (one write per key).
   */
  function inRows(params: readonly string[], width: number, statement: { one: string; many: string }): void {
    const full = ROWS * width;
    let at = 0;
    for (; at + full <= params.length; at += full) db.run(statement.many, params.slice(at, at + full));
    for (; at < params.length; at += width) db.run(statement.one, params.slice(at, at + width));
  }

  return {
    manySpaces: true,
    async transaction(fn, options) {
      const { readOnly, space, lane } = options;
      if (readOnly) return committing.hold(space, false, () => runChecked(fn, committed, false));
      const spaces = manySpacesOf(options);
      const write = async () => {
        const buffer = new WriteBuffer(committed, { cacheReads: true });
        const result = await runChecked(fn, buffer, true, incarnation === undefined ? undefined : async () => incarnation);
        if (buffer.writes.size > 0)
          await (spaces === undefined
            ? committing.hold(space, true, () => commit(buffer.writes))
            : committing.holdMany(spaces, undefined, () => commit(buffer.writes)));
        return result;
      };
      return spaces === undefined ? writers.holdLane(space, lane, write) : writers.holdMany(spaces, 'deliveries', write);
    },
  };
}

/**
 * Brings the tables to the current schema version and returns the key-value table's quoted
 * name. Idempotent, and safe when two connections start at once: the check and the changes run
 * in one write transaction. Version 1: `<prefix>kv (key TEXT PRIMARY KEY, value TEXT)`, the
 * table the Durable Object store has always had (as `viewsync_kv`).
 */
function migrate(db: SQLiteConnection, prefix: string): string {
  const [kv, meta] = [quoteIdentifier(`${prefix}kv`), quoteIdentifier(`${prefix}schema`)];
  const migrations = [`CREATE TABLE IF NOT EXISTS ${kv} (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`];
  db.transaction(() => {
    db.run(`CREATE TABLE IF NOT EXISTS ${meta} (version INTEGER NOT NULL)`, []);
    const version = Number(db.values(`SELECT max(version) FROM ${meta}`, [])[0]?.[0] ?? 0);
    if (version > migrations.length)
      throw new Error(`The ${prefix}* tables are at schema version ${version}, newer than this viewsync knows (${migrations.length}): upgrade viewsync`);
    for (const statement of migrations.slice(version)) db.run(statement, []);
    if (version < migrations.length) {
      db.run(`DELETE FROM ${meta}`, []);
      db.run(`INSERT INTO ${meta} (version) VALUES (?)`, [migrations.length]);
    }
  });
  return kv;
}

/** Rows a write statement carries: 64 parameters an upsert, within a Durable Object's 100. */
const ROWS = 32;

/** A write statement for one row and for {@link ROWS}. */
function inSizes(statement: (rows: number) => string): { one: string; many: string } {
  return { one: statement(1), many: statement(ROWS) };
}

/** The limits written into a scan's SQL: none (-1), and the page sizes viewsync reads with. */
const LITERAL_LIMITS = new Set([-1, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]);

/** SQLite's LIMIT: -1 is none. */
function finite(limit: number): number {
  return Number.isFinite(limit) ? Math.ceil(limit) : -1;
}
