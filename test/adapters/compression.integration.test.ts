import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { compressionSettings, compressStream, negotiateEncoding } from '../../adapters/compress.js';
import { createListener, type SyncServer } from '../../adapters/node.js';
import { handleRequest, memoryStorage, type SyncContext } from '../../src/index.js';
import { Clients, uniqueName, waitFor } from '../interop/client.js';
import { httpRequest } from '../support/http-request.js';
import { memoryInUse } from '../support/memory.js';
import { runtimeMutators } from '../runtime/app.js';
import { runtimeContext } from '../runtime/context.js';
import { serversStoppedAfterEach } from './servers.js';

// Compressed answers from the Node server: what is compressed and how, and that a client that
// reads slowly or goes away holds nothing. Bun's server shares compress.ts (test/runtime).
const CHROMIUM = 'gzip, deflate, br, zstd';

const { start } = serversStoppedAfterEach();

describe('negotiateEncoding', () => {
  it.each([
    [CHROMIUM, 'br'],
    ['gzip, deflate', 'gzip'],
    ['GZIP', 'gzip'],
    ['x-gzip', 'gzip'],
    ['br;q=0.5, gzip', 'gzip'],
    ['br;q=1.0, gzip;q=0.9', 'br'],
    ['gzip;q=0.8, br;q=0.8', 'br'],
    ['br;q=0, gzip', 'gzip'],
    ['*', 'br'],
    ['*;q=0.5, br;q=0', 'gzip'],
    ['gzip;q=0.5, identity', undefined],
    ['gzip;q=0.5, identity;q=0.2', 'gzip'],
    ['identity', undefined],
    ['identity;q=0, gzip;q=0', undefined],
    ['*;q=0', undefined],
    ['br;q=0, gzip;q=0', undefined],
    ['deflate, zstd', undefined],
    ['br;q=nonsense', undefined],
    ['br;q=2', undefined],
    ['', undefined],
    [undefined, undefined],
    [' , ;q=1, br ; q = 0.3 ', 'br'],
  ])('Accept-Encoding %j answers with %s', (header, expected) => {
    expect(negotiateEncoding(header)).toBe(expected);
  });

  it('prefers the codings in the order offered, and offers only those', () => {
    expect(negotiateEncoding(CHROMIUM, ['gzip', 'br'])).toBe('gzip');
    expect(negotiateEncoding('br;q=1, gzip;q=0.5', ['gzip', 'br'])).toBe('br');
    expect(negotiateEncoding('br', ['gzip'])).toBeUndefined();
    expect(negotiateEncoding(CHROMIUM, [])).toBeUndefined();
  });
});

