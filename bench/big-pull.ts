/**
 * Full pulls of big spaces: the server's time and its extra memory for one full pull, on each
 * store, through the Node adapter, uncompressed and br-encoded, against the memory store in the
 * same run. The server runs in a process of its own (bench/store-server.ts); its resident memory
 * is sampled every few milliseconds while the pull is read, and its growth over the resident
 * memory just before is what the pull cost.
 *
 * Run: `npm run bench:big-pull` (ENTRIES=100000,1000000 by default, STORES=memory,sqlite,postgres;
 * starts a throwaway PostgreSQL with scripts/start-postgres.sh unless DATABASE_URL is set).
 * `SERVER_ROOT=/path/to/other/checkout/` serves from another checkout of viewsync (a "before").
 * Not part of `npm test`. Progress on stderr, a table on stdout.
 *
 * "driver alone" is the floor a store over a driver cannot go under: the same rows read by the
 * driver with nothing else (better-sqlite3 in array mode, postgres.js), a page of 4,096 at a
 * time as a full pull reads them, in this process, timed in the same rounds.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { median, progress } from './measure.js';
import { startStoreServer, type StoreServer } from './poke-clients.js';

const root = new URL('..', import.meta.url).pathname;
const ENTRIES = (process.env.ENTRIES ?? '100000,1000000').split(',').map(Number);
const STORES = (process.env.STORES ?? 'memory,sqlite,postgres').split(',');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const url = STORES.includes('postgres') ? (process.env.DATABASE_URL ?? execFileSync(join(root, 'scripts/start-postgres.sh'), { encoding: 'utf8' }).trim()) : '';
const admin = url === '' ? undefined : postgres(url, { onnotice: () => {}, max: 1 });
const dir = mkdtempSync(join(tmpdir(), 'viewsync-big-pull-'));
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** POSTs JSON; resolves with the status and the byte length of the answer as it came (encoded). */
function post(port: number, path: string, body: unknown, encoding = 'identity'): Promise<{ status: number; bytes: number }> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), 'accept-encoding': encoding };
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode!, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(data);
  });
}

const pullBody = (group: string) => ({ pullVersion: 1, clientGroupID: group, cookie: null, profileID: 'bench', schemaVersion: '' });

async function seed(server: StoreServer, space: string, entries: number): Promise<void> {
  const step = 5_000;
  for (let from = 0, id = 1; from < entries; from += step, id++) {
    const mutations = [{ clientID: 'seeder', id, name: 'seed', args: { from, count: Math.min(step, entries - from) }, timestamp: 0 }];
    const { status } = await post(server.port, `/push?space=${space}`, {
      pushVersion: 1,
      clientGroupID: 'seed',
      profileID: 'bench',
      schemaVersion: '',
      mutations,
    });
    if (status !== 200) throw new Error(`seeding ${space} failed: ${status}`);
  }
}

/** A process's resident memory now, in MiB (Linux). */
function residentMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

/** One full pull: its time, the bytes sent, and the server's resident memory at most over before. */
async function fullPull(server: StoreServer, space: string, encoding: string) {
  const before = residentMiB(server.pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, residentMiB(server.pid))), 5);
  const start = performance.now();
  const { status, bytes } = await post(server.port, `/pull?space=${space}`, pullBody(`puller-${Math.random()}`), encoding);
  const ms = performance.now() - start;
  clearInterval(sampler);
  if (status !== 200) throw new Error(`pull failed: ${status}`);
  return { ms, bytes, grew: Math.max(peak, residentMiB(server.pid)) - before };
}

/**
 * Milliseconds the driver alone takes to read `space`'s entry rows, a page of {@link PAGE} at a
 * time from the last key on (see "driver alone" above); undefined for the memory store.
 */
async function driverAlone(kind: string, where: string | undefined, space: string): Promise<number | undefined> {
  const [from, to] = [`e/${space}/`, `e/${space}0`];
  if (kind === 'sqlite') {
    const db = new Database(where!, { readonly: true });
    const page = db.prepare(`SELECT key, value FROM viewsync_kv WHERE key > ? AND key < ? ORDER BY key LIMIT ${PAGE}`).raw(true);
    try {
      return await timePages(async (after) => (page.all(after, to) as string[][]).map((row) => row[0]!), from);
    } finally {
      db.close();
    }
  }
  if (kind === 'postgres') {
    const query = `SELECT key, value FROM "${where}".viewsync_kv WHERE key > $1 AND key < $2 ORDER BY key LIMIT ${PAGE}`;
    return timePages(async (after) => (await admin!.unsafe(query, [after, to])).map((row) => row.key as string), from);
  }
  return undefined;
}

/** Milliseconds to read every page, each after the last key of the one before, from `from`. */
async function timePages(keysAfter: (after: string) => Promise<string[]>, from: string): Promise<number> {
  const start = performance.now();
  for (let after = from; ; ) {
    const keys = await keysAfter(after);
    if (keys.length < PAGE) return performance.now() - start;
    after = keys[keys.length - 1]!;
  }
}
const PAGE = 4096;

const rows: string[][] = [['store', 'entries', 'encoding', 'full pull (median)', 'x memory', 'driver alone (x memory)', 'sent', 'server RSS growth (max)']];
const memoryTimes = new Map<string, number>();
try {
  for (const entries of ENTRIES) {
    for (const kind of STORES) {
      const where = kind === 'sqlite' ? join(dir, `${entries}.db`) : kind === 'postgres' ? `big_pull_${process.pid}_${entries}` : undefined;
      const server = await startStoreServer(kind, where, { DATABASE_URL: url });
      try {
        const space = `big-${entries}`;
        progress(`${kind}: seeding ${entries.toLocaleString('en-US')} entries`);
        await seed(server, space, entries);
        for (const encoding of ['identity', 'br']) {
          progress(`${kind} ${entries}: full pulls, ${encoding}`);
          await fullPull(server, space, encoding); // warm up
          const runs = [];
          const alone: number[] = [];
          for (let round = 0; round < ROUNDS; round++) {
            runs.push(await fullPull(server, space, encoding));
            const ms = await driverAlone(kind, where, space);
            if (ms !== undefined) alone.push(ms);
          }
          const ms = median(runs.map((run) => run.ms));
          if (kind === 'memory') memoryTimes.set(`${entries} ${encoding}`, ms);
          const base = memoryTimes.get(`${entries} ${encoding}`);
          const floor = alone.length === 0 ? '' : `${median(alone).toFixed(0)} ms${base === undefined ? '' : ` (${(median(alone) / base).toFixed(2)}x)`}`;
          rows.push([
            kind,
            entries.toLocaleString('en-US'),
            encoding,
            `${ms.toFixed(0)} ms`,
            base === undefined ? '' : `${(ms / base).toFixed(2)}x`,
            floor,
            `${(runs[0]!.bytes / 2 ** 20).toFixed(1)} MiB`,
            `${Math.max(...runs.map((run) => run.grew)).toFixed(0)} MiB`,
          ]);
        }
      } finally {
        await server.stop();
        if (kind === 'postgres') await admin!.unsafe(`DROP SCHEMA IF EXISTS "${where}" CASCADE`);
      }
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  agent.destroy();
  await admin?.end();
}
console.log(rows.map((row) => `| ${row.join(' | ')} |`).join('\n'));
