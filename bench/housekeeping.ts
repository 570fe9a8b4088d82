/**
 * Housekeeping at scale: one space with TOMBSTONES deleted entries and GROUPS idle client groups
 * (default 1M and 100k; `SCALE=0.1` for a tenth), all past their retention, made through the
 * protocol (`handlePush`). Measures a full `collectGarbage`, the p99 latency of a pusher running
 * beside it against the same pusher alone (same run), and the store before and after.
 * `STORES=memory,sqlite,postgres` (PostgreSQL needs DATABASE_URL). `npm run bench:housekeeping`.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { handlePush, memoryStorage, type Mutators, type Storage, type SyncContext, createContext } from '../src/index.js';
import { collectGarbage } from '../src/ops.js';
import { postgresStorage } from '../src/storage/postgres.js';
import { sqliteStorage } from '../src/storage/sqlite.js';
import { quantile } from './measure.js';
import { renderTable, type Row } from './table.js';

const SCALE = Number(process.env.SCALE ?? 1);
const TOMBSTONES = Math.round(1_000_000 * SCALE);
const GROUPS = Math.round(100_000 * SCALE);
const BATCH = Number(process.env.BATCH ?? 64);
const STORES = (process.env.STORES ?? 'memory,sqlite,postgres').split(',');
const DAY = 24 * 3600 * 1000;

const mutators: Mutators = {
  fill: async (tx, { from, count }: { from: number; count: number }) => {
    for (let i = from; i < from + count; i++) await tx.set(`k${i}`, i);
  },
  empty: async (tx, { from, count }: { from: number; count: number }) => {
    for (let i = from; i < from + count; i++) await tx.del(`k${i}`);
  },
  bump: (tx, { key }: { key: string }) => tx.set(key, Date.now()),
};

async function push(ctx: SyncContext, group: string, client: string, id: number, name: string, args: unknown): Promise<void> {
  const body = { pushVersion: 1, clientGroupID: group, profileID: 'p', schemaVersion: '', mutations: [{ clientID: client, id, name, args, timestamp: 0 }] };
  const response = await handlePush(
    new Request('http://bench/push', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    ctx,
  );
  if (response.status !== 200) throw new Error(`push: ${response.status} ${await response.text()}`);
}

/** Pushes one mutation after another for `ms`; their latencies. */
async function pusher(ctx: SyncContext, label: string, until: () => boolean): Promise<number[]> {
  const times: number[] = [];
  for (let id = 1; !until(); id++) {
    const start = performance.now();
    await push(ctx, `pusher-${label}`, `pusher-${label}`, id, 'bump', { key: 'hot' });
    times.push(performance.now() - start);
  }
  return times;
}

async function bench(name: string, storage: Storage, size: () => Promise<string>): Promise<Row[]> {
  const clock = { now: Date.UTC(2026, 0, 1) };
  const ctx: SyncContext = createContext({ storage, mutators, clock: () => clock.now, onError: () => {} });
  const started = performance.now();
  const chunk = 5_000;
  let id = 1;
  for (let from = 0; from < TOMBSTONES; from += chunk) await push(ctx, 'seed', 'seed', id++, 'fill', { from, count: Math.min(chunk, TOMBSTONES - from) });
  for (let from = 0; from < TOMBSTONES; from += chunk) await push(ctx, 'seed', 'seed', id++, 'empty', { from, count: Math.min(chunk, TOMBSTONES - from) });
  for (let g = 0; g < GROUPS; g++) await push(ctx, `idle${g}`, `idle${g}`, 1, 'bump', { key: `g${g % 100}` });
  const seeded = (performance.now() - started) / 1000;
  console.error(`${name}: seeded in ${seeded.toFixed(0)} s`);
  const before = await size();

  clock.now += 31 * DAY;
  // The pusher alone, then beside a full collection, each as long as the collection takes.
  let collecting = true;
  const collectStart = performance.now();
  const [removed, during] = await Promise.all([
    collectGarbage(ctx, undefined, { batch: BATCH }).finally(() => (collecting = false)),
    pusher(ctx, 'during', () => !collecting),
  ]);
  const collectMs = performance.now() - collectStart;
  const aloneUntil = performance.now() + Math.min(collectMs, 20_000);
  const alone = await pusher(ctx, 'alone', () => performance.now() > aloneUntil);
  const after = await size();
  const p99 = (xs: number[]) => quantile(xs, 0.99);
  return [
    {
      benchmark: `${name}: full collection`,
      value: collectMs,
      unit: 'ms',
      // The pusher's first push starts the little collection that follows pushes, which takes some too.
      note: `collectGarbage removed ${removed.tombstones} tombstones, ${removed.clientGroups} groups, ${removed.clients} clients; the rest of ${TOMBSTONES} and ${GROUPS + 1} went after a push`,
    },
    {
      benchmark: `${name}: push p99 during collection`,
      value: p99(during),
      unit: 'ms',
      note: `${during.length} pushes; p50 ${quantile(during, 0.5).toFixed(2)} ms, max ${Math.max(...during).toFixed(1)} ms`,
    },
    {
      benchmark: `${name}: push p99 alone, same run`,
      value: p99(alone),
      unit: 'ms',
      note: `${alone.length} pushes; p50 ${quantile(alone, 0.5).toFixed(2)} ms; during/alone p99 ${(p99(during) / p99(alone)).toFixed(2)}x`,
    },
    { benchmark: `${name}: store before -> after`, value: 0, unit: '', note: `${before} -> ${after}` },
  ];
}

const rows: Row[] = [];
console.error(
  `node ${process.version}, ${cpus().length} cores, load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ')}; ${TOMBSTONES} tombstones, ${GROUPS} idle groups`,
);
for (const store of STORES) {
  if (store === 'memory') {
    const storage = memoryStorage();
    const heap = async () => ((globalThis as { gc?: () => void }).gc?.(), `${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB heap`);
    rows.push(...(await bench('memory', storage, heap)));
  } else if (store === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'viewsync-gc-'));
    const db = new Database(join(dir, 'gc.db'));
    const rowsOf = () => (db.prepare('SELECT count(*) AS n FROM viewsync_kv').get() as { n: number }).n;
    const size = async () => (db.pragma('wal_checkpoint(TRUNCATE)'), `${rowsOf()} rows, ${(statSync(join(dir, 'gc.db')).size / 2 ** 20).toFixed(0)} MiB file`);
    rows.push(...(await bench('SQLite', sqliteStorage(db), size)));
    db.close();
    rmSync(dir, { recursive: true, force: true });
  } else if (store === 'postgres' && process.env.DATABASE_URL) {
    const sql = postgres(process.env.DATABASE_URL, { onnotice: () => {}, max: 8 });
    const schema = `bench_gc_${process.pid}`;
    const size = async () => {
      await sql.unsafe(`VACUUM "${schema}".viewsync_kv`);
      const [row] = await sql.unsafe(`SELECT count(*)::int AS n, pg_total_relation_size('"${schema}".viewsync_kv') AS bytes FROM "${schema}".viewsync_kv`);
      return `${row!.n} rows, ${(Number(row!.bytes) / 2 ** 20).toFixed(0)} MiB (after VACUUM)`;
    };
    try {
      rows.push(...(await bench('PostgreSQL', postgresStorage(sql, { schema }), size)));
    } finally {
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end();
    }
  }
}
console.log(renderTable(rows));