describe('compressed answers from the Node server', () => {
  it('a pull of 20,000 entries, with Accept-Encoding as Chromium sends it, is streamed br-encoded and decodes to the uncompressed answer', async () => {
    const server = await start(await space(20_000));
    const plain = await rawPull(server, 'identity');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toMatch(/Accept-Encoding/);
    expect(plain.body.length).toBeGreaterThan(1024 * 1024); // a stream, not one string
    const br = await rawPull(server, CHROMIUM);
    expect(br.status).toBe(200);
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toMatch(/Accept-Encoding/);
    expect(br.headers['content-length']).toBeUndefined();
    expect(br.headers['transfer-encoding']).toBe('chunked');
    expect(br.body.length).toBeLessThan(plain.body.length * 0.25);
    expect(JSON.parse(brotliDecompressSync(br.body).toString())).toEqual(JSON.parse(plain.body.toString()));
  });

  it('a smaller pull (one string) is compressed whole, with a Content-Length; gzip when only gzip is accepted', async () => {
    const server = await start(await space(200));
    const plain = await rawPull(server, '');
    expect(plain.body.length).toBeGreaterThan(10_000);
    const gzip = await rawPull(server, 'gzip, deflate');
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(Number(gzip.headers['content-length'])).toBe(gzip.body.length);
    expect(JSON.parse(gunzipSync(gzip.body).toString())).toEqual(JSON.parse(plain.body.toString()));
    const br = await rawPull(server, 'br');
    expect(br.headers['content-encoding']).toBe('br');
    expect(JSON.parse(brotliDecompressSync(br.body).toString())).toEqual(JSON.parse(plain.body.toString()));
  });

  it('sends as it is what the request does not accept: identity, q=0, no header', async () => {
    const server = await start(await space(200));
    for (const accept of ['identity', 'br;q=0, gzip;q=0', '*;q=0', 'deflate', undefined]) {
      const { headers, body } = await rawPull(server, accept);
      expect(headers['content-encoding'], String(accept)).toBeUndefined();
      expect(headers.vary, String(accept)).toMatch(/Accept-Encoding/);
      expect(Number(headers['content-length'])).toBe(body.length);
      expect(JSON.parse(body.toString()).patch).toHaveLength(201);
    }
  });

  it('leaves answers under the threshold as they are: a push’s {}, a small pull, an error', async () => {
    const server = await start(await space(3));
    const pull = await rawPull(server, CHROMIUM);
    expect(pull.headers['content-encoding']).toBeUndefined();
    expect(pull.headers.vary ?? '').not.toMatch(/Accept-Encoding/);
    const push = await raw(
      server,
      'POST',
      '/push',
      CHROMIUM,
      JSON.stringify({ pushVersion: 1, clientGroupID: 'g', profileID: 'p', schemaVersion: '', mutations: [] }),
    );
    expect(push.headers['content-encoding']).toBeUndefined();
    expect(push.body.toString()).toBe('{}');
    const error = await raw(server, 'POST', '/pull', CHROMIUM, '{"pullVersion":');
    expect(error.status).toBe(400);
    expect(error.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(error.body.toString())).toMatchObject({ error: 'BadRequest' });
  });

  it('refuses levels zlib would refuse at the first large answer, when the listener is made', () => {
    const ctx = runtimeContext(memoryStorage());
    expect(() => createListener(ctx, { compression: { gzipLevel: 42 } })).toThrow('compression.gzipLevel must be a whole number from 1 to 9; it was 42');
    expect(() => createListener(ctx, { compression: { brotliQuality: 12 } })).toThrow(
      'compression.brotliQuality must be a whole number from 0 to 11; it was 12',
    );
    expect(() => createListener(ctx, { compression: { brotliQuality: Number.NaN } })).toThrow(RangeError);
    expect(() => createListener(ctx, { compression: false })).not.toThrow();
  });

  it('the threshold and levels are settings, and compression: false turns it off', async () => {
    const ctx = await space(3);
    const low = await start(ctx, { compression: { threshold: 64 } });
    expect((await rawPull(low, CHROMIUM)).headers['content-encoding']).toBe('br');
    const levels = await start(await space(2_000), { compression: { brotliQuality: 5, gzipLevel: 1 } });
    const defaults = await start(await space(2_000));
    expect((await rawPull(levels, 'br')).body.length).toBeLessThan((await rawPull(defaults, 'br')).body.length);
    expect((await rawPull(levels, 'gzip')).body.length).toBeGreaterThan((await rawPull(defaults, 'gzip')).body.length);
    expect((await rawPull(await start(ctx, { compression: { threshold: 64, encodings: ['gzip'] } }), CHROMIUM)).headers['content-encoding']).toBe('gzip');
    const off = await start(await space(20_000), { compression: false });
    const { headers } = await rawPull(off, CHROMIUM);
    expect(headers['content-encoding']).toBeUndefined();
    expect(headers.vary ?? '').not.toMatch(/Accept-Encoding/);
  });

  it('a poke stream is never compressed, and still delivers each poke at once', async () => {
    const ctx = await space(3);
    const server = await start(ctx);
    const socket = await rawSocket(server, `GET /poke HTTP/1.1\r\nhost: x\r\naccept-encoding: ${CHROMIUM}\r\n\r\n`);
    let text = '';
    socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk));
    await waitFor(() => text.includes('retry: '), { message: 'the poke stream to open' });
    expect(text).toMatch(/content-type: text\/event-stream/i);
    expect(text).not.toMatch(/content-encoding/i);
    await push(ctx, 'put', { key: 'poked', value: 1 });
    await waitFor(() => text.includes('data: poke\n\n'), { timeout: 2_000, message: 'the poke' });
    socket.destroy();
  });

  it('clients that go mid-pull release what they held, and the server keeps answering', async () => {
    const server = await start(await incompressibleSpace());
    await rawPull(server, 'br'); // warm up
    const before = memoryInUse();
    for (let i = 0; i < 20; i++) {
      const socket = await rawSocket(server, pullRequest('br'));
      // Read the head and some of the body, then hang up.
      await new Promise((resolve) => socket.once('data', resolve));
      socket.destroy();
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = memoryInUse();
    expect(after - before).toBeLessThan(32 * 1024 * 1024);
    const { headers, body } = await rawPull(server, 'gzip');
    expect(headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(body).toString()).patch).toHaveLength(21);
  });

  it('20 clients that never read a compressed 20 MiB pull hold a little each, not the pull', async () => {
    const server = await start(await incompressibleSpace());
    await rawPull(server, 'br'); // warm up
    const before = memoryInUse();
    const sockets: Socket[] = [];
    for (let i = 0; i < 20; i++) sockets.push(await rawSocket(server, pullRequest(i % 2 ? 'br' : 'gzip'), true));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const held = memoryInUse() - before;
    for (const socket of sockets) socket.destroy();
    // Each holds a slice or two, a compressor's window and a socket's buffers: a few MiB, not
    // 20 MiB of text and 15 MiB of its compressed bytes.
    expect(held / 20).toBeLessThan(4 * 1024 * 1024);
  });

  it('the real client syncs a large space through br-encoded pulls', async () => {
    const ctx = await space(20_000);
    const server = await start(ctx);
    const encodings: Array<string | null> = [];
    const original = globalThis.fetch;
    // Undici sends `gzip, deflate` on its own; a browser sends br too.
    globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      request.headers.set('accept-encoding', CHROMIUM);
      const response = await original(request);
      if (request.url.endsWith('/pull')) encodings.push(response.headers.get('content-encoding'));
      return response;
    };
    const clients = new Clients(() => server.url);
    try {
      const rep = clients.open({ name: uniqueName('compressed'), pullInterval: null });
      const count = () =>
        rep.query((tx) =>
          tx
            .scan({ prefix: 'todo/' })
            .keys()
            .toArray()
            .then((keys) => keys.length),
        );
      await waitFor(async () => (await count()) === 20_000, { timeout: 30_000, message: 'the client to hold 20,000 entries' });
      expect(await rep.query((tx) => tx.get('todo/00012345'))).toEqual(row(12_345));
      expect(encodings[0]).toBe('br');
    } finally {
      globalThis.fetch = original;
      await clients.closeAll();
    }
  });
});

