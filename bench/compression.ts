/**
 * Compression benchmark: a full pull of a 100k-entry space through the Node server over
 * loopback with fetch, sent as it is and compressed (br and gzip, at a few levels). Servers run
 * in a child process, so they do not share a thread with the client; rounds alternate the
 * settings so that drift in load hits all alike. Bytes are those the server's socket wrote for
 * the answer (headers and chunk framing included); time is from the request until the body is
 * read and decoded (`arrayBuffer()`), as a client sees it; CPU time is each process's, thread
 * pools included, so it says what compressing costs when the machine is busy with other work.
 *
 * Run: `npm run bench:compression` (about a minute; `ROUNDS=9` for more rounds, `ENTRIES=…`
 * for another size). Not part of `npm test`.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { createListener } from '../adapters/node.js';
import type { CompressionOptions } from '../adapters/compress.js';
import { handlePush, memoryStorage, type SyncContext, createContext } from '../src/index.js';
import { median } from './measure.js';
import { renderTable, type Row } from './table.js';

const ENTRIES = Number(process.env.ENTRIES ?? 100_000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
/** Accept-Encoding as Chromium sends it. */
const CHROMIUM = 'gzip, deflate, br, zstd';

/** Each setting: the server's compression options and the Accept-Encoding the client sends. */
const SETTINGS: Record<string, { compression: false | CompressionOptions; accept: string }> = {
  none: { compression: false, accept: CHROMIUM },
  'br 2 (default)': { compression: {}, accept: CHROMIUM },
  'br 1': { compression: { brotliQuality: 1 }, accept: CHROMIUM },
  'br 4': { compression: { brotliQuality: 4 }, accept: CHROMIUM },
  'gzip 4 (default)': { compression: {}, accept: 'gzip' },
  'gzip 1': { compression: { gzipLevel: 1 }, accept: 'gzip' },
};

if (process.argv[2] === '--serve') await serveAll();
else await measureAll();

/** The child: one server per setting on one space, and `/last` for what the last answer wrote and cost. */
async function serveAll(): Promise<void> {
  const ctx: SyncContext = createContext({ storage: memoryStorage(), mutators: { fill } });
  for (let from = 0; from < ENTRIES; from += 10_000) {
    const body = {
      pushVersion: 1,
      clientGroupID: 'seed',
      profileID: 'p',
      schemaVersion: '',
      mutations: [{ clientID: 'seed', id: from / 10_000 + 1, name: 'fill', args: { from, count: Math.min(10_000, ENTRIES - from) }, timestamp: 0 }],
    };
    const response = await handlePush(
      new Request('http://x/push', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      ctx,
    );
    if (response.status !== 200) throw new Error(`seeding failed: ${response.status}`);
  }
  let last = { bytes: 0, cpuMs: 0 };
  const ports: Record<string, number> = {};
  for (const [name, { compression }] of Object.entries(SETTINGS)) {
    const sync = createListener(ctx, { compression });
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.url === '/last') return void res.end(JSON.stringify(last));
      const before = req.socket.bytesWritten;
      // The whole process's CPU time, its thread pool's (where zlib runs) included.
      const cpu = process.cpuUsage();
      res.once('finish', () => {
        const { user, system } = process.cpuUsage(cpu);
        last = { bytes: req.socket.bytesWritten - before, cpuMs: (user + system) / 1000 };
      });
      sync(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ports[name] = (server.address() as AddressInfo).port;
  }
  console.log(JSON.stringify(ports));
}

/** A todo-like row under a random-looking key, as apps with generated IDs have. */
async function fill(tx: Parameters<SyncContext['mutators'][string]>[0], { from, count }: { from: number; count: number }): Promise<void> {
  for (let n = from; n < from + count; n++) {
    const id = ((n * 2654435761) >>> 0).toString(36).padStart(7, '0') + n.toString(36);
    await tx.set(`todo/${id}`, { id, title: `Item ${n}`, done: n % 3 === 0, order: n, revision: n % 7 });
  }
}

async function measureAll(): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, '--serve'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const ports = JSON.parse(
      await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`the server exited with ${code}`)));
      }),
    ) as Record<string, number>;
    const pullBody = JSON.stringify({ pullVersion: 1, clientGroupID: 'bench', cookie: null, profileID: 'p', schemaVersion: '' });
    const pull = async (name: string) => {
      const { accept } = SETTINGS[name]!;
      const start = performance.now();
      const cpu = process.cpuUsage();
      const response = await fetch(`http://127.0.0.1:${ports[name]}/pull`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'accept-encoding': accept },
        body: pullBody,
      });
      const length = (await response.arrayBuffer()).byteLength;
      const ms = performance.now() - start;
      const { user, system } = process.cpuUsage(cpu);
      const server = (await (await fetch(`http://127.0.0.1:${ports[name]}/last`)).json()) as { bytes: number; cpuMs: number };
      return {
        ms,
        bytes: server.bytes,
        serverCpuMs: server.cpuMs,
        clientCpuMs: (user + system) / 1000,
        length,
        encoding: response.headers.get('content-encoding') ?? 'none',
      };
    };
    const names = Object.keys(SETTINGS);
    for (const name of names) await pull(name); // warm up
    const results: Record<string, Array<Awaited<ReturnType<typeof pull>>>> = Object.fromEntries(names.map((name) => [name, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      // Each round starts at a different setting, so none always follows the same one.
      for (let i = 0; i < names.length; i++) {
        const name = names[(i + round) % names.length]!;
        const result = await pull(name);
        results[name]!.push(result);
        console.error(
          `round ${round}: ${name.padEnd(16)} ${result.encoding.padEnd(5)} ${(result.bytes / 1e6).toFixed(2)} MB ${result.ms.toFixed(0)} ms (CPU: server ${result.serverCpuMs.toFixed(0)} ms, client ${result.clientCpuMs.toFixed(0)} ms)`,
        );
      }
    }
    const base = results.none!;
    const baseBytes = median(base.map((r) => r.bytes));
    const baseMs = median(base.map((r) => r.ms));
    const rows: Row[] = [];
    for (const name of names) {
      const bytes = median(results[name]!.map((r) => r.bytes));
      const ms = median(results[name]!.map((r) => r.ms));
      const serverCpu = median(results[name]!.map((r) => r.serverCpuMs));
      const clientCpu = median(results[name]!.map((r) => r.clientCpuMs));
      const note = `${results[name]![0]!.encoding}; ${((bytes / baseBytes) * 100).toFixed(1)}% of the bytes, ${(ms / baseMs).toFixed(2)}x the time; decoded ${(results[name]![0]!.length / 1e6).toFixed(1)} MB`;
      rows.push(
        { benchmark: `full pull of ${ENTRIES} entries, ${name}`, value: bytes / 1e6, unit: 'MB on the wire', note },
        { benchmark: '', value: ms, unit: 'ms', note: 'from request to body read and decoded' },
        { benchmark: '', value: serverCpu, unit: 'ms server CPU', note: `${(serverCpu / median(base.map((r) => r.serverCpuMs))).toFixed(2)}x` },
        { benchmark: '', value: clientCpu, unit: 'ms client CPU', note: `${(clientCpu / median(base.map((r) => r.clientCpuMs))).toFixed(2)}x` },
      );
    }
    console.log(renderTable(rows));
  } finally {
    child.kill();
  }
}
