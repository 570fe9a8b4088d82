import { describe, expect, it, vi } from 'vitest';
import { compareCookies } from '../../src/sync/version/cookie.js';
import { handlePull, type JSONValue, memoryStorage } from '../../src/index.js';
import { applyPatch, countingStorage, mutation, post, pull, pullBody, pullBodyV0, push, serverView, testContext, versionOf } from '../support/helpers.js';

async function pullResponse(ctx: ReturnType<typeof testContext>, body: unknown) {
  const response = await handlePull(post('/pull', body), ctx);
  return { status: response.status, body: await response.json() };
}

/** Runs `body` with a clock the test sets (`Date` only: timers stay real), then restores it. */
async function withClock(body: () => Promise<void>): Promise<void> {
  vi.useFakeTimers({ toFake: ['Date'] });
  try {
    await body();
  } finally {
    vi.useRealTimers();
  }
}

/** The cookie a group held from a store, at time `at`, after `pushes` pushes: a store since forgotten (restarted empty, or failed over). */
async function cookieOfAForgottenStore(at: number, pushes = 1): Promise<JSONValue> {
  vi.setSystemTime(at);
  const old = testContext();
  for (let id = 1; id <= pushes; id++) await push(old, 'g', [mutation('c', id, 'put', { key: 'lost', value: id })]);
  return (await pull(old, 'g', null)).cookie;
}

describe('pull rule 1, push rule 1, Versioning: a pullVersion, pushVersion or schemaVersion the server does not take', () => {
  it.each([2, -1, 0.5, 99])('pullVersion %s gets VersionNotSupported (pull) with status 200', async (pullVersion) => {
    const ctx = testContext();
    // Everything else about the body is ignored: the version decides first.
    const { status, body } = await pullResponse(ctx, { pullVersion, whatever: true });
    expect(status).toBe(200);
    expect(body).toEqual({ error: 'VersionNotSupported', versionType: 'pull' });
  });

  it('an unaccepted schemaVersion gets VersionNotSupported (schema) with status 200, for v1 and v0', async () => {
    for (const schemaVersion of ['v2', ['v1', 'v3'], (s: string) => s.startsWith('v1')] as const) {
      const ctx = testContext({ schemaVersion });
      expect(await pullResponse(ctx, pullBody('g', null, { schemaVersion: 'v0' }))).toEqual({
        status: 200,
        body: { error: 'VersionNotSupported', versionType: 'schema' },
      });
      expect((await pullResponse(ctx, pullBodyV0('c', null, 0, { schemaVersion: 'v0' }))).body.versionType).toBe('schema');
    }
  });

  it('an accepted schemaVersion is served', async () => {
    const ctx = testContext({ schemaVersion: ['v1', 'v2'] });
    const { status, body } = await pullResponse(ctx, pullBody('g', null, { schemaVersion: 'v2' }));
    expect(status).toBe(200);
    expect(body.patch).toEqual([{ op: 'clear' }]);
  });
});

describe('global version rules 1, 4 and 5: one version per space, taken in the push transaction; deletes are soft', () => {
  it('the cookie is an object whose order is a number, and grows by one per push that changed something', async () => {
    const ctx = testContext();
    const first = await pull(ctx, 'g', null);
    expect(first.cookie).toEqual({ order: 0 });
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 }), mutation('c', 2, 'put', { key: 'b', value: 2 })]);
    const second = await pull(ctx, 'g', first.cookie);
    expect(second.cookie).toMatchObject({ order: expect.any(Number), epoch: expect.any(String) });
    expect(Number.isSafeInteger((second.cookie as { order: number }).order)).toBe(true);
    await push(ctx, 'g', [mutation('c', 3, 'put', { key: 'a', value: 3 })]);
    expect(versionOf((await pull(ctx, 'g', second.cookie)).cookie, second.cookie)).toBe(2);
  });

  it('a push that changes nothing (all duplicates) keeps the version', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    const before = await pull(ctx, 'g', null);
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 'again' })]);
    expect((await pull(ctx, 'g', null)).cookie).toEqual(before.cookie);
  });

  it('deletes are soft: a pull from before the delete is told about it', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    const { cookie } = await pull(ctx, 'g', null);
    await push(ctx, 'g', [mutation('c', 2, 'del', { key: 'a' })]);
    expect((await pull(ctx, 'g', cookie)).patch).toEqual([{ op: 'del', key: 'a' }]);
  });

  it('spaces are versioned independently', async () => {
    const ctx = testContext({ space: (request) => new URL(request.url).searchParams.get('space') ?? '' });
    const inSpace = (space: string, body: unknown) => handlePull(post(`/pull?space=${space}`, body), ctx).then((r) => r.json());
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    expect(await inSpace('other', pullBody('g2', null))).toMatchObject({ cookie: { order: 0 }, patch: [{ op: 'clear' }] });
    expect((await inSpace('', pullBody('g3', null))).cookie.order).toBeGreaterThan(0);
  });
});