describe('compressStream', () => {
  /** A source of incompressible 64 KiB chunks that counts how many it was asked for. */
  function source() {
    const state = { pulled: 0, cancelled: undefined as unknown };
    const stream = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          state.pulled++;
          controller.enqueue(randomBytes(64 * 1024));
        },
        cancel(reason) {
          state.cancelled = reason;
        },
      },
      { highWaterMark: 0 },
    );
    return { stream, state };
  }

  it('reads its source only as fast as its own reader reads', async () => {
    const { stream, state } = source();
    const compressed = compressStream(stream, 'br', compressionSettings({})!);
    const reader = compressed.getReader();
    await reader.read();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const unread = state.pulled;
    // The compressor's input room and its output queue hold a few chunks, not the source.
    expect(unread).toBeLessThan(16);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(state.pulled).toBe(unread);
    for (let i = 0; i < 100; i++) await reader.read();
    expect(state.pulled).toBeGreaterThan(unread);
    await reader.cancel('gone');
  });

  it('cancelling it cancels the source', async () => {
    const { stream, state } = source();
    const reader = compressStream(stream, 'gzip', compressionSettings({})!).getReader();
    await reader.read();
    await reader.cancel('the client went');
    expect(state.cancelled).toBe('the client went');
    const pulled = state.pulled;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(state.pulled).toBe(pulled);
  });

  it('a source that fails fails it', async () => {
    let sent = false;
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return controller.error(new Error('the store failed'));
        sent = true;
        controller.enqueue(new TextEncoder().encode('{"patch":['));
      },
    });
    const reader = compressStream(failing, 'br', compressionSettings({})!).getReader();
    await expect(
      (async () => {
        for (;;) if ((await reader.read()).done) return;
      })(),
    ).rejects.toThrow('the store failed');
  });
  it('a compressor that fails lets go of its source', async () => {
    let cancelled: unknown;
    // Chunks zlib refuses: the compressor fails, as it would on a zlib error of its own.
    const refused = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(42 as unknown as Uint8Array),
      cancel: (reason) => void (cancelled = reason),
    });
    const reader = compressStream(refused, 'gzip', compressionSettings({})!).getReader();
    await expect(reader.read()).rejects.toThrow(/chunk/);
    await waitFor(() => cancelled !== undefined, { message: 'the source to be cancelled' });
    expect(String(cancelled)).toMatch(/chunk/);
  });
});

