import { isTemporary, isUnreachable } from './unreachable.js';

/** A postgres.js client (`postgres(url)`): the part the store uses. */
export interface PostgresJsClient {
  begin<T>(options: string, fn: (sql: PostgresJsTransaction) => Promise<T>): Promise<unknown>;
  /** A statement outside any transaction (postgres.js always has it). */
  unsafe?(query: string, params?: never[], options?: { prepare?: boolean }): PromiseLike<unknown>;
}

/** A postgres.js transaction: the part the store uses. */
export interface PostgresJsTransaction {
  unsafe(query: string, params?: never[], options?: { prepare?: boolean }): PromiseLike<unknown>;
}

/** A PGlite database (`new PGlite()`): the part the store uses. */
export interface PGliteClient {
  transaction<T>(fn: (tx: { query(query: string, params?: unknown[]): Promise<{ rows: unknown[] }> }) => Promise<T>): Promise<T>;
}

/**
 * A node-postgres pool (`new Pool()` from `pg`), or a pool that shares its interface: Neon's
 * serverless `Pool` (over WebSocket, at the edge), `@vercel/postgres`'s `createPool()`. The part
 * the store uses: a connection of its own for each transaction, given back after it. The store
 * calls `connect` with a callback, as pg's and Neon's pools take it (see `checkOut`); a pool
 * that only returns a promise works too.
 */
export interface PgPool {
  connect(): Promise<PgPoolClient>;
}

/** A connection taken from a {@link PgPool}. */
export interface PgPoolClient {
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
  /** Gives the connection back; with an argument, closes it instead (it is broken). */
  release(destroy?: boolean | Error): void;
  /** `pg` emits a lost connection's error here when no statement is running. */
  on?(event: 'error', listener: (error: unknown) => void): unknown;
  removeListener?(event: 'error', listener: (error: unknown) => void): unknown;
}

/** What `postgresStorage` runs on: a postgres.js client, a `pg`-style pool, or a PGlite database. */
export type PostgresClient = PostgresJsClient | PGliteClient | PgPool;

/** Runs one statement with positional parameters; resolves to its rows. */
export type PostgresQuery = (query: string, params: readonly unknown[]) => Promise<Array<Record<string, unknown>>>;

/** What a transaction's body resolves to: its result, and the statements to run just before COMMIT. */
export interface TransactionEnd<T> {
  result: T;
  finish: ReadonlyArray<readonly [query: string, params: readonly unknown[]]>;
}

/** Runs transactions on either client. */
export interface PostgresDriver {
  /** Runs `fn` between `BEGIN <mode>` and COMMIT (ROLLBACK if anything fails). */
  transaction<T>(mode: string, fn: (query: PostgresQuery) => Promise<TransactionEnd<T>>): Promise<T>;
  /** Runs one statement on its own, outside any transaction: one round trip, one snapshot. */
  statement: PostgresQuery;
}

/**
 * A driver for `client`. On postgres.js, the closing writes go out together (pipelined) before
 * COMMIT. (Its `begin` rather than a reserved connection with BEGIN pipelined too: a reserved
 * connection whose backend was killed hangs or crashes postgres.js 3.4, `begin` recovers.)
 */
export function postgresDriver(client: PostgresClient, prepare: boolean): PostgresDriver {
  if ('begin' in client && typeof client.begin === 'function') {
    const transaction = <T>(mode: string, fn: (query: PostgresQuery) => Promise<TransactionEnd<T>>) =>
      beginGuarded(client, mode, async (query) => {
        const { result, finish } = await fn(query);
        await Promise.all(finish.map(([text, params]) => query(text, params)));
        return result;
      }, prepare);
    return {
      transaction,
      statement: async (text, params) =>
        client.unsafe
          ? ((await unlessStuck(client.unsafe(text, params as never[], { prepare }))) as Array<Record<string, unknown>>)
          : transaction('READ ONLY', async (query) => ({ result: await query(text, params), finish: [] })),
    };
  }
  if ('transaction' in client && typeof client.transaction === 'function') {
    // PGlite has one connection, so one transaction at a time: queue them here, so that a
    // second never starts while the first awaits (its statements would land in the first).
    let queue: Promise<unknown> = Promise.resolve();
    const driver: PostgresDriver = {
      statement: (text, params) => driver.transaction('READ ONLY', async (query) => ({ result: await query(text, params), finish: [] })),
      transaction<T>(mode: string, fn: (query: PostgresQuery) => Promise<TransactionEnd<T>>): Promise<T> {
        const run = () =>
          client.transaction(async (tx) => {
            const query: PostgresQuery = async (text, params) => (await tx.query(text, [...params])).rows as Array<Record<string, unknown>>;
            await query(`SET TRANSACTION ${mode}`, []);
            const { result, finish } = await fn(query);
            for (const [text, params] of finish) await query(text, params);
            return result;
          });
        const result = queue.then(run, run);
        queue = result.catch(() => {});
        return result;
      },
    };
    return driver;
  }
  if ('connect' in client && typeof client.connect === 'function') return pgPoolDriver(client);
  throw new TypeError('postgresStorage needs a postgres.js client (postgres(url)), a pg-style Pool (pg, Neon serverless, @vercel/postgres) or a PGlite database');
}