describe('global version rules 2 and 3, pull rules 4 and 5: a patch of what changed after the cookie, which alone says what the client holds', () => {
  it('a pull returns exactly the entries changed after its cookie', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 }), mutation('c', 2, 'put', { key: 'b', value: 1 })]);
    const { cookie } = await pull(ctx, 'g', null);
    await push(ctx, 'g', [mutation('c', 3, 'put', { key: 'b', value: 2 }), mutation('c', 4, 'put', { key: 'c', value: 3 })]);
    const { patch } = await pull(ctx, 'g', cookie);
    expect(patch).toEqual([
      { op: 'put', key: 'b', value: 2 },
      { op: 'put', key: 'c', value: 3 },
    ]);
  });

  it('a key changed many times appears once, with its latest value', async () => {
    const ctx = testContext();
    const { cookie } = await pull(ctx, 'g', null);
    for (let id = 1; id <= 5; id++) await push(ctx, 'g', [mutation('c', id, 'increment', { key: 'n', delta: 1 })]);
    expect((await pull(ctx, 'g', cookie)).patch).toEqual([{ op: 'put', key: 'n', value: 5 }]);
  });

  it('reads only the changed entries, not the whole space', async () => {
    const reads = { count: 0 };
    const storage = countingStorage(reads);
    const ctx = testContext({ storage });
    const many = Array.from({ length: 500 }, (_, i) => mutation('c', i + 1, 'put', { key: `k${i}`, value: i }));
    await push(ctx, 'g', many);
    const { cookie } = await pull(ctx, 'g', null);
    await push(ctx, 'g', [mutation('c', 501, 'put', { key: 'k7', value: 'new' })]);
    reads.count = 0;
    expect((await pull(ctx, 'g', cookie)).patch).toEqual([{ op: 'put', key: 'k7', value: 'new' }]);
    expect(reads.count).toBeLessThan(10);
  });

  it("a new client group forking another group's cookie gets an ordinary incremental patch", async () => {
    const ctx = testContext();
    await push(ctx, 'g1', [mutation('c1', 1, 'put', { key: 'a', value: 1 })]);
    const { cookie } = await pull(ctx, 'g1', null);
    await push(ctx, 'g1', [mutation('c1', 2, 'put', { key: 'b', value: 2 })]);
    const forked = await pull(ctx, 'g2', cookie);
    expect(forked.patch).toEqual([{ op: 'put', key: 'b', value: 2 }]);
    expect(forked.lastMutationIDChanges).toEqual({});
  });
});

describe('pull rule 3: a null or unusable cookie gets everything', () => {
  it('a null cookie gets clear followed by a put for every live entry', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [
      mutation('c', 1, 'put', { key: 'a', value: 1 }),
      mutation('c', 2, 'put', { key: 'b', value: { x: [1] } }),
      mutation('c', 3, 'del', { key: 'a' }),
    ]);
    expect((await pull(ctx, 'g', null)).patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'b', value: { x: [1] } }]);
  });

  it.each<JSONValue>([0, 3, '1', { order: 1 }, { order: '1' }, { order: 1, epoch: 7 }, true, [1]])(
    'a cookie this server never issues (%j) that orders below the current one gets a full reset',
    async (cookie) => {
      const ctx = testContext();
      for (let id = 1; id <= 5; id++) await push(ctx, 'g', [mutation('c', id, 'put', { key: `k${id}`, value: id })]);
      const { patch, cookie: returned } = await pull(ctx, 'g', cookie);
      expect(patch[0]).toEqual({ op: 'clear' });
      expect(patch).toHaveLength(6);
      expect(returned).toEqual((await pull(ctx, 'g', null)).cookie);
    },
  );
});

