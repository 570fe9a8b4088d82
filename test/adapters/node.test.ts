import { createServer, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createListener, serve, type SyncServer } from '../../adapters/node.js';
import { memoryStorage, type SyncContext } from '../../src/index.js';
import { runtimeContext, runtimeMutators } from '../runtime/app.js';

// What only the Node bridge promises (the shared runtime suite covers the common wiring).
const servers: Array<{ stop(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

async function start(ctx: SyncContext): Promise<SyncServer> {
  const server = await serve(ctx, { port: 0 });
  servers.push(server);
  return server;
}

const pull = (url: URL, group = 'g') =>
  fetch(new URL('pull', url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pullVersion: 1, clientGroupID: group, cookie: null, profileID: 'p', schemaVersion: '' }),
  });

/** A push body of about `bytes` bytes: one mutation whose value is padding. */
function bigPush(bytes: number): Uint8Array {
  const mutation = { clientID: 'c', id: 1, name: 'put', args: { key: 'big', value: 'x'.repeat(bytes) }, timestamp: 0 };
  return new TextEncoder().encode(JSON.stringify({ pushVersion: 1, clientGroupID: 'g', mutations: [mutation], profileID: 'p', schemaVersion: '' }));
}

describe('viewsync/node', () => {
  it('streams a large body without a Content-Length, read as fast as it arrives, and applies it', async () => {
    const server = await start({ storage: memoryStorage(), mutators: runtimeMutators });
    const body = bigPush(8 * 1024 * 1024);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= body.length) return controller.close();
        controller.enqueue(body.subarray(sent, sent + 65_536));
        sent += 65_536;
      },
    });
    const response = await fetch(new URL('push', server.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: stream, duplex: 'half' } as RequestInit);
    expect(response.status).toBe(200);
    const { patch } = await (await pull(server.url)).json();
    expect(patch[1]).toEqual({ op: 'put', key: 'big', value: 'x'.repeat(8 * 1024 * 1024) });
  });

  it('survives a client that hangs up mid-body, and keeps serving', async () => {
    const errors: unknown[] = [];
    const server = await start({ ...runtimeContext(memoryStorage()), onError: (error) => errors.push(error) });
    for (const declared of [true, false]) {
      await new Promise<void>((resolve) => {
        const socket = connect(server.port, '127.0.0.1', () => {
          const head = declared ? 'content-length: 100000\r\n' : 'transfer-encoding: chunked\r\n';
          socket.write(`POST /push HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${head}\r\n`);
          socket.write(declared ? '{"pushVersion":1,' : '10\r\n{"pushVersion":1,\r\n');
          setTimeout(() => (socket.destroy(), resolve()), 50);
        });
      });
    }
    expect((await pull(server.url)).status).toBe(200);
    expect(errors).toEqual([]);
  });

  it('answers a request line that makes no URL with a 400, not a crash', async () => {
    const server = await start(runtimeContext(memoryStorage()));
    const raw = await new Promise<string>((resolve) => {
      const socket = connect(server.port, '127.0.0.1', () => socket.write('POST /pull HTTP/1.1\r\nhost: [bad\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}'));
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('close', () => resolve(text));
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400/);
    expect((await pull(server.url)).status).toBe(200);
  });

  it('closes the connection when it answers before reading a body (a 413 by Content-Length)', async () => {
    const server = await start(runtimeContext(memoryStorage()));
    const response = await new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
      const req = httpRequest(new URL('push', server.url), { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': 10_000_000 } }, (res) => {
        res.resume();
        resolve({ status: res.statusCode!, connection: res.headers.connection });
      });
      req.on('error', reject);
      req.write('{"pushVersion":1');
    });
    expect(response).toEqual({ status: 413, connection: 'close' });
  });

  it('createListener mounts in a server of your own, beside your other routes', async () => {
    const sync = createListener(runtimeContext(memoryStorage()));
    const app = createServer((req, res) => {
      if (req.url?.startsWith('/sync/')) return sync(req, res);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('your app');
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    servers.push({ stop: () => new Promise<void>((resolve) => (app.closeAllConnections(), app.close(() => resolve()))) });
    const base = new URL(`http://127.0.0.1:${(app.address() as AddressInfo).port}/sync/`);
    expect(await (await pull(base)).json()).toMatchObject({ patch: [{ op: 'clear' }] });
    expect(await (await fetch(new URL('/other', base))).text()).toBe('your app');
  });

  it('stop() closes open keep-alive connections and resolves once the server is down', async () => {
    const server = await serve(runtimeContext(memoryStorage()), { port: 0 });
    expect((await pull(server.url)).status).toBe(200); // leaves a kept-alive connection open
    await server.stop();
    await expect(pull(server.url)).rejects.toThrow();
  });
});
