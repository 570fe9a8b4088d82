/**
 * A pull whose cookie is ahead of what its read shows (`Storage.catchUpMs`): a client that read a
 * commit from a synchronous standby before the primary showed it, then pulled from the primary.
 * The store here writes to one memory store (what the client read, the standby) and, when told to
 * lag, reads from a second one that receives those commits only when the test lets it (the
 * primary, still waiting for its standby's acknowledgement).
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { createContext, handlePull, type JSONValue, memoryStorage, type Storage } from '../../src/index.js';
import { compareCookies } from '../../src/sync/version/cookie.js';
import type { StorageTransaction, StoredValue, TransactionOptions } from '../../src/store.js';
import { applyPatch, mutation, post, pull, pullBody, push, testMutators, type PullOK } from '../support/helpers.js';
import { bigSpace } from '../support/big-space.js';

/** A store whose read-only transactions read `behind` while `lagging`, which gets each commit when `catchUp` is called. */
function laggingStore(catchUpMs?: number) {
  const ahead = memoryStorage();
  const behind = memoryStorage();
  const owed: Array<Array<[string, StoredValue | undefined]>> = [];
  const state = { lagging: false };
  /** Gives `behind` the commits it is owed, all but the last `keep` of them. */
  const catchUp = (keep = 0) =>
    behind.transaction(
      async (tx) => {
        for (const writes of owed.splice(0, Math.max(0, owed.length - keep)))
          for (const [key, value] of writes) await (value === undefined ? tx.del(key) : tx.put(key, value));
      },
      { readOnly: false },
    );
  const storage: Storage = {
    ...(catchUpMs !== undefined && { catchUpMs }),
    async transaction<T>(fn: (tx: StorageTransaction) => Promise<T>, options: TransactionOptions): Promise<T> {
      if (options.readOnly) return (state.lagging ? behind : ahead).transaction(fn, options);
      const writes: Array<[string, StoredValue | undefined]> = [];
      const result = await ahead.transaction(
        (tx) => fn({ ...tx, put: (key, value) => (writes.push([key, value]), tx.put(key, value)), del: (key) => (writes.push([key, undefined]), tx.del(key)) }),
        options,
      );
      owed.push(writes);
      return result;
    },
  };
  return { storage, state, catchUp, owed: () => owed.length };
}

/**
 * A space with one entry, both copies alike, then a second commit that only `ahead` shows; the
 * client's cookie is of that commit. With `firstCommit`, the space's first commit is the one only
 * `ahead` shows: the lagging copy holds no space at all.
 */
async function clientAhead(catchUpMs?: number, firstCommit = false) {
  const store = laggingStore(catchUpMs);
  const ctx = createContext({ storage: store.storage, mutators: testMutators });
  await push(ctx, 'writer', [mutation('w', 1, 'put', { key: 'a', value: 1 })]);
  if (!firstCommit) await store.catchUp();
  await push(ctx, 'writer', [mutation('w', 2, 'put', { key: 'b', value: 2 })]);
  const seen = await pull(ctx, 'reader', null);
  expect(seen.patch).toContainEqual({ op: 'put', key: 'b', value: 2 });
  store.state.lagging = true;
  return { ...store, ctx, cookie: seen.cookie };
}

