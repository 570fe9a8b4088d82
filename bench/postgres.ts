/**
 * PostgreSQL benchmark (issue 23): each figure against a baseline measured in the same run.
 *
 * 1. Full pull of 100k entries, PostgreSQL against the memory store, over the same HTTP path
 *    (bench/store-server.ts, Node adapter), and the server's peak memory while it answers.
 * 2. Pulls on PostgreSQL, up to date and 10 changes behind: as they read now (one statement,
 *    `readMany`) against each pull in a transaction of its own (as before), same server, same space.
 * 3. Commit-to-poke across two instances on PostgreSQL: two server processes on one schema with
 *    `postgresNotifier`; a push to A is timed until B's poke stream (Server-Sent Events, raw
 *    socket) has its poke. Also from the push's answer, and the push's own round trip.
 * 4. Pushes to one space, 32 clients, batch 1, against `pgbench -N -c 1` on the same server.
 *
 * The poke storm has its own benchmark (`npm run bench:pokes`), as has the Node door
 * (`npm run bench:http`). Run: `npm run bench:postgres` (about three minutes; starts a throwaway
 * PostgreSQL with scripts/start-postgres.sh unless DATABASE_URL is set). Env: SECONDS (5) per
 * push run, POKES (200), ONLY (some of full, pulls, pokes, pushes). Not part of `npm test`. Progress on stderr, the table on stdout.
 */
import { execFileSync } from 'node:child_process';
import { Agent } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { machineLine } from './cpu.js';
import { median, progress, quantile } from './measure.js';
import { openPokeStream, postJSON, type StoreServer, startStoreServer } from './poke-clients.js';
import { type Row, renderTable } from './table.js';

const root = new URL('..', import.meta.url).pathname;
const SECONDS = Number(process.env.SECONDS ?? 5);
const POKES = Number(process.env.POKES ?? 200);
const url = process.env.DATABASE_URL ?? execFileSync(join(root, 'scripts/start-postgres.sh'), { encoding: 'utf8' }).trim();
const admin = postgres(url, { onnotice: () => {}, max: 2 });
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const schema = `bench_pg_${process.pid}`;
const rows: Row[] = [];
const startLine = machineLine();
/** The next mutation ID of each client, by server, space and group. */
const nextID = new Map<string, number>();

function push(server: StoreServer, space: string, group: string, mutations: Array<{ name: string; args: unknown }>): Promise<string> {
  const client = `${server.port}/${space}/${group}`;
  const first = nextID.get(client) ?? 1;
  nextID.set(client, first + mutations.length);
  return postJSON(agent, server.port, `/push?space=${space}`, {
    pushVersion: 1,
    clientGroupID: group,
    profileID: 'bench',
    schemaVersion: '',
    mutations: mutations.map((m, i) => ({ clientID: `${group}-client`, id: first + i, name: m.name, args: m.args, timestamp: 0 })),
  });
}
const pull = (port: number, space: string, group: string, cookie: unknown) =>
  postJSON(agent, port, `/pull?space=${space}`, { pullVersion: 1, clientGroupID: group, cookie, profileID: 'bench', schemaVersion: '' });
const cookieOf = (text: string) => (JSON.parse(text) as { cookie: unknown }).cookie;
const ms = (x: number) => x.toFixed(x < 10 ? 2 : 0);

/** Peak resident memory of a process so far, in MiB (Linux). */
function peakMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

/** Fills `space` with `entries` rows, 1,000 a push. */
async function seed(server: StoreServer, space: string, entries: number): Promise<void> {
  for (let from = 0; from < entries; from += 1000)
    await push(server, space, 'seeder', [{ name: 'seed', args: { from, count: Math.min(1000, entries - from) } }]);
}

/** Milliseconds each of `times` runs of `fn` took. */
async function times(count: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await fn();
    out.push(performance.now() - start);
  }
  return out;
}

