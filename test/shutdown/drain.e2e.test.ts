import { describe, expect, it, vi } from 'vitest';
import { connectPokes } from '../../src/client/index.js';
import { handleRequest, type Storage } from '../../src/index.js';
import { checkHealth, drain } from '../../src/ops.js';
import { gate } from '../support/gate.js';
import { mutation, pull, push, testContext } from '../support/helpers.js';

const get = (path: string) => new Request(`http://sync.test/api/${path}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads a poke stream to its end. */
async function readAll(response: Response): Promise<string> {
  let text = '';
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (let next = await reader.read(); !next.done; next = await reader.read()) text += next.value;
  return text;
}

describe('checkHealth', () => {
  it('is ok when the store answers, and GET …/health says so with 200', async () => {
    const ctx = testContext();
    expect(await checkHealth(ctx)).toEqual({ ok: true, status: 'ok', storeMs: expect.any(Number) });
    const response = await handleRequest(get('health'), ctx);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ ok: true, status: 'ok', storeMs: expect.any(Number) });
  });

  it('fails when the store throws: 503 without the store’s words, which go to onError', async () => {
    const broken: Storage = { transaction: () => Promise.reject(new Error('connect ECONNREFUSED db.internal:5432 as admin')) };
    const ctx = testContext({ storage: broken });
    expect(await checkHealth(ctx)).toEqual({ ok: false, status: 'store-unavailable', reason: 'connect ECONNREFUSED db.internal:5432 as admin' });
    const response = await handleRequest(get('health'), ctx);
    expect(response.status).toBe(503);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ ok: false, status: 'store-unavailable' });
    expect(text).not.toContain('db.internal');
    expect(ctx.errors.map(String)).toEqual(['Error: Health check failed: connect ECONNREFUSED db.internal:5432 as admin']);
  });

  it('fails within its bound when the store does not answer at all', async () => {
    const hung: Storage = { transaction: () => new Promise(() => {}) };
    // On fake timers: at its bound exactly, however busy the machine.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let health: Awaited<ReturnType<typeof checkHealth>> | undefined;
      void checkHealth(testContext({ storage: hung }), { timeoutMs: 200 }).then((result) => (health = result));
      await vi.advanceTimersByTimeAsync(199);
      expect(health).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(health).toEqual({ ok: false, status: 'store-unavailable', reason: 'the store did not answer within 200 ms' });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('drain', () => {
  it('ends every poke stream with a jittered retry hint, refuses new ones, fails health, and still serves pulls and pushes', async () => {
    const ctx = testContext({ space: (request) => new URL(request.url).searchParams.get('space') ?? '' });
    const streams = await Promise.all(['a', 'b', 'b'].map((space) => handleRequest(get(`poke?space=${space}`), ctx)));
    const undo = drain(ctx, { retryMs: 2_000 });
    for (const text of await Promise.all(streams.map(readAll))) {
      const retry = Number(/\nretry: (\d+)\n\n$/.exec(text)?.[1]);
      expect(retry).toBeGreaterThanOrEqual(500);
      expect(retry).toBeLessThanOrEqual(2_000);
    }

    const refused = await handleRequest(get('poke?space=a'), ctx);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await handleRequest(get('health'), ctx)).status).toBe(503);
    expect(await checkHealth(ctx)).toEqual({ ok: false, status: 'draining' });
    expect(await (await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])).json()).toEqual({});
    expect((await pull(ctx, 'g', null)).lastMutationIDChanges).toEqual({ c: 1 });

    undo();
    undo(); // Twice is once.
    expect((await handleRequest(get('health'), ctx)).status).toBe(200);
    const again = await handleRequest(get('poke?space=a'), ctx);
    expect(again.status).toBe(200);
    await again.body!.cancel();
  });

  it('counts: a context two servers share stays drained until both are undone', async () => {
    const ctx = testContext();
    const [first, second] = [drain(ctx), drain(ctx)];
    first();
    expect((await checkHealth(ctx)).status).toBe('draining');
    second();
    expect((await checkHealth(ctx)).status).toBe('ok');
  });

  it('refuses a poke stream that was still opening when the drain began, and lets its subscription go', async () => {
    // A notifier whose subscription comes late (a LISTEN on a busy database): the drain runs in between.
    const subscribed = gate();
    let unsubscribed = 0;
    const notifier = {
      notify() {},
      subscribe: async () => {
        await subscribed.hold();
        return () => void unsubscribed++;
      },
    };
    const ctx = testContext({ pokes: { notifier } });
    const opening = handleRequest(get('poke'), ctx);
    await subscribed.started;
    const undo = drain(ctx);
    subscribed.release();
    const response = await opening;
    // Had it opened, nothing would end it: the server would wait for it until its stop timeout.
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(unsubscribed).toBe(1);
    // And a stream asked for once the drain began: refused the same way. Both are answers, not
    // failures: onError hears of neither (a deploy would log a line per stream; CI caught it).
    const late = await handleRequest(get('poke'), ctx);
    expect([late.status, late.headers.get('retry-after')]).toEqual([503, '1']);
    expect(ctx.errors).toEqual([]);
    undo();
  });

  it('works without pokes', async () => {
    const ctx = testContext({ pokes: false });
    const undo = drain(ctx);
    expect((await checkHealth(ctx)).status).toBe('draining');
    undo();
  });
});

describe('connectPokes and the reconnect hint', () => {
  /** A fetch whose every stream says `blocks` and ends; records when each stream was asked for. */
  function scriptedFetch(blocks: string) {
    const at: number[] = [];
    const fetch = async () => {
      at.push(Date.now());
      return new Response(blocks);
    };
    return { at, fetch: fetch as unknown as typeof globalThis.fetch };
  }

  it('waits as long as a stream’s last words ask, not its own short delay', async () => {
    const { at, fetch } = scriptedFetch('retry: 1000\n: viewsync pokes\n\nretry: 1500\n\n');
    const connection = connectPokes({ pull() {} }, 'http://sync.test/poke', { fetch, minDelayMs: 100 });
    await sleep(2_000);
    connection.close();
    expect(at.length).toBe(2);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(1_450);
  });

  it('keeps its own delay when the stream ended otherwise (a hint followed by more)', async () => {
    const { at, fetch } = scriptedFetch('retry: 5000\n: viewsync pokes\n\ndata: poke\n\n');
    const connection = connectPokes({ pull() {} }, 'http://sync.test/poke', { fetch, minDelayMs: 100 });
    await sleep(600);
    connection.close();
    expect(at.length).toBeGreaterThanOrEqual(2);
    expect(at[1]! - at[0]!).toBeLessThan(400);
  });
});
