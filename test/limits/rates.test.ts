/**
 * Rates per client group and per user (SyncContext.rates): token buckets in process, checked
 * before any storage work, answered with 429 and Retry-After.
 */
import { describe, expect, it } from 'vitest';
import { handlePull, handlePush, handleRequest, type SyncContext, type SyncOptions, createContext } from '../../src/index.js';
import { TokenBuckets } from '../../src/base/token-buckets.js';
import { countingStorage, mutation, post, pullBody, pushBody, testMutators } from '../support/helpers.js';

/** A context whose clock the test moves, authenticating the Authorization header as the user. */
function context(rates: SyncOptions['rates'], overrides: Partial<SyncOptions> = {}) {
  const clock = { now: 1_800_000_000_000 };
  const ctx: SyncContext = createContext({
    storage: countingStorage({ count: 0 }),
    mutators: testMutators,
    rates,
    clock: () => clock.now,
    authenticate: (r) => r.headers.get('authorization') || 'anyone',
    onError: () => {},
    ...overrides,
  });
  return { ctx, clock };
}

let ids = 0;
const pushFrom = (ctx: SyncContext, group: string, user = 'ann') =>
  handlePush(post('/push', pushBody(group, [mutation(`${group}-c`, ++ids, 'put', { key: 'k', value: ids })]), { authorization: user }), ctx);
const pullFrom = (ctx: SyncContext, group: string, user = 'ann') => handlePull(post('/pull', pullBody(group, null), { authorization: user }), ctx);

