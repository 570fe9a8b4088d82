/**
 * The telemetry of one pull and one push on its own, without the pull or push: what
 * src/telemetry/telemetry.ts adds to each request, in microseconds, first with no SDK (the API's
 * no-ops), then under the Node SDK of bench/otel.ts. End-to-end runs (bench/otel-compare.ts)
 * are too noisy on a busy machine to see a fraction of a microsecond; this isolates it.
 *
 * Run: node --import tsx bench/otel-overhead.ts (about a minute)
 */
import { json } from '../src/base/reply.js';
import { observe, recordBatchCommit } from '../src/telemetry/telemetry.js';
import { progress } from './measure.js';
import { startBenchSdk } from './otel.js';

const ROUNDS = 5;
const PER_ROUND = 200_000;
const request = new Request('http://localhost/pull', { method: 'POST', headers: { 'content-type': 'application/json', 'x-replicache-requestid': 'c-1-0' } });
const patch = Array.from({ length: 10 }, (_, i) => ({ op: 'put' as const, key: `row/${i}`, value: { title: `row ${i}`, done: false } }));
const pulled = { cookie: { order: 12 }, lastMutationIDChanges: { c: 3 }, patch };
// Made once: serialising a body is the handler's work, not telemetry's.
const pullReply = json(pulled);
const pushReply = json({});
const tally = new Map([['put', { processed: 10, failed: 0, skipped: 0 }]]);

const clientGroup = { clientGroupID: 'group' };
const pushed = { kind: 'applied' as const, tally, waitedMs: 0.01, batchSize: 1, failures: [] };
const mutators = { put: () => {} };

async function pullTelemetry(): Promise<void> {
  // Made per request, as the handler makes them.
  await observe('pull', request, async () => ({
    kind: 'patched',
    by: { space: 'space', clientGroup, schemaVersion: undefined },
    patch,
    sentOperations: undefined,
    reply: pullReply,
  }));
}

async function pushTelemetry(): Promise<void> {
  await observe('push', request, async () => {
    recordBatchCommit(1, [0.01]);
    return { kind: 'pushed', by: { space: 'space', clientGroup, schemaVersion: undefined }, mutations: 10, outcome: pushed, mutators, reply: pushReply };
  });
}

/** The same calls and awaits as the handlers make, without telemetry: what `measure` subtracts. */
async function bare(): Promise<void> {
  await (async () => pullReply)();
}

/** Median over rounds of the microseconds per call of `fn`, less those of `bare`. */
async function measure(fn: () => Promise<void>): Promise<number> {
  const perCall = async (f: () => Promise<void>) => {
    const start = performance.now();
    for (let i = 0; i < PER_ROUND; i++) await f();
    return ((performance.now() - start) * 1000) / PER_ROUND;
  };
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    rounds.push((await perCall(fn)) - (await perCall(bare)));
  }
  return rounds.sort((a, b) => a - b)[ROUNDS >> 1]!;
}

const results: Array<[string, number]> = [];
for (const [name, fn] of [
  ['pull', pullTelemetry],
  ['push', pushTelemetry],
] as const) {
  progress(`${name}, no SDK`);
  await measure(fn); // warm-up
  results.push([`${name} telemetry, no SDK`, await measure(fn)]);
}
process.env.VIEWSYNC_BENCH_OTEL = '1';
const stop = startBenchSdk()!;
for (const [name, fn] of [
  ['pull', pullTelemetry],
  ['push', pushTelemetry],
] as const) {
  progress(`${name}, Node SDK`);
  await measure(fn);
  results.push([`${name} telemetry, Node SDK`, await measure(fn)]);
}
await stop();
for (const [label, micros] of results) console.log(`${label.padEnd(28)} ${micros.toFixed(3)} µs per request`);
