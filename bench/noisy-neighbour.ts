/**
 * Noisy neighbour: does one tenant's flood slow another tenant's pushes? Tenant A pushes to its
 * space as fast as it can over several concurrent connections, ignoring 429s as a hostile client
 * would; tenant B pushes to its own space at a steady, modest rate. B's push latency is measured
 * without the flood and with it, in alternating rounds of one run, so drift in the machine's load
 * hits both alike. The server is the real Node adapter (`createListener`) over HTTP, in a process
 * of its own, with rates set as an app would set them; a second server with no rates shows what
 * they buy. A floods from a process of its own; B's client is this one. All three share the
 * machine's cores.
 *
 * Run: `npm run bench:noisy` (about a minute). `ROUNDS`, `SECONDS`, `FLOOD_CONNECTIONS` and
 * `B_RATE` (B's pushes a second) change the plan. Not part of `npm test`.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { quantile } from './measure.js';
import { renderTable, type Row } from './table.js';
import { createContext } from '../src/index.js';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SECONDS = Number(process.env.SECONDS ?? 4);
const FLOOD_CONNECTIONS = Number(process.env.FLOOD_CONNECTIONS ?? 8);
const B_RATE = Number(process.env.B_RATE ?? 20);
/** What an app might allow: a few tabs typing fast, each tab a client group of one user. */
const RATES = { pushesPerSecond: 20, userPushesPerSecond: 50, pullsPerSecond: 20 };

/** The server: each request's user is its Authorization header, its space the `space` query parameter. */
async function serve(withRates: boolean): Promise<void> {
  const { memoryStorage } = await import('../src/index.js');
  const { createListener } = await import('../adapters/node.js');
  const ctx = createContext({
    storage: memoryStorage(),
    mutators: { put: async (tx: import('../src/index.js').WriteTransaction, { key, value }: { key: string; value: number }) => tx.set(key, value) },
    authenticate: (request: Request) => request.headers.get('authorization') || null,
    space: (request: Request) => new URL(request.url).searchParams.get('space') ?? '',
    ...(withRates && { rates: RATES }),
    pokes: false as const,
    onError: () => {},
  });
  const server = createServer(createListener(ctx)).listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (server.address() as AddressInfo).port })));
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}

async function main(): Promise<void> {
  const servers = { rates: await start('rates'), 'no rates': await start('none') };
  try {
    const results = new Map<string, { b: number[]; a: { ok: number; refused: number } }>();
    for (let round = 0; round < ROUNDS + 1; round++) {
      for (const [name, server] of Object.entries(servers)) {
        for (const flood of [false, true]) {
          const measured = await runRound(server, flood);
          // The first round warms the JIT of both processes: not counted.
          if (round === 0) continue;
          const key = `${name}, ${flood ? 'with' : 'without'} the flood`;
          const sum = results.get(key) ?? { b: [], a: { ok: 0, refused: 0 } };
          sum.b.push(...measured.b);
          sum.a.ok += measured.a.ok;
          sum.a.refused += measured.a.refused;
          results.set(key, sum);
          process.stderr.write(`[noisy] round ${round} ${key}: B p50 ${quantile(measured.b, 0.5).toFixed(2)} ms\n`);
        }
      }
    }
    const rows: Row[] = [];
    for (const [key, { b, a }] of results) {
      const seconds = ROUNDS * SECONDS;
      rows.push({ benchmark: `B push p50, ${key}`, value: quantile(b, 0.5), unit: 'ms', note: `${b.length} pushes` });
      rows.push({ benchmark: `B push p95, ${key}`, value: quantile(b, 0.95), unit: 'ms' });
      if (key.includes('with the flood'))
        rows.push({
          benchmark: `A pushes, ${key}`,
          value: (a.ok + a.refused) / seconds,
          unit: 'requests/s',
          note: `${Math.round(a.ok / seconds)}/s accepted, ${Math.round(a.refused / seconds)}/s refused (429)`,
        });
    }
    for (const name of Object.keys(servers)) {
      const quiet = results.get(`${name}, without the flood`)!.b;
      const loud = results.get(`${name}, with the flood`)!.b;
      rows.push({ benchmark: `B p50 with / without the flood, ${name}`, value: quantile(loud, 0.5) / quantile(quiet, 0.5), unit: 'x' });
      rows.push({ benchmark: `B p95 with / without the flood, ${name}`, value: quantile(loud, 0.95) / quantile(quiet, 0.95), unit: 'x' });
    }
    console.log(
      `viewsync noisy neighbour — node ${process.version}; ${FLOOD_CONNECTIONS} flooding connections, B at ${B_RATE} pushes/s, rates ${JSON.stringify(RATES)}\n`,
    );
    console.log(renderTable(rows));
  } finally {
    for (const { stop } of Object.values(servers)) stop();
  }
}

