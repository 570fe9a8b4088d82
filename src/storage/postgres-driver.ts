/** A postgres.js client (`postgres(url)`): the part the store uses. */
export interface PostgresJsClient {
  begin<T>(options: string, fn: (sql: PostgresJsTransaction) => Promise<T>): Promise<unknown>;
}

/** A postgres.js transaction: the part the store uses. */
export interface PostgresJsTransaction {
  unsafe(query: string, params?: never[], options?: { prepare?: boolean }): PromiseLike<unknown>;
}

/** A PGlite database (`new PGlite()`): the part the store uses. */
export interface PGliteClient {
  transaction<T>(fn: (tx: { query(query: string, params?: unknown[]): Promise<{ rows: unknown[] }> }) => Promise<T>): Promise<T>;
}

/** What `postgresStorage` runs on: a postgres.js client or a PGlite database. */
export type PostgresClient = PostgresJsClient | PGliteClient;

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
}

/**
 * A driver for `client`. On postgres.js, the closing writes go out together (pipelined) before
 * COMMIT. (Its `begin` rather than a reserved connection with BEGIN pipelined too: a reserved
 * connection whose backend was killed hangs or crashes postgres.js 3.4, `begin` recovers.)
 */
export function postgresDriver(client: PostgresClient, prepare: boolean): PostgresDriver {
  if ('begin' in client && typeof client.begin === 'function') {
    return {
      transaction: async <T>(mode: string, fn: (query: PostgresQuery) => Promise<TransactionEnd<T>>) =>
        (await client.begin(mode, async (tx) => {
          const query: PostgresQuery = async (text, params) => (await tx.unsafe(text, params as never[], { prepare })) as Array<Record<string, unknown>>;
          const { result, finish } = await fn(query);
          await Promise.all(finish.map(([text, params]) => query(text, params)));
          return result;
        })) as T,
    };
  }
  if ('transaction' in client && typeof client.transaction === 'function') {
    // PGlite has one connection, so one transaction at a time: queue them here, so that a
    // second never starts while the first awaits (its statements would land in the first).
    let queue: Promise<unknown> = Promise.resolve();
    return {
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
  }
  throw new TypeError('postgresStorage needs a postgres.js client (postgres(url)) or a PGlite database');
}
