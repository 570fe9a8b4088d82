/**
 * A first sync in the order the app chooses (`firstSync.order`), with the stock client: a space
 * shaped like Rocicorp's repliear (11,508 `issue/` entries, as many `description/`s, 5,688
 * `comment/`s and a `control/` key; about 17 MiB of JSON), served by three store servers
 * (bench/store-server.ts, each its own process and store): one big pull (no `firstSync`, the
 * baseline), pages in key order, and pages with `order: ['issue/', 'description/']`. The real
 * `replicache` client and `connectPokes` (Node, fake-indexeddb, in this process) sync it from
 * nothing, the arms in turn, rotated each round. For each: when the client first held every
 * issue (what the issue list shows), and when it held the whole space.
 *
 * Run: `npm run bench:first-sync-order` (ROUNDS, default 3; STORE=sqlite|memory|postgres;
 * PAGE_BYTES, default 4 MiB). Not part of `npm test`. Progress on stderr, results on stdout.
 */
import 'fake-indexeddb/auto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Replicache, TEST_LICENSE_KEY } from 'replicache';
import { connectPokes } from '../src/client/index.js';
import { median, progress } from './measure.js';
import { startStoreServer, type StoreServer } from './poke-clients.js';

const ISSUES = 11_508;
const COMMENTS = 5_688;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const STORE = process.env.STORE ?? 'sqlite';
const PAGE_BYTES = String(process.env.PAGE_BYTES ?? 4 * 2 ** 20);
const ORDER = 'issue/,description/';
const dir = mkdtempSync(join(tmpdir(), 'viewsync-first-sync-order-'));
const space = 'repliear';

/** A repeatable stream of numbers in [0, 1). */
function random(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

/** The space, repliear's shapes with made-up text: issues hold what the list shows, descriptions and comments the rest. */
function repliear(): Array<[string, unknown]> {
  const next = random(50);
  const text = (length: number) =>
    Array.from({ length: Math.ceil(length / 8) }, () => next().toString(36).slice(2, 9))
      .join(' ')
      .slice(0, length);
  const id = (i: number) => i.toString(36).padStart(6, '0');
  const entries: Array<[string, unknown]> = [['control/version', { version: 1 }]];
  for (let i = 0; i < ISSUES; i++) {
    entries.push([
      `issue/${id(i)}`,
      {
        id: id(i),
        title: text(40 + next() * 60),
        priority: Math.floor(next() * 5),
        status: Math.floor(next() * 5),
        modified: 1_600_000_000_000 + i,
        created: 1_600_000_000_000 + i,
        creator: text(12),
        kanbanOrder: text(8),
      },
    ]);
    entries.push([`description/${id(i)}`, { id: id(i), body: text(100 + next() * 1_800) }]);
  }
  for (let i = 0; i < COMMENTS; i++)
    entries.push([
      `comment/${id(i)}`,
      { id: id(i), issueID: id(Math.floor(next() * ISSUES)), created: 1_600_000_000_000 + i, body: text(100 + next() * 500), creator: text(12) },
    ]);
  return entries;
}

interface Run {
  issuesMs: number;
  allMs: number;
}

/** Syncs the space from nothing with a new client; resolves with when it first held every issue, and every entry. */
async function sync(port: number, total: number): Promise<Run> {
  const base = `http://127.0.0.1:${port}`;
  const start = performance.now();
  const rep = new Replicache({
    name: `order-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`,
    licenseKey: TEST_LICENSE_KEY,
    pullURL: `${base}/pull?space=${space}`,
    pushURL: `${base}/push?space=${space}`,
    pullInterval: null,
    mutators: {},
  });
  const pokes = connectPokes(rep, `${base}/poke?space=${space}`);
  const run: Partial<Run> = {};
  await new Promise<void>((resolve) => {
    rep.subscribe(async (tx) => [(await tx.scan({ prefix: 'issue/' }).keys().toArray()).length, (await tx.scan().keys().toArray()).length] as const, {
      onData: ([issues, all]) => {
        const now = Math.round(performance.now() - start);
        if (issues === ISSUES) run.issuesMs ??= now;
        if (all === total) {
          run.allMs ??= now;
          resolve();
        }
      },
    });
  });
  pokes.close();
  await rep.close();
  return run as Run;
}

const ARMS = [
  ['one big pull', {}],
  ['pages, key order', { FIRST_SYNC_PAGE_BYTES: PAGE_BYTES }],
  ['pages, order issue/ then description/', { FIRST_SYNC_PAGE_BYTES: PAGE_BYTES, FIRST_SYNC_ORDER: ORDER }],
] as const;
const servers: StoreServer[] = [];
// Stopped early: the servers are this run's children, to stop with it.
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void Promise.all(servers.map((server) => server.stop())).then(() => process.exit(1)));
try {
  const entries = repliear();
  const bytes = JSON.stringify(entries.map(([key, value]) => ({ op: 'put', key, value }))).length;
  progress(`${entries.length.toLocaleString('en-US')} entries, ${(bytes / 2 ** 20).toFixed(1)} MiB of patch JSON (${STORE})`);
  for (const [i, [, env]] of ARMS.entries()) {
    const server = await startStoreServer(
      STORE,
      STORE === 'sqlite' ? join(dir, `arm-${i}.db`) : STORE === 'postgres' ? `first_sync_order_${process.pid}_${i}` : undefined,
      { ...env, ...(process.env.DATABASE_URL && { DATABASE_URL: process.env.DATABASE_URL }) },
    );
    servers.push(server);
    for (let from = 0, id = 1; from < entries.length; from += 2_000, id++) {
      const mutations = [{ clientID: 'seeder', id, name: 'putMany', args: entries.slice(from, from + 2_000), timestamp: 0 }];
      const response = await fetch(`http://127.0.0.1:${server.port}/push?space=${space}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ pushVersion: 1, clientGroupID: 'seed', profileID: 'bench', schemaVersion: '', mutations }),
      });
      if (response.status !== 200) throw new Error(`seeding failed: ${response.status} ${await response.text()}`);
    }
  }
  const runs: Run[][] = ARMS.map(() => []);
  const loads: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < ARMS.length; k++) {
      const arm = (round + k) % ARMS.length;
      loads.push(loadavg()[0]!);
      const run = await sync(servers[arm]!.port, entries.length);
      progress(`round ${round + 1}, ${ARMS[arm]![0]}: issues ${run.issuesMs} ms, all ${run.allMs} ms`);
      runs[arm]!.push(run);
    }
  }
  const baseline = median(runs[0]!.map((run) => run.issuesMs));
  console.log(
    `${entries.length.toLocaleString('en-US')} entries, ${(bytes / 2 ** 20).toFixed(1)} MiB (${STORE}), pages of ${(Number(PAGE_BYTES) / 2 ** 20).toFixed(0)} MiB, ${ROUNDS} rounds, load average ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`,
  );
  for (const [arm, [name]] of ARMS.entries()) {
    const issues = runs[arm]!.map((run) => run.issuesMs);
    const all = runs[arm]!.map((run) => run.allMs);
    console.log(
      `${name}: every issue held at ${issues.join(' / ')} ms (median ${(median(issues) / baseline).toFixed(2)}x one big pull's), whole space at ${all.join(' / ')} ms`,
    );
  }
} finally {
  await Promise.all(servers.map((server) => server.stop()));
  rmSync(dir, { recursive: true, force: true });
}
