/**
 * Pulls from a streaming standby at steady load: the share of pulls a standby serves, and pull
 * latency with and without it, on a real PostgreSQL primary and asynchronous standby on loopback
 * (test/support/standby.ts, which makes both, fsync off). Clients pull in a loop, each with its
 * last cookie, a few milliseconds apart, while writers push at a steady rate, so most pulls are
 * a change or two behind, as poked clients are. Rounds alternate between one store given the
 * standby and one without, on the same database; a last round pauses the standby's replay, to
 * show what a lagging standby costs (every pull waits `standbyWaitMs`, then the primary serves it).
 *
 * Run: `npm run bench:standby` (about a minute). Env: CLIENTS (64), WRITES (per second, 100),
 * SPACES (4), ROUND_MS (4000), ROUNDS (3 of each), WAIT_MS (50).
 * Not part of `npm test`. The table on stdout.
 */
import postgres from 'postgres';
import { handlePull, handlePush, type JSONValue, type Storage, createContext } from '../src/index.js';
import { postgresStorage, type PostgresStorage } from '../src/storage/postgres.js';
import { startStandbyPair } from '../test/support/standby.js';
import { machineLine } from './cpu.js';
import { median, quantile } from './measure.js';
import { type Row, renderTable } from './table.js';

const CLIENTS = Number(process.env.CLIENTS ?? 64);
const WRITES = Number(process.env.WRITES ?? 100);
const SPACES = Number(process.env.SPACES ?? 4);
const ROUND_MS = Number(process.env.ROUND_MS ?? 4_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WAIT_MS = Number(process.env.WAIT_MS ?? 50);
const THINK_MS = 5;
const json = { 'content-type': 'application/json' };
const startLine = machineLine();

const pair = await startStandbyPair();
const primary = postgres(pair.primary.url, { max: 10, fetch_types: false, onnotice: () => {} });
const standby = postgres(pair.standby.url, { max: 10, fetch_types: false, onnotice: () => {} });
const alone = postgresStorage(primary);
const withStandby = postgresStorage(primary, { standbys: [standby], standbyWaitMs: WAIT_MS });
const mutators = {
  put: async (tx: { set(key: string, value: JSONValue): Promise<void> }, { key, value }: { key: string; value: number }) => tx.set(key, value),
};
const space = (n: number) => `space-${n % SPACES}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One round of steady load on `storage`: each pull's latency, and the pushes done. */
async function round(storage: Storage): Promise<{ latencies: number[]; pushes: number }> {
  const ctx = createContext({ storage, mutators, space: (request) => new URL(request.url).searchParams.get('space') ?? '' });
  const end = Date.now() + ROUND_MS;
  const latencies: number[] = [];
  let pushes = 0;
  const writer = async (w: number) => {
    const group = `writer-${w}-${Date.now()}`;
    for (let id = 1; Date.now() < end; id++) {
      const started = Date.now();
      const body = {
        pushVersion: 1,
        clientGroupID: group,
        mutations: [{ clientID: `${group}c`, id, name: 'put', args: { key: `k${id % 500}`, value: id }, timestamp: 0 }],
        profileID: 'p',
        schemaVersion: '',
      };
      const response = await handlePush(new Request(`http://x/push?space=${space(w)}`, { method: 'POST', headers: json, body: JSON.stringify(body) }), ctx);
      if (response.status !== 200) throw new Error(`push ${response.status}: ${await response.text()}`);
      pushes++;
      // SPACES writers share WRITES a second.
      await sleep(Math.max(0, (1_000 * SPACES) / WRITES - (Date.now() - started)));
    }
  };
  const client = async (c: number) => {
    let cookie: JSONValue = null;
    const group = `client-${c}`;
    while (Date.now() < end) {
      const started = performance.now();
      const body = { pullVersion: 1, clientGroupID: group, cookie, profileID: 'p', schemaVersion: '' };
      const response = await handlePull(new Request(`http://x/pull?space=${space(c)}`, { method: 'POST', headers: json, body: JSON.stringify(body) }), ctx);
      const answer = (await response.json()) as { cookie: JSONValue };
      if (response.status !== 200) throw new Error(`pull ${response.status}: ${JSON.stringify(answer)}`);
      // The first pull of each round (a full one) is not a steady pull.
      if (cookie !== null) latencies.push(performance.now() - started);
      cookie = answer.cookie;
      await sleep(THINK_MS);
    }
  };
  await Promise.all([...Array.from({ length: SPACES }, (_, w) => writer(w)), ...Array.from({ length: CLIENTS }, (_, c) => client(c))]);
  return { latencies, pushes };
}

