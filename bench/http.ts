/**
 * HTTP benchmark: an up-to-date pull (empty patch) through the Node adapter, against a bare
 * `node:http` handler that parses and echoes the same JSON body, and against the same core
 * behind `@hono/node-server`'s bridge. Each server runs in its own process; autocannon drives
 * it from this one. Rounds alternate the servers so that drift in machine load hits all alike.
 *
 * Run: `npm run bench:http` (about a minute). Not part of `npm test`.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';

const KINDS = ['bare', 'viewsync', 'hono'] as const;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SECONDS = Number(process.env.SECONDS ?? 5);

async function measure(kind: (typeof KINDS)[number]): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./http-server.ts', import.meta.url).pathname, kind], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
    });
    const { port, pull } = JSON.parse(line);
    const body = JSON.stringify(pull);
    // Warm up the JIT, then measure.
    await autocannon({ url: `http://127.0.0.1:${port}/pull`, method: 'POST', headers: { 'content-type': 'application/json' }, body, connections: 10, duration: 1 });
    const result = await autocannon({ url: `http://127.0.0.1:${port}/pull`, method: 'POST', headers: { 'content-type': 'application/json' }, body, connections: 10, duration: SECONDS });
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
    console.error(`round ${round}: ${kind.padEnd(8)} ${rate.toFixed(0)} req/s`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const bare = median(rates.bare!);
console.log('\nserver    | req/s (median of rounds) | vs bare node:http');
console.log('----------|--------------------------|------------------');
for (const kind of KINDS) {
  const rate = median(rates[kind]!);
  console.log(`${kind.padEnd(9)} | ${rate.toFixed(0).padStart(24)} | ${(rate / bare).toFixed(2)}`);
}
