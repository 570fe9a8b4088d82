/**
 * Spaces over several PostgreSQL servers (issue 24), each figure against a baseline of the same run.
 *
 * 1. Push throughput over N servers: 60 spaces, a pusher each (one `increment` per push, pushes
 *    back to back), on a routed storage over one server and over three (separate pg_ctl clusters,
 *    started by scripts/start-postgres.sh on ports 55481-55483), in alternating rounds. In
 *    process (handlePush, no HTTP), so the load generator costs as little as it can.
 * 2. A move of a space of 100,000 entries and 100 client groups, while a client pushes to it
 *    back to back: the time its writes waited for the switch, the move's total time, and the
 *    slowest push the client saw meanwhile.
 * 3. One server down: the push latency of the spaces on the other two, before and while server c
 *    is stopped (as a crash), a pusher on each of 60 spaces (c's refused meanwhile). A server that is
 *    down should cost the others' spaces nothing (test/route/clusters.e2e.test.ts checks that they
 *    are answered, and that c's spaces fail fast and recover; this measures what it costs them).
 *
 * Run: `npm run bench:route` (about two minutes). Env: SECONDS (5) per throughput round and
 * outage phase, ROUNDS (2), ONLY (throughput, move, outage). Not part of `npm test`. Progress on
 * stderr, the table on stdout.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { handlePush, type SyncContext, createContext } from '../src/index.js';
import { moveSpace, routedStorage } from '../src/ops.js';
import { type PostgresStorage, postgresStorage } from '../src/postgres.js';
import { machineLine } from './cpu.js';
import { median, progress, quantile } from './measure.js';
import { type Row, renderTable } from './table.js';

const root = new URL('..', import.meta.url).pathname;
const SECONDS = Number(process.env.SECONDS ?? 5);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const ONLY = process.env.ONLY?.split(',');
const rows: Row[] = [];
const startLine = machineLine();

const BASE = '/tmp/viewsync-bench-route';
const urls = ['a', 'b', 'c'].map((name, i) =>
  execFileSync(join(root, 'scripts/start-postgres.sh'), {
    encoding: 'utf8',
    env: { ...process.env, PGPORT_TEST: String(55481 + i), PGBASE_TEST: `${BASE}-${name}` },
  }).trim(),
);

/** Runs pg_ctl on server c (as `postgres` when we are root, as scripts/start-postgres.sh does). */
function pgCtl(args: string[]): void {
  const bin = execFileSync('sh', ['-c', 'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1'], { encoding: 'utf8' }).trim();
  const command = [join(bin, 'pg_ctl'), '-D', `${BASE}-c/data`, ...args];
  execFileSync(process.getuid?.() === 0 ? 'runuser' : command[0]!, process.getuid?.() === 0 ? ['-u', 'postgres', '--', ...command] : command.slice(1), {
    stdio: 'ignore',
  });
}
const clients = urls.map((url) => postgres(url, { max: 16, fetch_types: false, onnotice: () => {} }));
for (const sql of clients) await sql`DROP TABLE IF EXISTS viewsync_kv, viewsync_schema`;
const [a, b, c] = clients.map((sql) => postgresStorage(sql)) as [PostgresStorage, PostgresStorage, PostgresStorage];

const mutators: SyncContext['mutators'] = {
  increment: async (tx, { key }: { key: string }) => void (await tx.set(key, (((await tx.get(key)) as number | undefined) ?? 0) + 1)),
  fill: async (tx, { from, count }: { from: number; count: number }) => {
    for (let i = from; i < from + count; i++) await tx.set(`item/${String(i).padStart(6, '0')}`, { i, text: 'x'.repeat(40) });
  },
};
const context = (stores: Parameters<typeof routedStorage>[0]['stores']): SyncContext =>
  createContext({
    storage: routedStorage({ stores }),
    mutators,
    space: (request) => new URL(request.url).searchParams.get('space')!,
    pokes: false,
    limits: { appCodeMs: 120_000 },
    onError: (error) => console.error(error),
  });