/** Starts a server process; its base URL, and how to stop it. */
async function start(kind: 'rates' | 'none'): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, 'server', kind], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${JSON.parse(line).port}`, stop: () => child.kill('SIGTERM') };
}

/**
 * One round: B's push latencies (ms), and A's pushes accepted and refused when it floods. A
 * floods from a process of its own, as another tenant's clients would be elsewhere: in this one,
 * B's requests would wait behind A's answers in the generator's own event loop.
 */
async function runRound(server: { url: string }, flood: boolean): Promise<{ b: number[]; a: { ok: number; refused: number } }> {
  if (!flood) return { b: await steadyLoop(server.url, performance.now() + SECONDS * 1000), a: { ok: 0, refused: 0 } };
  const child = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, 'flood', server.url], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  await lines.next(); // ready
  child.stdin!.end('go\n');
  const b = await steadyLoop(server.url, performance.now() + SECONDS * 1000);
  const a = JSON.parse((await lines.next()).value as string) as { ok: number; refused: number };
  return { b, a };
}

/** The flooding process: waits for `go`, floods for SECONDS, prints what it got. */
async function floodProcess(url: string): Promise<void> {
  console.log('ready');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  const until = performance.now() + SECONDS * 1000;
  const a = { ok: 0, refused: 0 };
  await Promise.all(Array.from({ length: FLOOD_CONNECTIONS }, (_, i) => floodLoop(url, i, until, a)));
  console.log(JSON.stringify(a));
}

let session = 0;

/** Tenant A: one client group per connection, each pushing as soon as its last answer came, re-sending what was not accepted. */
async function floodLoop(url: string, connection: number, until: number, counts: { ok: number; refused: number }): Promise<void> {
  const client = new Client(`${url}/push?space=a`, 'tenant-a', `a-${process.pid}-${connection}`);
  while (performance.now() < until) {
    const status = await client.push();
    if (status === 200) counts.ok++;
    else if (status === 429) counts.refused++;
    else throw new Error(`A's push answered ${status}`);
  }
}

/** Tenant B: one client group pushing at B_RATE a second; each push's latency in ms. */
async function steadyLoop(url: string, until: number): Promise<number[]> {
  const client = new Client(`${url}/push?space=b`, 'tenant-b', `b-${++session}`);
  const latencies: number[] = [];
  const every = 1000 / B_RATE;
  for (let next = performance.now(); next < until; next += every) {
    const wait = next - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const started = performance.now();
    const status = await client.push();
    latencies.push(performance.now() - started);
    if (status !== 200) throw new Error(`B's push answered ${status}: B must never be refused`);
  }
  return latencies;
}

/** A client group of one client, numbering its mutations as Replicache does. */
class Client {
  readonly #url: string;
  readonly #user: string;
  readonly #group: string;
  #acknowledged = 0;

  constructor(url: string, user: string, group: string) {
    this.#url = url;
    this.#user = user;
    this.#group = group;
  }

  /** Pushes the next pending mutation (the one after the last acknowledged); resolves to the status. */
  async push(): Promise<number> {
    const id = this.#acknowledged + 1;
    const body = JSON.stringify({
      pushVersion: 1,
      clientGroupID: this.#group,
      profileID: 'p',
      schemaVersion: '',
      mutations: [{ clientID: `${this.#group}-c`, id, name: 'put', args: { key: `k${id % 100}`, value: id }, timestamp: performance.now() }],
    });
    const response = await fetch(this.#url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: this.#user }, body });
    await response.arrayBuffer();
    if (response.status === 200) this.#acknowledged = id;
    return response.status;
  }
}

// Last: the class and counters above must exist before either runs.
if (process.argv[2] === 'server') await serve(process.argv[3] === 'rates');
else if (process.argv[2] === 'flood') await floodProcess(process.argv[3]!);
else await main();