const results = { alone: [] as number[][], standby: [] as number[][] };
const shares: number[] = [];
const probesPerPull: number[] = [];
let waited = 0;
let served = 0;
try {
  await alone.migrate();
  await round(alone); // warm-up: spaces made, connections open
  for (let r = 0; r < ROUNDS; r++) {
    for (const which of r % 2 === 0 ? (['standby', 'alone'] as const) : (['alone', 'standby'] as const)) {
      const before = withStandby.standbyStats() ?? { standby: 0, primary: 0, waited: 0, probes: 0 };
      const { latencies } = await round(which === 'standby' ? withStandby : alone);
      results[which].push(latencies);
      if (which === 'standby') {
        const after = withStandby.standbyStats()!;
        const reads = after.standby - before.standby + (after.primary - before.primary);
        shares.push((after.standby - before.standby) / reads);
        probesPerPull.push((after.probes - before.probes) / latencies.length);
        waited += after.waited - before.waited;
        served += reads;
      }
    }
  }
  await pair.query(pair.standby, 'SELECT pg_wal_replay_pause()');
  const paused = await round(withStandby as PostgresStorage);
  await pair.query(pair.standby, 'SELECT pg_wal_replay_resume()');

  const all = (which: 'alone' | 'standby') => results[which].flat();
  const rows: Row[] = [];
  for (const which of ['alone', 'standby'] as const) {
    const latencies = all(which);
    const label = which === 'alone' ? 'primary only' : 'with a standby';
    rows.push(
      {
        benchmark: `${label}: pulls a second`,
        value: latencies.length / ((ROUNDS * ROUND_MS) / 1_000),
        unit: 'pulls/s',
        note: `${CLIENTS} clients, ${THINK_MS} ms apart`,
      },
      { benchmark: `${label}: pull latency p50`, value: median(latencies), unit: 'ms' },
      { benchmark: `${label}: pull latency p99`, value: quantile(latencies, 0.99), unit: 'ms' },
    );
  }
  rows.push(
    {
      benchmark: 'with a standby: share of reads it served',
      value: 100 * median(shares),
      unit: '%',
      note: `median of ${ROUNDS} rounds (lowest ${(100 * Math.min(...shares)).toFixed(1)}%)`,
    },
    { benchmark: 'with a standby: probes of the primary per pull', value: median(probesPerPull), unit: '', note: 'one small statement per batch of reads' },
    { benchmark: 'with a standby: reads that waited for it', value: (100 * waited) / served, unit: '%', note: 'standby behind the probe at first poll' },
    {
      benchmark: `standby replay paused: pull latency p50`,
      value: median(paused.latencies),
      unit: 'ms',
      note: `each read waits ${WAIT_MS} ms, then the primary`,
    },
  );
  console.log(
    `\nviewsync pulls from a streaming standby: ${CLIENTS} clients pulling, ${WRITES} pushes a second over ${SPACES} spaces, ${ROUNDS} rounds of ${ROUND_MS / 1_000} s each way, alternating`,
  );
  console.log(`at start: ${startLine}`);
  console.log(`at end:   ${machineLine()}`);
  console.log(`\n${renderTable(rows)}`);
} finally {
  await primary.end({ timeout: 1 });
  await standby.end({ timeout: 1 });
  await pair.stop();
}
