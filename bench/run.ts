/**
 * viewsync benchmark: the public `handlePush` / `handlePull` on `memoryStorage()`, fed real
 * `Request`s shaped like the Replicache client's (POST, application/json, JSON body).
 *
 * Measures:
 * 1. push throughput (mutations/s and pushes/s) for batches of 1, 10 and 100 `put` mutations,
 *    each push carrying new mutations with consecutive ids from one client;
 * 2. an incremental pull of 10 changed keys when the space holds 1k, 100k and 1M entries
 *    (median and p95 per pull, and the 1M/1k ratio: the cost should follow the changes, not
 *    the size of the space);
 * 3. a full pull (cookie null) of 100k entries;
 * 4. baselines from the same run, to read the numbers against machine noise: a bare Fetch round
 *    trip (`request.json()` + `new Response(JSON.stringify(body))`) carrying the same bodies as
 *    the incremental pull, and `JSON.parse(JSON.stringify(...))` of the full pull's body;
 * 5. a push of 100,000 mutations that all fail, logged by the default `onError` against the same
 *    push to a server that logs nothing: the log's rate limit should make the two cost about the
 *    same (before it, the logging took 2.2 s more; test/server/log.test.ts tests the lines it prints).
 *
 * Request building happens outside the timers (it is the client's cost); each timed operation
 * runs from the handler call until the response body has been read as bytes.
 *
 * Run: `npm run bench` (node --expose-gc --import tsx bench/run.ts). Not part of `npm test`.
 * Takes about a minute on 2 cores and needs about 2 GiB of heap for the 1M-entry space.
 * Progress goes to stderr; the results table to stdout.
 *
 * Environment: `VIEWSYNC_BENCH_OTEL=1` runs under an OpenTelemetry SDK (bench/otel.ts);
 * `VIEWSYNC_BENCH_QUICK=1` stops the space at 100k entries; `VIEWSYNC_BENCH_JSON=1` prints the
 * rows as one JSON line after the table (bench/otel-compare.ts reads it).
 */
import { type JSONValue, type Mutators, type SyncContext, handlePull, handlePush, memoryStorage, createContext } from '../src/index.js';
import { BenchClient, benchMutators, type PullBody, rowKey, rowValue } from './client.js';
import { collectGarbage, heapMiB, median, progress, quantile, sample, type SamplePlan } from './measure.js';
import { startBenchSdk } from './otel.js';
import { formatValue, type Row, renderTable } from './table.js';

const PUSH_BATCHES = [1, 10, 100] as const;
const SPACE_SIZES = process.env.VIEWSYNC_BENCH_QUICK === '1' ? ([1_000, 100_000] as const) : ([1_000, 100_000, 1_000_000] as const);
const CHANGED_KEYS = 10;
const SEED_BATCH = 1_000;
const FULL_PULL_SIZE = 100_000;

/** Each batch size pushes for about 2 s, so a rate is an average over thousands of mutations. */
const PUSH_PLAN: SamplePlan = { warmup: 200, minIterations: 200, minMs: 2_000, maxIterations: 1_000_000 };
/** Incremental pulls are fast: many iterations, so the median and p95 are stable. */
const INCREMENTAL_PLAN: SamplePlan = { warmup: 200, minIterations: 500, minMs: 1_500, maxIterations: 50_000 };
/** A full pull of 100k entries takes tens of milliseconds or more: a few runs suffice. */
const FULL_PLAN: SamplePlan = { warmup: 2, minIterations: 7, minMs: 0, maxIterations: 7 };

/** Errors the handlers reported; a push still answers 200 when a mutator failed. */
const reported: unknown[] = [];

function context(): SyncContext {
  return createContext({ storage: memoryStorage(), mutators: benchMutators, onError: (error) => reported.push(error) });
}

/** A failed mutation makes the numbers wrong (less work was done), so it stops the run. */
function assertNoErrors(section: string): void {
  if (reported.length > 0) throw new Error(`${section}: the server reported ${reported.length} error(s), first: ${String(reported[0])}`);
}

const micros = (ms: number) => ms * 1000;

// ---------------------------------------------------------------------------------------------
// 1. Push throughput

