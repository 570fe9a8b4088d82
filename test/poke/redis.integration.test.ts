/**
 * Pokes across instances through Redis pub/sub (redisNotifier): two instances share one store
 * (a memory store, in this process) and meet otherwise only in a real `redis-server` of this
 * file's own, through node-redis clients, as instances behind a pooler without LISTEN would.
 */
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { handlePoke, handlePush, memoryStorage, type Storage, type SyncContext, createContext } from '../../src/index.js';
import { mutate, transact } from '../../src/backend.js';
import { redisNotifier } from '../../src/redis.js';
import { mutation, post, pushBody, testMutators } from '../support/helpers.js';
import { type RedisServer, redisServerAvailable, startRedisServer } from '../support/redis-server.js';
import { EventReader } from './sse.js';

type Client = ReturnType<typeof newClient>;
type RedisNotifier = ReturnType<typeof redisNotifier>;

let server: RedisServer;
let admin: Client;
const clients: Client[] = [];
const notifiers: RedisNotifier[] = [];
const readers: EventReader[] = [];
let channels = 0;

/** A connected node-redis client; its errors (reconnection attempts) are expected here. */
async function connect(socket: { reconnectStrategy: number }): Promise<Client> {
  const client = newClient(server.url, socket);
  client.on('error', () => {});
  clients.push(client);
  await client.connect();
  return client;
}

function newClient(url: string, socket: { reconnectStrategy: number }) {
  return createClient({ url, socket });
}

/** A channel of the test's own, so that one test's pokes never reach another's instances. */
function newChannel(): string {
  return `viewsync-test-${++channels}`;
}

/** An instance: its own Redis client and notifier, the shared store, every error kept. */
async function instance(storage: Storage, channel: string) {
  const redis = await connect({ reconnectStrategy: 100 });
  const errors: unknown[] = [];
  const notifier = redisNotifier(redis, { channel, onError: (error) => errors.push(error) });
  notifiers.push(notifier);
  const ctx: SyncContext = createContext({
    storage,
    mutators: testMutators,
    space: (request) => new URL(request.url).searchParams.get('space') ?? '',
    pokes: { notifier, coalesceMs: 0 },
    onError: (error) => errors.push(error),
  });
  /** A poke stream of `space` on this instance, open (its subscription live). */
  const open = async (space: string) => {
    const response = await handlePoke(new Request(`http://instance/poke?space=${encodeURIComponent(space)}`), ctx);
    expect(response.status).toBe(200);
    const reader = new EventReader(response.body!);
    readers.push(reader);
    await reader.until(() => reader.comments >= 1);
    return reader;
  };
  return { ctx, redis, notifier, errors, open };
}

