/**
 * Webhooks: from a change's commit to the first delivery attempt that holds it, under a steady
 * load of RATE commits a second (default 1,000), on PostgreSQL (a real server) and, for
 * reference, memory.
 *
 * The load: `transact(ctx, space, tx => tx.set(...))`, one key set to a new value of about 150
 * bytes (so one change each), started at a steady RATE a second (a timer every 2 ms starts what
 * is due, catching up if it fell behind, without waiting for earlier ones: they queue as group
 * commit batches them), spread round-robin over SPACES spaces (default 8), for SECONDS s
 * (default 25), of which the first WARMUP s (default 3) are not counted. The context has the
 * feed on and one webhook to the receiver (default batch of 100, `allowPrivateAddresses`), and
 * `startWebhooks(ctx, { sweepMs: 1000 })` delivers (woken at once by each commit through `ctx`).
 *
 * The receiver: a `node:http` server in a child process of its own (RECEIVER=child, the
 * default), so that what it records is not held up by the event loop that commits and
 * delivers; RECEIVER=inline runs it in this process to compare. It takes the time a POST's
 * request line and headers arrived (Date.now(), the clock `at` is taken from: the same machine),
 * answers 200 once the body is in, and keeps for each change the first POST that held it. A
 * change's latency is that arrival time less its `at` (the commit's time, taken when its
 * transaction opened). After the load the run waits (up to 60 s) until every committed change has
 * arrived; changes never delivered are counted.
 *
 * The baseline, measured first in the same run on the same store and context: the same load
 * into SPACES other spaces, which the webhook does not want (its `spaces` test), so nothing is
 * delivered; against it, the load with deliveries running.
 *
 * Also reported, for both: the commits a second actually achieved (transact calls that resolved
 * in the counted window, over its length), the `transact` calls' own latency (call to resolve),
 * the store's write transactions a second; deliveries and changes per delivery, changes
 * delivered twice; and the CPU this process, the receiver, PostgreSQL (every postgres process
 * on the machine, anyone's) and the whole machine used over the counted window (2 cores: 200% is
 * all of it). PostgreSQL is reached through a pool of PG_POOL connections (default 10).
 *
 * Run: `npm run bench:webhooks` (about two minutes; starts a throwaway PostgreSQL with
 * scripts/start-postgres.sh unless DATABASE_URL is set). Env: STORES (postgres,memory), RATE,
 * SPACES, SECONDS, WARMUP, RECEIVER, PG_POOL, and SPACES_PER_DELIVERY (the webhook's
 * `spacesPerDelivery`, default 1; above 1 the receiver takes `{ deliveries }` bodies). Not part
 * of `npm test`. Progress on stderr, the
 * table on stdout.
 */
import { execFileSync, fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import postgres from 'postgres';
import { createContext, memoryStorage, type Storage, type SyncContext } from '../src/index.js';
import { startWebhooks, transact } from '../src/backend.js';
import { postgresStorage } from '../src/storage/postgres.js';
import { type CPUSnapshot, cpuSnapshot, cpuSpent, machineLine } from './cpu.js';
import { median, progress, quantile } from './measure.js';
import { renderTable, type Row } from './table.js';

/** What the receiver keeps: for each change ID, its `at` and the arrival of the first POST holding it. */
interface Received {
  /** [at, arrival] by change ID. */
  first: Map<string, [number, number]>;
  posts: number;
  duplicates: number;
}

/** A receiver on 127.0.0.1: its port, and what it received so far. */
function receive(received: Received): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer((request, response) => {
    const arrival = Date.now();
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.posts++;
      type Body = { changes: Array<{ id: string; at: number }> };
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body | { deliveries: Body[] };
      for (const { id, at } of 'deliveries' in body ? body.deliveries.flatMap(({ changes }) => changes) : body.changes) {
        if (received.first.has(id)) received.duplicates++;
        else received.first.set(id, [at, arrival]);
      }
      response.writeHead(200).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () => new Promise<void>((done) => (server.closeAllConnections(), server.close(() => done()))),
      }),
    ),
  );
}

