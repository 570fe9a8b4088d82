/**
 * Compressed answers in each runtime, against a real server: a pull large enough to be streamed
 * comes back compressed and decodes to the answer sent as it is, and a poke stream is left
 * alone. `chromium` is the coding expected for Chromium's Accept-Encoding: br in Node; gzip in
 * Bun and Deno (viewsync prefers it there) and from Miniflare, which compresses as Cloudflare's
 * edge would and takes the first coding listed.
 */
import { connect } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../support/http-request.js';
import type { RunningServer } from './suite.js';

/** Accept-Encoding as Chromium sends it. */
const CHROMIUM = 'gzip, deflate, br, zstd';

export function describeCompression(name: string, start: () => Promise<RunningServer>, { chromium }: { chromium: 'br' | 'gzip' }): void {
  describe(`runtime: ${name}, compression`, () => {
    let server: RunningServer;
    let plain: Buffer;
    beforeAll(async () => {
      server = await start();
      await fill(server.url);
      plain = (await pull(server.url, 'identity')).body;
    }, 120_000);
    afterAll(() => server?.stop());

    it(`a streamed pull comes back ${chromium}-encoded for Chromium’s Accept-Encoding, and decodes to the same JSON`, async () => {
      expect(plain.length).toBeGreaterThan(1024 * 1024); // over the core's streaming threshold
      const { headers, body } = await pull(server.url, CHROMIUM);
      expect(headers['content-encoding']).toBe(chromium);
      expect(body.length).toBeLessThan(plain.length / 2);
      expect(JSON.parse(decode(body, chromium))).toEqual(JSON.parse(plain.toString()));
    });

    it('br or gzip when only that one is accepted; as it is for identity or q=0', async () => {
      for (const coding of ['br', 'gzip'] as const) {
        const { headers, body } = await pull(server.url, coding);
        expect(headers['content-encoding']).toBe(coding);
        expect(JSON.parse(decode(body, coding))).toEqual(JSON.parse(plain.toString()));
      }
      for (const accept of ['identity', 'gzip;q=0, br;q=0']) expect((await pull(server.url, accept)).headers['content-encoding']).toBeUndefined();
    });

    it('a poke stream asked for with Chromium’s Accept-Encoding is not compressed and delivers pokes', async () => {
      const socket = connect({ port: Number(server.url.port), host: server.url.hostname });
      socket.write(`GET ${new URL('poke', server.url).pathname} HTTP/1.1\r\nhost: x\r\naccept-encoding: ${CHROMIUM}\r\n\r\n`);
      let text = '';
      socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk));
      try {
        await until(() => text.includes('retry: '), 'the poke stream to open');
        expect(text).toMatch(/content-type: text\/event-stream/i);
        expect(text).not.toMatch(/content-encoding/i);
        await push(server.url, [{ key: `${name}/poked`, value: 1 }]);
        await until(() => text.includes('data: poke\n\n'), 'a poke');
      } finally {
        socket.destroy();
      }
    });
  });
}

const decode = (body: Buffer, coding: 'br' | 'gzip') => (coding === 'br' ? brotliDecompressSync(body) : gunzipSync(body)).toString();

let nextID = 0;

/** Over 1 MiB of rows, in pushes under the app's 64 KiB body limit. */
async function fill(url: URL): Promise<void> {
  for (let batch = 0; batch < 36; batch++) {
    await push(
      url,
      Array.from({ length: 60 }, (_, i) => ({
        key: `row/${String(batch * 60 + i).padStart(5, '0')}`,
        value: Array.from({ length: 150 }, (_, j) => ((batch * 60 + i) * j) % 1000),
      })),
    );
  }
}

async function push(url: URL, puts: Array<{ key: string; value: unknown }>): Promise<void> {
  const mutations = puts.map((args) => ({ clientID: 'compression-filler', id: ++nextID, name: 'put', args, timestamp: 0 }));
  const { status, body } = await post(
    url,
    'push',
    JSON.stringify({ pushVersion: 1, clientGroupID: 'compression-fill', profileID: 'p', schemaVersion: '', mutations }),
  );
  if (status !== 200 || body.toString() !== '{}') throw new Error(`push answered ${status}: ${body.toString().slice(0, 300)}`);
}

const PULL = JSON.stringify({ pullVersion: 1, clientGroupID: 'compression', cookie: null, profileID: 'p', schemaVersion: '' });

/** A full pull with node:http, which leaves the body as it came. */
const pull = (url: URL, accept: string) => post(url, 'pull', PULL, accept);

const post = (url: URL, path: string, body: string, accept?: string) => httpRequest(new URL(path, url), 'POST', body, accept);

async function until(condition: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
