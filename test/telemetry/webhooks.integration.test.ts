/** Webhook deliveries as telemetry reports them: attempts by outcome, and how long and how many versions delivered changes waited. */
import type { Histogram } from '@opentelemetry/sdk-metrics';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createContext, memoryStorage } from '../../src/index.js';
import { deliverWebhooks, transact } from '../../src/backend.js';
import { startReceiver } from '../feed/receiver.js';
import { registerSdk, type TestSdk } from './sdk.js';

let sdk: TestSdk;
beforeEach(() => {
  sdk = registerSdk();
});
afterEach(() => sdk.stop());

it('counts deliveries, failures and disablings by webhook, and records the lag of what was delivered', async () => {
  const receiver = await startReceiver();
  try {
    let now = Date.UTC(2026, 10, 1);
    const ctx = createContext({
      storage: memoryStorage(),
      mutators: {},
      clock: () => now,
      onError: () => {},
      changes: {
        webhooks: { mail: { url: receiver.url, secret: 'webhook-secret-of-thirty-two-characters', allowPrivateAddresses: true, retryForMs: 60_000 } },
      },
    });
    await transact(ctx, 's', (tx) => tx.set('a', 1));
    receiver.answer = 'fail';
    await deliverWebhooks(ctx);
    now += 2 * 60_000;
    await deliverWebhooks(ctx);
    receiver.answer = 'ok';
    await transact(ctx, 't', (tx) => tx.set('b', 1));
    await transact(ctx, 't', (tx) => tx.set('c', 1));
    now += 3_000;
    await deliverWebhooks(ctx);
    const counts = Object.fromEntries(
      (await sdk.points('viewsync.webhook.deliveries')).map(({ attributes, value }) => [
        `${attributes['viewsync.webhook']} ${attributes['viewsync.outcome']}`,
        value,
      ]),
    );
    expect(counts).toEqual({ 'mail failed': 1, 'mail disabled': 1, 'mail delivered': 1 });
    const [lag] = await sdk.points<Histogram>('viewsync.webhook.lag');
    // One delivery of t's two changes, the first committed 3 s before it was sent.
    expect([lag!.value.count, lag!.value.sum]).toEqual([1, 3]);
    const [versions] = await sdk.points<Histogram>('viewsync.webhook.lag.versions');
    expect([versions!.value.count, versions!.value.sum]).toEqual([1, 0]);
  } finally {
    await receiver.close();
  }
});
