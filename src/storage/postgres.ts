import { runChecked } from './checked.js';
import { compareUTF8 } from '../base/utf8.js';
import type { PostgresDriver, PostgresQuery } from './postgres-connection.js';
import { type PostgresClient, postgresDriver } from './postgres-driver.js';
import { LOST_AFTER_MS } from './postgres-js.js';
import { fromTextKey, quoteIdentifier, toTextKey, upperBound } from './sql.js';
import type { RangeRow, ScanOptions, Storage, StorageTransaction, StoredValue, WriteLane } from './types.js';
import { type StorageReader, WriteBuffer } from './write-buffer.js';
import { within } from '../base/within.js';
import { TemporaryError } from '../base/errors.js';
import { checkStarted, RUN, StandbyReads, type StandbyStats } from './standby-reads.js';
import { range, type Range, RANGES_PER_STATEMENT, type RangeShape } from './postgres-ranges.js';
import { migrateTables } from './postgres-schema.js';
import { manySpacesOf } from './lock.js';

export type { PgPool, PgPoolClient } from './pg-pool.js';
export type { PostgresClient } from './postgres-driver.js';
export type { StandbyStats } from './standby-reads.js';

/**
 * A store in PostgreSQL, shared by any number of server instances: a `postgres` (postgres.js)
 * client, a `pg`-style pool (`pg`, Neon's serverless `Pool`, `@vercel/postgres`), or a PGlite
 * database for embedded use and tests. Returns at once; the first
 * transaction creates its tables (`viewsync_kv` and `viewsync_schema`, or with another
 * `tablePrefix`, in `schema`), and so does {@link PostgresStorage.migrate} for deploy scripts.
 *
 * How it keeps the guarantees of {@link Storage}, across instances:
 * 1. Atomicity: one PostgreSQL transaction; writes are buffered and sent with the COMMIT as one
 *    multi-row upsert and one multi-row delete.
 * 2. Serialisable writes: a read-write transaction runs at READ COMMITTED holding its space's
 *    advisory lock (`pg_advisory_xact_lock`, and a shared lock that a transaction of no space
 *    takes alone), so pushes to one space queue on every instance while other spaces go on. Each
 *    statement then sees everything committed before the lock was granted, and nothing else can
 *    commit in the space until this one ends, but a transaction of the other lane
 *    (`WriteLane`: a webhook's delivery beside a push, each holding its lane's lock alone;
 *    one of no lane holds both), which writes other rows.
 * 3. Consistent snapshots: read-only transactions run at REPEATABLE READ READ ONLY, one snapshot,
 *    no locks, never a serialisation failure.
 * 4. Ordering: keys are `text COLLATE "C"` (byte order, which is UTF-8 order in a UTF-8
 *    database, checked when the tables are made), written with `toTextKey`, as PostgreSQL text
 *    cannot hold U+0000.
 * 5. Values: JSON as `text`, not `jsonb`, which would reorder object members and refuse U+0000.
 * A deadlock or serialisation failure (40P01, 40001: none is expected) is retried a few times.
 * Every transaction sets its isolation level in its own BEGIN, so a pooler in transaction mode
 * (PgBouncer) is fine; pass `prepare: false` there (or create the client with it). Create the
 * postgres.js client with `fetch_types: false`: postgres.js 3.4 fetches array types on every new
 * connection, and a backend killed during that fetch rejects a promise nobody can catch, which
 * ends a Node process (this store passes no arrays, so it needs none).
 *
 * @example
 * import postgres from 'postgres';
 * const storage = postgresStorage(postgres(process.env.DATABASE_URL!, { fetch_types: false }));
 */