async function fullPulls(): Promise<void> {
  progress('full pulls: seeding 100k entries in PostgreSQL and in memory');
  const [pg, memory] = [await startStoreServer('postgres', schema, { DATABASE_URL: url }), await startStoreServer('memory', undefined, {})];
  try {
    for (const server of [pg, memory]) await seed(server, 'full', 100_000);
    const check = (text: string) => {
      const puts = (JSON.parse(text) as { patch: unknown[] }).patch.length - 1;
      if (puts !== 100_000) throw new Error(`a full pull answered ${puts} entries`);
    };
    check(await pull(pg.port, 'full', 'reader', null));
    check(await pull(memory.port, 'full', 'reader', null));
    const before = { pg: peakMiB(pg.pid), memory: peakMiB(memory.pid) };
    // Alternating, so that drift in the machine's load falls on both alike.
    const pgTimes: number[] = [];
    const memoryTimes: number[] = [];
    for (let round = 0; round < 7; round++) {
      pgTimes.push(...(await times(1, () => pull(pg.port, 'full', 'reader', null))));
      memoryTimes.push(...(await times(1, () => pull(memory.port, 'full', 'reader', null))));
    }
    const ratios = pgTimes.map((t, i) => t / memoryTimes[i]!);
    rows.push(
      {
        benchmark: 'full pull, 100,000 entries (10 MiB): PostgreSQL',
        value: median(pgTimes),
        unit: 'ms',
        note: `server peak +${(peakMiB(pg.pid) - before.pg).toFixed(0)} MiB over a warm full pull`,
      },
      {
        benchmark: 'full pull, 100,000 entries: memory store, same HTTP path',
        value: median(memoryTimes),
        unit: 'ms',
        note: `server peak +${(peakMiB(memory.pid) - before.memory).toFixed(0)} MiB`,
      },
      {
        benchmark: 'full pull: PostgreSQL / memory',
        value: median(ratios),
        unit: 'x',
        note: `median of 7 alternating rounds' ratios (aim: <= 1.3x); range ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}`,
      },
    );
  } finally {
    await Promise.all([pg.stop(), memory.stop()]);
  }
}

async function pullLatency(): Promise<void> {
  progress('pull latency: up to date and 10 changes behind, planned against a transaction each');
  const server = await startStoreServer('postgres', schema, { DATABASE_URL: url });
  try {
    await seed(server, 'pulls', 1_000);
    const planned = { up: [] as number[], behind: [] as number[] };
    const alone = { up: [] as number[], behind: [] as number[] };
    let cookie = cookieOf(await pull(server.port, 'pulls', 'reader', null));
    for (let round = 0; round < 200; round++) {
      for (const [port, into] of [
        [server.port, planned],
        [server.alonePort, alone],
      ] as const) {
        into.up.push(...(await times(1, () => pull(port, 'pulls', 'reader', cookie))));
      }
      // Ten changes, then the same pull from the cookie before them on each path.
      await push(
        server,
        'pulls',
        'writer',
        Array.from({ length: 10 }, (_, i) => ({ name: 'put', args: { key: `item/${String((round * 10 + i) % 1000).padStart(8, '0')}`, value: { round } } })),
      );
      for (const [port, into] of [
        [server.port, planned],
        [server.alonePort, alone],
      ] as const) {
        into.behind.push(...(await times(1, () => pull(port, 'pulls', 'reader', cookie))));
      }
      cookie = cookieOf(await pull(server.port, 'pulls', 'reader', cookie));
    }
    for (const [label, key] of [
      ['up to date', 'up'],
      ['10 changes behind', 'behind'],
    ] as const) {
      rows.push(
        {
          benchmark: `pull ${label}, PostgreSQL: one statement (readMany)`,
          value: median(planned[key]),
          unit: 'ms',
          note: `p95 ${ms(quantile(planned[key], 0.95))} ms, over HTTP`,
        },
        {
          benchmark: `pull ${label}, PostgreSQL: a transaction each (as before)`,
          value: median(alone[key]),
          unit: 'ms',
          note: `p95 ${ms(quantile(alone[key], 0.95))} ms; planned / this ${(median(planned[key]) / median(alone[key])).toFixed(2)}x`,
        },
      );
    }
  } finally {
    await server.stop();
  }
}

