/**
 * The feed soak: a million versions through the change feed under faults, judged for gaps and
 * reordering. It runs the chaos suite's `routed` deployment (two server processes over
 * routedStorage on three PostgreSQL servers, spaces moved by the CLI, movers and servers killed
 * -9, the network to each database cut and stalled), but instead of protocol clients, writers
 * commit through the backend door as fast as the servers take it: each commit is one version of
 * its space, and each is told to the writer once committed (server.ts, `/chaos/burst`). Every
 * server delivers the feed by webhook to a receiver that refuses some deliveries. At the end,
 * once every fault is healed:
 *
 * - each space's feed holds one change per version, versions 1, 2, 3… without a gap, each the
 *   commit of a writer of that space, none twice;
 * - every acknowledged commit is in it, and each writer's commits come in the order it made them;
 * - the receiver got all of it, in the feed's order, each change under one delivery ID, and the
 *   feed replayed is the space's data (webhook-check.ts).
 *
 * Not part of `npm test` (a million versions take the better part of an hour here); by hand:
 *
 *   npm run chaos:soak -- --versions 1000000 --seed 1
 *   npm run chaos:soak -- --versions 1000000 --max-minutes 30 --fault-every 2s-8s --move-every 5s-20s
 */
import { parseArgs } from 'node:util';
import type { JSONValue } from '../../src/index.js';
import type { FeedChange } from '../../src/backend.js';
import type { Anomaly } from './checker.js';
import { judgeFeeds, type Writer } from './feed-check.js';
import type { ClientEnvironment } from './raw-client.js';
import { Random } from './rng.js';
import { faultLoop, readSpace, type Recorder } from './run.js';
import { MOVED_SPACES, TOPOLOGIES } from './topologies.js';
import { ChaosReceiver, feedOf, judgeWebhooks } from './webhook-check.js';

export interface SoakOptions {
  versions: number;
  /** Stops writing after this long even short of `versions`, and judges what was written. */
  maxMs?: number;
  seed: number;
  /** Spaces written: the four moves pick from, and more beside them (commits of one space wait for each other; of many, they do not). */
  spaces?: number;
  /** Writers per space, each committing one version after another. */
  writersPerSpace?: number;
  /** Commits a writer asks of a server in one request. */
  burst?: number;
  /** A fault every so many milliseconds, drawn from this range (none: `[Infinity, Infinity]`). */
  faultEveryMs?: [number, number];
  /** A move (or an operator's mistake) after a pause drawn from this range. */
  moveEveryMs?: [number, number];
  log?: (line: string) => void;
}