async function twoInstances() {
  const storage = memoryStorage();
  const channel = newChannel();
  return [await instance(storage, channel), await instance(storage, channel)] as const;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(redisServerAvailable)('redisNotifier: pokes between instances through Redis', () => {
  beforeAll(async () => {
    server = await startRedisServer();
    admin = await connect({ reconnectStrategy: 100 });
  }, 30_000);
  afterEach(async () => {
    await Promise.all(readers.splice(0).map((reader) => reader.cancel()));
    await Promise.all(notifiers.splice(0).map((notifier) => notifier.close()));
    // All but the admin's.
    for (const client of clients.splice(1)) client.destroy();
  });
  afterAll(async () => {
    admin?.destroy();
    await server?.stop();
  });

  it('a push, transact and mutate on A each poke the streams of their space on B (and on A, once), and no other space', async () => {
    const [a, b] = await twoInstances();
    const [acme, other, onA] = [await b.open('acme'), await b.open('other'), await a.open('acme')];
    expect((await handlePush(post('/push?space=acme', pushBody('g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])), a.ctx)).status).toBe(200);
    await acme.until(() => acme.pokes === 1);
    await transact(a.ctx, 'acme', (tx) => tx.set('invoice/1', { paid: true }));
    await acme.until(() => acme.pokes === 2);
    await mutate(a.ctx, 'acme', 'put', { key: 'invoice/2', value: { paid: false } });
    await acme.until(() => acme.pokes === 3);
    // A call that writes nothing pokes no one.
    await transact(a.ctx, 'acme', (tx) => tx.get('invoice/1'));
    await sleep(300);
    // A's own streams are poked at once, and its own message, coming back, pokes them no more.
    expect([acme.pokes, other.pokes, onA.pokes]).toEqual([3, 0, 3]);
    expect([...a.errors, ...b.errors]).toEqual([]);
  });

  it('a space named with U+0000, quotes, separators and non-ASCII reaches the other instance, and only that space', async () => {
    const [a, b] = await twoInstances();
    const names = ['a\u0000b', 'x!"y":z', '["q", "\\u0000"]', 'naïve 空間 😀'];
    const streams = await Promise.all(names.map((name) => b.open(name)));
    const plain = await b.open('a');
    for (const [i, name] of names.entries()) {
      await transact(a.ctx, name, (tx) => tx.set('k', i));
      await streams[i]!.until(() => streams[i]!.pokes === 1);
    }
    // A lone surrogate, which no URL carries, and which UTF-8 would turn into U+FFFD.
    const heard: string[] = [];
    await b.notifier.subscribe('\ud800', () => heard.push('lone'));
    await b.notifier.subscribe('\ufffd', () => heard.push('replacement'));
    await a.notifier.notify('\ud800');
    await expect.poll(() => heard).toEqual(['lone']);
    await sleep(200);
    expect([...streams.map((stream) => stream.pokes), plain.pokes, heard]).toEqual([1, 1, 1, 1, 0, ['lone']]);
  });

  it('a notify right after subscribe resolves is delivered: subscribe waits until Redis has confirmed the subscription', async () => {
    const storage = memoryStorage();
    for (let i = 0; i < 10; i++) {
      const channel = newChannel();
      const [a, b] = [await instance(storage, channel), await instance(storage, channel)];
      let heard = 0;
      // B's first subscribe: its subscribing connection is not even open yet.
      await b.notifier.subscribe('s', () => heard++);
      await a.notifier.notify('s');
      await expect.poll(() => heard, { timeout: 2_000 }).toBe(1);
    }
  });

  it('unsubscribe stops delivery to that listener only; another channel hears nothing; close leaves no subscribed connection', async () => {
    const [a, b] = await twoInstances();
    const elsewhere = await instance(memoryStorage(), newChannel());
    const heard: string[] = [];
    const stop = await b.notifier.subscribe('s', () => heard.push('stopped'));
    await b.notifier.subscribe('s', () => heard.push('kept'));
    await elsewhere.notifier.subscribe('s', () => heard.push('elsewhere'));
    stop();
    await a.notifier.notify('s');
    await expect.poll(() => heard).toEqual(['kept']);
    await sleep(200);
    expect(heard).toEqual(['kept']);

    const subscribed = async () => ((await admin.sendCommand(['CLIENT', 'LIST', 'TYPE', 'pubsub'])) as string).split('\n').filter(Boolean).length;
    expect(await subscribed()).toBe(2);
    await Promise.all([a.notifier.close(), b.notifier.close(), elsewhere.notifier.close()]);
    await expect.poll(subscribed).toBe(0);
    await expect(b.notifier.subscribe('s', () => {})).rejects.toThrow(/closed/);
  });

  it('after the subscribing connections are killed, each reconnects and pokes every space with streams once; later pushes arrive again', async () => {
    const [a, b] = await twoInstances();
    const [one, two, onA] = [await b.open('one'), await b.open('two'), await a.open('one')];
    // Opened and closed: no longer subscribed here, so not poked.
    const gone = await b.open('gone');
    await gone.cancel();
    expect(await admin.sendCommand(['CLIENT', 'KILL', 'TYPE', 'pubsub'])).toBeGreaterThanOrEqual(2);
    await Promise.all([one, two, onA].map((reader) => reader.until(() => reader.pokes === 1)));
    await sleep(400);
    expect([one.pokes, two.pokes, onA.pokes, gone.pokes]).toEqual([1, 1, 1, 0]);

    await transact(a.ctx, 'two', (tx) => tx.set('k', 1));
    await two.until(() => two.pokes === 2);
    expect(one.pokes).toBe(1);
  });

  it('a Redis that is down fails the notify (reported to onError), the push still commits and pokes its own instance, and the streams are poked once Redis is back', async () => {
    const [a, b] = await twoInstances();
    const [onA, onB] = [await a.open('s'), await b.open('s')];
    await server.stop();
    await expect.poll(() => a.redis.isReady).toBe(false);
    await transact(a.ctx, 's', (tx) => tx.set('k', 1));
    await onA.until(() => onA.pokes === 1);
    expect(a.errors.some((error) => /Redis is not connected/.test(String(error)))).toBe(true);
    await expect(a.notifier.notify('s')).rejects.toThrow(/Redis is not connected/);
    await server.start();
    await onB.until(() => onB.pokes >= 1, 10_000);
    // The store is intact: B reads what A wrote while Redis was down.
    expect(await transact(b.ctx, 's', (tx) => tx.get('k'))).toBe(1);
  });

  it("a notify that failed while only A's publishing connection was down pokes every space on B once it is back", async () => {
    const [a, b] = await twoInstances();
    const [one, two] = [await b.open('one'), await b.open('two')];
    // Kill the normal (not subscribed) connections but the admin's own: both instances'
    // publishers. Redis refuses new connections meanwhile, so they stay away.
    await admin.sendCommand(['CONFIG', 'SET', 'maxclients', '1']);
    try {
      await admin.sendCommand(['CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes']);
      await expect.poll(() => a.redis.isReady).toBe(false);
      await transact(a.ctx, 'one', (tx) => tx.set('k', 1));
      expect(a.errors.some((error) => /Redis is not connected/.test(String(error)))).toBe(true);
      await sleep(200);
      expect([one.pokes, two.pokes]).toEqual([0, 0]);
    } finally {
      await admin.sendCommand(['CONFIG', 'SET', 'maxclients', '10000']);
    }
    // B's subscription never dropped: only A's message, once it can send one, tells B.
    await Promise.all([one, two].map((reader) => reader.until(() => reader.pokes === 1, 5_000)));
    await sleep(200);
    expect([one.pokes, two.pokes]).toEqual([1, 1]);
  });

  it('a poke stream cannot open while Redis is unreachable: 503 after timeoutMs, and no unhandled error', async () => {
    const redis = newClient('redis://127.0.0.1:1', { reconnectStrategy: 50 });
    redis.on('error', () => {});
    const errors: unknown[] = [];
    const notifier = redisNotifier(redis, { timeoutMs: 300, onError: (error) => errors.push(error) });
    notifiers.push(notifier);
    const ctx: SyncContext = createContext({ storage: memoryStorage(), mutators: testMutators, pokes: { notifier }, onError: (error) => errors.push(error) });
    const started = Date.now();
    const response = await handlePoke(new Request('http://instance/poke'), ctx);
    expect(response.status).toBe(503);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    await expect(notifier.subscribe('s', () => {})).rejects.toThrow(/did not confirm the subscription/);
    await expect(notifier.notify('s')).rejects.toThrow(/Redis is not connected/);
    expect(errors.length).toBeGreaterThan(0);
  });
});

if (!redisServerAvailable) it.skip('redisNotifier: install redis-server (Debian: apt-get install redis-server) or set REDIS_SERVER', () => {});
