/**
 * Webhook isolation: does a receiver that hangs slow another webhook's deliveries (issue 46)?
 * Webhook `b` wants N spaces; one write (`transact`, one key) goes into each of them at once, and
 * the time is from just before the writes to the arrival at `b`'s receiver of the last space's
 * first delivery. Beside `b`, webhook `a` wants the same spaces, and its receiver either answers
 * (both healthy), or takes each request and never answers (hanging, `a`'s `timeoutMs` one of
 * TIMEOUTS: 4 s as in the issue, and the default 15 s); or there is no `a` (`b` alone, a floor).
 * The three kinds take turns round by round in one run (which goes first turns too), so the
 * machine's drift hits them alike. The ratio is the median of `b`'s times beside a hanging `a`
 * over its median with both healthy (aim: within 1.2x); round by round, each hanging round over
 * the healthy round of the same turn.
 *
 * Deliveries, DELIVERY: `runner`, `startWebhooks(ctx)` with its default options, one context and
 * runner per kind for the ROUNDS turns of a size and timeout, woken by the writes. Before the
 * turns are counted, a write into N spaces of each kind and a wait of `timeoutMs` + 1 s let the
 * hanging receiver's first attempts run out their timeout, so the counted rounds meet it as a
 * runner does once it knows: probed, one attempt at a time, with a growing backlog. `round`, one
 * `deliverWebhooks(ctx)` after the writes, a context a round (a round walks every space its
 * webhooks want); it ends once `b` has everything and the hanging receiver's attempts are let go
 * (not counted), after one turn that is not counted. Stores, STORES: `memory` (a new one for each
 * size and timeout) and `postgres` (one schema, new spaces each round, dropped at the end; the
 * server DATABASE_URL names).
 *
 * The receivers are `node:http` servers in a child process, so that answering is not billed to
 * the process that delivers; they count the requests the hanging one took in each round and the
 * most it held unanswered at once.
 *
 * Run: `npm run bench:webhook-isolation` (about six minutes with PostgreSQL, most of it waiting
 * out timeouts). Env: STORES (memory,postgres), DELIVERY (runner,round), SPACES (24,48,96,192),
 * TIMEOUTS (4000,15000), ROUNDS (9: a multiple of 3 gives each kind the first turn as often).
 * Not part of `npm test`. Progress on stderr, the table on stdout.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import postgres from 'postgres';
import { createContext, memoryStorage, type Storage, type SyncContext } from '../src/index.js';
import { deliverWebhooks, startWebhooks, transact, type WebhookOptions } from '../src/backend.js';
import { postgresStorage } from '../src/storage/postgres.js';
import { machineLine } from './cpu.js';
import { median, progress } from './measure.js';
import { renderTable, type Row } from './table.js';

/** What the parent asks the receivers: to count `b`'s deliveries from the spaces under `prefix`, or to let the hanging receiver's requests go, or hang again. */
type Ask = { watch: { prefix: string; spaces: number } } | { release: true } | { hang: true };
/** How `a` is in a round: its receiver answers, or never answers, or there is no `a`. */
type Kind = 'healthy' | 'hanging' | 'alone';
const KINDS: readonly Kind[] = ['healthy', 'hanging', 'alone'];
/** What a round came to, told by the receivers once `b` has a delivery from every space. */
interface Done {
  at: number;
  /** Requests the hanging receiver took in the round, and the most it held at once. */
  aRequests: number;
  aMostHeld: number;
}
/** A round as the parent measured it: from just before the writes to `b`'s last first delivery. */
type Took = Done & { ms: number };

// The child process: the receivers, told by the parent what to do.
if (process.argv[2] === '--receivers') {
  let hanging = true;
  let prefix = '';
  let target = 0;
  let seen = new Set<string>();
  let aRequests = 0;
  let aMostHeld = 0;
  const held = new Set<ServerResponse>();
  const body = async (request: IncomingMessage) => {
    let text = '';
    for await (const chunk of request) text += chunk;
    return text;
  };
  const ok = createServer(async (request, response) => {
    await body(request);
    response.writeHead(204).end();
  });
  // Takes each request and never answers; once let go, closes each connection at once.
  const hang = createServer(async (request, response) => {
    if (!hanging) return void request.socket.destroy();
    await body(request);
    aRequests++;
    held.add(response);
    aMostHeld = Math.max(aMostHeld, held.size);
    response.once('close', () => held.delete(response));
  });
  const b = createServer(async (request, response) => {
    const { space } = JSON.parse(await body(request)) as { space: string };
    response.writeHead(204).end();
    if (!space.startsWith(prefix) || seen.has(space)) return;
    seen.add(space);
    if (seen.size === target) process.send!({ done: { at: Date.now(), aRequests, aMostHeld } satisfies Done });
  });
  const listen = (server: typeof b) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  const ports = { ok: await listen(ok), hang: await listen(hang), b: await listen(b) };
  process.on('message', (ask: Ask) => {
    if ('watch' in ask) {
      ({ prefix, spaces: target } = ask.watch);
      seen = new Set();
      aRequests = 0;
      aMostHeld = held.size;
    } else if ('hang' in ask) hanging = true;
    else {
      hanging = false;
      for (const response of held) response.destroy();
    }
    process.send!({ ready: true });
  });
  process.send!({ ports });
} else {
  await main();
}

