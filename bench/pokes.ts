/**
 * Poke-storm benchmark: one push in a space with 1,000 open poke streams makes 1,000 clients
 * pull at once. Timed from the push until every client has its pull answered, against two
 * baselines in the same run: the same 1,000 incremental pulls (same cookies, one change behind)
 * sent at once without a push, to the same server; the same again to the same store served
 * with `shareReads: false` (each pull reads alone, in one statement where it can); and again
 * without the store's `readMany` too (each pull in a transaction of its own: pulls as they read
 * before shared and planned reads). Each storm pull's
 * answer must be exactly the pushed change, so the storm cannot pass by answering nothing.
 *
 * The server (bench/store-server.ts, Node adapter) runs in a process of its own; the clients
 * share this one. Every client holds its poke stream on a socket of its own, as a browser's
 * EventSource does, and pulls through a kept-alive pool of PULL_SOCKETS connections (default:
 * one per client, as 1,000 browsers have; 200 looks like browsers behind one proxy).
 *
 * Also timed, after the storms: fan-out alone, from a push being sent until the last poke
 * arrives when the clients do not pull (FANOUTS rounds), its median and p99; and the server's memory per idle poke stream (RSS, and V8 heap plus memory
 * outside it, each after a full collection), from before the streams open to after, before any
 * pull.
 *
 * Run: `npm run bench:pokes` (a minute or two a store). Stores: memory and SQLite, and
 * PostgreSQL when DATABASE_URL is set (`export DATABASE_URL=$(scripts/start-postgres.sh)`).
 * Env: STORES, SUBSCRIBERS (1000), ENTRIES (1000), ROUNDS (5), WARMUP (1), PULL_SOCKETS,
 * BASELINES (shared,unshared,alone: which baselines run; `shared` alone saves time at many
 * thousands of subscribers).
 * Not part of `npm test`. Progress on stderr, the table on stdout.
 */
import { spawnSync } from 'node:child_process';
import { Agent } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import postgres from 'postgres';
import type { JSONValue } from '../src/index.js';
import { rowKey, rowValue } from './client.js';
import { type CPUSnapshot, cpuSnapshot, cpuSpent, machineLine, openFilesLimit } from './cpu.js';
import { median, progress, quantile } from './measure.js';
import { openPokeStream, type PokeStream, postJSON, type StoreServer, startStoreServer } from './poke-clients.js';
import { type Row, renderTable } from './table.js';

const env = process.env;
const SUBSCRIBERS = Number(env.SUBSCRIBERS ?? 1000);
const ENTRIES = Number(env.ENTRIES ?? 1000);
const ROUNDS = Number(env.ROUNDS ?? 5);
const WARMUP = Number(env.WARMUP ?? 1);
const PULL_SOCKETS = Number(env.PULL_SOCKETS ?? SUBSCRIBERS);
const STORES = (env.STORES ?? 'memory,sqlite,postgres').split(',').filter((kind) => kind !== 'postgres' || env.DATABASE_URL);
const FANOUTS = Number(env.FANOUTS ?? 20);
const BASELINES = new Set((env.BASELINES ?? 'shared,unshared,alone').split(','));
/** Each socket is a file; the server's process holds as many as this one, and inherits its limit. */
const FILES_NEEDED = SUBSCRIBERS + 3 * PULL_SOCKETS + 100;