/** A todo-like row; its key is `todo/<n, 8 digits>`. */
function row(n: number) {
  return { title: `Item ${n}`, done: n % 3 === 0, order: n };
}

/** A context whose space holds `entries` rows. */
async function space(entries: number): Promise<SyncContext> {
  const ctx: SyncContext = runtimeContext(memoryStorage(), {
    mutators: {
      ...runtimeMutators,
      fill: async (tx, { count }: { count: number }) => {
        for (let n = 0; n < count; n++) await tx.set(`todo/${String(n).padStart(8, '0')}`, row(n));
      },
    },
  });
  await push(ctx, 'fill', { count: entries });
  return ctx;
}

/** Twenty values of 0.9 MiB of random text (base64: it compresses to about 3/4), a 19 MiB pull. */
async function incompressibleSpace(): Promise<SyncContext> {
  const values = Array.from({ length: 20 }, () => randomBytes(700 * 1024).toString('base64'));
  const ctx: SyncContext = runtimeContext(memoryStorage(), {
    mutators: {
      fill: async (tx) => {
        for (const [i, value] of values.entries()) await tx.set(`k${i}`, value);
      },
    },
  });
  await push(ctx, 'fill', {});
  return ctx;
}

/** Runs one mutation as a client of its own (so always its first, id 1). */
async function push(ctx: SyncContext, name: string, args: unknown): Promise<void> {
  const clientID = uniqueName(name);
  const body = JSON.stringify({
    pushVersion: 1,
    clientGroupID: `${clientID}-group`,
    profileID: 'p',
    schemaVersion: '',
    mutations: [{ clientID, id: 1, name, args, timestamp: 0 }],
  });
  const response = await handleRequest(new Request('http://x/push', { method: 'POST', headers: { 'content-type': 'application/json' }, body }), ctx);
  if (response.status !== 200) throw new Error(await response.text());
}

const PULL = JSON.stringify({ pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' });

function pullRequest(accept: string): string {
  return `POST /pull HTTP/1.1\r\nhost: x\r\naccept-encoding: ${accept}\r\ncontent-type: application/json\r\ncontent-length: ${PULL.length}\r\n\r\n${PULL}`;
}

/** A full pull with `node:http`, which leaves the body as the server sent it. */
function rawPull(server: SyncServer, accept: string | undefined) {
  return raw(server, 'POST', '/pull', accept, PULL);
}

function raw(server: SyncServer, method: string, path: string, accept: string | undefined, body: string) {
  return httpRequest(new URL(path, server.url), method, body, accept);
}

/** A socket that has sent `request`; paused (it reads nothing) when `stalled`. */
function rawSocket(server: SyncServer, request: string, stalled = false): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect({ port: server.port, host: '127.0.0.1' }, () => {
      if (stalled) socket.pause();
      socket.write(request);
      resolve(socket);
    });
  });
}
