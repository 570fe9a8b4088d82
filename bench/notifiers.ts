/**
 * Commit-to-poke latency between two instances: a `transact` on instance A, until instance B's
 * poke stream of that space has the poke. The instances share a memory store (so the commit
 * costs next to nothing, and what is timed is the notifier's round trip) and meet only through
 * the notifier: redisNotifier, on a `redis-server` this script starts on a free port;
 * storeNotifier (250 ms interval), which reads the store; and, when DATABASE_URL is set
 * (`export DATABASE_URL=$(scripts/start-postgres.sh)`), postgresNotifier, and storeNotifier on a
 * PostgreSQL store through pg Pools, where the commit itself is a PostgreSQL transaction.
 * Both instances live in this process, each with its own connections.
 *
 * Run: `npm run bench:notifiers`. Env: POKES (200), WARMUP (20).
 * Not part of `npm test`. The table on stdout.
 */
import pg from 'pg';
import postgres from 'postgres';
import { createClient } from 'redis';
import { handlePoke, memoryStorage, type Notifier, type Storage, type SyncContext, createContext } from '../src/index.js';
import { transact } from '../src/backend.js';
import { storeNotifier } from '../src/ops.js';
import { postgresNotifier, postgresStorage } from '../src/postgres.js';
import { redisNotifier } from '../src/redis.js';
import { EventReader } from '../test/poke/sse.js';
import { startRedisServer } from '../test/support/redis-server.js';
import { machineLine } from './cpu.js';
import { quantile } from './measure.js';
import { type Row, renderTable } from './table.js';

const POKES = Number(process.env.POKES ?? 200);
const WARMUP = Number(process.env.WARMUP ?? 20);

/** Two notifiers that reach each other, and how to let go of them. */
interface Pair {
  a: Notifier;
  b: Notifier;
  close(): Promise<void>;
}

const rows: Row[] = [];
const startLine = machineLine();
const redis = await startRedisServer();
try {
  rows.push(...(await measure('redisNotifier', redisPair)));
  rows.push(...(await measure('storeNotifier (memory store)', storePair, undefined, undefined, 250)));
  if (process.env.DATABASE_URL) {
    rows.push(...(await measure('postgresNotifier', postgresPair)));
    const pools = [0, 1].map(() => new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 4 }));
    const schema = `bench_notifiers_${process.pid}`;
    try {
      const [a, b] = pools.map((pool) => postgresStorage(pool, { schema }));
      rows.push(...(await measure('storeNotifier (PostgreSQL, pg Pools)', storePair, a!, b!, 250)));
      rows.push(...(await readCost(a!)));
    } finally {
      await pools[0]!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await Promise.all(pools.map((pool) => pool.end()));
    }
  }
} finally {
  await redis.stop();
}
console.log(
  `\nviewsync commit-to-poke latency across two instances: ${POKES} transacts on A, each timed until B's poke stream has its poke (after ${WARMUP} warm-up)`,
);
console.log(`at start: ${startLine}`);
console.log(`at end:   ${machineLine()}`);
if (!process.env.DATABASE_URL) console.log('postgresNotifier skipped: set DATABASE_URL (export DATABASE_URL=$(scripts/start-postgres.sh))');
console.log(`\n${renderTable(rows)}`);

async function redisPair(): Promise<Pair> {
  const clients = await Promise.all([0, 1].map(() => createClient({ url: redis.url }).on('error', console.error).connect()));
  const [a, b] = clients.map((client) => redisNotifier(client, { channel: 'bench', onError: console.error }));
  return {
    a: a!,
    b: b!,
    async close() {
      await Promise.all([a!.close(), b!.close()]);
      for (const client of clients) client.destroy();
    },
  };
}

async function storePair(onA: Storage, onB: Storage): Promise<Pair> {
  const [a, b] = [storeNotifier(onA), storeNotifier(onB)];
  return {
    a,
    b,
    async close() {
      a.close();
      b.close();
    },
  };
}