async function benchPushes(batch: number): Promise<Row[]> {
  const ctx = context();
  const client = new BenchClient(`pusher-${batch}`);
  let next = 0;
  // Unpadded numbers arrive out of key order (push/10 < push/2), as random IDs would, so the
  // store inserts in the middle of its key order rather than only appending.
  const puts = () => Array.from({ length: batch }, () => ({ key: `push/${next}`, value: rowValue(next++) }));
  const times = await sample(
    PUSH_PLAN,
    () => client.pushRequest(puts()),
    async (request) => {
      const response = await handlePush(request, ctx);
      if (response.status !== 200) throw new Error(`push failed: ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
    },
  );
  const seconds = times.reduce((a, b) => a + b, 0) / 1000;
  // The rate is total work over total time, so GC pauses and a busy machine count; the median
  // push, and the rate it implies, are the steadier figures to compare between runs.
  const mid = median(times);
  const note = `${times.length} pushes; per push median ${micros(mid).toFixed(0)} µs, p95 ${micros(quantile(times, 0.95)).toFixed(0)} µs; at median ${formatValue(batch / (mid / 1000))} mutations/s`;
  return [
    { benchmark: `push, batch of ${batch}`, value: (times.length * batch) / seconds, unit: 'mutations/s', note },
    { benchmark: `push, batch of ${batch}`, value: times.length / seconds, unit: 'pushes/s' },
    { benchmark: `push, batch of ${batch}`, value: micros(mid), unit: 'µs median' },
  ];
}

// ---------------------------------------------------------------------------------------------
// 2-4. Pulls on a growing space

/** The state of the one space that grows from 1k to 1M entries. */
interface Space {
  ctx: SyncContext;
  seeder: BenchClient;
  app: BenchClient;
  size: number;
  /** The app client's latest cookie, so taking a new one is an incremental pull. */
  cookie: JSONValue;
  revision: number;
}

/** Grows the space to `size` entries with 1000-mutation pushes (untimed setup). */
async function seedTo(space: Space, size: number): Promise<number> {
  const start = performance.now();
  while (space.size < size) {
    const count = Math.min(SEED_BATCH, size - space.size);
    const puts = Array.from({ length: count }, (_, i) => ({ key: rowKey(space.size + i), value: rowValue(space.size + i) }));
    await space.seeder.push(space.ctx, puts);
    space.size += count;
  }
  return (performance.now() - start) / 1000;
}

/** Brings the app client up to date, as its next pull would, and pushes 10 changes after it. */
async function changeTenKeys(space: Space): Promise<{ cookie: JSONValue; keys: string[] }> {
  const caughtUp = await space.app.pull(space.ctx, space.cookie);
  space.cookie = caughtUp.cookie;
  space.revision++;
  // Spread over the whole key range, so no locality in the store helps.
  const keys = Array.from({ length: CHANGED_KEYS }, (_, i) => rowKey(Math.floor(((i + 0.5) * space.size) / CHANGED_KEYS)));
  await space.app.push(
    space.ctx,
    keys.map((key, i) => ({ key, value: rowValue(i, space.revision) })),
  );
  return { cookie: caughtUp.cookie, keys };
}

/** Checks that the pull we are about to time answers exactly the 10 changes, else its time means nothing. */
function checkIncremental(body: PullBody, keys: readonly string[], app: BenchClient): void {
  const got = body.patch.map((op) => `${op.op}:${op.key}`).sort();
  const want = keys.map((key) => `put:${key}`).sort();
  if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`incremental pull answered ${got.length} ops, not the 10 changes`);
  if (body.lastMutationIDChanges[app.clientID] === undefined) throw new Error('incremental pull lacks the lastMutationID change');
}

/** Times `handlePull` until its response bytes are read. */
async function timedPull(ctx: SyncContext, request: Request): Promise<void> {
  const response = await handlePull(request, ctx);
  if (response.status !== 200) throw new Error(`pull failed: ${response.status} ${await response.text()}`);
  await response.arrayBuffer();
}

/** The floor any Fetch handler pays for the same request and response bodies. */
async function baselineRoundTrip(app: BenchClient, cookie: JSONValue, responseBody: PullBody): Promise<number[]> {
  return sample(
    INCREMENTAL_PLAN,
    () => app.pullRequest(cookie),
    async (request) => {
      await request.json();
      await new Response(JSON.stringify(responseBody), { headers: { 'content-type': 'application/json' } }).arrayBuffer();
    },
  );
}

interface IncrementalResult {
  size: number;
  median: number;
  p95: number;
  iterations: number;
  baseline: number;
}

async function benchIncremental(space: Space): Promise<IncrementalResult> {
  const { cookie, keys } = await changeTenKeys(space);
  const answer = await space.app.pull(space.ctx, cookie);
  checkIncremental(answer, keys, space.app);
  collectGarbage();
  const times = await sample(
    INCREMENTAL_PLAN,
    () => space.app.pullRequest(cookie),
    (request) => timedPull(space.ctx, request),
  );
  collectGarbage();
  // Measured now, with the same heap, so the ratio cancels what the heap size does to both.
  const baseline = median(await baselineRoundTrip(space.app, cookie, answer));
  return { size: space.size, median: median(times), p95: quantile(times, 0.95), iterations: times.length, baseline };
}

async function benchFullPull(space: Space): Promise<Row[]> {
  const first = await space.app.pull(space.ctx, null);
  const puts = first.patch.filter((op) => op.op === 'put').length;
  if (puts !== space.size) throw new Error(`full pull answered ${puts} puts, not ${space.size}`);
  const bytes = new TextEncoder().encode(JSON.stringify(first)).byteLength;
  collectGarbage();
  const times = await sample(
    FULL_PLAN,
    () => space.app.pullRequest(null),
    (request) => timedPull(space.ctx, request),
  );
  collectGarbage();
  // The least any server pays for a body this size: serialising it (and the parse, as a check).
  const copies = await sample(
    FULL_PLAN,
    () => first,
    async (body) => void JSON.parse(JSON.stringify(body)),
  );
  const ms = median(times);
  const label = `full pull, ${formatCount(space.size)} entries`;
  return [
    { benchmark: label, value: ms, unit: 'ms/pull', note: `median of ${times.length}; response ${(bytes / 2 ** 20).toFixed(1)} MiB` },
    { benchmark: label, value: space.size / (ms / 1000), unit: 'entries/s' },
    { benchmark: 'baseline: JSON.parse(JSON.stringify(full body))', value: median(copies), unit: 'ms', note: 'same body as the full pull' },
    { benchmark: 'full pull / JSON copy baseline', value: ms / median(copies), unit: 'x' },
  ];
}

function incrementalRows(results: readonly IncrementalResult[]): Row[] {
  const rows: Row[] = [];
  for (const r of results) {
    const label = `incremental pull, 10 changes, ${formatCount(r.size)} entries`;
    rows.push(
      { benchmark: label, value: micros(r.median), unit: 'µs median', note: `${r.iterations} pulls` },
      { benchmark: label, value: micros(r.p95), unit: 'µs p95' },
      {
        benchmark: `baseline: Fetch round trip (at ${formatCount(r.size)})`,
        value: micros(r.baseline),
        unit: 'µs median',
        note: 'request.json() + new Response(JSON.stringify(same body))',
      },
      { benchmark: `incremental pull / baseline (at ${formatCount(r.size)})`, value: r.median / r.baseline, unit: 'x' },
    );
  }
  const first = results[0]!;
  const last = results[results.length - 1]!;
  rows.push({
    benchmark: `incremental pull ratio ${formatCount(last.size)}/${formatCount(first.size)}`,
    value: last.median / first.median,
    unit: 'x',
    note: `medians; baseline-normalised ${(last.median / last.baseline / (first.median / first.baseline)).toFixed(2)}x`,
  });
  return rows;
}

function formatCount(n: number): string {
  return n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1_000 ? `${n / 1_000}k` : String(n);
}

async function benchPulls(): Promise<Row[]> {
  const space: Space = { ctx: context(), seeder: new BenchClient('seeder'), app: new BenchClient('app'), size: 0, cookie: null, revision: 0 };
  const incremental: IncrementalResult[] = [];
  const rows: Row[] = [];
  for (const size of SPACE_SIZES) {
    const seconds = await seedTo(space, size);
    progress(`seeded ${formatCount(size)} entries (+${seconds.toFixed(1)} s, heap ${heapMiB().toFixed(0)} MiB); incremental pulls`);
    incremental.push(await benchIncremental(space));
    if (size === FULL_PULL_SIZE) {
      progress(`full pulls of ${formatCount(size)} entries`);
      rows.push(...(await benchFullPull(space)));
    }
    collectGarbage();
  }
  rows.push({ benchmark: `heap in use with ${formatCount(space.size)} entries`, value: heapMiB(), unit: 'MiB', note: 'memoryStorage, after GC' });
  return [...incrementalRows(incremental), ...rows];
}

// ---------------------------------------------------------------------------------------------
// 5. A push whose every mutation fails, logged

const FAILING = 100_000;
const FAILING_ROUNDS = 3;

/** A push of {@link FAILING} mutations of a new client group that all fail (a permanent error each). */
function failingPush(clientGroupID: string): Request {
  const mutations = Array.from({ length: FAILING }, (_, i) => ({ clientID: `${clientGroupID}-client`, id: i + 1, name: 'fail', args: {}, timestamp: 0 }));
  return new Request('http://localhost/push', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pushVersion: 1, clientGroupID, mutations, profileID: 'bench-profile', schemaVersion: '' }),
  });
}

/**
 * The same push answered by a server that logs nothing and by one with the default `onError`,
 * in alternating rounds on fresh stores; `console.error` only counts the lines meanwhile.
 */
async function benchFailureLogging(): Promise<Row[]> {
  const mutators: Mutators = {
    fail: () => {
      throw new Error('permanent failure');
    },
  };
  const limits = { mutationsPerPush: FAILING };
  const silent: number[] = [];
  const logged: number[] = [];
  const print = console.error;
  let lines = 0;
  console.error = () => void lines++;
  try {
    for (let round = -1; round < FAILING_ROUNDS; round++) {
      for (const [times, onError] of [
        [silent, () => {}],
        [logged, undefined],
      ] as const) {
        const request = failingPush(`failing-${round}-${times === silent ? 'silent' : 'logged'}`);
        const ctx: SyncContext = createContext({ storage: memoryStorage(), mutators, limits, ...(onError && { onError }) });
        collectGarbage();
        const start = performance.now();
        const response = await handlePush(request, ctx);
        await response.arrayBuffer();
        const ms = performance.now() - start;
        if (response.status !== 200) throw new Error(`failing push answered ${response.status}`);
        // Round -1 warms both up.
        if (round >= 0) times.push(ms);
      }
    }
  } finally {
    console.error = print;
  }
  const label = `push of ${formatCount(FAILING)} failing mutations`;
  return [
    { benchmark: `${label}, nothing logged`, value: median(silent), unit: 'ms median', note: `${FAILING_ROUNDS} rounds` },
    { benchmark: `${label}, default onError`, value: median(logged), unit: 'ms median', note: `${lines} lines printed in ${FAILING_ROUNDS + 1} pushes` },
    {
      benchmark: `${label}, logged / not logged`,
      value: median(logged) / median(silent),
      unit: 'x',
      note: 'about 1: the lines are rate-limited (it was 2.2 s more before)',
    },
  ];
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const stopSdk = startBenchSdk();
  if (globalThis.gc === undefined) progress('warning: run with --expose-gc (npm run bench) so sections do not bill each other for garbage');
  const started = performance.now();
  const rows: Row[] = [];
  for (const batch of PUSH_BATCHES) {
    progress(`pushes, batch of ${batch}`);
    rows.push(...(await benchPushes(batch)));
    assertNoErrors(`pushes, batch of ${batch}`);
    collectGarbage();
  }
  rows.push(...(await benchPulls()));
  assertNoErrors('pulls');
  progress(`a push of ${formatCount(FAILING)} failing mutations, logged and not`);
  rows.push(...(await benchFailureLogging()));
  progress(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  await stopSdk?.();
  const sdk = stopSdk ? ', under an OpenTelemetry SDK (VIEWSYNC_BENCH_OTEL=1)' : '';
  console.log(`viewsync bench — node ${process.version}, ${process.platform}/${process.arch}${sdk}\n`);
  console.log(renderTable(rows));
  if (process.env.VIEWSYNC_BENCH_JSON === '1') console.log(JSON.stringify(rows));
}

await main();
