/**
 * A webhook whose receiver takes several spaces a request (`spacesPerDelivery`): the runner sends
 * the batches of the spaces due together in one POST, each entry a one-space delivery under its
 * own ID, every change once and in order per space; a failed request is retried space by space
 * under the same entry IDs. Real HTTP receiver, memory store.
 */
import { describe, expect, it } from 'vitest';
import { createContext, memoryStorage, type Storage, type SyncContext } from '../../src/index.js';
import { deliverWebhooks, startWebhooks, transact, verifyWebhook, type WebhookDeliveries, type WebhookOptions } from '../../src/backend.js';
import type { TransactionOptions } from '../../src/storage/types.js';
import { testMutators } from '../support/helpers.js';
import { type Receiver, receiversOfTests } from './receiver.js';

const SECRET = 'webhook-secret-of-thirty-two-characters';
const HOUR = 60 * 60_000;
const SPACES = ['a', 'b', 'c', 'd', 'e', 'f'];
const { cleanup, receiver } = receiversOfTests();

function hooked(url: string, hook: Partial<WebhookOptions> = {}, storage: Storage = memoryStorage()): SyncContext {
  return createContext({
    storage,
    mutators: testMutators,
    onError: () => {},
    changes: { webhooks: { hook: { url, secret: SECRET, allowPrivateAddresses: true, ...hook } } },
  });
}

/** Three changes in each space, written before a runner starts: all due at its first sweep. */
async function written(ctx: SyncContext): Promise<void> {
  for (const space of SPACES) for (let i = 0; i < 3; i++) await transact(ctx, space, (tx) => tx.set(`k${i}`, i));
}

/** `storage`, keeping the options of each transaction it runs in `seen`. */
function watched(storage: Storage, seen: TransactionOptions[]): Storage {
  return { ...storage, manySpaces: storage.manySpaces, transaction: (fn, options) => (seen.push(options), storage.transaction(fn, options)) };
}

/** `storage`, refusing (in the transaction, as a database refuses a row) any write to a key `refused` says. */
function refusing(storage: Storage, refused: (key: string) => boolean): Storage {
  return {
    ...storage,
    manySpaces: storage.manySpaces,
    transaction: (fn, options) =>
      storage.transaction(
        (tx) => fn({ ...tx, put: (key, value) => (refused(key) ? Promise.reject(new Error(`the store refused ${key}`)) : tx.put(key, value)) }),
        options,
      ),
  };
}

const bodies = (at: Receiver) => at.received.map(({ body }) => JSON.parse(body) as WebhookDeliveries);