export function postgresStorage(client: PostgresClient, options: PostgresStorageOptions = {}): PostgresStorage {
  const lostAfterMs = options.lostAfterMs ?? LOST_AFTER_MS;
  const { standbys: standbyClients = [], standbyWaitMs = 50, catchUpMs = 1_000 } = options;
  if (!Array.isArray(standbyClients))
    throw new TypeError('postgresStorage: standbys must be an array of clients, one per standby (postgres.js clients or pg-style pools)');
  if (typeof standbyWaitMs !== 'number' || !(standbyWaitMs >= 0) || standbyWaitMs > 60_000)
    throw new TypeError(`postgresStorage: standbyWaitMs must be a number of milliseconds from 0 to 60,000, not ${String(standbyWaitMs)}`);
  if (typeof catchUpMs !== 'number' || !(catchUpMs >= 0) || catchUpMs > 60_000)
    throw new TypeError(`postgresStorage: catchUpMs must be a number of milliseconds from 0 to 60,000, not ${String(catchUpMs)}`);
  if (typeof lostAfterMs !== 'number' || !(lostAfterMs > 0) || !Number.isFinite(lostAfterMs))
    throw new TypeError(`postgresStorage: lostAfterMs must be a number of milliseconds above 0, not ${String(lostAfterMs)}`);
  const driver = postgresDriver(client, { prepare: options.prepare ?? true, lostAfterMs });
  const standbys =
    standbyClients.length === 0
      ? undefined
      : new StandbyReads(
          driver,
          standbyClients.map((client) => postgresDriver(client, { prepare: options.prepare ?? true, lostAfterMs })),
          standbyWaitMs,
        );
  const prefix = options.tablePrefix ?? 'viewsync_';
  const schema = options.schema === undefined ? '' : `${quoteIdentifier(options.schema)}.`;
  const [kv, meta] = [`${schema}${quoteIdentifier(`${prefix}kv`)}`, `${schema}${quoteIdentifier(`${prefix}schema`)}`];
  // Advisory locks are one namespace for a whole database: key them by this store's table.
  const lockName = `viewsync ${kv}`;
  const lockWait = String(Math.ceil(lostAfterMs / 2));
  const sql = {
    get: `SELECT value FROM ${kv} WHERE key = $1`,
    // Lists go as JSON text, not arrays: postgres.js serialises arrays only with the types it
    // fetches on every new connection (fetch_types), which is best turned off (README).
    getMany: `SELECT key, value FROM ${kv} WHERE key = ANY(ARRAY(SELECT json_array_elements_text($1::text::json)))`,
    scan: (after: boolean, bounded: boolean) =>
      `SELECT key, value FROM ${kv} WHERE key ${after ? '>' : '>='} $1${bounded ? ' AND key < $3' : ''} ORDER BY key LIMIT $2`,
    upsert: `INSERT INTO ${kv} (key, value) SELECT * FROM ROWS FROM (json_array_elements_text($1::text::json), json_array_elements_text($2::text::json)) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
    del: `DELETE FROM ${kv} WHERE key = ANY(ARRAY(SELECT json_array_elements_text($1::text::json)))`,
    // Both in one statement, so that a commit's writes are one statement (see `pipelined`). A key
    // is either put or deleted, never both, so the two parts never touch one row.
    delThenUpsert: `WITH gone AS (DELETE FROM ${kv} WHERE key = ANY(ARRAY(SELECT json_array_elements_text($3::text::json)))) INSERT INTO ${kv} (key, value) SELECT * FROM ROWS FROM (json_array_elements_text($1::text::json), json_array_elements_text($2::text::json)) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
    // With the lock, the server's start time, at no cost of its own: a failover or a restart
    // changes it (`incarnation`). The wait for the lock is bounded by the server itself (the
    // transaction's lock_timeout, set first: the CTE's row is read before the locks are taken),
    // see LOCK_NOT_AVAILABLE.
    // And whether the transaction is read-only (a standby's are): its writes then go out alone,
    // so that their 25006 is seen before COMMIT (postgres-js.ts closes such a connection).
    lockSpace: `WITH bound AS MATERIALIZED (SELECT set_config('lock_timeout', $3, true)) SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0)), pg_advisory_xact_lock(hashtextextended($2, 0)), pg_postmaster_start_time()::text AS incarnation, current_setting('transaction_read_only') AS read_only FROM bound`,
    // A transaction of no lane takes its space's deliveries lock too (WriteLane), after the
    // space's: every holder of both takes them in that order, so none deadlocks.
    lockWhole: `WITH bound AS MATERIALIZED (SELECT set_config('lock_timeout', $3, true)) SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0)), pg_advisory_xact_lock(hashtextextended($2, 0)), pg_advisory_xact_lock(hashtextextended($4, 0)), pg_postmaster_start_time()::text AS incarnation, current_setting('transaction_read_only') AS read_only FROM bound`,
    // Several spaces' deliveries lanes (TransactionOptions.spaces): their locks in the order of
    // their hashes, row by row out of the sort, so that two such transactions never deadlock.
    lockMany: `WITH bound AS MATERIALIZED (SELECT set_config('lock_timeout', $3, true)) SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0)), (SELECT count(pg_advisory_xact_lock(h)) FROM (SELECT DISTINCT hashtextextended(k, 0) AS h FROM json_array_elements_text($2::text::json) AS k ORDER BY 1) AS sorted) AS locked, pg_postmaster_start_time()::text AS incarnation, current_setting('transaction_read_only') AS read_only FROM bound`,
    lockAll: `WITH bound AS MATERIALIZED (SELECT set_config('lock_timeout', $2, true)) SELECT pg_advisory_xact_lock(hashtextextended($1, 0)), pg_postmaster_start_time()::text AS incarnation, current_setting('transaction_read_only') AS read_only FROM bound`,
    /**
     * `readMany`'s statement for ranges of these shapes: a UNION ALL of one index range scan per
     * range, each with its LIMIT written in and its joined value looked up by index, then in
     * order. Written out rather than a join over a list of ranges (json_to_recordset): the
     * planner guesses a hundred ranges of thousands of rows there, and past its JIT threshold
     * (default cost 100,000, which a table of a few hundred thousand rows reaches) compiles the
     * query on every run, 7 ms where the read takes 0.2. Each range's cost here is bounded by its
     * LIMIT, whatever the table's size.
     */
    readMany: (shapes: readonly RangeShape[], checked = false) => {
      // Parameters in order: each range's bounds, then a joining range's prefix and skip.
      let p = 0;
      const branches = shapes.map(({ limit, join }, n) => {
        const bounds = `k.key >= $${++p}::text AND k.key < $${++p}::text`;
        const joined = join ? `(SELECT j.value FROM ${kv} j WHERE j.key = $${++p}::text || substr(k.key, $${++p}::int + 1))` : 'NULL::text';
        return `(SELECT ${n} AS i, k.key, k.value, ${joined} AS joined FROM ${kv} k WHERE ${bounds} ORDER BY k.key${limit === null ? '' : ` LIMIT ${limit}`})`;
      });
      // On a standby, first a row of the server run the snapshot was taken in (standby-reads.ts).
      if (checked) branches.unshift(`(SELECT -1 AS i, (${RUN})::text AS key, NULL::text AS value, NULL::text AS joined)`);
      return `SELECT * FROM (${branches.join(' UNION ALL ')}) r ORDER BY i, key`;
    },
  };

  /**
   * Takes the advisory locks of a read-write transaction of `space` in `lane` (WriteLane):
   * the data lane's is the space's own lock, as before lanes were; the deliveries lane's another;
   * a transaction of no lane takes both.
   */
  const deliveriesLock = (space: string) => `${lockName} deliveries ${toTextKey(space)}`;
  const lockSpace = (query: PostgresQuery, space: string, lane: WriteLane | undefined) => {
    const [data, deliveries] = [`${lockName} ${toTextKey(space)}`, deliveriesLock(space)];
    if (lane === undefined) return query(sql.lockWhole, [lockName, data, lockWait, deliveries]);
    return query(sql.lockSpace, [lockName, lane === 'data' ? data : deliveries, lockWait]);
  };

  const reader = (query: PostgresQuery): StorageReader => ({
    async get(key) {
      const [row] = await query(sql.get, [toTextKey(key)]);
      return row && (JSON.parse(row.value as string) as StoredValue);
    },
    async getMany(keys) {
      const rows = await query(sql.getMany, [JSON.stringify(keys.map(toTextKey))]);
      const found = new Map(rows.map((row) => [fromTextKey(row.key as string), row.value as string]));
      return keys.map((key) => (found.has(key) ? (JSON.parse(found.get(key)!) as StoredValue) : undefined));
    },
    async scan(options: ScanOptions) {
      return (await rowsOf(query, options)).map((row): [string, StoredValue] => [
        fromTextKey(row.key as string),
        JSON.parse(row.value as string) as StoredValue,
      ]);
    },
    async scanText(options: ScanOptions) {
      return (await rowsOf(query, options)).map((row): [string, string] => [fromTextKey(row.key as string), row.value as string]);
    },
  });

  async function rowsOf(query: PostgresQuery, { prefix: keyPrefix, start, limit = Infinity }: ScanOptions): Promise<Array<Record<string, unknown>>> {
    if (limit <= 0) return [];
    const fromStart = start !== undefined && compareUTF8(start.key, keyPrefix) >= 0;
    const from = toTextKey(fromStart ? start.key : keyPrefix);
    const end = upperBound(keyPrefix);
    const count = Number.isFinite(limit) ? Math.ceil(limit) : null;
    return query(sql.scan(fromStart && start.exclusive === true, end !== undefined), end === undefined ? [from, count] : [from, count, toTextKey(end)]);
  }

  let ready: Promise<void> | undefined;
  const migrate = (): Promise<void> => {
    ready ??= migrateTables(driver, { kv, meta, schema: options.schema, lockName }).catch((error: unknown) => {
      ready = undefined; // a later transaction tries again
      throw error;
    });
    return ready;
  };

  /**
   * `readMany`'s ranges read on `on`: one statement, or with many ranges, several in one
   * snapshot. On a standby (`started`), the snapshot first shows the server run it was polled in.
   */
  async function readRanges(on: PostgresDriver, ranges: readonly Range[], started: string | undefined): Promise<Array<Record<string, unknown>>> {
    const statement = (part: readonly Range[], checked = false): [string, unknown[]] => [
      sql.readMany(part, checked),
      part.flatMap((r) => (r.join ? [r.lo, r.hi, r.joinPrefix, r.skip] : [r.lo, r.hi])),
    ];
    if (ranges.length <= RANGES_PER_STATEMENT) {
      const rows = await on.statement(...statement(ranges, started !== undefined));
      if (started === undefined) return rows;
      checkStarted([{ started: rows[0]?.key }], started);
      return rows.slice(1);
    }
    // Many ranges (pulls sharing a read): one snapshot for several statements, sent together.
    const parts = Array.from({ length: Math.ceil(ranges.length / RANGES_PER_STATEMENT) }, (_, n) =>
      ranges.slice(n * RANGES_PER_STATEMENT, (n + 1) * RANGES_PER_STATEMENT),
    );
    const results = await on.transaction('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (query) => {
      const run = started === undefined ? undefined : query(RUN, []);
      run?.catch(() => {});
      const read = await Promise.all(parts.map((part) => query(...statement(part))));
      if (run) checkStarted(await run, started!);
      return { result: read, finish: [] };
    });
    return results.flatMap((part, n) => part.map((row) => ({ ...row, i: Number(row.i) + n * RANGES_PER_STATEMENT })));
  }

  /** A read-only transaction on `on`, one snapshot; on a standby (`started`), checked as in {@link readRanges}. */
  function readOnlyTransaction<T>(on: PostgresDriver, fn: (tx: StorageTransaction) => Promise<T>, started: string | undefined): Promise<T> {
    return on.transaction('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (query) => {
      // Sent first, not awaited: the snapshot is taken at the transaction's first statement.
      const run = started === undefined ? undefined : query(RUN, []);
      run?.catch(() => {});
      try {
        return { result: await runChecked(fn, new WriteBuffer(reader(query), { cacheReads: true }), false), finish: [] };
      } finally {
        // Checked even when `fn` failed: what it failed on may be a restarted standby's older
        // state, and the primary then runs it again.
        if (run) checkStarted(await run, started!);
      }
    });
  }

  const storage: PostgresStorage = {
    // PostgreSQL's btree refuses an index row over 2,704 bytes: 2,692 of an incompressible key.
    maxKeyBytes: 2_692,
    // A synchronous standby may show a commit before the primary does (see Storage.catchUpMs).
    ...(standbys !== undefined && { catchUpMs }),
    standbyStats: () => standbys?.stats(),
    async readMany(reads) {
      await migrate();
      const ranges = reads.map(range).filter((r) => r.limit !== 0);
      const out = reads.map((): RangeRow[] => []);
      if (ranges.length === 0) return out;
      const rows = standbys ? await standbys.read((on, started) => readRanges(on, ranges, started)) : await readRanges(driver, ranges, undefined);
      for (const row of rows) {
        const joined = row.joined === null || row.joined === undefined ? undefined : (JSON.parse(row.joined as string) as StoredValue);
        out[ranges[Number(row.i)]!.index]!.push([fromTextKey(row.key as string), JSON.parse(row.value as string) as StoredValue, joined]);
      }
      return out;
    },
    migrate: ({ timeoutMs = 10_000 } = {}) => withDeadline(migrate(), timeoutMs),
    manySpaces: true,
    async transaction(fn, options) {
      const { readOnly, space, lane } = options;
      const spaces = manySpacesOf(options);
      await migrate();
      for (let attempt = 1; ; attempt++) {
        try {
          if (readOnly)
            return standbys ? await standbys.read((on, started) => readOnlyTransaction(on, fn, started)) : await readOnlyTransaction(driver, fn, undefined);
          return await driver.transaction('ISOLATION LEVEL READ COMMITTED', async (query) => {
            // Not awaited: the statements after it queue behind it on the connection, so the lock
            // costs no round trip of its own; a failure shows in them and below.
            const locked =
              spaces !== undefined
                ? query(sql.lockMany, [lockName, JSON.stringify(spaces.map(deliveriesLock)), lockWait])
                : space === undefined
                  ? query(sql.lockAll, [lockName, lockWait])
                  : lockSpace(query, space, lane);
            locked.catch(() => {});
            const buffer = new WriteBuffer(reader(query), { cacheReads: true });
            const result = await runChecked(fn, buffer, true, async () => (await locked)[0]?.incarnation as string | undefined);
            const [lock] = await locked;
            const puts = [...buffer.writes].filter((entry): entry is [string, StoredValue] => entry[1] !== undefined);
            const dels = [...buffer.writes].filter(([, value]) => value === undefined).map(([key]) => toTextKey(key));
            const upsert = () => [JSON.stringify(puts.map(([key]) => toTextKey(key))), JSON.stringify(puts.map(([, value]) => JSON.stringify(value)))];
            // One statement for all the writes: COMMIT can then go with it (TransactionEnd.pipelined).
            const finish: Array<[string, unknown[]]> =
              puts.length === 0
                ? dels.length === 0
                  ? []
                  : [[sql.del, [JSON.stringify(dels)]]]
                : dels.length === 0
                  ? [[sql.upsert, upsert()]]
                  : [[sql.delThenUpsert, [...upsert(), JSON.stringify(dels)]]];
            return { result, finish, pipelined: lock?.read_only === 'off' };
          });
        } catch (error) {
          const code = (error as { code?: unknown } | null)?.code;
          if (code === LOCK_NOT_AVAILABLE)
            throw new TemporaryError(`The space was busy for longer than ${lockWait} ms (a transaction of it held on): retry`, { cause: error });
          if (attempt >= RETRIES || !RETRYABLE.has(code as string)) throw error;
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
        }
      }
    },
  };
  return storage;
}

