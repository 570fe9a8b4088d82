/**
 * Store benchmark: the protocol's own load over HTTP, through the Node adapter, on PostgreSQL
 * (a real server) and SQLite, against baselines measured in the same run on the same database:
 * `pgbench -N` for PostgreSQL, a bare better-sqlite3 insert loop for SQLite, and the memory store
 * over the same HTTP path for full pulls.
 *
 * Pushes: 1, 8 and 32 concurrent clients, each its own client group pushing one push at a time as
 * the real client does (`increment` mutations on a key of its own), all in one space or spread
 * over 8; batches of 1 and 10 mutations. Pulls: up to date, after 10 changes, and full, in spaces
 * of 1k and 100k entries; the server's peak memory while it streams the full pull.
 *
 * Run: `npm run bench:stores` (a few minutes; starts a throwaway PostgreSQL with
 * scripts/start-postgres.sh unless DATABASE_URL is set). `SECONDS` sets each push run's length
 * (default 5). Not part of `npm test`. Progress on stderr, tables on stdout.
 */
import { execFileSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { median, progress } from './measure.js';
import { startStoreServer, type StoreServer } from './poke-clients.js';

const root = new URL('..', import.meta.url).pathname;
const SECONDS = Number(process.env.SECONDS ?? 5);
const url = process.env.DATABASE_URL ?? execFileSync(join(root, 'scripts/start-postgres.sh'), { encoding: 'utf8' }).trim();
const admin = postgres(url, { onnotice: () => {}, max: 2 });
const dir = mkdtempSync(join(tmpdir(), 'viewsync-bench-'));
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

type Server = StoreServer;

/** Starts bench/store-server.ts for `kind` in a process of its own, on this run's database. */
function startServer(kind: string, where?: string): Promise<Server> {
  return startStoreServer(kind, where, { DATABASE_URL: url });
}

/** POSTs JSON over a kept-alive connection: the status and the body's byte length (and text, if asked). */
function post(port: number, path: string, body: unknown, keepText = false): Promise<{ status: number; bytes: number; text: string }> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
      (res) => {
        let bytes = 0;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => ((bytes += chunk.length), keepText && chunks.push(chunk)));
        res.on('end', () => resolve({ status: res.statusCode!, bytes, text: keepText ? Buffer.concat(chunks).toString('utf8') : '' }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

const pushBody = (group: string, client: string, from: number, mutations: Array<{ name: string; args: unknown }>) => ({
  pushVersion: 1,
  clientGroupID: group,
  profileID: 'bench',
  schemaVersion: '',
  mutations: mutations.map((m, i) => ({ clientID: client, id: from + i, name: m.name, args: m.args, timestamp: 0 })),
});
const pullBody = (group: string, cookie: unknown) => ({ pullVersion: 1, clientGroupID: group, cookie, profileID: 'bench', schemaVersion: '' });

let runID = 0;

/** `clients` clients each push for SECONDS s, one push at a time: pushes/s and failed pushes. */
async function pushRun(server: Server, clients: number, spaces: number, batch: number): Promise<{ pushesPerSecond: number; failed: number }> {
  const run = ++runID;
  const until = performance.now() + SECONDS * 1000;
  let pushes = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      const space = `run${run}-space${c % spaces}`;
      let next = 1;
      while (performance.now() < until) {
        const mutations = Array.from({ length: batch }, () => ({ name: 'increment', args: { key: `counter/${c}` } }));
        const { status } = await post(server.port, `/push?space=${space}`, pushBody(`g${run}-${c}`, `c${run}-${c}`, next, mutations));
        if (status === 200) {
          pushes++;
          next += batch;
        } else failed++;
      }
    }),
  );
  return { pushesPerSecond: pushes / SECONDS, failed };
}

/** Fills `space` with `entries` rows, 1,000 a push. */
async function seed(server: Server, space: string, entries: number): Promise<void> {
  for (let from = 0, id = 1; from < entries; from += 1000, id++) {
    const { status } = await post(
      server.port,
      `/push?space=${space}`,
      pushBody(`seed-${space}`, `seed-${space}`, id, [{ name: 'seed', args: { from, count: Math.min(1000, entries - from) } }]),
    );
    if (status !== 200) throw new Error(`seeding ${space} failed: ${status}`);
  }
}

/** Median milliseconds of `times` runs of `fn`. */
async function timeIt(times: number, fn: () => Promise<unknown>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await fn();
    ms.push(performance.now() - start);
  }
  return median(ms);
}

/** Peak resident memory of a process so far, in MiB (Linux). */
function peakMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

/** Pull timings in a space of `entries` rows: up to date, after 10 changes, full. */
async function pulls(server: Server, entries: number) {
  const space = `pulls-${entries}-${++runID}`;
  await seed(server, space, entries);
  const group = `puller-${space}`;
  const first = JSON.parse((await post(server.port, `/pull?space=${space}`, pullBody(group, null), true)).text) as { cookie: unknown };
  const upToDate = await timeIt(200, () => post(server.port, `/pull?space=${space}`, pullBody(group, first.cookie)));
  // After 10 changes: push 10 puts (untimed), then time the pull from the cookie before them.
  const afterChanges: number[] = [];
  let cookie = first.cookie;
  for (let round = 0, id = 1; round < 30; round++, id += 10) {
    const mutations = Array.from({ length: 10 }, (_, i) => ({
      name: 'put',
      args: { key: `item/${String(((round * 10 + i) * 7) % entries).padStart(8, '0')}`, value: { round } },
    }));
    await post(server.port, `/push?space=${space}`, pushBody(`changer-${space}`, `changer-${space}`, id, mutations));
    const start = performance.now();
    const answer = await post(server.port, `/pull?space=${space}`, pullBody(group, cookie), true);
    afterChanges.push(performance.now() - start);
    cookie = (JSON.parse(answer.text) as { cookie: unknown }).cookie;
  }
  const before = peakMiB(server.pid);
  const full = await timeIt(entries >= 100_000 ? 5 : 30, () => post(server.port, `/pull?space=${space}`, pullBody(group, null)));
  const bytes = (await post(server.port, `/pull?space=${space}`, pullBody(group, null))).bytes;
  return { upToDate, afterChanges: median(afterChanges), full, bytes, peakGrowthMiB: peakMiB(server.pid) - before };
}

