/**
 * The app's backend: `transact` against pushes, and export and import of large spaces.
 *
 * 1. Throughput, in process, on memory, SQLite (a file) and PostgreSQL (a real server): 8
 *    callers at once in one space, each doing one write after another for SECONDS s: a push of
 *    one mutation through `handlePush` (a Request, its body parsed, a client record) against
 *    `transact` doing the same writes. The two alternate, twice each, in the same run.
 * 2. Export and import on SQLite and PostgreSQL, of 100k and 1M entries (`SCALE` multiplies
 *    them), each in a process of its own for its peak memory (maxRSS): import of a dump file,
 *    export to a file, and the baseline, a bare SELECT of the same rows streamed to a file.
 *
 * Run: `npm run bench:backend` (about ten minutes at full scale; starts a throwaway PostgreSQL
 * with scripts/start-postgres.sh unless DATABASE_URL is set). Not part of `npm test`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { handlePush, memoryStorage, type Storage, type SyncContext, type WriteTransaction, createContext } from '../src/index.js';
import { transact } from '../src/backend.js';
import { postgresStorage } from '../src/storage/postgres.js';
import { sqliteStorage } from '../src/storage/sqlite.js';
import { median, progress } from './measure.js';

const root = new URL('..', import.meta.url).pathname;
const SECONDS = Number(process.env.SECONDS ?? 3);
const SCALE = Number(process.env.SCALE ?? 1);
const url = process.env.DATABASE_URL ?? execFileSync(join(root, 'scripts/start-postgres.sh'), { encoding: 'utf8' }).trim();
const dir = mkdtempSync(join(tmpdir(), 'viewsync-bench-backend-'));

/** The writes both sides make: a counter of the caller's and an item. */
async function write(tx: WriteTransaction, caller: number, i: number): Promise<void> {
  await tx.set(`counter/${caller}`, (((await tx.get(`counter/${caller}`)) as number | undefined) ?? 0) + 1);
  await tx.set(`item/${caller}/${i % 100}`, { i, title: `Item ${i}` });
}

const mutators = { bump: (tx: WriteTransaction, args: unknown) => write(tx, (args as { caller: number }).caller, (args as { i: number }).i) };

/** Writes per second by 8 callers for SECONDS s, through `one` (a caller's i-th write). */
async function rate(one: (caller: number, i: number) => Promise<void>): Promise<number> {
  const until = performance.now() + SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: 8 }, async (_, caller) => {
      for (let i = 1; performance.now() < until; i++) {
        await one(caller, i);
        done++;
      }
    }),
  );
  return done / SECONDS;
}

async function throughput(name: string, storage: Storage): Promise<void> {
  const ctx: SyncContext = createContext({
    storage,
    mutators,
    pokes: false,
    retention: { clientGroupsMs: false, tombstonesMs: false },
    onError: (error) => console.error(error),
  });
  const ids = new Map<string, number>();
  let round = 0;
  const push = async (caller: number, i: number) => {
    const client = `r${round}-c${caller}`;
    const id = (ids.get(client) ?? 0) + 1;
    ids.set(client, id);
    const body = {
      pushVersion: 1,
      clientGroupID: `r${round}-g${caller}`,
      profileID: 'bench',
      schemaVersion: '',
      mutations: [{ clientID: client, id, name: 'bump', args: { caller, i }, timestamp: 0 }],
    };
    const response = await handlePush(
      new Request('http://bench/push', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      ctx,
    );
    if (response.status !== 200) throw new Error(`push: ${response.status} ${await response.text()}`);
  };
  const backend = (caller: number, i: number) => transact(ctx, '', (tx) => write(tx, caller, i));
  const rates = { push: [] as number[], transact: [] as number[] };
  for (round = 0; round < 4; round++) {
    const side = round % 2 === 0 ? 'push' : 'transact';
    rates[side].push(await rate(side === 'push' ? push : backend));
    progress(`${name}: ${side} ${Math.round(rates[side].at(-1)!)} writes/s`);
  }
  const [p, t] = [median(rates.push), median(rates.transact)];
  console.log(`| ${name} | ${Math.round(p).toLocaleString('en-US')} | ${Math.round(t).toLocaleString('en-US')} | ${(t / p).toFixed(2)}x |`);
}

function task(name: string, store: string, file: string, n: number): { entries: number; seconds: number; maxRSSMiB: number } {
  const out = execFileSync(process.execPath, ['--import', 'tsx', join(root, 'bench/backend-task.ts'), name, store, file, String(n)], {
    encoding: 'utf8',
    env: { ...process.env, DATABASE_URL: url, SQLITE_FILE: join(dir, `bench-${n}.db`) },
    maxBuffer: 1 << 20,
  });
  return JSON.parse(out.trim().split('\n').at(-1)!);
}

console.log(`\n### transact against push: writes/s, 8 callers in one space, ${SECONDS} s runs\n`);
console.log('| store | push (handlePush) | transact | transact / push |\n|---|---|---|---|');
const sql = postgres(url, { onnotice: () => {}, max: 8 });
await sql.unsafe('DROP SCHEMA IF EXISTS bench_backend CASCADE');
await throughput('memory', memoryStorage());
await throughput('SQLite (file, WAL)', sqliteStorage(new Database(join(dir, 'throughput.db'))));
await throughput('PostgreSQL', postgresStorage(sql, { schema: 'bench_backend_throughput' }));
await sql.unsafe('DROP SCHEMA IF EXISTS bench_backend_throughput CASCADE');

console.log('\n### export and import: entries/s, peak memory (maxRSS) of the process\n');
console.log('| store | entries | import | export | bare SELECT to a file | export / SELECT speed |\n|---|---|---|---|---|---|');
for (const n of [100_000, 1_000_000].map((base) => Math.round(base * SCALE))) {
  const dump = join(dir, `dump-${n}.ndjson`);
  task('dump', 'none', dump, n);
  for (const store of ['sqlite', 'postgres']) {
    await sql.unsafe('DROP SCHEMA IF EXISTS bench_backend CASCADE');
    progress(`${store}, ${n} entries: import`);
    const imported = task('import', store, dump, n);
    progress(`${store}, ${n} entries: export`);
    const exported = task('export', store, join(dir, 'export.ndjson'), n);
    progress(`${store}, ${n} entries: bare SELECT`);
    const selected = task('select', store, join(dir, 'select.tsv'), n);
    if (exported.entries !== n || selected.entries !== n || imported.entries !== n)
      throw new Error(`entries: ${JSON.stringify({ imported, exported, selected })}`);
    const cell = (r: { seconds: number; maxRSSMiB: number }) => `${Math.round(n / r.seconds).toLocaleString('en-US')}/s, ${Math.round(r.maxRSSMiB)} MiB`;
    console.log(
      `| ${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'} | ${n.toLocaleString('en-US')} | ${cell(imported)} | ${cell(exported)} | ${cell(selected)} | ${(selected.seconds / exported.seconds).toFixed(2)}x |`,
    );
  }
}
await sql.unsafe('DROP SCHEMA IF EXISTS bench_backend CASCADE');
await sql.end();
rmSync(dir, { recursive: true, force: true });