/** Options for {@link postgresStorage}. */
export interface PostgresStorageOptions {
  /** The schema of the tables, created if missing. Default: the connection's search path (`public`). */
  schema?: string;
  /** What the table names start with, so several apps can share a schema. Default: `viewsync_`. */
  tablePrefix?: string;
  /** Prepare statements (postgres.js only). Set `false` behind a pooler in transaction mode. Default: true. */
  prepare?: boolean;
  /**
   * postgres.js: how long the start of a transaction, one of its statements, its end (COMMIT or
   * ROLLBACK) or a statement outside one may go unanswered before its connection is taken for
   * lost and the request answered 503 (postgres.js 3.4 can lose track of one on a connection it
   * reconnected after a network cut; the backend of a lost transaction is then ended, freeing its
   * locks, unless its COMMIT waits for a synchronous standby). Every driver: a write waits at most
   * half of it for its space, held by another transaction, then answers 503 (PostgreSQL's
   * `lock_timeout`, for that transaction only).
   * Default: 30,000.
   */
  lostAfterMs?: number;
  /**
   * PostgreSQL streaming standbys of the primary `client` reaches (postgres.js clients or pg-style
   * pools, one per standby), to serve reads: pulls, and every read-only transaction. A read goes
   * to a standby only once it has replayed everything the primary had when the read was asked
   * for, so a client reads its own pushes and never sees its cookie or lastMutationIDs go back;
   * the primary answers one small statement per batch of reads for its WAL position. Writes
   * always go to the primary. A standby that lags more than `standbyWaitMs`, is down or restarts
   * leaves its reads to the primary. Default: none. See docs/scaling-out.md.
   */
  standbys?: readonly PostgresClient[];
  /** How long a read waits for a standby to catch up before the primary serves it. Default: 50. */
  standbyWaitMs?: number;
  /**
   * With standbys: how long a pull whose cookie names a commit the primary does not show yet
   * reads again before it answers ClientStateNotFound (`Storage.catchUpMs`). Under synchronous
   * replication a standby may show a commit before its primary, which shows it once enough
   * standbys acknowledged it: milliseconds on a network that works. Default: 1,000.
   */
  catchUpMs?: number;
}

