// A server instance of a deployment spread over several PostgreSQL servers, as a user runs one:
// the Node adapter, a routed storage over STORES (JSON: name -> URL), spaces named by ?space=,
// pokes through the PostgreSQL server at NOTIFY_URL. Prints {"url", "pid"} once listening.
import postgres from 'postgres';
import { serve } from '../../adapters/node.js';
import { createContext } from '../../src/index.js';
import { routedStorage } from '../../src/ops.js';
import { postgresNotifier, postgresStorage } from '../../src/postgres.js';
import { runtimeMutators } from '../runtime/app.js';

const urls = JSON.parse(process.env.STORES!) as Record<string, string>;
// postgres.js waits up to 20 s between reconnects after a server went away (backoff, growing
// with each failure): a bounded one lets a store's spaces recover within a second of its return.
const client = (url: string) =>
  postgres(url, { max: 6, fetch_types: false, connect_timeout: 2, onnotice: () => {}, backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1) });
const storage = routedStorage({ stores: Object.fromEntries(Object.entries(urls).map(([name, url]) => [name, postgresStorage(client(url))])) });
const server = await serve(
  createContext({
    storage,
    mutators: {
      ...runtimeMutators,
      /** Seeds a space: `count` entries under `prefix`. */
      fill: async (tx, { prefix, count }: { prefix: string; count: number }) => {
        for (let i = 0; i < count; i++) await tx.set(`${prefix}${i}`, { i, text: 'x'.repeat(40) });
      },
    },
    space: (request) => new URL(request.url).searchParams.get('space') ?? '',
    pokes: { notifier: postgresNotifier(client(process.env.NOTIFY_URL!)) },
    limits: { appCodeMs: 60_000 },
    onError: (error) => console.error(`server error: ${error instanceof Error ? error.message : String(error)}`),
  }),
  { port: 0 },
);
console.log(JSON.stringify({ url: server.url, pid: process.pid }));