const one = context({ a });
const three = context({ a, b, c });

const next = new Map<string, number>();
async function push(ctx: SyncContext, space: string, group: string, name: string, args: unknown): Promise<number> {
  const id = (next.get(`${space}/${group}`) ?? 0) + 1;
  next.set(`${space}/${group}`, id);
  const started = performance.now();
  const response = await handlePush(
    new Request(`http://bench/push?space=${space}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        pushVersion: 1,
        clientGroupID: group,
        profileID: 'bench',
        schemaVersion: '',
        mutations: [{ clientID: `${group}-c`, id, name, args, timestamp: 0 }],
      }),
    }),
    ctx,
  );
  if (response.status !== 200) throw new Error(`push answered ${response.status}: ${await response.text()}`);
  return performance.now() - started;
}

/** The machine's CPU time so far, busy and idle, in ticks (/proc/stat). */
function cpuTicks(): { busy: number; idle: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
  const idle = fields[3]! + fields[4]!;
  return { busy: fields.reduce((sum, n) => sum + n, 0) - idle, idle };
}

/** The share of the machine's CPU time that was idle during the rounds of each setup. */
const idleShare: Record<'one' | 'three', number[]> = { one: [], three: [] };

/** Pushes per second: one pusher per space, back to back, for SECONDS. */
async function throughput(ctx: SyncContext, label: string): Promise<number> {
  const spaces = Array.from({ length: 60 }, (_, i) => `${label}-${i}`);
  for (const space of spaces) await push(ctx, space, 'g', 'increment', { key: 'n' });
  let pushes = 0;
  const before = cpuTicks();
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    spaces.map(async (space) => {
      while (performance.now() < until) {
        await push(ctx, space, 'g', 'increment', { key: 'n' });
        pushes++;
      }
    }),
  );
  const after = cpuTicks();
  idleShare[ctx === one ? 'one' : 'three'].push((after.idle - before.idle) / (after.idle - before.idle + after.busy - before.busy));
  return pushes / SECONDS;
}

if (!ONLY || ONLY.includes('throughput')) {
  const perSecond: Record<'one' | 'three', number[]> = { one: [], three: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, ctx] of [
      ['one', one],
      ['three', three],
    ] as const) {
      progress(`throughput round ${round + 1}/${ROUNDS}, ${name} server(s)…`);
      perSecond[name].push(await throughput(ctx, `t${round}-${name}`));
    }
  }
  const [m1, m3] = [median(perSecond.one), median(perSecond.three)];
  rows.push({ benchmark: 'pushes, 60 spaces, 1 server', value: m1, unit: 'pushes/s', note: `rounds: ${perSecond.one.map(Math.round).join(', ')}` });
  rows.push({ benchmark: 'pushes, 60 spaces, 3 servers', value: m3, unit: 'pushes/s', note: `rounds: ${perSecond.three.map(Math.round).join(', ')}` });
  rows.push({ benchmark: 'pushes, 3 servers / 1 server', value: m3 / m1, unit: 'x', note: 'same run, medians' });
  const idle = (name: 'one' | 'three') => idleShare[name].map((share) => `${Math.round(share * 100)}%`).join(', ');
  rows.push({
    benchmark: 'CPU idle during the rounds',
    value: median([...idleShare.one, ...idleShare.three]) * 100,
    unit: '%',
    note: `1 server: ${idle('one')}; 3 servers: ${idle('three')}`,
  });
}

if (!ONLY || ONLY.includes('move')) {
  const space = 'big';
  progress('move: seeding 100,000 entries and 100 client groups…');
  for (let from = 0; from < 100_000; from += 10_000) await push(three, space, 'seeder', 'fill', { from, count: 10_000 });
  for (let g = 0; g < 100; g++) await push(three, space, `group-${g}`, 'increment', { key: `count/${g}` });
  const source = await three.storage.parts!.locate(space);
  const target = ['a', 'b', 'c'].find((name) => name !== source)!;
  const latencies: number[] = [];
  let moving = true;
  const client = (async () => {
    while (moving) latencies.push(await push(three, space, 'group-0', 'increment', { key: 'count/0' }));
  })();
  progress(`move: ${source} → ${target}…`);
  const result = await moveSpace(three, space, target);
  moving = false;
  await client;
  rows.push({
    benchmark: 'move, 100k entries + 100 groups: writes waited',
    value: result.switchMs,
    unit: 'ms',
    note: 'the switch: from the freeze to the target in use',
  });
  rows.push({
    benchmark: 'move, 100k entries + 100 groups: total',
    value: result.totalMs,
    unit: 'ms',
    note: `${result.rows.toLocaleString('en-US')} rows copied`,
  });
  rows.push({
    benchmark: 'move: slowest push of a client meanwhile',
    value: Math.max(...latencies),
    unit: 'ms',
    note: `${latencies.length} pushes; p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms`,
  });
}

if (!ONLY || ONLY.includes('outage')) {
  const spaces = Array.from({ length: 60 }, (_, i) => `outage-${i}`);
  const homes = await Promise.all(spaces.map((space) => three.storage.parts!.locate(space)));
  const latencies = { before: [] as number[], during: [] as number[] };
  let phase: 'before' | 'during' | 'after' = 'before';
  let refused = 0;
  // The same storage; c's refusals are counted, not printed.
  const quiet: SyncContext = createContext({ ...three.options, onError: () => {} });
  for (const space of spaces) await push(quiet, space, 'g', 'increment', { key: 'n' });
  // A pusher per space, 20 ms between pushes (a busy client, not a saturating one); c's spaces'
  // pushes fail while it is down, and wait 50 ms.
  const pushers = Promise.all(
    spaces.map(async (space, i) => {
      while (phase !== 'after') {
        const at = phase;
        try {
          const ms = await push(quiet, space, 'g', 'increment', { key: 'n' });
          if (homes[i] !== 'c') latencies[at].push(ms);
          await new Promise((resolve) => setTimeout(resolve, 20));
        } catch {
          next.set(`${space}/g`, next.get(`${space}/g`)! - 1);
          refused++;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    }),
  );
  progress('outage: pushes to 60 spaces with every server up…');
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  progress('outage: the same with server c stopped…');
  pgCtl(['stop', '-m', 'immediate', '-w']);
  phase = 'during';
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  phase = 'after';
  // c back first: a push to it under way ends once its client reconnects.
  pgCtl(['start', '-w', '-l', `${BASE}-c/log`, '-o', `-c listen_addresses=127.0.0.1 -p ${55483} -k ${BASE}-c -c fsync=off -c max_connections=200`]);
  await pushers;
  const on = `${spaces.length - homes.filter((home) => home === 'c').length} spaces of a and b`;
  const p95 = (list: number[]) => quantile(list, 0.95);
  rows.push({
    benchmark: `outage: push p95, ${on}, every server up`,
    value: p95(latencies.before),
    unit: 'ms',
    note: `${latencies.before.length} pushes; p50 ${quantile(latencies.before, 0.5).toFixed(1)} ms`,
  });
  rows.push({
    benchmark: `outage: push p95, ${on}, c down`,
    value: p95(latencies.during),
    unit: 'ms',
    note: `${latencies.during.length} pushes; p50 ${quantile(latencies.during, 0.5).toFixed(1)} ms; ${refused} pushes to c's spaces refused`,
  });
  rows.push({
    benchmark: 'outage: push p95, c down / every server up',
    value: p95(latencies.during) / p95(latencies.before),
    unit: 'x',
    note: '1 or below: a server down costs the others nothing (the pushes to c refused, the machine has less to do)',
  });
}

await Promise.all(clients.map((sql) => sql.end()));
console.log(`${startLine}\n\n${renderTable(rows)}`);
