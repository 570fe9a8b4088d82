import { describe, expect, test, vi } from 'vitest';
import { createContext, handleRequest, HTTPError, localNotifier, type Notifier, type SyncContext, type SyncOptions } from '../../src/index.js';
import { PokeHub } from '../../src/poke/hub.js';
import { resolvePokes } from '../../src/context/options-schema.js';
import { mutation, pushBody, post, testContext } from '../support/helpers.js';
import { EventReader } from './sse.js';
import { memoryInUse } from '../support/memory.js';

/** Opens a poke stream through `handleRequest`. */
async function open(ctx: SyncContext, path = '/poke', headers: Record<string, string> = {}): Promise<EventReader> {
  const response = await handleRequest(new Request(`http://localhost${path}`, { headers }), ctx);
  expect(response.status, await peekError(response)).toBe(200);
  const reader = new EventReader(response.body!);
  await reader.until(() => reader.blocks.length > 0);
  return reader;
}

async function peekError(response: Response): Promise<string> {
  return response.status === 200 ? '' : await response.clone().text();
}

let next = 0;
async function pushPut(ctx: SyncContext, path = '/push', key = 'k', headers: Record<string, string> = {}) {
  const response = await handleRequest(post(path, pushBody(`g${next}`, [mutation(`c${next++}`, 1, 'put', { key, value: next })]), headers), ctx);
  expect(response.status).toBe(200);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the poke stream', () => {
  test('is Server-Sent Events that a proxy neither caches nor buffers, opening with a comment and then an `open` message (was: comments only, so an app pulling on messages missed what changed while its stream was away)', async () => {
    const ctx = testContext();
    const response = await handleRequest(new Request('http://localhost/sync/poke'), ctx);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(response.headers.get('x-accel-buffering')).toBe('no');
    const reader = new EventReader(response.body!);
    await reader.until(() => reader.blocks.length === 2);
    expect(reader.blocks[0]).toMatch(/^retry: \d+\n:/);
    expect(reader.blocks[1]).toBe('data: open');
    expect(reader.pokes).toBe(0);
    await reader.cancel();
  });

  test('a push that changes the space pokes its streams, with no data about the change', async () => {
    const ctx = testContext();
    const [a, b] = [await open(ctx), await open(ctx)];
    await pushPut(ctx);
    await a.until(() => a.pokes === 1);
    await b.until(() => b.pokes === 1);
    expect(a.blocks.at(-1)).toBe('data: poke');
    await Promise.all([a.cancel(), b.cancel()]);
  });

  test('a push to another space does not poke, nor does a push that changes nothing', async () => {
    const ctx = testContext({ space: (request) => new URL(request.url).searchParams.get('space') ?? 'main' });
    const reader = await open(ctx, '/poke?space=a');
    await pushPut(ctx, '/push?space=b');
    // Already processed: the client re-sent it, nothing changes.
    const again = pushBody('g-same', [mutation('c-same', 1, 'put', { key: 'x', value: 1 })]);
    expect((await handleRequest(post('/push?space=a', again), ctx)).status).toBe(200);
    await reader.until(() => reader.pokes === 1);
    expect((await handleRequest(post('/push?space=a', again), ctx)).status).toBe(200);
    await pushPut(ctx, '/push?space=b');
    await sleep(150);
    expect(reader.pokes).toBe(1);
    await reader.cancel();
  });

  test('a burst of pushes gives a poke at its start and one after its end, not one each', async () => {
    const ctx = testContext({ pokes: { coalesceMs: 200 } });
    const reader = await open(ctx);
    for (let i = 0; i < 50; i++) await pushPut(ctx);
    await reader.until(() => reader.pokes === 2);
    await sleep(400);
    expect(reader.pokes).toBe(2);
  });

  test('idle streams get heartbeats (comments, which clients ignore)', async () => {
    const ctx = testContext({ pokes: { heartbeatMs: 30 } });
    const reader = await open(ctx);
    await reader.until(() => reader.comments >= 4);
    expect(reader.pokes).toBe(0);
    await reader.cancel();
  });

  test('is checked with authenticate and space, as pull and push are', async () => {
    const ctx = testContext({
      // An EventSource cannot send headers: this app takes the token from the query string too.
      authenticate: (request) => {
        const token = request.headers.get('authorization') ?? new URL(request.url).searchParams.get('token');
        return token?.startsWith('user-') ? token.slice(5) : null;
      },
      space: (request, userID) => {
        const space = new URL(request.url).searchParams.get('space') ?? '';
        if (space === 'private' && userID !== 'alice') throw new HTTPError(403, 'Not a member of this space');
        return space;
      },
    });
    expect((await handleRequest(new Request('http://localhost/poke'), ctx)).status).toBe(401);
    expect((await handleRequest(new Request('http://localhost/poke?space=private&token=user-bob'), ctx)).status).toBe(403);
    const reader = await open(ctx, '/poke?space=private&token=user-alice');
    await pushPut(ctx, '/push?space=private', 'k', { authorization: 'user-alice' });
    await reader.until(() => reader.pokes === 1);
    await reader.cancel();
    const long = 'x'.repeat(600);
    expect((await handleRequest(new Request(`http://localhost/poke?space=${long}&token=user-bob`), ctx)).status).toBe(400);
    expect(ctx.errors).toEqual([]);
  });

  test('answers GET only, with the methods in Allow and in a CORS preflight', async () => {
    const ctx = testContext();
    const wrong = await handleRequest(post('/poke', {}), ctx);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, OPTIONS');
    const preflight = await handleRequest(
      new Request('http://localhost/poke', { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' } }),
      ctx,
    );
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, OPTIONS');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('authorization');
    const get = await handleRequest(new Request('http://localhost/pull'), ctx);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST, OPTIONS');
  });

  test('pokes: false serves no stream, and pushes still work', async () => {
    const ctx = testContext({ pokes: false });
    expect((await handleRequest(new Request('http://localhost/poke'), ctx)).status).toBe(404);
    await pushPut(ctx);
  });

  test('a notifier that fails to subscribe answers 503 with Retry-After, and the next stream tries again', async () => {
    const local = localNotifier();
    let fail = true;
    const notifier: Notifier = {
      notify: (space) => local.notify(space),
      subscribe: async (space, listener) => {
        if (fail) throw new Error('LISTEN failed');
        return local.subscribe(space, listener);
      },
    };
    const ctx = testContext({ pokes: { notifier } });
    const refused = await handleRequest(new Request('http://localhost/poke'), ctx);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(ctx.hub!.streams).toBe(0);
    fail = false;
    const reader = await open(ctx);
    await pushPut(ctx);
    await reader.until(() => reader.pokes === 1);
    await reader.cancel();
  });

  test('a notifier that fails to notify leaves the push committed and tells onError', async () => {
    const notifier: Notifier = { notify: () => Promise.reject(new Error('NOTIFY failed')), subscribe: () => () => {} };
    const ctx = testContext({ pokes: { notifier } });
    await pushPut(ctx);
    await sleep(10);
    expect(ctx.errors).toHaveLength(1);
    expect(String(ctx.errors[0])).toContain('NOTIFY failed');
  });

  test('past maxStreams a stream is refused with 503 and Retry-After', async () => {
    const ctx = testContext({ pokes: { maxStreams: 2 } });
    const open2 = [await open(ctx), await open(ctx)];
    const refused = await handleRequest(new Request('http://localhost/poke'), ctx);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('10');
    await open2[0]!.cancel();
    const again = await open(ctx);
    await Promise.all([again.cancel(), open2[1]!.cancel()]);
  });

  test("contexts over one store poke each other's streams (the default notifier is per store)", async () => {
    const a = testContext();
    const b = createContext({ ...a.options });
    const reader = await open(a);
    await pushPut(b);
    await reader.until(() => reader.pokes === 1);
    await reader.cancel();
  });
});

describe('who may hold streams', () => {
  /** A context whose users are named by the Authorization header. */
  const usersContext = (pokes: SyncOptions['pokes']) => testContext({ authenticate: (request) => request.headers.get('authorization') || null, pokes });
  const as = (user: string) => ({ authorization: user });

  test('one user past maxStreamsPerUser gets 429 with Retry-After, and other users still get theirs', async () => {
    const ctx = usersContext({ maxStreamsPerUser: 3 });
    const mallory = await Promise.all([1, 2, 3].map(() => open(ctx, '/poke', as('mallory'))));
    const refused = await handleRequest(new Request('http://localhost/poke', { headers: as('mallory') }), ctx);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect(await refused.text()).toContain('pokes.maxStreamsPerUser');
    const alice = await open(ctx, '/poke', as('alice'));
    // A stream closed frees its place.
    await mallory[0]!.cancel();
    const again = await open(ctx, '/poke', as('mallory'));
    expect(ctx.hub!.streamsOf('mallory')).toBe(3);
    await Promise.all([...mallory.slice(1), again, alice].map((reader) => reader.cancel()));
    expect(ctx.hub!.streamsOf('mallory')).toBe(0);
  });

  test('streams still opening count: a burst of opens at once cannot pass the cap', async () => {
    const ctx = usersContext({ maxStreamsPerUser: 5 });
    const responses = await Promise.all(Array.from({ length: 50 }, () => handleRequest(new Request('http://localhost/poke', { headers: as('mallory') }), ctx)));
    expect(responses.filter((response) => response.status === 200)).toHaveLength(5);
    expect(responses.filter((response) => response.status === 429)).toHaveLength(45);
    await Promise.all(responses.map((response) => response.body?.cancel()));
  });

  test('without authenticate there is no user to count by: only maxStreams applies', async () => {
    const ctx = testContext({ pokes: { maxStreamsPerUser: 1, maxStreams: 3 } });
    const readers = [await open(ctx), await open(ctx), await open(ctx)];
    expect((await handleRequest(new Request('http://localhost/poke'), ctx)).status).toBe(503);
    await Promise.all(readers.map((reader) => reader.cancel()));
  });

  test('a full context: a user lighter than the heaviest by two takes its oldest stream, which is told to come back later', async () => {
    const ctx = usersContext({ maxStreams: 4 });
    const mallory: EventReader[] = [];
    for (let i = 0; i < 3; i++) mallory.push(await open(ctx, '/poke', as('mallory')));
    const bob = await open(ctx, '/poke', as('bob'));
    // Full: alice (0) is lighter than mallory (3) by two or more, so mallory's oldest goes.
    const alice = await open(ctx, '/poke', as('alice'));
    await mallory[0]!.until(() => mallory[0]!.ended);
    expect(mallory[0]!.blocks.at(-1)).toMatch(/^retry: \d+$/);
    expect(Number(mallory[0]!.blocks.at(-1)!.slice(7))).toBeGreaterThanOrEqual(5_000);
    expect(mallory[1]!.ended).toBe(false);
    expect([ctx.hub!.streamsOf('mallory'), ctx.hub!.streamsOf('alice'), ctx.hub!.streams]).toEqual([2, 1, 4]);
    // Now nobody is lighter than the heaviest by two: the next is refused, not a ping-pong.
    const refused = await handleRequest(new Request('http://localhost/poke', { headers: as('mallory') }), ctx);
    expect(refused.status).toBe(503);
    expect((await handleRequest(new Request('http://localhost/poke', { headers: as('carol') }), ctx)).status).toBe(200);
    expect((await handleRequest(new Request('http://localhost/poke', { headers: as('dave') }), ctx)).status).toBe(503);
    await Promise.all([...mallory, bob, alice].map((reader) => reader.cancel()));
  });

  test('a stream past its age ends with a retry field, read or not', async () => {
    // On fake timers, as a busy machine runs real ones late.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    try {
      const ctx = testContext({ pokes: { heartbeatMs: 20, maxStreamAgeMs: 200 } });
      const read = await open(ctx);
      const unread = await handleRequest(new Request('http://localhost/poke'), ctx);
      // Each stream draws its age from the last quarter below maxStreamAgeMs, checked per heartbeat.
      await vi.advanceTimersByTimeAsync(140);
      expect(read.ended).toBe(false);
      await vi.advanceTimersByTimeAsync(80);
      expect(read.ended).toBe(true);
      expect(read.blocks.at(-1)).toMatch(/^retry: \d+$/);
      expect(read.comments).toBeGreaterThan(2);
      expect(ctx.hub!.streams).toBe(0);
      expect(await unread.text()).toMatch(/^retry:/);
    } finally {
      vi.useRealTimers();
    }
  });

  test('the default maxStreams fits the file-descriptor limit adapters read, for that hub alone, not the process', async () => {
    const hub = new PokeHub(localNotifier(), resolvePokes({}));
    hub.fitToDescriptors(1_024);
    const streams = [];
    for (let i = 0; i < 668; i++) streams.push(await hub.open(''));
    await expect(hub.open('')).rejects.toThrow('668 poke streams');
    await Promise.all(streams.map((stream) => stream.cancel()));
    // An explicit maxStreams wins.
    const explicit = new PokeHub(localNotifier(), resolvePokes({ maxStreams: 700 }));
    explicit.fitToDescriptors(1_024);
    const more = [];
    for (let i = 0; i < 700; i++) more.push(await explicit.open(''));
    await Promise.all(more.map((stream) => stream.cancel()));
    // Another hub in the same process keeps its own cap: above 26,800 descriptors, the ceiling.
    const other = new PokeHub(localNotifier(), resolvePokes({}));
    other.fitToDescriptors(1_000_000);
    const ceiling = [];
    for (let i = 0; i < 20_000; i++) ceiling.push(await other.open(''));
    await expect(other.open('')).rejects.toThrow('20000 poke streams');
    await Promise.all(ceiling.map((stream) => stream.cancel()));
  });
});

