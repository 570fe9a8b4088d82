/**
 * One sync server for the store benchmark, in its own process so that it does not share a core
 * with the load generator: `node --import tsx bench/store-server.ts <memory|sqlite|postgres> [where]`
 * (`where`: a database file for sqlite, a schema for postgres, with DATABASE_URL; NOTIFIER=postgres
 * pokes other instances on that schema through LISTEN/NOTIFY). The space is
 * the `space` query parameter. Prints one JSON line, `{port, unsharedPort, alonePort}`: the
 * second port serves the same store with `shareReads: false`, the third also without the
 * store's `readMany` (each pull in a transaction of its own, as before shared and planned reads),
 * for baselines. Stops on SIGTERM.
 * `FIRST_SYNC_PAGE_BYTES` answers first pulls in pages of that size (`firstSync`), and
 * `FIRST_SYNC_ORDER` (prefixes, comma-separated) sends those prefixes' keys first (`firstSync.order`).
 * `KEEP_ALIVE_MS` raises the adapter's keep-alive timeout (default 5 s), for a benchmark whose
 * clients keep their connections open between rounds, as browsers do.
 * Over an IPC channel (bench/poke-clients.ts opens one), the message `memory` is answered with
 * `process.memoryUsage()` after a full collection (with `--expose-gc`), for memory per stream.
 */
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { serve } from '../adapters/node.js';
import { type JSONValue, memoryStorage, type Mutators, type Notifier, type Storage, createContext } from '../src/index.js';
import { postgresNotifier, postgresStorage } from '../src/postgres.js';
import { sqliteStorage } from '../src/storage/sqlite.js';

const [kind, where] = process.argv.slice(2);
let close = async () => {};
let storage: Storage;
let notifier: Notifier | undefined;
if (kind === 'memory') storage = memoryStorage();
else if (kind === 'sqlite') storage = sqliteStorage(new Database(where!));
else if (kind === 'postgres') {
  const sql = postgres(process.env.DATABASE_URL!, { onnotice: () => {}, max: 10 });
  storage = postgresStorage(sql, { schema: where });
  // NOTIFIER=postgres: pokes cross instances through LISTEN/NOTIFY on this database.
  if (process.env.NOTIFIER === 'postgres') notifier = postgresNotifier(sql, { channel: `bench_${where}` });
  close = () => sql.end({ timeout: 1 });
} else throw new Error(`Unknown store ${kind}; use memory, sqlite or postgres`);

const mutators: Mutators = {
  put: async (tx, { key, value }: { key: string; value: JSONValue }) => tx.set(key, value),
  increment: async (tx, { key }: { key: string }) => tx.set(key, (((await tx.get(key)) as number | undefined) ?? 0) + 1),
  /** Entries of any shape, many to a mutation (bench/first-sync-order.ts). */
  putMany: async (tx, entries: Array<[string, JSONValue]>) => {
    for (const [key, value] of entries) await tx.set(key, value);
  },
  /** Many rows in one mutation, for seeding a large space quickly. */
  seed: async (tx, { from, count }: { from: number; count: number }) => {
    for (let i = from; i < from + count; i++) await tx.set(`item/${String(i).padStart(8, '0')}`, { title: `Item ${i}`, done: false, order: i, revision: 0 });
  },
};
const keepAliveTimeout = process.env.KEEP_ALIVE_MS ? Number(process.env.KEEP_ALIVE_MS) : undefined;
const space = (request: Request) => new URL(request.url).searchParams.get('space') ?? '';
// FIRST_SYNC_PAGE_BYTES: a first sync in pages of that size (bench/first-sync.ts).
const pageBytes = process.env.FIRST_SYNC_PAGE_BYTES ? Number(process.env.FIRST_SYNC_PAGE_BYTES) : undefined;
const order = process.env.FIRST_SYNC_ORDER ? process.env.FIRST_SYNC_ORDER.split(',') : undefined;
const ctx = createContext({
  storage,
  mutators,
  space,
  onError: (error: unknown) => console.error(error),
  ...(notifier && { pokes: { notifier } }),
  ...(pageBytes && { firstSync: { pageBytes, ...(order && { order }) } }),
});
const server = await serve(ctx, { port: 0, keepAliveTimeoutMs: keepAliveTimeout });
const unshared = await serve(createContext({ ...ctx.options, shareReads: false, pokes: false, firstSync: undefined }), {
  port: 0,
  keepAliveTimeoutMs: keepAliveTimeout,
});
// As pulls read before issue 23: each in a transaction of its own (no readMany, so no plans).
const transactions = { transaction: storage.transaction.bind(storage) } satisfies Storage;
const alone = await serve(createContext({ ...ctx.options, storage: transactions, shareReads: false, pokes: false, firstSync: undefined }), {
  port: 0,
  keepAliveTimeoutMs: keepAliveTimeout,
});
console.log(JSON.stringify({ port: server.port, unsharedPort: unshared.port, alonePort: alone.port }));
process.on('message', (message) => {
  if (message !== 'memory') return;
  // Twice: the first pass may leave what only its finalizers let go.
  globalThis.gc?.();
  globalThis.gc?.();
  process.send?.(process.memoryUsage());
});
process.once(
  'SIGTERM',
  () =>
    void Promise.all([server.stop(), unshared.stop(), alone.stop()])
      .then(close)
      .then(() => process.exit(0)),
);
