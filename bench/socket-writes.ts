/**
 * The floor under a poke's fan-out: how long plain `node:net` takes to write one small chunk to
 * each of N loopback sockets whose readers sit in another process, with nothing of viewsync in
 * between. A poke to N streams is N such writes; on a loaded machine each costs tens of
 * microseconds in the kernel, which no server code can save.
 *
 * Run: `node --import tsx bench/socket-writes.ts` (seconds). Env: SOCKETS (9000), ROUNDS (10).
 * Not part of `npm test`.
 */
import { fork } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import { machineLine } from './cpu.js';
import { median, quantile } from './measure.js';

const SOCKETS = Number(process.env.SOCKETS ?? 9000);
const ROUNDS = Number(process.env.ROUNDS ?? 10);

if (process.argv[2] === 'readers') await holdReaders(Number(process.argv[3]));
else await measure();

async function measure(): Promise<void> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => sockets.push(socket.setNoDelay(true)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const readers = fork(new URL(import.meta.url).pathname, ['readers', String(port)], { execArgv: ['--import', 'tsx'], env: { ...process.env } });
  await new Promise((resolve) => readers.once('message', resolve));
  const chunk = Buffer.from('data: poke\n\n');
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const start = performance.now();
    for (const socket of sockets) socket.write(chunk);
    times.push(performance.now() - start);
  }
  console.log(
    `${SOCKETS.toLocaleString('en-US')} loopback sockets, one ${chunk.byteLength}-byte write each: p50 ${median(times).toFixed(0)} ms, p99 ${quantile(times, 0.99).toFixed(0)} ms of ${ROUNDS} rounds (${((median(times) * 1000) / SOCKETS).toFixed(1)} µs a write)`,
  );
  console.log(machineLine());
  readers.kill();
  server.close();
  for (const socket of sockets) socket.destroy();
}

/** The reading side, in a process of its own as a server's clients are: connects and reads, nothing more. */
async function holdReaders(port: number): Promise<void> {
  for (let from = 0; from < SOCKETS; from += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, SOCKETS - from) }, () => new Promise<void>((resolve) => connect(port, '127.0.0.1', resolve).on('data', () => {}))),
    );
  }
  process.send!('connected');
}
