import type { PgPool, PgPoolClient } from './pg-pool.js';

/** One connection with node-postgres's interface: `new Client(...)` from `pg` or `@neondatabase/serverless`. */
export interface PgClient {
  connect(): Promise<unknown>;
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
  end(): Promise<unknown>;
  on?(event: 'error', listener: (error: unknown) => void): unknown;
}

/**
 * A pool for `postgresStorage` that connects a new client for each transaction and ends it when
 * the transaction ends, so that no connection outlives the work that opened it. For edge
 * functions (Vercel, Next.js on the edge, Netlify) on Neon's serverless driver, whose WebSocket
 * connections must be made, used and closed within one request: the store and its context are
 * made once, at module level, and every connection within a request. A pull or push ends its
 * client before its response is returned; a poke stream holds none between the notifier's reads.
 *
 * @example
 * import { Client } from '@neondatabase/serverless';
 * const storage = postgresStorage(clientPerTransaction(() => new Client(process.env.DATABASE_URL)));
 */
export function clientPerTransaction(createClient: () => PgClient): PgPool {
  if (typeof createClient !== 'function')
    throw new TypeError('clientPerTransaction takes a function that makes a client, e.g. () => new Client(connectionString)');
  return {
    async connect(): Promise<PgPoolClient> {
      const client = createClient();
      let lost: ((error: unknown) => void) | undefined;
      // Listened to from the start: a lost connection's 'error' event with no listener ends a
      // Node process. The store listens while it holds the client.
      client.on?.('error', (error) => lost?.(error));
      // A client that failed to connect is not ended: pg has closed its socket, and its end()
      // would write to that socket (Neon's, still connecting, throws from a timer).
      await client.connect();
      return {
        query: (text, params) => client.query(text, params),
        release: () => end(client),
        on: (_event, listener) => (lost = listener),
        removeListener: () => (lost = undefined),
      };
    },
  };
}

/** Ends `client`; a connection that failed has nothing left to end cleanly. */
function end(client: PgClient): void {
  client.end().catch(() => {});
}