/** pgbench -N on a database of its own: transactions per second. */
function pgbench(clients: number): number {
  const bench = url.replace(/\/[^/]*$/, '/pgbench');
  const output = execFileSync('pgbench', ['-N', '-c', String(clients), '-j', String(Math.min(clients, 2)), '-T', String(SECONDS), bench], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return Number(/tps = ([\d.]+)/.exec(output)![1]);
}

/** A bare better-sqlite3 insert loop, one row a transaction, WAL: transactions per second. */
function sqliteBaseline(): number {
  const db = new Database(join(dir, 'baseline.sqlite'));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)');
  const insert = db.prepare('INSERT INTO t VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v');
  const tx = db.transaction((i: number) => insert.run(`k${i % 1000}`, `{"n":${i}}`));
  const until = performance.now() + SECONDS * 1000;
  let n = 0;
  while (performance.now() < until) tx(n++);
  db.close();
  return n / SECONDS;
}

const rows: string[] = [];
const row = (...cells: Array<string | number>) =>
  rows.push(`| ${cells.map((c) => (typeof c === 'number' ? c.toLocaleString('en-US', { maximumFractionDigits: c < 10 ? 2 : 0 }) : c)).join(' | ')} |`);

try {
  progress('baselines: pgbench -N, better-sqlite3 inserts');
  try {
    await admin.unsafe('CREATE DATABASE pgbench');
  } catch {}
  execFileSync('pgbench', ['-i', '-s', '10', '-q', url.replace(/\/[^/]*$/, '/pgbench')], { stdio: 'ignore' });
  const pg1 = pgbench(1);
  const pg8 = pgbench(8);
  const pg32 = pgbench(32);
  const sqliteBare = sqliteBaseline();
  row('baseline', 'pgbench -N, 1 / 8 / 32 clients (TPS)', `${pg1.toFixed(0)} / ${pg8.toFixed(0)} / ${pg32.toFixed(0)}`, '');
  row('baseline', 'better-sqlite3, one upsert a transaction (TPS)', sqliteBare.toFixed(0), '');

  for (const [kind, where, baseline] of [
    ['postgres', `bench_${process.pid}`, pg1],
    ['sqlite', join(dir, 'sync.sqlite'), sqliteBare],
  ] as const) {
    const server = await startServer(kind, where);
    try {
      for (const batch of [1, 10]) {
        for (const [clients, spaces] of [
          [1, 1],
          [8, 1],
          [32, 1],
          [8, 8],
          [32, 8],
        ] as const) {
          progress(`${kind}: ${clients} clients, ${spaces} space(s), batch ${batch}`);
          const { pushesPerSecond, failed } = await pushRun(server, clients, spaces, batch);
          const vs = kind === 'postgres' ? (spaces === 8 ? pg8 : pg1) : baseline;
          row(
            kind,
            `push, batch ${batch}, ${clients} clients in ${spaces} space${spaces > 1 ? 's' : ''}`,
            `${pushesPerSecond.toFixed(0)} pushes/s (${(pushesPerSecond * batch).toFixed(0)} mutations/s), ${failed} failed`,
            `${(pushesPerSecond / vs).toFixed(2)}x ${kind === 'postgres' ? `pgbench -c ${spaces === 8 ? 8 : 1}` : 'bare inserts'}`,
          );
        }
      }
      for (const entries of [1_000, 100_000]) {
        progress(`${kind}: pulls at ${entries} entries`);
        const p = await pulls(server, entries);
        row(
          kind,
          `pull at ${entries.toLocaleString('en-US')} entries: up to date / after 10 changes / full`,
          `${p.upToDate.toFixed(2)} / ${p.afterChanges.toFixed(2)} / ${p.full.toFixed(1)} ms`,
          `full: ${(p.bytes / 2 ** 20).toFixed(1)} MiB, server peak +${p.peakGrowthMiB.toFixed(0)} MiB`,
        );
      }
    } finally {
      await server.stop();
    }
  }

  progress('memory: full pull at 100k over the same HTTP path');
  const memory = await startServer('memory');
  try {
    const p = await pulls(memory, 100_000);
    row(
      'memory',
      'pull at 100,000 entries: up to date / after 10 changes / full',
      `${p.upToDate.toFixed(2)} / ${p.afterChanges.toFixed(2)} / ${p.full.toFixed(1)} ms`,
      `full: ${(p.bytes / 2 ** 20).toFixed(1)} MiB`,
    );
  } finally {
    await memory.stop();
  }
} finally {
  await admin.unsafe(`DROP SCHEMA IF EXISTS bench_${process.pid} CASCADE`).catch(() => {});
  await admin.end();
  agent.destroy();
  rmSync(dir, { recursive: true, force: true });
}

console.log(`\nviewsync store benchmark: node ${process.version}, ${SECONDS} s a push run\n`);
console.log('| store | benchmark | result | against |');
console.log('|---|---|---|---|');
for (const line of rows) console.log(line);