/**
 * Transactions on a `pg`-style pool: each takes a connection, sends BEGIN with its isolation
 * level (no session setting, so a pooler in transaction mode is fine), and gives the connection
 * back after COMMIT or ROLLBACK; one that failed for a lost connection or a read-only server
 * (a standby, during a failover), or whose ROLLBACK failed, is closed rather than handed to the
 * next transaction. Statements go one at a time, each when the one before is answered, so the
 * closing writes cost a round trip each.
 */
function pgPoolDriver(pool: PgPool): PostgresDriver {
  // A pg (or Neon) Client has a backend process ID; a Pool has none.
  if ('processID' in pool) throw new TypeError(PG_CLIENT);
  return {
    statement: (text, params) => withConnection(pool, (query) => query(text, params)),
    transaction: <T>(mode: string, fn: (query: PostgresQuery) => Promise<TransactionEnd<T>>): Promise<T> =>
      withConnection(pool, async (query, rollBack) => {
        try {
          await query(`BEGIN ${mode}`, []);
          const { result, finish } = await fn(query);
          await Promise.all(finish.map(([text, params]) => query(text, params)));
          await query('COMMIT', []);
          return result;
        } catch (error) {
          await rollBack();
          throw error;
        }
      }),
  };
}

/**
 * Runs `work` on a connection of `pool`, its statements queued one behind another, and gives the
 * connection back, or closes it once it is known to be broken. `rollBack` sends ROLLBACK unless
 * the connection is broken (and marks it broken if that fails).
 */
async function withConnection<T>(pool: PgPool, work: (query: PostgresQuery, rollBack: () => Promise<void>) => Promise<T>): Promise<T> {
  let broken = false;
  // Between statements a lost connection is an 'error' event, which ends a Node process when
  // nothing listens: the pool listens only while the connection is idle in it.
  const lost = () => (broken = true);
  const connection = await checkOut(pool, lost);
  if (typeof connection?.query !== 'function' || typeof connection.release !== 'function') {
    connection?.release?.(true);
    throw new TypeError(PG_CLIENT);
  }
  // The store sends a statement before the one ahead is answered (the space's lock, the
  // closing writes); pg 8 queues them but deprecates it, so they queue here instead.
  let tail: Promise<unknown> = Promise.resolve();
  const send = (text: string, params: unknown[]) => {
    const sent = tail.then(() => connection.query(text, params));
    tail = sent.catch(() => {});
    return sent;
  };
  const query: PostgresQuery = async (text, params) => {
    if (broken) throw new ConnectionLostError();
    try {
      return (await send(text, [...params])).rows as Array<Record<string, unknown>>;
    } catch (error) {
      if (isTemporary(error)) broken = true;
      throw error;
    }
  };
  const rollBack = async () => {
    if (!broken) await send('ROLLBACK', []).catch(() => (broken = true));
  };
  try {
    return await work(query, rollBack);
  } finally {
    connection.removeListener?.('error', lost);
    connection.release(broken || undefined);
  }
}

/**
 * Takes a connection from `pool` with `lost` listening for its errors from the moment it is
 * handed out. pg-pool (and Neon's copy of it) stops listening to a connection's errors as it
 * hands it out, from inside the socket read that carried the server's ReadyForQuery: a FATAL in
 * that same read (a backend terminated as it connected, by a failover, `pg_terminate_backend`, a
 * restart) is emitted at once, before a promise's `then` could add a listener, and with none it
 * ends a Node process. Their callback form calls back synchronously, in that gap. A pool that
 * only returns a promise is taken as it comes.
 */
function checkOut(pool: PgPool, lost: (error: unknown) => void): Promise<PgPoolClient> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const take = (error: unknown, connection?: PgPoolClient) => {
      if (settled) return;
      settled = true;
      if (error !== undefined && error !== null) return reject(error);
      connection?.on?.('error', lost);
      resolve(connection!);
    };
    const returned: unknown = (pool.connect as unknown as (callback: typeof take) => unknown)(take);
    if (typeof (returned as PromiseLike<PgPoolClient> | undefined)?.then === 'function') {
      (returned as PromiseLike<PgPoolClient>).then((connection) => take(undefined, connection), take);
    }
  });
}