/** A PostgreSQL store, with its schema step for deploy scripts. */
export interface PostgresStorage extends Storage {
  /**
   * Connects and creates or upgrades the tables now (the first transaction does it otherwise):
   * call it at startup, so that a wrong database URL fails there, not at the first request.
   * Rejects with the driver's error (`ECONNREFUSED`, a refused password), or after `timeoutMs`
   * (default 10,000) when nothing answers as PostgreSQL: postgres.js retries such a connection
   * for ever. Idempotent.
   */
  migrate(options?: { timeoutMs?: number }): Promise<void>;
  /** With `standbys`: the reads served so far, by where (standbys, primary), and the probes sent to the primary. Otherwise undefined. */
  standbyStats(): StandbyStats | undefined;
}

/** `work`, or a rejection saying what to check once `ms` have passed. */
function withDeadline(work: Promise<void>, ms: number): Promise<void> {
  return within(
    work,
    ms,
    () =>
      new Error(
        `PostgreSQL did not answer within ${ms / 1000} s: check the database URL (host, port, database) and that PostgreSQL listens there; if it does, another process may be holding viewsync's migration lock`,
      ),
  );
}

const RETRYABLE = new Set(['40001', '40P01']);

/**
 * lock_not_available: a transaction waited for its space's lock for `lostAfterMs / 2` and gave
 * up, at the server. A transaction lost while it holds a space's lock (see `beginGuarded`) is
 * ended from another connection of its pool, after `lostAfterMs`; were the transactions waiting
 * behind it to wait as long, a pool whose every other connection waits on that lock would have
 * none to end it from, and the space would stay held for ever, on every server. Bounded below
 * the driver's own bound, a waiter ends cleanly, its connection serves again, and its request
 * is answered 503 (the client sends it again).
 */
const LOCK_NOT_AVAILABLE = '55P03';
const RETRIES = 5;