/** The parent's side of the child: ask, and wait for the answer that has `key`. */
function asker(child: ChildProcess) {
  return <T>(ask: Ask | undefined, key: string) =>
    new Promise<T>((resolve) => {
      const answer = (message: Record<string, unknown>) => {
        if (!(key in message)) return;
        child.off('message', answer);
        resolve(message[key] as T);
      };
      child.on('message', answer);
      if (ask !== undefined) child.send(ask);
    });
}

async function main(): Promise<void> {
  const STORES = (process.env.STORES ?? 'memory,postgres').split(',');
  const DELIVERY = (process.env.DELIVERY ?? 'runner,round').split(',');
  const SIZES = (process.env.SPACES ?? '24,48,96,192').split(',').map(Number);
  const TIMEOUTS = (process.env.TIMEOUTS ?? '4000,15000').split(',').map(Number);
  const ROUNDS = Number(process.env.ROUNDS ?? 9);

  const child = fork(new URL(import.meta.url).pathname, ['--receivers'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = asker(child);
  const ports = await ask<{ ok: number; hang: number; b: number }>(undefined, 'ports');
  const errors: unknown[] = [];
  let groups = 0;

  /** A context whose webhook `b` goes to its receiver, and `a` to the healthy or the hanging one (or is left out); both want the spaces under `prefix`. */
  function context(storage: Storage, prefix: string, kind: Kind, timeoutMs: number): SyncContext {
    const hook = (port: number) => ({
      url: `http://127.0.0.1:${port}/hook`,
      secret: 'a-webhook-secret-of-32-characters-or-more',
      allowPrivateAddresses: true,
      spaces: (space: string) => space.startsWith(prefix),
    });
    const a = { ...hook(kind === 'hanging' ? ports.hang : ports.ok), timeoutMs };
    const webhooks: Record<string, WebhookOptions> = kind === 'alone' ? { b: hook(ports.b) } : { a, b: hook(ports.b) };
    return createContext({
      storage,
      mutators: {},
      changes: { webhooks },
      retention: { clientGroupsMs: false, tombstonesMs: false },
      onError: (error) => errors.push(error),
    });
  }

  /** One write into each of `spaces` spaces under `prefix`, and `b`'s time to hear from all; a round of `deliverWebhooks` after the writes, if asked. */
  async function measure(ctx: SyncContext, prefix: string, spaces: number, round: boolean): Promise<Took & { round?: Promise<unknown> }> {
    await ask({ watch: { prefix, spaces } }, 'ready');
    const done = ask<Done>(undefined, 'done');
    const start = Date.now();
    await Promise.all(Array.from({ length: spaces }, (_, i) => transact(ctx, `${prefix}${i}`, (tx) => tx.set('order', i))));
    const delivering = round ? deliverWebhooks(ctx) : undefined;
    const result = await done;
    return { ...result, ms: result.at - start, round: delivering };
  }

  /** `b`'s times in rounds of one size and timeout, each kind in turn, which goes first turning round by round. */
  async function group(storage: Storage, delivery: string, spaces: number, timeoutMs: number): Promise<Record<Kind, Took[]>> {
    const name = `g${groups++}-${process.pid}`;
    const contexts = Object.fromEntries(KINDS.map((kind) => [kind, context(storage, `${name}-${kind}-`, kind, timeoutMs)])) as Record<Kind, SyncContext>;
    const runners = delivery === 'runner' ? KINDS.map((kind) => startWebhooks(contexts[kind])) : [];
    if (delivery === 'runner') {
      // Not counted: the hanging receiver's first attempts run out their timeout, so that the rounds meet it probed, one attempt at a time.
      for (const kind of KINDS) await measure(contexts[kind], `${name}-${kind}-settle-`, spaces, false);
      await new Promise((resolve) => setTimeout(resolve, timeoutMs + 1_000));
    }
    const took: Record<Kind, Took[]> = { healthy: [], hanging: [], alone: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const kind of [...KINDS.slice(r % 3), ...KINDS.slice(0, r % 3)]) {
        const prefix = `${name}-${kind}-${r}-`;
        // A round of deliverWebhooks walks every space its webhooks want: a context a round, so that it walks this round's only.
        const ctx = delivery === 'round' ? context(storage, prefix, kind, timeoutMs) : contexts[kind];
        const one = await measure(ctx, prefix, spaces, delivery === 'round');
        if (one.round) {
          // It ends once its hanging receiver's attempts are let go (not counted).
          if (kind === 'hanging') await ask({ release: true }, 'ready');
          await one.round;
          await ask({ hang: true }, 'ready');
        }
        took[kind].push(one);
      }
    }
    const stopped = Promise.all(runners.map((runner) => runner.stop()));
    await ask({ release: true }, 'ready');
    await stopped;
    await ask({ hang: true }, 'ready');
    return took;
  }

  const rows: Row[] = [];
  async function bench(store: string, storage: () => Storage): Promise<void> {
    for (const delivery of DELIVERY) {
      if (delivery === 'round') {
        progress(`${store}, ${delivery}: a round of each not counted`);
        await group(storage(), delivery, SIZES[0]!, TIMEOUTS[0]!);
      }
      for (const spaces of SIZES) {
        for (const timeoutMs of TIMEOUTS) {
          const name = `${store}, ${delivery}, ${spaces} spaces, a's timeoutMs ${timeoutMs / 1000} s`;
          progress(`${name}: ${ROUNDS} rounds of each`);
          const took = await group(storage(), delivery, spaces, timeoutMs);
          const ms = Object.fromEntries(KINDS.map((kind) => [kind, took[kind].map((one) => one.ms)])) as Record<Kind, number[]>;
          const ratios = ms.hanging.map((hanging, r) => hanging / ms.healthy[r]!);
          const range = (values: number[], unit = ' ms') => `${Math.min(...values)}-${Math.max(...values)}${unit}`;
          progress(`${name}: ${KINDS.map((kind) => `${kind} ${ms[kind].join(', ')} ms`).join('; ')}`);
          rows.push({ benchmark: `${name}: b, both healthy (median)`, value: median(ms.healthy), unit: 'ms', note: `round by round ${range(ms.healthy)}` });
          rows.push({
            benchmark: `${name}: b, beside a hanging a (median)`,
            value: median(ms.hanging),
            unit: 'ms',
            note: `round by round ${range(ms.hanging)}; a took ${range(
              took.hanging.map(({ aRequests }) => aRequests),
              '',
            )} requests a round, held at most ${Math.max(...took.hanging.map(({ aMostHeld }) => aMostHeld))} at once`,
          });
          rows.push({
            benchmark: `${name}: b alone (median)`,
            value: median(ms.alone),
            unit: 'ms',
            note: `round by round ${range(ms.alone)}; beside a hanging a / alone: ${(median(ms.hanging) / median(ms.alone)).toFixed(2)}x`,
          });
          rows.push({
            benchmark: `${name}: hanging / healthy`,
            value: median(ms.hanging) / median(ms.healthy),
            unit: 'x',
            note: `round by round ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x (aim: within 1.2x)`,
          });
        }
      }
    }
  }

  const startLine = machineLine();
  progress(startLine);
  for (const store of STORES) {
    if (store === 'memory') await bench('memory', () => memoryStorage());
    else if (store === 'postgres') {
      const sql = postgres(process.env.DATABASE_URL!, { onnotice: () => {}, max: 10, fetch_types: false });
      const schema = `bench_isolation_${process.pid}`;
      try {
        const storage = postgresStorage(sql, { schema });
        await bench('PostgreSQL', () => storage);
      } finally {
        await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await sql.end();
      }
    }
  }
  child.kill();
  if (errors.length > 0) console.error(`${errors.length} errors; the first:`, errors[0]);
  console.log(`\nviewsync webhook isolation benchmark: ${startLine}; at the end: ${machineLine().replace(/^.*load average /, 'load average ')}\n`);
  console.log(renderTable(rows));
}