describe('what a stream holds', () => {
  test('10,000 streams opened and dropped: every stream, subscription and byte is released', async () => {
    const notifier = localNotifier();
    const spaces = (request: Request) => new URL(request.url).searchParams.get('s') ?? '';
    const ctx = testContext({ pokes: { notifier }, space: spaces });
    const hub = ctx.hub!;
    const before = memoryInUse();
    const readers: EventReader[] = [];
    for (let i = 0; i < 10_000; i++) {
      const response = await handleRequest(new Request(`http://localhost/poke?s=${i % 100}`), ctx);
      readers.push(new EventReader(response.body!));
    }
    expect(hub.streams).toBe(10_000);
    expect(notifier.spaces).toBe(100);
    const open = memoryInUse() - before;
    await Promise.all(readers.map((reader) => reader.cancel()));
    readers.length = 0;
    expect(hub.streams).toBe(0);
    expect(hub.spaces).toBe(0);
    expect(notifier.spaces).toBe(0);
    const after = memoryInUse() - before;
    // Open streams cost memory; dropped, they cost none (a little slack for the heap's noise).
    expect(open).toBeGreaterThan(5 * 2 ** 20);
    expect(after).toBeLessThan(Math.max(2 * 2 ** 20, open / 10));
  });

  test('a stream nobody reads is closed after two heartbeats, and released', async () => {
    // On fake timers: a busy machine can run a real 200 ms sleep before the second heartbeat.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const ctx = testContext({ pokes: { heartbeatMs: 40 } });
      const response = await handleRequest(new Request('http://localhost/poke'), ctx);
      expect(ctx.hub!.streams).toBe(1);
      await vi.advanceTimersByTimeAsync(40);
      expect(ctx.hub!.streams).toBe(1);
      await vi.advanceTimersByTimeAsync(40);
      expect(ctx.hub!.streams).toBe(0);
      // It closed cleanly: what was queued can still be read to the end.
      expect(await response.text()).toMatch(/^retry:/);
    } finally {
      vi.useRealTimers();
    }
  });
  test('its heartbeat stops once no stream is open, also when the last to go was one the notifier refused', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      let fail: ((error: Error) => void) | undefined;
      const notifier: Notifier = { notify() {}, subscribe: (space) => (space === 'down' ? new Promise((_, reject) => (fail = reject)) : () => {}) };
      const hub = new PokeHub(notifier, resolvePokes({}));
      const up = await hub.open('up');
      const refused = hub.open('down');
      while (fail === undefined) await new Promise((resolve) => setImmediate(resolve));
      await up.cancel();
      fail(new Error('the notifier is down'));
      await expect(refused).rejects.toThrow(HTTPError);
      expect(hub.streams).toBe(0);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('a space with many streams', () => {
  test('is poked in slices of 500 that let other work in between, and every stream gets its poke', async () => {
    const notifier = localNotifier();
    const hub = testContext({ pokes: { notifier } }).hub!;
    const readers = await Promise.all(
      Array.from({ length: 1_200 }, async () => {
        const reader = (await hub.open('')).getReader();
        await reader.read();
        return reader;
      }),
    );
    let poked = 0;
    notifier.notify('');
    for (const reader of readers) void reader.read().then(() => poked++);
    // Reads of what is already queued settle within a few microtasks; the rest waits for a timer.
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(poked).toBe(500);
    // The other slices follow on timers: a busy machine may take longer than a few ms to run them.
    await vi.waitFor(() => expect(poked).toBe(1_200), { timeout: 5_000 });
    await Promise.all(readers.map((reader) => reader.cancel()));
  });
});
