/**
 * A webhook whose receiver takes several spaces a request (`spacesPerDelivery`): the runner sends
 * the batches of the spaces due together in one POST, each entry a one-space delivery under its
 * own ID, every change once and in order per space; a failed request is retried space by space
 * under the same entry IDs. Real HTTP receiver, memory store.
 */
import { describe, expect, it } from 'vitest';
import { createContext, deliverWebhooks, memoryStorage, startWebhooks, type SyncContext, transact, verifyWebhook, type WebhookDeliveries, type WebhookOptions } from '../../src/index.js';
import { testMutators } from '../support/helpers.js';
import { type Receiver, receiversOfTests } from './receiver.js';

const SECRET = 'webhook-secret-of-thirty-two-characters';
const HOUR = 60 * 60_000;
const SPACES = ['a', 'b', 'c', 'd', 'e', 'f'];
const { cleanup, receiver } = receiversOfTests();

function hooked(url: string, hook: Partial<WebhookOptions> = {}): SyncContext {
  return createContext({ storage: memoryStorage(), mutators: testMutators, onError: () => {}, changes: { webhooks: { hook: { url, secret: SECRET, allowPrivateAddresses: true, ...hook } } } });
}

/** Three changes in each space, written before a runner starts: all due at its first sweep. */
async function written(ctx: SyncContext): Promise<void> {
  for (const space of SPACES) for (let i = 0; i < 3; i++) await transact(ctx, space, (tx) => tx.set(`k${i}`, i));
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
    await expect.poll(() => at.delivered().flatMap(({ body }) => (JSON.parse(body) as WebhookDeliveries).deliveries).length, { timeout: 10_000 }).toBe(SPACES.length);
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

  it('is checked: a whole number from 1 to 1,000', () => {
    for (const spacesPerDelivery of [0, 1.5, 1_001, '10']) {
      expect(() => hooked('https://example.com/hooks', { spacesPerDelivery: spacesPerDelivery as number })).toThrow(/spacesPerDelivery/);
    }
  });
});