raiseOpenFiles();
const startLine = machineLine();
const rows: Row[] = [];
const dir = mkdtempSync(join(tmpdir(), 'viewsync-pokes-'));
try {
  for (const kind of STORES) await benchStore(kind);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(
  `\nviewsync poke-storm benchmark: ${SUBSCRIBERS.toLocaleString('en-US')} subscribers of one space of ${ENTRIES.toLocaleString('en-US')} entries, one push; median of ${ROUNDS} rounds after ${WARMUP} warm-up`,
);
console.log(`clients in one process; poke streams on a socket each; pulls over a kept-alive pool of ${PULL_SOCKETS} sockets`);
console.log(`at start: ${startLine}`);
console.log(`at end:   ${machineLine()}`);
if (!env.DATABASE_URL) console.log('PostgreSQL skipped: set DATABASE_URL (export DATABASE_URL=$(scripts/start-postgres.sh))');
console.log(`\n${renderTable(rows)}`);

/** One client: its group, its cookie, and the one it held before the last push. */
interface Subscriber {
  group: string;
  cookie: JSONValue;
  /** One change behind the space: what the baseline pulls from. */
  behind: JSONValue;
  stream: PokeStream | undefined;
  poked: boolean;
}

/** The storm under way: what its pulls must answer, and how far it got. */
interface Storm {
  change: Change;
  pending: number;
  latencies: number[];
  lastPokeAt: number;
  lastAnswerAt: number;
  cookie: string | undefined;
  done(): void;
  fail(error: unknown): void;
}

interface Change {
  key: string;
  value: JSONValue;
}

/** One storm's timings, in ms from `performance.now()` differences. */
interface StormResult {
  /** From the push's answer to the last pull's. */
  fromPush: number;
  /** From the push being sent to the last pull's answer: the window. */
  fromSent: number;
  pushMs: number;
  /** From the push being sent to the last poke's arrival. */
  lastPoke: number;
  /** Each client's poke to its pull's answer. */
  latencies: number[];
  cpu: CPUSnapshot;
}

/** The server's memory for each idle poke stream, in bytes. */
interface StreamMemory {
  rss: number;
  /** V8's heap in use plus memory outside it (buffers). */
  heap: number;
}

/** One baseline's timings. */
interface BaselineResult {
  /** From the first pull sent to the last answered: the window. */
  total: number;
  latencies: number[];
  cpu: CPUSnapshot;
}

async function benchStore(kind: string): Promise<void> {
  const schema = `bench_pokes_${process.pid}`;
  const where = kind === 'sqlite' ? join(dir, 'pokes.sqlite') : kind === 'postgres' ? schema : undefined;
  // Clients keep their pull connections between rounds, as browsers do, so none is opened mid-storm.
  const server = await startStoreServer(kind, where, { KEEP_ALIVE_MS: '120000' });
  const pullAgent = new Agent({ keepAlive: true, maxSockets: PULL_SOCKETS, maxFreeSockets: PULL_SOCKETS });
  const pushAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const space = `pokes-${process.pid}`;
  const subscribers: Subscriber[] = Array.from({ length: SUBSCRIBERS }, (_, i) => ({
    group: `subscriber-${i}`,
    cookie: null,
    behind: null,
    stream: undefined,
    poked: false,
  }));
  let storm: Storm | undefined;
  let lost: Error | undefined;
  /** The fan-out round under way: subscribers not yet poked, and when the last poke came. */
  let fanout: { pending: number; lastPokeAt: number; done(): void } | undefined;
  let stray = 0;
  let mutationID = 0;
  let lastChange: Change | undefined;
  const push = (name: string, args: JSONValue) =>
    postJSON(pushAgent, server.port, `/push?space=${space}`, {
      pushVersion: 1,
      clientGroupID: 'pusher',
      profileID: 'bench',
      schemaVersion: '',
      mutations: [{ clientID: 'pusher-1', id: ++mutationID, name, args, timestamp: 0 }],
    });
  const pull = (sub: Subscriber, cookie: JSONValue, port = server.port) =>
    postJSON(pullAgent, port, `/pull?space=${space}`, { pullVersion: 1, clientGroupID: sub.group, cookie, profileID: 'bench', schemaVersion: '' });

  const onPoke = (sub: Subscriber) => {
    const pokedAt = performance.now();
    if (fanout !== undefined && !sub.poked) {
      sub.poked = true;
      fanout.lastPokeAt = pokedAt;
      if (--fanout.pending === 0) fanout.done();
      return;
    }
    const current = storm;
    if (current === undefined || sub.poked) return void stray++;
    sub.poked = true;
    current.lastPokeAt = pokedAt;
    pull(sub, sub.cookie)
      .then((text) => {
        const answeredAt = performance.now();
        const cookie = checkPull(text, current.change);
        if ((current.cookie ??= JSON.stringify(cookie)) !== JSON.stringify(cookie))
          throw new Error(`storm pulls answered different cookies: ${current.cookie} and ${JSON.stringify(cookie)}`);
        sub.cookie = cookie;
        current.latencies.push(answeredAt - pokedAt);
        current.lastAnswerAt = answeredAt;
        if (--current.pending === 0) current.done();
      })
      .catch(current.fail);
  };

  /** One push; resolves once every subscriber has its pull answered. */
  const runStorm = async (round: number): Promise<StormResult> => {
    const n = round % ENTRIES;
    const change = { key: rowKey(n), value: rowValue(n, round + 1) };
    for (const sub of subscribers) (sub.behind = sub.cookie), (sub.poked = false);
    let done!: () => void, fail!: (error: unknown) => void;
    const finished = new Promise<void>((resolve, reject) => ((done = resolve), (fail = reject)));
    const current: Storm = (storm = { change, pending: SUBSCRIBERS, latencies: [], lastPokeAt: 0, lastAnswerAt: 0, cookie: undefined, done, fail });
    const before = cpuSnapshot(server.pid, 'start');
    const sentAt = performance.now();
    await push('put', change as unknown as JSONValue);
    const pushedAt = performance.now();
    lastChange = change;
    await deadline(
      finished,
      () => `storm of round ${round}: ${SUBSCRIBERS - subscribers.filter((s) => s.poked).length} clients never poked, ${current.pending} pulls unanswered`,
    );
    storm = undefined;
    const cpu = cpuSpent(before, cpuSnapshot(server.pid, 'end'));
    if (lost) throw lost;
    return {
      fromPush: current.lastAnswerAt - pushedAt,
      fromSent: current.lastAnswerAt - sentAt,
      pushMs: pushedAt - sentAt,
      lastPoke: current.lastPokeAt - sentAt,
      latencies: current.latencies,
      cpu,
    };
  };

  /** One push that changes no subscriber's entries; resolves with ms from it being sent until every subscriber is poked. */
  const runFanout = async (): Promise<number> => {
    for (const sub of subscribers) sub.poked = false;
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    const current = (fanout = { pending: SUBSCRIBERS, lastPokeAt: 0, done });
    const sentAt = performance.now();
    await push('increment', { key: 'fanout' });
    await deadline(finished, () => `fan-out: ${current.pending} clients never poked`);
    fanout = undefined;
    if (lost) throw lost;
    return current.lastPokeAt - sentAt;
  };

  /** The same pulls, one change behind, all sent at once with no push, to `port`. */
  const runBaseline = async (port: number): Promise<BaselineResult> => {
    const change = lastChange!;
    const before = cpuSnapshot(server.pid, 'start');
    const sentAt = performance.now();
    let lastAnswerAt = 0;
    const latencies = await deadline(
      Promise.all(
        subscribers.map(async (sub) => {
          const start = performance.now();
          const text = await pull(sub, sub.behind, port);
          lastAnswerAt = performance.now();
          checkPull(text, change);
          return lastAnswerAt - start;
        }),
      ),
      () => 'baseline pulls',
    );
    const cpu = cpuSpent(before, cpuSnapshot(server.pid, 'end'));
    return { total: lastAnswerAt - sentAt, latencies, cpu };
  };

  const storms: StormResult[] = [];
  const baselines: BaselineResult[] = [];
  const unshared: BaselineResult[] = [];
  const alone: BaselineResult[] = [];
  const fanouts: number[] = [];
  let perStream: StreamMemory;
  try {
    progress(`${kind}: seeding ${ENTRIES} entries, opening ${SUBSCRIBERS} poke streams, a full pull each`);
    await push('seed', { from: 0, count: ENTRIES });
    const empty = await settledMemory(server);
    // A hundred at a time: a thousand connections at once overflow the server's listen backlog.
    // Every stream before any pull, as a real client opens its stream first, so no change
    // between the pull and the stream is missed; and so the memory between is the streams' alone.
    for (let from = 0; from < SUBSCRIBERS; from += 100) {
      await Promise.all(
        subscribers.slice(from, from + 100).map(async (sub) => {
          sub.stream = await openPokeStream(server.port, `/poke?space=${space}`, {
            onPoke: () => onPoke(sub),
            onLost: (error) => ((lost ??= error), storm?.fail(error)),
          });
        }),
      );
    }
    const idle = await settledMemory(server);
    perStream = { rss: (idle.rss - empty.rss) / SUBSCRIBERS, heap: (idle.heapUsed + idle.external - empty.heapUsed - empty.external) / SUBSCRIBERS };
    progress(`${kind}: ${(perStream.rss / 1024).toFixed(1)} KiB RSS, ${(perStream.heap / 1024).toFixed(1)} KiB heap and buffers per idle stream`);
    for (let from = 0; from < SUBSCRIBERS; from += 100) {
      await Promise.all(
        subscribers.slice(from, from + 100).map(async (sub) => {
          const full = JSON.parse(await pull(sub, null)) as { cookie: JSONValue; patch: Array<{ op: string }> };
          const puts = full.patch.filter((op) => op.op === 'put').length;
          if (puts !== ENTRIES) throw new Error(`a full pull answered ${puts} entries, not ${ENTRIES}`);
          sub.cookie = full.cookie;
        }),
      );
    }
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      // A baseline pulls from the cookies held before the last push, so round 0 starts with a
      // storm; then the order alternates, so that drift, or one warming the other's caches,
      // falls on both alike.
      const stormFirst = round % 2 === 0;
      const early = stormFirst ? await runStorm(round) : undefined;
      await pause();
      const b = await runBaseline(server.port);
      await pause();
      const u = BASELINES.has('unshared') ? await runBaseline(server.unsharedPort) : undefined;
      if (u) await pause();
      const a = BASELINES.has('alone') ? await runBaseline(server.alonePort) : undefined;
      if (a) await pause();
      const s = early ?? (await runStorm(round));
      if (!stormFirst) await pause();
      if (round < WARMUP) continue;
      storms.push(s);
      baselines.push(b);
      if (u) unshared.push(u);
      if (a) alone.push(a);
      const sockets = Object.values(pullAgent.freeSockets).reduce((n, list) => n + (list?.length ?? 0), 0);
      progress(
        `${kind} round ${round - WARMUP + 1}/${ROUNDS}: last poke ${s.lastPoke.toFixed(0)} ms from push sent, storm ${s.fromPush.toFixed(0)} ms from the push's answer, baseline ${b.total.toFixed(0)} ms, unshared ${u?.total.toFixed(0) ?? '-'} ms, alone ${a?.total.toFixed(0) ?? '-'} ms; ${sockets} pull sockets open`,
      );
    }
    // Last: a subscriber that is not pulled after a fan-out is a change behind, which a storm's check would refuse.
    for (let round = 0; round < WARMUP + FANOUTS; round++) {
      await pause();
      const took = await runFanout();
      if (round >= WARMUP) fanouts.push(took);
    }
    progress(`${kind}: fan-out ${fanouts.map((ms) => ms.toFixed(0)).join(', ')} ms`);
    if (stray > 0) throw new Error(`${stray} pokes came outside a storm or twice in one`);
  } finally {
    for (const sub of subscribers) sub.stream?.close();
    pullAgent.destroy();
    pushAgent.destroy();
    await server.stop();
    if (kind === 'postgres') {
      const admin = postgres(env.DATABASE_URL!, { onnotice: () => {}, max: 1 });
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
      await admin.end();
    }
  }
  report(kind, perStream, fanouts, storms, baselines, unshared, alone);
}