describe('Errors, ClientStateNotFound: a cookie the server cannot have issued means lost state', () => {
  it('an order above the current version gets ClientStateNotFound', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    const { cookie } = await pull(ctx, 'g', null);
    const ahead = { ...(cookie as object), order: (cookie as { order: number }).order + 1 };
    expect(await pullResponse(ctx, pullBody('g', ahead))).toEqual({ status: 200, body: { error: 'ClientStateNotFound' } });
  });

  it("a cookie from an earlier incarnation of the store gets a reset, since the newer incarnation's cookies sort higher", async () => {
    // A reloaded page forks the lost cookie into each new client group it starts: answering
    // ClientStateNotFound would reload it again, forever. It must get a reset it accepts.
    await withClock(async () => {
      const cookie = await cookieOfAForgottenStore(Date.UTC(2026, 0, 1), 9);
      vi.setSystemTime(Date.UTC(2026, 0, 1, 0, 0, 1)); // a second later, the server restarts empty
      const fresh = testContext();
      await push(fresh, 'g2', [mutation('d', 1, 'put', { key: 'new', value: 1 })]);
      const reset = await pull(fresh, 'forked-group', cookie);
      expect(reset.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'new', value: 1 }]);
      expect(compareCookies(reset.cookie, cookie)).toBeGreaterThan(0);
      expect((await pullResponse(fresh, pullBodyV0('c', cookie, 0))).body.patch[0]).toEqual({ op: 'clear' });
    });
  });

  it('an empty store answers a lost cookie with an "empty" cookie just above it: no churn while empty, then ordinary patches', async () => {
    await withClock(async () => {
      const lost = await cookieOfAForgottenStore(Date.UTC(2026, 0, 1));
      vi.setSystemTime(Date.UTC(2026, 0, 1, 0, 0, 5));
      const fresh = testContext(); // restarted empty: no push has reached it yet
      const reset = await pull(fresh, 'forked-group', lost);
      expect(reset.patch).toEqual([{ op: 'clear' }]);
      expect(reset.cookie).toMatchObject({ epoch: '' });
      expect(compareCookies(reset.cookie, lost)).toBeGreaterThan(0);
      vi.setSystemTime(Date.UTC(2026, 0, 1, 0, 0, 6));
      expect(await pull(fresh, 'forked-group', reset.cookie)).toEqual({ cookie: reset.cookie, patch: [], lastMutationIDChanges: {} });
      await push(fresh, 'forked-group', [mutation('n', 1, 'put', { key: 'new', value: 1 })]);
      const next = await pull(fresh, 'forked-group', reset.cookie);
      expect(next.patch).toEqual([{ op: 'put', key: 'new', value: 1 }]);
      expect(compareCookies(next.cookie, reset.cookie)).toBeGreaterThan(0);
      expect(next.lastMutationIDChanges).toEqual({ n: 1 });
    });
  });

  it('an "empty" cookie stays below the space a push creates after it, even a push that read the clock first (was: ClientStateNotFound, a reload)', async () => {
    // The reloaded page's first pull and its first push go out together: the push reads the clock,
    // the pull reads the empty space and answers, then the push creates the space. A second
    // instance whose clock is behind does the same. Its next pull must get the push's data.
    await withClock(async () => {
      const lost = await cookieOfAForgottenStore(Date.UTC(2026, 0, 1));
      vi.setSystemTime(Date.UTC(2026, 0, 1, 0, 0, 5, 10));
      const fresh = testContext();
      const reset = await pull(fresh, 'forked-group', lost);
      expect(reset.patch).toEqual([{ op: 'clear' }]);
      vi.setSystemTime(Date.UTC(2026, 0, 1, 0, 0, 5, 5));
      await push(fresh, 'forked-group', [mutation('n', 1, 'put', { key: 'new', value: 1 })]);
      const next = await pull(fresh, 'forked-group', reset.cookie);
      expect(next.patch).toEqual([{ op: 'put', key: 'new', value: 1 }]);
      expect(compareCookies(next.cookie, reset.cookie)).toBeGreaterThan(0);
      expect(next.lastMutationIDChanges).toEqual({ n: 1 });
    });
  });

  it('a cookie from an earlier incarnation that still sorts higher (the clock went back) gets ClientStateNotFound', async () => {
    await withClock(async () => {
      const cookie = await cookieOfAForgottenStore(Date.UTC(2026, 0, 2));
      vi.setSystemTime(Date.UTC(2026, 0, 1));
      const fresh = testContext();
      await push(fresh, 'g2', [mutation('d', 1, 'put', { key: 'new', value: 1 })]);
      expect((await pullResponse(fresh, pullBody('g', cookie))).body).toEqual({ error: 'ClientStateNotFound' });
      expect((await pullResponse(fresh, pullBodyV0('c', cookie, 0))).body).toEqual({ error: 'ClientStateNotFound' });
    });
  });

  it('a foreign cookie that orders above the current one gets ClientStateNotFound, not a reset the client would refuse', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    const { cookie: current } = await pull(ctx, 'g', null);
    const order = (current as { order: number }).order;
    // Numbers compare as numbers; if either side is a string, both compare as strings.
    for (const cookie of [order + 1, 9e15, 'zzz', String(order + 1), { order: order + 0.5 }]) {
      expect((await pullResponse(ctx, pullBody('g', cookie))).body).toEqual({ error: 'ClientStateNotFound' });
    }
  });

  it('a foreign cookie that orders equal to the current one gets a reset: the client drops only a cookie deeply equal to its own', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    const { cookie: current } = await pull(ctx, 'g', null);
    const order = (current as { order: number }).order;
    for (const cookie of [order, { ...(current as object), extra: 1 }]) {
      expect(await pull(ctx, 'g', cookie)).toEqual({
        cookie: current,
        lastMutationIDChanges: { c: 1 },
        patch: [{ op: 'clear' }, { op: 'put', key: 'a', value: 1 }],
      });
    }
  });

  it('a cookie at order 0 is valid in every incarnation: it holds nothing', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    expect((await pull(ctx, 'g', { order: 0 })).patch).toEqual([{ op: 'put', key: 'a', value: 1 }]);
  });
});

