import type { PostgresDriver, PostgresQuery, TransactionEnd } from './postgres-connection.js';
import { type PgPool, pgPoolDriver } from './pg-pool.js';
import { type GuardOptions, type PostgresJsClient, postgresJsDriver } from './postgres-js.js';

/** A PGlite database (`new PGlite()`): the part the store uses. */
export interface PGliteClient {
  transaction<T>(fn: (tx: { query(query: string, params?: unknown[]): Promise<{ rows: unknown[] }> }) => Promise<T>): Promise<T>;
}

/** What `postgresStorage` runs on: a postgres.js client, a `pg`-style pool, or a PGlite database. */
export type PostgresClient = PostgresJsClient | PGliteClient | PgPool;

/**
 * A driver for `client`: postgres.js (postgres-js.ts), a `pg`-style pool (pg-pool.ts), or PGlite,
 * here.
 */
export function postgresDriver(client: PostgresClient, postgresJs: Required<GuardOptions>): PostgresDriver {
  if ('begin' in client && typeof client.begin === 'function') return postgresJsDriver(client, postgresJs);
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
  throw new TypeError(
    'postgresStorage needs a postgres.js client (postgres(url)), a pg-style Pool (pg, Neon serverless, @vercel/postgres) or a PGlite database',
  );
}