async function crossInstancePokes(): Promise<void> {
  progress(`commit-to-poke: ${POKES} pushes to instance A, each until B's poke stream has it`);
  const env = { DATABASE_URL: url, NOTIFIER: 'postgres' };
  const [a, b] = [await startStoreServer('postgres', schema, env), await startStoreServer('postgres', schema, env)];
  let poked: (() => void) | undefined;
  const stream = await openPokeStream(b.port, '/poke?space=pokes', { onPoke: () => poked?.(), onLost: (error) => console.error(error) });
  try {
    const fromSent: number[] = [];
    const fromAnswer: number[] = [];
    const pushMs: number[] = [];
    for (let i = 0; i < POKES + 20; i++) {
      const arrived = new Promise<number>((resolve) => (poked = () => resolve(performance.now())));
      const sent = performance.now();
      await push(a, 'pokes', 'pusher', [{ name: 'put', args: { key: 'k', value: i } }]);
      const answered = performance.now();
      const at = await arrived;
      if (i >= 20) fromSent.push(at - sent), fromAnswer.push(at - answered), pushMs.push(answered - sent);
      // Past the hub's coalescing window (50 ms), so each push pokes at once.
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    rows.push(
      {
        benchmark: 'commit-to-poke across two instances, PostgreSQL LISTEN/NOTIFY: push sent -> poke on B, p50',
        value: median(fromSent),
        unit: 'ms',
        note: `p95 ${ms(quantile(fromSent, 0.95))}, max ${ms(quantile(fromSent, 1))} ms (aim: p50 <= 5, p95 <= 20)`,
      },
      {
        benchmark: '... of which the push round trip to A (commit included), p50',
        value: median(pushMs),
        unit: 'ms',
        note: `p95 ${ms(quantile(pushMs, 0.95))} ms`,
      },
      {
        benchmark: '... and from the push answered -> poke on B, p50',
        value: median(fromAnswer),
        unit: 'ms',
        note: `p95 ${ms(quantile(fromAnswer, 0.95))} ms (negative: the poke came before the answer)`,
      },
    );
  } finally {
    stream.close();
    await Promise.all([a.stop(), b.stop()]);
  }
}

async function pushes(): Promise<void> {
  progress('pushes: pgbench -N -c 1, then 32 clients in one space, batch 1');
  try {
    await admin.unsafe('CREATE DATABASE pgbench');
  } catch {}
  const pgbenchURL = url.replace(/\/[^/]*$/, '/pgbench');
  execFileSync('pgbench', ['-i', '-s', '10', '-q', pgbenchURL], { stdio: 'ignore' });
  const baseline = Number(
    /tps = ([\d.]+)/.exec(
      execFileSync('pgbench', ['-N', '-c', '1', '-T', String(SECONDS), pgbenchURL], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
    )![1],
  );
  const server = await startStoreServer('postgres', schema, { DATABASE_URL: url });
  try {
    const until = performance.now() + SECONDS * 1000;
    let done = 0;
    await Promise.all(
      Array.from({ length: 32 }, async (_, c) => {
        while (performance.now() < until) {
          await push(server, 'pushes', `g${c}`, [{ name: 'increment', args: { key: `counter/${c}` } }]);
          done++;
        }
      }),
    );
    const rate = done / SECONDS;
    rows.push(
      { benchmark: 'baseline: pgbench -N -c 1 on the same server', value: baseline, unit: 'TPS', note: '' },
      {
        benchmark: 'pushes, one space, 32 clients, batch 1',
        value: rate,
        unit: 'pushes/s',
        note: `${(rate / baseline).toFixed(2)}x pgbench -N -c 1 (aim: >= 3x); load generator in the same 2-core machine`,
      },
    );
  } finally {
    await server.stop();
  }
}

// ONLY=pulls,pokes runs those parts alone.
const parts = { full: fullPulls, pulls: pullLatency, pokes: crossInstancePokes, pushes };
const only = process.env.ONLY?.split(',');
try {
  for (const [name, part] of Object.entries(parts)) if (only === undefined || only.includes(name)) await part();
} finally {
  await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
  await admin.end();
  agent.destroy();
}
console.log(`\nviewsync PostgreSQL benchmark: ${SECONDS} s push runs, ${POKES} pokes`);
console.log(`at start: ${startLine}`);
console.log(`at end:   ${machineLine()}`);
console.log(`\n${renderTable(rows)}`);