describe('pull rules 2 and 7: lastMutationIDs, read with the patch; an unknown client', () => {
  it("v1 returns the group's clients whose lastMutationID changed since the cookie, and no others", async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c1', 1, 'put', { key: 'a', value: 1 }), mutation('c2', 1, 'put', { key: 'b', value: 1 })]);
    await push(ctx, 'other', [mutation('x', 1, 'put', { key: 'c', value: 1 })]);
    const first = await pull(ctx, 'g', null);
    expect(first.lastMutationIDChanges).toEqual({ c1: 1, c2: 1 });
    await push(ctx, 'g', [mutation('c2', 2, 'put', { key: 'b', value: 2 })]);
    expect((await pull(ctx, 'g', first.cookie)).lastMutationIDChanges).toEqual({ c2: 2 });
  });

  it('lastMutationIDChanges are read in the same transaction as the patch', async () => {
    const transactions: boolean[] = [];
    const inner = memoryStorage();
    const ctx = testContext({ storage: { transaction: (fn, options) => (transactions.push(options.readOnly), inner.transaction(fn, options)) } });
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
    transactions.length = 0;
    const result = await pull(ctx, 'g', null);
    expect(transactions).toEqual([true]);
    expect(result.lastMutationIDChanges).toEqual({ c: 1 });
  });

  it("v0 returns the requesting client's lastMutationID with the patch", async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 }), mutation('c', 2, 'put', { key: 'b', value: 2 })]);
    const { status, body } = await pullResponse(ctx, pullBodyV0('c', null, 0));
    expect(status).toBe(200);
    expect(body).toEqual({
      cookie: expect.objectContaining({ order: expect.any(Number), epoch: expect.any(String) }),
      lastMutationID: 2,
      patch: [{ op: 'clear' }, { op: 'put', key: 'a', value: 1 }, { op: 'put', key: 'b', value: 2 }],
    });
  });

  it('v0: a new client gets lastMutationID 0; an unknown one that claims more gets 500, as the spec says', async () => {
    const ctx = testContext();
    expect((await pullResponse(ctx, pullBodyV0('new', null, 0))).body).toMatchObject({ lastMutationID: 0 });
    const { status, body } = await pullResponse(ctx, pullBodyV0('lost', null, 4));
    expect(status).toBe(500);
    expect(body.message).toMatch(/claims lastMutationID 4/);
  });

  it('a pull never writes', async () => {
    const ctx = testContext();
    await pull(ctx, 'g', null);
    await pullResponse(ctx, pullBodyV0('c', null, 0));
    expect(await serverView(ctx)).toEqual(new Map());
    // A v1 pull by a group that never pushed does not create it: another user may still claim it.
    const owned = testContext({ authenticate: (r) => r.headers.get('authorization') || null });
    await pull(owned, 'g', null, { authorization: 'alice' });
    await push(owned, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })], { authorization: 'bob' });
  });
});

it('applying a full pull to an empty view gives the server view', async () => {
  const ctx = testContext();
  await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'ü/🙂', value: 'ok' }), mutation('c', 2, 'put', { key: '\uffff', value: 1 })]);
  const view = applyPatch(new Map(), (await pull(ctx, 'g', null)).patch);
  expect([...view.keys()]).toEqual(['\uffff', 'ü/🙂'].sort());
});
