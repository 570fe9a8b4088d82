import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { serve, type SyncServer } from '../../adapters/node.js';
import { connectPokes, type PokeConnection, PokeStreamError } from '../../src/client/index.js';
import { memoryStorage, type SyncContext, createContext } from '../../src/index.js';
import { mutation, pushBody, testMutators } from '../support/helpers.js';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A stand-in for a Replicache instance: counts pulls, and has `auth` and `closed`. */
function fakeClient(auth?: string) {
  return {
    pulls: 0,
    auth,
    closed: false,
    pull() {
      this.pulls++;
    },
  };
}

async function until(test: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error('Timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function start(ctx: SyncContext, port = 0): Promise<SyncServer> {
  const server = await serve(ctx, { port });
  cleanup.push(() => server.stop());
  return server;
}

function connect(...args: Parameters<typeof connectPokes>): PokeConnection {
  const connection = connectPokes(...args);
  cleanup.push(() => connection.close());
  return connection;
}

let next = 0;
async function pushPut(url: URL, headers: Record<string, string> = {}): Promise<void> {
  const body = pushBody(`g${next}`, [mutation(`c${next++}`, 1, 'put', { key: 'k', value: next })]);
  const response = await fetch(new URL('push', url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
}

describe('connectPokes', () => {
  test('pulls once the stream is open, then on every poke', async () => {
    const server = await start(createContext({ storage: memoryStorage(), mutators: testMutators }));
    const rep = fakeClient();
    const connection = connect(rep, new URL('poke', server.url));
    await until(() => connection.connected && rep.pulls === 1);
    // One pull for the opening, not a second for the stream's `open` message.
    await sleep(100);
    expect(rep.pulls).toBe(1);
    await pushPut(server.url);
    await until(() => rep.pulls === 2);
    await sleep(100);
    await pushPut(server.url);
    await until(() => rep.pulls === 3);
  });

  test("names the client's group on the stream (clientGroupID, a Promise on Replicache), keeping the URL's own query", async () => {
    const urls: string[] = [];
    const fetchStream: typeof fetch = async (input) => {
      urls.push(String(input));
      return new Response('retry: 1000\n\ndata: open\n\n', { headers: { 'content-type': 'text/event-stream' } });
    };
    const rep = { ...fakeClient(), clientGroupID: Promise.resolve('group/1 é') };
    connect(rep, 'http://example.test/poke?space=a', { fetch: fetchStream, minDelayMs: 10_000 });
    await until(() => urls.length === 1);
    expect(urls[0]).toBe('http://example.test/poke?space=a&clientGroupID=group%2F1%20%C3%A9');
    const bare: string[] = [];
    connect(fakeClient(), '/poke', { fetch: async (input) => (bare.push(String(input)), new Response('')), minDelayMs: 10_000 });
    await until(() => bare.length === 1);
    expect(bare[0]).toBe('/poke');
  });

  test("sends the client's auth as its Authorization header, and keeps trying while refused", async () => {
    let token = 'old';
    const ctx: SyncContext = createContext({
      storage: memoryStorage(),
      mutators: testMutators,
      authenticate: (request) => (request.headers.get('authorization') === token ? 'u' : null),
    });
    const server = await start(ctx);
    const rep = fakeClient('new');
    const connection = connect(rep, new URL('poke', server.url), { minDelayMs: 20, maxDelayMs: 50 });
    await sleep(200);
    expect(connection.connected).toBe(false);
    expect(rep.pulls).toBe(0);
    // What Replicache's getAuth does after a 401 on pull: the next attempt sends the new token.
    token = 'new';
    await until(() => connection.connected && rep.pulls === 1);
  });

  test('reconnects when the server comes back, and pulls then for what it missed', async () => {
    const ctx: SyncContext = createContext({ storage: memoryStorage(), mutators: testMutators });
    const first = await start(ctx);
    const rep = fakeClient();
    const connection = connect(rep, new URL('poke', first.url), { minDelayMs: 20, maxDelayMs: 100 });
    await until(() => connection.connected && rep.pulls === 1);
    await first.stop();
    await until(() => !connection.connected);
    await sleep(300);
    const second = await start(ctx, first.port);
    await until(() => connection.connected && rep.pulls === 2);
    await pushPut(second.url);
    await until(() => rep.pulls === 3);
  });

  test('a stream that goes silent (no heartbeat) is taken for dead and opened again', async () => {
    let requests = 0;
    // Sends the opening, then nothing, as a connection that a network dropped silently.
    const silent: Server = createServer((_, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write('retry: 1000\n\n');
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise((resolve) => (silent.closeAllConnections(), silent.close(resolve))));
    const rep = fakeClient();
    connect(rep, `http://127.0.0.1:${(silent.address() as AddressInfo).port}/poke`, { idleMs: 100, minDelayMs: 10, maxDelayMs: 20 });
    await until(() => requests >= 3 && rep.pulls >= 3);
  });

  test('reads events split anywhere and in any line ending, and ignores comments', async () => {
    const chunks = ['retry: 10', '00\r\n\r', '\n: heart', 'beat\r\n\r\nda', 'ta: poke\n', '\n:x\n\ndata: poke\r\r'];
    const server: Server = createServer(async (_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const chunk of chunks) {
        res.write(chunk);
        await sleep(10);
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))));
    const rep = fakeClient();
    connect(rep, `http://127.0.0.1:${(server.address() as AddressInfo).port}/poke`, { minDelayMs: 10_000 });
    // One pull on opening, one per `data` event: heartbeats and comments pull nothing.
    await until(() => rep.pulls === 3);
    await sleep(100);
    expect(rep.pulls).toBe(3);
  });

  test('close() stops it, and so does a closed client: no more requests', async () => {
    const ctx: SyncContext = createContext({ storage: memoryStorage(), mutators: testMutators });
    let requests = 0;
    const server = await start(createContext({ ...ctx.options, authenticate: () => (requests++, null) }));
    const closed = connectPokes(fakeClient(), new URL('poke', server.url), { minDelayMs: 10, maxDelayMs: 10 });
    const closedClient = fakeClient();
    connectPokes(closedClient, new URL('poke', server.url), { minDelayMs: 10, maxDelayMs: 10 });
    await until(() => requests >= 4);
    closed.close();
    closedClient.closed = true;
    await sleep(50);
    const then = requests;
    await sleep(200);
    expect(requests).toBe(then);
  });
});

describe('connectPokes, when the stream cannot be had', () => {
  const authed = (): SyncContext =>
    createContext({
      storage: memoryStorage(),
      mutators: testMutators,
      authenticate: (request) => (request.headers.get('authorization') === 'good' ? 'alice' : null),
    });

  test('tells onError of every failure, with the status and whether retrying can fix it; a wrong URL is permanent', async () => {
    const server = await start(createContext({ storage: memoryStorage(), mutators: testMutators }));
    const errors: PokeStreamError[] = [];
    connect(fakeClient(), new URL('nope', server.url), { minDelayMs: 10, maxDelayMs: 20, onError: (error) => errors.push(error) });
    await until(() => errors.length >= 3);
    expect(errors[0]).toBeInstanceOf(PokeStreamError);
    expect(errors[0]).toMatchObject({ status: 404, permanent: true });
    expect(errors[0]!.message).toContain('is this the poke URL?');
  });

  test('by default, one console warning for a failure retrying cannot fix', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    cleanup.push(() => warn.mockRestore());
    const server = await start(createContext({ storage: memoryStorage(), mutators: testMutators }));
    let requests = 0;
    connect(fakeClient(), new URL('nope', server.url), { minDelayMs: 10, maxDelayMs: 20, fetch: (input, init) => (requests++, fetch(input, init)) });
    await until(() => requests >= 4);
    await sleep(100);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(/answered 404.*live updates are off/);
  });

  test('by default, a stream that never opened says so once after five failures in a row, as a wrong host or port would (was: silent for ever in Node)', async () => {
    // When it warns, as how many requests had gone: the fifth's failure, whatever the machine's speed.
    let requests = 0;
    const warnedAt: number[] = [];
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => void warnedAt.push(requests));
    cleanup.push(() => warn.mockRestore());
    const away = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    connect(fakeClient(), `http://127.0.0.1:${away}/poke`, { minDelayMs: 10, maxDelayMs: 20, fetch: (input, init) => (requests++, fetch(input, init)) });
    await until(() => requests >= 10);
    expect(warnedAt).toEqual([5]);
    expect(String(warn.mock.calls[0]![0])).toMatch(
      new RegExp(
        `The poke stream at http://127.0.0.1:${away}/poke could not be opened: .*\\(5 tries, and it never opened: is the URL right\\?\\); live updates are off`,
      ),
    );
  });

  test('by default, no warning for a server away after the stream opened (a restart, a deploy)', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    cleanup.push(() => warn.mockRestore());
    const server = await start(createContext({ storage: memoryStorage(), mutators: testMutators }));
    let requests = 0;
    const connection = connect(fakeClient(), new URL('poke', server.url), {
      minDelayMs: 10,
      maxDelayMs: 20,
      fetch: (input, init) => (requests++, fetch(input, init)),
    });
    await until(() => connection.connected);
    await server.stop();
    await until(() => requests >= 10);
    expect(warn).not.toHaveBeenCalled();
  });

  test('a 401 asks getAuth, as the client does on pull and push, and the stream opens with the new auth', async () => {
    const server = await start(authed());
    const rep = {
      ...fakeClient('stale'),
      asked: 0,
      getAuth() {
        this.asked++;
        return 'good';
      },
    };
    const errors: PokeStreamError[] = [];
    const connection = connect(rep, new URL('poke', server.url), { minDelayMs: 10_000, onError: (error) => errors.push(error) });
    // Within the first reconnect delay: the new auth was tried at once.
    await until(() => connection.connected && rep.pulls === 1, 2_000);
    expect([rep.auth, rep.asked, errors]).toEqual(['good', 1, []]);
  });

  test('a 401 with no getAuth, or one that gives nothing, is reported as permanent', async () => {
    const server = await start(authed());
    const errors: PokeStreamError[] = [];
    connect({ ...fakeClient('stale'), getAuth: () => null }, new URL('poke', server.url), {
      minDelayMs: 10,
      maxDelayMs: 20,
      onError: (error) => errors.push(error),
    });
    await until(() => errors.length >= 1);
    expect(errors[0]).toMatchObject({ status: 401, permanent: true });
  });
});