describe('a pull whose cookie is ahead of what the store shows', () => {
  test('reads again until the store shows it, then answers as usual: no ClientStateNotFound, no cookie going back', async () => {
    const { ctx, cookie, catchUp } = await clientAhead(5_000);
    const answer = handlePull(post('/pull', pullBody('reader', cookie)), ctx);
    // The primary shows the commit a little later, while the pull waits.
    setTimeout(() => void catchUp(), 50);
    const response = await answer;
    const body = await response.json();
    expect(response.status).toBe(200);
    expect(body).not.toHaveProperty('error');
    expect(body.cookie).toEqual(cookie);
    expect(body.patch).toEqual([]);
  });

  test('a store that never shows it gets ClientStateNotFound once catchUpMs has passed, not before', async () => {
    const { ctx, cookie } = await clientAhead(300);
    const started = performance.now();
    const response = await handlePull(post('/pull', pullBody('reader', cookie)), ctx);
    expect(await response.json()).toEqual({ error: 'ClientStateNotFound' });
    // At least the wait (less a timer's slack); the upper bound only catches a hang.
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  test('without catchUpMs (a store whose reads never lag) the answer is ClientStateNotFound at once, as before', async () => {
    const { ctx, cookie, catchUp } = await clientAhead();
    setTimeout(() => void catchUp(), 50);
    const started = performance.now();
    const response = await handlePull(post('/pull', pullBody('reader', cookie)), ctx);
    expect(await response.json()).toEqual({ error: 'ClientStateNotFound' });
    // Had it waited, the copy caught up meanwhile would have answered it: this bound only says so sooner.
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  test("the space's first commit, which the store does not hold at all yet, is waited for too: the client's data is never cleared", async () => {
    const { ctx, cookie, catchUp } = await clientAhead(5_000, true);
    const answer = handlePull(post('/pull', pullBody('reader', cookie)), ctx);
    setTimeout(() => void catchUp(), 50);
    const body = await (await answer).json();
    expect(body.cookie).toEqual(cookie);
    expect(body.patch).toEqual([]);
  });

  test('a store that never shows a space answers a cookie of it as before once catchUpMs has passed: a reset, never ClientStateNotFound', async () => {
    const { ctx, cookie } = await clientAhead(200, true);
    const body = await (await handlePull(post('/pull', pullBody('reader', cookie)), ctx)).json();
    expect(body.patch).toEqual([{ op: 'clear' }]);
  });

  test('only the next version is waited for (a space commits one at a time): a cookie further ahead, as a forged one, is answered at once', async () => {
    const { ctx, cookie } = await clientAhead(5_000);
    const forged = { ...(cookie as { order: number; epoch: string }), order: (cookie as { order: number }).order + 5 };
    const started = performance.now();
    const response = await handlePull(post('/pull', pullBody('reader', forged)), ctx);
    expect(await response.json()).toEqual({ error: 'ClientStateNotFound' });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  test('only a cookie of this space ahead of it waits: an unknown cookie is answered at once with a reset', async () => {
    const { ctx } = await clientAhead(5_000);
    const started = performance.now();
    const foreign = await pull(ctx, 'stranger', { order: 1, epoch: 'not-this-space' });
    expect(foreign.patch[0]).toEqual({ op: 'clear' });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  test('a first sync in pages whose start the store does not show yet goes on from its page once it does, not from the beginning', async () => {
    const { keyOf, valueFor, mutators } = bigSpace(200);
    const store = laggingStore(5_000);
    const ctx = createContext({ storage: store.storage, mutators, firstSync: { pageBytes: 2 ** 20 } });
    await push(ctx, 'filler', [mutation('f', 1, 'fill', { from: 0, count: 8_000 })]);
    await store.catchUp();
    await push(ctx, 'writer', [mutation('w', 1, 'put', { key: 'extra', value: 1 })]);
    const pages: PullOK[] = [await pull(ctx, 'pager', null)];
    expect(pages[0]!.cookie).toHaveProperty('page');
    store.state.lagging = true;
    setTimeout(() => void store.catchUp(), 50);
    while ('page' in (pages.at(-1)!.cookie as object)) pages.push(await pull(ctx, 'pager', pages.at(-1)!.cookie));
    // One clear, on the first page: the second went on from the first.
    expect(pages.flatMap((page) => page.patch).filter((op) => op.op === 'clear')).toHaveLength(1);
    const held = pages.reduce((view, page) => applyPatch(view, page.patch), new Map());
    expect(held).toEqual(new Map([...Array.from({ length: 8_000 }, (_, i) => [keyOf(i), valueFor(i)] as const), ['extra', 1]]));
  });

  test('a client that reads now the copy ahead, now the one a commit behind (which catches up a moment later) never starts over, never sees its cookie or lastMutationIDs go back, and holds the space (property)', async () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('push' as const), key: fc.constantFrom('a', 'b', 'c'), value: fc.integer({ min: 0, max: 9 }), own: fc.boolean() }),
      fc.record({ kind: fc.constant('pull ahead' as const) }),
      fc.record({ kind: fc.constant('pull behind' as const), catchUpAfterMs: fc.integer({ min: 0, max: 40 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
        const store = laggingStore(5_000);
        const ctx = createContext({ storage: store.storage, mutators: testMutators });
        const space = new Map<string, JSONValue>();
        const ids = { own: 0, other: 0 };
        let cookie: JSONValue = null;
        let held = new Map<string, JSONValue>();
        let lmid = 0;
        for (const s of steps) {
          if (s.kind === 'push') {
            const who = s.own ? 'own' : 'other';
            await push(ctx, s.own ? 'client' : 'writer', [mutation(who, ++ids[who], 'put', { key: s.key, value: s.value })]);
            space.set(s.key, s.value);
            continue;
          }
          // Behind by at most one commit: a space's commits wait for their standby one at a time.
          if (s.kind === 'pull behind') await store.catchUp(1);
          store.state.lagging = s.kind === 'pull behind';
          const caughtUp =
            s.kind === 'pull behind' ? new Promise((resolve) => setTimeout(() => void store.catchUp().then(resolve), s.catchUpAfterMs)) : undefined;
          const body = (await (await handlePull(post('/pull', pullBody('client', cookie)), ctx)).json()) as PullOK & { error?: string };
          await caughtUp;
          expect(body.error).toBeUndefined();
          expect(compareCookies(body.cookie, cookie)).toBeGreaterThanOrEqual(0);
          const own = body.lastMutationIDChanges.own;
          if (own !== undefined) {
            expect(own).toBeGreaterThanOrEqual(lmid);
            lmid = own;
          }
          held = applyPatch(held, body.patch);
          cookie = body.cookie;
        }
        // Once the copies agree, the client holds the whole space and every push of its own.
        await store.catchUp();
        store.state.lagging = false;
        const last = await pull(ctx, 'client', cookie);
        held = applyPatch(held, last.patch);
        expect(held).toEqual(space);
        expect(last.lastMutationIDChanges.own ?? lmid).toBe(ids.own);
      }),
      { numRuns: 40 },
    );
  }, 60_000);

  test('catchUpMs is checked when the context is made', () => {
    for (const catchUpMs of [-1, Infinity, 60_001, '100']) {
      expect(() => createContext({ storage: { ...memoryStorage(), catchUpMs } as unknown as Storage, mutators: testMutators })).toThrow(
        `storage.catchUpMs must be a number of milliseconds from 0 to 60,000`,
      );
    }
  });
});