describe('rates', () => {
  it('a group over pushesPerSecond gets 429 with Retry-After and a JSON error; another group is unaffected; it passes again once refilled', async () => {
    const { ctx, clock } = context({ pushesPerSecond: 2 });
    ids = 0;
    // A burst of one second's worth: two pushes, then refusals.
    expect((await pushFrom(ctx, 'flood')).status).toBe(200);
    const second = await handlePush(
      post('/push', pushBody('flood', [mutation('flood-c', 1, 'put', { key: 'k', value: 1 }), mutation('flood-c', 2, 'put', { key: 'k', value: 2 })]), {
        authorization: 'ann',
      }),
      ctx,
    );
    expect(second.status).toBe(200);
    const refused = await handlePush(post('/push', pushBody('flood', [mutation('flood-c', 3, 'put', { key: 'k', value: 3 })]), { authorization: 'ann' }), ctx);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({
      error: 'TooManyRequests',
      message: expect.stringMatching(/This client group sent pushes faster than this server allows \(rates\.pushesPerSecond\)/),
    });
    expect((await pushFrom(ctx, 'neighbour', 'bob')).status).toBe(200);
    expect((await pushFrom(ctx, 'neighbour2', 'ann')).status).toBe(200);
    clock.now += 500;
    expect(
      (await handlePush(post('/push', pushBody('flood', [mutation('flood-c', 3, 'put', { key: 'k', value: 3 })]), { authorization: 'ann' }), ctx)).status,
    ).toBe(200);
  });

  it('Retry-After says when a token comes back, in whole seconds of at least 1', async () => {
    const { ctx, clock } = context({ pushesPerSecond: 0.25 });
    expect((await pushFrom(ctx, 'slow')).status).toBe(200);
    expect((await pushFrom(ctx, 'slow')).headers.get('retry-after')).toBe('4');
    clock.now += 2_500;
    expect((await pushFrom(ctx, 'slow')).headers.get('retry-after')).toBe('2');
  });

  it('userPushesPerSecond holds a user across all their groups; other users are unaffected', async () => {
    const { ctx } = context({ userPushesPerSecond: 3 });
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await pushFrom(ctx, `tab-${i}`, 'mallory')).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const refused = await pushFrom(ctx, 'tab-9', 'mallory');
    expect(await refused.json()).toMatchObject({
      error: 'TooManyRequests',
      message: expect.stringMatching(/^This user sent pushes .*rates\.userPushesPerSecond/),
    });
    expect((await pushFrom(ctx, 'tab-0', 'alice')).status).toBe(200);
  });

  it('pullsPerSecond holds pulls per group, apart from pushes; burstMs lets a quiet group send more at once', async () => {
    const { ctx } = context({ pullsPerSecond: 1, burstMs: 3_000 });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await pullFrom(ctx, 'reader')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await pullFrom(ctx, 'other-reader')).status).toBe(200);
    expect((await pushFrom(ctx, 'reader')).status).toBe(200);
    // Through the one handler too (the refusal is made before routing cares).
    expect((await handleRequest(post('/pull', pullBody('reader', null), { authorization: 'ann' }), ctx)).status).toBe(429);
  });

  it('userPullsPerSecond holds a user across invented client groups: 200 full pulls at once, each under a new group ID, serve 2; another user pulls as before', async () => {
    // The red team's flood: pullsPerSecond alone is per group, and a client invents groups.
    const { ctx } = context({ pullsPerSecond: 2, userPullsPerSecond: 2 });
    const statuses = await Promise.all(Array.from({ length: 200 }, (_, i) => pullFrom(ctx, `invented-${i}`, 'mallory').then((response) => response.status)));
    expect(statuses.filter((status) => status === 200)).toHaveLength(2);
    expect(statuses.filter((status) => status === 429)).toHaveLength(198);
    const refused = await pullFrom(ctx, 'invented-x', 'mallory');
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({
      error: 'TooManyRequests',
      message: expect.stringMatching(/^This user sent pulls .*rates\.userPullsPerSecond/),
    });
    expect((await pullFrom(ctx, 'mine', 'alice')).status).toBe(200);
    // Pushes have their own rates.
    expect((await pushFrom(ctx, 'invented-0', 'mallory')).status).toBe(200);
  });

  it('a refused request does no storage work at all', async () => {
    const reads = { count: 0 };
    const { ctx } = context({ pushesPerSecond: 1, pullsPerSecond: 1 }, { storage: countingStorage(reads) });
    await pushFrom(ctx, 'g');
    await pullFrom(ctx, 'g');
    const before = reads.count;
    expect((await pushFrom(ctx, 'g')).status).toBe(429);
    expect((await pullFrom(ctx, 'g')).status).toBe(429);
    expect(reads.count).toBe(before);
  });

  it('memory stays bounded by bucketsKept however many group IDs a client invents (200,000 here)', async () => {
    const { ctx } = context({ pushesPerSecond: 5, bucketsKept: 1_000 });
    const buckets = ctx.state.rates!.pushes!;
    const now = Date.now();
    for (let i = 0; i < 200_000; i++) buckets.take(`invented-${i}`, now);
    expect(buckets.size).toBe(1_000);
    // And through the handler: a flood of new IDs leaves the map at its bound.
    for (let i = 0; i < 50; i++) await pushFrom(ctx, `via-handler-${i}`);
    expect(buckets.size).toBe(1_000);
  });

  it('the least recently used bucket is forgotten first: a busy group keeps its count', () => {
    const buckets = new TokenBuckets(1, 1, 3);
    expect(buckets.take('busy', 0)).toBe(0);
    for (const key of ['a', 'b']) buckets.take(key, 0);
    expect(buckets.take('busy', 0)).toBe(1_000);
    // 'a' is now the oldest: it goes, 'busy' stays empty.
    buckets.take('c', 0);
    expect(buckets.take('busy', 0)).toBe(1_000);
    expect(buckets.take('a', 0)).toBe(0);
  });

  it('a misspelt or wrong rate is refused when the context is made, naming it, rather than ignored', () => {
    for (const rates of [{ burst: 20 }, { pushesPerSecond: 0 }, { pullsPerSecond: '5' }] as never[]) {
      expect(() => context(rates)).toThrow(/rates\.(burst is not an option|pushesPerSecond must be|pullsPerSecond must be)/);
    }
  });
});