export interface SoakReport {
  seed: number;
  seconds: number;
  /** Versions in the feeds at the end, and the acknowledged commits among them. */
  versions: number;
  acknowledged: number;
  /** Where a space's versions skipped ahead (a database restarted, a move to another store). */
  skips: number;
  /** Commits whose answer a fault cut off: each may or may not be in the feed. */
  unanswered: number;
  faults: Record<string, number>;
  crashes: number;
  webhooks: { requests: number; refused: number };
  anomalies: Anomaly[];
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => {});
  const rng = new Random(options.seed);
  const perSpace = options.writersPerSpace ?? 2;
  const burst = options.burst ?? 100;
  const spaces = [...MOVED_SPACES, ...Array.from({ length: Math.max(0, (options.spaces ?? 24) - MOVED_SPACES.length) }, (_, i) => `soak-${i}`)];
  const writers: Writer[] = Array.from({ length: spaces.length * perSpace }, (_, index) => ({
    index,
    space: spaces[index % spaces.length]!,
    next: 0,
    acknowledged: [],
    unanswered: 0,
  }));
  const faults: Record<string, number> = {};
  const crashes: string[] = [];
  const anomalies: Anomaly[] = [];
  const skips = { count: 0 };
  const receiver = await ChaosReceiver.start(rng.fork(), 0.02);
  // Servers inherit this process's environment: set before they start.
  process.env.CHAOS_WEBHOOK_URL = receiver.url;
  process.env.CHAOS_WEBHOOK_BATCH = '1000';
  const deployment = await TOPOLOGIES.routed!.start(crashes, log);
  const started = performance.now();
  let acknowledged = 0;
  const done = () => acknowledged >= options.versions || performance.now() - started >= (options.maxMs ?? Infinity);
  const record: Recorder = (kind) => void (faults[kind] = (faults[kind] ?? 0) + 1);
  const progress = setInterval(() => {
    const seconds = (performance.now() - started) / 1000;
    log(
      `${seconds.toFixed(0)} s: ${acknowledged} commits acknowledged (${(acknowledged / seconds).toFixed(0)}/s), ${receiver.arrivals.length} delivered; ${Object.entries(
        faults,
      )
        .map(([kind, n]) => `${kind} ×${n}`)
        .join(', ')}`,
    );
  }, 15_000);
  try {
    const write = async (writer: Writer) => {
      while (!done()) {
        const servers = deployment.servers();
        if (servers.length === 0) {
          await sleep(100);
          continue;
        }
        const from = writer.index + writers.length * writer.next;
        const asked = burst;
        let answered = 0;
        try {
          const response = await fetch(`${rng.pick(servers)}chaos/burst?space=${writer.space}&from=${from}&count=${asked}&stride=${writers.length}`, {
            method: 'POST',
            signal: AbortSignal.timeout(60_000),
          });
          if (response.status === 200) {
            const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
            let rest = '';
            for (let read = await reader.read(); !read.done; read = await reader.read()) {
              const lines = (rest + read.value).split('\n');
              rest = lines.pop()!;
              for (const line of lines) {
                if (line.startsWith('!')) continue;
                const n = Number(line);
                if (n !== writer.index + writers.length * (writer.next + answered))
                  anomalies.push({ kind: 'feed', detail: `writer ${writer.index} was told of commit ${line}, not the next it asked for` });
                writer.acknowledged.push(n);
                answered++;
                acknowledged++;
              }
            }
          } else await response.body?.cancel();
        } catch {
          // A server killed or a request cut: what it did not tell is unknown.
        }
        // An answer cut short leaves the rest of its commits unknown: the server may have made
        // several whose lines were lost with it (killed) or not read (timed out), and one in flight
        // may still commit after this writer's next. None is asked for again.
        if (answered < asked) writer.unanswered++;
        writer.next += asked;
        if (answered === 0) await sleep(50);
      }
    };
    const stopping = () => done();
    await Promise.all([
      ...writers.map((writer) => write(writer)),
      ...(options.faultEveryMs?.[0] === Infinity
        ? []
        : [faultLoop(deployment, rng.fork(), () => !done(), 3_600_000, options.faultEveryMs ?? [1_000, 4_000], record)]),
      ...(options.moveEveryMs?.[0] === Infinity
        ? []
        : [
            deployment.background!(
              rng.fork(),
              stopping,
              record,
              (detail) => anomalies.push({ kind: 'operator-command-accepted', detail }),
              options.moveEveryMs,
            ),
          ]),
    ]);
    clearInterval(progress);
    log(`${acknowledged} commits acknowledged in ${((performance.now() - started) / 1000).toFixed(0)} s; healing, then reading the feeds`);
    await deployment.heal();
    const env = { servers: () => deployment.servers(), requestTimeoutMs: 60_000 } as ClientEnvironment;
    const feeds = new Map<string, FeedChange[]>();
    const truth = new Map<string, Map<string, JSONValue>>();
    for (const space of spaces) {
      truth.set(space, await readSpace(env, space));
      feeds.set(space, await feedOf(env.servers()[0]!, space));
    }
    anomalies.push(...judgeFeeds(feeds, writers, skips));
    const due = [...feeds.values()].flat().map(({ id }) => id);
    log(`${due.length} changes in the feeds; waiting for webhooks (${receiver.arrivals.length} delivered)`);
    const waitUntil = performance.now() + 600_000;
    while (performance.now() < waitUntil && due.some((id) => !receiver.deliveriesOf.has(id))) await sleep(1_000);
    anomalies.push(...judgeWebhooks(receiver, feeds, truth));
    anomalies.push(...crashes.map((detail) => ({ kind: 'process-died' as const, detail })));
    return {
      seed: options.seed,
      seconds: Math.round((performance.now() - started) / 1000),
      versions: due.length,
      skips: skips.count,
      acknowledged,
      unanswered: writers.reduce((sum, writer) => sum + writer.unanswered, 0),
      faults,
      crashes: crashes.length,
      webhooks: { requests: receiver.requests, refused: receiver.refused },
      anomalies,
    };
  } finally {
    clearInterval(progress);
    await deployment.stop();
    await receiver.close();
    delete process.env.CHAOS_WEBHOOK_URL;
    delete process.env.CHAOS_WEBHOOK_BATCH;
  }
}

/** `--fault-every 5s-20s` as milliseconds; `never` for none. */
function range(text: string): [number, number] {
  if (text === 'never') return [Infinity, Infinity];
  const match = /^(\d+)s-(\d+)s$/.exec(text);
  if (match === null) throw new RangeError(`takes a range of seconds like 5s-20s, or never; got ${JSON.stringify(text)}`);
  return [Number(match[1]) * 1000, Number(match[2]) * 1000];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      versions: { type: 'string', default: '1000000' },
      seed: { type: 'string' },
      'fault-every': { type: 'string' },
      'move-every': { type: 'string' },
      writers: { type: 'string' },
      spaces: { type: 'string' },
      'max-minutes': { type: 'string' },
    },
  });
  const seed = values.seed === undefined ? Math.floor(Math.random() * 1_000_000) : Number(values.seed);
  const report = await runSoak({
    versions: Number(values.versions),
    seed,
    ...(values['fault-every'] !== undefined && { faultEveryMs: range(values['fault-every']) }),
    ...(values['move-every'] !== undefined && { moveEveryMs: range(values['move-every']) }),
    ...(values.writers !== undefined && { writersPerSpace: Number(values.writers) }),
    ...(values.spaces !== undefined && { spaces: Number(values.spaces) }),
    ...(values['max-minutes'] !== undefined && { maxMs: Number(values['max-minutes']) * 60_000 }),
    log: (line) => console.log(line),
  });
  console.log(JSON.stringify({ ...report, anomalies: report.anomalies.slice(0, 50) }, null, 2));
  process.exit(report.anomalies.length === 0 ? 0 : 1);
}
