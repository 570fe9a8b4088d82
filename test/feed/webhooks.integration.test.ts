/**
 * Webhooks against a real HTTP receiver that answers, fails, stalls and redirects on purpose, on
 * the memory store with a clock the test moves (webhooks-stores.integration.test.ts runs them on
 * every store, with several instances).
 */
import { describe, expect, it } from 'vitest';
import { createContext, emit, memoryStorage, type Mutators, type Storage, type SyncContext } from '../../src/index.js';
import {
  deliverWebhooks,
  eraseData,
  enableWebhook,
  replayWebhook,
  startWebhooks,
  transact,
  verifyWebhook,
  type WebhookOptions,
  WebhookSignatureError,
} from '../../src/backend.js';
import { inspect, moveSpace, routedStorage } from '../../src/ops.js';
import { testMutators } from '../support/helpers.js';
import { receiversOfTests } from './receiver.js';

const SECRET = 'webhook-secret-of-thirty-two-characters';
const MINUTE = 60_000;
const { cleanup, receiver } = receiversOfTests();

/** A context whose clock the test moves, with one webhook `hook` to `url`. */
function hooked(url: string, hook: Partial<WebhookOptions> = {}, storage: Storage = memoryStorage()): SyncContext & { time: { now: number } } {
  const clock = { now: Date.UTC(2026, 10, 1) };
  const mutators: Mutators = { ...testMutators, note: async (tx, args) => emit(tx, 'noted', args ?? null) };
  const ctx = createContext({
    storage,
    mutators,
    clock: () => clock.now,
    onError: () => {},
    changes: { webhooks: { hook: { url, secret: SECRET, allowPrivateAddresses: true, ...hook } } },
  });
  return Object.assign(ctx, { time: clock });
}

const write = (ctx: SyncContext, key: string, value: number, space = 's') => transact(ctx, space, (tx) => tx.set(key, value));
const keysOf = (received: readonly { delivery: { changes: Array<{ op: string; key?: string }> } }[]) =>
  received.flatMap(({ delivery }) => delivery.changes.map((change) => change.key));

