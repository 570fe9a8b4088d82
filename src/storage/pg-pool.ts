import { isTemporary } from './unreachable.js';
import { ConnectionLostError, type PostgresDriver, type PostgresQuery, type TransactionEnd } from './postgres-connection.js';

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

/**
 * Transactions on a `pg`-style pool: each takes a connection, sends BEGIN with its isolation
 * level (no session setting, so a pooler in transaction mode is fine), and gives the connection
 * back after COMMIT or ROLLBACK; one that failed for a lost connection or a read-only server
 * (a standby, during a failover), or whose ROLLBACK failed, is closed rather than handed to the
 * next transaction. Statements go one at a time, each when the one before is answered, so the
 * closing writes cost a round trip each.
 */
export function pgPoolDriver(pool: PgPool): PostgresDriver {
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
    // biome-ignore lint/plugin/no-double-cast: PgPool types only the promise form; pg's and Neon's pools also take the callback this needs (see above).
    const returned: unknown = (pool.connect as unknown as (callback: typeof take) => unknown)(take);
    if (typeof (returned as PromiseLike<PgPoolClient> | undefined)?.then === 'function') {
      (returned as PromiseLike<PgPoolClient>).then((connection) => take(undefined, connection), take);
    }
  });
}

const PG_CLIENT =
  'postgresStorage got a pg Client, one connection: give it a Pool (new Pool({ connectionString })), which hands each transaction a connection of its own';