function report(
  kind: string,
  perStream: StreamMemory,
  fanouts: readonly number[],
  storms: readonly StormResult[],
  baselines: readonly BaselineResult[],
  unshared: readonly BaselineResult[],
  alone: readonly BaselineResult[],
): void {
  const m = <T>(xs: readonly T[], f: (x: T) => number) => median(xs.map(f));
  const ms = (x: number) => x.toFixed(x < 10 ? 1 : 0);
  const store = kind === 'postgres' ? 'PostgreSQL' : kind === 'sqlite' ? 'SQLite' : 'memory';
  const n = SUBSCRIBERS.toLocaleString('en-US');
  const cores = cpus().length;
  const cpuNote = (runs: ReadonlyArray<{ cpu: CPUSnapshot }>, window: number) =>
    `client ${ms(m(runs, (r) => r.cpu.client))} ms${kind === 'postgres' ? `, PostgreSQL ${ms(m(runs, (r) => r.cpu.postgres))} ms` : ''}; whole machine busy ${ms(m(runs, (r) => r.cpu.machineBusy))} of ${ms(window * cores)} ms (${cores} cores x window)`;
  rows.push(
    {
      benchmark: `${store}: fan-out, push sent -> last of ${n} pokes arrived, no pulls, p50`,
      value: median(fanouts),
      unit: 'ms',
      note: `p99 ${ms(quantile(fanouts, 0.99))} ms of ${fanouts.length} rounds${
        storms.length > 0
          ? `; in a storm (clients pulling) p50 ${ms(m(storms, (s) => s.lastPoke))}, p99 ${ms(
              quantile(
                storms.map((s) => s.lastPoke),
                0.99,
              ),
            )} ms`
          : ''
      }`,
    },
    {
      benchmark: `${store}: server memory per idle poke stream, RSS`,
      value: perStream.rss / 1024,
      unit: 'KiB',
      note: `V8 heap and buffers ${(perStream.heap / 1024).toFixed(1)} KiB; after a full collection, ${n} streams open, before any pull`,
    },
  );
  // Storms and baselines, where rounds ran (ROUNDS=0 measures fan-out and memory alone).
  if (storms.length > 0)
    rows.push(
      {
        benchmark: `${store}: storm, push answered -> all ${n} pulls answered`,
        value: m(storms, (s) => s.fromPush),
        unit: 'ms',
        note: `from push sent ${ms(m(storms, (s) => s.fromSent))} ms (push round trip ${ms(m(storms, (s) => s.pushMs))} ms); last poke in ${ms(m(storms, (s) => s.lastPoke))} ms from push sent`,
      },
      {
        benchmark: `${store}: storm, a client's poke -> its pull answered, p50`,
        value: m(storms, (s) => quantile(s.latencies, 0.5)),
        unit: 'ms',
        note: `p95 ${ms(m(storms, (s) => quantile(s.latencies, 0.95)))}, max ${ms(m(storms, (s) => quantile(s.latencies, 1)))} ms`,
      },
      {
        benchmark: `${store}: baseline, ${n} pulls sent at once -> all answered`,
        value: m(baselines, (b) => b.total),
        unit: 'ms',
        note: `per pull p50 ${ms(m(baselines, (b) => quantile(b.latencies, 0.5)))}, p95 ${ms(m(baselines, (b) => quantile(b.latencies, 0.95)))}, max ${ms(m(baselines, (b) => quantile(b.latencies, 1)))} ms`,
      },
      {
        benchmark: `${store}: storm / baseline (push answered)`,
        value: median(storms.map((s, i) => s.fromPush / baselines[i]!.total)),
        unit: 'x',
        note: `from push sent ${median(storms.map((s, i) => s.fromSent / baselines[i]!.total)).toFixed(2)}x; median of the rounds' ratios`,
      },
      {
        benchmark: `${store}: server CPU in a storm`,
        value: m(storms, (s) => s.cpu.server),
        unit: 'ms',
        note: cpuNote(
          storms,
          m(storms, (s) => s.fromSent),
        ),
      },
      {
        benchmark: `${store}: server CPU in a baseline`,
        value: m(baselines, (b) => b.cpu.server),
        unit: 'ms',
        note: cpuNote(
          baselines,
          m(baselines, (b) => b.total),
        ),
      },
    );
  // The slower baselines, where they ran (BASELINES).
  if (unshared.length > 0)
    rows.push(
      {
        benchmark: `${store}: baseline without sharing (shareReads: false), ${n} pulls at once -> all answered`,
        value: m(unshared, (b) => b.total),
        unit: 'ms',
        note: `per pull p50 ${ms(m(unshared, (b) => quantile(b.latencies, 0.5)))}, p95 ${ms(m(unshared, (b) => quantile(b.latencies, 0.95)))}, max ${ms(m(unshared, (b) => quantile(b.latencies, 1)))} ms`,
      },
      {
        benchmark: `${store}: storm / baseline without sharing (push answered)`,
        value: median(storms.map((s, i) => s.fromPush / unshared[i]!.total)),
        unit: 'x',
        note: `shared baseline / unshared ${median(baselines.map((b, i) => b.total / unshared[i]!.total)).toFixed(2)}x; median of the rounds' ratios`,
      },
      {
        benchmark: `${store}: server CPU in a baseline without sharing`,
        value: m(unshared, (b) => b.cpu.server),
        unit: 'ms',
        note: cpuNote(
          unshared,
          m(unshared, (b) => b.total),
        ),
      },
    );
  if (alone.length > 0)
    rows.push(
      {
        benchmark: `${store}: baseline, each pull in its own transaction (no sharing, no readMany), ${n} pulls at once -> all answered`,
        value: m(alone, (b) => b.total),
        unit: 'ms',
        note: `per pull p50 ${ms(m(alone, (b) => quantile(b.latencies, 0.5)))}, p95 ${ms(m(alone, (b) => quantile(b.latencies, 0.95)))}, max ${ms(m(alone, (b) => quantile(b.latencies, 1)))} ms`,
      },
      {
        benchmark: `${store}: storm / baseline, each pull in its own transaction (push answered)`,
        value: median(storms.map((s, i) => s.fromPush / alone[i]!.total)),
        unit: 'x',
        note: `shared baseline / this ${median(baselines.map((b, i) => b.total / alone[i]!.total)).toFixed(2)}x; median of the rounds' ratios`,
      },
      {
        benchmark: `${store}: server CPU in a baseline, each pull in its own transaction`,
        value: m(alone, (b) => b.cpu.server),
        unit: 'ms',
        note: cpuNote(
          alone,
          m(alone, (b) => b.total),
        ),
      },
    );
}

