import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { serve, type SyncServer } from '../../adapters/node.js';
import { mutation, pushBody, testContext } from '../support/helpers.js';
import { memoryInUse } from '../support/memory.js';

const servers: SyncServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

/** A poke stream over a real socket; `text` grows as bytes arrive. */
function openStream(url: URL): Promise<{ res: IncomingMessage; text: () => string; destroy: () => void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL('poke', url), { agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.once('data', () => resolve({ res, text: () => text, destroy: () => req.destroy() }));
    });
    req.once('error', reject).end();
  });
}

async function until(test: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error('Timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

let next = 0;
async function pushPut(url: URL): Promise<void> {
  const body = pushBody(`g${next}`, [mutation(`c${next++}`, 1, 'put', { key: 'k', value: next })]);
  const response = await fetch(new URL('push', url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(response.status).toBe(200);
}

describe('poke streams through the Node adapter', () => {
  test('a stream outlives the request and idle timeouts while heartbeats flow, and gets pokes', async () => {
    const ctx = testContext({ pokes: { heartbeatMs: 100 } });
    const server = await serve(ctx, { port: 0, requestTimeoutMs: 400, headersTimeoutMs: 400, idleTimeoutMs: 400 });
    servers.push(server);
    const stream = await openStream(server.url);
    expect(stream.res.headers['content-type']).toBe('text/event-stream');
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(stream.res.destroyed).toBe(false);
    await pushPut(server.url);
    await until(() => stream.text().includes('data: poke\n\n'));
    stream.destroy();
  });

  // 10,000 sockets and 21 full collections: all CPU, 6.6 s on 2 cores with two other busy
  // processes, but 55 to 85 s at a load of 20 (mostly the opening, ~3 s a wave; no wait in it
  // stalls), past the 60 s default. The bounds only catch a hang: 240 s for the test, 60 s for
  // a wave's streams to be released (about 1 s at that load).
  test('10,000 streams opened and dropped over sockets, 500 at a time: all released, memory flat', async () => {
    const ctx = testContext();
    const server = await serve(ctx, { port: 0 });
    servers.push(server);
    const hub = ctx.hub!;
    const settled: number[] = [];
    let open = 0;
    for (let wave = 0; wave < 20; wave++) {
      const streams = await Promise.all(Array.from({ length: 500 }, () => openStream(server.url)));
      await until(() => hub.streams === 500);
      if (wave === 10) open = memoryInUse();
      for (const stream of streams) stream.destroy();
      await until(() => hub.streams === 0, 60_000);
      settled.push(memoryInUse());
    }
    expect(hub.spaces).toBe(0);
    // The first waves warm caches up (code, pools); after that, dropped streams leave nothing:
    // the last 6,000 streams would leave 1 MiB at even 175 bytes each.
    expect(open - settled[9]!).toBeGreaterThan(2 ** 20);
    expect(settled[19]! - settled[7]!).toBeLessThan(2 ** 20);
  }, 240_000);

  test('stopping the server closes its streams and releases them', async () => {
    const ctx = testContext();
    const server = await serve(ctx, { port: 0 });
    const streams = await Promise.all([openStream(server.url), openStream(server.url)]);
    expect(ctx.hub!.streams).toBe(2);
    await server.stop();
    await until(() => ctx.hub!.streams === 0);
    await until(() => streams.every(({ res }) => res.destroyed || res.complete));
  });

  test("a client that never reads, whose kernel takes every heartbeat, is closed at its stream's age: stream and connection", async () => {
    const ctx = testContext({ pokes: { heartbeatMs: 50, maxStreamAgeMs: 400 } });
    const server = await serve(ctx, { port: 0 });
    servers.push(server);
    const socket = connect(Number(server.url.port), '127.0.0.1');
    socket.pause();
    socket.write(`GET /poke HTTP/1.1\r\nHost: ${server.url.host}\r\n\r\n`);
    await until(() => ctx.hub!.streams === 1);
    const opened = Date.now();
    await until(() => ctx.hub!.streams === 0);
    expect(Date.now() - opened).toBeGreaterThanOrEqual(250);
    // What it was sent waits in its kernel: read now, it ends with a retry field and the close.
    let text = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    const closed = new Promise((resolve) => socket.once('end', resolve));
    socket.resume();
    await closed;
    expect(text).toMatch(/connection: close/i);
    expect(text).toMatch(/retry: \d+\n\n\r\n0\r\n\r\n$/);
    socket.destroy();
  });
});