// The child process: a receiver, answering the parent's questions over IPC.
if (process.argv[2] === '--receiver') {
  const received: Received = { first: new Map(), posts: 0, duplicates: 0 };
  const { port } = await receive(received);
  process.on('message', (message: string) => {
    if (message === 'count') process.send!({ count: received.first.size });
    else if (message === 'report')
      process.send!({ first: [...received.first.values()], posts: received.posts, duplicates: received.duplicates }, () => process.exit(0));
  });
  process.send!({ port });
} else {
  await main();
}

/** A receiver as the parent uses it, in a child process or in this one. */
interface Receiver {
  port: number;
  pid: number;
  count(): Promise<number>;
  /** Everything received, and the receiver closed. */
  report(): Promise<{ first: Array<[number, number]>; posts: number; duplicates: number }>;
}

async function startReceiver(inline: boolean): Promise<Receiver> {
  if (inline) {
    const received: Received = { first: new Map(), posts: 0, duplicates: 0 };
    const { port, close } = await receive(received);
    return {
      port,
      pid: process.pid,
      count: async () => received.first.size,
      report: async () => (await close(), { first: [...received.first.values()], posts: received.posts, duplicates: received.duplicates }),
    };
  }
  const child = fork(new URL(import.meta.url).pathname, ['--receiver'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = <T>(question: string, key: string) =>
    new Promise<T>((resolve) => {
      const answer = (message: Record<string, unknown>) => {
        if (!(key in message)) return;
        child.off('message', answer);
        resolve(message as T);
      };
      child.on('message', answer);
      if (question !== '') child.send(question);
    });
  const { port } = await ask<{ port: number }>('', 'port');
  return {
    port,
    pid: child.pid!,
    count: async () => (await ask<{ count: number }>('count', 'count')).count,
    report: () => ask('report', 'first'),
  };
}

async function main(): Promise<void> {
  const root = new URL('..', import.meta.url).pathname;
  const STORES = (process.env.STORES ?? 'postgres,memory').split(',');
  const RATE = Number(process.env.RATE ?? 1000);
  const SPACES = Number(process.env.SPACES ?? 8);
  const SECONDS = Number(process.env.SECONDS ?? 25);
  const WARMUP = Number(process.env.WARMUP ?? 3);
  const INLINE = (process.env.RECEIVER ?? 'child') === 'inline';
  const PG_POOL = Number(process.env.PG_POOL ?? 10);
  const SPACES_PER_DELIVERY = Number(process.env.SPACES_PER_DELIVERY ?? 1);
  if (STORES.includes('postgres')) process.env.DATABASE_URL ??= execFileSync(join(root, 'scripts/start-postgres.sh'), { encoding: 'utf8' }).trim();

  /** A value of about 150 bytes of JSON, new each time. */
  const item = (n: number) => ({
    title: `Order ${n} for customer ${n % 977}`,
    status: ['new', 'paid', 'shipped'][n % 3],
    total: (n % 10_000) / 100,
    currency: 'EUR',
    lines: n % 7,
    updatedAt: new Date(1_700_000_000_000 + n).toISOString(),
  });

  /** What a run of the load came to. */
  interface Drive {
    committedInWindow: number;
    committed: number;
    failed: number;
    maxInFlight: number;
    commitMs: number[];
    cpu: ReturnType<typeof cpuSpent>;
    /** Write transactions the store ran in the counted window. */
    writes: number;
  }

  /**
   * RATE transact calls a second into `spaces`, round-robin, for SECONDS s; counted from WARMUP s
   * on. Resolves once the load is over and every call has settled.
   */
  async function drive(
    name: string,
    ctx: SyncContext,
    spaces: readonly string[],
    receiverPid: number,
    writes: { count: number },
    errors: unknown[],
  ): Promise<Drive & { counted: { from: number; to: number } }> {
    const commitMs: number[] = [];
    let issued = 0;
    let committed = 0;
    let committedInWindow = 0;
    let failed = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    const start = Date.now();
    const counted = { from: start + WARMUP * 1000, to: start + SECONDS * 1000 };
    let before: { cpu: CPUSnapshot; writes: number } | undefined;
    let after: { cpu: CPUSnapshot; writes: number } | undefined;
    await new Promise<void>((resolve) => {
      const tick = () => {
        const now = Date.now();
        if (before === undefined && now >= counted.from) before = { cpu: cpuSnapshot(receiverPid, 'start'), writes: writes.count };
        if (now >= counted.to) {
          after = { writes: writes.count, cpu: cpuSnapshot(receiverPid, 'end') };
          return resolve();
        }
        // Catching up with what is due by now, without waiting for the calls before.
        const due = Math.floor(((now - start) / 1000) * RATE);
        while (issued < due) {
          const n = issued++;
          const called = performance.now();
          const inWindow = now >= counted.from;
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          transact(ctx, spaces[n % spaces.length]!, (tx) => tx.set(`order/${n % 1000}`, item(n)))
            .then(
              () => {
                committed++;
                if (inWindow) commitMs.push(performance.now() - called);
                const done = Date.now();
                if (done >= counted.from && done <= counted.to) committedInWindow++;
              },
              (error: unknown) => (failed++, errors.push(error)),
            )
            .finally(() => inFlight--);
        }
        setTimeout(tick, 2);
      };
      tick();
    });
    progress(`${name}: load over: ${issued} started, ${committed} committed, ${inFlight} in flight`);
    while (inFlight > 0) await new Promise((r) => setTimeout(r, 10));
    return {
      committedInWindow,
      committed,
      failed,
      maxInFlight,
      commitMs,
      cpu: cpuSpent(before!.cpu, after!.cpu),
      writes: after!.writes - before!.writes,
      counted,
    };
  }

  async function bench(name: string, plain: Storage): Promise<Row[]> {
    // The same store, its write transactions counted.
    const writes = { count: 0 };
    const storage = new Proxy(plain, {
      get(target, property, receiver) {
        if (property !== 'transaction') return Reflect.get(target, property, receiver) as unknown;
        return (fn: never, options: { readOnly?: boolean }) => {
          if (!options.readOnly) writes.count++;
          return target.transaction(fn, options as never);
        };
      },
    });
    const receiver = await startReceiver(INLINE);
    const errors: unknown[] = [];
    const webhooks = {
      bench: {
        url: `http://127.0.0.1:${receiver.port}/hook`,
        secret: 'a-webhook-secret-of-32-characters-or-more',
        allowPrivateAddresses: true,
        spaces: (space: string) => space.startsWith('hooks-'),
        spacesPerDelivery: SPACES_PER_DELIVERY,
      },
    };
    const ctx = createContext({
      storage,
      mutators: {},
      changes: { webhooks },
      retention: { clientGroupsMs: false, tombstonesMs: false },
      onError: (error) => errors.push(error),
    });
    const load = `${RATE.toLocaleString('en-US')} commits/s asked over ${SPACES} spaces, spacesPerDelivery ${SPACES_PER_DELIVERY}`;
    const where = INLINE ? 'in this process' : 'in a child process';

    // The baseline: the same load, the feed on, no delivery running (spaces the webhook does not want).
    progress(`${name}: baseline, no delivery: ${load}, ${SECONDS} s (the first ${WARMUP} s not counted)`);
    const base = await drive(
      `${name} baseline`,
      ctx,
      Array.from({ length: SPACES }, (_, i) => `base-${process.pid}-${i}`),
      receiver.pid,
      writes,
      errors,
    );

    progress(`${name}: webhooks: ${load}, ${SECONDS} s (the first ${WARMUP} s not counted), receiver ${where}`);
    const runner = startWebhooks(ctx, { sweepMs: 1000 });
    const hooked = await drive(
      `${name} webhooks`,
      ctx,
      Array.from({ length: SPACES }, (_, i) => `hooks-${process.pid}-${i}`),
      receiver.pid,
      writes,
      errors,
    );
    const waitFrom = Date.now();
    let delivered = await receiver.count();
    while (delivered < hooked.committed && Date.now() - waitFrom < 60_000) {
      await new Promise((r) => setTimeout(r, 100));
      delivered = await receiver.count();
    }
    const drainMs = Date.now() - waitFrom;
    await runner.stop();
    const report = await receiver.report();
    if (errors.length > 0) console.error(`${name}: ${errors.length} errors; the first:`, errors[0]);

    const { counted } = hooked;
    const latencies = report.first.filter(([at]) => at >= counted.from && at <= counted.to).map(([at, arrival]) => arrival - at);
    const windowS = (counted.to - counted.from) / 1000;
    const p = (q: number) => quantile(latencies, q);
    const pct = (ms: number) => (ms < 0 ? 'n/a (its processes came and went)' : `${Math.round((ms / (windowS * 1000)) * 100)}%`);
    const cpuNote = (d: Drive, receiverToo: boolean) =>
      `this process ${pct(d.cpu.client)}${receiverToo ? `, receiver ${INLINE ? '(in this process)' : pct(d.cpu.server)}` : ''}, PostgreSQL (every postgres process, anyone's) ${pct(d.cpu.postgres)}; of 200% (2 cores)`;
    const ms1 = (x: number) => x.toFixed(x < 10 ? 2 : 0);
    return [
      {
        benchmark: `${name}: commit to first delivery attempt, p50`,
        value: p(0.5),
        unit: 'ms',
        note: `${load}; p90 ${p(0.9)} ms; n=${latencies.length} changes committed in the counted ${windowS} s; receiver ${where}`,
      },
      {
        benchmark: `${name}: commit to first delivery attempt, p99`,
        value: p(0.99),
        unit: 'ms',
        note: `p99.9 ${p(0.999)} ms, max ${Math.max(...latencies)} ms (aim: p99 < 1,000 ms)`,
      },
      {
        benchmark: `${name}: commits/s achieved, with webhooks`,
        value: hooked.committedInWindow / windowS,
        unit: 'commits/s',
        note: `of ${RATE} asked; ${hooked.failed} failed; up to ${hooked.maxInFlight} transact calls in flight (any time, warm-up too)`,
      },
      {
        benchmark: `${name}: commits/s achieved, baseline (no delivery)`,
        value: base.committedInWindow / windowS,
        unit: 'commits/s',
        note: `${base.failed} failed; up to ${base.maxInFlight} transact calls in flight`,
      },
      {
        benchmark: `${name}: transact, call to resolve, p50, with webhooks`,
        value: median(hooked.commitMs),
        unit: 'ms',
        note: `p99 ${ms1(quantile(hooked.commitMs, 0.99))} ms`,
      },
      {
        benchmark: `${name}: transact, call to resolve, p50, baseline`,
        value: median(base.commitMs),
        unit: 'ms',
        note: `p99 ${ms1(quantile(base.commitMs, 0.99))} ms`,
      },
      {
        benchmark: `${name}: store write transactions, with webhooks`,
        value: hooked.writes / windowS,
        unit: '/s',
        note: `baseline ${Math.round(base.writes / windowS)}/s (group commit: commits share transactions); the difference is deliveries' claims and records`,
      },
      {
        benchmark: `${name}: changes per delivery (mean)`,
        value: report.first.length / report.posts,
        unit: 'changes',
        note: `${report.posts} deliveries in the whole run (${Math.round(report.posts / SECONDS)}/s over its ${SECONDS} s); ${report.duplicates} changes delivered twice; ${hooked.committed - report.first.length} never delivered (waited ${(drainMs / 1000).toFixed(1)} s after the load)`,
      },
      {
        benchmark: `${name}: machine CPU busy, with webhooks`,
        value: (hooked.cpu.machineBusy / (windowS * 1000)) * 100,
        unit: '%',
        note: cpuNote(hooked, true),
      },
      { benchmark: `${name}: machine CPU busy, baseline`, value: (base.cpu.machineBusy / (windowS * 1000)) * 100, unit: '%', note: cpuNote(base, false) },
    ];
  }

  const startLine = machineLine();
  progress(startLine);
  const rows: Row[] = [];
  for (const store of STORES) {
    if (store === 'memory') rows.push(...(await bench('memory', memoryStorage())));
    else if (store === 'postgres') {
      // A pool of PG_POOL connections (default 10, the postgres package's own default).
      const sql = postgres(process.env.DATABASE_URL!, { onnotice: () => {}, max: PG_POOL });
      const schema = `bench_webhooks_${process.pid}`;
      try {
        rows.push(...(await bench('PostgreSQL', postgresStorage(sql, { schema }))));
      } finally {
        await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await sql.end();
      }
    }
  }
  console.log(`\nviewsync webhooks benchmark: ${startLine}; at the end: ${machineLine().replace(/^.*load average /, 'load average ')}\n`);
  console.log(renderTable(rows));
}
