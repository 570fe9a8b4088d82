/**
 * HTTP benchmark: an up-to-date pull (empty patch) through each adapter, against a bare handler
 * on the same runtime's own server that parses and echoes the same JSON body. In Node also the
 * same core behind `@hono/node-server`'s bridge. Each server runs in its own process; autocannon
 * drives it from this one. Rounds alternate the servers so that drift in load hits all alike.
 *
 * Run: `npm run build && npm run bench:http` (about two minutes; `RUNTIMES=node` for Node's
 * alone). Not part of `npm test`.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';

const bin = (name: string) => new URL(`../node_modules/.bin/${name}`, import.meta.url).pathname;
const fetchServer = new URL('./fetch-server.js', import.meta.url).pathname;
/** Each server: how to start it. Node's run under tsx; Deno's and Bun's load the built package. */
const SERVERS = {
  'node bare': [process.execPath, '--import', 'tsx', new URL('./http-server.ts', import.meta.url).pathname, 'bare'],
  'node viewsync': [process.execPath, '--import', 'tsx', new URL('./http-server.ts', import.meta.url).pathname, 'viewsync'],
  'node hono': [process.execPath, '--import', 'tsx', new URL('./http-server.ts', import.meta.url).pathname, 'hono'],
  'bun bare': [bin('bun'), fetchServer, 'bare'],
  'bun viewsync': [bin('bun'), fetchServer, 'viewsync'],
  'deno bare': [bin('deno'), 'run', '--allow-net', '--allow-read', fetchServer, 'bare'],
  'deno viewsync': [bin('deno'), 'run', '--allow-net', '--allow-read', fetchServer, 'viewsync'],
} as const;
type Kind = keyof typeof SERVERS;
/** `RUNTIMES=node,bun` measures only those runtimes' servers. */
const KINDS = (Object.keys(SERVERS) as Kind[]).filter((kind) => !process.env.RUNTIMES || process.env.RUNTIMES.split(',').includes(kind.split(' ')[0]!));
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SECONDS = Number(process.env.SECONDS ?? 5);

async function measure(kind: Kind): Promise<number> {
  const [command, ...args] = SERVERS[kind];
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DENO_NO_UPDATE_CHECK: '1' } });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
    });
    const { port, pull } = JSON.parse(line);
    const body = JSON.stringify(pull);
    // Warm up the JIT, then measure.
    await autocannon({
      url: `http://127.0.0.1:${port}/pull`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      connections: 10,
      duration: 1,
    });
    const result = await autocannon({
      url: `http://127.0.0.1:${port}/pull`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      connections: 10,
      duration: SECONDS,
    });
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${kind}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
    return result.requests.average;
  } finally {
    child.kill();
  }
}

const rates: Record<string, number[]> = Object.fromEntries(KINDS.map((k) => [k, []]));
for (let round = 1; round <= ROUNDS; round++) {
  for (const kind of KINDS) {
    const rate = await measure(kind);
    rates[kind]!.push(rate);
    console.error(`round ${round}: ${kind.padEnd(14)} ${rate.toFixed(0)} req/s`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log('\nserver         | req/s (median of rounds) | vs bare, same runtime');
console.log('---------------|--------------------------|----------------------');
for (const kind of KINDS) {
  const rate = median(rates[kind]!);
  const bare = median(rates[`${kind.split(' ')[0]} bare` as Kind]!);
  console.log(`${kind.padEnd(14)} | ${rate.toFixed(0).padStart(24)} | ${(rate / bare).toFixed(2)}`);
}