/**
 * postgres.js's `begin`, kept from writing to a connection that is gone. postgres.js 3.4 answers a
 * transaction body that fails with ROLLBACK, and runs any statement it is given, on the
 * connection even after its socket closed (a killed backend, a failover, a pooler restart): the
 * write is deferred to a timer, finds no socket, and throws a TypeError no caller can catch,
 * which ends a Node process. So once a statement fails for a lost connection, or `begin` itself
 * has given up (it rejects as soon as the connection closes), the body runs no statement more
 * and never settles: postgres.js then sends nothing. Should the connection live on after all
 * (an error taken for a lost connection that was not), the body fails after `LOST_GRACE_MS`
 * and postgres.js rolls back as usual.
 *
 * A connection on a read-only server (25006: a standby, which postgres.js's
 * `target_session_attrs: 'read-write'` takes for a primary, or one an address led to before
 * it moved) is closed rather than given back to the pool, where every write would fail on it
 * again: the transaction has the server end its session, then goes the way of a lost
 * connection, and the next transaction gets a new connection, from the next host in the list
 * or wherever the address leads now. The caller gets the 25006.
 */
export async function beginGuarded<T>(client: PostgresJsClient, mode: string, body: (query: PostgresQuery) => Promise<T>, prepare = true): Promise<T> {
  let lost = false;
  let over = false;
  let readOnly: unknown;
  // postgres.js 3.4 can lose a BEGIN among connections cut under it (seen under the suite's
  // network faults: pending minutes after, while new queries ran), and with it every transaction
  // queued behind it in the space. One not started in time is given up: the caller gets a lost
  // connection (503), and should postgres.js start it after all, it ends at once, empty.
  let started = false;
  let givenUp = false;
  const { promise: late, reject: giveUp } = deferred<never>();
  const timer = setTimeout(() => {
    givenUp = true;
    giveUp(new ConnectionLostError(`postgres.js did not start the transaction within ${STUCK_MS / 1000} s`));
  }, STUCK_MS);
  (timer as { unref?: () => void }).unref?.();
  const done = client.begin(
    mode,
    (tx) => {
      started = true;
      clearTimeout(timer);
      if (givenUp) return Promise.reject(new ConnectionLostError());
      return new Promise<T>((resolve, reject) => {
        const query: PostgresQuery = async (text, params) => {
          if (lost || over || readOnly !== undefined) throw new ConnectionLostError();
          try {
            return (await tx.unsafe(text, params as never[], { prepare })) as Array<Record<string, unknown>>;
          } catch (error) {
            if (isUnreachable(error)) lost = true;
            else if (isTemporary(error)) readOnly ??= error;
            throw error;
          }
        };
        const settle = (finish: () => void) => {
          if (readOnly !== undefined && !lost && !over) {
            // The server closes the session: the failed transaction ends, and a new one that
            // waits does not wait long (idle_in_transaction_session_timeout), so its FATAL comes
            // between statements, with the connection still this transaction's; postgres.js then
            // rejects `begin`. (Not pg_terminate_backend, whose FATAL can come during the
            // statement: postgres.js 3.4 then fails the next connection's first statement with
            // it. Nor a bare ROLLBACK, after which postgres.js hands the connection to others.)
            lost = true;
            tx.unsafe('ROLLBACK; BEGIN; SET LOCAL idle_in_transaction_session_timeout = 1', []).then(undefined, () => {});
          }
          if (!lost && !over) return finish();
          const timer = setTimeout(() => over || finish(), LOST_GRACE_MS);
          (timer as { unref?: () => void }).unref?.();
        };
        body(query).then((value) => settle(() => resolve(value)), (error: unknown) => settle(() => reject(error)));
      });
    },
  );
  done.then(undefined, () => {});
  try {
    return (await Promise.race([done, late])) as T;
  } catch (error) {
    throw readOnly ?? error;
  } finally {
    over = true;
    clearTimeout(timer);
  }
}

/** `work`, or a lost connection once `STUCK_MS` have passed: a statement postgres.js lost track of (see {@link beginGuarded}). */
export function unlessStuck<T>(work: PromiseLike<T>): Promise<T> {
  const { promise: late, reject } = deferred<never>();
  const timer = setTimeout(() => reject(new ConnectionLostError(`postgres.js did not answer the statement within ${STUCK_MS / 1000} s`)), STUCK_MS);
  (timer as { unref?: () => void }).unref?.();
  const answered = Promise.resolve(work);
  answered.then(undefined, () => {});
  return Promise.race([answered, late]).finally(() => clearTimeout(timer));
}

function deferred<T>(): { promise: Promise<T>; reject: (error: unknown) => void } {
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((_, no) => (reject = no));
  promise.then(undefined, () => {});
  return { promise, reject };
}

const LOST_GRACE_MS = 2_000;

/**
 * How long postgres.js may take to start a transaction or answer a statement outside one before
 * it is taken for lost. Far above a BEGIN's round trip, or a pull's statement (each range has a
 * LIMIT), and above a wait for a free connection of a pool in ordinary use.
 */
const STUCK_MS = 30_000;

const PG_CLIENT = 'postgresStorage got a pg Client, one connection: give it a Pool (new Pool({ connectionString })), which hands each transaction a connection of its own';

/** A statement refused because its transaction's connection is gone. */
class ConnectionLostError extends Error {
  override name = 'ConnectionLostError';
  readonly code = 'CONNECTION_CLOSED';
  constructor(why = 'The connection of this transaction was lost') {
    super(`${why}; nothing of it was committed`);
  }
}