describe('webhooks: spacesPerDelivery', () => {
  it("sends the spaces due together in one request, each entry a space's batch under its own ID, every change once in order", async () => {
    const at = await receiver();
    const ctx = hooked(at.url, { spacesPerDelivery: 10 });
    await written(ctx);
    const runner = startWebhooks(ctx, { sweepMs: HOUR, concurrency: 1 });
    cleanup.push(() => runner.stop());
    await expect.poll(() => bodies(at).flatMap(({ deliveries }) => deliveries).length).toBe(SPACES.length);
    expect(at.received).toHaveLength(1);
    const [body] = bodies(at);
    expect(body!.webhook).toBe('hook');
    expect(at.received[0]!.id).toBe(body!.delivery);
    expect(body!.deliveries.map(({ space }) => space).sort()).toEqual(SPACES);
    for (const delivery of body!.deliveries) {
      expect(delivery.delivery).toBe(`${delivery.space}:0..3`);
      expect(delivery.changes.map((change) => change.op !== 'event' && change.key)).toEqual(['k0', 'k1', 'k2']);
    }
    expect(await verifyWebhook<WebhookDeliveries>(at.received[0]!.body, at.received[0]!.signature, SECRET)).toEqual(body);
  });

  it('retries a failed request space by space, each entry under the same ID', async () => {
    const at = await receiver();
    at.answer = 'fail';
    const ctx = hooked(at.url, { spacesPerDelivery: 10 });
    await written(ctx);
    const runner = startWebhooks(ctx, { sweepMs: HOUR, concurrency: 1 });
    cleanup.push(() => runner.stop());
    await expect.poll(() => at.received.length).toBe(1);
    at.answer = 'ok';
    // The retry comes after its backoff (about a second).
    await expect
      .poll(() => at.delivered().flatMap(({ body }) => (JSON.parse(body) as WebhookDeliveries).deliveries).length, { timeout: 10_000 })
      .toBe(SPACES.length);
    const ids = (body: WebhookDeliveries) => body.deliveries.map(({ delivery }) => delivery).sort();
    const [failed, ...retries] = bodies(at);
    expect(retries.flatMap(ids).sort()).toEqual(ids(failed!));
  });

  it('a round of deliverWebhooks sends such a webhook one space a request, in the same body shape', async () => {
    const at = await receiver();
    const ctx = hooked(at.url, { spacesPerDelivery: 10 });
    await written(ctx);
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: SPACES.length, failed: 0, disabled: 0 });
    expect(bodies(at).map(({ deliveries }) => deliveries.map(({ space }) => space))).toEqual(SPACES.map((space) => [space]));
  });

  it("claims the group's batches, and records them, in few transactions over their deliveries lanes, not one a space", async () => {
    const at = await receiver();
    const seen: TransactionOptions[] = [];
    const ctx = hooked(at.url, { spacesPerDelivery: 10 }, watched(memoryStorage(), seen));
    await written(ctx);
    seen.length = 0;
    const runner = startWebhooks(ctx, { sweepMs: HOUR, concurrency: 1 });
    cleanup.push(() => runner.stop());
    await expect.poll(() => bodies(at).flatMap(({ deliveries }) => deliveries).length).toBe(SPACES.length);
    await runner.stop();
    // The claims are asked at once and go in one transaction; so do the records (one a space would be twelve).
    const writes = seen.filter(({ readOnly }) => !readOnly);
    expect(writes.map(({ lane, spaces }) => [lane, spaces?.slice().sort()])).toEqual([
      ['deliveries', SPACES],
      ['deliveries', SPACES],
    ]);
  });

  it('goes a space at a time when that transaction fails, and one space the store refuses fails alone', async () => {
    const at = await receiver();
    const errors: unknown[] = [];
    // The store refuses to record anything of space c: the group's transaction fails, and so does c's alone.
    const storage = refusing(memoryStorage(), (key) => key.startsWith('h/c/'));
    const ctx = createContext({
      storage,
      mutators: testMutators,
      onError: (error) => errors.push(error),
      changes: { webhooks: { hook: { url: at.url, secret: SECRET, allowPrivateAddresses: true, spacesPerDelivery: 10 } } },
    });
    await written(ctx);
    const runner = startWebhooks(ctx, { sweepMs: HOUR, concurrency: 1 });
    cleanup.push(() => runner.stop());
    const delivered = () => new Set(bodies(at).flatMap(({ deliveries }) => deliveries.filter(({ space }) => space !== 'c').map(({ delivery }) => delivery)));
    await expect.poll(() => delivered().size).toBe(SPACES.length - 1);
    await expect.poll(() => errors.length).toBeGreaterThan(0);
    expect(String(errors[0])).toContain('refused');
    await runner.stop();
  });

  it('is checked: a whole number from 1 to 1,000', () => {
    for (const spacesPerDelivery of [0, 1.5, 1_001, '10']) {
      expect(() => hooked('https://example.com/hooks', { spacesPerDelivery: spacesPerDelivery as number })).toThrow(/spacesPerDelivery/);
    }
  });

  // A window far longer than the test (a busy machine cannot outlast it); the request fills, and so goes, with the second space.
  it.each([
    [60_000, 1],
    [0, 2],
  ])(
    'a request not full waits gatherMs (%i) for more spaces from when its first was due: %i request(s) for two spaces written apart',
    async (gatherMs, requests) => {
      const at = await receiver();
      const ctx = hooked(at.url, { spacesPerDelivery: 2, gatherMs });
      const runner = startWebhooks(ctx, { sweepMs: HOUR, concurrency: 1 });
      cleanup.push(() => runner.stop());
      await transact(ctx, 'a', (tx) => tx.set('k', 1));
      // Written once the first request (with gatherMs 0) has gone, or while the second waits.
      await (gatherMs === 0 ? expect.poll(() => at.received.length).toBe(1) : new Promise((resolve) => setTimeout(resolve, 200)));
      expect(at.received).toHaveLength(gatherMs === 0 ? 1 : 0);
      await transact(ctx, 'b', (tx) => tx.set('k', 1));
      await expect.poll(() => bodies(at).flatMap(({ deliveries }) => deliveries).length, { timeout: 10_000 }).toBe(2);
      expect(at.received).toHaveLength(requests);
    },
  );

  it('a full request goes at once, whatever gatherMs', async () => {
    const at = await receiver();
    const ctx = hooked(at.url, { spacesPerDelivery: 2, gatherMs: 60_000 });
    const runner = startWebhooks(ctx, { sweepMs: HOUR, concurrency: 1 });
    cleanup.push(() => runner.stop());
    await Promise.all([transact(ctx, 'a', (tx) => tx.set('k', 1)), transact(ctx, 'b', (tx) => tx.set('k', 1))]);
    await expect.poll(() => bodies(at).flatMap(({ deliveries }) => deliveries).length, { timeout: 5_000 }).toBe(2);
    expect(at.received).toHaveLength(1);
  });

  it('gatherMs is checked: milliseconds from 0 to 60,000', () => {
    for (const gatherMs of [-1, 60_001, Number.NaN, '100']) {
      expect(() => hooked('https://example.com/hooks', { spacesPerDelivery: 10, gatherMs: gatherMs as number })).toThrow(/gatherMs/);
    }
    expect(() => hooked('https://example.com/hooks', { spacesPerDelivery: 10, gatherMs: 0 })).not.toThrow();
  });
});