/** The cookie of a storm or baseline pull's answer, which must be exactly `change` and nothing of the puller's own. */
function checkPull(text: string, change: Change): JSONValue {
  const body = JSON.parse(text) as {
    cookie: JSONValue;
    lastMutationIDChanges: Record<string, number>;
    patch: Array<{ op: string; key?: string; value?: JSONValue }>;
  };
  const [op, ...rest] = body.patch;
  if (
    op?.op !== 'put' ||
    op.key !== change.key ||
    !isDeepStrictEqual(op.value, change.value) ||
    rest.length > 0 ||
    Object.keys(body.lastMutationIDChanges).length > 0
  ) {
    throw new Error(`a pull answered ${text.slice(0, 300)}, not the put of ${change.key}`);
  }
  return body.cookie;
}

/** `promise`, or a failure naming `what` after a minute: a lost poke must end the run, not hang it. */
async function deadline<T>(promise: Promise<T>, what: () => string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out: ${what()}`)), 60_000)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The server's memory once the last phase's sockets have settled. */
async function settledMemory(server: StoreServer): Promise<NodeJS.MemoryUsage> {
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  return server.memory();
}

/** Lets the last phase's sockets and garbage settle before the next is timed. */
function pause(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 300));
}

/**
 * Node cannot raise its own open-file limit, so when the soft limit is too low (and the hard one
 * allows) this runs itself again under a shell that raises it; the server inherits the limit.
 */
function raiseOpenFiles(): void {
  const { soft, hard } = openFilesLimit();
  if (soft >= FILES_NEEDED) return;
  if (hard < FILES_NEEDED || env.POKES_RAISED)
    throw new Error(`${FILES_NEEDED} open files are needed and the limit is ${soft} (hard ${hard}); raise ulimit -n, or lower PULL_SOCKETS or SUBSCRIBERS`);
  const args = [...process.execArgv, ...process.argv.slice(1)];
  const child = spawnSync('/bin/sh', ['-c', `ulimit -n ${FILES_NEEDED} && exec "$@"`, 'sh', process.execPath, ...args], {
    stdio: 'inherit',
    env: { ...env, POKES_RAISED: '1' },
  });
  process.exit(child.status ?? 1);
}
