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

/** One way to run a transaction, whichever client it is. */
export function postgresDriver(client: PostgresClient, prepare: boolean): { transaction<T>(mode: string, fn: (query: PostgresQuery) => Promise<T>): Promise<T> } {
  if ('begin' in client && typeof client.begin === 'function') {
    return {
      transaction: async <T>(mode: string, fn: (query: PostgresQuery) => Promise<T>) =>
        (await client.begin(mode, (tx) => fn(async (query, params) => (await tx.unsafe(query, params as never[], { prepare })) as Array<Record<string, unknown>>))) as T,
    };
  }
  if ('transaction' in client && typeof client.transaction === 'function') {
    // PGlite has one connection, so one transaction at a time: queue them here, so that a
    // second never starts while the first awaits (its statements would land in the first).
    let queue: Promise<unknown> = Promise.resolve();
    return {
      transaction<T>(mode: string, fn: (query: PostgresQuery) => Promise<T>): Promise<T> {
        const run = () =>
          client.transaction(async (tx) => {
            await tx.query(`SET TRANSACTION ${mode}`);
            return fn(async (query, params) => (await tx.query(query, [...params])).rows as Array<Record<string, unknown>>);
          });
        const result = queue.then(run, run);
        queue = result.catch(() => {});
        return result;
      },
    };
  }
  throw new TypeError('postgresStorage needs a postgres.js client (postgres(url)) or a PGlite database');
}