describe('webhooks', () => {
  it('POST the changes in order, in batches, signed, each with IDs a receiver can keep', async () => {
    const at = await receiver();
    const ctx = hooked(at.url, { maxBatch: 2 });
    for (let i = 0; i < 5; i++) await write(ctx, `k${i}`, i);
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 3, failed: 0, disabled: 0 });
    expect(keysOf(at.received)).toEqual(['k0', 'k1', 'k2', 'k3', 'k4']);
    expect(at.received.map(({ id }) => id)).toEqual(['s:0..2.0', 's:2.0..4.0', 's:4.0..5']);
    expect(at.received[0]!.delivery).toMatchObject({
      webhook: 'hook',
      space: 's',
      delivery: 's:0..2.0',
      from: '0',
      to: '2.0',
      changes: [{ id: 's:1:0', op: 'set', key: 'k0', after: 0 }, { id: 's:2:0' }],
    });
    await at.verifyAll(SECRET);
    // A body changed, another secret, an old signature: refused.
    const { body, signature } = at.received[0]!;
    await expect(verifyWebhook(body.replace('k0', 'k9'), signature, SECRET)).rejects.toBeInstanceOf(WebhookSignatureError);
    await expect(verifyWebhook(body, signature, SECRET.replace('w', 'W'))).rejects.toThrow(/does not match/);
    await expect(verifyWebhook(body, signature, SECRET, { now: Date.now() + 10 * MINUTE })).rejects.toThrow(/more than the 300 s allowed/);
    await expect(verifyWebhook(body, undefined, SECRET)).rejects.toThrow(/missing or malformed/);
    // Nothing new: nothing sent.
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 0, failed: 0, disabled: 0 });
  });

  it('a receiver that answers 500 for an hour gets everything afterwards: exactly the batches it missed, each under the same ID', async () => {
    const at = await receiver();
    const ctx = hooked(at.url, { maxBatch: 3 });
    at.answer = 'fail';
    // An hour of failures while the space keeps changing, a round every minute.
    for (let minute = 0; minute < 60; minute++) {
      await write(ctx, `k${minute}`, minute);
      await deliverWebhooks(ctx);
      ctx.time.now += MINUTE;
    }
    const failedIDs = new Set(at.received.map(({ id }) => id));
    // Backoff: far fewer attempts than rounds, all of the one batch fixed at its first attempt.
    expect(failedIDs).toEqual(new Set(['s:0..1']));
    expect(at.received.length).toBeGreaterThan(5);
    expect(at.received.length).toBeLessThan(20);
    expect((await inspect(ctx, 's')).webhooks?.hook).toMatchObject({
      cursor: '0',
      lagVersions: 60,
      lagMs: 60 * MINUTE,
      pending: { delivery: 's:0..1', error: 'the receiver answered 500' },
    });
    at.answer = 'ok';
    // The longest backoff is 10 min and a fifth more (12 min), from an attempt as late as minute 59.
    ctx.time.now += 12 * MINUTE;
    await deliverWebhooks(ctx);
    const delivered = at.delivered();
    // The batch it failed first (fixed when the space had one change), then the rest, three at a time.
    expect(delivered[0]!.id).toBe('s:0..1');
    expect(keysOf(delivered)).toEqual(Array.from({ length: 60 }, (_, i) => `k${i}`));
    expect(delivered).toHaveLength(21);
    expect(at.received.filter(({ answered }) => answered === 'fail').every(({ body }) => JSON.parse(body).changes[0].key === 'k0')).toBe(true);
    expect((await inspect(ctx, 's')).webhooks?.hook).toMatchObject({ cursor: '60', lagVersions: 0, lagMs: 0, delivered: 21, replays: 0 });
  });

  it('a receiver that never answers times out; the batch is tried again, the same', async () => {
    const at = await receiver();
    const ctx = hooked(at.url, { timeoutMs: 200 });
    await write(ctx, 'a', 1);
    at.answer = 'stall';
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 0, failed: 1, disabled: 0 });
    expect((await inspect(ctx, 's')).webhooks?.hook?.pending).toMatchObject({ attempts: 1, error: 'no answer within 200 ms (timeoutMs)' });
    at.answer = 'ok';
    ctx.time.now += MINUTE;
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 1, failed: 0, disabled: 0 });
    expect(at.received.map(({ id, answered }) => [id, answered])).toEqual([
      ['s:0..1', 'stall'],
      ['s:0..1', 'ok'],
    ]);
  });

  it('a redirect is a failure, not followed; a private address is refused unless allowed, nothing sent', async () => {
    const at = await receiver();
    const ctx = hooked(at.url);
    await write(ctx, 'a', 1);
    at.answer = 'redirect';
    await deliverWebhooks(ctx);
    expect((await inspect(ctx, 's')).webhooks?.hook?.pending?.error).toBe('the receiver answered 302 (redirects are not followed)');
    expect(at.received).toHaveLength(1);

    const guarded = hooked(at.url, { allowPrivateAddresses: false });
    await write(guarded, 'a', 1);
    expect(await deliverWebhooks(guarded)).toMatchObject({ failed: 1 });
    expect((await inspect(guarded, 's')).webhooks?.hook?.pending?.error).toMatch(/127\.0\.0\.1:\d+ is a loopback, private, link-local or reserved address/);
    expect(at.received).toHaveLength(1);
  });

  it('one that keeps failing is disabled with its reason; enableWebhook resumes it with the same batch', async () => {
    const at = await receiver();
    const ctx = hooked(at.url, { retryForMs: 60 * MINUTE });
    const errors: unknown[] = [];
    const logged = createContext({ ...ctx.options, onError: (error) => errors.push(error) });
    await write(ctx, 'a', 1);
    at.answer = 'fail';
    let round = await deliverWebhooks(logged);
    for (let minute = 0; round.disabled === 0 && minute < 200; minute++) {
      ctx.time.now += MINUTE;
      round = await deliverWebhooks(logged);
    }
    const state = (await inspect(ctx, 's')).webhooks?.hook;
    expect(state?.disabled?.reason).toMatch(/^deliveries failed for \d+ min \(\d+ attempts\); the last: the receiver answered 500$/);
    // Disabled at the first attempt past the hour: retries are at most 10 minutes apart, plus a fifth of jitter.
    expect(Number(/for (\d+) min/.exec(state!.disabled!.reason)![1])).toBeGreaterThanOrEqual(60);
    expect(Number(/for (\d+) min/.exec(state!.disabled!.reason)![1])).toBeLessThanOrEqual(73);
    expect(String(errors[0])).toMatch(/Webhook "hook" is disabled in space "s"/);
    const tries = at.received.length;
    ctx.time.now += 24 * 60 * MINUTE;
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 0, failed: 0, disabled: 0 });
    expect(at.received).toHaveLength(tries);
    at.answer = 'ok';
    expect(await enableWebhook(ctx, 'hook', 's')).toBe(true);
    expect(await deliverWebhooks(ctx)).toMatchObject({ delivered: 1 });
    expect(new Set(at.received.map(({ id }) => id))).toEqual(new Set(['s:0..1']));
    expect(await enableWebhook(ctx, 'hook', 's')).toBe(false);
  });

  it('replays one delivery, or a range, under the IDs they had, without moving the cursor', async () => {
    const at = await receiver();
    const ctx = hooked(at.url, { maxBatch: 1 });
    for (let i = 0; i < 4; i++) await write(ctx, `k${i}`, i);
    await deliverWebhooks(ctx);
    const ids = at.received.map(({ id }) => id);
    expect(ids).toEqual(['s:0..1.0', 's:1.0..2.0', 's:2.0..3.0', 's:3.0..4']);
    expect(await replayWebhook(ctx, 'hook', 's', { delivery: ids[1]! })).toBe(1);
    expect(await replayWebhook(ctx, 'hook', 's', { from: '2', to: '4' })).toBe(2);
    await write(ctx, 'k4', 4);
    await deliverWebhooks(ctx);
    expect(at.received.slice(4).map(({ id }) => id)).toEqual([ids[1], ids[2], ids[3], 's:4..5']);
    expect(at.received[5]!.delivery).toEqual(at.received[2]!.delivery);
    await expect(replayWebhook(ctx, 'hook', 's', { delivery: 's:9..10' })).rejects.toThrow(/made no delivery "s:9..10"/);
    await expect(replayWebhook(ctx, 'nope', 's', { delivery: ids[0]! })).rejects.toThrow(/No webhook is named "nope"/);
  });

  it('a replay after an erasure sends the batch under its ID again, the erased values gone, and the erasure event follows', async () => {
    const at = await receiver();
    const ctx = hooked(at.url);
    await transact(ctx, 's', async (tx) => (await tx.set('user/ann', 'ann@example.com'), await tx.set('other', 'kept')));
    await deliverWebhooks(ctx);
    const [first] = at.received;
    expect(first!.body).toContain('ann@example.com');
    await eraseData(ctx, 's', { key: 'user/ann' });
    expect(await replayWebhook(ctx, 'hook', 's', { delivery: first!.id })).toBe(1);
    await deliverWebhooks(ctx);
    const replayed = at.received.find(({ id }, i) => i > 0 && id === first!.id)!;
    expect(replayed.body).not.toContain('ann@example.com');
    expect(replayed.delivery.changes.map((change) => [change.op, 'key' in change ? change.key : undefined])).toEqual([
      ['erased', 'user/ann'],
      ['set', 'other'],
    ]);
    // The erasure's own version: its delete, erased too, and the event that tells receivers.
    expect(at.received.at(-1)!.delivery.changes.map((change) => [change.op, 'key' in change ? change.key : change.topic])).toEqual([
      ['erased', 'user/ann'],
      ['event', 'viewsync.erased'],
    ]);
    expect(
      at.received
        .map(({ body }) => body)
        .slice(1)
        .join('\n'),
    ).not.toContain('ann@example.com');
  });

  it('sends only what a webhook wants: its spaces, its prefixes (whole segments), its topics', async () => {
    const at = await receiver();
    const ctx = hooked(at.url, { spaces: ['s'], prefixes: ['todo'], topics: ['noted'] });
    await transact(ctx, 's', async (tx) => {
      await tx.set('todo/1', 1);
      await tx.set('todos', 2);
      await tx.set('user/1', 3);
      await emit(tx, 'noted', { n: 1 });
      await emit(tx, 'other', { n: 2 });
    });
    await write(ctx, 'todo/2', 4, 'elsewhere');
    await write(ctx, 'user/2', 5);
    await deliverWebhooks(ctx);
    expect(at.received.flatMap(({ delivery }) => delivery.changes.map((change) => (change.op === 'event' ? change.topic : change.key)))).toEqual([
      'todo/1',
      'noted',
    ]);
    // The range of changes it did not want moved its cursor on all the same.
    expect((await inspect(ctx, 's')).webhooks?.hook).toMatchObject({ cursor: '2', lagVersions: 0 });
    expect((await inspect(ctx, 'elsewhere')).webhooks).toBeUndefined();
  });

  it('an instance that dies mid-delivery leaves its batch to another once its lease runs out: sent again under the same ID, the cursor moved once', async () => {
    const at = await receiver();
    const storage = memoryStorage();
    const dying = hooked(at.url, { timeoutMs: 60 * MINUTE }, storage);
    const other = hooked(at.url, {}, storage);
    await write(dying, 'a', 1);
    at.answer = 'stall';
    // Its request hangs; the instance is as good as dead (it never records anything while the test runs).
    const abandoned = deliverWebhooks(dying);
    await expect.poll(() => at.received.length).toBe(1);
    at.answer = 'ok';
    expect(await deliverWebhooks(other)).toEqual({ delivered: 0, failed: 0, disabled: 0 });
    other.time.now += 61 * MINUTE + 10_000;
    expect(await deliverWebhooks(other)).toEqual({ delivered: 1, failed: 0, disabled: 0 });
    expect(at.received.map(({ id }) => id)).toEqual(['s:0..1', 's:0..1']);
    // The dead instance's request ends (its connection closes): its failure is not recorded over the delivery.
    await at.close();
    await abandoned;
    expect((await inspect(other, 's')).webhooks?.hook).toMatchObject({ cursor: '1', delivered: 1, failures: 0 });
  });

  it('go on across a move of the space to another store: the state moves with it, nothing is sent twice', async () => {
    const at = await receiver();
    const members = { x: memoryStorage(), y: memoryStorage() };
    const ctx = hooked(at.url, { maxBatch: 2 }, routedStorage({ stores: members, place: () => 'x' }));
    for (let i = 0; i < 3; i++) await write(ctx, `k${i}`, i);
    await deliverWebhooks(ctx);
    await moveSpace(ctx, 's', 'y');
    for (let i = 3; i < 6; i++) await write(ctx, `k${i}`, i);
    await deliverWebhooks(ctx);
    expect(keysOf(at.received)).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5']);
    expect(new Set(at.received.map(({ id }) => id)).size).toBe(at.received.length);
    expect((await inspect(ctx, 's')).webhooks?.hook).toMatchObject({ cursor: '6', delivered: 4 });
  });

  it('startWebhooks delivers a change made through the context at once, and stops cleanly', async () => {
    const at = await receiver();
    const ctx = hooked(at.url);
    ctx.time.now = Date.now();
    const runner = startWebhooks(ctx, { sweepMs: 60_000 });
    cleanup.push(() => runner.stop());
    await write(ctx, 'a', 1);
    await expect.poll(() => at.received.length).toBe(1);
    await write(ctx, 'b', 2);
    await expect.poll(() => keysOf(at.delivered())).toEqual(['a', 'b']);
    await runner.stop();
    await write(ctx, 'c', 3);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(at.received).toHaveLength(2);
  });
});
