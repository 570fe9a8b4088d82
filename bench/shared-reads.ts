/**
 * Shared reads without HTTP: 1,000 clients of one space pull at once, each one change behind,
 * through `processPull` and the answer's serialisation, with `shareReads` on and off, in
 * alternating rounds on the same store. What the poke-storm benchmark (bench/pokes.ts) measures
 * through the Node adapter, less the HTTP work, which there costs more than the pulls' reads.
 * Stores: memory, SQLite (better-sqlite3, in memory) and, with DATABASE_URL, PostgreSQL.
 *
 * Run: `npm run bench:shared` (under a minute). Env: PULLS (1000), ROUNDS (7).
 * Not part of `npm test`. The table on stdout.
 */
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { handlePull, handlePush, type JSONValue, memoryStorage, type Storage, createContext } from '../src/index.js';
import { postgresStorage } from '../src/storage/postgres.js';
import { sqliteStorage } from '../src/storage/sqlite.js';
import { pullBody } from '../src/server/pull-body.js';
import { processPull } from '../src/sync/process-pull.js';
import { machineLine } from './cpu.js';
import { median } from './measure.js';
import { type Row, renderTable } from './table.js';

const PULLS = Number(process.env.PULLS ?? 1000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const json = { 'content-type': 'application/json' };
const rows: Row[] = [];
const startLine = machineLine();

async function measure(name: string, storage: Storage): Promise<void> {
  const ctx = createContext({
    storage,
    mutators: { put: async (tx: { set(key: string, value: JSONValue): Promise<void> }, { key, value }: { key: string; value: number }) => tx.set(key, value) },
  });
  const push = (group: string, id: number, key: string) =>
    handlePush(
      new Request('http://x/push', {
        method: 'POST',
        headers: json,
        body: JSON.stringify({
          pushVersion: 1,
          clientGroupID: group,
          mutations: [{ clientID: `${group}c`, id, name: 'put', args: { key, value: id }, timestamp: 0 }],
          profileID: 'p',
          schemaVersion: '',
        }),
      }),
      ctx,
    );
  for (let i = 0; i < PULLS; i++) await push(`g${i}`, 1, `k${i}`);
  const first = await handlePull(
    new Request('http://x/pull', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ pullVersion: 1, clientGroupID: 'g0', cookie: null, profileID: 'p', schemaVersion: '' }),
    }),
    ctx,
  );
  const { cookie } = (await first.json()) as { cookie: JSONValue };
  await push('g0', 2, 'k0');
  const clock = { now: Date.now(), touchEveryMs: Infinity };
  const storm = (shareReads: boolean) =>
    Promise.all(
      Array.from({ length: PULLS }, async (_, i) => {
        const answer = await processPull({
          storage,
          pull: { pullVersion: 1, clientGroupID: `g${i}`, cookie, profileID: 'p', schemaVersion: '' },
          space: '',
          userID: undefined,
          clock,
          shareReads,
        });
        if (!('patch' in answer) || answer.patch.length !== 1) throw new Error(`pull ${i} answered ${JSON.stringify(answer).slice(0, 200)}`);
        return pullBody(answer);
      }),
    );
  const times = { shared: [] as number[], alone: [] as number[] };
  for (let round = 0; round < ROUNDS + 1; round++) {
    for (const share of round % 2 === 0 ? [true, false] : [false, true]) {
      const start = performance.now();
      await storm(share);
      if (round > 0) times[share ? 'shared' : 'alone'].push(performance.now() - start);
    }
  }
  const ratios = times.shared.map((t, i) => t / times.alone[i]!);
  rows.push(
    { benchmark: `${name}: ${PULLS} pulls at once, shared reads`, value: median(times.shared), unit: 'ms', note: '' },
    {
      benchmark: `${name}: the same pulls, each reading alone (shareReads: false)`,
      value: median(times.alone),
      unit: 'ms',
      note: `shared / alone ${median(ratios).toFixed(2)}x, median of ${ROUNDS} rounds' ratios`,
    },
  );
}

await measure('memory', memoryStorage());
await measure('SQLite', sqliteStorage(new Database(':memory:')));
if (process.env.DATABASE_URL) {
  const sql = postgres(process.env.DATABASE_URL, { onnotice: () => {}, max: 10 });
  const schema = `bench_shared_${process.pid}`;
  try {
    await measure('PostgreSQL', postgresStorage(sql, { schema }));
  } finally {
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await sql.end();
  }
}
console.log(`\nviewsync shared reads, in process (no HTTP): ${PULLS} pulls of one space at once, one change behind`);
console.log(`at start: ${startLine}`);
console.log(`at end:   ${machineLine()}`);
console.log(`\n${renderTable(rows)}`);