async function postgresPair(): Promise<Pair> {
  const clients = [0, 1].map(() => postgres(process.env.DATABASE_URL!, { max: 2, onnotice: () => {}, fetch_types: false }));
  const [a, b] = clients.map((sql) => postgresNotifier(sql, { channel: `bench_${process.pid}` }));
  return {
    a: a!,
    b: b!,
    async close() {
      await Promise.all([a!.close(), b!.close()]);
      await Promise.all(clients.map((sql) => sql.end({ timeout: 1 })));
    },
  };
}

/**
 * `jitterMs`: wait a random time up to this before each transact, so that commits fall anywhere
 * in a polling notifier's interval, as they do in use (back to back, each would wait a whole one).
 */
async function measure(
  name: string,
  pair: (onA: Storage, onB: Storage) => Promise<Pair>,
  storeA: Storage = memoryStorage(),
  storeB: Storage = storeA,
  jitterMs = 0,
): Promise<Row[]> {
  const { a, b, close } = await pair(storeA, storeB);
  const context = (storage: Storage, notifier: Notifier): SyncContext =>
    createContext({ storage, mutators: {}, pokes: { notifier, coalesceMs: 0 }, onError: console.error });
  const [onA, onB] = [context(storeA, a), context(storeB, b)];
  const response = await handlePoke(new Request('http://b/poke'), onB);
  const reader = new EventReader(response.body!);
  await reader.until(() => reader.comments >= 1);
  const latencies: number[] = [];
  const commits: number[] = [];
  try {
    for (let i = 1; i <= WARMUP + POKES; i++) {
      if (jitterMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * jitterMs));
      const started = performance.now();
      await transact(onA, '', (tx) => tx.set('k', i));
      const committed = performance.now();
      await reader.until(() => reader.pokes === i);
      if (i <= WARMUP) continue;
      latencies.push(performance.now() - started);
      commits.push(committed - started);
    }
  } finally {
    await reader.cancel();
    await close();
  }
  const note = `${POKES} pokes; the transact alone: p50 ${quantile(commits, 0.5).toFixed(2)} ms`;
  return [
    { benchmark: `${name}: transact on A to poke on B, p50`, value: quantile(latencies, 0.5), unit: 'ms', note },
    { benchmark: `${name}: transact on A to poke on B, p95`, value: quantile(latencies, 0.95), unit: 'ms' },
    { benchmark: `${name}: transact on A to poke on B, max`, value: Math.max(...latencies), unit: 'ms' },
  ];
}

/**
 * What storeNotifier costs an instance: one read per interval, of every watched space's version
 * in one read-only transaction. Timed here for 1, 100 and 1,000 watched spaces.
 */
async function readCost(storage: Storage): Promise<Row[]> {
  const rows: Row[] = [];
  for (const spaces of [1, 100, 1_000]) {
    const notifier = storeNotifier(storage, { intervalMs: 60_000 });
    const unsubscribes = await Promise.all(Array.from({ length: spaces }, (_, i) => notifier.subscribe(`space ${i}`, () => {})));
    const times: number[] = [];
    for (let i = 0; i < 50; i++) {
      const started = performance.now();
      // A notify reads every watched space's version at once, as each interval does.
      notifier.notify('');
      await new Promise<void>((resolve) => {
        const wait = () => (notifier.reads > i + spaces ? resolve() : setTimeout(wait, 0));
        wait();
      });
      times.push(performance.now() - started);
    }
    for (const unsubscribe of unsubscribes) unsubscribe();
    notifier.close();
    rows.push({
      benchmark: `storeNotifier: one read of ${spaces.toLocaleString('en')} watched spaces' versions (PostgreSQL), p50`,
      value: quantile(times, 0.5),
      unit: 'ms',
      note: 'once per intervalMs (250) per instance',
    });
  }
  return rows;
}
