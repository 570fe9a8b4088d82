/**
 * An old client's pulls through a schema downgrade (issue 47): a space of ENTRIES to-dos in
 * version 2's shape (`task/<id>`), served with test/schema/app.ts's `schemaV2`, so a version 1
 * client reads them as `todo/<id>` through its `read`. Measures, in the same run on the same space
 * and changes, a version 1 client's pull against a version 2 client's:
 * - after K changes (10, 100), each round's pulls from the previous cookie, the two clients in
 *   turn, first one then the other (ROUNDS rounds a K);
 * - the first (full) pull, a new client group each time (FULL pulls each, in turn).
 * Every pull is timed from `handlePull` to its whole body. The aim: at most 1.3x.
 * `STORES=memory,sqlite,postgres` (PostgreSQL needs DATABASE_URL). `npm run bench:schema-pull`.
 */
import { cpus, loadavg } from 'node:os';
import { createContext, handlePull, handlePush, type JSONValue, type Mutators, type Storage, type SyncContext } from '../src/index.js';
import { mutatorsV2, schemaV2, type TaskV2 } from '../test/schema/app.js';
import { eachStore } from './each-store.js';
import { collectGarbage, median, progress, quantile } from './measure.js';
import { renderTable, type Row } from './table.js';

const ENTRIES = Number(process.env.ENTRIES ?? 10_000);
const ROUNDS = Number(process.env.ROUNDS ?? 300);
const FULL = Number(process.env.FULL ?? 20);
const CHANGES = [10, 100];
const STORES = (process.env.STORES ?? 'memory,sqlite,postgres').split(',');

const keyOf = (i: number) => `task/${String(i).padStart(6, '0')}`;
const mutators: Mutators = {
  ...(mutatorsV2 as unknown as Mutators),
  fill: async (tx, { from, count }: { from: number; count: number }) => {
    for (let i = from; i < from + count; i++) await tx.set(keyOf(i), { title: `To-do number ${i}`, done: false, count: 0 } satisfies TaskV2);
  },
  touch: async (tx, { ids }: { ids: number[] }) => {
    for (const i of ids) {
      const task = (await tx.get(keyOf(i))) as unknown as TaskV2;
      await tx.set(keyOf(i), { ...task, count: task.count + 1 } satisfies TaskV2);
    }
  },
};

const request = (path: string, body: unknown) =>
  new Request(`http://bench${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

let lastID = 0;
async function push(ctx: SyncContext, name: string, args: JSONValue): Promise<void> {
  const body = {
    pushVersion: 1,
    clientGroupID: 'writer',
    profileID: 'p',
    schemaVersion: '2',
    mutations: [{ clientID: 'writer', id: ++lastID, name, args, timestamp: 0 }],
  };
  const response = await handlePush(request('/push', body), ctx);
  const text = await response.text();
  if (response.status !== 200 || text !== '{}') throw new Error(`push: ${response.status} ${text}`);
}

/** A pull of `group` at `schemaVersion` from `cookie`, timed to its whole body: its cookie, patch length and time. */
async function pull(ctx: SyncContext, schemaVersion: string, group: string, cookie: JSONValue): Promise<{ cookie: JSONValue; ops: number; ms: number }> {
  const body = { pullVersion: 1, clientGroupID: group, cookie, profileID: 'p', schemaVersion };
  const req = request('/pull', body);
  const start = performance.now();
  const response = await handlePull(req, ctx);
  const text = await response.text();
  const ms = performance.now() - start;
  if (response.status !== 200) throw new Error(`pull: ${response.status} ${text}`);
  const parsed = JSON.parse(text) as { cookie?: JSONValue; patch: unknown[] };
  if (parsed.cookie === undefined) throw new Error(`pull: ${text.slice(0, 200)}`);
  return { cookie: parsed.cookie, ops: parsed.patch.length, ms };
}

async function bench(name: string, storage: Storage): Promise<Row[]> {
  lastID = 0;
  const ctx = createContext({ storage, mutators, schema: schemaV2, onError: (error) => console.error(error) });
  for (let from = 0; from < ENTRIES; from += 5_000) await push(ctx, 'fill', { from, count: Math.min(5_000, ENTRIES - from) });
  progress(`${name}: seeded ${ENTRIES} entries`);
  const rows: Row[] = [];
  const timed = (label: string, current: number[], old: number[]): Row => ({
    benchmark: `${name}: ${label}, old / current`,
    value: median(old) / median(current),
    unit: 'x',
    note: `p50 ${median(old).toFixed(3)} / ${median(current).toFixed(3)} ms, p95 ${quantile(old, 0.95).toFixed(3)} / ${quantile(current, 0.95).toFixed(3)} ms (${(quantile(old, 0.95) / quantile(current, 0.95)).toFixed(2)}x), n=${old.length}`,
  });

  // The full pulls first: a new group each, so each reads the whole space.
  const full = { current: [] as number[], old: [] as number[] };
  for (let i = 0; i < FULL + 2; i++) {
    collectGarbage();
    for (const [version, times] of i % 2 === 0
      ? ([
          ['2', full.current],
          ['1', full.old],
        ] as const)
      : ([
          ['1', full.old],
          ['2', full.current],
        ] as const)) {
      const { ops, ms } = await pull(ctx, version, `full-${version}-${i}`, null);
      if (ops !== ENTRIES + 1) throw new Error(`a full pull had ${ops} ops`);
      // The first two of each are warm-up.
      if (i >= 2) times.push(ms);
    }
  }
  progress(`${name}: full pulls done`);

  let current = await pull(ctx, '2', 'current', null);
  let old = await pull(ctx, '1', 'old', null);
  let next = 0;
  for (const k of CHANGES) {
    const times = { current: [] as number[], old: [] as number[] };
    for (let round = 0; round < ROUNDS + 5; round++) {
      if (round % 50 === 0) collectGarbage();
      // K to-dos spread over the space, different ones each round.
      await push(ctx, 'touch', { ids: Array.from({ length: k }, () => (next = (next + 7_919) % ENTRIES)) });
      const pulls = [
        async () => (current = record(times.current, round, await pull(ctx, '2', 'current', current.cookie))),
        async () => (old = record(times.old, round, await pull(ctx, '1', 'old', old.cookie))),
      ];
      if (round % 2 === 1) pulls.reverse();
      for (const each of pulls) await each();
      if (current.ops !== k || old.ops !== k) throw new Error(`${k} changes gave ${current.ops} and ${old.ops} ops`);
    }
    rows.push(timed(`pull after ${k} changes`, times.current, times.old));
    progress(`${name}: ${k} changes done`);
  }
  rows.push(timed(`first pull of ${ENTRIES.toLocaleString('en-US')} entries`, full.current, full.old));
  return rows;
}

/** Keeps `pulled`'s time unless the round is one of the five warm-up rounds; returns `pulled`. */
function record<T extends { ms: number }>(times: number[], round: number, pulled: T): T {
  if (round >= 5) times.push(pulled.ms);
  return pulled;
}

progress(
  `node ${process.version}, ${cpus().length} cores, load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ')}; ${ENTRIES} entries, ${ROUNDS} rounds a K, ${FULL} full pulls each`,
);
const rows = await eachStore(STORES, 'schema-pull', bench);
console.log(renderTable(rows));
